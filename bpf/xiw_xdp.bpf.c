// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * xiw_xdp: the XDP half of the xsk transport (AF_XDP + user-space TCP).
 *
 * One xdp.frags program per interface (libxdp's dispatcher fails on these
 * machines). For every frame:
 *   - Ethernet -> IPv4 or IPv6 (no extension headers) -> TCP, every header
 *     read with bpf_xdp_load_bytes, so nothing outside the frame is read
 *     and headers in a fragment (multi-buffer) are found too;
 *   - a segment of a registered connection (xiw_flows, keyed by the
 *     4-tuple as received) or a SYN to a registered listening port
 *     (xiw_listen) is redirected to the AF_XDP socket in the XSKMAP slot of
 *     its RX queue (bpf_redirect_map with XDP_PASS as fallback: no socket
 *     there, the kernel gets it); everything else is XDP_PASS;
 *   - a steered segment in which an FPDU starts gets that FPDU's MPA
 *     length, DDP and RDMAP headers parsed and validated and a struct
 *     xiw_xdp_meta in front of the frame (bpf_xdp_adjust_meta). Which
 *     segments: on an XIW_XDP_FLOW_TRACK flow (any sender; what the engine
 *     sets once MPA is up) the one whose payload covers the flow's
 *     next-FPDU sequence number: the program walks the MPA lengths of the
 *     FPDUs in it (bounded loop) and moves that number past the segment,
 *     so any segmentation works; on an FPDU-aligned flow (RFC 5044 §8,
 *     Appendix A) every segment's first octet (after a marker whose
 *     FPDUPTR is 0). A
 *     malformed header is counted and steered without a record: the engine
 *     parses it again and answers with TERMINATE. Nothing is dropped.
 *
 * Interface: include/xiwarp/abi/xdp.h. Per-CPU counters in xiw_xdp_cnt.
 *
 * Built against the UAPI headers (not vmlinux.h), because the wire
 * headers include <stdint.h>, whose typedefs clash with vmlinux.h's; the
 * Makefile adds -ffreestanding and -I/usr/include/x86_64-linux-gnu.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xiwarp/abi/xdp.h"
#include "xiwarp/wire/rdmap.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Load-time tunables (set in the skeleton's rodata before load). */
/* 0: steer only, never parse FPDU headers */
const volatile __u32 parse_fpdu = 1;
/* ULPDU lengths above this are malformed (XIW_MAX_FPDU's upper bound) */
const volatile __u32 max_ulpdu = 65535;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XIW_XDP_MAX_FLOWS);
	__type(key, struct xiw_xdp_flow_key);
	__type(value, struct xiw_xdp_flow);
} xiw_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XIW_XDP_MAX_LISTEN);
	__type(key, struct xiw_xdp_listen_key);
	__type(value, struct xiw_xdp_listen);
} xiw_listen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, XIW_XDP_MAX_XSKS);
	__type(key, __u32);
	__type(value, __u32);
} xiw_xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XIW_XDP_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} xiw_xdp_cnt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xiw_xdp_cfg);
} xiw_xdp_cfg SEC(".maps");

/* per XSKMAP slot: steered here, and the owner's utcp counters */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XIW_XDP_MAX_XSKS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct xiw_xdp_slot_cnt);
} xiw_slot_cnt SEC(".maps");

#define ETH_HLEN_	14
#define IP4_HLEN	20
#define IP6_HLEN	40
#define TCP_HLEN	20
#define TCP_FLAG_SYN_	0x02
#define TCP_FLAG_ACK_	0x10
#define MPA_MI		512	/* RFC 5044 §4.3 marker interval */

static __always_inline void count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&xiw_xdp_cnt, &slot);

	if (v)
		*v += 1;
}

