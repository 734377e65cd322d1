// SPDX-License-Identifier: MIT
/*
 * Completion queues and completion channels.
 *
 * A CQ is a power-of-two ring of struct ibv_wc under cq->lock. Arming
 * (xiw_cq_req_notify) makes the next CQE (solicited-only: the next
 * solicited or error CQE) write one `struct xiw_cq *` to the channel's pipe;
 * the app polls/reads the pipe's read end (ibv.fd) like any fd.
 *
 * Seed 002 credits: a WC is only made into a slot reserved for it or when
 * the ring has room; whoever found no room is resumed by the poll that
 * frees one (xiw_cq_credit_kick), so the ring never overflows.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "xiw_obj.h"
#include "xiw_cq_wait.h"

/**
 * xiw_cchan_create() - a completion channel: a pipe whose read end is
 * ch->ibv.fd (blocking unless the app sets O_NONBLOCK) and whose write end
 * is non-blocking, so the engine never blocks on a slow reader.
 * Return: the channel, or NULL+errno (ENOMEM, EMFILE, ...).
 */
struct xiw_cchan *xiw_cchan_create(struct ibv_context *ctx)
{
	struct xiw_cchan *ch = calloc(1, sizeof(*ch));
	int fds[2];

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		free(ch);
		return NULL;
	}
	fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
	ch->ibv.context = ctx;
	ch->ibv.fd = fds[0];
	ch->ibv.refcnt = 0;
	ch->wfd = fds[1];
	return ch;
}

/**
 * xiw_cchan_destroy() - close the pipe and free @ch.
 * Return: 0, or -EBUSY while a CQ still uses it.
 */
int xiw_cchan_destroy(struct xiw_cchan *ch)
{
	if (__atomic_load_n(&ch->ibv.refcnt, __ATOMIC_ACQUIRE) > 0)
		return -EBUSY;
	close(ch->ibv.fd);
	close(ch->wfd);
	free(ch);
	return 0;
}

/**
 * xiw_cchan_get_event() - read one event (8 bytes: the CQ pointer).
 * Blocks unless O_NONBLOCK is set on ch->ibv.fd.
 * Return: 0 and *cq, -EAGAIN (non-blocking, no event), -EINTR, -errno.
 */
int xiw_cchan_get_event(struct xiw_cchan *ch, struct xiw_cq **cq)
{
	struct xiw_cq *ev;
	ssize_t n;

	xiw_tx_cork_flush();	/* held WRs may be what it waits for */
	n = read(ch->ibv.fd, &ev, sizeof(ev));

	if (n < 0)
		return -errno;
	if (n != sizeof(ev))	/* writes of 8 bytes are atomic (< PIPE_BUF) */
		return -EIO;
	*cq = ev;
	return 0;
}

/**
 * xiw_cq_create() - a CQ of at least @cqe entries, rounded up to a power of
 * two; ibv.cqe reports the real size.
 * @ch: completion channel for events, or NULL.
 * Return: the CQ, or NULL+errno (EINVAL @cqe < 1 or > XIW_MAX_CQE, ENOMEM).
 */
struct xiw_cq *xiw_cq_create(struct ibv_context *ctx, int cqe,
			     void *cq_context, struct xiw_cchan *ch)
{
	struct xiw_cq *cq;
	uint32_t size = 1;

	if (cqe < 1 || cqe > XIW_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	while (size < (uint32_t)cqe)
		size <<= 1;
	cq = calloc(1, sizeof(*cq));
	if (cq)
		cq->ring = calloc(size, sizeof(*cq->ring));
	if (!cq || !cq->ring) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&cq->lock, NULL);
	pthread_mutex_init(&cq->qps_lock, NULL);
	cq->size = size;
	cq->mask = size - 1;
	cq->ch = ch;
	atomic_init(&cq->nqp, 0);
	cq->ibv.context = ctx;
	cq->ibv.channel = ch ? &ch->ibv : NULL;
	cq->ibv.cq_context = cq_context;
	cq->ibv.cqe = (int)size;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	if (ch)
		__atomic_add_fetch(&ch->ibv.refcnt, 1, __ATOMIC_ACQ_REL);
	return cq;
}

/**
 * xiw_cq_destroy() - free @cq.
 * Return: 0, or -EBUSY while a QP still uses it or a thread is in
 * xiw_cq_wait() on it (the CQ stays valid).
 */
