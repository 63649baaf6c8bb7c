"""benches/git-to-node.sh's timed part, run inside the node's mount namespace
with its systemd --user up: each trial replaces the env drop-in as the MCO's
daemon writes a file (a temp file in the same directory, then rename(2) over
it) and waits until the Node as the API server stores it carries the new
label (polled every 10 ms as the cluster admin on a kept-alive connection).
The sync service's start time (systemd's CLOCK_MONOTONIC stamp) splits the
total into the path unit's trigger and the sync itself. Not a test.
"""

import http.client
import json
import os
import ssl
import statistics
import subprocess
import sys
import time

DROPIN = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"


def main():
    pki, port, node, stage, trials, timeout, how = sys.argv[1:8]
    trials, timeout = int(trials), float(timeout)
    pause = float(os.environ.get("PAUSE", "2.5"))
    ctx = ssl.create_default_context(cafile=f"{pki}/ca.crt")
    ctx.load_cert_chain(f"{pki}/admin.crt", f"{pki}/admin.key")
    conn = [None]

    def round_label():
        for _ in range(3):
            try:
                if conn[0] is None:
                    conn[0] = http.client.HTTPSConnection("127.0.0.1", int(port), context=ctx,
                                                          timeout=10)
                conn[0].request("GET", f"/api/v1/nodes/{node}")
                r = conn[0].getresponse()
                body = r.read()
                if r.status == 200:
                    return json.loads(body)["metadata"].get("labels", {}).get("example.com/round")
            except (OSError, http.client.HTTPException):
                conn[0] = None
        return None

    def show(*props, unit="kubelet-labeler-sync.service"):
        out = subprocess.run(["systemctl", "--user", "show", unit]
                             + [f"-p{p}" for p in props], capture_output=True, text=True).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def idle():
        end = time.time() + 60
        while time.time() < end:
            st = subprocess.run(["systemctl", "--user", "is-active", "kubelet-labeler-sync.service"],
                                capture_output=True, text=True).stdout.strip()
            if st in ("inactive", "failed"):
                return True
            time.sleep(0.05)
        return False

    rows = []
    for i in range(1, trials + 1):
        # Apart by more than systemd's default start limit allows (5 starts
        # in 10 s): a quicker change than that is refused, not measured.
        time.sleep(pause)
        if not idle():
            print(f"trial {i}: the sync service did not stop within 60 s")
            break
        before = show("ExecMainStartTimestampMonotonic")["ExecMainStartTimestampMonotonic"]
        text = open(f"{stage}/{i}/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf").read()
        if how in ("rename", "policy"):
            tmp = os.path.join(os.path.dirname(DROPIN), f".{os.path.basename(DROPIN)}.{os.getpid()}{i}")
            with open(tmp, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            t0 = time.monotonic()
            os.rename(tmp, DROPIN)
            if how == "policy":
                # What OpenShift's node disruption policy has the MCO's
                # daemon do after writing the file: reload, restart the sync.
                subprocess.run(["systemctl", "--user", "daemon-reload"], check=False)
                subprocess.run(["systemctl", "--user", "restart", "--no-block",
                                "kubelet-labeler-sync.service"], check=False)
        else:  # written in place: truncated, written, closed
            t0 = time.monotonic()
            with open(DROPIN, "w") as f:
                f.write(text)
        seen = None
        while time.monotonic() - t0 < timeout:
            if round_label() == str(i):
                seen = time.monotonic()
                break
            time.sleep(0.01)
        p = show("ExecMainStartTimestampMonotonic", "ExecMainExitTimestampMonotonic", "Result")
        started = p["ExecMainStartTimestampMonotonic"]
        fired = started != before and started != "0"
        if seen is None:
            path = show("ActiveState", "Result", unit="kubelet-labeler-sync.path")
            print(f"trial {i}: TIMEOUT: no label example.com/round={i} on the Node {timeout:.0f} s "
                  f"after the {how}; the sync service "
                  + ("ran (see its journal)" if fired else
                     f"never started: the path unit did not fire on the {how}")
                  + f" (sync service: {p['Result']}; path unit: {path['ActiveState']}, {path['Result']})",
                  flush=True)
            rows.append(None)
            break
        row = {"total_ms": (seen - t0) * 1000}
        if fired:
            row["trigger_ms"] = int(started) / 1000 - t0 * 1000
            row["sync_ms"] = row["total_ms"] - row["trigger_ms"]
        rows.append(row)
        print(f"trial {i}: {how} to label in the API server {row['total_ms']:.0f} ms"
              + (f" ({how} to sync start {row['trigger_ms']:.0f} ms, sync start to label "
                 f"{row['sync_ms']:.0f} ms)" if fired else ""), flush=True)
    ok = [r for r in rows if r]
    if ok:
        def med(k):
            v = [r[k] for r in ok if k in r]
            return f"median {statistics.median(v):.0f} ms (min {min(v):.0f}, max {max(v):.0f})" if v else "-"
        print(f"\n{len(ok)} of {trials} trials: {how} to label {med('total_ms')}; "
              f"{how} to sync start {med('trigger_ms')}; sync start to label {med('sync_ms')}")
    sys.exit(0 if len(ok) == trials else 1)


if __name__ == "__main__":
    main()
