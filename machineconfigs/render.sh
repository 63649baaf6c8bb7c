#!/usr/bin/env bash
# Render the example in this directory: pool worker-gpu, nodes registering
# with node.kubernetes.io/worker-gpu="". Builds the static wrapper the
# worker MachineConfig carries, then the CLI. A test fails when the files
# here differ from what this renders.
set -euo pipefail
cd "$(dirname "$0")/.."
# cargo's target directory, as cargo reads CARGO_TARGET_DIR from here.
target_dir=${CARGO_TARGET_DIR:-target}
wrapper=$(bash machineconfigs/build-wrapper.sh x86_64)
cargo build --quiet --release --bin kubelet-labeler
"$target_dir/release/kubelet-labeler" render machineconfig --pool worker-gpu \
  --label node.kubernetes.io/worker-gpu= --wrapper "$wrapper" \
  --output-dir machineconfigs --force
