#!/usr/bin/env bash
# timeout: 60
# verbs_features.sh — verbs features on one real connection through
# xiwarp's libibverbs/librdmacm (tests/netns/verbs_features.c): async
# events (PORT_ACTIVE, QP_FATAL), query_device/query_qp, SEND_WITH_IMM,
# RFC 7306 atomics, ibv_resize_cq, ibv_rereg_mr.
#
# Both ends are in the program: a private network namespace (only lo,
# so xiw_lo) when it can, the host's loopback otherwise.
#
# Environment: BUILD (default build; build/san for the sanitizer tier),
#   VERBS_FEATURES_ADDR (default 127.0.0.1).
# Exit: 0 pass, 1 fail, 77 skip (binary not built).
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
case $BUILD in
/*) BIN=$BUILD/tests/netns/verbs_features ;;
*) BIN=$ROOT/$BUILD/tests/netns/verbs_features ;;
esac
DEV=${VERBS_FEATURES_ADDR:-127.0.0.1}

if [ ! -x "$BIN" ]; then
	echo "SKIP: $BIN not built (make tests)"
	exit 77
fi

# The binary finds its libraries through its rpath ($ORIGIN/../../lib).
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null &&
	unshare -n true 2>/dev/null; then
	echo "running $BIN $DEV in a private network namespace"
	exec unshare -n sh -c 'ip link set lo up 2>/dev/null; exec "$0" "$1"' "$BIN" "$DEV"
fi
echo "running $BIN $DEV on the host"
exec "$BIN" "$DEV"
