#!/usr/bin/env bash
# timeout: 300
# tx_completion.sh — send-completion modes (XIW_TX_COMPLETION=copy|ack,
# seed 000) between two network namespaces, with tests/netns/xiw_txmode.
#
#  lat-*   a delay on both veth ends by DELAY ms (RTT = 2*DELAY), Reno
#          congestion control in both namespaces: a signalled 4 KB WRITE
#          (three segments, acknowledged by two ACKs) completes after
#          >= one RTT in ack mode (both seed 000 methods) but before
#          1.5 RTT (median of 7: a peer that delays its ACKs makes it
#          2 RTT; the bound was RTT + 2.5 ms, which a busy 2-vCPU machine
#          under ASan broke: median 48 ms at RTT 40 ms, 4 of 7 samples
#          at 1.2-2.1 RTT), every completion came from a sockops event (the client's debug log shows no completion by
#          the 5 ms backstop timer, which would make it RTT + 5; for
#          method 2 the client sleeps on a completion channel, so the
#          WC cannot come from its own poll either), and at
#          most 2 of the 7 samples reach 1.5 RTT (a peer that delays its
#          ACK would make every one 2 RTT). Not "none": when the peer
#          process does not run for ~40 ms (2 vCPUs under a full `make
#          test`, ASan), its kernel's delayed-ACK timer (40 ms minimum)
#          acknowledges the WR's last segment before the engine's
#          TCP_QUICKACK can: the completion is then correctly late (it
#          waits for the ACK), once measured 87 ms = RTT + 40 + 7. Well
#          before the RTT in copy mode; the server checks the bytes. Reno
#          because BBR, the default here, paces the WR's last segment a
#          few ms behind its first on this link: the completion cannot
#          precede the ACK of a byte not yet sent.
#  lat-cc  the same ack-mode WRITEs with the namespaces' default
#          congestion control (BBR here): at most 2 of 7 >= 1.5 RTT, none
#          completed by the backstop timer (the paced segments are
#          acknowledged one by one: an ACK per segment).
#  lat-zc  one 8 KB WRITE in copy mode goes zero-copy (XIW_ZCOPY_MIN=8192)
#          and still completes only after the ACK (>= RTT); with
#          XIW_ZCOPY_MIN=0 well before; the kernel reports the veth copy
#          (SO_EE_CODE_ZEROCOPY_COPIED) and the socket falls back.
#  lat-veth plain veth (no delay): ack mode adds less than 4 ms to copy
#          mode (medians; the link's RTT is tens of microseconds) and no
#          completion came from the 5 ms backstop timer: what it catches
#          is a completion waiting for a timer (backstop, delayed ACK)
#          instead of the ACK. Was "< 1 ms more": at load average 4 from
#          other work the median once was 1092 us (copy 77 us), the
#          engine's ACK thread waiting for a CPU.
#  stop-*  the server stops itself (SIGSTOP) right after accepting; the
#          client posts 64 KB WRITEs, one per ms, until its SQ is full.
#          When WCs stall: in ack mode no WR may be complete whose bytes
#          the peer has not acknowledged (completed <= what the stopped
#          server holds in its receive queue), in copy mode completions
#          also cover what sits unacknowledged in the local send queue
#          (completed >= peer Recv-Q + local Send-Q - slack). Every
#          post_send returned in < 1 ms (one the scheduler preempted, with
#          no voluntary context switch inside, is reported, not failed).
#          After SIGCONT every WR
#          completes and the server checks the bytes.
#  multi   64 QPs from one client for 3 s, once with every peer reading and
#          once with the peer of QP 63 stopped: the other 63 must keep
#          (most of) their throughput, none starved (at most one below a
#          quarter of their mean, none below a sixteenth), data intact.
#  cq-*    an 8-entry CQ and 256+ signalled WRITEs posted at once, not
#          polled for 300 ms: posting stops with ENOMEM when the SQ is
#          full, WRs without a CQE slot wait (seed 002 credits), no WC is
#          dropped, all arrive when polled.
#
# The delay is tc netem when the kernel has sch_netem, else the user-space
# delay line tests/netns/xiw_delayfwd in a third namespace.
# Environment: BUILD (default build), TXC_DELAY_MS (20), TXC_FILTER=REGEX,
#   TXC_ENV="VAR=x ..." more env for the stop clients, TXC_KEEP=1 keep logs.
# Exit: 0 pass, 1 fail, 77 skip (not root or no netns).
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/tests/netns/xiw_txmode
DELAY=${TXC_DELAY_MS:-20}
FILTER=${TXC_FILTER:-}

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: tx_completion.sh needs root for network namespaces"
	exit 77
