// SPDX-License-Identifier: MIT
/*
 * ksock: the LLP (llp.h) on a non-blocking kernel TCP socket, driven by
 * the engine progress thread (level-triggered epoll).
 *
 * Event mask: EPOLLIN|EPOLLRDHUP while reading is not paused and EOF has
 * not been seen, EPOLLOUT while connecting or while the owner wants one
 * @writable upcall. EPOLLHUP/EPOLLERR cannot be masked: an error becomes a
 * @closed upcall; a hang-up while we are not reading "parks" the fd (taken
 * out of epoll) until reading resumes, so level-triggered HUP cannot spin.
 *
 * Lifetime: xiw_ksock_close() unregisters the fd between dispatch batches
 * (xiw_progress_sync) when called off the progress thread, so no upcall
 * runs after it returns; on the progress thread it unregisters at once and
 * frees from a closure that runs after the current batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include "xiwarp/xiwarp.h"
#include "xiw_conn.h"
#include "xiw_progress.h"
#include "ksock.h"
#include "llp.h"

/*
 * ThreadSanitizer cannot see the kernel order a socket gives: a thread
 * that receives bytes (an app thread polling its CQ, xiw_rx_poll) comes
 * after whatever the sending thread of this process did before its send,
 * e.g. sendmsg reading a READ source buffer the app reuses once the READ
 * completed. Tell it so (in-process loopback peers only matter): a send
 * releases, a receive acquires, and the send is a raw syscall TSan does
 * not see, as the kernel's copy is done before a receiver can get a byte.
 */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char tsan_wire;
#define TSAN_SENT() __tsan_release(&tsan_wire)
#define TSAN_RECEIVED() __tsan_acquire(&tsan_wire)
#define llp_sendmsg(fd, m, f) syscall(SYS_sendmsg, fd, m, f)
#else
#define TSAN_SENT() do { } while (0)
#define TSAN_RECEIVED() do { } while (0)
#define llp_sendmsg sendmsg
#endif

struct xiw_ksock {
	struct xiw_llp base;		/* first: the generic handle (llp.h) */
	struct xiw_pfd pfd;
	pthread_mutex_t lock;		/* everything below */
	const struct xiw_llp_cb *cb;
	void *arg;
	uint32_t mask;			/* events registered with epoll */
	uint32_t mss;
	bool registered;		/* in epoll */
	bool connecting;		/* waiting for connect completion */
	bool want_write;
	bool paused;
	bool app_read;			/* owner reads in app threads */
	bool eof;			/* recv returned 0 */
	bool parked;			/* out of epoll after HUP while not reading */
	bool dead;			/* closed upcall delivered or aborted */
	bool aborted;			/* xiw_llp_abort(): close() sends RST */
	struct xiw_ksock_live live;	/* exit linger (ksock_linger.c) */
	bool fin_held;			/* shutdown asked, FIN held (linger) */
	uint64_t fin_until_ns;
	struct xiw_ptimer fin_timer;	/* progress thread */
	bool rx_owed;			/* read since the last drain (quick ACK owed) */
	struct xiw_ksock_zc zc;		/* MSG_ZEROCOPY (ksock_zc.c), own lock */
	struct xiw_ksock_mark mark;	/* sockops TX marks (ksock_ack.c) */
	struct xiw_ksock *lowat_prev, *lowat_next;	/* lowat_lock */
};

struct xiw_ksock_listener {
	struct xiw_pfd pfd;
	xiw_ksock_accept_fn fn;
	void *arg;
	uint16_t port;		/* bound port, network order */
};

socklen_t xiw_ksock_sa_len(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

bool xiw_ksock_sa_same(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       x->sin6_scope_id == y->sin6_scope_id &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
	}
	return false;
}

