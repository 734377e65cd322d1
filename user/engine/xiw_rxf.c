// SPDX-License-Identifier: MIT
/*
 * FPDU receive state machine (pull model), RFC 5044 §4 framing, §4.3
 * markers, §6 CRC; header validation per RFC 5040 §7 / RFC 5041 §7.
 *
 * The engine asks xiw_rx_iov() where the next bytes go, receives into
 * those buffers, and reports the count with xiw_rx_advance(). Header and
 * trailer land in rx scratch, markers in rx->mbuf, payload directly in the
 * memory place() chose; nothing is copied here. Both functions walk the
 * same deterministic layout from the same state, so advance() knows which
 * byte went where without remembering the iovec list.
 *
 * Layout per FPDU: [16 header octets] [rest of header] (place) [payload]
 * [pad + CRC]. Every valid FPDU starts with at least 16 header octets
 * (tagged DDP header + MPA length), so the first 16 can be read together
 * with the previous FPDU's trailer. Markers (when negotiated) occupy the
 * stream octets [k*512, k*512 + 4) counted from the first octet after the
 * MPA frame (rx->stream_off), see xiwarp/wire/mpa.h.
 */
#include <errno.h>
#include <string.h>
#include "xiwarp/wire/mpa.h"
#include "xiwarp/wire/ddp.h"
#include "xiwarp/wire/rdmap.h"
#include "xiw_proto.h"

#define MI XIW_MARKER_INTERVAL
#define RX_HDR_MIN (XIW_MPA_LEN_SIZE + XIW_DDP_TAGGED_HDR)	/* 16 */

enum {
	RX_HDR,		/* first RX_HDR_MIN header octets */
	RX_HDR_REST,	/* up to the full header length */
	RX_PLACE,	/* header complete, place() pending (-EAGAIN) */
	RX_PAYLOAD,
	RX_TRAILER,	/* pad + CRC */
	RX_ERROR,
};

/* A cursor: where the next octet of the stream goes. */
struct rx_cur {
	int state;
	uint32_t have;
	int dst_idx;
	size_t dst_off;
	uint64_t pos;
};

#define RX_BAD_DECODED 0x80000000u	/* bad_len: re-encode rx->hdr */

/* Header octets of the current FPDU received so far (see rx->bad_len). */
static uint32_t rx_hdr_bytes(const struct xiw_rx *rx)
{
	switch (rx->state) {
	case RX_HDR:
	case RX_HDR_REST:
		return rx->have;
	case RX_PLACE:
	case RX_PAYLOAD:
	case RX_TRAILER:
		return RX_BAD_DECODED;
	}
	return 0;
}

static int rx_fail(struct xiw_rx *rx, int term)
{
	if (rx->state == RX_ERROR)
		return rx->error;
	rx->error = term > 0 ? term : XIW_TERM_CATASTROPHIC;
	rx->bad_len = rx_hdr_bytes(rx);
	rx->state = RX_ERROR;
	return rx->error;
}

/** xiw_rx_term_hdr() - see xiw_proto.h. */
size_t xiw_rx_term_hdr(const struct xiw_rx *rx, uint8_t out[XIW_MAX_HDR_LEN])
{
	struct xiw_fpdu_hdr h = rx->hdr;

	if (rx->state != RX_ERROR)
		return 0;
	if (rx->bad_len == RX_BAD_DECODED)
		return xiw_hdr_encode(&h, out);
	memcpy(out, rx->hbuf, rx->bad_len);
	return rx->bad_len;
}

static uint32_t rx_trailer_len(const struct xiw_rx *rx)
{
	/* RFC 5044 §4.1: the CRC field is there even when CRC is off */
	return rx->hdr.pad + XIW_MPA_CRC_SIZE;
}

static void rx_new_fpdu(struct xiw_rx *rx)
{
	rx->state = RX_HDR;
	rx->have = 0;
	rx->need = RX_HDR_MIN;
	rx->crc_state = XIW_CRC32C_INIT;
	rx->fpdu_start = (uint32_t)rx->stream_off;
	rx->len_pos = (uint32_t)rx->stream_off;
}

