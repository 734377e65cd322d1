// SPDX-License-Identifier: MIT
/*
 * utcp building blocks: RFC 1071 checksum (odd pieces, fused copy),
 * IPv4+TCP parsing (hostile lengths, corrupted bytes), option parse /
 * build round trips, the sender SACK scoreboard and serial arithmetic.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "transport/utcp/utcp_int.h"

/* RFC 1071 reference: byte pairs, fold, complement */
static uint16_t ref_csum(const uint8_t *p, size_t n, uint32_t seed)
{
	uint64_t s = seed;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void test_csum_pieces(void **state)
{
	uint8_t buf[1501], dst[1501];
	uint32_t x = 12345;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245 + 12345;
		buf[i] = (uint8_t)(x >> 16);
	}
	/* RFC 1071 §3 example: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2 */
	{
		const uint8_t ex[8] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
		struct utcp_csum cs;

		utcp_csum_init(&cs, 0);
		utcp_csum_add(&cs, ex, 8);
		assert_int_equal(utcp_csum_final(&cs), (uint16_t)~0xddf2);
	}
	for (size_t n = 0; n <= sizeof(buf); n += 97) {
		uint16_t want = ref_csum(buf, n, 0x1234);

		for (size_t cut = 0; cut <= n; cut += 13) {
			struct utcp_csum cs;

			utcp_csum_init(&cs, 0x1234);
			utcp_csum_add(&cs, buf, cut);
			utcp_csum_add(&cs, buf + cut, n - cut);
			assert_int_equal(utcp_csum_final(&cs), want);
			/* fused copy gives the same sum and the bytes */
			utcp_csum_init(&cs, 0x1234);
			utcp_csum_copy(&cs, dst, buf, cut);
			utcp_csum_copy(&cs, dst + cut, buf + cut, n - cut);
			assert_int_equal(utcp_csum_final(&cs), want);
			if (n)
				assert_memory_equal(dst, buf, n);
		}
	}
}

/* sum @n bytes at @src in 3 pieces (@cut, 1 odd byte, the rest), copying
 * them to @dst: the final checksum */
static uint16_t sum_pieces(uint8_t *dst, const uint8_t *src, size_t n, size_t cut)
{
	struct utcp_csum cs;

	utcp_csum_init(&cs, 0xfedc);
	utcp_csum_copy(&cs, dst, src, cut);
	utcp_csum_copy(&cs, dst + cut, src + cut, 1);
	utcp_csum_add(&cs, src + cut + 1, n - cut - 1);
	memcpy(dst + cut + 1, src + cut + 1, n - cut - 1);
	return utcp_csum_final(&cs);
}

/*
 * The AVX2 bulk (utcp_csum_simd.c) against the RFC 1071 reference and
 * the scalar loops: buffers of up to 2.1 MiB (several 512 KiB runs of
 * 32-bit lanes; all-0xff bytes overflow a lane that is not flushed
 * after 2 MiB),
 * all-0xff and pseudo-random, at every source/destination misalignment
 * mod 32 for the short ones, cut at odd places.
 */
static void test_csum_simd(void **state)
{
	static const size_t lens[] = { 63, 64, 65, 1448, 4096 + 13, 65536,
				       (1u << 21) + (1u << 17) + 7 };
	size_t max = lens[sizeof(lens) / sizeof(lens[0]) - 1] + 64;
	uint8_t *src = malloc(max), *dst = malloc(max);
	uint32_t x = 777;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	for (int fill = 0; fill < 2; fill++) {
		for (size_t i = 0; i < max; i++) {
			x = x * 1103515245 + 12345;
			src[i] = fill ? (uint8_t)(x >> 16) : 0xff;
		}
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			size_t n = lens[l], offs = n < 70000 ? 32 : 2;

			for (size_t o = 0; o < offs; o++) {
				size_t so = o, dof = (o * 7) % 32, cut = (n / 3) | 1;
				uint16_t want = ref_csum(src + so, n, 0xfedc);

				for (int simd = 1; simd >= 0; simd--) {
					utcp_csum_simd_enable(simd);
					memset(dst, 0, max);
					assert_int_equal(sum_pieces(dst + dof, src + so, n, cut), want);
					assert_memory_equal(dst + dof, src + so, n);
					assert_int_equal(sum_pieces(dst + dof, src + so, n, 0), want);
				}
			}
		}
	}
	utcp_csum_simd_enable(true);
	free(src);
	free(dst);
}

