// SPDX-License-Identifier: MIT
/*
 * xsk: one interface ("port") of the xsk transport.
 *
 * Set-up (xsk_port_for, once per interface and process): find the
 * attached xiw_xdp program's maps, claim XSKMAP slots (one per RX queue
 * bound: slot = queue on a multi-queue interface, where flows steer by RX
 * queue; any free slot on a single-queue one, so several processes can
 * share a veth), bind an AF_XDP socket per RX queue on the process umem,
 * put it in the XSKMAP, stock its fill ring, drop flows/listeners a dead
 * owner of the slot left behind.
 *
 * Receive (progress thread, EPOLLIN on each socket; or an app thread
 * polling for its connection, xsk_port_rx_poll): frames of up to
 * XSK_MAX_PKT octets (multi-buffer pieces are joined), Ethernet + IPv4 +
 * TCP, demultiplexed by 4-tuple (or by the metadata record's connection
 * id, checked against the 4-tuple) to a connection, whose utcp consumes
 * it; SYNs without a connection go to xsk_listen.c; other strays get a
 * RST, as the kernel would answer them. Frames go back to the fill ring
 * at once: utcp's deliver callback copies the payload out.
 *
 * Transmit (any thread, port->tx_lock): a segment is copied into one or
 * more TX frames (multi-buffer, XDP_PKT_CONTD) on a TX-only socket of
 * queue 0 (port_tx_socket); a sendto() per batch makes copy mode
 * transmit (one thread kicks at a time, without tx_lock: xsk_port_flush).
 * Completed frames return through queue 0's completion ring. The frames of one RX batch go to utcp as
 * an input batch: one ACK per connection at its end (xsk_conn_input_end).
 *
 * Timers: one timerfd per port at the earliest utcp deadline of its
 * connections; any thread may pull it earlier (xsk_port_timer).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <bpf/bpf.h>
#include "xiwarp/xiwarp.h"
#include "xsk.h"

#define MAX_PORTS	16
#define RX_BATCH	64
#define CONN_TABLE	4096	/* connection ids per port (flow map: 16384) */

static struct {
	pthread_mutex_t lock;
	struct xsk_port *ports[MAX_PORTS];
	int nports;
	int failed[64];		/* ifindexes that could not be set up */
	int nfailed;
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void port_rx_event(void *arg, uint32_t ev);
static void port_tmr_event(void *arg, uint32_t ev);
static void port_ev_event(void *arg, uint32_t ev);

/* ------------------------------------------------------------ set-up --- */

static int rx_queues(const char *ifname)
{
	char path[128];
	int n = 0;

	for (; n < XSK_MAX_Q; n++) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/queues/rx-%d",
			 ifname, n);
		if (access(path, F_OK))
			break;
	}
	return n ? n : 1;
}

/* Claim slots: queue i -> slot i (multi-queue), or any free one. */
static int port_claim(struct xsk_port *p)
{
	if (p->nq > 1) {
		p->by_rxq = true;
		p->slot = 0;
		for (int i = 0; i < p->nq; i++) {
			p->slot_lock[i] = xsk_slot_claim(p->maps.prog_id, (uint32_t)i);
			if (p->slot_lock[i] < 0)
				return p->slot_lock[i];
		}
		return 0;
	}
	for (uint32_t s = 0; s < XIW_XDP_MAX_XSKS; s++) {
		int fd = xsk_slot_claim(p->maps.prog_id, s);

		if (fd >= 0) {
			p->slot_lock[0] = fd;
			p->slot = s;
			return 0;
		}
		if (fd != -EBUSY)
			return fd;
	}
	return -EBUSY;
}

static int port_fill(struct xsk_port *p, struct xsk_sock *s)
{
	int64_t base = xsk_umem_frames_take(XSK_RX_FRAMES);
	uint32_t pos;

	if (base < 0)
		return (int)base;
	pos = xsk_prod_pos(&s->fill);
	for (uint32_t i = 0; i < XSK_RX_FRAMES; i++)
		*xsk_addr_slot(&s->fill, pos + i) = (uint64_t)base + i * XSK_FRAME;
	xsk_prod_submit(&s->fill, XSK_RX_FRAMES);
	(void)p;
	return 0;
}

static int port_tx_frames(struct xsk_port *p)
{
	int64_t base = xsk_umem_frames_take(XSK_TX_FRAMES);

	if (base < 0)
		return (int)base;
	p->tx_free = calloc(XSK_TX_FRAMES, sizeof(*p->tx_free));
	if (!p->tx_free)
		return -ENOMEM;
	p->tx_base = (uint64_t)base;
	for (uint32_t i = 0; i < XSK_TX_FRAMES; i++)
		p->tx_free[i] = (uint64_t)base + i * XSK_FRAME;
	p->tx_nfree = XSK_TX_FRAMES;
	return 0;
}

/*
 * Transmit on a TX-only socket of queue 0 (xsk_sock_open_tx says why); a
 * kernel that refuses one leaves TX on queue 0's own ring, as before.
 */
static void port_tx_socket(struct xsk_port *p)
{
	int err = xsk_sock_open_tx(&p->txs, &p->q[0], p->ifindex);

	p->tx = err ? &p->q[0] : &p->txs;
	if (err)
		xiw_log(XIW_LOG_INFO, "xsk: %s: no TX-only AF_XDP socket (%s): TX shares queue 0's socket",
			p->ifname, strerror(-err));
}

