// SPDX-License-Identifier: MIT
/*
 * libxiwsock.so: data calls - read, write, readv, writev, recv, send,
 * recvfrom, sendto, recvmsg, sendmsg, sendfile (and glibc's _chk
 * variants). On an rsocket they go to rrecv/rsend & co.; on anything
 * else straight to libc. A send on a socket the peer closed raises
 * SIGPIPE unless MSG_NOSIGNAL, as TCP does.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sendfile.h>
#include <rdma/rsocket.h>
#include "xs_int.h"

/*
 * The rsocket fd for @fd, or -2 if @fd is not one of ours. A data call
 * that interrupts one of ours in the same thread (iperf3 writes from its
 * signal handler) would deadlock on the socket's locks: it fails with
 * EINTR instead (xs_busy).
 */
static __thread int xs_busy;

static int xs_rfd(int fd)
{
	struct xs_sock *s;

	xs_need();
	s = xs_get(fd);
	if (!s || !xs_is_rdma(s))
		return -2;
	if (xs_busy) {
		errno = EINTR;
		return -1;
	}
	return xs_attach(s);
}

#define XS_CALL(expr) ({ ssize_t _r; xs_busy++; _r = (expr); xs_busy--; _r; })

static ssize_t xs_sent(ssize_t ret, int flags)
{
	if (ret < 0 && xs_kn.verbose > 1 && errno != EAGAIN) {
		int e = errno;

		xs_log("send: %s", strerror(e));
		errno = e;
	}
	if (ret < 0 && errno == EPIPE && !(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	return ret;
}

ssize_t read(int fd, void *buf, size_t n)
{
	int r = xs_rfd(fd);

	if (r == -2)
		return xs_real.read(fd, buf, n);
	return r < 0 ? -1 : XS_CALL(rrecv(r, buf, n, 0));
}

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		abort();
	return read(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	int r = xs_rfd(fd);

	if (r == -2)
		return xs_real.write(fd, buf, n);
	return r < 0 ? -1 : xs_sent(XS_CALL(rsend(r, buf, n, 0)), 0);
}

ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	int r = xs_rfd(fd);

	if (r == -2)
		return xs_real.readv(fd, iov, iovcnt);
	return r < 0 ? -1 : XS_CALL(rreadv(r, iov, iovcnt));
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	int r = xs_rfd(fd);

	if (r == -2)
		return xs_real.writev(fd, iov, iovcnt);
	return r < 0 ? -1 : xs_sent(XS_CALL(rwritev(r, iov, iovcnt)), 0);
}

ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	int r = xs_rfd(fd);

	if (r == -2)
		return xs_real.recv(fd, buf, n, flags);
	return r < 0 ? -1 : XS_CALL(rrecv(r, buf, n, flags));
}

ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (n > buflen)
		abort();
	return recv(fd, buf, n, flags);
}

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	int r = xs_rfd(fd);

	if (r == -2)
		return xs_real.send(fd, buf, n, flags);
	return r < 0 ? -1 : xs_sent(XS_CALL(rsend(r, buf, n, flags & ~MSG_NOSIGNAL)), flags);
}

ssize_t recvfrom(int fd, void *buf, size_t n, int flags,
		 struct sockaddr *addr, socklen_t *alen)
{
	int r = xs_rfd(fd);

	if (r == -2)
		return xs_real.recvfrom(fd, buf, n, flags, addr, alen);
	return r < 0 ? -1 : XS_CALL(rrecvfrom(r, buf, n, flags, addr, alen));
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
		       struct sockaddr *addr, socklen_t *alen);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
		       struct sockaddr *addr, socklen_t *alen)
{
	if (n > buflen)
		abort();
	return recvfrom(fd, buf, n, flags, addr, alen);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags,
	       const struct sockaddr *addr, socklen_t alen)
{
	int r = xs_rfd(fd);

	if (r == -2)
		return xs_real.sendto(fd, buf, n, flags, addr, alen);
	/* a connected stream ignores the address, as TCP does */
	return r < 0 ? -1 : xs_sent(XS_CALL(rsend(r, buf, n, flags & ~MSG_NOSIGNAL)), flags);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct msghdr m;
	int r = xs_rfd(fd);
	ssize_t ret;

	if (r == -2)
		return xs_real.recvmsg(fd, msg, flags);
	if (r < 0)
		return -1;
	m = *msg;
	m.msg_control = NULL;	/* no ancillary data over RDMA */
	m.msg_controllen = 0;
	ret = XS_CALL(rrecvmsg(r, &m, flags));
	msg->msg_controllen = 0;
	msg->msg_flags = 0;
	if (msg->msg_name)
		msg->msg_namelen = 0;
	return ret;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct msghdr m;
	int r = xs_rfd(fd);

	if (r == -2)
		return xs_real.sendmsg(fd, msg, flags);
	if (r < 0)
		return -1;
	m = *msg;
	m.msg_name = NULL;
	m.msg_namelen = 0;
	m.msg_control = NULL;
	m.msg_controllen = 0;
	return xs_sent(XS_CALL(rsendmsg(r, &m, flags & ~MSG_NOSIGNAL)), flags);
}

/* sendfile to an rsocket: read the file into a bounce buffer and send. */
static ssize_t xs_sendfile(int r, int in_fd, off_t *offset, size_t count)
{
	size_t done = 0, bsz = count < (256u << 10) ? count : (256u << 10);
	char *buf;
	ssize_t n = 0, m = 0;

	if (!count)
		return 0;
	buf = malloc(bsz);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	while (done < count) {
		size_t want = count - done < bsz ? count - done : bsz;

		n = offset ? pread(in_fd, buf, want, *offset) : xs_real.read(in_fd, buf, want);
		if (n <= 0)
			break;
		m = rsend(r, buf, (size_t)n, 0);
		if (m > 0) {
			done += (size_t)m;
			if (offset)
				*offset += m;
			else if (m < n)	/* give back what was read and not sent */
				lseek(in_fd, m - n, SEEK_CUR);
		}
		if (m < n)
			break;
	}
	free(buf);
	if (!done && (n < 0 || m < 0))
		return xs_sent(-1, 0);
	return (ssize_t)done;
}

ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	int r = xs_rfd(out_fd);

	if (r == -2)
		return xs_real.sendfile(out_fd, in_fd, offset, count);
	return r < 0 ? -1 : XS_CALL(xs_sendfile(r, in_fd, offset, count));
}

ssize_t sendfile64(int out_fd, int in_fd, off_t *offset, size_t count)
{
	int r = xs_rfd(out_fd);

	if (r == -2)
		return xs_real.sendfile64(out_fd, in_fd, offset, count);
	return r < 0 ? -1 : XS_CALL(xs_sendfile(r, in_fd, offset, count));
}
