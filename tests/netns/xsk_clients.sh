#!/usr/bin/env bash
# The xsk transport (AF_XDP + utcp) with unmodified rdma-core clients
# between two namespaces on a veth pair, the xiw_xdp program attached to
# both ends (xiwctl attach, native mode), peer TX checksum offload off
# (kernel TCP frames would reach AF_XDP with partial checksums):
#   xsk on both sides, xsk server + ksock client, ksock server + xsk
#   client; each with MPA CRC off and on:
#   rping -v -V -C 200, ib_{write,read,send}_{bw,lat} -R, rdma_server/client.
# After each mode the XDP counters must show the traffic steered to AF_XDP
# on every xsk side and none on a ksock side, FPDU records written by the
# XDP program (parsed) and used by the engine (meta_used) on every xsk
# side with none rejected (meta_mismatch), and no process may have
# fallen back to ksock. One PASS/FAIL line per subcase; exit 0 only if all
# passed, 77 if namespaces, the clients or ethtool are unavailable.
# timeout: 1500
set -uo pipefail
# shellcheck source=tests/netns/lib_clients.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_clients.sh"

XIWCTL="$BUILD/bin/xiwctl"

# xk_cnt A|B NAME: counter NAME of xiwctl stat's "all counters:" line
# for that side's veth (steered, parsed, meta_used, meta_mismatch, ...).
xk_cnt() {
	local side=$1 name=$2 ifn v
	[ "$side" = A ] && ifn=$XIW_IF_A || ifn=$XIW_IF_B
	v=$(xiw_in "$side" "$XIWCTL" stat "$ifn" 2>/dev/null |
		sed -n "s/.*all counters:.* $name=\([0-9]*\).*/\1/p" | head -n 1)
	echo "${v:-0}"
}

# xk_steered A|B: the xiw_xdp "steered" counter of that side's veth.
xk_steered() { xk_cnt "$1" steered; }

# xk_meta_snap A|B: "parsed meta_used meta_mismatch no_fpdu" of that side.
xk_meta_snap() {
	echo "$(xk_cnt "$1" parsed) $(xk_cnt "$1" meta_used) $(xk_cnt "$1" meta_mismatch) $(xk_cnt "$1" no_fpdu)"
}

# xk_meta_check MODE SIDE XSK BEFORE AFTER: on an xsk side the XDP program
# must have written FPDU records (parsed) and the engine must have used
# them instead of decoding (meta_used), with no record rejected
# (meta_mismatch: veth loses and reorders nothing); on a ksock side none.
xk_meta_check() {
	local mode=$1 side=$2 xsk=$3 rc=0 p0 u0 m0 n0 p1 u1 m1 n1
	read -r p0 u0 m0 n0 <<<"$4"
	read -r p1 u1 m1 n1 <<<"$5"
	local why="side $side: parsed $((p1 - p0)), meta_used $((u1 - u0)), meta_mismatch $((m1 - m0)), no_fpdu $((n1 - n0))"
	if [ "$xsk" = 1 ]; then
		[ $((p1 - p0)) -gt 0 ] && [ $((u1 - u0)) -gt 0 ] &&
			[ $((m1 - m0)) -eq 0 ] || rc=1
	else
		[ $((p1 - p0)) -eq 0 ] && [ $((u1 - u0)) -eq 0 ] || rc=1
	fi
	xc_result "$mode/xdp-records-$side" "$rc" "$why"
}

# xk_setup: namespaces "xk-cl-PID-{a,b}", the XDP program on both ends.
xk_setup() {
	local rc=0 side ifn
	XC_PREFIX="xk-cl-$$"
	XIW_LOGDIR=$(mktemp -d /tmp/xk-clients.XXXXXX)
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
	for side in A B; do
		[ $side = A ] && ifn=$XIW_IF_A || ifn=$XIW_IF_B
		if ! xiw_in $side "$XIWCTL" attach "$ifn" --mode native; then
			echo "FAIL: xiwctl attach $ifn (namespace $side) failed"
			return 1
		fi
		xiw_in $side ethtool -K "$ifn" tx off >/dev/null 2>&1 ||
			{ echo "FAIL: ethtool -K $ifn tx off failed"; return 1; }
	done
	echo "namespaces $XIW_NS_A ($XIW_IP_A) <-> $XIW_NS_B ($XIW_IP_B), xiw_xdp on both veth ends, BUILD=$BUILD"
}

