// SPDX-License-Identifier: MIT
/*
 * Shared receive queues (ibv_create_srq(3), ibv_post_srq_recv(3)).
 *
 * An SRQ is a ring of receive WRs that any of its QPs may consume. A QP
 * on an SRQ takes the next WR only when a message starts landing (its
 * first FPDU) and only with a CQE slot of its receive CQ reserved for the
 * WC (seed 002, as for a QP's own RQ): the WR moves into the QP's private
 * ring and completes from there (xiw_qp_rq.c). A QP that finds the SRQ
 * empty waits (stops reading its socket, TCP pushes back) and is kicked
 * by the next ibv_post_srq_recv. When the SRQ's WR count falls below its
 * armed limit, IBV_EVENT_SRQ_LIMIT_REACHED is reported once and the limit
 * disarmed (ibv_modify_srq(3)).
 *
 * Lock order: qp->rq_lock -> srq->lock -> cq->lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "xiw_obj.h"

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t s = 1;

	while (s < n)
		s <<= 1;
	return s;
}

/**
 * xiw_srq_create() - an SRQ of at least attr->attr.max_wr WRs of up to
 * max_sge SGEs on @pd; srq_limit arms the limit event at once. The
 * enforced values are written back to @attr.
 * Return: the SRQ, or NULL+errno (EINVAL: 0 or too many WRs/SGEs, ENOMEM).
 */
struct xiw_srq *xiw_srq_create(struct xiw_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct xiw_srq *srq;
	struct ibv_srq_attr *a = &attr->attr;

	if (!pd || !a->max_wr || a->max_wr > XIW_MAX_QP_WR ||
	    a->max_sge > XIW_MAX_SGE || a->srq_limit > a->max_wr) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (srq) {
		srq->size = pow2_at_least(a->max_wr);
		srq->rq = calloc(srq->size, sizeof(*srq->rq));
	}
	if (!srq || !srq->rq) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	srq->mask = srq->size - 1;
	srq->max = a->max_wr;
	srq->max_sge = a->max_sge ? a->max_sge : 1;
	srq->limit = a->srq_limit;
	srq->pd = pd;
	pthread_mutex_init(&srq->lock, NULL);
	srq->ibv.context = pd->ibv.context;
	srq->ibv.srq_context = attr->srq_context;
	srq->ibv.pd = &pd->ibv;
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	a->max_sge = srq->max_sge;
	xiw_pd_get(pd);
	return srq;
}

