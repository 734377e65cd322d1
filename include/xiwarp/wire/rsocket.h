/* SPDX-License-Identifier: MIT */
/*
 * rsockets wire format: what rdma-core 44's librdmacm (rsocket.c) puts on
 * an RC connection, as seen on iWARP, plus xiwarp's zero-copy extension
 * (seed 004). Constants, structs and small accessors only; the parser is
 * user/sockets/xrs_wire.c.
 *
 * rdma-core 44, stream sockets on iWARP (verified against its rsocket.c):
 *  - connection: rdma_cm private data `struct xrs_conn_data` (version 1,
 *    40 bytes, network byte order) in the MPA request and reply;
 *  - buffer copy only: the sender RDMA WRITEs data into the receiver's
 *    receive buffer (advertised by SGL entries), then, because iWARP has
 *    no WRITE_WITH_IMM, SENDs the 32-bit message as a 4-byte inline SEND
 *    (`RS_OPT_MSG_SEND`). The message is in the sender's host byte order
 *    (rdma-core copies the uint32_t as is: little-endian on x86);
 *  - message = op (3 bits) << 29 | data (29 bits). Ops 001, 011 and 101
 *    are unused by rdma-core; xiwarp's extension takes them;
 *  - receive buffer credits: the receiver RDMA WRITEs a `struct xrs_sge`
 *    (the free half of its receive buffer; host order, byte-swapped when
 *    the peers' RS_CONN_FLAG_NET differ) into the sender's target SGL
 *    array, then sends RS_OP_SGL whose data is the new sequence limit;
 *  - riomap: `struct xrs_iomap` entries written into the peer's iomap
 *    array (after its SGL entries), announced with RS_OP_IOMAP_SGL.
 */
#ifndef XIWARP_WIRE_RSOCKET_H
#define XIWARP_WIRE_RSOCKET_H

#include <stdint.h>

/* ------------------------------------------------------ private data --- */

#define XRS_CONN_VERSION	1
#define XRS_CONN_FLAG_NET	0x01	/* sender is a big-endian host */
#define XRS_CONN_FLAG_IOMAP	0x02	/* sender has an iomap array */
/*
 * xiwarp: the sender speaks the seed-004 zero-copy extension (SrcAvail /
 * SinkAvail / SendSm, below). rdma-core 44 checks only NET and IOMAP, so a
 * plain rsockets peer ignores it; the extension is used only when both
 * sides set it. reserved[0] then carries XRS_XZC_VERSION.
 */
#define XRS_CONN_FLAG_XZC	0x80
#define XRS_XZC_VERSION		1

/** struct xrs_wire_sge - address/key/length triple, network order in
 *  private data. */
struct xrs_wire_sge {
	uint64_t addr;		/* __be64 */
	uint32_t key;		/* __be32 */
	uint32_t length;	/* __be32 */
} __attribute__((packed));

/**
 * struct xrs_conn_data - rdma-core's `struct rs_conn_data` (version 1).
 * @credits: receive WRs the sender posted (its rq_size), __be16.
 * @target_iomap_size: iomap entries, 8-bit scaled (xrs_scale_to_value).
 * @target_sgl: the sender's SGL array (addr, rkey, number of entries):
 *              the peer writes credit updates there.
 * @data_buf:   the first half of the sender's receive buffer, given away
 *              at connect time.
 */
struct xrs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;
	uint8_t reserved[3];
	uint8_t target_iomap_size;
	struct xrs_wire_sge target_sgl;
	struct xrs_wire_sge data_buf;
} __attribute__((packed));

#define XRS_CONN_DATA_LEN 40
_Static_assert(sizeof(struct xrs_conn_data) == XRS_CONN_DATA_LEN,
	       "rs_conn_data is 40 bytes");

/* ------------------------------------------------- RDMA-written data --- */

/** struct xrs_sge - an SGL entry as written into the peer (host order). */
struct xrs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/** struct xrs_iomap - an iomap entry (riomap): offset and target. */
struct xrs_iomap {
	uint64_t offset;
	struct xrs_sge sge;
};

#define XRS_SGL_SIZE	2	/* rdma-core RS_SGL_SIZE */

/* ----------------------------------------------------------- messages --- */

#define XRS_MSG_SIZE		4	/* a plain message: one uint32_t */

