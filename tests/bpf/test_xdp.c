// SPDX-License-Identifier: MIT
/*
 * bpf/xiw_xdp.bpf.c in the real kernel, run on packet fixtures built here
 * (bpf_prog_test_run_opts; data_out/ctx_out give the frame back with the
 * metadata record in front, ctx_out.data = its length):
 *   - steering: a registered 4-tuple and a SYN to a listening port go to
 *     the XSKMAP (XDP_REDIRECT while an AF_XDP socket, bound here to lo
 *     queue 0 in copy mode, sits in the slot; XDP_PASS and the no_xsk
 *     counter without it); unregistered traffic passes;
 *   - the metadata record of a tagged WRITE, an untagged SEND, a READ
 *     request, FPDUs that continue or are followed by more, a marker, IPv6,
 *     a 9000-octet multi-buffer frame;
 *   - every malformed header: frames cut at every octet up to the TCP
 *     payload, bad IHL / TCP data offset / IP lengths, bad MPA lengths,
 *     ULPDUs shorter than their header, wrong DDP/RDMAP versions, opcodes
 *     that do not fit the DDP model, headers cut by the segment, segments
 *     that start no FPDU; frames that end exactly at a header boundary;
 *     3000 randomly damaged frames;
 *   - FPDU tracking (XIW_XDP_FLOW_TRACK): several FPDUs in a segment, an
 *     FPDU spanning segments and the next starting mid-segment, headers
 *     cut by a segment, out-of-order / old / overlapping segments, CRC on
 *     and off, malformed lengths and headers (LOST), too many FPDUs, and
 *     random streams with loss and damage (records name real FPDU starts
 *     inside the frame);
 *   - a live-frame run (BPF_F_TEST_XDP_LIVE_FRAMES): the frame and its
 *     record really arrive in the AF_XDP socket's RX ring (copy mode).
 * Needs root (CAP_BPF, CAP_NET_ADMIN): skips otherwise.
 */
#include <errno.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_xdp.h>
#include <cmocka.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xiwarp/abi/xdp.h"
#include "xiwarp/wire/rdmap.h"
#include "xiw_xdp.skel.h"

#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif

#define PEER_IP	 0x0a010001u	/* 10.1.0.1: the segment's source */
#define LOCAL_IP 0x0a010002u	/* 10.1.0.2 */
#define PEER_PORT 40000
#define LOCAL_PORT 7174
#define CONN_ID 0xc0ffee
#define ETH_L 14
#define IP_L 20
#define TCP_L 20
#define HDRS (ETH_L + IP_L + TCP_L)	/* payload offset of a plain frame */

static struct xiw_xdp *skel;
static int xsk_fd = -1;
static void *umem;
static const size_t umem_len = 64 * 4096;

/* ------------------------------------------------------------ fixtures */

struct fx {
	bool v6;
	uint32_t seq;
	uint8_t tcp_flags;	/* 0: ACK|PSH */
	uint16_t dport;		/* 0: LOCAL_PORT */
	const uint8_t *pl;
	size_t pl_len;
	unsigned int ihl;	/* IPv4 header words, 0: 5 */
	unsigned int doff;	/* TCP header words, 0: 5 */
	int tot_delta;		/* added to the IP length field */
	uint8_t ip_ver;		/* 0: 4 or 6 */
};

/* Ethernet + IPv4/IPv6 + TCP + payload into @b; returns the length. */
static size_t build(uint8_t *b, const struct fx *f)
{
	unsigned int ihl = f->ihl ? f->ihl : 5, doff = f->doff ? f->doff : 5;
	size_t l3 = ETH_L, l4, n;

	memset(b, 0, 64 + 40 + 60);
	memcpy(b, "\x02\0\0\0\0\2\x02\0\0\0\0\1", 12);
	if (!f->v6) {
		xiw_put_be16(b + 12, 0x0800);
		l4 = l3 + 4 * ihl;
		b[l3] = (uint8_t)((f->ip_ver ? f->ip_ver : 4) << 4 | (ihl & 0xf));
		xiw_put_be16(b + l3 + 2, (uint16_t)(4 * ihl + 4 * doff + f->pl_len + f->tot_delta));
		b[l3 + 8] = 64;
		b[l3 + 9] = 6;
		xiw_put_be32(b + l3 + 12, PEER_IP);
		xiw_put_be32(b + l3 + 16, LOCAL_IP);
	} else {
		xiw_put_be16(b + 12, 0x86dd);
		l4 = l3 + 40;
		b[l3] = (uint8_t)((f->ip_ver ? f->ip_ver : 6) << 4);
		xiw_put_be16(b + l3 + 4, (uint16_t)(4 * doff + f->pl_len + f->tot_delta));
		b[l3 + 6] = 6;
		b[l3 + 7] = 64;
		b[l3 + 8] = 0xfd;	/* fd00::1 -> fd00::2 */
		b[l3 + 23] = 1;
		b[l3 + 24] = 0xfd;
		b[l3 + 39] = 2;
	}
	xiw_put_be16(b + l4, PEER_PORT);
	xiw_put_be16(b + l4 + 2, f->dport ? f->dport : LOCAL_PORT);
	xiw_put_be32(b + l4 + 4, f->seq);
	xiw_put_be32(b + l4 + 8, 1);
	b[l4 + 12] = (uint8_t)((doff & 0xf) << 4);
	b[l4 + 13] = f->tcp_flags ? f->tcp_flags : 0x18;
	xiw_put_be16(b + l4 + 14, 65535);
	n = l4 + 4 * doff;
	if (f->pl_len)
		memcpy(b + n, f->pl, f->pl_len);
	return n + f->pl_len;
}

static struct xiw_xdp_flow_key key_of(bool v6)
{
	struct xiw_xdp_flow_key k;

	memset(&k, 0, sizeof(k));
	if (!v6) {
		k.family = XIW_XDP_FAMILY_IPV4;
		k.saddr[0] = htonl(PEER_IP);
		k.daddr[0] = htonl(LOCAL_IP);
	} else {
		uint8_t *s = (uint8_t *)k.saddr, *d = (uint8_t *)k.daddr;

		k.family = XIW_XDP_FAMILY_IPV6;
		s[0] = 0xfd;
		s[15] = 1;
		d[0] = 0xfd;
		d[15] = 2;
	}
	k.sport = htons(PEER_PORT);
	k.dport = htons(LOCAL_PORT);
	return k;
}

/* A tagged FPDU (@plen payload octets) at @p; returns its wire length. */
static size_t fpdu_tagged(uint8_t *p, uint8_t op, bool last, uint32_t stag,
			  uint64_t to, size_t plen)
{
	uint16_t ulpdu = (uint16_t)(XIW_DDP_TAGGED_HDR + plen);
	size_t n = XIW_MPA_LEN_SIZE + ulpdu;

	xiw_put_be16(p, ulpdu);
	p[2] = XIW_DDP_T | (last ? XIW_DDP_L : 0) | XIW_DDP_VERSION;
	p[3] = xiw_rdmap_ctrl(op);
	xiw_put_be32(p + 2 + XIW_DDP_OFF_STAG, stag);
	xiw_put_be64(p + 2 + XIW_DDP_OFF_TO, to);
	memset(p + 2 + XIW_DDP_TAGGED_HDR, 0xab, plen);
	memset(p + n, 0, xiw_mpa_pad(ulpdu) + XIW_MPA_CRC_SIZE);
	return n + xiw_mpa_pad(ulpdu) + XIW_MPA_CRC_SIZE;
}

