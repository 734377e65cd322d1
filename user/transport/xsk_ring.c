// SPDX-License-Identifier: MIT
/*
 * xsk: one AF_XDP socket with raw syscalls (Documentation/networking/
 * af_xdp.rst): the process umem (registered by the first socket, shared by
 * the others with XDP_SHARED_UMEM and their own fill/completion rings),
 * RX/TX/fill/completion rings mmapped, bound to one (interface, queue).
 *
 * Unaligned chunk mode (XDP_UMEM_UNALIGNED_CHUNK_FLAG): a TX descriptor
 * may point anywhere in the umem (payload descriptors straight into
 * application buffers, seed 002); an RX descriptor's address carries the
 * data offset in its top 16 bits (XSK_ADDR_MASK).
 *
 * Ring protocol: single producer and single consumer per ring; the
 * kernel is the other side. Indexes are free-running u32; entries are
 * published with a release store of the producer index and consumed
 * after an acquire load of it.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include "xiwarp/xiwarp.h"
#include "xsk.h"

uint32_t xsk_prod_free(const struct xsk_ring *r)
{
	uint32_t cons = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE);

	return r->size - (*r->producer - cons);
}

uint32_t xsk_prod_pos(const struct xsk_ring *r)
{
	return *r->producer;
}

uint64_t *xsk_addr_slot(struct xsk_ring *r, uint32_t idx)
{
	return (uint64_t *)r->desc + (idx & r->mask);
}

struct xdp_desc *xsk_desc_slot(struct xsk_ring *r, uint32_t idx)
{
	return (struct xdp_desc *)r->desc + (idx & r->mask);
}

void xsk_prod_submit(struct xsk_ring *r, uint32_t n)
{
	__atomic_store_n(r->producer, *r->producer + n, __ATOMIC_RELEASE);
}

uint32_t xsk_cons_avail(const struct xsk_ring *r, uint32_t *pos)
{
	uint32_t prod = __atomic_load_n(r->producer, __ATOMIC_ACQUIRE);

	*pos = *r->consumer;
	return prod - *pos;
}

void xsk_cons_release(struct xsk_ring *r, uint32_t n)
{
	__atomic_store_n(r->consumer, *r->consumer + n, __ATOMIC_RELEASE);
}

static int ring_map(int fd, struct xsk_ring *r, const struct xdp_ring_offset *o,
		    uint32_t size, size_t esz, off_t pgoff)
{
	size_t len = o->desc + size * esz;
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_POPULATE, fd, pgoff);

	if (m == MAP_FAILED)
		return -errno;
	r->map = m;
	r->map_len = len;
	r->producer = (uint32_t *)(m + o->producer);
	r->consumer = (uint32_t *)(m + o->consumer);
	r->flags = (uint32_t *)(m + o->flags);
	r->desc = m + o->desc;
	r->size = size;
	r->mask = size - 1;
	return 0;
}

static void ring_unmap(struct xsk_ring *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	memset(r, 0, sizeof(*r));
}

static int sockopt_int(int fd, int opt, uint32_t v)
{
	int iv = (int)v;

	return setsockopt(fd, SOL_XDP, opt, &iv, sizeof(iv)) ? -errno : 0;
}

/* Register the umem on @fd (first socket) or prepare to share it. */
static int umem_attach(int fd, struct xsk_umem *u, bool *shared)
{
	struct xdp_umem_reg reg = { 0 };

	*shared = u->reg_fd >= 0;
	if (*shared)
		return 0;
	reg.addr = (uintptr_t)u->base;
	reg.len = u->len;
	reg.chunk_size = XSK_FRAME;
	reg.headroom = 0;
	reg.flags = XDP_UMEM_UNALIGNED_CHUNK_FLAG;
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)))
		return -errno;
	return 0;
}

static int rings_setup(struct xsk_sock *s)
{
	struct xdp_mmap_offsets off;
	socklen_t len = sizeof(off);
	int err;

	if ((err = sockopt_int(s->fd, XDP_UMEM_FILL_RING, XSK_FILL_SZ)) ||
	    (err = sockopt_int(s->fd, XDP_UMEM_COMPLETION_RING, XSK_RING_SZ)) ||
	    (err = sockopt_int(s->fd, XDP_RX_RING, XSK_RING_SZ)) ||
	    (err = sockopt_int(s->fd, XDP_TX_RING, XSK_RING_SZ)))
		return err;
	if (getsockopt(s->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &len))
		return -errno;
	if ((err = ring_map(s->fd, &s->rx, &off.rx, XSK_RING_SZ,
			    sizeof(struct xdp_desc), XDP_PGOFF_RX_RING)) ||
	    (err = ring_map(s->fd, &s->tx, &off.tx, XSK_RING_SZ,
			    sizeof(struct xdp_desc), XDP_PGOFF_TX_RING)) ||
	    (err = ring_map(s->fd, &s->fill, &off.fr, XSK_FILL_SZ,
			    sizeof(uint64_t), XDP_UMEM_PGOFF_FILL_RING)) ||
	    (err = ring_map(s->fd, &s->comp, &off.cr, XSK_RING_SZ,
			    sizeof(uint64_t), XDP_UMEM_PGOFF_COMPLETION_RING)))
		return err;
	return 0;
}

