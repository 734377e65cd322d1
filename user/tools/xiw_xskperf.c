// SPDX-License-Identifier: MIT
/*
 * xiw_xskperf: raw AF_XDP copy-mode throughput between two interfaces,
 * the ceiling the xsk transport is measured against (scripts/bench.sh).
 * No TCP, no engine: one side transmits the same MTU-sized TCP/IPv4
 * frames as fast as the TX ring and sendto() allow, the other receives
 * them through the xiw_xdp program (a registered flow -> its XSKMAP slot
 * -> an AF_XDP socket) and counts. The same kernel paths the xsk
 * transport uses (copy mode, multi-buffer above 3840 B), minus utcp.
 *
 *   xiw_xskperf rx IF SRC_IP DST_IP [-t SECONDS]
 *   xiw_xskperf tx IF SRC_IP DST_IP [-s FRAME_BYTES] [-t SECONDS]
 *
 * rx prints "rx frames N bytes B seconds S Gbit/s G payload_Gbit/s P"
 * (payload: what TCP with timestamps would carry in those frames),
 * counting from the first frame to the last; tx prints the frames sent.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include "xiwarp/xiwarp.h"
#include "xsk.h"

#define PERF_SPORT 40009
#define PERF_DPORT 9
#define TX_FRAMES 1024

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int usage(FILE *f, int rc)
{
	fprintf(f,
		"usage: xiw_xskperf rx IF SRC_IP DST_IP [-t SECONDS]\n"
		"       xiw_xskperf tx IF SRC_IP DST_IP [-s FRAME_BYTES] [-t SECONDS]\n"
		"Raw AF_XDP copy-mode TX -> XDP redirect -> AF_XDP RX throughput (the\n"
		"ceiling of the xsk transport). rx needs the xiw_xdp program on IF\n"
		"(xiwctl attach IF); tx needs nothing but IF. Frames are TCP/IPv4 from\n"
		"SRC_IP:%d to DST_IP:%d.\n"
		"  -s BYTES    frame size, Ethernet header included (default: MTU + 14)\n"
		"  -t SECONDS  run time (default 5); rx stops 1 s after the last frame\n",
		PERF_SPORT, PERF_DPORT);
	return rc;
}

/* One TCP/IPv4 frame of @size octets into @f. */
static void build_frame(uint8_t *f, uint32_t size, const uint8_t dmac[6],
			const uint8_t smac[6], uint32_t src, uint32_t dst)
{
	uint32_t iplen = size - 14;
	struct utcp_csum cs;
	uint16_t sum;

	memset(f, 0, size);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x08;
	f[14] = 0x45;
	f[16] = (uint8_t)(iplen >> 8);
	f[17] = (uint8_t)iplen;
	f[20] = 0x40;
	f[22] = 64;
	f[23] = 6;
	memcpy(f + 26, &src, 4);
	memcpy(f + 30, &dst, 4);
	utcp_csum_init(&cs, 0);
	utcp_csum_add(&cs, f + 14, 20);
	sum = htons(utcp_csum_final(&cs));
	memcpy(f + 24, &sum, 2);
	f[34] = PERF_SPORT >> 8;
	f[35] = PERF_SPORT & 0xff;
	f[36] = PERF_DPORT >> 8;
	f[37] = PERF_DPORT & 0xff;
	f[46] = 5 << 4;
	f[47] = 0x10;		/* ACK */
	f[48] = 0xff;
	f[49] = 0xff;
	utcp_csum_init(&cs, utcp_csum_pseudo(ntohl(src), ntohl(dst), 6, iplen - 20));
	utcp_csum_add(&cs, f + 34, iplen - 20);
	sum = htons(utcp_csum_final(&cs));
	memcpy(f + 50, &sum, 2);
}

static int next_hop_mac(int ifindex, uint32_t dst, uint8_t mac[6])
{
	struct xsk_route r;
	int err = xsk_nl_route(dst, &r);

	for (int i = 0; !err && i < 1500; i++) {
		err = xsk_nl_neigh(ifindex, r.nexthop, mac, i % 100 == 0);
		if (err != -EAGAIN)
			return err;
		err = 0;
		usleep(2000);
	}
	return err ? err : -EHOSTUNREACH;
}

