// SPDX-License-Identifier: MIT
/*
 * The receive queue and its CQE credits (seed 002), under qp->rq_lock:
 * post_recv, the receive side taking and completing the head WR, and
 * flushing in ERROR.
 *
 * A message (SEND*, or the Immediate Data of a WRITE_WITH_IMM, RFC 7306
 * §6) starts landing in the RQ head WR only once a slot of the receive CQ
 * is reserved for its WC. Without a slot the receive side waits exactly
 * as for a missing WR: it stops reading the socket, so TCP flow control
 * pushes back on the peer, and the poll that frees a slot resumes it.
 * Flush WCs wait for room the same way. So a receive CQ never overflows,
 * whatever its size; a small one only slows the peer down.
 *
 * The reserved slot belongs to the head WR (qp->rq_resv): its success WC
 * or, if the QP goes to ERROR first, its flush WC takes it.
 */
#include <errno.h>
#include "xiw_obj.h"

/** xiw_rqe_fill() - see xiw_obj.h. */
int xiw_rqe_fill(struct xiw_pd *pd, uint32_t max_sge,
		 const struct ibv_recv_wr *wr, struct xiw_rqe *e)
{
	uint64_t len = 0;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
		return -EINVAL;
	for (int i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *s = &wr->sg_list[i];

		if (xiw_mr_check(s->lkey, pd, IBV_ACCESS_LOCAL_WRITE,
				 s->addr, s->length, false, NULL))
			return -EINVAL;
		e->sge[i] = *s;
		len += s->length;
	}
	if (len > INT32_MAX)
		return -EINVAL;
	e->wr_id = wr->wr_id;
	e->num_sge = wr->num_sge;
	e->len = (uint32_t)len;
	return 0;
}

/*
 * ERROR: FLUSH_ERR for posted WRs in posting order while the CQ has room
 * (rq_lock held). The head WR may hold a reserved slot: its WC takes it.
 */
static void rq_flush_locked(struct xiw_qp *qp)
{
	for (; qp->rq_tail != qp->rq_head; qp->rq_tail++) {
		struct ibv_wc wc = {
			.wr_id = qp->rq[qp->rq_tail & qp->rq_mask].wr_id,
			.status = IBV_WC_WR_FLUSH_ERR,
			.opcode = IBV_WC_RECV,
			.qp_num = qp->ibv.qp_num,
			.src_qp = qp->ibv.qp_num,
		};

		if (qp->rq_resv) {
			qp->rq_resv = false;
			xiw_cq_push_reserved(qp->rcq, &wc, false);
		} else if (xiw_cq_push_wait(qp->rcq, &wc, &qp->rcq_wait)) {
			break;	/* full: the poll that frees a slot resumes */
		}
	}
	qp->rx_need_rqe = qp->rx_need_cqe = false;
}

/**
 * xiw_post_recv() - post a chain of receive WRs (allowed from INIT on).
 * Wakes a receive side that waits for a buffer. Never blocks.
 * The receive CQ is not checked: a CQ smaller than the RQ is allowed
 * (verbs leave CQ sizing to the app). Messages that arrive while it is
 * full wait in the peer and in TCP (seed 002 back-pressure) until polls
 * free slots. In ERROR the WRs are queued behind those still waiting for
 * their flush WC and complete with IBV_WC_WR_FLUSH_ERR as soon as the
 * receive CQ has room (at once unless it is full): the drain pattern.
 * Return: 0, or -errno with *bad the first WR not posted: -ENOMEM RQ full
 * (WRs still waiting for their flush WC count), -EINVAL num_sge >
 * max_recv_sge, bad lkey, or QP in RESET.
 */
int xiw_post_recv(struct xiw_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad)
{
	bool kick = false;
	int ret = 0;

	if (qp->srq) {	/* ibv_post_recv(3): use ibv_post_srq_recv */
		if (bad)
			*bad = wr;
		return -EINVAL;
	}
	pthread_mutex_lock(&qp->rq_lock);
	for (; wr; wr = wr->next) {
		struct xiw_rqe *e = &qp->rq[qp->rq_head & qp->rq_mask];

		ret = atomic_load(&qp->state) == IBV_QPS_RESET ? -EINVAL :
		      xiw_rqe_fill(qp->pd, qp->max_recv_sge, wr, e);
		if (!ret && qp->rq_head - qp->rq_tail >= qp->rq_max)
			ret = -ENOMEM;
		if (ret)
			break;
		qp->rq_head++;
	}
	if (atomic_load(&qp->state) == IBV_QPS_ERR)
		rq_flush_locked(qp);
	if (qp->rx_need_rqe && qp->rq_head != qp->rq_tail) {
		qp->rx_need_rqe = false;
		kick = true;
	}
	pthread_mutex_unlock(&qp->rq_lock);
	if (kick)
		xiw_rx_kick(qp);
	if (ret && bad)
		*bad = wr;
	return ret;
}

