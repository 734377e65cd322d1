#!/usr/bin/env bash
# tests/run.sh — run every xiwarp test tier, one PASS/FAIL/SKIP line per
# counted test, then the summary line "N passed, N failed, N skipped".
#
# `make test` builds build/ (normal) and build/san (ASan+UBSan) first, then
# runs this. Tiers, in order:
#   unit     build/tests/unit/test_*   (cmocka; one binary = one test)
#   unit-sh  tests/unit/*.sh           (exit 0 pass, 77 skip)
#   bpf      build/tests/bpf/test_*    (cmocka, loads BPF into the kernel)
#   fuzz     build/tests/fuzz/fuzz_*   (libFuzzer smoke run, XIW_FUZZ_TIME s)
#   netns    tests/netns/*.sh          (not lib_*.sh; 0 pass, 77 skip)
#   interop  tests/interop/siw_interop.sh: xiwarp against the kernel's siw
#            in a qemu guest (../shared/siw-peer); 77 (skip) without qemu,
#            /dev/net/tun or the harness. XIW_NO_INTEROP=1 skips the tier.
#   san:     unit, unit-sh and netns again with BUILD=build/san; any
#            sanitizer report fails the test.
#
# Environment:
#   BUILD=build  SAN_BUILD=build/san
#   XIW_TEST_FILTER=REGEX   run only tests whose name matches (grep -E)
#   XIW_FUZZ_TIME=20        seconds per fuzzer
#   XIW_NO_SAN=1            skip the sanitizer tier
#   XIW_TEST_VERBOSE=1      show every test's output, not only failures
#
# A netns script may declare its own timeout with a line "# timeout: SECONDS".
# Logs: $BUILD/test-logs/<test>.log
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT" || exit 2

BUILD=${BUILD:-build}
SAN_BUILD=${SAN_BUILD:-build/san}
FILTER=${XIW_TEST_FILTER:-}
FUZZ_TIME=${XIW_FUZZ_TIME:-20}
VERBOSE=${XIW_TEST_VERBOSE:-0}

T_UNIT=${XIW_T_UNIT:-120}
T_UNIT_SAN=${XIW_T_UNIT_SAN:-300}
T_SCRIPT=${XIW_T_SCRIPT:-300}
T_NETNS=${XIW_T_NETNS:-600}

LOGDIR=$BUILD/test-logs
rm -rf "$LOGDIR"
mkdir -p "$LOGDIR"

npass=0
nfail=0
nskip=0
failed=()
t_start=$(date +%s)

# Sanitizer runtime for unsanitized programs run against build/san
# (build/san/bin/xiwrun preloads it by itself; exported for scripts that
# start such programs some other way).
ASAN_RT=$(gcc -print-file-name=libasan.so 2>/dev/null || true)
UBSAN_RT=$(gcc -print-file-name=libubsan.so 2>/dev/null || true)
export XIW_SAN_PRELOAD="$ASAN_RT:$UBSAN_RT"

# Patterns of a sanitizer report in a test's output.
SAN_RE='ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer)|runtime error:|WARNING: AddressSanitizer|SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer)'

filtered_out() {
	[ -n "$FILTER" ] && ! grep -qE -- "$FILTER" <<<"$1"
}

safe_name() {
	printf '%s' "$1" | tr -c 'A-Za-z0-9_.-' '_'
}

# A failed check's line: our scripts' "FAIL:", cmocka's "[  FAILED  ]"
# with its "[  ERROR   ]" and "[   LINE   ]", TAP's "not ok".
FAIL_RE='^(FAIL|\[ +(FAILED|ERROR|LINE) +\]|not ok)'

# show_log FILE: the interesting part of a test's output, its FAIL lines
# first (CI reports may keep only the start of what a run printed).
show_log() {
	local f=$1 n
	if grep -qE "$FAIL_RE" "$f"; then
		echo "    failed checks:"
		grep -E "$FAIL_RE" "$f" | head -n 20 | sed 's/^/    ! /'
	fi
	n=$(wc -l <"$f")
	if [ "$n" -gt 120 ]; then
		echo "    ... ($n lines, last 120 shown; full log: $f)"
		tail -n 120 "$f" | sed 's/^/    | /'
	else
		sed 's/^/    | /' "$f"
	fi
}