static int sock_error(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

/* ------------------------------------------------------ event mask --- */

static uint32_t llp_want_mask(const struct xiw_ksock *l)
{
	uint32_t m = 0;

	if (l->connecting)
		return EPOLLOUT;
	if (!l->paused && !l->app_read && !l->eof)
		m |= EPOLLIN | EPOLLRDHUP;
	if (l->want_write)
		m |= EPOLLOUT;
	return m;
}

/* Bring the epoll registration in line with the state. Lock held. */
static void llp_sync_mask_locked(struct xiw_ksock *l)
{
	uint32_t m = llp_want_mask(l);
	int err = 0;

	if (l->dead || !l->cb)
		return;
	if (l->parked) {
		if (!(m & EPOLLIN))
			return;
		l->parked = false;
	}
	if (!l->registered) {
		err = xiw_progress_fd_add(&l->pfd, m);
		l->registered = !err;
	} else if (m != l->mask) {
		err = xiw_progress_fd_mod(&l->pfd, m);
	}
	if (err)
		xiw_log(XIW_LOG_ERROR, "ksock: epoll update of fd %d failed: %s",
			l->pfd.fd, strerror(-err));
	else
		l->mask = m;
}

static void llp_unregister_locked(struct xiw_ksock *l)
{
	if (l->registered)
		xiw_progress_fd_del(&l->pfd);
	l->registered = false;
	l->mask = 0;
}

/* ---------------------------------------------------------- events --- */

/* Deliver @closed once and stop all further upcalls. */
static void llp_fail(struct xiw_ksock *l, int err)
{
	const struct xiw_llp_cb *cb;
	void *arg;

	pthread_mutex_lock(&l->lock);
	if (l->dead) {
		pthread_mutex_unlock(&l->lock);
		return;
	}
	l->dead = true;
	__atomic_store_n(&l->live.ended, true, __ATOMIC_RELAXED);
	llp_unregister_locked(l);
	cb = l->cb;
	arg = l->arg;
	pthread_mutex_unlock(&l->lock);
	if (cb && cb->closed)
		cb->closed(arg, err ? err : -ECONNRESET);
}

static void llp_cache_mss(struct xiw_ksock *l)
{
	int mss = 0;
	socklen_t len = sizeof(mss);

	if (!getsockopt(l->pfd.fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) && mss > 0)
		l->mss = mss;
}

/*
 * A connect to a port of this host that nobody listens on can connect the
 * socket to itself: the kernel picked that very port as our source port
 * (TCP simultaneous open, RFC 9293 §3.5). The "peer" would then answer our
 * MPA request with that request (the CM's "not an iWARP peer"). Nobody
 * listens there: report it as refused.
 */
static bool llp_self_connected(int fd)
{
	struct sockaddr_storage a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);

	return !getsockname(fd, (struct sockaddr *)&a, &la) &&
	       !getpeername(fd, (struct sockaddr *)&b, &lb) &&
	       xiw_ksock_sa_same((struct sockaddr *)&a, (struct sockaddr *)&b);
}

static void llp_connect_done(struct xiw_ksock *l)
{
	const struct xiw_llp_cb *cb;
	void *arg;
	int err = sock_error(l->pfd.fd);

	if (!err && llp_self_connected(l->pfd.fd)) {
		xiw_log(XIW_LOG_INFO, "ksock: the connect reached its own socket (nobody listens on the port, and the kernel chose it as our source port): refused");
		err = -ECONNREFUSED;
	}
	if (err) {
		llp_fail(l, err);
		return;
	}
	llp_cache_mss(l);
	pthread_mutex_lock(&l->lock);
	l->connecting = false;
	llp_sync_mask_locked(l);
	cb = l->cb;
	arg = l->arg;
	pthread_mutex_unlock(&l->lock);
	if (cb && cb->writable)
		cb->writable(arg);
}

/* Readable part of an event. Return: false if the llp went away. */
static bool llp_event_in(struct xiw_ksock *l, uint32_t ev)
{
	const struct xiw_llp_cb *cb;
	void *arg;
	bool reading;

	pthread_mutex_lock(&l->lock);
	reading = !l->paused && !l->app_read && !l->eof;
	if (!reading && (ev & EPOLLHUP) && !l->parked) {
		llp_unregister_locked(l);
		l->parked = true;
	}
	cb = l->cb;
	arg = l->arg;
	pthread_mutex_unlock(&l->lock);
	if (reading && (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) && cb && cb->readable)
		cb->readable(arg);
	return !__atomic_load_n(&l->pfd.deleted, __ATOMIC_ACQUIRE) || l->parked;
}