int xiw_cq_destroy(struct xiw_cq *cq)
{
	if (atomic_load(&cq->nqp) > 0 || atomic_load(&cq->waiter))
		return -EBUSY;
	if (cq->ch)
		__atomic_sub_fetch(&cq->ch->ibv.refcnt, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->qps_lock);
	pthread_mutex_destroy(&cq->ibv.mutex);
	pthread_cond_destroy(&cq->ibv.cond);
	free(cq->qps);
	free(cq->ring);
	free(cq);
	return 0;
}

/* ------------------------------------------- receiving from the poller */

int xiw_cq_qp_add(struct xiw_cq *cq, struct xiw_qp *qp)
{
	pthread_mutex_lock(&cq->qps_lock);
	if (cq->nqps == cq->qps_cap) {
		uint32_t cap = cq->qps_cap ? cq->qps_cap * 2 : 4;
		struct xiw_qp **q = realloc(cq->qps, cap * sizeof(*q));

		if (!q) {
			pthread_mutex_unlock(&cq->qps_lock);
			return -ENOMEM;
		}
		cq->qps = q;
		cq->qps_cap = cap;
	}
	cq->qps[cq->nqps++] = qp;
	pthread_mutex_unlock(&cq->qps_lock);
	return 0;
}

void xiw_cq_qp_del(struct xiw_cq *cq, struct xiw_qp *qp)
{
	pthread_mutex_lock(&cq->qps_lock);
	for (uint32_t i = 0; i < cq->nqps; i++)
		if (cq->qps[i] == qp) {
			cq->qps[i] = cq->qps[--cq->nqps];
			break;
		}
	pthread_mutex_unlock(&cq->qps_lock);
}

#define XIW_CQ_RX_QPS 4	/* QPs received for per empty poll at most */

static int cq_rx_mode = -1;	/* XIW_POLL_RX: 0 off, 1 on (default) */

/* XIW_POLL_RX: may pollers receive for their CQ's QPs? */
static bool cq_rx_on(void)
{
	int mode = __atomic_load_n(&cq_rx_mode, __ATOMIC_RELAXED);

	if (mode < 0) {
		const char *v = getenv("XIW_POLL_RX");

		mode = v ? atoi(v) != 0 : 1;
		__atomic_store_n(&cq_rx_mode, mode, __ATOMIC_RELAXED);
	}
	return mode;
}

/*
 * The CQ is empty: receive for its QPs in this thread (xiw_rx_poll), and
 * in ack mode check for their ACKs, rather than wait for the progress
 * thread to wake up. Round-robin over a few QPs
 * per call so a CQ shared by many QPs keeps poll_cq short; one poller at a
 * time (trylock), the others just see the CQ as it is.
 * Return: true if anything was received.
 */
static bool cq_rx_progress(struct xiw_cq *cq)
{
	struct xiw_qp *qp;
	bool got = false;
	uint32_t n;

	if (!cq_rx_on() || pthread_mutex_trylock(&cq->qps_lock))
		return false;
	n = cq->nqps < XIW_CQ_RX_QPS ? cq->nqps : XIW_CQ_RX_QPS;
	for (uint32_t i = 0; i < n; i++) {
		if (cq->qps_next >= cq->nqps)
			cq->qps_next = 0;
		qp = cq->qps[cq->qps_next++];
		got |= xiw_rx_poll(qp);
		got |= xiw_txack_poll(qp);	/* ack mode: its WRs' ACKs */
	}
	pthread_mutex_unlock(&cq->qps_lock);
	return got;
}

/**
 * xiw_cq_rx_handoff() - a thread is about to wait for @cq's completions
 * without polling: QPs whose reading was left to pollers (xiw_rx_poll)
 * go back to the progress thread now rather than at its 1 ms check, and
 * so do the ACK checks of their send WRs (xiw_txack_poll). @block: it
 * blocks (a channel or xiw_cq_wait), not a poller's nap.
 */
void xiw_cq_rx_handoff(struct xiw_cq *cq, bool block)
{
	atomic_store(&cq->poll_away, true);	/* before the QPs look */
	pthread_mutex_lock(&cq->qps_lock);
	for (uint32_t i = 0; i < cq->nqps; i++) {
		if (atomic_load(&cq->qps[i]->rx_app_mode))
			xiw_rx_kick(cq->qps[i]);
		xiw_txack_handoff(cq->qps[i], block);
	}
	pthread_mutex_unlock(&cq->qps_lock);
}

