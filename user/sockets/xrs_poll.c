// SPDX-License-Identifier: MIT
/*
 * rsockets: readiness - rpoll, rselect, and the pollable-fd invariant the
 * LD_PRELOAD library (libxiwsock.so) relies on.
 *
 * A connected socket's fd (A) becomes readable when the armed CQ fires
 * (the completion channel writes into the socketpair) or when we put a
 * marker there. rpoll works as rdma-core's: check every rsocket without
 * blocking, else arm the CQs and poll() the fds, then check again.
 *
 * For sockets in "pollable" mode the library keeps, after each call:
 * "ready to read (data, end of stream, error) => A is readable" (a marker
 * is written when needed) and "not ready => the CQ is armed or A already
 * holds an event", so a kernel poll/epoll on A never misses data. A may
 * be readable while nothing is ready (a send completion fired the CQ);
 * xrs_revents() tells the truth and the preload filters such wake-ups.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/select.h>
#include <rdma/rsocket.h>
#include "xrs_int.h"

static bool xrs_poll_all(struct xrs *rs)
{
	(void)rs;
	return true;
}

static bool xrs_is_cq_armed(struct xrs *rs)
{
	return __atomic_load_n(&rs->cq_armed, __ATOMIC_RELAXED);
}

/* Ready to read: data, or nothing more will come (end, error). */
static bool xrs_read_ready(struct xrs *rs)
{
	return xrs_conn_have_rdata(rs) || (rs->state & xrs_error);
}

static short xrs_poll_conn(struct xrs *rs, short events, bool nonblock,
			   xrs_test_fn test)
{
	short revents = 0;

	if (rs->cq)
		xrs_process_cq(rs, nonblock, test);
	if ((events & POLLIN) && xrs_read_ready(rs))
		revents |= POLLIN;
	if ((events & POLLOUT) && (rs->state & xrs_writable) && xrs_can_send(rs))
		revents |= POLLOUT;
	/*
	 * Hang-up only once the data is read: rstream -T a stops at POLLHUP,
	 * and TCP too reports a peer's close with data queued as readable.
	 */
	if (!(rs->state & xrs_connected) && !xrs_have_rdata(rs)) {
		if (rs->state & xrs_error)
			revents |= POLLERR;
		if (rs->state & (xrs_disconnected | xrs_error))
			revents |= POLLHUP;
	}
	return revents;
}

/* rdma-core's rs_poll_rs: revents of one rsocket. */
static short xrs_poll_rs(struct xrs *rs, short events, bool nonblock,
			 xrs_test_fn test)
{
	struct pollfd p;

	for (int pass = 0; pass < 2; pass++) {
		if ((rs->state & xrs_connected) ||
		    (rs->state & (xrs_disconnected | xrs_error)))
			return xrs_poll_conn(rs, events, nonblock, test);
		if (rs->state == xrs_listening) {
			p.fd = rs->cm_id->channel->fd;
			p.events = events;
			p.revents = 0;
			poll(&p, 1, 0);
			return p.revents;
		}
		if (!(rs->state & xrs_opening) || pass)
			break;
		if (xrs_do_connect(rs) && errno == EINPROGRESS) {
			errno = 0;
			return 0;
		}
	}
	if (rs->state == xrs_connect_error)
		return (short)((events & (POLLIN | POLLOUT)) | POLLERR);
	return 0;
}

/** xrs_revents() - @rs's readiness for @events now (never blocks). */
short xrs_revents(struct xrs *rs, short events)
{
	return xrs_poll_rs(rs, events, true, xrs_poll_all);
}

static void xrs_mark(struct xrs *rs)
{
	static const uint64_t marker;	/* CQ events are non-zero pointers */

	if (!rs->token && xrs_sys_write(rs->bfd, &marker, sizeof(marker)) == sizeof(marker))
		rs->token = true;
}

/*
 * The invariant for @rs; with @want_out also "not writable => armed", so
 * a completion that makes room wakes a poller waiting for POLLOUT.
 */
