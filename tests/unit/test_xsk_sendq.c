// SPDX-License-Identifier: MIT
/* xsk send queue: stream offsets -> copied / referenced bytes (seed 002). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "xsk_sendq.h"

/* Gather [off, off+len) through fill into @out. Return: pieces. */
static int gather(const struct xsk_sendq *q, uint64_t off, uint32_t len,
		  uint8_t *out)
{
	struct utcp_iov iov[UTCP_MAX_IOV];
	int n = xsk_sendq_fill(q, off, len, iov, UTCP_MAX_IOV);
	uint32_t tot = 0;

	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		memcpy(out + tot, iov[i].base, iov[i].len);
		tot += iov[i].len;
	}
	assert_int_equal(tot, len);
	return n;
}

static void test_copy_wrap(void **state)
{
	struct xsk_sendq q;
	uint8_t src[3000], out[3000];
	struct iovec v = { src, sizeof(src) };

	(void)state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7);
	assert_int_equal(xsk_sendq_init(&q, 4096, 64), 0);
	assert_int_equal(xsk_sendq_copy(&q, &v, 1, UINT32_MAX), 3000);
	/* the ring has 1096 bytes left: a second copy is cut short */
	assert_int_equal(xsk_sendq_copy(&q, &v, 1, UINT32_MAX), 1096);
	assert_int_equal(xsk_sendq_ring_free(&q), 0);
	xsk_sendq_acked(&q, 3000);	/* frees the first span */
	assert_int_equal(xsk_sendq_ring_free(&q), 3000);
	/* this one wraps around the ring's end: two spans */
	v.iov_base = src + 1096;
	v.iov_len = 1904;
	assert_int_equal(xsk_sendq_copy(&q, &v, 1, UINT32_MAX), 1904);
	assert_int_equal(gather(&q, 3000, 3000, out), 2);
	assert_memory_equal(out, src, 3000);
	/* a retransmission from the middle */
	gather(&q, 3500, 100, out);
	assert_memory_equal(out, src + 500, 100);
	assert_int_equal(xsk_sendq_fill(&q, 2999, 10, (struct utcp_iov[16]){ 0 }, 16), -EINVAL);
	assert_int_equal(xsk_sendq_fill(&q, 5999, 2, (struct utcp_iov[16]){ 0 }, 16), -EINVAL);
	xsk_sendq_fini(&q);
}

static void test_ref_ids(void **state)
{
	struct xsk_sendq q;
	uint8_t hdr[18], pay[1000], crc[4], out[2048];
	struct iovec h = { hdr, sizeof(hdr) }, p = { pay, sizeof(pay) };
	struct iovec c = { crc, sizeof(crc) };
	uint32_t id1 = 99, id2 = 99;

	(void)state;
	memset(hdr, 0xa1, sizeof(hdr));
	memset(pay, 0xb2, sizeof(pay));
	memset(crc, 0xc3, sizeof(crc));
	assert_int_equal(xsk_sendq_init(&q, 4096, 64), 0);
	assert_int_equal(xsk_sendq_copy(&q, &h, 1, UINT32_MAX), 18);
	assert_int_equal(xsk_sendq_ref(&q, &p, 1, UINT32_MAX, &id1), 1000);
	assert_int_equal(xsk_sendq_copy(&q, &c, 1, UINT32_MAX), 4);
	assert_int_equal(xsk_sendq_copy(&q, &h, 1, UINT32_MAX), 18);
	assert_int_equal(xsk_sendq_ref(&q, &p, 1, UINT32_MAX, &id2), 1000);
	assert_int_equal(id1, 0);
	assert_int_equal(id2, 1);
	assert_true(xsk_sendq_zc_outstanding(&q));
	/* the referenced bytes are the caller's own: no copy */
	{
		struct utcp_iov iov[16];
		int n = xsk_sendq_fill(&q, 18, 1000, iov, 16);

		assert_int_equal(n, 1);
		assert_ptr_equal(iov[0].base, pay);
	}
	/* a segment across header, payload, CRC and the next header */
	assert_int_equal(gather(&q, 10, 1030, out), 3);	/* crc+hdr merged */
	assert_memory_equal(out, hdr, 8);
	assert_memory_equal(out + 8, pay, 1000);
	assert_memory_equal(out + 1008, crc, 4);
	assert_memory_equal(out + 1012, hdr, 18);
	xsk_sendq_acked(&q, 500);
	assert_false(xsk_sendq_released(&q, id1));
	xsk_sendq_acked(&q, 1018);
	assert_true(xsk_sendq_released(&q, id1));
	assert_false(xsk_sendq_released(&q, id2));
	xsk_sendq_acked(&q, 2040);
	assert_true(xsk_sendq_released(&q, id2));
	assert_false(xsk_sendq_zc_outstanding(&q));
	assert_int_equal(xsk_sendq_ring_free(&q), 4096);
	xsk_sendq_fini(&q);
}

