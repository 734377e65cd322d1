// SPDX-License-Identifier: MIT
/*
 * Seed-004 thresholds (user/sockets/xrs_zc_policy.c): which transfers go
 * zero-copy, and how each side moves its own threshold from what the
 * peer does, in both directions, within its bounds; "never" stays never;
 * XIW_RS_ADAPT=0 (adapt false) keeps fixed thresholds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "sockets/xrs_zc_policy.h"

static void test_init(void **state)
{
	struct xrs_zpol p;

	(void)state;
	xrs_zpol_init(&p, 0, 0, true, true);
	assert_int_equal(p.src, XRS_ZP_SRC_START);
	assert_int_equal(p.sink, XRS_ZP_SINK_START);
	xrs_zpol_init(&p, 100000, XRS_ZP_NEVER, false, true);
	assert_int_equal(p.src, 100000);
	assert_int_equal(p.sink, XRS_ZP_NEVER);
}

static void test_src_decision(void **state)
{
	struct xrs_zpol p;

	(void)state;
	xrs_zpol_init(&p, 65536, 0, false, true);
	assert_false(xrs_zpol_src_zcopy(&p, 65535));
	assert_true(xrs_zpol_src_zcopy(&p, 65536));
	assert_true(xrs_zpol_src_zcopy(&p, 1ull << 32));
	/* adaptive: buffer copy until there is a rate to compare with */
	xrs_zpol_init(&p, 65536, 0, true, true);
	for (int i = 0; i < XRS_ZP_SAMPLES; i++) {
		assert_false(xrs_zpol_src_zcopy(&p, 1 << 20));
		xrs_zpol_on_sent(&p, 1 << 20, 1000000, false);
	}
	assert_false(xrs_zpol_src_zcopy(&p, 65535));
	assert_true(xrs_zpol_src_zcopy(&p, 65536));
	assert_true(xrs_zpol_src_zcopy(&p, 1ull << 32));
	/* infinity = buffer copy only, for every size */
	xrs_zpol_init(&p, XRS_ZP_NEVER, XRS_ZP_NEVER, true, true);
	assert_false(xrs_zpol_src_zcopy(&p, 1ull << 40));
	assert_false(xrs_zpol_post_sinkavail(&p, 1ull << 40, false, false));
	/* a SrcAvail ties the caller's buffer up: blocking, no timeout only */
	assert_true(xrs_zpol_srcavail_ok(false, false));
	assert_false(xrs_zpol_srcavail_ok(true, false));
	assert_false(xrs_zpol_srcavail_ok(false, true));
}

static void test_sink_decision(void **state)
{
	struct xrs_zpol p;

	(void)state;
	xrs_zpol_init(&p, 0, 65536, true, true);
	assert_false(xrs_zpol_post_sinkavail(&p, 65535, false, false));
	assert_true(xrs_zpol_post_sinkavail(&p, 65536, false, false));
	assert_false(xrs_zpol_post_sinkavail(&p, 1 << 20, true, false));
	assert_false(xrs_zpol_post_sinkavail(&p, 1 << 20, false, true));
	/* read a SrcAvail when the buffer takes min(read_min, what is left) */
	assert_true(xrs_zpol_read(&p, XRS_ZP_READ_MIN, 1 << 20));
	assert_false(xrs_zpol_read(&p, XRS_ZP_READ_MIN - 1, 1 << 20));
	assert_true(xrs_zpol_read(&p, 100, 100));
	assert_false(xrs_zpol_read(&p, 99, 100));
}

/* source: SinkAvail lowers, SendSm raises; clamped at both ends */
static void test_src_adapt(void **state)
{
	struct xrs_zpol p;

	(void)state;
	xrs_zpol_init(&p, 0, 0, true, true);
	xrs_zpol_on_sinkavail(&p);
	assert_int_equal(p.src, XRS_ZP_SRC_START / 2);
	for (int i = 0; i < 40; i++)
		xrs_zpol_on_sinkavail(&p);
	assert_int_equal(p.src, XRS_ZP_MIN);
	xrs_zpol_on_sendsm(&p);
	assert_int_equal(p.src, XRS_ZP_MIN * 2);
	for (int i = 0; i < 40; i++)
		xrs_zpol_on_sendsm(&p);
	assert_int_equal(p.src, XRS_ZP_MAX);
	/* the sink's events do not move the source threshold */
	xrs_zpol_on_srcavail(&p);
	xrs_zpol_on_sink_wasted(&p);
	assert_int_equal(p.src, XRS_ZP_MAX);
}

/* sink: a SrcAvail lowers, a wasted SinkAvail raises; clamped */
static void test_sink_adapt(void **state)
{
	struct xrs_zpol p;

	(void)state;
	xrs_zpol_init(&p, 0, 0, true, true);
	xrs_zpol_on_sink_wasted(&p);
	assert_int_equal(p.sink, XRS_ZP_SINK_START * 2);
	for (int i = 0; i < 40; i++)
		xrs_zpol_on_sink_wasted(&p);
	assert_int_equal(p.sink, XRS_ZP_MAX);
	xrs_zpol_on_srcavail(&p);
	assert_int_equal(p.sink, XRS_ZP_MAX / 2);
	for (int i = 0; i < 40; i++)
		xrs_zpol_on_srcavail(&p);
	assert_int_equal(p.sink, XRS_ZP_MIN);
	xrs_zpol_on_sinkavail(&p);
	xrs_zpol_on_sendsm(&p);
	assert_int_equal(p.sink, XRS_ZP_MIN);
}

