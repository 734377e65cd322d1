// SPDX-License-Identifier: MIT
/*
 * QP receive side: the placement callbacks of the receive machine
 * (xiw_rx_ops) and the llp upcalls. The RQ itself is xiw_qp_rq.c.
 *
 * The receive machine (qp->rx, qp->rxs) runs under qp->rx_lock: on the
 * progress thread (llp upcalls) or, for one non-blocking pass, in an app
 * thread polling an empty CQ (xiw_rx_poll, see there). Tagged FPDUs (WRITE, READ response) are checked
 * (STag, PD, access, bounds) before any byte is placed; untagged SENDs go
 * into the RQ head WR at their MO; READ requests queue on the IRQ. Any
 * violation returns an XIW_TERM() code: the caller sends TERMINATE, moves
 * the QP to ERROR and ends the stream (RFC 5040 §5.4, RFC 5041 §7).
 * A SEND that finds no posted receive, or no free CQE slot for its WC
 * (seed 002 credits), makes the receive machine wait and stops reading
 * the socket (TCP flow control) until post_recv or a poll of the receive
 * CQ kicks it.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "xiwarp/wire/mpa.h"
#include "xiw_obj.h"

#define XIW_RX_TXLOCK_SPIN_NS 50000ull	/* spin on tx_lock this long at most */

/*
 * tx_lock for the receive machine. Its holder is mostly a poster inside
 * one sendmsg (on veth the peer's receive softirq runs in it), and the
 * 64 KB ib_read_bw requester's progress thread slept on the futex behind
 * it (rresp_done) for about every second READ, each sleep a wake-up of a
 * vCPU. Spin up to 50 us first (not with one CPU), then sleep as before.
 * With the upcall skip below, 64 KB READs went from a median of 1346 to
 * 2059 MB/s (10 interleaved rounds; 1961 with the spin alone, 1686 with
 * the skip alone).
 */
static void rx_tx_lock(struct xiw_qp *qp)
{
	static int spin = -1;	/* one CPU: the holder needs this one */
	uint64_t t0 = 0;

	if (spin < 0)
		spin = sysconf(_SC_NPROCESSORS_ONLN) > 1;
	if (!spin) {
		pthread_mutex_lock(&qp->tx_lock);
		return;
	}
	for (unsigned int i = 1; pthread_mutex_trylock(&qp->tx_lock); i++) {
		__builtin_ia32_pause();
		if (i % 32)
			continue;
		if (!t0)
			t0 = xiw_now_ns();
		else if (xiw_now_ns() - t0 > XIW_RX_TXLOCK_SPIN_NS) {
			pthread_mutex_lock(&qp->tx_lock);
			return;
		}
	}
}

/* ------------------------------------------------------- placement --- */

/* The sink SGEs of an ORQ entry: its WR's, in the SQ (tx_lock held). */
static const struct ibv_sge *orq_sge(const struct xiw_qp *qp,
				     const struct xiw_orqe *o)
{
	return qp->sq[o->sq_idx & qp->sq_mask].sge;
}

/* Map [off, off+len) of an SGE list to iovecs. Return: count. */
static int sge_map(const struct ibv_sge *sge, uint32_t nsge, uint32_t off,
		   uint32_t len, struct iovec *dst)
{
	int n = 0;

	for (uint32_t i = 0; i < nsge && len; i++) {
		uint32_t take;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		take = sge[i].length - off;
		if (take > len)
			take = len;
		dst[n].iov_base = (uint8_t *)(uintptr_t)sge[i].addr + off;
		dst[n++].iov_len = take;
		len -= take;
		off = 0;
	}
	return n;
}

static int term_tagged(int err)
{
	switch (err) {
	case -ENOENT:
		return XIW_T_DDP_INV_STAG;
	case -EPERM:
		return XIW_T_DDP_STAG_ASSOC;
	case -EACCES:
		return XIW_T_RDMAP_ACCESS;
	case -EOVERFLOW:
		return XIW_T_DDP_TO_WRAP;
	default:
		return XIW_T_DDP_BOUNDS;
	}
}

static int term_rdmap(int err)
{
	switch (err) {
	case -ENOENT:
		return XIW_T_RDMAP_INV_STAG;
	case -EPERM:
		return XIW_T_RDMAP_STAG_ASSOC;
	case -EACCES:
		return XIW_T_RDMAP_ACCESS;
	case -EOVERFLOW:
		return XIW_T_RDMAP_TO_WRAP;
	default:
		return XIW_T_RDMAP_BOUNDS;
	}
}

/* RDMA WRITE (RFC 5040 §4.3): sink STag must allow REMOTE_WRITE. */
static int place_write(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h,
		       struct iovec *dst, int *ndst)
{
	void *p;
	int ret;

	if (!h->payload_len)
		return 0;
	ret = xiw_mr_check(h->stag, qp->pd, IBV_ACCESS_REMOTE_WRITE, h->to,
			   h->payload_len, true, &p);
	if (ret)
		return term_tagged(ret);
	dst[0] = (struct iovec){ .iov_base = p, .iov_len = h->payload_len };
	*ndst = 1;
	return 0;
}

/* READ response: lands in the ORQ head's sink SGEs at TO - sink TO. */
static int place_rresp(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h,
		       struct iovec *dst, int *ndst)
{
	struct xiw_orqe *o;
	int ret = 0;
	uint64_t off;

	rx_tx_lock(qp);
	if (qp->orq_tail == qp->orq_head) {
		ret = XIW_T_RDMAP_UNEXP_OP;
		goto out;
	}
	o = &qp->orq[qp->orq_tail & qp->orq_mask];
	if (o->atomic) {	/* an Atomic Response is due first */
		ret = XIW_T_RDMAP_UNEXP_OP;
		goto out;
	}
	if (!h->payload_len)
		goto out;
	if (h->stag != o->sink_stag) {
		ret = XIW_T_DDP_INV_STAG;
		goto out;
	}
	off = h->to - o->sink_to;
	if (h->to < o->sink_to || off > o->len || h->payload_len > o->len - off) {
		ret = XIW_T_DDP_BOUNDS;
		goto out;
	}
	*ndst = sge_map(orq_sge(qp, o), o->num_sge, (uint32_t)off, h->payload_len, dst);
out:
	xiw_tx_unlock(qp);
	return ret;
}

/*
 * QN 0 message (SEND*, Immediate Data): MSN and MO in sequence, and the RQ
 * head WR taken at its first FPDU (RFC 5041 §5) with a CQE slot reserved
 * for its WC (seed 002). Return: 0, -EAGAIN (no receive posted yet, or
 * the receive CQ is full) or XIW_TERM().
 */
