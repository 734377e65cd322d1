/* SPDX-License-Identifier: MIT */
/*
 * xsk transport internals: AF_XDP sockets + utcp behind struct xiw_llp_ops.
 *
 * Pieces (one concern per file):
 *   xsk_umem.c   the process's umem: RX/TX frames and the xiw_alloc() arena
 *   xsk_ring.c   one raw AF_XDP socket: rings, bind, descriptors
 *   xsk_maps.c   the attached xiw_xdp program's maps (found by program
 *                id), XSKMAP slot ownership, flow/listener registration
 *   xsk_nl.c     routes, neighbours and links from the kernel (netlink)
 *   xsk_port.c   one interface: sockets per RX queue, RX demultiplexing,
 *                frame TX, the timer, the connection table
 *   xsk_conn.c   one connection: utcp callbacks, buffers, the ops table
 *   xsk_listen.c listeners and passive opens
 *   xsk_fpdu.c   the XDP program's FPDU records for the engine, FPDU
 *                boundary re-sync
 *
 * Locks (in this order): port->rx_lock, conn->lock, then port->tx_lock /
 * port->tbl_lock / port->tmr_lock / port->ev_lock (leaves). Upcalls to
 * the owner run on the progress thread without any of them held.
 */
#ifndef XIW_XSK_H
#define XIW_XSK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/types.h>
#include <linux/if_xdp.h>
#include "xiwarp/abi/xdp.h"
#include "xiw_conn.h"
#include "xiw_progress.h"
#include "llp.h"
#include "utcp/utcp.h"
#include "xsk_sendq.h"

/* UAPI headers here are 6.1; the kernel is newer */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

#define XSK_FRAME	4096u	/* umem chunk: one RX/TX frame */
#define XSK_RX_HEADROOM	256u	/* XDP_PACKET_HEADROOM: RX data offset */
#define XSK_RING_SZ	2048u	/* RX, TX, completion ring entries */
#define XSK_FILL_SZ	4096u	/* fill ring entries */
#define XSK_RX_FRAMES	2048u	/* frames given to each fill ring */
#define XSK_TX_FRAMES	2048u	/* TX frames per port */
#define XSK_MAX_Q	8	/* RX queues one port binds */
#define XSK_ADDR_MASK	((1ull << 48) - 1)	/* unaligned-mode address */
#define XSK_MAX_PKT	(64u * 1024)	/* largest frame we reassemble */
#define XSK_HASH	1024	/* 4-tuple hash buckets per port */
#define XSK_REF_MIN	256u	/* smaller umem pieces are copied, not pointed at */
#define XSK_QUIET_TICK_NS 1000000ull	/* RX look while wake-ups are off */
#define XSK_BIND_WAIT_MS 1000	/* bind: how long a busy queue may stay busy */

/* ------------------------------------------------------- xsk_umem.c --- */

/**
 * struct xsk_umem - the process's one umem (shared by every AF_XDP socket
 * of the process, XDP_SHARED_UMEM): @nframes frames of XSK_FRAME octets at
 * offset 0, then the xiw_alloc() arena (@arena_len octets).
 */
struct xsk_umem {
	uint8_t *base;
	size_t len;
	uint32_t nframes;
	size_t arena_off, arena_len;
	int reg_fd;		/* the socket that registered it (-1: none yet) */
};

/** xsk_umem_get() - the umem, mapped on first use. NULL: -errno in *err. */
struct xsk_umem *xsk_umem_get(int *err);
/** xsk_umem_frames_take() - reserve @n consecutive frames for a port.
 *  Return: umem address of the first, or -ENOSPC. */
int64_t xsk_umem_frames_take(uint32_t n);
/** xsk_umem_contains() - [@p, @p+@len) lies inside the umem. */
bool xsk_umem_contains(const void *p, size_t len);

/* ------------------------------------------------------- xsk_ring.c --- */

