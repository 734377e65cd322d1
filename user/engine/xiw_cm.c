// SPDX-License-Identifier: MIT
/*
 * Connection manager, active side and the connection-level API:
 * TCP connect, MPA request/reply (RFC 5044 §7.1, RFC 6581), RTR, the
 * ESTABLISHED / DISCONNECTED events, and the QP's upcalls (xiw_conn.h).
 * The passive side (listen, MPA request, accept/reject) is in
 * xiw_cm_listen.c. All state lives on the progress thread (xiw_cm_int.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "xiwarp/wire/mpa.h"
#include "xiw_cm.h"
#include "xiw_cm_int.h"
#include "xiw_cm_mpa.h"
#include "xiw_sockops.h"

/* ------------------------------------------------------ active side --- */

static void active_timeout(void *arg)
{
	struct xiw_cm_conn *c = arg;

	xiw_log(XIW_LOG_INFO, "CM: no MPA reply within %d ms", XIW_CM_TIMEOUT_MS);
	cm_fail(c, XIW_CM_UNREACHABLE, -ETIMEDOUT);
}

/* TCP is up: send the MPA request. */
static void active_writable(void *arg)
{
	struct xiw_cm_conn *c = arg;
	int len, err;

	if (c->state != CS_TCP_CONNECTING)
		return;
	xiw_llp_addrs(c->llp, &c->local, &c->peer);
	len = xiw_get_be16(c->req_buf + XIW_MPA_OFF_PDLEN) + XIW_MPA_HDR_LEN;
	err = cm_send_frame(c, c->req_buf, len);
	if (err) {
		xiw_log(XIW_LOG_WARN, "CM: sending the MPA request failed: %s",
			strerror(-err));
		cm_fail(c, XIW_CM_CONNECT_ERROR, err);
		return;
	}
	c->state = CS_REQ_SENT;
	c->rlen = 0;
}

/*
 * RTR nudge (active side, WRITE RTR or no RTR). RFC 5044 §7.1 lets the
 * initiator send FPDUs as soon as the MPA reply is in, RFC 6581 §4 right
 * behind its RTR, and a p2p responder sends nothing before the RTR
 * arrived, so until then we may hear nothing. siw 6.1 as responder hands
 * its socket to the QP (or to RTR reception) only after its MPA reply has
 * left (siw_accept: siw_send_mpareqrep(), then siw_qp_socket_assoc() or
 * siw_sk_assign_rtr_upcalls()); an RTR or FPDU that reaches it in that
 * window is left unread until more data arrives. Then neither side moves: siw never
 * reports ESTABLISHED, and if we give up, our close reaches an iWARP CM
 * that is still accepting (iwcm.c:969 BUG in Linux 6.1). So while the peer
 * has sent nothing, another zero-length WRITE, a no-op to a peer in RTS,
 * wakes it up: after 10, 20, 40 ... 640 ms, then we stop. Not with a
 * READ RTR: the peer's READ response shows that it read the RTR.
 */
#define RTR_NUDGE_FIRST_MS 10
#define RTR_NUDGE_LAST_MS 640

static void rtr_nudge(void *arg)
{
	struct xiw_cm_conn *c = arg;

	/* also while closing: a held FIN waits for these nudges */
	if ((c->state != CS_ESTABLISHED && c->state != CS_CLOSING) ||
	    !c->attached || !c->qp)
		return;
	if (xiw_qp_rtr_nudge(c->qp) || c->nudge_ms >= RTR_NUDGE_LAST_MS)
		return;
	c->nudge_ms *= 2;
	xiw_progress_timer_arm(&c->timer, c->nudge_ms, rtr_nudge, c);
}

static void rtr_nudge_start(struct xiw_cm_conn *c, enum xiw_rtr_type rtr)
{
	if (rtr == XIW_RTR_READ)	/* the READ response tells us */
		return;
	c->nudge_ms = RTR_NUDGE_FIRST_MS;
	xiw_qp_rtr_nudge_arm(c->qp);
	xiw_progress_timer_arm(&c->timer, c->nudge_ms, rtr_nudge, c);
}

