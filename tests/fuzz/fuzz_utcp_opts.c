// SPDX-License-Identifier: MIT
/*
 * libFuzzer: utcp_opts_parse() on arbitrary option bytes. What parses
 * must re-build (SYN and data layouts) and re-parse to the same values.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "transport/utcp/utcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct utcp_opts o, r;
	uint8_t buf[40];
	uint8_t *copy = malloc(size ? size : 1);	/* ASan sees overreads */
	int n;

	memcpy(copy, data, size);
	if (utcp_opts_parse(copy, (uint32_t)size, &o) != 0) {
		free(copy);
		return 0;
	}
	free(copy);
	if (size > 40 || o.nsack < 0 || o.nsack > UTCP_MAX_SACK)
		abort();
	/* SYN layout: MSS, SACK-permitted, TS, WS */
	n = utcp_opts_build(&o, true, buf, sizeof(buf));
	if (n < 0 || n > 40 || n % 4)
		abort();
	if (utcp_opts_parse(buf, (uint32_t)n, &r) != 0)
		abort();
	if (r.has_mss != o.has_mss || r.has_ws != o.has_ws || r.has_ts != o.has_ts ||
	    r.sack_perm != o.sack_perm || r.nsack != 0)
		abort();
	if ((o.has_mss && r.mss != o.mss) || (o.has_ws && r.ws != o.ws) ||
	    (o.has_ts && (r.tsval != o.tsval || r.tsecr != o.tsecr)))
		abort();
	/* data layout: TS and as many SACK blocks as fit */
	n = utcp_opts_build(&o, false, buf, sizeof(buf));
	if (n < 0 || n > 40 || n % 4)
		abort();
	if (utcp_opts_parse(buf, (uint32_t)n, &r) != 0)
		abort();
	if (r.has_ts != o.has_ts || r.has_mss || r.has_ws || r.sack_perm)
		abort();
	if (r.nsack > o.nsack || (o.nsack && !r.nsack) ||
	    (o.has_ts && o.nsack >= 3 && r.nsack != 3))
		abort();
	for (int i = 0; i < r.nsack; i++)
		if (r.sack_start[i] != o.sack_start[i] || r.sack_end[i] != o.sack_end[i])
			abort();
	return 0;
}
