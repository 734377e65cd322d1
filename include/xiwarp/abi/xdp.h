/* SPDX-License-Identifier: MIT */
/*
 * BPF <-> user interface of bpf/xiw_xdp.bpf.c: the XDP program of the xsk
 * transport (AF_XDP + user-space TCP).
 *
 * The program steers the TCP segments of registered connections (flow map,
 * keyed by the 4-tuple as seen on receive) and SYNs to registered
 * listening ports (listen map) to the AF_XDP socket in the XSKMAP slot of
 * the frame's RX queue; everything else is XDP_PASS. For a steered segment
 * in which an FPDU starts (its payload begins one on an FPDU-aligned flow,
 * or covers the tracked next-FPDU sequence number of an
 * XIW_XDP_FLOW_TRACK flow) it parses the MPA length, DDP and RDMAP
 * headers of that FPDU and puts a struct xiw_xdp_meta in front of the frame
 * (bpf_xdp_adjust_meta). A segment whose FPDU header is malformed is
 * steered without a record and counted: the engine parses it again and
 * answers with TERMINATE. Nothing is dropped by the program.
 *
 * Byte order: map keys hold addresses and ports in network byte order, as
 * in the packet (user space converts with htonl/htons); every other field
 * (flow values, counters, the metadata record) is host byte order.
 *
 * Maps (found by name from the attached program's id, see
 * user/tools/xiwctl.c; names are at most 15 characters):
 *   xiw_flows   hash       struct xiw_xdp_flow_key   -> struct xiw_xdp_flow
 *   xiw_listen  hash       struct xiw_xdp_listen_key -> struct xiw_xdp_listen
 *   xiw_xsks    xskmap     __u32 slot (RX queue)     -> AF_XDP socket fd
 *   xiw_xdp_cnt percpu arr __u32 enum xiw_xdp_counter -> __u64
 *   xiw_xdp_cfg array      __u32 0                   -> struct xiw_xdp_cfg
 *   xiw_slot_cnt array     __u32 slot (XSKMAP slot)  -> struct xiw_xdp_slot_cnt
 *                          (BPF_F_MMAPABLE: the engine that owns a slot
 *                          adds its TCP counters through a mapping)
 * A change of any layout bumps XIW_XDP_ABI_VERSION; user space also checks
 * the maps' key and value sizes against these structs before use.
 *
 * Included by BPF code and by user code after <linux/types.h>: only
 * __u8.. __u64 here.
 */
#ifndef XIWARP_ABI_XDP_H
#define XIWARP_ABI_XDP_H

#define XIW_XDP_ABI_VERSION	2

/* the program's section and name (ip link ... xdp obj X sec xdp.frags) */
#define XIW_XDP_SEC		"xdp.frags"
#define XIW_XDP_PROG_NAME	"xiw_xdp"

#define XIW_XDP_MAP_FLOWS	"xiw_flows"
#define XIW_XDP_MAP_LISTEN	"xiw_listen"
#define XIW_XDP_MAP_XSKS	"xiw_xsks"
#define XIW_XDP_MAP_CNT		"xiw_xdp_cnt"
#define XIW_XDP_MAP_CFG		"xiw_xdp_cfg"
#define XIW_XDP_MAP_SLOT_CNT	"xiw_slot_cnt"

/* map sizes (max_entries) of the object as built */
#define XIW_XDP_MAX_FLOWS	16384
#define XIW_XDP_MAX_LISTEN	256
#define XIW_XDP_MAX_XSKS	64	/* RX queues an interface may use */

/* address families of the keys: the IP version, not AF_* */
#define XIW_XDP_FAMILY_IPV4	4
#define XIW_XDP_FAMILY_IPV6	6

