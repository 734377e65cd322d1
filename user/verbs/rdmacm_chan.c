// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: event channels and the event life cycle
 * (queue -> rdma_get_cm_event -> rdma_ack_cm_event).
 *
 * The channel fd is an eventfd whose counter is 1 while the queue holds
 * events and 0 otherwise, so applications can poll()/epoll it, set
 * O_NONBLOCK on it, and get EINTR from a blocked rdma_get_cm_event, all
 * as with the kernel's rdma_cm character device.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "rdmacm_int.h"

/* Destroyed channels, kept for reuse (struct xcm_chan: never freed). */
static pthread_mutex_t xcm_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xcm_chan *xcm_pool;

/* A pooled channel, or a new one (closed, no fd); NULL when out of memory. */
static struct xcm_chan *xcm_chan_alloc(void)
{
	struct xcm_chan *c;

	pthread_mutex_lock(&xcm_pool_lock);
	c = xcm_pool;
	if (c)
		xcm_pool = c->next_free;
	pthread_mutex_unlock(&xcm_pool_lock);
	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	c->ch.fd = -1;
	c->closed = 1;
	return c;
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct xcm_chan *c;
	int fd, ret;

	ret = xcm_devices_init();
	if (ret)
		return NULL;

	fd = eventfd(0, EFD_CLOEXEC);
	if (fd < 0) {
		ret = errno;
		xiw_log(XIW_LOG_INFO, XCM_PFX "eventfd: %s", strerror(ret));
		errno = ret;
		return NULL;
	}
	c = xcm_chan_alloc();
	if (!c) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	/* a late caller of the old channel may be inside (xcm_chan_wait) */
	pthread_mutex_lock(&c->lock);
	c->ch.fd = fd;
	c->head = c->tail = NULL;
	c->closed = 0;
	pthread_mutex_unlock(&c->lock);
	return &c->ch;
}

static void xcm_fd_signal(struct xcm_chan *c)
{
	uint64_t one = 1;

	if (write(c->ch.fd, &one, sizeof(one)) != sizeof(one))
		xiw_log(XIW_LOG_WARN, XCM_PFX "eventfd write: %s", strerror(errno));
}

/* Counter is exactly 1 here (invariant), so this read never blocks. */
static void xcm_fd_drain(struct xcm_chan *c)
{
	uint64_t v;

	if (read(c->ch.fd, &v, sizeof(v)) != sizeof(v))
		xiw_log(XIW_LOG_WARN, XCM_PFX "eventfd read: %s", strerror(errno));
}

/* c->lock held: closed and unused: close the fd (once); true: pool @c. */
static int xcm_chan_release_fd(struct xcm_chan *c)
{
	if (!c->closed || c->users || c->ch.fd < 0)
		return 0;
	close(c->ch.fd);
	c->ch.fd = -1;
	return 1;
}

static void xcm_chan_pool_put(struct xcm_chan *c)
{
	pthread_mutex_lock(&xcm_pool_lock);
	c->next_free = xcm_pool;
	xcm_pool = c;
	pthread_mutex_unlock(&xcm_pool_lock);
}

/**
 * rdma_destroy_event_channel() - drop the events still queued (the
 * application must have destroyed its ids), close the fd and keep the
 * channel for reuse. If a thread is inside rdma_get_cm_event on it, the
 * fd stays open until that thread leaves (xcm_chan_leave): it finds the
 * queue empty and waits on until a signal interrupts it or the process
 * ends, as a read() blocked on the kernel's rdma_cm file would.
 */
void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct xcm_chan *c = xcm_chan(channel);
	struct xcm_event *left;
	int pool;

	if (!channel)
		return;
	pthread_mutex_lock(&c->lock);
	left = c->head;
	if (left)
		xcm_fd_drain(c);
	c->head = c->tail = NULL;
	c->closed = 1;
	pool = xcm_chan_release_fd(c);
	pthread_mutex_unlock(&c->lock);
	xcm_release_events(left);
	if (pool)
		xcm_chan_pool_put(c);
}

/* A thread enters rdma_get_cm_event: the fd stays open while it is in. */
static void xcm_chan_enter(struct xcm_chan *c)
{
	pthread_mutex_lock(&c->lock);
	c->users++;
	pthread_mutex_unlock(&c->lock);
}

/* ... and leaves; the last one out of a destroyed channel closes the fd. */
static void xcm_chan_leave(struct xcm_chan *c)
{
	int pool, err = errno;

	pthread_mutex_lock(&c->lock);
	c->users--;
	pool = xcm_chan_release_fd(c);
	pthread_mutex_unlock(&c->lock);
	if (pool)
		xcm_chan_pool_put(c);
	errno = err;
}

/* Runs on any thread, including the engine progress thread: never blocks. */
void xcm_chan_push(struct xcm_chan *c, struct xcm_event *e)
{
	e->next = NULL;
	pthread_mutex_lock(&c->lock);
	if (c->closed) {	/* an id outlived its channel: nobody can get it */
		pthread_mutex_unlock(&c->lock);
		xiw_log(XIW_LOG_WARN, XCM_PFX "%s for a destroyed channel dropped",
			rdma_event_str(e->ev.event));
		xcm_release_events(e);
		return;
	}
	if (c->tail) {
		c->tail->next = e;
	} else {
		c->head = e;
		xcm_fd_signal(c);
	}
	c->tail = e;
	pthread_mutex_unlock(&c->lock);
}