static int run_tx(int ifindex, uint32_t src, uint32_t dst, uint32_t size, double secs)
{
	struct xsk_umem *u = xsk_umem_get(NULL);
	uint32_t per = (size + XSK_FRAME - 1) / XSK_FRAME, nfree, mtu;
	uint64_t *fr, sent = 0;
	uint8_t dmac[6], smac[6], *frame;
	struct xsk_sock s;
	int64_t base;
	double t0, t;
	int err;

	if ((err = xsk_nl_link(ifindex, smac, &mtu)) || (err = next_hop_mac(ifindex, dst, dmac))) {
		fprintf(stderr, "xiw_xskperf: link/neighbour: %s\n", strerror(-err));
		return 1;
	}
	if (!size)
		size = mtu + 14;
	per = (size + XSK_FRAME - 1) / XSK_FRAME;
	if ((err = xsk_sock_open(&s, ifindex, 0, false))) {
		fprintf(stderr, "xiw_xskperf: AF_XDP socket: %s\n", strerror(-err));
		return 1;
	}
	if (per > 1 && !s.sg) {
		fprintf(stderr, "xiw_xskperf: %u-byte frames need multi-buffer AF_XDP (kernel 6.6+)\n", size);
		return 1;
	}
	base = xsk_umem_frames_take(TX_FRAMES);
	fr = calloc(TX_FRAMES, sizeof(*fr));
	frame = malloc(size);
	if (base < 0 || !fr || !frame)
		return 1;
	build_frame(frame, size, dmac, smac, src, dst);
	/* every TX frame holds its piece of the same packet: per frames per
	 * packet, TX_FRAMES / per packets in flight at most */
	for (uint32_t i = 0; i < TX_FRAMES; i++) {
		uint32_t piece = i % per, off = piece * XSK_FRAME;
		uint32_t len = size - off < XSK_FRAME ? size - off : XSK_FRAME;

		fr[i] = (uint64_t)base + (uint64_t)i * XSK_FRAME;
		memcpy(u->base + fr[i], frame + off, len);
	}
	nfree = TX_FRAMES / per;	/* packets we may have outstanding */
	t0 = now_s();
	for (t = t0; t - t0 < secs; t = now_s()) {
		uint32_t pos, n = xsk_cons_avail(&s.comp, &pos), k, room;

		if (n) {
			xsk_cons_release(&s.comp, n);
			nfree += n / per;
		}
		room = xsk_prod_free(&s.tx) / per;
		k = nfree < room ? nfree : room;
		if (k > 64)
			k = 64;
		pos = xsk_prod_pos(&s.tx);
		for (uint32_t p = 0; p < k; p++) {
			uint32_t slot = (uint32_t)((sent + p) % (TX_FRAMES / per)) * per;

			for (uint32_t q = 0; q < per; q++) {
				struct xdp_desc *d = xsk_desc_slot(&s.tx, pos + p * per + q);
				uint32_t off = q * XSK_FRAME;

				d->addr = fr[slot + q];
				d->len = size - off < XSK_FRAME ? size - off : XSK_FRAME;
				d->options = q + 1 < per ? XDP_PKT_CONTD : 0;
			}
		}
		if (k) {
			xsk_prod_submit(&s.tx, k * per);
			nfree -= k;
			sent += k;
		}
		if (sendto(s.fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
		    errno != EAGAIN && errno != EBUSY && errno != ENOBUFS) {
			fprintf(stderr, "xiw_xskperf: sendto: %s\n", strerror(errno));
			return 1;
		}
	}
	printf("tx frames %llu size %u seconds %.2f pps %.0f\n", (unsigned long long)sent,
	       size, t - t0, (double)sent / (t - t0));
	return 0;
}

static int run_rx(int ifindex, uint32_t src, uint32_t dst, double secs)
{
	struct xiw_xdp_flow_key key;
	struct xsk_maps m;
	struct xsk_sock s;
	char why[160];
	uint64_t frames = 0, bytes = 0, pkts = 0;
	double t0 = 0, tl = 0, start = now_s();
	uint32_t slot = 0, fpos;
	int64_t base;
	int err, lock = -1;

	if ((err = xsk_maps_open(ifindex, &m, why, sizeof(why)))) {
		fprintf(stderr, "xiw_xskperf: %s\n", why);
		return 1;
	}
	for (; slot < XIW_XDP_MAX_XSKS && lock < 0; slot++)
		lock = xsk_slot_claim(m.prog_id, slot);
	slot--;
	if (lock < 0 || (err = xsk_sock_open(&s, ifindex, 0, false))) {
		fprintf(stderr, "xiw_xskperf: no slot or AF_XDP socket\n");
		return 1;
	}
	base = xsk_umem_frames_take(XSK_RX_FRAMES);
	if (base < 0)
		return 1;
	fpos = xsk_prod_pos(&s.fill);
	for (uint32_t i = 0; i < XSK_RX_FRAMES; i++)
		*xsk_addr_slot(&s.fill, fpos + i) = (uint64_t)base + i * XSK_FRAME;
	xsk_prod_submit(&s.fill, XSK_RX_FRAMES);
	if (bpf_map_update_elem(m.xsks_fd, &slot, &s.fd, BPF_ANY))
		return 1;
	xsk_flow_key4(&key, src, PERF_SPORT, dst, PERF_DPORT);
	if ((err = xsk_flow_add(&m, &key, 1, slot))) {
		fprintf(stderr, "xiw_xskperf: flow map: %s\n", strerror(-err));
		return 1;
	}
	printf("rx ready\n");
	fflush(stdout);
	for (;;) {
		uint32_t pos, n = xsk_cons_avail(&s.rx, &pos);
		double t = now_s();

		if (!n) {
			if ((frames && t - tl > 1.0) || (!frames && t - start > secs + 10))
				break;
			usleep(50);
			continue;
		}
		if (!frames)
			t0 = t;
		tl = t;
		fpos = xsk_prod_pos(&s.fill);
		for (uint32_t i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_desc_slot(&s.rx, pos + i);

			bytes += d->len;
			frames++;
			pkts += !(d->options & XDP_PKT_CONTD);
			*xsk_addr_slot(&s.fill, fpos + i) = d->addr & XSK_ADDR_MASK;
		}
		xsk_prod_submit(&s.fill, n);
		xsk_cons_release(&s.rx, n);
	}
	xsk_flow_del(&m, &key);
	if (!pkts || tl <= t0) {
		printf("rx frames 0\n");
		return 1;
	}
	/* payload: frame minus Ethernet, IPv4, TCP with timestamps */
	printf("rx frames %llu bytes %llu seconds %.2f Gbit/s %.3f payload_Gbit/s %.3f\n",
	       (unsigned long long)pkts, (unsigned long long)bytes, tl - t0,
	       (double)bytes * 8 / (tl - t0) / 1e9,
	       (double)(bytes - pkts * (14 + 20 + 32)) * 8 / (tl - t0) / 1e9);
	return 0;
}

int main(int argc, char **argv)
{
	struct in_addr src, dst;
	uint32_t size = 0;
	double secs = 5;
	int opt, ifindex;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout, 0);
	if (argc < 5)
		return usage(stderr, 2);
	optind = 5;
	while ((opt = getopt(argc, argv, "s:t:h")) != -1) {
		switch (opt) {
		case 's': size = (uint32_t)atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		case 'h': return usage(stdout, 0);
		default: return usage(stderr, 2);
		}
	}
	ifindex = (int)if_nametoindex(argv[2]);
	if (!ifindex || inet_pton(AF_INET, argv[3], &src) != 1 ||
	    inet_pton(AF_INET, argv[4], &dst) != 1) {
		fprintf(stderr, "xiw_xskperf: bad interface or address\n");
		return 2;
	}
	if (size && (size < 64 || size > XSK_MAX_PKT)) {
		fprintf(stderr, "xiw_xskperf: -s must be 64..%u\n", XSK_MAX_PKT);
		return 2;
	}
	if (!strcmp(argv[1], "tx"))
		return run_tx(ifindex, src.s_addr, dst.s_addr, size, secs);
	if (!strcmp(argv[1], "rx"))
		return run_rx(ifindex, src.s_addr, dst.s_addr, secs);
	return usage(stderr, 2);
}
