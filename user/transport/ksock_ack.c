// SPDX-License-Identifier: MIT
/*
 * ksock, send side: the TCP send state behind ACK completions (seed 000)
 * and the sockops watermark (bpf/xiw_sockops.bpf.c).
 *
 * The exact numbers: SIOCOUTQ is write_seq - snd_una (bytes written and
 * not yet acknowledged, in bytes). TCP_INFO's tcpi_bytes_acked is the
 * 64-bit count of bytes snd_una has moved (tcp_snd_una_update adds each
 * advance), so it is snd_una in a byte-count space with a fixed offset.
 * tcpi_snd_una itself is not in TCP_INFO; tcpi_unacked counts segments,
 * not bytes; tcpi_notsent_bytes misses what is in flight. Two calls are
 * not atomic, so SIOCOUTQ is read before and after TCP_INFO: with no
 * writer, the queue length changes exactly when snd_una moves, so equal
 * readings mean the pair belongs together.
 *
 * Own file because it needs <linux/tcp.h> (struct tcp_info with
 * tcpi_bytes_acked), which clashes with glibc's <netinet/tcp.h>.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include "xiwarp/xiwarp.h"
#include "xiw_sockops.h"
#include "ksock.h"
#include "llp.h"

#define ACK_STATE_TRIES 8

int xiw_ksock_poll_fd(struct xiw_ksock *l)
{
	return xiw_ksock_fd(l);
}

static int outq_read(int fd, uint32_t *outq)
{
	int v;

	if (ioctl(fd, SIOCOUTQ, &v))
		return -errno;
	*outq = (uint32_t)v;
	return 0;
}

static int bytes_acked(int fd, uint64_t *out)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		return -errno;
	if (len < offsetof(struct tcp_info, tcpi_bytes_acked) +
		  sizeof(ti.tcpi_bytes_acked))
		return -EOPNOTSUPP;	/* kernel < 4.2 */
	*out = ti.tcpi_bytes_acked;
	return 0;
}

/**
 * xiw_ksock_ack_state() - one consistent reading of the send state.
 * @una:  acknowledged-bytes count (tcpi_bytes_acked mod 2^32).
 * @outq: bytes written but not yet acknowledged (SIOCOUTQ).
 * Callers hold the connection's send lock (no write in between).
 * Return: 0, -EAGAIN if ACKs kept racing the reads, other -errno.
 */
int xiw_ksock_ack_state(struct xiw_ksock *l, uint32_t *una, uint32_t *outq)
{
	int fd = xiw_ksock_fd(l);
	uint32_t q1 = 0, q2 = 0;
	uint64_t acked = 0;
	int ret;

	for (int i = 0; i < ACK_STATE_TRIES; i++) {
		ret = outq_read(fd, &q1);
		if (!ret)
			ret = bytes_acked(fd, &acked);
		if (!ret)
			ret = outq_read(fd, &q2);
		if (ret)
			return ret;
		if (q1 == q2) {
			*una = (uint32_t)acked;
			*outq = q1;
			return 0;
		}
	}
	return -EAGAIN;
}

/**
 * xiw_ksock_ack_outq() - SIOCOUTQ alone: bytes written and not yet
 * acknowledged. tcp_ioctl() reads it as write_seq - snd_una without the
 * socket lock, so a thread polling it does not hold the datamover's
 * sendmsg or the softirq's ACK processing back, as TCP_INFO does.
 * Return: 0 or -errno.
 */
int xiw_ksock_ack_outq(struct xiw_ksock *l, uint32_t *outq)
{
	return outq_read(xiw_ksock_fd(l), outq);
}

/**
 * xiw_ksock_ack_trace() - have the sockops program watch this connection
 * (needs the tracer loaded: root, cgroup v2). Never waits for a load in
 * progress. @cookie: returned in its events.
 * Return: 0; -EINPROGRESS while the tracer is still loading (poll, try
 * again later); -ENOENT: connected before the tracer was attached, no
 * events will come for it (poll); other -errno: no tracer (poll).
 */
int xiw_ksock_ack_trace(struct xiw_ksock *l, uint64_t cookie)
{
	struct xiw_ksock_mark *m = xiw_ksock_mark(l);
	int ret = xiw_sockops_peek();

	if (!ret)
		ret = xiw_sockops_register(xiw_ksock_fd(l), cookie);
	if (ret)
		return ret;
	m->cookie = cookie;
	m->slot = xiw_sockops_mark_slot(cookie);
	return 0;
}

/**
 * xiw_ksock_ack_untrace() - stop tracing (the stream is being closed): the
 * claim is dropped and the socket leaves the bpftool listing.
 */
void xiw_ksock_ack_untrace(struct xiw_ksock *l)
{
	xiw_ksock_mark(l)->slot = NULL;
	xiw_sockops_unregister(xiw_ksock_fd(l));
}

/**
 * xiw_ksock_ack_arm() - one sockops event when the acknowledged-bytes count
 * reaches @target (mod 2^32). The program compares the same counter
 * (bpf_sock_ops.bytes_acked is tcpi_bytes_acked), so this is one map
 * update: no offset, no need to have seen an ACK first.
 * Return: 0, or -errno (-ENOENT: not traced).
 */
int xiw_ksock_ack_arm(struct xiw_ksock *l, uint32_t target)
{
	return xiw_sockops_arm(xiw_ksock_fd(l), target);
}

/**
 * xiw_ksock_ack_callbacks() - the sockops program's per-ACK callbacks for
 * this socket on or off (xiw_sockops_callbacks(): one setsockopt()).
 * Return: 0, -EOPNOTSUPP without the switch, other -errno.
 */
int xiw_ksock_ack_callbacks(struct xiw_ksock *l, bool on)
{
	return xiw_sockops_callbacks(xiw_ksock_fd(l), on);
}

/**
 * xiw_ksock_ack_armed() - the sockops state's armed flag: 1 while the
 * watermark of the last xiw_ksock_ack_arm() has not fired, 0 once the
 * program fired it (it clears the flag as it queues the event). One map
 * lookup. Return: 1, 0, or -errno (-ENOENT: not traced).
 */
int xiw_ksock_ack_armed(struct xiw_ksock *l)
{
	struct xiw_sk_ack st;
	int ret = xiw_sockops_state(xiw_ksock_fd(l), &st);

	return ret ? ret : st.armed != 0;
}

/**
 * xiw_ksock_ack_mark() - ask the sockops program to mark the first send
 * call whose end reaches acknowledged-bytes position @pos (mod 2^32) for
 * an ACK callback: one store into the process's mark table, which the
 * program reads in that call's BPF_SOCK_OPS_TSTAMP_SENDMSG_CB. No-op when
 * the connection is not traced. Send lock held, before the send.
 */
void xiw_ksock_ack_mark(struct xiw_ksock *l, uint32_t pos)
{
	struct xiw_ksock_mark *m = xiw_ksock_mark(l);

	if (m->slot)	/* the syscall that follows orders the store */
		__atomic_store_n(m->slot, XIW_MARK_WANT(m->cookie, pos),
				 __ATOMIC_RELAXED);
}
