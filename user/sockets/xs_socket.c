// SPDX-License-Identifier: MIT
/*
 * libxiwsock.so: socket, listen, connect, accept, accept4 - where a TCP
 * socket becomes an rsocket or stays a kernel socket (see xs_int.h).
 *
 * Active side: connect() tries an rsocket first (bounded by
 * XIW_SOCK_CONNECT_MS, even for a non-blocking socket, so the decision is
 * made before the application can register the fd anywhere); a peer that
 * does not answer the MPA request (a plain TCP server) makes us connect
 * the kernel socket instead. The plain server sees one extra connection
 * that sent it an MPA request frame.
 * Passive side: accept() returns kernel connections that do not start
 * with an MPA request untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>
#include "xiwarp/wire/mpa.h"
#include "xrs_priv.h"
#include "xs_int.h"

static uint16_t xs_sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

bool xs_is_rdma(const struct xs_sock *s)
{
	return s->kind == XS_RS || s->kind == XS_PENDING || s->kind == XS_DEAD;
}

/* ---------------------------------------------------------- socket --- */

int socket(int domain, int type, int protocol)
{
	int fd, base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);

	xs_need();
	fd = xs_real.socket(domain, type, protocol);
	if (fd < 0 || xs_inside || xs_kn.mode == XS_MODE_TCP)
		return fd;
	if ((domain == AF_INET || domain == AF_INET6) && base == SOCK_STREAM &&
	    (!protocol || protocol == IPPROTO_TCP))
		xs_new(XS_CAND, fd, domain, (type & SOCK_NONBLOCK) ? O_NONBLOCK : 0);
	return fd;
}

int listen(int fd, int backlog)
{
	struct xs_sock *s;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int ret;

	xs_need();
	ret = xs_real.listen(fd, backlog);
	s = xs_get(fd);
	if (ret || !s || s->kind != XS_CAND)
		return ret;
	if (!xs_real.getsockname(fd, (struct sockaddr *)&ss, &len) &&
	    xs_port_ok(xs_sa_port((struct sockaddr *)&ss)))
		s->kind = XS_LISTEN;
	return ret;
}

/* ------------------------------------------------------------ accept --- */

static int64_t xs_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Does the connection start with an MPA request? Peek (never consume) for
 * up to XIW_SOCK_ACCEPT_WAIT_MS: our connect() sends it right after the
 * TCP handshake; a plain client that waits for the server to speak first
 * costs that long once.
 */
static bool xs_is_mpa(int fd)
{
	char buf[XIW_MPA_KEY_LEN];
	int64_t end = xs_now_ms() + xs_kn.accept_wait_ms, left;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	for (;;) {
		n = xs_real.recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
		if (n == (ssize_t)sizeof(buf))
			return !memcmp(buf, XIW_MPA_KEY_REQ, sizeof(buf));
		if (n > 0 && memcmp(buf, XIW_MPA_KEY_REQ, (size_t)n))
			return false;
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			return false;
		left = end - xs_now_ms();
		if (left <= 0 || xs_real.poll(&p, 1, (int)left) <= 0)
			return false;
		if (n > 0)	/* a partial key: give the rest a moment */
			xs_real.poll(NULL, 0, 1);
	}
}

/* An accepted MPA connection: the application gets a socketpair end. */
static int xs_pending(int tfd, int flags, int family)
{
	struct xs_sock *s;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		return -1;
	if (!(flags & SOCK_CLOEXEC))
		xs_real.fcntl(sv[0], F_SETFD, 0);
	s = xs_new(XS_PENDING, sv[0], family,
		   (flags & SOCK_NONBLOCK) ? O_NONBLOCK : 0);
	if (!s) {
		xs_real.close(sv[0]);
		xs_real.close(sv[1]);
		errno = ENOMEM;
		return -1;
	}
	s->tfd = tfd;
	s->bfd = sv[1];
	return sv[0];
}

int accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	struct xs_sock *s;
	int nfd, afd, e;

	xs_need();
	s = xs_get(fd);
	nfd = xs_real.accept4(fd, addr, alen, flags);
	if (nfd < 0 || !s || s->kind != XS_LISTEN || xs_inside)
		return nfd;
	if (!xs_is_mpa(nfd)) {
		xs_log("fd %d: accepted a plain TCP connection", nfd);
		return nfd;
	}
	afd = xs_pending(nfd, flags, s->family);
	if (afd < 0) {
		e = errno;
		xs_real.close(nfd);
		errno = e;
		return -1;
	}
	xs_log("fd %d: accepted an RDMA connection (tcp fd %d)", afd, nfd);
	return afd;
}

int accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
	return accept4(fd, addr, alen, 0);
}

/**
 * xs_attach() - the rsocket fd of @s, attaching an accepted connection to
 * the engine first (in this process: the first use after a fork).
 * Return: the fd for the r*() calls, or -1 with errno.
 */
