#!/usr/bin/env bash
# tests/interop/siw_interop.sh — the siw interop tier: xiwarp against the
# Linux kernel's SoftiWARP (siw, Debian 6.1) in a qemu guest
# (../shared/siw-peer, README inside), with unmodified Debian clients on
# both ends. One PASS/FAIL line per cell, then a summary; exit 0 only if
# every cell passed, 77 (skip) when qemu/tun/the siw peer are not usable.
#
# Roles: "siwsrv" = siw server in the guest, xiwarp client (xiwrun) in the
# host namespace; "xiwsrv" = xiwarp server in the host namespace, siw
# client in the guest. The guest boots once per siw parameter set:
#   default   siw defaults (CRC off, not strict, MPA v2, no P2P, no GSO)
#             rping: crc-off, XIW_MPA_CRC=1, XIW_MPA_VERSION=1 (against a
#               siw server it fails on siw's side: siw as v1 responder
#               has ORD 0, so rping's READ fails, siw vs siw alike),
#               XIW_MPA_P2P=0, XIW_MPA_P2P=1; XIW_MPA_MARKERS=1 must fail
#               promptly (siw refuses markers), and so must a
#               XIW_MPA_VERSION=1 server (siw as v2 initiator refuses a
#               revision 1 reply);
#             ib_{write,read,send}_{bw,lat} -R at -s 65536 and -s 2;
#             rdma_server/rdma_client;
#             mpa_hostile.py bad-stag / bad-ddp-ver (with and without CRC)
#               against a siw rping server: TERMINATE decoded by tshark;
#             xiw_remerr: invalid-rkey WRITE / READ -> remote error WC;
#             xiw_quickclose: close each of 25 connections the moment it
#               is ESTABLISHED (disconnect / destroy) against siw's
#               rping -P: siw's kernel must stay clean (iwcm.c:969 BUG).
#             ack/: xiwarp with XIW_TX_COMPLETION=ack (WCs at the peer's
#               TCP ACK, seed 000): rping, ib_{write,read}_bw -s 65536 and
#               ib_send_lat -s 2, both roles. As server, xiwarp's last
#               setup message then completes at siw's delayed ACK (~40 ms)
#               and perftest listens again only after it: siw's client,
#               which does not retry a refused connect, needs the closed
#               listener's port to stay listening while the handshake
#               connection is open (XIW_LISTEN_LINGER_MS);
#             rstream (blocking, nonblocking) and riostream of rdma-core 44
#               (real rsockets on siw) against ours, both directions,
#               data verified, each connection closed by a FIN from our
#               side and no RST from it (headers captured on the tap).
#   crcreq    siw.mpa_crc_required=1: rping, xiwarp CRC off and on (as
#             responder siw still answers a C=0 request with C=0)
#   strict    siw.mpa_crc_strict=1: rping with xiwarp CRC off must pass,
#             with XIW_MPA_CRC=1 must fail promptly (reject, no hang)
#   v1        siw.mpa_version=1: rping
#   p2p       siw.peer_to_peer=1: rping with XIW_MPA_P2P=1 and =0 (an
#             xiwarp server with XIW_MPA_P2P=0 must fail: siw as P2P
#             initiator TERMINATEs a reply without P2P)
#   xsk       siw defaults, the guest NIC without checksum/segmentation
#             offloads (SIW_NIC_OPTS: utcp verifies every checksum and
#             takes no GSO frames), xiw_xdp attached to the tap inside our
#             namespace (xiwctl attach), xiwarp with XIW_TRANSPORT=xsk:
#             utcp (AF_XDP) against the guest's Linux 6.1 TCP and siw.
#             rping -v -V, xiwarp CRC off and on; the six perftests -R at
#             64 KB; rdma_server/rdma_client. Each cell also needs the
#             XDP "steered" counter to move, no xiwarp process to fall
#             back to ksock and no FPDU record rejected (meta_mismatch);
#             rping cells need records written (parsed) and used
#             (meta_used). AF_XDP frames bypass the tap's packet
#             capture, so these cells have no tshark/mpa_walk verdict.
# Every rping cell (rping -v -V -C 100 -S 4096 on both ends) is captured
# on the tap and judged: tshark decodes the MPA request/reply and every
# FPDU as iwarp_ddp_rdmap, no malformed frames or expert errors, CRCs good
# when CRC is on; an independent walk (mpa_walk.py) checks framing (the
# CRC field is always present), CRC32C, and that every FPDU xiwarp sends
# fits the peer's MSS (siw runs with try_gso off).
#
# Usage: tests/interop/siw_interop.sh [--help] [--list]
# Environment:
#   XIW_SIW_PEER=DIR       the siw-peer harness (default $ROOT/../shared/siw-peer)
#   SIW_CACHE=DIR          its cache (default /var/cache/xiwarp/siw-peer); the
#                          image is built there (build.sh) when missing
#   SIW_ACCEL=tcg          qemu accelerator (auto probes KVM first)
#   XIW_INTEROP_NS=xiwinterop  XIW_INTEROP_TAP=xiwtapI
#   XIW_INTEROP_RUN=/var/tmp/xiwarp-interop-run  XIW_INTEROP_NET=10.79.0
#                          our guest's namespace, tap, run dir and /24
#                          (one run per run dir at a time: a second waits
#                          on $XIW_INTEROP_RUN.lock, XIW_INTEROP_LOCK_WAIT=1800 s)
#   XIW_INTEROP_RUNS=N     repeat the whole matrix N times (default 1)
#   XIW_INTEROP_FILTER=RE  only cells whose name matches (grep -E); boot
#                          sets without a matching cell are not booted
#   XIW_INTEROP_XIWENV='K=V ..'  extra env for every xiwarp process
#   XIW_INTEROP_BW_ITERS=200 XIW_INTEROP_LAT_ITERS=100  perftest -n
#   XIW_INTEROP_PERF_TRIES=1  attempts per perftest cell (a retry is reported)
#   XIW_INTEROP_T_CELL=60  seconds a client may take
#   XIW_INTEROP_QUICK_N=25 connections per quick-close cell
#   XIW_INTEROP_SIW_DEBUG=1  boot with siw.dyndbg=+p (siw debug in dmesg;
#                          each set's dmesg is saved in the logs)
#   XIW_INTEROP_MAX_FAILS=4  after this many failed cells in a row in one
#                          guest, the rest of its cells fail without running
#                          (a broken build must not take an hour)
# A failed cell is followed by a fresh boot of the guest, so one stuck siw
# QP does not fail the cells after it.
#   XIW_INTEROP_LOGS=DIR   logs and captures (default $BUILD/interop-logs)
#   BUILD=build
# timeout: 2400
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
HERE=$ROOT/tests/interop

usage() { sed -n '2,/^# timeout:/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
-h | --help) usage; exit 0 ;;
--list) LIST_ONLY=1 ;;
"") LIST_ONLY=0 ;;
*) echo "unknown argument $1" >&2; usage >&2; exit 2 ;;
esac

BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
XIWRUN=$BUILD/bin/xiwrun
REMERR=$BUILD/tests/interop/xiw_remerr
QUICKCLOSE=$BUILD/tests/interop/xiw_quickclose
QUICK_N=${XIW_INTEROP_QUICK_N:-25}
XIWCTL=$BUILD/bin/xiwctl

