/* SPDX-License-Identifier: MIT */
/*
 * xiwarp engine objects: internal definitions of CQ, QP (SQ, RQ, ORQ, IRQ),
 * the STag table interface and the QP's transmit/receive state.
 *
 * Locking (one rule set for the whole QP data path):
 *   qp->tx_lock  SQ ring and WQE states, ORQ, IRQ, the TX cursor and the
 *                framed batch, qp->llp / qp->conn, state changes.
 *   qp->rq_lock  RQ ring (post_recv and the receive side's take/complete).
 *   cq->lock     the CQ ring and its arming.
 *   qp->rx_lock  the receive machine (qp->rx, qp->rxs, rtr_wait, rx_pend_*)
 *                and the use of qp->llp for receiving. The progress thread
 *                takes it (blocking) in its llp upcalls; an app thread
 *                polling an empty CQ takes it with trylock for one
 *                non-blocking receive pass (xiw_rx_poll). Only the progress
 *                thread pauses reading, arms timers or ends the stream: an
 *                app pass that meets any of that leaves it to the progress
 *                thread (xiw_rx_kick).
 *   cq->qps_lock the CQ's list of QPs; held by the poller across its pass
 *                and by a poll that hands freed CQE slots to waiting QPs
 *                (xiw_cq_credit_kick).
 *   Order: cq->qps_lock -> rx_lock -> tx_lock -> rq_lock -> cq->lock.
 *   Never call into the CM or the llp's close/set_owner while holding a
 *   QP lock except where noted. Whoever takes qp->llp away from an
 *   attached QP calls xiw_rx_fence() (no QP lock held) before the llp
 *   can be closed.
 */
#ifndef XIW_OBJ_H
#define XIW_OBJ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "xiwarp/xiwarp.h"
#include "xiw_proto.h"
#include "xiw_conn.h"
#include "llp.h"
#include "xiw_progress.h"
#include "xiw_txc.h"

/* --------------------------------------------- RDMAP opcodes (RFC 5040 §4.3) */
enum {
	XIW_OP_WRITE = 0,
	XIW_OP_READ_REQ = 1,
	XIW_OP_READ_RESP = 2,
	XIW_OP_SEND = 3,
	XIW_OP_SEND_INV = 4,
	XIW_OP_SEND_SE = 5,
	XIW_OP_SEND_SE_INV = 6,
	XIW_OP_TERMINATE = 7,
	XIW_OP_IMM = 8,		/* RFC 7306 §6: Immediate Data */
	XIW_OP_IMM_SE = 9,	/* ... with Solicited Event */
	XIW_OP_ATOMIC_REQ = 10,	/* RFC 7306 §5: Atomic Request */
	XIW_OP_ATOMIC_RESP = 11,	/* ... and its Response */
};

/* RFC 7306 §5.1: AOpCode of an Atomic Request */
enum { XIW_AOP_FETCH_ADD = 0, XIW_AOP_SWAP = 1, XIW_AOP_CMP_SWAP = 2 };
#define XIW_ATOMIC_REQ_LEN 52	/* rsvd|AOpCode, ReqID, STag, TO, add/swap
				 * data+mask, compare data+mask */
#define XIW_ATOMIC_RESP_LEN 12	/* original ReqID, original value */

/* xiw_atomic.c: the responder's side of an Atomic Request body */
bool xiw_atomic_valid(const uint8_t body[XIW_ATOMIC_REQ_LEN]);
uint64_t xiw_atomic_masked_add(uint64_t a, uint64_t b, uint64_t mask);
uint64_t xiw_atomic_exec(const uint8_t body[XIW_ATOMIC_REQ_LEN], uint64_t *p);

#define XIW_IMM_LEN 8		/* RFC 7306: immediate data octets */

/* DDP untagged queue numbers (RFC 5040 §5.1) */
enum { XIW_QN_SEND = 0, XIW_QN_READ_REQ = 1, XIW_QN_TERM = 2,
       XIW_QN_ATOMIC_RESP = 3 };

/* ------------------- TERMINATE codes used by the QP (RFC 5040 §7.2, 5041 §7) */
/* RDMAP layer */
#define XIW_T_RDMAP_CATASTROPHIC XIW_TERM(XIW_TERM_LAYER_RDMAP, 0, 0x00)
#define XIW_T_RDMAP_INV_STAG     XIW_TERM(XIW_TERM_LAYER_RDMAP, 1, 0x00)
#define XIW_T_RDMAP_BOUNDS       XIW_TERM(XIW_TERM_LAYER_RDMAP, 1, 0x01)
#define XIW_T_RDMAP_ACCESS       XIW_TERM(XIW_TERM_LAYER_RDMAP, 1, 0x02)
#define XIW_T_RDMAP_STAG_ASSOC   XIW_TERM(XIW_TERM_LAYER_RDMAP, 1, 0x03)
#define XIW_T_RDMAP_TO_WRAP      XIW_TERM(XIW_TERM_LAYER_RDMAP, 1, 0x04)
#define XIW_T_RDMAP_CANT_INVAL   XIW_TERM(XIW_TERM_LAYER_RDMAP, 1, 0x09)
#define XIW_T_RDMAP_UNEXP_OP     XIW_TERM(XIW_TERM_LAYER_RDMAP, 2, 0x06)
#define XIW_T_RDMAP_STREAM_CAT   XIW_TERM(XIW_TERM_LAYER_RDMAP, 2, 0x07)
/* DDP layer, tagged buffer errors */
#define XIW_T_DDP_INV_STAG       XIW_TERM(XIW_TERM_LAYER_DDP, 1, 0x00)
#define XIW_T_DDP_BOUNDS         XIW_TERM(XIW_TERM_LAYER_DDP, 1, 0x01)
#define XIW_T_DDP_STAG_ASSOC     XIW_TERM(XIW_TERM_LAYER_DDP, 1, 0x02)
#define XIW_T_DDP_TO_WRAP        XIW_TERM(XIW_TERM_LAYER_DDP, 1, 0x03)
/* DDP layer, untagged buffer errors */
#define XIW_T_DDP_INV_QN         XIW_TERM(XIW_TERM_LAYER_DDP, 2, 0x01)
#define XIW_T_DDP_NO_BUF         XIW_TERM(XIW_TERM_LAYER_DDP, 2, 0x02)
#define XIW_T_DDP_MSN_RANGE      XIW_TERM(XIW_TERM_LAYER_DDP, 2, 0x03)
#define XIW_T_DDP_INV_MO         XIW_TERM(XIW_TERM_LAYER_DDP, 2, 0x04)
#define XIW_T_DDP_TOO_LONG       XIW_TERM(XIW_TERM_LAYER_DDP, 2, 0x05)

