// SPDX-License-Identifier: MIT
/*
 * CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78) as MPA
 * uses it (RFC 5044 §6, algorithm of RFC 3720 B.4). The SSE4.2 crc32
 * instruction when the CPU has it, a byte table otherwise. The file is
 * compiled without -msse4.2; only the fast function is built for it.
 */
#include <stdbool.h>
#include <string.h>
#include "xiw_proto.h"

#define CRC32C_POLY_REFLECTED 0x82f63b78u

static uint32_t crc_table[256];
static int crc_impl;	/* 0 unknown, 1 table, 2 sse4.2 */

static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? CRC32C_POLY_REFLECTED : 0);
		crc_table[i] = c;
	}
}

static uint32_t crc32c_table(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

static void crc_select(void)
{
	crc_table_init();
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2")) {
		__atomic_store_n(&crc_impl, 2, __ATOMIC_RELEASE);
		return;
	}
#endif
	__atomic_store_n(&crc_impl, 1, __ATOMIC_RELEASE);
}

/**
 * xiw_crc32c() - CRC32C update, see xiw_proto.h.
 * Selection is idempotent, so a race on first use only repeats it.
 */
uint32_t xiw_crc32c(uint32_t crc, const void *buf, size_t len)
{
	int impl = __atomic_load_n(&crc_impl, __ATOMIC_ACQUIRE);

	if (!impl) {
		crc_select();
		impl = __atomic_load_n(&crc_impl, __ATOMIC_ACQUIRE);
	}
#if defined(__x86_64__)
	if (impl == 2)
		return crc32c_sse42(crc, buf, len);
#endif
	return crc32c_table(crc, buf, len);
}

/**
 * xiw_crc32c_table_only() - the portable path (tests compare both).
 */
uint32_t xiw_crc32c_table_only(uint32_t crc, const void *buf, size_t len)
{
	if (!__atomic_load_n(&crc_impl, __ATOMIC_ACQUIRE))
		crc_select();
	return crc32c_table(crc, buf, len);
}

/**
 * xiw_crc32c_wire() - MPA CRC trailer bytes for final @state.
 * The transmitted value is ~state, least significant byte first: the
 * iSCSI convention (RFC 3720 B.4 lists 32 zero bytes -> aa 36 91 8a), what
 * Linux siw sends (crypto crc32c writes ~crc as __le32) and what
 * Wireshark's iwarp_mpa accepts as "Good CRC32".
 */
void xiw_crc32c_wire(uint32_t state, uint8_t out[4])
{
	uint32_t v = ~state;

	out[0] = (uint8_t)v;
	out[1] = (uint8_t)(v >> 8);
	out[2] = (uint8_t)(v >> 16);
	out[3] = (uint8_t)(v >> 24);
}
