#!/bin/bash
# r13a F2: a pod that writes features.d (a link, or past a bound) silences the day-2
# sync's taint-drift report, static taints' too: exit 2, no drift, no TaintDrift Event.
# Needs root and ../shared/tools/realcluster (a real kube-apiserver); ports away from
# the defaults so it runs beside other helpers.
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
W=${WRAPPER:-/work/ci-check/target/x86_64-unknown-linux-musl/wrapper/kubelet-labeler-wrapper}
K=$HERE/target/debug/kubelet-labeler
RCT=$HERE/../shared/tools/realcluster
export API_PORT=${API_PORT:-36443} ETCD_PORT=${ETCD_PORT:-33790} NODE_NAMES=r13a-node TTL=600
T=$(mktemp -d /tmp/r13a-f2.XXXX)
"$RCT/up.sh" > "$T/up.out" 2>&1
export RC_DIR=$(sed -n 's/^RC_DIR=//p' "$T/up.out")
trap '"$RCT/down.sh" "$RC_DIR" >/dev/null 2>&1; rm -rf "$T"' EXIT
NODE_NAME=r13a-node KUBELET_PORT=31250 KUBELET_HEALTHZ_PORT=31248 "$RCT/register.sh" >/dev/null 2>&1
KC=$RC_DIR/node-r13a-node.kubeconfig
cat > "$T/rules.yaml" <<'Y'
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: local-gpu}
spec:
  rules:
    - name: provisioned-gpu
      taints: [{key: example.com/gpu-provisioned, value: "true", effect: NoSchedule}]
      matchFeatures:
        - feature: local.label
          matchExpressions: {gpu: {op: Exists}}
Y
R=$T/tree
"$K" render dropins --create-root --root "$R" --wrapper "$W" --rules "$T/rules.yaml" \
  --taint static.example.com/t=1:NoSchedule >/dev/null 2>&1
mkdir -p "$R/usr/lib/systemd/system" "$R/etc/kubernetes/node-feature-discovery/features.d"
printf '[Service]\nExecStart=/usr/bin/kubelet --v=2\n' > "$R/usr/lib/systemd/system/kubelet.service"
FD=$R/etc/kubernetes/node-feature-discovery/features.d
echo gpu=1 > "$FD/provisioning"
echo "== sync (features.d as provisioning wrote it)"
"$K" sync --root "$R" --kubeconfig "$KC" --max-wait 5 2>&1 | cut -c1-200; echo "exit ${PIPESTATUS[0]}"
echo "== a pod plants a link in features.d; a rollout adds a static NoExecute taint"
ln -s /etc/hostname "$FD/zz"
"$K" render dropins --root "$R" --wrapper "$W" --rules "$T/rules.yaml" \
  --taint static.example.com/t=1:NoSchedule --taint static.example.com/new=1:NoExecute >/dev/null 2>&1
for i in 1 2; do rc=0; "$K" sync --root "$R" --kubeconfig "$KC" --max-wait 5 2>&1 || rc=$?; echo "exit $rc"; done
echo "== TaintDrift events naming static.example.com/new:"
kubectl --kubeconfig "$RC_DIR/admin.kubeconfig" get events -n default -o json | \
  python3 -c "import json,sys; print(sum('static.example.com/new' in e['message'] for e in json.load(sys.stdin)['items'] if e['reason']=='TaintDrift'))"
echo "== control: the link removed"
rm "$FD/zz"; "$K" sync --root "$R" --kubeconfig "$KC" --max-wait 5 2>&1 | grep -o 'taint static.example.com/new[^)]*'; echo "exit ${PIPESTATUS[0]}"
