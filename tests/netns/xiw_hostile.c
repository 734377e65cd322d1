/* SPDX-License-Identifier: MIT */
/*
 * xiw_hostile — a raw TCP peer that speaks MPA/DDP/RDMAP by hand and sends
 * ONE malformed or hostile FPDU to an iWARP victim (tests/netns/xiw_victim),
 * then reports whether a TERMINATE came back and what it said.
 *
 * Every byte is built here from the RFCs (MPA RFC 5044 + RFC 6581, DDP
 * RFC 5041, RDMAP RFC 5040), with a private CRC32C: nothing from the xiwarp
 * engine is used, so an encoder bug there cannot hide a decoder bug.
 *
 * Exit: 0 the expected outcome was seen, 1 it was not, 2 usage or setup
 * failure (could not connect, MPA rejected, ...).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ wire ---- */

/* RFC 5044 §7.1: MPA request/reply keys and the flag bits of byte 16. */
static const char MPA_KEY_REQ[16] = "MPA ID Req Frame";
static const char MPA_KEY_REP[16] = "MPA ID Rep Frame";
#define MPA_F_MARKERS 0x80
#define MPA_F_CRC 0x40
#define MPA_F_REJECT 0x20
#define MPA_F_ENHANCED 0x10	/* RFC 6581: set with revision 2 (siw checks) */
/* RFC 6581 §5: IRD/ORD words at the start of the v2 private data. */
#define MPA_V2_P2P 0x8000	/* IRD word */
#define MPA_V2_ZERO_RTR 0x4000	/* IRD word: RTR messages are zero length */
#define MPA_V2_WRITE_RTR 0x8000	/* ORD word */
#define MPA_V2_READ_RTR 0x4000	/* ORD word */
#define MPA_V2_MASK 0x3fff

/* RFC 5041 §4.2/4.3, RFC 5040 §4.2: the 16-bit DDP+RDMAP control field. */
#define DDP_T 0x80		/* byte 0: tagged */
#define DDP_L 0x40		/* byte 0: last segment */
#define DDP_VERSION 1
#define RDMAP_VERSION 1
enum { OP_WRITE = 0, OP_READ_REQ = 1, OP_READ_RESP = 2, OP_SEND = 3,
       OP_TERMINATE = 7 };
enum { QN_SEND = 0, QN_READ = 1, QN_TERM = 2 };
#define TAGGED_HDR 14		/* ctrl 2 + STag 4 + TO 8 */
#define UNTAGGED_HDR 18		/* ctrl 2 + rsvd 4 + QN 4 + MSN 4 + MO 4 */
#define READ_REQ_HDR 28		/* sink STag/TO, size, source STag/TO */

/* xiw_victim fills its MR with this byte: a READ response carrying
 * anything else carries memory from outside the MR. */
#define MR_FILL 0x5A

/* Our fake sink STag for READ responses (we never check where they land). */
#define HOSTILE_SINK_STAG 0x00c0ffeeu

/* ---------------------------------------------------------- CRC32C ---- */

static uint32_t crc_table[256];

/* Castagnoli, reflected polynomial 0x82F63B78 (RFC 3720 B.4). */
static void crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32c_update(uint32_t st, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len--)
		st = crc_table[(st ^ *p++) & 0xff] ^ (st >> 8);
	return st;
}

static uint32_t crc32c(const void *buf, size_t len)
{
	return ~crc32c_update(0xffffffffu, buf, len);
}

/* The MPA trailer is the final CRC in little-endian byte order (what
 * Linux siw and the iSCSI convention put on the wire). */
static void crc_put(uint8_t out[4], uint32_t crc)
{
	for (int i = 0; i < 4; i++)
		out[i] = (uint8_t)(crc >> (8 * i));
}

static uint32_t crc_get(const uint8_t in[4])
{
	return in[0] | in[1] << 8 | in[2] << 16 | (uint32_t)in[3] << 24;
}

/* RFC 3720 B.4 vectors; a mistake here would make every CRC case moot. */
static int crc_selftest(void)
{
	uint8_t z[32] = { 0 }, f[32], inc[32], t[4];
	int bad = 0;

	memset(f, 0xff, sizeof(f));
	for (int i = 0; i < 32; i++)
		inc[i] = (uint8_t)i;
	bad |= crc32c(z, 32) != 0x8a9136aau;
	bad |= crc32c(f, 32) != 0x62a8ab43u;
	bad |= crc32c(inc, 32) != 0x46dd794eu;
	bad |= crc32c("123456789", 9) != 0xe3069283u;
	crc_put(t, crc32c(z, 32));	/* iSCSI puts aa 36 91 8a on the wire */
	bad |= !(t[0] == 0xaa && t[1] == 0x36 && t[2] == 0x91 && t[3] == 0x8a);
	printf("crc32c selftest: %s\n", bad ? "FAIL" : "ok");
	return bad ? 1 : 0;
}

/* ------------------------------------------------------------ bytes --- */

static void be16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = (uint8_t)v; }
static void be32(uint8_t *p, uint32_t v) { be16(p, v >> 16); be16(p + 2, (uint16_t)v); }
static void be64(uint8_t *p, uint64_t v) { be32(p, v >> 32); be32(p + 4, (uint32_t)v); }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) << 16 | rd16(p + 2); }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) << 32 | rd32(p + 4); }

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------- options ------ */

struct opts {
	const char *host, *port, *kase;
	bool crc, p2p, verbose, require_close;
	int rtr;		/* offer: 1 write, 2 read, 3 both */
	double timeout;		/* seconds to wait for TERMINATE + close */
	unsigned seed;
};

