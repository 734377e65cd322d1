// SPDX-License-Identifier: MIT
/*
 * ACK completions (seed 000), the engine side: which QPs wait for peer
 * ACKs, and how the progress thread learns that they came.
 *
 * A QP in ack mode hands WRs to its struct xiw_txc (xiw_qp_tx.c) and puts
 * itself on the watch list. The progress thread "scans" the list: per QP
 * one consistent reading of the send state (xiw_llp_ack_state), the due
 * WRs become DONE and retire in order. It is woken by
 *   - the sockops ring buffer (privileged: a watermark event per QP when
 *     the acknowledged-bytes count reaches the oldest pending WR's end),
 *     with a slow backstop timer for ACKs the program does not see;
 *   - otherwise a short timer (ACK_POLL_MS) while WRs are pending.
 *
 * Locks: txack.lock protects the list and the flags; taken under a QP's
 * tx_lock (watch) and never the other way round. A listed QP holds a
 * reference (xiw_qp_ref) so destroy waits until the scan let go of it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include "xiw_obj.h"
#include "xiw_sockops.h"

#define ACK_POLL_MS 1		/* polling TCP_INFO: ~ACK latency we add */
/*
 * With sockops events: the net for ACKs the program does not see. It runs
 * on the ACK of a marked send call's last byte (TX timestamping; marked:
 * the calls that carry a signalled or zero-copy WR's end, xiw_qp_tx.c)
 * and once per round trip (RTT_CB); a WR that ends inside a send call and
 * is covered by a later ACK of the same round trip is seen only when the
 * rest of that call is acknowledged, or here, and so is an unsignalled
 * WR the scan armed for (no signalled one pending). (Before the
 * timestamping hook this was every multi-segment WR: RTT_CB is not per
 * ACK.)
 */
#define ACK_BACKSTOP_MS 5
/*
 * Bound of the zero-copy drain on the way to ERROR (qp_zc_quiesce). After
 * the abort only clones queued below TCP hold pages: on veth and loopback
 * the notifications came within ~40 us; a NIC's TX completion or a pacing
 * qdisc takes longer. The caller (an app thread in ibv_modify_qp or the
 * progress thread) blocks that long at most.
 */
#define XIW_ZC_QUIESCE_MS 500
/* Zero-copy pays for pinning and a notification per call only for large
 * pieces; below ~64 KB copying is as cheap (msg_zerocopy.rst: ~10 KB is
 * the break-even on a real NIC; FPDUs are at most 64 KB anyway). */
#define XIW_ZCOPY_MIN_DEF (64u * 1024)
#define XIW_TX_CORK_US_DEF 20	/* xiw_txcork.c */

static struct {
	pthread_mutex_t lock;
	struct xiw_qp *list;		/* watched QPs (txack.lock) */
	bool kick_queued;		/* a kick closure is on its way */
	/* progress thread only */
	struct xiw_ptimer timer;
	struct xiw_pfd ring;
	bool ring_tried;
	bool timer_slow;		/* the timer is the backstop */
	unsigned long backstop_hits;	/* backstop scans that completed WRs */
	uint64_t woken;			/* posts' kicks, watermark events */
	uint64_t inline_hits;		/* txack_try calls that completed WRs */
} txack = { .lock = PTHREAD_MUTEX_INITIALIZER, .ring = { .fd = -1 } };

/* ------------------------------------------------------------ config --- */

static struct xiw_txcfg txcfg;
static pthread_once_t txcfg_once = PTHREAD_ONCE_INIT;

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return def;
	n = strtol(v, &end, 0);
	if (*end || n < 0) {
		xiw_log(XIW_LOG_WARN, "%s=%s: not a number, using %ld", name, v, def);
		return def;
	}
	return n;
}

static void txcfg_read(void)
{
	const char *mode = getenv("XIW_TX_COMPLETION");

	txcfg.ack = mode && !strcmp(mode, "ack");
	if (mode && !txcfg.ack && strcmp(mode, "copy"))
		xiw_log(XIW_LOG_WARN, "XIW_TX_COMPLETION=%s: use copy or ack; using copy", mode);
	txcfg.zcopy_min = (uint32_t)env_long("XIW_ZCOPY_MIN", XIW_ZCOPY_MIN_DEF);
	txcfg.cork_ns = (uint64_t)env_long("XIW_TX_CORK_US", XIW_TX_CORK_US_DEF) * 1000u;
	txcfg.method = (int)env_long("XIW_ACK_METHOD", XIW_ACK_HSN);
	if (txcfg.method != XIW_ACK_EQL && txcfg.method != XIW_ACK_HSN) {
		xiw_log(XIW_LOG_WARN, "XIW_ACK_METHOD=%d: use 1 or 2; using 2", txcfg.method);
		txcfg.method = XIW_ACK_HSN;
	}
}

