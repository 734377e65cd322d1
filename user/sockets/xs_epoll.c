// SPDX-License-Identifier: MIT
/*
 * libxiwsock.so: epoll over rsockets. An rsocket's fd is in the kernel's
 * epoll set for real (level-triggered EPOLLIN, data = XS_EP_MAGIC | fd);
 * the application's events, data and EPOLLET/EPOLLONESHOT live here.
 * epoll_wait() translates our fds' wake-ups into exact events (dropping
 * and settling the ones that change nothing) and reports writability,
 * which the fd itself cannot show, from the socket's state: level-
 * triggered on every call while writable, edge-triggered once per
 * not-writable -> writable change. No thread watches anything.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "xrs_priv.h"
#include "xs_int.h"

#define XS_EP_MAGIC	0x5849575300000000ULL	/* "XIWS" */
#define XS_EP_MASK	0xFFFFFFFF00000000ULL

struct xs_epreg {
	int fd;
	uint32_t events;
	epoll_data_t data;
	bool disabled;		/* EPOLLONESHOT fired */
	bool out_seen;		/* EPOLLET: writable already reported */
	bool reported;		/* in this epoll_wait already */
	struct xs_epreg *next;
};

struct xs_ep {
	pthread_mutex_t lock;
	struct xs_epreg *regs;
};

static pthread_mutex_t xs_ep_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xs_ep **xs_eps;
static int xs_neps;

static struct xs_ep *xs_ep_get(int epfd, bool create)
{
	struct xs_ep *ep = NULL;

	pthread_mutex_lock(&xs_ep_lock);
	if (epfd >= 0 && epfd < xs_neps)
		ep = xs_eps[epfd];
	if (!ep && create && epfd >= 0) {
		if (epfd >= xs_neps) {
			int n = xs_neps ? xs_neps : 64;
			struct xs_ep **a;

			while (n <= epfd)
				n *= 2;
			a = realloc(xs_eps, (size_t)n * sizeof(*a));
			if (!a)
				goto out;
			memset(a + xs_neps, 0, (size_t)(n - xs_neps) * sizeof(*a));
			xs_eps = a;
			xs_neps = n;
		}
		ep = calloc(1, sizeof(*ep));
		if (ep) {
			pthread_mutex_init(&ep->lock, NULL);
			xs_eps[epfd] = ep;
		}
	}
out:
	pthread_mutex_unlock(&xs_ep_lock);
	return ep;
}

/* Does @epfd hold any of our sockets? (cheap: no lock on the hot path) */
static struct xs_ep *xs_ep_peek(int epfd)
{
	struct xs_ep *ep;

	if (epfd < 0 || epfd >= __atomic_load_n(&xs_neps, __ATOMIC_ACQUIRE))
		return NULL;
	pthread_mutex_lock(&xs_ep_lock);
	ep = epfd < xs_neps ? xs_eps[epfd] : NULL;
	pthread_mutex_unlock(&xs_ep_lock);
	return ep && ep->regs ? ep : NULL;
}

static struct xs_epreg **xs_ep_find(struct xs_ep *ep, int fd)
{
	struct xs_epreg **p;

	for (p = &ep->regs; *p; p = &(*p)->next)
		if ((*p)->fd == fd)
			return p;
	return NULL;
}

static int xs_ep_add(struct xs_ep *ep, int epfd, int fd, int r,
		     const struct epoll_event *ev)
{
	struct epoll_event kev = { .events = EPOLLIN,
				   .data.u64 = XS_EP_MAGIC | (uint32_t)fd };
	struct xs_epreg *g;

	if (xs_ep_find(ep, fd)) {
		errno = EEXIST;
		return -1;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		errno = ENOMEM;
		return -1;
	}
	if (xs_real.epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &kev)) {
		free(g);
		return -1;
	}
	g->fd = fd;
	g->events = ev->events;
	g->data = ev->data;
	g->next = ep->regs;
	ep->regs = g;
	xrs_p_settle(r, ev->events & EPOLLOUT);
	return 0;
}

