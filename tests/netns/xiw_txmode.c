// SPDX-License-Identifier: MIT
/*
 * xiw_txmode — a small rdma_cm + verbs program (public API only) for the
 * send-completion tests (tests/netns/tx_completion.sh): how long a
 * signalled WRITE takes to complete, and what happens to completions and
 * to post_send while the peer does not read.
 *
 *   server: xiw_txmode -s -p PORT [-n QPS] [-S]
 *     accepts QPS connections (default 1), each with its own MR of -m
 *     bytes (rkey/address go back in the accept's private data); -S: stop
 *     itself (SIGSTOP) once all are established. It exits 0 when every
 *     client's final SEND came and the bytes it wrote match the pattern.
 *   client: xiw_txmode -c ADDR -p PORT -t lat|stop|multi [-l LEN] [-q N]
 *     lat:   -k times one signalled WRITE of LEN, prints lat_us=<median>;
 *            -E: wait for each WC on a completion channel instead of
 *            polling (a polling thread completes ACKed WRs itself; a
 *            sleeping one gets them only from the engine's ACK scan)
 *     stop:  posts N WRITEs of LEN, one per millisecond, timing every
 *            ibv_post_send; once no WC came for 1.5 s prints
 *            "stall done_bytes=B"; then waits for all (SIGCONT at the
 *            peer); prints post_max_us=
 *     cq:    a -C entry CQ, -q WRITEs posted at once, polled late
 *     multi: -n QPS connections (one server per -p PORT, -P PORT2 for
 *            the last QP); WRITEs on all for -d seconds; prints the
 *            completed bytes of each QP ("qp I bytes B").
 *   Then a final SEND per QP; exit 0 when everything completed OK.
 *
 * Exit: 0 ok, 1 failure (message on stderr).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

#define MAXQP 64

struct rinfo {
	uint64_t addr;
	uint32_t rkey, len;
};

struct conn {
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct rinfo peer;
	uint64_t posted, done, done_bytes;
	int fin;
};

static struct {
	int server, stop_self, nqp, k, depth, secs, cqe, events;
	struct ibv_comp_channel *comp;
	const char *addr, *port, *port2, *test;
	size_t len, mrsize;
	struct rdma_event_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct conn c[MAXQP];
	int recvs_done;
} g = { .cqe = 4096, .nqp = 1, .k = 5, .depth = 1024, .secs = 3, .len = 4096,
	.mrsize = 64u << 20, .port = "7700", .test = "lat" };

static int fail(const char *what)
{
	fprintf(stderr, "xiw_txmode: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint8_t pattern(size_t off, int qp)
{
	return (uint8_t)(off * 7 + (off >> 9) + (size_t)qp * 13 + 1);
}

static struct rdma_cm_event *cm_wait(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(g.ch, &ev))
		fail("rdma_get_cm_event");
	if (ev->event != want) {
		fprintf(stderr, "xiw_txmode: cm event %s (status %d), wanted %s\n",
			rdma_event_str(ev->event), ev->status, rdma_event_str(want));
		exit(1);
	}
	return ev;
}

static void setup_qp(struct conn *c, int i)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = (uint32_t)g.depth + 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 } };
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	if (!g.pd) {
		g.pd = ibv_alloc_pd(c->id->verbs);
		if (g.events && g.pd)
			g.comp = ibv_create_comp_channel(c->id->verbs);
		if (g.events && !g.comp)
			fail("ibv_create_comp_channel");
		g.cq = g.pd ? ibv_create_cq(c->id->verbs, g.cqe, NULL, g.comp, 0) : NULL;
		if (!g.cq)
			fail("pd/cq");
	}
	qa.send_cq = qa.recv_cq = g.cq;
	qa.qp_context = c;
	if (rdma_create_qp(c->id, g.pd, &qa))
		fail("rdma_create_qp");
	c->qp = c->id->qp;
	c->buf = malloc(g.mrsize);
	if (!c->buf)
		fail("malloc");
	if (g.server)
		memset(c->buf, 0, g.mrsize);
	else
		for (size_t o = 0; o < g.mrsize; o++)
			c->buf[o] = pattern(o, i);
	c->mr = ibv_reg_mr(g.pd, c->buf, g.mrsize, acc);
	if (!c->mr)
		fail("ibv_reg_mr");
}

static void post_recv(struct conn *c)
{
	struct ibv_sge s = { (uintptr_t)c->buf, 16, c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)c, .sg_list = &s,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(c->qp, &wr, &bad))
		fail("ibv_post_recv");
}

/* ---------------------------------------------------------- server --- */

