// SPDX-License-Identifier: MIT
/*
 * rsockets: the completion queue - posting messages, taking completions
 * (received messages, send completions), receive-buffer credits, and
 * waiting for progress (spin, then arm the CQ and sleep on the socket's
 * fd A, which the completion channel makes readable).
 *
 * Credits (rdma-core 44, the peer relies on them): the sender may have
 * (sseq_comp - sseq_no) data messages in flight; the receiver raises
 * sseq_comp with RS_OP_SGL once half its receive WRs or half its receive
 * buffer are consumed, and hands over the free half of its receive buffer
 * in the same update (RDMA WRITE of an SGL entry into the sender's array).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include "xiwarp/xiwarp.h"
#include "xrs_int.h"

bool xrs_nonblocking(struct xrs *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* ---------------------------------------------------------- posting --- */

static int xrs_post(struct xrs *rs, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int ret = ibv_post_send(rs->cm_id->qp, wr, &bad);

	return ret ? xrs_err(ret) : 0;
}

/* The message word as a 4-byte inline SEND (iWARP: no WRITE_WITH_IMM). */
static void xrs_msg_wr(struct ibv_send_wr *wr, struct ibv_sge *sge,
		       const uint32_t *msg, uint64_t wr_id)
{
	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)msg;
	sge->length = sizeof(*msg);
	sge->lkey = 0;
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	wr->send_flags = IBV_SEND_INLINE;
}

/** xrs_post_msg() - a control message (credit limit, CTRL). */
int xrs_post_msg(struct xrs *rs, uint32_t msg)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	xrs_msg_wr(&wr, &sge, &msg, xrs_wr_id(XRS_WR_CTRL, msg));
	return xrs_post(rs, &wr);
}

static void xrs_write_wr(struct ibv_send_wr *wr, struct ibv_sge *sgl, int nsge,
			 uint64_t wr_id, int flags, uint64_t addr, uint32_t rkey)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sgl;
	wr->num_sge = nsge;
	wr->opcode = IBV_WR_RDMA_WRITE;
	wr->send_flags = flags;
	wr->wr.rdma.remote_addr = addr;
	wr->wr.rdma.rkey = rkey;
}

/** xrs_post_write() - an RDMA WRITE without message (riowrite). */
int xrs_post_write(struct xrs *rs, struct ibv_sge *sgl, int nsge,
		   uint64_t wr_id, int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr;

	xrs_write_wr(&wr, sgl, nsge, wr_id, flags, addr, rkey);
	return xrs_post(rs, &wr);
}

/*
 * RDMA WRITE then the message as a SEND, posted as one chain so the
 * engine can frame both in one go. The SEND's id: data messages count a
 * send slot, control messages a control slot (xrs_tx_done).
 */
int xrs_post_write_msg(struct xrs *rs, struct ibv_sge *sgl, int nsge,
		       uint32_t msg, uint64_t wr_id, int flags,
		       uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr w, s;
	struct ibv_sge sge;
	unsigned int kind = xrs_wr_kind(wr_id);
	unsigned int mkind = kind == XRS_WR_DATA || kind == XRS_WR_DATA_USER ?
			     XRS_WR_DATA_MSG :
			     kind == XRS_WR_IOMAP ? XRS_WR_IOMAP_MSG : kind;

	xrs_write_wr(&w, sgl, nsge, wr_id, flags, addr, rkey);
	xrs_msg_wr(&s, &sge, &msg, xrs_wr_id(mkind, msg));
	w.next = &s;
	return xrs_post(rs, &w);
}

/* ---------------------------------------------------------- credits --- */

bool xrs_ctrl_avail(struct xrs *rs)
{
	return xrs_cnt_get(&rs->ctrl_seqno) != xrs_cnt_get(&rs->ctrl_max_seqno);
}

bool xrs_ctrl_avail_or_closed(struct xrs *rs)
{
	return xrs_ctrl_avail(rs) || !(rs->state & xrs_connected);
}

/* iWARP credit updates take two WRs (WRITE + SEND) */
static bool xrs_2ctrl_avail(struct xrs *rs)
{
	return (int)((xrs_cnt_get(&rs->ctrl_seqno) + 1) - xrs_cnt_get(&rs->ctrl_max_seqno)) < 0;
}

