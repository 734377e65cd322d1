#!/usr/bin/env bash
# utcp (the xsk transport's own TCP) against Linux kernel TCP, through a
# forwarder in a middle namespace that loses, reorders and duplicates
# frames (tests/netns/xiw_delayfwd; this kernel has no sch_netem):
#
#   A (kernel TCP: XIW_TRANSPORT=ksock) -- M (xiw_delayfwd) -- B (xsk: utcp
#   over AF_XDP, xiw_xdp attached to B's veth)
#
#   loss1  1 % loss, 1 % reordering, 1 % duplication; B connects to A;
#          XK_STREAM_BYTES (default 1 GiB; 256 MiB in the sanitizer tier)
#          each way at once, every byte verified (tests/netns/xiw_stream),
#          both ends exit 0
#   loss5  the same at 5 %; A connects to B (passive open on utcp)
#          (loss1, loss5: `xiwctl stat` on B must show utcp's
#          retransmitted segments and SACKed octets grow)
#   zc     no impairment, 256 MiB each way, B sends zero-copy from
#          xiw_alloc() buffers in the umem arena (xiw_stream -z): the
#          transport must have referenced them and framed them in place
#   rst    xiw_victim streams WRITEs from B (xsk) to a ksock server in A
#          that is killed: the kernel resets; B's QP must see the reset,
#          go to ERROR, flush its WRs and report DISCONNECTED
#   vanish the same, but the forwarder turns into a black hole: utcp's
#          RTO gives up (XIW_XSK_RETRIES=4), QP ERROR, WRs flush
#   records RDMA with 2 % loss, reordering and duplication: rping -V -S
#          16384 (data verified) and ib_read_bw -R, B (xsk) the client, A
#          (ksock, kernel TCP: segments do not follow FPDUs) the server;
#          B's XDP program must keep writing FPDU records (parsed) that the
#          engine uses (meta_used) and never rejects (meta_mismatch 0):
#          the boundary survives holes and is re-synced (resync) when a
#          retransmission moves it into data already held
#
# Exit 0 all passed, 1 some failed, 77 not root / no namespaces.
# timeout: 1500
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
STREAM=$BUILD/tests/netns/xiw_stream
VICTIM=$BUILD/tests/netns/xiw_victim
FWD=$BUILD/tests/netns/xiw_delayfwd
XIWCTL=$BUILD/bin/xiwctl
BYTES=${XK_STREAM_BYTES:-1g}
TMUL=1
# under ASan/UBSan (the sanitizer tier) every byte check costs more: 256 MiB
[ "${XIW_SAN:-0}" = 1 ] && TMUL=3 && BYTES=${XK_STREAM_BYTES:-256m}

# shellcheck source=scripts/netns.sh
. "$ROOT/scripts/netns.sh"

for b in "$STREAM" "$VICTIM" "$FWD" "$XIWCTL"; do
	[ -x "$b" ] || { echo "FAIL: $b missing: run 'make'"; exit 1; }
done
command -v ethtool >/dev/null || { echo "SKIP: ethtool not installed (scripts/deps.sh)"; exit 77; }

npass=0
nfail=0
failed=()
LOGDIR=$(mktemp -d /tmp/xk-stream.XXXXXX)
if [ "${XIW_KEEP_LOGS:-0}" = 1 ]; then
	XIW_CLEANUP_HOOKS+=("echo \"logs kept in $LOGDIR\"")
else
	XIW_CLEANUP_HOOKS+=("rm -rf '$LOGDIR'")
fi

result() { # NAME RC WHY LOGS...
	local name=$1 rc=$2 why=$3 f
	shift 3
	if [ "$rc" = 0 ]; then
		npass=$((npass + 1))
		printf 'PASS  %-10s %s\n' "$name" "$why"
	else
		nfail=$((nfail + 1))
		failed+=("$name")
		printf 'FAIL  %-10s %s\n' "$name" "$why"
		for f in "$@"; do
			[ -s "$f" ] || continue
			echo "    --- ${f##*/}"
			tail -n 30 "$f" | sed 's/^/    | /'
		done
	fi
}

