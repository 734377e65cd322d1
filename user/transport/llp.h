/* SPDX-License-Identifier: MIT */
/*
 * The lower-layer protocol (LLP) seam: what the engine asks of a byte-stream
 * transport, as an ops table (struct xiw_llp_ops). Two transports live
 * behind it in one library:
 *   - ksock (ksock*.c): a non-blocking kernel TCP socket driven by the
 *     engine's progress thread (epoll);
 *   - xsk (xsk*.c): an AF_XDP socket per interface/RX queue with xiwarp's
 *     own user-space TCP (utcp/), driven by the same progress thread.
 * The engine holds a struct xiw_llp * and calls the xiw_llp_*() wrappers
 * below; it never knows which transport a connection uses. Connections
 * are made with xiw_llp_connect()/xiw_llp_listen() (llp.c), which pick the
 * transport (XIW_TRANSPORT=ksock|xsk, see llp.c).
 *
 * Threads: xiw_llp_send() may be called from any thread but callers
 * serialise sends per connection (the QP's TX lock). xiw_llp_recv() runs
 * on the progress thread or on an app thread polling the QP's CQ, never two
 * at a time per connection (the QP's RX lock); the upcalls run on the
 * progress thread only.
 */
#ifndef XIW_LLP_H
#define XIW_LLP_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

struct xiw_llp;

/**
 * struct xiw_llp_fpdu - an FPDU header as the transport's packet parser
 * (the XDP program) saw it, for the engine's receive machine
 * (xiw_llp_fpdu_meta). Host byte order.
 * @ulpdu_len: MPA ULPDU length (RFC 5044 §4.1).
 * @opcode:    RDMAP opcode (RFC 5040 §4.3).
 * @tagged:    DDP T bit; @stag/@to valid, else @qn/@msn/@mo (RFC 5041).
 * @last:      DDP L bit.
 */
struct xiw_llp_fpdu {
	uint16_t ulpdu_len;
	uint8_t opcode;
	bool tagged, last;
	uint32_t stag, qn, msn, mo;
	uint64_t to;
};

/* xiw_llp_fpdu_done() outcomes */
enum xiw_llp_meta_res {
	XIW_LLP_META_NONE,	/* no record: the engine decoded the header */
	XIW_LLP_META_USED,	/* the record replaced the decode */
	XIW_LLP_META_MISMATCH,	/* a record failed the engine's checks */
};

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

/**
 * struct xiw_llp_ops - one transport's implementation of the seam. Every
 * member is mandatory except @ack_mark (NULL: the transport sees every
 * ACK, as xsk), @ack_outq (NULL: @ack_state is as cheap, as xsk),
 * @ack_armed (NULL: unknown), @ack_callbacks (NULL: no switch),
 * @fpdu_stream, @fpdu_meta and @fpdu_done (NULL: the transport parses no
 * FPDU headers, as ksock); the semantics
 * are those of the xiw_llp_*() wrapper of the same name below.
 * @name: "ksock", "xsk" (logs, xiw_llp_name()).
 * @ack_events: the transport sees every ACK itself (utcp): tracing ACKs
 *              costs nothing, so the engine arms watermarks even for
 *              zero-copy WRs in copy-completion mode instead of polling.
 * @readable_level: @readable is level-triggered: an upcall that reads
 *              nothing comes again while bytes wait (ksock's epoll), so
 *              the owner may skip one while another thread reads.
 */
