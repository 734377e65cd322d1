// SPDX-License-Identifier: MIT
/*
 * CM MPA negotiation: environment knobs, our request/reply parameters and
 * the settlement of a request/reply pair (RFC 5044 §7.1, RFC 6581).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "xiwarp/xiwarp.h"
#include "xiwarp/wire/mpa.h"
#include "xiw_cm_mpa.h"

#define ULPDU_LIMIT 65535u	/* 16-bit MPA ULPDU length */
#define ULPDU_FLOOR 128u	/* below this no header + payload fits */

static struct xiw_cm_knobs knobs;
static pthread_once_t knobs_once = PTHREAD_ONCE_INIT;

/* Parse an unsigned knob in [lo, hi]; log and keep @def otherwise. */
static uint32_t knob_uint(const char *name, uint32_t lo, uint32_t hi,
			  uint32_t def)
{
	const char *v = getenv(name);
	unsigned long n;
	char *end;

	if (!v || !*v)
		return def;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n < lo || n > hi) {
		xiw_log(XIW_LOG_ERROR,
			"%s=\"%s\" is invalid: use a number in %u..%u; using %u",
			name, v, lo, hi, def);
		return def;
	}
	return (uint32_t)n;
}

static void knobs_read(void)
{
	knobs.crc = knob_uint("XIW_MPA_CRC", 0, 1, 0);
	knobs.markers = knob_uint("XIW_MPA_MARKERS", 0, 1, 0);
	knobs.version = (uint8_t)knob_uint("XIW_MPA_VERSION", 1, 2, 2);
	knobs.p2p = knob_uint("XIW_MPA_P2P", 0, 1, 1);
	knobs.max_fpdu = knob_uint("XIW_MAX_FPDU", ULPDU_FLOOR, ULPDU_LIMIT,
				   ULPDU_LIMIT);
}

const struct xiw_cm_knobs *xiw_cm_knobs(void)
{
	pthread_once(&knobs_once, knobs_read);
	return &knobs;
}

static uint16_t min16(uint16_t a, uint16_t b)
{
	return a < b ? a : b;
}

void xiw_cm_mpa_request(struct xiw_mpa_params *req, uint16_t ird, uint16_t ord,
			const void *pdata, uint8_t plen)
{
	const struct xiw_cm_knobs *k = xiw_cm_knobs();

	memset(req, 0, sizeof(*req));
	req->version = k->version;
	req->markers = k->markers;
	req->crc = k->crc;
	req->big_fpdu = true;
	if (req->version == XIW_MPA_REV2) {
		req->ird = min16(ird, XIW_MAX_IRD);
		req->ord = min16(ord, XIW_MAX_ORD);
		req->p2p = k->p2p;
		req->rtr_read = req->p2p;
		req->rtr_write = req->p2p;
	}
	req->pdata = pdata;
	req->plen = plen;
}

/* Responder: pick one RTR type the initiator offered (RFC 6581 §5). */
static void reply_pick_rtr(const struct xiw_mpa_params *req,
			   struct xiw_mpa_params *rep)
{
	if (req->rtr_read && rep->ird >= 1)
		rep->rtr_read = true;
	else if (req->rtr_write)
		rep->rtr_write = true;
	else if (req->rtr_zero_len)
		rep->rtr_zero_len = true;
	else if (req->rtr_read)
		rep->rtr_read = true, rep->ird = 1;	/* answer its READ */
	else
		rep->p2p = false;	/* nothing offered: no RTR at all */
}

void xiw_cm_mpa_reply(const struct xiw_mpa_params *req, uint16_t ird,
		      uint16_t ord, const void *pdata, uint8_t plen,
		      bool reject, struct xiw_mpa_params *rep)
{
	const struct xiw_cm_knobs *k = xiw_cm_knobs();

	memset(rep, 0, sizeof(*rep));
	rep->version = req->version < k->version ? req->version : k->version;
	rep->reject = reject;
	rep->crc = req->crc || k->crc;
	rep->markers = k->markers;
	/* answer an announced big-FPDU request; never offer it unasked */
	rep->big_fpdu = req->big_fpdu;
	rep->big_ack = req->big_fpdu;
	rep->pdata = pdata;
	rep->plen = plen;
	if (rep->version != XIW_MPA_REV2)
		return;
	rep->ird = min16(ird, XIW_MAX_IRD);
	rep->ord = min16(min16(ord, XIW_MAX_ORD), req->ird);
	if (reject || !req->p2p || !k->p2p)
		return;
	rep->p2p = true;
	reply_pick_rtr(req, rep);
}

