// SPDX-License-Identifier: MIT
/*
 * rsockets: the seed-004 zero-copy extension ("simple flow control over
 * RDMA"), used only when both peers set XRS_CONN_FLAG_XZC. Wire format:
 * include/xiwarp/wire/rsocket.h; thresholds: xrs_zc_policy.c.
 *
 * Buffer copy stays the base: small sends are copied into the peer's
 * pre-posted receive buffer (xrs_send.c). A large send goes zero-copy:
 *  - SinkAvail (Write ZCopy): a reader blocked in recv() with a big buffer
 *    and nothing queued advertises that buffer. A sender that has sent
 *    nothing the reader had not seen (aux = stream-ordered message count)
 *    RDMA WRITEs its bytes there and sends WRCOMPL, no SrcAvail needed.
 *    Anything else the reader receives first tells it the SinkAvail was
 *    dropped.
 *  - SrcAvail (Read ZCopy): otherwise a blocking sender registers its
 *    buffer, sends the first piece by copy together with the SrcAvail,
 *    and waits. The reader RDMA READs the rest straight into the caller's
 *    buffer (over several recv() calls if needed) and answers RDCOMPL, or
 *    answers SendSm when its buffer is too small for a read to pay (or for
 *    MSG_PEEK): the sender then copies the rest.
 * Non-blocking sends never wait for a read: they use buffer copy, or a
 * pending SinkAvail through the staging ring. Each side adapts only its
 * own threshold from what the other does (xrs_zc_policy.h); there are no
 * mode-switch messages.
 *
 * Memory is registered per transfer and deregistered when it resolves, so
 * no application buffer stays remotely accessible after its call returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/uio.h>
#include "xiwarp/xiwarp.h"
#include "xrs_int.h"
#include "xrs_priv.h"

#define XRS_XZ_FIRST	2048	/* first piece of a SrcAvail, copied */
#define XRS_XZ_MAX	(8u << 20)	/* bytes of one SrcAvail */
/*
 * A send timeout this long is a "peer is dead" guard (iperf 2 sets 4 s),
 * not a latency bound: a SrcAvail may still wait for its read (waiting
 * readers answer within a millisecond, see xrs_zc_serve).
 */
#define XRS_XZ_LONG_TIMEOUT_MS	1000

bool xrs_zc_knob_on(void)
{
	return xrs_knobs()->zcopy != 0;
}

/** xrs_zc_init() - after the handshake: on if both sides offered it. */
void xrs_zc_init(struct xrs *rs, bool peer_xzc)
{
	const struct xrs_knobs *k = xrs_knobs();

	memset(&rs->zc, 0, sizeof(rs->zc));
	rs->zc.on = peer_xzc && k->zcopy;
	xrs_zpol_init(&rs->zc.pol, k->src_thresh, k->sink_thresh, k->adapt,
		      k->zc_cost);
}

void xrs_zc_free(struct xrs *rs)
{
	(void)rs;	/* transfers deregister their memory as they end */
}

/** xrs_now_ns() - CLOCK_MONOTONIC in ns (SrcAvail ages, send timing). */
int64_t xrs_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* ---------------------------------------------------------- posting --- */

static void xz_inflight(struct xrs *rs, int d)
{
	__atomic_add_fetch(&rs->zc.inflight, d, __ATOMIC_RELAXED);
}

static bool xz_room(struct xrs *rs)
{
	return __atomic_load_n(&rs->zc.inflight, __ATOMIC_RELAXED) + 2 <=
	       XRS_XZ_SQ_SLOTS || !(rs->state & xrs_connected);
}

/* Wait for SQ room for two extension WRs. */
static int xz_wait_room(struct xrs *rs)
{
	if (xz_room(rs))
		return 0;
	return xrs_get_comp(rs, false, xz_room);
}

static void xz_fill_xmsg(struct ibv_send_wr *wr, struct ibv_sge *sge,
			 struct xrs_xmsg *x, unsigned int op, uint32_t data,
			 uint32_t aux, uint64_t addr, uint32_t stag, uint32_t len)
{
	xrs_xmsg_format(x, op, data, aux, addr, stag, len);
	sge->addr = (uintptr_t)x;
	sge->length = sizeof(*x);
	sge->lkey = 0;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = xrs_wr_id(XRS_WR_XZ_MSG, op);
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	wr->send_flags = IBV_SEND_INLINE;
}

