#!/usr/bin/env bash
# Regenerates tests/fixtures/nfd-worker/<tree>.nfd.json: the features
# nfd-worker's own sources discover on each tree there (build.sh builds
# them from the snapshots given), and SOURCES, the commits they came from.
# Run as root (the program chroots into each tree). tests/nfd_worker_diff.rs
# compares `kubelet-labeler facts --json --root TREE` with these.
#
#   goldens.sh NFD_GIT APIMACHINERY_GIT INF_GIT
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TREES=$(cd "$HERE/../../fixtures/nfd-worker" && pwd)
BIN=$(mktemp -d /tmp/nfd-worker-features.XXXXXX)/nfd-worker-features
trap 'rm -rf "$(dirname "$BIN")"' EXIT
"$HERE/build.sh" "$1" "$2" "$3" "$BIN" >/dev/null
rev() { git --git-dir="$1" rev-parse "$2^{commit}"; }
{
  echo "# Written by tests/support/nfd-worker/goldens.sh; do not edit."
  echo "kubernetes-sigs/node-feature-discovery $(rev "$1" "${NFD_COMMIT:-76e6cc8cc0d54b8bce037098b72611ffdf66ef5a}")"
  echo "kubernetes/apimachinery ${APIMACHINERY_REF:-v0.35.3} $(rev "$2" "${APIMACHINERY_REF:-v0.35.3}")"
  echo "go-inf/inf $(rev "$3" "${INF_REF:-HEAD}")"
} >"$TREES/SOURCES"
for tree in "$TREES"/*/; do
  name=$(basename "$tree")
  (cd / && "$BIN" "$tree") >"$TREES/$name.nfd.json"
  echo "$TREES/$name.nfd.json"
done
