// SPDX-License-Identifier: MIT
/*
 * xiw_sockops with a real cgroup and real TCP over loopback: a registered
 * socket produces exactly one event when snd_una crosses the armed
 * watermark (none before), unregistered sockets produce none, and a close
 * produces an XIW_ACK_EV_CLOSE event. Needs root (CAP_BPF): skips otherwise.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <linux/magic.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <cmocka.h>
#include "xiw_sockops.h"

struct seen {
	int n, watermark, close;
	uint64_t cookie;
	uint32_t snd_una;
};

static void on_event(void *ctx, const struct xiw_ack_event *ev)
{
	struct seen *s = ctx;

	s->n++;
	s->cookie = ev->cookie;
	s->snd_una = ev->snd_una;
	if (ev->type == XIW_ACK_EV_WATERMARK)
		s->watermark++;
	if (ev->type == XIW_ACK_EV_CLOSE)
		s->close++;
}

/* connected loopback pair: *cli (connect side), *srv (accepted side) */
static void tcp_pair(int *cli, int *srv)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	assert_true(l >= 0);
	assert_int_equal(bind(l, (void *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (void *)&a, &alen), 0);
	*cli = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*cli, (void *)&a, sizeof(a)), 0);
	*srv = accept(l, NULL, NULL);
	assert_true(*srv >= 0);
	setsockopt(*cli, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(l);
}

/* wait up to @ms for ring events, consuming them into @s */
static void drain(struct seen *s, int ms)
{
	struct pollfd p = { .fd = xiw_sockops_ring_fd(), .events = POLLIN };

	while (poll(&p, 1, ms) > 0)
		assert_true(xiw_sockops_consume(on_event, s) >= 0);
}

static int setup(void **state)
{
	int ret = xiw_sockops_load();

	(void)state;
	if (ret == -EPERM || ret == -ENOENT)
		skip();
	assert_int_equal(ret, 0);
	return 0;
}

static void test_watermark_fires_once(void **state)
{
	struct seen s = { 0 };
	struct xiw_sk_ack st;
	char buf[64 * 1024];
	int cli, srv;

	(void)state;
	tcp_pair(&cli, &srv);
	assert_int_equal(xiw_sockops_register(cli, 0xfeedULL), 0);
	memset(buf, 0x5a, sizeof(buf));
	/* one byte first, so the map has snd_una from an ACK */
	assert_int_equal(write(cli, buf, 1), 1);
	assert_int_equal(read(srv, buf, 1), 1);
	usleep(50 * 1000);
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	assert_true(st.acks >= 1);

	/* watermark 32 KB ahead: 16 KB must not fire, the next 16 KB must */
	assert_int_equal(xiw_sockops_arm(cli, st.snd_una + 32768), 0);
	assert_int_equal(write(cli, buf, 16384), 16384);
	assert_int_equal(recv(srv, buf, 16384, MSG_WAITALL), 16384);
	drain(&s, 200);
	assert_int_equal(s.watermark, 0);
	assert_int_equal(write(cli, buf, 16384), 16384);
	assert_int_equal(recv(srv, buf, 16384, MSG_WAITALL), 16384);
	drain(&s, 500);
	assert_int_equal(s.watermark, 1);
	assert_int_equal(s.cookie, 0xfeedULL);
	assert_true((int32_t)(s.snd_una - (st.snd_una + 32768)) >= 0);

	/* disarmed: more ACKs, no more events */
	assert_int_equal(write(cli, buf, 4096), 4096);
	assert_int_equal(recv(srv, buf, 4096, MSG_WAITALL), 4096);
	drain(&s, 200);
	assert_int_equal(s.watermark, 1);

	close(cli);
	close(srv);
	drain(&s, 500);
	assert_int_equal(s.close, 1);
}

