// SPDX-License-Identifier: MIT
/*
 * A closed listener's port stays listening for a moment, so the same
 * process can listen on it again without refusing anyone in between.
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
 * xiw_ksock_relisten_keep() instead of closing it: it stops accepting
 * (connections queue in the kernel's backlog) and is closed after
 * XIW_LISTEN_LINGER_MS (default 5000; 0: off). A listen on exactly the
 * same address in that time takes the socket back (backlog included);
 * a listen on the same port at another address closes it first, so the
 * bind can succeed. If nobody listens again, the kernel resets the
 * connections still queued when the socket closes: the client sees a
 * reset instead of a refusal, up to XIW_LISTEN_LINGER_MS later.
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

#define LISTEN_LINGER_MS_DEFAULT 5000u

struct relisten_rec {
	struct xiw_ptimer timer;
	struct sockaddr_storage addr;	/* what the socket is bound to */
	int fd;
	struct relisten_rec *next;
};

static struct relisten_rec *kept;	/* progress thread only */

/* XIW_LISTEN_LINGER_MS, read once. */
static unsigned int linger_ms(void)
{
	static int ms = -1;

	if (ms < 0) {
		const char *v = getenv("XIW_LISTEN_LINGER_MS");

		ms = v && *v ? atoi(v) : (int)LISTEN_LINGER_MS_DEFAULT;
		if (ms < 0)
			ms = 0;
	}
	return (unsigned int)ms;
}

static uint16_t sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	return 0;
}

/* Same family, address and port (scope id too for IPv6). */
static bool sa_same(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       x->sin6_scope_id == y->sin6_scope_id &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
	return false;
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

static void rec_expired(void *arg)
{
	struct relisten_rec *r = arg;

	close(rec_unlink(r));
}

/**
 * xiw_ksock_relisten_keep() - keep the closed listener @fd (bound to a
 * fixed port) listening for XIW_LISTEN_LINGER_MS, unless that is 0.
 * @fd must already be out of the progress thread's epoll set.
 * Progress thread only; elsewhere (no progress thread) nothing is kept.
 * Return: true if @fd was kept (the caller must not close it), false if
 * the caller closes it as before.
 */
bool xiw_ksock_relisten_keep(int fd)
{
	struct relisten_rec *r;
	socklen_t len = sizeof(r->addr);
	unsigned int ms = linger_ms();

	if (!ms || !xiw_progress_is_self())
		return false;
	r = calloc(1, sizeof(*r));
	if (!r)
		return false;
	if (getsockname(fd, (struct sockaddr *)&r->addr, &len) ||
	    !sa_port((struct sockaddr *)&r->addr)) {
		free(r);
		return false;
	}
	r->fd = fd;
	r->next = kept;
	kept = r;
	xiw_progress_timer_arm(&r->timer, ms, rec_expired, r);
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
		if (t->fd < 0 && sa_same((struct sockaddr *)&r->addr, t->addr)) {
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

	if (!linger_ms() || !sa_port(addr))
		return -1;
	if (xiw_progress_sync(take_on_progress, &t))
		return -1;
	if (t.fd >= 0)
		xiw_log(XIW_LOG_DEBUG, "ksock: listening again on a kept socket (fd %d)",
			t.fd);
	return t.fd;
}
