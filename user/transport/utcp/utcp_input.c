// SPDX-License-Identifier: MIT
/*
 * utcp: SEGMENT ARRIVES (RFC 9293 §3.10.7) with RFC 5961 (challenge ACKs,
 * ACK range check), RFC 7323 (WS/TS negotiation, PAWS, TS.Recent),
 * RFC 2018 SACK blocks into the scoreboard, RFC 6675 / 6582 recovery
 * entry and exit, RFC 6298 RTT samples, delayed ACKs.
 */
#include <errno.h>
#include "utcp_int.h"

static bool has(const struct utcp_seg *s, uint8_t f) { return s->flags & f; }

static uint32_t seg_seqlen(const struct utcp_seg *s)
{
	return s->len + (has(s, UTCP_SYN) ? 1 : 0) + (has(s, UTCP_FIN) ? 1 : 0);
}

/* Options of the peer's SYN / SYN-ACK (RFC 9293 §3.7.1, RFC 7323 §2.2,
 * RFC 2018 §2). */
static void syn_opts(struct utcp_conn *c, const struct utcp_opts *o)
{
	uint32_t peer = o->has_mss ? o->mss : 536;

	if (peer < 88)		/* hostile tiny MSS: keep SMSS meaningful */
		peer = 88;
	c->mss = peer < c->cfg.mss ? peer : c->cfg.mss;
	c->ws_ok = o->has_ws && !c->cfg.no_wscale;
	if (c->ws_ok) {
		c->snd_wscale = o->ws > 14 ? 14 : o->ws;	/* RFC 7323 §2.3 */
	} else {
		c->snd_wscale = 0;
		c->rcv_wscale = 0;
	}
	c->ts_ok = o->has_ts && !c->cfg.no_ts;
	if (c->ts_ok) {
		c->ts_recent = o->tsval;
		c->ts_recent_set = true;
	}
	c->sack_ok = o->sack_perm && !c->cfg.no_sack;
	c->cc->init(c);		/* initial window in the negotiated SMSS */
}

static void ack_now(struct utcp_conn *c, uint64_t now)
{
	utcp_send_ack(c, now);
}

/* RFC 5961 §3.2/§4/§5 challenge ACK, at most cfg.challenge_ack_limit per
 * second (§7) so a blind attacker cannot turn us into an ACK cannon. */
static void challenge_ack(struct utcp_conn *c, uint64_t now)
{
	if (now - c->chal_start >= 1000 * NS_PER_MS || !c->chal_start) {
		c->chal_start = now ? now : 1;
		c->chal_count = 0;
	}
	if (c->chal_count >= c->cfg.challenge_ack_limit) {
		c->st.challenge_acks_limited++;
		return;
	}
	c->chal_count++;
	c->st.challenge_acks++;
	utcp_send_ack(c, now);
}

static void establish(struct utcp_conn *c, const struct utcp_seg *seg)
{
	/* the window of a SYN segment is never scaled (RFC 7323 §2.2) */
	c->snd_wnd = has(seg, UTCP_SYN) ? seg->wnd : (uint32_t)seg->wnd << c->snd_wscale;
	c->snd_wl1 = seg->seq;
	c->snd_wl2 = seg->ack;
	c->max_snd_wnd = c->snd_wnd;
	c->syn_acked = true;
	c->backoff = 0;
	c->recover = c->snd_una;
	c->high_rxt = c->snd_una;
	utcp_set_state(c, c->fin_queued ? UTCP_FIN_WAIT_1 : UTCP_ESTABLISHED);
}

static void rtt_from_ack(struct utcp_conn *c, const struct utcp_seg *seg,
			 const struct utcp_opts *o, uint64_t now)
{
	if (c->ts_ok && o->has_ts && o->tsecr) {
		uint32_t ms = utcp_ts_now(c, now) - o->tsecr;

		if (ms < 0x7fffffff) {	/* RFC 7323 §4.1 */
			utcp_rtt_sample(c, ms ? (uint64_t)ms * NS_PER_MS : NS_PER_MS / 2);
			c->rtt_timing = false;
			return;
		}
	}
	if (c->rtt_timing && seq_gt(seg->ack, c->rtt_seq)) {
		c->rtt_timing = false;
		utcp_rtt_sample(c, now - c->rtt_start);
	}
}