/** struct xsk_ring - one mmapped AF_XDP ring (producer/consumer). */
struct xsk_ring {
	uint32_t *producer, *consumer, *flags;
	void *desc;
	uint32_t mask, size;
	void *map;
	size_t map_len;
};

/**
 * struct xsk_sock - one AF_XDP socket bound to (ifindex, queue).
 * @fd:     the socket.
 * @rx, @tx, @fill, @comp: its rings (fill/comp: its own, shared umem).
 * @sg:     bound with XDP_USE_SG (multi-buffer frames).
 * @zc:     bound with XDP_ZEROCOPY.
 */
struct xsk_sock {
	int fd;
	uint32_t queue;
	struct xsk_ring rx, tx, fill, comp;
	bool sg, zc;
};

/**
 * xsk_sock_open() - AF_XDP socket on @ifindex queue @queue sharing the
 * process umem (the first socket registers it). @zc: XDP_ZEROCOPY (fail
 * if the driver cannot), else XDP_COPY. Tries XDP_USE_SG first.
 * Return: 0 or -errno (which step failed is logged).
 */
int xsk_sock_open(struct xsk_sock *s, int ifindex, uint32_t queue, bool zc);
/**
 * xsk_sock_open_tx() - a TX-only AF_XDP socket on @rxs's interface and
 * queue, sharing its buffer pool (completions on @rxs->comp).
 * Return: 0 or -errno.
 */
int xsk_sock_open_tx(struct xsk_sock *s, const struct xsk_sock *rxs, int ifindex);
/** xsk_sock_close() - unmap the rings and close. */
void xsk_sock_close(struct xsk_sock *s);

/* ring helpers: producer side reserves/submits, consumer side peeks/releases */
uint32_t xsk_prod_free(const struct xsk_ring *r);
uint64_t *xsk_addr_slot(struct xsk_ring *r, uint32_t idx);
struct xdp_desc *xsk_desc_slot(struct xsk_ring *r, uint32_t idx);
uint32_t xsk_prod_pos(const struct xsk_ring *r);
void xsk_prod_submit(struct xsk_ring *r, uint32_t n);
uint32_t xsk_cons_avail(const struct xsk_ring *r, uint32_t *pos);
void xsk_cons_release(struct xsk_ring *r, uint32_t n);

/* ------------------------------------------------------- xsk_maps.c --- */

/**
 * struct xsk_maps - fds of the xiw_xdp program attached to an interface
 * and its maps (-1: absent), found from the program id.
 */
struct xsk_maps {
	uint32_t prog_id;
	int prog_fd, flows_fd, listen_fd, xsks_fd, cnt_fd, cfg_fd;
	int slot_cnt_fd;	/* optional: per-slot counters (-1: none) */
	struct xiw_xdp_slot_cnt *slot_cnt;	/* its mapping, or NULL */
	size_t slot_cnt_len;
	uint32_t slot_cnt_n;
	uint32_t cfg_flags;	/* struct xiw_xdp_cfg.flags at open */
	bool generic;		/* attached in generic (skb) mode */
};

/** xsk_maps_open() - find xiw_xdp on @ifindex. Return: 0, -ENOENT (none
 *  or another program: @why says which), -errno. */
int xsk_maps_open(int ifindex, struct xsk_maps *m, char *why, size_t whylen);
void xsk_maps_close(struct xsk_maps *m);
/** xsk_maps_count() - add utcp counters to XSKMAP slot @slot's record
 *  (xiw_slot_cnt, mapped; no-op without it). Any thread. */
void xsk_maps_count(const struct xsk_maps *m, uint32_t slot, uint64_t retrans,
		    uint64_t sacked);
/** xsk_slot_claim() - own XSKMAP slot @slot of program @prog_id in this
 *  process (an abstract unix socket per slot, released at exit).
 *  Return: the lock fd, or -EBUSY / -errno. */