/* A QP of @cq is read by its pollers (xiw_rx_poll), not the progress
 * thread: a nap would first hand its reading back (a wake-up more). */
static bool cq_app_reads(struct xiw_cq *cq)
{
	bool app = false;

	if (pthread_mutex_trylock(&cq->qps_lock))
		return true;	/* unsure: the cheaper mistake is not to nap */
	for (uint32_t i = 0; i < cq->nqps && !app; i++)
		app = atomic_load_explicit(&cq->qps[i]->rx_app_mode,
					   memory_order_relaxed);
	pthread_mutex_unlock(&cq->qps_lock);
	return app;
}

static __thread unsigned int empty_polls;
static __thread uint64_t empty_since_ns;	/* 0: the last poll got WCs */
static __thread uint64_t empty_check_ns;	/* the last nap check */

/*
 * Yields on a loaded machine. The poller yields so that the engine's
 * threads get a CPU on small machines, and on an idle one a yield returns
 * at once or after the progress thread's turn (64 KB and 4 KB perftest
 * runs: 91-99 % within 100 us, at most 3.5 % over 1 ms). With other
 * programs busy on every CPU (two `yes` on 2 vCPUs), a yield hands the
 * CPU to one of them for a whole slice (a third of the yields took 1 ms
 * or more, most over 3 ms), and EEVDF (Linux >= 6.6) charges the yielder
 * that slice of virtual time, so its next wake-ups wait behind the busy
 * programs too: 8 B ib_send_lat went from 6 us to 2 ms, a 64 B rstream
 * ping-pong from 18 us to 1.9 ms, and rsockets_rdmacore timed out. So
 * the yields are sampled: when YIELD_SLOW_MAX of YIELD_SAMPLE took
 * YIELD_SLOW_NS or more, this thread stops yielding for 100 ms, doubling
 * while samples stay slow (up to 1.6 s); naps go on. With the pause,
 * ib_send_lat took 6.7-8.7 us under the same load.
 */
#define YIELD_SAMPLE	64
#define YIELD_SLOW_NS	1000000u
#define YIELD_SLOW_MAX	16
#define YIELD_OFF_MS	100u
#define YIELD_OFF_MAX_MS 1600u

static __thread struct {
	uint32_t n, slow;	/* yields in this sample, slow ones */
	uint32_t off_ms;	/* the last pause (0: the last sample was fast) */
	uint64_t off_until_ns;
} ysample;
static uint64_t yield_pauses;

/**
 * xiw_cq_yield_pauses() - how many times a poller stopped yielding because
 * its yields gave the CPU away for whole slices, since the process started.
 */
uint64_t xiw_cq_yield_pauses(void)
{
	return __atomic_load_n(&yield_pauses, __ATOMIC_RELAXED);
}

static void cq_yield(void)
{
	uint64_t t0 = xiw_now_ns(), t1;

	if (t0 < ysample.off_until_ns)
		return;
	sched_yield();
	t1 = xiw_now_ns();
	ysample.slow += t1 - t0 >= YIELD_SLOW_NS;
	if (++ysample.n < YIELD_SAMPLE)
		return;
	if (ysample.slow >= YIELD_SLOW_MAX) {
		ysample.off_ms = ysample.off_ms ?
				 ysample.off_ms * 2 : YIELD_OFF_MS;
		if (ysample.off_ms > YIELD_OFF_MAX_MS)
			ysample.off_ms = YIELD_OFF_MAX_MS;
		ysample.off_until_ns = t1 + (uint64_t)ysample.off_ms * 1000000u;
		__atomic_fetch_add(&yield_pauses, 1, __ATOMIC_RELAXED);
	} else {
		ysample.off_ms = 0;
	}
	ysample.n = ysample.slow = 0;
}

static int knob_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