static int xz_post(struct xrs *rs, struct ibv_send_wr *wr, int nwr)
{
	struct ibv_send_wr *bad;
	int ret;

	xz_inflight(rs, nwr);
	ret = ibv_post_send(rs->cm_id->qp, wr, &bad);
	if (ret) {
		xz_inflight(rs, -nwr);
		return xrs_err(ret);
	}
	return 0;
}

static int xz_post_xmsg(struct xrs *rs, unsigned int op, uint32_t data,
			uint32_t aux, uint64_t addr, uint32_t stag, uint32_t len)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct xrs_xmsg x;

	if (xz_wait_room(rs))
		return -1;
	xz_fill_xmsg(&wr, &sge, &x, op, data, aux, addr, stag, len);
	return xz_post(rs, &wr, 1);
}

static int xz_post_ctrl(struct xrs *rs, unsigned int sub, uint16_t id,
			uint32_t aux)
{
	return xz_post_xmsg(rs, XRS_OP_XZ_CTRL, ((uint32_t)sub << 16) | id, aux,
			    0, 0, 0);
}

/* Advance an iovec cursor by @n bytes (within the current segment). */
static void xz_advance(const struct iovec **iov, size_t *off, size_t n)
{
	*off += n;
	if (*off == (*iov)->iov_len) {
		(*iov)++;
		*off = 0;
	}
}

/* ------------------------------------------------- completions (CQ) --- */

/** xrs_zc_send_done() - an extension WR completed. cq_lock held. */
void xrs_zc_send_done(struct xrs *rs, const struct ibv_wc *wc)
{
	struct xrs_zc *z = &rs->zc;
	unsigned int kind = xrs_wr_kind(wc->wr_id);

	xz_inflight(rs, -1);
	if (kind == XRS_WR_XZ_READ) {
		z->rd_state = wc->status == IBV_WC_SUCCESS ? XRS_ZW_DONE : XRS_ZW_ERR;
	} else if (kind == XRS_WR_XZ_WRITE) {
		z->wr_done++;
		if (wc->status != IBV_WC_SUCCESS)
			z->wr_err = true;
		/* staged (non-blocking) writes used the staging ring */
		xrs_cnt_add(&rs->sbuf_bytes_avail, xrs_wr_low(wc->wr_id));
	}
}

/*
 * Wait until @test holds or the connection is gone. Signals do not end
 * the wait: the peer may still read or write the registered buffer.
 */
static void xz_wait(struct xrs *rs, xrs_test_fn test)
{
	while (xrs_get_comp(rs, false, test) && errno == EINTR)
		;
}

static int xz_rx_srcavail(struct xrs *rs, const struct xrs_msg *m)
{
	struct xrs_rmsg first = { .op = XRS_OP_DATA, .data = m->aux };
	struct xrs_rmsg sa = {
		.op = XRS_OP_XZ_SRCAVAIL, .data = m->len, .id = m->id,
		.credit = true, .addr = m->addr, .stag = m->stag,
	};

	if (m->aux > rs->rbuf_size - xrs_cnt_get(&rs->rbuf_unread))
		return -EPROTO;
	if (m->aux) {
		if (xrs_rmsg_push(rs, &first))
			return -EPROTO;
		xrs_cnt_add(&rs->rbuf_unread, m->aux);
	}
	rs->zc.recv_msgs++;
	rs->zc.st.srcavail_rx++;
	xrs_cnt_add(&rs->zc.rx_srcavail, 1);
	sa.t_ns = xrs_now_ns();
	xrs_zpol_on_srcavail(&rs->zc.pol);
	return xrs_rmsg_push(rs, &sa);
}

static void xz_rx_sinkavail(struct xrs *rs, const struct xrs_msg *m)
{
	struct xrs_zc *z = &rs->zc;

	/* checked against what we sent when a send looks at it (slock) */
	z->sink_pending = true;
	z->sink_id = m->id;
	z->sink_seq = m->aux;
	z->sink_addr = m->addr;
	z->sink_stag = m->stag;
	z->sink_len = m->len;
	z->st.sinkavail_rx++;
	xrs_zpol_on_sinkavail(&z->pol);
}