/*
 * MPA (RFC 5044) lets the initiator send the first FPDU: a responder's
 * FPDU that reaches the initiator before it has taken the MPA reply is a
 * protocol error there (Linux siw resets the stream: rdma-core's rconnect
 * then fails with EINVAL). So an accepted socket returns no credits
 * before the peer's first message; the peer has the first half of our
 * buffer from the private data anyway.
 */
static bool xrs_give_credits(struct xrs *rs)
{
	if (rs->passive && !rs->rx_any)
		return false;
	return ((xrs_cnt_get(&rs->rbuf_bytes_avail) >= (rs->rbuf_size >> 1)) ||
		((int16_t)(xrs_cnt_get(&rs->rseq_no) - rs->rseq_comp) >= 0)) &&
	       (rs->msg_send ? xrs_2ctrl_avail(rs) : xrs_ctrl_avail(rs)) &&
	       (rs->state & xrs_connected);
}

static void xrs_send_credits(struct xrs *rs)
{
	uint32_t half = rs->rbuf_size >> 1;
	uint16_t rseq = xrs_cnt_get(&rs->rseq_no);
	uint32_t msg;
	struct xrs_sge sge;
	struct ibv_sge ib;

	xrs_cnt_add(&rs->ctrl_seqno, 1);
	rs->rseq_comp = rseq + (rs->rq_size >> 1);
	msg = xrs_msg_make(XRS_OP_SGL, (uint16_t)(rseq + rs->rq_size));
	if (xrs_cnt_get(&rs->rbuf_bytes_avail) < half) {
		xrs_post_msg(rs, msg);
		return;
	}
	if (rs->msg_send)
		xrs_cnt_add(&rs->ctrl_seqno, 1);
	xrs_sge_store(&sge, rs->swap, (uintptr_t)&rs->rbuf[rs->rbuf_free_offset],
		      rs->rmr->rkey, half);
	ib.addr = (uintptr_t)&sge;
	ib.length = sizeof(sge);
	ib.lkey = 0;
	xrs_post_write_msg(rs, &ib, 1, msg, xrs_wr_id(XRS_WR_CTRL, msg),
			   IBV_SEND_INLINE,
			   rs->remote_sgl.addr + (uint64_t)rs->remote_sge * sizeof(sge),
			   rs->remote_sgl.key);
	xrs_cnt_sub(&rs->rbuf_bytes_avail, half);
	rs->rbuf_free_offset += half;
	if (rs->rbuf_free_offset >= rs->rbuf_size)
		rs->rbuf_free_offset = 0;
	if (++rs->remote_sge == (int)rs->remote_sgl.length)
		rs->remote_sge = 0;
}

/** xrs_update_credits() - send a credit update if one is due. cq_lock held. */
void xrs_update_credits(struct xrs *rs)
{
	if (xrs_give_credits(rs))
		xrs_send_credits(rs);
}

/* ----------------------------------------------------- completions --- */

/*
 * The rmsg ring has one producer (the CQ side, cq_lock) and one consumer
 * (the reader, rlock), which also edits the head entry in place (a DATA
 * message read in part): the entry is written before @rmsg_tail moves
 * past it (release), and @rmsg_head moves only once it is done with.
 */

/** xrs_rmsg_push() - queue a stream-ordered message for the reader. */
int xrs_rmsg_push(struct xrs *rs, const struct xrs_rmsg *m)
{
	uint32_t tail = rs->rmsg_tail;
	uint32_t next = tail + 1 == rs->rmsg_size ? 0 : tail + 1;

	if (next == __atomic_load_n(&rs->rmsg_head, __ATOMIC_ACQUIRE))
		return -EPROTO;	/* more messages than receive WRs: impossible */
	rs->rmsg[tail] = *m;
	__atomic_store_n(&rs->rmsg_tail, next, __ATOMIC_RELEASE);
	return 0;
}

/* The connection is unusable: a protocol violation or a lost peer. */
static void xrs_conn_lost(struct xrs *rs, int err)
{
	if (!(rs->state & xrs_connected))
		return;
	xiw_log(XIW_LOG_INFO, XRS_PFX "fd %d: connection lost: %s", rs->index,
		strerror(err));
	rs->state = xrs_error | xrs_disconnected;
	rs->err = err;
	rs->peer_closed = true;
}

