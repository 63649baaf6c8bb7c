#!/usr/bin/env bash
# Benchmark (not a test): `plan` over fleets of N nodes whose NodeFeatures
# are as large as real ones (about 130 KB each: the DGX fixture's facts,
# padded with kernel config options as nfd-worker exports them), one
# `oc get nodes,nodefeatures -A -o json` list, every node with its own
# feature set. Prints wall time, CPU time (user + system: what a loaded
# machine does not inflate) and peak RSS per N (the run of median wall
# time of RUNS).
# usage: benches/plan.sh [N...]   (default 100 1000 3000 10000; RUNS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ $# -gt 0 ] || sizes=(100 1000 3000 10000)
runs=${RUNS:-3}
cargo build --quiet --release --bin kubelet-labeler
kl=${CARGO_TARGET_DIR:-target}/release/kubelet-labeler
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
wrapper=$scratch/wrapper
# The renders: the committed example pool, and the same with the GPU rules.
python3 - "$wrapper" <<'PY'
import sys, yaml, base64, gzip
d = yaml.safe_load(open("machineconfigs/50-worker-gpu-kubelet-labeler-wrapper.yaml"))
for f in d["spec"]["config"]["storage"]["files"]:
    if f["path"].startswith("/usr/local/bin/kubelet-labeler-wrapper"):
        data = base64.b64decode(f["contents"]["source"].split(",", 1)[1])
        if f["contents"].get("compression") == "gzip":
            data = gzip.decompress(data)
        open(sys.argv[1], "wb").write(data)
PY
"$kl" render machineconfig --pool worker-gpu --label node.kubernetes.io/worker-gpu= \
  --rules examples/rules/openshift-gpu.yaml --nfd-labels openshift \
  --wrapper "$wrapper" --output-dir "$scratch/proposed" >/dev/null 2>&1
"$kl" facts --root tests/fixtures/nodes/dgx --json > "$scratch/dgx.json"
printf '%8s %12s %10s %10s %14s\n' nodes "fleet MB" "wall s" "CPU s" "peak RSS MiB"
for n in "${sizes[@]}"; do
  fleet=$scratch/fleet-$n.json
  python3 - "$scratch/dgx.json" "$n" > "$fleet" <<'PY'
import json, sys
feat = json.load(open(sys.argv[1])); n = int(sys.argv[2])
attrs = feat.setdefault("attributes", {})
cfg = {f"CONFIG_OPTION_{i:05d}": "y" for i in range(4800)}
sys.stdout.write('{"apiVersion":"v1","kind":"List","items":[')
for i in range(n):
    name = f"gpu-{i:05d}" if i % 4 == 0 else f"worker-{i:05d}"
    labels = {"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": name}
    if i % 4 == 0:
        labels["node.kubernetes.io/worker-gpu"] = ""
    attrs["kernel.config"] = {"elements": dict(cfg, NODE_SERIAL=str(i))}
    if i:
        sys.stdout.write(",")
    json.dump({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
               "spec": {}, "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}}}, sys.stdout)
    sys.stdout.write(",")
    json.dump({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
               "metadata": {"name": name, "namespace": "openshift-nfd",
                            "labels": {"nfd.node.kubernetes.io/node-name": name}},
               "spec": {"features": feat}}, sys.stdout)
sys.stdout.write("]}\n")
PY
  mb=$(($(stat -c %s "$fleet") / 1000000))
  : > "$scratch/times"
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e %M %U %S' -o "$scratch/time" "$kl" plan --from machineconfigs \
      --to "$scratch/proposed" --fleet "$fleet" --format json > /dev/null || [ $? = 1 ]
    tail -n 1 "$scratch/time" >> "$scratch/times"
  done
  read -r wall rss user sys < <(sort -n "$scratch/times" | sed -n "$(((runs + 1) / 2))p")
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  printf '%8d %12d %10s %10s %14d\n' "$n" "$mb" "$wall" "$cpu" $((rss / 1024))
  rm -f "$fleet"
done
