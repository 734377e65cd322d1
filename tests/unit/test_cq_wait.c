// SPDX-License-Identifier: MIT
/*
 * xiw_cq_wait() (seed 001, adaptive completion wait): one wake-up for nmin
 * completions, not one per completion; no sleep when enough are queued;
 * timeouts; argument checks; one waiter per CQ; destroy while waiting;
 * flush CQEs of a QP in ERROR count; the channel path is untouched; the
 * bounded spin; signals; arming vs pushing races; the nap of a busy
 * poller (xiw_cq_poll on a CQ that stays empty).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "xiw_obj.h"
#include "xiw_cq_wait.h"

static void push(struct xiw_cq *cq, uint64_t id, enum ibv_wc_status st)
{
	struct ibv_wc wc = { .wr_id = id, .status = st };

	assert_int_equal(xiw_cq_push(cq, &wc, false), 0);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct xiw_cq_wait_stats stats(struct xiw_cq *cq)
{
	struct xiw_cq_wait_stats st;

	xiw_cq_wait_stats(cq, &st);
	return st;
}

/* A thread blocked in xiw_cq_wait(); @ret and @wc once it returns. */
struct waiter {
	pthread_t tid;
	struct xiw_cq *cq;
	int nmin, timeout_ms, nwc;
	struct ibv_wc wc[64];
	atomic_int done;
	int ret;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = xiw_cq_wait(w->cq, w->nmin, w->timeout_ms, w->wc, w->nwc);
	atomic_store(&w->done, 1);
	return NULL;
}

/* Start a waiter and return once it sleeps on the CQ's futex. */
static void waiter_start(struct waiter *w, struct xiw_cq *cq, int nmin)
{
	uint64_t sleeps0 = stats(cq).sleeps;

	w->cq = cq;
	w->nmin = nmin;
	w->timeout_ms = 10000;
	w->nwc = 64;
	atomic_init(&w->done, 0);
	assert_int_equal(pthread_create(&w->tid, NULL, waiter_main, w), 0);
	for (int i = 0; i < 5000 && stats(cq).sleeps == sleeps0; i++)
		usleep(1000);
	assert_true(stats(cq).sleeps > sleeps0);
}

static void test_wakes_once(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 64, NULL, NULL);
	struct waiter w;

	(void)state;
	waiter_start(&w, cq, 32);
	/* one by one, far apart: a per-CQE wake would show */
	for (int i = 0; i < 31; i++) {
		push(cq, 100 + i, IBV_WC_SUCCESS);
		usleep(200);
	}
	usleep(2000);
	assert_int_equal(atomic_load(&w.done), 0);
	assert_int_equal(stats(cq).wakes, 0);
	push(cq, 131, IBV_WC_SUCCESS);
	assert_int_equal(pthread_join(w.tid, NULL), 0);
	assert_int_equal(w.ret, 32);
	for (int i = 0; i < 32; i++)
		assert_int_equal(w.wc[i].wr_id, 100 + i);
	assert_int_equal(stats(cq).wakes, 1);
	assert_int_equal(stats(cq).sleeps, 1);
	/* the threshold is gone: later pushes wake nobody */
	push(cq, 200, IBV_WC_SUCCESS);
	assert_int_equal(stats(cq).wakes, 1);
	assert_int_equal(cq->wait_nmin, 0);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

static void test_ready_no_sleep(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 64, NULL, NULL);
	struct ibv_wc wc[64];

	(void)state;
	for (int i = 0; i < 40; i++)
		push(cq, i, IBV_WC_SUCCESS);
	/* >= nmin queued: returns at once with everything (up to nwc) */
	assert_int_equal(xiw_cq_wait(cq, 32, -1, wc, 64), 40);
	assert_int_equal(wc[39].wr_id, 39);
	for (int i = 0; i < 40; i++)
		push(cq, i, IBV_WC_SUCCESS);
	/* nwc < nmin: take nwc; the rest satisfies the next call at once */
	assert_int_equal(xiw_cq_wait(cq, 40, -1, wc, 16), 16);
	assert_int_equal(wc[0].wr_id, 0);
	assert_int_equal(xiw_cq_wait(cq, 24, -1, wc, 64), 24);
	assert_int_equal(wc[0].wr_id, 16);
	assert_int_equal(stats(cq).sleeps, 0);
	assert_int_equal(stats(cq).wakes, 0);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

