/* SPDX-License-Identifier: MIT */
/*
 * MPA wire format: RFC 5044 (Marker PDU Aligned framing) and RFC 6581
 * (MPA v2, enhanced connection establishment). Constants and small
 * accessors only; the codec is user/engine/xiw_mpa.c and xiw_txf.c/xiw_rxf.c.
 */
#ifndef XIWARP_WIRE_MPA_H
#define XIWARP_WIRE_MPA_H

#include <stdint.h>

/* RFC 5044 §7.1: 16-byte keys of the request / reply frames */
#define XIW_MPA_KEY_REQ "MPA ID Req Frame"
#define XIW_MPA_KEY_REP "MPA ID Rep Frame"
#define XIW_MPA_KEY_LEN 16

/*
 * RFC 5044 §7.1 frame: key[16] | flags(8) | rev(8) | pd_len(16) | pdata.
 * The flags byte: M, C, R as in RFC 5044; 0x10 "enhanced" (siw sets it
 * with rev 2, RFC 6581); 0x08 siw's experimental GSO ("big FPDU") bit, i.e.
 * 0x0800 of the 16-bit flags/rev word: "the sender of this frame accepts
 * FPDUs larger than one TCP segment".
 *
 * siw as responder copies the request's flag bits into its reply, so a
 * 0x08 in a reply may be nothing but an echo. An xiwarp responder that
 * really accepts big FPDUs also sets 0x04 (XIW_MPA_FLAG_BIG_ACK), a
 * reserved bit that xiwarp never puts in a request and so never appears
 * in an echo. RFC 5044 §7.1: reserved bits are not checked on receive.
 */
#define XIW_MPA_FLAG_M		0x80
#define XIW_MPA_FLAG_C		0x40
#define XIW_MPA_FLAG_R		0x20
#define XIW_MPA_FLAG_ENHANCED	0x10
#define XIW_MPA_FLAG_GSO	0x08
#define XIW_MPA_BITS_GSO	0x0800	/* same bit in the 16-bit word */
#define XIW_MPA_FLAG_BIG_ACK	0x04	/* reply only: 0x08 is no echo */
#define XIW_MPA_FLAG_RES_MASK	0x03

#define XIW_MPA_OFF_FLAGS	16
#define XIW_MPA_OFF_REV		17
#define XIW_MPA_OFF_PDLEN	18

#define XIW_MPA_REV1 1
#define XIW_MPA_REV2 2

/* RFC 6581 §5: IRD/ORD word at the start of v2 private data */
#define XIW_MPA_V2_IRD_P2P	0x8000	/* I: peer-to-peer mode */
#define XIW_MPA_V2_IRD_ZERO_RTR	0x4000	/* L: zero-length SEND as RTR */
#define XIW_MPA_V2_ORD_WRITE_RTR 0x8000	/* W: zero-length WRITE as RTR */
#define XIW_MPA_V2_ORD_READ_RTR	0x4000	/* R: zero-length READ as RTR */
#define XIW_MPA_V2_MASK		0x3fff

/* RFC 5044 §4: FPDU = ULPDU length(16) | ULPDU | pad | CRC(32) */
#define XIW_MPA_LEN_SIZE	2
#define XIW_MPA_CRC_SIZE	4
#define XIW_MPA_MARKER_SIZE	4

/**
 * RFC 5044 §4.3 markers, as xiwarp reads them (see xiw_txf.c):
 * - a marker sits at every stream octet whose offset from the first octet
 *   after the MPA request/reply (the first octet of the first FPDU of that
 *   direction) is a multiple of 512, the first one at offset 0;
 * - marker = 16-bit reserved (0) | 16-bit FPDUPTR; FPDUPTR is the number of
 *   octets from the FPDU's ULPDU length field back to the marker's first
 *   octet, 0 when the marker immediately precedes the length field;
 * - markers are part of the FPDU that contains them and are covered by the
 *   CRC (every octet from the FPDU start up to the CRC field, as Wireshark's
 *   iwarp_mpa and the OSC software iWARP compute it).
 */