static int untagged_take(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h)
{
	struct xiw_rxstate *r = &qp->rxs;

	if (h->msn != r->msn)
		return XIW_T_DDP_MSN_RANGE;
	if (h->mo != r->mo)
		return XIW_T_DDP_INV_MO;
	if (r->have_rqe)
		return 0;
	if (xiw_rq_take(qp, &r->rqe))
		return -EAGAIN;
	r->have_rqe = true;
	return 0;
}

/* SEND*: into the RQ head WR's SGEs at the message offset. */
static int place_send(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h,
		      struct iovec *dst, int *ndst)
{
	struct xiw_rxstate *r = &qp->rxs;
	int ret = untagged_take(qp, h);

	if (ret)
		return ret;
	if (h->payload_len > r->rqe.len - r->mo)
		return XIW_T_DDP_TOO_LONG;
	*ndst = sge_map(r->rqe.sge, r->rqe.num_sge, r->mo, h->payload_len, dst);
	return 0;
}

/* READ request (RFC 5040 §4.4): in MSN order, within IRD, source valid. */
static int place_rreq(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h)
{
	uint32_t queued;
	int ret;

	if (h->payload_len)
		return XIW_T_RDMAP_UNEXP_OP;
	if (h->msn != qp->rxs.rd_msn)
		return XIW_T_DDP_MSN_RANGE;
	rx_tx_lock(qp);
	queued = qp->irq_head - qp->irq_tail + qp->irq_active;
	xiw_tx_unlock(qp);
	if (queued >= qp->ird)
		return XIW_T_DDP_NO_BUF;	/* beyond IRD: no room on QN 1 */
	if (!h->rd_size)
		return 0;
	ret = xiw_mr_check(h->rd_src_stag, qp->pd, IBV_ACCESS_REMOTE_READ,
			   h->rd_src_to, h->rd_size, true, NULL);
	return ret ? term_rdmap(ret) : 0;
}

/*
 * Atomic Request (RFC 7306 §5.1) on QN 1, in MSN order with the READ
 * requests and within IRD: one FPDU whose 52-octet body lands in
 * rxs.atom; it is checked and executed when complete (atomic_req_done).
 */
static int place_atomic_req(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h,
			    struct iovec *dst, int *ndst)
{
	uint32_t queued;

	if (!h->last || h->payload_len != XIW_ATOMIC_REQ_LEN)
		return XIW_T_RDMAP_UNEXP_OP;
	if (h->msn != qp->rxs.rd_msn)
		return XIW_T_DDP_MSN_RANGE;
	rx_tx_lock(qp);
	queued = qp->irq_head - qp->irq_tail + qp->irq_active;
	xiw_tx_unlock(qp);
	if (queued >= qp->ird)
		return XIW_T_DDP_NO_BUF;
	dst[0] = (struct iovec){ qp->rxs.atom, XIW_ATOMIC_REQ_LEN };
	*ndst = 1;
	return 0;
}

/* Atomic Response (RFC 7306 §5.2) on QN 3: for the ORQ head, an atomic. */
static int place_atomic_resp(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h,
			     struct iovec *dst, int *ndst)
{
	bool ok;

	if (!h->last || h->payload_len != XIW_ATOMIC_RESP_LEN)
		return XIW_T_RDMAP_UNEXP_OP;
	if (h->msn != qp->rxs.atom_msn)
		return XIW_T_DDP_MSN_RANGE;
	rx_tx_lock(qp);
	ok = qp->orq_tail != qp->orq_head &&
	     qp->orq[qp->orq_tail & qp->orq_mask].atomic;
	xiw_tx_unlock(qp);
	if (!ok)
		return XIW_T_RDMAP_UNEXP_OP;
	dst[0] = (struct iovec){ qp->rxs.atom, XIW_ATOMIC_RESP_LEN };
	*ndst = 1;
	return 0;
}

/* TERMINATE payload (copied DDP/RDMAP headers) is read and dropped. */
static int place_discard(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h,
			 struct iovec *dst, int *ndst)
{
	uint32_t len = h->payload_len;
	int n = 0;

	while (len && n < XIW_RX_MAX_DST) {
		uint32_t take = len < sizeof(qp->rxs.discard) ?
				len : sizeof(qp->rxs.discard);

		dst[n].iov_base = qp->rxs.discard;
		dst[n++].iov_len = take;
		len -= take;
	}
	if (len)
		return XIW_T_RDMAP_STREAM_CAT;
	*ndst = n;
	return 0;
}

/* Immediate Data (RFC 7306 §6): 8 octets kept for the RQ WR's WC. */
static int place_imm(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h,
		     struct iovec *dst, int *ndst)
{
	struct xiw_rxstate *r = &qp->rxs;
	int ret = untagged_take(qp, h);

	if (ret)
		return ret;
	if (h->payload_len > XIW_IMM_LEN - r->mo ||
	    (h->last && r->mo + h->payload_len != XIW_IMM_LEN))
		return XIW_T_RDMAP_UNEXP_OP;
	if (h->payload_len) {
		dst[0].iov_base = r->imm + r->mo;
		dst[0].iov_len = h->payload_len;
		*ndst = 1;
	}
	return 0;
}

static bool is_imm(uint8_t op)
{
	return op == XIW_OP_IMM || op == XIW_OP_IMM_SE;
}

static bool is_send(uint8_t op)
{
	return op == XIW_OP_SEND || op == XIW_OP_SEND_INV ||
	       op == XIW_OP_SEND_SE || op == XIW_OP_SEND_SE_INV;
}

/* Passive p2p: the first FPDU must be a zero-length RTR (RFC 6581 §4). */
static int place_rtr(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h)
{
	if (h->opcode == XIW_OP_WRITE && !h->payload_len)
		return 0;
	if (h->opcode == XIW_OP_READ_REQ && !h->rd_size)
		return place_rreq(qp, h);
	if (h->opcode == XIW_OP_SEND && !h->payload_len)
		return h->msn == qp->rxs.msn ? 0 : XIW_T_DDP_MSN_RANGE;
	return XIW_T_RDMAP_UNEXP_OP;
}

static int qp_place(void *arg, const struct xiw_fpdu_hdr *h,
		    struct iovec *dst, int *ndst)
{
	struct xiw_qp *qp = arg;

	*ndst = 0;
	if (qp->rxs.term_got)
		return XIW_T_RDMAP_STREAM_CAT;
	if (h->opcode == XIW_OP_TERMINATE)
		return place_discard(qp, h, dst, ndst);
	if (qp->rtr_wait)
		return place_rtr(qp, h);
	if (h->opcode == XIW_OP_WRITE)
		return place_write(qp, h, dst, ndst);
	if (h->opcode == XIW_OP_READ_RESP)
		return place_rresp(qp, h, dst, ndst);
	if (h->opcode == XIW_OP_READ_REQ)
		return place_rreq(qp, h);
	if (is_send(h->opcode))
		return place_send(qp, h, dst, ndst);
	if (is_imm(h->opcode))
		return place_imm(qp, h, dst, ndst);
	if (h->opcode == XIW_OP_ATOMIC_REQ)
		return place_atomic_req(qp, h, dst, ndst);
	if (h->opcode == XIW_OP_ATOMIC_RESP)
		return place_atomic_resp(qp, h, dst, ndst);
	return XIW_T_RDMAP_UNEXP_OP;
}

