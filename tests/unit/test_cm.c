// SPDX-License-Identifier: MIT
/*
 * CM on loopback 127.0.0.1: MPA negotiation rules, CONNECT_REQUEST with
 * private data, reject, unreachable, garbage from a raw TCP client,
 * CONNECT_REQUESTs in accept order (and the bound on that wait),
 * re-listen, listener destroy with a pending request, and a whole
 * connect/accept/RTR/ESTABLISHED/DISCONNECTED run against a fake QP
 * (xiw_qp_attach/send_rtr/detach are defined here; the real QP data path
 * is exercised by the data path's loop test).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include "xiwarp/xiwarp.h"
#include "xiwarp/wire/mpa.h"
#include "xiw_conn.h"
#include "xiw_cm.h"
#include "xiw_cm_mpa.h"
#include "llp.h"

/* --------------------------------------------------------- fake QP --- */

struct fake_qp {
	struct xiw_cm_conn *conn;
	struct xiw_llp *llp;
	struct xiw_conn_params p;
	int attached, rtr_sent, rtr_seen, detached, closed, nudges;
	bool nudge_armed;
};

static void fq_readable(void *arg)
{
	struct fake_qp *q = arg;
	char buf[256];

	for (;;) {
		struct iovec iov = { buf, sizeof(buf) };
		ssize_t r = xiw_llp_recv(q->llp, &iov, 1);

		if (r == -EAGAIN)
			return;
		if (r <= 0) {
			if (!__atomic_fetch_add(&q->closed, 1, __ATOMIC_ACQ_REL))
				xiw_cm_stream_closed(q->conn, (int)r);
			return;
		}
		if (!q->p.initiator && q->p.rtr != XIW_RTR_NONE && !q->rtr_seen++)
			xiw_cm_rtr_received(q->conn);
	}
}

static void fq_closed(void *arg, int err)
{
	struct fake_qp *q = arg;

	if (!__atomic_fetch_add(&q->closed, 1, __ATOMIC_ACQ_REL))
		xiw_cm_stream_closed(q->conn, err);
}

static const struct xiw_llp_cb fq_cb = { .readable = fq_readable, .closed = fq_closed };

int xiw_qp_attach(struct xiw_qp *qp, struct xiw_cm_conn *conn,
		  struct xiw_llp *llp, const struct xiw_conn_params *p)
{
	struct fake_qp *q = (struct fake_qp *)qp;

	q->conn = conn;
	q->llp = llp;
	q->p = *p;
	q->attached++;
	xiw_llp_set_owner(llp, &fq_cb, q);
	return 0;
}

int xiw_qp_send_rtr(struct xiw_qp *qp)
{
	struct fake_qp *q = (struct fake_qp *)qp;
	struct iovec iov = { "R", 1 };

	q->rtr_sent++;
	return xiw_llp_send(q->llp, &iov, 1, false) == 1 ? 0 : -EIO;
}

/* The fake peer never answers: count the nudges of a WRITE RTR. */
int xiw_qp_rtr_nudge(struct xiw_qp *qp)
{
	struct fake_qp *q = (struct fake_qp *)qp;

	if (q->p.rtr == XIW_RTR_READ)
		return -EINVAL;
	q->nudges++;
	return 0;
}

void xiw_qp_rtr_nudge_arm(struct xiw_qp *qp)
{
	((struct fake_qp *)qp)->nudge_armed = true;
}

void xiw_qp_detach(struct xiw_qp *qp, bool abort)
{
	struct fake_qp *q = (struct fake_qp *)qp;

	q->detached++;
	if (!abort) {
		xiw_llp_shutdown(q->llp);
		return;
	}
	xiw_llp_abort(q->llp);
	if (!__atomic_fetch_add(&q->closed, 1, __ATOMIC_ACQ_REL))
		xiw_cm_stream_closed(q->conn, -ECONNABORTED);
}

/* ------------------------------------------------- event recording --- */

#define MAX_EV 16

struct rec_ev {
	enum xiw_cm_event_type type;
	int status;
	struct xiw_cm_conn *conn;
	uint8_t pd[XIW_MAX_PRIV_DATA];
	uint8_t plen, ird, ord;
};

struct rec {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int n;
	struct rec_ev ev[MAX_EV];
	int bad_thread;
};

