// SPDX-License-Identifier: MIT
/*
 * libibverbs drop-in: the op tables of a context.
 *
 * Applications call ctx->ops.post_send/post_recv/poll_cq/req_notify_cq/
 * post_srq_recv straight from verbs.h inlines, and reach the verbs_context
 * ops (query_port, query_device_ex, create_cq_ex, open_xrcd, ...) through
 * verbs_get_ctx_op(). Every slot is filled: what we cannot do answers
 * EOPNOTSUPP (NULL+errno for creators), which is what callers test for
 * (perftest retries ibv_create_cq on EOPNOTSUPP from create_cq_ex).
 */
#include <errno.h>
#include <string.h>

#include "ibverbs_priv.h"

#define __unused __attribute__((unused))

/* ------------------------------------------------ inline-called ops --- */

static int op_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return xiw_cq_poll(xiw_cq_from_ibv(cq), num_entries, wc);
}

static int op_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return -xiw_cq_req_notify(xiw_cq_from_ibv(cq), solicited_only);
}

static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad_wr)
{
	return -xiw_post_send(xiw_qp_from_ibv(qp), wr, bad_wr);
}

static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	return -xiw_post_recv(xiw_qp_from_ibv(qp), wr, bad_wr);
}

static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad_wr)
{
	return -xiw_post_srq_recv(xiw_srq_from_ibv(srq), wr, bad_wr);
}

static int op_query_port(struct ibv_context *context, uint8_t port_num,
			 struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	struct ibv_port_attr attr;
	size_t n = port_attr_len < sizeof(attr) ? port_attr_len : sizeof(attr);

	if (port_num != 1)
		return EINVAL;
	xiw_port_query(xiw_ctx_dev(context), &attr);
	memcpy(port_attr, &attr, n);
	return 0;
}

static int op_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex;
	size_t n = attr_size < sizeof(ex) ? attr_size : sizeof(ex);

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(ex.orig_attr))
		return EINVAL;
	memset(&ex, 0, sizeof(ex));
	xiw_device_query(xiw_ctx_dev(context), &ex.orig_attr);
	/* the extended flags repeat the 32 classic ones (rdma-core) */
	ex.device_cap_flags_ex = ex.orig_attr.device_cap_flags;
	memcpy(attr, &ex, n);
	return 0;
}

static int op_compat_query_device(struct ibv_context *context,
				  struct ibv_device_attr *device_attr)
{
	return ibv_query_device(context, device_attr);
}

/*
 * create_qp_ex: the plain RC QP with a PD is all we can make; SEND_OPS_FLAGS
 * would promise the ibv_wr_* API (ibv_qp_to_qp_ex), which we lack.
 */
static struct ibv_qp *op_create_qp_ex(struct ibv_context *context,
				      struct ibv_qp_init_attr_ex *a)
{
	uint32_t ok = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	struct ibv_qp_init_attr init;
	struct ibv_qp *qp;

	(void)context;
	if ((a->comp_mask & ~ok) || !(a->comp_mask & IBV_QP_INIT_ATTR_PD) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	memset(&init, 0, sizeof(init));
	init.qp_context = a->qp_context;
	init.send_cq = a->send_cq;
	init.recv_cq = a->recv_cq;
	init.srq = a->srq;
	init.cap = a->cap;
	init.qp_type = a->qp_type;
	init.sq_sig_all = a->sq_sig_all;
	qp = ibv_create_qp(a->pd, &init);
	if (qp)
		a->cap = init.cap;
	return qp;
}

/* ------------------------------------------------------------ dummies --- */

static void *enosup_ptr(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

/* The legacy ops slots of struct ibv_context_ops; no current inline uses
 * them, but an old binary calling one gets NULL+EOPNOTSUPP, not a crash. */
static void *op_compat_dummy(void)
{
	return enosup_ptr();
}

/* Memory windows: type 2 bound by IBV_WR_BIND_MW (ibv_post_send), type 1
 * by ibv_bind_mw. */
static struct ibv_mw *op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct xiw_mw *mw = xiw_mw_alloc(xiw_pd_from_ibv(pd), type);

	return mw ? &mw->ibv : NULL;
}

/*
 * ibv_bind_mw(3), type 1 windows: a bind WR on @qp's send queue (in SQ
 * order, completing as IBV_WC_BIND_MW when signaled) under the window's
 * next rkey (ibv_inc_rkey), which mw->rkey holds once posted, as
 * rdma-core providers do. A zero length unbinds.
 */
static int op_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		      struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = { 0 }, *bad;

	if (!qp || !mw || !mw_bind || mw->type != IBV_MW_TYPE_1 ||
	    mw->pd != qp->pd)
		return EINVAL;
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	return qp->context->ops.post_send(qp, &wr, &bad);
}

static int op_dealloc_mw(struct ibv_mw *mw)
{
	return -xiw_mw_dealloc(xiw_mw_from_ibv(mw));
}

static int op_advise_mr(struct ibv_pd *pd __unused,
			enum ibv_advise_mr_advice advice __unused,
			uint32_t flags __unused, struct ibv_sge *sg_list __unused,
			uint32_t num_sges __unused)
{
	return EOPNOTSUPP;
}