/* ---------------------------------------------------------------- PD --- */

/**
 * xiw_pd_get() / xiw_pd_put() - count an MR or QP using @pd (xiw_pd_free
 * fails with -EBUSY while the count is non-zero).
 */
void xiw_pd_get(struct xiw_pd *pd);
void xiw_pd_put(struct xiw_pd *pd);

/* ------------------------------------------------------- STag table --- */

#define XIW_STAG_INDEX_MAX (1u << 20)	/* table entries (index 0 unused) */

/**
 * xiw_mr_check() - resolve an STag access to local memory.
 * @stag:   the STag (lkey or rkey).
 * @pd:     the PD the access comes through (the QP's PD).
 * @access: IBV_ACCESS_* rights the access needs (0: local read only).
 * @to:     remote: tagged offset (relative to the MR's iova); local: the
 *          virtual address (relative to ibv.addr).
 * @len:    bytes; 0 is allowed (bounds then require @to inside the MR or at
 *          its end).
 * @remote: true: @to is a TO (iova based); false: a local address.
 * @addr:   out: local address of the first byte (may be NULL).
 * Checks, in order: valid STag (index, key, not invalidated), same PD,
 * access rights, @to + @len does not wrap, bounds.
 * Return: 0, -ENOENT invalid STag, -EPERM other PD, -EACCES rights missing,
 * -EOVERFLOW @to + @len wraps 2^64, -ERANGE outside the region.
 */
int xiw_mr_check(uint32_t stag, const struct xiw_pd *pd, int access,
		 uint64_t to, uint64_t len, bool remote, void **addr);

/** xiw_mw_bind() - see xiw_mr.c (a bind WR at the head of the SQ). */
int xiw_mw_bind(struct xiw_mw *mw, const struct xiw_pd *pd, uint32_t rkey,
		struct xiw_mr *mr, uint64_t addr, uint64_t len, int access);

/**
 * xiw_mr_invalidate() - invalidate @stag (RFC 5040 §6.10 SEND with
 * Invalidate). Further checks fail with -ENOENT until the MR is freed.
 * Return: 0, -ENOENT not a valid STag, -EPERM other PD.
 */
int xiw_mr_invalidate(uint32_t stag, const struct xiw_pd *pd);

/* ---------------------------------------------------------------- CQ --- */

enum { XIW_CQ_DISARMED = 0, XIW_CQ_ARM_NEXT = 1, XIW_CQ_ARM_SOL = 2 };

/**
 * struct xiw_cq - completion queue: a power-of-two ring of ibv_wc.
 * @lock:   protects the ring, @armed, @overflow, @resv and @credit_wait.
 * @head:   producer count (engine), @tail: consumer count (poll).
 * @overflow: WCs dropped for lack of room. Seed 002 credits make this an
 *          internal error: every engine push has a reserved slot or waits.
 * @resv:   slots reserved by started WRs (send WRs, and the receive WR a
 *          message is landing in): head - tail + resv <= size always.
 * @credit_wait: a WR or flush waits for a slot; the next poll (or
 *          xiw_cq_unreserve) that frees one kicks the waiters.
 * @nqp:    QPs using this CQ as send or receive CQ (destroy: -EBUSY).
 */
struct xiw_cq {
	struct ibv_cq ibv;
	pthread_mutex_t lock;
	struct ibv_wc *ring;
	uint32_t size, mask;
	uint32_t head, tail;
	int armed;
	uint64_t overflow;
	uint32_t resv;
	bool credit_wait;
	struct xiw_cchan *ch;
	atomic_int nqp;
	/* xiw_cq_wait() (xiw_cq_wait.c, xiw_cq_wait.h): one sleeping waiter */
	uint32_t wait_nmin;	/* lock: wake when head - tail >= it; 0 none */
	uint32_t wait_seq;	/* futex word, bumped by the waking push */
	uint64_t wait_wakes;	/* lock: futex wakes issued by push */
	atomic_uint_fast64_t wait_sleeps;	/* FUTEX_WAITs by waiters */
	atomic_int waiter;	/* a thread is in xiw_cq_wait (destroy: -EBUSY) */
	/* an app thread polls this CQ (its empty polls check the ACKs of
	 * the QPs' send WRs, xiw_txack_poll): the last poll, and whether
	 * the poller handed back since (naps, blocks: xiw_cq_rx_handoff) */
	_Atomic uint64_t poll_ns;
	atomic_bool poll_away;
	/* xiw_rx_poll() from the poller: QPs whose send or recv CQ this is */
	pthread_mutex_t qps_lock;	/* @qps, @nqps, @qps_cap, @qps_next */
	struct xiw_qp **qps;
	uint32_t nqps, qps_cap, qps_next;
};

