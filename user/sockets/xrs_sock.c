// SPDX-License-Identifier: MIT
/*
 * rsockets: socket life cycle - rsocket, rbind, rlisten, raccept,
 * rconnect, rshutdown, rclose - on the rdma_cm API, with rdma-core 44's
 * states and connection handshake (rs_conn_data private data both ways).
 *
 * Only SOCK_STREAM over AF_INET/AF_INET6: iWARP has no UD QPs, so datagram
 * rsockets fail with ENOTSUP (Debian's librspreload then falls back to a
 * kernel socket, as it does for any rsocket() failure).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>
#include "verbs/rdmacm_int.h"
#include "xrs_int.h"

/** xrs_err() - the rsocket convention: -1 with errno. */
int xrs_err(int err)
{
	errno = err;
	return -1;
}

/* ------------------------------------------------------------- knobs --- */

static uint32_t xrs_env_u32(const char *name, uint32_t dflt, uint32_t max)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return dflt;
	if (!strcmp(v, "inf") || !strcmp(v, "infinity"))
		return UINT32_MAX;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end || x > max) {
		xiw_log(XIW_LOG_WARN, XRS_PFX "%s=%s is not a number <= %u; using %u",
			name, v, max, dflt);
		return dflt;
	}
	return (uint32_t)x;
}

static struct xrs_knobs xrs_kn;
static pthread_once_t xrs_kn_once = PTHREAD_ONCE_INIT;

static void xrs_knobs_read(void)
{
	xrs_kn.spin_us = xrs_env_u32("XIW_RS_SPIN_US", 20, 1000000);
	xrs_kn.zcopy = (int)xrs_env_u32("XIW_RS_ZCOPY", 1, 1);
	xrs_kn.src_thresh = xrs_env_u32("XIW_RS_SRC_THRESH", 0, UINT32_MAX);
	xrs_kn.sink_thresh = xrs_env_u32("XIW_RS_SINK_THRESH", 0, UINT32_MAX);
	xrs_kn.adapt = xrs_env_u32("XIW_RS_ADAPT", 1, 1);
	xrs_kn.zc_cost = xrs_env_u32("XIW_RS_ZC_COST", 1, 1);
	xrs_kn.linger_ms = xrs_env_u32("XIW_RS_LINGER_MS", 1000, 600000);
	xrs_kn.wmem = xrs_env_u32("XIW_RS_WMEM", XRS_DEF_WMEM, 1u << 30);
	xrs_kn.rmem = xrs_env_u32("XIW_RS_RMEM", XRS_DEF_MEM, 1u << 30);
	xrs_kn.direct = (int)xrs_env_u32("XIW_RS_DIRECT", 1, 2);
	xrs_kn.max_xfer = xrs_env_u32("XIW_RS_MAX_XFER", XRS_DEF_XFER, XRS_MAX_TRANSFER);
	if (xrs_kn.max_xfer < XRS_OLAP_START_SIZE)
		xrs_kn.max_xfer = XRS_OLAP_START_SIZE;
	if (xrs_kn.wmem < XRS_SNDLOWAT * 2)
		xrs_kn.wmem = XRS_SNDLOWAT * 2;
	if (xrs_kn.rmem < XRS_SNDLOWAT * 2)
		xrs_kn.rmem = XRS_SNDLOWAT * 2;
}

/** xrs_knobs() - the XIW_RS_* environment knobs, read once. */
const struct xrs_knobs *xrs_knobs(void)
{
	pthread_once(&xrs_kn_once, xrs_knobs_read);
	return &xrs_kn;
}

/* ------------------------------------------------------- allocation --- */