static void test_timeout(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, NULL);
	struct ibv_wc wc[16];
	uint64_t t0;

	(void)state;
	/* nothing queued */
	t0 = now_ms();
	assert_int_equal(xiw_cq_wait(cq, 1, 30, wc, 16), -ETIMEDOUT);
	assert_true(now_ms() - t0 >= 30);
	assert_int_equal(xiw_cq_wait(cq, 1, 0, wc, 16), -ETIMEDOUT);
	/* some queued, fewer than nmin: a short count after the timeout */
	for (int i = 0; i < 3; i++)
		push(cq, 7 + i, IBV_WC_SUCCESS);
	t0 = now_ms();
	assert_int_equal(xiw_cq_wait(cq, 8, 40, wc, 16), 3);
	assert_true(now_ms() - t0 >= 40);
	assert_int_equal(wc[2].wr_id, 9);
	/* timeout 0: no sleep, whatever is there */
	push(cq, 1, IBV_WC_SUCCESS);
	assert_int_equal(xiw_cq_wait(cq, 8, 0, wc, 16), 1);
	/* a timed-out waiter leaves no threshold behind */
	assert_int_equal(cq->wait_nmin, 0);
	push(cq, 2, IBV_WC_SUCCESS);
	assert_int_equal(stats(cq).wakes, 0);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

static void test_einval(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 10, NULL, NULL);	/* 16 */
	struct ibv_wc wc[4];

	(void)state;
	assert_int_equal(xiw_cq_wait(cq, 17, -1, wc, 4), -EINVAL);
	assert_int_equal(xiw_cq_wait(cq, 0, -1, wc, 4), -EINVAL);
	assert_int_equal(xiw_cq_wait(cq, -1, -1, wc, 4), -EINVAL);
	assert_int_equal(xiw_cq_wait(cq, 1, -1, wc, 0), -EINVAL);
	assert_int_equal(xiw_cq_wait(cq, 1, -1, NULL, 4), -EINVAL);
	/* nmin == size is fine */
	for (int i = 0; i < 16; i++)
		push(cq, i, IBV_WC_SUCCESS);
	assert_int_equal(xiw_cq_wait(cq, 16, -1, wc, 4), 4);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

static void test_busy(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, NULL);
	struct ibv_wc wc[4];
	struct waiter w;

	(void)state;
	waiter_start(&w, cq, 2);
	assert_int_equal(xiw_cq_wait(cq, 1, 0, wc, 4), -EBUSY);
	assert_int_equal(xiw_cq_destroy(cq), -EBUSY);
	push(cq, 1, IBV_WC_SUCCESS);
	push(cq, 2, IBV_WC_SUCCESS);
	assert_int_equal(pthread_join(w.tid, NULL), 0);
	assert_int_equal(w.ret, 2);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

static int modify(struct xiw_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return xiw_qp_modify(qp, &a, IBV_QP_STATE);
}