/**
 * xiw_cq_qp_add() / xiw_cq_qp_del() - (un)list @qp on @cq so a thread
 * polling the empty CQ receives for it (xiw_rx_poll) and a poll that
 * frees CQE slots resumes it when it waits for one (xiw_cq_credit_kick).
 * No QP lock held. Del waits for a poller's pass in progress.
 * Return (add): 0, or -ENOMEM (the QP must not be used with @cq).
 */
int xiw_cq_qp_add(struct xiw_cq *cq, struct xiw_qp *qp);
void xiw_cq_qp_del(struct xiw_cq *cq, struct xiw_qp *qp);
void xiw_cq_rx_handoff(struct xiw_cq *cq, bool block);
bool xiw_cq_polled_lately(struct xiw_cq *cq, uint64_t ns, bool serving);

/**
 * xiw_cq_push() - append one completion without a reserved slot; fires
 * the channel if armed.
 * @solicited: the completion is for a solicited message (SEND_SE).
 * Error completions also fire a solicited-only arm. Runs in any thread.
 * The engine never needs it (its WCs are reserved or wait for room); a
 * full CQ here is an accounting bug: logged at error level and counted.
 * Return: 0, or -ENOSPC if the CQ is full (the WC is dropped and counted).
 */
int xiw_cq_push(struct xiw_cq *cq, const struct ibv_wc *wc, bool solicited);

/*
 * Seed 002 CQE credits. Every WC the engine makes either takes a slot
 * reserved when its WR started (send WRs, the receive WR a message lands
 * in) or waits until the CQ has room (flushes, unsignalled WRs that fail).
 * A waiter raises its own flag (*@wait, a QP's rcq_wait/scq_wait) and the
 * CQ's credit_wait under cq->lock, in the same critical section as the
 * failed attempt, so the poll that frees the next slot cannot miss it:
 * that poll clears both and resumes the waiter (xiw_cq_credit_kick).
 */

/**
 * xiw_cq_reserve() - reserve one CQE slot for a send WR about to start
 * (a started WR always has room for its WC). Unreserved pushes leave
 * reserved slots alone. Return: true if reserved.
 */
bool xiw_cq_reserve(struct xiw_cq *cq);
/** xiw_cq_has_room() - a reservation would succeed now. */
bool xiw_cq_has_room(struct xiw_cq *cq);
/**
 * xiw_cq_reserve_wait() - xiw_cq_reserve(), or, without room, raise *@wait
 * and the CQ's credit_wait (atomically with the check). Return: reserved.
 */
bool xiw_cq_reserve_wait(struct xiw_cq *cq, atomic_bool *wait);
/**
 * xiw_cq_unreserve() - give back @n reserved slots whose WRs will make no
 * WC (QP reset or destroyed). Return: true if waiters must be kicked:
 * call xiw_cq_credit_kick() once no QP lock is held.
 */
bool xiw_cq_unreserve(struct xiw_cq *cq, uint32_t n);
/** xiw_cq_push_reserved() - xiw_cq_push() into the slot reserved for it
 *  (never fails for lack of room). */
int xiw_cq_push_reserved(struct xiw_cq *cq, const struct ibv_wc *wc,
			 bool solicited);
/**
 * xiw_cq_push_wait() - push an unreserved WC if the CQ has room; else
 * raise *@wait and credit_wait like xiw_cq_reserve_wait() and drop
 * nothing: the caller keeps the WC and pushes it again when kicked.
 * Return: 0, or -EAGAIN (no room; not counted as overflow).
 */
int xiw_cq_push_wait(struct xiw_cq *cq, const struct ibv_wc *wc,
		     atomic_bool *wait);
/**
 * xiw_cq_credit_kick() - slots were freed: retry the send WRs parked in
 * the datamover and resume every QP of @cq whose receive side or flush
 * waits for a slot (xiw_qp_credit_kick). Called by xiw_cq_poll(); any
 * thread, no QP lock held.
 */
void xiw_cq_credit_kick(struct xiw_cq *cq);

/** struct xiw_cq_credits - @cq's accounting (tests, tools). */
struct xiw_cq_credits {
	uint32_t size, queued, resv;
	uint64_t overflow;
};
/** xiw_cq_credits() - read @cq's accounting under its lock. */
void xiw_cq_credits(struct xiw_cq *cq, struct xiw_cq_credits *c);

/* ---------------------------------------------------------------- QP --- */

/* ACKED: the peer acknowledged it, zero-copy pages not yet released */
enum xiw_sqe_state { XIW_SQE_QUEUED, XIW_SQE_ACTIVE, XIW_SQE_ACKED,
		     XIW_SQE_DONE };

/**
 * struct xiw_sqe - one posted send WR.
 * @len:  total payload bytes (sum of SGEs or inline bytes).
 * @sge:  SGEs as posted; for inline WRs sge[0] points at the slot's copy.
 */
struct xiw_sqe {
	uint64_t wr_id;
	uint32_t opcode;	/* enum ibv_wr_opcode */
	uint32_t flags;		/* IBV_SEND_* */
	uint32_t num_sge;
	uint32_t len;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t inv_stag;
	uint8_t state;
	uint8_t fail_st;		/* != 0: its WC gets this status, not
					 * FLUSH_ERR (refused by TERMINATE) */
	uint8_t local_st;		/* a local WR (bind, local invalidate)
					 * done with this status */
	struct xiw_mw *mw;		/* IBV_WR_BIND_MW: the window ... */
	struct xiw_mr *bmr;		/* ... the MR, range raddr/blen */
	uint64_t blen;
	int bacc;
	bool resv;			/* holds a CQE slot of the send CQ */
	bool zc;			/* payload went (partly) with MSG_ZEROCOPY */
	uint32_t zc_id;			/* ... released with this llp zc id */
	uint8_t imm[XIW_IMM_LEN];	/* WRITE_WITH_IMM: imm_data, 0 pad */
	uint8_t atom[XIW_ATOMIC_REQ_LEN];	/* atomics: the request body */
	struct ibv_sge sge[XIW_MAX_SGE];
};

