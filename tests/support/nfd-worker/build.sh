#!/usr/bin/env bash
# Builds nfd-worker-features offline: nfd-worker's own feature sources
# (source/{kernel,memory,network,local} whole, source/cpu's cstate, pstate,
# coprocessor, rdt, security and sst (power) files, pkg/cpuid's assembly)
# from a fetched NFD snapshot, unchanged, with klauspost/cpuid from its
# snapshot (SGX and TDX guests), with
# Kubernetes' resource.Quantity (apimachinery, for hugepage sizes) and
# gopkg.in/inf.v0 from their snapshots, and stubs for the rest (the rule
# oracle's in ../shared/oracles/nfd/stubs, and stubs/ here). Only main.go,
# export_cpu.go.in and stubs/ are written by hand: among them the Go half
# of pkg/cpuid and a file added to klauspost/cpuid, which send each CPUID
# through stubs/cpuidreplay (a recording can stand in for the CPU), and
# runc's intelrdt.Root (runc's dependencies are not here).
#
#   build.sh NFD_GIT APIMACHINERY_GIT INF_GIT CPUID_GIT [OUT]
#
# *_GIT are git directories (e.g. `fetch github:kubernetes-sigs/node-feature-
# discovery`); the commits are NFD_COMMIT (default: the rule oracle's),
# APIMACHINERY_REF (NFD's go.mod version), INF_REF and CPUID_REF (NFD asks
# for klauspost/cpuid v2.4.0; the snapshot has no tags past v2.3.0, so its
# newest commit). Go >= 1.24 from $GO.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
NFD_GIT=$1 APIM_GIT=$2 INF_GIT=$3 CPUID_GIT=$4
OUT=${5:-/tmp/nfd-worker-features/nfd-worker-features}
NFD_COMMIT=${NFD_COMMIT:-76e6cc8cc0d54b8bce037098b72611ffdf66ef5a}
APIMACHINERY_REF=${APIMACHINERY_REF:-v0.35.3}
INF_REF=${INF_REF:-HEAD}
CPUID_REF=${CPUID_REF:-HEAD}
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
  source/cpu/cstate_amd64.go source/cpu/pstate_amd64.go source/cpu/coprocessor_stub.go \
  source/cpu/rdt_linux_amd64.go source/cpu/security_amd64.go source/cpu/power_amd64.go \
  pkg/cpuid/cpuid_amd64.s LICENSE
cp "$HERE/stubs/nfdcpuid/cpuid_amd64.go" "$WORK/nfd/pkg/cpuid/"
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
take "$CPUID_GIT" "$CPUID_REF" "$WORK/kcpuid" cpuid.go detect_x86.go featureid_string.go \
  cpuid_amd64.s LICENSE
cp "$HERE/stubs/klauspost/zz_replay.go" "$WORK/kcpuid/"; mod "$WORK/kcpuid" github.com/klauspost/cpuid/v2
cp -r "$HERE/stubs/cpuidreplay" "$WORK/cpuidreplay"; mod "$WORK/cpuidreplay" kubelet-labeler.test/cpuidreplay
mkdir -p "$WORK/runc/libcontainer/intelrdt"; cp "$HERE/stubs/intelrdt/intelrdt.go" "$WORK/runc/libcontainer/intelrdt/"
mod "$WORK/runc" github.com/opencontainers/runc
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
	github.com/klauspost/cpuid/v2 v2.4.0
	github.com/opencontainers/runc v1.5.0
	gopkg.in/inf.v0 v0.9.1
	kubelet-labeler.test/cpuidreplay v0.0.0
	k8s.io/api v0.0.0
	k8s.io/apimachinery v0.0.0
	k8s.io/klog/v2 v2.0.0
	sigs.k8s.io/node-feature-discovery v0.0.0
	sigs.k8s.io/node-feature-discovery/api/nfd v0.0.0
	sigs.k8s.io/yaml v0.0.0
)

replace (
	github.com/fsnotify/fsnotify => ../fsnotify
	github.com/klauspost/cpuid/v2 => ../kcpuid
	github.com/opencontainers/runc => ../runc
	gopkg.in/inf.v0 => ../inf
	kubelet-labeler.test/cpuidreplay => ../cpuidreplay
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