# xk_mode NAME BASEPORT: the client matrix with the current XC_*ENV, then
# the steering checks. XK_XSK_A / XK_XSK_B: 1 where that side runs xsk.
xk_mode() {
	local mode=$1 p=$2 a0 b0 a1 b1 ma0 mb0 why rc prog
	echo "-- $mode: server env: ${XC_ENV[*]} ${XC_SENV[*]}; client env: ${XC_ENV[*]} ${XC_CENV[*]}"
	a0=$(xk_steered A)
	b0=$(xk_steered B)
	ma0=$(xk_meta_snap A)
	mb0=$(xk_meta_snap B)
	xc_rping "$mode/rping -C 200" "$p" 200
	p=$((p + 1))
	for prog in ib_write_bw ib_read_bw ib_send_bw; do
		xc_perftest "$mode/$prog" "$p" "$prog" bw -n 200
		p=$((p + 1))
	done
	for prog in ib_write_lat ib_read_lat ib_send_lat; do
		xc_perftest "$mode/$prog" "$p" "$prog" lat -n 200
		p=$((p + 1))
	done
	xc_rdma_cm_example "$mode/rdma_server+client" "$p"
	a1=$(xk_steered A)
	b1=$(xk_steered B)
	xk_meta_check "$mode" A "$XK_XSK_A" "$ma0" "$(xk_meta_snap A)"
	xk_meta_check "$mode" B "$XK_XSK_B" "$mb0" "$(xk_meta_snap B)"
	rc=0
	why="steered to AF_XDP: server side $((a1 - a0)), client side $((b1 - b0)) frames"
	# a perftest 64 KB bandwidth run alone is > 1000 frames each way
	if [ "$XK_XSK_A" = 1 ] && [ $((a1 - a0)) -lt 1000 ]; then rc=1; fi
	if [ "$XK_XSK_B" = 1 ] && [ $((b1 - b0)) -lt 1000 ]; then rc=1; fi
	if [ "$XK_XSK_A" = 0 ] && [ $((a1 - a0)) -ne 0 ]; then rc=1; fi
	if [ "$XK_XSK_B" = 0 ] && [ $((b1 - b0)) -ne 0 ]; then rc=1; fi
	if grep -l 'use ksock (kernel TCP)' "$XIW_LOGDIR"/*.err 2>/dev/null | grep -q .; then
		rc=1
		why="$why; a process fell back to ksock: $(grep -h 'use ksock' "$XIW_LOGDIR"/*.err | head -n 1)"
	fi
	rm -f "$XIW_LOGDIR"/*.err
	xc_result "$mode/xdp-steering" "$rc" "$why"
}

main() {
	local crc base=17700 env
	xc_need_xiwarp || return 1
	xc_need_progs rping rdma_server rdma_client ib_write_bw ib_read_bw \
		ib_send_bw ib_write_lat ib_read_lat ib_send_lat ethtool || return $?
	[ -x "$XIWCTL" ] || { echo "FAIL: $XIWCTL missing: run 'make'"; return 1; }
	xk_setup || return $?
	for crc in 0 1; do
		env=(XIW_MPA_CRC=$crc)
		XC_ENV=("${env[@]}") XC_SENV=(XIW_TRANSPORT=xsk) XC_CENV=(XIW_TRANSPORT=xsk)
		XK_XSK_A=1 XK_XSK_B=1 xk_mode "crc$crc/xsk-both" $base
		base=$((base + 20))
		XC_ENV=("${env[@]}") XC_SENV=(XIW_TRANSPORT=xsk) XC_CENV=(XIW_TRANSPORT=ksock)
		XK_XSK_A=1 XK_XSK_B=0 xk_mode "crc$crc/xsk-server+ksock-client" $base
		base=$((base + 20))
		XC_ENV=("${env[@]}") XC_SENV=(XIW_TRANSPORT=ksock) XC_CENV=(XIW_TRANSPORT=xsk)
		XK_XSK_A=0 XK_XSK_B=1 xk_mode "crc$crc/ksock-server+xsk-client" $base
		base=$((base + 20))
	done
	xc_finish
}

main