static void test_spans_full(void **state)
{
	struct xsk_sendq q;
	uint8_t b[8];
	struct iovec v[8];
	uint32_t id;

	(void)state;
	for (int i = 0; i < 8; i++)
		v[i] = (struct iovec){ b + i, 1 };
	assert_int_equal(xsk_sendq_init(&q, 1024, 4), 0);
	/* four reference spans fit, the rest is refused */
	assert_int_equal(xsk_sendq_ref(&q, v, 8, UINT32_MAX, &id), 4);
	assert_int_equal(xsk_sendq_spans_free(&q), 0);
	assert_int_equal(xsk_sendq_ref(&q, v, 1, UINT32_MAX, &id), 0);
	assert_int_equal(xsk_sendq_copy(&q, v, 1, UINT32_MAX), 0);
	xsk_sendq_acked(&q, 2);
	assert_int_equal(xsk_sendq_spans_free(&q), 2);
	xsk_sendq_fini(&q);
	assert_int_equal(xsk_sendq_init(&q, 16, 3), -EINVAL);	/* not 2^n */
}

/* Random operations against a flat model of the stream. */
static void test_random_model(void **state)
{
	enum { MAXB = 1 << 20 };
	uint8_t *model = malloc(MAXB), *out = malloc(70000);
	uint8_t *pool = malloc(65536);
	struct xsk_sendq q;
	uint64_t x = 12345;

	(void)state;
	for (int i = 0; i < 65536; i++)
		pool[i] = (uint8_t)(i * 31 + 7);
	assert_int_equal(xsk_sendq_init(&q, 16384, 256), 0);
	for (int step = 0; step < 20000 && q.queued < MAXB - 70000; step++) {
		uint32_t r, len, off;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r = (uint32_t)x;
		len = r % 3000 + 1;
		off = (r >> 12) % (65536 - len);
		switch (r % 4) {
		case 0: case 1: {	/* copy or reference a piece of pool */
			struct iovec v = { pool + off, len };
			uint32_t id, got = (r & 4) ?
				xsk_sendq_copy(&q, &v, 1, UINT32_MAX) :
				xsk_sendq_ref(&q, &v, 1, UINT32_MAX, &id);

			memcpy(model + q.queued - got, pool + off, got);
			break;
		}
		case 2:			/* ack part of what is queued */
			xsk_sendq_acked(&q, q.acked + (q.queued - q.acked) * (r % 5) / 4);
			break;
		default:		/* (re)transmit a segment */
			if (q.queued == q.acked)
				break;
			off = (uint32_t)(q.acked + (r % (uint32_t)(q.queued - q.acked)));
			if (len > q.queued - off)
				len = (uint32_t)(q.queued - off);
			{
				struct utcp_iov iov[UTCP_MAX_IOV];
				int n = xsk_sendq_fill(&q, off, len, iov, UTCP_MAX_IOV);
				uint32_t tot = 0;

				if (n == -E2BIG)
					break;	/* many 1-byte spans: fine */
				assert_true(n > 0);
				for (int i = 0; i < n; i++) {
					memcpy(out + tot, iov[i].base, iov[i].len);
					tot += iov[i].len;
				}
				assert_int_equal(tot, len);
				assert_memory_equal(out, model + off, len);
			}
		}
	}
	assert_true(q.queued > 100000);
	xsk_sendq_fini(&q);
	free(model);
	free(out);
	free(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_wrap),
		cmocka_unit_test(test_ref_ids),
		cmocka_unit_test(test_spans_full),
		cmocka_unit_test(test_random_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
