#!/usr/bin/env bash
# Unmodified Debian RDMA programs over xiwarp between two namespaces on a
# veth pair, a few seconds each (issue 10):
#   qperf -cm1       rc_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat
#                    rc_rdma_write_bw rc_rdma_write_lat rc_rdma_write_poll_lat
#   fio (rdma)       verb=write / read: both ends' buffers are files
#                    (mem=mmapshared:FILE), compared byte for byte after
#                    the run; verb=send: the receiving fio verifies every
#                    block (verify=crc32c headers written by the sender)
#   libfabric        fi_info -p verbs; fi_pingpong -c (data checked) with
#                    -p verbs -e msg and -p "verbs;ofi_rxm" -e rdm (the two
#                    endpoint types: libfabric 1.17 offers no msg endpoint
#                    under "verbs;ofi_rxm", nor under "tcp;ofi_rxm")
#   uDAPL            dtest and dapltest -V through a dat.conf entry for
#                    xiwarp (DAT_OVERRIDE, libdaplofa; see README)
#   rdmacm-utils     rping -q (the application's own QP, found by number),
#                    ucmatose (4 connections), cmtime (20 connections)
# One PASS/FAIL line per subcase; exit 0 only if all passed, 77 if
# namespaces or the programs are unavailable.
# XIW_APPS_RUNS=N repeats the whole set N times (default 1).
# timeout: 420
set -uo pipefail
# shellcheck source=tests/netns/lib_clients.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_clients.sh"

RUNS=${XIW_APPS_RUNS:-1}
T=$((30 * XIW_TMUL))

xc_need_xiwarp || exit 1
xc_need_progs qperf fio fi_info fi_pingpong dtest dapltest rping ucmatose \
	cmtime cmp python3 || exit $?
xc_setup vbapps || exit $?

# run_bg_pair LABEL PORT CLIENT_TIMEOUT SERVER... -- CLIENT...: like
# xiw_pair, for servers that never exit by themselves (qperf, cmtime):
# the server is stopped after the client. 0 if the client exited 0.
run_bg_pair() {
	local name=$1 port=$2 t=$3 srv=() spid crc=0
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	XIW_PAIR_SLOG="$XIW_LOGDIR/$name.server.log"
	XIW_PAIR_SERR="$XIW_LOGDIR/$name.server.err"
	XIW_PAIR_CLOG="$XIW_LOGDIR/$name.client.log"
	XIW_PAIR_CERR="$XIW_LOGDIR/$name.client.err"
	XIW_PAIR_WHY=""
	xiw_bg A "${srv[@]}" >"$XIW_PAIR_SLOG" 2>"$XIW_PAIR_SERR" </dev/null
	spid=$XIW_LAST_PID
	if ! xiw_wait_listen A "$port" 10 "$spid" 2>>"$XIW_PAIR_SERR"; then
		xiw_stop "$spid" 1 || true
		XIW_PAIR_WHY="server did not listen on port $port"
		: >"$XIW_PAIR_CLOG"; : >"$XIW_PAIR_CERR"
		return 1
	fi
	xiw_in B timeout -k 5 "$t" "$@" >"$XIW_PAIR_CLOG" 2>"$XIW_PAIR_CERR" </dev/null || crc=$?
	xiw_stop "$spid" 2 >/dev/null 2>&1 || true
	case $crc in
	0) ;;
	124 | 137) XIW_PAIR_WHY="client timed out after ${t}s" ;;
	*) XIW_PAIR_WHY="client exit $crc" ;;
	esac
	[ $crc -eq 0 ]
}

