// SPDX-License-Identifier: MIT
/*
 * DDP (RFC 5041 §4) / RDMAP (RFC 5040 §4, RFC 7306) header codec and the
 * per-header validation that maps each violation to its TERMINATE code
 * (RFC 5040 §7.2).
 */
#include <string.h>
#include "xiwarp/wire/mpa.h"
#include "xiwarp/wire/ddp.h"
#include "xiwarp/wire/rdmap.h"
#include "xiw_proto.h"

/* Wire offsets inside an FPDU (after the 2-byte MPA length). */
#define OFF_DDP		XIW_MPA_LEN_SIZE
#define OFF(x)		(OFF_DDP + (x))
#define OFF_BODY	OFF(XIW_DDP_UNTAGGED_HDR)

struct op_info {
	uint8_t tagged;
	uint8_t qn;
	uint8_t hdr_len;	/* DDP+RDMAP header, without MPA length */
};

/*
 * RFC 5040 §4.3 table + RFC 7306 §8 (atomic requests use the READ request
 * queue, atomic responses QN 3, immediate data the send queue).
 */
static const struct op_info op_table[RDMAP_OPCODE_MAX + 1] = {
	[RDMAP_WRITE] = { 1, 0, XIW_DDP_TAGGED_HDR },
	[RDMAP_READ_REQ] = { 0, XIW_DDP_QN_READ_REQ,
			     XIW_DDP_UNTAGGED_HDR + XIW_RDMAP_READ_REQ_LEN },
	[RDMAP_READ_RESP] = { 1, 0, XIW_DDP_TAGGED_HDR },
	[RDMAP_SEND] = { 0, XIW_DDP_QN_SEND, XIW_DDP_UNTAGGED_HDR },
	[RDMAP_SEND_INV] = { 0, XIW_DDP_QN_SEND, XIW_DDP_UNTAGGED_HDR },
	[RDMAP_SEND_SE] = { 0, XIW_DDP_QN_SEND, XIW_DDP_UNTAGGED_HDR },
	[RDMAP_SEND_SE_INV] = { 0, XIW_DDP_QN_SEND, XIW_DDP_UNTAGGED_HDR },
	[RDMAP_TERMINATE] = { 0, XIW_DDP_QN_TERMINATE,
			      XIW_DDP_UNTAGGED_HDR + XIW_RDMAP_TERM_CTRL_LEN },
	[RDMAP_IMM_DATA] = { 0, XIW_DDP_QN_SEND, XIW_DDP_UNTAGGED_HDR },
	[RDMAP_IMM_DATA_SE] = { 0, XIW_DDP_QN_SEND, XIW_DDP_UNTAGGED_HDR },
	[RDMAP_ATOMIC_REQ] = { 0, XIW_DDP_QN_READ_REQ, XIW_DDP_UNTAGGED_HDR },
	[RDMAP_ATOMIC_RESP] = { 0, XIW_DDP_QN_ATOMIC_RESP,
				XIW_DDP_UNTAGGED_HDR },
};

static void enc_read_req(const struct xiw_fpdu_hdr *h, uint8_t *b)
{
	xiw_put_be32(b + XIW_RDMAP_RR_SINK_STAG, h->rd_sink_stag);
	xiw_put_be64(b + XIW_RDMAP_RR_SINK_TO, h->rd_sink_to);
	xiw_put_be32(b + XIW_RDMAP_RR_SIZE, h->rd_size);
	xiw_put_be32(b + XIW_RDMAP_RR_SRC_STAG, h->rd_src_stag);
	xiw_put_be64(b + XIW_RDMAP_RR_SRC_TO, h->rd_src_to);
}

static void dec_read_req(struct xiw_fpdu_hdr *h, const uint8_t *b)
{
	h->rd_sink_stag = xiw_get_be32(b + XIW_RDMAP_RR_SINK_STAG);
	h->rd_sink_to = xiw_get_be64(b + XIW_RDMAP_RR_SINK_TO);
	h->rd_size = xiw_get_be32(b + XIW_RDMAP_RR_SIZE);
	h->rd_src_stag = xiw_get_be32(b + XIW_RDMAP_RR_SRC_STAG);
	h->rd_src_to = xiw_get_be64(b + XIW_RDMAP_RR_SRC_TO);
}

/**
 * xiw_hdr_encode() - see xiw_proto.h. The T bit and QN follow the opcode
 * (h->tagged and h->qn are set from it); unknown opcodes encode as SEND.
 */