/** xiw_rx_init() - see xiw_proto.h. */
void xiw_rx_init(struct xiw_rx *rx, const struct xiw_rx_ops *ops, void *arg,
		 bool crc, bool markers, uint32_t max_ulpdu)
{
	memset(rx, 0, sizeof(*rx));
	rx->ops = ops;
	rx->arg = arg;
	rx->crc = crc;
	rx->markers = markers;
	rx->max_ulpdu = max_ulpdu;
	rx_new_fpdu(rx);
}

/* ------------------------------------------------------ transitions --- */

static int rx_finish(struct xiw_rx *rx)
{
	int ret;

	if (rx->crc) {
		uint8_t want[XIW_MPA_CRC_SIZE];

		xiw_crc32c_wire(rx->crc_state, want);
		if (memcmp(want, rx->tbuf + rx->hdr.pad, sizeof(want)))
			return rx_fail(rx, XIW_TERM_MPA_CRC);
	}
	ret = rx->ops->done(rx->arg, &rx->hdr);
	if (ret)
		return rx_fail(rx, ret);
	rx_new_fpdu(rx);
	return 0;
}

/*
 * The payload's last octet is received into rx->last and stored to its
 * place here, once, after all the others. Applications poll the last
 * byte of an RDMA WRITE's buffer for its arrival (rsockets' riostream,
 * many MPI and benchmark codes) and may write that byte as soon as they
 * see it. A memcpy or copy_to_user with "rep movsb" (ERMS/FSRM, glibc's
 * choice on this machine) may store a byte again when it is interrupted
 * and restarted: 52 re-stores of the last byte in 1.9 M 64-byte copies
 * measured here, a lost update (riostream hung at 1 in ~30000 rounds).
 */
static void rx_hold_last(struct xiw_rx *rx)
{
	struct iovec *t = &rx->dst[rx->ndst - 1];

	while (!t->iov_len)	/* a payload has a non-empty piece */
		t--;
	rx->last_dst = (uint8_t *)t->iov_base + t->iov_len - 1;
	t->iov_len--;	/* may leave it empty: settle steps over it */
	rx->dst[rx->ndst++] = (struct iovec){ .iov_base = &rx->last,
					      .iov_len = 1 };
}

static void rx_store_last(struct xiw_rx *rx)
{
	if (!rx->last_dst)
		return;
	/* release: every earlier payload store is visible before it */
	__atomic_store_n(rx->last_dst, rx->last, __ATOMIC_RELEASE);
	rx->last_dst = NULL;
}

/* Run the transitions that need no further octets. */
static int rx_settle(struct xiw_rx *rx)
{
	for (;;) {
		if (rx->state == RX_PAYLOAD && rx->dst_idx < rx->ndst &&
		    rx->dst_off == rx->dst[rx->dst_idx].iov_len) {
			rx->dst_idx++;
			rx->dst_off = 0;
		} else if (rx->state == RX_PAYLOAD && rx->dst_idx == rx->ndst) {
			rx_store_last(rx);
			rx->state = RX_TRAILER;
			rx->have = 0;
			rx->need = rx_trailer_len(rx);
		} else if (rx->state == RX_TRAILER && rx->have == rx->need) {
			return rx_finish(rx);
		} else {
			return 0;
		}
	}
}

static int rx_check_dst(const struct xiw_rx *rx)
{
	size_t sum = 0;

	if (rx->ndst < 0 || rx->ndst > XIW_RX_MAX_DST)
		return -EINVAL;
	for (int i = 0; i < rx->ndst; i++) {
		if (!rx->dst[i].iov_base && rx->dst[i].iov_len)
			return -EINVAL;
		sum += rx->dst[i].iov_len;
	}
	return sum == rx->hdr.payload_len ? 0 : -EINVAL;
}

/* Return 0 (placed), -EAGAIN (retry later) or the TERMINATE code. */
static int rx_place(struct xiw_rx *rx)
{
	int ret;

	rx->ndst = 0;
	ret = rx->ops->place(rx->arg, &rx->hdr, rx->dst, &rx->ndst);
	if (ret == -EAGAIN) {
		rx->state = RX_PLACE;
		return -EAGAIN;
	}
	if (ret)
		return rx_fail(rx, ret);
	if (rx_check_dst(rx))
		return rx_fail(rx, XIW_TERM_CATASTROPHIC);
	rx->last_dst = NULL;
	if (rx->hdr.payload_len)
		rx_hold_last(rx);
	rx->state = RX_PAYLOAD;
	rx->dst_idx = 0;
	rx->dst_off = 0;
	return rx_settle(rx);
}

