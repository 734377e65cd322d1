#!/usr/bin/env bash
# timeout: 300
# faults.sh — negative and fault tests between two network namespaces.
#
#  hostile cases  xiw_hostile (hand-built MPA/DDP/RDMAP, namespace B) sends
#                 one malformed FPDU to xiw_victim -s (namespace A). Pass
#                 when BOTH agree: the hostile saw the TERMINATE the RFCs
#                 call for (and the close), the victim saw error/flush
#                 completions, DISCONNECTED, its QP in ERROR, intact guard
#                 pages around its MR and stayed alive. Each runs with MPA
#                 CRC off and on (bad-crc: on only).
#  verbs cases    xiw_victim -c does one invalid WRITE/READ against
#                 xiw_victim -s: error/flush completions at both ends.
#  MPA cases      a broken MPA request (key, revision, private data
#                 length) is rejected or closed, and the listener still
#                 serves a good connection afterwards.
#  kill cases     a client streams WRITEs; the server (or the client) is
#                 killed with SIGKILL mid-transfer; the survivor must see
#                 flushes and DISCONNECTED and exit on its own, in time.
#
# Environment: BUILD (default build; build/san for the sanitizer tier),
#   FAULTS_FILTER=REGEX  run only cases whose name matches,
#   FAULTS_VERBOSE=1     show every log, not only the failures,
#   FAULTS_SEEDS="1 2 3" seeds of the random-garbage case.
# Exit: 0 all passed, 1 some failed, 77 skipped (not root / no netns).
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
VICTIM=$ROOT/$BUILD/tests/netns/xiw_victim
HOSTILE=$ROOT/$BUILD/tests/netns/xiw_hostile
FILTER=${FAULTS_FILTER:-}
VERBOSE=${FAULTS_VERBOSE:-0}

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: faults.sh needs root for network namespaces"
	exit 77
fi
for b in "$VICTIM" "$HOSTILE"; do
	if [ ! -x "$b" ]; then
		echo "FAIL: $b missing: build it with 'make $BUILD/tests/netns/${b##*/}'"
		exit 1
	fi
done

# shellcheck source=scripts/netns.sh
. "$ROOT/scripts/netns.sh"
prefix=$(xiw_netns_prefix neg)
xiw_netns_trap "$prefix"
xiw_netns_up "$prefix" || exit $?

LOGDIR=$(mktemp -d "/tmp/xiw-faults.XXXXXX")
XIW_CLEANUP_HOOKS+=("rm -rf '$LOGDIR'")
port=7600
npass=0
nfail=0
failed=()

want() { [ -z "$FILTER" ] || grep -qE -- "$FILTER" <<<"$1"; }

show() {
	local f
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "    --- ${f##*/}"
		tail -n 40 "$f" | sed 's/^/    | /'
	done
}

result() { # NAME OK(0/1) WHY LOGS...
	local name=$1 ok=$2 why=$3
	shift 3
	if [ "$ok" = 0 ]; then
		npass=$((npass + 1))
		printf 'PASS  %s\n' "$name"
		[ "$VERBOSE" = 1 ] && show "$@"
	else
		nfail=$((nfail + 1))
		failed+=("$name")
		printf 'FAIL  %s  (%s)\n' "$name" "$why"
		show "$@"
	fi
	return 0
}

# Environment for the victims of the verbs and kill cases (MPA CRC on/off).
VENV=()

# start_server LOG ARGS...: victim server in A on a fresh port; sets $port
# and $spid. Returns non-zero if it never listens.
start_server() {
	local log=$1
	shift
	port=$((port + 1))
	xiw_bg A env "${VENV[@]}" "$VICTIM" -s -p "$port" "$@" >"$log" 2>&1
	spid=$XIW_LAST_PID
	xiw_wait_listen A "$port" 10 "$spid"
}

