// SPDX-License-Identifier: MIT
/*
 * Port state and port events: port 1 of a device is its interface, ACTIVE
 * while the interface is running (up with carrier, IFF_RUNNING), DOWN
 * otherwise, as siw reports a netdev. Contexts that watch their port get
 * IBV_EVENT_PORT_ACTIVE when it is active at open and whenever it comes
 * back, IBV_EVENT_PORT_ERR when it goes down: one rtnetlink socket
 * (RTMGRP_LINK) on the progress thread feeds every watching context.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include "xiw_obj.h"
#include "xiw_progress.h"

struct port_watch {
	struct ibv_context *ctx;
	const struct xiw_device *dev;
	int ifindex;
	bool up;
	struct port_watch *next;
};

static pthread_mutex_t pw_lock = PTHREAD_MUTEX_INITIALIZER;
static struct port_watch *pw_list;	/* under pw_lock */
static struct xiw_pfd pw_pfd = { .fd = -1 };
static bool pw_started;		/* the netlink socket exists (pw_lock) */

/**
 * xiw_device_link() - the live state of @dev's interface.
 * @mtu: out (may be NULL): its current MTU (the device's last known one
 *   when the interface cannot be asked).
 * Return: true if the interface is running (IFF_RUNNING: up and carrier).
 */
bool xiw_device_link(const struct xiw_device *dev, uint32_t *mtu)
{
	struct ifreq ifr;
	bool up = false;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (mtu)
		*mtu = dev->mtu;
	if (fd < 0)
		return true;	/* cannot tell: as before, active */
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev->ifname);
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr))
		up = (ifr.ifr_flags & IFF_RUNNING) != 0;
	if (mtu && !ioctl(fd, SIOCGIFMTU, &ifr) && ifr.ifr_mtu > 0)
		*mtu = (uint32_t)ifr.ifr_mtu;
	close(fd);
	return up;
}

/* Post the event of @w's new state (pw_lock held). */
static void pw_set(struct port_watch *w, bool up)
{
	if (w->up == up)
		return;
	w->up = up;
	xiw_log(XIW_LOG_INFO, "%s port 1 %s", w->dev->name,
		up ? "active" : "down");
	xiw_async_port(w->ctx, 1, up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
}

/* A link message for @ifindex: running or not (RTM_DELLINK: gone). */
static void pw_link(int ifindex, bool up)
{
	pthread_mutex_lock(&pw_lock);
	for (struct port_watch *w = pw_list; w; w = w->next)
		if (w->ifindex == ifindex)
			pw_set(w, up);
	pthread_mutex_unlock(&pw_lock);
}

/* Messages were lost (ENOBUFS): ask every watched interface. */
static void pw_recheck(void)
{
	pthread_mutex_lock(&pw_lock);
	for (struct port_watch *w = pw_list; w; w = w->next)
		pw_set(w, xiw_device_link(w->dev, NULL));
	pthread_mutex_unlock(&pw_lock);
}

/* Progress thread: drain the rtnetlink socket. */
static void pw_readable(void *arg, uint32_t events)
{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	ssize_t n;

	(void)arg;
	(void)events;
	for (;;) {
		n = recv(pw_pfd.fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == ENOBUFS) {
			pw_recheck();
			continue;
		}
		if (n <= 0)
			return;		/* EAGAIN: drained */
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf;
		     NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			struct ifinfomsg *ifi = NLMSG_DATA(h);

			if ((h->nlmsg_type != RTM_NEWLINK &&
			     h->nlmsg_type != RTM_DELLINK) ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
				continue;
			pw_link(ifi->ifi_index, h->nlmsg_type == RTM_NEWLINK &&
				(ifi->ifi_flags & IFF_RUNNING));
		}
	}
}

/* The rtnetlink socket, once per process (pw_lock held). 0 or -errno. */
static int pw_start_locked(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_LINK };
	int fd, err;

	if (pw_started)
		return 0;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	pw_pfd.fd = fd;
	pw_pfd.cb = pw_readable;
	err = xiw_progress_fd_add(&pw_pfd, EPOLLIN);
	if (err) {
		close(fd);
		pw_pfd.fd = -1;
		return err;
	}
	pw_started = true;
	return 0;
}

/**
 * xiw_port_watch() - see xiwarp.h. The netlink socket is subscribed
 * before the state is read, so a change right after open is not lost.
 */
int xiw_port_watch(struct ibv_context *ctx, const struct xiw_device *dev)
{
	struct port_watch *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	w->ctx = ctx;
	w->dev = dev;
	w->ifindex = dev->ifindex;
	pthread_mutex_lock(&pw_lock);
	err = pw_start_locked();
	if (err)
		xiw_log(XIW_LOG_WARN, "%s: no port events after open (rtnetlink: %s)",
			dev->name, strerror(-err));
	w->next = pw_list;
	pw_list = w;
	pw_set(w, xiw_device_link(dev, NULL));
	pthread_mutex_unlock(&pw_lock);
	return 0;
}

/** xiw_port_unwatch() - see xiwarp.h. */
void xiw_port_unwatch(struct ibv_context *ctx)
{
	struct port_watch **pp, *w;

	pthread_mutex_lock(&pw_lock);
	for (pp = &pw_list; (w = *pp); ) {
		if (w->ctx == ctx) {
			*pp = w->next;
			free(w);
		} else {
			pp = &w->next;
		}
	}
	pthread_mutex_unlock(&pw_lock);
}
