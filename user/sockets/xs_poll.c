// SPDX-License-Identifier: MIT
/*
 * libxiwsock.so: poll, ppoll, select, pselect over rsockets and kernel
 * fds together. An rsocket's fd is polled for POLLIN in the kernel (its
 * completion channel makes it readable); what it is really ready for
 * comes from xrs_p_revents(), and wake-ups that change nothing are
 * settled (taken, CQ re-armed) and the wait goes on.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "xrs_priv.h"
#include "xs_int.h"

static int64_t xs_mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* rsocket fd of fds[i], -2 if not ours, -1 if ours but unusable. */
static int xs_poll_rfd(int fd)
{
	struct xs_sock *s = xs_get(fd);

	if (!s || !xs_is_rdma(s))
		return -2;
	return xs_attach(s);
}

/* One non-blocking pass over every fd. Return: ready count. */
static int xs_poll_check(struct pollfd *fds, nfds_t n, const int *rfd,
			 struct pollfd *kfds)
{
	int cnt = 0, k = 0;

	for (nfds_t i = 0; i < n; i++) {
		if (rfd[i] == -2) {
			kfds[k] = fds[i];
			kfds[k++].revents = 0;
			continue;
		}
		fds[i].revents = rfd[i] < 0 ? POLLERR :
			xrs_p_revents(rfd[i], fds[i].events) &
			(fds[i].events | POLLERR | POLLHUP | POLLNVAL);
		cnt += !!fds[i].revents;
	}
	if (!cnt)
		return 0;
	if (k && xs_real.poll(kfds, (nfds_t)k, 0) > 0) {
		k = 0;
		for (nfds_t i = 0; i < n; i++) {
			if (rfd[i] != -2)
				continue;
			fds[i].revents = kfds[k++].revents;
			cnt += !!fds[i].revents;
		}
	} else {
		for (nfds_t i = 0; i < n; i++)
			if (rfd[i] == -2)
				fds[i].revents = 0;
	}
	return cnt;
}

static int xs_poll_wait(struct pollfd *kfds, nfds_t n, int64_t deadline,
			const sigset_t *mask)
{
	struct timespec ts, *tp = NULL;
	int64_t left = 0;

	if (deadline >= 0) {
		left = deadline - xs_mono_ns();
		if (left < 0)
			left = 0;
		ts.tv_sec = left / 1000000000LL;
		ts.tv_nsec = left % 1000000000LL;
		tp = &ts;
	}
	if (mask)
		return xs_real.ppoll(kfds, n, tp, mask);
	return xs_real.poll(kfds, n, tp ? (int)((left + 999999) / 1000000) : -1);
}

static int xs_poll_loop(struct pollfd *fds, nfds_t n, int64_t deadline,
			const sigset_t *mask, int *rfd, struct pollfd *kfds)
{
	int cnt, ret;

	for (;;) {
		cnt = xs_poll_check(fds, n, rfd, kfds);
		if (cnt)
			return cnt;
		for (nfds_t i = 0; i < n; i++) {
			if (rfd[i] >= 0)
				xrs_p_settle(rfd[i], fds[i].events & POLLOUT);
			kfds[i] = fds[i];
			kfds[i].revents = 0;
			if (rfd[i] >= 0)
				kfds[i].events = POLLIN;
		}
		cnt = xs_poll_check(fds, n, rfd, kfds);
		if (cnt)
			return cnt;
		for (nfds_t i = 0; i < n; i++) {
			kfds[i] = fds[i];
			kfds[i].revents = 0;
			if (rfd[i] >= 0)
				kfds[i].events = POLLIN;
		}
		ret = xs_poll_wait(kfds, n, deadline, mask);
		if (ret <= 0) {
			for (nfds_t i = 0; i < n; i++)
				fds[i].revents = 0;
			return ret;
		}
		cnt = 0;
		for (nfds_t i = 0; i < n; i++) {
			if (rfd[i] == -2) {
				fds[i].revents = kfds[i].revents;
			} else if (rfd[i] >= 0 && kfds[i].revents) {
				fds[i].revents = xrs_p_revents(rfd[i], fds[i].events) &
					(fds[i].events | POLLERR | POLLHUP | POLLNVAL);
				if (!fds[i].revents)
					xrs_p_settle(rfd[i], fds[i].events & POLLOUT);
			} else {
				fds[i].revents = rfd[i] == -1 ? POLLERR : 0;
			}
			cnt += !!fds[i].revents;
		}
		if (cnt)
			return cnt;
		if (deadline >= 0 && xs_mono_ns() >= deadline)
			return 0;
	}
}

