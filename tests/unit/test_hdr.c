// SPDX-License-Identifier: MIT
/* DDP/RDMAP header codec, validation -> TERMINATE codes, TERMINATE build. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "xiwarp/wire/mpa.h"
#include "xiwarp/wire/ddp.h"
#include "xiwarp/wire/rdmap.h"
#include "xiw_proto.h"

#define MAXU 0xffff

static const struct {
	uint8_t op, tagged, qn, hlen;	/* hlen incl. MPA length */
} ops[] = {
	{ RDMAP_WRITE, 1, 0, 16 },	{ RDMAP_READ_REQ, 0, 1, 48 },
	{ RDMAP_READ_RESP, 1, 0, 16 },	{ RDMAP_SEND, 0, 0, 20 },
	{ RDMAP_SEND_INV, 0, 0, 20 },	{ RDMAP_SEND_SE, 0, 0, 20 },
	{ RDMAP_SEND_SE_INV, 0, 0, 20 }, { RDMAP_TERMINATE, 0, 2, 24 },
	{ RDMAP_IMM_DATA, 0, 0, 20 },	{ RDMAP_IMM_DATA_SE, 0, 0, 20 },
	{ RDMAP_ATOMIC_REQ, 0, 1, 20 },	{ RDMAP_ATOMIC_RESP, 0, 3, 20 },
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static size_t enc(int i, uint32_t payload, bool last, uint8_t *buf,
		  struct xiw_fpdu_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->opcode = ops[i].op;
	h->last = last;
	h->payload_len = payload;
	h->stag = 0xdeadbeef;
	h->to = 0x0123456789abcdefull;
	h->msn = 0x01020304;
	h->mo = 0x0a0b0c0d;
	h->inval_stag = 0xcafef00d;
	h->rd_sink_stag = 1;
	h->rd_sink_to = 0x1122334455667788ull;
	h->rd_size = 3;
	h->rd_src_stag = 4;
	h->rd_src_to = 0x99aabbccddeeff00ull;
	h->term_ctrl = 0x12345678;
	return xiw_hdr_encode(h, buf);
}

static void test_every_opcode(void **state)
{
	(void)state;
	for (size_t i = 0; i < NOPS; i++) {
		for (int last = 0; last < 2; last++) {
			uint8_t buf[XIW_MAX_HDR_LEN];
			struct xiw_fpdu_hdr h, d;
			size_t n = enc((int)i, 1000 + (uint32_t)i, last, buf, &h);

			assert_int_equal(n, ops[i].hlen);
			assert_int_equal(h.hdr_len, ops[i].hlen - 2);
			assert_int_equal(h.ulpdu_len, h.hdr_len + 1000 + i);
			assert_int_equal(h.pad, xiw_mpa_pad(h.ulpdu_len));
			assert_int_equal(xiw_hdr_len(buf), ops[i].hlen);
			/* wire: DDP ctrl, RDMAP ctrl */
			assert_int_equal(buf[2], (ops[i].tagged ? 0x80 : 0) |
					 (last ? 0x40 : 0) | 1);
			assert_int_equal(buf[3], 0x40 | ops[i].op);
			assert_int_equal(xiw_hdr_decode(buf, n, MAXU, &d), 0);
			assert_int_equal(d.opcode, ops[i].op);
			assert_int_equal(d.tagged, ops[i].tagged);
			assert_int_equal(d.last, last);
			assert_int_equal(d.ulpdu_len, h.ulpdu_len);
			assert_int_equal(d.hdr_len, h.hdr_len);
			assert_int_equal(d.payload_len, 1000 + i);
			assert_int_equal(d.pad, h.pad);
			if (ops[i].tagged) {
				assert_int_equal(d.stag, 0xdeadbeef);
				assert_true(d.to == 0x0123456789abcdefull);
				continue;
			}
			assert_int_equal(d.qn, ops[i].qn);
			assert_int_equal(d.msn, 0x01020304);
			assert_int_equal(d.mo, 0x0a0b0c0d);
			if (ops[i].op == RDMAP_SEND_INV ||
			    ops[i].op == RDMAP_SEND_SE_INV)
				assert_int_equal(d.inval_stag, 0xcafef00d);
			else
				assert_int_equal(xiw_get_be32(buf + 4), 0);
			if (ops[i].op == RDMAP_TERMINATE)
				assert_int_equal(d.term_ctrl, 0x12345678);
			if (ops[i].op == RDMAP_READ_REQ) {
				assert_int_equal(d.rd_sink_stag, 1);
				assert_true(d.rd_sink_to == 0x1122334455667788ull);
				assert_int_equal(d.rd_size, 3);
				assert_int_equal(d.rd_src_stag, 4);
				assert_true(d.rd_src_to == 0x99aabbccddeeff00ull);
			}
		}
	}
}

/* Known bytes: a tagged WRITE as siw/Wireshark see it. */
static void test_wire_write(void **state)
{
	static const uint8_t want[16] = {
		0x00, 0x12, 0xc1, 0x40, 0xde, 0xad, 0xbe, 0xef,
		0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	};
	uint8_t buf[XIW_MAX_HDR_LEN];
	struct xiw_fpdu_hdr h;

	(void)state;
	assert_int_equal(enc(0, 4, true, buf, &h), 16);
	assert_memory_equal(buf, want, 16);
	assert_int_equal(h.pad, 0);	/* 2 + 18 = 20 */
}

static int dec_mut(int i, size_t off, uint8_t val, uint32_t max)
{
	uint8_t buf[XIW_MAX_HDR_LEN];
	struct xiw_fpdu_hdr h;
	size_t n = enc(i, 8, true, buf, &h);

	buf[off] = val;
	return xiw_hdr_decode(buf, n, max, &h);
}

static void test_validation(void **state)
{
	(void)state;
	for (size_t i = 0; i < NOPS; i++) {
		int t = ops[i].tagged;
		uint8_t ddp = (uint8_t)((t ? 0x80 : 0) | 0x40);

		/* DDP version first, even if RDMAP is bad too */
		for (int dv = 0; dv < 4; dv++) {
			if (dv == 1)
				continue;
			assert_int_equal(dec_mut((int)i, 2, ddp | dv, MAXU),
					 t ? XIW_TERM_DDP_T_BAD_VER :
					     XIW_TERM_DDP_BAD_VER);
		}
		for (int rv = 0; rv < 4; rv++) {
			if (rv == 1)
				continue;
			assert_int_equal(dec_mut((int)i, 3,
						 (uint8_t)(rv << 6 | ops[i].op),
						 MAXU), XIW_TERM_BAD_RDMAP_VER);
		}
		/* T bit wrong for the opcode */
		assert_int_equal(dec_mut((int)i, 2, (uint8_t)(ddp ^ 0x80) | 1,
					 MAXU), XIW_TERM_BAD_OPCODE);
		/* QN wrong for the opcode */
		if (!t)
			assert_int_equal(dec_mut((int)i, 9, ops[i].qn + 1, MAXU),
					 XIW_TERM_DDP_BAD_QN);
		/* ULPDU longer than the limit / shorter than the header */
		assert_int_equal(dec_mut((int)i, 0, 0x10, MAXU), 0);
		assert_int_equal(dec_mut((int)i, 0, 0x10, 0xfff),
				 XIW_TERM_MPA_BAD_LEN);
		assert_int_equal(dec_mut((int)i, 1, (uint8_t)(ops[i].hlen - 3),
					 MAXU), XIW_TERM_MPA_BAD_LEN);
		assert_int_equal(dec_mut((int)i, 1, (uint8_t)(ops[i].hlen - 2),
					 MAXU), 0);
	}
	/* unknown opcodes 0xc..0xf */
	for (int op = 0xc; op <= 0xf; op++) {
		assert_int_equal(dec_mut(3, 3, (uint8_t)(0x40 | op), MAXU),
				 XIW_TERM_BAD_OPCODE);
		assert_int_equal(dec_mut(0, 3, (uint8_t)(0x40 | op), MAXU),
				 XIW_TERM_BAD_OPCODE);
	}
}

static void test_hdr_len_codes(void **state)
{
	uint8_t b[4] = { 0, 20, 0x41, 0x43 };

	(void)state;
	assert_int_equal(xiw_hdr_len(b), 20);
	b[2] = 0x42;
	assert_int_equal(xiw_hdr_len(b), -XIW_TERM_DDP_BAD_VER);
	b[2] = 0xc0;
	assert_int_equal(xiw_hdr_len(b), -XIW_TERM_DDP_T_BAD_VER);
	b[2] = 0x41;
	b[3] = 0x83;
	assert_int_equal(xiw_hdr_len(b), -XIW_TERM_BAD_RDMAP_VER);
	b[3] = 0x40;	/* WRITE without T */
	assert_int_equal(xiw_hdr_len(b), -XIW_TERM_BAD_OPCODE);
	/* too short a buffer for decode */
	{
		struct xiw_fpdu_hdr h;

		b[3] = 0x43;
		assert_int_equal(xiw_hdr_decode(b, 4, MAXU, &h),
				 XIW_TERM_CATASTROPHIC);
	}
}

static void test_term_codes(void **state)
{
	(void)state;
	/* RFC 5040 §7.2 layer/type/code */
	assert_int_equal(XIW_TERM_LAYER(XIW_TERM_INVALID_STAG), 0);
	assert_int_equal(XIW_TERM_ETYPE(XIW_TERM_INVALID_STAG), 1);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_INVALID_STAG), 0);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_BASE_BOUNDS), 1);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_ACCESS), 2);
	assert_int_equal(XIW_TERM_ETYPE(XIW_TERM_BAD_OPCODE), 2);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_BAD_OPCODE), 6);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_BAD_RDMAP_VER), 5);
	assert_int_equal(XIW_TERM_LAYER(XIW_TERM_DDP_NO_BUF), 1);
	assert_int_equal(XIW_TERM_ETYPE(XIW_TERM_DDP_NO_BUF), 2);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_DDP_NO_BUF), 2);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_DDP_BAD_MSN), 3);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_DDP_BAD_MO), 4);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_DDP_TOO_LONG), 5);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_DDP_BAD_VER), 6);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_DDP_T_BAD_VER), 4);
	assert_int_equal(XIW_TERM_LAYER(XIW_TERM_MPA_CRC), 2);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_MPA_CRC), 2);
	assert_int_equal(XIW_TERM_ECODE(XIW_TERM_MPA_MARKER), 3);
	assert_true(XIW_TERM_CATASTROPHIC > 0);
}