/**
 * xiw_tx_config() - send-completion knobs, read once from the environment:
 * XIW_TX_COMPLETION=copy|ack (default copy), XIW_ACK_METHOD=1|2 (seed 000
 * method, default 2), XIW_ZCOPY_MIN=bytes (default 65536, 0: off),
 * XIW_TX_CORK_US=microseconds (TX corking window, default 20, 0: off).
 * Return: the parsed values (never NULL).
 */
const struct xiw_txcfg *xiw_tx_config(void)
{
	pthread_once(&txcfg_once, txcfg_read);
	return &txcfg;
}

static void *preload_main(void *arg)
{
	(void)arg;
	xiw_sockops_load();
	return NULL;
}

static void preload_start(void)
{
	pthread_attr_t at;
	pthread_t tid;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&tid, &at, preload_main, NULL))
		xiw_log(XIW_LOG_INFO, "txack: no preload thread; loading later");
	pthread_attr_destroy(&at);
}

/**
 * xiw_txack_preload() - start loading the sockops ACK tracer in the
 * background (once per process; ack mode). Loading and verifying the BPF
 * program takes tens of milliseconds: neither a QP create nor the
 * progress thread (which also runs the CM: a slow re-listen makes
 * perftest's second connect fail) should wait for it.
 */
void xiw_txack_preload(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, preload_start);
}

/* ------------------------------------------------------ one QP check --- */

/**
 * xiw_txack_trace() - register @qp's stream with the sockops tracer, once
 * (ack mode; zero-copy alone in copy mode polls: no BPF for the default
 * mode, unless the transport reports ACKs itself: xsk). Called before the stream's first write, so that write's send
 * call is already marked for the ACK callback (bpf/xiw_sockops.bpf.c),
 * and again from the scan while the tracer was still loading. Never
 * waits for the loader. tx_lock held, any thread.
 */
void xiw_txack_trace(struct xiw_qp *qp)
{
	int r;

	if (qp->ack_tried || !qp->llp ||
	    (!qp->ack_mode && !qp->llp->ops->ack_events))
		return;
	xiw_llp_set_ack_wake(xiw_txack_wake);
	r = xiw_llp_ack_trace(qp->llp, qp->ibv.qp_num);
	/* tracer still loading: poll meanwhile, register later */
	qp->ack_tried = r != -EINPROGRESS;
	qp->ack_traced = !r;
	if (!r)
		xiw_txack_cb_traced(qp);
	/* the send calls of WRs already handed over were not marked for the
	 * ACK callback: poll until they are done */
	qp->ack_late = !r && xiw_txc_pending(&qp->txc);
	if (r == -ENOENT)
		xiw_log(XIW_LOG_INFO, "qp %u: connected before the sockops tracer was attached (no ACK callbacks): polling",
			qp->ibv.qp_num);
}

/*
 * Acknowledged zero-copy WRs become DONE once the kernel released their
 * pages (the app may reuse the buffer only then). tx_lock held.
 */
static void qp_zc_released(struct xiw_qp *qp)
{
	for (uint32_t i = qp->sq_tail; qp->zc_wait && i != qp->sq_tx; i++) {
		struct xiw_sqe *e = &qp->sq[i & qp->sq_mask];

		if (e->state != XIW_SQE_ACKED)
			continue;
		if (!xiw_llp_zc_released(qp->llp, e->zc_id))
			break;	/* ids are released in order */
		e->state = XIW_SQE_DONE;
		qp->zc_wait--;
	}
}

/*
 * Can one cheap reading of @qp's send state complete every pending WR?
 * With method 2 the stream position one past our last written byte is
 * known (txc.tail: nothing else writes to the socket, tx_lock held), so
 * una = tail - outq and SIOCOUTQ alone will do: no socket lock, unlike
 * TCP_INFO (xiw_llp_ack_outq). A FIN counts in outq: una then reads one
 * short until it is acknowledged, late, never early. tx_lock held.
 */
