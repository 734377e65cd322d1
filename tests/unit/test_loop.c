// SPDX-License-Identifier: MIT
/*
 * Two QPs connected over 127.0.0.1 through the real CM and ksock transport:
 * SEND/RECV, RDMA WRITE and RDMA READ from 1 B to 1 MB with several SGEs,
 * receives posted late (the receive side pauses), many READs beyond ORD,
 * a WRITE ping-pong that waits on memory (the poll linger), a readable
 * upcall skipped while another thread runs the receive machine,
 * and a TERMINATE (WRITE to an invalid STag) that leaves both sides with
 * error/flush completions. The whole suite runs once per MPA mode (CRC,
 * markers, small FPDUs, MPA v1) and once with send completions on peer
 * ACKs (XIW_TX_COMPLETION=ack), in a child process each, because the CM
 * and the engine read their knobs once per process.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "xiw_obj.h"
#include "xiw_sockops.h"

#define BUF_SIZE (4u << 20)	/* [0, 2 MB) source, [2 MB, 4 MB) sink */
#define SINK (2u << 20)
#define IOVA_BASE 0x7000000000ull

struct side {
	const char *name;
	struct xiw_pd *pd;
	struct xiw_cq *scq, *rcq;
	struct xiw_qp *qp;
	struct xiw_mr *mr;
	struct xiw_mr *atom;	/* the same buffer, REMOTE_ATOMIC too */
	uint8_t *buf;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int established, disconnected, failed, disc_status;
	struct xiw_cm_conn *pending;
};

static struct side srv = { .name = "server" }, cli = { .name = "client" };
static struct side srv2 = { .name = "server 2" }, cli2 = { .name = "client 2" };
static struct xiw_cm_listener *lst;
static struct sockaddr_storage bound;

/* ------------------------------------------------------------ helpers --- */

static void on_event(void *arg, const struct xiw_cm_event *ev)
{
	struct side *s = arg;

	pthread_mutex_lock(&s->lock);
	switch (ev->type) {
	case XIW_CM_CONNECT_REQUEST:
		s->pending = ev->conn;
		break;
	case XIW_CM_ESTABLISHED:
		s->established++;
		break;
	case XIW_CM_DISCONNECTED:
		s->disconnected++;
		s->disc_status = ev->status;
		break;
	default:
		s->failed++;
		break;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Wait until *field >= want (10 s). */
static void wait_for(struct side *s, int *field, int want)
{
	struct timespec ts;
	int ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&s->lock);
	while (*field < want &&
	       pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
		;
	ok = *field >= want;
	pthread_mutex_unlock(&s->lock);
	if (!ok)
		fail_msg("%s: event wait timed out", s->name);
}

static struct xiw_cm_conn *wait_pending(struct side *s)
{
	struct xiw_cm_conn *c;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&s->lock);
	while (!s->pending &&
	       pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
		;
	c = s->pending;
	pthread_mutex_unlock(&s->lock);
	if (!c)
		fail_msg("no CONNECT_REQUEST");
	return c;
}

static void side_init(struct side *s)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 256, .max_recv_wr = 256,
			 .max_send_sge = XIW_MAX_SGE, .max_recv_sge = XIW_MAX_SGE,
			 .max_inline_data = 128 },
	};
	struct ibv_qp_attr ia = { .qp_state = IBV_QPS_INIT };

	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->established = s->disconnected = s->failed = 0;
	s->pending = NULL;
	s->pd = xiw_pd_alloc(NULL, NULL);
	s->scq = xiw_cq_create(NULL, 1024, NULL, NULL);
	s->rcq = xiw_cq_create(NULL, 1024, NULL, NULL);
	assert_non_null(s->pd);
	assert_non_null(s->scq);
	assert_non_null(s->rcq);
	a.send_cq = &s->scq->ibv;
	a.recv_cq = &s->rcq->ibv;
	s->qp = xiw_qp_create(s->pd, &a);
	assert_non_null(s->qp);
	assert_int_equal(xiw_qp_modify(s->qp, &ia, IBV_QP_STATE), 0);
	if (!s->buf)
		s->buf = malloc(BUF_SIZE);
	s->mr = xiw_mr_reg(s->pd, s->buf, BUF_SIZE, IOVA_BASE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	assert_non_null(s->mr);
	s->atom = xiw_mr_reg(s->pd, s->buf, BUF_SIZE, IOVA_BASE,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(s->atom);
}

static void side_fini(struct side *s)
{
	if (s->qp)	/* NULL: the test destroyed it */
		assert_int_equal(xiw_qp_destroy(s->qp), 0);
	s->qp = NULL;
	assert_int_equal(xiw_mr_dereg(s->mr), 0);
	assert_int_equal(xiw_mr_dereg(s->atom), 0);
	assert_int_equal(xiw_cq_destroy(s->scq), 0);
	assert_int_equal(xiw_cq_destroy(s->rcq), 0);
	assert_int_equal(xiw_pd_free(s->pd), 0);
}

/* Set up @s and @c and connect them (the listener's requests go to
 * srv.pending, whichever side accepts). */
static void pair_up(struct side *c, struct side *s)
{
	side_init(s);
	side_init(c);
	pthread_mutex_lock(&srv.lock);
	srv.pending = NULL;
	pthread_mutex_unlock(&srv.lock);
	assert_int_equal(xiw_cm_connect(c->qp, NULL, (struct sockaddr *)&bound,
					"hi", 2, 8, 8, on_event, c), 0);
	assert_int_equal(xiw_cm_accept(wait_pending(&srv), s->qp, NULL, 0, 8,
				       8, on_event, s), 0);
	wait_for(s, &s->established, 1);
	wait_for(c, &c->established, 1);
}

static void pair_down(struct side *c, struct side *s)
{
	xiw_cm_disconnect(c->qp);
	wait_for(c, &c->disconnected, 1);
	wait_for(s, &s->disconnected, 1);
	side_fini(c);
	side_fini(s);
}

static int setup(void **state)
{
	(void)state;
	pair_up(&cli, &srv);
	return 0;
}

/* The client's QP was destroyed by the test: the server sees the end. */
static int teardown_cli_destroyed(void **state)
{
	(void)state;
	wait_for(&srv, &srv.disconnected, 1);
	side_fini(&cli);
	side_fini(&srv);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pair_down(&cli, &srv);
	return 0;
}

/* Poll @cq until a WC comes (10 s), sleeping @nap_us between empty polls
 * (0: spin, a poller that never naps). */
static void poll_wc_every(struct xiw_cq *cq, struct ibv_wc *wc,
			  unsigned int nap_us)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (xiw_cq_poll(cq, 1, wc) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			fail_msg("no completion within 10 s");
		if (nap_us)
			usleep(nap_us);
	}
}

static void poll_wc(struct xiw_cq *cq, struct ibv_wc *wc)
{
	poll_wc_every(cq, wc, 50);
}

static void expect_wc(struct xiw_cq *cq, uint64_t id, enum ibv_wc_opcode op,
		      uint32_t len)
{
	struct ibv_wc wc;

	poll_wc(cq, &wc);
	if (wc.status != IBV_WC_SUCCESS)
		fail_msg("wr_id %#llx: status %d", (unsigned long long)wc.wr_id,
			 wc.status);
	assert_int_equal(wc.wr_id, id);
	assert_int_equal(wc.opcode, op);
	if (op == IBV_WC_RECV || op == IBV_WC_RDMA_READ)
		assert_int_equal(wc.byte_len, len);
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* Split [off, off+len) of @s's buffer into @n SGEs of uneven size. */
static int sges(struct side *s, uint32_t off, uint32_t len, int n,
		struct ibv_sge *sg)
{
	uint32_t left = len;

	if (n > (int)len)
		n = len ? (int)len : 1;
	for (int i = 0; i < n; i++) {
		uint32_t take = i == n - 1 ? left : left / (uint32_t)(n - i) / 2 + 1;

		if (take > left)
			take = left;
		sg[i] = (struct ibv_sge){ (uintptr_t)s->buf + off, take,
					  s->mr->ibv.lkey };
		off += take;
		left -= take;
	}
	return n;
}

static void post_recv(struct side *s, uint64_t id, uint32_t off, uint32_t len,
		      int n)
{
	struct ibv_sge sg[XIW_MAX_SGE];
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = sg }, *bad;

	wr.num_sge = sges(s, off, len, n, sg);
	assert_int_equal(xiw_post_recv(s->qp, &wr, &bad), 0);
}

static void post(struct side *s, uint64_t id, enum ibv_wr_opcode op,
		 uint32_t off, uint32_t len, int n, uint64_t raddr,
		 uint32_t rkey, int flags)
{
	struct ibv_sge sg[XIW_MAX_SGE];
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = sg, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED | flags };
	struct ibv_send_wr *bad;

	wr.num_sge = sges(s, off, len, n, sg);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(xiw_post_send(s->qp, &wr, &bad), 0);
}

