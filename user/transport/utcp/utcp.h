/* SPDX-License-Identifier: MIT */
/*
 * utcp — xiwarp's user-space TCP (for the xsk transport: AF_XDP frames).
 *
 * No I/O and no clock inside: the owner feeds received IPv4+TCP segments
 * with utcp_input(), gets segments out through the @output callback, passes
 * the time (ns, any monotonic origin) into every call and drives timers with
 * utcp_tick() at utcp_next_deadline(). Everything is deterministic given the
 * inputs, so tests run two endpoints over a fake link with a fake clock.
 *
 * Send side keeps NO copy of payload (seed 002): the owner appends bytes to
 * the send stream with utcp_send() and keeps them until @acked reports that
 * the peer has acknowledged them. Whenever utcp (re)transmits stream range
 * [off, off+len) it asks @fill to describe those bytes (iovecs into the
 * owner's registered buffers). Retransmissions skip SACKed ranges.
 *
 * Receive side: in-order payload is handed to @deliver (no copy kept).
 * Out-of-order segments inside the receive window are COPIED into a bounded
 * reassembly queue (utcp_cfg.reasm_max_segs segments, never beyond the
 * advertised window) and reported to the peer in SACK blocks; a segment
 * that does not fit is dropped (and the peer still gets a dup ACK with the
 * SACK blocks we do hold). Delivered bytes occupy the receive window until
 * the owner calls utcp_recved() (flow control, RFC 9293 §3.8.6).
 *
 * Implemented: RFC 9293 (state machine incl. simultaneous open/close,
 * TIME_WAIT), RFC 5961 §3/§4/§5 (RST/SYN challenge ACK, ACK range check),
 * RFC 7323 (window scale, timestamps, PAWS), RFC 2018 (SACK), RFC 6675
 * (SACK loss recovery), RFC 6298 (RTO, Karn), RFC 5681/6582 (NewReno),
 * RFC 9438 (CUBIC, default), delayed ACK (RFC 1122 §4.2.3.2), zero-window
 * probes / persist timer (RFC 9293 §3.8.6.1).
 *
 * Threads: none. A connection must be used by one thread at a time; all
 * callbacks run synchronously inside the utcp_* call that caused them.
 * Callbacks must not call utcp_input/utcp_tick/utcp_close/utcp_free on the
 * same connection (utcp_send/utcp_recved from @deliver/@acked are fine but
 * only take effect at the next call).
 *
 * Addresses and ports are host byte order. Return values: 0 / -errno.
 */
#ifndef XIW_UTCP_H
#define XIW_UTCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct utcp_conn;

/** enum utcp_state - RFC 9293 §3.3.2 states. */
enum utcp_state {
	UTCP_CLOSED = 0,
	UTCP_LISTEN,
	UTCP_SYN_SENT,
	UTCP_SYN_RCVD,
	UTCP_ESTABLISHED,
	UTCP_FIN_WAIT_1,
	UTCP_FIN_WAIT_2,
	UTCP_CLOSE_WAIT,
	UTCP_CLOSING,
	UTCP_LAST_ACK,
	UTCP_TIME_WAIT,
};

/** enum utcp_cc_algo - congestion control (struct utcp_cc_ops). */
enum utcp_cc_algo {
	UTCP_CC_CUBIC = 0,	/* RFC 9438, the default */
	UTCP_CC_NEWRENO,	/* RFC 5681 + RFC 6582 */
};

/** struct utcp_iov - one piece of payload described by @fill. */
struct utcp_iov {
	const void *base;
	uint32_t len;
};

#define UTCP_MAX_IOV 16
/** Longest IPv4+TCP header utcp builds (20 + 60). */
#define UTCP_MAX_HDR 80

struct utcp_csum;