size_t xiw_hdr_encode(struct xiw_fpdu_hdr *h, uint8_t buf[XIW_MAX_HDR_LEN])
{
	const struct op_info *oi;
	uint8_t ddp;

	if (h->opcode > RDMAP_OPCODE_MAX)
		h->opcode = RDMAP_SEND;
	oi = &op_table[h->opcode];
	h->tagged = oi->tagged;
	h->hdr_len = oi->hdr_len;
	h->ulpdu_len = (uint16_t)(h->hdr_len + h->payload_len);
	h->pad = (uint8_t)xiw_mpa_pad(h->ulpdu_len);
	memset(buf, 0, (size_t)XIW_MPA_LEN_SIZE + h->hdr_len);
	xiw_put_be16(buf, h->ulpdu_len);
	ddp = XIW_DDP_VERSION | (h->last ? XIW_DDP_L : 0);
	if (h->tagged) {
		buf[OFF_DDP] = ddp | XIW_DDP_T;
		buf[OFF(1)] = xiw_rdmap_ctrl(h->opcode);
		xiw_put_be32(buf + OFF(XIW_DDP_OFF_STAG), h->stag);
		xiw_put_be64(buf + OFF(XIW_DDP_OFF_TO), h->to);
		return XIW_MPA_LEN_SIZE + h->hdr_len;
	}
	h->qn = oi->qn;
	buf[OFF_DDP] = ddp;
	buf[OFF(1)] = xiw_rdmap_ctrl(h->opcode);
	if (h->opcode == RDMAP_SEND_INV || h->opcode == RDMAP_SEND_SE_INV)
		xiw_put_be32(buf + OFF(XIW_DDP_OFF_RSVDULP), h->inval_stag);
	xiw_put_be32(buf + OFF(XIW_DDP_OFF_QN), h->qn);
	xiw_put_be32(buf + OFF(XIW_DDP_OFF_MSN), h->msn);
	xiw_put_be32(buf + OFF(XIW_DDP_OFF_MO), h->mo);
	if (h->opcode == RDMAP_READ_REQ)
		enc_read_req(h, buf + OFF_BODY);
	else if (h->opcode == RDMAP_TERMINATE)
		xiw_put_be32(buf + OFF_BODY, h->term_ctrl);
	return XIW_MPA_LEN_SIZE + h->hdr_len;
}

/*
 * RFC 5040 §7.2 / RFC 5041 §7: DDP version first (the error type follows
 * the T bit as received), then RDMAP version, then opcode and T bit.
 */
static int hdr_check_ctrl(uint8_t ddp, uint8_t rdmap)
{
	uint8_t op = rdmap & XIW_RDMAP_OPCODE_MASK;
	bool tagged = ddp & XIW_DDP_T;

	if (xiw_ddp_version(ddp) != XIW_DDP_VERSION)
		return tagged ? XIW_TERM_DDP_T_BAD_VER : XIW_TERM_DDP_BAD_VER;
	if (xiw_rdmap_version(rdmap) != XIW_RDMAP_VERSION)
		return XIW_TERM_BAD_RDMAP_VER;
	if (op > RDMAP_OPCODE_MAX || op_table[op].tagged != tagged)
		return XIW_TERM_BAD_OPCODE;
	return 0;
}

/** xiw_hdr_len() - see xiw_proto.h. */
int xiw_hdr_len(const uint8_t first4[4])
{
	int err = hdr_check_ctrl(first4[OFF_DDP], first4[OFF(1)]);

	if (err)
		return -err;
	return XIW_MPA_LEN_SIZE +
	       op_table[first4[OFF(1)] & XIW_RDMAP_OPCODE_MASK].hdr_len;
}

static void dec_untagged(struct xiw_fpdu_hdr *h, const uint8_t *buf)
{
	h->qn = xiw_get_be32(buf + OFF(XIW_DDP_OFF_QN));
	h->msn = xiw_get_be32(buf + OFF(XIW_DDP_OFF_MSN));
	h->mo = xiw_get_be32(buf + OFF(XIW_DDP_OFF_MO));
	if (h->opcode == RDMAP_SEND_INV || h->opcode == RDMAP_SEND_SE_INV)
		h->inval_stag = xiw_get_be32(buf + OFF(XIW_DDP_OFF_RSVDULP));
	if (h->opcode == RDMAP_READ_REQ)
		dec_read_req(h, buf + OFF_BODY);
	else if (h->opcode == RDMAP_TERMINATE)
		h->term_ctrl = xiw_get_be32(buf + OFF_BODY);
}

/**
 * xiw_hdr_decode() - see xiw_proto.h. Order: DDP version, RDMAP version,
 * opcode/T bit, QN (RFC 5041 §7.2 "invalid QN"), then the ULPDU length:
 * shorter than the header or longer than @max_ulpdu is an LLP framing
 * error (XIW_TERM_MPA_BAD_LEN). @len shorter than the header: -catastrophic.
 */