# run_test NAME TIMEOUT SANDIR CMD...
#   SANDIR: "" for normal tests; a directory for sanitizer report files
#   (ASAN_OPTIONS/UBSAN_OPTIONS log_path) that must stay empty.
run_test() {
	local name=$1 t=$2 sandir=$3 log rc t0 dt extra="" reason
	shift 3
	if filtered_out "$name"; then
		return 0
	fi
	log="$LOGDIR/$(safe_name "$name").log"
	t0=$(date +%s)
	rc=0
	timeout -k 15 "$t" "$@" >"$log" 2>&1 </dev/null || rc=$?
	dt=$(($(date +%s) - t0))

	if [ -n "$sandir" ]; then
		local found=0 reports
		# ASan may create its log file without writing to it (a process
		# killed at the wrong moment): only non-empty files are reports.
		reports=$(find "$sandir" -type f -size +0 2>/dev/null | sort)
		if [ -n "$reports" ]; then
			{
				echo "---- sanitizer reports ($sandir) ----"
				# shellcheck disable=SC2086 # one path per line, no spaces
				cat $reports
				which_runs "$reports"
			} >>"$log"
			found=1
			# A file holding only the report's opening rule: the
			# process exited while a thread was still writing the
			# report (it still found something): fails all the same.
			# shellcheck disable=SC2086
			grep -qE "$SAN_RE" $reports || found="cut"
		elif grep -qE "$SAN_RE" "$log"; then
			found=1
		fi
		if [ "$found" != 0 ]; then
			extra=" (sanitizer report)"
			[ "$found" = cut ] && extra=" (sanitizer report, cut off at process exit)"
			if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then rc=99; fi
		fi
	fi

	case $rc in
	0)
		npass=$((npass + 1))
		# cmocka's own count, if it printed one
		local cases
		cases=$(grep -oE '\[  PASSED  \] [0-9]+ test' "$log" | tail -n1 | grep -oE '[0-9]+' || true)
		printf 'PASS  %-44s %4ss%s\n' "$name" "$dt" "${cases:+  ($cases cases)}"
		[ "$VERBOSE" = 1 ] && show_log "$log"
		;;
	77)
		nskip=$((nskip + 1))
		reason=$(grep -iE 'skip|not root|need' "$log" | tail -n1 | cut -c1-100 || true)
		printf 'SKIP  %-44s %4ss%s\n' "$name" "$dt" "${reason:+  ($reason)}"
		[ "$VERBOSE" = 1 ] && show_log "$log"
		;;
	*)
		nfail=$((nfail + 1))
		failed+=("$name")
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			extra="  (timeout after ${t}s)$extra"
		else
			extra="  (exit $rc)$extra"
		fi
		printf 'FAIL  %-44s %4ss%s\n' "$name" "$dt" "$extra"
		show_log "$log"
		;;
	esac
	return 0
}