static __always_inline __u16 be16_at(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

static __always_inline __u32 be32_at(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

/* What the L2-L4 parse found. */
struct seg {
	struct xiw_xdp_flow_key key;
	__u32 payload_off;	/* frame offset of the TCP payload */
	__u32 ip_end;		/* frame offset after the IP datagram */
	__u32 seq;		/* host order */
	__u8 tcp_flags;
};

enum l34 { L34_OK, L34_OTHER, L34_BAD };

/*
 * Parse Ethernet/IP/TCP. L34_OTHER: not IPv4/IPv6 TCP (or an IPv4
 * fragment, or IPv6 with extension headers): pass. L34_BAD: cut short or
 * inconsistent lengths: pass and count.
 */
static __always_inline enum l34 parse_l34(struct xdp_md *ctx, struct seg *s)
{
	__u32 frame_len = bpf_xdp_get_buff_len(ctx);
	__u8 eth[ETH_HLEN_], tcp[TCP_HLEN];
	__u32 l4, tot, doff;
	__u16 proto;

	if (bpf_xdp_load_bytes(ctx, 0, eth, sizeof(eth)))
		return L34_OTHER;	/* runt: not ours to judge */
	proto = be16_at(eth + 12);
	if (proto == ETH_P_IP) {
		__u8 ip[IP4_HLEN];
		__u32 ihl;

		if (bpf_xdp_load_bytes(ctx, ETH_HLEN_, ip, sizeof(ip)))
			return L34_BAD;
		if (ip[0] >> 4 != 4)
			return L34_BAD;
		if (ip[9] != IPPROTO_TCP)
			return L34_OTHER;
		ihl = (ip[0] & 0xf) * 4;
		tot = be16_at(ip + 2);
		if (ihl < IP4_HLEN || tot < ihl + TCP_HLEN ||
		    ETH_HLEN_ + tot > frame_len)
			return L34_BAD;
		if (be16_at(ip + 6) & 0x3fff)	/* MF or fragment offset */
			return L34_OTHER;
		s->key.family = XIW_XDP_FAMILY_IPV4;
		__builtin_memcpy(&s->key.saddr[0], ip + 12, 4);
		__builtin_memcpy(&s->key.daddr[0], ip + 16, 4);
		l4 = ETH_HLEN_ + ihl;
		s->ip_end = ETH_HLEN_ + tot;
	} else if (proto == ETH_P_IPV6) {
		__u8 ip[IP6_HLEN];

		if (bpf_xdp_load_bytes(ctx, ETH_HLEN_, ip, sizeof(ip)))
			return L34_BAD;
		if (ip[0] >> 4 != 6)
			return L34_BAD;
		if (ip[6] != IPPROTO_TCP)
			return L34_OTHER;	/* extension headers: kernel */
		tot = be16_at(ip + 4);
		if (tot < TCP_HLEN || ETH_HLEN_ + IP6_HLEN + tot > frame_len)
			return L34_BAD;
		s->key.family = XIW_XDP_FAMILY_IPV6;
		__builtin_memcpy(s->key.saddr, ip + 8, 16);
		__builtin_memcpy(s->key.daddr, ip + 24, 16);
		l4 = ETH_HLEN_ + IP6_HLEN;
		s->ip_end = ETH_HLEN_ + IP6_HLEN + tot;
	} else {
		return L34_OTHER;
	}
	if (bpf_xdp_load_bytes(ctx, l4, tcp, sizeof(tcp)))
		return L34_BAD;
	doff = (tcp[12] >> 4) * 4;
	if (doff < TCP_HLEN || l4 + doff > s->ip_end)
		return L34_BAD;
	__builtin_memcpy(&s->key.sport, tcp, 2);
	__builtin_memcpy(&s->key.dport, tcp + 2, 2);
	s->seq = be32_at(tcp + 4);
	s->tcp_flags = tcp[13];
	s->payload_off = l4 + doff;
	return L34_OK;
}

/* The minimal ULPDU of each untagged opcode (0: any length >= header). */
static __always_inline __u32 untagged_min(__u8 op)
{
	switch (op) {
	case RDMAP_READ_REQ:
		return XIW_DDP_UNTAGGED_HDR + XIW_RDMAP_READ_REQ_LEN;
	case RDMAP_TERMINATE:
		return XIW_DDP_UNTAGGED_HDR + XIW_RDMAP_TERM_CTRL_LEN;
	case RDMAP_IMM_DATA:
	case RDMAP_IMM_DATA_SE:
		return XIW_DDP_UNTAGGED_HDR + XIW_RDMAP_IMM_LEN;
	case RDMAP_ATOMIC_REQ:
		return XIW_DDP_UNTAGGED_HDR + XIW_RDMAP_ATOMIC_REQ_LEN;
	case RDMAP_ATOMIC_RESP:
		return XIW_DDP_UNTAGGED_HDR + XIW_RDMAP_ATOMIC_RESP_LEN;
	default:
		return XIW_DDP_UNTAGGED_HDR;
	}
}

/*
 * Markers (RFC 5044 §4.3) in the @n octets of an FPDU whose length field
 * is at stream offset @pos (offsets from the flow's mpa_seq0): one at every
 * multiple of 512 after @pos, each taking 4 octets of the stream.
 */
static __always_inline __u32 markers_in(__u32 pos, __u32 n)
{
	__u32 d = (MPA_MI - pos % MPA_MI) % MPA_MI;

	if (!d || n <= d)
		return 0;
	return 1 + (n - d - 1) / (MPA_MI - XIW_MPA_MARKER_SIZE);
}

enum fpdu { FPDU_OK, FPDU_NONE, FPDU_BAD, FPDU_CUT };

/*
 * Parse the FPDU header whose MPA length field is at frame offset @fpdu
 * (stream offset @pos from mpa_seq0, for marker math) into @m (everything
 * but magic/version/conn_id); @flags: record flags found so far.
 * FPDU_BAD: malformed; FPDU_CUT: the segment ends inside the header;
 * FPDU_NONE: a marker inside the header (the engine parses that one).
 * Every octet is read with bpf_xdp_load_bytes below @s->ip_end.
 */
static __always_inline enum fpdu parse_hdr_at(struct xdp_md *ctx,
					      const struct seg *s,
					      const struct xiw_xdp_flow *fl,
					      __u32 fpdu, __u32 pos, __u16 flags,
					      struct xiw_xdp_meta *m)
{
	__u8 h[2 + XIW_DDP_UNTAGGED_HDR];
	__u32 hdr, need, wire, end, nmark = 0, ulpdu;
	__u8 op;

	/* length, DDP control, RDMAP control */
	if (fpdu + 4 > s->ip_end || bpf_xdp_load_bytes(ctx, fpdu, h, 4))
		return FPDU_CUT;
	ulpdu = be16_at(h);
	if (xiw_ddp_version(h[2]) != XIW_DDP_VERSION ||
	    xiw_rdmap_version(h[3]) != XIW_RDMAP_VERSION)
		return FPDU_BAD;
	op = h[3] & XIW_RDMAP_OPCODE_MASK;
	if (h[2] & XIW_DDP_T) {
		if (op != RDMAP_WRITE && op != RDMAP_READ_RESP)
			return FPDU_BAD;
		hdr = XIW_DDP_TAGGED_HDR;
		need = XIW_DDP_TAGGED_HDR;
		flags |= XIW_XDP_META_F_TAGGED;
	} else {
		if (op == RDMAP_WRITE || op == RDMAP_READ_RESP ||
		    op > RDMAP_OPCODE_MAX)
			return FPDU_BAD;
		hdr = XIW_DDP_UNTAGGED_HDR;
		need = untagged_min(op);
	}
	if (h[2] & XIW_DDP_L)
		flags |= XIW_XDP_META_F_LAST;
	if (ulpdu < need || ulpdu > max_ulpdu)
		return FPDU_BAD;
	/* a marker inside the header: the engine parses that one */
	if ((fl->flags & XIW_XDP_FLOW_MARKERS) &&
	    markers_in(pos, XIW_MPA_LEN_SIZE + hdr))
		return FPDU_NONE;
	if (fpdu + XIW_MPA_LEN_SIZE + hdr > s->ip_end)
		return FPDU_CUT;
	if (hdr == XIW_DDP_TAGGED_HDR) {
		if (bpf_xdp_load_bytes(ctx, fpdu, h,
				       XIW_MPA_LEN_SIZE + XIW_DDP_TAGGED_HDR))
			return FPDU_CUT;
		m->stag = be32_at(h + 2 + XIW_DDP_OFF_STAG);
		m->to = (__u64)be32_at(h + 2 + XIW_DDP_OFF_TO) << 32 |
			be32_at(h + 2 + XIW_DDP_OFF_TO + 4);
	} else {
		if (bpf_xdp_load_bytes(ctx, fpdu, h,
				       XIW_MPA_LEN_SIZE + XIW_DDP_UNTAGGED_HDR))
			return FPDU_CUT;
		m->qn = be32_at(h + 2 + XIW_DDP_OFF_QN);
		m->msn = be32_at(h + 2 + XIW_DDP_OFF_MSN);
		m->mo = be32_at(h + 2 + XIW_DDP_OFF_MO);
	}
	wire = XIW_MPA_LEN_SIZE + ulpdu + xiw_mpa_pad(ulpdu) + XIW_MPA_CRC_SIZE;
	if (fl->flags & XIW_XDP_FLOW_MARKERS)
		nmark = markers_in(pos, wire);
	end = fpdu + wire + nmark * XIW_MPA_MARKER_SIZE;
	if (end > s->ip_end)
		flags |= XIW_XDP_META_F_CONTINUES;
	else if (end < s->ip_end)
		flags |= XIW_XDP_META_F_MORE;
	m->opcode = op;
	m->tcp_seq = s->seq;
	m->payload_off = s->payload_off;
	m->fpdu_off = fpdu;
	m->ulpdu_len = ulpdu;
	m->flags = flags;
	return FPDU_OK;
}

/*
 * FPDU-aligned flow: the FPDU header at the start of the segment's payload
 * (after a marker whose FPDUPTR is 0). FPDU_NONE: the segment starts no
 * FPDU we can parse; FPDU_BAD: it should, and the header is malformed.
 */
static __always_inline enum fpdu parse_fpdu_hdr(struct xdp_md *ctx,
						const struct seg *s,
						const struct xiw_xdp_flow *fl,
						struct xiw_xdp_meta *m)
{
	__u32 fpdu = s->payload_off, pos = 0;
	__u16 flags = XIW_XDP_META_F_FPDU_START | XIW_XDP_META_F_CRC_UNCHECKED;
	enum fpdu r;

	if (fpdu >= s->ip_end)
		return FPDU_NONE;	/* no payload: ACK, FIN, ... */
	if (fl->flags & XIW_XDP_FLOW_MARKERS) {
		pos = s->seq - fl->mpa_seq0;
		if (pos % MPA_MI == 0) {
			__u8 mk[XIW_MPA_MARKER_SIZE];

			if (fpdu + sizeof(mk) > s->ip_end ||
			    bpf_xdp_load_bytes(ctx, fpdu, mk, sizeof(mk)))
				return FPDU_NONE;
			if (be16_at(mk + 2) != 0)
				return FPDU_NONE; /* inside an earlier FPDU */
			fpdu += XIW_MPA_MARKER_SIZE;
			pos += XIW_MPA_MARKER_SIZE;
			flags |= XIW_XDP_META_F_MARKER;
		}
	}
	r = parse_hdr_at(ctx, s, fl, fpdu, pos, flags, m);
	return r == FPDU_CUT ? FPDU_BAD : r;	/* aligned: never cut */
}

/* The smallest MPA ULPDU: a tagged DDP header (RFC 5041 §4.3). */
#define ULPDU_MIN	XIW_DDP_TAGGED_HDR

/*
 * XIW_XDP_FLOW_TRACK: follow the FPDUs of a segment that covers
 * fl->fpdu_seq. Fills @m for the first FPDU when its header is whole
 * (FPDU_OK), moves fl->fpdu_seq to the first boundary after the segment,
 * or sets XIW_XDP_TRACK_LOST (FPDU_BAD: malformed; a length field cut by
 * the segment or more than XIW_XDP_TRACK_MAX FPDUs: FPDU_CUT, or FPDU_OK
 * when the first FPDU's record is whole).
 * FPDU_NONE: no FPDU starts here (nothing changed, or the first header is
 * cut by the segment and only its length was followed). A flow with
 * XIW_XDP_FLOW_MARKERS is not followed at all (the engine does not ask). The loop is bounded
 * and every read is a 2-octet bpf_xdp_load_bytes below ip_end.
 */
static __always_inline enum fpdu track_fpdus(struct xdp_md *ctx,
					     const struct seg *s,
					     struct xiw_xdp_flow *fl,
					     struct xiw_xdp_meta *m)
{
	__u32 plen = s->ip_end - s->payload_off;
	__u32 d = fl->fpdu_seq - s->seq, off;
	enum fpdu res = FPDU_NONE;
	__u32 i;

	/* the walk below knows no markers: such a flow is never followed */
	if (fl->fpdu_state != XIW_XDP_TRACK_SYNCED || s->payload_off >= s->ip_end ||
	    (fl->flags & XIW_XDP_FLOW_MARKERS))
		return FPDU_NONE;
	if ((__s32)d < 0 || d >= plen)
		return FPDU_NONE;	/* boundary not in this segment */
	off = s->payload_off + d;
	for (i = 0; i < XIW_XDP_TRACK_MAX; i++) {
		__u8 l[XIW_MPA_LEN_SIZE];
		__u32 ulpdu;

		if (off + XIW_MPA_LEN_SIZE > s->ip_end ||
		    bpf_xdp_load_bytes(ctx, off, l, sizeof(l)))
			goto lost;	/* the segment cuts a length field */
		ulpdu = be16_at(l);
		if (ulpdu < ULPDU_MIN || ulpdu > max_ulpdu)
			goto bad;
		if (i == 0) {
			res = parse_hdr_at(ctx, s, fl, off, 0,
					   XIW_XDP_META_F_FPDU_START |
					   XIW_XDP_META_F_CRC_UNCHECKED |
					   XIW_XDP_META_F_TRACKED, m);
			if (res == FPDU_BAD)
				goto bad;
			if (res != FPDU_OK)
				res = FPDU_NONE;
		}
		off += XIW_MPA_LEN_SIZE + ulpdu + xiw_mpa_pad(ulpdu) +
		       XIW_MPA_CRC_SIZE;
		if (off >= s->ip_end) {
			fl->fpdu_seq = s->seq + (off - s->payload_off);
			return res;
		}
	}
lost:
	fl->fpdu_state = XIW_XDP_TRACK_LOST;
	count(XIW_XDP_CNT_TRACK_LOST);
	return res == FPDU_OK ? FPDU_OK : FPDU_CUT;	/* the first is whole */
bad:
	fl->fpdu_state = XIW_XDP_TRACK_LOST;
	count(XIW_XDP_CNT_TRACK_LOST);
	return FPDU_BAD;
}

/* Put @m in front of the frame. 0 on success. */
static __always_inline int write_meta(struct xdp_md *ctx,
				      const struct xiw_xdp_meta *m)
{
	struct xiw_xdp_meta *dst;
	void *data;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*dst)))
		return -1;
	dst = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(dst + 1) > data)
		return -1;
	__builtin_memcpy(dst, m, sizeof(*dst));
	return 0;
}

