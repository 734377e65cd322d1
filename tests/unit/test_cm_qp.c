// SPDX-License-Identifier: MIT
/*
 * CM with real QPs on loopback 127.0.0.1: connect / accept (MPA v2, p2p
 * RTR), ESTABLISHED on both sides, a SEND and an RDMA READ across the
 * negotiated stream, then disconnect: DISCONNECTED exactly once per side.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <cmocka.h>
#include "xiwarp/xiwarp.h"

#define MAX_EV 8

struct side {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int n;
	struct xiw_cm_event ev[MAX_EV];	/* pointers in it are not kept */
	struct xiw_pd *pd;
	struct xiw_cq *cq;
	struct xiw_qp *qp;
	struct xiw_mr *mr;
	char buf[4096];
};

static struct side cli, srv;

static void on_event(void *arg, const struct xiw_cm_event *ev)
{
	struct side *s = arg;

	pthread_mutex_lock(&s->lock);
	if (s->n < MAX_EV) {
		s->ev[s->n] = *ev;
		s->ev[s->n].private_data = NULL;
		s->n++;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static const struct xiw_cm_event *wait_ev(struct side *s, int idx)
{
	const struct xiw_cm_event *e = NULL;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	pthread_mutex_lock(&s->lock);
	while (s->n <= idx)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &ts))
			break;
	if (s->n > idx)
		e = &s->ev[idx];
	pthread_mutex_unlock(&s->lock);
	assert_non_null(e);
	return e;
}

static int count_ev(struct side *s)
{
	int n;

	pthread_mutex_lock(&s->lock);
	n = s->n;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static void side_setup(struct side *s, struct xiw_device *dev)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->pd = xiw_pd_alloc(NULL, dev);
	assert_non_null(s->pd);
	s->cq = xiw_cq_create(NULL, 64, NULL, NULL);
	assert_non_null(s->cq);
	ia.send_cq = &((struct ibv_cq *)s->cq)[0];
	ia.recv_cq = ia.send_cq;
	s->qp = xiw_qp_create(s->pd, &ia);
	assert_non_null(s->qp);
	assert_int_equal(xiw_qp_modify(s->qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS), 0);
	s->mr = xiw_mr_reg(s->pd, s->buf, sizeof(s->buf), (uintptr_t)s->buf,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(s->mr);
}

static void side_teardown(struct side *s)
{
	assert_int_equal(xiw_qp_destroy(s->qp), 0);
	assert_int_equal(xiw_mr_dereg(s->mr), 0);
	assert_int_equal(xiw_cq_destroy(s->cq), 0);
	assert_int_equal(xiw_pd_free(s->pd), 0);
}

/* Poll @s's CQ for one completion (<= 5 s). */
static struct ibv_wc poll_one(struct side *s)
{
	struct ibv_wc wc = { 0 };

	for (int i = 0; i < 5000; i++) {
		if (xiw_cq_poll(s->cq, 1, &wc) == 1)
			return wc;
		usleep(1000);
	}
	fail_msg("no completion within 5 s");
	return wc;
}

static void connect_pair(void)
{
	static const char pd[] = "cli", rpd[] = "srv";
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_storage bound;
	struct xiw_cm_listener *l;
	const struct xiw_cm_event *e;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(xiw_cm_listen((struct sockaddr *)&a, 8, on_event, &srv,
				       &l, &bound), 0);
	assert_int_equal(xiw_cm_connect(cli.qp, NULL, (struct sockaddr *)&bound,
					pd, sizeof(pd), 4, 4, on_event, &cli), 0);
	e = wait_ev(&srv, 0);
	assert_int_equal(e->type, XIW_CM_CONNECT_REQUEST);
	assert_int_equal(xiw_cm_accept(e->conn, srv.qp, rpd, sizeof(rpd), 4, 4,
				       on_event, &srv), 0);
	e = wait_ev(&cli, 0);
	assert_int_equal(e->type, XIW_CM_ESTABLISHED);
	e = wait_ev(&srv, 1);
	assert_int_equal(e->type, XIW_CM_ESTABLISHED);
	xiw_cm_listener_destroy(l);
}

static void send_and_read(void)
{
	struct ibv_sge rs = { (uintptr_t)srv.buf, 64, srv.mr->ibv.lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_sge ss = { (uintptr_t)cli.buf, 6, cli.mr->ibv.lkey };
	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &ss, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_wc wc;

	memcpy(cli.buf, "hello", 6);
	assert_int_equal(xiw_post_recv(srv.qp, &rwr, &rbad), 0);
	assert_int_equal(xiw_post_send(cli.qp, &swr, &sbad), 0);
	wc = poll_one(&srv);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 6);
	assert_string_equal(srv.buf, "hello");
	wc = poll_one(&cli);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);

	/* RDMA READ 100 bytes of the server's buffer into the client's */
	memset(srv.buf + 1000, 0x5a, 100);
	ss.addr = (uintptr_t)cli.buf + 2000;
	ss.length = 100;
	swr.wr_id = 3;
	swr.opcode = IBV_WR_RDMA_READ;
	swr.wr.rdma.remote_addr = (uintptr_t)srv.buf + 1000;
	swr.wr.rdma.rkey = srv.mr->ibv.rkey;
	assert_int_equal(xiw_post_send(cli.qp, &swr, &sbad), 0);
	wc = poll_one(&cli);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 3);
	for (int i = 0; i < 100; i++)
		assert_int_equal((uint8_t)cli.buf[2000 + i], 0x5a);
}