/* SYN_SENT (RFC 9293 §3.10.7.3) */
static void in_syn_sent(struct utcp_conn *c, const struct utcp_seg *seg,
			const struct utcp_opts *o, uint64_t now)
{
	bool ackok = false;

	if (has(seg, UTCP_ACK)) {
		if (seq_leq(seg->ack, c->iss) || seq_gt(seg->ack, c->snd_max)) {
			if (!has(seg, UTCP_RST))
				utcp_send_rst(c, seg->ack, 0, false);
			return;
		}
		ackok = true;
	}
	if (has(seg, UTCP_RST)) {
		if (ackok)
			utcp_report_closed(c, -ECONNREFUSED);
		return;
	}
	if (!has(seg, UTCP_SYN))
		return;
	c->irs = seg->seq;
	c->rcv_nxt = seg->seq + 1;
	c->rcv_adv = c->rcv_nxt;
	syn_opts(c, o);
	if (ackok) {
		rtt_from_ack(c, seg, o, now);
		c->snd_una = seg->ack;
		c->t_rto = 0;
		establish(c, seg);
		utcp_send_ack(c, now);
		utcp_output(c, now);
		return;
	}
	/* simultaneous open (RFC 9293 Figure 8) */
	utcp_set_state(c, UTCP_SYN_RCVD);
	c->snd_wnd = seg->wnd;
	c->snd_wl1 = seg->seq;
	utcp_send_syn(c, now);
}

/* LISTEN (RFC 9293 §3.10.7.2) */
static void in_listen(struct utcp_conn *c, const struct utcp_seg *seg,
		      const struct utcp_opts *o, uint64_t now)
{
	if (has(seg, UTCP_RST))
		return;
	if (has(seg, UTCP_ACK)) {
		uint32_t ra = c->cfg.raddr;
		uint16_t rp = c->cfg.rport;

		c->cfg.raddr = seg->saddr;
		c->cfg.rport = seg->sport;
		utcp_send_rst(c, seg->ack, 0, false);
		c->cfg.raddr = ra;
		c->cfg.rport = rp;
		return;
	}
	if (!has(seg, UTCP_SYN))
		return;
	c->cfg.raddr = seg->saddr;
	c->cfg.rport = seg->sport;
	c->irs = seg->seq;
	c->rcv_nxt = seg->seq + 1;
	c->rcv_adv = c->rcv_nxt;
	syn_opts(c, o);
	c->snd_wnd = seg->wnd;
	c->snd_wl1 = seg->seq;
	utcp_set_state(c, UTCP_SYN_RCVD);
	utcp_send_syn(c, now);	/* data on the SYN is not accepted: resent later */
}

static void fin_arrived(struct utcp_conn *c, uint64_t now)
{
	c->rcv_nxt++;
	c->fin_rcvd = true;
	utcp_rq_free(c);	/* nothing after a FIN is data */
	c->ack_now = true;
	if (c->ops->deliver)
		c->ops->deliver(c->ctx, c->rcv_delivered, NULL, 0);
	switch (c->state) {
	case UTCP_SYN_RCVD: case UTCP_ESTABLISHED:
		utcp_set_state(c, UTCP_CLOSE_WAIT);
		break;
	case UTCP_FIN_WAIT_1:
		if (c->fin_sent && c->snd_una == c->snd_max)
			utcp_enter_timewait(c, now);
		else
			utcp_set_state(c, UTCP_CLOSING);
		break;
	case UTCP_FIN_WAIT_2:
		utcp_enter_timewait(c, now);
		break;
	default:
		break;
	}
}

