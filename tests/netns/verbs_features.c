// SPDX-License-Identifier: MIT
/*
 * verbs_features: verbs features through xiwarp's libibverbs/librdmacm on
 * one real connection (both ends in this process, over ADDR):
 *
 *   verbs_features [ADDR]     (default 127.0.0.1)
 *
 * IBV_EVENT_PORT_ACTIVE on the async_fd after open; ibv_query_device
 * (atomic_cap) and ibv_query_qp on a connected QP; SEND_WITH_IMM (the
 * data, then the immediate as its own receive, RFC 7306); RFC 7306
 * atomics (fetch-add, compare-swap, original values back); ibv_resize_cq
 * with traffic before and after; ibv_rereg_mr, after which a WRITE with
 * the old rkey is refused by TERMINATE: REM_ACCESS_ERR on the writer and
 * IBV_EVENT_QP_FATAL for both QPs on the async_fd. The server's QP takes
 * its receives from an SRQ: ibv_post_recv refused, the SRQ limit event
 * fires once when the count drops below it, and LAST_WQE_REACHED comes
 * when that QP enters ERROR. A type 2 memory window bound by a WR takes
 * a WRITE, pins its MR (dereg: EBUSY) and is invalidated by the peer's
 * SEND with Invalidate. Every wait is bounded
 * (5 s). Prints "ok"/"not ok" lines; exit 0 = all passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

#define WAIT_MS 5000
#define BUF 65536

static const char *addr = "127.0.0.1";
static int failures;

#define CHECK(cond, ...) check(!!(cond), #cond, __VA_ARGS__)

static int check(int ok, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int check(int ok, const char *expr, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!ok) {
		printf(" (%s; errno %s)", expr, strerror(errno));
		failures++;
	}
	printf("\n");
	fflush(stdout);
	return ok;
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

struct end {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_srq *srq;
	uint8_t *buf;
};

static struct end cli, srv;
static struct rdma_cm_id *listener;

static struct rdma_cm_event *expect(struct rdma_event_channel *ch,
				    enum rdma_cm_event_type type)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, WAIT_MS) != 1 || rdma_get_cm_event(ch, &ev))
		return NULL;
	if (ev->event != type) {
		printf("# got %s, wanted %s\n", rdma_event_str(ev->event),
		       rdma_event_str(type));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static int ack(struct rdma_cm_event *ev)
{
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	return 0;
}

static int setup_qp(struct end *e, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC };

	e->pd = ibv_alloc_pd(id->verbs);
	e->cq = e->pd ? ibv_create_cq(id->verbs, 8, NULL, NULL, 0) : NULL;
	e->buf = aligned_alloc(4096, BUF);
	if (!e->cq || !e->buf)
		return -1;
	memset(e->buf, 0, BUF);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND);
	if (e == &srv) {	/* the server's receives come from an SRQ */
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16,
							  .max_sge = 1 } };

		e->srq = ibv_create_srq(e->pd, &sa);
		if (!e->srq)
			return -1;
		a.srq = e->srq;
	}
	a.send_cq = a.recv_cq = e->cq;
	a.cap.max_send_wr = a.cap.max_recv_wr = 16;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	return e->mr && !rdma_create_qp(id, e->pd, &a) ? 0 : -1;
}

static int connect_pair(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_conn_param cp = { .responder_resources = 4,
				      .initiator_depth = 4 };
	struct rdma_cm_event *req;

	cli.ch = rdma_create_event_channel();
	srv.ch = rdma_create_event_channel();
	inet_pton(AF_INET, addr, &sin.sin_addr);
	if (rdma_create_id(srv.ch, &listener, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listener, (struct sockaddr *)&sin) ||
	    rdma_listen(listener, 4))
		return -1;
	sin.sin_port = rdma_get_src_port(listener);
	if (rdma_create_id(cli.ch, &cli.id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(cli.id, NULL, (struct sockaddr *)&sin, 2000) ||
	    ack(expect(cli.ch, RDMA_CM_EVENT_ADDR_RESOLVED)) ||
	    rdma_resolve_route(cli.id, 2000) ||
	    ack(expect(cli.ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) ||
	    setup_qp(&cli, cli.id) || rdma_connect(cli.id, &cp))
		return -1;
	req = expect(srv.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!req)
		return -1;
	srv.id = req->id;
	rdma_ack_cm_event(req);
	if (setup_qp(&srv, srv.id) || rdma_accept(srv.id, &cp))
		return -1;
	return ack(expect(srv.ch, RDMA_CM_EVENT_ESTABLISHED)) ||
	       ack(expect(cli.ch, RDMA_CM_EVENT_ESTABLISHED));
}

/* One WC from @cq within WAIT_MS (status/opcode left to the caller). */
static int poll1(struct ibv_cq *cq, struct ibv_wc *wc)
{
	long long end = now_ms() + WAIT_MS;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
	} while (now_ms() < end);
	return 0;
}

static int post_recv(struct end *e, uint64_t id, uint32_t off, uint32_t len)
{
	struct ibv_sge sg = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (e->srq)
		return ibv_post_srq_recv(e->srq, &wr, &bad);
	return ibv_post_recv(e->id->qp, &wr, &bad);
}

/* ibv_get_async_event, non-blocking, within WAIT_MS; -1 if none. */
static int async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&p, 1, WAIT_MS) != 1 || ibv_get_async_event(ctx, ev))
		return -1;
	ibv_ack_async_event(ev);
	return 0;
}

