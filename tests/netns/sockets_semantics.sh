#!/usr/bin/env bash
# TCP socket semantics under `xiwrun --sockets`: tests/netns/xiw_socktest
# (read/write, MSG_PEEK, MSG_DONTWAIT, O_NONBLOCK, readv/writev, sendfile,
# timeouts, TCP_NODELAY/TCP_INFO, select/poll/ppoll/epoll, dup/dup2,
# shutdown, accept4, a 24 MB mixed-size transfer with data checked, end of
# stream; fork after accept), first over kernel TCP (the same binary must
# pass there: the checks are TCP's own behaviour), then with both sides
# preloaded (must go over RDMA), with buffer copy only, and with fork.
# Exit 0 pass, 1 fail, 77 skip.
# timeout: 600
set -uo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_sockets.sh"

xs_need_sock || exit 1
T="$BUILD/tests/netns/xiw_socktest"
[ -x "$T" ] || { echo "FAIL: $T missing: run 'make tests'"; exit 1; }
xs_setup sem || exit $?

S=(env XIW_SOCK_LOG=1 "$XIWRUN" --sockets)

check_kernel() {
	if grep -q FAIL "$XIW_PAIR_CERR" "$XIW_PAIR_SERR"; then
		grep -h FAIL "$XIW_PAIR_CERR" "$XIW_PAIR_SERR" | head -2 | tr '\n' ' '
		return 1
	fi
	echo "all checks passed"
}
check_rdma() {
	local why
	why=$(xs_rdma_note) || { echo "$why"; return 1; }
	check_kernel
}
check_zc() {
	local out
	out=$(grep -ho 'zc_out [0-9]*' "$XIW_PAIR_CERR" "$XIW_PAIR_SERR" |
		awk '{ s += $2 } END { print s + 0 }')
	if [ "$out" -eq 0 ]; then
		echo "no byte went zero-copy (XIW_RS_STATS)"
		return 1
	fi
	check_rdma
}
check_fork() {
	local n
	n=$(grep -c 'accepted an RDMA connection' "$XIW_PAIR_SERR" || true)
	if [ "$n" -lt 4 ]; then
		echo "$n of 4 connections accepted over RDMA"
		return 1
	fi
	check_kernel
}

xs_run socktest/kernel-tcp 7601 120 check_kernel \
	"$T" server 7601 -- "$T" client "$XIW_IP_A" 7601
xs_run socktest/rdma 7602 180 check_rdma \
	"${S[@]}" "$T" server 7602 -- "${S[@]}" "$T" client "$XIW_IP_A" 7602
xs_run socktest/rdma-copy-only 7603 180 check_rdma \
	env XIW_RS_ZCOPY=0 "${S[@]}" "$T" server 7603 -- \
	env XIW_RS_ZCOPY=0 "${S[@]}" "$T" client "$XIW_IP_A" 7603
# Fixed 16 KB thresholds: the zero-copy paths (SinkAvail WRITE, SrcAvail
# READ) carry part of the 24 MB whatever the adaptive policy would pick
# on this machine (on veth it learns that copying is faster).
xs_run socktest/rdma-zero-copy 7605 180 check_zc \
	env XIW_RS_ADAPT=0 XIW_RS_SRC_THRESH=16384 XIW_RS_SINK_THRESH=16384 \
	XIW_RS_STATS=1 "${S[@]}" "$T" server 7605 -- \
	env XIW_RS_ADAPT=0 XIW_RS_SRC_THRESH=16384 XIW_RS_SINK_THRESH=16384 \
	XIW_RS_STATS=1 "${S[@]}" "$T" client "$XIW_IP_A" 7605
xs_run socktest/fork-after-accept 7604 180 check_fork \
	"${S[@]}" "$T" forkserver 7604 4 -- "${S[@]}" "$T" forkclient "$XIW_IP_A" 7604 4
xc_finish
