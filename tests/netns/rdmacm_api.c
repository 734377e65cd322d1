// SPDX-License-Identifier: MIT
/*
 * rdmacm_api: the librdmacm drop-in's API semantics over loopback.
 *
 *   rdmacm_api [ADDR]     (default 127.0.0.1)
 *
 * Checks what unmodified rdma_cm clients rely on: event strings, address
 * info, a pollable channel that honours O_NONBLOCK, port 0 binding,
 * async connect/accept with private data both ways, IRD/ORD in the
 * request, reject with private data, a connect nobody listens to,
 * disconnect events on both sides, destroying a listener with a queued
 * request, rdma_destroy_id waiting for acks, a channel destroyed while a
 * thread waits in rdma_get_cm_event, and the synchronous endpoint API
 * (rdma_create_ep / rdma_get_request) as rdma_server/rdma_client use it.
 * Every wait is bounded (5 s). Prints "ok"/"not ok" lines; exit 0 = all
 * passed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define WAIT_MS 5000

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

/* Next event on @ch within WAIT_MS; NULL on timeout or error. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, WAIT_MS) != 1) {
		errno = ETIMEDOUT;
		return NULL;
	}
	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/* Next event, checked to be @type; the caller acks it. */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch,
				    enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = next_event(ch);

	if (!CHECK(ev && ev->event == type, "event %s (got %s, status %d)",
		   rdma_event_str(type), ev ? rdma_event_str(ev->event) : "none",
		   ev ? ev->status : 0)) {
		if (ev)
			rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static void sa_set(struct sockaddr_in *sin, const char *ip, int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	inet_pton(AF_INET, ip, &sin->sin_addr);
}

static struct ibv_qp_init_attr qp_attr(void)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	return a;
}

static void test_strings(void)
{
	struct rdma_addrinfo hints, *res = NULL;
	struct sockaddr_in *sin;

	CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED),
		      "RDMA_CM_EVENT_ESTABLISHED"), "rdma_event_str");
	CHECK(!strcmp(rdma_event_str(99), "UNKNOWN EVENT"), "unknown event str");

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK(!rdma_getaddrinfo(addr, "7471", &hints, &res) && res &&
	      res->ai_dst_addr && !res->ai_src_addr &&
	      res->ai_qp_type == IBV_QPT_RC, "rdma_getaddrinfo active");
	if (res) {
		sin = (struct sockaddr_in *)res->ai_dst_addr;
		CHECK(ntohs(sin->sin_port) == 7471, "active port");
		rdma_freeaddrinfo(res);
	}
	res = NULL;
	hints.ai_flags = RAI_PASSIVE;
	CHECK(!rdma_getaddrinfo(NULL, "7472", &hints, &res) && res &&
	      res->ai_src_addr && (res->ai_flags & RAI_PASSIVE),
	      "rdma_getaddrinfo passive");
	rdma_freeaddrinfo(res);
	res = NULL;
	CHECK(rdma_getaddrinfo("no.such.host.invalid", "1", &hints, &res) == -1,
	      "unknown host fails");
}

static void test_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct sockaddr_in sin;

	if (!CHECK(ch, "create channel"))
		return;
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	errno = 0;
	CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN,
	      "empty non-blocking channel: EAGAIN");

	CHECK(!rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), "create id");
	sa_set(&sin, "0.0.0.0", 0);
	CHECK(!rdma_bind_addr(id, (struct sockaddr *)&sin), "bind port 0");
	CHECK(rdma_get_src_port(id) != 0, "bound port %u",
	      ntohs(rdma_get_src_port(id)));
	CHECK(!id->verbs, "wildcard bind has no device");
	CHECK(!rdma_listen(id, 0), "listen");
	CHECK(rdma_resolve_route(id, 100) == -1 && errno == EINVAL,
	      "resolve_route on a listener: EINVAL");
	CHECK(!rdma_destroy_id(id), "destroy listener");
	rdma_destroy_event_channel(ch);
}

struct side {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;	/* client id / server listener */
	struct rdma_cm_id *child;
};