static void test_term_encode(void **state)
{
	uint8_t bad[XIW_MAX_HDR_LEN], pl[64], hb[XIW_MAX_HDR_LEN];
	struct xiw_fpdu_hdr bh, h, d;
	size_t bl = enc(3, 100, true, bad, &bh), n, hl;

	(void)state;
	memset(&h, 0, sizeof(h));
	n = xiw_term_encode(XIW_TERM_DDP_NO_BUF, bad, bl, &h, pl, sizeof(pl));
	assert_int_equal(n, bl);
	assert_memory_equal(pl, bad, bl);
	assert_int_equal(h.opcode, RDMAP_TERMINATE);
	assert_int_equal(h.msn, 1);
	assert_int_equal(h.payload_len, bl);
	/* layer 1, type 2, code 2, M|D (a SEND has no RDMA header) */
	assert_int_equal(h.term_ctrl, 0x12020000u | 0xc000);
	hl = xiw_hdr_encode(&h, hb);
	assert_int_equal(hl, 24);
	assert_int_equal(xiw_hdr_decode(hb, hl, MAXU, &d), 0);
	assert_int_equal(d.qn, 2);
	assert_int_equal(d.mo, 0);
	assert_true(d.last);
	assert_int_equal(d.term_ctrl, h.term_ctrl);
	assert_int_equal(d.payload_len, bl);
	/* a READ request: its 28-octet RDMA header too (R) */
	bl = enc(1, 0, true, bad, &bh);
	assert_int_equal(bl, 48);
	n = xiw_term_encode(XIW_TERM_ACCESS, bad, bl, &h, pl, sizeof(pl));
	assert_int_equal(n, 48);
	assert_int_equal(h.term_ctrl, 0x01020000u | 0xe000);
	/* partial headers are cut back: 30 octets of it -> length + DDP */
	n = xiw_term_encode(XIW_TERM_ACCESS, bad, 30, &h, pl, sizeof(pl));
	assert_int_equal(n, 20);
	assert_int_equal(h.term_ctrl, 0x01020000u | 0xc000);
	n = xiw_term_encode(XIW_TERM_ACCESS, bad, 19, &h, pl, sizeof(pl));
	assert_int_equal(n, 2);
	assert_int_equal(h.term_ctrl, 0x01020000u | 0x8000);
	/* a tagged header: 2 + 14 */
	bl = enc(0, 5, true, bad, &bh);
	n = xiw_term_encode(XIW_TERM_BASE_BOUNDS, bad, bl, &h, pl, sizeof(pl));
	assert_int_equal(n, 16);
	assert_int_equal(h.term_ctrl, 0x01010000u | 0xc000);
	h.msn = 0;
	/* no header to copy (e.g. CRC error): only the control word */
	h.msn = 7;
	n = xiw_term_encode(XIW_TERM_MPA_CRC, NULL, 0, &h, pl, sizeof(pl));
	assert_int_equal(n, 0);
	assert_int_equal(h.msn, 7);
	assert_int_equal(h.term_ctrl, 0x20020000u);
	assert_int_equal(h.ulpdu_len, 22);
	/* too small a buffer: nothing copied */
	n = xiw_term_encode(XIW_TERM_ACCESS, bad, bl, &h, pl, 4);
	assert_int_equal(n, 0);
	assert_int_equal(h.term_ctrl, 0x01020000u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_opcode),
		cmocka_unit_test(test_wire_write),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_hdr_len_codes),
		cmocka_unit_test(test_term_codes),
		cmocka_unit_test(test_term_encode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
