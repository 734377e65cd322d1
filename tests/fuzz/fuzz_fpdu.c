// SPDX-License-Identifier: MIT
/*
 * libFuzzer: arbitrary bytes through the FPDU receive machine.
 * Byte 0: bit 0 CRC, bit 1 markers, bit 2 small max ULPDU, bit 3 place()
 * says -EAGAIN once per FPDU, bit 4 place() rejects odd STags,
 * bits 5-7 recvmsg chunk size. The rest is the TCP stream.
 * place() hands out pieces of one fixed buffer, followed by guard bytes
 * that must never change; ASan catches anything beyond the buffer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "xiw_proto.h"

#define BUF_SIZE 65536
#define GUARD 64
#define GUARD_BYTE 0x5c

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz {
	uint8_t *buf;		/* BUF_SIZE + GUARD */
	uint32_t used;		/* payload bytes handed out for this FPDU */
	uint8_t mode;
	int eagain_done;
};

static void guard_check(const struct fz *f)
{
	for (uint32_t k = f->used; k < f->used + GUARD; k++)
		if (f->buf[k] != GUARD_BYTE)
			abort();
}

static int fz_place(void *arg, const struct xiw_fpdu_hdr *h,
		    struct iovec *dst, int *ndst)
{
	struct fz *f = arg;
	uint32_t len = h->payload_len, piece;

	if ((f->mode & 8) && !f->eagain_done) {
		f->eagain_done = 1;
		return -EAGAIN;
	}
	f->eagain_done = 0;
	if ((f->mode & 16) && h->tagged && (h->stag & 1))
		return 0x10100;		/* XIW_TERM(RDMAP, 1, 0) */
	if (len > BUF_SIZE)
		abort();		/* ULPDU length is 16 bits */
	memset(f->buf, GUARD_BYTE, (size_t)BUF_SIZE + GUARD);
	f->used = len;
	memset(f->buf, 0, len);
	piece = len / 3 + 1;
	*ndst = 0;
	for (uint32_t off = 0; off < len; off += piece)
		dst[(*ndst)++] = (struct iovec){ f->buf + off,
			len - off < piece ? len - off : piece };
	return 0;
}

static int fz_done(void *arg, const struct xiw_fpdu_hdr *h)
{
	struct fz *f = arg;

	if (h->payload_len != f->used)
		abort();
	guard_check(f);
	return 0;
}

static const struct xiw_rx_ops fz_ops = { .place = fz_place, .done = fz_done };

/* Copy up to @want stream bytes into the iovecs, like recvmsg. */
static size_t fz_recv(const struct iovec *iov, int n, const uint8_t *p,
		      size_t want)
{
	size_t got = 0;

	for (int k = 0; k < n && got < want; k++) {
		size_t c = iov[k].iov_len < want - got ?
			   iov[k].iov_len : want - got;

		memcpy(iov[k].iov_base, p + got, c);
		got += c;
	}
	return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t chunks[8] = { 1, 2, 3, 7, 64, 513, 4096, SIZE_MAX };
	static struct fz f;
	struct xiw_rx rx;
	struct iovec iov[16];
	size_t off = 1, chunk;
	int stall = 0;

	if (size < 1)
		return 0;
	if (!f.buf)
		f.buf = malloc((size_t)BUF_SIZE + GUARD);
	f.mode = data[0];
	f.used = 0;
	f.eagain_done = 0;
	memset(f.buf, GUARD_BYTE, (size_t)BUF_SIZE + GUARD);
	chunk = chunks[data[0] >> 5];
	xiw_rx_init(&rx, &fz_ops, &f, data[0] & 1, data[0] & 2,
		    (data[0] & 4) ? 1024 : 0xffff);
	while (off < size) {
		int n = xiw_rx_iov(&rx, iov, 1 + (int)(off % 16));
		size_t got;

		if (n == -EAGAIN) {
			if (++stall > 2)
				abort();	/* place() gives in on retry */
			continue;
		}
		stall = 0;
		if (n < 0)
			break;
		got = fz_recv(iov, n, data + off,
			      size - off < chunk ? size - off : chunk);
		off += got;
		if (xiw_rx_advance(&rx, got))
			break;
	}
	guard_check(&f);
	{
		uint8_t th[XIW_MAX_HDR_LEN], pl[XIW_MAX_HDR_LEN];
		struct xiw_fpdu_hdr h = { 0 };
		size_t n = xiw_rx_term_hdr(&rx, th);

		if (n > XIW_MAX_HDR_LEN)
			abort();
		if (xiw_term_encode((uint32_t)rx.error, th, n, &h, pl,
				    sizeof(pl)) > n)
			abort();
	}
	return 0;
}
