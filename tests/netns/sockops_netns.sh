#!/usr/bin/env bash
# The sockops ACK tracer inside a network namespace: `ip netns exec`
# remounts /sys, so no cgroup2 is visible there; the loader must still
# attach (through a temporary cgroup2 view) and trace real TCP, and leave
# no mount or directory behind.
# Exit 0 pass, 1 fail, 77 skip (not root / no netns / test not built).
# timeout: 120
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
# shellcheck source=scripts/netns.sh
. "$ROOT/scripts/netns.sh"

BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
TEST="$BUILD/tests/bpf/test_sockops"
[ -x "$TEST" ] || { echo "SKIP: $TEST not built (make tests)"; exit 77; }

prefix=$(xiw_netns_prefix sockops)
xiw_netns_trap "$prefix"
xiw_netns_up "$prefix" || exit $?

mounts_before=$(grep -c xiw-cgroup2 /proc/self/mountinfo)
rc=0
xiw_in A "$TEST" || rc=1
[ $rc -eq 0 ] && echo "PASS  test_sockops inside namespace $XIW_NS_A" \
	|| echo "FAIL  test_sockops inside namespace $XIW_NS_A"
if [ "$(grep -c xiw-cgroup2 /proc/self/mountinfo)" != "$mounts_before" ] ||
   compgen -G '/tmp/xiw-cgroup2.*' >/dev/null; then
	echo "FAIL  a temporary cgroup2 mount or directory was left behind"
	rc=1
fi
exit $rc
