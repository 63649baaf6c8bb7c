#!/usr/bin/env bash
# Build the static boot-time wrapper that MachineConfigs carry, and print its
# path.  usage: build-wrapper.sh [ARCH...] [--unstripped] [BIN...]
# ARCH: x86_64 (the default) or aarch64; BIN: kubelet-labeler-wrapper (the
# default) or kubelet-labeler-select (the fleet ISO's install-time selector,
# built the same way from the same code). Every ARCH and BIN named is built
# in ONE cargo invocation (std, rebuilt per arch, and the crate are compiled
# once for all of them, and the arches build side by side), and one path is
# printed per line: for each ARCH in order, each BIN in order. A program's
# bytes do not depend on what else the invocation builds (tests/install.rs).
#
# std is rebuilt (-Z build-std, allowed on the stable toolchain through
# RUSTC_BOOTSTRAP) without its backtrace symbolizer, which is most of a static
# Rust binary and useless here, and with std's optimize_for_size. If rust-src
# can't be had, it falls back to the plain build (bigger, same behaviour).
# `--unstripped` keeps the symbols (benches/payload.sh measures the parts) and
# builds under target/wrapper-unstripped so the shipped binary stays as is.
# Sizes and what each part costs: benches/payload.sh.
set -euo pipefail
# Runs from any directory: it builds in its own checkout; a relative
# CARGO_TARGET_DIR is the caller's, so the printed path is where it is.
case "${CARGO_TARGET_DIR:-}" in
  ""|/*) ;;
  *) export CARGO_TARGET_DIR="$PWD/$CARGO_TARGET_DIR" ;;
esac
cd "$(dirname "$0")/.."
arches=()
bins=()
unstripped=
for a in "$@"; do
  case "$a" in
    --unstripped) unstripped=1 ;;
    x86_64|aarch64) [[ " ${arches[*]} " == *" $a "* ]] || arches+=("$a") ;;
    kubelet-labeler-wrapper|kubelet-labeler-select) [[ " ${bins[*]} " == *" $a "* ]] || bins+=("$a") ;;
    *) echo "build-wrapper.sh: unknown argument $a (usage: build-wrapper.sh [x86_64] [aarch64] [--unstripped] [kubelet-labeler-wrapper] [kubelet-labeler-select])" >&2
       exit 2 ;;
  esac
done
[ ${#arches[@]} -gt 0 ] || arches=(x86_64)
[ ${#bins[@]} -gt 0 ] || bins=(kubelet-labeler-wrapper)
if [ -n "$unstripped" ]; then
  export CARGO_PROFILE_WRAPPER_STRIP=false
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/wrapper-unstripped"
fi
targets=()
for arch in "${arches[@]}"; do
  targets+=(--target "$arch-unknown-linux-musl")
  rustup target add "$arch-unknown-linux-musl" >/dev/null 2>&1 || true
done
# Both arches link with the toolchain's lld (self-contained musl crt), for
# two of its options that shrink the gzip'ed payload without changing code
# (measured on x86_64: 4.9 KB less gzip'ed, benches/payload.sh):
# - --icf=all folds functions whose machine code is identical (generic
#   instances that compiled alike);
# - --bp-compression-sort=function orders functions so that similar code
#   sits together, which is what gzip's 32 KiB window rewards.
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
# Size flags, none of which changes behaviour:
# - location-detail=none: no file:line:col strings for panics;
# - panic=immediate-abort (with build-std): a panic is a trap instruction,
#   without std's panic machinery, formatting or unwinder (57 KB less
#   encoded); src/node/wrapper/crash.rs turns the trap into the same fallback
#   the panic hook gives (kubelet starts unchanged, one journal line);
# - relocation-model=static: a plain static executable instead of a
#   static-pie, so no relocation table and no start-up relocation pass;
# - force-unwind-tables=no: no unwind tables (panic = "abort"; the panic
#   hook starts kubelet unchanged).
stable_flags="-Crelocation-model=static -Cforce-unwind-tables=no -Clink-arg=--icf=all -Clink-arg=--bp-compression-sort=function"
# - aarch64: no machine outliner (LLVM runs it by default on size-optimized
#   aarch64 code): the repeated instruction sequences it turns into calls
#   are what gzip compresses anyway, and the calls do not compress (measured:
#   5.8 KB less gzip'ed, 7.8 KB less encoded, for 25 KB more raw; it also
#   saves a call and return per outlined sequence at run time). On x86_64
#   LLVM does not outline by default (forcing it is 8.5 KB larger gzip'ed).
#   Per target (cargo's CARGO_TARGET_<TRIPLE>_RUSTFLAGS), so that it reaches
#   aarch64 and only aarch64 whatever the arches built together and their order.
no_outliner="-Cllvm-args=-enable-machine-outliner=never"
# Reproducible bytes: the same source gives the same binary wherever the
# checkout, target dir, cargo home or rustup home are (panic messages carry
# source paths; std's, with build-std, come from rust-src). The toolchain is
# pinned by rust-toolchain.toml. tests/render.rs compares the carried binary.
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
remap=(--remap-path-prefix="$PWD=/src"
       --remap-path-prefix="${CARGO_HOME:-$HOME/.cargo}=/cargo"
       --remap-path-prefix="${RUSTUP_HOME:-$HOME/.rustup}=/rustup"
       --remap-path-prefix="$target_dir=/target"
       # last, so it wins over the rustup home: the toolchain directory's
       # name (stable-… or 1.95.0-…) differs between machines
       --remap-path-prefix="$(rustc --print sysroot)=/rust-sysroot")
export SOURCE_DATE_EPOCH=0
build=(cargo build --quiet --profile wrapper "${targets[@]}" --no-default-features)
for bin in "${bins[@]}"; do build+=(--bin "$bin"); done
# Each target's flags in its own variable: RUSTFLAGS (or its encoded form)
# would override them, so neither is passed on.
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
target_flags() {
  local arch
  for arch in "${arches[@]}"; do
    local extra=
    [ "$arch" != aarch64 ] || extra=" $no_outliner"
    export "CARGO_TARGET_${arch^^}_UNKNOWN_LINUX_MUSL_RUSTFLAGS=$1$extra"
  done
}
if rustup component add rust-src >/dev/null 2>&1; then
  target_flags "${remap[*]} -Zlocation-detail=none -Zunstable-options -Cpanic=immediate-abort $stable_flags"
  RUSTC_BOOTSTRAP=1 "${build[@]}" -Z build-std=std,panic_abort -Z build-std-features=optimize_for_size >&2
else
  echo "build-wrapper.sh: rust-src unavailable; building with the prebuilt std (larger)" >&2
  target_flags "${remap[*]} $stable_flags"
  "${build[@]}" >&2
fi
# The section headers and the sections no segment loads (.comment,
# .shstrtab) go, as sstrip does: the kernel runs a static executable from
# its program headers alone, and strip leaves them (about 1.4 KB, 0.7 KB
# encoded, per architecture). Nothing loaded changes. In place, once: a
# file whose section header offset is 0 is left as it is (the unstripped
# build keeps everything, for benches/payload.sh's parts).
# The little-endian ELF64 header fields, read with od.
field() { od -An -t "u$3" -j "$2" -N "$3" "$1" | tr -d ' '; }
drop_section_headers() {
  local f=$1 shoff phoff phentsize phnum i at end=0
  # Only a little-endian ELF64 file (a test's stub cargo may leave none).
  [ -f "$f" ] && [ "$(stat -c %s "$f")" -ge 64 ] || return 0
  [ "$(head -c 6 "$f" | od -An -t x1 | tr -d ' \n')" = 7f454c460201 ] || return 0
  shoff=$(field "$f" 40 8)
  [ "$shoff" != 0 ] || return 0
  phoff=$(field "$f" 32 8) phentsize=$(field "$f" 54 2) phnum=$(field "$f" 56 2)
  for ((i = 0; i < phnum; i++)); do
    at=$((phoff + i * phentsize))
    # PT_LOAD: the end of its bytes in the file
    if [ "$(field "$f" "$at" 4)" = 1 ]; then
      local seg_end=$(($(field "$f" $((at + 8)) 8) + $(field "$f" $((at + 32)) 8)))
      [ "$seg_end" -le "$end" ] || end=$seg_end
    fi
  done
  # Only past the last loaded byte (as lld lays a static executable out).
  [ "$end" -gt 0 ] && [ "$end" -le "$shoff" ] || return 0
  truncate -s "$end" "$f"
  # e_shoff, then e_shentsize, e_shnum and e_shstrndx: zero
  head -c 8 /dev/zero | dd of="$f" bs=1 seek=40 conv=notrunc status=none
  head -c 6 /dev/zero | dd of="$f" bs=1 seek=58 conv=notrunc status=none
}
for arch in "${arches[@]}"; do
  for bin in "${bins[@]}"; do
    [ -n "$unstripped" ] || drop_section_headers "$target_dir/$arch-unknown-linux-musl/wrapper/$bin"
    echo "$target_dir/$arch-unknown-linux-musl/wrapper/$bin"
  done
done