/** struct xiw_rqe - one posted receive WR; @len the sum of its SGEs. */
struct xiw_rqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t len;
	struct ibv_sge sge[XIW_MAX_SGE];
};

/**
 * struct xiw_srq - a shared receive queue (xiw_srq.c): ring [tail, head)
 * of posted WRs under @lock; @qps the QPs using it, @nwait how many of
 * them wait for a WR (qp->srq_wait); @limit the armed limit (0: none).
 */
struct xiw_srq {
	struct ibv_srq ibv;
	struct xiw_pd *pd;
	pthread_mutex_t lock;
	struct xiw_rqe *rq;
	uint32_t size, mask, max, max_sge;
	uint32_t head, tail;
	uint32_t limit;
	struct xiw_qp **qps;
	uint32_t nqps, nwait;
};

int xiw_srq_attach(struct xiw_srq *srq, struct xiw_qp *qp);
void xiw_srq_detach(struct xiw_srq *srq, struct xiw_qp *qp);
int xiw_srq_take(struct xiw_srq *srq, struct xiw_qp *qp, struct xiw_rqe *out);

/**
 * struct xiw_irqe - an inbound READ request waiting for its response, or
 * an Atomic Request already executed (@atomic): @resp is its Response
 * body (kept here until sent: the slot is not reused before IRD wraps).
 */
struct xiw_irqe {
	uint32_t sink_stag, src_stag, len;
	uint64_t sink_to, src_to;
	bool atomic;
	uint8_t resp[XIW_ATOMIC_RESP_LEN];
};

/**
 * struct xiw_orqe - an outbound READ request waiting for its response.
 * @sq_idx: SQ slot of the READ WR; @rtr: the RTR's zero-length READ.
 * @got: response bytes placed so far.
 * The sink SGEs are the WR's own, read from its SQ slot: the WR stays
 * there until its response completes it or a flush empties the ORQ (not
 * copied here, which kept 8 SGEs per slot in every QP).
 */
struct xiw_orqe {
	uint32_t sq_idx;
	bool rtr;
	bool atomic;		/* an Atomic Request: the WR's sge[0] gets the value */
	uint32_t req_id;
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len, got;
	uint32_t num_sge;
};

#define XIW_TERM_FLUSH_MS 2000	/* max wait to get a TERMINATE out */
#define XIW_RQ_WAIT_MS 10000	/* a SEND waits this long for a receive */

enum { XIW_TXK_NONE, XIW_TXK_SQ, XIW_TXK_IRQ, XIW_TXK_RTR, XIW_TXK_TERM };

/**
 * struct xiw_txmsg - the message being framed (one at a time, no
 * interleaving of messages inside the FPDU stream).
 * @hdr:    header template (opcode, tagged, stag/to base, qn/msn).
 * @hdr_len: encoded header length incl. MPA length (for payload sizing).
 * @sge, @nsge: payload source; @si/@soff: the cursor inside it.
 * @total, @off: message bytes and bytes framed so far.
 */
struct xiw_txmsg {
	int kind;
	uint32_t sq_idx;
	struct xiw_fpdu_hdr hdr;
	size_t hdr_len;
	const struct ibv_sge *sge;
	struct ibv_sge one;
	int nsge, si;
	uint32_t soff;
	uint32_t total, off;
};

#define XIW_TXB_FPDUS 32	/* FPDUs per sendmsg batch */
#define XIW_TXB_IOV 1024	/* IOV_MAX */
#define XIW_TXB_BYTES (256u * 1024)

/** struct xiw_txmark - at batch byte @end, message (@kind, @idx) is out. */
struct xiw_txmark {
	size_t end;
	int kind;
	uint32_t idx;
};

/**
 * struct xiw_txbatch - framed FPDUs handed (or being handed) to the llp.
 * @iov[@iov_idx..@niov): still to send; iov[iov_idx] already advanced past
 * a partial send. @sent/@total: bytes.
 */
struct xiw_txbatch {
	struct iovec iov[XIW_TXB_IOV];
	int niov, iov_idx;
	size_t total, sent;
	int nfpdu;
	struct xiw_txmark mark[XIW_TXB_FPDUS];
	int nmark, mark_idx;
	bool any_zc;			/* some iov goes with MSG_ZEROCOPY */
	uint8_t zc[XIW_TXB_IOV];	/* per iov: send it zero-copy */
	uint8_t fend[XIW_TXB_IOV];	/* per iov: the last of its FPDU */
	struct xiw_txf_scratch scr[XIW_TXB_FPDUS];
};

/**
 * struct xiw_rxstate - untagged/read-request receive sequencing
 * (qp->rx_lock).
 * @msn:    expected MSN on QN 0 (RFC 5041 §5.1, starts at 1).
 * @rd_msn: expected MSN on QN 1.
 * @mo:     bytes of the current SEND placed so far.
 * @have_rqe: @rqe holds the RQ head the current SEND lands in.
 * @term_got: a TERMINATE arrived (@term_ctrl); @rtr_got: the RTR arrived.
 */
