// SPDX-License-Identifier: MIT
/*
 * libibverbs drop-in: devices and contexts.
 *
 * Devices come from the engine (one per interface with an address). A
 * context is a full struct verbs_context (abi_compat = extended) so the
 * inline verbs in applications (ibv_query_port, ibv_query_device_ex,
 * ibv_post_send, ...) find every op they look for.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibverbs_priv.h"

#define XIW_SYSFS_IB	"/sys/class/infiniband"
#define XIW_SYSFS_UVERBS "/sys/class/infiniband_verbs"
#define XIW_MAX_VDEVS	64

static pthread_mutex_t vdev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xiw_vdev *vdevs[XIW_MAX_VDEVS];
static int nr_vdevs;

static struct xiw_vdev *vdev_new(struct xiw_device *dev)
{
	struct xiw_vdev *vd = calloc(1, sizeof(*vd));

	if (!vd)
		return NULL;
	vd->dev = dev;
	vd->ibv.node_type = IBV_NODE_RNIC;
	vd->ibv.transport_type = IBV_TRANSPORT_IWARP;
	snprintf(vd->ibv.name, sizeof(vd->ibv.name), "%s", dev->name);
	snprintf(vd->ibv.dev_name, sizeof(vd->ibv.dev_name), "%s", dev->name);
	/* Paths in the usual places; they do not exist, so sysfs reads by
	 * applications fail cleanly (-1) instead of reading a real device. */
	snprintf(vd->ibv.dev_path, sizeof(vd->ibv.dev_path), "%s/%s",
		 XIW_SYSFS_UVERBS, dev->name);
	snprintf(vd->ibv.ibdev_path, sizeof(vd->ibv.ibdev_path), "%s/%s",
		 XIW_SYSFS_IB, dev->name);
	return vd;
}

/* Caller holds vdev_lock. The engine's device pointers live until exit. */
static struct xiw_vdev *vdev_get(struct xiw_device *dev)
{
	int i;

	for (i = 0; i < nr_vdevs; i++)
		if (vdevs[i]->dev == dev)
			return vdevs[i];
	if (nr_vdevs == XIW_MAX_VDEVS)
		return NULL;
	vdevs[nr_vdevs] = vdev_new(dev);
	return vdevs[nr_vdevs] ? vdevs[nr_vdevs++] : NULL;
}

static struct xiw_vdev *vdev_from_ibv(struct ibv_device *device)
{
	return (struct xiw_vdev *)device;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct xiw_device **devs;
	struct ibv_device **list;
	int n, i, k = 0;

	n = xiw_device_list(&devs);
	if (n < 0) {
		errno = -n;
		return NULL;
	}
	list = calloc(n + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&vdev_lock);
	for (i = 0; i < n; i++) {
		struct xiw_vdev *vd = vdev_get(devs[i]);

		if (vd)
			list[k++] = &vd->ibv;
	}
	pthread_mutex_unlock(&vdev_lock);
	if (num_devices)
		*num_devices = k;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	/* node_guid is already in network byte order. */
	return vdev_from_ibv(device)->dev->node_guid;
}

int ibv_get_device_index(struct ibv_device *device)
{
	/* rdma-core returns the kernel ib device index; ours is the
	 * interface index, equally stable and unique. */
	return vdev_from_ibv(device)->dev->ifindex;
}

/*
 * The engine's asynchronous events (xiw_async_fn) go to the context's
 * async_fd, one struct ibv_async_event per write (atomic: < PIPE_BUF).
 * The write end never blocks the engine: a full pipe (an application that
 * never reads its events) drops the event, logged.
 */
static void async_to_fd(struct ibv_context *ctx, const struct ibv_async_event *ev)
{
	struct xiw_vctx *xc = xiw_vctx_from_ibv(ctx);

	if (write(xc->async_wfd, ev, sizeof(*ev)) != (ssize_t)sizeof(*ev))
		xiw_log(XIW_LOG_WARN, "async event %s dropped: async_fd not read",
			ibv_event_type_str(ev->event_type));
}

/* cmd_fd stands for /dev/infiniband/uverbsN: nothing reads it. */
static int open_fds(struct xiw_vctx *xc)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -1;
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	xc->vctx.context.async_fd = p[0];
	xc->async_wfd = p[1];
	xc->vctx.context.cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (xc->vctx.context.cmd_fd < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	return 0;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct xiw_vctx *xc = calloc(1, sizeof(*xc));
	struct ibv_context *ctx;

	if (!xc) {
		errno = ENOMEM;
		return NULL;
	}
	xc->dev = vdev_from_ibv(device)->dev;
	if (open_fds(xc)) {
		free(xc);
		return NULL;
	}
	ctx = &xc->vctx.context;
	ctx->device = device;
	ctx->num_comp_vectors = 1;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ctx->mutex, NULL);
	xc->vctx.sz = sizeof(xc->vctx);
	xiw_verbs_set_ops(&xc->vctx);
	xiw_async_set_handler(async_to_fd);
	/* PORT_ACTIVE now if the interface runs (as a port coming up does on
	 * a NIC), then PORT_ERR / PORT_ACTIVE as it goes down and up */
	if (xiw_port_watch(ctx, xc->dev)) {
		close(ctx->cmd_fd);
		close(ctx->async_fd);
		close(xc->async_wfd);
		pthread_mutex_destroy(&ctx->mutex);
		free(xc);
		errno = ENOMEM;
		return NULL;
	}
	return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
	struct xiw_vctx *xc = xiw_vctx_from_ibv(context);

	xiw_port_unwatch(context);
	close(context->cmd_fd);
	close(context->async_fd);
	close(xc->async_wfd);
	pthread_mutex_destroy(&context->mutex);
	free(xc);
	return 0;
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	errno = EOPNOTSUPP;	/* no kernel uverbs fd to share */
	return NULL;
}

