#!/usr/bin/env bash
# Render the example in this directory: pool worker-gpu, nodes registering
# with node.kubernetes.io/worker-gpu="". Builds the static wrapper the
# worker MachineConfig carries, then the CLI. A test fails when the files
# here differ from what this renders.
set -euo pipefail
cd "$(dirname "$0")/.."
wrapper=$(bash machineconfigs/build-wrapper.sh x86_64)
cargo build --quiet --release --bin kubelet-labeler
target/release/kubelet-labeler render machineconfig --pool worker-gpu \
  --label node.kubernetes.io/worker-gpu= --wrapper "$wrapper" \
  --output-dir machineconfigs --force
