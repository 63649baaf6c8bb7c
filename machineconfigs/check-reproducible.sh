#!/usr/bin/env bash
# Build the wrapper twice from two copies of the source in different
# directories with different target dirs, and check the bytes are equal and
# name no build path. usage: check-reproducible.sh [x86_64|aarch64]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-x86_64}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for copy in one two-longer-name; do
  mkdir -p "$scratch/$copy/src"
  git ls-files -z | xargs -0 tar cf - | tar xf - -C "$scratch/$copy/src"
  CARGO_TARGET_DIR="$scratch/$copy/target" bash "$scratch/$copy/src/machineconfigs/build-wrapper.sh" "$arch" \
    > "$scratch/$copy/path"
done
a=$(cat "$scratch/one/path"); b=$(cat "$scratch/two-longer-name/path")
sha256sum "$a" "$b"
if strings "$a" | grep -E "$scratch|$HOME/\.(cargo|rustup)|/target/" ; then
  echo "check-reproducible.sh: build paths in the binary (above)" >&2; exit 1
fi
cmp "$a" "$b" && echo "check-reproducible.sh: $arch: identical, $(stat -c %s "$a") bytes, no build paths"
