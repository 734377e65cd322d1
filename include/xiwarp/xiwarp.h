/* SPDX-License-Identifier: MIT */
/*
 * xiwarp engine API (libxiwarp.so.1).
 *
 * The engine is a software iWARP RNIC: RDMAP (RFC 5040) / DDP (RFC 5041) /
 * MPA (RFC 5044, RFC 6581) over a kernel TCP socket. The verbs and rdma_cm
 * drop-in libraries (user/verbs/) are thin shells around this API.
 *
 * Object model: every engine object embeds the rdma-core v44 verbs object as
 * its FIRST member (`ibv`), so the shims hand `&obj->ibv` to applications and
 * get the engine object back with the xiw_*_from_ibv() helpers. The engine
 * fills the embedded verbs fields itself (context, handle, lkey/rkey, qp_num,
 * state, ...).
 *
 * Threads: all functions are thread-safe unless noted. Engine callbacks
 * (struct xiw_cm_event handlers) run on the engine's progress thread and
 * must not block.
 *
 * Errors: functions returning int return 0 or a NEGATIVE errno. Functions
 * returning a pointer return NULL and set errno. Conversion to the verbs
 * convention (positive errno / NULL+errno / -1+errno) is the shims' job.
 */
#ifndef XIWARP_XIWARP_H
#define XIWARP_XIWARP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits advertised by every xiwarp device (ibv_query_device) ---- */
#define XIW_MAX_QP_WR      4096	/* SQ/RQ depth */
#define XIW_MAX_CQE        (1 << 20)	/* libfabric rxm asks for 262144 */
#define XIW_MAX_SGE        8
#define XIW_MAX_INLINE     256	/* bytes of inline send data */
#define XIW_MAX_ORD        32	/* outstanding RDMA READs we may issue */
#define XIW_MAX_IRD        32	/* inbound RDMA READs we accept */
#define XIW_MAX_MR_SIZE    (1ULL << 40)
#define XIW_MAX_PRIV_DATA  255	/* rdma_conn_param.private_data_len is u8 */

/**
 * struct xiw_device - one iWARP device per network interface with an address.
 * @name:    "xiw_<ifname>" (ibv_get_device_name()).
 * @ifname:  the interface, e.g. "veth0", "lo".
 * @ifindex: kernel ifindex.
 * @mac:     hardware address (all zero for lo); GID bytes 0-5.
 * @mtu:     interface MTU in bytes.
 * @node_guid: EUI-64 derived from @mac, network byte order.
 */
struct xiw_device {
	char name[IF_NAMESIZE + 8];
	char ifname[IF_NAMESIZE];
	int ifindex;
	uint8_t mac[6];
	uint32_t mtu;
	uint64_t node_guid;
};

/**
 * xiw_device_list() - enumerate devices (rescans interfaces on each call).
 * @devs: out: array of device pointers, valid until process exit.
 *
 * Return: number of devices (>= 0), or -errno.
 */
int xiw_device_list(struct xiw_device ***devs);

/**
 * xiw_device_by_addr() - the device owning a local IPv4/IPv6 address.
 * @sa: a local address (port ignored). INADDR_ANY / in6addr_any and
 *      127.0.0.0/8 / ::1 map to the loopback device.
 *
 * Return: the device, or NULL with errno = ENODEV.
 */
struct xiw_device *xiw_device_by_addr(const struct sockaddr *sa);

/** xiw_device_query() - fill @attr (IBV_NODE_RNIC limits above). */
void xiw_device_query(const struct xiw_device *dev, struct ibv_device_attr *attr);

/** xiw_port_query() - port 1: ACTIVE while the interface runs (else
 *  DOWN), link layer Ethernet, MTU from the interface now. */
void xiw_port_query(const struct xiw_device *dev, struct ibv_port_attr *attr);
/**
 * xiw_device_link() - is @dev's interface running (IFF_RUNNING)?
 * @mtu: out (may be NULL): its MTU now.
 */
bool xiw_device_link(const struct xiw_device *dev, uint32_t *mtu);
/**
 * xiw_port_watch() - report port 1 of @dev on @ctx from now on:
 * IBV_EVENT_PORT_ACTIVE at once if the interface runs and whenever it
 * comes back, IBV_EVENT_PORT_ERR when it stops (rtnetlink link messages,
 * read on the progress thread; events go to the async handler).
 * Return: 0 or -ENOMEM (without rtnetlink only the event at open comes).
 */