#define XIW_MPA_CRC_COVERS_MARKERS 1

struct xiw_mpa_marker {
	uint8_t rsvd[2];
	uint8_t fpduptr[2];
};

static inline uint16_t xiw_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t xiw_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t xiw_get_be64(const uint8_t *p)
{
	return (uint64_t)xiw_get_be32(p) << 32 | xiw_get_be32(p + 4);
}

static inline void xiw_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void xiw_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void xiw_put_be64(uint8_t *p, uint64_t v)
{
	xiw_put_be32(p, (uint32_t)(v >> 32));
	xiw_put_be32(p + 4, (uint32_t)v);
}

/* RFC 5044 §4.2: pad so that (2-byte length + ULPDU) is a multiple of 4 */
static inline unsigned int xiw_mpa_pad(uint32_t ulpdu_len)
{
	return (4 - ((ulpdu_len + XIW_MPA_LEN_SIZE) & 3)) & 3;
}

/*
 * TERMINATE codes of the LLP (MPA) layer, RFC 5044 §8 (layer 2, type 0).
 * XIW_TERM() comes from user/engine/xiw_proto.h; define it here too if a
 * wire header is used alone.
 */
#ifndef XIW_TERM
#define XIW_TERM(layer, etype, ecode) \
	(0x10000 | ((layer) & 0xf) << 12 | ((etype) & 0xf) << 8 | ((ecode) & 0xff))
#endif
#define XIW_TERM_LAYER_LLP_ 2
#define XIW_MPA_ETYPE		0x0
#define XIW_MPA_ECODE_TCP_LOST	0x01	/* unexpected TCP close/reset */
#define XIW_MPA_ECODE_CRC	0x02	/* received CRC does not match */
#define XIW_MPA_ECODE_MARKER	0x03	/* marker and FPDU start mismatch */
#define XIW_MPA_ECODE_BAD_REQ	0x04	/* invalid MPA request/reply */
/* RFC 6581 §8: enhanced connection establishment */
#define XIW_MPA_ECODE_LOCAL_CATA 0x05
#define XIW_MPA_ECODE_NO_IRD	0x06	/* insufficient IRD resources */
#define XIW_MPA_ECODE_NO_RTR	0x07	/* no matching RTR model */

#define XIW_TERM_MPA_TCP_LOST \
	XIW_TERM(XIW_TERM_LAYER_LLP_, XIW_MPA_ETYPE, XIW_MPA_ECODE_TCP_LOST)
#define XIW_TERM_MPA_CRC \
	XIW_TERM(XIW_TERM_LAYER_LLP_, XIW_MPA_ETYPE, XIW_MPA_ECODE_CRC)
#define XIW_TERM_MPA_MARKER \
	XIW_TERM(XIW_TERM_LAYER_LLP_, XIW_MPA_ETYPE, XIW_MPA_ECODE_MARKER)
/* A ULPDU length outside [header, max FPDU] means the FPDU framing is
 * lost; RFC 5044 has no own code for it, we report the FPDU-start one. */
#define XIW_TERM_MPA_BAD_LEN	XIW_TERM_MPA_MARKER
#define XIW_TERM_MPA_BAD_REQ \
	XIW_TERM(XIW_TERM_LAYER_LLP_, XIW_MPA_ETYPE, XIW_MPA_ECODE_BAD_REQ)
#define XIW_TERM_MPA_LOCAL_CATA \
	XIW_TERM(XIW_TERM_LAYER_LLP_, XIW_MPA_ETYPE, XIW_MPA_ECODE_LOCAL_CATA)
#define XIW_TERM_MPA_NO_IRD \
	XIW_TERM(XIW_TERM_LAYER_LLP_, XIW_MPA_ETYPE, XIW_MPA_ECODE_NO_IRD)
#define XIW_TERM_MPA_NO_RTR \
	XIW_TERM(XIW_TERM_LAYER_LLP_, XIW_MPA_ETYPE, XIW_MPA_ECODE_NO_RTR)

#endif /* XIWARP_WIRE_MPA_H */
