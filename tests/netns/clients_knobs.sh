#!/usr/bin/env bash
# The MPA knobs in other combinations than clients_{plain,crc,markers}.sh:
# asymmetric (one side only), MPA v1, no peer-to-peer RTR, small FPDUs,
# everything at once. Each combination runs rping -V and a few perftest
# programs; one PASS/FAIL line per subcase; exit 0 only if all passed.
#
# With MPA v1 there is no RTR, so the initiator must send first: only the
# programs whose client sends first (rping, ib_write_bw, ib_send_bw).
#
# ack-server-noretry: a server in ack mode (XIW_TX_COMPLETION=ack) and a
# client that does not retry a refused connect, like Linux siw's perftest:
# the server's last setup message completes only at the client's delayed
# ACK (~40 ms), and perftest listens again only after that, so the client's
# second connect finds the port closed unless the closed listener's socket
# kept listening while the handshake connection is open
# (XIW_LISTEN_LINGER_MS, user/transport/ksock_relisten.c).
# timeout: 900
set -uo pipefail
# shellcheck source=tests/netns/lib_clients.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_clients.sh"

xc_need_xiwarp || exit 1
xc_need_progs rping ib_write_bw ib_send_bw ib_read_lat || exit $?
xc_setup clknobs || exit $?

port=17700
# combo NAME "BOTH" "SERVER-ONLY" "CLIENT-ONLY" [v1]
combo() {
	local name=$1 v1=${5:-}
	read -r -a XC_ENV <<<"$2"
	read -r -a XC_SENV <<<"$3"
	read -r -a XC_CENV <<<"$4"
	echo "-- $name: both: ${XC_ENV[*]:--}  server: ${XC_SENV[*]:--}  client: ${XC_CENV[*]:--}"
	xc_rping "$name/rping -S 3000" $((port += 1)) 50 3000
	xc_perftest "$name/ib_write_bw" $((port += 1)) ib_write_bw bw -n 100
	xc_perftest "$name/ib_send_bw" $((port += 1)) ib_send_bw bw -n 100
	if [ "$v1" != v1 ]; then
		xc_perftest "$name/ib_read_lat -s 4096" $((port += 1)) ib_read_lat lat -n 100 -s 4096
	fi
}

combo crc-client-only "" "" "XIW_MPA_CRC=1"
combo crc-server-only "" "XIW_MPA_CRC=1" ""
combo markers-client-only "" "" "XIW_MPA_MARKERS=1"
combo markers-server-only "" "XIW_MPA_MARKERS=1" ""
combo no-p2p "XIW_MPA_P2P=0" "" ""
combo fpdu-512 "XIW_MAX_FPDU=512" "" ""
combo fpdu-mixed "" "XIW_MAX_FPDU=1000" "XIW_MAX_FPDU=300"
combo all-on "XIW_MPA_CRC=1 XIW_MPA_MARKERS=1 XIW_MAX_FPDU=700" "" ""
combo mpa-v1 "XIW_MPA_VERSION=1 XIW_MPA_P2P=0" "" "" v1
combo mpa-v1-client "" "" "XIW_MPA_VERSION=1" v1
combo ack-server-noretry "" "XIW_TX_COMPLETION=ack" "XIW_CM_REFUSED_RETRY_MS=0"
combo mpa-v1-crc-markers "XIW_MPA_VERSION=1 XIW_MPA_P2P=0 XIW_MPA_CRC=1 XIW_MPA_MARKERS=1" "" "" v1

xc_finish