# A <-> M <-> B: re-cable the pair of xiw_netns_up through namespace M.
M=""
FPID=""
cable_up() {
	M="$XIW_NS_A-m"
	ip netns add "$M" || return 1
	XIW_CLEANUP_HOOKS+=("ip netns del '$M' 2>/dev/null")
	xiw_in A ip link del "$XIW_IF_A" &&
		ip link add name "$XIW_IF_A" netns "$XIW_NS_A" type veth peer name ma netns "$M" &&
		ip link add name "$XIW_IF_B" netns "$XIW_NS_B" type veth peer name mb netns "$M" &&
		ip -n "$XIW_NS_A" addr add "$XIW_IP_A/24" dev "$XIW_IF_A" &&
		ip -n "$XIW_NS_B" addr add "$XIW_IP_B/24" dev "$XIW_IF_B" &&
		ip -n "$M" link set dev ma up && ip -n "$M" link set dev mb up &&
		ip -n "$XIW_NS_A" link set "$XIW_IF_A" up &&
		ip -n "$XIW_NS_B" link set "$XIW_IF_B" up || return 1
	# kernel TCP frames must carry full checksums (AF_XDP sees the wire)
	xiw_in A ethtool -K "$XIW_IF_A" tx off >/dev/null &&
		xiw_in B ethtool -K "$XIW_IF_B" tx off >/dev/null || return 1
	xiw_in B "$XIWCTL" attach "$XIW_IF_B" --mode native >/dev/null || return 1
}

# fwd_start NAME ARGS...: (re)start the forwarder with these impairments.
fwd_start() {
	local name=$1
	shift
	fwd_stop
	FLOG="$LOGDIR/$name.fwd.log"
	ip netns exec "$M" "$FWD" ma mb 0 "$@" >"$FLOG" 2>&1 &
	FPID=$!
	XIW_BG_PIDS+=("$FPID")
	sleep 0.2
}

fwd_stop() {
	if [ -n "$FPID" ]; then
		kill -TERM "$FPID" 2>/dev/null
		xiw_wait_pid "$FPID" 3 >/dev/null 2>&1
		FPID=""
	fi
}

# utcp_cnt NAME: retransmitted|sacked_bytes from `xiwctl stat` on B
utcp_cnt() {
	xiw_in B "$XIWCTL" stat "$XIW_IF_B" 2>/dev/null |
		sed -n "s/.*all counters:.* $1=\([0-9]*\).*/\1/p" | head -n 1
}

# stream_case NAME XSK_SIDE(A|B listens?) FWD_ARGS...
#   $1 name, $2 "b-connects" or "a-connects", rest: forwarder options
stream_case() {
	local name=$1 how=$2 port=$((9600 + RANDOM % 300)) srv cli sl cl s_rc=0 c_rc=0 t
	local r0 r1 k0 k1
	shift 2
	fwd_start "$name" "$@"
	r0=$(utcp_cnt retransmitted) k0=$(utcp_cnt sacked_bytes)
	t=$((600 * TMUL))
	sl=$LOGDIR/$name.server.log
	cl=$LOGDIR/$name.client.log
	if [ "$how" = b-connects ]; then
		xiw_bg A env XIW_TRANSPORT=ksock "$STREAM" -l "$port" -n "$BYTES" -t "$t" -q >"$sl" 2>&1
		srv=$XIW_LAST_PID
		xiw_wait_listen A "$port" 10 "$srv" || { result "$name" 1 "server did not listen" "$sl"; return; }
		xiw_in B timeout -k 5 $((t + 10)) env XIW_TRANSPORT=xsk XIW_LOG=info \
			"$STREAM" -c "$XIW_IP_A" -p "$port" -n "$BYTES" -t "$t" -q >"$cl" 2>&1 || c_rc=$?
	else
		xiw_bg B env XIW_TRANSPORT=xsk XIW_LOG=info "$STREAM" -l "$port" -n "$BYTES" -t "$t" -q >"$sl" 2>&1
		srv=$XIW_LAST_PID
		xiw_wait_listen B "$port" 10 "$srv" || { result "$name" 1 "server did not listen" "$sl"; return; }
		xiw_in A timeout -k 5 $((t + 10)) env XIW_TRANSPORT=ksock \
			"$STREAM" -c "$XIW_IP_B" -p "$port" -n "$BYTES" -t "$t" -q >"$cl" 2>&1 || c_rc=$?
	fi
	xiw_wait_pid "$srv" 30 || s_rc=$?
	fwd_stop
	r1=$(utcp_cnt retransmitted) k1=$(utcp_cnt sacked_bytes)
	local fw cnt
	fw=$(grep -o 'forwarded.*' "$FLOG" | tail -n 1)
	cnt="xiwctl stat: utcp retransmitted ${r0:-?} -> ${r1:-?} segments, SACKed ${k0:-?} -> ${k1:-?} octets"
	if [ $s_rc = 0 ] && [ $c_rc = 0 ] && grep -q verified "$sl" && grep -q verified "$cl" &&
		[ -n "$r0" ] && [ -n "$r1" ] && [ "$r1" -gt "$r0" ] &&
		[ -n "$k0" ] && [ -n "$k1" ] && [ "$k1" -gt "$k0" ]; then
		result "$name" 0 "$BYTES each way verified; $(grep -o 'MB/s [0-9.]*' "$cl") (both ways, client); fwd: $fw; $cnt" "$sl" "$cl"
	else
		result "$name" 1 "server exit $s_rc, client exit $c_rc; fwd: $fw; $cnt (must grow)" "$sl" "$cl" "$FLOG"
	fi
}

