// SPDX-License-Identifier: MIT
/*
 * utcp: the receiver's out-of-order queue and the SACK blocks it implies.
 *
 * Choice (see utcp.h): out-of-order segments inside the receive window are
 * copied into malloc'ed entries, at most cfg.reasm_max_segs of them; bytes
 * already held are trimmed off a new segment so entries never overlap.
 * When full, or on ENOMEM, the segment is dropped (the sender retransmits
 * it; we never renege on what we SACKed).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "utcp_int.h"

static struct utcp_rseg *rseg_new(uint32_t seq, const uint8_t *data, uint32_t len)
{
	struct utcp_rseg *r = malloc(sizeof(*r) + (len ? len : 1));

	if (!r)
		return NULL;
	r->next = NULL;
	r->seq = seq;
	r->len = len;
	if (len)
		memcpy(r->data, data, len);
	return r;
}

/* Insert [seq, seq+len) trimmed against what is held; a FIN after it is
 * remembered in c->rq_fin. The caller has trimmed the segment to the
 * receive window and checked seq > rcv_nxt. */
int utcp_rq_insert(struct utcp_conn *c, uint32_t seq, const uint8_t *data,
		   uint32_t len, bool fin)
{
	struct utcp_rseg **pp = &c->rq, *r;
	uint32_t end = seq + len, seq0 = seq;

	if (fin) {
		c->rq_fin = true;
		c->rq_fin_seq = end;
	}
	c->rq_last_s = seq;
	c->rq_last_e = end;
	/* the common case appends after the highest entry */
	if (c->rq_tail && seq_geq(seq, c->rq_tail->seq + c->rq_tail->len))
		pp = &c->rq_tail->next;
	while (seq_lt(seq, end)) {
		uint32_t pe;
		struct utcp_rseg *n;

		r = *pp;
		if (r && seq_leq(r->seq + r->len, seq)) {
			pp = &r->next;
			continue;
		}
		if (r && seq_leq(r->seq, seq)) {	/* r covers seq */
			seq = r->seq + r->len;
			pp = &r->next;
			continue;
		}
		pe = (r && seq_lt(r->seq, end)) ? r->seq : end;
		if (c->rq_n >= c->cfg.reasm_max_segs) {
			c->st.ooo_drops++;
			return -ENOBUFS;
		}
		n = rseg_new(seq, data + (seq - seq0), pe - seq);
		if (!n) {
			c->st.ooo_drops++;
			return -ENOMEM;
		}
		n->next = r;
		*pp = n;
		if (!r)
			c->rq_tail = n;
		c->rq_n++;
		pp = &n->next;
		seq = pe;
	}
	return 0;
}

bool utcp_rq_drain(struct utcp_conn *c)
{
	struct utcp_rseg *r;

	while ((r = c->rq) && seq_leq(r->seq, c->rcv_nxt)) {
		uint32_t skip = c->rcv_nxt - r->seq;

		c->rq = r->next;
		c->rq_n--;
		if (skip < r->len) {
			uint32_t n = r->len - skip;

			c->rcv_nxt += n;
			c->rcv_unread += n;
			if (c->ops->deliver)
				c->ops->deliver(c->ctx, c->rcv_delivered, r->data + skip, n);
			c->rcv_delivered += n;
		}
		free(r);
	}
	if (!c->rq)
		c->rq_tail = NULL;
	if (c->rq_fin && c->rcv_nxt == c->rq_fin_seq) {
		utcp_rq_free(c);
		return true;
	}
	return false;
}

void utcp_rq_free(struct utcp_conn *c)
{
	struct utcp_rseg *r;

	while ((r = c->rq)) {
		c->rq = r->next;
		free(r);
	}
	c->rq_n = 0;
	c->rq_tail = NULL;
	c->rq_fin = false;
}

/* RFC 2018 §4: the first block holds the most recent arrival, then the
 * others (ascending). Contiguous entries are merged into one block. */
int utcp_rq_sack_blocks(const struct utcp_conn *c, uint32_t *s, uint32_t *e, int max)
{
	uint32_t bs[64], be[64];
	int nb = 0, n = 0, first = -1;

	for (const struct utcp_rseg *r = c->rq; r; r = r->next) {
		uint32_t rs = r->seq, re = r->seq + r->len;

		if (nb && be[nb - 1] == rs) {
			be[nb - 1] = re;
		} else {
			if (nb == 64)
				break;
			bs[nb] = rs;
			be[nb] = re;
			nb++;
		}
	}
	for (int i = 0; i < nb; i++)
		if (seq_leq(bs[i], c->rq_last_s) && seq_lt(c->rq_last_s, be[i]))
			first = i;
	if (first >= 0 && n < max) {
		s[n] = bs[first];
		e[n] = be[first];
		n++;
	}
	for (int i = 0; i < nb && n < max; i++) {
		if (i == first)
			continue;
		s[n] = bs[i];
		e[n] = be[i];
		n++;
	}
	return n;
}
