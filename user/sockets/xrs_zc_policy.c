// SPDX-License-Identifier: MIT
/*
 * Seed 004 thresholds and their adaptation (see xrs_zc_policy.h).
 */
#include "xrs_zc_policy.h"

void xrs_zpol_init(struct xrs_zpol *p, uint32_t src, uint32_t sink, bool adapt,
		   bool cost)
{
	p->src = src ? src : XRS_ZP_SRC_START;
	p->sink = sink ? sink : XRS_ZP_SINK_START;
	p->read_min = XRS_ZP_READ_MIN;
	p->adapt = adapt;
	p->cost = adapt && cost;
	p->src_floor = 0;
	p->bc_bytes = p->bc_ns = 0;
	p->bc_n = p->zc_lost = 0;
}

bool xrs_zpol_src_zcopy(const struct xrs_zpol *p, uint64_t len)
{
	if (p->src == XRS_ZP_NEVER || len < p->src)
		return false;
	/* cost feedback: no zero copy before there is a buffer-copy rate */
	return !p->cost || p->bc_n >= XRS_ZP_SAMPLES;
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
	if (!p->adapt)
		return;
	p->src = halve(p->src);
	if (p->src != XRS_ZP_NEVER && p->src < p->src_floor)
		p->src = p->src_floor;
}

/* Buffer copy: a decaying average (weight 1/8 per sample) of its rate. */
static void zpol_bcopy_sample(struct xrs_zpol *p, uint64_t len, uint64_t ns)
{
	p->bc_bytes = p->bc_bytes - p->bc_bytes / 8 + len;
	p->bc_ns = p->bc_ns - p->bc_ns / 8 + ns;
	if (p->bc_n < UINT32_MAX)
		p->bc_n++;
	if (p->bc_n % XRS_ZP_REPROBE == 0)
		p->src_floor /= 2;	/* try zero copy again, now and then */
}

/* Zero copy slower than buffer copy twice in a row: raise the floor. */
static void zpol_zcopy_sample(struct xrs_zpol *p, uint64_t len, uint64_t ns)
{
	uint64_t floor;

	if (p->bc_n < XRS_ZP_SAMPLES || !p->bc_ns)
		return;
	/* len / ns < bc_bytes / bc_ns, without division */
	if ((unsigned __int128)len * p->bc_ns >=
	    (unsigned __int128)p->bc_bytes * ns) {
		p->zc_lost = 0;
		return;
	}
	if (++p->zc_lost < 2)
		return;
	p->zc_lost = 0;
	floor = len * 2 > XRS_ZP_MAX ? XRS_ZP_MAX : len * 2;
	if (floor > p->src_floor)
		p->src_floor = (uint32_t)floor;
	if (p->src != XRS_ZP_NEVER && p->src < p->src_floor)
		p->src = p->src_floor;
}

void xrs_zpol_on_sent(struct xrs_zpol *p, uint64_t len, uint64_t ns,
		      bool zcopy)
{
	if (!p->cost || len < XRS_ZP_MIN)
		return;
	if (!ns)
		ns = 1;
	if (zcopy)
		zpol_zcopy_sample(p, len, ns);
	else
		zpol_bcopy_sample(p, len, ns);
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