static void xrs_rx_ctrl(struct xrs *rs, uint32_t data)
{
	switch (data) {
	case XRS_CTRL_DISCONNECT:
		rs->state = xrs_disconnected;
		rs->peer_closed = true;
		break;
	case XRS_CTRL_SHUTDOWN:
		rs->peer_closed = true;
		if (rs->state & xrs_writable)
			rs->state &= ~xrs_readable;
		else
			rs->state = xrs_disconnected;
		break;
	default:		/* KEEPALIVE, and codes we do not know */
		break;
	}
}

/** xrs_rmsg_consume() - the head message is done with; its credit back. */
void xrs_rmsg_consume(struct xrs *rs)
{
	uint32_t head = rs->rmsg_head;

	/* @rseq_no: only the reader writes it, the CQ side reads it */
	if (rs->rmsg[head].credit)
		__atomic_store_n(&rs->rseq_no, (uint16_t)(rs->rseq_no + 1), __ATOMIC_RELEASE);
	/* one store: others read @rmsg_head (xrs_p_nread) */
	__atomic_store_n(&rs->rmsg_head, head + 1 == rs->rmsg_size ? 0 : head + 1,
			 __ATOMIC_RELEASE);
}

static int xrs_rx_data(struct xrs *rs, uint32_t len)
{
	struct xrs_rmsg m = { .op = XRS_OP_DATA, .data = len, .credit = true };

	/* the peer may only write where our credit updates let it */
	if (len > rs->rbuf_size - xrs_cnt_get(&rs->rbuf_unread)) {
		xiw_log(XIW_LOG_WARN, XRS_PFX "fd %d: DATA of %u bytes, but %u of our %u-byte receive buffer are unread and %u not offered",
			rs->index, len, xrs_cnt_get(&rs->rbuf_unread), rs->rbuf_size,
			xrs_cnt_get(&rs->rbuf_bytes_avail));
		return -EPROTO;
	}
	xrs_cnt_add(&rs->rbuf_unread, len);
	rs->zc.recv_msgs++;
	return xrs_rmsg_push(rs, &m);
}

static void xrs_rx_msg(struct xrs *rs, uint32_t idx, uint32_t len)
{
	struct xrs_msg m;
	int ret = 0;

	if (idx >= rs->rq_posted ||
	    xrs_msg_parse(rs->msgbuf + (size_t)idx * XRS_XMSG_SIZE,
			  len > XRS_XMSG_SIZE ? XRS_XMSG_SIZE : len,
			  rs->zc.on, &m)) {
		xiw_log(XIW_LOG_WARN, XRS_PFX "fd %d: malformed message from the peer (%u bytes): closing",
			rs->index, len);
		xrs_conn_lost(rs, EPROTO);
		return;
	}
	rs->rx_any = true;
	switch (m.op) {
	case XRS_OP_DATA:
		ret = xrs_rx_data(rs, m.data);
		break;
	case XRS_OP_SGL:
		__atomic_store_n(&rs->sseq_comp, (uint16_t)m.data, __ATOMIC_RELEASE);
		break;
	case XRS_OP_IOMAP_SGL:
		break;		/* the entry is in our iomap array already */
	case XRS_OP_CTRL:
		xrs_rx_ctrl(rs, m.data);
		break;
	default:
		ret = xrs_zc_rx_msg(rs, &m);
		break;
	}
	if (ret) {
		xiw_log(XIW_LOG_WARN, XRS_PFX "fd %d: protocol violation by the peer (op %u): closing",
			rs->index, m.op);
		xrs_conn_lost(rs, EPROTO);
	}
}