static int xz_rx_ctrl(struct xrs *rs, const struct xrs_msg *m)
{
	struct xrs_zc *z = &rs->zc;
	struct xrs_rmsg wc = {
		.op = XRS_RMSG_WRCOMPL, .data = m->aux, .id = m->id, .credit = true,
	};

	if (m->sub == XRS_XZ_WRCOMPL) {
		z->recv_msgs++;
		return xrs_rmsg_push(rs, &wc);
	}
	/* RDCOMPL / SENDSM answer our SrcAvail: only the current one */
	if (z->src_state != XRS_ZS_WAIT || m->id != z->src_id)
		return -EPROTO;
	z->src_read = m->aux;
	z->src_state = m->sub == XRS_XZ_RDCOMPL ? XRS_ZS_RDCOMPL : XRS_ZS_SENDSM;
	return 0;
}

/**
 * xrs_zc_rx_msg() - an extension message arrived. cq_lock held.
 * Return: 0, or -EPROTO (the caller closes the connection).
 */
int xrs_zc_rx_msg(struct xrs *rs, const struct xrs_msg *m)
{
	switch (m->op) {
	case XRS_OP_XZ_SRCAVAIL:
		return xz_rx_srcavail(rs, m);
	case XRS_OP_XZ_SINKAVAIL:
		xz_rx_sinkavail(rs, m);
		return 0;
	case XRS_OP_XZ_CTRL:
		return xz_rx_ctrl(rs, m);
	default:
		return -EPROTO;
	}
}

/* ------------------------------------------------------------ source --- */

/*
 * Our WRITEs into the peer's sink buffers have completed (or flushed).
 * Not "or the connection is gone": the peer's DISCONNECT, sent after it
 * took the data and our WRCOMPL, can arrive before the WRITE's own
 * completion (in ack mode that waits for the TCP ACK); leaving then
 * reported ECONNRESET for bytes the peer had (fork-after-accept under
 * ASan, 2 runs in 10), and dropped the MR under a WR still in flight.
 * The completion always comes: success, or a flush once the QP fails.
 */
static bool xz_write_done(struct xrs *rs)
{
	return rs->zc.wr_done == rs->zc.wr_seq;
}

static bool xz_src_done(struct xrs *rs)
{
	return rs->zc.src_state != XRS_ZS_WAIT || !(rs->state & xrs_connected);
}

static bool xz_src_done_or_srcavail(struct xrs *rs)
{
	return xz_src_done(rs) || xrs_cnt_get(&rs->zc.rx_srcavail);
}

/*
 * Wait for the sink's answer. Meanwhile take the peer's own SrcAvails
 * into library memory: a peer blocked in a zero-copy send to us while we
 * block in one to it would wait for ever (TCP buffers would have taken
 * both sends).
 */
static void xz_wait_src(struct xrs *rs)
{
	while (!xz_src_done(rs)) {
		xrs_zc_serve(rs, 0);
		if (xrs_get_comp(rs, false, xz_src_done_or_srcavail) &&
		    errno != EINTR)
			break;
	}
}

static bool xz_credit(struct xrs *rs)
{
	return rs->sseq_no != xrs_cnt_get(&rs->sseq_comp) || !(rs->state & xrs_writable);
}

/* A pending SinkAvail we may still use (nothing sent since). */
static bool xz_take_sinkavail(struct xrs *rs, uint64_t *addr, uint32_t *stag,
			      uint32_t *len, uint16_t *id)
{
	struct xrs_zc *z = &rs->zc;
	bool ok;

	pthread_mutex_lock(&rs->cq_lock);
	ok = z->sink_pending && z->sink_seq == z->sent_msgs;
	if (z->sink_pending && !ok)
		z->st.sink_stale++;
	if (ok) {
		*addr = z->sink_addr;
		*stag = z->sink_stag;
		*len = z->sink_len;
		*id = z->sink_id;
	}
	z->sink_pending = false;
	pthread_mutex_unlock(&rs->cq_lock);
	return ok;
}

/*
 * Write ZCopy: @n bytes from the cursor into the reader's buffer, then
 * WRCOMPL. Blocking callers write from their own buffer and wait for the
 * local completion; non-blocking ones go through the staging ring.
 */
