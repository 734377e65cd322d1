#!/usr/bin/env bash
# xiw_xdp on a veth between two namespaces, attached three ways: xiwctl in
# native mode, xiwctl in generic mode, and `ip link set dev IF xdp obj
# ... sec xdp.frags`. Each time kernel TCP across the veth must still work
# (a socat transfer, data verified: nothing registered, so everything is
# XDP_PASS), `xiwctl stat` must show the passed counter moved and nothing
# steered, and detach must leave the interface without XDP. Also the
# errors: unknown interface, a mode change while attached, stat without a
# program. A flow registered by hand (bpftool) without an AF_XDP socket
# is found on real frames and falls back to XDP_PASS. Only the veth pair
# this script creates is touched.
# (No `cmd | grep -q` here: with pipefail, grep's early exit can fail the
# pipeline through SIGPIPE; outputs are captured first.)
# Exit 0 pass, 1 fail, 77 skip (not root / no netns / not built / no socat).
# timeout: 180
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
# shellcheck source=scripts/netns.sh
. "$ROOT/scripts/netns.sh"

BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
XIWCTL="$BUILD/bin/xiwctl"
OBJ="$BUILD/bpf/xiw_xdp.bpf.o"
[ -x "$XIWCTL" ] || { echo "SKIP: $XIWCTL not built (make tools)"; exit 77; }
[ -r "$OBJ" ] || { echo "SKIP: $OBJ not built (make bpf)"; exit 77; }
command -v socat >/dev/null || { echo "SKIP: socat not installed (scripts/deps.sh)"; exit 77; }

prefix=$(xiw_netns_prefix xdp)
xiw_netns_trap "$prefix"
xiw_netns_up "$prefix" || exit $?

TMP=$(mktemp -d /tmp/xiw-xdp.XXXXXX)
XIW_CLEANUP_HOOKS+=("rm -rf '$TMP'")
head -c $((8 * 1024 * 1024)) /dev/urandom >"$TMP/in"
want=$(sha256sum <"$TMP/in" | cut -d' ' -f1)

fails=0
ok() { echo "PASS  $*"; }
bad() { echo "FAIL  $*"; fails=$((fails + 1)); }

# transfer NAME [SRCPORT]: 8 MiB from B to A over kernel TCP, compared
# by sha256 (the client binds SRCPORT if given)
port=7300
transfer() {
	local name=$1 src=${2:+,sourceport=$2,reuseaddr} spid got
	port=$((port + 1))
	rm -f "$TMP/out"
	xiw_bg A socat -u "TCP-LISTEN:$port,reuseaddr" "OPEN:$TMP/out,creat,trunc" \
		>"$TMP/srv.log" 2>&1
	spid=$XIW_LAST_PID
	if ! xiw_wait_listen A "$port" 10 "$spid"; then
		bad "$name: socat server did not listen"
		return
	fi
	if ! xiw_in B timeout 60 socat -u "OPEN:$TMP/in" "TCP:$XIW_IP_A:$port$src" \
		>"$TMP/cli.log" 2>&1; then
		bad "$name: socat client failed: $(tail -n2 "$TMP/cli.log")"
		xiw_stop "$spid" 1 || true
		return
	fi
	xiw_wait_pid "$spid" 20 || true
	got=$(sha256sum <"$TMP/out" | cut -d' ' -f1)
	if [ "$got" = "$want" ]; then
		ok "$name: 8 MiB over kernel TCP, data verified"
	else
		bad "$name: received data differs ($(stat -c %s "$TMP/out") bytes)"
	fi
}

# counter SIDE IF NAME: one value from `xiwctl stat IF` ("all counters")
counter() {
	xiw_in "$1" "$XIWCTL" stat "$2" 2>/dev/null |
		grep -oE "(^| )$3=[0-9]+" | head -n1 | cut -d= -f2
}

# xdp_prog SIDE IF: the id of the XDP program on IF ("" if none)
xdp_prog() {
	xiw_in "$1" ip -d link show dev "$2" | grep -oE 'prog/xdp id [0-9]+' |
		grep -oE '[0-9]+$'
}

