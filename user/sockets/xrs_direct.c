// SPDX-License-Identifier: MIT
/*
 * rsockets: buffer copy without the staging copy ("direct" data WRITEs).
 *
 * rdma-core copies every byte into the send staging ring (sbuf) before it
 * RDMA WRITEs it into the peer's receive buffer, because the WRITE may
 * read its source long after rsend() returned. xiwarp's ksock transport
 * in copy mode (XIW_TX_COMPLETION=copy, the default) completes a WRITE
 * once the kernel took all its bytes into the TCP socket, and usually
 * does that inside ibv_post_send: a WRITE posted straight from the
 * caller's buffer, with the call waiting for its completion before it
 * returns, saves one memcpy per byte and changes nothing on the wire (the
 * same WRITE + 4-byte DATA SEND into the same target, same credits).
 *
 * The caller's buffer is registered for local access only (no STag the
 * peer knows), for the duration of the call. Where a completion does not
 * follow the post (XIW_TX_COMPLETION=ack waits for the peer's TCP ACK;
 * XIW_TRANSPORT=xsk references the memory until it is acknowledged) the
 * wait would cost a round trip per call: there the staging ring stays in
 * use (xrs_direct_usable). A non-blocking call may wait here too, for
 * the kernel to take bytes it already accepted to send: bounded by the
 * engine and the network, never by the peer application (the WRITEs only
 * go where the peer's credits let them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "xiwarp/xiwarp.h"
#include "xrs_int.h"

/**
 * xrs_direct_usable() - do completions here mean "the source buffer is
 * free again" soon after the post? From the engine's knobs, read once:
 * ksock transport in copy mode, and XIW_RS_DIRECT not 0 (2: whatever
 * the transport, for tests: every call then waits for its completions).
 */
bool xrs_direct_usable(void)
{
	static int usable = -1;
	const char *c, *t;

	if (usable >= 0)
		return usable;
	c = getenv("XIW_TX_COMPLETION");
	t = getenv("XIW_TRANSPORT");
	usable = xrs_knobs()->direct == 2 ||	/* tests: even so */
		 (xrs_knobs()->direct && !(c && !strcmp(c, "ack")) &&
		  !(t && !strcmp(t, "xsk")));
	return usable;
}

static bool xrs_direct_idle(struct xrs *rs)
{
	return xrs_cnt_get(&rs->direct_done) == rs->direct_seq;
}

/**
 * xrs_direct_finish() - wait until every direct WRITE of this call has
 * completed (success or flush), then deregister the caller's buffer.
 * Signals do not end the wait: the engine may still read the buffer.
 * slock held.
 */
void xrs_direct_finish(struct xrs *rs, struct xrs_direct *d)
{
	if (!d->mr)
		return;
	if (!xrs_direct_idle(rs)) {
		xrs_process_cq(rs, true, xrs_direct_idle);
		if (!xrs_direct_idle(rs)) {
			rs->zc.st.direct_waits++;
			while (xrs_get_comp(rs, false, xrs_direct_idle) && errno == EINTR)
				;
		}
	}
	ibv_dereg_mr(d->mr);
	d->mr = NULL;
}

/* Register the current iovec segment (from *off on) for this call. */
static bool xrs_direct_reg(struct xrs *rs, struct xrs_direct *d,
			   const struct iovec *iov, size_t off)
{
	uint8_t *p = (uint8_t *)iov->iov_base + off;
	size_t n = iov->iov_len - off;

	if (d->mr && p >= (uint8_t *)d->mr->addr &&
	    p + n <= (uint8_t *)d->mr->addr + d->mr->length)
		return true;
	xrs_direct_finish(rs, d);	/* the previous segment's MR */
	d->mr = ibv_reg_mr(rs->cm_id->pd, p, n, 0);
	return d->mr != NULL;
}

/**
 * xrs_send_direct() - one data transfer of up to @left bytes, written
 * from the caller's buffer at the cursor: as large as the peer's current
 * target entry allows (at most XIW_RS_MAX_XFER), no staging copy. The
 * caller has checked xrs_can_send(). slock held.
 * Return: bytes posted (the cursor moved on), 0 when this transfer
 * should go by staging copy instead (too small, registration failed), or
 * -1 with errno.
 */
ssize_t xrs_send_direct(struct xrs *rs, const struct iovec **iov, size_t *off,
			size_t left, struct xrs_direct *d)
{
	size_t seg = (*iov)->iov_len - *off;
	uint32_t tlen = rs->target_sgl[rs->target_sge].length, xfer;
	struct ibv_sge sge;

	if (seg > left)
		seg = left;
	if (seg < XRS_DIRECT_MIN || tlen < XRS_DIRECT_MIN ||
	    !xrs_direct_reg(rs, d, *iov, *off))
		return 0;
	xfer = seg < xrs_knobs()->max_xfer ? (uint32_t)seg : xrs_knobs()->max_xfer;
	if (xfer > tlen)
		xfer = tlen;
	sge.addr = (uintptr_t)(*iov)->iov_base + *off;
	sge.length = xfer;
	sge.lkey = d->mr->lkey;
	rs->direct_seq++;
	if (xrs_write_data(rs, &sge, 1, xfer, 0, false)) {
		rs->direct_seq--;
		return -1;
	}
	rs->zc.st.bytes_direct += xfer;
	*off += xfer;
	if (*off == (*iov)->iov_len) {
		(*iov)++;
		*off = 0;
	}
	return xfer;
}