/* Reply accepted: hand the stream to the QP, RTR, ESTABLISHED. */
static void active_attach(struct xiw_cm_conn *c)
{
	struct xiw_conn_params p;
	int err = xiw_cm_conn_params(&c->req, &c->rep, true,
				     xiw_llp_mss(c->llp), &p);

	if (!err)
		err = xiw_qp_attach(c->qp, c, c->llp, &p);
	if (err) {
		cm_fail(c, XIW_CM_CONNECT_ERROR, err);
		return;
	}
	c->attached = true;
	xiw_progress_timer_cancel(&c->timer);
	if (p.rtr != XIW_RTR_NONE) {
		err = xiw_qp_send_rtr(c->qp);
		if (err) {
			xiw_log(XIW_LOG_WARN, "CM: sending the RTR failed: %s",
				strerror(-err));
			cm_attached_fail(c, err);
			return;
		}
	}
	c->state = CS_ESTABLISHED;
	rtr_nudge_start(c, p.rtr);
	cm_emit(c, XIW_CM_ESTABLISHED, 0, c->rep.pdata, c->rep.plen);
}

static void active_reply(struct xiw_cm_conn *c)
{
	if (c->rep.reject) {
		/* siw rejects a request with M=1 (markers) by such a reply */
		if (c->req.markers && !c->rep.markers)
			xiw_log(XIW_LOG_WARN,
				"CM: the peer rejected our MPA request, which asks for markers (XIW_MPA_MARKERS=1); Linux siw and most iWARP NICs do not support markers: connect without them");
		c->final = true;
		cm_emit(c, XIW_CM_REJECTED, -ECONNREFUSED, c->rep.pdata,
			c->rep.plen);
		xiw_llp_shutdown(c->llp);
		cm_conn_finish(c);
		return;
	}
	active_attach(c);
}

/* ------------------------------------------- a peer that is not MPA --- */

/*
 * How long an active open that met a plain TCP server (its first bytes
 * are not "MPA ID Rep Frame") waits for that server to close the
 * connection after our FIN before it reports CONNECT_ERROR (-EPROTO).
 * The wait is for callers that fall back to plain TCP on the same port
 * (libxiwsock): a one-client-at-a-time server (iperf3 -s) handles our
 * probe as its client and, only when it read our close, re-opens its
 * listener; a fallback connection that reached the old listener before
 * that is reset with it. An RST instead of the FIN raced exactly so.
 */
#define XIW_CM_NOT_MPA_WAIT_MS 500

/* The reply's first bytes are no MPA key: a plain TCP peer, no iWARP one. */
static bool reply_not_mpa(const struct xiw_cm_conn *c)
{
	size_t n = c->rlen < XIW_MPA_KEY_LEN ? c->rlen : XIW_MPA_KEY_LEN;

	return n && memcmp(c->rep_buf, XIW_MPA_KEY_REP, n) != 0;
}

static void not_mpa_done(struct xiw_cm_conn *c)
{
	cm_fail(c, XIW_CM_CONNECT_ERROR, -EPROTO);
}

static void not_mpa_timeout(void *arg)
{
	struct xiw_cm_conn *c = arg;

	xiw_log(XIW_LOG_INFO, "CM: the plain TCP peer kept the connection open %d ms after our close: resetting it",
		XIW_CM_NOT_MPA_WAIT_MS);
	not_mpa_done(c);
}

/* Discard what the plain peer still sends; its EOF or reset ends the wait. */
static void not_mpa_readable(struct xiw_cm_conn *c)
{
	uint8_t junk[512];
	struct iovec iov = { .iov_base = junk, .iov_len = sizeof(junk) };
	size_t total = 0;
	ssize_t r = -EAGAIN;

	while (total < (1u << 20) && (r = xiw_llp_recv(c->llp, &iov, 1)) > 0)
		total += (size_t)r;
	if (total < (1u << 20) && r != -EAGAIN)
		not_mpa_done(c);
}

