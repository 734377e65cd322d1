// SPDX-License-Identifier: MIT
/*
 * Asynchronous events (ibv_get_async_event(3)): the engine reports QP,
 * CQ, SRQ and port events through one handler the verbs drop-in installs
 * (it writes them to the context's async_fd). Without a handler (unit
 * tests, engine users without verbs) events are only logged.
 */
#include <stdatomic.h>
#include "xiw_obj.h"

static _Atomic(xiw_async_fn) async_handler;

/** xiw_async_set_handler() - see xiwarp.h. */
void xiw_async_set_handler(xiw_async_fn fn)
{
	atomic_store(&async_handler, fn);
}

static void async_post(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	xiw_async_fn fn = atomic_load(&async_handler);

	xiw_log(XIW_LOG_DEBUG, "async event %d", ev->event_type);
	if (fn && ctx)
		fn(ctx, ev);
}

/**
 * xiw_async_qp() - report @type (IBV_EVENT_QP_FATAL, _QP_LAST_WQE_REACHED,
 * ...) for @qp on its context. Any thread, no lock needed.
 */
void xiw_async_qp(struct xiw_qp *qp, enum ibv_event_type type)
{
	struct ibv_async_event ev = { .event_type = type };

	ev.element.qp = &qp->ibv;
	async_post(qp->ibv.context, &ev);
}

/** xiw_async_cq() - report @type (IBV_EVENT_CQ_ERR) for @cq. */
void xiw_async_cq(struct xiw_cq *cq, enum ibv_event_type type)
{
	struct ibv_async_event ev = { .event_type = type };

	ev.element.cq = &cq->ibv;
	async_post(cq->ibv.context, &ev);
}

/** xiw_async_srq() - report @type (IBV_EVENT_SRQ_LIMIT_REACHED) for @srq. */
void xiw_async_srq(struct ibv_srq *srq, enum ibv_event_type type)
{
	struct ibv_async_event ev = { .event_type = type };

	ev.element.srq = srq;
	async_post(srq->context, &ev);
}

/** xiw_async_port() - report @type (IBV_EVENT_PORT_ACTIVE, ...) on @ctx. */
void xiw_async_port(struct ibv_context *ctx, int port, enum ibv_event_type type)
{
	struct ibv_async_event ev = { .event_type = type };

	ev.element.port_num = port;
	async_post(ctx, &ev);
}