static int port_sockets(struct xsk_port *p, char *why, size_t whylen)
{
	bool zc = p->maps.cfg_flags & XIW_XDP_CFG_ZEROCOPY;

	for (int i = 0; i < p->nq; i++) {
		uint32_t slot = p->by_rxq ? (uint32_t)i : p->slot;
		int err = xsk_sock_open(&p->q[i], p->ifindex, (uint32_t)i, zc);

		if (err) {
			snprintf(why, whylen, "AF_XDP bind on queue %d (%s): %s", i,
				 zc ? "zero-copy, as xiwctl attach --zc asked" : "copy mode",
				 strerror(-err));
			return err;
		}
		err = port_fill(p, &p->q[i]);
		if (err) {
			snprintf(why, whylen, "umem frames exhausted (raise XIW_XSK_FRAMES)");
			return err;
		}
		if (bpf_map_update_elem(p->maps.xsks_fd, &slot, &p->q[i].fd, BPF_ANY)) {
			err = -errno;
			snprintf(why, whylen, "XSKMAP slot %u: %s", slot, strerror(errno));
			return err;
		}
	}
	port_tx_socket(p);
	return 0;
}

static int pfd_add(struct xiw_pfd *pfd, int fd, void (*cb)(void *, uint32_t),
		   void *arg)
{
	pfd->fd = fd;
	pfd->cb = cb;
	pfd->arg = arg;
	return xiw_progress_fd_add(pfd, EPOLLIN);
}

static int port_events(struct xsk_port *p)
{
	int err, tfd, efd;

	for (int i = 0; i < p->nq; i++) {
		err = pfd_add(&p->rx_pfd[i], p->q[i].fd, port_rx_event, p);
		if (err)
			return err;
	}
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (tfd < 0 || efd < 0)
		return -errno;
	p->tmr_at = UINT64_MAX;
	err = pfd_add(&p->tmr_pfd, tfd, port_tmr_event, p);
	return err ? err : pfd_add(&p->ev_pfd, efd, port_ev_event, p);
}

static struct xsk_port *port_new(int ifindex)
{
	struct xsk_port *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->ifindex = ifindex;
	p->conns = calloc(CONN_TABLE, sizeof(*p->conns));
	p->rx_buf = malloc(XSK_MAX_PKT);
	if (!p->conns || !p->rx_buf) {
		free(p->conns);
		free(p->rx_buf);
		free(p);
		return NULL;
	}
	p->nconns = CONN_TABLE;
	/* not open yet: port_free() must not close fd 0 */
	p->maps.prog_fd = p->maps.flows_fd = p->maps.listen_fd = -1;
	p->maps.xsks_fd = p->maps.cnt_fd = p->maps.cfg_fd = -1;
	p->maps.slot_cnt_fd = -1;
	for (int i = 0; i < XSK_MAX_Q; i++) {
		p->q[i].fd = -1;
		p->slot_lock[i] = -1;
	}
	p->txs.fd = -1;
	p->tx = &p->q[0];
	pthread_mutex_init(&p->tx_lock, NULL);
	pthread_mutex_init(&p->rx_lock, NULL);
	pthread_mutex_init(&p->tbl_lock, NULL);
	pthread_mutex_init(&p->tmr_lock, NULL);
	pthread_mutex_init(&p->ev_lock, NULL);
	pthread_mutex_init(&p->arm_lock, NULL);
	return p;
}

/* Undo a failed set-up (no fd is registered with the progress thread). */
static void port_free(struct xsk_port *p)
{
	if (p->txs.fd >= 0)
		xsk_sock_close(&p->txs);
	for (int i = 0; i < XSK_MAX_Q; i++) {
		if (p->q[i].fd >= 0)
			xsk_sock_close(&p->q[i]);
		if (p->slot_lock[i] >= 0)
			close(p->slot_lock[i]);
	}
	xsk_maps_close(&p->maps);
	free(p->tx_free);
	free(p->conns);
	free(p->rx_buf);
	free(p);
}

static int port_setup(struct xsk_port *p, char *why, size_t whylen)
{
	int err;

	if (!if_indextoname((unsigned int)p->ifindex, p->ifname)) {
		snprintf(why, whylen, "no interface with index %d", p->ifindex);
		return -ENODEV;
	}
	err = xsk_maps_open(p->ifindex, &p->maps, why, whylen);
	if (err)
		return err;
	err = xsk_nl_link(p->ifindex, p->mac, &p->mtu);
	if (err) {
		snprintf(why, whylen, "link parameters: %s", strerror(-err));
		return err;
	}
	p->nq = rx_queues(p->ifname);
	err = port_claim(p);
	if (err) {
		snprintf(why, whylen, "no free XSKMAP slot on program %u (%s)",
			 p->maps.prog_id, strerror(-err));
		return err;
	}
	xsk_maps_purge(&p->maps, p->slot);
	err = port_tx_frames(p);
	if (err) {
		snprintf(why, whylen, "umem frames exhausted (raise XIW_XSK_FRAMES)");
		return err;
	}
	err = port_sockets(p, why, whylen);
	if (!err && (err = port_events(p)))
		snprintf(why, whylen, "progress thread registration: %s", strerror(-err));
	return err;
}

static bool failed_before(int ifindex)
{
	for (int i = 0; i < reg.nfailed; i++)
		if (reg.failed[i] == ifindex)
			return true;
	return false;
}

/*
 * At exit: the kernel finishes a closed socket's transmission after its
 * process is gone, utcp cannot. Wait (XIW_XSK_LINGER_MS, default 3000)
 * until every connection's sent bytes and FIN are acknowledged, so a
 * program that ends right after its last send does not cut its stream.
 */