fi
if [ ! -x "$BIN" ]; then
	echo "FAIL: $BIN missing: make $BUILD/tests/netns/xiw_txmode"
	exit 1
fi
# shellcheck source=scripts/netns.sh
. "$ROOT/scripts/netns.sh"
prefix=$(xiw_netns_prefix txc)
xiw_netns_trap "$prefix"
xiw_netns_up "$prefix" || exit $?
LOGDIR=$(mktemp -d /tmp/xiw-txc.XXXXXX)
[ -n "${TXC_KEEP:-}" ] || XIW_CLEANUP_HOOKS+=("rm -rf '$LOGDIR'")

port=7710
nfail=0
want() { [ -z "$FILTER" ] || grep -qE -- "$FILTER" <<<"$1"; }
pass() { echo "PASS: $*"; }
failc() { echo "FAIL: $*"; nfail=$((nfail + 1)); }
showlogs() { for f in "$@"; do echo "--- $f"; tail -n 20 "$f"; done; }

# delay_on / delay_off: DELAY ms each way (scripts/netns.sh).
delay_on() { xiw_delay_on "$DELAY" "$ROOT/$BUILD/tests/netns/xiw_delayfwd"; }
delay_off() { xiw_delay_off; }

# run_lat NAME ENV...: one server + one lat client; LAT = the median (us),
# LATMAX = the largest sample (us), LATSLOW = samples >= 1.5 RTT,
# BACKSTOP = backstop scans that completed WRs whose ACK the sockops
# program missed (needs XIW_LOG=debug; the scan's summary line only: a
# completion whose event fired while the scan ran is logged per QP as
# "not a miss", and a miss is logged per QP too)
run_lat() {
	local name=$1 srv cli spid rc lat
	shift
	port=$((port + 1))
	srv=$LOGDIR/$name.srv
	cli=$LOGDIR/$name.cli
	xiw_bg A env "$@" "$BIN" -s -p $port -m 4 >"$srv" 2>&1
	spid=$XIW_LAST_PID
	xiw_wait_listen A $port 10 "$spid" || { failc "$name: no listener"; return 1; }
	# shellcheck disable=SC2086
	xiw_in B env "$@" timeout 60 "$BIN" -c "$XIW_IP_A" -p $port -t lat -m 4 \
		${LAT_ARGS:--l 4096 -k 7} >"$cli" 2>&1
	rc=$?
	xiw_wait_pid "$spid" 20 || rc=1
	lat=$(sed -n 's/^lat_us=//p' "$cli")
	LAT=$lat
	LATMAX=$(sed -n 's/^write [0-9]* B: \([0-9]*\) us$/\1/p' "$cli" | sort -n | tail -n 1)
	LATSLOW=$(sed -n 's/^write [0-9]* B: \([0-9]*\) us$/\1/p' "$cli" |
		awk -v lim=$((3 * DELAY * 1000)) '$1 >= lim { n++ } END { print n + 0 }')
	BACKSTOP=$(grep -c "txack: the [0-9]* ms backstop completed WRs" "$cli")
	if [ $rc -ne 0 ] || [ -z "$lat" ] || ! grep -q "data ok" "$srv"; then
		failc "$name: client/server failed"
		showlogs "$srv" "$cli"
		return 1
	fi
	cat "$cli"
}

