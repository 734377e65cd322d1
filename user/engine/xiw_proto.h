/* SPDX-License-Identifier: MIT */
/*
 * xiwarp protocol layer: MPA (RFC 5044 / RFC 6581) connection frames,
 * FPDU framing with markers, padding and CRC32C, and the DDP (RFC 5041) /
 * RDMAP (RFC 5040) header codec and receive state machine.
 *
 * This layer does no I/O and holds no locks: the engine gives it bytes and
 * buffers. Wire structs live in include/xiwarp/wire/{mpa,ddp,rdmap}.h.
 *
 * Errors: 0 or negative errno, except where a TERMINATE code is returned
 * (XIW_TERM(), always > 0).
 */
#ifndef XIW_PROTO_H
#define XIW_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "llp.h"

/* ------------------------------------------------------------ CRC32C --- */

/**
 * xiw_crc32c() - CRC32C (Castagnoli, RFC 3720 B.4) update.
 * @crc: running state; start with XIW_CRC32C_INIT.
 * Return: new state. Final value is ~state; see xiw_crc32c_wire().
 * Uses the SSE4.2 crc32 instruction when the CPU has it.
 */
#define XIW_CRC32C_INIT 0xffffffffu
uint32_t xiw_crc32c(uint32_t crc, const void *buf, size_t len);
/** xiw_crc32c_wire() - the 4 trailer bytes for final @state, in the byte
 *  order MPA uses on the wire (what tshark's iwarp_mpa calls "Good"). */
void xiw_crc32c_wire(uint32_t state, uint8_t out[4]);
/** xiw_crc32c_table_only() - the portable table path (for tests). */
uint32_t xiw_crc32c_table_only(uint32_t crc, const void *buf, size_t len);

/* ------------------------------------------------ TERMINATE codes --- */

/* RFC 5040 §7.2/§7.3 layer, error type, error code packed into one int > 0 */
#define XIW_TERM(layer, etype, ecode) \
	(0x10000 | ((layer) & 0xf) << 12 | ((etype) & 0xf) << 8 | ((ecode) & 0xff))
#define XIW_TERM_LAYER(t) (((t) >> 12) & 0xf)
#define XIW_TERM_ETYPE(t) (((t) >> 8) & 0xf)
#define XIW_TERM_ECODE(t) ((t) & 0xff)

enum { XIW_TERM_LAYER_RDMAP = 0, XIW_TERM_LAYER_DDP = 1, XIW_TERM_LAYER_LLP = 2 };
/* The named codes (XIW_TERM_INVALID_STAG, ..., one per RFC table row) are
 * defined in include/xiwarp/wire/rdmap.h (RDMAP), ddp.h (DDP), mpa.h (LLP). */

/* ------------------------------------------------- MPA negotiation --- */

/**
 * struct xiw_mpa_params - what one side puts in / found in an MPA
 * request or reply (RFC 5044 §7.1, RFC 6581 §5).
 * @version:  1 or 2.
 * @markers:  M bit (this side wants to RECEIVE markers).
 * @crc:      C bit.
 * @reject:   R bit (reply only).
 * @p2p:      v2: peer-to-peer mode requested (I bit in IRD field).
 * @rtr_write, @rtr_read, @rtr_zero_len: v2 RTR type bits.
 * @ird, @ord: v2 IRD/ORD (14 bits each); v1: 0.
 * @big_fpdu: siw's experimental "GSO" bit 0x0800: the sender of the frame
 *            accepts FPDUs up to 64 KB.
 * @big_ack:  reply only, xiwarp's bit 0x0400: the responder's @big_fpdu
 *            is its own, not an echo of the request (siw echoes).
 * @pdata, @plen: private data (after the v2 IRD/ORD word), <= 512 bytes.
 */
struct xiw_mpa_params {
	uint8_t version;
	bool markers, crc, reject, big_fpdu, big_ack;
	bool p2p, rtr_write, rtr_read, rtr_zero_len;
	uint16_t ird, ord;
	const uint8_t *pdata;
	uint16_t plen;
};

#define XIW_MPA_HDR_LEN 20	/* key(16) + flags/rev(2) + pd_len(2) */
#define XIW_MPA_V2_LEN 4	/* IRD/ORD word at the start of private data */
#define XIW_MPA_MAX_PD 512	/* RFC 5044: private data length limit */
#define XIW_MPA_MAX_FRAME (XIW_MPA_HDR_LEN + XIW_MPA_MAX_PD)

