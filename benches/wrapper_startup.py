#!/usr/bin/env python3
"""Benchmark: what the wrapper adds to a kubelet start.

Builds a node tree with the OpenShift 4.20 worker kubelet.service (from
../shared/fixtures/mco, placeholders filled), MCO's own kubelet drop-ins and
ours, with a no-op static program as kubenswrapper. Then it execs, many times
and interleaved, (a) the wrapper as systemd would (the environment systemd
builds, the wrapper's own drop-in args) and (b) the no-op directly with the
argv systemd would have run. Reports the median wall time of each, the
difference, and the peak RSS of a wrapper run, read by GNU time (its
ru_maxrss covers the wrapper image too: Linux carries the high-water mark
across execve; posix_spawn's shared-memory child would report Python's).

Also timed, interleaved with those: the wrapper refusing an unknown argument
(`--bogus`: exec, start-up and exit, no unit work), which splits the added
time into the cost of starting the image and the cost of its work; and any
OTHER wrappers given (e.g. an older build), through the same tree.

With FACTS_ROOT (a fixture node tree) and DERIVED="LABEL=DROPIN ..." in the
environment (env drop-ins rendered with --rules and/or --nfd-labels), one
more case per drop-in runs the wrapper with what it derives from that node's
facts: what node rules / NFD's label set add over the wrapper without them,
in the same interleaved run. OTHER wrappers run every wrapper case too.

With PREPARE_ONLY=DIR, it only writes the tree under DIR and prints each
case as JSON ({label: {argv, env}}), to run by hand (strace, perf, valgrind).

usage: wrapper_startup.py WRAPPER NOOP CLI [RUNS [OTHER_WRAPPER...]]
"""
import json
import os
import shutil
import subprocess
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(
    HERE, "..", "..", "shared", "fixtures", "mco",
    "release-4.20__templates__worker__01-worker-kubelet___base__units__kubelet.service.yaml")

FILL = {
    "cloudProvider .": "external",
    "credentialProviderConfigFlag . ": "",
    ".Images.infraImageKey": "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0000",
}


def unit_text():
    lines = open(FIXTURE).read().split("\n")
    body = lines[lines.index("contents: |") + 1:]
    out, skipping, took = [], False, False
    for line in body:
        s = line.strip()
        if s.startswith("{{- if"):
            skipping, took = True, False  # IPv4 single stack: take the else branch
            continue
        if s == "{{- else}}":
            skipping = False
            continue
        if s == "{{- end}}":
            skipping = False
            continue
        if skipping:
            continue
        line = re.sub(r"\{\{(.*?)\}\}", lambda m: FILL[m.group(1)], line)
        out.append(line[2:] if line.startswith("  ") else line)
    return "\n".join(out)


ENV_FILES = {
    "etc/os-release": 'ID="rhcos"\nVERSION_ID="4.20"\n',
    "etc/node-sizing.env": "SYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n",
    "etc/kubernetes/kubelet.conf": "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints:\n  - key: example.com/existing\n    effect: NoSchedule\n",
}
DROPINS = {
    "01-kubens.conf": "[Unit]\nAfter=kubens.service\n[Service]\nEnvironmentFile=-/run/kubens/env\n",
    "10-mco-default-madv.conf": '[Service]\nEnvironment="GODEBUG=x509ignoreCN=0,madvdontneed=1"\n',
    "20-logging.conf": '[Service]\nEnvironment="KUBELET_LOG_LEVEL=2"\n',
    "90-kubelet-labeler-env.conf": '[Service]\nEnvironment="FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=node.kubernetes.io/worker-gpu="\n'
                                   'Environment="FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=nvidia.com/gpu=true:NoSchedule"\n',
    "zz-kubelet-labeler.conf": "[Service]\nExecStart=\nExecStart=/usr/local/bin/kubelet-labeler-wrapper --unit %n\n",
}
# The environment systemd would give the service (after Environment= and
# EnvironmentFile=), which is what the wrapper expands the command with.
SERVICE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
    "INVOCATION_ID": "0123456789abcdef0123456789abcdef",
    "KUBELET_NODE_IP": "0.0.0.0", "ID": "rhcos", "VERSION_ID": "4.20",
    "SYSTEM_RESERVED_MEMORY": "1Gi", "SYSTEM_RESERVED_CPU": "500m", "SYSTEM_RESERVED_ES": "1Gi",
    "GODEBUG": "x509ignoreCN=0,madvdontneed=1", "KUBELET_LOG_LEVEL": "2",
    "KUBELET_NODE_NAME": "worker-0", "KUBELET_PROVIDERID": "",
    "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS": "node.kubernetes.io/worker-gpu=",
    "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS": "nvidia.com/gpu=true:NoSchedule",
}


