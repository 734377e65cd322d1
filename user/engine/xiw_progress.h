/* SPDX-License-Identifier: MIT */
/*
 * The engine progress thread (internal): one epoll loop that owns every
 * transport fd, runs queued closures (xiw_progress_run() in xiw_conn.h)
 * and simple one-shot timers.
 *
 * One loop iteration: epoll_wait -> dispatch fd callbacks -> run the
 * closures queued so far -> fire expired timers. A closure therefore never
 * runs in the middle of an fd dispatch batch, which is what makes deferred
 * frees safe: free a struct xiw_pfd from a closure queued after
 * xiw_progress_fd_del() and no callback can touch it afterwards.
 */
#ifndef XIW_PROGRESS_H
#define XIW_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/**
 * struct xiw_pfd - an fd registered with the progress thread.
 * @fd:  the file descriptor (owned by the caller).
 * @cb:  called on the progress thread with the epoll event bits.
 * @arg: passed to @cb.
 * @deleted: internal; set by xiw_progress_fd_del() so events still in the
 *           current dispatch batch are dropped.
 */
struct xiw_pfd {
	int fd;
	void (*cb)(void *arg, uint32_t events);
	void *arg;
	bool deleted;
};

/**
 * xiw_progress_start() - start the progress thread if it is not running
 * (idempotent, thread-safe). Return: 0, or -errno (epoll/eventfd/thread).
 */
int xiw_progress_start(void);

/**
 * xiw_progress_fd_add() - register @p->fd for @events (EPOLLIN, EPOLLOUT,
 * EPOLLRDHUP; level-triggered). Starts the thread if needed.
 * Return: 0 or -errno from epoll_ctl.
 */
int xiw_progress_fd_add(struct xiw_pfd *p, uint32_t events);
/** xiw_progress_fd_mod() - change the event mask. Return: 0 or -errno. */
int xiw_progress_fd_mod(struct xiw_pfd *p, uint32_t events);
/**
 * xiw_progress_fd_del() - unregister @p. On the progress thread, events of
 * the current batch for @p are dropped; @p must stay allocated until a
 * closure queued after this call runs. From another thread, a callback may
 * still be running when this returns: use xiw_progress_sync().
 * Return: 0 or -errno.
 */
int xiw_progress_fd_del(struct xiw_pfd *p);

/**
 * xiw_progress_sync() - run @fn(@arg) on the progress thread and wait for
 * it to finish (between dispatch batches, so no fd callback is running).
 * Called on the progress thread it runs @fn directly. The caller must not
 * hold a lock that a progress-thread callback may wait for.
 * Return: 0, or -errno if the thread could not be started.
 */
int xiw_progress_sync(void (*fn)(void *arg), void *arg);

/**
 * struct xiw_ptimer - a one-shot timer (progress thread only).
 * Initialise with zeroes; arm/cancel only on the progress thread.
 */
struct xiw_ptimer {
	uint64_t deadline_ns;
	void (*fn)(void *arg);
	void *arg;
	bool armed;
	struct xiw_ptimer *next;
};

/** xiw_progress_timer_arm() - fire @fn(@arg) once after @ms milliseconds
 *  (re-arming an armed timer moves it). Progress thread only. */
void xiw_progress_timer_arm(struct xiw_ptimer *t, unsigned int ms,
			    void (*fn)(void *arg), void *arg);
/** xiw_progress_timer_arm_us() - the same in microseconds (the progress
 *  thread waits with nanosecond timeouts). Progress thread only. */
void xiw_progress_timer_arm_us(struct xiw_ptimer *t, uint64_t us,
			       void (*fn)(void *arg), void *arg);
/** xiw_progress_timer_cancel() - disarm @t (no-op if not armed).
 *  Progress thread only. */
void xiw_progress_timer_cancel(struct xiw_ptimer *t);

/** xiw_now_ns() - CLOCK_MONOTONIC in nanoseconds (timers, timeouts). */
uint64_t xiw_now_ns(void);

#endif /* XIW_PROGRESS_H */
