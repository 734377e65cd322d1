// SPDX-License-Identifier: MIT
/*
 * RFC 7306 §5.1 Atomic Request bodies: check and execute one on local
 * memory as a single 64-bit atomic step (the responder side; the body
 * comes from the wire and is untrusted).
 *
 * Body layout (52 octets, big-endian): reserved(28) | AOpCode(4),
 * Request Identifier(32), Remote STag(32), Remote Tagged Offset(64),
 * Add or Swap Data(64), Add or Swap Mask(64), Compare Data(64),
 * Compare Mask(64).
 */
#include "xiwarp/wire/mpa.h"
#include "xiw_obj.h"

/**
 * xiw_atomic_valid() - the body names an operation RFC 7306 defines
 * (FetchAdd, Swap, CmpSwap); the reserved bits are ignored.
 */
bool xiw_atomic_valid(const uint8_t body[XIW_ATOMIC_REQ_LEN])
{
	uint32_t w = xiw_get_be32(body);

	return (w & 0xf) <= XIW_AOP_CMP_SWAP;	/* reserved bits: ignored */
}

/**
 * xiw_atomic_masked_add() - @a + @b where a set bit i of @mask ends a
 * field: no carry from bit i into bit i + 1 (RFC 7306 §5.1 Add Mask).
 */
uint64_t xiw_atomic_masked_add(uint64_t a, uint64_t b, uint64_t mask)
{
	uint64_t r = 0, carry = 0;

	for (int i = 0; i < 64; i++) {
		uint64_t sum = ((a >> i) & 1) + ((b >> i) & 1) + carry;

		r |= (sum & 1) << i;
		carry = (mask >> i) & 1 ? 0 : sum >> 1;
	}
	return r;
}

/**
 * xiw_atomic_exec() - run the (valid) Atomic Request @body on *@p, an
 * 8-byte aligned location, atomically against every other caller:
 * FetchAdd adds (masked), Swap replaces the bits of the swap mask,
 * CmpSwap does so only when the bits of the compare mask equal the
 * compare data.
 * Return: the original value (what the Atomic Response carries).
 */
uint64_t xiw_atomic_exec(const uint8_t body[XIW_ATOMIC_REQ_LEN], uint64_t *p)
{
	uint32_t aop = xiw_get_be32(body) & 0xf;
	uint64_t add_swap = xiw_get_be64(body + 20);
	uint64_t as_mask = xiw_get_be64(body + 28);
	uint64_t cmp = xiw_get_be64(body + 36), cmp_mask = xiw_get_be64(body + 44);
	uint64_t old = __atomic_load_n(p, __ATOMIC_ACQUIRE), nv;

	do {
		if (aop == XIW_AOP_FETCH_ADD)
			nv = as_mask ? xiw_atomic_masked_add(old, add_swap, as_mask) :
				       old + add_swap;
		else if (aop == XIW_AOP_CMP_SWAP && ((old ^ cmp) & cmp_mask))
			return old;	/* no match: nothing written */
		else
			nv = (old & ~as_mask) | (add_swap & as_mask);
	} while (!__atomic_compare_exchange_n(p, &old, nv, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return old;
}
