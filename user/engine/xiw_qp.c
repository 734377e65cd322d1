// SPDX-License-Identifier: MIT
/*
 * Queue pairs: create/destroy, the verbs state machine (RESET -> INIT ->
 * RTR -> RTS, any -> ERR with flush, ERR -> RESET), ORD/IRD, attach to and
 * detach from the CM's stream (xiw_conn.h), and the end-of-stream paths.
 * Lock rules: see xiw_obj.h.
 *
 * Send WCs never overflow the send CQ (seed 002): started signalled WRs
 * hold a reserved slot; flush WCs (and a TERMINATE's error WC for an
 * unsignalled WR) wait, in posting order, until the CQ has room.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "xiw_cm.h"
#include "xiw_obj.h"

static atomic_uint qp_numbers = 0x100;

/* Every live QP, for xiw_qp_lookup() (CM by QP number). */
static pthread_mutex_t qp_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xiw_qp *qp_reg;

static void qp_reg_add(struct xiw_qp *qp)
{
	pthread_mutex_lock(&qp_reg_lock);
	qp->reg_next = qp_reg;
	qp_reg = qp;
	pthread_mutex_unlock(&qp_reg_lock);
}

static void qp_reg_del(struct xiw_qp *qp)
{
	struct xiw_qp **pp;

	pthread_mutex_lock(&qp_reg_lock);
	for (pp = &qp_reg; *pp; pp = &(*pp)->reg_next)
		if (*pp == qp) {
			*pp = qp->reg_next;
			break;
		}
	pthread_mutex_unlock(&qp_reg_lock);
}

/** xiw_qp_lookup() - see xiwarp.h. */
struct xiw_qp *xiw_qp_lookup(struct ibv_context *ctx, uint32_t qpn)
{
	struct xiw_qp *qp;

	pthread_mutex_lock(&qp_reg_lock);
	for (qp = qp_reg; qp; qp = qp->reg_next)
		if (qp->ibv.qp_num == qpn && (!ctx || qp->ibv.context == ctx))
			break;
	pthread_mutex_unlock(&qp_reg_lock);
	return qp;
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t s = 1;

	while (s < n)
		s <<= 1;
	return s;
}

static int qp_caps_ok(const struct ibv_qp_cap *c)
{
	return c->max_send_wr <= XIW_MAX_QP_WR && c->max_recv_wr <= XIW_MAX_QP_WR &&
	       c->max_send_sge <= XIW_MAX_SGE && c->max_recv_sge <= XIW_MAX_SGE &&
	       c->max_inline_data <= XIW_MAX_INLINE;
}

static int qp_alloc_queues(struct xiw_qp *qp, const struct ibv_qp_cap *c)
{
	qp->sq_max = c->max_send_wr ? c->max_send_wr : 1;
	qp->sq_size = pow2_at_least(qp->sq_max);
	qp->sq_mask = qp->sq_size - 1;
	qp->rq_max = c->max_recv_wr ? c->max_recv_wr : 1;
	qp->rq_size = pow2_at_least(qp->rq_max);
	qp->rq_mask = qp->rq_size - 1;
	qp->max_inline = c->max_inline_data;
	qp->sq = calloc(qp->sq_size, sizeof(*qp->sq));
	qp->rq = calloc(qp->rq_size, sizeof(*qp->rq));
	if (qp->max_inline)
		qp->inl = calloc(qp->sq_size, qp->max_inline);
	if (!qp->sq || !qp->rq || (qp->max_inline && !qp->inl))
		return -ENOMEM;
	return xiw_txc_init(&qp->txc, xiw_tx_config()->method, qp->sq_size);
}

static void qp_free_mem(struct xiw_qp *qp)
{
	free(qp->sq);
	free(qp->rq);
	xiw_txbatch_put(qp->b);
	xiw_rxstage_put(qp->stg);
	free(qp->orq);
	free(qp->irq);
	free(qp->inl);
	xiw_txc_free(&qp->txc);
	free(qp);
}

static void qp_init_ibv(struct xiw_qp *qp, struct xiw_pd *pd,
			const struct ibv_qp_init_attr *a)
{
	qp->ibv.context = pd->ibv.context;
	qp->ibv.qp_context = a->qp_context;
	qp->ibv.pd = &pd->ibv;
	qp->ibv.send_cq = a->send_cq;
	qp->ibv.recv_cq = a->recv_cq;
	qp->ibv.srq = a->srq;
	qp->ibv.qp_num = atomic_fetch_add(&qp_numbers, 1);
	qp->ibv.handle = qp->ibv.qp_num;
	qp->ibv.state = IBV_QPS_RESET;
	qp->ibv.qp_type = IBV_QPT_RC;
	pthread_mutex_init(&qp->ibv.mutex, NULL);
	pthread_cond_init(&qp->ibv.cond, NULL);
}

/**
 * xiw_qp_create() - an RC QP in state RESET.
 * @attr: qp_type must be IBV_QPT_RC, both CQs set, no SRQ; caps within
 *        XIW_MAX_QP_WR / XIW_MAX_SGE / XIW_MAX_INLINE. attr->cap gets the
 *        values enforced (0 WRs/SGEs are raised to 1). The CQs may be
 *        smaller than the queues: WCs then wait for polls (seed 002).
 * Return: the QP, or NULL+errno (EINVAL bad type/caps, ENOMEM).
 */