static bool qp_ack_cheap(const struct xiw_qp *qp)
{
	return qp->llp && qp->txc.synced && qp->txc.method == XIW_ACK_HSN &&
	       xiw_llp_has_ack_outq(qp->llp);
}

/* The send state: cheap (see above) or exact. tx_lock held. */
static int qp_ack_read(struct xiw_qp *qp, bool cheap, uint32_t *una,
		       uint32_t *outq)
{
	if (cheap && qp_ack_cheap(qp) && !xiw_llp_ack_outq(qp->llp, outq)) {
		*una = qp->txc.tail - *outq;
		return 0;
	}
	return xiw_llp_ack_state(qp->llp, una, outq);
}

/*
 * Complete what the peer acknowledged; @cheap: read the state as
 * qp_ack_cheap() allows (a poller's check), else exactly (TCP_INFO).
 * tx_lock held. Return: taken any.
 */
static bool qp_ack_take(struct xiw_qp *qp, bool cheap, uint32_t *una,
			uint32_t *outq)
{
	bool any = false;
	uint32_t id;

	if (qp_ack_read(qp, cheap, una, outq))
		return false;
	while (xiw_txc_take(&qp->txc, *una, *outq, &id)) {
		struct xiw_sqe *e = &qp->sq[id & qp->sq_mask];

		e->state = e->zc ? XIW_SQE_ACKED : XIW_SQE_DONE;
		qp->zc_wait += e->zc;
		any = true;
	}
	qp_zc_released(qp);
	if (atomic_load(&qp->state) == IBV_QPS_RTS)
		xiw_qp_sq_retire(qp);
	return any;
}

/*
 * A thread polls a CQ of @qp (xiw_cq_polled_lately) and has not handed
 * back: its empty polls check the ACKs of @qp's WRs (xiw_txack_poll) with
 * the cheap reading, so it completes them itself and needs no watermark,
 * no sockops event, no scan. The app thread of a stream polls its CQ
 * anyway, while a sockops event per watermark woke the progress thread
 * (~0.5 per 64 KB WR), and on 2 vCPUs each wake-up preempted that poller
 * or the datamover. A poller hands back before it naps or blocks
 * (xiw_txack_handoff); one that just stops polling is caught by the
 * scan's backstop timer. tx_lock held.
 */
#define XIW_ACK_POLLER_NS 200000u
/*
 * An idle QP (no WR pending) stays on the watch list this long after its
 * CQ was polled, naps included: listing it again costs its next WR a
 * kick, a progress-thread wake-up, each time a scan found it idle.
 */
#define XIW_ACK_KEEP_NS (2u * ACK_BACKSTOP_MS * 1000000u)

static bool qp_cq_polled(struct xiw_qp *qp, uint64_t ns, bool serving)
{
	return xiw_cq_polled_lately(qp->scq, ns, serving) ||
	       (qp->rcq != qp->scq &&
		xiw_cq_polled_lately(qp->rcq, ns, serving));
}

static bool qp_ack_poller(struct xiw_qp *qp)
{
	return qp_ack_cheap(qp) && qp_cq_polled(qp, XIW_ACK_POLLER_NS, true);
}

/*
 * The callbacks are off (xiw_txack_cb.c) and the poller handed back for
 * a nap: it checks the ACKs itself when it is back, so no watermark. A
 * nap lasts XIW_POLL_NAP_US (default 200 us), but on 2 busy vCPUs the
 * napper often came back only 1-5.6 ms later (a 64 KB `ib_write_bw`
 * stream in ack mode: 53 such gaps in 1.5 s, a switch on and, 10 ms
 * later, off each), so a poller is taken for gone only after two
 * backstop periods without a poll (its app does something else, without
 * blocking on the CQ; a block switches them on at once).
 */
#define XIW_ACK_NAPPER_NS (2u * ACK_BACKSTOP_MS * 1000000u)

static bool qp_ack_napping(struct xiw_qp *qp)
{
	/* atomic: the scan reads it without tx_lock (txack_poller_kept) */
	return __atomic_load_n(&qp->ack_cb_off, __ATOMIC_RELAXED) &&
	       qp_ack_cheap(qp) &&
	       qp_cq_polled(qp, XIW_ACK_NAPPER_NS, false);
}

