# shellcheck shell=bash
# tests/netns/lib_sockets.sh — shared by the sockets-over-RDMA scenarios
# (rsockets_*.sh, sockets_*.sh): rsockets through librdmacm, and
# unmodified TCP programs under `xiwrun --sockets` (libxiwsock.so).
# Namespaces are named rs-NAME-PID-{a,b}. Not a test itself.

# shellcheck source=tests/netns/lib_clients.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_clients.sh"

# xs_setup NAME: like xc_setup, with this suite's rs- prefix.
xs_setup() {
	local name=${1:?} rc=0
	XC_PREFIX="rs-$name-$$"
	XIW_LOGDIR=$(mktemp -d "/tmp/rs-$name.XXXXXX")
	if [ "${XIW_KEEP_LOGS:-0}" = 1 ]; then
		XIW_CLEANUP_HOOKS+=("echo \"logs kept in $XIW_LOGDIR\"")
	else
		XIW_CLEANUP_HOOKS+=("rm -rf '$XIW_LOGDIR'")
	fi
	xiw_netns_trap "$XC_PREFIX"
	xiw_netns_up "$XC_PREFIX" || rc=$?
	if [ $rc -ne 0 ]; then
		[ $rc -eq 77 ] && echo "SKIP: no network namespaces here (they need root and a working 'ip netns')"
		return $rc
	fi
	echo "namespaces $XIW_NS_A ($XIW_IP_A) <-> $XIW_NS_B ($XIW_IP_B), BUILD=$BUILD"
}

# xs_need_sock: libxiwsock.so built (1 = fail).
xs_need_sock() {
	xc_need_xiwarp || return 1
	if [ ! -e "$BUILD/lib/libxiwsock.so" ]; then
		echo "FAIL: $BUILD/lib/libxiwsock.so missing: run 'make libs'"
		return 1
	fi
}

# xs_run LABEL PORT TIMEOUT CHECK SERVER... -- CLIENT...: one pair; then
# CHECK (a shell function, run with the logs in XIW_PAIR_{S,C}{LOG,ERR})
# must print a one-line detail and return 0.
xs_run() {
	local label=$1 port=$2 t=$3 check=$4 rc=0 why
	shift 4
	xc_give_up "$label" && return 0
	if xiw_pair "$(safe_label "$label")" "$port" "$((t * XIW_TMUL))" "$@"; then
		why=$($check) || rc=1
	else
		rc=1
		why="($XIW_PAIR_WHY)"
	fi
	xc_result "$label" "$rc" "$why"
}

# Both sides' stderr say the connection really went over RDMA.
xs_used_rdma() {
	grep -q 'connected over RDMA' "$XIW_PAIR_CERR" &&
		grep -q 'accepted an RDMA connection' "$XIW_PAIR_SERR"
}

# xs_serve LABEL PORT TIMEOUT CHECK SERVER... -- CLIENT...: for servers
# that never exit by themselves (redis-server, sockperf sr, iperf -s): the
# client runs to its end (stdin from XS_STDIN, default /dev/null), then the
# server is stopped (TERM, then KILL). The client must exit 0 and CHECK
# (as for xs_run) must pass. XS_RETRY_IF=REGEX: a failed run whose
# client output or stderr matches REGEX is run once more (said in the
# result line, the first run's logs kept as *.try1); only for races of
# the program under test, not xiwarp's.
xs_serve() {
	local label=$1 retry="" f
	xc_give_up "$label" && return 0
	xs_serve_once "$@"
	if [ "$XS_RC" != 0 ] && [ -n "${XS_RETRY_IF:-}" ] &&
		retry=$(cat "$XIW_PAIR_CLOG" "$XIW_PAIR_CERR" | grep -m1 -E "$XS_RETRY_IF"); then
		# the second run writes the same log names: keep the first's
		for f in "$XIW_PAIR_SLOG" "$XIW_PAIR_SERR" "$XIW_PAIR_CLOG" "$XIW_PAIR_CERR"; do
			mv -f "$f" "$f.try1" 2>/dev/null
		done
		xs_serve_once "$@"
		XS_WHY="$XS_WHY (second try; the first failed with: $retry)"
	fi
	xc_result "$label" "$XS_RC" "$XS_WHY"
}

# xs_serve_once: one run of xs_serve's arguments; XS_RC and XS_WHY say how
# it went.
xs_serve_once() {
	local label=$1 port=$2 t=$3 check=$4 srv=() cli=() spid crc=0 rc=0 why="" name t_begin
	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	cli=("$@")
	name=$(safe_label "$label")
	XIW_PAIR_SLOG="$XIW_LOGDIR/$name.server.log"
	XIW_PAIR_CLOG="$XIW_LOGDIR/$name.client.log"
	XIW_PAIR_SERR="$XIW_LOGDIR/$name.server.err"
	XIW_PAIR_CERR="$XIW_LOGDIR/$name.client.err"
	XIW_PAIR_WHY=""
	: >"$XIW_PAIR_CLOG"
	: >"$XIW_PAIR_CERR"
	t_begin=$(date +%s.%N)
	xiw_bg A "${srv[@]}" >"$XIW_PAIR_SLOG" 2>"$XIW_PAIR_SERR" </dev/null
	spid=$XIW_LAST_PID
	if ! xiw_wait_listen A "$port" "${XIW_LISTEN_TIMEOUT:-10}" "$spid" 2>>"$XIW_PAIR_SERR"; then
		xiw_stop "$spid" 1 || true
		XS_RC=1
		XS_WHY="(server did not listen on port $port)"
		return 0
	fi
	xiw_in B timeout -k 5 "$((t * XIW_TMUL))" "${cli[@]}" \
		>"$XIW_PAIR_CLOG" 2>"$XIW_PAIR_CERR" <"${XS_STDIN:-/dev/null}" || crc=$?
	if ! kill -0 "$spid" 2>/dev/null; then
		wait "$spid" 2>/dev/null
		why="(server exited during the test: status $?)"
		rc=1
	else
		xiw_stop "$spid" 5 || true
	fi
	if [ -n "${XIW_PIDMAP:-}" ]; then
		printf '%s server=%s %s %s\n' "$name" "$spid" "$t_begin" "$(date +%s.%N)" \
			>>"$XIW_PIDMAP" 2>/dev/null || true
	fi
	if [ $crc -eq 124 ] || [ $crc -eq 137 ]; then
		why="(client timed out after $((t * XIW_TMUL))s)"
		rc=1
	elif [ $crc -ne 0 ]; then
		why="(client exit $crc)"
		rc=1
	elif [ $rc -eq 0 ]; then
		why=$($check) || rc=1
	fi
	XS_RC=$rc
	XS_WHY=$why
}

# xs_fell_back: one side' stderr say they fell back to kernel TCP.
xs_fell_back() {
	grep -q 'no RDMA peer at port' "$XIW_PAIR_CERR" ||
		grep -q 'accepted a plain TCP connection' "$XIW_PAIR_SERR"
}

# xs_rdma_or_why: "" if the pair used RDMA, else a reason (for CHECKs).
xs_rdma_note() {
	xs_used_rdma && return 0
	echo "not over RDMA: client '$(grep -m1 -E 'RDMA|TCP' "$XIW_PAIR_CERR")' server '$(grep -m1 -E 'RDMA|TCP' "$XIW_PAIR_SERR")'"
	return 1
}
