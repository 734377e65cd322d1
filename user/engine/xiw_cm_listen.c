// SPDX-License-Identifier: MIT
/*
 * Connection manager, passive side: listen, read the MPA request (with a
 * timeout), raise XIW_CM_CONNECT_REQUEST, then accept (MPA reply, QP
 * attach, RTR wait in p2p mode) or reject (reply with the R bit).
 * RFC 5044 §7.1, RFC 6581 §5. Progress thread only (xiw_cm_int.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "xiwarp/wire/mpa.h"
#include "xiw_sockops.h"
#include "xiw_cm_int.h"
#include "xiw_cm_mpa.h"
#include "ksock.h"	/* xiw_ksock_adopt(): the sockets preload hands over kernel sockets */

/** cm_listener_put() - drop a listener reference; the last frees it. */
void cm_listener_put(struct cm_listener *l)
{
	if (__atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL))
		return;
	free(l);
}

/* ------------------------------------------------- MPA request read --- */

static void passive_drop(struct xiw_cm_conn *c, const char *why, int err)
{
	struct cm_listener *l = c->lst;

	xiw_log(XIW_LOG_INFO, "CM: dropping incoming connection: %s (%s)", why,
		err ? strerror(-err) : "no error");
	__atomic_add_fetch(&l->refs, 1, __ATOMIC_RELAXED);
	cm_fail(c, XIW_CM_CONNECT_ERROR, err);
	cm_order_release(l);	/* requests it held back */
	cm_listener_put(l);
}

static void passive_timeout(void *arg)
{
	struct xiw_cm_conn *c = arg;

	if (c->state == CS_REQ_WAIT)
		passive_drop(c, "no MPA request within the timeout", -ETIMEDOUT);
	else if (c->state == CS_RTR_WAIT)
		cm_attached_fail(c, -ETIMEDOUT);
}

static void passive_request(struct xiw_cm_conn *c)
{
	c->state = CS_PENDING;
	xiw_progress_timer_cancel(&c->timer);
	/* the initiator sends nothing more until our reply: stop reading */
	xiw_llp_pause_read(c->llp, true);
	c->req_held = true;	/* raised in accept order */
	c->held_ns = xiw_now_ns();
	cm_order_release(c->lst);
}

static void passive_readable(void *arg)
{
	struct xiw_cm_conn *c = arg;
	int r;

	if (c->state != CS_REQ_WAIT)
		return;
	r = cm_read_frame(c, false);
	if (!r)
		return;
	if (r < 0) {
		passive_drop(c, r == -EPROTO ? "not a valid MPA request frame" :
			     "connection lost before the MPA request", r);
		return;
	}
	passive_request(c);
}

static void passive_closed(void *arg, int err)
{
	struct xiw_cm_conn *c = arg;

	if (c->state == CS_REQ_WAIT)
		passive_drop(c, "connection failed", err);
	else if (c->state == CS_PENDING)
		c->broken = err;
}

const struct xiw_llp_cb cm_passive_cb = {
	.readable = passive_readable,
	.closed = passive_closed,
};

static void passive_new(void *arg, struct xiw_llp *l)
{
	struct cm_listener *lst = arg;
	struct xiw_cm_conn *c = cm_conn_new(false);

	if (!c) {
		xiw_log(XIW_LOG_WARN, "CM: out of memory, refusing a connection");
		xiw_llp_close(l);
		return;
	}
	c->llp = l;
	c->lst = lst;
	__atomic_add_fetch(&lst->refs, 1, __ATOMIC_RELAXED);
	cm_order_accepted(c);
	c->state = CS_REQ_WAIT;
	xiw_llp_addrs(l, &c->local, &c->peer);
	cm_timer(c, passive_timeout);
	xiw_llp_set_owner(l, &cm_passive_cb, c);
}

/* ----------------------------------------------------------- listen --- */

/**
 * xiw_cm_listen() - listen for MPA connections on @addr (see xiwarp.h).
 * SO_REUSEADDR is set, so the port can be listened on again right after
 * xiw_cm_listener_destroy(). @h gets XIW_CM_CONNECT_REQUEST events.
 * Return: 0, -EINVAL, -ENOMEM, or -errno from socket/bind/listen
 * (-EADDRINUSE, -EADDRNOTAVAIL, -EAFNOSUPPORT, ...).
 */
int xiw_cm_listen(const struct sockaddr *addr, int backlog, xiw_cm_handler h,
		  void *arg, struct xiw_cm_listener **out,
		  struct sockaddr_storage *bound)
{
	struct cm_listener *l;
	int err;

