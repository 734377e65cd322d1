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

struct xrs_zpol {
	uint32_t src, sink, read_min;
	bool adapt;
};

/** xrs_zpol_init() - thresholds: 0 picks the start value, NEVER is off. */
void xrs_zpol_init(struct xrs_zpol *p, uint32_t src, uint32_t sink, bool adapt);

/** xrs_zpol_src_zcopy() - should a send of @len bytes go zero-copy? */
bool xrs_zpol_src_zcopy(const struct xrs_zpol *p, uint64_t len);
/** xrs_zpol_srcavail_ok() - may it wait for a SrcAvail read? */
bool xrs_zpol_srcavail_ok(bool nonblock, bool timeout);
/** xrs_zpol_post_sinkavail() - should a read of @len post a SinkAvail? */
bool xrs_zpol_post_sinkavail(const struct xrs_zpol *p, uint64_t len,
			     bool nonblock, bool timeout);
/** xrs_zpol_read() - read @remaining SrcAvail bytes into @room? (else SendSm) */
bool xrs_zpol_read(const struct xrs_zpol *p, uint64_t room, uint64_t remaining);

/* adaptation events */
void xrs_zpol_on_sinkavail(struct xrs_zpol *p);		/* source */
void xrs_zpol_on_sendsm(struct xrs_zpol *p);		/* source */
void xrs_zpol_on_sink_wasted(struct xrs_zpol *p);	/* sink */
void xrs_zpol_on_srcavail(struct xrs_zpol *p);		/* sink */

#endif /* XRS_ZC_POLICY_H */
