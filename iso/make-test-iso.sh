#!/usr/bin/env bash
# Build a small ISO with a CoreOS-style Ignition embed area, the layout of
# the live ISOs: /images/ignition.img (256 KiB of zeros) named by
# /coreos/igninfo.json. usage: make-test-iso.sh OUT.iso [PAD_MIB]
# PAD_MIB adds a file of that size (for benchmarks on a big image); the
# source file is sparse, but xorriso writes its zeros, so the ISO is not.
set -euo pipefail
out=$1
pad=${2:-0}
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/images" "$tree/coreos" "$tree/EFI/redhat"
truncate -s 256K "$tree/images/ignition.img"
printf '{"file": "images/ignition.img"}\n' > "$tree/coreos/igninfo.json"
printf 'set timeout=5\n' > "$tree/EFI/redhat/grub.cfg"
if [ "$pad" -gt 0 ]; then
  truncate -s "${pad}M" "$tree/images/rootfs.img"
fi
xorriso -as mkisofs -quiet -V COREOS_TEST -R -J -o "$out" "$tree"
