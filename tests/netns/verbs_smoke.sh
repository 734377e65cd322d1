#!/usr/bin/env bash
# timeout: 60
# verbs_smoke.sh — the verbs object life cycle on xiwarp's libibverbs
# (tests/netns/verbs_smoke.c): device, PD, MR, channel, CQ, RC QP,
# RESET -> INIT -> ERR with a flushed receive and a CQ event, refusals of
# UD/SRQ/cq_ex, and fio's destroy order (CQ before QP: EBUSY).
#
# It needs no peer, so it runs in a private network namespace when it can
# (only lo, so xiw_lo is there) and on the host's xiw_lo otherwise.
#
# Environment: BUILD (default build; build/san for the sanitizer tier),
#   VERBS_SMOKE_DEV (default xiw_lo).
# Exit: 0 pass, 1 fail, 77 skip (binary not built).
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
case $BUILD in
/*) BIN=$BUILD/tests/netns/verbs_smoke ;;
*) BIN=$ROOT/$BUILD/tests/netns/verbs_smoke ;;
esac
DEV=${VERBS_SMOKE_DEV:-xiw_lo}

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
