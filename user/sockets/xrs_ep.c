// SPDX-License-Identifier: MIT
/*
 * rsockets: the RDMA endpoint of a stream socket - CQ, completion channel,
 * QP, the registered buffers - and the rs_conn_data private data that
 * describes them to the peer (rdma-core 44 layout, xrs_wire.c).
 *
 * Buffers (rdma-core's layout, which the peer relies on):
 *  - sbuf: send staging ring; data is copied here, then RDMA WRITTEN;
 *  - rbuf: the receive buffer the peer writes into, handed out in halves
 *    (the first half in the private data, the next ones by credit
 *    updates written into the peer's SGL array);
 *  - target_buf: our SGL array (XRS_SGL_SIZE entries) followed by our
 *    iomap array; the peer RDMA WRITEs both;
 *  - msgbuf: one receive buffer per receive WR for the 4-byte messages
 *    (XRS_XMSG_SIZE each, so the extension's longer messages fit too).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "xiwarp/xiwarp.h"
#include "xrs_int.h"

#define XRS_ACC_RECV (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

static void xrs_set_qp_size(struct xrs *rs)
{
	uint16_t max = XIW_MAX_QP_WR - XRS_RQ_EXTRA - XRS_XZ_SQ_SLOTS;

	if (rs->sq_size > max)
		rs->sq_size = max;
	else if (rs->sq_size < XRS_QP_MIN_SIZE)
		rs->sq_size = XRS_QP_MIN_SIZE;
	if (rs->rq_size > max)
		rs->rq_size = max;
	else if (rs->rq_size < XRS_QP_MIN_SIZE)
		rs->rq_size = XRS_QP_MIN_SIZE;
	rs->rq_posted = rs->rq_size + XRS_RQ_EXTRA;
}

/*
 * The completion channel writes its 8-byte events to the socketpair end
 * B, so they make the socket's fd (A) readable: dup2 B over the channel's
 * own write fd (struct xiw_cchan, include/xiwarp/xiwarp.h). The channel
 * keeps writing to the same fd number, non-blocking as before.
 */
static int xrs_create_channel(struct xrs *rs)
{
	struct xiw_cchan *xc;

	rs->cch = ibv_create_comp_channel(rs->cm_id->verbs);
	if (!rs->cch)
		return -1;
	xc = xiw_cchan_from_ibv(rs->cch);
	if (dup2(rs->bfd, xc->wfd) < 0)
		return -1;
	return 0;
}

static int xrs_create_cq(struct xrs *rs)
{
	int cqe = rs->sq_size + XRS_XZ_SQ_SLOTS + (int)rs->rq_posted;

	if (xrs_create_channel(rs))
		return -1;
	rs->cq = ibv_create_cq(rs->cm_id->verbs, cqe, rs, rs->cch, 0);
	return rs->cq ? 0 : -1;
}

static struct ibv_mr *xrs_reg(struct xrs *rs, void *buf, size_t len, int acc)
{
	return ibv_reg_mr(rs->cm_id->pd, buf, len, acc);
}

static int xrs_init_bufs(struct xrs *rs)
{
	size_t tlen = sizeof(struct xrs_sge) * XRS_SGL_SIZE +
		      sizeof(struct xrs_iomap) * (size_t)rs->target_iomap_size;
	size_t mlen = (size_t)rs->rq_posted * XRS_XMSG_SIZE;

	/* a SrcAvail takes two entries (its copied first piece, the rest) */
	rs->rmsg_size = 2 * rs->rq_posted + 1;
	rs->rmsg = calloc(rs->rmsg_size, sizeof(*rs->rmsg));
	rs->sbuf = calloc(1, rs->sbuf_size);
	rs->rbuf = calloc(1, rs->rbuf_size);
	rs->target_buf = calloc(1, tlen);
	rs->msgbuf = calloc(1, mlen);
	if (!rs->rmsg || !rs->sbuf || !rs->rbuf || !rs->target_buf || !rs->msgbuf)
		return xrs_err(ENOMEM);
	rs->smr = xrs_reg(rs, rs->sbuf, rs->sbuf_size, IBV_ACCESS_LOCAL_WRITE);
	rs->rmr = xrs_reg(rs, rs->rbuf, rs->rbuf_size, XRS_ACC_RECV);
	rs->tmr = xrs_reg(rs, rs->target_buf, tlen, XRS_ACC_RECV);
	rs->mmr = xrs_reg(rs, rs->msgbuf, mlen, IBV_ACCESS_LOCAL_WRITE);
	if (!rs->smr || !rs->rmr || !rs->tmr || !rs->mmr)
		return -1;
	rs->target_sgl = rs->target_buf;
	if (rs->target_iomap_size)
		rs->target_iomap = (void *)((uint8_t *)rs->target_buf +
				    sizeof(struct xrs_sge) * XRS_SGL_SIZE);

	rs->sbuf_pos = 0;
	rs->sbuf_bytes_avail = rs->sbuf_size;
	rs->rbuf_free_offset = rs->rbuf_size >> 1;
	rs->rbuf_bytes_avail = rs->rbuf_size >> 1;
	rs->sqe_avail = rs->sq_size - (int)rs->ctrl_max_seqno;
	rs->rseq_comp = rs->rq_size >> 1;
	return 0;
}

/** xrs_post_recv() - post one message receive buffer. Return: 0 / -1+errno. */
int xrs_post_recv(struct xrs *rs)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	int ret;

	sge.addr = (uintptr_t)rs->msgbuf + (uint64_t)rs->msg_index * XRS_XMSG_SIZE;
	sge.length = XRS_XMSG_SIZE;
	sge.lkey = rs->mmr->lkey;
	wr.wr_id = XRS_WR_RECV | rs->msg_index;
	wr.next = NULL;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (++rs->msg_index == rs->rq_posted)
		rs->msg_index = 0;
	ret = ibv_post_recv(rs->cm_id->qp, &wr, &bad);
	return ret ? xrs_err(ret) : 0;
}