# hostile_case NAME "VICTIM ARGS" "HOSTILE ARGS" [HOSTILE_TIMEOUT]
hostile_case() {
	local name=$1 vargs=$2 hargs=$3 ht=${4:-8} vl hl hrc vrc
	want "$name" || return 0
	vl=$LOGDIR/${name//\//_}.victim.log
	hl=$LOGDIR/${name//\//_}.hostile.log
	# shellcheck disable=SC2086 # word splitting of the argument strings
	if ! start_server "$vl" -t $((ht + 10)) $vargs; then
		xiw_stop "$spid" 1 >/dev/null 2>&1
		result "$name" 1 "victim did not listen" "$vl"
		return 0
	fi
	hrc=0
	# shellcheck disable=SC2086
	xiw_in B timeout -k 2 $((ht + 10)) "$HOSTILE" -t "$ht" $hargs \
		"$XIW_IP_A" "$port" >"$hl" 2>&1 || hrc=$?
	vrc=0
	xiw_wait_pid "$spid" $((ht + 15)) || vrc=$?
	if [ "$hrc" = 0 ] && [ "$vrc" = 0 ]; then
		result "$name" 0 "" "$hl" "$vl"
	else
		result "$name" 1 "hostile exit $hrc, victim exit $vrc" "$hl" "$vl"
	fi
}

# mpa_case NAME CASE: a broken MPA request must be rejected or closed,
# and the same listener must then still serve a good connection.
mpa_case() {
	local name=$1 kase=$2 vl hl hl2 h1=0 h2=0 vrc=0
	want "$name" || return 0
	vl=$LOGDIR/$name.victim.log
	hl=$LOGDIR/$name.hostile.log
	hl2=$LOGDIR/$name.hostile-good.log
	if ! start_server "$vl" -t 20 -e good; then
		xiw_stop "$spid" 1 >/dev/null 2>&1
		result "$name" 1 "victim did not listen" "$vl"
		return 0
	fi
	xiw_in B timeout -k 2 15 "$HOSTILE" -t 8 --case "$kase" "$XIW_IP_A" "$port" \
		>"$hl" 2>&1 || h1=$?
	xiw_in B timeout -k 2 15 "$HOSTILE" -t 8 --case good "$XIW_IP_A" "$port" \
		>"$hl2" 2>&1 || h2=$?
	xiw_wait_pid "$spid" 25 || vrc=$?
	if [ "$h1" = 0 ] && [ "$h2" = 0 ] && [ "$vrc" = 0 ]; then
		result "$name" 0 "" "$hl" "$hl2" "$vl"
	else
		result "$name" 1 "bad-MPA peer exit $h1, good peer exit $h2, victim exit $vrc" \
			"$hl" "$hl2" "$vl"
	fi
}

# verbs_case NAME "SERVER ARGS" "CLIENT ARGS"
verbs_case() {
	local name=$1 sargs=$2 cargs=$3 sl cl crc=0 src=0
	want "$name" || return 0
	sl=$LOGDIR/${name//\//_}.server.log
	cl=$LOGDIR/${name//\//_}.client.log
	# shellcheck disable=SC2086
	if ! start_server "$sl" -t 20 $sargs; then
		xiw_stop "$spid" 1 >/dev/null 2>&1
		result "$name" 1 "server did not listen" "$sl"
		return 0
	fi
	# shellcheck disable=SC2086
	xiw_in B timeout -k 2 25 env "${VENV[@]}" "$VICTIM" -c -a "$XIW_IP_A" -p "$port" -t 15 $cargs \
		>"$cl" 2>&1 || crc=$?
	xiw_wait_pid "$spid" 25 || src=$?
	if [ "$crc" = 0 ] && [ "$src" = 0 ]; then
		result "$name" 0 "" "$cl" "$sl"
	else
		result "$name" 1 "client exit $crc, server exit $src" "$cl" "$sl"
	fi
}

# wait_streaming LOG PID: until the client says it streams (15 s max).
wait_streaming() {
	local i
	for ((i = 0; i < 150; i++)); do
		grep -q '^streaming' "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# kill_case NAME server|client: SIGKILL one side mid-stream; the other
# must report flushes + DISCONNECTED and exit 0 within 20 s.
kill_case() {
	local name=$1 victim=$2 sl cl cpid rc=0 sexp=none
	want "$name" || return 0
	sl=$LOGDIR/${name//\//_}.server.log
	cl=$LOGDIR/${name//\//_}.client.log
	[ "$victim" = client ] && sexp=disconnect
	if ! start_server "$sl" -t 60 -n 1M -e "$sexp"; then
		xiw_stop "$spid" 1 >/dev/null 2>&1
		result "$name" 1 "server did not listen" "$sl"
		return 0
	fi
	# 512 x 256 KiB in flight: more than both TCP buffers can hold, so
	# some WRs are surely still queued when the peer dies and must flush.
	xiw_bg B env "${VENV[@]}" "$VICTIM" -c -a "$XIW_IP_A" -p "$port" -t 60 --op stream -m 256K -d 512 >"$cl" 2>&1
	cpid=$XIW_LAST_PID
	if ! wait_streaming "$cl" "$cpid"; then
		xiw_stop "$cpid" 1 >/dev/null 2>&1
		xiw_stop "$spid" 1 >/dev/null 2>&1
		result "$name" 1 "client never streamed" "$cl" "$sl"
		return 0
	fi
	if [ "$victim" = server ]; then
		kill -KILL "$spid"
		xiw_wait_pid "$spid" 5 >/dev/null 2>&1
		xiw_wait_pid "$cpid" 20 || rc=$?
		[ "$rc" = 124 ] && echo "client still running 20 s after the kill" >>"$cl"
		result "$name" "$([ $rc = 0 ] && echo 0 || echo 1)" "client exit $rc" "$cl" "$sl"
	else
		kill -KILL "$cpid"
		xiw_wait_pid "$cpid" 5 >/dev/null 2>&1
		xiw_wait_pid "$spid" 20 || rc=$?
		[ "$rc" = 124 ] && echo "server still running 20 s after the kill" >>"$sl"
		result "$name" "$([ $rc = 0 ] && echo 0 || echo 1)" "server exit $rc" "$sl" "$cl"
	fi
}

# ---------------------------------------------------------------- cases ---
# NAME  VICTIM ARGS  HOSTILE ARGS. -u: no MR byte may change (checks happen
# before placement); the RTR offered matches the MR's rights so that the
# zero-length RTR itself is legal.
HOSTILE_CASES=(
	"good|-e good|--case good"
	"bad-len-short|-e error -u|--case bad-len-short"
	"bad-len-huge|-e error -u|--case bad-len-huge"
	"bad-opcode|-e error -u|--case bad-opcode"
	"bad-ddp-ver|-e error -u|--case bad-ddp-ver"
	"bad-ddp-ver-ut|-e error -u|--case bad-ddp-ver-ut"
	"bad-rdmap-ver|-e error -u|--case bad-rdmap-ver"
	"bad-stag|-e error -u|--case bad-stag"
	"oob|-e error -u|--case oob"
	"oob-low|-e error -u|--case oob-low"
	"oob-wrap|-e error -u|--case oob-wrap"
	"no-access-write|-e error -u -A r|--case no-access-write --rtr read"
	"no-access-read|-e error -u -A w|--case no-access-read --rtr write"
	"read-oob|-e error -u -A r|--case read-oob --rtr read"
	"read-bad-stag|-e error -u -A r|--case read-bad-stag --rtr read"
	"bad-qn|-e error -u|--case bad-qn"
	"bad-msn|-e error -u|--case bad-msn"
	"bad-mo|-e error -u|--case bad-mo"
	"peer-terminate|-e error -u|--case peer-terminate"
	"stray-read-resp|-e error|--case stray-read-resp"
)
for seed in ${FAULTS_SEEDS:-1 2 3}; do
	HOSTILE_CASES+=("garbage-$seed|-e error|--case garbage --seed $seed")
done

echo "faults: namespaces $XIW_NS_A ($XIW_IP_A, victim) / $XIW_NS_B ($XIW_IP_B, peer), BUILD=$BUILD"
for crc in off on; do
	cflag=""
	[ "$crc" = on ] && cflag="--crc"
	for c in "${HOSTILE_CASES[@]}"; do
		IFS='|' read -r n va ha <<<"$c"
		hostile_case "$n/crc-$crc" "$va" "$ha $cflag"
	done
	# The victim holds IRD requests while 16 MiB responses are in flight.
	hostile_case "read-beyond-ird/crc-$crc" "-e error -u -A r -I 2 -n 16M" \
		"--case read-beyond-ird --rtr read $cflag" 25
done
hostile_case "bad-crc/crc-on" "-e error" "--case bad-crc --crc"
hostile_case "good/no-p2p" "-e good" "--case good --no-p2p"
hostile_case "oob/no-p2p" "-e error -u" "--case oob --no-p2p"

mpa_case "mpa-bad-key" mpa-bad-key
mpa_case "mpa-bad-rev" mpa-bad-rev
mpa_case "mpa-huge-pd" mpa-huge-pd

for crc in 0 1; do
	VENV=("XIW_MPA_CRC=$crc")
	verbs_case "verbs-write-bad-stag/crc-$crc" "-e error -u" "--op write-bad-stag"
	verbs_case "verbs-write-oob/crc-$crc" "-e error -u" "--op write-oob"
	verbs_case "verbs-write-noaccess/crc-$crc" "-e error -u -A r" "--op write"
	verbs_case "verbs-read-oob/crc-$crc" "-e error -u" "--op read-oob"
	verbs_case "verbs-read-noaccess/crc-$crc" "-e error -u -A w" "--op read"
	kill_case "kill-server-mid-stream/crc-$crc" server
	kill_case "kill-client-mid-stream/crc-$crc" client
done

echo "faults: $npass passed, $nfail failed"
[ "$nfail" = 0 ] || { printf '  failed: %s\n' "${failed[@]}"; exit 1; }
exit 0
