// SPDX-License-Identifier: MIT
/* Protection domains: an owner count of the MRs and QPs that use a PD. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "xiw_obj.h"

struct xiw_pd_priv {
	struct xiw_pd pd;	/* first: xiw_pd_from_ibv() casts */
	atomic_int users;
	uint32_t handle;
};

static atomic_uint pd_handles = 1;

static struct xiw_pd_priv *pd_priv(const struct xiw_pd *pd)
{
	return (struct xiw_pd_priv *)pd;
}

/**
 * xiw_pd_alloc() - allocate a protection domain on @dev.
 * @ctx: the verbs context the PD belongs to (ibv.context).
 * Return: the PD, or NULL with errno ENOMEM.
 */
struct xiw_pd *xiw_pd_alloc(struct ibv_context *ctx, struct xiw_device *dev)
{
	struct xiw_pd_priv *p = calloc(1, sizeof(*p));

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->pd.dev = dev;
	p->pd.ibv.context = ctx;
	p->handle = atomic_fetch_add(&pd_handles, 1);
	p->pd.ibv.handle = p->handle;
	atomic_init(&p->users, 0);
	return &p->pd;
}

/**
 * xiw_pd_free() - free @pd.
 * Return: 0, or -EBUSY while MRs or QPs still use it.
 */
int xiw_pd_free(struct xiw_pd *pd)
{
	if (atomic_load(&pd_priv(pd)->users) > 0)
		return -EBUSY;
	free(pd_priv(pd));
	return 0;
}

/** xiw_pd_get() - one more MR/QP uses @pd. */
void xiw_pd_get(struct xiw_pd *pd)
{
	atomic_fetch_add(&pd_priv(pd)->users, 1);
}

/** xiw_pd_put() - an MR/QP stopped using @pd. */
void xiw_pd_put(struct xiw_pd *pd)
{
	atomic_fetch_sub(&pd_priv(pd)->users, 1);
}