static int xs_poll_impl(struct pollfd *fds, nfds_t n, int64_t deadline,
			const sigset_t *mask)
{
	int rfd_small[64], *rfd = rfd_small, ret;
	struct pollfd kfd_small[64], *kfds = kfd_small;
	bool ours = false;

	for (nfds_t i = 0; i < n && !ours; i++) {
		struct xs_sock *s = xs_get(fds[i].fd);

		ours = s && xs_is_rdma(s);
	}
	if (!ours) {
		struct timespec ts, *tp = NULL;
		int64_t left = 0;

		if (deadline >= 0) {
			left = deadline - xs_mono_ns();
			if (left < 0)
				left = 0;
			ts.tv_sec = left / 1000000000LL;
			ts.tv_nsec = left % 1000000000LL;
			tp = &ts;
		}
		if (mask)
			return xs_real.ppoll(fds, n, tp, mask);
		return -3;	/* the caller passes through */
	}
	if (n > 64) {
		rfd = malloc(n * sizeof(*rfd));
		kfds = malloc(n * sizeof(*kfds));
		if (!rfd || !kfds) {
			free(rfd);
			free(kfds);
			errno = ENOMEM;
			return -1;
		}
	}
	for (nfds_t i = 0; i < n; i++)
		rfd[i] = xs_poll_rfd(fds[i].fd);
	ret = xs_poll_loop(fds, n, deadline, mask, rfd, kfds);
	if (n > 64) {
		free(rfd);
		free(kfds);
	}
	return ret;
}

static int64_t xs_deadline_ms(int timeout)
{
	return timeout < 0 ? -1 : xs_mono_ns() + (int64_t)timeout * 1000000;
}

static int64_t xs_deadline_ts(const struct timespec *t)
{
	return !t ? -1 : xs_mono_ns() + t->tv_sec * 1000000000LL + t->tv_nsec;
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	int ret;

	xs_need();
	ret = xs_poll_impl(fds, n, xs_deadline_ms(timeout), NULL);
	return ret == -3 ? xs_real.poll(fds, n, timeout) : ret;
}

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		abort();
	return poll(fds, n, timeout);
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t,
	  const sigset_t *mask)
{
	sigset_t none;
	int ret;

	xs_need();
	if (!mask) {
		/* xs_poll_impl uses ppoll when a mask is given: the current one */
		sigprocmask(SIG_SETMASK, NULL, &none);
		mask = &none;
	}
	ret = xs_poll_impl(fds, n, xs_deadline_ts(t), mask);
	return ret;
}

/* ------------------------------------------------------------ select --- */

static int xs_select_impl(int nfds, fd_set *r, fd_set *w, fd_set *e,
			  int64_t deadline, const sigset_t *mask)
{
	struct pollfd small[64], *p = small;
	int n = 0, ret, cnt = 0;

	if (nfds > 64) {
		p = calloc((size_t)nfds, sizeof(*p));
		if (!p) {
			errno = ENOMEM;
			return -1;
		}
	}
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (r && FD_ISSET(fd, r))
			ev |= POLLIN;
		if (w && FD_ISSET(fd, w))
			ev |= POLLOUT;
		if (e && FD_ISSET(fd, e))
			ev |= POLLPRI;
		if (!ev)
			continue;
		p[n].fd = fd;
		p[n].events = ev;
		p[n++].revents = 0;
	}
	ret = xs_poll_impl(p, (nfds_t)n, deadline, mask);
	if (ret == -3)
		ret = xs_poll_wait(p, (nfds_t)n, deadline, NULL);
	if (ret >= 0) {
		if (r)
			FD_ZERO(r);
		if (w)
			FD_ZERO(w);
		if (e)
			FD_ZERO(e);
		for (int i = 0; i < n; i++) {
			short rv = p[i].revents;

			if (rv & POLLNVAL) {
				ret = -1;
				errno = EBADF;
				break;
			}
			if (r && (p[i].events & POLLIN) && (rv & (POLLIN | POLLHUP | POLLERR)))
				FD_SET(p[i].fd, r), cnt++;
			if (w && (p[i].events & POLLOUT) && (rv & (POLLOUT | POLLERR)))
				FD_SET(p[i].fd, w), cnt++;
			if (e && (p[i].events & POLLPRI) && (rv & POLLPRI))
				FD_SET(p[i].fd, e), cnt++;
		}
		if (ret >= 0)
			ret = cnt;
	}
	if (p != small)
		free(p);
	return ret;
}

static bool xs_any_ours(int nfds, fd_set *r, fd_set *w)
{
	for (int fd = 0; fd < nfds; fd++) {
		struct xs_sock *s;

		if (!((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w))))
			continue;
		s = xs_get(fd);
		if (s && xs_is_rdma(s))
			return true;
	}
	return false;
}

int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	int64_t deadline, start;
	int ret;

	xs_need();
	if (nfds < 0 || nfds > FD_SETSIZE || !xs_any_ours(nfds, r, w))
		return xs_real.select(nfds, r, w, e, tv);
	start = xs_mono_ns();
	deadline = tv ? start + tv->tv_sec * 1000000000LL + tv->tv_usec * 1000LL : -1;
	ret = xs_select_impl(nfds, r, w, e, deadline, NULL);
	if (tv) {	/* Linux: the time not slept */
		int64_t left = deadline - xs_mono_ns();

		if (left < 0)
			left = 0;
		tv->tv_sec = left / 1000000000LL;
		tv->tv_usec = (left % 1000000000LL) / 1000;
	}
	return ret;
}

int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e,
	    const struct timespec *t, const sigset_t *mask)
{
	sigset_t cur;

	xs_need();
	if (nfds < 0 || nfds > FD_SETSIZE || !xs_any_ours(nfds, r, w))
		return xs_real.pselect(nfds, r, w, e, t, mask);
	if (!mask) {
		sigprocmask(SIG_SETMASK, NULL, &cur);
		mask = &cur;
	}
	return xs_select_impl(nfds, r, w, e, xs_deadline_ts(t), mask);
}
