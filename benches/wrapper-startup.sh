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
kl=$(realpath "${CARGO_TARGET_DIR:-target}")/release/kubelet-labeler
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'int main(void) { return 0; }\n' > "$work/noop.c"
cc -O2 -static -o "$work/noop" "$work/noop.c"
# What the wrapper derives from the node, on the DGX-like fixture, rendered
# as it ships (the env drop-in) and evaluated at each start: the rules of
# examples/rules/openshift-gpu.yaml (RULES=FILE for others; FACTS_ROOT=TREE for another node tree than the DGX fixture), NFD's label set (NFD_LABELS=upstream|openshift,
# default openshift; it reads more facts than the rules), and both together.
# PREPARE_ONLY=DIR: write the trees, print the cases as JSON, time nothing.
rules=${RULES:-examples/rules/openshift-gpu.yaml}
nfd=${NFD_LABELS:-openshift}
dropin=etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf
render() {
  "$kl" render dropins --create-root --root "$work/$1" --profile openshift \
    --wrapper "$wrapper" "${@:2}" >/dev/null
}
render rules --rules "$rules"
render nfd --nfd-labels "$nfd"
render rules+nfd --rules "$rules" --nfd-labels "$nfd"
DERIVED="rules=$work/rules/$dropin nfd-labels=$work/nfd/$dropin rules+nfd-labels=$work/rules+nfd/$dropin" \
FACTS_ROOT=${FACTS_ROOT:-tests/fixtures/nodes/dgx} \
python3 benches/wrapper_startup.py "$wrapper" "$work/noop" "$kl" "$runs" "$@"
[ -n "${PREPARE_ONLY:-}" ] && exit 0
ls -l "$wrapper" | awk '{print "wrapper size: " $5 " bytes"}'
echo "wrapper gzip -9 + base64: $(gzip -9 -c "$wrapper" | base64 -w0 | wc -c) bytes (a MachineConfig's own encoding is ~5% smaller: benches/payload.sh)"