static bool qp_ack_keep(struct xiw_qp *qp)
{
	return atomic_load(&qp->state) == IBV_QPS_RTS && qp_ack_cheap(qp) &&
	       qp_cq_polled(qp, XIW_ACK_KEEP_NS, false);
}

/*
 * Where to put the watermark: at the oldest tracked WR someone waits for,
 * a signalled one (its WC) or a zero-copy one (its pages); the
 * unsignalled WRs before it complete with it. So an app that signals
 * every Nth WR (perftest with -Q N) costs one ACK event per N WRs, not
 * one per WR. With none of those pending, the newest: its ACK frees every
 * pending WR's SQ slot at once. tx_lock held, WRs pending.
 */
static uint32_t ack_target(struct xiw_qp *qp, uint32_t una, uint32_t outq)
{
	uint32_t n = xiw_txc_pending(&qp->txc), i;

	for (i = 0; i + 1 < n; i++) {
		uint32_t id = xiw_txc_id_at(&qp->txc, i);
		const struct xiw_sqe *e = &qp->sq[id & qp->sq_mask];

		if (qp->sig_all || (e->flags & IBV_SEND_SIGNALED) || e->zc)
			break;
	}
	return xiw_txc_target_at(&qp->txc, una, outq, i);
}

/*
 * The backstop scan found acknowledged WRs of @qp behind the watermark the
 * last check armed: a miss only if its event has not fired. It may have
 * fired just now, after the timer looked for queued events (the ACK came
 * while this scan ran: the event still waits in the ring), which is no
 * miss. The ACK callback runs under the socket lock right after the count
 * moved, so once qp_ack_take() saw the bytes acknowledged, a watermark
 * still armed was passed without an event. tx_lock held.
 */
static bool qp_ack_missed(struct xiw_qp *qp)
{
	int armed = xiw_llp_ack_armed(qp->llp);

	if (armed == 0) {
		xiw_log(XIW_LOG_DEBUG, "qp %u: the backstop completed WRs whose ACK event fired meanwhile: not a miss",
			qp->ibv.qp_num);
		return false;
	}
	xiw_log(XIW_LOG_DEBUG, "qp %u: the backstop completed WRs past a watermark %s",
		qp->ibv.qp_num, armed > 0 ? "still armed: the ACK tracer did not fire it" :
		"of unknown state");
	return true;
}

/*
 * Check @qp, arm its sockops watermark if WRs are still pending and no
 * poller serves them (qp_ack_poller; then check again: the ACK may have
 * come before the arm). tx_lock held.
 * Return: true to keep the QP listed (WRs still wait, or qp_ack_keep);
 * *fast: the QP needs the poll timer;
 * *missed: with @backstop (the backstop timer's scan), acknowledged WRs
 * waited behind a watermark the last check armed and whose event has not
 * fired (qp_ack_missed).
 */
static bool qp_ack_poll(struct xiw_qp *qp, bool backstop, bool *fast,
			bool *missed)
{
	uint32_t una, outq;
	bool poller, armed;

	if (!qp->llp)
		return false;
	armed = qp->ack_armed;
	qp->ack_armed = false;
	/* idle, but a poller served it lately: stay listed, so its next
	 * WR needs no kick to be watched */
	if (!xiw_txc_pending(&qp->txc) && !qp->zc_wait)
		return qp_ack_keep(qp);
	xiw_txack_trace(qp);
	if (qp_ack_take(qp, false, &una, &outq) && backstop && armed &&
	    !qp->ack_late && qp_ack_missed(qp))
		*missed = true;
	poller = qp_ack_poller(qp) || qp_ack_napping(qp);
	if (!poller && xiw_txc_pending(&qp->txc))
		xiw_txack_cb_need(qp, "no poller");
	if (!xiw_txc_pending(&qp->txc))
		qp->ack_late = false;
	if (qp->ack_late)
		*fast = true;
	for (int i = 0; i < 2 && xiw_txc_pending(&qp->txc) && !poller; i++) {
		if (!qp->ack_traced ||
		    xiw_llp_ack_arm(qp->llp, ack_target(qp, una, outq))) {
			*fast = true;
			break;
		}
		qp->ack_armed = true;
		if (!qp_ack_take(qp, false, &una, &outq))
			break;
	}
	if (qp->zc_wait)	/* notifications come on EPOLLERR, soon */
		*fast = true;
	return xiw_txc_pending(&qp->txc) || qp->zc_wait || qp_ack_keep(qp);
}

