#!/usr/bin/env bash
# scripts/demo.sh (make demo) — unmodified rdma-core programs over xiwarp.
#
# As root: two network namespaces joined by a veth pair; in each test the
# server runs in one namespace, the client in the other, both through
# build/bin/xiwrun: rping (1000 verified pings), ib_{write,read,send}_{bw,lat}
# -R at their default sizes, rdma_server/rdma_client; then the xsk rows:
# the xiw_xdp program attached to both veth ends and XIW_TRANSPORT=xsk
# (AF_XDP + xiwarp's own TCP) for rping, ib_write_bw, ib_send_lat and
# rdma_server/rdma_client (skipped, and said so, without bpf/xiwctl or
# ethtool). Prints one table and
# removes everything it created (also on failure or Ctrl-C). Exit 1 if any
# run failed.
# Without root: says why and runs rping over 127.0.0.1 instead.
#
# Environment: BUILD (default build), XIW_* knobs (passed to both sides,
# e.g. XIW_MPA_CRC=1 make demo), XIW_KEEP_LOGS=1 keeps the logs.
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
# shellcheck source=scripts/netns.sh
. "$ROOT/scripts/netns.sh"

BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
XIWRUN="$BUILD/bin/xiwrun"

die() {
	echo "demo: $*" >&2
	exit 1
}

[ -x "$XIWRUN" ] || die "$XIWRUN not found: run 'make libs tools' (or 'make demo')"
for l in libibverbs.so.1 librdmacm.so.1 libxiwarp.so.1; do
	[ -e "$BUILD/lib/$l" ] || die "$BUILD/lib/$l not found: run 'make libs' (or 'make demo')"
done
for p in rping ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat \
	rdma_server rdma_client ss; do
	command -v "$p" >/dev/null 2>&1 ||
		die "'$p' is not installed: run 'bash scripts/deps.sh' (make demo does it)"
done

XIW_LOGDIR=$(mktemp -d /tmp/xiw-demo.XXXXXX)
if [ "${XIW_KEEP_LOGS:-0}" = 1 ]; then
	XIW_CLEANUP_HOOKS+=("echo \"demo: logs kept in $XIW_LOGDIR\" >&2")
else
	XIW_CLEANUP_HOOKS+=("rm -rf '$XIW_LOGDIR'")
fi

rows=()   # "test|result|value"
nfail=0
# the xsk rows: a command prefix for both sides and a label prefix
PFX=(env)
LP=
faillogs=()

row() {
	rows+=("$1|$2|$3")
	if [ "$2" != pass ]; then
		nfail=$((nfail + 1))
		faillogs+=("$1|$XIW_PAIR_SERR $XIW_PAIR_SLOG $XIW_PAIR_CERR $XIW_PAIR_CLOG|$4")
	fi
}

progress() { printf 'demo: %s\n' "$*" >&2; }

run_rping() {
	local port=$1 count=$2 n label
	label="${LP}rping -C $count -V"
	progress "${LP}rping: $count pings, data verified"
	if xiw_pair rping "$port" 60 \
		"${PFX[@]}" "$XIWRUN" rping -s -a "$XIW_IP_A" -p "$port" -- \
		"${PFX[@]}" "$XIWRUN" rping -c -a "$XIW_IP_A" -p "$port" -v -V -C "$count"; then
		n=$(grep -c '^ping data: ' "$XIW_PAIR_CLOG" || true)
		if [ "$n" -eq "$count" ]; then
			row "$label" pass "$n pings verified"
		else
			row "$label" FAIL "$n/$count pings" "client printed $n of $count ping lines"
		fi
	else
		row "$label" FAIL "-" "$XIW_PAIR_WHY"
	fi
}

# run_perf PORT PROG bw|lat ARGS...
run_perf() {
	local port=$1 prog=$2 kind=$3 v
	shift 3
	progress "${LP}$prog -R $*"
	local ok=0 try
	for try in 1 2; do
		if xiw_pair "$prog" "$port" 60 \
			"${PFX[@]}" "$XIWRUN" "$prog" -R -F -p "$port" "$@" -- \
			"${PFX[@]}" "$XIWRUN" "$prog" -R -F -p "$port" "$@" "$XIW_IP_A"; then
			ok=1
			break
		fi
		# perftest's own reconnect race (scripts/netns.sh): retry once
		if [ $try != 1 ] || ! xiw_pair_connect_race; then break; fi
		progress "$prog: REJECTED before the test started (perftest reconnect race), retrying once"
		port=$((port + 1000))
	done
	if [ $ok = 1 ]; then
		if v=$(xiw_perftest_value "$XIW_PAIR_CLOG" "$kind"); then
			if [ "$kind" = bw ]; then
				row "${LP}$prog -R" pass "$v MB/s"
			else
				if awk -v v="$v" 'BEGIN { exit !(v > 1000) }'; then
					row "${LP}$prog -R" pass "$v us (slow: a stall?)"
				else
					row "${LP}$prog -R" pass "$v us"
				fi
			fi
		else
			row "${LP}$prog -R" FAIL "-" "no result line after the #bytes header"
		fi
	else
		row "${LP}$prog -R" FAIL "-" "$XIW_PAIR_WHY"
	fi
}

