// SPDX-License-Identifier: MIT
/*
 * utcp end to end: two endpoints over a fake link (loss, reordering,
 * duplication, delay, corruption, targeted drops) with a fake clock.
 * Deterministic: one seeded xorshift PRNG per link, time only advances
 * to the next packet arrival or timer deadline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "transport/utcp/utcp_int.h"

#define MS (1000ull * 1000ull)
#define IP_A 0x0a000001u
#define IP_B 0x0a000002u

struct pkt {
	uint64_t at, order;
	int to;
	uint32_t len;
	uint8_t *data;
};

struct link;

/* the decoded header of a segment an endpoint sent */
struct sent {
	uint64_t t;
	uint8_t flags;
	uint32_t seq, ack, len;
	uint16_t wnd;
	struct utcp_opts o;
};

#define MAX_SENT 200000

struct ep {
	struct link *l;
	int id;
	struct utcp_conn *c;
	struct utcp_cfg cfg;
	uint8_t *sdata;
	size_t scap;
	uint64_t acked;		/* from @acked */
	uint64_t base;		/* stream offset of sdata[0] / rdata[0] */
	uint64_t filled;	/* bytes described by @fill */
	uint8_t *rdata;
	size_t rcap;
	uint64_t rlen;
	bool eof;
	bool closed;
	int err;
	bool no_recved;		/* don't reopen the window */
	uint64_t pend_recved;
	unsigned int states;	/* bitmask of states entered */
	uint64_t t_state[16];	/* when each state was last entered */
	struct sent *log;
	size_t nlog;
};

struct link {
	uint64_t now;
	uint64_t rng;
	uint64_t order;
	struct pkt *q;
	size_t nq, capq;
	/* impairments, per mille */
	unsigned int loss, dup, reorder;
	uint64_t delay, jitter;
	/* drop the next segment from endpoint i matching flags (any if 0) */
	int drop_flags[2], drop_count[2];
	uint32_t drop_seq[2];	/* drop a data segment with this seq, once */
	bool drop_seq_on[2];
	unsigned int drop_seq_more[2];	/* ... and this many times more */
	bool blackhole[2];	/* drop everything from endpoint i */
	bool corrupt_next_data[2];
	int in_rc_min;		/* the lowest utcp_input return seen */
	unsigned int csum_rejects;
	struct ep ep[2];
};

static uint64_t rnd(struct link *l)
{
	uint64_t x = l->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	l->rng = x;
	return x;
}

static void enqueue(struct link *l, int to, const uint8_t *p, uint32_t n, uint64_t at)
{
	if (l->nq == l->capq) {
		l->capq = l->capq ? 2 * l->capq : 256;
		l->q = realloc(l->q, l->capq * sizeof(*l->q));
	}
	l->q[l->nq].at = at;
	l->q[l->nq].order = l->order++;
	l->q[l->nq].to = to;
	l->q[l->nq].len = n;
	l->q[l->nq].data = malloc(n);
	memcpy(l->q[l->nq].data, p, n);
	l->nq++;
}

static void cb_output(void *ctx, const uint8_t *hdr, uint32_t hlen,
		      const struct utcp_iov *iov, int niov, uint32_t plen)
{
	struct ep *e = ctx;
	struct link *l = e->l;
	uint8_t pkt[UTCP_MAX_HDR + 65536];
	uint32_t n = hlen;
	struct utcp_seg s;
	int me = e->id;
	uint64_t at;

	memcpy(pkt, hdr, hlen);
	for (int i = 0; i < niov; i++) {
		memcpy(pkt + n, iov[i].base, iov[i].len);
		n += iov[i].len;
	}
	assert_int_equal(n, hlen + plen);
	/* everything utcp emits parses and has good checksums */
	assert_int_equal(utcp_seg_parse(pkt, n, true, &s), 0);
	if (e->nlog < MAX_SENT) {
		struct sent *r = &e->log[e->nlog++];

		r->t = l->now;
		r->flags = s.flags;
		r->seq = s.seq;
		r->ack = s.ack;
		r->len = s.len;
		r->wnd = s.wnd;
		assert_int_equal(utcp_opts_parse(s.opts, s.optlen, &r->o), 0);
	}
	if (l->blackhole[me])
		return;
	if (l->drop_count[me] > 0 &&
	    (!l->drop_flags[me] || (s.flags & l->drop_flags[me]) == l->drop_flags[me])) {
		l->drop_count[me]--;
		return;
	}
	if (l->drop_seq_on[me] && s.len && s.seq == l->drop_seq[me]) {
		if (l->drop_seq_more[me])
			l->drop_seq_more[me]--;
		else
			l->drop_seq_on[me] = false;
		return;
	}
	if (l->loss && rnd(l) % 1000 < l->loss)
		return;
	if (l->corrupt_next_data[me] && s.len) {
		l->corrupt_next_data[me] = false;
		pkt[n - 1] ^= 0x40;
	}
	at = l->now + l->delay;
	if (l->reorder && rnd(l) % 1000 < l->reorder)
		at += l->jitter ? rnd(l) % l->jitter : 0;
	enqueue(l, !me, pkt, n, at);
	if (l->dup && rnd(l) % 1000 < l->dup)
		enqueue(l, !me, pkt, n, at + 1);
}

static int cb_fill(void *ctx, uint64_t off, uint32_t len, struct utcp_iov *iov, int max)
{
	struct ep *e = ctx;
	uint32_t half = len / 2;

	assert_true(off >= e->acked);	/* never asks for released bytes */
	off -= e->base;
	assert_true(off + len <= e->scap);
	e->filled += len;
	/* two pieces when possible, to exercise gathering */
	if (max >= 2 && half) {
		iov[0].base = e->sdata + off;
		iov[0].len = half;
		iov[1].base = e->sdata + off + half;
		iov[1].len = len - half;
		return 2;
	}
	iov[0].base = e->sdata + off;
	iov[0].len = len;
	return 1;
}

static void cb_deliver(void *ctx, uint64_t off, const uint8_t *d, uint32_t len)
{
	struct ep *e = ctx;

	assert_int_equal(off, e->rlen + e->l->ep[!e->id].base);
	if (!len) {
		assert_false(e->eof);
		e->eof = true;
		return;
	}
	assert_true(e->rlen + len <= e->rcap);
	memcpy(e->rdata + e->rlen, d, len);
	e->rlen += len;
	if (!e->no_recved)
		e->pend_recved += len;
}

static void cb_acked(void *ctx, uint64_t off)
{
	struct ep *e = ctx;

	assert_true(off > e->acked);
	e->acked = off;
}

static void cb_state(void *ctx, enum utcp_state o, enum utcp_state n)
{
	struct ep *e = ctx;

	(void)o;
	e->states |= 1u << n;
	e->t_state[n] = e->l->now;
}

static void cb_closed(void *ctx, int err)
{
	struct ep *e = ctx;

	assert_false(e->closed);
	e->closed = true;
	e->err = err;
}

static const struct utcp_ops ops = {
	.fill = cb_fill,
	.output = cb_output,
	.deliver = cb_deliver,
	.acked = cb_acked,
	.state = cb_state,
	.closed = cb_closed,
};

static void fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
	uint64_t x = seed | 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

/* A link with two configured (not yet created) endpoints. */
static struct link *link_new(uint64_t seed, size_t sbytes_a, size_t sbytes_b)
{
	struct link *l = calloc(1, sizeof(*l));

	l->rng = seed * 0x9e3779b97f4a7c15ull + 1;
	l->now = 1000 * MS;
	l->delay = 1 * MS;
	for (int i = 0; i < 2; i++) {
		struct ep *e = &l->ep[i];
		size_t sb = i ? sbytes_b : sbytes_a, rb = i ? sbytes_a : sbytes_b;

		e->l = l;
		e->id = i;
		e->scap = sb;
		e->sdata = malloc(sb ? sb : 1);
		fill_pattern(e->sdata, sb, (uint32_t)seed * 7 + (uint32_t)i);
		e->rcap = rb;
		e->rdata = malloc(rb ? rb : 1);
		e->log = calloc(MAX_SENT, sizeof(*e->log));
		e->cfg.laddr = i ? IP_B : IP_A;
		e->cfg.raddr = i ? IP_A : IP_B;
		e->cfg.lport = i ? 4791 : 40000;
		e->cfg.rport = i ? 40000 : 4791;
		e->cfg.iss = i ? 0x20000000u : 0x10000000u;
		e->cfg.iss_set = true;
	}
	return l;
}

static void link_start(struct link *l)
{
	for (int i = 0; i < 2; i++) {
		l->ep[i].c = utcp_new(&l->ep[i].cfg, &ops, &l->ep[i]);
		assert_non_null(l->ep[i].c);
	}
}

static void link_free(struct link *l)
{
	for (int i = 0; i < 2; i++) {
		utcp_free(l->ep[i].c);
		free(l->ep[i].sdata);
		free(l->ep[i].rdata);
		free(l->ep[i].log);
	}
	for (size_t i = 0; i < l->nq; i++)
		free(l->q[i].data);
	free(l->q);
	free(l);
}

static void flush_recved(struct link *l)
{
	for (int i = 0; i < 2; i++) {
		struct ep *e = &l->ep[i];

		if (e->pend_recved) {
			uint32_t n = (uint32_t)e->pend_recved;

			e->pend_recved = 0;
			utcp_recved(e->c, n, l->now);
		}
	}
}

