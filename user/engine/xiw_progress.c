// SPDX-License-Identifier: MIT
/*
 * The engine progress thread: epoll over every transport fd, an eventfd to
 * wake it for queued closures, and one-shot timers. See xiw_progress.h.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "xiwarp/xiwarp.h"
#include "xiw_conn.h"
#include "xiw_progress.h"

#define PG_MAX_EVENTS 64
#ifndef XIW_PROGRESS_SPIN_US
#define XIW_PROGRESS_SPIN_US 0
#endif

struct pg_closure {
	void (*fn)(void *arg);
	void *arg;
	struct pg_closure *next;
};

static struct {
	pthread_once_t once;
	int init_err;
	int epfd, evfd;
	pthread_mutex_t lock;		/* closure list and @sleeping */
	struct pg_closure *head, **tail;
	bool sleeping;			/* in (or about to enter) epoll_wait */
	struct xiw_ptimer *timers;	/* progress thread only */
} pg = {
	.once = PTHREAD_ONCE_INIT,
	.epfd = -1,
	.evfd = -1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.tail = &pg.head,
};

static __thread bool pg_self;
/* the responder spin (pg_resp_spin): this pass sent READ/Atomic responses */
static __thread bool pg_resp_done;

uint64_t xiw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------- timers --- */

void xiw_progress_timer_cancel(struct xiw_ptimer *t)
{
	struct xiw_ptimer **pp;

	if (!t->armed)
		return;
	for (pp = &pg.timers; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	t->armed = false;
	t->next = NULL;
}

void xiw_progress_timer_arm(struct xiw_ptimer *t, unsigned int ms,
			    void (*fn)(void *arg), void *arg)
{
	xiw_progress_timer_arm_us(t, (uint64_t)ms * 1000u, fn, arg);
}

void xiw_progress_timer_arm_us(struct xiw_ptimer *t, uint64_t us,
			       void (*fn)(void *arg), void *arg)
{
	xiw_progress_timer_cancel(t);
	t->deadline_ns = xiw_now_ns() + us * 1000u;
	t->fn = fn;
	t->arg = arg;
	t->armed = true;
	t->next = pg.timers;
	pg.timers = t;
}

/*
 * Time until the next timer into *@ts. Return: @ts, or NULL for none
 * (sleep until an fd or a closure wakes us).
 */
static struct timespec *timers_wait(struct timespec *ts)
{
	uint64_t now = xiw_now_ns(), min = UINT64_MAX, d;

	for (struct xiw_ptimer *t = pg.timers; t; t = t->next)
		if (t->deadline_ns < min)
			min = t->deadline_ns;
	if (min == UINT64_MAX)
		return NULL;
	d = min > now ? min - now : 0;
	ts->tv_sec = (time_t)(d / 1000000000u);
	ts->tv_nsec = (long)(d % 1000000000u);
	return ts;
}

/*
 * epoll_wait with a nanosecond timeout (epoll_pwait2, Linux 5.11), so
 * microsecond timers (the TX cork backstop) fire on time; where it is
 * missing, epoll_wait with the timeout rounded up to milliseconds.
 */
static int pg_epoll(struct epoll_event *evs, const struct timespec *ts)
{
	static bool no_pwait2;
	int n;

	if (!no_pwait2) {
		n = epoll_pwait2(pg.epfd, evs, PG_MAX_EVENTS, ts, NULL);
		if (n >= 0 || errno != ENOSYS)
			return n;
		no_pwait2 = true;
	}
	return epoll_wait(pg.epfd, evs, PG_MAX_EVENTS, !ts ? -1 :
			  (int)((ts->tv_sec * 1000000000ll + ts->tv_nsec +
				 999999) / 1000000));
}

/* Fire expired timers one at a time (a callback may arm/cancel others). */
static void timers_fire(void)
{
	for (;;) {
		uint64_t now = xiw_now_ns();
		struct xiw_ptimer *t;

		for (t = pg.timers; t; t = t->next)
			if (t->deadline_ns <= now)
				break;
		if (!t)
			return;
		xiw_progress_timer_cancel(t);
		t->fn(t->arg);
	}
}

/* -------------------------------------------------------- closures --- */

/* Take the queued closures; decide whether we may sleep. */
static struct pg_closure *closures_take(void)
{
	struct pg_closure *c;

	pthread_mutex_lock(&pg.lock);
	c = pg.head;
	pg.head = NULL;
	pg.tail = &pg.head;
	pthread_mutex_unlock(&pg.lock);
	return c;
}

static void closures_run(struct pg_closure *c)
{
	while (c) {
		struct pg_closure *next = c->next;

		c->fn(c->arg);
		free(c);
		c = next;
	}
}

/* Mark ourselves asleep unless work is queued. Return: may block. */
static bool pg_prepare_sleep(void)
{
	bool empty;

	pthread_mutex_lock(&pg.lock);
	empty = !pg.head;
	pg.sleeping = empty;
	pthread_mutex_unlock(&pg.lock);
	return empty;
}

static void pg_awake(void)
{
	pthread_mutex_lock(&pg.lock);
	pg.sleeping = false;
	pthread_mutex_unlock(&pg.lock);
}

/**
 * xiw_progress_run() - queue @fn(@arg) to run on the progress thread, after
 * the current fd dispatch batch (FIFO with other closures). Starts the
 * thread if needed. Wakes it (eventfd) only if it is asleep.
 * Return: 0, -ENOMEM, or -errno if the thread could not be started.
 */
int xiw_progress_run(void (*fn)(void *arg), void *arg)
{
	struct pg_closure *c;
	bool wake;
	int err = xiw_progress_start();

	if (err)
		return err;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->arg = arg;
	c->next = NULL;
	pthread_mutex_lock(&pg.lock);
	*pg.tail = c;
	pg.tail = &c->next;
	wake = pg.sleeping;
	pg.sleeping = false;
	pthread_mutex_unlock(&pg.lock);
	if (wake) {
		uint64_t one = 1;

		if (write(pg.evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			xiw_log(XIW_LOG_ERROR, "progress: eventfd write: %s",
				strerror(errno));
	}
	return 0;
}

/** xiw_progress_is_self() - true on the engine progress thread. */
bool xiw_progress_is_self(void)
{
	return pg_self;
}

struct pg_sync {
	void (*fn)(void *arg);
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void pg_sync_fn(void *arg)
{
	struct pg_sync *s = arg;

	s->fn(s->arg);
	pthread_mutex_lock(&s->lock);
	s->done = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

int xiw_progress_sync(void (*fn)(void *arg), void *arg)
{
	struct pg_sync s = { .fn = fn, .arg = arg };
	int err;

	if (pg_self) {
		fn(arg);
		return 0;
	}
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	err = xiw_progress_run(pg_sync_fn, &s);
	if (!err) {
		pthread_mutex_lock(&s.lock);
		while (!s.done)
			pthread_cond_wait(&s.cond, &s.lock);
		pthread_mutex_unlock(&s.lock);
	}
	pthread_cond_destroy(&s.cond);
	pthread_mutex_destroy(&s.lock);
	return err;
}

/* ------------------------------------------------------------- fds --- */

int xiw_progress_fd_add(struct xiw_pfd *p, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = p };
	int err = xiw_progress_start();

	if (err)
		return err;
	__atomic_store_n(&p->deleted, false, __ATOMIC_RELEASE);
	return epoll_ctl(pg.epfd, EPOLL_CTL_ADD, p->fd, &ev) ? -errno : 0;
}

int xiw_progress_fd_mod(struct xiw_pfd *p, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = p };

	return epoll_ctl(pg.epfd, EPOLL_CTL_MOD, p->fd, &ev) ? -errno : 0;
}

int xiw_progress_fd_del(struct xiw_pfd *p)
{
	__atomic_store_n(&p->deleted, true, __ATOMIC_RELEASE);
	return epoll_ctl(pg.epfd, EPOLL_CTL_DEL, p->fd, NULL) ? -errno : 0;
}

/* ------------------------------------------------------------ loop --- */

static void pg_dispatch(struct epoll_event *evs, int n)
{
	for (int i = 0; i < n; i++) {
		struct xiw_pfd *p = evs[i].data.ptr;

		if (!p) {		/* the eventfd */
			uint64_t v;

			if (read(pg.evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				xiw_log(XIW_LOG_ERROR, "progress: eventfd read: %s",
					strerror(errno));
			continue;
		}
		if (!__atomic_load_n(&p->deleted, __ATOMIC_ACQUIRE))
			p->cb(p->arg, evs[i].events);
	}
}

/* XIW_PROGRESS_SPIN_US (default XIW_PROGRESS_SPIN_US): see pg_spinning(). */
static uint64_t pg_spin_env_ns(void)
{
	const char *v = getenv("XIW_PROGRESS_SPIN_US");

	return v ? (uint64_t)strtoul(v, NULL, 10) * 1000u :
		   XIW_PROGRESS_SPIN_US * 1000ull;
}

/*
 * After fd activity the thread may poll epoll (timeout 0) for a while
 * before it sleeps, so ping-pong traffic that never calls verbs while
 * waiting (perftest's write_lat spins on memory) finds it awake. Off by
 * default: on 2 vCPUs shared with the apps' own spinning threads it made
 * ib_write_lat 8 B ~9 -> ~33 us (15 and 40 us spins) and 50 us ~17 -> ~47
 * us; even yielding while spinning was worse (100s of us). It may pay
 * where cores are spare.
 */
static bool pg_spinning(uint64_t until)
{
	return until && xiw_now_ns() < until;
}

/* XIW_RESP_SPIN_US (default 50): see pg_resp_spin(). */
static uint64_t pg_resp_spin_env_ns(void)
{
	const char *v = getenv("XIW_RESP_SPIN_US");

	return (v ? strtoul(v, NULL, 10) : 50ul) * 1000u;
}

/*
 * The responder spin: after a pass that sent READ (or Atomic) responses,
 * poll epoll for @ns before sleeping. A READ responder's application
 * takes no part (the READ is one-sided), so each request waited for this
 * thread to wake up: on these VMs, whose idle vCPUs halt at once, 8 B
 * `ib_read_lat` ran 28-29 us typical against a 6.4-7.9 us minimum, and
 * 6.9 with this spin (3 runs each). Unlike XIW_PROGRESS_SPIN_US it does
 * not spin for the app's own ping-pongs (ib_write_lat), only while this
 * side answers READs; a stream of READs keeps the thread busy anyway.
 * Return: the spin's end, or 0.
 */
static uint64_t pg_resp_spin(uint64_t ns)
{
	if (!pg_resp_done || !ns)
		return 0;
	pg_resp_done = false;
	return xiw_now_ns() + ns;
}

/**
 * xiw_progress_note_resp() - the receive path just sent READ or Atomic
 * responses (or READs that waited for ORD room: a requester that is
 * also in a READ exchange): on the progress thread, have it spin a
 * little before it sleeps (pg_resp_spin). No-op on other threads.
 */
void xiw_progress_note_resp(void)
{
	if (pg_self)
		pg_resp_done = true;
}

static void *pg_main(void *unused)
{
	struct epoll_event evs[PG_MAX_EVENTS];
	uint64_t spin_ns = pg_spin_env_ns(), spin_until = 0;
	uint64_t resp_ns = pg_resp_spin_env_ns(), resp_until;

	(void)unused;
	pg_self = true;
	for (;;) {
		struct timespec ts, *tmo = timers_wait(&ts);
		int n;

		if (pg_spinning(spin_until) || !pg_prepare_sleep()) {
			ts = (struct timespec){ 0 };
			tmo = &ts;
		}
		n = pg_epoll(evs, tmo);
		pg_awake();
		if (n > 0 && spin_ns)
			spin_until = xiw_now_ns() + spin_ns;
		if (n < 0) {
			if (errno != EINTR)
				xiw_log(XIW_LOG_ERROR, "progress: epoll_wait: %s",
					strerror(errno));
			n = 0;
		}
		pg_dispatch(evs, n);
		closures_run(closures_take());
		timers_fire();
		resp_until = pg_resp_spin(resp_ns);
		if (resp_until > spin_until)
			spin_until = resp_until;
	}
	return NULL;
}

static int pg_spawn(void)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t tid;
	int err;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	/* the thread inherits a full mask: app signal handlers never run on it */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&tid, &at, pg_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	if (err)
		return -err;
	pthread_setname_np(tid, "xiw-progress");
	return 0;
}

static void pg_init(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	pg.epfd = epoll_create1(EPOLL_CLOEXEC);
	pg.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pg.epfd < 0 || pg.evfd < 0 ||
	    epoll_ctl(pg.epfd, EPOLL_CTL_ADD, pg.evfd, &ev)) {
		pg.init_err = -errno;
		goto fail;
	}
	pg.init_err = pg_spawn();
	if (!pg.init_err)
		return;
fail:
	xiw_log(XIW_LOG_ERROR, "progress thread not started: %s (check fd and thread limits)",
		strerror(-pg.init_err));
}

int xiw_progress_start(void)
{
	pthread_once(&pg.once, pg_init);
	return pg.init_err;
}