struct xiw_rxstate {
	uint32_t msn, rd_msn, mo;
	uint32_t atom_msn;	/* expected MSN on QN 3 (Atomic Responses) */
	uint8_t atom[XIW_ATOMIC_REQ_LEN];	/* Atomic Request/Response body */
	bool have_rqe;
	bool term_got, rtr_got;
	uint32_t term_ctrl;
	uint32_t tx_due;	/* READ requests/responses since the last push */
	uint8_t imm[XIW_IMM_LEN];	/* Immediate Data being received */
	bool write_seen;	/* a WRITE arrived since the last QN 0 message:
				 * Immediate Data after it is WRITE_WITH_IMM */
	struct xiw_rqe rqe;
	uint8_t discard[1024];
};

/**
 * struct xiw_qp - an RC queue pair.
 * @state:   enum ibv_qp_state (also mirrored in ibv.state).
 * @sq/@sq_mask: SQ ring; slots [sq_tail, sq_head) are posted, [sq_tail,
 *           sq_tx) started; @sq_max the posted-WR limit (max_send_wr).
 * @inl:     max_inline bytes per SQ slot (inline copies).
 * @rq:      RQ ring, [rq_tail, rq_head) posted.
 * @orq/@irq: outstanding outbound / inbound READs.
 * @ord/@ird: limits (RFC 5040 §6.6, MPA v2 negotiation).
 * @tx_hold: passive p2p side waiting for the RTR: send nothing.
 * @tx_wait_write: the progress thread owns the QP's sending (a writable
 *           upcall or a resume closure is due, xiw_tx_push_rx): posters
 *           and xiw_tx_push() keep away.
 * @term:    TERMINATE code to send (0: none).
 * @rtr:     RTR FPDU type still to send (XIW_RTR_NONE: none).
 * @refs:    progress callbacks in flight referencing the QP.
 */
struct xiw_qp {
	struct ibv_qp ibv;
	struct xiw_pd *pd;
	struct xiw_cq *scq, *rcq;
	atomic_int state;
	bool sig_all;
	uint32_t max_send_sge, max_recv_sge, max_inline;
	int access;

	pthread_mutex_t tx_lock;
	/*
	 * Posting never waits for tx_lock (seed 003): posters append WQEs
	 * under sq_lock (posters only, no syscalls under it; sq_head is
	 * published with a release store), then try tx_lock. A poster that
	 * finds it taken sets tx_more and leaves; xiw_tx_unlock() of the
	 * holder hands the new WRs to the progress thread (or to the
	 * datamover, which owns the QP's sending then anyway). There they
	 * may cork as in the post, unless an uncork (xiw_tx_uncork) found
	 * the lock taken too (tx_uncork): then they go.
	 */
	pthread_mutex_t sq_lock;
	atomic_bool tx_more;
	atomic_bool tx_uncork;
	struct xiw_sqe *sq;
	uint8_t *inl;
	uint32_t sq_size, sq_mask, sq_max;
	uint32_t sq_head, sq_tx, sq_tail;
	/* ping-pong detection for the poll linger (xiw_cq.c), sq_lock:
	 * rx_reads at the last post, and how many posts in a row found
	 * the peer had spoken since the one before; pp_need: the streak a
	 * linger needs (0: XIW_PP_STREAK; pollers double it after a linger
	 * the answer outlasted, halve it after one that got the answer) */
	uint32_t pp_rx_mark;
	uint8_t pp_streak;
	uint8_t pp_need;
	/* READ/Atomic queues sized at attach to the negotiated ORD/IRD + 1
	 * (the RTR), a power of two (xiw_qp_attach): a QP with ORD/IRD 1
	 * holds 2 + 2 entries, not 64 + 64 as when they were fixed arrays */
	struct xiw_orqe *orq;
	uint32_t orq_head, orq_tail, orq_mask;
	struct xiw_irqe *irq;
	uint32_t irq_head, irq_tail, irq_mask;
	bool irq_active;
	uint16_t ord, ird;
	uint32_t tx_msn, tx_rd_msn, tx_term_msn, tx_atom_msn;

	struct xiw_llp *llp;
	struct xiw_cm_conn *conn;
	struct xiw_conn_params params;
	struct xiw_txf txf;
	bool attached, closed_reported, ever_attached;
	int end_err;			/* TERMINATE sent: report this */
	bool term_waiting;		/* end the stream once it is out */
	struct xiw_ptimer end_timer;	/* give up flushing it (progress) */
	struct xiw_ptimer rq_timer;	/* SEND waits for a receive, or app
					 * reading is checked (progress) */
	bool tx_hold, tx_wait_write, shutdown_pending, tx_dead;
	/* FIN hold while the peer may still be accepting (xiw_qp_tx.c
	 * tx_fin): nudging on, nudges sent, FIN held now. tx_lock. */
	bool nudge_on, fin_held;
	uint8_t nudges;
	int term;
	uint8_t term_hdr[XIW_MAX_HDR_LEN];	/* offending FPDU header */
	uint32_t term_hdr_len;
	uint8_t term_pl[XIW_MAX_HDR_LEN];	/* TERMINATE payload */
	enum xiw_rtr_type rtr;
	struct xiw_txmsg msg;
	struct xiw_txbatch *b;
	/* ack completions (seed 000, xiw_txack.c) */
	bool ack_mode;			/* XIW_TX_COMPLETION=ack */
	bool ack_tried, ack_traced;	/* sockops registration tried / on */
	bool ack_late;			/* traced after WRs were sent: poll them */
	bool ack_armed;			/* tx_lock: the last check armed the
					 * watermark (a backstop completion
					 * is then an ACK sockops missed) */
	bool ack_listed;		/* on the watch list (holds a ref) */
	struct xiw_qp *ack_next;	/* watch list link (txack lock) */
	/* the tracer's per-ACK callbacks (xiw_txack_cb.c), tx_lock */
	bool ack_cb_off;		/* off: a poller serves the ACKs */
	bool ack_cb_fixed;		/* no switch: they stay on */
	uint64_t ack_cb_on_ns;		/* traced or last switched on */
	uint64_t ack_block_ns;		/* a CQ waiter last blocked */
	struct xiw_txc txc;		/* WRs handed over, waiting for ACK */
	bool zc_off;			/* no zero-copy on this stream */
	bool zc_any;			/* @zc_last is valid */
	uint32_t zc_last;		/* llp id of the last zero-copy send */
	uint32_t zc_wait;		/* SQ WRs in state XIW_SQE_ACKED */
	bool tx_credit;			/* the next WR waits for a CQE slot */
	atomic_bool scq_wait;		/* an SQ WC (flush) waits for a slot of
					 * scq: xiw_qp_credit_kick resumes it */
	bool tx_failed;			/* a WR completed in error: no settle */
	/* datamover (seed 003, xiw_datamover.c) */
	bool dm_owned;			/* tx_lock: the datamover sends for it */
	/* TX corking (xiw_txcork.c) */
	uint64_t tx_last_ns;		/* tx_lock: when bytes were last sent */
	uint64_t tx_calls;		/* tx_lock: llp sends that took bytes */
	uint32_t cork_rx_mark;		/* tx_lock: rx_reads at that send */
	_Atomic uint64_t cork_since_ns;	/* WRs held since (0: none); tx_lock
					 * writes, the backstop reads */
	bool cork_listed;		/* cork lock: listed (holds a ref) */
	struct xiw_qp *cork_next;	/* cork lock: list link */
	int dm_state;			/* dm lock: enum xiw_dm_state */
	bool dm_cancel, dm_fd_added;	/* dm lock */
	int dm_fd;			/* dm lock: fd in the datamover's epoll */
	struct xiw_qp *dm_next;		/* dm lock: active list link */