static void xrs_tx_done(struct xrs *rs, const struct ibv_wc *wc)
{
	unsigned int kind = xrs_wr_kind(wc->wr_id);
	uint32_t low = xrs_wr_low(wc->wr_id);

	switch (kind) {
	case XRS_WR_DATA:
	case XRS_WR_IOMAP:
	case XRS_WR_DIRECT:
		xrs_cnt_add(&rs->sqe_avail, 1);
		xrs_cnt_add(&rs->sbuf_bytes_avail, low);
		break;
	case XRS_WR_DATA_USER:
		xrs_cnt_add(&rs->sqe_avail, 1);
		xrs_cnt_add(&rs->direct_done, 1);
		break;
	case XRS_WR_DATA_MSG:
	case XRS_WR_IOMAP_MSG:
		xrs_cnt_add(&rs->sqe_avail, 1);
		break;
	case XRS_WR_CTRL:
		xrs_cnt_add(&rs->ctrl_max_seqno, 1);
		if (xrs_msg_op(low) == XRS_OP_CTRL &&
		    xrs_msg_data(low) == XRS_CTRL_DISCONNECT) {
			rs->disc_done = true;	/* sent or flushed */
			if (wc->opcode == IBV_WC_SEND)
				rs->state = xrs_disconnected;
		}
		break;
	default:
		xrs_zc_send_done(rs, wc);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && (rs->state & xrs_connected)) {
		rs->state = xrs_error;
		rs->err = EIO;
	}
}

/* Take every completion; repost the receive buffers used. cq_lock held. */
static int xrs_poll_cq(struct xrs *rs)
{
	struct ibv_wc wc[16];
	int n, i, rcnt = 0, ret = 0;

	while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (!(wc[i].wr_id & XRS_WR_RECV)) {
				xrs_tx_done(rs, &wc[i]);
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				/* flushed: the stream ended under us */
				rs->peer_closed = true;
				xrs_conn_lost(rs, ECONNRESET);
				continue;
			}
			rcnt++;
			xrs_rx_msg(rs, xrs_wr_low(wc[i].wr_id), wc[i].byte_len);
		}
	}
	if (rs->state & xrs_connected) {
		while (!ret && rcnt--)
			ret = xrs_post_recv(rs);
		if (ret) {
			rs->state = xrs_error;
			rs->err = errno;
		}
	}
	return ret;
}

/* ----------------------------------------------------------- events --- */

/**
 * xrs_drain_events() - empty fd A: count (and acknowledge) the CQ events
 * among its 8-byte records; our own markers are zero.
 */
void xrs_drain_events(struct xrs *rs)
{
	uint64_t rec[32];
	ssize_t n;
	unsigned int ev = 0;

	while ((n = xrs_sys_read(rs->index, rec, sizeof(rec))) > 0) {
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(rec[0]); i++)
			ev += rec[i] != 0;
		if (n < (ssize_t)sizeof(rec))
			break;
	}
	rs->token = false;
	if (!ev)
		return;
	__atomic_store_n(&rs->cq_armed, false, __ATOMIC_RELAXED);
	rs->unack_cqe += ev;
	if (rs->cq && rs->unack_cqe >= 64) {
		ibv_ack_cq_events(rs->cq, rs->unack_cqe);
		rs->unack_cqe = 0;
	}
}

static int64_t xrs_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Sleep until fd A says something happened (or @deadline, ms; <0: none). */
static int xrs_wait_event(struct xrs *rs, int64_t deadline)
{
	int to = -1, n;

	if (deadline >= 0) {
		to = (int)(deadline - xrs_now_ms());
		if (to <= 0)
			return xrs_err(ETIMEDOUT);
	}
	n = xrs_sys_poll1(rs->index, POLLIN, to);
	if (n < 0)
		return -1;	/* EINTR: the caller returns it, as a socket would */
	if (n == 0)
		return xrs_err(ETIMEDOUT);
	xrs_drain_events(rs);
	return 0;
}

static int xrs_process_cq_until(struct xrs *rs, bool nonblock, int64_t deadline,
				xrs_test_fn test)
{
	int ret;

	pthread_mutex_lock(&rs->cq_lock);
	do {
		xrs_update_credits(rs);
		ret = xrs_poll_cq(rs);
		if (test(rs)) {
			ret = 0;
			break;
		} else if (ret) {
			break;
		} else if (nonblock) {
			ret = xrs_err(EWOULDBLOCK);
		} else if (!__atomic_load_n(&rs->cq_armed, __ATOMIC_RELAXED)) {
			ibv_req_notify_cq(rs->cq, 0);
			__atomic_store_n(&rs->cq_armed, true, __ATOMIC_RELAXED);
		} else {
			xrs_update_credits(rs);
			pthread_mutex_lock(&rs->wait_lock);
			if (!__atomic_load_n(&rs->cq_armed, __ATOMIC_RELAXED)) {
				/*
				 * The thread that slept before us took the
				 * event (and disarmed): the CQ may hold what we
				 * wait for, and nothing would wake us. Look
				 * again, re-arm, then sleep.
				 */
				pthread_mutex_unlock(&rs->wait_lock);
				continue;
			}
			pthread_mutex_unlock(&rs->cq_lock);
			ret = xrs_wait_event(rs, deadline);
			pthread_mutex_unlock(&rs->wait_lock);
			pthread_mutex_lock(&rs->cq_lock);
		}
	} while (!ret);
	xrs_update_credits(rs);
	pthread_mutex_unlock(&rs->cq_lock);
	return ret;
}

