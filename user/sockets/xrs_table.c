// SPDX-License-Identifier: MIT
/*
 * rsockets: the fd -> struct xrs table. Lookups run on every call and take
 * no lock: the array only grows, a grown copy is published atomically and
 * old copies are kept (a reader may still hold one; they are small).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "xrs_int.h"

#define XRS_TABLE_MAX (1 << 20)

struct xrs_tab {
	int cap;
	struct xrs *slot[];
};

static struct xrs_tab *_Atomic xrs_tab;
static pthread_mutex_t xrs_tab_lock = PTHREAD_MUTEX_INITIALIZER;

/** xrs_lookup() - the rsocket of @fd, or NULL. Lock free. */
struct xrs *xrs_lookup(int fd)
{
	struct xrs_tab *t = atomic_load_explicit(&xrs_tab, memory_order_acquire);

	if (!t || fd < 0 || fd >= t->cap)
		return NULL;
	return __atomic_load_n(&t->slot[fd], __ATOMIC_ACQUIRE);
}

/* xrs_tab_lock held: a table with room for @fd. */
static struct xrs_tab *xrs_tab_grow(int fd)
{
	struct xrs_tab *t = atomic_load(&xrs_tab), *n;
	int cap = t ? t->cap : 0;

	if (t && fd < cap)
		return t;
	while (cap <= fd)
		cap = cap ? cap * 2 : 1024;
	if (cap > XRS_TABLE_MAX)
		return NULL;
	n = calloc(1, sizeof(*n) + (size_t)cap * sizeof(n->slot[0]));
	if (!n)
		return NULL;
	n->cap = cap;
	if (t)
		memcpy(n->slot, t->slot, (size_t)t->cap * sizeof(t->slot[0]));
	atomic_store_explicit(&xrs_tab, n, memory_order_release);
	return n;	/* the old table stays allocated for late readers */
}

/**
 * xrs_table_set() - make @fd name @rs.
 * Return: 0, or -EMFILE (fd beyond the table limit) / -ENOMEM.
 */
int xrs_table_set(int fd, struct xrs *rs)
{
	struct xrs_tab *t;

	if (fd < 0 || fd >= XRS_TABLE_MAX)
		return -EMFILE;
	pthread_mutex_lock(&xrs_tab_lock);
	t = xrs_tab_grow(fd);
	if (t)
		__atomic_store_n(&t->slot[fd], rs, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&xrs_tab_lock);
	return t ? 0 : -ENOMEM;
}

/** xrs_table_clear() - forget @fd if it still names @rs. */
void xrs_table_clear(int fd, struct xrs *rs)
{
	struct xrs_tab *t;

	pthread_mutex_lock(&xrs_tab_lock);
	t = atomic_load(&xrs_tab);
	if (t && fd >= 0 && fd < t->cap && t->slot[fd] == rs)
		__atomic_store_n(&t->slot[fd], NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&xrs_tab_lock);
}
