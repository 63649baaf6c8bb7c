#!/usr/bin/env bash
# Payload figures (not a test): builds the wrapper for x86_64 and aarch64 as
# MachineConfigs carry it, prints raw / gzip -9 / encoded sizes per arch
# (encoded = the base64 of the renderer's own gzip, what the MachineConfig's
# data URL holds, measured on a rendered MachineConfig), then, with the MCO's
# own render (../shared/oracles/mco), the share of OpenShift's 1.5 MiB limit
# on a rendered MachineConfig that a base rendered config and ours take, for
# a single-arch and a mixed-arch pool; then what each part costs, from an
# unstripped build of the same profile and flags. Exits 1 (after the table)
# when a pool's MachineConfigs add more than 256 KiB per architecture (the
# budget).
# usage: benches/payload.sh [PARTS]   (PARTS: rows in the per-part table,
# default 25; 0 = sizes only)
set -euo pipefail
cd "$(dirname "$0")/.."
parts=${1:-25}
# The budget: what a pool's MachineConfigs add, encoded, per architecture.
limit=$((256 * 1024))
# OpenShift 4.22+ refuses a rendered MachineConfig past this
# (docs/openshift-releases.md): etcd's default request limit.
rendered_limit=$((1536 * 1024))
cargo build --quiet --release --bin kubelet-labeler
kl=${CARGO_TARGET_DIR:-target}/release/kubelet-labeler
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
over=0
# all-MCs: every MachineConfig render writes for the pool (the wrapper's,
# which also carries the generator and the sync's units, and the labels'):
# what the pool's rendered config gains, the figure the budget is on.
printf '%-8s %9s %9s %9s %9s  %s\n' arch raw gzip-9 encoded all-MCs "all-MCs vs 256 KiB"
wrappers=()
for arch in x86_64 aarch64; do
  w=$(bash machineconfigs/build-wrapper.sh "$arch")
  wrappers+=(--wrapper "$w")
  raw=$(stat -c %s "$w")
  gz=$(gzip -9 -n -c "$w" | wc -c)
  "$kl" render machineconfig --pool payload --label payload= \
    --wrapper "$w" --output-dir "$scratch/$arch" >/dev/null 2>&1
  # the wrapper file's data URL, without its "data:;base64," prefix
  enc=$(python3 -c 'import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
src = [f["contents"]["source"] for f in d["spec"]["config"]["storage"]["files"]
       if f["path"].startswith("/usr/local/bin/kubelet-labeler-wrapper")]
print(len(src[0].split(",", 1)[1]))' "$scratch/$arch/50-payload-kubelet-labeler-wrapper.yaml")
  mcs=$(grep -lx 'kind: MachineConfig' "$scratch/$arch"/*.yaml | xargs cat | wc -c)
  printf '%-8s %9d %9d %9d %9d  %+d\n' "$arch" "$raw" "$gz" "$enc" "$mcs" $((mcs - limit))
  [ "$mcs" -le "$limit" ] || over=1
done
# The share of the rendered-config limit, by the MCO's own render (running
# cluster): the base is the pool with only a labels MachineConfig of ours
# (about 1 KB), then the single-arch and the mixed-arch pool as rendered.
if oracle=$(bash ../shared/oracles/mco/unpack.sh 2>/dev/null | sed -n 1p) && [ -x "$oracle" ]; then
  mco_root=$(bash ../shared/oracles/mco/unpack.sh | sed -n 2p)
  "$kl" render machineconfig --pool payload --label payload= \
    "${wrappers[@]}" --output-dir "$scratch/mixed" >/dev/null 2>&1
  mkdir "$scratch/base"
  cp "$scratch/x86_64/machineconfigpool-payload.yaml" \
    "$scratch/x86_64/50-payload-kubelet-labeler-labels.yaml" "$scratch/base/"
  rendered() {
    "$oracle" -mco-root "$mco_root" -manifests "$1" 2>/dev/null |
      jq -r '[.carry[] | select(.render == "running cluster") | .renderedSizeBytes][0] // empty'
  }
  echo
  printf '%-22s %10s %8s  %s\n' "pool (MCO's render)" rendered "of 1.5M" "ours, per arch"
  base=$(rendered "$scratch/base")
  printf '%-22s %10d %7.1f%%\n' "base" "$base" "$(awk -v a="$base" -v b="$rendered_limit" 'BEGIN { print 100 * a / b }')"
  for pool in x86_64:1 mixed:2; do
    dir=${pool%:*} n=${pool#*:}
    size=$(rendered "$scratch/$dir")
    printf '%-22s %10d %7.1f%%  %d\n' "$dir ($n arch)" "$size" \
      "$(awk -v a="$size" -v b="$rendered_limit" 'BEGIN { print 100 * a / b }')" $(((size - base) / n))
  done
else
  echo "(no MCO oracle at ../shared/oracles/mco: the rendered-config shares are not measured)"
fi
# The parts table comes before the verdict: over the budget is when it is
# needed most.
if [ "$parts" != 0 ]; then
  for arch in x86_64 aarch64; do
    echo
    echo "== $arch: sections and code by part (unstripped build, same flags) =="
    python3 benches/payload_parts.py "$(bash machineconfigs/build-wrapper.sh "$arch" --unstripped)" "$parts"
  done
fi
if [ "$over" = 1 ]; then
  echo "payload.sh: a pool's MachineConfigs add more than 256 KiB for an architecture" >&2
  exit 1
fi
