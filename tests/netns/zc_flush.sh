#!/usr/bin/env bash
# timeout: 120
# zc_flush.sh — a WR whose payload went with MSG_ZEROCOPY must not complete
# (WC of any status, FLUSH_ERR included) while the kernel can still
# transmit from its buffer (tests/netns/xiw_zcflush).
#
# The server stops itself (SIGSTOP) right after accepting, so its window
# closes and the client's zero-copy WRITEs (256 KB, XIW_ZCOPY_FORCE=1 so
# veth's copy report does not switch zero-copy off) sit in the client's
# TCP send queue, their pages pinned. The client moves the QP to ERROR,
# takes every WC and at once overwrites its buffer with 'B'. Then the
# server is continued and reads until the connection ends: no 'B' byte may
# reach its memory. The engine aborts the connection (RST) on the move to
# ERROR and waits for the kernel's release notifications before it
# completes those WRs; before that fix the queued bytes went out after the
# flush, read from the reused buffer.
# Cases: copy and ack completion mode.
# Environment: BUILD (default build). Exit: 0 pass, 1 fail, 77 skip.
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
BIN=$ROOT/$BUILD/tests/netns/xiw_zcflush

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: zc_flush.sh needs root for network namespaces"
	exit 77
fi
if [ ! -x "$BIN" ]; then
	echo "FAIL: $BIN missing: make $BUILD/tests/netns/xiw_zcflush"
	exit 1
fi
# shellcheck source=scripts/netns.sh
. "$ROOT/scripts/netns.sh"
prefix=$(xiw_netns_prefix zcf)
xiw_netns_trap "$prefix"
xiw_netns_up "$prefix" || exit $?
LOGDIR=$(mktemp -d /tmp/xiw-zcf.XXXXXX)
XIW_CLEANUP_HOOKS+=("rm -rf '$LOGDIR'")

nfail=0
port=7790

zc_case() { # MODE
	local mode=$1 srv=$LOGDIR/$1.srv cli=$LOGDIR/$1.cli spid cpid i rc=0
	port=$((port + 1))
	xiw_bg A env XIW_TX_COMPLETION="$mode" "$BIN" -s -p $port >"$srv" 2>&1
	spid=$XIW_LAST_PID
	xiw_wait_listen A $port 10 "$spid" || { echo "FAIL: zc-$mode: no listener"; nfail=$((nfail + 1)); return; }
	xiw_bg B env XIW_TX_COMPLETION="$mode" XIW_ZCOPY_FORCE=1 XIW_LOG=info \
		"$BIN" -c "$XIW_IP_A" -p $port >"$cli" 2>&1
	cpid=$XIW_LAST_PID
	for ((i = 0; i < 200; i++)); do
		grep -q 'reused' "$cli" && break
		kill -0 "$cpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -CONT "$spid" 2>/dev/null
	xiw_wait_pid "$cpid" 30 || rc=1
	xiw_wait_pid "$spid" 30 || rc=1
	if [ $rc -eq 0 ] && grep -q 'reused' "$cli" && grep -q '^server: A=[0-9]* B=0$' "$srv"; then
		echo "PASS: zc-$mode: $(grep '^client:' "$cli"); $(grep '^server:' "$srv"): no byte of the reused buffer was sent"
	else
		echo "FAIL: zc-$mode: a zero-copy buffer was sent from after its WR completed (or the run failed)"
		for f in "$cli" "$srv"; do echo "--- $f"; tail -n 15 "$f"; done
		nfail=$((nfail + 1))
	fi
}

zc_case copy
zc_case ack

[ $nfail -eq 0 ] && { echo "zc_flush: all passed"; exit 0; }
echo "zc_flush: $nfail failed"
exit 1