static void llp_event_out(struct xiw_ksock *l)
{
	const struct xiw_llp_cb *cb;
	void *arg;
	bool fire;

	pthread_mutex_lock(&l->lock);
	fire = l->want_write && !l->dead;
	l->want_write = false;
	llp_sync_mask_locked(l);
	cb = l->cb;
	arg = l->arg;
	pthread_mutex_unlock(&l->lock);
	if (fire && cb && cb->writable)
		cb->writable(arg);
}

static void llp_event(void *p, uint32_t ev)
{
	struct xiw_ksock *l = p;
	bool connecting;

	pthread_mutex_lock(&l->lock);
	connecting = l->connecting;
	pthread_mutex_unlock(&l->lock);
	if (connecting) {
		llp_connect_done(l);
		return;
	}
	if (ev & EPOLLERR) {
		int err;

		if (__atomic_load_n(&l->zc.on, __ATOMIC_RELAXED))	/* zero-copy notices */
			xiw_ksock_zc_reap(l);
		err = sock_error(l->pfd.fd);

		if (err) {
			llp_fail(l, err);
			return;
		}
	}
	if (!llp_event_in(l, ev))
		return;
	if (ev & EPOLLOUT)
		llp_event_out(l);
}

/* ------------------------------------------------------- llp calls --- */

/*
 * TCP_NOTSENT_LOWAT while many connections are open (issue 11, many
 * QPs): a socket then accepts new bytes, and reports itself writable,
 * only while less than this much of what it holds is still unsent.
 * Without it each of 256 busy QPs' sockets took up to its whole
 * autotuned send buffer (MBs), copied long before the wire, the receiver
 * or the caches saw them: `ib_write_bw -q 256 -s 65536` on a veth pair
 * moved 0.56-0.68 x the bytes of one QP per second and used ~1.5 x the
 * CPU per GB; with 128 KB 0.85-0.98 x (interleaved medians, -n 40 and
 * 400; 256 KB and 512 KB helped little). A lone connection pays for it (a
 * datamover wake-up per ~64 KB instead of per MBs: +15-20 % CPU per GB
 * for one QP), so it applies only from XIW_LOWAT_MIN_CONNS open
 * connections on, to all of them, and is taken back below.
 * XIW_TCP_NOTSENT_LOWAT: bytes, 0 = never (the kernel's
 * net.ipv4.tcp_notsent_lowat).
 */
int xiw_ksock_lowat_parse(const char *e)
{
	char *end;
	long n;

	if (!e || !*e)
		return XIW_NOTSENT_LOWAT_DEFAULT;
	errno = 0;
	n = strtol(e, &end, 10);
	if (*end || errno || n < 0 || n > XIW_NOTSENT_LOWAT_MAX) {
		xiw_log(XIW_LOG_WARN, "XIW_TCP_NOTSENT_LOWAT=%s: use bytes (0..%d, 0 = the kernel's); using %d",
			e, XIW_NOTSENT_LOWAT_MAX, XIW_NOTSENT_LOWAT_DEFAULT);
		return XIW_NOTSENT_LOWAT_DEFAULT;
	}
	return (int)n;
}

int xiw_ksock_notsent_lowat(void)
{
	static int val = -1;
	int v = __atomic_load_n(&val, __ATOMIC_RELAXED);

	if (v < 0) {	/* racing first readers compute the same value */
		v = xiw_ksock_lowat_parse(getenv("XIW_TCP_NOTSENT_LOWAT"));
		__atomic_store_n(&val, v, __ATOMIC_RELAXED);
	}
	return v;
}

