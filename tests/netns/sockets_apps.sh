#!/usr/bin/env bash
# Unmodified Debian TCP programs between two namespaces, both sides under
# `xiwrun --sockets` (libxiwsock.so: stream sockets over RDMA with the
# seed-004 zero-copy extension): iperf3 (48 MiB in 128 KB writes, sent =
# received; reverse; 2 streams; buffer copy only), iperf 2,
# sockperf ping-pong and throughput, redis-server + redis-cli (a 1 MB
# binary value set and read back) + redis-benchmark (epoll, 20
# connections). Every subcase also checks that both sides really went
# over RDMA (XIW_SOCK_LOG=1 lines). Exit 0 pass, 1 fail, 77 skip.
# timeout: 600
set -uo pipefail
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_sockets.sh"

xs_need_sock || exit 1
xc_need_progs iperf3 iperf sockperf redis-server redis-cli redis-benchmark python3 || exit $?
xs_setup apps || exit $?

S=(env XIW_SOCK_LOG=1 "$XIWRUN" --sockets)

# ---------------------------------------------------------------- iperf3
# iperf3 cannot check data (and its -F file mode does not reproduce the
# file even over plain kernel TCP: measured), so: -n exact byte counts,
# received <= sent (iperf3 stops counting at its end message, also over
# kernel TCP: measured); data is checked by redis below and sockets_semantics.
iperf3_gbps() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.2f" % (d["end"]["sum_received"]["bits_per_second"]/1e9))' "$1" 2>/dev/null || echo "?"
}
iperf3_bytes() { # FILE: "sent received" bytes
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["end"]["sum_sent"]["bytes"], d["end"]["sum_received"]["bytes"])' "$1" 2>/dev/null
}
check_iperf3_n() {
	local why sent recv
	why=$(xs_rdma_note) || { echo "$why"; return 1; }
	read -r sent recv < <(iperf3_bytes "$XIW_PAIR_CLOG")
	# -n 48M: iperf3 sends whole -l 128K blocks and may end one block past
	if [ "${sent:-0}" -lt $((48 << 20)) ] || [ "${sent:-0}" -gt $(((48 << 20) + (128 << 10))) ] ||
		[ "${recv:-0}" -le 0 ] || [ "${recv:-0}" -gt "${sent:-0}" ]; then
		echo "sent ${sent:-?} received ${recv:-?} bytes, want $((48 << 20)) (+ at most one 128 KB block)"
		return 1
	fi
	echo "48 MiB sent ($sent), $recv received (iperf3 stops counting at the end message), $(iperf3_gbps "$XIW_PAIR_CLOG") Gbit/s"
}
check_iperf3() {
	local why g
	why=$(xs_rdma_note) || { echo "$why"; return 1; }
	g=$(iperf3_gbps "$XIW_PAIR_CLOG")
	case $g in "?" | 0.00) echo "no bytes received (iperf3 says $g)"; return 1 ;; esac
	echo "$g Gbit/s"
}
xs_run iperf3/128k-48MiB 5201 120 check_iperf3_n \
	"${S[@]}" iperf3 -s -1 -B "$XIW_IP_A" -p 5201 -- \
	"${S[@]}" iperf3 -c "$XIW_IP_A" -p 5201 -l 128K -n 48M -J
xs_run iperf3/reverse 5202 120 check_iperf3 \
	"${S[@]}" iperf3 -s -1 -B "$XIW_IP_A" -p 5202 -- \
	"${S[@]}" iperf3 -c "$XIW_IP_A" -p 5202 -l 128K -t 2 -R -J
xs_run iperf3/copy-only-48MiB 5203 120 check_iperf3_n \
	env XIW_RS_ZCOPY=0 "${S[@]}" iperf3 -s -1 -B "$XIW_IP_A" -p 5203 -- \
	env XIW_RS_ZCOPY=0 "${S[@]}" iperf3 -c "$XIW_IP_A" -p 5203 -l 128K -n 48M -J
xs_run iperf3/parallel-2 5204 120 check_iperf3 \
	"${S[@]}" iperf3 -s -1 -B "$XIW_IP_A" -p 5204 -- \
	"${S[@]}" iperf3 -c "$XIW_IP_A" -p 5204 -l 128K -t 2 -P 2 -J

# --------------------------------------------------------------- iperf 2
check_iperf2() {
	local why line
	why=$(xs_rdma_note) || { echo "$why"; return 1; }
	line=$(grep -E 'sec +[0-9.]+ [KMG]Bytes +[0-9.]+ [KMG]bits/sec' "$XIW_PAIR_CLOG" | tail -1)
	if [ -z "$line" ] || echo "$line" | grep -qE ' 0\.00 [KMG]Bytes'; then
		echo "no transfer line in the client's output"
		return 1
	fi
	echo "$line" | grep -oE '[0-9.]+ [KMG]bits/sec'
}
xs_serve iperf2/stream 5211 60 check_iperf2 \
	"${S[@]}" iperf -s -B "$XIW_IP_A" -p 5211 -- \
	"${S[@]}" iperf -c "$XIW_IP_A" -p 5211 -l 128K -t 3 -f g