static void xsk_linger(void)
{
	const char *e = getenv("XIW_XSK_LINGER_MS");
	uint64_t ms = e && *e ? strtoull(e, NULL, 10) : 3000;
	uint64_t end = xiw_now_ns() + ms * 1000000ull;

	bool busy = true;

	while (busy && xiw_now_ns() < end) {
		busy = false;
		pthread_mutex_lock(&reg.lock);
		for (int i = 0; i < reg.nports && !busy; i++)
			busy = xsk_port_busy(reg.ports[i]);
		pthread_mutex_unlock(&reg.lock);
		if (busy)
			usleep(1000);
	}
	if (busy)
		xiw_log(XIW_LOG_WARN, "xsk: exiting with unacknowledged data after %llu ms (XIW_XSK_LINGER_MS)",
			(unsigned long long)ms);
	pthread_mutex_lock(&reg.lock);
	for (int i = 0; i < reg.nports; i++) {
		struct xsk_port *p = reg.ports[i];
		struct xdp_statistics st = { 0 }, tst = { 0 };
		socklen_t len = sizeof(st);

		/* the TX descriptors are the TX socket's (may be queue 0's) */
		if (getsockopt(p->tx->fd, SOL_XDP, XDP_STATISTICS, &tst, &len))
			memset(&tst, 0, sizeof(tst));
		len = sizeof(st);
		if (!getsockopt(p->q[0].fd, SOL_XDP, XDP_STATISTICS, &st, &len))
			xiw_log(XIW_LOG_DEBUG, "xsk: %s queue 0: kernel drops: rx %llu, rx ring full %llu, fill ring empty %llu, invalid rx %llu / tx %llu descriptors",
				p->ifname, (unsigned long long)st.rx_dropped,
				(unsigned long long)st.rx_ring_full,
				(unsigned long long)st.rx_fill_ring_empty_descs,
				(unsigned long long)st.rx_invalid_descs,
				(unsigned long long)tst.tx_invalid_descs);
		xiw_log(XIW_LOG_DEBUG, "xsk: %s: rx batches %llu, tx kicks (sendto) %llu",
			p->ifname, (unsigned long long)p->rx_batches,
			(unsigned long long)p->tx_kicks);
		xiw_log(XIW_LOG_DEBUG, "xsk: %s: rx frames %llu (by app threads %llu, bad %llu, no connection %llu), tx frames %llu, payload sent in place from the umem %llu bytes, tx without frame %llu, metadata records ok %llu bad %llu",
			p->ifname, (unsigned long long)p->rx_frames,
			(unsigned long long)p->rx_app_frames,
			(unsigned long long)p->rx_bad, (unsigned long long)p->rx_nomatch,
			(unsigned long long)p->tx_frames, (unsigned long long)p->tx_ref_bytes,
			(unsigned long long)p->tx_drops, (unsigned long long)p->meta_ok,
			(unsigned long long)p->meta_bad);
	}
	pthread_mutex_unlock(&reg.lock);
}

/* Connection @i of @p with a reference taken (xsk_conn_put), or NULL. */
static struct xsk_conn *port_conn_ref(struct xsk_port *p, uint32_t i)
{
	struct xsk_conn *c;

	pthread_mutex_lock(&p->tbl_lock);
	c = p->conns[i];
	if (c)
		xsk_conn_get(c);
	pthread_mutex_unlock(&p->tbl_lock);
	return c;
}

/* A connection of @p still has unacknowledged data or FIN. */
bool xsk_port_busy(struct xsk_port *p)
{
	bool busy = false;

	for (uint32_t i = 1; i < p->nconns && !busy; i++) {
		struct xsk_conn *c;

		c = port_conn_ref(p, i);
		if (!c)
			continue;
		busy = xsk_conn_unacked(c);
		xsk_conn_put(c);
	}
	return busy;
}

struct xsk_port *xsk_port_for(int ifindex, char *why, size_t whylen)
{
	struct xsk_port *p = NULL;
	int err;

	pthread_mutex_lock(&reg.lock);
	for (int i = 0; i < reg.nports; i++)
		if (reg.ports[i]->ifindex == ifindex) {
			p = reg.ports[i];
			goto out;
		}
	if (failed_before(ifindex)) {
		snprintf(why, whylen, "set-up failed before (see the first warning)");
		goto out;
	}
	if (reg.nports == MAX_PORTS) {
		snprintf(why, whylen, "more than %d xsk interfaces", MAX_PORTS);
		goto out;
	}
	p = port_new(ifindex);
	if (!p) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	err = port_setup(p, why, whylen);
	if (err) {
		/* fds already given to the progress thread stay (rare) */
		if (!p->rx_pfd[0].cb)
			port_free(p);
		p = NULL;
		if (err != -ENOENT && reg.nfailed < 64)	/* no program: ask again later */
			reg.failed[reg.nfailed++] = ifindex;
		goto out;
	}
	reg.ports[reg.nports++] = p;
	if (reg.nports == 1)
		atexit(xsk_linger);
	xiw_log(XIW_LOG_INFO, "xsk: %s: %d queue(s), XSKMAP slot %u%s, %s mode%s, MTU %u",
		p->ifname, p->nq, p->slot, p->by_rxq ? "+ (by RX queue)" : "",
		p->q[0].zc ? "zero-copy" : "copy",
		p->q[0].sg ? ", multi-buffer" : "", p->mtu);
out:
	pthread_mutex_unlock(&reg.lock);
	return p;
}

/* ------------------------------------------------------------- table --- */

static uint32_t tuple_hash(uint32_t raddr, uint16_t rport, uint16_t lport)
{
	uint32_t h = raddr ^ ((uint32_t)rport << 16 | lport);

	h ^= h >> 16;
	h *= 0x45d9f3bu;
	h ^= h >> 16;
	return h & (XSK_HASH - 1);
}

int xsk_port_conn_add(struct xsk_port *p, struct xsk_conn *c)
{
	int err = -ENOSPC;

	pthread_mutex_lock(&p->tbl_lock);
	for (uint32_t i = 0; i < p->nconns; i++) {
		uint32_t id = (p->id_hint + i) % p->nconns, h;

		if (id == 0 || p->conns[id])	/* id 0: "none" */
			continue;
		p->conns[id] = c;
		c->id = id;
		p->id_hint = id + 1;
		h = tuple_hash(c->raddr, c->rport, c->lport);
		c->hnext = p->hash[h];
		p->hash[h] = c;
		err = 0;
		break;
	}
	pthread_mutex_unlock(&p->tbl_lock);
	return err;
}

