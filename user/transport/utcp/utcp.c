// SPDX-License-Identifier: MIT
/*
 * utcp: connection life cycle and the owner-facing calls (utcp.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "utcp_int.h"

void utcp_cfg_init(struct utcp_cfg *cfg)
{
	if (!cfg->mss)
		cfg->mss = 1460;
	if (!cfg->rcv_buf)
		cfg->rcv_buf = 256 * 1024;
	if (!cfg->snd_buf)
		cfg->snd_buf = 4 * 1024 * 1024;
	if (!cfg->rto_min_ns)
		cfg->rto_min_ns = 200 * NS_PER_MS;
	if (!cfg->rto_max_ns)
		cfg->rto_max_ns = 60000 * NS_PER_MS;
	if (!cfg->rto_init_ns)
		cfg->rto_init_ns = 1000 * NS_PER_MS;
	if (!cfg->max_retries)
		cfg->max_retries = 15;
	if (!cfg->syn_retries)
		cfg->syn_retries = 6;
	if (!cfg->delack_ns)
		cfg->delack_ns = 40 * NS_PER_MS;
	if (!cfg->delack_segs)
		cfg->delack_segs = 2;
	if (!cfg->ack_stretch_segs)
		cfg->ack_stretch_segs = 32;
	if (!cfg->msl_ns)
		cfg->msl_ns = 30000 * NS_PER_MS;
	if (!cfg->reasm_max_segs)	/* a whole window of small segments */
		cfg->reasm_max_segs = cfg->rcv_buf / 536 + 16;
	if (!cfg->ttl)
		cfg->ttl = 64;
	if (!cfg->init_cwnd_segs)
		cfg->init_cwnd_segs = 10;
	if (!cfg->challenge_ack_limit)
		cfg->challenge_ack_limit = 100;
}

static const char *const state_names[] = {
	"CLOSED", "LISTEN", "SYN_SENT", "SYN_RCVD", "ESTABLISHED", "FIN_WAIT_1",
	"FIN_WAIT_2", "CLOSE_WAIT", "CLOSING", "LAST_ACK", "TIME_WAIT",
};

const char *utcp_state_name(enum utcp_state s)
{
	return (unsigned int)s < sizeof(state_names) / sizeof(state_names[0]) ?
	       state_names[s] : "?";
}

void utcp_set_state(struct utcp_conn *c, enum utcp_state s)
{
	enum utcp_state old = c->state;

	if (old == s)
		return;
	c->state = s;
	if (c->ops->state)
		c->ops->state(c->ctx, old, s);
}

void utcp_report_closed(struct utcp_conn *c, int err)
{
	utcp_timers_stop(c);
	utcp_set_state(c, UTCP_CLOSED);
	utcp_rq_free(c);
	if (c->closed_reported)
		return;
	c->closed_reported = true;
	if (c->ops->closed)
		c->ops->closed(c->ctx, err);
}

uint32_t utcp_smss(const struct utcp_conn *c)
{
	uint32_t m = c->mss ? c->mss : c->cfg.mss;

	if (c->ts_ok)
		m -= 12;
	return m;
}

uint32_t utcp_rcv_space(const struct utcp_conn *c)
{
	uint32_t max = 65535u << c->rcv_wscale;
	uint32_t space = c->cfg.rcv_buf > c->rcv_unread ? c->cfg.rcv_buf - c->rcv_unread : 0;

	return space < max ? space : max;
}

static void conn_reset_vars(struct utcp_conn *c)
{
	struct utcp_info keep = c->st;

	c->iss = c->cfg.iss;
	c->snd_una = c->snd_nxt = c->snd_max = c->iss;
	c->rto = c->cfg.rto_init_ns;
	c->mss = c->cfg.mss;
	c->rcv_wscale = 0;
	if (!c->cfg.no_wscale)
		while (c->rcv_wscale < 14 && (c->cfg.rcv_buf >> c->rcv_wscale) > 65535)
			c->rcv_wscale++;
	c->cc = c->cfg.cc == UTCP_CC_NEWRENO ? &utcp_cc_newreno : &utcp_cc_cubic;
	c->cc->init(c);
	c->st = keep;
}

struct utcp_conn *utcp_new(const struct utcp_cfg *cfg, const struct utcp_ops *ops, void *ctx)
{
	struct utcp_conn *c;

	if (!cfg || !ops || !ops->output || !ops->fill) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->cfg = *cfg;
	utcp_cfg_init(&c->cfg);
	if (c->cfg.mss < 64 || c->cfg.mss > 65495 || c->cfg.rcv_buf < c->cfg.mss) {
		free(c);
		errno = EINVAL;
		return NULL;
	}
	c->ops = ops;
	c->ctx = ctx;
	c->state = UTCP_CLOSED;
	conn_reset_vars(c);
	return c;
}

void utcp_free(struct utcp_conn *c)
{
	if (!c)
		return;
	utcp_rq_free(c);
	free(c);
}

