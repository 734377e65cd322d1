// SPDX-License-Identifier: MIT
/*
 * utcp: segment output. New data within min(cwnd, snd_wnd); in loss
 * recovery the RFC 6675 pipe algorithm with NextSeg() rule 1 (lost,
 * unSACKed holes above HighRxt) and rule 2 (new data). Payload is never
 * copied: @fill describes it from the owner's buffers (seed 002).
 */
#include <errno.h>
#include <string.h>
#include "utcp_int.h"

uint32_t utcp_ts_now(const struct utcp_conn *c, uint64_t now)
{
	return (uint32_t)(now / NS_PER_MS) + c->cfg.ts_offset;
}

static uint32_t data_end_seq(const struct utcp_conn *c)
{
	return c->iss + 1 + (uint32_t)c->snd_queued;
}

/* Options for a non-SYN segment: TS, SACK blocks of the OOO queue. */
static int data_opts(struct utcp_conn *c, bool ack, uint8_t *buf, uint64_t now)
{
	struct utcp_opts o;

	memset(&o, 0, sizeof(o));
	if (c->ts_ok) {
		o.has_ts = true;
		o.tsval = utcp_ts_now(c, now);
		o.tsecr = c->ts_recent;
	}
	if (ack && c->sack_ok && c->rq)
		o.nsack = utcp_rq_sack_blocks(c, o.sack_start, o.sack_end,
					      c->ts_ok ? 3 : 4);
	return utcp_opts_build(&o, false, buf, 40);
}

static uint16_t wnd_field(struct utcp_conn *c, bool syn)
{
	uint32_t space = utcp_rcv_space(c), w;

	if (syn)
		return (uint16_t)(space > 65535 ? 65535 : space);
	w = space >> c->rcv_wscale;
	if (w > 65535)
		w = 65535;
	/* never shrink the right edge already offered (RFC 9293 §3.8.6) */
	if (seq_lt(c->rcv_nxt + (w << c->rcv_wscale), c->rcv_adv)) {
		uint32_t need = c->rcv_adv - c->rcv_nxt;

		w = (need + (1u << c->rcv_wscale) - 1) >> c->rcv_wscale;
		if (w > 65535)
			w = 65535;
	}
	return (uint16_t)w;
}

/* Build and hand one segment to @output; book-keeping for ACKs sent. */
static void send_raw(struct utcp_conn *c, uint32_t seq, uint8_t flags,
		     const uint8_t *opts, int optlen, const struct utcp_iov *iov,
		     int niov, uint32_t plen)
{
	uint8_t hdr[UTCP_MAX_HDR];
	bool syn = flags & UTCP_SYN;
	uint16_t wnd = (flags & UTCP_RST) ? 0 : wnd_field(c, syn);
	uint32_t ack = (flags & UTCP_ACK) ? c->rcv_nxt : 0;
	int hlen;

	hlen = utcp_build_hdr(c, hdr, seq, ack, flags, wnd, opts,
			      (uint32_t)optlen, iov, niov, plen);
	c->ops->output(c->ctx, hdr, (uint32_t)hlen, iov, niov, plen);
	c->st.segs_out++;
	c->st.bytes_out += plen;
	if (!plen)
		c->st.acks_out++;
	if (flags & UTCP_ACK) {
		uint32_t edge = c->rcv_nxt + ((uint32_t)wnd << (syn ? 0 : c->rcv_wscale));
		uint32_t room = c->rcv_nxt + utcp_rcv_space(c);

		/* wnd_field() rounds a kept edge up to the scale unit: taken as
		 * the new promise, each ACK while the app does not read would
		 * move it up to 2^wscale - 1 octets further past the buffer
		 * (seen: 6 KB past a full 1 MiB receive ring). Promise only
		 * what is there; the overhang (< one unit) is trimmed on input. */
		if (seq_gt(edge, room))
			edge = seq_max(room, c->rcv_adv);
		if (seq_gt(edge, c->rcv_adv))
			c->rcv_adv = edge;
		c->ack_now = false;
		c->ack_held = false;
		c->segs_unacked = 0;
		c->t_delack = 0;
		c->last_ack_sent = c->rcv_nxt;
	}
}