static void not_mpa_start(struct xiw_cm_conn *c)
{
	xiw_log(XIW_LOG_WARN, "CM: the peer at this port is not an iWARP (MPA) peer: it answered with other bytes; closing the connection");
	c->state = CS_NOT_MPA;
	xiw_progress_timer_arm(&c->timer, XIW_CM_NOT_MPA_WAIT_MS,
			       not_mpa_timeout, c);
	if (xiw_llp_shutdown(c->llp))
		not_mpa_done(c);
	else
		not_mpa_readable(c);
}

static void active_readable(void *arg)
{
	struct xiw_cm_conn *c = arg;
	int r;

	if (c->state == CS_NOT_MPA) {
		not_mpa_readable(c);
		return;
	}
	if (c->state != CS_REQ_SENT)
		return;
	r = cm_read_frame(c, true);
	if (!r)
		return;
	if (r == -EPROTO && reply_not_mpa(c)) {
		not_mpa_start(c);
		return;
	}
	if (r < 0) {
		xiw_log(XIW_LOG_WARN, "CM: bad MPA reply from the peer: %s",
			r == -EPROTO ? "not a valid MPA reply frame" : strerror(-r));
		cm_fail(c, XIW_CM_CONNECT_ERROR, r);
		return;
	}
	active_reply(c);
}

static bool err_is_unreachable(int err)
{
	return err == -ECONNREFUSED || err == -ETIMEDOUT ||
	       err == -EHOSTUNREACH || err == -ENETUNREACH;
}

struct connect_args {
	struct xiw_qp *qp;
	const struct sockaddr *src, *dst;
	const void *pdata;
	uint8_t plen, ird, ord;
	xiw_cm_handler h;
	void *arg;
	int ret;
};

/* ---------------------------------------- refused connect: retry --- */

/*
 * XIW_CM_REFUSED_RETRY_MS (default 1000, 0: off): how long an active open
 * keeps retrying a TCP connect the peer refused (RST: nothing listens yet)
 * before it reports REJECTED/ECONNREFUSED, as iw_cm does at once.
 * Applications that connect again right after a first connection (perftest
 * -R: a handshake connection, then the data connection) race the server's
 * next rdma_listen(); losing that race by a few ms made perftest 4.5's own
 * retry path crash. A listener that never comes costs the caller this long.
 */
static uint32_t refused_retry_ms(void)
{
	static int ms = -1;

	if (ms < 0) {
		const char *v = getenv("XIW_CM_REFUSED_RETRY_MS");

		ms = v && *v ? atoi(v) : 1000;
		if (ms < 0)
			ms = 0;
	}
	return (uint32_t)ms;
}

static int connect_tcp(struct xiw_cm_conn *c)
{
	const struct sockaddr *src = c->src.ss_family ?
				     (const struct sockaddr *)&c->src : NULL;

	return xiw_llp_connect(src, (const struct sockaddr *)&c->peer,
			       &cm_active_cb, c, &c->llp);
}

static void active_retry(void *arg);

/*
 * The peer refused: try again after 2, 4, ... 64 ms while the retry window
 * lasts. Return: true if a retry is scheduled (the caller reports nothing).
 */
static bool refused_retry(struct xiw_cm_conn *c, int err)
{
	uint32_t delay = 2u << (c->refused_tries < 5 ? c->refused_tries : 5);

	if (err != -ECONNREFUSED || c->state != CS_TCP_CONNECTING ||
	    xiw_now_ns() + (uint64_t)delay * 1000000u > c->refused_until_ns)
		return false;
	if (c->llp) {
		xiw_llp_close(c->llp);
		c->llp = NULL;
	}
	if (!c->refused_tries++)
		xiw_log(XIW_LOG_INFO, "CM: connection refused (no listener yet); "
			"retrying for up to %u ms (XIW_CM_REFUSED_RETRY_MS)",
			refused_retry_ms());
	xiw_progress_timer_arm(&c->timer, delay, active_retry, c);
	return true;
}

static void active_retry(void *arg)
{
	struct xiw_cm_conn *c = arg;
	int err;

	if (c->state != CS_TCP_CONNECTING)
		return;
	err = connect_tcp(c);
	if (!err) {
		cm_timer(c, active_timeout);
		return;
	}
	if (!refused_retry(c, err))
		cm_fail(c, err_is_unreachable(err) ? XIW_CM_UNREACHABLE :
			XIW_CM_CONNECT_ERROR, err);
}

