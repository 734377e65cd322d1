#!/usr/bin/env bash
# The xsk transport's receive path on app threads: a thread spinning on
# ibv_poll_cq takes its connection's frames off the port's AF_XDP RX ring
# itself (xsk_port_rx_poll, from the engine's app pass xiw_rx_poll) instead
# of waiting for the progress thread's wake-up. Between two namespaces on
# a veth pair, the xiw_xdp program on both ends, XIW_TRANSPORT=xsk on both
# sides, XIW_LOG=debug (each process logs at exit "rx frames N (by app
# threads M, ...)" per interface), XIW_POLL_NAP_AFTER_US=0: pollers yield
# but never nap (a poller that naps on a slow, loaded machine leaves
# every frame to the progress thread, and its passes back off: the
# engine's policy, the same for ksock; it would make this test a coin
# toss on a busy 2-vCPU VM):
#
#   fi_pingpong  libfabric verbs msg ping-pong, -S 8 and -S 4096, every
#                message's data checked (-c): must pass, and on both sides
#                app threads must have taken frames (M > 0)
#   send_lat     ib_send_lat -R -s 8: a result line, M > 0 on both sides
#   bw+lat       ib_send_bw -R -q 4 (four QPs on one port: several
#                connections share the ring the pollers drain) with
#                results, M > 0 on the side that polls (the client)
#   control      fi_pingpong -S 8 with XIW_POLL_RX=0 (the engine's app
#                passes off): it must still pass, with M = 0 on both sides
#                (the counter counts what it says)
#
# Exit 0 all passed, 1 some failed, 77 not root / no namespaces / no
# clients. Under the sanitizer tier (XIW_SAN=1) the same runs, shorter.
# timeout: 600
set -uo pipefail
# shellcheck source=tests/netns/lib_clients.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_clients.sh"

XIWCTL="$BUILD/bin/xiwctl"
AR_ENV=(XIW_TRANSPORT=xsk XIW_LOG=debug XIW_POLL_NAP_AFTER_US=0)
N=5000
[ "${XIW_SAN:-0}" = 1 ] && N=1000

# ar_setup: namespaces "xk-ar-PID-{a,b}", xiw_xdp on both ends, peer TX
# checksum offload off (kernel TCP frames would reach AF_XDP with partial
# checksums; the control connections of fi_pingpong are kernel TCP).
ar_setup() {
	local rc=0 side ifn
	xc_setup "xk-ar" || return $?
	for side in A B; do
		[ $side = A ] && ifn=$XIW_IF_A || ifn=$XIW_IF_B
		xiw_in $side "$XIWCTL" attach "$ifn" --mode native >/dev/null ||
			{ echo "FAIL: xiwctl attach $ifn (namespace $side) failed"; return 1; }
		xiw_in $side ethtool -K "$ifn" tx off >/dev/null 2>&1 ||
			{ echo "FAIL: ethtool -K $ifn tx off failed"; return 1; }
	done
	return $rc
}

# ar_frames LOG: "N M" (rx frames, of them by app threads) from the exit
# line the xsk port logs at XIW_LOG=debug; "- -" if absent.
ar_frames() {
	sed -n 's/.*xsk: [^:]*: rx frames \([0-9]*\) (by app threads \([0-9]*\),.*/\1 \2/p' \
		"$1" 2>/dev/null | tail -n 1 | grep . || echo "- -"
}

# ar_check LABEL OKRUN WANT_S WANT_C: judge a pair run; WANT_*: "some"
# (M > 0), "most" (M > N/2), "none" (M = 0), "any" for server / client.
ar_check() {
	local label=$1 ok=$2 ws=$3 wc=$4 rc=0 sn sm cn cm why side want n m
	read -r sn sm <<<"$(ar_frames "$XIW_PAIR_SERR")"
	read -r cn cm <<<"$(ar_frames "$XIW_PAIR_CERR")"
	why="server: rx frames $sn, by app threads $sm; client: $cn, $cm"
	[ "$ok" = 1 ] || { rc=1; why="$why; run failed ${XIW_PAIR_WHY:-}"; }
	for side in s c; do
		[ $side = s ] && { want=$ws; n=$sn; m=$sm; } || { want=$wc; n=$cn; m=$cm; }
		case $n$m in *-*) rc=1; why="$why; no counter line"; continue ;; esac
		case $want in
		some) [ "$m" -gt 0 ] || rc=1 ;;
		most) [ "$m" -gt 0 ] && [ $((2 * m)) -gt "$n" ] || rc=1 ;;
		none) [ "$m" -eq 0 ] || rc=1 ;;
		esac
	done
	xc_result "$label" "$rc" "$why"
}