static ssize_t xz_write_sink(struct xrs *rs, const struct iovec **iov,
			     size_t *off, size_t n, bool nonblock,
			     uint64_t addr, uint32_t stag, uint16_t id)
{
	struct ibv_send_wr w, s;
	struct ibv_sge sgl[2], xs;
	struct xrs_xmsg x;
	struct ibv_mr *mr = NULL;
	uint32_t staged = 0;
	int nsge = 1;

	if (nonblock) {
		uint32_t avail = xrs_cnt_get(&rs->sbuf_bytes_avail);

		if (avail < XRS_SNDLOWAT)
			return 0;
		if (n > avail)
			n = avail;
		staged = (uint32_t)n;
		xrs_sbuf_copy_in(rs, iov, off, staged, sgl, &nsge);
		xrs_cnt_sub(&rs->sbuf_bytes_avail, staged);
	} else {
		void *p = (uint8_t *)(*iov)->iov_base + *off;

		mr = ibv_reg_mr(rs->cm_id->pd, p, n, IBV_ACCESS_LOCAL_WRITE);
		if (!mr)
			return 0;	/* buffer copy instead */
		sgl[0].addr = (uintptr_t)p;
		sgl[0].length = (uint32_t)n;
		sgl[0].lkey = mr->lkey;
	}
	memset(&w, 0, sizeof(w));
	w.wr_id = xrs_wr_id(XRS_WR_XZ_WRITE, staged);
	w.sg_list = sgl;
	w.num_sge = nsge;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.wr.rdma.remote_addr = addr;
	w.wr.rdma.rkey = stag;
	xz_fill_xmsg(&s, &xs, &x, XRS_OP_XZ_CTRL,
		     ((uint32_t)XRS_XZ_WRCOMPL << 16) | id, (uint32_t)n, 0, 0, 0);
	w.next = &s;
	rs->zc.wr_seq++;
	rs->sseq_no++;
	rs->zc.sent_msgs++;
	if (xz_post(rs, &w, 2)) {
		if (mr)
			ibv_dereg_mr(mr);
		return -1;
	}
	rs->zc.st.wrcompl_tx++;
	rs->zc.st.bytes_zc_out += n;
	if (!mr)
		return (ssize_t)n;
	xz_wait(rs, xz_write_done);
	ibv_dereg_mr(mr);
	if (rs->zc.wr_done != rs->zc.wr_seq || rs->zc.wr_err)
		return xrs_err(rs->err ? rs->err : ECONNRESET);
	xz_advance(iov, off, n);
	return (ssize_t)n;
}

/* Copy the first @f bytes into the peer's receive buffer (no message). */
static int xz_first_piece(struct xrs *rs, const struct iovec **iov, size_t *off,
			  uint32_t f, struct ibv_send_wr *w, struct ibv_sge sgl[2])
{
	volatile struct xrs_sge *t = &rs->target_sgl[rs->target_sge];
	int nsge;

	xrs_sbuf_copy_in(rs, iov, off, f, sgl, &nsge);
	memset(w, 0, sizeof(*w));
	w->wr_id = xrs_wr_id(XRS_WR_DATA, f);
	w->sg_list = sgl;
	w->num_sge = nsge;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->send_flags = f <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	w->wr.rdma.remote_addr = t->addr;
	w->wr.rdma.rkey = t->key;
	t->addr = t->addr + f;
	t->length = t->length - f;
	if (!t->length && ++rs->target_sge == XRS_SGL_SIZE)
		rs->target_sge = 0;
	xrs_cnt_sub(&rs->sqe_avail, 1);
	xrs_cnt_sub(&rs->sbuf_bytes_avail, f);
	return 0;
}

/* The SrcAvail answer: how many bytes of the transfer are done. */
static ssize_t xz_src_result(struct xrs *rs, const struct iovec **iov,
			     size_t *off, uint32_t f, uint32_t r)
{
	struct xrs_zc *z = &rs->zc;
	uint32_t k;

	switch (z->src_state) {
	case XRS_ZS_RDCOMPL:
		k = r;
		z->st.rdcompl_rx++;
		break;
	case XRS_ZS_SENDSM:
		k = z->src_read < r ? z->src_read : r;
		z->bcopy_left = r - k;
		z->st.sendsm_rx++;
		xrs_zpol_on_sendsm(&z->pol);
		break;
	default:	/* the connection went away */
		z->src_state = XRS_ZS_IDLE;
		return f ? (ssize_t)f : xrs_err(rs->err ? rs->err : EPIPE);
	}
	z->src_state = XRS_ZS_IDLE;
	z->st.bytes_zc_out += k;
	if (k)
		xz_advance(iov, off, k);
	return (ssize_t)(f + k);
}

