#!/usr/bin/env bash
# Unmodified rdma-core clients over xiwarp between two namespaces, no MPA knobs:
# rping -v -V -C 200, ib_{write,read,send}_{bw,lat} -R at two sizes each,
# rdma_server/rdma_client. One PASS/FAIL line per subcase; exit 0 only if
# all passed, 77 if namespaces or the clients are unavailable.
# timeout: 900
set -uo pipefail
# shellcheck source=tests/netns/lib_clients.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_clients.sh"
xc_clients_main plain 17100
