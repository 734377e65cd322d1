// SPDX-License-Identifier: MIT
/* MPA request/reply/reject encode + parse (RFC 5044 §7.1, RFC 6581 §5). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "xiwarp/wire/mpa.h"
#include "xiw_proto.h"

static void roundtrip(bool is_reply, const struct xiw_mpa_params *in)
{
	uint8_t buf[XIW_MPA_MAX_FRAME];
	struct xiw_mpa_params out;
	int len = xiw_mpa_encode(is_reply, in, buf, sizeof(buf));
	size_t v2 = in->version == 2 ? XIW_MPA_V2_LEN : 0;

	assert_int_equal(len, XIW_MPA_HDR_LEN + v2 + in->plen);
	/* every prefix is "need more" */
	for (int k = 0; k < len; k++)
		assert_int_equal(xiw_mpa_parse(is_reply, buf, (size_t)k, &out), 0);
	assert_int_equal(xiw_mpa_parse(is_reply, buf, (size_t)len, &out), len);
	/* and trailing bytes (first FPDU) are not part of the frame */
	assert_int_equal(xiw_mpa_parse(is_reply, buf, sizeof(buf), &out), len);
	assert_int_equal(out.version, in->version);
	assert_int_equal(out.markers, in->markers);
	assert_int_equal(out.crc, in->crc);
	assert_int_equal(out.reject, is_reply && in->reject);
	assert_int_equal(out.big_fpdu, in->big_fpdu);
	assert_int_equal(out.big_ack, is_reply && in->big_ack);
	assert_int_equal(out.plen, in->plen);
	if (in->plen)
		assert_memory_equal(out.pdata, in->pdata, in->plen);
	if (in->version == 2) {
		assert_int_equal(out.p2p, in->p2p);
		assert_int_equal(out.rtr_write, in->rtr_write);
		assert_int_equal(out.rtr_read, in->rtr_read);
		assert_int_equal(out.rtr_zero_len, in->rtr_zero_len);
		assert_int_equal(out.ird, in->ird & 0x3fff);
		assert_int_equal(out.ord, in->ord & 0x3fff);
	}
	/* the other frame kind's key is rejected */
	assert_int_equal(xiw_mpa_parse(!is_reply, buf, (size_t)len, &out),
			 -EPROTO);
}

static void test_roundtrip(void **state)
{
	uint8_t pd[XIW_MPA_MAX_PD];

	(void)state;
	for (size_t i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)(i ^ 0x5a);
	for (int bits = 0; bits < 1024; bits++) {
		struct xiw_mpa_params p = {
			.version = bits & 1 ? 2 : 1,
			.markers = bits & 2, .crc = bits & 4,
			.reject = bits & 8, .big_fpdu = bits & 16,
			.p2p = bits & 32, .rtr_write = bits & 64,
			.rtr_read = bits & 128, .rtr_zero_len = bits & 256,
			.big_ack = bits & 512,
			.ird = (uint16_t)(bits * 37), .ord = (uint16_t)(bits * 91),
			.pdata = pd,
			.plen = (uint16_t)(bits % 7 == 0 ? 0 : bits & 511),
		};

		if (p.version == 2 && p.plen > XIW_MPA_MAX_PD - XIW_MPA_V2_LEN)
			p.plen = XIW_MPA_MAX_PD - XIW_MPA_V2_LEN;
		roundtrip(false, &p);
		roundtrip(true, &p);
	}
}