/*
 * Read ZCopy: the first piece by copy with the SrcAvail for the rest of
 * the current iovec segment, then wait for RDCOMPL or SendSm.
 */
static ssize_t xz_srcavail(struct xrs *rs, const struct iovec **iov,
			   size_t *off, size_t n)
{
	struct ibv_send_wr w, s;
	struct ibv_sge sgl[2], xs;
	struct xrs_xmsg x;
	struct ibv_mr *mr;
	uint32_t f = XRS_XZ_FIRST, r, tlen, avail;
	uint8_t *p;

	if (!xrs_can_send(rs) && xrs_get_comp(rs, false, xrs_conn_can_send))
		return -1;
	if (!(rs->state & xrs_writable))
		return xrs_err(rs->err ? rs->err : EPIPE);
	tlen = rs->target_sgl[rs->target_sge].length;
	if (f > tlen)
		f = tlen;
	avail = xrs_cnt_get(&rs->sbuf_bytes_avail);
	if (f > avail)
		f = avail;
	if (n > XRS_XZ_MAX)
		n = XRS_XZ_MAX;
	if (!f || n - f < XRS_ZP_MIN)
		return 0;
	r = (uint32_t)(n - f);
	p = (uint8_t *)(*iov)->iov_base + *off + f;
	mr = ibv_reg_mr(rs->cm_id->pd, p, r, IBV_ACCESS_REMOTE_READ);
	if (!mr)
		return 0;
	xz_first_piece(rs, iov, off, f, &w, sgl);
	rs->zc.src_id++;
	rs->zc.st.srcavail_tx++;
	rs->zc.src_state = XRS_ZS_WAIT;
	rs->zc.src_read = 0;
	xz_fill_xmsg(&s, &xs, &x, XRS_OP_XZ_SRCAVAIL, rs->zc.src_id, f,
		     (uintptr_t)p, mr->rkey, r);
	w.next = &s;
	rs->sseq_no++;
	rs->zc.sent_msgs++;
	rs->zc.st.bytes_bcopy += f;
	/* the first piece's WRITE is data accounting, the SEND ours */
	xz_inflight(rs, 1);
	{
		struct ibv_send_wr *bad;
		int ret = ibv_post_send(rs->cm_id->qp, &w, &bad);

		if (ret) {
			xz_inflight(rs, -1);
			ibv_dereg_mr(mr);
			rs->zc.src_state = XRS_ZS_IDLE;
			return xrs_err(ret);
		}
	}
	xz_wait_src(rs);
	ibv_dereg_mr(mr);
	return xz_src_result(rs, iov, off, f, r);
}

/**
 * xrs_zc_try_send() - move the next bytes zero-copy if the policy says so.
 * slock held. *used: something was sent this way.
 * Return: bytes sent (0: use buffer copy), or -1 with errno.
 */
ssize_t xrs_zc_try_send(struct xrs *rs, const struct iovec **iov,
			size_t *off, size_t left, int flags, bool *used)
{
	struct xrs_zc *z = &rs->zc;
	bool nonblock = xrs_nonblocking(rs, flags);
	size_t seg = (*iov)->iov_len - *off, n = left < seg ? left : seg;
	uint64_t addr;
	uint32_t stag, slen;
	uint16_t id;
	ssize_t ret;

	*used = false;
	if (z->bcopy_left || !xrs_zpol_src_zcopy(&z->pol, left) || n < XRS_ZP_MIN)
		return 0;
	if (xz_wait_room(rs))
		return -1;
	/* a SinkAvail may be waiting in the CQ */
	xrs_process_cq(rs, true, xrs_test_true);
	if (xz_take_sinkavail(rs, &addr, &stag, &slen, &id)) {
		if (!xz_credit(rs) && (nonblock || xrs_get_comp(rs, false, xz_credit)))
			return nonblock ? 0 : -1;
		if (!(rs->state & xrs_writable))
			return xrs_err(rs->err ? rs->err : EPIPE);
		ret = xz_write_sink(rs, iov, off, n < slen ? n : slen, nonblock,
				    addr, stag, id);
	} else if (xrs_zpol_srcavail_ok(nonblock, rs->sndtimeo_ms != 0 &&
					rs->sndtimeo_ms < XRS_XZ_LONG_TIMEOUT_MS)) {
		ret = xz_srcavail(rs, iov, off, n);
	} else {
		return 0;
	}
	*used = ret > 0;
	return ret;
}

