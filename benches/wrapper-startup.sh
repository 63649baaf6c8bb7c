#!/usr/bin/env bash
# Benchmark (not a test): time and memory the wrapper adds to a kubelet start
# on the OpenShift 4.20 worker unit tree. Builds the wrapper as shipped
# (static musl, size profile) and a static no-op standing in for kubelet.
# usage: benches/wrapper-startup.sh [RUNS [OTHER_WRAPPER...]] (others: e.g. an
# older build, timed interleaved with this one)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-2000}
shift || true
wrapper=$(bash machineconfigs/build-wrapper.sh x86_64)
cargo build --quiet --release --bin kubelet-labeler
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'int main(void) { return 0; }\n' > "$work/noop.c"
cc -O2 -static -o "$work/noop" "$work/noop.c"
# Node rules on the DGX-like fixture: seed 002's rules (RULES=FILE for
# others; NFD_LABELS=openshift adds NFD's whole label set, which reads every
# fact), rendered as they ship (the env drop-in), evaluated at each start.
target/release/kubelet-labeler render dropins --root "$work/rendered" --profile openshift \
    --rules "${RULES:-examples/rules/seed-002-openshift-gpu.yaml}" ${NFD_LABELS:+--nfd-labels "$NFD_LABELS"} \
    --wrapper "$wrapper" >/dev/null
RULES_DROPIN="$work/rendered/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf" \
FACTS_ROOT=tests/fixtures/nodes/dgx \
python3 benches/wrapper_startup.py "$wrapper" "$work/noop" target/release/kubelet-labeler "$runs" "$@"
ls -l "$wrapper" | awk '{print "wrapper size: " $5 " bytes"}'
echo "wrapper gzip -9 + base64 (as a MachineConfig carries it): $(gzip -9 -c "$wrapper" | base64 -w0 | wc -c) bytes"
