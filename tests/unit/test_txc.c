// SPDX-License-Identifier: MIT
/*
 * Seed 000 send-completion bookkeeping (user/engine/xiw_txc.c): both
 * methods with many WRs in flight, several WRs per sendmsg, partial ACKs,
 * and the 32-bit position wrap. A tiny model of a TCP socket drives it:
 * @una (acked-bytes count) and @wseq (written) with outq = wseq - una.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "xiw_txc.h"

struct sock_model {
	uint32_t una, wseq;
};

/* hand over WRs of @len[0..n) in one sendmsg; ids from *next_id */
static void send_wrs(struct xiw_txc *t, struct sock_model *s,
		     const uint32_t *len, int n, uint32_t *next_id)
{
	uint32_t total = 0, end = 0;

	for (int i = 0; i < n; i++)
		total += len[i];
	s->wseq += total;
	xiw_txc_handed(t, total);
	for (int i = 0; i < n; i++) {
		end += len[i];
		assert_int_equal(xiw_txc_add(t, total - end, (*next_id)++), 0);
	}
}

/* take every due WR; they must come in order, starting at *expect */
static int take_all(struct xiw_txc *t, const struct sock_model *s,
		    uint32_t *expect)
{
	uint32_t id;
	int n = 0;

	while (xiw_txc_take(t, s->una, s->wseq - s->una, &id)) {
		assert_int_equal(id, *expect);
		(*expect)++;
		n++;
	}
	return n;
}

/* WRs of 1000 bytes each, 4 per sendmsg, ACKs in odd steps */
static void run_many(int method, uint32_t start)
{
	struct sock_model s = { .una = start, .wseq = start };
	uint32_t lens[4] = { 1000, 1000, 1000, 1000 };
	uint32_t next = 0, expect = 0;
	struct xiw_txc t;

	assert_int_equal(xiw_txc_init(&t, method, 256), 0);
	xiw_txc_sync(&t, s.una, s.wseq - s.una);
	for (int r = 0; r < 50; r++)
		send_wrs(&t, &s, lens, 4, &next);
	assert_int_equal(xiw_txc_pending(&t), 200);
	assert_int_equal(take_all(&t, &s, &expect), 0);
	/* one byte short of the first WR: nothing */
	s.una += 999;
	assert_int_equal(take_all(&t, &s, &expect), 0);
	s.una += 1;
	assert_int_equal(take_all(&t, &s, &expect), 1);
	/* the target for the watermark is the next WR's end */
	assert_int_equal(xiw_txc_target(&t, s.una, s.wseq - s.una),
			 (uint32_t)(start + 2000));
	/* 2.5 WRs at once */
	s.una += 2500;
	assert_int_equal(take_all(&t, &s, &expect), 2);
	/* more sends while some are pending raise method 1's EQL */
	send_wrs(&t, &s, lens, 2, &next);
	s.una = s.wseq - 1000;	/* all but the last WR */
	assert_int_equal(take_all(&t, &s, &expect), 200 + 2 - 3 - 1);
	assert_int_equal(xiw_txc_pending(&t), 1);
	s.una = s.wseq;
	assert_int_equal(take_all(&t, &s, &expect), 1);
	assert_int_equal(expect, next);
	assert_int_equal(xiw_txc_pending(&t), 0);
	xiw_txc_free(&t);
}

static void test_hsn_many(void **state)
{
	(void)state;
	run_many(XIW_ACK_HSN, 12345);
}

static void test_eql_many(void **state)
{
	(void)state;
	run_many(XIW_ACK_EQL, 12345);
}

/* the stream position crosses 2^32 while WRs are pending */
static void test_hsn_wrap(void **state)
{
	(void)state;
	run_many(XIW_ACK_HSN, UINT32_MAX - 100000);
	run_many(XIW_ACK_HSN, UINT32_MAX - 2500);
}

static void test_eql_wrap(void **state)
{
	(void)state;
	run_many(XIW_ACK_EQL, UINT32_MAX - 100000);
}

/* method 1's handed-over counter itself wraps (it starts at 0) */
static void test_eql_counter_wrap(void **state)
{
	struct sock_model s = { .una = 7, .wseq = 7 };
	uint32_t big = 0x40000000u, next = 0, expect = 0;
	struct xiw_txc t;

	(void)state;
	assert_int_equal(xiw_txc_init(&t, XIW_ACK_EQL, 8), 0);
	/* push the counter near 2^32 with WRs that complete at once */
	for (int i = 0; i < 3; i++) {
		send_wrs(&t, &s, &big, 1, &next);
		s.una = s.wseq;
		assert_int_equal(take_all(&t, &s, &expect), 1);
	}
	run_many(XIW_ACK_EQL, s.una);	/* fresh tracker, sanity */
	for (int i = 0; i < 5; i++) {
		uint32_t l = 0x20000000u;

		send_wrs(&t, &s, &l, 1, &next);	/* crosses 2^32 in here */
	}
	s.una += 0x20000000u * 2;
	assert_int_equal(take_all(&t, &s, &expect), 2);
	s.una = s.wseq;
	assert_int_equal(take_all(&t, &s, &expect), 3);
	xiw_txc_free(&t);
}

