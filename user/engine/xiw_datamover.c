// SPDX-License-Identifier: MIT
/*
 * The asynchronous datamover (seed 003): one thread that sends for QPs
 * whose posting thread could not finish: their stream lacked send space
 * ("paused") or they had more than a poster's direct budget ("active").
 *
 * Active QPs are served round-robin, one turn each: up to XIW_DM_PIECE
 * (256 KB, the poster's direct budget), or less if the socket takes less,
 * so one busy QP cannot starve the others. Seed 003 asks for page-sized
 * pieces; over kernel TCP each piece is a sendmsg on its own socket, and
 * on the demo's veth pair a 4 KB call cost ~6 us (it runs the peer's
 * receive path too; 118 k calls/s took ~70 % of a CPU), and a 4 KB budget
 * also sent a 4 KB WRITE's FPDU in two calls (header alone, then payload,
 * the CRC going with the next header): 256 busy QPs of 4 KB WRITEs moved
 * 300-410 MB/s with 4 KB turns, 2060-2200 with these, of 64 KB WRITEs
 * 1730-2100 against 3220-3820 (ib_write_bw -q 256, 3-4 runs each, on a
 * quiet machine, before turns ended at FPDU ends; one QP is unchanged).
 * The order stays fair; only the turn is longer.
 * A turn ends at an FPDU end (at least one whole FPDU; batch_send), so
 * a 4 KB WRITE goes out in one call. (That change once exposed an
 * rsockets close race, fixed in rclose: the linger before the flush.) A
 * paused QP's socket sits in the
 * datamover's own epoll set (EPOLLOUT, one-shot); the kernel reports it
 * writable once its free send space is back above its low-water mark
 * (for TCP: free >= queued / 2, sk_stream_wspace >= sk_stream_min_wspace),
 * and the QP goes back to the active list.
 *
 * Posting never waits for the datamover: appending to the active list is
 * a few instructions under dm.lock, and the eventfd doorbell is written
 * only when the datamover sleeps.
 *
 * Locks: qp->tx_lock -> dm.lock. The datamover holds one reference on
 * every QP it knows (dm_state != IDLE) and drops it only on its own
 * thread, after the epoll batch that could still name the QP.
 * qp->dm_owned (tx_lock) says whether direct sends must stay away.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "xiw_obj.h"

#define DM_EVENTS 64

static struct {
	pthread_once_t once;
	int err;
	int epfd, evfd;
	pthread_mutex_t lock;
	struct xiw_qp *head, *tail;	/* active list */
	struct xiw_qp *credit;		/* QPs waiting for a CQE slot */
	bool sleeping;
} dm = { .once = PTHREAD_ONCE_INIT, .epfd = -1, .evfd = -1,
	 .lock = PTHREAD_MUTEX_INITIALIZER };

static void *dm_main(void *unused);

static void dm_init(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	sigset_t all, old;
	pthread_t tid;

	dm.epfd = epoll_create1(EPOLL_CLOEXEC);
	dm.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dm.epfd < 0 || dm.evfd < 0 ||
	    epoll_ctl(dm.epfd, EPOLL_CTL_ADD, dm.evfd, &ev)) {
		dm.err = -errno;
		return;
	}
	sigfillset(&all);	/* app signal handlers never run here */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	dm.err = -pthread_create(&tid, NULL, dm_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (dm.err)
		return;
	pthread_detach(tid);
	pthread_setname_np(tid, "xiw-datamover");
}