static struct rec cli, srv;

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
}

static void on_event(void *arg, const struct xiw_cm_event *ev)
{
	struct rec *r = arg;
	struct rec_ev *e;

	pthread_mutex_lock(&r->lock);
	if (!xiw_progress_is_self())
		r->bad_thread++;
	if (r->n < MAX_EV) {
		e = &r->ev[r->n++];
		e->type = ev->type;
		e->status = ev->status;
		e->conn = ev->conn;
		e->plen = ev->private_data_len;
		e->ird = ev->ird;
		e->ord = ev->ord;
		if (ev->private_data_len)
			memcpy(e->pd, ev->private_data, ev->private_data_len);
	}
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Wait (<= 5 s) until @r has more than @idx events; return event @idx. */
static struct rec_ev *rec_wait(struct rec *r, int idx)
{
	struct timespec ts;
	struct rec_ev *e = NULL;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	pthread_mutex_lock(&r->lock);
	while (r->n <= idx)
		if (pthread_cond_timedwait(&r->cond, &r->lock, &ts))
			break;
	if (r->n > idx)
		e = &r->ev[idx];
	pthread_mutex_unlock(&r->lock);
	assert_non_null(e);
	return e;
}

static int rec_count(struct rec *r)
{
	int n;

	pthread_mutex_lock(&r->lock);
	n = r->n;
	pthread_mutex_unlock(&r->lock);
	return n;
}

static void settle(void)
{
	usleep(200 * 1000);
}

/* --------------------------------------------------------- helpers --- */

static struct xiw_cm_listener *listen_lo(struct sockaddr_storage *bound)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct xiw_cm_listener *l = NULL;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(xiw_cm_listen((struct sockaddr *)&a, 16, on_event, &srv,
				       &l, bound), 0);
	assert_int_not_equal(((struct sockaddr_in *)bound)->sin_port, 0);
	return l;
}

static int setup(void **state)
{
	(void)state;
	rec_init(&cli);
	rec_init(&srv);
	return 0;
}

/* ------------------------------------------------- negotiation rules --- */

static void test_negotiate_v2(void **state)
{
	struct xiw_mpa_params req, rep;
	struct xiw_conn_params ini, resp;

	(void)state;
	xiw_cm_mpa_request(&req, 4, 8, NULL, 0);
	assert_int_equal(req.version, 2);
	assert_true(req.p2p && req.rtr_read && req.rtr_write && req.big_fpdu);
	xiw_cm_mpa_reply(&req, 16, 2, NULL, 0, false, &rep);
	assert_int_equal(rep.version, 2);
	assert_true(rep.p2p && rep.rtr_read && !rep.rtr_write);
	assert_int_equal(rep.ord, 2);		/* min(2, initiator IRD 4) */
	assert_int_equal(xiw_cm_conn_params(&req, &rep, true, 1448, &ini), 0);
	assert_int_equal(xiw_cm_conn_params(&req, &rep, false, 1448, &resp), 0);
	assert_int_equal(ini.rtr, XIW_RTR_READ);
	assert_int_equal(resp.rtr, XIW_RTR_READ);
	assert_true(ini.initiator && !resp.initiator);
	assert_int_equal(ini.ord, 8);		/* min(8, responder IRD 16) */
	assert_int_equal(ini.ird, 4);
	assert_int_equal(resp.ird, 16);
	assert_int_equal(resp.ord, 2);
	assert_false(ini.crc || ini.markers_tx || ini.markers_rx);
	assert_int_equal(ini.max_ulpdu, 65534);	/* both set the big-FPDU bit */
}