/**
 * struct utcp_ops - callbacks into the owner (all run synchronously).
 * @fill:    describe stream bytes [@off, @off+@len) of the send stream (@off
 *           counts from 0 = first byte after the SYN, 64-bit, never wraps).
 *           Write up to @max pieces into @iov totalling exactly @len bytes.
 *           The bytes must stay valid until @output returns.
 *           Return: pieces used (> 0) or -errno (the segment is not sent;
 *           the RTO will try again).
 * @output:  send one segment: @hdr holds the IPv4 + TCP header (@hdr_len
 *           bytes, checksums filled in), followed on the wire by the @niov
 *           pieces of @iov (@plen bytes in all). Nothing is retained by
 *           utcp after return.
 * @deliver: @len in-order received bytes at receive-stream offset @off;
 *           @len == 0 means the peer's FIN (end of stream). @data NULL
 *           with @len > 0: the bytes are those @stage just copied for this
 *           segment (commit them, copy nothing).
 * @stage:   optional (NULL: utcp sums every segment in place): copy the
 *           @len payload bytes of an in-order, in-window data segment
 *           whose checksum is not verified yet to where @deliver would
 *           put them, adding them to @cs in the same pass
 *           (utcp_csum_copy), without making them visible. Return: true
 *           if copied and summed; false (nothing done, @cs untouched) if
 *           the owner has no room or does not want them. Staged bytes of
 *           a segment that fails the checksum, or that the state machine
 *           drops, are never committed: the next @stage overwrites them.
 * @acked:   the peer acknowledged the send stream up to @off (bytes from
 *           0): the owner may release / complete everything below @off
 *           (seed 000 ACK-mode completions).
 * @state:   the connection moved from @old to @new (may be NULL).
 * @closed:  the connection is finished: 0 after an orderly close (TIME_WAIT
 *           expired or LAST_ACK acked), -ECONNRESET (RST), -ECONNREFUSED
 *           (RST to our SYN), -ETIMEDOUT (retransmissions exhausted, RFC 9293
 *           §3.8.3 R2). Called once; the connection is CLOSED afterwards.
 */
struct utcp_ops {
	int (*fill)(void *ctx, uint64_t off, uint32_t len,
		    struct utcp_iov *iov, int max);
	void (*output)(void *ctx, const uint8_t *hdr, uint32_t hdr_len,
		       const struct utcp_iov *iov, int niov, uint32_t plen);
	void (*deliver)(void *ctx, uint64_t off, const uint8_t *data, uint32_t len);
	void (*acked)(void *ctx, uint64_t off);
	void (*state)(void *ctx, enum utcp_state old, enum utcp_state new_state);
	void (*closed)(void *ctx, int err);
	bool (*stage)(void *ctx, const uint8_t *data, uint32_t len,
		      struct utcp_csum *cs);
};

/**
 * struct utcp_cfg - per-connection configuration. Zero means "default"
 * for every field (utcp_cfg_init() writes the defaults explicitly).
 * @laddr/@lport:  local IPv4 address and port (host order).
 * @raddr/@rport:  peer; for utcp_listen() may be 0 (taken from the SYN).
 * @iss:           initial send sequence number (the owner picks it,
 *                 RFC 9293 §3.4.1; 0 is a valid ISS when @iss_set).
 * @iss_set:       use @iss even when it is 0.
 * @mss:           our MSS (bytes of TCP payload, without options), default 1460.
 * @rcv_buf:       receive buffer = largest window, bytes (default 256 KiB;
 *                 > 65535 needs window scaling).
 * @snd_buf:       most unacknowledged+unsent bytes utcp_send() accepts
 *                 (default 4 MiB).
 * @no_wscale/@no_ts/@no_sack: don't offer RFC 7323 WS / TS, RFC 2018 SACK.
 * @rto_min_ns:    lower RTO bound (default 200 ms; RFC 6298 says 1 s).
 * @rto_max_ns:    upper RTO bound (default 60 s).
 * @rto_init_ns:   RTO before the first RTT sample (default 1 s).
 * @max_retries:   consecutive RTO expiries of data/FIN before the connection
 *                 is aborted with -ETIMEDOUT (default 15).
 * @syn_retries:   the same for SYN / SYN-ACK (default 6).
 * @delack_ns:     delayed ACK timeout (default 40 ms; 0 = default; use
 *                 @delack_segs = 1 to ACK every segment).
 * @delack_segs:   ACK at least every this many full-sized segments (2).
 * @ack_stretch_segs: inside an input batch (utcp_input_batch_begin/end)
 *                 the every-@delack_segs ACK waits for the batch's end,
 *                 but at most this many full-sized segments (default 32;
 *                 never more than a quarter of the receive buffer).
 * @msl_ns:        maximum segment lifetime; TIME_WAIT lasts 2 * @msl_ns
 *                 (default 30 s).
 * @cc:            congestion control (default CUBIC).
 * @ts_offset:     added to our TSval clock (ms) (RFC 7323 §5.4 randomisation).
 * @reasm_max_segs: out-of-order segments held (default rcv_buf / 536 + 16,
 *                 i.e. a whole window; bytes are bounded by the window).
 * @ttl:           IPv4 TTL (default 64).
 * @init_cwnd_segs: initial window in segments (default 10, RFC 6928).
 * @challenge_ack_limit: RFC 5961 §7 challenge ACKs per second (default 100).
 * @output_sums_payload: @output adds the payload to the TCP checksum (to
 *                 fuse it with the copy it makes anyway): the checksum
 *                 field of every segment then holds the folded, not
 *                 complemented, sum of pseudo-header and TCP header
 *                 (network order; utcp_csum_partial() reads it), and
 *                 @output must finish it (utcp_csum_copy / utcp_csum_add
 *                 over the payload, utcp_csum_final) before the segment
 *                 leaves.
 */