static int sock_bind(struct xsk_sock *s, int ifindex, bool shared, int share_fd,
		     uint16_t flags)
{
	struct sockaddr_xdp sa = { 0 };

	sa.sxdp_family = AF_XDP;
	sa.sxdp_ifindex = (uint32_t)ifindex;
	sa.sxdp_queue_id = s->queue;
	sa.sxdp_flags = flags;
	if (shared) {
		sa.sxdp_flags |= XDP_SHARED_UMEM;
		sa.sxdp_shared_umem_fd = (uint32_t)share_fd;
	}
	/*
	 * EBUSY: another socket holds the queue. Right after the process
	 * that had it exits, the kernel still does (the pool is released by
	 * deferred work): a process started just after another one found
	 * the queue busy and silently used kernel TCP. Try again for up to
	 * XSK_BIND_WAIT_MS before giving up.
	 */
	for (int waited = 0;; waited += 10) {
		struct timespec ts = { 0, 10 * 1000000L };

		if (!bind(s->fd, (struct sockaddr *)&sa, sizeof(sa))) {
			if (waited)
				xiw_log(XIW_LOG_INFO, "xsk: ifindex %d queue %u was busy for %d ms (a socket being released)",
					ifindex, s->queue, waited);
			return 0;
		}
		if (errno != EBUSY || waited >= XSK_BIND_WAIT_MS)
			return -errno;
		nanosleep(&ts, NULL);
	}
}

/* One attempt with @sg. Return: 0 or -errno (*step names what failed). */
static int sock_try(struct xsk_sock *s, struct xsk_umem *u, int ifindex,
		    bool zc, bool sg, const char **step)
{
	bool shared;
	int err;

	s->fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		*step = "socket(AF_XDP)";
		return -errno;
	}
	*step = "XDP_UMEM_REG";
	err = umem_attach(s->fd, u, &shared);
	if (!err) {
		*step = "ring setup";
		err = rings_setup(s);
	}
	if (!err) {
		*step = "bind";
		err = sock_bind(s, ifindex, shared, u->reg_fd,
				(zc ? XDP_ZEROCOPY : XDP_COPY) | (sg ? XDP_USE_SG : 0));
	}
	if (err) {
		xsk_sock_close(s);
		return err;
	}
	s->sg = sg;
	s->zc = zc;
	if (!shared)
		u->reg_fd = s->fd;
	return 0;
}

int xsk_sock_open(struct xsk_sock *s, int ifindex, uint32_t queue, bool zc)
{
	const char *step = "umem";
	struct xsk_umem *u;
	int err;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->queue = queue;
	u = xsk_umem_get(&err);
	if (!u)
		return err;
	/* multi-buffer first (MTU > 3840, frames of GSO size in generic
	 * mode); kernels before 6.6 refuse XDP_USE_SG with EINVAL */
	err = sock_try(s, u, ifindex, zc, true, &step);
	if (err == -EINVAL || err == -EOPNOTSUPP) {
		s->queue = queue;
		err = sock_try(s, u, ifindex, zc, false, &step);
	}
	if (err)
		xiw_log(XIW_LOG_WARN, "xsk: AF_XDP socket on ifindex %d queue %u (%s): %s failed: %s",
			ifindex, queue, zc ? "zero-copy" : "copy", step, strerror(-err));
	return err;
}

/*
 * A TX-only socket on @rxs's queue: the RX socket's own TX ring (kept
 * for the fallback) then stays empty, so the progress thread's epoll on
 * it has nothing to transmit and never waits for the sender. In copy mode
 * xsk_poll() drives the TX ring of the socket it polls, under the same
 * socket mutex as the sendto() of the thread that framed the segments:
 * the two spun on each other (~7 % of a 64 KB ib_write_bw's CPU), and the
 * mutex holder runs the peer's whole veth receive path inline.
 * Shares @rxs's buffer pool (XDP_SHARED_UMEM, same queue: no fill or
 * completion ring of its own, and no bind flags): completions appear on
 * @rxs's completion ring.
 */
int xsk_sock_open_tx(struct xsk_sock *s, const struct xsk_sock *rxs, int ifindex)
{
	struct xdp_mmap_offsets off;
	socklen_t len = sizeof(off);
	int err;

	memset(s, 0, sizeof(*s));
	s->queue = rxs->queue;
	s->fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return -errno;
	err = sockopt_int(s->fd, XDP_TX_RING, XSK_RING_SZ);
	if (!err && getsockopt(s->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &len))
		err = -errno;
	if (!err)
		err = ring_map(s->fd, &s->tx, &off.tx, XSK_RING_SZ,
			       sizeof(struct xdp_desc), XDP_PGOFF_TX_RING);
	if (!err)
		err = sock_bind(s, ifindex, true, rxs->fd, 0);
	if (err) {
		xsk_sock_close(s);
		return err;
	}
	s->sg = rxs->sg;
	s->zc = rxs->zc;
	return 0;
}

void xsk_sock_close(struct xsk_sock *s)
{
	ring_unmap(&s->rx);
	ring_unmap(&s->tx);
	ring_unmap(&s->fill);
	ring_unmap(&s->comp);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