/* Opcodes whose whole header a record carries (no RDMAP body, no
 * Invalidate STag): the others are always decoded. */
static bool rx_meta_op(uint8_t op, bool tagged)
{
	if (tagged)
		return op == RDMAP_WRITE || op == RDMAP_READ_RESP;
	return op == RDMAP_SEND || op == RDMAP_SEND_SE;
}

/*
 * The header from the transport's record of this FPDU instead of decoding
 * rx->hbuf. The record was found for exactly this stream offset (so for
 * this connection and sequence number, xiw_llp_fpdu_meta); here it must
 * agree with the octets we hold where that costs nothing (MPA length and
 * opcode octet, the header length xiw_hdr_len() found) and be sane as
 * xiw_hdr_decode() would demand (RFC 5041 §7.2 QN, RFC 5044 §4.1 length).
 * Return: XIW_LLP_META_USED (rx->hdr filled), _NONE or _MISMATCH.
 */
static enum xiw_llp_meta_res rx_hdr_meta(struct xiw_rx *rx)
{
	uint16_t hl = (uint16_t)(rx->need - XIW_MPA_LEN_SIZE);
	struct xiw_fpdu_hdr *h = &rx->hdr;
	struct xiw_llp_fpdu m;

	if (!rx->ops->meta || rx->markers ||
	    rx->ops->meta(rx->arg, rx->len_pos, &m) != 1)
		return XIW_LLP_META_NONE;
	if (m.ulpdu_len != xiw_get_be16(rx->hbuf) ||
	    m.opcode != (rx->hbuf[3] & XIW_RDMAP_OPCODE_MASK) ||
	    m.tagged != !!(rx->hbuf[2] & XIW_DDP_T) ||
	    hl < (m.tagged ? XIW_DDP_TAGGED_HDR : XIW_DDP_UNTAGGED_HDR))
		return XIW_LLP_META_MISMATCH;
	if (!rx_meta_op(m.opcode, m.tagged))
		return XIW_LLP_META_NONE;	/* right, but not enough */
	if (hl != (m.tagged ? XIW_DDP_TAGGED_HDR : XIW_DDP_UNTAGGED_HDR) ||
	    m.ulpdu_len < hl || m.ulpdu_len > rx->max_ulpdu ||
	    (!m.tagged && m.qn != XIW_DDP_QN_SEND))
		return XIW_LLP_META_MISMATCH;
	memset(h, 0, sizeof(*h));
	h->ulpdu_len = m.ulpdu_len;
	h->hdr_len = hl;
	h->payload_len = m.ulpdu_len - hl;
	h->pad = (uint8_t)xiw_mpa_pad(m.ulpdu_len);
	h->opcode = m.opcode;
	h->tagged = m.tagged;
	h->last = m.last;
	h->stag = m.stag;
	h->to = m.to;
	h->qn = m.qn;
	h->msn = m.msn;
	h->mo = m.mo;
	return XIW_LLP_META_USED;
}

static int rx_hdr_done(struct xiw_rx *rx)
{
	enum xiw_llp_meta_res res = rx_hdr_meta(rx);
	int ret = 0;

	if (res != XIW_LLP_META_USED)
		ret = xiw_hdr_decode(rx->hbuf, rx->need, rx->max_ulpdu, &rx->hdr);
	if (ret)
		return rx_fail(rx, ret);
	if (rx->ops->meta_done && !rx->markers)
		rx->ops->meta_done(rx->arg, res, rx->len_pos + XIW_MPA_LEN_SIZE +
				   rx->hdr.ulpdu_len + rx->hdr.pad +
				   XIW_MPA_CRC_SIZE);
	ret = rx_place(rx);
	return ret == -EAGAIN ? 0 : ret;
}

