// SPDX-License-Identifier: MIT
/*
 * ksock, send side: MSG_ZEROCOPY (Documentation/networking/msg_zerocopy).
 *
 * SO_ZEROCOPY is set on first use. Every zero-copy sendmsg that accepts
 * bytes gets the next id of a per-socket counter; the kernel reports
 * released ids as ranges [ee_info, ee_data] on the error queue, which
 * makes the socket report EPOLLERR until it is read. A report with
 * SO_EE_CODE_ZEROCOPY_COPIED means the kernel had to copy after all
 * (veth, loopback, devices without scatter-gather): the pinning was pure
 * cost, so the connection goes back to plain sends for good (unless the
 * test-only XIW_ZCOPY_FORCE=1 keeps it on, so veth can exercise it).
 *
 * A buffer goes back to the application only once a notification covers
 * it, whatever the outcome of its WR: xiw_ksock_zc_quiesce() is what makes
 * that possible when a connection fails with zero-copy sends outstanding.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <linux/errqueue.h>
#include "xiwarp/xiwarp.h"
#include "xiw_progress.h"
#include "ksock.h"
#include "llp.h"

#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY 5
#endif
#ifndef SO_EE_CODE_ZEROCOPY_COPIED
#define SO_EE_CODE_ZEROCOPY_COPIED 1
#endif

static bool id_reached(uint32_t done, uint32_t id)
{
	return (int32_t)(done - (id + 1)) >= 0;	/* done > id, mod 2^32 */
}

bool xiw_ksock_zc_usable(struct xiw_ksock *l)
{
	struct xiw_ksock_zc *z = xiw_ksock_zc(l);
	bool ok;

	pthread_mutex_lock(&z->lock);
	ok = !z->off;
	pthread_mutex_unlock(&z->lock);
	return ok;
}

/* XIW_ZCOPY_FORCE=1 (tests only): keep zero-copy on after a COPIED report */
static bool zc_force(void)
{
	static int on = -1;
	int v = __atomic_load_n(&on, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *e = getenv("XIW_ZCOPY_FORCE");

		v = e && !strcmp(e, "1");
		__atomic_store_n(&on, v, __ATOMIC_RELAXED);
	}
	return v;
}

bool xiw_ksock_zc_released(struct xiw_ksock *l, uint32_t id)
{
	struct xiw_ksock_zc *z = xiw_ksock_zc(l);
	bool ok;

	pthread_mutex_lock(&z->lock);
	ok = id_reached(z->done, id);
	pthread_mutex_unlock(&z->lock);
	return ok;
}

/* z->lock held: switch SO_ZEROCOPY on. Return: usable. */
static bool zc_enable(struct xiw_ksock *l, struct xiw_ksock_zc *z)
{
	int one = 1;

	if (z->on || z->off)
		return z->on && !z->off;
	if (setsockopt(xiw_ksock_fd(l), SOL_SOCKET, SO_ZEROCOPY, &one,
		       sizeof(one))) {
		xiw_log(XIW_LOG_INFO, "ksock: SO_ZEROCOPY: %s; plain sends",
			strerror(errno));
		z->off = true;
		return false;
	}
	__atomic_store_n(&z->on, true, __ATOMIC_RELAXED);
	return true;
}

ssize_t xiw_ksock_send_zc(struct xiw_ksock *l, const struct iovec *iov, int n,
			uint32_t *id, bool *zc)
{
	struct xiw_ksock_zc *z = xiw_ksock_zc(l);
	struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };
	ssize_t r;

	*zc = false;
	pthread_mutex_lock(&z->lock);
	if (!zc_enable(l, z)) {
		pthread_mutex_unlock(&z->lock);
		return xiw_ksock_send(l, iov, n, false);
	}
	r = sendmsg(xiw_ksock_fd(l), &msg,
		    MSG_DONTWAIT | MSG_NOSIGNAL | MSG_ZEROCOPY);
	if (r >= 0) {	/* a failed call consumes no id (kernel aborts it) */
		*id = z->next++;
		*zc = true;
	}
	pthread_mutex_unlock(&z->lock);
	if (r >= 0)
		return r;
	if (errno == ENOBUFS)	/* optmem full of notifications: copy now */
		return xiw_ksock_send(l, iov, n, false);
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/* z->lock held: ids [lo, hi] were released. */
static void zc_release(struct xiw_ksock_zc *z, uint32_t lo, uint32_t hi)
{
	bool merged = true;

	if ((int32_t)(lo - z->done) > 0) {	/* ahead of a gap: keep */
		if (z->nr < (int)(sizeof(z->lo) / sizeof(z->lo[0]))) {
			z->lo[z->nr] = lo;
			z->hi[z->nr++] = hi;
		} else {
			z->done = hi + 1;	/* out of room: never happens */
		}
		return;
	}
	if ((int32_t)(hi + 1 - z->done) > 0)
		z->done = hi + 1;
	while (merged) {	/* ranges that now touch @done */
		merged = false;
		for (int i = 0; i < z->nr; i++)
			if ((int32_t)(z->lo[i] - z->done) <= 0) {
				if ((int32_t)(z->hi[i] + 1 - z->done) > 0)
					z->done = z->hi[i] + 1;
				z->lo[i] = z->lo[--z->nr];
				z->hi[i] = z->hi[z->nr];
				merged = true;
				break;
			}
	}
}