# ----------------------------------------------------------------- qperf
# One client runs the seven tests (1 s each); each must print its value.
# The qperf server serves one test at a time (it waits for the previous
# test's child to exit before it accepts the next request); -to 20 lets
# the client wait 20 s instead of qperf's 5 for the server's RDMA CM port:
# once, with the machine at load average 11, rc_rdma_write_lat timed out
# there after rc_rdma_write_bw (not reproduced in 35 single tests at load
# 5-7, each 1.0-1.4 s).
apps_qperf() {
	local run=$1 port=$2 tests=(rc_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat
		rc_rdma_write_bw rc_rdma_write_lat rc_rdma_write_poll_lat)
	local t n rc=0 why vals=""
	xc_give_up "qperf" && return
	if run_bg_pair "qperf.$run" "$port" "$((60 * XIW_TMUL))" \
		"$XIWRUN" qperf -lp "$port" -- \
		"$XIWRUN" qperf "$XIW_IP_A" -lp "$port" -cm1 -t 1 -to 20 "${tests[@]}"; then
		for t in "${tests[@]}"; do
			# "rc_bw:" then "    bw  =  2.5 GB/sec" (or latency = ... us)
			n=$(awk -v t="$t:" '$1 == t { getline; if ($2 == "=" && $3 + 0 > 0) print $3 " " $4 }' \
				"$XIW_PAIR_CLOG")
			if [ -z "$n" ]; then
				rc=1
				why="no result for $t"
				break
			fi
			vals+="$t $n; "
		done
		[ $rc = 0 ] && why="${vals%; }"
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "qperf -cm1 (7 tests)" "$rc" "$why"
}

# ------------------------------------------------------------------- fio
FIO_BS=65536
FIO_DEPTH=4
FIO_SLOTS=$((FIO_BS * FIO_DEPTH))

# fio_mem FILE [random]: a buffer file for mem=mmapshared (fio maps it
# MAP_SHARED and keeps it), zeros or random bytes; a bit longer than the
# buffers fio places at its start.
fio_mem() {
	python3 - "$1" "$((FIO_SLOTS + 65536))" "${2:-zero}" <<'EOF'
import os, sys
path, n, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, "wb") as f:
    f.write(os.urandom(n) if kind == "random" else bytes(n))
EOF
}

# fio_slots_check SINK SOURCE: every 64 KB slot of SINK is non-zero and
# equal to some slot of SOURCE; prints what it found.
fio_slots_check() {
	python3 - "$1" "$2" "$FIO_BS" "$FIO_DEPTH" <<'EOF'
import sys
sink, src = (open(p, "rb").read() for p in sys.argv[1:3])
bs, n = int(sys.argv[3]), int(sys.argv[4])
slots = [src[i * bs:(i + 1) * bs] for i in range(n)]
for i in range(n):
    s = sink[i * bs:(i + 1) * bs]
    if s == bytes(bs):
        print(f"sink slot {i} is still zero: nothing arrived there")
        sys.exit(1)
    if s not in slots:
        print(f"sink slot {i} matches no source slot: data corrupted")
        sys.exit(1)
print(f"all {n} sink slots of {bs} B equal source slots")
EOF
}

fio_common() {
	printf '%s\n' --ioengine=rdma --port="$1" --bs=$FIO_BS --size=4m \
		--iodepth=$FIO_DEPTH --numjobs=1
}

# fio_mem_verb LABEL PORT write|read: the buffers of both ends are files;
# after the run the sink's slots must equal the source's, byte for byte.
fio_mem_verb() {
	local label=$1 port=$2 verb=$3 sfile cfile rc=0 why
	xc_give_up "$label" && return
	sfile="$XIW_LOGDIR/fio-$verb-$port.server.mem"
	cfile="$XIW_LOGDIR/fio-$verb-$port.client.mem"
	if [ "$verb" = read ]; then
		fio_mem "$sfile" random	# the client reads these
		fio_mem "$cfile"
	else
		fio_mem "$sfile"
		fio_mem "$cfile"		# fio fills the client's
	fi
	# shellcheck disable=SC2046
	if xiw_pair "$(safe_label "$label")" "$port" "$T" \
		"$XIWRUN" fio --name=srv $(fio_common "$port") --rw=read \
		--mem=mmapshared:"$sfile" -- \
		"$XIWRUN" fio --name=cli $(fio_common "$port") --rw=write \
		--hostname="$XIW_IP_A" --verb="$verb" --mem=mmapshared:"$cfile" \
		--scramble_buffers=0; then
		# the sink's slots (fio pairs local and remote buffers in an
		# order of its own): each is a non-zero copy of a source slot
		if [ "$verb" = read ]; then
			why=$(fio_slots_check "$cfile" "$sfile")
		else
			why=$(fio_slots_check "$sfile" "$cfile")
		fi || rc=1
		[ $rc = 0 ] && why="$(grep -oE 'BW=[0-9.]+[KMG]iB/s' "$XIW_PAIR_CLOG" | head -1), $why"
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "$label" "$rc" "$why"
}

