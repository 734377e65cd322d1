/* SPDX-License-Identifier: MIT */
/*
 * BPF <-> engine interface of bpf/xiw_sockops.bpf.c: per-socket ACK
 * watermark tracing (seed 000: completion from TCP send state).
 *
 * The engine registers a TCP socket by creating its socket-local storage
 * entry (bpf_map_update_elem(map, &sockfd, &state)) and arms a watermark:
 * a TCP sequence number. The program runs on every ACK of that socket
 * (BPF_SOCK_OPS_RTT_CB) and emits one ring-buffer event when snd_una
 * reaches or passes the watermark (wrap-safe), then disarms. It also emits
 * an event when the socket closes or is reset.
 *
 * Included by BPF code (after vmlinux.h) and by user code (after
 * <linux/types.h>), so it only uses __u32/__u64.
 */
#ifndef XIWARP_ABI_SOCKOPS_H
#define XIWARP_ABI_SOCKOPS_H

/**
 * struct xiw_sk_ack - per-socket state (BPF_MAP_TYPE_SK_STORAGE value).
 * @cookie:    engine's name for the socket (e.g. the QP number).
 * @watermark: TCP sequence number; an ACK with snd_una at or past it fires.
 * @armed:     1 while @watermark is live; the program clears it on firing.
 * @snd_una:   oldest unacknowledged sequence number at the last ACK.
 * @owner:     getpid() of the registering process: the map is shared by
 *             every xiwarp process (one pin), each process's program
 *             instance handles only its own sockets.
 * @acks:      ACKs seen since registration.
 * @events:    ring-buffer events emitted for this socket.
 */
struct xiw_sk_ack {
	__u64 cookie;
	__u32 watermark;
	__u32 armed;
	__u32 snd_una;
	__u32 owner;
	__u64 acks;
	__u64 events;
};

enum xiw_ack_event_type {
	XIW_ACK_EV_WATERMARK = 1,	/* snd_una crossed the watermark */
	XIW_ACK_EV_CLOSE = 2,		/* socket entered TCP_CLOSE (FIN done or RST) */
};

/**
 * struct xiw_ack_event - one ring-buffer record (map xiw_ack_events).
 * @cookie:  the socket's xiw_sk_ack.cookie.
 * @snd_una: snd_una when the event fired.
 * @type:    enum xiw_ack_event_type.
 * @state:   TCP state (BPF_TCP_*) for XIW_ACK_EV_CLOSE, else 0.
 */
struct xiw_ack_event {
	__u64 cookie;
	__u32 snd_una;
	__u16 type;
	__u16 state;
};

/* where the loader pins the shared per-socket map (bpffs) */
#define XIW_BPF_PIN_DIR "/sys/fs/bpf/xiwarp"
#define XIW_BPF_PIN_SK_ACK XIW_BPF_PIN_DIR "/xiw_sk_ack"

#endif /* XIWARP_ABI_SOCKOPS_H */
