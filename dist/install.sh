#!/usr/bin/env bash
# Install kubelet-labeler from this checkout: the CLI into ROOT/bin, and
# beside it the static programs it ships to nodes, for each architecture
# asked: kubelet-labeler-wrapper-<arch> (render) and
# kubelet-labeler-select-<arch> (iso fleet), where the CLI finds them.
#
# usage: install.sh [--root DIR] [--arch ARCH]...
#   --root DIR   install into DIR/bin, as `cargo install --root DIR`; default
#                $CARGO_INSTALL_ROOT, else $CARGO_HOME, else ~/.cargo
#   --arch ARCH  x86_64 or aarch64, repeatable; default x86_64 (render's
#                default) and this host's architecture if it is another one.
#                Run again with `--arch aarch64` to add arm64 nodes' programs.
#
# Two cargo invocations in all, running side by side: `cargo install` of the
# CLI, and ONE build of every static program for every arch asked
# (machineconfigs/build-wrapper.sh: std is rebuilt once per arch and the
# crate compiled once for both programs). Both build in cargo's target
# directory (CARGO_TARGET_DIR, else the checkout's target/), not in a
# temporary one, so running this again after a `git pull` rebuilds only what
# changed. Time to the first render: docs/install.md.
set -euo pipefail
case "${CARGO_TARGET_DIR:-}" in
  ""|/*) ;;
  *) export CARGO_TARGET_DIR="$PWD/$CARGO_TARGET_DIR" ;;
esac
root=${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}
arches=()
while [ $# -gt 0 ]; do
  case "$1" in
    --root)
      root=${2:?install.sh: --root needs a directory}
      case "$root" in /*) ;; *) root="$PWD/$root" ;; esac
      shift 2 ;;
    --arch)
      case "${2:-}" in
        x86_64|aarch64) [[ " ${arches[*]} " == *" $2 "* ]] || arches+=("$2") ;;
        *) echo "install.sh: --arch ${2:-}: x86_64 or aarch64 (ppc64le and s390x: render --wrapper)" >&2; exit 2 ;;
      esac
      shift 2 ;;
    *) echo "install.sh: unknown argument $1 (usage: install.sh [--root DIR] [--arch x86_64|aarch64]...)" >&2; exit 2 ;;
  esac
done
if [ ${#arches[@]} -eq 0 ]; then
  arches=(x86_64)
  [ "$(uname -m)" = aarch64 ] && arches+=(aarch64)
fi
cd "$(dirname "$0")/.."
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
bin=$root/bin
mkdir -p "$bin"

# The static programs, in the background: their build is mostly one rustc
# at a time (std's crates and the crate at one codegen unit, then LTO), so
# the CLI's build below uses the other CPUs meanwhile.
programs=$(mktemp)
trap 'rm -f "$programs"' EXIT
bash machineconfigs/build-wrapper.sh "${arches[@]}" kubelet-labeler-wrapper kubelet-labeler-select >"$programs" &
static_build=$!
# --bin kubelet-labeler: a plain `cargo install` would also install cargo's
# dynamically linked wrapper and selector, which no node can run.
cli_status=0
cargo install --locked --path . --bin kubelet-labeler --root "$root" --target-dir "$target_dir" || cli_status=$?
static_status=0
wait "$static_build" || static_status=$?
[ "$cli_status" -eq 0 ] || { echo "install.sh: cargo install of the CLI failed" >&2; exit "$cli_status"; }
[ "$static_status" -eq 0 ] || { echo "install.sh: building the static programs failed (machineconfigs/build-wrapper.sh)" >&2; exit "$static_status"; }

# build-wrapper.sh printed, per arch, the wrapper's path then the selector's.
mapfile -t built <"$programs"
i=0
for arch in "${arches[@]}"; do
  for name in kubelet-labeler-wrapper kubelet-labeler-select; do
    install -m 0755 "${built[$i]}" "$bin/$name-$arch"
    echo "installed $bin/$name-$arch" >&2
    i=$((i + 1))
  done
done
