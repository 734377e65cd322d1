#!/usr/bin/env bash
# Wire check: capture rping over xiwarp with XIW_MPA_CRC=1 and
# XIW_MPA_MARKERS=1 on both sides and let tshark's iWARP dissectors judge
# it. The capture starts before the connection, so it holds the MPA
# request/reply (tshark 4.0's iwarp_mpa is a TCP heuristic that only
# recognises a stream from its MPA request/reply; there is no decode-as
# for it). rpcordma is disabled: its heuristic claims DDP payloads.
#
# Asserts: an MPA request and a reply, both with the CRC and marker flags;
# at least MIN FPDUs, all decoded as iwarp_ddp_rdmap; the RDMAP opcodes
# rping uses (WRITE, READ request/response, SEND); every FPDU CRC
# "Good CRC32", none "Bad CRC32"; markers present; no malformed frames and
# no expert errors. Prints the counts. 77 = skip (no root / no tshark).
# timeout: 300
set -uo pipefail
# shellcheck source=tests/netns/lib_clients.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_clients.sh"

PORT=17501
COUNT=${XIW_WIRE_COUNT:-50}
SIZE=${XIW_WIRE_SIZE:-2000}   # several MSS-sized FPDUs per RDMA READ/WRITE
MIN_FPDUS=$((COUNT * 4))      # per ping: 2 SENDs, READ req+resp, WRITE (+ SEND)

xc_need_xiwarp || exit 1
xc_need_progs rping tshark dumpcap || exit $?
xc_setup wire || exit $?

# One TCP segment per captured frame (no GSO super-frames): the capture
# then shows what a NIC would put on the wire.
for side in A B; do
	if [ $side = A ]; then ns=$XIW_NS_A dev=$XIW_IF_A; else ns=$XIW_NS_B dev=$XIW_IF_B; fi
	ip -n "$ns" link set dev "$dev" gso_max_segs 1 2>/dev/null ||
		echo "note: could not set gso_max_segs on $dev (captures may hold GSO frames)"
done

CAP="$XIW_LOGDIR/wire.pcapng"
DLOG="$XIW_LOGDIR/dumpcap.log"
# dumpcap as root writes the file itself; -q: no packet count on stderr
xiw_bg A dumpcap -q -i "$XIW_IF_A" -f "tcp port $PORT" -w "$CAP" 2>"$DLOG"
dpid=$XIW_LAST_PID
for _ in $(seq 100); do
	grep -q "Capturing on" "$DLOG" 2>/dev/null && break
	kill -0 "$dpid" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q "Capturing on" "$DLOG" 2>/dev/null; then
	echo "FAIL: dumpcap did not start capturing on $XIW_IF_A:"
	sed 's/^/  | /' "$DLOG"
	exit 1
fi

XC_ENV=(XIW_MPA_CRC=1 XIW_MPA_MARKERS=1)
echo "rping -C $COUNT -S $SIZE with ${XC_ENV[*]} on both sides, capturing on $XIW_IF_A"
xc_rping "wire/rping -C $COUNT -S $SIZE" "$PORT" "$COUNT" "$SIZE"
rping_ok=$XC_FAIL

sleep 1 # let dumpcap write the last frames
kill -INT "$dpid" 2>/dev/null || true
xiw_wait_pid "$dpid" 10 || true
if [ ! -s "$CAP" ]; then
	echo "FAIL: no capture file written"
	sed 's/^/  | /' "$DLOG"
	exit 1
fi

TS=(tshark -n -r "$CAP" --disable-protocol rpcordma -o tcp.desegment_tcp_streams:TRUE)
# count FILTER: number of frames matching the display filter
count() {
	"${TS[@]}" -Y "$1" 2>/dev/null | wc -l
}

