/* SPDX-License-Identifier: MIT */
/*
 * librdmacm drop-in: internal objects shared by user/verbs/rdmacm*.c.
 *
 * Model (same as rdma-core's librdmacm, minus the kernel):
 *  - struct xcm_chan is an rdma_event_channel whose fd is an eventfd that
 *    is readable exactly while the channel's queue is non-empty.
 *  - struct xcm_id is an rdma_cm_id plus bookkeeping. Every id has a
 *    64-bit handle that is never reused; engine CM callbacks carry the
 *    handle, not a pointer, so a callback that arrives after
 *    rdma_destroy_id finds nothing and is dropped.
 *  - The engine progress thread only queues raw events (xcm_post_*).
 *    Everything that may block or allocate verbs objects (new ids for
 *    connect requests, device lookup) happens in rdma_get_cm_event, in
 *    the application's thread, as rdma-core does.
 *
 * Locking order: xcm_lock -> chan->lock -> id->mut.
 */
#ifndef XIW_RDMACM_INT_H
#define XIW_RDMACM_INT_H

#include <pthread.h>
#include <stdint.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include "xiwarp/xiwarp.h"

#define XCM_PFX "rdmacm: "

/* Convention at the public edge: -1 with errno (rdma_cm). */
static inline int xcm_err(int err)
{
	errno = err;
	return -1;
}

/* ------------------------------------------------------- devices --- */

struct xcm_dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;	/* default PD, allocated on first use */
};

int xcm_devices_init(void);
struct xcm_dev *xcm_dev_by_addr(const struct sockaddr *sa);
struct ibv_pd *xcm_dev_pd(struct xcm_dev *dev);

/* ------------------------------------------------------ channels --- */

struct xcm_id;

/**
 * struct xcm_event - one queued event; @ev is what the application sees.
 * @owner:   the id whose ack counters this event moves (for a connect
 *           request: the listener).
 * @conn:    CONNECT_REQUEST only: the pending engine connection.
 * @local, @peer: addresses reported by the engine (zero family if none).
 */
struct xcm_event {
	struct rdma_cm_event ev;	/* first: handed to the app */
	struct xcm_event *next;
	struct xcm_id *owner;
	struct xiw_cm_conn *conn;
	struct sockaddr_storage local, peer;
	uint8_t pdata[XIW_MAX_PRIV_DATA];
};

/**
 * struct xcm_chan - an rdma_event_channel and its event queue.
 * @lock:   protects @ch.fd and everything below except @next_free;
 *          initialised once, never destroyed.
 * @users:  threads inside rdma_get_cm_event on this channel: the fd stays
 *          open while there are any.
 * @closed: rdma_destroy_event_channel ran (no events, the last user
 *          closes the fd); cleared when the channel is reused.
 * @next_free: the pool of destroyed channels (xcm_pool_lock).
 *
 * A thread blocked in read() on the kernel's rdma_cm file holds the file,
 * and a stale fd only ever names a file or none: destroying a channel
 * under a thread that waits on it, or just before a thread calls in (rping
 * v44: main() tears down while its cm_thread still loops on the channel),
 * is harmless there. Here @users keeps the fd, and never freeing a
 * channel (destroyed ones are reused) keeps the memory, valid for them.
 */
struct xcm_chan {
	struct rdma_event_channel ch;	/* first: handed to the app */
	pthread_mutex_t lock;
	struct xcm_event *head, *tail;
	int users;
	int closed;
	struct xcm_chan *next_free;
};

static inline struct xcm_chan *xcm_chan(struct rdma_event_channel *ch)
{
	return (struct xcm_chan *)ch;
}

void xcm_chan_push(struct xcm_chan *c, struct xcm_event *e);
struct xcm_event *xcm_chan_pop(struct xcm_chan *c);
struct xcm_event *xcm_chan_take_owned(struct xcm_chan *c, struct xcm_id *owner,
				      int *reported);
struct xcm_event *xcm_event_new(struct xcm_id *owner,
				enum rdma_cm_event_type type, int status);
int xcm_event_deliver(struct xcm_event *e);
void xcm_release_events(struct xcm_event *list);

/* ----------------------------------------------------------- ids --- */