typedef bool (*cond_fn)(struct link *l);

/* Run the fake network until @cond holds or @limit ns have passed.
 * Return: @cond's value at the end. */
static bool run(struct link *l, uint64_t limit, cond_fn cond)
{
	uint64_t end = l->now + limit;

	for (;;) {
		uint64_t t = UINT64_MAX;
		size_t best = SIZE_MAX;

		if (cond && cond(l))
			return true;
		for (size_t i = 0; i < l->nq; i++)
			if (l->q[i].at < t || (l->q[i].at == t && l->q[i].order < l->q[best].order)) {
				t = l->q[i].at;
				best = i;
			}
		for (int i = 0; i < 2; i++) {
			uint64_t d = utcp_next_deadline(l->ep[i].c);

			if (d < t) {
				t = d;
				best = SIZE_MAX;
			}
		}
		if (t > end) {
			l->now = end;
			return cond ? cond(l) : true;
		}
		if (t > l->now)
			l->now = t;
		if (best != SIZE_MAX) {
			struct pkt p = l->q[best];
			int rc;

			l->q[best] = l->q[--l->nq];
			rc = utcp_input(l->ep[p.to].c, p.data, p.len, l->now);
			if (rc < l->in_rc_min)
				l->in_rc_min = rc;
			if (rc == -EBADMSG)
				l->csum_rejects++;
			free(p.data);
		}
		for (int i = 0; i < 2; i++)
			if (utcp_next_deadline(l->ep[i].c) <= l->now)
				utcp_tick(l->ep[i].c, l->now);
		flush_recved(l);
	}
}

static bool both_established(struct link *l)
{
	return l->ep[0].c->state == UTCP_ESTABLISHED &&
	       l->ep[1].c->state == UTCP_ESTABLISHED;
}

static void handshake(struct link *l)
{
	assert_int_equal(utcp_listen(l->ep[1].c), 0);
	assert_int_equal(utcp_connect(l->ep[0].c, l->now), 0);
	assert_true(run(l, 60000 * MS, both_established));
}

static size_t count_sent(const struct ep *e, uint8_t flags_set, uint8_t flags_clear)
{
	size_t n = 0;

	for (size_t i = 0; i < e->nlog; i++)
		if ((e->log[i].flags & flags_set) == flags_set && !(e->log[i].flags & flags_clear))
			n++;
	return n;
}

static struct utcp_info info(const struct ep *e)
{
	struct utcp_info i;

	utcp_get_info(e->c, &i);
	return i;
}

/* ---------------------------------------------------------- handshake */

static void test_handshake(void **state)
{
	struct link *l = link_new(1, 0, 0);
	struct utcp_info a, b;

	(void)state;
	l->ep[1].cfg.raddr = 0;		/* wildcard listener */
	l->ep[1].cfg.rport = 0;
	l->ep[1].cfg.mss = 1400;
	link_start(l);
	handshake(l);
	a = info(&l->ep[0]);
	b = info(&l->ep[1]);
	/* SYN, SYN-ACK, ACK: exactly three segments */
	assert_int_equal(l->ep[0].nlog, 2);
	assert_int_equal(l->ep[1].nlog, 1);
	assert_int_equal(l->ep[0].log[0].flags, UTCP_SYN);
	assert_int_equal(l->ep[1].log[0].flags, UTCP_SYN | UTCP_ACK);
	assert_int_equal(l->ep[1].log[0].ack, 0x10000001u);
	assert_int_equal(l->ep[0].log[1].flags, UTCP_ACK);
	assert_true(l->ep[0].log[0].o.has_mss && l->ep[0].log[0].o.sack_perm &&
		    l->ep[0].log[0].o.has_ts && l->ep[0].log[0].o.has_ws);
	assert_true(a.ts_ok && a.sack_ok && a.ws_ok && b.ts_ok && b.sack_ok && b.ws_ok);
	assert_int_equal(a.mss, 1400);	/* min of both MSS */
	assert_int_equal(b.mss, 1400);
	assert_int_equal(a.smss, 1388);	/* minus the timestamp option */
	assert_int_equal(a.rcv_wscale, 3);	/* 256 KiB >> 3 <= 65535 */
	assert_int_equal(b.snd_wscale, 3);
	assert_int_equal(a.irs, 0x20000000u);
	assert_int_equal(b.irs, 0x10000000u);
	assert_true(l->ep[0].states & (1u << UTCP_SYN_SENT));
	assert_true(l->ep[1].states & (1u << UTCP_SYN_RCVD));
	assert_true(a.srtt_ns > 0);	/* RTT sampled during the handshake */
	link_free(l);
}

/* An old-style peer without options: no WS, TS, SACK; MSS default 536
 * applies when the SYN has no MSS option either way. */
static void test_handshake_no_options(void **state)
{
	struct link *l = link_new(2, 0, 0);
	struct utcp_info a;

	(void)state;
	l->ep[1].cfg.no_ts = l->ep[1].cfg.no_sack = l->ep[1].cfg.no_wscale = true;
	link_start(l);
	handshake(l);
	a = info(&l->ep[0]);
	assert_false(a.ts_ok || a.sack_ok || a.ws_ok);
	assert_int_equal(a.rcv_wscale, 0);
	assert_int_equal(a.smss, 1460);
	/* our window field is then unscaled and capped */
	assert_int_equal(l->ep[0].log[l->ep[0].nlog - 1].wnd, 65535);
	link_free(l);
}

static void test_simultaneous_open(void **state)
{
	struct link *l = link_new(3, 0, 0);

	(void)state;
	link_start(l);
	assert_int_equal(utcp_connect(l->ep[0].c, l->now), 0);
	assert_int_equal(utcp_connect(l->ep[1].c, l->now), 0);
	assert_true(run(l, 10000 * MS, both_established));
	for (int i = 0; i < 2; i++) {
		assert_true(l->ep[i].states & (1u << UTCP_SYN_SENT));
		assert_true(l->ep[i].states & (1u << UTCP_SYN_RCVD));
		assert_int_equal(info(&l->ep[i]).rto_fired, 0);
	}
	assert_int_equal(info(&l->ep[0]).rcv_nxt, 0x20000001u);
	assert_int_equal(info(&l->ep[1]).rcv_nxt, 0x10000001u);
	link_free(l);
}

static void test_syn_loss(void **state)
{
	struct link *l = link_new(4, 0, 0);
	struct utcp_info a;

	(void)state;
	l->drop_flags[0] = UTCP_SYN;
	l->drop_count[0] = 2;	/* the SYN and its first retransmission */
	link_start(l);
	handshake(l);
	a = info(&l->ep[0]);
	assert_int_equal(a.rto_fired, 2);
	assert_int_equal(count_sent(&l->ep[0], UTCP_SYN, 0), 3);
	/* 1 s initial RTO, then 2 s: the third SYN at t0 + 3 s */
	assert_int_equal(l->ep[0].log[1].t - l->ep[0].log[0].t, 1000 * MS);
	assert_int_equal(l->ep[0].log[2].t - l->ep[0].log[1].t, 2000 * MS);
	link_free(l);
}

static void test_synack_loss(void **state)
{
	struct link *l = link_new(5, 0, 0);

	(void)state;
	l->drop_flags[1] = UTCP_SYN | UTCP_ACK;
	l->drop_count[1] = 1;
	link_start(l);
	handshake(l);
	/* recovered by a retransmitted SYN (answered at once) or the
	 * SYN-ACK's own RTO, whichever fires first: 1 s */
	assert_int_equal(count_sent(&l->ep[1], UTCP_SYN | UTCP_ACK, 0), 2);
	assert_true(l->now >= 1001 * MS + 1000 * MS);
	link_free(l);
}

static void test_syn_give_up(void **state)
{
	struct link *l = link_new(6, 0, 0);

	(void)state;
	l->ep[0].cfg.syn_retries = 3;
	l->blackhole[0] = true;
	link_start(l);
	assert_int_equal(utcp_listen(l->ep[1].c), 0);
	assert_int_equal(utcp_connect(l->ep[0].c, l->now), 0);
	run(l, 100000 * MS, NULL);
	assert_true(l->ep[0].closed);
	assert_int_equal(l->ep[0].err, -ETIMEDOUT);
	assert_int_equal(count_sent(&l->ep[0], UTCP_SYN, 0), 4);
	link_free(l);
}

/* ----------------------------------------------------------- transfer */

static bool xfer_done(struct link *l)
{
	return l->ep[1].rlen == l->ep[0].scap && l->ep[0].rlen == l->ep[1].scap &&
	       l->ep[0].acked - l->ep[0].base == l->ep[0].scap &&
	       l->ep[1].acked - l->ep[1].base == l->ep[1].scap;
}

/* Push the whole send buffers through utcp_send() as space allows. */
static uint64_t pushed[2];
static bool push_and_check(struct link *l)
{
	for (int i = 0; i < 2; i++) {
		struct ep *e = &l->ep[i];
		uint64_t left = e->scap - pushed[i];
		uint32_t sp = utcp_send_space(e->c);

		if (left && sp && (e->c->state == UTCP_ESTABLISHED ||
				   e->c->state == UTCP_CLOSE_WAIT)) {
			uint32_t n = left < sp ? (uint32_t)left : sp;

			if (n > 100000)
				n = 100000;
			assert_int_equal(utcp_send(e->c, n, l->now), 0);
			pushed[i] += n;
		}
	}
	return xfer_done(l);
}