run_cm_example() {
	local port=$1
	progress "${LP}rdma_server / rdma_client"
	if xiw_pair rdma_cm "$port" 30 \
		"${PFX[@]}" "$XIWRUN" rdma_server -s "$XIW_IP_A" -p "$port" -- \
		"${PFX[@]}" "$XIWRUN" rdma_client -s "$XIW_IP_A" -p "$port"; then
		row "${LP}rdma_server/rdma_client" pass "message exchanged"
	else
		row "${LP}rdma_server/rdma_client" FAIL "-" "$XIW_PAIR_WHY"
	fi
}

print_table() {
	local r t res v
	echo
	printf '%-31s %-6s %s\n' "test" "result" "value"
	printf '%-31s %-6s %s\n' "-------------------------------" "------" "--------------------"
	for r in "${rows[@]}"; do
		IFS='|' read -r t res v <<<"$r"
		printf '%-31s %-6s %s\n' "$t" "$res" "$v"
	done
	echo
}

print_failures() {
	local f t logs why x
	for f in "${faillogs[@]}"; do
		IFS='|' read -r t logs why <<<"$f"
		echo "FAILED: $t: $why"
		for x in $logs; do
			[ -s "$x" ] || continue
			echo "  --- ${x##*/} (last 8 lines)"
			tail -n 8 "$x" | sed 's/^/  | /'
		done
	done
}

knobs=$(env | grep -E '^XIW_(MPA_|MAX_FPDU|LOG)' | tr '\n' ' ' || true)

rc=0
xiw_netns_can 2>/dev/null || rc=$?
if [ $rc -ne 0 ]; then
	# ---------------------------------------------------- no root: loopback
	if [ "$(id -u)" -ne 0 ]; then
		echo "demo: not running as root, so no network namespaces (they need root)."
	else
		echo "demo: 'ip netns' does not work here, so no network namespaces."
	fi
	echo "demo: running rping over loopback (127.0.0.1) instead; run 'sudo make demo' for the full demo."
	trap 'xiw_cleanup' EXIT
	trap 'xiw_cleanup; trap - EXIT; exit 130' INT
	trap 'xiw_cleanup; trap - EXIT; exit 143' TERM
	xiw_local_up
	port=$((20000 + $$ % 20000))
	while ss -Hltn "sport = :$port" | grep -q .; do port=$((port + 1)); done
	run_rping "$port" 1000
	print_table
	[ $nfail -eq 0 ] || { print_failures; exit 1; }
	exit 0
fi

# -------------------------------------------------------- root: namespaces
prefix=$(xiw_netns_prefix demo)
xiw_netns_trap "$prefix"
rc=0
xiw_netns_up "$prefix" || rc=$?
[ $rc -eq 0 ] || die "could not set up network namespaces (rc=$rc, see above)"
echo "demo: server in $XIW_NS_A ($XIW_IP_A), client in $XIW_NS_B ($XIW_IP_B), veth, xiwarp over kernel TCP"
[ -n "$knobs" ] && echo "demo: knobs: $knobs"
t0=$(date +%s)

run_rping 17401 1000
run_perf 17402 ib_write_bw bw -n 2000
run_perf 17403 ib_read_bw bw -n 2000
run_perf 17404 ib_send_bw bw -n 2000
run_perf 17405 ib_write_lat lat -n 1000
run_perf 17406 ib_read_lat lat -n 1000
run_perf 17407 ib_send_lat lat -n 1000
run_cm_example 17408

# ------------------------------------------ xsk: AF_XDP + xiwarp's TCP
XIWCTL="$BUILD/bin/xiwctl"
xsk_skip=""
[ -x "$XIWCTL" ] || xsk_skip="$XIWCTL not built (make)"
[ -n "$xsk_skip" ] || command -v ethtool >/dev/null 2>&1 || xsk_skip="ethtool not installed (scripts/deps.sh)"
if [ -z "$xsk_skip" ]; then
	for side in A B; do
		[ $side = A ] && ifn=$XIW_IF_A || ifn=$XIW_IF_B
		# kernel TCP frames would reach AF_XDP with partial checksums
		xiw_in $side ethtool -K "$ifn" tx off >/dev/null 2>&1 &&
			xiw_in $side "$XIWCTL" attach "$ifn" --mode native >/dev/null 2>&1 ||
			xsk_skip="xiwctl attach $ifn failed"
	done
fi
if [ -n "$xsk_skip" ]; then
	rows+=("xsk rows|skip|$xsk_skip")
else
	progress "xsk: xiw_xdp attached to both veth ends, XIW_TRANSPORT=xsk on both sides"
	PFX=(env XIW_TRANSPORT=xsk)
	LP="xsk: "
	run_rping 17411 1000
	run_perf 17412 ib_write_bw bw -n 2000
	run_perf 17413 ib_send_lat lat -n 1000
	run_cm_example 17414
	PFX=(env)
	LP=""
fi

print_table
echo "($(($(date +%s) - t0)) s; bw: 64 KiB messages, BW average; lat: 2-byte messages, t_typical)"
if [ $nfail -ne 0 ]; then
	print_failures
	echo "demo: $nfail of ${#rows[@]} runs FAILED"
	exit 1
fi
echo "demo: all ${#rows[@]} runs passed"
exit 0