# set_cc ALGO: TCP congestion control of new sockets in both namespaces
set_cc() {
	xiw_in A sysctl -qw net.ipv4.tcp_congestion_control="$1" &&
		xiw_in B sysctl -qw net.ipv4.tcp_congestion_control="$1"
}

# lat_ack_check NAME MEDIAN MAX BACKSTOP RTT_US SLOW: the ack-mode bounds
# of lat-* (SLOW: samples >= 1.5 RTT)
lat_ack_check() {
	local name=$1 med=$2 max=$3 bs=$4 rtt_us=$5 slow=$6
	if [ "$med" -ge "$rtt_us" ] && [ "$med" -lt $((rtt_us * 3 / 2)) ]; then
		pass "$name: median ${med} us >= RTT ${rtt_us} us and < 1.5 RTT"
	else
		failc "$name: median ${med} us, want >= RTT ${rtt_us} us and < 1.5 RTT"
	fi
	if [ "$slow" -le 2 ]; then
		pass "$name: $slow of 7 samples >= 1.5 RTT (at most 2; slowest ${max} us)"
	else
		failc "$name: $slow of 7 samples >= 1.5 RTT $((rtt_us * 3 / 2)) us (slowest ${max} us): the peer delays its ACKs"
	fi
	if [ "$bs" -eq 0 ]; then
		pass "$name: every completion came from a sockops ACK event"
	else
		failc "$name: $bs backstop-timer completions (ACKs the sockops program missed)"
	fi
}

