// SPDX-License-Identifier: MIT
/*
 * xiw_stream: a TCP byte stream through xiwarp's transport seam (llp.h),
 * both directions at once, every byte verified. With XIW_TRANSPORT=xsk
 * the connection runs on utcp over AF_XDP, with XIW_TRANSPORT=ksock (the
 * default) on a kernel TCP socket: so one side of each kind tests utcp
 * against Linux TCP (tests/netns/xsk_stream.sh).
 *
 *   xiw_stream -l PORT [-a ADDR] [-n BYTES] [-t SECONDS] [-q]
 *   xiw_stream -c ADDR -p PORT [-n BYTES] [-t SECONDS] [-q]
 *
 * Each side sends -n bytes (default 64 MiB) of a pattern that depends on
 * the stream offset and the direction, then FIN; it checks every byte it
 * receives against the peer's pattern and wants exactly -n bytes then
 * EOF. Prints "sent N received N verified MB/s X" and exits 0 when all
 * holds; 1 on a mismatch (first bad offset printed), a reset, a timeout.
 * -x EXPECT: the connection must fail with this errno name instead
 * (ECONNRESET, ETIMEDOUT): for a peer that resets or vanishes.
 * -z: send with xiw_llp_send_zc() from buffers of xiw_alloc() (the xsk
 * umem arena): the transport references them, frames them in place and
 * releases them once acknowledged; a buffer is refilled only then.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/uio.h>
#include "xiwarp/xiwarp.h"
#include "xiw_conn.h"
#include "xiw_progress.h"
#include "llp.h"

#define CHUNK (256 * 1024)
#define ZC_BUFS 32		/* 8 MiB of arena: more than utcp keeps unacked */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct xiw_llp *l;
	bool connected, done_tx, eof, failed;
	int err;
	uint64_t total, rtotal, sent, rcvd, bad_at;
	bool bad;
	bool server;
	bool quiet;
	bool zc, zc_wait;
	uint8_t *zbuf[ZC_BUFS];
	uint32_t zid[ZC_BUFS];
	bool zused[ZC_BUFS];
	uint64_t zcalls;
	uint8_t buf[CHUNK];
	uint8_t rbuf[CHUNK];
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	.bad_at = UINT64_MAX };

/* Byte at stream offset @off of direction @dir (0: client->server). */
static inline uint8_t pat(uint64_t off, int dir)
{
	uint64_t x = (off >> 3) * 0x9e3779b97f4a7c15ull + (uint64_t)dir * 0x632be59bd9b4e019ull;

	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (off & 7)));
}

static void wake(void)
{
	pthread_cond_broadcast(&S.cond);
}

static void fill_pat(uint8_t *b, uint64_t off, uint32_t n, int dir)
{
	for (uint32_t i = 0; i < n; i++)
		b[i] = pat(off + i, dir);
}

/* -z: one chunk from buffer @b by reference. Return: as xiw_llp_send. */
static ssize_t send_zc_chunk(uint32_t n)
{
	int b = (int)(S.zcalls % ZC_BUFS);
	struct iovec v = { S.zbuf[b], n };
	bool zc = false;
	uint32_t id = 0;
	ssize_t r;

	if (S.zused[b] && !xiw_llp_zc_released(S.l, S.zid[b])) {
		S.zc_wait = true;	/* the main thread retries soon */
		wake();
		return -EAGAIN;
	}
	fill_pat(S.zbuf[b], S.sent, n, S.server ? 1 : 0);
	r = xiw_llp_send_zc(S.l, &v, 1, &id, &zc);
	if (r > 0 && zc) {
		S.zused[b] = true;
		S.zid[b] = id;
		S.zcalls++;
	}
	return r;
}

/* Send as much as the transport takes; FIN after the last byte. */
static void pump_tx(void)
{
	int dir = S.server ? 1 : 0;

	S.zc_wait = false;
	while (S.sent < S.total) {
		uint32_t n = S.total - S.sent < CHUNK ? (uint32_t)(S.total - S.sent) : CHUNK;
		struct iovec v = { S.buf, n };
		ssize_t r;

		if (S.zc) {
			r = send_zc_chunk(n);
			if (S.zc_wait)
				return;
		} else {
			fill_pat(S.buf, S.sent, n, dir);
			r = xiw_llp_send(S.l, &v, 1, false);
		}
		if (r == -EAGAIN) {
			xiw_llp_want_write(S.l, true);
			return;
		}
		if (r < 0) {
			S.failed = true;
			S.err = (int)r;
			wake();
			return;
		}
		S.sent += (uint64_t)r;
	}
	if (!S.done_tx) {
		S.done_tx = true;
		xiw_llp_shutdown(S.l);
		wake();
	}
}

