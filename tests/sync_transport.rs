//! The day-2 sync's I/O, the built programs against a scripted HTTPS API
//! server (support/fake_api.rs) through the host's real curl: a connection
//! cut mid-answer is retried and a write whose answer was lost is read
//! back; a stop leaves no key and no curl behind; curl sends one request
//! per try to the URL as written, with our User-Agent and field manager;
//! the server's text stays on one journal line; credentials under `--root`
//! stay inside the tree.

use crate::real_sync::tree;
use crate::support::fake_api::{self, FakeApi};
use crate::support::{scratch_dir, stderr, write};

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::json;

const NODE: &str = "st-node";

/// A Node as the API server answers it: `a` our label's value.
fn node(rv: &str, a: &str) -> String {
    json!({
        "kind": "Node",
        "metadata": {
            "name": NODE,
            "resourceVersion": rv,
            "labels": {"example.com/a": a},
            "annotations": {"kubelet-labeler.io/owned-labels": "example.com/a"}
        },
        "spec": {}
    })
    .to_string()
}

fn answer(status: u16, body: &str) -> serde_json::Value {
    json!({"status": status, "body": body})
}

fn sync(bin: &str, root: &Path, kubeconfig: Option<&Path>) -> Command {
    let mut c = Command::new(bin);
    c.args([
        "sync",
        "--profile",
        "openshift",
        "--max-wait",
        "60",
        "--root",
    ])
    .arg(root);
    if let Some(k) = kubeconfig {
        c.arg("--kubeconfig").arg(k);
    }
    c
}

const CLI: &str = env!("CARGO_BIN_EXE_kubelet-labeler");
const WRAPPER: &str = env!("CARGO_BIN_EXE_kubelet-labeler-wrapper");

/// A tree deriving example.com/a=1 and a server answering `script`, with
/// the node's kubeconfig (inline data) at `kubeconfig`.
fn setup(dir: &Path, script: serde_json::Value) -> (std::path::PathBuf, FakeApi) {
    let root = dir.join("root");
    tree(&root, "example.com/a=1", "");
    let api = FakeApi::start(&dir.join("api"), NODE, &script);
    write(&dir.join("kubeconfig"), &api.kubeconfig(None, None));
    (root, api)
}

fn one_line(o: &Output) -> String {
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "{err:?}");
    err
}

#[test]
fn a_cut_answer_is_retried_and_a_lost_write_read_back() {
    if !fake_api::available() {
        return;
    }
    let dir = scratch_dir();
    // The PATCH lands but its answer is cut (curl exits 18); the Node read
    // again shows it.
    let (root, api) = setup(
        dir.path(),
        json!([
            answer(200, &node("5", "0")),
            {"cut": true},
            answer(200, &node("6", "1")),
        ]),
    );
    let out = sync(CLI, &root, Some(&dir.path().join("kubeconfig")))
        .output()
        .unwrap();
    let err = one_line(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("changed example.com/a=1")
            && err.contains("the write's answer was lost")
            && err.contains("(retried 1 time: connection failure x1)"),
        "{err}"
    );
    let sent = api.requests();
    let what: Vec<(&str, &str)> = sent
        .iter()
        .map(|r| (r["method"].as_str().unwrap(), r["path"].as_str().unwrap()))
        .collect();
    let path = format!("/api/v1/nodes/{NODE}");
    let patch = format!("{path}?fieldManager=kubelet-labeler");
    assert_eq!(
        what,
        [
            ("GET", path.as_str()),
            ("PATCH", patch.as_str()),
            ("GET", path.as_str())
        ]
    );
    let agent = format!("kubelet-labeler/{}", env!("CARGO_PKG_VERSION"));
    for r in &sent {
        assert_eq!(r["user_agent"], agent.as_str(), "{r}");
        assert_eq!(r["client_cert"], format!("system:node:{NODE}"), "{r}");
    }
}

