// SPDX-License-Identifier: MIT
/*
 * Seed 002 CQE credits for receive completions and flushes: no CQ ever
 * overflows, whatever its size.
 *
 * Two QPs connected over 127.0.0.1 through the real CM and ksock transport
 * (or one unconnected QP) with CQs much smaller than their queues:
 *  - 64 SENDs / WRITE_WITH_IMMs into a 4-entry receive CQ nobody polls:
 *    the receiver stops reading (TCP flow control), a slow poller then
 *    gets all 64 WCs in order with the data intact;
 *  - the same with one 4-entry CQ shared by the receiver's SQ and RQ;
 *  - a receiver moved to ERROR with receives done, in progress and
 *    still posted: success WCs, then FLUSH_ERR, in posting order;
 *  - 200 receives / 200 sends flushed into an 8-entry CQ, and WRs posted
 *    while in ERROR (the drain pattern) behind them;
 *  - started send WRs holding CQE slots behind an unsignalled READ that
 *    cannot be flushed yet: polled in order, or their slots given back
 *    when the QP is destroyed.
 * Every test ends with overflow 0 and no slot left reserved.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "xiw_obj.h"

#define BUF_SIZE (8u << 20)	/* [0, 4 MB) source, [4 MB, 8 MB) sink */
#define SINK (4u << 20)
#define IOVA_BASE 0x7100000000ull
#define WAIT_S 10		/* any single expected event */

struct side {
	const char *name;
	struct xiw_pd *pd;
	struct xiw_cq *scq, *rcq;	/* the same CQ when shared */
	struct xiw_qp *qp;
	struct xiw_mr *mr;
	uint8_t *buf;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int established, disconnected, failed;
	struct xiw_cm_conn *pending;
};

/* CQ and queue sizes of one side. */
struct sizes {
	int scq, rcq;		/* rcq 0: share the send CQ */
	uint32_t sq, rq;
};

/* locks initialised once: a late CM event of an earlier test may come */
static struct side srv = { .name = "server",
			   .lock = PTHREAD_MUTEX_INITIALIZER,
			   .cond = PTHREAD_COND_INITIALIZER },
		   cli = { .name = "client",
			   .lock = PTHREAD_MUTEX_INITIALIZER,
			   .cond = PTHREAD_COND_INITIALIZER };
static struct sockaddr_storage bound;

/* ------------------------------------------------------------ helpers --- */

static struct xiw_cq_credits cq_credits(struct xiw_cq *cq)
{
	struct xiw_cq_credits c;

	xiw_cq_credits(cq, &c);
	return c;
}