static void xcm_count_reported(struct xcm_id *x)
{
	pthread_mutex_lock(&x->mut);
	x->reported++;
	pthread_mutex_unlock(&x->mut);
}

/*
 * The event leaves the queue and counts as reported to its owner in one
 * step under the channel lock, so rdma_destroy_id sees either "queued"
 * (and drops it) or "reported" (and waits for the ack).
 */
struct xcm_event *xcm_chan_pop(struct xcm_chan *c)
{
	struct xcm_event *e;

	pthread_mutex_lock(&c->lock);
	e = c->head;
	if (e) {
		c->head = e->next;
		e->next = NULL;
		if (!c->head) {
			c->tail = NULL;
			xcm_fd_drain(c);
		}
		xcm_count_reported(e->owner);
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

/**
 * xcm_chan_take_owned() - unlink every queued event of @owner.
 * @reported: out: @owner's reported count at that instant.
 * Return: the unlinked events as a list.
 */
struct xcm_event *xcm_chan_take_owned(struct xcm_chan *c, struct xcm_id *owner,
				      int *reported)
{
	struct xcm_event *e, *keep = NULL, *ktail = NULL, *out = NULL;

	pthread_mutex_lock(&c->lock);
	while ((e = c->head)) {
		c->head = e->next;
		e->next = NULL;
		if (e->owner == owner) {
			e->next = out;
			out = e;
			continue;
		}
		if (ktail)
			ktail->next = e;
		else
			keep = e;
		ktail = e;
	}
	if (!keep && c->tail)
		xcm_fd_drain(c);
	c->head = keep;
	c->tail = ktail;
	pthread_mutex_lock(&owner->mut);
	*reported = owner->reported;
	pthread_mutex_unlock(&owner->mut);
	pthread_mutex_unlock(&c->lock);
	return out;
}

struct xcm_event *xcm_event_new(struct xcm_id *owner,
				enum rdma_cm_event_type type, int status)
{
	struct xcm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->owner = owner;
	e->ev.id = &owner->id;
	e->ev.event = type;
	e->ev.status = status;
	return e;
}

/* Free events that never reached the application. */
void xcm_release_events(struct xcm_event *list)
{
	struct xcm_event *e;

	while ((e = list)) {
		list = e->next;
		if (e->conn)
			xiw_cm_conn_release(e->conn);
		free(e);
	}
}

static void xcm_complete(struct xcm_id *x)
{
	pthread_mutex_lock(&x->mut);
	x->completed++;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->mut);
}

/*
 * Block until the channel fd is readable, honouring O_NONBLOCK and EINTR.
 * A destroyed channel never gets an event: wait for a signal. The caller
 * is a user (xcm_chan_enter), so an fd read here stays open.
 */
static int xcm_chan_wait(struct xcm_chan *c)
{
	struct pollfd pfd = { .events = POLLIN };
	int fl, closed;

	pthread_mutex_lock(&c->lock);
	closed = c->closed;
	pfd.fd = c->ch.fd;
	pthread_mutex_unlock(&c->lock);
	if (closed) {
		poll(NULL, 0, -1);
		return -1;	/* EINTR */
	}
	fl = fcntl(pfd.fd, F_GETFL);

	if (fl < 0)
		return -1;
	if (fl & O_NONBLOCK)
		return xcm_err(EAGAIN);
	if (poll(&pfd, 1, -1) < 0)
		return -1;
	return 0;
}

/* The next event the application gets, waiting for it. Return: the event,
 * or NULL with errno (EAGAIN non-blocking, EINTR, poll/fcntl errors). */
static struct xcm_event *xcm_chan_get(struct xcm_chan *c)
{
	struct xcm_event *e;

	for (;;) {
		e = xcm_chan_pop(c);
		if (e) {
			if (!xcm_event_deliver(e))
				return e;
			/* dropped (e.g. a request we could not turn into an id) */
			xcm_complete(e->owner);
			xcm_release_events(e);
			continue;
		}
		if (xcm_chan_wait(c))
			return NULL;
	}
}

int rdma_get_cm_event(struct rdma_event_channel *channel,
		      struct rdma_cm_event **event)
{
	struct xcm_chan *c = xcm_chan(channel);
	struct xcm_event *e;

	if (!channel || !event)
		return xcm_err(EINVAL);
	/* rdma_destroy_event_channel may run meanwhile (rping v44's main
	 * does while its cm_thread waits here): hold the fd */
	xcm_chan_enter(c);
	e = xcm_chan_get(c);
	xcm_chan_leave(c);
	if (!e)
		return -1;
	*event = &e->ev;
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct xcm_event *e = (struct xcm_event *)event;

	if (!event)
		return xcm_err(EINVAL);
	xcm_complete(e->owner);
	free(e);
	return 0;
}

static const char *const xcm_event_names[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
};

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	unsigned int i = (unsigned int)event;

	if (i >= sizeof(xcm_event_names) / sizeof(xcm_event_names[0]))
		return "UNKNOWN EVENT";
	return xcm_event_names[i];
}