static size_t fpdu_untagged(uint8_t *p, uint8_t op, bool last, uint32_t qn,
			    uint32_t msn, uint32_t mo, size_t plen)
{
	uint16_t ulpdu = (uint16_t)(XIW_DDP_UNTAGGED_HDR + plen);
	size_t n = XIW_MPA_LEN_SIZE + ulpdu;

	xiw_put_be16(p, ulpdu);
	p[2] = (last ? XIW_DDP_L : 0) | XIW_DDP_VERSION;
	p[3] = xiw_rdmap_ctrl(op);
	xiw_put_be32(p + 2 + XIW_DDP_OFF_RSVDULP, 0);
	xiw_put_be32(p + 2 + XIW_DDP_OFF_QN, qn);
	xiw_put_be32(p + 2 + XIW_DDP_OFF_MSN, msn);
	xiw_put_be32(p + 2 + XIW_DDP_OFF_MO, mo);
	memset(p + 2 + XIW_DDP_UNTAGGED_HDR, 0xcd, plen);
	memset(p + n, 0, xiw_mpa_pad(ulpdu) + XIW_MPA_CRC_SIZE);
	return n + xiw_mpa_pad(ulpdu) + XIW_MPA_CRC_SIZE;
}

/* ------------------------------------------------------------ running */

struct run {
	uint32_t retval;
	struct xdp_md ctx;
	uint32_t out_len;
	uint8_t out[16384];
	struct xiw_xdp_meta meta;
	bool has_meta;
	uint64_t d[XIW_XDP_CNT_MAX];	/* counter deltas */
};

static void counters(uint64_t *sum)
{
	int ncpu = libbpf_num_possible_cpus(), fd, c;
	uint64_t *v;
	uint32_t i;

	assert_true(ncpu > 0);
	v = calloc((size_t)ncpu, sizeof(*v));
	assert_non_null(v);
	fd = bpf_map__fd(skel->maps.xiw_xdp_cnt);
	for (i = 0; i < XIW_XDP_CNT_MAX; i++) {
		assert_int_equal(bpf_map_lookup_elem(fd, &i, v), 0);
		sum[i] = 0;
		for (c = 0; c < ncpu; c++)
			sum[i] += v[c];
	}
	free(v);
}

static struct run R;

/* Run the program on @len octets of @frame; results in R. */
static void run(const uint8_t *frame, size_t len)
{
	uint64_t before[XIW_XDP_CNT_MAX], after[XIW_XDP_CNT_MAX];
	struct xdp_md ctx_in = { .data_end = (uint32_t)len };
	LIBBPF_OPTS(bpf_test_run_opts, o);
	int i;

	memset(&R, 0, sizeof(R));
	o.data_in = frame;
	o.data_size_in = (uint32_t)len;
	o.data_out = R.out;
	o.data_size_out = sizeof(R.out);
	o.ctx_in = &ctx_in;
	o.ctx_size_in = sizeof(ctx_in);
	o.ctx_out = &R.ctx;
	o.ctx_size_out = sizeof(R.ctx);
	o.repeat = 1;
	counters(before);
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xiw_xdp), &o), 0);
	counters(after);
	for (i = 0; i < XIW_XDP_CNT_MAX; i++)
		R.d[i] = after[i] - before[i];
	R.retval = o.retval;
	R.out_len = o.data_size_out;
	assert_int_equal(R.d[XIW_XDP_CNT_RX], 1);
	assert_int_equal(R.d[XIW_XDP_CNT_DROPPED], 0);
	assert_int_equal(R.d[XIW_XDP_CNT_PASSED] + R.d[XIW_XDP_CNT_STEERED], 1);
	/* the frame itself comes back unchanged behind the record */
	assert_int_equal(R.out_len, R.ctx.data + len);
	assert_memory_equal(R.out + R.ctx.data, frame, len);
	if (R.ctx.data) {
		assert_int_equal(R.ctx.data, sizeof(R.meta));
		memcpy(&R.meta, R.out, sizeof(R.meta));
		R.has_meta = true;
	}
}

static void expect_pass(void)
{
	assert_int_equal(R.retval, XDP_PASS);
	assert_int_equal(R.d[XIW_XDP_CNT_PASSED], 1);
	assert_false(R.has_meta);
}

/* steered: XDP_REDIRECT when the test has an AF_XDP socket in slot 0,
 * else the XDP_PASS fallback (the decision shows in no_xsk) */
static void expect_steered(void)
{
	if (xsk_fd >= 0) {
		assert_int_equal(R.retval, XDP_REDIRECT);
		assert_int_equal(R.d[XIW_XDP_CNT_STEERED], 1);
	} else {
		assert_int_equal(R.retval, XDP_PASS);
		assert_int_equal(R.d[XIW_XDP_CNT_NO_XSK], 1);
	}
}

/* steered with a record (the parse path needs a socket: without one the
 * program passes before parsing) */
static void expect_meta(void)
{
	expect_steered();
	if (xsk_fd < 0)
		skip();
	assert_int_equal(R.d[XIW_XDP_CNT_PARSED], 1);
	assert_true(R.has_meta);
	assert_int_equal(R.meta.magic, XIW_XDP_META_MAGIC);
	assert_int_equal(R.meta.version, XIW_XDP_META_VERSION);
	assert_int_equal(R.meta.conn_id, CONN_ID);
}

static void expect_malformed(void)
{
	expect_steered();
	if (xsk_fd < 0)
		return;
	assert_int_equal(R.d[XIW_XDP_CNT_MALFORMED], 1);
	assert_int_equal(R.d[XIW_XDP_CNT_PARSED], 0);
	assert_false(R.has_meta);
}

static void expect_no_fpdu(void)
{
	expect_steered();
	if (xsk_fd < 0)
		return;
	assert_int_equal(R.d[XIW_XDP_CNT_NO_FPDU], 1);
	assert_int_equal(R.d[XIW_XDP_CNT_MALFORMED], 0);
	assert_false(R.has_meta);
}

static void add_flow(bool v6, uint32_t flags, uint32_t seq0)
{
	struct xiw_xdp_flow_key k = key_of(v6);
	struct xiw_xdp_flow v = {
		.conn_id = CONN_ID, .flags = flags,
		.xsk = XIW_XDP_XSK_BY_RXQ, .mpa_seq0 = seq0,
	};

	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.xiw_flows),
					     &k, &v, BPF_ANY), 0);
}

static void del_flows(void)
{
	struct xiw_xdp_flow_key k4 = key_of(false), k6 = key_of(true);
	int fd = bpf_map__fd(skel->maps.xiw_flows);

	bpf_map_delete_elem(fd, &k4);
	bpf_map_delete_elem(fd, &k6);
}

/* ---------------------------------------------------------- AF_XDP */

/* An AF_XDP socket bound to lo queue 0 in copy mode (no rings mapped:
 * only its presence in the XSKMAP matters here). -errno on failure. */
static int xsk_open(void)
{
	struct xdp_umem_reg reg = { 0 };
	struct sockaddr_xdp sa = { 0 };
	int fd, sz = 64, err;

	fd = socket(AF_XDP, SOCK_RAW, 0);
	if (fd < 0)
		return -errno;
	umem = mmap(NULL, umem_len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (umem == MAP_FAILED) {
		err = -errno;
		goto close_fd;
	}
	reg.addr = (uintptr_t)umem;
	reg.len = umem_len;
	reg.chunk_size = 4096;
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)) ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &sz, sizeof(sz)) ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &sz, sizeof(sz)) ||
	    setsockopt(fd, SOL_XDP, XDP_RX_RING, &sz, sizeof(sz))) {
		err = -errno;
		goto unmap;
	}
	sa.sxdp_family = AF_XDP;
	sa.sxdp_ifindex = if_nametoindex("lo");
	sa.sxdp_queue_id = 0;
	sa.sxdp_flags = XDP_COPY;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto unmap;
	}
	return fd;
unmap:
	munmap(umem, umem_len);
	umem = NULL;
close_fd:
	close(fd);
	return err;
}

