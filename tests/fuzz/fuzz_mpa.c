// SPDX-License-Identifier: MIT
/*
 * libFuzzer: xiw_mpa_parse() on arbitrary bytes as request and as reply.
 * A frame that parses must re-encode and re-parse to the same parameters.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "xiw_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const struct xiw_mpa_params *a, const struct xiw_mpa_params *b)
{
	if (a->version != b->version || a->markers != b->markers ||
	    a->crc != b->crc || a->reject != b->reject ||
	    a->big_fpdu != b->big_fpdu || a->plen != b->plen ||
	    a->p2p != b->p2p || a->rtr_write != b->rtr_write ||
	    a->rtr_read != b->rtr_read || a->rtr_zero_len != b->rtr_zero_len ||
	    a->ird != b->ird || a->ord != b->ord)
		abort();
	if (a->plen && memcmp(a->pdata, b->pdata, a->plen))
		abort();
}

static void one(bool is_reply, const uint8_t *data, size_t size)
{
	struct xiw_mpa_params p, q;
	uint8_t buf[XIW_MPA_MAX_FRAME];
	int len = xiw_mpa_parse(is_reply, data, size, &p), len2;

	if (len < 0 || len == 0)
		return;
	if ((size_t)len > size || len > XIW_MPA_MAX_FRAME)
		abort();
	if (p.plen && (p.pdata < data || p.pdata + p.plen > data + len))
		abort();
	len2 = xiw_mpa_encode(is_reply, &p, buf, sizeof(buf));
	if (len2 != len)
		abort();
	if (xiw_mpa_parse(is_reply, buf, (size_t)len2, &q) != len2)
		abort();
	same(&p, &q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* copy so reads past @size are caught by ASan */
	uint8_t *copy = malloc(size ? size : 1);

	memcpy(copy, data, size);
	one(false, copy, size);
	one(true, copy, size);
	free(copy);
	return 0;
}