int utcp_connect(struct utcp_conn *c, uint64_t now)
{
	if (c->state != UTCP_CLOSED || c->closed_reported)
		return -EISCONN;
	if (!c->cfg.raddr || !c->cfg.rport)
		return -EINVAL;
	c->passive = false;
	conn_reset_vars(c);
	utcp_set_state(c, UTCP_SYN_SENT);
	utcp_send_syn(c, now);
	return 0;
}

int utcp_listen(struct utcp_conn *c)
{
	if (c->state != UTCP_CLOSED || c->closed_reported)
		return -EISCONN;
	c->passive = true;
	conn_reset_vars(c);
	utcp_set_state(c, UTCP_LISTEN);
	return 0;
}

uint32_t utcp_send_space(const struct utcp_conn *c)
{
	uint64_t used = c->snd_queued - c->snd_acked;

	return used >= c->cfg.snd_buf ? 0 : (uint32_t)(c->cfg.snd_buf - used);
}

int utcp_send(struct utcp_conn *c, uint32_t len, uint64_t now)
{
	switch (c->state) {
	case UTCP_SYN_SENT: case UTCP_SYN_RCVD: case UTCP_ESTABLISHED:
	case UTCP_CLOSE_WAIT:
		break;
	case UTCP_CLOSED: case UTCP_LISTEN:
		return -ENOTCONN;
	default:
		return -EPIPE;
	}
	if (c->fin_queued)
		return -EPIPE;
	if (len > utcp_send_space(c))
		return -ENOBUFS;
	c->snd_queued += len;
	if (c->state == UTCP_ESTABLISHED || c->state == UTCP_CLOSE_WAIT)
		utcp_output(c, now);
	return 0;
}

void utcp_recved(struct utcp_conn *c, uint32_t len, uint64_t now)
{
	uint32_t before, after, smss;

	if (len > c->rcv_unread)
		len = c->rcv_unread;
	before = c->rcv_adv - c->rcv_nxt;	/* window the peer knows */
	c->rcv_unread -= len;
	if (c->state < UTCP_ESTABLISHED || c->state == UTCP_TIME_WAIT ||
	    c->state == UTCP_CLOSE_WAIT || c->state == UTCP_LAST_ACK ||
	    c->state == UTCP_CLOSING)
		return;
	after = utcp_rcv_space(c);
	smss = utcp_smss(c);
	/* A pure window update only when the window the peer knows is small
	 * and it at least doubles by a segment or more (RFC 9293 §3.8.6.2.2
	 * receiver SWS avoidance, Linux's rule); otherwise the new window
	 * rides on the next (delayed) ACK. */
	if (after > before && after - before >= smss &&
	    before <= c->cfg.rcv_buf / 2 && after >= 2 * before)
		utcp_send_ack(c, now);
	(void)now;
}

void utcp_push(struct utcp_conn *c, uint64_t now)
{
	if (c->state >= UTCP_ESTABLISHED && c->state != UTCP_TIME_WAIT)
		utcp_output(c, now);
}

void utcp_ack_now(struct utcp_conn *c, uint64_t now)
{
	if (c->state < UTCP_ESTABLISHED || c->state == UTCP_TIME_WAIT)
		return;
	if (c->t_delack || c->segs_unacked || c->ack_now)
		utcp_send_ack(c, now);
}

void utcp_input_batch_begin(struct utcp_conn *c)
{
	c->in_batch = true;
}

void utcp_input_batch_end(struct utcp_conn *c, uint64_t now)
{
	bool owed = c->ack_held;

	c->in_batch = false;
	c->ack_held = false;
	if (owed && c->state >= UTCP_ESTABLISHED && c->state != UTCP_TIME_WAIT)
		utcp_send_ack(c, now);
}

int utcp_close(struct utcp_conn *c, uint64_t now)
{
	switch (c->state) {
	case UTCP_LISTEN: case UTCP_SYN_SENT:
		utcp_report_closed(c, 0);
		return 0;
	case UTCP_SYN_RCVD: case UTCP_ESTABLISHED:
		c->fin_queued = true;
		if (c->state == UTCP_ESTABLISHED) {
			utcp_set_state(c, UTCP_FIN_WAIT_1);
			utcp_output(c, now);
		}
		return 0;
	case UTCP_CLOSE_WAIT:
		c->fin_queued = true;
		utcp_set_state(c, UTCP_LAST_ACK);
		utcp_output(c, now);
		return 0;
	default:
		return -ENOTCONN;
	}
}

void utcp_abort(struct utcp_conn *c, uint64_t now)
{
	(void)now;
	switch (c->state) {
	case UTCP_SYN_RCVD: case UTCP_ESTABLISHED: case UTCP_FIN_WAIT_1:
	case UTCP_FIN_WAIT_2: case UTCP_CLOSE_WAIT:
		utcp_send_rst(c, c->snd_nxt, c->rcv_nxt, true);
		break;
	default:
		break;
	}
	utcp_report_closed(c, -ECONNABORTED);
}