/* A QP moved to ERROR flushes its receives: flush CQEs reach nmin. */
static void test_flush_counts(void **state)
{
	static uint8_t buf[64];
	struct xiw_pd *pd = xiw_pd_alloc(NULL, NULL);
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, NULL);
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC, .send_cq = &cq->ibv, .recv_cq = &cq->ibv,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct xiw_qp *qp = xiw_qp_create(pd, &a);
	struct xiw_mr *mr = xiw_mr_reg(pd, buf, sizeof(buf), (uintptr_t)buf,
				       IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)buf, 16, 0 };
	struct ibv_recv_wr r = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct waiter w;

	(void)state;
	assert_non_null(qp);
	assert_non_null(mr);
	sge.lkey = mr->ibv.lkey;
	assert_int_equal(modify(qp, IBV_QPS_INIT), 0);
	for (int i = 0; i < 3; i++) {
		r.wr_id = 50 + i;
		assert_int_equal(xiw_post_recv(qp, &r, &bad), 0);
	}
	waiter_start(&w, cq, 3);
	assert_int_equal(modify(qp, IBV_QPS_ERR), 0);
	assert_int_equal(pthread_join(w.tid, NULL), 0);
	assert_int_equal(w.ret, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(w.wc[i].wr_id, 50 + i);
		assert_int_equal(w.wc[i].status, IBV_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(stats(cq).wakes, 1);
	assert_int_equal(xiw_qp_destroy(qp), 0);
	assert_int_equal(xiw_mr_dereg(mr), 0);
	assert_int_equal(xiw_cq_destroy(cq), 0);
	assert_int_equal(xiw_pd_free(pd), 0);
}

/* An armed channel still gets its one event; the waiter its one wake. */
static void test_channel_untouched(void **state)
{
	struct xiw_cchan *ch = xiw_cchan_create(NULL);
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, ch), *ev;
	struct pollfd p = { .fd = ch->ibv.fd, .events = POLLIN };
	struct waiter w;

	(void)state;
	assert_int_equal(xiw_cq_req_notify(cq, 0), 0);
	waiter_start(&w, cq, 4);
	for (int i = 0; i < 4; i++)
		push(cq, i, IBV_WC_SUCCESS);
	assert_int_equal(pthread_join(w.tid, NULL), 0);
	assert_int_equal(w.ret, 4);
	assert_int_equal(xiw_cchan_get_event(ch, &ev), 0);
	assert_ptr_equal(ev, cq);
	xiw_cq_ack_events(cq, 1);
	assert_int_equal(poll(&p, 1, 0), 0);	/* one event, not four */
	assert_int_equal(xiw_cq_destroy(cq), 0);
	assert_int_equal(xiw_cchan_destroy(ch), 0);
}

/* Pushes @n CQEs after @delay_us (spin and signal tests). */
struct late {
	pthread_t tid;
	struct xiw_cq *cq;
	int n, delay_us;
};

static void *late_main(void *arg)
{
	struct late *l = arg;

	usleep((useconds_t)l->delay_us);
	for (int i = 0; i < l->n; i++)
		push(l->cq, (uint64_t)i, IBV_WC_SUCCESS);
	return NULL;
}

static void late_start(struct late *l, struct xiw_cq *cq, int n, int delay_us)
{
	l->cq = cq;
	l->n = n;
	l->delay_us = delay_us;
	assert_int_equal(pthread_create(&l->tid, NULL, late_main, l), 0);
}

/* XIW_CQ_SPIN_US: CQEs that arrive within the spin cost no sleep. */
static void test_spin(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, NULL);
	struct ibv_wc wc[16];
	struct late l;

	(void)state;
	xiw_cq_wait_spin_set(2000000);	/* 2 s: surely within */
	late_start(&l, cq, 4, 1000);
	assert_int_equal(xiw_cq_wait(cq, 4, 10000, wc, 16), 4);
	assert_int_equal(pthread_join(l.tid, NULL), 0);
	assert_int_equal(stats(cq).sleeps, 0);
	/* a spin shorter than the arrival: sleep after it, one wake */
	xiw_cq_wait_spin_set(100);
	late_start(&l, cq, 4, 50000);
	assert_int_equal(xiw_cq_wait(cq, 4, 10000, wc, 16), 4);
	assert_int_equal(pthread_join(l.tid, NULL), 0);
	assert_int_equal(stats(cq).wakes, 1);
	/* the spin never outlasts the timeout */
	xiw_cq_wait_spin_set(2000000);
	assert_int_equal(xiw_cq_wait(cq, 1, 20, wc, 16), -ETIMEDOUT);
	xiw_cq_wait_spin_set(0);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* A signal (EINTR from FUTEX_WAIT) does not end the wait. */
static void test_signal(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, NULL);
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct waiter w;

	(void)state;
	sigaction(SIGUSR1, &sa, NULL);
	waiter_start(&w, cq, 2);
	pthread_kill(w.tid, SIGUSR1);
	usleep(20000);
	assert_int_equal(atomic_load(&w.done), 0);
	push(cq, 1, IBV_WC_SUCCESS);
	push(cq, 2, IBV_WC_SUCCESS);
	assert_int_equal(pthread_join(w.tid, NULL), 0);
	assert_int_equal(w.ret, 2);
	assert_true(stats(cq).sleeps >= 2);	/* slept again after EINTR */
	assert_int_equal(stats(cq).wakes, 1);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