/**
 * struct xiw_xdp_flow_key - one TCP connection as its segments arrive.
 * @saddr:  the peer's address (the segment's source), network byte order.
 *          IPv4: @saddr[0], @saddr[1..3] zero. IPv6: all 16 octets.
 * @daddr:  our address (the segment's destination), as @saddr.
 * @sport:  the peer's TCP port, network byte order.
 * @dport:  our TCP port, network byte order.
 * @family: XIW_XDP_FAMILY_IPV4 or XIW_XDP_FAMILY_IPV6.
 * @pad:    zero (part of the hashed key).
 *
 * 40 octets, no implicit padding: the key must be zeroed before it is
 * filled, in BPF and in user space alike.
 */
struct xiw_xdp_flow_key {
	__u32 saddr[4];
	__u32 daddr[4];
	__u16 sport;
	__u16 dport;
	__u8 family;
	__u8 pad[3];
};

/* struct xiw_xdp_flow.flags, set by the engine */
#define XIW_XDP_FLOW_FPDU_ALIGNED 0x0001 /* MPA is up and the peer sends
					   * FPDU-aligned segments (RFC 5044
					   * §8, Appendix A): every segment
					   * starts an FPDU */
#define XIW_XDP_FLOW_MARKERS	0x0002	/* the peer inserts markers every 512
					 * stream octets from @mpa_seq0 */
#define XIW_XDP_FLOW_CRC	0x0004	/* MPA CRC is in use (informational:
					 * the CRC field is always on the
					 * wire, RFC 5044 §4.1) */
#define XIW_XDP_FLOW_NO_PARSE	0x0008	/* steer, but never parse FPDUs */
#define XIW_XDP_FLOW_TRACK	0x0010	/* follow FPDU boundaries from
					 * @fpdu_seq (any sender): see struct
					 * xiw_xdp_flow; ignored together
					 * with XIW_XDP_FLOW_MARKERS */

/* struct xiw_xdp_flow.fpdu_state (XIW_XDP_FLOW_TRACK) */
#define XIW_XDP_TRACK_OFF	0	/* not following */
#define XIW_XDP_TRACK_SYNCED	1	/* @fpdu_seq is the next FPDU's
					 * length field */
#define XIW_XDP_TRACK_LOST	2	/* the program gave up (malformed or
					 * cut length field, too many FPDUs
					 * in one segment): no records until
					 * the engine writes a new @fpdu_seq
					 * and SYNCED */

/* struct xiw_xdp_flow.xsk: use the frame's RX queue as the XSKMAP slot */
#define XIW_XDP_XSK_BY_RXQ	0xffffffffu

/**
 * struct xiw_xdp_flow - what the engine tells the program about a flow.
 * @conn_id:  the engine's connection id; copied into the metadata record.
 * @flags:    XIW_XDP_FLOW_*.
 * @xsk:      XSKMAP slot to redirect to, or XIW_XDP_XSK_BY_RXQ.
 * @mpa_seq0: TCP sequence number (host order) of the first octet after the
 *            peer's MPA request/reply: the origin of the marker positions
 *            (XIW_XDP_FLOW_MARKERS only).
 * @fpdu_seq: XIW_XDP_FLOW_TRACK: TCP sequence number (host order) of the
 *            next FPDU's MPA length field (RFC 5044 §4.1). A segment whose
 *            payload covers it gets its FPDUs followed from there (up to
 *            XIW_XDP_TRACK_MAX per segment): a record for the first one,
 *            and @fpdu_seq moves to the first FPDU boundary after the
 *            segment. Segments that do not cover it (out of order: a hole
 *            before them; old data; the middle of a long FPDU) get no
 *            record and change nothing, so loss and reordering only cost
 *            records. The engine writes it (with @fpdu_state SYNCED) once
 *            MPA is up and again whenever the program lost the boundary.
 * @fpdu_state: XIW_XDP_TRACK_*; the program only ever sets LOST.
 * @packets:  segments steered (the program adds atomically).
 * @bytes:    octets of those frames (the program adds atomically).
 *
 * 40 octets, 8-aligned. The program updates @fpdu_seq with plain stores:
 * one RX queue per flow (veth, or RSS that keeps a 4-tuple on one queue)
 * is assumed; a race would only produce records the engine rejects.
 */
