// SPDX-License-Identifier: MIT
/*
 * rsockets: receiving - rrecv, rrecvfrom, rrecvmsg, rread, rreadv.
 *
 * Stream-ordered messages wait in the rmsg ring: DATA (bytes in our
 * receive buffer, read out in order, wrapping at its end), and with the
 * zero-copy extension SRCAVAIL (bytes the reader RDMA READs from the
 * peer's buffer straight into the caller's) and WRCOMPL (bytes the peer
 * already wrote into the caller's buffer after our SinkAvail). Data still
 * queued is delivered after the peer closed; then 0 (end of stream).
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <rdma/rsocket.h>
#include "xiwarp/xiwarp.h"
#include "xrs_int.h"
#include "xrs_priv.h"

/* Copy @n bytes of the receive ring at *roff into the iovec cursor. */
static void xrs_copy_out(struct xrs *rs, uint32_t *roff, const struct iovec **iov,
			 size_t *off, uint32_t n)
{
	while (n) {
		uint32_t chunk = rs->rbuf_size - *roff;
		size_t room = (*iov)->iov_len - *off;

		if (chunk > n)
			chunk = n;
		if (chunk > room)
			chunk = (uint32_t)room;
		memcpy((uint8_t *)(*iov)->iov_base + *off, rs->rbuf + *roff, chunk);
		*roff += chunk;
		if (*roff == rs->rbuf_size)
			*roff = 0;
		*off += chunk;
		n -= chunk;
		if (*off == (*iov)->iov_len) {
			(*iov)++;
			*off = 0;
		}
	}
}

/* MSG_PEEK: copy what DATA (and stashed) messages hold, consume nothing. */
static size_t xrs_peek(struct xrs *rs, const struct iovec *iov, size_t len)
{
	const struct iovec *cur = iov;
	size_t off = 0, left = len;
	uint32_t head = rs->rmsg_head, roff = rs->rbuf_offset;

	while (left && head != xrs_cnt_get(&rs->rmsg_tail)) {
		struct xrs_rmsg *m = &rs->rmsg[head];
		uint32_t n = m->data, done = 0;

		if (m->op != XRS_OP_DATA && m->op != XRS_RMSG_STASH)
			break;
		if (n > left)
			n = (uint32_t)left;
		if (m->op == XRS_OP_DATA) {
			xrs_copy_out(rs, &roff, &cur, &off, n);
		} else {
			while (done < n) {
				size_t c = cur->iov_len - off;

				if (c > n - done)
					c = n - done;
				memcpy((uint8_t *)cur->iov_base + off,
				       m->stash + m->done + done, c);
				done += (uint32_t)c;
				off += c;
				if (off == cur->iov_len) {
					cur++;
					off = 0;
				}
			}
		}
		left -= n;
		if (++head == rs->rmsg_size)
			head = 0;
	}
	return len - left;
}

/* xrs_p_read_hook(): tests act between the two counter updates of xrs_read_data */
static struct {
	void (*fn)(void *arg, uint32_t n);
	void *arg;
} read_hook;

void xrs_p_read_hook(void (*fn)(void *arg, uint32_t n), void *arg)
{
	read_hook.arg = arg;
	__atomic_store_n(&read_hook.fn, fn, __ATOMIC_RELEASE);
}

static void xrs_read_test_hook(uint32_t n)
{
	void (*fn)(void *, uint32_t) = __atomic_load_n(&read_hook.fn, __ATOMIC_ACQUIRE);

	if (fn)
		fn(read_hook.arg, n);
}

/* Consume DATA at the head of the ring into the cursor. Return: bytes. */
static size_t xrs_read_data(struct xrs *rs, const struct iovec **cur,
			    size_t *off, size_t left)
{
	struct xrs_rmsg *m = &rs->rmsg[rs->rmsg_head];
	uint32_t n = m->data;

	if (n > left) {
		n = (uint32_t)left;
		m->data -= n;
	} else {
		xrs_rmsg_consume(rs);
	}
	xrs_copy_out(rs, &rs->rbuf_offset, cur, off, n);
	/*
	 * Unread first. Between the two the DATA check (xrs_rx_data) sees
	 * more room than there is, and no credit can offer these bytes yet.
	 * The other order let a thread polling the CQ offer them as credit
	 * while the check still counted them unread: the peer's DATA into
	 * that credit was a "protocol violation" (test_races, 1 in 2200).
	 */
	xrs_cnt_sub(&rs->rbuf_unread, n);
	xrs_read_test_hook(n);
	xrs_cnt_add(&rs->rbuf_bytes_avail, n);
	return n;
}

/* Take queued messages into the cursor. Return: bytes, or -1 with errno. */
static ssize_t xrs_take(struct xrs *rs, const struct iovec **cur, size_t *off,
			size_t left, int flags)
{
	size_t got = 0;

	while (left > got && xrs_have_rdata(rs)) {
		struct xrs_rmsg *m = &rs->rmsg[rs->rmsg_head];
		ssize_t n;

		if (m->op == XRS_OP_DATA) {
			got += xrs_read_data(rs, cur, off, left - got);
			continue;
		}
		if (m->op == XRS_RMSG_STASH) {
			got += xrs_zc_take_stash(rs, m, cur, off, left - got);
			continue;
		}
		if (m->op != XRS_OP_XZ_SRCAVAIL) {
			/* a WRCOMPL nobody waits for: the peer broke the rules */
			xiw_log(XIW_LOG_WARN, XRS_PFX "fd %d: unexpected WRCOMPL", rs->index);
			rs->state = xrs_error | xrs_disconnected;
			rs->err = EPROTO;
			return got ? (ssize_t)got : xrs_err(EPROTO);
		}
		n = xrs_zc_recv_srcavail(rs, m, cur, off, left - got, flags, false);
		if (n < 0)
			return got ? (ssize_t)got : -1;
		got += (size_t)n;
		if (!n)
			break;
	}
	return (ssize_t)got;
}

