// SPDX-License-Identifier: MIT
/*
 * xiw_sockops with a real cgroup and real TCP over loopback: a registered
 * socket produces exactly one event when its acknowledged-bytes count
 * (tcpi_bytes_acked) crosses the armed watermark (none before), also when
 * armed before the socket's first ACK; unregistered sockets produce none,
 * and a close produces an XIW_ACK_EV_CLOSE event; only the send call that
 * reaches the engine's wanted position is marked for an ACK callback. The
 * shared map is pinned under its versioned name. Needs root (CAP_BPF): skips otherwise.
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
#include <sys/socket.h>
#include <linux/tcp.h>
#include <cmocka.h>
#include <bpf/bpf.h>
#include "xiw_sockops.h"

struct seen {
	int n, watermark, close;
	uint64_t cookie;
	uint64_t bytes_acked;
};

static void on_event(void *ctx, const struct xiw_ack_event *ev)
{
	struct seen *s = ctx;

	s->n++;
	s->cookie = ev->cookie;
	s->bytes_acked = ev->bytes_acked;
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

/* the socket's tcpi_bytes_acked: the space the watermark lives in */
static uint64_t acked_of(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
	return ti.tcpi_bytes_acked;
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

/*
 * Armed right after registration, before the socket saw any ACK (the
 * first WR after connection setup): no offset to learn, the event comes.
 */
static void test_watermark_fires_once(void **state)
{
	struct seen s = { 0 };
	struct xiw_sk_ack st;
	char buf[64 * 1024];
	uint32_t wm;
	int cli, srv;

	(void)state;
	tcp_pair(&cli, &srv);
	assert_int_equal(xiw_sockops_register(cli, 0xfeedULL), 0);
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	assert_int_equal(st.acks, 0);
	memset(buf, 0x5a, sizeof(buf));

	/* watermark 32 KB ahead: 16 KB must not fire, the next 16 KB must */
	wm = (uint32_t)acked_of(cli) + 32768;
	assert_int_equal(xiw_sockops_arm(cli, wm), 0);
	assert_int_equal(write(cli, buf, 16384), 16384);
	assert_int_equal(recv(srv, buf, 16384, MSG_WAITALL), 16384);
	drain(&s, 200);
	assert_int_equal(s.watermark, 0);
	assert_int_equal(write(cli, buf, 16384), 16384);
	assert_int_equal(recv(srv, buf, 16384, MSG_WAITALL), 16384);
	drain(&s, 500);
	assert_int_equal(s.watermark, 1);
	assert_int_equal(s.cookie, 0xfeedULL);
	assert_true((int32_t)((uint32_t)s.bytes_acked - wm) >= 0);
	assert_int_equal(s.bytes_acked, acked_of(cli));
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	assert_true(st.acks >= 1);
	assert_int_equal(st.events, 1);

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
	/* the program made an unclaimed entry at connection setup */
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	assert_int_equal(st.owner, 0);
	assert_int_equal(xiw_sockops_arm(cli, 1), -ENOENT);
	assert_int_equal(write(cli, buf, sizeof(buf)), (int)sizeof(buf));
	assert_int_equal(recv(srv, buf, sizeof(buf), MSG_WAITALL), (int)sizeof(buf));
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	assert_int_equal(st.acks, 0);
	close(cli);
	close(srv);
	drain(&s, 300);
	assert_int_equal(s.n, 0);
}

/*
 * A socket without the program's entry was connected before any program
 * was attached and never gets a callback: registering it says so, so the
 * engine polls it. (Simulated by deleting the entry.)
 */
static void test_unhooked_refused(void **state)
{
	int cli, srv, map;

	(void)state;
	tcp_pair(&cli, &srv);
	map = bpf_obj_get(XIW_BPF_PIN_SK_ACK);
	if (map < 0) {	/* no bpffs: nothing shared to reach the map by */
		close(cli);
		close(srv);
		skip();
	}
	assert_int_equal(bpf_map_delete_elem(map, &cli), 0);
	assert_int_equal(xiw_sockops_register(cli, 1), -ENOENT);
	assert_int_equal(xiw_sockops_register(srv, 2), 0);
	xiw_sockops_unregister(srv);
	assert_int_equal(xiw_sockops_arm(srv, 1), -ENOENT);
	assert_int_equal(xiw_sockops_register(srv, 3), 0);
	close(map);
	close(cli);
	close(srv);
}

/* the kernel's socket cookie: the listing's key */
static uint64_t cookie_of(int fd)
{
	uint64_t ck = 0;
	socklen_t len = sizeof(ck);

	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_COOKIE, &ck, &len), 0);
	return ck;
}