# zc_case: B (xsk) connects and sends zero-copy from umem buffers.
zc_case() {
	local name=zc port=$((9600 + RANDOM % 300)) srv sl cl s_rc=0 c_rc=0 refs inplace
	fwd_start "$name"
	sl=$LOGDIR/$name.server.log
	cl=$LOGDIR/$name.client.log
	xiw_bg A env XIW_TRANSPORT=ksock "$STREAM" -l "$port" -n 256m -t $((120 * TMUL)) -q >"$sl" 2>&1
	srv=$XIW_LAST_PID
	xiw_wait_listen A "$port" 10 "$srv" || { result "$name" 1 "server did not listen" "$sl"; return; }
	xiw_in B timeout -k 5 $((130 * TMUL)) env XIW_TRANSPORT=xsk XIW_LOG=debug \
		"$STREAM" -c "$XIW_IP_A" -p "$port" -n 256m -z -t $((120 * TMUL)) -q >"$cl" 2>&1 || c_rc=$?
	xiw_wait_pid "$srv" 30 || s_rc=$?
	fwd_stop
	refs=$(sed -n 's/.*zero-copy sends \([0-9]*\) bytes.*/\1/p' "$cl" | head -n 1)
	inplace=$(sed -n 's/.*payload sent in place from the umem \([0-9]*\) bytes.*/\1/p' "$cl" | head -n 1)
	if [ $s_rc = 0 ] && [ $c_rc = 0 ] && grep -q verified "$sl" &&
		[ "${refs:-0}" -ge 268435456 ] && [ "${inplace:-0}" -ge 268435456 ]; then
		result "$name" 0 "256m each way verified; referenced ${refs} B, framed in place ${inplace} B" "$sl" "$cl"
	else
		result "$name" 1 "server exit $s_rc, client exit $c_rc, referenced ${refs:-?} B, in place ${inplace:-?} B" "$sl" "$cl"
	fi
}

# wait_streaming LOG PID: the victim client printed that WRITEs flow
wait_streaming() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q 'streaming' "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# fault_case NAME rst|vanish: B (xsk) streams WRITEs to A (ksock).
fault_case() {
	local name=$1 kind=$2 port=$((9900 + RANDOM % 90)) sl cl spid cpid rc=0 want
	fwd_start "$name"
	sl=$LOGDIR/$name.server.log
	cl=$LOGDIR/$name.client.log
	xiw_bg A env XIW_TRANSPORT=ksock "$VICTIM" -s -p "$port" -t 60 -n 1M -e none >"$sl" 2>&1
	spid=$XIW_LAST_PID
	xiw_wait_listen A "$port" 10 "$spid" || { result "$name" 1 "server did not listen" "$sl"; return; }
	xiw_bg B env XIW_TRANSPORT=xsk XIW_XSK_RETRIES=4 XIW_LOG=info "$VICTIM" -c -a "$XIW_IP_A" \
		-p "$port" -t 90 --op stream -m 256K -d 512 >"$cl" 2>&1
	cpid=$XIW_LAST_PID
	if ! wait_streaming "$cl" "$cpid"; then
		xiw_stop "$cpid" 1 >/dev/null 2>&1
		xiw_stop "$spid" 1 >/dev/null 2>&1
		result "$name" 1 "client never streamed" "$cl" "$sl"
		return
	fi
	sleep 0.5
	if [ "$kind" = rst ]; then
		# stopped first, so bytes wait unread in its socket: a close
		# with unread data is a RST in Linux (RFC 2525 §2.17), not a FIN
		kill -STOP "$spid"
		sleep 0.3
		kill -KILL "$spid"
		want='reset by peer'
	else
		kill -USR1 "$FPID"	# black hole: nothing reaches A or B
		want='timed out'
	fi
	xiw_wait_pid "$cpid" $((60 * TMUL)) || rc=$?
	[ $rc = 124 ] && echo "client still running $((60 * TMUL)) s after the fault" >>"$cl"
	xiw_stop "$spid" 1 >/dev/null 2>&1
	fwd_stop
	if [ $rc = 0 ] && grep -q "xsk: .*$want" "$cl"; then
		result "$name" 0 "QP flushed and disconnected; $(grep -o "xsk: .*$want.*" "$cl" | head -n 1)" "$cl" "$sl"
	else
		result "$name" 1 "client exit $rc (want flushes, DISCONNECTED and a utcp '$want')" "$cl" "$sl" "$FLOG"
	fi
}

