// SPDX-License-Identifier: MIT
/*
 * rsockets: sending - rsend, rsendto, rsendmsg, rwrite, rwritev.
 *
 * Buffer copy (rdma-core 44): the bytes are copied into the send staging
 * ring (sbuf), RDMA WRITTEN into the peer's receive buffer where its
 * current SGL entry points, and announced with a DATA message. Transfers
 * start at 2 KB and double up to 64 KB, so the first bytes leave early.
 * With the zero-copy extension, xrs_zc_try_send() may move a part by
 * RDMA instead (SinkAvail WRITE or SrcAvail READ), see xrs_zc.c.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <rdma/rsocket.h>
#include "xrs_int.h"

/*
 * Copy @len bytes from the iovec cursor (*iov, *off) into the ring at
 * sbuf_pos; fill @sgl (1 or 2 entries when the ring wraps).
 * Return: @len.
 */
uint32_t xrs_sbuf_copy_in(struct xrs *rs, const struct iovec **iov,
			  size_t *off, uint32_t len, struct ibv_sge sgl[2],
			  int *nsge)
{
	uint32_t first = rs->sbuf_size - rs->sbuf_pos, done = 0;

	if (first > len)
		first = len;
	sgl[0].addr = (uintptr_t)rs->sbuf + rs->sbuf_pos;
	sgl[0].length = first;
	sgl[0].lkey = rs->smr->lkey;
	*nsge = 1;
	if (first < len) {
		sgl[1].addr = (uintptr_t)rs->sbuf;
		sgl[1].length = len - first;
		sgl[1].lkey = rs->smr->lkey;
		*nsge = 2;
	}
	for (int i = 0; i < *nsge; i++) {
		uint8_t *dst = (uint8_t *)(uintptr_t)sgl[i].addr;
		uint32_t want = sgl[i].length;

		while (want) {
			size_t n = (*iov)->iov_len - *off;

			if (n > want)
				n = want;
			memcpy(dst, (const uint8_t *)(*iov)->iov_base + *off, n);
			dst += n;
			want -= (uint32_t)n;
			done += (uint32_t)n;
			*off += n;
			if (*off == (*iov)->iov_len) {
				(*iov)++;
				*off = 0;
			}
		}
	}
	rs->sbuf_pos = (rs->sbuf_pos + len) % rs->sbuf_size;
	return done;
}

/**
 * xrs_write_data() - WRITE @len bytes at @sgl where the peer's current
 * SGL entry points, then the DATA message. @staged: the bytes are in the
 * staging ring (else in the caller's buffer, xrs_direct.c).
 * Return: 0, or -1 with errno.
 */
int xrs_write_data(struct xrs *rs, struct ibv_sge *sgl, int nsge,
		   uint32_t len, int flags, bool staged)
{
	volatile struct xrs_sge *t = &rs->target_sgl[rs->target_sge];
	uint64_t addr = t->addr;
	uint32_t rkey = t->key;

	rs->sseq_no++;
	xrs_cnt_sub(&rs->sqe_avail, rs->msg_send ? 2 : 1);
	if (staged)
		xrs_cnt_sub(&rs->sbuf_bytes_avail, len);
	t->addr = addr + len;
	t->length = t->length - len;
	if (!t->length && ++rs->target_sge == XRS_SGL_SIZE)
		rs->target_sge = 0;
	rs->zc.sent_msgs++;
	rs->zc.st.bytes_bcopy += len;
	return xrs_post_write_msg(rs, sgl, nsge, xrs_msg_make(XRS_OP_DATA, len),
				  staged ? xrs_wr_id(XRS_WR_DATA, len) :
				  xrs_wr_id(XRS_WR_DATA_USER, 0), flags, addr, rkey);
}

static int xrs_send_wait(struct xrs *rs, int flags)
{
	int ret = xrs_get_comp_timeout(rs, xrs_nonblocking(rs, flags),
				       rs->sndtimeo_ms ? rs->sndtimeo_ms : -1,
				       xrs_conn_can_send);

	if (ret && errno == ETIMEDOUT)
		errno = EAGAIN;
	if (!ret && !(rs->state & xrs_writable))
		ret = xrs_err(rs->err ? rs->err : ECONNRESET);
	return ret;
}

static int xrs_send_state_ok(struct xrs *rs)
{
	if (rs->state & xrs_writable)
		return 0;
	if (rs->state & xrs_error)
		return xrs_err(rs->err ? rs->err : ECONNRESET);
	if (rs->state & (xrs_connected | xrs_disconnected))
		return xrs_err(EPIPE);
	return xrs_err(ENOTCONN);
}

