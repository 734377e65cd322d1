// SPDX-License-Identifier: MIT
/*
 * utcp: timers, driven by the owner's clock through utcp_tick():
 * retransmission (RFC 6298: SRTT/RTTVAR, Karn, exponential back-off,
 * give-up after cfg.max_retries / syn_retries -> -ETIMEDOUT), delayed
 * ACK, persist (zero-window probes), TIME_WAIT (2 * MSL).
 */
#include <errno.h>
#include "utcp_int.h"

void utcp_rto_arm(struct utcp_conn *c, uint64_t now)
{
	c->t_rto = now + c->rto;
}

void utcp_timers_stop(struct utcp_conn *c)
{
	c->t_rto = c->t_delack = c->t_persist = c->t_tw = 0;
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
	if (c->t_rto && now >= c->t_rto)
		rto_expired(c, now);
	if (c->state == UTCP_CLOSED)
		return;
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
	const uint64_t all[4] = { c->t_rto, c->t_delack, c->t_persist, c->t_tw };

	for (int i = 0; i < 4; i++)
		if (all[i] && all[i] < t)
			t = all[i];
	return t;
}