static int xs_ep_ctl(int epfd, int op, int fd, int r, struct epoll_event *ev)
{
	struct xs_ep *ep = xs_ep_get(epfd, op == EPOLL_CTL_ADD);
	struct xs_epreg **p, *g;
	int ret = 0;

	if (!ep) {
		if (op == EPOLL_CTL_ADD) {
			errno = ENOMEM;
			return -1;
		}
		return xs_real.epoll_ctl(epfd, op, fd, ev);
	}
	pthread_mutex_lock(&ep->lock);
	switch (op) {
	case EPOLL_CTL_ADD:
		ret = ev ? xs_ep_add(ep, epfd, fd, r, ev) : (errno = EFAULT, -1);
		break;
	case EPOLL_CTL_MOD:
		p = xs_ep_find(ep, fd);
		if (!p || !ev) {
			errno = p ? EFAULT : ENOENT;
			ret = -1;
			break;
		}
		(*p)->events = ev->events;
		(*p)->data = ev->data;
		(*p)->disabled = false;
		(*p)->out_seen = false;
		xrs_p_settle(r, ev->events & EPOLLOUT);
		break;
	case EPOLL_CTL_DEL:
		p = xs_ep_find(ep, fd);
		if (!p) {
			errno = ENOENT;
			ret = -1;
			break;
		}
		g = *p;
		*p = g->next;
		free(g);
		ret = xs_real.epoll_ctl(epfd, EPOLL_CTL_DEL, fd, ev);
		break;
	default:
		errno = EINVAL;
		ret = -1;
	}
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct xs_sock *s;
	int r;

	xs_need();
	s = xs_get(fd);
	if (!s || !xs_is_rdma(s))
		return xs_real.epoll_ctl(epfd, op, fd, ev);
	/* an accepted connection joins the engine now: its peer waits */
	r = xs_attach(s);
	if (r < 0)
		return -1;
	return xs_ep_ctl(epfd, op, fd, r, ev);
}

/* ------------------------------------------------------------- wait --- */

static int64_t xs_mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The events of registration @g now; updates its ET/ONESHOT state. */
static uint32_t xs_ep_events(struct xs_epreg *g)
{
	struct xs_sock *s = xs_get(g->fd);
	int r = s ? xs_attach(s) : -1;
	uint32_t want = g->events & (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP);
	uint32_t rev;

	if (g->disabled || r < 0)
		return r < 0 && !g->disabled ? EPOLLERR : 0;
	rev = (uint32_t)(uint16_t)xrs_p_revents(r, (short)(want & (EPOLLIN | EPOLLOUT)));
	if ((rev & EPOLLHUP) && (want & EPOLLRDHUP))
		rev |= EPOLLRDHUP;
	if (g->events & EPOLLET) {
		bool out = rev & EPOLLOUT;

		if (out && g->out_seen)
			rev &= ~EPOLLOUT;
		g->out_seen = out;
	}
	rev &= want | EPOLLERR | EPOLLHUP;
	if (rev && (g->events & EPOLLONESHOT))
		g->disabled = true;
	return rev;
}

/* Our sockets waited on for writability: the fd cannot show it. */
static int xs_ep_precheck(struct xs_ep *ep, struct epoll_event *out, int max)
{
	int n = 0;

	for (struct xs_epreg *g = ep->regs; g; g = g->next) {
		g->reported = false;
		if (n >= max || !(g->events & EPOLLOUT) || g->disabled)
			continue;
		out[n].events = xs_ep_events(g);
		if (!out[n].events)
			continue;
		out[n].data = g->data;
		g->reported = true;
		n++;
	}
	return n;
}

static void xs_ep_arm(struct xs_ep *ep)
{
	for (struct xs_epreg *g = ep->regs; g; g = g->next) {
		struct xs_sock *s = xs_get(g->fd);
		int r = s ? xs_attach(s) : -1;

		if (r >= 0 && !g->disabled && (g->events & EPOLLOUT))
			xrs_p_settle(r, true);
	}
}