static void xrs_sync(struct xrs *rs, bool want_out)
{
	bool ready, arm;

	if (!rs->cq)
		return;
	pthread_mutex_lock(&rs->cq_lock);
	ready = xrs_read_ready(rs);
	arm = !ready || (want_out && !xrs_can_send(rs) && (rs->state & xrs_writable));
	if (ready)
		xrs_mark(rs);
	else if (rs->token)
		xrs_drain_events(rs);
	if (arm && !__atomic_load_n(&rs->cq_armed, __ATOMIC_RELAXED)) {
		ibv_req_notify_cq(rs->cq, 0);
		__atomic_store_n(&rs->cq_armed, true, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&rs->cq_lock);
	if (!arm || !(rs->state & xrs_connected))
		return;
	/* a completion that came before the arm fires nothing: look again */
	xrs_process_cq(rs, true, xrs_poll_all);
	pthread_mutex_lock(&rs->cq_lock);
	if (xrs_read_ready(rs))
		xrs_mark(rs);
	pthread_mutex_unlock(&rs->cq_lock);
}

/**
 * xrs_sync_token() - restore the pollable-fd invariant (header comment)
 * after a call changed @rs.
 */
void xrs_sync_token(struct xrs *rs)
{
	xrs_sync(rs, false);
}

/**
 * xrs_settle() - @rs's fd woke a poller: empty it (unless a thread of
 * ours sleeps on it and will), take the completions, restore the
 * invariant; @want_out: also arm for writability.
 */
void xrs_settle(struct xrs *rs, bool want_out)
{
	if (!rs->cq)
		return;
	if (!pthread_mutex_trylock(&rs->wait_lock)) {
		pthread_mutex_lock(&rs->cq_lock);
		xrs_drain_events(rs);
		pthread_mutex_unlock(&rs->cq_lock);
		pthread_mutex_unlock(&rs->wait_lock);
	}
	xrs_process_cq(rs, true, xrs_poll_all);
	/* a zero-copy send nobody reads holds its sender: take it */
	xrs_zc_serve(rs, XRS_XZ_SERVE_NS);
	xrs_sync(rs, want_out);
}

/* ------------------------------------------------------------ rpoll --- */

static int xrs_poll_check(struct pollfd *fds, nfds_t nfds)
{
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct xrs *rs = xrs_lookup(fds[i].fd);

		if (rs) {
			fds[i].revents = xrs_poll_rs(rs, fds[i].events, true, xrs_poll_all);
			xrs_zc_serve(rs, XRS_XZ_SERVE_NS);
		} else {
			poll(&fds[i], 1, 0);
		}
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

/* Arm every rsocket; the fd to poll for each. Return: 1 if one is ready. */
static int xrs_poll_arm(struct pollfd *rfds, struct pollfd *fds, nfds_t nfds)
{
	for (nfds_t i = 0; i < nfds; i++) {
		struct xrs *rs = xrs_lookup(fds[i].fd);

		if (!rs) {
			rfds[i] = fds[i];
			rfds[i].revents = 0;
			continue;
		}
		fds[i].revents = xrs_poll_rs(rs, fds[i].events, false, xrs_is_cq_armed);
		if (fds[i].revents)
			return 1;
		rfds[i].fd = (rs->state >= xrs_connected || !rs->cm_id) ? rs->index :
			     rs->cm_id->channel->fd;
		rfds[i].events = POLLIN;
		rfds[i].revents = 0;
	}
	return 0;
}

static int xrs_poll_events(struct pollfd *rfds, struct pollfd *fds, nfds_t nfds)
{
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct xrs *rs;

		if (!rfds[i].revents)
			continue;
		rs = xrs_lookup(fds[i].fd);
		if (rs) {
			if (rfds[i].fd == rs->index) {
				pthread_mutex_lock(&rs->wait_lock);
				xrs_drain_events(rs);
				pthread_mutex_unlock(&rs->wait_lock);
			}
			fds[i].revents = xrs_poll_rs(rs, fds[i].events, true, xrs_poll_all);
		} else {
			fds[i].revents = rfds[i].revents;
		}
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

static int64_t xrs_mono_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/**
 * rpoll() - poll(2) over rsockets and ordinary fds (rdma-core semantics:
 * every fd checked at least once; events that are only CQ traffic are
 * taken and polling goes on).
 */
int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	int64_t start = xrs_mono_us(), now;
	struct pollfd *rfds;
	int ret, to;

	do {
		ret = xrs_poll_check(fds, nfds);
		if (ret || !timeout)
			return ret;
	} while (xrs_mono_us() - start <= (int64_t)xrs_knobs()->spin_us);

	rfds = calloc(nfds ? nfds : 1, sizeof(*rfds));
	if (!rfds)
		return xrs_err(ENOMEM);
	do {
		ret = xrs_poll_arm(rfds, fds, nfds);
		if (ret)
			break;
		to = timeout;
		if (timeout > 0) {
			now = xrs_mono_us();
			to = timeout - (int)((now - start) / 1000);
			if (to < 0)
				to = 0;
		}
		ret = poll(rfds, nfds, to);
		if (ret <= 0)
			break;
		ret = xrs_poll_events(rfds, fds, nfds);
	} while (!ret);
	free(rfds);
	return ret;
}

/* ---------------------------------------------------------- rselect --- */

static struct pollfd *xrs_select_to_poll(int *nfds, fd_set *r, fd_set *w,
					 fd_set *e)
{
	struct pollfd *fds = calloc(*nfds > 0 ? (size_t)*nfds : 1, sizeof(*fds));
	int n = 0;

	if (!fds)
		return NULL;
	for (int fd = 0; fd < *nfds; fd++) {
		short ev = 0;

		if (r && FD_ISSET(fd, r))
			ev |= POLLIN;
		if (w && FD_ISSET(fd, w))
			ev |= POLLOUT;
		if (ev || (e && FD_ISSET(fd, e))) {
			fds[n].fd = fd;
			fds[n].events = ev;
			n++;
		}
	}
	*nfds = n;
	return fds;
}

static int xrs_poll_to_select(int nfds, struct pollfd *fds, fd_set *r,
			      fd_set *w, fd_set *e)
{
	int cnt = 0;

	for (int i = 0; i < nfds; i++) {
		if (r && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    (fds[i].events & POLLIN)) {
			FD_SET(fds[i].fd, r);
			cnt++;
		}
		if (w && (fds[i].revents & (POLLOUT | POLLERR)) &&
		    (fds[i].events & POLLOUT)) {
			FD_SET(fds[i].fd, w);
			cnt++;
		}
		if (e && (fds[i].revents & POLLPRI)) {
			FD_SET(fds[i].fd, e);
			cnt++;
		}
	}
	return cnt;
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout)
{
	struct pollfd *fds;
	int ret, n = nfds;

	fds = xrs_select_to_poll(&n, readfds, writefds, exceptfds);
	if (!fds)
		return xrs_err(ENOMEM);
	ret = rpoll(fds, (nfds_t)n, !timeout ? -1 :
		    (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000));
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	if (ret > 0)
		ret = xrs_poll_to_select(n, fds, readfds, writefds, exceptfds);
	free(fds);
	return ret;
}
