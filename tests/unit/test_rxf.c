// SPDX-License-Identifier: MIT
/*
 * FPDU receive machine: streams of mixed FPDUs built with xiw_txf_build()
 * are fed to xiw_rx at every split point, one byte at a time and with tiny
 * iovec limits; placement, done() calls and decoded headers must be exact.
 * Corruptions must yield the right TERMINATE code and no write outside the
 * destination buffers place() gave.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "xiwarp/wire/mpa.h"
#include "xiwarp/wire/ddp.h"
#include "xiwarp/wire/rdmap.h"
#include "xiw_proto.h"

#define MAX_FPDU 64
#define MAX_ULPDU 2048
#define GUARD 64
#define MEM_SIZE (MAX_FPDU * MAX_ULPDU)
#define GUARD_BYTE 0xa5

struct stream {
	uint8_t *buf;
	size_t len;
	int nfpdu;
	struct xiw_fpdu_hdr hdr[MAX_FPDU];
	size_t poff[MAX_FPDU];		/* offset of payload in mem */
	size_t fpdu_off[MAX_FPDU + 1];	/* stream offset of each FPDU */
	size_t total_payload;
	uint8_t *expect;		/* all payloads concatenated */
};

struct sink {
	const struct stream *st;
	uint8_t *mem;			/* GUARD | MEM_SIZE | GUARD */
	int ndone, nplace;
	int eagain_every;		/* place() says -EAGAIN once per Nth */
	int eagain_pending;
	int reject_at;			/* place() returns a TERMINATE code */
	int hdr_mismatch;
};

static void payload_fill(uint8_t *p, size_t len, int i)
{
	for (size_t j = 0; j < len; j++)
		p[j] = (uint8_t)(i * 7 + j * 13 + (j >> 8));
}

static const uint8_t op_mix[] = {
	RDMAP_WRITE, RDMAP_SEND, RDMAP_READ_REQ, RDMAP_READ_RESP,
	RDMAP_SEND_INV, RDMAP_SEND_SE, RDMAP_SEND_SE_INV, RDMAP_TERMINATE,
	RDMAP_IMM_DATA, RDMAP_IMM_DATA_SE, RDMAP_ATOMIC_REQ, RDMAP_ATOMIC_RESP,
};
static const uint32_t size_mix[] = {
	0, 1, 2, 3, 4, 5, 100, 491, 492, 493, 511, 512, 513, 1000, 1500, 7,
	2000, 64,
};

static uint32_t fpdu_payload(uint8_t op, int i)
{
	uint32_t sz = size_mix[(i * 5 + 3) % (sizeof(size_mix) / 4)];
	uint32_t hl = op == RDMAP_READ_REQ ? 46 :
		      op == RDMAP_TERMINATE ? 22 :
		      (op == RDMAP_WRITE || op == RDMAP_READ_RESP) ? 14 : 18;

	if (op == RDMAP_READ_REQ)
		return 0;
	if (sz + hl > MAX_ULPDU)
		sz = MAX_ULPDU - hl;
	return sz;
}

static void hdr_fill(struct xiw_fpdu_hdr *h, uint8_t op, int i)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->last = i % 3 != 1;
	h->stag = 0x1000u + (uint32_t)i;
	h->to = 0x100000000ull * (uint64_t)i + 77;
	h->msn = (uint32_t)i + 1;
	h->mo = (uint32_t)i * 3;
	h->inval_stag = 0xabc0u + (uint32_t)i;
	h->rd_sink_stag = 11u + (uint32_t)i;
	h->rd_sink_to = 12u + (uint64_t)i;
	h->rd_size = 13u + (uint32_t)i;
	h->rd_src_stag = 14u + (uint32_t)i;
	h->rd_src_to = 15u + (uint64_t)i;
	h->term_ctrl = 0x12340000u | (uint32_t)i;
	h->payload_len = fpdu_payload(op, i);
}

static void stream_append(struct stream *st, const struct iovec *v, int n)
{
	for (int k = 0; k < n; k++) {
		memcpy(st->buf + st->len, v[k].iov_base, v[k].iov_len);
		st->len += v[k].iov_len;
	}
}