/* open connections, for the lowat rule (all under lowat_lock) */
static pthread_mutex_t lowat_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xiw_ksock *lowat_head;
static unsigned int lowat_conns;

/* 0 gives the socket the kernel's default back */
static void lowat_set(struct xiw_ksock *l, int v)
{
	if (setsockopt(l->pfd.fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof(v)))
		xiw_log(XIW_LOG_DEBUG, "ksock: TCP_NOTSENT_LOWAT: %s",
			strerror(errno));
}

static void lowat_set_all(int v)
{
	for (struct xiw_ksock *o = lowat_head; o; o = o->lowat_next)
		lowat_set(o, v);
}

/* A new connection (@l not yet shared): count it, apply the rule. */
static void lowat_add(struct xiw_ksock *l)
{
	int v = xiw_ksock_notsent_lowat();

	pthread_mutex_lock(&lowat_lock);
	l->lowat_prev = NULL;
	l->lowat_next = lowat_head;
	if (lowat_head)
		lowat_head->lowat_prev = l;
	lowat_head = l;
	lowat_conns++;
	if (v && lowat_conns == XIW_LOWAT_MIN_CONNS)
		lowat_set_all(v);
	else if (v && lowat_conns > XIW_LOWAT_MIN_CONNS)
		lowat_set(l, v);
	pthread_mutex_unlock(&lowat_lock);
}

/* Before @l's fd is closed: uncount it; below the threshold, undo. */
static void lowat_del(struct xiw_ksock *l)
{
	pthread_mutex_lock(&lowat_lock);
	if (l->lowat_prev)
		l->lowat_prev->lowat_next = l->lowat_next;
	else
		lowat_head = l->lowat_next;
	if (l->lowat_next)
		l->lowat_next->lowat_prev = l->lowat_prev;
	lowat_conns--;
	if (xiw_ksock_notsent_lowat() &&
	    lowat_conns == XIW_LOWAT_MIN_CONNS - 1)
		lowat_set_all(0);
	pthread_mutex_unlock(&lowat_lock);
}

int xiw_ksock_open_conns(void)
{
	int n;

	pthread_mutex_lock(&lowat_lock);
	n = (int)lowat_conns;
	pthread_mutex_unlock(&lowat_lock);
	return n;
}

static struct xiw_ksock *llp_new(int fd, bool connecting)
{
	struct xiw_ksock *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	pthread_mutex_init(&l->lock, NULL);
	pthread_mutex_init(&l->zc.lock, NULL);
	l->base.ops = &xiw_ksock_ops;
	l->pfd.fd = fd;
	l->pfd.cb = llp_event;
	l->pfd.arg = l;
	l->connecting = connecting;
	l->mss = 1460;
	xiw_ksock_live_add(&l->live);
	lowat_add(l);
	return l;
}

void xiw_ksock_set_owner(struct xiw_ksock *l, const struct xiw_llp_cb *cb, void *arg)
{
	pthread_mutex_lock(&l->lock);
	l->cb = cb;
	l->arg = arg;
	llp_sync_mask_locked(l);
	pthread_mutex_unlock(&l->lock);
}

ssize_t xiw_ksock_send(struct xiw_ksock *l, const struct iovec *iov, int n, bool more)
{
	struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };
	int flags = MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0);
	ssize_t r;

	TSAN_SENT();
	r = llp_sendmsg(l->pfd.fd, &msg, flags);
	if (r >= 0)
		return r;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

/*
 * XIW_QUICKACK=0|1, see llp_quickack(). Default: 1 when this process
 * completes sends on ACKs (XIW_TX_COMPLETION=ack), whose peers are
 * configured alike as a rule, else 0: the extra ACK costs request/response
 * latency, and copy-mode peers gain nothing from it.
 */
