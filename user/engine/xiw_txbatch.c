// SPDX-License-Identifier: MIT
/*
 * xiw_txbatch.c - TX batches lent to QPs only while they have framed
 * bytes to hand over (issue 11: memory per idle QP).
 *
 * A batch (struct xiw_txbatch, ~40 KB: 1024 iovecs and the header/marker
 * scratch of 32 FPDUs) is only needed between framing and the moment the
 * llp has taken its last byte; then every byte is in the kernel or in
 * the peer's hands and nothing points into the scratch. So a QP takes
 * one when it starts framing and gives it back when the batch is empty:
 * idle QPs hold none, and a small free list keeps the busy ones from
 * paying for malloc at every burst.
 */
#include <pthread.h>
#include <stdlib.h>
#include "xiw_obj.h"

#define XIW_TXB_POOL 16	/* free batches kept for reuse */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xiw_txbatch *pool[XIW_TXB_POOL];
static int pool_n;

/**
 * xiw_txbatch_get() - a batch (from the free list, else malloc); the
 * caller resets its counts.
 * Return: the batch, or NULL without memory.
 */
struct xiw_txbatch *xiw_txbatch_get(void)
{
	struct xiw_txbatch *b = NULL;

	pthread_mutex_lock(&pool_lock);
	if (pool_n)
		b = pool[--pool_n];
	pthread_mutex_unlock(&pool_lock);
	return b ? b : malloc(sizeof(*b));
}

/**
 * xiw_txbatch_put() - give back a batch nothing refers to any more
 * (fully sent, or its stream is gone). NULL is a no-op.
 */
void xiw_txbatch_put(struct xiw_txbatch *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&pool_lock);
	if (pool_n < XIW_TXB_POOL) {
		pool[pool_n++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	free(b);
}
