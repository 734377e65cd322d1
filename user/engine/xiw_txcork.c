// SPDX-License-Identifier: MIT
/*
 * TX corking (issue 11, item 1): a burst of small WRs posted one
 * ibv_post_send at a time goes out in one sendmsg, not one each.
 *
 * A poster holds ("corks") its WRs instead of sending them when
 *  - the QP sent bytes less than XIW_TX_CORK_US ago, and
 *  - no byte arrived from the peer since that send (a reply to the peer's
 *    message, as in every ping-pong, is never held), and
 *  - the QP has been corked for less than XIW_TX_CORK_US, and holds
 *    fewer WRs than one batch frames and at most XIW_TX_CORK_MAX bytes.
 * So a lone WR, and the first of a burst, go at once; the rest of a
 * one-way burst wait for the moment the application turns to its
 * completions. Corked WRs go out
 *  - at the next ibv_poll_cq, ibv_req_notify_cq or ibv_get_cq_event on
 *    any CQ of the process (xiw_tx_cork_flush()): on veth the sendmsg
 *    completes in the poller's context, so its WCs are in that same poll;
 *  - at the next post that does not cork (it frames everything queued);
 *  - at the latest by the progress thread's backstop, XIW_TX_CORK_BACKSTOP
 *    times the window after corking began, for a program that posts and
 *    then waits for something that is not a CQ.
 * XIW_TX_CORK_US=0 turns corking off.
 *
 * Locks: tx_lock (the QP's cork state) before cork_lock (the list).
 */
#include <stdatomic.h>
#include <pthread.h>
#include "xiw_obj.h"
#include "xiw_progress.h"
#include "xiwarp/xiwarp.h"

#define XIW_TX_CORK_BACKSTOP 5		/* backstop = this x the window */
#define XIW_TX_CORK_MAX (16u * 1024)	/* held payload bytes at most */

static pthread_mutex_t cork_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xiw_qp *cork_head;	/* cork_lock; each holds a QP ref */
static atomic_int cork_n;		/* listed QPs; polls read it unlocked */
static bool cork_timer_on;		/* cork_lock: backstop armed or arming */
static struct xiw_ptimer cork_timer;	/* progress thread */

static uint64_t backstop_ns(void)
{
	return xiw_tx_config()->cork_ns * XIW_TX_CORK_BACKSTOP;
}

static void cork_backstop(void *unused);

/* Progress thread: (re)arm the backstop @us from now. */
static void cork_arm_us(uint64_t us)
{
	xiw_progress_timer_arm_us(&cork_timer, us, cork_backstop, NULL);
}

static void cork_arm_fn(void *unused)
{
	(void)unused;
	cork_arm_us(backstop_ns() / 1000u);
}

#define CORK_TAKE 32	/* QPs taken off the list per cork_take() */

/*
 * Unlink up to @max listed QPs whose cork is over or older than
 * @older_ns (0: all) into @out; cork_lock held. Return how many. With
 * fewer than @max, none is left due and *@oldest is the earliest cork
 * start left listed (0: none).
 *
 * An array, not a chain through cork_next: the moment cork_lock is
 * dropped a poster may list a taken QP again, which rewrites its
 * cork_next (a chain walked after that went on along the list instead,
 * dropped the references of the QPs behind it, and one destroy waited
 * forever on ib_send_bw -q 4).
 */
static int cork_take(uint64_t now, uint64_t older_ns, uint64_t *oldest,
		     struct xiw_qp **out, int max)
{
	struct xiw_qp **pp = &cork_head;
	int n = 0;

	*oldest = 0;
	while (*pp && n < max) {
		struct xiw_qp *qp = *pp;
		uint64_t since = atomic_load(&qp->cork_since_ns);

		if (older_ns && since && now - since < older_ns) {
			if (!*oldest || since < *oldest)
				*oldest = since;
			pp = &qp->cork_next;
			continue;
		}
		*pp = qp->cork_next;
		qp->cork_listed = false;
		out[n++] = qp;
		atomic_fetch_sub(&cork_n, 1);
	}
	return n;
}

/* Send what each of the @n QPs of @due holds corked and drop the list's
 * refs. */
static void cork_send(struct xiw_qp **due, int n)
{
	for (int i = 0; i < n; i++) {
		if (atomic_load(&due[i]->cork_since_ns))
			xiw_tx_uncork(due[i]);
		xiw_qp_unref(due[i]);
	}
}

/* Take (older than @older_ns; 0: all) and send until none is left due;
 * return the earliest cork start left listed (0: none). @backstop: the
 * backstop's run, which stays armed only while QPs stay listed. */
static uint64_t cork_drain(uint64_t older_ns, bool backstop)
{
	struct xiw_qp *due[CORK_TAKE];
	uint64_t oldest;
	int n;

	do {
		pthread_mutex_lock(&cork_lock);
		n = cork_take(xiw_now_ns(), older_ns, &oldest, due, CORK_TAKE);
		if (n < CORK_TAKE && backstop)
			cork_timer_on = cork_head != NULL;
		pthread_mutex_unlock(&cork_lock);
		cork_send(due, n);
	} while (n == CORK_TAKE);
	return oldest;
}

/* Progress thread: send corks older than the backstop; re-arm for the
 * rest, or disarm once nothing is listed. */
static void cork_backstop(void *unused)
{
	uint64_t oldest, bs = backstop_ns(), now;

	(void)unused;
	oldest = cork_drain(bs, true);
	now = xiw_now_ns();
	if (oldest)	/* what stays listed is corked, so oldest is set */
		cork_arm_us(oldest + bs > now ? (oldest + bs - now) / 1000u + 1 : 1);
}

