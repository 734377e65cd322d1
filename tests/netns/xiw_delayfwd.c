// SPDX-License-Identifier: MIT
/*
 * xiw_delayfwd — a user-space "netem delay" for kernels without sch_netem
 * (or sch_fq for EDT): forwards every frame between two interfaces of a
 * middle namespace after DELAY_MS, in both directions, like a cable with
 * a fixed one-way latency. Used by tests/netns/tx_completion.sh.
 *
 *   xiw_delayfwd IF1 IF2 DELAY_MS
 *
 * AF_PACKET sockets with PACKET_VNET_HDR: a GSO super-frame or a frame
 * with a partial checksum keeps its virtio-net header, so sending it on
 * the other interface rebuilds the same skb (no offloads to turn off).
 * Runs until killed. Exit: 1 on setup errors.
 */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <sys/socket.h>

#define QCAP 65536
#define FRAME_MAX (65536 + 256)

struct pkt {
	uint64_t due_ns;
	size_t len;
	uint8_t *data;
};

struct queue {
	struct pkt q[QCAP];
	uint32_t head, tail;
};

static struct queue qs[2];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int open_if(const char *name)
{
	int one = 1, fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	struct sockaddr_ll sa = { .sll_family = AF_PACKET,
				  .sll_protocol = htons(ETH_P_ALL),
				  .sll_ifindex = (int)if_nametoindex(name) };

	if (fd < 0 || !sa.sll_ifindex ||
	    setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "xiw_delayfwd: %s: %s\n", name, strerror(errno));
		exit(1);
	}
	return fd;
}

/* Take one frame from @fd into queue @q (dropped when full, like a NIC).
 * Return: false when nothing was waiting. */
static int rx_one(int fd, struct queue *q, uint64_t delay_ns)
{
	uint8_t *buf = malloc(FRAME_MAX);
	ssize_t n;

	if (!buf)
		return 0;
	n = recv(fd, buf, FRAME_MAX, MSG_DONTWAIT);
	if (n <= 0 || q->head - q->tail >= QCAP) {
		free(buf);
		return n > 0;
	}
	q->q[q->head % QCAP] = (struct pkt){ now_ns() + delay_ns, (size_t)n, buf };
	q->head++;
	return 1;
}

/* Send every due frame of @q on @fd. Return: ns until the next is due. */
static int64_t tx_due(int fd, struct queue *q)
{
	while (q->tail != q->head) {
		struct pkt *p = &q->q[q->tail % QCAP];
		uint64_t t = now_ns();

		if (p->due_ns > t)
			return (int64_t)(p->due_ns - t);
		if (send(fd, p->data, p->len, 0) < 0 && errno != ENOBUFS)
			fprintf(stderr, "xiw_delayfwd: send: %s\n", strerror(errno));
		free(p->data);
		q->tail++;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct pollfd pf[2];
	uint64_t delay_ns;

	if (argc != 4) {
		fprintf(stderr, "usage: xiw_delayfwd IF1 IF2 DELAY_MS\n");
		return 2;
	}
	delay_ns = (uint64_t)atoi(argv[3]) * 1000000ull;
	pf[0] = (struct pollfd){ .fd = open_if(argv[1]), .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = open_if(argv[2]), .events = POLLIN };
	for (;;) {
		int64_t w0 = tx_due(pf[1].fd, &qs[0]), w1 = tx_due(pf[0].fd, &qs[1]);
		int64_t w = w0 < 0 ? w1 : (w1 < 0 || w0 < w1 ? w0 : w1);
		struct timespec ts = { (time_t)(w / 1000000000), (long)(w % 1000000000) };

		if (ppoll(pf, 2, w < 0 ? NULL : &ts, NULL) < 0 && errno != EINTR)
			return 1;
		for (int i = 0; i < 2; i++)
			if (pf[i].revents & POLLIN)
				for (int k = 0; k < 64 &&
				     rx_one(pf[i].fd, &qs[i], delay_ns); k++)
					;
	}
}