static void xsk_slot(bool on)
{
	int fd = bpf_map__fd(skel->maps.xiw_xsks);
	uint32_t slot = 0;

	if (xsk_fd < 0)
		return;
	if (on)
		assert_int_equal(bpf_map_update_elem(fd, &slot, &xsk_fd, BPF_ANY), 0);
	else
		bpf_map_delete_elem(fd, &slot);
}

/* ------------------------------------------------------------- tests */

static uint8_t F[16384], P[16384];

static void test_unregistered_passes(void **state)
{
	struct fx f = { .seq = 1, .pl = P, .pl_len = 100 };
	size_t n;

	(void)state;
	memset(P, 1, 100);
	run(F, build(F, &f));
	expect_pass();
	/* a registered 4-tuple's neighbours pass: other port, other family */
	add_flow(false, 0, 0);
	f.dport = LOCAL_PORT + 1;
	run(F, build(F, &f));
	expect_pass();
	f.dport = 0;
	f.v6 = true;
	run(F, build(F, &f));
	expect_pass();
	/* not IP at all (ARP), and a runt Ethernet frame */
	n = build(F, &(struct fx){ .seq = 1 });
	xiw_put_be16(F + 12, 0x0806);
	run(F, n);
	expect_pass();
	assert_int_equal(R.d[XIW_XDP_CNT_BAD_L3L4], 0);
	/* UDP */
	n = build(F, &(struct fx){ .seq = 1 });
	F[ETH_L + 9] = 17;
	run(F, n);
	expect_pass();
	del_flows();
}

static void test_flow_steered(void **state)
{
	struct xiw_xdp_flow_key k = key_of(false);
	struct fx f = { .seq = 1000, .pl = P, .pl_len = 40 };
	struct xiw_xdp_flow v;
	size_t n;

	(void)state;
	memset(P, 2, sizeof(P));
	add_flow(false, 0, 0);
	n = build(F, &f);
	run(F, n);
	expect_steered();
	if (xsk_fd >= 0) {
		assert_int_equal(R.d[XIW_XDP_CNT_NO_FPDU], 1); /* not aligned */
		assert_false(R.has_meta);
		assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.xiw_flows),
						     &k, &v), 0);
		assert_int_equal(v.packets, 1);
		assert_int_equal(v.bytes, n);
	}
	/* no socket in the slot: the kernel gets it */
	xsk_slot(false);
	run(F, n);
	expect_pass();
	assert_int_equal(R.d[XIW_XDP_CNT_NO_XSK], 1);
	xsk_slot(true);
	/* a slot that does not exist */
	v = (struct xiw_xdp_flow){ .conn_id = CONN_ID, .xsk = 5000 };
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.xiw_flows),
					     &k, &v, BPF_ANY), 0);
	run(F, n);
	expect_pass();
	assert_int_equal(R.d[XIW_XDP_CNT_NO_XSK], 1);
	del_flows();
	/* unregistered again */
	run(F, n);
	expect_pass();
	assert_int_equal(R.d[XIW_XDP_CNT_NO_XSK], 0);
}

static void test_syn_listen(void **state)
{
	struct xiw_xdp_listen_key lk = { .port = htons(LOCAL_PORT),
					 .family = XIW_XDP_FAMILY_IPV4 };
	struct xiw_xdp_listen lv = { .listen_id = 3, .xsk = XIW_XDP_XSK_BY_RXQ };
	int fd = bpf_map__fd(skel->maps.xiw_listen);

	(void)state;
	run(F, build(F, &(struct fx){ .seq = 5, .tcp_flags = 0x02 }));
	expect_pass();
	assert_int_equal(bpf_map_update_elem(fd, &lk, &lv, BPF_ANY), 0);
	run(F, build(F, &(struct fx){ .seq = 5, .tcp_flags = 0x02 }));
	expect_steered();
	if (xsk_fd >= 0) {
		assert_int_equal(R.d[XIW_XDP_CNT_SYN], 1);
		assert_false(R.has_meta);
		assert_int_equal(bpf_map_lookup_elem(fd, &lk, &lv), 0);
		assert_int_equal(lv.syns, 1);
	}
	/* SYN+ACK, plain ACK, SYN to another port, IPv6 SYN: pass */
	run(F, build(F, &(struct fx){ .seq = 5, .tcp_flags = 0x12 }));
	expect_pass();
	run(F, build(F, &(struct fx){ .seq = 5, .tcp_flags = 0x10 }));
	expect_pass();
	run(F, build(F, &(struct fx){ .seq = 5, .tcp_flags = 0x02,
				      .dport = LOCAL_PORT + 1 }));
	expect_pass();
	run(F, build(F, &(struct fx){ .v6 = true, .seq = 5, .tcp_flags = 0x02 }));
	expect_pass();
	/* a SYN padded to the Ethernet minimum (IP length < frame) */
	memset(F, 0, 60);
	run(F, build(F, &(struct fx){ .seq = 5, .tcp_flags = 0x02 }) + 6);
	expect_steered();
	assert_int_equal(bpf_map_delete_elem(fd, &lk), 0);
}

static void test_meta_tagged_write(void **state)
{
	size_t pl = fpdu_tagged(P, RDMAP_WRITE, true, 0x11223344,
				0x0102030405060708ULL, 100);

	(void)state;
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
	run(F, build(F, &(struct fx){ .seq = 0xfffffff0, .pl = P, .pl_len = pl }));
	expect_meta();
	assert_int_equal(R.meta.opcode, RDMAP_WRITE);
	assert_int_equal(R.meta.tcp_seq, 0xfffffff0);
	assert_int_equal(R.meta.payload_off, HDRS);
	assert_int_equal(R.meta.fpdu_off, HDRS);
	assert_int_equal(R.meta.ulpdu_len, XIW_DDP_TAGGED_HDR + 100);
	assert_int_equal(R.meta.flags, XIW_XDP_META_F_TAGGED |
			 XIW_XDP_META_F_LAST | XIW_XDP_META_F_FPDU_START |
			 XIW_XDP_META_F_CRC_UNCHECKED);
	assert_int_equal(R.meta.stag, 0x11223344);
	assert_true(R.meta.to == 0x0102030405060708ULL);
	/* READ response: tagged as well; not last, TCP options (doff 8) */
	pl = fpdu_tagged(P, RDMAP_READ_RESP, false, 7, 4096, 1);
	run(F, build(F, &(struct fx){ .seq = 9, .pl = P, .pl_len = pl, .doff = 8 }));
	expect_meta();
	assert_int_equal(R.meta.opcode, RDMAP_READ_RESP);
	assert_int_equal(R.meta.payload_off, HDRS + 12);
	assert_int_equal(R.meta.flags & XIW_XDP_META_F_LAST, 0);
	assert_int_equal(R.meta.ulpdu_len, 15);
	assert_int_equal(R.meta.stag, 7);
	assert_true(R.meta.to == 4096);
	del_flows();
}

static void test_meta_untagged_send(void **state)
{
	size_t pl = fpdu_untagged(P, RDMAP_SEND, true, XIW_DDP_QN_SEND, 5, 0, 33);

	(void)state;
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED | XIW_XDP_FLOW_CRC, 0);
	run(F, build(F, &(struct fx){ .seq = 77, .pl = P, .pl_len = pl }));
	expect_meta();
	assert_int_equal(R.meta.opcode, RDMAP_SEND);
	assert_int_equal(R.meta.tcp_seq, 77);
	assert_int_equal(R.meta.ulpdu_len, XIW_DDP_UNTAGGED_HDR + 33);
	assert_int_equal(R.meta.flags, XIW_XDP_META_F_LAST |
			 XIW_XDP_META_F_FPDU_START | XIW_XDP_META_F_CRC_UNCHECKED);
	assert_int_equal(R.meta.qn, XIW_DDP_QN_SEND);
	assert_int_equal(R.meta.msn, 5);
	assert_int_equal(R.meta.mo, 0);
	/* a middle segment of a message: MO set, not last; empty SEND */
	pl = fpdu_untagged(P, RDMAP_SEND_SE_INV, false, 0, 6, 8192, 0);
	run(F, build(F, &(struct fx){ .seq = 78, .pl = P, .pl_len = pl }));
	expect_meta();
	assert_int_equal(R.meta.opcode, RDMAP_SEND_SE_INV);
	assert_int_equal(R.meta.msn, 6);
	assert_int_equal(R.meta.mo, 8192);
	assert_int_equal(R.meta.flags & XIW_XDP_META_F_LAST, 0);
	del_flows();
}