/* ----------------------------------------------------- completions --- */

static void rresp_done(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h)
{
	struct xiw_orqe *o;
	struct xiw_sqe *e;

	rx_tx_lock(qp);
	if (qp->orq_tail == qp->orq_head)
		goto out;
	o = &qp->orq[qp->orq_tail & qp->orq_mask];
	o->got += h->payload_len;
	if (!h->last)
		goto out;
	qp->orq_tail++;
	if (!o->rtr && atomic_load(&qp->state) == IBV_QPS_RTS) {
		e = &qp->sq[o->sq_idx & qp->sq_mask];
		e->state = XIW_SQE_DONE;
		xiw_qp_sq_retire(qp);
	}
	qp->rxs.tx_due++;	/* ORD room for queued READs */
out:
	xiw_tx_unlock(qp);
}

static void rreq_done(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h)
{
	struct xiw_irqe *e;

	qp->rxs.rd_msn++;
	rx_tx_lock(qp);
	if (atomic_load(&qp->state) == IBV_QPS_RTS) {
		e = &qp->irq[qp->irq_head++ & qp->irq_mask];
		*e = (struct xiw_irqe){
			.sink_stag = h->rd_sink_stag, .sink_to = h->rd_sink_to,
			.src_stag = h->rd_src_stag, .src_to = h->rd_src_to,
			.len = h->rd_size,
		};
		qp->rxs.tx_due++;	/* respond after this receive burst */
	}
	xiw_tx_unlock(qp);
}

/*
 * Atomic Request complete: check the target (REMOTE_ATOMIC, 8 bytes,
 * aligned; RFC 7306 §5.1), execute it and queue its Response on the IRQ
 * behind the READ responses already due (responses keep request order).
 */
static int atomic_req_done(struct xiw_qp *qp)
{
	const uint8_t *b = qp->rxs.atom;
	uint64_t to = xiw_get_be64(b + 12), orig;
	struct xiw_irqe *e;
	void *p;
	int ret;

	if (!xiw_atomic_valid(b))
		return XIW_T_RDMAP_UNEXP_OP;
	ret = xiw_mr_check(xiw_get_be32(b + 8), qp->pd, IBV_ACCESS_REMOTE_ATOMIC,
			   to, 8, true, &p);
	if (ret)
		return term_rdmap(ret);
	if ((uintptr_t)p & 7)
		return XIW_T_RDMAP_BOUNDS;
	qp->rxs.rd_msn++;
	orig = xiw_atomic_exec(b, p);
	rx_tx_lock(qp);
	if (atomic_load(&qp->state) == IBV_QPS_RTS) {
		e = &qp->irq[qp->irq_head++ & qp->irq_mask];
		memset(e, 0, sizeof(*e));
		e->atomic = true;
		memcpy(e->resp, b + 4, 4);	/* original Request Identifier */
		xiw_put_be64(e->resp + 4, orig);
		qp->rxs.tx_due++;
	}
	xiw_tx_unlock(qp);
	return 0;
}

/* Atomic Response complete: the original value into the WR's buffer. */
static void atomic_resp_done(struct xiw_qp *qp)
{
	struct xiw_orqe *o;
	uint64_t v = xiw_get_be64(qp->rxs.atom + 4);

	qp->rxs.atom_msn++;
	rx_tx_lock(qp);
	if (qp->orq_tail != qp->orq_head) {
		o = &qp->orq[qp->orq_tail++ & qp->orq_mask];
		memcpy((void *)(uintptr_t)orq_sge(qp, o)[0].addr, &v, sizeof(v));
		if (atomic_load(&qp->state) == IBV_QPS_RTS) {
			qp->sq[o->sq_idx & qp->sq_mask].state = XIW_SQE_DONE;
			xiw_qp_sq_retire(qp);
		}
		qp->rxs.tx_due++;	/* ORD room for queued requests */
	}
	xiw_tx_unlock(qp);
}

/* The RQ head WR is done: its WC takes the slot reserved at the start. */
static void recv_complete(struct xiw_qp *qp, struct ibv_wc *wc, bool solicited)
{
	wc->wr_id = qp->rxs.rqe.wr_id;
	wc->status = IBV_WC_SUCCESS;
	wc->qp_num = qp->ibv.qp_num;
	wc->src_qp = qp->ibv.qp_num;
	xiw_rq_complete(qp, wc, solicited);
}

static void untagged_next(struct xiw_rxstate *r)
{
	r->msn++;
	r->mo = 0;
	r->have_rqe = false;
}

/*
 * Immediate Data done (RFC 7306 §6: it consumes an RQ WR of its own).
 * After a WRITE (WRITE_WITH_IMM) the WR completes as RECV_RDMA_WITH_IMM;
 * otherwise (SEND_WITH_IMM: the SEND before it completed its own WR) as
 * RECV with IBV_WC_WITH_IMM and byte_len 0.
 */
static int imm_done(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h)
{
	struct xiw_rxstate *r = &qp->rxs;
	struct ibv_wc wc = {
		.opcode = r->write_seen ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
		.wc_flags = IBV_WC_WITH_IMM,
	};

	r->mo += h->payload_len;
	if (!h->last)
		return 0;
	r->write_seen = false;
	memcpy(&wc.imm_data, r->imm, sizeof(wc.imm_data));
	recv_complete(qp, &wc, h->opcode == XIW_OP_IMM_SE);
	untagged_next(r);
	return 0;
}

/* SEND* FPDU done: advance MO; on the last one invalidate and complete. */
static int send_done(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h)
{
	struct xiw_rxstate *r = &qp->rxs;
	bool inv = h->opcode == XIW_OP_SEND_INV ||
		   h->opcode == XIW_OP_SEND_SE_INV;
	struct ibv_wc wc = { 0 };

	r->mo += h->payload_len;
	if (!h->last)
		return 0;
	if (inv && xiw_mr_invalidate(h->inval_stag, qp->pd))
		return XIW_T_RDMAP_CANT_INVAL;
	r->write_seen = false;
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = r->mo;
	wc.wc_flags = inv ? IBV_WC_WITH_INV : 0;
	wc.invalidated_rkey = inv ? h->inval_stag : 0;
	recv_complete(qp, &wc, h->opcode == XIW_OP_SEND_SE ||
				h->opcode == XIW_OP_SEND_SE_INV);
	untagged_next(r);
	return 0;
}