/* Negotiated connection state. */
struct conn {
	int fd;
	bool crc;
	uint32_t stag, len;	/* the victim's MR, from its MPA private data */
	uint64_t addr;
	uint16_t ird, ord;	/* the victim's, from its v2 reply */
	int rtr;		/* RTR the victim chose: 0 none, 1 write, 2 read */
	uint32_t msn[3];	/* next MSN per untagged queue (start at 1) */
	/* headers of the FPDUs we sent, to check the one a TERMINATE names */
	struct sent { uint8_t hdr[UNTAGGED_HDR + READ_REQ_HDR]; uint16_t ulen; } sent[64];
	unsigned nsent;
};

/* What came back from the victim. */
struct seen {
	bool term, eof, desync, bad_crc, reset;
	bool named_ok;		/* the header a TERMINATE quotes is one we sent */
	bool named;		/* it quoted one at all (D bit) */
	uint8_t layer, etype, ecode, flags;
	unsigned fpdus, read_resp;
	uint64_t read_bytes, read_foreign;	/* bytes that are not MR_FILL */
};

/* ------------------------------------------------------ socket I/O ---- */

static int send_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read exactly @len bytes before @deadline. Return 0, -ETIMEDOUT, -EPIPE
 * (orderly EOF) or -errno. */
static int recv_exact(int fd, void *buf, size_t len, double deadline)
{
	uint8_t *p = buf;

	while (len) {
		int ms = (int)((deadline - now_s()) * 1000);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (ms <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, ms) == 0)
			return -ETIMEDOUT;
		ssize_t n = recv(fd, p, len, 0);

		if (n == 0)
			return -EPIPE;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai, *a;
	int fd = -1, one = 1;

	if (getaddrinfo(host, port, &hints, &ai)) {
		fprintf(stderr, "hostile: cannot resolve %s:%s\n", host, port);
		return -1;
	}
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		perror("hostile: connect");
	else	/* one FPDU per segment: the victim sees our bytes at once */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ----------------------------------------------------- FPDU builder --- */

/* DDP+RDMAP control (RFC 5041 §4.2, RFC 5040 §4.2); versions are
 * parameters so the version cases can lie. */
static void put_ctrl(uint8_t *p, bool tagged, bool last, int dv, int rv, int op)
{
	p[0] = (uint8_t)((tagged ? DDP_T : 0) | (last ? DDP_L : 0) | (dv & 3));
	p[1] = (uint8_t)((rv & 3) << 6 | (op & 0xf));
}

static size_t put_tagged(uint8_t *p, int op, uint32_t stag, uint64_t to,
			 int dv, int rv)
{
	put_ctrl(p, true, true, dv, rv, op);
	be32(p + 2, stag);
	be64(p + 6, to);
	return TAGGED_HDR;
}

static size_t put_untagged(uint8_t *p, int op, uint32_t qn, uint32_t msn,
			   int dv, int rv)
{
	put_ctrl(p, false, true, dv, rv, op);
	be32(p + 2, 0);		/* reserved for ULP / invalidate STag */
	be32(p + 6, qn);
	be32(p + 10, msn);
	be32(p + 14, 0);	/* MO: single-segment messages only */
	return UNTAGGED_HDR;
}

/* RFC 5040 §4.4: READ request = untagged QN 1 header + 28-byte body. */
static size_t put_read_req(uint8_t *p, struct conn *c, uint32_t src_stag,
			   uint64_t src_to, uint32_t size)
{
	size_t n = put_untagged(p, OP_READ_REQ, QN_READ, c->msn[QN_READ]++,
				DDP_VERSION, RDMAP_VERSION);

	be32(p + n, HOSTILE_SINK_STAG);
	be64(p + n + 4, 0);
	be32(p + n + 12, size);
	be32(p + n + 16, src_stag);
	be64(p + n + 20, src_to);
	return n + READ_REQ_HDR;
}

/*
 * Frame one FPDU (RFC 5044 §4): [ULPDU length][ULPDU][pad][CRC]. The pad
 * makes (2 + ULPDU) a multiple of 4; CRC covers length, ULPDU and pad.
 * The CRC field is there even without negotiated CRC (§4.1): zeros then.
 * @claim: the ULPDU length to put in the header, < 0 for the true one (the
 * bad-len cases lie). @crc_xor flips CRC bits (bad-crc case).
 * Return: bytes in @out, which must hold 2 + ulpdu + 3 + 4.
 */
static size_t frame(uint8_t *out, struct conn *c, const uint8_t *ulpdu,
		    size_t ulen, long claim, uint32_t crc_xor)
{
	size_t n = 2 + ulen;
	struct sent *sn = &c->sent[c->nsent++ % 64];

	sn->ulen = (uint16_t)(claim < 0 ? (long)ulen : claim);
	memset(sn->hdr, 0, sizeof(sn->hdr));
	memcpy(sn->hdr, ulpdu, ulen < sizeof(sn->hdr) ? ulen : sizeof(sn->hdr));

	be16(out, (uint16_t)(claim < 0 ? (long)ulen : claim));
	memcpy(out + 2, ulpdu, ulen);
	while (n % 4)
		out[n++] = 0;
	crc_put(out + n, c->crc ? crc32c(out, n) ^ crc_xor : 0);
	return n + 4;
}

/* Frame and send one ULPDU with its true length. */
static int send_fpdu(struct conn *c, const uint8_t *ulpdu, size_t ulen)
{
	uint8_t *buf = malloc(ulen + 16);
	int rv;

	if (!buf)
		return -ENOMEM;
	rv = send_all(c->fd, buf, frame(buf, c, ulpdu, ulen, -1, 0));
	free(buf);
	return rv;
}

/* ------------------------------------------------- MPA negotiation ---- */

static int mpa_request(struct conn *c, const struct opts *o)
{
	uint8_t req[24];
	uint16_t ird = 8, ord = 8;	/* modest: no victim should refuse */

	memcpy(req, MPA_KEY_REQ, 16);
	req[16] = (uint8_t)((o->crc ? MPA_F_CRC : 0) | MPA_F_ENHANCED);
	req[17] = 2;				/* revision */
	be16(req + 18, 4);			/* private data: IRD/ORD only */
	if (o->p2p) {
		ird |= MPA_V2_P2P | MPA_V2_ZERO_RTR;
		ord |= (o->rtr & 1 ? MPA_V2_WRITE_RTR : 0) |
		       (o->rtr & 2 ? MPA_V2_READ_RTR : 0);
	}
	be16(req + 20, ird);
	be16(req + 22, ord);
	return send_all(c->fd, req, sizeof(req));
}

/* Read the MPA reply; learn CRC, IRD/ORD, RTR and the victim's MR from
 * its private data (be32 STag, be64 address, be32 length after the v2
 * IRD/ORD word). */
static int mpa_reply(struct conn *c, const struct opts *o, double deadline)
{
	uint8_t h[20], pd[512];
	uint16_t plen;
	int rv = recv_exact(c->fd, h, sizeof(h), deadline);

	if (rv)
		return fprintf(stderr, "hostile: no MPA reply (%s)\n", strerror(-rv)), -1;
	if (memcmp(h, MPA_KEY_REP, 16))
		return fprintf(stderr, "hostile: bad MPA reply key\n"), -1;
	plen = rd16(h + 18);
	if (plen > sizeof(pd) || recv_exact(c->fd, pd, plen, deadline))
		return fprintf(stderr, "hostile: bad MPA reply pdata (%u)\n", plen), -1;
	if (h[16] & MPA_F_REJECT)
		return fprintf(stderr, "hostile: victim rejected the MPA request\n"), -1;
	if (h[16] & MPA_F_MARKERS)	/* we would have to insert markers */
		return fprintf(stderr, "hostile: victim wants markers: unsupported\n"), -1;
	if (h[17] != 2 || plen < 4 + 16)
		return fprintf(stderr, "hostile: reply rev %u plen %u: need v2 + 16 bytes of MR info\n",
			       h[17], plen), -1;
	c->crc = (h[16] & MPA_F_CRC) != 0;
	c->ird = rd16(pd) & MPA_V2_MASK;
	c->ord = rd16(pd + 2) & MPA_V2_MASK;
	c->rtr = 0;
	if (o->p2p && (rd16(pd) & MPA_V2_P2P))
		c->rtr = (rd16(pd + 2) & MPA_V2_WRITE_RTR) ? 1 :
			 (rd16(pd + 2) & MPA_V2_READ_RTR) ? 2 : 0;
	c->stag = rd32(pd + 4);
	c->addr = rd64(pd + 8);
	c->len = rd32(pd + 16);
	printf("mpa: rev 2 crc %d victim ird %u ord %u rtr %s; MR stag 0x%08x addr 0x%llx len %u\n",
	       c->crc, c->ird, c->ord, c->rtr == 1 ? "write" : c->rtr == 2 ? "read" : "none",
	       c->stag, (unsigned long long)c->addr, c->len);
	if (o->crc && !c->crc)
		return fprintf(stderr, "hostile: we asked for CRC, reply has C=0 (RFC 5044 §7.1 violation)\n"), -1;
	return 0;
}

/* RFC 6581 §6: the initiator's first FPDU is the RTR the responder chose;
 * zero length, and never STag 0 for a READ (some RNICs reject it). */
static int send_rtr(struct conn *c)
{
	uint8_t u[64];
	size_t n;

	if (c->rtr == 1)
		n = put_tagged(u, OP_WRITE, c->stag, c->addr, DDP_VERSION, RDMAP_VERSION);
	else if (c->rtr == 2)
		n = put_read_req(u, c, c->stag, c->addr, 0);
	else
		return 0;
	return send_fpdu(c, u, n);
}

/* ------------------------------------------------------ the cases ----- */

struct term_code {
	uint8_t layer, etype, ecode;
};

struct hcase {
	const char *name;
	int (*run)(struct conn *c, const struct opts *o);
	bool any_term;		/* any TERMINATE will do (stream untrustworthy) */
	bool none;		/* the control case: NO terminate expected */
	bool close_only;	/* no TERMINATE back, but a close */
	struct term_code want[4];
	int nwant;
	const char *why;
	bool no_read_data;	/* a refused READ: not one byte may come back */
	bool bad_mpa;		/* replaces the MPA request: expect reject/close */
};

/* A WRITE of 64 bytes of a known pattern to @stag/@to. */
static int write64(struct conn *c, uint32_t stag, uint64_t to, int dv, int rv)
{
	uint8_t u[TAGGED_HDR + 64];
	size_t n = put_tagged(u, OP_WRITE, stag, to, dv, rv);

	for (int i = 0; i < 64; i++)
		u[n + i] = (uint8_t)(i * 7 + 1);
	return send_fpdu(c, u, n + 64);
}

static int send_msg(struct conn *c, const char *msg, int dv, int rv, int op)
{
	uint8_t u[UNTAGGED_HDR + 256];
	size_t len = strlen(msg);
	size_t n = put_untagged(u, op, QN_SEND, c->msn[QN_SEND]++, dv, rv);

	memcpy(u + n, msg, len);
	return send_fpdu(c, u, n + len);
}

static int case_good(struct conn *c, const struct opts *o)
{
	(void)o;
	return write64(c, c->stag, c->addr, DDP_VERSION, RDMAP_VERSION) ?:
	       send_msg(c, "xiw-hostile-hello", DDP_VERSION, RDMAP_VERSION, OP_SEND);
}

/* ULPDU length 6 < the 14-byte tagged header: the victim cannot parse it
 * and cannot trust anything after it. */
static int case_bad_len_short(struct conn *c, const struct opts *o)
{
	uint8_t u[TAGGED_HDR + 16], out[sizeof(u) + 16];

	(void)o;
	put_tagged(u, OP_WRITE, c->stag, c->addr, DDP_VERSION, RDMAP_VERSION);
	memset(u + TAGGED_HDR, 0x11, 16);
	return send_all(c->fd, out, frame(out, c, u, sizeof(u), 6, 0));
}

/* ULPDU length 0xffff: a SEND far larger than any receive the victim
 * posted and larger than any MULPDU it announced; all bytes are sent so
 * a victim that reads the whole FPDU first still gets to decide. */
static int case_bad_len_huge(struct conn *c, const struct opts *o)
{
	size_t ulen = 0xffff;
	uint8_t *u = calloc(1, ulen + 16);
	int rv;

	(void)o;
	if (!u)
		return -ENOMEM;
	put_untagged(u, OP_SEND, QN_SEND, c->msn[QN_SEND]++, DDP_VERSION, RDMAP_VERSION);
	memset(u + UNTAGGED_HDR, 0x22, ulen - UNTAGGED_HDR);
	rv = send_fpdu(c, u, ulen);
	free(u);
	return rv;
}

/* A valid WRITE whose CRC trailer is wrong in one bit. */
static int case_bad_crc(struct conn *c, const struct opts *o)
{
	uint8_t u[TAGGED_HDR + 64], out[sizeof(u) + 16];

	(void)o;
	if (!c->crc)
		return fprintf(stderr, "hostile: bad-crc needs CRC negotiated (--crc)\n"), -EINVAL;
	put_tagged(u, OP_WRITE, c->stag, c->addr, DDP_VERSION, RDMAP_VERSION);
	memset(u + TAGGED_HDR, 0x33, 64);
	return send_all(c->fd, out, frame(out, c, u, sizeof(u), -1, 0x00010000u));
}

/* RDMAP opcode 0xF, untagged on QN 0 (the header length is still known). */
static int case_bad_opcode(struct conn *c, const struct opts *o)
{
	(void)o;
	return send_msg(c, "opcode-0xf", DDP_VERSION, RDMAP_VERSION, 0xf);
}

static int case_bad_ddp_ver(struct conn *c, const struct opts *o)
{
	(void)o;
	return write64(c, c->stag, c->addr, 2, RDMAP_VERSION);
}

static int case_bad_ddp_ver_ut(struct conn *c, const struct opts *o)
{
	(void)o;
	return send_msg(c, "ddp-version-2", 2, RDMAP_VERSION, OP_SEND);
}

static int case_bad_rdmap_ver(struct conn *c, const struct opts *o)
{
	(void)o;
	return send_msg(c, "rdmap-version-2", DDP_VERSION, 2, OP_SEND);
}

/* Flip the 24-bit STag index, keep the key byte: not registered. */
static int case_bad_stag(struct conn *c, const struct opts *o)
{
	(void)o;
	return write64(c, c->stag ^ 0xffffff00u, c->addr, DDP_VERSION, RDMAP_VERSION);
}

/* 64 bytes starting 32 bytes before the MR end. */
static int case_oob(struct conn *c, const struct opts *o)
{
	(void)o;
	return write64(c, c->stag, c->addr + c->len - 32, DDP_VERSION, RDMAP_VERSION);
}

/* 64 bytes starting 64 bytes before the MR start (into the guard). */
static int case_oob_low(struct conn *c, const struct opts *o)
{
	(void)o;
	return write64(c, c->stag, c->addr - 64, DDP_VERSION, RDMAP_VERSION);
}

/* TO + length wraps 2^64: a naive "to + len <= end" check passes. */
static int case_oob_wrap(struct conn *c, const struct opts *o)
{
	(void)o;
	return write64(c, c->stag, UINT64_MAX - 31, DDP_VERSION, RDMAP_VERSION);
}

/* Victim MR registered without REMOTE_WRITE. */
static int case_no_access_write(struct conn *c, const struct opts *o)
{
	(void)o;
	return write64(c, c->stag, c->addr, DDP_VERSION, RDMAP_VERSION);
}

static int one_read(struct conn *c, uint32_t stag, uint64_t to, uint32_t size)
{
	uint8_t u[UNTAGGED_HDR + READ_REQ_HDR];

	return send_fpdu(c, u, put_read_req(u, c, stag, to, size));
}

/* Victim MR registered without REMOTE_READ. */
static int case_no_access_read(struct conn *c, const struct opts *o)
{
	(void)o;
	return one_read(c, c->stag, c->addr, 64);
}

static int case_read_oob(struct conn *c, const struct opts *o)
{
	(void)o;
	return one_read(c, c->stag, c->addr + c->len - 32, 64);
}

static int case_read_bad_stag(struct conn *c, const struct opts *o)
{
	(void)o;
	return one_read(c, c->stag ^ 0xffffff00u, c->addr, 64);
}

/* IRD + 6 READ requests for the whole MR in one send, before reading any
 * response: with a large MR the first responses are still in flight, so
 * the victim must hold more than IRD requests at once. */
static int case_read_beyond_ird(struct conn *c, const struct opts *o)
{
	unsigned n = c->ird + 6u;
	uint8_t *buf = malloc(n * 64u), u[UNTAGGED_HDR + READ_REQ_HDR];
	size_t off = 0;
	int rv;

	(void)o;
	if (!buf)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		off += frame(buf + off, c, u,
			     put_read_req(u, c, c->stag, c->addr, c->len), -1, 0);
	printf("sending %u READ requests of %u bytes (victim IRD %u)\n", n, c->len, c->ird);
	rv = send_all(c->fd, buf, off);
	free(buf);
	return rv;
}

/* A broken MPA request instead of ours (RFC 5044 §7.1): the listener
 * must reject or close this one connection and keep serving. */
static int bad_request(struct conn *c, const char *key, uint8_t rev, uint16_t pdlen)
{
	uint8_t req[20 + 600];

	memcpy(req, key, 16);
	req[16] = MPA_F_ENHANCED;
	req[17] = rev;
	be16(req + 18, pdlen);
	memset(req + 20, 0, sizeof(req) - 20);
	be16(req + 20, 8);	/* a plausible IRD/ORD word */
	be16(req + 22, 8);
	return send_all(c->fd, req, sizeof(req));
}

static int case_mpa_bad_key(struct conn *c, const struct opts *o)
{
	(void)o;
	return bad_request(c, "MPA ID Req Framx", 2, 4);
}

static int case_mpa_bad_rev(struct conn *c, const struct opts *o)
{
	(void)o;
	return bad_request(c, MPA_KEY_REQ, 9, 4);
}

/* Private data length 0xffff > the 512 RFC 5044 allows. */
static int case_mpa_huge_pd(struct conn *c, const struct opts *o)
{
	(void)o;
	return bad_request(c, MPA_KEY_REQ, 2, 0xffff);
}

/* 128 KiB of seeded xorshift bytes: whatever length the first two bytes
 * claim, the victim gets enough bytes to reach a decision. */
/* An untagged SEND with explicit QN/MSN/MO (the DDP untagged checks). */
static int send_qmm(struct conn *c, uint32_t qn, uint32_t msn, uint32_t mo)
{
	uint8_t u[UNTAGGED_HDR + 64];
	size_t n = put_untagged(u, OP_SEND, qn, msn, DDP_VERSION, RDMAP_VERSION);

	be32(u + 14, mo);
	memset(u + n, 0x44, 64);
	return send_fpdu(c, u, n + 64);
}

/* RDMAP has queues 0..2 only (RFC 5040 §5.1). */
static int case_bad_qn(struct conn *c, const struct opts *o)
{
	(void)o;
	return send_qmm(c, 3, 1, 0);
}

/* The victim posted a few receives; MSN 1000 is far outside the window. */
static int case_bad_msn(struct conn *c, const struct opts *o)
{
	(void)o;
	return send_qmm(c, QN_SEND, 1000, 0);
}

/* A 64-byte segment at message offset 1 MiB: beyond any receive buffer. */
static int case_bad_mo(struct conn *c, const struct opts *o)
{
	(void)o;
	return send_qmm(c, QN_SEND, c->msn[QN_SEND]++, 1u << 20);
}

/* We terminate: the victim must go to ERROR and close, and must not
 * answer a TERMINATE with a TERMINATE. */
static int case_peer_terminate(struct conn *c, const struct opts *o)
{
	uint8_t u[UNTAGGED_HDR + 4];
	size_t n = put_untagged(u, OP_TERMINATE, QN_TERM, c->msn[QN_TERM]++,
				DDP_VERSION, RDMAP_VERSION);

	(void)o;
	u[n] = 0 << 4 | 2;	/* RDMAP, remote operation error */
	u[n + 1] = 0xff;	/* unspecified */
	u[n + 2] = u[n + 3] = 0;
	return send_fpdu(c, u, n + 4);
}

/* A READ response nobody asked for, aimed at the victim's own MR. */
static int case_stray_read_resp(struct conn *c, const struct opts *o)
{
	uint8_t u[TAGGED_HDR + 64];
	size_t n = put_tagged(u, OP_READ_RESP, c->stag, c->addr, DDP_VERSION, RDMAP_VERSION);

	(void)o;
	memset(u + n, 0x55, 64);
	return send_fpdu(c, u, n + 64);
}

static int case_garbage(struct conn *c, const struct opts *o)
{
	size_t len = 128 * 1024;
	uint8_t *g = malloc(len);
	uint32_t x = o->seed ? o->seed : 1;
	int rv;

	if (!g)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		g[i] = (uint8_t)x;
	}
	printf("garbage seed %u: first bytes %02x %02x %02x %02x\n", o->seed,
	       g[0], g[1], g[2], g[3]);
	rv = send_all(c->fd, g, len);
	free(g);
	return rv;
}

