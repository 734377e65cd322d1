// SPDX-License-Identifier: MIT
/*
 * xiw_zcflush — a buffer sent with MSG_ZEROCOPY must not come back to the
 * application (any WC, FLUSH_ERR included) while the kernel can still
 * transmit from it (tests/netns/zc_flush.sh). rdma_cm + verbs, public API.
 *
 *   server: xiw_zcflush -s -p PORT [-m MR_BYTES]
 *     accepts one connection with a zeroed MR (rkey/address in the accept's
 *     private data), stops itself (SIGSTOP) so its window closes, and once
 *     continued reads until the connection ends. Then it counts the bytes
 *     of its MR that hold the client's "reused" pattern 'B': any is a
 *     failure (the client's kernel sent from a buffer the client was
 *     already told it could reuse). Prints "server: A=<n> B=<n>".
 *   client: xiw_zcflush -c ADDR -p PORT [-l LEN] [-q N] [-m MR_BYTES]
 *     fills its MR with 'A', posts N signalled WRITEs of LEN bytes (large
 *     enough for zero-copy) while the server is stopped, waits for the
 *     sends to stall, moves the QP to ERROR, takes every WC (any status),
 *     then at once overwrites the whole MR with 'B' and prints "reused";
 *     it keeps its connection 3 s longer (the script continues the server
 *     meanwhile) before it exits.
 *
 * Exit: 0 ok, 1 failure (message on stderr).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>

struct rinfo {
	uint64_t addr;
	uint32_t rkey, len;
};

static struct {
	int server, n;
	const char *addr, *port;
	size_t len, mrsize;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
} g = { .n = 64, .len = 256 * 1024, .mrsize = 16u << 20, .port = "7790" };

static void die(const char *what)
{
	fprintf(stderr, "xiw_zcflush: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* the next CM event within @ms, or NULL */
static struct rdma_cm_event *cm_next(int ms)
{
	struct pollfd p = { .fd = g.ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) <= 0)
		return NULL;
	if (rdma_get_cm_event(g.ch, &ev))
		die("rdma_get_cm_event");
	return ev;
}

static struct rdma_cm_event *cm_wait(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = cm_next(10000);

	if (!ev || ev->event != want) {
		fprintf(stderr, "xiw_zcflush: cm event %s, wanted %s\n",
			ev ? rdma_event_str(ev->event) : "(timeout)",
			rdma_event_str(want));
		exit(1);
	}
	return ev;
}

static void setup_qp(uint8_t fill)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = (uint32_t)g.n + 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 } };

	g.pd = ibv_alloc_pd(g.id->verbs);
	g.cq = g.pd ? ibv_create_cq(g.id->verbs, g.n + 8, NULL, NULL, 0) : NULL;
	if (!g.cq)
		die("pd/cq");
	qa.send_cq = qa.recv_cq = g.cq;
	if (rdma_create_qp(g.id, g.pd, &qa))
		die("rdma_create_qp");
	g.qp = g.id->qp;
	g.buf = aligned_alloc(4096, g.mrsize);
	if (!g.buf)
		die("aligned_alloc");
	memset(g.buf, fill, g.mrsize);
	g.mr = ibv_reg_mr(g.pd, g.buf, g.mrsize,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!g.mr)
		die("ibv_reg_mr");
}

static int run_server(void)
{
	struct rdma_cm_id *lid;
	struct rdma_cm_event *ev;
	struct addrinfo *ai;
	struct rinfo ri;
	struct rdma_conn_param cp = { .private_data = &ri,
		.private_data_len = sizeof(ri), .responder_resources = 1 };
	size_t na = 0, nb = 0;
	uint64_t t0;

	if (getaddrinfo(NULL, g.port, &(struct addrinfo){ .ai_flags = AI_PASSIVE,
			.ai_family = AF_INET }, &ai))
		die("getaddrinfo");
	if (rdma_create_id(g.ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 1))
		die("listen");
	freeaddrinfo(ai);
	ev = cm_wait(RDMA_CM_EVENT_CONNECT_REQUEST);
	g.id = ev->id;
	rdma_ack_cm_event(ev);
	setup_qp(0);
	ri = (struct rinfo){ (uintptr_t)g.buf, g.mr->rkey, (uint32_t)g.mrsize };
	if (rdma_accept(g.id, &cp))
		die("rdma_accept");
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ESTABLISHED));
	raise(SIGSTOP);		/* our window closes while we are stopped */
	/* continued: the engine reads on until the stream ends */
	for (t0 = now_ms(); now_ms() - t0 < 20000;) {
		ev = cm_next(500);
		if (!ev)
			continue;
		enum rdma_cm_event_type t = ev->event;

		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_DISCONNECTED)
			break;
	}
	usleep(200 * 1000);	/* let a last placement land */
	for (size_t o = 0; o < g.mrsize; o++) {
		na += g.buf[o] == 'A';
		nb += g.buf[o] == 'B';
	}
	printf("server: A=%zu B=%zu\n", na, nb);
	fflush(stdout);
	if (nb) {
		fprintf(stderr, "xiw_zcflush: %zu bytes of the client's buffer arrived after its WRs had completed\n",
			nb);
		return 1;
	}
	return 0;
}

