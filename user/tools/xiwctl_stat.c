// SPDX-License-Identifier: MIT
/*
 * xiwctl stat: the counters of an attached xiw_xdp (per-CPU array, summed)
 * and the connections and listeners registered in its maps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xiwctl.h"

static const char *const cnt_name[XIW_XDP_CNT_MAX] = {
	[XIW_XDP_CNT_RX] = "rx",
	[XIW_XDP_CNT_PASSED] = "passed",
	[XIW_XDP_CNT_STEERED] = "steered",
	[XIW_XDP_CNT_SYN] = "syn",
	[XIW_XDP_CNT_NO_XSK] = "no_xsk",
	[XIW_XDP_CNT_PARSED] = "parsed",
	[XIW_XDP_CNT_MALFORMED] = "malformed",
	[XIW_XDP_CNT_NO_FPDU] = "no_fpdu",
	[XIW_XDP_CNT_BAD_L3L4] = "bad_l3l4",
	[XIW_XDP_CNT_META_FAIL] = "meta_fail",
	[XIW_XDP_CNT_DROPPED] = "dropped",
	[XIW_XDP_CNT_TRACK_LOST] = "track_lost",
};

/* what the engines owning the XSKMAP slots add (struct xiw_xdp_slot_cnt) */
struct slot_sum {
	__u64 retrans, sacked, meta_used, meta_mismatch, resync;
};

/* Sum the per-CPU counters into @sum. 0 or -errno. */
static int read_counters(int fd, __u64 *sum)
{
	int ncpu = libbpf_num_possible_cpus(), c, err = 0;
	__u64 *v;
	__u32 i;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < XIW_XDP_CNT_MAX; i++) {
		sum[i] = 0;
		if (bpf_map_lookup_elem(fd, &i, v)) {
			err = -errno;
			break;
		}
		for (c = 0; c < ncpu; c++)
			sum[i] += v[c];
	}
	free(v);
	return err;
}

/* "addr:port" of one side of a flow key */
static void endpoint(char *buf, size_t len, __u8 family, const __u32 *addr,
		     __u16 port_be)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (family == XIW_XDP_FAMILY_IPV4) {
		inet_ntop(AF_INET, addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(port_be));
	} else if (family == XIW_XDP_FAMILY_IPV6) {
		inet_ntop(AF_INET6, addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(port_be));
	} else {
		snprintf(buf, len, "family-%u:%u", family, ntohs(port_be));
	}
}

/* @st: struct xiw_xdp_flow.fpdu_state (the program's FPDU tracking) */
static void flow_flags(char *buf, size_t len, __u32 f, __u32 st)
{
	snprintf(buf, len, "%s%s%s%s%s",
		 f & XIW_XDP_FLOW_FPDU_ALIGNED ? "aligned," : "",
		 !(f & XIW_XDP_FLOW_TRACK) ? "" :
		 st == XIW_XDP_TRACK_LOST ? "track-lost," : "track,",
		 f & XIW_XDP_FLOW_MARKERS ? "markers," : "",
		 f & XIW_XDP_FLOW_CRC ? "crc," : "",
		 f & XIW_XDP_FLOW_NO_PARSE ? "no-parse," : "");
	if (buf[0])
		buf[strlen(buf) - 1] = 0;
	else
		snprintf(buf, len, "-");
}

static void xsk_name(char *buf, size_t len, __u32 xsk)
{
	if (xsk == XIW_XDP_XSK_BY_RXQ)
		snprintf(buf, len, "rxq");
	else
		snprintf(buf, len, "%u", xsk);
}

static int print_flows(int fd)
{
	struct xiw_xdp_flow_key k, next;
	struct xiw_xdp_flow v;
	char peer[64], local[64], fl[48], xs[16];
	void *prev = NULL;
	int n = 0;

	printf("  connections (flow map %s):\n", XIW_XDP_MAP_FLOWS);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;	/* deleted meanwhile */
		if (!n++)
			printf("    %10s  %-24s %-24s %-20s %4s %12s %14s\n",
			       "conn", "peer", "local", "flags", "xsk",
			       "packets", "bytes");
		endpoint(peer, sizeof(peer), k.family, k.saddr, k.sport);
		endpoint(local, sizeof(local), k.family, k.daddr, k.dport);
		flow_flags(fl, sizeof(fl), v.flags, v.fpdu_state);
		xsk_name(xs, sizeof(xs), v.xsk);
		printf("    %10u  %-24s %-24s %-20s %4s %12llu %14llu\n",
		       v.conn_id, peer, local, fl, xs,
		       (unsigned long long)v.packets,
		       (unsigned long long)v.bytes);
	}
	if (!n)
		printf("    (none registered)\n");
	return n;
}

static int print_listeners(int fd)
{
	struct xiw_xdp_listen_key k, next;
	struct xiw_xdp_listen v;
	void *prev = NULL;
	char xs[16];
	int n = 0;

	printf("  listeners (map %s):\n", XIW_XDP_MAP_LISTEN);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &v))
			continue;
		xsk_name(xs, sizeof(xs), v.xsk);
		printf("    listen %u: port %u ipv%u xsk %s syns %llu\n",
		       v.listen_id, ntohs(k.port), k.family, xs,
		       (unsigned long long)v.syns);
		n++;
	}
	if (!n)
		printf("    (none registered)\n");
	return n;
}