/* Producer for the stress test: @n CQEs with random gaps. */
struct producer {
	struct xiw_cq *cq;
	int n;
	unsigned int seed;
};

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS };

	for (int i = 0; i < p->n; i++) {
		wc.wr_id = (uint64_t)i;
		if (xiw_cq_push(p->cq, &wc, false))
			abort();	/* the CQ holds all N */
		if (rand_r(&p->seed) % 8 == 0)
			usleep(rand_r(&p->seed) % 50);
	}
	return NULL;
}

/*
 * Races of arming vs pushing (ThreadSanitizer target): the seed's loop,
 * nmin = completions still expected, must reap every CQE in order and
 * never hang; no more wakes than sleeps.
 */
static void test_stress(void **state)
{
	enum { N = 20000 };
	struct xiw_cq *cq = xiw_cq_create(NULL, N, NULL, NULL);
	struct producer p = { .cq = cq, .n = N, .seed = 1 };
	struct ibv_wc wc[64];
	pthread_t tid;
	int got = 0;

	(void)state;
	assert_int_equal(pthread_create(&tid, NULL, producer_main, &p), 0);
	while (got < N) {
		int want = N - got < 64 ? N - got : 1 + got % 64;
		int n = xiw_cq_wait(cq, want, 5000, wc, 64);

		assert_true(n > 0);
		for (int i = 0; i < n; i++)
			assert_int_equal(wc[i].wr_id, (uint64_t)(got + i));
		got += n;
	}
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_true(stats(cq).wakes <= stats(cq).sleeps);
	assert_int_equal(cq->overflow, 0);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

/* A thread spinning in xiw_cq_poll() until it gets @want WCs. */
struct poller {
	pthread_t tid;
	struct xiw_cq *cq;
	int want, got;
	struct ibv_wc wc[8];
	uint64_t cpu_us;	/* the thread's CPU time while polling */
};

static uint64_t thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void *poller_main(void *arg)
{
	struct poller *p = arg;
	uint64_t c0 = thread_cpu_us();

	while (p->got < p->want) {
		int n = xiw_cq_poll(p->cq, 8, p->wc);

		assert_true(n >= 0);
		p->got += n;
	}
	p->cpu_us = thread_cpu_us() - c0;
	return NULL;
}

/*
 * A poller whose CQ stays empty naps on the futex (XIW_POLL_NAP_AFTER_US)
 * instead of spinning: over 200 ms it uses a fraction of a CPU, a pushed
 * CQE still reaches it within the nap bound, and an xiw_cq_wait() caller
 * waits for the nap to end rather than failing with -EBUSY.
 */
static void test_poll_nap(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, NULL);
	struct poller p = { .cq = cq, .want = 2 };
	struct ibv_wc wc[4];
	uint64_t t0;

	(void)state;
	assert_int_equal(pthread_create(&p.tid, NULL, poller_main, &p), 0);
	usleep(200 * 1000);
	assert_true(stats(cq).sleeps > 0);
	push(cq, 1, IBV_WC_SUCCESS);
	t0 = now_ms();
	while (__atomic_load_n(&p.got, __ATOMIC_RELAXED) < 1 && now_ms() - t0 < 1000)
		usleep(50);
	assert_int_equal(__atomic_load_n(&p.got, __ATOMIC_RELAXED), 1);
	/* a waiter while the poller keeps napping: no -EBUSY, gets its CQE */
	push(cq, 2, IBV_WC_SUCCESS);
	assert_int_equal(pthread_join(p.tid, NULL), 0);
	/* spinning for 200 ms would be ~200000 us of CPU */
	assert_true(p.cpu_us < 100000);
	push(cq, 3, IBV_WC_SUCCESS);
	assert_int_equal(xiw_cq_wait(cq, 1, 1000, wc, 4), 1);
	assert_int_equal(wc[0].wr_id, 3);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

/* A thread that only burns CPU until *stop (test_poll_nap_loaded). */
static void *hog_main(void *arg)
{
	const int *stop = arg;

	while (!__atomic_load_n(stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/*
 * The same nap on a loaded machine: as many CPU hogs as CPUs. The
 * poller's yields then give the CPU away for whole time slices; the nap
 * check must not take that time for the app doing something else (a gap
 * restarts the empty streak) or the poller never naps and spins on
 * beside the hogs. Fails with the gap measured across the yield: 0 naps
 * in 200 ms, 4 of 4 runs.
 */
static void test_poll_nap_loaded(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, NULL);
	struct poller p = { .cq = cq, .want = 1 };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t hogs[8];
	int stop = 0, nhogs = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (int)ncpu;
	uint64_t sleeps, t0;

	(void)state;
	for (int i = 0; i < nhogs; i++)
		assert_int_equal(pthread_create(&hogs[i], NULL, hog_main, &stop), 0);
	assert_int_equal(pthread_create(&p.tid, NULL, poller_main, &p), 0);
	usleep(200 * 1000);
	sleeps = stats(cq).sleeps;
	push(cq, 1, IBV_WC_SUCCESS);
	t0 = now_ms();
	while (__atomic_load_n(&p.got, __ATOMIC_RELAXED) < 1 && now_ms() - t0 < 2000)
		usleep(50);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nhogs; i++)
		assert_int_equal(pthread_join(hogs[i], NULL), 0);
	assert_int_equal(pthread_join(p.tid, NULL), 0);
	assert_true(sleeps > 0);
	assert_int_equal(p.got, 1);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

/* One CPU's worth of a loaded machine: a poller and a hog on one CPU. */
struct shared_cpu {
	struct xiw_cq *cq;
	int cpu;
	int stop;
	uint64_t pauses0;
};

static void pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof(set), &set), 0);
}

