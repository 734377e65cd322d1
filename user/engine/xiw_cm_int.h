/* SPDX-License-Identifier: MIT */
/*
 * CM internals shared by xiw_cm_conn.c (connection object, events, MPA
 * frame I/O), xiw_cm.c (active side, API) and xiw_cm_listen.c (passive).
 *
 * Locking: none. Every piece of CM state is touched only on the progress
 * thread; the public API marshals onto it with xiw_progress_sync(), and
 * the QP's upcalls (xiw_cm_rtr_received/stream_closed) run there directly
 * or are queued with xiw_progress_run(). Handlers are called from queued
 * closures, never from inside a CM call, so no CM state is mid-update
 * when an application runs.
 */
#ifndef XIW_CM_INT_H
#define XIW_CM_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "xiwarp/xiwarp.h"
#include "xiw_conn.h"
#include "xiw_progress.h"
#include "xiw_proto.h"
#include "llp.h"

#define XIW_CM_TIMEOUT_MS 10000	/* TCP connect + MPA exchange, RTR wait */
#define XIW_CM_ORDER_MS 250	/* a request waits this long at most for
				 * those of earlier accepted connections */

enum cm_state {
	CS_TCP_CONNECTING,	/* active: TCP SYN sent */
	CS_REQ_SENT,		/* active: MPA request sent, reading the reply */
	CS_NOT_MPA,		/* active: a plain TCP peer answered: our FIN
				 * sent, waiting for its close (bounded) */
	CS_REQ_WAIT,		/* passive: reading the MPA request */
	CS_PENDING,		/* passive: CONNECT_REQUEST raised, app decides */
	CS_RTR_WAIT,		/* passive p2p: QP attached, waiting for RTR */
	CS_ESTABLISHED,
	CS_CLOSING,		/* final event sent; waiting for stream_closed */
	CS_DONE,		/* off the list; freed with the last reference */
};

struct cm_listener {
	struct xiw_llp_listener *ks;
	xiw_cm_handler h;
	void *arg;
	int refs;		/* the app's + one per queued event */
	bool dead;		/* destroyed: drop its CONNECT_REQUESTs */
	uint64_t accepted;	/* connections accepted (xiw_cm_order.c) */
	struct xiw_ptimer order_timer;	/* bounds a held request's wait */
};

struct xiw_cm_conn {
	int refs;		/* live state + one per queued closure */
	enum cm_state state;
	bool active;
	bool attached;		/* the QP owns the llp */
	bool final;		/* DISCONNECTED or a failure event raised */
	bool delivered;		/* CONNECT_REQUEST reached the app */
	bool orphan;		/* listener destroyed while PENDING */
	bool req_held;		/* PENDING, CONNECT_REQUEST not raised yet:
				 * an earlier accepted conn reads its own */
	bool order_skip;	/* too slow: holds no later request back */
	uint64_t accept_seq;	/* passive: its place in the listener's
				 * accept order */
	uint64_t held_ns;	/* when its request was read (req_held) */
	int broken;		/* -errno seen while PENDING (reading paused) */
	int closed_err;		/* from xiw_cm_stream_closed() */
	struct xiw_llp *llp;
	struct xiw_qp *qp;
	xiw_cm_handler h;
	void *harg;
	struct cm_listener *lst;
	struct xiw_ptimer timer;
	struct sockaddr_storage local, peer;
	struct sockaddr_storage src;	/* active: bind address (family 0: none) */
	uint64_t refused_until_ns;	/* active: retry a refused connect until */
	uint32_t refused_tries;
	unsigned int nudge_ms;	/* active, WRITE RTR: next nudge delay */
	size_t rlen;		/* bytes of the frame being read */
	struct xiw_mpa_params req, rep;	/* pdata points into the buffers */
	uint16_t ird, ord;	/* what this side offered */
	struct xiw_cm_conn *next;
	uint8_t req_buf[XIW_MPA_MAX_FRAME];
	uint8_t rep_buf[XIW_MPA_MAX_FRAME];
};

/* xiw_cm_conn.c */
struct xiw_cm_conn *cm_conn_new(bool active);
void cm_conn_get(struct xiw_cm_conn *c);
void cm_conn_put(struct xiw_cm_conn *c);
struct xiw_cm_conn *cm_conn_by_qp(const struct xiw_qp *qp);
struct xiw_cm_conn *cm_conn_first(void);
struct xiw_cm_conn *cm_conn_of_listener(const struct cm_listener *l);
void cm_conn_finish(struct xiw_cm_conn *c);
void cm_emit(struct xiw_cm_conn *c, enum xiw_cm_event_type type, int status,
	     const void *pdata, uint16_t plen);
void cm_fail(struct xiw_cm_conn *c, enum xiw_cm_event_type type, int err);
void cm_attached_fail(struct xiw_cm_conn *c, int err);
int cm_read_frame(struct xiw_cm_conn *c, bool is_reply);
int cm_send_frame(struct xiw_cm_conn *c, const uint8_t *buf, int len);
int cm_encode(struct xiw_cm_conn *c, bool is_reply);
void cm_listener_put(struct cm_listener *l);
void cm_timer(struct xiw_cm_conn *c, void (*fn)(void *arg));

/* xiw_cm_order.c: CONNECT_REQUESTs in accept order */
void cm_order_accepted(struct xiw_cm_conn *c);
void cm_order_release(struct cm_listener *l);

/* xiw_cm.c (active side) */
extern const struct xiw_llp_cb cm_active_cb;
/* xiw_cm_listen.c (passive side) */
extern const struct xiw_llp_cb cm_passive_cb;

#endif /* XIW_CM_INT_H */
