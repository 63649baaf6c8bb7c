#!/usr/bin/env bash
# Benchmark (not a test): what the day-2 sync costs the API server, against
# the real kube-apiserver and etcd of ../shared/tools/realcluster (Node
# authorization, NodeRestriction). One Node is registered by the real
# kubelet with the labels the wrapper adds on the DGX fixture (NFD's
# openshift label set and three static labels: 89 keys), then copied to N
# Nodes, each created with its own node's certificate. The sync then runs
# once per Node, with that node's certificate, in three rounds: the first
# sync (it adopts every label: one write of our annotation), a run with
# nothing to do (one GET), and a changed label (one write). Per round: the
# kube-apiserver's CPU time (utime + stime from /proc, less its idle rate
# over the same wall time) per Node, and the stored Node's size (JSON, as
# the admin reads it) before and after. No other client watches Nodes here:
# in a cluster each write is also sent to every watcher of Nodes.
# usage: benches/sync-cost.sh [N]   (root; KL=the CLI to run `sync` with,
# default target/debug/kubelet-labeler; OTHER=another build, e.g. an earlier
# release's, measured the same way on fresh copies)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-50}
repo=$PWD
rc=$repo/../shared/tools/realcluster
kl=${KL:-$(realpath -m "${CARGO_TARGET_DIR:-target}")/debug/kubelet-labeler}
work=$(mktemp -d)
export RC_DIR=$work/rc
cleanup() { bash "$rc/down.sh" "$RC_DIR" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
names="ref"
for i in $(seq "$n"); do names="$names c$i o$i"; done
free_port() { # a free loopback port whose +10 is free too (etcd's peer port)
  python3 -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    t = socket.socket()
    try:
        if p < 65000: t.bind(("127.0.0.1", p + 10)); print(p); break
    except OSError: pass'
}
NODE_NAMES=$names API_PORT=${API_PORT:-$(free_port)} ETCD_PORT=${ETCD_PORT:-$(free_port)} \
  bash "$rc/up.sh" >/dev/null
pki=$RC_DIR/pki
api=$(sed -n 's/^ *server: //p' "$RC_DIR/admin.kubeconfig" | head -1)
admin() { curl -sS --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@"; }
apiserver=$(awk '$1=="kube-apiserver"{print $2}' "$RC_DIR/pids")

# The node tree: the wrapper installed (its drop-in), NFD's openshift label
# set and three static labels; facts from the DGX fixture.
tree=$work/root
d=$tree/etc/systemd/system/kubelet.service.d
mkdir -p "$d" "$tree/usr/bin" "$tree/usr/local/bin"
printf '[Service]\nExecStart=/usr/bin/kubelet --kubeconfig=/etc/kubernetes/kubelet.conf\n' \
  > "$tree/etc/systemd/system/kubelet.service"
printf '#!/bin/sh\n' > "$tree/usr/bin/kubelet"
cp "$kl" "$tree/usr/local/bin/kubelet-labeler-wrapper.x86_64"
chmod +x "$tree/usr/bin/kubelet"
printf '[Service]\nExecStart=\nExecStart=/usr/local/bin/kubelet-labeler-wrapper.x86_64 --unit %%n\n' \
  > "$d/zz-kubelet-labeler.conf"
env_dropin() { # STATIC_LABELS
  printf '[Service]\nEnvironment="FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=%s"\nEnvironment=KUBELET_LABELER_NFD_LABELS=openshift\n' \
    "$1" > "$d/90-kubelet-labeler-env.conf"
}
env_dropin "example.com/tier=gold,example.com/rack=r1,node.kubernetes.io/worker-gpu="
facts=$repo/tests/fixtures/nodes/dgx
labels=$("$kl" explain --json --profile upstream --root "$tree" --facts-root "$facts" 2>/dev/null |
  python3 -c 'import json,sys; print(",".join(json.load(sys.stdin)["added_labels"]))')
echo "labels the wrapper adds: $(tr ',' '\n' <<<"$labels" | wc -l)"

# The reference Node, as the real kubelet registers it; then its copies.
NODE_NAME=ref SETTLE=2 KUBELET_PORT=${KUBELET_PORT:-$(free_port)} KUBELET_HEALTHZ_PORT=${KUBELET_HEALTHZ_PORT:-$(free_port)} bash "$rc/register.sh" "--node-labels=$labels" >/dev/null
admin "$api/api/v1/nodes/ref" > "$work/ref.json"
copy() { # NAME: create Node NAME from ref, with its own certificate
  python3 - "$work/ref.json" "$1" > "$work/copy.json" <<'PY'
import json, sys
n = json.load(open(sys.argv[1])); name = sys.argv[2]
m = n["metadata"]
for k in ["uid", "resourceVersion", "creationTimestamp", "managedFields"]:
    m.pop(k, None)
m["name"] = name; m["labels"]["kubernetes.io/hostname"] = name
print(json.dumps(n))
PY
  curl -sS -o /dev/null --cacert "$pki/ca.crt" --cert "$pki/node-$1.crt" --key "$pki/node-$1.key" \
    -H 'Content-Type: application/json' --data-binary @"$work/copy.json" "$api/api/v1/nodes"
}
size() { admin "$api/api/v1/nodes/$1" | wc -c; }
ticks() { awk '{print $14 + $15}' "/proc/$apiserver/stat"; }
hz=$(getconf CLK_TCK)
# The API server's own idle CPU rate (its loops, etcd lease renewals).
t0=$(ticks); s0=$(date +%s.%N); sleep 20; idle=$(python3 -c "print(($(ticks)-$t0)/$hz/($(date +%s.%N)-$s0))")
echo "kube-apiserver idle: $(python3 -c "print(round($idle*1000,1))") ms CPU per second"

round() { # BINARY PREFIX NAME: sync every Node PREFIX1..N once
  local bin=$1 p=$2 t s
  t=$(ticks); s=$(date +%s.%N)
  for i in $(seq "$n"); do
    "$bin" sync --profile upstream --root "$tree" --facts-root "$facts" \
      --kubeconfig "$RC_DIR/node-$p$i.kubeconfig" --max-wait 5 >/dev/null 2>&1 || true
  done
  python3 -c "
cpu = ($(ticks) - $t) / $hz; wall = $(date +%s.%N) - $s
print(f'{\"$3\":<24} {1000 * (cpu - $idle * wall) / $n:6.1f} ms API server CPU per Node ({1000 * cpu / $n:.1f} before the idle rate)')"
}
measure() { # BINARY PREFIX
  local bin=$1 p=$2
  for i in $(seq "$n"); do copy "$p$i"; done
  env_dropin "example.com/tier=gold,example.com/rack=r1,node.kubernetes.io/worker-gpu="
  local before; before=$(size "${p}1")
  round "$bin" "$p" "first sync (writes)"
  local after; after=$(size "${p}1")
  round "$bin" "$p" "nothing to do (a GET)"
  env_dropin "example.com/tier=silver,example.com/rack=r1,node.kubernetes.io/worker-gpu="
  round "$bin" "$p" "a label changed (writes)"
  echo "Node ${p}1: $before bytes registered, $after after the first sync (+$((after - before))), $(size "${p}1") after the change"
  admin "$api/api/v1/nodes/${p}1" | python3 -c '
import json, sys
a = json.load(sys.stdin)["metadata"].get("annotations", {})
for k, v in sorted(a.items()):
    if k.startswith("kubelet-labeler.io/"): print(f"  {k}: {len(v)} bytes")'
}
echo "== $kl"
measure "$kl" c
if [ -n "${OTHER:-}" ]; then
  echo "== $OTHER"
  measure "$OTHER" o
fi