int xiw_port_watch(struct ibv_context *ctx, const struct xiw_device *dev);
/** xiw_port_unwatch() - stop reporting @ctx's port (before freeing it). */
void xiw_port_unwatch(struct ibv_context *ctx);

/** xiw_device_gid() - GID index 0: MAC in bytes 0-5, rest zero. */
void xiw_device_gid(const struct xiw_device *dev, union ibv_gid *gid);

/* ---------------------------------------------------------------- PD --- */

struct xiw_pd {
	struct ibv_pd ibv;
	struct xiw_device *dev;
};

/** xiw_pd_alloc() - Return: PD or NULL+errno (ENOMEM). */
struct xiw_pd *xiw_pd_alloc(struct ibv_context *ctx, struct xiw_device *dev);
/** xiw_pd_free() - Return: 0, or -EBUSY while MRs/QPs still use it. */
int xiw_pd_free(struct xiw_pd *pd);

/* ---------------------------------------------------------------- MR --- */

/**
 * struct xiw_mr - a registered memory region.
 * STag (lkey == rkey) = (index << 8) | key, index into the engine's STag
 * table, key an 8-bit value that changes on every reuse of the index.
 * @iova: the address remote peers use for TO (RFC 5040 tagged offset);
 *        TO t maps to local address addr + (t - iova).
 */
struct xiw_mr {
	struct ibv_mr ibv;
	struct xiw_pd *pd;
	uint64_t iova;
	int access;		/* IBV_ACCESS_* */
	uint32_t mw_bound;	/* memory windows bound to it (dereg: EBUSY) */
	struct xiw_mr *parent;	/* a memory window's range: its MR */
	uint8_t mw_type;	/* a window's IBV_MW_TYPE_1/2; 0: an MR */
};

/**
 * struct xiw_mw - a memory window: its own STag (ibv.rkey) whose table
 * entry is @win, a range of an MR once bound. Type 2: bound by
 * IBV_WR_BIND_MW while unbound, invalid again after IBV_WR_LOCAL_INV or a
 * peer's SEND with Invalidate. Type 1: bound by ibv_bind_mw(3) (a bind WR
 * too), rebound in place, unbound by a zero-length bind, never
 * invalidated (IB: invalidation is for type 2 windows and MRs).
 */
struct xiw_mw {
	struct ibv_mw ibv;
	struct xiw_mr win;
};

/** xiw_mw_alloc() - type 1 or 2. Return: MW or NULL+errno (EINVAL). */
struct xiw_mw *xiw_mw_alloc(struct xiw_pd *pd, enum ibv_mw_type type);
/** xiw_mw_dealloc() - Return: 0 or -EINVAL. */
int xiw_mw_dealloc(struct xiw_mw *mw);
static inline struct xiw_mw *xiw_mw_from_ibv(struct ibv_mw *m) { return (struct xiw_mw *)m; }

/**
 * xiw_mr_reg() - register [addr, addr+len) with remote address @iova.
 * Return: MR, or NULL+errno (EINVAL bad flags/length, ENOMEM STag table full).
 */
struct xiw_mr *xiw_mr_reg(struct xiw_pd *pd, void *addr, size_t len,
			  uint64_t iova, int access);
/** xiw_mr_dereg() - Return: 0 or -errno. The STag is invalid afterwards. */
int xiw_mr_dereg(struct xiw_mr *mr);
/**
 * xiw_mr_rereg() - ibv_rereg_mr(3) in place: IBV_REREG_MR_CHANGE_* @flags
 * select new translation (@addr, @len; iova = @addr), PD, access. The
 * STag gets a new key (the old one stops working). Return: 0 or -EINVAL.
 */
int xiw_mr_rereg(struct xiw_mr *mr, int flags, struct xiw_pd *pd, void *addr,
		 size_t len, int access);

struct xiw_cq;	/* opaque; starts with `struct ibv_cq ibv` */
struct xiw_qp;	/* opaque; starts with `struct ibv_qp ibv` */
struct xiw_srq;	/* opaque; starts with `struct ibv_srq ibv` */

/* --------------------------------------------------------------- SRQ --- */