static int client_resolve(struct side *c, int port)
{
	struct rdma_cm_event *ev;
	struct sockaddr_in dst;
	struct ibv_qp_init_attr a = qp_attr();

	sa_set(&dst, addr, port);
	if (!CHECK(!rdma_create_id(c->ch, &c->id, c, RDMA_PS_TCP), "client id") ||
	    !CHECK(!rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&dst, 2000),
		   "resolve_addr"))
		return -1;
	ev = expect(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!ev)
		return -1;
	CHECK(ev->id == c->id && c->id->verbs && c->id->port_num == 1,
	      "resolved id has a device (%s)",
	      c->id->verbs ? ibv_get_device_name(c->id->verbs->device) : "-");
	rdma_ack_cm_event(ev);
	CHECK(!rdma_resolve_route(c->id, 2000), "resolve_route");
	ev = expect(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	return CHECK(!rdma_create_qp(c->id, NULL, &a) && c->id->qp && c->id->pd,
		     "client QP on the default PD") ? 0 : -1;
}

static int server_listen(struct side *s)
{
	struct sockaddr_in sin;

	sa_set(&sin, addr, 0);
	if (!CHECK(!rdma_create_id(s->ch, &s->id, s, RDMA_PS_TCP), "server id") ||
	    !CHECK(!rdma_bind_addr(s->id, (struct sockaddr *)&sin), "server bind") ||
	    !CHECK(!rdma_listen(s->id, 4), "server listen"))
		return -1;
	return ntohs(rdma_get_src_port(s->id));
}

/* The request as the server sees it: new id, listener, private data. */
static struct rdma_cm_event *server_request(struct side *s, const char *pdata)
{
	struct rdma_cm_event *ev = expect(s->ch, RDMA_CM_EVENT_CONNECT_REQUEST);

	if (!ev)
		return NULL;
	s->child = ev->id;
	CHECK(ev->listen_id == s->id && ev->id != s->id && ev->id->verbs &&
	      ev->id->context == s, "request: new id with device, listen_id");
	CHECK(ev->param.conn.private_data_len >= strlen(pdata) + 1 &&
	      !memcmp(ev->param.conn.private_data, pdata, strlen(pdata) + 1),
	      "request private data \"%s\" (got %u bytes \"%.*s\")", pdata,
	      ev->param.conn.private_data_len, ev->param.conn.private_data_len,
	      ev->param.conn.private_data ?
	      (const char *)ev->param.conn.private_data : "");
	CHECK(ev->param.conn.responder_resources == 2 &&
	      ev->param.conn.initiator_depth == 3,
	      "request IRD/ORD offer (resp_res %u init_depth %u)",
	      ev->param.conn.responder_resources, ev->param.conn.initiator_depth);
	return ev;
}

static int client_connect(struct side *c, const char *pdata)
{
	struct rdma_conn_param cp;

	memset(&cp, 0, sizeof(cp));
	cp.private_data = pdata;
	cp.private_data_len = strlen(pdata) + 1;
	cp.responder_resources = 3;	/* peer's initiator_depth */
	cp.initiator_depth = 2;		/* peer's responder_resources */
	return CHECK(!rdma_connect(c->id, &cp), "connect") ? 0 : -1;
}

static void test_accept(struct side *c, struct side *s)
{
	struct rdma_cm_event *ev, *req;
	struct ibv_qp_init_attr a = qp_attr();
	struct rdma_conn_param cp;

	if (client_connect(c, "hello"))
		return;
	req = server_request(s, "hello");
	if (!req)
		return;
	CHECK(!rdma_create_qp(s->child, NULL, &a), "server QP");
	memset(&cp, 0, sizeof(cp));
	cp.private_data = "world";
	cp.private_data_len = 6;
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	CHECK(!rdma_accept(s->child, &cp), "accept");
	rdma_ack_cm_event(req);
	ev = expect(s->ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev) {
		CHECK(ev->id == s->child, "server ESTABLISHED on the new id");
		rdma_ack_cm_event(ev);
	}
	ev = expect(c->ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev) {
		CHECK(ev->param.conn.private_data_len >= 6 &&
		      !memcmp(ev->param.conn.private_data, "world", 6),
		      "reply private data \"world\"");
		rdma_ack_cm_event(ev);
	}
	CHECK(rdma_get_dst_port(c->id) == rdma_get_src_port(s->id),
	      "client dst port is the listener's");

	CHECK(!rdma_disconnect(c->id), "client disconnect");
	ev = expect(c->ch, RDMA_CM_EVENT_DISCONNECTED);
	if (ev)
		rdma_ack_cm_event(ev);
	ev = expect(s->ch, RDMA_CM_EVENT_DISCONNECTED);
	if (ev)
		rdma_ack_cm_event(ev);
	CHECK(!rdma_disconnect(s->child), "disconnect after peer closed: 0");
	rdma_destroy_qp(s->child);
	CHECK(!rdma_destroy_id(s->child), "destroy server id");
	rdma_destroy_qp(c->id);
	CHECK(!rdma_destroy_id(c->id), "destroy client id");
}