static const uint32_t sizes[] = { 1, 3, 100, 1448, 4096, 9000, 65536 + 7,
				  300000, 1u << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void check_sink(struct side *from, struct side *to, uint32_t len)
{
	if (memcmp(from->buf, to->buf + SINK, len))
		fail_msg("data mismatch (%u bytes, %s -> %s)", len, from->name,
			 to->name);
}

/* -------------------------------------------------------------- tests --- */

static void send_one(struct side *a, struct side *b, uint32_t len, int ns,
		     int nr, unsigned seed)
{
	fill(a->buf, len, seed);
	memset(b->buf + SINK, 0, len + 16);
	post_recv(b, 1000 + seed, SINK, len + 16, nr);
	post(a, 2000 + seed, IBV_WR_SEND, 0, len, ns, 0, 0, 0);
	expect_wc(a->scq, 2000 + seed, IBV_WC_SEND, len);
	expect_wc(b->rcq, 1000 + seed, IBV_WC_RECV, len);
	check_sink(a, b, len);
}

static void test_send_recv(void **state)
{
	(void)state;
	for (unsigned i = 0; i < NSIZES; i++)
		send_one(&cli, &srv, sizes[i], 1 + i % XIW_MAX_SGE,
			 1 + (i * 3) % XIW_MAX_SGE, i);
	for (unsigned i = 0; i < NSIZES; i += 2)	/* and back */
		send_one(&srv, &cli, sizes[i], 2, 3, 50 + i);
}

/* A WRITE is placed before a later SEND arrives (ordering): check then. */
static void write_one(struct side *a, struct side *b, uint32_t len, int ns,
		      unsigned seed)
{
	fill(a->buf, len, seed);
	memset(b->buf + SINK, 0, len);
	post(a, 3000 + seed, IBV_WR_RDMA_WRITE, 0, len, ns,
	     IOVA_BASE + SINK, b->mr->ibv.rkey, 0);
	expect_wc(a->scq, 3000 + seed, IBV_WC_RDMA_WRITE, len);
	post_recv(b, 4000 + seed, SINK + (2u << 20) - 64, 64, 1);
	post(a, 5000 + seed, IBV_WR_SEND, BUF_SIZE / 2 - 64, 0, 1, 0, 0, 0);
	expect_wc(a->scq, 5000 + seed, IBV_WC_SEND, 0);
	expect_wc(b->rcq, 4000 + seed, IBV_WC_RECV, 0);
	check_sink(a, b, len);
}

static void test_write(void **state)
{
	(void)state;
	for (unsigned i = 0; i < NSIZES; i++)
		write_one(&cli, &srv, sizes[i], 1 + i % XIW_MAX_SGE, i);
	write_one(&srv, &cli, 70000, 3, 99);
}

/*
 * Ack mode (XIW_TX_COMPLETION=ack, seed 000; the suite's last mode): a
 * thread polling an empty CQ completes its acknowledged WRs itself
 * (xiw_txack_poll) instead of waiting for the progress thread's scan.
 * 50 signalled 64 B WRITEs, one at a time, each polled for: every WC
 * comes, in order, and at least one came from the poller's own check. On
 * loopback the peer's ACK is usually in when sendmsg returns, while the
 * scan the post kicks needs a thread wake-up first; without the poller's
 * check every one comes from the scan. Skipped in copy mode.
 */
static void test_ack_inline(void **state)
{
	uint64_t hits0 = xiw_txack_inline_hits();

	(void)state;
	if (!xiw_tx_config()->ack)
		skip();
	fill(cli.buf, 64 * 50, 77);
	memset(srv.buf + SINK, 0, 64 * 50);
	for (unsigned i = 0; i < 50; i++) {
		post(&cli, 7000 + i, IBV_WR_RDMA_WRITE, 64 * i, 64, 1,
		     IOVA_BASE + SINK + 64 * i, srv.mr->ibv.rkey, 0);
		expect_wc(cli.scq, 7000 + i, IBV_WC_RDMA_WRITE, 64);
	}
	post_recv(&srv, 7100, SINK + (2u << 20) - 64, 64, 1);
	post(&cli, 7101, IBV_WR_SEND, BUF_SIZE / 2 - 64, 0, 1, 0, 0, 0);
	expect_wc(cli.scq, 7101, IBV_WC_SEND, 0);
	expect_wc(srv.rcq, 7100, IBV_WC_RECV, 0);	/* WRITEs placed */
	check_sink(&cli, &srv, 64 * 50);
	assert_true(xiw_txack_inline_hits() > hits0);
}

/* WCs queued in @cq, without polling (a poll would check ACKs itself). */
static uint32_t cq_queued_now(struct xiw_cq *cq)
{
	uint32_t n;

	pthread_mutex_lock(&cq->lock);
	n = cq->head - cq->tail;
	pthread_mutex_unlock(&cq->lock);
	return n;
}

#define POLLER_WRS 1024
#define POLLER_WINDOW 16
#define POLLER_LEN 16384u

/* Wait (10 s at most) without polling until one WC is queued on cli's
 * send CQ; fail if it does not come. */
static void wait_one_queued(void)
{
	for (int i = 0; i < 10000 && !cq_queued_now(cli.scq); i++)
		usleep(1000);
	assert_int_equal(cq_queued_now(cli.scq), 1);
}

/*
 * One step of the ack-mode tests' streams: post signalled 16 KB WRITEs
 * (ids 9000 + n) until POLLER_WINDOW are in flight, if @more; then spin
 * for the next WC and check that it is the next in order and good.
 */
static void stream_step(uint32_t *posted, uint32_t *done, bool more)
{
	struct ibv_wc wc;

	for (; *posted - *done < POLLER_WINDOW && more; (*posted)++)
		post(&cli, 9000 + *posted, IBV_WR_RDMA_WRITE,
		     POLLER_LEN * (*posted % POLLER_WINDOW), POLLER_LEN, 1,
		     IOVA_BASE + SINK, srv.mr->ibv.rkey, 0);
	poll_wc_every(cli.scq, &wc, 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 9000 + *done);
	(*done)++;
}

/*
 * Ack mode: a thread that keeps polling its CQ serves the ACK checks of
 * its QP itself (xiw_txack_poll; qp_ack_poller in xiw_txack.c), so the
 * progress thread stays out of the stream: no watermark, no sockops
 * event, no scan per batch (each a wake-up that on 2 vCPUs preempts the
 * poller or the datamover). 1024 signalled 16 KB WRITEs, 16 in flight,
 * every WC spun for in order: fewer scans asked for by posts or events
 * than one per 16 WRs plus one per nap of the spinning thread (measured:
 * 1 scan, 0 naps; with 256 WRs, 1-10, and 10 with two busy loops on the
 * 2 vCPUs: other QPs' events count too; 134-210 when the scan ignores
 * the poller). Then the thread stops polling and hands back
 * (xiw_cq_rx_handoff, as before a nap or a channel wait): one more WRITE
 * must complete with nobody polling and, with the sockops tracer on, from
 * its event, not from the backstop timer. Skipped in copy mode.
 */
static void test_ack_poller_stream(void **state)
{
	uint64_t scans0 = xiw_txack_woken_scans(), scans, naps;
	uint64_t naps0 = atomic_load(&cli.scq->wait_sleeps);
	uint32_t posted = 0, done = 0;
	unsigned long bs0;
	struct ibv_wc wc;

	(void)state;
	if (!xiw_tx_config()->ack)
		skip();
	fill(cli.buf, POLLER_LEN * POLLER_WINDOW, 31);
	while (done < POLLER_WRS)
		stream_step(&posted, &done, posted < POLLER_WRS);
	scans = xiw_txack_woken_scans() - scans0;
	naps = atomic_load(&cli.scq->wait_sleeps) - naps0;
	printf("    %u WRs spun for: %llu scans for posts or events, %llu naps, sockops tracer %s\n",
	       POLLER_WRS, (unsigned long long)scans, (unsigned long long)naps,
	       cli.qp->ack_traced ? "on" : "off");
	/* a nap hands back: its WRs' watermark may make one event each */
	assert_true(scans < POLLER_WRS / POLLER_WINDOW + naps);

	/* hand back, then wait without polling */
	bs0 = xiw_txack_backstop_hits();
	post(&cli, 9999, IBV_WR_RDMA_WRITE, 0, POLLER_LEN, 1,
	     IOVA_BASE + SINK, srv.mr->ibv.rkey, 0);
	xiw_cq_rx_handoff(cli.scq, true);
	wait_one_queued();
	if (cli.qp->ack_traced)
		assert_int_equal(xiw_txack_backstop_hits(), bs0);
	poll_wc_every(cli.scq, &wc, 0);
	assert_int_equal(wc.wr_id, 9999);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);

	/* a poller that just stops polling (no hand-back): the QP, still
	 * listed, had no watermark armed for its WR, so when the backstop
	 * timer completes it that is no ACK the tracer missed */
	bs0 = xiw_txack_backstop_hits();
	assert_int_equal(xiw_cq_poll(cli.scq, 1, &wc), 0);	/* serves */
	post(&cli, 9998, IBV_WR_RDMA_WRITE, 0, POLLER_LEN, 1,
	     IOVA_BASE + SINK, srv.mr->ibv.rkey, 0);
	wait_one_queued();
	assert_int_equal(xiw_txack_backstop_hits(), bs0);
	poll_wc_every(cli.scq, &wc, 0);
	assert_int_equal(wc.wr_id, 9998);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* post one 16 KB WRITE, hand the CQ back as a blocking waiter does, and
 * wait without polling until its WC is queued */
static void ack_blocked_write(uint64_t id)
{
	struct ibv_wc wc;

	post(&cli, id, IBV_WR_RDMA_WRITE, 0, POLLER_LEN, 1,
	     IOVA_BASE + SINK, srv.mr->ibv.rkey, 0);
	xiw_cq_rx_handoff(cli.scq, true);
	wait_one_queued();
	assert_int_equal(xiw_cq_poll(cli.scq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, id);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

/* the QP's callbacks are off (xiw_txack_cb.c); written under tx_lock */
static bool ack_cb_off(void)
{
	return __atomic_load_n(&cli.qp->ack_cb_off, __ATOMIC_RELAXED);
}

/*
 * Ack mode, the tracer's per-ACK callbacks (xiw_txack_cb.c): a stream
 * whose ACKs a spinning poller serves has them switched off once their
 * 10 ms hold passed (here: at least 50 ms and 256 WRs, naps included;
 * the stream goes on until they are off, 10 s at most); a waiter that
 * blocks switches them on, and its WR, sent while they were off,
 * completes with nobody polling, by the poll timer, not counted as a
 * miss of the backstop; the next blocked WR completes the same way with
 * them on. While they are off, a poller that hands back for naps between
 * its WRs makes no scan. Skipped in copy mode, without the tracer or its
 * switch.
 */
static void test_ack_cb_switch(void **state)
{
	uint64_t offs0 = xiw_txack_cb_switches(false), ons, acks, woken;
	uint32_t posted = 0, done = 0;
	struct xiw_sk_ack st;
	int fd;
	struct timespec t0;
	unsigned long bs0;
	struct ibv_wc wc;
	bool more = true;

	(void)state;
	if (!xiw_tx_config()->ack)
		skip();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (done < posted || more) {
		stream_step(&posted, &done, more);
		more = done < 256 || ms_since(&t0) < 50 ||
		       (!ack_cb_off() && cli.qp->ack_traced &&
			!cli.qp->ack_cb_fixed && ms_since(&t0) < 10000);
	}
	if (!cli.qp->ack_traced || cli.qp->ack_cb_fixed)
		skip();	/* not root, or a kernel without the switch */
	assert_true(ack_cb_off());
	assert_true(xiw_txack_cb_switches(false) > offs0);
	/* off in the kernel too: more polled WRs, no callback saw an ACK */
	fd = xiw_llp_poll_fd(cli.qp->llp);
	assert_int_equal(xiw_sockops_state(fd, &st), 0);
	acks = st.acks;
	for (uint32_t i = 0; i < POLLER_WINDOW; i++) {
		post(&cli, 8000 + i, IBV_WR_RDMA_WRITE, POLLER_LEN * i,
		     POLLER_LEN, 1, IOVA_BASE + SINK, srv.mr->ibv.rkey, 0);
		poll_wc_every(cli.scq, &wc, 0);
		assert_int_equal(wc.wr_id, 8000 + i);
	}
	assert_int_equal(xiw_sockops_state(fd, &st), 0);
	if (ack_cb_off())	/* else a 10 ms gap made the scan switch */
		assert_int_equal(st.acks, acks);
	/* a poller that naps between WRs comes back and checks itself: its
	 * posts wake no scan (a kick each before, see xiw_txack_watch) */
	woken = xiw_txack_woken_scans();
	for (uint32_t i = 0; i < POLLER_WINDOW; i++) {
		xiw_cq_rx_handoff(cli.scq, false);	/* about to nap */
		post(&cli, 7000 + i, IBV_WR_RDMA_WRITE, POLLER_LEN * i,
		     POLLER_LEN, 1, IOVA_BASE + SINK, srv.mr->ibv.rkey, 0);
		poll_wc_every(cli.scq, &wc, 0);
		assert_int_equal(wc.wr_id, 7000 + i);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	if (ack_cb_off())
		assert_int_equal(xiw_txack_woken_scans(), woken);

	bs0 = xiw_txack_backstop_hits();
	ons = xiw_txack_cb_switches(true);
	ack_blocked_write(9999);
	assert_false(ack_cb_off());
	assert_int_equal(xiw_txack_cb_switches(true), ons + 1);
	/* on in the kernel too: the next one's ACK runs the program (the
	 * socket's count of callbacks that saw an ACK) */
	assert_int_equal(xiw_sockops_state(fd, &st), 0);
	acks = st.acks;
	ack_blocked_write(9998);
	assert_false(ack_cb_off());	/* a block holds them on */
	assert_int_equal(xiw_sockops_state(fd, &st), 0);
	assert_true(st.acks > acks);
	assert_int_equal(xiw_txack_backstop_hits(), bs0);
}

/* One side of a WRITE ping-pong (test_write_pingpong), in its own thread. */
struct pp_side {
	struct side *me, *peer;
	bool first;
	pthread_t tid;
	const char *err;	/* why it stopped, NULL: all rounds done */
};

#define PP_ROUNDS 64

static bool pp_wait_byte(struct side *s, uint8_t want)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (__atomic_load_n(&s->buf[SINK], __ATOMIC_ACQUIRE) != want) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			return false;
	}
	return true;
}

static const char *pp_write(struct pp_side *p, uint8_t v)
{
	struct ibv_sge sg = { (uintptr_t)p->me->buf + v, 1, p->me->mr->ibv.lkey };
	struct ibv_send_wr wr = { .wr_id = v, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int n;

	p->me->buf[v] = v;
	wr.wr.rdma.remote_addr = IOVA_BASE + SINK;
	wr.wr.rdma.rkey = p->peer->mr->ibv.rkey;
	if (xiw_post_send(p->me->qp, &wr, &bad))
		return "post_send failed";
	while ((n = xiw_cq_poll(p->me->scq, 1, &wc)) == 0)
		;
	if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.wr_id != v)
		return "bad WRITE completion";
	return NULL;
}

static void *pp_main(void *arg)
{
	struct pp_side *p = arg;

	for (unsigned r = 1; r <= PP_ROUNDS && !p->err; r++) {
		if (!p->first && !pp_wait_byte(p->me, (uint8_t)r))
			p->err = "no WRITE from the peer within 10 s";
		else if (!(p->err = pp_write(p, (uint8_t)r)) && p->first &&
			 !pp_wait_byte(p->me, (uint8_t)r))
			p->err = "no answer within 10 s";
	}
	return NULL;
}

/*
 * A WRITE ping-pong whose sides wait for the answer on memory, as
 * ib_write_lat does: each side writes one byte (the round number) into
 * the other's buffer and spins until the answer is there. Every round
 * completes, and after the first rounds the poller of a WRITE's CQE read
 * the answer itself before returning (the poll linger, xiw_cq.c; main()
 * sets XIW_POLL_LINGER_US to 50 ms so a busy machine cannot outlast it).
 * Fails when the linger is off.
 */
static void test_write_pingpong(void **state)
{
	struct pp_side a = { .me = &cli, .peer = &srv, .first = true };
	struct pp_side b = { .me = &srv, .peer = &cli };
	uint64_t hits0 = xiw_cq_linger_hits();

	(void)state;
	cli.buf[SINK] = 0;
	srv.buf[SINK] = 0;
	assert_int_equal(pthread_create(&b.tid, NULL, pp_main, &b), 0);
	assert_int_equal(pthread_create(&a.tid, NULL, pp_main, &a), 0);
	assert_int_equal(pthread_join(a.tid, NULL), 0);
	assert_int_equal(pthread_join(b.tid, NULL), 0);
	if (a.err || b.err)
		fail_msg("ping-pong: client %s, server %s", a.err ? a.err : "ok",
			 b.err ? b.err : "ok");
	assert_true(xiw_cq_linger_hits() > hits0);
}

/*
 * A pattern that only looks like a WRITE ping-pong: the server SENDs, the
 * client answers each SEND with a WRITE, but the server sends its next
 * SEND only after the client's poll returned (one thread drives both
 * here). Every linger then ends without the answer; each such miss
 * doubles the streak the next linger needs (4, 8, 16, 32), so 40 rounds
 * cost 3 lingers, not 10 (one per 4 rounds). Every WRITE still completes.
 */
static void test_linger_backoff(void **state)
{
	uint64_t miss0 = xiw_cq_linger_misses(), misses;

	(void)state;
	for (unsigned r = 0; r < 40; r++) {
		post_recv(&cli, 8000 + r, SINK, 64, 1);
		post(&srv, 8100 + r, IBV_WR_SEND, 0, 8, 1, 0, 0, 0);
		expect_wc(srv.scq, 8100 + r, IBV_WC_SEND, 8);
		expect_wc(cli.rcq, 8000 + r, IBV_WC_RECV, 8);
		post(&cli, 8200 + r, IBV_WR_RDMA_WRITE, 0, 8, 1,
		     IOVA_BASE + SINK, srv.mr->ibv.rkey, 0);
		expect_wc(cli.scq, 8200 + r, IBV_WC_RDMA_WRITE, 8);
	}
	misses = xiw_cq_linger_misses() - miss0;
	if (misses < 1 || misses > 4)
		fail_msg("%llu lingers missed in 40 rounds, want 1-4",
			 (unsigned long long)misses);
}

static void read_one(struct side *a, struct side *b, uint32_t len, int ns,
		     unsigned seed)
{
	fill(b->buf, len, seed);
	memset(a->buf + SINK, 0, len);
	post(a, 6000 + seed, IBV_WR_RDMA_READ, SINK, len, ns, IOVA_BASE,
	     b->mr->ibv.rkey, 0);
	expect_wc(a->scq, 6000 + seed, IBV_WC_RDMA_READ, len);
	check_sink(b, a, len);
}

static void test_read(void **state)
{
	(void)state;
	for (unsigned i = 0; i < NSIZES; i++)
		read_one(&cli, &srv, sizes[i], 1 + (i + 2) % XIW_MAX_SGE, i);
	read_one(&srv, &cli, 123457, 5, 77);
}

/* Many WRs in flight: READs beyond ORD queue, SENDs and WRITEs mix in. */
static void test_pipeline(void **state)
{
	enum { N = 64, LEN = 8192 };

	(void)state;
	fill(srv.buf, N * LEN, 7);
	fill(cli.buf, N * LEN, 8);
	for (int i = 0; i < N; i++)
		post_recv(&srv, 100 + i, SINK + i * LEN, LEN, 2);
	for (int i = 0; i < N; i++) {
		post(&cli, 200 + i, IBV_WR_RDMA_READ, SINK + i * LEN, LEN, 1,
		     IOVA_BASE + i * LEN, srv.mr->ibv.rkey, 0);
		post(&cli, 300 + i, IBV_WR_SEND, i * LEN, LEN, 3, 0, 0, 0);
	}	/* 2 * N WRs fit the SQ (256) */
	for (int i = 0; i < N; i++) {	/* send CQEs in posting order */
		expect_wc(cli.scq, 200 + i, IBV_WC_RDMA_READ, LEN);
		expect_wc(cli.scq, 300 + i, IBV_WC_SEND, LEN);
	}
	for (int i = 0; i < N; i++)
		expect_wc(srv.rcq, 100 + i, IBV_WC_RECV, LEN);
	assert_memory_equal(cli.buf + SINK, srv.buf, N * LEN);
	assert_memory_equal(srv.buf + SINK, cli.buf, N * LEN);
}

/* @s's QP holds no TX batch (tx_lock) and no receive staging buffer
 * (rx_lock), waiting up to 5 s for the threads that sent or received the
 * last bytes to give them back. */
static bool qp_batchless(struct side *s)
{
	for (int i = 0; i < 5000; i++) {
		bool none;

		pthread_mutex_lock(&s->qp->tx_lock);
		none = !s->qp->b;
		pthread_mutex_unlock(&s->qp->tx_lock);
		pthread_mutex_lock(&s->qp->rx_lock);
		none = none && !s->qp->stg;
		pthread_mutex_unlock(&s->qp->rx_lock);
		if (none)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * Memory per idle QP (issue 11): a TX batch is lent only while framed
 * bytes wait, including across short sends of a 1 MB WRITE and a READ
 * pipeline, and a receive staging buffer only while it holds bytes
 * (runs of small FPDUs: the READ requests and SENDs of the pipeline);
 * afterwards neither QP holds one, and the data is right. The
 * READ queues are sized to the negotiated ORD/IRD + 1 for the RTR: 8 + 1
 * -> 16 entries, or 1 + 1 -> 2 with MPA v1 (RFC 6581 §5 assumes 1/1).
 */
static void test_idle_qp_memory(void **state)
{
	uint32_t want = cli.qp->ord == 8 ? 16 : 2;

	(void)state;
	assert_true(cli.qp->ord == 8 || cli.qp->ord == 1);
	assert_int_equal(cli.qp->orq_mask + 1, want);
	assert_int_equal(srv.qp->irq_mask + 1, srv.qp->ird == 8 ? 16 : 2);
	write_one(&cli, &srv, 1u << 20, 4, 11);
	read_one(&cli, &srv, 300000, 3, 12);
	test_pipeline(state);
	assert_true(qp_batchless(&cli));
	assert_true(qp_batchless(&srv));
	write_one(&srv, &cli, 70000, 2, 13);	/* a QP borrows again */
	assert_true(qp_batchless(&srv));
}

/*
 * Hundreds of small FPDUs back to back (receive staging, issue 11): SENDs
 * of 1..200 bytes and small WRITEs, so the staging buffer's refills cut
 * the stream at every kind of place (header, payload, trailer); every
 * byte must land where its WR says, in order.
 */
static void test_small_burst(void **state)
{
	enum { N = 200, SLOT = 256 };

	(void)state;
	fill(cli.buf, N * SLOT, 21);
	memset(srv.buf + SINK, 0, 2 * N * SLOT);
	for (int i = 0; i < N; i++)
		post_recv(&srv, 7000 + i, SINK + i * SLOT, SLOT, 1 + i % 3);
	for (int i = 0; i < N; i++) {
		uint32_t len = 1 + (uint32_t)(i * 37) % 200;

		if (i % 4 == 0)	/* a WRITE before every 4th SEND */
			post(&cli, 9000 + i, IBV_WR_RDMA_WRITE, i * SLOT, 8 + i % 50,
			     1, IOVA_BASE + SINK + N * SLOT + i * SLOT, srv.mr->ibv.rkey, 0);
		post(&cli, 8000 + i, IBV_WR_SEND, i * SLOT, len, 1 + i % 2, 0, 0, 0);
	}
	for (int i = 0; i < N; i++) {
		uint32_t len = 1 + (uint32_t)(i * 37) % 200;

		if (i % 4 == 0)
			expect_wc(cli.scq, 9000 + i, IBV_WC_RDMA_WRITE, 0);
		expect_wc(cli.scq, 8000 + i, IBV_WC_SEND, len);
		expect_wc(srv.rcq, 7000 + i, IBV_WC_RECV, len);
		assert_memory_equal(srv.buf + SINK + i * SLOT, cli.buf + i * SLOT, len);
		if (i % 4 == 0)	/* placed before the SEND behind it arrived */
			assert_memory_equal(srv.buf + SINK + N * SLOT + i * SLOT,
					    cli.buf + i * SLOT, 8 + i % 50);
	}
	assert_true(qp_batchless(&srv));
}

static uint32_t stg_fills(struct side *s)
{
	uint32_t n;

	pthread_mutex_lock(&s->qp->rx_lock);
	n = s->qp->stg_fills;
	pthread_mutex_unlock(&s->qp->rx_lock);
	return n;
}

/*
 * 64 KB WRITEs back to back (issue 11, many QPs): with big FPDUs each is
 * one large FPDU and a small tail FPDU, and the tail is read in place,
 * not through the staging buffer, which would copy the next WRITE's
 * first 16 KB twice: at most the closing SEND's run is staged. Every
 * byte lands where its WR says. (XIW_MAX_FPDU=700: all FPDUs are small
 * and staged as in test_small_burst; only the bytes are checked.)
 */
static void test_bulk_tail_unstaged(void **state)
{
	enum { N = 24, LEN = 65536 };
	uint32_t before;

	(void)state;
	fill(cli.buf, N * LEN, 31);
	memset(srv.buf + SINK, 0, N * LEN);
	post_recv(&srv, 7700, SINK + N * LEN, 64, 1);
	before = stg_fills(&srv);
	for (int i = 0; i < N; i++)
		post(&cli, 7800 + i, IBV_WR_RDMA_WRITE, i * LEN, LEN, 1 + i % 3,
		     IOVA_BASE + SINK + i * LEN, srv.mr->ibv.rkey, 0);
	post(&cli, 7900, IBV_WR_SEND, 0, 0, 1, 0, 0, 0);
	for (int i = 0; i < N; i++)
		expect_wc(cli.scq, 7800 + i, IBV_WC_RDMA_WRITE, 0);
	expect_wc(cli.scq, 7900, IBV_WC_SEND, 0);
	expect_wc(srv.rcq, 7700, IBV_WC_RECV, 0);
	check_sink(&cli, &srv, N * LEN);
	if (cli.qp->txf.max_ulpdu >= 4096 && stg_fills(&srv) - before > 2)
		fail_msg("%u staging reads for %d bulk WRITEs (tails staged)",
			 stg_fills(&srv) - before, N);
}

/*
 * A run of SENDs of about 4 KB (issue 11, 4 KB bandwidth): FPDUs of up
 * to 4 KB of payload are small, so the receive side stages them, several
 * per recvmsg, and every byte must still land in its own receive, in
 * order.
 */
static void test_4k_staged(void **state)
{
	enum { N = 96, SLOT = 4096 };
	uint32_t before;

	(void)state;
	fill(cli.buf, N * SLOT, 41);
	memset(srv.buf + SINK, 0, N * SLOT);
	before = stg_fills(&srv);
	for (int i = 0; i < N; i++)
		post_recv(&srv, 7300 + i, SINK + i * SLOT, SLOT, 1 + i % 3);
	for (int i = 0; i < N; i++)
		post(&cli, 7400 + i, IBV_WR_SEND, i * SLOT, SLOT - (i % 5) * 333,
		     1 + i % 2, 0, 0, 0);
	for (int i = 0; i < N; i++) {
		uint32_t len = SLOT - (i % 5) * 333;

		expect_wc(cli.scq, 7400 + i, IBV_WC_SEND, len);
		expect_wc(srv.rcq, 7300 + i, IBV_WC_RECV, len);
		assert_memory_equal(srv.buf + SINK + i * SLOT, cli.buf + i * SLOT, len);
	}
	if (stg_fills(&srv) == before)
		fail_msg("%d SENDs of up to 4 KB, none staged", N);
	assert_true(qp_batchless(&srv));
}

/* Spin until @s's buffer at @off holds @v (10 s), polling no CQ. */
static void wait_byte(struct side *s, uint32_t off, uint8_t v)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (__atomic_load_n(&s->buf[off], __ATOMIC_ACQUIRE) != v) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			fail_msg("%s: byte at %u never became %#x", s->name,
				 off, v);
		usleep(20);
	}
}

/* Wait until @s's last send (MPA, RTR, the RTR nudges) is @ns old. */
static void quiet(struct side *s, uint64_t ns)
{
	for (int i = 0; i < 500; i++) {
		if (xiw_now_ns() - __atomic_load_n(&s->qp->tx_last_ns,
						   __ATOMIC_RELAXED) > ns + 1000000)
			return;
		usleep(10 * 1000);
	}
	fail_msg("%s: still sending after 5 s", s->name);
}

static uint64_t tx_calls(const struct side *s)
{
	return __atomic_load_n(&s->qp->tx_calls, __ATOMIC_RELAXED);
}

static bool corked(const struct side *s)
{
	return atomic_load(&s->qp->cork_since_ns) != 0;
}

/* @n 64-byte WRITEs from @a's slots [@first, +@n) to the same slots of
 * @b's sink, one post each. */
static void cork_writes(struct side *a, struct side *b, int first, int n,
			bool expect_held)
{
	for (int i = first; i < first + n; i++) {
		post(a, 500 + i, IBV_WR_RDMA_WRITE, i * 64, 64, 1,
		     IOVA_BASE + SINK + i * 64, b->mr->ibv.rkey, 0);
		if (expect_held && !corked(a))
			fail_msg("%s: WRITE %d of a burst was sent at once",
				 a->name, i);
	}
}

/*
 * TX corking (xiw_txcork.c), with a 500 ms window so that no timing of a
 * loaded machine decides: a lone WR goes out in its post; the rest of a
 * burst waits for the poll and goes in one or two sendmsg calls; a reply
 * to bytes from the peer is never held; a burst nobody polls for goes
 * out by the backstop; a large WR is not held, nor what waits before it;
 * every byte lands where its WR says.
 */
static void test_cork(void **state)
{
	struct xiw_txcfg *cfg = (struct xiw_txcfg *)xiw_tx_config();
	uint64_t win = cfg->cork_ns, calls;
	enum { N = 24 };

	(void)state;
	cfg->cork_ns = 500ull * 1000000;
	quiet(&cli, cfg->cork_ns);
	quiet(&srv, cfg->cork_ns);
	fill(cli.buf, (N + 8) * 64, 41);
	fill(srv.buf, (N + 8) * 64, 42);
	memset(srv.buf + SINK, 0, (N + 8) * 64);
	memset(cli.buf + SINK, 0, (N + 8) * 64);
	calls = tx_calls(&cli);
	cork_writes(&cli, &srv, 0, 1, false);	/* lone: sent in the post */
	assert_false(corked(&cli));
	assert_int_equal(tx_calls(&cli), calls + 1);
	cork_writes(&cli, &srv, 1, N - 1, true);
	assert_int_equal(tx_calls(&cli), calls + 1);
	for (int i = 0; i < N; i++)	/* the poll sends them */
		expect_wc(cli.scq, 500 + i, IBV_WC_RDMA_WRITE, 0);
	assert_false(corked(&cli));
	assert_in_range(tx_calls(&cli), calls + 2, calls + 3);
	wait_byte(&srv, SINK + N * 64 - 1, cli.buf[N * 64 - 1]);
	assert_memory_equal(srv.buf + SINK, cli.buf, N * 64);

	/* ping-pong inside the window: each reply follows the peer's bytes */
	cork_writes(&srv, &cli, N, 1, false);
	wait_byte(&cli, SINK + N * 64 + 63, srv.buf[N * 64 + 63]);
	cork_writes(&cli, &srv, N + 1, 1, false);
	assert_false(corked(&cli));
	wait_byte(&srv, SINK + N * 64 + 127, cli.buf[N * 64 + 127]);
	cork_writes(&srv, &cli, N + 2, 1, false);
	assert_false(corked(&srv));
	wait_byte(&cli, SINK + N * 64 + 191, srv.buf[N * 64 + 191]);

	/* nobody polls: the backstop (5 windows) sends the held burst; its
	 * first WR follows the peer's bytes and goes at once */
	cork_writes(&cli, &srv, N + 3, 1, false);
	cork_writes(&cli, &srv, N + 4, 3, true);
	wait_byte(&srv, SINK + (N + 7) * 64 - 1, cli.buf[(N + 7) * 64 - 1]);
	assert_memory_equal(srv.buf + SINK + (N + 3) * 64,
			    cli.buf + (N + 3) * 64, 4 * 64);
	expect_wc(cli.scq, 500 + N + 1, IBV_WC_RDMA_WRITE, 0);
	for (int i = N + 3; i < N + 7; i++)
		expect_wc(cli.scq, 500 + i, IBV_WC_RDMA_WRITE, 0);
	expect_wc(srv.scq, 500 + N, IBV_WC_RDMA_WRITE, 0);
	expect_wc(srv.scq, 500 + N + 2, IBV_WC_RDMA_WRITE, 0);

	/* a large WR behind a held one: both go at once */
	cork_writes(&cli, &srv, N + 7, 1, true);
	fill(cli.buf + 4096, 20000, 43);
	memset(srv.buf + SINK + 4096, 0, 20000);
	post(&cli, 600, IBV_WR_RDMA_WRITE, 4096, 20000, 2,
	     IOVA_BASE + SINK + 4096, srv.mr->ibv.rkey, 0);
	assert_false(corked(&cli));
	wait_byte(&srv, SINK + 4096 + 19999, cli.buf[4096 + 19999]);
	assert_memory_equal(srv.buf + SINK + (N + 7) * 64,
			    cli.buf + (N + 7) * 64, 64);
	assert_memory_equal(srv.buf + SINK + 4096, cli.buf + 4096, 20000);
	expect_wc(cli.scq, 500 + N + 7, IBV_WC_RDMA_WRITE, 0);
	expect_wc(cli.scq, 600, IBV_WC_RDMA_WRITE, 0);
	cfg->cork_ns = win;
}

/*
 * A WR posted while another thread holds tx_lock (the ACK scan, a reader,
 * the backstop) is handed to the progress thread by the holder's unlock:
 * it corks there as it would have in its post, so whether a burst is held
 * does not depend on who held the lock. (It used to go out at once: ack
 * mode's test_cork failed on that now and then.)
 */
static void test_cork_contended(void **state)
{
	struct xiw_txcfg *cfg = (struct xiw_txcfg *)xiw_tx_config();
	uint64_t win = cfg->cork_ns, calls;

	(void)state;
	cfg->cork_ns = 500ull * 1000000;
	quiet(&cli, cfg->cork_ns);
	fill(cli.buf, 2 * 64, 61);
	memset(srv.buf + SINK, 0, 2 * 64);
	calls = tx_calls(&cli);
	cork_writes(&cli, &srv, 0, 1, false);	/* lone: sent in the post */
	pthread_mutex_lock(&cli.qp->tx_lock);
	cork_writes(&cli, &srv, 1, 1, false);	/* finds the lock taken */
	assert_false(corked(&cli));
	xiw_tx_unlock(cli.qp);	/* hands it to the progress thread */
	for (int i = 0; i < 1000 && !corked(&cli) &&
	     tx_calls(&cli) == calls + 1; i++)
		usleep(100);
	assert_true(corked(&cli));
	assert_int_equal(tx_calls(&cli), calls + 1);
	for (int i = 0; i < 2; i++)	/* the poll sends it */
		expect_wc(cli.scq, 500 + i, IBV_WC_RDMA_WRITE, 0);
	assert_false(corked(&cli));
	wait_byte(&srv, SINK + 2 * 64 - 1, cli.buf[2 * 64 - 1]);
	assert_memory_equal(srv.buf + SINK, cli.buf, 2 * 64);
	cfg->cork_ns = win;
}

/*
 * A QP destroyed while it holds corked WRs sends them first, as it would
 * have without corking (they were posted before the destroy, and their
 * bytes would already have been with the kernel).
 */
static void test_cork_destroy(void **state)
{
	struct xiw_txcfg *cfg = (struct xiw_txcfg *)xiw_tx_config();
	uint64_t win = cfg->cork_ns;

	(void)state;
	cfg->cork_ns = 500ull * 1000000;
	quiet(&cli, cfg->cork_ns);
	fill(cli.buf, 8 * 64, 51);
	memset(srv.buf + SINK, 0, 8 * 64);
	cork_writes(&cli, &srv, 0, 1, false);
	cork_writes(&cli, &srv, 1, 7, true);
	assert_int_equal(xiw_qp_destroy(cli.qp), 0);
	cli.qp = NULL;
	wait_byte(&srv, SINK + 8 * 64 - 1, cli.buf[8 * 64 - 1]);
	assert_memory_equal(srv.buf + SINK, cli.buf, 8 * 64);
	cfg->cork_ns = win;
}

/* ------------------------------------------------ corking, threads --- */

struct cork_poster {
	struct side *a, *b;
	int n, bad;
};

/* Post @n 4 KB WRITEs a -> b, one per call, at most 128 in flight;
 * poll the send CQ (each poll flushes every QP's corks). 4 KB: every
 * fifth WR is past the cork's byte limit and goes at once with those
 * held, so the next one lists the QP again. */
static void *cork_post_loop(void *arg)
{
	struct cork_poster *p = arg;
	struct ibv_sge sg = { (uintptr_t)p->a->buf, 4096, p->a->mr->ibv.lkey };
	struct ibv_send_wr wr = { .wr_id = 700, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc[16];
	int posted = 0, done = 0, k;
	uint64_t end = xiw_now_ns() + 120ull * 1000000000;

	wr.wr.rdma.remote_addr = IOVA_BASE + SINK;
	wr.wr.rdma.rkey = p->b->mr->ibv.rkey;
	while (done < p->n && !p->bad) {
		if (xiw_now_ns() > end) {	/* WRs held and never sent */
			p->bad = 3;
			break;
		}
		while (posted < p->n && posted - done < 128) {
			if (xiw_post_send(p->a->qp, &wr, &bad)) {
				p->bad = 1;
				break;
			}
			posted++;
		}
		k = xiw_cq_poll(p->a->scq, 16, wc);
		for (int i = 0; i < k; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				p->bad = 2;
		done += k > 0 ? k : 0;
	}
	return NULL;
}

static atomic_bool flush_stop;

static void *cork_flush_loop(void *unused)
{
	(void)unused;
	while (!atomic_load(&flush_stop))
		xiw_tx_cork_flush();
	return NULL;
}

/* @qp's references once its queued work ran: the count when it is 0 or
 * after 10 s (tx kicks and datamover turns queued by the posts take
 * their own for a while). */
static int qp_refs_settled(struct xiw_qp *qp)
{
	int n = 0;

	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&qp->ref_lock);
		n = qp->refs;
		pthread_mutex_unlock(&qp->ref_lock);
		if (!n)
			break;
		usleep(10 * 1000);
	}
	return n;
}

/*
 * Two QPs cork and post while other threads flush: every reference the
 * cork list took is dropped once (the flush used to chain the QPs it
 * took through cork_next, which a poster listing one of them again
 * rewrote: the rest of the chain lost its references and destroy waited
 * forever, QPs still listed lost one, or a QP that was not listed any
 * more held its WRs for good). A 500 ms window: every WR after a send
 * corks until the next flush.
 */
static void test_cork_race(void **state)
{
	struct xiw_txcfg *cfg = (struct xiw_txcfg *)xiw_tx_config();
	uint64_t win = cfg->cork_ns;
	struct cork_poster p1 = { &cli, &srv, 40000, 0 };
	struct cork_poster p2 = { &cli2, &srv2, 40000, 0 };
	pthread_t t1, t2, tf;

	(void)state;
	pair_up(&cli2, &srv2);
	cfg->cork_ns = 500ull * 1000000;
	atomic_store(&flush_stop, false);
	assert_int_equal(pthread_create(&tf, NULL, cork_flush_loop, NULL), 0);
	assert_int_equal(pthread_create(&t1, NULL, cork_post_loop, &p1), 0);
	assert_int_equal(pthread_create(&t2, NULL, cork_post_loop, &p2), 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	atomic_store(&flush_stop, true);
	pthread_join(tf, NULL);
	cfg->cork_ns = win;
	assert_int_equal(p1.bad, 0);
	assert_int_equal(p2.bad, 0);
	xiw_tx_cork_flush();
	assert_int_equal(qp_refs_settled(cli.qp), 0);
	assert_int_equal(qp_refs_settled(cli2.qp), 0);
	pair_down(&cli2, &srv2);
}

/* Wait (10 s) until @cq holds @n CQEs, without polling it: a poll would
 * receive for its QPs (xiw_rx_poll). */
static void wait_cqes(struct xiw_cq *cq, uint32_t n)
{
	for (int i = 0; i < 100000; i++) {
		if (__atomic_load_n(&cq->head, __ATOMIC_ACQUIRE) -
		    __atomic_load_n(&cq->tail, __ATOMIC_RELAXED) >= n)
			return;
		usleep(100);
	}
	fail_msg("%u CQEs not there within 10 s", n);
}

/* A poller that spins on @arg's QP without reading: its passes' stamp. */
static atomic_bool stamp_stop;

static void *stamp_loop(void *arg)
{
	struct xiw_qp *qp = arg;

	while (!atomic_load(&stamp_stop)) {
		atomic_store(&qp->rx_app_poll_ns, xiw_now_ns());
		usleep(20);
	}
	return NULL;
}

/*
 * A small message read by the progress thread while a poller of the QP
 * is spinning hands the reading to the pollers (app mode). Only the
 * "bytes already gone" test switched before, and where the poller and
 * the progress thread share a CPU the wake-up preempts the poller and
 * always reads first, so every message of an 8 B ib_send_lat cost a
 * wake-up (11-14 us instead of 4-6). Here nothing polls the CQ (only its
 * ring is watched), so the progress thread reads each SEND. Without
 * stamps the QP stays out of app mode; with a thread stamping the QP as
 * an app pass would, a lone 8 B SEND switches it (up to 20 tries: on a
 * loaded machine a stamp may be older than 200 us when one is read).
 */
static void test_lone_message_app_mode(void **state)
{
	enum { TRIES = 20 };
	struct xiw_cq *cq = srv.rcq;
	bool app = false;
	pthread_t t;
	int n = 1;

	(void)state;
	post_recv(&srv, 900, SINK, 8, 1);
	atomic_store(&srv.qp->rx_app_poll_ns, 0);	/* no poller */
	post(&cli, 902, IBV_WR_SEND, 0, 8, 1, 0, 0, 0);
	wait_cqes(cq, 1);
	assert_false(atomic_load(&srv.qp->rx_app_mode));
	atomic_store(&stamp_stop, false);
	assert_int_equal(pthread_create(&t, NULL, stamp_loop, srv.qp), 0);
	for (; n <= TRIES && !app; n++) {
		post_recv(&srv, 900 + n, SINK, 8, 1);
		post(&cli, 902 + n, IBV_WR_SEND, 0, 8, 1, 0, 0, 0);
		wait_cqes(cq, (uint32_t)n + 1);
		app = atomic_load(&srv.qp->rx_app_mode);
	}
	atomic_store(&stamp_stop, true);
	pthread_join(t, NULL);
	assert_true(app);
	for (int i = 0; i < n; i++) {
		expect_wc(cq, 900 + i, IBV_WC_RECV, 8);
		expect_wc(cli.scq, 902 + i, IBV_WC_SEND, 0);
	}
}

/* The batch's unsent part starts at an FPDU (nothing of it sent yet). */
static bool batch_at_fpdu(const struct xiw_txbatch *b)
{
	size_t done = 0;

	if (!b || b->iov_idx == b->niov)
		return true;
	if (b->iov_idx && !b->fend[b->iov_idx - 1])
		return false;
	for (int i = 0; i < b->iov_idx; i++)
		done += b->iov[i].iov_len;	/* fully sent: not advanced */
	return done == b->sent;
}

/*
 * A datamover turn (xiw_tx_send_some() with a budget) sends whole FPDUs,
 * at least the budget: 16 WRITEs of 4 KB queued while the test holds
 * tx_lock, then 4 KB turns. Every turn that used its budget ended at an
 * FPDU end, in one sendmsg (two where it crossed into the next batch).
 * It used to send an FPDU's header alone, then its payload, and leave
 * its CRC for the next turn, with the next header. The bytes land.
 */
static void test_turn_whole_fpdus(void **state)
{
	enum { N = 16, LEN = 4096, MAX_TURNS = 10 * N };
	int turns = 0, tries = 0, split = 0, calls2 = 0, r;

	(void)state;
	fill(cli.buf, N * LEN, 51);
	memset(srv.buf + SINK, 0, N * LEN);
	pthread_mutex_lock(&cli.qp->tx_lock);
	for (int i = 0; i < N; i++)	/* tx_lock busy: left to its holder */
		post(&cli, 700 + i, IBV_WR_RDMA_WRITE, i * LEN, LEN, 1,
		     IOVA_BASE + SINK + i * LEN, srv.mr->ibv.rkey, 0);
	do {	/* no assert while tx_lock is held: teardown needs it */
		uint64_t calls = tx_calls(&cli);

		r = xiw_tx_send_some(cli.qp, LEN);
		if (r == XIW_TX_SHORT) {	/* socket full: not a turn */
			usleep(1000);
			continue;	/* to the loop test */
		}
		if (r != XIW_TX_MORE)
			break;
		turns++;
		split += !batch_at_fpdu(cli.qp->b);
		calls2 += tx_calls(&cli) - calls > 2;
	} while (turns < MAX_TURNS && ++tries < 5000);
	xiw_tx_unlock(cli.qp);
	assert_int_equal(r, XIW_TX_DONE);
	assert_int_equal(split, 0);
	assert_int_equal(calls2, 0);
	assert_true(turns >= N / 2);
	for (int i = 0; i < N; i++)
		expect_wc(cli.scq, 700 + i, IBV_WC_RDMA_WRITE, 0);
	wait_byte(&srv, SINK + N * LEN - 1, cli.buf[N * LEN - 1]);
	assert_memory_equal(srv.buf + SINK, cli.buf, N * LEN);
}

/* SENDs arrive before any receive is posted: reading pauses, resumes. */
static void test_late_recv(void **state)
{
	enum { N = 8, LEN = 50000 };
	struct ibv_wc wc;

	(void)state;
	fill(cli.buf, N * LEN, 3);
	for (int i = 0; i < N; i++)
		post(&cli, 700 + i, IBV_WR_SEND, i * LEN, LEN, 1, 0, 0, 0);
	usleep(100 * 1000);
	assert_int_equal(xiw_cq_poll(srv.rcq, 1, &wc), 0);
	for (int i = 0; i < N; i++) {
		post_recv(&srv, 800 + i, SINK + i * LEN, LEN, 1);
		usleep(5000);
	}
	for (int i = 0; i < N; i++)
		expect_wc(srv.rcq, 800 + i, IBV_WC_RECV, LEN);
	for (int i = 0; i < N; i++)
		expect_wc(cli.scq, 700 + i, IBV_WC_SEND, LEN);
	assert_memory_equal(srv.buf + SINK, cli.buf, N * LEN);
}

/* Inline SEND and SEND with solicited event, unsignalled WRITE. */
static void test_inline_se(void **state)
{
	struct ibv_sge sg = { (uintptr_t)cli.buf, 100, 0 };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_INLINE |
						IBV_SEND_SIGNALED |
						IBV_SEND_SOLICITED }, *bad;

	(void)state;
	fill(cli.buf, 100, 5);
	post_recv(&srv, 10, SINK, 200, 1);
	assert_int_equal(xiw_post_send(cli.qp, &wr, &bad), 0);
	memset(cli.buf, 0, 100);	/* copied at post time */
	expect_wc(cli.scq, 9, IBV_WC_SEND, 100);
	expect_wc(srv.rcq, 10, IBV_WC_RECV, 100);
	fill(cli.buf, 100, 5);
	check_sink(&cli, &srv, 100);
}

/* SEND with Invalidate: the receiver's STag dies, the WC says so. */
static void test_send_inv(void **state)
{
	struct xiw_mr *extra = xiw_mr_reg(srv.pd, srv.buf, 4096, 0x5000,
					  IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE);
	struct ibv_sge sg = { (uintptr_t)cli.buf, 32, cli.mr->ibv.lkey };
	struct ibv_send_wr wr = { .wr_id = 61, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	(void)state;
	assert_non_null(extra);
	wr.invalidate_rkey = extra->ibv.rkey;
	post_recv(&srv, 60, SINK, 64, 1);
	assert_int_equal(xiw_post_send(cli.qp, &wr, &bad), 0);
	expect_wc(cli.scq, 61, IBV_WC_SEND, 32);
	poll_wc(srv.rcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 60);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, extra->ibv.rkey);
	assert_int_equal(xiw_mr_check(extra->ibv.rkey, srv.pd, 0, 0x5000, 1,
				      true, NULL), -ENOENT);
	assert_int_equal(xiw_mr_dereg(extra), 0);
	/* zero-length READ and WRITE complete like any other */
	post(&cli, 62, IBV_WR_RDMA_READ, SINK, 0, 0, IOVA_BASE,
	     srv.mr->ibv.rkey, 0);
	expect_wc(cli.scq, 62, IBV_WC_RDMA_READ, 0);
	post(&cli, 63, IBV_WR_RDMA_WRITE, 0, 0, 0, IOVA_BASE,
	     srv.mr->ibv.rkey, 0);
	expect_wc(cli.scq, 63, IBV_WC_RDMA_WRITE, 0);
}

/* WRITE_WITH_IMM: WRITE + RFC 7306 Immediate Data into the peer's RQ. */
static void test_write_imm(void **state)
{
	struct ibv_sge sg = { (uintptr_t)cli.buf, 5000, cli.mr->ibv.lkey };
	struct ibv_send_wr wr = { .wr_id = 71, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(0x12345678) }, *bad;
	struct ibv_wc wc;

	(void)state;
	wr.wr.rdma.remote_addr = IOVA_BASE + SINK;
	wr.wr.rdma.rkey = srv.mr->ibv.rkey;
	fill(cli.buf, 5000, 71);
	memset(srv.buf + SINK, 0, 5000);
	post_recv(&srv, 70, SINK + 8192, 64, 1);
	for (int i = 0; i < 2; i++) {	/* twice: MSNs keep counting */
		wr.wr_id = 71 + i;
		assert_int_equal(xiw_post_send(cli.qp, &wr, &bad), 0);
		expect_wc(cli.scq, 71 + i, IBV_WC_RDMA_WRITE, 5000);
		if (i == 0)
			post_recv(&srv, 72, SINK + 8192, 64, 1);
	}
	for (int i = 0; i < 2; i++) {
		poll_wc(srv.rcq, &wc);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 70 + 2 * i);
		assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
		assert_int_equal(ntohl(wc.imm_data), 0x12345678);
	}
	check_sink(&cli, &srv, 5000);
	send_one(&cli, &srv, 100, 1, 1, 73);	/* SENDs still in sequence */
}

/*
 * SEND_WITH_IMM: a SEND followed by an RFC 7306 Immediate Data message.
 * Each consumes an RQ WR: the data as IBV_WC_RECV, then the immediate
 * as IBV_WC_RECV with IBV_WC_WITH_IMM and no bytes. A WRITE_WITH_IMM
 * after it still completes as RECV_RDMA_WITH_IMM.
 */
static void test_send_imm(void **state)
{
	struct ibv_sge sg = { (uintptr_t)cli.buf, 3000, cli.mr->ibv.lkey };
	struct ibv_send_wr wr = { .wr_id = 91, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(0xabcdef01) }, *bad;
	struct ibv_wc wc;

	(void)state;
	fill(cli.buf, 3000, 91);
	memset(srv.buf + SINK, 0, 3000);
	post_recv(&srv, 90, SINK, 4096, 1);
	post_recv(&srv, 92, SINK + 8192, 64, 1);
	assert_int_equal(xiw_post_send(cli.qp, &wr, &bad), 0);
	expect_wc(cli.scq, 91, IBV_WC_SEND, 3000);
	poll_wc(srv.rcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 90);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 3000);
	assert_false(wc.wc_flags & IBV_WC_WITH_IMM);
	poll_wc(srv.rcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 92);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 0);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(ntohl(wc.imm_data), 0xabcdef01);
	check_sink(&cli, &srv, 3000);
	/* then a WRITE_WITH_IMM: recognised as such again */
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.wr_id = 93;
	wr.wr.rdma.remote_addr = IOVA_BASE + SINK;
	wr.wr.rdma.rkey = srv.mr->ibv.rkey;
	post_recv(&srv, 94, SINK + 8192, 64, 1);
	assert_int_equal(xiw_post_send(cli.qp, &wr, &bad), 0);
	expect_wc(cli.scq, 93, IBV_WC_RDMA_WRITE, 3000);
	poll_wc(srv.rcq, &wc);
	assert_int_equal(wc.wr_id, 94);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
}

