// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: events coming from the engine CM.
 *
 * xcm_engine_handler runs on the engine progress thread: it turns a
 * struct xiw_cm_event into a queued rdma_cm_event and nothing else (no
 * blocking, no verbs calls). xcm_event_deliver finishes the job in the
 * application's thread when rdma_get_cm_event hands the event out: a
 * connect request becomes a new rdma_cm_id there, bound to the device
 * that owns the local address.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm_int.h"

/* The kernel's iWARP mapping (cma_iw_handler): status decides the type. */
static enum rdma_cm_event_type xcm_map_type(const struct xiw_cm_event *ev,
					    int *status)
{
	*status = ev->status;
	switch (ev->type) {
	case XIW_CM_CONNECT_REQUEST:
		*status = 0;
		return RDMA_CM_EVENT_CONNECT_REQUEST;
	case XIW_CM_ESTABLISHED:
		*status = 0;
		return RDMA_CM_EVENT_ESTABLISHED;
	case XIW_CM_REJECTED:
		if (!*status)
			*status = -ECONNREFUSED;
		return RDMA_CM_EVENT_REJECTED;
	case XIW_CM_UNREACHABLE:
		if (*status == -ECONNREFUSED || *status == -ECONNRESET)
			return RDMA_CM_EVENT_REJECTED;
		if (!*status)
			*status = -ETIMEDOUT;
		return RDMA_CM_EVENT_UNREACHABLE;
	case XIW_CM_CONNECT_ERROR:
		if (!*status)
			*status = -ECONNRESET;
		return RDMA_CM_EVENT_CONNECT_ERROR;
	case XIW_CM_DISCONNECTED:
	default:
		*status = 0;
		return RDMA_CM_EVENT_DISCONNECTED;
	}
}

static struct xcm_event *xcm_event_from_engine(struct xcm_id *x,
					       const struct xiw_cm_event *ev)
{
	enum rdma_cm_event_type type;
	struct rdma_conn_param *p;
	struct xcm_event *e;
	int status;

	type = xcm_map_type(ev, &status);
	e = xcm_event_new(x, type, status);
	if (!e)
		return NULL;
	p = &e->ev.param.conn;
	if (ev->private_data_len && ev->private_data) {
		memcpy(e->pdata, ev->private_data, ev->private_data_len);
		p->private_data = e->pdata;
		p->private_data_len = ev->private_data_len;
	}
	/* what the peer offers is what we may use: its ORD is our IRD */
	p->responder_resources = ev->ord;
	p->initiator_depth = ev->ird;
	e->local = ev->local;
	e->peer = ev->peer;
	if (ev->type == XIW_CM_CONNECT_REQUEST)
		e->conn = ev->conn;
	return e;
}

/* Call with xcm_lock held. */
static void xcm_state_on_event(struct xcm_id *x, enum rdma_cm_event_type t)
{
	switch (t) {
	case RDMA_CM_EVENT_ESTABLISHED:
		/* not if rdma_disconnect came first: it stays closing */
		if (x->state == XCM_CONNECT || x->state == XCM_ACCEPT)
			x->state = XCM_CONNECTED;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		x->disc_queued = 1;
		/* fall through */
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		x->state = XCM_DISCONNECTED;
		break;
	default:
		break;
	}
}

/* Which id an engine event is for; call with xcm_lock held. */
static struct xcm_id *xcm_event_target(uint64_t handle,
				       const struct xiw_cm_event *ev)
{
	struct xcm_id *x = xcm_lookup(handle);

	/* a pending request's connection reports through its listener */
	if (x && x->listener && ev->type != XIW_CM_CONNECT_REQUEST)
		x = ev->conn ? xcm_lookup_conn(ev->conn) : NULL;
	return x;
}

void xcm_engine_handler(void *arg, const struct xiw_cm_event *ev)
{
	uint64_t handle = (uintptr_t)arg;
	struct xcm_event *e = NULL;
	struct xcm_id *x;

	pthread_mutex_lock(&xcm_lock);
	x = xcm_event_target(handle, ev);
	if (x)
		e = xcm_event_from_engine(x, ev);
	if (e) {
		xcm_state_on_event(x, e->ev.event);
		xcm_chan_push(xcm_chan(x->id.channel), e);
	}
	pthread_mutex_unlock(&xcm_lock);
	if (!x)
		xiw_log(XIW_LOG_DEBUG, XCM_PFX "engine event %d for gone id %llu",
			ev->type, (unsigned long long)handle);
	else if (!e)
		xiw_log(XIW_LOG_WARN, XCM_PFX "out of memory: CM event %d lost",
			ev->type);
	/*
	 * A request nobody can own is left to the engine: we may not call
	 * back into the CM for this connection from its own callback.
	 */
}

static void xcm_copy_addrs(struct rdma_cm_id *id, const struct xcm_event *e)
{
	if (e->local.ss_family)
		memcpy(&id->route.addr.src_storage, &e->local, sizeof(e->local));
	if (e->peer.ss_family)
		memcpy(&id->route.addr.dst_storage, &e->peer, sizeof(e->peer));
}

/**
 * xcm_accept_request() - make the new rdma_cm_id of a connect request.
 * On failure the request stays in @e (e->conn) for the caller to release.
 * Return: 0 or -1 with errno.
 */
int xcm_accept_request(struct xcm_event *e)
{
	struct xcm_id *l = e->owner, *c;
	struct xcm_dev *dev;

	dev = xcm_dev_by_addr((struct sockaddr *)&e->local);
	if (!dev)
		return -1;
	/* children of a synchronous listener are synchronous too */
	c = xcm_id_alloc(l->sync ? NULL : l->id.channel, l->id.context,
			 l->id.ps, l->id.qp_type);
	if (!c)
		return -1;
	xcm_copy_addrs(&c->id, e);
	xcm_id_set_dev(c, dev);
	c->state = XCM_REQ_RECV;
	c->conn = e->conn;
	c->resp_res = e->ev.param.conn.responder_resources;
	c->init_depth = e->ev.param.conn.initiator_depth;
	e->conn = NULL;
	xcm_id_publish(c);
	e->ev.id = &c->id;
	e->ev.listen_id = &l->id;
	return 0;
}

/* Called by rdma_get_cm_event for each event it hands out. */
int xcm_event_deliver(struct xcm_event *e)
{
	struct xcm_id *x = e->owner;

	switch (e->ev.event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (xcm_accept_request(e)) {
			xiw_log(XIW_LOG_INFO, XCM_PFX "connect request dropped: %s",
				strerror(errno));
			return -1;
		}
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		xcm_copy_addrs(&x->id, e);
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
		x->disc_seen = 1;
		return 0;
	default:
		return 0;
	}
}
