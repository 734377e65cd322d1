#!/usr/bin/env bash
# Install every Debian package xiwarp needs to build, test and demo.
# Idempotent: installs only what is missing. Needs root (or sudo).
# Usage: scripts/deps.sh [--check | --help]
#   --check  report what is missing (exit 1 if anything), install nothing
set -euo pipefail
case ${1:-} in -h | --help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

PKGS=(
  # build
  build-essential clang llvm pkg-config libelf-dev zlib1g-dev
  libbpf-dev bpftool linux-libc-dev libclang-rt-14-dev libcmocka-dev
  # xsk transport: routes and neighbours over netlink
  libmnl-dev
  # rdma-core v44 headers (ABI we mimic) and the real client programs
  libibverbs-dev librdmacm-dev rdmacm-utils ibverbs-utils perftest
  # network tests, wire check, benchmarks
  iproute2 tshark iperf3 sockperf libfabric-bin procps psmisc socat ethtool
  # more unmodified RDMA programs (tests/netns/apps_*.sh): qperf, fio's
  # rdma ioengine, uDAPL's dtest/dapltest (libdapl2 + dat.conf entry)
  qperf fio dapl2-utils libdapl2
  # sockets over RDMA (xiwrun --sockets): the unmodified TCP programs
  iperf redis-server redis-tools python3
  # siw interop tier (tests/interop): qemu guest with the kernel's siw,
  # built by ../shared/siw-peer/build.sh (which adds linux-headers itself)
  qemu-system-x86 cpio kmod xz-utils zstd python3
)

# --check: report what is missing and exit 1, install nothing.
check_only=0
[ "${1:-}" = "--check" ] && check_only=1

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { echo "deps: all ${#PKGS[@]} packages present"; exit 0; }
if [ $check_only -eq 1 ]; then
  echo "deps: missing Debian packages: ${missing[*]}" >&2
  echo "deps: run 'sudo scripts/deps.sh' to install them" >&2
  exit 1
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root may capture; answer no.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