/* 64 KB sends at @zc_ns per call by zero copy, @bc_ns by buffer copy */
static void feed(struct xrs_zpol *p, int rounds, uint64_t bc_ns, uint64_t zc_ns)
{
	for (int i = 0; i < rounds; i++)
		xrs_zpol_on_sent(p, 65536, xrs_zpol_src_zcopy(p, 65536) ? zc_ns : bc_ns,
				 xrs_zpol_src_zcopy(p, 65536));
}

/*
 * Cost feedback: zero copy slower than buffer copy twice in a row raises
 * the source's floor to twice that size, which SinkAvails cannot undercut;
 * one slow call does not; faster zero copy keeps going; the floor halves
 * every XRS_ZP_REPROBE buffer-copy samples; below XRS_ZP_MIN nothing
 * counts; fixed thresholds ignore it all.
 */
static void test_cost_feedback(void **state)
{
	struct xrs_zpol p;
	int zc = 0;

	(void)state;
	xrs_zpol_init(&p, 0, 0, true, true);
	feed(&p, XRS_ZP_SAMPLES, 26000, 0);		/* 20 Gb/s by copy */
	assert_true(xrs_zpol_src_zcopy(&p, 65536));
	xrs_zpol_on_sent(&p, 65536, 111000, true);	/* 4.7 Gb/s: one */
	assert_true(xrs_zpol_src_zcopy(&p, 65536));
	xrs_zpol_on_sent(&p, 65536, 20000, true);	/* faster: reset */
	xrs_zpol_on_sent(&p, 65536, 111000, true);
	assert_true(xrs_zpol_src_zcopy(&p, 65536));
	xrs_zpol_on_sent(&p, 65536, 111000, true);	/* twice in a row */
	assert_int_equal(p.src_floor, 131072);
	assert_int_equal(p.src, 131072);
	assert_false(xrs_zpol_src_zcopy(&p, 65536));
	for (int i = 0; i < 40; i++)
		xrs_zpol_on_sinkavail(&p);
	assert_int_equal(p.src, 131072);
	/* re-probing: over 4 floor halvings' worth of samples, zero copy
	 * is tried again and loses again; mostly buffer copy */
	for (int i = 0; i < 4 * XRS_ZP_REPROBE; i++) {
		zc += xrs_zpol_src_zcopy(&p, 65536);
		xrs_zpol_on_sinkavail(&p);
		feed(&p, 1, 26000, 111000);
	}
	assert_in_range(zc, 1, 4 * XRS_ZP_REPROBE / 10);
	/* where zero copy is the faster one it is kept */
	xrs_zpol_init(&p, 0, 0, true, true);
	feed(&p, 100, 111000, 26000);
	assert_int_equal(p.src_floor, 0);
	assert_true(xrs_zpol_src_zcopy(&p, 65536));
	/* small calls do not count; fixed thresholds do not learn */
	xrs_zpol_init(&p, 0, 0, true, true);
	xrs_zpol_on_sent(&p, XRS_ZP_MIN - 1, 1, false);
	assert_int_equal(p.bc_n, 0);
	xrs_zpol_init(&p, 65536, 0, false, true);
	feed(&p, 100, 26000, 111000);
	assert_int_equal(p.src, 65536);
	assert_int_equal(p.src_floor, 0);
	/* XIW_RS_ZC_COST=0: seed-004 adaptation alone, no warm-up */
	xrs_zpol_init(&p, 0, 0, true, false);
	assert_true(xrs_zpol_src_zcopy(&p, 65536));
	feed(&p, 100, 26000, 111000);
	assert_int_equal(p.src_floor, 0);
	assert_true(xrs_zpol_src_zcopy(&p, 65536));
}

/* fixed thresholds (adapt off) and "never" do not move */
static void test_no_adapt(void **state)
{
	struct xrs_zpol p;

	(void)state;
	xrs_zpol_init(&p, 200000, 300000, false, true);
	xrs_zpol_on_sinkavail(&p);
	xrs_zpol_on_sendsm(&p);
	xrs_zpol_on_sendsm(&p);
	xrs_zpol_on_srcavail(&p);
	xrs_zpol_on_sink_wasted(&p);
	assert_int_equal(p.src, 200000);
	assert_int_equal(p.sink, 300000);
	xrs_zpol_init(&p, XRS_ZP_NEVER, XRS_ZP_NEVER, true, true);
	xrs_zpol_on_sinkavail(&p);
	xrs_zpol_on_srcavail(&p);
	xrs_zpol_on_sendsm(&p);
	xrs_zpol_on_sink_wasted(&p);
	assert_int_equal(p.src, XRS_ZP_NEVER);
	assert_int_equal(p.sink, XRS_ZP_NEVER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_src_decision),
		cmocka_unit_test(test_sink_decision),
		cmocka_unit_test(test_src_adapt),
		cmocka_unit_test(test_sink_adapt),
		cmocka_unit_test(test_no_adapt),
		cmocka_unit_test(test_cost_feedback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