static void active_closed(void *arg, int err)
{
	struct xiw_cm_conn *c = arg;

	if (c->state == CS_TCP_CONNECTING && refused_retry(c, err))
		return;
	if (c->state == CS_TCP_CONNECTING)
		cm_fail(c, XIW_CM_UNREACHABLE, err);
	else if (c->state == CS_REQ_SENT)
		/* as iw_cm reports it (cma_iw_handler: CONNECT_REPLY with
		 * -ECONNRESET is REJECTED): a reset before the MPA reply, e.g.
		 * a listener closed with us still in its backlog
		 * (ksock_relisten.c), is a rejection */
		cm_fail(c, err == -ECONNRESET ? XIW_CM_REJECTED :
			XIW_CM_CONNECT_ERROR, err);
	else if (c->state == CS_NOT_MPA)
		not_mpa_done(c);
}

const struct xiw_llp_cb cm_active_cb = {
	.readable = active_readable,
	.writable = active_writable,
	.closed = active_closed,
};

static int connect_start(struct xiw_cm_conn *c, struct connect_args *a)
{
	int err;

	if (a->src)
		memcpy(&c->src, a->src, xiw_llp_sa_len(a->src));
	c->refused_until_ns = xiw_now_ns() +
			      (uint64_t)refused_retry_ms() * 1000000u;
	err = connect_tcp(c);
	if (err && refused_retry(c, err))
		return 0;
	if (err && err_is_unreachable(err)) {
		cm_fail(c, XIW_CM_UNREACHABLE, err);	/* reported as an event */
		return 0;
	}
	if (err)
		return err;
	cm_timer(c, active_timeout);
	return 0;
}

static void connect_on_progress(void *arg)
{
	struct connect_args *a = arg;
	struct xiw_cm_conn *c;

	if (cm_conn_by_qp(a->qp)) {
		a->ret = -EISCONN;
		return;
	}
	c = cm_conn_new(true);
	if (!c) {
		a->ret = -ENOMEM;
		return;
	}
	c->qp = a->qp;
	c->h = a->h;
	c->harg = a->arg;
	c->state = CS_TCP_CONNECTING;
	memcpy(&c->peer, a->dst, xiw_llp_sa_len(a->dst));
	xiw_cm_mpa_request(&c->req, a->ird, a->ord, a->pdata, a->plen);
	/* encode now: the caller's private data need not outlive the call */
	a->ret = cm_encode(c, false);
	if (a->ret >= 0)
		a->ret = connect_start(c, a);
	if (a->ret) {
		c->final = true;
		cm_conn_finish(c);
	}
}

/**
 * xiw_cm_connect() - active open (see xiwarp.h). TCP connect, MPA request
 * (v2 unless XIW_MPA_VERSION=1), reply, xiw_qp_attach(), RTR in p2p mode,
 * then XIW_CM_ESTABLISHED carrying the responder's private data.
 * @pdata is copied (encoded into the MPA request) before this returns.
 * Return: 0 if started; -EINVAL (no QP / bad address), -EAFNOSUPPORT,
 * -EISCONN (QP already connecting/connected), -ENOMEM, or -errno from
 * socket()/bind(). Network failures arrive as XIW_CM_UNREACHABLE.
 */
int xiw_cm_connect(struct xiw_qp *qp, const struct sockaddr *src,
		   const struct sockaddr *dst, const void *pdata, uint8_t plen,
		   uint8_t ird, uint8_t ord, xiw_cm_handler h, void *arg)
{
	struct connect_args a = {
		.qp = qp, .src = src, .dst = dst, .pdata = pdata, .plen = plen,
		.ird = ird, .ord = ord, .h = h, .arg = arg,
	};
	int err;

	if (!qp || !dst || !xiw_llp_sa_len(dst) || (plen && !pdata))
		return -EINVAL;
	xiw_sockops_before_connect();
	err = xiw_progress_sync(connect_on_progress, &a);
	return err ? err : a.ret;
}