static int rtr_done(struct xiw_qp *qp, const struct xiw_fpdu_hdr *h)
{
	qp->rtr_wait = false;
	qp->rxs.rtr_got = true;
	if (h->opcode == XIW_OP_READ_REQ)
		rreq_done(qp, h);
	else if (h->opcode == XIW_OP_SEND)
		qp->rxs.msn++;
	return 0;
}

/*
 * Receive staging pays only within a run of small FPDUs (see
 * rx_stage_wanted): an FPDU with a payload of at least this many bytes
 * ends a run. 4 KB FPDUs count as small: read in place they cost one or
 * two recvmsg each (an app pass reads what has arrived), staged four fit
 * in one, and a syscall costs more here than copying 4 KB once more:
 * ib_send_bw -s 4096 went from a median of 592 to 1094 MB/s (4
 * interleaved pairs, all better; 1 KB before), ib_read_bw -s 4096 806 ->
 * 857, 64 KB WRITE unchanged (1237 / 1283).
 */
#define XIW_RX_STAGE_SMALL 4097u	/* payloads up to 4 KB */

static int qp_done(void *arg, const struct xiw_fpdu_hdr *h)
{
	struct xiw_qp *qp = arg;

	if (h->payload_len >= XIW_RX_STAGE_SMALL)
		qp->rx_small_run = 0;
	else if (qp->rx_small_run < UINT8_MAX)
		qp->rx_small_run++;
	if (h->opcode == XIW_OP_TERMINATE) {
		qp->rxs.term_got = true;
		qp->rxs.term_ctrl = h->term_ctrl;
		return 0;
	}
	if (qp->rtr_wait)
		return rtr_done(qp, h);
	switch (h->opcode) {
	case XIW_OP_READ_RESP:
		rresp_done(qp, h);
		return 0;
	case XIW_OP_READ_REQ:
		rreq_done(qp, h);
		return 0;
	case XIW_OP_WRITE:
		qp->rxs.write_seen |= h->last;
		return 0;
	case XIW_OP_IMM:
	case XIW_OP_IMM_SE:
		return imm_done(qp, h);
	case XIW_OP_ATOMIC_REQ:
		return atomic_req_done(qp);
	case XIW_OP_ATOMIC_RESP:
		atomic_resp_done(qp);
		return 0;
	default:
		return send_done(qp, h);
	}
}

/* The transport's record of the FPDU at @off (rx_lock held, in rx_step). */
static int qp_meta(void *arg, uint32_t off, struct xiw_llp_fpdu *out)
{
	struct xiw_qp *qp = arg;

	return qp->rx_llp_cur ? xiw_llp_fpdu_meta(qp->rx_llp_cur, off, out) : 0;
}

static void qp_meta_done(void *arg, enum xiw_llp_meta_res res, uint32_t next_off)
{
	struct xiw_qp *qp = arg;

	if (qp->rx_llp_cur)
		xiw_llp_fpdu_done(qp->rx_llp_cur, res, next_off);
}

const struct xiw_rx_ops xiw_rx_ops_qp = {
	.place = qp_place,
	.done = qp_done,
	.meta = qp_meta,
	.meta_done = qp_meta_done,
};

/**
 * xiw_rx_reset() - fresh receive state for a new stream: MSNs of QN 0 and
 * QN 1 start at 1 (RFC 5041 §5.1), no current RQ WR, receive machine
 * initialised from qp->params. Called with tx_lock held before the QP
 * takes the llp's upcalls.
 */
void xiw_rx_reset(struct xiw_qp *qp)
{
	struct xiw_rxstate *r = &qp->rxs;

	r->msn = r->rd_msn = r->atom_msn = 1;
	r->mo = 0;
	r->have_rqe = false;
	r->term_got = r->rtr_got = false;
	r->write_seen = false;
	r->tx_due = 0;
	qp->rx_stop = false;
	qp->rx_pend_term = qp->rx_pend_err = 0;
	atomic_store(&qp->rx_app_mode, false);
	atomic_store(&qp->rx_app_poll_ns, 0);
	atomic_store(&qp->rx_app_got_ns, 0);
	xiw_rxstage_put(qp->stg);	/* bytes of an earlier stream */
	qp->stg = NULL;
	qp->stg_off = qp->stg_len = 0;
	qp->rx_small_run = 0;
	/* accept any FPDU the 16-bit MPA length allows from the peer */
	xiw_rx_init(&qp->rx, &xiw_rx_ops_qp, qp, qp->params.crc,
		    qp->params.markers_rx, 0xffff);
}

/* ------------------------------------------------------- llp upcalls --- */

static void rx_after_rtr(struct xiw_qp *qp)
{
	struct xiw_cm_conn *conn;

	qp->rxs.rtr_got = false;
	rx_tx_lock(qp);
	qp->tx_hold = false;
	conn = qp->conn;
	xiw_tx_push(qp);
	xiw_tx_unlock(qp);
	if (conn)
		xiw_cm_rtr_received(conn);
}

/*
 * WC status for the WR a peer's TERMINATE refused, from its layer and
 * error type (RFC 5040 §7.2): protection errors (RDMAP remote protection,
 * DDP tagged buffer) are access errors, DDP untagged buffer errors an
 * invalid request, anything else a remote operation error.
 */
static enum ibv_wc_status term_wc_status(uint32_t ctrl)
{
	unsigned int layer = ctrl >> 28, etype = (ctrl >> 24) & 0xf;

	if (etype == 1 && (layer == XIW_TERM_LAYER_RDMAP ||
			   layer == XIW_TERM_LAYER_DDP))
		return IBV_WC_REM_ACCESS_ERR;
	if (etype == 2 && layer == XIW_TERM_LAYER_DDP)
		return IBV_WC_REM_INV_REQ_ERR;
	return IBV_WC_REM_OP_ERR;
}

static void rx_terminated(struct xiw_qp *qp)
{
	uint32_t c = qp->rxs.term_ctrl;

	xiw_log(XIW_LOG_WARN,
		"qp %u: TERMINATE received: layer %u type %u code %#x",
		qp->ibv.qp_num, c >> 28, (c >> 24) & 0xf, (c >> 16) & 0xff);
	/* The oldest WR on the wire is the one refused (responses come in
	 * order); it gets the reason, the rest are flushed. */
	rx_tx_lock(qp);
	xiw_qp_sq_fail_head(qp, term_wc_status(c));
	xiw_tx_unlock(qp);
	xiw_qp_stream_end(qp, -EPROTO);
}

/*
 * One read from the stream (rx_lock held). A read that brought bytes
 * counts in rx_reads before any of them is placed: a poster that reacts
 * to them (a ping-pong reply) sees the peer spoke and never corks
 * (xiw_txcork.c).
 */
static ssize_t rx_recv(struct xiw_qp *qp, struct xiw_llp *l,
		       struct iovec *iov, int cnt)
{
	ssize_t n = xiw_llp_recv(l, iov, cnt);

