/* SPDX-License-Identifier: MIT */
/*
 * rsockets (stream sockets over RDMA) inside librdmacm: internal objects
 * shared by user/sockets/xrs_*.c.
 *
 * Wire: rdma-core 44's rsockets on iWARP (include/xiwarp/wire/rsocket.h),
 * so Debian's rstream/riostream/librspreload and real rsockets peers work,
 * plus the seed-004 zero-copy extension when both peers offer it
 * (xrs_zc.c). Built on the rdma_cm and verbs API of our own libraries;
 * the one engine detail used is the completion channel's write fd
 * (struct xiw_cchan.wfd, see xrs_ep.c).
 *
 * Every rsocket is a real pollable fd: rs->index is one end (A) of an
 * AF_UNIX socketpair; the other end (B) is where the CQ's completion
 * channel writes its 8-byte events (and where we write our own 8-byte
 * "still readable" markers). A is readable when something may have
 * changed; xrs_poll.c turns that into exact readiness.
 *
 * Locking (as rdma-core): slock serialises senders, rlock receivers,
 * cq_lock polling the CQ and all state it changes, wait_lock the one
 * thread that sleeps on A. Order: slock/rlock -> cq_lock.
 */
#ifndef XRS_INT_H
#define XRS_INT_H

#include <pthread.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include "xrs_wire.h"
#include "xrs_zc_policy.h"
#include "xrs_priv.h"

#define XRS_PFX "rsocket: "

/* rdma-core 44 defaults and limits (rsocket.c) */
#define XRS_OLAP_START_SIZE	2048
#define XRS_MAX_TRANSFER	65536
/*
 * xiwarp: default bytes per data transfer (XIW_RS_MAX_XFER). A WRITE of
 * 64 KB does not fit one MPA FPDU (ULPDU <= 65535 minus headers) and
 * leaves a short second FPDU (a short TCP segment) behind every transfer;
 * measured on veth, iperf3 -l 128K: 64 KB transfers 9.1-9.5 Gbit/s,
 * 48 KB 13.3-23.7 (same session, interleaved).
 */
#define XRS_DEF_XFER		(48u << 10)
#define XRS_SNDLOWAT		2048
#define XRS_QP_MIN_SIZE		16
#define XRS_QP_MAX_SIZE		0xFFFE
#define XRS_QP_CTRL_SIZE	4	/* control messages in flight */
#define XRS_DEF_INLINE		64
#define XRS_DEF_SQSIZE		384
#define XRS_DEF_RQSIZE		384
#define XRS_DEF_MEM		(1 << 17)
#define XRS_DEF_WMEM		(1 << 17)
#define XRS_CONN_RETRIES	6

/* xiwarp: receive WRs posted beyond the credits we grant (control
 * messages are not credited: rdma-core leans on IB's RNR retry, iWARP has
 * none), and SQ slots for extension messages and RDMA READs. */
#define XRS_RQ_EXTRA		16
#define XRS_XZ_SQ_SLOTS		8

/* rdma-core's rsocket states: passive, connecting, connected, closed */
enum xrs_state {
	xrs_init = 0,
	xrs_bound = 0x0001,
	xrs_listening = 0x0002,
	xrs_opening = 0x0004,
	xrs_resolving_addr = xrs_opening | 0x0010,
	xrs_resolving_route = xrs_opening | 0x0020,
	xrs_connecting = xrs_opening | 0x0040,
	xrs_accepting = xrs_opening | 0x0080,
	xrs_connected = 0x0100,
	xrs_writable = 0x0200,
	xrs_readable = 0x0400,
	xrs_connect_rdwr = xrs_connected | xrs_readable | xrs_writable,
	xrs_connect_error = 0x0800,
	xrs_disconnected = 0x1000,
	xrs_error = 0x2000,
};