static void test_negotiate_v1_and_bits(void **state)
{
	struct xiw_mpa_params req, rep;
	struct xiw_conn_params p;

	(void)state;
	memset(&req, 0, sizeof(req));
	req.version = 1;
	req.crc = true;
	req.markers = true;			/* initiator wants to receive markers */
	xiw_cm_mpa_reply(&req, 4, 4, NULL, 0, false, &rep);
	assert_int_equal(rep.version, 1);	/* falls back to the peer's v1 */
	assert_true(rep.crc);			/* either side's C bit */
	assert_false(rep.p2p || rep.big_fpdu);
	assert_int_equal(xiw_cm_conn_params(&req, &rep, false, 1448, &p), 0);
	assert_true(p.crc && p.markers_tx && !p.markers_rx);
	assert_int_equal(p.rtr, XIW_RTR_NONE);
	assert_int_equal(p.ird, 1);
	assert_int_equal(p.ord, 1);
	/* one FPDU per 1448-byte segment: <= 3 markers, CRC, 2-byte length */
	assert_int_equal(p.max_ulpdu, 1448 - 12 - 4 - 2);
	assert_int_equal((p.max_ulpdu + 2) % 4, 0);
	/* without CRC the 4-byte CRC field is still on the wire (§4.1) */
	assert_int_equal(xiw_cm_max_ulpdu(1448, false, false), 1442);

	/* a reply choosing an RTR type that was not offered is an error */
	xiw_cm_mpa_request(&req, 1, 1, NULL, 0);
	req.rtr_read = false;
	xiw_cm_mpa_reply(&req, 1, 1, NULL, 0, false, &rep);
	assert_true(rep.rtr_write && !rep.rtr_read);
	rep.rtr_write = false;
	rep.rtr_read = true;
	assert_int_equal(xiw_cm_conn_params(&req, &rep, true, 1448, &p), -EPROTO);
}

/*
 * Big FPDUs only on the peer's own word: siw as responder copies our
 * request's 0x08 into its reply, which must not switch us to 64 KB FPDUs;
 * a siw initiator without try_gso does not set 0x08 at all.
 */
static uint8_t mpa_flags_of(const struct xiw_mpa_params *req)
{
	uint8_t buf[64];

	assert_true(xiw_mpa_encode(false, req, buf, sizeof(buf)) > 0);
	return buf[XIW_MPA_OFF_FLAGS];
}

static void test_big_fpdu_announce(void **state)
{
	struct xiw_mpa_params req, rep, echo;
	struct xiw_conn_params p;
	uint8_t buf[64];
	int n;

	(void)state;
	/* xiwarp <-> xiwarp: both sides go big */
	xiw_cm_mpa_request(&req, 1, 1, NULL, 0);
	xiw_cm_mpa_reply(&req, 1, 1, NULL, 0, false, &rep);
	assert_true(rep.big_fpdu && rep.big_ack);
	assert_int_equal(xiw_cm_conn_params(&req, &rep, true, 1448, &p), 0);
	assert_true(p.max_ulpdu > 1448);
	assert_int_equal(xiw_cm_conn_params(&req, &rep, false, 1448, &p), 0);
	assert_true(p.max_ulpdu > 1448);

	/* siw responder: its reply carries the request's flags byte */
	n = xiw_mpa_encode(true, &rep, buf, sizeof(buf));
	assert_true(n > 0);
	buf[XIW_MPA_OFF_FLAGS] = mpa_flags_of(&req);
	assert_int_equal(xiw_mpa_parse(true, buf, (size_t)n, &echo), n);
	assert_true(echo.big_fpdu && !echo.big_ack);
	assert_int_equal(xiw_cm_conn_params(&req, &echo, true, 1448, &p), 0);
	assert_true(p.max_ulpdu + 6 <= 1448);		/* one FPDU per segment */

	/* siw initiator, try_gso off: no 0x08, so no big FPDUs from us */
	req.big_fpdu = false;
	xiw_cm_mpa_reply(&req, 1, 1, NULL, 0, false, &rep);
	assert_false(rep.big_fpdu || rep.big_ack);
	assert_int_equal(xiw_cm_conn_params(&req, &rep, false, 1448, &p), 0);
	assert_int_equal(p.max_ulpdu, 1442);
}

/* ------------------------------------------------ request / reject --- */

