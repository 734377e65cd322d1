#!/usr/bin/env bash
# xiwrun — run an unmodified RDMA program on xiwarp.
#
# Puts xiwarp's drop-in libibverbs.so.1 / librdmacm.so.1 (and the stub
# libmlx5.so.1 / libefa.so.1) first on LD_LIBRARY_PATH, then execs the
# command. The libraries are looked up in ../lib relative to the real
# location of this script (build/bin/xiwrun -> build/lib).
set -euo pipefail

prog=${0##*/}

usage() {
	cat <<USAGE
usage: $prog [--help] [--sockets] CMD [ARGS...]

Run CMD with xiwarp's drop-in RDMA libraries (libibverbs.so.1,
librdmacm.so.1, libmlx5.so.1, libefa.so.1) first on LD_LIBRARY_PATH, so
unmodified rdma-core programs (rping, perftest, rdma_server/rdma_client,
rstream, riostream, ibv_devices, ...) run over xiwarp's software iWARP on
kernel TCP. No root and no kernel module are needed.

--sockets  also preload libxiwsock.so: an unmodified TCP program (iperf3,
           redis, sockperf, ...) gets stream sockets over RDMA (rsockets
           with zero-copy transfers) to peers that run the same way, and
           plain kernel TCP to any other peer. Knobs: XIW_SOCK_MODE
           (auto|rdma|tcp), XIW_SOCK_PORTS (all | 5201,7000-7100),
           XIW_SOCK_ACCEPT_WAIT_MS, XIW_SOCK_CONNECT_MS, XIW_SOCK_LOG=1,
           XIW_RS_ZCOPY=0 (buffer copy only); see README.md.

Library directory: ../lib next to this script's real location
(currently: ${libdir:-<not found>}).
With a sanitizer build (make SAN=1: build/san/bin/xiwrun) the ASan/UBSan
runtime is preloaded automatically (set XIWRUN_NO_PRELOAD=1 to stop it)
and ASAN_OPTIONS defaults to detect_leaks=0.

Examples:
  $prog rping -s -a 0.0.0.0 -v                  # server
  $prog rping -c -a 10.0.0.1 -v -V -C 10        # client, verifies data
  $prog ib_write_bw -R                          # perftest server
  $prog ib_write_bw -R 10.0.0.1                 # perftest client
  $prog --sockets iperf3 -s                     # TCP program over RDMA
  env XIW_MPA_CRC=1 XIW_LOG=debug $prog ibv_devinfo

Knobs (environment, read by the engine; give them to both sides):
  XIW_MPA_CRC=0|1        require MPA CRC32C (default 0)
  XIW_MPA_MARKERS=0|1    request MPA markers (default 0)
  XIW_MPA_VERSION=1|2    MPA revision to offer (default 2)
  XIW_MPA_P2P=0|1        peer-to-peer (RTR) negotiation (default 1)
  XIW_MAX_FPDU=<bytes>   largest FPDU payload to send, 128..65535
  XIW_LOG=error|warn|info|debug   engine log level (default warn)
  XIW_TX_COMPLETION=copy|ack      send WC when copied (default) / when ACKed
  more (XIW_ZCOPY_MIN, XIW_ACK_METHOD, XIW_POLL_RX, ...): see README.md
USAGE
}

# Resolve the real location of this script (follow symlinks).
self=$(readlink -f -- "${BASH_SOURCE[0]}" 2>/dev/null || printf '%s' "${BASH_SOURCE[0]}")
bindir=$(cd -- "$(dirname -- "$self")" && pwd -P)
libdir=""
if [ -d "$bindir/../lib" ]; then
	libdir=$(cd -- "$bindir/../lib" && pwd -P)
fi

sockets=0
case "${1:-}" in
-h | --help)
	usage
	exit 0
	;;
--sockets)
	sockets=1
	shift
	[ "${1:-}" = -- ] && shift
	[ $# -gt 0 ] || { usage >&2; exit 2; }
	;;
"")
	usage >&2
	exit 2
	;;
--)
	shift
	[ $# -gt 0 ] || { usage >&2; exit 2; }
	;;
esac

missing=()
needed=(libibverbs.so.1 librdmacm.so.1 libxiwarp.so.1)
[ $sockets -eq 1 ] && needed+=(libxiwsock.so)
for l in "${needed[@]}"; do
	[ -n "$libdir" ] && [ -e "$libdir/$l" ] || missing+=("$l")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "$prog: xiwarp libraries missing in ${libdir:-$bindir/../lib}: ${missing[*]}" >&2
	echo "$prog: build them first: run 'make' (or 'make libs') in the xiwarp source tree" >&2
	exit 127
fi

if ! command -v -- "$1" >/dev/null 2>&1; then
	echo "$prog: command not found: $1" >&2
	exit 127
fi

# The caller's LD_PRELOAD (e.g. rdma-core's librspreload.so) is for the
# program only: in this script's own helpers (grep, ldd, awk) it would
# load our libraries, sanitized ones without ASan first. Put back below.
user_preload=${LD_PRELOAD:-}
unset LD_PRELOAD
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# A sanitizer build (make SAN=1 -> build/san) links the ASan/UBSan runtime
# into the libraries; unsanitized programs (rping, perftest) then need it
# preloaded, or ASan aborts ("runtime does not come first"). Leak reports
# of the unmodified programs are noise: detect_leaks=0 unless set.
if [ -z "${XIWRUN_NO_PRELOAD:-}" ] &&
	LC_ALL=C grep -q -a 'libasan\.so' "$libdir/libxiwarp.so.1" 2>/dev/null; then
	san_libs=$(ldd "$libdir/libxiwarp.so.1" 2>/dev/null |
		awk '$1 ~ /^lib(asan|ubsan)\.so/ && $3 ~ /^\// { print $3 }' | sort)
	pre=""
	for l in $san_libs; do # sorted: libasan before libubsan; ASan first
		case ":$user_preload:" in
		*"/${l##*/}:"* | *":${l##*/}:"*) ;;
		*) pre="$pre${pre:+:}$l" ;;
		esac
	done
	user_preload="$pre${pre:+${user_preload:+:}}$user_preload"
	export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
fi

# The sockets layer goes after a sanitizer runtime (which must come first).
if [ $sockets -eq 1 ]; then
	user_preload="${user_preload:+$user_preload:}$libdir/libxiwsock.so"
fi
[ -n "$user_preload" ] && export LD_PRELOAD="$user_preload"

exec "$@"