/**
 * xiw_mpa_encode() - build an MPA request (@is_reply false) or reply.
 * @buf, @cap: output; XIW_MPA_MAX_FRAME always suffices.
 * Return: frame length, or -EINVAL (plen too long for the version), -ENOSPC.
 */
int xiw_mpa_encode(bool is_reply, const struct xiw_mpa_params *p,
		   uint8_t *buf, size_t cap);

/**
 * xiw_mpa_parse() - parse a received MPA request/reply.
 * @buf, @len: the bytes received so far.
 * @out: filled on success; out->pdata points into @buf.
 * Return: the frame length (> 0) once complete, 0 if more bytes are needed
 * (at least XIW_MPA_HDR_LEN, then the whole private data), or -EPROTO (bad
 * key, rev not 1/2, pd_len > 512, v2 without its IRD/ORD word).
 */
int xiw_mpa_parse(bool is_reply, const uint8_t *buf, size_t len,
		  struct xiw_mpa_params *out);

/* ----------------------------------------------- DDP/RDMAP headers --- */

/**
 * struct xiw_fpdu_hdr - decoded DDP+RDMAP header of one FPDU (host order).
 * Which fields are meaningful depends on @tagged and @opcode.
 * @ulpdu_len: MPA ULPDU length (DDP/RDMAP header + payload), RFC 5044 §4.
 * @hdr_len:   DDP/RDMAP header bytes (excluding the 2-byte MPA length).
 * @payload_len: ULPDU payload bytes (ulpdu_len - hdr_len).
 * @pad:       0..3 pad bytes after the payload.
 * @opcode:    RDMAP opcode (RDMAP_WRITE, RDMAP_READ_REQ, ... wire/rdmap.h).
 * @last:      DDP L bit.
 * @stag, @to: tagged: sink STag and tagged offset of the first payload byte.
 * @qn, @msn, @mo: untagged: queue number, message sequence number, offset.
 * @inval_stag: SEND_INV / SEND_SE_INV: the STag to invalidate.
 * @rd_*:      READ request (RFC 5040 §4.4): sink STag/TO, size, source STag/TO.
 * @term_ctrl: TERMINATE control word (layer/type/code/flags) as on the wire.
 */
struct xiw_fpdu_hdr {
	uint16_t ulpdu_len;
	uint16_t hdr_len;
	uint32_t payload_len;
	uint8_t pad;
	uint8_t opcode;
	bool tagged, last;
	uint32_t stag;
	uint64_t to;
	uint32_t qn, msn, mo;
	uint32_t inval_stag;
	uint32_t rd_sink_stag, rd_size, rd_src_stag;
	uint64_t rd_sink_to, rd_src_to;
	uint32_t term_ctrl;
};

#define XIW_MAX_HDR_LEN 48	/* largest DDP+RDMAP header incl. MPA length */

/**
 * xiw_hdr_encode() - write MPA length + DDP + RDMAP header for @h into @buf.
 * Uses h->tagged/opcode/last and the fields that opcode needs; computes
 * hdr_len from the opcode and ulpdu_len from hdr_len + payload_len.
 * Return: bytes written (<= XIW_MAX_HDR_LEN).
 */
size_t xiw_hdr_encode(struct xiw_fpdu_hdr *h, uint8_t buf[XIW_MAX_HDR_LEN]);

/**
 * xiw_hdr_len() - header length (incl. 2-byte MPA length) implied by the
 * first 4 bytes of an FPDU (MPA length, DDP ctrl, RDMAP ctrl).
 * Return: length, or a TERMINATE code (bad DDP/RDMAP version, unknown
 * opcode, tagged bit wrong for opcode) as a negative number -XIW_TERM(..).
 */
int xiw_hdr_len(const uint8_t first4[4]);

/**
 * xiw_hdr_decode() - decode a complete header (xiw_hdr_len() bytes).
 * Validates: versions, opcode, T bit vs opcode, QN vs opcode, ULPDU length
 * >= header length, MPA length vs max FPDU size @max_ulpdu.
 * Return: 0, or XIW_TERM(...) naming the violated rule.
 */
int xiw_hdr_decode(const uint8_t *buf, size_t len, uint32_t max_ulpdu,
		   struct xiw_fpdu_hdr *h);

