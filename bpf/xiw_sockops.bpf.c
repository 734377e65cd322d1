// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * xiw_sockops: turn peer TCP ACKs into send-completion events for the
 * sockets the xiwarp engine registered (seed 000, "ack" completion mode).
 *
 * The engine arms a watermark in the acknowledged-bytes space (see
 * include/xiwarp/abi/sockops.h); the program compares it after snd_una
 * moved, in two callbacks:
 *   - BPF_SOCK_OPS_TSTAMP_ACK_CB (BPF TX timestamping, kernel 6.14+): the
 *     last byte of a marked sendmsg() was acknowledged. The send calls
 *     that carry the end of a WR the engine waits for (XIW_MARK_WANT:
 *     signalled or zero-copy) are marked in BPF_SOCK_OPS_TSTAMP_SENDMSG_CB,
 *     so such a WR whose end is the end of a send call (a lone WR, the
 *     last of a batch) is seen on exactly the ACK that covers it.
 *   - BPF_SOCK_OPS_RTT_CB: despite its name called once per round trip
 *     (tcp_rtt_estimator: when snd_una passes rtt_seq), not per ACK; it
 *     catches WR ends inside a send call at least once per RTT.
 * Measured on a 40 ms RTT link before the TX timestamp hook: a 4 KB WR
 * (three segments, two ACKs) got an RTT_CB for the first ACK only, and
 * the last segment's ACK brought no callback at all.
 *
 * Per ACK callback the work is one socket-storage lookup and one compare;
 * the ring buffer is written only when the engine's watermark is crossed
 * (once per arm) and when a registered socket closes, so the engine wakes
 * per batch of completions, not per ACK.
 *
 * Why marks only where wanted (2026-11-29): a marked send call costs four
 * program runs per attached instance (SENDMSG, then TSTAMP_SCHED,
 * TSTAMP_SND_SW and TSTAMP_ACK on its last skb), and every xiwarp process
 * attaches its own instance to the cgroup. 64 KB `ib_write_bw -Q 100` in
 * ack mode (a WC per 100 WRs) had all of its ~30.5 k send calls marked;
 * with this table 495. (perftest's default signals every WR: there every
 * call still carries a signalled WR's end and is marked.)
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "xiwarp/abi/sockops.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define SOL_SOCKET 1	/* <asm-generic/socket.h>, not in vmlinux.h */
#define SOL_TCP 6	/* <netinet/tcp.h>: IPPROTO_TCP */

/* a traced socket's callbacks: with and without the per-ACK ones */
#define XIW_CB_ON (BPF_SOCK_OPS_RTT_CB_FLAG | BPF_SOCK_OPS_STATE_CB_FLAG)
#define XIW_CB_OFF BPF_SOCK_OPS_STATE_CB_FLAG

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;
extern int bpf_sock_ops_enable_tx_tstamp(struct bpf_sock_ops_kern *skops,
					 __u64 flags) __ksym;

/* getpid() of the loading process, set before load: the socket map is
 * shared by all xiwarp processes, the ring buffer is this process's. */
const volatile __u32 owner_tgid = 0;

/* "2": value layout version (include/xiwarp/abi/sockops.h), also in the
 * pin name, so builds with the old layout keep their own map */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct xiw_sk_ack);
} xiw_sk_ack2 SEC(".maps");

/*
 * The registered sockets as bpftool can list them (socket storage cannot
 * be iterated from user space): key = the kernel's socket cookie, value =
 * a copy of the socket's state, added by the engine when it registers
 * the socket, refreshed here at every event, removed when the socket
 * closes (by the engine when it closes the stream or exits,
 * user/engine/xiw_sockops_view.c; here at TCP_CLOSE while the owner's
 * program is still attached). Shared and pinned
 * like xiw_sk_ack2 (xiw_sk_view2 in the host's /sys/fs/bpf/xiwarp).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct xiw_sk_ack);
} xiw_sk_view2 SEC(".maps");

/*
 * The mark table (include/xiwarp/abi/sockops.h): want[] is written by
 * this process's engine, done[] (the last position marked) only here,
 * under the socket's lock (SENDMSG_CB runs inside tcp_sendmsg).
 */
__u64 xiw_mark_want[XIW_MARK_SLOTS];
__u32 xiw_mark_done[XIW_MARK_SLOTS];

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} xiw_ack_events SEC(".maps");