/* ------------------------------------------------------- disconnect --- */

static void disconnect_on_progress(void *arg)
{
	struct xiw_qp *qp = arg;
	struct xiw_cm_conn *c = cm_conn_by_qp(qp);

	if (!c)
		return;
	if (!c->attached) {
		cm_fail(c, XIW_CM_CONNECT_ERROR, -ECONNABORTED);
		return;
	}
	c->final = true;
	c->state = CS_CLOSING;
	if (!c->nudge_ms)	/* the nudge series goes on (tx_fin's FIN hold) */
		xiw_progress_timer_cancel(&c->timer);
	cm_emit(c, XIW_CM_DISCONNECTED, 0, NULL, 0);
	cm_conn_get(c);
	xiw_qp_detach(qp, false);
	cm_conn_put(c);
}

/**
 * xiw_cm_disconnect() - graceful close of @qp's connection (RFC 5040 §6.1):
 * the QP sends what is queued, then FIN (xiw_qp_detach(qp, false)), and
 * XIW_CM_DISCONNECTED is raised now, once. A connect still in progress is
 * aborted with XIW_CM_CONNECT_ERROR (-ECONNABORTED). Idempotent.
 * Call without holding QP locks (it waits for the progress thread).
 * Return: 0, or -errno if the progress thread is unavailable.
 */
int xiw_cm_disconnect(struct xiw_qp *qp)
{
	return xiw_progress_sync(disconnect_on_progress, qp);
}

static void qp_gone_on_progress(void *arg)
{
	struct xiw_cm_conn *c = cm_conn_by_qp(arg);

	if (c && !c->attached)
		cm_fail(c, XIW_CM_CONNECT_ERROR, -ECONNABORTED);
}

void xiw_cm_qp_gone(struct xiw_qp *qp)
{
	if (qp)
		xiw_progress_sync(qp_gone_on_progress, qp);
}

/* ------------------------------------------------------ QP upcalls --- */

static void rtr_on_progress(void *arg)
{
	struct xiw_cm_conn *c = arg;

	if (c->state == CS_RTR_WAIT) {
		c->state = CS_ESTABLISHED;
		xiw_progress_timer_cancel(&c->timer);
		cm_emit(c, XIW_CM_ESTABLISHED, 0, NULL, 0);
	}
	cm_conn_put(c);
}

/** xiw_cm_rtr_received() - passive p2p: the RTR arrived; raise
 *  XIW_CM_ESTABLISHED (RFC 6581 §4). Any thread. */
void xiw_cm_rtr_received(struct xiw_cm_conn *conn)
{
	cm_conn_get(conn);
	if (xiw_progress_is_self() || xiw_progress_run(rtr_on_progress, conn))
		rtr_on_progress(conn);
}

static void closed_on_progress(void *arg)
{
	struct xiw_cm_conn *c = arg;
	int err = c->closed_err;

	if (c->state != CS_DONE && !c->final) {
		c->final = true;
		if (c->state == CS_RTR_WAIT)
			cm_emit(c, XIW_CM_CONNECT_ERROR, err ? err : -ECONNRESET,
				NULL, 0);
		else
			cm_emit(c, XIW_CM_DISCONNECTED, err, NULL, 0);
	}
	cm_conn_finish(c);	/* closes the llp: the QP is done with it */
	cm_conn_put(c);
}

/**
 * xiw_cm_stream_closed() - the QP's stream ended (EOF: @err 0; RST/error:
 * -errno; TERMINATE: -EPROTO). Raises XIW_CM_DISCONNECTED unless a final
 * event was raised (CONNECT_ERROR if the RTR never came), then closes the
 * llp and forgets @conn: the QP must not use the llp or @conn afterwards.
 * Any thread; done on the progress thread.
 */
void xiw_cm_stream_closed(struct xiw_cm_conn *conn, int err)
{
	conn->closed_err = err;
	cm_conn_get(conn);
	if (xiw_progress_is_self() || xiw_progress_run(closed_on_progress, conn))
		closed_on_progress(conn);
}