static int xrs_recv_wait(struct xrs *rs, int flags)
{
	int ret = xrs_get_comp_timeout(rs, xrs_nonblocking(rs, flags),
				       rs->rcvtimeo_ms ? rs->rcvtimeo_ms : -1,
				       xrs_conn_have_rdata);

	if (ret && errno == ETIMEDOUT)
		errno = EAGAIN;
	return ret;
}

/* MSG_PEEK: what DATA holds; zero-copy bytes are asked for by copy. */
static ssize_t xrs_recv_peek(struct xrs *rs, const struct iovec **cur,
			     size_t *off, size_t left, bool *again)
{
	size_t n = xrs_peek(rs, *cur, left);

	*again = false;
	if (n || !xrs_have_rdata(rs) ||
	    rs->rmsg[rs->rmsg_head].op != XRS_OP_XZ_SRCAVAIL)
		return (ssize_t)n;
	if (xrs_zc_recv_srcavail(rs, &rs->rmsg[rs->rmsg_head], cur, off, left,
				 0, true) < 0)
		return -1;
	*again = true;		/* the rest comes as DATA: wait for it */
	return 0;
}

/**
 * xrs_recvv() - receive into @iov (rdma-core's rrecv, for all vectors).
 * Return: bytes (0 at end of stream), or -1 with errno (EAGAIN,
 * ECONNRESET, EINTR, ...).
 */
ssize_t xrs_recvv(struct xrs *rs, const struct iovec *iov, int iovcnt,
		  int flags)
{
	const struct iovec *cur = iov;
	size_t len = 0, left, off = 0;
	ssize_t n;
	bool again;
	int ret = 0;

	if (rs->state & xrs_opening) {
		if (xrs_do_connect(rs)) {
			if (errno == EINPROGRESS)
				errno = EAGAIN;
			return -1;
		}
	}
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (!len)
		return 0;
	while (!cur->iov_len)
		cur++;
	left = len;
	pthread_mutex_lock(&rs->rlock);
	for (;;) {
		if (!xrs_have_rdata(rs) && rs->zc.on && (rs->state & xrs_readable)) {
			n = xrs_zc_try_sinkavail(rs, &cur, &off, left, flags);
			if (n < 0) {
				ret = -1;
				break;
			}
			left -= (size_t)n;
			if (n && (!left || !(flags & MSG_WAITALL)))
				break;
			if (n)
				continue;
		}
		if (!xrs_have_rdata(rs)) {
			ret = xrs_recv_wait(rs, flags);
			if (ret)
				break;
		}
		if (flags & MSG_PEEK) {
			n = xrs_recv_peek(rs, &cur, &off, left, &again);
			if (n < 0) {
				ret = -1;
				break;
			}
			left -= (size_t)n;
			if (again)
				continue;
			break;
		}
		n = xrs_take(rs, &cur, &off, left, flags);
		if (n < 0) {
			ret = -1;
			break;
		}
		left -= (size_t)n;
		if (!left || !(flags & MSG_WAITALL) || !(rs->state & xrs_readable)) {
			/* nothing taken but something queued: a SendSm was sent */
			if (!n && xrs_have_rdata(rs))
				continue;
			if (!n && left == len && (rs->state & xrs_readable))
				continue;
			break;
		}
	}
	if (left < len && rs->cq) {
		/*
		 * Return the credits now, as TCP opens its window when the
		 * application reads (rdma-core waits for the next call): a
		 * reader that took everything may not call again soon.
		 */
		pthread_mutex_lock(&rs->cq_lock);
		xrs_update_credits(rs);
		pthread_mutex_unlock(&rs->cq_lock);
	}
	pthread_mutex_unlock(&rs->rlock);
	if (left == len && !ret && (rs->state & xrs_error) && rs->err) {
		/* a reset, not an orderly end: report it once */
		ret = xrs_err(rs->err);
		rs->err = 0;
	}
	if (rs->pollable) {
		int e = errno;	/* the bookkeeping must not change the result */

		xrs_sync_token(rs);
		errno = e;
	}
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

static struct xrs *xrs_get(int socket)
{
	struct xrs *rs = xrs_lookup(socket);

	if (!rs)
		errno = EBADF;
	return rs;
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };
	struct xrs *rs = xrs_get(socket);

	return rs ? xrs_recvv(rs, &v, 1, flags) : -1;
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
		  struct sockaddr *src_addr, socklen_t *addrlen)
{
	ssize_t ret = rrecv(socket, buf, len, flags);

	if (ret > 0 && src_addr)
		rgetpeername(socket, src_addr, addrlen);
	return ret;
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	struct xrs *rs = xrs_get(socket);

	if (!rs)
		return -1;
	if (msg->msg_control && msg->msg_controllen)
		return xrs_err(ENOTSUP);
	msg->msg_flags = 0;
	return xrs_recvv(rs, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	struct xrs *rs = xrs_get(socket);

	return rs ? xrs_recvv(rs, iov, iovcnt, 0) : -1;
}