struct xiw_qp *xiw_qp_create(struct xiw_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct xiw_qp *qp;

	if (!pd || !attr || attr->qp_type != IBV_QPT_RC || !attr->send_cq ||
	    !attr->recv_cq || !qp_caps_ok(&attr->cap)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->srq)	/* its own ring only holds the WR being filled */
		attr->cap.max_recv_wr = 1;
	qp = calloc(1, sizeof(*qp));
	if (!qp || qp_alloc_queues(qp, &attr->cap)) {
		if (qp)
			qp_free_mem(qp);
		errno = ENOMEM;
		return NULL;
	}
	qp->pd = pd;
	qp->scq = xiw_cq_from_ibv(attr->send_cq);
	qp->rcq = xiw_cq_from_ibv(attr->recv_cq);
	qp->sig_all = attr->sq_sig_all;
	qp->ack_mode = xiw_tx_config()->ack;
	if (qp->ack_mode)	/* load the ACK tracer now, not at the first WR */
		xiw_txack_preload();
	qp->max_send_sge = attr->cap.max_send_sge ? attr->cap.max_send_sge : 1;
	qp->max_recv_sge = attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1;
	qp->ord = XIW_MAX_ORD;
	qp->ird = XIW_MAX_IRD;
	atomic_init(&qp->state, IBV_QPS_RESET);
	pthread_mutex_init(&qp->tx_lock, NULL);
	pthread_mutex_init(&qp->sq_lock, NULL);
	atomic_init(&qp->tx_more, false);
	atomic_init(&qp->tx_uncork, false);
	pthread_mutex_init(&qp->rq_lock, NULL);
	pthread_mutex_init(&qp->rx_lock, NULL);
	pthread_mutex_init(&qp->ref_lock, NULL);
	pthread_cond_init(&qp->ref_cond, NULL);
	qp_init_ibv(qp, pd, attr);
	attr->cap.max_send_wr = qp->sq_max;
	attr->cap.max_recv_wr = qp->srq ? 0 : qp->rq_max;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_sge = qp->max_recv_sge;
	/* listed on its CQs, or a poll could not resume it (credits) */
	if (xiw_cq_qp_add(qp->scq, qp) ||
	    (qp->rcq != qp->scq && xiw_cq_qp_add(qp->rcq, qp))) {
		xiw_cq_qp_del(qp->scq, qp);
		qp_free_mem(qp);
		errno = ENOMEM;
		return NULL;
	}
	qp->srq = attr->srq ? xiw_srq_from_ibv(attr->srq) : NULL;
	if (qp->srq && xiw_srq_attach(qp->srq, qp)) {
		xiw_cq_qp_del(qp->scq, qp);
		if (qp->rcq != qp->scq)
			xiw_cq_qp_del(qp->rcq, qp);
		qp_free_mem(qp);
		errno = ENOMEM;
		return NULL;
	}
	xiw_pd_get(pd);
	atomic_fetch_add(&qp->scq->nqp, 1);
	atomic_fetch_add(&qp->rcq->nqp, 1);
	qp_reg_add(qp);
	return qp;
}

/* ------------------------------------------------------- completions --- */

