/* SPDX-License-Identifier: MIT */
/*
 * The seam between the connection manager (xiw_cm*.c: TCP + MPA + RTR) and
 * the QP data path (xiw_qp*.c: WRs, FPDUs, placement, completions).
 *
 * Sequence (RFC 5044 §7, RFC 6581 §4):
 *   CM: TCP up, MPA request/reply exchanged, parameters agreed
 *   CM -> xiw_qp_attach(qp, llp, params)     QP owns the stream from here
 *   active side, p2p:  CM -> xiw_qp_send_rtr(); then ESTABLISHED
 *   passive side, p2p: QP -> xiw_cm_rtr_received() when the RTR arrives;
 *                      the QP sends nothing before that; then ESTABLISHED
 *   no p2p: ESTABLISHED right after attach
 *   QP sees EOF / RST / fatal error -> xiw_cm_stream_closed() (once)
 */
#ifndef XIW_CONN_H
#define XIW_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include "xiwarp/xiwarp.h"
#include "llp.h"

enum xiw_rtr_type { XIW_RTR_NONE, XIW_RTR_WRITE, XIW_RTR_READ, XIW_RTR_SEND };

/**
 * struct xiw_conn_params - what MPA negotiation settled.
 * @crc:        CRC32C on the FPDU stream (both directions).
 * @markers_tx: insert markers in what we send (peer's M bit).
 * @markers_rx: expect markers in what we receive (our M bit).
 * @max_ulpdu:  largest ULPDU we send (MSS-aligned, or up to 64 KB if both
 *              sides set the big-FPDU bit; XIW_MAX_FPDU caps it).
 * @ird, @ord:  negotiated: inbound READs we accept / READs we may issue.
 * @rtr:        RTR message type (p2p), XIW_RTR_NONE otherwise.
 * @initiator:  true on the active (connecting) side.
 */
struct xiw_conn_params {
	bool crc, markers_tx, markers_rx;
	uint32_t max_ulpdu;
	uint16_t ird, ord;
	enum xiw_rtr_type rtr;
	bool initiator;
};

/* ---- implemented by the QP side (xiw_qp*.c), called by the CM ---- */

/**
 * xiw_qp_attach() - give @qp the connected stream @llp. The QP takes the
 * llp's upcalls (xiw_llp_set_owner) and moves to RTS; on a passive p2p
 * side it holds all sends until the RTR has been received.
 * @conn: passed back in xiw_cm_rtr_received() / xiw_cm_stream_closed().
 * Return: 0, or -EINVAL if the QP is not in INIT/RTR.
 */
int xiw_qp_attach(struct xiw_qp *qp, struct xiw_cm_conn *conn,
		  struct xiw_llp *llp, const struct xiw_conn_params *p);
/** xiw_qp_send_rtr() - send the RTR FPDU (zero-length READ/WRITE or an
 *  empty SEND per @p->rtr). Return: 0 or -errno. */
int xiw_qp_send_rtr(struct xiw_qp *qp);
/**
 * xiw_qp_rtr_nudge() - active side: send a zero-length WRITE (the WRITE
 * RTR's form; a WRITE with no payload places nothing, RFC 5040 §4.3) to
 * wake a peer that left our first FPDUs unread.
 * Return: 0; -EALREADY once anything was received from the peer (no nudge
 * is needed any more); -EINVAL a READ RTR (its response is the proof);
 * -ENOTCONN not attached.
 */
int xiw_qp_rtr_nudge(struct xiw_qp *qp);
/**
 * xiw_qp_rtr_nudge_arm() - the CM starts nudging (active side, WRITE or
 * no RTR): until 3 nudges are out or the peer was heard, a graceful
 * close holds its FIN (xiw_qp_tx.c tx_fin) and nudges still go out.
 */
void xiw_qp_rtr_nudge_arm(struct xiw_qp *qp);
/**
 * xiw_qp_detach() - graceful (abort false: send queued FPDUs, then FIN) or
 * abortive (RST) end of the stream; the QP goes to ERROR and flushes.
 * Safe to call more than once.
 */
void xiw_qp_detach(struct xiw_qp *qp, bool abort);

/* ---- implemented by the CM (xiw_cm*.c), called by the QP side ---- */

/** xiw_cm_rtr_received() - passive p2p side: the RTR arrived. */
void xiw_cm_rtr_received(struct xiw_cm_conn *conn);
/**
 * xiw_cm_stream_closed() - the QP's stream ended: @err 0 for EOF, -errno for
 * RST/error, or a TERMINATE was sent/received (-EPROTO). The CM emits one
 * XIW_CM_DISCONNECTED and releases the llp. Called at most once per conn.
 */
void xiw_cm_stream_closed(struct xiw_cm_conn *conn, int err);

/* ---- the progress thread (xiw_progress.c), used by both ---- */

/** xiw_progress_run() - run @fn(@arg) on the progress thread soon. */
int xiw_progress_run(void (*fn)(void *arg), void *arg);
/** xiw_progress_is_self() - true when called on the progress thread. */
bool xiw_progress_is_self(void);
/* the responder spin (xiw_progress.c, XIW_RESP_SPIN_US) */
void xiw_progress_note_resp(void);

#endif /* XIW_CONN_H */
