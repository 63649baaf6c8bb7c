#!/usr/bin/env bash
# Benchmark (not a test): from a change in Git to the Node, in seconds. A node
# tree rendered by `render dropins` (the wrapper, the generator, the env
# drop-in, the sync's service, path unit and Wants= drop-in) runs under a
# real `systemd --user` in a private mount namespace (the tree's /etc and
# /usr/local/bin and /usr/bin laid over the host's, as tests/real_chain.rs does), with
# kubelet's kubeconfig holding the node's own certificate for the real
# kube-apiserver of ../shared/tools/realcluster. The Node is registered as
# kubelet would (no kubelet runs: the sync needs only the Node). Each trial
# writes the env drop-in of the next render (a label changed) as the MCO's
# daemon does, a temp file in the same directory then rename(2) over it, and
# times until the Node in the API server carries the new label; split into
# the path unit's trigger (rename to the sync service's start) and the sync
# (start to label). A trial that sees no label within TIMEOUT seconds says
# whether the path unit fired, and ends the run (exit 1). WRITE=inplace
# writes the drop-in in place instead (truncate, write, close: what an
# editor does), the control that the harness sees a change; WRITE=policy
# renames it and then does what OpenShift's node disruption policy has the
# MCO's daemon do (`systemctl daemon-reload`, restart the sync service).
# Needs root.
# usage: benches/git-to-node.sh [TRIALS]
# Trials are PAUSE=2.5 s apart: systemd refuses a sixth start of the sync
# within 10 s (its default start limit) and the path unit then fails and
# stops watching (PAUSE=0 shows it).
# env: WRITE=rename|inplace|policy, TIMEOUT=30 (seconds a trial waits), PAUSE, KEEP=1 (keep
#      the work dir), KL=PATH (a built kubelet-labeler CLI, else cargo builds it)
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-5}
rc=../shared/tools/realcluster
[ "$(id -u)" = 0 ] || { echo "git-to-node.sh: run as root (mount namespace, the API server's scripts)" >&2; exit 2; }
[ -f "$rc/up.sh" ] || { echo "git-to-node.sh: $rc is absent (the real API server)" >&2; exit 2; }
[ -x /lib/systemd/systemd ] || { echo "git-to-node.sh: /lib/systemd/systemd is missing" >&2; exit 2; }
wrapper=$(bash machineconfigs/build-wrapper.sh x86_64)
# The CLI renders the node tree (KL=PATH: a kubelet-labeler already built).
if [ -z "${KL:-}" ]; then
  cargo build --quiet --release --bin kubelet-labeler
  KL=$(realpath "${CARGO_TARGET_DIR:-target}")/release/kubelet-labeler