# check_pass SIDE IF NAME: a transfer works and moved passed, not steered
check_pass() {
	local side=$1 ifc=$2 name=$3 p0 p1 s1 m1
	p0=$(counter "$side" "$ifc" passed)
	transfer "$name"
	p1=$(counter "$side" "$ifc" passed)
	s1=$(counter "$side" "$ifc" steered)
	m1=$(counter "$side" "$ifc" malformed)
	if [ -n "$p0" ] && [ -n "$p1" ] && [ "$p1" -gt "$p0" ] &&
		[ "$s1" = 0 ] && [ "$m1" = 0 ]; then
		ok "$name: xiwctl stat: passed $p0 -> $p1, steered 0, malformed 0"
	else
		bad "$name: counters: passed '$p0' -> '$p1', steered '$s1', malformed '$m1'"
		xiw_in "$side" "$XIWCTL" stat "$ifc" | sed 's/^/    | /'
	fi
}

# detach_check SIDE IF NAME
detach_check() {
	local side=$1 ifc=$2 name=$3
	if xiw_in "$side" "$XIWCTL" detach "$ifc" && [ -z "$(xdp_prog "$side" "$ifc")" ]; then
		ok "$name: xiwctl detach removed it"
	else
		bad "$name: xiwctl detach failed or left a program: $(xiw_in "$side" ip -d link show dev "$ifc" | grep xdp)"
	fi
	if xiw_in "$side" "$XIWCTL" stat "$ifc" >/dev/null 2>&1; then
		bad "$name: xiwctl stat succeeds without a program"
	fi
}

# le32 V / be16 V / IPv4 A.B.C.D as hex octets for bpftool
le32() { printf '%02x %02x %02x %02x' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }
be16() { printf '%02x %02x' $((($1 >> 8) & 255)) $(($1 & 255)); }
ip4() { local IFS=.; set -- $1; printf '%02x %02x %02x %02x' "$1" "$2" "$3" "$4"; }

# register_flow_check: put the next transfer's 4-tuple into A's flow map
# (bpftool, map found by id from the program on xiwa) while no AF_XDP
# socket exists: the program finds the flow on real frames, falls back to
# XDP_PASS (no_xsk counts them) and kernel TCP still gets every byte.
register_flow_check() {
	local prog map m key val n0 n1 sport=7399 zeros12
	if ! command -v bpftool >/dev/null; then
		echo "note: bpftool missing: registered-flow check skipped"
		return
	fi
	prog=$(xdp_prog A "$XIW_IF_A")
	map=""
	for m in $(xiw_in A bpftool prog show id "$prog" | grep -oE 'map_ids [0-9,]+' | grep -oE '[0-9]+'); do
		if grep -q 'name xiw_flows ' <<<"$(xiw_in A bpftool map show id "$m")"; then
			map=$m
		fi
	done
	if [ -z "$map" ]; then
		bad "registered flow: no xiw_flows map on prog $prog"
		return
	fi
	zeros12="00 00 00 00 00 00 00 00 00 00 00 00"
	key="$(ip4 "$XIW_IP_B") $zeros12 $(ip4 "$XIW_IP_A") $zeros12 $(be16 $sport) $(be16 $((port + 1))) 04 00 00 00"
	# conn_id flags xsk mpa_seq0 fpdu_seq fpdu_state packets bytes (ABI 2)
	val="$(le32 77) $(le32 1) ff ff ff ff $(le32 0) $(le32 0) $(le32 0) 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
	# shellcheck disable=SC2086 # one hex octet per word
	if ! xiw_in A bpftool map update id "$map" key hex $key value hex $val; then
		bad "registered flow: bpftool map update failed"
		return
	fi
	grep -qE "^ +77 +$XIW_IP_B:$sport +$XIW_IP_A:$((port + 1)) +aligned" <<<"$(xiw_in A "$XIWCTL" stat "$XIW_IF_A")" &&
		ok "registered flow: xiwctl stat lists connection 77" ||
		{ bad "registered flow: not in xiwctl stat"; xiw_in A "$XIWCTL" stat "$XIW_IF_A" | sed 's/^/    | /'; }
	n0=$(counter A "$XIW_IF_A" no_xsk)
	transfer "registered flow, no AF_XDP socket" "$sport"
	n1=$(counter A "$XIW_IF_A" no_xsk)
	if [ -n "$n0" ] && [ -n "$n1" ] && [ "$n1" -gt "$n0" ] &&
		[ "$(counter A "$XIW_IF_A" steered)" = 0 ]; then
		ok "registered flow: found on real frames, no socket: no_xsk $n0 -> $n1, passed to the kernel"
	else
		bad "registered flow: no_xsk '$n0' -> '$n1'"
		xiw_in A "$XIWCTL" stat "$XIW_IF_A" | sed 's/^/    | /'
	fi
}