	pthread_mutex_t rq_lock;
	struct xiw_srq *srq;		/* receives come from it (rq: the WR
					 * a message is landing in) */
	bool srq_wait;			/* srq->lock: waits for an SRQ WR */
	bool last_wqe;			/* LAST_WQE_REACHED reported */
	struct xiw_rqe *rq;
	uint32_t rq_size, rq_mask, rq_max;
	uint32_t rq_head, rq_tail;
	bool rx_need_rqe;		/* the receive side waits for a WR */
	bool rx_need_cqe;		/* ... for a CQE slot of rcq */
	bool rq_resv;			/* the RQ head WR holds a slot of rcq */
	atomic_bool rcq_wait;		/* the receive side or an RQ flush
					 * waits for a slot of rcq */

	/* receive side: rx_lock (see the lock rules at the top) */
	pthread_mutex_t rx_lock;
	struct xiw_rx rx;
	struct xiw_llp *rx_llp_cur;	/* the stream rx_step() reads (records) */
	struct xiw_rxstate rxs;
	bool rtr_wait;
	atomic_bool rx_stop;
	int rx_pend_term;	/* app pass: TERMINATE to send (progress) */
	int rx_pend_err;	/* app pass: recv error to end the stream */
	_Atomic uint64_t rx_app_poll_ns;	/* last app pass (any thread) */
	_Atomic uint64_t rx_app_got_ns;		/* last app pass with bytes */
	atomic_bool rx_app_mode;	/* progress thread left reading to apps */
	uint8_t rx_upcall_skips;	/* readable upcalls skipped in a row
					 * (ksock's progress thread counts,
					 * rx_lock holders reset) */
	uint32_t rx_reads;		/* reads that returned bytes (rx_lock
					 * writes, release; TX corking reads) */
	uint32_t rx_pass_bytes;		/* rx_lock: bytes read in this pass */
	/* receive staging (xiw_qp_rx.c): bytes [stg_off, stg_len) of stg
	 * were read from the stream but not yet fed to rx; stg_short: that
	 * recvmsg drained the socket. stg is lent (xiw_bufpool.c).
	 * rx_small_run: small FPDUs received in a row (staging only from
	 * the second on); stg_fills: staging reads (statistics). */
	uint8_t *stg;
	uint32_t stg_off, stg_len;
	bool stg_short;
	uint8_t rx_small_run;
	uint32_t stg_fills;

	pthread_mutex_t ref_lock;
	pthread_cond_t ref_cond;
	int refs;

	struct xiw_qp *reg_next;	/* QP number registry (xiw_qp_lookup) */
};

/* ---- xiw_async.c: asynchronous events (xiwarp.h xiw_async_fn) ---- */
void xiw_async_qp(struct xiw_qp *qp, enum ibv_event_type type);
void xiw_async_cq(struct xiw_cq *cq, enum ibv_event_type type);
void xiw_async_srq(struct ibv_srq *srq, enum ibv_event_type type);

/* ---- xiw_qp.c: state, completions, teardown helpers ---- */

/** xiw_qp_ref() / xiw_qp_unref() - pin the QP for a progress callback. */
void xiw_qp_ref(struct xiw_qp *qp);
void xiw_qp_unref(struct xiw_qp *qp);

/**
 * xiw_qp_sq_retire() - complete finished SQ WRs in order (tx_lock held):
 * signalled (or sq_sig_all) WRs get a success WC on the send CQ.
 */
void xiw_qp_sq_retire(struct xiw_qp *qp);

/**
 * xiw_qp_to_error() - move to ERROR and flush every outstanding SQ and RQ
 * WR with IBV_WC_WR_FLUSH_ERR (tx_lock held). Idempotent.
 */
void xiw_qp_to_error(struct xiw_qp *qp);
void xiw_qp_sq_flush(struct xiw_qp *qp);
void xiw_qp_sq_fail_head(struct xiw_qp *qp, enum ibv_wc_status st);

