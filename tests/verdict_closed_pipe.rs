//! Review 18 r18c F3: a command whose exit code is a verdict keeps it when
//! a reader stops early (`| head`, `| grep -q`) and stdout closes before
//! the end of a report over the pipe buffer (64 KiB). Before, the closed
//! pipe ended the run with 0 and the verdict unsaid.

use crate::plan::{plan, render};
use crate::support::{bin, scratch_dir, stderr, write};

use std::path::Path;
use std::process::{Command, Output};

/// `cmd` run with stdout a pipe whose read end is closed before it writes.
fn into_closed_pipe(mut cmd: Command) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cmd.stdout(writer).output().unwrap()
}

/// The full run's stdout is past the pipe buffer, so the closed pipe is met.
fn past_pipe_buffer(o: &Output) {
    assert!(o.stdout.len() > 64 << 10, "{} bytes", o.stdout.len());
}

/// One `--node-labels=` word of 180 KB in kubelet.service: over
/// MAX_ARG_STRLEN, kubelet can never start. `explain | head` exits 1 and
/// says so.
#[test]
fn explain_keeps_kubelet_cannot_start_on_a_closed_pipe() {
    let tmp = scratch_dir();
    let root = tmp.path();
    let labels: Vec<String> = (0..20000).map(|i| format!("k{i:05}=v")).collect();
    write(
        &root.join("etc/systemd/system/kubelet.service"),
        &format!(
            "[Service]\nExecStart=/usr/bin/kubelet --node-labels={}\n",
            labels.join(",")
        ),
    );
    let explain = |json: bool| {
        let mut c = bin();
        c.arg("explain")
            .args(json.then_some("--json"))
            .arg("--root")
            .arg(root);
        c
    };
    for json in [false, true] {
        let full = explain(json).output().unwrap();
        assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
        assert!(stderr(&full).contains("kubelet cannot start"));
        past_pipe_buffer(&full);
        let closed = into_closed_pipe(explain(json));
        let err = stderr(&closed);
        assert_eq!(closed.status.code(), Some(1), "json {json}: {err}");
        assert!(err.contains("kubelet cannot start"), "json {json}: {err}");
    }
}

/// A fleet export of 3,000 GPU nodes and a taint rule added: every node
/// changes. `plan --fail-on change --format json | head` exits 1.
#[test]
fn plan_fail_on_keeps_its_exit_code_on_a_closed_pipe() {
    let tmp = scratch_dir();
    let d = tmp.path();
    let (base, proposed) = (d.join("base"), d.join("proposed"));
    render(&base, &[]);
    let rules = crate::support::repo().join("examples/rules/openshift-gpu.yaml");
    render(&proposed, &["--rules", rules.to_str().unwrap()]);
    let nodes: Vec<serde_json::Value> = (0..3000)
        .map(|i| {
            let name = format!("gpu-a100-rack{:03}-node-{i:05}", i / 40);
            serde_json::json!({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "node-role.kubernetes.io/worker": "",
                    "node.openshift.io/os_id": "rhcos",
                    "node.kubernetes.io/worker-gpu": "",
                }},
                "spec": {},
                "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}},
            })
        })
        .collect();
    let fleet = d.join("fleet.json");
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": nodes});
    std::fs::write(&fleet, list.to_string()).unwrap();
    // JSON names every node (text and markdown name ten of a group).
    let args = ["--fail-on", "change", "--format", "json"];
    let full = plan(&base, &proposed, &fleet, &args);
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    past_pipe_buffer(&full);
    let closed = into_closed_pipe(plan_command(&base, &proposed, &fleet, &args));
    assert_eq!(closed.status.code(), Some(1), "{}", stderr(&closed));
}

fn plan_command(from: &Path, to: &Path, fleet: &Path, extra: &[&str]) -> Command {
    let mut c = bin();
    c.arg("plan")
        .arg("--from")
        .arg(from)
        .arg("--to")
        .arg(to)
        .arg("--fleet")
        .arg(fleet)
        .args(extra);
    c
}

/// `validate` on a command line it refuses, its report past the pipe
/// buffer: exit 1 on a closed pipe too.
#[test]
fn validate_keeps_its_refusal_on_a_closed_pipe() {
    let args: Vec<String> = (0..4000)
        .map(|i| format!("--no-such-flag-{i:05}=some-value"))
        .collect();
    let validate = || {
        let mut c = bin();
        c.args(["validate", "--"]).args(&args);
        c
    };
    let full = validate().output().unwrap();
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    past_pipe_buffer(&full);
    let closed = into_closed_pipe(validate());
    assert_eq!(closed.status.code(), Some(1), "{}", stderr(&closed));
}
