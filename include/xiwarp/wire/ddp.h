/* SPDX-License-Identifier: MIT */
/*
 * DDP wire format, RFC 5041 §4. Offsets are relative to the first octet of
 * the DDP header (the octet after the 2-byte MPA ULPDU length).
 */
#ifndef XIWARP_WIRE_DDP_H
#define XIWARP_WIRE_DDP_H

#include <stdint.h>
#include "xiwarp/wire/mpa.h"

/* RFC 5041 §4.2: control octet T | L | rsvd(4) | DV(2) */
#define XIW_DDP_T	0x80
#define XIW_DDP_L	0x40
#define XIW_DDP_RSVD	0x3c
#define XIW_DDP_DV_MASK	0x03
#define XIW_DDP_VERSION	1

/* RFC 5041 §4.3 tagged: ctrl | RsvdULP(8) | STag(32) | TO(64) */
#define XIW_DDP_TAGGED_HDR	14
#define XIW_DDP_OFF_STAG	2
#define XIW_DDP_OFF_TO		6

/* RFC 5041 §4.4 untagged: ctrl | RsvdULP(8) | RsvdULP(32) | QN | MSN | MO */
#define XIW_DDP_UNTAGGED_HDR	18
#define XIW_DDP_OFF_RSVDULP	2	/* RDMAP: invalidate STag */
#define XIW_DDP_OFF_QN		6
#define XIW_DDP_OFF_MSN		10
#define XIW_DDP_OFF_MO		14

/* RFC 5040 §5.1 queue numbers (RFC 7306 §8 adds 3) */
#define XIW_DDP_QN_SEND		0
#define XIW_DDP_QN_READ_REQ	1
#define XIW_DDP_QN_TERMINATE	2
#define XIW_DDP_QN_ATOMIC_RESP	3

static inline int xiw_ddp_version(uint8_t ctrl)
{
	return ctrl & XIW_DDP_DV_MASK;
}

/* TERMINATE codes of the DDP layer, RFC 5041 §7 / RFC 5040 §7.2 (layer 1) */
#define XIW_TERM_LAYER_DDP_	1
#define XIW_DDP_ETYPE_CATA	0x0	/* local catastrophic */
#define XIW_DDP_ETYPE_TAGGED	0x1	/* tagged buffer error */
#define XIW_DDP_ETYPE_UNTAGGED	0x2	/* untagged buffer error */
#define XIW_DDP_ETYPE_RSVD	0x3	/* reserved for the LLP */

/* tagged buffer error codes */
#define XIW_DDP_ECODE_T_INVALID_STAG	0x00
#define XIW_DDP_ECODE_T_BASE_BOUNDS	0x01
#define XIW_DDP_ECODE_T_STAG_NOT_ASSOC	0x02
#define XIW_DDP_ECODE_T_TO_WRAP		0x03
#define XIW_DDP_ECODE_T_VERSION		0x04
/* untagged buffer error codes */
#define XIW_DDP_ECODE_UT_INVALID_QN	0x01
#define XIW_DDP_ECODE_UT_NO_BUF		0x02	/* invalid MSN: no buffer */
#define XIW_DDP_ECODE_UT_BAD_MSN	0x03	/* MSN range not valid */
#define XIW_DDP_ECODE_UT_INVALID_MO	0x04
#define XIW_DDP_ECODE_UT_TOO_LONG	0x05	/* message too long for buffer */
#define XIW_DDP_ECODE_UT_VERSION	0x06

#define XIW_TERM_DDP(et, ec)	XIW_TERM(XIW_TERM_LAYER_DDP_, et, ec)
#define XIW_TERM_DDP_CATASTROPHIC XIW_TERM_DDP(XIW_DDP_ETYPE_CATA, 0)
#define XIW_TERM_DDP_T_INVALID_STAG \
	XIW_TERM_DDP(XIW_DDP_ETYPE_TAGGED, XIW_DDP_ECODE_T_INVALID_STAG)
#define XIW_TERM_DDP_T_BASE_BOUNDS \
	XIW_TERM_DDP(XIW_DDP_ETYPE_TAGGED, XIW_DDP_ECODE_T_BASE_BOUNDS)
#define XIW_TERM_DDP_T_STAG_NOT_ASSOC \
	XIW_TERM_DDP(XIW_DDP_ETYPE_TAGGED, XIW_DDP_ECODE_T_STAG_NOT_ASSOC)
#define XIW_TERM_DDP_T_TO_WRAP \
	XIW_TERM_DDP(XIW_DDP_ETYPE_TAGGED, XIW_DDP_ECODE_T_TO_WRAP)
#define XIW_TERM_DDP_T_BAD_VER \
	XIW_TERM_DDP(XIW_DDP_ETYPE_TAGGED, XIW_DDP_ECODE_T_VERSION)
#define XIW_TERM_DDP_BAD_QN \
	XIW_TERM_DDP(XIW_DDP_ETYPE_UNTAGGED, XIW_DDP_ECODE_UT_INVALID_QN)
#define XIW_TERM_DDP_NO_BUF \
	XIW_TERM_DDP(XIW_DDP_ETYPE_UNTAGGED, XIW_DDP_ECODE_UT_NO_BUF)
#define XIW_TERM_DDP_BAD_MSN \
	XIW_TERM_DDP(XIW_DDP_ETYPE_UNTAGGED, XIW_DDP_ECODE_UT_BAD_MSN)
#define XIW_TERM_DDP_BAD_MO \
	XIW_TERM_DDP(XIW_DDP_ETYPE_UNTAGGED, XIW_DDP_ECODE_UT_INVALID_MO)
#define XIW_TERM_DDP_TOO_LONG \
	XIW_TERM_DDP(XIW_DDP_ETYPE_UNTAGGED, XIW_DDP_ECODE_UT_TOO_LONG)
/* untagged DDP version error; the tagged one is XIW_TERM_DDP_T_BAD_VER */
#define XIW_TERM_DDP_BAD_VER \
	XIW_TERM_DDP(XIW_DDP_ETYPE_UNTAGGED, XIW_DDP_ECODE_UT_VERSION)

#endif /* XIWARP_WIRE_DDP_H */