# send/recv: the receiving fio checks each block's crc32c verify header.
fio_send() {
	local label=$1 port=$2 rc=0 why
	xc_give_up "$label" && return
	# shellcheck disable=SC2046
	if xiw_pair "$(safe_label "$label")" "$port" "$T" \
		"$XIWRUN" fio --name=srv $(fio_common "$port") --rw=read \
		--verify=crc32c -- \
		"$XIWRUN" fio --name=cli $(fio_common "$port") --rw=write \
		--hostname="$XIW_IP_A" --verb=send --verify=crc32c --do_verify=0; then
		if grep -q 'err= 0' "$XIW_PAIR_SLOG" &&
			grep -qE 'issued rwts: total=64,' "$XIW_PAIR_SLOG"; then
			why="64 blocks received, crc32c verified by the receiver"
		else
			rc=1
			why="receiver did not verify 64 blocks without error"
		fi
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "$label" "$rc" "$why"
}

# ------------------------------------------------------------- libfabric
apps_fi_info() {
	local rc=0 why n
	xc_give_up "fi_info -p verbs" && return
	if xiw_in A timeout 20 "$XIWRUN" fi_info -p verbs >"$XIW_LOGDIR/fi_info.log" 2>&1; then
		n=$(grep -c "domain: xiw_$XIW_IF_A" "$XIW_LOGDIR/fi_info.log" || true)
		if grep -q 'protocol: FI_PROTO_IWARP' "$XIW_LOGDIR/fi_info.log" && [ "$n" -gt 0 ]; then
			why="domain xiw_$XIW_IF_A, FI_PROTO_IWARP ($n entries)"
		else
			rc=1
			why="no iWARP entry for xiw_$XIW_IF_A"
		fi
	else
		rc=1
		why="fi_info failed"
	fi
	[ $rc = 0 ] || { XIW_PAIR_CLOG="$XIW_LOGDIR/fi_info.log"; XIW_PAIR_SLOG=/dev/null; }
	xc_result "fi_info -p verbs" "$rc" "$why"
}

# fi_pingpong: the server listens on its control port (-B), the fabric
# address comes over that connection; -c checks every message's data.
apps_fi_pingpong() {
	local label=$1 port=$2 prov=$3 ep=$4 rc=0 why
	xc_give_up "$label" && return
	if xiw_pair "$(safe_label "$label")" "$port" "$T" \
		"$XIWRUN" fi_pingpong -p "$prov" -e "$ep" -B "$port" -c -I 200 -S 4096 -- \
		"$XIWRUN" fi_pingpong -p "$prov" -e "$ep" -P "$port" -c -I 200 -S 4096 "$XIW_IP_A"; then
		why=$(awk '$1 == "4k" { print $2 " x 4k, " $7 " us/xfer, data checked" }' "$XIW_PAIR_CLOG")
		[ -n "$why" ] || { rc=1; why="no result line"; }
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "$label" "$rc" "$why"
}

# ----------------------------------------------------------------- uDAPL
# dat.conf entry: the interface name and port 0 (libdaplofa resolves the
# interface's address and goes through rdma_cm).
DAT_A="$XIW_LOGDIR/dat-a.conf"
DAT_B="$XIW_LOGDIR/dat-b.conf"
printf 'ofa-v2-xiwarp u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "%s 0" ""\n' \
	"$XIW_IF_A" >"$DAT_A"
printf 'ofa-v2-xiwarp u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "%s 0" ""\n' \
	"$XIW_IF_B" >"$DAT_B"

apps_dtest() {
	local label=dtest rc=0 why port=$1
	xc_give_up "$label" && return
	# dtest's server listens on port 15828 (its conn_qual 45248 through
	# libdaplofa), dapltest's on 62000
	if xiw_pair dtest 15828 "$T" \
		env DAT_OVERRIDE="$DAT_A" "$XIWRUN" dtest -s -P ofa-v2-xiwarp -b 65536 -B 50 -- \
		env DAT_OVERRIDE="$DAT_B" "$XIWRUN" dtest -P ofa-v2-xiwarp -b 65536 -B 50 -h "$XIW_IP_A"; then
		if grep -q 'DAPL Test Complete. PASSED' "$XIW_PAIR_CLOG" &&
			grep -q 'DAPL Test Complete. PASSED' "$XIW_PAIR_SLOG"; then
			why="both ends PASSED (send, RDMA read/write, data checked)"
		else
			rc=1
			why="no 'DAPL Test Complete. PASSED' on both ends"
		fi
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	: "$port"
	xc_result "$label" "$rc" "$why"
}