static enum xiw_rtr_type rtr_of(const struct xiw_mpa_params *rep)
{
	int n = rep->rtr_read + rep->rtr_write + rep->rtr_zero_len;

	if (n != 1)
		return XIW_RTR_NONE;
	if (rep->rtr_read)
		return XIW_RTR_READ;
	return rep->rtr_write ? XIW_RTR_WRITE : XIW_RTR_SEND;
}

/* Is the chosen RTR type one the initiator offered? */
static bool rtr_offered(const struct xiw_mpa_params *req, enum xiw_rtr_type t)
{
	return (t == XIW_RTR_READ && req->rtr_read) ||
	       (t == XIW_RTR_WRITE && req->rtr_write) ||
	       (t == XIW_RTR_SEND && req->rtr_zero_len);
}

/* 2-byte length + ULPDU a multiple of 4: ULPDU = 2 mod 4, <= @max. */
static uint32_t ulpdu_align(uint32_t max)
{
	return ((max + 2) & ~3u) - 2;
}

uint32_t xiw_cm_max_ulpdu(uint32_t mss, bool markers, bool big)
{
	uint32_t cap = xiw_cm_knobs()->max_fpdu, v;

	if (big) {
		v = ULPDU_LIMIT;
	} else {
		/* the CRC field is on the wire with or without CRC (§4.1) */
		uint32_t over = XIW_MPA_CRC_SIZE + XIW_MPA_LEN_SIZE;

		if (markers)
			over += XIW_MPA_MARKER_SIZE * ((mss + 511) / 512);
		v = mss > over + ULPDU_FLOOR ? mss - over : ULPDU_FLOOR;
		v = ((v + XIW_MPA_LEN_SIZE) & ~3u) - XIW_MPA_LEN_SIZE;
	}
	if (v > cap)
		v = cap;
	if (v > ULPDU_LIMIT)
		v = ULPDU_LIMIT;
	return ulpdu_align(v);
}

static int params_p2p(const struct xiw_mpa_params *req,
		      const struct xiw_mpa_params *rep,
		      struct xiw_conn_params *out)
{
	out->rtr = XIW_RTR_NONE;
	if (req->version != XIW_MPA_REV2 || rep->version != XIW_MPA_REV2 ||
	    !req->p2p || !rep->p2p)
		return 0;
	out->rtr = rtr_of(rep);
	if (out->rtr == XIW_RTR_NONE || !rtr_offered(req, out->rtr)) {
		xiw_log(XIW_LOG_WARN,
			"MPA reply picks no single RTR type the request offered (read %d write %d send %d)",
			rep->rtr_read, rep->rtr_write, rep->rtr_zero_len);
		return -EPROTO;
	}
	return 0;
}

/*
 * May we send FPDUs larger than one segment? Only if the peer announced
 * it takes them: the initiator in its request (0x08), the responder in its
 * reply with 0x08 and 0x04, because a bare 0x08 in a reply can be siw's
 * echo of our request (siw copies the request's bits). Otherwise FPDUs
 * stay MSS-aligned, as RFC 5044 §8 expects of a sender.
 */
static bool peer_takes_big_fpdus(const struct xiw_mpa_params *req,
				 const struct xiw_mpa_params *rep,
				 bool initiator)
{
	if (initiator)
		return rep->big_fpdu && rep->big_ack;
	return req->big_fpdu;
}

int xiw_cm_conn_params(const struct xiw_mpa_params *req,
		       const struct xiw_mpa_params *rep, bool initiator,
		       uint32_t mss, struct xiw_conn_params *out)
{
	const struct xiw_mpa_params *mine = initiator ? req : rep;
	const struct xiw_mpa_params *peer = initiator ? rep : req;
	bool big = peer_takes_big_fpdus(req, rep, initiator);

	memset(out, 0, sizeof(*out));
	if (rep->version > req->version) {
		xiw_log(XIW_LOG_WARN, "MPA reply revision %u above the request's %u",
			rep->version, req->version);
		return -EPROTO;
	}
	out->initiator = initiator;
	out->crc = req->crc || rep->crc;
	out->markers_tx = peer->markers;
	out->markers_rx = mine->markers;
	out->max_ulpdu = xiw_cm_max_ulpdu(mss, out->markers_tx, big);
	if (rep->version == XIW_MPA_REV2) {
		out->ird = mine->ird;
		out->ord = min16(mine->ord, peer->ird);
	} else {
		out->ird = 1;	/* RFC 6581 §5: v1 peers are assumed 1/1 */
		out->ord = 1;
	}
	return params_p2p(req, rep, out);
}