/* the socket's entry in the bpftool listing */
static int view_get(int view, int fd, struct xiw_sk_ack *st)
{
	uint64_t ck = cookie_of(fd);

	return bpf_map_lookup_elem(view, &ck, st) ? -errno : 0;
}

/* one round trip of @n bytes from @cli to @srv */
static void round_trip(int cli, int srv, size_t n)
{
	char buf[4096] = { 0 };

	assert_true(n <= sizeof(buf));
	assert_int_equal(write(cli, buf, n), (int)n);
	assert_int_equal(recv(srv, buf, n, MSG_WAITALL), (int)n);
}

/*
 * The listing (xiw_sk_view2) follows registration: register adds the
 * socket, unregister deletes it, and the program only refreshes entries
 * that exist (at each event), so an event of a still-claimed socket whose
 * entry was deleted (an unregister racing it) does not bring it back.
 */
static void test_view_follows_registration(void **state)
{
	struct seen s = { 0 };
	struct xiw_sk_ack st;
	int cli, srv, view;
	uint64_t ck;

	(void)state;
	view = bpf_obj_get(XIW_BPF_PIN_SK_VIEW);
	if (view < 0)	/* no bpffs: nothing shared to reach the map by */
		skip();
	tcp_pair(&cli, &srv);
	assert_int_equal(view_get(view, cli, &st), -ENOENT);
	assert_int_equal(xiw_sockops_register(cli, 0x1157ULL), 0);
	assert_int_equal(view_get(view, cli, &st), 0);
	assert_int_equal(st.owner, (uint32_t)getpid());
	assert_int_equal(st.cookie, 0x1157ULL);
	round_trip(cli, srv, 1000);
	xiw_sockops_unregister(cli);
	assert_int_equal(view_get(view, cli, &st), -ENOENT);

	/* claimed again, its entry deleted behind the engine's back: the
	 * watermark event (which refreshes the listing) must not re-add it */
	assert_int_equal(xiw_sockops_register(cli, 0x1158ULL), 0);
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	assert_int_equal(st.owner, (uint32_t)getpid());
	assert_int_equal(view_get(view, cli, &st), 0);
	ck = cookie_of(cli);
	assert_int_equal(bpf_map_delete_elem(view, &ck), 0);
	assert_int_equal(xiw_sockops_arm(cli, (uint32_t)acked_of(cli) + 6000), 0);
	for (int i = 0; i < 4; i++)
		round_trip(cli, srv, 3000);
	drain(&s, 500);
	assert_int_equal(s.watermark, 1);	/* the refresh did run */
	assert_int_equal(view_get(view, cli, &st), -ENOENT);
	xiw_sockops_unregister(cli);
	close(view);
	close(cli);
	close(srv);
}

static void test_watermark_wraps(void **state)
{
	struct seen s = { 0 };
	char buf[8192] = { 0 };
	uint32_t now;
	int cli, srv;

	(void)state;
	tcp_pair(&cli, &srv);
	assert_int_equal(xiw_sockops_register(cli, 7), 0);
	now = (uint32_t)acked_of(cli);
	/* a watermark "behind" the count modulo 2^32 fires on the next ACK,
	 * one 2^31 ahead does not */
	assert_int_equal(xiw_sockops_arm(cli, now + 0x80000000u), 0);
	assert_int_equal(write(cli, buf, 100), 100);
	assert_int_equal(recv(srv, buf, 100, MSG_WAITALL), 100);
	drain(&s, 200);
	assert_int_equal(s.watermark, 0);
	assert_int_equal(xiw_sockops_arm(cli, now - 10), 0);
	assert_int_equal(write(cli, buf, 100), 100);
	assert_int_equal(recv(srv, buf, 100, MSG_WAITALL), 100);
	drain(&s, 500);
	assert_int_equal(s.watermark, 1);
	xiw_sockops_unregister(cli);
	close(cli);
	close(srv);
}

/*
 * The mark table (XIW_MARK_WANT): a send call is marked only when its end
 * reaches the wanted position, the boundary included. The program's
 * record of the last marked position moves exactly then, which also
 * checks that its end-of-call position (bytes_acked + write_seq -
 * snd_una) is the engine's (tcpi_bytes_acked + what it wrote since).
 */