/* Layers (RFC 5040 §4.8): 0 RDMAP, 1 DDP, 2 LLP (MPA). */
#define T(l, e, c) { l, e, c }
static const struct hcase cases[] = {
	{ "good", case_good, false, true, false, { { 0 } }, 0,
	  "control: valid WRITE + SEND; no TERMINATE, no close", false, false },
	{ "bad-len-short", case_bad_len_short, true, false, false, { { 0 } }, 0,
	  "ULPDU length < header: any TERMINATE, then close", false, false },
	{ "bad-len-huge", case_bad_len_huge, true, false, false, { { 0 } }, 0,
	  "ULPDU length 0xffff: any TERMINATE, then close", false, false },
	{ "bad-crc", case_bad_crc, false, false, false, { T(2, 0, 0x02) }, 1,
	  "RFC 5044 §8: LLP/MPA, 0x02 received CRC error", false, false },
	{ "bad-opcode", case_bad_opcode, false, false, false, { T(0, 2, 0x06) }, 1,
	  "RFC 5040 §7: RDMAP remote operation, 0x06 unexpected opcode", false, false },
	{ "bad-ddp-ver", case_bad_ddp_ver, false, false, false, { T(1, 1, 0x04) }, 1,
	  "RFC 5041 §7: DDP tagged buffer, 0x04 invalid DDP version", false, false },
	{ "bad-ddp-ver-ut", case_bad_ddp_ver_ut, false, false, false, { T(1, 2, 0x06) }, 1,
	  "RFC 5041 §7: DDP untagged buffer, 0x06 invalid DDP version", false, false },
	{ "bad-rdmap-ver", case_bad_rdmap_ver, false, false, false, { T(0, 2, 0x05) }, 1,
	  "RFC 5040 §7: RDMAP remote operation, 0x05 invalid RDMAP version", false, false },
	{ "bad-stag", case_bad_stag, false, false, false,
	  { T(1, 1, 0x00), T(0, 1, 0x00) }, 2,
	  "RFC 5041 §7 DDP tagged 0x00 invalid STag (or RFC 5040 RDMAP protection 0x00)", false, false },
	{ "oob", case_oob, false, false, false, { T(1, 1, 0x01), T(0, 1, 0x01) }, 2,
	  "DDP tagged 0x01 base or bounds violation (or RDMAP protection 0x01)", false, false },
	{ "oob-low", case_oob_low, false, false, false, { T(1, 1, 0x01), T(0, 1, 0x01) }, 2,
	  "DDP tagged 0x01 base or bounds violation (or RDMAP protection 0x01)", false, false },
	{ "oob-wrap", case_oob_wrap, false, false, false,
	  { T(1, 1, 0x03), T(1, 1, 0x01), T(0, 1, 0x04), T(0, 1, 0x01) }, 4,
	  "DDP tagged 0x03 TO wrap or 0x01 bounds (or the RDMAP protection twins)", false, false },
	{ "no-access-write", case_no_access_write, false, false, false,
	  { T(0, 1, 0x02), T(1, 1, 0x00) }, 2,
	  "RFC 5040 RDMAP protection 0x02 access rights (siw: DDP tagged 0x00, DDP has no access code)", false, false },
	{ "no-access-read", case_no_access_read, false, false, false, { T(0, 1, 0x02) }, 1,
	  "RFC 5040 §7: RDMAP remote protection, 0x02 access rights violation", true, false },
	{ "read-oob", case_read_oob, false, false, false, { T(0, 1, 0x01) }, 1,
	  "RFC 5040 §7: RDMAP remote protection, 0x01 base or bounds violation", true, false },
	{ "read-bad-stag", case_read_bad_stag, false, false, false, { T(0, 1, 0x00) }, 1,
	  "RFC 5040 §7: RDMAP remote protection, 0x00 invalid STag", true, false },
	{ "read-beyond-ird", case_read_beyond_ird, false, false, false,
	  { T(1, 2, 0x02), T(0, 2, 0x07) }, 2,
	  "RFC 5041 §7: DDP untagged QN 1, 0x02 no buffer (siw: RDMAP remote op 0x07)", false, false },
	{ "bad-qn", case_bad_qn, false, false, false, { T(1, 2, 0x01) }, 1,
	  "RFC 5041 §7: DDP untagged buffer, 0x01 invalid QN", false, false },
	{ "bad-msn", case_bad_msn, false, false, false, { T(1, 2, 0x03), T(1, 2, 0x02) }, 2,
	  "RFC 5041 §7: DDP untagged, 0x03 MSN range not valid (or 0x02 no buffer)", false, false },
	{ "bad-mo", case_bad_mo, false, false, false, { T(1, 2, 0x04), T(1, 2, 0x05) }, 2,
	  "RFC 5041 §7: DDP untagged, 0x04 invalid MO (or 0x05 message too long)", false, false },
	{ "peer-terminate", case_peer_terminate, false, false, true, { { 0 } }, 0,
	  "we send TERMINATE: none comes back (a TERMINATE is never answered), victim closes", false, false },
	{ "stray-read-resp", case_stray_read_resp, false, false, false,
	  { T(0, 2, 0x06), T(0, 2, 0x07), T(0, 2, 0xff), T(1, 1, 0x00) }, 4,
	  "RDMAP remote operation 0x06 unexpected opcode (or 0x07/0xff, or DDP invalid STag)", false, false },
	{ "mpa-bad-key", case_mpa_bad_key, false, false, false, { { 0 } }, 0,
	  "MPA request with a wrong key: reject or close", false, true },
	{ "mpa-bad-rev", case_mpa_bad_rev, false, false, false, { { 0 } }, 0,
	  "MPA request revision 9: reject or close", false, true },
	{ "mpa-huge-pd", case_mpa_huge_pd, false, false, false, { { 0 } }, 0,
	  "MPA request private data length 65535 > 512: reject or close", false, true },
	{ "garbage", case_garbage, true, false, false, { { 0 } }, 0,
	  "random bytes: any TERMINATE, then close", false, false },
};
#undef T

