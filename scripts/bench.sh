#!/usr/bin/env bash
# scripts/bench.sh (make bench) — xiwarp against its limits, in one run on
# one fresh veth pair between two namespaces (ratios, not absolute times):
#
#   bandwidth: iperf3 single TCP stream (-t 5)   vs  ib_write_bw -R -s 65536
#   latency:   sockperf TCP ping-pong (median)   vs  ib_write_lat / ib_send_lat
#              fi_pingpong -p tcp -e msg -S 64      -R -s 8 (t_typical)
#              (libfabric's tcp provider: what a user would pick instead)
#
# All latencies are one-way (half round trip), as each tool reports them.
# perftest's MB/s are 2^20 bytes/s. Needs root. Not a timed test.
# Environment: BUILD (default build), XIW_* knobs (both sides),
# XIW_KEEP_LOGS=1, XIW_BENCH_TIME=5 (seconds for iperf3/sockperf),
# XIW_BENCH_REPS=3 (runs of each latency test; the median is reported).
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
# shellcheck source=scripts/netns.sh
. "$ROOT/scripts/netns.sh"

BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
XIWRUN="$BUILD/bin/xiwrun"
T=${XIW_BENCH_TIME:-5}

die() {
	echo "bench: $*" >&2
	exit 1
}
progress() { printf 'bench: %s\n' "$*" >&2; }

[ -x "$XIWRUN" ] || die "$XIWRUN not found: run 'make libs tools' (or 'make bench')"
for p in iperf3 sockperf fi_pingpong ib_write_bw ib_write_lat ib_send_lat ss awk; do
	command -v "$p" >/dev/null 2>&1 || die "'$p' is not installed: run 'bash scripts/deps.sh'"
done
rc=0
xiw_netns_can || rc=$?
[ $rc -eq 0 ] || die "needs network namespaces (root); run 'sudo make bench'"

XIW_LOGDIR=$(mktemp -d /tmp/xiw-bench.XXXXXX)
if [ "${XIW_KEEP_LOGS:-0}" = 1 ]; then
	XIW_CLEANUP_HOOKS+=("echo \"bench: logs kept in $XIW_LOGDIR\" >&2")
else
	XIW_CLEANUP_HOOKS+=("rm -rf '$XIW_LOGDIR'")
fi
prefix=$(xiw_netns_prefix bench)
xiw_netns_trap "$prefix"
rc=0
xiw_netns_up "$prefix" || rc=$?
[ $rc -eq 0 ] || die "could not set up network namespaces (rc=$rc)"
progress "veth $XIW_NS_A ($XIW_IP_A) <-> $XIW_NS_B ($XIW_IP_B)"

note=()
fmt() { # fmt VALUE: "-" for empty
	[ -n "${1:-}" ] && printf '%s' "$1" || printf -- '-'
}
# ratio A B DIGITS: A/B, or empty
ratio() {
	[ -n "${1:-}" ] && [ -n "${2:-}" ] || return 0
	awk -v a="$1" -v b="$2" -v d="${3:-2}" 'BEGIN { if (b > 0) printf "%.*f", d, a / b }'
}

# ------------------------------------------------------------ bandwidth
progress "iperf3 single stream, ${T}s"
tcp_gbit=""
if xiw_pair iperf3 17601 $((T + 20)) iperf3 -s -1 -p 17601 -- \
	iperf3 -c "$XIW_IP_A" -p 17601 -t "$T" -f g; then
	tcp_gbit=$(awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "Gbits/sec") v = $(i - 1) } END { if (v != "") print v }' "$XIW_PAIR_CLOG")
fi
[ -n "$tcp_gbit" ] || note+=("iperf3 failed: ${XIW_PAIR_WHY:-no receiver line}")

progress "ib_write_bw -R -s 65536 over xiwarp"
xiw_mbs=""
xiw_gbit=""
if xiw_pair ib_write_bw 17602 120 \
	"$XIWRUN" ib_write_bw -R -F -s 65536 -n 20000 -p 17602 -- \
	"$XIWRUN" ib_write_bw -R -F -s 65536 -n 20000 -p 17602 "$XIW_IP_A"; then
	xiw_mbs=$(xiw_perftest_value "$XIW_PAIR_CLOG" bw || true)
	[ -n "$xiw_mbs" ] && xiw_gbit=$(awk -v m="$xiw_mbs" 'BEGIN { printf "%.2f", m * 1048576 * 8 / 1e9 }')
fi
[ -n "$xiw_gbit" ] || note+=("ib_write_bw failed: ${XIW_PAIR_WHY:-no result line}")

