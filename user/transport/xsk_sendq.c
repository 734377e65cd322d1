// SPDX-License-Identifier: MIT
/*
 * xsk: the send queue of one connection — what utcp's @fill maps a stream
 * range to (seed 002: utcp keeps no copy; snd_una is this queue's tail).
 *
 * The stream is a sequence of spans, each [off, off+len) of the stream
 * and where its bytes live:
 *   - ring spans: bytes the engine asked to have copied (FPDU headers,
 *     pad, CRC, small payloads, everything in copy mode), in a byte ring
 *     that lives in the umem arena when there is room, so that even these
 *     go on the wire as descriptors without a second copy;
 *   - reference spans: the engine's registered buffers (zero-copy sends,
 *     xiw_llp_send_zc): nothing is copied; every (re)transmission frames
 *     them again, from the umem directly when the MR is there, else by a
 *     copy into the frame. They stay referenced until acknowledged; each
 *     zero-copy call gets an id, released when its last byte is acked.
 * Spans are popped when utcp's cumulative ACK passes them; a ring span's
 * bytes are freed then. Retransmission looks a span up by binary search.
 *
 * No locks inside: the connection's lock covers it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "xiwarp/xiwarp.h"
#include "xsk_sendq.h"

int xsk_sendq_init(struct xsk_sendq *q, uint32_t ring_bytes, uint32_t nspans)
{
	memset(q, 0, sizeof(*q));
	if (!ring_bytes || nspans < 4 || (nspans & (nspans - 1)))
		return -EINVAL;
	q->ring = xiw_alloc(ring_bytes);
	q->sp = calloc(nspans, sizeof(*q->sp));
	if (!q->ring || !q->sp) {
		xsk_sendq_fini(q);
		return -ENOMEM;
	}
	q->rcap = ring_bytes;
	q->smask = nspans - 1;
	return 0;
}

void xsk_sendq_fini(struct xsk_sendq *q)
{
	xiw_free(q->ring);
	free(q->sp);
	q->ring = NULL;
	q->sp = NULL;
}

uint32_t xsk_sendq_ring_free(const struct xsk_sendq *q)
{
	return q->rcap - (uint32_t)(q->r_in - q->r_out);
}

uint32_t xsk_sendq_spans_free(const struct xsk_sendq *q)
{
	return q->smask + 1 - (uint32_t)(q->s_head - q->s_tail);
}

static struct xsk_span *span_at(const struct xsk_sendq *q, uint64_t i)
{
	return &q->sp[i & q->smask];
}

/* Append [p, p+len) as a span (merging into the previous ring span when
 * it continues it in memory). Return: false when out of spans. */
static bool span_add(struct xsk_sendq *q, const uint8_t *p, uint32_t len,
		     bool ring)
{
	struct xsk_span *s;

	if (q->s_head != q->s_tail) {
		s = span_at(q, q->s_head - 1);
		if (ring && s->ring && !s->has_id && s->p + s->len == p) {
			s->len += len;
			s->ring_end = q->r_in;
			q->queued += len;
			return true;
		}
	}
	if (!xsk_sendq_spans_free(q))
		return false;
	s = span_at(q, q->s_head++);
	memset(s, 0, sizeof(*s));
	s->off = q->queued;
	s->p = p;
	s->len = len;
	s->ring = ring;
	s->ring_end = q->r_in;
	q->queued += len;
	return true;
}

uint32_t xsk_sendq_copy(struct xsk_sendq *q, const struct iovec *iov, int n,
			uint32_t max)
{
	uint32_t room = xsk_sendq_ring_free(q), put = 0;

	if (room > max)
		room = max;
	for (int i = 0; i < n && put < room; i++) {
		const uint8_t *src = iov[i].iov_base;
		uint32_t len = iov[i].iov_len < room - put ?
			       (uint32_t)iov[i].iov_len : room - put;

		for (uint32_t done = 0; done < len;) {
			uint32_t pos = (uint32_t)(q->r_in % q->rcap);
			uint32_t k = q->rcap - pos < len - done ? q->rcap - pos : len - done;

			/* need a span unless this merges into the last one */
			if (!xsk_sendq_spans_free(q) &&
			    !(q->s_head != q->s_tail &&
			      span_at(q, q->s_head - 1)->ring &&
			      !span_at(q, q->s_head - 1)->has_id &&
			      span_at(q, q->s_head - 1)->p +
			      span_at(q, q->s_head - 1)->len == q->ring + pos))
				return put;
			memcpy(q->ring + pos, src + done, k);
			q->r_in += k;
			span_add(q, q->ring + pos, k, true);
			done += k;
			put += k;
		}
	}
	return put;
}

uint32_t xsk_sendq_ref(struct xsk_sendq *q, const struct iovec *iov, int n,
		       uint32_t max, uint32_t *id)
{
	uint32_t put = 0;

	for (int i = 0; i < n && put < max; i++) {
		uint32_t len = iov[i].iov_len < max - put ?
			       (uint32_t)iov[i].iov_len : max - put;

		if (!len)
			continue;
		if (!span_add(q, iov[i].iov_base, len, false))
			break;
		put += len;
	}
	if (put) {
		struct xsk_span *s = span_at(q, q->s_head - 1);

		s->has_id = true;
		s->id = q->zc_next;
		*id = q->zc_next++;
		q->ref_bytes += put;
	}
	return put;
}

/* Index of the span holding stream offset @off (acked <= off < queued). */
static uint64_t span_find(const struct xsk_sendq *q, uint64_t off)
{
	uint64_t lo = q->s_tail, hi = q->s_head - 1;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;

		if (span_at(q, mid)->off <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

int xsk_sendq_fill(const struct xsk_sendq *q, uint64_t off, uint32_t len,
		   struct utcp_iov *iov, int max)
{
	uint64_t i;
	int n = 0;

	if (off < q->acked || off + len > q->queued || q->s_tail == q->s_head)
		return -EINVAL;
	for (i = span_find(q, off); len; i++) {
		const struct xsk_span *s = span_at(q, i);
		uint32_t skip = (uint32_t)(off - s->off);
		uint32_t k = s->len - skip < len ? s->len - skip : len;

		if (i == q->s_head || n == max)
			return -E2BIG;
		iov[n].base = s->p + skip;
		iov[n].len = k;
		n++;
		off += k;
		len -= k;
	}
	return n;
}

void xsk_sendq_acked(struct xsk_sendq *q, uint64_t off)
{
	if (off > q->queued)
		off = q->queued;
	if (off <= q->acked)
		return;
	q->acked = off;
	while (q->s_tail != q->s_head) {
		const struct xsk_span *s = span_at(q, q->s_tail);

		if (s->off + s->len > off) {
			/* a ring span acked in part: free its acked bytes
			 * (copy-mode sends merge into long spans) */
			if (s->ring && off > s->off)
				q->r_out = s->ring_end - s->len + (off - s->off);
			break;
		}
		if (s->ring)
			q->r_out = s->ring_end;
		if (s->has_id)
			q->zc_done = s->id + 1;
		q->s_tail++;
	}
}

bool xsk_sendq_released(const struct xsk_sendq *q, uint32_t id)
{
	return (int32_t)(q->zc_done - (id + 1)) >= 0;
}

bool xsk_sendq_zc_outstanding(const struct xsk_sendq *q)
{
	return q->zc_done != q->zc_next;
}

void xsk_sendq_release_all(struct xsk_sendq *q)
{
	q->zc_done = q->zc_next;
}
