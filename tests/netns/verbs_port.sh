#!/usr/bin/env bash
# Device listing and port state as Debian's ibverbs-utils show them, and
# port events after open (issue 10, item 1), in namespace A of a veth pair:
#   ibv_devices / ibv_devinfo -l  exactly one device per interface with an
#                 address (xiw_lo, xiw_<veth>), the same names and GUIDs
#   ibv_devinfo -v  node GUID = EUI-64 of the interface MAC, iWARP, Ethernet,
#                 atomics, SRQ, memory windows, PORT_ACTIVE_EVENT, the
#                 extended flags repeating the classic ones, active_mtu
#                 following the interface MTU as it changes (1500, 2100,
#                 4200), PORT_DOWN while the interface has no carrier, no
#                 device while it is administratively down
#   ibv_asyncwatch  PORT_ACTIVE at open, PORT_ERR when the interface goes
#                 down (admin down; then carrier lost: the peer's end
#                 down), PORT_ACTIVE when it is back, nothing else (an
#                 MTU change is no port event)
# Exit 0 pass, 1 fail, 77 skip.
# timeout: 120
set -uo pipefail
# shellcheck source=tests/netns/lib_clients.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_clients.sh"

xc_need_xiwarp || exit 1
xc_need_progs ibv_devices ibv_devinfo ibv_asyncwatch python3 || exit $?
xc_setup vbport || exit $?

DEV=xiw_$XIW_IF_A
fails=0
ok() { printf 'PASS  %s\n' "$*"; }
bad() { printf 'FAIL  %s\n' "$*"; fails=$((fails + 1)); }

# value KEY FILE: the first "KEY: value" of ibv_devinfo output
value() { awk -v k="$1:" '$1 == k { print $2; exit }' "$2"; }

devinfo() { xiw_in A "$XIWRUN" ibv_devinfo "$@" 2>&1; }

# ---------------------------------------------------------------- listing
xiw_in A "$XIWRUN" ibv_devices >"$XIW_LOGDIR/devices" 2>&1
devinfo -l >"$XIW_LOGDIR/devinfo-l"
devinfo -v -d "$DEV" >"$XIW_LOGDIR/devinfo-v"
names_devices=$(awk 'NR > 2 && NF == 2 { print $1 }' "$XIW_LOGDIR/devices" | sort | xargs)
names_devinfo=$(awk '/HCAs? found/ { f = 1; next } f && NF { print $1 }' "$XIW_LOGDIR/devinfo-l" | sort | xargs)
want=$(printf '%s\n' xiw_lo "$DEV" | sort | xargs)
if [ "$names_devices" = "$want" ] && [ "$names_devinfo" = "$want" ]; then
	ok "ibv_devices and ibv_devinfo -l list the same devices: $want"
else
	bad "device lists: ibv_devices '$names_devices', ibv_devinfo -l '$names_devinfo', want '$want'"
	cat "$XIW_LOGDIR/devices" "$XIW_LOGDIR/devinfo-l"
fi

mac=$(xiw_in A cat "/sys/class/net/$XIW_IF_A/address")
eui=$(python3 -c 'import sys
m = [int(x, 16) for x in sys.argv[1].split(":")]
g = [m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]]
print("%02x%02x:%02x%02x:%02x%02x:%02x%02x" % tuple(g))' "$mac")
guid_v=$(value node_guid "$XIW_LOGDIR/devinfo-v")
guid_l=$(awk -v d="$DEV" '$1 == d { print $2 }' "$XIW_LOGDIR/devices")
if [ "$guid_v" = "$eui" ] && [ "$guid_l" = "${eui//:/}" ] &&
	[ "$(value sys_image_guid "$XIW_LOGDIR/devinfo-v")" = "$eui" ]; then
	ok "node GUID $eui = EUI-64 of $mac (ibv_devinfo -v, ibv_devices)"
else
	bad "GUID: devinfo '$guid_v', ibv_devices '$guid_l', EUI-64 of $mac is '$eui'"
fi

# ---------------------------------------------------- ibv_devinfo -v fields
check_field() {	# KEY EXPECTED (exact match of the first word)
	local v
	v=$(value "$1" "$XIW_LOGDIR/devinfo-v")
	[ "$v" = "$2" ] || { bad "ibv_devinfo -v $1: '$v', want '$2'"; return 1; }
}
n0=$fails
check_field transport iWARP
check_field link_layer Ethernet
check_field atomic_cap ATOMIC_HCA
check_field state PORT_ACTIVE
check_field phys_port_cnt 1
for k in max_srq max_srq_wr max_mw max_qp_rd_atom; do
	v=$(value "$k" "$XIW_LOGDIR/devinfo-v")
	[ "${v:-0}" -gt 0 ] 2>/dev/null || bad "ibv_devinfo -v $k: '$v', want > 0"
done
for f in PORT_ACTIVE_EVENT SRQ_RESIZE MEM_WINDOW MEM_WINDOW_TYPE_2B; do
	grep -qE "^[[:space:]]+$f\$" "$XIW_LOGDIR/devinfo-v" ||
		bad "ibv_devinfo -v: device_cap_flags without $f"