/*
 * A thread spinning on an empty CQ yields every XIW_POLL_YIELD (default 8,
 * 0: never) empty polls: the progress thread that produces its completions
 * may be waiting for this CPU. On two busy vCPUs this tripled 4 KB
 * ib_send_bw and cut the p99 of ib_send_lat ~6x, for a few us typical.
 *
 * Once the CQ has stayed empty for XIW_POLL_NAP_AFTER_US (default 20) the
 * poller naps instead of yielding (xiw_cq_nap: futex until a CQE or
 * XIW_POLL_NAP_US, default 200). A poller that waits that long is not in
 * a ping-pong, it is an ib_write_bw server or a sender whose queue is
 * full, and its spinning
 * only takes the CPU from the progress thread and datamover that do the
 * transfer: on 2 vCPUs 64 KB ib_write_bw went from a median of 1.7 to 2.2
 * GB/s, ib_send_bw 1.6 -> 2.2 GB/s, the ib_write_bw server's CPU from a
 * busy core to ~1%.
 *
 * Unless a QP of the CQ is read by its pollers (app mode, xiw_rx_poll):
 * then the threshold is XIW_POLL_NAP_APP_US (default 200). That is a
 * ping-pong, and its nap is dear: it ends only once the progress thread
 * has taken the reading back, read the bytes, pushed the CQE and woken
 * the napper, wake-ups that on this VM often outlast the nap (p99 of 8 B
 * ib_send_lat followed XIW_POLL_NAP_US: 50 -> 50 us, 200 -> 155 us,
 * 400 -> 254 us). An 8 B round trip is ~4 us but one in a few hundred
 * takes over 20 us (the peer was preempted): with 20 for everyone its
 * average was 8.9-13.5 us, with 200 4.0-4.4 us. 200 for everyone cost
 * the streams instead, whose pollers do not read: 64 KB ib_read_bw, 3
 * interleaved runs, median 1345 MB/s against 1722 with 20 (ib_send_bw
 * 1640 against 1650).
 * Naps are checked with the yields, so
 * XIW_POLL_YIELD=0 disables both; XIW_POLL_NAP_AFTER_US=0 keeps only the
 * yields.
 */
static void cq_idle_poll(struct xiw_cq *cq)
{
	static int yield_every = -1, nap_after_us = -1, nap_us = -1,
		   nap_app_us = -1;
	uint64_t now;
	bool nap_on;

	if (yield_every < 0) {
		nap_after_us = knob_int("XIW_POLL_NAP_AFTER_US", 20);
		nap_app_us = knob_int("XIW_POLL_NAP_APP_US", 200);
		nap_us = knob_int("XIW_POLL_NAP_US", 200);
		yield_every = knob_int("XIW_POLL_YIELD", 8);
	}
	nap_on = nap_after_us > 0 && nap_us > 0;
	if (!yield_every || ++empty_polls < (unsigned int)yield_every)
		return;
	empty_polls = 0;
	if (nap_on) {
		uint64_t after_ns = (uint64_t)nap_after_us * 1000u;

		now = xiw_now_ns();
		/* a gap between checks: the app did something else (waited
		 * for a channel event, say), so a new empty streak starts */
		if (!empty_since_ns || now - empty_check_ns > after_ns)
			empty_since_ns = now;
		empty_check_ns = now;
		if (now - empty_since_ns >= after_ns &&
		    (now - empty_since_ns >= (uint64_t)nap_app_us * 1000u ||
		     !cq_app_reads(cq)) &&
		    xiw_cq_nap(cq, (uint32_t)nap_us))
			return;
	}
	cq_yield();
	/* the gap test above measures the app's time between polls, not
	 * this yield: on a loaded machine the yield gives the CPU away for a
	 * whole slice, every check then saw a "gap", restarted the streak,
	 * and the poller never napped (two CPU hogs: test_cq_wait
	 * test_poll_nap, 0 naps in 200 ms) */
	if (nap_on)
		empty_check_ns = xiw_now_ns();
}

void xiw_cq_credit_kick(struct xiw_cq *cq)
{
	xiw_dm_credit_kick();
	pthread_mutex_lock(&cq->qps_lock);
	for (uint32_t i = 0; i < cq->nqps; i++)
		xiw_qp_credit_kick(cq->qps[i], cq);
	pthread_mutex_unlock(&cq->qps_lock);
}