static void retry_tx(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&S.lock);
	if (S.zc_wait && S.l)
		pump_tx();
	pthread_mutex_unlock(&S.lock);
}

static void on_writable(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&S.lock);
	if (!S.connected) {
		S.connected = true;
		wake();
	}
	pump_tx();
	pthread_mutex_unlock(&S.lock);
}

static void on_readable(void *arg)
{
	int dir = S.server ? 0 : 1;

	(void)arg;
	pthread_mutex_lock(&S.lock);
	for (;;) {
		struct iovec v = { S.rbuf, sizeof(S.rbuf) };
		ssize_t r = xiw_llp_recv(S.l, &v, 1);

		if (r == -EAGAIN)
			break;
		if (r == 0) {
			S.eof = true;
			wake();
			break;
		}
		if (r < 0) {
			S.failed = true;
			S.err = (int)r;
			wake();
			break;
		}
		for (ssize_t i = 0; i < r && !S.bad; i++)
			if (S.rbuf[i] != pat(S.rcvd + (uint64_t)i, dir)) {
				S.bad = true;
				S.bad_at = S.rcvd + (uint64_t)i;
				wake();
			}
		S.rcvd += (uint64_t)r;
	}
	pthread_mutex_unlock(&S.lock);
}

static void on_closed(void *arg, int err)
{
	(void)arg;
	pthread_mutex_lock(&S.lock);
	S.failed = true;
	S.err = err;
	wake();
	pthread_mutex_unlock(&S.lock);
}

static const struct xiw_llp_cb cbs = {
	.readable = on_readable, .writable = on_writable, .closed = on_closed,
};

static void on_accept(void *arg, struct xiw_llp *l)
{
	(void)arg;
	pthread_mutex_lock(&S.lock);
	if (S.l) {	/* one connection only */
		pthread_mutex_unlock(&S.lock);
		xiw_llp_close(l);
		return;
	}
	S.l = l;
	S.connected = true;
	xiw_llp_set_owner(l, &cbs, NULL);
	pump_tx();
	wake();
	pthread_mutex_unlock(&S.lock);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xiw_stream -l PORT [-a ADDR] [options]   (server)\n"
		"       xiw_stream -c ADDR -p PORT [options]      (client)\n"
		"A TCP stream through xiwarp's transport (XIW_TRANSPORT=ksock|xsk),\n"
		"both directions, every byte checked.\n"
		"  -n BYTES    bytes this side sends (default 67108864; k/m/g suffix)\n"
		"  -r BYTES    bytes this side must receive (default: -n)\n"
		"  -t SECONDS  give up after this long (default 120)\n"
		"  -x ERRNO    expect the connection to fail with ECONNRESET or ETIMEDOUT\n"
		"  -z          send zero-copy from xiw_alloc() buffers (xiw_llp_send_zc)\n"
		"  -q          print only the result line\n"
		"  -h          this help\n"
		"Exit 0: everything sent, received, verified, EOF seen (or -x matched).\n");
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	default: break;
	}
	return v;
}