	if (n > 0) {
		__atomic_store_n(&qp->rx_reads, qp->rx_reads + 1,
				 __ATOMIC_RELEASE);
		qp->rx_pass_bytes += (uint32_t)n;
		xiw_txack_rx(qp);	/* the bytes may carry our ACK */
	}
	return n;
}

/* ERROR after a local close: drop what still arrives until EOF. */
static bool rx_discard(struct xiw_qp *qp, struct xiw_llp *l)
{
	struct iovec v = { qp->rxs.discard, sizeof(qp->rxs.discard) };
	ssize_t n = rx_recv(qp, l, &v, 1);

	if (n > 0)
		return true;
	if (n != -EAGAIN)
		xiw_qp_stream_end(qp, n == 0 ? 0 : (int)n);
	return false;
}

/*
 * The QP whose receive machine this thread runs (rx_lock held), so that
 * xiw_rx_fence() and nested upcalls on the same thread do not deadlock.
 */
static __thread struct xiw_qp *rx_self;

struct rx_hold {
	struct xiw_qp *qp, *prev;
	bool locked;
};

/* Take @qp's rx_lock on the progress thread (unless this thread has it). */
static void rx_hold(struct rx_hold *h, struct xiw_qp *qp)
{
	h->qp = qp;
	h->prev = rx_self;
	h->locked = rx_self != qp;
	if (h->locked)
		pthread_mutex_lock(&qp->rx_lock);
	rx_self = qp;
}

static struct xiw_llp *rx_llp(struct xiw_qp *qp);

#define XIW_RX_SKIP_MAX 8	/* readable upcalls skipped in a row, at most */

static uint64_t upcall_skips;	/* readable upcalls skipped (statistics) */

/**
 * xiw_rx_upcall_skips() - how many readable upcalls found the receive
 * machine busy in another thread and were skipped, since the process
 * started (rx_hold_upcall).
 */
uint64_t xiw_rx_upcall_skips(void)
{
	return __atomic_load_n(&upcall_skips, __ATOMIC_RELAXED);
}

/*
 * rx_hold() for the readable upcall. When an app pass (xiw_rx_poll) holds
 * rx_lock it is reading these very bytes: waiting for the lock cost the
 * progress thread a futex sleep and the app a futex wake, for about every
 * second 64 KB READ in ib_read_bw (and waking an idle vCPU costs tens of
 * us on these VMs: `perf bench sched pipe` 52 us a round trip across the
 * two vCPUs, 6.5 us on one). On a level-triggered transport the upcall
 * comes again while bytes are left, so skip it and yield; after
 * XIW_RX_SKIP_MAX skips in a row (a reader preempted with the lock) wait
 * as before. Only ksock's upcalls (one progress thread) skip, so only that
 * thread counts rx_upcall_skips up; resets happen under rx_lock.
 * Return: false if the upcall was skipped (nothing held).
 */
static bool rx_hold_upcall(struct rx_hold *h, struct xiw_qp *qp)
{
	struct xiw_llp *l;

	if (rx_self != qp && pthread_mutex_trylock(&qp->rx_lock)) {
		l = rx_llp(qp);
		if (l && l->ops->readable_level &&
		    qp->rx_upcall_skips < XIW_RX_SKIP_MAX) {
			qp->rx_upcall_skips++;
			__atomic_fetch_add(&upcall_skips, 1, __ATOMIC_RELAXED);
			sched_yield();
			return false;
		}
		pthread_mutex_lock(&qp->rx_lock);
	}
	h->qp = qp;
	h->prev = rx_self;
	h->locked = rx_self != qp;
	rx_self = qp;
	qp->rx_upcall_skips = 0;
	return true;
}

static void rx_release(struct rx_hold *h)
{
	rx_self = h->prev;
	if (h->locked)
		pthread_mutex_unlock(&h->qp->rx_lock);
}

static struct xiw_llp *rx_llp(struct xiw_qp *qp)
{
	struct xiw_llp *l;

	rx_tx_lock(qp);
	l = qp->attached ? qp->llp : NULL;
	xiw_tx_unlock(qp);
	return l;
}

/* XIW_RQ_WAIT_MS=N overrides the wait (ms, >= 1). Progress thread only. */
static unsigned int rx_rq_wait_ms(void)
{
	static unsigned int ms;
	const char *v;

	if (!ms) {
		v = getenv("XIW_RQ_WAIT_MS");
		ms = v && atoi(v) > 0 ? (unsigned int)atoi(v) : XIW_RQ_WAIT_MS;
	}
	return ms;
}

/*
 * No receive was posted within XIW_RQ_WAIT_MS for a SEND that arrived:
 * RFC 5041 §7.2 "no buffer available" (this also ends a stream whose EOF
 * nobody reads while reading is paused).
 */
static void rx_rq_timeout(void *arg)
{
	struct xiw_qp *qp = arg;
	struct rx_hold h;

	rx_hold(&h, qp);
	xiw_log(XIW_LOG_WARN, "qp %u: no receive posted for a SEND in %u ms",
		qp->ibv.qp_num, rx_rq_wait_ms());
	xiw_qp_fatal(qp, XIW_T_DDP_NO_BUF);
	rx_release(&h);
}

/*
 * Who runs rx_step(): RXM_PG the progress thread's readable upcall;
 * RXM_FINAL the llp already failed: only drain what is queued (a TERMINATE
 * may be there) and leave ending the stream to the caller; RXM_APP an app
 * thread's pass: anything but placing data is left to the progress thread.
 */
enum { RXM_PG, RXM_FINAL, RXM_APP };

/* An app pass met an event only the progress thread handles: hand over. */
static bool rx_app_defer(struct xiw_qp *qp, int term, int err)
{
	qp->rx_pend_term = term;
	qp->rx_pend_err = err;
	xiw_rx_kick(qp);
	return false;
}

/*
 * What an app pass left (rx_app_defer), on the progress thread.
 * Return: true if the stream is over.
 */
static bool rx_take_pending(struct xiw_qp *qp)
{
	int term = qp->rx_pend_term, err = qp->rx_pend_err;

	qp->rx_pend_term = qp->rx_pend_err = 0;
	if (qp->rxs.rtr_got)
		rx_after_rtr(qp);
	if (qp->rxs.term_got) {
		rx_terminated(qp);
		return true;
	}
	if (term)
		xiw_qp_fatal(qp, term);
	else if (err)
		xiw_qp_stream_end(qp, err);
	return term || err;
}

/* After xiw_rx_advance(): act on RTR, TERMINATE or a violation. */
static bool rx_after_advance(struct xiw_qp *qp, int mode, int t)
{
	if (mode == RXM_APP && (qp->rxs.rtr_got || qp->rxs.term_got || t > 0))
		return rx_app_defer(qp, t > 0 ? t : 0, 0);
	if (qp->rxs.rtr_got)
		rx_after_rtr(qp);
	if (qp->rxs.term_got) {
		rx_terminated(qp);
		return false;
	}
	if (t > 0) {
		xiw_qp_fatal(qp, t);
		return false;
	}
	return true;
}