static void client_connect(struct rinfo *peer)
{
	struct rdma_conn_param cp = { .initiator_depth = 1,
				      .responder_resources = 1 };
	struct rdma_cm_event *ev;
	struct addrinfo *ai;

	if (getaddrinfo(g.addr, g.port, &(struct addrinfo){ .ai_family = AF_INET },
			&ai))
		die("getaddrinfo");
	if (rdma_create_id(g.ch, &g.id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(g.id, NULL, ai->ai_addr, 2000))
		die("resolve_addr");
	freeaddrinfo(ai);
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(g.id, 2000))
		die("resolve_route");
	rdma_ack_cm_event(cm_wait(RDMA_CM_EVENT_ROUTE_RESOLVED));
	setup_qp('A');
	if (rdma_connect(g.id, &cp))
		die("rdma_connect");
	ev = cm_wait(RDMA_CM_EVENT_ESTABLISHED);
	memcpy(peer, ev->param.conn.private_data, sizeof(*peer));
	rdma_ack_cm_event(ev);
}

static int run_client(void)
{
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	int nok = 0, nflush = 0, nother = 0, got = 0;
	struct rinfo peer;
	uint64_t t0;

	client_connect(&peer);
	usleep(300 * 1000);	/* the server stops itself after accepting */
	for (int i = 0; i < g.n; i++) {
		size_t off = ((size_t)i * g.len) % (g.mrsize - g.len + 1);
		struct ibv_sge s = { (uintptr_t)g.buf + off, (uint32_t)g.len,
				     g.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &s,
			.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { peer.addr + off, peer.rkey } }, *bad;

		if (ibv_post_send(g.qp, &wr, &bad))
			die("ibv_post_send");
	}
	usleep(500 * 1000);	/* sends stall on the closed window */
	if (ibv_modify_qp(g.qp, &err, IBV_QP_STATE))
		die("ibv_modify_qp(ERR)");
	for (t0 = now_ms(); got < g.n && now_ms() - t0 < 10000;) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(g.cq, 16, wc);

		if (n < 0)
			die("ibv_poll_cq");
		for (int i = 0; i < n; i++) {
			nok += wc[i].status == IBV_WC_SUCCESS;
			nflush += wc[i].status == IBV_WC_WR_FLUSH_ERR;
			nother += wc[i].status != IBV_WC_SUCCESS &&
				  wc[i].status != IBV_WC_WR_FLUSH_ERR;
		}
		got += n;
		if (!n)
			usleep(100);
	}
	/* every WR completed: the application may reuse its buffer now */
	memset(g.buf, 'B', g.mrsize);
	printf("client: %d of %d WCs (%d success, %d flushed, %d other); buffer reused\n",
	       got, g.n, nok, nflush, nother);
	fflush(stdout);
	if (got != g.n) {
		fprintf(stderr, "xiw_zcflush: %d of %d WRs completed\n", got, g.n);
		return 1;
	}
	sleep(3);		/* the server reads meanwhile */
	rdma_destroy_qp(g.id);
	rdma_destroy_id(g.id);
	return 0;
}

int main(int argc, char **argv)
{
	int o;

	while ((o = getopt(argc, argv, "sc:p:l:q:m:")) != -1) {
		switch (o) {
		case 's': g.server = 1; break;
		case 'c': g.addr = optarg; break;
		case 'p': g.port = optarg; break;
		case 'l': g.len = strtoul(optarg, NULL, 0); break;
		case 'q': g.n = atoi(optarg); break;
		case 'm': g.mrsize = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: xiw_zcflush -s | -c ADDR [-p PORT] [-l LEN] [-q N] [-m MR]\n");
			return 2;
		}
	}
	if ((!g.server && !g.addr) || g.n < 1 || g.len < 1 || g.len > g.mrsize)
		return 2;
	g.ch = rdma_create_event_channel();
	if (!g.ch)
		die("rdma_create_event_channel");
	return g.server ? run_server() : run_client();
}
