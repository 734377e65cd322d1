# shellcheck shell=bash
# netns.sh — two network namespaces joined by a veth pair, for tests,
# the demo and benchmarks. Source it:
#
#   . scripts/netns.sh
#   prefix=$(xiw_netns_prefix demo)        # unique: xiw-demo-<pid>
#   xiw_netns_trap "$prefix"               # teardown on EXIT/INT/TERM
#   xiw_netns_up "$prefix" || exit $?      # 77 = skip (not root / no netns)
#   xiw_bg A rping -s -a "$XIW_IP_A"       # background, killed at teardown
#   xiw_wait_listen A 7174 10 || ...       # poll `ss -ltn` in namespace A
#   xiw_in B rping -c -a "$XIW_IP_A" ...   # foreground in namespace B
#
# Higher level (what the demo and tests/netns/lib_clients.sh use):
#   xiw_pair NAME PORT TIMEOUT SERVER... -- CLIENT...
#       server in A, wait until it listens, client in B under `timeout`,
#       then the server must exit by itself; logs in $XIW_LOGDIR
#   xiw_perftest_value FILE bw|lat   BW average[MB/sec] / t_typical[usec]
#   xiw_pair_connect_race            perftest's reconnect race (retry once)
#   xiw_local_up                     no namespaces: both sides on 127.0.0.1
#   XIW_CLEANUP_HOOKS+=("cmd")       run at teardown (before the netns go)
#
# After xiw_netns_up these are set (and exported):
#   XIW_NS_A XIW_NS_B   namespace names  PREFIX-a / PREFIX-b
#   XIW_IF_A XIW_IF_B   veth names inside them (xiwa / xiwb)
#   XIW_IP_A XIW_IP_B   10.77.X.1 / 10.77.X.2 (X from a hash of PREFIX)
#   XIW_SUBNET          10.77.X
#
# Every function returns 0 on success, 77 when the environment cannot do
# it (not root, `ip netns` unusable), another non-zero value on failure.

XIW_NS_A=${XIW_NS_A:-}
XIW_NS_B=${XIW_NS_B:-}
XIW_BG_PIDS=()
XIW_CLEANUP_HOOKS=()
_XIW_TRAP_PREFIX=""
_XIW_CLEANED=0

_xiw_log() { printf 'netns: %s\n' "$*" >&2; }

# xiw_netns_prefix NAME: a prefix unique to this process (namespace names
# must be short enough for `ip netns`; veth names live inside the netns).
xiw_netns_prefix() {
	printf 'xiw-%s-%s\n' "${1:-t}" "$$"
}

# xiw_netns_can: 0 if we can create namespaces, 77 otherwise (says why).
xiw_netns_can() {
	if [ "$(id -u)" -ne 0 ]; then
		_xiw_log "not root: network namespaces need root (run as root, or sudo)"
		return 77
	fi
	if ! command -v ip >/dev/null 2>&1; then
		_xiw_log "'ip' (iproute2) not found: install iproute2 (scripts/deps.sh)"
		return 77
	fi
	if ! ip netns list >/dev/null 2>&1; then
		_xiw_log "'ip netns' does not work here (no CAP_SYS_ADMIN or no /run/netns?)"
		return 77
	fi
	return 0
}

_xiw_subnet_of() {
	# 1..250 from the prefix, stable per prefix.
	local h
	h=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
	printf '%d\n' $(( h % 250 + 1 ))
}

