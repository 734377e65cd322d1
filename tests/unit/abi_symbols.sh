#!/usr/bin/env bash
# abi_symbols.sh — the drop-in libraries satisfy the real clients' imports.
#
# For every installed client (rdma-core 44 / perftest binaries of Debian
# bookworm), every symbol it imports from libibverbs / librdmacm / libmlx5 /
# libefa, with its version node, must be exported by $BUILD/lib. Then each
# client is started under LD_BIND_NOW=1 (as the distro links them) with
# --help, and must not die in the loader; finally ibv_devinfo must list the
# xiw_lo device as iWARP.
#
# Exit: 0 pass, 1 fail, 77 skip (no clients or no objdump installed).
set -uo pipefail

ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
case $BUILD in
/*) LIB=$BUILD/lib ;;
*) LIB=$ROOT/$BUILD/lib ;;
esac

CLIENTS="rping rdma_server rdma_client ib_write_bw ib_read_bw ib_send_bw
ib_write_lat ib_read_lat ib_send_lat ibv_devinfo ibv_devices"

fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

command -v objdump >/dev/null || { echo "SKIP: objdump not installed"; exit 77; }

# A sanitizer build's libraries need the runtime preloaded into the
# (unsanitized) clients; tests/run.sh exports it as XIW_SAN_PRELOAD.
PRELOAD=""
if [ "${XIW_SAN:-0}" = 1 ] && [ -n "${XIW_SAN_PRELOAD:-}" ]; then
	PRELOAD=$XIW_SAN_PRELOAD
fi

lib_of() {
	case $1 in
	IBVERBS_*) echo libibverbs.so.1 ;;
	RDMACM_*) echo librdmacm.so.1 ;;
	MLX5_*) echo libmlx5.so.1 ;;
	EFA_*) echo libefa.so.1 ;;
	esac
}

# exports LIBFILE: "VERSION NAME" for every defined, versioned symbol.
exports() {
	objdump -T "$1" 2>/dev/null |
		awk '$0 !~ /\*UND\*/ && NF >= 6 { v = $(NF-1); gsub(/[()]/, "", v); print v, $NF }'
}

# imports BIN: "VERSION NAME" for every symbol taken from the RDMA libraries.
imports() {
	objdump -T "$1" 2>/dev/null |
		awk '/\*UND\*/ { v = $(NF-1); gsub(/[()]/, "", v);
		      if (v ~ /^(IBVERBS|RDMACM|MLX5|EFA)_/) print v, $NF }'
}

declare -A have
for l in libibverbs.so.1 librdmacm.so.1 libmlx5.so.1 libefa.so.1; do
	if [ ! -f "$LIB/$l" ]; then
		bad "$LIB/$l not built"
		continue
	fi
	while read -r v n; do
		have["$l $v $n"]=1
	done < <(exports "$LIB/$l")
done

found=0
for c in $CLIENTS; do
	bin=$(command -v "$c") || { echo "note: $c not installed"; continue; }
	found=$((found + 1))
	nimp=0 nmiss=0
	while read -r v n; do
		nimp=$((nimp + 1))
		l=$(lib_of "$v")
		if [ -z "${have["$l $v $n"]:-}" ]; then
			# one line per missing library, not per symbol
			[ -f "$LIB/$l" ] && bad "$c imports $n@$v, not exported by $l"
			nmiss=$((nmiss + 1))
		fi
	done < <(imports "$bin")
	echo "$c: $nimp versioned RDMA imports, $nmiss missing"
done
[ "$found" -eq 0 ] && { echo "SKIP: no client binaries installed"; exit 77; }

# The loader itself: BIND_NOW resolves every import at start-up.
run_client() {
	LD_BIND_NOW=1 LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		LD_PRELOAD=$PRELOAD timeout 10 "$@"
}

for c in $CLIENTS; do
	bin=$(command -v "$c") || continue
	where=$(LD_LIBRARY_PATH=$LIB ldd "$bin" | awk '/libibverbs.so.1/ { print $3 }')
	if [ "$where" != "$LIB/libibverbs.so.1" ]; then
		bad "$c would load libibverbs from '$where', not $LIB"
		continue
	fi
	out=$(run_client "$bin" --help 2>&1 </dev/null)
	if grep -qE "symbol lookup error|version .* not found|cannot open shared object|undefined symbol" <<<"$out"; then
		bad "$c does not load under LD_BIND_NOW=1:"
		grep -E "symbol lookup error|version|shared object|undefined symbol" <<<"$out" | head -5
	fi
done

if command -v ibv_devinfo >/dev/null; then
	out=$(run_client ibv_devinfo -d xiw_lo 2>&1)
	rc=$?
	echo "$out" | head -20
	if [ $rc -ne 0 ]; then
		bad "ibv_devinfo -d xiw_lo exited $rc"
	elif ! grep -qE '^hca_id:[[:space:]]+xiw_lo$' <<<"$out"; then
		bad "ibv_devinfo does not list xiw_lo"
	elif ! grep -qE 'transport:[[:space:]]+iWARP \(1\)' <<<"$out"; then
		bad "xiw_lo is not reported as iWARP transport"
	elif ! grep -qE 'state:[[:space:]]+PORT_ACTIVE' <<<"$out"; then
		bad "xiw_lo port 1 is not PORT_ACTIVE"
	fi
fi

[ "$fail" -eq 0 ] && echo "PASS: all client imports resolve against $LIB"
exit "$fail"