/* a valid SYN with MSS/SACKP/TS/WS from Linux (captured layout) */
static size_t make_pkt(uint8_t *p, const uint8_t *opts, size_t optlen,
		       const uint8_t *data, size_t dlen)
{
	size_t thl = 20 + optlen, tot = 20 + thl + dlen;
	struct utcp_csum cs;

	memset(p, 0, tot);
	p[0] = 0x45;
	p[2] = (uint8_t)(tot >> 8);
	p[3] = (uint8_t)tot;
	p[6] = 0x40;
	p[8] = 64;
	p[9] = 6;
	p[12] = 10; p[15] = 1;		/* 10.0.0.1 */
	p[16] = 10; p[19] = 2;		/* 10.0.0.2 */
	utcp_csum_init(&cs, 0);
	utcp_csum_add(&cs, p, 20);
	uint16_t ic = utcp_csum_final(&cs);
	p[10] = (uint8_t)(ic >> 8);
	p[11] = (uint8_t)ic;
	uint8_t *t = p + 20;
	t[0] = 0x12; t[1] = 0x34; t[2] = 0x00; t[3] = 0x50;
	t[4] = 0xde; t[5] = 0xad; t[6] = 0xbe; t[7] = 0xef;
	t[12] = (uint8_t)((thl / 4) << 4);
	t[13] = UTCP_ACK | UTCP_PSH;
	t[14] = 0xff; t[15] = 0xff;
	memcpy(t + 20, opts, optlen);
	memcpy(t + thl, data, dlen);
	utcp_csum_init(&cs, utcp_csum_pseudo(0x0a000001, 0x0a000002, 6, (uint32_t)(thl + dlen)));
	utcp_csum_add(&cs, t, thl + dlen);
	uint16_t tc = utcp_csum_final(&cs);
	t[16] = (uint8_t)(tc >> 8);
	t[17] = (uint8_t)tc;
	return tot;
}

/*
 * cfg.output_sums_payload: utcp leaves the partial sum, the owner adds the
 * payload while copying it (utcp_csum_copy, any piece sizes, odd ones
 * included) and stores the result: the same checksum as utcp's own, and
 * a segment that parses with its checksum verified. A header left
 * unfinished must not verify.
 */
static void test_csum_fused_output(void **state)
{
	static const uint32_t cuts[] = { 0, 1, 7, 256, 999, 1447 };
	struct utcp_conn full, part;
	uint8_t pay[1448], hfull[UTCP_MAX_HDR], pkt[UTCP_MAX_HDR + 1448];
	struct utcp_iov iov[2];
	struct utcp_seg s;
	int hl;

	(void)state;
	for (size_t i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)(i * 31 + 7);
	memset(&full, 0, sizeof(full));
	full.cfg.laddr = 0x0a000001;
	full.cfg.raddr = 0x0a000002;
	full.cfg.lport = 4791;
	full.cfg.rport = 40000;
	utcp_cfg_init(&full.cfg);
	part = full;
	part.cfg.output_sums_payload = true;
	for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
		struct utcp_csum cs;
		uint32_t a = cuts[k];

		iov[0] = (struct utcp_iov){ .base = pay, .len = a };
		iov[1] = (struct utcp_iov){ .base = pay + a, .len = sizeof(pay) - a };
		full.ip_id = part.ip_id = 5;
		hl = utcp_build_hdr(&full, hfull, 1000, 2000, UTCP_ACK, 512, NULL,
				    0, iov, 2, sizeof(pay));
		assert_int_equal(utcp_build_hdr(&part, pkt, 1000, 2000, UTCP_ACK, 512,
						NULL, 0, iov, 2, sizeof(pay)), hl);
		/* unfinished: the payload is not in the sum yet */
		memcpy(pkt + hl, pay, sizeof(pay));
		assert_int_equal(utcp_seg_parse(pkt, (size_t)hl + sizeof(pay), true, &s),
				 -EBADMSG);
		utcp_csum_partial(&cs, pkt);
		utcp_csum_copy(&cs, pkt + hl, iov[0].base, iov[0].len);
		utcp_csum_copy(&cs, pkt + hl + a, iov[1].base, iov[1].len);
		utcp_csum_store(&cs, pkt);
		assert_memory_equal(pkt, hfull, (size_t)hl);
		assert_int_equal(utcp_seg_parse(pkt, (size_t)hl + sizeof(pay), true, &s), 0);
		assert_int_equal(s.len, sizeof(pay));
	}
}