static void test_port_event(struct ibv_context *ctx)
{
	struct ibv_async_event ev;

	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	CHECK(!async_event(ctx, &ev) && ev.event_type == IBV_EVENT_PORT_ACTIVE &&
	      ev.element.port_num == 1, "async_fd: %s on port 1 after open",
	      ibv_event_type_str(IBV_EVENT_PORT_ACTIVE));
}

static void test_query(void)
{
	struct ibv_device_attr da = { 0 };
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	int ret = ibv_query_device(cli.id->verbs, &da);

	CHECK(!ret && da.atomic_cap == IBV_ATOMIC_HCA,
	      "device advertises atomics (atomic_cap %d)", da.atomic_cap);
	CHECK(!ibv_query_qp(cli.id->qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qi) &&
	      qa.qp_state == IBV_QPS_RTS && qa.cap.max_send_wr >= 16 &&
	      qi.send_cq == cli.cq && qi.qp_type == IBV_QPT_RC,
	      "ibv_query_qp: RTS, caps, init attrs");
}

static void test_send_imm(void)
{
	struct ibv_sge sg = { (uintptr_t)cli.buf, 1000, cli.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(0xfeed) }, *bad;
	struct ibv_wc wc, w1, w2;

	memset(cli.buf, 'x', 1000);
	post_recv(&srv, 10, 0, 4096);
	post_recv(&srv, 11, 8192, 64);
	CHECK(!ibv_post_send(cli.id->qp, &wr, &bad), "post SEND_WITH_IMM");
	CHECK(poll1(cli.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_SEND, "sender: IBV_WC_SEND");
	CHECK(poll1(srv.cq, &w1) && poll1(srv.cq, &w2), "receiver: two WCs");
	CHECK(w1.wr_id == 10 && w1.opcode == IBV_WC_RECV && w1.byte_len == 1000 &&
	      !(w1.wc_flags & IBV_WC_WITH_IMM) && srv.buf[999] == 'x',
	      "the data: RECV, 1000 bytes");
	CHECK(w2.wr_id == 11 && w2.opcode == IBV_WC_RECV &&
	      (w2.wc_flags & IBV_WC_WITH_IMM) && ntohl(w2.imm_data) == 0xfeed,
	      "the immediate: RECV with IBV_WC_WITH_IMM, imm 0x%x",
	      ntohl(w2.imm_data));
}

static uint64_t atomic(enum ibv_wr_opcode op, uint64_t cmp_add, uint64_t swap,
		       int *ok)
{
	struct ibv_sge sg = { (uintptr_t)cli.buf + 4096, 8, cli.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sg, .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	uint64_t v;

	wr.wr.atomic.remote_addr = (uintptr_t)srv.buf + 16384;
	wr.wr.atomic.rkey = srv.mr->rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	*ok = !ibv_post_send(cli.id->qp, &wr, &bad) && poll1(cli.cq, &wc) &&
	      wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == (op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP :
			    IBV_WC_FETCH_ADD);
	memcpy(&v, cli.buf + 4096, 8);
	return v;
}

static void test_atomics(void)
{
	uint64_t *t = (uint64_t *)(srv.buf + 16384);
	uint64_t v;
	int ok;

	*t = 40;
	v = atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 2, 0, &ok);
	CHECK(ok && v == 40 && *t == 42, "fetch-add: got %llu, now %llu",
	      (unsigned long long)v, (unsigned long long)*t);
	v = atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 42, 7, &ok);
	CHECK(ok && v == 42 && *t == 7, "compare-swap (match): got %llu, now %llu",
	      (unsigned long long)v, (unsigned long long)*t);
	v = atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 42, 9, &ok);
	CHECK(ok && v == 7 && *t == 7, "compare-swap (no match): got %llu, now %llu",
	      (unsigned long long)v, (unsigned long long)*t);
}