static int expect_errno(const char *name)
{
	if (!strcmp(name, "ECONNRESET"))
		return -ECONNRESET;
	if (!strcmp(name, "ETIMEDOUT"))
		return -ETIMEDOUT;
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	const char *addr = NULL;
	struct xiw_llp_listener *ls = NULL;
	int port = 0, opt, expect = 0, rc = 1;
	bool rset = false;
	double tmo = 120, t0, t;
	struct timespec dl;

	S.total = 64ull << 20;
	while ((opt = getopt(argc, argv, "l:c:a:p:n:r:t:x:qzh")) != -1) {
		switch (opt) {
		case 'l': S.server = true; port = atoi(optarg); break;
		case 'c': addr = optarg; break;
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': S.total = parse_size(optarg); break;
		case 'r': S.rtotal = parse_size(optarg); rset = true; break;
		case 't': tmo = atof(optarg); break;
		case 'x': expect = expect_errno(optarg);
			if (!expect) {
				fprintf(stderr, "xiw_stream: -x takes ECONNRESET or ETIMEDOUT\n");
				return 2;
			}
			break;
		case 'q': S.quiet = true; break;
		case 'z': S.zc = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!rset)
		S.rtotal = S.total;
	for (int i = 0; S.zc && i < ZC_BUFS; i++) {
		S.zbuf[i] = xiw_alloc(CHUNK);
		if (!S.zbuf[i]) {
			fprintf(stderr, "xiw_stream: xiw_alloc: %s\n", strerror(errno));
			return 1;
		}
	}
	if (!port || (!S.server && !addr)) {
		usage(stderr);
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	if (addr && inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "xiw_stream: '%s' is not an IPv4 address\n", addr);
		return 2;
	}
	t0 = now_s();
	if (S.server) {
		int err = xiw_llp_listen((struct sockaddr *)&sa, 1, on_accept, NULL,
					 &ls, NULL);

		if (err) {
			fprintf(stderr, "xiw_stream: listen on port %d: %s\n", port, strerror(-err));
			return 1;
		}
		if (!S.quiet)
			printf("listening on port %d\n", port);
		fflush(stdout);
	} else {
		int err;

		/* S.l is written before the first upcall can run */
		pthread_mutex_lock(&S.lock);
		err = xiw_llp_connect(NULL, (struct sockaddr *)&sa, &cbs, NULL, &S.l);
		pthread_mutex_unlock(&S.lock);
		if (err) {
			fprintf(stderr, "xiw_stream: connect to %s:%d: %s\n", addr, port, strerror(-err));
			return 1;
		}
	}
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)tmo;
	pthread_mutex_lock(&S.lock);
	for (;;) {
		bool done = S.failed || S.bad || (S.done_tx && S.eof);

		if (done)
			break;
		if (S.zc_wait && now_s() - t0 < tmo) {	/* a buffer is still
							 * referenced: look again */
			struct timespec ms;

			clock_gettime(CLOCK_REALTIME, &ms);
			ms.tv_nsec += 1000000;
			if (ms.tv_nsec >= 1000000000) {
				ms.tv_sec++;
				ms.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&S.cond, &S.lock, &ms);
			pthread_mutex_unlock(&S.lock);
			xiw_progress_sync(retry_tx, NULL);
			pthread_mutex_lock(&S.lock);
			continue;
		}
		if (pthread_cond_timedwait(&S.cond, &S.lock, &dl) == ETIMEDOUT) {
			fprintf(stderr, "xiw_stream: timed out after %.0f s (sent %llu, received %llu)\n",
				tmo, (unsigned long long)S.sent, (unsigned long long)S.rcvd);
			goto out;
		}
	}
	t = now_s() - t0;
	if (S.bad)
		fprintf(stderr, "xiw_stream: MISMATCH at received offset %llu\n",
			(unsigned long long)S.bad_at);
	else if (S.failed && expect && S.err == expect)
		rc = 0;
	else if (S.failed)
		fprintf(stderr, "xiw_stream: connection failed: %s (sent %llu, received %llu)\n",
			strerror(-S.err), (unsigned long long)S.sent,
			(unsigned long long)S.rcvd);
	else if (expect)
		fprintf(stderr, "xiw_stream: expected the connection to fail, it did not\n");
	else if (S.rcvd != S.rtotal)
		fprintf(stderr, "xiw_stream: received %llu bytes, want %llu\n",
			(unsigned long long)S.rcvd, (unsigned long long)S.rtotal);
	else
		rc = 0;
	printf("%s sent %llu received %llu %s MB/s %.1f err %s\n",
	       S.server ? "server" : "client", (unsigned long long)S.sent,
	       (unsigned long long)S.rcvd, S.bad ? "MISMATCH" : "verified",
	       (double)(S.sent + S.rcvd) / t / 1e6,
	       S.failed ? strerror(-S.err) : "none");
out:
	pthread_mutex_unlock(&S.lock);
	if (S.l)
		xiw_llp_close(S.l);
	xiw_llp_listener_close(ls);
	/* the transport may still reference them until the exit linger */
	(void)S.zbuf;
	return rc;
}
