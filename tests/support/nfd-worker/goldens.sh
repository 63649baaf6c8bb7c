#!/usr/bin/env bash
# Regenerates tests/fixtures/nfd-worker/<tree>.nfd.json: the features
# nfd-worker's own sources discover on each tree there (build.sh builds
# them from the snapshots given), and SOURCES, the commits they came from.
# Run as root (the program chroots into each tree). tests/nfd_worker_diff.rs
# compares `kubelet-labeler facts --json --root TREE` with these.
#
# First, on this machine's `/`: NFD's code runs the CPUID instruction and
# records the leaves it asked for as the tree `host` (with this kernel's
# release and the sysfs files cpu.security and cpu.sst read, where this
# machine has them), and its cpu.rdt, cpu.security and cpu.sst must equal
# `kubelet-labeler facts --json` on `/` (KUBELET_LABELER, default
# target/debug/kubelet-labeler): the host differential, which needs the
# snapshots and so cannot run in CI; the host tree's golden carries this
# CPU's leaves there.
#
#   goldens.sh NFD_GIT APIMACHINERY_GIT INF_GIT CPUID_GIT
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
TREES=$(cd "$HERE/../../fixtures/nfd-worker" && pwd)
OURS=${KUBELET_LABELER:-$REPO/target/debug/kubelet-labeler}
BIN=$(mktemp -d /tmp/nfd-worker-features.XXXXXX)/nfd-worker-features
trap 'rm -rf "$(dirname "$BIN")"' EXIT
"$HERE/build.sh" "$1" "$2" "$3" "$4" "$BIN" >/dev/null
rev() { git --git-dir="$1" rev-parse "$2^{commit}"; }
{
  echo "# Written by tests/support/nfd-worker/goldens.sh; do not edit."
  echo "kubernetes-sigs/node-feature-discovery $(rev "$1" "${NFD_COMMIT:-76e6cc8cc0d54b8bce037098b72611ffdf66ef5a}")"
  echo "kubernetes/apimachinery ${APIMACHINERY_REF:-v0.35.3} $(rev "$2" "${APIMACHINERY_REF:-v0.35.3}")"
  echo "go-inf/inf $(rev "$3" "${INF_REF:-HEAD}")"
  echo "klauspost/cpuid $(rev "$4" "${CPUID_REF:-HEAD}")"
} >"$TREES/SOURCES"

# The host differential, and the host tree.
host=$TREES/host
rm -rf "$host"; mkdir -p "$host/proc/sys/kernel"
cat /proc/sys/kernel/osrelease >"$host/proc/sys/kernel/osrelease"
echo host >"$host/proc/sys/kernel/hostname"
(cd / && "$BIN" / "$host/kubelet-labeler.cpuid") >"$BIN.host.json"
for f in /sys/module/kvm_intel/parameters/tdx /sys/module/kvm_amd/parameters/sev* \
  /sys/fs/cgroup/misc.capacity /sys/fs/cgroup/misc/misc.capacity \
  /sys/bus/cpu/devices/*/cpufreq/base_frequency; do
  [ -f "$f" ] && { mkdir -p "$host$(dirname "$f")"; cat "$f" >"$host$f"; }
done
sets() { jq -S '.attributes | with_entries(select(.key | IN("cpu.rdt", "cpu.security", "cpu.sst")))' "$@"; }
"$OURS" facts --json --root / >"$BIN.ours.json"
if ! diff <(sets "$BIN.host.json") <(sets "$BIN.ours.json"); then
  echo "goldens.sh: on this machine, kubelet-labeler's cpu.rdt/security/sst differ from NFD's (above: < NFD, > ours)" >&2
  exit 1
fi
echo "host differential: equal on this machine: $(sets -c "$BIN.ours.json")"

for tree in "$TREES"/*/; do
  [ -d "$tree/proc" ] || continue  # rules/ is no tree
  name=$(basename "$tree")
  (cd / && "$BIN" "$tree") >"$TREES/$name.nfd.json"
  echo "$TREES/$name.nfd.json"
done
