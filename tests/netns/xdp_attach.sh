#!/usr/bin/env bash
# xiw_xdp on a veth between two namespaces, attached three ways: xiwctl in
# native mode, xiwctl in generic mode, and `ip link set dev IF xdp obj
# ... sec xdp.frags`. Each time kernel TCP across the veth must still work
# (a socat transfer, data verified: nothing registered, so everything is
# XDP_PASS), `xiwctl stat` must show the passed counter moved and nothing
# steered, and detach must leave the interface without XDP. Also the
# errors: unknown interface, a mode change while attached, stat without a
# program. Only the veth pair this script creates is touched.
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

# transfer NAME: 8 MiB from B to A over kernel TCP, compared by sha256
port=7300
transfer() {
	local name=$1 spid got
	port=$((port + 1))
	rm -f "$TMP/out"
	xiw_bg A socat -u "TCP-LISTEN:$port,reuseaddr" "OPEN:$TMP/out,creat,trunc" \
		>"$TMP/srv.log" 2>&1
	spid=$XIW_LAST_PID
	if ! xiw_wait_listen A "$port" 10 "$spid"; then
		bad "$name: socat server did not listen"
		return
	fi
	if ! xiw_in B timeout 60 socat -u "OPEN:$TMP/in" "TCP:$XIW_IP_A:$port" \
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

# --- errors that say what to do
if out=$(xiw_in A "$XIWCTL" attach nosuch0 2>&1); then
	bad "attach to a missing interface succeeded"
elif grep -q "no interface 'nosuch0'" <<<"$out"; then
	ok "attach nosuch0: $out"
else
	bad "attach nosuch0: unexpected message: $out"
fi
xiw_in A "$XIWCTL" attach --help | grep -q 'xdp obj' && ok "attach --help" || bad "attach --help"

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
	detach_check A "$XIW_IF_A" "native"
else
	bad "native: xiwctl attach failed"
fi

# --- 2. xiwctl, generic mode
if xiw_in A "$XIWCTL" attach "$XIW_IF_A" --mode generic; then
	xiw_in A "$XIWCTL" stat "$XIW_IF_A" | grep -q 'generic mode' &&
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