PEER=${XIW_SIW_PEER:-$ROOT/../shared/siw-peer}
export SIW_CACHE=${SIW_CACHE:-/var/cache/xiwarp/siw-peer}
export SIW_ACCEL=${SIW_ACCEL:-tcg}
NET=${XIW_INTEROP_NET:-10.79.0}
export SIW_NS=${XIW_INTEROP_NS:-xiwinterop}
export SIW_TAP=${XIW_INTEROP_TAP:-xiwtapI}
export SIW_RUN=${XIW_INTEROP_RUN:-/var/tmp/xiwarp-interop-run}
export SIW_HOST_IP=$NET.1 SIW_GUEST_IP=$NET.2
export SIW_GUEST_MAC=${XIW_INTEROP_MAC:-52:54:00:79:00:02}
HIP=$SIW_HOST_IP GIP=$SIW_GUEST_IP

RUNS=${XIW_INTEROP_RUNS:-1}
FILTER=${XIW_INTEROP_FILTER:-}
read -r -a XENV <<<"${XIW_INTEROP_XIWENV:-}"
XENV0=("${XENV[@]}")
BW_N=${XIW_INTEROP_BW_ITERS:-200}
LAT_N=${XIW_INTEROP_LAT_ITERS:-100}
PERF_TRIES=${XIW_INTEROP_PERF_TRIES:-1}
SIW_DEBUG=${XIW_INTEROP_SIW_DEBUG:-}
MAX_BAD=${XIW_INTEROP_MAX_FAILS:-4}
[ "$SIW_DEBUG" = 0 ] && SIW_DEBUG=
RPING_C=100
RPING_S=${XIW_INTEROP_RPING_SIZE:-4096}
T_CELL=${XIW_INTEROP_T_CELL:-60}  # a client must end within this (seconds)
T_GRACE=15     # the server must end this long after its client
T_FAIL=20      # an expected failure must be reported within this
LOGS=${XIW_INTEROP_LOGS:-$BUILD/interop-logs}

# ------------------------------------------------------------ cell list
# "SET CELL" lines: the whole matrix, in run order.
SETS=(default crcreq strict v1 p2p xsk)
declare -A APPEND=(
	[default]=""
	[crcreq]="siw.mpa_crc_required=1"
	[strict]="siw.mpa_crc_strict=1"
	[v1]="siw.mpa_version=1"
	[p2p]="siw.peer_to_peer=1"
	[xsk]=""
)
# the guest NIC of the xsk set: no offloads (full checksums, no GSO frames)
XSK_NIC_OPTS=csum=off,gso=off,guest_csum=off,guest_tso4=off,guest_tso6=off
cells_of() {
	local set=$1 r p s
	case $set in
	default)
		for r in siwsrv xiwsrv; do
			echo "rping/$r/crc-off"
			echo "rping/$r/xiw-crc"
			# siw as a v2 initiator refuses a revision 1 reply
			# (siw_proc_mpareply: "responder MUST reply with MPA
			# version 2"), so a v1-only xiwarp server cannot serve it
			# siw as a v1 responder sets up its QP with ORD 0 ("siw_qp_readq_init:
			# ORD 0, IRD 0"), so the rping server's RDMA READ fails
			# ("post send error -1"); siw against siw fails the same way
			if [ $r = siwsrv ]; then echo "rping/$r/xiw-v1(siw-fails)"; else echo "rping/$r/xiw-v1(must-fail)"; fi
			echo "rping/$r/xiw-p2p0"
			echo "rping/$r/xiw-p2p1"
			echo "rping/$r/xiw-markers(must-fail)"
		done
		for p in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat; do
			for s in 65536 2; do
				for r in siwsrv xiwsrv; do echo "perf/$r/$p-s$s"; done
			done
		done
		for r in siwsrv xiwsrv; do echo "rdmacm/$r/rdma_server+client"; done
		# rsockets: rdma-core 44's own rstream/riostream on siw (real
		# rsockets) against ours, both directions; the zero-copy
		# extension must stay off. xiwsrv: our server, rdma-core's
		# client on siw, which never exited before the close path
		# became FIN, not RST (edce906): destroying our QP reset the
		# stream with up to ~300 KB of completed WRITEs still in the
		# kernel's send queue, and rdma-core's rsockets ignores flushed
		# receives, so its client waited for that data for ever.
		for r in siwsrv xiwsrv; do
			echo "rsock/$r/rstream-blocking"
			echo "rsock/$r/rstream-nonblocking"
			echo "rsock/$r/riostream-blocking"
		done
		echo "hostile/siwsrv/bad-stag-crc"
		echo "hostile/siwsrv/bad-ddp-ver-crc"
		echo "hostile/siwsrv/bad-stag"
		echo "hostile/siwsrv/bad-ddp-ver"
		echo "term/siwsrv/remerr-write"
		echo "term/siwsrv/remerr-read"
		echo "close/siwsrv/quick-disconnect"
		echo "close/siwsrv/quick-destroy"
		# "ack/" cells run xiwarp with XIW_TX_COMPLETION=ack (run_cell)
		for r in siwsrv xiwsrv; do
			echo "ack/rping/$r/crc-off"
			echo "ack/perf/$r/ib_write_bw-s65536"
			echo "ack/perf/$r/ib_read_bw-s65536"
			echo "ack/perf/$r/ib_send_lat-s2"
		done
		;;
	crcreq)
		for r in siwsrv xiwsrv; do
			echo "rping/$r/siw-crcreq"
			echo "rping/$r/siw-crcreq+xiw-crc"
		done ;;
	strict)
		for r in siwsrv xiwsrv; do
			echo "rping/$r/siw-strict"
			echo "rping/$r/siw-strict+xiw-crc(must-fail)"
		done ;;
	v1)
		for r in siwsrv xiwsrv; do echo "rping/$r/siw-v1"; done ;;
	p2p)
		echo "rping/siwsrv/siw-p2p1"
		echo "rping/siwsrv/siw-p2p1+xiw-p2p0"
		echo "rping/xiwsrv/siw-p2p1"
		# siw as a P2P initiator TERMINATEs (LLP, no matching RTR) when
		# the reply does not take up peer-to-peer mode
		echo "rping/xiwsrv/siw-p2p1+xiw-p2p0(must-fail)"
		;;
	xsk)
		# "xsk/" cells run xiwarp with XIW_TRANSPORT=xsk (run_cell)
		for r in siwsrv xiwsrv; do
			echo "xsk/rping/$r/crc-off"
			echo "xsk/rping/$r/xiw-crc"
		done
		for p in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat; do
			for r in siwsrv xiwsrv; do echo "xsk/perf/$r/$p-s65536"; done
		done
		for r in siwsrv xiwsrv; do echo "xsk/rdmacm/$r/rdma_server+client"; done
		;;
	esac
}
wanted() { [ -z "$FILTER" ] || grep -qE -- "$FILTER" <<<"$1"; }

if [ "$LIST_ONLY" = 1 ]; then
	for set in "${SETS[@]}"; do
		cells_of "$set" | sed "s|^|$set:${APPEND[$set]:-(siw defaults)}  |"
	done
	exit 0
fi

# ------------------------------------------------------- can we run?
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root (qemu on a tap in a network namespace needs root)"
[ -d "$PEER" ] && [ -x "$PEER/run.sh" ] || skip "no siw peer harness at $PEER (set XIW_SIW_PEER)"
command -v "${SIW_QEMU:-qemu-system-x86_64}" >/dev/null ||
	skip "qemu-system-x86_64 not installed (bash scripts/deps.sh installs qemu-system-x86)"
[ -c /dev/net/tun ] || skip "no /dev/net/tun (the guest's NIC is a tap)"
for p in rping ib_write_bw rdma_server tshark dumpcap python3; do
	command -v $p >/dev/null || skip "$p not installed (need: bash scripts/deps.sh)"
