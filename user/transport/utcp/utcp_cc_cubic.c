// SPDX-License-Identifier: MIT
/*
 * utcp: CUBIC congestion control (RFC 9438): C = 0.4, beta_cubic = 0.7,
 * fast convergence, the Reno-friendly region (W_est), target clamped to
 * [cwnd, 1.5 cwnd]. Slow start is standard (no HyStart). Window arithmetic
 * is in segments (double), cwnd is written back in bytes.
 */
#include "utcp_int.h"

#define CUBIC_C 0.4
#define CUBIC_BETA 0.7

/* cube root without libm: Newton's iteration, v >= 0 */
static double cbrt_pos(double v)
{
	double x = v > 1 ? v / 3 : 1;

	if (v <= 0)
		return 0;
	for (int i = 0; i < 100; i++) {
		double nx = (2 * x + v / (x * x)) / 3;

		if (nx == x)
			break;
		x = nx;
	}
	return x;
}

static void cubic_init(struct utcp_conn *c)
{
	c->cwnd = c->cfg.init_cwnd_segs * utcp_smss(c);
	c->ssthresh = UINT32_MAX;
	c->bytes_acked = 0;
	c->cubic = (struct utcp_cubic){ 0 };
}

static void cubic_on_ack(struct utcp_conn *c, uint32_t acked, uint64_t now)
{
	struct utcp_cubic *k = &c->cubic;
	uint32_t smss = utcp_smss(c);
	double cw, t, rtt, target, segs, wc;

	if (c->cwnd < c->ssthresh) {
		c->cwnd += utcp_ss_incr(c, acked, smss);	/* RFC 3465 ABC */
		return;
	}
	cw = (double)c->cwnd / smss;
	if (!k->epoch) {			/* RFC 9438 §4.2 */
		k->epoch = now ? now : 1;
		if (k->w_max < cw) {
			k->k = 0;
			k->w_max = cw;
		} else {
			k->k = cbrt_pos((k->w_max - cw) / CUBIC_C);
		}
		k->w_est = cw;
	}
	t = (double)(now - k->epoch) / 1e9;
	rtt = (double)c->srtt / 1e9;
	segs = (double)acked / smss;
	/* §4.3 Reno-friendly estimate */
	k->w_est += 3 * (1 - CUBIC_BETA) / (1 + CUBIC_BETA) * segs / cw;
	wc = CUBIC_C * (t - k->k) * (t - k->k) * (t - k->k) + k->w_max;
	if (wc < k->w_est) {
		if (k->w_est > cw)
			cw = k->w_est;
	} else {
		t += rtt;
		target = CUBIC_C * (t - k->k) * (t - k->k) * (t - k->k) + k->w_max;
		if (target < cw)
			target = cw;
		if (target > 1.5 * cw)
			target = 1.5 * cw;
		cw += (target - cw) / cw * segs;	/* §4.4 */
	}
	c->cwnd = (uint32_t)(cw * smss);
}

static void cubic_reduce(struct utcp_conn *c)
{
	struct utcp_cubic *k = &c->cubic;
	uint32_t smss = utcp_smss(c);
	double cw = (double)c->cwnd / smss;
	double ss = cw * CUBIC_BETA;

	/* §4.7 fast convergence */
	if (cw < k->w_max)
		k->w_max = cw * (1 + CUBIC_BETA) / 2;
	else
		k->w_max = cw;
	k->epoch = 0;
	if (ss < 2)
		ss = 2;
	c->ssthresh = (uint32_t)(ss * smss);
}

static void cubic_on_loss(struct utcp_conn *c, uint64_t now)
{
	(void)now;
	cubic_reduce(c);
	c->cwnd = c->ssthresh;
}

static void cubic_on_rto(struct utcp_conn *c, uint64_t now)
{
	(void)now;
	cubic_reduce(c);	/* §4.8 */
	c->cwnd = utcp_smss(c);
}

static void cubic_on_recovery_exit(struct utcp_conn *c, uint64_t now)
{
	(void)now;
	c->cwnd = c->ssthresh;
}

const struct utcp_cc_ops utcp_cc_cubic = {
	.name = "cubic",
	.init = cubic_init,
	.on_ack = cubic_on_ack,
	.on_loss = cubic_on_loss,
	.on_rto = cubic_on_rto,
	.on_recovery_exit = cubic_on_recovery_exit,
};