/*
 * The most full-sized in-order segments one ACK may cover inside an input
 * batch (utcp_input_batch_begin/end). RFC 9293 §3.8.6.3 / RFC 5681 §4.2
 * say an ACK SHOULD be sent for at least every second full-sized segment;
 * here the segments of one RX ring batch arrived together (a few us
 * apart, like one GRO/LRO aggregate, RFC 5681 §4.2's "stretch ACK" case),
 * so the ACK for them carries the same information one batch later, and
 * the sender counts the bytes it covers (RFC 3465 Appropriate Byte
 * Counting in utcp_cc_*.c) so cwnd grows as with one ACK per two
 * segments. Bounded by @ack_stretch_segs and a quarter of the receive
 * buffer so the sender's ACK clock never waits for more than a fraction
 * of the window. Out-of-order and duplicate segments, filled holes and
 * FINs are not held (ack_now: RFC 5681 §4.2 / §3.2 immediate dup ACK).
 */
static unsigned int ack_stretch_max(const struct utcp_conn *c)
{
	unsigned int q = c->cfg.rcv_buf / 4 / utcp_smss(c);
	unsigned int m = c->cfg.ack_stretch_segs;

	if (q < m)
		m = q;
	return m > c->cfg.delack_segs ? m : c->cfg.delack_segs;
}

/* Segment text and FIN (RFC 9293 §3.10.7.4 seventh, eighth). */
static void process_data(struct utcp_conn *c, const struct utcp_seg *seg, uint64_t now)
{
	uint32_t seq = seg->seq, len = seg->len, right;
	const uint8_t *data = seg->data;
	bool fin = has(seg, UTCP_FIN);

	if (seq_lt(seq, c->rcv_nxt)) {
		uint32_t d = c->rcv_nxt - seq;

		if (d >= len) {
			if (!(fin && d == len))
				fin = false;
			data += len;
			len = 0;
		} else {
			data += d;
			len -= d;
		}
		seq = c->rcv_nxt;
	}
	right = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv : c->rcv_nxt;
	if (seq_gt(seq + len, right)) {
		len = seq_lt(seq, right) ? right - seq : 0;
		fin = false;
	}
	if (!len && !fin) {
		if (seg->len || has(seg, UTCP_FIN))
			c->ack_now = true;	/* duplicate: ACK at once */
		return;
	}
	if (seq != c->rcv_nxt) {
		c->st.ooo_segs++;
		utcp_rq_insert(c, seq, data, len, fin);
		c->ack_now = true;		/* RFC 5681 §4.2: dup ACK */
		return;
	}
	if (len) {
		/* staged: the owner copied exactly this while summing it */
		bool staged = c->rx_staged && c->rx_staged == len && data == seg->data;

		c->rx_staged = 0;
		c->rcv_nxt += len;
		c->rcv_unread += len;
		if (c->ops->deliver)
			c->ops->deliver(c->ctx, c->rcv_delivered,
					staged ? NULL : data, len);
		c->rcv_delivered += len;
	}
	if (c->rq) {
		if (utcp_rq_drain(c))
			fin = true;
		c->ack_now = true;		/* filled (part of) a hole */
	}
	if (fin && !c->fin_rcvd) {
		fin_arrived(c, now);
		return;
	}
	if (len >= utcp_smss(c)) {
		if (++c->segs_unacked >= c->cfg.delack_segs) {
			if (c->in_batch && c->segs_unacked < ack_stretch_max(c))
				c->ack_held = true;	/* sent at the batch's end */
			else
				c->ack_now = true;
		}
	}
	/* also when held: the timer is the safety net of a batch */
	if (!c->ack_now && !c->t_delack)
		c->t_delack = now + c->cfg.delack_ns;
}

