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
/// buffer: exit 1 on a closed pipe too. Its errors are bounded (review 41
/// r41b F5): the JSON report's 4,000 labels fill the pipe.
#[test]
fn validate_keeps_its_refusal_on_a_closed_pipe() {
    let labels: Vec<String> = (0..4000)
        .map(|i| format!("example.com/l{i:05}=v"))
        .collect();
    let args = [
        format!("--node-labels={}", labels.join(",")),
        "--no-such-flag=some-value".to_string(),
    ];
    let validate = || {
        let mut c = bin();
        c.args(["validate", "--json", "--"]).args(&args);
        c
    };
    let full = validate().output().unwrap();
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    past_pipe_buffer(&full);
    let closed = into_closed_pipe(validate());
    assert_eq!(closed.status.code(), Some(1), "{}", stderr(&closed));
}

/// Review 19 r19c F4: `sync --dry-run` with drift left (the Node holds
/// another owner's value for our key): exit 1 read to its end, and 1 with
/// stdout a closed pipe (before: 0).
#[test]
fn sync_dry_run_keeps_its_drift_on_a_closed_pipe() {
    use crate::support::fake_api::{self, FakeApi};
    if !fake_api::available() {
        return;
    }
    let dir = scratch_dir();
    let root = dir.path().join("root");
    crate::real_sync::tree(&root, "example.com/a=1", "");
    let node = serde_json::json!({
        "kind": "Node",
        "metadata": {"name": "st-node", "resourceVersion": "5",
                     "labels": {"example.com/a": "0"}},
        "spec": {}
    })
    .to_string();
    let api = FakeApi::start(
        &dir.path().join("api"),
        "st-node",
        &serde_json::json!([{"status": 200, "body": node}]),
    );
    let kc = dir.path().join("kubeconfig");
    write(&kc, &api.kubeconfig(None, None));
    let sync = || {
        let mut c = bin();
        c.args(["sync", "--profile", "openshift", "--dry-run", "--root"])
            .arg(&root)
            .arg("--kubeconfig")
            .arg(&kc);
        c
    };
    let full = sync().output().unwrap();
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    assert!(!full.stdout.is_empty(), "{}", stderr(&full));
    let closed = into_closed_pipe(sync());
    assert_eq!(closed.status.code(), Some(1), "{}", stderr(&closed));
    assert!(stderr(&closed).contains("dry run"), "{}", stderr(&closed));
}

/// Review 19 r19c F2: an image streamed (`-o -`, `-o FIFO`) is the
/// product, not data a reader may skip: cut short by its reader it is an
/// error naming how much was written, exit 1 (as coreos-installer's
/// "Broken pipe"); before, exit 0 with nothing said.
#[test]
fn a_streamed_image_cut_short_is_a_failure() {
    use crate::io_safety::{FLEET, GITOPS_REACHABLE, MERGE, RENDER_MC, command, inputs, ok};
    let tmp = scratch_dir();
    let dir = tmp.path();
    inputs(dir);
    if crate::support::test_iso(dir).is_none() {
        return;
    }
    ok(dir, &[&RENDER_MC[..], &GITOPS_REACHABLE].concat());
    ok(
        dir,
        &[
            &["iso", "embed"][..],
            &MERGE,
            &["ca.pem", "-o", "with.iso", "base.iso"],
        ]
        .concat(),
    );
    let embed = |out: &str| -> Vec<String> {
        [
            &["iso", "embed"][..],
            &MERGE,
            &["ca.pem", "-o", out, "base.iso"],
        ]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let fleet = |out: &str| -> Vec<String> {
        [&FLEET[..], &["-o", out, "base.iso"]]
            .concat()
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let remove = |out: &str| -> Vec<String> {
        ["iso", "remove", "-o", out, "with.iso"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    for make in [&embed as &dyn Fn(&str) -> Vec<String>, &fleet, &remove] {
        // stdout a pipe closed before the first byte.
        let args = make("-");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let closed = into_closed_pipe(command(dir, &args));
        let err = stderr(&closed);
        assert!(
            closed.status.code() == Some(1)
                && err.contains("the reader closed the stream after 0 bytes")
                && err.contains("the image is incomplete"),
            "{args:?}: {err}"
        );
        // A FIFO whose reader stops after 1000 bytes.
        let fifo = dir.join("out.fifo");
        let _ = std::fs::remove_file(&fifo);
        let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Read;
                let mut got = vec![0; 1000];
                std::fs::File::open(fifo)
                    .unwrap()
                    .read_exact(&mut got)
                    .unwrap();
            })
        };
        let args = make("out.fifo");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = command(dir, &args).output().unwrap();
        reader.join().unwrap();
        let err = stderr(&o);
        assert!(
            o.status.code() == Some(1) && err.contains("the image is incomplete"),
            "{args:?}: {err}"
        );
    }
}