int xsk_slot_claim(uint32_t prog_id, uint32_t slot);
/** xsk_maps_purge() - drop flows and listeners that steer to @slot
 *  (left by a dead process that owned it). */
void xsk_maps_purge(const struct xsk_maps *m, uint32_t slot);
void xsk_flow_key4(struct xiw_xdp_flow_key *k, uint32_t raddr, uint16_t rport,
		   uint32_t laddr, uint16_t lport);
int xsk_flow_add(const struct xsk_maps *m, const struct xiw_xdp_flow_key *k,
		 uint32_t conn_id, uint32_t slot);
void xsk_flow_del(const struct xsk_maps *m, const struct xiw_xdp_flow_key *k);
int xsk_flow_set_flags(const struct xsk_maps *m, const struct xiw_xdp_flow_key *k,
		       uint32_t flags, uint32_t mpa_seq0);
/** xsk_flow_get() - the flow's map value (a copy). 0 or -errno. */
int xsk_flow_get(const struct xsk_maps *m, const struct xiw_xdp_flow_key *k,
		 struct xiw_xdp_flow *f);
/**
 * xsk_flow_set_track() - make the program follow the flow's FPDUs from TCP
 * sequence number @seq (XIW_XDP_FLOW_TRACK, @fpdu_seq, @fpdu_state =
 * @state). Other fields kept (packets/bytes may lose a few increments).
 * Return: 0 or -errno.
 */
int xsk_flow_set_track(const struct xsk_maps *m, const struct xiw_xdp_flow_key *k,
		       uint32_t seq, uint32_t state);
/** xsk_maps_count_meta() - add record counters (used, rejected, re-syncs)
 *  to XSKMAP slot @slot's record. Any thread. */
void xsk_maps_count_meta(const struct xsk_maps *m, uint32_t slot, uint64_t used,
			 uint64_t mismatch, uint64_t resync);
int xsk_listen_add(const struct xsk_maps *m, uint16_t port, uint32_t id,
		   uint32_t slot);
void xsk_listen_del(const struct xsk_maps *m, uint16_t port);

/* --------------------------------------------------------- xsk_nl.c --- */

/**
 * struct xsk_route - where a packet to a destination goes.
 * @ifindex: output interface. @src: preferred source address (network
 * order). @nexthop: gateway or the destination itself (network order).
 */
struct xsk_route {
	int ifindex;
	uint32_t src, nexthop;
};

/** xsk_nl_route() - RTM_GETROUTE for @dst (network order). */
int xsk_nl_route(uint32_t dst, struct xsk_route *r);
/**
 * xsk_nl_neigh() - the link-layer address of @ip on @ifindex. @kick: ask
 * the kernel to resolve it if unknown (RTM_NEWNEIGH with NTF_USE).
 * Return: 0 (@mac set), -EAGAIN (resolving), -errno.
 */
int xsk_nl_neigh(int ifindex, uint32_t ip, uint8_t mac[6], bool kick);
/** xsk_nl_link() - MAC and MTU of @ifindex. */
int xsk_nl_link(int ifindex, uint8_t mac[6], uint32_t *mtu);
/** xsk_nl_addr_if() - the interface holding local address @ip, or 0. */
int xsk_nl_addr_if(uint32_t ip);
/** xsk_nl_if_addrs() - up to @max IPv4 addresses of @ifindex. */
int xsk_nl_if_addrs(int ifindex, uint32_t *out, int max);

/* ------------------------------------------------------ xsk_frame.c --- */

/**
 * xsk_frame_parse() - a received frame: @f (@len octets from the Ethernet
 * header), @headroom octets of the frame buffer in front of it (where an
 * XDP metadata record may be). @s: the parsed segment (TCP checksum not
 * checked). @meta: the record (host order) when it checked out.
 * Return: 1 (record present and consistent), 0 (no record), -EBADMSG (a
 * record that does not match the frame: ignore it), -EINVAL (not an
 * Ethernet/IPv4/TCP frame we take).
 */
