// SPDX-License-Identifier: MIT
/*
 * rsockets: options and names - rsetsockopt, rgetsockopt, rfcntl,
 * rgetpeername, rgetsockname. rdma-core 44's set, plus SO_RCVTIMEO /
 * SO_SNDTIMEO (honoured by rrecv/rsend) and TCP_INFO (a plausible
 * struct tcp_info for programs that ask, e.g. iperf3) for the preload.
 *
 * SO_KEEPALIVE is recorded but sends no keepalive messages: xiwarp's TCP
 * connection underneath has its own keepalive if the kernel is asked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>
#include "xrs_int.h"

static int xrs_int_opt(const void *optval, socklen_t optlen, int *v)
{
	if (!optval || optlen < sizeof(int))
		return xrs_err(EINVAL);
	memcpy(v, optval, sizeof(*v));
	return 0;
}

static int xrs_tv_ms(const void *optval, socklen_t optlen, int *ms)
{
	struct timeval tv;

	if (!optval || optlen < sizeof(tv))
		return xrs_err(EINVAL);
	memcpy(&tv, optval, sizeof(tv));
	if (tv.tv_sec < 0 || tv.tv_usec < 0 || tv.tv_usec >= 1000000)
		return xrs_err(EDOM);
	*ms = (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
	return 0;
}

static void xrs_bit(uint64_t *opts, int optname, int on)
{
	if (on)
		*opts |= 1ULL << optname;
	else
		*opts &= ~(1ULL << optname);
}

static int xrs_set_sol_socket(struct xrs *rs, int optname, const void *optval,
			      socklen_t optlen)
{
	struct linger lg;
	int v = 0;

	switch (optname) {
	case SO_REUSEADDR:
		if (xrs_int_opt(optval, optlen, &v))
			return -1;
		rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
				&v, sizeof(v));
		xrs_bit(&rs->so_opts, optname, v);
		return 0;
	case SO_RCVBUF:
		if (xrs_int_opt(optval, optlen, &v))
			return -1;
		if (!rs->rbuf && v > 0)
			rs->rbuf_size = (uint32_t)v << 1;
		if (rs->rbuf_size < XRS_SNDLOWAT * 2)
			rs->rbuf_size = XRS_SNDLOWAT * 2;
		return 0;
	case SO_SNDBUF:
		if (xrs_int_opt(optval, optlen, &v))
			return -1;
		if (!rs->sbuf && v > 0)
			rs->sbuf_size = (uint32_t)v << 1;
		if (rs->sbuf_size < XRS_SNDLOWAT)
			rs->sbuf_size = XRS_SNDLOWAT << 1;
		return 0;
	case SO_LINGER:
		if (!optval || optlen < sizeof(lg))
			return xrs_err(EINVAL);
		memcpy(&lg, optval, sizeof(lg));
		rs->linger_on = lg.l_onoff;
		rs->linger_s = lg.l_linger;
		return 0;
	case SO_KEEPALIVE:
	case SO_OOBINLINE:
		if (xrs_int_opt(optval, optlen, &v))
			return -1;
		xrs_bit(&rs->so_opts, optname, v);
		return 0;
	case SO_RCVTIMEO:
		return xrs_tv_ms(optval, optlen, &rs->rcvtimeo_ms);
	case SO_SNDTIMEO:
		return xrs_tv_ms(optval, optlen, &rs->sndtimeo_ms);
	default:
		return xrs_err(ENOTSUP);
	}
}

static int xrs_set_tcp(struct xrs *rs, int optname, const void *optval,
		       socklen_t optlen)
{
	int v = 0;

	switch (optname) {
	case TCP_KEEPCNT:
	case TCP_KEEPINTVL:
	case TCP_MAXSEG:
		return 0;	/* rdma-core: not applicable, accepted */
	case TCP_KEEPIDLE:
		if (xrs_int_opt(optval, optlen, &v))
			return -1;
		if (v <= 0)
			return xrs_err(EINVAL);
		rs->keepalive_time = (unsigned int)v;
		return 0;
	case TCP_NODELAY:
		if (xrs_int_opt(optval, optlen, &v))
			return -1;
		xrs_bit(&rs->tcp_opts, optname, v);
		return 0;
	default:
		return xrs_err(ENOTSUP);
	}
}

