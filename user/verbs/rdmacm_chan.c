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

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct xcm_chan *c;
	int ret;

	ret = xcm_devices_init();
	if (ret)
		return NULL;

	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (c->ch.fd < 0) {
		ret = errno;
		xiw_log(XIW_LOG_INFO, XCM_PFX "eventfd: %s", strerror(ret));
		free(c);
		errno = ret;
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
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

static void xcm_chan_free(struct xcm_chan *c)
{
	close(c->ch.fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/**
 * rdma_destroy_event_channel() - drop the events still queued (the
 * application must have destroyed its ids) and free the channel, or, if
 * a thread is inside rdma_get_cm_event on it, leave the freeing to that
 * thread (xcm_chan_leave). Such a thread finds the queue empty and the
 * counter at 0, so it keeps waiting on the fd (open until it leaves)
 * until it is interrupted or the process ends, as a read() blocked on
 * the kernel's rdma_cm file would.
 */
void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct xcm_chan *c = xcm_chan(channel);
	struct xcm_event *left;
	int busy;

	if (!channel)
		return;
	pthread_mutex_lock(&c->lock);
	left = c->head;
	if (left)
		xcm_fd_drain(c);
	c->head = c->tail = NULL;
	c->closed = 1;
	busy = c->users > 0;
	pthread_mutex_unlock(&c->lock);
	xcm_release_events(left);
	if (!busy)
		xcm_chan_free(c);
}

/* A thread enters rdma_get_cm_event: the channel stays allocated. */
static void xcm_chan_enter(struct xcm_chan *c)
{
	pthread_mutex_lock(&c->lock);
	c->users++;
	pthread_mutex_unlock(&c->lock);
}

/* ... and leaves; the last one out of a destroyed channel frees it. */
static void xcm_chan_leave(struct xcm_chan *c)
{
	int last, err = errno;

	pthread_mutex_lock(&c->lock);
	last = --c->users == 0 && c->closed;
	pthread_mutex_unlock(&c->lock);
	if (last)
		xcm_chan_free(c);
	errno = err;
}

/* Runs on any thread, including the engine progress thread: never blocks. */
void xcm_chan_push(struct xcm_chan *c, struct xcm_event *e)
{
	e->next = NULL;
	pthread_mutex_lock(&c->lock);
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

/* Block until the channel fd is readable, honouring O_NONBLOCK and EINTR. */
static int xcm_chan_wait(struct xcm_chan *c)
{
	struct pollfd pfd = { .fd = c->ch.fd, .events = POLLIN };
	int fl = fcntl(c->ch.fd, F_GETFL);

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
	 * does while its cm_thread waits here): hold the channel */
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