static int verify(struct conn *c, int i)
{
	uint64_t n = c->peer.len;	/* bytes the client says it wrote */

	/* the SEND's 16 bytes landed at the start: skip them */
	for (uint64_t o = 16; o < n && o < g.mrsize; o++)
		if (c->buf[o] != pattern(o, i)) {
			fprintf(stderr, "xiw_txmode: qp %d: byte %llu is %u, not %u\n",
				i, (unsigned long long)o, c->buf[o], pattern(o, i));
			return 1;
		}
	return 0;
}

static int run_server(void)
{
	struct addrinfo *ai;
	struct rdma_cm_id *lid;
	struct ibv_wc wc;
	int bad = 0;

	if (getaddrinfo(NULL, g.port, &(struct addrinfo){ .ai_flags = AI_PASSIVE,
			.ai_family = AF_INET }, &ai))
		fail("getaddrinfo");
	if (rdma_create_id(g.ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, MAXQP))
		fail("listen");
	freeaddrinfo(ai);
	for (int i = 0; i < g.nqp; i++) {
		struct rdma_cm_event *ev = cm_wait(RDMA_CM_EVENT_CONNECT_REQUEST);
		struct conn *c = &g.c[i];
		struct rinfo ri;
		struct rdma_conn_param cp = { .private_data = &ri,
			.private_data_len = sizeof(ri), .responder_resources = 1 };

		c->id = ev->id;
		rdma_ack_cm_event(ev);
		setup_qp(c, i);
		post_recv(c);
		ri = (struct rinfo){ (uintptr_t)c->buf, c->mr->rkey, (uint32_t)i };
		if (rdma_accept(c->id, &cp))
			fail("rdma_accept");
		rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ESTABLISHED));
	}
	if (g.stop_self)
		raise(SIGSTOP);
	for (uint64_t t0 = now_us(); g.recvs_done < g.nqp;) {
		int n = ibv_poll_cq(g.cq, 1, &wc);

		if (n < 0 || (n == 1 && wc.status != IBV_WC_SUCCESS)) {
			fprintf(stderr, "xiw_txmode: server wc status %d\n",
				n < 0 ? -1 : (int)wc.status);
			return 1;
		}
		if (n == 1) {
			struct conn *c = (struct conn *)(uintptr_t)wc.wr_id;

			memcpy(&c->peer.len, c->buf + 8, 4);
			g.recvs_done++;
		} else if (now_us() - t0 > 120u * 1000000) {
			fprintf(stderr, "xiw_txmode: server: no final SEND\n");
			return 1;
		} else {
			usleep(100);
		}
	}
	for (int i = 0; i < g.nqp; i++)
		bad |= verify(&g.c[i], i);
	if (!bad)
		printf("server: data ok on %d QPs\n", g.nqp);
	fflush(stdout);
	return bad;
}

/* ---------------------------------------------------------- client --- */

static void client_connect(struct conn *c, int i, const char *port)
{
	struct rdma_cm_event *ev;
	struct addrinfo *ai;
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1 };

	if (getaddrinfo(g.addr, port, &(struct addrinfo){ .ai_family = AF_INET },
			&ai))
		fail("getaddrinfo");
	if (rdma_create_id(g.ch, &c->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(c->id, NULL, ai->ai_addr, 2000))
		fail("resolve_addr");
	freeaddrinfo(ai);
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(c->id, 2000))
		fail("resolve_route");
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ROUTE_RESOLVED));
	setup_qp(c, i);
	if (rdma_connect(c->id, &cp))
		fail("rdma_connect");
	ev = cm_wait(RDMA_CM_EVENT_ESTABLISHED);
	memcpy(&c->peer, ev->param.conn.private_data, sizeof(c->peer));
	rdma_ack_cm_event(ev);
}

/*
 * Did the calling thread block (voluntary context switch) since @before?
 * A post that took long only because the scheduler preempted the thread
 * (involuntary switch, 2 shared vCPUs) did not wait for anything.
 */
static long vcsw_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

static bool g_post_blocked;	/* the last timed post blocked */

/* WRITE number c->posted (LEN bytes, wrapping in the MR). Return: errno. */
static int post_write(struct conn *c, uint64_t *took_us)
{
	size_t off = (size_t)(c->posted * g.len) % (g.mrsize - g.len);
	struct ibv_sge s = { (uintptr_t)c->buf + off, (uint32_t)g.len, c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { c->peer.addr + off, c->peer.rkey } }, *bad;
	long v0 = took_us ? vcsw_now() : 0;
	uint64_t t0 = now_us();
	int ret = ibv_post_send(c->qp, &wr, &bad);

	if (took_us) {
		*took_us = now_us() - t0;
		g_post_blocked = vcsw_now() != v0;
	}
	if (!ret)
		c->posted++;
	return ret;
}