int xsk_frame_parse(const uint8_t *f, uint32_t len, uint32_t headroom,
		    struct utcp_seg *s, struct xiw_xdp_meta *meta);

/* ------------------------------------------------------- xsk_fpdu.c --- */

#define XSK_FPQ_LEN	512	/* records waiting per connection (2^n) */

/** struct xsk_fpq - checked records by FPDU sequence number, ascending. */
struct xsk_fpq {
	uint32_t head, tail;	/* free-running indices */
	struct xsk_fpq_ent {
		uint32_t seq;	/* TCP sequence number of the MPA length */
		struct xiw_llp_fpdu f;
	} e[XSK_FPQ_LEN];
};

struct xsk_conn;
/** xsk_fpdu_push() - keep checked record @m of @c for the engine
 *  (c->lock held). Records of other connections are ignored. */
void xsk_fpdu_push(struct xsk_conn *c, const struct xiw_xdp_meta *m);
/* the LLP ops of the same names in llp.h */
void xsk_fpdu_stream(struct xiw_llp *l, bool crc, bool markers);
int xsk_fpdu_meta(struct xiw_llp *l, uint64_t off, struct xiw_llp_fpdu *out);
void xsk_fpdu_done(struct xiw_llp *l, enum xiw_llp_meta_res res,
		   uint64_t next_off);

/* ------------------------------------------------------- xsk_port.c --- */

struct xsk_conn;
struct xsk_listener;

/**
 * struct xsk_port - one interface used by the xsk transport.
 */
struct xsk_port {
	int ifindex;
	char ifname[IF_NAMESIZE];
	uint8_t mac[6];
	uint32_t mtu;
	struct xsk_maps maps;
	uint32_t slot;			/* XSKMAP slot of queue 0 */
	bool by_rxq;			/* flows steer by RX queue (multi-queue) */
	int nq;
	struct xsk_sock q[XSK_MAX_Q];
	struct xsk_sock txs;		/* TX-only socket on queue 0 (fd -1: none) */
	struct xsk_sock *tx;		/* the TX ring's socket: &txs or &q[0] */
	struct xiw_pfd rx_pfd[XSK_MAX_Q];
	int slot_lock[XSK_MAX_Q];

	pthread_mutex_t rx_lock;	/* RX rings, fill rings, @rx_buf */
	pthread_mutex_t tx_lock;	/* TX ring, completion ring, @tx_free */
	uint64_t *tx_free;		/* free TX frame addresses (stack) */
	uint64_t tx_base;		/* umem address of the first TX frame */
	uint64_t tx_ref_bytes;		/* payload sent from the umem in place */
	uint32_t tx_nfree;
	bool tx_kick;			/* descriptors submitted, no sendto yet */
	bool tx_kicking;		/* a thread is in xsk_port_flush's sendto loop */
	bool tx_starved;		/* a @fill found no frame: resume later */

	pthread_mutex_t tbl_lock;	/* @conns, @hash, @id_hint */
	struct xsk_conn **conns;	/* by conn id (index) */
	uint32_t nconns, id_hint;
	struct xsk_conn *hash[XSK_HASH];	/* by 4-tuple, chained */

	pthread_mutex_t tmr_lock;	/* @tmr_at */
	struct xiw_pfd tmr_pfd;		/* timerfd: earliest utcp deadline */
	uint64_t tmr_at;

	struct xiw_pfd ev_pfd;		/* eventfd: upcalls queued off-thread */
	pthread_mutex_t ev_lock;
	struct xsk_conn *ev_head;

	/* RX wake-ups (xsk_port_rx_arm): EPOLLIN is off while app threads
	 * poll the rings for some connection (xsk_port_rx_poll) */
	pthread_mutex_t arm_lock;	/* @rx_quiet, the rx_pfd event masks */
	uint32_t napp;			/* connections app_read (atomic) */
	bool rx_quiet;			/* EPOLLIN off; the timer looks too */
	uint64_t app_poll_ns;		/* last xsk_port_rx_poll (atomic) */

