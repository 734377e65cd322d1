// SPDX-License-Identifier: MIT
/*
 * A closed listener's port stays listening while a connection it accepted
 * is open (at most a few seconds), so the same process can listen on it
 * again without refusing anyone in between.
 *
 * Why. perftest with -R (and other rdma_cm programs that reconnect)
 * destroys its listening cm_id once the first connection is accepted,
 * exchanges its setup messages over that connection, and only then
 * listens again on the same port for the data connection. Its client
 * connects again right after the exchange. Whoever's TCP stack answers
 * that SYN between the two listens sends RST, and a client that does not
 * retry a refused connect (rdma-core's perftest on Linux siw: "Connection
 * refused", then a crash) fails. Our own clients retry
 * (XIW_CM_REFUSED_RETRY_MS), siw's do not. In ack mode
 * (XIW_TX_COMPLETION=ack) the window is the peer's delayed ACK of the
 * exchange's last message (~40 ms: perftest waits for that send's
 * completion before it listens again); in copy mode it is ~0.5 ms and a
 * loaded machine can stretch it.
 *
 * What. xiw_ksock_listener_close() hands the listening socket to
 * xiw_ksock_relisten_keep(). While a connection it accepted is still open
 * (perftest's handshake connection), the socket stays listening instead of
 * closing: it stops accepting (connections queue in the kernel's backlog),
 * and a listen on exactly the same address takes it back, backlog
 * included; a listen on the same port at another address closes it first,
 * so that bind succeeds. It closes once none of the connections it
 * accepted is open any more (checked every RELISTEN_TICK_MS), and at the
 * latest after XIW_LISTEN_LINGER_MS (default 5000; 0: never kept). A
 * listener with no open connection closes at once, as before: a connect to
 * it is refused. If nobody listens again, the kernel resets the
 * connections still queued when the socket closes: their clients see a
 * reset instead of a refusal, later.
 *
 * All state lives on the progress thread (callers use xiw_progress_sync).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "xiwarp/xiwarp.h"
#include "xiw_conn.h"
#include "xiw_progress.h"
#include "ksock.h"

#define LISTEN_LINGER_MS_DEFAULT 5000ul
#define RELISTEN_TICK_MS 20u	/* how often a kept socket checks its connections */

struct relisten_rec {
	struct xiw_ptimer timer;
	struct sockaddr_storage addr;	/* what the socket is bound to */
	uint64_t until_ns;		/* closed then at the latest */
	int fd;
	struct relisten_rec *next;
};

static struct relisten_rec *kept;	/* progress thread only */

/* XIW_LISTEN_LINGER_MS in ns, read once. */
static uint64_t linger_ns(void)
{
	static int64_t ns = -1;

	return xiw_ksock_env_ms_ns(&ns, "XIW_LISTEN_LINGER_MS",
				   LISTEN_LINGER_MS_DEFAULT);
}

static uint16_t sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	return 0;
}

/* Unlink @r from the list; returns its fd (not closed) and frees @r. */
static int rec_unlink(struct relisten_rec *r)
{
	struct relisten_rec **pp;
	int fd = r->fd;

	for (pp = &kept; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	xiw_progress_timer_cancel(&r->timer);
	free(r);
	return fd;
}

/* Close the kept socket once its connections are gone or time is up. */
static void rec_tick(void *arg)
{
	struct relisten_rec *r = arg;

	if (xiw_now_ns() < r->until_ns &&
	    xiw_ksock_live_on_port(sa_port((struct sockaddr *)&r->addr))) {
		xiw_progress_timer_arm(&r->timer, RELISTEN_TICK_MS, rec_tick, r);
		return;
	}
	close(rec_unlink(r));
}

/**
 * xiw_ksock_relisten_keep() - keep the closed listener @fd (bound to a
 * fixed port) listening while a connection it accepted is open, at most
 * XIW_LISTEN_LINGER_MS (0: never). @fd must already be out of the
 * progress thread's epoll set.
 * Progress thread only; elsewhere (no progress thread) nothing is kept.
 * Return: true if @fd was kept (the caller must not close it), false if
 * the caller closes it as before.
 */
bool xiw_ksock_relisten_keep(int fd)
{
	struct relisten_rec *r;
	socklen_t len = sizeof(r->addr);
	uint64_t ns = linger_ns();

	if (!ns || !xiw_progress_is_self())
		return false;
	r = calloc(1, sizeof(*r));
	if (!r)
		return false;
	if (getsockname(fd, (struct sockaddr *)&r->addr, &len) ||
	    !sa_port((struct sockaddr *)&r->addr) ||
	    !xiw_ksock_live_on_port(sa_port((struct sockaddr *)&r->addr))) {
		free(r);
		return false;
	}
	r->fd = fd;
	r->until_ns = xiw_now_ns() + ns;
	r->next = kept;
	kept = r;
	xiw_progress_timer_arm(&r->timer, RELISTEN_TICK_MS, rec_tick, r);
	return true;
}

struct take_args {
	const struct sockaddr *addr;
	int fd;
};

static void take_on_progress(void *arg)
{
	struct take_args *t = arg;
	struct relisten_rec *r = kept, *next;

	for (; r; r = next) {
		next = r->next;
		if (sa_port((struct sockaddr *)&r->addr) != sa_port(t->addr))
			continue;
		if (t->fd < 0 && xiw_ksock_sa_same((struct sockaddr *)&r->addr, t->addr)) {
			t->fd = rec_unlink(r);
			continue;
		}
		/* same port, another address: it would make bind() fail */
		close(rec_unlink(r));
	}
}

/**
 * xiw_ksock_relisten_take() - the kept listening socket bound to exactly
 * @addr (a fixed port), if there is one; kept sockets on @addr's port at
 * other addresses are closed so @addr can be bound. Any thread.
 * Return: the listening fd (the caller owns it), or -1.
 */
int xiw_ksock_relisten_take(const struct sockaddr *addr)
{
	struct take_args t = { addr, -1 };

	if (!linger_ns() || !sa_port(addr))
		return -1;
	if (xiw_progress_sync(take_on_progress, &t))
		return -1;
	if (t.fd >= 0)
		xiw_log(XIW_LOG_DEBUG, "ksock: listening again on a kept socket (fd %d)",
			t.fd);
	return t.fd;
}