lat_cases() {
	local rtt_us=$((2 * DELAY * 1000)) c a1 a2 a1m a2m a1b a2b a1s a2s ccm ccb ccs z nz zlog cc0 vc va
	if ! delay_on; then
		failc "lat: cannot delay the link (neither tc netem nor xiw_delayfwd)"
		delay_off
		return
	fi
	echo "link delayed ${DELAY} ms each way with $XIW_DELAY_HOW"
	cc0=$(xiw_in A sysctl -n net.ipv4.tcp_congestion_control)
	run_lat lat-cc XIW_TX_COMPLETION=ack XIW_LOG=debug || { delay_off; return; }
	ccm=$LATMAX ccb=$BACKSTOP ccs=$LATSLOW
	if ! set_cc reno; then
		failc "lat: cannot select Reno in the namespaces"
		delay_off
		return
	fi
	run_lat lat-copy XIW_TX_COMPLETION=copy || { delay_off; return; }
	c=$LAT
	# method 2 with a client that sleeps on its completion channel: its
	# WCs can only come from the engine's ACK scan (a polling client
	# completes ACKed WRs itself), so the sockops event must come
	LAT_ARGS="-l 4096 -k 7 -E"
	run_lat lat-ack2 XIW_TX_COMPLETION=ack XIW_ACK_METHOD=2 XIW_LOG=debug ||
		{ delay_off; return; }
	LAT_ARGS=""
	a2=$LAT a2m=$LATMAX a2b=$BACKSTOP a2s=$LATSLOW
	run_lat lat-ack1 XIW_TX_COMPLETION=ack XIW_ACK_METHOD=1 XIW_LOG=debug ||
		{ delay_off; return; }
	a1=$LAT a1m=$LATMAX a1b=$BACKSTOP a1s=$LATSLOW
	# one 8 KB WRITE (fits the initial cwnd and send buffer, so copying
	# it takes no round trip) that goes zero-copy, in copy mode
	LAT_ARGS="-l 8192 -k 1"
	run_lat lat-zc XIW_TX_COMPLETION=copy XIW_ZCOPY_MIN=8192 XIW_LOG=info ||
		{ delay_off; return; }
	z=$LAT
	zlog=$LOGDIR/lat-zc.cli
	run_lat lat-nozc XIW_TX_COMPLETION=copy XIW_ZCOPY_MIN=0 || { delay_off; return; }
	nz=$LAT
	LAT_ARGS=""
	set_cc "$cc0"
	delay_off
	echo "8 KB WRITE in copy mode: zero-copy ${z} us, XIW_ZCOPY_MIN=0 ${nz} us"
	if [ "$z" -ge "$rtt_us" ] && [ "$z" -lt $((3 * rtt_us)) ] &&
		[ "$nz" -lt $((rtt_us / 2)) ]; then
		pass "lat-zc: a zero-copy WRITE completes only after the ACK (>= RTT), a copied one before"
	else
		failc "lat-zc: zero-copy ${z} us (want >= ${rtt_us}), copied ${nz} us (want < RTT/2)"
	fi
	if grep -q "kernel copies zero-copy sends" "$zlog"; then
		pass "lat-zc: SO_EE_CODE_ZEROCOPY_COPIED seen on veth: back to plain sends"
	else
		failc "lat-zc: no zero-copy fallback logged"; showlogs "$zlog"
	fi
	echo "4 KB WRITE completion, RTT ${rtt_us} us, Reno: copy ${c} us, ack method 2 ${a2} us (slowest ${a2m}), method 1 ${a1} us (slowest ${a1m}); ack with $cc0: slowest ${ccm} us"
	if [ "$c" -lt $((rtt_us / 4)) ]; then pass "lat-copy: ${c} us < RTT/4"
	else failc "lat-copy: ${c} us, not well below the RTT ${rtt_us} us"; fi
	lat_ack_check lat-ack2 "$a2" "$a2m" "$a2b" "$rtt_us" "$a2s"
	lat_ack_check lat-ack1 "$a1" "$a1m" "$a1b" "$rtt_us" "$a1s"
	if [ "$ccs" -le 2 ] && [ "$ccb" -eq 0 ]; then
		pass "lat-cc: with $cc0 $ccs of 7 ack-mode WRITEs >= 1.5 RTT (slowest ${ccm} us), no backstop completion"
	else
		failc "lat-cc: with $cc0 $ccs of 7 ack-mode WRITEs >= 1.5 RTT (want <= 2; slowest ${ccm} us), $ccb backstop completions (want 0)"
	fi
	# plain veth: the RTT is tens of microseconds
	run_lat lat-veth-copy XIW_TX_COMPLETION=copy || return
	vc=$LAT
	run_lat lat-veth-ack XIW_TX_COMPLETION=ack XIW_LOG=debug || return
	va=$LAT
	vb=$BACKSTOP
	if [ "$va" -lt $((vc + 4000)) ] && [ "$vb" -eq 0 ]; then
		pass "lat-veth: plain veth, ack ${va} us vs copy ${vc} us: < 4 ms more, no backstop completion"
	else
		failc "lat-veth: plain veth, ack ${va} us vs copy ${vc} us (want < 4 ms more), $vb backstop completions (want 0)"
	fi
}

# queue sizes of the connection on PORT: "sendq" on B's side, "recvq" on A's
q_of() { # SIDE PORT COLUMN(2=Recv-Q 3=Send-Q)
	xiw_in "$1" ss -Htn state established "( sport = :$2 or dport = :$2 )" |
		awk -v c="$3" '{ s += $(c - 1) } END { print s + 0 }'
}