/* send WR ids: what a send completion gives back */
enum xrs_wr_kind {
	XRS_WR_DATA = 1,	/* data WRITE: low bits = bytes of sbuf */
	XRS_WR_DATA_MSG,	/* the 4-byte SEND after it */
	XRS_WR_CTRL,		/* credit update WRITE/SEND, CTRL message */
	XRS_WR_IOMAP,		/* iomap entry WRITE: low bits = sbuf bytes */
	XRS_WR_IOMAP_MSG,
	XRS_WR_DIRECT,		/* riowrite WRITE: low bits = sbuf bytes */
	XRS_WR_XZ_MSG,		/* extension message */
	XRS_WR_XZ_READ,		/* sink: RDMA READ of a SrcAvail buffer */
	XRS_WR_XZ_WRITE,	/* source: WRITE into a SinkAvail buffer */
	XRS_WR_DATA_USER,	/* data WRITE from the caller's buffer (xrs_direct.c) */
};
#define XRS_WR_RECV	(1ULL << 63)
#define xrs_wr_id(kind, low) (((uint64_t)(kind) << 32) | (uint32_t)(low))
#define xrs_wr_kind(id)	((unsigned int)(((id) >> 32) & 0xFF))
#define xrs_wr_low(id)	((uint32_t)(id))

/**
 * struct xrs_rmsg - a stream-ordered message waiting for the reader.
 * @op:   XRS_OP_DATA, XRS_OP_XZ_SRCAVAIL or XRS_RMSG_WRCOMPL (xrs_zc.c).
 * @data: DATA: bytes still unread in rbuf; SRCAVAIL: bytes not yet read;
 *        WRCOMPL: bytes written into the reader's buffer.
 * @addr, @stag, @done, @id: SRCAVAIL: the source buffer, bytes already
 *        read, transfer id.
 */
struct xrs_rmsg {
	unsigned int op;
	uint32_t data;
	uint16_t id;
	bool credit;		/* consuming it returns a credit (rseq_no) */
	uint64_t addr;
	uint32_t stag;
	uint32_t done;
	int64_t t_ns;		/* SRCAVAIL: when it arrived */
	uint8_t *stash;		/* STASH: the bytes, read from @done on */
};
#define XRS_RMSG_WRCOMPL 8	/* rmsg op for a WRCOMPL (not a wire op) */
#define XRS_RMSG_STASH	9	/* a SrcAvail read into library memory */

struct xrs_iomap_mr {
	uint64_t offset;
	struct ibv_mr *mr;
	struct xrs_iomap_mr *next;
	int index;		/* slot in the peer's iomap array, -1: local */
	int queued;		/* written to the peer yet? */
};

/**
 * struct xrs_zc - zero-copy extension state (xrs_zc.c).
 * Source fields are the sender's (slock), sink fields the reader's
 * (rlock); what completions change is under cq_lock.
 */
struct xrs_zc {
	bool on;			/* negotiated */
	struct xrs_zpol pol;		/* thresholds (xrs_zc_policy.h) */
	int inflight;			/* extension WRs not yet completed */
	/* source */
	uint32_t sent_msgs;		/* stream-ordered messages sent */
	uint16_t src_id;		/* current SrcAvail */
	int src_state;			/* XRS_ZS_* */
	uint32_t src_read;		/* bytes the sink reported read */
	uint64_t bcopy_left;		/* after a SendSm: copy this much */
	bool sink_pending;		/* a SinkAvail arrived, not yet checked */
	uint16_t sink_id;
	uint32_t sink_seq, sink_stag, sink_len;
	uint64_t sink_addr;
	uint32_t wr_seq, wr_done;	/* WRITEs into SinkAvail buffers */
	bool wr_err;
	/* sink */
	uint32_t recv_msgs;		/* stream-ordered messages received */
	uint16_t my_sink_id;
	int rd_state;			/* RDMA READ of a SrcAvail buffer */
	int rx_srcavail;		/* SrcAvails queued, not read or stashed
					 * (CQ side adds, reader takes: xrs_cnt_*) */
	struct xrs_p_stats st;		/* xrs_p_stats(), XIW_RS_STATS */
};

enum { XRS_ZS_IDLE, XRS_ZS_WAIT, XRS_ZS_RDCOMPL, XRS_ZS_SENDSM };
enum { XRS_ZW_IDLE, XRS_ZW_BUSY, XRS_ZW_DONE, XRS_ZW_ERR };

