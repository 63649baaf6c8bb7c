"""The fleet-scale day-2 sync benchmark's driver (benches/fleet-sync.sh runs
it against a real kube-apiserver started by ../shared/tools/realcluster/up.sh
with an audit log). Not a test.

N nodes, each with its own client certificate and its own node tree (a
kubelet.service and the env drop-in, replaced as the MCO's daemon does: a
temp file in the same directory, then rename(2)), run the wrapper's `sync`
mode as shipped (driving the host's curl through a logging shim) in rounds:

  boot   every node at once, the Node as kubelet registered it: adopts
  same   every node at once, nothing changed since the last round: reads only
  all    every node at once after a label changed
  batch  the same in batches of BATCH (the MCO's maxUnavailable), one after the other
  kill   every node at once; the API server is SIGKILLed mid-run and restarted
  429    every node at once through a TLS proxy answering 429 (Retry-After: 1)
         to each node's first K429 requests and to a fraction F429 of later ones

Per round: requests per node by verb (the shim: what the nodes sent; the
audit log: what the API server answered), time until every Node carries the
round's label (checked in the API server), the API server's and etcd's CPU
per sync, the Node's JSON size, and for the fault rounds the retry delays.

`python3 fleet_sync.py proxy ...` is the 429 proxy (a process of its own, so
its CPU is not the API server's).
"""

import argparse
import http.client
import http.server
import json
import os
import random
import resource
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")
ENV_DROPIN = "etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"
# What kubelet registers a GPU worker with (--node-labels), and the sync derives.
BASE_LABELS = [
    "node.kubernetes.io/worker-gpu=",
    "feature.node.kubernetes.io/pci-10de.present=true",
    "feature.node.kubernetes.io/cpu-model.vendor_id=Intel",
    "nvidia.com/gpu.present=true",
    "example.com/tier=gold",
    "example.com/rack=r12",
    "example.com/zone=a",
]
ROUND_KEY = "example.com/round"


def ctx_for(pki, who):
    c = ssl.create_default_context(cafile=f"{pki}/ca.crt")
    c.load_cert_chain(f"{pki}/{who}.crt", f"{pki}/{who}.key")
    return c


def request(host, port, ctx, method, path, body=None, timeout=30):
    conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=timeout)
    try:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except OSError:
        return None


def pct(values, p):
    v = sorted(values)
    if not v:
        return float("nan")
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


