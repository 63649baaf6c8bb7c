#!/bin/bash
# r13a F3: the wrapper's memory per kubelet start grows ~15x the bytes a pod writes to
# features.d for EACH rule term that walks local.label/local.feature (matchName), and
# render's budget bounds work, not memory (the wrapper's allocator never frees):
# 450 render-accepted rules of 2 such terms: ~80 MB -> ~820 MB and ~5 s.
# Usage: repro/r13a-f3-featuresd-memory.sh [static wrapper] [rules (450)] [terms (2)]
set -eu
W=${1:-/work/ci-check/target/x86_64-unknown-linux-musl/wrapper/kubelet-labeler-wrapper}
N=${2:-450}; TERMS=${3:-2}
CLI=$(cd "$(dirname "$0")/.." && pwd)/target/debug/kubelet-labeler
T=$(mktemp -d /tmp/r13a-f3.XXXX); trap 'rm -rf "$T"' EXIT
python3 - "$N" "$TERMS" "$T" <<'PY'
import sys
n, nt, t = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
terms = "".join(f"        - feature: local.{'label' if i % 2 == 0 else 'feature'}\n"
                "          matchName: {op: Exists}\n" for i in range(nt))
rules = "".join(f"    - name: t{r}\n      labels: {{example.com/l{r}: \"1\"}}\n      matchFeatures:\n{terms}"
                for r in range(n))
rules += ("    - name: taint\n      taints: [{key: example.com/t, value: \"1\", effect: NoSchedule}]\n"
          "      matchFeatures:\n        - feature: local.label\n          matchExpressions: {gpu: {op: Exists}}\n")
open(t + "/rules.yaml", "w").write("apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\n"
                                   "metadata: {name: many}\nspec:\n  rules:\n" + rules)
PY
"$CLI" render dropins --create-root --root "$T/root" --wrapper "$W" --rules "$T/rules.yaml" >/dev/null
FD=$T/root/etc/kubernetes/node-feature-discovery/features.d
mkdir -p "$T/root/usr/lib/systemd/system" "$T/root/usr/bin" "$T/root/state" "$FD"
printf '#!/bin/sh\nexit 0\n' > "$T/root/usr/bin/kubelet"; chmod +x "$T/root/usr/bin/kubelet"
printf '[Service]\nExecStart=/usr/bin/kubelet --v=2\n' > "$T/root/usr/lib/systemd/system/kubelet.service"
python3 - "$T" > "$T/env.sh" <<'PY'
import re, shlex, sys
t = open(sys.argv[1] + "/root/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf").read()
for m in re.finditer(r'^Environment="([^=]+)=(.*)"$', t, re.M):
    print("export %s=%s" % (m.group(1), shlex.quote(m.group(2))))
PY
run() { ( . "$T/env.sh"; /usr/bin/time -f "  %e s wall, %U s user, %S s sys, max RSS %M KB" "$W" --root "$T/root" --unit kubelet.service --state-dir "$T/root/state" 2>&1 >/dev/null | tail -1 ); }
echo gpu=1 > "$FD/provisioning"
echo "== $N rules x $TERMS terms (render accepted them), features.d as provisioning wrote it"; run
python3 -c "print('\n'.join('k%04d'%i + 'a'*50 for i in range(1022)))" > "$FD/pod"
echo "== + a pod's file: 1022 keys, $(wc -c < "$FD/pod") bytes (within every bound)"; run
