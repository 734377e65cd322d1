// SPDX-License-Identifier: MIT
/*
 * xsk: active open. The route to the destination decides the interface;
 * it must carry the xiw_xdp program (else the caller falls back to
 * ksock). The local port is reserved with a bound kernel TCP socket that
 * is never connected: no other socket of the host gets that port (bind
 * and connect skip ports with such a bind bucket), and the kernel never
 * sees the connection's segments, because XDP steers its 4-tuple to our
 * AF_XDP socket (the flow is in the map before the SYN leaves). The next
 * hop's MAC comes from the kernel's neighbour table; if it is unknown the
 * kernel is asked to resolve it (NTF_USE) and the SYN waits, polling
 * every RESOLVE_MS for up to RESOLVE_TRIES rounds.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include "xiwarp/xiwarp.h"
#include "xsk.h"

#define RESOLVE_MS	2
#define RESOLVE_TRIES	1500	/* ~3 s, like the kernel's ARP retries */
#define RESOLVE_KICK	100	/* ask the kernel again every ~200 ms */

/* Tell once per interface why xsk does not serve it. */
static void log_fallback(int ifindex, const char *why)
{
	static int told[32];
	static int ntold;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	char name[IF_NAMESIZE] = "?";
	bool say = true;

	pthread_mutex_lock(&lock);
	for (int i = 0; i < ntold; i++)
		if (told[i] == ifindex)
			say = false;
	if (say && ntold < 32)
		told[ntold++] = ifindex;
	pthread_mutex_unlock(&lock);
	if (!say)
		return;
	if_indextoname((unsigned int)ifindex, name);
	xiw_log(XIW_LOG_WARN, "XIW_TRANSPORT=xsk: interface %s: %s; its connections use ksock (kernel TCP)",
		name, why);
}

/* Bind a kernel TCP socket to @laddr:@lport (0: any free port). */
static int reserve_port(uint32_t laddr, uint16_t *lport)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = laddr,
				  .sin_port = htons(*lport) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len)) {
		err = -errno;
		close(fd);
		return err;
	}
	*lport = ntohs(sa.sin_port);
	return fd;
}

/* Send the SYN (the neighbour is known). */
static void conn_start(struct xsk_conn *c)
{
	pthread_mutex_lock(&c->lock);
	if (!c->dead && utcp_connect(c->tcp, xiw_now_ns()))
		xiw_log(XIW_LOG_WARN, "xsk: utcp_connect failed");
	xsk_port_timer(c->port, utcp_next_deadline(c->tcp));
	pthread_mutex_unlock(&c->lock);
	xsk_port_flush(c->port);
}

/* lock held: the connect failed before TCP started. */
static void conn_fail_locked(struct xsk_conn *c, int err)
{
	c->ev |= XSK_EV_CLOSED;
	c->err = err;
}

static void resolve_tick(void *arg)
{
	struct xsk_conn *c = arg;
	struct xsk_route r;
	uint8_t mac[6];
	int err;

	pthread_mutex_lock(&c->lock);
	if (!c->resolving) {	/* closed meanwhile; the reference went too */
		pthread_mutex_unlock(&c->lock);
		return;
	}
	pthread_mutex_unlock(&c->lock);
	err = xsk_nl_route(c->raddr, &r);
	if (!err)
		err = xsk_nl_neigh(r.ifindex, r.nexthop, mac,
				   c->resolve_tries % RESOLVE_KICK == 0);
	pthread_mutex_lock(&c->lock);
	c->resolve_tries++;
	if (err == -EAGAIN && c->resolve_tries < RESOLVE_TRIES) {
		xiw_progress_timer_arm(&c->resolve_tmr, RESOLVE_MS, resolve_tick, c);
		pthread_mutex_unlock(&c->lock);
		return;
	}
	c->resolving = false;
	if (err) {
		xiw_log(XIW_LOG_INFO, "xsk: no link-layer address for the next hop: %s",
			err == -EAGAIN ? "ARP got no answer" : strerror(-err));
		conn_fail_locked(c, -EHOSTUNREACH);
	} else {
		memcpy(c->eth, mac, 6);
	}
	pthread_mutex_unlock(&c->lock);
	if (!err)
		conn_start(c);
	xsk_conn_deliver(c);
	xsk_conn_put(c);	/* the timer's reference */
}

static void resolve_arm(void *arg)
{
	struct xsk_conn *c = arg;

	xiw_progress_timer_arm(&c->resolve_tmr, RESOLVE_MS, resolve_tick, c);
}

/* The 4-tuple's flow entry: segments of it reach our socket from now on. */
static int flow_register(struct xsk_conn *c)
{
	struct xsk_port *p = c->port;
	int err = xsk_port_conn_add(p, c);

	if (err)
		return err;
	err = xsk_flow_add(&p->maps, &c->key, c->id,
			   p->by_rxq ? XIW_XDP_XSK_BY_RXQ : p->slot);
	if (err) {
		xsk_port_conn_del(p, c);
		return err;
	}
	c->flow_added = true;
	return 0;
}

int xiw_xsk_connect(const struct sockaddr *src, const struct sockaddr *dst,
		    const struct xiw_llp_cb *cb, void *arg, struct xiw_llp **out)
{
	const struct sockaddr_in *d = (const struct sockaddr_in *)dst;
	const struct sockaddr_in *s = (const struct sockaddr_in *)src;
	struct xsk_route r;
	struct xsk_port *p;
	struct xsk_conn *c;
	uint32_t laddr;
	uint16_t lport = 0;
	uint8_t mac[6];
	char why[160] = "";
	int fd, err;

	if (dst->sa_family != AF_INET || (src && src->sa_family != AF_INET))
		return -EOPNOTSUPP;	/* utcp is IPv4 only */
	if (xsk_nl_route(d->sin_addr.s_addr, &r))
		return -EOPNOTSUPP;	/* ksock reports the real error */
	p = xsk_port_for(r.ifindex, why, sizeof(why));
	if (!p) {
		log_fallback(r.ifindex, why);
		return -EOPNOTSUPP;
	}
	laddr = s && s->sin_addr.s_addr ? s->sin_addr.s_addr : r.src;
	if (s)
		lport = ntohs(s->sin_port);
	if (!laddr && xsk_nl_if_addrs(r.ifindex, &laddr, 1) != 1)
		return -EADDRNOTAVAIL;
	fd = reserve_port(laddr, &lport);
	if (fd < 0)
		return fd;
	c = xsk_conn_new(p, laddr, lport, d->sin_addr.s_addr, ntohs(d->sin_port), false);
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->port_fd = fd;
	err = flow_register(c);
	if (err) {
		xsk_conn_put(c);
		return err;
	}
	xsk_conn_get(c);	/* the owner's */
	c->cb = cb;
	c->arg = arg;
	c->connecting = true;
	*out = &c->base;
	err = xsk_nl_neigh(r.ifindex, r.nexthop, mac, true);
	if (!err) {
		memcpy(c->eth, mac, 6);
		conn_start(c);
		return 0;
	}
	if (err != -EAGAIN) {
		pthread_mutex_lock(&c->lock);
		conn_fail_locked(c, err);
		pthread_mutex_unlock(&c->lock);
		xsk_port_queue_ev(p, c);
		return 0;
	}
	c->resolving = true;
	xsk_conn_get(c);	/* the timer's */
	if (xiw_progress_is_self())
		resolve_arm(c);
	else if (xiw_progress_sync(resolve_arm, c))
		resolve_arm(c);
	return 0;
}
