// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: the synchronous endpoint API (rdma_create_ep,
 * rdma_get_request, rdma_destroy_ep) used by rdma_server/rdma_client.
 * Endpoint ids have a private channel; each call waits for its event.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm_int.h"

#define XCM_EP_TIMEOUT_MS 2000

static int xcm_passive_ep(struct xcm_id *x, struct rdma_addrinfo *res,
			  struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (rdma_bind_addr(&x->id, res->ai_src_addr))
		return -1;
	if (pd)
		x->id.pd = pd;
	if (!attr)
		return 0;
	/* kept for the QPs rdma_get_request creates */
	x->qp_init_attr = malloc(sizeof(*attr));
	if (!x->qp_init_attr)
		return xcm_err(ENOMEM);
	*x->qp_init_attr = *attr;
	x->qp_init_attr->qp_type = res->ai_qp_type ? res->ai_qp_type : IBV_QPT_RC;
	return 0;
}

static int xcm_active_ep(struct xcm_id *x, struct rdma_addrinfo *res,
			 struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (rdma_resolve_addr(&x->id, res->ai_src_addr, res->ai_dst_addr,
			      XCM_EP_TIMEOUT_MS) ||
	    rdma_resolve_route(&x->id, XCM_EP_TIMEOUT_MS))
		return -1;
	if (attr) {
		attr->qp_type = res->ai_qp_type ? res->ai_qp_type : IBV_QPT_RC;
		if (rdma_create_qp(&x->id, pd, attr))
			return -1;
	}
	if (!res->ai_connect_len)
		return 0;
	if (res->ai_connect_len > XIW_MAX_PRIV_DATA)
		return xcm_err(EINVAL);
	x->connect = malloc(res->ai_connect_len);
	if (!x->connect)
		return xcm_err(ENOMEM);
	memcpy(x->connect, res->ai_connect, res->ai_connect_len);
	x->connect_len = res->ai_connect_len;
	return 0;
}

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
		   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct xcm_id *x;
	int ret, err;

	if (!id || !res)
		return xcm_err(EINVAL);
	x = xcm_id_alloc(NULL, NULL, res->ai_port_space ? res->ai_port_space :
			 RDMA_PS_TCP, res->ai_qp_type ? res->ai_qp_type :
			 IBV_QPT_RC);
	if (!x)
		return -1;
	xcm_id_publish(x);
	if (res->ai_flags & RAI_PASSIVE)
		ret = xcm_passive_ep(x, res, pd, qp_init_attr);
	else
		ret = xcm_active_ep(x, res, pd, qp_init_attr);
	if (ret) {
		err = errno;
		rdma_destroy_ep(&x->id);
		return xcm_err(err);
	}
	*id = &x->id;
	return 0;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

/*
 * The next connect request on a synchronous listener, with a QP made from
 * the listener's saved attributes. The request event stays in
 * (*id)->event until the next call on the new id, as in rdma-core.
 */
int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct xcm_id *l = xcm_id(listen);
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr attr;
	int ret;

	if (!listen || !id || !l->sync)
		return xcm_err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->status) {
		ret = xcm_err(ev->status < 0 ? -ev->status : ev->status);
		goto err;
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		ret = xcm_err(EINVAL);
		goto err;
	}
	if (l->qp_init_attr) {
		attr = *l->qp_init_attr;
		ret = rdma_create_qp(ev->id, listen->pd, &attr);
		if (ret)
			goto err;
	}
	*id = ev->id;
	(*id)->event = ev;
	return 0;
err:
	listen->event = ev;
	return ret;
}