/** struct xrs - one stream rsocket. */
struct xrs {
	int index;		/* the fd: socketpair end A */
	int bfd;		/* end B: event writer side */
	int aliases;		/* fds naming this socket (preload dup) */
	pthread_mutex_t slock, rlock, cq_lock, wait_lock, map_lock;

	struct rdma_cm_id *cm_id;
	int state;
	int err;
	int fd_flags;		/* O_NONBLOCK as the application set it */
	bool msg_send;		/* iWARP: data message = 4-byte SEND */
	bool swap;		/* the peer's byte order differs */
	bool pollable;		/* keep A's readability exact (preload) */
	uint64_t so_opts, tcp_opts, ipv6_opts;
	unsigned int keepalive_time;
	int rcvtimeo_ms, sndtimeo_ms;	/* 0: none */
	bool peer_closed;		/* the peer sent DISCONNECT/SHUTDOWN */
	bool disc_sent, disc_done;	/* our DISCONNECT: posted, its WR completed */
	bool passive;			/* accepted (MPA responder) */
	bool rx_any;			/* a message arrived from the peer */
	bool linger_on;			/* SO_LINGER set */
	int linger_s;
	int retries;

	/* sizes */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size, sq_inline;
	uint32_t rq_posted;		/* receive WRs we keep posted */
	int target_iomap_size;

	/* verbs objects */
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_mr *smr, *rmr, *tmr, *mmr;
	uint8_t *sbuf, *rbuf, *msgbuf;
	void *target_buf;
	volatile struct xrs_sge *target_sgl;
	volatile struct xrs_iomap *target_iomap;

	/* send side */
	uint16_t sseq_no, sseq_comp;
	int sqe_avail;
	uint32_t sbuf_bytes_avail;
	uint32_t sbuf_pos;		/* next free byte of sbuf */
	int target_sge;
	unsigned int ctrl_seqno, ctrl_max_seqno;
	struct xrs_sge remote_sgl;	/* addr, key, length = entries */
	int remote_sge;
	struct xrs_sge remote_iomap;	/* addr, key, length = entries */
	uint8_t ctrl_buf[XRS_QP_CTRL_SIZE][sizeof(struct xrs_sge)];

	/* receive side */
	uint16_t rseq_no, rseq_comp;
	/*
	 * @rbuf_bytes_avail (not yet offered as credit) and @rbuf_unread
	 * (arrived, not yet read) change under two locks: the reader gives
	 * bytes back under rlock while the CQ side (cq_lock, any thread)
	 * offers or fills them; so do @sqe_avail, @sbuf_bytes_avail (the
	 * sender takes under slock, completions give back) and the ctrl
	 * sequence numbers. Only through xrs_cnt_add/sub/get: a lost update
	 * offered the same bytes twice (the peer overwrote data not yet
	 * read) or never again (a hang), test_races in ~1 of 200 runs.
	 */
	uint32_t rbuf_bytes_avail, rbuf_free_offset, rbuf_offset;
	uint32_t rbuf_unread;		/* bytes in rbuf messages not yet read */
	uint32_t msg_index;		/* next receive buffer to post */
	struct xrs_rmsg *rmsg;
	uint32_t rmsg_size, rmsg_head, rmsg_tail;

	/* iomap (riomap) */
	struct xrs_iomap_mr *iomap_list;	/* ours, sent or queued */
	struct xrs_iomap_mr *remote_iomappings;	/* slots of the peer's array */
	bool iomap_pending;

	/* CQ events */
	bool cq_armed;			/* atomic: set under cq_lock, cleared under wait_lock */
	bool token;			/* we put a marker into A */
	unsigned int unack_cqe;

	struct xrs_zc zc;

	/* direct data WRITEs (xrs_direct.c): posted (slock), completed (cq_lock) */
	uint32_t direct_seq, direct_done;
};

/*
 * Counters that two lock domains change (see struct xrs): read-modify-
 * write them only through these. Release/acquire: bytes given back (a
 * receive buffer region copied out, a staging region sent) are done with
 * before the other side can hand them out again.
 */