static const struct hcase *find_case(const char *name)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (!strcmp(cases[i].name, name))
			return &cases[i];
	return NULL;
}

/* ---------------------------------------------------- reading back ---- */

static const char *layer_name(int l)
{
	return l == 0 ? "RDMAP" : l == 1 ? "DDP" : l == 2 ? "LLP/MPA" : "?";
}

/* RFC 5040 §4.8: after the untagged header, the Terminate Control word:
 * Layer(4) EType(4) ErrorCode(8) M D R Reserved(13). */
/* RFC 5040 §4.8: after the control word, the DDP segment length (M),
 * the terminated DDP header (D) and the READ request's RDMA header (R).
 * Check that they quote a segment we really sent. */
static void check_quoted(const struct conn *c, struct seen *s, const uint8_t *q,
			 size_t qlen, uint8_t mdr)
{
	size_t off = 0, hl;
	uint16_t seglen = 0;

	if (mdr & 4) {
		if (qlen < 2)
			return;
		seglen = rd16(q);
		off = 2;
	}
	if (!(mdr & 2) || qlen < off + 2)
		return;
	s->named = true;
	hl = (q[off] & DDP_T) ? TAGGED_HDR : UNTAGGED_HDR;
	if (mdr & 1)
		hl += READ_REQ_HDR;
	if (qlen < off + hl)
		return;
	for (unsigned i = 0; i < c->nsent && i < 64; i++) {
		const struct sent *sn = &c->sent[i];

		if (!memcmp(sn->hdr, q + off, hl) && (!(mdr & 4) || seglen == sn->ulen)) {
			s->named_ok = true;
			printf("  quotes our FPDU #%u (ULPDU length %u)\n", i + 1, sn->ulen);
			return;
		}
	}
	printf("  quotes a header we never sent (segment length %u)\n", seglen);
}

