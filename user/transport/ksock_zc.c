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
 * cost, so the connection goes back to plain sends for good.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/errqueue.h>
#include "xiwarp/xiwarp.h"
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

bool xiw_llp_zc_usable(struct xiw_llp *l)
{
	struct xiw_ksock_zc *z = xiw_ksock_zc(l);
	bool ok;

	pthread_mutex_lock(&z->lock);
	ok = !z->off;
	pthread_mutex_unlock(&z->lock);
	return ok;
}

bool xiw_llp_zc_released(struct xiw_llp *l, uint32_t id)
{
	struct xiw_ksock_zc *z = xiw_ksock_zc(l);
	bool ok;

	pthread_mutex_lock(&z->lock);
	ok = id_reached(z->done, id);
	pthread_mutex_unlock(&z->lock);
	return ok;
}

/* z->lock held: switch SO_ZEROCOPY on. Return: usable. */
static bool zc_enable(struct xiw_llp *l, struct xiw_ksock_zc *z)
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

ssize_t xiw_llp_send_zc(struct xiw_llp *l, const struct iovec *iov, int n,
			uint32_t *id, bool *zc)
{
	struct xiw_ksock_zc *z = xiw_ksock_zc(l);
	struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };
	ssize_t r;

	*zc = false;
	pthread_mutex_lock(&z->lock);
	if (!zc_enable(l, z)) {
		pthread_mutex_unlock(&z->lock);
		return xiw_llp_send(l, iov, n, false);
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
		return xiw_llp_send(l, iov, n, false);
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
static bool zc_reap_one(struct xiw_llp *l, struct xiw_ksock_zc *z)
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
		if ((ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) && !z->off) {
			z->off = true;
			xiw_log(XIW_LOG_INFO, "ksock: fd %d: the kernel copies zero-copy sends here (veth/loopback?): plain sends from now on",
				xiw_ksock_fd(l));
		}
		pthread_mutex_unlock(&z->lock);
	}
	return true;
}

void xiw_ksock_zc_reap(struct xiw_llp *l)
{
	struct xiw_ksock_zc *z = xiw_ksock_zc(l);

	while (zc_reap_one(l, z))
		;
}
