// SPDX-License-Identifier: MIT
/*
 * xiw_socktest - TCP socket semantics, checked step by step between a
 * server and a client. Plain BSD sockets only: the same binary must pass
 * over kernel TCP and under `xiwrun --sockets` (libxiwsock.so), which is
 * how tests/netns/sockets_semantics.sh uses it.
 *
 *   xiw_socktest server PORT
 *   xiw_socktest client HOST PORT
 *
 * Checks: read/write, MSG_PEEK, MSG_DONTWAIT, O_NONBLOCK (fcntl, FIONBIO),
 * FIONREAD, readv/writev, sendfile, SO_RCVTIMEO/SO_SNDTIMEO, TCP_NODELAY,
 * TCP_INFO, select/poll/ppoll, epoll (level, edge, one-shot, EPOLLOUT),
 * dup/dup2, shutdown(SHUT_WR) half close, accept4 flags, getsockname/
 * getpeername, a 24 MB transfer with mixed write sizes (data checked),
 * end of stream; forkserver/forkclient: fork after accept (a child per
 * connection echoes 1 MB). Exit 0 if every check passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

static const char *role = "?";
static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s: FAIL %s:%d: ", role, __func__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno)); \
		failures++; \
	} \
} while (0)

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", role, what, strerror(errno));
	exit(2);
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t r = write(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("write");
		p += r;
		n -= (size_t)r;
	}
}

static void read_all(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (!r)
				errno = ECONNRESET;
			die("read");
		}
		p += r;
		n -= (size_t)r;
	}
}

/*
 * Lock step at step @n. The client writes its byte only after the
 * server's arrived, so whatever the server checks before a step (an
 * empty socket) cannot be disturbed by the client's sync byte.
 */
static void sync_step(int fd, uint8_t n)
{
	uint8_t got;

	if (role[0] == 's') {
		write_all(fd, &n, 1);
		read_all(fd, &got, 1);
	} else {
		read_all(fd, &got, 1);
		write_all(fd, &n, 1);
	}
	if (got != n) {
		fprintf(stderr, "%s: out of step: %u vs %u\n", role, got, n);
		exit(2);
	}
}

static void set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

static int wait_in(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

/* ----------------------------------------------------------- the steps */

static void t_echo(int fd, int srv)
{
	char a[1000], b[1000];

	for (int i = 0; i < 1000; i++)
		a[i] = (char)(i * 7);
	if (srv) {
		read_all(fd, b, sizeof(b));
		write_all(fd, b, sizeof(b));
	} else {
		write_all(fd, a, sizeof(a));
		read_all(fd, b, sizeof(b));
		CHECK(!memcmp(a, b, sizeof(a)), "echo differs");
	}
}

static void t_peek_dontwait(int fd, int srv)
{
	char b[8] = { 0 };
	ssize_t n;

	if (!srv) {
		sync_step(fd, 10);
		write_all(fd, "hello", 5);
		sync_step(fd, 11);
		return;
	}
	n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	CHECK(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), "MSG_DONTWAIT on empty: %zd", n);
	sync_step(fd, 10);
	CHECK(wait_in(fd, 5000) == 1, "poll for the peeked bytes");
	n = recv(fd, b, 5, MSG_PEEK | MSG_WAITALL);
	CHECK(n == 5 && !memcmp(b, "hello", 5), "MSG_PEEK got %zd", n);
	memset(b, 0, sizeof(b));
	n = recv(fd, b, 5, MSG_WAITALL);
	CHECK(n == 5 && !memcmp(b, "hello", 5), "read after peek got %zd", n);
	sync_step(fd, 11);
}