/**
 * xiw_srq_create() - shared receive queue of attr->attr.max_wr WRs (values
 * enforced written back); srq_limit > 0 arms IBV_EVENT_SRQ_LIMIT_REACHED.
 * Return: SRQ or NULL+errno (EINVAL, ENOMEM).
 */
struct xiw_srq *xiw_srq_create(struct xiw_pd *pd, struct ibv_srq_init_attr *attr);
/** xiw_srq_destroy() - Return: 0, or -EBUSY while a QP uses it. */
int xiw_srq_destroy(struct xiw_srq *srq);
/** xiw_srq_modify() - IBV_SRQ_MAX_WR (resize, queued WRs kept) and/or
 *  IBV_SRQ_LIMIT. Return: 0, -EINVAL, -ENOMEM. */
int xiw_srq_modify(struct xiw_srq *srq, struct ibv_srq_attr *attr, int mask);
/** xiw_srq_query() - max_wr, max_sge, srq_limit. Return: 0. */
int xiw_srq_query(struct xiw_srq *srq, struct ibv_srq_attr *attr);
/**
 * xiw_post_srq_recv() - post WRs to @srq (resumes QPs waiting for one).
 * Return: 0, or -ENOMEM / -EINVAL with *bad the first WR not posted.
 */
int xiw_post_srq_recv(struct xiw_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad);
static inline struct xiw_srq *xiw_srq_from_ibv(struct ibv_srq *s) { return (struct xiw_srq *)s; }

/* ------------------------------------------------- completion channel --- */

/**
 * struct xiw_cchan - completion channel. ibv.fd is the read end of a pipe:
 * the engine writes one `struct xiw_cq *` (8 bytes) per CQ event, so the fd
 * is pollable, honours O_NONBLOCK (EAGAIN) and EINTR like any pipe.
 */
struct xiw_cchan {
	struct ibv_comp_channel ibv;
	int wfd;
};

struct xiw_cchan *xiw_cchan_create(struct ibv_context *ctx);
/** Return: 0, or -EBUSY while a CQ still uses it. */
int xiw_cchan_destroy(struct xiw_cchan *ch);
/**
 * xiw_cchan_get_event() - read one event from the channel fd (blocking
 * unless the app set O_NONBLOCK on ch->ibv.fd).
 * Return: 0 and *cq, or -EAGAIN / -EINTR / -errno.
 */
int xiw_cchan_get_event(struct xiw_cchan *ch, struct xiw_cq **cq);

/* ---------------------------------------------------------------- CQ --- */

struct xiw_cq;	/* opaque; starts with `struct ibv_cq ibv` */

/**
 * xiw_cq_create() - a CQ of at least @cqe entries (rounded up to a power of
 * two, capped at XIW_MAX_CQE); ibv.cqe is set to the real size.
 * Return: CQ or NULL+errno (EINVAL cqe < 1 or > XIW_MAX_CQE).
 */
struct xiw_cq *xiw_cq_create(struct ibv_context *ctx, int cqe,
			     void *cq_context, struct xiw_cchan *ch);
/**
 * xiw_cq_destroy() - Return: 0, or -EBUSY while a QP still uses it or a
 * thread waits in xiw_cq_wait() on it.
 */
int xiw_cq_destroy(struct xiw_cq *cq);
/**
 * xiw_cq_poll() - take up to @n WCs, oldest first; the slots it frees
 * resume sends, receives and flushes that wait for one.
 * Return: number of WCs written to @wc (0..n).
 */
int xiw_cq_poll(struct xiw_cq *cq, int n, struct ibv_wc *wc);
/**
 * xiw_cq_req_notify() - arm the CQ: the next CQE (solicited-only: the next
 * solicited or error CQE) writes one event to the channel. Return: 0/-errno.
 */
int xiw_cq_req_notify(struct xiw_cq *cq, int solicited_only);
/**
 * xiw_cq_resize() - ibv_resize_cq(3): at least @cqe entries (power of
 * two), queued WCs kept. Return: 0, -EINVAL (too small for what is
 * queued/reserved, or out of range), -ENOMEM.
 */
int xiw_cq_resize(struct xiw_cq *cq, int cqe);
/** xiw_cq_ack_events() - account @n events returned by the channel. */
void xiw_cq_ack_events(struct xiw_cq *cq, unsigned int n);

