// SPDX-License-Identifier: MIT
/*
 * Adaptive completion wait (seed 001, "Efficient event completion in
 * UDAPL"): a caller that expects N completions looks at the CQ once; if
 * fewer than N are queued it blocks until N are queued, then drains them
 * without blocking again. Busy polling burns a CPU; blocking once per CQE
 * (verbs style: req_notify + channel event) costs a context switch per
 * CQE. Blocking once per N costs one.
 *
 * Mechanism: the CQ keeps a wake-up threshold (cq->wait_nmin, under
 * cq->lock). xiw_cq_push() checks it only while it is set; when the queued
 * count reaches it, the push disarms it, bumps the futex word cq->wait_seq
 * and FUTEX_WAKEs after dropping cq->lock. The waiter reads wait_seq under
 * cq->lock while arming, so a push between its unlock and FUTEX_WAIT makes
 * FUTEX_WAIT return at once (EAGAIN): no lost wake-up. A private futex, no
 * fd: the channel pipe is left entirely to the verbs path.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "xiw_obj.h"
#include "xiw_cq_wait.h"

/* ---------------------------------------------------- producer side --- */

bool xiw_cq_wait_due(struct xiw_cq *cq)
{
	if (cq->head - cq->tail < cq->wait_nmin)
		return false;
	cq->wait_nmin = 0;	/* one wake per threshold, not per CQE */
	__atomic_store_n(&cq->wait_seq, cq->wait_seq + 1, __ATOMIC_RELEASE);
	cq->wait_wakes++;
	return true;
}