static __always_inline void view_update(struct bpf_sock_ops *skops,
					struct xiw_sk_ack *st)
{
	__u64 key = bpf_get_socket_cookie(skops);

	/* refresh only: the engine adds the entry when it registers the
	 * socket and deletes it when it unregisters it; an ACK callback
	 * racing that delete must not put the socket back */
	bpf_map_update_elem(&xiw_sk_view2, &key, st, BPF_EXIST);
}

static __always_inline void emit(struct xiw_sk_ack *st, __u64 bytes_acked,
				 __u16 type, __u16 state)
{
	struct xiw_ack_event *ev;

	ev = bpf_ringbuf_reserve(&xiw_ack_events, sizeof(*ev), 0);
	if (!ev)
		return;	/* ring full: the engine's backstop timer rescans */
	ev->cookie = st->cookie;
	ev->bytes_acked = bytes_acked;
	ev->type = type;
	ev->state = state;
	ev->pad = 0;
	bpf_ringbuf_submit(ev, 0);
	__sync_fetch_and_add(&st->events, 1);
}

/*
 * tcp_sock.bytes_acked now, through a BTF pointer: the TX timestamping
 * callbacks may not read tcp_sock fields through the bpf_sock_ops context
 * (is_locked_tcp_sock is 0 there, such fields read as 0). The ACK one runs
 * inside tcp_ack() under the socket lock, so the value is the one just
 * updated.
 */
static __always_inline __u64 acked_now(struct bpf_sock *sk)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);

	return tp ? tp->bytes_acked : 0;
}

/*
 * Mark this send call? Yes when its end (in the acknowledged-bytes space:
 * bytes_acked plus what is written and unacknowledged) reaches the wanted
 * position and that position was not marked yet; yes, too, when the slot
 * is not this socket's (no table entry: every call, the old way).
 */
static __always_inline bool mark_wanted(struct bpf_sock *sk,
					struct xiw_sk_ack *st)
{
	__u32 i = (__u32)st->cookie & (XIW_MARK_SLOTS - 1);
	__u64 w = xiw_mark_want[i];
	struct tcp_sock *tp;
	__u32 want, end;

	if ((__u32)(w >> 32) != (__u32)st->cookie)
		return true;
	want = (__u32)w;
	if (want == xiw_mark_done[i])
		return false;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return true;
	end = (__u32)tp->bytes_acked + (tp->write_seq - tp->snd_una);
	if ((__s32)(end - want) < 0)
		return false;	/* that WR's end comes in a later call */
	xiw_mark_done[i] = want;
	return true;
}

/* snd_una moved: fire if the count is at or past the armed watermark.
 * Return: true if the event fired. */
static __always_inline bool on_ack(struct bpf_sock_ops *skops,
				   struct bpf_sock *sk, struct xiw_sk_ack *st)
{
	__u64 acked = acked_now(sk);

	st->bytes_acked = acked;
	st->acks++;
	if (skops->op == BPF_SOCK_OPS_RTT_CB)
		st->snd_una = skops->snd_una;
	/* (s32)(acked - wm) >= 0: at or past wm, across the 2^32 wrap */
	if (st->armed && (__s32)((__u32)acked - st->watermark) >= 0) {
		st->armed = 0;
		emit(st, acked, XIW_ACK_EV_WATERMARK, 0);
		return true;
	}
	return false;
}

/*
 * A connection of the cgroup is established. The engine registers a
 * socket only once it is connected, so every connection gets the
 * callbacks (unregistered ones stop at the storage lookup) and an empty
 * storage entry: the entry tells the engine that the socket has them. A
 * socket established before the program was attached has no entry and
 * never gets a callback; the engine polls for those.
 */
static __always_inline void on_established(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	int tx_ts = SK_BPF_CB_TX_TIMESTAMPING;

	bpf_sock_ops_cb_flags_set(skops, XIW_CB_ON);
	/* best effort: without it only RTT_CB runs (the backstop covers) */
	bpf_setsockopt(skops, SOL_SOCKET, SK_BPF_CB_FLAGS, &tx_ts,
		       sizeof(tx_ts));
	if (sk)
		bpf_sk_storage_get(&xiw_sk_ack2, sk, 0,
				   BPF_SK_STORAGE_GET_F_CREATE);
}