static bool quickack_on(void)
{
	static int on = -1;
	int v = __atomic_load_n(&on, __ATOMIC_RELAXED);

	if (v < 0) {	/* racing first readers compute the same value */
		const char *e = getenv("XIW_QUICKACK");
		const char *m = getenv("XIW_TX_COMPLETION");
		int dflt = m && !strcmp(m, "ack");

		v = !e || !*e ? dflt : strcmp(e, "0") != 0;
		if (e && *e && strcmp(e, "0") && strcmp(e, "1"))
			xiw_log(XIW_LOG_WARN, "XIW_QUICKACK=%s: use 0 or 1; using 1", e);
		__atomic_store_n(&on, v, __ATOMIC_RELAXED);
	}
	return v;
}

/*
 * We drained the socket: have the kernel acknowledge what we read now.
 * Linux delays the ACK of a lone small segment (up to ~40 ms, longer in
 * "pingpong" mode, which it enters once we also send); the peer's ACK
 * completions (seed 000, XIW_TX_COMPLETION=ack) wait for it. TCP_QUICKACK=1
 * sends a pending ACK at once and leaves pingpong mode; the kernel does
 * not keep it (it re-enters pingpong when we send), so it is set again
 * after every drain: one setsockopt per busy-to-idle transition, not per
 * recvmsg. Costs the ACK a piggy-back on our next send could have saved:
 * in request/response traffic a pure ACK per turn (2 vCPUs, veth, medians:
 * ib_write_lat 2 B ~15 -> ~23 us, ib_send_lat ~6.6 -> ~9.0 us; bandwidth
 * unchanged). Deferring it did not pay: a progress-thread timer per drain
 * cost as much (its wakeups), and without one the drains that matter
 * (perftest's setup exchange) were not covered.
 */