int xiw_hdr_decode(const uint8_t *buf, size_t len, uint32_t max_ulpdu,
		   struct xiw_fpdu_hdr *h)
{
	const struct op_info *oi;
	int hl = len >= 4 ? xiw_hdr_len(buf) : -XIW_TERM_CATASTROPHIC;

	if (hl < 0)
		return -hl;
	if (len < (size_t)hl)
		return XIW_TERM_CATASTROPHIC;
	memset(h, 0, sizeof(*h));
	h->opcode = buf[OFF(1)] & XIW_RDMAP_OPCODE_MASK;
	oi = &op_table[h->opcode];
	h->tagged = oi->tagged;
	h->last = buf[OFF_DDP] & XIW_DDP_L;
	h->hdr_len = oi->hdr_len;
	h->ulpdu_len = xiw_get_be16(buf);
	if (h->tagged) {
		h->stag = xiw_get_be32(buf + OFF(XIW_DDP_OFF_STAG));
		h->to = xiw_get_be64(buf + OFF(XIW_DDP_OFF_TO));
	} else {
		dec_untagged(h, buf);
		if (h->qn != oi->qn)
			return XIW_TERM_DDP_BAD_QN;
	}
	if (h->ulpdu_len < h->hdr_len || h->ulpdu_len > max_ulpdu)
		return XIW_TERM_MPA_BAD_LEN;
	h->payload_len = h->ulpdu_len - h->hdr_len;
	h->pad = (uint8_t)xiw_mpa_pad(h->ulpdu_len);
	return 0;
}

/*
 * RFC 5040 §4.8: how much of @bad to copy and which header-control bits
 * announce it: M the 16-bit DDP segment length (our MPA ULPDU length),
 * D a complete DDP header (14 tagged / 18 untagged octets), R the RDMA
 * header that follows it, which only a READ request has (28 octets).
 * Partial headers are cut back to what the bits describe.
 */
static size_t term_copy_len(const uint8_t *bad, size_t bad_len, uint32_t *ctrl)
{
	size_t ddp, len = 0;

	if (bad_len < XIW_MPA_LEN_SIZE)
		return 0;
	*ctrl |= XIW_RDMAP_TERM_M;
	len = XIW_MPA_LEN_SIZE;
	if (bad_len <= OFF_DDP)
		return len;
	ddp = (bad[OFF_DDP] & XIW_DDP_T) ? XIW_DDP_TAGGED_HDR :
					   XIW_DDP_UNTAGGED_HDR;
	if (bad_len < XIW_MPA_LEN_SIZE + ddp)
		return len;
	*ctrl |= XIW_RDMAP_TERM_D;
	len += ddp;
	if (!(bad[OFF_DDP] & XIW_DDP_T) &&
	    (bad[OFF(1)] & XIW_RDMAP_OPCODE_MASK) == RDMAP_READ_REQ &&
	    bad_len >= len + XIW_RDMAP_READ_REQ_LEN) {
		*ctrl |= XIW_RDMAP_TERM_R;
		len += XIW_RDMAP_READ_REQ_LEN;
	}
	return len;
}

/** xiw_term_encode() - see xiw_proto.h (RFC 5040 §4.8). */
size_t xiw_term_encode(uint32_t term, const uint8_t *bad_hdr, size_t bad_len,
		       struct xiw_fpdu_hdr *h, uint8_t *payload, size_t cap)
{
	uint32_t msn = h->msn ? h->msn : 1, flags = 0;
	uint32_t ctrl = (uint32_t)XIW_TERM_LAYER(term) << 28 |
			(uint32_t)XIW_TERM_ETYPE(term) << 24 |
			(uint32_t)XIW_TERM_ECODE(term) << 16;
	size_t len = bad_hdr ? term_copy_len(bad_hdr, bad_len, &flags) : 0;

	if (len > cap)
		len = 0;
	else
		ctrl |= flags;
	if (len)
		memcpy(payload, bad_hdr, len);
	memset(h, 0, sizeof(*h));
	h->opcode = RDMAP_TERMINATE;
	h->last = true;
	h->qn = XIW_DDP_QN_TERMINATE;
	h->msn = msn;
	h->term_ctrl = ctrl;
	h->hdr_len = XIW_DDP_UNTAGGED_HDR + XIW_RDMAP_TERM_CTRL_LEN;
	h->payload_len = (uint32_t)len;
	h->ulpdu_len = (uint16_t)(h->hdr_len + len);
	h->pad = (uint8_t)xiw_mpa_pad(h->ulpdu_len);
	return len;
}