# -------------------------------------------------------------- latency
progress "sockperf TCP ping-pong, ${T}s"
sp_p50=""
xiw_bg A sockperf server --tcp -i "$XIW_IP_A" -p 17603 >"$XIW_LOGDIR/sockperf.server.log" 2>&1
sp_pid=$XIW_LAST_PID
if xiw_wait_listen A 17603 10 "$sp_pid"; then
	xiw_in B timeout -k 5 $((T + 30)) sockperf ping-pong --tcp -i "$XIW_IP_A" -p 17603 \
		-t "$T" -m 64 >"$XIW_LOGDIR/sockperf.client.log" 2>&1 || true
	sp_p50=$(awk '/percentile 50\.000/ { v = $NF } END { if (v != "") print v }' "$XIW_LOGDIR/sockperf.client.log")
fi
xiw_stop "$sp_pid" 2 || true
[ -n "$sp_p50" ] || note+=("sockperf failed (see $XIW_LOGDIR/sockperf.*.log)")

# median VALUES...: the middle value (numbers; empty ones ignored)
median() {
	printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

# Latencies: REPS runs each (different ports), the median is reported.
REPS=${XIW_BENCH_REPS:-3}
progress "fi_pingpong -p tcp -e msg -S 64 (libfabric tcp provider, no xiwarp) x$REPS"
vals=()
for ((r = 0; r < REPS; r++)); do
	port=$((17610 + r))
	if xiw_pair "fi_pingpong.$r" "$port" 60 \
		fi_pingpong -p tcp -e msg -S 64 -I 20000 -B "$port" -- \
		fi_pingpong -p tcp -e msg -S 64 -I 20000 -P "$port" "$XIW_IP_A"; then
		vals+=("$(awk '$1 == "bytes" { for (i = 1; i <= NF; i++) if ($i == "usec/xfer") c = i; next }
			c && $1 ~ /^[0-9]+$/ { print $c; exit }' "$XIW_PAIR_CLOG")")
	fi
done
fi_lat=$(median "${vals[@]}")
[ -n "$fi_lat" ] || note+=("fi_pingpong failed: ${XIW_PAIR_WHY:-no result line}")

declare -A lat
for prog in ib_write_lat ib_send_lat; do
	progress "$prog -R -s 8 over xiwarp x$REPS"
	vals=()
	for ((r = 0; r < REPS; r++)); do
		port=$((17620 + r))
		[ $prog = ib_send_lat ] && port=$((17630 + r))
		if xiw_pair "$prog.$r" "$port" 60 \
			"$XIWRUN" "$prog" -R -F -s 8 -n 10000 -p "$port" -- \
			"$XIWRUN" "$prog" -R -F -s 8 -n 10000 -p "$port" "$XIW_IP_A"; then
			vals+=("$(xiw_perftest_value "$XIW_PAIR_CLOG" lat || true)")
		fi
	done
	lat[$prog]=$(median "${vals[@]}")
	[ -n "${lat[$prog]}" ] || note+=("$prog failed: ${XIW_PAIR_WHY:-no result line}")
done

# ---------------------------------------------------------------- table
knobs=$(env | grep -E '^XIW_(MPA_|MAX_FPDU)' | tr '\n' ' ' || true)
echo
echo "xiwarp bench: two netns + veth, one run${knobs:+ (knobs: $knobs)}"
printf '%-38s %12s   %s\n' "measurement" "value" "ratio"
printf '%-38s %12s   %s\n' "--------------------------------------" "------------" "-------------------------"
printf '%-38s %12s   %s\n' "TCP stream, iperf3 -t $T" "$(fmt "$tcp_gbit") Gb/s" "(bandwidth limit)"
r=$(ratio "$xiw_gbit" "$tcp_gbit")
printf '%-38s %12s   %s\n' "xiwarp ib_write_bw -R -s 65536" "$(fmt "$xiw_gbit") Gb/s" \
	"${r:+$r x TCP}${xiw_mbs:+ ($xiw_mbs MB/s)}"
printf '%-38s %12s   %s\n' "TCP ping-pong, sockperf -m 64 (p50)" "$(fmt "$sp_p50") us" "(latency limit)"
r=$(ratio "$fi_lat" "$sp_p50")
printf '%-38s %12s   %s\n' "libfabric tcp, fi_pingpong -S 64" "$(fmt "$fi_lat") us" "${r:+$r x TCP}"
for prog in ib_write_lat ib_send_lat; do
	r=$(ratio "${lat[$prog]}" "$sp_p50")
	r2=$(ratio "${lat[$prog]}" "$fi_lat")
	printf '%-38s %12s   %s\n' "xiwarp $prog -R -s 8 (typical)" "$(fmt "${lat[$prog]}") us" \
		"${r:+$r x TCP}${r2:+, $r2 x libfabric}"
done
echo
echo "latencies are one-way (half round trip), median of $REPS runs; 2 vCPUs shared: expect noise"
if [ ${#note[@]} -gt 0 ]; then
	printf 'bench: %s\n' "${note[@]}"
	exit 1
fi
exit 0