/* One RFC 7306 atomic WR on cli; returns the original value it fetched. */
static uint64_t atomic_op(uint64_t id, enum ibv_wr_opcode op, uint64_t off,
			  uint32_t rkey, uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge sg = { (uintptr_t)cli.buf + 4096, 8, cli.mr->ibv.lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	uint64_t v;

	wr.wr.atomic.remote_addr = IOVA_BASE + off;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	memset(cli.buf + 4096, 0xee, 8);
	assert_int_equal(xiw_post_send(cli.qp, &wr, &bad), 0);
	expect_wc(cli.scq, id, op == IBV_WR_ATOMIC_CMP_AND_SWP ?
		  IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD, 8);
	memcpy(&v, cli.buf + 4096, 8);
	return v;
}

/*
 * RFC 7306 atomics: FETCH_AND_ADD and CMP_AND_SWP on the peer's memory
 * (host byte order there, as with InfiniBand); a READ between them keeps
 * its order; misaligned WRs are refused at post time.
 */
static void test_atomics(void **state)
{
	struct ibv_sge sg = { (uintptr_t)cli.buf + 4096, 8, cli.mr->ibv.lkey };
	struct ibv_send_wr bad_wr = { .sg_list = &sg, .num_sge = 1,
				      .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD }, *bad;
	uint64_t *target = (uint64_t *)(srv.buf + SINK);
	uint32_t rkey = srv.atom->ibv.rkey;

	(void)state;
	*target = 1000;
	assert_int_equal(atomic_op(101, IBV_WR_ATOMIC_FETCH_AND_ADD, SINK, rkey,
				   5, 0), 1000);
	assert_int_equal(*target, 1005);
	/* compare fails: value unchanged, original returned */
	assert_int_equal(atomic_op(102, IBV_WR_ATOMIC_CMP_AND_SWP, SINK, rkey,
				   7, 99), 1005);
	assert_int_equal(*target, 1005);
	read_one(&cli, &srv, 4096, 1, 3);	/* READs interleave in order */
	*target = 1005;
	assert_int_equal(atomic_op(103, IBV_WR_ATOMIC_CMP_AND_SWP, SINK, rkey,
				   1005, 42), 1005);
	assert_int_equal(*target, 42);
	assert_int_equal(atomic_op(104, IBV_WR_ATOMIC_FETCH_AND_ADD, SINK, rkey,
				   UINT64_MAX, 0), 42);	/* wraps: 42 - 1 */
	assert_int_equal(*target, 41);
	bad_wr.wr.atomic.remote_addr = IOVA_BASE + SINK + 4;
	bad_wr.wr.atomic.rkey = rkey;
	assert_int_equal(xiw_post_send(cli.qp, &bad_wr, &bad), -EINVAL);
}

/* An atomic on memory registered without REMOTE_ATOMIC: TERMINATE. */
static void test_atomic_refused(void **state)
{
	struct ibv_sge sg = { (uintptr_t)cli.buf + 4096, 8, cli.mr->ibv.lkey };
	struct ibv_send_wr wr = { .wr_id = 111, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	(void)state;
	wr.wr.atomic.remote_addr = IOVA_BASE + SINK;
	wr.wr.atomic.rkey = srv.mr->ibv.rkey;	/* no REMOTE_ATOMIC */
	wr.wr.atomic.compare_add = 1;
	assert_int_equal(xiw_post_send(cli.qp, &wr, &bad), 0);
	wait_for(&cli, &cli.disconnected, 1);
	poll_wc(cli.scq, &wc);
	assert_int_equal(wc.wr_id, 111);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
}

/* A SEND that never finds a receive: the receiver stops reading, then
 * gives up after XIW_RQ_WAIT_MS (set to 300 ms here) with TERMINATE. */
static void test_rq_wait_timeout(void **state)
{
	struct ibv_wc wc;

	(void)state;
	post(&cli, 81, IBV_WR_SEND, 0, 1000, 1, 0, 0, 0);
	expect_wc(cli.scq, 81, IBV_WC_SEND, 1000);
	post_recv(&cli, 82, SINK, 64, 1);
	wait_for(&srv, &srv.disconnected, 1);
	wait_for(&cli, &cli.disconnected, 1);
	assert_int_equal(srv.disc_status, -EPROTO);
	poll_wc(cli.rcq, &wc);
	assert_int_equal(wc.wr_id, 82);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
}

/* WRITE to an invalid STag: the target sends TERMINATE; both sides end
 * in ERROR with flushed receives and a DISCONNECTED event. */
static void test_terminate(void **state)
{
	struct ibv_wc wc;
	int n = 0;

	(void)state;
	post_recv(&srv, 51, SINK, 64, 1);
	post_recv(&cli, 52, SINK, 64, 1);
	post(&cli, 53, IBV_WR_RDMA_WRITE, 0, 512, 1, IOVA_BASE,
	     srv.mr->ibv.rkey ^ 0x55, 0);
	wait_for(&srv, &srv.disconnected, 1);
	wait_for(&cli, &cli.disconnected, 1);
	assert_int_equal(srv.disc_status, -EPROTO);	/* TERMINATE sent */
	assert_int_equal(cli.disc_status, -EPROTO);	/* and received */
	poll_wc(srv.rcq, &wc);
	assert_int_equal(wc.wr_id, 51);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	poll_wc(cli.rcq, &wc);
	assert_int_equal(wc.wr_id, 52);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	/* the WRITE itself: done when sent (success) or flushed */
	while (xiw_cq_poll(cli.scq, 1, &wc) == 1) {
		assert_int_equal(wc.wr_id, 53);
		n++;
	}
	assert_true(n <= 1);
	assert_int_equal(atomic_load(&cli.qp->state), IBV_QPS_ERR);
	assert_int_equal(atomic_load(&srv.qp->state), IBV_QPS_ERR);
}

/* READ from an STag the target does not know: the target refuses it with
 * a TERMINATE; the READ WR completes with the reason (remote access
 * error), the WRs behind it are flushed. */
static void test_read_refused(void **state)
{
	struct ibv_wc wc;

	(void)state;
	post(&cli, 61, IBV_WR_RDMA_READ, 0, 256, 1, IOVA_BASE,
	     srv.mr->ibv.rkey ^ 0x55, 0);
	post(&cli, 62, IBV_WR_SEND, 0, 16, 1, 0, 0, 0);
	wait_for(&cli, &cli.disconnected, 1);
	assert_int_equal(cli.disc_status, -EPROTO);
	poll_wc(cli.scq, &wc);
	assert_int_equal(wc.wr_id, 61);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	poll_wc(cli.scq, &wc);
	assert_int_equal(wc.wr_id, 62);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
}

/*
 * A burst of READ requests answered in one go (issue 11): 8 small READs
 * of odd sizes and offsets posted in one chain reach the responder in
 * one receive burst, and their responses leave in one sendmsg (at most
 * two if the burst was read in two); every byte lands at its sink, the
 * WCs come in posting order.
 */
static void test_read_burst(void **state)
{
	enum { N = 8, SLOT = 512 };
	struct ibv_sge sg[N];
	struct ibv_send_wr wr[N], *bad;
	uint64_t calls;
	int n = (int)cli.qp->ord < N ? (int)cli.qp->ord : N;

	(void)state;
	fill(srv.buf, N * SLOT, 31);
	memset(cli.buf + SINK, 0, N * SLOT);
	quiet(&srv, 0);
	pthread_mutex_lock(&srv.qp->tx_lock);
	calls = srv.qp->tx_calls;
	pthread_mutex_unlock(&srv.qp->tx_lock);
	for (int i = 0; i < n; i++) {
		uint32_t len = 1 + (uint32_t)(i * 97) % 400;

		sg[i] = (struct ibv_sge){ (uintptr_t)cli.buf + SINK + i * SLOT,
					  len, cli.mr->ibv.lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = 400 + i, .sg_list = &sg[i], .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < n ? &wr[i + 1] : NULL };
		wr[i].wr.rdma.remote_addr = IOVA_BASE + i * SLOT + (uint32_t)i;
		wr[i].wr.rdma.rkey = srv.mr->ibv.rkey;
	}
	assert_int_equal(xiw_post_send(cli.qp, wr, &bad), 0);
	for (int i = 0; i < n; i++) {
		expect_wc(cli.scq, 400 + i, IBV_WC_RDMA_READ, sg[i].length);
		assert_memory_equal(cli.buf + SINK + i * SLOT,
				    srv.buf + i * SLOT + i, sg[i].length);
	}
	pthread_mutex_lock(&srv.qp->tx_lock);
	calls = srv.qp->tx_calls - calls;
	pthread_mutex_unlock(&srv.qp->tx_lock);
	if (n == N && calls > 2)
		fail_msg("%d READ responses took %llu sendmsg calls", n,
			 (unsigned long long)calls);
}

/* @qp's sending is with the progress thread after a full socket. */
static bool resp_on_progress(struct xiw_qp *qp)
{
	bool on;

	pthread_mutex_lock(&qp->tx_lock);
	on = qp->tx_wait_write && !qp->dm_owned;
	pthread_mutex_unlock(&qp->tx_lock);
	return on;
}

/*
 * A READ response that fills the responder's socket (issue 11): the
 * requester stops reading (a SEND waits for its receive in front of the
 * response), so a 7 MB response cannot leave (Linux grows a socket's
 * send buffer up to tcp_wmem's 4 MB); the responder's progress thread
 * keeps the rest (xiw_tx_push_rx, no datamover) and a WRITE and a SEND
 * posted behind it on the responder wait their turn. Once the receive is
 * posted, everything arrives in order: the SEND, every byte of the READ,
 * the WRITE, the second SEND.
 */
static void test_read_fills_socket(void **state)
{
	const uint32_t len = 7u << 20, big = 8u << 20;
	uint8_t *sb = malloc(big), *cb = malloc(big);
	struct xiw_mr *smr, *cmr;
	bool seen = false;

	(void)state;
	assert_non_null(sb);
	assert_non_null(cb);
	smr = xiw_mr_reg(srv.pd, sb, big, 0x100000000ull, IBV_ACCESS_REMOTE_READ);
	cmr = xiw_mr_reg(cli.pd, cb, big, 0x100000000ull, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	assert_non_null(cmr);
	fill(sb, len, 41);
	fill(srv.buf, 256, 42);
	memset(cb, 0, big);
	post(&srv, 801, IBV_WR_SEND, 0, 16, 1, 0, 0, 0);
	expect_wc(srv.scq, 801, IBV_WC_SEND, 16);
	{	/* 7 MB into the client's own buffer, 3 SGEs */
		struct ibv_sge sg[3] = {
			{ (uintptr_t)cb, 1000, cmr->ibv.lkey },
			{ (uintptr_t)cb + 1000, 3u << 20, cmr->ibv.lkey },
			{ (uintptr_t)cb + 1000 + (3u << 20),
			  len - 1000 - (3u << 20), cmr->ibv.lkey } };
		struct ibv_send_wr wr = { .wr_id = 802, .sg_list = sg,
					  .num_sge = 3,
					  .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		wr.wr.rdma.remote_addr = 0x100000000ull;
		wr.wr.rdma.rkey = smr->ibv.rkey;
		assert_int_equal(xiw_post_send(cli.qp, &wr, &bad), 0);
	}
	/* within XIW_RQ_WAIT_MS (300 ms) the requester's receive is due */
	for (int i = 0; i < 150 && !seen; i++) {
		seen = resp_on_progress(srv.qp);
		if (!seen)
			usleep(1000);
	}
	post(&srv, 803, IBV_WR_RDMA_WRITE, 16, 64, 1, IOVA_BASE + 4096,
	     cli.mr->ibv.rkey, 0);
	post(&srv, 804, IBV_WR_SEND, 80, 32, 1, 0, 0, 0);
	post_recv(&cli, 805, 8192, 64, 1);
	post_recv(&cli, 806, 8192 + 64, 64, 1);
	expect_wc(cli.rcq, 805, IBV_WC_RECV, 16);
	expect_wc(cli.scq, 802, IBV_WC_RDMA_READ, len);
	expect_wc(cli.rcq, 806, IBV_WC_RECV, 32);
	expect_wc(srv.scq, 803, IBV_WC_RDMA_WRITE, 0);
	expect_wc(srv.scq, 804, IBV_WC_SEND, 32);
	assert_memory_equal(cb, sb, len);
	assert_memory_equal(cli.buf + 4096, srv.buf + 16, 64);
	assert_memory_equal(cli.buf + 8192, srv.buf, 16);
	assert_memory_equal(cli.buf + 8192 + 64, srv.buf + 80, 32);
	if (!seen)
		fail_msg("the READ response never waited on the progress thread");
	assert_true(qp_batchless(&srv));
	assert_int_equal(xiw_mr_dereg(smr), 0);
	assert_int_equal(xiw_mr_dereg(cmr), 0);
	free(sb);
	free(cb);
}

/* Spin (no library call) until @cq holds a CQE; fails after 10 s. */
static void wait_cqe_unpolled(struct xiw_cq *cq)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (__atomic_load_n(&cq->head, __ATOMIC_ACQUIRE) ==
	       __atomic_load_n(&cq->tail, __ATOMIC_RELAXED)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			fail_msg("no CQE within 10 s");
		usleep(100);
	}
}

/*
 * A readable upcall that finds the receive machine busy in another thread
 * (an app pass holds rx_lock: here the test does) is skipped, not waited
 * for, and the bytes are still received once the lock is free, by the
 * progress thread alone: nobody polls the CQ until its CQE is there.
 */
static void test_upcall_skip(void **state)
{
	uint64_t skips0 = xiw_rx_upcall_skips();
	struct timespec t0, t;

	(void)state;
	fill(cli.buf, 4096, 77);
	memset(srv.buf + SINK, 0, 4096);
	post_recv(&srv, 7001, SINK, 4096, 2);
	pthread_mutex_lock(&srv.qp->rx_lock);
	post(&cli, 7002, IBV_WR_SEND, 0, 4096, 3, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (xiw_rx_upcall_skips() == skips0) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			pthread_mutex_unlock(&srv.qp->rx_lock);
			fail_msg("the readable upcall never skipped the busy QP");
		}
		usleep(100);
	}
	pthread_mutex_unlock(&srv.qp->rx_lock);
	wait_cqe_unpolled(srv.rcq);
	expect_wc(srv.rcq, 7001, IBV_WC_RECV, 4096);
	expect_wc(cli.scq, 7002, IBV_WC_SEND, 4096);
	check_sink(&cli, &srv, 4096);
}

static int run_suite(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_send_recv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_qp_memory, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_small_burst, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bulk_tail_unstaged, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cork, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cork_contended, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cork_race, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lone_message_app_mode,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_turn_whole_fpdus, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cork_destroy, setup,
						teardown_cli_destroyed),
		cmocka_unit_test_setup_teardown(test_late_recv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inline_se, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_inv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_imm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_imm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomic_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rq_wait_timeout, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_terminate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ack_inline, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ack_poller_stream, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ack_cb_switch, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_write_pingpong, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_linger_backoff, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_burst, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_fills_socket, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_upcall_skip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_4k_staged, setup,
						teardown),
	};
	int ret;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (xiw_cm_listen((struct sockaddr *)&a, 16, on_event, &srv, &lst,
			  &bound)) {
		fprintf(stderr, "listen on 127.0.0.1 failed\n");
		return 1;
	}
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	xiw_cm_listener_destroy(lst);
	return ret;
}