static void t_nonblock(int fd, int srv)
{
	char b[200];
	int v = 1, avail = -1;
	ssize_t n;

	if (!srv) {
		sync_step(fd, 20);
		memset(b, 'n', sizeof(b));
		write_all(fd, b, 100);
		sync_step(fd, 21);
		return;
	}
	set_nonblock(fd, 1);
	CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK, "F_GETFL lacks O_NONBLOCK");
	n = read(fd, b, sizeof(b));
	CHECK(n < 0 && errno == EAGAIN, "non-blocking read on empty: %zd", n);
	set_nonblock(fd, 0);
	CHECK(!(fcntl(fd, F_GETFL) & O_NONBLOCK), "F_GETFL still O_NONBLOCK");
	CHECK(!ioctl(fd, FIONBIO, &v), "FIONBIO on");
	n = recv(fd, b, sizeof(b), 0);
	CHECK(n < 0 && errno == EAGAIN, "FIONBIO read on empty: %zd", n);
	v = 0;
	CHECK(!ioctl(fd, FIONBIO, &v), "FIONBIO off");
	sync_step(fd, 20);
	CHECK(wait_in(fd, 5000) == 1, "poll for 100 bytes");
	for (int i = 0; i < 100 && avail < 100; i++) {
		CHECK(!ioctl(fd, FIONREAD, &avail), "FIONREAD");
		if (avail < 100)
			usleep(10000);
	}
	CHECK(avail >= 100, "FIONREAD %d", avail);
	read_all(fd, b, 100);
	CHECK(b[0] == 'n' && b[99] == 'n', "FIONREAD bytes");
	sync_step(fd, 21);
}

static void t_vectors(int fd, int srv)
{
	char a[3][700], r1[1000], r2[1100];
	struct iovec w[3], r[2];
	size_t got = 0;

	for (int i = 0; i < 3; i++) {
		memset(a[i], 'a' + i, sizeof(a[i]));
		w[i].iov_base = a[i];
		w[i].iov_len = sizeof(a[i]);
	}
	if (!srv) {
		CHECK(writev(fd, w, 3) == 2100, "writev");
		return;
	}
	r[0].iov_base = r1;
	r[0].iov_len = sizeof(r1);
	r[1].iov_base = r2;
	r[1].iov_len = sizeof(r2);
	while (got < 2100) {
		ssize_t n = readv(fd, r, 2);

		CHECK(n > 0, "readv");
		if (n <= 0)
			return;
		got += (size_t)n;
		/* continue into what is left of the vectors */
		for (size_t k = (size_t)n; k; ) {
			size_t c = k < r[0].iov_len ? k : r[0].iov_len;

			r[0].iov_base = (char *)r[0].iov_base + c;
			r[0].iov_len -= c;
			k -= c;
			if (!r[0].iov_len) {
				r[0] = r[1];
				r[1].iov_len = 0;
			}
		}
	}
	CHECK(r1[0] == 'a' && r1[699] == 'a' && r1[700] == 'b' && r1[999] == 'b' &&
	      r2[0] == 'b' && r2[399] == 'b' && r2[400] == 'c' && r2[1099] == 'c',
	      "readv contents");
}

static void t_sendfile(int fd, int srv)
{
	size_t len = 300 * 1024;
	char *buf = malloc(len);

	if (!buf)
		die("malloc");
	if (!srv) {
		char path[] = "/tmp/xiw_socktest.XXXXXX";
		int f = mkstemp(path);
		off_t off = 0;
		size_t left = len;

		if (f < 0)
			die("mkstemp");
		unlink(path);
		for (size_t i = 0; i < len; i++)
			buf[i] = (char)(i % 251);
		write_all(f, buf, len);
		while (left) {
			ssize_t n = sendfile(fd, f, &off, left);

			CHECK(n > 0, "sendfile");
			if (n <= 0)
				break;
			left -= (size_t)n;
		}
		CHECK(off == (off_t)len, "sendfile offset %ld", (long)off);
		close(f);
	} else {
		read_all(fd, buf, len);
		for (size_t i = 0; i < len; i++) {
			if (buf[i] != (char)(i % 251)) {
				CHECK(0, "sendfile data at %zu", i);
				break;
			}
		}
	}
	free(buf);
}