class Cluster:
    def __init__(self, rc_dir):
        self.dir = rc_dir
        self.pki = f"{rc_dir}/pki"
        env = dict(
            line.split("=", 1)
            for line in open(f"{rc_dir}/env").read().replace("export ", "").split()
        )
        self.api = env["API_URL"]
        self.port = int(self.api.rsplit(":", 1)[1])
        self.admin = ctx_for(self.pki, "admin")

    def pid(self, name):
        pid = None
        for line in open(f"{self.dir}/pids"):
            w = line.split()
            if w and w[0] == name:
                pid = int(w[1])
        return pid

    def get(self, path):
        return request("127.0.0.1", self.port, self.admin, "GET", path)

    def ready(self, timeout=180):
        end = time.time() + timeout
        while time.time() < end:
            try:
                if self.get("/readyz")[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def kill_and_restart(self, down_s, log):
        """SIGKILL the API server, wait down_s, start it again with the same
        command line (recorded in pids, so down.sh stops the new one)."""
        pid = self.pid("kube-apiserver")
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[:-1]
        ticks = cpu_ticks(pid) or 0
        t_kill = time.time()
        os.kill(pid, signal.SIGKILL)
        while os.path.exists(f"/proc/{pid}"):
            time.sleep(0.01)
        time.sleep(down_s)
        out = open(f"{self.dir}/apiserver.log", "ab")
        p = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        with open(f"{self.dir}/pids", "a") as f:
            f.write(f"kube-apiserver {p.pid} {argv[0].decode()}\n")
        t_start = time.time()
        ok = self.ready()
        log["ticks_at_ready"] = cpu_ticks(p.pid) or 0
        log["killed_at"] = t_kill
        log["restarted_at"] = t_start
        log["ready_at"] = time.time()
        log["ticks_before_kill"] = ticks
        log["ready"] = ok


def kubeconfig(path, server, pki, name):
    with open(path, "w") as f:
        f.write(
            f"apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
            f"    server: {server}\n    certificate-authority: {pki}/ca.crt\n"
            f"contexts:\n- name: n\n  context: {{cluster: c, user: u}}\n"
            f"current-context: n\nusers:\n- name: u\n  user:\n"
            f"    client-certificate: {pki}/node-{name}.crt\n"
            f"    client-key: {pki}/node-{name}.key\n"
        )


def write_env(tree, labels):
    """As the MCO's daemon writes a file: a temp file beside it, rename(2)."""
    path = f"{tree}/{ENV_DROPIN}"
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(
            "[Service]\n"
            f'Environment="FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS={",".join(labels)}"\n'
        )
    os.rename(tmp, path)


def labels_for(round_value):
    return BASE_LABELS + [f"{ROUND_KEY}={round_value}"]


def parse_shim(path, offset):
    """(time, node, method) of every request the shim saw since offset."""
    rows = []
    with open(path, "rb") as f:
        f.seek(offset)
        for line in f.read().decode(errors="replace").splitlines():
            w = line.split()
            if len(w) == 3:
                rows.append((float(w[0]), w[1], w[2]))
    return rows


def parse_audit(path, offset):
    """(verb, code) of every request of a fleet node the API server answered."""
    rows = []
    with open(path, "rb") as f:
        f.seek(offset)
        for line in f.read().decode(errors="replace").splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            user = e.get("user", {}).get("username", "")
            if not user.startswith("system:node:fleet-"):
                continue
            if e.get("stage") not in ("ResponseComplete", "Panic"):
                continue
            code = e.get("responseStatus", {}).get("code", 0)
            rows.append((e.get("verb", "?"), code))
    return rows


def size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def node_parts(body):
    """Bytes of the Node's annotations, labels and managedFields (compact JSON)."""
    m = json.loads(body)["metadata"]
    return {k: len(json.dumps(m.get(k, {}), separators=(",", ":")))
            for k in ("labels", "annotations", "managedFields")}


def run_round(a, cluster, names, name, value, batch, fault, out):
    print(f"\n== round {name}: N={len(names)}"
          + (f", batches of {batch}" if batch < len(names) else ", all at once")
          + (f", fault: {fault}" if fault else ""), flush=True)
    for n in names:
        write_env(f"{a.work}/nodes/{n}", labels_for(value))
    proxy = None
    kc = "kubeconfig"
    if fault == "429":
        proxy_log = f"{a.work}/proxy-{name}.log"
        proxy = subprocess.Popen(
            [sys.executable, __file__, "proxy", "--rc-dir", a.rc_dir,
             "--listen", str(a.proxy_port), "--log", proxy_log,
             "--first", str(a.k429), "--fraction", str(a.f429)],
            stdout=subprocess.PIPE, text=True)
        proxy.stdout.readline()  # "listening"
        kc = "kubeconfig-proxy"
    shim_log = f"{a.work}/requests.log"
    audit_log = f"{a.rc_dir}/audit.log"
    shim_off, audit_off = size(shim_log), size(audit_log)
    api_pid, etcd_pid = cluster.pid("kube-apiserver"), cluster.pid("etcd")
    api0, etcd0 = cpu_ticks(api_pid), cpu_ticks(etcd_pid)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    logdir = f"{a.work}/logs/{name}"
    os.makedirs(logdir, exist_ok=True)
    fault_log = {}
    killer = None
    if fault == "kill":
        trigger = max(1, len(names) // 5)

        def kill_mid_run():
            end = time.time() + 120
            while time.time() < end:
                if len(parse_shim(shim_log, shim_off)) >= trigger:
                    break
                time.sleep(0.01)
            cluster.kill_and_restart(a.down, fault_log)

        killer = threading.Thread(target=kill_mid_run)
    t0 = time.time()
    if killer:
        killer.start()
    done = {}
    codes = {}
    restarts = {}

    def spawn(n, mode):
        with open(f"{logdir}/{n}.log", mode) as err:
            try:
                return subprocess.Popen(
                    [a.wrapper, "sync", "--root", f"{a.work}/nodes/{n}",
                     "--kubeconfig", f"{a.work}/nodes/{n}/{kc}", "--curl", a.shim,
                     "--max-wait", str(a.max_wait)],
                    stdout=subprocess.DEVNULL, stderr=err)
            except OSError as e:
                sys.exit(f"fleet_sync.py: round {name}: could not start the sync of {n} "
                         f"({e}): this machine cannot run {batch} nodes at once; run "
                         "ROUNDS=batch with a smaller BATCH")

    for i in range(0, len(names), batch):
        pending = {n: spawn(n, "w") for n in names[i:i + batch]}
        # As the sync's unit (Restart=on-failure, RestartPreventExitStatus=2):
        # a run that gave up (75) starts again RESTART_SEC later.
        waiting = {}
        while pending or waiting:
            for n, p in list(pending.items()):
                if p.poll() is not None:
                    del pending[n]
                    if p.returncode not in (0, 1, 2) and restarts.get(n, 0) < a.max_restarts:
                        restarts[n] = restarts.get(n, 0) + 1
                        waiting[n] = time.time() + a.restart_sec
                        continue
                    done[n] = time.time() - t0
                    codes[n] = p.returncode
            for n, at in list(waiting.items()):
                if time.time() >= at:
                    del waiting[n]
                    pending[n] = spawn(n, "a")
            time.sleep(0.005)
    wall = time.time() - t0
    if killer:
        killer.join()
    api1 = cpu_ticks(cluster.pid("kube-apiserver"))
    etcd1 = cpu_ticks(etcd_pid)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proxy:
        proxy.send_signal(signal.SIGTERM)
        proxy.wait()
    # Converged: every Node carries the round's label, as stored.
    st, body = cluster.get(f"/api/v1/nodes?labelSelector={ROUND_KEY}%3D{value}")
    items = json.loads(body).get("items", []) if st == 200 else []
    have = {i["metadata"]["name"] for i in items}
    missing = [n for n in names if n not in have]
    st, node = cluster.get(f"/api/v1/nodes/{names[0]}")
    # The API server's CPU: its ticks over the round (both processes in the
    # kill round) less what it spends idle over the same time.
    if fault == "kill" and fault_log:
        api_ticks = (fault_log["ticks_before_kill"] - api0) + (api1 or 0)
    else:
        api_ticks = (api1 or 0) - api0
    api_ticks_net = api_ticks - a.idle_rate * wall
    if fault == "kill" and fault_log:
        # and less the restarted API server's own start-up
        api_ticks_net -= fault_log["ticks_at_ready"]
    shim = parse_shim(shim_log, shim_off)
    audit = parse_audit(audit_log, audit_off)
    per_node = {}
    for t, n, m in shim:
        per_node.setdefault(n, []).append((t, m))
    verbs = {}
    for _, _, m in shim:
        verbs[m] = verbs.get(m, 0) + 1
    a_verbs = {}
    for v, c in audit:
        k = f"{v} {c}"
        a_verbs[k] = a_verbs.get(k, 0) + 1
    counts = [len(per_node.get(n, [])) for n in names]
    lines = [open(f"{logdir}/{n}.log").read().strip().splitlines() for n in names]
    last = [ls[-1] if ls else "" for ls in lines]
    res = {
        "round": name, "nodes": len(names), "batch": batch, "fault": fault,
        "converged": len(names) - len(missing), "missing": missing[:10],
        "exit_codes": {str(c): list(codes.values()).count(c) for c in set(codes.values())},
        "converge_s": round(max(done.values()), 3) if not missing else None,
        "node_done_s_p50": round(pct(done.values(), 50), 3),
        "node_done_s_p90": round(pct(done.values(), 90), 3),
        "wall_s": round(wall, 3),
        "requests_sent_by_verb": verbs,
        "requests_per_node": {"min": min(counts), "median": statistics.median(counts),
                              "max": max(counts)},
        "api_server_answered": a_verbs,
        "api_server_cpu_ms_per_sync": round(api_ticks * 1000 / TICK / len(names), 2),
        "api_server_cpu_ms_per_sync_less_idle": round(api_ticks_net * 1000 / TICK / len(names), 2),
        "etcd_cpu_ms_per_sync": round(((etcd1 or 0) - etcd0) * 1000 / TICK / len(names), 2),
        "node_cpu_ms_per_sync": round(
            ((ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)) * 1000 / len(names), 2),
        "node_json_bytes": len(node) if st == 200 else None,
        "node_json_bytes_of": node_parts(node) if st == 200 else None,
        "sample_line": last[0],
        # every line of a node that failed or was left behind (the first 10)
        # runs that gave up (exit 75) and were started again, as systemd would
        "restarted": {"nodes": len(restarts), "max_per_node": max(restarts.values(), default=0)},
        "gave_up_lines": [line for ls in lines for line in ls if "gave up" in line][:5],
        "failed_lines": [line for n, ls in zip(names, lines)
                         if codes.get(n) != 0 or n in missing for line in ls][:10],
    }
    if fault:
        # Backoff waits: gaps > 0.25 s between a node's requests, by their
        # order (a slow answer counts too: the shim sees sends, not answers).
        waits = {}
        for n, reqs in per_node.items():
            reqs.sort()
            k = 0
            for (t1, _), (t2, _) in zip(reqs, reqs[1:]):
                if t2 - t1 > 0.25:
                    waits.setdefault(k, []).append(t2 - t1)
                    k += 1
        res["retry_waits_s"] = {
            f"wait {k + 1}": {"nodes": len(v), "min": round(min(v), 2),
                              "median": round(statistics.median(v), 2),
                              "max": round(max(v), 2)}
            for k, v in sorted(waits.items())}
        # The arrival peak: most requests in any one second.
        ts = sorted(t for t, _, _ in shim)
        peak, j = 0, 0
        for i, t in enumerate(ts):
            while ts[j] < t - 1:
                j += 1
            peak = max(peak, i - j + 1)
        res["peak_requests_per_s"] = peak
    if fault == "kill" and fault_log:
        res["api_server_down_s"] = round(fault_log["ready_at"] - fault_log["killed_at"], 2)
        res["killed_at_s"] = round(fault_log["killed_at"] - t0, 2)
        res["restarted_ready"] = fault_log["ready"]
    if fault == "429":
        p = [json.loads(line) for line in open(proxy_log)]
        res["proxy_429"] = sum(1 for r in p if r["status"] == 429)
        res["proxy_forwarded"] = sum(1 for r in p if r["status"] != 429)
        res["proxy_identities"] = len({r["cn"] for r in p})
    out.append(res)
    print(json.dumps(res, indent=1), flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rc-dir", required=True)
    ap.add_argument("--wrapper", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--rounds", default="boot same all batch kill 429")
    ap.add_argument("--max-wait", type=int, default=300)
    ap.add_argument("--down", type=float, default=5.0)
    ap.add_argument("--proxy-port", type=int, default=27699)
    ap.add_argument("--k429", type=int, default=2)
    ap.add_argument("--f429", type=float, default=0.25)
    ap.add_argument("--out", required=True)
    ap.add_argument("--restart-sec", type=float, default=60.0)
    ap.add_argument("--max-restarts", type=int, default=5)
    a = ap.parse_args()
    cluster = Cluster(a.rc_dir)
    names = [f"fleet-{i:05d}" for i in range(1, a.nodes + 1)]
    # The shim: one line per request (time, node, verb), then the host's curl.
    a.shim = f"{a.work}/shim-curl"
    curl = subprocess.run(["sh", "-c", "command -v curl"], capture_output=True,
                          text=True).stdout.strip()
    with open(a.shim, "w") as f:
        f.write(
            "#!/bin/bash\nm=GET n=? prev=\n"
            # the Node from the URL (the credentials reach curl as memfds)
            "for w in \"$@\"; do case $prev in -X) m=$w;; esac; "
            "case $w in https://*/api/v1/nodes/*) n=${w##*/nodes/}; n=${n%%[?/]*};; esac; "
            "prev=$w; done\n"
            f"echo \"$EPOCHREALTIME $n $m\" >> {a.work}/requests.log\n"
            f'exec {curl} "$@"\n'
        )
    os.chmod(a.shim, 0o755)
    open(f"{a.work}/requests.log", "a").close()
    # Node trees and the Nodes, as kubelet registered them (its own certificate).
    t = time.time()
    proxy_url = f"https://127.0.0.1:{a.proxy_port}"
    for n in names:
        tree = f"{a.work}/nodes/{n}"
        os.makedirs(f"{tree}/etc/systemd/system/kubelet.service.d", exist_ok=True)
        os.makedirs(f"{tree}/usr/bin", exist_ok=True)
        with open(f"{tree}/etc/systemd/system/kubelet.service", "w") as f:
            f.write("[Service]\nExecStart=/usr/bin/kubelet --kubeconfig=/etc/kubernetes/kubelet.conf\n")
        with open(f"{tree}/usr/bin/kubelet", "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(f"{tree}/usr/bin/kubelet", 0o755)
        kubeconfig(f"{tree}/kubeconfig", cluster.api, cluster.pki, n)
        kubeconfig(f"{tree}/kubeconfig-proxy", proxy_url, cluster.pki, n)

    def register(n):
        labels = {"kubernetes.io/hostname": n, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                  "beta.kubernetes.io/arch": "amd64"}
        for kv in labels_for(0):
            k, v = kv.split("=", 1)
            labels[k] = v
        body = json.dumps({"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": n, "labels": labels}})
        st, b = request("127.0.0.1", cluster.port, ctx_for(cluster.pki, f"node-{n}"),
                        "POST", "/api/v1/nodes", body)
        if st not in (201, 409):
            raise SystemExit(f"registering {n}: HTTP {st}: {b[:300]!r}")

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(register, names))
    st, node = cluster.get(f"/api/v1/nodes/{names[0]}")
    registered_bytes = len(node)
    print(f"{a.nodes} Nodes registered with their own certificates in {time.time() - t:.1f} s; "
          f"a Node as registered: {registered_bytes} bytes of JSON {node_parts(node)}", flush=True)
    # The API server's CPU when idle, to take out of each round's.
    pid = cluster.pid("kube-apiserver")
    c0 = cpu_ticks(pid)
    time.sleep(5)
    a.idle_rate = (cpu_ticks(pid) - c0) / 5
    print(f"API server idle: {a.idle_rate * 1000 / TICK:.0f} ms CPU per s", flush=True)
    out = []
    rounds = a.rounds.split()
    for i, r in enumerate(rounds):
        if r == "boot":
            run_round(a, cluster, names, "boot", 0, a.nodes, None, out)
        elif r == "same":
            run_round(a, cluster, names, "same", 0, a.nodes, None, out)
        elif r == "all":
            run_round(a, cluster, names, "all", i, a.nodes, None, out)
        elif r == "batch":
            run_round(a, cluster, names, "batch", i, a.batch, None, out)
        elif r == "kill":
            run_round(a, cluster, names, "kill", i, a.nodes, "kill", out)
        elif r == "429":
            run_round(a, cluster, names, "429", i, a.nodes, "429", out)
        else:
            raise SystemExit(f"unknown round {r!r} (boot same all batch kill 429)")
    load = open("/proc/loadavg").read().split()[:3]
    summary = {"nodes": a.nodes, "batch": a.batch, "cpus": os.cpu_count(),
               "loadavg_at_end": load, "registered_node_json_bytes": registered_bytes,
               "registered_node_json_bytes_of": node_parts(node),
               "api_server_idle_cpu_ms_per_s": round(a.idle_rate * 1000 / TICK, 1),
               "rounds": out}
    json.dump(summary, open(a.out, "w"), indent=1)
    print(f"\n{'round':<6} {'conv':>9} {'converge s':>10} {'p50 s':>6} {'req/node':>9} "
          f"{'sent by verb':<28} {'api ms/sync':>11} {'etcd ms':>7} {'node B':>7}")
    for r in out:
        rq = r["requests_per_node"]
        print(f"{r['round']:<6} {r['converged']:>4}/{r['nodes']:<4} "
              f"{r['converge_s'] if r['converge_s'] is not None else 'NO':>10} "
              f"{r['node_done_s_p50']:>6} {rq['median']:>4}/{rq['max']:<4} "
              f"{','.join(f'{k}={v}' for k, v in sorted(r['requests_sent_by_verb'].items())):<28} "
              f"{r['api_server_cpu_ms_per_sync_less_idle']:>11} {r['etcd_cpu_ms_per_sync']:>7} "
              f"{r['node_json_bytes']:>7}")
    print(f"(load average at the end {' '.join(load)} on {os.cpu_count()} CPUs; "
          f"details: {a.out})")
    if any(r["converged"] != r["nodes"] for r in out):
        sys.exit(1)


# ------------------------------------------------------------------ the 429 proxy
def proxy_main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rc-dir", required=True)
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--first", type=int, default=2)
    ap.add_argument("--fraction", type=float, default=0.25)
    a = ap.parse_args(sys.argv[2:])
    cluster = Cluster(a.rc_dir)
    pki = cluster.pki
    # TLS ends here with the API server's own certificate (same CA, same
    # SAN); each node must show its certificate, and the request goes on
    # with that same node's certificate, so the API server sees each node
    # as itself (Node authorization, NodeRestriction).
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(f"{pki}/apiserver.crt", f"{pki}/apiserver.key")
    server_ctx.load_verify_locations(f"{pki}/ca.crt")
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    upstream = {}
    seen = {}
    lock = threading.Lock()
    logf = open(a.log, "a")
    rnd = random.Random(42)

    class Handler(http.server.BaseHTTPRequestHandler):
        def setup(self):
            self.request.settimeout(60)
            self.request.do_handshake()
            super().setup()

        def log_message(self, *args):
            pass

        def handle_one(self):
            cn = dict(x[0] for x in self.connection.getpeercert()["subject"])["commonName"]
            node = cn.rsplit(":", 1)[1]
            with lock:
                k = seen.get(node, 0)
                seen[node] = k + 1
                throttle = k < a.first or rnd.random() < a.fraction
                if node not in upstream:
                    upstream[node] = ctx_for(pki, f"node-{node}")
                ctx = upstream[node]
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if throttle:
                status = 429
                data = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                   "message": "Too many requests, please try again later.",
                                   "reason": "TooManyRequests", "code": 429}).encode()
                self.send_response(429)
                self.send_header("Retry-After", "1")
            else:
                conn = http.client.HTTPSConnection("127.0.0.1", cluster.port, context=ctx,
                                                   timeout=60)
                headers = {h: v for h, v in self.headers.items()
                           if h.lower() in ("accept", "content-type")}
                conn.request(self.command, self.path, body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
                status = r.status
                conn.close()
                self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            with lock:
                logf.write(json.dumps({"t": time.time(), "cn": cn, "method": self.command,
                                       "status": status}) + "\n")
                logf.flush()

        do_GET = do_PATCH = do_POST = do_PUT = handle_one

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = 4096
        daemon_threads = True

        def get_request(self):
            sock, addr = self.socket.accept()
            return server_ctx.wrap_socket(sock, server_side=True,
                                          do_handshake_on_connect=False), addr

        def handle_error(self, request, client_address):
            pass

    srv = Server(("127.0.0.1", a.listen), Handler)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print("listening", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "proxy":
        proxy_main()
    else:
        main()