static void test_meta_read_req(void **state)
{
	size_t pl = fpdu_untagged(P, RDMAP_READ_REQ, true, XIW_DDP_QN_READ_REQ,
				  11, 0, XIW_RDMAP_READ_REQ_LEN);

	(void)state;
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
	run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl }));
	expect_meta();
	assert_int_equal(R.meta.opcode, RDMAP_READ_REQ);
	assert_int_equal(R.meta.qn, XIW_DDP_QN_READ_REQ);
	assert_int_equal(R.meta.msn, 11);
	assert_int_equal(R.meta.ulpdu_len, 46);
	assert_int_equal(R.meta.flags & XIW_XDP_META_F_TAGGED, 0);
	/* TERMINATE (untagged, QN 2) */
	pl = fpdu_untagged(P, RDMAP_TERMINATE, true, XIW_DDP_QN_TERMINATE, 1, 0, 4);
	run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl }));
	expect_meta();
	assert_int_equal(R.meta.opcode, RDMAP_TERMINATE);
	assert_int_equal(R.meta.qn, XIW_DDP_QN_TERMINATE);
	del_flows();
}

/* FPDU longer than the segment; two FPDUs in one segment; exact ends */
static void test_meta_lengths(void **state)
{
	size_t pl, hdr = XIW_MPA_LEN_SIZE + XIW_DDP_TAGGED_HDR;

	(void)state;
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
	/* 4000-octet WRITE of which the segment holds 1000 octets */
	fpdu_tagged(P, RDMAP_WRITE, true, 1, 0, 4000);
	run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = 1000 }));
	expect_meta();
	assert_true(R.meta.flags & XIW_XDP_META_F_CONTINUES);
	assert_int_equal(R.meta.ulpdu_len, XIW_DDP_TAGGED_HDR + 4000);
	/* the segment ends exactly after the header: still parsed */
	run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = hdr }));
	expect_meta();
	assert_true(R.meta.flags & XIW_XDP_META_F_CONTINUES);
	/* one octet less: the header is cut */
	run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = hdr - 1 }));
	expect_malformed();
	/* the FPDU ends one octet before the segment ends (CRC cut) */
	pl = fpdu_tagged(P, RDMAP_WRITE, true, 1, 0, 2);
	run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl - 1 }));
	expect_meta();
	assert_true(R.meta.flags & XIW_XDP_META_F_CONTINUES);
	/* exactly one FPDU: neither flag */
	run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl }));
	expect_meta();
	assert_int_equal(R.meta.flags & (XIW_XDP_META_F_CONTINUES |
					 XIW_XDP_META_F_MORE), 0);
	/* two FPDUs: MORE */
	pl += fpdu_untagged(P + pl, RDMAP_SEND, true, 0, 1, 0, 3);
	run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl }));
	expect_meta();
	assert_true(R.meta.flags & XIW_XDP_META_F_MORE);
	assert_int_equal(R.meta.ulpdu_len, XIW_DDP_TAGGED_HDR + 2);
	del_flows();
}

static void test_meta_markers(void **state)
{
	size_t pl;

	(void)state;
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED | XIW_XDP_FLOW_MARKERS, 1000);
	/* stream offset 1024: marker with FPDUPTR 0, then the FPDU; 600
	 * octets of ULPDU cross the marker at 1536 */
	memset(P, 0, 4);
	pl = 4 + fpdu_tagged(P + 4, RDMAP_WRITE, true, 9, 0, 600 - 14);
	run(F, build(F, &(struct fx){ .seq = 2024, .pl = P, .pl_len = pl + 4 }));
	expect_meta();
	assert_true(R.meta.flags & XIW_XDP_META_F_MARKER);
	assert_int_equal(R.meta.fpdu_off, HDRS + 4);
	assert_int_equal(R.meta.stag, 9);
	/* 4 + 606 octets of FPDU + 1 marker (at 1536) = 614 = the segment */
	assert_int_equal(R.meta.flags & (XIW_XDP_META_F_CONTINUES |
					 XIW_XDP_META_F_MORE), 0);
	/* a marker pointing back into an earlier FPDU: no FPDU starts */
	xiw_put_be16(P + 2, 100);
	run(F, build(F, &(struct fx){ .seq = 2024, .pl = P, .pl_len = pl }));
	expect_no_fpdu();
	/* not at a marker position: the FPDU starts the payload */
	pl = fpdu_tagged(P, RDMAP_WRITE, true, 9, 0, 10);
	run(F, build(F, &(struct fx){ .seq = 1100, .pl = P, .pl_len = pl }));
	expect_meta();
	assert_int_equal(R.meta.flags & XIW_XDP_META_F_MARKER, 0);
	/* a marker inside the header (stream offset 500: 12 octets to 512) */
	run(F, build(F, &(struct fx){ .seq = 1500, .pl = P, .pl_len = pl }));
	expect_no_fpdu();
	del_flows();
}