static void expect_clean(struct xiw_cq *cq, const char *what)
{
	struct xiw_cq_credits c = cq_credits(cq);

	if (c.overflow || c.resv || c.queued > cq->size)
		fail_msg("%s: overflow %llu resv %u queued %u (size %u)", what,
			 (unsigned long long)c.overflow, c.resv, c.queued,
			 cq->size);
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

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
		break;
	default:
		s->failed++;
		break;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void wait_for(struct side *s, int *field, int want)
{
	struct timespec ts;
	int ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_S;
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
	ts.tv_sec += WAIT_S;
	pthread_mutex_lock(&s->lock);
	while (!s->pending &&
	       pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
		;
	c = s->pending;
	s->pending = NULL;
	pthread_mutex_unlock(&s->lock);
	if (!c)
		fail_msg("no CONNECT_REQUEST");
	return c;
}

static void side_init(struct side *s, const struct sizes *z)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = z->sq, .max_recv_wr = z->rq,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_qp_attr ia = { .qp_state = IBV_QPS_INIT };

	pthread_mutex_lock(&s->lock);
	s->established = s->disconnected = s->failed = 0;
	s->pending = NULL;
	pthread_mutex_unlock(&s->lock);
	s->pd = xiw_pd_alloc(NULL, NULL);
	assert_non_null(s->pd);
	s->scq = xiw_cq_create(NULL, z->scq, NULL, NULL);
	assert_non_null(s->scq);
	s->rcq = z->rcq ? xiw_cq_create(NULL, z->rcq, NULL, NULL) : s->scq;
	assert_non_null(s->rcq);
	a.send_cq = &s->scq->ibv;
	a.recv_cq = &s->rcq->ibv;
	s->qp = xiw_qp_create(s->pd, &a);
	assert_non_null(s->qp);
	assert_int_equal(xiw_qp_modify(s->qp, &ia, IBV_QP_STATE), 0);
	if (!s->buf)
		s->buf = malloc(BUF_SIZE);
	assert_non_null(s->buf);
	s->mr = xiw_mr_reg(s->pd, s->buf, BUF_SIZE, IOVA_BASE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	assert_non_null(s->mr);
}

/* Destroy what is left of @s (the QP may be gone already). */
static void side_fini(struct side *s)
{
	if (s->qp)
		assert_int_equal(xiw_qp_destroy(s->qp), 0);
	s->qp = NULL;
	assert_int_equal(xiw_mr_dereg(s->mr), 0);
	s->mr = NULL;
	assert_int_equal(xiw_cq_destroy(s->scq), 0);
	if (s->rcq != s->scq)
		assert_int_equal(xiw_cq_destroy(s->rcq), 0);
	assert_int_equal(xiw_pd_free(s->pd), 0);
}

static void connect_pair(const struct sizes *c, const struct sizes *s)
{
	side_init(&srv, s);
	side_init(&cli, c);
	assert_int_equal(xiw_cm_connect(cli.qp, NULL, (struct sockaddr *)&bound,
					"hi", 2, 8, 8, on_event, &cli), 0);
	assert_int_equal(xiw_cm_accept(wait_pending(&srv), srv.qp, NULL, 0, 8,
				       8, on_event, &srv), 0);
	wait_for(&srv, &srv.established, 1);
	wait_for(&cli, &cli.established, 1);
}

/* Tear down: QP destroy aborts a stream still up (no events awaited). */
static int teardown(void **state)
{
	(void)state;
	if (cli.pd)
		side_fini(&cli);
	if (srv.pd)
		side_fini(&srv);
	cli.pd = srv.pd = NULL;
	return 0;
}

/* One WC, polling every @gap_us (a slow consumer). */
static void poll_wc(struct xiw_cq *cq, struct ibv_wc *wc, unsigned gap_us)
{
	uint64_t t0 = now_ms();

	while (xiw_cq_poll(cq, 1, wc) == 0) {
		if (now_ms() - t0 > WAIT_S * 1000)
			fail_msg("no completion within %d s", WAIT_S);
		usleep(gap_us);
	}
}

static void expect_wc(struct xiw_cq *cq, uint64_t id, enum ibv_wc_status st,
		      enum ibv_wc_opcode op, unsigned gap_us)
{
	struct ibv_wc wc;

	poll_wc(cq, &wc, gap_us);
	if (wc.wr_id != id || wc.status != st)
		fail_msg("got wr_id %llu status %d, want wr_id %llu status %d",
			 (unsigned long long)wc.wr_id, wc.status,
			 (unsigned long long)id, st);
	assert_int_equal(wc.opcode, op);
}

/* Wait until @cq holds at least @n WCs (nobody polls it). */
static void wait_queued(struct xiw_cq *cq, uint32_t n)
{
	uint64_t t0 = now_ms();

	while (cq_credits(cq).queued < n) {
		if (now_ms() - t0 > WAIT_S * 1000)
			fail_msg("CQ holds %u WCs, want %u",
				 cq_credits(cq).queued, n);
		usleep(1000);
	}
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static void post_recv(struct side *s, uint64_t id, uint32_t off,
		      uint32_t len)
{
	struct ibv_sge sg = { (uintptr_t)s->buf + off, len, s->mr->ibv.lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	assert_int_equal(xiw_post_recv(s->qp, &wr, &bad), 0);
}

static int post(struct side *s, uint64_t id, enum ibv_wr_opcode op,
		uint32_t off, uint32_t len, uint64_t raddr, uint32_t imm,
		int flags)
{
	struct ibv_sge sg = { (uintptr_t)s->buf + off, len, s->mr->ibv.lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1,
				  .opcode = op, .send_flags = flags,
				  .imm_data = htonl(imm) }, *bad;
	struct side *peer;

	wr.wr.rdma.remote_addr = raddr;
	peer = s == &cli ? &srv : &cli;
	wr.wr.rdma.rkey = peer->mr ? peer->mr->ibv.rkey : 0;
	return xiw_post_send(s->qp, &wr, &bad);
}

static int modify(struct xiw_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = { .qp_state = st };

	return xiw_qp_modify(qp, &a, IBV_QP_STATE);
}

/* ------------------------------------------- receive completions --- */

#define NMSG 64
#define SLOT (64u * 1024)	/* receive buffer per message */

/* Message i: its length (some larger than a socket buffer's share). */
static uint32_t msg_len(int i)
{
	return i % 8 == 7 ? SLOT : 1 + (uint32_t)i * 397 % 6000;
}

/*
 * The client sends NMSG messages (SENDs, or every other one a
 * WRITE_WITH_IMM when @imm) into the server's NMSG posted receives while
 * nobody polls the server's CQ; then the server polls slowly.
 */
static void recv_burst(bool imm, bool srv_sends)
{
	enum { NW = 16 };	/* server's own WRITEs (shared CQ case) */

	fill(cli.buf, NMSG * SLOT, 11);
	memset(srv.buf + SINK, 0, NMSG * SLOT);
	for (int i = 0; i < NMSG; i++)
		post_recv(&srv, 100 + i, SINK + i * SLOT, SLOT);
	for (int i = 0; i < NMSG; i++) {
		bool w = imm && i % 2;

		assert_int_equal(post(&cli, 500 + i, w ?
				      IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND,
				      i * SLOT, msg_len(i),
				      IOVA_BASE + SINK + i * SLOT, 7000 + i,
				      IBV_SEND_SIGNALED), 0);
	}
	if (srv_sends)	/* they compete for the same 4 slots */
		for (int i = 0; i < NW; i++)
			assert_int_equal(post(&srv, 900 + i, IBV_WR_RDMA_WRITE,
					      0, 100, IOVA_BASE + SINK, 0,
					      IBV_SEND_SIGNALED), 0);
	wait_queued(srv.rcq, srv.rcq->size);
	usleep(200 * 1000);	/* nobody polls: the rest must wait */
	assert_true(cq_credits(srv.rcq).queued <= srv.rcq->size);
	expect_clean(srv.rcq, "server CQ before polling");

	for (int i = 0, w = 0; i < NMSG || (srv_sends && w < NW);) {
		struct ibv_wc wc;

		poll_wc(srv.rcq, &wc, 2000);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		if (wc.opcode == IBV_WC_RDMA_WRITE) {	/* shared CQ */
			assert_true(srv_sends);
			assert_int_equal(wc.wr_id, 900 + w++);
			continue;
		}
		assert_int_equal(wc.wr_id, 100 + i);
		if (imm && i % 2) {
			assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
			assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
			assert_int_equal(ntohl(wc.imm_data), 7000 + i);
		} else {
			assert_int_equal(wc.opcode, IBV_WC_RECV);
			assert_int_equal(wc.byte_len, msg_len(i));
		}
		if (memcmp(srv.buf + SINK + i * SLOT, cli.buf + i * SLOT,
			   msg_len(i)))
			fail_msg("message %d: data mismatch", i);
		i++;
		usleep(1000);
	}
	for (int i = 0; i < NMSG; i++)
		expect_wc(cli.scq, 500 + i, IBV_WC_SUCCESS,
			  imm && i % 2 ? IBV_WC_RDMA_WRITE : IBV_WC_SEND, 100);
	expect_clean(srv.rcq, "server CQ");
	expect_clean(cli.scq, "client CQ");
}

/* 64 SENDs into a 4-entry receive CQ that nobody polls. */
static void test_recv_credit(void **state)
{
	const struct sizes c = { 256, 16, 128, 16 }, s = { 64, 4, 16, NMSG };

	(void)state;
	connect_pair(&c, &s);
	recv_burst(false, false);
}

/* SENDs and WRITE_WITH_IMMs (each consumes a receive) alike. */
static void test_recv_credit_imm(void **state)
{
	const struct sizes c = { 256, 16, 128, 16 }, s = { 64, 4, 16, NMSG };

	(void)state;
	connect_pair(&c, &s);
	recv_burst(true, false);
}

/* One 4-entry CQ for the receiver's SQ and RQ, both busy. */
static void test_recv_credit_shared(void **state)
{
	const struct sizes c = { 256, 16, 128, 16 }, s = { 4, 0, 32, NMSG };

	(void)state;
	connect_pair(&c, &s);
	recv_burst(true, true);
}

/*
 * Receiver moved to ERROR while messages wait for CQE slots (one maybe
 * half received, holding its slot): the WCs come in posting order,
 * successes first, then FLUSH_ERR; no slot stays reserved.
 */
static void test_recv_credit_error(void **state)
{
	const struct sizes c = { 256, 16, 128, 16 }, s = { 64, 4, 16, NMSG };
	int ok = 2;

	(void)state;
	connect_pair(&c, &s);
	fill(cli.buf, NMSG * SLOT, 12);
	for (int i = 0; i < NMSG; i++)
		post_recv(&srv, 100 + i, SINK + i * SLOT, SLOT);
	for (int i = 0; i < NMSG; i++)
		assert_int_equal(post(&cli, 500 + i, IBV_WR_SEND, i * SLOT,
				      SLOT, 0, 0, IBV_SEND_SIGNALED), 0);
	wait_queued(srv.rcq, srv.rcq->size);
	usleep(100 * 1000);
	/* two slots free: the next messages start landing, then ERROR */
	expect_wc(srv.rcq, 100, IBV_WC_SUCCESS, IBV_WC_RECV, 100);
	expect_wc(srv.rcq, 101, IBV_WC_SUCCESS, IBV_WC_RECV, 100);
	assert_int_equal(modify(srv.qp, IBV_QPS_ERR), 0);
	for (int i = 2; i < NMSG; i++) {
		struct ibv_wc wc;

		poll_wc(srv.rcq, &wc, 500);
		assert_int_equal(wc.wr_id, 100 + i);
		assert_int_equal(wc.opcode, IBV_WC_RECV);
		if (wc.status == IBV_WC_SUCCESS) {
			assert_int_equal(ok, i);	/* successes first */
			ok++;
		} else {
			assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		}
	}
	assert_true(ok >= 4 && ok < NMSG);
	usleep(50 * 1000);
	assert_int_equal(xiw_cq_poll(srv.rcq, 1, &(struct ibv_wc){ 0 }), 0);
	expect_clean(srv.rcq, "server CQ");
}

/* ----------------------------------------------------------- flushes --- */

/* An unconnected QP in ERROR (INIT -> ERR). */
static void lone_qp(const struct sizes *z)
{
	side_init(&cli, z);
	assert_int_equal(modify(cli.qp, IBV_QPS_ERR), 0);
}

/* Poll @n WCs in batches of up to 16: wr_id @first.., FLUSH_ERR. */
static void expect_flushes(struct xiw_cq *cq, uint64_t first, int n,
			   enum ibv_wc_opcode op)
{
	struct ibv_wc wc[16];
	int got = 0;
	uint64_t t0 = now_ms();

	while (got < n) {
		int k = xiw_cq_poll(cq, 16, wc);

		for (int i = 0; i < k; i++) {
			if (wc[i].wr_id != first + got + i)
				fail_msg("WC %d: wr_id %llu, want %llu", got + i,
					 (unsigned long long)wc[i].wr_id,
					 (unsigned long long)(first + got + i));
			assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
			assert_int_equal(wc[i].opcode, op);
		}
		got += k;
		if (!k && now_ms() - t0 > WAIT_S * 1000)
			fail_msg("%d of %d flush WCs", got, n);
	}
}

/* 200 receives, 8-entry CQ, ERROR: all 200 FLUSH_ERR by polling. */
static void test_rq_flush_credit(void **state)
{
	const struct sizes z = { 8, 8, 16, 200 };
	struct ibv_wc wc[4];
	int n = 0;

	(void)state;
	side_init(&cli, &z);
	for (int i = 0; i < 200; i++)
		post_recv(&cli, 1000 + i, 0, 64);
	assert_int_equal(modify(cli.qp, IBV_QPS_ERR), 0);
	assert_int_equal(cq_credits(cli.rcq).queued, 8);
	/* the drain pattern: posted in ERROR, flushed behind the others;
	 * WRs still waiting for their flush WC count against the RQ */
	assert_int_equal(xiw_cq_poll(cli.rcq, 3, wc), 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(wc[i].wr_id, 1000 + i);
	for (; n < 200; n++) {
		struct ibv_sge sg = { (uintptr_t)cli.buf, 64, cli.mr->ibv.lkey };
		struct ibv_recv_wr wr = { .wr_id = 1200 + n, .sg_list = &sg,
					  .num_sge = 1 }, *bad;

		if (xiw_post_recv(cli.qp, &wr, &bad)) {
			assert_ptr_equal(bad, &wr);
			break;
		}
	}
	/* the poll of 3 let 3 more flush: 189 wait, 11 fit */
	assert_int_equal(n, 11);
	expect_flushes(cli.rcq, 1003, 197 + 11, IBV_WC_RECV);
	assert_int_equal(xiw_cq_poll(cli.rcq, 4, wc), 0);
	expect_clean(cli.rcq, "receive CQ");
}

/* 200 send WRs (some unsignalled) posted in ERROR, 8-entry CQ. */
static void test_sq_flush_credit(void **state)
{
	const struct sizes z = { 8, 8, 200, 16 };
	int n = 0;

	(void)state;
	lone_qp(&z);
	/* 8 flush at once, then WRs waiting for their WC fill the SQ */
	while (n < 1000 && !post(&cli, 2000 + n, IBV_WR_RDMA_WRITE, 0, 16, IOVA_BASE, 0,
		     n % 3 ? IBV_SEND_SIGNALED : 0))
		n++;
	assert_int_equal(n, 208);
	expect_flushes(cli.scq, 2000, 208, IBV_WC_RDMA_WRITE);
	expect_clean(cli.scq, "send CQ");
}

/*
 * Connected: 200 signalled WRITEs into an 8-entry send CQ nobody polls
 * (8 complete, the rest wait for credits), then ERROR.
 */
static void test_sq_flush_connected(void **state)
{
	const struct sizes c = { 8, 8, 256, 16 }, s = { 64, 64, 16, 16 };
	struct ibv_wc wc;

	(void)state;
	connect_pair(&c, &s);
	for (int i = 0; i < 200; i++)
		assert_int_equal(post(&cli, 3000 + i, IBV_WR_RDMA_WRITE,
				      i * 1024, 1024, IOVA_BASE + SINK + i * 1024,
				      0, IBV_SEND_SIGNALED), 0);
	wait_queued(cli.scq, 8);
	usleep(100 * 1000);
	assert_int_equal(modify(cli.qp, IBV_QPS_ERR), 0);
	for (int i = 0; i < 8; i++) {
		poll_wc(cli.scq, &wc, 100);
		assert_int_equal(wc.wr_id, 3000 + i);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	expect_flushes(cli.scq, 3008, 192, IBV_WC_RDMA_WRITE);
	expect_clean(cli.scq, "send CQ");
}

/*
 * Started WRs holding CQE slots behind one that cannot complete: the
 * server reads nothing (no receive for the client's first SEND), so the
 * client's unsignalled READ gets no response; three signalled WRITEs
 * behind it were sent and hold their slots. Send CQ of 4: 1 WC + 3
 * reserved. In ERROR the READ's flush WC has no room until a poll.
 */
static void stuck_behind_read(void)
{
	const struct sizes c = { 4, 8, 16, 16 }, s = { 64, 64, 16, 16 };

	connect_pair(&c, &s);
	assert_int_equal(post(&cli, 1, IBV_WR_SEND, 0, 100, 0, 0,
			      IBV_SEND_SIGNALED), 0);
	assert_int_equal(post(&cli, 2, IBV_WR_RDMA_READ, SINK, 100, IOVA_BASE,
			      0, 0), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(post(&cli, 3 + i, IBV_WR_RDMA_WRITE, 0, 100,
				      IOVA_BASE + SINK, 0, IBV_SEND_SIGNALED),
				 0);
	wait_queued(cli.scq, 1);
	usleep(100 * 1000);
	assert_int_equal(cq_credits(cli.scq).queued, 1);
	assert_int_equal(cq_credits(cli.scq).resv, 3);
	assert_int_equal(modify(cli.qp, IBV_QPS_ERR), 0);
}

static void test_flush_behind_read(void **state)
{
	(void)state;
	stuck_behind_read();
	expect_wc(cli.scq, 1, IBV_WC_SUCCESS, IBV_WC_SEND, 100);
	expect_wc(cli.scq, 2, IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_READ, 100);
	for (int i = 0; i < 3; i++)
		expect_wc(cli.scq, 3 + i, IBV_WC_WR_FLUSH_ERR,
			  IBV_WC_RDMA_WRITE, 100);
	expect_clean(cli.scq, "send CQ");
}

/* Destroying the QP instead gives its reserved slots back. */
static void test_flush_destroy_resv(void **state)
{
	struct ibv_wc wc[8];

	(void)state;
	stuck_behind_read();
	assert_int_equal(xiw_qp_destroy(cli.qp), 0);
	cli.qp = NULL;
	assert_int_equal(xiw_cq_poll(cli.scq, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 1);
	expect_clean(cli.scq, "send CQ");
	/* the whole CQ is usable again */
	for (uint32_t i = 0; i < cli.scq->size; i++)
		assert_int_equal(xiw_cq_push(cli.scq,
					     &(struct ibv_wc){ .wr_id = i },
					     false), 0);
	assert_int_equal(xiw_cq_poll(cli.scq, 8, wc), (int)cli.scq->size);
}

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_recv_credit, teardown),
		cmocka_unit_test_teardown(test_recv_credit_imm, teardown),
		cmocka_unit_test_teardown(test_recv_credit_shared, teardown),
		cmocka_unit_test_teardown(test_recv_credit_error, teardown),
		cmocka_unit_test_teardown(test_rq_flush_credit, teardown),
		cmocka_unit_test_teardown(test_sq_flush_credit, teardown),
		cmocka_unit_test_teardown(test_sq_flush_connected, teardown),
		cmocka_unit_test_teardown(test_flush_behind_read, teardown),
		cmocka_unit_test_teardown(test_flush_destroy_resv, teardown),
	};
	struct xiw_cm_listener *lst;
	int ret;

	/* the server of stuck_behind_read() waits for a receive: never
	 * let that end the stream during a test */
	setenv("XIW_RQ_WAIT_MS", "60000", 1);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (xiw_cm_listen((struct sockaddr *)&a, 16, on_event, &srv, &lst,
			  &bound)) {
		fprintf(stderr, "listen on 127.0.0.1 failed\n");
		return 1;
	}
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	xiw_cm_listener_destroy(lst);
	free(cli.buf);
	free(srv.buf);
	return ret;
}
