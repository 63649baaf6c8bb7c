#!/usr/bin/env bash
# Payload figures (not a test): builds the wrapper for x86_64 and aarch64 as
# MachineConfigs carry it, prints raw / gzip -9 / encoded sizes per arch
# (encoded = the base64 of the renderer's own gzip, what the MachineConfig's
# data URL holds, measured on a rendered MachineConfig), then what each
# part costs, from an unstripped build of the same profile and flags.
# usage: benches/payload.sh [PARTS]   (PARTS: rows in the per-part table,
# default 25; 0 = sizes only)
set -euo pipefail
cd "$(dirname "$0")/.."
parts=${1:-25}
limit=$((200 * 1024))
cargo build --quiet --release --bin kubelet-labeler
kl=${CARGO_TARGET_DIR:-target}/release/kubelet-labeler
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# all-MCs: every MachineConfig render writes for the pool (the wrapper's,
# which also carries the generator and the sync's units, and the labels'):
# what the pool's rendered config gains, the figure the 200 KiB budget is on.
printf '%-8s %9s %9s %9s %9s  %s\n' arch raw gzip-9 encoded all-MCs "all-MCs vs 200 KiB"
for arch in x86_64 aarch64; do
  w=$(bash machineconfigs/build-wrapper.sh "$arch")
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
done
[ "$parts" = 0 ] && exit 0
for arch in x86_64 aarch64; do
  echo
  echo "== $arch: sections and code by part (unstripped build, same flags) =="
  python3 benches/payload_parts.py "$(bash machineconfigs/build-wrapper.sh "$arch" --unstripped)" "$parts"
done
