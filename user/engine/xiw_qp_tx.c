// SPDX-License-Identifier: MIT
/*
 * QP transmit side: post_send, and framing of SQ WRs, READ responses (from
 * the IRQ), the RTR and TERMINATE into FPDUs (RFC 5040 §4, RFC 5041 §5)
 * handed to the llp in batches.
 *
 * Direct send: the posting thread takes qp->tx_lock, appends the WQE and,
 * unless a short send is already waiting for send space, frames FPDUs
 * (payload iovecs point straight into registered memory) and sends them
 * with one non-blocking sendmsg per batch. A short send keeps the batch
 * (and the cursor in the current message) and asks the llp for a writable
 * upcall; the progress thread continues from there. Nothing here blocks.
 *
 * Messages are not interleaved: one message is framed at a time, chosen in
 * the order TERMINATE, RTR, READ response, SQ WR. SQ WRs complete when the
 * kernel accepted all their bytes (READs when the response has arrived),
 * always in posting order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "xiwarp/wire/mpa.h"
#include "xiw_obj.h"

#define XIW_RTR_STAG 1u	/* nonzero dummy STag for zero-length RTR FPDUs */

/* ------------------------------------------------------- post_send --- */

static int sqe_opcode_ok(const struct ibv_send_wr *wr)
{
	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:	/* + RFC 7306 Immediate Data */
	case IBV_WR_SEND_WITH_IMM:		/* + RFC 7306 Immediate Data */
	case IBV_WR_RDMA_READ:
		return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:	/* RFC 7306 Atomic Request */
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		/* one 8-byte local buffer for the original value, an
		 * 8-byte aligned remote address (ibv_post_send(3)) */
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8 ||
		    (wr->wr.atomic.remote_addr & 7))
			return -EINVAL;
		return 0;
	case IBV_WR_BIND_MW:	/* type 2; type 1 through ibv_bind_mw */
		if (!wr->bind_mw.mw || wr->num_sge ||
		    (!wr->bind_mw.bind_info.mr &&
		     (wr->bind_mw.mw->type != IBV_MW_TYPE_1 ||
		      wr->bind_mw.bind_info.length)))
			return -EINVAL;
		return 0;
	case IBV_WR_LOCAL_INV:
		return wr->num_sge ? -EINVAL : 0;
	default:
		return -EINVAL;
	}
}

/* Bind and local invalidate act on the STag table, nothing goes out. */
static bool sqe_is_local(uint32_t opcode)
{
	return opcode == IBV_WR_BIND_MW || opcode == IBV_WR_LOCAL_INV;
}

static bool sqe_is_atomic(uint32_t opcode)
{
	return opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	       opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
}

/* READs and atomics wait for a response: ORD, fencing, no ack tracking. */
static bool sqe_is_request(uint32_t opcode)
{
	return opcode == IBV_WR_RDMA_READ || sqe_is_atomic(opcode);
}

/*
 * The RFC 7306 §5.1 Atomic Request body for @wr: the verbs ops are the
 * unmasked 64-bit ones (FetchAdd: add mask 0, no field boundaries;
 * CmpSwap: compare and swap masks all ones). Big-endian on the wire.
 */
static void sqe_atomic_body(struct xiw_sqe *e, const struct ibv_send_wr *wr,
			    uint32_t req_id)
{
	uint8_t *b = e->atom;
	bool cas = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP;

	memset(b, 0, XIW_ATOMIC_REQ_LEN);
	xiw_put_be32(b, cas ? XIW_AOP_CMP_SWAP : XIW_AOP_FETCH_ADD);
	xiw_put_be32(b + 4, req_id);
	xiw_put_be32(b + 8, wr->wr.atomic.rkey);
	xiw_put_be64(b + 12, wr->wr.atomic.remote_addr);
	xiw_put_be64(b + 20, cas ? wr->wr.atomic.swap : wr->wr.atomic.compare_add);
	xiw_put_be64(b + 28, cas ? ~0ull : 0);
	xiw_put_be64(b + 36, cas ? wr->wr.atomic.compare_add : 0);
	xiw_put_be64(b + 44, cas ? ~0ull : 0);
}

static int sqe_copy_inline(struct xiw_qp *qp, struct xiw_sqe *e,
			   const struct ibv_send_wr *wr, uint32_t slot)
{
	uint8_t *dst = qp->inl + (size_t)slot * qp->max_inline;
	uint32_t len = 0;

	for (int i = 0; i < wr->num_sge; i++) {
		if (wr->sg_list[i].length > qp->max_inline - len)
			return -EINVAL;
		memcpy(dst + len, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		len += wr->sg_list[i].length;
	}
	e->num_sge = 1;
	e->sge[0] = (struct ibv_sge){ .addr = (uintptr_t)dst, .length = len };
	e->len = len;
	return 0;
}

static int sqe_copy_sges(struct xiw_qp *qp, struct xiw_sqe *e,
			 const struct ibv_send_wr *wr)
{
	int need = sqe_is_request(wr->opcode) ? IBV_ACCESS_LOCAL_WRITE : 0;
	uint64_t len = 0;

	for (int i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *s = &wr->sg_list[i];

		if (xiw_mr_check(s->lkey, qp->pd, need, s->addr, s->length,
				 false, NULL))
			return -EINVAL;
		len += s->length;
		e->sge[i] = *s;
	}
	if (len > INT32_MAX)
		return -EINVAL;
	e->num_sge = wr->num_sge;
	e->len = (uint32_t)len;
	return 0;
}

/*
 * IBV_WR_BIND_MW: the window gets its new rkey now (the application
 * reads mw->rkey after posting, as with rdma-core providers); the bind
 * itself happens in SQ order (msg_sq_local).
 */
static void sqe_bind(struct xiw_sqe *e, const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

	e->mw = xiw_mw_from_ibv(wr->bind_mw.mw);
	e->bmr = xiw_mr_from_ibv(b->mr);
	e->raddr = b->addr;
	e->blen = b->length;
	e->bacc = (int)b->mw_access_flags;
	wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
}

static int sqe_fill(struct xiw_qp *qp, const struct ibv_send_wr *wr)
{
	uint32_t slot = qp->sq_head & qp->sq_mask;
	struct xiw_sqe *e = &qp->sq[slot];
	bool inl = (wr->send_flags & IBV_SEND_INLINE) &&
		   !sqe_is_request(wr->opcode);
	int ret;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->max_send_sge ||
	    sqe_opcode_ok(wr))
		return -EINVAL;
	if (qp->sq_head - __atomic_load_n(&qp->sq_tail, __ATOMIC_RELAXED) >=
	    qp->sq_max)
		return -ENOMEM;
	ret = inl ? sqe_copy_inline(qp, e, wr, slot) : sqe_copy_sges(qp, e, wr);
	if (ret)
		return ret;
	e->local_st = 0;
	if (wr->opcode == IBV_WR_BIND_MW)
		sqe_bind(e, wr);
	e->wr_id = wr->wr_id;
	e->opcode = wr->opcode;
	e->flags = wr->send_flags;
	if (wr->opcode != IBV_WR_BIND_MW)
		e->raddr = wr->wr.rdma.remote_addr;
	e->rkey = wr->opcode == IBV_WR_BIND_MW ? wr->bind_mw.rkey :
						  wr->wr.rdma.rkey;
	e->inv_stag = wr->opcode == IBV_WR_SEND_WITH_INV ||
		      wr->opcode == IBV_WR_LOCAL_INV ? wr->invalidate_rkey : 0;
	memset(e->imm, 0, sizeof(e->imm));
	if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
	    wr->opcode == IBV_WR_SEND_WITH_IMM)	/* network order */
		memcpy(e->imm, &wr->imm_data, sizeof(wr->imm_data));
	if (sqe_is_atomic(wr->opcode)) {
		sqe_atomic_body(e, wr, qp->sq_head);	/* ReqID: SQ index */
		e->rkey = wr->wr.atomic.rkey;
		e->raddr = wr->wr.atomic.remote_addr;
	}
	e->state = XIW_SQE_QUEUED;
	e->fail_st = 0;
	e->resv = false;
	/* the framer reads the WQE once it sees the new head */
	__atomic_store_n(&qp->sq_head, qp->sq_head + 1, __ATOMIC_RELEASE);
	return 0;
}

