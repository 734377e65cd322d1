// SPDX-License-Identifier: MIT
/*
 * xiwarp devices: one software RNIC per network interface that has an IPv4
 * or IPv6 address (loopback included), named "xiw_<ifname>". The GID is
 * the interface MAC in bytes 0-5 (as siw does), the node GUID its EUI-64.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include "xiwarp/xiwarp.h"

#define XIW_MAX_DEVS     64
#define XIW_VENDOR_ID    0x786977	/* "xiw" */
#define XIW_VENDOR_PART  1
#define XIW_MAX_OBJS     (1 << 16)	/* QPs, CQs, PDs, MRs per device */

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
/* every device ever seen; entries are never freed (pointers stay valid) */
static struct xiw_device *dev_all[XIW_MAX_DEVS];
static int dev_all_n;
/* the list returned by the last xiw_device_list() */
static struct xiw_device **dev_cur;
static int dev_cur_n;

static void dev_read_hw(struct xiw_device *d)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	d->mtu = 1500;
	memset(d->mac, 0, sizeof(d->mac));
	if (fd < 0)
		return;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", d->ifname);
	if (!ioctl(fd, SIOCGIFMTU, &ifr) && ifr.ifr_mtu > 0)
		d->mtu = ifr.ifr_mtu;
	if (!ioctl(fd, SIOCGIFHWADDR, &ifr))
		memcpy(d->mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
}

/* EUI-64 from a MAC (RFC 4291 App. A): flip U/L, insert ff:fe. */
static uint64_t dev_eui64(const uint8_t mac[6])
{
	uint8_t g[8] = { mac[0] ^ 0x02, mac[1], mac[2], 0xff, 0xfe,
			 mac[3], mac[4], mac[5] };
	uint64_t v;

	memcpy(&v, g, sizeof(v));	/* bytes in wire order */
	return v;
}

static struct xiw_device *dev_find_locked(const char *ifname)
{
	for (int i = 0; i < dev_all_n; i++)
		if (!strcmp(dev_all[i]->ifname, ifname))
			return dev_all[i];
	return NULL;
}

/* Find or create the device of @ifname and refresh its MTU/MAC/index. */
static struct xiw_device *dev_get_locked(const char *ifname)
{
	struct xiw_device *d = dev_find_locked(ifname);

	if (!d) {
		if (dev_all_n == XIW_MAX_DEVS || strlen(ifname) >= IF_NAMESIZE)
			return NULL;
		d = calloc(1, sizeof(*d));
		if (!d)
			return NULL;
		snprintf(d->ifname, sizeof(d->ifname), "%s", ifname);
		snprintf(d->name, sizeof(d->name), "xiw_%s", ifname);
		dev_all[dev_all_n++] = d;
	}
	d->ifindex = if_nametoindex(ifname);
	dev_read_hw(d);
	d->node_guid = dev_eui64(d->mac);
	return d;
}

static bool ifa_has_ip(const struct ifaddrs *ifa)
{
	return ifa->ifa_addr && (ifa->ifa_addr->sa_family == AF_INET ||
				 ifa->ifa_addr->sa_family == AF_INET6);
}

static bool list_has(struct xiw_device **v, int n, const struct xiw_device *d)
{
	for (int i = 0; i < n; i++)
		if (v[i] == d)
			return true;
	return false;
}

/* Publish @v as the current list unless it equals the previous one. */
static void dev_publish_locked(struct xiw_device **v, int n)
{
	if (dev_cur && n == dev_cur_n &&
	    !memcmp(v, dev_cur, n * sizeof(*v))) {
		free(v);
		return;
	}
	/* The old array is leaked on purpose: callers may still hold it. */
	dev_cur = v;
	dev_cur_n = n;
}

/**
 * xiw_device_list() - enumerate the devices (one per interface with an
 * IPv4/IPv6 address, loopback included); rescans on every call.
 * @devs: out: array of device pointers. Device pointers are valid until
 *        process exit; the array until the interface set changes.
 *
 * Return: number of devices (>= 0), -ENOMEM, or -errno from getifaddrs().
 */