static void *pinned_hog_main(void *arg)
{
	struct shared_cpu *sc = arg;

	pin_self(sc->cpu);
	while (!__atomic_load_n(&sc->stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/* Polls the empty CQ until a yield pause is counted or 5 s passed. */
static void *pinned_poller_main(void *arg)
{
	struct shared_cpu *sc = arg;
	struct ibv_wc wc[4];
	uint64_t t0 = now_ms();

	pin_self(sc->cpu);
	while (xiw_cq_yield_pauses() == sc->pauses0 && now_ms() - t0 < 5000)
		assert_int_equal(xiw_cq_poll(sc->cq, 4, wc), 0);
	return NULL;
}

/*
 * A poller that shares its CPU with a busy thread: each yield hands that
 * thread a whole slice (and, under EEVDF, charges the poller for it), so
 * the poller must stop yielding (xiw_cq_yield_pauses() counts up).
 * Without the pause, 8 B ib_send_lat beside two `yes` took 2 ms.
 */
static void test_poll_yield_pause(void **state)
{
	struct shared_cpu sc = { .cq = xiw_cq_create(NULL, 16, NULL, NULL) };
	pthread_t hog, poller;
	cpu_set_t set;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	while (!CPU_ISSET(sc.cpu, &set))
		sc.cpu++;
	sc.pauses0 = xiw_cq_yield_pauses();
	assert_int_equal(pthread_create(&hog, NULL, pinned_hog_main, &sc), 0);
	assert_int_equal(pthread_create(&poller, NULL, pinned_poller_main, &sc), 0);
	assert_int_equal(pthread_join(poller, NULL), 0);
	__atomic_store_n(&sc.stop, 1, __ATOMIC_RELAXED);
	assert_int_equal(pthread_join(hog, NULL), 0);
	assert_true(xiw_cq_yield_pauses() > sc.pauses0);
	assert_int_equal(xiw_cq_destroy(sc.cq), 0);
}

/* xiw_cq_wait() during a poller's nap: it waits the nap out. */
static void *napper_main(void *arg)
{
	struct xiw_cq *cq = arg;
	struct ibv_wc wc[1];

	for (int i = 0; i < 20000; i++)
		(void)xiw_cq_poll(cq, 1, wc);	/* empty: naps */
	return NULL;
}

static void test_wait_during_nap(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, NULL);
	struct ibv_wc wc[4];
	pthread_t tid;
	int busy = 0;

	(void)state;
	assert_int_equal(pthread_create(&tid, NULL, napper_main, cq), 0);
	for (int i = 0; i < 20000 && !stats(cq).sleeps; i++)
		usleep(100);
	assert_true(stats(cq).sleeps > 0);
	for (int i = 0; i < 50; i++)
		busy += xiw_cq_wait(cq, 1, 1, wc, 4) == -EBUSY;
	assert_int_equal(busy, 0);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(xiw_cq_destroy(cq), 0);
}

/* Polls @cq (empty) until told to stop, counting its polls. */
struct spinner {
	struct xiw_cq *cq;
	pthread_t tid;
	bool stop;
	uint64_t polls;
};

static void *spinner_main(void *arg)
{
	struct spinner *sp = arg;
	struct ibv_wc wc[1];

	while (!__atomic_load_n(&sp->stop, __ATOMIC_RELAXED)) {
		assert_int_equal(xiw_cq_poll(sp->cq, 1, wc), 0);
		__atomic_add_fetch(&sp->polls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * While a QP of the CQ is read by its pollers (rx_app_mode: a ping-pong)
 * the nap threshold is XIW_POLL_NAP_APP_US, not XIW_POLL_NAP_AFTER_US:
 * main() sets it to 60 s, so the poller of such a CQ spins 300 ms (and
 * 1000 polls) without a nap, and naps once the QP leaves app mode.
 * (XIW_POLL_RX=0: the poller does not read the stand-in QP, which has no
 * stream.)
 */
static void test_nap_app_mode(void **state)
{
	struct xiw_cq *cq = xiw_cq_create(NULL, 16, NULL, NULL);
	struct xiw_qp *qp = calloc(1, sizeof(*qp));
	struct spinner sp = { .cq = cq };
	uint64_t polls;

	(void)state;
	assert_non_null(qp);
	atomic_store(&qp->rx_app_mode, true);
	assert_int_equal(xiw_cq_qp_add(cq, qp), 0);
	assert_int_equal(pthread_create(&sp.tid, NULL, spinner_main, &sp), 0);
	usleep(300 * 1000);
	/* on a loaded machine each yield may cost a time slice: wait for
	 * the polls rather than expect them within the 300 ms */
	for (int i = 0; i < 1000 &&
			__atomic_load_n(&sp.polls, __ATOMIC_RELAXED) <= 1000; i++)
		usleep(10 * 1000);
	polls = __atomic_load_n(&sp.polls, __ATOMIC_RELAXED);
	assert_int_equal(stats(cq).sleeps, 0);
	assert_true(polls > 1000);	/* it did poll, and did not nap */
	atomic_store(&qp->rx_app_mode, false);
	for (int i = 0; i < 20000 && !stats(cq).sleeps; i++)
		usleep(100);
	assert_true(stats(cq).sleeps > 0);
	__atomic_store_n(&sp.stop, true, __ATOMIC_RELAXED);
	assert_int_equal(pthread_join(sp.tid, NULL), 0);
	xiw_cq_qp_del(cq, qp);
	assert_int_equal(xiw_cq_destroy(cq), 0);
	free(qp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wakes_once),
		cmocka_unit_test(test_ready_no_sleep),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_einval),
		cmocka_unit_test(test_busy),
		cmocka_unit_test(test_flush_counts),
		cmocka_unit_test(test_channel_untouched),
		cmocka_unit_test(test_spin),
		cmocka_unit_test(test_poll_nap),
		cmocka_unit_test(test_poll_nap_loaded),
		cmocka_unit_test(test_poll_yield_pause),
		cmocka_unit_test(test_wait_during_nap),
		cmocka_unit_test(test_nap_app_mode),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_stress),
	};

	/* test_nap_app_mode: an app-mode threshold no test run reaches; the
	 * pollers do not read the stand-in QP */
	setenv("XIW_POLL_NAP_APP_US", "60000000", 1);
	setenv("XIW_POLL_RX", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