static int rx_hdr_min_done(struct xiw_rx *rx)
{
	int hl = xiw_hdr_len(rx->hbuf);

	if (hl < 0)
		return rx_fail(rx, -hl);
	if (hl > RX_HDR_MIN) {
		rx->state = RX_HDR_REST;
		rx->need = (uint32_t)hl;
		return 0;
	}
	return rx_hdr_done(rx);
}

/* ---------------------------------------------------------- layout --- */

/* The buffer the octet at @c goes to (ignoring markers) and the octets
 * left in that piece; 0 when @c has nothing to receive in this state. */
static size_t rx_region(const struct xiw_rx *rx, const struct rx_cur *c,
			uint8_t **base)
{
	switch (c->state) {
	case RX_HDR:
	case RX_HDR_REST:
		*base = (uint8_t *)rx->hbuf + c->have;
		return (c->state == RX_HDR ? RX_HDR_MIN : rx->need) - c->have;
	case RX_PAYLOAD:
		if (c->dst_idx >= rx->ndst)
			return 0;
		*base = (uint8_t *)rx->dst[c->dst_idx].iov_base + c->dst_off;
		return rx->dst[c->dst_idx].iov_len - c->dst_off;
	case RX_TRAILER:
		*base = (uint8_t *)rx->tbuf + c->have;
		return rx_trailer_len(rx) - c->have;
	}
	return 0;
}

/* Move @c past a finished piece; false when the iovec list must stop. */
static bool rx_cur_next(const struct xiw_rx *rx, struct rx_cur *c)
{
	switch (c->state) {
	case RX_PAYLOAD:
		if (c->dst_idx < rx->ndst) {
			c->dst_idx++;
			c->dst_off = 0;
			return true;
		}
		c->state = RX_TRAILER;
		c->have = 0;
		return true;
	case RX_TRAILER:
		c->state = RX_HDR;	/* the next FPDU's first octets */
		c->have = 0;
		return true;
	}
	return false;	/* header: its length/placement is not known yet */
}

static void rx_cur_step(struct rx_cur *c, size_t n)
{
	if (c->state == RX_PAYLOAD)
		c->dst_off += n;
	else
		c->have += (uint32_t)n;
	c->pos += n;
}

static size_t rx_marker_left(const struct xiw_rx *rx, uint64_t pos)
{
	if (!rx->markers || pos % MI >= XIW_MPA_MARKER_SIZE)
		return 0;
	return XIW_MPA_MARKER_SIZE - pos % MI;
}

static size_t rx_to_marker(const struct xiw_rx *rx, uint64_t pos, size_t n)
{
	if (rx->markers && n > MI - pos % MI)
		return MI - pos % MI;
	return n;
}

/* The slot for the marker octet at stream offset @pos. */
static uint8_t *rx_mslot(struct xiw_rx *rx, uint64_t pos)
{
	return rx->mbuf[(pos / MI) % XIW_RX_MARKER_SLOTS] + pos % MI;
}

static int rx_add(struct iovec *iov, int n, void *base, size_t len)
{
	iov[n].iov_base = base;
	iov[n].iov_len = len;
	return n + 1;
}

/** xiw_rx_iov() - see xiw_proto.h. */
int xiw_rx_iov(struct xiw_rx *rx, struct iovec *iov, int max)
{
	struct rx_cur c;
	bool started_hdr;
	int n = 0, nmark = 0;

	if (rx->state == RX_PLACE) {
		int ret = rx_place(rx);

		if (ret)
			return ret == -EAGAIN ? -EAGAIN : -ret;
	}
	if (rx->state == RX_ERROR)
		return -rx->error;
	c = (struct rx_cur){ rx->state, rx->have, rx->dst_idx, rx->dst_off,
			     rx->stream_off };
	started_hdr = c.state == RX_HDR || c.state == RX_HDR_REST;
	while (n < max) {
		uint8_t *base = NULL;
		size_t len = rx_region(rx, &c, &base);

		if (!len) {
			/* stop after the next FPDU's first 16 octets */
			if (c.state == RX_HDR && !started_hdr)
				break;
			if (!rx_cur_next(rx, &c))
				break;
			continue;
		}
		if (rx_marker_left(rx, c.pos)) {
			if (++nmark > XIW_RX_MARKER_SLOTS)
				break;	/* slots would be reused */
			len = rx_marker_left(rx, c.pos);
			n = rx_add(iov, n, rx_mslot(rx, c.pos), len);
			c.pos += len;
			continue;
		}
		len = rx_to_marker(rx, c.pos, len);
		n = rx_add(iov, n, base, len);
		rx_cur_step(&c, len);
	}
	return n;
}

