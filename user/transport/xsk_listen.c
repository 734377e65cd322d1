// SPDX-License-Identifier: MIT
/*
 * xsk: listeners and passive opens.
 *
 * A listener registers its port in the listen map of every interface
 * (with the xiw_xdp program) that its address covers, so SYNs to it reach
 * our AF_XDP socket instead of the kernel; the kernel TCP listener that
 * llp.c always makes on the same port keeps serving other interfaces
 * and reserves the port. A SYN for no known connection makes a utcp
 * connection in LISTEN with the 4-tuple's flow registered before the
 * SYN-ACK leaves; once it is ESTABLISHED the listener's accept callback
 * gets it on the progress thread, like an accept(2) of ksock.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include "xiwarp/xiwarp.h"
#include "xsk.h"

#define LSN_MAX_PORTS 16

struct xsk_listener {
	uint32_t laddr;			/* network order; 0: any */
	uint16_t lport;			/* host order */
	xiw_llp_accept_fn fn;
	void *arg;
	int refs;			/* the owner's + one per pending conn */
	bool dead;
	int nports;
	struct xsk_port *ports[LSN_MAX_PORTS];
	struct xsk_listener *next;
};

static struct {
	pthread_mutex_t lock;
	struct xsk_listener *head;
	uint32_t next_id;
} lsn = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void lsn_put(struct xsk_listener *ls)
{
	if (!__atomic_sub_fetch(&ls->refs, 1, __ATOMIC_ACQ_REL))
		free(ls);
}

/* lsn.lock held: the live listener for a SYN to @daddr:@dport on @p. */
static struct xsk_listener *lsn_find(struct xsk_port *p, uint32_t daddr,
				     uint16_t dport)
{
	for (struct xsk_listener *ls = lsn.head; ls; ls = ls->next) {
		if (ls->dead || ls->lport != dport ||
		    (ls->laddr && ls->laddr != daddr))
			continue;
		for (int i = 0; i < ls->nports; i++)
			if (ls->ports[i] == p)
				return ls;
	}
	return NULL;
}

static void lsn_add_port(struct xsk_listener *ls, int ifindex, bool say)
{
	char why[160] = "";
	struct xsk_port *p;
	int err;

	for (int i = 0; i < ls->nports; i++)
		if (ls->ports[i]->ifindex == ifindex)
			return;
	if (ls->nports == LSN_MAX_PORTS)
		return;
	p = xsk_port_for(ifindex, why, sizeof(why));
	if (!p) {
		/* a wildcard listener says nothing about interfaces without
		 * the program; a failed set-up where it is attached (queue
		 * busy, bind refused ...) must not pass silently */
		if (say || strncmp(why, "no XDP program", 14))
			xiw_log(XIW_LOG_WARN, "XIW_TRANSPORT=xsk: listening on ifindex %d with kernel TCP only: %s; its connections use ksock (kernel TCP)",
				ifindex, why);
		return;
	}
	err = xsk_listen_add(&p->maps, ls->lport, ++lsn.next_id,
			     p->by_rxq ? XIW_XDP_XSK_BY_RXQ : p->slot);
	if (err) {
		xiw_log(XIW_LOG_WARN, "xsk: %s: listen map: %s", p->ifname,
			strerror(-err));
		return;
	}
	ls->ports[ls->nports++] = p;
}

/* Every interface with an IPv4 address (not loopback) for a wildcard. */
static void lsn_add_all(struct xsk_listener *ls)
{
	struct ifaddrs *ifa, *i;

	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    !(i->ifa_flags & IFF_LOOPBACK))
			lsn_add_port(ls, (int)if_nametoindex(i->ifa_name), false);
	freeifaddrs(ifa);
}

struct xsk_listener *xiw_xsk_listen(const struct sockaddr *addr, uint16_t port,
				    xiw_llp_accept_fn fn, void *arg)
{
	struct xsk_listener *ls;
	uint32_t laddr = 0;

	if (addr->sa_family == AF_INET)
		laddr = ((const struct sockaddr_in *)addr)->sin_addr.s_addr;
	else if (addr->sa_family != AF_INET6 ||
		 !IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)addr)->sin6_addr))
		return NULL;	/* IPv6 addresses: kernel TCP only */
	ls = calloc(1, sizeof(*ls));
	if (!ls)
		return NULL;
	ls->laddr = laddr;
	ls->lport = port;
	ls->fn = fn;
	ls->arg = arg;
	ls->refs = 1;
	pthread_mutex_lock(&lsn.lock);
	if (laddr) {
		int idx = xsk_nl_addr_if(laddr);

		if (idx)
			lsn_add_port(ls, idx, true);
	} else {
		lsn_add_all(ls);
	}
	if (!ls->nports) {
		pthread_mutex_unlock(&lsn.lock);
		free(ls);
		return NULL;
	}
	ls->next = lsn.head;
	lsn.head = ls;
	pthread_mutex_unlock(&lsn.lock);
	return ls;
}

