// SPDX-License-Identifier: MIT
/*
 * xiw_delayfwd — a user-space "netem" for kernels without sch_netem
 * (or sch_fq for EDT): forwards every frame between two interfaces of a
 * middle namespace after DELAY_MS, in both directions, like a cable with
 * a fixed one-way latency (tests/netns/tx_completion.sh), and optionally
 * loses, reorders and duplicates frames at random
 * (tests/netns/xsk_stream.sh: utcp against kernel TCP).
 *
 *   xiw_delayfwd IF1 IF2 DELAY_MS [-l LOSS%] [-r REORDER%] [-d DUP%]
 *                [-R REORDER_US] [-s SEED]
 *
 * Impairments apply to IPv4 frames only (ARP and the rest pass intact),
 * each frame independently: lost with LOSS%, else held back REORDER_US
 * (default 300) extra with REORDER%, so later frames overtake it, and
 * sent twice with DUP%. SIGUSR1 toggles a black hole (every frame is
 * dropped: a peer that vanishes); counters go to stderr on SIGUSR2 and
 * at exit (SIGTERM).
 *
 * AF_PACKET sockets with PACKET_VNET_HDR: a GSO super-frame or a frame
 * with a partial checksum keeps its virtio-net header, so sending it on
 * the other interface rebuilds the same skb (no offloads to turn off).
 * Runs until killed. Exit: 1 on setup errors.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
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

/* frames held back for reordering: sent when due, out of FIFO order */
#define HCAP 4096
struct held {
	struct pkt p;
	int out;	/* fd to send on */
};
static struct held hq[HCAP];
static uint32_t nheld;

static struct {
	double loss, reorder, dup;	/* probabilities 0..1 */
	uint64_t reorder_ns;
	uint64_t seed;
	volatile sig_atomic_t blackhole, dump;
	uint64_t fwd, lost, reordered, duped, holed;
} imp = { .reorder_ns = 300000, .seed = 1 };

/* xorshift64*: reproducible with -s */
static double rnd(void)
{
	imp.seed ^= imp.seed >> 12;
	imp.seed ^= imp.seed << 25;
	imp.seed ^= imp.seed >> 27;
	return (double)((imp.seed * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

static void on_usr1(int sig)
{
	(void)sig;
	imp.blackhole = !imp.blackhole;
}

static void on_usr2(int sig)
{
	(void)sig;
	imp.dump = 1;
}

static void on_term(int sig)
{
	(void)sig;
	imp.dump = 2;
}

static void dump_counters(void)
{
	fprintf(stderr, "xiw_delayfwd: forwarded %llu lost %llu reordered %llu duplicated %llu black-holed %llu\n",
		(unsigned long long)imp.fwd, (unsigned long long)imp.lost,
		(unsigned long long)imp.reordered, (unsigned long long)imp.duped,
		(unsigned long long)imp.holed);
}

static int is_ipv4(const uint8_t *f, size_t len)
{
	/* after the virtio-net header */
	size_t o = sizeof(struct virtio_net_hdr);

	return len >= o + 14 && f[o + 12] == 0x08 && f[o + 13] == 0x00;
}

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
	if (imp.blackhole) {
		imp.holed++;
		free(buf);
		return 1;
	}
	if (is_ipv4(buf, (size_t)n)) {
		if (imp.loss > 0 && rnd() < imp.loss) {
			imp.lost++;
			free(buf);
			return 1;
		}
		if (imp.dup > 0 && rnd() < imp.dup &&
		    q->head - q->tail + 1 < QCAP) {
			uint8_t *copy = malloc((size_t)n);

			if (copy) {
				memcpy(copy, buf, (size_t)n);
				q->q[q->head % QCAP] = (struct pkt){ now_ns() + delay_ns,
								   (size_t)n, copy };
				q->head++;
				imp.duped++;
			}
		}
		if (imp.reorder > 0 && rnd() < imp.reorder && nheld < HCAP) {
			hq[nheld].p = (struct pkt){ now_ns() + delay_ns + imp.reorder_ns,
						    (size_t)n, buf };
			hq[nheld].out = q == &qs[0] ? 1 : 0;	/* index into pf */
			nheld++;
			imp.reordered++;
			return 1;
		}
	}
	q->q[q->head % QCAP] = (struct pkt){ now_ns() + delay_ns, (size_t)n, buf };
	q->head++;
	return 1;
}

/* Send held frames that are due. Return: ns until the next is due, -1. */
static int64_t held_due(const int *fds)
{
	int64_t next = -1;
	uint64_t t = now_ns();

	for (uint32_t i = 0; i < nheld;) {
		struct pkt *p = &hq[i].p;

		if (p->due_ns > t) {
			int64_t w = (int64_t)(p->due_ns - t);

			if (next < 0 || w < next)
				next = w;
			i++;
			continue;
		}
		if (send(fds[hq[i].out], p->data, p->len, 0) < 0 && errno != ENOBUFS)
			fprintf(stderr, "xiw_delayfwd: send: %s\n", strerror(errno));
		imp.fwd++;
		free(p->data);
		hq[i] = hq[--nheld];
	}
	return next;
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
		imp.fwd++;
		free(p->data);
		q->tail++;
	}
	return -1;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: xiw_delayfwd IF1 IF2 DELAY_MS [-l LOSS%%] [-r REORDER%%] [-d DUP%%]\n"
		"                    [-R REORDER_US] [-s SEED]\n"
		"Forward frames between IF1 and IF2 after DELAY_MS; IPv4 frames are\n"
		"lost / held back REORDER_US (default 300) / duplicated at random.\n"
		"SIGUSR1: toggle a black hole (drop everything). SIGUSR2: counters.\n");
	return 2;
}