	if (!addr || !out || !h)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->h = h;
	l->arg = arg;
	l->refs = 1;
	xiw_cm_knobs();		/* report bad knobs at the first listen */
	xiw_sockops_before_connect();	/* accepted streams get ACK callbacks */
	err = xiw_llp_listen(addr, backlog, passive_new, l, &l->ks, bound);
	if (err) {
		free(l);
		return err;
	}
	*out = (struct xiw_cm_listener *)l;
	return 0;
}

struct adopt_args {
	int fd;
	struct cm_listener *l;
	int ret;
};

static void adopt_on_progress(void *arg)
{
	struct adopt_args *a = arg;

	a->ret = xiw_ksock_adopt(a->fd, passive_new, a->l);
}

/**
 * xiw_cm_adopt() - an accepted TCP connection @fd whose peer sends an
 * MPA request (the sockets preload recognised it) is handled as if a
 * listener had accepted it: the request is read and @h gets
 * XIW_CM_CONNECT_REQUEST (or CONNECT_ERROR); accept/reject as usual.
 * *@out is a listener without a socket: destroy it with
 * xiw_cm_listener_destroy() once the request is accepted or rejected.
 * Return: 0 (@fd belongs to the engine), or -errno (@fd untouched).
 */
int xiw_cm_adopt(int fd, xiw_cm_handler h, void *arg,
		 struct xiw_cm_listener **out)
{
	struct adopt_args a = { .fd = fd };
	struct cm_listener *l;
	int err;

	if (fd < 0 || !out || !h)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->h = h;
	l->arg = arg;
	l->refs = 1;
	a.l = l;
	xiw_cm_knobs();
	err = xiw_progress_sync(adopt_on_progress, &a);
	if (!err)
		err = a.ret;
	if (err) {
		free(l);
		return err;
	}
	*out = (struct xiw_cm_listener *)l;
	return 0;
}

/* Reject one connection still waiting for the app: best effort. */
static void listener_reject_pending(struct xiw_cm_conn *c)
{
	int len;

	xiw_cm_mpa_reply(&c->req, 0, 0, NULL, 0, true, &c->rep);
	len = cm_encode(c, true);
	if (len > 0 && !c->broken)
		cm_send_frame(c, c->rep_buf, len);
	xiw_llp_shutdown(c->llp);
	xiw_llp_close(c->llp);
	c->llp = NULL;
}

static void listener_destroy_on_progress(void *arg)
{
	struct cm_listener *l = arg;
	struct xiw_cm_conn *c;

	l->dead = true;
	xiw_progress_timer_cancel(&l->order_timer);
	xiw_llp_listener_close(l->ks);
	/* restart after each finish: it unlinks from the list */
	do {
		c = cm_conn_of_listener(l);
		if (!c)
			break;
		if (c->state == CS_PENDING && c->delivered) {
			listener_reject_pending(c);
			c->orphan = true;	/* the app still holds it */
		} else {
			c->final = true;
			if (c->state == CS_PENDING)
				listener_reject_pending(c);
			cm_conn_finish(c);
		}
	} while (c);
}

/**
 * xiw_cm_listener_destroy() - stop listening. Connections still reading
 * their MPA request are dropped; CONNECT_REQUESTs not yet accepted are
 * rejected (the app must still xiw_cm_conn_release() the ones it saw).
 * No handler for @l runs after this returns. Call without QP locks held.
 */
void xiw_cm_listener_destroy(struct xiw_cm_listener *l)
{
	struct cm_listener *cl = (struct cm_listener *)l;

	if (!cl)
		return;
	if (xiw_progress_sync(listener_destroy_on_progress, cl))
		return;		/* no progress thread: nothing ever ran */
	cm_listener_put(cl);
}

/* ----------------------------------------------- accept and reject --- */

struct accept_args {
	struct xiw_cm_conn *c;
	struct xiw_qp *qp;
	const void *pdata;
	uint8_t plen, ird, ord;
	xiw_cm_handler h;
	void *arg;
	int ret;
};

static int accept_check(const struct accept_args *a)
{
	const struct xiw_cm_conn *c = a->c;

	if (c->state != CS_PENDING)
		return -EINVAL;
	if (c->orphan)
		return -ECONNABORTED;
	if (c->broken)
		return c->broken;
	return cm_conn_by_qp(a->qp) ? -EISCONN : 0;
}

/* Hand the stream to the QP; undo on failure. */
static int accept_attach(struct xiw_cm_conn *c, struct accept_args *a,
			 const struct xiw_conn_params *p)
{
	int err;

	c->qp = a->qp;
	c->h = a->h;
	c->harg = a->arg;
	/* no upcall runs before we return to the loop: safe to resume */
	xiw_llp_pause_read(c->llp, false);
	err = xiw_qp_attach(a->qp, c, c->llp, p);
	if (err) {
		xiw_llp_pause_read(c->llp, true);
		c->qp = NULL;
		return err;
	}
	c->attached = true;
	cm_listener_put(c->lst);
	c->lst = NULL;
	return 0;
}