static bool batch_empty(const struct xiw_txbatch *b);

/* A poster may hold its WRs (xiw_txcork.c) only when nothing framed
 * waits and no message is half framed: those must go now anyway. */
static bool tx_cork(struct xiw_qp *qp)
{
	return !qp->dm_owned && batch_empty(qp->b) &&
	       qp->msg.kind == XIW_TXK_NONE && xiw_tx_cork_wanted(qp);
}

/* tx_lock held: send the WRs just posted (a @poster may cork them), or
 * flush them in ERROR. */
static void tx_after_post(struct xiw_qp *qp, bool poster)
{
	enum ibv_qp_state s = atomic_load(&qp->state);

	if (s == IBV_QPS_ERR)	/* verbs: complete them as flushed */
		xiw_qp_sq_flush(qp);
	else if (s == IBV_QPS_RTS && !qp->tx_wait_write &&
		 !(poster && tx_cork(qp)))
		xiw_tx_push(qp);
}

/*
 * May the WRs queued so far cork? Only if no uncork is pending: an
 * uncork that found tx_lock taken (xiw_tx_uncork) left its send to the
 * holder. Consumes that request. tx_lock held.
 */
static bool tx_may_cork(struct xiw_qp *qp)
{
	return !atomic_load(&qp->tx_uncork) ||
	       !atomic_exchange(&qp->tx_uncork, false);
}

/*
 * Progress thread: WRs posted (or an uncork asked for) while tx_lock was
 * taken. Posted WRs may cork here as in their post, so whether a burst
 * is held does not depend on who held the lock when it was posted (the
 * ACK scan, a reader, the backstop).
 */
static void tx_kick_fn(void *arg)
{
	struct xiw_qp *qp = arg;

	pthread_mutex_lock(&qp->tx_lock);
	atomic_store(&qp->tx_more, false);
	tx_after_post(qp, tx_may_cork(qp));
	xiw_tx_unlock(qp);
	xiw_qp_unref(qp);
}

void xiw_tx_unlock(struct xiw_qp *qp)
{
	/* the datamover (or the progress thread) frames new WRs itself */
	bool owned = qp->dm_owned || qp->tx_wait_write;

	pthread_mutex_unlock(&qp->tx_lock);
	if (owned || !atomic_load(&qp->tx_more) ||
	    !atomic_exchange(&qp->tx_more, false))
		return;
	xiw_qp_ref(qp);
	if (xiw_progress_run(tx_kick_fn, qp)) {
		xiw_log(XIW_LOG_ERROR, "qp %u: out of memory: posted WRs wait "
			"for the next post", qp->ibv.qp_num);
		atomic_store(&qp->tx_more, true);
		xiw_qp_unref(qp);
	}
}

/*
 * Send (or flush) the QP's queued WRs here if tx_lock is free, else leave
 * them to its holder (tx_more, xiw_tx_unlock). @wait: take the lock even
 * if that means waiting; @poster: a poster's own WRs, which may cork.
 */
static void tx_kick(struct xiw_qp *qp, bool wait, bool poster)
{
	if (!poster)	/* before tx_more: its holder must see it */
		atomic_store(&qp->tx_uncork, true);
	atomic_store(&qp->tx_more, true);
	if (wait)
		pthread_mutex_lock(&qp->tx_lock);
	else if (pthread_mutex_trylock(&qp->tx_lock))
		return;
	atomic_store(&qp->tx_more, false);
	tx_after_post(qp, tx_may_cork(qp) && poster);
	xiw_tx_unlock(qp);
}

/*
 * After WQEs were appended. In ERROR the poster waits for the lock: a
 * flush is due now and nothing is sent.
 */
static void post_kick(struct xiw_qp *qp, enum ibv_qp_state state)
{
	tx_kick(qp, state == IBV_QPS_ERR, true);
}

/** xiw_tx_uncork() - see xiw_obj.h. */
void xiw_tx_uncork(struct xiw_qp *qp)
{
	tx_kick(qp, false, false);
}

/*
 * A WRITE ping-pong: each of the last few posts was one RDMA WRITE, and
 * the peer spoke (rx_reads moved) between it and the post before. The
 * poller of such a WRITE's CQE may then linger for the answer (xiw_cq.c).
 * Any other post (a READ, whose response also moves rx_reads; a SEND,
 * whose answer the app polls a CQ for; a list) ends the streak.
 * sq_lock held.
 */
static void pp_note_post(struct xiw_qp *qp, const struct ibv_send_wr *wr)
{
	uint32_t r = __atomic_load_n(&qp->rx_reads, __ATOMIC_ACQUIRE);
	uint8_t streak = qp->pp_streak;

	if (r == qp->pp_rx_mark || wr->next || wr->opcode != IBV_WR_RDMA_WRITE)
		streak = 0;
	else if (streak < UINT8_MAX)
		streak++;
	/* pollers read both without sq_lock (xiw_cq.c) */
	__atomic_store_n(&qp->pp_streak, streak, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->pp_rx_mark, r, __ATOMIC_RELAXED);
}

