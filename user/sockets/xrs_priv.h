/* SPDX-License-Identifier: MIT */
/*
 * librdmacm's private rsocket entry points for xiwarp's own LD_PRELOAD
 * library (libxiwsock.so, user/sockets/xs_*.c). Version node
 * XIWARP_PRIVATE_1: not an API for applications.
 */
#ifndef XRS_PRIV_H
#define XRS_PRIV_H

#include <stdbool.h>

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

#endif /* XRS_PRIV_H */
