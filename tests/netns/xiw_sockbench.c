// SPDX-License-Identifier: MIT
/*
 * xiw_sockbench - one TCP stream with a given mix of write sizes, for the
 * sockets-over-RDMA threshold rows of scripts/bench_sockets.sh. Plain BSD
 * sockets: run it under `xiwrun --sockets` (or not, for kernel TCP).
 *
 *   xiw_sockbench server PORT RBUF
 *       accept one connection, read it with RBUF-byte reads to its end,
 *       print "server bytes N", close.
 *   xiw_sockbench client HOST PORT SECONDS SIZE[,SIZE...]
 *       write for SECONDS, cycling through the sizes (each write complete),
 *       shut down the write side, wait for the server's close, print
 *       "client bytes N seconds S gbps G" (time to the server's close).
 * The payload is a pattern the server checks (stream offset based): a
 * mismatch prints "server DATA MISMATCH at N" and exits 1.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define MAXW (4u << 20)

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define PERIOD 65521u	/* the pattern repeats every PERIOD bytes (prime) */

static inline uint8_t pat(uint64_t o)
{
	uint32_t r = (uint32_t)(o % PERIOD);

	return (uint8_t)(r * 7 + (r >> 8));
}

static int server(int port, size_t rbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), c;
	uint8_t *b = malloc(rbuf);
	uint64_t total = 0;
	ssize_t n;

	if (l < 0 || !b)
		return 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1)) {
		perror("server: bind/listen");
		return 1;
	}
	c = accept(l, NULL, NULL);
	if (c < 0) {
		perror("server: accept");
		return 1;
	}
	while ((n = read(c, b, rbuf)) > 0) {
		/* check a few bytes of every read: cheap, catches misplacement */
		for (ssize_t i = 0; i < n; i += (i + 4099 < n ? 4099 : (n - i > 1 ? n - i - 1 : 1)))
			if (b[i] != pat(total + (uint64_t)i)) {
				printf("server DATA MISMATCH at %llu\n",
				       (unsigned long long)(total + (uint64_t)i));
				return 1;
			}
		total += (uint64_t)n;
	}
	if (n < 0) {
		perror("server: read");
		return 1;
	}
	printf("server bytes %llu\n", (unsigned long long)total);
	close(c);
	close(l);
	return 0;
}

static int client(const char *host, int port, double secs, const char *spec)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	size_t sizes[64], ns = 0, k = 0;
	char *s = strdup(spec), *tok, *save = NULL;
	uint8_t *b = malloc(MAXW + PERIOD), x;
	uint64_t total = 0;
	double t0, t1;
	int fd;

	for (tok = strtok_r(s, ",", &save); tok && ns < 64; tok = strtok_r(NULL, ",", &save)) {
		sizes[ns] = strtoul(tok, NULL, 0);
		if (!sizes[ns] || sizes[ns] > MAXW) {
			fprintf(stderr, "client: bad size %s\n", tok);
			return 2;
		}
		ns++;
	}
	if (!ns || !b || inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return 2;
	for (size_t i = 0; i < MAXW + PERIOD; i++)
		b[i] = pat(i);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("client: connect");
		return 1;
	}
	t0 = now_s();
	do {
		size_t len = sizes[k++ % ns], done = 0;

		while (done < len) {
			/* stream offset o is b[o % PERIOD] */
			ssize_t w = write(fd, b + (total + done) % PERIOD, len - done);

			if (w < 0) {
				if (errno == EINTR)
					continue;
				perror("client: write");
				return 1;
			}
			done += (size_t)w;
		}
		total += len;
	} while (now_s() - t0 < secs);
	shutdown(fd, SHUT_WR);
	while (read(fd, &x, 1) > 0)
		;
	t1 = now_s();
	printf("client bytes %llu seconds %.3f gbps %.3f\n", (unsigned long long)total,
	       t1 - t0, (double)total * 8 / (t1 - t0) / 1e9);
	close(fd);
	free(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]), strtoul(argv[3], NULL, 0));
	if (argc == 6 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), atof(argv[4]), argv[5]);
	fprintf(stderr, "usage: %s server PORT RBUF | client HOST PORT SECONDS SIZE[,SIZE...]\n",
		argv[0]);
	return 2;
}