static void llp_quickack(struct xiw_ksock *l)
{
	int one = 1;

	__atomic_store_n(&l->rx_owed, false, __ATOMIC_RELAXED);
	if (quickack_on())
		setsockopt(l->pfd.fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

ssize_t xiw_ksock_recv(struct xiw_ksock *l, struct iovec *iov, int n)
{
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = n };
	ssize_t r = recvmsg(l->pfd.fd, &msg, MSG_DONTWAIT);
	size_t want = 0;

	if (r > 0) {
		TSAN_RECEIVED();
		__atomic_store_n(&l->live.last_rx_ns, xiw_ksock_coarse_ns(),
				 __ATOMIC_RELAXED);
		for (int i = 0; i < n; i++)
			want += iov[i].iov_len;
		/* short: TCP returned all it had (queue and backlog empty) */
		if ((size_t)r < want)
			llp_quickack(l);
		else
			__atomic_store_n(&l->rx_owed, true, __ATOMIC_RELAXED);
		return r;
	}
	if (r < 0) {
		if (errno != EWOULDBLOCK)
			return -errno;
		if (__atomic_load_n(&l->rx_owed, __ATOMIC_RELAXED))
			llp_quickack(l);
		return -EAGAIN;
	}
	__atomic_store_n(&l->live.ended, true, __ATOMIC_RELAXED);
	pthread_mutex_lock(&l->lock);
	l->eof = true;
	llp_sync_mask_locked(l);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

void xiw_ksock_want_write(struct xiw_ksock *l, bool on)
{
	pthread_mutex_lock(&l->lock);
	l->want_write = on;
	llp_sync_mask_locked(l);
	pthread_mutex_unlock(&l->lock);
}

void xiw_ksock_pause_read(struct xiw_ksock *l, bool paused)
{
	pthread_mutex_lock(&l->lock);
	l->paused = paused;
	llp_sync_mask_locked(l);
	pthread_mutex_unlock(&l->lock);
}

void xiw_ksock_app_read(struct xiw_ksock *l, bool on)
{
	pthread_mutex_lock(&l->lock);
	l->app_read = on;
	llp_sync_mask_locked(l);
	pthread_mutex_unlock(&l->lock);
}

/* Progress thread: send a held FIN once the peer has been quiet. */
static void llp_fin_tick(void *arg)
{
	struct xiw_ksock *l = arg;
	uint64_t until;
	bool send;

	pthread_mutex_lock(&l->lock);
	if (!l->fin_held) {
		pthread_mutex_unlock(&l->lock);
		return;
	}
	send = !xiw_ksock_fin_hold(l->live.last_rx_ns, l->eof, &until) ||
	       xiw_ksock_coarse_ns() >= l->fin_until_ns;
	if (send)
		l->fin_held = false;
	pthread_mutex_unlock(&l->lock);
	if (send)
		shutdown(l->pfd.fd, SHUT_WR);
	else
		xiw_progress_timer_arm(&l->fin_timer, 5, llp_fin_tick, l);
}

/*
 * FIN after the queued bytes; held while the peer's last bytes are too
 * recent (ksock_linger.c), then sent from the progress thread.
 */
int xiw_ksock_shutdown(struct xiw_ksock *l)
{
	uint64_t until;

	if (!xiw_ksock_fin_hold(l->live.last_rx_ns, l->eof, &until))
		return shutdown(l->pfd.fd, SHUT_WR) ? -errno : 0;
	pthread_mutex_lock(&l->lock);
	if (l->fin_held) {
		pthread_mutex_unlock(&l->lock);
		return 0;
	}
	l->fin_held = true;
	l->fin_until_ns = until;
	pthread_mutex_unlock(&l->lock);
	if (xiw_progress_is_self())
		llp_fin_tick(l);
	else if (xiw_progress_run(llp_fin_tick, l))
		return shutdown(l->pfd.fd, SHUT_WR) ? -errno : 0;
	return 0;
}

/*
 * RST now: SO_LINGER 0 for the final close(), and connect(AF_UNSPEC),
 * which makes the kernel send RST right away (tcp_disconnect). No further
 * upcalls are delivered.
 */
void xiw_ksock_abort(struct xiw_ksock *l)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct sockaddr sa = { .sa_family = AF_UNSPEC };

	setsockopt(l->pfd.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	pthread_mutex_lock(&l->lock);
	l->dead = true;
	l->aborted = true;
	l->fin_held = false;
	__atomic_store_n(&l->live.ended, true, __ATOMIC_RELAXED);
	llp_unregister_locked(l);
	pthread_mutex_unlock(&l->lock);
	if (connect(l->pfd.fd, &sa, sizeof(sa)))
		xiw_log(XIW_LOG_DEBUG, "ksock: abort of fd %d: %s", l->pfd.fd,
			strerror(errno));
}

static void llp_free(void *p)
{
	struct xiw_ksock *l = p;

	xiw_ksock_live_del(&l->live);
	pthread_mutex_destroy(&l->lock);
	pthread_mutex_destroy(&l->zc.lock);
	free(l);
}

/* Progress thread, between batches or inside an upcall. */
static void llp_close_fd(void *p)
{
	struct xiw_ksock *l = p;

	lowat_del(l);
	pthread_mutex_lock(&l->lock);
	l->dead = true;
	l->cb = NULL;
	llp_unregister_locked(l);
	__atomic_store_n(&l->pfd.deleted, true, __ATOMIC_RELEASE);
	__atomic_store_n(&l->live.ended, true, __ATOMIC_RELAXED);
	l->fin_held = false;		/* the close below sends the FIN */
	pthread_mutex_unlock(&l->lock);
	xiw_progress_timer_cancel(&l->fin_timer);
	xiw_ksock_ack_untrace(l);	/* leaves the bpftool listing */
	if (l->aborted)
		close(l->pfd.fd);
	else if (!xiw_ksock_linger_close(l->pfd.fd, l->live.last_rx_ns, l->eof)) {
		xiw_ksock_drain(l->pfd.fd);
		close(l->pfd.fd);	/* FIN, no RST: nothing left unread */
	}
}

void xiw_ksock_close(struct xiw_ksock *l)
{
	if (!l)
		return;
	if (xiw_progress_is_self()) {
		llp_close_fd(l);
		if (!xiw_progress_run(llp_free, l))
			return;
		xiw_log(XIW_LOG_WARN, "ksock: out of memory, leaking a closed connection");
		return;
	}
	if (xiw_progress_sync(llp_close_fd, l))
		llp_close_fd(l);	/* no progress thread: nothing can run */
	llp_free(l);
}

int xiw_ksock_fd(const struct xiw_ksock *l)
{
	return l->pfd.fd;
}

struct xiw_ksock_zc *xiw_ksock_zc(struct xiw_ksock *l)
{
	return &l->zc;
}

struct xiw_ksock_mark *xiw_ksock_mark(struct xiw_ksock *l)
{
	return &l->mark;
}

uint32_t xiw_ksock_mss(struct xiw_ksock *l)
{
	if (l->mss == 1460)
		llp_cache_mss(l);
	return l->mss;
}

void xiw_ksock_addrs(struct xiw_ksock *l, struct sockaddr_storage *local,
		   struct sockaddr_storage *peer)
{
	socklen_t len;

	if (local) {
		memset(local, 0, sizeof(*local));
		len = sizeof(*local);
		getsockname(l->pfd.fd, (struct sockaddr *)local, &len);
	}
	if (peer) {
		memset(peer, 0, sizeof(*peer));
		len = sizeof(*peer);
		getpeername(l->pfd.fd, (struct sockaddr *)peer, &len);
	}
}

/* ----------------------------------------------------- open/listen --- */

static int tcp_socket(int family)
{
	int one = 1;
	/*
	 * The raw system call: a socket-interposing LD_PRELOAD (our
	 * libxiwsock.so, rdma-core's librspreload.so) must not take the
	 * engine's own connections for the application's.
	 */
	int fd = (int)syscall(SYS_socket, family,
			      SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	xiw_ksock_apply_cc(fd);	/* accepted sockets inherit the listener's */
	return fd;
}

int xiw_ksock_connect(const struct sockaddr *src, const struct sockaddr *dst,
		      const struct xiw_llp_cb *cb, void *arg,
		      struct xiw_llp **out)
{
	socklen_t dlen = xiw_ksock_sa_len(dst);
	struct xiw_ksock *l;
	int fd, err;

	if (!dlen)
		return -EAFNOSUPPORT;
	fd = tcp_socket(dst->sa_family);
	if (fd < 0)
		return fd;
	if (src && bind(fd, src, xiw_ksock_sa_len(src))) {
		err = -errno;
		goto close_fd;
	}
	if (connect(fd, dst, dlen) && errno != EINPROGRESS) {
		err = -errno;
		goto close_fd;
	}
	l = llp_new(fd, true);
	if (!l) {
		err = -ENOMEM;
		goto close_fd;
	}
	*out = &l->base;
	xiw_ksock_set_owner(l, cb, arg);	/* registers for EPOLLOUT */
	return 0;
close_fd:
	close(fd);
	return err;
}

/* An accepted connection becomes an llp for @fn (progress thread);
 * @lport: our listener's port (network order; 0: adopted). */
static int accept_llp(int fd, uint16_t lport, xiw_ksock_accept_fn fn, void *arg)
{
	int one = 1;
	struct xiw_ksock *l;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	l = llp_new(fd, false);
	if (!l)
		return -ENOMEM;
	l->live.lport = lport;	/* its listener's socket may be kept for it */
	llp_cache_mss(l);
	fn(arg, &l->base);
	return 0;
}

static void listener_accept_one(struct xiw_ksock_listener *ls, int fd)
{
	if (accept_llp(fd, ls->port, ls->fn, ls->arg)) {
		xiw_log(XIW_LOG_WARN, "ksock: out of memory, dropping an incoming connection");
		close(fd);
	}
}

/**
 * xiw_ksock_adopt() - an accepted TCP connection @fd that someone else
 * accepted (the sockets preload, which looked at its first bytes) joins
 * the engine as if our listener had accepted it: @fn(@arg, llp) runs now.
 * Progress thread. Return: 0 (@fd is the llp's), or -errno (@fd untouched).
 */
int xiw_ksock_adopt(int fd, xiw_ksock_accept_fn fn, void *arg)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC))
		return -errno;
	return accept_llp(fd, 0, fn, arg);
}

