#!/usr/bin/env bash
# Payload figures (not a test): builds the wrapper for x86_64 and aarch64 as
# MachineConfigs carry it, prints raw / gzip -9 / encoded sizes per arch
# (encoded = gzip -9 + base64, what a data URL holds; the renderer's own
# gzip lands within ~1% of gzip -9), then what each part costs, from an
# unstripped build of the same profile and flags.
# usage: benches/payload.sh [PARTS]   (PARTS: rows in the per-part table, default 25)
set -euo pipefail
cd "$(dirname "$0")/.."
parts=${1:-25}
limit=$((200 * 1024))
printf '%-8s %9s %9s %9s  %s\n' arch raw gzip-9 encoded "encoded vs 200 KiB"
for arch in x86_64 aarch64; do
  w=$(bash machineconfigs/build-wrapper.sh "$arch")
  raw=$(stat -c %s "$w")
  gz=$(gzip -9 -n -c "$w" | wc -c)
  enc=$(gzip -9 -n -c "$w" | base64 -w0 | wc -c)
  printf '%-8s %9d %9d %9d  %+d\n' "$arch" "$raw" "$gz" "$enc" $((enc - limit))
done
for arch in x86_64 aarch64; do
  echo
  echo "== $arch: sections and code by part (unstripped build, same flags) =="
  python3 benches/payload_parts.py "$(bash machineconfigs/build-wrapper.sh "$arch" --unstripped)" "$parts"
done
