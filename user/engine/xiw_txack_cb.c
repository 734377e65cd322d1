// SPDX-License-Identifier: MIT
/*
 * The ACK tracer's per-ACK callbacks, on or off per QP (seed 000, ack
 * mode; bpf/xiw_sockops.bpf.c, xiw_sockopt).
 *
 * While they are on, every ACK of a traced socket runs the sockops
 * program's RTT_CB (once per round trip, on a veth about once per ACK)
 * and every send call its TX timestamping callbacks, three more for a
 * marked one. They are what makes a watermark event come, which a thread
 * that blocks on a CQ needs. A stream whose app keeps polling its CQ
 * needs none of it: the polls complete the acknowledged WRs themselves
 * (xiw_txack_poll, one SIOCOUTQ). 64 KB `ib_write_bw` in ack mode,
 * unpaced (cubic), medians of 6-8 interleaved runs (2026-11-29): with
 * the callbacks always on 0.86-0.91 of copy mode's bandwidth, switched
 * off here 0.96-1.00; RTT_CB alone or TX timestamping alone cost as much
 * as both.
 *
 * So, per QP (all under tx_lock):
 *  - off (xiw_txack_cb_quiet) when a poller checks the QP's ACKs with
 *    the cheap reading, no waiter blocked on a CQ of the QP for
 *    XIW_ACK_CB_HOLD_NS, and they were on that long: a program that
 *    blocks for each WR (rping) keeps them, and they do not flap;
 *  - on (xiw_txack_cb_need) before a watermark is armed again: a waiter
 *    is about to block (xiw_txack_handoff), or the scan found the
 *    poller gone. A nap leaves them off: the napper is back within
 *    XIW_POLL_NAP_US and checks itself (qp_ack_poll in xiw_txack.c).
 * Send calls made while they were off carry no TX timestamp mark, and
 * RTT_CB does not fire on every ACK: after a switch on, the QP's pending
 * WRs are polled (ack_late, the 1 ms poll timer) until none is left.
 */
#include <errno.h>
#include <string.h>
#include "xiw_obj.h"

#define XIW_ACK_CB_HOLD_NS (10u * 1000000u)

static uint64_t switches[2];	/* [0] off, [1] on */

/**
 * xiw_txack_cb_switches() - how many times the callbacks of a QP were
 * switched on (@on) or off, since the process started.
 */
uint64_t xiw_txack_cb_switches(bool on)
{
	return __atomic_load_n(&switches[on], __ATOMIC_RELAXED);
}

/* The switch failed: keep the state it has for good, say so once. */
static void cb_fixed(struct xiw_qp *qp, bool on, int err)
{
	qp->ack_cb_fixed = true;
	if (err != -EOPNOTSUPP)	/* -EOPNOTSUPP: no switch at all */
		xiw_log(on ? XIW_LOG_WARN : XIW_LOG_INFO,
			"qp %u: the sockops ACK callbacks could not be switched %s (%s); they stay %s%s",
			qp->ibv.qp_num, on ? "on" : "off", strerror(-err),
			on ? "off: ACK completions are polled" : "on",
			on ? " (1 ms)" : "");
}

/**
 * xiw_txack_cb_traced() - @qp's stream was just registered with the
 * tracer: its callbacks are on (the program's ESTABLISHED callback).
 */
void xiw_txack_cb_traced(struct xiw_qp *qp)
{
	qp->ack_cb_on_ns = xiw_now_ns();
}

/**
 * xiw_txack_cb_quiet() - a thread polling a CQ of @qp just checked its
 * ACKs with the cheap reading (txack_try): switch the callbacks off if
 * no waiter blocked lately and they were on long enough (see above).
 * One setsockopt() when it switches.
 */
void xiw_txack_cb_quiet(struct xiw_qp *qp)
{
	uint64_t now;
	int r;

	if (qp->ack_cb_off || qp->ack_cb_fixed || !qp->ack_traced)
		return;
	now = xiw_now_ns();
	if (now - qp->ack_cb_on_ns < XIW_ACK_CB_HOLD_NS ||
	    now - __atomic_load_n(&qp->ack_block_ns, __ATOMIC_RELAXED) <
	    XIW_ACK_CB_HOLD_NS)
		return;
	r = xiw_llp_ack_callbacks(qp->llp, false);
	if (r) {
		cb_fixed(qp, false, r);
		return;
	}
	qp->ack_cb_off = true;
	qp->ack_armed = false;	/* the switch dropped the watermark */
	__atomic_add_fetch(&switches[0], 1, __ATOMIC_RELAXED);
	xiw_log(XIW_LOG_DEBUG, "qp %u: sockops ACK callbacks off: a poller serves",
		qp->ibv.qp_num);
}

/**
 * xiw_txack_cb_need() - a watermark of @qp is about to be armed: switch
 * its callbacks on if they are off. WRs still pending were sent without
 * marks: they are polled (ack_late) until done. @why: for the debug log.
 * Return: true if they were off (the caller polls: the 1 ms timer).
 */
bool xiw_txack_cb_need(struct xiw_qp *qp, const char *why)
{
	int r;

	if (!qp->ack_cb_off)
		return false;
	if (xiw_txc_pending(&qp->txc) || qp->zc_wait)
		qp->ack_late = true;
	if (qp->ack_cb_fixed)	/* could not be switched on before */
		return true;
	r = xiw_llp_ack_callbacks(qp->llp, true);
	if (r) {
		cb_fixed(qp, true, r);
		return true;
	}
	qp->ack_cb_off = false;
	qp->ack_cb_on_ns = xiw_now_ns();
	__atomic_add_fetch(&switches[1], 1, __ATOMIC_RELAXED);
	xiw_log(XIW_LOG_DEBUG, "qp %u: sockops ACK callbacks on: %s",
		qp->ibv.qp_num, why);
	return true;
}