static const char *const modes[][2] = {
	{ "XIW_MPA_CRC=0", "XIW_MPA_MARKERS=0" },
	{ "XIW_MPA_CRC=1", "XIW_MPA_MARKERS=0" },
	{ "XIW_MPA_CRC=0", "XIW_MPA_MARKERS=1" },
	{ "XIW_MPA_CRC=1", "XIW_MPA_MARKERS=1" },
	{ "XIW_MPA_CRC=1", "XIW_MAX_FPDU=700" },
	{ "XIW_MPA_VERSION=1", "XIW_MPA_MARKERS=1" },
	{ "XIW_MPA_P2P=0", "XIW_MPA_CRC=1" },
	{ "XIW_TX_COMPLETION=ack", "XIW_MPA_CRC=1" },
};

int main(void)
{
	int failed = 0;

	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		pid_t pid;
		int st;

		printf("== mode %s %s\n", modes[m][0], modes[m][1]);
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			putenv("XIW_RQ_WAIT_MS=300");
			putenv("XIW_POLL_LINGER_US=50000");
			putenv((char *)modes[m][0]);
			putenv((char *)modes[m][1]);
			_exit(run_suite() ? 1 : 0);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			printf("== mode %s %s FAILED\n", modes[m][0], modes[m][1]);
			failed++;
		}
	}
	return failed ? 1 : 0;
}