static void test_request_reject(void **state)
{
	static const char pd[] = "hello private data";
	static const char nope[] = "go away";
	struct sockaddr_storage bound;
	struct xiw_cm_listener *l = listen_lo(&bound);
	struct fake_qp q = { 0 };
	struct rec_ev *e;
	char tmp[sizeof(pd)];

	(void)state;
	memcpy(tmp, pd, sizeof(pd));
	assert_int_equal(xiw_cm_connect((struct xiw_qp *)&q, NULL,
					(struct sockaddr *)&bound, tmp, sizeof(tmp),
					4, 8, on_event, &cli), 0);
	memset(tmp, 'X', sizeof(tmp));	/* copied before connect returned */
	e = rec_wait(&srv, 0);
	assert_int_equal(e->type, XIW_CM_CONNECT_REQUEST);
	assert_int_equal(e->plen, sizeof(pd));
	assert_memory_equal(e->pd, pd, sizeof(pd));
	assert_int_equal(e->ird, 4);
	assert_int_equal(e->ord, 8);
	assert_int_equal(xiw_cm_reject(e->conn, nope, sizeof(nope)), 0);
	e = rec_wait(&cli, 0);
	assert_int_equal(e->type, XIW_CM_REJECTED);
	assert_int_equal(e->plen, sizeof(nope));
	assert_memory_equal(e->pd, nope, sizeof(nope));
	assert_int_equal(q.attached, 0);
	settle();
	assert_int_equal(rec_count(&cli), 1);
	assert_int_equal(cli.bad_thread + srv.bad_thread, 0);
	xiw_cm_listener_destroy(l);
}

static void test_ipv6_request(void **state)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_storage bound;
	struct xiw_cm_listener *l;
	struct fake_qp q = { 0 };
	struct rec_ev *e;
	int err;

	(void)state;
	err = xiw_cm_listen((struct sockaddr *)&a, 4, on_event, &srv, &l, &bound);
	if (err == -EADDRNOTAVAIL || err == -EAFNOSUPPORT)
		skip();				/* no IPv6 on this host */
	assert_int_equal(err, 0);
	assert_int_equal(xiw_cm_connect((struct xiw_qp *)&q, NULL,
					(struct sockaddr *)&bound, "v6", 2, 1, 1,
					on_event, &cli), 0);
	e = rec_wait(&srv, 0);
	assert_int_equal(e->type, XIW_CM_CONNECT_REQUEST);
	assert_memory_equal(e->pd, "v6", 2);
	assert_int_equal(xiw_cm_reject(e->conn, NULL, 0), 0);
	e = rec_wait(&cli, 0);
	assert_int_equal(e->type, XIW_CM_REJECTED);
	assert_int_equal(e->plen, 0);
	xiw_cm_listener_destroy(l);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Nobody ever listens: refused connects are retried for
 * XIW_CM_REFUSED_RETRY_MS (1000 by default), then one UNREACHABLE. */
static void test_unreachable(void **state)
{
	struct sockaddr_storage bound;
	struct xiw_cm_listener *l = listen_lo(&bound);
	struct fake_qp q = { 0 };
	struct rec_ev *e;
	uint64_t t0;

	(void)state;
	xiw_cm_listener_destroy(l);		/* the port is closed now */
	t0 = mono_ms();
	assert_int_equal(xiw_cm_connect((struct xiw_qp *)&q, NULL,
					(struct sockaddr *)&bound, NULL, 0,
					1, 1, on_event, &cli), 0);
	e = rec_wait(&cli, 0);
	assert_int_equal(e->type, XIW_CM_UNREACHABLE);
	assert_int_equal(e->status, -ECONNREFUSED);
	assert_true(mono_ms() - t0 >= 900);
	assert_true(mono_ms() - t0 < 5000);
	settle();
	assert_int_equal(rec_count(&cli), 1);
}

/* The listener comes (back) 100 ms after the connect was refused: the
 * retry reaches it (perftest -R connects again right after a handshake
 * connection, racing the server's next rdma_listen). */
static void test_refused_then_listen(void **state)
{
	struct sockaddr_storage bound, again;
	struct xiw_cm_listener *l = listen_lo(&bound);
	struct fake_qp q = { 0 };
	struct rec_ev *e;

	(void)state;
	xiw_cm_listener_destroy(l);
	assert_int_equal(xiw_cm_connect((struct xiw_qp *)&q, NULL,
					(struct sockaddr *)&bound, NULL, 0,
					1, 1, on_event, &cli), 0);
	usleep(100 * 1000);
	assert_int_equal(rec_count(&cli), 0);	/* still retrying */
	assert_int_equal(xiw_cm_listen((struct sockaddr *)&bound, 16, on_event,
				       &srv, &l, &again), 0);
	e = rec_wait(&srv, 0);
	assert_int_equal(e->type, XIW_CM_CONNECT_REQUEST);
	assert_int_equal(xiw_cm_reject(e->conn, NULL, 0), 0);
	e = rec_wait(&cli, 0);
	assert_int_equal(e->type, XIW_CM_REJECTED);
	xiw_cm_listener_destroy(l);
}