struct xiw_xdp_flow {
	__u32 conn_id;
	__u32 flags;
	__u32 xsk;
	__u32 mpa_seq0;
	__u32 fpdu_seq;
	__u32 fpdu_state;
	__u64 packets;
	__u64 bytes;
};

/*
 * In-kernel placement (phase 2, not built yet): what it adds on top of
 * this ABI, so that the record and the flow value grow instead of change.
 *  - The boundary tracking above already finds every FPDU header of any
 *    sender. Placement also needs, per flow, the tagged FPDU in progress,
 *    because a middle segment carries no header: its STag, the TO of the
 *    next payload octet, payload octets left, then pad + CRC octets left.
 *    They join struct xiw_xdp_flow (ABI 3) and move where @fpdu_seq moves.
 *  - An STag map (hash, STag -> base offset in the placement region,
 *    length, access, key, QP id), mirrored by the engine on ibv_reg_mr /
 *    dereg / invalidation (dereg waits until the program cannot hold it);
 *    the region is a BPF_F_MMAPABLE array or an arena that is also the
 *    AF_XDP umem (see DESIGN.md: measured 122 ns per 1448 B copy).
 *  - Only tagged payload (WRITE, READ response) of an in-window segment
 *    whose TCP checksum the program verified is placed; with MPA CRC on
 *    the engine verifies the CRC over the placed octets before it
 *    completes (no CRC32C helper in XDP). The record then says which
 *    octets were placed (a new flag, record version 2) and the frame is
 *    cut to its headers; utcp still runs TCP on it.
 */

/* FPDUs the program follows in one segment before it gives up (LOST):
 * 1448 octets hold at most 60 of the smallest (24-octet) FPDUs */
#define XIW_XDP_TRACK_MAX	64

/**
 * struct xiw_xdp_listen_key - a listening TCP port.
 * @port:   our TCP port, network byte order.
 * @family: XIW_XDP_FAMILY_IPV4 or XIW_XDP_FAMILY_IPV6.
 * @pad:    zero.
 *
 * A SYN (SYN set, ACK clear) to this port on any local address is
 * steered; the engine filters addresses itself.
 */
struct xiw_xdp_listen_key {
	__u16 port;
	__u8 family;
	__u8 pad;
};

/**
 * struct xiw_xdp_listen - a listener.
 * @listen_id: the engine's listener id (not put in metadata: SYNs carry
 *             no payload).
 * @xsk:       XSKMAP slot, or XIW_XDP_XSK_BY_RXQ.
 * @syns:      SYNs steered (the program adds atomically).
 */
struct xiw_xdp_listen {
	__u32 listen_id;
	__u32 xsk;
	__u64 syns;
};

/**
 * enum xiw_xdp_counter - slots of the per-CPU counter array (__u64 each).
 * @XIW_XDP_CNT_RX:        frames the program saw.
 * @XIW_XDP_CNT_PASSED:    frames returned with XDP_PASS (all reasons).
 * @XIW_XDP_CNT_STEERED:   frames redirected to an AF_XDP socket.
 * @XIW_XDP_CNT_SYN:       of those, SYNs to a listening port.
 * @XIW_XDP_CNT_NO_XSK:    registered, but no socket in the XSKMAP slot:
 *                         passed to the kernel instead.
 * @XIW_XDP_CNT_PARSED:    FPDU headers parsed, metadata record written.
 * @XIW_XDP_CNT_MALFORMED: FPDU header invalid: steered without a record.
 * @XIW_XDP_CNT_NO_FPDU:   steered without a record because the segment
 *                         starts no FPDU (no payload, flow not aligned,
 *                         a marker points back, parsing off).
 * @XIW_XDP_CNT_BAD_L3L4:  IPv4/IPv6/TCP header cut short or invalid (IHL,
 *                         data offset, lengths): passed to the kernel,
 *                         which drops it.
 * @XIW_XDP_CNT_META_FAIL: bpf_xdp_adjust_meta refused (driver without
 *                         metadata room): steered without a record.
 * @XIW_XDP_CNT_DROPPED:   frames the program dropped. Always 0: the
 *                         program never drops (the slot keeps the column
 *                         stable; AF_XDP ring drops are the socket's
 *                         XDP_STATISTICS).
 * @XIW_XDP_CNT_TRACK_LOST: XIW_XDP_FLOW_TRACK flows whose boundary the
 *                         program lost (set XIW_XDP_TRACK_LOST).
 * @XIW_XDP_CNT_MAX:       number of slots.
 */