/**
 * xiw_term_encode() - prepare a TERMINATE message (RFC 5040 §4.8).
 * @term:    XIW_TERM(...) code to report.
 * @bad_hdr, @bad_len: the offending FPDU's header as received, starting
 *           with its 2-byte MPA length (= DDP segment length), e.g. from
 *           xiw_rx_term_hdr(); NULL/0 when there is none. Copied: the
 *           length (M bit), the DDP header if complete (D bit) and a READ
 *           request's RDMA header if complete (R bit); at most 48 octets.
 * @h:       filled: opcode TERMINATE, untagged, QN 2, MO 0, L 1, term_ctrl
 *           and payload_len; h->msn is kept if non-zero, else set to 1.
 *           The 4-byte control word is part of the header (hdr_len 22).
 * @payload, @cap: receives the copied headers (the TERMINATE payload).
 * Return: payload length (<= XIW_MAX_HDR_LEN; 0 if @cap is too small, in
 * which case nothing is copied and M/D/R stay clear).
 * Send it with xiw_txf_build(tx, h, {payload, len}, ...).
 */
size_t xiw_term_encode(uint32_t term, const uint8_t *bad_hdr, size_t bad_len,
		       struct xiw_fpdu_hdr *h, uint8_t *payload, size_t cap);

/* ----------------------------------------------- FPDU transmit side --- */

#define XIW_MARKER_INTERVAL 512	/* RFC 5044 §5: every 512 octets of stream */

/**
 * struct xiw_txf - per-connection transmit framing state.
 * @crc, @markers: negotiated: append CRC / insert markers (peer asked).
 * @stream_off: bytes of FPDU stream framed so far, markers included. Marker
 *              positions are relative to the first octet after the MPA frame
 *              this side sent in this direction (its request or its reply);
 *              a marker sits at every multiple of 512, the first at 0
 *              (RFC 5044 §4.3; see xiwarp/wire/mpa.h). Start at 0.
 * @max_ulpdu: largest ULPDU to build (MSS-aligned by default).
 */
struct xiw_txf {
	bool crc, markers;
	uint64_t stream_off;
	uint32_t max_ulpdu;
};

/**
 * struct xiw_txf_scratch - bytes the framer creates for one FPDU (header,
 * markers, pad + CRC); must stay alive until the FPDU is fully sent.
 */
struct xiw_txf_scratch {
	uint8_t hdr[XIW_MAX_HDR_LEN];
	uint8_t trailer[8];		/* pad (0..3) + CRC (4) */
	uint8_t markers[160][4];	/* enough for a 64 KB FPDU */
};

/* a 64 KB FPDU with markers: ~130 markers, each splitting the payload
 * (2 iovecs per marker) + header, pad, CRC + the caller's pieces */
#define XIW_TXF_MAX_IOV 320

/**
 * xiw_txf_payload_max() - payload bytes that fit in one FPDU whose header
 * is @hdr_len bytes (incl. MPA length): max_ulpdu - (hdr_len - 2), rounded
 * so the FPDU stays within max_ulpdu. Return: bytes (> 0).
 */
uint32_t xiw_txf_payload_max(const struct xiw_txf *tx, size_t hdr_len);

/**
 * xiw_txf_build() - frame one FPDU: [MPA len|DDP|RDMAP hdr][payload][pad]
 * [CRC], with a marker inserted at every 512-byte stream boundary.
 * @h:   header; h->payload_len must equal the sum of @pl lengths.
 * @pl, @npl: payload pieces (pointers into registered memory; not copied).
 * @s:   scratch for header, markers and trailer.
 * @out, @max_out: iovecs to hand to sendmsg, in order.
 * CRC covers header, payload and pad, not markers (RFC 5044 §6).
 * Advances tx->stream_off by the FPDU's on-wire length.
 * Return: iovec count, or -E2BIG if @max_out is too small (state unchanged).
 */
int xiw_txf_build(struct xiw_txf *tx, struct xiw_fpdu_hdr *h,
		  const struct iovec *pl, int npl, struct xiw_txf_scratch *s,
		  struct iovec *out, int max_out);

/* ------------------------------------------------ FPDU receive side --- */

#define XIW_RX_MAX_DST 16
#define XIW_RX_MARKER_SLOTS 8	/* markers one xiw_rx_iov() list may hold */

/**
 * struct xiw_rx_ops - engine callbacks of the receive machine.
 * @place: a complete, wire-valid header has arrived. Resolve where its
 *   h->payload_len bytes go (STag/PD/access/bounds for tagged; posted
 *   receive, MSN, MO for untagged; READ request/TERMINATE payloads may be
 *   pointed at an engine buffer). Fill @dst (<= XIW_RX_MAX_DST) covering
 *   exactly payload_len bytes (*ndst = 0 when payload_len == 0).
 *   Return 0, XIW_TERM(...) to reject (nothing is placed; the machine
 *   enters the error state), or -EAGAIN: no receive buffer yet; the
 *   machine keeps the header and calls @place again on the next
 *   xiw_rx_iov() (engine stops reading the socket until then).
 * @done: the FPDU is complete and its CRC (if on) was good.
 *   Return 0 or XIW_TERM(...).
 * Both run in the engine thread that called xiw_rx_advance()/xiw_rx_iov().
 */