enum { RX_NONE, RX_GOT, RX_GO, RX_BULK };

/*
 * A poller reads as soon as a few bytes are in: fine for small messages,
 * but a large FPDU then arrives in many small reads (~14 recvmsg per 64 KB
 * in ib_write_bw) where the progress thread, woken once, takes it in two.
 * App passes leave FPDUs needing more than this to the progress thread.
 */
#define XIW_RX_POLL_BULK (16u * 1024)

static int rx_app_bulk(struct xiw_qp *qp)
{
	if (atomic_exchange(&qp->rx_app_mode, false))
		xiw_rx_kick(qp);	/* it reads in upcalls again */
	return RX_BULK;
}

/*
 * Receive staging (issue 11). Once two small FPDUs (payload below
 * XIW_RX_STAGE_SMALL) came in a row, the next bytes are read with one
 * recvmsg into a staging buffer of XIW_RX_STAGE bytes and fed to the
 * receive machine from there, payload copied once to its target: a run
 * of small FPDUs then costs one recvmsg per buffer instead of two per
 * FPDU (header rest, then payload + trailer + next header). After a
 * large FPDU, reads go straight into the target memory again, so a bulk
 * transfer copies at most one buffer's worth per switch.
 *
 * One small FPDU after a large one is read in place too: it is usually
 * the tail of a bulk WR (with big FPDUs a 64 KB WRITE is one FPDU of
 * 65520 payload bytes and one of 16), followed by the next WR's large
 * FPDU, and staging there copied up to XIW_RX_STAGE bytes of that
 * payload twice (with 256 busy QPs, whose sockets are always deep: a
 * quarter of every 64 KB WRITE).
 * The buffer is borrowed only while it holds bytes (xiw_bufpool.c).
 */
static bool rx_stage_wanted(const struct xiw_qp *qp, size_t want)
{
	static int on = -1;	/* XIW_RX_STAGE=0: never (read in place) */

	if (on < 0)
		on = getenv("XIW_RX_STAGE") ? atoi(getenv("XIW_RX_STAGE")) != 0 : 1;
	return on && want < XIW_RX_STAGE_SMALL && qp->rx_small_run >= 2 &&
	       qp->rx.hdr.payload_len < XIW_RX_STAGE_SMALL;
}

/*
 * Refill the staging buffer (qp->stg, empty) with one recvmsg; an
 * unsuccessful one gives the buffer back.
 * Return: bytes read (> 0), or what xiw_llp_recv() returned (<= 0).
 */
static ssize_t rx_stage_fill(struct xiw_qp *qp, struct xiw_llp *l)
{
	struct iovec v;
	ssize_t n;

	v = (struct iovec){ qp->stg, XIW_RX_STAGE };
	n = rx_recv(qp, l, &v, 1);
	qp->stg_fills++;
	qp->stg_off = 0;
	qp->stg_len = n > 0 ? (uint32_t)n : 0;
	qp->stg_short = n < (ssize_t)XIW_RX_STAGE;
	if (n <= 0) {
		xiw_rxstage_put(qp->stg);
		qp->stg = NULL;
	}
	return n;
}

/* Copy staged bytes into @iov (the machine's buffers). Return: bytes. */
static size_t rx_stage_feed(struct xiw_qp *qp, const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt && qp->stg_off < qp->stg_len; i++) {
		size_t k = qp->stg_len - qp->stg_off;

		if (k > iov[i].iov_len)
			k = iov[i].iov_len;
		memcpy(iov[i].iov_base, qp->stg + qp->stg_off, k);
		qp->stg_off += (uint32_t)k;
		n += k;
	}
	if (qp->stg_off == qp->stg_len) {
		xiw_rxstage_put(qp->stg);
		qp->stg = NULL;
		qp->stg_off = qp->stg_len = 0;
	}
	return n;
}

/* Anything staged and not yet fed (rx_lock held)? */
static bool rx_staged(const struct xiw_qp *qp)
{
	return qp->stg_off < qp->stg_len;
}

/* The stream ended or failed (@err from xiw_llp_recv, <= 0). */
static int rx_step_end(struct xiw_qp *qp, int mode, int err)
{
	/* EOF stays readable: the progress thread sees it again */
	if (mode == RXM_APP)
		rx_app_defer(qp, 0, err);
	else if (mode == RXM_PG)
		xiw_qp_stream_end(qp, err);
	return RX_NONE;
}

/* rx_step() through the staging buffer (qp->stg set), refilled if empty. */
static int rx_step_staged(struct xiw_qp *qp, struct xiw_llp *l, int mode,
			  const struct iovec *iov, int cnt)
{
	size_t n;
	bool more;

	if (!rx_staged(qp)) {
		ssize_t r = rx_stage_fill(qp, l);

		if (r == -EAGAIN)
			return RX_NONE;
		if (r <= 0)
			return rx_step_end(qp, mode, (int)r);
	}
	n = rx_stage_feed(qp, iov, cnt);
	/* staged bytes left, or the buffer was filled: the socket may hold
	 * more; a short fill drained it (as a short read below) */
	more = rx_staged(qp) || !qp->stg_short;
	if (!rx_after_advance(qp, mode, xiw_rx_advance(&qp->rx, n)))
		return RX_GOT;
	return more ? RX_GO : RX_GOT;
}

/*
 * One recvmsg into the receive machine (rx_lock held), or a feed from
 * the staging buffer.
 * Return: RX_GO (bytes, go on), RX_GOT (bytes, stop), RX_NONE (stop) or,
 * in an app pass, RX_BULK (stop: an FPDU for the progress thread).
 */