/* Build @n FPDUs; payload pieces are split in up to 3 iovecs. */
static void stream_build(struct stream *st, int n, bool crc, bool markers,
			 int seed)
{
	struct xiw_txf tx = { .crc = crc, .markers = markers,
			      .max_ulpdu = MAX_ULPDU };
	static struct xiw_txf_scratch scr;
	struct iovec out[XIW_TXF_MAX_IOV], pl[3];
	uint8_t *payload = malloc(MAX_ULPDU);

	memset(st, 0, sizeof(*st));
	st->buf = malloc((size_t)n * (MAX_ULPDU + 64) * 2);
	st->expect = malloc(MEM_SIZE);
	st->nfpdu = n;
	for (int i = 0; i < n; i++) {
		uint8_t op = op_mix[(i + seed) % sizeof(op_mix)];
		struct xiw_fpdu_hdr *h = &st->hdr[i];
		uint32_t len, a, b;
		int cnt;

		hdr_fill(h, op, i + seed);
		len = h->payload_len;
		payload_fill(payload, len, i);
		a = len / 3;
		b = len / 2;
		pl[0] = (struct iovec){ payload, a };
		pl[1] = (struct iovec){ payload + a, b - a };
		pl[2] = (struct iovec){ payload + b, len - b };
		st->fpdu_off[i] = st->len;
		cnt = xiw_txf_build(&tx, h, pl, 3, &scr, out, XIW_TXF_MAX_IOV);
		assert_true(cnt > 0);
		stream_append(st, out, cnt);
		assert_int_equal(tx.stream_off, st->len);
		st->poff[i] = st->total_payload;
		memcpy(st->expect + st->total_payload, payload, len);
		st->total_payload += len;
	}
	st->fpdu_off[n] = st->len;
	free(payload);
}

static void stream_free(struct stream *st)
{
	free(st->buf);
	free(st->expect);
}

static int hdr_same(const struct xiw_fpdu_hdr *a, const struct xiw_fpdu_hdr *b)
{
	if (a->opcode != b->opcode || a->last != b->last ||
	    a->payload_len != b->payload_len || a->tagged != b->tagged ||
	    a->ulpdu_len != b->ulpdu_len || a->hdr_len != b->hdr_len)
		return 0;
	if (a->tagged)
		return a->stag == b->stag && a->to == b->to;
	if (a->qn != b->qn || a->msn != b->msn || a->mo != b->mo)
		return 0;
	if ((a->opcode == RDMAP_SEND_INV || a->opcode == RDMAP_SEND_SE_INV) &&
	    a->inval_stag != b->inval_stag)
		return 0;
	if (a->opcode == RDMAP_TERMINATE && a->term_ctrl != b->term_ctrl)
		return 0;
	if (a->opcode == RDMAP_READ_REQ)
		return a->rd_sink_stag == b->rd_sink_stag &&
		       a->rd_sink_to == b->rd_sink_to &&
		       a->rd_size == b->rd_size &&
		       a->rd_src_stag == b->rd_src_stag &&
		       a->rd_src_to == b->rd_src_to;
	return 1;
}

static int sink_place(void *arg, const struct xiw_fpdu_hdr *h,
		      struct iovec *dst, int *ndst)
{
	struct sink *s = arg;
	int i = s->ndone;
	uint8_t *base;
	uint32_t len = h->payload_len;

	if (i >= s->st->nfpdu)
		return XIW_TERM_CATASTROPHIC;
	if (s->eagain_every && i % s->eagain_every == 0 && !s->eagain_pending) {
		s->eagain_pending = 1;
		return -EAGAIN;
	}
	s->eagain_pending = 0;
	if (i == s->reject_at)
		return XIW_TERM_INVALID_STAG;
	if (!hdr_same(h, &s->st->hdr[i]))
		s->hdr_mismatch++;
	s->nplace++;
	base = s->mem + GUARD + s->st->poff[i];
	*ndst = 0;
	if (len > s->st->hdr[i].payload_len)
		return XIW_TERM_BASE_BOUNDS;
	/* vary the number of pieces and add an empty one */
	switch (i % 4) {
	case 0:
		dst[(*ndst)++] = (struct iovec){ base, len };
		break;
	case 1:
		dst[(*ndst)++] = (struct iovec){ base, len / 2 };
		dst[(*ndst)++] = (struct iovec){ NULL, 0 };
		dst[(*ndst)++] = (struct iovec){ base + len / 2, len - len / 2 };
		break;
	default: {
		uint32_t piece = len / XIW_RX_MAX_DST + 1;

		if (piece < 97)
			piece = 97;
		for (uint32_t off = 0; off < len; off += piece)
			dst[(*ndst)++] = (struct iovec){
				base + off, len - off < piece ? len - off : piece };
		break;
	}
	}
	return 0;
}