int xs_attach(struct xs_sock *s)
{
	int ret;

	if (s->kind == XS_RS)
		return s->canon;
	if (s->kind == XS_DEAD || xs_engine_gone) {
		errno = EIO;	/* the parent's engine is not in this process */
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	if (s->kind == XS_PENDING) {
		xs_inside++;
		xs_engine_used = true;
		ret = xrs_p_adopt(s->tfd, s->canon, s->bfd);
		xs_inside--;
		s->tfd = s->bfd = -1;
		if (ret) {
			s->kind = XS_DEAD;
			pthread_mutex_unlock(&s->lock);
			xs_log("fd %d: attaching the accepted connection failed: %s",
			       s->canon, strerror(errno));
			errno = ECONNRESET;
			return -1;
		}
		if (s->flags & O_NONBLOCK)
			rfcntl(s->canon, F_SETFL, O_NONBLOCK);
		s->kind = XS_RS;
	}
	pthread_mutex_unlock(&s->lock);
	return s->kind == XS_RS ? s->canon : (errno = EIO, -1);
}

/* ----------------------------------------------------------- connect --- */

static void xs_replay_opts(struct xs_sock *s, int rfd)
{
	for (int i = 0; i < s->nopts; i++)
		rsetsockopt(rfd, s->opts[i].level, s->opts[i].name,
			    s->opts[i].val, s->opts[i].len);
}

/* An rsocket connected to @addr within XIW_SOCK_CONNECT_MS, or -1. */
static int xs_rdma_connect(struct xs_sock *s, const struct sockaddr *addr,
			   socklen_t len)
{
	struct pollfd p;
	socklen_t elen = sizeof(int);
	int rfd, err = 0, n;

	xs_engine_used = true;
	rfd = rsocket(s->family, SOCK_STREAM, 0);
	if (rfd < 0)
		return -1;
	xs_replay_opts(s, rfd);
	rfcntl(rfd, F_SETFL, O_NONBLOCK);
	if (rconnect(rfd, addr, len) && errno != EINPROGRESS)
		goto fail;
	p.fd = rfd;
	p.events = POLLOUT;
	n = rpoll(&p, 1, xs_kn.connect_ms);
	if (n <= 0) {
		errno = n ? errno : ETIMEDOUT;
		goto fail;
	}
	if (rgetsockopt(rfd, SOL_SOCKET, SO_ERROR, &err, &elen) || err) {
		errno = err ? err : ECONNREFUSED;
		goto fail;
	}
	rfcntl(rfd, F_SETFL, s->flags & O_NONBLOCK);
	xrs_p_pollable(rfd);
	return rfd;
fail:
	err = errno;
	rclose(rfd);
	errno = err;
	return -1;
}

/* The rsocket takes over the application's fd number. */
static int xs_adopt_fd(struct xs_sock *s, int fd, int rfd)
{
	int cloexec = xs_real.fcntl(fd, F_GETFD);

	if (xs_real.dup2(rfd, fd) < 0)
		return -1;
	if (cloexec > 0 && (cloexec & FD_CLOEXEC))
		xs_real.fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (xrs_p_rename(rfd, fd))
		return -1;
	xs_real.close(rfd);
	s->kind = XS_RS;
	s->canon = fd;
	return 0;
}

/*
 * The probe reached a listener that is no RDMA peer (EPROTO: not an MPA
 * reply; the CM has waited for that server to close the probe, see
 * XIW_CM_NOT_MPA_WAIT_MS). Some servers (iperf3 -s) take the probe as a
 * client, fail on it and re-open their listener, so a connect right
 * behind it can be refused for a moment: retry that (2, 4 .. 128 ms,
 * 0.25 s in all).
 */
static int xs_plain_connect(int fd, const struct sockaddr *addr, socklen_t len,
			    bool probed)
{
	int r = xs_real.connect(fd, addr, len);

	for (unsigned int ms = 2; r < 0 && errno == ECONNREFUSED && probed &&
	     ms <= 128; ms *= 2) {
		usleep(ms * 1000);
		r = xs_real.connect(fd, addr, len);
	}
	return r;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct xs_sock *s;
	int rfd, e = 0;

	xs_need();
	s = xs_get(fd);
	if (!s || s->kind != XS_CAND || xs_inside || !addr ||
	    addr->sa_family != s->family || !xs_port_ok(xs_sa_port(addr)))
		goto plain;
	xs_inside++;
	rfd = xs_rdma_connect(s, addr, len);
	e = errno;
	if (rfd >= 0 && xs_adopt_fd(s, fd, rfd)) {
		e = errno;
		rclose(rfd);
		rfd = -1;
	}
	xs_inside--;
	if (rfd >= 0) {
		xs_log("fd %d: connected over RDMA (port %u)", fd, xs_sa_port(addr));
		return 0;
	}
	xs_log("fd %d: no RDMA peer at port %u (%s)%s", fd, xs_sa_port(addr),
	       strerror(e), xs_kn.mode == XS_MODE_RDMA ? "" : ": kernel TCP");
	if (xs_kn.mode == XS_MODE_RDMA) {
		errno = e == ETIMEDOUT ? ETIMEDOUT : ECONNREFUSED;
		return -1;
	}
plain:
	if (s && s->kind == XS_CAND && !xs_inside) {
		/* decided: a kernel socket from now on */
		xs_alias_del(s, fd);
		if (!s->refs)
			xs_put(s);
	}
	return xs_plain_connect(fd, addr, len, e == EPROTO);
}