/* A raw TCP client: connect to @bound, send @buf, return the fd. */
static int raw_client(const struct sockaddr_storage *bound, const void *buf,
		      size_t len)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (const struct sockaddr *)bound,
				 sizeof(struct sockaddr_in)), 0);
	if (len)
		assert_int_equal(write(fd, buf, len), (ssize_t)len);
	return fd;
}

/* The server must close on us: read returns 0 or an error within 5 s. */
static void expect_dropped(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b[64];

	assert_int_equal(poll(&p, 1, 5000), 1);
	assert_true(read(fd, b, sizeof(b)) <= 0);
	close(fd);
}

static void test_garbage(void **state)
{
	static const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\nmore junk..";
	uint8_t bad_rev[20] = "MPA ID Req Frame";
	struct sockaddr_storage bound;
	struct xiw_cm_listener *l = listen_lo(&bound);
	int fd;

	(void)state;
	expect_dropped(raw_client(&bound, junk, sizeof(junk)));
	bad_rev[17] = 7;			/* revision 7 */
	expect_dropped(raw_client(&bound, bad_rev, sizeof(bad_rev)));
	bad_rev[17] = 2;
	bad_rev[18] = 0x7f;			/* pd_len 32512 > 512 */
	expect_dropped(raw_client(&bound, bad_rev, sizeof(bad_rev)));
	fd = raw_client(&bound, "MPA ID", 6);	/* half a key, then gone */
	close(fd);
	settle();
	assert_int_equal(rec_count(&srv), 0);
	xiw_cm_listener_destroy(l);
}

static uint64_t mono_ms(void);

/*
 * A plain TCP server (iperf3 -s, say) accepts on @ls, reads our MPA
 * request as its own protocol and answers one byte (at *@t_answer, ms).
 * Returns the accepted fd once our FIN arrived (read() returned 0: a
 * FIN, not a reset).
 */
static int plain_server_answers(int ls, uint64_t *t_answer)
{
	struct pollfd p = { .events = POLLIN };
	uint8_t req[XIW_MPA_HDR_LEN];
	size_t got = 0;
	ssize_t r;

	p.fd = accept(ls, NULL, NULL);
	assert_true(p.fd >= 0);
	while (got < sizeof(req)) {
		r = read(p.fd, req + got, sizeof(req) - got);
		assert_true(r > 0);
		got += (size_t)r;
	}
	assert_memory_equal(req, XIW_MPA_KEY_REQ, XIW_MPA_KEY_LEN);
	*t_answer = mono_ms();
	assert_int_equal(write(p.fd, "\x09", 1), 1);	/* iperf3's PARAM_EXCHANGE */
	for (;;) {				/* the rest of the request, then FIN */
		char b[512];

		assert_int_equal(poll(&p, 1, 5000), 1);
		r = read(p.fd, b, sizeof(b));
		assert_true(r >= 0);		/* a reset here fails the test */
		if (!r)
			return p.fd;
	}
}

static int plain_listen(struct sockaddr_storage *bound)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(ls, 4), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &len), 0);
	memset(bound, 0, sizeof(*bound));
	memcpy(bound, &a, sizeof(a));
	return ls;
}

/* Connect @q to the plain server on @ls; return its fd once our FIN came. */
static int plain_connect(struct fake_qp *q, int ls,
			 const struct sockaddr_storage *bound, uint64_t *t_answer)
{
	assert_int_equal(xiw_cm_connect((struct xiw_qp *)q, NULL,
					(const struct sockaddr *)bound, NULL, 0,
					1, 1, on_event, &cli), 0);
	return plain_server_answers(ls, t_answer);
}

/* The plain server gets our FIN, not an RST, and CONNECT_ERROR (-EPROTO)
 * comes only after it closed (a caller falling back to plain TCP then
 * finds it done with this connection). */
