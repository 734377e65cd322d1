// SPDX-License-Identifier: MIT
/*
 * xsk: one TCP connection over utcp, and the LLP ops table (llp.h).
 *
 * Send: utcp keeps no copy of payload and asks @fill for stream bytes
 * whenever it (re)transmits; the send queue (xsk_sendq.c) answers.
 * xiw_llp_send() copies the engine's iovecs (headers, pad, CRC, small
 * payloads) into the queue's ring, which sits in the umem arena;
 * xiw_llp_send_zc() only references the engine's registered buffers
 * (zero-copy WRs): retransmissions frame them again, SACKed ranges are
 * never asked for, and the call's id is released once utcp's snd_una
 * passes its last byte (seed 002). ACK completions (seed 000) read utcp's
 * acknowledged offset directly (xiw_llp_ack_state), and an armed
 * watermark wakes the engine's ACK scan (xiw_llp_ack_wake).
 *
 * Receive: @deliver copies in-order payload into the receive ring, the
 * engine's xiw_llp_recv() copies it out and reopens the window
 * (utcp_recved). The ring is as large as utcp's receive buffer, so the
 * window never lets more in than fits.
 *
 * Upcalls: utcp runs under c->lock and only records what the owner is
 * owed (c->ev); xsk_conn_deliver() runs the upcalls on the progress thread
 * with no lock held, as ksock's epoll dispatch does. Off the progress
 * thread, events are queued to the port (eventfd). Readability is level
 * triggered as with epoll: whatever re-enables reading re-raises it.
 *
 * Lifetime: references from the owner (until xiw_llp_close), the port
 * table (until utcp is CLOSED and the owner is gone), each queued event,
 * and callers working on the connection. xiw_llp_close() detaches the
 * owner; TCP finishes the close (FIN, TIME_WAIT) on its own, at most
 * ORPHAN_NS, then the flow leaves the XDP map and the port reservation
 * socket is closed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include "xiwarp/xiwarp.h"
#include "xsk.h"

#define SND_RING_DEF	(2u << 20)
#define RCV_RING_DEF	(1u << 20)
#define SPANS		16384	/* send queue spans: ~3 per FPDU */
#define ORPHAN_NS	(60ull * 1000000000ull)
#define EFD_FULL	0xfffffffffffffffeull	/* eventfd: no longer writable */

#define C(l) ((struct xsk_conn *)(l))	/* base is the first member */

static unsigned int env_uint(const char *name, unsigned int def,
			     unsigned int min, unsigned int max)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return def;
	n = strtoul(v, &end, 10);
	if (*end || n < min || n > max) {
		xiw_log(XIW_LOG_WARN, "%s=%s: want %u..%u; using %u", name, v,
			min, max, def);
		return def;
	}
	return (unsigned int)n;
}

/* -------------------------------------------------------- references --- */

void xsk_conn_get(struct xsk_conn *c)
{
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
}

static void conn_free(struct xsk_conn *c)
{
	utcp_free(c->tcp);
	if (c->poll_fd >= 0)
		close(c->poll_fd);
	if (c->port_fd >= 0)
		close(c->port_fd);
	xsk_sendq_fini(&c->sq);
	free(c->rbuf);
	free(c->fpq);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void xsk_conn_put(struct xsk_conn *c)
{
	if (!__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL))
		conn_free(c);
}

/* ----------------------------------------------------- send space fd --- */

/* Copy room in the send queue, also bounded by utcp's send buffer. */
static uint32_t send_space(const struct xsk_conn *c)
{
	uint32_t room = xsk_sendq_ring_free(&c->sq), u = utcp_send_space(c->tcp);

	if (!xsk_sendq_spans_free(&c->sq))
		return 0;
	return room < u ? room : u;
}

