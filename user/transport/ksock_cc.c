// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ksock: the congestion control of the engine's kernel TCP sockets
 * (XIW_TCP_CONGESTION, TCP_CONGESTION in tcp(7)).
 *
 * Unset, a socket keeps the host's default (net.ipv4.tcp_congestion_control
 * of its network namespace), as any TCP program's would. Set, the engine
 * asks for that algorithm on every socket it connects or listens on;
 * accepted sockets inherit their listener's. The knob exists for the
 * same reason as iperf3's -C: to compare like with like. Measured on the
 * demo's veth pair (2026-11-29, 2 vCPUs): the host's BBR, with no fq
 * qdisc, paces in TCP itself and held one stream to ~18 Gb/s (iperf3
 * 17.6 Gb/s, 64 KB ib_write_bw 2144 MB/s); with cubic, iperf3 gave
 * 41-44 Gb/s and ib_write_bw 6057 MB/s (medians of 6 interleaved runs).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "xiwarp/xiwarp.h"
#include "ksock.h"

int xiw_ksock_set_cc(int fd, const char *name)
{
	if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, strlen(name)))
		return -errno;
	return 0;
}

/* say once why the knob is not applied */
static void cc_warn(const char *name, int err)
{
	static int warned;

	if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		return;
	xiw_log(XIW_LOG_WARN,
		"XIW_TCP_CONGESTION=%s: %s (%s); the engine's sockets keep the host's default",
		name, strerror(-err),
		err == -ENOENT ? "no such algorithm: see net.ipv4.tcp_available_congestion_control" :
		err == -EPERM ? "not in net.ipv4.tcp_allowed_congestion_control, and no CAP_NET_ADMIN" :
		"setsockopt TCP_CONGESTION");
}

void xiw_ksock_apply_cc(int fd)
{
	const char *name = getenv("XIW_TCP_CONGESTION");
	int err;

	if (!name || !*name)
		return;
	err = xiw_ksock_set_cc(fd, name);
	if (err)
		cc_warn(name, err);
}