/**
 * xiw_post_send() - post a chain of send WRs; frames and sends directly in
 * the caller's thread when the stream has send space and no other thread
 * is sending for the QP (then that thread, the datamover or the progress
 * thread sends them). Never blocks: it waits neither for the peer nor for
 * another thread's sendmsg. Small WRs posted right behind the QP's last
 * send, with nothing received since, are held (corked, xiw_txcork.c)
 * until the next CQ poll, notify or event wait, an uncorked post, or the
 * backstop, so a burst of single-WR posts costs one sendmsg.
 * Supported: SEND (SOLICITED -> SEND_SE), SEND_WITH_INV, RDMA_WRITE,
 * RDMA_READ, RDMA_WRITE_WITH_IMM and SEND_WITH_IMM (each followed by an
 * RFC 7306 Immediate Data message); INLINE copies the data now (<= max_inline_data). A signalled
 * WR starts only once a CQE slot of the send CQ is reserved for it (seed
 * 002): with the CQ full it waits in the SQ, so the SQ fills and posting
 * returns -ENOMEM; the CQ itself never overflows.
 * Return: 0, or -errno with *bad the first WR not posted: -ENOMEM SQ full,
 * -EINVAL bad opcode (atomics, MW binds), num_sge, lkey, inline length, or
 * QP not in RTS or ERROR. In ERROR the WRs complete at once with
 * IBV_WC_WR_FLUSH_ERR, as verbs providers do.
 */
int xiw_post_send(struct xiw_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad)
{
	enum ibv_qp_state state;
	int ret = 0, n = 0;

	pthread_mutex_lock(&qp->sq_lock);
	if (wr)
		pp_note_post(qp, wr);
	state = atomic_load(&qp->state);
	for (; wr; wr = wr->next, n++) {
		ret = state == IBV_QPS_RTS || state == IBV_QPS_ERR ?
		      sqe_fill(qp, wr) : -EINVAL;
		if (ret)
			break;
	}
	pthread_mutex_unlock(&qp->sq_lock);
	if (n)
		post_kick(qp, state);
	if (ret && bad)
		*bad = wr;
	return ret;
}

/* ------------------------------------------------ message selection --- */

static void msg_start(struct xiw_qp *qp, int kind, struct xiw_fpdu_hdr *h,
		      const struct ibv_sge *sge, int nsge, uint32_t total)
{
	struct xiw_txmsg *m = &qp->msg;
	uint8_t tmp[XIW_MAX_HDR_LEN];
	struct xiw_fpdu_hdr probe = *h;

	probe.payload_len = 0;
	m->kind = kind;
	m->hdr = *h;
	m->hdr_len = xiw_hdr_encode(&probe, tmp);
	m->sge = sge;
	m->nsge = nsge;
	m->si = 0;
	m->soff = 0;
	m->total = total;
	m->off = 0;
}

static void msg_untagged(struct xiw_fpdu_hdr *h, uint8_t op, uint32_t qn,
			 uint32_t msn)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->qn = qn;
	h->msn = msn;
}

static void msg_tagged(struct xiw_fpdu_hdr *h, uint8_t op, uint32_t stag,
		       uint64_t to)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->tagged = true;
	h->stag = stag;
	h->to = to;
}

static struct xiw_orqe *orq_push(struct xiw_qp *qp)
{
	struct xiw_orqe *o = &qp->orq[qp->orq_head & qp->orq_mask];

	qp->orq_head++;
	memset(o, 0, sizeof(*o));
	return o;
}

/* TERMINATE (RFC 5040 §4.8) carrying the offending FPDU's header. */
static void msg_term(struct xiw_qp *qp)
{
	struct xiw_fpdu_hdr h = { .msn = qp->tx_term_msn++ };
	size_t len;

	len = xiw_term_encode((uint32_t)qp->term, qp->term_hdr,
			      qp->term_hdr_len, &h, qp->term_pl,
			      sizeof(qp->term_pl));
	qp->term = 0;
	qp->term_hdr_len = 0;
	qp->msg.one = (struct ibv_sge){ .addr = (uintptr_t)qp->term_pl,
					.length = (uint32_t)len };
	msg_start(qp, XIW_TXK_TERM, &h, &qp->msg.one, 1, (uint32_t)len);
}

/* RFC 6581 §4: zero-length READ (nonzero STags), WRITE or SEND. */
static void msg_rtr(struct xiw_qp *qp)
{
	struct xiw_fpdu_hdr h;
	struct xiw_orqe *o;

	if (qp->rtr == XIW_RTR_WRITE) {
		msg_tagged(&h, XIW_OP_WRITE, XIW_RTR_STAG, 0);
	} else if (qp->rtr == XIW_RTR_READ) {
		msg_untagged(&h, XIW_OP_READ_REQ, XIW_QN_READ_REQ,
			     qp->tx_rd_msn++);
		h.rd_sink_stag = XIW_RTR_STAG;
		h.rd_src_stag = XIW_RTR_STAG;
		o = orq_push(qp);
		o->rtr = true;
		o->sink_stag = XIW_RTR_STAG;
	} else {
		msg_untagged(&h, XIW_OP_SEND, XIW_QN_SEND, qp->tx_msn++);
	}
	qp->rtr = XIW_RTR_NONE;
	msg_start(qp, XIW_TXK_RTR, &h, NULL, 0, 0);
}

/* Atomic Response (RFC 7306 §5.2) on QN 3, from the IRQ slot's body. */
static void msg_atomic_resp(struct xiw_qp *qp, struct xiw_irqe *slot)
{
	struct xiw_fpdu_hdr h;

	msg_untagged(&h, XIW_OP_ATOMIC_RESP, XIW_QN_ATOMIC_RESP,
		     qp->tx_atom_msn++);
	qp->msg.one = (struct ibv_sge){ .addr = (uintptr_t)slot->resp,
					.length = XIW_ATOMIC_RESP_LEN };
	qp->irq_active = true;
	msg_start(qp, XIW_TXK_IRQ, &h, &qp->msg.one, 1, XIW_ATOMIC_RESP_LEN);
}