/* A steered segment of a registered flow: metadata if it starts an FPDU. */
static __always_inline void steer_flow(struct xdp_md *ctx, const struct seg *s,
				       struct xiw_xdp_flow *fl)
{
	struct xiw_xdp_meta m = {};
	struct xiw_xdp_cfg *cfg;
	__u32 zero = 0;

	__sync_fetch_and_add(&fl->packets, 1);
	__sync_fetch_and_add(&fl->bytes, bpf_xdp_get_buff_len(ctx));
	cfg = bpf_map_lookup_elem(&xiw_xdp_cfg, &zero);
	if (!parse_fpdu || (cfg && (cfg->flags & XIW_XDP_CFG_NO_PARSE)) ||
	    (fl->flags & XIW_XDP_FLOW_NO_PARSE) ||
	    !(fl->flags & (XIW_XDP_FLOW_FPDU_ALIGNED | XIW_XDP_FLOW_TRACK))) {
		count(XIW_XDP_CNT_NO_FPDU);
		return;
	}
	switch (fl->flags & XIW_XDP_FLOW_TRACK ? track_fpdus(ctx, s, fl, &m) :
						 parse_fpdu_hdr(ctx, s, fl, &m)) {
	case FPDU_OK:
		break;
	case FPDU_BAD:
		count(XIW_XDP_CNT_MALFORMED);
		return;
	default:
		count(XIW_XDP_CNT_NO_FPDU);
		return;
	}
	m.magic = XIW_XDP_META_MAGIC;
	m.version = XIW_XDP_META_VERSION;
	m.conn_id = fl->conn_id;
	if (write_meta(ctx, &m)) {
		count(XIW_XDP_CNT_META_FAIL);
		return;
	}
	count(XIW_XDP_CNT_PARSED);
}

