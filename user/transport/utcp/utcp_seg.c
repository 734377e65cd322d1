// SPDX-License-Identifier: MIT
/*
 * utcp: IPv4+TCP segment parsing and building, software checksums
 * (RFC 1071 Internet checksum, RFC 9293 §3.1 pseudo-header).
 */
#include <errno.h>
#include <string.h>
#include "utcp_int.h"

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

void utcp_csum_init(struct utcp_csum *cs, uint32_t seed)
{
	cs->sum = seed;
	cs->odd = false;
}

/* Sum big-endian 16-bit words; a byte left over pairs with the first byte
 * of the next piece (cs->odd). 64-bit accumulator, folded at the end. */
void utcp_csum_add(struct utcp_csum *cs, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t s = cs->sum;

	if (!len)
		return;
	if (cs->odd) {
		s += *b++;
		len--;
		cs->odd = false;
	}
	if (len >= 16) {
		/* bulk: 32-byte AVX2 blocks (utcp_csum_simd.c), then native
		 * 64-bit loads, 32-bit halves into a 64-bit sum;
		 * folded, that is the sum of host-order 16-bit words, and the
		 * one's complement sum of byte-swapped words is the swapped
		 * sum (RFC 1071 §2(B)) */
		size_t n = len & ~(size_t)7;
		uint64_t acc = 0, v;

		for (size_t i = utcp_csum_simd(NULL, b, n, &acc); i < n; i += 8) {
			memcpy(&v, b + i, 8);
			acc += (uint32_t)v;
			acc += v >> 32;
		}
		while (acc >> 16)
			acc = (acc & 0xffff) + (acc >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		acc = (uint16_t)(acc << 8 | acc >> 8);
#endif
		s += acc;
		b += n;
		len -= n;
	}
	while (len >= 8) {
		s += (uint32_t)rd16(b) + rd16(b + 2) + rd16(b + 4) + rd16(b + 6);
		b += 8;
		len -= 8;
	}
	while (len >= 2) {
		s += rd16(b);
		b += 2;
		len -= 2;
	}
	if (len) {
		s += (uint32_t)*b << 8;
		cs->odd = true;
	}
	cs->sum = s;
}

void utcp_csum_copy(struct utcp_csum *cs, void *dst, const void *src, size_t len)
{
	/* one pass over @src: each 32-byte block (AVX2, utcp_csum_simd.c)
	 * or 8-byte word is loaded once, stored and added (the same sums as
	 * utcp_csum_add's bulk loop); the odd byte before and the short tail
	 * go through utcp_csum_add */
	const uint8_t *s = src;
	uint8_t *d = dst;
	size_t n;
	uint64_t acc = 0, v;

	if (cs->odd && len) {
		*d = *s;
		utcp_csum_add(cs, d++, 1);
		s++;
		len--;
	}
	n = len & ~(size_t)7;
	for (size_t i = utcp_csum_simd(d, s, n, &acc); i < n; i += 8) {
		memcpy(&v, s + i, 8);
		memcpy(d + i, &v, 8);
		acc += (uint32_t)v;
		acc += v >> 32;
	}
	if (n) {
		while (acc >> 16)
			acc = (acc & 0xffff) + (acc >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		acc = (uint16_t)(acc << 8 | acc >> 8);
#endif
		cs->sum += acc;
	}
	if (len > n) {
		memcpy(d + n, s + n, len - n);
		utcp_csum_add(cs, d + n, len - n);
	}
}

uint16_t utcp_csum_final(const struct utcp_csum *cs)
{
	uint64_t s = cs->sum;

	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

#define TCP_CSUM_AT (20 + 16)	/* IPv4 header without options + TCP offset */

void utcp_csum_partial(struct utcp_csum *cs, const uint8_t *hdr)
{
	utcp_csum_init(cs, rd16(hdr + TCP_CSUM_AT));
}

void utcp_csum_store(const struct utcp_csum *cs, uint8_t *hdr)
{
	wr16(hdr + TCP_CSUM_AT, utcp_csum_final(cs));
}

uint32_t utcp_csum_pseudo(uint32_t saddr, uint32_t daddr, uint8_t proto, uint32_t len)
{
	return (saddr >> 16) + (saddr & 0xffff) + (daddr >> 16) + (daddr & 0xffff) +
	       proto + (len >> 16) + (len & 0xffff);
}

int utcp_seg_parse(const uint8_t *pkt, size_t len, bool verify_csum, struct utcp_seg *seg)
{
	struct utcp_csum cs;
	uint32_t ihl, tot, tlen, doff;
	const uint8_t *t;

	if (!pkt || len < 20)
		return -EINVAL;
	if ((pkt[0] >> 4) != 4)
		return -EINVAL;
	ihl = (uint32_t)(pkt[0] & 0xf) * 4;
	if (ihl < 20 || ihl > len)
		return -EINVAL;
	tot = rd16(pkt + 2);
	if (tot < ihl || tot > len)	/* len > tot: link-layer padding */
		return -EINVAL;
	if (rd16(pkt + 6) & 0x3fff)	/* MF or fragment offset */
		return -EINVAL;
	if (pkt[9] != 6)
		return -EINVAL;
	utcp_csum_init(&cs, 0);
	utcp_csum_add(&cs, pkt, ihl);
	if (utcp_csum_final(&cs) != 0)
		return -EBADMSG;
	tlen = tot - ihl;
	if (tlen < 20)
		return -EINVAL;
	t = pkt + ihl;
	doff = (uint32_t)(t[12] >> 4) * 4;
	if (doff < 20 || doff > tlen)
		return -EINVAL;
	seg->saddr = rd32(pkt + 12);
	seg->daddr = rd32(pkt + 16);
	if (verify_csum) {
		utcp_csum_init(&cs, utcp_csum_pseudo(seg->saddr, seg->daddr, 6, tlen));
		utcp_csum_add(&cs, t, tlen);
		if (utcp_csum_final(&cs) != 0)
			return -EBADMSG;
	}
	seg->sport = rd16(t);
	seg->dport = rd16(t + 2);
	seg->seq = rd32(t + 4);
	seg->ack = rd32(t + 8);
	seg->flags = t[13] & 0x3f;
	seg->wnd = rd16(t + 14);
	seg->opts = t + 20;
	seg->optlen = doff - 20;
	seg->data = t + doff;
	seg->len = tlen - doff;
	return 0;
}

/*
 * Write the IPv4 (20 B) + TCP header with @optlen option bytes into @hdr
 * and both checksums (the TCP one over header, options and the @niov
 * payload pieces; with cfg.output_sums_payload only the folded sum of
 * pseudo-header and header, which @output finishes). Return: header
 * length.
 */
int utcp_build_hdr(struct utcp_conn *c, uint8_t *hdr, uint32_t seq, uint32_t ack,
		   uint8_t flags, uint16_t wnd, const uint8_t *opts,
		   uint32_t optlen, const struct utcp_iov *iov, int niov,
		   uint32_t plen)
{
	uint32_t thl = 20 + optlen, tlen = thl + plen;
	uint8_t *t = hdr + 20;
	struct utcp_csum cs;

	memset(hdr, 0, 20 + thl);
	hdr[0] = 0x45;
	wr16(hdr + 2, (uint16_t)(20 + tlen));
	wr16(hdr + 4, c->ip_id++);
	wr16(hdr + 6, 0x4000);		/* DF */
	hdr[8] = c->cfg.ttl;
	hdr[9] = 6;
	wr32(hdr + 12, c->cfg.laddr);
	wr32(hdr + 16, c->cfg.raddr);
	utcp_csum_init(&cs, 0);
	utcp_csum_add(&cs, hdr, 20);
	wr16(hdr + 10, utcp_csum_final(&cs));

	wr16(t, c->cfg.lport);
	wr16(t + 2, c->cfg.rport);
	wr32(t + 4, seq);
	wr32(t + 8, ack);
	t[12] = (uint8_t)((thl / 4) << 4);
	t[13] = flags;
	wr16(t + 14, wnd);
	if (optlen)
		memcpy(t + 20, opts, optlen);
	utcp_csum_init(&cs, utcp_csum_pseudo(c->cfg.laddr, c->cfg.raddr, 6, tlen));
	utcp_csum_add(&cs, t, thl);
	if (c->cfg.output_sums_payload) {
		/* ~final is the folded sum: @output adds the payload */
		wr16(t + 16, (uint16_t)~utcp_csum_final(&cs));
		return (int)(20 + thl);
	}
	for (int i = 0; i < niov; i++)
		utcp_csum_add(&cs, iov[i].base, iov[i].len);
	wr16(t + 16, utcp_csum_final(&cs));
	return (int)(20 + thl);
}