static void test_unregistered_silent(void **state)
{
	struct seen s = { 0 };
	struct xiw_sk_ack st;
	char buf[4096] = { 0 };
	int cli, srv;

	(void)state;
	tcp_pair(&cli, &srv);
	assert_int_equal(xiw_sockops_state(cli, &st), -ENOENT);
	assert_int_equal(xiw_sockops_arm(cli, 1), -ENOENT);
	assert_int_equal(write(cli, buf, sizeof(buf)), (int)sizeof(buf));
	assert_int_equal(recv(srv, buf, sizeof(buf), MSG_WAITALL), (int)sizeof(buf));
	close(cli);
	close(srv);
	drain(&s, 300);
	assert_int_equal(s.n, 0);
}

static void test_watermark_wraps(void **state)
{
	struct seen s = { 0 };
	struct xiw_sk_ack st;
	char buf[8192] = { 0 };
	int cli, srv;

	(void)state;
	tcp_pair(&cli, &srv);
	assert_int_equal(xiw_sockops_register(cli, 7), 0);
	assert_int_equal(write(cli, buf, 1), 1);
	assert_int_equal(read(srv, buf, 1), 1);
	usleep(50 * 1000);
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	/* a watermark "behind" snd_una modulo 2^32 fires on the next ACK,
	 * one 2^31 ahead does not */
	assert_int_equal(xiw_sockops_arm(cli, st.snd_una + 0x80000000u), 0);
	assert_int_equal(write(cli, buf, 100), 100);
	assert_int_equal(recv(srv, buf, 100, MSG_WAITALL), 100);
	drain(&s, 200);
	assert_int_equal(s.watermark, 0);
	assert_int_equal(xiw_sockops_arm(cli, st.snd_una - 10), 0);
	assert_int_equal(write(cli, buf, 100), 100);
	assert_int_equal(recv(srv, buf, 100, MSG_WAITALL), 100);
	drain(&s, 500);
	assert_int_equal(s.watermark, 1);
	xiw_sockops_unregister(cli);
	close(cli);
	close(srv);
}

/* --child: a second process with its own program instance and ring:
 * its own socket's watermark must reach it. Exit 0 on success. */
static int child_main(void)
{
	struct pollfd p;
	struct seen s = { 0 };
	struct xiw_sk_ack st;
	char buf[256] = { 0 };
	int cli, srv;

	if (xiw_sockops_load())
		return 2;
	tcp_pair(&cli, &srv);
	if (xiw_sockops_register(cli, 0xc417dULL))
		return 3;
	/* one byte first, so the map holds snd_una from a real ACK */
	if (write(cli, buf, 1) != 1 || read(srv, buf, 1) != 1)
		return 4;
	usleep(50 * 1000);
	if (xiw_sockops_state(cli, &st) || !st.acks ||
	    xiw_sockops_arm(cli, st.snd_una + sizeof(buf)))
		return 3;
	if (write(cli, buf, sizeof(buf)) != sizeof(buf) ||
	    recv(srv, buf, sizeof(buf), MSG_WAITALL) != sizeof(buf))
		return 4;
	p = (struct pollfd){ .fd = xiw_sockops_ring_fd(), .events = POLLIN };
	while (!s.watermark && poll(&p, 1, 2000) > 0)
		xiw_sockops_consume(on_event, &s);
	return s.watermark == 1 && s.cookie == 0xc417dULL ? 0 : 5;
}

/* The socket map is one shared pin; events stay with the owning process. */
static void test_owner_isolation(void **state)
{
	struct seen s = { 0 };
	struct statfs fs;
	int status = -1;
	pid_t pid;

	(void)state;
	if (!statfs("/sys/fs/bpf", &fs) && fs.f_type == BPF_FS_MAGIC)
		assert_int_equal(access(XIW_BPF_PIN_SK_ACK, F_OK), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", "test_sockops", "--child", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	drain(&s, 300);
	assert_int_equal(s.n, 0);	/* the child's ACKs are not ours */
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watermark_fires_once),
		cmocka_unit_test(test_unregistered_silent),
		cmocka_unit_test(test_watermark_wraps),
		cmocka_unit_test(test_owner_isolation),
	};

	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_main();

	return cmocka_run_group_tests_name("bpf_sockops", tests, setup, NULL);
}