# --- errors that say what to do
if out=$(xiw_in A "$XIWCTL" attach nosuch0 2>&1); then
	bad "attach to a missing interface succeeded"
elif grep -q "no interface 'nosuch0'" <<<"$out"; then
	ok "attach nosuch0: $out"
else
	bad "attach nosuch0: unexpected message: $out"
fi
grep -q 'xdp obj' <<<"$(xiw_in A "$XIWCTL" attach --help)" && ok "attach --help" || bad "attach --help"

# --- 1. xiwctl, native mode
if xiw_in A "$XIWCTL" attach "$XIW_IF_A" --mode native; then
	[ -n "$(xdp_prog A "$XIW_IF_A")" ] && ok "native: attached ($(xiw_in A ip -d link show dev "$XIW_IF_A" | grep -o 'prog/xdp.*tag'))" ||
		bad "native: xiwctl said attached, ip link shows no program"
	if xiw_in A "$XIWCTL" attach "$XIW_IF_A" --mode generic >/dev/null 2>&1; then
		bad "native: a second attach in another mode succeeded"
	else
		ok "native: a second attach in generic mode is refused"
	fi
	check_pass A "$XIW_IF_A" "native"
	register_flow_check
	detach_check A "$XIW_IF_A" "native"
else
	bad "native: xiwctl attach failed"
fi

# --- 2. xiwctl, generic mode
if xiw_in A "$XIWCTL" attach "$XIW_IF_A" --mode generic; then
	grep -q 'generic mode' <<<"$(xiw_in A "$XIWCTL" stat "$XIW_IF_A")" &&
		ok "generic: stat reports generic mode" || bad "generic: stat does not say generic"
	check_pass A "$XIW_IF_A" "generic"
	detach_check A "$XIW_IF_A" "generic"
else
	bad "generic: xiwctl attach failed"
fi

# --- 3. iproute2 (no xiwctl in the attach path; no bpffs in ip netns exec)
if xiw_in B ip link set dev "$XIW_IF_B" xdp obj "$OBJ" sec xdp.frags; then
	ok "ip link: attached $(xiw_in B ip -d link show dev "$XIW_IF_B" | grep -o 'prog/xdp id [0-9]* name [a-z_]*')"
	check_pass B "$XIW_IF_B" "ip link"
	# --replace swaps the program (and here the mode) in one step
	old_id=$(xdp_prog B "$XIW_IF_B")
	if xiw_in B "$XIWCTL" attach "$XIW_IF_B" --replace --mode generic &&
		new_id=$(xdp_prog B "$XIW_IF_B") && [ -n "$new_id" ] &&
		[ "$new_id" != "$old_id" ] &&
		grep -q 'generic mode' <<<"$(xiw_in B "$XIWCTL" stat "$XIW_IF_B")"; then
		ok "ip link: xiwctl attach --replace: prog $old_id -> $new_id, generic mode"
	else
		bad "ip link: xiwctl attach --replace did not replace prog $old_id"
	fi
	detach_check B "$XIW_IF_B" "ip link"
else
	bad "ip link set dev $XIW_IF_B xdp obj $OBJ sec xdp.frags failed"
fi

# nothing left on either end
if [ -n "$(xdp_prog A "$XIW_IF_A")$(xdp_prog B "$XIW_IF_B")" ]; then
	bad "an XDP program is still attached"
fi
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
exit 0
