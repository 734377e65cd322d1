/* SPDX-License-Identifier: MIT */
/*
 * rsockets wire codec (include/xiwarp/wire/rsocket.h): private data and
 * received messages, decoded and checked. Pure functions, no state: the
 * fuzz harness (tests/fuzz/fuzz_rsocket.c) feeds them arbitrary bytes.
 */
#ifndef XRS_WIRE_H
#define XRS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "xiwarp/wire/rsocket.h"

/**
 * struct xrs_peer - what the peer announced in its private data.
 * @swap:       the peer's host byte order differs from ours: SGL and
 *              iomap entries we write for it must be byte-swapped.
 * @xzc:        the peer speaks the zero-copy extension (flag and version).
 * @credits:    its receive WRs (messages we may have in flight).
 * @iomap_size: entries in its iomap array (0: none).
 * @sgl_*:      its SGL array: where our credit updates go.
 * @buf_*:      the first half of its receive buffer.
 */
struct xrs_peer {
	bool swap, iomap, xzc;
	uint16_t credits;
	uint32_t iomap_size;
	uint64_t sgl_addr;
	uint32_t sgl_rkey, sgl_count;
	uint64_t buf_addr;
	uint32_t buf_rkey, buf_len;
};

/**
 * xrs_conn_parse() - decode and check rs_conn_data private data.
 * @pd, @len: the private data of the MPA request or reply.
 * Return: 0, or -EPROTO (too short, version not 1, no credits, no SGL,
 * empty or wrapping receive buffer).
 */
int xrs_conn_parse(const void *pd, size_t len, struct xrs_peer *p);

/**
 * xrs_conn_format() - our private data.
 * @sgl_addr/@sgl_rkey: our SGL array (XRS_SGL_SIZE entries, then the
 *                      iomap array); @iomap: iomap entries;
 * @buf_*: the half of our receive buffer the peer may fill first;
 * @xzc: offer the zero-copy extension.
 */
void xrs_conn_format(struct xrs_conn_data *cd, uint16_t credits,
		     uint32_t iomap, uint64_t sgl_addr, uint32_t sgl_rkey,
		     uint64_t buf_addr, uint32_t buf_rkey, uint32_t buf_len,
		     bool xzc);

/**
 * struct xrs_msg - a received message.
 * @op, @data: the message word. Extension messages (@ext) also carry
 * @aux, @addr, @stag, @len (see rsocket.h); for XRS_OP_XZ_CTRL @sub is
 * the XRS_XZ_* code and @id the transfer id.
 */
struct xrs_msg {
	unsigned int op;
	uint32_t data;
	bool ext;
	unsigned int sub;
	uint16_t id;
	uint32_t aux;
	uint64_t addr;
	uint32_t stag, len;
};

/**
 * xrs_msg_parse() - decode one received message.
 * @buf, @len: the receive buffer and the SEND's byte count.
 * @xzc: the extension was negotiated (else its ops are errors).
 * Return: 0, or -EPROTO: shorter than a message word, op 2 (never sent),
 * an extension op without the extension or shorter than struct xrs_xmsg,
 * an unknown XZ_CTRL code, a SrcAvail/SinkAvail with no bytes or whose
 * buffer wraps the address space.
 */
int xrs_msg_parse(const void *buf, size_t len, bool xzc, struct xrs_msg *m);

/** xrs_xmsg_format() - an extension message (little-endian fields). */
void xrs_xmsg_format(struct xrs_xmsg *x, unsigned int op, uint32_t data,
		     uint32_t aux, uint64_t addr, uint32_t stag, uint32_t len);

/** xrs_sge_load() - an SGL entry the peer wrote (byte-swapped if @swap). */
void xrs_sge_load(const volatile struct xrs_sge *src, bool swap,
		  struct xrs_sge *out);
/** xrs_sge_store() - an SGL entry for the peer, in its byte order. */
void xrs_sge_store(struct xrs_sge *dst, bool swap, uint64_t addr,
		   uint32_t key, uint32_t length);
/** xrs_iomap_load() / xrs_iomap_store() - the same for iomap entries. */
void xrs_iomap_load(const volatile struct xrs_iomap *src, bool swap,
		    struct xrs_iomap *out);
void xrs_iomap_store(struct xrs_iomap *dst, bool swap, uint64_t offset,
		     uint64_t addr, uint32_t key, uint32_t length);

/** xrs_host_is_net() - this host is big-endian (rdma-core RS_CONN_FLAG_NET). */
static inline bool xrs_host_is_net(void)
{
	return __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;
}

#endif /* XRS_WIRE_H */
