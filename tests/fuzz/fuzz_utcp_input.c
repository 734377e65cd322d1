// SPDX-License-Identifier: MIT
/*
 * libFuzzer: arbitrary segments into a utcp connection in one of several
 * states (LISTEN, SYN_SENT, SYN_RCVD, ESTABLISHED idle / with data in
 * flight and out-of-order data held, FIN_WAIT_1, CLOSE_WAIT, TIME_WAIT),
 * with the clock advanced and timers run between segments.
 *
 * Input: byte 0 scenario, byte 1 options; then records of
 * [u8 kind][u8 dt][u16 len][len bytes]. kind & 1: the bytes are a TCP
 * header+payload that gets a valid IPv4 header, our ports and a good
 * checksum (so the state machine sees it); kind & 2: seq/ack are made
 * relative to rcv_nxt/snd_una; otherwise the bytes are a raw IPv4 packet.
 * kind & 0x10 / 0x20 (with kind & 1): an input batch opens before / ends
 * after the segment (utcp_input_batch_begin/end); the set-up traffic
 * between the endpoints is fed one batch per round.
 *
 * Checked: every segment utcp emits parses with good checksums;
 * sequence invariants (snd_una <= snd_nxt <= snd_max, the scoreboard
 * sorted within (snd_una, snd_max]); @fill asked only for queued bytes
 * that were not released; @deliver offsets are contiguous.
 *
 * Option bit 64: both ends run the fused checksum paths the xsk transport
 * uses (cfg.output_sums_payload: @output finishes the checksum; @stage:
 * in-order payload copied and summed before it is verified, committed by
 * @deliver(NULL, len)); bit 128 with it: @stage refuses every other
 * segment (the in-place fallback).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "transport/utcp/utcp_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SBUF (256 * 1024)
#define QMAX 256

static uint8_t sdata[SBUF];

struct fep {
	struct utcp_conn *c;
	uint64_t acked, queued, rlen;
	int peer;
	bool closed;
	uint32_t staged;		/* @stage copied this much to sbuf */
	unsigned int stages;
	uint8_t sbuf[65536];
};

struct qpkt {
	int to;
	uint32_t len;
	uint8_t b[UTCP_MAX_HDR + 1600];
};

static struct fep E[2];
static struct qpkt Q[QMAX];
static int nq;
static bool capture;	/* queue output to the peer (setup phase) */
static bool fused, refuse;	/* option bits 64, 128 */

static int f_fill(void *ctx, uint64_t off, uint32_t len, struct utcp_iov *iov, int max)
{
	struct fep *e = ctx;

	if (off < e->acked || off + len > e->queued || off + len > SBUF || max < 1)
		abort();
	iov[0].base = sdata + off;
	iov[0].len = len;
	return 1;
}

static void f_output(void *ctx, const uint8_t *hdr, uint32_t hlen,
		     const struct utcp_iov *iov, int niov, uint32_t plen)
{
	struct fep *e = ctx;
	static uint8_t pkt[UTCP_MAX_HDR + 65536];
	struct utcp_seg s;
	uint32_t n = hlen;

	if (hlen > UTCP_MAX_HDR || plen > 65535)
		abort();
	memcpy(pkt, hdr, hlen);
	for (int i = 0; i < niov; i++) {
		memcpy(pkt + n, iov[i].base, iov[i].len);
		n += iov[i].len;
	}
	if (n != hlen + plen)
		abort();
	if (fused) {		/* finish the partial sum utcp left */
		struct utcp_csum cs;

		utcp_csum_partial(&cs, pkt);
		utcp_csum_add(&cs, pkt + hlen, plen);
		utcp_csum_store(&cs, pkt);
	}
	if (utcp_seg_parse(pkt, n, true, &s) != 0)
		abort();
	if (capture && nq < QMAX && n <= sizeof(Q[0].b)) {
		Q[nq].to = e->peer;
		Q[nq].len = n;
		memcpy(Q[nq].b, pkt, n);
		nq++;
	}
}

static void f_deliver(void *ctx, uint64_t off, const uint8_t *d, uint32_t len)
{
	struct fep *e = ctx;

	if (len && !d) {	/* commit what @stage copied */
		if (!fused || e->staged != len)
			abort();
		d = e->sbuf;
	}
	e->staged = 0;
	if (off != e->rlen)
		abort();
	e->rlen += len;
	if (len)
		(void)(volatile uint8_t)d[len - 1];	/* readable */
}

static void f_acked(void *ctx, uint64_t off)
{
	struct fep *e = ctx;

	if (off <= e->acked || off > e->queued)
		abort();
	e->acked = off;
}

static void f_closed(void *ctx, int err)
{
	struct fep *e = ctx;

	(void)err;
	if (e->closed)
		abort();
	e->closed = true;
}

static bool f_stage(void *ctx, const uint8_t *d, uint32_t len,
		    struct utcp_csum *cs)
{
	struct fep *e = ctx;

