// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: connection setup and teardown on the engine CM
 * (rdma_connect, rdma_accept, rdma_reject, rdma_disconnect, ...).
 *
 * iWARP needs the QP at connect/accept time: the MPA exchange hands the
 * TCP stream to it, and the engine moves it to RTS itself. IRD/ORD are
 * the rdma_conn_param responder_resources/initiator_depth, with 0xFF
 * meaning "as many as the device allows", as in rdma-core.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm_int.h"

static void xcm_set_state(struct xcm_id *x, enum xcm_state s)
{
	pthread_mutex_lock(&xcm_lock);
	x->state = s;
	pthread_mutex_unlock(&xcm_lock);
}

/* One IRD or ORD value from the application; -1 if out of range. */
static int xcm_depth(uint8_t asked, uint8_t dflt, uint8_t max)
{
	if (asked == RDMA_MAX_RESP_RES)
		return dflt < max ? dflt : max;
	if (asked > max)
		return -1;
	return asked;
}

static int xcm_depths(const struct rdma_conn_param *p, uint8_t dird,
		      uint8_t dord, uint8_t *ird, uint8_t *ord)
{
	int i = xcm_depth(p ? p->responder_resources : RDMA_MAX_RESP_RES,
			  dird, XIW_MAX_IRD);
	int o = xcm_depth(p ? p->initiator_depth : RDMA_MAX_INIT_DEPTH,
			  dord, XIW_MAX_ORD);

	if (i < 0 || o < 0) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "IRD/ORD above %d/%d",
			XIW_MAX_IRD, XIW_MAX_ORD);
		return xcm_err(EINVAL);
	}
	*ird = i;
	*ord = o;
	return 0;
}

/*
 * Outgoing private data into x->pdata: ai_connect data (rdma_create_ep)
 * first, then the caller's.
 */
static int xcm_pdata(struct xcm_id *x, const struct rdma_conn_param *p,
		     uint8_t *len)
{
	uint8_t *buf = x->pdata;
	size_t n = x->connect_len;

	if (p && p->private_data && p->private_data_len)
		n += p->private_data_len;
	if (n > XIW_MAX_PRIV_DATA)
		return xcm_err(EINVAL);
	if (x->connect_len)
		memcpy(buf, x->connect, x->connect_len);
	if (n > x->connect_len)
		memcpy(buf + x->connect_len, p->private_data, p->private_data_len);
	*len = n;
	return 0;
}

/*
 * iWARP binds the connection to a QP during MPA: the id's, or one the
 * application made itself and names by conn_param->qp_num (the kernel's
 * iw_cm looks it up the same way, iw_get_qp()).
 */
static int xcm_need_qp(struct rdma_cm_id *id, const struct rdma_conn_param *p,
		       const char *op)
{
	struct xiw_qp *qp;

	xcm_id(id)->ext_qp = NULL;
	if (id->qp)
		return 0;
	if (p && p->qp_num) {
		qp = xiw_qp_lookup(id->verbs, p->qp_num);
		if (qp) {
			xcm_id(id)->ext_qp = (struct ibv_qp *)qp;
			return 0;
		}
		xiw_log(XIW_LOG_INFO, XCM_PFX "%s: no QP %u on this device",
			op, p->qp_num);
		return xcm_err(EINVAL);
	}
	xiw_log(XIW_LOG_INFO, XCM_PFX "%s: no QP on the id (rdma_create_qp, or conn_param qp_num)", op);
	return xcm_err(EINVAL);
}

/* The engine gets the source address, but a port only if the app chose it. */
static void xcm_connect_src(struct xcm_id *x, struct sockaddr_storage *src)
{
	memcpy(src, &x->id.route.addr.src_storage, sizeof(*src));
	if (!x->auto_port)
		return;
	if (src->ss_family == AF_INET)
		((struct sockaddr_in *)src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)src)->sin6_port = 0;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct xcm_id *x = xcm_id(id);
	struct sockaddr_storage src;
	uint8_t plen, ird, ord;
	int ret;

	if (!id)
		return xcm_err(EINVAL);
	if (x->state != XCM_ROUTE_RESOLVED)
		return xcm_bad_state(x, "rdma_connect");
	if (xcm_need_qp(id, conn_param, "connect") ||
	    xcm_depths(conn_param, XIW_MAX_IRD, XIW_MAX_ORD, &ird, &ord) ||
	    xcm_pdata(x, conn_param, &plen))
		return -1;
	xcm_connect_src(x, &src);
	xcm_set_state(x, XCM_CONNECT);
	ret = xiw_cm_connect(xiw_qp_from_ibv(xcm_qp(id)), (struct sockaddr *)&src,
			     &id->route.addr.dst_addr, x->pdata, plen, ird, ord,
			     xcm_engine_handler, (void *)(uintptr_t)x->handle);
	if (ret) {
		xcm_set_state(x, XCM_ROUTE_RESOLVED);
		xiw_log(XIW_LOG_INFO, XCM_PFX "connect: %s", strerror(-ret));
		return xcm_err(-ret);
	}
	free(x->connect);
	x->connect = NULL;
	x->connect_len = 0;
	return xcm_sync_complete(x);
}