struct utcp_cfg {
	uint32_t laddr, raddr;
	uint16_t lport, rport;
	uint32_t iss;
	bool iss_set;
	uint16_t mss;
	uint32_t rcv_buf;
	uint32_t snd_buf;
	bool no_wscale, no_ts, no_sack;
	uint64_t rto_min_ns, rto_max_ns, rto_init_ns;
	unsigned int max_retries, syn_retries;
	uint64_t delack_ns;
	unsigned int delack_segs;
	unsigned int ack_stretch_segs;
	uint64_t msl_ns;
	enum utcp_cc_algo cc;
	uint32_t ts_offset;
	unsigned int reasm_max_segs;
	uint8_t ttl;
	unsigned int init_cwnd_segs;
	unsigned int challenge_ack_limit;
	bool output_sums_payload;
};

/**
 * struct utcp_info - a snapshot for the owner and tests.
 * Sequence numbers are raw (mod 2^32); times are ns; windows bytes.
 */
struct utcp_info {
	enum utcp_state state;
	uint32_t iss, irs;
	uint32_t snd_una, snd_nxt, snd_max, snd_wnd, rcv_nxt, rcv_wnd;
	uint32_t cwnd, ssthresh, mss, smss;
	uint8_t snd_wscale, rcv_wscale;
	bool ts_ok, sack_ok, ws_ok, in_recovery;
	uint64_t srtt_ns, rttvar_ns, rto_ns;
	unsigned int backoff;		/* consecutive RTO expiries */
	uint64_t snd_acked, snd_queued;	/* stream bytes acked / queued */
	uint64_t rcv_delivered;
	/* counters */
	uint64_t segs_out, segs_in, bytes_out, bytes_retrans, segs_retrans;
	uint64_t acks_out;		/* segments without payload, SYN, FIN */
	uint64_t dupacks_in, rto_fired, fast_recoveries, zwp_sent;
	uint64_t csum_errors, bad_segs, paws_drops, challenge_acks;
	uint64_t challenge_acks_limited;	/* not sent: over the limit */
	uint64_t ooo_segs, ooo_drops;
	uint64_t tlp_sent;		/* tail loss probes (RFC 8985 §7) */
	uint64_t lost_rtx;		/* retransmissions found lost by SACK */
	uint64_t bytes_sacked;		/* octets the peer newly SACKed */
	/* utcp_output() passes that left new data unsent because of: */
	uint64_t out_rwnd_limited;	/* the peer's receive window */
	uint64_t out_cwnd_limited;	/* the congestion window */
	unsigned int sack_blocks;	/* scoreboard ranges */
};

/** utcp_cfg_init() - fill @cfg with the defaults (documented above). */
void utcp_cfg_init(struct utcp_cfg *cfg);

/**
 * utcp_new() - a CLOSED connection. @cfg is copied (zero fields become
 * defaults); @ops must stay valid for the connection's life.
 * Return: the connection, or NULL (ENOMEM / EINVAL in errno).
 */
struct utcp_conn *utcp_new(const struct utcp_cfg *cfg,
			   const struct utcp_ops *ops, void *ctx);
/** utcp_free() - free @c in any state (no segment is sent; no callback). */
void utcp_free(struct utcp_conn *c);

/** utcp_connect() - active open: send SYN (RFC 9293 §3.10.1).
 *  Return: 0, -EISCONN if not CLOSED, -EINVAL without peer address. */
int utcp_connect(struct utcp_conn *c, uint64_t now);
/** utcp_listen() - passive open: wait for one SYN (a listener per
 *  expected connection; the owner demultiplexes). Return: 0 or -EISCONN. */
int utcp_listen(struct utcp_conn *c);

/**
 * utcp_send() - append @len bytes to the send stream (the owner keeps the
 * bytes until @acked passes them) and transmit what windows allow.
 * Return: 0; -ENOBUFS if more than utcp_send_space(); -EPIPE after
 * utcp_close(); -ENOTCONN before SYN_SENT/after CLOSED.
 */