enum xcm_state {
	XCM_IDLE,
	XCM_ADDR_RESOLVED,
	XCM_ROUTE_RESOLVED,
	XCM_LISTEN,
	XCM_CONNECT,		/* active: MPA request sent, no answer yet */
	XCM_REQ_RECV,		/* passive: request pending accept/reject */
	XCM_ACCEPT,		/* passive: accepted, not yet established */
	XCM_CONNECTED,
	XCM_DISCONNECT,		/* rdma_disconnect called, waiting for close */
	XCM_DISCONNECTED,
};

/**
 * struct xcm_id - an rdma_cm_id and what librdmacm keeps next to it.
 * @state:     protected by xcm_lock (the progress thread moves it).
 * @reported, @completed: events handed to / acked by the application,
 *             protected by @mut; rdma_destroy_id waits for equality.
 * @sync:      synchronous id: @id.channel is private, every call waits
 *             for its own event (rdma_create_ep, channel NULL).
 * @bound:     the application chose the source address (rdma_bind_addr
 *             or an explicit rdma_resolve_addr source).
 * @auto_port: the source port was picked by us, not the application;
 *             an active open lets the kernel choose again.
 * @disc_queued, @disc_seen: a DISCONNECTED event was queued / handed out
 *             (synchronous rdma_disconnect waits for it only once).
 * @conn:      passive side: the connection from the request, owned here
 *             until rdma_accept/rdma_reject/rdma_destroy_id.
 * @resp_res, @init_depth: defaults for rdma_accept, from the request.
 * @connect:   private data from rdma_addrinfo.ai_connect, sent first.
 * @pdata:     outgoing private data; lives as long as the id because the
 *             engine may send the MPA frame after connect/accept return.
 */
struct xcm_id {
	struct rdma_cm_id id;		/* first: handed to the app */
	uint64_t handle;
	struct xcm_id *next;		/* global id list, under xcm_lock */
	pthread_mutex_t mut;
	pthread_cond_t cond;
	int reported, completed;
	int sync;
	enum xcm_state state;
	int bound, auto_port;
	int disc_queued, disc_seen;
	struct xcm_dev *dev;
	struct xiw_cm_listener *listener;
	struct xiw_cm_conn *conn;
	struct ibv_qp_init_attr *qp_init_attr;
	struct ibv_qp *ext_qp;		/* the app's own QP, by conn_param->qp_num */
	uint8_t resp_res, init_depth;
	void *connect;
	uint8_t connect_len;
	uint8_t pdata[XIW_MAX_PRIV_DATA];
};

static inline struct xcm_id *xcm_id(struct rdma_cm_id *id)
{
	return (struct xcm_id *)id;
}

/* The QP the connection runs on: the id's, or the app's own (rping -q). */
static inline struct ibv_qp *xcm_qp(struct rdma_cm_id *id)
{
	return id->qp ? id->qp : xcm_id(id)->ext_qp;
}

extern pthread_mutex_t xcm_lock;

struct xcm_id *xcm_id_alloc(struct rdma_event_channel *ch, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qpt);
void xcm_id_publish(struct xcm_id *x);
struct xcm_id *xcm_lookup(uint64_t handle);
struct xcm_id *xcm_lookup_conn(struct xiw_cm_conn *conn);
void xcm_id_set_dev(struct xcm_id *x, struct xcm_dev *dev);
int xcm_sync_complete(struct xcm_id *x);
void xcm_post(struct xcm_id *x, enum rdma_cm_event_type type, int status);
int xcm_bad_state(const struct xcm_id *x, const char *op);

int xcm_adopt(struct rdma_cm_id *id, int fd);

/* engine glue (rdmacm_cm.c) */
void xcm_engine_handler(void *arg, const struct xiw_cm_event *ev);
int xcm_accept_request(struct xcm_event *e);

/* addresses (rdmacm_addr.c) */
socklen_t xcm_addrlen(const struct sockaddr *sa);
int xcm_route_src(const struct sockaddr *dst, struct sockaddr_storage *src);
int xcm_reserve_port(struct sockaddr_storage *ss);

#endif /* XIW_RDMACM_INT_H */