static void transfer(struct link *l, uint64_t limit)
{
	pushed[0] = pushed[1] = 0;
	assert_true(run(l, limit, push_and_check));
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, l->ep[0].scap);
	if (l->ep[1].scap)
		assert_memory_equal(l->ep[0].rdata, l->ep[1].sdata, l->ep[1].scap);
}

static void test_transfer_clean(void **state)
{
	struct link *l = link_new(10, 2 << 20, 0);
	struct utcp_info a, b;

	(void)state;
	l->ep[0].cfg.snd_buf = 1 << 20;
	link_start(l);
	handshake(l);
	transfer(l, 60000 * MS);
	a = info(&l->ep[0]);
	b = info(&l->ep[1]);
	/* no loss, no RTO; a tail loss probe (RFC 8985) may resend the
	 * segment whose ACK the receiver delays, nothing else is resent */
	assert_true(a.bytes_retrans <= a.tlp_sent * a.smss);
	assert_int_equal(a.rto_fired, 0);
	assert_int_equal(a.bytes_out, (2 << 20) + a.bytes_retrans);
	/* no copy kept: every byte sent was described by @fill */
	assert_int_equal(l->ep[0].filled, a.bytes_out);
	assert_true(a.cwnd > 10 * a.smss);	/* slow start grew it */
	/* delayed ACK: about one ACK per two full segments */
	uint64_t data_segs = a.segs_out - a.acks_out;
	assert_true(b.acks_out <= data_segs / 2 + 20);
	assert_true(b.acks_out >= data_segs / 2 - 20);
	link_free(l);
}

/*
 * A sender held back by a small receive window is not using its
 * congestion window: ACKs must not grow cwnd past what it could use
 * (without this check cwnd grew to hundreds of MB on a veth, and a later
 * loss then reduced nothing).
 */
static void test_cwnd_rwnd_limited(void **state)
{
	struct link *l = link_new(14, 8 << 20, 0);
	struct utcp_info a;

	(void)state;
	l->ep[1].cfg.rcv_buf = 64 << 10;	/* 64 KiB receive window */
	l->ep[0].cfg.snd_buf = 1 << 20;
	link_start(l);
	handshake(l);
	transfer(l, 600000 * MS);
	a = info(&l->ep[0]);
	assert_int_equal(a.snd_acked, 8 << 20);
	assert_int_equal(a.rto_fired, 0);
	/* slow start stops at twice the flight, i.e. the 64 KiB window */
	assert_true(a.cwnd <= 2 * (64u << 10) + 4 * a.smss);
	link_free(l);
}

static void test_transfer_impaired(void **state)
{
	struct link *l = link_new(11, 4 << 20, 1 << 20);
	struct utcp_info a, b;

	(void)state;
	l->loss = 20;		/* 2 % */
	l->dup = 10;
	l->reorder = 50;
	l->jitter = 3 * MS;
	l->delay = 2 * MS;
	link_start(l);
	handshake(l);
	transfer(l, 600000 * MS);
	a = info(&l->ep[0]);
	b = info(&l->ep[1]);
	assert_true(a.bytes_retrans > 0);
	assert_true(a.fast_recoveries > 0);
	assert_true(b.ooo_segs > 0);
	assert_int_equal(a.snd_acked, 4 << 20);
	assert_int_equal(b.rcv_delivered, 4 << 20);
	/* retransmissions are a small fraction: SACKed data is not resent */
	assert_true(a.bytes_retrans < (4u << 20) / 10);
	fprintf(stderr, "impaired: A retrans %llu B, %llu FR, %llu RTO, B ooo %llu\n",
		(unsigned long long)a.bytes_retrans, (unsigned long long)a.fast_recoveries,
		(unsigned long long)a.rto_fired, (unsigned long long)b.ooo_segs);
	link_free(l);
}

static void test_seq_wrap(void **state)
{
	struct link *l = link_new(12, 1 << 20, 1 << 20);

	(void)state;
	l->ep[0].cfg.iss = 0xfffff000u;		/* wraps after 4 KiB */
	l->ep[1].cfg.iss = 0xffffffffu;		/* the SYN itself wraps */
	l->ep[0].cfg.ts_offset = 0xffffff00u;	/* TS clock wraps too */
	l->loss = 10;
	l->reorder = 30;
	l->jitter = 2 * MS;
	link_start(l);
	handshake(l);
	assert_int_equal(info(&l->ep[1]).snd_una, 0);
	transfer(l, 600000 * MS);
	assert_true(seq_lt(0xfffff000u, info(&l->ep[0]).snd_una));
	assert_true(info(&l->ep[0]).snd_una < 0x00200000u);
	link_free(l);
}

static void test_window_scale(void **state)
{
	struct link *l = link_new(13, 8 << 20, 0);
	uint32_t max_flight = 0, max_wnd_field = 0;

	(void)state;
	for (int i = 0; i < 2; i++) {
		l->ep[i].cfg.rcv_buf = 4 << 20;
		l->ep[i].cfg.snd_buf = 8 << 20;
	}
	l->delay = 20 * MS;	/* BDP needs a window far above 64 KiB */
	link_start(l);
	handshake(l);
	assert_int_equal(info(&l->ep[0]).rcv_wscale, 7);
	assert_int_equal(info(&l->ep[0]).snd_wscale, 7);
	pushed[0] = pushed[1] = 0;
	while (!push_and_check(l)) {
		struct utcp_info a = info(&l->ep[0]);

		if (a.snd_max - a.snd_una > max_flight)
			max_flight = a.snd_max - a.snd_una;
		run(l, 5 * MS, NULL);
		assert_true(l->now < 200000 * MS);
	}
	for (size_t i = 0; i < l->ep[1].nlog; i++)
		if (!(l->ep[1].log[i].flags & UTCP_SYN) && l->ep[1].log[i].wnd > max_wnd_field)
			max_wnd_field = l->ep[1].log[i].wnd;
	assert_true(max_flight > 1u << 20);		/* > 16 x 64 KiB */
	assert_true(info(&l->ep[0]).snd_wnd > 65535);
	assert_int_equal(max_wnd_field, (4u << 20) >> 7);
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, l->ep[0].scap);
	link_free(l);
}

/* ------------------------------------------------------ SACK, recovery */

/* One data segment lost in a burst: the receiver SACKs what follows, the
 * sender's scoreboard holds it, and exactly the lost bytes are resent. */
static void test_sack_single_loss(void **state)
{
	struct link *l = link_new(20, 100000, 0);
	struct utcp_info a;
	uint32_t smss, s[8], e[8];
	int n;

	(void)state;
	/* the delay from the start: a probe timeout (2 SRTT) computed from a
	 * faster handshake would fire before the dup ACKs return */
	l->delay = 10 * MS;
	link_start(l);
	handshake(l);
	smss = info(&l->ep[0]).smss;
	l->drop_seq[0] = 0x10000001u + 2 * smss;	/* the third segment */
	l->drop_seq_on[0] = true;
	assert_int_equal(utcp_send(l->ep[0].c, 10 * smss, l->now), 0);
	/* stop right after the fast retransmission went out */
	while (info(&l->ep[0]).segs_retrans == 0) {
		run(l, 1 * MS, NULL);
		assert_true(l->now < 5000 * MS);
	}
	n = utcp_sack_get(l->ep[0].c, s, e, 8);
	assert_int_equal(n, 1);
	assert_int_equal(s[0], 0x10000001u + 3 * smss);
	assert_true(seq_geq(e[0], 0x10000001u + 6 * smss));
	a = info(&l->ep[0]);
	assert_true(a.in_recovery);
	assert_int_equal(a.fast_recoveries, 1);
	/* the SACKed-octets counter is what the scoreboard holds so far */
	assert_int_equal(a.bytes_sacked, e[0] - s[0]);
	/* the receiver sent SACK blocks in its dup ACKs */
	assert_true(l->ep[1].log[l->ep[1].nlog - 1].o.nsack >= 1);
	assert_int_equal(l->ep[1].log[l->ep[1].nlog - 1].o.sack_start[0],
			 0x10000001u + 3 * smss);
	assert_true(run(l, 5000 * MS, NULL));
	a = info(&l->ep[0]);
	assert_int_equal(a.bytes_retrans, smss);
	assert_int_equal(a.segs_retrans, 1);
	assert_int_equal(a.rto_fired, 0);
	assert_int_equal(a.snd_acked, 10 * smss);
	assert_int_equal(a.sack_blocks, 0);
	assert_false(a.in_recovery);
	/* segments 4..10 at most were SACKed (each octet counted once) */
	assert_true(a.bytes_sacked >= 3 * smss && a.bytes_sacked <= 7 * smss);
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, 10 * smss);
	link_free(l);
}

/*
 * More than 2 GiB into the stream the sequence numbers are more than 2^31
 * past the ISS: nothing may compare with the ISS any more (acked-bytes
 * accounting did, and the sender stalled after 2 GiB). Both ends are
 * moved 2^31 + 4 KiB into their streams, then 1 MiB must go through.
 */
