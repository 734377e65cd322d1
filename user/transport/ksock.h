/* SPDX-License-Identifier: MIT */
/*
 * ksock (internal): struct xiw_llp connections on kernel TCP sockets.
 * llp.c uses these to open, listen and accept; everything after that goes
 * through the generic calls in llp.h, which reach the xiw_ksock_*()
 * functions below through xiw_ksock_ops (ksock_ops.c).
 */
#ifndef XIW_KSOCK_H
#define XIW_KSOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "llp.h"

/* the connection (ksock.c); its first member is the generic struct xiw_llp */
struct xiw_ksock;

/** xiw_ksock_ops - the ops table of every ksock connection (ksock_ops.c). */
extern const struct xiw_llp_ops xiw_ksock_ops;

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
typedef xiw_llp_accept_fn xiw_ksock_accept_fn;

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

/**
 * xiw_ksock_listen_pre() - xiw_ksock_listen(), running @pre(@bound,
 * @pre_arg) after bind() and before listen(): another transport can claim
 * the port before the kernel accepts a SYN for it (xsk: steer the SYNs).
 */
int xiw_ksock_listen_pre(const struct sockaddr *addr, int backlog,
			 xiw_ksock_accept_fn fn, void *arg,
			 void (*pre)(const struct sockaddr_storage *bound, void *pre_arg),
			 void *pre_arg, struct xiw_ksock_listener **out,
			 struct sockaddr_storage *bound);

/** xiw_ksock_adopt() - see ksock.c: an accepted @fd joins like a listener's. */
int xiw_ksock_adopt(int fd, xiw_ksock_accept_fn fn, void *arg);

/**
 * xiw_ksock_listener_close() - stop listening and free. After it returns
 * no accept callback is running or will run. Connections the kernel had
 * queued but we had not accepted are reset by the kernel, unless a
 * connection this listener accepted is still open and the same address is
 * listened on again meanwhile (ksock_relisten.c, XIW_LISTEN_LINGER_MS).
 */
void xiw_ksock_listener_close(struct xiw_ksock_listener *ls);

/* ksock_relisten.c: a closed listener's port stays listening while a
 * connection it accepted is open, for the next listen on that address */
bool xiw_ksock_relisten_keep(int fd);
int xiw_ksock_relisten_take(const struct sockaddr *addr);

/** xiw_ksock_sa_len() - sockaddr length for @sa's family (0 if unknown). */
socklen_t xiw_ksock_sa_len(const struct sockaddr *sa);
/** xiw_ksock_sa_same() - same family, address and port (IPv6: and scope). */
bool xiw_ksock_sa_same(const struct sockaddr *a, const struct sockaddr *b);

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
struct xiw_ksock_zc *xiw_ksock_zc(struct xiw_ksock *l);
/** xiw_ksock_zc_reap() - read zero-copy notifications off the error
 *  queue (progress thread, on EPOLLERR). */
void xiw_ksock_zc_reap(struct xiw_ksock *l);

/**
 * struct xiw_ksock_mark - where this connection asks the sockops tracer
 * for TX timestamp marks (ksock_ack.c; XIW_MARK_WANT in
 * include/xiwarp/abi/sockops.h). Send lock holders only.
 * @slot:   its entry of the process's mark table; NULL while not traced.
 * @cookie: the cookie it was registered with (the entry's tag).
 */
struct xiw_ksock_mark {
	uint64_t *slot;
	uint64_t cookie;
};

/** xiw_ksock_mark() - the connection's mark-table entry. */
struct xiw_ksock_mark *xiw_ksock_mark(struct xiw_ksock *l);

#define XIW_NOTSENT_LOWAT_DEFAULT (128 * 1024)
#define XIW_NOTSENT_LOWAT_MAX (1 << 30)
#define XIW_LOWAT_MIN_CONNS 16	/* open connections for the lowat */
/**
 * xiw_ksock_notsent_lowat() - the TCP_NOTSENT_LOWAT every connection gets
 * while at least XIW_LOWAT_MIN_CONNS are open (XIW_TCP_NOTSENT_LOWAT,
 * read once), in bytes; 0: never set (the kernel's).
 */
int xiw_ksock_notsent_lowat(void);
/** xiw_ksock_open_conns() - kernel TCP connections open (not closed). */
int xiw_ksock_open_conns(void);
/**
 * xiw_ksock_lowat_parse() - XIW_TCP_NOTSENT_LOWAT's value @e: bytes
 * 0..XIW_NOTSENT_LOWAT_MAX; NULL or "" gives XIW_NOTSENT_LOWAT_DEFAULT,
 * anything else is logged (warn) and gives the default too.
 */
int xiw_ksock_lowat_parse(const char *e);
/**
 * xiw_ksock_set_cc() - set TCP congestion control @name (tcp(7)
 * TCP_CONGESTION) on socket @fd. Return: 0, -ENOENT no such algorithm,
 * -EPERM not allowed without CAP_NET_ADMIN, other -errno.
 */
int xiw_ksock_set_cc(int fd, const char *name);
/**
 * xiw_ksock_apply_cc() - apply XIW_TCP_CONGESTION (unset or empty: leave
 * the host's default) to a socket the engine connects or listens on; a
 * failure is logged once (warn) and leaves the default (ksock_cc.c).
 */
void xiw_ksock_apply_cc(int fd);
/** xiw_ksock_fd() - the connection's socket (for ksock's own helpers). */
int xiw_ksock_fd(const struct xiw_ksock *l);