/** xiw_srq_destroy() - Return: 0, or -EBUSY while a QP uses @srq. */
int xiw_srq_destroy(struct xiw_srq *srq)
{
	pthread_mutex_lock(&srq->lock);
	if (srq->nqps) {
		pthread_mutex_unlock(&srq->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&srq->lock);
	xiw_pd_put(srq->pd);
	pthread_mutex_destroy(&srq->lock);
	free(srq->qps);
	free(srq->rq);
	free(srq);
	return 0;
}

/* A ring of at least @max_wr WRs holding the queued ones in order
 * (srq->lock held). 0, or -EINVAL (fewer than queued, too many), -ENOMEM. */
static int srq_resize_locked(struct xiw_srq *srq, uint32_t max_wr)
{
	uint32_t queued = srq->head - srq->tail, size;
	struct xiw_rqe *rq;

	if (!max_wr || max_wr > XIW_MAX_QP_WR || max_wr < queued ||
	    srq->limit > max_wr)
		return -EINVAL;
	size = pow2_at_least(max_wr);
	rq = calloc(size, sizeof(*rq));
	if (!rq)
		return -ENOMEM;
	for (uint32_t i = 0; i < queued; i++)
		rq[i] = srq->rq[(srq->tail + i) & srq->mask];
	free(srq->rq);
	srq->rq = rq;
	srq->size = size;
	srq->mask = size - 1;
	srq->tail = 0;
	srq->head = queued;
	srq->max = max_wr;
	return 0;
}

/**
 * xiw_srq_modify() - ibv_modify_srq(3): IBV_SRQ_MAX_WR resizes @srq to
 * attr->max_wr WRs (the queued ones kept, in order; not below their
 * number), then IBV_SRQ_LIMIT arms the limit event at attr->srq_limit
 * WRs (0 disarms). Nothing changes when the call fails.
 * Return: 0, or -EINVAL (no or unknown mask bits, max_wr below the queued
 * WRs or above the device limit, limit above max_wr), -ENOMEM.
 */
int xiw_srq_modify(struct xiw_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	int ret = 0;

	if (!mask || (mask & ~(IBV_SRQ_LIMIT | IBV_SRQ_MAX_WR)))
		return -EINVAL;
	pthread_mutex_lock(&srq->lock);
	if ((mask & IBV_SRQ_LIMIT) &&
	    attr->srq_limit > ((mask & IBV_SRQ_MAX_WR) ? attr->max_wr : srq->max))
		ret = -EINVAL;
	if (!ret && (mask & IBV_SRQ_MAX_WR)) {
		uint32_t limit = srq->limit;

		if (mask & IBV_SRQ_LIMIT)	/* checked above */
			srq->limit = 0;
		ret = srq_resize_locked(srq, attr->max_wr);
		srq->limit = limit;
	}
	if (!ret && (mask & IBV_SRQ_LIMIT))
		srq->limit = attr->srq_limit;
	pthread_mutex_unlock(&srq->lock);
	return ret;
}

/** xiw_srq_query() - max_wr, max_sge and the armed limit (0: none). */
int xiw_srq_query(struct xiw_srq *srq, struct ibv_srq_attr *attr)
{
	pthread_mutex_lock(&srq->lock);
	attr->max_wr = srq->max;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

/**
 * xiw_post_srq_recv() - post receive WRs to @srq; QPs waiting for one
 * are resumed. Never blocks.
 * Return: 0, or -errno with *bad the first WR not posted: -ENOMEM full,
 * -EINVAL num_sge or lkey.
 */
int xiw_post_srq_recv(struct xiw_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad)
{
	struct xiw_qp **wake = NULL;
	uint32_t nwake = 0;
	int ret = 0;

	pthread_mutex_lock(&srq->lock);
	for (; wr; wr = wr->next) {
		ret = srq->head - srq->tail >= srq->max ? -ENOMEM :
		      xiw_rqe_fill(srq->pd, srq->max_sge, wr,
				   &srq->rq[srq->head & srq->mask]);
		if (ret)
			break;
		srq->head++;
	}
	if (srq->head != srq->tail && srq->nwait) {
		wake = malloc(srq->nqps * sizeof(*wake));
		for (uint32_t i = 0; wake && i < srq->nqps; i++)
			if (srq->qps[i]->srq_wait) {
				srq->qps[i]->srq_wait = false;
				xiw_qp_ref(srq->qps[i]);
				wake[nwake++] = srq->qps[i];
			}
		srq->nwait = 0;
	}
	pthread_mutex_unlock(&srq->lock);
	for (uint32_t i = 0; i < nwake; i++) {
		xiw_rq_srq_kick(wake[i]);
		xiw_qp_unref(wake[i]);
	}
	free(wake);
	if (ret && bad)
		*bad = wr;
	return ret;
}

/**
 * xiw_srq_attach() / xiw_srq_detach() - @qp uses @srq from its creation
 * to its destruction. Return (attach): 0 or -ENOMEM.
 */
int xiw_srq_attach(struct xiw_srq *srq, struct xiw_qp *qp)
{
	struct xiw_qp **q;

	pthread_mutex_lock(&srq->lock);
	q = realloc(srq->qps, (srq->nqps + 1) * sizeof(*q));
	if (!q) {
		pthread_mutex_unlock(&srq->lock);
		return -ENOMEM;
	}
	srq->qps = q;
	srq->qps[srq->nqps++] = qp;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

void xiw_srq_detach(struct xiw_srq *srq, struct xiw_qp *qp)
{
	pthread_mutex_lock(&srq->lock);
	for (uint32_t i = 0; i < srq->nqps; i++)
		if (srq->qps[i] == qp) {
			srq->qps[i] = srq->qps[--srq->nqps];
			break;
		}
	pthread_mutex_unlock(&srq->lock);
}

/**
 * xiw_srq_take() - a message starts landing on @qp: move the SRQ's next
 * WR to *@out. qp->rq_lock held; the caller has reserved the CQE slot.
 * Without a WR, @qp is marked waiting (the next post kicks it).
 * Return: 0, or -EAGAIN (SRQ empty). May report SRQ_LIMIT_REACHED.
 */
int xiw_srq_take(struct xiw_srq *srq, struct xiw_qp *qp, struct xiw_rqe *out)
{
	bool limit = false;

	pthread_mutex_lock(&srq->lock);
	if (srq->head == srq->tail) {
		if (!qp->srq_wait) {
			qp->srq_wait = true;
			srq->nwait++;
		}
		pthread_mutex_unlock(&srq->lock);
		return -EAGAIN;
	}
	*out = srq->rq[srq->tail++ & srq->mask];
	if (srq->limit && srq->head - srq->tail < srq->limit) {
		srq->limit = 0;		/* reported once, then disarmed */
		limit = true;
	}
	pthread_mutex_unlock(&srq->lock);
	if (limit)
		xiw_async_srq(&srq->ibv, IBV_EVENT_SRQ_LIMIT_REACHED);
	return 0;
}