# ar_fi LABEL PORT SIZE WANT [VAR=VALUE...]: fi_pingpong, data checked.
ar_fi() {
	local label=$1 port=$2 size=$3 want=$4 ok=0
	shift 4
	xc_give_up "$label" && return 0
	if xiw_pair "$(safe_label "$label")" "$port" $((60 * XIW_TMUL)) \
		env "${AR_ENV[@]}" "$@" "$XIWRUN" fi_pingpong -p verbs -e msg \
		-B "$port" -c -I "$N" -S "$size" -- \
		env "${AR_ENV[@]}" "$@" "$XIWRUN" fi_pingpong -p verbs -e msg \
		-P "$port" -c -I "$N" -S "$size" "$XIW_IP_A"; then
		awk '$1 ~ /^[0-9]+k?$/ && $2 ~ /k$|^[0-9]+$/ { f = 1 } END { exit !f }' \
			"$XIW_PAIR_CLOG" && ok=1
		[ $ok = 1 ] || XIW_PAIR_WHY="(no result line)"
	fi
	ar_check "$label" $ok "$want" "$want"
}

# ar_pt LABEL PORT PROG WANT_S WANT_C ARGS...: a perftest pair, result line.
ar_pt() {
	local label=$1 port=$2 prog=$3 ws=$4 wc=$5 ok=0 try
	shift 5
	xc_give_up "$label" && return 0
	for try in 1 2; do
		if xiw_pair "$(safe_label "$label")" "$port" $((60 * XIW_TMUL)) \
			env "${AR_ENV[@]}" "$XIWRUN" "$prog" -R -F -p "$port" "$@" -- \
			env "${AR_ENV[@]}" "$XIWRUN" "$prog" -R -F -p "$port" "$@" "$XIW_IP_A"; then
			awk '/^[ \t]*#bytes/ { h = 1; next } h && $1 ~ /^[0-9]+$/ { f = 1 } END { exit !f }' \
				"$XIW_PAIR_CLOG" && ok=1
			[ $ok = 1 ] || XIW_PAIR_WHY="(no result line)"
			break
		fi
		# perftest's own reconnect race (xiw_pair_connect_race): once
		{ [ $try = 1 ] && xiw_pair_connect_race; } || break
		port=$((port + 1000))
	done
	ar_check "$label" $ok "$ws" "$wc"
}

main() {
	local rc=0 p=$((20000 + $$ % 5000))
	xc_need_xiwarp || return 1
	xc_need_progs fi_pingpong ib_send_lat ib_send_bw ethtool || return $?
	[ -x "$XIWCTL" ] || { echo "FAIL: $XIWCTL missing: run 'make tools'"; return 1; }
	ar_setup || { rc=$?; return $rc; }
	ar_fi "fi_pingpong -S 8" "$p" 8 some
	ar_fi "fi_pingpong -S 4096" $((p + 1)) 4096 some
	ar_pt "ib_send_lat -s 8" $((p + 2)) ib_send_lat some some -s 8 -n "$N"
	# -n $N (above perftest's rx_depth of 512): its SEND credit protocol
	# runs (the server RDMA-WRITEs its receive count to the client's
	# slot of the same QP index every 170 receives), which needs the
	# server's k-th CONNECT_REQUEST to be the client's k-th connect
	# (XIW_CM_ORDER_MS) and hung on a cork-list race too (both fixed)
	ar_pt "ib_send_bw -q 4" $((p + 3)) ib_send_bw any some -q 4 -s 4096 -n "$N"
	ar_fi "control: XIW_POLL_RX=0" $((p + 4)) 8 none XIW_POLL_RX=0
	xc_finish
}

main
exit $?