/*
 * A WRITE of 512 bytes to the server's buffer at @off (signalled, or not
 * and then followed by a READ of the same place): the WC of the last of
 * them in @wc.
 */
static int write_at(uint64_t id, uint32_t rkey, uint32_t off, int then_read,
		    struct ibv_wc *wc)
{
	struct ibv_sge sg = { (uintptr_t)cli.buf, 512, cli.mr->lkey };
	struct ibv_send_wr rd, wr = { .wr_id = id, .sg_list = &sg,
				      .num_sge = 1,
				      .opcode = IBV_WR_RDMA_WRITE }, *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)srv.buf + off;
	wr.wr.rdma.rkey = rkey;
	rd = wr;
	rd.opcode = IBV_WR_RDMA_READ;
	rd.wr.rdma.rkey = srv.mr->rkey;
	rd.send_flags = IBV_SEND_SIGNALED;
	if (then_read)
		wr.next = &rd;
	else
		wr.send_flags = IBV_SEND_SIGNALED;
	return !ibv_post_send(cli.id->qp, &wr, &bad) && poll1(cli.cq, wc);
}

static int send_one(uint64_t id, uint32_t len)
{
	struct ibv_sge sg = { (uintptr_t)cli.buf, len, cli.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	return !ibv_post_send(cli.id->qp, &wr, &bad) && poll1(cli.cq, &wc) &&
	       wc.status == IBV_WC_SUCCESS;
}

static void test_srq(void)
{
	struct ibv_srq_attr sa = { .srq_limit = 2 };
	struct ibv_recv_wr rwr = { .wr_id = 1 }, *bad;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	int got = 0, rc;

	CHECK(ibv_post_recv(srv.id->qp, &rwr, &bad) == EINVAL,
	      "ibv_post_recv on a QP with an SRQ: EINVAL");
	for (int i = 0; i < 3; i++)
		post_recv(&srv, 20 + i, 1024 * i, 1024);
	CHECK(!ibv_modify_srq(srv.srq, &sa, IBV_SRQ_LIMIT), "arm SRQ limit 2");
	for (int i = 0; i < 2; i++)
		got += send_one(30 + i, 100 + i) && poll1(srv.cq, &wc) &&
		       wc.status == IBV_WC_SUCCESS && wc.wr_id == 20u + i &&
		       wc.byte_len == 100u + i && wc.qp_num == srv.id->qp->qp_num;
	CHECK(got == 2, "two SENDs land in SRQ WRs, in order (%d)", got);
	CHECK(!async_event(srv.id->verbs, &ev) &&
	      ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
	      ev.element.srq == srv.srq, "async_fd: SRQ limit reached");
	/* queried first: CHECK's arguments have no evaluation order */
	memset(&sa, 0xff, sizeof(sa));
	rc = ibv_query_srq(srv.srq, &sa);
	CHECK(!rc && sa.srq_limit == 0 && sa.max_wr >= 16 && sa.max_sge >= 1,
	      "query_srq: limit disarmed after the event, max_wr %u max_sge %u",
	      sa.max_wr, sa.max_sge);
	/* the third WR is still there for the next message */
	CHECK(send_one(32, 7) && poll1(srv.cq, &wc) && wc.wr_id == 22,
	      "third SEND takes the remaining SRQ WR");
	/* resize with WRs queued: they stay, in order, and more fit */
	for (int i = 0; i < 4; i++)
		post_recv(&srv, 40 + i, 1024 * i, 1024);
	sa = (struct ibv_srq_attr){ .max_wr = 40 };
	rc = ibv_modify_srq(srv.srq, &sa, IBV_SRQ_MAX_WR);
	memset(&sa, 0, sizeof(sa));
	rc = rc ? rc : ibv_query_srq(srv.srq, &sa);
	CHECK(!rc && sa.max_wr == 40,
	      "ibv_modify_srq IBV_SRQ_MAX_WR 16 -> %u with 4 WRs queued", sa.max_wr);
	got = 0;
	for (int i = 4; i < 30; i++)	/* 30 queued: more than the old 16 */
		got += !post_recv(&srv, 40 + i, 1024 * (i % 4), 1024);
	CHECK(got == 26, "26 more WRs posted after the resize (%d)", got);
	got = 0;
	for (int i = 0; i < 30; i++)
		got += send_one(70 + i, 8) && poll1(srv.cq, &wc) &&
		       wc.status == IBV_WC_SUCCESS && wc.wr_id == 40u + i;
	CHECK(got == 30, "30 SENDs take the resized SRQ's WRs in order (%d)", got);
}

static int write_one(uint64_t id, uint32_t rkey, int then_read,
		     struct ibv_wc *wc)
{
	return write_at(id, rkey, 32768, then_read, wc);
}

static struct ibv_mw *mw;

static void test_mw(void)
{
	struct ibv_send_wr bw = { .wr_id = 50, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_sge sg = { (uintptr_t)cli.buf, 64, cli.mr->lkey };
	struct ibv_send_wr sw = { .wr_id = 52, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED };
	uint32_t rkey;
	struct ibv_wc wc;
	int ret;

	mw = ibv_alloc_mw(srv.pd, IBV_MW_TYPE_2);
	if (!CHECK(mw && mw->type == IBV_MW_TYPE_2, "ibv_alloc_mw type 2"))
		return;
	rkey = ibv_inc_rkey(mw->rkey);
	bw.bind_mw.mw = mw;
	bw.bind_mw.rkey = rkey;
	bw.bind_mw.bind_info.mr = srv.mr;
	bw.bind_mw.bind_info.addr = (uintptr_t)srv.buf + 40960;
	bw.bind_mw.bind_info.length = 4096;
	bw.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	ret = ibv_post_send(srv.id->qp, &bw, &bad);
	CHECK(!ret && poll1(srv.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_BIND_MW && mw->rkey == rkey,
	      "IBV_WR_BIND_MW: window over 4 KB, rkey 0x%x", rkey);
	CHECK(ibv_dereg_mr(srv.mr) == EBUSY, "ibv_dereg_mr of the bound MR: EBUSY");
	memset(cli.buf, 'w', 512);
	CHECK(write_at(51, rkey, 40960 + 1024, 0, &wc) &&
	      wc.status == IBV_WC_SUCCESS, "WRITE through the window");
	post_recv(&srv, 53, 0, 1024);
	sw.invalidate_rkey = rkey;
	ret = ibv_post_send(cli.id->qp, &sw, &bad);
	CHECK(!ret && poll1(cli.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      poll1(srv.cq, &wc) && wc.wr_id == 53 &&
	      (wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == rkey,
	      "SEND with Invalidate: receiver's WC names the window's rkey");
	/* the SEND came after the WRITE on the stream: its bytes are in */
	CHECK(srv.buf[40960 + 1024 + 511] == 'w' && srv.buf[40960 + 1024] == 'w',
	      "the WRITE through the window landed in the MR");
}

/*
 * Type 1 window: ibv_bind_mw(3) on the server's QP, a WRITE through it,
 * rebound elsewhere (new rkey), a WRITE through the new rkey, then a
 * zero-length bind unbinds it (a WRITE through it would be refused and
 * end the connection: not done here).
 */
static void test_mw1(void)
{
	struct ibv_mw *w = ibv_alloc_mw(srv.pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind b = { .wr_id = 60, .send_flags = IBV_SEND_SIGNALED };
	uint32_t k0, k1, k2;
	struct ibv_wc wc;
	int ret;

	if (!CHECK(w && w->type == IBV_MW_TYPE_1, "ibv_alloc_mw type 1"))
		return;
	k0 = w->rkey;
	b.bind_info.mr = srv.mr;
	b.bind_info.addr = (uintptr_t)srv.buf + 45056;
	b.bind_info.length = 2048;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	ret = ibv_bind_mw(srv.id->qp, w, &b);
	k1 = w->rkey;
	CHECK(!ret && k1 != k0 && poll1(srv.cq, &wc) &&
	      wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW &&
	      wc.wr_id == 60, "ibv_bind_mw (type 1): rkey 0x%x -> 0x%x", k0, k1);
	memset(cli.buf, '1', 512);
	/* a WRITE completes once sent: the READ behind it makes sure it was
	 * placed before the window moves (else the peer refuses it) */
	CHECK(write_at(61, k1, 45056 + 1024, 1, &wc) &&
	      wc.status == IBV_WC_SUCCESS, "WRITE through the type 1 window");
	/* rebound in place over another range */
	b.wr_id = 62;
	b.bind_info.addr = (uintptr_t)srv.buf + 49152;
	ret = ibv_bind_mw(srv.id->qp, w, &b);
	k2 = w->rkey;
	CHECK(!ret && k2 != k1 && poll1(srv.cq, &wc) &&
	      wc.status == IBV_WC_SUCCESS && wc.wr_id == 62,
	      "ibv_bind_mw again: rebound, rkey 0x%x", k2);
	memset(cli.buf, '2', 512);
	/* a READ behind the WRITE: its bytes are in once it completes */
	CHECK(write_at(63, k2, 49152, 1, &wc) && wc.status == IBV_WC_SUCCESS &&
	      srv.buf[45056 + 1024] == '1' && srv.buf[45056 + 1535] == '1' &&
	      srv.buf[49152] == '2' && srv.buf[49152 + 511] == '2',
	      "WRITE through the rebound window; both WRITEs landed");
	b.wr_id = 64;
	b.bind_info.mr = NULL;
	b.bind_info.addr = 0;
	b.bind_info.length = 0;
	ret = ibv_bind_mw(srv.id->qp, w, &b);
	CHECK(!ret && poll1(srv.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 64, "zero-length ibv_bind_mw unbinds");
	CHECK(!ibv_dealloc_mw(w), "ibv_dealloc_mw (type 1)");
}

static void test_resize(void)
{
	struct ibv_wc wc;

	int ret = ibv_resize_cq(cli.cq, 100);

	CHECK(!ret && cli.cq->cqe >= 100, "ibv_resize_cq 8 -> %d", cli.cq->cqe);
	CHECK(write_one(3, srv.mr->rkey, 0, &wc) && wc.status == IBV_WC_SUCCESS,
	      "traffic after resize");
}

/*
 * rereg: a new rkey that works; then the invalidated window's rkey is
 * refused and ends the connection (the MW is gone: the last test).
 */
static void test_rereg_fatal(void)
{
	struct ibv_context *ctx = cli.id->verbs;
	uint32_t old = srv.mr->rkey;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	int fatal = 0, last = 0, i;

	int ret = ibv_rereg_mr(srv.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			       IBV_ACCESS_REMOTE_WRITE);

	CHECK(!ret && srv.mr->rkey != old, "ibv_rereg_mr: new rkey 0x%x (was 0x%x)",
	      srv.mr->rkey, old);
	CHECK(write_one(5, srv.mr->rkey, 0, &wc) && wc.status == IBV_WC_SUCCESS,
	      "WRITE with the new rkey");
	/* a WRITE completes once sent: the READ behind it gets the refusal
	 * (run first: CHECK's arguments have no evaluation order) */
	ret = mw ? write_at(4, mw->rkey, 40960, 1, &wc) : 0;
	CHECK(ret && wc.status == IBV_WC_REM_ACCESS_ERR,
	      "WRITE through the invalidated window, READ behind it: %s",
	      ret ? ibv_wc_status_str(wc.status) : "no WC");
	for (i = 0; i < 3 && !async_event(ctx, &ev); i++) {
		fatal += ev.event_type == IBV_EVENT_QP_FATAL &&
			 (ev.element.qp == cli.id->qp || ev.element.qp == srv.id->qp);
		last += ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
			ev.element.qp == srv.id->qp;
	}
	CHECK(fatal == 2, "async_fd: IBV_EVENT_QP_FATAL for both QPs (%d)", fatal);
	CHECK(last == 1, "async_fd: IBV_EVENT_QP_LAST_WQE_REACHED for the SRQ's QP");
}

int main(int argc, char **argv)
{
	if (argc > 1)
		addr = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!CHECK(!connect_pair(), "connected pair over %s", addr))
		return 1;
	test_port_event(cli.id->verbs);
	test_query();
	test_send_imm();
	test_atomics();
	test_srq();
	test_mw();
	test_mw1();
	test_resize();
	test_rereg_fatal();
	CHECK(mw && !ibv_dealloc_mw(mw), "ibv_dealloc_mw");
	printf("%s: %d failure(s)\n", argv[0], failures);
	return failures ? 1 : 0;
}
