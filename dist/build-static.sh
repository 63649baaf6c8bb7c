#!/usr/bin/env bash
# Build kubelet-labeler (the CLI, default features, `iso` included) as static
# musl executables, with the static boot wrappers beside them, and write
# SHA256SUMS (`sha256sum -c SHA256SUMS` in the output directory checks it).
# A bastion host then needs nothing installed: the CLI finds
# kubelet-labeler-wrapper-<arch> beside itself for `render machineconfig`,
# and kubelet-labeler-select-<arch> for `iso fleet`.
#
# usage: build-static.sh [-o DIR] [x86_64] [aarch64]
#   DIR defaults to target/static; both arches when none is named.
#   Prints DIR on stdout; cargo's output goes to stderr.
#
# The only C is liblzma (lzma-sys, for xz2: the very encoder coreos-installer
# uses, so embedded archives stay byte-identical to its). It is compiled from
# lzma-sys's bundled source against Debian's musl headers, with gcc for
# x86_64 and the aarch64 gcc cross compiler for aarch64; rustc links against
# its own bundled musl. Needs, on Debian 12:
#   apt-get install gcc musl-dev                         # x86_64
#   dpkg --add-architecture arm64 && apt-get update &&
#   apt-get install gcc-aarch64-linux-gnu musl-dev:arm64  # aarch64
set -euo pipefail
# Runs from any directory: -o DIR and a relative CARGO_TARGET_DIR are the
# caller's; the default output is the checkout's target/static.
caller=$PWD
case "${CARGO_TARGET_DIR:-}" in
  ""|/*) ;;
  *) export CARGO_TARGET_DIR="$caller/$CARGO_TARGET_DIR" ;;
esac
cd "$(dirname "$0")/.."
out=$PWD/target/static
arches=()
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=${2:?build-static.sh: -o needs a directory}
        case "$out" in /*) ;; *) out="$caller/$out" ;; esac
        shift 2 ;;
    x86_64|aarch64) arches+=("$1"); shift ;;
    *) echo "build-static.sh: unknown argument $1 (usage: build-static.sh [-o DIR] [x86_64] [aarch64])" >&2; exit 2 ;;
  esac
done
[ ${#arches[@]} -gt 0 ] || arches=(x86_64 aarch64)

# Check every arch's C toolchain before building anything.
for arch in "${arches[@]}"; do
  case "$arch" in
    x86_64) cc=gcc; deb=musl-dev; ccdeb=gcc ;;
    aarch64) cc=aarch64-linux-gnu-gcc; deb=musl-dev:arm64; ccdeb=gcc-aarch64-linux-gnu ;;
  esac
  if ! command -v "$cc" >/dev/null; then
    echo "build-static.sh: $cc is missing: apt-get install $ccdeb" >&2; exit 1
  fi
  if [ ! -f "/usr/include/$arch-linux-musl/stdlib.h" ]; then
    fix="apt-get install $deb"
    [ "$arch" = aarch64 ] && fix="dpkg --add-architecture arm64 && apt-get update && $fix"
    echo "build-static.sh: musl headers for $arch are missing (/usr/include/$arch-linux-musl): $fix" >&2
    exit 1
  fi
done

# Reproducible bytes, as machineconfigs/build-wrapper.sh: no checkout, target
# dir, cargo or rustup home in the binary (panic messages and liblzma's
# assert() strings carry source paths); the toolchain is pinned by
# rust-toolchain.toml, the crates by Cargo.lock (--locked).
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
sysroot=$(rustc --print sysroot)
rust_remap="--remap-path-prefix=$PWD=/src --remap-path-prefix=$cargo_home=/cargo"
rust_remap+=" --remap-path-prefix=${RUSTUP_HOME:-$HOME/.rustup}=/rustup"
rust_remap+=" --remap-path-prefix=$target_dir=/target --remap-path-prefix=$sysroot=/rust-sysroot"
c_remap="-ffile-prefix-map=$PWD=/src -ffile-prefix-map=$cargo_home=/cargo -ffile-prefix-map=$target_dir=/target"
export SOURCE_DATE_EPOCH=0
# SHA256SUMS in byte order of the names, whatever the caller's locale.
export LC_ALL=C
# Build liblzma from source even where pkg-config would find the system's.
export LZMA_API_STATIC=1

mkdir -p "$out"
rm -f "$out"/kubelet-labeler-* "$out/SHA256SUMS"
for arch in "${arches[@]}"; do
  target="$arch-unknown-linux-musl"
  t=${target//-/_}
  rustup target add "$target" >/dev/null 2>&1 || true
  case "$arch" in
    x86_64) cc=gcc; ar=ar ;;
    aarch64) cc=aarch64-linux-gnu-gcc; ar=aarch64-linux-gnu-ar
             export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld ;;
  esac
  # musl's headers only (the compiler's own after them, as musl-gcc does):
  # a glibc header would give liblzma glibc's struct layouts (pthread types).
  export "CC_$t=$cc" "AR_$t=$ar"
  export "CFLAGS_$t=-nostdinc -isystem /usr/include/$arch-linux-musl -isystem $($cc -print-file-name=include) $c_remap"
  RUSTFLAGS="$rust_remap" cargo build --locked --quiet --profile dist --target "$target" --bin kubelet-labeler >&2
  cp "$target_dir/$target/dist/kubelet-labeler" "$out/kubelet-labeler-$arch"
  # Both static programs in one build (one line each: wrapper, selector).
  programs=$(bash machineconfigs/build-wrapper.sh "$arch" kubelet-labeler-wrapper kubelet-labeler-select)
  cp "$(sed -n 1p <<<"$programs")" "$out/kubelet-labeler-wrapper-$arch"
  cp "$(sed -n 2p <<<"$programs")" "$out/kubelet-labeler-select-$arch"
done
(cd "$out" && sha256sum -- kubelet-labeler-* > SHA256SUMS)
echo "$out"