# records_case: FPDU records through loss (B, xsk, receives READ responses,
# rping's RDMA WRITEs and SENDs from A's kernel TCP).
records_case() {
	local name=records port=$((9500 + RANDOM % 90)) p0 u0 m0 r0 p1 u1 m1 r1 n rc=0 why
	local xiwrun=$BUILD/bin/xiwrun
	fwd_start "$name" -l 2 -r 2 -d 2 -s 22
	p0=$(utcp_cnt parsed) u0=$(utcp_cnt meta_used) m0=$(utcp_cnt meta_mismatch) r0=$(utcp_cnt resync)
	XIW_LOGDIR=$LOGDIR
	if xiw_pair rec-rping "$port" $((120 * TMUL)) \
		env XIW_TRANSPORT=ksock "$xiwrun" rping -s -a "$XIW_IP_A" -p "$port" -S 16384 -- \
		env XIW_TRANSPORT=xsk "$xiwrun" rping -c -a "$XIW_IP_A" -p "$port" -v -V -C 300 -S 16384; then
		n=$(grep -c '^ping data: ' "$XIW_PAIR_CLOG" || true)
		[ "$n" -eq 300 ] || { rc=1; why="rping: $n of 300 pings verified"; }
	else
		rc=1
		why="rping: $XIW_PAIR_WHY"
	fi
	port=$((port + 1))
	if [ $rc = 0 ] && ! xiw_pair rec-read "$port" $((120 * TMUL)) \
		env XIW_TRANSPORT=ksock "$xiwrun" ib_read_bw -R -F -p "$port" -n 2000 -- \
		env XIW_TRANSPORT=xsk "$xiwrun" ib_read_bw -R -F -p "$port" -n 2000 "$XIW_IP_A"; then
		rc=1
		why="ib_read_bw: $XIW_PAIR_WHY"
	fi
	fwd_stop
	p1=$(utcp_cnt parsed) u1=$(utcp_cnt meta_used) m1=$(utcp_cnt meta_mismatch) r1=$(utcp_cnt resync)
	local cnt="B: parsed $((p1 - p0)), meta_used $((u1 - u0)), meta_mismatch $((m1 - m0)), resync $((r1 - r0)), track_lost $(utcp_cnt track_lost) (total)"
	if [ $rc = 0 ] && [ $((p1 - p0)) -gt 0 ] && [ $((u1 - u0)) -gt 0 ] && [ $((m1 - m0)) -eq 0 ]; then
		result "$name" 0 "300 rpings -S 16384 verified, ib_read_bw done; fwd: $(grep -o 'forwarded.*' "$FLOG" | tail -n 1); $cnt"
	else
		result "$name" 1 "${why:-records}; $cnt" "$XIW_PAIR_CLOG" "$XIW_PAIR_CERR" "$XIW_PAIR_SERR" "$FLOG"
	fi
}

main() {
	local prefix="xk-st-$$" rc=0
	xiw_netns_trap "$prefix"
	xiw_netns_up "$prefix" || rc=$?
	if [ $rc -ne 0 ]; then
		[ $rc = 77 ] && echo "SKIP: no network namespaces here"
		exit $rc
	fi
	cable_up || { echo "FAIL: could not cable A - M - B"; exit 1; }
	echo "A $XIW_NS_A $XIW_IP_A (kernel TCP) -- M $M (xiw_delayfwd) -- B $XIW_NS_B $XIW_IP_B (xsk/utcp)"
	stream_case loss1 b-connects -l 1 -r 1 -d 1 -s 11
	stream_case loss5 a-connects -l 5 -r 5 -d 5 -s 55
	zc_case
	fault_case rst rst
	fault_case vanish vanish
	records_case
	echo "subcases: $npass passed, $nfail failed"
	[ $nfail = 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
}

main
