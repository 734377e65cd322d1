// SPDX-License-Identifier: MIT
/*
 * xiw_bufpool.c - buffers lent to QPs only while they hold bytes (issue
 * 11: memory per idle QP).
 *
 * TX batches (struct xiw_txbatch, ~40 KB: 1024 iovecs and the header and
 * marker scratch of 32 FPDUs) are needed from framing until the llp has
 * taken the last byte; receive staging buffers (XIW_RX_STAGE bytes) while
 * they hold bytes not yet fed to the receive machine. So a QP takes one
 * when it starts and gives it back when it is empty: idle QPs hold none,
 * and a small free list per kind keeps busy QPs from paying for malloc at
 * every burst.
 */
#include <pthread.h>
#include <stdlib.h>
#include "xiw_obj.h"

#define XIW_BUFPOOL_KEEP 16	/* free buffers kept per kind */

struct bufpool {
	pthread_mutex_t lock;
	size_t size;
	int n;
	void *free[XIW_BUFPOOL_KEEP];
};

static struct bufpool txb_pool = { PTHREAD_MUTEX_INITIALIZER,
				   sizeof(struct xiw_txbatch), 0, { 0 } };
static struct bufpool stage_pool = { PTHREAD_MUTEX_INITIALIZER,
				     XIW_RX_STAGE, 0, { 0 } };

static void *pool_get(struct bufpool *p)
{
	void *b = NULL;

	pthread_mutex_lock(&p->lock);
	if (p->n)
		b = p->free[--p->n];
	pthread_mutex_unlock(&p->lock);
	return b ? b : malloc(p->size);
}

static void pool_put(struct bufpool *p, void *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->n < XIW_BUFPOOL_KEEP) {
		p->free[p->n++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	free(b);
}

/**
 * xiw_txbatch_get() - a TX batch (from the free list, else malloc); the
 * caller resets its counts. Return: the batch, or NULL without memory.
 */
struct xiw_txbatch *xiw_txbatch_get(void)
{
	return pool_get(&txb_pool);
}

/**
 * xiw_txbatch_put() - give back a batch nothing refers to any more
 * (fully sent, or its stream is gone). NULL is a no-op.
 */
void xiw_txbatch_put(struct xiw_txbatch *b)
{
	pool_put(&txb_pool, b);
}

/**
 * xiw_rxstage_get() - a receive staging buffer of XIW_RX_STAGE bytes.
 * Return: the buffer, or NULL without memory.
 */
uint8_t *xiw_rxstage_get(void)
{
	return pool_get(&stage_pool);
}

/** xiw_rxstage_put() - give back an empty staging buffer (NULL: no-op). */
void xiw_rxstage_put(uint8_t *b)
{
	pool_put(&stage_pool, b);
}
