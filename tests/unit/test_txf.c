// SPDX-License-Identifier: MIT
/*
 * FPDU transmit framing: layout, pad, CRC (covering markers), marker
 * positions (every 512 stream octets from the first octet after the MPA
 * frame) and FPDUPTR values, zero-copy payload iovecs, -E2BIG.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "xiwarp/wire/mpa.h"
#include "xiwarp/wire/rdmap.h"
#include "xiw_proto.h"

static struct xiw_txf_scratch scr;
static uint8_t payload[70000];

struct built {
	uint8_t wire[80000];
	size_t len;
	int niov;
	struct iovec iov[XIW_TXF_MAX_IOV];
};

static void build(struct xiw_txf *tx, struct xiw_fpdu_hdr *h, uint32_t len,
		  struct built *b)
{
	struct iovec pl = { payload, len };

	h->payload_len = len;
	b->niov = xiw_txf_build(tx, h, &pl, 1, &scr, b->iov, XIW_TXF_MAX_IOV);
	assert_true(b->niov > 0);
	b->len = 0;
	for (int k = 0; k < b->niov; k++) {
		memcpy(b->wire + b->len, b->iov[k].iov_base, b->iov[k].iov_len);
		b->len += b->iov[k].iov_len;
	}
}

static void test_plain_layout(void **state)
{
	struct xiw_txf tx = { .crc = true, .max_ulpdu = 4096 };
	struct xiw_fpdu_hdr h = { .opcode = RDMAP_SEND, .last = true };
	struct built *b = malloc(sizeof(*b));
	uint8_t crc[4];
	uint64_t off;

	(void)state;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	for (uint32_t len = 0; len < 9; len++) {
		uint64_t before = tx.stream_off;
		uint32_t pad = (4 - (20 + len) % 4) % 4;

		build(&tx, &h, len, b);
		assert_int_equal(b->len, 20 + len + pad + 4);
		assert_int_equal(tx.stream_off - before, b->len);
		assert_int_equal(xiw_get_be16(b->wire), 18 + len);
		assert_int_equal(h.pad, pad);
		for (uint32_t k = 0; k < pad; k++)
			assert_int_equal(b->wire[20 + len + k], 0);
		xiw_crc32c_wire(xiw_crc32c(XIW_CRC32C_INIT, b->wire,
					   b->len - 4), crc);
		assert_memory_equal(b->wire + b->len - 4, crc, 4);
		/* the payload iovec points at the caller's memory */
		if (len)
			assert_ptr_equal(b->iov[1].iov_base, payload);
	}
	/* no CRC: the CRC field is still sent, as zeros (RFC 5044 §4.1) */
	tx.crc = false;
	off = tx.stream_off;
	build(&tx, &h, 5, b);
	assert_int_equal(b->len, 32);
	assert_int_equal(tx.stream_off - off, 32);
	for (int k = 0; k < 4; k++)
		assert_int_equal(b->wire[28 + k], 0);
	free(b);
}

/* Markers at every 512th stream octet, FPDUPTR back to the length field. */
static void test_markers(void **state)
{
	struct xiw_txf tx = { .crc = true, .markers = true, .max_ulpdu = 65535 };
	struct xiw_fpdu_hdr h = { .opcode = RDMAP_WRITE, .stag = 1 };
	struct built *b = malloc(sizeof(*b));
	static const uint32_t lens[] = { 0, 1, 488, 489, 492, 1000, 3000,
					 60000, 17, 4000 };

	(void)state;
	for (size_t li = 0; li < sizeof(lens) / 4; li++) {
		uint64_t start = tx.stream_off, len_pos = start;
		size_t nm = 0, crc_end;
		uint8_t crc[4];

		if (start % 512 == 0)
			len_pos += 4;
		build(&tx, &h, lens[li], b);
		/* every marker position inside this FPDU holds a marker */
		for (uint64_t p = start; p < start + b->len; p++) {
			const uint8_t *m = b->wire + (p - start);

			if (p % 512)
				continue;
			nm++;
			assert_int_equal(xiw_get_be16(m), 0);
			assert_int_equal(xiw_get_be16(m + 2),
					 p < len_pos ? 0 : p - len_pos);
		}
		/* data octets = FPDU without markers */
		assert_int_equal(b->len - 4 * nm,
				 2 + h.ulpdu_len + h.pad + 4);
		/* the length field sits right after a leading marker */
		assert_int_equal(xiw_get_be16(b->wire + (len_pos - start)),
				 h.ulpdu_len);
		/* CRC covers every octet up to the CRC field, markers too */
		crc_end = b->len - 4;
		xiw_crc32c_wire(xiw_crc32c(XIW_CRC32C_INIT, b->wire, crc_end),
				crc);
		assert_memory_equal(b->wire + crc_end, crc, 4);
		assert_int_equal(tx.stream_off, start + b->len);
	}
	free(b);
}

