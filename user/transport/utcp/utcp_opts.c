// SPDX-License-Identifier: MIT
/*
 * utcp: TCP option parsing and building (RFC 9293 §3.2 MSS, RFC 7323 WS
 * and TS, RFC 2018 SACK-permitted and SACK). Hostile input: every length
 * is checked before a byte is read.
 */
#include <errno.h>
#include <string.h>
#include "utcp_int.h"

enum { OPT_EOL = 0, OPT_NOP = 1, OPT_MSS = 2, OPT_WS = 3, OPT_SACKP = 4,
       OPT_SACK = 5, OPT_TS = 8 };

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

int utcp_opts_parse(const uint8_t *p, uint32_t len, struct utcp_opts *o)
{
	uint32_t i = 0;

	memset(o, 0, sizeof(*o));
	if (len > 40)
		return -EINVAL;
	while (i < len) {
		uint8_t kind = p[i], olen;

		if (kind == OPT_EOL)
			break;
		if (kind == OPT_NOP) {
			i++;
			continue;
		}
		if (len - i < 2)
			return -EINVAL;
		olen = p[i + 1];
		if (olen < 2 || olen > len - i)
			return -EINVAL;
		switch (kind) {
		case OPT_MSS:
			if (olen != 4)
				return -EINVAL;
			o->has_mss = true;
			o->mss = (uint16_t)(p[i + 2] << 8 | p[i + 3]);
			break;
		case OPT_WS:
			if (olen != 3)
				return -EINVAL;
			o->has_ws = true;
			o->ws = p[i + 2];
			break;
		case OPT_SACKP:
			if (olen != 2)
				return -EINVAL;
			o->sack_perm = true;
			break;
		case OPT_TS:
			if (olen != 10)
				return -EINVAL;
			o->has_ts = true;
			o->tsval = get32(p + i + 2);
			o->tsecr = get32(p + i + 6);
			break;
		case OPT_SACK:
			if (olen < 10 || (olen - 2) % 8)
				return -EINVAL;
			o->nsack = 0;
			for (uint32_t k = 0; k < (uint32_t)(olen - 2) / 8 && k < UTCP_MAX_SACK; k++) {
				o->sack_start[k] = get32(p + i + 2 + 8 * k);
				o->sack_end[k] = get32(p + i + 6 + 8 * k);
				o->nsack++;
			}
			break;
		default:
			break;	/* unknown: skip by length */
		}
		i += olen;
	}
	return 0;
}

int utcp_opts_build(const struct utcp_opts *o, bool syn, uint8_t *buf, uint32_t max)
{
	uint8_t tmp[40];
	uint32_t n = 0;

	if (syn && o->has_mss) {
		tmp[n++] = OPT_MSS; tmp[n++] = 4;
		tmp[n++] = (uint8_t)(o->mss >> 8); tmp[n++] = (uint8_t)o->mss;
	}
	if (syn && o->sack_perm && o->has_ts) {
		tmp[n++] = OPT_SACKP; tmp[n++] = 2;	/* Linux layout: SACKP,TS */
	} else if (syn && o->sack_perm) {
		tmp[n++] = OPT_NOP; tmp[n++] = OPT_NOP;
		tmp[n++] = OPT_SACKP; tmp[n++] = 2;
	}
	if (o->has_ts) {
		if (!(syn && o->sack_perm)) {
			tmp[n++] = OPT_NOP; tmp[n++] = OPT_NOP;
		}
		tmp[n++] = OPT_TS; tmp[n++] = 10;
		put32(tmp + n, o->tsval); n += 4;
		put32(tmp + n, o->tsecr); n += 4;
	}
	if (syn && o->has_ws) {
		tmp[n++] = OPT_NOP;
		tmp[n++] = OPT_WS; tmp[n++] = 3; tmp[n++] = o->ws;
	}
	if (!syn && o->nsack > 0) {
		int k = o->nsack > UTCP_MAX_SACK ? UTCP_MAX_SACK : o->nsack;

		while (k > 0 && n + 4 + 8 * (uint32_t)k > 40)
			k--;
		if (k > 0) {
			tmp[n++] = OPT_NOP; tmp[n++] = OPT_NOP;
			tmp[n++] = OPT_SACK; tmp[n++] = (uint8_t)(2 + 8 * k);
			for (int j = 0; j < k; j++) {
				put32(tmp + n, o->sack_start[j]); n += 4;
				put32(tmp + n, o->sack_end[j]); n += 4;
			}
		}
	}
	if (n > max)
		return -ENOSPC;
	memcpy(buf, tmp, n);
	return (int)n;
}
