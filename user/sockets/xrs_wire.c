// SPDX-License-Identifier: MIT
/*
 * rsockets wire codec: rs_conn_data private data and received messages
 * (include/xiwarp/wire/rsocket.h). Everything that comes from the peer is
 * checked here before any state depends on it.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include "xrs_wire.h"

int xrs_conn_parse(const void *pd, size_t len, struct xrs_peer *p)
{
	struct xrs_conn_data cd;

	if (!pd || len < sizeof(cd))
		return -EPROTO;
	memcpy(&cd, pd, sizeof(cd));
	if (cd.version != XRS_CONN_VERSION)
		return -EPROTO;
	memset(p, 0, sizeof(*p));
	p->swap = !!(cd.flags & XRS_CONN_FLAG_NET) != xrs_host_is_net();
	p->iomap = !!(cd.flags & XRS_CONN_FLAG_IOMAP);
	p->xzc = (cd.flags & XRS_CONN_FLAG_XZC) &&
		 cd.reserved[0] == XRS_XZC_VERSION;
	p->credits = be16toh(cd.credits);
	p->sgl_addr = be64toh(cd.target_sgl.addr);
	p->sgl_rkey = be32toh(cd.target_sgl.key);
	p->sgl_count = be32toh(cd.target_sgl.length);
	p->buf_addr = be64toh(cd.data_buf.addr);
	p->buf_rkey = be32toh(cd.data_buf.key);
	p->buf_len = be32toh(cd.data_buf.length);
	if (p->iomap)
		p->iomap_size = (uint32_t)xrs_scale_to_value(cd.target_iomap_size, 8);
	/* an SGL array we can address and a buffer half we can write to */
	if (!p->credits || !p->sgl_count || p->sgl_count > 64 || !p->buf_len ||
	    p->buf_addr + p->buf_len < p->buf_addr ||
	    p->sgl_addr + (uint64_t)p->sgl_count * sizeof(struct xrs_sge) < p->sgl_addr)
		return -EPROTO;
	return 0;
}

void xrs_conn_format(struct xrs_conn_data *cd, uint16_t credits,
		     uint32_t iomap, uint64_t sgl_addr, uint32_t sgl_rkey,
		     uint64_t buf_addr, uint32_t buf_rkey, uint32_t buf_len,
		     bool xzc)
{
	memset(cd, 0, sizeof(*cd));
	cd->version = XRS_CONN_VERSION;
	cd->flags = XRS_CONN_FLAG_IOMAP | (xrs_host_is_net() ? XRS_CONN_FLAG_NET : 0);
	if (xzc) {
		cd->flags |= XRS_CONN_FLAG_XZC;
		cd->reserved[0] = XRS_XZC_VERSION;
	}
	cd->credits = htobe16(credits);
	cd->target_iomap_size = (uint8_t)xrs_value_to_scale((int)iomap, 8);
	cd->target_sgl.addr = htobe64(sgl_addr);
	cd->target_sgl.key = htobe32(sgl_rkey);
	cd->target_sgl.length = htobe32(XRS_SGL_SIZE);
	cd->data_buf.addr = htobe64(buf_addr);
	cd->data_buf.key = htobe32(buf_rkey);
	cd->data_buf.length = htobe32(buf_len);
}

static int xmsg_parse(const void *buf, size_t len, struct xrs_msg *m)
{
	struct xrs_xmsg x;

	if (len < sizeof(x))
		return -EPROTO;
	memcpy(&x, buf, sizeof(x));
	m->ext = true;
	m->aux = le32toh(x.aux);
	m->addr = le64toh(x.addr);
	m->stag = le32toh(x.stag);
	m->len = le32toh(x.len);
	m->id = (uint16_t)(m->data & XRS_XZ_ID_MASK);
	if (m->op == XRS_OP_XZ_CTRL) {
		m->sub = (m->data >> 16) & 0x1FFF;
		if (m->sub < XRS_XZ_RDCOMPL || m->sub > XRS_XZ_WRCOMPL)
			return -EPROTO;
		return 0;
	}
	/* SrcAvail / SinkAvail: a real buffer */
	if (!m->len || m->addr + m->len < m->addr)
		return -EPROTO;
	return 0;
}

int xrs_msg_parse(const void *buf, size_t len, bool xzc, struct xrs_msg *m)
{
	uint32_t w;

	memset(m, 0, sizeof(*m));
	if (!buf || len < XRS_MSG_SIZE)
		return -EPROTO;
	memcpy(&w, buf, sizeof(w));	/* host order, as rdma-core sends it */
	m->op = xrs_msg_op(w);
	m->data = xrs_msg_data(w);
	switch (m->op) {
	case XRS_OP_DATA:
	case XRS_OP_SGL:
	case XRS_OP_IOMAP_SGL:
	case XRS_OP_CTRL:
		return 0;
	case XRS_OP_XZ_SRCAVAIL:
	case XRS_OP_XZ_SINKAVAIL:
	case XRS_OP_XZ_CTRL:
		return xzc ? xmsg_parse(buf, len, m) : -EPROTO;
	default:		/* XRS_OP_WRITE: local bookkeeping only */
		return -EPROTO;
	}
}

void xrs_xmsg_format(struct xrs_xmsg *x, unsigned int op, uint32_t data,
		     uint32_t aux, uint64_t addr, uint32_t stag, uint32_t len)
{
	x->hdr = xrs_msg_make(op, data);
	x->aux = htole32(aux);
	x->addr = htole64(addr);
	x->stag = htole32(stag);
	x->len = htole32(len);
}

void xrs_sge_load(const volatile struct xrs_sge *src, bool swap,
		  struct xrs_sge *out)
{
	out->addr = src->addr;
	out->key = src->key;
	out->length = src->length;
	if (swap) {
		out->addr = __builtin_bswap64(out->addr);
		out->key = __builtin_bswap32(out->key);
		out->length = __builtin_bswap32(out->length);
	}
}

void xrs_sge_store(struct xrs_sge *dst, bool swap, uint64_t addr,
		   uint32_t key, uint32_t length)
{
	dst->addr = swap ? __builtin_bswap64(addr) : addr;
	dst->key = swap ? __builtin_bswap32(key) : key;
	dst->length = swap ? __builtin_bswap32(length) : length;
}

void xrs_iomap_load(const volatile struct xrs_iomap *src, bool swap,
		    struct xrs_iomap *out)
{
	out->offset = swap ? __builtin_bswap64(src->offset) : src->offset;
	xrs_sge_load(&src->sge, swap, &out->sge);
}

void xrs_iomap_store(struct xrs_iomap *dst, bool swap, uint64_t offset,
		     uint64_t addr, uint32_t key, uint32_t length)
{
	dst->offset = swap ? __builtin_bswap64(offset) : offset;
	xrs_sge_store(&dst->sge, swap, addr, key, length);
}
