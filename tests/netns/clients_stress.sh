#!/usr/bin/env bash
# Unmodified clients over xiwarp beyond the defaults: large messages (many
# FPDUs per message), several QPs per connection pair, bidirectional
# traffic, all sizes (-a), deep send queues, inline sends, several WRs per
# post. Default MPA settings. One PASS/FAIL line per subcase; exit 0 only
# if all passed, 77 if namespaces or the clients are unavailable.
# timeout: 900
set -uo pipefail
# shellcheck source=tests/netns/lib_clients.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib_clients.sh"

xc_need_xiwarp || exit 1
xc_need_progs rping ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_send_lat || exit $?
xc_setup clstress || exit $?

p=17800
xc_rping "rping -S 65000 (64 KiB pings)" $((p += 1)) 20 65000
xc_perftest "ib_write_bw -s 1M" $((p += 1)) ib_write_bw bw -n 50 -s 1048576
xc_perftest "ib_read_bw -s 1M" $((p += 1)) ib_read_bw bw -n 50 -s 1048576
xc_perftest "ib_send_bw -s 1M" $((p += 1)) ib_send_bw bw -n 50 -s 1048576
xc_perftest "ib_write_bw -q 4 (4 QPs)" $((p += 1)) ib_write_bw bw -n 200 -q 4
xc_perftest "ib_send_bw -q 4 (4 QPs)" $((p += 1)) ib_send_bw bw -n 200 -q 4
xc_perftest "ib_write_bw -b (bidirectional)" $((p += 1)) ib_write_bw bw -n 200 -b
xc_perftest "ib_read_bw -b (bidirectional)" $((p += 1)) ib_read_bw bw -n 200 -b
xc_perftest "ib_send_bw -b (bidirectional)" $((p += 1)) ib_send_bw bw -n 200 -b
xc_perftest "ib_write_bw -a (2 B .. 8 MiB)" $((p += 1)) ib_write_bw bw -n 20 -a
xc_perftest "ib_send_lat -a (2 B .. 8 MiB)" $((p += 1)) ib_send_lat lat -n 20 -a
xc_perftest "ib_write_bw -q 2 -l 4 (4 WRs/post)" $((p += 1)) ib_write_bw bw -n 200 -q 2 -l 4
xc_perftest "ib_send_bw -t 1024 -s 64 (deep SQ)" $((p += 1)) ib_send_bw bw -n 2000 -t 1024 -s 64
xc_perftest "ib_write_lat -I 64 -s 32 (inline)" $((p += 1)) ib_write_lat lat -n 200 -I 64 -s 32
xc_finish
