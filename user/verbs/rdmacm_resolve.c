// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: binding, listening and address/route resolution.
 *
 * iWARP runs over IP, so "resolution" is the kernel routing table: the
 * source is whatever local address routes to the destination, the device
 * is the xiwarp device of that address (lo for 127/8 and ::1), and a
 * route needs no lookup at all. The events are still queued, never
 * returned inline, because applications (rping) call rdma_resolve_route
 * from inside their ADDR_RESOLVED handler.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include "rdmacm_int.h"

#define XCM_BACKLOG 1024	/* the kernel's default for backlog <= 0 */

static int xcm_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
			       &in6addr_any, sizeof(struct in6_addr));
	return 0;
}

/*
 * 127.0.0.0/8 or ::1. A bind there gets no device, as a wildcard bind:
 * libfabric's verbs provider binds "localhost" when it has no source
 * address and then, finding no device on the id, takes the addresses of
 * the RDMA interfaces (vrb_fill_addr); with a device it would publish
 * 127.0.0.1 as its listening name, which no other host can reach.
 */
static int xcm_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
			       &in6addr_loopback, sizeof(struct in6_addr));
	return 0;
}

static in_port_t xcm_sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	return ((const struct sockaddr_in6 *)sa)->sin6_port;
}

static void xcm_sa_set_port(struct sockaddr_storage *ss, in_port_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = port;
	else
		((struct sockaddr_in6 *)ss)->sin6_port = port;
}

/* Bind @x to local @addr; a specific address also binds the device. */
static int xcm_bind(struct xcm_id *x, const struct sockaddr *addr)
{
	struct sockaddr_storage ss;
	struct xcm_dev *dev = NULL;

	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, addr, xcm_addrlen(addr));
	if (!xcm_is_any(addr) && !xcm_is_loopback(addr)) {
		dev = xcm_dev_by_addr(addr);
		if (!dev)
			return -1;
	}
	x->auto_port = !xcm_sa_port(addr);
	if (xcm_reserve_port(&ss)) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "bind: %s", strerror(errno));
		return -1;
	}
	if (dev)
		xcm_id_set_dev(x, dev);
	memcpy(&x->id.route.addr.src_storage, &ss, sizeof(ss));
	x->bound = 1;
	return 0;
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct xcm_id *x = xcm_id(id);

	if (!id || !xcm_addrlen(addr))
		return xcm_err(EINVAL);
	if (x->state != XCM_IDLE || x->bound)
		return xcm_bad_state(x, "rdma_bind_addr");
	return xcm_bind(x, addr);
}

static void xcm_set_listener(struct xcm_id *x, struct xiw_cm_listener *l)
{
	pthread_mutex_lock(&xcm_lock);
	x->listener = l;
	x->state = XCM_LISTEN;
	pthread_mutex_unlock(&xcm_lock);
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct xcm_id *x = xcm_id(id);
	struct sockaddr_in any = { .sin_family = AF_INET };
	struct xiw_cm_listener *l;
	struct sockaddr_storage bound;
	int ret;

	if (!id)
		return xcm_err(EINVAL);
	if (x->state == XCM_LISTEN)
		return 0;
	if (x->state != XCM_IDLE)
		return xcm_bad_state(x, "rdma_listen");
	/* like the kernel: listening unbound means the IPv4 wildcard */
	if (!x->bound && xcm_bind(x, (struct sockaddr *)&any))
		return -1;
	memset(&bound, 0, sizeof(bound));
	ret = xiw_cm_listen(&id->route.addr.src_addr,
			    backlog > 0 ? backlog : XCM_BACKLOG,
			    xcm_engine_handler, (void *)(uintptr_t)x->handle,
			    &l, &bound);
	if (ret) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "listen: %s", strerror(-ret));
		return xcm_err(-ret);
	}
	if (bound.ss_family)
		memcpy(&id->route.addr.src_storage, &bound, sizeof(bound));
	xcm_set_listener(x, l);
	return 0;
}

/**
 * xcm_adopt() - make @id (synchronous, idle) the listener of one accepted
 * TCP connection @fd carrying an MPA request (xiw_cm_adopt): its
 * CONNECT_REQUEST comes as for rdma_listen, rdma_get_request takes it.
 * Return: 0 (@fd is the engine's), or -1 with errno (@fd untouched).
 */
int xcm_adopt(struct rdma_cm_id *id, int fd)
{
	struct xcm_id *x = xcm_id(id);
	struct xiw_cm_listener *l;
	int ret;

	if (!id || x->state != XCM_IDLE)
		return xcm_err(EINVAL);
	ret = xiw_cm_adopt(fd, xcm_engine_handler, (void *)(uintptr_t)x->handle, &l);
	if (ret)
		return xcm_err(-ret);
	xcm_set_listener(x, l);
	return 0;
}

/* Pick source address and device for @dst. Return: 0 or -errno. */
static int xcm_resolve_src(struct xcm_id *x, const struct sockaddr *dst)
{
	struct sockaddr *bsrc = &x->id.route.addr.src_addr;
	struct sockaddr_storage src;
	struct xcm_dev *dev;

	memset(&src, 0, sizeof(src));
	if (x->bound && !xcm_is_any(bsrc)) {
		memcpy(&src, bsrc, xcm_addrlen(bsrc));
	} else {
		if (xcm_route_src(dst, &src))
			return -errno;
		if (x->bound)
			xcm_sa_set_port(&src, xcm_sa_port(bsrc));
	}
	dev = x->dev ? x->dev : xcm_dev_by_addr((struct sockaddr *)&src);
	if (!dev)
		return -ENODEV;
	if (!x->dev)
		xcm_id_set_dev(x, dev);
	memcpy(&x->id.route.addr.src_storage, &src, sizeof(src));
	return 0;
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
		      struct sockaddr *dst_addr, int timeout_ms)
{
	struct xcm_id *x = xcm_id(id);
	socklen_t dlen = xcm_addrlen(dst_addr);
	struct sockaddr_storage dst;
	int status;

	(void)timeout_ms;	/* resolution is immediate */
	if (!id || !dlen || (src_addr && !xcm_addrlen(src_addr)))
		return xcm_err(EINVAL);
	if (x->state != XCM_IDLE)
		return xcm_bad_state(x, "rdma_resolve_addr");
	if (src_addr && !x->bound && xcm_bind(x, src_addr))
		return -1;
	/* rsockets pass &id->route.addr.dst_addr itself: copy it first */
	memset(&dst, 0, sizeof(dst));
	memcpy(&dst, dst_addr, dlen);
	memcpy(&id->route.addr.dst_storage, &dst, sizeof(dst));
	status = xcm_resolve_src(x, (struct sockaddr *)&dst);
	if (status)
		xiw_log(XIW_LOG_INFO, XCM_PFX "resolve_addr: %s", strerror(-status));
	else
		x->state = XCM_ADDR_RESOLVED;
	xcm_post(x, status ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED,
		 status);
	return xcm_sync_complete(x);
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct xcm_id *x = xcm_id(id);

	(void)timeout_ms;
	if (!id)
		return xcm_err(EINVAL);
	if (x->state != XCM_ADDR_RESOLVED && x->state != XCM_ROUTE_RESOLVED)
		return xcm_bad_state(x, "rdma_resolve_route");
	x->state = XCM_ROUTE_RESOLVED;
	xcm_post(x, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return xcm_sync_complete(x);
}
