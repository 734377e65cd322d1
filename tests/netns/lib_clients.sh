# shellcheck shell=bash
# tests/netns/lib_clients.sh — shared by the netns scenarios that run the
# unmodified rdma-core clients over xiwarp (clients_*.sh, wire_tshark.sh).
# Not a test itself (tests/run.sh skips lib_*.sh).
#
# Environment: BUILD (default build; relative to the repo root or
# absolute), XIW_SAN=1 (sanitizer build: longer timeouts), XIW_KEEP_LOGS=1
# (keep the per-subcase logs; their directory is printed).

XIW_ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
# shellcheck source=scripts/netns.sh
. "$XIW_ROOT/scripts/netns.sh"

BUILD=${BUILD:-build}
case $BUILD in
/*) ;;
*) BUILD="$XIW_ROOT/$BUILD" ;;
esac
XIWRUN="$BUILD/bin/xiwrun"

# Timeouts grow under ASan/UBSan.
XIW_TMUL=1
[ "${XIW_SAN:-0}" = 1 ] && XIW_TMUL=3

XC_PASS=0
XC_FAIL=0
XC_FAILED=()
XC_TIMEOUTS=0
# Knobs for the programs: XC_ENV on both sides, XC_SENV only on the server
# (namespace A), XC_CENV only on the client (namespace B).
XC_ENV=()
XC_SENV=()
XC_CENV=()
XC_MAX_TIMEOUTS=${XC_MAX_TIMEOUTS:-3}

# xc_give_up LABEL: after XC_MAX_TIMEOUTS timed-out subcases the engine is
# hanging; fail the rest at once instead of waiting for every timeout.
xc_give_up() {
	if [ "$XC_TIMEOUTS" -ge "$XC_MAX_TIMEOUTS" ]; then
		XC_FAIL=$((XC_FAIL + 1))
		XC_FAILED+=("$1")
		printf 'FAIL  %-36s %s\n' "$1" "(not run: $XC_TIMEOUTS subcases timed out already)"
		return 0
	fi
	return 1
}

# xc_need_xiwarp: the drop-ins must be built. 1 (fail) if not.
xc_need_xiwarp() {
	local l
	if [ ! -x "$XIWRUN" ]; then
		echo "FAIL: $XIWRUN missing: run 'make' (or 'make SAN=1' for build/san)"
		return 1
	fi
	for l in libibverbs.so.1 librdmacm.so.1 libxiwarp.so.1 libmlx5.so.1 libefa.so.1; do
		if [ ! -e "$BUILD/lib/$l" ]; then
			echo "FAIL: $BUILD/lib/$l missing: run 'make libs'"
			return 1
		fi
	done
	return 0
}

# xc_need_progs PROG...: 77 (skip) when a client program is not installed.
xc_need_progs() {
	local p missing=()
	for p in "$@"; do
		command -v "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "SKIP: programs not installed: ${missing[*]} (install them: bash scripts/deps.sh)"
		return 77
	fi
	return 0
}

# xc_setup NAME: namespaces (with teardown trap) and a log directory.
# Returns 77 when namespaces are not possible here.
xc_setup() {
	local name=${1:?} rc=0
	XC_PREFIX=$(xiw_netns_prefix "$name")
	XIW_LOGDIR=$(mktemp -d "/tmp/xiw-$name.XXXXXX")
	if [ "${XIW_KEEP_LOGS:-0}" = 1 ]; then
		XIW_CLEANUP_HOOKS+=("echo \"logs kept in $XIW_LOGDIR\"")
	else
		XIW_CLEANUP_HOOKS+=("rm -rf '$XIW_LOGDIR'")
	fi
	xiw_netns_trap "$XC_PREFIX"
	xiw_netns_up "$XC_PREFIX" || rc=$?
	if [ $rc -ne 0 ]; then
		[ $rc -eq 77 ] && echo "SKIP: no network namespaces here (they need root and a working 'ip netns')"
		return $rc
	fi
	echo "namespaces $XIW_NS_A ($XIW_IP_A) <-> $XIW_NS_B ($XIW_IP_B), BUILD=$BUILD"
}

# xc_result NAME RC DETAIL: count and print one subcase.
xc_result() {
	local name=$1 rc=$2 detail=${3:-}
	if [ "$rc" -eq 0 ]; then
		XC_PASS=$((XC_PASS + 1))
		printf 'PASS  %-36s %s\n' "$name" "$detail"
	else
		XC_FAIL=$((XC_FAIL + 1))
		XC_FAILED+=("$name")
		case $detail in *"timed out"* | *"did not exit"*) XC_TIMEOUTS=$((XC_TIMEOUTS + 1)) ;; esac
		printf 'FAIL  %-36s %s\n' "$name" "$detail"
		xiw_pair_show_logs 30
	fi
}

# xc_finish: summary; exit status 0 only if every subcase passed.
xc_finish() {
	echo "subcases: $XC_PASS passed, $XC_FAIL failed"
	[ $XC_FAIL -eq 0 ] && return 0
	echo "failed: ${XC_FAILED[*]}"
	return 1
}

# xc_rping LABEL PORT COUNT [SIZE]: rping -s in A, rping -c -v -V -C COUNT
# in B; the client must print COUNT verified "ping data" lines.
xc_rping() {
	local label=$1 port=$2 count=$3 size=${4:-} sz=() n rc=0 why
	xc_give_up "$label" && return 0
	[ -n "$size" ] && sz=(-S "$size")
	local t=$((60 * XIW_TMUL))
	if xiw_pair "$(safe_label "$label")" "$port" "$t" \
		env "${XC_ENV[@]}" "${XC_SENV[@]}" "$XIWRUN" rping -s -a "$XIW_IP_A" -p "$port" "${sz[@]}" -- \
		env "${XC_ENV[@]}" "${XC_CENV[@]}" "$XIWRUN" rping -c -a "$XIW_IP_A" -p "$port" -v -V -C "$count" "${sz[@]}"; then
		n=$(grep -c '^ping data: ' "$XIW_PAIR_CLOG" || true)
		if [ "$n" -eq "$count" ]; then
			why="$count pings, data verified"
		else
			rc=1
			why="client printed $n of $count ping lines"
		fi
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "$label" "$rc" "$why"
}

# xc_perftest LABEL PORT PROG KIND(bw|lat) ARGS...: PROG -R -F -p PORT ARGS
# in A (server) and in B (client, + server address).
xc_perftest() {
	local label=$1 port=$2 prog=$3 kind=$4 rc=0 v why unit
	xc_give_up "$label" && return 0
	shift 4
	local t=$((45 * XIW_TMUL)) ok=0 try retried=""
	for try in 1 2; do
		if xiw_pair "$(safe_label "$label")" "$port" "$t" \
			env "${XC_ENV[@]}" "${XC_SENV[@]}" "$XIWRUN" "$prog" -R -F -p "$port" "$@" -- \
			env "${XC_ENV[@]}" "${XC_CENV[@]}" "$XIWRUN" "$prog" -R -F -p "$port" "$@" "$XIW_IP_A"; then
			ok=1
			break
		fi
		# perftest's own reconnect race (see xiw_pair_connect_race): once
		if [ $try != 1 ] || ! xiw_pair_connect_race; then break; fi
		retried="  (retried: 1st attempt hit perftest's reconnect race, REJECTED)"
		port=$((port + 1000))
	done
	if [ $ok = 1 ]; then
		if v=$(xiw_perftest_value "$XIW_PAIR_CLOG" "$kind"); then
			[ "$kind" = bw ] && unit="MB/s" || unit="usec typical"
			why="$v $unit$retried"
			# a stall, not a failure: flag it so it gets looked at
			if [ "$kind" = lat ] && awk -v v="$v" 'BEGIN { exit !(v > 1000) }'; then
				why="$why  (SLOW: typical latency above 1 ms)"
			fi
		else
			rc=1
			why="(no result line after the #bytes header in the client output)"
		fi
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "$label" "$rc" "$why"
}

# xc_rdma_cm_example LABEL PORT: rdma_server / rdma_client.
xc_rdma_cm_example() {
	local label=$1 port=$2 rc=0 why
	xc_give_up "$label" && return 0
	local t=$((30 * XIW_TMUL))
	if xiw_pair "$(safe_label "$label")" "$port" "$t" \
		env "${XC_ENV[@]}" "${XC_SENV[@]}" "$XIWRUN" rdma_server -s "$XIW_IP_A" -p "$port" -- \
		env "${XC_ENV[@]}" "${XC_CENV[@]}" "$XIWRUN" rdma_client -s "$XIW_IP_A" -p "$port"; then
		why="send/recv exchanged"
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "$label" "$rc" "$why"
}

safe_label() {
	printf '%s' "$1" | tr -c 'A-Za-z0-9_.-' '_'
}

# xc_clients_main MODE BASEPORT: the whole client matrix for one mode:
#   plain    no knobs
#   crc      XIW_MPA_CRC=1 on both sides
#   markers  XIW_MPA_MARKERS=1 on both sides
xc_clients_main() {
	local mode=${1:?} base=${2:?} rc=0 p prog
	case $mode in
	plain) XC_ENV=() ;;
	crc) XC_ENV=(XIW_MPA_CRC=1) ;;
	markers) XC_ENV=(XIW_MPA_MARKERS=1) ;;
	*) echo "FAIL: unknown mode '$mode'"; return 1 ;;
	esac
	xc_need_xiwarp || return 1
	xc_need_progs rping rdma_server rdma_client ib_write_bw ib_read_bw \
		ib_send_bw ib_write_lat ib_read_lat ib_send_lat || return $?
	xc_setup "cl$mode" || return $?
	echo "mode $mode: knobs on both sides: ${XC_ENV[*]:-(none)}"

	p=$base
	xc_rping "$mode/rping -C 200" "$p" 200
	p=$((p + 1))
	# bw: the default size (64 KiB) and a small one; lat: the default
	# (2 bytes) and 64 KiB. -n keeps each run short.
	for prog in ib_write_bw ib_read_bw ib_send_bw; do
		xc_perftest "$mode/$prog" "$p" "$prog" bw -n 200
		p=$((p + 1))
		xc_perftest "$mode/$prog -s 4096" "$p" "$prog" bw -n 200 -s 4096
		p=$((p + 1))
	done
	for prog in ib_write_lat ib_read_lat ib_send_lat; do
		xc_perftest "$mode/$prog" "$p" "$prog" lat -n 100
		p=$((p + 1))
		xc_perftest "$mode/$prog -s 65536" "$p" "$prog" lat -n 100 -s 65536
		p=$((p + 1))
	done
	xc_rdma_cm_example "$mode/rdma_server+client" "$p"
	xc_finish || rc=$?
	return $rc
}