/// A stop (SIGTERM, as systemd's stop and its start timeout send) while
/// curl waits on a stalled server: no copy of the inline key anywhere, and
/// no curl left running.
#[test]
fn a_stop_leaves_no_key_and_no_curl_behind() {
    if !fake_api::available() {
        return;
    }
    let dir = scratch_dir();
    let (root, api) = setup(dir.path(), json!([{"stall": true}]));
    let (runtime, tmp) = (dir.path().join("runtime"), dir.path().join("tmp"));
    for d in [&runtime, &tmp] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut child = sync(WRAPPER, &root, Some(&dir.path().join("kubeconfig")))
        .env("RUNTIME_DIRECTORY", &runtime)
        .env("TMPDIR", &tmp)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let sync_pid = child.id();
    let t = Instant::now();
    while api.requests().is_empty() {
        assert!(t.elapsed() < Duration::from_secs(20), "no request came");
        std::thread::sleep(Duration::from_millis(20));
    }
    let curl = children_of(sync_pid);
    assert_eq!(curl.len(), 1, "one curl runs: {curl:?}");
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", curl[0])).unwrap();
    let args: Vec<String> = cmdline
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let key = &args[args.iter().position(|a| a == "--key").unwrap() + 1];
    assert!(key.starts_with("/proc/self/fd/"), "{args:?}");
    assert!(args.iter().any(|a| a == "--globoff"), "{args:?}");
    let empty = |d: &Path| std::fs::read_dir(d).unwrap().count() == 0;
    assert!(empty(&runtime) && empty(&tmp), "a key file was written");

    // SAFETY: a signal to the child this test started.
    unsafe { kill(sync_pid as i32, 15) };
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(15));
    let t = Instant::now();
    while alive(curl[0]) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "curl {} outlived the sync",
            curl[0]
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(empty(&runtime) && empty(&tmp), "a key file was left behind");
}

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so after ')'.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        if after.split(' ').nth(1) == Some(&pid.to_string()) {
            out.push(p);
        }
    }
    out
}

/// Running (not gone, not a zombie awaiting its new parent's wait).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
}

/// A server URL curl would glob is one request to that literal path; what
/// the server says comes back escaped, on one line.
#[test]
fn one_request_per_try_to_the_url_as_written_and_its_answer_on_one_line() {
    if !fake_api::available() {
        return;
    }
    let dir = scratch_dir();
    let forged = "kubelet-labeler sync: node st-node: up to date";
    let (root, api) = setup(
        dir.path(),
        json!([answer(
            403,
            &json!({"message": format!("denied\n{forged}\u{1b}[2J")}).to_string()
        )]),
    );
    let globbed = dir.path().join("globbed.kubeconfig");
    write(
        &globbed,
        &api.kubeconfig(Some(&format!("{}/x/[1-3]", api.url)), None),
    );
    let out = sync(WRAPPER, &root, Some(&globbed)).output().unwrap();
    let err = one_line(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("refused kubelet's identity (403): denied\\n") && !err.contains('\u{1b}'),
        "{err}"
    );
    let sent = api.requests();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["path"], format!("/x/[1-3]/api/v1/nodes/{NODE}"));

    // Not https: refused before anything is sent.
    let plain = dir.path().join("plain.kubeconfig");
    let http = api.url.replace("https://", "http://");
    write(&plain, &api.kubeconfig(Some(&http), None));
    let out = sync(WRAPPER, &root, Some(&plain)).output().unwrap();
    let err = one_line(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not https://"), "{err}");
    assert_eq!(api.requests().len(), 1);
}