/* ---------------------------------------------------------- advance --- */

static bool rx_marker_covered(const struct xiw_rx *rx)
{
	if (!XIW_MPA_CRC_COVERS_MARKERS || !rx->crc)
		return false;
	return rx->state != RX_TRAILER || rx->have <= rx->hdr.pad;
}

static int rx_marker_check(struct xiw_rx *rx)
{
	uint32_t mpos = (uint32_t)rx->stream_off - XIW_MPA_MARKER_SIZE;
	/* RFC 5044 §4.3: the 2 low bits of FPDUPTR are treated as zero */
	uint16_t ptr = xiw_get_be16(rx_mslot(rx, mpos) + 2) & ~3u;

	if (rx->state == RX_HDR && rx->have == 0) {
		/* precedes the length field of the FPDU that follows */
		rx->len_pos = (uint32_t)rx->stream_off;
		return ptr == 0 ? 0 : rx_fail(rx, XIW_TERM_MPA_MARKER);
	}
	if (ptr == ((uint16_t)(mpos - rx->len_pos) & ~3u) ||
	    ptr == ((uint16_t)(mpos - rx->fpdu_start) & ~3u))
		return 0;
	return rx_fail(rx, XIW_TERM_MPA_MARKER);
}

static int rx_eat_marker(struct xiw_rx *rx, size_t *len)
{
	size_t n = XIW_MPA_MARKER_SIZE - rx->stream_off % MI;

	if (n > *len)
		n = *len;
	if (rx_marker_covered(rx))
		rx->crc_state = xiw_crc32c(rx->crc_state,
					   rx_mslot(rx, rx->stream_off), n);
	rx->stream_off += n;
	*len -= n;
	if (rx->stream_off % MI == XIW_MPA_MARKER_SIZE)
		return rx_marker_check(rx);
	return 0;
}

static int rx_piece_done(struct xiw_rx *rx)
{
	switch (rx->state) {
	case RX_HDR:
		return rx->have == RX_HDR_MIN ? rx_hdr_min_done(rx) : 0;
	case RX_HDR_REST:
		return rx->have == rx->need ? rx_hdr_done(rx) : 0;
	default:
		return rx_settle(rx);
	}
}

/* Account @n octets that went to @base in the current state. */
static void rx_eat_data(struct xiw_rx *rx, const uint8_t *base, size_t n)
{
	size_t crc_n = n;

	if (rx->state == RX_TRAILER)
		crc_n = rx->have >= rx->hdr.pad ? 0 :
			(rx->hdr.pad - rx->have < n ? rx->hdr.pad - rx->have : n);
	if (rx->crc && crc_n)
		rx->crc_state = xiw_crc32c(rx->crc_state, base, crc_n);
	if (rx->state == RX_PAYLOAD)
		rx->dst_off += n;
	else
		rx->have += (uint32_t)n;
	rx->stream_off += n;
}

/** xiw_rx_advance() - see xiw_proto.h. */
int xiw_rx_advance(struct xiw_rx *rx, size_t len)
{
	int ret = 0;

	while (len && !ret) {
		struct rx_cur c = { rx->state, rx->have, rx->dst_idx,
				    rx->dst_off, rx->stream_off };
		uint8_t *base = NULL;
		size_t n;

		if (rx->state == RX_ERROR)
			return rx->error;
		if (rx_marker_left(rx, rx->stream_off)) {
			ret = rx_eat_marker(rx, &len);
			continue;
		}
		n = rx_region(rx, &c, &base);
		if (!n)		/* more octets than xiw_rx_iov() offered */
			return rx_fail(rx, XIW_TERM_CATASTROPHIC);
		n = rx_to_marker(rx, rx->stream_off, n < len ? n : len);
		rx_eat_data(rx, base, n);
		len -= n;
		ret = rx_piece_done(rx);
	}
	return rx->state == RX_ERROR ? rx->error : 0;
}
