#!/usr/bin/env bash
# librdmacm drop-in API semantics (build/tests/netns/rdmacm_api, see its
# header): first over loopback (device xiw_lo, no root needed), then, if
# namespaces are available, inside one namespace on its veth address, so
# the source-route lookup and the device are a real interface's.
# Clients across two namespaces are clients_*.sh's job.
# Exit 0 pass, 1 fail, 77 skip (test program not built).
# timeout: 240
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
BUILD=${BUILD:-build}
case $BUILD in
/*) ;;
*) BUILD="$ROOT/$BUILD" ;;
esac
prog="$BUILD/tests/netns/rdmacm_api"
if [ ! -x "$prog" ]; then
	echo "SKIP: $prog not built (make tests)"
	exit 77
fi

rc=0
echo "== loopback"
timeout 90 "$prog" 127.0.0.1 || rc=1

# shellcheck source=scripts/netns.sh
. "$ROOT/scripts/netns.sh"
prefix=$(xiw_netns_prefix rdmacm)
xiw_netns_trap "$prefix"
xiw_netns_up "$prefix"
up=$?
if [ "$up" -eq 0 ]; then
	echo "== namespace $XIW_NS_A, $XIW_IP_A"
	xiw_in A timeout 90 "$prog" "$XIW_IP_A" || rc=1
else
	echo "(namespaces unavailable: loopback only)"
fi
exit $rc