static int reap(void)
{
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(g.cq, 32, wc);

	for (int i = 0; i < n; i++) {
		struct conn *c = NULL;

		for (int j = 0; j < g.nqp; j++)
			if (g.c[j].qp->qp_num == wc[i].qp_num)
				c = &g.c[j];
		if (wc[i].status != IBV_WC_SUCCESS || !c) {
			fprintf(stderr, "xiw_txmode: wc status %s\n",
				ibv_wc_status_str(wc[i].status));
			exit(1);
		}
		if (wc[i].wr_id == 1) {
			c->fin = 1;
			continue;
		}
		c->done++;
		c->done_bytes += g.len;
	}
	return n;
}

static void wait_n(int nqp, uint64_t timeout_us)
{
	uint64_t t0 = now_us();

	for (int i = 0; i < nqp; i++)
		while (g.c[i].done < g.c[i].posted) {
			if (!reap())
				usleep(50);
			if (now_us() - t0 > timeout_us) {
				fprintf(stderr, "xiw_txmode: qp %d: %llu of %llu WRs done\n",
					i, (unsigned long long)g.c[i].done,
					(unsigned long long)g.c[i].posted);
				exit(1);
			}
		}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* -E: sleep on the completion channel until @c's WRs are all done */
static void wait_events(struct conn *c)
{
	struct ibv_cq *cq;
	void *ctx;

	while (c->done < c->posted) {
		if (reap())
			continue;
		if (ibv_req_notify_cq(g.cq, 0))
			fail("ibv_req_notify_cq");
		if (reap())	/* a WC between the poll and the arm */
			continue;
		if (ibv_get_cq_event(g.comp, &cq, &ctx))
			fail("ibv_get_cq_event");
		ibv_ack_cq_events(cq, 1);
	}
}

static void test_lat(void)
{
	uint64_t lat[64];
	int k = g.k > 64 ? 64 : g.k;

	for (int i = 0; i < k; i++) {
		uint64_t t0 = now_us();

		if (post_write(&g.c[0], NULL))
			fail("ibv_post_send");
		if (g.events)
			wait_events(&g.c[0]);
		else
			wait_n(1, 10u * 1000000);
		lat[i] = now_us() - t0;
		printf("write %zu B: %llu us\n", g.len, (unsigned long long)lat[i]);
		usleep(50000);	/* let delayed ACKs of the peer settle */
	}
	qsort(lat, (size_t)k, sizeof(lat[0]), cmp_u64);
	printf("lat_us=%llu\n", (unsigned long long)lat[k / 2]);
}

static void test_stop(void)
{
	struct conn *c = &g.c[0];
	uint64_t max_us = 0, took, last_wc, slow = 0, slow_blocked = 0;

	usleep(300000);	/* the server stops itself right after accepting */
	last_wc = now_us();
	while (c->posted < (uint64_t)g.depth) {
		int ret = post_write(c, &took);

		if (ret && ret != ENOMEM)
			fail("ibv_post_send");
		max_us = took > max_us ? took : max_us;
		if (took >= 1000) {
			slow++;
			slow_blocked += g_post_blocked;
			fprintf(stderr, "post %llu took %llu us (%s)\n",
				(unsigned long long)c->posted,
				(unsigned long long)took, g_post_blocked ?
				"it blocked" : "preempted, did not block");
		}
		if (reap())
			last_wc = now_us();
		usleep(1000);
	}
	while (now_us() - last_wc < 1500000 && c->done < c->posted)
		if (reap())
			last_wc = now_us();
		else
			usleep(200);
	printf("stall done_bytes=%llu posted_bytes=%llu\n",
	       (unsigned long long)c->done_bytes,
	       (unsigned long long)(c->posted * g.len));
	printf("post_max_us=%llu posts_over_1ms=%llu of_them_blocked=%llu\n",
	       (unsigned long long)max_us, (unsigned long long)slow,
	       (unsigned long long)slow_blocked);
	fflush(stdout);
	wait_n(1, 60u * 1000000);
}

static void test_multi(void)
{
	uint64_t t_end = now_us() + (uint64_t)g.secs * 1000000;

	while (now_us() < t_end) {
		for (int i = 0; i < g.nqp; i++) {
			struct conn *c = &g.c[i];

			while (c->posted - c->done < (uint64_t)g.depth / 2 &&
			       !post_write(c, NULL))
				;
		}
		if (!reap())
			usleep(100);
	}
	for (int i = 0; i < g.nqp; i++)
		printf("qp %d bytes %llu\n", i, (unsigned long long)g.c[i].done_bytes);
	fflush(stdout);
}

/*
 * cq: a CQ of -C entries, -q signalled WRITEs posted at once (the SQ
 * holds them), then one more (the SQ is full: ENOMEM). Nothing is polled
 * for 300 ms: the engine must hold back WRs that have no CQE slot instead
 * of dropping their WCs. Then every WC must arrive, polled slowly.
 */
static void test_cq(void)
{
	struct conn *c = &g.c[0];
	uint64_t t0;
	int ret;

	while (!(ret = post_write(c, NULL)) && c->posted < (uint64_t)g.depth * 2)
		;
	printf("post %llu: %s\n", (unsigned long long)c->posted + 1,
	       ret == ENOMEM ? "ENOMEM (SQ full)" : strerror(ret));
	if (ret != ENOMEM || c->posted < (uint64_t)g.depth)
		exit(1);
	usleep(300000);
	for (t0 = now_us(); c->done < c->posted && now_us() - t0 < 20000000;) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(g.cq, 1, &wc);

		if (n == 1 && wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "xiw_txmode: wc status %d\n", wc.status);
			exit(1);
		}
		c->done += (uint64_t)n;
		if (n == 0)
			usleep(100);
	}
	printf("cq: %llu of %llu WCs with a %d-entry CQ\n",
	       (unsigned long long)c->done, (unsigned long long)c->posted, g.cqe);
	if (c->done != c->posted)
		exit(1);
}