int utcp_send(struct utcp_conn *c, uint32_t len, uint64_t now);
/** utcp_send_space() - bytes utcp_send() accepts now (snd_buf minus
 *  unacknowledged). */
uint32_t utcp_send_space(const struct utcp_conn *c);
/** utcp_recved() - the owner consumed @len delivered bytes: reopen the
 *  receive window (sends a window update when it grew enough). */
void utcp_recved(struct utcp_conn *c, uint32_t len, uint64_t now);
/**
 * utcp_push() - transmit what the windows allow now: the owner's @fill
 * refused a segment earlier (no transmit buffer) and has room again.
 */
void utcp_push(struct utcp_conn *c, uint64_t now);
/**
 * utcp_ack_now() - send a delayed ACK at once (the owner drained what it
 * received and a peer that completes sends on ACKs should not wait for
 * the delayed-ACK timer). Nothing owed: does nothing.
 */
void utcp_ack_now(struct utcp_conn *c, uint64_t now);
/** utcp_close() - no more data: send FIN after the queued bytes
 *  (RFC 9293 §3.10.4). Return: 0, or -ENOTCONN if already closing. */
int utcp_close(struct utcp_conn *c, uint64_t now);
/** utcp_abort() - send RST (if synchronized) and go CLOSED; @closed is
 *  called with -ECONNABORTED. */
void utcp_abort(struct utcp_conn *c, uint64_t now);

/**
 * utcp_input() - one received IPv4 packet (@pkt, @len bytes, starting at
 * the IPv4 header), received at @now. Checks IPv4 header and TCP checksum
 * (software, RFC 1071 with pseudo-header), the 4-tuple, then runs RFC 9293
 * §3.10.7 SEGMENT ARRIVES. May call any callback.
 * Return: 0 (consumed, maybe dropped by TCP rules), -EINVAL (malformed
 * IPv4/TCP header or options), -EBADMSG (checksum), -ENOENT (not this
 * connection's 4-tuple).
 */
int utcp_input(struct utcp_conn *c, const uint8_t *pkt, size_t len, uint64_t now);
/**
 * utcp_input_batch_begin() - the owner is about to feed several segments
 * that arrived together (one RX ring batch). Until utcp_input_batch_end()
 * the ACK that in-order full-sized segments owe every @delack_segs
 * segments is held (at most @ack_stretch_segs segments); every other ACK
 * (out-of-order, duplicate, hole filled, FIN, window probe) still leaves
 * at once. Idempotent.
 */
void utcp_input_batch_begin(struct utcp_conn *c);
/**
 * utcp_input_batch_end() - the batch is over: send the ACK it held, if
 * one is still owed (one ACK for the whole batch). Segments short of
 * @delack_segs keep the delayed-ACK timer as outside a batch.
 */
void utcp_input_batch_end(struct utcp_conn *c, uint64_t now);

/** utcp_tick() - run the timers due at @now (RTO, delayed ACK, persist,
 *  TIME_WAIT). */
void utcp_tick(struct utcp_conn *c, uint64_t now);
/** utcp_next_deadline() - earliest time (ns) utcp_tick() has work, or
 *  UINT64_MAX when no timer is armed. */
uint64_t utcp_next_deadline(const struct utcp_conn *c);

/** utcp_get_info() - fill @info. */
void utcp_get_info(const struct utcp_conn *c, struct utcp_info *info);
/** utcp_counters() - segments retransmitted and octets newly SACKed by
 *  the peer so far (cheap: for per-call statistics). */
void utcp_counters(const struct utcp_conn *c, uint64_t *retrans,
		   uint64_t *sacked);
/**
 * utcp_rcv_edges() - receive sequence numbers (raw, mod 2^32): @irs, the
 * peer's initial sequence number; @nxt, rcv_nxt (everything below is
 * delivered); @high, the end of the highest out-of-order segment held
 * (@nxt when none). Cheap: for the FPDU re-sync of the xsk transport.
 */
void utcp_rcv_edges(const struct utcp_conn *c, uint32_t *irs, uint32_t *nxt,
		    uint32_t *high);
/** utcp_state_name() - "ESTABLISHED", ... */
const char *utcp_state_name(enum utcp_state s);
/** utcp_sack_get() - copy up to @max scoreboard ranges (sender side:
 *  peer-SACKed [start, end) sequence ranges above snd_una, ascending).
 *  Return: number copied. */
