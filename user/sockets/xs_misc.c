// SPDX-License-Identifier: MIT
/*
 * libxiwsock.so: the rest of a socket's life - close, shutdown, dup,
 * dup2, dup3, fcntl (O_NONBLOCK, F_DUPFD), ioctl (FIONBIO, FIONREAD),
 * getsockopt/setsockopt (remembered before connect, replayed on the
 * rsocket), getsockname, getpeername.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <rdma/rsocket.h>
#include "xrs_priv.h"
#include "xs_int.h"

/* ------------------------------------------------------------- close --- */

/* Another fd names @s: hand the rsocket's own number over to it. */
static void xs_move_canon(struct xs_sock *s, int fd)
{
	int other = -1;

	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < s->refs && i < XS_MAX_ALIAS; i++)
		if (s->fds[i] != fd)
			other = s->fds[i];
	pthread_mutex_unlock(&s->lock);
	if (other < 0)
		return;
	if (s->kind == XS_RS)
		xrs_p_rename(fd, other);
	s->canon = other;
}

/** xs_close_sock() - close fd @fd of socket @s. */
int xs_close_sock(int fd, struct xs_sock *s)
{
	int ret = 0;

	xs_epoll_forget_fd(fd);
	if (s->refs > 1) {
		if (fd == s->canon)
			xs_move_canon(s, fd);
		xs_alias_del(s, fd);
		return xs_real.close(fd);
	}
	xs_alias_del(s, fd);
	switch (s->kind) {
	case XS_RS:
		xs_inside++;
		ret = rclose(s->canon) ? -1 : 0;
		xs_inside--;
		break;
	case XS_PENDING:
		xs_real.close(s->tfd);
		xs_real.close(s->bfd);
		ret = xs_real.close(fd);
		break;
	default:
		ret = xs_real.close(fd);
		break;
	}
	xs_put(s);
	return ret;
}

int close(int fd)
{
	struct xs_sock *s;

	xs_need();
	xs_epoll_forget_epfd(fd);
	s = xs_get(fd);
	if (!s)
		return xs_real.close(fd);
	return xs_close_sock(fd, s);
}

int shutdown(int fd, int how)
{
	struct xs_sock *s;
	int r;

	xs_need();
	s = xs_get(fd);
	if (!s || !xs_is_rdma(s))
		return xs_real.shutdown(fd, how);
	r = xs_attach(s);
	return r < 0 ? -1 : rshutdown(r, how);
}

/* --------------------------------------------------------------- dup --- */

static int xs_dup_done(int oldfd, int newfd)
{
	struct xs_sock *s;

	if (newfd < 0)
		return newfd;
	s = xs_get(oldfd);
	if (s)
		xs_alias_add(s, newfd);
	return newfd;
}

/* dup2/dup3 onto one of our sockets closes it first, as the kernel does. */
static void xs_dup_target(int oldfd, int newfd)
{
	struct xs_sock *t = oldfd != newfd ? xs_get(newfd) : NULL;

	if (!t)
		return;
	xs_epoll_forget_fd(newfd);
	if (t->refs > 1) {
		if (newfd == t->canon)
			xs_move_canon(t, newfd);
		xs_alias_del(t, newfd);
		return;
	}
	xs_alias_del(t, newfd);
	if (t->kind == XS_RS) {
		/* the rsocket's own fd: keep its file alive for rclose */
		int keep = xs_real.dup(newfd);

		if (keep >= 0) {
			xrs_p_rename(newfd, keep);
			rclose(keep);
		}
	} else if (t->kind == XS_PENDING) {
		xs_real.close(t->tfd);
		xs_real.close(t->bfd);
	}
	xs_put(t);
}

int dup(int oldfd)
{
	xs_need();
	return xs_dup_done(oldfd, xs_real.dup(oldfd));
}

int dup2(int oldfd, int newfd)
{
	xs_need();
	xs_dup_target(oldfd, newfd);
	return xs_dup_done(oldfd, xs_real.dup2(oldfd, newfd));
}

int dup3(int oldfd, int newfd, int flags)
{
	xs_need();
	xs_dup_target(oldfd, newfd);
	return xs_dup_done(oldfd, xs_real.dup3(oldfd, newfd, flags));
}

/* ------------------------------------------------------------- fcntl --- */

static int xs_set_flags(struct xs_sock *s, int fd, int flags)
{
	int r;

	if (!xs_is_rdma(s)) {
		r = xs_real.fcntl(fd, F_SETFL, flags);
		if (!r)
			s->flags = flags & O_NONBLOCK;
		return r;
	}
	s->flags = flags & O_NONBLOCK;
	if (s->kind != XS_RS)
		return 0;	/* applied when it attaches */
	return rfcntl(s->canon, F_SETFL, s->flags);
}

