// SPDX-License-Identifier: MIT
/*
 * xsk: the XDP program's FPDU records (struct xiw_xdp_meta) on their way
 * to the engine's receive machine, and keeping the program on the FPDU
 * boundaries (XIW_XDP_FLOW_TRACK, include/xiwarp/abi/xdp.h).
 *
 * Once the QP owns the stream (xiw_llp_fpdu_stream) the flow's map entry
 * gets the TCP sequence number of FPDU 0 and the program follows the MPA
 * lengths from there in every segment that covers its next boundary. A
 * checked record (xsk_frame_parse: sequence, offsets, MPA length match the
 * frame) of this connection waits here, keyed by its FPDU's sequence
 * number, until the engine reaches that FPDU (xiw_llp_fpdu_meta). Records
 * for offsets the engine never asks about (not a boundary after all) are
 * dropped and counted as mismatches.
 *
 * Re-sync: the program stops on a malformed or cut length field (LOST) and
 * waits in vain when the segment that covers its boundary went by before
 * (it was out of order: the retransmission that filled the hole moved the
 * boundary into data already held). The engine reports each FPDU's end
 * (xiw_llp_fpdu_done); after record-less FPDUs, at most once per
 * RESYNC_NS, such an end that lies beyond every octet received so far
 * becomes the program's boundary again. Segments still in the RX ring may
 * already have passed it: then records stay away until the next try.
 *
 * Markers (RFC 5044 §4.3) are not followed: such flows get no records.
 * Locks: c->lock for the queue and the counters' decisions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "xiwarp/xiwarp.h"
#include "xsk.h"

#define RESYNC_NS	1000000ull	/* at most one map look-up per ms */
#define RESYNC_MISSES	2		/* record-less FPDUs before one */

static bool seq_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* Point the flow's program state at @seq (SYNCED). 0 or -errno. */
static int fp_write(struct xsk_conn *c, uint32_t seq)
{
	return xsk_flow_set_track(&c->port->maps, &c->key, seq,
				  XIW_XDP_TRACK_SYNCED);
}

static void fp_count(struct xsk_conn *c, uint64_t used, uint64_t mism,
		     uint64_t resync)
{
	xsk_maps_count_meta(&c->port->maps, c->port->slot, used, mism, resync);
}

void xsk_fpdu_stream(struct xiw_llp *l, bool crc, bool markers)
{
	struct xsk_conn *c = (struct xsk_conn *)l;
	uint32_t irs, nxt, high;

	(void)crc;	/* the CRC field is on the wire either way (§4.1) */
	if (markers)
		return;
	pthread_mutex_lock(&c->lock);
	if (!c->fpq)
		c->fpq = calloc(1, sizeof(*c->fpq));
	if (c->fpq && c->flow_added) {
		utcp_rcv_edges(c->tcp, &irs, &nxt, &high);
		c->fp_irs1 = irs + 1;
		c->fp_seq0 = c->fp_irs1 + (uint32_t)c->r_tail;
		c->fpq->head = c->fpq->tail = 0;
		c->fp_on = !fp_write(c, c->fp_seq0);
	}
	pthread_mutex_unlock(&c->lock);
}

void xsk_fpdu_push(struct xsk_conn *c, const struct xiw_xdp_meta *m)
{
	struct xsk_fpq *q = c->fpq;
	struct xsk_fpq_ent *e;
	uint32_t seq = m->tcp_seq + (uint32_t)(m->fpdu_off - m->payload_off);

	if (!c->fp_on || !q || m->conn_id != c->id ||
	    !(m->flags & XIW_XDP_META_F_TRACKED))
		return;
	/* a duplicate or retransmission of octets the engine has read: the
	 * program was behind (waiting for a boundary that went by) and this
	 * old copy covered it; right, but too late to be asked for */
	if (!seq_after(seq, c->fp_irs1 + (uint32_t)c->r_tail - 1))
		return;
	if (q->tail - q->head == XSK_FPQ_LEN)
		return;	/* the engine is far behind: it decodes those */
	e = &q->e[q->tail++ % XSK_FPQ_LEN];
	e->seq = seq;
	e->f = (struct xiw_llp_fpdu){
		.ulpdu_len = m->ulpdu_len, .opcode = m->opcode,
		.tagged = !!(m->flags & XIW_XDP_META_F_TAGGED),
		.last = !!(m->flags & XIW_XDP_META_F_LAST),
	};
	if (e->f.tagged) {
		e->f.stag = m->stag;
		e->f.to = m->to;
	} else {
		e->f.qn = m->qn;
		e->f.msn = m->msn;
		e->f.mo = m->mo;
	}
}

int xsk_fpdu_meta(struct xiw_llp *l, uint64_t off, struct xiw_llp_fpdu *out)
{
	struct xsk_conn *c = (struct xsk_conn *)l;
	uint32_t seq, stale = 0;
	int found = 0;

	pthread_mutex_lock(&c->lock);
	if (c->fp_on && c->fpq) {
		struct xsk_fpq *q = c->fpq;

		seq = c->fp_seq0 + (uint32_t)off;
		while (q->head != q->tail) {
			struct xsk_fpq_ent *e = &q->e[q->head % XSK_FPQ_LEN];

			if (seq_after(e->seq, seq))
				break;	/* a later FPDU's */
			q->head++;
			if (e->seq != seq) {
				stale++;	/* not a boundary */
				continue;
			}
			*out = e->f;
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (stale)
		fp_count(c, 0, stale, 0);
	return found;
}

/*
 * Give the program the boundary @next (a TCP sequence number) when it is
 * lost, was passed, or produced a record the engine rejected (@bad), and
 * no octet at or after @next has arrived yet. c->lock held.
 */
static void fp_resync(struct xsk_conn *c, uint32_t next, bool bad)
{
	struct xiw_xdp_flow f;
	uint32_t irs, nxt, high;
	uint64_t now = xiw_now_ns();

	if (now < c->fp_check_at)
		return;
	utcp_rcv_edges(c->tcp, &irs, &nxt, &high);
	if (!seq_after(next, high))
		return;	/* the program may have seen it: a later FPDU's end */
	c->fp_check_at = now + RESYNC_NS;
	if (xsk_flow_get(&c->port->maps, &c->key, &f))
		return;
	if (!bad && f.fpdu_state == XIW_XDP_TRACK_SYNCED &&
	    seq_after(f.fpdu_seq, nxt))
		return;	/* waiting for data to come: fine */
	if (!fp_write(c, next)) {
		c->fp_miss = 0;
		fp_count(c, 0, 0, 1);
	}
}

void xsk_fpdu_done(struct xiw_llp *l, enum xiw_llp_meta_res res,
		   uint64_t next_off)
{
	struct xsk_conn *c = (struct xsk_conn *)l;

	if (res == XIW_LLP_META_USED) {
		c->fp_miss = 0;	/* rx_lock serialises the engine's calls */
		fp_count(c, 1, 0, 0);
		return;
	}
	if (res == XIW_LLP_META_MISMATCH)
		fp_count(c, 0, 1, 0);
	if (!c->fp_on || ++c->fp_miss < RESYNC_MISSES)
		return;
	pthread_mutex_lock(&c->lock);
	if (!c->tcp_closed)
		fp_resync(c, c->fp_seq0 + (uint32_t)next_off,
			  res == XIW_LLP_META_MISMATCH);
	pthread_mutex_unlock(&c->lock);
}