static void test_plain_server_closes(void **state)
{
	struct sockaddr_storage bound;
	struct fake_qp q = { 0 };
	int ls = plain_listen(&bound), fd;
	struct rec_ev *e;
	uint64_t t0;

	(void)state;
	fd = plain_connect(&q, ls, &bound, &t0);
	usleep(100 * 1000);
	/* waits for our close (unless a loaded machine overslept the 500 ms) */
	if (mono_ms() - t0 < 450)
		assert_int_equal(rec_count(&cli), 0);
	close(fd);
	e = rec_wait(&cli, 0);
	assert_int_equal(e->type, XIW_CM_CONNECT_ERROR);
	assert_int_equal(e->status, -EPROTO);
	assert_int_equal(q.attached, 0);
	settle();
	assert_int_equal(rec_count(&cli), 1);
	close(ls);
}

/* A plain server that never closes: CONNECT_ERROR (-EPROTO) after the
 * 500 ms wait, and the connection is reset then. */
static void test_plain_server_stays(void **state)
{
	struct sockaddr_storage bound;
	struct fake_qp q = { 0 };
	int ls = plain_listen(&bound), fd;
	struct pollfd p = { .events = POLLIN };
	struct rec_ev *e;
	uint64_t t0;

	(void)state;
	fd = plain_connect(&q, ls, &bound, &t0);
	e = rec_wait(&cli, 0);
	assert_int_equal(e->type, XIW_CM_CONNECT_ERROR);
	assert_int_equal(e->status, -EPROTO);
	assert_true(mono_ms() - t0 >= 500);	/* the wait starts after the answer */
	p.fd = fd;			/* after the FIN, only the RST raises POLLHUP */
	p.events = 0;
	assert_int_equal(poll(&p, 1, 5000), 1);
	assert_true(p.revents & POLLHUP);
	close(fd);
	close(ls);
}

/*
 * A valid MPA v1 request whose one byte of private data is @tag (the
 * CONNECT_REQUEST shows which client it came from).
 */
static void send_request(int fd, uint8_t tag)
{
	uint8_t f[XIW_MPA_HDR_LEN + 1] = "MPA ID Req Frame";

	f[16] = 0;		/* no markers, no CRC */
	f[17] = 1;		/* revision 1 */
	f[18] = 0;
	f[19] = 1;		/* pd_len */
	f[20] = tag;
	assert_int_equal(write(fd, f, sizeof(f)), (ssize_t)sizeof(f));
}

/* The tag of server event @idx, a CONNECT_REQUEST; rejects it. */
static int request_tag(int idx)
{
	struct rec_ev *e = rec_wait(&srv, idx);

	assert_int_equal(e->type, XIW_CM_CONNECT_REQUEST);
	assert_int_equal(e->plen, 1);
	assert_int_equal(xiw_cm_reject(e->conn, NULL, 0), 0);
	return e->pd[0];
}

/*
 * Requests read in another order than their connections were accepted
 * still reach the app in accept order (perftest -R -q N pairs its QPs
 * by that order). connect() returns once the kernel queued the
 * connection, so the listener accepts c[0], c[1], c[2] in this order.
 */
static void test_requests_in_accept_order(void **state)
{
	struct sockaddr_storage bound;
	struct xiw_cm_listener *l = listen_lo(&bound);
	int c[3];
	uint64_t t0;

	(void)state;
	for (int i = 0; i < 3; i++)
		c[i] = raw_client(&bound, NULL, 0);
	t0 = mono_ms();
	send_request(c[2], 2);
	send_request(c[1], 1);
	usleep(100 * 1000);
	/* held back by c[0]: the bound (main: 1000 ms) cannot be over yet */
	if (mono_ms() - t0 < 900)
		assert_int_equal(rec_count(&srv), 0);
	send_request(c[0], 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(request_tag(i), i);
	for (int i = 0; i < 3; i++)
		close(c[i]);
	xiw_cm_listener_destroy(l);
}

/*
 * An earlier connection that sends no request holds a later one back
 * for XIW_CM_ORDER_MS (main: 1000 ms) at most; its own request, when it
 * comes, is raised at once.
 */
static void test_request_order_bound(void **state)
{
	struct sockaddr_storage bound;
	struct xiw_cm_listener *l = listen_lo(&bound);
	int c0, c1;
	uint64_t t0;

	(void)state;
	c0 = raw_client(&bound, NULL, 0);
	c1 = raw_client(&bound, NULL, 0);
	t0 = mono_ms();
	send_request(c1, 1);
	assert_int_equal(request_tag(0), 1);
	assert_true(mono_ms() - t0 >= 990);	/* timers never fire early */
	send_request(c0, 0);
	assert_int_equal(request_tag(1), 0);
	close(c0);
	close(c1);
	xiw_cm_listener_destroy(l);
}

static void test_relisten(void **state)
{
	struct sockaddr_storage bound, again;
	struct xiw_cm_listener *l = listen_lo(&bound);
	int fd;

	(void)state;
	fd = raw_client(&bound, "MPA", 3);	/* an accepted, half-read conn */
	settle();
	xiw_cm_listener_destroy(l);
	close(fd);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(xiw_cm_listen((struct sockaddr *)&bound, 16, on_event,
					       &srv, &l, &again), 0);
		assert_memory_equal(&again, &bound, sizeof(struct sockaddr_in));
		xiw_cm_listener_destroy(l);
	}
}