enum xiw_xdp_counter {
	XIW_XDP_CNT_RX,
	XIW_XDP_CNT_PASSED,
	XIW_XDP_CNT_STEERED,
	XIW_XDP_CNT_SYN,
	XIW_XDP_CNT_NO_XSK,
	XIW_XDP_CNT_PARSED,
	XIW_XDP_CNT_MALFORMED,
	XIW_XDP_CNT_NO_FPDU,
	XIW_XDP_CNT_BAD_L3L4,
	XIW_XDP_CNT_META_FAIL,
	XIW_XDP_CNT_DROPPED,
	XIW_XDP_CNT_TRACK_LOST,
	XIW_XDP_CNT_MAX
};

/**
 * struct xiw_xdp_slot_cnt - counters of one XSKMAP slot, i.e. of the
 * AF_XDP socket (and so the process) that owns it; cumulative since the
 * program was loaded, whoever owned the slot. xiwctl stat sums them.
 * @steered: frames the program redirected to this slot (atomic add).
 * @retrans: TCP segments the owner (utcp) retransmitted (atomic add by the
 *           engine through its mapping of the map).
 * @sacked:  octets the owner's peers newly SACKed (utcp's sender
 *           scoreboard grew by them; atomic add by the engine).
 * @meta_used: FPDUs whose header the engine took from the program's
 *           record instead of decoding it (atomic add by the engine).
 * @meta_mismatch: records present for an FPDU start that failed the
 *           engine's checks (connection id, sequence, lengths): it
 *           decoded the header itself (atomic add by the engine).
 * @resync:  times the engine wrote a new @fpdu_seq after the program lost
 *           or passed the boundary (atomic add by the engine).
 * @rsvd:    zero.
 *
 * An object without this map (older build) simply has no such counters:
 * user space treats the map as optional.
 */
struct xiw_xdp_slot_cnt {
	__u64 steered;
	__u64 retrans;
	__u64 sacked;
	__u64 meta_used;
	__u64 meta_mismatch;
	__u64 resync;
	__u64 rsvd[2];
};

/* struct xiw_xdp_cfg.flags */
#define XIW_XDP_CFG_NO_PARSE	0x0001	/* steer only, never parse FPDUs */
#define XIW_XDP_CFG_ZEROCOPY	0x0002	/* the operator asked for zero-copy
					 * AF_XDP (xiwctl attach --zc): the
					 * engine binds with XDP_ZEROCOPY and
					 * fails rather than fall back */
#define XIW_XDP_CFG_MODE_GENERIC 0x0004	/* attached in generic (skb) mode */

/**
 * struct xiw_xdp_cfg - run-time settings (array map, one slot), written
 * by xiwctl and the engine, read by the program on every steered frame.
 * @flags:   XIW_XDP_CFG_*.
 * @abi:     XIW_XDP_ABI_VERSION of whoever wrote the slot; 0 = never set.
 */
struct xiw_xdp_cfg {
	__u32 flags;
	__u32 abi;
};

#define XIW_XDP_META_MAGIC	0x7869	/* "xi" */
#define XIW_XDP_META_VERSION	1

/* struct xiw_xdp_meta.flags */
#define XIW_XDP_META_F_TAGGED	0x0001	/* DDP T: @stag and @to are valid,
					 * else @qn, @msn and @mo */