static int sink_done(void *arg, const struct xiw_fpdu_hdr *h)
{
	struct sink *s = arg;

	(void)h;
	s->ndone++;
	return 0;
}

static const struct xiw_rx_ops sink_ops = { .place = sink_place, .done = sink_done };

static void sink_init(struct sink *s, const struct stream *st)
{
	memset(s, 0, sizeof(*s));
	s->st = st;
	s->reject_at = -1;
	s->mem = malloc(MEM_SIZE + 2 * GUARD);
	memset(s->mem, GUARD_BYTE, MEM_SIZE + 2 * GUARD);
}

static void sink_check_guards(const struct sink *s, size_t used)
{
	for (size_t k = 0; k < GUARD; k++) {
		assert_int_equal(s->mem[k], GUARD_BYTE);
		assert_int_equal(s->mem[GUARD + used + k], GUARD_BYTE);
	}
}

/*
 * Feed stream bytes [from, to) like recvmsg would: ask for iovecs, copy
 * at most @chunk bytes into them, advance. Return 0, -EAGAIN or the
 * TERMINATE code.
 */
static int feed(struct xiw_rx *rx, const uint8_t *p, size_t from, size_t to,
		size_t chunk, int max_iov)
{
	struct iovec iov[64];

	while (from < to) {
		size_t want = to - from < chunk ? to - from : chunk, got = 0;
		int n = xiw_rx_iov(rx, iov, max_iov);

		if (n == -EAGAIN)
			return -EAGAIN;
		if (n < 0)
			return -n;
		assert_true(n > 0 && n <= max_iov);
		for (int k = 0; k < n && got < want; k++) {
			size_t c = iov[k].iov_len < want - got ?
				   iov[k].iov_len : want - got;

			memcpy(iov[k].iov_base, p + from + got, c);
			got += c;
		}
		from += got;
		n = xiw_rx_advance(rx, got);
		if (n)
			return n;
	}
	return 0;
}

/* Feed [from,to), retrying place() after -EAGAIN as the engine would. */
static int feed_retry(struct xiw_rx *rx, const uint8_t *p, size_t from,
		      size_t to, size_t chunk, int max_iov)
{
	for (;;) {
		uint64_t before = rx->stream_off;
		int ret = feed(rx, p, (size_t)before, to, chunk, max_iov);

		(void)from;
		if (ret != -EAGAIN)
			return ret;
	}
}

/* The engine calls xiw_rx_iov() again once a buffer is posted. */
static void drain(struct xiw_rx *rx)
{
	struct iovec iov[4];
	int n;

	do
		n = xiw_rx_iov(rx, iov, 4);
	while (n == -EAGAIN);
	assert_true(n > 0);
}

static void run_whole(const struct stream *st, bool crc, bool markers,
		      size_t split, size_t chunk, int max_iov, int eagain)
{
	struct xiw_rx rx;
	struct sink s;

	sink_init(&s, st);
	s.eagain_every = eagain;
	xiw_rx_init(&rx, &sink_ops, &s, crc, markers, MAX_ULPDU);
	assert_int_equal(feed_retry(&rx, st->buf, 0, split, chunk, max_iov), 0);
	assert_int_equal(rx.stream_off, split);
	assert_int_equal(feed_retry(&rx, st->buf, split, st->len, chunk,
				    max_iov), 0);
	assert_int_equal(rx.stream_off, st->len);
	drain(&rx);
	assert_int_equal(s.ndone, st->nfpdu);
	assert_int_equal(s.nplace, st->nfpdu);
	assert_int_equal(s.hdr_mismatch, 0);
	assert_memory_equal(s.mem + GUARD, st->expect, st->total_payload);
	sink_check_guards(&s, st->total_payload);
	free(s.mem);
}

