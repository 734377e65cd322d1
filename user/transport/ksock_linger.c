// SPDX-License-Identifier: MIT
/*
 * Closing a stream gently: no RST, and no FIN while the peer may still be
 * finishing the message it just sent.
 *
 * Why. A program that destroys a QP without rdma_disconnect(), or exits
 * with connections open, used to reset (or close) the stream at once.
 * perftest with -R does both with its rdma_cm handshake connection, right
 * after the last message of its closing exchange arrived, so our FIN
 * reached the peer a few hundred microseconds after that message left it.
 * Linux siw fails a SEND whose bytes already went out when the peer's FIN
 * arrives before its send thread has finished the WQE (siw_qp_tx.c: "Try
 * stopping sending after a full DDP segment if the connection goes down",
 * then IBV_WC_LOC_QP_OP_ERR), and perftest's server then reports "Failed
 * to close connection". Measured under TCG on a loaded host: the siw send
 * thread was still inside that WQE 2.4 ms after its bytes left.
 *
 * The same FIN, right after the MPA reply, can reach siw while it is still
 * accepting (it completes the accept only once it has read our RTR, and
 * an RTR that arrives during its socket hand-over waits for our next FPDU:
 * see rtr_nudge in xiw_cm.c); a close event then hits iw_cm in a state
 * where it BUGs (iwcm.c:969 in Linux 6.1). No RFC rule asks for this
 * wait (either side may close the LLP stream at any time); it is a
 * bounded courtesy to peers with these races.
 *
 * What. No FIN, by shutdown or by close (not an abort), while the peer
 * sent something less than XIW_CLOSE_QUIET_MS (default 50; 0: off) ago:
 * it waits until the peer has been quiet that long, sent its own FIN, or
 * 4 × that time passed. A closed socket waits on the progress thread,
 * reading and dropping; a shut-down one keeps being read by its owner. A library destructor waits the same way, bounded, at exit, for
 * connections still open and for closes still lingering. Bytes nobody
 * read are always dropped before close(): otherwise the kernel answers
 * with RST (RFC 2525 §2.17), and a RST makes the peer lose what it has
 * not yet read.
 *
 * A closed socket whose own bytes still wait in its send queue lingers
 * until they are acknowledged too (then the rules above; at most
 * XIW_CLOSE_DRAIN_MS, default 2000): the peer answers what it has yet
 * to receive (rsockets credits, SinkAvails as it reads our last
 * message), and once the socket is closed each such answer is data
 * after close, which Linux answers with RST (TCPAbortOnData): the peer
 * then loses our last bytes, or sees our FIN with a send of its own
 * outstanding. On a slow link (a 40 Mbit/s token bucket, rstream's last
 * 1 MB) our bytes took longer than 4 × the quiet time to leave.
 */
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include "xiw_conn.h"
#include "xiw_progress.h"
#include "ksock.h"

#define CLOSE_QUIET_MS_DEFAULT	50u
#define CLOSE_WAIT_MAX_FACTOR	4u	/* a whole linger: at most 4 × quiet */
#define LINGER_TICK_MS		5u
#define DRAIN_MAX		(4u << 20)
#define CLOSE_DRAIN_MS_DEFAULT	2000u

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xiw_ksock_live live_head = { &live_head, &live_head, 0, false, false, 0 };

struct linger_rec {
	struct xiw_ptimer timer;
	struct xiw_ksock_live live;
	int fd;
	uint64_t until_ns, hard_ns;
};

uint64_t xiw_ksock_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void xiw_ksock_live_add(struct xiw_ksock_live *v)
{
	pthread_mutex_lock(&live_lock);
	v->next = live_head.next;
	v->prev = &live_head;
	live_head.next->prev = v;
	live_head.next = v;
	pthread_mutex_unlock(&live_lock);
}

void xiw_ksock_live_del(struct xiw_ksock_live *v)
{
	pthread_mutex_lock(&live_lock);
	if (v->next) {
		v->prev->next = v->next;
		v->next->prev = v->prev;
		v->next = v->prev = NULL;
	}
	pthread_mutex_unlock(&live_lock);
}

bool xiw_ksock_live_on_port(uint16_t port)
{
	bool found = false;

	pthread_mutex_lock(&live_lock);
	for (struct xiw_ksock_live *v = live_head.next; v != &live_head && !found;
	     v = v->next)
		found = v->lport == port &&
			!__atomic_load_n(&v->ended, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&live_lock);
	return found;
}

/** xiw_ksock_env_ms_ns() - see ksock.h. */
uint64_t xiw_ksock_env_ms_ns(int64_t *ns, const char *name, unsigned long def)
{
	if (*ns < 0) {
		const char *s = getenv(name);
		unsigned long ms = s && *s ? strtoul(s, NULL, 10) : def;

		*ns = (int64_t)ms * 1000000;
	}
	return (uint64_t)*ns;
}

/** xiw_close_quiet_ns() - see llp.h. */
uint64_t xiw_close_quiet_ns(void)
{
	static int64_t ns = -1;

	return xiw_ksock_env_ms_ns(&ns, "XIW_CLOSE_QUIET_MS", CLOSE_QUIET_MS_DEFAULT);
}