/* READ response for the IRQ head (RFC 5040 §4.5); false if it failed. */
static bool msg_rresp(struct xiw_qp *qp)
{
	struct xiw_irqe *slot = &qp->irq[qp->irq_tail++ & qp->irq_mask];
	struct xiw_irqe e = *slot;
	struct xiw_fpdu_hdr h;
	void *src = NULL;
	int ret;

	if (e.atomic) {
		msg_atomic_resp(qp, slot);
		return true;
	}
	if (e.len) {
		ret = xiw_mr_check(e.src_stag, qp->pd, IBV_ACCESS_REMOTE_READ,
				   e.src_to, e.len, true, &src);
		if (ret) {	/* deregistered since the request was checked */
			xiw_log(XIW_LOG_WARN, "qp %u: READ source gone (%d)",
				qp->ibv.qp_num, ret);
			xiw_qp_to_error(qp);
			qp->term = XIW_T_RDMAP_INV_STAG;
			qp->end_err = -EPROTO;
			qp->shutdown_pending = true;
			xiw_qp_end_async(qp, -EPROTO);
			return false;
		}
	}
	msg_tagged(&h, XIW_OP_READ_RESP, e.sink_stag, e.sink_to);
	qp->msg.one = (struct ibv_sge){ .addr = (uintptr_t)src, .length = e.len };
	qp->irq_active = true;
	msg_start(qp, XIW_TXK_IRQ, &h, &qp->msg.one, 1, e.len);
	return true;
}

static uint8_t send_opcode(const struct xiw_sqe *e)
{
	/* SEND_WITH_IMM: the solicited event goes with its Immediate Data */
	bool se = (e->flags & IBV_SEND_SOLICITED) &&
		  e->opcode != IBV_WR_SEND_WITH_IMM;

	if (e->opcode == IBV_WR_SEND_WITH_INV)
		return se ? XIW_OP_SEND_SE_INV : XIW_OP_SEND_INV;
	return se ? XIW_OP_SEND_SE : XIW_OP_SEND;
}

static void msg_read_req(struct xiw_qp *qp, struct xiw_sqe *e,
			 struct xiw_fpdu_hdr *h)
{
	struct xiw_orqe *o = orq_push(qp);

	msg_untagged(h, XIW_OP_READ_REQ, XIW_QN_READ_REQ, qp->tx_rd_msn++);
	h->rd_sink_stag = e->num_sge ? e->sge[0].lkey : XIW_RTR_STAG;
	h->rd_sink_to = e->num_sge ? e->sge[0].addr : 0;
	h->rd_size = e->len;
	h->rd_src_stag = e->rkey;
	h->rd_src_to = e->raddr;
	o->sq_idx = qp->sq_tx;
	o->sink_stag = h->rd_sink_stag;
	o->sink_to = h->rd_sink_to;
	o->len = e->len;
	o->num_sge = e->num_sge;
}

/*
 * Atomic Request (RFC 7306 §5.1): untagged on the READ request queue
 * (sharing its MSNs), the body as payload; its Response lands in the
 * WR's 8-byte buffer (xiw_qp_rx.c) and completes it.
 */
static void msg_atomic_req(struct xiw_qp *qp, struct xiw_sqe *e,
			   struct xiw_fpdu_hdr *h)
{
	struct xiw_orqe *o = orq_push(qp);

	msg_untagged(h, XIW_OP_ATOMIC_REQ, XIW_QN_READ_REQ, qp->tx_rd_msn++);
	o->atomic = true;
	o->req_id = qp->sq_tx;
	o->sq_idx = qp->sq_tx;
	o->len = 8;
	o->num_sge = 1;
	qp->msg.one = (struct ibv_sge){ .addr = (uintptr_t)e->atom,
					.length = XIW_ATOMIC_REQ_LEN };
}

/*
 * Zero-copy for this WR (XIW_ZCOPY_MIN): large WRITE/SEND payloads, while
 * the stream has not found the kernel copying anyway.
 */
static bool sqe_zc_wanted(struct xiw_qp *qp, const struct xiw_sqe *e)
{
	uint32_t min = xiw_tx_config()->zcopy_min;

	return min && e->len >= min && !sqe_is_request(e->opcode) &&
	       !qp->zc_off && xiw_llp_zc_usable(qp->llp);
}

/*
 * Seed 002 credits: a WR that will make a WC starts only with a CQE slot
 * reserved in the send CQ, so the CQ cannot overflow. Without one the QP
 * waits (qp->tx_credit) until a poll of that CQ frees a slot; the flag is
 * raised before the second try so that poll cannot be missed.
 */
static bool sqe_credit(struct xiw_qp *qp, struct xiw_sqe *e)
{
	if (!qp->sig_all && !(e->flags & IBV_SEND_SIGNALED))
		return true;
	if (!xiw_cq_reserve(qp->scq)) {
		__atomic_store_n(&qp->scq->credit_wait, true, __ATOMIC_RELEASE);
		if (!xiw_cq_reserve(qp->scq)) {
			qp->tx_credit = true;
			return false;
		}
	}
	e->resv = true;
	return true;
}

/*
 * Bind / local invalidate at the SQ head (in posting order, behind what
 * was sent before): act on the STag table and complete (IBV_WC_BIND_MW /
 * IBV_WC_LOCAL_INV; a refused one with IBV_WC_MW_BIND_ERR /
 * IBV_WC_LOC_PROT_ERR). Return: false if its CQE slot must be waited for.
 */
static bool msg_sq_local(struct xiw_qp *qp, struct xiw_sqe *e)
{
	int ret;

	if (!sqe_credit(qp, e))
		return false;
	if (e->opcode == IBV_WR_BIND_MW) {
		ret = xiw_mw_bind(e->mw, qp->pd, e->rkey, e->bmr, e->raddr,
				  e->blen, e->bacc);
		e->local_st = ret ? IBV_WC_MW_BIND_ERR : 0;
	} else {
		ret = xiw_mr_invalidate(e->inv_stag, qp->pd);
		e->local_st = ret ? IBV_WC_LOC_PROT_ERR : 0;
	}
	e->state = XIW_SQE_DONE;
	qp->sq_tx++;
	xiw_qp_sq_retire(qp);
	return true;
}