static int64_t min_wait(int64_t a, int64_t b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

int main(int argc, char **argv)
{
	struct pollfd pf[2];
	sigset_t block, open_mask;
	uint64_t delay_ns;
	int fds[2], opt;

	if (argc < 4 || argv[1][0] == '-')
		return usage();
	delay_ns = (uint64_t)atoi(argv[3]) * 1000000ull;
	optind = 4;
	while ((opt = getopt(argc, argv, "l:r:d:R:s:h")) != -1) {
		switch (opt) {
		case 'l': imp.loss = atof(optarg) / 100; break;
		case 'r': imp.reorder = atof(optarg) / 100; break;
		case 'd': imp.dup = atof(optarg) / 100; break;
		case 'R': imp.reorder_ns = (uint64_t)atoll(optarg) * 1000; break;
		case 's': imp.seed = (uint64_t)atoll(optarg) | 1; break;
		default: return usage();
		}
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGUSR2, on_usr2);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	/* signals are taken only inside ppoll(), so none is missed */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &open_mask);
	sigdelset(&open_mask, SIGUSR1);
	sigdelset(&open_mask, SIGUSR2);
	sigdelset(&open_mask, SIGTERM);
	sigdelset(&open_mask, SIGINT);
	pf[0] = (struct pollfd){ .fd = open_if(argv[1]), .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = open_if(argv[2]), .events = POLLIN };
	fds[0] = pf[0].fd;
	fds[1] = pf[1].fd;
	for (;;) {
		int64_t w0 = tx_due(pf[1].fd, &qs[0]), w1 = tx_due(pf[0].fd, &qs[1]);
		int64_t w = min_wait(min_wait(w0, w1), held_due(fds));
		struct timespec ts = { (time_t)(w / 1000000000), (long)(w % 1000000000) };

		if (imp.dump) {
			dump_counters();
			if (imp.dump == 2)
				return 0;
			imp.dump = 0;
		}
		if (ppoll(pf, 2, w < 0 ? NULL : &ts, &open_mask) < 0 && errno != EINTR)
			return 1;
		for (int i = 0; i < 2; i++)
			if (pf[i].revents & POLLIN)
				for (int k = 0; k < 64 &&
				     rx_one(pf[i].fd, &qs[i], delay_ns); k++)
					;
	}
}