/** xrs_zc_bcopy_sent() - @n bytes went by copy (after a SendSm). */
void xrs_zc_bcopy_sent(struct xrs *rs, size_t n)
{
	struct xrs_zc *z = &rs->zc;

	z->bcopy_left = n >= z->bcopy_left ? 0 : z->bcopy_left - n;
}

/* -------------------------------------------------------------- sink --- */

static bool xz_read_done(struct xrs *rs)
{
	return rs->zc.rd_state != XRS_ZW_BUSY || !(rs->state & xrs_connected);
}

/**
 * xrs_zc_recv_srcavail() - the SrcAvail @m is at the head of the ring:
 * RDMA READ as much as the caller's current iovec segment takes, or ask
 * for the rest by copy (SendSm; always for @peek). rlock held.
 * Return: bytes read (0: none, the ring moved on), or -1 with errno.
 */
ssize_t xrs_zc_recv_srcavail(struct xrs *rs, struct xrs_rmsg *m,
			     const struct iovec **iov, size_t *off,
			     size_t left, int flags, bool peek)
{
	struct xrs_zc *z = &rs->zc;
	struct ibv_send_wr w, *bad;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	size_t seg = (*iov)->iov_len - *off, n;
	uint8_t *p = (uint8_t *)(*iov)->iov_base + *off;
	int ret;

	(void)flags;
	if (seg > left)
		seg = left;
	if (peek || !xrs_zpol_read(&z->pol, seg, m->data)) {
		if (xz_post_ctrl(rs, XRS_XZ_SENDSM, m->id, m->done))
			return -1;
		z->st.sendsm_tx++;
		xrs_cnt_sub(&z->rx_srcavail, 1);
		xrs_rmsg_consume(rs);
		return 0;
	}
	n = seg < m->data ? seg : m->data;
	mr = ibv_reg_mr(rs->cm_id->pd, p, n, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || xz_wait_room(rs)) {
		if (mr)
			ibv_dereg_mr(mr);
		return -1;
	}
	sge.addr = (uintptr_t)p;
	sge.length = (uint32_t)n;
	sge.lkey = mr->lkey;
	memset(&w, 0, sizeof(w));
	w.wr_id = xrs_wr_id(XRS_WR_XZ_READ, 0);
	w.sg_list = &sge;
	w.num_sge = 1;
	w.opcode = IBV_WR_RDMA_READ;
	w.wr.rdma.remote_addr = m->addr + m->done;
	w.wr.rdma.rkey = m->stag;
	z->rd_state = XRS_ZW_BUSY;
	xz_inflight(rs, 1);
	ret = ibv_post_send(rs->cm_id->qp, &w, &bad);
	if (ret) {
		xz_inflight(rs, -1);
		ibv_dereg_mr(mr);
		return xrs_err(ret);
	}
	/* served by the peer's engine, not its application: bounded wait */
	xz_wait(rs, xz_read_done);
	ibv_dereg_mr(mr);
	if (z->rd_state != XRS_ZW_DONE)
		return xrs_err(rs->err ? rs->err : ECONNRESET);
	m->done += (uint32_t)n;
	m->data -= (uint32_t)n;
	z->st.bytes_zc_in += n;
	xz_advance(iov, off, n);
	if (!m->data) {
		xrs_cnt_sub(&z->rx_srcavail, 1);
		z->st.rdcompl_tx++;
		if (xz_post_ctrl(rs, XRS_XZ_RDCOMPL, m->id, m->done))
			return -1;
		xrs_rmsg_consume(rs);
	}
	return (ssize_t)n;
}

/* ------------------------------------------------------------- stash --- */

