// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: QPs, CQs and SRQs created through an rdma_cm_id.
 *
 * As rdma-core: missing CQs are created (with their own completion
 * channels, for rdma_get_send_comp/rdma_get_recv_comp in rdma_verbs.h),
 * a missing PD is the device's default PD, and the new QP is moved to
 * INIT. The engine moves it on to RTS when the connection is up.
 */
#include <errno.h>
#include <string.h>

#include "rdmacm_int.h"

#define XCM_QP_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | \
		       IBV_ACCESS_REMOTE_WRITE)

/* Only CQs and channels librdmacm made are on the id; free those. */
static void xcm_destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq)
			ibv_destroy_cq(id->send_cq);
	} else if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
	}
	id->recv_cq = NULL;
	id->send_cq = NULL;
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel &&
		    id->send_cq_channel != id->recv_cq_channel)
			ibv_destroy_comp_channel(id->send_cq_channel);
	} else if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
	}
	id->recv_cq_channel = NULL;
	id->send_cq_channel = NULL;
}

static int xcm_create_cq(struct rdma_cm_id *id, uint32_t size,
			 struct ibv_comp_channel **ch, struct ibv_cq **cq)
{
	*ch = ibv_create_comp_channel(id->verbs);
	if (!*ch)
		return -1;
	*cq = ibv_create_cq(id->verbs, size, id, *ch, 0);
	return *cq ? 0 : -1;
}

static int xcm_create_cqs(struct rdma_cm_id *id, uint32_t send, uint32_t recv)
{
	int err;

	if (recv && xcm_create_cq(id, recv, &id->recv_cq_channel, &id->recv_cq))
		goto err;
	if (send && xcm_create_cq(id, send, &id->send_cq_channel, &id->send_cq))
		goto err;
	return 0;
err:
	err = errno;
	xiw_log(XIW_LOG_INFO, XCM_PFX "create CQ: %s", strerror(err));
	xcm_destroy_cqs(id);
	return xcm_err(err);
}

static int xcm_qp_to_init(struct rdma_cm_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.qp_access_flags = XCM_QP_ACCESS;
	a.port_num = id->port_num ? id->port_num : 1;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
			    IBV_QP_PORT);
	if (ret) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "QP to INIT: %s", strerror(ret));
		return xcm_err(ret);
	}
	return 0;
}

/* PD defaulting and the checks rdma-core makes before creating a QP. */
static int xcm_qp_check(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	if (!id->verbs) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "create_qp: id has no device yet");
		return xcm_err(EINVAL);
	}
	if (id->qp)
		return xcm_err(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (attr->pd->context != id->verbs) {
		return xcm_err(EINVAL);
	}
	if (!attr->pd)
		return xcm_err(ENOMEM);	/* default PD allocation failed */
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return xcm_err(EINVAL);
	return 0;
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp;
	int err;

	if (!id || !attr)
		return xcm_err(EINVAL);
	if (xcm_qp_check(id, attr))
		return -1;
	if (xcm_create_cqs(id,
			   attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
			   attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr))
		return -1;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		err = errno;
		xiw_log(XIW_LOG_INFO, XCM_PFX "create_qp: %s", strerror(err));
		goto err_cqs;
	}
	if (xcm_qp_to_init(id, qp)) {
		err = errno;
		ibv_destroy_qp(qp);
		goto err_cqs;
	}
	id->pd = qp->pd;
	id->qp = qp;
	return 0;
err_cqs:
	xcm_destroy_cqs(id);
	return xcm_err(err);
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ax;
	int ret;

	if (!id || !qp_init_attr)
		return xcm_err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, qp_init_attr, sizeof(*qp_init_attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &ax);
	/* actual caps (and the CQs we made) go back to the caller */
	memcpy(qp_init_attr, &ax, sizeof(*qp_init_attr));
	return ret;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	xcm_destroy_cqs(id);
}

/*
 * What the kernel's iWARP CM (iw_cm_init_qp_attr + rdma_init_qp_attr)
 * answers: access flags for INIT/RTR, nothing for RTS (the CM moves it),
 * and always the port.
 */
int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
		      int *qp_attr_mask)
{
	if (!id || !qp_attr || !qp_attr_mask)
		return xcm_err(EINVAL);
	switch (qp_attr->qp_state) {
	case IBV_QPS_INIT:
	case IBV_QPS_RTR:
		qp_attr->qp_access_flags = XCM_QP_ACCESS;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS;
		break;
	case IBV_QPS_RTS:
		/* iw_cm: the CM moves the QP to RTS itself (mask 0) */
		*qp_attr_mask = 0;
		break;
	default:
		return xcm_err(EINVAL);
	}
	qp_attr->port_num = id->port_num ? id->port_num : 1;
	*qp_attr_mask |= IBV_QP_PORT;
	return 0;
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!id || !attr || !id->verbs)
		return xcm_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return xcm_err(EINVAL);
	if (attr->srq_type != IBV_SRQT_BASIC)
		return xcm_err(EOPNOTSUPP);	/* no XRC on iWARP */
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "create_srq: %s", strerror(errno));
		return -1;
	}
	if (!id->pd)
		id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
		    struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ax;
	int ret;

	if (!id || !attr)
		return xcm_err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));
	ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ax.srq_type = IBV_SRQT_BASIC;
	ax.pd = pd;
	ret = rdma_create_srq_ex(id, &ax);
	memcpy(attr, &ax, sizeof(*attr));
	return ret;
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->srq)
		ibv_destroy_srq(id->srq);
	id->srq = NULL;
	xcm_destroy_cqs(id);
}