/*
 * Was the sender using its congestion window (RFC 7661's idea, as Linux's
 * tcp_is_cwnd_limited)? Only then may an ACK grow it: a sender held back
 * by the receive window or by the application would otherwise grow cwnd
 * without bound (a 1 GiB transfer over a veth reached a cwnd of 655 MB),
 * and a later loss, which reduces cwnd multiplicatively, would then not
 * reduce the sending rate at all. Slow start: while cwnd < 2 x flight;
 * congestion avoidance: flight within 3 segments of cwnd.
 */
static bool cwnd_limited(const struct utcp_conn *c, uint32_t flight, uint32_t smss)
{
	if (c->cwnd < c->ssthresh)
		return c->cwnd < 2 * flight;
	return flight + 3 * smss >= c->cwnd;
}

/* The ACK field (RFC 9293 §3.10.7.4 fifth) for synchronized states. */
static void process_ack(struct utcp_conn *c, const struct utcp_seg *seg,
			const struct utcp_opts *o, uint64_t now)
{
	uint32_t ack = seg->ack, smss = utcp_smss(c);
	uint32_t wnd = (uint32_t)seg->wnd << c->snd_wscale;

	if (seq_gt(ack, c->snd_una)) {
		/* the SYN (at iss) carries no data; never compare with iss
		 * itself: 2 GiB into the stream it is "ahead" in seq space */
		uint32_t dstart = c->snd_una == c->iss ? c->iss + 1 : c->snd_una;
		uint32_t dend = seq_min(ack, c->iss + 1 + (uint32_t)c->snd_queued);
		uint32_t dacked = seq_gt(dend, dstart) ? dend - dstart : 0;
		uint32_t acked = ack - c->snd_una;
		uint32_t flight = c->snd_max - c->snd_una;	/* before this ACK */

		rtt_from_ack(c, seg, o, now);
		c->snd_una = ack;
		if (seq_lt(c->snd_nxt, ack))
			c->snd_nxt = ack;
		utcp_sb_ack(&c->sb, ack);
		c->backoff = 0;
		c->dupacks = 0;
		if (c->snd_una == c->snd_max)
			c->t_rto = 0;
		else
			utcp_rto_arm(c, now);		/* RFC 6298 (5.3) */
		if (dacked) {
			c->snd_acked += dacked;
			if (c->ops->acked)
				c->ops->acked(c->ctx, c->snd_acked);
		}
		if (c->in_recovery) {
			if (seq_geq(ack, c->recover)) {
				c->in_recovery = false;
				c->cc->on_recovery_exit(c, now);
			} else {			/* partial ACK */
				c->lost_end = seq_max(c->lost_end, ack + smss);
			}
		} else {
			if (c->rto_recovery && seq_geq(ack, c->recover))
				c->rto_recovery = false;
			if (cwnd_limited(c, flight, smss))
				c->cc->on_ack(c, acked, now);
		}
	} else if (ack == c->snd_una && !wnd) {
		/* the peer is alive and says "zero window": a stuck
		 * retransmission must not time the connection out while
		 * it keeps answering (RFC 9293 §3.8.6.1) */
		c->backoff = 0;
	} else if (ack == c->snd_una && !seg->len &&
		   !has(seg, UTCP_SYN) && !has(seg, UTCP_FIN) &&
		   wnd == c->snd_wnd && c->snd_max != c->snd_una) {
		c->dupacks++;
		c->st.dupacks_in++;
	}
	if (c->sack_ok && o->nsack) {
		uint32_t before = utcp_sb_sacked(&c->sb, c->snd_una, c->snd_max);

		for (int i = 0; i < o->nsack; i++)
			utcp_sb_add(&c->sb, c->snd_una, c->snd_max,
				    o->sack_start[i], o->sack_end[i]);
		before = utcp_sb_sacked(&c->sb, c->snd_una, c->snd_max) - before;
		if ((int32_t)before > 0)
			c->st.bytes_sacked += before;
	}
	if (c->tlp_n && seq_geq(c->snd_una, c->tlp_high))
		c->tlp_n = 0;	/* the probes' episode is over */
	utcp_lost_rtx_check(c);
	/* window update (RFC 9293 §3.10.7.4, SND.WL1/WL2) */
	if (seq_lt(c->snd_wl1, seg->seq) ||
	    (c->snd_wl1 == seg->seq && seq_leq(c->snd_wl2, ack))) {
		c->snd_wnd = wnd;
		c->snd_wl1 = seg->seq;
		c->snd_wl2 = ack;
		if (wnd > c->max_snd_wnd)
			c->max_snd_wnd = wnd;
	}
	/* loss detection: RFC 6675 §5 / RFC 6582 §3.2 step 2 */
	if (!c->in_recovery && !c->rto_recovery && c->snd_max != c->snd_una &&
	    seq_geq(c->snd_una, c->recover) &&
	    (c->dupacks >= UTCP_DUPTHRESH ||
	     (c->sack_ok && seq_gt(utcp_sb_lost_boundary(&c->sb, c->snd_una, smss),
				   c->snd_una)))) {
		c->in_recovery = true;
		c->recover = c->snd_max;
		c->high_rxt = c->snd_una;
		c->lost_end = c->snd_una + smss;
		c->st.fast_recoveries++;
		c->t_tlp = 0;
		c->cc->on_loss(c, now);
	}
	utcp_tlp_arm(c, now);
}

