// SPDX-License-Identifier: MIT
/*
 * libFuzzer: RFC 7306 Atomic Request bodies from the wire
 * (xiw_atomic_valid, xiw_atomic_exec) on a local 64-bit value. Input:
 * 52 body octets then 8 octets of initial value. The result must match a
 * plain reference computation: FetchAdd as bitwise full adders whose
 * carry stops at mask bits (with mask 0 the ordinary sum), Swap /
 * CmpSwap by masks; the original value is always returned.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "xiwarp/wire/mpa.h"
#include "xiw_obj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t ref(const uint8_t *b, uint64_t v)
{
	uint32_t aop = xiw_get_be32(b) & 0xf;
	uint64_t as = xiw_get_be64(b + 20), asm_ = xiw_get_be64(b + 28);
	uint64_t cmp = xiw_get_be64(b + 36), cm = xiw_get_be64(b + 44);

	if (aop == XIW_AOP_FETCH_ADD) {
		uint64_t r = 0, c = 0;

		if (!asm_)
			return v + as;
		for (int i = 0; i < 64; i++) {
			uint64_t s = ((v >> i) & 1) + ((as >> i) & 1) + c;

			r |= (s & 1) << i;
			c = ((asm_ >> i) & 1) ? 0 : s >> 1;
		}
		return r;
	}
	if (aop == XIW_AOP_CMP_SWAP && ((v ^ cmp) & cm))
		return v;
	return (v & ~asm_) | (as & asm_);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t v, orig, want;

	if (size < XIW_ATOMIC_REQ_LEN + 8)
		return 0;
	memcpy(&v, data + XIW_ATOMIC_REQ_LEN, 8);
	if (!xiw_atomic_valid(data))
		return 0;
	want = ref(data, v);
	orig = v;
	if (xiw_atomic_exec(data, &v) != orig || v != want)
		abort();
	return 0;
}