/* Translate kernel events in place; Return: how many remain. */
static int xs_ep_translate(struct xs_ep *ep, struct epoll_event *ev, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		struct xs_epreg **p, *g;
		int fd;

		if ((ev[i].data.u64 & XS_EP_MASK) != XS_EP_MAGIC) {
			ev[k++] = ev[i];
			continue;
		}
		fd = (int)(uint32_t)ev[i].data.u64;
		p = xs_ep_find(ep, fd);
		if (!p)
			continue;
		g = *p;
		if (g->reported)
			continue;
		ev[k].events = xs_ep_events(g);
		if (ev[k].events) {
			ev[k++].data = g->data;
		} else {
			struct xs_sock *s = xs_get(fd);
			int r = s ? xs_attach(s) : -1;

			if (r >= 0)	/* nothing new: wait for the next change */
				xrs_p_settle(r, (g->events & EPOLLOUT) && !g->disabled);
		}
	}
	return k;
}

static int xs_ep_wait(struct xs_ep *ep, int epfd, struct epoll_event *ev,
		      int max, int timeout, const sigset_t *mask)
{
	int64_t deadline = timeout < 0 ? -1 : xs_mono_ns() + (int64_t)timeout * 1000000;
	int n, k, to;

	if (max <= 0) {
		errno = EINVAL;
		return -1;
	}
	for (;;) {
		pthread_mutex_lock(&ep->lock);
		n = xs_ep_precheck(ep, ev, max);
		if (!n)
			xs_ep_arm(ep);
		pthread_mutex_unlock(&ep->lock);
		to = n ? 0 : timeout;
		if (!n && deadline >= 0) {
			int64_t left = deadline - xs_mono_ns();

			to = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
		}
		k = mask ? xs_real.epoll_pwait(epfd, ev + n, max - n, to, mask) :
			   xs_real.epoll_wait(epfd, ev + n, max - n, to);
		if (k < 0)
			return n ? n : -1;
		pthread_mutex_lock(&ep->lock);
		k = xs_ep_translate(ep, ev + n, k);
		pthread_mutex_unlock(&ep->lock);
		if (n + k)
			return n + k;
		if (!to && (timeout == 0 || (deadline >= 0 && xs_mono_ns() >= deadline)))
			return 0;
	}
}

int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	struct xs_ep *ep;

	xs_need();
	ep = xs_ep_peek(epfd);
	if (!ep)
		return xs_real.epoll_wait(epfd, ev, max, timeout);
	return xs_ep_wait(ep, epfd, ev, max, timeout, NULL);
}

int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
		const sigset_t *mask)
{
	struct xs_ep *ep;

	xs_need();
	ep = xs_ep_peek(epfd);
	if (!ep)
		return xs_real.epoll_pwait(epfd, ev, max, timeout, mask);
	return xs_ep_wait(ep, epfd, ev, max, timeout, mask);
}

/* ------------------------------------------------------- forgetting --- */

/** xs_epoll_forget_fd() - @fd is being closed: drop its registrations. */
void xs_epoll_forget_fd(int fd)
{
	pthread_mutex_lock(&xs_ep_lock);
	for (int i = 0; i < xs_neps; i++) {
		struct xs_ep *ep = xs_eps[i];
		struct xs_epreg **p, *g;

		if (!ep)
			continue;
		pthread_mutex_lock(&ep->lock);
		p = xs_ep_find(ep, fd);
		if (p) {
			g = *p;
			*p = g->next;
			free(g);
		}
		pthread_mutex_unlock(&ep->lock);
	}
	pthread_mutex_unlock(&xs_ep_lock);
}

/** xs_epoll_forget_epfd() - @epfd is being closed. */
void xs_epoll_forget_epfd(int epfd)
{
	struct xs_ep *ep = NULL;

	if (epfd < 0 || epfd >= __atomic_load_n(&xs_neps, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&xs_ep_lock);
	if (epfd < xs_neps) {
		ep = xs_eps[epfd];
		xs_eps[epfd] = NULL;
	}
	pthread_mutex_unlock(&xs_ep_lock);
	if (!ep)
		return;
	while (ep->regs) {
		struct xs_epreg *g = ep->regs;

		ep->regs = g->next;
		free(g);
	}
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}