# xiw_netns_up PREFIX: create PREFIX-a and PREFIX-b with a veth pair.
xiw_netns_up() {
	local p=${1:?xiw_netns_up: PREFIX missing} x rc
	xiw_netns_can || return $?
	x=$(_xiw_subnet_of "$p")
	XIW_NS_A="$p-a"
	XIW_NS_B="$p-b"
	XIW_IF_A=xiwa
	XIW_IF_B=xiwb
	XIW_SUBNET="10.77.$x"
	XIW_IP_A="$XIW_SUBNET.1"
	XIW_IP_B="$XIW_SUBNET.2"
	export XIW_NS_A XIW_NS_B XIW_IF_A XIW_IF_B XIW_SUBNET XIW_IP_A XIW_IP_B

	# Leftovers from an earlier killed run with the same prefix.
	xiw_netns_down "$p" 2>/dev/null || true

	if ! ip netns add "$XIW_NS_A" || ! ip netns add "$XIW_NS_B"; then
		_xiw_log "cannot create namespaces $XIW_NS_A/$XIW_NS_B ('ip netns add' failed)"
		xiw_netns_down "$p"
		return 77
	fi
	# Create the veth ends directly inside the namespaces: no names in the
	# root namespace, so parallel runs cannot collide.
	if ! ip link add name "$XIW_IF_A" netns "$XIW_NS_A" type veth \
		peer name "$XIW_IF_B" netns "$XIW_NS_B"; then
		_xiw_log "cannot create veth pair (is the veth module available?)"
		xiw_netns_down "$p"
		return 77
	fi
	rc=0
	ip -n "$XIW_NS_A" link set lo up &&
		ip -n "$XIW_NS_B" link set lo up &&
		ip -n "$XIW_NS_A" addr add "$XIW_IP_A/24" dev "$XIW_IF_A" &&
		ip -n "$XIW_NS_B" addr add "$XIW_IP_B/24" dev "$XIW_IF_B" &&
		ip -n "$XIW_NS_A" link set "$XIW_IF_A" up &&
		ip -n "$XIW_NS_B" link set "$XIW_IF_B" up || rc=$?
	if [ $rc -ne 0 ]; then
		_xiw_log "configuring $XIW_NS_A/$XIW_NS_B failed (rc=$rc)"
		xiw_netns_down "$p"
		return 1
	fi
	# Wait until both ends report carrier (operstate UP), up to 5 s.
	local i sa sb
	for ((i = 0; i < 50; i++)); do
		sa=$(ip netns exec "$XIW_NS_A" cat "/sys/class/net/$XIW_IF_A/operstate" 2>/dev/null || true)
		sb=$(ip netns exec "$XIW_NS_B" cat "/sys/class/net/$XIW_IF_B/operstate" 2>/dev/null || true)
		if [ "$sa" = up ] && [ "$sb" = up ]; then
			return 0
		fi
		sleep 0.1
	done
	_xiw_log "veth $XIW_IF_A/$XIW_IF_B not up after 5 s (operstate '$sa'/'$sb')"
	xiw_netns_down "$p"
	return 1
}

# xiw_netns_kill_all PREFIX: kill every process still inside PREFIX-a/-b
# (they can only be ours: the namespaces are unique to this run).
xiw_netns_kill_all() {
	local p=${1:?} ns pids pid
	for ns in "$p-a" "$p-b"; do
		[ -e "/run/netns/$ns" ] || continue
		pids=$(ip netns pids "$ns" 2>/dev/null || true)
		for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
	done
	for ns in "$p-a" "$p-b"; do
		[ -e "/run/netns/$ns" ] || continue
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			pids=$(ip netns pids "$ns" 2>/dev/null || true)
			[ -z "$pids" ] && break
			sleep 0.1
		done
		for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
	done
}

# xiw_netns_down PREFIX: remove both namespaces (idempotent). Processes
# still running inside are killed first, so the veth pair goes away too.
xiw_netns_down() {
	local p=${1:?xiw_netns_down: PREFIX missing} ns
	xiw_netns_kill_all "$p"
	for ns in "$p-a" "$p-b"; do
		if [ -e "/run/netns/$ns" ]; then
			ip netns del "$ns" 2>/dev/null || _xiw_log "could not delete namespace $ns"
		fi
	done
	return 0
}