# which_runs REPORTS: for each sanitizer log file (asan.PID / ubsan.PID),
# the client/server run it came from, from XIW_PIDMAP lines
# "NAME server=PID BEGIN END" (written by xiw_pair in scripts/netns.sh):
# the run whose server had that pid, else the run active at the file's
# modification time (a client).
which_runs() {
	local f pid mt hit
	[ -n "${XIW_PIDMAP:-}" ] && [ -s "$XIW_PIDMAP" ] || return 0
	for f in $1; do
		pid=${f##*.}
		mt=$(stat -c %.9Y "$f" 2>/dev/null || stat -c %Y "$f")
		hit=$(awk -v p="server=$pid" '$2 == p { print $1 " (server)" }' "$XIW_PIDMAP")
		[ -n "$hit" ] || hit=$(awk -v t="$mt" '$3 <= t && t <= $4 + 1 { print $1 " (client, by time)" }' "$XIW_PIDMAP")
		echo "---- ${f##*/} is from: ${hit:-unknown run}"
	done
}

# fail_now NAME WHY: a counted failure without running anything.
fail_now() {
	filtered_out "$1" && return 0
	nfail=$((nfail + 1))
	failed+=("$1")
	printf 'FAIL  %-44s %4ss  (%s)\n' "$1" 0 "$2"
}

# script_timeout FILE DEFAULT: "# timeout: N" in the script, else DEFAULT.
script_timeout() {
	local t
	t=$(grep -m1 -oE '^# timeout: [0-9]+' "$1" 2>/dev/null | grep -oE '[0-9]+' || true)
	printf '%s\n' "${t:-$2}"
}

section() {
	printf '\n== %s ==\n' "$*"
}

# ------------------------------------------------------------------ tiers

# tier_unit BUILD_DIR SAN(0|1)
tier_unit() {
	local b=$1 san=$2 src name bin tag="" t=$T_UNIT sandir="" hint=""
	[ "$san" = 1 ] && { tag="san:"; t=$T_UNIT_SAN; hint=" SAN=1"; }
	section "${tag}unit (cmocka, $b/tests/unit)"
	shopt -s nullglob
	local srcs=(tests/unit/test_*.c)
	shopt -u nullglob
	if [ ${#srcs[@]} -eq 0 ]; then
		echo "(no tests/unit/test_*.c)"
		return 0
	fi
	for src in "${srcs[@]}"; do
		name=$(basename "$src" .c)
		bin="$b/tests/unit/$name"
		if [ ! -x "$bin" ]; then
			fail_now "${tag}unit/$name" "not built: $bin missing, run 'make${hint} tests'"
			continue
		fi
		if [ "$san" = 1 ]; then
			sandir="$LOGDIR/san-reports/unit-$name"
			mkdir -p "$sandir"
			ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:log_path=$sandir/asan" \
				UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$sandir/ubsan" \
				run_test "${tag}unit/$name" "$t" "$sandir" "$bin"
		else
			run_test "${tag}unit/$name" "$t" "" "$bin"
		fi
	done
}

# tier_scripts DIR KIND BUILD_DIR SAN(0|1) DEFAULT_TIMEOUT
tier_scripts() {
	local dir=$1 kind=$2 b=$3 san=$4 tdef=$5 f name tag="" sandir=""
	[ "$san" = 1 ] && tag="san:"
	shopt -s nullglob
	local files=("$dir"/*.sh)
	shopt -u nullglob
	local list=()
	for f in "${files[@]}"; do
		case $(basename "$f") in lib_* | lib.sh) continue ;; esac
		list+=("$f")
	done
	section "$tag$kind ($dir/*.sh, BUILD=$b)"
	if [ ${#list[@]} -eq 0 ]; then
		echo "(none)"
		return 0
	fi
	for f in "${list[@]}"; do
		name="$tag$kind/$(basename "$f" .sh)"
		if [ "$san" = 1 ]; then
			sandir="$LOGDIR/san-reports/$kind-$(basename "$f" .sh)"
			mkdir -p "$sandir"
			rm -f "$LOGDIR/pairs-$kind-$(basename "$f" .sh).txt"
			BUILD="$b" XIW_SAN=1 XIW_PIDMAP="$LOGDIR/pairs-$kind-$(basename "$f" .sh).txt" \
				ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:log_path=$sandir/asan" \
				UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$sandir/ubsan" \
				run_test "$name" "$(script_timeout "$f" "$tdef")" "$sandir" bash "$f"
		else
			BUILD="$b" run_test "$name" "$(script_timeout "$f" "$tdef")" "" bash "$f"
		fi
	done
}

tier_bpf() {
	local b=$1 src name bin
	shopt -s nullglob
	local srcs=(tests/bpf/test_*.c)
	shopt -u nullglob
	[ ${#srcs[@]} -eq 0 ] && return 0
	section "bpf ($b/tests/bpf)"
	for src in "${srcs[@]}"; do
		name=$(basename "$src" .c)
		bin="$b/tests/bpf/$name"
		if [ "$(id -u)" -ne 0 ]; then
			filtered_out "bpf/$name" && continue
			nskip=$((nskip + 1))
			printf 'SKIP  %-44s %4ss  (%s)\n' "bpf/$name" 0 "loading BPF programs needs root"
			continue
		fi
		if [ ! -x "$bin" ]; then
			fail_now "bpf/$name" "not built: $bin missing, run 'make tests'"
			continue
		fi
		run_test "bpf/$name" "$T_UNIT" "" "$bin"
	done
}

tier_fuzz() {
	local b=$1 src name bin corpus seeds
	shopt -s nullglob
	local srcs=(tests/fuzz/fuzz_*.c)
	shopt -u nullglob
	section "fuzz ($b/tests/fuzz, ${FUZZ_TIME}s each)"
	if [ ${#srcs[@]} -eq 0 ]; then
		echo "(no tests/fuzz/fuzz_*.c)"
		return 0
	fi
	for src in "${srcs[@]}"; do
		name=$(basename "$src" .c)
		bin="$b/tests/fuzz/$name"
		if [ ! -x "$bin" ]; then
			fail_now "fuzz/$name" "not built: $bin missing, run 'make fuzz'"
			continue
		fi
		corpus="$b/fuzz-corpus/$name"
		mkdir -p "$corpus"
		seeds=()
		for d in "tests/fuzz/corpus/$name" "tests/fuzz/$name.corpus" "tests/fuzz/corpus_$name"; do
			[ -d "$d" ] && seeds+=("$d")
		done
		run_test "fuzz/$name" "$((FUZZ_TIME + 90))" "" \
			"$bin" -max_total_time="$FUZZ_TIME" -rss_limit_mb=2048 -timeout=10 \
			-print_final_stats=1 -artifact_prefix="$LOGDIR/$name-" \
			"$corpus" "${seeds[@]}"
	done
}

# ------------------------------------------------------------------- main

echo "xiwarp tests: BUILD=$BUILD SAN_BUILD=$SAN_BUILD$( [ -n "$FILTER" ] && echo " filter=$FILTER")"
echo "logs: $LOGDIR/"
[ "$(id -u)" -eq 0 ] || echo "note: not root: netns and bpf tests will skip"

if [ ! -d "$BUILD/lib" ]; then
	echo "warning: $BUILD/lib does not exist: run 'make' first (netns tests will fail)" >&2
fi

tier_unit "$BUILD" 0
tier_scripts tests/unit unit-sh "$BUILD" 0 "$T_SCRIPT"
tier_bpf "$BUILD"
tier_fuzz "$BUILD"
tier_scripts tests/netns netns "$BUILD" 0 "$T_NETNS"

# siw interop (normal build only: the guest under TCG is the slow part)
if [ "${XIW_NO_INTEROP:-0}" = 1 ]; then
	section "interop skipped (XIW_NO_INTEROP=1)"
elif [ -f tests/interop/siw_interop.sh ]; then
	section "interop (tests/interop/siw_interop.sh, BUILD=$BUILD)"
	# a perftest cell is tried twice (a retry is printed on its line):
	# siw's server sometimes fails perftest's last exchange after xiwarp's
	# close (open: see README Interoperability)
	XIW_INTEROP_PERF_TRIES=${XIW_INTEROP_PERF_TRIES:-2} \
	BUILD="$BUILD" run_test "interop/siw" "$(script_timeout tests/interop/siw_interop.sh 2400)" "" \
		bash tests/interop/siw_interop.sh
fi

if [ "${XIW_NO_SAN:-0}" = 1 ]; then
	section "sanitizer tier skipped (XIW_NO_SAN=1)"
elif [ ! -d "$SAN_BUILD" ]; then
	section "sanitizer tier"
	fail_now "san:build" "$SAN_BUILD missing: run 'make SAN=1 libs tools tests'"
else
	tier_unit "$SAN_BUILD" 1
	tier_scripts tests/unit unit-sh "$SAN_BUILD" 1 "$T_SCRIPT"
	tier_scripts tests/netns netns "$SAN_BUILD" 1 "$T_NETNS"
fi

# Namespaces our scripts create are named xiw-*-<pid>; report leftovers.
left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^xiw-' || true)
if [ -n "$left" ]; then
	echo
	echo "warning: network namespaces left behind (from these or other runs): ${left//$'\n'/ }"
fi

echo
echo "total time: $(($(date +%s) - t_start))s"
if [ ${#failed[@]} -gt 0 ]; then
	echo "failed: ${failed[*]}"
fi
echo "$npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
