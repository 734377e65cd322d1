/* SPDX-License-Identifier: MIT */
/*
 * xiw_victim — an ordinary rdma_cm + verbs program (public API only) that
 * is attacked by the fault tests and then says what it saw.
 *
 * Server: listen, accept one connection, register an MR of --size bytes
 * between two 4 KiB guard regions of 0xA5 with the --access rights given,
 * post receives, and hand the MR's STag/address/length to the peer in the
 * accept's private data (be32 STag, be64 address, be32 length). Then watch
 * CM events, completions and async events until the --expect'ed outcome is
 * complete or --timeout, and check it.
 *
 * Client: connect to such a server, learn its MR from the private data and
 * run one --op: a stream of WRITEs (the kill tests) or one invalid WRITE or
 * READ (the verbs-level negative tests), and check the outcome.
 *
 * Exit: 0 the expected outcome was seen, 1 not, 2 setup failure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define GUARD 4096
#define GUARD_BYTE 0xA5
#define MR_BYTE 0x5A
#define RECV_SIZE 4096
#define PDATA_LEN 16
#define HELLO "xiw-hostile-hello"	/* what xiw_hostile --case good sends */
/* wr_id: receives carry WR_RECV | index, the client op's own WRs
 * WR_PROBE | n, stream WRITEs a plain counter. */
#define WR_RECV (1ull << 40)
#define WR_PROBE (1ull << 41)

enum expect { EXP_ERROR, EXP_GOOD, EXP_DISCONNECT, EXP_NONE };
enum op { OP_NONE, OP_STREAM, OP_WRITE, OP_WRITE_BAD_STAG, OP_WRITE_OOB,
	  OP_READ, OP_READ_OOB };

struct vopts {
	bool server, mr_untouched;
	const char *addr, *port;
	size_t size, msg;
	int access, ird, ord, recvs, depth;
	enum expect expect;
	enum op op;
	double timeout;
};

struct victim {
	struct vopts o;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *region, *mr_buf, *rbuf, *lbuf;
	size_t region_len;
	struct ibv_mr *mr, *rmr, *lmr;
	/* the server's MR as the client learned it */
	uint32_t r_stag, r_len;
	uint64_t r_addr;
	/* what happened */
	bool established, disconnected, cm_failed, setup_failed, got_pdata;
	unsigned recv_out, send_out;	/* posted, not yet completed */
	unsigned wc_ok, wc_flush, wc_err, recv_ok, hello_ok, write_ok;
	unsigned probe_bad;		/* the op's own WR ended non-success */
	unsigned probe_status;		/* ... with this status */
	unsigned send_flush, ok_after_disc, out_at_disc;
	unsigned long posted;
	bool post_failed, streaming_said;
	int qp_state;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);	/* the test script reads our log while we run */
}

/* ------------------------------------------------------- memory ------- */

/* The MR sits between two guard pages of GUARD_BYTE: a placement that
 * escapes the bounds check lands there and is found at exit. */
static int alloc_region(struct victim *v)
{
	v->region_len = GUARD + v->o.size + GUARD;
	v->region = mmap(NULL, v->region_len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->region == MAP_FAILED)
		return -1;
	memset(v->region, GUARD_BYTE, GUARD);
	v->mr_buf = v->region + GUARD;
	memset(v->mr_buf, MR_BYTE, v->o.size);
	memset(v->mr_buf + v->o.size, GUARD_BYTE, GUARD);
	v->rbuf = calloc((size_t)v->o.recvs, RECV_SIZE);
	v->lbuf = calloc(1, v->o.msg);
	return v->rbuf && v->lbuf ? 0 : -1;
}

static size_t count_not(const uint8_t *p, size_t n, uint8_t b)
{
	size_t bad = 0;

	for (size_t i = 0; i < n; i++)
		bad += p[i] != b;
	return bad;
}