# -------------------------------------------------------------- sockperf
check_pp() {
	local why line sent recv
	why=$(xs_rdma_note) || { echo "$why"; return 1; }
	line=$(grep -m1 'Valid Duration' "$XIW_PAIR_CLOG")
	sent=$(echo "$line" | grep -oE 'SentMessages=[0-9]+' | cut -d= -f2)
	recv=$(echo "$line" | grep -oE 'ReceivedMessages=[0-9]+' | cut -d= -f2)
	if [ -z "$sent" ] || [ -z "$recv" ] || [ "$recv" -lt 100 ] ||
		[ $((sent - recv)) -gt 1 ] || [ $((recv - sent)) -gt 1 ]; then
		echo "sent ${sent:-?} received ${recv:-?} messages"
		return 1
	fi
	echo "$recv round trips, $(grep -m1 -oE 'Latency is [0-9.]+ usec' "$XIW_PAIR_CLOG")"
}
check_tp() {
	local why bw
	why=$(xs_rdma_note) || { echo "$why"; return 1; }
	bw=$(grep -m1 -oE 'BandWidth is [0-9.]+ MBps' "$XIW_PAIR_CLOG")
	if [ -z "$bw" ] || echo "$bw" | grep -qE 'is 0(\.0+)? MBps'; then
		echo "no bandwidth line"
		return 1
	fi
	echo "$bw"
}
xs_serve sockperf/ping-pong-64 5221 60 check_pp \
	"${S[@]}" sockperf sr --tcp -i "$XIW_IP_A" -p 5221 -- \
	"${S[@]}" sockperf pp --tcp -i "$XIW_IP_A" -p 5221 -m 64 -t 3
xs_serve sockperf/ping-pong-60000 5222 60 check_pp \
	"${S[@]}" sockperf sr --tcp -i "$XIW_IP_A" -p 5222 -- \
	"${S[@]}" sockperf pp --tcp -i "$XIW_IP_A" -p 5222 -m 60000 -t 3
xs_serve sockperf/throughput-1472 5223 60 check_tp \
	"${S[@]}" sockperf sr --tcp -i "$XIW_IP_A" -p 5223 -- \
	"${S[@]}" sockperf tp --tcp -i "$XIW_IP_A" -p 5223 -m 1472 -t 3

# ----------------------------------------------------------------- redis
VAL="$XIW_LOGDIR/value.bin"
head -c $((1 << 20)) /dev/urandom >"$VAL"
check_redis() {
	local why
	why=$(xs_rdma_note) || { echo "$why"; return 1; }
	if ! grep -q '^OK$' "$XIW_PAIR_CLOG"; then
		echo "SET did not answer OK"
		return 1
	fi
	if ! cmp -s <(cat "$VAL"; echo) "$XIW_LOGDIR/got.bin"; then
		echo "GET returned other bytes: $(cmp <(cat "$VAL"; echo) "$XIW_LOGDIR/got.bin" 2>&1 | head -1)"
		return 1
	fi
	if grep -qiE 'error|refused' "$XIW_PAIR_CLOG" "$XIW_PAIR_CERR" ||
		[ "$(grep -cE '^"(SET|GET|INCR|LPUSH|LPOP)[^"]*","[1-9]' "$XIW_PAIR_CLOG")" -lt 7 ]; then
		echo "redis-benchmark: errors or missing results: $(grep -iE 'error|refused' "$XIW_PAIR_CLOG" "$XIW_PAIR_CERR" | head -2 | tr '\n' ' ')"
		return 1
	fi
	echo "1 MB value verified; $(grep -m1 '^"SET"' "$XIW_PAIR_CLOG" | cut -d, -f1,2 | tr -d '"') rps"
}
# shellcheck disable=SC2016 # expanded by the inner shell
REDIS_CLIENT='
set -e
"$@" redis-cli -h "$IP" -p 6379 -x set big <"$VAL"
"$@" redis-cli -h "$IP" -p 6379 --raw get big >"$GOT"
"$@" redis-benchmark -h "$IP" -p 6379 -c 20 -n 20000 -t set,get,incr,lpush,lpop -q --csv
"$@" redis-benchmark -h "$IP" -p 6379 -c 4 -n 400 -d 100000 -t set,get -q --csv
'
xs_serve redis/cli-and-benchmark 6379 180 check_redis \
	"${S[@]}" redis-server --bind "$XIW_IP_A" --port 6379 --save "" --appendonly no \
	--protected-mode no --daemonize no -- \
	env IP="$XIW_IP_A" VAL="$VAL" GOT="$XIW_LOGDIR/got.bin" bash -c "$REDIS_CLIENT" redis "${S[@]}"

xc_finish