static void t_options(int fd, int srv)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 }, got;
	socklen_t len = sizeof(got);
	struct tcp_info ti;
	int one = 1, v = 0;
	char b[4];
	int64_t t0;
	ssize_t n;

	CHECK(!setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), "TCP_NODELAY");
	len = sizeof(v);
	CHECK(!getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) && v, "TCP_NODELAY get");
	len = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	CHECK(!getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) && len >= 8 &&
	      ti.tcpi_state == TCP_ESTABLISHED, "TCP_INFO");
	len = sizeof(v);
	CHECK(!getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &len) && !v, "SO_ERROR");
	len = sizeof(v);
	CHECK(!getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) && v == SOCK_STREAM, "SO_TYPE");
	CHECK(!setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), "SO_SNDTIMEO");
	len = sizeof(got);
	CHECK(!getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &got, &len) &&
	      got.tv_sec == 0 && got.tv_usec >= 190000 && got.tv_usec <= 210000,
	      "SO_SNDTIMEO get %ld.%06ld", (long)got.tv_sec, (long)got.tv_usec);
	if (srv) {
		CHECK(!setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), "SO_RCVTIMEO");
		t0 = now_ms();
		n = recv(fd, b, sizeof(b), 0);
		t0 = now_ms() - t0;
		CHECK(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && t0 >= 100 && t0 < 5000,
		      "SO_RCVTIMEO: %zd after %ld ms", n, (long)t0);
		tv.tv_usec = 0;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	tv.tv_usec = 0;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	sync_step(fd, 30);
}

static void t_multiplex(int fd, int srv)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec ts = { .tv_sec = 5 };
	fd_set r, w;
	struct timeval tv = { 0, 0 };
	char b[16];

	if (!srv) {
		sync_step(fd, 40);
		write_all(fd, "m", 1);
		sync_step(fd, 41);
		return;
	}
	CHECK(poll(&p, 1, 0) == 0, "poll on empty");
	FD_ZERO(&r);
	FD_SET(fd, &r);
	CHECK(select(fd + 1, &r, NULL, NULL, &tv) == 0, "select on empty");
	p.events = POLLOUT;
	CHECK(poll(&p, 1, 1000) == 1 && (p.revents & POLLOUT), "POLLOUT");
	FD_ZERO(&w);
	FD_SET(fd, &w);
	tv.tv_sec = 1;
	CHECK(select(fd + 1, NULL, &w, NULL, &tv) == 1 && FD_ISSET(fd, &w), "select writable");
	sync_step(fd, 40);
	p.events = POLLIN;
	CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLIN), "poll readable");
	CHECK(ppoll(&p, 1, &ts, NULL) == 1 && (p.revents & POLLIN), "ppoll readable");
	FD_ZERO(&r);
	FD_SET(fd, &r);
	tv.tv_sec = 5;
	CHECK(select(fd + 1, &r, NULL, NULL, &tv) == 1 && FD_ISSET(fd, &r), "select readable");
	CHECK(read(fd, b, 1) == 1 && b[0] == 'm', "read after select");
	CHECK(poll(&p, 1, 0) == 0, "poll after draining");
	sync_step(fd, 41);
}