struct xiw_llp_ops {
	const char *name;
	bool ack_events;
	bool readable_level;
	void (*set_owner)(struct xiw_llp *l, const struct xiw_llp_cb *cb, void *arg);
	ssize_t (*send)(struct xiw_llp *l, const struct iovec *iov, int n, bool more);
	ssize_t (*recv)(struct xiw_llp *l, struct iovec *iov, int n);
	void (*want_write)(struct xiw_llp *l, bool on);
	void (*pause_read)(struct xiw_llp *l, bool paused);
	void (*app_read)(struct xiw_llp *l, bool on);
	int (*shutdown)(struct xiw_llp *l);
	void (*abort)(struct xiw_llp *l);
	void (*close)(struct xiw_llp *l);
	int (*poll_fd)(struct xiw_llp *l);
	uint32_t (*mss)(struct xiw_llp *l);
	void (*addrs)(struct xiw_llp *l, struct sockaddr_storage *local,
		      struct sockaddr_storage *peer);
	int (*ack_state)(struct xiw_llp *l, uint32_t *una, uint32_t *outq);
	int (*ack_outq)(struct xiw_llp *l, uint32_t *outq);	/* optional */
	int (*ack_trace)(struct xiw_llp *l, uint64_t cookie);
	int (*ack_arm)(struct xiw_llp *l, uint32_t target);
	int (*ack_armed)(struct xiw_llp *l);			/* optional */
	void (*ack_mark)(struct xiw_llp *l, uint32_t pos);	/* optional */
	int (*ack_callbacks)(struct xiw_llp *l, bool on);	/* optional */
	bool (*zc_usable)(struct xiw_llp *l);
	ssize_t (*send_zc)(struct xiw_llp *l, const struct iovec *iov, int n,
			   uint32_t *id, bool *zc);
	bool (*zc_released)(struct xiw_llp *l, uint32_t id);
	bool (*zc_outstanding)(struct xiw_llp *l);
	int (*zc_quiesce)(struct xiw_llp *l, unsigned int max_ms);
	/* optional (NULL: the transport parses no FPDUs) */
	void (*fpdu_stream)(struct xiw_llp *l, bool crc, bool markers);
	int (*fpdu_meta)(struct xiw_llp *l, uint64_t off, struct xiw_llp_fpdu *out);
	void (*fpdu_done)(struct xiw_llp *l, enum xiw_llp_meta_res res,
			  uint64_t next_off);
};

/**
 * struct xiw_llp - the generic connection handle: the first member of each
 * transport's own connection struct (container_of gets back to it).
 * @ops: the transport's table.
 */
struct xiw_llp {
	const struct xiw_llp_ops *ops;
};

/** xiw_llp_name() - the connection's transport ("ksock", "xsk"). */
static inline const char *xiw_llp_name(const struct xiw_llp *l)
{
	return l->ops->name;
}

/** xiw_llp_set_owner() - route upcalls to @cb/@arg (atomically switches owner). */
static inline void xiw_llp_set_owner(struct xiw_llp *l,
				     const struct xiw_llp_cb *cb, void *arg)
{
	l->ops->set_owner(l, cb, arg);
}

/**
 * xiw_llp_send() - send @iov without blocking. The bytes are taken (copied
 * or sent) before it returns: @iov may be reused at once.
 * @more: more FPDUs follow immediately (MSG_MORE).
 * Return: bytes accepted (may be short), -EAGAIN if none, or -errno.
 */
static inline ssize_t xiw_llp_send(struct xiw_llp *l, const struct iovec *iov,
				   int n, bool more)
{
	return l->ops->send(l, iov, n, more);
}

/**
 * xiw_llp_recv() - receive into @iov without blocking.
 * Return: bytes (> 0), 0 on orderly EOF, -EAGAIN, or -errno.
 */
static inline ssize_t xiw_llp_recv(struct xiw_llp *l, struct iovec *iov, int n)
{
	return l->ops->recv(l, iov, n);
}

/** xiw_llp_want_write() - ask for (or cancel) one @writable upcall. */
static inline void xiw_llp_want_write(struct xiw_llp *l, bool on)
{
	l->ops->want_write(l, on);
}

/** xiw_llp_pause_read() - stop (true) / resume (false) @readable upcalls
 *  (no receive buffer posted: TCP flow control pushes back on the peer). */
static inline void xiw_llp_pause_read(struct xiw_llp *l, bool paused)
{
	l->ops->pause_read(l, paused);
}

/** xiw_llp_app_read() - the owner reads from its own threads (true): no
 *  @readable upcalls, as if paused, until called with false. */
static inline void xiw_llp_app_read(struct xiw_llp *l, bool on)
{
	l->ops->app_read(l, on);
}

/** xiw_llp_shutdown() - half-close our side (FIN) after queued data. */
static inline int xiw_llp_shutdown(struct xiw_llp *l)
{
	return l->ops->shutdown(l);
}

