// SPDX-License-Identifier: MIT
/* CRC32C known vectors (RFC 3720 B.4) and the MPA trailer byte order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "xiw_proto.h"

static uint32_t crc_final(const void *p, size_t len)
{
	return ~xiw_crc32c(XIW_CRC32C_INIT, p, len);
}

static void test_rfc3720_vectors(void **state)
{
	uint8_t buf[32];

	(void)state;
	memset(buf, 0, sizeof(buf));
	assert_int_equal(crc_final(buf, 32), 0x8a9136aa);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(crc_final(buf, 32), 0x62a8ab43);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(crc_final(buf, 32), 0x46dd794e);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	assert_int_equal(crc_final(buf, 32), 0x113fdb5c);
	assert_int_equal(crc_final("123456789", 9), 0xe3069283);
}

static void test_wire_order(void **state)
{
	uint8_t buf[32] = { 0 }, out[4];
	const uint8_t want[4] = { 0xaa, 0x36, 0x91, 0x8a };

	(void)state;
	/* RFC 3720 B.4 shows the zero vector's CRC as bytes aa 36 91 8a */
	xiw_crc32c_wire(xiw_crc32c(XIW_CRC32C_INIT, buf, 32), out);
	assert_memory_equal(out, want, 4);
}

/* Incremental updates at every split and every alignment match one pass,
 * and the SSE4.2 path matches the table path. */
static void test_split_and_paths(void **state)
{
	uint8_t buf[1031];
	uint32_t whole;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	whole = xiw_crc32c(XIW_CRC32C_INIT, buf, sizeof(buf));
	assert_int_equal(whole,
			 xiw_crc32c_table_only(XIW_CRC32C_INIT, buf, sizeof(buf)));
	for (size_t k = 0; k <= sizeof(buf); k++) {
		uint32_t c = xiw_crc32c(XIW_CRC32C_INIT, buf, k);

		c = xiw_crc32c(c, buf + k, sizeof(buf) - k);
		assert_int_equal(c, whole);
	}
	for (size_t off = 0; off < 16; off++) {
		size_t len = sizeof(buf) - off;

		assert_int_equal(xiw_crc32c(XIW_CRC32C_INIT, buf + off, len),
				 xiw_crc32c_table_only(XIW_CRC32C_INIT,
						       buf + off, len));
	}
	assert_int_equal(xiw_crc32c(12345, buf, 0), 12345);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc3720_vectors),
		cmocka_unit_test(test_wire_order),
		cmocka_unit_test(test_split_and_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