	if (!len || len > sizeof(e->sbuf))
		abort();
	if (refuse && e->stages++ % 2)
		return false;
	utcp_csum_copy(cs, e->sbuf, d, len);
	e->staged = len;
	return true;
}

static const struct utcp_ops fops = {
	.fill = f_fill, .output = f_output, .deliver = f_deliver,
	.acked = f_acked, .closed = f_closed,
};

static const struct utcp_ops fops_fused = {
	.fill = f_fill, .output = f_output, .deliver = f_deliver,
	.acked = f_acked, .closed = f_closed, .stage = f_stage,
};

static void pump(uint64_t now, int drop_mask)
{
	for (int round = 0; round < 8 && nq; round++) {
		struct qpkt *cur = malloc(sizeof(Q[0]) * (size_t)nq);
		int n = nq;

		memcpy(cur, Q, sizeof(Q[0]) * (size_t)n);
		nq = 0;
		/* each round is one RX batch per endpoint (one ACK at its end) */
		utcp_input_batch_begin(E[0].c);
		utcp_input_batch_begin(E[1].c);
		for (int i = 0; i < n; i++)
			if (!((drop_mask >> (i & 7)) & 1))
				utcp_input(E[cur[i].to].c, cur[i].b, cur[i].len, now);
		utcp_input_batch_end(E[0].c, now);
		utcp_input_batch_end(E[1].c, now);
		free(cur);
	}
	nq = 0;
}

static void fail(const struct utcp_conn *c, const char *what)
{
	fprintf(stderr, "invariant: %s (state %s una %x nxt %x max %x rcv_nxt %x)\n",
		what, utcp_state_name(c->state), c->snd_una, c->snd_nxt,
		c->snd_max, c->rcv_nxt);
	abort();
}

static void check(const struct utcp_conn *c)
{
	if (seq_gt(c->snd_una, c->snd_nxt) || seq_gt(c->snd_nxt, c->snd_max))
		fail(c, "snd_una <= snd_nxt <= snd_max");
	for (int i = 0; i < c->sb.n; i++) {
		if (!seq_lt(c->sb.s[i], c->sb.e[i]) || seq_lt(c->sb.s[i], c->snd_una) ||
		    seq_gt(c->sb.e[i], c->snd_max))
			fail(c, "scoreboard range");
		if (i && !seq_lt(c->sb.e[i - 1], c->sb.s[i]))
			fail(c, "scoreboard order");
	}
	for (const struct utcp_rseg *r = c->rq; r; r = r->next)
		if (!seq_gt(r->seq, c->rcv_nxt) || (r->next && seq_gt(r->seq + r->len, r->next->seq)))
			fail(c, "reassembly queue");
	if (c->state > UTCP_TIME_WAIT)
		fail(c, "state");
}

