// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: rdma_cm_id life cycle (create, destroy, migrate),
 * the handle table the engine callbacks go through, synchronous-id
 * completion, options and port queries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm_int.h"

pthread_mutex_t xcm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xcm_id *xcm_ids;		/* every live id, under xcm_lock */
static uint64_t xcm_next_handle = 1;	/* never reused */

struct xcm_id *xcm_id_alloc(struct rdma_event_channel *ch, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct xcm_id *x;

	if (xcm_devices_init())
		return NULL;
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	if (!ch) {
		/* synchronous id: a private channel, as rdma-core does */
		ch = rdma_create_event_channel();
		if (!ch) {
			free(x);
			return NULL;
		}
		x->sync = 1;
	}
	x->id.channel = ch;
	x->id.context = context;
	x->id.ps = ps;
	x->id.qp_type = qpt;
	pthread_mutex_init(&x->mut, NULL);
	pthread_cond_init(&x->cond, NULL);
	return x;
}

/* Make @x reachable from engine callbacks. */
void xcm_id_publish(struct xcm_id *x)
{
	pthread_mutex_lock(&xcm_lock);
	x->handle = xcm_next_handle++;
	x->next = xcm_ids;
	xcm_ids = x;
	pthread_mutex_unlock(&xcm_lock);
}

static void xcm_id_unpublish(struct xcm_id *x)
{
	struct xcm_id **p;

	pthread_mutex_lock(&xcm_lock);
	for (p = &xcm_ids; *p; p = &(*p)->next) {
		if (*p == x) {
			*p = x->next;
			break;
		}
	}
	pthread_mutex_unlock(&xcm_lock);
}

/* Call with xcm_lock held. */
struct xcm_id *xcm_lookup(uint64_t handle)
{
	struct xcm_id *x;

	for (x = xcm_ids; x; x = x->next)
		if (x->handle == handle)
			return x;
	return NULL;
}

/* Call with xcm_lock held: the passive id that owns a pending @conn. */
struct xcm_id *xcm_lookup_conn(struct xiw_cm_conn *conn)
{
	struct xcm_id *x;

	for (x = xcm_ids; x; x = x->next)
		if (x->conn == conn)
			return x;
	return NULL;
}

static void xcm_id_free(struct xcm_id *x)
{
	if (x->sync)
		rdma_destroy_event_channel(x->id.channel);
	pthread_cond_destroy(&x->cond);
	pthread_mutex_destroy(&x->mut);
	free(x->qp_init_attr);
	free(x->connect);
	free(x);
}

void xcm_id_set_dev(struct xcm_id *x, struct xcm_dev *dev)
{
	x->dev = dev;
	x->id.verbs = dev->verbs;
	x->id.port_num = 1;
	if (!x->id.pd)
		x->id.pd = xcm_dev_pd(dev);
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
		   void *context, enum rdma_port_space ps)
{
	enum ibv_qp_type qpt;
	struct xcm_id *x;

	if (!id)
		return xcm_err(EINVAL);
	/* UD ids can exist (address lookups); a UD QP will fail on iWARP */
	qpt = (ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB) ? IBV_QPT_UD : IBV_QPT_RC;
	x = xcm_id_alloc(channel, context, ps, qpt);
	if (!x)
		return -1;
	xcm_id_publish(x);
	*id = &x->id;
	return 0;
}

static const char *const xcm_state_names[] = {
	[XCM_IDLE] = "idle",
	[XCM_ADDR_RESOLVED] = "address resolved",
	[XCM_ROUTE_RESOLVED] = "route resolved",
	[XCM_LISTEN] = "listening",
	[XCM_CONNECT] = "connecting",
	[XCM_REQ_RECV] = "request received",
	[XCM_ACCEPT] = "accepting",
	[XCM_CONNECTED] = "connected",
	[XCM_DISCONNECT] = "disconnecting",
	[XCM_DISCONNECTED] = "disconnected",
};

/* An operation the id's state does not allow: EINVAL, as the kernel. */
int xcm_bad_state(const struct xcm_id *x, const char *op)
{
	xiw_log(XIW_LOG_INFO, XCM_PFX "%s: not allowed on an id that is %s%s",
		op, xcm_state_names[x->state],
		x->bound && x->state == XCM_IDLE ? " (bound)" : "");
	return xcm_err(EINVAL);
}