static void test_beyond_2g(void **state)
{
	struct link *l = link_new(26, 1 << 20, 0);
	struct utcp_conn *a, *b;
	const uint64_t skip = (1ull << 31) + 4096;
	uint32_t s;

	(void)state;
	link_start(l);
	handshake(l);
	a = l->ep[0].c;
	b = l->ep[1].c;
	s = a->iss + 1 + (uint32_t)skip;
	a->snd_una = a->snd_nxt = a->snd_max = a->recover = a->high_rxt = s;
	a->snd_wl2 = s;
	a->snd_acked = a->snd_queued = skip;
	b->rcv_nxt = b->last_ack_sent = s;
	b->rcv_adv = s + (b->rcv_adv - (b->irs + 1));
	b->rcv_delivered = skip;
	b->snd_wl1 = s;
	l->ep[0].base = l->ep[0].acked = skip;
	transfer(l, 60000 * MS);
	assert_int_equal(info(&l->ep[0]).snd_acked, skip + (1 << 20));
	assert_int_equal(l->ep[0].acked, skip + (1 << 20));
	assert_int_equal(info(&l->ep[0]).snd_una, s + (1 << 20));
	link_free(l);
}

/* The next-to-last segment of a burst is lost: one dup ACK only, too
 * few for fast retransmit; a tail loss probe (RFC 8985 §7) resends the
 * hole after 2 SRTT, no RTO (>= 200 ms) is needed. */
static void test_tlp_tail_loss(void **state)
{
	struct link *l = link_new(24, 100000, 0);
	struct utcp_info a;
	uint32_t smss;

	(void)state;
	l->delay = 10 * MS;
	link_start(l);
	handshake(l);
	smss = info(&l->ep[0]).smss;
	l->drop_seq[0] = 0x10000001u + 3 * smss;	/* the 4th of 5 */
	l->drop_seq_on[0] = true;
	assert_int_equal(utcp_send(l->ep[0].c, 5 * smss, l->now), 0);
	assert_true(run(l, 5000 * MS, NULL));
	a = info(&l->ep[0]);
	assert_int_equal(a.rto_fired, 0);
	assert_true(a.tlp_sent >= 1);
	assert_int_equal(a.bytes_retrans, smss);
	assert_int_equal(a.snd_acked, 5 * smss);
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, 5 * smss);
	link_free(l);
}

/* A segment and its fast retransmission are both lost: SACKs of data sent
 * after the retransmission (or a probe of the stalled recovery) resend it
 * again without waiting for the RTO. */
static void test_lost_retransmission(void **state)
{
	struct link *l = link_new(25, 200000, 0);
	struct utcp_info a;
	uint32_t smss;

	(void)state;
	l->delay = 10 * MS;
	link_start(l);
	handshake(l);
	smss = info(&l->ep[0]).smss;
	l->drop_seq[0] = 0x10000001u + 2 * smss;
	l->drop_seq_on[0] = true;
	l->drop_seq_more[0] = 1;		/* the first retransmission too */
	assert_int_equal(utcp_send(l->ep[0].c, 60 * smss, l->now), 0);
	assert_true(run(l, 10000 * MS, NULL));
	a = info(&l->ep[0]);
	assert_int_equal(a.rto_fired, 0);
	assert_true(a.lost_rtx + a.tlp_sent >= 1);
	assert_int_equal(a.snd_acked, 60 * smss);
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, 60 * smss);
	fprintf(stderr, "lost rtx: retrans %llu B, lost_rtx %llu, tlp %llu\n",
		(unsigned long long)a.bytes_retrans, (unsigned long long)a.lost_rtx,
		(unsigned long long)a.tlp_sent);
	link_free(l);
}

/* Two holes in one window, recovered in one fast recovery; the
 * retransmitted byte count is exactly the two lost segments. */
static bool lost_two_once;
static void test_sack_two_holes(void **state)
{
	struct link *l = link_new(21, 200000, 0);
	struct utcp_info a;
	uint32_t smss;

	(void)state;
	(void)lost_two_once;
	link_start(l);
	handshake(l);
	smss = info(&l->ep[0]).smss;
	/* 2nd and 6th segments of the first burst */
	l->drop_seq[0] = 0x10000001u + 1 * smss;
	l->drop_seq_on[0] = true;
	assert_int_equal(utcp_send(l->ep[0].c, 10 * smss, l->now), 0);
	/* drop the second one by hand: take it out of the queue */
	for (size_t i = 0; i < l->nq; i++) {
		struct utcp_seg sg;

		assert_int_equal(utcp_seg_parse(l->q[i].data, l->q[i].len, true, &sg), 0);
		if (sg.seq == 0x10000001u + 5 * smss) {
			free(l->q[i].data);
			l->q[i] = l->q[--l->nq];
			break;
		}
	}
	assert_true(run(l, 5000 * MS, NULL));
	a = info(&l->ep[0]);
	assert_int_equal(a.bytes_retrans, 2 * smss);
	assert_int_equal(a.rto_fired, 0);
	assert_int_equal(a.fast_recoveries, 1);
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, 10 * smss);
	link_free(l);
}

/* Without SACK: NewReno partial ACKs recover both holes, no RTO. */
static void test_newreno_no_sack(void **state)
{
	struct link *l = link_new(22, 200000, 0);
	struct utcp_info a;
	uint32_t smss;

	(void)state;
	l->ep[1].cfg.no_sack = true;
	l->ep[0].cfg.cc = UTCP_CC_NEWRENO;
	link_start(l);
	handshake(l);
	assert_false(info(&l->ep[0]).sack_ok);
	smss = info(&l->ep[0]).smss;
	l->drop_seq[0] = 0x10000001u + 1 * smss;
	l->drop_seq_on[0] = true;
	assert_int_equal(utcp_send(l->ep[0].c, 20 * smss, l->now), 0);
	assert_true(run(l, 10000 * MS, NULL));
	a = info(&l->ep[0]);
	assert_int_equal(a.snd_acked, 20 * smss);
	assert_int_equal(a.rto_fired, 0);
	assert_int_equal(a.fast_recoveries, 1);
	assert_int_equal(a.bytes_retrans, smss);
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, 20 * smss);
	link_free(l);
}

/* Out-of-order and duplicate arrivals: held, SACKed, delivered once. */
static void test_ooo_and_dup(void **state)
{
	struct link *l = link_new(23, 50000, 0);
	struct utcp_info b;
	uint32_t smss;

	(void)state;
	link_start(l);
	handshake(l);
	smss = info(&l->ep[0]).smss;
	assert_int_equal(utcp_send(l->ep[0].c, 8 * smss, l->now), 0);
	assert_int_equal(l->nq, 8);
	/* swap the arrival order of each pair, duplicate each segment */
	for (size_t i = 0; i < 8; i++) {
		l->q[i].at = l->now + 1 * MS + (i ^ 1) * 10;
		enqueue(l, l->q[i].to, l->q[i].data, l->q[i].len, l->q[i].at + 1000);
	}
	assert_true(run(l, 2000 * MS, NULL));
	b = info(&l->ep[1]);
	assert_int_equal(b.rcv_delivered, 8 * smss);
	assert_int_equal(b.ooo_segs, 4);
	assert_int_equal(info(&l->ep[0]).bytes_retrans, 0);
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, 8 * smss);
	/* duplicates got immediate ACKs carrying rcv_nxt */
	assert_int_equal(l->ep[1].log[l->ep[1].nlog - 1].ack, 0x10000001u + 8 * smss);
	link_free(l);
}

/* ---------------------------------------------------------------- RTO */

static void test_rto_backoff_give_up(void **state)
{
	struct link *l = link_new(30, 100000, 0);
	uint64_t t[16] = { 0 };
	int n = 0;

	(void)state;
	l->ep[0].cfg.max_retries = 5;
	l->ep[0].cfg.rto_min_ns = 200 * MS;
	link_start(l);
	handshake(l);
	l->blackhole[0] = true;
	assert_int_equal(utcp_send(l->ep[0].c, 1000, l->now), 0);
	run(l, 100000 * MS, NULL);
	assert_true(l->ep[0].closed);
	assert_int_equal(l->ep[0].err, -ETIMEDOUT);
	for (size_t i = 0; i < l->ep[0].nlog && n < 16; i++)
		if (l->ep[0].log[i].len == 1000)
			t[n++] = l->ep[0].log[i].t;
	/* original + 5 retransmissions, each interval double the last */
	assert_int_equal(n, 6);
	assert_true(t[1] - t[0] >= 200 * MS);
	for (int i = 2; i < n; i++)
		assert_int_equal(t[i] - t[i - 1], 2 * (t[i - 1] - t[i - 2]));
	assert_int_equal(info(&l->ep[0]).state, UTCP_CLOSED);
	/* the abort sent a RST */
	assert_true(l->ep[0].log[l->ep[0].nlog - 1].flags & UTCP_RST);
	link_free(l);
}

/* rto_max caps the back-off; RTO recovery after a black-out resends the
 * window and the transfer completes. */
static void test_rto_recovery(void **state)
{
	struct link *l = link_new(31, 300000, 0);
	struct utcp_info a;

	(void)state;
	l->ep[0].cfg.rto_max_ns = 1000 * MS;
	link_start(l);
	handshake(l);
	l->blackhole[0] = true;
	assert_int_equal(utcp_send(l->ep[0].c, 300000, l->now), 0);
	run(l, 5000 * MS, NULL);
	a = info(&l->ep[0]);
	assert_true(a.rto_fired >= 4);
	assert_int_equal(a.rto_ns, 1000 * MS);
	assert_int_equal(a.cwnd, a.smss);
	l->blackhole[0] = false;
	assert_true(run(l, 30000 * MS, NULL));
	a = info(&l->ep[0]);
	assert_int_equal(a.snd_acked, 300000);
	assert_int_equal(a.backoff, 0);
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, 300000);
	link_free(l);
}