static void test_connect_send_disconnect(void **state)
{
	struct sockaddr_in lo = { .sin_family = AF_INET };
	struct xiw_device *dev;
	const struct xiw_cm_event *e;

	(void)state;
	lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	dev = xiw_device_by_addr((struct sockaddr *)&lo);
	assert_non_null(dev);
	side_setup(&cli, dev);
	side_setup(&srv, dev);
	connect_pair();
	send_and_read();

	assert_int_equal(xiw_cm_disconnect(cli.qp), 0);
	e = wait_ev(&cli, 1);
	assert_int_equal(e->type, XIW_CM_DISCONNECTED);
	e = wait_ev(&srv, 2);
	assert_int_equal(e->type, XIW_CM_DISCONNECTED);
	assert_int_equal(xiw_cm_disconnect(srv.qp), 0);	/* no second event */
	usleep(200 * 1000);
	assert_int_equal(count_ev(&cli), 2);
	assert_int_equal(count_ev(&srv), 3);
	side_teardown(&cli);
	side_teardown(&srv);
}

/*
 * A silent MPA responder on a plain socket: it reads the request, grants
 * peer-to-peer with a zero-length WRITE RTR (RFC 6581), then only counts
 * what arrives until EOF. Linux siw behaves like this while its socket
 * hand-over after the reply leaves our RTR unread.
 */
struct silent_peer {
	int lfd;
	size_t after_reply;	/* bytes after the MPA request, up to EOF */
	int ok;
};

static void *silent_peer_run(void *arg)
{
	static const unsigned char rep[24] = {
		'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'p', ' ',
		'F', 'r', 'a', 'm', 'e',
		0x10, 2, 0, 4,		/* enhanced, rev 2, 4 octets of pdata */
		0x80, 0x01, 0x80, 0x01,	/* IRD 1 + P2P, ORD 1 + WRITE RTR */
	};
	struct silent_peer *p = arg;
	unsigned char b[512];
	size_t got = 0, need = 20;
	int fd = accept(p->lfd, NULL, NULL);
	ssize_t n;

	while (fd >= 0 && got < need && (n = recv(fd, b + got, sizeof(b) - got, 0)) > 0) {
		got += (size_t)n;
		if (got >= 20)
			need = 20 + ((size_t)b[18] << 8 | b[19]);
	}
	if (fd < 0 || got < need || send(fd, rep, sizeof(rep), 0) != (ssize_t)sizeof(rep))
		return NULL;
	p->after_reply = got - need;
	while ((n = recv(fd, b, sizeof(b), 0)) > 0)
		p->after_reply += (size_t)n;
	p->ok = n == 0;		/* FIN, not RST */
	close(fd);
	return NULL;
}

/*
 * Close right after ESTABLISHED while the responder is silent, by
 * disconnect or by destroying the QP: the FIN waits until the RTR and 3
 * nudges (zero-length WRITEs, 20 octets each with the MPA CRC field) are
 * out (xiw_qp_tx.c tx_fin), so a peer that left the RTR unread reads it
 * before it sees the close.
 */
static void quick_close(bool destroy)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	struct silent_peer peer = { 0 };
	struct xiw_device *dev;
	const struct xiw_cm_event *e;
	pthread_t th;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	dev = xiw_device_by_addr((struct sockaddr *)&a);
	assert_non_null(dev);
	peer.lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(peer.lfd >= 0);
	assert_int_equal(bind(peer.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(peer.lfd, 1), 0);
	assert_int_equal(getsockname(peer.lfd, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(pthread_create(&th, NULL, silent_peer_run, &peer), 0);
	side_setup(&cli, dev);
	assert_int_equal(xiw_cm_connect(cli.qp, NULL, (struct sockaddr *)&a,
					NULL, 0, 1, 1, on_event, &cli), 0);
	e = wait_ev(&cli, 0);
	assert_int_equal(e->type, XIW_CM_ESTABLISHED);
	if (destroy)
		side_teardown(&cli);
	else
		assert_int_equal(xiw_cm_disconnect(cli.qp), 0);
	pthread_join(th, NULL);
	close(peer.lfd);
	print_message("%zu octets after the MPA reply\n", peer.after_reply);
	assert_true(peer.ok);
	assert_true(peer.after_reply >= 4 * 20);	/* RTR + 3 nudges */
	assert_int_equal(peer.after_reply % 20, 0);
	if (!destroy)
		side_teardown(&cli);
}

static void test_quick_disconnect_holds_fin(void **state)
{
	(void)state;
	quick_close(false);
}

static void test_quick_destroy_holds_fin(void **state)
{
	(void)state;
	quick_close(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_send_disconnect),
		cmocka_unit_test(test_quick_disconnect_holds_fin),
		cmocka_unit_test(test_quick_destroy_holds_fin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
