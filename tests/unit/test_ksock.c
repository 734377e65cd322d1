// SPDX-License-Identifier: MIT
/* ksock + progress thread on loopback: connect, echo, EOF, close. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include "xiwarp/xiwarp.h"
#include "xiw_conn.h"
#include "xiw_progress.h"
#include "ksock.h"

struct side {
	struct xiw_llp *l;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int connected, closed_err, eof;
	char buf[64];
	size_t got;
	bool upcall_on_self;
};

static void side_wake(struct side *s)
{
	pthread_cond_broadcast(&s->cond);
}

static void on_readable(void *arg)
{
	struct side *s = arg;

	for (;;) {
		struct iovec iov = { s->buf + s->got, sizeof(s->buf) - s->got };
		ssize_t r = xiw_llp_recv(s->l, &iov, 1);

		pthread_mutex_lock(&s->lock);
		if (r > 0)
			s->got += r;
		else if (r == 0)
			s->eof = 1;
		s->upcall_on_self = xiw_progress_is_self();
		side_wake(s);
		pthread_mutex_unlock(&s->lock);
		if (r <= 0)
			return;
	}
}

static void on_writable(void *arg)
{
	struct side *s = arg;

	pthread_mutex_lock(&s->lock);
	s->connected = 1;
	side_wake(s);
	pthread_mutex_unlock(&s->lock);
}

static void on_closed(void *arg, int err)
{
	struct side *s = arg;

	pthread_mutex_lock(&s->lock);
	s->closed_err = err;
	side_wake(s);
	pthread_mutex_unlock(&s->lock);
}

static const struct xiw_llp_cb cbs = { on_readable, on_writable, on_closed };

static struct side srv, cli;

static void on_accept(void *arg, struct xiw_llp *l)
{
	struct side *s = arg;

	s->l = l;
	xiw_llp_set_owner(l, &cbs, s);
}

static void wait_for(struct side *s, int *field)
{
	pthread_mutex_lock(&s->lock);
	while (!*field)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

static void side_init(struct side *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
}

static void test_echo(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_storage bound;
	struct xiw_ksock_listener *ls;
	struct iovec iov = { "hello", 5 };

	(void)state;
	side_init(&srv);
	side_init(&cli);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(xiw_ksock_listen((struct sockaddr *)&a, 8, on_accept,
					  &srv, &ls, &bound), 0);
	assert_int_not_equal(((struct sockaddr_in *)&bound)->sin_port, 0);
	assert_int_equal(xiw_ksock_connect(NULL, (struct sockaddr *)&bound,
					   &cbs, &cli, &cli.l), 0);
	wait_for(&cli, &cli.connected);
	assert_true(xiw_llp_mss(cli.l) > 0);
	assert_int_equal(xiw_llp_send(cli.l, &iov, 1, false), 5);
	pthread_mutex_lock(&srv.lock);
	while (srv.got < 5)
		pthread_cond_wait(&srv.cond, &srv.lock);
	assert_memory_equal(srv.buf, "hello", 5);
	assert_true(srv.upcall_on_self);
	pthread_mutex_unlock(&srv.lock);
	assert_int_equal(xiw_llp_shutdown(cli.l), 0);
	wait_for(&srv, &srv.eof);
	xiw_llp_close(cli.l);
	xiw_llp_close(srv.l);
	xiw_ksock_listener_close(ls);
	/* re-listen on the same port right away */
	assert_int_equal(xiw_ksock_listen((struct sockaddr *)&bound, 8, on_accept,
					  &srv, &ls, NULL), 0);
	xiw_ksock_listener_close(ls);
}

static void test_refused(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_storage bound;
	struct xiw_ksock_listener *ls;
	int err;

	(void)state;
	side_init(&cli);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(xiw_ksock_listen((struct sockaddr *)&a, 8, on_accept,
					  &srv, &ls, &bound), 0);
	xiw_ksock_listener_close(ls);	/* now the port is closed */
	err = xiw_ksock_connect(NULL, (struct sockaddr *)&bound, &cbs, &cli, &cli.l);
	if (err) {
		assert_int_equal(err, -ECONNREFUSED);
		return;
	}
	wait_for(&cli, &cli.closed_err);
	assert_int_equal(cli.closed_err, -ECONNREFUSED);
	assert_int_equal(cli.connected, 0);
	xiw_llp_close(cli.l);
}

static void bump(void *arg)
{
	__atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static void test_run_sync(void **state)
{
	int n = 0;

	(void)state;
	for (int i = 0; i < 100; i++)
		assert_int_equal(xiw_progress_run(bump, &n), 0);
	assert_int_equal(xiw_progress_sync(bump, &n), 0);
	assert_int_equal(n, 101);
	assert_false(xiw_progress_is_self());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_sync),
		cmocka_unit_test(test_echo),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
