// SPDX-License-Identifier: MIT
/*
 * rsockets: direct data placement - riomap, riounmap, riowrite
 * (rdma-core 44's iomap protocol).
 *
 * riomap(PROT_WRITE) registers a buffer and tells the peer where it is:
 * a `struct xrs_iomap` RDMA WRITTEN into the peer's iomap array (after
 * its SGL entries) and announced with RS_OP_IOMAP_SGL, sent ahead of the
 * next data. The peer's riowrite then RDMA WRITEs straight into it at the
 * given offset, with no message: the application learns of the data its
 * own way (riostream polls the buffer's last byte).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <rdma/rsocket.h>
#include "xrs_int.h"

/* A free slot of the peer's iomap array, or -1. map_lock held. */
static int xrs_iomap_slot(struct xrs *rs)
{
	uint32_t n = rs->remote_iomap.length;

	if (!n)
		return -1;
	if (!rs->remote_iomappings) {
		rs->remote_iomappings = calloc(n, sizeof(*rs->remote_iomappings));
		if (!rs->remote_iomappings)
			return -1;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!rs->remote_iomappings[i].mr)
			return (int)i;
	return -1;
}

off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct xrs *rs = xrs_lookup(socket);
	struct xrs_iomap_mr *m;
	int access = IBV_ACCESS_LOCAL_WRITE, slot = -1;

	(void)flags;
	if (!rs)
		return xrs_err(EBADF);
	if (!rs->cm_id || !rs->cm_id->pd || (prot & ~(PROT_WRITE | PROT_NONE)))
		return xrs_err(EINVAL);
	m = calloc(1, sizeof(*m));
	if (!m)
		return xrs_err(ENOMEM);
	pthread_mutex_lock(&rs->map_lock);
	if (prot & PROT_WRITE) {
		slot = xrs_iomap_slot(rs);
		if (slot < 0) {
			pthread_mutex_unlock(&rs->map_lock);
			free(m);
			return xrs_err(ENOMEM);
		}
		access |= IBV_ACCESS_REMOTE_WRITE;
	}
	m->mr = ibv_reg_mr(rs->cm_id->pd, buf, len, access);
	if (!m->mr) {
		pthread_mutex_unlock(&rs->map_lock);
		free(m);
		return -1;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	m->offset = (uint64_t)offset;
	m->index = slot;
	m->queued = slot >= 0;
	if (slot >= 0) {
		rs->remote_iomappings[slot].mr = m->mr;
		rs->iomap_pending = true;
	}
	m->next = rs->iomap_list;
	rs->iomap_list = m;
	pthread_mutex_unlock(&rs->map_lock);
	return offset;
}

int riounmap(int socket, void *buf, size_t len)
{
	struct xrs *rs = xrs_lookup(socket);
	struct xrs_iomap_mr **p, *m;

	if (!rs)
		return xrs_err(EBADF);
	pthread_mutex_lock(&rs->map_lock);
	for (p = &rs->iomap_list; (m = *p); p = &m->next) {
		if (m->mr->addr != buf || m->mr->length != len)
			continue;
		*p = m->next;
		if (m->index >= 0)
			rs->remote_iomappings[m->index].mr = NULL;
		ibv_dereg_mr(m->mr);
		free(m);
		pthread_mutex_unlock(&rs->map_lock);
		return 0;
	}
	pthread_mutex_unlock(&rs->map_lock);
	return xrs_err(EINVAL);
}

/* Write one queued entry into the peer's iomap array. slock held. */
static int xrs_write_iomap(struct xrs *rs, struct xrs_iomap_mr *m)
{
	struct xrs_iomap iom;
	struct ibv_sge sge;
	uint32_t msg = xrs_msg_make(XRS_OP_IOMAP_SGL, (uint32_t)m->index);

	xrs_iomap_store(&iom, rs->swap, m->offset, (uintptr_t)m->mr->addr,
			m->mr->rkey, (uint32_t)m->mr->length);
	sge.addr = (uintptr_t)&iom;
	sge.length = sizeof(iom);
	sge.lkey = 0;
	rs->sseq_no++;
	xrs_cnt_sub(&rs->sqe_avail, rs->msg_send ? 2 : 1);
	xrs_cnt_sub(&rs->sbuf_bytes_avail, sizeof(iom));
	return xrs_post_write_msg(rs, &sge, 1, msg,
				  xrs_wr_id(XRS_WR_IOMAP, sizeof(iom)), IBV_SEND_INLINE,
				  rs->remote_iomap.addr + (uint64_t)m->index * sizeof(iom),
				  rs->remote_iomap.key);
}