/// kubelet's kubeconfig under `--root`, and the files it names, are read
/// inside the tree: an absolute link or `..` that leads to this machine's
/// own credentials reads the tree's (here: none), never the host's.
#[test]
fn credentials_under_root_stay_inside_the_tree() {
    if !fake_api::available() {
        return;
    }
    let dir = scratch_dir();
    let (root, api) = setup(dir.path(), json!([answer(200, &node("5", "1"))]));
    // The host's own identity, outside the tree.
    let host = dir.path().join("host");
    std::fs::create_dir_all(&host).unwrap();
    for f in ["ca.crt", "client.crt", "client.key"] {
        std::fs::copy(api.dir.join(f), host.join(f)).unwrap();
    }
    write(&host.join("kubelet.conf"), &api.kubeconfig(None, None));
    let conf = root.join("etc/kubernetes/kubelet.conf");
    std::fs::create_dir_all(conf.parent().unwrap()).unwrap();
    let ups = "../".repeat(host.components().count() + 2);
    type Arrange<'a> = Box<dyn Fn() + 'a>;
    let cases: [(&str, Arrange); 3] = [
        (
            "an absolute link to the host's kubeconfig",
            Box::new(|| {
                let _ = std::fs::remove_file(&conf);
                std::os::unix::fs::symlink(host.join("kubelet.conf"), &conf).unwrap();
            }),
        ),
        (
            "`..` past the root in a relative file reference",
            Box::new(|| {
                let _ = std::fs::remove_file(&conf);
                let rel = |f: &str| format!("{ups}{}", host.join(f).display());
                write(
                    &conf,
                    &api.kubeconfig(
                        None,
                        Some((&rel("ca.crt"), &rel("client.crt"), &rel("client.key"))),
                    ),
                );
            }),
        ),
        (
            "an absolute link on the way to an absolute file reference",
            Box::new(|| {
                let _ = std::fs::remove_file(&conf);
                let pki = root.join("etc/kubernetes/pki");
                let _ = std::fs::remove_file(&pki);
                std::os::unix::fs::symlink(&host, &pki).unwrap();
                write(
                    &conf,
                    &api.kubeconfig(
                        None,
                        Some((
                            "/etc/kubernetes/pki/ca.crt",
                            "/etc/kubernetes/pki/client.crt",
                            "/etc/kubernetes/pki/client.key",
                        )),
                    ),
                );
            }),
        ),
    ];
    for (what, arrange) in &cases {
        arrange();
        for bin in [CLI, WRAPPER] {
            let out = sync(bin, &root, None).output().unwrap();
            let err = one_line(&out);
            assert_eq!(out.status.code(), Some(2), "{what}, {bin}: {err}");
            assert!(err.contains("No such file"), "{what}, {bin}: {err}");
        }
        assert!(
            api.requests().is_empty(),
            "{what}: the host's identity was used"
        );
    }
    // The same files inside the tree: read.
    std::fs::remove_file(root.join("etc/kubernetes/pki")).unwrap();
    for f in ["ca.crt", "client.crt", "client.key"] {
        std::fs::copy(host.join(f), dir.path().join("root/etc/kubernetes").join(f)).unwrap();
    }
    write(
        &conf,
        &api.kubeconfig(None, Some(("ca.crt", "client.crt", "client.key"))),
    );
    let out = sync(WRAPPER, &root, None).output().unwrap();
    let err = one_line(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("up to date"), "{err}");
}

/// Review 16 r16a F3, the built wrapper's `sync` on a node installed from
/// a fleet ISO into pool worker (its record under `--root`): the label it
/// derives, example.com/a=1, selects pool worker-a, so the label is left
/// out (exit 1, the line names both pools and how to proceed) and no
/// request writes it. The record removed: the label goes, as before.
#[test]
fn a_fleet_nodes_sync_does_not_move_it_into_another_pool() {
    use kubelet_labeler::node::fleet::{
        INSTALLED_POOL_PATH, Pool, PoolKind, Requirement, WORKER_ROLE_LABEL, installed_record,
    };
    if !fake_api::available() {
        return;
    }
    let dir = scratch_dir();
    let in_worker = json!({"kind": "Node", "metadata": {"name": NODE, "resourceVersion": "5",
        "labels": {WORKER_ROLE_LABEL: ""}}, "spec": {}})
    .to_string();
    let (root, api) = setup(
        dir.path(),
        json!([
            answer(200, &in_worker),
            answer(200, &in_worker),
            answer(200, "{}")
        ]),
    );
    let pool = |name: &str, kind, key: &str, value: &str| Pool {
        name: name.into(),
        kind,
        config: format!("{name}.ign"),
        selector: vec![Requirement::In(key.into(), vec![value.into()])],
        static_labels: Vec::new(),
        device: None,
    };
    let pools = [
        pool("worker", PoolKind::Worker, WORKER_ROLE_LABEL, ""),
        pool("worker-a", PoolKind::Custom, "example.com/a", "1"),
    ];
    let record = root.join(INSTALLED_POOL_PATH.trim_start_matches('/'));
    write(&record, &installed_record(&pools[0], &pools).to_text());
    let kubeconfig = dir.path().join("kubeconfig");
    let out = sync(WRAPPER, &root, Some(&kubeconfig)).output().unwrap();
    let err = one_line(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for part in [
        "labels not changed",
        "label changes left out: installed into pool worker (/etc/kubelet-labeler/installed-pool)",
        "select pool worker-a (nodeSelector example.com/a=1)",
        "if the move is meant, replace or remove the record",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
    let sent = api.requests();
    assert!(
        sent.iter()
            .all(|r| !r.to_string().contains("example.com/a")),
        "{sent:?}"
    );
    // No record: the day-2 move is by design.
    std::fs::remove_file(&record).unwrap();
    let out = sync(WRAPPER, &root, Some(&kubeconfig)).output().unwrap();
    let err = one_line(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("added example.com/a=1"), "{err}");
}