/**
 * xiw_cq_wait() - adaptive completion wait (seed 001, "Efficient event
 * completion"): reap at least @nmin completions with at most one sleep.
 * @cq:         the CQ (any CQ; a completion channel is neither needed nor
 *              used: xiw_cq_req_notify() arming and channel events are
 *              not affected).
 * @nmin:       CQEs to wait for, 1..cq size (ibv.cqe). The seed's choice is
 *              the number of completions the caller still expects.
 * @timeout_ms: milliseconds to wait for @nmin CQEs; < 0: no limit, 0: do
 *              not sleep (and do not spin).
 * @wc:         out: array of @nwc entries.
 * @nwc:        capacity of @wc (>= 1); may be smaller than @nmin.
 *
 * Looks once; if fewer than @nmin CQEs are queued, spins up to
 * XIW_CQ_SPIN_US microseconds (environment, read once; default 0: no spin)
 * and then sleeps on a futex the CQ wakes once, when the queued count
 * reaches @nmin (not once per CQE), or until the timeout; then drains up
 * to @nwc CQEs through xiw_cq_poll() without sleeping again. Error and
 * flush CQEs (IBV_WC_WR_FLUSH_ERR of a QP in ERROR) count like any other.
 * "Queued" means pushed and not yet polled: CQEs another thread polls
 * meanwhile do not count. A signal does not end the wait.
 *
 * One waiter per CQ: a second thread calling xiw_cq_wait() on the same CQ
 * while one waits gets -EBUSY (xiw_cq_poll() from other threads stays
 * allowed). xiw_cq_destroy() returns -EBUSY while a thread is inside
 * xiw_cq_wait() on the CQ.
 *
 * Return: number of WCs written to @wc, >= min(@nmin, @nwc) unless the
 * timeout expired: then a short count (what was queued, up to @nwc), or
 * -ETIMEDOUT if nothing was queued.
 * -EINVAL (@nmin < 1 or > cq size, @nwc < 1, @wc NULL), -EBUSY (another
 * thread waits on @cq).
 */
int xiw_cq_wait(struct xiw_cq *cq, int nmin, int timeout_ms,
		struct ibv_wc *wc, int nwc);

/* ---------------------------------------------------------------- QP --- */

struct xiw_qp;	/* opaque; starts with `struct ibv_qp ibv` */

/**
 * xiw_qp_create() - an RC QP (iWARP has no UD). State RESET. With
 * @attr->srq its receives come from that SRQ (max_recv_wr is ignored,
 * xiw_post_recv() refuses).
 * Caps are validated against the limits above and written back to
 * @attr->cap (actual values).
 * Return: QP or NULL+errno (EINVAL bad type/caps, ENOMEM).
 */
struct xiw_qp *xiw_qp_create(struct xiw_pd *pd, struct ibv_qp_init_attr *attr);
/**
 * xiw_qp_destroy() - disconnect (abortive if needed), flush, free.
 * Return: 0 or -errno.
 */
int xiw_qp_destroy(struct xiw_qp *qp);
/**
 * xiw_qp_modify() - verbs QP state machine (RESET->INIT->RTR->RTS, any->ERR
 * flushes every outstanding WR with IBV_WC_WR_FLUSH_ERR, ERR->RESET).
 * For iWARP, the CM moves a connected QP to RTS; apps only move it to
 * INIT/ERR/RESET. Honours max_rd_atomic (ORD) / max_dest_rd_atomic (IRD).
 * Return: 0 or -EINVAL (illegal transition / mask).
 */
int xiw_qp_modify(struct xiw_qp *qp, struct ibv_qp_attr *attr, int mask);
int xiw_qp_query(struct xiw_qp *qp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init);
/**
 * xiw_qp_lookup() - the QP numbered @qpn of context @ctx (what the kernel's
 * iw_cm finds with iw_get_qp(): rdma_connect/rdma_accept with no QP on the
 * id and conn_param->qp_num set, e.g. `rping -q`). No reference is taken:
 * the application owns the QP and must not destroy it meanwhile.
 * Return: the QP, or NULL (no such QP, or one of another context).
 */