/* XIW_CLOSE_DRAIN_MS: how long a close waits for our bytes' ACKs, in ns. */
static uint64_t close_drain_ns(void)
{
	static int64_t ns = -1;

	return xiw_ksock_env_ms_ns(&ns, "XIW_CLOSE_DRAIN_MS", CLOSE_DRAIN_MS_DEFAULT);
}

/* Bytes of ours in @fd's send queue not yet acknowledged (SIOCOUTQ). */
static bool unacked(int fd)
{
	int q = 0;

	return !ioctl(fd, SIOCOUTQ, &q) && q > 0;
}

int xiw_ksock_drain(int fd)
{
	char sink[8192];	/* contents dropped */
	size_t total = 0;
	ssize_t n;

	while (total < DRAIN_MAX &&
	       (n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		total += (size_t)n;
	if (total >= DRAIN_MAX)
		return (int)total;
	if (n == 0)
		return -EPIPE;		/* the peer's FIN */
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		return -errno;
	return (int)total;
}

static bool quiet_since(uint64_t now, uint64_t last_rx_ns)
{
	return !last_rx_ns || now - last_rx_ns >= xiw_close_quiet_ns();
}

static void linger_finish(struct linger_rec *r)
{
	xiw_ksock_live_del(&r->live);
	xiw_ksock_drain(r->fd);
	close(r->fd);
	free(r);
}

/* Progress thread, every LINGER_TICK_MS while a close lingers. */
static void linger_tick(void *arg)
{
	struct linger_rec *r = arg;
	int n = xiw_ksock_drain(r->fd);
	uint64_t now = xiw_ksock_coarse_ns();
	bool queued = unacked(r->fd);

	if (n > 0)
		__atomic_store_n(&r->live.last_rx_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&r->live.unacked, queued, __ATOMIC_RELAXED);
	if (queued)	/* the quiet rules start at the last ACK */
		r->until_ns = now + xiw_close_quiet_ns() * CLOSE_WAIT_MAX_FACTOR;
	if (n < 0 || now >= r->hard_ns ||
	    (!queued && (quiet_since(now, r->live.last_rx_ns) || now >= r->until_ns))) {
		linger_finish(r);
		return;
	}
	xiw_progress_timer_arm(&r->timer, LINGER_TICK_MS, linger_tick, r);
}

bool xiw_ksock_fin_hold(uint64_t last_rx_ns, bool eof, uint64_t *until_ns)
{
	uint64_t now = xiw_ksock_coarse_ns();

	if (eof || quiet_since(now, last_rx_ns))
		return false;
	if (until_ns)
		*until_ns = now + xiw_close_quiet_ns() * CLOSE_WAIT_MAX_FACTOR;
	return true;
}

bool xiw_ksock_linger_close(int fd, uint64_t last_rx_ns, bool eof)
{
	uint64_t now = xiw_ksock_coarse_ns();
	struct linger_rec *r;
	bool queued;

	if (eof || !xiw_progress_is_self())
		return false;
	queued = unacked(fd);
	if (!queued && quiet_since(now, last_rx_ns))
		return false;
	r = calloc(1, sizeof(*r));
	if (!r)
		return false;
	r->fd = fd;
	r->live.last_rx_ns = last_rx_ns;
	r->live.unacked = queued;
	r->until_ns = now + xiw_close_quiet_ns() * CLOSE_WAIT_MAX_FACTOR;
	r->hard_ns = now + close_drain_ns();
	xiw_ksock_live_add(&r->live);
	xiw_progress_timer_arm(&r->timer, LINGER_TICK_MS, linger_tick, r);
	return true;
}

/*
 * @quiet: no open or lingering connection heard from its peer too
 * recently; @acks: no lingering close still has bytes of ours
 * unacknowledged.
 */
static void live_state(uint64_t now, bool *quiet, bool *acks)
{
	*quiet = *acks = true;
	pthread_mutex_lock(&live_lock);
	for (struct xiw_ksock_live *v = live_head.next; v != &live_head; v = v->next) {
		uint64_t rx = __atomic_load_n(&v->last_rx_ns, __ATOMIC_RELAXED);

		if (__atomic_load_n(&v->unacked, __ATOMIC_RELAXED))
			*acks = false;
		if (!__atomic_load_n(&v->ended, __ATOMIC_RELAXED) &&
		    !quiet_since(now, rx))
			*quiet = false;
	}
	pthread_mutex_unlock(&live_lock);
}

/*
 * At exit: the progress thread runs until the process is gone, so it
 * keeps reading open connections and ticking lingering closes while this
 * waits; a FIN from the peer ends a connection's wait.
 */
__attribute__((destructor)) static void ksock_exit_linger(void)
{
	uint64_t t0 = xiw_ksock_coarse_ns(), now;
	uint64_t end = t0 + xiw_close_quiet_ns() * CLOSE_WAIT_MAX_FACTOR;
	uint64_t hard = t0 + close_drain_ns();
	struct timespec nap = { 0, 1000000 };
	bool quiet, acks;

	for (;;) {
		now = xiw_ksock_coarse_ns();
		live_state(now, &quiet, &acks);
		if ((quiet || now >= end) && (acks || now >= hard))
			return;
		nanosleep(&nap, NULL);
	}
}