#define xrs_cnt_add(p, n)	((void)__atomic_fetch_add((p), (n), __ATOMIC_ACQ_REL))
#define xrs_cnt_sub(p, n)	((void)__atomic_fetch_sub((p), (n), __ATOMIC_ACQ_REL))
#define xrs_cnt_get(p)		__atomic_load_n((p), __ATOMIC_ACQUIRE)

/*
 * The socket's own fds (A, B) are used through the raw system calls: an
 * LD_PRELOAD that interposes read/write/poll/close (libxiwsock.so, whose
 * application fd *is* A) must not take our bookkeeping for application I/O.
 */
static inline ssize_t xrs_sys_read(int fd, void *buf, size_t n)
{
	return syscall(SYS_read, fd, buf, n);
}

static inline ssize_t xrs_sys_write(int fd, const void *buf, size_t n)
{
	return syscall(SYS_write, fd, buf, n);
}

static inline int xrs_sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

static inline int xrs_sys_poll1(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	struct timespec ts = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L };
	int n = (int)syscall(SYS_ppoll, &p, 1, timeout_ms < 0 ? NULL : &ts, NULL, 0);

	return n > 0 ? p.revents : n;
}

/* ------------------------------------------------------------ table --- */
struct xrs *xrs_lookup(int fd);
int xrs_table_set(int fd, struct xrs *rs);
void xrs_table_clear(int fd, struct xrs *rs);

/* ------------------------------------------------ socket (xrs_sock.c) --- */
struct xrs *xrs_alloc(const struct xrs *inherit);
void xrs_free(struct xrs *rs);
int xrs_do_connect(struct xrs *rs);
int xrs_accept_id(struct xrs *rs, struct rdma_cm_id *lid, int afd, int bfd);
int xrs_err(int err);

/* ----------------------------------------------- endpoint (xrs_ep.c) --- */
int xrs_create_ep(struct xrs *rs);
void xrs_free_ep(struct xrs *rs);
void xrs_format_conn(struct xrs *rs, struct xrs_conn_data *cd);
int xrs_save_conn(struct xrs *rs, const void *pd, size_t len);
int xrs_post_recv(struct xrs *rs);
int xrs_set_nonblocking(struct xrs *rs, int on);

/* ------------------------------------------------------ CQ (xrs_cq.c) --- */
typedef bool (*xrs_test_fn)(struct xrs *rs);
int xrs_process_cq(struct xrs *rs, bool nonblock, xrs_test_fn test);
int xrs_get_comp(struct xrs *rs, bool nonblock, xrs_test_fn test);
int xrs_get_comp_timeout(struct xrs *rs, bool nonblock, int timeout_ms,
			 xrs_test_fn test);
void xrs_update_credits(struct xrs *rs);
int xrs_post_msg(struct xrs *rs, uint32_t msg);
int xrs_post_write_msg(struct xrs *rs, struct ibv_sge *sgl, int nsge,
		       uint32_t msg, uint64_t wr_id, int flags,
		       uint64_t addr, uint32_t rkey);
int xrs_post_write(struct xrs *rs, struct ibv_sge *sgl, int nsge,
		   uint64_t wr_id, int flags, uint64_t addr, uint32_t rkey);
bool xrs_can_send(struct xrs *rs);
bool xrs_conn_can_send(struct xrs *rs);
bool xrs_have_rdata(struct xrs *rs);
bool xrs_conn_have_rdata(struct xrs *rs);
bool xrs_conn_all_sends_done(struct xrs *rs);
bool xrs_ctrl_avail(struct xrs *rs);
bool xrs_ctrl_avail_or_closed(struct xrs *rs);
void xrs_drain_events(struct xrs *rs);
bool xrs_nonblocking(struct xrs *rs, int flags);
int xrs_rmsg_push(struct xrs *rs, const struct xrs_rmsg *m);
void xrs_rmsg_consume(struct xrs *rs);
bool xrs_test_true(struct xrs *rs);

/* ------------------------------------------------ data (xrs_send.c) --- */
ssize_t xrs_sendv(struct xrs *rs, const struct iovec *iov, int iovcnt,
		  int flags);