static int rx_step(struct xiw_qp *qp, struct xiw_llp *l, int mode)
{
	struct iovec iov[64];
	size_t want;
	ssize_t n;
	int cnt;

	qp->rx_llp_cur = l;	/* headers decoded below may use its records */
	cnt = xiw_rx_iov(&qp->rx, iov, 64);
	if (cnt == -EAGAIN) {	/* no posted receive, or no CQE slot */
		if (mode == RXM_PG) {
			xiw_llp_pause_read(l, true);
			/* only a missing receive is an error in the end; a
			 * full CQ is the app's pace (its poll kicks us) */
			if (xiw_rq_waits(qp) == XIW_RQ_WAIT_WR)
				xiw_progress_timer_arm(&qp->rq_timer,
						       rx_rq_wait_ms(),
						       rx_rq_timeout, qp);
		} else if (mode == RXM_APP) {
			xiw_rx_kick(qp);	/* pause and time it there */
		}
		return RX_NONE;
	}
	if (cnt < 0)
		return RX_NONE;
	want = 0;
	for (int i = 0; i < cnt; i++)
		want += iov[i].iov_len;
	if (mode == RXM_APP && want > XIW_RX_POLL_BULK && !rx_staged(qp))
		return rx_app_bulk(qp);
	/* no staging buffer to be had: read straight in, as after a big FPDU */
	if (rx_staged(qp) || (rx_stage_wanted(qp, want) &&
			      (qp->stg || (qp->stg = xiw_rxstage_get()))))
		return rx_step_staged(qp, l, mode, iov, cnt);
	n = rx_recv(qp, l, iov, cnt);
	if (n == -EAGAIN)
		return RX_NONE;
	if (n <= 0)
		return rx_step_end(qp, mode, (int)n);
	/* a short read drained the socket: skip the recvmsg that would only
	 * say EAGAIN (level-triggered epoll, or the next poll, comes back) */
	if (!rx_after_advance(qp, mode, xiw_rx_advance(&qp->rx, (size_t)n)))
		return RX_GOT;
	return (size_t)n == want ? RX_GO : RX_GOT;
}

/*
 * READ responses (and READs that waited for ORD room) are framed once per
 * receive burst, so one sendmsg carries many of them.
 */
static void rx_flush_tx(struct xiw_qp *qp)
{
	qp->rxs.tx_due = 0;
	rx_tx_lock(qp);
	xiw_tx_push_rx(qp);
	xiw_tx_unlock(qp);
	xiw_progress_note_resp();	/* the next request comes soon */
}

#define XIW_RX_TX_BATCH 16	/* READs answered per sendmsg at most */

/*
 * The thread running receive upcalls asks the scheduler (EEVDF, Linux
 * 6.12+) for a short slice, so its wakeups preempt the busy-polling
 * application threads it serves instead of waiting for their tick (4 ms
 * stalls with ib_write_lat on two CPUs). Unprivileged; best effort.
 */
struct xiw_sched_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t prio;
	uint64_t runtime, deadline, period;
	uint32_t util_min, util_max;
};

#define XIW_RX_SLICE_NS 100000

static void rx_thread_slice(void)
{
	static __thread bool done;
	struct xiw_sched_attr a = { .size = sizeof(a),
				    .runtime = XIW_RX_SLICE_NS };

#ifdef SYS_sched_setattr
	if (!done && syscall(SYS_sched_setattr, 0, &a, 0))
		xiw_log(XIW_LOG_DEBUG, "rx: no short scheduler slice");
#endif
	(void)a;
	done = true;
}

/* ------------------------------------------ reading in app threads --- */

#define XIW_RX_APP_NS 200000ull	/* app passes got bytes (ran) this recently */
#define XIW_RX_APP_LONE 256	/* a pass that read this little: one message */
#define XIW_RX_APP_CHECK_MS 1	/* are the apps still polling? */

static void rx_readable_locked(struct xiw_qp *qp);

/*
 * Progress thread: read in upcalls again (apps stopped polling, kick).
 * A kick may come from an app pass that already cleared rx_app_mode.
 */
static void rx_app_leave(struct xiw_qp *qp, struct xiw_llp *l, bool kick)
{
	if (!atomic_load(&qp->rx_app_mode) && !kick)
		return;
	atomic_store(&qp->rx_app_mode, false);
	xiw_llp_app_read(l, false);
}

/* rq_timer in app mode: leave it once no app pass ran for a while. */
static void rx_app_check(void *arg)
{
	struct xiw_qp *qp = arg;
	struct xiw_llp *l;
	struct rx_hold h;

	rx_hold(&h, qp);
	l = rx_llp(qp);
	if (l && atomic_load(&qp->rx_app_mode)) {
		if (xiw_now_ns() - atomic_load(&qp->rx_app_poll_ns) <
		    XIW_RX_APP_CHECK_MS * 1000000ull) {
			xiw_progress_timer_arm(&qp->rq_timer, XIW_RX_APP_CHECK_MS,
					       rx_app_check, qp);
		} else {
			rx_app_leave(qp, l, false);
			rx_readable_locked(qp);
		}
	}
	rx_release(&h);
}

/*
 * The progress thread was woken for bytes an app pass had already taken
 * (xiw_rx_poll got data lately), or (@got) it read one small message
 * while app passes were polling the QP: each such wake-up only costs the
 * app's CPU (and, with the short slice, preempts it). Stop the upcalls
 * and leave reading to the polling threads; a 1 ms check (rq_timer, free
 * then: app passes skip a QP that waits for a receive), any kick
 * (post_recv, an event an app pass hands over) and arming the CQ for an
 * event (xiw_cq_req_notify) switch back.
 */
static void rx_app_maybe_enter(struct xiw_qp *qp, struct xiw_llp *l,
			       bool got)
{
	static int on = -1;	/* XIW_RX_APP_MODE=0: never (progress only) */
	uint64_t seen = atomic_load(got ? &qp->rx_app_poll_ns :
				    &qp->rx_app_got_ns);

	if (on < 0)
		on = getenv("XIW_RX_APP_MODE") ? atoi(getenv("XIW_RX_APP_MODE")) != 0 : 1;
	if (!on || qp->rx_stop || atomic_load(&qp->rx_app_mode) ||
	    atomic_load(&qp->state) != IBV_QPS_RTS || xiw_rq_waits(qp) ||
	    xiw_now_ns() - seen >= XIW_RX_APP_NS)
		return;
	atomic_store(&qp->rx_app_mode, true);
	xiw_llp_app_read(l, true);
	xiw_progress_timer_arm(&qp->rq_timer, XIW_RX_APP_CHECK_MS,
			       rx_app_check, qp);
}

static void rx_readable_locked(struct xiw_qp *qp)
{
	struct xiw_llp *l = rx_llp(qp);
	bool got = false;

	if (!l || rx_take_pending(qp))
		return;
	qp->rx_pass_bytes = 0;
	while (!qp->rx_stop) {
		if (atomic_load(&qp->state) == IBV_QPS_ERR) {
			if (!rx_discard(qp, l))
				break;
		} else {
			int r = rx_step(qp, l, RXM_PG);

			got |= r != RX_NONE;
			if (r != RX_GO)
				break;
		}
		if (qp->rxs.tx_due >= XIW_RX_TX_BATCH)
			rx_flush_tx(qp);
	}
	if (qp->rxs.tx_due && !qp->rx_stop)
		rx_flush_tx(qp);
	/* or it read one small message that a poller spinning right now
	 * would have read: with the poller and this thread on one CPU, the
	 * wake-up preempts the poller, this thread always reads first, the
	 * test above never passes, and every message costs a wake-up (8 B
	 * ib_send_lat 11-14 us against 4-6 us, 2-3 runs in 10, 3 in 4 with
	 * each side pinned to its own CPU) */
	if (!got || qp->rx_pass_bytes <= XIW_RX_APP_LONE)
		rx_app_maybe_enter(qp, l, got);
}