static void send_some(int i, uint32_t n, uint64_t now)
{
	/* utcp_send() may call @fill before it returns */
	E[i].queued += n;
	if (utcp_send(E[i].c, n, now) != 0)
		E[i].queued -= n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct utcp_cfg cfg[2];
	uint64_t now = 5000000000ull;
	uint8_t scen, optb;
	size_t p = 2;

	if (size < 2)
		return 0;
	scen = data[0] % 9;
	optb = data[1];
	fused = optb & 64;
	refuse = optb & 128;
	if (!sdata[1])
		for (size_t i = 0; i < SBUF; i++)
			sdata[i] = (uint8_t)(i * 7 + 3);
	for (int i = 0; i < 2; i++)	/* not the 64 KiB staging buffers */
		memset(&E[i], 0, offsetof(struct fep, sbuf));
	memset(cfg, 0, sizeof(cfg));
	nq = 0;
	for (int i = 0; i < 2; i++) {
		cfg[i].laddr = i ? 0x0a000002 : 0x0a000001;
		cfg[i].raddr = i ? 0x0a000001 : 0x0a000002;
		cfg[i].lport = i ? 4791 : 40000;
		cfg[i].rport = i ? 40000 : 4791;
		cfg[i].iss = i ? 0xfffffff0u : 0x7ffffff0u;
		cfg[i].iss_set = true;
		cfg[i].snd_buf = 128 * 1024;
		cfg[i].rcv_buf = (optb & 8) ? 4096 : 128 * 1024;
		cfg[i].mss = (optb & 16) ? 536 : 1460;
		cfg[i].reasm_max_segs = 8;
		cfg[i].max_retries = 3;
		cfg[i].syn_retries = 2;
		cfg[i].msl_ns = 1000000000ull;
		cfg[i].cc = (optb & 32) ? UTCP_CC_NEWRENO : UTCP_CC_CUBIC;
		cfg[i].output_sums_payload = fused;
	}
	cfg[1].no_ts = optb & 1;
	cfg[1].no_sack = optb & 2;
	cfg[1].no_wscale = optb & 4;
	for (int i = 0; i < 2; i++) {
		E[i].peer = !i;
		E[i].c = utcp_new(&cfg[i], fused ? &fops_fused : &fops, &E[i]);
		if (!E[i].c)
			abort();
	}
	/* E[0] is the connection under test; E[1] helps set up its state */
	capture = true;
	switch (scen) {
	case 0:
		utcp_listen(E[0].c);
		break;
	case 1:
		utcp_connect(E[0].c, now);
		break;
	case 2:		/* SYN_RCVD: answer a SYN, never see the ACK */
		utcp_listen(E[0].c);
		utcp_connect(E[1].c, now);
		pump(now, 0xfe);
		break;
	default:
		utcp_listen(E[1].c);
		utcp_connect(E[0].c, now);
		pump(now, 0);
		if (scen == 4) {	/* data in flight, some lost; OOO at E[0] */
			send_some(0, 20000, now);
			send_some(1, 9000, now);
			pump(now, 0x5a);
		} else if (scen == 5) {
			utcp_close(E[0].c, now);	/* FIN_WAIT_1 */
			nq = 0;
		} else if (scen == 6) {
			utcp_close(E[1].c, now);	/* CLOSE_WAIT */
			pump(now, 0);
		} else if (scen == 7) {
			utcp_close(E[0].c, now);
			pump(now, 0);
			utcp_close(E[1].c, now);
			pump(now, 0);			/* TIME_WAIT */
		} else if (scen == 8) {
			send_some(0, 3000, now);	/* unacked data */
			nq = 0;
		}
		break;
	}
	capture = false;
	nq = 0;

	while (p + 4 <= size) {
		uint8_t kind = data[p], dt = data[p + 1];
		uint32_t len = (uint32_t)data[p + 2] << 8 | data[p + 3];
		uint8_t pkt[20 + 2048];
		const struct utcp_conn *c = E[0].c;

		p += 4;
		if (len > size - p)
			len = (uint32_t)(size - p);
		if (len > 2048)
			len = 2048;
		if (kind & 1) {
			struct utcp_csum cs;
			uint8_t *t = pkt + 20;
			uint32_t tot = 20 + len;

			memset(pkt, 0, 20);
			memcpy(t, data + p, len);
			pkt[0] = 0x45;
			pkt[2] = (uint8_t)(tot >> 8);
			pkt[3] = (uint8_t)tot;
			pkt[8] = 64;
			pkt[9] = 6;
			pkt[12] = 10; pkt[15] = 2;
			pkt[16] = 10; pkt[19] = 1;
			utcp_csum_init(&cs, 0);
			utcp_csum_add(&cs, pkt, 20);
			uint16_t ic = utcp_csum_final(&cs);
			pkt[10] = (uint8_t)(ic >> 8);
			pkt[11] = (uint8_t)ic;
			if (len >= 20) {
				t[0] = 4791 >> 8; t[1] = 4791 & 0xff;
				t[2] = 40000 >> 8; t[3] = 40000 & 0xff;
				if (kind & 2) {
					uint32_t seq = c->rcv_nxt + (uint32_t)((int8_t)t[4]) * 512 + t[5];
					uint32_t ack = c->snd_una + (uint32_t)((int8_t)t[8]) * 512 + t[9];

					t[4] = (uint8_t)(seq >> 24); t[5] = (uint8_t)(seq >> 16);
					t[6] = (uint8_t)(seq >> 8); t[7] = (uint8_t)seq;
					t[8] = (uint8_t)(ack >> 24); t[9] = (uint8_t)(ack >> 16);
					t[10] = (uint8_t)(ack >> 8); t[11] = (uint8_t)ack;
				}
				t[16] = t[17] = 0;
				utcp_csum_init(&cs, utcp_csum_pseudo(0x0a000002, 0x0a000001, 6, len));
				utcp_csum_add(&cs, t, len);
				uint16_t tc = utcp_csum_final(&cs);
				t[16] = (uint8_t)(tc >> 8);
				t[17] = (uint8_t)tc;
			}
			if (kind & 0x10)	/* an input batch opens */
				utcp_input_batch_begin(E[0].c);
			utcp_input(E[0].c, pkt, tot, now);
			if (kind & 0x20)	/* ... and ends */
				utcp_input_batch_end(E[0].c, now);
		} else {
			uint8_t *raw = malloc(len ? len : 1);	/* exact size for ASan */

			memcpy(raw, data + p, len);
			utcp_input(E[0].c, raw, len, now);
			free(raw);
		}
		p += len;
		check(E[0].c);
		/* time passes: up to ~4 s in coarse steps */
		now += (uint64_t)dt * (dt & 0x80 ? 30000000ull : 1000000ull);
		if (utcp_next_deadline(E[0].c) <= now)
			utcp_tick(E[0].c, now);
		check(E[0].c);
		if (kind & 4 && E[0].queued + 5000 <= SBUF)
			send_some(0, 5000, now);
		if (kind & 8)
			utcp_recved(E[0].c, 4096, now);
		if ((kind & 0xf0) == 0xf0)
			utcp_close(E[0].c, now);
		check(E[0].c);
	}
	utcp_free(E[0].c);
	utcp_free(E[1].c);
	return 0;
}
