// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: the rsocket API.
 *
 * rpoll/rselect work on ordinary fds (rping, ucmatose and udaddy poll
 * their CM channel fd with rpoll). The stream layer over RDMA is not
 * built yet: rsocket() fails with ENOSYS, so no rsocket fd can exist
 * and every other call fails with EBADF, like a call on a closed fd.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/select.h>
#include <rdma/rsocket.h>

#include "rdmacm_int.h"

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

int rsocket(int domain, int type, int protocol)
{
	(void)domain;
	(void)type;
	(void)protocol;
	xiw_log(XIW_LOG_WARN, XCM_PFX "rsocket: stream sockets over RDMA are not available yet");
	return xcm_err(ENOSYS);
}

static int xcm_rs_badf(void)
{
	return xcm_err(EBADF);
}

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket; (void)addr; (void)addrlen;
	return xcm_rs_badf();
}

int rlisten(int socket, int backlog)
{
	(void)socket; (void)backlog;
	return xcm_rs_badf();
}

int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket; (void)addr; (void)addrlen;
	return xcm_rs_badf();
}

int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket; (void)addr; (void)addrlen;
	return xcm_rs_badf();
}

int rshutdown(int socket, int how)
{
	(void)socket; (void)how;
	return xcm_rs_badf();
}

int rclose(int socket)
{
	(void)socket;
	return xcm_rs_badf();
}

ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)socket; (void)buf; (void)len; (void)flags;
	return xcm_rs_badf();
}

ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
		  struct sockaddr *src_addr, socklen_t *addrlen)
{
	(void)socket; (void)buf; (void)len; (void)flags; (void)src_addr;
	(void)addrlen;
	return xcm_rs_badf();
}

ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)socket; (void)msg; (void)flags;
	return xcm_rs_badf();
}

ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)socket; (void)buf; (void)len; (void)flags;
	return xcm_rs_badf();
}

ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)socket; (void)buf; (void)len; (void)flags; (void)dest_addr;
	(void)addrlen;
	return xcm_rs_badf();
}

ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)socket; (void)msg; (void)flags;
	return xcm_rs_badf();
}

ssize_t rread(int socket, void *buf, size_t count)
{
	(void)socket; (void)buf; (void)count;
	return xcm_rs_badf();
}

ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket; (void)iov; (void)iovcnt;
	return xcm_rs_badf();
}

ssize_t rwrite(int socket, const void *buf, size_t count)
{
	(void)socket; (void)buf; (void)count;
	return xcm_rs_badf();
}

ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket; (void)iov; (void)iovcnt;
	return xcm_rs_badf();
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket; (void)addr; (void)addrlen;
	return xcm_rs_badf();
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket; (void)addr; (void)addrlen;
	return xcm_rs_badf();
}

int rsetsockopt(int socket, int level, int optname, const void *optval,
		socklen_t optlen)
{
	(void)socket; (void)level; (void)optname; (void)optval; (void)optlen;
	return xcm_rs_badf();
}

int rgetsockopt(int socket, int level, int optname, void *optval,
		socklen_t *optlen)
{
	(void)socket; (void)level; (void)optname; (void)optval; (void)optlen;
	return xcm_rs_badf();
}

int rfcntl(int socket, int cmd, ...)
{
	(void)socket; (void)cmd;
	return xcm_rs_badf();
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
	     off_t offset)
{
	(void)socket; (void)buf; (void)len; (void)prot; (void)flags;
	(void)offset;
	return xcm_rs_badf();
}

int riounmap(int socket, void *buf, size_t len)
{
	(void)socket; (void)buf; (void)len;
	return xcm_rs_badf();
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset,
		int flags)
{
	(void)socket; (void)buf; (void)count; (void)offset; (void)flags;
	xcm_rs_badf();
	return 0;	/* rsocket's own convention: 0 bytes + errno */
}