stop_case() { # MODE
	local mode=$1 name=stop-$1 srv cli spid cpid done_b recvq sendq i rc=0 max slow sblk
	port=$((port + 1))
	srv=$LOGDIR/$name.srv
	cli=$LOGDIR/$name.cli
	xiw_bg A env XIW_TX_COMPLETION="$mode" "$BIN" -s -S -p $port -m 64 >"$srv" 2>&1
	spid=$XIW_LAST_PID
	xiw_wait_listen A $port 10 "$spid" || { failc "$name: no listener"; return; }
	# XIW_ZCOPY_MIN=0: zero-copy WRs are ACK-completed in copy mode too
	xiw_bg B env XIW_TX_COMPLETION="$mode" XIW_ZCOPY_MIN=0 ${TXC_ENV:-} "$BIN" -c "$XIW_IP_A" -p $port -t stop \
		-l 65536 -q 1024 -m 64 >"$cli" 2>&1
	cpid=$XIW_LAST_PID
	for ((i = 0; i < 300; i++)); do
		grep -q '^stall' "$cli" && break
		kill -0 "$cpid" 2>/dev/null || break
		sleep 0.1
	done
	done_b=$(sed -n 's/^stall done_bytes=\([0-9]*\).*/\1/p' "$cli")
	recvq=$(q_of A $port 2)
	sendq=$(q_of B $port 3)
	max=$(sed -n 's/^post_max_us=\([0-9]*\).*/\1/p' "$cli")
	slow=$(sed -n 's/.*posts_over_1ms=\([0-9]*\).*/\1/p' "$cli")
	sblk=$(sed -n 's/.*of_them_blocked=\([0-9]*\).*/\1/p' "$cli")
	kill -CONT "$spid" 2>/dev/null
	xiw_wait_pid "$cpid" 90 || rc=1
	xiw_wait_pid "$spid" 30 || rc=1
	if [ $rc -ne 0 ] || [ -z "$done_b" ] || ! grep -q "data ok" "$srv" ||
		! grep -q "client: done" "$cli"; then
		failc "$name: client/server failed (rc $rc)"
		showlogs "$srv" "$cli"
		return
	fi
	echo "$name: at the stall: completed $done_b B, peer Recv-Q $recvq B, local Send-Q $sendq B; post_send max ${max} us (${slow} >= 1 ms, ${sblk} of them blocked)"
	local slack=$((3 * 65536))
	if [ "$mode" = ack ]; then
		if [ "$done_b" -le "$recvq" ] && [ "$sendq" -gt $slack ]; then
			pass "$name: no WC beyond what the peer acknowledged"
		else
			failc "$name: completed $done_b B > peer holds $recvq B (Send-Q $sendq)"
		fi
	else
		if [ "$done_b" -ge $((recvq + sendq - slack)) ] && [ "$sendq" -gt $slack ]; then
			pass "$name: WCs also cover the unacknowledged local send queue"
		else
			failc "$name: completed $done_b B < Recv-Q $recvq + Send-Q $sendq B"
		fi
	fi
	# A post that took >= 1 ms only because the scheduler preempted the
	# thread (2 shared vCPUs, no voluntary context switch in it) did not
	# wait for anything: reported, not failed.
	if [ "${sblk:-1}" -eq 0 ]; then
		pass "$name: no post_send blocked for >= 1 ms (max ${max} us; $slow preempted) with the peer's window closed"
	else
		failc "$name: $sblk post_send calls blocked >= 1 ms (max ${max} us)"
	fi
}