/* One buffer-copy transfer of up to @left bytes; Return: bytes or -1. */
static ssize_t xrs_send_bcopy(struct xrs *rs, const struct iovec **cur,
			      size_t *off, size_t left, uint32_t *olen)
{
	struct ibv_sge sgl[2];
	uint32_t xfer;
	uint32_t tlen = rs->target_sgl[rs->target_sge].length, avail;
	int nsge;

	if (*olen < left) {
		xfer = *olen;
		if (*olen < xrs_knobs()->max_xfer)
			*olen <<= 1;
	} else {
		xfer = (uint32_t)left;
	}
	if (xfer > xrs_knobs()->max_xfer)
		xfer = xrs_knobs()->max_xfer;
	avail = xrs_cnt_get(&rs->sbuf_bytes_avail);
	if (xfer > avail)
		xfer = avail;
	if (xfer > tlen)
		xfer = tlen;
	xrs_sbuf_copy_in(rs, cur, off, xfer, sgl, &nsge);
	if (xrs_write_data(rs, sgl, nsge, xfer,
			   xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0, true))
		return -1;
	return xfer;
}

/**
 * xrs_sendv() - send the bytes of @iov (rdma-core's rsendv, plus the
 * zero-copy extension and SO_SNDTIMEO).
 * Return: bytes sent (short if non-blocking or interrupted after some),
 * or -1 with errno (EAGAIN, EPIPE, ECONNRESET, EINTR, ...).
 */
ssize_t xrs_sendv(struct xrs *rs, const struct iovec *iov, int iovcnt,
		  int flags)
{
	const struct iovec *cur = iov;
	size_t len = 0, left, off = 0, zc_bytes = 0;
	uint32_t olen = XRS_OLAP_START_SIZE;
	struct xrs_direct d = { NULL };
	bool direct = xrs_direct_usable();
	int64_t t0 = 0;
	ssize_t n;
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
	while (iovcnt && !cur->iov_len && cur < iov + iovcnt - 1)
		cur++;
	left = len;
	pthread_mutex_lock(&rs->slock);
	if (xrs_send_state_ok(rs)) {
		ret = -1;
		goto out;
	}
	if (rs->iomap_pending) {
		ret = xrs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	if (rs->zc.on && len >= XRS_ZP_MIN)
		t0 = xrs_now_ns();
	while (left) {
		if (rs->zc.on) {
			bool used = false;

			n = xrs_zc_try_send(rs, &cur, &off, left, flags, &used);
			if (n < 0) {
				ret = -1;
				break;
			}
			left -= (size_t)n;
			if (used) {
				zc_bytes += (size_t)n;
				continue;
			}
		}
		if (!xrs_can_send(rs)) {
			ret = xrs_send_wait(rs, flags);
			if (ret)
				break;
			continue;	/* a SinkAvail may have arrived meanwhile */
		}
		n = direct ? xrs_send_direct(rs, &cur, &off, left, &d) : 0;
		if (!n)
			n = xrs_send_bcopy(rs, &cur, &off, left, &olen);
		if (n < 0) {
			ret = -1;
			break;
		}
		left -= (size_t)n;
		if (rs->zc.bcopy_left)
			xrs_zc_bcopy_sent(rs, (size_t)n);
	}
	/* the caller's buffer must be free when we return */
	xrs_direct_finish(rs, &d);
	/* seed 004 cost feedback: calls that went wholly one way */
	if (t0 && !left && (!zc_bytes || zc_bytes == len))
		xrs_zpol_on_sent(&rs->zc.pol, len, (uint64_t)(xrs_now_ns() - t0),
				 zc_bytes == len);
out:
	pthread_mutex_unlock(&rs->slock);
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

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };
	struct xrs *rs = xrs_get(socket);

	return rs ? xrs_sendv(rs, &v, 1, flags) : -1;
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	if (dest_addr || addrlen)
		return xrs_err(EISCONN);
	return rsend(socket, buf, len, flags);
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	struct xrs *rs = xrs_get(socket);

	if (!rs)
		return -1;
	if (msg->msg_control && msg->msg_controllen)
		return xrs_err(ENOTSUP);
	return xrs_sendv(rs, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	struct xrs *rs = xrs_get(socket);

	return rs ? xrs_sendv(rs, iov, iovcnt, 0) : -1;
}