int utcp_sack_get(const struct utcp_conn *c, uint32_t *start, uint32_t *end,
		  int max);

/*
 * Segment helpers (utcp_seg.c), usable by the engine's demultiplexer.
 */

/** struct utcp_seg - a parsed segment; @data points into the packet. */
struct utcp_seg {
	uint32_t saddr, daddr;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t wnd;		/* raw header field (unscaled) */
	const uint8_t *opts;
	uint32_t optlen;
	const uint8_t *data;
	uint32_t len;		/* payload bytes */
};

#define UTCP_FIN 0x01
#define UTCP_SYN 0x02
#define UTCP_RST 0x04
#define UTCP_PSH 0x08
#define UTCP_ACK 0x10
#define UTCP_URG 0x20

/**
 * utcp_seg_parse() - validate and parse an IPv4+TCP packet: version, IHL,
 * total length (trailing link padding ignored), no fragments, protocol 6,
 * IPv4 header checksum, TCP data offset; TCP checksum when @verify_csum.
 * Return: 0, -EINVAL (malformed), -EBADMSG (a checksum is wrong).
 */
int utcp_seg_parse(const uint8_t *pkt, size_t len, bool verify_csum,
		   struct utcp_seg *seg);

/** struct utcp_csum - running RFC 1071 sum over pieces of any length. */
struct utcp_csum {
	uint64_t sum;
	bool odd;	/* an odd number of bytes summed so far */
};
/** utcp_csum_init() - start at @seed (e.g. utcp_csum_pseudo()). */
void utcp_csum_init(struct utcp_csum *cs, uint32_t seed);
/** utcp_csum_add() - add @len bytes (any alignment, any length). */
void utcp_csum_add(struct utcp_csum *cs, const void *p, size_t len);
/** utcp_csum_copy() - copy @len bytes @src -> @dst and add them to the
 *  sum in the same pass (for framing into umem frames). */
void utcp_csum_copy(struct utcp_csum *cs, void *dst, const void *src, size_t len);
/** utcp_csum_final() - the 16-bit checksum field value (complemented,
 *  host order). Summing a packet that includes a correct field gives 0. */
uint16_t utcp_csum_final(const struct utcp_csum *cs);
/**
 * utcp_csum_partial() - for @output with cfg.output_sums_payload: start
 * @cs from the partial sum utcp left in the checksum field of @hdr (the
 * IPv4 + TCP header @output got; IPv4 header without options). Then add
 * the payload and store utcp_csum_final() with utcp_csum_store().
 */
void utcp_csum_partial(struct utcp_csum *cs, const uint8_t *hdr);
/** utcp_csum_store() - write the final TCP checksum of @cs into @hdr
 *  (a copy of the header utcp_csum_partial() read). */
void utcp_csum_store(const struct utcp_csum *cs, uint8_t *hdr);
/** utcp_csum_pseudo() - IPv4 pseudo-header partial sum (RFC 9293 §3.1). */
uint32_t utcp_csum_pseudo(uint32_t saddr, uint32_t daddr, uint8_t proto,
			  uint32_t len);

/*
 * TCP options (utcp_opts.c).
 */
#define UTCP_MAX_SACK 4
/** struct utcp_opts - parsed options; the has_* flags say what was seen. */
struct utcp_opts {
	bool has_mss, has_ws, has_ts, sack_perm;
	uint16_t mss;
	uint8_t ws;		/* as received; clamp to 14 is the caller's job */
	uint32_t tsval, tsecr;
	int nsack;
	uint32_t sack_start[UTCP_MAX_SACK], sack_end[UTCP_MAX_SACK];
};
/**
 * utcp_opts_parse() - parse @len bytes of TCP options (RFC 9293 §3.2,
 * RFC 7323, RFC 2018). Unknown kinds are skipped by their length; a
 * length < 2 or past the end, or a known kind with the wrong length,
 * is malformed. Return: 0 or -EINVAL.
 */
int utcp_opts_parse(const uint8_t *p, uint32_t len, struct utcp_opts *o);
/** utcp_opts_build() - write @o (only what has_* / nsack say) padded with
 *  NOPs to a multiple of 4 into @buf (@max bytes, <= 40).
 *  Return: bytes written, or -ENOSPC. SYN options go in when @syn. */
int utcp_opts_build(const struct utcp_opts *o, bool syn, uint8_t *buf, uint32_t max);

#endif /* XIW_UTCP_H */