static enum ibv_wc_opcode wc_opcode(uint32_t wr_opcode)
{
	switch (wr_opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * The WC of SQ WR @e (tx_lock held): a started WR's goes into its reserved
 * slot; any other (flushed, or failed while unsignalled) only if the send
 * CQ has room, else scq_wait is raised and the caller stops there.
 * A status set by xiw_qp_sq_fail_head() wins over @st.
 * Return: true if the WC was made.
 */
/* tx_lock held; posters read sq_tail without it (room check) */
static void sq_tail_inc(struct xiw_qp *qp)
{
	__atomic_store_n(&qp->sq_tail, qp->sq_tail + 1, __ATOMIC_RELEASE);
}

static bool sq_complete(struct xiw_qp *qp, struct xiw_sqe *e,
			enum ibv_wc_status st)
{
	struct ibv_wc wc = {
		.wr_id = e->wr_id,
		.status = e->fail_st ? (enum ibv_wc_status)e->fail_st :
			  st == IBV_WC_SUCCESS && e->local_st ?
			  (enum ibv_wc_status)e->local_st : st,
		.opcode = wc_opcode(e->opcode),
		.byte_len = e->len,
		.qp_num = qp->ibv.qp_num,
		.src_qp = qp->ibv.qp_num,
	};

	if (e->resv) {
		e->resv = false;
		xiw_cq_push_reserved(qp->scq, &wc, false);
		return true;
	}
	return !xiw_cq_push_wait(qp->scq, &wc, &qp->scq_wait);
}

/**
 * xiw_qp_sq_retire() - complete finished SQ WRs in posting order (tx_lock
 * held); stops at the first WR still in flight (e.g. a READ whose response
 * has not fully arrived) or refused by a TERMINATE (its WC comes with the
 * flush).
 */
void xiw_qp_sq_retire(struct xiw_qp *qp)
{
	while (qp->sq_tail != qp->sq_tx) {
		struct xiw_sqe *e = &qp->sq[qp->sq_tail & qp->sq_mask], done;
		bool sig;

		if (e->state != XIW_SQE_DONE || e->fail_st)
			break;
		sig = qp->sig_all || (e->flags & IBV_SEND_SIGNALED);
		if (sig && !e->resv) {	/* never: signalled WRs hold a slot */
			if (!sq_complete(qp, e, IBV_WC_SUCCESS))
				break;
			sq_tail_inc(qp);
			continue;
		}
		/*
		 * Free the SQ slot before the WC is seen: posters check for
		 * room without tx_lock, and an app that posts after polling
		 * this WC must find its slot free. The WC is made from a copy
		 * because a poster may refill the slot at once.
		 */
		done = *e;
		sq_tail_inc(qp);
		if (sig)
			sq_complete(qp, &done, IBV_WC_SUCCESS);
	}
}

static void qp_set_state(struct xiw_qp *qp, enum ibv_qp_state s)
{
	atomic_store(&qp->state, s);
	qp->ibv.state = s;
}

/* Past SQ WR sq_tail, which has its WC now (tx_lock held). */
static void sq_pop(struct xiw_qp *qp)
{
	if (qp->sq_tx == qp->sq_tail)	/* it had not started */
		qp->sq_tx++;
	sq_tail_inc(qp);
}

/**
 * xiw_qp_sq_flush() - complete every SQ WR not yet completed with
 * IBV_WC_WR_FLUSH_ERR, in posting order, as far as the send CQ has room;
 * the rest stay queued (they still count against max_send_wr) and a poll
 * that frees slots continues (xiw_qp_credit_kick). tx_lock held, QP in
 * ERROR. Used on the move to ERROR and for WRs posted while in ERROR
 * (drain pattern: post a WR, wait for its flush completion).
 */
void xiw_qp_sq_flush(struct xiw_qp *qp)
{
	while (qp->sq_tail != __atomic_load_n(&qp->sq_head, __ATOMIC_ACQUIRE)) {
		struct xiw_sqe *e = &qp->sq[qp->sq_tail & qp->sq_mask], done;

		if (!e->resv) {	/* needs room in the CQ first */
			if (!sq_complete(qp, e, IBV_WC_WR_FLUSH_ERR))
				break;
			sq_pop(qp);
			continue;
		}
		done = *e;	/* as in xiw_qp_sq_retire: slot first */
		sq_pop(qp);
		sq_complete(qp, &done, IBV_WC_WR_FLUSH_ERR);
	}
}

/**
 * xiw_qp_sq_fail_head() - complete the oldest SQ WR that went on the wire
 * but has not completed (e.g. a READ awaiting its response) with @st.
 * tx_lock held. Does nothing when no such WR exists. Without a reserved
 * slot and with the send CQ full the WR keeps @st and waits at the SQ
 * head: the flush that follows makes its WC first.
 */
void xiw_qp_sq_fail_head(struct xiw_qp *qp, enum ibv_wc_status st)
{
	struct xiw_sqe *e;

	if (qp->sq_tail == qp->sq_tx)
		return;
	e = &qp->sq[qp->sq_tail & qp->sq_mask];
	e->fail_st = (uint8_t)st;
	/* no WC while the kernel may still send from zero-copy pages; the
	 * move to ERROR that follows skips its own wait (tx_failed) */
	if (!qp->tx_failed)
		xiw_txack_zc_quiesce(qp);
	qp->tx_failed = true;	/* the WRs behind it flush, ACKed or not */
	if (sq_complete(qp, e, st))
		sq_pop(qp);
}

/*
 * RESET or destroy: SQ WRs still waiting for their WC are dropped; give
 * back the slots of those that hold one (tx_lock held).
 * Return: true if the send CQ's waiters must be kicked (no lock held).
 */
static bool sq_drop_resv(struct xiw_qp *qp)
{
	uint32_t n = 0;

	for (uint32_t i = qp->sq_tail; i != qp->sq_head; i++) {
		n += qp->sq[i & qp->sq_mask].resv;
		qp->sq[i & qp->sq_mask].resv = false;
	}
	return xiw_cq_unreserve(qp->scq, n);
}

void xiw_qp_credit_kick(struct xiw_qp *qp, struct xiw_cq *cq)
{
	if (qp->scq == cq && atomic_exchange(&qp->scq_wait, false)) {
		pthread_mutex_lock(&qp->tx_lock);
		if (atomic_load(&qp->state) == IBV_QPS_ERR)
			xiw_qp_sq_flush(qp);
		else if (atomic_load(&qp->state) == IBV_QPS_RTS)
			xiw_qp_sq_retire(qp);
		xiw_tx_unlock(qp);
	}
	if (qp->rcq == cq && atomic_exchange(&qp->rcq_wait, false))
		xiw_rq_credit_kick(qp);
}

/**
 * xiw_qp_to_error() - ERROR: every outstanding SQ WR (posted, in flight or
 * waiting for a READ response) and every posted RQ WR completes with
 * IBV_WC_WR_FLUSH_ERR, in posting order. tx_lock held. Idempotent.
 * A batch already framed stays (the stream must end on an FPDU boundary);
 * its completion marks are dropped.
 */
void xiw_qp_to_error(struct xiw_qp *qp)
{
	if (atomic_load(&qp->state) == IBV_QPS_ERR)
		return;
	if (atomic_load(&qp->state) == IBV_QPS_RTS && !qp->tx_failed)
		xiw_txack_settle(qp);	/* acknowledged WRs are not flushed */
	qp_set_state(qp, IBV_QPS_ERR);
	xiw_qp_sq_flush(qp);
	qp->orq_tail = qp->orq_head;
	qp->irq_tail = qp->irq_head;
	qp->irq_active = false;
	qp->rtr = XIW_RTR_NONE;
	if (qp->msg.kind != XIW_TXK_TERM)
		qp->msg.kind = XIW_TXK_NONE;
	if (qp->b)
		qp->b->mark_idx = qp->b->nmark;
	xiw_txc_reset(&qp->txc);	/* its WRs were (or will be) flushed */
	qp->zc_wait = 0;
	xiw_txack_forget(qp);
	xiw_rq_flush(qp);
}

/*
 * tx_lock held. WRs still waiting for flush WCs are dropped with their
 * slots. *kick_s, *kick_r: the send, receive CQ's waiters are to be kicked
 * once no lock is held.
 */
static void qp_to_reset(struct xiw_qp *qp, bool *kick_s, bool *kick_r)
{
	qp_set_state(qp, IBV_QPS_RESET);
	*kick_s = sq_drop_resv(qp);
	pthread_mutex_lock(&qp->sq_lock);	/* no poster in between */
	qp->sq_head = qp->sq_tx = qp->sq_tail = 0;
	pthread_mutex_unlock(&qp->sq_lock);
	qp->orq_head = qp->orq_tail = 0;
	qp->irq_head = qp->irq_tail = 0;
	qp->irq_active = false;
	qp->term = 0;
	qp->rtr = XIW_RTR_NONE;
	xiw_tx_reset(qp);
	*kick_r = xiw_rq_reset(qp);
}

/* ------------------------------------------------------ state machine --- */

static bool qp_transition_ok(enum ibv_qp_state cur, enum ibv_qp_state nxt)
{
	if (nxt == IBV_QPS_ERR || nxt == IBV_QPS_RESET)
		return true;
	switch (cur) {
	case IBV_QPS_RESET:
		return nxt == IBV_QPS_INIT;
	case IBV_QPS_INIT:
		return nxt == IBV_QPS_INIT || nxt == IBV_QPS_RTR;
	case IBV_QPS_RTR:
		return nxt == IBV_QPS_RTS;
	case IBV_QPS_RTS:
	case IBV_QPS_SQE:
		return nxt == IBV_QPS_RTS;
	default:
		return false;
	}
}

static int qp_modify_attrs(struct xiw_qp *qp, const struct ibv_qp_attr *a,
			   int mask)
{
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > XIW_MAX_ORD)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > XIW_MAX_IRD)
		return -EINVAL;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->ord = a->max_rd_atomic ? a->max_rd_atomic : 1;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->ird = a->max_dest_rd_atomic ? a->max_dest_rd_atomic : 1;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->access = a->qp_access_flags;
	return 0;
}