static void note_terminate(const struct conn *c, struct seen *s, const uint8_t *u,
			   size_t ulen)
{
	const uint8_t *t = u + UNTAGGED_HDR;

	if (ulen < UNTAGGED_HDR + 4) {
		printf("TERMINATE too short (%zu bytes)\n", ulen);
		return;
	}
	s->term = true;
	s->layer = t[0] >> 4;
	s->etype = t[0] & 0xf;
	s->ecode = t[1];
	s->flags = t[2] >> 5;
	check_quoted(c, s, t + 4, ulen - UNTAGGED_HDR - 4, s->flags);
	printf("TERMINATE: layer %u (%s) etype %u ecode 0x%02x M%d D%d R%d; qn %u msn %u, %zu bytes follow\n",
	       s->layer, layer_name(s->layer), s->etype, s->ecode,
	       !!(t[2] & 0x80), !!(t[2] & 0x40), !!(t[2] & 0x20),
	       rd32(u + 6), rd32(u + 10), ulen - UNTAGGED_HDR - 4);
	if (ulen > UNTAGGED_HDR + 4) {
		printf("  terminated header:");
		for (size_t i = UNTAGGED_HDR + 4; i < ulen && i < UNTAGGED_HDR + 4 + 48; i++)
			printf(" %02x", u[i]);
		printf("\n");
	}
}

