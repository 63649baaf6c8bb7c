//! Tests of `boot` (a sibling: boot.rs is near 1,000 lines).
use super::*;

/// Render recognises the wrapper by its usage line.
#[test]
fn usage_starts_with_the_head_render_looks_for() {
    assert!(USAGE.starts_with(crate::node::contract::WRAPPER_USAGE_HEAD));
    // And ends with its node format, which explain and render read.
    let tail = format!(
        "{}{}",
        crate::node::contract::WRAPPER_FORMAT_MARK,
        crate::node::contract::NODE_FORMAT
    );
    assert!(USAGE.ends_with(&format!("{tail}.")), "{USAGE}");
}

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

#[test]
fn exec_limit_is_checked_only_past_arg_max() {
    let env = [(OsString::from("A"), OsString::from("b"))];
    let path = Path::new("/usr/bin/kubelet");
    assert_eq!(
        over_exec_limit(path, &os(&["kubelet", "--v=2"]), &env),
        None
    );
    // Past 6 MiB exec refuses whatever the stack limit.
    let big = [(OsString::from("A"), OsString::from("b".repeat(7 << 20)))];
    let why = over_exec_limit(path, &os(&["kubelet"]), &big).unwrap();
    assert!(why.contains("7342652 bytes, over the"), "{why}");
}

#[test]
fn parses_both_flag_forms() {
    let o = parse_args(&os(&[
        "--unit",
        "k.service",
        "--profile=openshift",
        "--stop-post",
    ]))
    .unwrap();
    assert_eq!(o.unit, "k.service");
    assert_eq!(o.profile, Profile::OpenShift);
    assert!(o.stop_post);
}

#[test]
fn refuses_unknown_and_missing_values() {
    assert!(parse_args(&os(&["--bogus"])).is_err());
    assert!(parse_args(&os(&["--unit"])).is_err());
    assert!(parse_args(&os(&["--profile", "x"])).is_err());
}

/// A node root with kubelet's unit (`ExecStart=/usr/bin/kubelet
/// --v=2 EXTRA`) and an executable `/usr/bin/kubelet`.
fn node(extra: &str) -> (tempfile::TempDir, BootOptions) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    std::fs::create_dir_all(root.join("etc/systemd/system")).unwrap();
    let kubelet = root.join("usr/bin/kubelet");
    std::fs::write(&kubelet, "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&kubelet, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        root.join("etc/systemd/system/kubelet.service"),
        format!("[Service]\nExecStart=/usr/bin/kubelet --v=2{extra}\n"),
    )
    .unwrap();
    let opts = BootOptions {
        root: root.to_path_buf(),
        unit_path: Some("/etc/systemd/system".into()),
        facts_root: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nodes/dgx")),
        ..Default::default()
    };
    (dir, opts)
}

/// examples/rules/openshift-gpu.yaml's rule: `nvidia.com/gpu=true:NoSchedule`
/// on NVIDIA display PCI functions (the DGX fixture has them).
const GPU_RULE: &str = "KLR5,1,nvidia-gpu-taint,0,~N,0,~N,1,nvidia.com/gpu,true,NoSchedule,\
1,pci.device,2,vendor,In,1,10de,class,In,2,0300,0302,~N,0";
const STATIC_TAINT: &str = "example.com/dedicated=gpu:NoSchedule";

fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
    pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
}

fn rules_env(rules: &str, fault: Option<&str>) -> Vec<(OsString, OsString)> {
    use crate::node::contract::{LABELS_VAR, RULES_VAR, TAINTS_VAR};
    let mut e = env(&[
        (RULES_VAR, rules),
        (TAINTS_VAR, STATIC_TAINT),
        (LABELS_VAR, "node.kubernetes.io/worker-gpu="),
    ]);
    e.extend(fault.map(|f| ("KUBELET_LABELER_FAULT".into(), f.into())));
    e
}

