// SPDX-License-Identifier: MIT
/*
 * xsk: routes and neighbours from the kernel (rtnetlink through libmnl),
 * never hard-coded. utcp frames leave through AF_XDP, below the kernel's
 * IP layer, so the transport does what ip_route_output + neigh_output do:
 *   - RTM_GETROUTE for the destination: output interface, preferred
 *     source, gateway (or the destination itself when on-link);
 *   - RTM_GETNEIGH for that next hop on that interface: the MAC. When the
 *     kernel does not know it, RTM_NEWNEIGH with NTF_USE makes it resolve
 *     (ARP) as if it had a packet to send; the caller polls again.
 * Interface addresses and link parameters come from getifaddrs/ioctl.
 * One short-lived netlink socket per query: these run at connect time.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <libmnl/libmnl.h>
#include "xiwarp/xiwarp.h"
#include "xsk.h"

/* Send @nlh and run @cb on every answer. Return: 0 or -errno. */
static int nl_query(struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	unsigned int portid, seq = (unsigned int)time(NULL);
	int ret;

	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto close_nl;
	}
	portid = mnl_socket_get_portid(nl);
	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto close_nl;
	}
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));

		if (n < 0) {
			ret = -errno;
			break;
		}
		ret = mnl_cb_run(buf, (size_t)n, seq, portid, cb, data);
		if (ret <= MNL_CB_STOP) {
			ret = ret < 0 ? -errno : 0;
			break;
		}
	}
close_nl:
	mnl_socket_close(nl);
	return ret;
}

/* ---------------------------------------------------------- routes --- */

static int route_attr(const struct nlattr *a, void *data)
{
	struct xsk_route *r = data;

	switch (mnl_attr_get_type(a)) {
	case RTA_OIF:
		if (!mnl_attr_validate(a, MNL_TYPE_U32))
			r->ifindex = (int)mnl_attr_get_u32(a);
		break;
	case RTA_GATEWAY:
		if (!mnl_attr_validate(a, MNL_TYPE_U32))
			r->nexthop = mnl_attr_get_u32(a);
		break;
	case RTA_PREFSRC:
		if (!mnl_attr_validate(a, MNL_TYPE_U32))
			r->src = mnl_attr_get_u32(a);
		break;
	}
	return MNL_CB_OK;
}

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	if (nlh->nlmsg_type == RTM_NEWROUTE)
		mnl_attr_parse(nlh, sizeof(struct rtmsg), route_attr, data);
	return MNL_CB_STOP;
}

/**
 * xsk_nl_route() - the kernel's route to @dst (IPv4, network order).
 * Return: 0 (@r filled; @r->nexthop is @dst when on-link), -errno
 * (-ENETUNREACH, -EHOSTUNREACH from the kernel).
 */
int xsk_nl_route(uint32_t dst, struct xsk_route *r)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rtm;
	int err;

	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET;
	rtm->rtm_dst_len = 32;
	mnl_attr_put_u32(nlh, RTA_DST, dst);
	memset(r, 0, sizeof(*r));
	err = nl_query(nlh, route_cb, r);
	if (err)
		return err;
	if (!r->ifindex)
		return -ENETUNREACH;
	if (!r->nexthop)
		r->nexthop = dst;
	return 0;
}

/* ------------------------------------------------------ neighbours --- */

struct neigh_q {
	uint8_t mac[6];
	bool have_mac;
	uint16_t state;
};

static int neigh_attr(const struct nlattr *a, void *data)
{
	struct neigh_q *q = data;

	if (mnl_attr_get_type(a) == NDA_LLADDR && mnl_attr_get_payload_len(a) == 6) {
		memcpy(q->mac, mnl_attr_get_payload(a), 6);
		q->have_mac = true;
	}
	return MNL_CB_OK;
}

static int neigh_cb(const struct nlmsghdr *nlh, void *data)
{
	struct neigh_q *q = data;
	const struct ndmsg *nd = mnl_nlmsg_get_payload(nlh);

	if (nlh->nlmsg_type != RTM_NEWNEIGH)
		return MNL_CB_STOP;
	q->state = nd->ndm_state;
	mnl_attr_parse(nlh, sizeof(*nd), neigh_attr, data);
	return MNL_CB_STOP;
}

static struct nlmsghdr *neigh_msg(char *buf, uint16_t type, uint16_t flags,
				  int ifindex, uint32_t ip)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ndmsg *nd;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nd = mnl_nlmsg_put_extra_header(nlh, sizeof(*nd));
	nd->ndm_family = AF_INET;
	nd->ndm_ifindex = ifindex;
	mnl_attr_put_u32(nlh, NDA_DST, ip);
	return nlh;
}

/* the kernel has a usable link-layer address in these states */
#define NUD_USABLE (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | \
		    NUD_PERMANENT | NUD_NOARP)

int xsk_nl_neigh(int ifindex, uint32_t ip, uint8_t mac[6], bool kick)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct neigh_q q = { 0 };
	struct nlmsghdr *nlh = neigh_msg(buf, RTM_GETNEIGH, 0, ifindex, ip);
	int err = nl_query(nlh, neigh_cb, &q);

	if (err && err != -ENOENT)
		return err;
	if (!err && (q.state & NUD_USABLE) && q.have_mac) {
		memcpy(mac, q.mac, 6);
		return 0;
	}
	if (!kick)
		return -EAGAIN;
	/* NTF_USE: neigh_event_send(), i.e. start ARP as a sender would */
	nlh = neigh_msg(buf, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_ACK, ifindex, ip);
	((struct ndmsg *)mnl_nlmsg_get_payload(nlh))->ndm_flags = NTF_USE;
	((struct ndmsg *)mnl_nlmsg_get_payload(nlh))->ndm_state = NUD_NONE;
	err = nl_query(nlh, NULL, NULL);
	return err ? err : -EAGAIN;
}

/* ------------------------------------------------ links, addresses --- */

int xsk_nl_link(int ifindex, uint8_t mac[6], uint32_t *mtu)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	if (!if_indextoname((unsigned int)ifindex, ifr.ifr_name) ||
	    ioctl(fd, SIOCGIFHWADDR, &ifr))
		err = -errno;
	else
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (!err && ioctl(fd, SIOCGIFMTU, &ifr))
		err = -errno;
	else if (!err)
		*mtu = (uint32_t)ifr.ifr_mtu;
	close(fd);
	return err;
}

int xsk_nl_addr_if(uint32_t ip)
{
	struct ifaddrs *ifa, *i;
	int idx = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && !idx; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == ip)
			idx = (int)if_nametoindex(i->ifa_name);
	freeifaddrs(ifa);
	return idx;
}

int xsk_nl_if_addrs(int ifindex, uint32_t *out, int max)
{
	char name[IF_NAMESIZE];
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (!if_indextoname((unsigned int)ifindex, name) || getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && n < max; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    !strcmp(i->ifa_name, name))
			out[n++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
	freeifaddrs(ifa);
	return n;
}