/* Start the next SQ WR if ORD, fencing and credits allow; false otherwise. */
static bool msg_sq(struct xiw_qp *qp)
{
	struct xiw_sqe *e = &qp->sq[qp->sq_tx & qp->sq_mask];
	uint32_t reads = qp->orq_head - qp->orq_tail;
	struct xiw_fpdu_hdr h;

	while (sqe_is_local(e->opcode)) {
		if (!msg_sq_local(qp, e))
			return false;
		if (qp->sq_tx == __atomic_load_n(&qp->sq_head, __ATOMIC_ACQUIRE))
			return false;
		e = &qp->sq[qp->sq_tx & qp->sq_mask];
	}

	if ((sqe_is_request(e->opcode) && reads >= qp->ord) ||
	    ((e->flags & IBV_SEND_FENCE) && reads) || !sqe_credit(qp, e))
		return false;
	switch (e->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		msg_tagged(&h, XIW_OP_WRITE, e->rkey, e->raddr);
		break;
	case IBV_WR_RDMA_READ:
		msg_read_req(qp, e, &h);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		msg_atomic_req(qp, e, &h);
		e->state = XIW_SQE_ACTIVE;
		e->zc = false;
		msg_start(qp, XIW_TXK_SQ, &h, &qp->msg.one, 1,
			  XIW_ATOMIC_REQ_LEN);
		qp->msg.sq_idx = qp->sq_tx++;
		return true;
	default:
		msg_untagged(&h, send_opcode(e), XIW_QN_SEND, qp->tx_msn++);
		h.inval_stag = e->inv_stag;
		break;
	}
	e->state = XIW_SQE_ACTIVE;
	e->zc = sqe_zc_wanted(qp, e);
	msg_start(qp, XIW_TXK_SQ, &h, e->sge, (int)e->num_sge,
		  e->opcode == IBV_WR_RDMA_READ ? 0 : e->len);
	qp->msg.sq_idx = qp->sq_tx++;
	return true;
}

/* Pick the next message to frame (tx_lock held). Return: true if one. */
static bool msg_next(struct xiw_qp *qp)
{
	if (qp->term) {
		msg_term(qp);
		return true;
	}
	/* a held FIN lets nudges out after the QP left RTS (tx_fin) */
	if (qp->rtr != XIW_RTR_NONE && qp->fin_held) {
		msg_rtr(qp);
		return true;
	}
	if (atomic_load(&qp->state) != IBV_QPS_RTS)
		return false;
	if (qp->rtr != XIW_RTR_NONE) {
		msg_rtr(qp);
		return true;
	}
	if (qp->tx_hold)
		return false;
	if (qp->irq_tail != qp->irq_head)
		return msg_rresp(qp) || msg_next(qp);
	if (qp->sq_tx != __atomic_load_n(&qp->sq_head, __ATOMIC_ACQUIRE))
		return msg_sq(qp);
	return false;
}

/* ------------------------------------------------------------ framing --- */

/* Payload pieces for @len bytes from the message cursor (not advanced). */
static int msg_gather(const struct xiw_txmsg *m, uint32_t len,
		      struct iovec *pl)
{
	int si = m->si, n = 0;
	uint32_t soff = m->soff;

	while (len) {
		const struct ibv_sge *s = &m->sge[si];
		uint32_t take = s->length - soff;

		if (take > len)
			take = len;
		if (take) {
			pl[n].iov_base = (uint8_t *)(uintptr_t)s->addr + soff;
			pl[n++].iov_len = take;
		}
		len -= take;
		soff += take;
		if (soff == s->length) {
			si++;
			soff = 0;
		}
	}
	return n;
}

static void msg_advance(struct xiw_txmsg *m, uint32_t len)
{
	m->off += len;
	while (len) {
		uint32_t take = m->sge[m->si].length - m->soff;

		if (take > len)
			take = len;
		len -= take;
		m->soff += take;
		if (m->soff == m->sge[m->si].length) {
			m->si++;
			m->soff = 0;
		}
	}
}

/*
 * WRITE_WITH_IMM / SEND_WITH_IMM: after the WRITE or SEND, an Immediate
 * Data message (RFC 7306 §6, untagged QN 0, 8 octets: imm_data then
 * zeros) for the peer's RQ.
 * Return: true if that message was started.
 */
static bool msg_chain_imm(struct xiw_qp *qp)
{
	struct xiw_txmsg *m = &qp->msg;
	uint32_t idx = m->sq_idx;
	struct xiw_fpdu_hdr h;
	struct xiw_sqe *e;

	if (m->kind != XIW_TXK_SQ || (m->hdr.opcode != XIW_OP_WRITE &&
				       m->hdr.opcode != XIW_OP_SEND))
		return false;
	e = &qp->sq[idx & qp->sq_mask];
	if (e->opcode != IBV_WR_RDMA_WRITE_WITH_IMM &&
	    e->opcode != IBV_WR_SEND_WITH_IMM)
		return false;
	msg_untagged(&h, (e->flags & IBV_SEND_SOLICITED) ? XIW_OP_IMM_SE :
			 XIW_OP_IMM, XIW_QN_SEND, qp->tx_msn++);
	m->one = (struct ibv_sge){ .addr = (uintptr_t)e->imm,
				   .length = XIW_IMM_LEN };
	msg_start(qp, XIW_TXK_SQ, &h, &m->one, 1, XIW_IMM_LEN);
	m->sq_idx = idx;
	return true;
}

static void msg_finish(struct xiw_qp *qp)
{
	struct xiw_txbatch *b = qp->b;
	struct xiw_txmsg *m = &qp->msg;

	if (msg_chain_imm(qp))
		return;
	b->mark[b->nmark++] = (struct xiw_txmark){
		.end = b->total, .kind = m->kind, .idx = m->sq_idx };
	if (m->kind == XIW_TXK_IRQ)
		qp->irq_active = false;
	m->kind = XIW_TXK_NONE;
}

/*
 * Flag the payload iovecs of a zero-copy WR's new FPDU [@first, +@n):
 * those outside the FPDU's scratch (header, markers, pad, CRC are rewritten
 * by the next batch, so they are always copied) and not tiny.
 */
static void batch_zc_mark(struct xiw_qp *qp, int first, int n)
{
	struct xiw_txbatch *b = qp->b;
	const uint8_t *lo = (const uint8_t *)&b->scr[b->nfpdu];
	const uint8_t *hi = lo + sizeof(b->scr[0]);
	bool zc = qp->msg.kind == XIW_TXK_SQ &&
		  qp->sq[qp->msg.sq_idx & qp->sq_mask].zc;

	for (int i = first; i < first + n; i++) {
		const uint8_t *p = b->iov[i].iov_base;

		b->zc[i] = zc && (p < lo || p >= hi) && b->iov[i].iov_len >= 1024;
		b->any_zc |= b->zc[i];
	}
}

/* Frame one FPDU of the current message into the batch. */
static int frame_one(struct xiw_qp *qp)
{
	struct xiw_txmsg *m = &qp->msg;
	struct xiw_txbatch *b = qp->b;
	struct xiw_fpdu_hdr h = m->hdr;
	struct iovec pl[XIW_MAX_SGE + 1];
	uint32_t len = m->total - m->off;
	uint32_t max = xiw_txf_payload_max(&qp->txf, m->hdr_len);
	int npl, n;

	if (len > max)
		len = max;
	npl = msg_gather(m, len, pl);
	h.payload_len = len;
	h.last = m->off + len == m->total;
	if (h.tagged)
		h.to = m->hdr.to + m->off;
	else
		h.mo = m->off;
	n = xiw_txf_build(&qp->txf, &h, pl, npl, &b->scr[b->nfpdu],
			  b->iov + b->niov, XIW_TXB_IOV - b->niov);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		b->total += b->iov[b->niov + i].iov_len;
		b->fend[b->niov + i] = i == n - 1;
	}
	batch_zc_mark(qp, b->niov, n);
	b->niov += n;
	b->nfpdu++;
	msg_advance(m, len);
	if (h.last)
		msg_finish(qp);
	return 0;
}