/** xrs_alloc() - a new socket; sizes from @inherit (a listener) or defaults. */
struct xrs *xrs_alloc(const struct xrs *inherit)
{
	struct xrs *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->index = rs->bfd = -1;
	if (inherit) {
		rs->sbuf_size = inherit->sbuf_size;
		rs->rbuf_size = inherit->rbuf_size;
		rs->sq_inline = inherit->sq_inline;
		rs->sq_size = inherit->sq_size;
		rs->rq_size = inherit->rq_size;
		rs->target_iomap_size = inherit->target_iomap_size;
		rs->pollable = inherit->pollable;
	} else {
		rs->sbuf_size = xrs_knobs()->wmem;
		rs->rbuf_size = xrs_knobs()->rmem;
		rs->sq_inline = XRS_DEF_INLINE;
		rs->sq_size = XRS_DEF_SQSIZE;
		rs->rq_size = XRS_DEF_RQSIZE;
	}
	rs->ctrl_max_seqno = XRS_QP_CTRL_SIZE;
	pthread_mutex_init(&rs->slock, NULL);
	pthread_mutex_init(&rs->rlock, NULL);
	pthread_mutex_init(&rs->cq_lock, NULL);
	pthread_mutex_init(&rs->wait_lock, NULL);
	pthread_mutex_init(&rs->map_lock, NULL);
	return rs;
}

/*
 * The socket's fd: one end of a socketpair, the other for events. The
 * preload may bring its own pair (@afd/@bfd >= 0; both non-blocking).
 */