/* Receive one FPDU (framing and CRC checked). Return 0, or the
 * recv_exact() error; sets s->desync/bad_crc on protocol trouble. */
static int read_fpdu(struct conn *c, struct seen *s, double deadline,
		     uint8_t *buf, bool verbose)
{
	uint16_t ulen;
	size_t n, pad;
	int rv = recv_exact(c->fd, buf, 2, deadline);

	if (rv)
		return rv;
	ulen = rd16(buf);
	n = 2 + (size_t)ulen;
	pad = (4 - n % 4) % 4;
	/* the CRC field is always on the wire, checked only with CRC on */
	rv = recv_exact(c->fd, buf + 2, ulen + pad + 4, deadline);
	if (rv)
		return rv;
	s->fpdus++;
	if (c->crc && crc_get(buf + n + pad) != crc32c(buf, n + pad)) {
		printf("victim FPDU #%u has a bad CRC (got %08x want %08x)\n", s->fpdus,
		       crc_get(buf + n + pad), crc32c(buf, n + pad));
		s->bad_crc = true;
	}
	bool tagged = buf[2] & DDP_T;
	int op = buf[3] & 0xf;

	if (ulen < (tagged ? TAGGED_HDR : UNTAGGED_HDR)) {
		printf("victim FPDU #%u: ULPDU length %u < header: stream desync\n", s->fpdus, ulen);
		s->desync = true;
		return 0;
	}
	if (verbose)
		printf("victim FPDU #%u: %s op %d len %u\n", s->fpdus,
		       tagged ? "tagged" : "untagged", op, ulen);
	if (op == OP_READ_RESP) {
		s->read_resp++;
		s->read_bytes += ulen - TAGGED_HDR;
		for (size_t i = 2 + TAGGED_HDR; i < n; i++)
			s->read_foreign += buf[i] != MR_FILL;
	} else if (op == OP_TERMINATE && !tagged) {
		note_terminate(c, s, buf + 2, ulen);
	}
	return 0;
}