	/* counters (xiwctl stat shows the XDP side) */
	uint64_t rx_frames, rx_bad, rx_nomatch, tx_frames, tx_drops;
	uint64_t meta_ok, meta_bad;
	uint64_t rx_app_frames;		/* of @rx_frames, taken by app threads */
	uint64_t rx_batches;		/* non-empty RX ring batches */
	uint64_t tx_kicks;		/* sendto() calls on the TX socket */
	uint8_t *rx_buf;		/* multi-buffer reassembly (progress) */
};

/**
 * xsk_port_for() - the port of interface @ifindex, set up on first use.
 * Return: the port, or NULL (*why says what is missing: no XDP program,
 * no free slot, bind failed ...).
 */
struct xsk_port *xsk_port_for(int ifindex, char *why, size_t whylen);
/** xsk_port_busy() - a connection of @p has unacknowledged data/FIN. */
bool xsk_port_busy(struct xsk_port *p);
/** xsk_port_conn_add() - give @c a conn id in @p's table. */
int xsk_port_conn_add(struct xsk_port *p, struct xsk_conn *c);
void xsk_port_conn_del(struct xsk_port *p, struct xsk_conn *c);
/**
 * xsk_port_xmit() - send one Ethernet frame: @eth (14 octets) then the
 * utcp segment (@hdr, then @iov pieces). Copies into TX frames (or points
 * at umem pieces). @sum: @hdr's TCP checksum is utcp's partial sum
 * (cfg.output_sums_payload): add the payload during the copy and finish it.
 * Return: 0, or -ENOBUFS (no frame: the segment is lost, TCP resends).
 */
int xsk_port_xmit(struct xsk_port *p, const uint8_t *eth, const uint8_t *hdr,
		  uint32_t hdr_len, const struct utcp_iov *iov, int niov,
		  uint32_t plen, bool sum);
/** xsk_port_tx_room() - TX frames free for a segment of @len octets. */
bool xsk_port_tx_room(struct xsk_port *p, uint32_t len);
/** xsk_port_rst() - answer stray segment @s with a RST (RFC 9293
 *  §3.10.7.1), to @src_mac. Never answers a RST. */
void xsk_port_rst(struct xsk_port *p, const struct utcp_seg *s,
		  const uint8_t *src_mac);
/**
 * xsk_port_rx_poll() - receive on @p's RX rings from an app thread that
 * polls for its own connection's bytes (op_recv found none), so a
 * ping-pong does not wait for the progress thread's wake-up. Non-blocking:
 * returns at once on the progress thread, when the rings are empty, or
 * when another thread receives on @p (rx_lock taken). Upcalls owed to
 * the connections touched are queued to the progress thread. Call with
 * no connection lock held.
 * Return: frames consumed.
 */
uint32_t xsk_port_rx_poll(struct xsk_port *p);
/**
 * xsk_port_rx_arm() - after @napp changed (any thread; conn->lock may be
 * held): turn the progress thread's RX wake-ups off while app threads
 * poll @p's rings for a connection (it is read in app mode), back on when
 * none does. While off, those polls take every connection's frames
 * (upcalls owed to others are queued to the progress thread), and the
 * port timer looks every XSK_QUIET_TICK_NS for what they leave.
 */
void xsk_port_rx_arm(struct xsk_port *p);
/** xsk_port_flush() - kick the kernel to send submitted TX descriptors. */
void xsk_port_flush(struct xsk_port *p);
/** xsk_port_flush_wait() - flush and wait (at most @max_ms) until the
 *  kernel took every TX descriptor submitted before the call. */