/*
 * The QP is about to fail its WRs while the kernel may still hold pages
 * of zero-copy sends: no WC, FLUSH_ERR included, may hand those buffers
 * back before a release notification covers them, or the application
 * reuses a buffer the kernel still transmits from. Abort the stream and
 * wait (bounded) for the notifications. tx_lock held.
 */
static void qp_zc_quiesce(struct xiw_qp *qp)
{
	if (!xiw_llp_zc_outstanding(qp->llp))
		return;
	if (xiw_llp_zc_quiesce(qp->llp, XIW_ZC_QUIESCE_MS))
		xiw_log(XIW_LOG_WARN, "qp %u: the kernel still holds zero-copy pages %d ms after the abort; their WRs complete anyway (the buffers may still be read)",
			qp->ibv.qp_num, XIW_ZC_QUIESCE_MS);
	qp_zc_released(qp);	/* acknowledged and now released: done */
	if (atomic_load(&qp->state) == IBV_QPS_RTS)
		xiw_qp_sq_retire(qp);
}

/**
 * xiw_txack_zc_quiesce() - a WR of @qp is about to fail outside the move
 * to ERROR (the peer's TERMINATE refused it): abort the stream and wait
 * for zero-copy pages as xiw_txack_settle() does, without completing
 * acknowledged WRs first (the failing head WR may be acknowledged by TCP,
 * yet refused). tx_lock held; the head WR's fail_st already set.
 */
void xiw_txack_zc_quiesce(struct xiw_qp *qp)
{
	if (qp->llp)
		qp_zc_quiesce(qp);
}

/**
 * xiw_txack_settle() - before a flush (the move to ERROR, from RTS):
 * complete, successfully, every WR the peer already acknowledged (and
 * whose zero-copy pages are free), so a close racing the ACK poll does
 * not turn delivered WRs into flushes; then, if zero-copy pages are still
 * held, abort the stream and wait up to XIW_ZC_QUIESCE_MS for their
 * release, so the flush hands back no buffer the kernel may still send
 * from. tx_lock held, QP still in RTS.
 */
void xiw_txack_settle(struct xiw_qp *qp)
{
	uint32_t una, outq;

	if (!qp->llp)
		return;
	/* before the abort: it resets the acknowledged-bytes count */
	if (xiw_txc_pending(&qp->txc) || qp->zc_wait)
		qp_ack_take(qp, false, &una, &outq);
	qp_zc_quiesce(qp);
}

/* ------------------------------------------------------------- scan --- */

static void txack_timer_fn(void *arg);

/* Progress thread: check every watched QP; keep those still waiting. */
static void txack_ring_setup(void);

/*
 * No lock held: @qp looks idle (no WR waits for an ACK: a hint, read
 * without tx_lock) while a CQ of it is polled (qp_ack_keep): it stays
 * listed without a look under tx_lock, so the backstop timer's scans do
 * not make posters find the lock taken (their WRs would then go out
 * through the progress thread, not in their post or cork). Keeping a QP
 * listed is never wrong; one with WRs pending is checked under the lock.
 */
static bool txack_idle_kept(struct xiw_qp *qp)
{
	return !__atomic_load_n(&qp->txc.n, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&qp->zc_wait, __ATOMIC_RELAXED) &&
	       atomic_load(&qp->state) == IBV_QPS_RTS &&
	       qp_cq_polled(qp, XIW_ACK_KEEP_NS, false);
}

/*
 * A poller serves @qp with the callbacks off (qp_ack_napping, read
 * without tx_lock: hints, re-read under it by the poller's own checks):
 * the scan has nothing to do for it but keep it listed. Its lock and
 * exact reading (TCP_INFO, which waits for a sendmsg in progress) cost a
 * context switch or more each.
 */
static bool txack_poller_kept(struct xiw_qp *qp)
{
	return !__atomic_load_n(&qp->zc_wait, __ATOMIC_RELAXED) &&
	       atomic_load(&qp->state) == IBV_QPS_RTS && qp_ack_napping(qp);
}