/* a position that has not been reached yet is never "passed" */
static void test_not_early(void **state)
{
	struct sock_model s = { .una = 0xfffffff0u, .wseq = 0xfffffff0u };
	uint32_t len = 64, next = 0, expect = 0;
	struct xiw_txc t;

	(void)state;
	assert_int_equal(xiw_txc_init(&t, XIW_ACK_HSN, 4), 0);
	xiw_txc_sync(&t, s.una, 0);
	send_wrs(&t, &s, &len, 1, &next);	/* HSN = 0x30 after wrap */
	for (uint32_t u = 0xfffffff0u; u != 0x30; u++) {
		s.una = u;
		assert_int_equal(take_all(&t, &s, &expect), 0);
	}
	s.una = 0x30;
	assert_int_equal(take_all(&t, &s, &expect), 1);
	xiw_txc_free(&t);
}

static void test_ring_and_args(void **state)
{
	struct xiw_txc t;

	(void)state;
	assert_int_equal(xiw_txc_init(&t, 3, 8), -EINVAL);
	assert_int_equal(xiw_txc_init(&t, XIW_ACK_HSN, 6), -EINVAL);
	assert_int_equal(xiw_txc_init(&t, XIW_ACK_HSN, 2), 0);
	xiw_txc_sync(&t, 0, 0);
	xiw_txc_handed(&t, 10);
	assert_int_equal(xiw_txc_add(&t, 0, 1), 0);
	assert_int_equal(xiw_txc_add(&t, 0, 2), 0);
	assert_int_equal(xiw_txc_add(&t, 0, 3), -ENOSPC);
	xiw_txc_reset(&t);
	assert_int_equal(xiw_txc_pending(&t), 0);
	xiw_txc_free(&t);
}

/* The nth pending WR's target and id (the watermark skips unsignalled
 * WRs, xiw_txack.c): in both methods, and across the ring's wrap. */
static void test_target_at(void **state)
{
	struct xiw_txc t;

	(void)state;
	for (int m = 0; m < 2; m++) {
		int method = m ? XIW_ACK_EQL : XIW_ACK_HSN;

		assert_int_equal(xiw_txc_init(&t, method, 4), 0);
		xiw_txc_sync(&t, 0xfffffff0u, 0);
		for (uint32_t i = 0; i < 6; i++) {	/* ring of 4: wraps */
			uint32_t id;

			xiw_txc_handed(&t, 16);
			assert_int_equal(xiw_txc_add(&t, 0, 100 + i), 0);
			if (xiw_txc_pending(&t) == 3) {	/* complete the oldest */
				assert_true(xiw_txc_take(&t, xiw_txc_target(&t, 0, 0), 0,
							 &id) || method == XIW_ACK_EQL);
				if (method == XIW_ACK_EQL)
					assert_true(xiw_txc_take(&t, 0, 0, &id));
			}
		}
		/* 2 pending: ids 104, 105 at 0xfffffff0 + 80 and + 96 */
		assert_int_equal(xiw_txc_pending(&t), 2);
		assert_int_equal(xiw_txc_id_at(&t, 0), 104);
		assert_int_equal(xiw_txc_id_at(&t, 1), 105);
		assert_int_equal(xiw_txc_target_at(&t, 0, 0, 0),
				 xiw_txc_target(&t, 0, 0));
		if (method == XIW_ACK_HSN) {
			assert_int_equal(xiw_txc_target_at(&t, 0, 0, 0), 0xfffffff0u + 80);
			assert_int_equal(xiw_txc_target_at(&t, 0, 0, 1), 0xfffffff0u + 96);
		} else {	/* una 0, outq 32: EQL of 104 is 16, of 105 is 0 */
			assert_int_equal(xiw_txc_target_at(&t, 0, 32, 0), 16);
			assert_int_equal(xiw_txc_target_at(&t, 0, 32, 1), 32);
		}
		xiw_txc_free(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hsn_many),
		cmocka_unit_test(test_eql_many),
		cmocka_unit_test(test_hsn_wrap),
		cmocka_unit_test(test_eql_wrap),
		cmocka_unit_test(test_eql_counter_wrap),
		cmocka_unit_test(test_not_early),
		cmocka_unit_test(test_ring_and_args),
		cmocka_unit_test(test_target_at),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
