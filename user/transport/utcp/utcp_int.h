/* SPDX-License-Identifier: MIT */
/* utcp internals: the connection block, serial arithmetic, module hooks. */
#ifndef XIW_UTCP_INT_H
#define XIW_UTCP_INT_H

#include "utcp.h"

/* RFC 1982 serial arithmetic on 32-bit sequence numbers: every
 * comparison of sequence numbers in utcp goes through these. */
static inline bool seq_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
static inline bool seq_leq(uint32_t a, uint32_t b) { return (int32_t)(a - b) <= 0; }
static inline bool seq_gt(uint32_t a, uint32_t b) { return (int32_t)(a - b) > 0; }
static inline bool seq_geq(uint32_t a, uint32_t b) { return (int32_t)(a - b) >= 0; }
static inline uint32_t seq_max(uint32_t a, uint32_t b) { return seq_gt(a, b) ? a : b; }
static inline uint32_t seq_min(uint32_t a, uint32_t b) { return seq_lt(a, b) ? a : b; }
/* a <= x < b */
static inline bool seq_in(uint32_t x, uint32_t a, uint32_t b)
{
	return seq_leq(a, x) && seq_lt(x, b);
}

#define NS_PER_MS 1000000ull
#define UTCP_SB_MAX 32		/* scoreboard ranges kept (more: highest dropped) */
#define UTCP_DUPTHRESH 3

/* sender SACK scoreboard (utcp_sack.c): sorted, disjoint, above snd_una */
struct utcp_sb {
	int n;
	uint32_t s[UTCP_SB_MAX], e[UTCP_SB_MAX];
};

/* receiver out-of-order queue entry (utcp_reasm.c) */
struct utcp_rseg {
	struct utcp_rseg *next;
	uint32_t seq, len;
	uint8_t data[];
};

struct utcp_conn;

/** struct utcp_cc_ops - congestion control module (utcp_cc_*.c). cwnd and
 *  ssthresh live in the connection; @priv state in c->cc_priv. */
struct utcp_cc_ops {
	const char *name;
	void (*init)(struct utcp_conn *c);
	/* cumulative ACK advanced by @acked bytes outside fast recovery */
	void (*on_ack)(struct utcp_conn *c, uint32_t acked, uint64_t now);
	/* entering fast recovery (RFC 6675 §5 step 4): set ssthresh, cwnd */
	void (*on_loss)(struct utcp_conn *c, uint64_t now);
	/* retransmission timeout: set ssthresh, cwnd = 1 MSS (RFC 5681 §3.1) */
	void (*on_rto)(struct utcp_conn *c, uint64_t now);
	/* fast recovery complete (ACK at or above recovery point) */
	void (*on_recovery_exit)(struct utcp_conn *c, uint64_t now);
};

extern const struct utcp_cc_ops utcp_cc_newreno;
extern const struct utcp_cc_ops utcp_cc_cubic;

struct utcp_cubic {
	double w_max;		/* segments */
	double k;		/* seconds */
	double w_est;		/* segments (Reno-friendly estimate) */
	uint64_t epoch;		/* ns, 0 = no epoch */
};

struct utcp_conn {
	struct utcp_cfg cfg;
	const struct utcp_ops *ops;
	void *ctx;
	enum utcp_state state;
	bool passive;
	uint16_t ip_id;

	/* send sequence space (RFC 9293 §3.3.1) */
	uint32_t iss, snd_una, snd_nxt, snd_max, snd_wnd, snd_wl1, snd_wl2;
	uint32_t max_snd_wnd;
	uint64_t snd_acked;	/* stream bytes acknowledged */
	uint64_t snd_queued;	/* stream bytes handed to utcp_send() */
	bool fin_queued;	/* utcp_close() called */
	bool fin_sent;
	bool syn_acked;		/* our SYN acknowledged */

	/* negotiated */
	bool ws_ok, ts_ok, sack_ok;
	uint8_t snd_wscale, rcv_wscale;
	uint32_t mss;		/* min(our MSS, peer MSS) */

