#!/usr/bin/env bash
# librdmacm drop-in API semantics over loopback (no namespace needed):
# runs build/tests/netns/rdmacm_api (see its header for what it checks).
# Exit 0 pass, 1 fail, 77 skip (test program not built).
# timeout: 120
set -uo pipefail
ROOT=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.." && pwd -P)
BUILD=${BUILD:-build}
case $BUILD in
/*) ;;
*) BUILD="$ROOT/$BUILD" ;;
esac
prog="$BUILD/tests/netns/rdmacm_api"
if [ ! -x "$prog" ]; then
	echo "SKIP: $prog not built (make tests)"
	exit 77
fi
timeout 90 "$prog" 127.0.0.1
