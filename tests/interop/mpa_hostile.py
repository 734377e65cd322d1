#!/usr/bin/env python3
"""mpa_hostile.py [--crc] --case bad-stag|bad-ddp-ver [-t SEC] [-d MS] HOST PORT

A raw-TCP MPA v2 initiator for the siw interop tier: it needs nothing
from the acceptor beyond an MPA reply (any rdma_cm server will do, e.g.
siw's `rping -s`), unlike tests/netns/xiw_hostile, which wants the
victim's MR in the reply's private data.

It sends an MPA v2 request (enhanced, IRD/ORD 8, no peer-to-peer; C set
with --crc), reads the reply, then sends ONE malformed FPDU (the 4-octet
CRC field is always present, zero when CRC is off, RFC 5044 4.1):
  bad-stag     a tagged RDMA WRITE of 16 bytes to STag 0x00dead00
               (RFC 5041 7: DDP tagged buffer error, invalid STag)
  bad-ddp-ver  the same WRITE with DDP version 0
               (RFC 5041 7: DDP tagged buffer error, invalid DDP version)
-d MS (default 300) waits that long after the MPA reply before the FPDU:
siw 6.1 as responder sometimes ignores an FPDU that arrives right after
its MPA reply (no TERMINATE, connection left open; seen in about half the
runs without the pause), which is a separate finding, not what this
probe is about. Then it waits for the peer's TERMINATE (RDMAP opcode 7). Prints the reply's
flags, then "TERMINATE layer L etype E code C" (the control octets as on
the wire, RFC 5040 layout) and whether the peer closed the connection.

Exit: 0 a TERMINATE came back, 1 none did, 2 setup error (no MPA reply,
reject, ...).
"""
import socket
import struct
import sys
import time

from crc32c import crc32c  # noqa: E402 (shared table)


def main(argv):
    crc, case, tmo, delay, pos = False, None, 10.0, 0.3, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__)
            return 0
        if a in ("-C", "--crc"):
            crc = True
        elif a in ("-c", "--case"):
            i += 1
            case = argv[i]
        elif a in ("-d", "--delay"):
            i += 1
            delay = float(argv[i]) / 1000
        elif a in ("-t", "--timeout"):
            i += 1
            tmo = float(argv[i])
        else:
            pos.append(a)
        i += 1
    if case not in ("bad-stag", "bad-ddp-ver") or len(pos) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    s = socket.create_connection((pos[0], int(pos[1])), timeout=tmo)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    flags = 0x10 | (0x40 if crc else 0)          # H (enhanced, RFC 6581), C
    req = b"MPA ID Req Frame" + bytes([flags, 2]) + struct.pack(">HHH", 4, 8, 8)
    s.sendall(req)
    buf = b""
    end = time.monotonic() + tmo
    while len(buf) < 20 and time.monotonic() < end:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    if len(buf) < 20 or buf[:16] != b"MPA ID Rep Frame":
        print("hostile: no MPA reply (%d bytes)" % len(buf))
        return 2
    rflags, rrev, plen = buf[16], buf[17], struct.unpack(">H", buf[18:20])[0]
    while len(buf) < 20 + plen and time.monotonic() < end:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    crc_on = bool(rflags & 0x40) or crc
    print("mpa reply: rev %d M%d C%d R%d plen %d; CRC %s" %
          (rrev, rflags >> 7 & 1, rflags >> 6 & 1, rflags >> 5 & 1, plen, "on" if crc_on else "off"))
    if rflags & 0x20:
        print("hostile: the peer rejected the MPA request")
        return 2
    buf = buf[20 + plen:]
    time.sleep(delay)

    dv = 0 if case == "bad-ddp-ver" else 1
    ulpdu = bytes([0xC0 | dv, 0x40]) + struct.pack(">IQ", 0x00DEAD00, 0) + b"hostile-payload!"
    fpdu = struct.pack(">H", len(ulpdu)) + ulpdu
    fpdu += b"\0" * ((4 - len(fpdu) % 4) % 4)
    fpdu += crc32c(fpdu).to_bytes(4, "little") if crc_on else b"\0\0\0\0"
    s.sendall(fpdu)
    print("sent %s: tagged WRITE, STag 0x00dead00, DDP version %d, ULPDU %d" % (case, dv, len(ulpdu)))

    closed = False
    term = None
    while time.monotonic() < end and term is None:
        # walk complete FPDUs in buf
        while len(buf) >= 2:
            ulen = struct.unpack(">H", buf[:2])[0]
            total = 2 + ulen + (4 - (2 + ulen) % 4) % 4 + 4
            if len(buf) < total:
                break
            u = buf[2:2 + ulen]
            buf = buf[total:]
            if len(u) >= 2 and (u[1] & 0x0F) == 7 and not (u[0] & 0x80) and len(u) >= 22:
                term = u[18:22]
                break
            print("peer FPDU: DDP ctrl 0x%02x RDMAP ctrl 0x%02x, ULPDU %d" % (u[0], u[1], ulen))
        if term is not None:
            break
        s.settimeout(max(0.1, end - time.monotonic()))
        try:
            d = s.recv(4096)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not d:
            closed = True
            break
        buf += d
    if term is None:
        print("hostile: no TERMINATE (connection %s)" % ("closed" if closed else "still open"))
        return 1
    print("TERMINATE layer %d etype %d code 0x%02x hdrct 0x%02x (control word %s)" %
          (term[0] >> 4, term[0] & 0xF, term[1], term[2] >> 5, term.hex()))
    s.settimeout(3)
    try:
        while s.recv(4096):
            pass
        closed = True
    except (socket.timeout, ConnectionResetError):
        closed = closed or False
    print("connection %s after the TERMINATE" % ("closed by the peer" if closed else "still open"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