static __always_inline int pass(void)
{
	count(XIW_XDP_CNT_PASSED);
	return XDP_PASS;
}

SEC("xdp.frags")
int xiw_xdp(struct xdp_md *ctx)
{
	struct xiw_xdp_listen *ls = NULL;
	struct xiw_xdp_flow *fl;
	struct seg s = {};
	__u32 slot;
	long act;

	count(XIW_XDP_CNT_RX);
	switch (parse_l34(ctx, &s)) {
	case L34_OK:
		break;
	case L34_BAD:
		count(XIW_XDP_CNT_BAD_L3L4);
		return pass();
	default:
		return pass();
	}
	fl = bpf_map_lookup_elem(&xiw_flows, &s.key);
	if (fl) {
		slot = fl->xsk;
	} else {
		struct xiw_xdp_listen_key lk = {
			.port = s.key.dport, .family = s.key.family,
		};

		if ((s.tcp_flags & (TCP_FLAG_SYN_ | TCP_FLAG_ACK_)) != TCP_FLAG_SYN_)
			return pass();
		ls = bpf_map_lookup_elem(&xiw_listen, &lk);
		if (!ls)
			return pass();
		slot = ls->xsk;
	}
	if (slot == XIW_XDP_XSK_BY_RXQ)
		slot = ctx->rx_queue_index;
	/* the redirect happens after the program returns: the record can
	 * still be put in front once we know a socket takes the frame */
	act = bpf_redirect_map(&xiw_xsks, slot, XDP_PASS);
	if (act != XDP_REDIRECT) {
		count(XIW_XDP_CNT_NO_XSK);
		return pass();
	}
	count(XIW_XDP_CNT_STEERED);
	{
		struct xiw_xdp_slot_cnt *sc = bpf_map_lookup_elem(&xiw_slot_cnt, &slot);

		if (sc)
			__sync_fetch_and_add(&sc->steered, 1);
	}
	if (fl) {
		steer_flow(ctx, &s, fl);
	} else {
		__sync_fetch_and_add(&ls->syns, 1);
		count(XIW_XDP_CNT_SYN);
	}
	return XDP_REDIRECT;
}