static void test_meta_ipv6_and_frags(void **state)
{
	size_t pl = fpdu_untagged(P, RDMAP_SEND, true, 0, 1, 0, 10);
	size_t n;

	(void)state;
	add_flow(true, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
	run(F, build(F, &(struct fx){ .v6 = true, .seq = 3, .pl = P, .pl_len = pl }));
	expect_meta();
	assert_int_equal(R.meta.payload_off, ETH_L + 40 + TCP_L);
	assert_int_equal(R.meta.msn, 1);
	/* the IPv4 tuple of the same ports is not the IPv6 flow */
	run(F, build(F, &(struct fx){ .seq = 3, .pl = P, .pl_len = pl }));
	expect_pass();
	del_flows();
	/* 9000-octet frame: beyond one page, the test run puts the rest in
	 * fragments (xdp.frags) */
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
	pl = fpdu_tagged(P, RDMAP_WRITE, true, 0x55, 1ULL << 40, 8900);
	n = build(F, &(struct fx){ .seq = 3, .pl = P, .pl_len = pl });
	assert_true(n > 8900);
	run(F, n);
	expect_meta();
	assert_int_equal(R.meta.ulpdu_len, 8914);
	assert_true(R.meta.to == 1ULL << 40);
	assert_int_equal(R.meta.flags & (XIW_XDP_META_F_CONTINUES |
					 XIW_XDP_META_F_MORE), 0);
	del_flows();
}

/* every way the FPDU header can be wrong: steered, counted, no record */
static void test_malformed_fpdu(void **state)
{
	static const uint8_t bad_untagged_op[] = { RDMAP_WRITE, RDMAP_READ_RESP,
						   0xc, 0xd, 0xe, 0xf };
	static const uint8_t bad_tagged_op[] = { RDMAP_READ_REQ, RDMAP_SEND,
						 RDMAP_TERMINATE, 0xf };
	size_t pl, i;

	(void)state;
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
#define RUN_PL(len) run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = (len) }))
	/* DDP version 0, 2, 3 (tagged and untagged) */
	for (i = 0; i < 4; i++) {
		if (i == XIW_DDP_VERSION)
			continue;
		pl = fpdu_tagged(P, RDMAP_WRITE, true, 1, 0, 8);
		P[2] = (uint8_t)((P[2] & ~XIW_DDP_DV_MASK) | i);
		RUN_PL(pl);
		expect_malformed();
		pl = fpdu_untagged(P, RDMAP_SEND, true, 0, 1, 0, 8);
		P[2] = (uint8_t)((P[2] & ~XIW_DDP_DV_MASK) | i);
		RUN_PL(pl);
		expect_malformed();
	}
	/* RDMAP version 0, 2, 3 */
	for (i = 0; i < 4; i++) {
		if (i == XIW_RDMAP_VERSION)
			continue;
		pl = fpdu_untagged(P, RDMAP_SEND, true, 0, 1, 0, 8);
		P[3] = (uint8_t)(i << XIW_RDMAP_RV_SHIFT | RDMAP_SEND);
		RUN_PL(pl);
		expect_malformed();
	}
	/* opcodes that do not fit the DDP model, or do not exist */
	for (i = 0; i < sizeof(bad_untagged_op); i++) {
		pl = fpdu_untagged(P, bad_untagged_op[i], true, 0, 1, 0, 8);
		RUN_PL(pl);
		expect_malformed();
	}
	for (i = 0; i < sizeof(bad_tagged_op); i++) {
		pl = fpdu_tagged(P, bad_tagged_op[i], true, 1, 0, 8);
		RUN_PL(pl);
		expect_malformed();
	}
	/* MPA lengths: 0, 1, one short of the header (tagged 13, untagged
	 * 17), a READ request one octet short of its body */
	pl = fpdu_tagged(P, RDMAP_WRITE, true, 1, 0, 8);
	for (i = 0; i < 3; i++) {
		static const uint16_t lens[] = { 0, 1, XIW_DDP_TAGGED_HDR - 1 };

		xiw_put_be16(P, lens[i]);
		RUN_PL(pl);
		expect_malformed();
	}
	pl = fpdu_untagged(P, RDMAP_SEND, true, 0, 1, 0, 8);
	xiw_put_be16(P, XIW_DDP_UNTAGGED_HDR - 1);
	RUN_PL(pl);
	expect_malformed();
	pl = fpdu_untagged(P, RDMAP_READ_REQ, true, 1, 1, 0, XIW_RDMAP_READ_REQ_LEN);
	xiw_put_be16(P, XIW_DDP_UNTAGGED_HDR + XIW_RDMAP_READ_REQ_LEN - 1);
	RUN_PL(pl);
	expect_malformed();
	pl = fpdu_untagged(P, RDMAP_TERMINATE, true, 2, 1, 0, 4);
	xiw_put_be16(P, XIW_DDP_UNTAGGED_HDR + 3);
	RUN_PL(pl);
	expect_malformed();
	/* headers cut by the segment: 1..3 octets, an untagged header one
	 * octet short */
	for (i = 1; i < 4; i++) {
		fpdu_tagged(P, RDMAP_WRITE, true, 1, 0, 8);
		RUN_PL(i);
		expect_malformed();
	}
	fpdu_untagged(P, RDMAP_SEND, true, 0, 1, 0, 8);
	RUN_PL(XIW_MPA_LEN_SIZE + XIW_DDP_UNTAGGED_HDR - 1);
	expect_malformed();
	/* exactly the untagged header: parsed (continues) */
	RUN_PL(XIW_MPA_LEN_SIZE + XIW_DDP_UNTAGGED_HDR);
	expect_meta();
	assert_true(R.meta.flags & XIW_XDP_META_F_CONTINUES);
#undef RUN_PL
	del_flows();
}

/* segments of a registered flow that start no FPDU: steered, no record */
static void test_no_fpdu_start(void **state)
{
	size_t pl = fpdu_tagged(P, RDMAP_WRITE, true, 1, 0, 8);

	(void)state;
	/* the engine has not marked the flow aligned (MPA negotiation, or a
	 * sender that does not align) */
	add_flow(false, XIW_XDP_FLOW_CRC, 0);
	run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl }));
	expect_no_fpdu();
	/* parsing switched off for the flow */
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED | XIW_XDP_FLOW_NO_PARSE, 0);
	run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl }));
	expect_no_fpdu();
	/* aligned: a pure ACK and a FIN carry no payload */
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
	run(F, build(F, &(struct fx){ .seq = 1, .tcp_flags = 0x10 }));
	expect_no_fpdu();
	run(F, build(F, &(struct fx){ .seq = 1, .tcp_flags = 0x11 }));
	expect_no_fpdu();
	/* parsing switched off for all (the config map) */
	{
		struct xiw_xdp_cfg c = { .flags = XIW_XDP_CFG_NO_PARSE,
					 .abi = XIW_XDP_ABI_VERSION };
		uint32_t zero = 0;
		int fd = bpf_map__fd(skel->maps.xiw_xdp_cfg);

		assert_int_equal(bpf_map_update_elem(fd, &zero, &c, BPF_ANY), 0);
		run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl }));
		expect_no_fpdu();
		c.flags = 0;
		assert_int_equal(bpf_map_update_elem(fd, &zero, &c, BPF_ANY), 0);
		run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl }));
		expect_meta();
	}
	del_flows();
}

/* Frames cut at every octet up to the end of the TCP header, for a
 * registered flow: nothing outside the frame is read, nothing steered. */
static void test_short_frames(void **state)
{
	size_t pl = fpdu_tagged(P, RDMAP_WRITE, true, 1, 0, 8), full, n;

	(void)state;
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
	full = build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl });
	/* the test run refuses frames shorter than an Ethernet header */
	for (n = ETH_L; n < HDRS; n++) {
		run(F, n);
		expect_pass();
		assert_int_equal(R.d[XIW_XDP_CNT_BAD_L3L4], 1);
	}
	/* up to the end of the FPDU: the IP length says more than is there */
	for (n = HDRS; n < full; n++) {
		run(F, n);
		expect_pass();
		assert_int_equal(R.d[XIW_XDP_CNT_BAD_L3L4], 1);
	}
	run(F, full);
	expect_meta();
	/* IPv6, cut inside the IPv6 and the TCP header */
	add_flow(true, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
	full = build(F, &(struct fx){ .v6 = true, .seq = 1, .pl = P, .pl_len = pl });
	for (n = ETH_L; n < full; n++) {
		run(F, n);
		expect_pass();
		assert_int_equal(R.d[XIW_XDP_CNT_BAD_L3L4], 1);
	}
	run(F, full);
	expect_meta();
	del_flows();
}

/* IPv4/TCP header fields that do not add up: passed to the kernel */
static void test_bad_l3l4(void **state)
{
	size_t pl = fpdu_tagged(P, RDMAP_WRITE, true, 1, 0, 8), n;
	unsigned int i;

	(void)state;
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
#define BAD(...) do { \
		run(F, build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl, __VA_ARGS__ })); \
		expect_pass(); \
		assert_int_equal(R.d[XIW_XDP_CNT_BAD_L3L4], 1); \
	} while (0)
	BAD(.ip_ver = 5);
	BAD(.ip_ver = 7, .v6 = true);
	BAD(.tot_delta = 1);		/* IP length beyond the frame */
	BAD(.tot_delta = -(int)pl - 1);	/* IP length inside the TCP header */
	BAD(.v6 = true, .tot_delta = 1);
	BAD(.v6 = true, .tot_delta = -(int)pl - 1);
