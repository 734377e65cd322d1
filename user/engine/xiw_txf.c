// SPDX-License-Identifier: MIT
/*
 * FPDU transmit framing, RFC 5044 §4 (FPDU format), §4.3 (markers), §6
 * (CRC). Builds an iovec list: header from scratch, payload pieces as
 * given (never copied), markers and pad + CRC from scratch.
 *
 * Marker placement (RFC 5044 §4.3, see also xiwarp/wire/mpa.h): the
 * sender's FPDU stream starts at the first octet after its MPA request or
 * reply; tx->stream_off counts octets from there, markers included. A
 * marker occupies [k*512, k*512 + 4) for every k >= 0, so the first one
 * precedes the first FPDU's length field. FPDUPTR = octets from the
 * FPDU's ULPDU length field back to the marker, 0 when the marker sits
 * right before that length field. A marker at the exact end of an FPDU
 * belongs to the next FPDU.
 */
#include <errno.h>
#include <string.h>
#include "xiwarp/wire/mpa.h"
#include "xiw_proto.h"

#define MI XIW_MARKER_INTERVAL
#define NMARKERS (sizeof(((struct xiw_txf_scratch *)0)->markers) / 4)

struct txw {
	struct iovec *out;
	int n, max;
	uint64_t pos;		/* stream offset of the next octet */
	uint64_t len_pos;	/* stream offset of the ULPDU length field */
	bool markers, crc_on;
	uint32_t crc;
	unsigned int nm;
	struct xiw_txf_scratch *s;
};

static int txw_add(struct txw *w, const void *base, size_t len, bool crc)
{
	if (w->n >= w->max)
		return -E2BIG;
	w->out[w->n].iov_base = (void *)base;
	w->out[w->n].iov_len = len;
	w->n++;
	if (crc && w->crc_on)
		w->crc = xiw_crc32c(w->crc, base, len);
	w->pos += len;
	return 0;
}

static int txw_marker(struct txw *w, bool crc)
{
	uint8_t *m;
	uint64_t ptr;

	if (w->nm >= NMARKERS)
		return -E2BIG;
	m = w->s->markers[w->nm++];
	ptr = w->pos > w->len_pos ? w->pos - w->len_pos : 0;
	m[0] = 0;
	m[1] = 0;
	xiw_put_be16(m + 2, (uint16_t)ptr);
	return txw_add(w, m, XIW_MPA_MARKER_SIZE,
		       crc && XIW_MPA_CRC_COVERS_MARKERS);
}

/*
 * Emit @len octets at @base, inserting markers where the stream needs
 * them; @crc: the octets (and markers among them) are CRC-covered.
 */
static int txw_emit(struct txw *w, const uint8_t *base, size_t len, bool crc)
{
	int err;

	while (len) {
		size_t chunk = len;

		if (w->markers && w->pos % MI == 0) {
			err = txw_marker(w, crc);
			if (err)
				return err;
		}
		if (w->markers && chunk > MI - w->pos % MI)
			chunk = MI - w->pos % MI;
		err = txw_add(w, base, chunk, crc);
		if (err)
			return err;
		base += chunk;
		len -= chunk;
	}
	return 0;
}

/*
 * RFC 5044 §6: pad, then the CRC of everything before the CRC field. The
 * CRC field is part of every FPDU (§4.1): without negotiated CRC it is
 * still sent, as zeros, and a receiver skips it unchecked. siw always
 * reads it; leaving it out shifts every later FPDU by 4 octets.
 */
static int txf_trailer(struct txw *w, uint8_t *trailer, unsigned int pad)
{
	int err = 0;

	if (pad)
		err = txw_emit(w, trailer, pad, true);
	if (!err && w->markers && w->pos % MI == 0)
		err = txw_marker(w, true);	/* in front of the CRC: covered */
	if (err)
		return err;
	if (w->crc_on)
		xiw_crc32c_wire(w->crc, trailer + pad);
	return txw_emit(w, trailer + pad, XIW_MPA_CRC_SIZE, false);
}

static int txf_payload(struct txw *w, const struct iovec *pl, int npl)
{
	for (int i = 0; i < npl; i++) {
		int err = txw_emit(w, pl[i].iov_base, pl[i].iov_len, true);

		if (err)
			return err;
	}
	return 0;
}

/** xiw_txf_build() - frame one FPDU, see xiw_proto.h. */
int xiw_txf_build(struct xiw_txf *tx, struct xiw_fpdu_hdr *h,
		  const struct iovec *pl, int npl, struct xiw_txf_scratch *s,
		  struct iovec *out, int max_out)
{
	struct txw w = {
		.out = out, .max = max_out, .pos = tx->stream_off,
		.markers = tx->markers, .crc_on = tx->crc,
		.crc = XIW_CRC32C_INIT, .s = s,
	};
	size_t sum = 0, hlen;
	int err;

	for (int i = 0; i < npl; i++)
		sum += pl[i].iov_len;
	if (sum != h->payload_len)
		return -EINVAL;
	hlen = xiw_hdr_encode(h, s->hdr);
	w.len_pos = w.pos;
	if (w.markers && w.pos % MI == 0)
		w.len_pos += XIW_MPA_MARKER_SIZE;
	memset(s->trailer, 0, sizeof(s->trailer));
	err = txw_emit(&w, s->hdr, hlen, true);
	if (!err)
		err = txf_payload(&w, pl, npl);
	if (!err)
		err = txf_trailer(&w, s->trailer, h->pad);
	if (err)
		return err;
	tx->stream_off = w.pos;
	return w.n;
}

/** xiw_txf_payload_max() - see xiw_proto.h. */
uint32_t xiw_txf_payload_max(const struct xiw_txf *tx, size_t hdr_len)
{
	uint32_t budget = tx->max_ulpdu, ulpdu, hdr;

	/* markers take wire room too: keep the FPDU within the same size */
	if (tx->markers)
		budget -= XIW_MPA_MARKER_SIZE *
			  ((budget + XIW_MPA_LEN_SIZE + XIW_MPA_CRC_SIZE) / MI + 1);
	/* largest ULPDU with (2 + ULPDU) % 4 == 0, so no pad is needed */
	ulpdu = ((budget + XIW_MPA_LEN_SIZE) & ~3u) - XIW_MPA_LEN_SIZE;
	hdr = (uint32_t)hdr_len - XIW_MPA_LEN_SIZE;

	return ulpdu > hdr ? ulpdu - hdr : 1;
}