static void test_reject(struct side *c, struct side *s)
{
	struct rdma_cm_event *ev, *req;

	if (client_connect(c, "knock"))
		return;
	req = server_request(s, "knock");
	if (!req)
		return;
	CHECK(!rdma_reject(s->child, "go away", 8), "reject");
	rdma_ack_cm_event(req);
	ev = expect(c->ch, RDMA_CM_EVENT_REJECTED);
	if (ev) {
		CHECK(ev->status == -ECONNREFUSED || ev->status == -ECONNRESET,
		      "reject status %d", ev->status);
		CHECK(ev->param.conn.private_data_len >= 8 &&
		      !memcmp(ev->param.conn.private_data, "go away", 8),
		      "reject private data");
		rdma_ack_cm_event(ev);
	}
	CHECK(!rdma_destroy_id(s->child), "destroy rejected id");
	rdma_destroy_qp(c->id);
	CHECK(!rdma_destroy_id(c->id), "destroy client id");
}

static void test_async(void)
{
	struct side c = { 0 }, s = { 0 };
	int port;

	c.ch = rdma_create_event_channel();
	s.ch = rdma_create_event_channel();
	if (!CHECK(c.ch && s.ch, "channels"))
		return;
	port = server_listen(&s);
	if (port > 0 && !client_resolve(&c, port))
		test_accept(&c, &s);
	if (port > 0 && !client_resolve(&c, port))
		test_reject(&c, &s);
	if (s.id)
		CHECK(!rdma_destroy_id(s.id), "destroy listener");
	/* nobody listens on the port now */
	if (port > 0 && !client_resolve(&c, port)) {
		struct rdma_cm_event *ev;

		if (!client_connect(&c, "anyone")) {
			ev = next_event(c.ch);
			CHECK(ev && (ev->event == RDMA_CM_EVENT_REJECTED ||
				     ev->event == RDMA_CM_EVENT_UNREACHABLE) &&
			      ev->status < 0, "connect to a closed port fails (%s %d)",
			      ev ? rdma_event_str(ev->event) : "none",
			      ev ? ev->status : 0);
			if (ev)
				rdma_ack_cm_event(ev);
		}
		rdma_destroy_qp(c.id);
		rdma_destroy_id(c.id);
	}
	rdma_destroy_event_channel(c.ch);
	rdma_destroy_event_channel(s.ch);
}

/* ------------------------------------------- destroy and event life */

struct acker {
	struct rdma_cm_event *ev;
	int acked;
};

static void *ack_later(void *arg)
{
	struct acker *a = arg;

	usleep(200 * 1000);
	a->acked = 1;
	rdma_ack_cm_event(a->ev);
	return NULL;
}

/*
 * A listener destroyed with a request still queued must not hang and must
 * let the client know; rdma_destroy_id must wait for the ack of an event
 * the application holds (real librdmacm semantics).
 */
static void test_destroy(void)
{
	struct side c = { 0 }, s = { 0 };
	struct rdma_cm_event *ev;
	struct pollfd p;
	struct acker a = { 0 };
	pthread_t t;
	int port;

	c.ch = rdma_create_event_channel();
	s.ch = rdma_create_event_channel();
	if (!CHECK(c.ch && s.ch, "channels"))
		return;
	port = server_listen(&s);
	if (port <= 0 || client_resolve(&c, port) || client_connect(&c, "late"))
		goto out;
	p.fd = s.ch->fd;
	p.events = POLLIN;
	CHECK(poll(&p, 1, WAIT_MS) == 1, "request queued on the listener");
	CHECK(!rdma_destroy_id(s.id), "destroy listener with a queued request");
	s.id = NULL;
	ev = next_event(c.ch);
	CHECK(ev && ev->event != RDMA_CM_EVENT_ESTABLISHED,
	      "client told (%s)", ev ? rdma_event_str(ev->event) : "nothing");
	if (!ev)
		goto out;
	/* hold that event, destroy the id from here, ack from a thread */
	a.ev = ev;
	if (pthread_create(&t, NULL, ack_later, &a))
		goto out;
	rdma_destroy_qp(c.id);
	CHECK(!rdma_destroy_id(c.id) && a.acked,
	      "rdma_destroy_id waits for the ack");
	c.id = NULL;
	pthread_join(t, NULL);
out:
	if (c.id) {
		rdma_destroy_qp(c.id);
		rdma_destroy_id(c.id);
	}
	if (s.id)
		rdma_destroy_id(s.id);
	rdma_destroy_event_channel(c.ch);
	rdma_destroy_event_channel(s.ch);
}

