// SPDX-License-Identifier: MIT
/*
 * libFuzzer: xsk_frame_parse() (user/transport/xsk_frame.c) on arbitrary
 * frames and metadata records, as the AF_XDP RX ring hands them over.
 *
 * Input: byte 0: headroom (0..255) in front of the frame; if it is >= 32
 * the next 32 bytes are the record in front of the frame (half the time
 * made to look right: magic, version, the frame's sequence number and
 * payload offset); the rest is the frame, whose IPv4 header checksum is
 * made right when the record's flags ask (so parsing goes deeper).
 * Checked: no read outside the frame buffer (ASan), and a record is
 * accepted only if it matches.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "xsk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xiw_xdp_meta m;
	struct utcp_seg s;
	struct xiw_xdp_meta got;
	uint32_t head, len;
	uint8_t *buf, *f;
	int r;

	if (size < 1)
		return 0;
	head = data[0];
	data++;
	size--;
	if (head >= sizeof(m) && size >= sizeof(m)) {
		memcpy(&m, data, sizeof(m));
		data += sizeof(m);
		size -= sizeof(m);
	} else {
		memset(&m, 0, sizeof(m));
	}
	len = (uint32_t)size;
	/* exactly headroom + frame: ASan sees any read outside */
	buf = malloc(head + len + 1);
	if (!buf)
		return 0;
	f = buf + head;
	memset(buf, 0, head);
	memcpy(f, data, len);
	if ((m.flags & 2) && len >= 14 + 20) {	/* a valid IPv4 header sum */
		uint32_t ihl = (f[14] & 0xf) * 4u;
		struct utcp_csum cs;
		uint16_t sum;

		if (ihl >= 20 && 14 + ihl <= len) {
			f[24] = f[25] = 0;
			utcp_csum_init(&cs, 0);
			utcp_csum_add(&cs, f + 14, ihl);
			sum = utcp_csum_final(&cs);
			f[24] = (uint8_t)(sum >> 8);
			f[25] = (uint8_t)sum;
		}
	}
	if (head >= sizeof(m)) {
		if ((m.flags & 1) && len > 14 + 40) {
			struct utcp_seg t;

			if (!utcp_seg_parse(f + 14, len - 14, false, &t)) {
				m.magic = XIW_XDP_META_MAGIC;
				m.version = XIW_XDP_META_VERSION;
				m.tcp_seq = t.seq;
				m.payload_off = (uint16_t)(t.data - f);
			}
		}
		memcpy(f - sizeof(m), &m, sizeof(m));
	}
	r = xsk_frame_parse(f, len, head, &s, &got);
	if (r == 1) {
		/* what was accepted must hold */
		if (m.tcp_seq != s.seq || m.payload_off != (uint32_t)(s.data - f) ||
		    (uint32_t)m.fpdu_off + 2 > len || memcmp(&got, &m, sizeof(m)) ||
		    ((uint32_t)f[m.fpdu_off] << 8 | f[m.fpdu_off + 1]) != m.ulpdu_len)
			abort();
	} else if (r != 0 && r != -EBADMSG && r != -EINVAL) {
		abort();
	}
	free(buf);
	return 0;
}