enum xrs_op {
	XRS_OP_DATA = 0,	/* data: bytes written before this message */
	XRS_OP_XZ_SRCAVAIL = 1,	/* xiwarp: source buffer available (rdma-core: RSVD_DATA_MORE) */
	XRS_OP_WRITE = 2,	/* local only (riowrite completion), never sent */
	XRS_OP_XZ_SINKAVAIL = 3,/* xiwarp: sink buffer available (rdma-core: RSVD_DRA_MORE) */
	XRS_OP_SGL = 4,		/* credit update: data = new sequence limit */
	XRS_OP_XZ_CTRL = 5,	/* xiwarp: RdCompl / SendSm / WrCompl (rdma-core: RSVD) */
	XRS_OP_IOMAP_SGL = 6,	/* iomap entry written: data = index */
	XRS_OP_CTRL = 7,	/* data = XRS_CTRL_* */
};

enum xrs_ctrl {
	XRS_CTRL_DISCONNECT = 0,
	XRS_CTRL_KEEPALIVE = 1,
	XRS_CTRL_SHUTDOWN = 2,	/* sender will send no more (SHUT_WR) */
};

#define XRS_MSG_DATA_MASK 0x1FFFFFFFu

static inline uint32_t xrs_msg_make(unsigned int op, uint32_t data)
{
	return ((uint32_t)op << 29) | (data & XRS_MSG_DATA_MASK);
}

static inline unsigned int xrs_msg_op(uint32_t msg) { return msg >> 29; }
static inline uint32_t xrs_msg_data(uint32_t msg) { return msg & XRS_MSG_DATA_MASK; }

/*
 * ------------------------------------------ xiwarp zero-copy extension ---
 *
 * Only between peers that both set XRS_CONN_FLAG_XZC. An extension
 * message is a SEND of `struct xrs_xmsg` (24 bytes, little-endian fields)
 * into a receive buffer of XRS_XMSG_SIZE: both sides post receive buffers
 * that large when they offer the extension (a plain peer's 4-byte
 * messages land in them too). The first word is a normal message word.
 *
 *  SRCAVAIL  (source -> sink, stream-ordered, takes a data credit)
 *            hdr data = transfer id (16 bits); addr/stag/len = the
 *            source's registered buffer (remote read) holding the next
 *            len stream bytes. The sink RDMA READs it into the reader's
 *            buffer and answers RDCOMPL, or SENDSM to get the rest by
 *            buffer copy. The source waits for one of the two.
 *  SINKAVAIL (sink -> source, control)
 *            hdr data = sink id (16 bits); addr/stag/len = the reader's
 *            registered buffer (remote write); aux = the number of
 *            stream-ordered messages the sink had received when it
 *            posted it. The source uses it only if it has sent exactly
 *            that many (nothing in flight): it RDMA WRITEs up to len
 *            bytes there and sends WRCOMPL; otherwise it drops it, and
 *            the sink, seeing another message first, knows it was dropped.
 *  CTRL      hdr data = XRS_XZ_* << 16 | id; aux = bytes.
 *            RDCOMPL (sink -> source): aux bytes of SrcAvail id read; done.
 *            SENDSM  (sink -> source): aux bytes read; send the rest by
 *                    buffer copy.
 *            WRCOMPL (source -> sink, stream-ordered, takes a data
 *                    credit): aux bytes written into SinkAvail id.
 */
#define XRS_XMSG_SIZE	32	/* receive buffer per WR with the extension */

struct xrs_xmsg {
	uint32_t hdr;		/* message word, host order like a plain one */
	uint32_t aux;		/* __le32 */
	uint64_t addr;		/* __le64 */
	uint32_t stag;		/* __le32 */
	uint32_t len;		/* __le32 */
} __attribute__((packed));

#define XRS_XMSG_LEN 24
_Static_assert(sizeof(struct xrs_xmsg) == XRS_XMSG_LEN, "xmsg is 24 bytes");

enum xrs_xz_ctrl {
	XRS_XZ_RDCOMPL = 1,
	XRS_XZ_SENDSM = 2,
	XRS_XZ_WRCOMPL = 3,
};

#define XRS_XZ_ID_MASK 0xFFFFu

/* ------------------------------------------------------------ scaling --- */

/* rdma-core's 8-bit "scale" encoding of the iomap size (rs_value_to_scale). */
static inline int xrs_value_to_scale(int value, int bits)
{
	return value <= (1 << (bits - 1)) ?
	       value : (1 << (bits - 1)) | (value >> bits);
}

static inline int xrs_scale_to_value(int value, int bits)
{
	return value <= (1 << (bits - 1)) ?
	       value : (value & ~(1 << (bits - 1))) << bits;
}

#endif /* XIWARP_WIRE_RSOCKET_H */