# xiw_in A|B CMD...: run CMD in namespace A or B (foreground).
xiw_in() {
	local side=${1:?xiw_in: A or B} ns
	shift
	if [ "${XIW_LOCAL:-0}" = 1 ]; then
		"$@"
		return
	fi
	case "$side" in
	A | a) ns=$XIW_NS_A ;;
	B | b) ns=$XIW_NS_B ;;
	*) _xiw_log "xiw_in: side must be A or B, not '$side'"; return 2 ;;
	esac
	[ -n "$ns" ] || { _xiw_log "xiw_in: namespaces not up (call xiw_netns_up)"; return 2; }
	ip netns exec "$ns" "$@"
}

# xiw_bg A|B CMD...: like xiw_in, in the background. The pid is in
# XIW_LAST_PID and remembered for teardown. Redirect as you like:
#   xiw_bg A rping -s >"$log" 2>&1
xiw_bg() {
	local side=${1:?xiw_bg: A or B} ns
	shift
	case "$side" in
	A | a) ns=$XIW_NS_A ;;
	B | b) ns=$XIW_NS_B ;;
	*) _xiw_log "xiw_bg: side must be A or B, not '$side'"; return 2 ;;
	esac
	[ -n "$ns" ] || [ "${XIW_LOCAL:-0}" = 1 ] ||
		{ _xiw_log "xiw_bg: namespaces not up (call xiw_netns_up)"; return 2; }
	# `ip netns exec` execs CMD, so $! is CMD itself (killable by pid).
	if [ "${XIW_LOCAL:-0}" = 1 ]; then
		"$@" &
	else
		ip netns exec "$ns" "$@" &
	fi
	XIW_LAST_PID=$!
	XIW_BG_PIDS+=("$XIW_LAST_PID")
}

# xiw_stop PID [GRACE_SECONDS]: TERM, wait up to GRACE, then KILL. Returns
# the process' exit status when it ended by itself (or 143/137).
xiw_stop() {
	local pid=${1:?} grace=${2:-3} i n rc=0
	n=$(( grace * 10 ))
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < n; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || rc=$?
	return $rc
}