static void test_seg_parse(void **state)
{
	uint8_t p[200], q[200];
	const uint8_t opts[12] = { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2 };
	struct utcp_seg s;
	size_t n = make_pkt(p, opts, sizeof(opts), (const uint8_t *)"hello", 5);

	(void)state;
	assert_int_equal(utcp_seg_parse(p, n, true, &s), 0);
	assert_int_equal(s.saddr, 0x0a000001);
	assert_int_equal(s.daddr, 0x0a000002);
	assert_int_equal(s.sport, 0x1234);
	assert_int_equal(s.dport, 80);
	assert_int_equal(s.seq, 0xdeadbeef);
	assert_int_equal(s.len, 5);
	assert_int_equal(s.optlen, 12);
	assert_memory_equal(s.data, "hello", 5);
	/* trailing link padding is ignored */
	memcpy(q, p, n);
	memset(q + n, 0xaa, 10);
	assert_int_equal(utcp_seg_parse(q, n + 10, true, &s), 0);
	assert_int_equal(s.len, 5);
	/* every single-bit flip in the TCP part is caught by the checksum
	 * (or makes the header malformed); never accepted */
	for (size_t i = 20; i < n; i++) {
		for (int b = 0; b < 8; b++) {
			memcpy(q, p, n);
			q[i] ^= (uint8_t)(1 << b);
			int rc = utcp_seg_parse(q, n, true, &s);

			assert_true(rc == -EBADMSG || rc == -EINVAL);
		}
	}
	/* without verification, a payload flip parses */
	memcpy(q, p, n);
	q[n - 1] ^= 1;
	assert_int_equal(utcp_seg_parse(q, n, false, &s), 0);
	/* truncations are malformed, never read past the end */
	for (size_t k = 0; k < n; k++) {
		uint8_t *t = malloc(k ? k : 1);

		memcpy(t, p, k);
		assert_int_not_equal(utcp_seg_parse(t, k, true, &s), 0);
		free(t);
	}
	/* IHL < 5, bad version, fragment, not TCP, doff > length */
	memcpy(q, p, n); q[0] = 0x44;
	assert_int_equal(utcp_seg_parse(q, n, true, &s), -EINVAL);
	memcpy(q, p, n); q[0] = 0x65;
	assert_int_equal(utcp_seg_parse(q, n, true, &s), -EINVAL);
	memcpy(q, p, n); q[6] = 0x20;
	assert_int_equal(utcp_seg_parse(q, n, true, &s), -EINVAL);
	memcpy(q, p, n); q[9] = 17;
	assert_int_equal(utcp_seg_parse(q, n, true, &s), -EINVAL);
	memcpy(q, p, n); q[20 + 12] = 0xf0;
	assert_int_equal(utcp_seg_parse(q, n, true, &s), -EINVAL);
	memcpy(q, p, n); q[20 + 12] = 0x40;
	assert_int_equal(utcp_seg_parse(q, n, true, &s), -EINVAL);
}

static void test_opts(void **state)
{
	struct utcp_opts o, r;
	uint8_t buf[40];
	int n;

	(void)state;
	memset(&o, 0, sizeof(o));
	o.has_mss = o.has_ws = o.has_ts = o.sack_perm = true;
	o.mss = 1460; o.ws = 7; o.tsval = 0x01020304; o.tsecr = 0;
	n = utcp_opts_build(&o, true, buf, sizeof(buf));
	assert_int_equal(n, 20);
	assert_int_equal(n % 4, 0);
	assert_int_equal(utcp_opts_parse(buf, (uint32_t)n, &r), 0);
	assert_true(r.has_mss && r.has_ws && r.has_ts && r.sack_perm);
	assert_int_equal(r.mss, 1460);
	assert_int_equal(r.ws, 7);
	assert_int_equal(r.tsval, 0x01020304);
	/* data segment: TS + 3 SACK blocks = 40 bytes; a 4th does not fit */
	memset(&o, 0, sizeof(o));
	o.has_ts = true; o.tsval = 5; o.tsecr = 6;
	o.nsack = 4;
	for (int i = 0; i < 4; i++) {
		o.sack_start[i] = 1000u * (uint32_t)i + 0xfffff000u;
		o.sack_end[i] = o.sack_start[i] + 500;
	}
	n = utcp_opts_build(&o, false, buf, sizeof(buf));
	assert_int_equal(n, 40);
	assert_int_equal(utcp_opts_parse(buf, 40, &r), 0);
	assert_int_equal(r.nsack, 3);
	assert_int_equal(r.sack_start[2], o.sack_start[2]);
	assert_int_equal(r.sack_end[2], o.sack_end[2]);
	assert_int_equal(r.tsecr, 6);
	/* malformed: zero length, length past end, wrong fixed lengths */
	const uint8_t bad1[] = { 2, 0, 0, 0 };
	const uint8_t bad2[] = { 1, 1, 8, 10, 0, 0 };
	const uint8_t bad3[] = { 2, 3, 5, 0 };
	const uint8_t bad4[] = { 5, 9, 0, 0, 0, 0, 0, 0, 0, 0 };
	const uint8_t bad5[] = { 1, 1, 1, 99 };
	const uint8_t ok1[] = { 99, 4, 1, 2, 0, 0xff, 0xff, 0xff };	/* unknown, then EOL */
	assert_int_equal(utcp_opts_parse(bad1, sizeof(bad1), &r), -EINVAL);
	assert_int_equal(utcp_opts_parse(bad2, sizeof(bad2), &r), -EINVAL);
	assert_int_equal(utcp_opts_parse(bad3, sizeof(bad3), &r), -EINVAL);
	assert_int_equal(utcp_opts_parse(bad4, sizeof(bad4), &r), -EINVAL);
	assert_int_equal(utcp_opts_parse(bad5, sizeof(bad5), &r), -EINVAL);
	assert_int_equal(utcp_opts_parse(ok1, sizeof(ok1), &r), 0);
	assert_false(r.has_mss);
}

