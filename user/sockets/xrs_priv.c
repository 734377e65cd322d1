// SPDX-License-Identifier: MIT
/*
 * rsockets: the private entry points of xiwarp's LD_PRELOAD library
 * (xrs_priv.h). The passive side of the preload accepts kernel TCP
 * connections itself and hands those that start with an MPA request to
 * xrs_p_adopt(); the rest is readiness bookkeeping for its poll/epoll.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>
#include "verbs/rdmacm_int.h"
#include "xrs_int.h"
#include "xrs_priv.h"

int xrs_p_adopt(int tcp_fd, int afd, int bfd)
{
	struct xrs *ls = xrs_alloc(NULL);
	struct rdma_cm_id *lid = NULL;
	/* the application's fd number survives a failure: keep its file */
	int keep = (int)syscall(SYS_fcntl, afd, F_DUPFD_CLOEXEC, 0);
	int fd = -1, e = 0;

	if (!ls || keep < 0) {
		e = ls ? errno : ENOMEM;
		goto out;
	}
	ls->pollable = true;
	if (rdma_create_id(NULL, &lid, NULL, RDMA_PS_TCP) || xcm_adopt(lid, tcp_fd)) {
		e = errno;
		goto out;
	}
	tcp_fd = -1;		/* the engine's now */
	fd = xrs_accept_id(ls, lid, afd, bfd);	/* closes afd/bfd on failure */
	e = errno;
	bfd = -1;
out:
	if (lid)
		rdma_destroy_id(lid);
	if (ls)
		xrs_free(ls);
	if (fd >= 0) {
		xrs_sys_close(keep);
		xrs_sync_token(xrs_lookup(fd));
		return 0;
	}
	if (tcp_fd >= 0)
		xrs_sys_close(tcp_fd);
	if (bfd >= 0)
		xrs_sys_close(bfd);
	if (keep >= 0) {
		syscall(SYS_dup3, keep, afd, O_CLOEXEC);
		xrs_sys_close(keep);
	}
	return xrs_err(e);
}

int xrs_p_pollable(int fd)
{
	struct xrs *rs = xrs_lookup(fd);

	if (!rs)
		return xrs_err(EBADF);
	rs->pollable = true;
	xrs_sync_token(rs);
	return 0;
}

short xrs_p_revents(int fd, short events)
{
	struct xrs *rs = xrs_lookup(fd);

	return rs ? xrs_revents(rs, events) : POLLNVAL;
}

void xrs_p_settle(int fd, bool want_out)
{
	struct xrs *rs = xrs_lookup(fd);

	if (rs)
		xrs_settle(rs, want_out);
}

int xrs_p_rename(int oldfd, int newfd)
{
	struct xrs *rs = xrs_lookup(oldfd);

	if (!rs)
		return xrs_err(EBADF);
	if (xrs_table_set(newfd, rs))
		return xrs_err(EMFILE);
	xrs_table_clear(oldfd, rs);
	rs->index = newfd;
	return 0;
}

int xrs_p_nread(int fd)
{
	struct xrs *rs = xrs_lookup(fd);
	uint64_t n = 0;

	if (!rs)
		return xrs_err(EBADF);
	pthread_mutex_lock(&rs->cq_lock);
	for (uint32_t i = xrs_cnt_get(&rs->rmsg_head); i != rs->rmsg_tail;
	     i = i + 1 == rs->rmsg_size ? 0 : i + 1)
		n += rs->rmsg[i].data;
	pthread_mutex_unlock(&rs->cq_lock);
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

int xrs_p_stats(int fd, struct xrs_p_stats *st)
{
	struct xrs *rs = xrs_lookup(fd);

	if (!rs)
		return xrs_err(EBADF);
	pthread_mutex_lock(&rs->cq_lock);
	*st = rs->zc.st;
	st->zc = rs->zc.on;
	st->src_thresh = rs->zc.pol.src;
	st->sink_thresh = rs->zc.pol.sink;
	pthread_mutex_unlock(&rs->cq_lock);
	return 0;
}