# xiw_wait_pid PID TIMEOUT: wait for PID to end by itself within TIMEOUT s;
# returns its exit status, or 124 (and kills it) on timeout.
xiw_wait_pid() {
	local pid=${1:?} t=${2:-10} i n rc=0
	n=$(( t * 10 ))
	for ((i = 0; i < n; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		xiw_stop "$pid" 1 || true
		return 124
	fi
	wait "$pid" 2>/dev/null || rc=$?
	return $rc
}

# xiw_wait_listen A|B PORT [TIMEOUT_S] [PID]: poll until a TCP socket
# listens on PORT inside the namespace (`ss -ltn`). With PID, give up as
# soon as that process has died. 0 = listening, 1 = timeout/died.
xiw_wait_listen() {
	local side=${1:?} port=${2:?} t=${3:-10} pid=${4:-} i n
	n=$(( t * 10 ))
	for ((i = 0; i < n; i++)); do
		if xiw_in "$side" ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
			return 0
		fi
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			_xiw_log "server (pid $pid) exited before listening on port $port"
			return 1
		fi
		sleep 0.1
	done
	_xiw_log "nothing listens on port $port in namespace $side after ${t}s"
	return 1
}

# xiw_wait_listen_local PORT [TIMEOUT_S] [PID]: the same in the current
# namespace (loopback runs without root).
xiw_wait_listen_local() {
	local port=${1:?} t=${2:-10} pid=${3:-} i n
	n=$(( t * 10 ))
	for ((i = 0; i < n; i++)); do
		ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			_xiw_log "server (pid $pid) exited before listening on port $port"
			return 1
		fi
		sleep 0.1
	done
	_xiw_log "nothing listens on port $port after ${t}s"
	return 1
}

# xiw_cleanup: kill our background jobs, run hooks, remove the namespaces.
# Safe to call more than once.
xiw_cleanup() {
	local pid h
	[ "$_XIW_CLEANED" = 1 ] && return 0
	_XIW_CLEANED=1
	for h in "${XIW_CLEANUP_HOOKS[@]}"; do
		eval "$h" || true
	done
	for pid in "${XIW_BG_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${XIW_BG_PIDS[@]}"; do
		xiw_stop "$pid" 1 >/dev/null 2>&1 || true
	done
	if [ -n "$_XIW_TRAP_PREFIX" ]; then
		xiw_netns_down "$_XIW_TRAP_PREFIX"
	fi
	return 0
}

# xiw_netns_trap PREFIX: guarantee teardown of PREFIX's namespaces (and
# background jobs, and XIW_CLEANUP_HOOKS) on EXIT, INT and TERM. The
# script's exit status is kept on EXIT; INT/TERM exit 130/143.
xiw_netns_trap() {
	_XIW_TRAP_PREFIX=${1:?xiw_netns_trap: PREFIX missing}
	_XIW_CLEANED=0
	trap 'xiw_cleanup' EXIT
	trap 'xiw_cleanup; trap - EXIT; exit 130' INT
	trap 'xiw_cleanup; trap - EXIT; exit 143' TERM
}

# xiw_local_up: no namespaces; xiw_in/xiw_bg/xiw_wait_listen/xiw_pair run
# in the current namespace, both "sides" on 127.0.0.1 (no root needed).
xiw_local_up() {
	XIW_LOCAL=1
	XIW_NS_A=""
	XIW_NS_B=""
	XIW_IP_A=127.0.0.1
	XIW_IP_B=127.0.0.1
	export XIW_LOCAL XIW_IP_A XIW_IP_B
}

# ------------------------------------------------------ client/server pair

# xiw_pair NAME PORT TIMEOUT SERVER_CMD... -- CLIENT_CMD...
#   Start SERVER_CMD in namespace A (background), wait until something
#   listens on PORT there (10 s, or XIW_LISTEN_TIMEOUT), run CLIENT_CMD in
#   namespace B under `timeout TIMEOUT`, then give the server
#   XIW_SERVER_GRACE s (default 15) to exit by itself.
#   Output: $XIW_LOGDIR/NAME.{server,client}.log (stdout) and
#   NAME.{server,client}.err (stderr, kept apart so that unbuffered stderr
#   cannot split stdout lines); XIW_LOGDIR defaults to a fresh temp dir.
#   XIW_PAIR_SLOG / XIW_PAIR_CLOG (and _SERR / _CERR) name them.
#   Returns 0 when both exited 0; otherwise XIW_PAIR_WHY says what failed.
xiw_pair() {
	local name=${1:?} port=${2:?} t=${3:?} srv=() cli=() spid crc=0 src=0
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	cli=("$@")
	if [ ${#srv[@]} -eq 0 ] || [ ${#cli[@]} -eq 0 ]; then
		_xiw_log "xiw_pair: usage: NAME PORT TIMEOUT SERVER... -- CLIENT..."
		return 2
	fi
	if [ -z "${XIW_LOGDIR:-}" ]; then
		XIW_LOGDIR=$(mktemp -d /tmp/xiw-logs.XXXXXX)
	fi
	mkdir -p "$XIW_LOGDIR"
	XIW_PAIR_SLOG="$XIW_LOGDIR/$name.server.log"
	XIW_PAIR_CLOG="$XIW_LOGDIR/$name.client.log"
	XIW_PAIR_SERR="$XIW_LOGDIR/$name.server.err"
	XIW_PAIR_CERR="$XIW_LOGDIR/$name.client.err"
	XIW_PAIR_WHY=""

	local t_begin
	t_begin=$(date +%s.%N)
	xiw_bg A "${srv[@]}" >"$XIW_PAIR_SLOG" 2>"$XIW_PAIR_SERR" </dev/null
	spid=$XIW_LAST_PID
	if ! xiw_wait_listen A "$port" "${XIW_LISTEN_TIMEOUT:-10}" "$spid" 2>>"$XIW_PAIR_SERR"; then
		src=0
		xiw_stop "$spid" 1 || src=$?
		XIW_PAIR_WHY="server did not listen on port $port (server exit $src)"
		: >"$XIW_PAIR_CLOG"
		: >"$XIW_PAIR_CERR"
		return 1
	fi
	xiw_in B timeout -k 5 "$t" "${cli[@]}" >"$XIW_PAIR_CLOG" 2>"$XIW_PAIR_CERR" </dev/null || crc=$?
	if [ $crc -ne 0 ]; then
		# the server may be waiting for a peer that is gone: short grace
		xiw_wait_pid "$spid" 3 || src=$?
	else
		xiw_wait_pid "$spid" "${XIW_SERVER_GRACE:-15}" || src=$?
	fi
	# XIW_PIDMAP (set by tests/run.sh): which pair ran when, with which
	# server pid, to tell which run a sanitizer log file (asan.PID) is from.
	if [ -n "${XIW_PIDMAP:-}" ]; then
		printf '%s server=%s %s %s\n' "$name" "$spid" "$t_begin" "$(date +%s.%N)" \
			>>"$XIW_PIDMAP" 2>/dev/null || true
	fi
	if [ $crc -eq 124 ] || [ $crc -eq 137 ]; then
		XIW_PAIR_WHY="client timed out after ${t}s"
	elif [ $crc -ne 0 ]; then
		XIW_PAIR_WHY="client exit $crc"
	fi
	if [ $src -eq 124 ]; then
		XIW_PAIR_WHY="${XIW_PAIR_WHY:+$XIW_PAIR_WHY, }server did not exit (killed)"
	elif [ $src -ne 0 ]; then
		XIW_PAIR_WHY="${XIW_PAIR_WHY:+$XIW_PAIR_WHY, }server exit $src"
	fi
	[ -z "$XIW_PAIR_WHY" ]
}

# xiw_pair_connect_race: 0 if the last xiw_pair failed the way perftest
# fails when its second rdma_cm connection (the test QPs) reaches the
# server before the server listens again: the client gets
# RDMA_CM_EVENT_REJECTED (ECONNREFUSED) before any result (and perftest
# 4.5's own retry path then crashes). A race in the unmodified client,
# likelier on a loaded machine; callers may retry once, visibly.
xiw_pair_connect_race() {
	[ -n "${XIW_PAIR_WHY:-}" ] || return 1
	grep -q 'RDMA_CM_EVENT_REJECTED' "$XIW_PAIR_CERR" 2>/dev/null || return 1
	! grep -q '#bytes' "$XIW_PAIR_CLOG" 2>/dev/null
}

# xiw_pair_show_logs [LINES]: tail of the last pair's logs (on failure).
xiw_pair_show_logs() {
	local n=${1:-25} f
	for f in "$XIW_PAIR_SERR" "$XIW_PAIR_SLOG" "$XIW_PAIR_CERR" "$XIW_PAIR_CLOG"; do
		[ -s "$f" ] || continue
		echo "    --- ${f##*/} (last $n lines)"
		tail -n "$n" "$f" | sed 's/^/    | /'
	done
}

# xiw_perftest_value FILE bw|lat: from perftest output, the value in the
# line after the "#bytes ..." header: "BW average[MB/sec]" (bw) or
# "t_typical[usec]" (lat). Prints nothing (and returns 1) if not found.
xiw_perftest_value() {
	local f=${1:?} what=${2:?} v
	v=$(awk -v what="$what" '
		/^[ \t]*#bytes/ {
			h = $0
			gsub(/BW peak/, "BW_peak", h); gsub(/BW average/, "BW_average", h)
			gsub(/% percentile/, "%_percentile", h)
			n = split(h, col, /[ \t]+/)
			idx = 0; k = 0
			for (i = 1; i <= n; i++) {
				if (col[i] == "") continue
				k++
				if (what == "bw" && col[i] ~ /^BW_average/) idx = k
				if (what == "lat" && col[i] ~ /^t_typical/) idx = k
			}
			want = idx; next
		}
		want && $1 ~ /^[0-9]+$/ { print $want; want = 0; found = 1; exit }
	' "$f" 2>/dev/null)
	[ -n "$v" ] || return 1
	printf '%s\n' "$v"
}

# ------------------------------------------------------- delayed link ---
# xiw_delay_on MS FWD [LOG]: MS ms one-way delay each direction between A
# and B. tc netem on both veth ends when the kernel has sch_netem; else A
# and B are re-cabled through a middle namespace ($XIW_NS_A-m) where FWD
# (tests/netns/xiw_delayfwd, user space) holds every frame MS ms.
# Sets XIW_DELAY_HOW ("tc netem" / "xiw_delayfwd (no sch_netem)").
XIW_DELAY_HOW=""
XIW_DELAY_PID=""
xiw_delay_on() {
	local ms=$1 fwd=$2 log=${3:-/dev/null} m=$XIW_NS_A-m i
	if xiw_in A tc qdisc add dev "$XIW_IF_A" root netem delay "${ms}ms" 2>/dev/null; then
		xiw_in B tc qdisc add dev "$XIW_IF_B" root netem delay "${ms}ms" || return 1
		XIW_DELAY_HOW="tc netem"
		return 0
	fi
	[ -x "$fwd" ] || return 1
	ip netns add "$m" || return 1
	XIW_CLEANUP_HOOKS+=("ip netns pids '$m' 2>/dev/null | xargs -r kill -KILL; ip netns del '$m' 2>/dev/null")
	xiw_in A ip link del "$XIW_IF_A" &&
		ip link add name "$XIW_IF_A" netns "$XIW_NS_A" type veth peer name ma netns "$m" &&
		ip link add name "$XIW_IF_B" netns "$XIW_NS_B" type veth peer name mb netns "$m" &&
		ip -n "$XIW_NS_A" addr add "$XIW_IP_A/24" dev "$XIW_IF_A" &&
		ip -n "$XIW_NS_B" addr add "$XIW_IP_B/24" dev "$XIW_IF_B" &&
		ip -n "$m" link set dev ma up && ip -n "$m" link set dev mb up &&
		ip -n "$XIW_NS_A" link set "$XIW_IF_A" up &&
		ip -n "$XIW_NS_B" link set "$XIW_IF_B" up || return 1
	ip netns exec "$m" "$fwd" ma mb "$ms" >"$log" 2>&1 &
	XIW_DELAY_PID=$!
	XIW_BG_PIDS+=("$XIW_DELAY_PID")
	XIW_DELAY_HOW="xiw_delayfwd (no sch_netem)"
	for ((i = 0; i < 50; i++)); do	# carrier on both ends
		[ "$(xiw_in A cat "/sys/class/net/$XIW_IF_A/operstate")" = up ] &&
			[ "$(xiw_in B cat "/sys/class/net/$XIW_IF_B/operstate")" = up ] && return 0
		sleep 0.1
	done
	return 1
}

# xiw_delay_off: back to a plain veth between A and B.
xiw_delay_off() {
	if [ "$XIW_DELAY_HOW" = "tc netem" ]; then
		xiw_in A tc qdisc del dev "$XIW_IF_A" root 2>/dev/null
		xiw_in B tc qdisc del dev "$XIW_IF_B" root 2>/dev/null
	elif [ -n "$XIW_DELAY_HOW" ]; then
		kill -KILL "$XIW_DELAY_PID" 2>/dev/null
		xiw_in A ip link del "$XIW_IF_A"
		xiw_in B ip link del "$XIW_IF_B" 2>/dev/null
		ip netns del "$XIW_NS_A-m"
		ip link add name "$XIW_IF_A" netns "$XIW_NS_A" type veth peer name "$XIW_IF_B" netns "$XIW_NS_B" &&
			ip -n "$XIW_NS_A" addr add "$XIW_IP_A/24" dev "$XIW_IF_A" &&
			ip -n "$XIW_NS_B" addr add "$XIW_IP_B/24" dev "$XIW_IF_B" &&
			ip -n "$XIW_NS_A" link set "$XIW_IF_A" up &&
			ip -n "$XIW_NS_B" link set "$XIW_IF_B" up
		sleep 0.5
	fi
	XIW_DELAY_HOW=""
}
