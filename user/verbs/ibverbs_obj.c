// SPDX-License-Identifier: MIT
/*
 * libibverbs drop-in: PD, MR, completion channel, CQ, QP, and the context
 * ops that applications call inline (post_send, poll_cq, ...).
 *
 * Every function here is a thin edge around the engine: the engine returns
 * 0 / -errno or NULL+errno; verbs wants positive errno from destroy/modify/
 * post, NULL+errno from create, -1+errno from ibv_get_cq_event.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ibverbs_priv.h"

/* ---------------------------------------------------------------- PD --- */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct xiw_pd *pd = xiw_pd_alloc(context, xiw_ctx_dev(context));

	return pd ? &pd->ibv : NULL;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	return -xiw_pd_free(xiw_pd_from_ibv(pd));
}

/* ---------------------------------------------------------------- MR --- */

/*
 * The optional access range (relaxed ordering, ...) is best effort in
 * rdma-core: dropped when unsupported. There is no PCIe here to relax.
 */
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	struct xiw_mr *mr;

	access &= ~IBV_ACCESS_OPTIONAL_RANGE;
	mr = xiw_mr_reg(xiw_pd_from_ibv(pd), addr, length, iova, (int)access);
	return mr ? &mr->ibv : NULL;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			  int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr,
				(unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	return -xiw_mr_dereg(xiw_mr_from_ibv(mr));
}

/*
 * In place (the MR keeps its object, gets a new key). On a bad argument
 * the old MR stays valid: IBV_REREG_MR_ERR_INPUT with errno, as
 * ibv_rereg_mr(3) says.
 */
int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		 size_t length, int access)
{
	int ret;

	access &= ~IBV_ACCESS_OPTIONAL_RANGE;
	ret = xiw_mr_rereg(xiw_mr_from_ibv(mr), flags,
			   pd ? xiw_pd_from_ibv(pd) : NULL, addr, length, access);
	if (ret) {
		errno = -ret;
		return IBV_REREG_MR_ERR_INPUT;
	}
	return 0;
}

/* ------------------------------------------------- completion channel --- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct xiw_cchan *ch = xiw_cchan_create(context);

	return ch ? &ch->ibv : NULL;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	return -xiw_cchan_destroy(xiw_cchan_from_ibv(channel));
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	struct xiw_cq *xcq;
	int ret = xiw_cchan_get_event(xiw_cchan_from_ibv(channel), &xcq);

	if (ret) {
		errno = -ret;
		return -1;
	}
	*cq = (struct ibv_cq *)xcq;
	*cq_context = (*cq)->cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	xiw_cq_ack_events(xiw_cq_from_ibv(cq), nevents);
}

/* ---------------------------------------------------------------- CQ --- */

/* comp_vector is ignored: there is one completion vector (the engine). */
struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct xiw_cchan *ch = channel ? xiw_cchan_from_ibv(channel) : NULL;

	(void)comp_vector;
	return (struct ibv_cq *)xiw_cq_create(context, cqe, cq_context, ch);
}

/* fio destroys CQs before QPs: the engine says EBUSY, we pass it on. */
int ibv_destroy_cq(struct ibv_cq *cq)
{
	return -xiw_cq_destroy(xiw_cq_from_ibv(cq));
}

/* A new ring of at least cqe entries; queued WCs move over in order. */
int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return -xiw_cq_resize(xiw_cq_from_ibv(cq), cqe);
}

/* ---------------------------------------------------------------- QP --- */

static bool qp_type_ok(enum ibv_qp_type type)
{
	if (type == IBV_QPT_RC)
		return true;
	xiw_log(XIW_LOG_WARN, "ibv_create_qp: QP type %d not supported: "
		"iWARP has only RC (no UD/UC/XRC/raw)", type);
	return false;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct xiw_qp *qp;

	if (!qp_type_ok(qp_init_attr->qp_type)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = xiw_qp_create(xiw_pd_from_ibv(pd), qp_init_attr);
	return (struct ibv_qp *)qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	return -xiw_qp_destroy(xiw_qp_from_ibv(qp));
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	return -xiw_qp_modify(xiw_qp_from_ibv(qp), attr, attr_mask);
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	return -xiw_qp_query(xiw_qp_from_ibv(qp), attr, attr_mask, init_attr);
}

/* No extended QP (ibv_wr_* API); perftest falls back to ibv_post_send for
 * devices it does not know. */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	(void)qp;
	return NULL;
}

/* --------------------------------------------------------------- SRQ --- */

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *srq_init_attr)
{
	struct xiw_srq *srq = xiw_srq_create(xiw_pd_from_ibv(pd), srq_init_attr);

	return srq ? (struct ibv_srq *)srq : NULL;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		   int srq_attr_mask)
{
	return -xiw_srq_modify(xiw_srq_from_ibv(srq), srq_attr, srq_attr_mask);
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)
{
	return -xiw_srq_query(xiw_srq_from_ibv(srq), srq_attr);
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	return -xiw_srq_destroy(xiw_srq_from_ibv(srq));
}
