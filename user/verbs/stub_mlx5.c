// SPDX-License-Identifier: MIT
/*
 * libmlx5.so.1 stub. perftest and libfabric link mlx5dv_* (and call them
 * only for devices they recognise as mlx5 by name/vendor, which xiwarp
 * devices are not). Clients are linked BIND_NOW, so the symbols must
 * exist with their rdma-core v44 versions; every one reports "not an mlx5
 * device", exactly as rdma-core's libmlx5 does for a foreign device.
 * Depends on nothing but libc.
 */
#include <errno.h>
#include <stdbool.h>
#include <infiniband/mlx5dv.h>

#define __unused __attribute__((unused))

static void *enosup(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

bool mlx5dv_is_supported(struct ibv_device *device __unused)
{
	return false;
}

int mlx5dv_query_device(struct ibv_context *ctx_in __unused,
			struct mlx5dv_context *attrs_out __unused)
{
	return EOPNOTSUPP;
}

int mlx5dv_init_obj(struct mlx5dv_obj *obj __unused, uint64_t obj_type __unused)
{
	return EOPNOTSUPP;
}

struct ibv_context *mlx5dv_open_device(struct ibv_device *device __unused,
				       struct mlx5dv_context_attr *attr __unused)
{
	return enosup();
}

struct ibv_cq_ex *mlx5dv_create_cq(struct ibv_context *context __unused,
				   struct ibv_cq_init_attr_ex *cq_attr __unused,
				   struct mlx5dv_cq_init_attr *mlx5_cq_attr __unused)
{
	return enosup();
}

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *context __unused,
				struct ibv_qp_init_attr_ex *qp_attr __unused,
				struct mlx5dv_qp_init_attr *mlx5_qp_attr __unused)
{
	return enosup();
}

struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp __unused)
{
	return enosup();
}

int mlx5dv_devx_general_cmd(struct ibv_context *context __unused,
			    const void *in __unused, size_t inlen __unused,
			    void *out __unused, size_t outlen __unused)
{
	return EOPNOTSUPP;
}

struct mlx5dv_mkey *mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *a __unused)
{
	return enosup();
}

int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey __unused)
{
	return EOPNOTSUPP;
}

int mlx5dv_crypto_login(struct ibv_context *context __unused,
			struct mlx5dv_crypto_login_attr *login_attr __unused)
{
	return EOPNOTSUPP;
}

struct mlx5dv_dek *mlx5dv_dek_create(struct ibv_context *context __unused,
				     struct mlx5dv_dek_init_attr *init_attr __unused)
{
	return enosup();
}

int mlx5dv_dek_destroy(struct mlx5dv_dek *dek __unused)
{
	return EOPNOTSUPP;
}