static void test_serial(void **state)
{
	(void)state;
	assert_true(seq_lt(0xfffffff0u, 0x10));
	assert_true(seq_gt(0x10, 0xfffffff0u));
	assert_true(seq_in(0, 0xffffff00u, 0x100));
	assert_false(seq_in(0x100, 0xffffff00u, 0x100));
	assert_int_equal(seq_max(0xfffffff0u, 5), 5);
	assert_int_equal(seq_min(0xfffffff0u, 5), 0xfffffff0u);
}

static void test_scoreboard(void **state)
{
	struct utcp_sb sb = { 0 };
	const uint32_t una = 0xfffff000u, max = una + 20000;
	uint32_t hs, he;

	(void)state;
	/* out of range blocks are ignored (RFC 2018 / 5961) */
	utcp_sb_add(&sb, una, max, una - 100, una);
	utcp_sb_add(&sb, una, max, max, max + 10);
	utcp_sb_add(&sb, una, max, una + 10, una + 5);
	assert_int_equal(sb.n, 0);
	utcp_sb_add(&sb, una, max, una + 3000, una + 4000);	/* across 2^32 */
	utcp_sb_add(&sb, una, max, una + 6000, una + 7000);
	utcp_sb_add(&sb, una, max, una + 1000, una + 2000);
	assert_int_equal(sb.n, 3);
	assert_int_equal(sb.s[0], una + 1000);
	assert_int_equal(sb.s[2], una + 6000);
	/* merge across: 1500..6500 swallows the middle */
	utcp_sb_add(&sb, una, max, una + 1500, una + 6500);
	assert_int_equal(sb.n, 1);
	assert_int_equal(sb.s[0], una + 1000);
	assert_int_equal(sb.e[0], una + 7000);
	assert_int_equal(utcp_sb_sacked(&sb, una, max), 6000);
	assert_true(utcp_sb_is_sacked(&sb, una + 1000));
	assert_false(utcp_sb_is_sacked(&sb, una + 7000));
	/* holes skip SACKed ranges */
	assert_true(utcp_sb_next_hole(&sb, una, max, &hs, &he));
	assert_int_equal(hs, una);
	assert_int_equal(he, una + 1000);
	assert_true(utcp_sb_next_hole(&sb, una + 1000, max, &hs, &he));
	assert_int_equal(hs, una + 7000);
	assert_int_equal(he, max);
	/* IsLost: > 2 SMSS SACKed above -> lost boundary at the block start */
	assert_int_equal(utcp_sb_lost_boundary(&sb, una, 1000), una + 1000);
	assert_int_equal(utcp_sb_lost_boundary(&sb, una, 3000), una);
	/* cumulative ACK trims */
	utcp_sb_ack(&sb, una + 1500);
	assert_int_equal(sb.s[0], una + 1500);
	utcp_sb_ack(&sb, una + 7000);
	assert_int_equal(sb.n, 0);
	/* capacity: the highest ranges are forgotten, never the lowest */
	for (uint32_t i = 0; i < UTCP_SB_MAX + 5; i++)
		utcp_sb_add(&sb, una, una + 1000000, una + 100 + 200 * (UTCP_SB_MAX + 5 - i),
			    una + 150 + 200 * (UTCP_SB_MAX + 5 - i));
	assert_int_equal(sb.n, UTCP_SB_MAX);
	assert_int_equal(sb.s[0], una + 300);
	for (int i = 1; i < sb.n; i++)
		assert_true(seq_lt(sb.e[i - 1], sb.s[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csum_pieces),
		cmocka_unit_test(test_csum_fused_output),
		cmocka_unit_test(test_csum_simd),
		cmocka_unit_test(test_seg_parse),
		cmocka_unit_test(test_opts),
		cmocka_unit_test(test_serial),
		cmocka_unit_test(test_scoreboard),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