/** xiw_llp_abort() - reset the connection (RST). No further upcalls. */
static inline void xiw_llp_abort(struct xiw_llp *l)
{
	l->ops->abort(l);
}

/** xiw_llp_close() - unregister from the progress thread, close and free.
 *  Unless aborted, bytes the peer sent and nobody read are dropped first,
 *  so the close sends FIN, not RST. After it returns no upcall for @l is
 *  running or will run. NULL: no-op. */
static inline void xiw_llp_close(struct xiw_llp *l)
{
	if (l)
		l->ops->close(l);
}

/** xiw_llp_poll_fd() - an fd that polls EPOLLOUT when send space is back
 *  (the datamover's own epoll set, seed 003). */
static inline int xiw_llp_poll_fd(struct xiw_llp *l)
{
	return l->ops->poll_fd(l);
}

/** xiw_llp_mss() - the connection's TCP MSS (bytes), for FPDU sizing. */
static inline uint32_t xiw_llp_mss(struct xiw_llp *l)
{
	return l->ops->mss(l);
}

/** xiw_llp_addrs() - local and peer address (either may be NULL). */
static inline void xiw_llp_addrs(struct xiw_llp *l, struct sockaddr_storage *local,
				 struct sockaddr_storage *peer)
{
	l->ops->addrs(l, local, peer);
}

/*
 * Send state for ACK completions (seed 000; ksock: ksock_ack.c, xsk:
 * utcp's snd_una). The acknowledged-bytes count is snd_una in a byte-count
 * space (mod 2^32).
 */
/** xiw_llp_ack_state() - consistent (@una, @outq = unacked bytes queued);
 *  send lock held. Return: 0 or -errno. */
static inline int xiw_llp_ack_state(struct xiw_llp *l, uint32_t *una,
				    uint32_t *outq)
{
	return l->ops->ack_state(l, una, outq);
}

/**
 * xiw_llp_ack_outq() - bytes written and not yet acknowledged (ksock:
 * SIOCOUTQ, which takes no socket lock), for a caller that knows the
 * stream position of its last written byte (una = that - @outq). Send
 * lock held. Return: 0, -EOPNOTSUPP when the transport has no cheaper
 * reading than xiw_llp_ack_state(), other -errno.
 */
static inline int xiw_llp_ack_outq(struct xiw_llp *l, uint32_t *outq)
{
	return l->ops->ack_outq ? l->ops->ack_outq(l, outq) : -EOPNOTSUPP;
}

/** xiw_llp_has_ack_outq() - the transport has xiw_llp_ack_outq(). */
static inline bool xiw_llp_has_ack_outq(const struct xiw_llp *l)
{
	return l->ops->ack_outq != NULL;
}

/** xiw_llp_ack_trace() - push an event for this connection's ACKs (ksock:
 *  sockops; xsk: native). Return: 0, or -errno when unavailable (poll
 *  instead). */
static inline int xiw_llp_ack_trace(struct xiw_llp *l, uint64_t cookie)
{
	return l->ops->ack_trace(l, cookie);
}

/** xiw_llp_ack_arm() - one trace event once the acknowledged-bytes count
 *  reaches @target (may come early). Return: 0 or -errno (poll instead). */
static inline int xiw_llp_ack_arm(struct xiw_llp *l, uint32_t target)
{
	return l->ops->ack_arm(l, target);
}

/**
 * xiw_llp_ack_armed() - is the watermark of the last xiw_llp_ack_arm()
 * still armed, i.e. has its event not fired? A caller that finds the
 * watermark's bytes acknowledged (xiw_llp_ack_state) while it is still
 * armed has seen an ACK the tracer missed. Optional per transport.
 * Return: 1 armed, 0 fired (or never armed), -errno when unknown.
 */
static inline int xiw_llp_ack_armed(struct xiw_llp *l)
{
	return l->ops->ack_armed ? l->ops->ack_armed(l) : -EOPNOTSUPP;
}