static int xrs_open_fds(struct xrs *rs, int afd, int bfd)
{
	int sv[2] = { afd, bfd };

	if (afd < 0 &&
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		return -1;
	rs->index = sv[0];
	rs->bfd = sv[1];
	if (xrs_table_set(rs->index, rs)) {
		xrs_sys_close(sv[0]);
		xrs_sys_close(sv[1]);
		rs->index = rs->bfd = -1;
		return xrs_err(EMFILE);
	}
	return 0;
}

/** xrs_free() - release everything of @rs (not connected any more). */
void xrs_free(struct xrs *rs)
{
	xrs_free_ep(rs);
	while (rs->iomap_list) {
		struct xrs_iomap_mr *m = rs->iomap_list;

		rs->iomap_list = m->next;
		if (m->mr)
			ibv_dereg_mr(m->mr);
		free(m);
	}
	free(rs->remote_iomappings);
	if (rs->cm_id)
		rdma_destroy_id(rs->cm_id);
	if (rs->index >= 0) {
		xrs_table_clear(rs->index, rs);
		xrs_sys_close(rs->index);
	}
	if (rs->bfd >= 0)
		xrs_sys_close(rs->bfd);
	pthread_mutex_destroy(&rs->slock);
	pthread_mutex_destroy(&rs->rlock);
	pthread_mutex_destroy(&rs->cq_lock);
	pthread_mutex_destroy(&rs->wait_lock);
	pthread_mutex_destroy(&rs->map_lock);
	free(rs);
}

/* -------------------------------------------------------- rsocket() --- */

int rsocket(int domain, int type, int protocol)
{
	struct xrs *rs;

	/* exact type: a kernel-only flag (SOCK_NONBLOCK...) means "not for us" */
	if ((domain != AF_INET && domain != AF_INET6) || type != SOCK_STREAM ||
	    (protocol && protocol != IPPROTO_TCP))
		return xrs_err(ENOTSUP);
	rs = xrs_alloc(NULL);
	if (!rs)
		return xrs_err(ENOMEM);
	if (rdma_create_id(NULL, &rs->cm_id, rs, RDMA_PS_TCP))
		goto err;
	rs->cm_id->route.addr.src_addr.sa_family = (sa_family_t)domain;
	if (xrs_open_fds(rs, -1, -1))
		goto err;
	return rs->index;
err:
	{
		int e = errno;

		xrs_free(rs);
		return xrs_err(e);
	}
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct xrs *rs = xrs_lookup(socket);

	(void)addrlen;
	if (!rs)
		return xrs_err(EBADF);
	if (rdma_bind_addr(rs->cm_id, (struct sockaddr *)addr))
		return -1;
	rs->state = xrs_bound;
	return 0;
}

int rlisten(int socket, int backlog)
{
	struct xrs *rs = xrs_lookup(socket);

	if (!rs)
		return xrs_err(EBADF);
	if (rs->state == xrs_listening)
		return 0;
	if (rdma_listen(rs->cm_id, backlog))
		return -1;
	rs->state = xrs_listening;
	return 0;
}

/* --------------------------------------------------------- accept --- */

/* IRD/ORD: rdma-core's values; more when zero copy may issue RDMA READs. */
static void xrs_conn_depths(struct rdma_conn_param *p)
{
	if (xrs_zc_knob_on()) {
		if (p->initiator_depth < 4)
			p->initiator_depth = 4;
		if (p->responder_resources < 4)
			p->responder_resources = 4;
	}
}

static int xrs_accept_new(struct xrs *rs, struct xrs *nrs)
{
	struct rdma_cm_event *ev = nrs->cm_id->event;
	struct rdma_conn_param param;
	struct xrs_conn_data cresp;

	if (!ev || ev->param.conn.private_data_len < XRS_CONN_DATA_LEN ||
	    ((const uint8_t *)ev->param.conn.private_data)[0] != XRS_CONN_VERSION)
		return xrs_err(ENOTSUP);
	if (rs->fd_flags & O_NONBLOCK)
		fcntl(nrs->cm_id->channel->fd, F_SETFL, O_NONBLOCK);
	if (xrs_create_ep(nrs))
		return -1;
	if (xrs_save_conn(nrs, ev->param.conn.private_data,
			  ev->param.conn.private_data_len))
		return -1;
	param = ev->param.conn;
	xrs_format_conn(nrs, &cresp);
	param.private_data = &cresp;
	param.private_data_len = sizeof(cresp);
	xrs_conn_depths(&param);
	if (!rdma_accept(nrs->cm_id, &param))
		nrs->state = xrs_connect_rdwr;
	else if (errno == EAGAIN || errno == EWOULDBLOCK)
		nrs->state = xrs_accepting;
	else
		return -1;
	return 0;
}

/**
 * xrs_accept_id() - finish a passive connection whose request sits on
 * the synchronous listener id @lid (rlisten, or an adopted TCP stream).
 * @afd, @bfd: the socketpair to use, or -1 for a new one.
 * Return: the new socket's fd, or -1 with errno (a given pair is closed).
 */
int xrs_accept_id(struct xrs *rs, struct rdma_cm_id *lid, int afd, int bfd)
{
	struct xrs *nrs = xrs_alloc(rs);
	int e;

	if (!nrs)
		return xrs_err(ENOMEM);
	if (rdma_get_request(lid, &nrs->cm_id))
		goto err;
	nrs->cm_id->context = nrs;
	nrs->passive = true;
	if (xrs_open_fds(nrs, afd, bfd))
		goto err;
	afd = bfd = -1;		/* nrs owns them now */
	if (xrs_accept_new(rs, nrs))
		goto err;
	return nrs->index;
err:
	e = errno;
	xrs_free(nrs);
	if (afd >= 0) {
		xrs_sys_close(afd);
		xrs_sys_close(bfd);
	}
	return xrs_err(e);
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct xrs *rs = xrs_lookup(socket);
	int fd;

	if (!rs)
		return xrs_err(EBADF);
	if (rs->state != xrs_listening)
		return xrs_err(EINVAL);
	fd = xrs_accept_id(rs, rs->cm_id, -1, -1);
	if (fd >= 0 && addr && addrlen)
		rgetpeername(fd, addr, addrlen);
	return fd;
}

/* -------------------------------------------------------- connect --- */

/* Wait for the synchronous id's next event (rdma-core's ucma_complete). */
static int xrs_cm_complete(struct xrs *rs)
{
	return xcm_sync_complete(xcm_id(rs->cm_id));
}

static int xrs_start_connect(struct xrs *rs)
{
	struct rdma_conn_param param;
	struct xrs_conn_data creq;

	if (xrs_create_ep(rs))
		return -1;
	memset(&param, 0, sizeof(param));
	xrs_format_conn(rs, &creq);
	param.private_data = &creq;
	param.private_data_len = sizeof(creq);
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	/* rdma-core: "iWarp issues RDMA read during connection" */
	if (rs->msg_send)
		param.initiator_depth = 1;
	xrs_conn_depths(&param);
	rs->retries = 0;
	return rdma_connect(rs->cm_id, &param);
}

static int xrs_connected_now(struct xrs *rs)
{
	struct rdma_cm_event *ev = rs->cm_id->event;

	if (!ev || xrs_save_conn(rs, ev->param.conn.private_data,
				 ev->param.conn.private_data_len))
		return xrs_err(errno ? errno : ENOTSUP);
	rs->state = xrs_connect_rdwr;
	return 0;
}

static int xrs_resolve_route(struct xrs *rs)
{
	int to = 1000 << rs->retries++;

	if (rdma_resolve_route(rs->cm_id, to)) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			rs->state = xrs_resolving_route;
		return -1;
	}
	if (xrs_start_connect(rs)) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			rs->state = xrs_connecting;
		return -1;
	}
	return xrs_connected_now(rs);
}