int ibv_get_async_event(struct ibv_context *context,
			struct ibv_async_event *event)
{
	ssize_t n = read(context->async_fd, event, sizeof(*event));

	if (n == (ssize_t)sizeof(*event))
		return 0;
	if (n >= 0)
		errno = EIO;
	return -1;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	(void)event;	/* events own no resources */
}

/* ------------------------------------------------------------ queries --- */

int ibv_query_device(struct ibv_context *context,
		     struct ibv_device_attr *device_attr)
{
	xiw_device_query(xiw_ctx_dev(context), device_attr);
	return 0;
}

static int port_check(struct ibv_context *context, uint8_t port_num)
{
	struct ibv_device_attr attr;

	xiw_device_query(xiw_ctx_dev(context), &attr);
	return port_num >= 1 && port_num <= attr.phys_port_cnt ? 0 : EINVAL;
}

/* Exported (pre-extension) form: the old struct ends before
 * port_cap_flags2, so only that prefix is written. */
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	struct ibv_port_attr attr;

	if (port_check(context, port_num))
		return EINVAL;
	xiw_port_query(xiw_ctx_dev(context), &attr);
	memcpy(port_attr, &attr, offsetof(struct ibv_port_attr, port_cap_flags2));
	return 0;
}

static int gid_tbl_len(struct ibv_context *context)
{
	struct ibv_port_attr attr;

	xiw_port_query(xiw_ctx_dev(context), &attr);
	return attr.gid_tbl_len;
}

/*
 * GID index 0 is the MAC GID; other indices inside the table are empty
 * (zero GID, as rdma-core reports unused entries); beyond it: error.
 */
int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
		  union ibv_gid *gid)
{
	if (port_check(context, port_num) || index < 0 ||
	    index >= gid_tbl_len(context)) {
		errno = EINVAL;
		return -1;
	}
	if (index == 0)
		xiw_device_gid(xiw_ctx_dev(context), gid);
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

/* iWARP GIDs are reported as type IB (0), as the kernel does for iw_cm. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, int *type)
{
	if (port_check(context, port_num) ||
	    index >= (unsigned int)gid_tbl_len(context)) {
		errno = EINVAL;
		return -1;
	}
	*type = IBV_GID_TYPE_IB;
	return 0;
}

static void gid_entry(struct ibv_context *context, uint32_t port_num,
		      struct ibv_gid_entry *e)
{
	struct xiw_device *dev = xiw_ctx_dev(context);

	memset(e, 0, sizeof(*e));
	xiw_device_gid(dev, &e->gid);
	e->gid_index = 0;
	e->port_num = port_num;
	e->gid_type = IBV_GID_TYPE_IB;
	e->ndev_ifindex = dev->ifindex;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;

	if (flags || port_num > 255 || port_check(context, port_num) ||
	    entry_size < sizeof(e))
		return EINVAL;
	if (gid_index >= (uint32_t)gid_tbl_len(context))
		return EINVAL;
	if (gid_index != 0)
		return ENODATA;		/* empty slot, as rdma-core */
	gid_entry(context, port_num, &e);
	memcpy(entry, &e, sizeof(e));
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	struct ibv_device_attr attr;
	size_t n = 0;
	uint32_t port;

	if (flags || entry_size < sizeof(*entries))
		return -EINVAL;
	xiw_device_query(xiw_ctx_dev(context), &attr);
	for (port = 1; port <= attr.phys_port_cnt; port++) {
		if (n == max_entries)
			return -EINVAL;	/* rdma-core: table did not fit */
		gid_entry(context, port,
			  (struct ibv_gid_entry *)((char *)entries + n * entry_size));
		n++;
	}
	return n;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
		   __be16 *pkey)
{
	if (port_check(context, port_num) || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = 0xffff;		/* default P_Key, same in either byte order */
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
		       __be16 pkey)
{
	if (port_check(context, port_num) || pkey != 0xffff) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* -------------------------------------------------------------- sysfs --- */

const char *ibv_get_sysfs_path(void)
{
	return "/sys";
}

/*
 * Read @dir/@file into @buf (NUL-terminated, trailing newline dropped).
 * Return: bytes read, or -1 with errno (e.g. ENOENT for our devices,
 * which have no sysfs directory).
 */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size)
{
	char path[IBV_SYSFS_PATH_MAX * 2];
	ssize_t len;
	int fd;

	if (!size) {
		errno = EINVAL;
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len < 0)
		return -1;
	if ((size_t)len == size)
		len--;
	buf[len] = '\0';
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	return len;
}
