//! `run`'s unit tests (beside it, in their own file: `run.rs` stays
//! under 1,000 lines).

use super::*;
use crate::node::sync::reconcile::OWNED_ANNOTATION;
use crate::node::sync::start::run_until_settled;
use crate::node::wrapper::derived::MAX_LINE;

/// Answers from a script, recording what was sent.
struct Script {
    answers: Vec<Result<Response, Failure>>,
    sent: Vec<(String, Option<String>)>,
    /// The time for requests is spent once this many are sent.
    spent_after: usize,
}

impl Transport for Script {
    fn request(
        &mut self,
        method: &str,
        _path: &str,
        body: Option<(&str, &str)>,
    ) -> Result<Response, Failure> {
        self.sent
            .push((method.into(), body.map(|b| b.1.to_string())));
        if self.answers.is_empty() {
            return Err(Failure::Fatal("script ran out".into()));
        }
        self.answers.remove(0)
    }

    fn spent(&self) -> bool {
        self.sent.len() >= self.spent_after
    }
}

fn ok(status: u16, body: &str) -> Result<Response, Failure> {
    Ok(Response {
        status,
        body: body.into(),
    })
}

fn node(rv: &str, labels: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"n1","resourceVersion":"{rv}","labels":{{{labels}}},"annotations":{{"{OWNED_ANNOTATION}":"example.com/a"}}}},"spec":{{}}}}"#
    )
}

fn desired() -> Desired {
    Desired {
        labels: vec![("example.com/a".into(), "2".into())],
        ..Default::default()
    }
}

fn run_script(
    answers: Vec<Result<Response, Failure>>,
    max_wait: u64,
) -> (Outcome, Script, Vec<Duration>) {
    let mut s = Script {
        answers,
        sent: Vec::new(),
        spent_after: usize::MAX,
    };
    let mut slept = Vec::new();
    let out = sync_node(
        &mut s,
        &mut |d| slept.push(d),
        "n1",
        &desired(),
        &Policy::default(),
        false,
        Duration::from_secs(max_wait),
    );
    (out, s, slept)
}