static struct ibv_mr *op_alloc_null_mr(struct ibv_pd *pd __unused)
{
	return enosup_ptr();
}

static int op_read_counters(struct ibv_counters *c __unused,
			    uint64_t *values __unused,
			    uint32_t n __unused, uint32_t flags __unused)
{
	return EOPNOTSUPP;
}

static int op_attach_counters_point_flow(struct ibv_counters *c __unused,
					 struct ibv_counter_attach_attr *a __unused,
					 struct ibv_flow *flow __unused)
{
	return EOPNOTSUPP;
}

static struct ibv_counters *op_create_counters(struct ibv_context *ctx __unused,
					       struct ibv_counters_init_attr *a __unused)
{
	return enosup_ptr();
}

static int op_destroy_counters(struct ibv_counters *c __unused)
{
	return EOPNOTSUPP;
}

static struct ibv_mr *op_reg_dm_mr(struct ibv_pd *pd __unused,
				   struct ibv_dm *dm __unused,
				   uint64_t off __unused, size_t len __unused,
				   unsigned int access __unused)
{
	return enosup_ptr();
}

static struct ibv_dm *op_alloc_dm(struct ibv_context *ctx __unused,
				  struct ibv_alloc_dm_attr *a __unused)
{
	return enosup_ptr();
}

static int op_free_dm(struct ibv_dm *dm __unused)
{
	return EOPNOTSUPP;
}

static int op_modify_flow_action_esp(struct ibv_flow_action *fa __unused,
				     struct ibv_flow_action_esp_attr *a __unused)
{
	return EOPNOTSUPP;
}

static int op_destroy_flow_action(struct ibv_flow_action *fa __unused)
{
	return EOPNOTSUPP;
}

static struct ibv_flow_action *
op_create_flow_action_esp(struct ibv_context *ctx __unused,
			  struct ibv_flow_action_esp_attr *a __unused)
{
	return enosup_ptr();
}

static int op_modify_qp_rate_limit(struct ibv_qp *qp __unused,
				   struct ibv_qp_rate_limit_attr *a __unused)
{
	return EOPNOTSUPP;
}

static struct ibv_pd *
op_alloc_parent_domain(struct ibv_context *ctx __unused,
		       struct ibv_parent_domain_init_attr *a __unused)
{
	return enosup_ptr();
}

static int op_dealloc_td(struct ibv_td *td __unused)
{
	return EOPNOTSUPP;
}

static struct ibv_td *op_alloc_td(struct ibv_context *ctx __unused,
				  struct ibv_td_init_attr *a __unused)
{
	return enosup_ptr();
}

static int op_modify_cq(struct ibv_cq *cq __unused,
			struct ibv_modify_cq_attr *a __unused)
{
	return EOPNOTSUPP;
}

static int op_post_srq_ops(struct ibv_srq *srq __unused, struct ibv_ops_wr *op,
			   struct ibv_ops_wr **bad_op)
{
	*bad_op = op;
	return EOPNOTSUPP;
}

static int op_destroy_rwq_ind_table(struct ibv_rwq_ind_table *t __unused)
{
	return EOPNOTSUPP;
}

static struct ibv_rwq_ind_table *
op_create_rwq_ind_table(struct ibv_context *ctx __unused,
			struct ibv_rwq_ind_table_init_attr *a __unused)
{
	return enosup_ptr();
}

static int op_destroy_wq(struct ibv_wq *wq __unused)
{
	return EOPNOTSUPP;
}

static int op_modify_wq(struct ibv_wq *wq __unused, struct ibv_wq_attr *a __unused)
{
	return EOPNOTSUPP;
}

static struct ibv_wq *op_create_wq(struct ibv_context *ctx __unused,
				   struct ibv_wq_init_attr *a __unused)
{
	return enosup_ptr();
}

static int op_query_rt_values(struct ibv_context *ctx __unused,
			      struct ibv_values_ex *v __unused)
{
	return EOPNOTSUPP;
}

/* No extended CQ (ibv_start_poll & co.); callers fall back to ibv_create_cq. */
static struct ibv_cq_ex *op_create_cq_ex(struct ibv_context *ctx __unused,
					 struct ibv_cq_init_attr_ex *a __unused)
{
	return enosup_ptr();
}

static int op_destroy_flow(struct ibv_flow *flow __unused)
{
	return EOPNOTSUPP;
}

static struct ibv_flow *op_create_flow(struct ibv_qp *qp __unused,
				       struct ibv_flow_attr *a __unused)
{
	return enosup_ptr();
}

static struct ibv_qp *op_open_qp(struct ibv_context *ctx __unused,
				 struct ibv_qp_open_attr *a __unused)
{
	return enosup_ptr();
}

static int op_get_srq_num(struct ibv_srq *srq __unused, uint32_t *num __unused)
{
	return EOPNOTSUPP;
}

/* The basic SRQ only (no XRC, no tag matching). */
static struct ibv_srq *op_create_srq_ex(struct ibv_context *ctx __unused,
					struct ibv_srq_init_attr_ex *a)
{
	uint32_t ok = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	struct ibv_srq_init_attr init;
	struct ibv_srq *srq;