int xiw_device_list(struct xiw_device ***devs)
{
	struct ifaddrs *ifs, *ifa;
	struct xiw_device **v;
	int n = 0;

	if (getifaddrs(&ifs))
		return -errno;
	v = calloc(XIW_MAX_DEVS, sizeof(*v));
	if (!v) {
		freeifaddrs(ifs);
		return -ENOMEM;
	}
	pthread_mutex_lock(&dev_lock);
	for (ifa = ifs; ifa; ifa = ifa->ifa_next) {
		struct xiw_device *d;

		if (!ifa_has_ip(ifa) || !(ifa->ifa_flags & IFF_UP))
			continue;
		d = dev_get_locked(ifa->ifa_name);
		if (d && !list_has(v, n, d))
			v[n++] = d;
	}
	dev_publish_locked(v, n);
	*devs = dev_cur;
	pthread_mutex_unlock(&dev_lock);
	freeifaddrs(ifs);
	return n;
}

static bool sa_is_loopback_or_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);

		return a == INADDR_ANY || (a >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a))
			return true;
		return IN6_IS_ADDR_V4MAPPED(a) &&
		       (a->s6_addr[12] == 127 ||
			!memcmp(&a->s6_addr[12], "\0\0\0\0", 4));
	}
	return false;
}

static bool sa_same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr,
		       sizeof(struct in6_addr));
}

/* Map an IPv4-mapped IPv6 address to plain IPv4 in @tmp. */
static const struct sockaddr *sa_unmap(const struct sockaddr *sa,
				       struct sockaddr_in *tmp)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		return sa;
	memset(tmp, 0, sizeof(*tmp));
	tmp->sin_family = AF_INET;
	memcpy(&tmp->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
	return (const struct sockaddr *)tmp;
}

static struct xiw_device *dev_by_ifname(const char *ifname)
{
	struct xiw_device **devs;
	struct xiw_device *d = NULL;
	int n = xiw_device_list(&devs);

	for (int i = 0; i < n; i++)
		if (!strcmp(devs[i]->ifname, ifname))
			d = devs[i];
	return d;
}

static struct xiw_device *dev_loopback(void)
{
	struct ifaddrs *ifs, *ifa;
	char name[IF_NAMESIZE] = "lo";

	if (!getifaddrs(&ifs)) {
		for (ifa = ifs; ifa; ifa = ifa->ifa_next)
			if (ifa_has_ip(ifa) && (ifa->ifa_flags & IFF_LOOPBACK)) {
				snprintf(name, sizeof(name), "%s", ifa->ifa_name);
				break;
			}
		freeifaddrs(ifs);
	}
	return dev_by_ifname(name);
}

/**
 * xiw_device_by_addr() - the device owning local address @sa (port ignored).
 * @sa: AF_INET or AF_INET6 (IPv4-mapped allowed). INADDR_ANY, in6addr_any,
 *      127.0.0.0/8 and ::1 map to the loopback device.
 *
 * Return: the device, or NULL with errno = ENODEV (no interface has the
 * address) / EAFNOSUPPORT (not an IP address).
 */
struct xiw_device *xiw_device_by_addr(const struct sockaddr *sa)
{
	struct sockaddr_in tmp;
	struct ifaddrs *ifs, *ifa;
	char name[IF_NAMESIZE] = "";
	struct xiw_device *d;

	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)) {
		errno = EAFNOSUPPORT;
		return NULL;
	}
	sa = sa_unmap(sa, &tmp);
	if (sa_is_loopback_or_any(sa)) {
		d = dev_loopback();
		goto out;
	}
	if (getifaddrs(&ifs))
		return NULL;
	for (ifa = ifs; ifa; ifa = ifa->ifa_next)
		if (ifa_has_ip(ifa) && sa_same_ip(ifa->ifa_addr, sa)) {
			snprintf(name, sizeof(name), "%s", ifa->ifa_name);
			break;
		}
	freeifaddrs(ifs);
	d = name[0] ? dev_by_ifname(name) : NULL;
