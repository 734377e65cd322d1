/* SPDX-License-Identifier: MIT */
/*
 * CM MPA negotiation (internal): what we put in an MPA request/reply and
 * what a request/reply pair settles (RFC 5044 §7.1, RFC 6581 §5-6).
 * Pure functions except for the environment knobs, read once.
 */
#ifndef XIW_CM_MPA_H
#define XIW_CM_MPA_H

#include <stdbool.h>
#include <stdint.h>
#include "xiw_conn.h"
#include "xiw_proto.h"

/**
 * struct xiw_cm_knobs - MPA settings from the environment (read once):
 * XIW_MPA_CRC=0|1 (request CRC, default 0), XIW_MPA_MARKERS=0|1 (request
 * markers, default 0), XIW_MPA_VERSION=1|2 (default 2), XIW_MPA_P2P=0|1
 * (default 1), XIW_MAX_FPDU=<bytes> (ULPDU cap, 128..65535, default 65535).
 * Bad values are logged and replaced by the default.
 */
struct xiw_cm_knobs {
	bool crc, markers, p2p;
	uint8_t version;
	uint32_t max_fpdu;
};

/** xiw_cm_knobs() - the process-wide knobs (never NULL). */
const struct xiw_cm_knobs *xiw_cm_knobs(void);

/**
 * xiw_cm_mpa_request() - fill @req: our version/M/C bits, the big-FPDU
 * bit, v2 IRD/ORD (@ird, @ord clamped to XIW_MAX_IRD/ORD), p2p with
 * zero-length READ and WRITE offered as RTR, private data @pdata/@plen.
 */
void xiw_cm_mpa_request(struct xiw_mpa_params *req, uint16_t ird, uint16_t ord,
			const void *pdata, uint8_t plen);

/**
 * xiw_cm_mpa_reply() - the responder's reply to @req (RFC 6581 §5):
 * version min(ours, theirs), C set if either side wants CRC, M if we want
 * markers, big-FPDU echoed, p2p only if both want it, with exactly one RTR
 * type from those the initiator offered (READ preferred when our IRD >= 1,
 * then WRITE, then SEND), ORD = min(@ord, initiator IRD).
 * @reject: build a reject (R bit) instead; no p2p/RTR bits then.
 */
void xiw_cm_mpa_reply(const struct xiw_mpa_params *req, uint16_t ird,
		      uint16_t ord, const void *pdata, uint8_t plen,
		      bool reject, struct xiw_mpa_params *rep);

/**
 * xiw_cm_conn_params() - what the exchanged @req/@rep settle for one side.
 * @initiator: true on the active side.
 * @mss: the connection's TCP MSS in bytes (FPDU sizing).
 * Return: 0, or -EPROTO if the reply is inconsistent with the request
 * (version above the request's, p2p without exactly one offered RTR type).
 */
int xiw_cm_conn_params(const struct xiw_mpa_params *req,
		       const struct xiw_mpa_params *rep, bool initiator,
		       uint32_t mss, struct xiw_conn_params *out);

/**
 * xiw_cm_max_ulpdu() - largest ULPDU for one TCP segment of @mss bytes:
 * MSS minus the 2-byte length, the CRC field (present whether or not CRC
 * is on, RFC 5044 §4.1) and markers, with 2-byte length + ULPDU a multiple
 * of 4 (no pad); or the big-FPDU size when @big. Capped by XIW_MAX_FPDU.
 */
uint32_t xiw_cm_max_ulpdu(uint32_t mss, bool markers, bool big);

#endif /* XIW_CM_MPA_H */
