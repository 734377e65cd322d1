// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: addresses. rdma_getaddrinfo/rdma_freeaddrinfo (a thin
 * layer over getaddrinfo(3), as rdma-core's addrinfo.c without AF_IB and
 * ibacm), route source selection and port reservation.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "rdmacm_int.h"

socklen_t xcm_addrlen(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

/**
 * xcm_route_src() - the local address the kernel would use to reach @dst.
 * A connected UDP socket sends nothing but makes the kernel pick the route
 * and source address; this works in any network namespace.
 * Return: 0, or -1 with errno (ENETUNREACH, EAFNOSUPPORT, ...).
 */
int xcm_route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int fd, ret = 0;

	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, dst, xcm_addrlen(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &len))
		ret = -1;
	if (ret) {
		int err = errno;

		close(fd);
		return xcm_err(err);
	}
	close(fd);
	/* the UDP source port means nothing for us */
	if (src->ss_family == AF_INET)
		((struct sockaddr_in *)src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)src)->sin6_port = 0;
	return 0;
}

static in_port_t *xcm_port_ptr(struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return &((struct sockaddr_in *)ss)->sin_port;
	return &((struct sockaddr_in6 *)ss)->sin6_port;
}

/**
 * xcm_reserve_port() - fill in a port for an address bound with port 0.
 * rdma_bind_addr reports the port at once (rdma_get_src_port, libfabric's
 * fi_getname); the engine only binds at listen/connect time. Ask the
 * kernel for a free TCP port now; the engine re-binds it with
 * SO_REUSEADDR. Return: 0 or -1 with errno.
 */
int xcm_reserve_port(struct sockaddr_storage *ss)
{
	struct sockaddr_storage got;
	socklen_t len = sizeof(got);
	int fd, err;

	if (*xcm_port_ptr(ss))
		return 0;
	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)ss, xcm_addrlen((struct sockaddr *)ss)) ||
	    getsockname(fd, (struct sockaddr *)&got, &len)) {
		err = errno;
		close(fd);
		return xcm_err(err);
	}
	close(fd);
	*xcm_port_ptr(ss) = *xcm_port_ptr(&got);
	return 0;
}

/* ------------------------------------------------ rdma_getaddrinfo --- */

static void xcm_to_ai_hints(struct addrinfo *ai, const struct rdma_addrinfo *h)
{
	memset(ai, 0, sizeof(*ai));
	if (h->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (h->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	ai->ai_family = h->ai_family;
	/* iWARP is connected only: every lookup is a TCP stream */
	ai->ai_socktype = SOCK_STREAM;
	ai->ai_protocol = IPPROTO_TCP;
}

static int xcm_copy_sa(struct sockaddr **dst, socklen_t *dlen,
		       const struct sockaddr *src, socklen_t slen)
{
	*dst = malloc(slen);
	if (!*dst)
		return xcm_err(ENOMEM);
	memcpy(*dst, src, slen);
	*dlen = slen;
	return 0;
}

static int xcm_from_ai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *h,
		       const struct addrinfo *ai)
{
	char **canon;
	struct sockaddr **sa;
	socklen_t *len;

	rai->ai_qp_type = h->ai_qp_type ? h->ai_qp_type : IBV_QPT_RC;
	rai->ai_port_space = h->ai_port_space ? h->ai_port_space : RDMA_PS_TCP;
	rai->ai_family = ai->ai_family;
	if (ai->ai_flags & AI_PASSIVE) {
		rai->ai_flags = RAI_PASSIVE;
		canon = &rai->ai_src_canonname;
		sa = &rai->ai_src_addr;
		len = &rai->ai_src_len;
	} else {
		canon = &rai->ai_dst_canonname;
		sa = &rai->ai_dst_addr;
		len = &rai->ai_dst_len;
	}
	if (ai->ai_canonname) {
		*canon = strdup(ai->ai_canonname);
		if (!*canon)
			return xcm_err(ENOMEM);
	}
	return xcm_copy_sa(sa, len, ai->ai_addr, ai->ai_addrlen);
}

/* getaddrinfo(3) codes -> errno, so perror() says something useful. */
static int xcm_gai_errno(int gai)
{
	switch (gai) {
	case EAI_SYSTEM:
		return errno;
	case EAI_MEMORY:
		return ENOMEM;
	case EAI_AGAIN:
		return EAGAIN;
	case EAI_NONAME:
	case EAI_NODATA:
	case EAI_ADDRFAMILY:
		return EADDRNOTAVAIL;
	default:
		return EINVAL;
	}
}

static int xcm_lookup_name(const char *node, const char *service,
			   const struct rdma_addrinfo *h,
			   struct rdma_addrinfo *rai)
{
	struct addrinfo hints, *ai;
	int ret;

	xcm_to_ai_hints(&hints, h);
	ret = getaddrinfo(node, service, &hints, &ai);
	if (ret) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "getaddrinfo(%s, %s): %s",
			node ? node : "-", service ? service : "-",
			gai_strerror(ret));
		return xcm_err(xcm_gai_errno(ret));
	}
	ret = xcm_from_ai(rai, h, ai);
	freeaddrinfo(ai);
	return ret;
}

static int xcm_from_hints(struct rdma_addrinfo *rai,
			  const struct rdma_addrinfo *h)
{
	rai->ai_flags = h->ai_flags;
	rai->ai_family = h->ai_family;
	rai->ai_qp_type = h->ai_qp_type;
	rai->ai_port_space = h->ai_port_space;
	if (h->ai_dst_len)
		return xcm_copy_sa(&rai->ai_dst_addr, &rai->ai_dst_len,
				   h->ai_dst_addr, h->ai_dst_len);
	return 0;
}

int rdma_getaddrinfo(const char *node, const char *service,
		     const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	int ret;

	if ((!node && !service && !hints) || !res)
		return xcm_err(EINVAL);
	if (!hints)
		hints = &nohints;
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return xcm_err(ENOMEM);
	if (node || service)
		ret = xcm_lookup_name(node, service, hints, rai);
	else
		ret = xcm_from_hints(rai, hints);
	if (!ret && !rai->ai_src_len && hints->ai_src_len)
		ret = xcm_copy_sa(&rai->ai_src_addr, &rai->ai_src_len,
				  hints->ai_src_addr, hints->ai_src_len);
	if (ret) {
		int err = errno;

		rdma_freeaddrinfo(rai);
		return xcm_err(err);
	}
	*res = rai;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *rai;

	while ((rai = res)) {
		res = rai->ai_next;
		free(rai->ai_connect);
		free(rai->ai_route);
		free(rai->ai_src_canonname);
		free(rai->ai_dst_canonname);
		free(rai->ai_src_addr);
		free(rai->ai_dst_addr);
		free(rai);
	}
}