static void listener_event(void *p, uint32_t ev)
{
	struct xiw_ksock_listener *ls = p;

	(void)ev;
	while (!__atomic_load_n(&ls->pfd.deleted, __ATOMIC_ACQUIRE)) {
		int fd = accept4(ls->pfd.fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				xiw_log(XIW_LOG_WARN, "ksock: accept: %s (raise the fd limit)",
					strerror(errno));
			return;
		}
		listener_accept_one(ls, fd);
	}
}

static int listen_socket(const struct sockaddr *addr, int backlog,
			 void (*pre)(const struct sockaddr_storage *, void *),
			 void *pre_arg, struct sockaddr_storage *bound)
{
	socklen_t len = xiw_ksock_sa_len(addr);
	struct sockaddr_storage b;
	int one = 1, fd, err;

	if (!len)
		return -EAFNOSUPPORT;
	/* a socket kept listening since our last close of this address:
	 * connections it queued meanwhile are served (ksock_relisten.c) */
	fd = xiw_ksock_relisten_take(addr);
	if (fd < 0) {
		fd = tcp_socket(addr->sa_family);
		if (fd < 0)
			return fd;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, addr, len))
			goto fail;
	}
	len = sizeof(b);
	if (getsockname(fd, (struct sockaddr *)&b, &len))
		goto fail;
	if (pre)
		pre(&b, pre_arg);
	if (listen(fd, backlog > 0 ? backlog : 128))
		goto fail;
	if (bound)
		*bound = b;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