static void doorbell(void)
{
	uint64_t one = 1;

	if (write(dm.evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		xiw_log(XIW_LOG_ERROR, "datamover: eventfd: %s", strerror(errno));
}

/* dm.lock held: append to the active list; true if a doorbell is due. */
static bool dm_append(struct xiw_qp *qp)
{
	bool wake = dm.sleeping;

	qp->dm_next = NULL;
	if (dm.tail)
		dm.tail->dm_next = qp;
	else
		dm.head = qp;
	dm.tail = qp;
	dm.sleeping = false;
	return wake;
}

/* dm.lock held: leave the datamover's epoll set. */
static void dm_fd_del(struct xiw_qp *qp)
{
	if (qp->dm_fd_added)
		epoll_ctl(dm.epfd, EPOLL_CTL_DEL, qp->dm_fd, NULL);
	qp->dm_fd_added = false;
}

/* dm.lock held: wait (one-shot) for send space on the QP's socket. */
static void dm_fd_wait(struct xiw_qp *qp)
{
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLONESHOT,
				  .data.ptr = qp };
	int fd = xiw_llp_poll_fd(qp->llp);

	if (qp->dm_fd_added && qp->dm_fd != fd)
		dm_fd_del(qp);
	if (!epoll_ctl(dm.epfd, qp->dm_fd_added ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
		       fd, &ev)) {
		qp->dm_fd_added = true;
		qp->dm_fd = fd;
		qp->dm_state = XIW_DM_PAUSED;
		return;
	}
	xiw_log(XIW_LOG_WARN, "qp %u: datamover epoll: %s; retrying actively",
		qp->ibv.qp_num, strerror(errno));
	qp->dm_state = XIW_DM_ACTIVE;
	dm_append(qp);
}

/* dm.lock held: park @qp until a CQ poll frees a slot (seed 002). */
static void dm_credit_park(struct xiw_qp *qp)
{
	qp->dm_state = XIW_DM_CREDIT;
	qp->dm_next = dm.credit;
	dm.credit = qp;
}

/* dm.lock held: take @qp off the credit list. */
static void dm_credit_unlink(struct xiw_qp *qp)
{
	for (struct xiw_qp **pp = &dm.credit; *pp; pp = &(*pp)->dm_next)
		if (*pp == qp) {
			*pp = qp->dm_next;
			return;
		}
}

/*
 * After parking @qp (dm.lock not held): ask the send CQ's pollers for a
 * kick, then look again, so a poll between our last reservation attempt
 * and the parking is not missed.
 */
static void dm_credit_recheck(struct xiw_qp *qp)
{
	__atomic_store_n(&qp->scq->credit_wait, true, __ATOMIC_SEQ_CST);
	if (xiw_cq_has_room(qp->scq))
		xiw_dm_credit_kick();
}

void xiw_dm_credit_kick(void)
{
	bool wake = false;

	pthread_mutex_lock(&dm.lock);
	while (dm.credit) {
		struct xiw_qp *qp = dm.credit;

		dm.credit = qp->dm_next;
		qp->dm_state = XIW_DM_ACTIVE;
		wake |= dm_append(qp);
	}
	pthread_mutex_unlock(&dm.lock);
	if (wake)
		doorbell();
}

/* tx_lock held: take the QP over in @state (ACTIVE, PAUSED or CREDIT). */
static void dm_take(struct xiw_qp *qp, int state)
{
	bool wake = false;

	pthread_once(&dm.once, dm_init);
	if (dm.err) {	/* no thread: the poster keeps direct sending */
		xiw_log(XIW_LOG_ERROR, "qp %u: no datamover (%s)",
			qp->ibv.qp_num, strerror(-dm.err));
		return;
	}
	pthread_mutex_lock(&dm.lock);
	switch (qp->dm_state) {
	case XIW_DM_IDLE:
		xiw_qp_ref(qp);
		if (state == XIW_DM_PAUSED) {
			dm_fd_wait(qp);
		} else if (state == XIW_DM_CREDIT) {
			dm_credit_park(qp);
		} else {
			qp->dm_state = XIW_DM_ACTIVE;
			wake = dm_append(qp);
		}
		break;
	case XIW_DM_CANCEL:	/* still listed: serve it again */
		qp->dm_state = XIW_DM_ACTIVE;
		break;
	case XIW_DM_RUNNING:
		qp->dm_cancel = false;
		break;
	default:
		break;
	}
	qp->dm_owned = true;
	pthread_mutex_unlock(&dm.lock);
	if (wake)
		doorbell();
}

void xiw_dm_activate(struct xiw_qp *qp)
{
	dm_take(qp, XIW_DM_ACTIVE);
}

void xiw_dm_pause(struct xiw_qp *qp)
{
	dm_take(qp, XIW_DM_PAUSED);
}

void xiw_dm_credit_wait(struct xiw_qp *qp)
{
	dm_take(qp, XIW_DM_CREDIT);
	dm_credit_recheck(qp);
}

void xiw_dm_forget(struct xiw_qp *qp)
{
	bool wake = false;

	if (!qp->dm_owned)
		return;
	qp->dm_owned = false;
	pthread_mutex_lock(&dm.lock);
	dm_fd_del(qp);	/* before the stream's fd can be closed */
	if (qp->dm_state == XIW_DM_CREDIT)
		dm_credit_unlink(qp);
	if (qp->dm_state == XIW_DM_PAUSED || qp->dm_state == XIW_DM_CREDIT) {
		qp->dm_state = XIW_DM_CANCEL;
		wake = dm_append(qp);	/* the datamover drops its ref */
	} else if (qp->dm_state == XIW_DM_ACTIVE) {
		qp->dm_state = XIW_DM_CANCEL;
	} else if (qp->dm_state == XIW_DM_RUNNING) {
		qp->dm_cancel = true;
	}
	pthread_mutex_unlock(&dm.lock);
	if (wake)
		doorbell();
}

/* ------------------------------------------------------ the thread --- */

/* One turn for @qp (popped, state RUNNING). Return: drop its reference. */
static bool dm_turn(struct xiw_qp *qp)
{
	bool cancel, drop = false, credit = false;
	int r = XIW_TX_DONE;

	pthread_mutex_lock(&qp->tx_lock);
	pthread_mutex_lock(&dm.lock);
	cancel = qp->dm_cancel;
	pthread_mutex_unlock(&dm.lock);
	if (!cancel)
		r = xiw_tx_send_some(qp, XIW_DM_PIECE);
	pthread_mutex_lock(&dm.lock);
	if (qp->dm_cancel || r == XIW_TX_DONE) {
		if (!qp->dm_cancel)
			qp->dm_owned = false;	/* direct sends again */
		qp->dm_cancel = false;
		qp->dm_state = XIW_DM_IDLE;
		dm_fd_del(qp);
		drop = true;
	} else if (r == XIW_TX_SHORT) {
		dm_fd_wait(qp);
	} else if (r == XIW_TX_CREDIT) {
		dm_credit_park(qp);
		credit = true;
	} else {
		qp->dm_state = XIW_DM_ACTIVE;
		dm_append(qp);
	}
	pthread_mutex_unlock(&dm.lock);
	if (credit)
		dm_credit_recheck(qp);
	xiw_tx_unlock(qp);
	return drop;
}

/* Serve every QP on the active list once (those appended meanwhile wait
 * for the next round). */
static void dm_round(void)
{
	struct xiw_qp *qp, *end;

	pthread_mutex_lock(&dm.lock);
	end = dm.tail;
	pthread_mutex_unlock(&dm.lock);
	while (end) {
		bool last, drop;

		pthread_mutex_lock(&dm.lock);
		qp = dm.head;
		dm.head = qp->dm_next;
		if (!dm.head)
			dm.tail = NULL;
		last = qp == end;
		drop = qp->dm_state == XIW_DM_CANCEL;
		if (drop)
			qp->dm_state = XIW_DM_IDLE;
		else
			qp->dm_state = XIW_DM_RUNNING;
		pthread_mutex_unlock(&dm.lock);
		if (!drop)
			drop = dm_turn(qp);
		if (drop)
			xiw_qp_unref(qp);
		if (last)
			break;
	}
}

static void dm_events(struct epoll_event *evs, int n)
{
	uint64_t v;

	pthread_mutex_lock(&dm.lock);
	dm.sleeping = false;
	for (int i = 0; i < n; i++) {
		struct xiw_qp *qp = evs[i].data.ptr;

		if (!qp) {
			if (read(dm.evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				xiw_log(XIW_LOG_ERROR, "datamover: eventfd read: %s",
					strerror(errno));
		} else if (qp->dm_state == XIW_DM_PAUSED) {
			qp->dm_state = XIW_DM_ACTIVE;	/* space is back */
			dm_append(qp);
		}
	}
	pthread_mutex_unlock(&dm.lock);
}

static void *dm_main(void *unused)
{
	struct epoll_event evs[DM_EVENTS];

	(void)unused;
	for (;;) {
		int n, tmo;

		pthread_mutex_lock(&dm.lock);
		dm.sleeping = !dm.head;
		tmo = dm.head ? 0 : -1;
		pthread_mutex_unlock(&dm.lock);
		n = epoll_wait(dm.epfd, evs, DM_EVENTS, tmo);
		if (n < 0 && errno != EINTR)
			xiw_log(XIW_LOG_ERROR, "datamover: epoll_wait: %s",
				strerror(errno));
		dm_events(evs, n < 0 ? 0 : n);
		dm_round();
	}
	return NULL;
}