static void t_epoll(int fd, int srv)
{
	struct epoll_event ev, out[4];
	int ep, n;
	char b[64];

	if (!srv) {
		for (uint8_t s = 50; s < 56; s++) {
			sync_step(fd, s);
			if (s == 50 || s == 52 || s == 53 || s == 54)
				write_all(fd, "0123456789", 10);
		}
		return;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	ev.events = EPOLLIN;
	ev.data.u64 = 0x1234;
	CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), "EPOLL_CTL_ADD");
	CHECK(epoll_wait(ep, out, 4, 0) == 0, "epoll on empty");
	sync_step(fd, 50);	/* peer sends 10 */
	n = epoll_wait(ep, out, 4, 5000);
	CHECK(n == 1 && (out[0].events & EPOLLIN) && out[0].data.u64 == 0x1234, "LT first: %d", n);
	n = epoll_wait(ep, out, 4, 100);
	CHECK(n == 1 && (out[0].events & EPOLLIN), "LT again without reading: %d", n);
	read_all(fd, b, 10);
	CHECK(epoll_wait(ep, out, 4, 0) == 0, "LT after draining");
	sync_step(fd, 51);
	ev.events = EPOLLIN | EPOLLET;
	ev.data.u64 = 0x5678;
	CHECK(!epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev), "MOD to ET");
	sync_step(fd, 52);	/* peer sends 10 */
	n = epoll_wait(ep, out, 4, 5000);
	CHECK(n == 1 && (out[0].events & EPOLLIN) && out[0].data.u64 == 0x5678, "ET: %d", n);
	read_all(fd, b, 10);
	sync_step(fd, 53);	/* peer sends 10 more: a new edge */
	n = epoll_wait(ep, out, 4, 5000);
	CHECK(n == 1 && (out[0].events & EPOLLIN), "ET after new data: %d", n);
	read_all(fd, b, 10);
	ev.events = EPOLLIN | EPOLLONESHOT;
	CHECK(!epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev), "MOD to ONESHOT");
	sync_step(fd, 54);	/* peer sends 10 */
	n = epoll_wait(ep, out, 4, 5000);
	CHECK(n == 1, "ONESHOT first: %d", n);
	n = epoll_wait(ep, out, 4, 100);
	CHECK(n == 0, "ONESHOT fired once: %d", n);
	read_all(fd, b, 10);
	ev.events = EPOLLOUT;
	CHECK(!epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev), "MOD to OUT");
	n = epoll_wait(ep, out, 4, 1000);
	CHECK(n == 1 && (out[0].events & EPOLLOUT), "EPOLLOUT: %d", n);
	CHECK(!epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL), "EPOLL_CTL_DEL");
	sync_step(fd, 55);
	close(ep);
}

static void t_dup(int fd, int srv)
{
	char b[4];
	int d, d2;

	if (srv) {
		read_all(fd, b, 4);
		CHECK(!memcmp(b, "dup1", 4), "dup write");
		read_all(fd, b, 4);
		CHECK(!memcmp(b, "dup2", 4), "dup2 write");
		write_all(fd, "back", 4);
		return;
	}
	d = dup(fd);
	CHECK(d >= 0, "dup");
	write_all(d, "dup1", 4);
	d2 = dup2(d, 100);
	CHECK(d2 == 100, "dup2");
	close(d);
	write_all(d2, "dup2", 4);
	read_all(d2, b, 4);
	CHECK(!memcmp(b, "back", 4), "read via dup2");
	close(d2);
}

/* 24 MB in writes of varying size (zero copy and copy paths), checked */
static void t_bulk(int fd, int srv)
{
	static const size_t sizes[] = { 64, 4096, 65536, 1 << 20, 100, 300000, 2 << 20 };
	size_t total = 24u << 20, done = 0, k = 0, bsz = 2u << 20;
	uint8_t *buf = malloc(bsz);

	if (!buf)
		die("malloc");
	while (done < total) {
		size_t n = sizes[k++ % 7];

		if (n > total - done)
			n = total - done;
		if (!srv) {
			for (size_t i = 0; i < n; i++)
				buf[i] = (uint8_t)((done + i) * 131 >> 3);
			write_all(fd, buf, n);
			done += n;
		} else {
			ssize_t r = read(fd, buf, n);

			CHECK(r > 0, "bulk read");
			if (r <= 0)
				break;
			for (ssize_t i = 0; i < r; i++) {
				if (buf[i] != (uint8_t)((done + (size_t)i) * 131 >> 3)) {
					CHECK(0, "bulk data at %zu", done + (size_t)i);
					free(buf);
					return;
				}
			}
			done += (size_t)r;
		}
	}
	free(buf);
	sync_step(fd, 60);
}

static void t_names(int fd)
{
	struct sockaddr_in a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);

	CHECK(!getsockname(fd, (struct sockaddr *)&a, &la) && a.sin_family == AF_INET &&
	      a.sin_port, "getsockname");
	CHECK(!getpeername(fd, (struct sockaddr *)&b, &lb) && b.sin_family == AF_INET &&
	      b.sin_port, "getpeername");
}