def write(root, rel, text, mode=0o644):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def run_once(argv, env, expect=0):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env)
    _, status, usage = os.wait4(pid, 0)
    t1 = time.perf_counter_ns()
    if os.waitstatus_to_exitcode(status) != expect:
        sys.exit(f"{argv[0]} exited with status {status}")
    return t1 - t0, usage.ru_maxrss


def main():
    wrapper, noop, cli = sys.argv[1], sys.argv[2], sys.argv[3]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
    others = sys.argv[5:]
    prepare_only = os.environ.get("PREPARE_ONLY")
    root = prepare_only or tempfile.mkdtemp(prefix="kl-bench-")
    write(root, "etc/systemd/system/kubelet.service", unit_text())
    for name, text in DROPINS.items():
        write(root, "etc/systemd/system/kubelet.service.d/" + name, text)
    for rel, text in ENV_FILES.items():
        write(root, rel, text)
    for rel in ("usr/local/bin/kubenswrapper", "usr/bin/kubelet"):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(noop, "rb") as src, open(os.path.join(root, rel), "wb") as dst:
            dst.write(src.read())
        os.chmod(os.path.join(root, rel), 0o755)

    # The guard's state lives in /run, a tmpfs, on a node. On a disk
    # filesystem (ext4 /tmp here) the rename over the old state file makes
    # ext4 flush the new file's data first (auto_da_alloc): milliseconds
    # under load that a node never pays. So: a tmpfs when there is one.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    state = tempfile.mkdtemp(prefix="kl-bench-state-", dir=shm)
    print("guard state dir:", state, "(tmpfs, like /run)" if shm else "(not a tmpfs: slower than a node)")
    wrapped = [wrapper, "--unit", "kubelet.service", "--root", root, "--state-dir", state]
    # What systemd would exec without the wrapper, from `explain` on the
    # same tree and environment; the no-op gets exactly that argv.
    cmd = [cli, "explain", "--json", "--profile", "openshift", "--root", root]
    for k, v in SERVICE_ENV.items():
        cmd += ["--set-env", f"{k}={v}"]
    plan = json.loads(subprocess.run(cmd, check=True, capture_output=True).stdout)
    direct = [os.path.join(root, plan["executable"].lstrip("/"))] + plan["original_argv"][1:]
    assert plan["argv"] != plan["original_argv"], "the wrapper would add nothing"
    print("wrapper adds:", " ".join(a for a in plan["argv"] if a not in plan["original_argv"]))

    bogus = [wrapper, "--bogus"]
    # (label, argv, expected exit status); all interleaved, run for run.
    cases = [("direct", direct, 0), ("wrapped", wrapped, 0), ("bogus", bogus, 2)]
    cases += [(w, [w] + wrapped[1:], 0) for w in others]
    derived_env = {}  # label -> the service environment with its drop-in's variables
    facts = os.environ.get("FACTS_ROOT")
    for spec in os.environ.get("DERIVED", "").split() if facts else []:
        label, dropin = spec.split("=", 1)
        env = dict(SERVICE_ENV)
        extra = []
        for line in open(dropin):
            m = re.match(r'^Environment="([A-Z_]+)=(.*)"$', line.strip())
            if m:
                env[m.group(1)] = m.group(2)
                extra.append(line.strip())
        # A tree of its own whose env drop-in sets what the environment
        # holds: the wrapper fences a variable of ours no drop-in of ours
        # sets (the unit reads EnvironmentFile=s).
        droot = tempfile.mkdtemp(prefix="kl-bench-")
        shutil.copytree(root, droot, symlinks=True, dirs_exist_ok=True)
        ours = "etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"
        write(droot, ours, DROPINS["90-kubelet-labeler-env.conf"] + "\n".join(extra) + "\n")
        dstate = tempfile.mkdtemp(prefix="kl-bench-state-", dir=shm)
        argv = [wrapper, "--unit", "kubelet.service", "--root", droot,
                "--state-dir", dstate, "--facts-root", facts]
        rcmd = [a if a != root else droot for a in cmd] + ["--facts-root", facts]
        for k in ("KUBELET_LABELER_NODE_RULES", "KUBELET_LABELER_NFD_LABELS"):
            if k in env:
                rcmd += ["--set-env", f"{k}={env[k]}"]
        rplan = json.loads(subprocess.run(rcmd, check=True, capture_output=True).stdout)
        added = [a for a in rplan["argv"] if a not in rplan["original_argv"]]
        print(f"with {label}, the wrapper adds:", " ".join(added)[:300], "...")
        derived_env[label] = env
        cases.append((label, argv, 0))
        cases += [(f"{label} {w}", [w] + argv[1:], 0) for w in others]
        for w in others:
            derived_env[f"{label} {w}"] = env
    env_of = lambda label: derived_env.get(label, SERVICE_ENV)
    if prepare_only:
        print(json.dumps({label: {"argv": argv, "env": env_of(label)} for label, argv, _ in cases}))
        return
    null = os.open(os.devnull, os.O_WRONLY)
    saved_stderr = os.dup(2)
    os.dup2(null, 2)  # the wrapper's journal line and usage error, thousands of times
    try:
        for label, argv, expect in cases:  # warm caches
            for _ in range(50):
                run_once(argv, env_of(label), expect)
        times = {label: [] for label, _, _ in cases}
        # Every other round in reverse: a case's place in the round (after
        # which other program) biases it by a tenth of a millisecond here.
        for i in range(runs):
            for label, argv, expect in (cases if i % 2 == 0 else cases[::-1]):
                times[label].append(run_once(argv, env_of(label), expect)[0])
    finally:
        os.dup2(saved_stderr, 2)
    t_wrapped, t_direct = times["wrapped"], times["direct"]

    def peak_kib(argv):
        out = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, env=SERVICE_ENV,
                             capture_output=True, text=True, check=True)
        return int(out.stderr.strip().splitlines()[-1])
    rss = max(peak_kib(wrapped) for _ in range(20))
    rss_direct = max(peak_kib(direct) for _ in range(20))
    mw, md = statistics.median(t_wrapped), statistics.median(t_direct)
    print(f"runs: {runs} each, interleaved")
    print(f"direct no-op exec:   median {md / 1e6:.3f} ms")
    print(f"through the wrapper: median {mw / 1e6:.3f} ms")
    print(f"added by the wrapper: {(mw - md) / 1e6:.3f} ms (target <= 1 ms)")
    mb = statistics.median(times["bogus"])
    print(f"wrapper --bogus (spawn, start-up, usage error, exit): median {mb / 1e6:.3f} ms; "
          f"its image vs the no-op's: {(mb - md) / 1e6:+.3f} ms")
    print(f"  the wrapper's work (unit files, labels, guard state) and the exec of the no-op: "
          f"{(mw - mb) / 1e6:.3f} ms")
    for label in derived_env:
        if label.split()[0] != label:
            continue
        mr = statistics.median(times[label])
        print(f"through the wrapper with {label}: median {mr / 1e6:.3f} ms")
        print(f"  added by {label} over the wrapper without it: {(mr - mw) / 1e6:.3f} ms (target <= 0.3 ms)")
        print(f"  added by the wrapper with {label} over direct exec: {(mr - md) / 1e6:.3f} ms (target <= 1 ms)")
        for w in others:
            mo = statistics.median(times[f"{label} {w}"])
            print(f"  through {w} with {label}: median {mo / 1e6:.3f} ms, adds {(mo - md) / 1e6:.3f} ms")
    for w in others:
        mo = statistics.median(times[w])
        print(f"through {w}: median {mo / 1e6:.3f} ms, adds {(mo - md) / 1e6:.3f} ms")
    print(f"peak RSS through the wrapper: {rss / 1024:.2f} MiB (target <= 8 MiB); "
          f"the no-op alone: {rss_direct / 1024:.2f} MiB")


if __name__ == "__main__":
    main()