/* SOL_RDMA: only before the connection exists (sizes of its queues). */
static int xrs_set_rdma(struct xrs *rs, int optname, const void *optval,
			socklen_t optlen)
{
	int v = 0;

	if (rs->state >= xrs_opening)
		return xrs_err(EINVAL);
	if (optname != RDMA_ROUTE && xrs_int_opt(optval, optlen, &v))
		return -1;
	switch (optname) {
	case RDMA_SQSIZE:
		rs->sq_size = (uint16_t)((unsigned int)v > XRS_QP_MAX_SIZE ? XRS_QP_MAX_SIZE : (unsigned int)v);
		return 0;
	case RDMA_RQSIZE:
		rs->rq_size = (uint16_t)((unsigned int)v > XRS_QP_MAX_SIZE ? XRS_QP_MAX_SIZE : (unsigned int)v);
		return 0;
	case RDMA_INLINE:
		rs->sq_inline = (uint16_t)((unsigned int)v > XRS_QP_MAX_SIZE ? XRS_QP_MAX_SIZE : (unsigned int)v);
		return 0;
	case RDMA_IOMAPSIZE:
		rs->target_iomap_size = xrs_scale_to_value(
			(uint8_t)xrs_value_to_scale(v, 8), 8);
		return 0;
	case RDMA_ROUTE:
		return 0;	/* IB path records mean nothing on iWARP */
	default:
		return xrs_err(ENOTSUP);
	}
}

int rsetsockopt(int socket, int level, int optname, const void *optval,
		socklen_t optlen)
{
	struct xrs *rs = xrs_lookup(socket);
	int v = 0;

	if (!rs)
		return xrs_err(EBADF);
	switch (level) {
	case SOL_SOCKET:
		return xrs_set_sol_socket(rs, optname, optval, optlen);
	case IPPROTO_TCP:
		return xrs_set_tcp(rs, optname, optval, optlen);
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			return xrs_err(ENOTSUP);
		if (xrs_int_opt(optval, optlen, &v))
			return -1;
		rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
				&v, sizeof(v));
		xrs_bit(&rs->ipv6_opts, optname, v);
		return 0;
	case SOL_RDMA:
		return xrs_set_rdma(rs, optname, optval, optlen);
	default:
		return xrs_err(ENOTSUP);
	}
}

static void xrs_put_int(void *optval, socklen_t *optlen, int v)
{
	socklen_t n = *optlen < sizeof(int) ? *optlen : sizeof(int);

	memcpy(optval, &v, n);
	*optlen = n;
}

static void xrs_put_tv(void *optval, socklen_t *optlen, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	socklen_t n = *optlen < sizeof(tv) ? *optlen : sizeof(tv);

	memcpy(optval, &tv, n);
	*optlen = n;
}

/* TCP_INFO: what we know; enough for programs that print or poll it. */
static void xrs_put_tcp_info(struct xrs *rs, void *optval, socklen_t *optlen)
{
	struct tcp_info ti;
	socklen_t n = *optlen < sizeof(ti) ? *optlen : sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	ti.tcpi_state = (rs->state & xrs_connected) ? TCP_ESTABLISHED : TCP_CLOSE;
	ti.tcpi_snd_mss = 1448;
	ti.tcpi_rcv_mss = 1448;
	ti.tcpi_pmtu = 1500;
	ti.tcpi_snd_cwnd = 10;
	ti.tcpi_rtt = 50;
	ti.tcpi_rttvar = 25;
	ti.tcpi_snd_ssthresh = 0x7fffffff;
	ti.tcpi_rcv_space = rs->rbuf_size;
	ti.tcpi_unacked = rs->sq_size - (uint32_t)xrs_cnt_get(&rs->sqe_avail);
	memcpy(optval, &ti, n);
	*optlen = n;
}

static int xrs_get_sol_socket(struct xrs *rs, int optname, void *optval,
			      socklen_t *optlen)
{
	struct linger lg;

	switch (optname) {
	case SO_REUSEADDR:
	case SO_KEEPALIVE:
	case SO_OOBINLINE:
		xrs_put_int(optval, optlen, !!(rs->so_opts & (1ULL << optname)));
		return 0;
	case SO_RCVBUF:
		xrs_put_int(optval, optlen, (int)rs->rbuf_size);
		return 0;
	case SO_SNDBUF:
		xrs_put_int(optval, optlen, (int)rs->sbuf_size);
		return 0;
	case SO_LINGER:
		lg.l_onoff = rs->linger_on;
		lg.l_linger = rs->linger_s;
		if (*optlen > sizeof(lg))
			*optlen = sizeof(lg);
		memcpy(optval, &lg, *optlen);
		return 0;
	case SO_ERROR:
		xrs_put_int(optval, optlen, rs->err);
		rs->err = 0;
		return 0;
	case SO_TYPE:
		xrs_put_int(optval, optlen, SOCK_STREAM);
		return 0;
	case SO_ACCEPTCONN:
		xrs_put_int(optval, optlen, rs->state == xrs_listening);
		return 0;
	case SO_RCVTIMEO:
		xrs_put_tv(optval, optlen, rs->rcvtimeo_ms);
		return 0;
	case SO_SNDTIMEO:
		xrs_put_tv(optval, optlen, rs->sndtimeo_ms);
		return 0;
	default:
		return xrs_err(ENOTSUP);
	}
}