done
for f in "$XIWRUN" "$REMERR" "$XIWCTL" "$BUILD/lib/libibverbs.so.1"; do
	[ -e "$f" ] || { echo "FAIL: $f missing: run 'make'"; exit 1; }
done
case $SIW_CACHE in "$ROOT"/* | "$(cd "$PEER" && pwd -P)"/*)
	echo "FAIL: SIW_CACHE=$SIW_CACHE must be outside the clone and the harness"; exit 1 ;;
esac
if [ ! -f "$SIW_CACHE/out/vmlinuz" ] || [ ! -f "$SIW_CACHE/out/initramfs.cpio.gz" ]; then
	echo "siw guest image missing in $SIW_CACHE/out: building it ($PEER/build.sh, 1-2 min)"
	mkdir -p "$SIW_CACHE"
	"$PEER/build.sh" >"/tmp/xiw-interop-build.$$.log" 2>&1 || {
		tail -n 20 "/tmp/xiw-interop-build.$$.log"
		echo "FAIL: $PEER/build.sh failed (log /tmp/xiw-interop-build.$$.log)"
		exit 1
	}
fi

# One run per namespace/tap/run dir at a time: a second invocation with the
# same names (CI and a developer on one machine) would stop our guest and
# delete our namespace under us. Wait for the lock instead.
mkdir -p "$(dirname "$SIW_RUN")"
exec 9>"$SIW_RUN.lock"
if ! flock -n 9; then
	echo "another interop run holds $SIW_RUN.lock; waiting (up to ${XIW_INTEROP_LOCK_WAIT:-1800}s)"
	flock -w "${XIW_INTEROP_LOCK_WAIT:-1800}" 9 || {
		echo "FAIL: $SIW_RUN.lock still held (set XIW_INTEROP_NS/TAP/RUN/NET for a parallel run)"
		exit 1
	}
fi

rm -rf "$LOGS"
mkdir -p "$LOGS" "$SIW_RUN"

# ------------------------------------------------------------ cleanup
HPIDS=()
cleanup() {
	local p
	for p in "${HPIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	"$PEER/stop.sh" >/dev/null 2>&1 || true
	ip netns del "$SIW_NS" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------ helpers
ns() { ip netns exec "$SIW_NS" "$@"; }
gsh() { "$PEER/guest.sh" -t "${GT:-150}" "$@"; }

# gbg NAME CMD: CMD detached in the guest, output in /tmp/NAME.log there,
# ended by "__rc=N". The guest pid (a session leader) goes to GPID.
gbg() {
	local out
	out=$("$PEER/guest.sh" -b "( $2 ) >/tmp/$1.log 2>&1; echo __rc=\$? >>/tmp/$1.log") || return 1
	GPID=$(sed -n 's/^guest pid //p' <<<"$out")
}
# gwait NAME SECONDS: the detached command's exit status (124: still
# running after SECONDS, then it is killed); its log goes to $2.log
gwait() {
	local name=$1 t=$2 end=$((SECONDS + $2)) rc
	while [ $SECONDS -lt $end ]; do
		rc=$(gsh "sed -n 's/^__rc=//p' /tmp/$name.log" 2>/dev/null)
		[ -n "$rc" ] && break
		sleep 0.5
	done
	[ -n "$rc" ] || { gsh "kill -KILL -$GPID" >/dev/null 2>&1; rc=124; }
	gsh "cat /tmp/$name.log; rm -f /tmp/$name.log" >"$CELLDIR/guest.log" 2>&1
	return "$rc"
}
# glisten PORT SECONDS: a TCP listener on PORT in the guest
glisten() {
	local hex end=$((SECONDS + $2))
	hex=$(printf '%04X' "$1")
	while [ $SECONDS -lt $end ]; do
		gsh "awk '\$4 == \"0A\" && \$2 ~ /:$hex\$/ {f = 1} END {exit !f}' /proc/net/tcp" \
			>/dev/null 2>&1 && return 0
		sleep 0.3
	done
	return 1
}
# hbg LOG CMD...: CMD in our namespace, backgrounded; pid in HPID
hbg() {
	local log=$1
	shift
	# ip netns exec execs the command: $! is the program itself
	ip netns exec "$SIW_NS" "$@" >"$log" 2>&1 </dev/null 9>&- &
	HPID=$!
	HPIDS+=("$HPID")
}
hlisten() { # PORT SECONDS PID
	local end=$((SECONDS + $2))
	while [ $SECONDS -lt $end ]; do
		ns ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
hwait() { # PID SECONDS: exit status, 124 after killing it
	local end=$((SECONDS + $2)) rc
	while kill -0 "$1" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
	if kill -0 "$1" 2>/dev/null; then
		kill -TERM "$1" 2>/dev/null; sleep 1; kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1"; rc=$?
	return $rc
}
xiw() { env "${XENV[@]}" "$@"; }

cap_start() { # PORT [SNAPLEN]: dumpcap on the tap for that port -> $CELLDIR/cap.pcapng
	local i snap=()
	[ -n "${2:-}" ] && snap=(-s "$2")
	CAP=$CELLDIR/cap.pcapng
	rm -f "$CAP" "$CELLDIR/dumpcap.log"
	ip netns exec "$SIW_NS" dumpcap -q -i "$SIW_TAP" "${snap[@]}" -f "tcp port $1" -w "$CAP" \
		2>"$CELLDIR/dumpcap.log" </dev/null >/dev/null 9>&- &
	CAPPID=$!
	HPIDS+=("$CAPPID")
	for i in $(seq 100); do
		grep -q "Capturing on" "$CELLDIR/dumpcap.log" 2>/dev/null && return 0
		kill -0 "$CAPPID" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
cap_stop() {
	[ -n "$CAPPID" ] || return 0
	sleep 0.5
	kill -INT "$CAPPID" 2>/dev/null
	hwait "$CAPPID" 10 >/dev/null
}

# perftest result column of a client log: BW average[MB/sec] or t_typical
perf_value() {
	awk -v what="$2" '
		/^[ \t]*#bytes/ {
			h = $0
			gsub(/BW peak/, "BW_peak", h); gsub(/BW average/, "BW_average", h)
			gsub(/% percentile/, "%_percentile", h)
			n = split(h, col, /[ \t]+/); idx = 0; k = 0
			for (i = 1; i <= n; i++) {
				if (col[i] == "") continue
				k++
				if (what == "bw" && col[i] ~ /^BW_average/) idx = k
				if (what == "lat" && col[i] ~ /^t_typical/) idx = k
			}
			want = idx; next
		}
		want && $1 ~ /^[0-9]+$/ { print $want; want = 0; exit }
	' "$1" 2>/dev/null
}

NPASS=0 NFAIL=0
XSKCELL=0 CAP="" CAPPID=""
FAILED=()
RATES=()
# The guest kernel's count of BUG/Oops lines; a cell during which it grew
# fails, whatever else it saw (siw's races end in iw_cm BUGs).
GUEST_BUGS=0
guest_bugs() {
	local n
	n=$(gsh "dmesg | grep -cE 'kernel BUG|Oops'; true" 2>/dev/null | head -1)
	echo "${n:-0}"
}

result() { # CELL OK(0|1) DETAIL
	local line ok=$2 detail=$3 bugs
	bugs=$(guest_bugs)
	if [ "${bugs:-0}" -gt "$GUEST_BUGS" ]; then
		GUEST_BUGS=$bugs
		gsh "dmesg" >"$CELLDIR/dmesg.txt" 2>&1
		ok=1
		detail="guest kernel BUG/Oops during this cell (dmesg.txt); $detail"
	fi
	set -- "$1" "$ok" "$detail"
	if [ "$2" = 0 ]; then
		NPASS=$((NPASS + 1))
		line=$(printf 'PASS  %-46s %s' "$CUR" "$3")
	else
		NFAIL=$((NFAIL + 1))
		FAILED+=("$CUR")
		line=$(printf 'FAIL  %-46s %s' "$CUR" "$3")
	fi
	echo "$line"
	echo "$line" >"$CELLDIR/result"
	if [ "$2" != 0 ]; then
		for f in "$CELLDIR"/{client,server,guest}.log "$CELLDIR/analysis.txt"; do
			[ -s "$f" ] || continue
			echo "    --- ${f##*/} (last 12 lines)"
			tail -n 12 "$f" | sed 's/^/    | /'
		done
		gsh 'dmesg | grep -i siw | tail -n 5' 2>/dev/null | sed 's/^/    | dmesg: /'
	fi
}