fi
kl=$KL
work=$(mktemp -d /tmp/git-to-node.XXXXXX)
export RC_DIR=$work/rc
node=git-to-node
cleanup() {
  bash "$rc/down.sh" "$RC_DIR" >/dev/null 2>&1 || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
NODE_NAMES=$node API_PORT=${API_PORT:-27843} ETCD_PORT=${ETCD_PORT:-24190} TTL=1800 \
  bash "$rc/up.sh" >/dev/null 2>&1
pki=$RC_DIR/pki
port=${API_PORT:-27843}
labels=(--label node.kubernetes.io/worker-gpu= --label example.com/tier=gold)
render() { # TREE ROUND
  "$kl" render dropins --create-root --root "$1" --profile upstream --wrapper "$wrapper" \
    "${labels[@]}" --label "example.com/round=$2" 2>/dev/null
}
tree=$work/tree
sys=$tree/etc/systemd/system
mkdir -p "$sys/kubelet.service.d" "$tree/etc/kubernetes" "$tree/usr/local/bin" "$tree/usr/bin"
printf '#!/bin/sh\n' > "$tree/usr/bin/kubelet"; chmod +x "$tree/usr/bin/kubelet"  # never run
printf '[Unit]\nDescription=kubelet\n[Service]\nExecStart=/usr/bin/kubelet --kubeconfig=/etc/kubernetes/kubelet.conf\n' \
  > "$sys/kubelet.service"
for t in default basic shutdown sockets timers paths exit; do
  printf '[Unit]\nDescription=bench\n' > "$sys/$t.target"
done
cp "$RC_DIR/node-$node.kubeconfig" "$tree/etc/kubernetes/kubelet.conf"
render "$tree" 0
for i in $(seq "$trials"); do render "$work/stage/$i" "$i"; done
# The sync's journal to a file (no journald in the namespace).
mkdir -p "$sys/kubelet-labeler-sync.service.d"
printf '[Service]\nStandardOutput=append:%s\nStandardError=append:%s\n' "$work/sync.log" "$work/sync.log" \
  > "$sys/kubelet-labeler-sync.service.d/50-bench-journal.conf"
# The Node as kubelet registers it with these labels (its own certificate).
curl -sS -o /dev/null --cacert "$pki/ca.crt" --cert "$pki/node-$node.crt" --key "$pki/node-$node.key" \
  -H 'Content-Type: application/json' \
  -d "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$node\",\"labels\":{\"node.kubernetes.io/worker-gpu\":\"\",\"example.com/tier\":\"gold\",\"example.com/round\":\"0\"}}}" \
  "https://127.0.0.1:$port/api/v1/nodes"
cat > "$work/node.sh" <<EOF
set -u
for d in etc usr/local/bin usr/bin; do
  mkdir -p "$work/ow-\${d//\//-}"
  mount -t overlay overlay -o lowerdir=/\$d,upperdir=$tree/\$d,workdir=$work/ow-\${d//\//-} /\$d || exit 90
done
mount -t tmpfs tmpfs /run || exit 91
mkdir -p /run/systemd/system
# A cgroup of its own for the manager (as tests/support/realcluster.rs).
if [ -d /sys/fs/cgroup/systemd ]; then H=/sys/fs/cgroup/systemd; HOME_CG=\$(sed -n 's/^[0-9]*:name=systemd://p' /proc/self/cgroup)
else H=/sys/fs/cgroup; HOME_CG=\$(sed -n 's/^0:://p' /proc/self/cgroup); fi
CG=\$H/kubelet-labeler-bench-\$\$
mkdir -p "\$CG" && echo \$\$ > "\$CG/cgroup.procs" || exit 93
export XDG_RUNTIME_DIR=$work/xdg-runtime XDG_CONFIG_HOME=$work/xdg-config
mkdir -p "\$XDG_RUNTIME_DIR" "\$XDG_CONFIG_HOME"; chmod 700 "\$XDG_RUNTIME_DIR"
SYSTEMD_UNIT_PATH=/etc/systemd/system:\$XDG_RUNTIME_DIR/systemd/generator \
SYSTEMD_GENERATOR_PATH=/etc/systemd/system-generators /lib/systemd/systemd --user > $work/manager.log 2>&1 &
pid=\$!
for i in \$(seq 200); do case \$(systemctl --user is-system-running 2>/dev/null) in running|degraded) break;; esac; sleep 0.05; done
# The boot's sync (adopts what registration set), then the path unit armed,
# as kubelet's start pulls them in.
timeout 120 systemctl --user start kubelet-labeler-sync.service
systemctl --user start kubelet-labeler-sync.path
echo "path unit: \$(systemctl --user is-active kubelet-labeler-sync.path)"
python3 $PWD/benches/git_to_node.py $pki $port $node $work/stage $trials ${TIMEOUT:-30} ${WRITE:-rename}
rc=\$?
kill -9 \$pid; wait \$pid 2>/dev/null
echo \$\$ > "\$H\$HOME_CG/cgroup.procs"
for p in \$(cat \$(find "\$CG" -name cgroup.procs)); do kill -9 \$p 2>/dev/null; done
sleep 0.2; find "\$CG" -depth -type d -exec rmdir {} + 2>/dev/null
exit \$rc
EOF
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; systemd $(/lib/systemd/systemd --version | sed -n '1s/systemd \([0-9]*\).*/\1/p'); $trials trials, the drop-in written by ${WRITE:-rename}"
status=0
unshare --mount --propagation private bash "$work/node.sh" || status=$?
echo "the sync's journal:"; sed 's/^/  /' "$work/sync.log" 2>/dev/null || true
exit $status