void xsk_port_conn_del(struct xsk_port *p, struct xsk_conn *c)
{
	struct xsk_conn **pp;

	pthread_mutex_lock(&p->tbl_lock);
	if (c->id && c->id < p->nconns && p->conns[c->id] == c) {
		p->conns[c->id] = NULL;
		pp = &p->hash[tuple_hash(c->raddr, c->rport, c->lport)];
		while (*pp && *pp != c)
			pp = &(*pp)->hnext;
		if (*pp)
			*pp = c->hnext;
	}
	pthread_mutex_unlock(&p->tbl_lock);
}

static bool conn_is(const struct xsk_conn *c, const struct utcp_seg *s)
{
	return c->raddr == htonl(s->saddr) && c->rport == s->sport &&
	       c->laddr == htonl(s->daddr) && c->lport == s->dport;
}

/* Find the connection of a received segment, with a reference. */
static struct xsk_conn *conn_find(struct xsk_port *p, const struct utcp_seg *s,
				  uint32_t id_hint)
{
	struct xsk_conn *c = NULL;

	pthread_mutex_lock(&p->tbl_lock);
	if (id_hint && id_hint < p->nconns)
		c = p->conns[id_hint];
	if (!c || !conn_is(c, s))
		for (c = p->hash[tuple_hash(htonl(s->saddr), s->sport, s->dport)];
		     c && !conn_is(c, s); c = c->hnext)
			;
	if (c)
		xsk_conn_get(c);
	pthread_mutex_unlock(&p->tbl_lock);
	return c;
}

/* -------------------------------------------------------------- TX --- */

/* tx_lock held: take back completed TX frames (payload descriptors that
 * pointed into the arena complete too: nothing to take back for them). */
static void tx_reclaim(struct xsk_port *p)
{
	struct xsk_ring *cr = &p->q[0].comp;
	uint32_t pos, n = xsk_cons_avail(cr, &pos);

	for (uint32_t i = 0; i < n; i++) {
		uint64_t a = *xsk_addr_slot(cr, pos + i) & XSK_ADDR_MASK;

		if (a >= p->tx_base && a < p->tx_base + (uint64_t)XSK_TX_FRAMES * XSK_FRAME)
			p->tx_free[p->tx_nfree++] = a;
	}
	if (n)
		xsk_cons_release(cr, n);
}

static uint32_t frames_for(uint32_t len)
{
	return (len + XSK_FRAME - 1) / XSK_FRAME;
}

bool xsk_port_tx_room(struct xsk_port *p, uint32_t len)
{
	uint32_t need = frames_for(len + 14 + UTCP_MAX_HDR);
	bool ok;

	pthread_mutex_lock(&p->tx_lock);
	if (p->tx_nfree < need + 8)
		tx_reclaim(p);
	ok = p->tx_nfree >= need && xsk_prod_free(&p->tx->tx) >= need;
	if (!ok)
		p->tx_starved = true;
	pthread_mutex_unlock(&p->tx_lock);
	if (!ok)	/* look again soon even if nothing else happens */
		xsk_port_timer(p, xiw_now_ns() + 1000000);
	return ok;
}

/*
 * Progress thread: TX frames came back after a connection's @fill found
 * none: let the blocked connections send again. Return: still starved.
 */
static bool port_resume(struct xsk_port *p)
{
	bool go, starved;

	pthread_mutex_lock(&p->tx_lock);
	tx_reclaim(p);
	starved = p->tx_starved;
	go = starved && p->tx_nfree >= XSK_TX_FRAMES / 4;
	if (go)
		p->tx_starved = false;
	pthread_mutex_unlock(&p->tx_lock);
	if (!go)
		return starved;
	for (uint32_t i = 1; i < p->nconns; i++) {
		struct xsk_conn *c;

		c = port_conn_ref(p, i);
		if (!c)
			continue;
		xsk_conn_tx_resume(c);
		xsk_conn_put(c);
	}
	return false;
}

/*
 * A frame as descriptors (at most XSK_MAX_DESC): pieces in the umem are
 * pointed at (split at 4 KiB pages: zero-copy drivers DMA page by page),
 * everything else is copied into TX frames; the headers always are.
 */
#define XSK_MAX_DESC 17		/* MAX_SKB_FRAGS + 1 on 4 KiB pages */

struct txplan {
	struct xdp_desc d[XSK_MAX_DESC];
	int nd;
	uint32_t nfr;			/* TX frames used */
	uint64_t fr[XSK_MAX_DESC];
	bool copy_open;			/* d[nd-1] is a frame still filling */
};

/* tx_lock held: append @len bytes at @src by copy, adding them to @cs
 * in the same pass when not NULL. Return: 0 or -ENOBUFS. */
static int plan_copy(struct xsk_port *p, uint8_t *umem, struct txplan *t,
		     const uint8_t *src, uint32_t len, struct utcp_csum *cs)
{
	while (len) {
		struct xdp_desc *d;
		uint32_t k;

		if (!t->copy_open || t->d[t->nd - 1].len == XSK_FRAME) {
			if (t->nd == XSK_MAX_DESC || !p->tx_nfree)
				return -ENOBUFS;
			t->fr[t->nfr++] = p->tx_free[--p->tx_nfree];
			t->d[t->nd++] = (struct xdp_desc){ .addr = t->fr[t->nfr - 1] };
			t->copy_open = true;
		}
		d = &t->d[t->nd - 1];
		k = XSK_FRAME - d->len < len ? XSK_FRAME - d->len : len;
		if (cs)
			utcp_csum_copy(cs, umem + d->addr + d->len, src, k);
		else
			memcpy(umem + d->addr + d->len, src, k);
		d->len += k;
		src += k;
		len -= k;
	}
	return 0;
}