/* Would process_data() deliver @seg's payload whole, at once? */
static bool stage_ok(const struct utcp_conn *c, const struct utcp_seg *seg)
{
	return c->state == UTCP_ESTABLISHED && seg->len &&
	       !(seg->flags & (UTCP_SYN | UTCP_RST | UTCP_FIN)) &&
	       seg->seq == c->rcv_nxt && !c->rq &&
	       seq_leq(seg->seq + seg->len, c->rcv_adv);
}

/*
 * With ops->stage: the TCP checksum of @seg (parsed, not yet verified),
 * fused with the copy to the owner's buffer for a segment that will be
 * delivered whole (one pass over the payload instead of a checksum pass
 * and a copy); summed in place otherwise. Return: 0 or -EBADMSG;
 * c->rx_staged set when the payload waits in the owner's buffer.
 */
static int input_csum(struct utcp_conn *c, const struct utcp_seg *seg)
{
	const uint8_t *t = seg->opts - 20;	/* the TCP header */
	uint32_t thl = (uint32_t)(seg->data - t);
	struct utcp_csum cs;

	utcp_csum_init(&cs, utcp_csum_pseudo(seg->saddr, seg->daddr, 6,
					     thl + seg->len));
	utcp_csum_add(&cs, t, thl);
	if (stage_ok(c, seg) && c->ops->stage(c->ctx, seg->data, seg->len, &cs))
		c->rx_staged = seg->len;
	else
		utcp_csum_add(&cs, seg->data, seg->len);
	if (utcp_csum_final(&cs)) {
		c->rx_staged = 0;
		return -EBADMSG;
	}
	return 0;
}

int utcp_input(struct utcp_conn *c, const uint8_t *pkt, size_t len, uint64_t now)
{
	struct utcp_seg seg;
	struct utcp_opts o;
	int rc = utcp_seg_parse(pkt, len, !c->ops->stage, &seg);

	c->rx_staged = 0;
	if (!rc && c->ops->stage)
		rc = input_csum(c, &seg);
	if (rc) {
		if (rc == -EBADMSG)
			c->st.csum_errors++;
		else
			c->st.bad_segs++;
		return rc;
	}
	if (seg.daddr != c->cfg.laddr || seg.dport != c->cfg.lport)
		return -ENOENT;
	if (c->state == UTCP_LISTEN) {
		if ((c->cfg.raddr && seg.saddr != c->cfg.raddr) ||
		    (c->cfg.rport && seg.sport != c->cfg.rport))
			return -ENOENT;
	} else if (seg.saddr != c->cfg.raddr || seg.sport != c->cfg.rport) {
		return -ENOENT;
	}
	if (utcp_opts_parse(seg.opts, seg.optlen, &o)) {
		c->st.bad_segs++;
		return -EINVAL;
	}
	c->st.segs_in++;
	utcp_segment_arrives(c, &seg, &o, now);
	c->rx_staged = 0;
	return 0;
}

void utcp_counters(const struct utcp_conn *c, uint64_t *retrans,
		   uint64_t *sacked)
{
	*retrans = c->st.segs_retrans;
	*sacked = c->st.bytes_sacked;
}

void utcp_rcv_edges(const struct utcp_conn *c, uint32_t *irs, uint32_t *nxt,
		    uint32_t *high)
{
	*irs = c->irs;
	*nxt = c->rcv_nxt;
	/* the queue is ascending: its last entry ends highest */
	*high = c->rq_tail ? c->rq_tail->seq + c->rq_tail->len : c->rcv_nxt;
}

void utcp_get_info(const struct utcp_conn *c, struct utcp_info *i)
{
	*i = c->st;
	i->state = c->state;
	i->iss = c->iss;
	i->irs = c->irs;
	i->snd_una = c->snd_una;
	i->snd_nxt = c->snd_nxt;
	i->snd_max = c->snd_max;
	i->snd_wnd = c->snd_wnd;
	i->rcv_nxt = c->rcv_nxt;
	i->rcv_wnd = c->rcv_adv - c->rcv_nxt;
	i->cwnd = c->cwnd;
	i->ssthresh = c->ssthresh;
	i->mss = c->mss;
	i->smss = utcp_smss(c);
	i->snd_wscale = c->snd_wscale;
	i->rcv_wscale = c->rcv_wscale;
	i->ts_ok = c->ts_ok;
	i->sack_ok = c->sack_ok;
	i->ws_ok = c->ws_ok;
	i->in_recovery = c->in_recovery;
	i->srtt_ns = c->srtt;
	i->rttvar_ns = c->rttvar;
	i->rto_ns = c->rto;
	i->backoff = c->backoff;
	i->snd_acked = c->snd_acked;
	i->snd_queued = c->snd_queued;
	i->rcv_delivered = c->rcv_delivered;
	i->sack_blocks = (unsigned int)c->sb.n;
}

int utcp_sack_get(const struct utcp_conn *c, uint32_t *start, uint32_t *end, int max)
{
	int n = c->sb.n < max ? c->sb.n : max;

	for (int i = 0; i < n; i++) {
		start[i] = c->sb.s[i];
		end[i] = c->sb.e[i];
	}
	return n;
}