/*
 * A retransmission of the first hole that is itself lost: data sent after
 * it has been SACKed while snd_una still sits at the hole. Without this
 * only the RTO would repair it (RFC 6675 never retransmits twice); Linux
 * does the same (tcp_mark_lost_retrans). Resend from the first hole.
 */
void utcp_lost_rtx_check(struct utcp_conn *c)
{
	if (!c->rtx_una_set)
		return;
	if (c->snd_una != c->rtx_una_seq || (!c->in_recovery && !c->rto_recovery)) {
		c->rtx_una_set = false;
		return;
	}
	if (!c->sb.n || !seq_gt(c->sb.e[c->sb.n - 1], c->rtx_una_max))
		return;
	c->rtx_una_set = false;
	c->high_rxt = c->snd_una;
	c->st.lost_rtx++;
}

void utcp_segment_arrives(struct utcp_conn *c, const struct utcp_seg *seg,
			  const struct utcp_opts *o, uint64_t now)
{
	uint32_t slen = seg_seqlen(seg), rwnd;
	bool ok;

	switch (c->state) {
	case UTCP_CLOSED:
		if (has(seg, UTCP_RST))
			return;
		if (has(seg, UTCP_ACK)) {
			utcp_send_rst(c, seg->ack, 0, false);
		} else {
			utcp_send_rst(c, 0, seg->seq + slen, true);
		}
		return;
	case UTCP_LISTEN:
		in_listen(c, seg, o, now);
		return;
	case UTCP_SYN_SENT:
		in_syn_sent(c, seg, o, now);
		return;
	default:
		break;
	}

	/* SYN_RCVD: the peer's SYN again (our SYN-ACK was lost) */
	if (c->state == UTCP_SYN_RCVD && has(seg, UTCP_SYN) &&
	    !has(seg, UTCP_ACK) && !has(seg, UTCP_RST) && seg->seq == c->irs) {
		utcp_send_syn(c, now);
		utcp_rto_arm(c, now);	/* just resent: restart the timer */
		return;
	}

	/* PAWS (RFC 7323 §5.3) */
	if (c->ts_ok && o->has_ts && c->ts_recent_set && !has(seg, UTCP_RST) &&
	    seq_lt(o->tsval, c->ts_recent)) {
		c->st.paws_drops++;
		ack_now(c, now);
		return;
	}

	/* sequence acceptability (RFC 9293 §3.10.7.4 first) */
	rwnd = seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
	if (!slen)
		ok = rwnd ? seq_in(seg->seq, c->rcv_nxt, c->rcv_nxt + rwnd)
			  : seg->seq == c->rcv_nxt;
	else
		ok = rwnd && (seq_in(seg->seq, c->rcv_nxt, c->rcv_nxt + rwnd) ||
			      seq_in(seg->seq + slen - 1, c->rcv_nxt, c->rcv_nxt + rwnd));
	if (!ok) {
		/* a zero window still takes ACK/RST/window info from an
		 * in-sequence probe; everything else just gets an ACK */
		if (!has(seg, UTCP_RST)) {
			if (has(seg, UTCP_ACK) && seg->seq == c->rcv_nxt && !rwnd &&
			    c->state != UTCP_SYN_RCVD)
				process_ack(c, seg, o, now);
			ack_now(c, now);
			utcp_output(c, now);
		}
		return;
	}

	/* RST (RFC 5961 §3.2) */
	if (has(seg, UTCP_RST)) {
		if (seg->seq != c->rcv_nxt) {
			challenge_ack(c, now);
			return;
		}
		switch (c->state) {
		case UTCP_SYN_RCVD:
			if (c->passive) {
				struct utcp_cfg keep = c->cfg;

				utcp_timers_stop(c);
				c->state = UTCP_CLOSED;
				utcp_listen(c);
				c->cfg = keep;
				return;
			}
			utcp_report_closed(c, -ECONNREFUSED);
			return;
		case UTCP_TIME_WAIT:
			utcp_report_closed(c, 0);
			return;
		default:
			utcp_report_closed(c, -ECONNRESET);
			return;
		}
	}

	/* TS.Recent (RFC 7323 §4.3) */
	if (c->ts_ok && o->has_ts && seq_leq(seg->seq, c->last_ack_sent) &&
	    (!c->ts_recent_set || seq_geq(o->tsval, c->ts_recent))) {
		c->ts_recent = o->tsval;
		c->ts_recent_set = true;
	}

	/* SYN in a synchronized state (RFC 5961 §4) */
	if (has(seg, UTCP_SYN)) {
		challenge_ack(c, now);
		return;
	}
	if (!has(seg, UTCP_ACK))
		return;

	/* ACK range (RFC 5961 §5) */
	if (c->state == UTCP_SYN_RCVD) {
		if (!(seq_gt(seg->ack, c->snd_una) && seq_leq(seg->ack, c->snd_max))) {
			utcp_send_rst(c, seg->ack, 0, false);
			return;
		}
		rtt_from_ack(c, seg, o, now);
		c->snd_una = seg->ack;
		c->t_rto = 0;
		establish(c, seg);
	} else if (seq_gt(seg->ack, c->snd_max) ||
		   seq_lt(seg->ack, c->snd_una - c->max_snd_wnd)) {
		ack_now(c, now);
		return;
	}
	process_ack(c, seg, o, now);

	switch (c->state) {
	case UTCP_FIN_WAIT_1:
		if (c->fin_sent && c->snd_una == c->snd_max)
			utcp_set_state(c, UTCP_FIN_WAIT_2);
		break;
	case UTCP_CLOSING:
		if (c->fin_sent && c->snd_una == c->snd_max)
			utcp_enter_timewait(c, now);
		break;
	case UTCP_LAST_ACK:
		if (c->fin_sent && c->snd_una == c->snd_max) {
			utcp_report_closed(c, 0);
			return;
		}
		break;
	case UTCP_TIME_WAIT:
		if (has(seg, UTCP_FIN)) {	/* retransmitted FIN */
			c->t_tw = now + 2 * c->cfg.msl_ns;
			c->ack_now = true;
		}
		break;
	default:
		break;
	}

	switch (c->state) {
	case UTCP_ESTABLISHED: case UTCP_FIN_WAIT_1: case UTCP_FIN_WAIT_2:
		if (seg->len || has(seg, UTCP_FIN))
			process_data(c, seg, now);
		break;
	default:
		break;
	}
	utcp_output(c, now);
}