/* Fill an empty batch with FPDUs (tx_lock held). */
static void batch_fill(struct xiw_qp *qp)
{
	struct xiw_txbatch *b = qp->b;

	while (b->nfpdu < XIW_TXB_FPDUS && b->total < XIW_TXB_BYTES) {
		if (qp->msg.kind == XIW_TXK_NONE && !msg_next(qp))
			break;
		if (frame_one(qp))
			break;
	}
}

static void batch_advance(struct xiw_txbatch *b, size_t n)
{
	b->sent += n;
	while (n && b->iov_idx < b->niov) {
		struct iovec *v = &b->iov[b->iov_idx];

		if (n >= v->iov_len) {
			n -= v->iov_len;
			b->iov_idx++;
		} else {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			n = 0;
		}
	}
	while (b->iov_idx < b->niov && !b->iov[b->iov_idx].iov_len)
		b->iov_idx++;
}

/*
 * Ack mode (seed 000): the WR's last byte is with the kernel; it completes
 * once the peer acknowledged it (xiw_txack.c). Return: true if tracked.
 */
static bool mark_ack(struct xiw_qp *qp, const struct xiw_txmark *k)
{
	struct xiw_txbatch *b = qp->b;
	struct xiw_sqe *e = &qp->sq[k->idx & qp->sq_mask];

	/* zero-copy: pages stay the kernel's until the peer ACKed them */
	e->zc = e->zc && qp->zc_any;
	e->zc_id = qp->zc_last;
	if ((!qp->ack_mode && !e->zc) || !qp->txc.synced)
		return false;
	if (xiw_txc_add(&qp->txc, (uint32_t)(b->sent - k->end), k->idx)) {
		xiw_log(XIW_LOG_ERROR, "qp %u: ACK tracker full; copy-completing",
			qp->ibv.qp_num);
		return false;
	}
	xiw_txack_watch(qp);
	return true;
}

/* Messages whose last byte the kernel accepted are done (tx_lock held). */
static void batch_marks(struct xiw_qp *qp)
{
	struct xiw_txbatch *b = qp->b;
	bool any = false;

	for (; b->mark_idx < b->nmark && b->mark[b->mark_idx].end <= b->sent;
	     b->mark_idx++) {
		struct xiw_txmark *k = &b->mark[b->mark_idx];
		struct xiw_sqe *e;

		if (k->kind != XIW_TXK_SQ)
			continue;
		e = &qp->sq[k->idx & qp->sq_mask];
		if (!sqe_is_request(e->opcode) && !mark_ack(qp, k))
			e->state = XIW_SQE_DONE;
		any = true;
	}
	if (any && atomic_load(&qp->state) == IBV_QPS_RTS)
		xiw_qp_sq_retire(qp);
}

/**
 * xiw_tx_reset() - forget the message cursor and any framed batch
 * (tx_lock held; the stream is gone or not yet there).
 */
void xiw_tx_reset(struct xiw_qp *qp)
{
	qp->msg.kind = XIW_TXK_NONE;
	xiw_txbatch_put(qp->b);
	qp->b = NULL;
	qp->tx_wait_write = false;
	xiw_dm_forget(qp);	/* before the stream's fd may be closed */
	xiw_txc_reset(&qp->txc);
	qp->ack_tried = qp->ack_traced = qp->ack_late = qp->ack_armed = false;
	qp->zc_off = qp->zc_any = false;
	qp->zc_wait = 0;
	qp->tx_failed = false;
	xiw_txack_forget(qp);
}

/*
 * Ack mode or zero-copy: learn the stream position before our first
 * write on this stream (the MPA exchange wrote before us); afterwards it
 * moves by what we hand over. Without it WRs copy-complete (logged).
 */
static void tx_ack_sync(struct xiw_qp *qp)
{
	uint32_t una, outq;
	int ret;

	if ((!qp->ack_mode && !xiw_tx_config()->zcopy_min) || qp->txc.synced)
		return;
	ret = xiw_llp_ack_state(qp->llp, &una, &outq);
	if (!ret) {
		xiw_txc_sync(&qp->txc, una, outq);
		xiw_txack_trace(qp);	/* before the write, see there */
		return;
	}
	xiw_log(XIW_LOG_WARN, "qp %u: no TCP send state (%s): copy completions, no zero-copy",
		qp->ibv.qp_num, strerror(-ret));
	qp->ack_mode = false;
	qp->zc_off = true;	/* zero-copy WRs could not wait for the ACK */
}

static bool batch_empty(const struct xiw_txbatch *b)
{
	return !b || b->sent == b->total;
}

/*
 * Nothing framed is left: frame what is ready into a batch (borrowed,
 * xiw_txbatch.c); a QP with nothing to frame gives the batch back, so
 * idle QPs hold none. Return: true if framed bytes wait; else false and
 * *@why is what xiw_tx_send_some() returns: XIW_TX_DONE, XIW_TX_CREDIT,
 * or XIW_TX_MORE (no memory for a batch: try later).
 */
static bool batch_refill(struct xiw_qp *qp, int *why)
{
	*why = XIW_TX_MORE;
	if (!qp->b && !(qp->b = xiw_txbatch_get())) {
		xiw_log(XIW_LOG_ERROR, "qp %u: no memory for a TX batch; retrying",
			qp->ibv.qp_num);
		return false;
	}
	qp->b->niov = qp->b->iov_idx = qp->b->nfpdu = 0;
	qp->b->nmark = qp->b->mark_idx = 0;
	qp->b->total = qp->b->sent = 0;
	qp->b->any_zc = false;
	batch_fill(qp);
	if (!batch_empty(qp->b))
		return true;
	xiw_txbatch_put(qp->b);
	qp->b = NULL;
	*why = qp->tx_credit ? XIW_TX_CREDIT : XIW_TX_DONE;
	return false;
}

/*
 * Ack mode with the sockops tracer (seed 000): name the next WR whose ACK
 * is waited for (signalled or zero-copy; the others complete with it),
 * so that only the send call carrying its end is marked for an ACK
 * callback (xiw_llp_ack_mark). @from: batch offset of the call's first
 * byte; the batch's @sent is at txc.tail in the acknowledged-bytes space.
 * tx_lock held, before the call.
 */