static int qp_detach_locked(struct xiw_qp *qp, bool abort,
			    struct xiw_llp **abort_llp,
			    struct xiw_cm_conn **abort_conn);

/**
 * xiw_qp_modify() - verbs QP state machine.
 * Transitions: RESET->INIT, INIT->INIT/RTR, RTR->RTS, RTS->RTS, any->ERR;
 * INIT/RTR asked of a connected (CM-attached) RTS QP are ignored, as siw does
 * (flush; a connected QP also closes its stream gracefully), any->RESET
 * (not while connected; queued WRs, also those whose flush WC still waits
 * for room in a full CQ, are dropped without completions).
 * Attributes: max_rd_atomic (ORD <= XIW_MAX_ORD), max_dest_rd_atomic (IRD
 * <= XIW_MAX_IRD), qp_access_flags; IB path attributes are accepted and
 * ignored.
 * Return: 0, or -EINVAL (illegal transition, out-of-range value).
 */
int xiw_qp_modify(struct xiw_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	enum ibv_qp_state cur, nxt;
	bool kick_s = false, kick_r = false;
	int ret;

	pthread_mutex_lock(&qp->tx_lock);
	cur = atomic_load(&qp->state);
	nxt = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	/*
	 * A QP the CM connected is RTS already; an application that drives
	 * its own QP (rping -q: rdma_init_qp_attr + ibv_modify_qp after
	 * ESTABLISHED) asks for INIT and RTR again. iWARP providers (siw)
	 * ignore those states there; so do we.
	 */
	if (qp->attached && cur == IBV_QPS_RTS &&
	    (nxt == IBV_QPS_INIT || nxt == IBV_QPS_RTR))
		nxt = cur;
	/* no IBV_QP_STATE: attributes only, in whatever state */
	ret = nxt == cur || qp_transition_ok(cur, nxt) ? 0 : -EINVAL;
	if (!ret && nxt == IBV_QPS_RESET && qp->attached)
		ret = -EINVAL;
	if (!ret)
		ret = qp_modify_attrs(qp, attr, mask);
	if (ret || !(mask & IBV_QP_STATE) || nxt == cur) {
		xiw_tx_unlock(qp);
		return ret;
	}
	if (nxt == IBV_QPS_ERR) {
		if (qp->attached)
			qp_detach_locked(qp, false, NULL, NULL);
		else
			xiw_qp_to_error(qp);
	} else if (nxt == IBV_QPS_RESET) {
		qp_to_reset(qp, &kick_s, &kick_r);
	} else {
		qp_set_state(qp, nxt);
		if (nxt == IBV_QPS_RTS)
			xiw_tx_push(qp);
	}
	xiw_tx_unlock(qp);
	if (kick_s)
		xiw_cq_credit_kick(qp->scq);
	if (kick_r)
		xiw_cq_credit_kick(qp->rcq);
	return 0;
}

/**
 * xiw_qp_query() - current attributes: state, caps (max_inline_data,
 * max_recv_wr 0 on an SRQ), ORD/IRD, access flags, the port's MTU, IB's
 * retry defaults (TCP retransmits for iWARP); @init gets the creation
 * attributes (enforced caps, SRQ).
 * Return: 0.
 */
