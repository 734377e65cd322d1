// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * xiw_sockops: turn peer TCP ACKs into send-completion events for the
 * sockets the xiwarp engine registered (seed 000, "ack" completion mode).
 *
 * Per ACK the work is one socket-storage lookup and one compare; the ring
 * buffer is written only when the engine's watermark is crossed (once per
 * arm) and when a registered socket closes, so the engine wakes per batch
 * of completions, not per ACK.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "xiwarp/abi/sockops.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* getpid() of the loading process, set before load: the socket map is
 * shared by all xiwarp processes, the ring buffer is this process's. */
const volatile __u32 owner_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct xiw_sk_ack);
} xiw_sk_ack SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} xiw_ack_events SEC(".maps");

/* BPF_TCP_CLOSE from include/uapi/linux/bpf.h (an enum vmlinux.h has) */
static __always_inline void emit(struct xiw_sk_ack *st, __u32 snd_una,
				 __u16 type, __u16 state)
{
	struct xiw_ack_event *ev;

	ev = bpf_ringbuf_reserve(&xiw_ack_events, sizeof(*ev), 0);
	if (!ev)
		return;	/* ring full: the engine also polls TCP_INFO on timeout */
	ev->cookie = st->cookie;
	ev->snd_una = snd_una;
	ev->type = type;
	ev->state = state;
	bpf_ringbuf_submit(ev, 0);
	__sync_fetch_and_add(&st->events, 1);
}

static __always_inline void on_ack(struct bpf_sock_ops *skops,
				   struct xiw_sk_ack *st)
{
	__u32 una = skops->snd_una;

	st->snd_una = una;
	st->acks++;
	/* (s32)(una - wm) >= 0: una is at or past wm, across 2^32 wrap */
	if (st->armed && (__s32)(una - st->watermark) >= 0) {
		st->armed = 0;
		emit(st, una, XIW_ACK_EV_WATERMARK, 0);
	}
}

SEC("sockops")
int xiw_sockops(struct bpf_sock_ops *skops)
{
	struct xiw_sk_ack *st;
	struct bpf_sock *sk;

	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		/* The engine registers a socket only after it is connected,
		 * so ask for ACK and state callbacks on every connection of
		 * the cgroup; unregistered ones stop at the lookup below. */
		bpf_sock_ops_cb_flags_set(skops, BPF_SOCK_OPS_RTT_CB_FLAG |
						 BPF_SOCK_OPS_STATE_CB_FLAG);
		return 1;
	case BPF_SOCK_OPS_RTT_CB:
	case BPF_SOCK_OPS_STATE_CB:
		break;
	default:
		return 1;
	}
	sk = skops->sk;
	if (!sk)
		return 1;
	st = bpf_sk_storage_get(&xiw_sk_ack, sk, 0, 0);
	if (!st || st->owner != owner_tgid)
		return 1;
	if (skops->op == BPF_SOCK_OPS_RTT_CB)
		on_ack(skops, st);
	else if (skops->args[1] == BPF_TCP_CLOSE)
		emit(st, skops->snd_una, XIW_ACK_EV_CLOSE, BPF_TCP_CLOSE);
	return 1;
}