/* The first marker is at stream offset 0: before the first length field. */
static void test_first_marker(void **state)
{
	struct xiw_txf tx = { .markers = true, .max_ulpdu = 1000 };
	struct xiw_fpdu_hdr h = { .opcode = RDMAP_SEND, .last = true };
	struct built *b = malloc(sizeof(*b));
	static const uint8_t lead[4] = { 0, 0, 0, 0 };

	(void)state;
	build(&tx, &h, 600, b);
	assert_memory_equal(b->wire, lead, 4);
	assert_int_equal(xiw_get_be16(b->wire + 4), 618);
	/* next marker at 512: 508 octets after the length field */
	assert_int_equal(xiw_get_be16(b->wire + 512 + 2), 508);
	/* 4 + 620 data + 4 marker + 4 CRC field (zero, CRC off) = 632 */
	assert_int_equal(b->len, 632);
	free(b);
}

static void test_e2big(void **state)
{
	struct xiw_txf tx = { .crc = true, .markers = true, .max_ulpdu = 65535 };
	struct xiw_fpdu_hdr h = { .opcode = RDMAP_SEND };
	struct iovec pl = { payload, 5000 }, out[8];

	(void)state;
	h.payload_len = 5000;
	assert_int_equal(xiw_txf_build(&tx, &h, &pl, 1, &scr, out, 8), -E2BIG);
	assert_int_equal(tx.stream_off, 0);
	/* payload sum must match */
	h.payload_len = 4999;
	assert_int_equal(xiw_txf_build(&tx, &h, &pl, 1, &scr, out, 8), -EINVAL);
}

static void test_payload_max(void **state)
{
	struct xiw_txf tx = { .max_ulpdu = 1446 };

	(void)state;
	/* (2 + ULPDU) % 4 == 0 and ULPDU <= max: 1446 -> 1446 */
	assert_int_equal(xiw_txf_payload_max(&tx, 16), 1446 - 14);
	assert_int_equal(xiw_txf_payload_max(&tx, 20), 1446 - 18);
	tx.max_ulpdu = 1448;	/* 1450 % 4 = 2 -> 1446 */
	assert_int_equal(xiw_txf_payload_max(&tx, 16), 1446 - 14);
	for (uint32_t m = 100; m < 3000; m += 7) {
		uint32_t p;

		tx.max_ulpdu = m;
		p = xiw_txf_payload_max(&tx, 20);
		assert_true(18 + p <= m);
		assert_int_equal((2 + 18 + p) % 4, 0);
	}
	/* with markers the whole FPDU on the wire stays within the budget */
	tx.markers = true;
	tx.crc = true;
	for (uint32_t m = 600; m < 9000; m += 13) {
		struct iovec out[XIW_TXF_MAX_IOV], pl;
		struct xiw_fpdu_hdr h = { .opcode = RDMAP_SEND };
		size_t wire = 0;
		int n;

		tx.max_ulpdu = m;
		for (uint64_t so = 0; so < 1024; so += 4) {
			if (so % 512 > 0 && so % 512 < 4)
				continue;
			tx.stream_off = so;
			h.payload_len = xiw_txf_payload_max(&tx, 20);
			pl = (struct iovec){ payload, h.payload_len };
			n = xiw_txf_build(&tx, &h, &pl, 1, &scr, out,
					  XIW_TXF_MAX_IOV);
			assert_true(n > 0);
			wire = 0;
			for (int k = 0; k < n; k++)
				wire += out[k].iov_len;
			assert_true(wire <= (size_t)m + 2 + 4);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_layout),
		cmocka_unit_test(test_markers),
		cmocka_unit_test(test_first_marker),
		cmocka_unit_test(test_e2big),
		cmocka_unit_test(test_payload_max),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