void utcp_send_rst(struct utcp_conn *c, uint32_t seq, uint32_t ack, bool with_ack)
{
	uint32_t save = c->rcv_nxt;

	c->rcv_nxt = ack;	/* send_raw puts rcv_nxt in the ACK field */
	send_raw(c, seq, UTCP_RST | (with_ack ? UTCP_ACK : 0), NULL, 0, NULL, 0, 0);
	c->rcv_nxt = save;
}

void utcp_send_ack(struct utcp_conn *c, uint64_t now)
{
	uint8_t opts[40];
	int n = data_opts(c, true, opts, now);

	send_raw(c, c->snd_nxt, UTCP_ACK, opts, n > 0 ? n : 0, NULL, 0, 0);
}

/* RFC 9293 §3.8.6.1 zero-window probe, as Linux sends it: an ACK with
 * seq = snd_una - 1 (outside the peer's window) makes the peer answer
 * with its current window; no sequence space is used, so a probe is
 * never "lost data" and persisting never times out the connection. */
void utcp_zwp(struct utcp_conn *c, uint64_t now)
{
	uint8_t opts[40];
	int n = data_opts(c, true, opts, now);

	send_raw(c, c->snd_una - 1, UTCP_ACK, opts, n > 0 ? n : 0, NULL, 0, 0);
	c->st.zwp_sent++;
}

void utcp_send_syn(struct utcp_conn *c, uint64_t now)
{
	struct utcp_opts o;
	uint8_t opts[40];
	bool offer = c->state == UTCP_SYN_SENT;
	uint8_t flags = UTCP_SYN;
	int n;

	memset(&o, 0, sizeof(o));
	o.has_mss = true;
	o.mss = c->cfg.mss;
	if (offer ? !c->cfg.no_wscale : c->ws_ok) {
		o.has_ws = true;
		o.ws = c->rcv_wscale;
	}
	o.sack_perm = offer ? !c->cfg.no_sack : c->sack_ok;
	if (offer ? !c->cfg.no_ts : c->ts_ok) {
		o.has_ts = true;
		o.tsval = utcp_ts_now(c, now);
		o.tsecr = c->state == UTCP_SYN_RCVD ? c->ts_recent : 0;
	}
	n = utcp_opts_build(&o, true, opts, sizeof(opts));
	if (c->state == UTCP_SYN_RCVD)
		flags |= UTCP_ACK;
	if (c->snd_max != c->iss)
		c->st.segs_retrans++;
	send_raw(c, c->iss, flags, opts, n > 0 ? n : 0, NULL, 0, 0);
	c->snd_nxt = c->iss + 1;
	c->snd_max = c->iss + 1;
	if (!c->t_rto)
		utcp_rto_arm(c, now);
	if (c->backoff == 0 && !c->rtt_timing) {
		c->rtt_timing = true;
		c->rtt_seq = c->iss;
		c->rtt_start = now;
	} else if (c->backoff) {
		c->rtt_timing = false;	/* Karn */
	}
}

/*
 * Send stream data starting at @seq, at most @maxlen sequence numbers
 * (data and a FIN if it falls inside). @rtx: below snd_max.
 * Return: sequence numbers sent (> 0), 0 if nothing to send, -errno.
 */