static void t_halfclose(int fd, int srv)
{
	char b[8];

	if (!srv) {
		CHECK(!shutdown(fd, SHUT_WR), "shutdown SHUT_WR");
		read_all(fd, b, 5);
		CHECK(!memcmp(b, "after", 5), "read after our SHUT_WR");
		CHECK(read(fd, b, 8) == 0, "end of stream after peer's close");
	} else {
		CHECK(read(fd, b, 8) == 0, "end of stream after peer's SHUT_WR");
		write_all(fd, "after", 5);
	}
}

#define STEP(call) do { \
	if (getenv("XIW_SOCKTEST_TRACE")) \
		fprintf(stderr, "%s: %s\n", role, #call); \
	call; \
} while (0)

static void run_steps(int fd, int srv)
{
	STEP(t_echo(fd, srv));
	STEP(t_peek_dontwait(fd, srv));
	STEP(t_nonblock(fd, srv));
	STEP(t_vectors(fd, srv));
	STEP(t_sendfile(fd, srv));
	STEP(t_options(fd, srv));
	STEP(t_multiplex(fd, srv));
	STEP(t_epoll(fd, srv));
	STEP(t_dup(fd, srv));
	STEP(t_bulk(fd, srv));
	STEP(t_names(fd));
	STEP(t_halfclose(fd, srv));
}

/* ------------------------------------------------------------- roles */

static int listen_on(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int ls, one = 1;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0)
		die("socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 4))
		die("bind/listen");
	return ls;
}

static int server(int port)
{
	int ls = listen_on(port), fd, fl;

	fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		die("accept4");
	fl = fcntl(fd, F_GETFL);
	CHECK(fl & O_NONBLOCK, "accept4 SOCK_NONBLOCK");
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC, "accept4 SOCK_CLOEXEC");
	set_nonblock(fd, 0);
	run_steps(fd, 1);
	close(fd);
	close(ls);
	return failures;
}

/*
 * Fork after accept, the classic way: the parent only accepts; a child
 * per connection echoes 1 MB back and exits; the parent closes its copy.
 */
static int forkserver(int port, int n)
{
	int ls = listen_on(port), st;

	for (int i = 0; i < n; i++) {
		int fd = accept(ls, NULL, NULL);
		pid_t pid;

		if (fd < 0)
			die("accept");
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			size_t len = 1u << 20;
			char *b = malloc(len);

			close(ls);
			if (!b)
				die("malloc");
			read_all(fd, b, len);
			write_all(fd, b, len);
			close(fd);
			_exit(0);
		}
		close(fd);
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
		      "fork child %d", i);
	}
	close(ls);
	return failures;
}

static int forkclient(const char *host, int port, int n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	size_t len = 1u << 20;
	char *a = malloc(len), *b = malloc(len);

	if (!a || !b || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("setup");
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			die("connect");
		for (size_t k = 0; k < len; k++)
			a[k] = (char)(k * 13 + i);
		write_all(fd, a, len);
		read_all(fd, b, len);
		CHECK(!memcmp(a, b, len), "echo from forked child %d", i);
		close(fd);
	}
	free(a);
	free(b);
	return failures;
}

static int client(const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd;

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("inet_pton");
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect");
	run_steps(fd, 0);
	close(fd);
	return failures;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc == 3 && !strcmp(argv[1], "server")) {
		role = "server";
		return server(atoi(argv[2])) ? 1 : 0;
	}
	if (argc == 4 && !strcmp(argv[1], "client")) {
		role = "client";
		return client(argv[2], atoi(argv[3])) ? 1 : 0;
	}
	if (argc == 4 && !strcmp(argv[1], "forkserver")) {
		role = "forkserver";
		return forkserver(atoi(argv[2]), atoi(argv[3])) ? 1 : 0;
	}
	if (argc == 5 && !strcmp(argv[1], "forkclient")) {
		role = "forkclient";
		return forkclient(argv[2], atoi(argv[3]), atoi(argv[4])) ? 1 : 0;
	}
	fprintf(stderr, "usage: %s server PORT | client HOST PORT\n"
		"       %s forkserver PORT N | forkclient HOST PORT N\n"
		"TCP socket semantics, step by step; exit 0 if all checks pass.\n",
		argv[0], argv[0]);
	return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
}