/* List @qp (tx_lock held, corked). Return: false if the backstop could
 * not be armed (then it must not cork). */
static bool cork_list_add(struct xiw_qp *qp)
{
	bool arm;

	pthread_mutex_lock(&cork_lock);
	if (qp->cork_listed) {
		pthread_mutex_unlock(&cork_lock);
		return true;
	}
	arm = !cork_timer_on;
	cork_timer_on = true;
	xiw_qp_ref(qp);
	qp->cork_listed = true;
	qp->cork_next = cork_head;
	cork_head = qp;
	atomic_fetch_add(&cork_n, 1);
	pthread_mutex_unlock(&cork_lock);
	if (arm && xiw_progress_run(cork_arm_fn, NULL)) {
		pthread_mutex_lock(&cork_lock);
		cork_timer_on = false;	/* listed: the next poll sends it */
		pthread_mutex_unlock(&cork_lock);
		return false;
	}
	return true;
}

/*
 * Fewer WRs wait than one batch frames, and few bytes (tx_lock held): a
 * large WR gains nothing from waiting, its payload costs more than the
 * call, so a burst that holds one goes now (an rsockets WRITE + SEND
 * chain is one such).
 */
static bool cork_room(const struct xiw_qp *qp)
{
	uint32_t head = __atomic_load_n(&qp->sq_head, __ATOMIC_ACQUIRE);
	uint64_t bytes = 0;

	if (head - qp->sq_tx >= XIW_TXB_FPDUS)
		return false;
	for (uint32_t i = qp->sq_tx; i != head; i++) {
		bytes += qp->sq[i & qp->sq_mask].len;
		if (bytes > XIW_TX_CORK_MAX)
			return false;
	}
	return true;
}

/**
 * xiw_tx_cork_wanted() - should the poster hold the WRs it just posted
 * (tx_lock held, nothing framed and unsent, the QP in RTS)? Lists the
 * QP for xiw_tx_cork_flush() and the backstop when it says yes.
 * Return: true to hold them (qp->cork_since_ns set), false to send now.
 */
bool xiw_tx_cork_wanted(struct xiw_qp *qp)
{
	uint64_t win = xiw_tx_config()->cork_ns, now, since;

	if (!win || !qp->tx_last_ns ||
	    __atomic_load_n(&qp->rx_reads, __ATOMIC_ACQUIRE) != qp->cork_rx_mark ||
	    !cork_room(qp))
		return false;
	now = xiw_now_ns();
	if (now - qp->tx_last_ns >= win)
		return false;
	since = atomic_load(&qp->cork_since_ns);
	if (since)
		return now - since < win;
	atomic_store(&qp->cork_since_ns, now);	/* before the backstop sees it */
	if (cork_list_add(qp))
		return true;
	atomic_store(&qp->cork_since_ns, 0);
	return false;
}

/**
 * xiw_tx_cork_mark() - the receive count to remember for a send about to
 * be made (tx_lock held). Taken before the sendmsg: on veth the peer can
 * answer, and we read the answer, before our sendmsg returns; a mark
 * taken after it would hide that answer and cork the reply to it.
 */
uint32_t xiw_tx_cork_mark(const struct xiw_qp *qp)
{
	return __atomic_load_n(&qp->rx_reads, __ATOMIC_ACQUIRE);
}

/**
 * xiw_tx_cork_sent() - @qp handed bytes to its stream (tx_lock held;
 * xiw_tx_send_some() ended the cork when it began framing); @rx_mark from
 * xiw_tx_cork_mark() before that send. The next WRs may cork behind it.
 */
void xiw_tx_cork_sent(struct xiw_qp *qp, uint32_t rx_mark)
{
	__atomic_store_n(&qp->tx_calls, qp->tx_calls + 1, __ATOMIC_RELAXED);
	if (!xiw_tx_config()->cork_ns)
		return;
	qp->tx_last_ns = xiw_now_ns();
	qp->cork_rx_mark = rx_mark;
}

/**
 * xiw_tx_cork_flush() - send every QP's corked WRs (any thread, no engine
 * lock held): the application polls, arms or waits for completions.
 * Costs one relaxed load when nothing is corked.
 */
void xiw_tx_cork_flush(void)
{
	if (!atomic_load_explicit(&cork_n, memory_order_relaxed))
		return;
	cork_drain(0, false);
}

/*
 * Process exit: send what is still held. Without corking those WRs' bytes
 * would have been in the kernel already, which sends them after exit.
 */
__attribute__((destructor)) static void cork_exit(void)
{
	xiw_tx_cork_flush();
}

/**
 * xiw_tx_cork_forget() - a QP is being destroyed (no QP lock held): send
 * what it holds, as it would have been sent without corking, before the
 * destroy lets go of its stream, and take it off the list, so that the
 * destroy does not wait for the backstop.
 */
void xiw_tx_cork_forget(struct xiw_qp *qp)
{
	bool was = false;

	pthread_mutex_lock(&cork_lock);
	for (struct xiw_qp **pp = &cork_head; *pp; pp = &(*pp)->cork_next)
		if (*pp == qp) {
			*pp = qp->cork_next;
			qp->cork_listed = false;
			atomic_fetch_sub(&cork_n, 1);
			was = true;
			break;
		}
	pthread_mutex_unlock(&cork_lock);
	if (atomic_load(&qp->cork_since_ns))
		xiw_tx_uncork(qp);
	if (was)
		xiw_qp_unref(qp);
}
