/* SPDX-License-Identifier: MIT */
/*
 * Loader and user-space side of bpf/xiw_sockops.bpf.c: per-socket ACK
 * watermarks delivered through a BPF ring buffer (seed 000, "ack" mode).
 *
 * Attachment: the program is attached (bpf_link, multi-attach) to the
 * cgroup v2 group of this process: the "0::<path>" line of
 * /proc/self/cgroup under the first cgroup2 mount of /proc/self/mountinfo.
 * When this mount namespace shows no cgroup2 (as under `ip netns exec`,
 * which remounts /sys), a cgroup2 view is mounted on a temporary directory
 * just long enough to open the group. It needs CAP_BPF + CAP_NET_ADMIN +
 * CAP_SYS_ADMIN (root); without them xiw_sockops_load() fails and the
 * engine polls TCP_INFO instead.
 * The per-socket map is shared by all xiwarp processes and pinned (with
 * BTF) at XIW_BPF_PIN_SK_ACK (/sys/fs/bpf/xiwarp/xiw_sk_ack2; "2" is the
 * value layout version): `bpftool map dump pinned
 * /sys/fs/bpf/xiwarp/xiw_sk_ack2` shows every traced socket with field
 * names. Each process has its own program instance and ring buffer;
 * an entry's @owner says which instance handles it.
 */
#ifndef XIW_SOCKOPS_H
#define XIW_SOCKOPS_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "xiwarp/abi/sockops.h"

/**
 * xiw_sockops_load() - load, attach and pin once per process (idempotent).
 * Return: 0; -EPERM without privilege; -ENOENT without a cgroup2 mount;
 * other -errno from libbpf. The result is cached: later calls return it.
 */
int xiw_sockops_load(void);
/**
 * xiw_sockops_peek() - the load result without waiting: what
 * xiw_sockops_load() returned, or -EINPROGRESS while no load has finished
 * (not started, or running on another thread). Loading takes ~100+ ms:
 * threads that must not stall (the progress thread, which also runs the
 * CM; anyone holding a QP lock) peek and fall back to polling meanwhile.
 */
int xiw_sockops_peek(void);

/**
 * xiw_sockops_before_connect() - in ack mode (XIW_TX_COMPLETION=ack), load
 * and attach the tracer now, waiting for a load in progress (tens of ms,
 * once per process): the program turns ACK callbacks on in its
 * ESTABLISHED callbacks, so a TCP connection established before the
 * attach never gets them and its QP falls back to polling. Called by
 * xiw_cm_listen() and xiw_cm_connect() in the application's thread (never
 * on the progress thread). No-op in copy mode.
 */
void xiw_sockops_before_connect(void);
/** xiw_sockops_unload() - detach and free. Only when no other thread
 *  uses the tracer (tests); nothing needs doing at exit. */
void xiw_sockops_unload(void);

/** xiw_sockops_ring_fd() - epoll-able fd that is readable when events wait. */
int xiw_sockops_ring_fd(void);

/**
 * xiw_sockops_register() - start tracing connected TCP socket @sockfd.
 * @cookie: returned in every event of this socket.
 * Return: 0 (also when already registered by this process); -ENOENT: the
 * connection was established before any xiwarp program was attached to
 * the cgroup, so it gets no callbacks (poll it); -EBUSY: another process
 * traces it; other -errno.
 */
int xiw_sockops_register(int sockfd, uint64_t cookie);
/** xiw_sockops_unregister() - stop tracing @sockfd (no more events; it
 *  may be registered again). */
void xiw_sockops_unregister(int sockfd);

/*
 * The bpftool listing (xiw_sockops_view.c): xiw_sk_view_add() puts
 * @sockfd with state @st in listing map @map_fd (at register),
 * xiw_sk_view_del() takes it out (at unregister); sockets still
 * registered at exit are taken out by a library destructor.
 */
void xiw_sk_view_add(int map_fd, int sockfd, const struct xiw_sk_ack *st);
void xiw_sk_view_del(int map_fd, int sockfd);

/**
 * xiw_sockops_arm() - ask for one event when the socket's acknowledged-
 * bytes count (tcpi_bytes_acked) reaches @watermark, compared modulo
 * 2^32. The caller re-checks the send state itself after arming, since an
 * ACK may have raced the arm.
 * Return: 0 or -errno (-ENOENT: socket not registered).
 */
int xiw_sockops_arm(int sockfd, uint32_t watermark);
/**
 * xiw_sockops_callbacks() - switch registered socket @sockfd's per-ACK
 * callbacks (RTT_CB, TX timestamping) on or off (XIW_SO_ACK_CALLBACKS,
 * bpf/xiw_sockops.bpf.c xiw_sockopt). Off also disarms the watermark:
 * no event comes until they are on again and a watermark is armed. One
 * setsockopt() call. Return: 0; -EOPNOTSUPP: no switch (not loaded,
 * XIW_ACK_CB_SWITCH=0): the callbacks stay on; -ENOPROTOOPT: not
 * registered by this process; -EPERM: the kernel refused the change.
 */
int xiw_sockops_callbacks(int sockfd, bool on);
/**
 * xiw_sockops_mark_slot() - this process's mark-table entry for the socket
 * registered with @cookie (XIW_MARK_WANT, include/xiwarp/abi/sockops.h):
 * memory the program reads, written with plain stores. Sockets whose
 * cookies share a slot get every send call marked while they take turns
 * (as before the table). Return: the entry, NULL while no tracer is loaded.
 */
uint64_t *xiw_sockops_mark_slot(uint64_t cookie);
/**
 * xiw_sockops_mark_done() - the position the program last marked a send
 * call for in @cookie's slot (tests, diagnostics). Return: 0 without a
 * loaded tracer.
 */
uint32_t xiw_sockops_mark_done(uint64_t cookie);
/** xiw_sockops_state() - read @sockfd's current state. Return: 0 or -errno. */
int xiw_sockops_state(int sockfd, struct xiw_sk_ack *out);

typedef void (*xiw_ack_fn)(void *ctx, const struct xiw_ack_event *ev);
/**
 * xiw_sockops_consume() - call @fn for every queued event, without blocking.
 * Return: number of events, or -errno.
 */
int xiw_sockops_consume(xiw_ack_fn fn, void *ctx);

#endif /* XIW_SOCKOPS_H */