/** xrs_send_iomaps() - send the queued riomap entries. slock held. */
int xrs_send_iomaps(struct xrs *rs, int flags)
{
	struct xrs_iomap_mr *m;
	int ret = 0;

	pthread_mutex_lock(&rs->map_lock);
	for (m = rs->iomap_list; m && !ret; m = m->next) {
		if (!m->queued)
			continue;
		if (!xrs_can_send(rs)) {
			ret = xrs_get_comp(rs, xrs_nonblocking(rs, flags), xrs_conn_can_send);
			if (ret)
				break;
			if (!(rs->state & xrs_writable)) {
				ret = xrs_err(ECONNRESET);
				break;
			}
		}
		ret = xrs_write_iomap(rs, m);
		m->queued = 0;
	}
	rs->iomap_pending = false;
	for (m = rs->iomap_list; m; m = m->next)
		if (m->queued)
			rs->iomap_pending = true;
	pthread_mutex_unlock(&rs->map_lock);
	return ret;
}

/* The peer's mapping that holds @offset (our iomap array), or false. */
static bool xrs_find_iomap(struct xrs *rs, uint64_t offset, struct xrs_iomap *out)
{
	for (int i = 0; i < rs->target_iomap_size; i++) {
		xrs_iomap_load(&rs->target_iomap[i], false, out);
		if (out->sge.length && offset >= out->offset &&
		    offset < out->offset + out->sge.length)
			return true;
	}
	return false;
}

size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct xrs *rs = xrs_lookup(socket);
	struct iovec v = { .iov_base = (void *)buf, .iov_len = count };
	const struct iovec *cur = &v;
	struct xrs_iomap iom;
	struct ibv_sge sgl[2];
	size_t left = count, off = 0;
	uint32_t xfer, avail, olen = XRS_OLAP_START_SIZE;
	uint64_t pos = (uint64_t)offset;
	bool have = false;
	int nsge, ret = 0;

	if (!rs) {
		errno = EBADF;
		return (size_t)-1;
	}
	pthread_mutex_lock(&rs->slock);
	if (rs->iomap_pending) {
		ret = xrs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	for (; left; left -= xfer, pos += xfer) {
		if (!have || pos >= iom.offset + iom.sge.length) {
			have = xrs_find_iomap(rs, pos, &iom);
			if (!have)
				break;
		}
		if (!xrs_can_send(rs)) {
			ret = xrs_get_comp(rs, xrs_nonblocking(rs, flags), xrs_conn_can_send);
			if (ret)
				break;
			if (!(rs->state & xrs_writable)) {
				ret = xrs_err(ECONNRESET);
				break;
			}
		}
		if (olen < left) {
			xfer = olen;
			if (olen < XRS_MAX_TRANSFER)
				olen <<= 1;
		} else {
			xfer = (uint32_t)left;
		}
		avail = xrs_cnt_get(&rs->sbuf_bytes_avail);
		if (xfer > avail)
			xfer = avail;
		if (xfer > iom.offset + iom.sge.length - pos)
			xfer = (uint32_t)(iom.offset + iom.sge.length - pos);
		xrs_sbuf_copy_in(rs, &cur, &off, xfer, sgl, &nsge);
		xrs_cnt_sub(&rs->sqe_avail, 1);
		xrs_cnt_sub(&rs->sbuf_bytes_avail, xfer);
		ret = xrs_post_write(rs, sgl, nsge, xrs_wr_id(XRS_WR_DIRECT, xfer),
				     xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0,
				     iom.sge.addr + pos - iom.offset, iom.sge.key);
		if (ret)
			break;
	}
out:
	pthread_mutex_unlock(&rs->slock);
	if (ret && left == count)
		return (size_t)ret;
	return count - left;
}