SEC("sockops")
int xiw_sockops(struct bpf_sock_ops *skops)
{
	struct xiw_sk_ack *st;
	struct bpf_sock *sk;

	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		on_established(skops);
		return 1;
	case BPF_SOCK_OPS_TSTAMP_SENDMSG_CB:
	case BPF_SOCK_OPS_TSTAMP_ACK_CB:
	case BPF_SOCK_OPS_RTT_CB:
	case BPF_SOCK_OPS_STATE_CB:
		break;
	default:	/* TSTAMP_SCHED/SND_SW/SND_HW of marked skbs, ... */
		return 1;
	}
	sk = skops->sk;
	if (!sk)
		return 1;
	st = bpf_sk_storage_get(&xiw_sk_ack2, sk, 0, 0);
	if (!st || st->owner != owner_tgid)
		return 1;
	switch (skops->op) {
	case BPF_SOCK_OPS_TSTAMP_SENDMSG_CB:
		/* mark this send call's last byte: TSTAMP_ACK_CB when the
		 * peer acknowledged it */
		if (mark_wanted(sk, st))
			bpf_sock_ops_enable_tx_tstamp(bpf_cast_to_kern_ctx(skops), 0);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (skops->args[1] == BPF_TCP_CLOSE) {
			__u64 key = bpf_get_socket_cookie(skops);

			emit(st, skops->bytes_acked, XIW_ACK_EV_CLOSE,
			     BPF_TCP_CLOSE);
			bpf_map_delete_elem(&xiw_sk_view2, &key);
		}
		break;
	default:
		/* the listing: when an event fired (no longer on every RTT_CB
		 * and every callback while disarmed: an LRU update each, on
		 * the ACK path) */
		if (on_ack(skops, sk, st))
			view_update(skops, st);
	}
	return 1;
}

/*
 * The engine's switch for a socket's per-ACK callbacks (XIW_SO_ACK_CALLBACKS,
 * include/xiwarp/abi/sockops.h). Why: with them on, every ACK runs
 * RTT_CB (per round trip, on veth about per ACK) and every send call
 * TSTAMP_SENDMSG_CB, plus three more for a marked one; a 64 KB
 * `ib_write_bw` stream in ack mode moved 9-14 % less than in copy mode
 * with them always on, 0-4 % less with this switch (2026-11-29, cubic,
 * medians of 6-8 interleaved runs), and either kind alone cost about as
 * much as both. A stream whose app polls its CQ gets its ACK completions from
 * those polls (SIOCOUTQ), so the engine switches the callbacks off while
 * such a poller serves, and on before it arms a watermark again
 * (user/engine/xiw_txack_cb.c). Only a locked sockops callback or a
 * helper with the socket locked may change them; the cgroup/setsockopt
 * hook runs with the socket locked, which makes this the way in for user
 * space. Off also disarms: no event fires while they are off.
 */
SEC("cgroup/setsockopt")
int xiw_sockopt(struct bpf_sockopt *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	int *val = ctx->optval;
	struct xiw_sk_ack *st;
	int flags, tx_ts;

	if (ctx->level != XIW_SOL_ACK)
		return 1;	/* not ours: the kernel's handler runs */
	if (!sk || ctx->optname != XIW_SO_ACK_CALLBACKS ||
	    (void *)(val + 1) > ctx->optval_end)
		return 1;	/* the kernel answers ENOPROTOOPT */
	st = bpf_sk_storage_get(&xiw_sk_ack2, sk, 0, 0);
	if (!st || st->owner != owner_tgid)
		return 1;	/* another process's: its instance answers */
	flags = *val ? XIW_CB_ON : XIW_CB_OFF;
	tx_ts = *val ? SK_BPF_CB_TX_TIMESTAMPING : 0;
	if (bpf_setsockopt(sk, SOL_TCP, TCP_BPF_SOCK_OPS_CB_FLAGS, &flags,
			   sizeof(flags)))
		return 0;	/* EPERM: nothing changed */
	if (!*val)
		st->armed = 0;
	/* best effort, as in on_established */
	bpf_setsockopt(sk, SOL_SOCKET, SK_BPF_CB_FLAGS, &tx_ts, sizeof(tx_ts));
	ctx->optlen = -1;	/* handled: the kernel's handler is skipped */
	return 1;
}
