/* SPDX-License-Identifier: MIT */
/*
 * RDMAP wire format, RFC 5040 §4 and RFC 7306 (atomics, immediate data).
 * The RDMAP control octet is the second octet of the DDP header.
 */
#ifndef XIWARP_WIRE_RDMAP_H
#define XIWARP_WIRE_RDMAP_H

#include <stdint.h>
#include "xiwarp/wire/ddp.h"

/* RFC 5040 §4.2: control octet RV(2) | rsvd(2) | opcode(4) */
#define XIW_RDMAP_VERSION	1
#define XIW_RDMAP_RV_SHIFT	6
#define XIW_RDMAP_RSVD		0x30
#define XIW_RDMAP_OPCODE_MASK	0x0f

static inline uint8_t xiw_rdmap_ctrl(uint8_t opcode)
{
	return (uint8_t)(XIW_RDMAP_VERSION << XIW_RDMAP_RV_SHIFT |
			 (opcode & XIW_RDMAP_OPCODE_MASK));
}

static inline int xiw_rdmap_version(uint8_t ctrl)
{
	return ctrl >> XIW_RDMAP_RV_SHIFT;
}

enum xiw_rdmap_opcode {
	RDMAP_WRITE = 0x0,
	RDMAP_READ_REQ = 0x1,
	RDMAP_READ_RESP = 0x2,
	RDMAP_SEND = 0x3,
	RDMAP_SEND_INV = 0x4,
	RDMAP_SEND_SE = 0x5,
	RDMAP_SEND_SE_INV = 0x6,
	RDMAP_TERMINATE = 0x7,
	/* RFC 7306 */
	RDMAP_IMM_DATA = 0x8,
	RDMAP_IMM_DATA_SE = 0x9,
	RDMAP_ATOMIC_REQ = 0xa,
	RDMAP_ATOMIC_RESP = 0xb,
	RDMAP_OPCODE_MAX = 0xb,
};

/* RFC 5040 §4.4: READ request body after the untagged DDP header */
#define XIW_RDMAP_READ_REQ_LEN	28
#define XIW_RDMAP_RR_SINK_STAG	0
#define XIW_RDMAP_RR_SINK_TO	4
#define XIW_RDMAP_RR_SIZE	12
#define XIW_RDMAP_RR_SRC_STAG	16
#define XIW_RDMAP_RR_SRC_TO	20

/* RFC 7306: immediate data (8 octets) and atomic bodies are payload */
#define XIW_RDMAP_IMM_LEN	8
#define XIW_RDMAP_ATOMIC_REQ_LEN 52
#define XIW_RDMAP_ATOMIC_RESP_LEN 12

/*
 * RFC 5040 §4.8: TERMINATE control word after the untagged DDP header:
 * layer(4) | etype(4) | ecode(8) | M | D | R | reserved(13), then a 16-bit
 * DDP segment length (if M) and the terminated DDP (D) / RDMA (R) headers.
 */
#define XIW_RDMAP_TERM_CTRL_LEN	4
#define XIW_RDMAP_TERM_M	0x8000	/* DDP segment length valid */
#define XIW_RDMAP_TERM_D	0x4000	/* terminated DDP header included */
#define XIW_RDMAP_TERM_R	0x2000	/* terminated RDMA header included */

/* RFC 5040 §7.1/7.2: RDMAP layer (0) error types and codes */
#define XIW_TERM_LAYER_RDMAP_	0
#define XIW_RDMAP_ETYPE_CATA	0x0	/* local catastrophic */
#define XIW_RDMAP_ETYPE_PROT	0x1	/* remote protection error */
#define XIW_RDMAP_ETYPE_OP	0x2	/* remote operation error */

#define XIW_RDMAP_ECODE_INVALID_STAG	0x00
#define XIW_RDMAP_ECODE_BASE_BOUNDS	0x01
#define XIW_RDMAP_ECODE_ACCESS		0x02
#define XIW_RDMAP_ECODE_STAG_NOT_ASSOC	0x03
#define XIW_RDMAP_ECODE_TO_WRAP		0x04
#define XIW_RDMAP_ECODE_VERSION		0x05
#define XIW_RDMAP_ECODE_OPCODE		0x06
#define XIW_RDMAP_ECODE_CATA_STREAM	0x07
#define XIW_RDMAP_ECODE_CATA_GLOBAL	0x08
#define XIW_RDMAP_ECODE_CANT_INVAL	0x09
#define XIW_RDMAP_ECODE_UNSPEC		0xff

#define XIW_TERM_RDMAP(et, ec)	XIW_TERM(XIW_TERM_LAYER_RDMAP_, et, ec)
#define XIW_TERM_CATASTROPHIC	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_CATA, 0)
#define XIW_TERM_INVALID_STAG \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_PROT, XIW_RDMAP_ECODE_INVALID_STAG)
#define XIW_TERM_BASE_BOUNDS \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_PROT, XIW_RDMAP_ECODE_BASE_BOUNDS)
#define XIW_TERM_ACCESS \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_PROT, XIW_RDMAP_ECODE_ACCESS)
#define XIW_TERM_STAG_NOT_ASSOC \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_PROT, XIW_RDMAP_ECODE_STAG_NOT_ASSOC)
#define XIW_TERM_TO_WRAP \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_PROT, XIW_RDMAP_ECODE_TO_WRAP)
#define XIW_TERM_PROT_CANT_INVAL \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_PROT, XIW_RDMAP_ECODE_CANT_INVAL)
#define XIW_TERM_PROT_UNSPEC \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_PROT, XIW_RDMAP_ECODE_UNSPEC)
#define XIW_TERM_BAD_RDMAP_VER \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_OP, XIW_RDMAP_ECODE_VERSION)
#define XIW_TERM_BAD_OPCODE \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_OP, XIW_RDMAP_ECODE_OPCODE)
#define XIW_TERM_CATA_STREAM \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_OP, XIW_RDMAP_ECODE_CATA_STREAM)
#define XIW_TERM_CATA_GLOBAL \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_OP, XIW_RDMAP_ECODE_CATA_GLOBAL)
#define XIW_TERM_CANT_INVAL \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_OP, XIW_RDMAP_ECODE_CANT_INVAL)
#define XIW_TERM_OP_UNSPEC \
	XIW_TERM_RDMAP(XIW_RDMAP_ETYPE_OP, XIW_RDMAP_ECODE_UNSPEC)

#endif /* XIWARP_WIRE_RDMAP_H */