/* Read FPDUs until EOF, reset, desync or @deadline. */
static void read_back(struct conn *c, struct seen *s, double deadline, bool verbose)
{
	uint8_t *buf = malloc(2 + 65535 + 8);

	if (!buf)
		return;
	while (!s->desync) {
		int rv = read_fpdu(c, s, deadline, buf, verbose);

		if (rv == -EPIPE) {
			s->eof = true;
			break;
		}
		if (rv == -ECONNRESET) {
			s->eof = s->reset = true;
			break;
		}
		if (rv)
			break;
	}
	free(buf);
}

/* ------------------------------------------------------- verdict ------ */

static bool code_ok(const struct hcase *k, const struct seen *s)
{
	if (k->any_term)
		return true;
	for (int i = 0; i < k->nwant; i++)
		if (k->want[i].layer == s->layer && k->want[i].etype == s->etype &&
		    k->want[i].ecode == s->ecode)
			return true;
	return false;
}

static int verdict(const struct hcase *k, const struct seen *s,
		   const struct opts *o)
{
	printf("seen: %u FPDUs (%u READ responses, %llu bytes), terminate %s, %s%s\n",
	       s->fpdus, s->read_resp, (unsigned long long)s->read_bytes,
	       s->term ? "yes" : "no",
	       s->eof ? (s->reset ? "connection reset" : "closed by victim") : "still open",
	       s->desync ? ", DESYNC" : "");
	if (s->bad_crc)
		return printf("FAIL %s: victim sent FPDUs with a bad CRC\n", k->name), 1;
	if (s->read_foreign)
		return printf("FAIL %s: READ responses carried %llu bytes that are not the MR's\n",
			      k->name, (unsigned long long)s->read_foreign), 1;
	if (k->no_read_data && s->read_bytes)
		return printf("FAIL %s: %llu bytes of a refused READ were sent\n", k->name,
			      (unsigned long long)s->read_bytes), 1;
	if (k->close_only) {
		if (s->term)
			return printf("FAIL %s: the victim answered our TERMINATE with a TERMINATE\n", k->name), 1;
		if (!s->eof)
			return printf("FAIL %s: the victim kept the connection open after our TERMINATE\n", k->name), 1;
		return printf("PASS %s: no TERMINATE back, connection closed\n", k->name), 0;
	}
	if (k->none) {
		if (s->term || s->eof)
			return printf("FAIL %s: valid traffic was answered by TERMINATE/close\n", k->name), 1;
		return printf("PASS %s: no TERMINATE, connection alive\n", k->name), 0;
	}
	if (!s->term)
		return printf("FAIL %s: no TERMINATE (want: %s)\n", k->name, k->why), 1;
	if (!code_ok(k, s))
		return printf("FAIL %s: TERMINATE %u/%u/0x%02x, want %s\n", k->name,
			      s->layer, s->etype, s->ecode, k->why), 1;
	if (!k->any_term && s->named && !s->named_ok)
		return printf("FAIL %s: TERMINATE quotes a segment we did not send\n", k->name), 1;
	if (o->require_close && !s->eof)
		return printf("FAIL %s: TERMINATE ok but the victim kept the connection open\n",
			      k->name), 1;
	return printf("PASS %s: TERMINATE %s %u/0x%02x (%s)\n", k->name,
		      layer_name(s->layer), s->etype, s->ecode, k->why), 0;
}