static int xrs_resolve_addr(struct xrs *rs)
{
	int to = 1000 << rs->retries++;

	if (rdma_resolve_addr(rs->cm_id, NULL, &rs->cm_id->route.addr.dst_addr, to)) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			rs->state = xrs_resolving_addr;
		return -1;
	}
	rs->retries = 0;
	return xrs_resolve_route(rs);
}

/* One step of the connect state machine (blocking unless O_NONBLOCK). */
static int xrs_connect_step(struct xrs *rs)
{
	switch (rs->state) {
	case xrs_init:
	case xrs_bound:
		return xrs_resolve_addr(rs);
	case xrs_resolving_addr:
		if (xrs_cm_complete(rs)) {
			if (errno == ETIMEDOUT && rs->retries <= XRS_CONN_RETRIES)
				return xrs_resolve_addr(rs);
			return -1;
		}
		rs->retries = 0;
		return xrs_resolve_route(rs);
	case xrs_resolving_route:
		if (xrs_cm_complete(rs)) {
			if (errno == ETIMEDOUT && rs->retries <= XRS_CONN_RETRIES)
				return xrs_resolve_route(rs);
			return -1;
		}
		if (xrs_start_connect(rs)) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				rs->state = xrs_connecting;
			return -1;
		}
		return xrs_connected_now(rs);
	case xrs_connecting:
		if (xrs_cm_complete(rs))
			return -1;
		return xrs_connected_now(rs);
	case xrs_accepting:
		if (!(rs->fd_flags & O_NONBLOCK))
			fcntl(rs->cm_id->channel->fd, F_SETFL, 0);
		if (xrs_cm_complete(rs))
			return -1;
		rs->state = xrs_connect_rdwr;
		return 0;
	default:
		return xrs_err(EINVAL);
	}
}

/**
 * xrs_do_connect() - drive a connect (or a non-blocking accept) on.
 * Return: 0 connected; -1 with errno EINPROGRESS (non-blocking, not yet)
 * or the failure (the socket is then in xrs_connect_error, rs->err set).
 */
int xrs_do_connect(struct xrs *rs)
{
	int ret = xrs_connect_step(rs);

	if (ret) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			errno = EINPROGRESS;
		} else {
			rs->state = xrs_connect_error;
			rs->err = errno;
		}
	}
	return ret;
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct xrs *rs = xrs_lookup(socket);

	if (!rs)
		return xrs_err(EBADF);
	if (!addr || addrlen > sizeof(rs->cm_id->route.addr.dst_storage))
		return xrs_err(EINVAL);
	if (rs->state & xrs_connected)
		return xrs_err(EISCONN);
	if (!(rs->state & xrs_opening) && rs->state != xrs_init &&
	    rs->state != xrs_bound)
		return xrs_err(rs->state == xrs_listening ? EINVAL : EISCONN);
	if (!(rs->state & xrs_opening))
		memcpy(&rs->cm_id->route.addr.dst_addr, addr, addrlen);
	return xrs_do_connect(rs);
}

/* ------------------------------------------------------- shutdown --- */