void xsk_port_flush_wait(struct xsk_port *p, unsigned int max_ms);
/** xsk_port_timer() - make sure the port timer fires by @deadline (ns). */
void xsk_port_timer(struct xsk_port *p, uint64_t deadline);
/** xsk_port_queue_ev() - deliver @c's pending upcalls on the progress
 *  thread (any thread). */
void xsk_port_queue_ev(struct xsk_port *p, struct xsk_conn *c);

/* ------------------------------------------------------- xsk_conn.c --- */

/* struct xsk_conn.ev: upcalls owed to the owner */
#define XSK_EV_READABLE	0x1
#define XSK_EV_WRITABLE	0x2
#define XSK_EV_CLOSED	0x4
#define XSK_EV_ACCEPT	0x8	/* passive: established, hand to listener */
#define XSK_EV_CONNECTED 0x10	/* active: established (first @writable) */
#define XSK_EV_ACKED	0x20	/* the armed ACK watermark was reached */

/**
 * struct xsk_conn - one TCP connection over utcp (struct xiw_llp first).
 * See xsk_conn.c for the buffer and lifetime rules.
 */
struct xsk_conn {
	struct xiw_llp base;
	struct xsk_port *port;
	pthread_mutex_t lock;
	struct utcp_conn *tcp;
	uint32_t id;			/* conn id in the port table/flow map */
	struct xsk_conn *hnext;		/* port hash chain */
	int refs;			/* owner + table + queued events */
	struct xiw_xdp_flow_key key;	/* flow map key (as received) */
	bool flow_added;
	uint32_t laddr, raddr;		/* network order */
	uint16_t lport, rport;		/* host order */
	uint8_t eth[14];		/* dst MAC, src MAC, type */
	int port_fd;			/* bound kernel socket reserving lport */
	struct xsk_listener *lsn;	/* passive: until accepted */

	/* owner */
	const struct xiw_llp_cb *cb;
	void *arg;
	bool connecting, paused, app_read, want_write, dead, detached;
	bool eof_seen;			/* recv returned 0 */
	bool fin_queued;		/* utcp_close() called */
	bool released;			/* the owner closed it (conn_detach) */
	bool fin_held;			/* FIN waits for the peer's quiet */
	uint64_t fin_by;		/* ... at the latest until then (ns) */
	uint64_t last_rx_ns;		/* last payload from the peer */
	uint64_t in_now;		/* time of the input utcp runs */
	bool finished;			/* out of the table */
	bool tx_blocked;		/* @fill found no TX frame */
	uint64_t tx_lost;		/* segments without a TX frame */
	uint64_t orphan_at;		/* detached: abort by then (ns) */
	bool ack_armed;			/* ACK watermark (xiw_llp_ack_arm) */
	uint32_t ack_target;
	uint32_t ev;			/* XSK_EV_* pending */
	int err;			/* for XSK_EV_CLOSED */
	bool ev_queued;
	struct xsk_conn *ev_next;
	bool resolving;			/* active: waiting for the neighbour */
	struct xiw_ptimer resolve_tmr;
	unsigned int resolve_tries;

	/* send: what utcp's @fill maps stream offsets to (xsk_sendq.c) */
	struct xsk_sendq sq;
	int poll_fd;			/* eventfd: EPOLLOUT iff send space */
	bool poll_full;

	/* receive: in-order bytes from utcp until the engine reads them */
	uint8_t *rbuf;
	uint32_t rcap;
	uint64_t r_head, r_tail;	/* written by deliver / read by recv */
	uint32_t r_staged;		/* copied behind r_head by cb_stage,
					 * not committed yet */
	bool fin;			/* the peer's FIN is in order */
	bool tcp_closed;		/* utcp reported closed */
	int tcp_err;
	uint64_t tmr_at;		/* deadline the port timer knows */
	uint64_t cnt_retrans, cnt_sacked;	/* utcp counters already added
						 * to the slot's record */