static int reg_mrs(struct victim *v)
{
	int lw = IBV_ACCESS_LOCAL_WRITE;

	v->mr = ibv_reg_mr(v->pd, v->mr_buf, v->o.size, lw | v->o.access);
	v->rmr = ibv_reg_mr(v->pd, v->rbuf, (size_t)v->o.recvs * RECV_SIZE, lw);
	v->lmr = ibv_reg_mr(v->pd, v->lbuf, v->o.msg, lw);
	if (!v->mr || !v->rmr || !v->lmr)
		return say("ibv_reg_mr failed: %s\n", strerror(errno)), -1;
	say("MR stag 0x%08x addr %p len %zu access 0x%x (guards %d bytes each side)\n",
	    v->mr->rkey, (void *)v->mr_buf, v->o.size, v->o.access, GUARD);
	return 0;
}

/* ------------------------------------------------------- queues ------- */

static int post_recvs(struct victim *v)
{
	for (int i = 0; i < v->o.recvs; i++) {
		struct ibv_sge sge = { (uintptr_t)(v->rbuf + (size_t)i * RECV_SIZE),
				       RECV_SIZE, v->rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = WR_RECV | (unsigned)i,
					  .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_recv(v->qp, &wr, &bad))
			return say("ibv_post_recv failed\n"), -1;
		v->recv_out++;
	}
	return 0;
}

static int setup_qp(struct victim *v, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = { 0 };
	int cqe = v->o.depth * 2 + v->o.recvs + 16;

	v->pd = ibv_alloc_pd(id->verbs);
	v->cq = v->pd ? ibv_create_cq(id->verbs, cqe, NULL, NULL, 0) : NULL;
	if (!v->cq)
		return say("ibv_alloc_pd/create_cq failed: %s\n", strerror(errno)), -1;
	qa.send_cq = qa.recv_cq = v->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = (uint32_t)v->o.depth;
	qa.cap.max_recv_wr = (uint32_t)v->o.recvs;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, v->pd, &qa))
		return say("rdma_create_qp failed: %s\n", strerror(errno)), -1;
	v->qp = id->qp;
	if (reg_mrs(v) || post_recvs(v))
		return -1;
	/* async events (QP fatal, ...) are printed as they come */
	fcntl(id->verbs->async_fd, F_SETFL,
	      fcntl(id->verbs->async_fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

static void conn_param(struct victim *v, struct rdma_conn_param *cp, uint8_t *pd)
{
	memset(cp, 0, sizeof(*cp));
	cp->responder_resources = (uint8_t)v->o.ird;
	cp->initiator_depth = (uint8_t)v->o.ord;
	cp->retry_count = 7;
	if (pd) {
		uint32_t stag = htonl(v->mr->rkey), len = htonl((uint32_t)v->o.size);
		uint64_t a = (uintptr_t)v->mr_buf;
		uint32_t hi = htonl((uint32_t)(a >> 32)), lo = htonl((uint32_t)a);

		memcpy(pd, &stag, 4);
		memcpy(pd + 4, &hi, 4);
		memcpy(pd + 8, &lo, 4);
		memcpy(pd + 12, &len, 4);
		cp->private_data = pd;
		cp->private_data_len = PDATA_LEN;
	}
}

/* Server: a CONNECT_REQUEST arrived; set up and accept (one only). */
static void server_accept(struct victim *v, struct rdma_cm_id *id)
{
	struct rdma_conn_param cp;
	uint8_t pd[PDATA_LEN];

	if (v->id) {
		say("second connection request rejected\n");
		rdma_reject(id, NULL, 0);
		return;
	}
	v->id = id;
	if (setup_qp(v, id)) {
		v->setup_failed = true;
		rdma_reject(id, NULL, 0);
		return;
	}
	conn_param(v, &cp, pd);
	if (rdma_accept(id, &cp)) {
		say("rdma_accept failed: %s\n", strerror(errno));
		v->setup_failed = true;
	}
}

/* Client: ESTABLISHED carries the server's MR in the private data. */
static void client_learn(struct victim *v, const struct rdma_conn_param *p)
{
	const uint8_t *d = p->private_data;
	uint32_t w[4];

	if (!d || p->private_data_len < PDATA_LEN) {
		say("ESTABLISHED without the server's %d bytes of private data (got %u)\n",
		    PDATA_LEN, p->private_data_len);
		return;
	}
	memcpy(w, d, sizeof(w));
	v->r_stag = ntohl(w[0]);
	v->r_addr = (uint64_t)ntohl(w[1]) << 32 | ntohl(w[2]);
	v->r_len = ntohl(w[3]);
	v->got_pdata = true;
	say("server MR: stag 0x%08x addr 0x%llx len %u\n", v->r_stag,
	    (unsigned long long)v->r_addr, v->r_len);
}

static void client_connect(struct victim *v, struct rdma_cm_id *id)
{
	struct rdma_conn_param cp;

	if (setup_qp(v, id)) {
		v->setup_failed = true;
		return;
	}
	conn_param(v, &cp, NULL);
	if (rdma_connect(id, &cp)) {
		say("rdma_connect failed: %s\n", strerror(errno));
		v->setup_failed = true;
	}
}

/* ----------------------------------------------------- CM events ------ */

static void on_cm_event(struct victim *v, struct rdma_cm_event *ev)
{
	say("cm event: %s (status %d)\n", rdma_event_str(ev->event), ev->status);
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		server_accept(v, ev->id);
		break;
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ev->id, 2000))
			v->cm_failed = true;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		client_connect(v, ev->id);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		v->established = true;
		if (!v->o.server)
			client_learn(v, &ev->param.conn);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		v->disconnected = true;
		v->out_at_disc = v->send_out;
		say("at DISCONNECTED: %u send WRs outstanding\n", v->send_out);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		v->cm_failed = true;
		break;
	default:
		break;
	}
}

