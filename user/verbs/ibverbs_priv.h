/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the libibverbs drop-in's files (ibverbs*.c).
 *
 * The drop-in has no provider plug-ins: every ibv_device is an xiwarp
 * device, every ibv_context is a struct xiw_vctx, and PD/MR/CQ/QP are the
 * engine's objects (which embed the verbs struct as first member).
 */
#ifndef XIWARP_VERBS_IBVERBS_PRIV_H
#define XIWARP_VERBS_IBVERBS_PRIV_H

#include <infiniband/verbs.h>
#include <xiwarp/xiwarp.h>

/* The header maps these names to inline wrappers; we define the real ones. */
#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* One per engine device, created on first listing, never freed (apps may
 * keep ibv_device pointers after ibv_free_device_list, as rdma-core allows
 * while a context is open). */
struct xiw_vdev {
	struct ibv_device ibv;
	struct xiw_device *dev;
};

/*
 * An open device. vctx.context is what applications see; verbs_get_ctx()
 * finds vctx from it, so vctx must stay intact, and our own fields go in
 * front of it.
 * @async_wfd: write end (non-blocking) of the pipe whose read end is
 *             context.async_fd: the engine's async events (ibverbs.c).
 */
struct xiw_vctx {
	struct xiw_device *dev;
	int async_wfd;
	struct verbs_context vctx;
};

static inline struct xiw_vctx *xiw_vctx_from_ibv(struct ibv_context *ctx)
{
	return (struct xiw_vctx *)((char *)ctx - offsetof(struct xiw_vctx, vctx.context));
}

static inline struct xiw_device *xiw_ctx_dev(struct ibv_context *ctx)
{
	return xiw_vctx_from_ibv(ctx)->dev;
}

/* ibverbs_obj.c: fill every ops slot of a fresh context. */
void xiw_verbs_set_ops(struct verbs_context *vctx);

/*
 * Exported but declared only in rdma-core's private headers (driver.h /
 * sysfs.h), which Debian does not install. enum ibv_gid_type_sysfs of
 * rdma-core v44 has IB_ROCE_V1 = 0, ROCE_V2 = 1; the ABI is an int.
 */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, int *type);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

#endif /* XIWARP_VERBS_IBVERBS_PRIV_H */