/*
 * The poll linger. A ping-pong whose app waits for the answer on memory
 * (perftest's ib_write_lat: post a WRITE, poll its send CQE, then spin on
 * the buffer the peer writes) left the answer to the progress thread,
 * whose wake-up on 2 busy vCPUs cost more than the round trip. When a
 * poll returns the CQE of an RDMA WRITE on a QP in a WRITE ping-pong
 * (pp_streak: the last XIW_PP_STREAK posts were single WRITEs, each after
 * the peer spoke, xiw_qp_tx.c) and the peer has not answered the last one
 * yet, the poller reads the QP's stream itself until the answer is in or
 * XIW_POLL_LINGER_US (default 100, 0: off) pass, then returns the CQE. A
 * CQE's time is not defined by the verbs; the answer is placed before the
 * app looks for it, by the thread that waits. XIW_POLL_RX=0 turns it off
 * with the pollers' other receiving. Only on CQs of at most
 * XIW_LINGER_MAX_QPS QPs: a CQ of 256 streaming QPs would scan them for
 * each poll that returns a WRITE's CQE, and it is no ping-pong. SEND
 * ping-pongs need none of this: their apps poll the receive CQ, and that
 * poll receives.
 */
#define XIW_PP_STREAK 4		/* the streak a first linger needs */
#define XIW_PP_STREAK_MAX 128	/* ... after lingers that did not pay */
#define XIW_LINGER_MAX_QPS 8	/* finding the QP of a CQE is a scan */

static uint64_t linger_hits;	/* lingers that ended with the answer */
static uint64_t linger_misses;	/* ... that the answer outlasted */

/**
 * xiw_cq_linger_hits() - how many poll lingers ended with the peer's
 * answer read by the lingering thread, since the process started.
 */
uint64_t xiw_cq_linger_hits(void)
{
	return __atomic_load_n(&linger_hits, __ATOMIC_RELAXED);
}

/**
 * xiw_cq_linger_misses() - how many poll lingers ended without the
 * answer (XIW_POLL_LINGER_US passed), since the process started.
 */
uint64_t xiw_cq_linger_misses(void)
{
	return __atomic_load_n(&linger_misses, __ATOMIC_RELAXED);
}

/* The streak @qp needs before its pollers linger (see pp_need). */
static unsigned int pp_need(const struct xiw_qp *qp)
{
	unsigned int need = __atomic_load_n(&qp->pp_need, __ATOMIC_RELAXED);

	return need ? need : XIW_PP_STREAK;
}

static void pp_need_set(struct xiw_qp *qp, unsigned int need)
{
	if (need < XIW_PP_STREAK)
		need = XIW_PP_STREAK;
	if (need > XIW_PP_STREAK_MAX)
		need = XIW_PP_STREAK_MAX;
	__atomic_store_n(&qp->pp_need, (uint8_t)need, __ATOMIC_RELAXED);
}

/*
 * The QP of @qpn on @cq if it is in a WRITE ping-pong (pinned), else
 * NULL: a stream's polls cost the scan, not a reference.
 */
static struct xiw_qp *cq_pp_qp(struct xiw_cq *cq, uint32_t qpn)
{
	struct xiw_qp *qp = NULL;

	if (pthread_mutex_trylock(&cq->qps_lock))
		return NULL;
	for (uint32_t i = 0; i < cq->nqps && !qp; i++)
		if (cq->qps[i]->ibv.qp_num == qpn)
			qp = cq->qps[i];
	if (qp && __atomic_load_n(&qp->pp_streak, __ATOMIC_RELAXED) >= pp_need(qp))
		xiw_qp_ref(qp);
	else
		qp = NULL;
	pthread_mutex_unlock(&cq->qps_lock);
	return qp;
}

static bool cq_has_cqes(struct xiw_cq *cq)
{
	return __atomic_load_n(&cq->head, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&cq->tail, __ATOMIC_RELAXED);
}

/*
 * Read @qp's stream until the peer's answer is in, other CQEs arrived on
 * @cq (the app has work), or @ns passed. An answer that outlasted the
 * linger (a server whose clients think between requests, a peer that was
 * preempted) doubles the streak the QP needs before the next linger, so a
 * pattern that only looks like a ping-pong costs one linger in many.
 */
static void qp_linger(struct xiw_cq *cq, struct xiw_qp *qp, uint64_t ns)
{
	/* written by posters under sq_lock: a hint, as the CQE's own post
	 * is what the mark stands for unless the app posted again since */
	uint32_t mark = __atomic_load_n(&qp->pp_rx_mark, __ATOMIC_RELAXED);
	uint64_t end = xiw_now_ns() + ns;

	while (__atomic_load_n(&qp->rx_reads, __ATOMIC_ACQUIRE) == mark) {
		if (cq_has_cqes(cq))
			return;
		if (!xiw_rx_poll_now(qp) && xiw_now_ns() >= end) {
			pp_need_set(qp, pp_need(qp) * 2);
			__atomic_store_n(&qp->pp_streak, 0, __ATOMIC_RELAXED);
			__atomic_add_fetch(&linger_misses, 1, __ATOMIC_RELAXED);
			/* whoever reads the late answer must not be this
			 * thread, which now returns to the app */
			if (atomic_load(&qp->rx_app_mode))
				xiw_rx_kick(qp);
			return;
		}
	}
	pp_need_set(qp, pp_need(qp) / 2);
	__atomic_add_fetch(&linger_hits, 1, __ATOMIC_RELAXED);
}