/* One event per call, and only after poll() said the fd is readable: if
 * O_NONBLOCK did not take, a blocking read here would hang the test. */
static void one_cm_event(struct victim *v)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(v->ch, &ev) == 0) {
		on_cm_event(v, ev);
		rdma_ack_cm_event(ev);
	}
}

static void one_async_event(struct victim *v)
{
	struct ibv_async_event ae;

	if (ibv_get_async_event(v->id->verbs, &ae) == 0) {
		say("async event: %s\n", ibv_event_type_str(ae.event_type));
		ibv_ack_async_event(&ae);
	}
}

/* ----------------------------------------------------- completions ---- */

static void on_recv_ok(struct victim *v, const struct ibv_wc *wc)
{
	const uint8_t *b = v->rbuf + (wc->wr_id & 0xffff) * RECV_SIZE;

	v->recv_ok++;
	if (wc->byte_len == strlen(HELLO) && !memcmp(b, HELLO, strlen(HELLO)))
		v->hello_ok++;
}

static void on_wc(struct victim *v, const struct ibv_wc *wc)
{
	bool recv = (wc->wr_id & WR_RECV) != 0;

	if (recv)
		v->recv_out--;
	else
		v->send_out--;
	if (wc->status == IBV_WC_SUCCESS) {
		v->wc_ok++;
		v->ok_after_disc += v->disconnected && !recv;
		if (recv)
			on_recv_ok(v, wc);
		else if (wc->opcode == IBV_WC_RDMA_WRITE)
			v->write_ok++;
		if (v->wc_ok <= 4 || recv)	/* a stream makes many */
			say("wc: %s opcode %d len %u wr_id 0x%llx\n",
			    ibv_wc_status_str(wc->status), wc->opcode, wc->byte_len,
			    (unsigned long long)wc->wr_id);
		return;
	}
	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		v->wc_flush++;
	else
		v->wc_err++;
	v->send_flush += !recv;
	if (wc->wr_id & WR_PROBE) {
		v->probe_bad++;
		v->probe_status = wc->status;
	}
	if (v->wc_flush + v->wc_err <= 8 || (wc->wr_id & WR_PROBE))
		say("wc: %s (%d) %s wr_id 0x%llx vendor_err %u\n",
		    ibv_wc_status_str(wc->status), wc->status, recv ? "recv" : "send",
		    (unsigned long long)wc->wr_id, wc->vendor_err);
}