	/* receive sequence space */
	uint32_t irs, rcv_nxt, rcv_adv;	/* rcv_adv: right edge advertised */
	uint64_t rcv_delivered;
	uint32_t rcv_unread;	/* delivered, not yet utcp_recved() */
	bool fin_rcvd;
	struct utcp_rseg *rq;	/* out-of-order, ascending */
	struct utcp_rseg *rq_tail;
	unsigned int rq_n;
	uint32_t rq_last_s, rq_last_e;	/* block of the latest OOO arrival */
	bool rq_fin;		/* a FIN seen beyond rcv_nxt ... */
	uint32_t rq_fin_seq;	/* ... at this sequence number */

	/* timestamps (RFC 7323) */
	uint32_t ts_recent;
	bool ts_recent_set;
	uint32_t last_ack_sent;

	/* RTT / RTO (RFC 6298) */
	bool have_rtt;
	uint64_t srtt, rttvar, rto;
	bool rtt_timing;	/* Karn timing of one segment (no TS) */
	uint32_t rtt_seq;
	uint64_t rtt_start;
	unsigned int backoff;

	/* timers: absolute ns, 0 = off */
	uint64_t t_rto, t_delack, t_persist, t_tw;
	uint64_t t_tlp;		/* tail loss probe (RFC 8985 §7) */
	unsigned int tlp_n;	/* probes sent since the last progress */
	uint32_t tlp_high;	/* snd_max when the last one was sent */
	/* lost retransmission of the first hole: its retransmission left
	 * when snd_max was @rtx_una_max; a SACK above that means it was
	 * lost too (data sent after it arrived) */
	bool rtx_una_set;
	uint32_t rtx_una_seq, rtx_una_max;
	unsigned int persist_backoff;

	/* ACK generation */
	unsigned int segs_unacked;	/* full segments not yet ACKed */
	bool ack_now;
	bool in_batch;		/* utcp_input_batch_begin() ... _end() */
	bool ack_held;		/* an ACK the batch holds (sent at its end) */
	uint32_t rx_staged;	/* payload of the segment being input that
				 * @stage holds (0: none) */

	/* loss recovery (RFC 6675 / 6582) */
	bool in_recovery;	/* fast recovery */
	bool rto_recovery;	/* after an RTO, until recover is acked */
	uint32_t recover;	/* RecoveryPoint */
	uint32_t high_rxt;	/* HighRxt */
	uint32_t lost_end;	/* without SACK: [snd_una, lost_end) lost */
	unsigned int dupacks;
	struct utcp_sb sb;

	/* congestion control */
	const struct utcp_cc_ops *cc;
	uint32_t cwnd, ssthresh;
	uint32_t bytes_acked;	/* CA byte counting (RFC 5681 §3.1) */
	struct utcp_cubic cubic;

	/* RFC 5961 §7 challenge ACK rate limit */
	uint64_t chal_start;
	unsigned int chal_count;

	struct utcp_info st;	/* counters live here */
	bool closed_reported;
};

/*
 * Slow-start increase for an ACK that covers @acked new bytes: RFC 3465
 * (Appropriate Byte Counting) §2.2 with L = 2*SMSS, so an ACK that
 * covers several segments (stretch ACKs of a receiver that ACKs once per
 * RX batch, or a lost ACK) grows cwnd by more than one SMSS while one
 * ACK per segment grows it exactly as RFC 5681 (2) does. In slow start
 * after an RTO, L = 1*SMSS (RFC 3465 §2.3: the ACKs then may cover
 * segments that left the network long ago).
 */
static inline uint32_t utcp_ss_incr(const struct utcp_conn *c, uint32_t acked,
				    uint32_t smss)
{
	uint32_t l = c->rto_recovery ? smss : 2 * smss;

	return acked < l ? acked : l;
}

/* utcp.c */
void utcp_set_state(struct utcp_conn *c, enum utcp_state s);
void utcp_report_closed(struct utcp_conn *c, int err);
uint32_t utcp_smss(const struct utcp_conn *c);
uint32_t utcp_rcv_space(const struct utcp_conn *c);