out:
	if (!d)
		errno = ENODEV;
	return d;
}

/**
 * xiw_device_query() - fill @attr with the limits every xiwarp device
 * advertises (XIW_MAX_* in xiwarp.h). Atomics: RFC 7306 Atomic
 * Requests, executed with one 64-bit atomic instruction per request, so
 * they are atomic against every other requester of this device, not
 * against the host's own CPU writes to the region (IBV_ATOMIC_HCA).
 */
void xiw_device_query(const struct xiw_device *dev, struct ibv_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "xiwarp 0.1");
	attr->node_guid = dev->node_guid;
	attr->sys_image_guid = dev->node_guid;
	attr->max_mr_size = XIW_MAX_MR_SIZE;
	attr->page_size_cap = 4096;
	attr->vendor_id = XIW_VENDOR_ID;
	attr->vendor_part_id = XIW_VENDOR_PART;
	attr->max_qp = XIW_MAX_OBJS;
	attr->max_qp_wr = XIW_MAX_QP_WR;
	attr->max_sge = XIW_MAX_SGE;
	attr->max_sge_rd = XIW_MAX_SGE;
	attr->max_cq = XIW_MAX_OBJS;
	attr->max_cqe = XIW_MAX_CQE;
	attr->max_mr = XIW_MAX_OBJS;
	attr->max_pd = XIW_MAX_OBJS;
	attr->max_qp_rd_atom = XIW_MAX_IRD;
	attr->max_qp_init_rd_atom = XIW_MAX_ORD;
	attr->max_res_rd_atom = XIW_MAX_OBJS * XIW_MAX_IRD;
	attr->atomic_cap = IBV_ATOMIC_HCA;
	attr->max_mw = XIW_MAX_OBJS;
	attr->device_cap_flags = IBV_DEVICE_MEM_WINDOW |
				 IBV_DEVICE_MEM_WINDOW_TYPE_2B |
				 IBV_DEVICE_PORT_ACTIVE_EVENT |
				 IBV_DEVICE_SYS_IMAGE_GUID |
				 IBV_DEVICE_SRQ_RESIZE;
	attr->max_srq = XIW_MAX_OBJS;
	attr->max_srq_wr = XIW_MAX_QP_WR;
	attr->max_srq_sge = XIW_MAX_SGE;
	attr->max_pkeys = 1;
	attr->phys_port_cnt = 1;
}

static enum ibv_mtu mtu_to_enum(uint32_t mtu)
{
	if (mtu >= 4096)
		return IBV_MTU_4096;
	if (mtu >= 2048)
		return IBV_MTU_2048;
	if (mtu >= 1024)
		return IBV_MTU_1024;
	if (mtu >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

/**
 * xiw_port_query() - port 1 of @dev: ACTIVE / LinkUp while the interface
 * runs, DOWN / Disabled otherwise (as siw), Ethernet link layer, MTU enum
 * from the interface's MTU now (>= 4096 bytes -> IBV_MTU_4096),
 * width 4X at QDR speed (nominal; software device).
 */
void xiw_port_query(const struct xiw_device *dev, struct ibv_port_attr *attr)
{
	uint32_t mtu;
	bool up = xiw_device_link(dev, &mtu);

	memset(attr, 0, sizeof(*attr));
	attr->state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	attr->max_mtu = mtu_to_enum(mtu);
	attr->active_mtu = attr->max_mtu;
	attr->gid_tbl_len = 1;
	attr->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_DEVICE_MGMT_SUP;
	attr->max_msg_sz = 0x80000000u;
	attr->pkey_tbl_len = 1;
	attr->max_vl_num = 1;
	attr->active_width = 2;		/* 4X */
	attr->active_speed = 4;		/* QDR */
	attr->phys_state = up ? 5 : 3;	/* LinkUp / Disabled, as siw */
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
}

/** xiw_device_gid() - GID index 0: the MAC in bytes 0-5, rest zero. */
void xiw_device_gid(const struct xiw_device *dev, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	memcpy(gid->raw, dev->mac, 6);
}
