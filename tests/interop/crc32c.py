"""CRC32C (Castagnoli, reflected polynomial 0x82F63B78, RFC 3720 B.4) for
the interop tools (mpa_walk.py, mpa_hostile.py): a module of its own so
the two share one table. Not a test: imported only."""

_T = [0] * 256
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ (0x82F63B78 if _c & 1 else 0)
    _T[_i] = _c


def crc32c(b):
    """CRC32C of the bytes-like @b; on the wire little-endian (iSCSI)."""
    c = 0xFFFFFFFF
    for x in b:
        c = _T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