#undef BAD
	/* IHL and TCP data offset below 5 (patched into a good frame) */
	for (i = 0; i < 5; i++) {
		n = build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl });
		F[ETH_L] = (uint8_t)(0x40 | i);
		run(F, n);
		expect_pass();
		assert_int_equal(R.d[XIW_XDP_CNT_BAD_L3L4], 1);
		n = build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl });
		F[ETH_L + IP_L + 12] = (uint8_t)(i << 4);
		run(F, n);
		expect_pass();
		assert_int_equal(R.d[XIW_XDP_CNT_BAD_L3L4], 1);
	}
	/* IHL 15 / data offset 15 with a frame that ends before them */
	n = build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl });
	F[ETH_L] = 0x4f;
	run(F, n);
	expect_pass();
	assert_int_equal(R.d[XIW_XDP_CNT_BAD_L3L4], 1);
	n = build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = 20 });
	F[ETH_L + IP_L + 12] = 0xf0;
	run(F, n);
	expect_pass();
	assert_int_equal(R.d[XIW_XDP_CNT_BAD_L3L4], 1);
	/* an IPv4 fragment of the flow: the kernel reassembles it */
	n = build(F, &(struct fx){ .seq = 1, .pl = P, .pl_len = pl });
	F[ETH_L + 6] = 0x20;	/* MF */
	run(F, n);
	expect_pass();
	assert_int_equal(R.d[XIW_XDP_CNT_BAD_L3L4], 0);
	del_flows();
}

/*
 * Valid frames with random octets of the headers changed and random
 * lengths: the program only ever passes or steers, leaves the frame alone
 * (run() checks), and a record it writes describes a header that lies
 * inside the frame. Fixed seed: a failure reproduces.
 */
static void test_random_frames(void **state)
{
	unsigned int seed = 20261124, it, k, metas = 0, steered = 0;
	size_t n, pl, hdr;

	(void)state;
	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
	add_flow(true, XIW_XDP_FLOW_FPDU_ALIGNED | XIW_XDP_FLOW_MARKERS, 7);
	for (it = 0; it < 3000; it++) {
		bool v6 = rand_r(&seed) & 1;

		if (rand_r(&seed) & 1)
			pl = fpdu_tagged(P, (uint8_t)(rand_r(&seed) & 0xf), rand_r(&seed) & 1,
					 (uint32_t)rand_r(&seed), (uint64_t)rand_r(&seed),
					 (size_t)(rand_r(&seed) % 300));
		else
			pl = fpdu_untagged(P, (uint8_t)(rand_r(&seed) & 0xf), rand_r(&seed) & 1,
					   (uint32_t)(rand_r(&seed) & 3), (uint32_t)rand_r(&seed),
					   (uint32_t)rand_r(&seed), (size_t)(rand_r(&seed) % 300));
		n = build(F, &(struct fx){ .v6 = v6, .seq = (uint32_t)rand_r(&seed),
					   .pl = P, .pl_len = pl });
		for (k = rand_r(&seed) % 4; k; k--)	/* flip header octets */
			F[rand_r(&seed) % (v6 ? 100 : 80)] ^= (uint8_t)(1 + rand_r(&seed) % 255);
		if (rand_r(&seed) % 4 == 0)		/* cut it short */
			n = ETH_L + (size_t)rand_r(&seed) % (n - ETH_L + 1);
		run(F, n);
		assert_true(R.retval == XDP_PASS || R.retval == XDP_REDIRECT);
		steered += R.retval == XDP_REDIRECT;
		if (!R.has_meta)
			continue;
		metas++;
		assert_int_equal(R.meta.magic, XIW_XDP_META_MAGIC);
		assert_true(R.meta.payload_off <= R.meta.fpdu_off);
		hdr = R.meta.flags & XIW_XDP_META_F_TAGGED ?
		      XIW_DDP_TAGGED_HDR : XIW_DDP_UNTAGGED_HDR;
		assert_true(R.meta.fpdu_off + XIW_MPA_LEN_SIZE + hdr <= n);
		assert_true(R.meta.ulpdu_len >= hdr);
	}
	print_message("random frames: %u steered, %u with a record\n",
		      steered, metas);
	del_flows();
}


/* ------------------------------------------- XIW_XDP_FLOW_TRACK tests */

#define TRACK_F (XIW_XDP_META_F_FPDU_START | XIW_XDP_META_F_CRC_UNCHECKED | \
		 XIW_XDP_META_F_TRACKED)

/* A tracked IPv4 flow whose next FPDU starts at TCP sequence @seq. */
static void add_track(uint32_t flags, uint32_t seq, uint32_t st)
{
	struct xiw_xdp_flow_key k = key_of(false);
	struct xiw_xdp_flow v = {
		.conn_id = CONN_ID, .flags = XIW_XDP_FLOW_TRACK | flags,
		.xsk = XIW_XDP_XSK_BY_RXQ, .fpdu_seq = seq, .fpdu_state = st,
	};

	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.xiw_flows),
					     &k, &v, BPF_ANY), 0);
}

static struct xiw_xdp_flow get_track(void)
{
	struct xiw_xdp_flow_key k = key_of(false);
	struct xiw_xdp_flow v;

	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.xiw_flows),
					     &k, &v), 0);
	return v;
}

/* Run the segment of stream octets [@from, @from + @len) of P (P[0] is
 * TCP sequence number @seq0). */
static void run_seg(uint32_t seq0, size_t from, size_t len)
{
	run(F, build(F, &(struct fx){ .seq = seq0 + (uint32_t)from,
				      .pl = P + from, .pl_len = len }));
}

/* several FPDUs in one segment: record for the first, boundary after the
 * last; CRC on or off changes nothing (the field is always there) */
static void test_track_multi(void **state)
{
	const uint32_t S = 0xfffffe00;	/* wraps inside the stream */
	size_t a, b, c;

	(void)state;
	if (xsk_fd < 0)
		skip();
	for (int crc = 0; crc < 2; crc++) {
		add_track(crc ? XIW_XDP_FLOW_CRC : 0, S, XIW_XDP_TRACK_SYNCED);
		a = fpdu_untagged(P, RDMAP_SEND, true, 0, 5, 0, 10);
		b = fpdu_tagged(P + a, RDMAP_WRITE, false, 0x42, 77, 21);
		c = fpdu_untagged(P + a + b, RDMAP_SEND_SE, true, 0, 6, 0, 3);
		run_seg(S, 0, a + b + c);
		expect_meta();
		assert_int_equal(R.meta.flags, TRACK_F | XIW_XDP_META_F_LAST |
				 XIW_XDP_META_F_MORE);
		assert_int_equal(R.meta.fpdu_off, HDRS);
		assert_int_equal(R.meta.tcp_seq, S);
		assert_int_equal(R.meta.opcode, RDMAP_SEND);
		assert_int_equal(R.meta.msn, 5);
		assert_int_equal(R.meta.ulpdu_len, XIW_DDP_UNTAGGED_HDR + 10);
		assert_int_equal(get_track().fpdu_seq, S + (uint32_t)(a + b + c));
		assert_int_equal(get_track().fpdu_state, XIW_XDP_TRACK_SYNCED);
		/* the next segment starts at the boundary: tagged record */
		a = fpdu_tagged(P, RDMAP_READ_RESP, true, 9, 1ull << 40, 100);
		run_seg(S + (uint32_t)(get_track().fpdu_seq - S), 0, a);
		expect_meta();
		assert_int_equal(R.meta.flags, TRACK_F | XIW_XDP_META_F_TAGGED |
				 XIW_XDP_META_F_LAST);
		assert_true(R.meta.to == 1ull << 40);
	}
	del_flows();
}

