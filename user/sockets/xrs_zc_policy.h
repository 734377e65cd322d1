/* SPDX-License-Identifier: MIT */
/*
 * Seed 004 thresholds: when a transfer goes zero-copy, and how each side
 * adapts its own threshold from what the peer does - no mode-switch
 * messages. Pure functions over struct xrs_zpol (tests/unit/test_rs_policy.c).
 *
 * Source (sender), threshold @src: a send of at least @src bytes goes
 * zero-copy - into a SinkAvail buffer if one is pending, else by
 * SrcAvail when the caller can wait for the read (blocking, no send
 * timeout). A SinkAvail arriving means the reader posts big buffers: the
 * source halves @src. A SendSm means the reader did not want to read:
 * the source doubles @src.
 *
 * Sink (receiver), threshold @sink: a blocking read of at least @sink
 * bytes with nothing queued posts a SinkAvail. When the source answers it
 * with a small buffer copy instead (the SinkAvail was wasted), the sink
 * doubles @sink; when the source sends a SrcAvail (it has big
 * transfers), the sink halves @sink. A SrcAvail is read into the
 * reader's buffer when that buffer takes at least min(@read_min, what is
 * left); else the sink answers SendSm.
 *
 * UINT32_MAX means "never" (buffer copy only); adaptation keeps
 * thresholds within [XRS_ZP_MIN, XRS_ZP_MAX] unless they start at never.
 *
 * Cost feedback (source, adaptive only): "the threshold for zero copy is
 * based upon justifying the cost of initiating these transfers" (seed
 * 004). The source times its send calls that went wholly one way, in
 * bytes per ns spent in the call (waits for credits or for the peer's
 * READ included), and keeps a decaying average for buffer copy. A
 * zero-copy call slower than that average, twice in a row, raises a
 * floor to twice its size: the source threshold, SinkAvail halving
 * included, stays at or above the floor. Measured on veth, where a 64 KB
 * zero-copy write (ibv_reg_mr, a control round trip, blocking) ran at
 * 4.7 Gb/s against 20 Gb/s by copy, the SinkAvail rule alone drove the
 * threshold down to zero copy and kept it there. The floor halves every
 * XRS_ZP_REPROBE buffer-copy samples, so a path where zero copy becomes
 * cheaper is tried again. Until XRS_ZP_SAMPLES buffer-copy samples exist
 * the source does not go zero-copy: there is nothing to compare with.
 */
#ifndef XRS_ZC_POLICY_H
#define XRS_ZC_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define XRS_ZP_MIN		(16u << 10)	/* below this, copying wins */
#define XRS_ZP_MAX		(4u << 20)
#define XRS_ZP_SRC_START	(64u << 10)
#define XRS_ZP_SINK_START	(64u << 10)
#define XRS_ZP_READ_MIN		(16u << 10)
#define XRS_ZP_NEVER		UINT32_MAX
#define XRS_ZP_SAMPLES		4	/* buffer-copy samples before zero copy */
#define XRS_ZP_REPROBE		256	/* buffer-copy samples per floor halving */

/**
 * struct xrs_zpol - one side's thresholds.
 * @src, @sink, @read_min: bytes (see above).
 * @adapt: thresholds move (XIW_RS_ADAPT, default on).
 * @cost: with @adapt, the cost feedback too (XIW_RS_ZC_COST, default on).
 * @src_floor: bytes; the source threshold stays >= this (cost feedback).
 * @bc_bytes, @bc_ns: decaying sums of buffer-copy send calls >= XRS_ZP_MIN.
 * @bc_n: buffer-copy samples so far (saturates); @zc_lost: zero-copy
 *        calls in a row slower than buffer copy.
 */
struct xrs_zpol {
	uint32_t src, sink, read_min;
	bool adapt, cost;
	uint32_t src_floor;
	uint64_t bc_bytes, bc_ns;
	uint32_t bc_n, zc_lost;
};

/**
 * xrs_zpol_init() - thresholds: 0 picks the start value, NEVER is off;
 * @adapt: seed-004 adaptation; @cost: and the cost feedback (above).
 */
void xrs_zpol_init(struct xrs_zpol *p, uint32_t src, uint32_t sink, bool adapt,
		   bool cost);

/** xrs_zpol_src_zcopy() - should a send of @len bytes go zero-copy? */
bool xrs_zpol_src_zcopy(const struct xrs_zpol *p, uint64_t len);
/** xrs_zpol_srcavail_ok() - may it wait for a SrcAvail read? */
bool xrs_zpol_srcavail_ok(bool nonblock, bool timeout);
/** xrs_zpol_post_sinkavail() - should a read of @len post a SinkAvail? */
bool xrs_zpol_post_sinkavail(const struct xrs_zpol *p, uint64_t len,
			     bool nonblock, bool timeout);
/** xrs_zpol_read() - read @remaining SrcAvail bytes into @room? (else SendSm) */
bool xrs_zpol_read(const struct xrs_zpol *p, uint64_t room, uint64_t remaining);

/**
 * xrs_zpol_on_sent() - a send call moved @len bytes (>= XRS_ZP_MIN to
 * count) all by zero copy (@zcopy) or all by buffer copy, in @ns
 * nanoseconds of the call: feed the source's cost feedback (above).
 */
void xrs_zpol_on_sent(struct xrs_zpol *p, uint64_t len, uint64_t ns,
		      bool zcopy);

/* adaptation events */
void xrs_zpol_on_sinkavail(struct xrs_zpol *p);		/* source */
void xrs_zpol_on_sendsm(struct xrs_zpol *p);		/* source */
void xrs_zpol_on_sink_wasted(struct xrs_zpol *p);	/* sink */
void xrs_zpol_on_srcavail(struct xrs_zpol *p);		/* sink */

#endif /* XRS_ZC_POLICY_H */