/* ---------------------------------------------------------- zero window */

static void test_zero_window(void **state)
{
	struct link *l = link_new(40, 300000, 0);
	struct utcp_info a, b;
	size_t probes_before;

	(void)state;
	l->ep[1].cfg.rcv_buf = 65535;
	l->ep[1].no_recved = true;
	link_start(l);
	handshake(l);
	assert_int_equal(utcp_send(l->ep[0].c, 300000, l->now), 0);
	run(l, 20000 * MS, NULL);
	a = info(&l->ep[0]);
	b = info(&l->ep[1]);
	assert_int_equal(b.rcv_delivered, 65535);
	assert_int_equal(a.snd_wnd, 0);
	assert_true(a.zwp_sent >= 3);		/* persist timer probing */
	assert_int_equal(a.rto_fired, 0);
	assert_false(l->ep[0].closed);		/* probing never gives up */
	/* probes back off: later gaps are longer */
	{
		uint64_t pt[64];
		int n = 0;

		for (size_t i = 0; i < l->ep[0].nlog && n < 64; i++)
			if (l->ep[0].log[i].seq == a.snd_una - 1 && !l->ep[0].log[i].len)
				pt[n++] = l->ep[0].log[i].t;
		assert_true(n >= 3);
		assert_true(pt[2] - pt[1] > pt[1] - pt[0]);
	}
	/* the window update itself is lost: the next probe finds it */
	l->drop_flags[1] = UTCP_ACK;
	l->drop_count[1] = 1;
	probes_before = (size_t)a.zwp_sent;
	l->ep[1].no_recved = false;
	utcp_recved(l->ep[1].c, 65535, l->now);
	assert_true(run(l, 200000 * MS, NULL));
	a = info(&l->ep[0]);
	assert_true(a.zwp_sent > probes_before);
	/* everything arrives once the owner keeps reading */
	assert_int_equal(info(&l->ep[1]).rcv_delivered, 300000);
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, 300000);
	link_free(l);
}

/*
 * A receiver that does not read while data keeps coming: its window
 * shrinks to zero and it must never take more than its buffer (the xsk
 * transport's receive ring is exactly that big). With window scaling a
 * kept right edge is rounded up to the scale unit; taken as the new
 * promise, each ACK moved it further (a full 1 MiB ring was overrun by
 * 6 KB in 64 KB ib_write_bw over xsk).
 */
static void test_window_no_creep(void **state)
{
	const uint32_t rb = 1u << 20;
	struct link *l = link_new(41, 3u << 20, 0);
	struct utcp_info b;

	(void)state;
	l->ep[0].cfg.snd_buf = 4u << 20;
	l->ep[1].cfg.rcv_buf = rb;
	l->ep[1].no_recved = true;
	link_start(l);
	handshake(l);
	assert_true(info(&l->ep[1]).rcv_wscale > 0);
	assert_int_equal(utcp_send(l->ep[0].c, 3u << 20, l->now), 0);
	run(l, 20000 * MS, NULL);
	b = info(&l->ep[1]);
	assert_true(b.rcv_delivered <= rb);
	assert_true(b.rcv_delivered > rb - utcp_smss(l->ep[1].c));
	/* every window it sent ends inside the buffer */
	for (size_t i = 0; i < l->ep[1].nlog; i++) {
		const struct sent *r = &l->ep[1].log[i];
		uint32_t edge = r->ack + ((uint32_t)r->wnd << b.rcv_wscale);

		if (!(r->flags & UTCP_SYN) && (r->flags & UTCP_ACK))
			assert_true((uint32_t)(edge - (l->ep[0].cfg.iss + 1)) <=
				    rb + (1u << b.rcv_wscale) - 1);
	}
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, b.rcv_delivered);
	link_free(l);
}

/* ------------------------------------------------------------ close */

static bool both_closed(struct link *l)
{
	return l->ep[0].closed && l->ep[1].closed;
}

static void test_close_normal(void **state)
{
	struct link *l = link_new(50, 5000, 3000);
	uint64_t tw_start;

	(void)state;
	l->ep[0].cfg.msl_ns = 1000 * MS;
	link_start(l);
	handshake(l);
	transfer(l, 10000 * MS);
	assert_int_equal(utcp_close(l->ep[0].c, l->now), 0);
	assert_int_equal(info(&l->ep[0]).state, UTCP_FIN_WAIT_1);
	run(l, 100 * MS, NULL);
	assert_int_equal(info(&l->ep[0]).state, UTCP_FIN_WAIT_2);
	assert_int_equal(info(&l->ep[1]).state, UTCP_CLOSE_WAIT);
	assert_true(l->ep[1].eof);
	assert_int_equal(utcp_send(l->ep[0].c, 10, l->now), -EPIPE);
	assert_int_equal(utcp_close(l->ep[1].c, l->now), 0);
	assert_int_equal(info(&l->ep[1]).state, UTCP_LAST_ACK);
	run(l, 100 * MS, NULL);
	assert_true(l->ep[1].closed);
	assert_int_equal(l->ep[1].err, 0);
	assert_int_equal(info(&l->ep[0]).state, UTCP_TIME_WAIT);
	assert_true(l->ep[0].eof);
	tw_start = l->ep[0].t_state[UTCP_TIME_WAIT];
	run(l, tw_start + 2000 * MS - 1 - l->now, NULL);
	assert_false(l->ep[0].closed);
	run(l, 1, NULL);
	assert_true(l->ep[0].closed);
	assert_int_equal(l->ep[0].t_state[UTCP_CLOSED], tw_start + 2000 * MS);
	assert_int_equal(l->ep[0].err, 0);
	link_free(l);
}

static void test_simultaneous_close(void **state)
{
	struct link *l = link_new(51, 1000, 1000);

	(void)state;
	for (int i = 0; i < 2; i++)
		l->ep[i].cfg.msl_ns = 500 * MS;
	link_start(l);
	handshake(l);
	transfer(l, 10000 * MS);
	assert_int_equal(utcp_close(l->ep[0].c, l->now), 0);
	assert_int_equal(utcp_close(l->ep[1].c, l->now), 0);
	run(l, 100 * MS, NULL);
	for (int i = 0; i < 2; i++) {
		assert_true(l->ep[i].states & (1u << UTCP_CLOSING));
		assert_int_equal(info(&l->ep[i]).state, UTCP_TIME_WAIT);
		assert_true(l->ep[i].eof);
	}
	assert_true(run(l, 1100 * MS, both_closed));
	assert_int_equal(l->ep[0].err, 0);
	assert_int_equal(l->ep[1].err, 0);
	link_free(l);
}

/* FIN lost: retransmitted by the RTO, the close completes. */
static void test_fin_loss(void **state)
{
	struct link *l = link_new(52, 1000, 0);

	(void)state;
	link_start(l);
	handshake(l);
	transfer(l, 10000 * MS);
	l->drop_flags[0] = UTCP_FIN;
	l->drop_count[0] = 1;
	assert_int_equal(utcp_close(l->ep[0].c, l->now), 0);
	run(l, 3000 * MS, NULL);
	assert_int_equal(count_sent(&l->ep[0], UTCP_FIN, 0), 2);
	assert_true(l->ep[1].eof);
	assert_int_equal(info(&l->ep[0]).state, UTCP_FIN_WAIT_2);
	link_free(l);
}

/* ---------------------------------------------------------------- RST */

/* Inject a segment from B's 4-tuple into A. */
static int inject(struct link *l, int to, uint32_t seq, uint32_t ack, uint8_t flags)
{
	struct ep *from = &l->ep[!to];
	struct utcp_conn tmp;
	uint8_t hdr[UTCP_MAX_HDR];
	int n;

	memset(&tmp, 0, sizeof(tmp));
	tmp.cfg = from->cfg;
	utcp_cfg_init(&tmp.cfg);
	n = utcp_build_hdr(&tmp, hdr, seq, ack, flags, 1000, NULL, 0, NULL, 0, 0);
	return utcp_input(l->ep[to].c, hdr, (size_t)n, l->now);
}

