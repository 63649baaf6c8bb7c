#!/usr/bin/env bash
# Benchmark (not a test): time and memory the wrapper adds to a kubelet start
# on the OpenShift 4.20 worker unit tree. Builds the wrapper as shipped
# (static musl, size profile) and a static no-op standing in for kubelet.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-2000}
cargo build --quiet --profile wrapper --target x86_64-unknown-linux-musl --bin kubelet-labeler-wrapper
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'int main(void) { return 0; }\n' > "$work/noop.c"
cc -O2 -static -o "$work/noop" "$work/noop.c"
python3 benches/wrapper_startup.py \
  target/x86_64-unknown-linux-musl/wrapper/kubelet-labeler-wrapper "$work/noop" "$runs"
