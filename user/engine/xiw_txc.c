// SPDX-License-Identifier: MIT
/* Seed 000 HSN/EQL send-completion bookkeeping; see xiw_txc.h. */
#include <errno.h>
#include <stdlib.h>
#include "xiw_txc.h"

int xiw_txc_init(struct xiw_txc *t, int method, uint32_t size)
{
	*t = (struct xiw_txc){ .method = method, .size = size };
	if (!size || (size & (size - 1)) ||
	    (method != XIW_ACK_EQL && method != XIW_ACK_HSN))
		return -EINVAL;
	t->key = calloc(size, sizeof(*t->key));
	t->id = calloc(size, sizeof(*t->id));
	if (!t->key || !t->id) {
		xiw_txc_free(t);
		return -ENOMEM;
	}
	return 0;
}

void xiw_txc_free(struct xiw_txc *t)
{
	free(t->key);
	free(t->id);
	t->key = t->id = NULL;
	t->size = t->n = 0;
}

void xiw_txc_reset(struct xiw_txc *t)
{
	t->n = 0;
	t->synced = false;
	t->tail = t->handed = 0;
}

void xiw_txc_sync(struct xiw_txc *t, uint32_t una_bytes, uint32_t outq)
{
	t->tail = una_bytes + outq;
	t->synced = true;
}

void xiw_txc_handed(struct xiw_txc *t, uint32_t n)
{
	t->tail += n;
	t->handed += n;
}

int xiw_txc_add(struct xiw_txc *t, uint32_t after, uint32_t id)
{
	uint32_t slot;

	if (t->n >= t->size)
		return -ENOSPC;
	slot = t->head++ & (t->size - 1);
	/* method 2: HSN is the position one past the WR's last byte;
	 * method 1: handed-over count at that byte (EQL baseline) */
	t->key[slot] = (t->method == XIW_ACK_HSN ? t->tail : t->handed) - after;
	t->id[slot] = id;
	t->n++;
	return 0;
}

static uint32_t oldest(const struct xiw_txc *t)
{
	return (t->head - t->n) & (t->size - 1);
}

bool xiw_txc_take(struct xiw_txc *t, uint32_t una_bytes, uint32_t outq,
		  uint32_t *id)
{
	uint32_t slot, key;
	bool done;

	if (!t->n)
		return false;
	slot = oldest(t);
	key = t->key[slot];
	if (t->method == XIW_ACK_HSN)
		done = (int32_t)(una_bytes - key) >= 0;
	else	/* EQL = bytes handed over after the WR's last byte */
		done = outq <= t->handed - key;
	if (!done)
		return false;
	*id = t->id[slot];
	t->n--;
	return true;
}

uint32_t xiw_txc_target(const struct xiw_txc *t, uint32_t una_bytes,
			uint32_t outq)
{
	return xiw_txc_target_at(t, una_bytes, outq, 0);
}

uint32_t xiw_txc_id_at(const struct xiw_txc *t, uint32_t nth)
{
	return t->id[(oldest(t) + nth) & (t->size - 1)];
}

uint32_t xiw_txc_target_at(const struct xiw_txc *t, uint32_t una_bytes,
			   uint32_t outq, uint32_t nth)
{
	uint32_t key = t->key[(oldest(t) + nth) & (t->size - 1)];

	if (t->method == XIW_ACK_HSN)
		return key;
	/* done when outq falls to EQL: una must grow by outq - EQL */
	return una_bytes + outq - (t->handed - key);
}