/* ------------------------------- a channel destroyed under a waiter */

/*
 * This program's poll() is also the one librdmacm calls (symbol
 * interposition), so the test sees every wait of the thread in
 * rdma_get_cm_event and can hold its first one right after it woke up,
 * before it looks at the queue: the window in which rping (rdma-core v44)
 * destroys the id and the channel from main() while its cm_thread still
 * waits on that channel. Later waits return EINTR, as if a signal came.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t waiter;
	int armed;	/* @waiter's polls go through the gate */
	int hold;	/* hold its first poll (stages 1-3) */
	int stage;	/* 1 waiter polls, 2 it woke up (held), 3 let it go */
	int polls;	/* polls of @waiter */
} gate = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void gate_set(int stage)
{
	pthread_mutex_lock(&gate.lock);
	gate.stage = stage;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
}

/* Wait (at most WAIT_MS) for @stage. Return: reached. */
static int gate_wait(int stage)
{
	struct timespec ts;
	int ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&gate.lock);
	while (gate.stage < stage &&
	       !pthread_cond_timedwait(&gate.cond, &gate.lock, &ts))
		;
	ok = gate.stage >= stage;
	pthread_mutex_unlock(&gate.lock);
	return ok;
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	static int (*real_poll)(struct pollfd *, nfds_t, int);
	int r, nth = 0, hold;

	if (!real_poll)
		real_poll = (int (*)(struct pollfd *, nfds_t, int))
			    dlsym(RTLD_NEXT, "poll");
	pthread_mutex_lock(&gate.lock);
	if (gate.armed && pthread_equal(gate.waiter, pthread_self()))
		nth = ++gate.polls;
	hold = gate.hold;
	pthread_mutex_unlock(&gate.lock);
	if (!nth)
		return real_poll(fds, n, timeout);
	if (nth > 1 || !hold) {
		errno = EINTR;
		return -1;
	}
	gate_set(1);
	r = real_poll(fds, n, WAIT_MS);
	gate_set(2);
	gate_wait(3);
	return r;
}

struct waiter {
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	int ret, err;
};

static void *wait_event(void *arg)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&gate.lock);
	gate.waiter = pthread_self();
	gate.armed = 1;
	pthread_mutex_unlock(&gate.lock);
	w->ret = rdma_get_cm_event(w->ch, &w->ev);
	w->err = errno;
	return NULL;
}

/* Run wait_event on @w in a thread (first poll held if @hold). */
static int waiter_start(pthread_t *t, struct waiter *w, int hold)
{
	pthread_mutex_lock(&gate.lock);
	gate.armed = 0;
	gate.hold = hold;
	gate.stage = 0;
	gate.polls = 0;
	pthread_mutex_unlock(&gate.lock);
	w->ret = 0;
	w->err = 0;
	return pthread_create(t, NULL, wait_event, w);
}

/*
 * A thread waits in rdma_get_cm_event; an event for an id wakes it, but
 * before it takes the event the application destroys the id (dropping
 * the event) and the channel. As with the kernel's rdma_cm file, which
 * the blocked read() holds, the waiter must not touch freed memory: it
 * finds no event and waits on. Then a thread that calls in only after
 * the destroy (rping v44's cm_thread does, after acking DISCONNECTED
 * while main() tears down; an application bug) must not touch freed
 * memory either, and waits too instead of failing (rping would exit()).
 */
static void test_destroy_channel_under_waiter(void)
{
	struct waiter w = { 0 };
	struct rdma_cm_id *id;
	struct sockaddr_in dst;
	pthread_t t;

	w.ch = rdma_create_event_channel();
	if (!CHECK(w.ch, "channel") ||
	    !CHECK(!rdma_create_id(w.ch, &id, NULL, RDMA_PS_TCP), "id"))
		return;
	if (waiter_start(&t, &w, 1))
		return;
	CHECK(gate_wait(1), "waiter blocked in rdma_get_cm_event");
	sa_set(&dst, addr, 7471);
	CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000),
	      "resolve_addr queues an event");
	CHECK(gate_wait(2), "the event woke the waiter");
	CHECK(!rdma_destroy_id(id), "destroy the id before the waiter takes its event");
	rdma_destroy_event_channel(w.ch);
	gate_set(3);
	pthread_join(t, NULL);
	CHECK(gate.polls == 2 && w.ret == -1 && w.err == EINTR,
	      "the waiter finds no event, waits on until EINTR (%d polls, ret %d, %s)",
	      gate.polls, w.ret, strerror(w.err));

	if (waiter_start(&t, &w, 0))
		return;
	pthread_join(t, NULL);
	CHECK(gate.polls == 1 && w.ret == -1 && w.err == EINTR,
	      "rdma_get_cm_event on a destroyed channel waits until EINTR (%d polls, ret %d, %s)",
	      gate.polls, w.ret, strerror(w.err));
	gate.armed = 0;
}