# ------------------------------------------------------------ analysis
# analyze PORT XIWDIR(c2s|s2c) CRC(0|1|-): tshark + mpa_walk verdict of
# $CAP; sets WHY (empty = fine) and WIRE (summary)
analyze() {
	local port=$1 xdir=$2 crc=$3 st f rc=0 mss lim mx
	local -A v=()
	WHY="" WIRE=""
	st=$(tshark -n -r "$CAP" --disable-protocol rpcordma -o tcp.try_heuristic_first:TRUE -q -z \
		"io,stat,0,iwarp_mpa.req,iwarp_mpa.rep,iwarp_mpa.fpdu,iwarp_ddp_rdmap,_ws.malformed,_ws.expert.severity==\"Error\",iwarp_mpa.crc_check" 2>>"$CELLDIR/analysis.txt" |
		awk -F'|' '/<>/ { for (i = 3; i <= NF; i += 2) { gsub(/ /, "", $i); printf "%s ", $i } }')
	read -r v[req] v[rep] v[fpdu] v[ddp] v[mal] v[exp] v[crcf] <<<"$st"
	# tshark's CRC verdicts ("Good CRC32" / "Bad CRC32", -V text only)
	v[badcrc]=0/0
	if [ "$crc" = 1 ]; then
		v[badcrc]=$(tshark -n -r "$CAP" --disable-protocol rpcordma -o tcp.try_heuristic_first:TRUE -V 2>/dev/null |
			awk '/Bad CRC32/ { b++ } /Good CRC32/ { g++ } END { printf "%d/%d", b, b + g }')
	fi
	python3 "$HERE/mpa_walk.py" "$CAP" "$port" >"$CELLDIR/walk.txt" 2>&1 || rc=$?
	while IFS='=' read -r f val; do
		case $f in [a-z_]*) v[w_$f]=$val ;; esac
	done <"$CELLDIR/walk.txt"
	{
		echo "tshark: req ${v[req]} rep ${v[rep]} fpdu-frames ${v[fpdu]} ddp-frames ${v[ddp]} malformed ${v[mal]} expert-errors ${v[exp]} crc-frames ${v[crcf]} crc-bad/all ${v[badcrc]}"
		cat "$CELLDIR/walk.txt"
	} >>"$CELLDIR/analysis.txt"
	[ "${v[req]:-0}" -ge 1 ] && [ "${v[rep]:-0}" -ge 1 ] || WHY+="tshark: no MPA request/reply; "
	[ "${v[fpdu]:-0}" -gt 0 ] && [ "${v[ddp]:-0}" -ge "${v[fpdu]:-0}" ] ||
		WHY+="tshark: ${v[ddp]:-0} of ${v[fpdu]:-0} FPDU frames decode as iwarp_ddp_rdmap; "
	[ "${v[mal]:-1}" = 0 ] || WHY+="tshark: ${v[mal]} malformed frames; "
	[ "${v[exp]:-1}" = 0 ] || WHY+="tshark: ${v[exp]} frames with expert errors; "
	[ $rc = 0 ] || WHY+="mpa_walk: $(grep -m1 mpa_error "$CELLDIR/walk.txt" | cut -c12-150) (exit $rc); "
	if [ "$crc" = 1 ]; then
		[ "${v[w_crc_on]:-0}" = 1 ] || WHY+="CRC not negotiated (req ${v[w_mpa_req]:-?}, rep ${v[w_mpa_rep]:-?}); "
		[ "${v[badcrc]%%/*}" = 0 ] && [ "${v[badcrc]#*/}" -gt 0 ] || WHY+="tshark Bad CRC32 (bad/all) ${v[badcrc]}; "
	elif [ "$crc" = 0 ]; then
		[ "${v[w_crc_on]:-1}" = 0 ] || WHY+="CRC negotiated although nobody asked; "
	fi
	# every FPDU xiwarp sends fits one segment of the peer's MSS
	if [ "$xdir" = c2s ]; then mss=${v[w_mss_s]:-0}; mx=${v[w_max_fpdu_c2s]:-0}; else mss=${v[w_mss_c]:-0}; mx=${v[w_max_fpdu_s2c]:-0}; fi
	lim=$mss
	[ "${v[w_ts]:-0}" = 1 ] && lim=$((mss - 12))
	if [ "$mss" -gt 0 ] && [ "$mx" -gt "$lim" ]; then
		WHY+="xiwarp FPDU of $mx octets > one segment ($lim = MSS $mss - options); "
	fi
	local xu su
	if [ "$xdir" = c2s ]; then xu=${v[w_max_ulpdu_c2s]:-?}; su=${v[w_max_ulpdu_s2c]:-?}; else xu=${v[w_max_ulpdu_s2c]:-?}; su=${v[w_max_ulpdu_c2s]:-?}; fi
	WIRE="req ${v[w_mpa_req]:-?} rep ${v[w_mpa_rep]:-?}; FPDUs $((${v[w_fpdus_c2s]:-0} + ${v[w_fpdus_s2c]:-0})), CRC good ${v[w_crc_good]:-0}${v[badcrc]:+ (tshark bad/all ${v[badcrc]})}; max ULPDU xiwarp $xu siw $su (seg $lim)"
}

# ------------------------------------------------------------ cells
PORT=20000
next_port() { PORT=$((PORT + 1)); }