static void drain_cq(struct victim *v)
{
	struct ibv_wc wc[16];
	int n;

	if (!v->cq)
		return;
	while ((n = ibv_poll_cq(v->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++)
			on_wc(v, &wc[i]);
}

/* ------------------------------------------------------ client ops ---- */

static int post_one(struct victim *v, enum ibv_wr_opcode opc, uint64_t raddr,
		    uint32_t rkey, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)v->lbuf, len, v->lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = opc, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int rv;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	rv = ibv_post_send(v->qp, &wr, &bad);
	if (rv) {
		if (!v->post_failed)
			say("ibv_post_send: %s (QP no longer accepts work)\n", strerror(rv));
		v->post_failed = true;
		/* the TERMINATE beat our probe: the QP refused it already */
		v->probe_bad += (wr_id & WR_PROBE) != 0;
		return -1;
	}
	v->send_out++;
	v->posted++;
	return 0;
}

/* Keep --depth WRITEs of --msg bytes in flight across the server's MR. */
static void stream_refill(struct victim *v)
{
	uint64_t span = v->r_len >= v->o.msg ? v->r_len - v->o.msg + 1 : 1;

	while (!v->post_failed && v->send_out < (unsigned)v->o.depth) {
		uint64_t off = (v->posted * v->o.msg) % span;

		if (post_one(v, IBV_WR_RDMA_WRITE, v->r_addr + off, v->r_stag,
			     (uint32_t)v->o.msg, 1 + v->posted))
			return;
	}
	if (!v->streaming_said && v->write_ok >= 64) {
		v->streaming_said = true;
		say("streaming: %u WRITEs completed\n", v->write_ok);
	}
}

/* One bad (or, against a server without the right, forbidden) operation,
 * then a probe READ that can only complete if the server let it pass. */
static void run_single_op(struct victim *v)
{
	uint64_t a = v->r_addr, end = v->r_addr + v->r_len;
	uint32_t k = v->r_stag;

	switch (v->o.op) {
	case OP_WRITE:
		post_one(v, IBV_WR_RDMA_WRITE, a, k, 64, WR_PROBE | 1);
		break;
	case OP_WRITE_BAD_STAG:
		post_one(v, IBV_WR_RDMA_WRITE, a, k ^ 0xffffff00u, 64, WR_PROBE | 1);
		break;
	case OP_WRITE_OOB:
		post_one(v, IBV_WR_RDMA_WRITE, end - 32, k, 64, WR_PROBE | 1);
		break;
	case OP_READ:
		post_one(v, IBV_WR_RDMA_READ, a, k, 64, WR_PROBE | 2);
		return;
	case OP_READ_OOB:
		post_one(v, IBV_WR_RDMA_READ, end - 32, k, 64, WR_PROBE | 2);
		return;
	default:
		return;
	}
	/* The WRITE may complete locally before the server objects; the
	 * READ behind it is answered only if the server still runs the QP. */
	post_one(v, IBV_WR_RDMA_READ, a, k, 64, WR_PROBE | 3);
}

/* ------------------------------------------------------- the loop ----- */

static bool finished(const struct victim *v)
{
	if (v->cm_failed || v->setup_failed)
		return true;
	if (v->o.expect == EXP_NONE)
		return false;
	if (v->o.expect == EXP_GOOD && !v->hello_ok)
		return false;
	return v->disconnected && v->recv_out == 0 && v->send_out == 0;
}

static void loop(struct victim *v)
{
	double deadline = now_s() + v->o.timeout;
	bool op_done = false;

	while (now_s() < deadline && !finished(v)) {
		struct pollfd p[2] = { { .fd = v->ch->fd, .events = POLLIN },
				       { .fd = -1, .events = POLLIN } };

		drain_cq(v);
		if (!v->o.server && v->established && v->got_pdata && !v->disconnected) {
			if (v->o.op == OP_STREAM)
				stream_refill(v);
			else if (!op_done) {
				run_single_op(v);
				op_done = true;
			}
		}
		if (v->id && v->id->verbs)
			p[1].fd = v->id->verbs->async_fd;
		if (poll(p, 2, 5) <= 0)	/* completions are polled: wake often */
			continue;
		if (p[0].revents & POLLIN)
			one_cm_event(v);
		if (p[1].fd >= 0 && (p[1].revents & POLLIN))
			one_async_event(v);
	}
	drain_cq(v);
}

/* ------------------------------------------------------- verdict ------ */

/* The drain idiom (ib_drain_qp, and user code that copies it): once the
 * QP is in ERROR, a newly posted WR is accepted and completes with
 * IBV_WC_WR_FLUSH_ERR (siw, rxe and mlx5 do so). Informational only. */
static void try_drain_idiom(struct victim *v)
{
	struct ibv_sge sge = { (uintptr_t)v->rbuf, 16, v->rmr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 0xd0a1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	unsigned before = v->wc_flush;
	int rr = ibv_post_recv(v->qp, &rwr, &rbad), rs = ibv_post_send(v->qp, &swr, &sbad);
	double end = now_s() + 1.0;

	v->recv_out += rr == 0;
	v->send_out += rs == 0;
	while (now_s() < end && (v->recv_out || v->send_out)) {
		drain_cq(v);
		usleep(1000);
	}
	say("  note: post after ERROR: recv %s, send %s; %u flush completions for them\n",
	    rr ? strerror(rr) : "accepted", rs ? strerror(rs) : "accepted",
	    v->wc_flush - before);
}

static const char *qp_state_str(int s)
{
	static const char *n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return s >= 0 && s <= IBV_QPS_ERR ? n[s] : "unknown";
}

static void query_state(struct victim *v)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	v->qp_state = -1;
	if (v->qp && ibv_query_qp(v->qp, &a, IBV_QP_STATE, &ia) == 0)
		v->qp_state = a.qp_state;
}

/* Bytes of the MR that differ from what "good" (hostile's pattern at the
 * start) or an untouched MR must hold. */
static size_t mr_changed(const struct victim *v, bool hostile_pattern)
{
	size_t bad = 0, i = 0;

	if (hostile_pattern)
		for (; i < 64 && i < v->o.size; i++)
			bad += v->mr_buf[i] != (uint8_t)(i * 7 + 1);
	return bad + count_not(v->mr_buf + i, v->o.size - i, MR_BYTE);
}

static int check(bool ok, const char *what)
{
	say("  [%s] %s\n", ok ? "ok" : "FAIL", what);
	return ok ? 0 : 1;
}

static int verdict(struct victim *v)
{
	size_t g = count_not(v->region, GUARD, GUARD_BYTE) +
		   count_not(v->mr_buf + v->o.size, GUARD, GUARD_BYTE);
	bool srv = v->o.server, good = v->o.expect == EXP_GOOD;
	int f = 0;

	say("report: established %d disconnected %d qp %s; wc ok %u flush %u error %u "
	    "(recv ok %u, write ok %u); outstanding recv %u send %u; guards %zu bad bytes\n",
	    v->established, v->disconnected, qp_state_str(v->qp_state), v->wc_ok,
	    v->wc_flush, v->wc_err, v->recv_ok, v->write_ok, v->recv_out, v->send_out, g);
	if (v->setup_failed || !v->established)
		return say("RESULT: setup failed or never established\n"), 2;
	if (v->o.expect == EXP_NONE)
		return say("RESULT: ok (no expectation)\n"), 0;
	f += check(g == 0, "guard regions around the MR intact");
	f += check(v->disconnected, "CM reported DISCONNECTED");
	f += check(v->qp_state == IBV_QPS_ERR, "QP in ERROR");
	f += check(v->recv_out == 0 && v->send_out == 0, "every posted WR completed (nothing hangs)");
	if (srv && v->mr)
		say("  MR bytes changed: %zu\n", mr_changed(v, good));
	if (good) {
		f += check(v->hello_ok == 1, "the hostile's SEND arrived intact");
		f += check(mr_changed(v, true) == 0, "the hostile's WRITE placed exactly its 64 bytes");
		f += check(v->wc_err == 0, "no error completions besides flushes");
	} else {
		f += check(v->wc_flush + v->wc_err > 0, "error/flush completions");
		if (srv && v->o.expect == EXP_ERROR)
			f += check(v->recv_ok == 0, "no malformed message delivered as a receive");
	}
	if (srv && v->o.mr_untouched)
		f += check(mr_changed(v, false) == 0, "no byte of the MR placed");
	if (!srv && v->o.op == OP_STREAM) {
		say("  send WRs: %u outstanding at DISCONNECTED, then %u succeeded, %u flushed/failed\n",
		    v->out_at_disc, v->ok_after_disc, v->send_flush);
		f += check(v->write_ok > 0, "WRITEs were flowing before the peer died");
		f += check(v->send_flush > 0, "outstanding send WRs flushed");
	}
	if (!srv && (v->o.op == OP_READ || v->o.op == OP_READ_OOB) && v->probe_bad)
		say("  note: the refused READ completed with '%s'%s\n",
		    ibv_wc_status_str(v->probe_status),
		    v->probe_status == IBV_WC_WR_FLUSH_ERR ?
		    " (a remote access/operation error status would tell the application why)" : "");
	if (!srv && v->o.op != OP_STREAM)
		f += check(v->probe_bad > 0, "the bad operation (or the READ behind it) did not succeed");
	say("RESULT: %s\n", f ? "FAIL" : "PASS");
	return f ? 1 : 0;
}

static void teardown(struct victim *v)
{
	if (v->id && !v->disconnected)
		rdma_disconnect(v->id);
	if (v->qp)
		rdma_destroy_qp(v->id);
	if (v->mr)
		ibv_dereg_mr(v->mr);
	if (v->rmr)
		ibv_dereg_mr(v->rmr);
	if (v->lmr)
		ibv_dereg_mr(v->lmr);
	if (v->cq)
		ibv_destroy_cq(v->cq);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->id)
		rdma_destroy_id(v->id);
	if (v->listen_id)
		rdma_destroy_id(v->listen_id);
	if (v->ch)
		rdma_destroy_event_channel(v->ch);
	free(v->rbuf);
	free(v->lbuf);
	if (v->region && v->region != MAP_FAILED)
		munmap(v->region, v->region_len);
}