static void tx_mark_want(struct xiw_qp *qp, size_t from)
{
	const struct xiw_txbatch *b = qp->b;

	if (!qp->ack_traced)
		return;
	for (int i = b->mark_idx; i < b->nmark; i++) {
		const struct xiw_txmark *k = &b->mark[i];
		const struct xiw_sqe *e;

		if (k->kind != XIW_TXK_SQ || k->end <= from)
			continue;
		e = &qp->sq[k->idx & qp->sq_mask];
		if (sqe_is_request(e->opcode) ||
		    !(qp->sig_all || (e->flags & IBV_SEND_SIGNALED) || e->zc))
			continue;
		xiw_llp_ack_mark(qp->llp,
				 qp->txc.tail + (uint32_t)(k->end - b->sent));
		return;
	}
}

/*
 * A batch with zero-copy payload: one sendmsg per run of iovecs that go
 * the same way (MSG_ZEROCOPY or copied), until a short send. Does not
 * advance the batch. Return: bytes accepted, -EAGAIN if none, -errno.
 */
static ssize_t batch_send_runs(struct xiw_qp *qp, int end)
{
	struct xiw_txbatch *b = qp->b;
	size_t total = 0;
	int i = b->iov_idx;

	while (i < end) {
		size_t want = 0;
		bool zc = b->zc[i], used = false;
		int j = i;
		uint32_t id;
		ssize_t n;

		for (; j < end && b->zc[j] == zc; j++)
			want += b->iov[j].iov_len;
		tx_mark_want(qp, b->sent + total);
		n = zc ? xiw_llp_send_zc(qp->llp, b->iov + i, j - i, &id, &used) :
			 xiw_llp_send(qp->llp, b->iov + i, j - i, false);
		if (n < 0)
			return total ? (ssize_t)total : n;
		if (used) {
			qp->zc_last = id;
			qp->zc_any = true;
		}
		total += (size_t)n;
		if ((size_t)n < want)
			break;
		i = j;
	}
	return (ssize_t)total;
}

/*
 * One sendmsg (or one per zero-copy run) of the batch's FPDUs up to the
 * first FPDU end at or past @limit bytes (at least one whole FPDU, or the
 * rest of a partly sent one). A budget that ended inside an FPDU sent its
 * header alone in one call and its trailer with the next header in the
 * next: two calls per 4 KB WR and FPDUs split across turns for the
 * datamover (seed 003 pieces). *@want: the bytes offered.
 * Return: bytes accepted, -EAGAIN, -errno.
 */
static ssize_t batch_send(struct xiw_qp *qp, size_t limit, size_t *want)
{
	struct xiw_txbatch *b = qp->b;
	size_t bytes = 0;
	int end = b->iov_idx;

	while (end < b->niov) {
		bytes += b->iov[end].iov_len;
		if (b->fend[end++] && bytes >= limit)
			break;
	}
	*want = bytes;
	if (b->any_zc)
		return batch_send_runs(qp, end);
	tx_mark_want(qp, b->sent);
	return xiw_llp_send(qp->llp, b->iov + b->iov_idx, end - b->iov_idx,
			    false);
}

/*
 * RFC 6581 §4 lets the initiator send as soon as the MPA reply is in,
 * but Linux siw completes its accept only once it has read our RTR, and
 * an RTR that arrives while siw hands its socket over after the reply
 * stays unread until more data comes (rtr_nudge in xiw_cm.c). A FIN that
 * reaches siw before it read the RTR is a close during accept, which
 * made iw_cm BUG (iwcm.c:969, Linux 6.1). So an initiator that has heard
 * nothing from the peer holds its FIN until XIW_FIN_HOLD_NUDGES nudges
 * (10, 30, 70 ms after ESTABLISHED) are out; a nudge read by the peer
 * makes it read the RTR first. Anything from the peer releases the FIN
 * at the next nudge tick.
 */
#define XIW_FIN_HOLD_NUDGES 3

bool xiw_tx_fin_would_hold(const struct xiw_qp *qp)
{
	return qp->nudge_on && qp->nudges < XIW_FIN_HOLD_NUDGES && !qp->end_err;
}

static bool fin_hold(struct xiw_qp *qp)
{
	qp->fin_held = xiw_tx_fin_would_hold(qp);
	return qp->fin_held;
}

/* Everything is out: FIN if the stream is to end (tx_lock held). */
static void tx_fin(struct xiw_qp *qp)
{
	if (qp->shutdown_pending && !fin_hold(qp)) {
		qp->shutdown_pending = false;
		xiw_llp_shutdown(qp->llp);
		if (qp->end_err && qp->term_waiting) {	/* TERMINATE is out */
			qp->term_waiting = false;
			xiw_qp_end_async(qp, qp->end_err);
		}
	}
}

/**
 * xiw_tx_send_some() - frame and send up to about @budget bytes (tx_lock
 * held), in sendmsg calls of at most the remaining budget, so a caller
 * serving many QPs can give each a fair piece (seed 003).
 * Return: XIW_TX_DONE nothing left to send (FIN sent if pending),
 * XIW_TX_SHORT the stream lacks send space, XIW_TX_MORE budget used up,
 * XIW_TX_CREDIT the next WR waits for a CQE slot (seed 002).
 */
int xiw_tx_send_some(struct xiw_qp *qp, size_t budget)
{
	size_t done = 0, want;
	uint32_t rx_mark;
	ssize_t n;
	int r;

	if (!qp->llp || qp->tx_dead)
		return XIW_TX_DONE;
	qp->tx_credit = false;
	atomic_store_explicit(&qp->cork_since_ns, 0, memory_order_relaxed);
	for (;;) {
		if (batch_empty(qp->b) && !batch_refill(qp, &r)) {
			if (r == XIW_TX_DONE)
				break;
			return r;
		}
		if (done >= budget)
			return XIW_TX_MORE;
		tx_ack_sync(qp);
		rx_mark = xiw_tx_cork_mark(qp);
		n = batch_send(qp, budget - done, &want);
		if (n == -EAGAIN)
			n = 0;
		if (n < 0) {	/* the stream failed: rx/closed ends it */
			xiw_log(XIW_LOG_INFO, "qp %u: send: %zd",
				qp->ibv.qp_num, n);
			qp->tx_dead = true;
			return XIW_TX_DONE;
		}
		batch_advance(qp->b, (size_t)n);
		if (n)
			xiw_tx_cork_sent(qp, rx_mark);
		if (qp->txc.synced)
			xiw_txc_handed(&qp->txc, (uint32_t)n);
		batch_marks(qp);
		done += (size_t)n;
		if ((size_t)n < want)
			return XIW_TX_SHORT;	/* the kernel took less */
	}
	tx_fin(qp);
	return XIW_TX_DONE;
}