# knobs of a cell name: XIWK (xiwarp env), EXPECT (pass|fail), CRC (0|1)
cell_knobs() {
	local c=$1
	XIWK=() EXPECT=pass CRC=0 SIWFAILS=0
	case $c in *must-fail*) EXPECT=fail ;; esac
	# siw itself fails after the connection is up: assert no pings and
	# that xiwarp notices promptly, not how rping exits
	case $c in *siw-fails*) EXPECT=fail SIWFAILS=1 ;; esac
	case $c in *xiw-crc*) XIWK+=(XIW_MPA_CRC=1); CRC=1 ;; esac
	case $c in *xiw-v1*) XIWK+=(XIW_MPA_VERSION=1) ;; esac
	case $c in *xiw-p2p0*) XIWK+=(XIW_MPA_P2P=0) ;; esac
	case $c in *xiw-p2p1*) XIWK+=(XIW_MPA_P2P=1) ;; esac
	case $c in *xiw-markers*) XIWK+=(XIW_MPA_MARKERS=1) ;; esac
	# siw.mpa_crc_required=1 makes siw ask for CRC as initiator; as
	# responder siw mirrors a C=0 request (siw_proc_mpareq), so CRC stays
	# off against an xiwarp client that does not ask (a siw quirk)
	case $c in rping/xiwsrv/*siw-crcreq* | *siw-crcreq+xiw-crc*) CRC=1 ;; esac
	for kv in "${XENV[@]}"; do [ "$kv" = XIW_MPA_CRC=1 ] && CRC=1; done
}

cell_rping() { # ROLE
	local role=$1 rc=0 crc n t0 dt why="" crole srole sargs cargs
	cell_knobs "$CUR"
	next_port
	sargs=(-s -a "$([ "$role" = siwsrv ] && echo 0.0.0.0 || echo "$HIP")" -p "$PORT" -v -V -C "$RPING_C" -S "$RPING_S")
	cargs=(-c -a "$([ "$role" = siwsrv ] && echo "$GIP" || echo "$HIP")" -p "$PORT" -v -V -C "$RPING_C" -S "$RPING_S")
	if [ "$XSKCELL" = 1 ]; then
		CAPPID=""	# AF_XDP frames bypass the tap's packet capture
	else
		cap_start "$PORT" || { result "$CUR" 1 "dumpcap did not start"; return; }
	fi
	t0=$SECONDS
	if [ "$role" = siwsrv ]; then
		gbg srv "rping ${sargs[*]}" && glisten "$PORT" 30 || { cap_stop; result "$CUR" 1 "siw rping server did not listen"; return; }
		t0=$SECONDS
		ns timeout "$T_CELL" env "${XIWK[@]}" "${XENV[@]}" stdbuf -oL "$XIWRUN" rping "${cargs[@]}" \
			>"$CELLDIR/client.log" 2>&1 </dev/null || rc=$?
		dt=$((SECONDS - t0))
		# a siw rping server whose client was refused waits for ever:
		# not our hang, so do not wait long for it then
		gwait srv "$([ "$EXPECT" = fail ] && echo 3 || echo $T_GRACE)"; srole=$?
	else
		hbg "$CELLDIR/server.log" env "${XIWK[@]}" "${XENV[@]}" stdbuf -oL "$XIWRUN" rping "${sargs[@]}"
		hlisten "$PORT" 30 "$HPID" || { cap_stop; result "$CUR" 1 "xiwarp rping server did not listen"; return; }
		t0=$SECONDS
		GT=$((T_CELL + 15)) gsh "timeout $T_CELL rping ${cargs[*]}" >"$CELLDIR/client.log" 2>&1 || rc=$?
		dt=$((SECONDS - t0))
		hwait "$HPID" $T_GRACE; srole=$?
	fi
	cap_stop
	n=$(grep -c '^ping data: ' "$CELLDIR/client.log")
	if [ "$EXPECT" = fail ]; then
		# the connection must fail, promptly and visibly on our side
		local err
		if [ "$role" = siwsrv ]; then
			err=$(grep -m1 -iE 'reject|refused|error|fail|unreachable' "$CELLDIR/client.log")
			[ "$SIWFAILS" = 0 ] || [ -n "$err" ] || err=$(grep -m1 -E 'DISCONNECT' "$CELLDIR/client.log")
		else
			err=$(grep -m1 -iE 'reject|refused|error|fail|unreachable|DISCONNECT' "$CELLDIR/server.log")
			[ -n "$err" ] || err=$(grep -m1 -iE 'reject|refused|error|fail|unreachable' "$CELLDIR/client.log" | sed 's/^/siw client: /')
		fi
		analyze "$PORT" c2s - >/dev/null 2>&1
		[ "$n" = 0 ] || why+="$n pings went through; "
		[ "$rc" != 0 ] || [ "$role" = xiwsrv ] || [ "$SIWFAILS" = 1 ] || why+="xiwarp rping exited 0; "
		[ "$dt" -le "$T_FAIL" ] || why+="took ${dt}s (> ${T_FAIL}s); "
		[ "$srole" != 124 ] || [ "$role" = siwsrv ] || why+="xiwarp server still running ${T_GRACE}s after the client failed; "
		[ -n "$err" ] || why+="no error message on our side; "
		if [ -z "$why" ]; then
			result "$CUR" 0 "failed as it must in ${dt}s (client rc $rc, server rc $srole): ${err:0:90}; MPA ${WIRE%%;*}"
		else
			result "$CUR" 1 "$why"
		fi
		return
	fi
	[ "$n" = "$RPING_C" ] || why+="client printed $n of $RPING_C verified pings (rc $rc); "
	[ "$srole" = 0 ] || why+="server exit $srole; "
	if [ "$XSKCELL" = 1 ]; then
		WIRE="no capture (AF_XDP)"
	else
		analyze "$PORT" "$([ "$role" = siwsrv ] && echo c2s || echo s2c)" "$CRC"
		why+=$WHY
	fi
	if [ -z "$why" ]; then
		result "$CUR" 0 "$n pings in ${dt}s; $WIRE"
	else
		result "$CUR" 1 "$why"
	fi
}

cell_perf() { # ROLE PROG SIZE
	local role=$1 prog=$2 size=$3 rc=0 srv kind n args v try why retried=""
	case $prog in *_bw) kind=bw; n=$BW_N ;; *) kind=lat; n=$LAT_N ;; esac
	for try in $(seq "$PERF_TRIES"); do
		next_port
		rc=0 why=""
		args=(-R -F -p "$PORT" -n "$n" -s "$size")
		# headers only (snaplen 256), kept when the cell fails
		CAPPID=""
		[ "$XSKCELL" = 1 ] || cap_start "$PORT" 256 || echo "note: no capture for $CUR"
		if [ "$role" = siwsrv ]; then
			gbg srv "$prog -d siw0 ${args[*]}" && glisten "$PORT" 30 || { why="siw $prog server did not listen"; continue; }
			ns timeout "$T_CELL" env "${XENV[@]}" stdbuf -oL "$XIWRUN" "$prog" "${args[@]}" "$GIP" \
				>"$CELLDIR/client.log" 2>&1 </dev/null || rc=$?
			gwait srv $T_GRACE; srv=$?
		else
			hbg "$CELLDIR/server.log" env "${XENV[@]}" stdbuf -oL "$XIWRUN" "$prog" "${args[@]}"
			hlisten "$PORT" 30 "$HPID" || { why="xiwarp $prog server did not listen"; hwait "$HPID" 1; continue; }
			GT=$((T_CELL + 15)) gsh "timeout $T_CELL $prog -d siw0 ${args[*]} $HIP" >"$CELLDIR/client.log" 2>&1 || rc=$?
			hwait "$HPID" $T_GRACE; srv=$?
		fi
		cap_stop
		v=$(perf_value "$CELLDIR/client.log" "$kind")
		[ "$rc" = 0 ] || why+="client exit $rc; "
		[ "$srv" = 0 ] || why+="server exit $srv; "
		[ -n "$v" ] || why+="no result line after the #bytes header; "
		[ -z "$why" ] && break
		[ $try = 1 ] && [ "$PERF_TRIES" -gt 1 ] && { cp "$CELLDIR/client.log" "$CELLDIR/client.try1.log"; retried=" (retried once: 1st try: ${why%; })"; }
	done
	[ -z "$why" ] && rm -f "${CAP:-}"
	if [ -z "$why" ]; then
		if [ "$kind" = bw ]; then
			result "$CUR" 0 "$v MB/s$retried"
			[ "$size" = 65536 ] && RATES+=("$CUR $v MB/s")
		else
			result "$CUR" 0 "$v usec typical$retried"
		fi
	else
		result "$CUR" 1 "$why$retried"
	fi
}

cell_rdmacm() { # ROLE
	local role=$1 rc=0 srv why=""
	next_port
	if [ "$role" = siwsrv ]; then
		gbg srv "rdma_server -p $PORT" && glisten "$PORT" 30 || { result "$CUR" 1 "siw rdma_server did not listen"; return; }
		ns timeout "$T_CELL" env "${XENV[@]}" "$XIWRUN" rdma_client -s "$GIP" -p "$PORT" \
			>"$CELLDIR/client.log" 2>&1 </dev/null || rc=$?
		gwait srv $T_GRACE; srv=$?
		grep -q 'rdma_server: end 0' "$CELLDIR/guest.log" || why+="server did not print 'end 0'; "
	else
		hbg "$CELLDIR/server.log" env "${XENV[@]}" "$XIWRUN" rdma_server -s "$HIP" -p "$PORT"
		hlisten "$PORT" 30 "$HPID" || { result "$CUR" 1 "xiwarp rdma_server did not listen"; return; }
		GT=$((T_CELL + 15)) gsh "timeout $T_CELL rdma_client -s $HIP -p $PORT" >"$CELLDIR/client.log" 2>&1 || rc=$?
		hwait "$HPID" $T_GRACE; srv=$?
		grep -q 'rdma_server: end 0' "$CELLDIR/server.log" || why+="server did not print 'end 0'; "
	fi
	grep -q 'rdma_client: end 0' "$CELLDIR/client.log" || why+="client did not print 'end 0'; "
	[ "$rc" = 0 ] || why+="client exit $rc; "
	[ "$srv" = 0 ] || why+="server exit $srv; "
	if [ -z "$why" ]; then result "$CUR" 0 "send/recv exchanged, both 'end 0'"; else result "$CUR" 1 "$why"; fi
}

# rsock_close_why CAP SIZE: "" when our side closed with a FIN (or siw's
# reset the stream first) and sent no RST, else why not. siw's side may
# reset: an rdma-core server takes its QP to ERROR as soon as its own
# DISCONNECT completes (siw then sometimes sends RST by itself, ~10 ms
# later), and our FIN or a credit update for its last bytes may meet
# that closed socket.
rsock_close_why() {
	local cap=$1 sz=$2 fin rst peer_rst
	fin=$(tshark -n -r "$cap" -Y "ip.src == $HIP && tcp.flags.fin == 1" -T fields -e frame.number 2>/dev/null | head -n 1)
	rst=$(tshark -n -r "$cap" -Y "ip.src == $HIP && tcp.flags.reset == 1" 2>/dev/null | wc -l)
	peer_rst=$(tshark -n -r "$cap" -Y "ip.src == $GIP && tcp.flags.reset == 1" -T fields -e frame.number 2>/dev/null | head -n 1)
	[ -n "$fin" ] || [ -n "$peer_rst" ] || printf 'no FIN from us at %s; ' "$sz"
	[ "$rst" = 0 ] || printf '%s RST from us at %s; ' "$rst" "$sz"
}

# cell_rsock ROLE PROG MODE: PROG (rstream|riostream) -T MODE -T v (data
# verified), twice: 10 x 100 transfers of 4 KB, 2 x 20 of 1 MB (its
# "custom" test; the default 8-test run is too slow for a TCG guest),
# inline 64 (rdma-core 44's own bandwidth tests ask for inline 0, which
# its rsockets refuse on iWARP with ENOTSUP). Our side must report that
# the zero-copy extension stayed off (XIW_RS_STATS: "zc 0"), and our side
# must end each connection with a FIN (unless siw reset it first) and
# never a RST (headers captured on the tap; kept when the cell fails):
# rdma-core 44's
# rsockets ignores flushed receives and learns of a disconnect only from
# the peer's DISCONNECT message, so a reset stream, which also drops
# what was still queued for it, leaves it waiting for ever.
cell_rsock() { # ROLE PROG MODE
	local role=$1 prog=$2 mode=$3 rc=0 srv why="" n t args s c i
	next_port
	for t in "4096 100 10" "1048576 20 2"; do
		read -r s c i <<<"$t"
		args="-S $s -C $c -I $i -i 64 -T $mode -T v"
		cap_start "$PORT" 256 || { result "$CUR" 1 "dumpcap did not start"; return; }
		if [ "$role" = siwsrv ]; then
			gbg srv "$prog -p $PORT $args" && glisten "$PORT" 30 || { cap_stop; result "$CUR" 1 "siw $prog server did not listen"; return; }
			# shellcheck disable=SC2086 # args are words
			ns timeout "$T_CELL" env "${XENV[@]}" XIW_RS_STATS=1 "$XIWRUN" "$prog" -s "$GIP" -p "$PORT" $args \
				>>"$CELLDIR/client.log" 2>&1 </dev/null || rc=$?
			gwait srv $T_GRACE; srv=$?
			cat "$CELLDIR/guest.log" >>"$CELLDIR/server.log"
		else
			# shellcheck disable=SC2086
			hbg "$CELLDIR/server.$s.log" env "${XENV[@]}" XIW_RS_STATS=1 "$XIWRUN" "$prog" -b "$HIP" -p "$PORT" $args
			hlisten "$PORT" 30 "$HPID" || { cap_stop; result "$CUR" 1 "xiwarp $prog server did not listen"; return; }
			GT=$((T_CELL + 15)) gsh "timeout $T_CELL $prog -s $HIP -p $PORT $args" >>"$CELLDIR/client.log" 2>&1 || rc=$?
			hwait "$HPID" $T_GRACE; srv=$?
			cat "$CELLDIR/server.$s.log" >>"$CELLDIR/server.log"
		fi
		cap_stop
		mv "$CAP" "$CELLDIR/cap.$s.pcapng"
		[ "$rc" = 0 ] || why+="client exit $rc at $s; "
		[ "$srv" = 0 ] || why+="server exit $srv at $s; "
		why+=$(rsock_close_why "$CELLDIR/cap.$s.pcapng" "$s")
		next_port
	done
	n=$(grep -cE '^custom +(4k|1m) ' "$CELLDIR/client.log")
	[ "$n" = 2 ] || why+="$n of 2 result lines; "
	grep -qiE 'fail|error' "$CELLDIR/client.log" "$CELLDIR/server.log" &&
		why+="errors: $(grep -hiE 'fail|error' "$CELLDIR/client.log" "$CELLDIR/server.log" | head -1); "
	grep -q 'rsocket stats: .* zc 1 ' "$CELLDIR/client.log" "$CELLDIR/server.log" &&
		why+="the zero-copy extension was on against real rsockets; "
	grep -q 'rsocket stats: .* zc 0 ' "$CELLDIR/client.log" "$CELLDIR/server.log" ||
		why+="no rsocket stats line from our side; "
	if [ -z "$why" ]; then
		rm -f "$CELLDIR"/cap.*.pcapng
		result "$CUR" 0 "4 KB and 1 MB, data verified, zc off, no RST from us; $(awk '$1 == "custom" && $2 == "1m" { print "1m " $7 " Gb/s" }' "$CELLDIR/client.log")"
	else
		result "$CUR" 1 "$why"
	fi
}

cell_hostile() { # CASE CRC(0|1)
	local case=$1 crc=$2 rc=0 why="" term crcopt=()
	[ "$crc" = 1 ] && crcopt=(--crc)
	next_port
	cap_start "$PORT" || { result "$CUR" 1 "dumpcap did not start"; return; }
	gbg srv "rping -s -a 0.0.0.0 -p $PORT -v -C 1" && glisten "$PORT" 30 || { cap_stop; result "$CUR" 1 "siw rping server did not listen"; return; }
	# tests/netns/xiw_hostile needs the victim's MR in the MPA reply's
	# private data, which no stock server sends: mpa_hostile.py does not
	ns timeout 60 python3 "$HERE/mpa_hostile.py" "${crcopt[@]}" --case "$case" -t 10 "$GIP" "$PORT" >"$CELLDIR/client.log" 2>&1 </dev/null || rc=$?
	gwait srv 20 >/dev/null
	cap_stop
	[ "$rc" = 0 ] || why+="mpa_hostile exit $rc ($(grep -m1 -E 'hostile:' "$CELLDIR/client.log")); "
	term=$(tshark -n -r "$CAP" --disable-protocol rpcordma -o tcp.try_heuristic_first:TRUE -Y "iwarp_rdma.opcode == 7 && tcp.srcport == $PORT" \
		-T fields -e iwarp_rdma.term_layer -e iwarp_rdma.term_etype_ddp -e iwarp_rdma.term_etype_rdma \
		-e iwarp_rdma.term_errcode_ddp_tagged -e iwarp_rdma.term_errcode_ddp_untagged -e iwarp_rdma.term_errcode_rdma 2>/dev/null | head -n1)
	local mal
	mal=$(tshark -n -r "$CAP" --disable-protocol rpcordma -o tcp.try_heuristic_first:TRUE -Y '_ws.malformed' 2>/dev/null | wc -l)
	[ -n "$term" ] || why+="tshark decodes no TERMINATE from siw; "
	[ "$mal" = 0 ] || why+="$mal malformed frames; "
	tshark -n -r "$CAP" --disable-protocol rpcordma -o tcp.try_heuristic_first:TRUE -Y 'iwarp_rdma.opcode == 7' -V 2>/dev/null |
		sed -n '/Terminate Control/,/Reserved/p' >"$CELLDIR/analysis.txt"
	if [ -z "$why" ]; then
		result "$CUR" 0 "siw TERMINATE decoded: layer/etype(ddp,rdma)/code(t,u,r) = $(tr '\t' ' ' <<<"$term"|tr -s ' '); mpa_hostile: $(grep -m1 '^TERMINATE' "$CELLDIR/client.log" | cut -c1-60); $(grep -m1 '^connection' "$CELLDIR/client.log")"
	else
		result "$CUR" 1 "$why"
	fi
}

cell_term() { # OP
	local op=$1 rc=0 any=()
	[ "$op" = read ] && any=(-a)
	next_port
	gbg srv "rping -s -a 0.0.0.0 -p $PORT -v -C 1" && glisten "$PORT" 30 || { result "$CUR" 1 "siw rping server did not listen"; return; }
	ns timeout 60 env "${XENV[@]}" "$REMERR" -o "$op" "${any[@]}" "$GIP" "$PORT" >"$CELLDIR/client.log" 2>&1 </dev/null || rc=$?
	gwait srv 20 >/dev/null
	if [ "$rc" = 0 ]; then
		result "$CUR" 0 "$(grep -m1 '^wcs=' "$CELLDIR/client.log"); $(grep -m1 'TERMINATE received' "$CELLDIR/client.log" | sed 's/.*TERMINATE/TERMINATE/')"
	else
		result "$CUR" 1 "xiw_remerr exit $rc: $(grep -m1 -E '^(FAIL|remerr)' "$CELLDIR/client.log")"
	fi
}

# Item 4: close the moment a connection is ESTABLISHED (rdma_disconnect,
# or destroying QP and id), QUICK_N times, against a siw rping server in
# persistent mode: siw may still be accepting (it completes the accept
# only once it has read our RTR); a close event there made Linux 6.1's
# iw_cm BUG (iwcm.c:969). The guest kernel must stay clean and siw must
# still serve a normal rping afterwards.
cell_close() { # MODE
	local mode=$1 rc=0 bugs why="" n
	next_port
	gbg srv "rping -s -P -a 0.0.0.0 -p $PORT" && glisten "$PORT" 30 || { result "$CUR" 1 "siw rping -P server did not listen"; return; }
	ns timeout 180 env "${XENV[@]}" "$XIWRUN" "$QUICKCLOSE" -n "$QUICK_N" -m "$mode" "$GIP" "$PORT" \
		>"$CELLDIR/client.log" 2>&1 </dev/null || rc=$?
	bugs=$(gsh "dmesg | grep -cE 'kernel BUG|Oops|general protection'" 2>/dev/null)
	[ "$rc" = 0 ] || why+="xiw_quickclose exit $rc ($(tail -1 "$CELLDIR/client.log")); "
	[ "$bugs" = 0 ] || why+="guest kernel: $bugs BUG/Oops lines (dmesg.txt); "
	if [ -z "$why" ]; then
		ns timeout "$T_CELL" env "${XENV[@]}" "$XIWRUN" rping -c -a "$GIP" -p "$PORT" -v -V -C 3 \
			>"$CELLDIR/rping.log" 2>&1 </dev/null || why+="a normal rping afterwards failed; "
		n=$(grep -c 'ping data' "$CELLDIR/rping.log")
		[ "$n" = 3 ] || why+="a normal rping afterwards printed $n of 3 pings; "
	fi
	gsh "kill -TERM -$GPID" >/dev/null 2>&1
	gwait srv 10 >/dev/null
	if [ -z "$why" ]; then
		result "$CUR" 0 "$(tail -1 "$CELLDIR/client.log" | sed 's/^quickclose: //'); guest kernel clean; rping afterwards ok"
	else
		gsh "dmesg" >"$CELLDIR/dmesg.txt" 2>&1
		result "$CUR" 1 "$why"
	fi
}

# xsk_cnt NAME: counter NAME of `xiwctl stat` on our tap (empty: none)
xsk_cnt() {
	ns "$XIWCTL" stat "$SIW_TAP" 2>/dev/null |
		sed -n "s/.*all counters:.* $1=\([0-9]*\).*/\1/p" | head -n 1
}