/* Append umem bytes [@src, @src+@len) by reference. Return: 0 or -E2BIG. */
static int plan_ref(struct txplan *t, uint8_t *umem, const uint8_t *src,
		    uint32_t len)
{
	while (len) {
		uint64_t a = (uint64_t)(src - umem);
		uint32_t k = 4096 - (uint32_t)(a & 4095);

		if (k > len)
			k = len;
		if (t->nd == XSK_MAX_DESC)
			return -E2BIG;
		t->d[t->nd++] = (struct xdp_desc){ .addr = a, .len = k };
		t->copy_open = false;
		src += k;
		len -= k;
	}
	return 0;
}

/* tx_lock held: give the frames of a plan that will not be sent back. */
static void plan_undo(struct xsk_port *p, struct txplan *t)
{
	while (t->nfr)
		p->tx_free[p->tx_nfree++] = t->fr[--t->nfr];
}

/*
 * The frame of one segment. @sum: @hdr carries utcp's partial checksum
 * (cfg.output_sums_payload): the payload is added while it is copied
 * (one pass, not a checksum pass and a copy), referenced pieces are summed
 * where they are, and the final value goes into the frame's header copy
 * (in d[0]: Ethernet and IP/TCP headers always fit the first frame).
 */
static int plan_build(struct xsk_port *p, uint8_t *umem, struct txplan *t,
		      const uint8_t *eth, const uint8_t *hdr, uint32_t hdr_len,
		      const struct utcp_iov *iov, int niov, bool refs, bool sum)
{
	struct utcp_csum cs;
	int err = plan_copy(p, umem, t, eth, 14, NULL);

	if (!err)
		err = plan_copy(p, umem, t, hdr, hdr_len, NULL);
	if (sum)
		utcp_csum_partial(&cs, hdr);
	for (int i = 0; !err && i < niov; i++) {
		if (refs && iov[i].len >= XSK_REF_MIN &&
		    xsk_umem_contains(iov[i].base, iov[i].len)) {
			err = plan_ref(t, umem, iov[i].base, iov[i].len);
			if (sum)
				utcp_csum_add(&cs, iov[i].base, iov[i].len);
			p->tx_ref_bytes += iov[i].len;
		} else {
			err = plan_copy(p, umem, t, iov[i].base, iov[i].len,
					sum ? &cs : NULL);
		}
	}
	if (!err && sum)
		utcp_csum_store(&cs, umem + t->d[0].addr + 14);
	return err;
}

int xsk_port_xmit(struct xsk_port *p, const uint8_t *eth, const uint8_t *hdr,
		  uint32_t hdr_len, const struct utcp_iov *iov, int niov,
		  uint32_t plen, bool sum)
{
	struct xsk_umem *u = xsk_umem_get(NULL);
	struct xsk_sock *s = p->tx;
	struct txplan t = { .nd = 0 };
	uint32_t pos;
	int err;

	(void)plen;
	pthread_mutex_lock(&p->tx_lock);
	if (p->tx_nfree < XSK_MAX_DESC)
		tx_reclaim(p);
	/* multi-buffer lets payload stay where it is; else one frame */
	err = plan_build(p, u->base, &t, eth, hdr, hdr_len, iov, niov, s->sg, sum);
	if (err == -E2BIG) {		/* too many pieces: copy them all */
		plan_undo(p, &t);
		t = (struct txplan){ .nd = 0 };
		err = plan_build(p, u->base, &t, eth, hdr, hdr_len, iov, niov, false,
				 sum);
	}
	if (!err && (t.nd > 1 && !s->sg))
		err = -EMSGSIZE;
	if (!err && xsk_prod_free(&s->tx) < (uint32_t)t.nd)
		err = -ENOBUFS;
	if (err) {
		plan_undo(p, &t);
		p->tx_drops++;
		pthread_mutex_unlock(&p->tx_lock);
		return err;
	}
	pos = xsk_prod_pos(&s->tx);
	for (int i = 0; i < t.nd; i++) {
		struct xdp_desc *d = xsk_desc_slot(&s->tx, pos + (uint32_t)i);

		*d = t.d[i];
		d->options = i + 1 < t.nd ? XDP_PKT_CONTD : 0;
	}
	xsk_prod_submit(&s->tx, (uint32_t)t.nd);
	p->tx_kick = true;
	p->tx_frames++;
	pthread_mutex_unlock(&p->tx_lock);
	return 0;
}

/*
 * Copy mode transmits inside sendto(), at most 32 descriptors per call
 * (-EAGAIN: more left); keep kicking while descriptors wait, reclaiming
 * completions in between (a full completion ring also says -EAGAIN).
 *
 * One thread kicks at a time and tx_lock is not held across sendto():
 * the kernel's copy-mode transmit (skb, veth, the peer's XDP, the copy
 * into its umem) is most of a sender's CPU time, and other threads keep
 * framing segments into the TX ring meanwhile. A flush that finds a
 * kicker at work leaves its descriptors to it (the kicker loops until
 * the ring is empty, tx_kick tells it more came).
 */