/* Queue a locally generated event (address/route resolution). */
void xcm_post(struct xcm_id *x, enum rdma_cm_event_type type, int status)
{
	struct xcm_event *e = xcm_event_new(x, type, status);

	if (!e) {
		xiw_log(XIW_LOG_WARN, XCM_PFX "out of memory: %s lost",
			rdma_event_str(type));
		return;
	}
	xcm_chan_push(xcm_chan(x->id.channel), e);
}

/*
 * Synchronous ids: wait for the event that ends the current operation
 * and keep it in id->event until the next operation (rdma-core's
 * ucma_complete). A failed operation returns -1 with errno from status.
 */
int xcm_sync_complete(struct xcm_id *x)
{
	struct rdma_cm_event *ev;
	int ret;

	if (!x->sync)
		return 0;
	if (x->id.event) {
		rdma_ack_cm_event(x->id.event);
		x->id.event = NULL;
	}
	ret = rdma_get_cm_event(x->id.channel, &x->id.event);
	if (ret)
		return ret;
	ev = x->id.event;
	if (!ev->status)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return xcm_err(ECONNREFUSED);
	return xcm_err(ev->status < 0 ? -ev->status : ev->status);
}

/* Drop what never reached the application, wait for acks of the rest. */
static void xcm_drain_events(struct xcm_id *x)
{
	struct xcm_event *lost;
	int reported;

	lost = xcm_chan_take_owned(xcm_chan(x->id.channel), x, &reported);
	xcm_release_events(lost);
	pthread_mutex_lock(&x->mut);
	while (x->completed < reported)
		pthread_cond_wait(&x->cond, &x->mut);
	pthread_mutex_unlock(&x->mut);
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct xcm_id *x = xcm_id(id);

	if (!id)
		return xcm_err(EINVAL);
	if (x->id.event) {
		rdma_ack_cm_event(x->id.event);
		x->id.event = NULL;
	}
	/* no callbacks for the listener after this returns */
	if (x->listener)
		xiw_cm_listener_destroy(x->listener);
	xcm_id_unpublish(x);
	if (x->conn) {
		/* request neither accepted nor rejected */
		xiw_cm_conn_release(x->conn);
		x->conn = NULL;
	}
	xcm_drain_events(x);
	xcm_id_free(x);
	return 0;
}

/* Move still-queued events of @x to channel @to (under xcm_lock). */
static void xcm_move_events(struct xcm_id *x, struct xcm_chan *to, int *reported)
{
	struct xcm_event *e, *list;

	list = xcm_chan_take_owned(xcm_chan(x->id.channel), x, reported);
	while ((e = list)) {
		list = e->next;
		xcm_chan_push(to, e);
	}
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct xcm_id *x = xcm_id(id);
	struct rdma_event_channel *old = id->channel;
	int sync = !channel, reported;

	if (x->sync && !channel)
		return xcm_err(EINVAL);
	if (sync) {
		channel = rdma_create_event_channel();
		if (!channel)
			return -1;
	}
	if (x->sync && x->id.event) {
		rdma_ack_cm_event(x->id.event);
		x->id.event = NULL;
	}
	/* xcm_lock keeps the progress thread from queueing on @old meanwhile */
	pthread_mutex_lock(&xcm_lock);
	xcm_move_events(x, xcm_chan(channel), &reported);
	id->channel = channel;
	pthread_mutex_unlock(&xcm_lock);

	pthread_mutex_lock(&x->mut);
	while (x->completed < reported)
		pthread_cond_wait(&x->cond, &x->mut);
	pthread_mutex_unlock(&x->mut);
	if (x->sync)
		rdma_destroy_event_channel(old);
	x->sync = sync;
	return 0;
}

int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
		    void *optval, size_t optlen)
{
	if (!id || !optval)
		return xcm_err(EINVAL);
	if (level == RDMA_OPTION_IB) {
		xiw_log(XIW_LOG_DEBUG, XCM_PFX "IB option %d on iWARP", optname);
		return xcm_err(EINVAL);
	}
	if (level != RDMA_OPTION_ID)
		return xcm_err(ENOSYS);
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t))
			return xcm_err(EINVAL);
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		/* the engine listens with SO_REUSEADDR anyway */
		if (optlen != sizeof(int))
			return xcm_err(EINVAL);
		return 0;
	default:
		return xcm_err(ENOSYS);
	}
}

static __be16 xcm_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	return 0;
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return xcm_port(&id->route.addr.src_addr);
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return xcm_port(&id->route.addr.dst_addr);
}