/* an FPDU spanning three segments; the next one starts mid-segment */
static void test_track_spanning(void **state)
{
	const uint32_t S = 1000;
	size_t a, b, seg = 1448;

	(void)state;
	if (xsk_fd < 0)
		skip();
	add_track(0, S, XIW_XDP_TRACK_SYNCED);
	a = fpdu_tagged(P, RDMAP_WRITE, true, 1, 0, 3000);	/* 3020 */
	b = fpdu_untagged(P + a, RDMAP_SEND, true, 0, 1, 0, 2000);
	run_seg(S, 0, seg);
	expect_meta();
	assert_true(R.meta.flags & XIW_XDP_META_F_CONTINUES);
	assert_int_equal(get_track().fpdu_seq, S + a);
	run_seg(S, seg, seg);			/* the middle: nothing */
	expect_no_fpdu();
	assert_int_equal(get_track().fpdu_seq, S + a);
	run_seg(S, 2 * seg, seg);		/* tail of a, head of b */
	expect_meta();
	assert_int_equal(R.meta.tcp_seq, S + 2 * seg);
	assert_int_equal(R.meta.fpdu_off, HDRS + a - 2 * seg);
	assert_int_equal(R.meta.opcode, RDMAP_SEND);
	assert_int_equal(R.meta.ulpdu_len, XIW_DDP_UNTAGGED_HDR + 2000);
	assert_true(R.meta.flags & XIW_XDP_META_F_CONTINUES);
	assert_int_equal(get_track().fpdu_seq, S + a + b);
	/* a header cut by the segment's end: its length is followed, no
	 * record; the segment with the rest of the header has none either */
	add_track(0, S, XIW_XDP_TRACK_SYNCED);
	run_seg(S, 0, 8);
	expect_no_fpdu();
	assert_int_equal(get_track().fpdu_seq, S + a);
	assert_int_equal(get_track().fpdu_state, XIW_XDP_TRACK_SYNCED);
	del_flows();
}

/* out of order, old and overlapping segments */
static void test_track_ooo(void **state)
{
	const uint32_t S = 50000;
	size_t a, b, c;

	(void)state;
	if (xsk_fd < 0)
		skip();
	add_track(0, S, XIW_XDP_TRACK_SYNCED);
	a = fpdu_untagged(P, RDMAP_SEND, true, 0, 1, 0, 600);
	b = fpdu_untagged(P + a, RDMAP_SEND, true, 0, 2, 0, 600);
	c = fpdu_untagged(P + a + b, RDMAP_SEND, true, 0, 3, 0, 600);
	run_seg(S, a, b + c);		/* after a hole: no record, no change */
	expect_no_fpdu();
	assert_int_equal(get_track().fpdu_seq, S);
	assert_int_equal(get_track().fpdu_state, XIW_XDP_TRACK_SYNCED);
	run_seg(S - 500, 0, 400);	/* old data (seq below the boundary) */
	expect_no_fpdu();
	assert_int_equal(get_track().fpdu_seq, S);
	run_seg(S - 400, 0, 400);	/* ends exactly at the boundary */
	expect_no_fpdu();
	assert_int_equal(get_track().fpdu_seq, S);
	assert_int_equal(get_track().fpdu_state, XIW_XDP_TRACK_SYNCED);
	run_seg(S, 0, a);		/* the hole filled: record, boundary a */
	expect_meta();
	assert_int_equal(R.meta.msn, 1);
	assert_int_equal(get_track().fpdu_seq, S + a);
	/* a retransmission that starts before the boundary and covers it */
	run_seg(S, a - 100, 100 + b);
	expect_meta();
	assert_int_equal(R.meta.fpdu_off, HDRS + 100);
	assert_int_equal(R.meta.msn, 2);
	assert_int_equal(get_track().fpdu_seq, S + a + b);
	/* duplicate of a: nothing */
	run_seg(S, 0, a);
	expect_no_fpdu();
	assert_int_equal(get_track().fpdu_seq, S + a + b);
	/* markers: the walk knows none, so such a flow is not followed */
	add_track(XIW_XDP_FLOW_MARKERS, S, XIW_XDP_TRACK_SYNCED);
	run_seg(S, 0, a);
	expect_no_fpdu();
	assert_int_equal(get_track().fpdu_seq, S);
	del_flows();
}

/* malformed lengths and headers stop the flow (LOST) and count; a LOST
 * flow gets no records until re-synced */
static void test_track_malformed(void **state)
{
	const uint32_t S = 7;
	size_t a, b;

	(void)state;
	if (xsk_fd < 0)
		skip();
	a = fpdu_untagged(P, RDMAP_SEND, true, 0, 1, 0, 40);
	b = fpdu_untagged(P + a, RDMAP_SEND, true, 0, 2, 0, 40);
	/* second FPDU's length below the smallest header */
	add_track(0, S, XIW_XDP_TRACK_SYNCED);
	xiw_put_be16(P + a, 13);
	run_seg(S, 0, a + b);
	expect_malformed();
	assert_int_equal(R.d[XIW_XDP_CNT_TRACK_LOST], 1);
	assert_int_equal(get_track().fpdu_state, XIW_XDP_TRACK_LOST);
	assert_int_equal(get_track().fpdu_seq, S);
	xiw_put_be16(P + a, XIW_DDP_UNTAGGED_HDR + 40);
	run_seg(S, 0, a + b);			/* LOST: nothing */
	expect_no_fpdu();
	/* the first header has the wrong DDP version */
	add_track(0, S, XIW_XDP_TRACK_SYNCED);
	P[2] ^= 1;
	run_seg(S, 0, a + b);
	expect_malformed();
	assert_int_equal(get_track().fpdu_state, XIW_XDP_TRACK_LOST);
	P[2] ^= 1;
	/* a length field cut by the segment: LOST, not malformed */
	add_track(0, S, XIW_XDP_TRACK_SYNCED);
	run_seg(S, 0, a + 1);
	expect_meta();		/* the first FPDU is whole */
	assert_int_equal(get_track().fpdu_state, XIW_XDP_TRACK_LOST);
	assert_int_equal(R.d[XIW_XDP_CNT_TRACK_LOST], 1);
	/* more FPDUs than the program follows in one segment */
	add_track(0, S, XIW_XDP_TRACK_SYNCED);
	for (b = 0, a = 0; a <= XIW_XDP_TRACK_MAX; a++)
		b += fpdu_tagged(P + b, RDMAP_WRITE, true, 1, 0, 0);
	run_seg(S, 0, b);
	assert_int_equal(get_track().fpdu_state, XIW_XDP_TRACK_LOST);
	/* one fewer fits */
	add_track(0, S, XIW_XDP_TRACK_SYNCED);
	run_seg(S, 0, b - (XIW_MPA_LEN_SIZE + XIW_DDP_TAGGED_HDR + 2 + 4));
	expect_meta();
	assert_int_equal(get_track().fpdu_state, XIW_XDP_TRACK_SYNCED);
	del_flows();
}

/*
 * Random streams of FPDUs cut into random segments, some lost, some
 * reordered, some damaged: every record names an FPDU that really starts
 * where it says (length field and opcode as built), no record ever claims
 * octets beyond the frame, and the boundary never moves onto a non-FPDU
 * octet unless a damaged length made it (then the engine re-syncs).
 */