static void every_split(bool crc, bool markers)
{
	struct stream st;

	stream_build(&st, 40, crc, markers, 0);
	for (size_t k = 0; k <= st.len; k++)
		run_whole(&st, crc, markers, k, SIZE_MAX, 64, 0);
	run_whole(&st, crc, markers, 0, 1, 64, 0);	/* byte by byte */
	for (int m = 1; m <= 4; m++)
		run_whole(&st, crc, markers, st.len / 3, 1000, m, 0);
	run_whole(&st, crc, markers, 0, 7, 2, 3);	/* with -EAGAIN */
	run_whole(&st, crc, markers, 0, SIZE_MAX, 64, 1);
	stream_free(&st);
}

static void test_split_plain(void **state)
{
	(void)state;
	every_split(false, false);
}

/*
 * RFC 5044 §4.1: without CRC the 4-byte CRC field is still in every FPDU
 * and the receiver must not check it. Each FPDU is 2 + ULPDU + pad + 4
 * octets on the wire, whatever the field holds.
 */
static void test_crc_field_unchecked(void **state)
{
	struct stream st;
	size_t end;

	(void)state;
	stream_build(&st, 40, false, false, 0);
	for (int i = 0; i < st.nfpdu; i++) {
		end = i + 1 < st.nfpdu ? st.fpdu_off[i + 1] : st.len;
		assert_int_equal(end - st.fpdu_off[i],
				 2 + st.hdr[i].ulpdu_len + st.hdr[i].pad + 4);
		memcpy(st.buf + end - 4, "\xde\xad\xbe\xef", 4);
	}
	run_whole(&st, false, false, 0, SIZE_MAX, 64, 0);
	run_whole(&st, false, false, st.len / 2, 1, 64, 0);
	stream_free(&st);
}

static void test_split_crc(void **state)
{
	(void)state;
	every_split(true, false);
}

static void test_split_markers(void **state)
{
	(void)state;
	every_split(false, true);
}

static void test_split_crc_markers(void **state)
{
	(void)state;
	every_split(true, true);
}

/* Feed a corrupted stream; expect @term after exactly @ndone FPDUs. */
static const uint8_t *want_hdr;	/* run_bad: xiw_rx_term_hdr() result */
static size_t want_hdr_len;

static void run_bad(const struct stream *st, const uint8_t *buf, bool crc,
		    bool markers, int term, int ndone)
{
	static const size_t chunks[] = { SIZE_MAX, 1, 13 };

	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		struct xiw_rx rx;
		struct sink s;
		struct iovec iov[4];

		sink_init(&s, st);
		xiw_rx_init(&rx, &sink_ops, &s, crc, markers, MAX_ULPDU);
		assert_int_equal(feed_retry(&rx, buf, 0, st->len, chunks[c], 64),
				 term);
		assert_int_equal(s.ndone, ndone);
		sink_check_guards(&s, st->total_payload);
		if (want_hdr) {
			uint8_t th[XIW_MAX_HDR_LEN];

			assert_int_equal(xiw_rx_term_hdr(&rx, th), want_hdr_len);
			assert_memory_equal(th, want_hdr, want_hdr_len);
		}
		/* dead afterwards */
		assert_int_equal(xiw_rx_iov(&rx, iov, 4), -term);
		assert_int_equal(xiw_rx_advance(&rx, 1), term);
		free(s.mem);
	}
}

static void test_bad_crc(void **state)
{
	struct stream st;
	uint8_t *buf;

	(void)state;
	stream_build(&st, 12, true, false, 0);
	buf = malloc(st.len);
	for (int i = 0; i < st.nfpdu; i++) {
		size_t end = st.fpdu_off[i + 1];

		/* flip the first length-field-independent octet, then CRC */
		memcpy(buf, st.buf, st.len);
		buf[end - 1] ^= 0x01;		/* CRC octet */
		want_hdr = st.buf + st.fpdu_off[i];
		want_hdr_len = 2u + st.hdr[i].hdr_len;
		run_bad(&st, buf, true, false, XIW_TERM_MPA_CRC, i);
		want_hdr = NULL;
		if (st.hdr[i].payload_len) {
			memcpy(buf, st.buf, st.len);
			buf[end - 4 - st.hdr[i].pad - 1] ^= 0x80; /* payload */
			run_bad(&st, buf, true, false, XIW_TERM_MPA_CRC, i);
		}
	}
	free(buf);
	stream_free(&st);
}