#[test]
fn one_get_one_patch_with_the_precondition() {
    let (out, s, _) = run_script(
        vec![ok(200, &node("5", r#""example.com/a":"1""#)), ok(200, "{}")],
        60,
    );
    assert_eq!(out.code, EXIT_OK, "{}", out.summary);
    assert_eq!((out.requests, out.writes), (2, 1));
    assert_eq!(s.sent[1].0, "PATCH");
    assert!(
        s.sent[1]
            .1
            .as_deref()
            .unwrap()
            .contains(r#""resourceVersion":"5""#)
    );
    assert!(
        out.summary.contains("changed example.com/a=2"),
        "{}",
        out.summary
    );
}

#[test]
fn up_to_date_sends_no_write() {
    let (out, s, _) = run_script(vec![ok(200, &node("5", r#""example.com/a":"2""#))], 60);
    assert_eq!((out.code, out.writes, s.sent.len()), (EXIT_OK, 0, 1));
    assert!(out.summary.ends_with("up to date"), "{}", out.summary);
}

#[test]
fn a_conflict_reads_again() {
    let (out, s, _) = run_script(
        vec![
            ok(200, &node("5", r#""example.com/a":"1""#)),
            ok(409, r#"{"message":"the object has been modified"}"#),
            ok(200, &node("6", r#""example.com/a":"1""#)),
            ok(200, "{}"),
        ],
        60,
    );
    assert_eq!(out.code, EXIT_OK, "{}", out.summary);
    assert!(
        s.sent[3]
            .1
            .as_deref()
            .unwrap()
            .contains(r#""resourceVersion":"6""#)
    );
}

/// A run again only when what the configuration derives changed
/// during the last one; each run printed; at most MAX_RUNS.
#[test]
fn runs_again_only_when_the_configuration_changed_during_a_run() {
    use std::cell::Cell;
    let derived = |v: u32| {
        Some((
            Desired {
                labels: vec![("example.com/v".into(), v.to_string())],
                ..Default::default()
            },
            None,
        ))
    };
    // `changes`: how many runs see the configuration change under them.
    let settle = |changes: u32, derives: bool| {
        let (config, runs, printed) = (Cell::new(0u32), Cell::new(0), Cell::new(0));
        let code = run_until_settled(
            || {
                runs.set(runs.get() + 1);
                let synced = config.get();
                if synced < changes {
                    config.set(synced + 1);
                }
                Outcome {
                    code: runs.get(),
                    derived: if derives { derived(synced) } else { None },
                    ..Default::default()
                }
            },
            || derived(config.get()),
            |_| printed.set(printed.get() + 1),
            || true,
        );
        (code, runs.get(), printed.get())
    };
    assert_eq!(settle(0, true), (1, 1, 1), "nothing changed: one run");
    assert_eq!(settle(1, true), (2, 2, 2), "changed during the first run");
    assert_eq!(settle(2, true), (3, 3, 3), "changed during two runs");
    assert_eq!(settle(9, true), (3, 3, 3), "never settles: MAX_RUNS");
    assert_eq!(
        settle(1, false),
        (1, 1, 1),
        "derived nothing: no second run"
    );
}

#[test]
fn never_loops_on_401_or_403() {
    for status in [401, 403] {
        let (out, s, slept) = run_script(vec![ok(status, r#"{"message":"no"}"#)], 60);
        assert_eq!((out.code, s.sent.len(), slept.len()), (EXIT_DRIFT, 1, 0));
        assert!(out.summary.contains("refused kubelet's identity"));
    }
    let (out, s, _) = run_script(
        vec![
            ok(200, &node("5", r#""example.com/a":"1""#)),
            ok(403, r#"{"message":"is not allowed to modify labels"}"#),
        ],
        60,
    );
    assert_eq!((out.code, s.sent.len()), (EXIT_DRIFT, 2));
    assert!(out.summary.contains("not allowed to modify labels"));
}

/// A write whose answer is lost (the connection cut) is read back:
/// landed, the line says what it changed and that it retried.
#[test]
fn a_lost_write_is_verified_by_reading_the_node_again() {
    let landed = node("6", r#""example.com/a":"2""#);
    let (out, s, slept) = run_script(
        vec![
            ok(200, &node("5", r#""example.com/a":"1""#)),
            Err(Failure::Unreachable(
                "curl: (92) HTTP/2 stream 1 was not closed cleanly".into(),
            )),
            ok(200, &landed),
        ],
        60,
    );
    assert_eq!(out.code, EXIT_OK, "{}", out.summary);
    assert_eq!((s.sent.len(), slept.len()), (3, 1));
    assert!(
        out.summary.contains("changed example.com/a=2")
            && out.summary.contains("the write's answer was lost")
            && out
                .summary
                .ends_with("(retried 1 time: connection failure x1)"),
        "{}",
        out.summary
    );
    // Not landed: written again.
    let (out, s, _) = run_script(
        vec![
            ok(200, &node("5", r#""example.com/a":"1""#)),
            Err(Failure::Unreachable("cut".into())),
            ok(200, &node("5", r#""example.com/a":"1""#)),
            ok(200, "{}"),
        ],
        60,
    );
    assert_eq!((out.code, s.sent[3].0.as_str()), (EXIT_OK, "PATCH"));
    assert!(!out.summary.contains("lost"), "{}", out.summary);
    // Never read back: never "nothing changed".
    let (out, _, _) = run_script(
        vec![
            ok(200, &node("5", r#""example.com/a":"1""#)),
            Err(Failure::Unreachable("cut".into())),
        ],
        0,
    );
    assert_eq!(out.code, EXIT_RETRY_LATER);
    assert!(
        out.summary
            .contains("unknown whether the Node changed (changed example.com/a=2)")
            && !out.summary.contains("nothing changed"),
        "{}",
        out.summary
    );
}

/// What the API server says is network text: one line, whatever it
/// holds.
#[test]
fn the_api_servers_text_is_escaped() {
    let forged = "kubelet-labeler sync: node n1: up to date";
    let (out, _, _) = run_script(
        vec![ok(
            403,
            &format!(r#"{{"message":"no\n{forged}\u001b[2J"}}"#),
        )],
        60,
    );
    assert!(
        !out.summary.contains(['\n', '\u{1b}']) && out.summary.contains("no\\n"),
        "{:?}",
        out.summary
    );
    let (out, _, _) = run_script(vec![ok(500, "plain\r\ntext")], 0);
    assert!(!out.summary.contains(['\n', '\r']), "{:?}", out.summary);
}

/// Network text of any length (a Node the API server made up) is cut
/// short on the journal line: journald splits a line past its `LineMax=`
/// (48 KiB), and the text after the split is a record of its own.
#[test]
fn the_api_servers_text_is_cut_short() {
    let forged = format!(
        "{}kubelet-labeler sync: node n1: up to date",
        "x".repeat(100_000)
    );
    let name = format!(r#"{{"metadata":{{"name":"{forged}","resourceVersion":"1"}}}}"#);
    let (out, _, _) = run_script(vec![ok(200, &name)], 60);
    assert!(out.summary.len() < 1000, "{} bytes", out.summary.len());
    // A Node's label value left as another owner's.
    let labels = format!(r#""example.com/a":"{forged}""#);
    let body = node("5", &labels).replace(OWNED_ANNOTATION, "x.io/y");
    let (out, _, _) = run_script(vec![ok(200, &body)], 60);
    assert!(out.summary.contains("left example.com/a=xxx"), "{out:?}");
    assert!(out.summary.len() < 1000, "{} bytes", out.summary.len());
    // The line as a whole (many such texts).
    let line = journal_line(&format!("{}end", "é".repeat(40_000))).into_owned();
    assert!(line.len() <= MAX_LINE && line.contains("bytes cut) ...") && line.ends_with("éend"));
    assert_eq!(journal_line("a\nb"), "a\\nb");
}

#[test]
fn node_args() {
    let a = |v: &[&str]| parse_node_args(&v.iter().map(OsString::from).collect::<Vec<_>>());
    let o = a(&[
        "--root",
        "/r",
        "--pool-label=node.kubernetes.io/x",
        "--dry-run",
        "--max-wait",
        "5",
    ])
    .unwrap();
    assert_eq!(o.root, PathBuf::from("/r"));
    assert_eq!(o.policy.pool_label.as_deref(), Some("node.kubernetes.io/x"));
    assert!(o.dry_run && o.max_wait == Duration::from_secs(5));
    assert!(a(&["--bogus"]).unwrap_err().contains("usage:"));
    assert!(a(&["--root"]).unwrap_err().contains("needs a value"));
}

/// Issue 33 item 20: before the node's CSR is approved kubelet has no
/// kubeconfig: the sync says so in one line and exits 0 (its unit is
/// not failed on every new node); a --kubeconfig given and missing is
/// still bad input.
#[test]
fn no_kubeconfig_yet_is_no_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let unit = root.join("etc/systemd/system/kubelet.service");
    std::fs::create_dir_all(unit.parent().unwrap()).unwrap();
    std::fs::write(
        &unit,
        "[Service]\nExecStart=/usr/bin/kubelet --kubeconfig=/var/lib/kubelet/kubeconfig\n",
    )
    .unwrap();
    let opts = SyncOptions {
        root: root.to_path_buf(),
        profile: Some(Profile::OpenShift),
        ..Default::default()
    };
    let out = run(&opts);
    assert_eq!(out.code, EXIT_OK, "{}", out.summary);
    assert!(
        out.summary
            .contains("nothing to do yet: kubelet has no kubeconfig")
            && out.summary.contains("var/lib/kubelet/kubeconfig")
            && !out.summary.contains('\n'),
        "{}",
        out.summary
    );
    assert_eq!(out.requests, 0);
    let given = SyncOptions {
        kubeconfig: Some(root.join("nope.kubeconfig")),
        ..opts
    };
    assert_eq!(run(&given).code, EXIT_USAGE);
}

#[test]
fn event_dates() {
    use super::super::event::civil_from_days;
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(20_454), (2026, 1, 1));
}

/// Giving up on an API server that stayed unreachable or busy exits
/// EXIT_RETRY_LATER (the service starts again); a refusal does not.
#[test]
fn giving_up_on_a_busy_api_server_asks_to_run_again() {
    let read = || ok(200, &node("5", r#""example.com/a":"1""#));
    type Case = (&'static str, Vec<Result<Response, Failure>>, i32);
    let cases: Vec<Case> = vec![
        (
            "GET cut",
            vec![Err(Failure::Unreachable("cut".into()))],
            EXIT_RETRY_LATER,
        ),
        ("GET 429", vec![ok(429, "")], EXIT_RETRY_LATER),
        ("GET 503", vec![ok(503, "")], EXIT_RETRY_LATER),
        ("PATCH 429", vec![read(), ok(429, "")], EXIT_RETRY_LATER),
        ("PATCH 500", vec![read(), ok(500, "")], EXIT_RETRY_LATER),
        (
            "PATCH cut",
            vec![read(), Err(Failure::Unreachable("cut".into()))],
            EXIT_RETRY_LATER,
        ),
        ("GET 403", vec![ok(403, "")], EXIT_DRIFT),
        ("PATCH 422", vec![read(), ok(422, "")], EXIT_DRIFT),
        ("GET 404", vec![ok(404, "")], EXIT_DRIFT),
    ];
    for (what, script, code) in cases {
        let (out, _, _) = run_script(script, 0);
        assert_eq!(out.code, code, "{what}: {}", out.summary);
    }
}

/// A label write the API server refuses (an admission policy, the Node's
/// annotations at their limit) still reports the taint drift the run found,
/// and posts its Event, at every run: it said "nothing changed" alone.
#[test]
fn a_refused_write_still_reports_the_taint_drift() {
    let wanted = Desired {
        labels: vec![("example.com/a".into(), "2".into())],
        taints: crate::node::kubelet::parse_taints("nvidia.com/gpu=true:NoSchedule").unwrap(),
        rule_taints: Vec::new(),
        unknown: None,
    };
    for refusal in [
        ok(422, r#"{"message":"nodes may not change their labels"}"#),
        Err(Failure::Fatal("curl: (56) failure".into())),
    ] {
        let (out, s) = run_with(
            vec![
                ok(200, &node("5", r#""example.com/a":"1""#)),
                ok(201, "{}"),
                refusal,
            ],
            &wanted,
        );
        assert_eq!(out.code, EXIT_DRIFT, "{}", out.summary);
        assert!(
            out.summary
                .contains("nvidia.com/gpu=true:NoSchedule is missing"),
            "{}",
            out.summary
        );
        // The Event goes before the write that records it as told.
        let methods: Vec<&str> = s.sent.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(methods, ["GET", "POST", "PATCH"]);
    }
}

fn gpu_taint() -> Taint {
    Taint {
        key: "nvidia.com/gpu".into(),
        value: "true".into(),
        effect: kubelet::TaintEffect::NoSchedule,
    }
}

fn run_with(answers: Vec<Result<Response, Failure>>, desired: &Desired) -> (Outcome, Script) {
    run_within(answers, desired, Duration::from_secs(60))
}

/// `run_with`, the run's budget `max_wait`.
fn run_within(
    answers: Vec<Result<Response, Failure>>,
    desired: &Desired,
    max_wait: Duration,
) -> (Outcome, Script) {
    let mut s = Script {
        answers,
        sent: Vec::new(),
        spent_after: usize::MAX,
    };
    let out = sync_node(
        &mut s,
        &mut |_| {},
        "n1",
        desired,
        &Policy::default(),
        false,
        max_wait,
    );
    (out, s)
}

/// F1: a label write the API server refuses (a ValidatingAdmissionPolicy,
/// annotations past 256 KiB: 422; five conflicts) still reports the taint
/// drift the run found, as every run must until it is gone.
#[test]
fn refused_and_conflicting_writes_still_report_the_taint_drift() {
    let d = Desired {
        taints: vec![gpu_taint()],
        ..desired()
    };
    let refused = r#"{"kind":"Status","message":"nodes may not change their labels"}"#;
    let mut conflicts = Vec::new();
    for _ in 0..=MAX_CONFLICTS {
        conflicts.push(ok(200, &node("5", r#""example.com/a":"1""#)));
        conflicts.push(ok(409, r#"{"kind":"Status","message":"conflict"}"#));
    }
    for answers in [
        vec![
            ok(200, &node("5", r#""example.com/a":"1""#)),
            ok(422, refused),
        ],
        conflicts,
    ] {
        let (out, _) = run_with(answers, &d);
        assert_eq!(out.code, EXIT_DRIFT, "{}", out.summary);
        assert!(
            out.summary
                .contains("taint nvidia.com/gpu=true:NoSchedule is missing"),
            "the missing taint is not reported: {}",
            out.summary
        );
    }
}

/// F3: what the sync writes as its owned-labels annotation, its next run
/// reads (16,385 keys here), and the taint drift is reported either way.
#[test]
fn the_owned_annotation_written_is_read_back() {
    let keys: Vec<String> = (0..16_385).map(|i| format!("k{i:05}")).collect();
    let d = Desired {
        labels: keys.iter().map(|k| (k.clone(), String::new())).collect(),
        taints: vec![gpu_taint()],
        ..Default::default()
    };
    let labels: Vec<String> = keys.iter().map(|k| format!("\"{k}\":\"\"")).collect();
    let body = format!(
        r#"{{"metadata":{{"name":"n1","resourceVersion":"5","labels":{{{}}},"annotations":{{"{OWNED_ANNOTATION}":"{}","{}":"nvidia.com/gpu=true:NoSchedule","{}":"+nvidia.com/gpu=true:NoSchedule"}}}},"spec":{{}}}}"#,
        labels.join(","),
        crate::node::sync::owned::encode(&keys),
        reconcile::TAINTS_ANNOTATION,
        reconcile::DRIFT_ANNOTATION,
    );
    let (out, _) = run_with(vec![ok(200, &body)], &d);
    assert!(
        !out.summary.contains("unreadable"),
        "its own annotation is unreadable: {}",
        &out.summary[..out.summary.len().min(300)]
    );
    assert!(
        out.summary.contains("is missing"),
        "{}",
        &out.summary[..out.summary.len().min(300)]
    );
}

/// A TaintDrift Event whose post failed (503) is not recorded as told:
/// the write leaves the drift annotation out, so the next run posts it.
#[test]
fn a_failed_event_post_is_not_lost() {
    let d = Desired {
        taints: vec![gpu_taint()],
        ..desired()
    };
    let (out, s) = run_with(
        vec![
            ok(200, &node("5", r#""example.com/a":"1""#)),
            ok(503, r#"{"kind":"Status","message":"etcd leader changed"}"#),
            ok(200, "{}"),
        ],
        &d,
    );
    let methods: Vec<&str> = s.sent.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["GET", "POST", "PATCH"]);
    let patch = s.sent[2].1.clone().unwrap_or_default();
    assert!(!patch.contains(reconcile::DRIFT_ANNOTATION), "{patch}");
    assert!(
        out.summary.contains("Event was not posted"),
        "{}",
        out.summary
    );
    // Where the write is only that record, none is sent.
    let recorded = format!(
        r#"{{"metadata":{{"name":"n1","resourceVersion":"6","labels":{{"example.com/a":"2"}},"annotations":{{"{OWNED_ANNOTATION}":"example.com/a","{}":"nvidia.com/gpu=true:NoSchedule"}}}},"spec":{{}}}}"#,
        reconcile::TAINTS_ANNOTATION,
    );
    let (out, s) = run_with(vec![ok(200, &recorded), ok(503, "{}")], &d);
    let methods: Vec<&str> = s.sent.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["GET", "POST"], "{}", out.summary);
    assert_eq!(out.code, EXIT_DRIFT);
    assert!(out.summary.contains("is missing"), "{}", out.summary);
}

/// F6, second way: the PATCH that records the drift as told lands but its
/// answer is lost (an API server restarting); the Node read again shows the
/// record, so the Event is never posted.
#[test]
fn a_lost_write_answer_still_posts_the_event() {
    let d = Desired {
        taints: vec![gpu_taint()],
        ..desired()
    };
    let told = format!(
        r#"{{"metadata":{{"name":"n1","resourceVersion":"6","labels":{{"example.com/a":"2"}},"annotations":{{"{OWNED_ANNOTATION}":"example.com/a","{}":"nvidia.com/gpu=true:NoSchedule","{}":"+nvidia.com/gpu=true:NoSchedule"}}}},"spec":{{}}}}"#,
        reconcile::TAINTS_ANNOTATION,
        reconcile::DRIFT_ANNOTATION,
    );
    let (out, s) = run_with(
        vec![
            ok(200, &node("5", r#""example.com/a":"1""#)),
            Err(Failure::Unreachable("cut".into())),
            ok(200, &told),
            ok(201, "{}"),
        ],
        &d,
    );
    let methods: Vec<&str> = s.sent.iter().map(|(m, _)| m.as_str()).collect();
    assert!(
        methods.contains(&"POST"),
        "no Event for the new drift: sent {methods:?}; {}",
        out.summary
    );
}

/// Review 13 (r13a) F2, FAILS at 810045b: a pod that writes features.d
/// (here a link; past a bound does the same) makes the rules' taints
/// unknown, not the static ones: the sync must still derive those, so that
/// their drift is reported (and its Event posted) while the pod's file
/// stays. Today `derive` fails whole and `run` exits 2 before reading the
/// Node, so no drift at all is reported.
#[test]
fn features_a_pod_fences_leave_the_static_taints_known() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |p: &str, text: &str| {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "etc/systemd/system/kubelet.service",
        "[Service]\nExecStart=/usr/bin/kubelet --kubeconfig=/var/lib/kubelet/kubeconfig\n",
    );
    write(
        "etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
        "[Service]\n\
         Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=static.example.com/t=1:NoSchedule\"\n\
         Environment=\"KUBELET_LABELER_NODE_RULES=KLR5,1,provisioned-gpu,0,~N,0,~N,1,example.com/gpu-provisioned,true,NoSchedule,1,local.label,1,gpu,Exists,0,~N,0\"\n",
    );
    let fd = "etc/kubernetes/node-feature-discovery/features.d";
    write(&format!("{fd}/provisioning"), "gpu=1\n");
    let opts = SyncOptions {
        root: root.to_path_buf(),
        profile: Some(Profile::Upstream),
        ..Default::default()
    };
    let static_taint = |d: &Derivation| {
        d.desired
            .taints
            .iter()
            .any(|t| t.to_string() == "static.example.com/t=1:NoSchedule")
    };
    let d = derive(&opts).unwrap();
    assert!(static_taint(&d), "{:?}", d.desired.taints);
    // What a pod with a hostPath on features.d can do.
    std::os::unix::fs::symlink("/etc/hostname", root.join(fd).join("zz")).unwrap();
    let d = derive(&opts);
    assert!(
        d.as_ref().is_ok_and(static_taint),
        "the static taints' drift is no longer derived: {:?}",
        d.err()
    );
}

/// Review 13 r13a F2: with the rules fenced, the drift of what is known is
/// reported and posted (exit 1), and nothing the rules may give is
/// removed or reported stale: the label the sync owns stays, the rule's
/// taint the Node has is no drift, our record of it stays.
#[test]
fn fenced_rules_report_the_known_drift_and_remove_nothing() {
    let rule_taint = kubelet::parse_taints("example.com/gpu-provisioned=true:NoSchedule").unwrap();
    let d = Desired {
        labels: vec![("example.com/static".into(), "1".into())],
        taints: kubelet::parse_taints("static.example.com/new=1:NoExecute").unwrap(),
        rule_taints: rule_taint.clone(),
        unknown: Some("the node rules could not be evaluated (zz is a symbolic link)".into()),
    };
    let n = format!(
        r#"{{"metadata":{{"name":"n1","resourceVersion":"5","labels":{{"example.com/a":"1","example.com/static":"1"}},"annotations":{{"{OWNED_ANNOTATION}":"example.com/{{a,static}}","{}":"example.com/gpu-provisioned=true:NoSchedule"}}}},"spec":{{"taints":[{{"key":"example.com/gpu-provisioned","value":"true","effect":"NoSchedule"}}]}}}}"#,
        reconcile::TAINTS_ANNOTATION,
    );
    let (out, s) = run_with(vec![ok(200, &n), ok(201, "{}"), ok(200, "{}")], &d);
    assert_eq!(out.code, EXIT_DRIFT, "{}", out.summary);
    assert!(
        out.summary
            .contains("taint static.example.com/new=1:NoExecute is missing"),
        "{}",
        out.summary
    );
    assert!(out.summary.contains("unknown"), "{}", out.summary);
    assert!(
        !out.summary.contains("no longer derived"),
        "{}",
        out.summary
    );
    let methods: Vec<&str> = s.sent.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods, ["GET", "POST", "PATCH"], "{}", out.summary);
    let patch = s.sent[2].1.as_deref().unwrap_or("");
    assert!(!patch.contains("example.com/a"), "{patch}");
    assert!(!patch.contains("-example.com/gpu"), "{patch}");
    assert!(
        !patch.contains(reconcile::TAINTS_ANNOTATION) || patch.contains("gpu-provisioned"),
        "{patch}"
    );
    // Nothing known drifts: still exit 1, the rules' part unjudged.
    let quiet = Desired {
        taints: Vec::new(),
        ..d
    };
    let (out, _) = run_with(vec![ok(200, &n), ok(200, "{}")], &quiet);
    assert_eq!(out.code, EXIT_DRIFT, "{}", out.summary);
}

/// Review 13 r13a F2, the --config-dir variant: a drop-in past kubelet's
/// config budget (what a pod with a hostPath there writes) makes kubelet's
/// own taints unknown, not ours: the static taints' drift is still derived,
/// the unknown part said.
#[test]
fn an_unreadable_kubelet_config_leaves_our_taints_known() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |p: &str, text: &str| {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "etc/systemd/system/kubelet.service",
        "[Service]\nExecStart=/usr/bin/kubelet --config-dir=/etc/kubernetes/kubelet.conf.d\n",
    );
    write(
        "etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
        "[Service]\n\
         Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=static.example.com/t=1:NoSchedule\"\n",
    );
    write(
        "etc/kubernetes/kubelet.conf.d/10-base.conf",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n",
    );
    let opts = SyncOptions {
        root: root.to_path_buf(),
        profile: Some(Profile::Upstream),
        ..Default::default()
    };
    let d = derive(&opts).unwrap();
    assert!(d.desired.unknown.is_none(), "{:?}", d.desired.unknown);
    let big = format!(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n# {}\n",
        "x".repeat(2 << 20)
    );
    write("etc/kubernetes/kubelet.conf.d/50-pod.conf", &big);
    let d = derive(&opts).unwrap_or_else(|e| panic!("our taints' drift no longer derived: {e}"));
    assert_eq!(
        d.desired
            .taints
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>(),
        ["static.example.com/t=1:NoSchedule"]
    );
    assert!(
        d.desired
            .unknown
            .as_deref()
            .is_some_and(|u| u.contains("kubelet's own taints could not be read")),
        "{:?}",
        d.desired.unknown
    );
}

/// Review 14 r14a F1 (FAILS at 03cbdbc): docs/day2.md says that with the
/// rules' features fenced (a link a pod plants in features.d) the sync
/// "removes nothing the rules may give: a label it owns stays". When the
/// rules give labels but no taint, `static_only` leaves `fence` unset, so
/// `Desired::unknown` is None and the sync removes the rule's label it owns.
#[test]
fn fenced_label_only_rules_keep_the_labels_they_gave() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |p: &str, text: &str| {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "etc/systemd/system/kubelet.service",
        "[Service]\nExecStart=/usr/bin/kubelet --kubeconfig=/var/lib/kubelet/kubeconfig\n",
    );
    write(
        "etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
        "[Service]\n\
         Environment=\"KUBELET_LABELER_NODE_RULES=KLR5,1,gpu,1,example.com/gpu,true,~N,0,~N,0,1,local.label,1,gpu,Exists,0,~N,0\"\n",
    );
    let fd = "etc/kubernetes/node-feature-discovery/features.d";
    write(&format!("{fd}/provisioning"), "gpu=1\n");
    let opts = SyncOptions {
        root: root.to_path_buf(),
        profile: Some(Profile::Upstream),
        ..Default::default()
    };
    let d = derive(&opts).unwrap();
    assert_eq!(
        d.desired.labels,
        [("example.com/gpu".to_string(), "true".to_string())]
    );
    // What a pod with a hostPath on features.d can do.
    std::os::unix::fs::symlink("/etc/hostname", root.join(fd).join("zz")).unwrap();
    let d = derive(&opts).unwrap();
    let n = format!(
        r#"{{"metadata":{{"name":"n1","resourceVersion":"5","labels":{{"example.com/gpu":"true"}},"annotations":{{"{OWNED_ANNOTATION}":"example.com/gpu"}}}},"spec":{{}}}}"#,
    );
    let (out, s) = run_with(vec![ok(200, &n), ok(200, "{}"), ok(200, "{}")], &d.desired);
    let sent: Vec<String> = s
        .sent
        .iter()
        .map(|(m, b)| format!("{m} {}", b.as_deref().unwrap_or("")))
        .collect();
    eprintln!(
        "unknown={:?}\nsummary={}\nsent={sent:#?}",
        d.desired.unknown, out.summary
    );
    assert!(
        d.desired.unknown.is_some() && !sent.iter().any(|r| r.starts_with("PATCH")),
        "the rules' label the sync owns is removed while the rules are fenced: {}",
        out.summary
    );
}

/// Review 16 r16a F3: a node installed from a fleet ISO into pool worker
/// registers there, or fenced (`wrapper::pool_change`); a pod with a
/// hostPath on features.d then makes a rule give example.com/gpu=true,
/// which selects pool worker-gpu. The sync must not add it to the running
/// Node (the MCO would move it there without worker-gpu's
/// registration-only taints): the label part of its patch is left out,
/// said with both pools and how to proceed, exit 1; the taint drift is
/// still reported and its Event posted. No record: the label goes (a
/// day-2 move of a node not installed from a fleet ISO is by design). A
/// record that is a link: not followed, no label change.
#[test]
fn the_sync_does_not_move_a_fleet_node_into_another_pool() {
    use crate::node::fleet::{self, INSTALLED_POOL_PATH, Pool, PoolKind, Requirement};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |p: &str, text: &str| {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "etc/systemd/system/kubelet.service",
        "[Service]\nExecStart=/usr/bin/kubelet --kubeconfig=/var/lib/kubelet/kubeconfig\n",
    );
    write(
        "etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
        "[Service]\n\
         Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=example.com/zone=a\"\n\
         Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=static.example.com/t=1:NoSchedule\"\n\
         Environment=\"KUBELET_LABELER_NODE_RULES=KLR5,1,gpu,1,example.com/gpu,true,~N,0,~N,0,1,local.label,1,gpu,Exists,0,~N,0\"\n",
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
        pool("worker", PoolKind::Worker, fleet::WORKER_ROLE_LABEL, ""),
        pool("worker-gpu", PoolKind::Custom, "example.com/gpu", "true"),
    ];
    let record = INSTALLED_POOL_PATH.trim_start_matches('/');
    write(
        record,
        &fleet::installed_record(&pools[0], &pools).to_text(),
    );
    let opts = SyncOptions {
        root: root.to_path_buf(),
        profile: Some(Profile::Upstream),
        ..Default::default()
    };
    // Registered in worker, with the static label the sync adopts.
    let n = r#"{"metadata":{"name":"n1","resourceVersion":"5","labels":{"node-role.kubernetes.io/worker":"","example.com/zone":"a"}},"spec":{}}"#;
    let sync = |answers| {
        let d = derive(&opts).unwrap();
        let mut s = Script {
            answers,
            sent: Vec::new(),
            spent_after: usize::MAX,
        };
        let policy = policy_of(&opts, &d.pool_label);
        let out = sync_node(
            &mut s,
            &mut |_| {},
            "n1",
            &d.desired,
            &policy,
            false,
            Duration::from_secs(60),
        );
        let sent: Vec<String> = s
            .sent
            .iter()
            .map(|(m, b)| format!("{m} {}", b.as_deref().unwrap_or("")))
            .collect();
        (out, sent)
    };
    // Before: the rule gives nothing, nothing moves.
    let (out, sent) = sync(vec![ok(200, n), ok(201, "{}"), ok(200, "{}")]);
    assert!(
        !sent.iter().any(|r| r.contains("example.com/gpu")),
        "{sent:?}"
    );
    assert!(
        out.summary.contains("adopted example.com/zone"),
        "{}",
        out.summary
    );
    // What a pod with a hostPath on features.d can do.
    let fd = "etc/kubernetes/node-feature-discovery/features.d";
    write(&format!("{fd}/provisioning"), "gpu=1\n");
    let (out, sent) = sync(vec![ok(200, n), ok(201, "{}"), ok(200, "{}")]);
    let patch = sent.iter().find(|r| r.starts_with("PATCH"));
    assert!(
        !patch.is_some_and(|p| p.contains("\"labels\"")),
        "the sync moves the fleet node into pool worker-gpu: {patch:?}\n{}",
        out.summary
    );
    assert_eq!(out.code, EXIT_DRIFT, "{}", out.summary);
    for part in [
        "label changes left out: installed into pool worker (/etc/kubelet-labeler/installed-pool)",
        "select pool worker-gpu (nodeSelector example.com/gpu=true)",
        "if the move is meant, replace or remove the record",
        "taint static.example.com/t=1:NoSchedule is missing",
    ] {
        assert!(out.summary.contains(part), "{part}: {}", out.summary);
    }
    // The taint drift's Event and our annotations still go; the label
    // is not listed as ours.
    assert!(sent.iter().any(|r| r.starts_with("POST")), "{sent:?}");
    let patch = patch.unwrap();
    assert!(patch.contains(reconcile::TAINTS_ANNOTATION), "{patch}");
    assert!(!patch.contains("gpu"), "{patch}");
    // No record: by design, the label goes.
    std::fs::remove_file(root.join(record)).unwrap();
    let (out, sent) = sync(vec![ok(200, n), ok(201, "{}"), ok(200, "{}")]);
    assert!(
        sent.iter()
            .any(|r| r.starts_with("PATCH") && r.contains(r#""example.com/gpu":"true""#)),
        "{sent:?}\n{}",
        out.summary
    );
    // A link where the record is: not followed, nothing added.
    std::os::unix::fs::symlink("/etc/hostname", root.join(record)).unwrap();
    let (out, sent) = sync(vec![ok(200, n), ok(201, "{}"), ok(200, "{}")]);
    assert!(
        !sent.iter().any(|r| r.contains("example.com/gpu")),
        "{sent:?}"
    );
    assert_eq!(out.code, EXIT_DRIFT, "{}", out.summary);
    assert!(
        out.summary.contains("a symbolic link, not followed"),
        "{}",
        out.summary
    );
}

#[path = "run_deadline_tests.rs"]
mod start_time;
