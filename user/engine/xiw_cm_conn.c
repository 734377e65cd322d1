// SPDX-License-Identifier: MIT
/*
 * CM connection object: reference counting, the list of live connections,
 * event delivery to handlers (queued closures) and MPA frame I/O.
 * Progress thread only (see xiw_cm_int.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "xiwarp/wire/mpa.h"
#include "xiw_cm_int.h"

static struct xiw_cm_conn *cm_conns;	/* live (not CS_DONE) connections */

/** cm_conn_new() - a connection with one (live) reference, on the list.
 *  Return: the conn, or NULL (out of memory). */
struct xiw_cm_conn *cm_conn_new(bool active)
{
	struct xiw_cm_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->refs = 1;
	c->active = active;
	c->next = cm_conns;
	cm_conns = c;
	return c;
}

/** cm_conn_get() - take a reference (any thread). */
void cm_conn_get(struct xiw_cm_conn *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

/** cm_conn_put() - drop a reference; the last one frees @c and its
 *  listener reference (any thread). */
void cm_conn_put(struct xiw_cm_conn *c)
{
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (c->lst)
		cm_listener_put(c->lst);
	free(c);
}

/** cm_conn_by_qp() - the connection bound to @qp that has not raised its
 *  final event yet, or NULL. */
struct xiw_cm_conn *cm_conn_by_qp(const struct xiw_qp *qp)
{
	for (struct xiw_cm_conn *c = cm_conns; c; c = c->next)
		if (c->qp == qp && !c->final)
			return c;
	return NULL;
}

/** cm_conn_first() - the newest live connection (walk on with ->next). */
struct xiw_cm_conn *cm_conn_first(void)
{
	return cm_conns;
}

/** cm_conn_of_listener() - a live connection of @l that is not orphaned
 *  yet, or NULL. */
struct xiw_cm_conn *cm_conn_of_listener(const struct cm_listener *l)
{
	for (struct xiw_cm_conn *c = cm_conns; c; c = c->next)
		if (c->lst == l && !c->orphan)
			return c;
	return NULL;
}

static void cm_unlink(struct xiw_cm_conn *c)
{
	for (struct xiw_cm_conn **pp = &cm_conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			return;
		}
}

/**
 * cm_conn_finish() - end of the connection's life: off the list, timer off, llp closed (the
 * CM's own, or the QP's once it reported stream_closed), live ref dropped.
 */
void cm_conn_finish(struct xiw_cm_conn *c)
{
	if (c->state == CS_DONE)
		return;
	c->state = CS_DONE;
	cm_unlink(c);
	xiw_progress_timer_cancel(&c->timer);
	if (c->llp)
		xiw_llp_close(c->llp);
	c->llp = NULL;
	c->qp = NULL;
	cm_conn_put(c);
}

/* ------------------------------------------------------------ events --- */

struct cm_evq {
	struct xiw_cm_conn *conn;
	struct cm_listener *lst;	/* CONNECT_REQUEST only */
	xiw_cm_handler h;
	void *arg;
	struct xiw_cm_event ev;
	uint8_t pd[XIW_MAX_PRIV_DATA];
};

/* A CONNECT_REQUEST whose listener died before delivery is dropped. */
static bool cm_evq_stale(struct cm_evq *q)
{
	struct xiw_cm_conn *c = q->conn;

	if (q->ev.type != XIW_CM_CONNECT_REQUEST)
		return false;
	if (!q->lst->dead && c->state == CS_PENDING && !c->orphan)
		return false;
	if (c->state == CS_PENDING)
		cm_conn_finish(c);	/* the app never saw it */
	return true;
}

static void cm_deliver(void *arg)
{
	struct cm_evq *q = arg;

	if (!cm_evq_stale(q)) {
		if (q->ev.type == XIW_CM_CONNECT_REQUEST)
			q->conn->delivered = true;
		if (q->h)
			q->h(q->arg, &q->ev);
	}
	if (q->lst)
		cm_listener_put(q->lst);
	cm_conn_put(q->conn);
	free(q);
}

static void cm_evq_fill(struct cm_evq *q, struct xiw_cm_conn *c,
			enum xiw_cm_event_type type, int status)
{
	const struct xiw_mpa_params *peer = c->active ? &c->rep : &c->req;

	q->conn = c;
	q->ev.type = type;
	q->ev.conn = c;
	q->ev.status = status;
	q->ev.local = c->local;
	q->ev.peer = c->peer;
	q->ev.ird = 1;
	q->ev.ord = 1;
	if (peer->version == XIW_MPA_REV2) {
		q->ev.ird = peer->ird > 255 ? 255 : peer->ird;
		q->ev.ord = peer->ord > 255 ? 255 : peer->ord;
	}
}

/**
 * cm_emit() - queue a @type event for @c's handler (the listener's for
 * CONNECT_REQUEST). @pdata is copied (at most XIW_MAX_PRIV_DATA bytes).
 */
void cm_emit(struct xiw_cm_conn *c, enum xiw_cm_event_type type, int status,
	     const void *pdata, uint16_t plen)
{
	struct cm_evq *q = calloc(1, sizeof(*q));

	if (!q) {
		xiw_log(XIW_LOG_ERROR, "CM: out of memory, event %d lost", type);
		return;
	}
	cm_evq_fill(q, c, type, status);
	if (plen > XIW_MAX_PRIV_DATA) {
		xiw_log(XIW_LOG_WARN, "CM: peer private data truncated from %u to %u bytes",
			plen, XIW_MAX_PRIV_DATA);
		plen = XIW_MAX_PRIV_DATA;
	}
	if (plen)
		memcpy(q->pd, pdata, plen);
	q->ev.private_data = plen ? q->pd : NULL;
	q->ev.private_data_len = (uint8_t)plen;
	if (type == XIW_CM_CONNECT_REQUEST) {
		q->lst = c->lst;
		__atomic_add_fetch(&q->lst->refs, 1, __ATOMIC_RELAXED);
		q->h = q->lst->h;
		q->arg = q->lst->arg;
	} else {
		q->h = c->h;
		q->arg = c->harg;
	}
	cm_conn_get(c);
	if (xiw_progress_run(cm_deliver, q)) {
		xiw_log(XIW_LOG_ERROR, "CM: cannot queue event %d", type);
		cm_deliver(q);
	}
}

/** cm_fail() - a connection that the QP does not own failed: raise @type
 *  (unless a final event was raised already), abort the TCP stream, finish. */
void cm_fail(struct xiw_cm_conn *c, enum xiw_cm_event_type type, int err)
{
	if (c->state == CS_DONE)
		return;
	if (!c->final && c->active)
		cm_emit(c, type, err, NULL, 0);
	c->final = true;
	if (c->llp)
		xiw_llp_abort(c->llp);
	cm_conn_finish(c);
}

/**
 * cm_attached_fail() - the QP owns the stream but setup failed (RTR): raise
 * CONNECT_ERROR, reset the stream; the conn lives until stream_closed.
 */
void cm_attached_fail(struct xiw_cm_conn *c, int err)
{
	if (c->final)
		return;
	c->final = true;
	c->state = CS_CLOSING;
	xiw_progress_timer_cancel(&c->timer);
	cm_emit(c, XIW_CM_CONNECT_ERROR, err, NULL, 0);
	cm_conn_get(c);
	xiw_qp_detach(c->qp, true);
	cm_conn_put(c);
}

/** cm_timer() - (re)arm @c's setup timer: @fn(@c) after XIW_CM_TIMEOUT_MS. */
void cm_timer(struct xiw_cm_conn *c, void (*fn)(void *arg))
{
	xiw_progress_timer_arm(&c->timer, XIW_CM_TIMEOUT_MS, fn, c);
}

/* -------------------------------------------------------- frame I/O --- */

/**
 * cm_read_frame() - read the peer's MPA request (passive) or reply
 * (active) into its buffer, never past the frame's end.
 * Return: frame length when complete, 0 when more bytes are needed,
 * -EPROTO (not MPA / malformed), -ECONNRESET (EOF), or -errno.
 */
int cm_read_frame(struct xiw_cm_conn *c, bool is_reply)
{
	uint8_t *buf = is_reply ? c->rep_buf : c->req_buf;
	struct xiw_mpa_params *out = is_reply ? &c->rep : &c->req;

	for (;;) {
		size_t want = XIW_MPA_HDR_LEN;
		struct iovec iov;
		ssize_t r;

		if (c->rlen >= XIW_MPA_HDR_LEN) {
			r = xiw_mpa_parse(is_reply, buf, c->rlen, out);
			if (r)
				return (int)r;
			want += xiw_get_be16(buf + XIW_MPA_OFF_PDLEN);
			if (want > XIW_MPA_MAX_FRAME || c->rlen >= want)
				return -EPROTO;
		}
		iov.iov_base = buf + c->rlen;
		iov.iov_len = want - c->rlen;
		r = xiw_llp_recv(c->llp, &iov, 1);
		if (r == -EAGAIN)
			return 0;
		if (r <= 0)
			return r ? (int)r : -ECONNRESET;
		c->rlen += r;
		/* a plain TCP peer says something else: fail at its first byte */
		if (c->rlen < XIW_MPA_KEY_LEN &&
		    memcmp(buf, is_reply ? XIW_MPA_KEY_REP : XIW_MPA_KEY_REQ, c->rlen))
			return -EPROTO;
		if (c->rlen >= XIW_MPA_KEY_LEN && c->rlen < XIW_MPA_HDR_LEN &&
		    xiw_mpa_parse(is_reply, buf, c->rlen, out) < 0)
			return -EPROTO;
	}
}

/** cm_send_frame() - send a whole MPA frame. Return: 0, or -errno
 *  (-EAGAIN if it did not fit the empty socket buffer at once). */
int cm_send_frame(struct xiw_cm_conn *c, const uint8_t *buf, int len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	ssize_t r = xiw_llp_send(c->llp, &iov, 1, false);

	if (r == len)
		return 0;
	return r < 0 ? (int)r : -EAGAIN;
}

/**
 * cm_encode() - encode c->req (@is_reply false) or c->rep into its buffer
 * and re-parse it so the params' pdata points into the buffer.
 * Return: frame length, or -errno from xiw_mpa_encode().
 */
int cm_encode(struct xiw_cm_conn *c, bool is_reply)
{
	uint8_t *buf = is_reply ? c->rep_buf : c->req_buf;
	struct xiw_mpa_params *p = is_reply ? &c->rep : &c->req;
	int len = xiw_mpa_encode(is_reply, p, buf, XIW_MPA_MAX_FRAME);

	if (len < 0)
		return len;
	if (xiw_mpa_parse(is_reply, buf, len, p) != len)
		return -EINVAL;
	return len;
}