struct xiw_qp *xiw_qp_lookup(struct ibv_context *ctx, uint32_t qpn);
/**
 * xiw_post_send() / xiw_post_recv() - post a WR chain. Never blocks.
 * The CQs are not checked: one smaller than the queue is allowed. A WR
 * starts (a send goes out, a message lands in a receive) only with a CQE
 * slot reserved for its WC, and flush WCs wait for room, so a CQ never
 * overflows; while it is full, traffic waits (TCP flow control holds the
 * peer back) until a poll frees slots (seed 002 credits). In ERROR, WRs
 * complete with IBV_WC_WR_FLUSH_ERR as the CQ has room, and until then
 * still occupy the queue.
 * Return: 0, or -errno with *bad the first WR not posted:
 * -ENOMEM queue full, -EINVAL bad WR (opcode, num_sge, inline too long),
 * -EINVAL QP state does not allow posting.
 */
int xiw_post_send(struct xiw_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad);
int xiw_post_recv(struct xiw_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad);

static inline struct xiw_qp *xiw_qp_from_ibv(struct ibv_qp *q) { return (struct xiw_qp *)q; }
static inline struct xiw_cq *xiw_cq_from_ibv(struct ibv_cq *c) { return (struct xiw_cq *)c; }
static inline struct xiw_pd *xiw_pd_from_ibv(struct ibv_pd *p) { return (struct xiw_pd *)p; }
static inline struct xiw_mr *xiw_mr_from_ibv(struct ibv_mr *m) { return (struct xiw_mr *)m; }
static inline struct xiw_cchan *xiw_cchan_from_ibv(struct ibv_comp_channel *c) { return (struct xiw_cchan *)c; }

/* ---------------------------------------------------------------- CM --- */

enum xiw_cm_event_type {
	XIW_CM_CONNECT_REQUEST,	/* passive: MPA request received; ev->conn set */
	XIW_CM_ESTABLISHED,	/* both: QP is RTS, data may flow */
	XIW_CM_REJECTED,	/* active: peer sent an MPA reject */
	XIW_CM_UNREACHABLE,	/* active: TCP connect failed / MPA timeout */
	XIW_CM_CONNECT_ERROR,	/* either: protocol error during MPA/RTR */
	XIW_CM_DISCONNECTED,	/* either: graceful close, reset, or QP error */
};

struct xiw_cm_conn;	/* one TCP connection from setup to close */
struct xiw_cm_listener;

/**
 * struct xiw_cm_event - what a CM handler receives. Pointers are valid only
 * during the callback (copy private data out).
 * @conn:   the connection (CONNECT_REQUEST: the new pending one to accept or
 *          reject; other events: the connection they concern).
 * @status: 0, or -errno (UNREACHABLE: -ECONNREFUSED / -ETIMEDOUT / ...).
 * @ird, @ord: the peer's values from the MPA v2 header (v1 peer: 1/1).
 */
struct xiw_cm_event {
	enum xiw_cm_event_type type;
	struct xiw_cm_conn *conn;
	int status;
	const void *private_data;
	uint8_t private_data_len;
	uint8_t ird, ord;
	struct sockaddr_storage local, peer;
};

/** Runs on the progress thread; must not block or call back into CM for @conn's destruction. */
typedef void (*xiw_cm_handler)(void *arg, const struct xiw_cm_event *ev);

/**
 * xiw_cm_listen() - listen for MPA connections on @addr (port may be 0).
 * @bound: out: the address actually bound (port filled in). May be NULL.
 * Uses SO_REUSEADDR so a port can be re-listened right after destroy.
 * Return: 0 or -errno (-EADDRINUSE, -EADDRNOTAVAIL, ...).
 */
int xiw_cm_listen(const struct sockaddr *addr, int backlog, xiw_cm_handler h,
		  void *arg, struct xiw_cm_listener **out,
		  struct sockaddr_storage *bound);
/**
 * xiw_cm_adopt() - handle an already accepted TCP connection @fd whose
 * peer sends an MPA request like one of a listener's (LD_PRELOAD sockets
 * layer). *@out: destroy with xiw_cm_listener_destroy() after the
 * request is accepted/rejected. Return: 0 (@fd is the engine's) or -errno.
 */
int xiw_cm_adopt(int fd, xiw_cm_handler h, void *arg,
		 struct xiw_cm_listener **out);
/** xiw_cm_listener_destroy() - stop listening; pending requests are rejected. */
void xiw_cm_listener_destroy(struct xiw_cm_listener *l);