/** xiw_ksock_of() - the ksock connection behind a generic handle. */
static inline struct xiw_ksock *xiw_ksock_of(struct xiw_llp *l)
{
	return (struct xiw_ksock *)l;	/* base is the first member */
}

/*
 * The seam's calls on ksock (semantics: llp.h, the wrapper of the same
 * name without the ksock prefix). ksock.c, ksock_ack.c, ksock_zc.c.
 */
void xiw_ksock_set_owner(struct xiw_ksock *l, const struct xiw_llp_cb *cb, void *arg);
ssize_t xiw_ksock_send(struct xiw_ksock *l, const struct iovec *iov, int n, bool more);
ssize_t xiw_ksock_recv(struct xiw_ksock *l, struct iovec *iov, int n);
void xiw_ksock_want_write(struct xiw_ksock *l, bool on);
void xiw_ksock_pause_read(struct xiw_ksock *l, bool paused);
void xiw_ksock_app_read(struct xiw_ksock *l, bool on);
int xiw_ksock_shutdown(struct xiw_ksock *l);
void xiw_ksock_abort(struct xiw_ksock *l);
void xiw_ksock_close(struct xiw_ksock *l);
int xiw_ksock_poll_fd(struct xiw_ksock *l);
uint32_t xiw_ksock_mss(struct xiw_ksock *l);
void xiw_ksock_addrs(struct xiw_ksock *l, struct sockaddr_storage *local,
		     struct sockaddr_storage *peer);
int xiw_ksock_ack_state(struct xiw_ksock *l, uint32_t *una, uint32_t *outq);
int xiw_ksock_ack_trace(struct xiw_ksock *l, uint64_t cookie);
/** xiw_ksock_ack_untrace() - stop tracing a connection that is closing. */
void xiw_ksock_ack_untrace(struct xiw_ksock *l);
int xiw_ksock_ack_outq(struct xiw_ksock *l, uint32_t *outq);
int xiw_ksock_ack_callbacks(struct xiw_ksock *l, bool on);
int xiw_ksock_ack_arm(struct xiw_ksock *l, uint32_t target);
int xiw_ksock_ack_armed(struct xiw_ksock *l);
void xiw_ksock_ack_mark(struct xiw_ksock *l, uint32_t pos);
bool xiw_ksock_zc_usable(struct xiw_ksock *l);
ssize_t xiw_ksock_send_zc(struct xiw_ksock *l, const struct iovec *iov, int n,
			  uint32_t *id, bool *zc);
bool xiw_ksock_zc_released(struct xiw_ksock *l, uint32_t id);
bool xiw_ksock_zc_outstanding(struct xiw_ksock *l);
int xiw_ksock_zc_quiesce(struct xiw_ksock *l, unsigned int max_ms);

/*
 * Open connections, for the exit linger (ksock_linger.c): the time of
 * the last byte from the peer and whether the stream has ended.
 */
struct xiw_ksock_live {
	struct xiw_ksock_live *prev, *next;
	uint64_t last_rx_ns;		/* CLOCK_MONOTONIC_COARSE; 0: none yet */
	bool ended;			/* EOF, reset, or aborted */
	bool unacked;			/* a lingering close: bytes of ours unacknowledged */
	uint16_t lport;			/* accepted by our listener on this port
					 * (network order); 0: connected or adopted */
};

/** xiw_ksock_env_ms_ns() - environment knob @name in ms (default @def),
 *  read once into *@ns (initialise it to -1), returned in ns. */
uint64_t xiw_ksock_env_ms_ns(int64_t *ns, const char *name, unsigned long def);
/** xiw_ksock_coarse_ns() - CLOCK_MONOTONIC_COARSE in ns (cheap, ~4 ms steps). */
uint64_t xiw_ksock_coarse_ns(void);
/** xiw_ksock_live_add() - register an open connection (once). */
void xiw_ksock_live_add(struct xiw_ksock_live *v);
/** xiw_ksock_live_del() - unregister before it is freed (idempotent). */
void xiw_ksock_live_del(struct xiw_ksock_live *v);
/** xiw_ksock_live_on_port() - an open connection (not ended) that a
 *  listener of ours accepted on @port (network order) exists. */
bool xiw_ksock_live_on_port(uint16_t port);
/**
 * xiw_ksock_drain() - read and drop what @fd has queued (bounded, 4 MiB).
 * Return: bytes dropped, -EPIPE at the peer's FIN, or -errno.
 */
int xiw_ksock_drain(int fd);
/**
 * xiw_ksock_linger_close() - take over the close of @fd (not aborted) if
 * the peer sent something less than XIW_CLOSE_QUIET_MS ago or bytes of
 * ours still wait for its ACK: close it, with FIN, once they are
 * acknowledged and the peer was quiet that long, or it sent FIN (bounded
 * by 4 × that time from the last acknowledgement, and by
 * XIW_CLOSE_DRAIN_MS overall). Progress thread only (else, and on false,
 * the caller drains and closes now).
 * Return: true if the fd now belongs to the linger.
 */
bool xiw_ksock_linger_close(int fd, uint64_t last_rx_ns, bool eof);
/**
 * xiw_ksock_fin_hold() - a FIN now would follow the peer's last bytes by
 * less than XIW_CLOSE_QUIET_MS (and no EOF yet): hold it. @until_ns: out
 * (may be NULL), when to send it regardless.
 */
bool xiw_ksock_fin_hold(uint64_t last_rx_ns, bool eof, uint64_t *until_ns);

#endif /* XIW_KSOCK_H */
