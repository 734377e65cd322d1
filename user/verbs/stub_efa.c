// SPDX-License-Identifier: MIT
/*
 * libefa.so.1 stub. perftest and libfabric (its efa provider probes every
 * device with efadv_query_device) link efadv_*; every call answers as
 * rdma-core's libefa does for a non-EFA device: EOPNOTSUPP.
 * Depends on nothing but libc.
 */
#include <errno.h>
#include <infiniband/efadv.h>

#define __unused __attribute__((unused))

static void *enosup(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_qp *efadv_create_driver_qp(struct ibv_pd *ibvpd __unused,
				      struct ibv_qp_init_attr *attr __unused,
				      uint32_t driver_qp_type __unused)
{
	return enosup();
}

struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx __unused,
				  struct ibv_qp_init_attr_ex *attr_ex __unused,
				  struct efadv_qp_init_attr *efa_attr __unused,
				  uint32_t inlen __unused)
{
	return enosup();
}

int efadv_query_device(struct ibv_context *ibvctx __unused,
		       struct efadv_device_attr *attr __unused,
		       uint32_t inlen __unused)
{
	return EOPNOTSUPP;
}

int efadv_query_ah(struct ibv_ah *ibvah __unused,
		   struct efadv_ah_attr *attr __unused, uint32_t inlen __unused)
{
	return EOPNOTSUPP;
}

struct ibv_cq_ex *efadv_create_cq(struct ibv_context *ibvctx __unused,
				  struct ibv_cq_init_attr_ex *attr_ex __unused,
				  struct efadv_cq_init_attr *efa_attr __unused,
				  uint32_t inlen __unused)
{
	return enosup();
}

struct efadv_cq *efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex *ibvcqx __unused)
{
	return enosup();
}
