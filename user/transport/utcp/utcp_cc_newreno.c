// SPDX-License-Identifier: MIT
/*
 * utcp: NewReno congestion control (RFC 5681 slow start / congestion
 * avoidance with byte counting, RFC 6582 recovery exit; the recovery
 * itself is RFC 6675's pipe algorithm in utcp_output.c).
 */
#include "utcp_int.h"

static uint32_t flight_half(const struct utcp_conn *c)
{
	uint32_t flight = c->snd_max - c->snd_una, smss = utcp_smss(c);
	uint32_t half = flight / 2;

	return half > 2 * smss ? half : 2 * smss;	/* RFC 5681 (4) */
}

static void nr_init(struct utcp_conn *c)
{
	c->cwnd = c->cfg.init_cwnd_segs * utcp_smss(c);
	c->ssthresh = UINT32_MAX;
	c->bytes_acked = 0;
}

static void nr_on_ack(struct utcp_conn *c, uint32_t acked, uint64_t now)
{
	uint32_t smss = utcp_smss(c);

	(void)now;
	if (c->cwnd < c->ssthresh) {		/* slow start, RFC 5681 (2) */
		c->cwnd += utcp_ss_incr(c, acked, smss);	/* RFC 3465 ABC */
		return;
	}
	c->bytes_acked += acked;		/* CA, RFC 5681 §3.1 byte counting */
	if (c->bytes_acked >= c->cwnd) {
		c->bytes_acked -= c->cwnd;
		c->cwnd += smss;
	}
}

static void nr_on_loss(struct utcp_conn *c, uint64_t now)
{
	(void)now;
	c->ssthresh = flight_half(c);
	c->cwnd = c->ssthresh;			/* RFC 6675 §5 (4.2) */
	c->bytes_acked = 0;
}

static void nr_on_rto(struct utcp_conn *c, uint64_t now)
{
	(void)now;
	c->ssthresh = flight_half(c);
	c->cwnd = utcp_smss(c);			/* RFC 5681 (5): LW = 1 SMSS */
	c->bytes_acked = 0;
}

static void nr_on_recovery_exit(struct utcp_conn *c, uint64_t now)
{
	uint32_t fl = c->snd_max - c->snd_una + utcp_smss(c);

	(void)now;
	/* RFC 6582 §3.2 (3) option 1: min(ssthresh, FlightSize + SMSS) */
	c->cwnd = c->ssthresh < fl ? c->ssthresh : fl;
}

const struct utcp_cc_ops utcp_cc_newreno = {
	.name = "newreno",
	.init = nr_init,
	.on_ack = nr_on_ack,
	.on_loss = nr_on_loss,
	.on_rto = nr_on_rto,
	.on_recovery_exit = nr_on_recovery_exit,
};