static void test_rst_states(void **state)
{
	(void)state;
	/* SYN_SENT: RST acking our SYN -> ECONNREFUSED; a RST without a
	 * valid ACK is ignored */
	{
		struct link *l = link_new(60, 0, 0);

		link_start(l);
		assert_int_equal(utcp_connect(l->ep[0].c, l->now), 0);
		inject(l, 0, 0, 0x10000005u, UTCP_RST | UTCP_ACK);
		assert_false(l->ep[0].closed);
		inject(l, 0, 0, 0x10000001u, UTCP_RST | UTCP_ACK);
		assert_true(l->ep[0].closed);
		assert_int_equal(l->ep[0].err, -ECONNREFUSED);
		link_free(l);
	}
	/* connecting to a CLOSED peer: it answers RST -> ECONNREFUSED */
	{
		struct link *l = link_new(61, 0, 0);

		link_start(l);
		assert_int_equal(utcp_connect(l->ep[0].c, l->now), 0);
		run(l, 100 * MS, NULL);
		assert_true(l->ep[0].closed);
		assert_int_equal(l->ep[0].err, -ECONNREFUSED);
		assert_true(l->ep[1].log[0].flags & UTCP_RST);
		link_free(l);
	}
	/* SYN_RCVD (passive): RST returns the listener to LISTEN */
	{
		struct link *l = link_new(62, 0, 0);

		l->drop_flags[1] = UTCP_SYN;	/* keep A in SYN_SENT */
		l->drop_count[1] = 100;
		link_start(l);
		assert_int_equal(utcp_listen(l->ep[1].c), 0);
		assert_int_equal(utcp_connect(l->ep[0].c, l->now), 0);
		run(l, 10 * MS, NULL);
		assert_int_equal(info(&l->ep[1]).state, UTCP_SYN_RCVD);
		inject(l, 1, 0x10000001u, 0, UTCP_RST);
		assert_int_equal(info(&l->ep[1]).state, UTCP_LISTEN);
		assert_false(l->ep[1].closed);
		link_free(l);
	}
	/* synchronized states: exact RST resets; in-window but not exact
	 * gets a challenge ACK (RFC 5961); out of window is ignored */
	static const enum utcp_state want[] = {
		UTCP_ESTABLISHED, UTCP_FIN_WAIT_1, UTCP_FIN_WAIT_2,
		UTCP_CLOSE_WAIT, UTCP_LAST_ACK, UTCP_CLOSING, UTCP_TIME_WAIT,
	};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		struct link *l = link_new(63 + k, 0, 0);
		struct ep *a = &l->ep[0];
		uint32_t rn;
		size_t nlog;

		link_start(l);
		handshake(l);
		switch (want[k]) {
		case UTCP_FIN_WAIT_1:
			l->blackhole[0] = true;
			utcp_close(a->c, l->now);
			break;
		case UTCP_FIN_WAIT_2:
			utcp_close(a->c, l->now);
			run(l, 100 * MS, NULL);
			break;
		case UTCP_CLOSE_WAIT:
			utcp_close(l->ep[1].c, l->now);
			run(l, 100 * MS, NULL);
			break;
		case UTCP_LAST_ACK:
			utcp_close(l->ep[1].c, l->now);
			run(l, 100 * MS, NULL);
			l->blackhole[0] = true;
			utcp_close(a->c, l->now);
			break;
		case UTCP_CLOSING:
			l->blackhole[0] = l->blackhole[1] = true;
			utcp_close(a->c, l->now);
			utcp_close(l->ep[1].c, l->now);
			/* deliver B's FIN only */
			l->blackhole[1] = false;
			l->ep[1].c->t_rto = l->now + 1;
			run(l, 50 * MS, NULL);
			break;
		case UTCP_TIME_WAIT:
			utcp_close(a->c, l->now);
			run(l, 100 * MS, NULL);
			utcp_close(l->ep[1].c, l->now);
			l->blackhole[0] = true;
			run(l, 100 * MS, NULL);
			break;
		default:
			break;
		}
		assert_string_equal(utcp_state_name(info(a).state), utcp_state_name(want[k]));
		rn = info(a).rcv_nxt;
		nlog = a->nlog;
		l->blackhole[0] = false;
		/* out of window: dropped (no RST processing) */
		inject(l, 0, rn + 10000000u, 0, UTCP_RST);
		assert_false(a->closed);
		/* in window, not exact: challenge ACK, still open */
		inject(l, 0, rn + 1, 0, UTCP_RST);
		assert_false(a->closed);
		assert_int_equal(a->nlog, nlog + 1);
		assert_int_equal(a->log[nlog].flags, UTCP_ACK);
		assert_int_equal(info(a).challenge_acks, 1);
		/* a SYN in a synchronized state: challenge ACK too */
		inject(l, 0, rn, 0, UTCP_SYN);
		assert_false(a->closed);
		assert_int_equal(info(a).challenge_acks, 2);
		/* exact: reset */
		inject(l, 0, rn, 0, UTCP_RST);
		assert_true(a->closed);
		assert_int_equal(info(a).state, UTCP_CLOSED);
		if (want[k] == UTCP_TIME_WAIT)
			assert_int_equal(a->err, 0);
		else
			assert_int_equal(a->err, -ECONNRESET);
		link_free(l);
	}
}

/* LISTEN ignores RST; a flood of in-window RSTs gets at most
 * challenge_ack_limit challenge ACKs per second (RFC 5961 §7). */
static void test_listen_rst_and_challenge_limit(void **state)
{
	struct link *l = link_new(69, 0, 0);
	uint32_t rn;

	(void)state;
	l->ep[0].cfg.challenge_ack_limit = 5;
	link_start(l);
	assert_int_equal(utcp_listen(l->ep[1].c), 0);
	inject(l, 1, 1234, 0, UTCP_RST);
	assert_int_equal(info(&l->ep[1]).state, UTCP_LISTEN);
	assert_int_equal(l->ep[1].nlog, 0);
	/* an ACK to a listener gets a RST (RFC 9293 §3.10.7.2) */
	inject(l, 1, 1234, 5678, UTCP_ACK);
	assert_int_equal(l->ep[1].nlog, 1);
	assert_int_equal(l->ep[1].log[0].flags, UTCP_RST);
	assert_int_equal(l->ep[1].log[0].seq, 5678);
	assert_int_equal(utcp_connect(l->ep[0].c, l->now), 0);
	assert_true(run(l, 10000 * MS, both_established));
	rn = info(&l->ep[0]).rcv_nxt;
	for (int i = 0; i < 20; i++)
		inject(l, 0, rn + 1 + (uint32_t)i, 0, UTCP_RST);
	assert_int_equal(info(&l->ep[0]).challenge_acks, 5);
	assert_int_equal(info(&l->ep[0]).challenge_acks_limited, 15);
	l->now += 1000 * MS;
	inject(l, 0, rn + 100, 0, UTCP_RST);
	assert_int_equal(info(&l->ep[0]).challenge_acks, 6);
	assert_false(l->ep[0].closed);
	link_free(l);
}

/* ------------------------------------------------- checksum, hostile */

static void test_checksum_rejects(void **state)
{
	struct link *l = link_new(70, 20000, 0);

	(void)state;
	link_start(l);
	handshake(l);
	l->corrupt_next_data[0] = true;
	transfer(l, 10000 * MS);
	assert_int_equal(l->csum_rejects, 1);
	assert_int_equal(info(&l->ep[1]).csum_errors, 1);
	assert_true(info(&l->ep[0]).bytes_retrans > 0);
	link_free(l);
}

/* PAWS: an old duplicate with an older TSval is dropped (RFC 7323 §5). */
static void test_paws(void **state)
{
	struct link *l = link_new(71, 20000, 0);
	uint8_t *old;
	uint32_t oldlen;
	struct utcp_info b;

	(void)state;
	link_start(l);
	handshake(l);
	assert_int_equal(utcp_send(l->ep[0].c, 1000, l->now), 0);
	assert_int_equal(l->nq, 1);
	oldlen = l->q[0].len;
	old = malloc(oldlen);
	memcpy(old, l->q[0].data, oldlen);
	run(l, 100 * MS, NULL);
	l->now += 5000 * MS;
	assert_int_equal(utcp_send(l->ep[0].c, 1000, l->now), 0);
	run(l, 100 * MS, NULL);
	/* replay the first segment: its TSval is older than TS.Recent */
	assert_int_equal(utcp_input(l->ep[1].c, old, oldlen, l->now), 0);
	b = info(&l->ep[1]);
	assert_int_equal(b.paws_drops, 1);
	assert_int_equal(b.rcv_delivered, 2000);
	free(old);
	link_free(l);
}

/* Segments from another 4-tuple, malformed options: not processed. */
static void test_foreign_and_bad(void **state)
{
	struct link *l = link_new(72, 0, 0);
	uint8_t hdr[UTCP_MAX_HDR];
	struct utcp_conn tmp;
	const uint8_t bad[4] = { 2, 9, 0, 0 };
	int n;

	(void)state;
	link_start(l);
	handshake(l);
	memset(&tmp, 0, sizeof(tmp));
	tmp.cfg = l->ep[1].cfg;
	tmp.cfg.lport = 999;
	utcp_cfg_init(&tmp.cfg);
	n = utcp_build_hdr(&tmp, hdr, 0, 0, UTCP_RST, 0, NULL, 0, NULL, 0, 0);
	assert_int_equal(utcp_input(l->ep[0].c, hdr, (size_t)n, l->now), -ENOENT);
	tmp.cfg.lport = l->ep[1].cfg.lport;
	n = utcp_build_hdr(&tmp, hdr, info(&l->ep[0]).rcv_nxt, 0, UTCP_RST, 0, bad, 4, NULL, 0, 0);
	assert_int_equal(utcp_input(l->ep[0].c, hdr, (size_t)n, l->now), -EINVAL);
	assert_false(l->ep[0].closed);
	assert_int_equal(info(&l->ep[0]).bad_segs, 1);
	link_free(l);
}

/*
 * A connected link after a warm-up segment: the first ACK after the
 * handshake also opens the window beyond the 64 KiB a SYN can announce
 * (immediate update), so the tests start from the full window.
 */
static struct link *link_warm(uint64_t seed, size_t sbytes_a)
{
	struct link *l = link_new(seed, sbytes_a, 0);

	link_start(l);
	handshake(l);
	assert_int_equal(utcp_send(l->ep[0].c, 100, l->now), 0);
	run(l, 100 * MS, NULL);
	return l;
}

/* -------------------------------------------------------- delayed ACK */