/* Close the connection's stream without waiting for the peer. */
static void xrs_cm_disconnect(struct xrs *rs)
{
	int fd = rs->cm_id->channel->fd;
	int fl = fcntl(fd, F_GETFL);

	/* a synchronous id would wait for its DISCONNECTED event */
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	rdma_disconnect(rs->cm_id);
	fcntl(fd, F_SETFL, fl);
}

/* Our own DISCONNECT's completion makes us "disconnected": not enough. */
static bool xrs_peer_closed(struct xrs *rs)
{
	return rs->peer_closed || (rs->state & xrs_error);
}

/* Post control message @ctrl (a ctrl slot is free); note our DISCONNECT. */
static int xrs_post_ctrl(struct xrs *rs, uint32_t ctrl)
{
	xrs_cnt_add(&rs->ctrl_seqno, 1);
	rs->disc_sent |= ctrl == XRS_CTRL_DISCONNECT;
	return xrs_post_msg(rs, xrs_msg_make(XRS_OP_CTRL, ctrl));
}

/*
 * rdma-core rshutdown: tell the peer (CTRL SHUTDOWN for SHUT_WR while we
 * still read, DISCONNECT otherwise) and wait until our sends are done.
 * Once disconnected, @flush moves the QP to ERROR (rdma_disconnect): its
 * flushed receives wake pollers of the socket, and nothing more is read.
 */
static int xrs_shutdown(struct xrs *rs, int how, bool flush)
{
	int ctrl, ret = 0;

	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return xrs_err(EINVAL);
	if (!(rs->state & xrs_connected)) {
		if (rs->state & (xrs_disconnected | xrs_error))
			goto out;
		return xrs_err(ENOTCONN);
	}
	if (how == SHUT_RDWR) {
		ctrl = XRS_CTRL_DISCONNECT;
		rs->state &= ~(xrs_readable | xrs_writable);
	} else if (how == SHUT_WR) {
		rs->state &= ~xrs_writable;
		ctrl = (rs->state & xrs_readable) ? XRS_CTRL_SHUTDOWN :
						    XRS_CTRL_DISCONNECT;
	} else {
		rs->state &= ~xrs_readable;
		if (rs->state & xrs_writable)
			goto out;
		ctrl = XRS_CTRL_DISCONNECT;
	}
	xrs_zc_shutdown(rs);
	if (!xrs_ctrl_avail(rs)) {
		ret = xrs_process_cq(rs, false, xrs_ctrl_avail_or_closed);
		if (ret)
			goto out;
	}
	if ((rs->state & xrs_connected) && xrs_ctrl_avail(rs))
		ret = xrs_post_ctrl(rs, ctrl);
	if (rs->state & xrs_connected)
		xrs_process_cq(rs, false, xrs_conn_all_sends_done);
out:
	if (flush && (rs->state & xrs_disconnected) && rs->cm_id && rs->cm_id->qp) {
		/* wake a poller: the flush completions are its event */
		if (rs->cq)
			ibv_req_notify_cq(rs->cq, 0);
		xrs_cm_disconnect(rs);
	}
	if (rs->pollable) {
		int e = errno;

		xrs_sync_token(rs);
		errno = e;
	}
	return ret;
}

int rshutdown(int socket, int how)
{
	struct xrs *rs = xrs_lookup(socket);

	if (!rs)
		return xrs_err(EBADF);
	return xrs_shutdown(rs, how, true);
}

/*
 * Before the QP goes: give the peer a moment to take what we sent. Its
 * own DISCONNECT (or the end of the stream) says it has read everything
 * up to ours. Bounded by XIW_RS_LINGER_MS (SO_LINGER if set).
 */
static void xrs_linger(struct xrs *rs)
{
	uint32_t ms = xrs_knobs()->linger_ms;

	if (rs->linger_on)
		ms = (uint32_t)rs->linger_s * 1000u;
	if (!ms || !rs->cq || !(rs->state & (xrs_connected | xrs_disconnected)))
		return;
	xrs_get_comp_timeout(rs, false, (int)ms, xrs_peer_closed);
}

static uint64_t close_acks;

uint64_t xrs_p_close_acks(void)
{
	return __atomic_load_n(&close_acks, __ATOMIC_RELAXED);
}

