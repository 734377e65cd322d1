// SPDX-License-Identifier: MIT
/*
 * MPA request / reply / reject frames, RFC 5044 §7.1 (v1) and RFC 6581 §5
 * (v2: IRD/ORD word and RTR flags at the start of the private data).
 */
#include <errno.h>
#include <string.h>
#include "xiwarp/wire/mpa.h"
#include "xiw_proto.h"

static uint8_t mpa_flags(const struct xiw_mpa_params *p, bool is_reply)
{
	uint8_t f = 0;

	if (p->markers)
		f |= XIW_MPA_FLAG_M;
	if (p->crc)
		f |= XIW_MPA_FLAG_C;
	if (is_reply && p->reject)
		f |= XIW_MPA_FLAG_R;
	if (p->version == XIW_MPA_REV2)
		f |= XIW_MPA_FLAG_ENHANCED;
	if (p->big_fpdu)
		f |= XIW_MPA_FLAG_GSO;
	if (is_reply && p->big_ack)
		f |= XIW_MPA_FLAG_BIG_ACK;
	return f;
}

static void mpa_put_v2(const struct xiw_mpa_params *p, uint8_t *w)
{
	uint16_t ird = p->ird & XIW_MPA_V2_MASK;
	uint16_t ord = p->ord & XIW_MPA_V2_MASK;

	if (p->p2p)
		ird |= XIW_MPA_V2_IRD_P2P;
	if (p->rtr_zero_len)
		ird |= XIW_MPA_V2_IRD_ZERO_RTR;
	if (p->rtr_write)
		ord |= XIW_MPA_V2_ORD_WRITE_RTR;
	if (p->rtr_read)
		ord |= XIW_MPA_V2_ORD_READ_RTR;
	xiw_put_be16(w, ird);
	xiw_put_be16(w + 2, ord);
}

/**
 * xiw_mpa_encode() - build an MPA request or reply (RFC 5044 §7.1,
 * RFC 6581 §5). For v2 the IRD/ORD word precedes @p->pdata, so
 * @p->plen may be at most 508. See xiw_proto.h.
 */
int xiw_mpa_encode(bool is_reply, const struct xiw_mpa_params *p,
		   uint8_t *buf, size_t cap)
{
	size_t v2 = p->version == XIW_MPA_REV2 ? XIW_MPA_V2_LEN : 0;
	size_t pd = v2 + p->plen;
	size_t len = XIW_MPA_HDR_LEN + pd;

	if (p->version != XIW_MPA_REV1 && p->version != XIW_MPA_REV2)
		return -EINVAL;
	if (pd > XIW_MPA_MAX_PD || (p->plen && !p->pdata))
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	memcpy(buf, is_reply ? XIW_MPA_KEY_REP : XIW_MPA_KEY_REQ,
	       XIW_MPA_KEY_LEN);
	buf[XIW_MPA_OFF_FLAGS] = mpa_flags(p, is_reply);
	buf[XIW_MPA_OFF_REV] = p->version;
	xiw_put_be16(buf + XIW_MPA_OFF_PDLEN, (uint16_t)pd);
	if (v2)
		mpa_put_v2(p, buf + XIW_MPA_HDR_LEN);
	if (p->plen)
		memcpy(buf + XIW_MPA_HDR_LEN + v2, p->pdata, p->plen);
	return (int)len;
}

static void mpa_get_v2(const uint8_t *w, struct xiw_mpa_params *out)
{
	uint16_t ird = xiw_get_be16(w), ord = xiw_get_be16(w + 2);

	out->p2p = ird & XIW_MPA_V2_IRD_P2P;
	out->rtr_zero_len = ird & XIW_MPA_V2_IRD_ZERO_RTR;
	out->rtr_write = ord & XIW_MPA_V2_ORD_WRITE_RTR;
	out->rtr_read = ord & XIW_MPA_V2_ORD_READ_RTR;
	out->ird = ird & XIW_MPA_V2_MASK;
	out->ord = ord & XIW_MPA_V2_MASK;
}

/**
 * xiw_mpa_parse() - parse an MPA request/reply, see xiw_proto.h.
 * Checks the key first (so a non-MPA peer is rejected after 16 bytes),
 * then rev (1 or 2), pd_len <= 512 and, for rev 2, pd_len >= 4. The
 * R bit is accepted in a request but reported as reject only in a reply;
 * reserved flag bits are ignored (RFC 5044: not checked on receive).
 */
int xiw_mpa_parse(bool is_reply, const uint8_t *buf, size_t len,
		  struct xiw_mpa_params *out)
{
	const char *key = is_reply ? XIW_MPA_KEY_REP : XIW_MPA_KEY_REQ;
	size_t klen = len < XIW_MPA_KEY_LEN ? len : XIW_MPA_KEY_LEN;
	uint8_t flags, rev;
	uint16_t pd;

	if (memcmp(buf, key, klen))
		return -EPROTO;
	if (len < XIW_MPA_HDR_LEN)
		return 0;
	flags = buf[XIW_MPA_OFF_FLAGS];
	rev = buf[XIW_MPA_OFF_REV];
	pd = xiw_get_be16(buf + XIW_MPA_OFF_PDLEN);
	if (rev != XIW_MPA_REV1 && rev != XIW_MPA_REV2)
		return -EPROTO;
	if (pd > XIW_MPA_MAX_PD || (rev == XIW_MPA_REV2 && pd < XIW_MPA_V2_LEN))
		return -EPROTO;
	if (len < (size_t)XIW_MPA_HDR_LEN + pd)
		return 0;

	memset(out, 0, sizeof(*out));
	out->version = rev;
	out->markers = flags & XIW_MPA_FLAG_M;
	out->crc = flags & XIW_MPA_FLAG_C;
	out->reject = is_reply && (flags & XIW_MPA_FLAG_R);
	out->big_fpdu = flags & XIW_MPA_FLAG_GSO;
	out->big_ack = is_reply && (flags & XIW_MPA_FLAG_BIG_ACK);
	out->pdata = buf + XIW_MPA_HDR_LEN;
	out->plen = pd;
	if (rev == XIW_MPA_REV2) {
		mpa_get_v2(buf + XIW_MPA_HDR_LEN, out);
		out->pdata += XIW_MPA_V2_LEN;
		out->plen -= XIW_MPA_V2_LEN;
	}
	if (!out->plen)
		out->pdata = NULL;
	return XIW_MPA_HDR_LEN + pd;
}
