#!/usr/bin/env bash
# The ACK tracer's state as the host's bpftool sees it (issue 10, item 3):
# ack-mode rping runs under `ip netns exec` (a private mount view with its
# own /sys), yet the maps are pinned in the host's /sys/fs/bpf/xiwarp
# (bpffs is mounted there if it was missing), and
# `bpftool map dump pinned /sys/fs/bpf/xiwarp/xiw_sk_view2` lists the
# registered sockets of both processes with their field names (BTF), and
# a pair that finished by itself leaves no entry behind.
# Exit 0 pass, 1 fail, 77 skip (not root, no netns, no sockops here).
# timeout: 120
set -uo pipefail
# shellcheck source=tests/netns/lib_clients.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_clients.sh"

VIEW=/sys/fs/bpf/xiwarp/xiw_sk_view2
xc_need_xiwarp || exit 1
xc_need_progs rping bpftool || exit $?
xc_setup vbpin || exit $?

port=18690
xiw_bg A env XIW_TX_COMPLETION=ack XIW_LOG=info "$XIWRUN" rping -s -a "$XIW_IP_A" -p $port \
	>"$XIW_LOGDIR/srv.log" 2>&1
spid=$XIW_LAST_PID
xiw_wait_listen A $port 10 "$spid" || { echo "FAIL: rping server did not listen"; exit 1; }
xiw_bg B env XIW_TX_COMPLETION=ack XIW_LOG=info "$XIWRUN" rping -c -a "$XIW_IP_A" -p $port \
	-C 1000000 >"$XIW_LOGDIR/cli.log" 2>&1
cpid=$XIW_LAST_PID

# both processes registered their socket once it carried a round trip
ok=0
for ((i = 0; i < 50; i++)); do
	sleep 0.2
	bpftool map dump pinned "$VIEW" >"$XIW_LOGDIR/dump.json" 2>"$XIW_LOGDIR/dump.err" || continue
	if grep -q "\"owner\": $spid," "$XIW_LOGDIR/dump.json" &&
		grep -q "\"owner\": $cpid," "$XIW_LOGDIR/dump.json"; then
		ok=1
		break
	fi
done
xiw_stop "$cpid" 2 >/dev/null 2>&1
xiw_stop "$spid" 2 >/dev/null 2>&1
if grep -q 'ACK tracing unavailable' "$XIW_LOGDIR/srv.log"; then
	echo "SKIP: the sockops tracer cannot load here:"
	grep 'ACK tracing unavailable' "$XIW_LOGDIR/srv.log"
	exit 77
fi
rc=0
if [ $ok = 1 ]; then
	echo "PASS  host bpftool lists both processes' sockets from $VIEW"
else
	echo "FAIL  no entries for server pid $spid and client pid $cpid in $VIEW"
	cat "$XIW_LOGDIR/dump.err" "$XIW_LOGDIR/dump.json" "$XIW_LOGDIR/srv.log" 2>/dev/null | tail -30
	rc=1
fi
for f in cookie bytes_acked watermark armed owner snd_una acks events; do
	grep -q "\"$f\":" "$XIW_LOGDIR/dump.json" ||
		{ echo "FAIL  field name '$f' missing (no BTF?)"; rc=1; }
done
[ $rc = 0 ] && echo "PASS  entries show field names (BTF): $(grep -c '"owner"' "$XIW_LOGDIR/dump.json") sockets"
if [ "$(stat -f -c %T /sys/fs/bpf)" != bpf_fs ]; then
	echo "FAIL  the host's /sys/fs/bpf is not a bpffs"
	rc=1
fi
# listed_while_running PID JSON: 1 if PID's socket shows up in the listing
# (dumped to JSON) before PID exits, within 5 s; else 0
listed_while_running() {
	local pid=$1 json=$2 i
	for ((i = 0; i < 50; i++)); do
		bpftool map dump pinned "$VIEW" >"$json" 2>/dev/null &&
			grep -q "\"owner\": $pid," "$json" && { echo 1; return; }
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo 0
}