	if ((a->comp_mask & ~ok) || !(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) ||
	    ((a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     a->srq_type != IBV_SRQT_BASIC))
		return enosup_ptr();
	init.srq_context = a->srq_context;
	init.attr = a->attr;
	srq = ibv_create_srq(a->pd, &init);
	if (srq)
		a->attr = init.attr;
	return srq;
}

static struct ibv_xrcd *op_open_xrcd(struct ibv_context *ctx __unused,
				     struct ibv_xrcd_init_attr *a __unused)
{
	return enosup_ptr();
}

static int op_close_xrcd(struct ibv_xrcd *xrcd __unused)
{
	return EOPNOTSUPP;
}

/* ------------------------------------------------------------- tables --- */

static void set_context_ops(struct ibv_context_ops *o)
{
	o->_compat_query_device = op_compat_query_device;
	o->_compat_query_port = ibv_query_port;
	o->_compat_alloc_pd = op_compat_dummy;
	o->_compat_dealloc_pd = op_compat_dummy;
	o->_compat_reg_mr = op_compat_dummy;
	o->_compat_rereg_mr = op_compat_dummy;
	o->_compat_dereg_mr = op_compat_dummy;
	o->alloc_mw = op_alloc_mw;
	o->bind_mw = op_bind_mw;
	o->dealloc_mw = op_dealloc_mw;
	o->_compat_create_cq = op_compat_dummy;
	o->poll_cq = op_poll_cq;
	o->req_notify_cq = op_req_notify_cq;
	o->_compat_cq_event = op_compat_dummy;
	o->_compat_resize_cq = op_compat_dummy;
	o->_compat_destroy_cq = op_compat_dummy;
	o->_compat_create_srq = op_compat_dummy;
	o->_compat_modify_srq = op_compat_dummy;
	o->_compat_query_srq = op_compat_dummy;
	o->_compat_destroy_srq = op_compat_dummy;
	o->post_srq_recv = op_post_srq_recv;
	o->_compat_create_qp = op_compat_dummy;
	o->_compat_query_qp = op_compat_dummy;
	o->_compat_modify_qp = op_compat_dummy;
	o->_compat_destroy_qp = op_compat_dummy;
	o->post_send = op_post_send;
	o->post_recv = op_post_recv;
	o->_compat_create_ah = op_compat_dummy;
	o->_compat_destroy_ah = op_compat_dummy;
	o->_compat_attach_mcast = op_compat_dummy;
	o->_compat_detach_mcast = op_compat_dummy;
	o->_compat_async_event = op_compat_dummy;
}

static void set_extended_ops(struct verbs_context *v)
{
	v->query_port = op_query_port;
	v->advise_mr = op_advise_mr;
	v->alloc_null_mr = op_alloc_null_mr;
	v->read_counters = op_read_counters;
	v->attach_counters_point_flow = op_attach_counters_point_flow;
	v->create_counters = op_create_counters;
	v->destroy_counters = op_destroy_counters;
	v->reg_dm_mr = op_reg_dm_mr;
	v->alloc_dm = op_alloc_dm;
	v->free_dm = op_free_dm;
	v->modify_flow_action_esp = op_modify_flow_action_esp;
	v->destroy_flow_action = op_destroy_flow_action;
	v->create_flow_action_esp = op_create_flow_action_esp;
	v->modify_qp_rate_limit = op_modify_qp_rate_limit;
	v->alloc_parent_domain = op_alloc_parent_domain;
	v->dealloc_td = op_dealloc_td;
	v->alloc_td = op_alloc_td;
	v->modify_cq = op_modify_cq;
	v->post_srq_ops = op_post_srq_ops;
	v->destroy_rwq_ind_table = op_destroy_rwq_ind_table;
	v->create_rwq_ind_table = op_create_rwq_ind_table;
	v->destroy_wq = op_destroy_wq;
	v->modify_wq = op_modify_wq;
	v->create_wq = op_create_wq;
	v->query_rt_values = op_query_rt_values;
	v->create_cq_ex = op_create_cq_ex;
	v->priv = NULL;		/* rdma-core internal; no inline reads it */
	v->query_device_ex = op_query_device_ex;
	v->ibv_destroy_flow = op_destroy_flow;
	v->ibv_create_flow = op_create_flow;
	/* libibverbs 1.1.8 inlines look for the flow ops here (rdma-core
	 * fills them the same way). */
	v->ABI_placeholder1 = (void (*)(void))op_create_flow;
	v->ABI_placeholder2 = (void (*)(void))op_destroy_flow;
	v->open_qp = op_open_qp;
	v->create_qp_ex = op_create_qp_ex;
	v->get_srq_num = op_get_srq_num;
	v->create_srq_ex = op_create_srq_ex;
	v->open_xrcd = op_open_xrcd;
	v->close_xrcd = op_close_xrcd;
}

void xiw_verbs_set_ops(struct verbs_context *vctx)
{
	set_context_ops(&vctx->context.ops);
	set_extended_ops(vctx);
}
