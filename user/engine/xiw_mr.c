// SPDX-License-Identifier: MIT
/*
 * Memory regions and the STag table (RFC 5040 §2.1, §6.4).
 *
 * STag = index << 8 | key. The index selects a table slot (index 0 is never
 * used, so no STag of ours is 0 or 1..255); the 8-bit key changes every time
 * a slot is reused, so a stale STag of a freed region stops matching.
 * Lookups take the table lock shared; register/deregister/invalidate take it
 * exclusively. Bounds checks use overflow-safe arithmetic only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "xiw_obj.h"

struct stag_slot {
	struct xiw_mr *mr;	/* NULL: free */
	uint8_t key;		/* key of the current / next user */
	bool valid;		/* false after invalidation */
};

static pthread_rwlock_t stag_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct stag_slot *stag_tab;
static uint32_t stag_cap;	/* slots allocated */
static uint32_t stag_next = 1;	/* search start (round robin: delays reuse) */
static uint32_t stag_used;

#define MR_ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
			 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | \
			 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | \
			 IBV_ACCESS_OPTIONAL_RANGE)

static int stag_grow(void)
{
	uint32_t ncap = stag_cap ? stag_cap * 2 : 1024;
	struct stag_slot *t;

	if (ncap > XIW_STAG_INDEX_MAX)
		ncap = XIW_STAG_INDEX_MAX;
	if (ncap <= stag_cap)
		return -ENOMEM;
	t = realloc(stag_tab, ncap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (uint32_t i = stag_cap; i < ncap; i++)
		t[i] = (struct stag_slot){ .key = (uint8_t)(i * 37u) };
	stag_tab = t;
	stag_cap = ncap;
	return 0;
}

/* Find a free slot (write lock held). Return: index >= 1, or 0 if full. */
static uint32_t stag_alloc(struct xiw_mr *mr)
{
	if (stag_used + 1 >= stag_cap && stag_grow())
		return 0;
	for (uint32_t n = 0; n < stag_cap; n++) {
		uint32_t i = 1 + (stag_next - 1 + n) % (stag_cap - 1);

		if (stag_tab[i].mr)
			continue;
		stag_tab[i].mr = mr;
		stag_tab[i].valid = true;
		stag_next = i + 1 < stag_cap ? i + 1 : 1;
		stag_used++;
		return i;
	}
	return 0;
}

static int mr_access_ok(int access)
{
	if (access & ~MR_ACCESS_KNOWN)
		return 0;
	/* IB spec 10.6.3.1: remote write/atomic need local write */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return 0;
	return 1;
}

/**
 * xiw_mr_reg() - register [addr, addr+len) with remote address @iova.
 * @access: IBV_ACCESS_* flags; remote write needs local write.
 * Return: MR with lkey == rkey == the new STag, or NULL+errno (EINVAL bad
 * flags/length, ENOMEM STag table full).
 */
struct xiw_mr *xiw_mr_reg(struct xiw_pd *pd, void *addr, size_t len,
			  uint64_t iova, int access)
{
	struct xiw_mr *mr;
	uint32_t idx;

	if (!pd || !len || len > XIW_MAX_MR_SIZE || !mr_access_ok(access) ||
	    (uintptr_t)addr > UINTPTR_MAX - len ||
	    iova > UINT64_MAX - (len - 1)) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_rwlock_wrlock(&stag_lock);
	idx = stag_alloc(mr);
	if (idx)
		mr->ibv.lkey = idx << 8 | stag_tab[idx].key;
	pthread_rwlock_unlock(&stag_lock);
	if (!idx) {
		free(mr);
		errno = ENOMEM;
		return NULL;
	}
	mr->pd = pd;
	mr->iova = iova;
	mr->access = access;
	mr->ibv.context = pd->ibv.context;
	mr->ibv.pd = &pd->ibv;
	mr->ibv.addr = addr;
	mr->ibv.length = len;
	mr->ibv.handle = idx;
	mr->ibv.rkey = mr->ibv.lkey;
	xiw_pd_get(pd);
	return mr;
}

/**
 * xiw_mr_dereg() - deregister @mr; its STag is invalid from now on (the
 * slot's key changes before the slot can be reused).
 * Return: 0, or -EINVAL if @mr is not registered.
 */
int xiw_mr_dereg(struct xiw_mr *mr)
{
	uint32_t idx = mr->ibv.lkey >> 8;
	int ret = -EINVAL;

	pthread_rwlock_wrlock(&stag_lock);
	if (mr->mw_bound) {	/* ibv_dereg_mr(3): windows still bound */
		pthread_rwlock_unlock(&stag_lock);
		return -EBUSY;
	}
	if (idx && idx < stag_cap && stag_tab[idx].mr == mr) {
		stag_tab[idx].mr = NULL;
		stag_tab[idx].valid = false;
		stag_tab[idx].key++;
		stag_used--;
		ret = 0;
	}
	pthread_rwlock_unlock(&stag_lock);
	if (ret)
		return ret;
	xiw_pd_put(mr->pd);
	free(mr);
	return 0;
}

/* The MR behind @stag if the STag is current and valid (lock held). */
static struct xiw_mr *stag_find(uint32_t stag)
{
	uint32_t idx = stag >> 8;
	struct stag_slot *s;

	if (!idx || idx >= stag_cap)
		return NULL;
	s = &stag_tab[idx];
	if (!s->mr || !s->valid || s->key != (uint8_t)stag)
		return NULL;
	return s->mr;
}

/* Bounds: [to, to+len) inside [base, base+size), no wrap anywhere. */
static int mr_bounds(uint64_t base, uint64_t size, uint64_t to, uint64_t len)
{
	if (len && to > UINT64_MAX - (len - 1))
		return -EOVERFLOW;
	if (to < base)
		return -ERANGE;
	if (len > size || to - base > size - len)
		return -ERANGE;
	return 0;
}

/**
 * xiw_mr_check() - resolve an STag access to local memory.
 * See xiw_obj.h for parameters. Return: 0, -ENOENT, -EPERM, -EACCES,
 * -EOVERFLOW or -ERANGE.
 */
int xiw_mr_check(uint32_t stag, const struct xiw_pd *pd, int access,
		 uint64_t to, uint64_t len, bool remote, void **addr)
{
	struct xiw_mr *mr;
	uint64_t base;
	int ret;

	pthread_rwlock_rdlock(&stag_lock);
	mr = stag_find(stag);
	if (!mr) {
		ret = -ENOENT;
	} else if (mr->pd != pd) {
		ret = -EPERM;
	} else if ((mr->access & access) != access) {
		ret = -EACCES;
	} else {
		base = remote ? mr->iova : (uint64_t)(uintptr_t)mr->ibv.addr;
		ret = mr_bounds(base, mr->ibv.length, to, len);
		if (!ret && addr)
			*addr = (uint8_t *)mr->ibv.addr + (to - base);
	}
	pthread_rwlock_unlock(&stag_lock);
	return ret;
}

/*
 * Slot @idx loses its validity (invalidation); a bound memory window
 * also lets go of its MR (write lock held).
 */
static void mw_unbind_locked(uint32_t idx)
{
	struct xiw_mr *win = stag_tab[idx].mr;

	if (stag_tab[idx].valid && win->parent) {
		win->parent->mw_bound--;
		win->parent = NULL;
	}
	stag_tab[idx].valid = false;
}

/**
 * xiw_mr_invalidate() - invalidate @stag (RFC 5040 §6.10).
 * Return: 0, -ENOENT not a valid STag, -EPERM the STag is in another PD
 * or a type 1 window's (which only a zero-length bind unbinds).
 */
int xiw_mr_invalidate(uint32_t stag, const struct xiw_pd *pd)
{
	struct xiw_mr *mr;
	int ret = 0;

	pthread_rwlock_wrlock(&stag_lock);
	mr = stag_find(stag);
	if (!mr)
		ret = -ENOENT;
	else if (mr->pd != pd || mr->mw_type == IBV_MW_TYPE_1)
		ret = -EPERM;
	else
		mw_unbind_locked(stag >> 8);
	pthread_rwlock_unlock(&stag_lock);
	return ret;
}

/**
 * xiw_mr_rereg() - change @mr in place (ibv_rereg_mr(3)): with
 * IBV_REREG_MR_CHANGE_TRANSLATION the range becomes [@addr, +@len) with
 * remote address @addr, with IBV_REREG_MR_CHANGE_PD the PD @pd, with
 * IBV_REREG_MR_CHANGE_ACCESS the rights @access. The STag keeps its
 * index and gets a new key, so accesses through the old lkey/rkey fail
 * (-ENOENT) from now on; mr->ibv.lkey/rkey hold the new one. Checks see
 * either the old or the new region, never a mix (stag_lock).
 * Return: 0, or -EINVAL (bad flags/values; @mr unchanged).
 */
int xiw_mr_rereg(struct xiw_mr *mr, int flags, struct xiw_pd *pd, void *addr,
		 size_t len, int access)
{
	uint32_t idx = mr->ibv.lkey >> 8;
	struct xiw_pd *old_pd = mr->pd;
	int ret = -EINVAL;

	if (!flags || (flags & ~(IBV_REREG_MR_CHANGE_TRANSLATION |
				 IBV_REREG_MR_CHANGE_PD |
				 IBV_REREG_MR_CHANGE_ACCESS)) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && !pd) ||
	    ((flags & IBV_REREG_MR_CHANGE_ACCESS) && !mr_access_ok(access)) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
	     (!len || len > XIW_MAX_MR_SIZE ||
	      (uintptr_t)addr > UINTPTR_MAX - len)))
		return -EINVAL;
	pthread_rwlock_wrlock(&stag_lock);
	if (idx && idx < stag_cap && stag_tab[idx].mr == mr) {
		if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
			mr->ibv.addr = addr;
			mr->ibv.length = len;
			mr->iova = (uintptr_t)addr;
		}
		if (flags & IBV_REREG_MR_CHANGE_PD) {
			mr->pd = pd;
			mr->ibv.pd = &pd->ibv;
		}
		if (flags & IBV_REREG_MR_CHANGE_ACCESS)
			mr->access = access;
		stag_tab[idx].key++;
		stag_tab[idx].valid = true;
		mr->ibv.lkey = mr->ibv.rkey = idx << 8 | stag_tab[idx].key;
		ret = 0;
	}
	pthread_rwlock_unlock(&stag_lock);
	if (!ret && (flags & IBV_REREG_MR_CHANGE_PD) && pd != old_pd) {
		xiw_pd_get(pd);
		xiw_pd_put(old_pd);
	}
	return ret;
}