void xiw_cq_wait_wake(struct xiw_cq *cq)
{
	syscall(SYS_futex, &cq->wait_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void xiw_cq_wait_stats(struct xiw_cq *cq, struct xiw_cq_wait_stats *st)
{
	pthread_mutex_lock(&cq->lock);
	st->wakes = cq->wait_wakes;
	pthread_mutex_unlock(&cq->lock);
	st->sleeps = atomic_load(&cq->wait_sleeps);
}

/* ------------------------------------------------------------- knobs --- */

static int spin_us = -1;	/* XIW_CQ_SPIN_US, read once */

void xiw_cq_wait_spin_set(int us)
{
	__atomic_store_n(&spin_us, us, __ATOMIC_RELAXED);
}

/*
 * Default 0. A spin only pays when the threshold is reached within it, and
 * then trades CPU for a wake-up (a few us). Measured on 2 busy vCPUs with
 * user/tools/xiw_cqbench: bursts of 32 every ~260 us, spin 10/50/100 us
 * cost 6x/16x/36x the consumer CPU of no spin and caught no burst; single
 * CQEs every ~25 us, spin 30 us raised the consumer CPU 2.7x and the
 * reap latency p99 from 64 us to 3.7 ms (the spinner takes the CPU the
 * producer needs, as in XIW_POLL_YIELD's case).
 */
static int cq_spin_us(void)
{
	int us = __atomic_load_n(&spin_us, __ATOMIC_RELAXED);

	if (us < 0) {
		const char *v = getenv("XIW_CQ_SPIN_US");

		us = v ? atoi(v) : 0;
		if (us < 0)
			us = 0;
		__atomic_store_n(&spin_us, us, __ATOMIC_RELAXED);
	}
	return us;
}

/* ------------------------------------------------------ waiter side --- */

/* CQEs pushed and not yet polled; lock-free (a hint outside cq->lock) */
static uint32_t cq_queued(struct xiw_cq *cq)
{
	return __atomic_load_n(&cq->head, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE);
}

/* Spin until @nmin are queued or @end_ns; true if they are. */
static bool cq_spin(struct xiw_cq *cq, uint32_t nmin, uint64_t end_ns)
{
	do {
		for (int i = 0; i < 64; i++) {
			if (cq_queued(cq) >= nmin)
				return true;
			__builtin_ia32_pause();
		}
	} while (xiw_now_ns() < end_ns);
	return false;
}

/*
 * Sleep until @nmin are queued or @deadline_ns (UINT64_MAX: none); @nap:
 * a poller's short nap (xiw_cq_nap), else a waiter's block.
 * Return: true if they are queued.
 */
static bool cq_sleep(struct xiw_cq *cq, uint32_t nmin, uint64_t deadline_ns,
		     bool nap)
{
	bool ready;

	xiw_cq_rx_handoff(cq, !nap);	/* no poller reads for us meanwhile */
	pthread_mutex_lock(&cq->lock);
	for (;;) {
		struct timespec rel, *tp = NULL;
		uint32_t seq;
		uint64_t now;

		ready = cq->head - cq->tail >= nmin;
		if (ready)
			break;
		if (deadline_ns != UINT64_MAX) {
			now = xiw_now_ns();
			if (now >= deadline_ns)
				break;
			rel.tv_sec = (time_t)((deadline_ns - now) / 1000000000u);
			rel.tv_nsec = (long)((deadline_ns - now) % 1000000000u);
			tp = &rel;
		}
		cq->wait_nmin = nmin;	/* arm: the push that reaches it wakes */
		seq = cq->wait_seq;
		pthread_mutex_unlock(&cq->lock);
		atomic_fetch_add(&cq->wait_sleeps, 1);
		/* EAGAIN (seq moved), EINTR, ETIMEDOUT: re-check under the lock */
		syscall(SYS_futex, &cq->wait_seq, FUTEX_WAIT_PRIVATE, seq, tp,
			NULL, 0);
		pthread_mutex_lock(&cq->lock);
	}
	cq->wait_nmin = 0;
	pthread_mutex_unlock(&cq->lock);
	return ready;
}

/* Seed: after the wait, drain without blocking again. */
static int cq_drain(struct xiw_cq *cq, struct ibv_wc *wc, int nwc)
{
	int n = 0, got;

	/*
	 * xiw_cq_poll() keeps whatever accounting the poll path does; never
	 * poll an empty CQ here, that counts as busy polling (XIW_POLL_YIELD).
	 */
	while (n < nwc && cq_queued(cq) > 0) {
		got = xiw_cq_poll(cq, nwc - n, wc + n);
		if (got <= 0)
			break;
		n += got;
	}
	return n;
}

static uint64_t cq_deadline(int timeout_ms, uint64_t start_ns)
{
	if (timeout_ms < 0)
		return UINT64_MAX;
	return start_ns + (uint64_t)timeout_ms * 1000000u;
}

static bool cq_wait_ready(struct xiw_cq *cq, uint32_t nmin, int timeout_ms)
{
	uint64_t start, deadline, spin_end;
	int spin;

	if (cq_queued(cq) >= nmin)	/* the seed's first look */
		return true;
	if (timeout_ms == 0)
		return false;
	start = xiw_now_ns();
	deadline = cq_deadline(timeout_ms, start);
	spin = cq_spin_us();
	if (spin > 0) {
		spin_end = start + (uint64_t)spin * 1000u;
		if (spin_end > deadline)
			spin_end = deadline;
		if (cq_spin(cq, nmin, spin_end))
			return true;
	}
	return cq_sleep(cq, nmin, deadline, false);
}

/* cq->waiter: 0 free, 1 an xiw_cq_wait() caller, 2 a napping poller */
#define CQ_NAPPER 2

bool xiw_cq_nap(struct xiw_cq *cq, uint32_t us)
{
	int free_ = 0;

	if (!atomic_compare_exchange_strong(&cq->waiter, &free_, CQ_NAPPER))
		return false;
	cq_sleep(cq, 1, xiw_now_ns() + (uint64_t)us * 1000u, true);
	atomic_store(&cq->waiter, 0);
	return true;
}

int xiw_cq_wait(struct xiw_cq *cq, int nmin, int timeout_ms,
		struct ibv_wc *wc, int nwc)
{
	int n;

	if (nmin < 1 || (uint32_t)nmin > cq->size || nwc < 1 || !wc)
		return -EINVAL;
	for (;;) {	/* one waiter per CQ: one threshold */
		int free_ = 0;

		if (atomic_compare_exchange_strong(&cq->waiter, &free_, 1))
			break;
		if (free_ != CQ_NAPPER)
			return -EBUSY;
		sched_yield();	/* a poller's nap ends within XIW_POLL_NAP_US */
	}
	cq_wait_ready(cq, (uint32_t)nmin, timeout_ms);
	n = cq_drain(cq, wc, nwc);
	atomic_store(&cq->waiter, 0);
	return n > 0 ? n : -ETIMEDOUT;
}