static void cq_linger(struct xiw_cq *cq, const struct ibv_wc *wc, int n)
{
	static int linger_us = -1;
	struct xiw_qp *qp;

	if (linger_us < 0)
		linger_us = knob_int("XIW_POLL_LINGER_US", 100);
	if (!linger_us || !cq_rx_on() ||
	    __atomic_load_n(&cq->nqps, __ATOMIC_RELAXED) > XIW_LINGER_MAX_QPS)
		return;
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].opcode != IBV_WC_RDMA_WRITE)
			continue;
		qp = cq_pp_qp(cq, wc[i].qp_num);
		if (!qp)
			return;
		if (atomic_load(&qp->state) == IBV_QPS_RTS)
			qp_linger(cq, qp, (uint64_t)linger_us * 1000u);
		xiw_qp_unref(qp);
		return;
	}
}

/* A poller is here (xiw_cq_polled_lately); ack mode only. */
static void cq_polled(struct xiw_cq *cq)
{
	if (!xiw_tx_config()->ack)
		return;
	atomic_store_explicit(&cq->poll_ns, xiw_now_ns(), memory_order_relaxed);
	if (atomic_load_explicit(&cq->poll_away, memory_order_relaxed))
		atomic_store_explicit(&cq->poll_away, false,
				      memory_order_relaxed);
}

/**
 * xiw_cq_polled_lately() - a thread polled @cq less than @ns ago, and its
 * empty polls check the ACKs of the CQ's QPs (XIW_POLL_RX on); with
 * @serving, also not handed back since (xiw_cq_rx_handoff: it went to nap
 * or block). Ack mode only (else always false). @cq may be NULL.
 */
bool xiw_cq_polled_lately(struct xiw_cq *cq, uint64_t ns, bool serving)
{
	uint64_t t;

	/* XIW_POLL_RX=0: its polls check no ACKs (cq_rx_progress) */
	if (!cq || !cq_rx_on() ||
	    (serving && atomic_load_explicit(&cq->poll_away,
					     memory_order_relaxed)))
		return false;
	t = atomic_load_explicit(&cq->poll_ns, memory_order_relaxed);
	return t && xiw_now_ns() - t < ns;
}

/**
 * xiw_cq_poll() - take up to @n completions, oldest first. Slots freed
 * while a WR or flush waits for one resume the waiters (seed 002).
 * Return: number of WCs written to @wc (0..n).
 */
int xiw_cq_poll(struct xiw_cq *cq, int n, struct ibv_wc *wc)
{
	bool kick = false;
	int i = 0;

	xiw_tx_cork_flush();	/* the app turns to its completions */
	cq_polled(cq);
	/* busy pollers of an empty CQ must not contend with the producer */
	if (__atomic_load_n(&cq->head, __ATOMIC_ACQUIRE) ==
	    __atomic_load_n(&cq->tail, __ATOMIC_RELAXED) &&
	    (!cq_rx_progress(cq) ||
	     __atomic_load_n(&cq->head, __ATOMIC_ACQUIRE) ==
	     __atomic_load_n(&cq->tail, __ATOMIC_RELAXED))) {
		cq_idle_poll(cq);
		return 0;
	}
	empty_polls = 0;
	empty_since_ns = 0;
	pthread_mutex_lock(&cq->lock);
	for (; i < n && cq->tail != cq->head; i++) {
		wc[i] = cq->ring[cq->tail & cq->mask];
		__atomic_store_n(&cq->tail, cq->tail + 1, __ATOMIC_RELAXED);
	}
	/* seed 002: slots were freed and someone waits for one; decided
	 * under the lock a waiter's failed attempt also held */
	if (i && __atomic_load_n(&cq->credit_wait, __ATOMIC_RELAXED)) {
		__atomic_store_n(&cq->credit_wait, false, __ATOMIC_RELAXED);
		kick = true;
	}
	pthread_mutex_unlock(&cq->lock);
	if (kick)
		xiw_cq_credit_kick(cq);
	cq_linger(cq, wc, i);
	return i;
}