/* ------------------------------------------------------- startup ------ */

static int resolve(const char *host, const char *port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *ai;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static int start(struct victim *v)
{
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;

	v->ch = rdma_create_event_channel();
	if (!v->ch || rdma_create_id(v->ch, &id, v, RDMA_PS_TCP))
		return say("rdma_create_event_channel/id failed: %s\n", strerror(errno)), -1;
	fcntl(v->ch->fd, F_SETFL, fcntl(v->ch->fd, F_GETFL) | O_NONBLOCK);
	if (resolve(v->o.addr, v->o.port, &ss))
		return say("cannot resolve %s:%s\n", v->o.addr ? v->o.addr : "*", v->o.port), -1;
	if (v->o.server) {
		v->listen_id = id;
		if (rdma_bind_addr(id, (struct sockaddr *)&ss) || rdma_listen(id, 1))
			return say("rdma_bind_addr/listen failed: %s\n", strerror(errno)), -1;
		say("listening on port %s\n", v->o.port);
		return 0;
	}
	v->id = id;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000))
		return say("rdma_resolve_addr failed: %s\n", strerror(errno)), -1;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: xiw_victim -s [options] [-a ADDR] -p PORT     (server)\n"
"       xiw_victim -c [options] -a ADDR -p PORT --op OP (client)\n"
"An rdma_cm/verbs program for the fault tests; prints what it saw.\n"
"  -s, --server          listen and accept one connection\n"
"  -c, --client          connect to a server\n"
"  -a, --addr ADDR       server: bind address (default any); client: server\n"
"  -p, --port PORT       port (default 7471)\n"
"  -n, --size BYTES      server MR size (default 65536; K/M suffixes)\n"
"  -A, --access ACC      server MR remote access: rw, r, w, none (default rw)\n"
"  -I, --ird N           conn_param responder_resources (default 4)\n"
"  -O, --ord N           conn_param initiator_depth (default 4)\n"
"  -e, --expect WHAT     server: error (TERMINATE case: error/flush WCs,\n"
"                        DISCONNECTED, QP in ERROR, no receive delivered),\n"
"                        good (xiw_hostile --case good arrived intact),\n"
"                        disconnect (the peer dies: DISCONNECTED, flushes),\n"
"                        none (just serve until killed or --timeout)\n"
"  -u, --mr-untouched    also require that no MR byte changed\n"
"  -o, --op OP           client: stream (WRITEs until the server dies),\n"
"                        write, write-bad-stag, write-oob, read, read-oob\n"
"  -m, --msg BYTES       client stream WRITE size (default 65536)\n"
"  -d, --depth N         client WRs in flight (default 64)\n"
"  -r, --recvs N         receives to post (default 8)\n"
"  -t, --timeout SEC     give up after SEC (default 10)\n"
"Exit: 0 the expected outcome was seen, 1 not, 2 setup failure.\n");
}