/**
 * xrs_create_ep() - CQ, QP and buffers for @rs->cm_id (address resolved
 * or connect request received), receive WRs posted.
 * Return: 0, or -1 with errno.
 */
int xrs_create_ep(struct xrs *rs)
{
	struct ibv_qp_init_attr qa;
	uint32_t i;

	xrs_set_qp_size(rs);
	rs->msg_send = rs->cm_id->verbs->device->transport_type ==
		       IBV_TRANSPORT_IWARP;
	if (xrs_create_cq(rs))
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size + XRS_XZ_SQ_SLOTS;
	qa.cap.max_recv_wr = rs->rq_posted;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	/*
	 * rdma-core needs inline >= 4 on iWARP and fails with ENOTSUP below
	 * (rstream's bandwidth phase asks for 0). Our messages and credit
	 * updates are always inline; sq_inline only decides about data.
	 */
	qa.cap.max_inline_data = rs->sq_inline > sizeof(struct xrs_iomap) ?
				 rs->sq_inline : sizeof(struct xrs_iomap);
	if (qa.cap.max_inline_data > XIW_MAX_INLINE)
		qa.cap.max_inline_data = XIW_MAX_INLINE;
	if (rdma_create_qp(rs->cm_id, NULL, &qa))
		return -1;
	if (rs->sq_inline > qa.cap.max_inline_data)
		rs->sq_inline = (uint16_t)qa.cap.max_inline_data;
	if (xrs_init_bufs(rs))
		return -1;
	for (i = 0; i < rs->rq_posted; i++)
		if (xrs_post_recv(rs))
			return -1;
	return 0;
}

static void xrs_dereg(struct ibv_mr **mr)
{
	if (*mr)
		ibv_dereg_mr(*mr);
	*mr = NULL;
}

/** xrs_free_ep() - undo xrs_create_ep (any part of it). */
void xrs_free_ep(struct xrs *rs)
{
	xrs_zc_free(rs);
	if (rs->cm_id && rs->cm_id->qp)
		rdma_destroy_qp(rs->cm_id);
	if (rs->cq) {
		xrs_drain_events(rs);
		if (rs->unack_cqe)
			ibv_ack_cq_events(rs->cq, rs->unack_cqe);
		rs->unack_cqe = 0;
		ibv_destroy_cq(rs->cq);
		rs->cq = NULL;
	}
	if (rs->cch)
		ibv_destroy_comp_channel(rs->cch);
	rs->cch = NULL;
	xrs_dereg(&rs->smr);
	xrs_dereg(&rs->rmr);
	xrs_dereg(&rs->tmr);
	xrs_dereg(&rs->mmr);
	free(rs->sbuf);
	free(rs->rbuf);
	free(rs->target_buf);
	free(rs->msgbuf);
	for (uint32_t i = 0; rs->rmsg && i < rs->rmsg_size; i++)
		free(rs->rmsg[i].stash);
	free(rs->rmsg);
	rs->sbuf = rs->rbuf = rs->msgbuf = NULL;
	rs->target_buf = NULL;
	rs->rmsg = NULL;
}

/** xrs_format_conn() - our rs_conn_data (after xrs_create_ep). */
void xrs_format_conn(struct xrs *rs, struct xrs_conn_data *cd)
{
	xrs_conn_format(cd, rs->rq_size, (uint32_t)rs->target_iomap_size,
			(uintptr_t)rs->target_buf, rs->tmr->rkey,
			(uintptr_t)rs->rbuf, rs->rmr->rkey, rs->rbuf_size >> 1,
			xrs_zc_knob_on());
}

/**
 * xrs_save_conn() - take the peer's rs_conn_data.
 * Return: 0, or -1 with errno EPROTO (malformed) / ENOTSUP (version).
 */
int xrs_save_conn(struct xrs *rs, const void *pd, size_t len)
{
	struct xrs_peer p;

	if (!pd || len < XRS_CONN_DATA_LEN || ((const uint8_t *)pd)[0] != XRS_CONN_VERSION)
		return xrs_err(ENOTSUP);
	if (xrs_conn_parse(pd, len, &p))
		return xrs_err(EPROTO);
	rs->remote_sgl.addr = p.sgl_addr;
	rs->remote_sgl.key = p.sgl_rkey;
	rs->remote_sgl.length = p.sgl_count;
	rs->remote_sge = 1;
	rs->swap = p.swap;
	if (p.iomap) {
		rs->remote_iomap.addr = p.sgl_addr +
					sizeof(struct xrs_sge) * p.sgl_count;
		rs->remote_iomap.length = p.iomap_size;
		rs->remote_iomap.key = p.sgl_rkey;
	}
	rs->target_sgl[0].addr = p.buf_addr;
	rs->target_sgl[0].key = p.buf_rkey;
	rs->target_sgl[0].length = p.buf_len;
	rs->sseq_comp = p.credits;
	xrs_zc_init(rs, p.xzc);
	return 0;
}

/**
 * xrs_set_nonblocking() - the CM channel follows the socket's O_NONBLOCK
 * while it connects (our fd A is always non-blocking: we wait with poll).
 */
int xrs_set_nonblocking(struct xrs *rs, int on)
{
	int fd = rs->cm_id ? rs->cm_id->channel->fd : -1;
	int fl;

	if (fd < 0 || (rs->state & xrs_connected))
		return 0;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}