/* READ what is left of SrcAvail @m into library memory; RDCOMPL. rlock. */
static int xz_stash(struct xrs *rs, struct xrs_rmsg *m)
{
	struct xrs_zc *z = &rs->zc;
	struct ibv_send_wr w, *bad;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	uint8_t *buf = malloc(m->data);
	int ret;

	if (!buf)
		return -ENOMEM;
	mr = ibv_reg_mr(rs->cm_id->pd, buf, m->data, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || xz_wait_room(rs)) {
		if (mr)
			ibv_dereg_mr(mr);
		free(buf);
		return -ENOMEM;
	}
	sge.addr = (uintptr_t)buf;
	sge.length = m->data;
	sge.lkey = mr->lkey;
	memset(&w, 0, sizeof(w));
	w.wr_id = xrs_wr_id(XRS_WR_XZ_READ, 0);
	w.sg_list = &sge;
	w.num_sge = 1;
	w.opcode = IBV_WR_RDMA_READ;
	w.wr.rdma.remote_addr = m->addr + m->done;
	w.wr.rdma.rkey = m->stag;
	z->rd_state = XRS_ZW_BUSY;
	xz_inflight(rs, 1);
	ret = ibv_post_send(rs->cm_id->qp, &w, &bad);
	if (ret) {
		xz_inflight(rs, -1);
		ibv_dereg_mr(mr);
		free(buf);
		return -ret;
	}
	xz_wait(rs, xz_read_done);
	ibv_dereg_mr(mr);
	if (z->rd_state != XRS_ZW_DONE) {
		free(buf);
		return -ECONNRESET;
	}
	xz_post_ctrl(rs, XRS_XZ_RDCOMPL, m->id, m->done + m->data);
	z->st.bytes_stash += m->data;
	z->st.stash++;
	xrs_cnt_sub(&z->rx_srcavail, 1);
	m->op = XRS_RMSG_STASH;
	m->stash = buf;
	m->done = 0;
	return 0;
}

/**
 * xrs_zc_serve() - a thread that waits (a blocked send, a poller) takes
 * the SrcAvails no reader took within @min_age_ns into library memory and
 * answers them, so their sources move on. Skipped while a reader is in.
 */
void xrs_zc_serve(struct xrs *rs, int64_t min_age_ns)
{
	int64_t now;

	if (!rs->zc.on || !xrs_cnt_get(&rs->zc.rx_srcavail) || pthread_mutex_trylock(&rs->rlock))
		return;
	now = xrs_now_ns();
	for (uint32_t i = rs->rmsg_head; i != xrs_cnt_get(&rs->rmsg_tail);
	     i = i + 1 == rs->rmsg_size ? 0 : i + 1) {
		struct xrs_rmsg *m = &rs->rmsg[i];

		if (m->op != XRS_OP_XZ_SRCAVAIL || now - m->t_ns < min_age_ns)
			continue;
		if (xz_stash(rs, m))
			break;
	}
	pthread_mutex_unlock(&rs->rlock);
}

/** xrs_zc_take_stash() - copy out of a stashed SrcAvail. rlock held. */
size_t xrs_zc_take_stash(struct xrs *rs, struct xrs_rmsg *m,
			 const struct iovec **iov, size_t *off, size_t left)
{
	size_t got = 0;

	while (left > got && m->data) {
		size_t n = (*iov)->iov_len - *off;

		if (n > m->data)
			n = m->data;
		if (n > left - got)
			n = left - got;
		memcpy((uint8_t *)(*iov)->iov_base + *off, m->stash + m->done, n);
		m->done += (uint32_t)n;
		m->data -= (uint32_t)n;
		got += n;
		xz_advance(iov, off, n);
	}
	if (!m->data) {
		free(m->stash);
		m->stash = NULL;
		xrs_rmsg_consume(rs);
	}
	return got;
}

static bool xz_sink_wait(struct xrs *rs)
{
	return xrs_conn_have_rdata(rs) || (rs->state & xrs_error);
}