static void bad_marker(bool crc)
{
	struct stream st;
	uint8_t *buf;

	stream_build(&st, 30, crc, true, 1);
	buf = malloc(st.len);
	for (size_t pos = 0; pos + 4 <= st.len; pos += XIW_MARKER_INTERVAL) {
		int before = 0;

		while (st.fpdu_off[before + 1] <= pos)
			before++;
		memcpy(buf, st.buf, st.len);
		buf[pos + 3] ^= 0x04;		/* FPDUPTR */
		run_bad(&st, buf, crc, true, XIW_TERM_MPA_MARKER, before);
		memcpy(buf, st.buf, st.len);
		buf[pos + 2] ^= 0x80;
		run_bad(&st, buf, crc, true, XIW_TERM_MPA_MARKER, before);
	}
	free(buf);
	stream_free(&st);
}

static void test_bad_marker(void **state)
{
	(void)state;
	bad_marker(false);
	bad_marker(true);
}

static void test_bad_len(void **state)
{
	struct stream st;
	uint8_t *buf;

	(void)state;
	stream_build(&st, 12, false, false, 0);
	buf = malloc(st.len);
	for (int i = 0; i < st.nfpdu; i++) {
		size_t off = st.fpdu_off[i];

		memcpy(buf, st.buf, st.len);
		xiw_put_be16(buf + off, MAX_ULPDU + 1);
		run_bad(&st, buf, false, false, XIW_TERM_MPA_BAD_LEN, i);
		memcpy(buf, st.buf, st.len);
		xiw_put_be16(buf + off, (uint16_t)(st.hdr[i].hdr_len - 1));
		run_bad(&st, buf, false, false, XIW_TERM_MPA_BAD_LEN, i);
		memcpy(buf, st.buf, st.len);
		buf[off + 2] = (buf[off + 2] & ~3) | 2;	/* DDP version 2 */
		want_hdr = buf + off;	/* the first 16 octets as received */
		want_hdr_len = 16;
		run_bad(&st, buf, false, false,
			st.hdr[i].tagged ? XIW_TERM_DDP_T_BAD_VER :
					   XIW_TERM_DDP_BAD_VER, i);
		memcpy(buf, st.buf, st.len);
		buf[off + 3] = (uint8_t)(buf[off + 3] & 0x3f); /* RDMAP v0 */
		run_bad(&st, buf, false, false, XIW_TERM_BAD_RDMAP_VER, i);
		want_hdr = NULL;
	}
	free(buf);
	stream_free(&st);
}

/* place() rejecting: nothing placed, the code comes back. */
static void test_place_reject(void **state)
{
	struct stream st;
	struct xiw_rx rx;
	struct sink s;

	(void)state;
	stream_build(&st, 10, true, true, 0);
	for (int r = 0; r < st.nfpdu; r++) {
		sink_init(&s, &st);
		s.reject_at = r;
		xiw_rx_init(&rx, &sink_ops, &s, true, true, MAX_ULPDU);
		assert_int_equal(feed_retry(&rx, st.buf, 0, st.len, SIZE_MAX,
					    64), XIW_TERM_INVALID_STAG);
		assert_int_equal(s.ndone, r);
		assert_memory_equal(s.mem + GUARD, st.expect, st.poff[r]);
		for (size_t k = st.poff[r]; k < MEM_SIZE + GUARD; k++)
			assert_int_equal(s.mem[GUARD + k], GUARD_BYTE);
		free(s.mem);
	}
	stream_free(&st);
}

/* place() covering the wrong byte count is a local catastrophic error. */
static int bad_place(void *arg, const struct xiw_fpdu_hdr *h,
		     struct iovec *dst, int *ndst)
{
	static uint8_t tiny[4];

	(void)arg;
	dst[0] = (struct iovec){ tiny, h->payload_len + 1 };
	*ndst = 1;
	return 0;
}

static void test_place_bad_dst(void **state)
{
	static const struct xiw_rx_ops ops = { .place = bad_place, .done = sink_done };
	struct stream st;
	struct xiw_rx rx;
	struct sink s;

	(void)state;
	stream_build(&st, 2, false, false, 0);
	sink_init(&s, &st);
	xiw_rx_init(&rx, &ops, &s, false, false, MAX_ULPDU);
	assert_int_equal(feed(&rx, st.buf, 0, st.len, SIZE_MAX, 64),
			 XIW_TERM_CATASTROPHIC);
	free(s.mem);
	stream_free(&st);
}