static void lsn_close(void *arg)
{
	struct xsk_listener *ls = arg;

	pthread_mutex_lock(&lsn.lock);
	for (struct xsk_listener **pp = &lsn.head; *pp; pp = &(*pp)->next)
		if (*pp == ls) {
			*pp = ls->next;
			break;
		}
	ls->dead = true;
	for (int i = 0; i < ls->nports; i++)
		xsk_listen_del(&ls->ports[i]->maps, ls->lport);
	pthread_mutex_unlock(&lsn.lock);
}

void xiw_xsk_listener_close(struct xsk_listener *ls)
{
	if (!ls)
		return;
	/* on the progress thread: no accept callback runs concurrently */
	if (xiw_progress_sync(lsn_close, ls))
		lsn_close(ls);
	lsn_put(ls);
}

/* The Ethernet destination for a reply to @raddr: the kernel's neighbour
 * entry for the route's next hop, else the SYN's source MAC. */
static void reply_mac(struct xsk_conn *c, const uint8_t *src_mac)
{
	struct xsk_route r;
	uint8_t mac[6];

	if (!xsk_nl_route(c->raddr, &r) && r.ifindex == c->port->ifindex &&
	    !xsk_nl_neigh(r.ifindex, r.nexthop, mac, false))
		memcpy(c->eth, mac, 6);
	else
		memcpy(c->eth, src_mac, 6);
}

void xsk_listen_syn(struct xsk_port *p, const uint8_t *ip, size_t len,
		    const struct utcp_seg *seg, const uint8_t *src_mac)
{
	struct xsk_listener *ls;
	struct xsk_conn *c;
	uint32_t slot = p->by_rxq ? XIW_XDP_XSK_BY_RXQ : p->slot;

	pthread_mutex_lock(&lsn.lock);
	ls = lsn_find(p, htonl(seg->daddr), seg->dport);
	if (ls)
		__atomic_add_fetch(&ls->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lsn.lock);
	if (!ls) {
		xsk_port_rst(p, seg, src_mac);
		return;
	}
	c = xsk_conn_new(p, htonl(seg->daddr), seg->dport, htonl(seg->saddr),
			 seg->sport, true);
	if (!c)
		goto drop;
	c->lsn = ls;
	reply_mac(c, src_mac);
	if (xsk_port_conn_add(p, c))
		goto drop_conn;
	if (xsk_flow_add(&p->maps, &c->key, c->id, slot)) {
		xsk_port_conn_del(p, c);
		goto drop_conn;
	}
	c->flow_added = true;
	xsk_conn_get(c);
	xsk_conn_listen_input(c, ip, len);
	xsk_conn_deliver(c);
	xsk_conn_put(c);
	return;
drop_conn:
	c->lsn = NULL;
	xsk_conn_put(c);
drop:
	xiw_log(XIW_LOG_WARN, "xsk: %s: dropping a SYN (out of memory or connection ids)",
		p->ifname);
	lsn_put(ls);
}

/*
 * Progress thread: passive @c became ESTABLISHED. Hand it to the listener
 * (which owns it from then on: the owner's reference), or reset it if
 * the listener is gone.
 */
void xsk_listen_established(struct xsk_conn *c)
{
	struct xsk_listener *ls;
	bool dead;

	pthread_mutex_lock(&c->lock);
	ls = c->lsn;
	c->lsn = NULL;
	pthread_mutex_unlock(&c->lock);
	if (!ls)
		return;
	pthread_mutex_lock(&lsn.lock);
	dead = ls->dead;
	pthread_mutex_unlock(&lsn.lock);
	if (dead) {
		xsk_conn_reset(c);
	} else {
		pthread_mutex_lock(&c->lock);
		c->detached = false;
		c->dead = false;
		pthread_mutex_unlock(&c->lock);
		xsk_conn_get(c);	/* the owner's */
		ls->fn(ls->arg, &c->base);
	}
	lsn_put(ls);
}
