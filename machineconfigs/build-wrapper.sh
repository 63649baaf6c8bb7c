#!/usr/bin/env bash
# Build the static boot-time wrapper that MachineConfigs carry, and print its
# path.  usage: build-wrapper.sh [x86_64|aarch64]
#
# std is rebuilt (-Z build-std, allowed on the stable toolchain through
# RUSTC_BOOTSTRAP) without its backtrace symbolizer, which is most of a static
# Rust binary and useless here: ~200 KB instead of ~450 KB. If rust-src can't
# be had, it falls back to the plain build (bigger, same behaviour).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-x86_64}
case "$arch" in
  x86_64|aarch64) ;;
  *) echo "build-wrapper.sh: unknown arch $arch (x86_64 or aarch64)" >&2; exit 2 ;;
esac
target="$arch-unknown-linux-musl"
rustup target add "$target" >/dev/null 2>&1 || true
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
# Reproducible bytes: the same source gives the same binary wherever the
# checkout, target dir, cargo home or rustup home are (panic messages carry
# source paths; std's, with build-std, come from rust-src). The toolchain is
# pinned by rust-toolchain.toml. tests/render.rs compares the carried binary.
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
remap=(--remap-path-prefix="$PWD=/src"
       --remap-path-prefix="${CARGO_HOME:-$HOME/.cargo}=/cargo"
       --remap-path-prefix="${RUSTUP_HOME:-$HOME/.rustup}=/rustup"
       --remap-path-prefix="$target_dir=/target")
export RUSTFLAGS="${remap[*]}"
export SOURCE_DATE_EPOCH=0
build=(cargo build --quiet --profile wrapper --target "$target" --bin kubelet-labeler-wrapper --no-default-features)
if rustup component add rust-src >/dev/null 2>&1; then
  RUSTC_BOOTSTRAP=1 "${build[@]}" -Z build-std=std,panic_unwind -Z build-std-features= >&2
else
  echo "build-wrapper.sh: rust-src unavailable; building with the prebuilt std (larger)" >&2
  "${build[@]}" >&2
fi
echo "$target_dir/$target/wrapper/kubelet-labeler-wrapper"