frames=$(count "frame")
payload=$(count "tcp.len > 0")
req=$(count "iwarp_mpa.req")
rep=$(count "iwarp_mpa.rep")
req_flags=$(count "iwarp_mpa.req && iwarp_mpa.crc_flag == 1 && iwarp_mpa.marker_flag == 1")
rep_flags=$(count "iwarp_mpa.rep && iwarp_mpa.crc_flag == 1 && iwarp_mpa.marker_flag == 1")
fpdu_frames=$(count "iwarp_mpa.fpdu")
ddp_frames=$(count "iwarp_ddp_rdmap")
marker_frames=$(count "iwarp_mpa.markers")
malformed=$(count "_ws.malformed")
experr=$(count '_ws.expert.severity == "Error"')
# FPDUs: every occurrence of the ULPDU length field (a frame may hold several)
fpdus=$("${TS[@]}" -Y iwarp_mpa.fpdu -T fields -E occurrence=a -E aggregator=/s \
	-e iwarp_mpa.ulpdulength 2>/dev/null | wc -w)
verbose="$XIW_LOGDIR/wire.txt"
"${TS[@]}" -V >"$verbose" 2>/dev/null
good=$(grep -c 'Good CRC32' "$verbose" || true)
bad=$(grep -c 'Bad CRC32' "$verbose" || true)
opcodes=$("${TS[@]}" -Y iwarp_rdma -T fields -E occurrence=a -E aggregator=/s \
	-e iwarp_rdma.opcode 2>/dev/null | tr ' ' '\n' | grep . | sort | uniq -c |
	awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}')

cat <<EOF
capture: $frames frames ($payload with TCP payload)
  MPA request frames        $req (with CRC+marker flags: $req_flags)
  MPA reply frames          $rep (with CRC+marker flags: $rep_flags)
  frames with FPDUs         $fpdu_frames
  FPDUs                     $fpdus (need >= $MIN_FPDUS)
  frames as iwarp_ddp_rdmap $ddp_frames
  RDMAP opcodes             ${opcodes:-none}
  frames with markers       $marker_frames
  CRC good / bad            $good / $bad
  malformed frames          $malformed
  expert errors             $experr
EOF

fail=0
check() { # check DESCRIPTION TRUTH(1|0)
	if [ "$2" = 1 ]; then
		printf 'PASS  %s\n' "$1"
	else
		printf 'FAIL  %s\n' "$1"
		fail=1
	fi
}
check "rping over xiwarp with CRC+markers" $((rping_ok == 0))
check "MPA request captured and decoded ($req)" $((req >= 1))
check "MPA reply captured and decoded ($rep)" $((rep >= 1))
check "MPA request and reply carry the CRC and marker flags" \
	$((req_flags >= 1 && rep_flags >= 1))
check "at least $MIN_FPDUS FPDUs ($fpdus)" $((fpdus >= MIN_FPDUS))
check "every FPDU frame decodes as iwarp_ddp_rdmap ($ddp_frames/$fpdu_frames)" \
	$((ddp_frames >= fpdu_frames && fpdu_frames > 0))
check "every FPDU CRC good ($good good, $bad bad, $fpdus FPDUs)" \
	$((bad == 0 && good >= fpdus && good > 0))
# rping uses all four: WRITE 0x00, READ request 0x01 / response 0x02, SEND 0x03
ops_seen=0
for op in 0x00 0x01 0x02 0x03; do
	case " $opcodes" in *" $op x"*) ops_seen=$((ops_seen + 1)) ;; esac
done
check "RDMAP WRITE, READ request/response and SEND all seen" $((ops_seen == 4))
check "markers present ($marker_frames frames)" $((marker_frames > 0))
check "no malformed frames ($malformed)" $((malformed == 0))
check "no expert errors ($experr)" $((experr == 0))

if [ $fail -ne 0 ]; then
	echo "first problem frames:"
	"${TS[@]}" -Y '_ws.malformed || _ws.expert.severity == "Error"' 2>/dev/null | head -n 10 | sed 's/^/  | /'
	grep -m5 -B3 'Bad CRC32' "$verbose" | sed 's/^/  | /'
	if [ "${XIW_KEEP_LOGS:-0}" != 1 ]; then
		keep=$(mktemp /tmp/xiw-wire-fail.XXXXXX.pcapng)
		cp "$CAP" "$keep" && echo "capture kept: $keep"
	fi
	exit 1
fi
exit 0
