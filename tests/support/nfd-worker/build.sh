#!/usr/bin/env bash
# Builds nfd-worker-features offline: nfd-worker's own feature sources
# (source/{kernel,memory,network,local} whole, source/cpu's cstate, pstate
# and coprocessor files) from a fetched NFD snapshot, unchanged, with
# Kubernetes' resource.Quantity (apimachinery, for hugepage sizes) and
# gopkg.in/inf.v0 from their snapshots, and stubs for the rest (the rule
# oracle's in ../shared/oracles/nfd/stubs, and stubs/ here). Only main.go
# and export_cpu.go.in are written by hand.
#
#   build.sh NFD_GIT APIMACHINERY_GIT INF_GIT [OUT]
#
# *_GIT are git directories (e.g. `fetch github:kubernetes-sigs/node-feature-
# discovery`); the commits are NFD_COMMIT (default: the rule oracle's),
# APIMACHINERY_REF (NFD's go.mod version) and INF_REF. Go >= 1.24 from $GO.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
NFD_GIT=$1 APIM_GIT=$2 INF_GIT=$3
OUT=${4:-/tmp/nfd-worker-features/nfd-worker-features}
NFD_COMMIT=${NFD_COMMIT:-76e6cc8cc0d54b8bce037098b72611ffdf66ef5a}
APIMACHINERY_REF=${APIMACHINERY_REF:-v0.35.3}
INF_REF=${INF_REF:-HEAD}
SHARED=${SHARED:-$REPO/../shared}
STUBS=$SHARED/oracles/nfd/stubs
GO=${GO:-go}
[ -d "$STUBS" ] || { echo "build.sh: no $STUBS (the rule oracle's stubs)" >&2; exit 1; }
export GOTOOLCHAIN=local GOPROXY=off GOSUMDB=off GONOSUMDB='*' GOFLAGS=-mod=mod GO111MODULE=on CGO_ENABLED=0
export GOCACHE=${GOCACHE:-/tmp/nfd-worker-features/gocache} GOPATH=${GOPATH:-/tmp/nfd-worker-features/gopath}
WORK=$(mktemp -d /tmp/nfd-worker-build.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# take GIT REF DEST PATH...: the files at REF, under DEST.
take() {
  local git=$1 ref=$2 dest=$3; shift 3
  mkdir -p "$dest"
  git --git-dir="$git" archive "$ref" -- "$@" | tar -x -C "$dest"
}
mod() { # dir module-path
  printf 'module %s\n\ngo 1.24\n' "$2" > "$1/go.mod"
}

take "$NFD_GIT" "$NFD_COMMIT" "$WORK/nfd" source/source.go source/kernel source/memory \
  source/network source/local pkg/utils/hostpath pkg/utils/dump.go \
  source/cpu/cstate_amd64.go source/cpu/pstate_amd64.go source/cpu/coprocessor_stub.go LICENSE
find "$WORK/nfd" \( -name '*_test.go' -o -name testdata \) -prune -exec rm -rf {} +
cp "$HERE/export_cpu.go.in" "$WORK/nfd/source/cpu/zz_export.go"
mod "$WORK/nfd" sigs.k8s.io/node-feature-discovery

take "$NFD_GIT" "$NFD_COMMIT" "$WORK/x" $(printf 'api/nfd/v1alpha1/%s.go ' types feature utils \
  annotations_labels doc zz_generated.deepcopy)
mv "$WORK/x/api/nfd" "$WORK/nfd-api"; mod "$WORK/nfd-api" sigs.k8s.io/node-feature-discovery/api/nfd

cp -r "$STUBS/apimachinery" "$WORK/apimachinery"
cp -r "$SHARED/oracles/nfd/upstream/apimachinery/." "$WORK/apimachinery/"
rm -f "$WORK/apimachinery/pkg/api/resource/"*.go
take "$APIM_GIT" "$APIMACHINERY_REF" "$WORK/apimachinery" $(printf 'pkg/api/resource/%s.go ' amount \
  math quantity scale_int suffix)
mkdir -p "$WORK/apimachinery/pkg/runtime/serializer/cbor/direct"
cp "$HERE/stubs/cbor/direct.go" "$WORK/apimachinery/pkg/runtime/serializer/cbor/direct/"

take "$INF_GIT" "$INF_REF" "$WORK/inf" dec.go rounder.go LICENSE; mod "$WORK/inf" gopkg.in/inf.v0
cp -r "$STUBS/api" "$WORK/api"; cp "$HERE/stubs/hugepages.go" "$WORK/api/core/v1/"
for s in klog yaml; do cp -r "$STUBS/$s" "$WORK/$s"; done
cp "$HERE/stubs/klog_verbose.go" "$WORK/klog/"
cp -r "$HERE/stubs/fsnotify" "$WORK/fsnotify"

mkdir -p "$WORK/main"; cp "$HERE/main.go" "$WORK/main/"
cat > "$WORK/main/go.mod" <<GOMOD
module nfdworkerfeatures

go 1.24

require (
	github.com/fsnotify/fsnotify v1.0.0
	gopkg.in/inf.v0 v0.9.1
	k8s.io/api v0.0.0
	k8s.io/apimachinery v0.0.0
	k8s.io/klog/v2 v2.0.0
	sigs.k8s.io/node-feature-discovery v0.0.0
	sigs.k8s.io/node-feature-discovery/api/nfd v0.0.0
	sigs.k8s.io/yaml v0.0.0
)

replace (
	github.com/fsnotify/fsnotify => ../fsnotify
	gopkg.in/inf.v0 => ../inf
	k8s.io/api => ../api
	k8s.io/apimachinery => ../apimachinery
	k8s.io/klog/v2 => ../klog
	sigs.k8s.io/node-feature-discovery => ../nfd
	sigs.k8s.io/node-feature-discovery/api/nfd => ../nfd-api
	sigs.k8s.io/yaml => ../yaml
)
GOMOD
mkdir -p "$(dirname "$OUT")"
(cd "$WORK/main"; "$GO" build -trimpath -o "$OUT.tmp" .)
mv "$OUT.tmp" "$OUT"
echo "$OUT"