/**
 * xiw_llp_ack_callbacks() - switch the ACK tracer's per-ACK work for this
 * connection on or off (ksock: the sockops program's RTT_CB and TX
 * timestamping callbacks, XIW_SO_ACK_CALLBACKS). Off, no trace event
 * comes (an armed watermark is dropped) and send calls get no marks
 * until it is on again; the connection is then polled. Optional per
 * transport; send lock held.
 * Return: 0; -EOPNOTSUPP: no switch (the tracer's work stays on), other
 * -errno: not changed.
 */
static inline int xiw_llp_ack_callbacks(struct xiw_llp *l, bool on)
{
	return l->ops->ack_callbacks ? l->ops->ack_callbacks(l, on) :
				       -EOPNOTSUPP;
}

/**
 * xiw_llp_ack_mark() - the next send call whose end reaches acknowledged-
 * bytes position @pos carries the end of a WR whose ACK is waited for:
 * have the ACK tracer report that call's ACK (ksock: the sockops mark
 * table, XIW_MARK_WANT; calls not asked for get no ACK callback of their
 * own). Optional per transport; send lock held, called before the send.
 */
static inline void xiw_llp_ack_mark(struct xiw_llp *l, uint32_t pos)
{
	if (l->ops->ack_mark)
		l->ops->ack_mark(l, pos);
}

/*
 * Zero-copy sends (ksock: MSG_ZEROCOPY, ksock_zc.c; xsk: payload framed
 * from the caller's buffers on every (re)transmission, xsk_tx.c). The
 * transport keeps referencing the payload until it releases it (after the
 * peer's ACK); each zero-copy send call gets an id, released ids are
 * reported.
 */
/** xiw_llp_zc_usable() - zero-copy may be tried on this connection. */
static inline bool xiw_llp_zc_usable(struct xiw_llp *l)
{
	return l->ops->zc_usable(l);
}

/**
 * xiw_llp_send_zc() - like xiw_llp_send(), but the payload is referenced,
 * not copied. @id: out, the call's notification id when bytes were
 * accepted; @zc: out, true if it was a zero-copy call. Falls back to a
 * plain send (*id unchanged, *zc false) when zero-copy is not possible.
 * Return: bytes, -EAGAIN, -errno.
 */
static inline ssize_t xiw_llp_send_zc(struct xiw_llp *l, const struct iovec *iov,
				      int n, uint32_t *id, bool *zc)
{
	return l->ops->send_zc(l, iov, n, id, zc);
}

/*
 * FPDU records (xsk: the XDP program's struct xiw_xdp_meta). Offsets are
 * FPDU-stream offsets as in struct xiw_rx: octets from the first one after
 * the peer's MPA frame.
 */
/**
 * xiw_llp_fpdu_stream() - the next octet xiw_llp_recv() returns is the
 * first of the peer's FPDU stream (offset 0), framed with MPA CRC @crc and
 * markers @markers (RFC 5044 §4.3, §4.1): the transport may start to
 * parse FPDU headers in front of the engine. No-op where it cannot.
 */
static inline void xiw_llp_fpdu_stream(struct xiw_llp *l, bool crc, bool markers)
{
	if (l->ops->fpdu_stream)
		l->ops->fpdu_stream(l, crc, markers);
}

/**
 * xiw_llp_fpdu_meta() - the transport's record of the FPDU whose MPA
 * length field is at stream offset @off, if it has one for exactly that
 * offset (and the connection). Records for earlier offsets are dropped.
 * Return: 1 (@out filled: not yet checked against the octets), 0 (none).
 */
static inline int xiw_llp_fpdu_meta(struct xiw_llp *l, uint64_t off,
				    struct xiw_llp_fpdu *out)
{
	return l->ops->fpdu_meta ? l->ops->fpdu_meta(l, off, out) : 0;
}

/**
 * xiw_llp_fpdu_done() - the engine has the header of an FPDU: how the
 * record fared (@res, counted) and the stream offset @next_off of the next
 * FPDU's length field, from which the transport re-syncs its parser when
 * it lost the boundary.
 */
static inline void xiw_llp_fpdu_done(struct xiw_llp *l, enum xiw_llp_meta_res res,
				     uint64_t next_off)
{
	if (l->ops->fpdu_done)
		l->ops->fpdu_done(l, res, next_off);
}

/** xiw_llp_zc_released() - the transport released the payload of
 *  zero-copy call @id (and of every earlier one). */