#define XIW_XDP_META_F_LAST	0x0002	/* DDP L: last segment of a message */
#define XIW_XDP_META_F_FPDU_START 0x0004 /* the FPDU's length field is at
					  * @fpdu_off (always set in v1) */
#define XIW_XDP_META_F_MARKER	0x0008	/* a marker (FPDUPTR 0) preceded the
					 * FPDU: @fpdu_off = @payload_off + 4 */
#define XIW_XDP_META_F_CONTINUES 0x0010	/* the FPDU (length, ULPDU, pad, CRC,
					 * markers) ends beyond this segment */
#define XIW_XDP_META_F_MORE	0x0020	/* octets follow the FPDU in this
					 * segment (the next FPDU, not parsed) */
#define XIW_XDP_META_F_CRC_UNCHECKED 0x0040 /* the CRC was not verified
					     * (always set in v1: the engine
					     * verifies) */
#define XIW_XDP_META_F_TRACKED	0x0080	/* found by following boundaries
					 * (XIW_XDP_FLOW_TRACK): @fpdu_off may
					 * lie anywhere in the payload */

/**
 * struct xiw_xdp_meta - the record in front of a steered frame that
 * starts an FPDU (data_meta .. data). 32 octets: the XDP metadata limit of
 * older kernels (xdp_metalen_invalid); 6.18 here accepted up to 216 in a
 * test run, so in-kernel placement (phase 2) may grow the record, through
 * a new @version (and a reader that checks it). Fields are naturally
 * aligned.
 *
 * All fields host byte order (the program converts from the wire's
 * big-endian). The engine trusts nothing here blindly: it checks what it
 * uses against the frame.
 *
 * @magic:       XIW_XDP_META_MAGIC.
 * @version:     XIW_XDP_META_VERSION; a reader rejects others.
 * @opcode:      RDMAP opcode (RFC 5040 §4.3, enum xiw_rdmap_opcode); DDP
 *               and RDMAP versions were checked (both 1).
 * @conn_id:     struct xiw_xdp_flow.conn_id of the flow.
 * @to:          tagged: the tagged offset in octets (RFC 5041 §4.3).
 * @msn:         untagged: the message sequence number (RFC 5041 §4.4).
 * @mo:          untagged: the message offset in octets.
 * @tcp_seq:     TCP sequence number of the segment's first payload octet.
 * @stag:        tagged: the STag.
 * @qn:          untagged: the queue number.
 * @payload_off: octets from the frame's first octet (Ethernet header,
 *               xdp_md.data) to the TCP payload.
 * @fpdu_off:    octets from the frame's first octet to the FPDU's MPA
 *               length field (@payload_off, or + 4 after a marker; with
 *               XIW_XDP_META_F_TRACKED anywhere in the payload: the first
 *               FPDU that starts in the segment). Its TCP sequence number
 *               is @tcp_seq + @fpdu_off - @payload_off.
 * @ulpdu_len:   MPA ULPDU length in octets (DDP header + payload, without
 *               length field, pad, CRC and markers), RFC 5044 §4.1.
 * @flags:       XIW_XDP_META_F_* (DDP T and L among them).
 */
struct xiw_xdp_meta {
	__u16 magic;
	__u8 version;
	__u8 opcode;
	__u32 conn_id;
	union {
		__u64 to;
		struct {
			__u32 msn;
			__u32 mo;
		};
	};
	__u32 tcp_seq;
	union {
		__u32 stag;
		__u32 qn;
	};
	__u16 payload_off;
	__u16 fpdu_off;
	__u16 ulpdu_len;
	__u16 flags;
};

_Static_assert(sizeof(struct xiw_xdp_meta) == 32,
	       "record v1 is 32 octets (older kernels' metadata limit)");
_Static_assert(sizeof(struct xiw_xdp_flow_key) == 40, "flow key layout");
_Static_assert(sizeof(struct xiw_xdp_flow) == 40, "flow value layout");
_Static_assert(sizeof(struct xiw_xdp_slot_cnt) == 64, "slot counters layout");

#endif /* XIWARP_ABI_XDP_H */