static void test_delayed_ack(void **state)
{
	struct link *l = link_warm(80, 100000);
	struct utcp_info b0, b1;
	size_t k;

	(void)state;
	b0 = info(&l->ep[1]);
	assert_int_equal(b0.rcv_wnd, 256 * 1024);
	/* one small segment: ACKed after exactly the 40 ms delay */
	assert_int_equal(utcp_send(l->ep[0].c, 100, l->now), 0);
	k = l->ep[1].nlog;
	run(l, 100 * MS, NULL);
	assert_int_equal(l->ep[1].nlog, k + 1);
	assert_int_equal(l->ep[1].log[k].t - (l->ep[0].log[l->ep[0].nlog - 1].t + l->delay),
			 40 * MS);
	/* ten full segments: five ACKs (every second one) */
	b0 = info(&l->ep[1]);
	assert_int_equal(utcp_send(l->ep[0].c, 10 * info(&l->ep[0]).smss, l->now), 0);
	run(l, 100 * MS, NULL);
	b1 = info(&l->ep[1]);
	assert_int_equal(b1.acks_out - b0.acks_out, 5);
	/* delack_segs = 1: one ACK per segment */
	link_free(l);
	l = link_new(81, 100000, 0);
	l->ep[1].cfg.delack_segs = 1;
	link_start(l);
	handshake(l);
	b0 = info(&l->ep[1]);
	assert_int_equal(utcp_send(l->ep[0].c, 10 * info(&l->ep[0]).smss, l->now), 0);
	run(l, 100 * MS, NULL);
	b1 = info(&l->ep[1]);
	assert_int_equal(b1.acks_out - b0.acks_out, 10);
	link_free(l);
}

/* ------------------------------------------------ congestion control */

static void cc_drive(struct utcp_conn *c, uint64_t *now, int rtts, uint32_t *trace)
{
	/* one window of ACKs per RTT of 100 ms, one SMSS each */
	for (int r = 0; r < rtts; r++) {
		uint32_t segs = c->cwnd / utcp_smss(c);

		for (uint32_t i = 0; i < segs; i++)
			c->cc->on_ack(c, utcp_smss(c), *now + (uint64_t)i * 100 * MS / segs);
		*now += 100 * MS;
		trace[r] = c->cwnd;
	}
}

static void test_cc_behaviour(void **state)
{
	struct utcp_cfg cfg = { .laddr = IP_A, .raddr = IP_B, .lport = 1, .rport = 2 };
	struct link *l = link_new(90, 0, 0);
	uint32_t tr[2][100];

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct utcp_conn *c;
		uint64_t now = 1000 * MS;
		uint32_t smss, before;

		cfg.cc = k ? UTCP_CC_CUBIC : UTCP_CC_NEWRENO;
		c = utcp_new(&cfg, &ops, &l->ep[0]);
		assert_non_null(c);
		c->srtt = 100 * MS;
		smss = utcp_smss(c);
		assert_int_equal(c->cwnd, 10 * smss);
		/* slow start doubles per RTT */
		cc_drive(c, &now, 3, tr[k]);
		assert_int_equal(c->cwnd, 80 * smss);
		/* loss with 80 segments in flight */
		c->snd_una = 0;
		c->snd_max = 80 * smss;
		before = c->cwnd;
		c->cc->on_loss(c, now);
		if (k == 0) {
			assert_int_equal(c->ssthresh, 40 * smss);	/* half */
		} else {
			assert_int_equal(c->ssthresh, (uint32_t)(0.7 * 80 * smss));
		}
		assert_int_equal(c->cwnd, c->ssthresh);
		c->cc->on_recovery_exit(c, now);
		assert_true(c->cwnd <= c->ssthresh);
		c->cwnd = c->ssthresh;
		/* congestion avoidance: grows, monotonically, no doubling */
		cc_drive(c, &now, 100, tr[k]);
		for (int r = 1; r < 100; r++)
			assert_true(tr[k][r] >= tr[k][r - 1]);
		assert_true(tr[k][0] < 2 * c->ssthresh);
		if (k == 0) {
			/* Reno: ~1 SMSS per RTT */
			assert_true(tr[k][99] - tr[k][0] >= 95 * smss);
			assert_true(tr[k][99] - tr[k][0] <= 100 * smss);
		} else {
			/* CUBIC (RTT 100 ms, so the cubic region rules):
			 * concave up to W_max = 80 at t = K, convex beyond */
			double K = 0;
			int ik;
			uint32_t at_k;

			while (0.4 * K * K * K < 80 * 0.3)
				K += 0.001;
			ik = (int)(K * 10);	/* rounds of 100 ms */
			at_k = tr[k][ik];
			fprintf(stderr, "cubic: K %.2f s, cwnd %u segs at K, %u at +0, %u at +10, %u at end\n",
				K, at_k / smss, tr[k][0] / smss, tr[k][10] / smss, tr[k][99] / smss);
			assert_true(at_k >= 78 * smss && at_k <= 84 * smss);
			/* growth slows near W_max ... */
			assert_true(tr[k][ik] - tr[k][ik - 10] < tr[k][10] - tr[k][0]);
			/* ... and accelerates after it */
			assert_true(tr[k][99] - tr[k][89] > 2 * (tr[k][ik + 10] - tr[k][ik]));
		}
		/* RTO: cwnd to one segment, ssthresh reduced */
		before = c->cwnd;
		c->snd_max = c->snd_una + before;
		c->cc->on_rto(c, now);
		assert_int_equal(c->cwnd, smss);
		assert_true(c->ssthresh < before);
		utcp_free(c);
	}
	link_free(l);
}

/* End to end: one loss in congestion avoidance reduces cwnd by the
 * algorithm's factor, and both keep transferring. */
static void test_cc_end_to_end(void **state)
{
	for (int k = 0; k < 2; k++) {
		struct link *l = link_new(91 + k, 6 << 20, 0);
		struct utcp_info a;
		uint32_t before = 0, after = 0;
		bool cut = false;

		(void)state;
		l->ep[0].cfg.cc = k ? UTCP_CC_CUBIC : UTCP_CC_NEWRENO;
		l->ep[0].cfg.snd_buf = 6 << 20;
		l->ep[1].cfg.rcv_buf = 8 << 20;
		l->delay = 5 * MS;
		link_start(l);
		handshake(l);
		pushed[0] = pushed[1] = 0;
		while (!push_and_check(l)) {
			uint32_t prev = info(&l->ep[0]).cwnd;

			run(l, MS / 10, NULL);
			a = info(&l->ep[0]);
			/* early enough that new data is still to be sent:
			 * slow start with RFC 3465 ABC (L = 2 SMSS) doubles
			 * cwnd per RTT with delayed ACKs */
			if (!cut && a.snd_acked > (1 << 20)) {
				/* lose the next new segment */
				l->drop_seq[0] = a.snd_max;
				l->drop_seq_on[0] = true;
				before = a.cwnd;
				cut = true;
			}
			if (cut && !after && a.in_recovery) {
				after = a.cwnd;
				before = prev;	/* cwnd just before the reduction */
			}
			assert_true(l->now < 100000 * MS);
		}
		assert_true(after > 0);
		fprintf(stderr, "%s: cwnd %u -> %u (%.2f)\n", k ? "cubic" : "newreno",
			before, after, (double)after / before);
		if (k == 0)
			assert_true(after <= before / 2 + 3 * info(&l->ep[0]).smss);
		else
			assert_true(after <= before * 0.7 + 3 * info(&l->ep[0]).smss &&
				    after >= before * 0.6);
		a = info(&l->ep[0]);
		assert_int_equal(a.rto_fired, 0);
		assert_int_equal(a.fast_recoveries, 1);
		assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, l->ep[0].scap);
		link_free(l);
	}
}


/* ----------------------------------------------- ACK once per RX batch */

/* Deliver the queued packets for endpoint @to, in send order, as one
 * input batch at their (common) arrival time, as the xsk transport feeds
 * one RX ring batch. Return: packets fed. */
static size_t batch_feed(struct link *l, int to)
{
	struct utcp_conn *c = l->ep[to].c;
	size_t fed = 0;

	utcp_input_batch_begin(c);
	for (;;) {
		size_t best = SIZE_MAX;

		for (size_t i = 0; i < l->nq; i++)
			if (l->q[i].to == to &&
			    (best == SIZE_MAX || l->q[i].order < l->q[best].order))
				best = i;
		if (best == SIZE_MAX)
			break;
		struct pkt p = l->q[best];

		l->q[best] = l->q[--l->nq];
		if (p.at > l->now)
			l->now = p.at;
		assert_int_equal(utcp_input(c, p.data, p.len, l->now), 0);
		free(p.data);
		fed++;
	}
	utcp_input_batch_end(c, l->now);
	return fed;
}

/* @n full segments from A, sent at once (cwnd opened by hand) */
static uint32_t send_burst(struct link *l, uint32_t n)
{
	uint32_t smss = info(&l->ep[0]).smss;

	l->ep[0].c->cwnd = 1000 * smss;
	assert_int_equal(utcp_send(l->ep[0].c, n * smss, l->now), 0);
	assert_int_equal(l->nq, n);
	return smss;
}

/* In order, one batch: one ACK per batch, at most ack_stretch_segs
 * segments per ACK, and the last one covers everything. */
