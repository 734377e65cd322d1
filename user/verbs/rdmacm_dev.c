// SPDX-License-Identifier: MIT
/*
 * librdmacm drop-in: device contexts.
 *
 * Like rdma-core, every device is opened once, lazily, and stays open
 * while the library is loaded; ids share the context and a default PD
 * per device. A device is found from a local IP address through the
 * engine (xiw_device_by_addr) and matched to its context by name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm_int.h"

static pthread_mutex_t xcm_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xcm_dev **xcm_devs;	/* each entry stays put: ids keep pointers */
static int xcm_ndevs;

static int xcm_dev_known(struct ibv_device *d)
{
	int i;

	for (i = 0; i < xcm_ndevs; i++)
		if (!strcmp(ibv_get_device_name(xcm_devs[i]->verbs->device),
			    ibv_get_device_name(d)))
			return 1;
	return 0;
}

static int xcm_dev_add(struct ibv_device *d)
{
	struct ibv_context *ctx;
	struct xcm_dev **n, *dev;

	ctx = ibv_open_device(d);
	if (!ctx) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "open %s: %s",
			ibv_get_device_name(d), strerror(errno));
		return -1;
	}
	dev = calloc(1, sizeof(*dev));
	n = realloc(xcm_devs, (xcm_ndevs + 1) * sizeof(*n));
	if (!dev || !n) {
		free(dev);
		if (n)
			xcm_devs = n;
		ibv_close_device(ctx);
		return xcm_err(ENOMEM);
	}
	dev->verbs = ctx;
	xcm_devs = n;
	xcm_devs[xcm_ndevs++] = dev;
	return 0;
}

/*
 * Open devices not opened yet. An open context holds its ibv_device
 * (as in rdma-core), so the list itself can go. Call with xcm_dev_lock.
 */
static int xcm_dev_scan(void)
{
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return -1;
	for (i = 0; i < n; i++)
		if (!xcm_dev_known(list[i]))
			xcm_dev_add(list[i]);
	ibv_free_device_list(list);
	if (!xcm_ndevs) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "no xiwarp devices");
		return xcm_err(ENODEV);
	}
	return 0;
}

int xcm_devices_init(void)
{
	int ret = 0;

	pthread_mutex_lock(&xcm_dev_lock);
	if (!xcm_ndevs)
		ret = xcm_dev_scan();
	pthread_mutex_unlock(&xcm_dev_lock);
	return ret;
}

static struct xcm_dev *xcm_dev_find(const char *name)
{
	int i;

	for (i = 0; i < xcm_ndevs; i++)
		if (!strcmp(ibv_get_device_name(xcm_devs[i]->verbs->device), name))
			return xcm_devs[i];
	return NULL;
}

/*
 * Loopback addresses belong to no RDMA device in the kernel: its CM
 * (cma_bind_loopback) binds them to the first device with an active
 * port. Do the same, so e.g. libfabric, which drops every device but the
 * id's, still finds the host's NIC device for "localhost". xiw_lo is
 * only the answer on a host with no other interface.
 */
static struct xcm_dev *xcm_dev_for_loopback(struct xcm_dev *lo)
{
	int i;

	for (i = 0; i < xcm_ndevs; i++)
		if (xcm_devs[i] != lo)
			return xcm_devs[i];
	return lo;
}

/**
 * xcm_dev_by_addr() - the opened device that owns local address @sa
 * (for a loopback address: see xcm_dev_for_loopback).
 * Return: device, or NULL with errno ENODEV.
 */
struct xcm_dev *xcm_dev_by_addr(const struct sockaddr *sa)
{
	struct xiw_device *xd;
	struct xcm_dev *d;

	xd = xiw_device_by_addr(sa);
	if (!xd) {
		errno = ENODEV;
		return NULL;
	}
	pthread_mutex_lock(&xcm_dev_lock);
	d = xcm_dev_find(xd->name);
	if (!d && !xcm_dev_scan())
		d = xcm_dev_find(xd->name);	/* interface appeared since */
	if (d && !strcmp(xd->ifname, "lo"))
		d = xcm_dev_for_loopback(d);
	pthread_mutex_unlock(&xcm_dev_lock);
	if (!d) {
		xiw_log(XIW_LOG_INFO, XCM_PFX "no verbs device %s", xd->name);
		errno = ENODEV;
	}
	return d;
}

struct ibv_pd *xcm_dev_pd(struct xcm_dev *dev)
{
	struct ibv_pd *pd;

	pthread_mutex_lock(&xcm_dev_lock);
	if (!dev->pd)
		dev->pd = ibv_alloc_pd(dev->verbs);
	pd = dev->pd;
	pthread_mutex_unlock(&xcm_dev_lock);
	if (!pd)
		xiw_log(XIW_LOG_INFO, XCM_PFX "default PD: %s", strerror(errno));
	return pd;
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int i;

	if (num_devices)
		*num_devices = 0;
	pthread_mutex_lock(&xcm_dev_lock);
	if (xcm_dev_scan() && !xcm_ndevs) {
		pthread_mutex_unlock(&xcm_dev_lock);
		return NULL;
	}
	list = calloc(xcm_ndevs + 1, sizeof(*list));
	if (list) {
		for (i = 0; i < xcm_ndevs; i++)
			list[i] = xcm_devs[i]->verbs;
		if (num_devices)
			*num_devices = xcm_ndevs;
	}
	pthread_mutex_unlock(&xcm_dev_lock);
	return list;
}

void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
