#!/usr/bin/env bash
# scripts/bench_cpu.sh OUT CMD... — run CMD and write the CPU seconds it
# used (user + system, all its threads and the children it waited for, as
# wait4/getrusage count them) to OUT as "USER SYS". For scripts/bench.sh:
# /usr/bin/time is not always installed, bash's `times` always is.
# TERM/INT/HUP are passed on to CMD; the exit status is CMD's.
set -u
out=${1:?usage: bench_cpu.sh OUT CMD...}
shift
[ $# -gt 0 ] || { echo "usage: bench_cpu.sh OUT CMD..." >&2; exit 2; }
"$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT HUP
rc=0
while :; do
	wait "$pid"
	rc=$?
	kill -0 "$pid" 2>/dev/null || break
done
# second line of `times`: the children's user and system time, "1m2.345s"
# (`times` in this shell, not in a pipeline's subshell)
times >"$out.times"
awk 'NR == 2 {
	for (i = 1; i <= 2; i++) { gsub(",", ".", $i); split($i, a, "m"); sub(/s$/, "", a[2]); t[i] = a[1] * 60 + a[2] }
	printf "%.3f %.3f\n", t[1], t[2] }' "$out.times" >"$out"
rm -f "$out.times"
exit "$rc"