static void test_destroy_with_pending(void **state)
{
	struct sockaddr_storage bound;
	struct xiw_cm_listener *l = listen_lo(&bound);
	struct fake_qp q = { 0 };
	struct rec_ev *e;

	(void)state;
	assert_int_equal(xiw_cm_connect((struct xiw_qp *)&q, NULL,
					(struct sockaddr *)&bound, NULL, 0,
					1, 1, on_event, &cli), 0);
	e = rec_wait(&srv, 0);
	assert_int_equal(e->type, XIW_CM_CONNECT_REQUEST);
	xiw_cm_listener_destroy(l);
	e = rec_wait(&cli, 0);
	assert_int_equal(e->type, XIW_CM_REJECTED);
	/* the app still owns the request it saw */
	assert_int_equal(xiw_cm_accept(srv.ev[0].conn, (struct xiw_qp *)&q,
				       NULL, 0, 1, 1, on_event, &srv), -ECONNABORTED);
	xiw_cm_conn_release(srv.ev[0].conn);
}

/* A plain TCP listener on loopback (no MPA) and @q's connect to it
 * started. Return: the listener's fd. */
static int raw_listener_connect(struct fake_qp *q)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(ls >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(ls, 4), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(xiw_cm_connect((struct xiw_qp *)q, NULL,
					(struct sockaddr *)&a, NULL, 0, 1, 1,
					on_event, &cli), 0);
	return ls;
}

/* A server that resets the connection while our MPA request waits for
 * its reply: REJECTED with -ECONNRESET, as iw_cm reports it. */
static void test_reset_before_reply(void **state)
{
	struct linger lg = { 1, 0 };	/* close() sends RST */
	struct fake_qp q = { 0 };
	struct rec_ev *e;
	char req[64];
	int ls, fd;

	(void)state;
	ls = raw_listener_connect(&q);
	fd = accept(ls, NULL, NULL);
	assert_true(fd >= 0);
	assert_true(read(fd, req, sizeof(req)) > 0);	/* the MPA request */
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(fd);
	e = rec_wait(&cli, 0);
	assert_int_equal(e->type, XIW_CM_REJECTED);
	assert_int_equal(e->status, -ECONNRESET);
	settle();
	assert_int_equal(rec_count(&cli), 1);
	close(ls);
}

/* A QP destroyed while its connect waits for the MPA reply. */
static void test_qp_gone_while_connecting(void **state)
{
	struct fake_qp q = { 0 };
	struct rec_ev *e;
	int ls;

	(void)state;
	ls = raw_listener_connect(&q);
	settle();
	xiw_cm_qp_gone((struct xiw_qp *)&q);
	e = rec_wait(&cli, 0);
	assert_int_equal(e->type, XIW_CM_CONNECT_ERROR);
	assert_int_equal(e->status, -ECONNABORTED);
	xiw_cm_qp_gone((struct xiw_qp *)&q);		/* nothing left: no-op */
	assert_int_equal(xiw_cm_disconnect((struct xiw_qp *)&q), 0);
	settle();
	assert_int_equal(rec_count(&cli), 1);
	assert_int_equal(q.attached, 0);
	close(ls);
}

/* ------------------------------------------- the whole life, fake QP --- */