static int xs_fcntl(int fd, int cmd, long arg)
{
	struct xs_sock *s;

	xs_need();
	s = xs_get(fd);
	if (!s)
		return xs_real.fcntl(fd, cmd, arg);
	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		return xs_dup_done(fd, xs_real.fcntl(fd, cmd, arg));
	case F_GETFL:
		if (xs_is_rdma(s))
			return O_RDWR | s->flags;
		return xs_real.fcntl(fd, cmd);
	case F_SETFL:
		return xs_set_flags(s, fd, (int)arg);
	default:
		return xs_real.fcntl(fd, cmd, arg);
	}
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	return xs_fcntl(fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...);
int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	return xs_fcntl(fd, cmd, arg);
}

int ioctl(int fd, unsigned long req, ...)
{
	struct xs_sock *s;
	va_list ap;
	void *arg;
	int r;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	xs_need();
	s = xs_get(fd);
	if (!s || !xs_is_rdma(s))
		return xs_real.ioctl(fd, req, arg);
	switch (req) {
	case FIONBIO:
		return xs_set_flags(s, fd, *(int *)arg ? O_NONBLOCK : 0);
	case FIONREAD:		/* == SIOCINQ */
		r = xs_attach(s);
		if (r < 0)
			return -1;
		*(int *)arg = xrs_p_nread(r);
		return 0;
	case SIOCOUTQ:
		*(int *)arg = 0;
		return 0;
	default:
		errno = ENOTTY;
		return -1;
	}
}

/* ---------------------------------------------------------- options --- */

/* Options worth carrying from the kernel socket to the rsocket. */
static bool xs_opt_kept(int level, int name)
{
	if (level == SOL_SOCKET)
		return name == SO_RCVBUF || name == SO_SNDBUF ||
		       name == SO_RCVTIMEO || name == SO_SNDTIMEO ||
		       name == SO_LINGER || name == SO_KEEPALIVE;
	return level == IPPROTO_TCP && (name == TCP_NODELAY || name == TCP_KEEPIDLE);
}

static void xs_opt_remember(struct xs_sock *s, int level, int name,
			    const void *val, socklen_t len)
{
	int i;

	if (!xs_opt_kept(level, name) || !val || len > sizeof(s->opts[0].val))
		return;
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->nopts; i++)
		if (s->opts[i].level == level && s->opts[i].name == name)
			break;
	if (i < XS_MAX_OPTS) {
		s->opts[i].level = level;
		s->opts[i].name = name;
		s->opts[i].len = len;
		memcpy(s->opts[i].val, val, len);
		if (i == s->nopts)
			s->nopts++;
	}
	pthread_mutex_unlock(&s->lock);
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct xs_sock *s;
	int r, ret;

	xs_need();
	s = xs_get(fd);
	if (!s || !xs_is_rdma(s)) {
		ret = xs_real.setsockopt(fd, level, name, val, len);
		if (!ret && s && s->kind == XS_CAND)
			xs_opt_remember(s, level, name, val, len);
		return ret;
	}
	r = xs_attach(s);
	if (r < 0)
		return -1;
	ret = rsetsockopt(r, level, name, val, len);
	if (ret && errno == ENOTSUP) {
		/* TOS, priority, congestion control...: meaningless here */
		xs_log("fd %d: setsockopt level %d name %d ignored", fd, level, name);
		return 0;
	}
	return ret;
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct xs_sock *s;
	int r, ret;

	xs_need();
	s = xs_get(fd);
	if (!s || !xs_is_rdma(s))
		return xs_real.getsockopt(fd, level, name, val, len);
	r = xs_attach(s);
	if (r < 0)
		return -1;
	ret = rgetsockopt(r, level, name, val, len);
	if (ret && errno == ENOTSUP)
		errno = ENOPROTOOPT;
	return ret;
}

int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct xs_sock *s;
	int r;

	xs_need();
	s = xs_get(fd);
	if (!s || !xs_is_rdma(s))
		return xs_real.getsockname(fd, addr, len);
	if (s->kind == XS_PENDING)
		return xs_real.getsockname(s->tfd, addr, len);
	r = xs_attach(s);
	return r < 0 ? -1 : rgetsockname(r, addr, len);
}

int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct xs_sock *s;
	int r;

	xs_need();
	s = xs_get(fd);
	if (!s || !xs_is_rdma(s))
		return xs_real.getpeername(fd, addr, len);
	if (s->kind == XS_PENDING)
		return xs_real.getpeername(s->tfd, addr, len);
	r = xs_attach(s);
	return r < 0 ? -1 : rgetpeername(r, addr, len);
}