static void txack_scan(bool backstop)
{
	struct xiw_qp *qp, *next;
	bool fast = false, missed = false, left;

	txack_ring_setup();	/* once the tracer has loaded */
	pthread_mutex_lock(&txack.lock);
	qp = txack.list;
	txack.list = NULL;
	pthread_mutex_unlock(&txack.lock);
	for (; qp; qp = next) {
		next = qp->ack_next;	/* still listed: nobody else writes it */
		if (txack_idle_kept(qp) || txack_poller_kept(qp)) {
			pthread_mutex_lock(&txack.lock);
			qp->ack_next = txack.list;
			txack.list = qp;
			pthread_mutex_unlock(&txack.lock);
			continue;
		}
		pthread_mutex_lock(&qp->tx_lock);
		left = qp_ack_poll(qp, backstop, &fast, &missed);
		/* decided under tx_lock: a post after this sees the flag */
		pthread_mutex_lock(&txack.lock);
		if (left) {
			qp->ack_next = txack.list;
			txack.list = qp;
		} else {	/* a post may list it again right away */
			qp->ack_listed = false;
		}
		pthread_mutex_unlock(&txack.lock);
		xiw_tx_unlock(qp);
		if (!left)	/* after its locks: destroy may free it now */
			xiw_qp_unref(qp);
	}
	if (missed)	/* an ACK the sockops program did not report */
		xiw_log(XIW_LOG_DEBUG, "txack: the %d ms backstop completed WRs (%lu times so far)",
			ACK_BACKSTOP_MS,
			__atomic_add_fetch(&txack.backstop_hits, 1,
					   __ATOMIC_RELAXED));
	pthread_mutex_lock(&txack.lock);
	left = txack.list != NULL;
	pthread_mutex_unlock(&txack.lock);
	txack.timer_slow = left && !fast;
	if (left)
		xiw_progress_timer_arm(&txack.timer,
				       fast ? ACK_POLL_MS : ACK_BACKSTOP_MS,
				       txack_timer_fn, NULL);
	else
		xiw_progress_timer_cancel(&txack.timer);
}

static void ring_event(void *ctx, const struct xiw_ack_event *ev)
{
	(void)ctx;
	/* a wake-up: the scan reads the exact state itself */
	if (ev->type == XIW_ACK_EV_WATERMARK)
		__atomic_add_fetch(&txack.woken, 1, __ATOMIC_RELAXED);
}

/*
 * The poll or backstop timer. A backstop that finds sockops events
 * queued is late, not needed: the progress thread was busy (or not
 * scheduled) when both became due, and the events say the ACK was seen;
 * it then scans as the event would have, so only ACKs the program really
 * missed count as backstop completions.
 */
static void txack_timer_fn(void *arg)
{
	bool backstop = txack.timer_slow;

	(void)arg;
	if (backstop && txack.ring.fd >= 0 &&
	    xiw_sockops_consume(ring_event, NULL) > 0)
		backstop = false;
	txack_scan(backstop);
}

static void txack_ring_cb(void *arg, uint32_t events)
{
	(void)arg;
	(void)events;
	xiw_sockops_consume(ring_event, NULL);
	txack_scan(false);
}

/* Progress thread: watch the sockops ring fd once it exists. */
static void txack_ring_setup(void)
{
	if (txack.ring_tried || !xiw_tx_config()->ack)
		return;
	/* Never wait for the loader here: this thread runs the CM too, and
	 * a ~170 ms stall made perftest's reconnect find no listener. */
	if (xiw_sockops_peek() == -EINPROGRESS) {
		xiw_txack_preload();
		return;		/* the next kick or scan tries again */
	}
	txack.ring_tried = true;
	if (xiw_sockops_peek())
		return;
	txack.ring.fd = xiw_sockops_ring_fd();
	txack.ring.cb = txack_ring_cb;
	if (txack.ring.fd < 0 || xiw_progress_fd_add(&txack.ring, EPOLLIN))
		xiw_log(XIW_LOG_WARN, "txack: sockops ring not watched; polling");
}

static void txack_kick(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&txack.lock);
	txack.kick_queued = false;
	pthread_mutex_unlock(&txack.lock);
	txack_ring_setup();
	txack_scan(false);
}

/*
 * Queue one scan on the progress thread unless one is on its way
 * (txack.lock held on entry, released here).
 * Return: false if it could not be queued (out of memory).
 */
static bool txack_kick_unlock(void)
{
	bool kick = !txack.kick_queued;

	txack.kick_queued = true;
	pthread_mutex_unlock(&txack.lock);
	if (!kick || !xiw_progress_run(txack_kick, NULL))
		return true;
	pthread_mutex_lock(&txack.lock);
	txack.kick_queued = false;
	pthread_mutex_unlock(&txack.lock);
	return false;
}

