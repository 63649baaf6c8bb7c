#!/usr/bin/env bash
# Benchmark (not a test): embedding in a 1 GiB live ISO (zero padding, written out in full),
# kubelet-labeler and coreos-installer side by side, medians of RUNS.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-9}
cargo build --quiet --release --bin kubelet-labeler
kl=$(realpath "${CARGO_TARGET_DIR:-target}")/release/kubelet-labeler
ci=$(command -v coreos-installer || echo "$HOME/.cargo/bin/coreos-installer")
work=$(mktemp -d -p "${BENCH_DIR:-$(realpath "${CARGO_TARGET_DIR:-target}")}")
trap 'rm -rf "$work"' EXIT
bash iso/make-test-iso.sh "$work/base.iso" 1024 2>/dev/null
cp ../shared/fixtures/coreos-installer/pointer.ign "$work/c.ign" 2>/dev/null \
  || printf '{"ignition":{"version":"3.4.0"}}' > "$work/c.ign"
ls -ls "$work/base.iso" | awk '{printf "image: %d bytes apparent, %d KiB allocated\n", $6, $1}'

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }

inplace() { # tool-cmd...
  for _ in $(seq "$runs"); do
    cp --reflink=auto --sparse=always "$work/base.iso" "$work/t.iso"
    ms "$@" "$work/t.iso"
  done | median
}
copyout() {
  for _ in $(seq "$runs"); do
    rm -f "$work/o.iso"
    ms "$@" -o "$work/o.iso" "$work/base.iso"
  done | median
}
cpref() {
  for _ in $(seq "$runs"); do rm -f "$work/o.iso"; ms cp --reflink=auto "$work/base.iso" "$work/o.iso"; done | median
}

a=$(inplace "$kl" iso embed -f -i "$work/c.ign")
b=$(inplace "$ci" iso ignition embed -f -i "$work/c.ign")
echo "in place:  kubelet-labeler $((a / 1000)).$(( (a % 1000) / 100 )) ms, coreos-installer $((b / 1000)).$(( (b % 1000) / 100 )) ms (target <= 50 ms)"
c=$(copyout "$kl" iso embed -i "$work/c.ign")
d=$(copyout "$ci" iso ignition embed -i "$work/c.ign")
r=$(cpref)
echo "-o FILE:   kubelet-labeler $((c / 1000)) ms, coreos-installer $((d / 1000)) ms, cp --reflink=auto $((r / 1000)) ms"
awk -v c="$c" -v r="$r" -v d="$d" 'BEGIN {printf "ratio to cp: kubelet-labeler %.2fx, coreos-installer %.2fx (target <= 1.2x)\n", c/r, d/r}'
