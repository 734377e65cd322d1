#!/usr/bin/env python3
"""mpa_walk.py CAPTURE PORT [--help]

Independent MPA stream check (RFC 5044 / RFC 6581) of the one TCP
connection to PORT in CAPTURE (pcap/pcapng, read with tshark): reassemble
both directions, parse the MPA request and reply, then walk every FPDU of
each direction: ULPDU_Length, ULPDU, pad to 4, and the 4-octet CRC field,
which RFC 5044 4.1 says is always present (zero when CRC was not
negotiated; siw always reads it). No markers: siw never uses them (it
rejects requests for them), so a capture with M set stops at the handshake.

Per FPDU: pad is zero, the DDP version is 1 and the RDMAP version is 1 (a
stream that lost its framing shows up here at once), and with CRC on the
CRC32C (wire byte order as Wireshark's iwarp_mpa) matches. The SYN's MSS
option of each side is reported, so the caller can check that every FPDU
fits one TCP segment.

Prints key=value lines (mpa_req, mpa_rep as "C1 M0 R0 rev2", fpdus_c2s,
fpdus_s2c, max_ulpdu_c2s, max_ulpdu_s2c, max_fpdu_c2s, max_fpdu_s2c,
mss_c (announced by the client), mss_s, ts (TCP timestamps on), crc_on,
crc_good, errors); violations on stderr. Exit 0 no violation, 1 violation,
2 no handshake in the capture.
"""
import subprocess
import sys

if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)

cap, port = sys.argv[1], int(sys.argv[2])
out = subprocess.run(["tshark", "-n", "-r", cap, "-Y", "tcp.port == %d" % port, "-T", "fields",
                      "-e", "tcp.srcport", "-e", "tcp.seq", "-e", "tcp.flags.syn",
                      "-e", "tcp.options.mss_val", "-e", "tcp.options.timestamp.tsval",
                      "-e", "tcp.payload"],
                     capture_output=True, text=True).stdout
seg = {"c2s": {}, "s2c": {}}
mss = {"c2s": 0, "s2c": 0}
ts = 0
for line in out.splitlines():
    f = line.split("\t")
    if len(f) < 6:
        continue
    d = "s2c" if int(f[0]) == port else "c2s"
    if f[2] in ("1", "True") and f[3]:
        mss[d] = int(f[3])
        ts = ts or (f[4] != "")
    if f[5]:
        seg[d].setdefault(int(f[1]), bytes.fromhex(f[5].replace(":", "")))


def stream(d):
    buf, pos = bytearray(), 1
    for s in sorted(seg[d]):
        p = seg[d][s]
        if s + len(p) <= pos:
            continue                       # retransmission
        if s > pos:
            break                          # hole: capture lost data
        buf += p[pos - s:]
        pos = s + len(p)
    return bytes(buf)


from crc32c import crc32c  # noqa: E402 (shared table)


def hdr(b, key):
    if len(b) < 20 or b[:16] != key:
        return None
    flags, rev, pdlen = b[16], b[17], int.from_bytes(b[18:20], "big")
    return {"m": flags >> 7 & 1, "c": flags >> 6 & 1, "r": flags >> 5 & 1,
            "rev": rev, "len": 20 + pdlen}


errors = []
cs, ss = stream("c2s"), stream("s2c")
req = hdr(cs, b"MPA ID Req Frame")
rep = hdr(ss, b"MPA ID Rep Frame")
print("mss_c=%d\nmss_s=%d\nts=%d" % (mss["c2s"], mss["s2c"], 1 if ts else 0))
if not req or not rep:
    print("mpa_req=%s" % ("C%d M%d R%d rev%d" % (req["c"], req["m"], req["r"], req["rev"]) if req else "none"))
    print("mpa_rep=%s" % ("C%d M%d R%d rev%d" % (rep["c"], rep["m"], rep["r"], rep["rev"]) if rep else "none"))
    sys.exit(2)
crc_on = bool(req["c"] or rep["c"])
print("mpa_req=C%d M%d R%d rev%d" % (req["c"], req["m"], req["r"], req["rev"]))
print("mpa_rep=C%d M%d R%d rev%d" % (rep["c"], rep["m"], rep["r"], rep["rev"]))


def walk(d, data, p):
    n = mx = mxf = ok = 0
    if req["m"] or rep["m"]:
        return n, mx, mxf, ok              # markers: not walked (siw refuses them)
    while p + 2 <= len(data):
        ulen = int.from_bytes(data[p:p + 2], "big")
        pad = (4 - (ulen + 2) % 4) % 4
        end = p + 2 + ulen + pad + 4       # the CRC field is always there
        if end > len(data):
            break                          # capture ends inside an FPDU
        if ulen < 14:
            errors.append("%s: FPDU at %d: ULPDU length %d < DDP header" % (d, p, ulen))
            break
        ddp, rdmap = data[p + 2], data[p + 3]
        if ddp & 3 != 1 or rdmap >> 6 != 1:
            errors.append("%s: FPDU #%d at %d (ULPDU %d): DDP version %d, RDMAP version %d"
                          " (framing lost?)" % (d, n, p, ulen, ddp & 3, rdmap >> 6))
            break
        if any(data[p + 2 + ulen:p + 2 + ulen + pad]):
            errors.append("%s: FPDU at %d: pad not zero" % (d, p))
        if crc_on:
            want = crc32c(data[p:end - 4]).to_bytes(4, "little")
            if data[end - 4:end] == want:
                ok += 1
            else:
                errors.append("%s: FPDU at %d (ULPDU %d): CRC %s, computed %s"
                              % (d, p, ulen, data[end - 4:end].hex(), want.hex()))
        n += 1
        mx = max(mx, ulen)
        mxf = max(mxf, end - p)
        p = end
    return n, mx, mxf, ok


c = walk("c2s", cs, req["len"])
s = walk("s2c", ss, rep["len"])
print("fpdus_c2s=%d\nfpdus_s2c=%d" % (c[0], s[0]))
print("max_ulpdu_c2s=%d\nmax_ulpdu_s2c=%d" % (c[1], s[1]))
print("max_fpdu_c2s=%d\nmax_fpdu_s2c=%d" % (c[2], s[2]))
print("crc_on=%d\ncrc_good=%d" % (crc_on, c[3] + s[3]))
print("errors=%d" % len(errors))
for e in errors[:10]:
    print("mpa_error: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