int utcp_xmit(struct utcp_conn *c, uint32_t seq, uint32_t maxlen, bool rtx, uint64_t now)
{
	struct utcp_iov iov[UTCP_MAX_IOV];
	uint8_t opts[40];
	uint32_t dend = data_end_seq(c), dlen = 0, pmax;
	bool fin = false;
	uint8_t flags = UTCP_ACK;
	int optlen = data_opts(c, true, opts, now), niov = 0;

	if (optlen < 0)
		optlen = 0;
	pmax = c->mss - (uint32_t)optlen;
	if (seq_lt(seq, dend)) {
		dlen = dend - seq;
		if (dlen > maxlen)
			dlen = maxlen;
		if (dlen > pmax)
			dlen = pmax;
	}
	if (c->fin_queued && seq + dlen == dend && maxlen > dlen &&
	    (c->state == UTCP_FIN_WAIT_1 || c->state == UTCP_CLOSING ||
	     c->state == UTCP_LAST_ACK))
		fin = true;
	if (!dlen && !fin)
		return 0;
	if (dlen) {
		uint64_t off = c->snd_acked + (uint32_t)(seq - (c->iss + 1 + (uint32_t)c->snd_acked));
		uint32_t tot = 0;

		niov = c->ops->fill(c->ctx, off, dlen, iov, UTCP_MAX_IOV);
		if (niov <= 0 || niov > UTCP_MAX_IOV)
			return niov < 0 ? niov : -EIO;
		for (int i = 0; i < niov; i++)
			tot += iov[i].len;
		if (tot != dlen)
			return -EIO;
		if (seq + dlen == dend)
			flags |= UTCP_PSH;
	}
	if (fin)
		flags |= UTCP_FIN;
	send_raw(c, seq, flags, opts, optlen, iov, niov, dlen);
	if (rtx && seq == c->snd_una) {
		c->rtx_una_set = true;
		c->rtx_una_seq = seq;
		c->rtx_una_max = c->snd_max;
	}
	if (rtx) {
		c->st.segs_retrans++;
		c->st.bytes_retrans += dlen;
		c->rtt_timing = false;		/* Karn: no sample from this */
	} else if (!c->ts_ok && !c->rtt_timing && dlen) {
		c->rtt_timing = true;
		c->rtt_seq = seq;
		c->rtt_start = now;
	}
	if (fin)
		c->fin_sent = true;
	if (seq_gt(seq + dlen + fin, c->snd_max))
		c->snd_max = seq + dlen + fin;
	c->snd_nxt = c->snd_max;
	if (!c->t_rto)
		utcp_rto_arm(c, now);
	return (int)(dlen + fin);
}

/* Every unSACKed byte below the returned point is considered lost. */
uint32_t utcp_lost_boundary(const struct utcp_conn *c)
{
	uint32_t l = c->snd_una;

	if (c->sack_ok)
		l = utcp_sb_lost_boundary(&c->sb, c->snd_una, utcp_smss(c));
	if (c->in_recovery)
		l = seq_max(l, c->lost_end);
	if (c->rto_recovery)
		l = seq_max(l, c->recover);
	return seq_min(l, c->snd_max);
}

/* RFC 6675 §4 SetPipe(): unSACKed bytes not lost, plus lost ones
 * retransmitted (below HighRxt). Without SACK, dup ACKs stand for
 * segments that left the network. */
uint32_t utcp_pipe(const struct utcp_conn *c)
{
	uint32_t l = utcp_lost_boundary(c), pipe = 0, x = c->snd_una, hs, he;
	uint32_t rx = seq_max(c->high_rxt, c->snd_una);

	while (utcp_sb_next_hole(&c->sb, x, c->snd_max, &hs, &he)) {
		/* not lost part */
		if (seq_lt(l, he))
			pipe += he - seq_max(hs, l);
		/* lost and retransmitted part */
		if (seq_lt(hs, l)) {
			uint32_t re = seq_min(seq_min(he, l), rx);

			if (seq_lt(hs, re))
				pipe += re - hs;
		}
		x = he;
	}
	if (!c->sack_ok && !c->rto_recovery) {
		uint32_t d = c->dupacks * utcp_smss(c);

		pipe = pipe > d ? pipe - d : 0;
	}
	return pipe;
}

static bool can_send_data(const struct utcp_conn *c)
{
	switch (c->state) {
	case UTCP_ESTABLISHED: case UTCP_CLOSE_WAIT: case UTCP_FIN_WAIT_1:
	case UTCP_CLOSING: case UTCP_LAST_ACK:
		return true;
	default:
		return false;
	}
}