/**
 * xiw_rx_readable() - llp readable upcall (progress thread): receive until
 * the socket is empty, the machine waits for a receive buffer, or the
 * stream ends; then send the READ responses this burst made due. Returns
 * at once, reading nothing, while another thread runs @arg's receive
 * machine on a level-triggered transport (rx_hold_upcall).
 */
void xiw_rx_readable(void *arg)
{
	struct xiw_qp *qp = arg;
	struct rx_hold h;

	rx_thread_slice();
	if (!rx_hold_upcall(&h, qp))
		return;
	rx_readable_locked(qp);
	rx_release(&h);
}

/* rx_kick_fn: a kick carries work (rx_take_pending) and is never skipped */
static void rx_readable_kicked(struct xiw_qp *qp)
{
	struct rx_hold h;

	rx_thread_slice();
	rx_hold(&h, qp);
	rx_readable_locked(qp);
	rx_release(&h);
}

/**
 * xiw_rx_closed() - llp closed upcall: RST or error ends the stream. Bytes
 * queued before the reset are read first: a peer that sent TERMINATE and
 * closed usually resets the connection right behind it.
 */
void xiw_rx_closed(void *arg, int err)
{
	struct xiw_qp *qp = arg;
	struct xiw_llp *l;
	struct rx_hold h;

	rx_hold(&h, qp);
	l = rx_llp(qp);
	if (l && rx_take_pending(qp))
		l = NULL;
	if (l && atomic_load(&qp->state) != IBV_QPS_ERR)
		while (!qp->rx_stop && rx_step(qp, l, RXM_FINAL) == RX_GO)
			;
	xiw_qp_stream_end(qp, err ? err : -ECONNRESET);
	rx_release(&h);
}

static void rx_kick_fn(void *arg)
{
	struct xiw_qp *qp = arg;
	struct xiw_llp *l = rx_llp(qp);

	xiw_progress_timer_cancel(&qp->rq_timer);
	if (l) {
		xiw_llp_pause_read(l, false);
		rx_app_leave(qp, l, true);
		rx_readable_kicked(qp);
	}
	xiw_qp_unref(qp);
}

#define XIW_RX_POLL_STEPS 16	/* recvmsg per app pass at most */
#define XIW_RX_POLL_IDLE 64	/* empty passes in a row before backing off */
#define XIW_RX_POLL_EVERY 32	/* then one pass per this many calls */
#define XIW_RX_POLL_STAMP 16	/* "apps poll" timestamp every this many */

/* This thread's app passes that found nothing, in a row. */
static __thread uint32_t rx_poll_idle;

/*
 * A thread whose passes keep finding nothing (the sender of a one-way
 * stream, polling its send CQ) does one recvmsg per XIW_RX_POLL_EVERY
 * polls, not per poll: each costs a syscall, and the tx_lock it takes
 * competes with the sends. A ping-pong reply comes long before the
 * back-off starts. Return: true to skip this pass.
 */
static bool rx_poll_backoff(void)
{
	if (rx_poll_idle < XIW_RX_POLL_IDLE)
		return false;
	return rx_poll_idle++ % XIW_RX_POLL_EVERY != 0;
}

/**
 * xiw_rx_poll() - receive for @qp from an app thread that found its CQ
 * empty (manual progress, like libfabric's): a thread spinning on
 * ibv_poll_cq reads its own socket instead of waiting for the progress
 * thread's wake-up, which costs 15-30 us on a busy 2-vCPU VM, more than
 * the whole round trip. Non-blocking: skips the QP when another thread
 * runs its receive machine, when it waits for a posted receive or a CQE
 * slot (the poll that frees one kicks the progress thread), or in ERROR;
 * what only the progress thread may do is handed over to it.
 * Return: true if bytes were received.
 */
bool xiw_rx_poll(struct xiw_qp *qp)
{
	/* in app mode nobody else reads: never back off there */
	if (!atomic_load_explicit(&qp->rx_app_mode, memory_order_relaxed) &&
	    rx_poll_backoff())
		return false;
	return xiw_rx_poll_now(qp);
}

/**
 * xiw_rx_poll_now() - xiw_rx_poll() without the back-off of a thread
 * whose passes found nothing: for a poller that expects an answer now
 * (the poll linger, xiw_cq.c). Return: true if bytes were received.
 */
bool xiw_rx_poll_now(struct xiw_qp *qp)
{
	struct xiw_llp *l;
	struct xiw_qp *prev = rx_self;
	bool got = false, bulk = false;

	if (atomic_load_explicit(&qp->rx_stop, memory_order_relaxed) ||
	    atomic_load_explicit(&qp->state, memory_order_relaxed) != IBV_QPS_RTS ||
	    pthread_mutex_trylock(&qp->rx_lock))
		return false;
	rx_self = qp;
	l = rx_llp(qp);
	if (l && !qp->rtr_wait && !xiw_rq_waits(qp)) {
		if (!(rx_poll_idle % XIW_RX_POLL_STAMP))
			atomic_store_explicit(&qp->rx_app_poll_ns, xiw_now_ns(),
					      memory_order_relaxed);
		for (int i = 0; i < XIW_RX_POLL_STEPS && !qp->rx_stop; i++) {
			int r = rx_step(qp, l, RXM_APP);

			bulk = r == RX_BULK;
			got |= r == RX_GOT || r == RX_GO;
			if (r != RX_GO)
				break;
		}
		if (qp->rxs.tx_due && !qp->rx_stop)
			rx_flush_tx(qp);
		/* a bulk stream is no reason to leave reading to apps */
		if (got && !bulk)
			atomic_store_explicit(&qp->rx_app_got_ns, xiw_now_ns(),
					      memory_order_relaxed);
	}
	rx_self = prev;
	pthread_mutex_unlock(&qp->rx_lock);
	rx_poll_idle = got ? 0 : rx_poll_idle + 1;
	return got;
}

/**
 * xiw_rx_fence() - after qp->llp was taken away (tx_lock, then released):
 * wait for an app pass (xiw_rx_poll) that may still use the old llp, so
 * the caller can hand it over to be closed. No QP lock held; no-op on the
 * thread that runs @qp's receive machine.
 */
void xiw_rx_fence(struct xiw_qp *qp)
{
	if (rx_self == qp)
		return;
	pthread_mutex_lock(&qp->rx_lock);
	pthread_mutex_unlock(&qp->rx_lock);
}

/**
 * xiw_rx_kick() - resume reading on the progress thread (a receive was
 * posted while the machine waited, or the stream was just attached).
 */
void xiw_rx_kick(struct xiw_qp *qp)
{
	xiw_qp_ref(qp);
	if (xiw_progress_run(rx_kick_fn, qp))
		xiw_qp_unref(qp);
}
