/* SPDX-License-Identifier: MIT */
/*
 * xsk send queue (xsk_sendq.c): stream offsets -> the bytes utcp's @fill
 * hands out, copied ("ring") or referenced (zero-copy sends). Seed 002.
 */
#ifndef XIW_XSK_SENDQ_H
#define XIW_XSK_SENDQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include "utcp/utcp.h"

/**
 * struct xsk_span - stream bytes [@off, @off+@len) at @p.
 * @ring:     @p is in the queue's byte ring (freed when acked), else the
 *            engine's buffer (referenced until acked).
 * @ring_end: ring: the ring's write count after this span.
 * @has_id/@id: the last span of zero-copy call @id.
 */
struct xsk_span {
	uint64_t off;
	const uint8_t *p;
	uint32_t len;
	uint64_t ring_end;
	uint32_t id;
	bool ring, has_id;
};

/**
 * struct xsk_sendq - one connection's send queue.
 * @ring/@rcap: copied bytes (xiw_alloc(): in the umem arena if room).
 * @r_in/@r_out: bytes written to / freed from the ring (counts).
 * @sp/@smask: span array (power of two), live spans [@s_tail, @s_head).
 * @queued/@acked: stream offsets: bytes appended / acknowledged.
 * @zc_next/@zc_done: next zero-copy id / every id below is released.
 */
struct xsk_sendq {
	uint8_t *ring;
	uint32_t rcap;
	uint64_t r_in, r_out;
	struct xsk_span *sp;
	uint32_t smask;
	uint64_t s_head, s_tail;
	uint64_t queued, acked;
	uint32_t zc_next, zc_done;
	uint64_t ref_bytes;	/* bytes ever taken by reference */
};

/** xsk_sendq_init() - @ring_bytes of ring, @nspans (power of two >= 4)
 *  spans. Return: 0, -EINVAL, -ENOMEM. */
int xsk_sendq_init(struct xsk_sendq *q, uint32_t ring_bytes, uint32_t nspans);
void xsk_sendq_fini(struct xsk_sendq *q);
/** xsk_sendq_copy() - copy up to @max bytes of @iov in. Return: bytes. */
uint32_t xsk_sendq_copy(struct xsk_sendq *q, const struct iovec *iov, int n,
			uint32_t max);
/**
 * xsk_sendq_ref() - reference up to @max bytes of @iov (kept until acked).
 * @id: out: the call's zero-copy id when bytes were taken.
 * Return: bytes taken (0: no span free; no id used).
 */
uint32_t xsk_sendq_ref(struct xsk_sendq *q, const struct iovec *iov, int n,
		       uint32_t max, uint32_t *id);
/** xsk_sendq_fill() - describe [@off, @off+@len) in at most @max pieces.
 *  Return: pieces, -EINVAL (outside the queue), -E2BIG (more pieces). */
int xsk_sendq_fill(const struct xsk_sendq *q, uint64_t off, uint32_t len,
		   struct utcp_iov *iov, int max);
/** xsk_sendq_acked() - the stream is acknowledged up to @off. */
void xsk_sendq_acked(struct xsk_sendq *q, uint64_t off);
uint32_t xsk_sendq_ring_free(const struct xsk_sendq *q);
uint32_t xsk_sendq_spans_free(const struct xsk_sendq *q);
/** xsk_sendq_released() - zero-copy call @id and every earlier one are
 *  acknowledged: their buffers are no longer referenced. */
bool xsk_sendq_released(const struct xsk_sendq *q, uint32_t id);
bool xsk_sendq_zc_outstanding(const struct xsk_sendq *q);
/** xsk_sendq_release_all() - the connection is aborted: nothing will be
 *  transmitted again, every reference is dropped. */
void xsk_sendq_release_all(struct xsk_sendq *q);

#endif /* XIW_XSK_SENDQ_H */