/* The iovec list never reaches past the next FPDU's first header octets. */
static void test_iov_no_payload_lookahead(void **state)
{
	struct stream st;
	struct xiw_rx rx;
	struct sink s;
	struct iovec iov[64];

	(void)state;
	stream_build(&st, 20, true, false, 0);
	sink_init(&s, &st);
	xiw_rx_init(&rx, &sink_ops, &s, true, false, MAX_ULPDU);
	while (rx.stream_off < st.len) {
		int n = xiw_rx_iov(&rx, iov, 64);
		size_t tot = 0, off = (size_t)rx.stream_off;
		int i = s.ndone;

		assert_true(n > 0);
		for (int k = 0; k < n; k++)
			tot += iov[k].iov_len;
		/* at most up to the next FPDU's 16th octet */
		assert_true(off + tot <= st.fpdu_off[i + 1] + 16);
		if (tot > st.len - off)
			tot = st.len - off;
		for (size_t k = 0, o = 0; o < tot; o += iov[k].iov_len, k++)
			memcpy(iov[k].iov_base, st.buf + off + o,
			       iov[k].iov_len < tot - o ? iov[k].iov_len
							: tot - o);
		assert_int_equal(xiw_rx_advance(&rx, tot), 0);
	}
	assert_int_equal(s.ndone, st.nfpdu);
	free(s.mem);
	stream_free(&st);
}

/*
 * A payload's last octet is never received in place: it goes to rx
 * scratch and is stored once, after the rest (apps poll that byte and may
 * overwrite it at once; a restarted "rep movsb" would store it again).
 * No iovec may cover it, and it must hold its value once the FPDU is done.
 */
static void test_last_octet_own_store(void **state)
{
	struct stream st;
	struct xiw_rx rx;
	struct sink s;
	struct iovec iov[64];
	size_t chunk[] = { 1, 3, 100, SIZE_MAX };

	(void)state;
	stream_build(&st, 40, true, true, 0);
	for (size_t c = 0; c < sizeof(chunk) / sizeof(chunk[0]); c++) {
		sink_init(&s, &st);
		xiw_rx_init(&rx, &sink_ops, &s, true, true, MAX_ULPDU);
		while (rx.stream_off < st.len) {
			int i = s.ndone, n = xiw_rx_iov(&rx, iov, 64);
			uint32_t len = st.hdr[i].payload_len;
			const uint8_t *last = s.mem + GUARD + st.poff[i] + len - 1;
			size_t off = (size_t)rx.stream_off, tot = 0;

			assert_true(n > 0);
			for (int k = 0; k < n; k++) {
				const uint8_t *b = iov[k].iov_base;

				assert_false(len && b <= last &&
					     last < b + iov[k].iov_len);
				tot += iov[k].iov_len;
			}
			if (tot > chunk[c])
				tot = chunk[c];
			if (tot > st.len - off)
				tot = st.len - off;
			for (size_t k = 0, o = 0; o < tot; o += iov[k].iov_len, k++)
				memcpy(iov[k].iov_base, st.buf + off + o,
				       iov[k].iov_len < tot - o ? iov[k].iov_len
								: tot - o);
			assert_int_equal(xiw_rx_advance(&rx, tot), 0);
			if (s.ndone > i && len)
				assert_int_equal(*last,
						 st.expect[st.poff[i] + len - 1]);
		}
		assert_int_equal(s.ndone, st.nfpdu);
		assert_memory_equal(s.mem + GUARD, st.expect, st.total_payload);
		sink_check_guards(&s, st.total_payload);
		free(s.mem);
	}
	stream_free(&st);
}


/* ---------------------------------------- transport records (xsk XDP) */

/* What the transport would hand over: a record for every FPDU (right, or
 * with a wrong MPA length at @bad), and what the machine reported. */
static struct {
	const struct stream *st;
	int bad;			/* FPDU index with a wrong record */
	int asked, used, mismatch, none;
	int next_wrong;			/* next_off not the next FPDU's */
} M;