/* utcp_seg.c */
int utcp_build_hdr(struct utcp_conn *c, uint8_t *hdr, uint32_t seq, uint32_t ack,
		   uint8_t flags, uint16_t wnd, const uint8_t *opts,
		   uint32_t optlen, const struct utcp_iov *iov, int niov,
		   uint32_t plen);

/* utcp_output.c */
void utcp_output(struct utcp_conn *c, uint64_t now);
void utcp_send_ack(struct utcp_conn *c, uint64_t now);
void utcp_send_syn(struct utcp_conn *c, uint64_t now);
void utcp_send_rst(struct utcp_conn *c, uint32_t seq, uint32_t ack, bool with_ack);
int utcp_xmit(struct utcp_conn *c, uint32_t seq, uint32_t maxlen, bool rtx,
	      uint64_t now);
uint32_t utcp_ts_now(const struct utcp_conn *c, uint64_t now);
uint32_t utcp_pipe(const struct utcp_conn *c);
uint32_t utcp_lost_boundary(const struct utcp_conn *c);
void utcp_zwp(struct utcp_conn *c, uint64_t now);

/* utcp_input.c */
void utcp_segment_arrives(struct utcp_conn *c, const struct utcp_seg *seg,
			  const struct utcp_opts *o, uint64_t now);

/* utcp_timer.c */
void utcp_rtt_sample(struct utcp_conn *c, uint64_t rtt);
void utcp_rto_arm(struct utcp_conn *c, uint64_t now);
void utcp_tlp_arm(struct utcp_conn *c, uint64_t now);
void utcp_lost_rtx_check(struct utcp_conn *c);
void utcp_timers_stop(struct utcp_conn *c);
void utcp_enter_timewait(struct utcp_conn *c, uint64_t now);

/* utcp_sack.c: sender scoreboard */
void utcp_sb_add(struct utcp_sb *sb, uint32_t una, uint32_t snd_max,
		 uint32_t s, uint32_t e);
void utcp_sb_ack(struct utcp_sb *sb, uint32_t una);
uint32_t utcp_sb_sacked(const struct utcp_sb *sb, uint32_t a, uint32_t b);
bool utcp_sb_is_sacked(const struct utcp_sb *sb, uint32_t seq);
/* first unSACKed byte range in [from, limit): returns false if none */
bool utcp_sb_next_hole(const struct utcp_sb *sb, uint32_t from, uint32_t limit,
		       uint32_t *hs, uint32_t *he);
/* IsLost boundary (RFC 6675 §4): bytes below it not SACKed are lost */
uint32_t utcp_sb_lost_boundary(const struct utcp_sb *sb, uint32_t una,
			       uint32_t smss);

/* utcp_reasm.c: receiver out-of-order queue */
int utcp_rq_insert(struct utcp_conn *c, uint32_t seq, const uint8_t *data,
		   uint32_t len, bool fin);
/* deliver what became in order; returns true if a FIN became in order */
bool utcp_rq_drain(struct utcp_conn *c);
void utcp_rq_free(struct utcp_conn *c);
int utcp_rq_sack_blocks(const struct utcp_conn *c, uint32_t *s, uint32_t *e,
			int max);

/* utcp_csum_simd.c */
/**
 * utcp_csum_simd() - add the host-order 16-bit words of @s's first bytes
 * to *@sum, copying them to @d (NULL: no copy), with AVX2 where the CPU
 * has it. Return: bytes done (a multiple of 32; 0 below 64 bytes or
 * without AVX2): the caller sums the rest.
 */
size_t utcp_csum_simd(uint8_t *d, const uint8_t *s, size_t n, uint64_t *sum);
/** utcp_csum_simd_enable() - use AVX2 if the CPU has it (default), or not
 *  (tests of the scalar loops). */
void utcp_csum_simd_enable(bool on);

#endif /* XIW_UTCP_INT_H */