static int xrs_get_tcp(struct xrs *rs, int optname, void *optval,
		       socklen_t *optlen)
{
	switch (optname) {
	case TCP_KEEPCNT:
	case TCP_KEEPINTVL:
		xrs_put_int(optval, optlen, 1);
		return 0;
	case TCP_KEEPIDLE:
		xrs_put_int(optval, optlen, (int)rs->keepalive_time);
		return 0;
	case TCP_NODELAY:
		xrs_put_int(optval, optlen, !!(rs->tcp_opts & (1ULL << optname)));
		return 0;
	case TCP_MAXSEG:
		xrs_put_int(optval, optlen, 1448);
		return 0;
	case TCP_INFO:
		xrs_put_tcp_info(rs, optval, optlen);
		return 0;
	default:
		return xrs_err(ENOTSUP);
	}
}

static int xrs_get_rdma(struct xrs *rs, int optname, void *optval,
			socklen_t *optlen)
{
	switch (optname) {
	case RDMA_SQSIZE:
		xrs_put_int(optval, optlen, rs->sq_size);
		return 0;
	case RDMA_RQSIZE:
		xrs_put_int(optval, optlen, rs->rq_size);
		return 0;
	case RDMA_INLINE:
		xrs_put_int(optval, optlen, rs->sq_inline);
		return 0;
	case RDMA_IOMAPSIZE:
		xrs_put_int(optval, optlen, rs->target_iomap_size);
		return 0;
	default:
		return xrs_err(ENOTSUP);
	}
}

int rgetsockopt(int socket, int level, int optname, void *optval,
		socklen_t *optlen)
{
	struct xrs *rs = xrs_lookup(socket);

	if (!rs)
		return xrs_err(EBADF);
	if (!optval || !optlen)
		return xrs_err(EFAULT);
	switch (level) {
	case SOL_SOCKET:
		return xrs_get_sol_socket(rs, optname, optval, optlen);
	case IPPROTO_TCP:
		return xrs_get_tcp(rs, optname, optval, optlen);
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			return xrs_err(ENOTSUP);
		xrs_put_int(optval, optlen, !!(rs->ipv6_opts & (1ULL << optname)));
		return 0;
	case SOL_RDMA:
		return xrs_get_rdma(rs, optname, optval, optlen);
	default:
		return xrs_err(ENOTSUP);
	}
}

int rfcntl(int socket, int cmd, ...)
{
	struct xrs *rs = xrs_lookup(socket);
	va_list args;
	int param, ret = 0;

	if (!rs)
		return xrs_err(EBADF);
	va_start(args, cmd);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fd_flags | O_RDWR;
		break;
	case F_SETFL:
		param = va_arg(args, int);
		if ((rs->fd_flags & O_NONBLOCK) != (param & O_NONBLOCK))
			ret = xrs_set_nonblocking(rs, param & O_NONBLOCK);
		if (!ret)
			rs->fd_flags = param & ~O_ACCMODE;
		break;
	default:
		ret = xrs_err(ENOTSUP);
		break;
	}
	va_end(args);
	return ret;
}

static void xrs_copy_addr(struct sockaddr *dst, socklen_t *len,
			  const struct sockaddr *src)
{
	socklen_t size = src->sa_family == AF_INET6 ?
			 sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	socklen_t n = *len < size ? *len : size;

	memcpy(dst, src, n);
	*len = size;
}

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct xrs *rs = xrs_lookup(socket);

	if (!rs)
		return xrs_err(EBADF);
	if (!addr || !addrlen)
		return xrs_err(EFAULT);
	if (rs->state < xrs_opening)
		return xrs_err(ENOTCONN);
	xrs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->cm_id));
	return 0;
}

int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct xrs *rs = xrs_lookup(socket);

	if (!rs)
		return xrs_err(EBADF);
	if (!addr || !addrlen)
		return xrs_err(EFAULT);
	xrs_copy_addr(addr, addrlen, rdma_get_local_addr(rs->cm_id));
	return 0;
}