static int meta_of(void *arg, uint32_t off, struct xiw_llp_fpdu *out)
{
	const struct stream *st = M.st;

	(void)arg;
	M.asked++;
	for (int i = 0; i < st->nfpdu; i++) {
		const struct xiw_fpdu_hdr *h = &st->hdr[i];

		if (st->fpdu_off[i] != off)
			continue;
		*out = (struct xiw_llp_fpdu){
			.ulpdu_len = (uint16_t)(h->payload_len + h->hdr_len),
			.opcode = h->opcode, .tagged = h->tagged,
			.last = h->last, .stag = h->stag, .to = h->to,
			.qn = h->qn, .msn = h->msn, .mo = h->mo,
		};
		if (i == M.bad)
			out->ulpdu_len++;
		return 1;
	}
	return 0;
}

static void meta_done(void *arg, enum xiw_llp_meta_res res, uint32_t next)
{
	const struct stream *st = M.st;
	bool found = false;

	(void)arg;
	M.used += res == XIW_LLP_META_USED;
	M.mismatch += res == XIW_LLP_META_MISMATCH;
	M.none += res == XIW_LLP_META_NONE;
	for (int i = 1; i <= st->nfpdu; i++)
		found |= (i < st->nfpdu ? st->fpdu_off[i] : st->len) == next;
	M.next_wrong += !found;
}

static const struct xiw_rx_ops meta_ops = {
	.place = sink_place, .done = sink_done, .meta = meta_of,
	.meta_done = meta_done,
};

/*
 * A record replaces the decode only for WRITE, READ response, SEND and
 * SEND_SE, and only when it agrees with the octets (MPA length, opcode):
 * the headers place() sees are the same as decoded ones, a wrong record is
 * a mismatch (decoded instead), and next_off is always the next FPDU.
 */
static void test_meta_records(void **state)
{
	struct stream st;
	struct xiw_rx rx;
	struct sink s;
	int usable = 0;

	(void)state;
	stream_build(&st, 40, true, false, 0);
	for (int i = 0; i < st.nfpdu; i++) {
		uint8_t op = st.hdr[i].opcode;

		usable += op == RDMAP_WRITE || op == RDMAP_READ_RESP ||
			  op == RDMAP_SEND || op == RDMAP_SEND_SE;
	}
	for (int bad = -1; bad < 2; bad++) {
		memset(&M, 0, sizeof(M));
		M.st = &st;
		M.bad = bad;
		sink_init(&s, &st);
		xiw_rx_init(&rx, &meta_ops, &s, true, false, MAX_ULPDU);
		assert_int_equal(feed_retry(&rx, st.buf, 0, st.len, 333, 64), 0);
		drain(&rx);
		assert_int_equal(s.ndone, st.nfpdu);
		assert_int_equal(s.hdr_mismatch, 0);
		assert_memory_equal(s.mem + GUARD, st.expect, st.total_payload);
		assert_int_equal(M.asked, st.nfpdu);
		assert_int_equal(M.next_wrong, 0);
		assert_int_equal(M.used + M.mismatch + M.none, st.nfpdu);
		assert_int_equal(M.mismatch, bad >= 0);
		assert_int_equal(M.used, usable - (bad >= 0 &&
			(st.hdr[bad].opcode == RDMAP_WRITE ||
			 st.hdr[bad].opcode == RDMAP_SEND)));
		free(s.mem);
	}
	/* markers: records are never asked for */
	memset(&M, 0, sizeof(M));
	stream_free(&st);
	stream_build(&st, 10, false, true, 0);
	M.st = &st;
	sink_init(&s, &st);
	xiw_rx_init(&rx, &meta_ops, &s, false, true, MAX_ULPDU);
	assert_int_equal(feed_retry(&rx, st.buf, 0, st.len, SIZE_MAX, 64), 0);
	assert_int_equal(M.asked + M.used + M.none, 0);
	free(s.mem);
	stream_free(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_plain),
		cmocka_unit_test(test_crc_field_unchecked),
		cmocka_unit_test(test_split_crc),
		cmocka_unit_test(test_split_markers),
		cmocka_unit_test(test_split_crc_markers),
		cmocka_unit_test(test_bad_crc),
		cmocka_unit_test(test_bad_marker),
		cmocka_unit_test(test_bad_len),
		cmocka_unit_test(test_place_reject),
		cmocka_unit_test(test_place_bad_dst),
		cmocka_unit_test(test_iov_no_payload_lookahead),
		cmocka_unit_test(test_last_octet_own_store),
		cmocka_unit_test(test_meta_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