/**
 * xrs_process_cq() - take completions until @test holds; block unless
 * @nonblock. Return: 0, or -1 with errno (EWOULDBLOCK, EINTR, ...).
 */
int xrs_process_cq(struct xrs *rs, bool nonblock, xrs_test_fn test)
{
	return xrs_process_cq_until(rs, nonblock, -1, test);
}

/**
 * xrs_get_comp_timeout() - as xrs_get_comp, giving up after @timeout_ms
 * (< 0: never) with ETIMEDOUT (SO_RCVTIMEO / SO_SNDTIMEO: EAGAIN is the
 * caller's to report).
 */
int xrs_get_comp_timeout(struct xrs *rs, bool nonblock, int timeout_ms,
			 xrs_test_fn test)
{
	uint32_t spin = xrs_knobs()->spin_us;
	struct timespec s, e;
	int64_t deadline = timeout_ms < 0 ? -1 : xrs_now_ms() + timeout_ms;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &s);
	do {
		ret = xrs_process_cq_until(rs, true, -1, test);
		if (!ret || nonblock || errno != EWOULDBLOCK)
			return ret;
		clock_gettime(CLOCK_MONOTONIC, &e);
	} while ((uint64_t)((e.tv_sec - s.tv_sec) * 1000000000LL +
			    (e.tv_nsec - s.tv_nsec)) < (uint64_t)spin * 1000);
	return xrs_process_cq_until(rs, false, deadline, test);
}

/**
 * xrs_get_comp() - rdma-core's rs_get_comp: poll for XIW_RS_SPIN_US, then
 * block (unless @nonblock) until @test holds.
 */
int xrs_get_comp(struct xrs *rs, bool nonblock, xrs_test_fn test)
{
	return xrs_get_comp_timeout(rs, nonblock, -1, test);
}

/* ---------------------------------------------------------- tests --- */

/*
 * Room to send: send slots (2 per message on iWARP), staging space, a
 * credit and a target buffer. The target SGL may change under us (the
 * peer writes it): read it once.
 */
bool xrs_can_send(struct xrs *rs)
{
	uint32_t tlen = rs->target_sgl ? rs->target_sgl[rs->target_sge].length : 0;

	return xrs_cnt_get(&rs->sqe_avail) >= (rs->msg_send ? 2 : 1) &&
	       xrs_cnt_get(&rs->sbuf_bytes_avail) >= XRS_SNDLOWAT &&
	       rs->sseq_no != xrs_cnt_get(&rs->sseq_comp) && tlen != 0;
}

bool xrs_conn_can_send(struct xrs *rs)
{
	return xrs_can_send(rs) || !(rs->state & xrs_writable);
}

bool xrs_test_true(struct xrs *rs)
{
	(void)rs;
	return true;
}

bool xrs_have_rdata(struct xrs *rs)
{
	return __atomic_load_n(&rs->rmsg_head, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&rs->rmsg_tail, __ATOMIC_ACQUIRE);
}

bool xrs_conn_have_rdata(struct xrs *rs)
{
	return xrs_have_rdata(rs) || !(rs->state & xrs_readable);
}

bool xrs_conn_all_sends_done(struct xrs *rs)
{
	return ((int)(xrs_cnt_get(&rs->ctrl_max_seqno) - xrs_cnt_get(&rs->ctrl_seqno)) + xrs_cnt_get(&rs->sqe_avail) ==
		rs->sq_size && !__atomic_load_n(&rs->zc.inflight, __ATOMIC_RELAXED)) ||
	       !(rs->state & xrs_connected);
}