int xiw_ksock_listen(const struct sockaddr *addr, int backlog,
		     xiw_ksock_accept_fn fn, void *arg,
		     struct xiw_ksock_listener **out,
		     struct sockaddr_storage *bound)
{
	return xiw_ksock_listen_pre(addr, backlog, fn, arg, NULL, NULL, out,
				    bound);
}

int xiw_ksock_listen_pre(const struct sockaddr *addr, int backlog,
			 xiw_ksock_accept_fn fn, void *arg,
			 void (*pre)(const struct sockaddr_storage *bound, void *pre_arg),
			 void *pre_arg, struct xiw_ksock_listener **out,
			 struct sockaddr_storage *bound)
{
	struct xiw_ksock_listener *ls;
	struct sockaddr_storage b;
	int fd = listen_socket(addr, backlog, pre, pre_arg, &b);
	int err;

	if (fd < 0)
		return fd;
	ls = calloc(1, sizeof(*ls));
	if (!ls) {
		close(fd);
		return -ENOMEM;
	}
	if (bound)
		*bound = b;
	ls->port = b.ss_family == AF_INET6 ?
		   ((struct sockaddr_in6 *)&b)->sin6_port :
		   ((struct sockaddr_in *)&b)->sin_port;
	ls->pfd.fd = fd;
	ls->pfd.cb = listener_event;
	ls->pfd.arg = ls;
	ls->fn = fn;
	ls->arg = arg;
	err = xiw_progress_fd_add(&ls->pfd, EPOLLIN);
	if (err) {
		close(fd);
		free(ls);
		return err;
	}
	*out = ls;
	return 0;
}

static void listener_close_fd(void *p)
{
	struct xiw_ksock_listener *ls = p;

	xiw_progress_fd_del(&ls->pfd);
	if (!xiw_ksock_relisten_keep(ls->pfd.fd))
		close(ls->pfd.fd);
}

void xiw_ksock_listener_close(struct xiw_ksock_listener *ls)
{
	if (!ls)
		return;
	if (xiw_progress_is_self()) {
		listener_close_fd(ls);
		if (xiw_progress_run(free, ls))
			xiw_log(XIW_LOG_WARN, "ksock: out of memory, leaking a listener");
		return;
	}
	if (xiw_progress_sync(listener_close_fd, ls))
		listener_close_fd(ls);
	free(ls);
}