/* lock held: the send ring is full; EPOLLOUT off until space is back. */
static void space_gone(struct xsk_conn *c)
{
	uint64_t v = EFD_FULL;

	if (c->poll_full)
		return;
	c->poll_full = true;
	if (write(c->poll_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		xiw_log(XIW_LOG_WARN, "xsk: send-space eventfd: %s", strerror(errno));
}

/* lock held: a quarter of the ring is free again: EPOLLOUT on. */
static void space_back(struct xsk_conn *c)
{
	uint64_t v;

	if (!c->poll_full || send_space(c) < c->sq.rcap / 4 ||
	    xsk_sendq_spans_free(&c->sq) < (c->sq.smask + 1) / 4)
		return;
	c->poll_full = false;
	if (read(c->poll_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		xiw_log(XIW_LOG_WARN, "xsk: send-space eventfd: %s", strerror(errno));
}

/* ---------------------------------------------------- utcp callbacks --- */

static int cb_fill(void *ctx, uint64_t off, uint32_t len, struct utcp_iov *iov,
		   int max)
{
	struct xsk_conn *c = ctx;

	if (!xsk_port_tx_room(c->port, len)) {
		c->tx_blocked = true;	/* xsk_conn_tx_resume() when frames return */
		return -ENOBUFS;
	}
	return xsk_sendq_fill(&c->sq, off, len, iov, max);
}

static void cb_output(void *ctx, const uint8_t *hdr, uint32_t hdr_len,
		      const struct utcp_iov *iov, int niov, uint32_t plen)
{
	struct xsk_conn *c = ctx;

	if (xsk_port_xmit(c->port, c->eth, hdr, hdr_len, iov, niov, plen, true))
		c->tx_lost++;	/* like a drop on the wire: TCP recovers */
}

static void cb_deliver(void *ctx, uint64_t off, const uint8_t *data, uint32_t len)
{
	struct xsk_conn *c = ctx;
	uint32_t room = c->rcap - (uint32_t)(c->r_head - c->r_tail), pos, n1;

	(void)off;
	c->ev |= XSK_EV_READABLE;
	if (!len) {
		c->fin = true;
		return;
	}
	c->last_rx_ns = c->in_now;	/* no clock read per segment */
	if (c->released) {	/* nobody reads: drop it, keep the window open */
		utcp_recved(c->tcp, len, c->last_rx_ns);
		return;
	}
	if (!data) {		/* cb_stage copied exactly these: commit */
		if (len != c->r_staged)
			xiw_log(XIW_LOG_ERROR, "xsk: staged %u, committing %u", c->r_staged, len);
		else
			c->r_head += len;
		c->r_staged = 0;
		return;
	}
	if (len > room) {	/* cannot happen: the window is the ring */
		xiw_log(XIW_LOG_ERROR, "xsk: receive ring overrun (%u > %u)", len, room);
		len = room;
	}
	pos = (uint32_t)(c->r_head % c->rcap);
	n1 = c->rcap - pos < len ? c->rcap - pos : len;
	memcpy(c->rbuf + pos, data, n1);
	memcpy(c->rbuf, data + n1, len - n1);
	c->r_head += len;
}

/* utcp_ops.stage: copy an in-order segment's payload to the receive ring
 * behind r_head (not visible yet) while utcp sums it for its checksum. */
static bool cb_stage(void *ctx, const uint8_t *data, uint32_t len,
		     struct utcp_csum *cs)
{
	struct xsk_conn *c = ctx;
	uint32_t room = c->rcap - (uint32_t)(c->r_head - c->r_tail), pos, n1;

	if (c->released || len > room)
		return false;
	pos = (uint32_t)(c->r_head % c->rcap);
	n1 = c->rcap - pos < len ? c->rcap - pos : len;
	utcp_csum_copy(cs, c->rbuf + pos, data, n1);
	utcp_csum_copy(cs, c->rbuf, data + n1, len - n1);
	c->r_staged = len;
	return true;
}

static void cb_acked(void *ctx, uint64_t off)
{
	struct xsk_conn *c = ctx;

	if (off <= c->sq.acked)
		return;
	xsk_sendq_acked(&c->sq, off);
	space_back(c);
	if (c->want_write)
		c->ev |= XSK_EV_WRITABLE;
	if (c->ack_armed && (int32_t)((uint32_t)off - c->ack_target) >= 0) {
		c->ack_armed = false;
		c->ev |= XSK_EV_ACKED;	/* xiw_llp_ack_wake() from deliver */
	}
}

static void cb_state(void *ctx, enum utcp_state old, enum utcp_state st)
{
	struct xsk_conn *c = ctx;

	if (st == UTCP_ESTABLISHED && old == UTCP_SYN_SENT) {
		c->connecting = false;
		c->ev |= XSK_EV_CONNECTED;
	} else if (st == UTCP_ESTABLISHED && old == UTCP_SYN_RCVD && c->lsn) {
		c->ev |= XSK_EV_ACCEPT;
	}
}

static void cb_closed(void *ctx, int err)
{
	struct xsk_conn *c = ctx;

	c->tcp_closed = true;
	c->tcp_err = err;
	if (err && err != -ECONNABORTED) {	/* RST, timeout; not our abort */
		char la[INET_ADDRSTRLEN], ra[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &c->laddr, la, sizeof(la));
		inet_ntop(AF_INET, &c->raddr, ra, sizeof(ra));
		xiw_log(XIW_LOG_INFO, "xsk: %s:%u <-> %s:%u: %s%s", la, c->lport, ra,
			c->rport, strerror(-err),
			err == -ETIMEDOUT ? " (utcp retransmissions exhausted)" : "");
		c->ev |= XSK_EV_CLOSED;
		c->err = err;
	}
}

static const struct utcp_ops conn_utcp_ops = {
	.fill = cb_fill,
	.output = cb_output,
	.deliver = cb_deliver,
	.acked = cb_acked,
	.state = cb_state,
	.closed = cb_closed,
	.stage = cb_stage,
};

/* ------------------------------------------------------------ common --- */

/*
 * Closing gently (as ksock_linger.c, whose comment says why): after the
 * owner let go, bytes nobody will read are dropped and acknowledged, not
 * answered with RST, and the FIN waits while the peer sent something less
 * than XIW_CLOSE_QUIET_MS ago, until its own FIN, or 4 x that time.
 */
#define FIN_TICK_NS	(5ull * 1000000ull)

static bool fin_may_go(const struct xsk_conn *c, uint64_t now)
{
	return c->fin || now >= c->fin_by ||
	       now - c->last_rx_ns >= xiw_close_quiet_ns();
}

/* lock held: send a held FIN once the peer has been quiet. */
static void fin_release(struct xsk_conn *c, uint64_t now)
{
	if (!c->fin_held || c->tcp_closed || !fin_may_go(c, now))
		return;
	c->fin_held = false;
	c->fin_queued = true;
	utcp_close(c->tcp, now);
}

/* lock held: the next time the port timer must look at @c (ns). */
static uint64_t conn_deadline(const struct xsk_conn *c)
{
	uint64_t d = utcp_next_deadline(c->tcp);

	if (c->detached && !c->tcp_closed && c->orphan_at < d)
		d = c->orphan_at;
	if (c->fin_held && !c->tcp_closed && xiw_now_ns() + FIN_TICK_NS < d)
		d = xiw_now_ns() + FIN_TICK_NS;
	return d;
}

/*
 * lock held, after any utcp call: leave the table once TCP is done and
 * nobody owns the connection; pull the port timer to the next deadline.
 * Return: true when the table reference must be dropped (after unlock).
 */
static bool conn_after(struct xsk_conn *c)
{
	uint64_t d, rtx, sacked;

	utcp_counters(c->tcp, &rtx, &sacked);
	if (rtx != c->cnt_retrans || sacked != c->cnt_sacked) {
		xsk_maps_count(&c->port->maps, c->port->slot,
			       rtx - c->cnt_retrans, sacked - c->cnt_sacked);
		c->cnt_retrans = rtx;
		c->cnt_sacked = sacked;
	}

	d = conn_deadline(c);
	if (c->tcp_closed && c->detached && !c->finished) {
		c->finished = true;
		if (c->flow_added)
			xsk_flow_del(&c->port->maps, &c->key);
		c->flow_added = false;
		xsk_port_conn_del(c->port, c);
		if (c->port_fd >= 0)
			close(c->port_fd);
		c->port_fd = -1;
		return true;
	}
	xsk_port_timer(c->port, d);
	return false;
}

/* Unlock after a utcp call on the progress thread, whose caller delivers
 * the upcalls and flushes TX itself. */
static void conn_unlock_noev(struct xsk_conn *c)
{
	bool drop = conn_after(c);

	pthread_mutex_unlock(&c->lock);
	if (drop)
		xsk_conn_put(c);
}

/*
 * Unlock after a utcp call from an owner's call (send, recv, ...): TX,
 * then upcalls are queued to the progress thread, never run here: the
 * owner may hold its own locks around the call (a QP's TX lock).
 */
static void conn_unlock(struct xsk_conn *c)
{
	bool drop = conn_after(c);
	bool ev = c->ev != 0;

	pthread_mutex_unlock(&c->lock);
	xsk_port_flush(c->port);
	if (ev)
		xsk_port_queue_ev(c->port, c);
	if (drop)
		xsk_conn_put(c);
}

static bool can_read(const struct xsk_conn *c)
{
	return !c->paused && !c->app_read && !c->eof_seen;
}

static bool has_input(const struct xsk_conn *c)
{
	return c->r_head != c->r_tail || c->fin || c->tcp_closed;
}

/* ------------------------------------------------------------ events --- */

void xsk_conn_input(struct xsk_conn *c, const uint8_t *ip, size_t len,
		    const struct xiw_xdp_meta *meta)
{
	pthread_mutex_lock(&c->lock);
	if (meta)	/* before utcp: the engine may read the bytes at once */
		xsk_fpdu_push(c, meta);
	c->in_now = xiw_now_ns();
	/* one ACK per RX batch: xsk_conn_input_end() sends it */
	utcp_input_batch_begin(c->tcp);
	if (utcp_input(c->tcp, ip, len, c->in_now) == -EBADMSG)
		c->port->rx_bad++;
	conn_unlock_noev(c);
}

void xsk_conn_input_end(struct xsk_conn *c)
{
	pthread_mutex_lock(&c->lock);
	utcp_input_batch_end(c->tcp, xiw_now_ns());
	conn_unlock_noev(c);
}

uint64_t xsk_conn_tick(struct xsk_conn *c, uint64_t now)
{
	uint64_t d;

	pthread_mutex_lock(&c->lock);
	if (c->detached && !c->tcp_closed && now >= c->orphan_at)
		utcp_abort(c->tcp, now);	/* peer never finished the close */
	else if (utcp_next_deadline(c->tcp) <= now)
		utcp_tick(c->tcp, now);
	fin_release(c, now);
	d = conn_deadline(c);
	conn_unlock_noev(c);
	return d;
}

void xsk_conn_listen_input(struct xsk_conn *c, const uint8_t *ip, size_t len)
{
	pthread_mutex_lock(&c->lock);
	/* not owned until accepted: a failed handshake leaves the table */
	c->detached = true;
	c->orphan_at = xiw_now_ns() + ORPHAN_NS;
	utcp_listen(c->tcp);
	c->in_now = xiw_now_ns();
	utcp_input(c->tcp, ip, len, c->in_now);
	conn_unlock_noev(c);
}

void xsk_conn_reset(struct xsk_conn *c)
{
	pthread_mutex_lock(&c->lock);
	c->dead = true;
	c->ev = 0;
	if (!c->tcp_closed)
		utcp_abort(c->tcp, xiw_now_ns());
	conn_unlock(c);
}

bool xsk_conn_unacked(struct xsk_conn *c)
{
	struct utcp_info info;
	bool busy;

	pthread_mutex_lock(&c->lock);
	utcp_get_info(c->tcp, &info);
	busy = !c->tcp_closed && (c->sq.queued != c->sq.acked || c->fin_held ||
				  (c->fin_queued && info.snd_una != info.snd_max));
	pthread_mutex_unlock(&c->lock);
	return busy;
}

void xsk_conn_tx_resume(struct xsk_conn *c)
{
	pthread_mutex_lock(&c->lock);
	if (c->tx_blocked) {
		c->tx_blocked = false;
		utcp_push(c->tcp, xiw_now_ns());
	}
	conn_unlock(c);
}

/*
 * Off the progress thread, after input: does @c owe an upcall the progress
 * thread would deliver? Readability while the owner does not want
 * @readable (its app threads read: app_read, or paused) is dropped as
 * xsk_conn_deliver() drops it (re-raised when reading resumes), so an
 * app thread that took its own bytes off the ring (xsk_port_rx_poll)
 * wakes nobody.
 */
static bool conn_owes(struct xsk_conn *c)
{
	bool owes;

	pthread_mutex_lock(&c->lock);
	if (!can_read(c))
		c->ev &= ~XSK_EV_READABLE;
	if (!c->want_write)
		c->ev &= ~XSK_EV_WRITABLE;
	owes = c->ev != 0;
	pthread_mutex_unlock(&c->lock);
	return owes;
}

/**
 * xsk_conn_deliver() - run the upcalls @c owes, progress thread only, no
 * lock held: connected (first @writable), @writable, @readable, or
 * @closed (after which nothing else is delivered).
 */
void xsk_conn_deliver(struct xsk_conn *c)
{
	const struct xiw_llp_cb *cb;
	uint32_t ev;
	uint64_t tail;
	void *arg;
	int err;

	if (!xiw_progress_is_self()) {	/* an app thread received: queue */
		if (conn_owes(c))
			xsk_port_queue_ev(c->port, c);
		return;
	}
	pthread_mutex_lock(&c->lock);
	ev = c->ev;
	c->ev = 0;
	cb = c->cb;
	arg = c->arg;
	err = c->err;
	if (ev & XSK_EV_CLOSED)
		c->dead = true;
	else if (c->dead || c->detached)
		ev &= XSK_EV_ACCEPT | XSK_EV_ACKED;
	if (!can_read(c))
		ev &= ~XSK_EV_READABLE;	/* re-raised when reading resumes */
	if (ev & XSK_EV_WRITABLE) {
		if (c->want_write)
			c->want_write = false;
		else
			ev &= ~XSK_EV_WRITABLE;
	}
	tail = c->r_tail;
	pthread_mutex_unlock(&c->lock);
	if (ev & XSK_EV_ACKED)
		xiw_llp_ack_wake();
	if (ev & XSK_EV_ACCEPT) {
		xsk_listen_established(c);
		return;
	}
	if (!cb)
		return;
	if (ev & XSK_EV_CLOSED) {
		if (cb->closed)
			cb->closed(arg, err ? err : -ECONNRESET);
		return;
	}
	if ((ev & (XSK_EV_CONNECTED | XSK_EV_WRITABLE)) && cb->writable)
		cb->writable(arg);
	if ((ev & XSK_EV_READABLE) && cb->readable) {
		cb->readable(arg);
		/* level-triggered: the owner read some and left some */
		pthread_mutex_lock(&c->lock);
		if (c->cb == cb && can_read(c) && c->r_tail != tail && has_input(c) &&
		    !c->dead)
			c->ev |= XSK_EV_READABLE;
		ev = c->ev;
		pthread_mutex_unlock(&c->lock);
		if (ev)
			xsk_port_queue_ev(c->port, c);
	}
}

/* lock held: reading was (re)enabled; owe a readable upcall if input waits */
static void reraise_read(struct xsk_conn *c)
{
	if (c->cb && can_read(c) && has_input(c))
		c->ev |= XSK_EV_READABLE;
}

/* Queue what is owed (any thread); lock not held. */
static void conn_kick(struct xsk_conn *c)
{
	bool ev;

	pthread_mutex_lock(&c->lock);
	ev = c->ev != 0;
	pthread_mutex_unlock(&c->lock);
	if (ev)
		xsk_port_queue_ev(c->port, c);
}

/* ------------------------------------------------------- llp calls --- */

static void op_set_owner(struct xiw_llp *l, const struct xiw_llp_cb *cb, void *arg)
{
	struct xsk_conn *c = C(l);

	pthread_mutex_lock(&c->lock);
	c->cb = cb;
	c->arg = arg;
	reraise_read(c);
	pthread_mutex_unlock(&c->lock);
	conn_kick(c);
}

static int closed_err(const struct xsk_conn *c)
{
	if (c->tcp_closed)
		return c->tcp_err ? c->tcp_err : -EPIPE;
	return -EPIPE;
}

/* lock held: may bytes be appended? Return: 0 or the error to return. */
static int send_ok(struct xsk_conn *c)
{
	int err;

	if (c->tcp_closed || c->dead)
		return closed_err(c);
	/* utcp refuses appends once closing or before a connection */
	err = utcp_send(c->tcp, 0, xiw_now_ns());
	return err == -ENOBUFS ? 0 : err;
}

static ssize_t op_send(struct xiw_llp *l, const struct iovec *iov, int n, bool more)
{
	struct xsk_conn *c = C(l);
	uint32_t put;
	int err;

	(void)more;	/* no Nagle: segments leave at once */
	pthread_mutex_lock(&c->lock);
	err = send_ok(c);
	if (err) {
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	put = xsk_sendq_copy(&c->sq, iov, n, send_space(c));
	if (!put) {
		space_gone(c);
		pthread_mutex_unlock(&c->lock);
		return -EAGAIN;
	}
	utcp_send(c->tcp, put, xiw_now_ns());	/* room was checked */
	conn_unlock(c);
	return put;
}

/*
 * Zero-copy: the payload pieces are referenced, not copied (seed 002).
 * The engine keeps the buffers until xiw_llp_zc_released(*id).
 */
static ssize_t op_send_zc(struct xiw_llp *l, const struct iovec *iov, int n,
			  uint32_t *id, bool *zc)
{
	struct xsk_conn *c = C(l);
	uint32_t put, room;
	int err;

	*zc = false;
	pthread_mutex_lock(&c->lock);
	err = send_ok(c);
	if (err) {
		pthread_mutex_unlock(&c->lock);
		return err;
	}
	room = utcp_send_space(c->tcp);
	put = room ? xsk_sendq_ref(&c->sq, iov, n, room, id) : 0;
	if (!put) {
		space_gone(c);
		pthread_mutex_unlock(&c->lock);
		return -EAGAIN;
	}
	*zc = true;
	utcp_send(c->tcp, put, xiw_now_ns());
	conn_unlock(c);
	return put;
}

/* XIW_QUICKACK=1: ACK at once when the engine drained the stream (ksock.c). */
static bool quickack_on(void)
{
	static int on = -1;
	int v = __atomic_load_n(&on, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *e = getenv("XIW_QUICKACK");
		const char *m = getenv("XIW_TX_COMPLETION");

		v = e && *e ? strcmp(e, "0") != 0 : (m && !strcmp(m, "ack"));
		__atomic_store_n(&on, v, __ATOMIC_RELAXED);
	}
	return v;
}

static ssize_t op_recv(struct xiw_llp *l, struct iovec *iov, int n)
{
	struct xsk_conn *c = C(l);
	uint32_t avail, got = 0;

	pthread_mutex_lock(&c->lock);
	avail = (uint32_t)(c->r_head - c->r_tail);
	if (!avail && !c->fin && !c->tcp_closed) {
		/* nothing here yet: take the port's frames in this thread
		 * rather than wait for the progress thread to wake up
		 * (rx_lock comes before c->lock) */
		pthread_mutex_unlock(&c->lock);
		xsk_port_rx_poll(c->port);
		pthread_mutex_lock(&c->lock);
		avail = (uint32_t)(c->r_head - c->r_tail);
	}
	if (!avail) {
		ssize_t r = -EAGAIN;

		if (c->fin) {
			c->eof_seen = true;
			r = 0;
		} else if (c->tcp_closed) {
			r = c->tcp_err ? c->tcp_err : 0;
		}
		pthread_mutex_unlock(&c->lock);
		return r;
	}
	for (int i = 0; i < n && got < avail; i++) {
		uint8_t *dst = iov[i].iov_base;
		uint32_t len = iov[i].iov_len < avail - got ?
			       (uint32_t)iov[i].iov_len : avail - got;

		for (uint32_t done = 0; done < len;) {
			uint32_t pos = (uint32_t)((c->r_tail + got) % c->rcap);
			uint32_t k = c->rcap - pos < len - done ? c->rcap - pos : len - done;

			memcpy(dst + done, c->rbuf + pos, k);
			done += k;
			got += k;
		}
	}
	c->r_tail += got;
	if (!c->tcp_closed) {
		uint64_t now = xiw_now_ns();

		utcp_recved(c->tcp, got, now);
		if (got == avail && quickack_on())
			utcp_ack_now(c->tcp, now);
	}
	conn_unlock(c);
	return got;
}

static void op_want_write(struct xiw_llp *l, bool on)
{
	struct xsk_conn *c = C(l);

	pthread_mutex_lock(&c->lock);
	c->want_write = on;
	if (on && send_space(c) && !c->connecting)
		c->ev |= XSK_EV_WRITABLE;
	pthread_mutex_unlock(&c->lock);
	conn_kick(c);
}

static void op_pause_read(struct xiw_llp *l, bool paused)
{
	struct xsk_conn *c = C(l);

	pthread_mutex_lock(&c->lock);
	c->paused = paused;
	reraise_read(c);
	pthread_mutex_unlock(&c->lock);
	conn_kick(c);
}

/* lock held: set app_read, keeping the port's count (xsk_port_rx_arm).
 * Return: true if it changed (call xsk_port_rx_arm after unlocking). */
static bool app_read_set(struct xsk_conn *c, bool on)
{
	if (c->app_read == on)
		return false;
	c->app_read = on;
	if (on)
		__atomic_add_fetch(&c->port->napp, 1, __ATOMIC_SEQ_CST);
	else
		__atomic_sub_fetch(&c->port->napp, 1, __ATOMIC_SEQ_CST);
	return true;
}

static void op_app_read(struct xiw_llp *l, bool on)
{
	struct xsk_conn *c = C(l);
	bool changed;

	pthread_mutex_lock(&c->lock);
	changed = app_read_set(c, on);
	reraise_read(c);
	pthread_mutex_unlock(&c->lock);
	if (changed)
		xsk_port_rx_arm(c->port);
	conn_kick(c);
}

static int op_shutdown(struct xiw_llp *l)
{
	struct xsk_conn *c = C(l);

	pthread_mutex_lock(&c->lock);
	if (!c->tcp_closed && !c->fin_queued && !c->fin_held) {
		uint64_t now = xiw_now_ns();

		c->fin_held = true;	/* no FIN while the peer is talking */
		c->fin_by = now + xiw_close_quiet_ns() * 4;
		fin_release(c, now);
	}
	conn_unlock(c);
	return 0;
}

static void op_abort(struct xiw_llp *l)
{
	struct xsk_conn *c = C(l);

	pthread_mutex_lock(&c->lock);
	c->dead = true;
	c->ev = 0;
	if (!c->tcp_closed)
		utcp_abort(c->tcp, xiw_now_ns());
	conn_unlock(c);
}

/* XIW_LOG=debug: utcp's counters of a connection the owner closes. */
static void conn_log_stats(struct xsk_conn *c)
{
	struct utcp_info i;

	utcp_get_info(c->tcp, &i);
	xiw_log(XIW_LOG_DEBUG, "xsk: conn %u %s: segs out %llu in %llu, retrans %llu (%llu bytes), rto %llu, fast recoveries %llu, tail loss probes %llu, lost retransmissions %llu, dupacks in %llu, ooo in %llu, tx without frame %llu, zero-copy sends %llu bytes, srtt %llu us, cwnd %u, sends held by rwnd %llu / cwnd %llu",
		c->id, utcp_state_name(i.state), (unsigned long long)i.segs_out,
		(unsigned long long)i.segs_in, (unsigned long long)i.segs_retrans,
		(unsigned long long)i.bytes_retrans, (unsigned long long)i.rto_fired,
		(unsigned long long)i.fast_recoveries,
		(unsigned long long)i.tlp_sent, (unsigned long long)i.lost_rtx,
		(unsigned long long)i.dupacks_in, (unsigned long long)i.ooo_segs,
		(unsigned long long)c->tx_lost,
		(unsigned long long)c->sq.ref_bytes,
		(unsigned long long)(i.srtt_ns / 1000), i.cwnd,
		(unsigned long long)i.out_rwnd_limited,
		(unsigned long long)i.out_cwnd_limited);
}

/* Progress thread (or no thread): the owner lets go. */
static void conn_detach(void *arg)
{
	struct xsk_conn *c = arg;
	uint64_t now = xiw_now_ns();

	pthread_mutex_lock(&c->lock);
	conn_log_stats(c);
	/* nobody reads it from an app thread any more */
	if (app_read_set(c, false))
		xsk_port_rx_arm(c->port);
	c->cb = NULL;
	c->arg = NULL;
	c->detached = true;
	c->released = true;
	c->dead = true;
	c->ev &= XSK_EV_ACCEPT;
	if (c->resolving) {
		c->resolving = false;
		xiw_progress_timer_cancel(&c->resolve_tmr);
		xsk_conn_put(c);	/* the timer's reference */
	}
	c->orphan_at = now + ORPHAN_NS;
	if (!c->tcp_closed) {
		enum utcp_state st;
		struct utcp_info info;

		utcp_get_info(c->tcp, &info);
		st = info.state;
		/* no connection yet: RST (as close(2) does) */
		if (st == UTCP_SYN_SENT || st == UTCP_CLOSED ||
		    st == UTCP_LISTEN) {
			utcp_abort(c->tcp, now);
		} else {
			/* unread bytes are dropped, not answered with RST */
			if (c->r_head != c->r_tail)
				utcp_recved(c->tcp, (uint32_t)(c->r_head - c->r_tail), now);
			c->r_tail = c->r_head;
			if (!c->fin_queued && !c->fin_held) {
				c->fin_held = true;
				c->fin_by = now + xiw_close_quiet_ns() * 4;
				fin_release(c, now);
			}
		}
	}
	conn_unlock(c);
}

static void op_close(struct xiw_llp *l)
{
	struct xsk_conn *c = C(l);

	if (xiw_progress_sync(conn_detach, c))
		conn_detach(c);		/* no progress thread: nothing runs */
	xsk_conn_put(c);		/* the owner's reference */
}

static int op_poll_fd(struct xiw_llp *l)
{
	return C(l)->poll_fd;
}

static uint32_t op_mss(struct xiw_llp *l)
{
	struct xsk_conn *c = C(l);
	struct utcp_info info;

	pthread_mutex_lock(&c->lock);
	utcp_get_info(c->tcp, &info);
	pthread_mutex_unlock(&c->lock);
	return info.smss;
}

static void sin_fill(struct sockaddr_storage *ss, uint32_t addr, uint16_t port)
{
	struct sockaddr_in *s = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	s->sin_family = AF_INET;
	s->sin_addr.s_addr = addr;
	s->sin_port = htons(port);
}

static void op_addrs(struct xiw_llp *l, struct sockaddr_storage *local,
		     struct sockaddr_storage *peer)
{
	struct xsk_conn *c = C(l);

	if (local)
		sin_fill(local, c->laddr, c->lport);
	if (peer)
		sin_fill(peer, c->raddr, c->rport);
}

static int op_ack_state(struct xiw_llp *l, uint32_t *una, uint32_t *outq)
{
	struct xsk_conn *c = C(l);

	pthread_mutex_lock(&c->lock);
	*una = (uint32_t)c->sq.acked;
	*outq = (uint32_t)(c->sq.queued - c->sq.acked);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* utcp reports every cumulative ACK itself: always "traced" (seed 000) */
static int op_ack_trace(struct xiw_llp *l, uint64_t cookie)
{
	(void)l;
	(void)cookie;
	return 0;
}

/* One xiw_txack_wake() once the acknowledged count reaches @target. */
static int op_ack_arm(struct xiw_llp *l, uint32_t target)
{
	struct xsk_conn *c = C(l);

	pthread_mutex_lock(&c->lock);
	c->ack_target = target;
	c->ack_armed = (int32_t)((uint32_t)c->sq.acked - target) < 0;
	pthread_mutex_unlock(&c->lock);
	return 0;	/* reached already: the caller looks again after arming */
}

/* 1 while the watermark of op_ack_arm has not fired (cb_acked). */
static int op_ack_armed(struct xiw_llp *l)
{
	struct xsk_conn *c = C(l);
	int armed;

	pthread_mutex_lock(&c->lock);
	armed = c->ack_armed;
	pthread_mutex_unlock(&c->lock);
	return armed;
}

/* XIW_XSK_ZC=0 turns zero-copy sends off (copy everything into the ring). */
static bool op_zc_usable(struct xiw_llp *l)
{
	static int on = -1;
	int v = __atomic_load_n(&on, __ATOMIC_RELAXED);

	(void)l;
	if (v < 0) {
		const char *e = getenv("XIW_XSK_ZC");

		v = !(e && !strcmp(e, "0"));
		__atomic_store_n(&on, v, __ATOMIC_RELAXED);
	}
	return v;
}

static bool op_zc_released(struct xiw_llp *l, uint32_t id)
{
	struct xsk_conn *c = C(l);
	bool ok;

	pthread_mutex_lock(&c->lock);
	ok = xsk_sendq_released(&c->sq, id);
	pthread_mutex_unlock(&c->lock);
	return ok;
}

static bool op_zc_outstanding(struct xiw_llp *l)
{
	struct xsk_conn *c = C(l);
	bool any;

	pthread_mutex_lock(&c->lock);
	any = xsk_sendq_zc_outstanding(&c->sq);
	pthread_mutex_unlock(&c->lock);
	return any;
}

/*
 * Failing with referenced buffers: RST, so nothing is ever framed from
 * them again; copy mode copies each frame in sendto(): wait until the
 * kernel took every descriptor (another thread may be the one kicking),
 * then every reference can go at once.
 */
static int op_zc_quiesce(struct xiw_llp *l, unsigned int max_ms)
{
	struct xsk_conn *c = C(l);

	pthread_mutex_lock(&c->lock);
	if (!xsk_sendq_zc_outstanding(&c->sq)) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	c->dead = true;
	if (!c->tcp_closed)
		utcp_abort(c->tcp, xiw_now_ns());
	xsk_sendq_release_all(&c->sq);
	conn_unlock(c);
	xsk_port_flush_wait(c->port, max_ms ? max_ms : 1000);
	return 0;
}

const struct xiw_llp_ops xiw_xsk_ops = {
	.name = "xsk",
	.ack_events = true,
	.set_owner = op_set_owner,
	.send = op_send,
	.recv = op_recv,
	.want_write = op_want_write,
	.pause_read = op_pause_read,
	.app_read = op_app_read,
	.shutdown = op_shutdown,
	.abort = op_abort,
	.close = op_close,
	.poll_fd = op_poll_fd,
	.mss = op_mss,
	.addrs = op_addrs,
	.ack_state = op_ack_state,
	.ack_trace = op_ack_trace,
	.ack_arm = op_ack_arm,
	.ack_armed = op_ack_armed,
	.zc_usable = op_zc_usable,
	.send_zc = op_send_zc,
	.zc_released = op_zc_released,
	.zc_outstanding = op_zc_outstanding,
	.zc_quiesce = op_zc_quiesce,
	.fpdu_stream = xsk_fpdu_stream,
	.fpdu_meta = xsk_fpdu_meta,
	.fpdu_done = xsk_fpdu_done,
};

/* ---------------------------------------------------------- creation --- */

static uint32_t random_iss(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)xiw_now_ns() * 2654435761u;
	return v;
}

struct xsk_conn *xsk_conn_new(struct xsk_port *p, uint32_t laddr, uint16_t lport,
			      uint32_t raddr, uint16_t rport, bool passive)
{
	struct xsk_conn *c = calloc(1, sizeof(*c));
	struct utcp_cfg cfg = { 0 };
	uint32_t sring;

	(void)passive;
	if (!c)
		return NULL;
	c->base.ops = &xiw_xsk_ops;
	c->port = p;
	c->port_fd = -1;
	c->refs = 1;		/* the port table's */
	pthread_mutex_init(&c->lock, NULL);
	c->laddr = laddr;
	c->raddr = raddr;
	c->lport = lport;
	c->rport = rport;
	xsk_flow_key4(&c->key, raddr, rport, laddr, lport);
	memcpy(c->eth + 6, p->mac, 6);
	c->eth[12] = 0x08;
	c->eth[13] = 0x00;
	c->rcap = env_uint("XIW_XSK_RCVBUF", RCV_RING_DEF, 64 * 1024, 64u << 20);
	sring = env_uint("XIW_XSK_SNDBUF", SND_RING_DEF, 64 * 1024, 64u << 20);
	c->rbuf = malloc(c->rcap);
	c->poll_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	cfg.laddr = ntohl(laddr);
	cfg.lport = lport;
	cfg.raddr = ntohl(raddr);
	cfg.rport = rport;
	cfg.iss = random_iss();
	cfg.iss_set = true;
	cfg.mss = (uint16_t)(p->mtu > 40 + 64 ? p->mtu - 40 : 536);
	cfg.rcv_buf = c->rcap;
	cfg.output_sums_payload = true;	/* cb_output sums while it copies */
	cfg.snd_buf = 2 * sring;	/* zero-copy bytes need no ring room */
	cfg.max_retries = env_uint("XIW_XSK_RETRIES", 15, 1, 100);
	cfg.rto_min_ns = env_uint("XIW_XSK_RTO_MIN_MS", 200, 1, 1000) * 1000000ull;
	cfg.syn_retries = env_uint("XIW_XSK_SYN_RETRIES", 6, 1, 100);
	if (!xsk_sendq_init(&c->sq, sring, SPANS) && c->rbuf && c->poll_fd >= 0)
		c->tcp = utcp_new(&cfg, &conn_utcp_ops, c);
	if (!c->tcp) {
		c->refs = 1;
		conn_free(c);
		return NULL;
	}
	return c;
}