static void test_establish_disconnect(void **state)
{
	static const char pd[] = "client hello", rpd[] = "server hello";
	struct sockaddr_storage bound;
	struct xiw_cm_listener *l = listen_lo(&bound);
	struct fake_qp qc = { 0 }, qs = { 0 };
	struct rec_ev *e;

	(void)state;
	assert_int_equal(xiw_cm_connect((struct xiw_qp *)&qc, NULL,
					(struct sockaddr *)&bound, pd, sizeof(pd),
					2, 3, on_event, &cli), 0);
	assert_int_equal(xiw_cm_connect((struct xiw_qp *)&qc, NULL,
					(struct sockaddr *)&bound, NULL, 0,
					2, 3, on_event, &cli), -EISCONN);
	e = rec_wait(&srv, 0);
	assert_int_equal(e->type, XIW_CM_CONNECT_REQUEST);
	assert_int_equal(xiw_cm_accept(e->conn, (struct xiw_qp *)&qs, rpd,
				       sizeof(rpd), 5, 6, on_event, &srv), 0);
	assert_int_equal(xiw_cm_accept(e->conn, (struct xiw_qp *)&qs, NULL, 0,
				       5, 6, on_event, &srv), -EINVAL);

	e = rec_wait(&cli, 0);
	assert_int_equal(e->type, XIW_CM_ESTABLISHED);
	assert_int_equal(e->plen, sizeof(rpd));
	assert_memory_equal(e->pd, rpd, sizeof(rpd));
	assert_int_equal(e->ird, 5);
	e = rec_wait(&srv, 1);
	assert_int_equal(e->type, XIW_CM_ESTABLISHED);	/* after the RTR */
	assert_int_equal(qc.rtr_sent, 1);
	assert_int_equal(qs.rtr_seen, 1);
	assert_true(qc.p.initiator && !qs.p.initiator);
	assert_int_equal(qc.p.rtr, XIW_RTR_READ);
	assert_int_equal(qs.p.rtr, XIW_RTR_READ);
	assert_int_equal(qc.p.ord, 3);		/* min(3, server IRD 5) */
	assert_int_equal(qs.p.ord, 2);		/* min(6, client IRD 2) */
	assert_int_equal(qc.p.max_ulpdu, qs.p.max_ulpdu);

	assert_int_equal(xiw_cm_disconnect((struct xiw_qp *)&qc), 0);
	assert_int_equal(xiw_cm_disconnect((struct xiw_qp *)&qc), 0);
	e = rec_wait(&cli, 1);
	assert_int_equal(e->type, XIW_CM_DISCONNECTED);
	e = rec_wait(&srv, 2);
	assert_int_equal(e->type, XIW_CM_DISCONNECTED);	/* peer's FIN */
	settle();
	assert_int_equal(rec_count(&cli), 2);		/* exactly once each */
	assert_int_equal(rec_count(&srv), 3);
	assert_int_equal(qc.detached, 1);
	assert_int_equal(__atomic_load_n(&qc.closed, __ATOMIC_ACQUIRE), 1); /* EOF came back */
	assert_int_equal(cli.bad_thread + srv.bad_thread, 0);
	xiw_cm_listener_destroy(l);
}

int main(void)
{
	/* long enough that a loaded machine cannot outlast it by accident */
	setenv("XIW_CM_ORDER_MS", "1000", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_negotiate_v2, setup),
		cmocka_unit_test_setup(test_negotiate_v1_and_bits, setup),
		cmocka_unit_test_setup(test_big_fpdu_announce, setup),
		cmocka_unit_test_setup(test_request_reject, setup),
		cmocka_unit_test_setup(test_ipv6_request, setup),
		cmocka_unit_test_setup(test_unreachable, setup),
		cmocka_unit_test_setup(test_refused_then_listen, setup),
		cmocka_unit_test_setup(test_garbage, setup),
		cmocka_unit_test_setup(test_plain_server_closes, setup),
		cmocka_unit_test_setup(test_plain_server_stays, setup),
		cmocka_unit_test_setup(test_requests_in_accept_order, setup),
		cmocka_unit_test_setup(test_request_order_bound, setup),
		cmocka_unit_test_setup(test_relisten, setup),
		cmocka_unit_test_setup(test_destroy_with_pending, setup),
		cmocka_unit_test_setup(test_reset_before_reply, setup),
		cmocka_unit_test_setup(test_qp_gone_while_connecting, setup),
		cmocka_unit_test_setup(test_establish_disconnect, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