/* Exact bytes of a v2 request: key, flags M|C|enhanced, rev 2, IRD/ORD. */
static void test_wire_bytes(void **state)
{
	static const uint8_t want[] = {
		'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ',
		'F', 'r', 'a', 'm', 'e', 0xd0, 0x02, 0x00, 0x06,
		0x80 | 0x00, 0x10, 0x40 | 0x00, 0x20, 'h', 'i',
	};
	struct xiw_mpa_params p = {
		.version = 2, .markers = true, .crc = true, .p2p = true,
		.rtr_read = true, .ird = 0x10, .ord = 0x20,
		.pdata = (const uint8_t *)"hi", .plen = 2,
	};
	uint8_t buf[64];

	(void)state;
	assert_int_equal(xiw_mpa_encode(false, &p, buf, sizeof(buf)),
			 sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	/* a reject reply sets R (0x20); big FPDU sets 0x08 (0x0800) */
	p.reject = true;
	p.big_fpdu = true;
	p.version = 1;
	p.markers = p.crc = false;
	assert_int_equal(xiw_mpa_encode(true, &p, buf, sizeof(buf)), 22);
	assert_memory_equal(buf, "MPA ID Rep Frame", 16);
	assert_int_equal(buf[16], 0x28);
	assert_int_equal(buf[17], 1);
	assert_int_equal(xiw_get_be16(buf + 18), 2);
}

static void test_encode_errors(void **state)
{
	uint8_t pd[XIW_MPA_MAX_PD + 1] = { 0 }, buf[XIW_MPA_MAX_FRAME + 8];
	struct xiw_mpa_params p = { .version = 1, .pdata = pd,
				    .plen = XIW_MPA_MAX_PD };

	(void)state;
	assert_int_equal(xiw_mpa_encode(false, &p, buf, sizeof(buf)),
			 XIW_MPA_MAX_FRAME);
	p.plen++;
	assert_int_equal(xiw_mpa_encode(false, &p, buf, sizeof(buf)), -EINVAL);
	p.version = 2;
	p.plen = XIW_MPA_MAX_PD - 3;	/* + 4 IRD/ORD > 512 */
	assert_int_equal(xiw_mpa_encode(false, &p, buf, sizeof(buf)), -EINVAL);
	p.version = 3;
	p.plen = 0;
	assert_int_equal(xiw_mpa_encode(false, &p, buf, sizeof(buf)), -EINVAL);
	p.version = 1;
	p.plen = 10;
	assert_int_equal(xiw_mpa_encode(false, &p, buf, 29), -ENOSPC);
	assert_int_equal(xiw_mpa_encode(false, &p, buf, 30), 30);
}

static void test_parse_rejects(void **state)
{
	struct xiw_mpa_params p = { .version = 2, .ird = 1, .ord = 1 }, out;
	uint8_t buf[XIW_MPA_MAX_FRAME + 16];
	int len;

	(void)state;
	len = xiw_mpa_encode(false, &p, buf, sizeof(buf));
	assert_int_equal(xiw_mpa_parse(false, buf, (size_t)len, &out), len);
	/* bad key, detected as soon as the differing byte is in */
	buf[3] = 'X';
	assert_int_equal(xiw_mpa_parse(false, buf, 3, &out), 0);
	assert_int_equal(xiw_mpa_parse(false, buf, 4, &out), -EPROTO);
	buf[3] = ' ';
	/* a non-MPA peer (e.g. HTTP) */
	assert_int_equal(xiw_mpa_parse(false, (const uint8_t *)"GET / HTTP/1.1\r\n\r\n",
				       18, &out), -EPROTO);
	/* revision 0 and 3 */
	buf[XIW_MPA_OFF_REV] = 0;
	assert_int_equal(xiw_mpa_parse(false, buf, (size_t)len, &out), -EPROTO);
	buf[XIW_MPA_OFF_REV] = 3;
	assert_int_equal(xiw_mpa_parse(false, buf, (size_t)len, &out), -EPROTO);
	buf[XIW_MPA_OFF_REV] = 2;
	/* v2 without its IRD/ORD word */
	xiw_put_be16(buf + XIW_MPA_OFF_PDLEN, 3);
	assert_int_equal(xiw_mpa_parse(false, buf, 23, &out), -EPROTO);
	/* pd_len > 512, rejected before the private data arrives */
	xiw_put_be16(buf + XIW_MPA_OFF_PDLEN, XIW_MPA_MAX_PD + 1);
	assert_int_equal(xiw_mpa_parse(false, buf, XIW_MPA_HDR_LEN, &out),
			 -EPROTO);
	xiw_put_be16(buf + XIW_MPA_OFF_PDLEN, 0xffff);
	assert_int_equal(xiw_mpa_parse(false, buf, XIW_MPA_HDR_LEN, &out),
			 -EPROTO);
	/* v1 with pd_len 0 is fine; R in a request is not a reject */
	buf[XIW_MPA_OFF_REV] = 1;
	buf[XIW_MPA_OFF_FLAGS] = XIW_MPA_FLAG_R;
	xiw_put_be16(buf + XIW_MPA_OFF_PDLEN, 0);
	assert_int_equal(xiw_mpa_parse(false, buf, XIW_MPA_HDR_LEN, &out),
			 XIW_MPA_HDR_LEN);
	assert_false(out.reject);
	assert_null(out.pdata);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_wire_bytes),
		cmocka_unit_test(test_encode_errors),
		cmocka_unit_test(test_parse_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