/**
 * xiw_txack_wake() - a transport saw an armed acknowledged-bytes
 * watermark reached (xiw_llp_ack_wake; xsk: utcp's snd_una passed it):
 * scan the watched QPs now rather than at the backstop timer. Any thread,
 * no QP lock held.
 */
void xiw_txack_wake(void)
{
	pthread_mutex_lock(&txack.lock);
	txack_kick_unlock();
}

/*
 * Without the cheap reading (qp_ack_cheap), at most this many WRs waiting
 * for ACKs for a reading or polling thread to check them: a ping-pong has
 * one. A stream has many, and its sender polling TCP_INFO every few us
 * took the socket lock from the datamover's sendmsg (64 KB ib_write_bw in
 * ack mode, 6 interleaved runs on a loaded host: median 1315 MB/s without
 * this limit, 1720 with it); the scan serves it.
 */
#define TXACK_INLINE_MAX 4

/*
 * Complete what the peer acknowledged of @qp's WRs, in this thread, if
 * tx_lock is free (never blocks: the progress thread's scan stays the
 * net) and the check is cheap (qp_ack_cheap) or few WRs wait.
 * Return: true if WRs completed.
 */
static bool txack_try(struct xiw_qp *qp, bool poller)
{
	uint32_t una, outq, n;
	bool took = false;

	/* a hint: set under tx_lock, re-checked under it below */
	if (!__atomic_load_n(&qp->ack_listed, __ATOMIC_RELAXED) ||
	    pthread_mutex_trylock(&qp->tx_lock))
		return false;
	n = xiw_txc_pending(&qp->txc);
	if (qp->llp && (n || qp->zc_wait) &&
	    (n <= TXACK_INLINE_MAX || qp_ack_cheap(qp))) {
		took = qp_ack_take(qp, true, &una, &outq);
		if (poller && qp_ack_cheap(qp))
			xiw_txack_cb_quiet(qp);
	}
	xiw_tx_unlock(qp);
	if (took)
		__atomic_add_fetch(&txack.inline_hits, 1, __ATOMIC_RELAXED);
	return took;
}

/**
 * xiw_txack_woken_scans() - how many scans of the watched QPs a post
 * (xiw_txack_watch) or a reached watermark (sockops event) asked for, a
 * progress-thread wake-up each unless it was awake anyway, since the
 * process started; not counted: the timers' scans, kicks of QPs being
 * flushed, events of closed sockets.
 */
uint64_t xiw_txack_woken_scans(void)
{
	return __atomic_load_n(&txack.woken, __ATOMIC_RELAXED);
}

/**
 * xiw_txack_backstop_hits() - how many times the backstop timer, not a
 * sockops event or a poller, completed WRs of a QP whose watermark was
 * armed (an ACK the sockops program missed), since the process started.
 * A QP a poller served had none armed: its backstop completions (the
 * poller stopped polling without handing back) do not count.
 */
unsigned long xiw_txack_backstop_hits(void)
{
	return __atomic_load_n(&txack.backstop_hits, __ATOMIC_RELAXED);
}

/**
 * xiw_txack_inline_hits() - how many times a reading or polling thread
 * completed acknowledged WRs itself (xiw_txack_rx, xiw_txack_poll) rather
 * than the progress thread's scan, since the process started.
 */
uint64_t xiw_txack_inline_hits(void)
{
	return __atomic_load_n(&txack.inline_hits, __ATOMIC_RELAXED);
}

/**
 * xiw_txack_rx() - a read on @qp just returned the peer's bytes: in ack
 * mode they come with the ACK of its pending WRs when the peer answered
 * (piggybacked), so complete what is acknowledged now. Costs one load
 * unless WRs wait for ACKs. rx_lock held (rx_lock -> tx_lock).
 */
void xiw_txack_rx(struct xiw_qp *qp)
{
	(void)txack_try(qp, false);
}

#define TXACK_APP_POLL_NS 2000	/* a polling thread checks this often */

/**
 * xiw_txack_poll() - a thread polls an empty CQ of @qp: check for ACKs of
 * its pending WRs itself (ksock: SIOCOUTQ, no socket lock) instead of
 * waiting for the progress thread's scan. While it keeps polling, the
 * scan leaves the QP to it (qp_ack_poller). At most one check per
 * TXACK_APP_POLL_NS per thread. No lock held.
 * Return: true if WRs completed.
 */