/* slots of the XSKMAP (which hold a socket cannot be read from user
 * space: XSKMAP lookups are BPF-only) */
static int xsk_slots(int fd)
{
	struct bpf_map_info mi;
	__u32 len = sizeof(mi);

	memset(&mi, 0, sizeof(mi));
	if (bpf_obj_get_info_by_fd(fd, &mi, &len))
		return -errno;
	return (int)mi.max_entries;
}

/*
 * Sum the per-slot counters (retransmitted segments, SACKed octets,
 * records used and rejected, re-syncs, added by the engines owning the
 * slots). 0, or -ENOENT without the map.
 */
static int read_slot_counters(int fd, struct slot_sum *sum)
{
	struct xiw_xdp_slot_cnt sc;
	__u32 i;

	memset(sum, 0, sizeof(*sum));
	if (fd < 0)
		return -ENOENT;
	for (i = 0; i < XIW_XDP_MAX_XSKS; i++) {
		if (bpf_map_lookup_elem(fd, &i, &sc))
			break;
		sum->retrans += sc.retrans;
		sum->sacked += sc.sacked;
		sum->meta_used += sc.meta_used;
		sum->meta_mismatch += sc.meta_mismatch;
		sum->resync += sc.resync;
	}
	return 0;
}

/* Print everything about one attached xiw_xdp. 0 or -errno. */
int xiwctl_stat_one(const struct xiwctl_att *a)
{
	struct xiw_xdp_cfg cfg = { 0 };
	__u64 c[XIW_XDP_CNT_MAX];
	struct slot_sum ss;
	char rtxs[24] = "-", sackeds[24] = "-", useds[24] = "-",
	     mism[24] = "-", resyncs[24] = "-";
	__u32 zero = 0, i;
	int err;

	printf("%s (ifindex %d): %s prog id %u, %s mode", a->ifname,
	       a->ifindex, a->prog_name, a->prog_id, xiwctl_mode_name(a->mode));
	if (!bpf_map_lookup_elem(a->cfg_fd, &zero, &cfg) && cfg.abi) {
		printf(", zero-copy %s", cfg.flags & XIW_XDP_CFG_ZEROCOPY ?
		       "requested" : "off (copy mode)");
		if (cfg.flags & XIW_XDP_CFG_NO_PARSE)
			printf(", FPDU parsing off");
	} else {
		printf(", config not written (attached with ip link?): copy mode");
	}
	printf("\n");
	err = read_counters(a->cnt_fd, c);
	if (err) {
		fprintf(stderr, "xiwctl: %s: reading counters: %s\n",
			a->ifname, strerror(-err));
		return err;
	}
	if (!read_slot_counters(a->slot_cnt_fd, &ss)) {
		snprintf(rtxs, sizeof(rtxs), "%llu", (unsigned long long)ss.retrans);
		snprintf(sackeds, sizeof(sackeds), "%llu", (unsigned long long)ss.sacked);
		snprintf(useds, sizeof(useds), "%llu", (unsigned long long)ss.meta_used);
		snprintf(mism, sizeof(mism), "%llu", (unsigned long long)ss.meta_mismatch);
		snprintf(resyncs, sizeof(resyncs), "%llu", (unsigned long long)ss.resync);
	}
	printf("  %-10s %-10s %-10s %-10s %-10s %-12s %-12s\n", "steered",
	       "passed", "parsed", "dropped", "malformed", "retransmit*",
	       "sacked(B)*");
	printf("  %-10llu %-10llu %-10llu %-10llu %-10llu %-12s %-12s\n",
	       (unsigned long long)c[XIW_XDP_CNT_STEERED],
	       (unsigned long long)c[XIW_XDP_CNT_PASSED],
	       (unsigned long long)c[XIW_XDP_CNT_PARSED],
	       (unsigned long long)c[XIW_XDP_CNT_DROPPED],
	       (unsigned long long)c[XIW_XDP_CNT_MALFORMED], rtxs, sackeds);
	printf("  all counters:");
	for (i = 0; i < XIW_XDP_CNT_MAX; i++)
		printf(" %s=%llu", cnt_name[i], (unsigned long long)c[i]);
	printf(" retransmitted=%s sacked_bytes=%s meta_used=%s meta_mismatch=%s"
	       " resync=%s", rtxs, sackeds, useds, mism, resyncs);
	printf("\n  * segments utcp (xiwarp's user-space TCP) retransmitted and "
	       "octets its peers SACKed,\n    added by the processes owning "
	       "the AF_XDP sockets (map %s; \"-\": an object without it);\n"
	       "    meta_used/meta_mismatch: FPDU headers the engine took from "
	       "the records / records it rejected\n",
	       XIW_XDP_MAP_SLOT_CNT);
	printf("  AF_XDP socket slots (%s, one per RX queue): %d\n",
	       XIW_XDP_MAP_XSKS, xsk_slots(a->xsks_fd));
	print_flows(a->flows_fd);
	print_listeners(a->listen_fd);
	return 0;
}
