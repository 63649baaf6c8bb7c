#!/usr/bin/env bash
# Benchmark (not a test): one day-2 sync run on a node, as shipped (the
# static wrapper's `sync` mode driving the host's curl), against the real
# kube-apiserver of ../shared/tools/realcluster (Node authorization,
# NodeRestriction) with a node's own certificate: wall time and peak RSS of
# a run that writes (labels changed) and of one that finds the Node up to
# date, and the requests each sends (counted by a curl shim in a separate
# run, so the timed runs call curl directly). Needs root.
# usage: benches/sync.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
rc=../shared/tools/realcluster
wrapper=$(bash machineconfigs/build-wrapper.sh x86_64)
work=$(mktemp -d)
export RC_DIR=$work/rc
cleanup() { bash "$rc/down.sh" "$RC_DIR" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
NODE_NAMES=bench-node API_PORT=${API_PORT:-27643} ETCD_PORT=${ETCD_PORT:-23990} \
  bash "$rc/up.sh" >/dev/null
kubeconfig=$RC_DIR/node-bench-node.kubeconfig
pki=$RC_DIR/pki
api=$(sed -n 's/^ *server: //p' "$kubeconfig")
# The Node as kubelet registers it (with the node's own certificate).
curl -sS -o /dev/null --cacert "$pki/ca.crt" --cert "$pki/node-bench-node.crt" \
  --key "$pki/node-bench-node.key" -H 'Content-Type: application/json' \
  -d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"bench-node"}}' "$api/api/v1/nodes"
tree=$work/root
mkdir -p "$tree/etc/systemd/system/kubelet.service.d" "$tree/usr/bin"
printf '[Service]\nExecStart=/usr/bin/kubelet --kubeconfig=/etc/kubernetes/kubelet.conf\n' \
  > "$tree/etc/systemd/system/kubelet.service"
printf '#!/bin/sh\n' > "$tree/usr/bin/kubelet"; chmod +x "$tree/usr/bin/kubelet"
labels() {
  printf '[Service]\nEnvironment="FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=%s"\n' "$1" \
    > "$tree/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"
}
sync() { "$wrapper" sync --root "$tree" --kubeconfig "$kubeconfig" --max-wait 5 2>&1; }
measure() { # CASE: prints wall ms and max RSS KiB of one run
  /usr/bin/time -f '%e %M' -o "$work/time" "$wrapper" sync --root "$tree" \
    --kubeconfig "$kubeconfig" --max-wait 5 >/dev/null 2>&1 || true
  read -r secs rss < "$work/time"
  echo "$(python3 -c "print(round($secs*1000))") $rss"
}
report() { # NAME FILE
  python3 - "$1" "$2" <<'PY'
import sys, statistics
rows = [tuple(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
ms = sorted(r[0] for r in rows); rss = [r[1] for r in rows]
print(f"{sys.argv[1]:<12} runs {len(rows):3d}  wall median {statistics.median(ms):6.0f} ms  max {max(ms):6.0f} ms  peak RSS {max(rss):6.0f} KiB")
PY
}
: > "$work/write"; : > "$work/same"
for i in $(seq "$runs"); do
  labels "example.com/run=$i,example.com/tier=gold"
  measure >> "$work/write"
  measure >> "$work/same"
done
report "writes" "$work/write"
report "up to date" "$work/same"
# Requests per run: a curl shim on PATH counts them.
mkdir -p "$work/shim"
printf '#!/bin/sh\necho "$@" | grep -o -- "-X [A-Z]*" >> %s\nexec %s "$@"\n' \
  "$work/requests" "$(command -v curl)" > "$work/shim/curl"
chmod +x "$work/shim/curl"
for case in write same; do
  : > "$work/requests"
  [ "$case" = write ] && labels "example.com/run=counted,example.com/tier=gold"
  PATH=$work/shim:$PATH sync >/dev/null || true
  printf '%-12s requests %s\n' "$case" "$(sort "$work/requests" | uniq -c | tr -s ' ' | paste -sd, -)"
done