/* One error-queue message. Return: false when the queue is empty. */
static bool zc_reap_one(struct xiw_ksock *l, struct xiw_ksock_zc *z)
{
	char ctl[128];
	struct msghdr msg = { .msg_control = ctl, .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c;

	if (recvmsg(xiw_ksock_fd(l), &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
		return false;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		struct sock_extended_err *ee = (void *)CMSG_DATA(c);

		if (ee->ee_errno || ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
			continue;
		pthread_mutex_lock(&z->lock);
		zc_release(z, ee->ee_info, ee->ee_data);
		if ((ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) && !z->off &&
		    !zc_force()) {
			z->off = true;
			xiw_log(XIW_LOG_INFO, "ksock: fd %d: the kernel copies zero-copy sends here (veth/loopback?): plain sends from now on",
				xiw_ksock_fd(l));
		}
		pthread_mutex_unlock(&z->lock);
	}
	return true;
}

void xiw_ksock_zc_reap(struct xiw_ksock *l)
{
	struct xiw_ksock_zc *z = xiw_ksock_zc(l);

	while (zc_reap_one(l, z))
		;
}

bool xiw_ksock_zc_outstanding(struct xiw_ksock *l)
{
	struct xiw_ksock_zc *z = xiw_ksock_zc(l);
	bool any;

	pthread_mutex_lock(&z->lock);
	any = z->on && z->done != z->next;
	pthread_mutex_unlock(&z->lock);
	return any;
}

/*
 * Abort the connection: connect(AF_UNSPEC) runs tcp_disconnect(), which
 * sends RST and frees the write and retransmit queues, so nothing more is
 * transmitted from the pinned pages. It leaves sk_error_queue alone and
 * the socket is not SOCK_DEAD, so the notifications of the freed sends
 * still arrive (measured on loopback: all ids within ~40 us of the
 * call). Clones still queued below TCP (qdisc, driver ring) release
 * their pages when those free them, and only then is the id notified.
 */
static void zc_abort(struct xiw_ksock *l)
{
	struct sockaddr sa = { .sa_family = AF_UNSPEC };

	if (connect(xiw_ksock_fd(l), &sa, sizeof(sa)))
		xiw_log(XIW_LOG_WARN, "ksock: fd %d: abort before the zero-copy drain failed: %s",
			xiw_ksock_fd(l), strerror(errno));
}

/**
 * xiw_ksock_zc_quiesce() - the connection is failing with zero-copy sends
 * the kernel has not released: abort it (RST; nothing more is sent) and
 * reap the error queue until every zero-copy call is notified, waiting at
 * most @max_ms milliseconds (sleeping 50 us, doubling to 1 ms). The fd
 * stays open. Any thread; the caller holds the send lock, so no new
 * zero-copy call starts meanwhile.
 * Return: 0 (nothing was outstanding, or all released now; the
 * connection is aborted in the second case), -ETIMEDOUT (ids still held:
 * their buffers may still be read by the kernel).
 */
int xiw_ksock_zc_quiesce(struct xiw_ksock *l, unsigned int max_ms)
{
	uint64_t end = xiw_now_ns() + (uint64_t)max_ms * 1000000ull;
	long nap_ns = 50 * 1000;

	if (!xiw_ksock_zc_outstanding(l))
		return 0;
	zc_abort(l);
	for (;;) {
		xiw_ksock_zc_reap(l);
		if (!xiw_ksock_zc_outstanding(l))
			return 0;
		if (xiw_now_ns() >= end)
			return -ETIMEDOUT;
		/* a closed TCP socket polls HUP at once: sleep, not poll() */
		nanosleep(&(struct timespec){ 0, nap_ns }, NULL);
		if (nap_ns < 1000 * 1000)
			nap_ns *= 2;
	}
}