void utcp_output(struct utcp_conn *c, uint64_t now)
{
	uint32_t smss = utcp_smss(c);
	int guard = 100000;

	if (can_send_data(c)) {
		for (; guard > 0; guard--) {
			uint32_t dend = data_end_seq(c);
			uint32_t fend = dend + ((c->fin_queued && !c->fin_sent) ? 1 : 0);
			uint32_t wend = c->snd_una + c->snd_wnd;
			bool recov = c->in_recovery || c->rto_recovery;
			uint32_t flight, room_c, room_w, avail, len;
			int n;

			if (recov) {
				uint32_t l = utcp_lost_boundary(c), from, hs, he;

				flight = utcp_pipe(c);
				if (flight && flight + smss > c->cwnd)
					break;	/* cwnd - pipe < 1 SMSS */
				from = seq_max(c->high_rxt, c->snd_una);
				if (seq_lt(from, l) &&
				    utcp_sb_next_hole(&c->sb, from, l, &hs, &he)) {
					n = utcp_xmit(c, hs, he - hs, true, now);
					if (n <= 0)
						break;
					c->high_rxt = hs + (uint32_t)n;
					continue;
				}
			} else {
				flight = c->snd_max - c->snd_una;
			}
			/* new data (NextSeg rule 2) */
			if (!seq_lt(c->snd_max, fend))
				break;
			avail = seq_lt(c->snd_max, dend) ? dend - c->snd_max : 0;
			room_c = c->cwnd > flight ? c->cwnd - flight : 0;
			/* RFC 3042 limited transmit: the first two dup ACKs
			 * each let one new segment out, so a small window
			 * still gathers the dup ACKs that fast retransmit needs */
			if (!recov && c->dupacks && c->dupacks < UTCP_DUPTHRESH &&
			    flight <= c->cwnd + c->dupacks * smss)
				room_c = c->cwnd + c->dupacks * smss - flight;
			room_w = seq_gt(wend, c->snd_max) ? wend - c->snd_max : 0;
			len = avail < smss ? avail : smss;
			if (len > room_c)
				len = room_c;
			if (len > room_w)
				len = room_w;
			if (avail) {
				if (!len) {
					if (room_w < smss && room_w <= room_c)
						c->st.out_rwnd_limited++;
					else
						c->st.out_cwnd_limited++;
					break;
				}
				/* sender SWS avoidance (RFC 9293 §3.8.6.2.1):
				 * a short segment only if it is all we have or
				 * nothing is in flight */
				if (len < smss && len < avail && flight) {
					if (room_w <= room_c)
						c->st.out_rwnd_limited++;
					else
						c->st.out_cwnd_limited++;
					break;
				}
			} else if (!room_c && flight) {
				break;
			}
			n = utcp_xmit(c, c->snd_max,
				      len + ((len == avail && c->fin_queued) ? 1 : 0),
				      false, now);
			if (n <= 0)
				break;
		}
		/* persist timer: window closed, data waiting, nothing in flight */
		if (c->snd_wnd == 0 && c->snd_max == c->snd_una &&
		    seq_lt(c->snd_max, data_end_seq(c))) {
			if (!c->t_persist) {
				uint64_t d = c->rto << (c->persist_backoff < 16 ? c->persist_backoff : 16);

				if (d > c->cfg.rto_max_ns)
					d = c->cfg.rto_max_ns;
				c->t_persist = now + d;
			}
		} else {
			c->t_persist = 0;
			c->persist_backoff = 0;
		}
	}
	if (c->ack_now && c->state != UTCP_CLOSED && c->state != UTCP_LISTEN &&
	    c->state != UTCP_SYN_SENT)
		utcp_send_ack(c, now);
	if (c->snd_max == c->snd_una)
		c->t_rto = 0;
	utcp_tlp_arm(c, now);
}