/* ---------------------------------------------- synchronous endpoints */

static char ep_port[8];
static int ep_ready[2];		/* pipe: server -> client "listening" */

static int ep_exchange(struct rdma_cm_id *id, int server)
{
	uint8_t send[16] = "ep-ping", recv[16];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int ret = -1;

	mr = rdma_reg_msgs(id, recv, sizeof(recv));
	if (!mr || rdma_post_recv(id, NULL, recv, sizeof(recv), mr))
		return -1;
	if (server ? rdma_accept(id, NULL) : rdma_connect(id, NULL))
		goto out;
	if (server) {
		while ((ret = rdma_get_recv_comp(id, &wc)) == 0)
			;
		if (ret < 0 || wc.status || rdma_post_send(id, NULL, send,
				sizeof(send), NULL, IBV_SEND_INLINE))
			goto out;
		while ((ret = rdma_get_send_comp(id, &wc)) == 0)
			;
	} else {
		if (rdma_post_send(id, NULL, send, sizeof(send), NULL,
				   IBV_SEND_INLINE))
			goto out;
		while ((ret = rdma_get_send_comp(id, &wc)) == 0)
			;
		while (ret > 0 && (ret = rdma_get_recv_comp(id, &wc)) == 0)
			;
	}
	ret = (ret > 0 && !wc.status && !memcmp(recv, "ep-ping", 8)) ? 0 : -1;
	rdma_disconnect(id);
out:
	rdma_dereg_mr(mr);
	return ret;
}

static void *ep_server(void *arg)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr a = qp_attr();
	struct rdma_cm_id *listen_id, *id;
	char c = 1;

	(void)arg;
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	a.cap.max_inline_data = 16;
	a.sq_sig_all = 1;
	if (!CHECK(!rdma_getaddrinfo(addr, ep_port, &hints, &res), "ep server addrinfo"))
		return NULL;
	if (CHECK(!rdma_create_ep(&listen_id, res, NULL, &a), "rdma_create_ep passive") &&
	    CHECK(!rdma_listen(listen_id, 0), "ep listen")) {
		if (write(ep_ready[1], &c, 1) != 1)
			perror("write");
		if (CHECK(!rdma_get_request(listen_id, &id) && id->qp,
			  "rdma_get_request: id with QP")) {
			CHECK(!ep_exchange(id, 1), "ep server accept+recv+send");
			rdma_destroy_ep(id);
		}
		rdma_destroy_ep(listen_id);
	}
	rdma_freeaddrinfo(res);
	return NULL;
}

static void test_ep(void)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr a = qp_attr();
	struct pollfd p;
	struct rdma_cm_id *id;
	pthread_t t;

	snprintf(ep_port, sizeof(ep_port), "%d", 20000 + getpid() % 20000);
	if (pipe(ep_ready) || pthread_create(&t, NULL, ep_server, NULL))
		return;
	p.fd = ep_ready[0];
	p.events = POLLIN;
	if (!CHECK(poll(&p, 1, WAIT_MS) == 1, "ep server listening"))
		goto out;
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	a.cap.max_inline_data = 16;
	a.sq_sig_all = 1;
	if (CHECK(!rdma_getaddrinfo(addr, ep_port, &hints, &res), "ep client addrinfo")) {
		if (CHECK(!rdma_create_ep(&id, res, NULL, &a) && id->qp,
			  "rdma_create_ep active")) {
			CHECK(!ep_exchange(id, 0), "ep client connect+send+recv");
			rdma_destroy_ep(id);
		}
		rdma_freeaddrinfo(res);
	}
out:
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		addr = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_strings();
	test_channel();
	test_async();
	test_destroy();
	test_destroy_channel_under_waiter();
	test_ep();
	printf("%s: %d failure(s)\n", argv[0], failures);
	return failures ? 1 : 0;
}