static void test_track_random(void **state)
{
	static bool start[16384];
	unsigned int seed = 77, it, metas = 0;
	const uint32_t S = 0x7ffff000;

	(void)state;
	if (xsk_fd < 0)
		skip();
	for (it = 0; it < 200; it++) {
		size_t len = 0, off = 0;
		bool damaged = false;

		memset(start, 0, sizeof(start));
		while (len < 12000) {
			start[len] = true;
			if (rand_r(&seed) & 1)
				len += fpdu_tagged(P + len, RDMAP_WRITE, true, 1, 0,
						   (size_t)(rand_r(&seed) % 2000));
			else
				len += fpdu_untagged(P + len, RDMAP_SEND, true, 0, 1, 0,
						     (size_t)(rand_r(&seed) % 200));
		}
		add_track(0, S, XIW_XDP_TRACK_SYNCED);
		while (off < len) {
			size_t n = 1 + (size_t)rand_r(&seed) % 1448, fo;
			unsigned int r = (unsigned int)rand_r(&seed) % 16;

			if (off + n > len)
				n = len - off;
			if (r == 0) {		/* lost: next one is out of order */
				off += n;
				continue;
			}
			if (r == 1) {		/* damaged octet */
				P[off + (size_t)rand_r(&seed) % n] ^= 0x5a;
				damaged = true;
			}
			run_seg(S, off, n);
			if (R.has_meta) {
				metas++;
				fo = R.meta.tcp_seq - S + R.meta.fpdu_off - R.meta.payload_off;
				assert_true((uint32_t)R.meta.fpdu_off + XIW_MPA_LEN_SIZE <= R.out_len - R.ctx.data);
				assert_true(fo >= off && fo < off + n);
				if (!damaged)
					assert_true(start[fo]);
			}
			off += n;
		}
	}
	print_message("track random: %u records\n", metas);
	del_flows();
}

/*
 * Live frames (BPF_F_TEST_XDP_LIVE_FRAMES): the redirect really happens,
 * so the frame and the record in front of it must arrive in the AF_XDP
 * socket's RX ring (copy mode copies data_meta..data_end; the record sits
 * just before the frame in the UMEM chunk).
 */
static void test_live_redirect(void **state)
{
	struct xdp_mmap_offsets off;
	socklen_t olen = sizeof(off);
	size_t pl = fpdu_tagged(P, RDMAP_WRITE, true, 0xabcd, 77, 200), n;
	size_t fill_len, rx_len;
	struct xdp_md ctx_in;
	struct xiw_xdp_meta m;
	struct xdp_desc *d;
	uint64_t *fill;
	uint32_t *fprod, *rprod, *rcons, i;
	void *fmap, *rmap;
	LIBBPF_OPTS(bpf_test_run_opts, o);
	struct xiw_xdp_slot_cnt sc0, sc1;
	uint32_t slot0 = 0;	/* rx queue 0 of the test run: XSK_BY_RXQ */
	int scfd = bpf_map__fd(skel->maps.xiw_slot_cnt);
	bool refused = false;
	int err;

	(void)state;
	if (xsk_fd < 0)
		skip();
	assert_int_equal(bpf_map_lookup_elem(scfd, &slot0, &sc0), 0);
	assert_int_equal(getsockopt(xsk_fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &olen), 0);
	fill_len = off.fr.desc + 64 * sizeof(uint64_t);
	rx_len = off.rx.desc + 64 * sizeof(struct xdp_desc);
	fmap = mmap(NULL, fill_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		    xsk_fd, XDP_UMEM_PGOFF_FILL_RING);
	assert_true(fmap != MAP_FAILED);
	rmap = mmap(NULL, rx_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		    xsk_fd, XDP_PGOFF_RX_RING);
	assert_true(rmap != MAP_FAILED);
	fill = (uint64_t *)((char *)fmap + off.fr.desc);
	fprod = (uint32_t *)((char *)fmap + off.fr.producer);
	rprod = (uint32_t *)((char *)rmap + off.rx.producer);
	rcons = (uint32_t *)((char *)rmap + off.rx.consumer);
	d = (struct xdp_desc *)((char *)rmap + off.rx.desc);
	for (i = 0; i < 8; i++)
		fill[i] = (uint64_t)i * 4096;
	__atomic_store_n(fprod, 8, __ATOMIC_RELEASE);

	add_flow(false, XIW_XDP_FLOW_FPDU_ALIGNED, 0);
	n = build(F, &(struct fx){ .seq = 4242, .pl = P, .pl_len = pl });
	memset(&ctx_in, 0, sizeof(ctx_in));
	ctx_in.data_end = (uint32_t)n;
	o.data_in = F;
	o.data_size_in = (uint32_t)n;
	o.ctx_in = &ctx_in;
	o.ctx_size_in = sizeof(ctx_in);
	o.flags = BPF_F_TEST_XDP_LIVE_FRAMES;
	o.repeat = 1;
	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.xiw_xdp), &o);
	if (err == -EINVAL || err == -EOPNOTSUPP) {
		print_message("skip: live-frame test runs refused (%d)\n", err);
		refused = true;
		goto unmap;
	}
	assert_int_equal(err, 0);
	assert_int_equal(__atomic_load_n(rprod, __ATOMIC_ACQUIRE) -
			 __atomic_load_n(rcons, __ATOMIC_RELAXED), 1);
	i = __atomic_load_n(rcons, __ATOMIC_RELAXED) & 63;
	assert_int_equal(d[i].len, n);
	assert_true(d[i].addr >= sizeof(m));
	assert_memory_equal((char *)umem + d[i].addr, F, n);
	memcpy(&m, (char *)umem + d[i].addr - sizeof(m), sizeof(m));
	assert_int_equal(m.magic, XIW_XDP_META_MAGIC);
	assert_int_equal(m.conn_id, CONN_ID);
	assert_int_equal(m.tcp_seq, 4242);
	assert_int_equal(m.stag, 0xabcd);
	assert_true(m.to == 77);
	assert_int_equal(m.ulpdu_len, XIW_DDP_TAGGED_HDR + 200);
	/* the slot's own steered counter (xiw_slot_cnt) counted it */
	assert_int_equal(bpf_map_lookup_elem(scfd, &slot0, &sc1), 0);
	assert_true(sc1.steered == sc0.steered + 1);
	__atomic_store_n(rcons, __atomic_load_n(rcons, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
unmap:
	del_flows();
	munmap(fmap, fill_len);
	munmap(rmap, rx_len);
	if (refused)
		skip();
}

/* ------------------------------------------------------------ setup */

static int setup(void **state)
{
	int err;

	(void)state;
	if (geteuid() != 0) {
		print_message("skip: loading XDP programs needs root\n");
		exit(77);
	}
	skel = xiw_xdp__open_and_load();
	if (!skel) {
		err = -errno;
		if (err == -EPERM) {
			print_message("skip: loading BPF not permitted\n");
			exit(77);
		}
		print_message("xiw_xdp: load failed: %s\n", strerror(-err));
		return -1;
	}
	xsk_fd = xsk_open();
	if (xsk_fd < 0) {
		print_message("note: no AF_XDP socket on lo (%s): steering is "
			      "checked through the XDP_PASS fallback and the "
			      "counters; metadata cases skip\n", strerror(-xsk_fd));
		xsk_fd = -1;
	} else {
		xsk_slot(true);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (xsk_fd >= 0)
		close(xsk_fd);
	if (umem)
		munmap(umem, umem_len);
	xiw_xdp__destroy(skel);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unregistered_passes),
		cmocka_unit_test(test_flow_steered),
		cmocka_unit_test(test_syn_listen),
		cmocka_unit_test(test_meta_tagged_write),
		cmocka_unit_test(test_meta_untagged_send),
		cmocka_unit_test(test_meta_read_req),
		cmocka_unit_test(test_meta_lengths),
		cmocka_unit_test(test_meta_markers),
		cmocka_unit_test(test_meta_ipv6_and_frags),
		cmocka_unit_test(test_malformed_fpdu),
		cmocka_unit_test(test_no_fpdu_start),
		cmocka_unit_test(test_short_frames),
		cmocka_unit_test(test_bad_l3l4),
		cmocka_unit_test(test_random_frames),
		cmocka_unit_test(test_track_multi),
		cmocka_unit_test(test_track_spanning),
		cmocka_unit_test(test_track_ooo),
		cmocka_unit_test(test_track_malformed),
		cmocka_unit_test(test_track_random),
		cmocka_unit_test(test_live_redirect),
	};

	return cmocka_run_group_tests_name("bpf_xdp", tests, setup, teardown);
}