struct xiw_rx_ops {
	int (*place)(void *arg, const struct xiw_fpdu_hdr *h,
		     struct iovec *dst, int *ndst);
	int (*done)(void *arg, const struct xiw_fpdu_hdr *h);
	/* optional: the transport's record of the FPDU at stream offset
	 * @off (xiw_llp_fpdu_meta) and how it fared (xiw_llp_fpdu_done) */
	int (*meta)(void *arg, uint32_t off, struct xiw_llp_fpdu *out);
	void (*meta_done)(void *arg, enum xiw_llp_meta_res res, uint32_t next_off);
};

/**
 * struct xiw_rx - per-connection receive machine. Opaque to the engine
 * except through the functions below; sized here so it can be embedded.
 */
struct xiw_rx {
	const struct xiw_rx_ops *ops;
	void *arg;
	bool crc, markers;
	uint32_t max_ulpdu;
	uint64_t stream_off;	/* FPDU-stream bytes consumed incl. markers,
				 * from the first octet after the peer's MPA
				 * frame (marker math, as in struct xiw_txf) */
	int state;		/* internal */
	int error;		/* XIW_TERM(...) once failed, else 0 */
	uint32_t crc_state;
	uint32_t need;		/* bytes still wanted in the current state */
	uint32_t have;		/* bytes gathered in the current state */
	uint32_t fpdu_start;	/* stream_off of the current FPDU (markers) */
	uint32_t len_pos;	/* internal: stream_off of its length field */
	uint32_t bad_len;	/* internal: header octets of a failed FPDU */
	struct xiw_fpdu_hdr hdr;
	uint8_t hbuf[XIW_MAX_HDR_LEN];
	uint8_t tbuf[8];	/* pad + CRC */
	uint8_t mbuf[XIW_RX_MARKER_SLOTS][4];	/* internal: markers being
						 * received, by (pos/512) % 8 */
	/* payload pieces; one more than place() may fill: the payload's
	 * last octet is received into @last and stored to @last_dst on its
	 * own (xiw_rxf.c rx_hold_last) */
	struct iovec dst[XIW_RX_MAX_DST + 1];
	int ndst, dst_idx;
	size_t dst_off;
	uint8_t *last_dst;
	uint8_t last;
};

/** xiw_rx_init() - reset @rx for a new FPDU stream (after the MPA reply). */
void xiw_rx_init(struct xiw_rx *rx, const struct xiw_rx_ops *ops, void *arg,
		 bool crc, bool markers, uint32_t max_ulpdu);

/**
 * xiw_rx_iov() - where the next received bytes must go.
 * Fills @iov (<= @max) with buffers in stream order: header bytes, payload
 * straight into the memory @place chose, marker and trailer scratch. The
 * total may exceed what the current FPDU needs only by header bytes of the
 * next FPDU (never payload), so one recvmsg can take trailer + next header.
 * Return: iovec count (> 0); -EAGAIN if @place asked to wait for a receive
 * buffer; or the XIW_TERM(...) code negated once the stream has failed.
 */
int xiw_rx_iov(struct xiw_rx *rx, struct iovec *iov, int max);

/**
 * xiw_rx_advance() - @len bytes were received into the last xiw_rx_iov()
 * buffers (a prefix of them, in order). Runs @place/@done as FPDUs progress,
 * checks markers and CRC.
 * Return: 0, or XIW_TERM(...) (> 0) on the first violation; the stream is
 * dead afterwards (the engine sends TERMINATE and moves the QP to ERROR).
 */
int xiw_rx_advance(struct xiw_rx *rx, size_t len);

/**
 * xiw_rx_term_hdr() - after a failure: the header octets (from the 2-byte
 * MPA length on) of the FPDU that failed, for xiw_term_encode(): as
 * received if the header itself was bad, else re-encoded from the decoded
 * header (the raw octets may already be overwritten by the next FPDU's).
 * Return: their count in @out (0 if none had arrived or no failure).
 */
size_t xiw_rx_term_hdr(const struct xiw_rx *rx, uint8_t out[XIW_MAX_HDR_LEN]);

#endif /* XIW_PROTO_H */