static void test_ack_per_batch(void **state)
{
	struct link *l = link_warm(95, 1 << 20);
	struct utcp_info b0, b1;
	uint32_t smss;

	(void)state;
	/* 20 segments in one batch: a single ACK, at the batch's end */
	b0 = info(&l->ep[1]);
	smss = send_burst(l, 20);
	assert_int_equal(batch_feed(l, 1), 20);
	b1 = info(&l->ep[1]);
	assert_int_equal(b1.acks_out - b0.acks_out, 1);
	assert_int_equal(l->ep[1].log[l->ep[1].nlog - 1].ack, b1.rcv_nxt);
	assert_int_equal(b1.rcv_nxt - b0.rcv_nxt, 20 * smss);
	/* no delayed-ACK timer left behind: nothing owed */
	assert_int_equal(l->ep[1].c->t_delack, 0);
	run(l, 100 * MS, NULL);
	/* 70 segments: the bound (32) forces ACKs after 32 and 64, the end
	 * of the batch one more */
	b0 = info(&l->ep[1]);
	send_burst(l, 70);
	assert_int_equal(batch_feed(l, 1), 70);
	b1 = info(&l->ep[1]);
	assert_int_equal(b1.acks_out - b0.acks_out, 3);
	assert_int_equal(l->ep[1].log[l->ep[1].nlog - 3].ack, b0.rcv_nxt + 32 * smss);
	assert_int_equal(l->ep[1].log[l->ep[1].nlog - 2].ack, b0.rcv_nxt + 64 * smss);
	assert_int_equal(l->ep[1].log[l->ep[1].nlog - 1].ack, b1.rcv_nxt);
	run(l, 100 * MS, NULL);
	/* outside a batch: every second segment, as before */
	b0 = info(&l->ep[1]);
	send_burst(l, 10);
	run(l, 100 * MS, NULL);
	b1 = info(&l->ep[1]);
	assert_int_equal(b1.acks_out - b0.acks_out, 5);
	/* a small receive buffer lowers the bound to a quarter of it */
	link_free(l);
	l = link_new(96, 1 << 20, 0);
	l->ep[1].cfg.rcv_buf = 16 * 1460;
	link_start(l);
	handshake(l);
	b0 = info(&l->ep[1]);
	send_burst(l, 8);
	assert_int_equal(batch_feed(l, 1), 8);
	b1 = info(&l->ep[1]);
	/* quarter of 16 segments = 4: ACKs after 4 and 8 */
	assert_int_equal(b1.acks_out - b0.acks_out, 2);
	assert_memory_equal(l->ep[1].rdata, l->ep[0].sdata, 8 * smss);
	link_free(l);
}

/* Out of order inside a batch: the duplicate ACK leaves at once (RFC
 * 5681 §4.2), for every out-of-order segment, not at the batch's end. */
static void test_ack_batch_ooo_immediate(void **state)
{
	struct link *l = link_warm(97, 1 << 20);
	struct utcp_info b0, b1;
	uint32_t smss, hole;
	size_t k;

	(void)state;
	b0 = info(&l->ep[1]);
	smss = info(&l->ep[0]).smss;
	hole = info(&l->ep[0]).snd_max + 2 * smss;	/* the third segment */
	l->drop_seq[0] = hole;
	l->drop_seq_on[0] = true;
	l->ep[0].c->cwnd = 1000 * smss;
	assert_int_equal(utcp_send(l->ep[0].c, 10 * smss, l->now), 0);
	assert_int_equal(l->nq, 9);
	k = l->ep[1].nlog;
	assert_int_equal(batch_feed(l, 1), 9);
	b1 = info(&l->ep[1]);
	/* 2 in order (held), then 7 out of order: 7 immediate dup ACKs, each
	 * for the hole and with a SACK block, nothing more at the end */
	assert_int_equal(b1.ooo_segs - b0.ooo_segs, 7);
	assert_int_equal(b1.acks_out - b0.acks_out, 7);
	assert_int_equal(l->ep[1].nlog - k, 7);
	for (size_t i = k; i < l->ep[1].nlog; i++) {
		assert_int_equal(l->ep[1].log[i].ack, hole);
		assert_true(l->ep[1].log[i].o.nsack >= 1);
	}
	/* recovery fills the hole: everything arrives */
	run(l, 2000 * MS, NULL);
	assert_int_equal(info(&l->ep[1]).rcv_delivered - b0.rcv_delivered, 10 * smss);
	link_free(l);
}

/* RFC 3465 ABC: slow start grows by the bytes an ACK covers, at most
 * 2 SMSS (1 SMSS in slow start after an RTO); congestion avoidance
 * counts bytes, so stretch ACKs grow cwnd as per-segment ACKs do. */
static void test_abc(void **state)
{
	struct utcp_cfg cfg = { .laddr = IP_A, .raddr = IP_B, .lport = 1, .rport = 2 };
	struct link *l = link_new(98, 0, 0);

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct utcp_conn *c, *d;
		uint64_t now = 1000 * MS;
		uint32_t smss, w;

		cfg.cc = k ? UTCP_CC_CUBIC : UTCP_CC_NEWRENO;
		c = utcp_new(&cfg, &ops, &l->ep[0]);
		d = utcp_new(&cfg, &ops, &l->ep[0]);
		assert_non_null(c);
		assert_non_null(d);
		c->srtt = d->srtt = 100 * MS;
		smss = utcp_smss(c);
		w = c->cwnd;
		/* slow start: an ACK of one segment: +1 SMSS; of half a
		 * segment: + half; of 4 segments (stretch): +2 SMSS */
		c->cc->on_ack(c, smss, now);
		assert_int_equal(c->cwnd, w + smss);
		c->cc->on_ack(c, smss / 2, now);
		assert_int_equal(c->cwnd, w + smss + smss / 2);
		c->cc->on_ack(c, 4 * smss, now);
		assert_int_equal(c->cwnd, w + 3 * smss + smss / 2);
		/* after an RTO: L = 1 SMSS */
		c->rto_recovery = true;
		w = c->cwnd;
		c->cc->on_ack(c, 4 * smss, now);
		assert_int_equal(c->cwnd, w + smss);
		c->rto_recovery = false;
		/* one window of slow start by 16-segment ACKs reaches at
		 * least 1.5 x (ACK every 2 segments with L = 1 SMSS) */
		w = c->cwnd = d->cwnd = 64 * smss;
		for (int i = 0; i < 64 / 16; i++)
			c->cc->on_ack(c, 16 * smss, now);
		assert_int_equal(c->cwnd, w + 4 * 2 * smss);
		/* congestion avoidance: bytes, not ACKs, count: 8 ACKs of 16
		 * segments grow cwnd like 64 ACKs of 2 segments */
		c->ssthresh = d->ssthresh = 64 * smss;
		c->cwnd = d->cwnd = 64 * smss;
		for (int r = 0; r < 20; r++) {
			for (int i = 0; i < 8; i++)
				c->cc->on_ack(c, 16 * smss, now + (uint64_t)i * 12 * MS);
			for (int i = 0; i < 64; i++)
				d->cc->on_ack(d, 2 * smss, now + (uint64_t)i * 1500000);
			now += 100 * MS;
		}
		fprintf(stderr, "%s: CA after 20 RTTs: stretch ACKs %u, 2-segment ACKs %u segs\n",
			k ? "cubic" : "newreno", c->cwnd / smss, d->cwnd / smss);
		assert_true(c->cwnd > 64 * smss);
		assert_true(c->cwnd + 2 * smss >= d->cwnd && d->cwnd + 2 * smss >= c->cwnd);
		utcp_free(c);
		utcp_free(d);
	}
	link_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_ack_per_batch),
		cmocka_unit_test(test_ack_batch_ooo_immediate),
		cmocka_unit_test(test_abc),
		cmocka_unit_test(test_handshake_no_options),
		cmocka_unit_test(test_simultaneous_open),
		cmocka_unit_test(test_syn_loss),
		cmocka_unit_test(test_synack_loss),
		cmocka_unit_test(test_syn_give_up),
		cmocka_unit_test(test_transfer_clean),
		cmocka_unit_test(test_cwnd_rwnd_limited),
		cmocka_unit_test(test_transfer_impaired),
		cmocka_unit_test(test_seq_wrap),
		cmocka_unit_test(test_window_scale),
		cmocka_unit_test(test_sack_single_loss),
		cmocka_unit_test(test_sack_two_holes),
		cmocka_unit_test(test_tlp_tail_loss),
		cmocka_unit_test(test_beyond_2g),
		cmocka_unit_test(test_lost_retransmission),
		cmocka_unit_test(test_newreno_no_sack),
		cmocka_unit_test(test_ooo_and_dup),
		cmocka_unit_test(test_rto_backoff_give_up),
		cmocka_unit_test(test_rto_recovery),
		cmocka_unit_test(test_zero_window),
		cmocka_unit_test(test_window_no_creep),
		cmocka_unit_test(test_close_normal),
		cmocka_unit_test(test_simultaneous_close),
		cmocka_unit_test(test_fin_loss),
		cmocka_unit_test(test_rst_states),
		cmocka_unit_test(test_listen_rst_and_challenge_limit),
		cmocka_unit_test(test_checksum_rejects),
		cmocka_unit_test(test_paws),
		cmocka_unit_test(test_foreign_and_bad),
		cmocka_unit_test(test_delayed_ack),
		cmocka_unit_test(test_cc_behaviour),
		cmocka_unit_test(test_cc_end_to_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