int xiw_qp_query(struct xiw_qp *qp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init)
{
	(void)mask;
	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	pthread_mutex_lock(&qp->tx_lock);
	attr->qp_state = atomic_load(&qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->max_rd_atomic = qp->ord;
	attr->max_dest_rd_atomic = qp->ird;
	attr->qp_access_flags = qp->access;
	attr->port_num = 1;
	attr->path_mtu = IBV_MTU_1024;
	if (qp->pd->dev) {	/* the port's MTU (an Ethernet interface's) */
		struct ibv_port_attr pa;

		xiw_port_query(qp->pd->dev, &pa);
		attr->path_mtu = pa.active_mtu;
	}
	/* TCP retransmits for iWARP: report the IB defaults rdma_cm sets */
	attr->timeout = 14;
	attr->retry_cnt = 7;
	attr->rnr_retry = 7;
	attr->sq_draining = 0;
	attr->ah_attr.port_num = 1;
	attr->cap.max_send_wr = qp->sq_max;
	attr->cap.max_recv_wr = qp->srq ? 0 : qp->rq_max;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_sge = qp->max_recv_sge;
	attr->cap.max_inline_data = qp->max_inline;
	xiw_tx_unlock(qp);
	init->qp_context = qp->ibv.qp_context;
	init->send_cq = qp->ibv.send_cq;
	init->recv_cq = qp->ibv.recv_cq;
	init->srq = qp->ibv.srq;
	init->cap = attr->cap;
	init->qp_type = IBV_QPT_RC;
	init->sq_sig_all = qp->sig_all;
	return 0;
}

/* ------------------------------------------------- attach / detach --- */

static void noop_readable(void *arg) { (void)arg; }
static void noop_closed(void *arg, int err) { (void)arg; (void)err; }

static const struct xiw_llp_cb noop_cb = {
	.readable = noop_readable,
	.writable = noop_readable,
	.closed = noop_closed,
};

static const struct xiw_llp_cb qp_llp_cb = {
	.readable = xiw_rx_readable,
	.writable = xiw_tx_writable,
	.closed = xiw_rx_closed,
};

static uint16_t clamp_rd(uint16_t v, uint16_t max)
{
	if (v == 0)
		return 1;
	return v > max ? max : v;
}

/*
 * Size the READ/Atomic queues for the negotiated ORD/IRD, one more for
 * the RTR (a zero-length READ in either direction), before the first
 * FPDU (tx_lock held, both queues empty). Return: 0 or -ENOMEM.
 */
static int qp_rdq_fit(struct xiw_qp *qp)
{
	uint32_t no = pow2_at_least(qp->ord + 1u), ni = pow2_at_least(qp->ird + 1u);

	if (no > qp->orq_mask + 1 || !qp->orq) {
		struct xiw_orqe *o = calloc(no, sizeof(*o));

		if (!o)
			return -ENOMEM;
		free(qp->orq);
		qp->orq = o;
		qp->orq_mask = no - 1;
	}
	if (ni > qp->irq_mask + 1 || !qp->irq) {
		struct xiw_irqe *i = calloc(ni, sizeof(*i));

		if (!i)
			return -ENOMEM;
		free(qp->irq);
		qp->irq = i;
		qp->irq_mask = ni - 1;
	}
	return 0;
}

/**
 * xiw_qp_attach() - the QP takes the connected stream @llp (RFC 5044 §7:
 * the FPDU stream starts after the MPA reply) and moves to RTS. A passive
 * peer-to-peer side (p->rtr != XIW_RTR_NONE, !p->initiator) sends nothing
 * until the RTR has arrived (RFC 6581 §4).
 * Return: 0, -EINVAL if the QP is not in INIT/RTR or already attached,
 * -ENOMEM if its READ queues could not be sized.
 */
int xiw_qp_attach(struct xiw_qp *qp, struct xiw_cm_conn *conn,
		  struct xiw_llp *llp, const struct xiw_conn_params *p)
{
	enum ibv_qp_state s;

	pthread_mutex_lock(&qp->tx_lock);
	s = atomic_load(&qp->state);
	if ((s != IBV_QPS_INIT && s != IBV_QPS_RTR) || qp->attached) {
		xiw_tx_unlock(qp);
		return -EINVAL;
	}
	qp->llp = llp;
	qp->conn = conn;
	qp->params = *p;
	qp->txf = (struct xiw_txf){ .crc = p->crc, .markers = p->markers_tx,
				    .max_ulpdu = p->max_ulpdu };
	qp->ord = clamp_rd(p->ord, XIW_MAX_ORD);
	qp->ird = clamp_rd(p->ird, XIW_MAX_IRD);
	if (qp_rdq_fit(qp)) {
		qp->llp = NULL;
		qp->conn = NULL;
		xiw_tx_unlock(qp);
		return -ENOMEM;
	}
	qp->tx_msn = qp->tx_rd_msn = qp->tx_term_msn = qp->tx_atom_msn = 1;
	qp->tx_hold = p->rtr != XIW_RTR_NONE && !p->initiator;
	qp->rtr_wait = qp->tx_hold;
	qp->attached = true;
	qp->ever_attached = true;
	qp->end_err = 0;
	qp->term_waiting = false;
	qp->closed_reported = false;
	qp->tx_dead = qp->shutdown_pending = qp->tx_wait_write = false;
	xiw_tx_reset(qp);
	xiw_rx_reset(qp);
	/* the CM read exactly the MPA frames: the next octet is FPDU 0's */
	xiw_llp_fpdu_stream(llp, p->crc, p->markers_rx);
	qp_set_state(qp, IBV_QPS_RTS);
	xiw_tx_unlock(qp);

	xiw_log(XIW_LOG_INFO,
		"qp %u: attached: crc %d markers tx %d rx %d max_ulpdu %u ird %u ord %u rtr %d %s",
		qp->ibv.qp_num, p->crc, p->markers_tx, p->markers_rx,
		p->max_ulpdu, qp->ird, qp->ord, p->rtr,
		p->initiator ? "active" : "passive");
	xiw_llp_set_owner(llp, &qp_llp_cb, qp);
	pthread_mutex_lock(&qp->tx_lock);
	xiw_tx_push(qp);
	xiw_tx_unlock(qp);
	xiw_rx_kick(qp);	/* bytes may already wait behind the MPA frames */
	return 0;
}

/*
 * tx_lock held. Graceful: ERROR + flush, drain the framed batch, then FIN
 * (the QP keeps the stream until EOF and reports it then). Abortive:
 * ERROR + flush, the QP lets go of the stream at once; the caller resets
 * *abort_llp and reports *abort_conn (if set) to the CM.
 */
static int qp_detach_locked(struct xiw_qp *qp, bool abort,
			    struct xiw_llp **abort_llp,
			    struct xiw_cm_conn **abort_conn)
{
	if (!qp->attached)
		return -ENOTCONN;
	xiw_qp_to_error(qp);
	if (!abort) {
		qp->shutdown_pending = true;
		xiw_tx_push(qp);
		xiw_rx_kick(qp);	/* read (and drop) until EOF, even if paused */
		return 0;
	}
	*abort_llp = qp->llp;
	*abort_conn = qp->closed_reported ? NULL : qp->conn;
	qp->llp = NULL;
	qp->conn = NULL;
	qp->attached = false;
	qp->closed_reported = true;
	qp->rx_stop = true;
	xiw_tx_reset(qp);
	return 0;
}

enum qp_let_go_how { QP_GRACEFUL, QP_LET_GO_FIN, QP_LET_GO_RST };

/*
 * Detach (QP_GRACEFUL: FIN after the queued FPDUs, the QP reads on until
 * EOF) or let go of the stream at once. Letting go ends it with RST
 * (QP_LET_GO_RST: a protocol error or an aborted connect) or with a FIN
 * (QP_LET_GO_FIN: the QP is being destroyed). A destroyed QP does not
 * reset the stream: the peer's last message may still be in the peer's
 * send path, and a RST or an early FIN fails it there (siw completes a
 * SEND whose bytes already left with IBV_WC_LOC_QP_OP_ERR). The stream
 * goes back to the CM, whose xiw_llp_close() drains what the peer sent
 * and sends the FIN once the peer has been quiet briefly (ksock_linger.c),
 * as iw_cm does on destroy: QP to ERROR, socket released with FIN.
 */
static void qp_let_go(struct xiw_qp *qp, enum qp_let_go_how how)
{
	struct xiw_cm_conn *conn = NULL;
	struct xiw_llp *l = NULL;

	pthread_mutex_lock(&qp->tx_lock);
	qp_detach_locked(qp, how != QP_GRACEFUL, &l, &conn);
	xiw_tx_unlock(qp);
	if (l) {
		xiw_rx_fence(qp);	/* an app receive pass may use it */
		xiw_llp_set_owner(l, &noop_cb, NULL);
		if (how == QP_LET_GO_RST)
			xiw_llp_abort(l);
		/* QP_LET_GO_FIN: the CM's xiw_llp_close() sends the FIN */
	}
	if (conn)
		xiw_cm_stream_closed(conn, -ECONNABORTED);
}

/**
 * xiw_qp_detach() - end the stream: graceful (@abort false: queued FPDUs
 * go out, then FIN; the QP reads on until EOF, then calls
 * xiw_cm_stream_closed(conn, 0)) or abortive (@abort true: RST now, and
 * xiw_cm_stream_closed(conn, -ECONNABORTED) before returning; the QP no
 * longer uses the llp or conn). Either way the QP goes to ERROR and
 * flushes. Safe to call more than once (later calls do nothing).
 */
void xiw_qp_detach(struct xiw_qp *qp, bool abort)
{
	qp_let_go(qp, abort ? QP_LET_GO_RST : QP_GRACEFUL);
}

/*
 * Read and drop what the peer already sent (bounded), so closing the
 * socket sends FIN after our TERMINATE instead of a RST that could make
 * the peer lose it. Progress thread.
 */
static void qp_drain_input(struct xiw_qp *qp, struct xiw_llp *l)
{
	struct iovec v = { qp->rxs.discard, sizeof(qp->rxs.discard) };
	size_t total = 0;
	ssize_t n;

	while (l && total < (1u << 20) && (n = xiw_llp_recv(l, &v, 1)) > 0)
		total += (size_t)n;
}

/**
 * xiw_qp_stream_end() - the stream ended (@err: 0 EOF, -errno RST/error,
 * -EPROTO TERMINATE): ERROR, flush, hand the llp back to the CM (no more
 * upcalls to the QP) and call xiw_cm_stream_closed() exactly once.
 * Progress thread, no QP lock held.
 */
/*
 * Say why a QP left RTS with work outstanding: the flush completions the
 * application then sees say nothing of the cause (a CI run once showed
 * only "Failed status 5" from ib_read_bw -b). TERMINATEs (-EPROTO) are
 * logged where they are sent or received; a graceful close with nothing
 * posted is normal.
 */
static void qp_end_log(const struct xiw_qp *qp, int err, uint32_t sq_out)
{
	if (err == -EPROTO)
		return;
	/* no WR lost: a peer that reset or closed under a send of ours
	 * (a READ response, a TERMINATE) is not worth a warning */
	if (err)
		xiw_log(sq_out ? XIW_LOG_WARN : XIW_LOG_INFO,
			"qp %u: the stream failed (%s): QP in ERROR, %u send WRs flushed",
			qp->ibv.qp_num, strerror(-err), sq_out);
	else if (sq_out)
		xiw_log(XIW_LOG_WARN, "qp %u: the peer closed the stream with %u send WRs outstanding: QP in ERROR, they are flushed",
			qp->ibv.qp_num, sq_out);
}

void xiw_qp_stream_end(struct xiw_qp *qp, int err)
{
	struct xiw_cm_conn *conn;
	struct xiw_llp *l;
	uint32_t sq_out;
	bool termed;

	xiw_progress_timer_cancel(&qp->end_timer);
	xiw_progress_timer_cancel(&qp->rq_timer);
	pthread_mutex_lock(&qp->tx_lock);
	if (!qp->attached) {
		xiw_tx_unlock(qp);
		return;
	}
	termed = qp->end_err != 0;
	if (termed)
		err = qp->end_err;
	sq_out = atomic_load(&qp->state) == IBV_QPS_RTS ?
		 __atomic_load_n(&qp->sq_head, __ATOMIC_ACQUIRE) - qp->sq_tail : 0;
	xiw_qp_to_error(qp);
	l = qp->llp;
	conn = qp->conn;
	qp->llp = NULL;
	qp->conn = NULL;
	qp->attached = false;
	qp->closed_reported = true;
	qp->rx_stop = true;
	xiw_tx_reset(qp);
	xiw_tx_unlock(qp);
	if (!termed)
		qp_end_log(qp, err, sq_out);
	xiw_rx_fence(qp);	/* an app receive pass may use @l */
	if (termed)
		qp_drain_input(qp, l);
	xiw_llp_set_owner(l, &noop_cb, NULL);
	if (conn)
		xiw_cm_stream_closed(conn, err);
	/* not a graceful close: TERMINATE, reset, LLP error */
	if (err)
		xiw_async_qp(qp, IBV_EVENT_QP_FATAL);
}

static void qp_end_timeout(void *arg)
{
	xiw_qp_stream_end(arg, -EPROTO);
}

/* Keep the header of the FPDU that failed for the TERMINATE payload. */
static void qp_term_hdr(struct xiw_qp *qp)
{
	int n = xiw_hdr_len(qp->rx.hbuf);

	qp->term_hdr_len = 0;
	if (n > 0 && n <= XIW_MAX_HDR_LEN) {
		memcpy(qp->term_hdr, qp->rx.hbuf, (size_t)n);
		qp->term_hdr_len = (uint32_t)n;
	}
}

/**
 * xiw_qp_fatal() - local protocol violation @term (XIW_TERM()): ERROR,
 * flush, send TERMINATE (RFC 5040 §5.4.2) after the FPDUs already framed,
 * FIN, then xiw_cm_stream_closed(conn, -EPROTO) - at once if the socket
 * took it all, else when writable() has sent it (at most
 * XIW_TERM_FLUSH_MS later). Progress thread, no lock held.
 */
void xiw_qp_fatal(struct xiw_qp *qp, int term)
{
	bool sent;

	pthread_mutex_lock(&qp->tx_lock);
	if (!qp->attached || qp->end_err) {
		xiw_tx_unlock(qp);
		return;
	}
	xiw_log(XIW_LOG_WARN, "qp %u: TERMINATE layer %d type %d code %#x",
		qp->ibv.qp_num, XIW_TERM_LAYER(term), XIW_TERM_ETYPE(term),
		XIW_TERM_ECODE(term));
	xiw_qp_to_error(qp);
	qp->term = term;
	qp_term_hdr(qp);
	qp->end_err = -EPROTO;
	qp->shutdown_pending = true;
	xiw_tx_push(qp);
	sent = !qp->shutdown_pending;	/* FIN went out after the TERMINATE */
	qp->term_waiting = !sent;
	xiw_tx_unlock(qp);
	if (sent)
		xiw_qp_stream_end(qp, -EPROTO);
	else	/* the rest follows from writable(); bounded wait */
		xiw_progress_timer_arm(&qp->end_timer, XIW_TERM_FLUSH_MS,
				       qp_end_timeout, qp);
}

/* ------------------------------------------------------- references --- */

/** xiw_qp_ref() - pin @qp while a progress callback for it is queued. */
void xiw_qp_ref(struct xiw_qp *qp)
{
	pthread_mutex_lock(&qp->ref_lock);
	qp->refs++;
	pthread_mutex_unlock(&qp->ref_lock);
}

/** xiw_qp_unref() - the callback ran; wakes a waiting destroy. */
void xiw_qp_unref(struct xiw_qp *qp)
{
	pthread_mutex_lock(&qp->ref_lock);
	if (--qp->refs == 0)
		pthread_cond_broadcast(&qp->ref_cond);
	pthread_mutex_unlock(&qp->ref_lock);
}

struct qp_end_job {
	struct xiw_qp *qp;
	int err;
};

static void qp_end_fn(void *arg)
{
	struct qp_end_job *j = arg;

	xiw_qp_stream_end(j->qp, j->err);
	xiw_qp_unref(j->qp);
	free(j);
}

/**
 * xiw_qp_end_async() - run xiw_qp_stream_end(@qp, @err) on the progress
 * thread soon; the QP stays pinned until then. Any thread, locks allowed.
 */
void xiw_qp_end_async(struct xiw_qp *qp, int err)
{
	struct qp_end_job *j = malloc(sizeof(*j));

	if (!j) {
		xiw_log(XIW_LOG_ERROR, "qp %u: no memory to end stream",
			qp->ibv.qp_num);
		return;
	}
	j->qp = qp;
	j->err = err;
	xiw_qp_ref(qp);
	if (xiw_progress_run(qp_end_fn, j)) {
		xiw_qp_unref(qp);
		free(j);
	}
}

/* ---------------------------------------------------------- destroy --- */

struct qp_teardown {
	struct xiw_qp *qp;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

/* Progress thread: let go of a still attached stream (FIN) and tell the CM. */
static void qp_teardown_fn(void *arg)
{
	struct qp_teardown *t = arg;

	xiw_progress_timer_cancel(&t->qp->end_timer);
	xiw_progress_timer_cancel(&t->qp->rq_timer);
	qp_let_go(t->qp, QP_LET_GO_FIN);
	pthread_mutex_lock(&t->lock);
	t->done = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

/* Run the teardown on the progress thread: afterwards no upcall runs. */
static void qp_teardown(struct xiw_qp *qp)
{
	struct qp_teardown t = { .qp = qp };

	pthread_mutex_init(&t.lock, NULL);
	pthread_cond_init(&t.cond, NULL);
	if (xiw_progress_is_self() || xiw_progress_run(qp_teardown_fn, &t)) {
		qp_teardown_fn(&t);
	} else {
		pthread_mutex_lock(&t.lock);
		while (!t.done)
			pthread_cond_wait(&t.cond, &t.lock);
		pthread_mutex_unlock(&t.lock);
	}
	pthread_mutex_destroy(&t.lock);
	pthread_cond_destroy(&t.cond);
}

static void qp_detach_graceful_fn(void *arg)
{
	xiw_qp_detach(arg, false);
}

/*
 * Destroyed right after connecting, before the peer was heard from: end
 * the stream as rdma_disconnect() would, so the FIN waits for the RTR
 * nudges (xiw_qp_tx.c tx_fin) and a peer still accepting reads our RTR
 * before it sees the close. Waits for that FIN (70 ms nominal), bounded.
 */
#define QP_FIN_HOLD_WAIT_MS 500

static void qp_release_fin_hold(struct xiw_qp *qp)
{
	bool pending;

	pthread_mutex_lock(&qp->tx_lock);
	pending = qp->attached && xiw_tx_fin_would_hold(qp);
	xiw_tx_unlock(qp);
	if (!pending || xiw_progress_sync(qp_detach_graceful_fn, qp))
		return;
	for (int ms = 0; pending && ms < QP_FIN_HOLD_WAIT_MS; ms += 2) {
		usleep(2000);
		pthread_mutex_lock(&qp->tx_lock);
		pending = qp->attached && qp->shutdown_pending;
		xiw_tx_unlock(qp);
	}
}

/**
 * xiw_qp_destroy() - abort a connect still setting up on @qp
 * (xiw_cm_qp_gone()) or let go of a connected stream with a FIN, as
 * iw_cm does (the CM hears xiw_cm_stream_closed(-ECONNABORTED) if it has
 * not yet, and closes the socket), flush, wait
 * until no upcall or queued progress callback uses the QP, free.
 * Flush WCs that still wait for room in a full CQ are dropped and the CQE
 * slots reserved for the QP's WRs given back.
 * Must not be called on the progress thread while callbacks are queued.
 * Return: 0.
 */
int xiw_qp_destroy(struct xiw_qp *qp)
{
	bool was_attached, kick_s, kick_r;

	qp_reg_del(qp);		/* the CM finds it by number no more */
	if (qp->srq)		/* no SRQ post kicks it any more */
		xiw_srq_detach(qp->srq, qp);
	xiw_cm_qp_gone(qp);	/* a connect still setting up forgets @qp */
	xiw_tx_cork_forget(qp);	/* held WRs go before the FIN */
	pthread_mutex_lock(&qp->tx_lock);
	was_attached = qp->ever_attached;
	xiw_tx_unlock(qp);
	if (was_attached) {
		qp_release_fin_hold(qp);
		qp_teardown(qp);
	}
	pthread_mutex_lock(&qp->tx_lock);
	xiw_qp_to_error(qp);
	xiw_tx_unlock(qp);
	pthread_mutex_lock(&qp->ref_lock);
	while (qp->refs > 0)
		pthread_cond_wait(&qp->ref_cond, &qp->ref_lock);
	pthread_mutex_unlock(&qp->ref_lock);

	/* unlisted first: no poll kicks it any more */
	xiw_cq_qp_del(qp->scq, qp);
	if (qp->rcq != qp->scq)
		xiw_cq_qp_del(qp->rcq, qp);
	pthread_mutex_lock(&qp->tx_lock);
	kick_s = sq_drop_resv(qp);
	/* references are drained: no kick may take a new one now */
	atomic_store(&qp->tx_more, false);
	atomic_store(&qp->tx_uncork, false);
	pthread_mutex_unlock(&qp->tx_lock);
	kick_r = xiw_rq_reset(qp);
	if (kick_s)
		xiw_cq_credit_kick(qp->scq);
	if (kick_r)
		xiw_cq_credit_kick(qp->rcq);
	atomic_fetch_sub(&qp->scq->nqp, 1);
	atomic_fetch_sub(&qp->rcq->nqp, 1);
	xiw_pd_put(qp->pd);
	pthread_mutex_destroy(&qp->tx_lock);
	pthread_mutex_destroy(&qp->sq_lock);
	pthread_mutex_destroy(&qp->rq_lock);
	pthread_mutex_destroy(&qp->rx_lock);
	pthread_mutex_destroy(&qp->ref_lock);
	pthread_cond_destroy(&qp->ref_cond);
	qp_free_mem(qp);
	return 0;
}
