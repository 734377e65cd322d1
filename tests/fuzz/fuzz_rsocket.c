// SPDX-License-Identifier: MIT
/*
 * libFuzzer: the rsockets codec (user/sockets/xrs_wire.c) on arbitrary
 * bytes - received messages (plain rdma-core ops and the zero-copy
 * extension's SrcAvail/SinkAvail/RdCompl/SendSm/WrCompl, with and
 * without the extension negotiated) and rs_conn_data private data.
 * Checks what the receive path relies on: an accepted extension message
 * has a known control code or a real, non-wrapping buffer; without the
 * extension its ops are refused; what parses re-encodes to the same
 * message; accepted private data has credits, an SGL and a buffer that
 * does not wrap, and survives format -> parse unchanged.
 */
#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sockets/xrs_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_msg(const uint8_t *data, size_t size, bool xzc)
{
	struct xrs_msg m, m2;
	struct xrs_xmsg x;

	if (xrs_msg_parse(data, size, xzc, &m))
		return;
	if (size < XRS_MSG_SIZE || m.op > 7 || m.data > XRS_MSG_DATA_MASK)
		abort();
	if (m.op == XRS_OP_WRITE)
		abort();	/* local bookkeeping, never accepted from the wire */
	if (!m.ext) {
		if (m.op == XRS_OP_XZ_SRCAVAIL || m.op == XRS_OP_XZ_SINKAVAIL ||
		    m.op == XRS_OP_XZ_CTRL)
			abort();
		return;
	}
	if (!xzc || size < XRS_XMSG_LEN)
		abort();
	if (m.op == XRS_OP_XZ_CTRL) {
		if (m.sub < XRS_XZ_RDCOMPL || m.sub > XRS_XZ_WRCOMPL)
			abort();
	} else if (m.op == XRS_OP_XZ_SRCAVAIL || m.op == XRS_OP_XZ_SINKAVAIL) {
		if (!m.len || m.addr + m.len < m.addr)
			abort();
	} else {
		abort();
	}
	if (m.id != (m.data & XRS_XZ_ID_MASK))
		abort();
	/* re-encode: the same message */
	xrs_xmsg_format(&x, m.op, m.data, m.aux, m.addr, m.stag, m.len);
	if (xrs_msg_parse(&x, sizeof(x), true, &m2) || m2.op != m.op ||
	    m2.data != m.data || m2.aux != m.aux || m2.addr != m.addr ||
	    m2.stag != m.stag || m2.len != m.len || m2.sub != m.sub ||
	    m2.id != m.id)
		abort();
}

static void check_conn(const uint8_t *data, size_t size)
{
	struct xrs_peer p, q;
	struct xrs_conn_data cd;

	if (xrs_conn_parse(data, size, &p))
		return;
	if (size < XRS_CONN_DATA_LEN || !p.credits || !p.sgl_count ||
	    p.sgl_count > 64 || !p.buf_len || p.buf_addr + p.buf_len < p.buf_addr)
		abort();
	/* format writes our own byte order and XRS_SGL_SIZE entries */
	if (p.swap || p.sgl_addr + XRS_SGL_SIZE * sizeof(struct xrs_sge) < p.sgl_addr)
		return;
	xrs_conn_format(&cd, p.credits, p.iomap_size, p.sgl_addr, p.sgl_rkey,
			p.buf_addr, p.buf_rkey, p.buf_len, p.xzc);
	if (xrs_conn_parse(&cd, sizeof(cd), &q))
		abort();
	if (q.credits != p.credits || q.sgl_addr != p.sgl_addr ||
	    q.sgl_rkey != p.sgl_rkey || q.buf_addr != p.buf_addr ||
	    q.buf_rkey != p.buf_rkey || q.buf_len != p.buf_len ||
	    q.xzc != p.xzc || q.sgl_count != XRS_SGL_SIZE)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_msg(data, size, false);
	check_msg(data, size, true);
	check_conn(data, size);
	return 0;
}