/**
 * xiw_cq_req_notify() - arm @cq for one event on the next CQE (or the next
 * solicited/error CQE when @solicited_only). Re-arming with "any" upgrades
 * a solicited-only arm. Return: 0, or -EINVAL without a channel.
 */
int xiw_cq_req_notify(struct xiw_cq *cq, int solicited_only)
{
	if (!cq->ch)
		return -EINVAL;
	xiw_tx_cork_flush();
	xiw_cq_rx_handoff(cq, true);
	pthread_mutex_lock(&cq->lock);
	if (!solicited_only)
		cq->armed = XIW_CQ_ARM_NEXT;
	else if (cq->armed == XIW_CQ_DISARMED)
		cq->armed = XIW_CQ_ARM_SOL;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

/** xiw_cq_ack_events() - account @n events returned by the channel. */
void xiw_cq_ack_events(struct xiw_cq *cq, unsigned int n)
{
	pthread_mutex_lock(&cq->ibv.mutex);
	cq->ibv.comp_events_completed += n;
	pthread_cond_signal(&cq->ibv.cond);
	pthread_mutex_unlock(&cq->ibv.mutex);
}

static void cq_fire(struct xiw_cq *cq)
{
	struct xiw_cq *ev = cq;

	if (write(cq->ch->wfd, &ev, sizeof(ev)) != sizeof(ev))
		xiw_log(XIW_LOG_WARN, "cq %p: completion event lost", (void *)cq);
}

/* cq->lock held: a slot is free beyond the reserved ones */
static bool cq_room(const struct xiw_cq *cq)
{
	return cq->head - cq->tail + cq->resv < cq->size;
}

/* cq->lock held: no room for the caller; the next poll must kick it */
static void cq_want_credit(struct xiw_cq *cq, atomic_bool *wait)
{
	atomic_store(wait, true);
	__atomic_store_n(&cq->credit_wait, true, __ATOMIC_RELAXED);
}

enum { CQ_PLAIN, CQ_RESERVED, CQ_WAIT };

/**
 * cq_push() - append @wc; fire the channel if the CQ is armed for it.
 * @solicited: completion of a solicited message (SEND with SE).
 * @how: CQ_RESERVED the WC takes the slot reserved for it; otherwise
 *   reserved slots count as used, and without room CQ_WAIT raises *@wait
 *   (-EAGAIN) while CQ_PLAIN drops the WC: a credit accounting bug.
 * Return: 0, -EAGAIN (CQ_WAIT, no room), -ENOSPC (CQ_PLAIN, dropped).
 */
static int cq_push(struct xiw_cq *cq, const struct ibv_wc *wc, bool solicited,
		   int how, atomic_bool *wait)
{
	bool fire = false, wake = false;

	pthread_mutex_lock(&cq->lock);
	if (how == CQ_RESERVED && cq->resv) {
		cq->resv--;	/* its slot: free by construction */
	} else if (how == CQ_WAIT && !cq_room(cq)) {
		cq_want_credit(cq, wait);
		pthread_mutex_unlock(&cq->lock);
		return -EAGAIN;
	} else if (!cq_room(cq)) {
		cq->overflow++;
		pthread_mutex_unlock(&cq->lock);
		xiw_log(XIW_LOG_ERROR,
			"cq %p overflow (internal error: CQE credits): wr_id %#llx dropped",
			(void *)cq, (unsigned long long)wc->wr_id);
		xiw_async_cq(cq, IBV_EVENT_CQ_ERR);
		return -ENOSPC;
	} else if (how == CQ_RESERVED) {	/* no reservation: a bug too */
		xiw_log(XIW_LOG_ERROR,
			"cq %p: internal error: wr_id %#llx has no reserved slot",
			(void *)cq, (unsigned long long)wc->wr_id);
	}
	cq->ring[cq->head & cq->mask] = *wc;
	__atomic_store_n(&cq->head, cq->head + 1, __ATOMIC_RELEASE);
	if (cq->armed == XIW_CQ_ARM_NEXT ||
	    (cq->armed == XIW_CQ_ARM_SOL &&
	     (solicited || wc->status != IBV_WC_SUCCESS))) {
		cq->armed = XIW_CQ_DISARMED;
		fire = true;
	}
	if (cq->wait_nmin)	/* an xiw_cq_wait() sleeper's threshold */
		wake = xiw_cq_wait_due(cq);
	/* fire under the lock: events stay in CQE order per CQ */
	if (fire)
		cq_fire(cq);
	pthread_mutex_unlock(&cq->lock);
	if (wake)
		xiw_cq_wait_wake(cq);
	return 0;
}

int xiw_cq_push(struct xiw_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	return cq_push(cq, wc, solicited, CQ_PLAIN, NULL);
}

int xiw_cq_push_reserved(struct xiw_cq *cq, const struct ibv_wc *wc,
			 bool solicited)
{
	return cq_push(cq, wc, solicited, CQ_RESERVED, NULL);
}

int xiw_cq_push_wait(struct xiw_cq *cq, const struct ibv_wc *wc,
		     atomic_bool *wait)
{
	return cq_push(cq, wc, false, CQ_WAIT, wait);
}

bool xiw_cq_has_room(struct xiw_cq *cq)
{
	bool ok;

	pthread_mutex_lock(&cq->lock);
	ok = cq_room(cq);
	pthread_mutex_unlock(&cq->lock);
	return ok;
}

bool xiw_cq_reserve(struct xiw_cq *cq)
{
	bool ok;

	pthread_mutex_lock(&cq->lock);
	ok = cq_room(cq);
	cq->resv += ok;
	pthread_mutex_unlock(&cq->lock);
	return ok;
}

bool xiw_cq_reserve_wait(struct xiw_cq *cq, atomic_bool *wait)
{
	bool ok;

	pthread_mutex_lock(&cq->lock);
	ok = cq_room(cq);
	if (ok)
		cq->resv++;
	else
		cq_want_credit(cq, wait);
	pthread_mutex_unlock(&cq->lock);
	return ok;
}

bool xiw_cq_unreserve(struct xiw_cq *cq, uint32_t n)
{
	bool kick;

	if (!n)
		return false;
	pthread_mutex_lock(&cq->lock);
	if (n > cq->resv) {
		xiw_log(XIW_LOG_ERROR, "cq %p: internal error: unreserve %u of %u",
			(void *)cq, n, cq->resv);
		n = cq->resv;
	}
	cq->resv -= n;
	kick = __atomic_load_n(&cq->credit_wait, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->credit_wait, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&cq->lock);
	return kick;
}

void xiw_cq_credits(struct xiw_cq *cq, struct xiw_cq_credits *c)
{
	pthread_mutex_lock(&cq->lock);
	c->size = cq->size;
	c->queued = cq->head - cq->tail;
	c->resv = cq->resv;
	c->overflow = cq->overflow;
	pthread_mutex_unlock(&cq->lock);
}

/**
 * xiw_cq_resize() - give @cq room for at least @cqe entries
 * (ibv_resize_cq(3)): a new ring of the next power of two, the queued
 * WCs moved over in order; ibv.cqe becomes the new size. Growing lets
 * WRs that wait for a CQE slot go on (they are kicked).
 * Return: 0, -EINVAL (@cqe < 1, > XIW_MAX_CQE, or fewer than the WCs
 * queued plus the slots reserved now), -ENOMEM.
 */
int xiw_cq_resize(struct xiw_cq *cq, int cqe)
{
	struct ibv_wc *ring, *old;
	uint32_t size = 1, n, i;
	bool grew;

	if (cqe < 1 || cqe > XIW_MAX_CQE)
		return -EINVAL;
	while (size < (uint32_t)cqe)
		size <<= 1;
	ring = calloc(size, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	pthread_mutex_lock(&cq->lock);
	n = cq->head - cq->tail;
	if (n + cq->resv > size || (cq->wait_nmin && cq->wait_nmin > size)) {
		pthread_mutex_unlock(&cq->lock);
		free(ring);
		return -EINVAL;
	}
	for (i = 0; i < n; i++)
		ring[i] = cq->ring[(cq->tail + i) & cq->mask];
	old = cq->ring;
	grew = size > cq->size;
	cq->ring = ring;
	cq->size = size;
	cq->mask = size - 1;
	cq->tail = 0;
	cq->head = n;
	cq->ibv.cqe = (int)size;
	pthread_mutex_unlock(&cq->lock);
	free(old);
	if (grew)
		xiw_cq_credit_kick(cq);
	return 0;
}