# a pair that ends by itself (rping -C: both destroy their QPs and exit
# 0) leaves the listing: the engine deletes a socket's entry when it
# closes the stream (the program's own TCP_CLOSE callback would come after
# the process and its program are gone)
port=$((port + 1))
xiw_bg A env XIW_TX_COMPLETION=ack "$XIWRUN" rping -s -a "$XIW_IP_A" -p $port \
	>"$XIW_LOGDIR/srv2.log" 2>&1
spid=$XIW_LAST_PID
if xiw_wait_listen A $port 10 "$spid"; then
	xiw_bg B env XIW_TX_COMPLETION=ack "$XIWRUN" rping -c -a "$XIW_IP_A" -p $port \
		-C 2000 >"$XIW_LOGDIR/cli2.log" 2>&1
	cpid=$XIW_LAST_PID
	seen=$(listed_while_running "$cpid" "$XIW_LOGDIR/dump2.json")
	xiw_wait_pid "$cpid" 30; crc=$?
	xiw_wait_pid "$spid" 30; src=$?
	bpftool map dump pinned "$VIEW" >"$XIW_LOGDIR/dump3.json" 2>"$XIW_LOGDIR/dump3.err"
	left=$(grep -cE "\"owner\": ($spid|$cpid)," "$XIW_LOGDIR/dump3.json")
	if [ $crc = 0 ] && [ $src = 0 ] && [ "$left" = 0 ]; then
		echo "PASS  a finished pair leaves no entry behind (client listed while running: $seen)"
	else
		echo "FAIL  after rping -C 2000 (client exit $crc, server exit $src): $left entries of pids $spid/$cpid still listed"
		grep -B3 -A12 -E "\"owner\": ($spid|$cpid)," "$XIW_LOGDIR/dump3.json" | head -40
		rc=1
	fi
else
	echo "FAIL  second rping server did not listen"
	rc=1
fi
# a program that returns from main with its connection, QP and MRs still
# open (xiw_txmode's client does: no teardown at all) leaves no entry
# either: the library's destructor takes its sockets out of the listing.
# The server stops itself (-S) once connected, so the client's socket
# cannot reach TCP_CLOSE (the program's own delete) before the check:
# the peer's FIN comes only after SIGCONT. Ack mode completes the WRITEs
# on the server kernel's TCP ACKs meanwhile.
TXMODE="$BUILD/tests/netns/xiw_txmode"
port=$((port + 1))
xiw_bg A env XIW_TX_COMPLETION=ack "$XIWRUN" "$TXMODE" -s -S -p $port >"$XIW_LOGDIR/srv3.log" 2>&1
spid=$XIW_LAST_PID
if xiw_wait_listen A $port 10 "$spid"; then
	xiw_bg B env XIW_TX_COMPLETION=ack "$XIWRUN" "$TXMODE" -c "$XIW_IP_A" -p $port \
		-t lat -k 20 >"$XIW_LOGDIR/cli3.log" 2>&1
	cpid=$XIW_LAST_PID
	seen=$(listed_while_running "$cpid" "$XIW_LOGDIR/dump4.json")
	xiw_wait_pid "$cpid" $((30 * XIW_TMUL)); crc=$?
	bpftool map dump pinned "$VIEW" >"$XIW_LOGDIR/dump5.json" 2>/dev/null
	left=$(grep -cE "\"owner\": $cpid," "$XIW_LOGDIR/dump5.json")
	kill -CONT "$spid" 2>/dev/null	# reads the final SEND, checks the data
	xiw_wait_pid "$spid" $((30 * XIW_TMUL)); src=$?
	if [ $crc = 0 ] && [ $src = 0 ] && [ "$seen" = 1 ] && [ "$left" = 0 ]; then
		echo "PASS  a program that exits with its connection open leaves no entry behind"
	else
		echo "FAIL  xiw_txmode exited with its connection open (client exit $crc, server exit $src, client listed while running: $seen): $left entries of client pid $cpid still listed"
		tail -n 5 "$XIW_LOGDIR/cli3.log" "$XIW_LOGDIR/srv3.log"
		rc=1
	fi
else
	echo "FAIL  xiw_txmode server did not listen"
	rc=1
fi
perm=$(stat -c '%a %U' /sys/fs/bpf/xiwarp "$VIEW" | tr '\n' ' ')
echo "pins: /sys/fs/bpf/xiwarp and the maps: $perm(root only)"
exit $rc
