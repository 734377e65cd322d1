// SPDX-License-Identifier: MIT
/*
 * Seed 004 thresholds and their adaptation (see xrs_zc_policy.h).
 */
#include "xrs_zc_policy.h"

void xrs_zpol_init(struct xrs_zpol *p, uint32_t src, uint32_t sink, bool adapt)
{
	p->src = src ? src : XRS_ZP_SRC_START;
	p->sink = sink ? sink : XRS_ZP_SINK_START;
	p->read_min = XRS_ZP_READ_MIN;
	p->adapt = adapt;
}

bool xrs_zpol_src_zcopy(const struct xrs_zpol *p, uint64_t len)
{
	return p->src != XRS_ZP_NEVER && len >= p->src;
}

bool xrs_zpol_srcavail_ok(bool nonblock, bool timeout)
{
	/* the buffer is the caller's until the sink says it has read it */
	return !nonblock && !timeout;
}

bool xrs_zpol_post_sinkavail(const struct xrs_zpol *p, uint64_t len,
			     bool nonblock, bool timeout)
{
	/* the buffer is the peer's target until the transfer resolves */
	return p->sink != XRS_ZP_NEVER && len >= p->sink && !nonblock && !timeout;
}

bool xrs_zpol_read(const struct xrs_zpol *p, uint64_t room, uint64_t remaining)
{
	uint64_t need = remaining < p->read_min ? remaining : p->read_min;

	return room >= need;
}

static uint32_t halve(uint32_t v)
{
	if (v == XRS_ZP_NEVER)
		return v;
	v /= 2;
	return v < XRS_ZP_MIN ? XRS_ZP_MIN : v;
}

static uint32_t twice(uint32_t v)
{
	if (v == XRS_ZP_NEVER || v >= XRS_ZP_MAX / 2)
		return v == XRS_ZP_NEVER ? v : XRS_ZP_MAX;
	return v * 2;
}

void xrs_zpol_on_sinkavail(struct xrs_zpol *p)
{
	if (p->adapt)
		p->src = halve(p->src);
}

void xrs_zpol_on_sendsm(struct xrs_zpol *p)
{
	if (p->adapt)
		p->src = twice(p->src);
}

void xrs_zpol_on_sink_wasted(struct xrs_zpol *p)
{
	if (p->adapt)
		p->sink = twice(p->sink);
}

void xrs_zpol_on_srcavail(struct xrs_zpol *p)
{
	if (p->adapt)
		p->sink = halve(p->sink);
}