static bool xrs_disc_done(struct xrs *rs)
{
	return rs->disc_done || (rs->state & xrs_error);
}

/*
 * The peer closed first (its DISCONNECT came, we never sent ours): answer
 * with our DISCONNECT before our QP goes, as TCP answers a FIN. The
 * peer's close lingers for it; without it the peer waited for our
 * stream's end, which our FIN brings only after XIW_CLOSE_QUIET_MS
 * (forked children echoing 1 MB: ~50 ms more per connection).
 */
static void xrs_close_ack(struct xrs *rs)
{
	if (!rs->peer_closed || rs->disc_sent || (rs->state & xrs_error) ||
	    !(rs->state & xrs_disconnected) || !rs->cq || !rs->cm_id ||
	    !rs->cm_id->qp || !xrs_ctrl_avail(rs))
		return;
	if (xrs_post_ctrl(rs, XRS_CTRL_DISCONNECT))
		return;
	__atomic_fetch_add(&close_acks, 1, __ATOMIC_RELAXED);
	/* sent before the disconnect below flushes it */
	xrs_get_comp_timeout(rs, false, (int)xrs_knobs()->linger_ms, xrs_disc_done);
}

/* XIW_RS_STATS=1: what the zero-copy extension did, at close. */
static void xrs_print_stats(struct xrs *rs)
{
	const struct xrs_p_stats *s = &rs->zc.st;
	static int on = -1;

	if (on < 0)
		on = getenv("XIW_RS_STATS") && atoi(getenv("XIW_RS_STATS")) > 0;
	if (!on || !rs->cq)
		return;
	fprintf(stderr, "xiwarp rsocket stats: fd %d zc %d thresh src %u sink %u | "
		"tx: srcavail %llu rdcompl %llu sendsm %llu sinkavail %llu used %llu stale %llu | "
		"rx: srcavail %llu sinkavail %llu wrcompl %llu wasted %llu stash %llu | "
		"bytes zc_out %llu zc_in %llu bcopy %llu stash %llu direct %llu (waits %llu)\n",
		rs->index, rs->zc.on, rs->zc.pol.src, rs->zc.pol.sink,
		(unsigned long long)s->srcavail_tx, (unsigned long long)s->rdcompl_rx,
		(unsigned long long)s->sendsm_rx, (unsigned long long)s->sinkavail_rx,
		(unsigned long long)s->wrcompl_tx, (unsigned long long)s->sink_stale,
		(unsigned long long)s->srcavail_rx, (unsigned long long)s->sinkavail_tx,
		(unsigned long long)s->wrcompl_rx, (unsigned long long)s->sink_wasted,
		(unsigned long long)s->stash, (unsigned long long)s->bytes_zc_out,
		(unsigned long long)s->bytes_zc_in, (unsigned long long)s->bytes_bcopy,
		(unsigned long long)s->bytes_stash, (unsigned long long)s->bytes_direct,
		(unsigned long long)s->direct_waits);
}

int rclose(int socket)
{
	struct xrs *rs = xrs_lookup(socket);

	if (!rs)
		return xrs_err(EBADF);
	xrs_print_stats(rs);
	/*
	 * No flush before the linger: the peer's messages until its own
	 * DISCONNECT (credits, SinkAvails while it still reads what we sent)
	 * must still be taken by the QP. A flushed QP made the linger end at
	 * once (its flushed receives count as the peer gone); the process
	 * could then exit, its kernel socket closed with our data still
	 * queued, and the peer's next message answered with a RST that cost
	 * the peer the rest (fork-after-accept: a child echoing 1 MB, then
	 * close() and _exit()).
	 */
	if (rs->state & xrs_connected)
		xrs_shutdown(rs, SHUT_RDWR, false);
	else
		xrs_close_ack(rs);
	if (rs->state & (xrs_connected | xrs_disconnected))
		xrs_linger(rs);
	if (rs->cm_id && rs->cm_id->qp && (rs->state & (xrs_connected | xrs_disconnected)))
		xrs_cm_disconnect(rs);
	xrs_free(rs);
	return 0;
}
