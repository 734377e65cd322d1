// SPDX-License-Identifier: MIT
/*
 * xsk: what a received frame is, before any connection state is touched
 * (a parser of untrusted input: tests/fuzz/fuzz_xsk_frame.c).
 *
 * A frame is Ethernet II + IPv4 + TCP (utcp_seg_parse checks the IPv4
 * header, its checksum and the TCP header; the TCP checksum is utcp's
 * job later). In front of it the XDP program may have put a metadata
 * record (bpf/xiw_xdp.bpf.c, include/xiwarp/abi/xdp.h); it is used only
 * when everything it claims about this frame holds: version, TCP
 * sequence, payload offset, and the MPA length found at its FPDU offset.
 */
#include <errno.h>
#include <string.h>
#include "xsk.h"

int xsk_frame_parse(const uint8_t *f, uint32_t len, uint32_t headroom,
		    struct utcp_seg *s, struct xiw_xdp_meta *meta)
{
	struct xiw_xdp_meta m;
	uint32_t poff;

	if (len < 14 + 20 || f[12] != 0x08 || f[13] != 0x00 ||
	    utcp_seg_parse(f + 14, len - 14, false, s))
		return -EINVAL;
	if (headroom < sizeof(m))
		return 0;
	memcpy(&m, f - sizeof(m), sizeof(m));
	if (m.magic != XIW_XDP_META_MAGIC)
		return 0;	/* no record (or stale bytes): nothing to check */
	poff = (uint32_t)(s->data - f);
	if (m.version != XIW_XDP_META_VERSION || m.tcp_seq != s->seq ||
	    m.payload_off != poff || m.fpdu_off < poff ||
	    (uint32_t)m.fpdu_off + 2 > len ||
	    ((uint32_t)f[m.fpdu_off] << 8 | f[m.fpdu_off + 1]) != m.ulpdu_len)
		return -EBADMSG;
	*meta = m;
	return 1;
}
