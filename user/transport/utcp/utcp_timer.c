// SPDX-License-Identifier: MIT
/*
 * utcp: timers, driven by the owner's clock through utcp_tick():
 * retransmission (RFC 6298: SRTT/RTTVAR, Karn, exponential back-off,
 * give-up after cfg.max_retries / syn_retries -> -ETIMEDOUT), tail loss
 * probe (RFC 8985 §7: a lost tail gets SACK recovery instead of an RTO),
 * delayed ACK, persist (zero-window probes), TIME_WAIT (2 * MSL).
 */
#include <errno.h>
#include "utcp_int.h"

void utcp_rto_arm(struct utcp_conn *c, uint64_t now)
{
	c->t_rto = now + c->rto;
}

void utcp_timers_stop(struct utcp_conn *c)
{
	c->t_rto = c->t_delack = c->t_persist = c->t_tw = c->t_tlp = 0;
}

/* RFC 8985 §7.2 worst-case delayed ACK time, for a flight of one segment */
#define TLP_WCDELACK_NS (200 * NS_PER_MS)
#define TLP_MIN_NS (2 * NS_PER_MS)
#define TLP_MAX 3	/* probes without progress before the RTO decides */

/*
 * Arm the probe timeout (RFC 8985 §7.2) while data is outstanding, no
 * probe is in flight and an RTT is known: PTO = 2 SRTT (+ a delayed ACK
 * when one segment is in flight), never after the RTO. Unlike RFC 8985
 * the probe also runs in loss recovery, where utcp has no RACK: a
 * recovery that stalls (its retransmission lost, too few segments left
 * to SACK) resends the first hole after a PTO instead of waiting for
 * an RTO (>= 200 ms) that collapses the window.
 */
void utcp_tlp_arm(struct utcp_conn *c, uint64_t now)
{
	uint64_t pto;

	c->t_tlp = 0;
	if (c->snd_una == c->snd_max || c->tlp_n >= TLP_MAX || !c->have_rtt ||
	    !c->sack_ok || c->backoff ||
	    c->state < UTCP_ESTABLISHED || c->state == UTCP_FIN_WAIT_2 ||
	    c->state == UTCP_TIME_WAIT)
		return;
	pto = 2 * c->srtt;
	if (c->snd_max - c->snd_una <= utcp_smss(c))
		pto += TLP_WCDELACK_NS;
	if (pto < TLP_MIN_NS)
		pto = TLP_MIN_NS;
	pto <<= c->tlp_n;	/* probes without progress back off */
	if (c->t_rto && now + pto >= c->t_rto)
		return;		/* the RTO comes first anyway */
	c->t_tlp = now + pto;
}

/* The probe: new data if the windows allow, else the first hole below
 * SACKed data (what RACK would call lost), else the last segment. */
static void tlp_fire(struct utcp_conn *c, uint64_t now)
{
	uint32_t smss = utcp_smss(c), end = c->iss + 1 + (uint32_t)c->snd_queued;
	uint32_t wend = c->snd_una + c->snd_wnd;
	int n = 0;

	c->t_tlp = 0;
	if (c->snd_una == c->snd_max)
		return;
	if (c->in_recovery || c->rto_recovery) {	/* stalled: first hole */
		uint32_t hs, he;

		if (utcp_sb_next_hole(&c->sb, c->snd_una, c->snd_max, &hs, &he) &&
		    (n = utcp_xmit(c, hs, he - hs < smss ? he - hs : smss, true, now)) > 0) {
			if (seq_lt(c->high_rxt, hs + (uint32_t)n))
				c->high_rxt = hs + (uint32_t)n;
			c->tlp_n++;
			c->tlp_high = c->snd_una + 1;	/* any progress ends it */
			c->st.tlp_sent++;
		}
		utcp_rto_arm(c, now);
		utcp_tlp_arm(c, now);
		return;
	}
	if (seq_lt(c->snd_max, end) && seq_gt(wend, c->snd_max))
		n = utcp_xmit(c, c->snd_max, smss, false, now);
	if (n <= 0 && c->sb.n) {	/* a hole below SACKed data: resend it */
		uint32_t hs, he;

		if (utcp_sb_next_hole(&c->sb, c->snd_una, c->sb.s[c->sb.n - 1], &hs, &he))
			n = utcp_xmit(c, hs, he - hs < smss ? he - hs : smss, true, now);
	}
	if (n <= 0) {
		uint32_t len = c->snd_max - c->snd_una;

		if (len > smss)
			len = smss;
		n = utcp_xmit(c, c->snd_max - len, len, true, now);
	}
	if (n > 0) {
		c->tlp_n++;
		c->tlp_high = c->snd_max;
		c->st.tlp_sent++;
	}
	utcp_rto_arm(c, now);
	utcp_tlp_arm(c, now);
}