ssize_t xrs_recvv(struct xrs *rs, const struct iovec *iov, int iovcnt,
		  int flags);
int xrs_send_iomaps(struct xrs *rs, int flags);
uint32_t xrs_sbuf_copy_in(struct xrs *rs, const struct iovec **iov,
			  size_t *off, uint32_t len, struct ibv_sge sgl[2],
			  int *nsge);

int xrs_write_data(struct xrs *rs, struct ibv_sge *sgl, int nsge,
		   uint32_t len, int flags, bool staged);

/* ----------------------------------------- direct WRITE (xrs_direct.c) --- */
/* smallest direct transfer: xiw_sockbench on veth, copy only, staged vs
 * direct: 1-2 KB writes no difference, 4 KB 4.0 -> 4.8 Gbit/s, 8 KB
 * 5.6 -> 8.5, 16 KB 8.8 -> 13.1 (medians of 3, interleaved) */
#define XRS_DIRECT_MIN	(4u << 10)
/** struct xrs_direct - one send call's registration of the caller's buffer. */
struct xrs_direct {
	struct ibv_mr *mr;
};
bool xrs_direct_usable(void);
ssize_t xrs_send_direct(struct xrs *rs, const struct iovec **iov, size_t *off,
			size_t left, struct xrs_direct *d);
void xrs_direct_finish(struct xrs *rs, struct xrs_direct *d);

/* ---------------------------------------------- zero copy (xrs_zc.c) --- */
void xrs_zc_init(struct xrs *rs, bool peer_xzc);
void xrs_zc_free(struct xrs *rs);
int xrs_zc_rx_msg(struct xrs *rs, const struct xrs_msg *m);
void xrs_zc_send_done(struct xrs *rs, const struct ibv_wc *wc);
void xrs_zc_bcopy_sent(struct xrs *rs, size_t n);
int64_t xrs_now_ns(void);
ssize_t xrs_zc_try_send(struct xrs *rs, const struct iovec **iov,
			size_t *off, size_t left, int flags, bool *used);
ssize_t xrs_zc_recv_srcavail(struct xrs *rs, struct xrs_rmsg *m,
			     const struct iovec **iov, size_t *off,
			     size_t left, int flags, bool peek);
ssize_t xrs_zc_try_sinkavail(struct xrs *rs, const struct iovec **iov,
			     size_t *off, size_t left, int flags);
void xrs_zc_shutdown(struct xrs *rs);
void xrs_zc_serve(struct xrs *rs, int64_t min_age_ns);
size_t xrs_zc_take_stash(struct xrs *rs, struct xrs_rmsg *m,
			 const struct iovec **iov, size_t *off, size_t left);
#define XRS_XZ_SERVE_NS 1000000	/* a SrcAvail no reader took for 1 ms */
bool xrs_zc_knob_on(void);

/* ------------------------------------------------- poll (xrs_poll.c) --- */
short xrs_revents(struct xrs *rs, short events);
void xrs_sync_token(struct xrs *rs);
void xrs_settle(struct xrs *rs, bool want_out);

/* ------------------------------------------------ knobs (xrs_sock.c) --- */
struct xrs_knobs {
	uint32_t spin_us;		/* XIW_RS_SPIN_US */
	int zcopy;			/* XIW_RS_ZCOPY: 0 off, 1 adaptive */
	uint32_t src_thresh;		/* XIW_RS_SRC_THRESH (0: adaptive start) */
	uint32_t sink_thresh;		/* XIW_RS_SINK_THRESH */
	bool adapt;			/* XIW_RS_ADAPT */
	bool zc_cost;			/* XIW_RS_ZC_COST */
	uint32_t linger_ms;		/* XIW_RS_LINGER_MS */
	uint32_t wmem, rmem;		/* XIW_RS_WMEM / XIW_RS_RMEM */
	int direct;			/* XIW_RS_DIRECT 0/1/2 (xrs_direct.c) */
	uint32_t max_xfer;		/* XIW_RS_MAX_XFER: bytes per data transfer */
};
const struct xrs_knobs *xrs_knobs(void);

#endif /* XRS_INT_H */
