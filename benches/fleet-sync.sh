#!/usr/bin/env bash
# Benchmark (not a test): the day-2 sync at fleet scale. N nodes, each with
# its own client certificate (CN=system:node:<name>) and node tree, run the
# static wrapper's `sync` mode as shipped (the host's curl, through a shim
# that logs each request) against the real kube-apiserver of
# ../shared/tools/realcluster (Node authorization, NodeRestriction, an audit
# log of the nodes' requests): all at once, in batches of BATCH (the MCO's
# maxUnavailable), with the API server SIGKILLed mid-run and restarted, and
# through a proxy answering 429. Prints per round: Nodes converged, time to
# converge, requests per node by verb, the API server's (and etcd's) CPU per
# sync, the Node's JSON size, and the retry waits of the fault rounds;
# benches/fleet_sync.py says what each round is. Needs root. Exit 1 when a
# round leaves a Node behind.
# usage: benches/fleet-sync.sh [N] [BATCH]
# env: ROUNDS="boot same all batch kill 429" (a subset, in order), MAX_WAIT=300
#      (the sync's --max-wait, as the service), RESTART_SEC=60 (a run that
#      gave up, exit 75, starts again this much later, as the service's
#      Restart=on-failure), DOWN=5 (seconds the API server
#      stays down), K429=2 F429=0.25 (429 to each node's first K429 requests,
#      then to a fraction F429), OUT=FILE (the figures as JSON), KEEP=1 (keep
#      the work dir), API_PORT, ETCD_PORT, PROXY_PORT.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-50}
batch=${2:-10}
rc=../shared/tools/realcluster
[ "$(id -u)" = 0 ] || { echo "fleet-sync.sh: run as root (the real API server's scripts need it)" >&2; exit 2; }
[ -f "$rc/up.sh" ] || { echo "fleet-sync.sh: $rc is absent (the real API server)" >&2; exit 2; }
# One curl and a wrapper per node at once, each with a few descriptors.
ulimit -n 65536 2>/dev/null || true
wrapper=$(bash machineconfigs/build-wrapper.sh x86_64)
work=$(mktemp -d /tmp/fleet-sync.XXXXXX)
export RC_DIR=$work/rc
cleanup() {
  bash "$rc/down.sh" "$RC_DIR" >/dev/null 2>&1 || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
# The nodes' requests, one audit event each when answered.
cat > "$work/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  userGroups: ["system:nodes"]
- level: None
EOF
names=$(seq -f 'fleet-%05g' 1 "$n" | tr '\n' ' ')
echo "making $n node certificates and starting the API server..." >&2
t0=$(date +%s)
NODE_NAMES=$names API_PORT=${API_PORT:-27743} ETCD_PORT=${ETCD_PORT:-24090} TTL=7200 \
  APISERVER_EXTRA_ARGS="--audit-policy-file=$work/audit-policy.yaml --audit-log-path=$RC_DIR/audit.log --audit-log-maxsize=0" \
  bash "$rc/up.sh" >/dev/null
echo "cluster up in $(( $(date +%s) - t0 )) s (load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs)" >&2
python3 benches/fleet_sync.py --rc-dir "$RC_DIR" --wrapper "$wrapper" --work "$work" \
  --nodes "$n" --batch "$batch" --rounds "${ROUNDS:-boot same all batch kill 429}" \
  --max-wait "${MAX_WAIT:-300}" --down "${DOWN:-5}" --k429 "${K429:-2}" --f429 "${F429:-0.25}" \
  --proxy-port "${PROXY_PORT:-27799}" --restart-sec "${RESTART_SEC:-60}" --out "${OUT:-/tmp/fleet-sync-$n-$batch.json}"