/* RFC 6298 §2.2/2.3; @rtt in ns. Clock granularity G = 1 ms (TS clock). */
void utcp_rtt_sample(struct utcp_conn *c, uint64_t rtt)
{
	uint64_t var;

	if (!c->have_rtt) {
		c->srtt = rtt;
		c->rttvar = rtt / 2;
		c->have_rtt = true;
	} else {
		uint64_t d = c->srtt > rtt ? c->srtt - rtt : rtt - c->srtt;

		c->rttvar = (3 * c->rttvar + d) / 4;
		c->srtt = (7 * c->srtt + rtt) / 8;
	}
	var = 4 * c->rttvar;
	if (var < NS_PER_MS)
		var = NS_PER_MS;
	c->rto = c->srtt + var;
	if (c->rto < c->cfg.rto_min_ns)
		c->rto = c->cfg.rto_min_ns;
	if (c->rto > c->cfg.rto_max_ns)
		c->rto = c->cfg.rto_max_ns;
}

void utcp_enter_timewait(struct utcp_conn *c, uint64_t now)
{
	utcp_set_state(c, UTCP_TIME_WAIT);
	c->t_rto = c->t_persist = 0;
	c->t_tw = now + 2 * c->cfg.msl_ns;
}

static void rto_expired(struct utcp_conn *c, uint64_t now)
{
	bool syn = c->state == UTCP_SYN_SENT || c->state == UTCP_SYN_RCVD;
	unsigned int limit = syn ? c->cfg.syn_retries : c->cfg.max_retries;

	c->t_rto = 0;
	if (c->snd_una == c->snd_max)
		return;
	c->st.rto_fired++;
	if (c->backoff >= limit) {	/* RFC 9293 §3.8.3 R2 */
		if (!syn)
			utcp_send_rst(c, c->snd_max, c->rcv_nxt, true);
		utcp_report_closed(c, -ETIMEDOUT);
		return;
	}
	c->backoff++;
	c->rto *= 2;			/* RFC 6298 (5.5) */
	if (c->rto > c->cfg.rto_max_ns)
		c->rto = c->cfg.rto_max_ns;
	c->rtt_timing = false;
	if (syn) {
		utcp_send_syn(c, now);
		utcp_rto_arm(c, now);
		return;
	}
	/* RFC 5681 (4): ssthresh only on the first expiry of a series */
	if (c->backoff == 1)
		c->cc->on_rto(c, now);
	else
		c->cwnd = utcp_smss(c);
	/* keep SACK information (the peer never reneges in practice), but
	 * forget it from the second expiry on, in case it did (RFC 2018 §8) */
	if (c->backoff >= 2)
		c->sb.n = 0;
	c->in_recovery = false;
	c->rto_recovery = true;
	c->recover = c->snd_max;
	c->high_rxt = c->snd_una;
	c->dupacks = 0;
	utcp_output(c, now);
	if (!c->t_rto && c->snd_una != c->snd_max)
		utcp_rto_arm(c, now);
}

void utcp_tick(struct utcp_conn *c, uint64_t now)
{
	if (c->t_tw && now >= c->t_tw) {
		c->t_tw = 0;
		utcp_report_closed(c, 0);
		return;
	}
	if (c->t_rto && now >= c->t_rto) {
		c->t_tlp = 0;
		c->tlp_n = 0;
		rto_expired(c, now);
	}
	if (c->state == UTCP_CLOSED)
		return;
	if (c->t_tlp && now >= c->t_tlp)
		tlp_fire(c, now);
	if (c->t_persist && now >= c->t_persist) {
		uint64_t d;

		utcp_zwp(c, now);
		if (c->persist_backoff < 16)
			c->persist_backoff++;
		d = c->rto << c->persist_backoff;
		if (d > c->cfg.rto_max_ns)
			d = c->cfg.rto_max_ns;
		c->t_persist = now + d;
	}
	if (c->t_delack && now >= c->t_delack) {
		c->t_delack = 0;
		utcp_send_ack(c, now);
	}
}

uint64_t utcp_next_deadline(const struct utcp_conn *c)
{
	uint64_t t = UINT64_MAX;
	const uint64_t all[5] = { c->t_rto, c->t_delack, c->t_persist, c->t_tw,
				  c->t_tlp };

	for (int i = 0; i < 5; i++)
		if (all[i] && all[i] < t)
			t = all[i];
	return t;
}