/* What ended our SinkAvail: the WRCOMPL for it, or something else. */
static ssize_t xz_sink_result(struct xrs *rs, const struct iovec **iov,
			      size_t *off, size_t n)
{
	struct xrs_zc *z = &rs->zc;
	struct xrs_rmsg *h;

	if (!xrs_have_rdata(rs))
		return 0;	/* closed: the peer will not write any more */
	h = &rs->rmsg[rs->rmsg_head];
	if (h->op == XRS_RMSG_WRCOMPL && h->id == z->my_sink_id) {
		if (h->data > n)
			return xrs_err(EPROTO);
		n = h->data;
		z->st.wrcompl_rx++;
		xrs_rmsg_consume(rs);
		z->st.bytes_zc_in += n;
		xz_advance(iov, off, n);
		return (ssize_t)n;
	}
	/* the source sent something else first: it drops our SinkAvail */
	z->st.sink_wasted++;
	if (h->op == XRS_OP_DATA)
		xrs_zpol_on_sink_wasted(&z->pol);
	return 0;
}

/* xrs_p_sink_hook(): tests act inside the window of the race below */
static struct {
	void (*fn)(void *arg);
	void *arg;
} sink_hook;

void xrs_p_sink_hook(void (*fn)(void *arg), void *arg)
{
	sink_hook.arg = arg;
	__atomic_store_n(&sink_hook.fn, fn, __ATOMIC_RELEASE);
}

static void xz_sink_test_hook(void)
{
	void (*fn)(void *) = __atomic_load_n(&sink_hook.fn, __ATOMIC_ACQUIRE);

	if (fn)
		fn(sink_hook.arg);
}

/**
 * xrs_zc_try_sinkavail() - nothing is queued and the caller blocks: post
 * its buffer (the current iovec segment) as a SinkAvail and wait.
 * rlock held. Return: bytes the peer wrote there (0: it did not; take
 * what arrived instead), or -1 with errno.
 */
ssize_t xrs_zc_try_sinkavail(struct xrs *rs, const struct iovec **iov,
			     size_t *off, size_t left, int flags)
{
	struct xrs_zc *z = &rs->zc;
	size_t n = (*iov)->iov_len - *off;
	uint8_t *p = (uint8_t *)(*iov)->iov_base + *off;
	struct ibv_mr *mr;
	uint32_t aux;
	bool queued;
	ssize_t ret;

	if (n > left)
		n = left;
	if (n > 0x7FFFFFFFu)
		n = 0x7FFFFFFFu;
	if ((flags & MSG_PEEK) ||
	    !xrs_zpol_post_sinkavail(&z->pol, n, xrs_nonblocking(rs, flags),
				     rs->rcvtimeo_ms != 0))
		return 0;
	mr = ibv_reg_mr(rs->cm_id->pd, p, n,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		return 0;
	xz_sink_test_hook();
	/*
	 * aux must count exactly the messages we have consumed. Our caller
	 * found nothing queued, but another thread polling the CQ (a sender
	 * on this socket) may have queued one since: counted in recv_msgs,
	 * so the source, having sent nothing after it, would WRITE into this
	 * buffer, while we would take that message as "sent first" and drop
	 * the buffer under the WRITE (TERMINATE: invalid STag). Look again
	 * under cq_lock, where messages are counted and queued together.
	 */
	pthread_mutex_lock(&rs->cq_lock);
	queued = xrs_have_rdata(rs);
	aux = z->recv_msgs;
	pthread_mutex_unlock(&rs->cq_lock);
	if (queued) {
		ibv_dereg_mr(mr);
		return 0;
	}
	z->my_sink_id++;
	if (xz_post_xmsg(rs, XRS_OP_XZ_SINKAVAIL, z->my_sink_id, aux,
			 (uintptr_t)p, mr->rkey, (uint32_t)n)) {
		ibv_dereg_mr(mr);
		return -1;
	}
	z->st.sinkavail_tx++;
	xz_wait(rs, xz_sink_wait);
	ret = xz_sink_result(rs, iov, off, n);
	ibv_dereg_mr(mr);
	return ret;
}

/**
 * xrs_zc_shutdown() - wake threads that sleep on the socket so they see
 * the new state (a blocked SinkAvail reader gives its buffer back).
 */
void xrs_zc_shutdown(struct xrs *rs)
{
	static const uint64_t marker;

	if (rs->bfd >= 0 && xrs_sys_write(rs->bfd, &marker, sizeof(marker)) < 0)
		return;
}