bool xiw_txack_poll(struct xiw_qp *qp)
{
	static __thread uint64_t last_ns;
	uint64_t now;

	if (!__atomic_load_n(&qp->ack_listed, __ATOMIC_RELAXED))
		return false;
	now = xiw_now_ns();
	if (now - last_ns < TXACK_APP_POLL_NS)
		return false;
	last_ns = now;
	return txack_try(qp, true);
}

/**
 * xiw_txack_handoff() - a thread that polled a CQ of @qp is about to nap
 * or, with @block, block (xiw_cq_rx_handoff, which marked the CQ handed
 * back first): the ACKs of @qp's pending WRs go back to the watermark,
 * armed here (no progress-thread wake-up), or to the scan's poll timer
 * when there is no watermark to arm. A nap with the tracer's callbacks
 * off keeps them (the napper checks when it is back); a block switches
 * them on (xiw_txack_cb_need). Takes tx_lock under the CQ's qps_lock
 * (as xiw_qp_credit_kick does), no other lock held.
 */
void xiw_txack_handoff(struct xiw_qp *qp, bool block)
{
	bool fast = false, missed = false;

	if (block)	/* a waiter that blocks keeps them on a while */
		__atomic_store_n(&qp->ack_block_ns, xiw_now_ns(),
				 __ATOMIC_RELAXED);
	/* hints, both written under tx_lock */
	if (!__atomic_load_n(&qp->ack_listed, __ATOMIC_RELAXED) &&
	    !(block && __atomic_load_n(&qp->ack_cb_off, __ATOMIC_RELAXED)))
		return;
	pthread_mutex_lock(&qp->tx_lock);
	if (!block && qp->ack_cb_off && !qp->zc_wait && qp_ack_cheap(qp)) {
		/* a nap: the poller checks when it is back (qp_ack_napping);
		 * complete what is acknowledged with its cheap reading */
		uint32_t una, outq;

		qp_ack_take(qp, true, &una, &outq);
		xiw_tx_unlock(qp);
		return;
	}
	if (block)	/* it needs events: the callbacks on (WRs sent
			 * while off: ack_late, which the check below sees) */
		xiw_txack_cb_need(qp, "a waiter blocks");
	/* a listed QP keeps the scan's (backstop) timer running */
	if (qp->ack_listed)
		qp_ack_poll(qp, false, &fast, &missed);
	xiw_tx_unlock(qp);
	if (!fast)
		return;	/* armed, nothing pending, or a poller serves it */
	pthread_mutex_lock(&txack.lock);
	txack_kick_unlock();
}

/**
 * xiw_txack_forget() - @qp's tracked WRs were flushed or its stream reset
 * (tx_lock held): have the progress thread drop its reference now rather
 * than at the next timer, so a destroy does not wait for it.
 */
void xiw_txack_forget(struct xiw_qp *qp)
{
	if (!qp->ack_listed)
		return;
	pthread_mutex_lock(&txack.lock);
	txack_kick_unlock();	/* else the next timer drops the ref */
}

/**
 * xiw_txack_watch() - @qp has WRs waiting for peer ACKs: make sure the
 * progress thread watches it (tx_lock held, any thread). Cheap when the
 * QP is already watched: one flag test.
 */
void xiw_txack_watch(struct xiw_qp *qp)
{
	if (qp->ack_listed) {
		/* the only pending WR: the QP was left listed after a thread
		 * completed the previous ones (xiw_txack_poll), so nobody
		 * armed a watermark for this one yet */
		if (xiw_txc_pending(&qp->txc) == 1 && !qp_ack_poller(qp) &&
		    !qp_ack_napping(qp)) {
			__atomic_add_fetch(&txack.woken, 1, __ATOMIC_RELAXED);
			pthread_mutex_lock(&txack.lock);
			txack_kick_unlock();
		}
		return;
	}
	xiw_qp_ref(qp);
	__atomic_add_fetch(&txack.woken, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&txack.lock);
	qp->ack_listed = true;
	qp->ack_next = txack.list;
	txack.list = qp;
	if (!txack_kick_unlock())
		xiw_log(XIW_LOG_ERROR, "qp %u: ACK completions not watched",
			qp->ibv.qp_num);
}
