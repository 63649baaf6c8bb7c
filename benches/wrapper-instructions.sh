#!/usr/bin/env bash
# Benchmark (not a test): instructions the wrapper executes per start, exact
# and repeatable where wall time on a shared machine is not (callgrind), for
# the cases benches/wrapper-startup.sh times: no rules, the rules of
# examples/rules/openshift-gpu.yaml, NFD's label set, both. The node tree is that bench's (PREPARE_ONLY), with
# kubenswrapper replaced by a non-executable image so the exec fails and
# callgrind reports the wrapper alone (the failed execve costs the same in
# every case).
# usage: benches/wrapper-instructions.sh [OTHER_WRAPPER...]  (others: e.g. an
# older build, counted on the same trees)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
PREPARE_ONLY="$work/tree" bash benches/wrapper-startup.sh 1 "$@" >"$work/prepare.txt"
printf '\x7fELF-not-really\n' >"$work/tree/usr/local/bin/kubenswrapper"
tail -n 1 "$work/prepare.txt" >"$work/cases.json"
python3 - "$work" <<'PY'
import json, os, re, subprocess, sys
work = sys.argv[1]
cases = json.load(open(os.path.join(work, "cases.json")))
print(f"{'case':<60} {'instructions':>14}")
for label, case in cases.items():
    if label in ("direct", "bogus"):
        continue
    out = os.path.join(work, "cg.out")
    # Each case's own root (the derived cases have theirs): kubelet there
    # made the non-executable image too.
    argv = case["argv"]
    if "--root" in argv:
        bogus = os.path.join(argv[argv.index("--root") + 1], "usr/local/bin/kubenswrapper")
        if os.path.exists(bogus):
            with open(bogus, "wb") as f:
                f.write(b"\x7fELF-not-really\n")
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + case["argv"],
                       env=case["env"], capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", p.stderr)
    if not m or "executing" not in p.stderr:
        sys.exit(f"{label}: no count, or the exec did not fail as planned:\n{p.stderr[-2000:]}")
    print(f"{label[:60]:<60} {int(m.group(1)):>14,}")
PY
