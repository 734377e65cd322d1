/* SPDX-License-Identifier: MIT */
/*
 * xiw_cq_wait() internals (xiw_cq_wait.c): the hook xiw_cq_push() calls and
 * the counters the tests and user/tools/xiw_cqbench.c read.
 *
 * The waiter's state lives in struct xiw_cq (xiw_obj.h): wait_nmin and
 * wait_wakes under cq->lock, wait_seq the futex word, waiter/wait_sleeps
 * atomics.
 */
#ifndef XIW_CQ_WAIT_H
#define XIW_CQ_WAIT_H

#include <stdbool.h>
#include <stdint.h>

struct xiw_cq;

/**
 * xiw_cq_wait_due() - called by xiw_cq_push() with cq->lock held right
 * after a CQE was queued, only while cq->wait_nmin != 0. When the queued
 * count reached the waiter's threshold it disarms the threshold (so the
 * waiter is woken once, not once per CQE), bumps the futex word and
 * counts a wake.
 * Return: true if the caller must call xiw_cq_wait_wake() after unlocking.
 */
bool xiw_cq_wait_due(struct xiw_cq *cq);

/**
 * xiw_cq_wait_wake() - FUTEX_WAKE the waiter (cq->lock NOT held, so the
 * woken thread does not run into the pusher's lock). The CQ must stay
 * alive until this returns, as for the rest of xiw_cq_push(): in the
 * engine a QP pushing to the CQ holds cq->nqp, so destroy is refused.
 */
void xiw_cq_wait_wake(struct xiw_cq *cq);

/**
 * struct xiw_cq_wait_stats - instrumentation of one CQ.
 * @wakes:  futex wakes issued by xiw_cq_push() (one per reached threshold).
 * @sleeps: FUTEX_WAIT calls made by waiters (a wake, a timeout slice, a
 *          signal or a lost race each end one).
 */
struct xiw_cq_wait_stats {
	uint64_t wakes;
	uint64_t sleeps;
};

/** xiw_cq_wait_stats() - read @cq's counters (thread-safe). */
void xiw_cq_wait_stats(struct xiw_cq *cq, struct xiw_cq_wait_stats *st);

/**
 * xiw_cq_wait_spin_set() - override XIW_CQ_SPIN_US for the whole process
 * (microseconds, >= 0; -1: read the environment again). For the benchmark.
 */
void xiw_cq_wait_spin_set(int us);

/**
 * xiw_cq_nap() - a busy poller found @cq empty for a long time: sleep until
 * a CQE is queued or @us microseconds pass, whichever is first (futex; the
 * pusher wakes it, as for xiw_cq_wait()). Receiving that pollers did for
 * the CQ's QPs goes back to the progress thread first.
 * Return: true if it slept; false if another thread waits on @cq already
 * (one threshold per CQ), in which case the caller just goes on polling.
 */
bool xiw_cq_nap(struct xiw_cq *cq, uint32_t us);

#endif /* XIW_CQ_WAIT_H */
