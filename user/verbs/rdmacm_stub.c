// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: API that iWARP does not have. Multicast needs UD
 * QPs (none in iWARP: the kernel answers ENOSYS too); ECE is an
 * InfiniBand CM feature.
 */
#include <errno.h>

#include "rdmacm_int.h"

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
			void *context)
{
	(void)id;
	(void)addr;
	(void)context;
	xiw_log(XIW_LOG_INFO, XCM_PFX "multicast: no UD on iWARP");
	return xcm_err(ENOSYS);
}

int rdma_join_multicast_ex(struct rdma_cm_id *id,
			   struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	(void)mc_join_attr;
	return rdma_join_multicast(id, NULL, context);
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id;
	(void)addr;
	return xcm_err(EADDRNOTAVAIL);	/* nothing was ever joined */
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return xcm_err(EOPNOTSUPP);
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id;
	(void)ece;
	return xcm_err(EOPNOTSUPP);
}