static int accept_reply(struct xiw_cm_conn *c, struct accept_args *a)
{
	struct xiw_conn_params p;
	int len, err;

	xiw_cm_mpa_reply(&c->req, a->ird, a->ord, a->pdata, a->plen, false,
			 &c->rep);
	len = cm_encode(c, true);
	if (len < 0)
		return len;
	err = xiw_cm_conn_params(&c->req, &c->rep, false, xiw_llp_mss(c->llp), &p);
	if (!err)
		err = accept_attach(c, a, &p);
	if (err)
		return err;
	err = cm_send_frame(c, c->rep_buf, len);
	if (err) {
		xiw_log(XIW_LOG_WARN, "CM: sending the MPA reply failed: %s",
			strerror(-err));
		c->final = true;
		c->state = CS_CLOSING;
		xiw_qp_detach(c->qp, true);	/* stream_closed ends it */
		return err;
	}
	if (p.rtr != XIW_RTR_NONE) {
		c->state = CS_RTR_WAIT;
		cm_timer(c, passive_timeout);
	} else {
		c->state = CS_ESTABLISHED;
		cm_emit(c, XIW_CM_ESTABLISHED, 0, NULL, 0);
	}
	return 0;
}

static void accept_on_progress(void *arg)
{
	struct accept_args *a = arg;

	a->ret = accept_check(a);
	if (!a->ret)
		a->ret = accept_reply(a->c, a);
}

/**
 * xiw_cm_accept() - accept a CONNECT_REQUEST (see xiwarp.h): negotiate
 * (xiw_cm_mpa_reply), attach @qp, send the MPA reply; ESTABLISHED follows
 * at once, or when the RTR arrives in p2p mode (RFC 6581 §4).
 * Return: 0; -EINVAL (not pending, bad args, QP refused the attach),
 * -EISCONN (QP already connected), -ECONNABORTED (listener destroyed),
 * -ECONNRESET (peer went away), or -errno sending the reply.
 */
int xiw_cm_accept(struct xiw_cm_conn *conn, struct xiw_qp *qp,
		  const void *pdata, uint8_t plen, uint8_t ird, uint8_t ord,
		  xiw_cm_handler h, void *arg)
{
	struct accept_args a = {
		.c = conn, .qp = qp, .pdata = pdata, .plen = plen,
		.ird = ird, .ord = ord, .h = h, .arg = arg,
	};
	int err;

	if (!conn || !qp || (plen && !pdata))
		return -EINVAL;
	err = xiw_progress_sync(accept_on_progress, &a);
	return err ? err : a.ret;
}

struct reject_args {
	struct xiw_cm_conn *c;
	const void *pdata;
	uint8_t plen;
	int ret;
};

static void reject_on_progress(void *arg)
{
	struct reject_args *a = arg;
	struct xiw_cm_conn *c = a->c;
	int len;

	if (c->state != CS_PENDING) {
		a->ret = -EINVAL;
		return;
	}
	c->final = true;
	if (!c->orphan) {
		xiw_cm_mpa_reply(&c->req, 0, 0, a->pdata, a->plen, true, &c->rep);
		len = cm_encode(c, true);
		a->ret = len < 0 ? len : c->broken;
		if (!a->ret)
			a->ret = cm_send_frame(c, c->rep_buf, len);
		xiw_llp_shutdown(c->llp);
	}
	cm_conn_finish(c);
}

/**
 * xiw_cm_reject() - reject a CONNECT_REQUEST: MPA reply with the R bit and
 * @pdata, then FIN. @conn is gone afterwards, whatever the result.
 * Return: 0, -EINVAL (not pending), or -errno if the reply could not be
 * sent (the connection is closed anyway).
 */
int xiw_cm_reject(struct xiw_cm_conn *conn, const void *pdata, uint8_t plen)
{
	struct reject_args a = { .c = conn, .pdata = pdata, .plen = plen };
	int err;

	if (!conn || (plen && !pdata))
		return -EINVAL;
	err = xiw_progress_sync(reject_on_progress, &a);
	return err ? err : a.ret;
}

static void release_on_progress(void *arg)
{
	struct xiw_cm_conn *c = arg;

	if (c->state != CS_PENDING)
		return;
	c->final = true;
	if (c->llp)
		xiw_llp_abort(c->llp);
	cm_conn_finish(c);
}

/**
 * xiw_cm_conn_release() - drop a CONNECT_REQUEST the app neither accepted
 * nor rejected (the TCP stream is reset). No-op for other connections.
 */
void xiw_cm_conn_release(struct xiw_cm_conn *conn)
{
	if (conn)
		xiw_progress_sync(release_on_progress, conn);
}
