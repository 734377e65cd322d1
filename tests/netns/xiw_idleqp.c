// SPDX-License-Identifier: MIT
/*
 * xiw_idleqp — what one idle connected QP costs in memory (issue 11:
 * "engine memory per idle connected QP <= 16 KB"). A plain rdma_cm +
 * verbs program (public API only), so it measures whichever libibverbs /
 * librdmacm it runs on: xiwarp's through xiwrun, or rdma-core's.
 *
 *   server: xiw_idleqp -s [-p PORT] [-n N]
 *   client: xiw_idleqp -c ADDR [-p PORT] [-n N]
 *
 * Each side opens N connected RC QPs that share one PD and one CQ, posts
 * --rq receives on each (what an application does before it connects)
 * and sends nothing. Memory is read when the first QP is established and
 * again when all N are, so one-time costs (device open, the engine's
 * threads, the first listener) are left out:
 *   per QP = (at N - at 1) / (N - 1)
 * for the resident set (/proc/self/statm) and for the allocator's bytes
 * in use (mallinfo2: uordblks + hblkhd). Kernel memory (socket buffers)
 * is not in either. Each side prints one line
 *   idleqp: side=client qps=N rss_kb_1=.. rss_kb_n=.. rss_per_qp=B
 *           heap_per_qp=B sq=.. rq=..
 * Then the server disconnects its first QP, which tells the client it has
 * measured too; both tear everything down and exit 0.
 *
 * Exit: 0 ok, 1 failure (what went wrong on stderr), 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

struct mem {
	long rss_kb;
	size_t heap;
};

static struct {
	bool server;
	const char *addr;
	const char *port;
	int n, sq, rq, timeout_ms;
} opt = { .port = "7471", .n = 1000, .sq = 16, .rq = 16, .timeout_ms = 120000 };

static struct rdma_event_channel *ch;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char rbuf[64];
static struct rdma_cm_id **ids;
static int nids, nest;
static struct mem m1, mn;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xiw_idleqp -s [-p PORT] [-n N] [options]\n"
		"       xiw_idleqp -c ADDR [-p PORT] [-n N] [options]\n"
		"Opens N idle connected RC QPs (shared PD and CQ, nothing sent) and\n"
		"prints the resident-set and allocator growth per QP between the\n"
		"first and the N-th established connection.\n"
		"  -s, --server        accept N connections\n"
		"  -c, --client ADDR   connect N times to ADDR\n"
		"  -p, --port PORT     TCP port (default 7471)\n"
		"  -n, --qps N         connections, >= 2 (default 1000)\n"
		"      --sq N          max_send_wr per QP (default 16)\n"
		"      --rq N          max_recv_wr per QP, all posted (default 16)\n"
		"  -t, --timeout MS    give up after MS (default 120000)\n"
		"  -h, --help          this text\n");
}

static int parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "server", no_argument, 0, 's' },
		{ "client", required_argument, 0, 'c' },
		{ "port", required_argument, 0, 'p' },
		{ "qps", required_argument, 0, 'n' },
		{ "sq", required_argument, 0, 'S' },
		{ "rq", required_argument, 0, 'R' },
		{ "timeout", required_argument, 0, 't' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "sc:p:n:t:h", lo, NULL)) != -1) {
		switch (c) {
		case 's': opt.server = true; break;
		case 'c': opt.addr = optarg; break;
		case 'p': opt.port = optarg; break;
		case 'n': opt.n = atoi(optarg); break;
		case 'S': opt.sq = atoi(optarg); break;
		case 'R': opt.rq = atoi(optarg); break;
		case 't': opt.timeout_ms = atoi(optarg); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (opt.server == !!opt.addr || opt.n < 2 || opt.sq < 1 || opt.rq < 1) {
		usage(stderr);
		return -1;
	}
	return 0;
}

static struct mem mem_now(void)
{
	struct mallinfo2 mi = mallinfo2();
	struct mem m = { 0, mi.uordblks + mi.hblkhd };
	long size, res;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld", &size, &res) == 2)
		m.rss_kb = res * (sysconf(_SC_PAGESIZE) / 1024);
	if (f)
		fclose(f);
	return m;
}

/* One fd per connection (and a few per QP in some stacks): lift the soft
 * limit to the hard one and say so if that is still too low. */
static int fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)opt.n * 2 + 64) {
		fprintf(stderr, "xiw_idleqp: open-file limit %llu is too low for %d QPs"
			" (raise it: ulimit -Hn)\n", (unsigned long long)rl.rlim_cur, opt.n);
		return -1;
	}
	return 0;
}

/* PD, CQ and a receive buffer on the first device context we meet. */
static int res_init(struct ibv_context *ctx)
{
	if (pd)
		return 0;
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 2 * opt.n * (opt.sq + opt.rq) > 65536 ?
				65536 : 2 * opt.n * (opt.sq + opt.rq), NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr) {
		fprintf(stderr, "xiw_idleqp: PD/CQ/MR: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* An RC QP on @id with --rq receives posted. */
static int qp_make(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = opt.sq, .max_recv_wr = opt.rq,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)rbuf, sizeof(rbuf), 0 };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (res_init(id->verbs) || rdma_create_qp(id, pd, &a)) {
		fprintf(stderr, "xiw_idleqp: rdma_create_qp (QP %d): %s\n", nids, strerror(errno));
		return -1;
	}
	sge.lkey = mr->lkey;
	for (int i = 0; i < opt.rq; i++)
		if (ibv_post_recv(id->qp, &wr, &bad)) {
			fprintf(stderr, "xiw_idleqp: ibv_post_recv: %s\n", strerror(errno));
			return -1;
		}
	ids[nids++] = id;
	return 0;
}