/* Take the pending request away from the id (NULL if there is none). */
static struct xiw_cm_conn *xcm_take_conn(struct xcm_id *x, enum xcm_state s)
{
	struct xiw_cm_conn *conn;

	pthread_mutex_lock(&xcm_lock);
	conn = x->state == XCM_REQ_RECV ? x->conn : NULL;
	if (conn) {
		x->conn = NULL;
		x->state = s;
	}
	pthread_mutex_unlock(&xcm_lock);
	return conn;
}

static void xcm_put_conn(struct xcm_id *x, struct xiw_cm_conn *conn)
{
	pthread_mutex_lock(&xcm_lock);
	x->conn = conn;
	x->state = XCM_REQ_RECV;
	pthread_mutex_unlock(&xcm_lock);
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct xcm_id *x = xcm_id(id);
	struct xiw_cm_conn *conn;
	uint8_t plen, ird, ord;
	int ret;

	if (!id)
		return xcm_err(EINVAL);
	if (x->state != XCM_REQ_RECV)
		return xcm_bad_state(x, "rdma_accept");
	if (xcm_need_qp(id, conn_param, "accept") ||
	    xcm_depths(conn_param, x->resp_res, x->init_depth, &ird, &ord) ||
	    xcm_pdata(x, conn_param, &plen))
		return -1;
	conn = xcm_take_conn(x, XCM_ACCEPT);
	if (!conn)
		return xcm_bad_state(x, "rdma_accept");
	ret = xiw_cm_accept(conn, xiw_qp_from_ibv(xcm_qp(id)), x->pdata, plen, ird, ord,
			    xcm_engine_handler, (void *)(uintptr_t)x->handle);
	if (ret) {
		/* still pending: the app may reject or destroy the id */
		xcm_put_conn(x, conn);
		xiw_log(XIW_LOG_INFO, XCM_PFX "accept: %s", strerror(-ret));
		return xcm_err(-ret);
	}
	return xcm_sync_complete(x);
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data,
		uint8_t private_data_len)
{
	struct xcm_id *x = xcm_id(id);
	struct xiw_cm_conn *conn;
	uint8_t plen = private_data ? private_data_len : 0;
	int ret;

	if (!id)
		return xcm_err(EINVAL);
	conn = xcm_take_conn(x, XCM_DISCONNECTED);
	if (!conn)
		return xcm_bad_state(x, "rdma_reject");
	if (plen)
		memcpy(x->pdata, private_data, plen);
	ret = xiw_cm_reject(conn, x->pdata, plen);
	if (ret) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "reject: %s", strerror(-ret));
		return xcm_err(-ret);
	}
	return 0;
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
		    uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}

/* Start the close if the connection is (being) set up. Return: was it? */
static int xcm_begin_disconnect(struct xcm_id *x)
{
	int start;

	pthread_mutex_lock(&xcm_lock);
	start = x->state == XCM_CONNECTED || x->state == XCM_CONNECT ||
		x->state == XCM_ACCEPT;
	if (start)
		x->state = XCM_DISCONNECT;
	pthread_mutex_unlock(&xcm_lock);
	return start;
}

/*
 * iWARP semantics (iw_cm_disconnect): closing a connection the peer
 * already closed, or one that never came up, succeeds and does nothing.
 * A synchronous id waits for its DISCONNECTED event if one is coming.
 */
int rdma_disconnect(struct rdma_cm_id *id)
{
	struct xcm_id *x = xcm_id(id);
	int started, ret;

	if (!id)
		return xcm_err(EINVAL);
	if (x->state == XCM_REQ_RECV || x->state == XCM_LISTEN)
		return xcm_bad_state(x, "rdma_disconnect");
	started = xcm_begin_disconnect(x) && xcm_qp(id);
	if (started) {
		ret = xiw_cm_disconnect(xiw_qp_from_ibv(xcm_qp(id)));
		if (ret && ret != -ENOTCONN) {
			xiw_log(XIW_LOG_INFO, XCM_PFX "disconnect: %s", strerror(-ret));
			return xcm_err(-ret);
		}
	}
	if (x->sync && (started || (x->disc_queued && !x->disc_seen)))
		return xcm_sync_complete(x);
	return 0;
}

int rdma_establish(struct rdma_cm_id *id)
{
	/* the engine completes iWARP connections itself: nothing to send */
	return id ? 0 : xcm_err(EINVAL);
}

int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	(void)event;
	/* only IB's COMM_EST matters to a CM; iWARP ignores it (kernel too) */
	return id ? 0 : xcm_err(EINVAL);
}
