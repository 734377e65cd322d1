// SPDX-License-Identifier: MIT
/*
 * utcp: the sender's SACK scoreboard (RFC 2018, RFC 6675 §4).
 *
 * A sorted array of disjoint [s, e) sequence ranges the peer SACKed, all
 * above snd_una and at most snd_max. With no copy of sent data (seed 002)
 * this is the whole retransmission state: holes between ranges are what
 * gets re-framed from the owner's buffers, SACKed ranges are skipped.
 * If more than UTCP_SB_MAX ranges would be needed the highest ones are
 * forgotten (their data may then be retransmitted needlessly, never lost).
 */
#include <string.h>
#include "utcp_int.h"

static void sb_del(struct utcp_sb *sb, int i)
{
	memmove(&sb->s[i], &sb->s[i + 1], (size_t)(sb->n - i - 1) * sizeof(sb->s[0]));
	memmove(&sb->e[i], &sb->e[i + 1], (size_t)(sb->n - i - 1) * sizeof(sb->e[0]));
	sb->n--;
}

void utcp_sb_add(struct utcp_sb *sb, uint32_t una, uint32_t snd_max,
		 uint32_t s, uint32_t e)
{
	int i;

	/* RFC 2018 §5 / RFC 5961: ignore blocks outside (una, snd_max] */
	if (!seq_lt(s, e))
		return;
	if (seq_leq(e, una) || seq_gt(e, snd_max) || seq_geq(s, snd_max))
		return;
	if (seq_lt(s, una))
		s = una;
	/* find first range that ends at or after s (may merge) */
	for (i = 0; i < sb->n && seq_lt(sb->e[i], s); i++)
		;
	if (i < sb->n && seq_leq(sb->s[i], e)) {
		/* overlaps or touches range i: grow it, swallow followers */
		sb->s[i] = seq_min(sb->s[i], s);
		sb->e[i] = seq_max(sb->e[i], e);
		while (i + 1 < sb->n && seq_leq(sb->s[i + 1], sb->e[i])) {
			sb->e[i] = seq_max(sb->e[i], sb->e[i + 1]);
			sb_del(sb, i + 1);
		}
		return;
	}
	if (sb->n == UTCP_SB_MAX) {
		if (i == sb->n)
			return;		/* the new one would be the highest */
		sb->n--;		/* forget the highest */
	}
	memmove(&sb->s[i + 1], &sb->s[i], (size_t)(sb->n - i) * sizeof(sb->s[0]));
	memmove(&sb->e[i + 1], &sb->e[i], (size_t)(sb->n - i) * sizeof(sb->e[0]));
	sb->s[i] = s;
	sb->e[i] = e;
	sb->n++;
}

void utcp_sb_ack(struct utcp_sb *sb, uint32_t una)
{
	while (sb->n && seq_leq(sb->e[0], una))
		sb_del(sb, 0);
	if (sb->n && seq_lt(sb->s[0], una))
		sb->s[0] = una;
}

uint32_t utcp_sb_sacked(const struct utcp_sb *sb, uint32_t a, uint32_t b)
{
	uint32_t n = 0;

	for (int i = 0; i < sb->n; i++) {
		uint32_t s = seq_max(sb->s[i], a), e = seq_min(sb->e[i], b);

		if (seq_lt(s, e))
			n += e - s;
	}
	return n;
}

bool utcp_sb_is_sacked(const struct utcp_sb *sb, uint32_t seq)
{
	for (int i = 0; i < sb->n; i++)
		if (seq_in(seq, sb->s[i], sb->e[i]))
			return true;
	return false;
}

bool utcp_sb_next_hole(const struct utcp_sb *sb, uint32_t from, uint32_t limit,
		       uint32_t *hs, uint32_t *he)
{
	uint32_t x = from;

	for (int i = 0; i < sb->n && seq_lt(x, limit); i++) {
		if (seq_leq(sb->e[i], x))
			continue;
		if (seq_lt(x, sb->s[i])) {
			*hs = x;
			*he = seq_min(sb->s[i], limit);
			return true;
		}
		x = sb->e[i];	/* x inside a SACKed range: skip it */
	}
	if (seq_lt(x, limit)) {
		*hs = x;
		*he = limit;
		return true;
	}
	return false;
}

/*
 * RFC 6675 §4 IsLost(): a byte is lost when DupThresh discontiguous SACKed
 * ranges, or more than (DupThresh - 1) * SMSS SACKed bytes, lie above it.
 * Returns L such that every unSACKed byte below L is lost (una if none).
 */
uint32_t utcp_sb_lost_boundary(const struct utcp_sb *sb, uint32_t una, uint32_t smss)
{
	uint32_t bytes = 0;

	for (int i = sb->n - 1, k = 1; i >= 0; i--, k++) {
		bytes += sb->e[i] - sb->s[i];
		if (k >= UTCP_DUPTHRESH || bytes > (UTCP_DUPTHRESH - 1) * smss)
			return sb->s[i];
	}
	return una;
}