# multi_run NAME STALL: 64 QPs from one client; STALL=1: the last QP's
# server is stopped. MULTI = "total_of_the_first_63 min_of_them stalled_qp
# how_many_of_them_below_a_quarter_of_their_mean".
multi_run() {
	local name=$1 stall=$2 p1 p2 s1 s2 cli pid1 pid2 cpid rc=0
	port=$((port + 2))
	p1=$port
	p2=$((port + 1))
	s1=$LOGDIR/$name.srv1
	s2=$LOGDIR/$name.srv2
	cli=$LOGDIR/$name.cli
	if [ "$stall" = 1 ]; then
		xiw_bg A "$BIN" -s -p $p1 -n 63 -m 1 -q 64 >"$s1" 2>&1
		pid1=$XIW_LAST_PID
		xiw_bg A "$BIN" -s -S -p $p2 -n 1 -m 1 -q 64 >"$s2" 2>&1
		pid2=$XIW_LAST_PID
		xiw_wait_listen A $p2 10 "$pid2" || { failc "$name: no listener"; return 1; }
	else
		xiw_bg A "$BIN" -s -p $p1 -n 64 -m 1 -q 64 >"$s1" 2>&1
		pid1=$XIW_LAST_PID
	fi
	xiw_wait_listen A $p1 10 "$pid1" || { failc "$name: no listener"; return 1; }
	# shellcheck disable=SC2046
	xiw_bg B "$BIN" -c "$XIW_IP_A" -p $p1 $([ "$stall" = 1 ] && echo -P $p2) \
		-n 64 -t multi -d 3 -l 65536 -q 64 -m 1 >"$cli" 2>&1
	cpid=$XIW_LAST_PID
	xiw_wait_pid "$cpid" 60 || rc=1
	xiw_wait_pid "$pid1" 30 || rc=1
	[ "$stall" = 1 ] && xiw_stop "$pid2" 1 >/dev/null 2>&1
	if [ $rc -ne 0 ] || ! grep -q "client: done" "$cli" || ! grep -q "data ok" "$s1"; then
		failc "$name: client/server failed"
		showlogs "$s1" "$cli"
		return 1
	fi
	MULTI=$(awk '/^qp /{ if ($2 < 63) { v[n++] = $4; t += $4; if (min == "" || $4 < min) min = $4 } else last = $4 }
		END { for (i = 0; i < n; i++) low += v[i] < t / n / 4
		      printf "%.0f %.0f %.0f %d\n", t, min, last, low }' "$cli")
}

multi_case() {
	local base stalled bt bm st sm sl slow
	multi_run multi-base 0 || return
	base=$MULTI
	multi_run multi-stall 1 || return
	stalled=$MULTI
	read -r bt bm _ <<<"$base"
	read -r st sm sl slow <<<"$stalled"
	echo "64 QPs, 3 s: 63 QPs moved $((bt >> 20)) MiB (min/QP $((bm >> 20)) MiB) with all peers reading, $((st >> 20)) MiB (min/QP $((sm >> 20)) MiB, $slow below a quarter of the mean) with QP 63's peer stopped (it moved $((sl >> 10)) KiB)"
	# none starved: at most one QP below a quarter of the mean, none below
	# a sixteenth. One outlier is allowed: a CI run once had a single QP at
	# 0.18 of the mean (19 MiB) while 5 local runs had 0.4-0.9; a QP held
	# up behind the stalled one would sit near 0, and so would its peers.
	if [ "$st" -ge $((bt * 6 / 10)) ] && [ "$slow" -le 1 ] &&
		[ "$sm" -ge $((st / 63 / 16)) ]; then
		pass "multi: the other 63 QPs keep progressing while one peer is stalled"
	else
		failc "multi: stalled run $st B (min $sm, $slow QPs below a quarter of the mean) vs $bt B with all peers reading"
	fi
}

# cq: 8-entry CQ, 256+ signalled WRITEs posted at once, polled late
cq_case() {
	local srv=$LOGDIR/cq.srv cli=$LOGDIR/cq.cli spid rc=0 mode
	for mode in copy ack; do
		port=$((port + 1))
		xiw_bg A env XIW_TX_COMPLETION=$mode "$BIN" -s -p $port -m 8 >"$srv" 2>&1
		spid=$XIW_LAST_PID
		xiw_wait_listen A $port 10 "$spid" || { failc "cq-$mode: no listener"; return; }
		xiw_in B env XIW_TX_COMPLETION=$mode timeout 60 "$BIN" -c "$XIW_IP_A" -p $port \
			-t cq -C 8 -q 256 -l 4096 -m 8 >"$cli" 2>&1 || rc=1
		xiw_wait_pid "$spid" 20 || rc=1
		if [ $rc -eq 0 ] && grep -q "data ok" "$srv" && ! grep -q overflow "$cli"; then
			pass "cq-$mode: $(grep '^cq:' "$cli"); $(grep '^post ' "$cli")"
		else
			failc "cq-$mode: CQ overflow or lost WCs"
			showlogs "$srv" "$cli"
		fi
	done
}

want lat && lat_cases
want stop-copy && stop_case copy
want stop-ack && stop_case ack
want multi && multi_case
want cq && cq_case

[ $nfail -eq 0 ] && { echo "tx_completion: all passed"; exit 0; }
echo "tx_completion: $nfail failed"
exit 1