/* A push left work (xiw_tx_send_some() result @r): the datamover takes it. */
static void tx_to_dm(struct xiw_qp *qp, int r)
{
	if (r == XIW_TX_SHORT)
		xiw_dm_pause(qp);
	else if (r == XIW_TX_MORE)
		xiw_dm_activate(qp);
	else if (r == XIW_TX_CREDIT)
		xiw_dm_credit_wait(qp);
}

/**
 * xiw_tx_push() - direct send (seed 003): frame and send in the calling
 * thread (tx_lock held) unless the datamover or the progress thread
 * (tx_wait_write, xiw_tx_push_rx) owns the QP's sending. At most
 * XIW_TX_DIRECT bytes here; the rest goes to the datamover, as does
 * a QP whose stream lacks send space (it resumes it when space is back).
 * Never blocks. With shutdown_pending, sends FIN once everything is out.
 */
void xiw_tx_push(struct xiw_qp *qp)
{
	if (qp->dm_owned || qp->tx_wait_write)
		return;
	tx_to_dm(qp, xiw_tx_send_some(qp, XIW_TX_DIRECT));
}

/* XIW_RESP_PROGRESS=0: the receive path's leftovers go to the datamover. */
static bool tx_resp_progress(void)
{
	static int on = -1;
	const char *v;

	if (on < 0) {
		v = getenv("XIW_RESP_PROGRESS");
		on = v ? atoi(v) != 0 : 1;
	}
	return on;
}

static void tx_resume_fn(void *arg);

/**
 * xiw_tx_push_rx() - send what the receive path made due (READ and Atomic
 * responses, READs that waited for ORD room; tx_lock held), from the
 * thread that parsed the requests: the progress thread, or an app
 * thread's receive pass. Like xiw_tx_push(), but what is left stays with
 * the progress thread (tx_wait_write set, posters keep away): a stream
 * without send space waits for the llp's writable upcall in the progress
 * thread's own epoll, where the peer's next READ requests arrive too, so
 * one wake-up serves both; a used-up XIW_TX_DIRECT budget continues in a
 * progress closure queued behind the other fds' events (fairness between
 * QPs, as the datamover's turns). Handing it to the datamover cost the
 * responder a second thread's wake-ups, a tx_lock hand-over and an
 * epoll_ctl per pause (issue 11: 64 KB ib_read_bw). XIW_RESP_PROGRESS=0
 * restores the datamover hand-off. Never blocks.
 */
void xiw_tx_push_rx(struct xiw_qp *qp)
{
	int r;

	if (qp->dm_owned || qp->tx_wait_write)
		return;
	r = xiw_tx_send_some(qp, XIW_TX_DIRECT);
	if ((r != XIW_TX_SHORT && r != XIW_TX_MORE) || !tx_resp_progress()) {
		tx_to_dm(qp, r);
		return;
	}
	qp->tx_wait_write = true;
	if (r == XIW_TX_SHORT) {
		xiw_llp_want_write(qp->llp, true);
		return;
	}
	xiw_qp_ref(qp);
	if (xiw_progress_run(tx_resume_fn, qp)) {	/* no memory */
		xiw_qp_unref(qp);
		qp->tx_wait_write = false;
		xiw_dm_activate(qp);
	}
}

/* Progress closure: continue after a used-up budget (xiw_tx_push_rx). */
static void tx_resume_fn(void *arg)
{
	struct xiw_qp *qp = arg;

	pthread_mutex_lock(&qp->tx_lock);
	qp->tx_wait_write = false;
	xiw_tx_push_rx(qp);
	xiw_tx_unlock(qp);
	xiw_qp_unref(qp);
}

/**
 * xiw_tx_writable() - llp writable upcall (progress thread): continue the
 * batch and the queues after a short send of xiw_tx_push_rx().
 */
void xiw_tx_writable(void *arg)
{
	struct xiw_qp *qp = arg;

	pthread_mutex_lock(&qp->tx_lock);
	qp->tx_wait_write = false;
	xiw_tx_push_rx(qp);
	xiw_tx_unlock(qp);
}

/** xiw_qp_rtr_nudge() - see xiw_conn.h. */
int xiw_qp_rtr_nudge(struct xiw_qp *qp)
{
	bool heard;
	int ret = 0;

	pthread_mutex_lock(&qp->rx_lock);
	heard = qp->rx.stream_off > 0;
	pthread_mutex_unlock(&qp->rx_lock);
	pthread_mutex_lock(&qp->tx_lock);
	if (heard) {
		ret = -EALREADY;
		qp->nudge_on = false;	/* a held FIN may go */
	} else if (!qp->attached) {
		ret = -ENOTCONN;
	} else if (qp->params.rtr == XIW_RTR_READ) {
		ret = -EINVAL;
	}
	if (!ret && qp->rtr == XIW_RTR_NONE) {
		qp->rtr = XIW_RTR_WRITE;
		if (qp->nudges < UINT8_MAX)
			qp->nudges++;
	}
	if (qp->attached)
		xiw_tx_push(qp);
	xiw_tx_unlock(qp);
	return ret;
}

/** xiw_qp_rtr_nudge_arm() - see xiw_conn.h. */
void xiw_qp_rtr_nudge_arm(struct xiw_qp *qp)
{
	pthread_mutex_lock(&qp->tx_lock);
	qp->nudge_on = true;
	qp->nudges = 0;
	xiw_tx_unlock(qp);
}

/**
 * xiw_qp_send_rtr() - active peer-to-peer side: send the RTR FPDU
 * (RFC 6581 §4) per the attach params: a zero-length READ request with
 * nonzero dummy STags (its zero-length response is absorbed, no WC), a
 * zero-length WRITE, or an empty SEND. It goes before any SQ WR.
 * Return: 0, -ENOTCONN not attached, -EINVAL no RTR negotiated.
 */
int xiw_qp_send_rtr(struct xiw_qp *qp)
{
	int ret = 0;

	pthread_mutex_lock(&qp->tx_lock);
	if (!qp->attached)
		ret = -ENOTCONN;
	else if (qp->params.rtr == XIW_RTR_NONE)
		ret = -EINVAL;
	if (!ret) {
		qp->rtr = qp->params.rtr;
		xiw_tx_push(qp);
	}
	xiw_tx_unlock(qp);
	return ret;
}