done
flags=$(value device_cap_flags "$XIW_LOGDIR/devinfo-v")
flags_ex=$(value device_cap_flags_ex "$XIW_LOGDIR/devinfo-v")
if [ -z "$flags" ] || [ -z "$flags_ex" ] || [ $((flags)) -ne $((flags_ex)) ]; then
	bad "device_cap_flags '$flags' but device_cap_flags_ex '$flags_ex'"
fi
[ $fails = "$n0" ] && ok "ibv_devinfo -v: iWARP, Ethernet, ATOMIC_HCA, SRQ (+ resize), MW type 2B, PORT_ACTIVE_EVENT, flags $flags = flags_ex"

# active_mtu follows the interface MTU (the IB enum at or below it)
n0=$fails
for m in 1500:1024 2100:2048 4200:4096 1500:1024; do
	xiw_in A ip link set dev "$XIW_IF_A" mtu "${m%%:*}"
	devinfo -d "$DEV" >"$XIW_LOGDIR/devinfo-mtu"
	v=$(value active_mtu "$XIW_LOGDIR/devinfo-mtu")
	[ "$v" = "${m##*:}" ] || bad "interface MTU ${m%%:*}: active_mtu '$v', want ${m##*:}"
done
[ $fails = "$n0" ] && ok "active_mtu follows the interface MTU (1500 -> 1024, 2100 -> 2048, 4200 -> 4096)"

# ------------------------------------------------------------ port events
xiw_bg A "$XIWRUN" ibv_asyncwatch -d "$DEV" >"$XIW_LOGDIR/watch" 2>&1
wpid=$XIW_LAST_PID

# count_ev NAME: events of that type printed so far
count_ev() { grep -c "event_type IBV_EVENT_$1 ([0-9]*), port 1" "$XIW_LOGDIR/watch"; }
# wait_ev NAME N: until N such events were printed (10 s)
wait_ev() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(count_ev "$1")" -ge "$2" ] && return 0
		kill -0 "$wpid" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
port_state() {
	devinfo -d "$DEV" >"$XIW_LOGDIR/devinfo-st"
	value state "$XIW_LOGDIR/devinfo-st"
}

n0=$fails
wait_ev PORT_ACTIVE 1 || bad "no IBV_EVENT_PORT_ACTIVE at open"
# admin down, then up
xiw_in A ip link set dev "$XIW_IF_A" down
wait_ev PORT_ERR 1 || bad "no IBV_EVENT_PORT_ERR after 'ip link set $XIW_IF_A down'"
# an interface that is administratively down has no device (the list
# holds interfaces that are up with an address); open contexts stay
devinfo -l >"$XIW_LOGDIR/devinfo-l-down"
grep -qw "$DEV" "$XIW_LOGDIR/devinfo-l-down" &&
	bad "interface down: ibv_devinfo -l still lists $DEV"
xiw_in A ip link set dev "$XIW_IF_A" up
wait_ev PORT_ACTIVE 2 || bad "no second IBV_EVENT_PORT_ACTIVE after 'ip link set $XIW_IF_A up'"
st=$(port_state)
[ "$st" = PORT_ACTIVE ] || bad "interface up again: ibv_devinfo state '$st', want PORT_ACTIVE"
# carrier lost: the other end of the veth goes down
xiw_in B ip link set dev "$XIW_IF_B" down
wait_ev PORT_ERR 2 || bad "no IBV_EVENT_PORT_ERR when the peer's end went down (no carrier)"
st=$(port_state)
[ "$st" = PORT_DOWN ] || bad "no carrier: ibv_devinfo state '$st', want PORT_DOWN"
xiw_in B ip link set dev "$XIW_IF_B" up
wait_ev PORT_ACTIVE 3 || bad "no IBV_EVENT_PORT_ACTIVE when the carrier came back"
# an MTU change is not a port event; give a stray event time to show
xiw_in A ip link set dev "$XIW_IF_A" mtu 1400
xiw_in A ip link set dev "$XIW_IF_A" mtu 1500
sleep 0.5
xiw_stop "$wpid" 1 >/dev/null 2>&1
na=$(count_ev PORT_ACTIVE)
ne=$(count_ev PORT_ERR)
nall=$(grep -c 'event_type' "$XIW_LOGDIR/watch")
if [ "$na" = 3 ] && [ "$ne" = 2 ] && [ "$nall" = 5 ]; then
	[ $fails = "$n0" ] && ok "ibv_asyncwatch: PORT_ACTIVE at open, PORT_ERR/PORT_ACTIVE on admin down/up and carrier loss/return (5 events, none else); ibv_devinfo: PORT_DOWN without carrier, no device while down"
else
	bad "ibv_asyncwatch saw $na PORT_ACTIVE, $ne PORT_ERR, $nall events in all; want 3, 2, 5"
fi
[ $fails = "$n0" ] || sed 's/^/    | /' "$XIW_LOGDIR/watch"

echo "subcases failed: $fails"
[ $fails = 0 ]
