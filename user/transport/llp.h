/* SPDX-License-Identifier: MIT */
/*
 * The lower-layer protocol (LLP) seam: what the engine asks of a byte-stream
 * transport. ksock.c implements it on a non-blocking kernel TCP socket
 * driven by the engine's progress thread (epoll); a later xsk transport
 * (AF_XDP + user-space TCP) implements the same calls.
 *
 * Threads: xiw_llp_send() may be called from any thread but callers
 * serialise sends per connection (the QP's TX lock). xiw_llp_recv() and the
 * upcalls run on the progress thread only.
 */
#ifndef XIW_LLP_H
#define XIW_LLP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

struct xiw_llp;

/**
 * struct xiw_llp_cb - upcalls to the connection's owner (the CM during MPA
 * negotiation, the QP afterwards), on the progress thread.
 * @readable: bytes (or EOF) are waiting: call xiw_llp_recv() until -EAGAIN.
 * @writable: send space is back after a short send; only delivered while
 *            the owner asked with xiw_llp_want_write(l, true).
 * @closed:   the connection failed (RST: -ECONNRESET, timeout, ...). A clean
 *            EOF is reported by xiw_llp_recv() returning 0, not here.
 */
struct xiw_llp_cb {
	void (*readable)(void *arg);
	void (*writable)(void *arg);
	void (*closed)(void *arg, int err);
};

/** xiw_llp_set_owner() - route upcalls to @cb/@arg (atomically switches owner). */
void xiw_llp_set_owner(struct xiw_llp *l, const struct xiw_llp_cb *cb, void *arg);

/**
 * xiw_llp_send() - send @iov without blocking (sendmsg MSG_DONTWAIT|MSG_NOSIGNAL).
 * @more: more FPDUs follow immediately (MSG_MORE).
 * Return: bytes accepted (may be short), -EAGAIN if none, or -errno.
 */
ssize_t xiw_llp_send(struct xiw_llp *l, const struct iovec *iov, int n, bool more);

/**
 * xiw_llp_recv() - receive into @iov without blocking.
 * Return: bytes (> 0), 0 on orderly EOF, -EAGAIN, or -errno.
 */
ssize_t xiw_llp_recv(struct xiw_llp *l, struct iovec *iov, int n);

/** xiw_llp_want_write() - ask for (or cancel) one @writable upcall. */
void xiw_llp_want_write(struct xiw_llp *l, bool on);
/** xiw_llp_pause_read() - stop (true) / resume (false) @readable upcalls
 *  (no receive buffer posted: TCP flow control pushes back on the peer). */
void xiw_llp_pause_read(struct xiw_llp *l, bool paused);
/** xiw_llp_app_read() - the owner reads from its own threads (true): no
 *  @readable upcalls, as if paused, until called with false. */
void xiw_llp_app_read(struct xiw_llp *l, bool on);

/** xiw_llp_shutdown() - half-close our side (FIN) after queued data. */
int xiw_llp_shutdown(struct xiw_llp *l);
/** xiw_llp_abort() - reset the connection (RST via SO_LINGER 0). */
void xiw_llp_abort(struct xiw_llp *l);
/** xiw_llp_close() - unregister from the progress thread, close and free.
 *  Unless aborted, bytes the peer sent and nobody read are dropped first,
 *  so the close sends FIN, not RST. After it returns no upcall for @l is
 *  running or will run. */
void xiw_llp_close(struct xiw_llp *l);

/** xiw_llp_poll_fd() - an fd that polls EPOLLOUT when send space is back
 *  (the datamover's own epoll set, seed 003). */
int xiw_llp_poll_fd(struct xiw_llp *l);
/** xiw_llp_mss() - the connection's TCP MSS (bytes), for FPDU sizing. */
uint32_t xiw_llp_mss(struct xiw_llp *l);
/** xiw_llp_addrs() - local and peer address. */
void xiw_llp_addrs(struct xiw_llp *l, struct sockaddr_storage *local,
		   struct sockaddr_storage *peer);

/*
 * Send state for ACK completions (seed 000; ksock: ksock_ack.c).
 * The acknowledged-bytes count is snd_una in a byte-count space (mod 2^32).
 */
/** xiw_llp_ack_state() - consistent (@una, @outq = unacked bytes queued);
 *  send lock held. Return: 0 or -errno. */
int xiw_llp_ack_state(struct xiw_llp *l, uint32_t *una, uint32_t *outq);
/** xiw_llp_ack_trace() - trace this connection's ACKs (sockops);
 *  Return: 0, or -errno when unavailable (poll instead). */
int xiw_llp_ack_trace(struct xiw_llp *l, uint64_t cookie);
/** xiw_llp_ack_untrace() - stop tracing a connection that is closing. */
void xiw_llp_ack_untrace(struct xiw_llp *l);
/** xiw_llp_ack_arm() - one trace event once the acknowledged-bytes count
 *  reaches @target (may come early). Return: 0 or -errno (poll instead). */
int xiw_llp_ack_arm(struct xiw_llp *l, uint32_t target);

/*
 * Zero-copy sends (MSG_ZEROCOPY; ksock: ksock_zc.c). The kernel keeps
 * referencing the pages until it releases them (after the peer's ACK);
 * each zero-copy send call gets an id, released ids are reported.
 */
/** xiw_llp_zc_usable() - zero-copy may be tried on this connection (not
 *  switched off after the kernel copied anyway). */
bool xiw_llp_zc_usable(struct xiw_llp *l);
/**
 * xiw_llp_send_zc() - like xiw_llp_send() with MSG_ZEROCOPY. @id: out,
 * the call's notification id when bytes were accepted. Falls back to a
 * plain send (*id unchanged, Return as xiw_llp_send) when zero-copy is
 * not possible. Return: bytes, -EAGAIN, -errno.
 */
ssize_t xiw_llp_send_zc(struct xiw_llp *l, const struct iovec *iov, int n,
			uint32_t *id, bool *zc);
/** xiw_llp_zc_released() - the kernel released the pages of zero-copy
 *  call @id (and of every earlier one). */
bool xiw_llp_zc_released(struct xiw_llp *l, uint32_t id);
/** xiw_llp_zc_outstanding() - some zero-copy call's pages are not yet
 *  released by the kernel. */
bool xiw_llp_zc_outstanding(struct xiw_llp *l);
/**
 * xiw_llp_zc_quiesce() - before failing WRs whose pages the kernel may
 * still hold: abort the connection (RST, nothing more sent; the fd stays
 * open) and wait up to @max_ms for every zero-copy release notification.
 * Nothing outstanding: does nothing. Send lock held.
 * Return: 0, or -ETIMEDOUT (some pages still held).
 */
int xiw_llp_zc_quiesce(struct xiw_llp *l, unsigned int max_ms);

#endif /* XIW_LLP_H */