apps_dapltest() {
	local label="dapltest -V" rc=0 why
	xc_give_up "$label" && return
	if run_bg_pair dapltest 62000 "$T" \
		env DAT_OVERRIDE="$DAT_A" "$XIWRUN" dapltest -T S -D ofa-v2-xiwarp -- \
		env DAT_OVERRIDE="$DAT_B" "$XIWRUN" dapltest -T T -s "$XIW_IP_A" -D ofa-v2-xiwarp \
		-i 200 -t 1 -w 2 -V client SR 1024 server SR 1024 client RW 4096 server RR 4096; then
		if grep -q 'End of Work -- Client Exiting' "$XIW_PAIR_CLOG" &&
			grep -q 'Total RDMA Read' "$XIW_PAIR_CLOG"; then
			why=$(awk '/Total WQE/ { print $4 " WQE/s, validated (-V)" }' "$XIW_PAIR_CLOG")
		else
			rc=1
			why="the transaction test did not finish"
		fi
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "$label" "$rc" "$why"
}

# ----------------------------------------------------------- rdmacm-utils
apps_rping_q() {
	local port=$1 n rc=0 why
	xc_give_up "rping -q" && return
	if xiw_pair "rping-q.$port" "$port" "$T" \
		"$XIWRUN" rping -s -q -a "$XIW_IP_A" -p "$port" -- \
		"$XIWRUN" rping -c -q -a "$XIW_IP_A" -p "$port" -v -V -C 50; then
		n=$(grep -c '^ping data: ' "$XIW_PAIR_CLOG" || true)
		if [ "$n" -eq 50 ]; then
			why="50 pings on the application's own QPs, data verified"
		else
			rc=1
			why="client printed $n of 50 ping lines"
		fi
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "rping -q" "$rc" "$why"
}

apps_ucmatose() {
	local port=$1 rc=0 why
	xc_give_up "ucmatose" && return
	if xiw_pair "ucmatose.$port" "$port" "$T" \
		"$XIWRUN" ucmatose -p "$port" -c 4 -C 50 -S 4096 -- \
		"$XIWRUN" ucmatose -s "$XIW_IP_A" -p "$port" -c 4 -C 50 -S 4096; then
		if grep -q 'return status 0' "$XIW_PAIR_CLOG" &&
			grep -q 'data transfers complete' "$XIW_PAIR_CLOG"; then
			why="4 connections x 50 messages of 4 KB each way"
		else
			rc=1
			why="no 'data transfers complete' / status 0"
		fi
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "ucmatose" "$rc" "$why"
}

apps_cmtime() {
	local port=$1 rc=0 why step
	xc_give_up "cmtime" && return
	if run_bg_pair "cmtime.$port" "$port" "$T" \
		"$XIWRUN" cmtime -p "$port" -c 20 -- \
		"$XIWRUN" cmtime -s "$XIW_IP_A" -p "$port" -c 20; then
		for step in 'create id' 'resolve addr' 'resolve route' 'create qp' \
			connect disconnect destroy; do
			grep -q "^$step *:" "$XIW_PAIR_CLOG" || { rc=1; why="no '$step' line"; }
		done
		[ $rc = 0 ] && why="20 connections, connect $(awk '/^connect *:/ { print $NF }' \
			"$XIW_PAIR_CLOG") us/conn"
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "cmtime" "$rc" "$why"
}

for ((run = 1; run <= RUNS; run++)); do
	[ "$RUNS" -gt 1 ] && echo "--- run $run of $RUNS"
	p=$((18600 + run * 20))
	apps_qperf "$run" "$p"
	fio_mem_verb "fio rdma_write" $((p + 1)) write
	fio_mem_verb "fio rdma_read" $((p + 2)) read
	fio_send "fio send/recv" $((p + 3))
	apps_fi_info
	apps_fi_pingpong "fi_pingpong verbs msg" $((p + 4)) verbs msg
	apps_fi_pingpong "fi_pingpong verbs;ofi_rxm rdm" $((p + 5)) "verbs;ofi_rxm" rdm
	apps_dtest $((p + 6))
	apps_dapltest
	apps_rping_q $((p + 7))
	apps_ucmatose $((p + 8))
	apps_cmtime $((p + 9))
done
xc_finish