/* After a broken MPA request: an MPA reply with R set and/or a close are
 * fine; an accepting reply or silence until the deadline are not. */
static int judge_bad_mpa(struct conn *c, const struct hcase *k, double deadline)
{
	uint8_t buf[20];
	int rv;

	printf("case %s: %s\n", k->name, k->why);
	if (k->run(c, NULL) && errno != EPIPE && errno != ECONNRESET)
		printf("send failed: reading what came back\n");
	rv = recv_exact(c->fd, buf, sizeof(buf), deadline);
	if (rv == 0) {
		bool rej = !memcmp(buf, MPA_KEY_REP, 16) && (buf[16] & MPA_F_REJECT);

		printf("victim answered: %s\n", rej ? "MPA reply with R (reject)" : "something else");
		if (!rej)
			return printf("FAIL %s: the broken request was not rejected\n", k->name), 1;
		while ((rv = recv_exact(c->fd, buf, 1, deadline)) == 0)
			;
	}
	close(c->fd);
	if (rv == -ETIMEDOUT)
		return printf("FAIL %s: the victim kept the connection open\n", k->name), 1;
	return printf("PASS %s: rejected/closed (%s)\n", k->name,
		      rv == -EPIPE ? "EOF" : strerror(-rv)), 0;
}

/* ---------------------------------------------------------- main ------ */

static void usage(FILE *f)
{
	fprintf(f,
"usage: xiw_hostile [options] --case NAME HOST PORT\n"
"       xiw_hostile --selftest | --list\n"
"Connect to an iWARP listener (xiw_victim -s), negotiate MPA v2 by hand,\n"
"learn the victim's MR (STag/addr/len) from its MPA reply private data,\n"
"send one malformed FPDU and check the TERMINATE that comes back.\n"
"  -c, --case NAME     what to send (--list shows all, with the expected\n"
"                      TERMINATE layer/etype/ecode)\n"
"  -C, --crc           request MPA CRC (default: off)\n"
"  -P, --no-p2p        do not ask for peer-to-peer mode (no RTR)\n"
"  -r, --rtr TYPE      RTR types to offer: write, read, any (default any)\n"
"  -t, --timeout SEC   wait this long for TERMINATE and close (default 5)\n"
"  -s, --seed N        garbage seed (default 1)\n"
"  -k, --keep-open-ok  pass even if the victim does not close the TCP\n"
"                      connection after its TERMINATE\n"
"  -v, --verbose       print every FPDU received\n"
"      --selftest      check CRC32C against RFC 3720 B.4 vectors and exit\n"
"Exit: 0 expected outcome, 1 not, 2 setup/usage error.\n");
}

static void list_cases(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		printf("%-16s %s\n", cases[i].name, cases[i].why);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "case", 1, 0, 'c' }, { "crc", 0, 0, 'C' }, { "no-p2p", 0, 0, 'P' },
		{ "rtr", 1, 0, 'r' }, { "timeout", 1, 0, 't' }, { "seed", 1, 0, 's' },
		{ "keep-open-ok", 0, 0, 'k' }, { "verbose", 0, 0, 'v' },
		{ "help", 0, 0, 'h' }, { "selftest", 0, 0, 'S' }, { "list", 0, 0, 'L' },
		{ 0 } };
	int ch;

	*o = (struct opts){ .p2p = true, .rtr = 3, .timeout = 5, .seed = 1,
			    .require_close = true };
	while ((ch = getopt_long(argc, argv, "c:CPr:t:s:kvh", lo, NULL)) != -1) {
		switch (ch) {
		case 'c': o->kase = optarg; break;
		case 'C': o->crc = true; break;
		case 'P': o->p2p = false; break;
		case 'r': o->rtr = !strcmp(optarg, "write") ? 1 :
				   !strcmp(optarg, "read") ? 2 : 3; break;
		case 't': o->timeout = atof(optarg); break;
		case 's': o->seed = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'k': o->require_close = false; break;
		case 'v': o->verbose = true; break;
		case 'h': usage(stdout); exit(0);
		case 'S': exit(crc_selftest());
		case 'L': list_cases(); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (!o->kase || argc - optind != 2) {
		usage(stderr);
		return -1;
	}
	o->host = argv[optind];
	o->port = argv[optind + 1];
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct conn c = { .msn = { 1, 1, 1 } };	/* RFC 5041: MSN starts at 1 */
	struct seen s = { 0 };
	const struct hcase *k;
	double deadline;
	int rv;

	crc32c_init();
	if (parse(argc, argv, &o))
		return 2;
	k = find_case(o.kase);
	if (!k)
		return fprintf(stderr, "hostile: unknown case '%s' (--list)\n", o.kase), 2;
	if (crc_selftest())
		return 2;
	c.fd = tcp_connect(o.host, o.port);
	if (c.fd < 0)
		return 2;
	deadline = now_s() + o.timeout;
	if (k->bad_mpa)
		return judge_bad_mpa(&c, k, deadline);
	if (mpa_request(&c, &o) || mpa_reply(&c, &o, deadline) || send_rtr(&c))
		return 2;
	printf("case %s: %s\n", k->name, k->why);
	rv = k->run(&c, &o);
	if (rv == -EINVAL)	/* the case cannot run on this connection */
		return 2;
	if (rv)	/* the victim may already have hung up on us: judge it */
		printf("send failed (%s): reading what came back\n", strerror(-rv));
	/* The control case only needs to see silence for a while. */
	read_back(&c, &s, now_s() + (k->none ? 1.0 : o.timeout), o.verbose);
	close(c.fd);
	return verdict(k, &s, &o);
}