/* Next CM event, or NULL after --timeout. */
static struct rdma_cm_event *next_event(void)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd = { ch->fd, POLLIN, 0 };

	if (poll(&pfd, 1, opt.timeout_ms) != 1) {
		fprintf(stderr, "xiw_idleqp: no CM event in %d ms (%d of %d established)\n",
			opt.timeout_ms, nest, opt.n);
		return NULL;
	}
	if (rdma_get_cm_event(ch, &ev)) {
		fprintf(stderr, "xiw_idleqp: rdma_get_cm_event: %s\n", strerror(errno));
		return NULL;
	}
	return ev;
}

/* Wait for one event of @type on @id (client: one connection at a time). */
static int expect(struct rdma_cm_id *id, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = next_event();
	int ok;

	if (!ev)
		return -1;
	ok = ev->id == id && ev->event == type;
	if (!ok)
		fprintf(stderr, "xiw_idleqp: QP %d: %s (status %d), wanted %s\n", nids,
			rdma_event_str(ev->event), ev->status, rdma_event_str(type));
	rdma_ack_cm_event(ev);
	return ok ? 0 : -1;
}

static void established(void)
{
	if (++nest == 1)
		m1 = mem_now();
	if (nest == opt.n)
		mn = mem_now();
}

static void report(void)
{
	double q = opt.n - 1;

	printf("idleqp: side=%s qps=%d rss_kb_1=%ld rss_kb_n=%ld rss_per_qp=%.0f"
	       " heap_per_qp=%.0f sq=%d rq=%d\n", opt.server ? "server" : "client",
	       opt.n, m1.rss_kb, mn.rss_kb, (mn.rss_kb - m1.rss_kb) * 1024.0 / q,
	       ((double)mn.heap - (double)m1.heap) / q, opt.sq, opt.rq);
	fflush(stdout);
}

static int client_one(struct addrinfo *ai)
{
	struct rdma_cm_id *id;
	struct rdma_conn_param cp = { .retry_count = 7 };

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, ai->ai_addr, 2000) ||
	    expect(id, RDMA_CM_EVENT_ADDR_RESOLVED) ||
	    rdma_resolve_route(id, 2000) ||
	    expect(id, RDMA_CM_EVENT_ROUTE_RESOLVED) || qp_make(id) ||
	    rdma_connect(id, &cp) || expect(id, RDMA_CM_EVENT_ESTABLISHED)) {
		fprintf(stderr, "xiw_idleqp: connection %d failed (%s)\n", nids,
			strerror(errno));
		return -1;
	}
	established();
	return 0;
}

static int client(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct rdma_cm_event *ev;
	int rc = getaddrinfo(opt.addr, opt.port, &hints, &ai);

	if (rc) {
		fprintf(stderr, "xiw_idleqp: %s: %s\n", opt.addr, gai_strerror(rc));
		return -1;
	}
	for (int i = 0; i < opt.n; i++)
		if (client_one(ai)) {
			freeaddrinfo(ai);
			return -1;
		}
	freeaddrinfo(ai);
	report();
	/* the server disconnects its first QP once it has measured */
	while ((ev = next_event())) {
		bool done = ev->event == RDMA_CM_EVENT_DISCONNECTED;

		rdma_ack_cm_event(ev);
		if (done)
			return 0;
	}
	return -1;
}

/* Server: one event; accepts, counts ESTABLISHED. */
static int server_event(struct rdma_cm_event *ev)
{
	struct rdma_conn_param cp = { .responder_resources = 1 };
	int rc = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (qp_make(ev->id) || rdma_accept(ev->id, &cp)) {
			fprintf(stderr, "xiw_idleqp: accept %d: %s\n", nids, strerror(errno));
			rc = -1;
		}
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		established();
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		break;
	default:
		fprintf(stderr, "xiw_idleqp: unexpected %s (status %d) after %d established\n",
			rdma_event_str(ev->event), ev->status, nest);
		rc = -1;
	}
	rdma_ack_cm_event(ev);
	return rc;
}

static int server(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_flags = AI_PASSIVE }, *ai;
	struct rdma_cm_id *lid;
	int rc = getaddrinfo(NULL, opt.port, &hints, &ai);

	if (rc) {
		fprintf(stderr, "xiw_idleqp: port %s: %s\n", opt.port, gai_strerror(rc));
		return -1;
	}
	rc = rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	     rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 1024);
	freeaddrinfo(ai);
	if (rc) {
		fprintf(stderr, "xiw_idleqp: listen on %s: %s\n", opt.port, strerror(errno));
		return -1;
	}
	printf("listening on port %s\n", opt.port);
	fflush(stdout);
	while (nest < opt.n) {
		struct rdma_cm_event *ev = next_event();

		if (!ev || server_event(ev))
			return -1;
	}
	report();
	rdma_disconnect(ids[0]);
	rdma_destroy_id(lid);
	return 0;
}

static void teardown(void)
{
	for (int i = 0; i < nids; i++) {
		rdma_disconnect(ids[i]);
		rdma_destroy_qp(ids[i]);
		rdma_destroy_id(ids[i]);
	}
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ch)
		rdma_destroy_event_channel(ch);
}

int main(int argc, char **argv)
{
	int rc;

	if (parse(argc, argv))
		return 2;
	ids = calloc(opt.n, sizeof(*ids));
	ch = rdma_create_event_channel();
	if (!ids || !ch || fd_limit()) {
		fprintf(stderr, "xiw_idleqp: setup: %s\n", strerror(errno));
		return 1;
	}
	rc = opt.server ? server() : client();
	teardown();
	return rc ? 1 : 0;
}