/// The `--register-with-taints=` value of `plan`'s argv.
fn taints_word(plan: &Plan) -> String {
    plan.argv
        .iter()
        .filter_map(|w| w.to_str()?.strip_prefix("--register-with-taints="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The fallbacks that used to start without the rule-derived taints
/// (the crash-loop guard after a start died before exec, an evaluation
/// error) register fenced, with every static taint and label.
#[test]
fn fallbacks_without_the_rules_taints_register_fenced() {
    let (_d, opts) = node("");
    let died = Verdict::SkipRules("the previous start died before exec'ing kubelet".into());
    let cases = [
        (rules_env(GPU_RULE, None), died.clone(), "wrapper-died"),
        (
            rules_env(GPU_RULE, Some("rules-error")),
            Verdict::Full,
            "rules-failed",
        ),
        // Rules nobody can decode may have had taints.
        (rules_env("KLR0,1,x", None), Verdict::Full, "rules-failed"),
    ];
    for (env, verdict, reason) in cases {
        let plan = prepare(&opts, &env, &verdict).unwrap();
        let word = taints_word(&plan);
        assert_eq!(
            word,
            format!("{STATIC_TAINT},kubelet-labeler.io/fenced={reason}:NoSchedule"),
            "{verdict:?}"
        );
        assert!(
            plan.added_labels
                .iter()
                .any(|(k, _)| k == "node.kubernetes.io/worker-gpu")
        );
        let line = plan::summary(&plan);
        assert!(
            line.contains("registering fenced with kubelet-labeler.io/fenced=")
                && line.contains("kubectl taint node <node> kubelet-labeler.io/fenced-"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }
    // The full start: the rule's taint, no fence.
    let plan = prepare(&opts, &rules_env(GPU_RULE, None), &Verdict::Full).unwrap();
    assert_eq!(
        taints_word(&plan),
        format!("nvidia.com/gpu=true:NoSchedule,{STATIC_TAINT}")
    );
}

/// Rules that give no taint need no fence; the line says so.
#[test]
fn rules_without_taints_need_no_fence() {
    use crate::node::rules::{Rule, compact::encode};
    let (_d, opts) = node("");
    let labels_only = encode(&[Rule {
        name: "l".into(),
        labels: vec![("example.com/gpu".into(), "true".into())],
        ..Default::default()
    }]);
    let died = Verdict::SkipRules("the previous start died before exec'ing kubelet".into());
    for (env, verdict) in [
        (rules_env(&labels_only, None), died),
        (rules_env(&labels_only, Some("rules-error")), Verdict::Full),
    ] {
        let plan = prepare(&opts, &env, &verdict).unwrap();
        assert_eq!(taints_word(&plan), STATIC_TAINT);
        let line = plan::summary(&plan);
        assert!(
            line.contains("no fence: no node rule gives a taint"),
            "{line}"
        );
    }
}

/// kubelet's config cannot be read while taints are to be merged:
/// ours and the fence go in, not kubelet unchanged.
#[test]
fn an_unreadable_kubelet_config_registers_fenced() {
    let (d, opts) = node(" --config=/etc/kubernetes/kubelet.conf");
    std::fs::create_dir_all(d.path().join("etc/kubernetes/kubelet.conf")).unwrap();
    let plan = prepare(&opts, &rules_env(GPU_RULE, None), &Verdict::Full).unwrap();
    assert_eq!(plan.left_out, None);
    assert_eq!(
        taints_word(&plan),
        format!(
            "nvidia.com/gpu=true:NoSchedule,{STATIC_TAINT},\
             kubelet-labeler.io/fenced=kubelet-config-unreadable:NoSchedule"
        )
    );
    let line = plan::summary(&plan);
    assert!(line.contains("reading kubelet config"), "{line}");
    // Review 45 r45c F2: a FIFO, which kubelet waits on and reads what is
    // fed, was read as empty: kubelet's own taints dropped, unfenced. As
    // `--config` and as a `--config-dir` drop-in.
    let conf = d.path().join("etc/kubernetes/kubelet.conf");
    std::fs::remove_dir(&conf).unwrap();
    crate::node::nodefs::mkfifo(&conf);
    let plan = prepare(&opts, &rules_env(GPU_RULE, None), &Verdict::Full).unwrap();
    let line = plan::summary(&plan);
    assert!(
        taints_word(&plan).ends_with("fenced=kubelet-config-unreadable:NoSchedule")
            && line.contains("kubelet.conf: not a regular file"),
        "{line}"
    );
    let (d, opts) = node(" --config-dir=/etc/kubernetes/kubelet.conf.d");
    let dir = d.path().join("etc/kubernetes/kubelet.conf.d");
    std::fs::create_dir_all(&dir).unwrap();
    crate::node::nodefs::mkfifo(&dir.join("50-x.conf"));
    let plan = prepare(&opts, &rules_env(GPU_RULE, None), &Verdict::Full).unwrap();
    let line = plan::summary(&plan);
    assert!(
        taints_word(&plan).ends_with("fenced=kubelet-config-unreadable:NoSchedule")
            && line.contains("50-x.conf: not a regular file"),
        "{line}"
    );
}

/// A relative `--config` is read where kubelet reads it, in its unit's
/// `WorkingDirectory=`: its taints are kept beside ours. It was read at
/// `/`, found missing, and ours replaced them (the node registered
/// without the config's taint).
#[test]
fn a_relative_config_is_read_in_the_working_directory() {
    let (d, opts) = node(" --config=config.yaml");
    let unit = d.path().join("etc/systemd/system/kubelet.service");
    let text = std::fs::read_to_string(&unit).unwrap();
    std::fs::write(
        &unit,
        text.replace(
            "[Service]\n",
            "[Service]\nWorkingDirectory=-/var/lib/kubelet\n",
        ),
    )
    .unwrap();
    let dir = d.path().join("var/lib/kubelet");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.yaml"),
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         registerWithTaints:\n- {key: from-config, effect: NoSchedule}\n",
    )
    .unwrap();
    let plan = prepare(&opts, &rules_env(GPU_RULE, None), &Verdict::Full).unwrap();
    assert_eq!(
        taints_word(&plan),
        format!("from-config=:NoSchedule,nvidia.com/gpu=true:NoSchedule,{STATIC_TAINT}")
    );
}

/// A static label kubelet refuses costs the labels, never the taints;
/// static taints that do not parse register the fence alone.
#[test]
fn bad_static_input_keeps_or_fences_the_taints() {
    use crate::node::contract::{LABELS_VAR, TAINTS_VAR};
    let (_d, opts) = node("");
    let e = env(&[
        (LABELS_VAR, "node-role.kubernetes.io/infra="),
        (TAINTS_VAR, STATIC_TAINT),
    ]);
    let plan = prepare(&opts, &e, &Verdict::Full).unwrap();
    assert_eq!(taints_word(&plan), STATIC_TAINT);
    assert!(plan.added_labels.is_empty());
    let line = plan::summary(&plan);
    assert!(line.contains("our labels left out: label"), "{line}");
    let mut e = rules_env(GPU_RULE, None);
    e.push((TAINTS_VAR.into(), "no effect".into()));
    let plan = prepare(&opts, &e, &Verdict::Full).unwrap();
    assert_eq!(
        taints_word(&plan),
        "kubelet-labeler.io/fenced=taints-unreadable:NoSchedule"
    );
}

/// Our labels over exec's limit: the taints go in without them.
#[test]
fn labels_that_do_not_fit_leave_the_taints() {
    let (_d, opts) = node("");
    let mut plan = prepare(&opts, &rules_env(GPU_RULE, None), &Verdict::Full).unwrap();
    let argv = fail_closed::without_our_labels(&plan).unwrap();
    assert!(
        !argv
            .iter()
            .any(|w| w.to_string_lossy().starts_with("--node-labels="))
    );
    plan.argv = argv;
    assert_eq!(
        taints_word(&plan),
        format!("nvidia.com/gpu=true:NoSchedule,{STATIC_TAINT}")
    );
}

#[test]
fn node_paths_live_under_root() {
    assert_eq!(
        under_root(Path::new("/r"), Path::new("/etc/x")),
        PathBuf::from("/r/etc/x")
    );
}