/**
 * xiw_qp_credit_kick() - @cq (@qp's send and/or receive CQ) freed slots:
 * continue @qp's SQ completions/flush and its RQ flush, resume its receive
 * side if it waits for a slot. Only QPs whose scq_wait/rcq_wait is raised
 * do anything. Called with cq->qps_lock held, no QP lock.
 */
void xiw_qp_credit_kick(struct xiw_qp *qp, struct xiw_cq *cq);

/**
 * xiw_qp_stream_end() - the stream is over (EOF, RST, TERMINATE): ERROR,
 * flush, release the llp and tell the CM once via xiw_cm_stream_closed().
 * Progress thread, no QP lock held.
 */
void xiw_qp_stream_end(struct xiw_qp *qp, int err);

/**
 * xiw_qp_fatal() - a protocol violation detected locally: send TERMINATE
 * @term (XIW_TERM()), ERROR, flush, xiw_cm_stream_closed(conn, -EPROTO).
 * Progress thread, no QP lock held.
 */
void xiw_qp_fatal(struct xiw_qp *qp, int term);

/**
 * xiw_qp_end_async() - schedule xiw_qp_stream_end(@err) on the progress
 * thread (for errors found with tx_lock held, possibly in an app thread).
 */
void xiw_qp_end_async(struct xiw_qp *qp, int err);

/* ---- xiw_qp_tx.c ---- */

/**
 * xiw_tx_push() - frame and send whatever is ready (tx_lock held). Never
 * blocks: on a short send it asks the llp for a writable upcall.
 */
void xiw_tx_push(struct xiw_qp *qp);
/** xiw_tx_fin_would_hold() - a graceful close now would hold its FIN for
 *  the RTR nudges (xiw_qp_tx.c tx_fin); tx_lock held. */
bool xiw_tx_fin_would_hold(const struct xiw_qp *qp);
/**
 * xiw_tx_unlock() - release qp->tx_lock; if a poster found it taken
 * meanwhile (tx_more) and the datamover does not own the QP's sending,
 * have the progress thread send or flush the new WRs. Every holder of
 * tx_lock releases it with this.
 */
void xiw_tx_unlock(struct xiw_qp *qp);
/* xiw_bufpool.c: buffers lent to QPs while they hold bytes */
#define XIW_RX_STAGE (16u * 1024)	/* receive staging buffer, bytes */
struct xiw_txbatch *xiw_txbatch_get(void);
void xiw_txbatch_put(struct xiw_txbatch *b);
uint8_t *xiw_rxstage_get(void);
void xiw_rxstage_put(uint8_t *b);
/** xiw_tx_reset() - drop the TX cursor and batch (tx_lock held). */
void xiw_tx_reset(struct xiw_qp *qp);
/** xiw_tx_writable() - llp writable upcall (progress thread). */
void xiw_tx_writable(void *arg);
/** xiw_tx_push_rx() - send what the receive path made due; leftovers stay
 *  with the progress thread (tx_wait_write). tx_lock held. */
void xiw_tx_push_rx(struct xiw_qp *qp);

#define XIW_TX_DIRECT (256u * 1024)	/* bytes a poster sends directly */
#define XIW_DM_PIECE (256u * 1024)	/* bytes per datamover turn */
enum { XIW_TX_DONE, XIW_TX_SHORT, XIW_TX_MORE, XIW_TX_CREDIT };
int xiw_tx_send_some(struct xiw_qp *qp, size_t budget);

/**
 * xiw_tx_uncork() - send the WRs a poster held (any thread, no QP lock):
 * now if tx_lock is free, else its holder hands them on (tx_more).
 */
void xiw_tx_uncork(struct xiw_qp *qp);

/* ---- xiw_txcork.c: TX corking of small-WR bursts (issue 11) ---- */
bool xiw_tx_cork_wanted(struct xiw_qp *qp);
uint32_t xiw_tx_cork_mark(const struct xiw_qp *qp);
void xiw_tx_cork_sent(struct xiw_qp *qp, uint32_t rx_mark);
void xiw_tx_cork_flush(void);
void xiw_tx_cork_forget(struct xiw_qp *qp);

/* ---- xiw_datamover.c: asynchronous datamover (seed 003) ---- */

enum xiw_dm_state { XIW_DM_IDLE, XIW_DM_ACTIVE, XIW_DM_PAUSED,
		    XIW_DM_RUNNING, XIW_DM_CANCEL, XIW_DM_CREDIT };

/**
 * xiw_dm_activate() - @qp has more to send than its direct budget: the
 * datamover serves it round-robin, up to XIW_DM_PIECE bytes (ending at
 * an FPDU end) or what its socket takes per turn. tx_lock held; a doorbell
 * (eventfd write) only if the datamover sleeps.
 */
void xiw_dm_activate(struct xiw_qp *qp);
/**
 * xiw_dm_pause() - @qp's stream lacks send space: the datamover resumes
 * it when the socket reports space again (EPOLLOUT: TCP's free space is
 * at least a third of the buffer, sk_stream_wspace >= min_wspace).
 * tx_lock held.
 */
void xiw_dm_pause(struct xiw_qp *qp);
/** xiw_dm_credit_wait() - @qp's next WR needs a CQE slot of its send CQ
 *  (seed 002): park it until a poll frees one. tx_lock held. */
void xiw_dm_credit_wait(struct xiw_qp *qp);
/** xiw_dm_credit_kick() - a CQ with waiters was polled: retry every QP
 *  waiting for credits. Any thread, no lock held. */
void xiw_dm_credit_kick(void);
/** xiw_dm_forget() - the stream is gone or reset: stop serving @qp
 *  (tx_lock held; the datamover drops its reference soon). */
void xiw_dm_forget(struct xiw_qp *qp);

/* ---- xiw_txack.c: ACK completions (seed 000) ---- */