	/* FPDU records (xsk_fpdu.c) */
	bool fp_on;			/* the program follows our FPDUs */
	uint32_t fp_seq0;		/* TCP seq of FPDU-stream offset 0 */
	uint32_t fp_irs1;		/* TCP seq of receive offset 0 (r_tail) */
	struct xsk_fpq *fpq;		/* records waiting for the engine */
	uint32_t fp_miss;		/* record-less FPDUs in a row (rx_lock) */
	uint64_t fp_check_at;		/* no re-sync look-up before (ns) */
};

/** xsk_conn_new() - a connection on @p (not yet in the table). */
struct xsk_conn *xsk_conn_new(struct xsk_port *p, uint32_t laddr, uint16_t lport,
			      uint32_t raddr, uint16_t rport, bool passive);
/** xsk_conn_input_end() - the RX batch that fed @c through
 *  xsk_conn_input() is over: utcp sends the ACK it held (progress thread
 *  or the app thread that took the batch; before xsk_conn_deliver()). */
void xsk_conn_input_end(struct xsk_conn *c);
/** xsk_conn_input() - one received IPv4 packet for @c (progress thread);
 *  @meta: its checked XDP record, or NULL. */
void xsk_conn_input(struct xsk_conn *c, const uint8_t *ip, size_t len,
		    const struct xiw_xdp_meta *meta);
/** xsk_conn_listen_input() - passive: LISTEN, then the SYN (progress). */
void xsk_conn_listen_input(struct xsk_conn *c, const uint8_t *ip, size_t len);
/** xsk_conn_reset() - send RST, no more upcalls (any thread). */
void xsk_conn_reset(struct xsk_conn *c);
/** xsk_conn_tick() - run @c's due timers. Return: its next deadline. */
uint64_t xsk_conn_tick(struct xsk_conn *c, uint64_t now);
/** xsk_conn_deliver() - run the upcalls @c owes (progress thread). */
void xsk_conn_deliver(struct xsk_conn *c);
void xsk_conn_get(struct xsk_conn *c);
void xsk_conn_put(struct xsk_conn *c);
/** xsk_conn_unacked() - sent data or FIN not yet acknowledged. */
bool xsk_conn_unacked(struct xsk_conn *c);
/** xsk_conn_tx_resume() - TX frames came back: let utcp send again. */
void xsk_conn_tx_resume(struct xsk_conn *c);
extern const struct xiw_llp_ops xiw_xsk_ops;

/* ----------------------------------------------------- xsk_listen.c --- */

/** xsk_listen_syn() - a SYN for no known connection (progress thread). */
void xsk_listen_syn(struct xsk_port *p, const uint8_t *ip, size_t len,
		    const struct utcp_seg *seg, const uint8_t *src_mac);
/** xsk_listen_established() - passive @c is established: accept it. */
void xsk_listen_established(struct xsk_conn *c);

/* ----------------------------------------------------- entry points --- */

/**
 * xiw_xsk_connect() - active open over xsk towards @dst (IPv4 only).
 * Return: 0 (as xiw_llp_connect), -EOPNOTSUPP if xsk cannot serve this
 * destination (no XDP program on the route's interface, IPv6, ...: the
 * caller uses ksock), other -errno.
 */
int xiw_xsk_connect(const struct sockaddr *src, const struct sockaddr *dst,
		    const struct xiw_llp_cb *cb, void *arg, struct xiw_llp **out);

/**
 * xiw_xsk_listen() - register @port (host order) for SYNs on every
 * interface with the XDP program that @addr covers (INADDR_ANY: all).
 * Return: a listener (NULL: no interface qualifies; not an error).
 */
struct xsk_listener *xiw_xsk_listen(const struct sockaddr *addr, uint16_t port,
				    xiw_llp_accept_fn fn, void *arg);
void xiw_xsk_listener_close(struct xsk_listener *ls);

#endif /* XIW_XSK_H */