static inline bool xiw_llp_zc_released(struct xiw_llp *l, uint32_t id)
{
	return l->ops->zc_released(l, id);
}

/** xiw_llp_zc_outstanding() - some zero-copy call's payload is still
 *  referenced. */
static inline bool xiw_llp_zc_outstanding(struct xiw_llp *l)
{
	return l->ops->zc_outstanding(l);
}

/**
 * xiw_llp_zc_quiesce() - before failing WRs whose payload the transport may
 * still reference: abort the connection (RST, nothing more sent) and wait
 * up to @max_ms for every zero-copy release. Nothing outstanding: does
 * nothing. Send lock held.
 * Return: 0, or -ETIMEDOUT (some payload still referenced).
 */
static inline int xiw_llp_zc_quiesce(struct xiw_llp *l, unsigned int max_ms)
{
	return l->ops->zc_quiesce(l, max_ms);
}

/*
 * Engine services for transports.
 */

/**
 * xiw_llp_set_ack_wake() - the engine's "an armed ACK watermark
 * (xiw_llp_ack_arm) was reached: complete the WRs now" (xiw_txack.c),
 * registered rather than linked, so the transports need no engine object.
 */
void xiw_llp_set_ack_wake(void (*fn)(void));
/** xiw_llp_ack_wake() - call it (transports; any thread, no transport
 *  lock held). No engine registered: nothing (the engine polls). */
void xiw_llp_ack_wake(void);

/*
 * Making connections (llp.c): the transport is chosen here.
 */

/**
 * xiw_llp_connect() - start a non-blocking TCP connect to @dst (from @src
 * if non-NULL; its port may be 0) over the transport selected for @dst.
 * Completion is the FIRST @cb->writable upcall (connected; want_write is
 * not needed for it); failure is @cb->closed with -ECONNREFUSED,
 * -ETIMEDOUT, -EHOSTUNREACH, ... Upcalls run on the progress thread.
 * @out: the new llp; close it with xiw_llp_close() in every case.
 * Return: 0, or -errno if the connect failed immediately (no llp made).
 */
int xiw_llp_connect(const struct sockaddr *src, const struct sockaddr *dst,
		    const struct xiw_llp_cb *cb, void *arg, struct xiw_llp **out);

struct xiw_llp_listener;

/**
 * typedef xiw_llp_accept_fn - a connection was accepted (progress thread).
 * @l has no owner and gets no upcalls until xiw_llp_set_owner(); the callee
 * owns it (xiw_llp_close() to refuse it).
 */
typedef void (*xiw_llp_accept_fn)(void *arg, struct xiw_llp *l);

/**
 * xiw_llp_listen() - listen on @addr (port 0: the kernel picks) with
 * SO_REUSEADDR, so the same port can be bound again right after close.
 * A kernel TCP listener always exists (it also reserves the port); with
 * XIW_TRANSPORT=xsk the port is registered as well on every interface
 * with the xiwarp XDP program that @addr covers, whose SYNs then reach the
 * xsk transport instead.
 * @bound: out (may be NULL): the bound address with its port.
 * Return: 0 or -errno (-EADDRINUSE, -EADDRNOTAVAIL, -EAFNOSUPPORT, ...).
 */
int xiw_llp_listen(const struct sockaddr *addr, int backlog,
		   xiw_llp_accept_fn fn, void *arg,
		   struct xiw_llp_listener **out, struct sockaddr_storage *bound);

/**
 * xiw_llp_listener_close() - stop listening and free. After it returns no
 * accept callback is running or will run. NULL: no-op.
 */
void xiw_llp_listener_close(struct xiw_llp_listener *ls);

/** xiw_llp_sa_len() - sockaddr length for @sa's family (0 if unknown). */
socklen_t xiw_llp_sa_len(const struct sockaddr *sa);

/**
 * xiw_close_quiet_ns() - XIW_CLOSE_QUIET_MS (default 50; 0: off) in ns:
 * a closing stream holds its FIN while the peer sent something less than
 * this long ago, at most 4 times this long (ksock_linger.c says why).
 */
uint64_t xiw_close_quiet_ns(void);

#endif /* XIW_LLP_H */
