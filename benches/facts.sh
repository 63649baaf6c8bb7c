#!/usr/bin/env bash
# Benchmark (not a test): `kubelet-labeler facts --root <dgx fixture>` against
# `lspci -n` on the same fixture sysfs, medians of RUNS interleaved runs; and
# facts::read alone in-process (the wrapper's per-start cost; budget 0.2 ms).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-301}
cargo build --quiet --release --features iso --bin kubelet-labeler --example facts_read
release=$(realpath "${CARGO_TARGET_DIR:-target}")/release
kl=$release/kubelet-labeler
root=$PWD/tests/fixtures/nodes/dgx

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
us() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }

ours=$(mktemp) theirs=$(mktemp)
trap 'rm -f "$ours" "$theirs"' EXIT
for _ in $(seq "$runs"); do
  us "$kl" facts --root "$root" >>"$ours"
  us lspci -n -A linux-sysfs -O "sysfs.path=$root/sys/bus/pci" >>"$theirs"
done
echo "kubelet-labeler facts (process): $(median <"$ours") µs median of $runs"
echo "lspci -n (process, PCI only):    $(median <"$theirs") µs median of $runs"
echo "facts::read in-process:          $("$release/examples/facts_read" "$root" 2001) µs median of 2001"
# Each feature alone, on this machine's / and the nfd-worker trees: what a
# rule naming only it adds to a kubelet start.
for f in kernel.version kernel.config kernel.loadedmodule kernel.enabledmodule kernel.selinux \
    kernel.kvm cpu.cstate cpu.pstate cpu.coprocessor memory.swap memory.hugepages \
    network.virtual local.label cpu.rdt cpu.security cpu.sst; do
  printf '%-22s / %6s µs   intel tree %6s µs\n' "$f" "$("$release/examples/facts_read" / 501 "$f")" \
    "$("$release/examples/facts_read" "$PWD/tests/fixtures/nfd-worker/intel" 501 "$f")"
done
# kernel.config as the wrapper reads it when the rules name one option by
# key (the usual rule): only that option is kept.
printf '%-22s / %6s µs   intel tree %6s µs\n' "kernel.config NO_HZ" \
  "$("$release/examples/facts_read" / 501 kernel.config kernel.config.NO_HZ)" \
  "$("$release/examples/facts_read" "$PWD/tests/fixtures/nfd-worker/intel" 501 kernel.config kernel.config.NO_HZ)"