/**
 * xiw_cm_connect() - active open: TCP connect to @dst (from @src if
 * non-NULL), send the MPA request with @pdata, negotiate, do the RTR if
 * peer-to-peer mode, then move @qp to RTS and report XIW_CM_ESTABLISHED.
 * Failures report REJECTED / UNREACHABLE / CONNECT_ERROR.
 * @ird, @ord: what this side offers (clamped to XIW_MAX_IRD/ORD).
 * Return: 0 if the attempt started, or -errno.
 */
int xiw_cm_connect(struct xiw_qp *qp, const struct sockaddr *src,
		   const struct sockaddr *dst, const void *pdata, uint8_t plen,
		   uint8_t ird, uint8_t ord, xiw_cm_handler h, void *arg);
/**
 * xiw_cm_accept() - accept a CONNECT_REQUEST: bind @qp, send the MPA reply,
 * complete RTR; XIW_CM_ESTABLISHED follows (delivered to @h).
 * Return: 0 or -errno (-EINVAL conn not pending / QP not INIT).
 */
int xiw_cm_accept(struct xiw_cm_conn *conn, struct xiw_qp *qp,
		  const void *pdata, uint8_t plen, uint8_t ird, uint8_t ord,
		  xiw_cm_handler h, void *arg);
/** xiw_cm_reject() - send an MPA reject with @pdata and close. Return: 0/-errno. */
int xiw_cm_reject(struct xiw_cm_conn *conn, const void *pdata, uint8_t plen);
/**
 * xiw_cm_disconnect() - graceful close of @qp's connection (RFC 5040 §6.1:
 * QP to ERROR/flush once the peer closes too); XIW_CM_DISCONNECTED follows
 * exactly once per connection.
 */
int xiw_cm_disconnect(struct xiw_qp *qp);
/** xiw_cm_conn_release() - drop a conn that was never accepted/rejected. */
void xiw_cm_conn_release(struct xiw_cm_conn *conn);

/* ------------------------------------------------- registered memory --- */

/**
 * xiw_alloc() - @len bytes (page-aligned, zeroed) from the engine's AF_XDP
 * umem arena when there is room, else from the heap. Memory registered as
 * an MR from this arena is transmitted by the xsk transport straight from
 * the umem (payload descriptors, no copy; seed 002); elsewhere it behaves
 * like any memory. Size of the arena: XIW_XSK_ARENA_MB (default 64).
 * Return: the memory, or NULL (errno ENOMEM / EINVAL for @len 0).
 */
void *xiw_alloc(size_t len);
/** xiw_free() - release memory from xiw_alloc() (NULL: no-op). */
void xiw_free(void *p);
/** xiw_alloc_is_umem() - [@p, @p+@len) lies in the umem arena. */
bool xiw_alloc_is_umem(const void *p, size_t len);

/* ---------------------------------------------------- async events --- */

/**
 * xiw_async_fn - receives every asynchronous event of the engine's objects
 * (IBV_EVENT_QP_FATAL when a QP's stream fails: TERMINATE sent or
 * received, reset, LLP error; IBV_EVENT_QP_LAST_WQE_REACHED for a QP on
 * an SRQ entering ERROR; IBV_EVENT_SRQ_LIMIT_REACHED; IBV_EVENT_CQ_ERR;
 * IBV_EVENT_PORT_ACTIVE). Runs in the engine thread that noticed the
 * event: must not block.
 */
typedef void (*xiw_async_fn)(struct ibv_context *ctx,
			     const struct ibv_async_event *ev);
/** xiw_async_set_handler() - install the handler (the verbs drop-in). */
void xiw_async_set_handler(xiw_async_fn fn);
/** xiw_async_port() - report a port event on @ctx (e.g. at open). */
void xiw_async_port(struct ibv_context *ctx, int port, enum ibv_event_type type);

/* ---------------------------------------------------------- logging --- */

/** xiw_log() - engine log; XIW_LOG=error|warn|info|debug (default warn) on stderr. */
enum xiw_log_level { XIW_LOG_ERROR, XIW_LOG_WARN, XIW_LOG_INFO, XIW_LOG_DEBUG };
void xiw_log(enum xiw_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif /* XIWARP_XIWARP_H */
