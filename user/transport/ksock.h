/* SPDX-License-Identifier: MIT */
/*
 * ksock (internal): create struct xiw_llp connections on kernel TCP
 * sockets. The CM uses these to open, listen and accept; everything after
 * that goes through the generic calls in llp.h.
 */
#ifndef XIW_KSOCK_H
#define XIW_KSOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include "llp.h"

/**
 * xiw_ksock_connect() - start a non-blocking TCP connect to @dst (from
 * @src if non-NULL; its port may be 0). TCP_NODELAY is set.
 * Completion is the FIRST @cb->writable upcall (connected; want_write is
 * not needed for it); failure is @cb->closed with -ECONNREFUSED,
 * -ETIMEDOUT, -EHOSTUNREACH, ... Upcalls run on the progress thread.
 * @out: the new llp; close it with xiw_llp_close() in every case.
 * Return: 0, or -errno if the connect failed immediately (no llp made).
 */
int xiw_ksock_connect(const struct sockaddr *src, const struct sockaddr *dst,
		      const struct xiw_llp_cb *cb, void *arg,
		      struct xiw_llp **out);

struct xiw_ksock_listener;

/**
 * typedef xiw_ksock_accept_fn - a connection was accepted (progress
 * thread). @l has no owner and gets no upcalls until xiw_llp_set_owner();
 * the callee owns it (xiw_llp_close() to refuse it).
 */
typedef void (*xiw_ksock_accept_fn)(void *arg, struct xiw_llp *l);

/**
 * xiw_ksock_listen() - listen on @addr (port 0: kernel picks) with
 * SO_REUSEADDR, so the same port can be bound again right after close.
 * @bound: out (may be NULL): the bound address with its port.
 * Return: 0 or -errno (-EADDRINUSE, -EADDRNOTAVAIL, -EAFNOSUPPORT, ...).
 */
int xiw_ksock_listen(const struct sockaddr *addr, int backlog,
		     xiw_ksock_accept_fn fn, void *arg,
		     struct xiw_ksock_listener **out,
		     struct sockaddr_storage *bound);

/** xiw_ksock_adopt() - see ksock.c: an accepted @fd joins like a listener's. */
int xiw_ksock_adopt(int fd, xiw_ksock_accept_fn fn, void *arg);

/**
 * xiw_ksock_listener_close() - stop listening and free. After it returns
 * no accept callback is running or will run. Connections the kernel had
 * queued but we had not accepted are reset by the kernel.
 */
void xiw_ksock_listener_close(struct xiw_ksock_listener *ls);

/** xiw_ksock_sa_len() - sockaddr length for @sa's family (0 if unknown). */
socklen_t xiw_ksock_sa_len(const struct sockaddr *sa);

/**
 * struct xiw_ksock_zc - MSG_ZEROCOPY state of one connection (ksock_zc.c).
 * @lock:     protects everything below (send lock holders and the
 *            progress thread's error-queue reaper).
 * @on:       SO_ZEROCOPY is set; @off: the kernel copied anyway (veth,
 *            loopback) or zero-copy failed: plain sends from now on.
 * @next:     notification id the next zero-copy sendmsg gets.
 * @done:     every id below it has been notified (buffers released).
 * @lo/@hi:   notified ranges that arrived ahead of @done (rare).
 */
struct xiw_ksock_zc {
	pthread_mutex_t lock;
	bool on, off;
	uint32_t next, done;
	uint32_t lo[8], hi[8];
	int nr;
};

/** xiw_ksock_zc() - the connection's zero-copy state. */
struct xiw_ksock_zc *xiw_ksock_zc(struct xiw_llp *l);
/** xiw_ksock_zc_reap() - read zero-copy notifications off the error
 *  queue (progress thread, on EPOLLERR). */
void xiw_ksock_zc_reap(struct xiw_llp *l);

/** xiw_ksock_fd() - the connection's socket (for ksock's own helpers). */
int xiw_ksock_fd(const struct xiw_llp *l);

#endif /* XIW_KSOCK_H */