void xsk_port_flush(struct xsk_port *p)
{
	struct xsk_sock *s = p->tx;
	bool left;

	pthread_mutex_lock(&p->tx_lock);
	if (!p->tx_kick || p->tx_kicking) {
		pthread_mutex_unlock(&p->tx_lock);
		return;
	}
	p->tx_kicking = true;
	for (int tries = 0; p->tx_kick && tries < 256;) {
		p->tx_kick = false;
		for (; tries < 256; tries++) {
			uint32_t cons = __atomic_load_n(s->tx.consumer, __ATOMIC_ACQUIRE);
			int err = 0;

			if (cons == *s->tx.producer)
				break;
			p->tx_kicks++;
			pthread_mutex_unlock(&p->tx_lock);
			if (sendto(s->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0)
				err = errno;
			pthread_mutex_lock(&p->tx_lock);
			if (err && err != EAGAIN && err != EBUSY && err != ENOBUFS &&
			    err != EINTR) {
				xiw_log(XIW_LOG_WARN, "xsk: %s: sendto: %s", p->ifname,
					strerror(err));
				tries = 256;
				break;
			}
			tx_reclaim(p);
		}
	}
	tx_reclaim(p);
	p->tx_kicking = false;
	/* gave up with descriptors waiting: the next flush (or the timer,
	 * see port_tmr_event) kicks them */
	left = __atomic_load_n(s->tx.consumer, __ATOMIC_ACQUIRE) != *s->tx.producer;
	if (left)
		p->tx_kick = true;
	pthread_mutex_unlock(&p->tx_lock);
	if (left)
		xsk_port_timer(p, xiw_now_ns() + 1000000);
}

/**
 * xsk_port_flush_wait() - flush, then wait (at most @max_ms) until the
 * kernel took every descriptor submitted so far, whichever thread kicks:
 * in copy mode their payload has then been copied.
 */
void xsk_port_flush_wait(struct xsk_port *p, unsigned int max_ms)
{
	struct xsk_sock *s = p->tx;
	uint64_t end = xiw_now_ns() + (uint64_t)max_ms * 1000000ull;
	uint32_t want;

	pthread_mutex_lock(&p->tx_lock);
	want = *s->tx.producer;
	pthread_mutex_unlock(&p->tx_lock);
	for (;;) {
		xsk_port_flush(p);
		if ((int32_t)(__atomic_load_n(s->tx.consumer, __ATOMIC_ACQUIRE) - want) >= 0 ||
		    xiw_now_ns() > end)
			return;
		pthread_mutex_lock(&p->tx_lock);
		p->tx_kick = true;	/* kick again if nobody is */
		pthread_mutex_unlock(&p->tx_lock);
		sched_yield();
	}
}

/* ------------------------------------------------------------ timers --- */

void xsk_port_timer(struct xsk_port *p, uint64_t deadline)
{
	struct itimerspec its = { 0 };

	if (deadline == UINT64_MAX)
		return;
	pthread_mutex_lock(&p->tmr_lock);
	if (deadline < p->tmr_at) {
		p->tmr_at = deadline;
		its.it_value.tv_sec = (time_t)(deadline / 1000000000ull);
		its.it_value.tv_nsec = (long)(deadline % 1000000000ull);
		if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
			its.it_value.tv_nsec = 1;	/* 0 would disarm */
		timerfd_settime(p->tmr_pfd.fd, TFD_TIMER_ABSTIME, &its, NULL);
	}
	pthread_mutex_unlock(&p->tmr_lock);
}

/* XIW_XSK_RX_QUIET=0: the progress thread always wakes for RX frames. */
static bool rx_quiet_on(void)
{
	static int on = -1;
	int v = __atomic_load_n(&on, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *e = getenv("XIW_XSK_RX_QUIET");

		v = !(e && !strcmp(e, "0"));
		__atomic_store_n(&on, v, __ATOMIC_RELAXED);
	}
	return v;
}

/*
 * Like ksock's app_read (EPOLLIN off on the QP's socket), but the RX
 * sockets are the port's, shared by its connections: an idle one (the
 * parameter-exchange QP perftest keeps) would wake the progress thread
 * for every frame of the one in app mode. So off while any connection is
 * in app mode: the engine leaves app mode when its polls stop for 1 ms.
 * Every change of @napp calls this after it: the last call sees the last
 * value.
 */
void xsk_port_rx_arm(struct xsk_port *p)
{
	bool quiet;

	pthread_mutex_lock(&p->arm_lock);
	quiet = rx_quiet_on() && __atomic_load_n(&p->napp, __ATOMIC_SEQ_CST);
	if (quiet != p->rx_quiet && p->rx_pfd[0].cb) {
		for (int i = 0; i < p->nq; i++)
			xiw_progress_fd_mod(&p->rx_pfd[i], quiet ? 0 : EPOLLIN);
		__atomic_store_n(&p->rx_quiet, quiet, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&p->arm_lock);
	if (quiet)
		xsk_port_timer(p, xiw_now_ns() + XSK_QUIET_TICK_NS);
}

static void port_rx_event(void *arg, uint32_t ev);

/* Progress thread: run every connection's due timers, re-arm. */
static void port_tmr_event(void *arg, uint32_t ev)
{
	struct xsk_port *p = arg;
	uint64_t v, now = xiw_now_ns(), next = UINT64_MAX;

	(void)ev;
	if (read(p->tmr_pfd.fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&p->tmr_lock);
	p->tmr_at = UINT64_MAX;
	pthread_mutex_unlock(&p->tmr_lock);
	for (uint32_t i = 1; i < p->nconns; i++) {
		struct xsk_conn *c;
		uint64_t d;

		c = port_conn_ref(p, i);
		if (!c)
			continue;
		d = xsk_conn_tick(c, now);
		if (d < next)
			next = d;
		xsk_conn_deliver(c);
		xsk_conn_put(c);
	}
	xsk_port_flush(p);
	if (port_resume(p) && now + 1000000 < next)
		next = now + 1000000;
	if (__atomic_load_n(&p->rx_quiet, __ATOMIC_ACQUIRE)) {
		/* no RX wake-ups: take what the app threads left */
		port_rx_event(p, 0);
		if (now + XSK_QUIET_TICK_NS < next)
			next = now + XSK_QUIET_TICK_NS;
	}
	xsk_port_timer(p, next);
}

/* ------------------------------------------------- upcalls off-thread --- */

void xsk_port_queue_ev(struct xsk_port *p, struct xsk_conn *c)
{
	uint64_t one = 1;
	bool wake;

	pthread_mutex_lock(&p->ev_lock);
	if (c->ev_queued) {
		pthread_mutex_unlock(&p->ev_lock);
		return;
	}
	c->ev_queued = true;
	xsk_conn_get(c);
	c->ev_next = NULL;
	wake = !p->ev_head;
	/* append: keeps per-port order */
	{
		struct xsk_conn **pp = &p->ev_head;

		while (*pp)
			pp = &(*pp)->ev_next;
		*pp = c;
	}
	pthread_mutex_unlock(&p->ev_lock);
	if (wake && write(p->ev_pfd.fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		xiw_log(XIW_LOG_ERROR, "xsk: eventfd write: %s", strerror(errno));
}

static void port_ev_event(void *arg, uint32_t ev)
{
	struct xsk_port *p = arg;
	struct xsk_conn *c;
	uint64_t v;

	(void)ev;
	if (read(p->ev_pfd.fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	for (;;) {
		pthread_mutex_lock(&p->ev_lock);
		c = p->ev_head;
		if (c) {
			p->ev_head = c->ev_next;
			c->ev_queued = false;
		}
		pthread_mutex_unlock(&p->ev_lock);
		if (!c)
			break;
		xsk_conn_deliver(c);
		xsk_conn_put(c);
	}
	xsk_port_flush(p);
	port_resume(p);
}

/* --------------------------------------------------------------- RX --- */

/*
 * A stray segment (no connection, no listener): answer as RFC 9293
 * §3.10.7.1 says for CLOSED, with a RST. Never answers a RST.
 */
void xsk_port_rst(struct xsk_port *p, const struct utcp_seg *s,
		  const uint8_t *src_mac)
{
	uint8_t eth[14], hdr[40];
	uint32_t seq = 0, ack = 0;
	uint8_t flags = UTCP_RST;
	struct utcp_csum cs;
	uint16_t sum;

	if (s->flags & UTCP_RST)
		return;
	if (s->flags & UTCP_ACK) {
		seq = s->ack;
	} else {
		ack = s->seq + s->len + !!(s->flags & UTCP_SYN) + !!(s->flags & UTCP_FIN);
		flags |= UTCP_ACK;
	}
	memcpy(eth, src_mac, 6);
	memcpy(eth + 6, p->mac, 6);
	eth[12] = 0x08;
	eth[13] = 0x00;
	memset(hdr, 0, sizeof(hdr));
	hdr[0] = 0x45;
	hdr[3] = 40;
	hdr[6] = 0x40;		/* DF */
	hdr[8] = 64;
	hdr[9] = 6;
	*(uint32_t *)(hdr + 12) = htonl(s->daddr);
	*(uint32_t *)(hdr + 16) = htonl(s->saddr);
	utcp_csum_init(&cs, 0);
	utcp_csum_add(&cs, hdr, 20);
	sum = htons(utcp_csum_final(&cs));
	memcpy(hdr + 10, &sum, 2);
	*(uint16_t *)(hdr + 20) = htons(s->dport);
	*(uint16_t *)(hdr + 22) = htons(s->sport);
	*(uint32_t *)(hdr + 24) = htonl(seq);
	*(uint32_t *)(hdr + 28) = htonl(ack);
	hdr[32] = 5 << 4;
	hdr[33] = flags;
	utcp_csum_init(&cs, utcp_csum_pseudo(s->daddr, s->saddr, 6, 20));
	utcp_csum_add(&cs, hdr + 20, 20);
	sum = htons(utcp_csum_final(&cs));
	memcpy(hdr + 36, &sum, 2);
	xsk_port_xmit(p, eth, hdr, 40, NULL, 0, 0, false);
}

/* One whole frame (@f, @len octets from the Ethernet header). */
static void rx_frame(struct xsk_port *p, const uint8_t *f, uint32_t len,
		     uint32_t headroom, struct xsk_conn **touched, int *nt)
{
	struct xiw_xdp_meta m;
	struct utcp_seg s;
	struct xsk_conn *c;
	int r;

	p->rx_frames++;
	r = xsk_frame_parse(f, len, headroom, &s, &m);
	if (r == -EINVAL) {
		p->rx_bad++;
		return;
	}
	if (r == 1)
		p->meta_ok++;
	else if (r == -EBADMSG)
		p->meta_bad++;	/* the frame itself is fine: parse it ourselves */
	c = conn_find(p, &s, r == 1 ? m.conn_id : 0);
	if (!c) {
		p->rx_nomatch++;
		if ((s.flags & (UTCP_SYN | UTCP_ACK | UTCP_RST)) == UTCP_SYN)
			xsk_listen_syn(p, f + 14, len - 14, &s, f + 6);
		else
			xsk_port_rst(p, &s, f + 6);
		return;
	}
	xsk_conn_input(c, f + 14, len - 14, r == 1 ? &m : NULL);
	for (int i = 0; i < *nt; i++)
		if (touched[i] == c) {
			xsk_conn_put(c);
			return;
		}
	if (*nt < RX_BATCH) {
		touched[(*nt)++] = c;
		return;
	}
	xsk_conn_input_end(c);
	xsk_conn_deliver(c);
	xsk_conn_put(c);
}

/* Give the RX frames of @n descriptors from @pos back to the fill ring. */
static void rx_recycle(struct xsk_sock *s, uint32_t pos, uint32_t n)
{
	uint32_t fpos = xsk_prod_pos(&s->fill);

	/* the fill ring has room for every frame we own */
	for (uint32_t i = 0; i < n; i++)
		*xsk_addr_slot(&s->fill, fpos + i) =
			xsk_desc_slot(&s->rx, pos + i)->addr & XSK_ADDR_MASK;
	xsk_prod_submit(&s->fill, n);
	xsk_cons_release(&s->rx, n);
}

/* Receive a batch on socket @s. Return: descriptors consumed. */
static uint32_t rx_batch(struct xsk_port *p, struct xsk_sock *s)
{
	uint8_t *umem = xsk_umem_get(NULL)->base;
	struct xsk_conn *touched[RX_BATCH];
	uint32_t pos, n = xsk_cons_avail(&s->rx, &pos), done = 0;
	int nt = 0;

	if (n > RX_BATCH)
		n = RX_BATCH;
	if (n)
		p->rx_batches++;
	while (done < n) {
		uint32_t first = done, tot = 0, head = 0;
		const uint8_t *f = NULL;
		bool ok = true;

		/* one packet: descriptors up to the one without CONTD */
		for (;;) {
			const struct xdp_desc *d = xsk_desc_slot(&s->rx, pos + done);
			uint64_t a = (d->addr & XSK_ADDR_MASK) + (d->addr >> 48);

			done++;
			if (done - 1 == first) {
				f = umem + a;
				head = (uint32_t)(d->addr >> 48);
			}
			if (tot + d->len > XSK_MAX_PKT)
				ok = false;
			else if (done - 1 > first || (d->options & XDP_PKT_CONTD))
				memcpy(p->rx_buf + tot, umem + a, d->len);
			tot += d->len;
			if (!(d->options & XDP_PKT_CONTD))
				break;
			if (done == n) {	/* rest of it not in this batch */
				uint32_t more = xsk_cons_avail(&s->rx, &pos) - done;

				if (!more) {
					ok = false;	/* cannot happen: the kernel
							 * publishes whole packets */
					break;
				}
				n++;
			}
		}
		if (!ok)
			p->rx_bad++;
		else
			rx_frame(p, done - first > 1 ? p->rx_buf : f, tot,
				 done - first > 1 ? 0 : head, touched, &nt);
		/* the frame goes back to the fill ring: a later packet without
		 * a record must not find this one's in front of it (it would
		 * fail the check and count as meta_bad) */
		if (f && head >= sizeof(struct xiw_xdp_meta))
			memset((uint8_t *)f - sizeof(struct xiw_xdp_meta), 0,
			       sizeof(((struct xiw_xdp_meta *)0)->magic));
	}
	rx_recycle(s, pos, done);
	/* the ACKs the batch held (one per connection), then upcalls */
	for (int i = 0; i < nt; i++)
		xsk_conn_input_end(touched[i]);
	for (int i = 0; i < nt; i++) {
		xsk_conn_deliver(touched[i]);
		xsk_conn_put(touched[i]);
	}
	return done;
}

/* Frames wait on some RX ring of @p (a racy peek: no lock). */
static bool rx_pending(struct xsk_port *p)
{
	for (int i = 0; i < p->nq; i++) {
		uint32_t pos;

		if (xsk_cons_avail(&p->q[i].rx, &pos))
			return true;
	}
	return false;
}

uint32_t xsk_port_rx_poll(struct xsk_port *p)
{
	uint32_t got = 0;

	if (xiw_progress_is_self())
		return 0;
	__atomic_store_n(&p->app_poll_ns, xiw_now_ns(), __ATOMIC_RELAXED);
	if (!rx_pending(p) || pthread_mutex_trylock(&p->rx_lock))
		return 0;
	for (int i = 0; i < p->nq; i++)
		got += rx_batch(p, &p->q[i]);
	p->rx_app_frames += got;
	pthread_mutex_unlock(&p->rx_lock);
	if (got) {	/* the ACKs (or answers) utcp made */
		xsk_port_flush(p);
		port_resume(p);
	}
	return got;
}

#define XSK_APP_RECENT_NS 200000ull	/* an app thread polls the port */

/* XIW_XSK_APP_GRACE_US (20; 0: none): how long rx_app_grace waits. */
static uint64_t app_grace_ns(void)
{
	static int64_t v = -1;
	int64_t g = __atomic_load_n(&v, __ATOMIC_RELAXED);

	if (g < 0) {
		const char *e = getenv("XIW_XSK_APP_GRACE_US");

		g = (e && *e ? atoll(e) : 20) * 1000;
		if (g < 0 || g > 1000000)
			g = 20000;
		__atomic_store_n(&v, g, __ATOMIC_RELAXED);
	}
	return (uint64_t)g;
}

/*
 * Progress thread, woken for RX frames: an app thread polled this port
 * lately (xsk_port_rx_poll). Let it take them (a few yields, at most
 * app_grace_ns()): whoever is first keeps being first, and a progress
 * thread that always wins keeps a ping-pong paying a wake-up per message
 * (the app's passes then find nothing, back off and never switch the
 * wake-ups off). Return: true if the app thread took them.
 */
static bool rx_app_grace(struct xsk_port *p)
{
	uint64_t t0 = xiw_now_ns(), grace = app_grace_ns();

	if (!grace ||
	    t0 - __atomic_load_n(&p->app_poll_ns, __ATOMIC_RELAXED) > XSK_APP_RECENT_NS)
		return false;
	while (rx_pending(p)) {
		if (xiw_now_ns() - t0 > grace)
			return false;
		sched_yield();
	}
	return true;
}

static void port_rx_event(void *arg, uint32_t ev)
{
	struct xsk_port *p = arg;

	if (ev && rx_app_grace(p))
		return;
	pthread_mutex_lock(&p->rx_lock);
	for (int i = 0; i < p->nq; i++)
		for (int b = 0; b < 16 && rx_batch(p, &p->q[i]) == RX_BATCH; b++)
			;
	pthread_mutex_unlock(&p->rx_lock);
	xsk_port_flush(p);
	port_resume(p);
}