# xsk_steered: the xiw_xdp "steered" counter of our tap (empty: none)
xsk_steered() { xsk_cnt steered; }

# xsk_meta: "parsed meta_used meta_mismatch" (FPDU records of the XDP
# program, used / rejected by the engine)
xsk_meta() { echo "$(xsk_cnt parsed) $(xsk_cnt meta_used) $(xsk_cnt meta_mismatch)"; }

# xsk_judge STEERED0 META0: after an xsk cell that passed, the traffic must
# have gone through AF_XDP (steered counter moved), no xiwarp process may
# have fallen back to kernel TCP, no FPDU record may have been rejected
# (meta_mismatch), and in rping cells (FPDUs both ways) records must have
# been written by XDP and used by the engine; turns the PASS into a FAIL
# if not
xsk_judge() {
	local s0=$1 s1 why="" f min=20 p0 u0 m0 p1 u1 m1
	# rdma_server/rdma_client: a handshake, MPA, one SEND each way, close
	case $CUR in */rdmacm/*) min=3 ;; esac
	s1=$(xsk_steered)
	[ -n "$s0" ] && [ -n "$s1" ] && [ $((s1 - s0)) -ge $min ] ||
		why+="xiw_xdp steered ${s0:-?} -> ${s1:-?} frames (want >= $min more); "
	for f in "$CELLDIR"/client.log "$CELLDIR"/server.log; do
		[ -f "$f" ] || continue
		grep -q 'use ksock (kernel TCP)' "$f" && why+="${f##*/}: fell back to ksock: $(grep -m1 'use ksock' "$f" | cut -c1-100); "
	done
	read -r p0 u0 m0 <<<"$2"
	read -r p1 u1 m1 <<<"$(xsk_meta)"
	p0=${p0:-0} u0=${u0:-0} m0=${m0:-0} p1=${p1:-0} u1=${u1:-0} m1=${m1:-0}
	[ $((m1 - m0)) -eq 0 ] || why+="meta_mismatch $((m1 - m0)) (records rejected); "
	case $CUR in */rping/*)
		[ $((p1 - p0)) -gt 0 ] && [ $((u1 - u0)) -gt 0 ] ||
			why+="FPDU records: parsed $((p1 - p0)), meta_used $((u1 - u0)) (want > 0); " ;;
	esac
	XSKWHY=$why XSKNOTE="steered $((${s1:-0} - ${s0:-0})) frames, parsed $((p1 - p0)), meta_used $((u1 - u0)), meta_mismatch $((m1 - m0))"
}

run_cell() { # CELL
	local c=$1 role what s0 m0 line
	CUR=$c
	CELLDIR=$RUNDIR/$(printf '%s' "$c" | tr -c 'A-Za-z0-9_.+-' '_')
	mkdir -p "$CELLDIR"
	XENV=("${XENV0[@]}")
	XSKCELL=0 CAP="" CAPPID=""
	case $c in ack/*)
		c=${c#ack/}
		XENV+=(XIW_TX_COMPLETION=ack)
		;;
	esac
	case $c in xsk/*)
		XSKCELL=1
		c=${c#xsk/}
		XENV+=(XIW_TRANSPORT=xsk)
		s0=$(xsk_steered)
		m0=$(xsk_meta)
		;;
	esac
	role=${c#*/}; role=${role%%/*}
	what=${c##*/}
	case $c in
	rping/*) cell_rping "$role" ;;
	perf/*) cell_perf "$role" "${what%-s*}" "${what##*-s}" ;;
	rdmacm/*) cell_rdmacm "$role" ;;
	rsock/*) cell_rsock "$role" "${what%-*}" "${what##*-}" ;;
	hostile/*-crc) cell_hostile "${what%-crc}" 1 ;;
	hostile/*) cell_hostile "$what" 0 ;;
	term/*) cell_term "${what#remerr-}" ;;
	close/*) cell_close "${what#quick-}" ;;
	esac
	[ "$XSKCELL" = 1 ] || return 0
	line=$(cat "$CELLDIR/result" 2>/dev/null)
	case $line in PASS*) ;; *) return 0 ;; esac
	xsk_judge "$s0" "$m0"
	if [ -n "$XSKWHY" ]; then
		# the cell ran, but not over AF_XDP + utcp: it fails
		NPASS=$((NPASS - 1)) NFAIL=$((NFAIL + 1))
		FAILED+=("$CUR")
		line=$(printf 'FAIL  %-46s %s' "$CUR" "$XSKWHY")
		echo "$line"
		echo "$line" >"$CELLDIR/result"
	else
		echo "      $CUR: over AF_XDP: $XSKNOTE"
	fi
}

boot() { # SET
	GUEST_BUGS=0
	local set=$1 args=(--restart --siwcmd none --accel "$SIW_ACCEL" --timeout 300) app
	local nic=${SIW_NIC_OPTS:-}
	app="${APPEND[$set]}${SIW_DEBUG:+ siw.dyndbg=+p}"
	[ -n "$app" ] && args+=(--append "$app")
	[ "$set" = xsk ] && nic=$XSK_NIC_OPTS
	# 9>&-: the daemonized qemu must not inherit (and keep) the run lock
	SIW_NIC_OPTS=$nic "$PEER/run.sh" "${args[@]}" >"$RUNDIR/boot-$set.log" 2>&1 9>&- || return 1
	if [ "$set" = xsk ]; then
		# xiw_xdp on the tap (it stays across guest reboots: the tap
		# does; replace whatever an earlier boot left)
		ns "$XIWCTL" detach "$SIW_TAP" >>"$RUNDIR/boot-$set.log" 2>&1
		ns "$XIWCTL" attach "$SIW_TAP" >>"$RUNDIR/boot-$set.log" 2>&1 || {
			echo "xiwctl attach $SIW_TAP failed" >>"$RUNDIR/boot-$set.log"
			return 1
		}
	else
		# a set after xsk: kernel TCP on the tap, no XDP program
		ns "$XIWCTL" detach "$SIW_TAP" >/dev/null 2>&1
	fi
	return 0
}

# ------------------------------------------------------------ main
echo "siw interop: peer $PEER, cache $SIW_CACHE, accel $SIW_ACCEL, netns $SIW_NS ($SIW_TAP $HIP <-> guest $GIP)"
echo "xiwarp: $BUILD ${XENV[*]:+(extra env: ${XENV[*]})}; runs $RUNS; logs $LOGS"
T_ALL=$SECONDS
declare -a RUN_SUMMARY=()
for run in $(seq "$RUNS"); do
	RUNDIR=$LOGS/run$run
	mkdir -p "$RUNDIR"
	p0=$NPASS f0=$NFAIL t0=$SECONDS
	echo
	echo "=== run $run of $RUNS"
	for set in "${SETS[@]}"; do
		mapfile -t cells < <(cells_of "$set")
		todo=()
		for c in "${cells[@]}"; do wanted "$c" && todo+=("$c"); done
		[ ${#todo[@]} -gt 0 ] || continue
		tb=$SECONDS
		if ! boot "$set"; then
			echo "-- guest $set (${APPEND[$set]:-siw defaults}): BOOT FAILED"
			tail -n 5 "$RUNDIR/boot-$set.log" | sed 's/^/    | /'
			for c in "${todo[@]}"; do CUR=$c CELLDIR=$RUNDIR; result "$c" 1 "guest did not boot"; done
			continue
		fi
		echo "-- guest $set (${APPEND[$set]:-siw defaults}): booted in $((SECONDS - tb))s ($(cat "$SIW_RUN/accel" 2>/dev/null))"
		nbad=0
		for c in "${todo[@]}"; do
			if [ "$nbad" -ge "$MAX_BAD" ]; then
				CUR=$c CELLDIR=$RUNDIR
				result "$c" 1 "(not run: the $nbad cells before it in this guest failed)"
				continue
			fi
			f0c=$NFAIL
			run_cell "$c"
			if [ "$NFAIL" != "$f0c" ]; then nbad=$((nbad + 1)); else nbad=0; fi
			# a failed cell may leave siw with stuck QPs or
			# processes: the next cell gets a fresh guest
			if [ "$NFAIL" != "$f0c" ] && [ "$c" != "${todo[-1]}" ]; then
				gsh 'dmesg' >"$CELLDIR/dmesg.txt" 2>&1
				boot "$set" || echo "   (re-boot of guest $set after the failure did not work)"
			fi
		done
		gsh 'dmesg' >"$RUNDIR/dmesg-$set.txt" 2>&1
	done
	"$PEER/stop.sh" >/dev/null 2>&1
	RUN_SUMMARY+=("run $run: $((NPASS - p0)) passed, $((NFAIL - f0)) failed, $((SECONDS - t0))s")
	echo "run $run: $((NPASS - p0)) passed, $((NFAIL - f0)) failed in $((SECONDS - t0))s"
done

echo
echo "=== siw interop summary"
printf '%s\n' "${RUN_SUMMARY[@]}"
if [ ${#RATES[@]} -gt 0 ]; then
	echo "64 KB bandwidth cells (informational; the guest runs under $SIW_ACCEL):"
	printf '  %s\n' "${RATES[@]}"
fi
[ ${#FAILED[@]} -eq 0 ] || { echo "failed cells:"; printf '  %s\n' "${FAILED[@]}" | sort | uniq -c; }
echo "total: $NPASS passed, $NFAIL failed in $((SECONDS - T_ALL))s"
[ "$NFAIL" = 0 ]