static size_t parse_size(const char *s)
{
	char *e;
	size_t n = strtoull(s, &e, 0);

	return *e == 'K' || *e == 'k' ? n << 10 : *e == 'M' || *e == 'm' ? n << 20 : n;
}

static int parse_access(const char *s)
{
	int a = 0;

	if (strchr(s, 'r'))
		a |= IBV_ACCESS_REMOTE_READ;
	if (strchr(s, 'w'))
		a |= IBV_ACCESS_REMOTE_WRITE;
	return a;
}

static int parse_enum(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static int parse(int argc, char **argv, struct vopts *o)
{
	static const struct option lo[] = {
		{ "server", 0, 0, 's' }, { "client", 0, 0, 'c' }, { "addr", 1, 0, 'a' },
		{ "port", 1, 0, 'p' }, { "size", 1, 0, 'n' }, { "access", 1, 0, 'A' },
		{ "ird", 1, 0, 'I' }, { "ord", 1, 0, 'O' }, { "expect", 1, 0, 'e' },
		{ "mr-untouched", 0, 0, 'u' }, { "op", 1, 0, 'o' }, { "msg", 1, 0, 'm' },
		{ "depth", 1, 0, 'd' }, { "recvs", 1, 0, 'r' }, { "timeout", 1, 0, 't' },
		{ "help", 0, 0, 'h' }, { 0 } };
	static const char *const exps[] = { "error", "good", "disconnect", "none" };
	static const char *const ops[] = { "", "stream", "write", "write-bad-stag",
					   "write-oob", "read", "read-oob" };
	int ch, mode = 0;

	*o = (struct vopts){ .port = "7471", .size = 65536, .msg = 65536,
			     .access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
			     .ird = 4, .ord = 4, .recvs = 8, .depth = 64, .timeout = 10 };
	while ((ch = getopt_long(argc, argv, "sca:p:n:A:I:O:e:uo:m:d:r:t:h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': mode = 1; break;
		case 'c': mode = 2; break;
		case 'a': o->addr = optarg; break;
		case 'p': o->port = optarg; break;
		case 'n': o->size = parse_size(optarg); break;
		case 'A': o->access = strcmp(optarg, "none") ? parse_access(optarg) : 0; break;
		case 'I': o->ird = atoi(optarg); break;
		case 'O': o->ord = atoi(optarg); break;
		case 'e': o->expect = (enum expect)parse_enum(optarg, exps, 4); break;
		case 'u': o->mr_untouched = true; break;
		case 'o': o->op = (enum op)parse_enum(optarg, ops, 7); break;
		case 'm': o->msg = parse_size(optarg); break;
		case 'd': o->depth = atoi(optarg); break;
		case 'r': o->recvs = atoi(optarg); break;
		case 't': o->timeout = atof(optarg); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	o->server = mode == 1;
	if (!mode || (int)o->expect < 0 || (int)o->op < 0 || o->size < 64 ||
	    o->msg < 64 || o->depth < 1 || o->recvs < 1 || (mode == 2 && !o->addr) ||
	    (mode == 2 && o->op == OP_NONE)) {
		usage(stderr);
		return -1;
	}
	if (!o->server)	/* a client's expectation follows from its op */
		o->expect = EXP_ERROR;
	return 0;
}

int main(int argc, char **argv)
{
	struct victim v = { 0 };
	int rc;

	if (parse(argc, argv, &v.o))
		return 2;
	if (alloc_region(&v))
		return say("out of memory\n"), 2;
	if (start(&v)) {
		teardown(&v);
		return 2;
	}
	loop(&v);
	query_state(&v);
	if (v.qp && v.qp_state == IBV_QPS_ERR && v.recv_out == 0 && v.send_out == 0)
		try_drain_idiom(&v);
	rc = verdict(&v);
	teardown(&v);
	say("exiting normally (%d)\n", rc);
	return rc;
}