/* ------------------------------------------------- memory windows --- */

/**
 * xiw_mw_alloc() - a type 1 or type 2 memory window on @pd
 * (ibv_alloc_mw(3)): an STag of its own, invalid until a bind WR
 * (IBV_WR_BIND_MW for type 2, ibv_bind_mw(3) for type 1) gives it a range
 * of an MR.
 * Return: the MW, or NULL+errno (EINVAL no PD or another type, ENOMEM).
 */
struct xiw_mw *xiw_mw_alloc(struct xiw_pd *pd, enum ibv_mw_type type)
{
	struct xiw_mw *mw;
	uint32_t idx;

	if (!pd || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_rwlock_wrlock(&stag_lock);
	idx = stag_alloc(&mw->win);
	if (idx) {
		stag_tab[idx].valid = false;	/* unbound */
		mw->ibv.rkey = idx << 8 | stag_tab[idx].key;
	}
	pthread_rwlock_unlock(&stag_lock);
	if (!idx) {
		free(mw);
		errno = ENOMEM;
		return NULL;
	}
	mw->win.pd = pd;
	mw->win.mw_type = (uint8_t)type;
	mw->ibv.context = pd->ibv.context;
	mw->ibv.pd = &pd->ibv;
	mw->ibv.handle = idx;
	mw->ibv.type = type;
	xiw_pd_get(pd);
	return mw;
}

/** xiw_mw_dealloc() - free @mw (a bound window is unbound first). */
int xiw_mw_dealloc(struct xiw_mw *mw)
{
	uint32_t idx = mw->ibv.handle;

	pthread_rwlock_wrlock(&stag_lock);
	if (!idx || idx >= stag_cap || stag_tab[idx].mr != &mw->win) {
		pthread_rwlock_unlock(&stag_lock);
		return -EINVAL;
	}
	mw_unbind_locked(idx);
	stag_tab[idx].mr = NULL;
	stag_tab[idx].key++;
	stag_used--;
	pthread_rwlock_unlock(&stag_lock);
	xiw_pd_put(mw->win.pd);
	free(mw);
	return 0;
}

/**
 * xiw_mw_bind() - a bind WR reached the head of a QP's SQ (IB
 * 10.6.7.2.2): @mw covers [@addr, +@len) of @mr's remote address space
 * with the remote rights @access, under the STag @rkey (same index, the
 * key byte the application chose). @pd is the binding QP's PD. A type 1
 * window may be bound already (rebound in place); a zero-length bind of
 * a type 1 window unbinds it (@mr may be NULL then).
 * Return: 0, or -EINVAL (a type 2 MW is bound, rkey index differs,
 * another PD, @mr without IBV_ACCESS_MW_BIND, range outside @mr, remote
 * write without local write on @mr).
 */
int xiw_mw_bind(struct xiw_mw *mw, const struct xiw_pd *pd, uint32_t rkey,
		struct xiw_mr *mr, uint64_t addr, uint64_t len, int access)
{
	uint32_t idx = mw->ibv.handle;
	bool type1 = mw->win.mw_type == IBV_MW_TYPE_1;
	int ret = -EINVAL;

	pthread_rwlock_wrlock(&stag_lock);
	if ((rkey >> 8) != idx || stag_tab[idx].mr != &mw->win ||
	    (!type1 && stag_tab[idx].valid) || mw->win.pd != pd)
		goto out;
	if (type1 && !len) {		/* unbind */
		mw_unbind_locked(idx);
		stag_tab[idx].key = (uint8_t)rkey;
		ret = 0;
		goto out;
	}
	if (!mr || mr->pd != pd ||
	    !(mr->access & IBV_ACCESS_MW_BIND) ||
	    mr_bounds(mr->iova, mr->ibv.length, addr, len) ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
		goto out;
	if (type1)			/* a new binding replaces the old */
		mw_unbind_locked(idx);
	mw->win.ibv.addr = (uint8_t *)mr->ibv.addr + (addr - mr->iova);
	mw->win.ibv.length = len;
	mw->win.iova = addr;
	mw->win.access = access & (IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	mw->win.parent = mr;
	mr->mw_bound++;
	stag_tab[idx].key = (uint8_t)rkey;
	stag_tab[idx].valid = true;
	ret = 0;
out:
	pthread_rwlock_unlock(&stag_lock);
	return ret;
}