/**
 * struct xiw_txcfg - send-completion knobs (environment, read once).
 * @ack:    XIW_TX_COMPLETION=ack: WCs wait for the peer TCP's ACK.
 * @method: XIW_ACK_METHOD, enum xiw_ack_method (default 2, HSN).
 * @zcopy_min: XIW_ZCOPY_MIN: WRs of at least this many payload bytes go
 *          with MSG_ZEROCOPY and are ACK-completed (0: never).
 * @cork_ns: XIW_TX_CORK_US in ns: the TX corking window (0: off).
 */
struct xiw_txcfg {
	bool ack;
	int method;
	uint32_t zcopy_min;
	uint64_t cork_ns;
};

const struct xiw_txcfg *xiw_tx_config(void);
void xiw_txack_watch(struct xiw_qp *qp);
void xiw_txack_trace(struct xiw_qp *qp);
void xiw_txack_settle(struct xiw_qp *qp);
void xiw_txack_zc_quiesce(struct xiw_qp *qp);
void xiw_txack_preload(void);
void xiw_txack_forget(struct xiw_qp *qp);
void xiw_txack_wake(void);
void xiw_txack_rx(struct xiw_qp *qp);
bool xiw_txack_poll(struct xiw_qp *qp);
void xiw_txack_handoff(struct xiw_qp *qp, bool block);
uint64_t xiw_txack_inline_hits(void);
uint64_t xiw_txack_woken_scans(void);
unsigned long xiw_txack_backstop_hits(void);
uint64_t xiw_cq_linger_hits(void);
uint64_t xiw_cq_linger_misses(void);
uint64_t xiw_cq_yield_pauses(void);

/* ---- xiw_txack_cb.c: the tracer's per-ACK callbacks on or off ---- */

void xiw_txack_cb_traced(struct xiw_qp *qp);
void xiw_txack_cb_quiet(struct xiw_qp *qp);
bool xiw_txack_cb_need(struct xiw_qp *qp, const char *why);
uint64_t xiw_txack_cb_switches(bool on);

/* ---- xiw_qp_rq.c: the RQ and its CQE credits (rq_lock) ---- */

/**
 * xiw_rqe_fill() - check a receive WR and copy it into @e (RQ and SRQ):
 * at most @max_sge SGEs, each a local-write range of an MR of @pd, 2 GB
 * in all. Return: 0, or -EINVAL.
 */
int xiw_rqe_fill(struct xiw_pd *pd, uint32_t max_sge,
		 const struct ibv_recv_wr *wr, struct xiw_rqe *e);

/**
 * xiw_rq_take() - a message starts landing (its first FPDU): copy the RQ
 * head WR to *@out, with a CQE slot of the receive CQ reserved for it
 * (seed 002; kept by the head WR until it completes or is flushed).
 * Return: 0, or -EAGAIN: no WR posted (rx_need_rqe) or no slot
 * (rx_need_cqe); post_recv or a poll of the CQ resumes the receive side.
 */
int xiw_rq_take(struct xiw_qp *qp, struct xiw_rqe *out);
/**
 * xiw_rq_complete() - the RQ head WR is done: pop it and post @wc into its
 * slot, unless it was flushed meanwhile (QP in ERROR).
 */
void xiw_rq_complete(struct xiw_qp *qp, const struct ibv_wc *wc,
		     bool solicited);
/**
 * xiw_rq_flush() - QP in ERROR: complete posted RQ WRs with FLUSH_ERR in
 * posting order while the receive CQ has room; the rest wait for a poll
 * (xiw_rq_credit_kick). rq_lock not held.
 */
void xiw_rq_flush(struct xiw_qp *qp);
/** xiw_rq_srq_kick() - the SRQ got WRs: resume @qp if it waits for one. */
void xiw_rq_srq_kick(struct xiw_qp *qp);
/** xiw_rq_credit_kick() - the receive CQ freed slots (see xiw_qp_credit_kick). */
void xiw_rq_credit_kick(struct xiw_qp *qp);
/** xiw_rq_waits() - the receive side waits for a WR or a CQE slot. */
enum { XIW_RQ_GO, XIW_RQ_WAIT_WR, XIW_RQ_WAIT_CQE };
int xiw_rq_waits(struct xiw_qp *qp);
/**
 * xiw_rq_reset() - RESET or destroy: drop every RQ WR without a WC and
 * give back the head WR's slot. tx_lock may be held. Return: true if the
 * caller must xiw_cq_credit_kick(rcq) once it holds no QP lock.
 */
bool xiw_rq_reset(struct xiw_qp *qp);

/* ---- xiw_qp_rx.c ---- */

/** xiw_rx_ops_qp - placement callbacks of a QP's receive machine. */
extern const struct xiw_rx_ops xiw_rx_ops_qp;
/** xiw_rx_reset() - fresh receive sequencing (MSNs at 1). */
void xiw_rx_reset(struct xiw_qp *qp);
/** xiw_rx_readable() - llp readable upcall (progress thread). */
void xiw_rx_readable(void *arg);
/** xiw_rx_closed() - llp closed upcall (progress thread). */
void xiw_rx_closed(void *arg, int err);
/** xiw_rx_kick() - post_recv found the receive side waiting: resume it. */
void xiw_rx_kick(struct xiw_qp *qp);
/** xiw_rx_poll() - non-blocking receive pass from an app thread. */
bool xiw_rx_poll(struct xiw_qp *qp);
bool xiw_rx_poll_now(struct xiw_qp *qp);
uint64_t xiw_rx_upcall_skips(void);
/** xiw_rx_fence() - wait until no app receive pass uses the old llp. */
void xiw_rx_fence(struct xiw_qp *qp);

#endif /* XIW_OBJ_H */