static void send_fin(struct conn *c)
{
	uint32_t wrote = (uint32_t)(c->posted * g.len < g.mrsize - g.len ?
				    c->posted * g.len : g.mrsize - g.len);
	struct ibv_sge s = { (uintptr_t)c->buf + 4096, 16, c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	memcpy(c->buf + 4096 + 8, &wrote, 4);	/* the pattern is at 4096+ */
	if (ibv_post_send(c->qp, &wr, &bad))
		fail("ibv_post_send (fin)");
}

static int run_client(void)
{
	uint64_t t0;
	int nfin = g.nqp;

	for (int i = 0; i < g.nqp; i++)
		client_connect(&g.c[i], i,
			       i == g.nqp - 1 && g.port2 ? g.port2 : g.port);
	if (!strcmp(g.test, "lat"))
		test_lat();
	else if (!strcmp(g.test, "stop"))
		test_stop();
	else if (!strcmp(g.test, "cq"))
		test_cq();
	else
		test_multi();
	if (!strcmp(g.test, "multi") && g.port2)
		nfin--;	/* the stalled peer never reads: not its QP */
	wait_n(nfin, 60u * 1000000);
	for (int i = 0; i < nfin; i++)
		send_fin(&g.c[i]);
	for (t0 = now_us(); now_us() - t0 < 30u * 1000000;) {
		int all = 1;

		reap();
		for (int i = 0; i < nfin; i++)
			all &= g.c[i].fin;
		if (all) {
			printf("client: done\n");
			return 0;
		}
		usleep(100);
	}
	fprintf(stderr, "xiw_txmode: final SEND did not complete\n");
	return 1;
}

int main(int argc, char **argv)
{
	int o;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((o = getopt(argc, argv, "sc:p:P:n:St:l:q:k:d:m:C:E")) != -1) {
		switch (o) {
		case 's': g.server = 1; break;
		case 'c': g.addr = optarg; break;
		case 'p': g.port = optarg; break;
		case 'P': g.port2 = optarg; break;
		case 'n': g.nqp = atoi(optarg); break;
		case 'S': g.stop_self = 1; break;
		case 't': g.test = optarg; break;
		case 'l': g.len = (size_t)atol(optarg); break;
		case 'q': g.depth = atoi(optarg); break;
		case 'k': g.k = atoi(optarg); break;
		case 'd': g.secs = atoi(optarg); break;
		case 'm': g.mrsize = (size_t)atol(optarg) << 20; break;
		case 'C': g.cqe = atoi(optarg); break;
		case 'E': g.events = 1; break;
		default:
			fprintf(stderr, "usage: see the comment at the top\n");
			return 2;
		}
	}
	if (g.nqp < 1 || g.nqp > MAXQP || (!g.server && !g.addr) ||
	    g.len < 32 || g.len * 2 > g.mrsize)
		return fprintf(stderr, "xiw_txmode: bad arguments\n"), 2;
	g.ch = rdma_create_event_channel();
	if (!g.ch)
		fail("rdma_create_event_channel");
	return g.server ? run_server() : run_client();
}
