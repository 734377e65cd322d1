#!/usr/bin/env bash
# Generate vmlinux.h (all kernel types, from the running kernel's BTF) for
# CO-RE BPF programs. Output: the path given as $1 (default vmlinux/vmlinux.h).
set -euo pipefail
out=${1:-"$(dirname "$0")/vmlinux.h"}
btf=/sys/kernel/btf/vmlinux
[ -r "$btf" ] || { echo "vmlinux/gen.sh: $btf not readable: kernel built without BTF?" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "vmlinux/gen.sh: bpftool missing: run scripts/deps.sh" >&2; exit 1; }
tmp=$(mktemp "${out}.XXXXXX")
bpftool btf dump file "$btf" format c > "$tmp"
mv "$tmp" "$out"
