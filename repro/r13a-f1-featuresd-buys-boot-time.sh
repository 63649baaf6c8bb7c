#!/bin/bash
# r13a F1: a pod that can write features.d raises the node rules' boot budget
# (BASE + PER_FACT x facts) by ~3.3e9 units and a render-accepted rule spends it:
# ~1 s of CPU per kubelet start (0.00 s without the file).
# Usage: repro/r13a-f1-featuresd-buys-boot-time.sh [static wrapper] [n .* (800)]
set -eu
W=${1:-/work/ci-check/target/x86_64-unknown-linux-musl/wrapper/kubelet-labeler-wrapper}
N=${2:-800}
CLI=$(cd "$(dirname "$0")/.." && pwd)/target/debug/kubelet-labeler
T=$(mktemp -d /tmp/r13a-f1.XXXX)
python3 - "$N" "$T" <<'PY'
import sys
n, t = int(sys.argv[1]), sys.argv[2]
pat = ".*" * n + "ZQ"
open(t + "/rules.yaml", "w").write(f"""apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: local-marker
spec:
  rules:
    - name: marker
      taints:
        - key: example.com/marker
          value: "true"
          effect: NoSchedule
      matchFeatures:
        - feature: local.label
          matchName:
            op: InRegexp
            value: ["{pat}"]
""")
PY
"$CLI" render dropins --create-root --root "$T/root" --wrapper "$W" --rules "$T/rules.yaml" \
  --taint static.example.com/t=1:NoSchedule >/dev/null
mkdir -p "$T/root/usr/lib/systemd/system" "$T/root/usr/bin" "$T/root/state" \
  "$T/root/etc/kubernetes/node-feature-discovery/features.d"
printf '#!/bin/sh\necho "$@" > %s/argv\n' "$T" > "$T/root/usr/bin/kubelet"; chmod +x "$T/root/usr/bin/kubelet"
printf '[Service]\nExecStart=/usr/bin/kubelet --v=2\n' > "$T/root/usr/lib/systemd/system/kubelet.service"
python3 - "$T" > "$T/env.sh" <<'PY'
import re, shlex, sys
t = open(sys.argv[1] + "/root/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf").read()
for m in re.finditer(r'^Environment="([^=]+)=(.*)"$', t, re.M):
    print("export %s=%s" % (m.group(1), shlex.quote(m.group(2))))
PY
run() { ( . "$T/env.sh"; /usr/bin/time -f "  %e s wall, %U s user, %M KB" "$W" --root "$T/root" --unit kubelet.service --state-dir "$T/root/state" 2>&1 >/dev/null | tail -1 ); }
echo "== features.d empty"; run
# What a pod with a hostPath on features.d writes: 1024 keys, 64,512 bytes (within every bound).
python3 -c "print('\n'.join('k%04d'%i + 'a'*57 for i in range(1024)))" \
  > "$T/root/etc/kubernetes/node-feature-discovery/features.d/big"
echo "== features.d: 1024 keys, $(wc -c < "$T/root/etc/kubernetes/node-feature-discovery/features.d/big") bytes"
run; run
echo "argv: $(cat "$T/argv")"
rm -rf "$T"
