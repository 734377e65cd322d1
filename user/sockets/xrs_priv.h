/* SPDX-License-Identifier: MIT */
/*
 * librdmacm's private rsocket entry points for xiwarp's own LD_PRELOAD
 * library (libxiwsock.so, user/sockets/xs_*.c). Version node
 * XIWARP_PRIVATE_1: not an API for applications.
 */
#ifndef XRS_PRIV_H
#define XRS_PRIV_H

#include <stdbool.h>
#include <stdint.h>

/**
 * xrs_p_adopt() - a stream socket from an accepted TCP connection @tcp_fd
 * whose peer sent an MPA request: the engine takes @tcp_fd, the rsockets
 * handshake runs as for raccept (blocking, bounded by the engine's MPA
 * timeout). The socket's fd is @afd, @bfd the other end of its
 * socketpair (both non-blocking); the socket is pollable.
 * Return: 0, or -1 with errno (@tcp_fd and @bfd are closed, @afd still
 * names its socketpair end).
 */
int xrs_p_adopt(int tcp_fd, int afd, int bfd);

/** xrs_p_pollable() - keep @fd's readability exact after every call. */
int xrs_p_pollable(int fd);

/** xrs_p_revents() - POLLIN/POLLOUT/POLLHUP/POLLERR of @fd now (never blocks). */
short xrs_p_revents(int fd, short events);

/**
 * xrs_p_settle() - after @fd woke a poll/epoll: take what happened, drop
 * events that changed nothing, and make sure the next completion wakes
 * @fd again (for writability too when @want_out).
 */
void xrs_p_settle(int fd, bool want_out);

/** xrs_p_rename() - @newfd now names the socket of @oldfd (same file). */
int xrs_p_rename(int oldfd, int newfd);

/** xrs_p_nread() - bytes a read could take now without waiting (FIONREAD). */
int xrs_p_nread(int fd);

/**
 * struct xrs_p_stats - what the zero-copy extension did on one socket.
 * Source side (we send): SrcAvails sent, their RdCompl / SendSm answers,
 * SinkAvails received, used (WrCompl sent) or stale (dropped), bytes the
 * peer read or we wrote zero-copy, bytes sent by copy.
 * Sink side (we receive): the mirror, plus SinkAvails wasted (the source
 * sent something else first) and SrcAvails taken into library memory
 * (stash: nobody was reading).
 * @bytes_direct: of @bytes_bcopy, bytes WRITTEN straight from the
 * caller's buffer (no staging copy, xrs_direct.c); @direct_waits: send
 * calls that had to wait for such a WRITE to complete after the post.
 * @src_thresh, @sink_thresh: the current thresholds (UINT32_MAX: never).
 */
struct xrs_p_stats {
	bool zc;
	uint32_t src_thresh, sink_thresh;
	uint64_t srcavail_tx, rdcompl_rx, sendsm_rx, sinkavail_rx,
		 wrcompl_tx, sink_stale;
	uint64_t srcavail_rx, rdcompl_tx, sendsm_tx, sinkavail_tx,
		 wrcompl_rx, sink_wasted, stash;
	uint64_t bytes_zc_out, bytes_zc_in, bytes_bcopy, bytes_stash;
	uint64_t bytes_direct, direct_waits;
};

/** xrs_p_stats() - @fd's counters. Return: 0, or -1 (EBADF). */
int xrs_p_stats(int fd, struct xrs_p_stats *st);

/**
 * xrs_p_close_acks() - closes in this process that answered the peer's
 * DISCONNECT with ours (the peer had closed first; rclose).
 */
uint64_t xrs_p_close_acks(void);

/**
 * xrs_p_sink_hook() - test hook: call @fn(@arg) (NULL: none, the default)
 * in a reader's thread between registering its SinkAvail buffer and
 * posting the SinkAvail, with the socket's rlock held (cq_lock is free:
 * @fn may poll the socket, and use others).
 */
void xrs_p_sink_hook(void (*fn)(void *arg), void *arg);

/**
 * xrs_p_read_hook() - test hook: call @fn(@arg, @n) (NULL: none, the
 * default) in a reader's thread each time it has copied @n bytes of a
 * DATA message out of its receive buffer, between marking them read and
 * making them available for the next credit update; rlock held, cq_lock
 * free (@fn may poll the socket).
 */
void xrs_p_read_hook(void (*fn)(void *arg, uint32_t n), void *arg);

#endif /* XRS_PRIV_H */