static void test_marks_only_wanted(void **state)
{
	const uint64_t ck = 0x3a5ULL;
	uint32_t base, want;
	uint64_t *slot;
	int cli, srv;

	(void)state;
	tcp_pair(&cli, &srv);
	assert_int_equal(xiw_sockops_register(cli, ck), 0);
	slot = xiw_sockops_mark_slot(ck);
	assert_non_null(slot);
	base = (uint32_t)acked_of(cli);	/* nothing written yet */
	want = base + 2001;
	__atomic_store_n(slot, XIW_MARK_WANT(ck, want), __ATOMIC_RELAXED);
	round_trip(cli, srv, 2000);	/* ends one byte short */
	assert_int_not_equal(xiw_sockops_mark_done(ck), want);
	round_trip(cli, srv, 1);	/* ends exactly there */
	assert_int_equal(xiw_sockops_mark_done(ck), want);

	/* the next WR ends inside a later call of 3000 bytes */
	want = base + 2001 + 1000 + 1500;
	__atomic_store_n(slot, XIW_MARK_WANT(ck, want), __ATOMIC_RELAXED);
	round_trip(cli, srv, 1000);
	assert_int_equal(xiw_sockops_mark_done(ck), base + 2001);
	round_trip(cli, srv, 3000);
	assert_int_equal(xiw_sockops_mark_done(ck), want);
	xiw_sockops_unregister(cli);
	close(cli);
	close(srv);
}

/*
 * The callbacks switch (XIW_SO_ACK_CALLBACKS): off, the socket's ACKs run
 * no callback (its count stays), an armed watermark is dropped and a
 * wanted send call is not marked; on again, a watermark fires. Sockets
 * this process did not register, and other options, are left to the
 * kernel.
 */
static void test_callbacks_switch(void **state)
{
	const uint64_t ck = 0x5a17cULL;
	struct seen s = { 0 };
	struct xiw_sk_ack st;
	uint64_t acks;
	uint32_t want;
	int cli, srv, one = 1;

	(void)state;
	tcp_pair(&cli, &srv);
	assert_int_equal(xiw_sockops_register(cli, ck), 0);
	round_trip(cli, srv, 1000);
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	assert_true(st.acks >= 1);	/* on from the start */

	assert_int_equal(xiw_sockops_arm(cli, (uint32_t)acked_of(cli) + 3000), 0);
	assert_int_equal(xiw_sockops_callbacks(cli, false), 0);
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	assert_int_equal(st.armed, 0);
	acks = st.acks;
	want = (uint32_t)acked_of(cli) + 1000;
	__atomic_store_n(xiw_sockops_mark_slot(ck), XIW_MARK_WANT(ck, want),
			 __ATOMIC_RELAXED);
	assert_int_equal(xiw_sockops_arm(cli, want), 0);
	for (int i = 0; i < 4; i++)
		round_trip(cli, srv, 1000);
	drain(&s, 200);
	assert_int_equal(s.watermark, 0);
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	assert_int_equal(st.acks, acks);
	assert_int_not_equal(xiw_sockops_mark_done(ck), want);

	assert_int_equal(xiw_sockops_callbacks(cli, true), 0);
	assert_int_equal(xiw_sockops_arm(cli, (uint32_t)acked_of(cli) + 1000), 0);
	round_trip(cli, srv, 1000);
	drain(&s, 500);
	assert_int_equal(s.watermark, 1);
	assert_int_equal(s.cookie, ck);
	assert_int_equal(xiw_sockops_state(cli, &st), 0);
	assert_true(st.acks > acks);

	assert_int_equal(xiw_sockops_callbacks(srv, false), -ENOPROTOOPT);
	assert_int_equal(setsockopt(cli, IPPROTO_TCP, TCP_NODELAY, &one,
				    sizeof(one)), 0);
	xiw_sockops_unregister(cli);
	assert_int_equal(xiw_sockops_callbacks(cli, false), -ENOPROTOOPT);
	close(cli);
	close(srv);
}

/* --child: a second process with its own program instance and ring:
 * its own socket's watermark must reach it. Exit 0 on success. */
static int child_main(void)
{
	struct pollfd p;
	struct seen s = { 0 };
	char buf[256] = { 0 };
	int cli, srv;

	if (xiw_sockops_load())
		return 2;
	tcp_pair(&cli, &srv);
	if (xiw_sockops_register(cli, 0xc417dULL) ||
	    xiw_sockops_arm(cli, (uint32_t)acked_of(cli) + sizeof(buf)))
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
		cmocka_unit_test(test_unhooked_refused),
		cmocka_unit_test(test_watermark_wraps),
		cmocka_unit_test(test_view_follows_registration),
		cmocka_unit_test(test_marks_only_wanted),
		cmocka_unit_test(test_callbacks_switch),
		cmocka_unit_test(test_owner_isolation),
	};

	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_main();

	return cmocka_run_group_tests_name("bpf_sockops", tests, setup, NULL);
}
