/* SPDX-License-Identifier: MIT */
/*
 * BPF <-> engine interface of bpf/xiw_sockops.bpf.c: per-socket ACK
 * watermark tracing (seed 000: completion from TCP send state).
 *
 * The engine registers a TCP socket by creating its socket-local storage
 * entry (bpf_map_update_elem(map, &sockfd, &state)) and arms a watermark
 * in the acknowledged-bytes space: the count of bytes snd_una has moved
 * since the connection started (tcp_sock.bytes_acked, the counter behind
 * both bpf_sock_ops.bytes_acked and TCP_INFO's tcpi_bytes_acked), modulo
 * 2^32. Program and engine read the same counter, so arming needs no
 * sequence-number offset and works before the first ACK was seen. The
 * program runs on ACKs of that socket and emits one ring-buffer event
 * when the count reaches or passes the watermark (wrap-safe), then
 * disarms. It also emits an event when the socket closes or is reset.
 *
 * Layout version 2 (pin name xiw_sk_ack2): version 1 (pin xiw_sk_ack)
 * compared sequence numbers. The value layout is part of the pinned,
 * machine-wide map, so a change of layout takes a new pin name: processes
 * of both versions then run side by side, each with its own map.
 *
 * Included by BPF code (after vmlinux.h) and by user code (after
 * <linux/types.h>), so it only uses __u32/__u64.
 */
#ifndef XIWARP_ABI_SOCKOPS_H
#define XIWARP_ABI_SOCKOPS_H

/**
 * struct xiw_sk_ack - per-socket state (BPF_MAP_TYPE_SK_STORAGE value).
 * @cookie:      engine's name for the socket (e.g. the QP number).
 * @bytes_acked: acknowledged-bytes count at the program's last callback.
 * @watermark:   acknowledged-bytes count (mod 2^32) that fires the event.
 * @armed:       1 while @watermark is live; the program clears it on firing.
 * @owner:       getpid() of the registering process: the map is shared by
 *               every xiwarp process (one pin), each process's program
 *               instance handles only its own sockets.
 * @snd_una:     snd_una at the last callback (diagnostics only).
 * @acks:        callbacks that saw an ACK since registration.
 * @events:      ring-buffer events emitted for this socket.
 */
struct xiw_sk_ack {
	__u64 cookie;
	__u64 bytes_acked;
	__u32 watermark;
	__u32 armed;
	__u32 owner;
	__u32 snd_una;
	__u64 acks;
	__u64 events;
};

enum xiw_ack_event_type {
	XIW_ACK_EV_WATERMARK = 1,	/* bytes_acked reached the watermark */
	XIW_ACK_EV_CLOSE = 2,		/* socket entered TCP_CLOSE (FIN done or RST) */
};

/**
 * struct xiw_ack_event - one ring-buffer record (map xiw_ack_events,
 * private to each process, so not versioned).
 * @cookie:      the socket's xiw_sk_ack.cookie.
 * @bytes_acked: acknowledged-bytes count when the event fired.
 * @type:        enum xiw_ack_event_type.
 * @state:       TCP state (BPF_TCP_*) for XIW_ACK_EV_CLOSE, else 0.
 */
struct xiw_ack_event {
	__u64 cookie;
	__u64 bytes_acked;
	__u16 type;
	__u16 state;
	__u32 pad;
};

/*
 * Which send calls get a TX timestamp mark (BPF_SOCK_OPS_TSTAMP_ACK_CB on
 * the ACK of their last byte): those that carry the end of a WR someone
 * waits for, not every one. Each process's program instance has a table
 * in its .bss (mmapped into the process, so the engine writes it with a
 * plain store, no syscall): slot (cookie % XIW_MARK_SLOTS) holds
 * XIW_MARK_WANT(cookie, pos), pos = the acknowledged-bytes-space position
 * (see above) one past the last byte of the next WR whose ACK the engine
 * wants to hear of. The program marks the first send call whose end
 * reaches pos, once. A slot whose tag is not the socket's cookie (never
 * written, or taken by another socket of the same slot) marks every call,
 * as before this table.
 */
#define XIW_MARK_SLOTS 4096
#define XIW_MARK_WANT(cookie, pos) \
	(((__u64)(__u32)(cookie) << 32) | (__u32)(pos))

/*
 * The engine's switch for a traced socket's per-ACK callbacks (RTT_CB and
 * BPF TX timestamping), served by the cgroup/setsockopt program of the
 * socket's owner: setsockopt(fd, XIW_SOL_ACK, XIW_SO_ACK_CALLBACKS, &on,
 * sizeof(int)); on = 1 switches them on, 0 off (and disarms: no event
 * comes while they are off). Returns 0, or -1 with errno ENOPROTOOPT when
 * no xiwarp program of the caller's owns the socket (the kernel's own
 * handler answers an unknown level), EPERM when the kernel refused the
 * change. XIW_SOL_ACK is no level the kernel knows.
 */
#define XIW_SOL_ACK 0x7869
#define XIW_SO_ACK_CALLBACKS 1

/* where the loader pins the shared per-socket map (bpffs); the name
 * carries the layout version of struct xiw_sk_ack */
#define XIW_BPF_PIN_DIR "/sys/fs/bpf/xiwarp"
#define XIW_BPF_PIN_SK_ACK XIW_BPF_PIN_DIR "/xiw_sk_ack2"
/* the same state, listable: socket cookie -> struct xiw_sk_ack (bpftool) */
#define XIW_BPF_PIN_SK_VIEW XIW_BPF_PIN_DIR "/xiw_sk_view2"

#endif /* XIWARP_ABI_SOCKOPS_H */