int xiw_rq_take(struct xiw_qp *qp, struct xiw_rqe *out)
{
	int ret = 0;

	pthread_mutex_lock(&qp->rq_lock);
	/* on an SRQ: its next WR becomes this QP's (it waits here for the
	 * CQE slot if need be, like a WR of its own) */
	if (qp->rq_tail == qp->rq_head && qp->srq &&
	    !xiw_srq_take(qp->srq, qp, &qp->rq[qp->rq_head & qp->rq_mask]))
		qp->rq_head++;
	if (qp->rq_tail == qp->rq_head) {
		qp->rx_need_rqe = true;
		ret = -EAGAIN;
	} else if (!qp->rq_resv &&
		   !xiw_cq_reserve_wait(qp->rcq, &qp->rcq_wait)) {
		qp->rx_need_cqe = true;
		ret = -EAGAIN;
	} else {
		qp->rq_resv = true;
		qp->rx_need_cqe = false;
		*out = qp->rq[qp->rq_tail & qp->rq_mask];
	}
	pthread_mutex_unlock(&qp->rq_lock);
	return ret;
}

/* Pushed under rq_lock: a flush of the WRs behind it cannot overtake. */
void xiw_rq_complete(struct xiw_qp *qp, const struct ibv_wc *wc,
		     bool solicited)
{
	pthread_mutex_lock(&qp->rq_lock);
	if (atomic_load(&qp->state) != IBV_QPS_ERR &&
	    qp->rq_tail != qp->rq_head) {
		qp->rq_tail++;
		if (qp->rq_resv) {
			qp->rq_resv = false;
			xiw_cq_push_reserved(qp->rcq, wc, solicited);
		} else {	/* never: taken without a slot (logged) */
			xiw_cq_push(qp->rcq, wc, solicited);
		}
	}
	pthread_mutex_unlock(&qp->rq_lock);
}

/*
 * A QP on an SRQ that enters ERROR consumes no more SRQ WRs: once the
 * one it had taken is flushed, IBV_EVENT_QP_LAST_WQE_REACHED (once).
 */
void xiw_rq_flush(struct xiw_qp *qp)
{
	bool last;

	pthread_mutex_lock(&qp->rq_lock);
	rq_flush_locked(qp);
	last = qp->srq && !qp->last_wqe && qp->rq_tail == qp->rq_head;
	qp->last_wqe |= last;
	pthread_mutex_unlock(&qp->rq_lock);
	if (last)
		xiw_async_qp(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
}

void xiw_rq_srq_kick(struct xiw_qp *qp)
{
	bool kick;

	pthread_mutex_lock(&qp->rq_lock);
	kick = qp->rx_need_rqe;
	qp->rx_need_rqe = false;
	pthread_mutex_unlock(&qp->rq_lock);
	if (kick)
		xiw_rx_kick(qp);
}

void xiw_rq_credit_kick(struct xiw_qp *qp)
{
	bool kick = false;

	pthread_mutex_lock(&qp->rq_lock);
	if (atomic_load(&qp->state) == IBV_QPS_ERR) {
		rq_flush_locked(qp);
	} else if (qp->rx_need_cqe) {
		qp->rx_need_cqe = false;
		kick = true;
	}
	pthread_mutex_unlock(&qp->rq_lock);
	if (kick)	/* the progress thread reads again */
		xiw_rx_kick(qp);
}

int xiw_rq_waits(struct xiw_qp *qp)
{
	int w = XIW_RQ_GO;

	pthread_mutex_lock(&qp->rq_lock);
	if (qp->rx_need_rqe)
		w = XIW_RQ_WAIT_WR;
	else if (qp->rx_need_cqe)
		w = XIW_RQ_WAIT_CQE;
	pthread_mutex_unlock(&qp->rq_lock);
	return w;
}

bool xiw_rq_reset(struct xiw_qp *qp)
{
	bool kick = false;

	pthread_mutex_lock(&qp->rq_lock);
	qp->rq_head = qp->rq_tail = 0;
	qp->rx_need_rqe = qp->rx_need_cqe = false;
	qp->last_wqe = false;
	if (qp->rq_resv)
		kick = xiw_cq_unreserve(qp->rcq, 1);
	qp->rq_resv = false;
	pthread_mutex_unlock(&qp->rq_lock);
	return kick;
}
