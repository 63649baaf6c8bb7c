//! Fail closed, through the built wrapper on a scratch node root: every
//! start that goes without the taints the node rules would have given (the
//! crash-loop guard after a start died while they ran, the crash handler,
//! an evaluation error) registers fenced, with every static taint; kubelet's
//! config unreadable fences instead of starting kubelet unchanged; a label
//! kubelet refuses, or labels over exec's limit, cost the labels, never the
//! taints. The recorder stands in for kubelet and says what it got.

use crate::support::wrapper_run::RecorderNode;
use crate::support::{repo, scratch_dir, write, write_exec};

use kubelet_labeler::node::contract::{LABELS_VAR, RULES_VAR, TAINTS_VAR};
use kubelet_labeler::node::fleet::{INSTALLED_POOL_PATH, Pool, PoolKind, Requirement, Table};

/// examples/rules/openshift-gpu.yaml's rule as render compiles it:
/// `nvidia.com/gpu=true:NoSchedule` on NVIDIA display PCI functions.
const GPU_RULE: &str = "KLR5,1,nvidia-gpu-taint,0,~N,0,~N,1,nvidia.com/gpu,true,NoSchedule,\
1,pci.device,2,vendor,In,1,10de,class,In,2,0300,0302,~N,0";
const STATIC_TAINT: &str = "example.com/dedicated=gpu:NoSchedule";
const LABEL: &str = "node.kubernetes.io/worker-gpu=";
const UNIT: &str = "[Service]\nExecStart=/usr/bin/kubelet --v=2\n";
/// kubelet's unit with its config in a file, or in a directory of drop-ins.
const UNIT_CONFIG: &str =
    "[Service]\nExecStart=/usr/bin/kubelet --v=2 --config=/etc/kubernetes/kubelet.conf\n";
const UNIT_CONFIG_DIR: &str =
    "[Service]\nExecStart=/usr/bin/kubelet --v=2 --config-dir=/etc/kubernetes/k.d\n";
/// A kubelet config up to its taints' list.
const KUBELET_CONFIG: &str =
    "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nregisterWithTaints:\n";
/// A 1 MiB stack: exec allows 256 KiB of argv and environment.
const SMALL_STACK: &str = "ulimit -s 1024";
const UNREADABLE: &str = "kubelet-config-unreadable";
const LIFT: &str = "`kubectl taint node <node> kubelet-labeler.io/fenced-`";

fn fence(reason: &str) -> String {
    format!("kubelet-labeler.io/fenced={reason}:NoSchedule")
}

/// The static taint and the fence for `reason`.
fn fenced(reason: &str) -> String {
    format!("{STATIC_TAINT},{}", fence(reason))
}

/// The env drop-in's variables: the GPU rule, a static taint and label,
/// a start's invocation ID, and `extra`.
fn env(id: &str, extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let mut e = vec![
        (RULES_VAR, GPU_RULE.to_string()),
        (TAINTS_VAR, STATIC_TAINT.to_string()),
        (LABELS_VAR, LABEL.to_string()),
        ("INVOCATION_ID", id.to_string()),
    ];
    for (k, v) in extra {
        e.retain(|(ek, _)| ek != k);
        e.push((k, v.to_string()));
    }
    e
}

/// [`env`] without node rules: the static taint and label alone.
fn without_rules() -> Vec<(&'static str, String)> {
    env("c", &[(RULES_VAR, "")])
}

/// The dgx fixture node's facts, as the wrapper's `--facts-root`.
fn dgx() -> String {
    let dgx = repo().join("tests/fixtures/nodes/dgx");
    dgx.to_str().unwrap().to_string()
}

fn taints_of(argv: &[String]) -> &str {
    argv.iter()
        .rev()
        .find_map(|w| w.strip_prefix("--register-with-taints="))
        .unwrap_or("")
}

fn one_line(err: &str) -> &str {
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0]
}

/// A start that exec'd kubelet: the wrapper's stderr, the argv kubelet
/// got, and the case it was (named in the messages).
struct Started {
    err: String,
    argv: Vec<String>,
    case: String,
}

/// The wrapper started on `node` with `env`, `shell` run first, with more
/// wrapper `args`; kubelet must start.
fn start_with(node: &RecorderNode, env: &[(&str, String)], shell: &str, args: &[&str]) -> Started {
    let (err, argv) = node.try_start(env, shell, args);
    let argv = argv.unwrap_or_else(|| panic!("kubelet did not start: {err}"));
    Started {
        err,
        argv,
        case: String::new(),
    }
}

/// [`start_with`], as systemd starts it.
fn start(node: &RecorderNode, env: &[(&str, String)]) -> Started {
    start_with(node, env, "", &[])
}

impl Started {
    /// The same, `case` named in the messages.
    fn case(mut self, case: impl std::fmt::Debug) -> Self {
        self.case = format!("{case:?}: ");
        self
    }

    fn taints(&self) -> &str {
        taints_of(&self.argv)
    }

    /// Whether kubelet got the static label.
    fn has_label(&self) -> bool {
        self.argv.contains(&format!("--node-labels={LABEL}"))
    }

    /// kubelet registers with `taints` exactly.
    fn assert_taints(&self, taints: &str) {
        assert_eq!(self.taints(), taints, "{}{}", self.case, self.err);
    }

    /// kubelet registers with the static taint and the fence for `reason`.
    fn assert_fenced(&self, reason: &str) {
        self.assert_taints(&fenced(reason));
    }

    /// kubelet's arguments (after its path) are `args` exactly.
    fn assert_args(&self, args: &[String]) {
        assert_eq!(self.argv[1..], *args, "{}{}", self.case, self.err);
    }

    /// The wrapper said why in one line, holding each of `says`.
    fn assert_says(&self, says: &[&str]) {
        let line = one_line(&self.err);
        for s in says {
            assert!(line.contains(s), "{}{s:?} in {line}", self.case);
        }
    }
}

/// A start without rules on `node` registers fenced as kubelet's config
/// unreadable, said in one line holding `says` and how to lift the fence.
fn assert_unreadable(node: &RecorderNode, says: &str) {
    let s = start(node, &without_rules());
    s.assert_fenced(UNREADABLE);
    s.assert_says(&[says, LIFT]);
}

/// A fleet pool `name` of `kind`, selecting nodes by `selector`.
fn pool(name: &str, kind: PoolKind, selector: Vec<Requirement>) -> Pool {
    Pool {
        name: name.into(),
        kind,
        config: format!("{name}.ign"),
        selector,
        static_labels: Vec::new(),
        device: None,
    }
}

/// The installed-pool record a fleet ISO's install leaves on `node`, the
/// first of `pools` the one installed into.
fn install_record(node: &RecorderNode, pools: Vec<Pool>) {
    let record = Table {
        env: Vec::new(),
        pools,
    };
    write(
        &node
            .root()
            .join(INSTALLED_POOL_PATH.trim_start_matches('/')),
        &record.to_text(),
    );
}

/// kubelet's flag that makes its command 20 KB longer than the wrapper's
/// (as OpenShift's is longer): our variables, which kubelet is exec'd
/// without, then do not pay for the flags made of them.
fn long_flag() -> String {
    format!("--hostname-override={}", "h".repeat(20_000))
}

/// [`UNIT`] with [`long_flag`].
fn long_unit() -> String {
    UNIT.replace("--v=2", &format!("--v=2 {}", long_flag()))
}

/// A start with 4,800 labels of ours (`example.com/l000000=` first) and
/// 150 KB more environment, under [`SMALL_STACK`], on a node of
/// [`long_unit`]: past exec's limit with the labels, within it without.
fn start_with_labels_past_the_exec_limit(node: &RecorderNode) -> Started {
    let labels: Vec<String> = (0..4800).map(|i| format!("example.com/l{i:06}=")).collect();
    let labels = labels.join(",");
    let filler = "f".repeat(75_000);
    let extra = [
        (RULES_VAR, ""),
        (LABELS_VAR, labels.as_str()),
        ("FILLER_A", filler.as_str()),
        ("FILLER_B", filler.as_str()),
    ];
    start_with(node, &env("big", &extra), SMALL_STACK, &[])
}

/// A `--config-dir` drop-in `50-pod.conf` of `n` taints of kubelet's own,
/// `taint(i)` each one's fields.
fn own_taints(node: &RecorderNode, n: usize, taint: impl Fn(usize) -> String) {
    let mut dropin = KUBELET_CONFIG.to_string();
    for i in 0..n {
        dropin += &format!("- {{{}}}\n", taint(i));
    }
    write(&node.root().join("etc/kubernetes/k.d/50-pod.conf"), &dropin);
}

/// The crash-loop guard: a start killed while the rules ran (an OOM kill,
/// systemd's start timeout) made the next start register without the
/// rules' taint; it now registers fenced, with the static taint and label,
/// and the one after is a full start with the rule's taint.
#[test]
fn a_start_after_a_death_while_the_rules_ran_is_fenced() {
    let Some(node) = RecorderNode::new(UNIT) else {
        return;
    };
    let dgx = dgx();
    let env = |id: &str, fault: &str| env(id, &[("KUBELET_LABELER_FAULT", fault)]);
    let (err, argv) = node.try_start(&env("first", "kill-late"), "", &["--facts-root", &dgx]);
    assert_eq!(argv, None, "killed before exec: {err}");
    let s = start_with(
        &node,
        &env("second", "kill-late"),
        "",
        &["--facts-root", &dgx],
    );
    s.assert_fenced("wrapper-died");
    assert!(s.has_label(), "{:?}", s.argv);
    s.assert_says(&[
        "the previous start died before exec'ing kubelet",
        "registering fenced with kubelet-labeler.io/fenced=wrapper-died",
        LIFT,
    ]);
    // The fault hook fires only on full starts: this one is.
    let s = start_with(&node, &env("third", ""), "", &["--facts-root", &dgx]);
    s.assert_taints(&format!("nvidia.com/gpu=true:NoSchedule,{STATIC_TAINT}"));
}

/// In the same start: the crash handler (an abort while the rules run), an
/// evaluation error, rules that cannot be decoded.
#[test]
fn a_crash_or_an_error_in_the_rules_registers_fenced() {
    let Some(node) = RecorderNode::new(UNIT) else {
        return;
    };
    // (the env drop-in's variables over `env`'s, what the line says)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        (
            &[("KUBELET_LABELER_FAULT", "abort-late")],
            "without the rule-derived ones: internal error (a crash; a bug, please report); \
             registering fenced",
        ),
        (
            &[("KUBELET_LABELER_FAULT", "stack-overflow-late")],
            "internal error (a crash",
        ),
        (
            &[("KUBELET_LABELER_FAULT", "rules-error")],
            "rule-derived labels and taints left out: injected evaluation error",
        ),
        (&[(RULES_VAR, "KLR9,1")], "expected \"KLR5\""),
    ];
    for (i, (extra, says)) in cases.iter().enumerate() {
        // A crash handler's exec leaves its attempt behind: the guard would
        // take the next start for one after a death.
        node.forget_starts();
        let s = start(&node, &env(&i.to_string(), extra)).case(extra);
        s.assert_fenced("rules-failed");
        assert!(s.has_label(), "{:?}", s.argv);
        s.assert_says(&[says, LIFT]);
    }
}

/// Review 16 r16a F2: on a node installed from a fleet ISO, the crash
/// handler's fallback (the static part alone, armed before the rules run)
/// is checked against the installed pool as the full start is. The rules
/// give the label that selects the installed pool and no taint, so the
/// fallback was not fenced: it registered in `worker`, without the
/// installed pool's registration-only taints.
#[test]
fn a_crash_fallback_that_leaves_the_installed_pool_is_fenced() {
    use kubelet_labeler::node::rules::compact;
    let Some(node) = RecorderNode::new(UNIT) else {
        return;
    };
    let mut rules = compact::decode(GPU_RULE).unwrap();
    rules[0].taints.clear();
    rules[0].labels = vec![("gpu.present".into(), "true".into())];
    let labels_only = compact::encode(&rules);
    let gpu = Requirement::In(
        "feature.node.kubernetes.io/gpu.present".into(),
        vec!["true".into()],
    );
    let worker = Requirement::Exists("node-role.kubernetes.io/worker".into());
    install_record(
        &node,
        vec![
            pool("gpu", PoolKind::Custom, vec![gpu]),
            pool("worker", PoolKind::Worker, vec![worker]),
        ],
    );
    let dgx = dgx();
    let run = |id: &str, extra: &[(&'static str, &str)]| {
        node.forget_starts();
        start_with(&node, &env(id, extra), "", &["--facts-root", &dgx])
    };
    let labels_only = (RULES_VAR, labels_only.as_str());
    // A full start: the installed pool, unfenced.
    let s = run("full", &[labels_only, ("KUBELET_LABELER_FAULT", "")]);
    s.assert_taints(STATIC_TAINT);
    assert!(
        s.argv
            .iter()
            .any(|w| w.contains("feature.node.kubernetes.io/gpu.present=true")),
        "{:?}",
        s.argv
    );
    // A crash while the rules run: the static part lands in `worker`.
    let s = run(
        "crash",
        &[labels_only, ("KUBELET_LABELER_FAULT", "abort-late")],
    );
    s.assert_fenced("pool-changed");
    s.assert_says(&[
        "internal error (a crash",
        "installed into pool gpu",
        "select pool worker",
        "replace or remove the record",
    ]);
    // A crash before the static part is merged: the fence alone, even
    // with no static taint or rule (which used to start kubelet unchanged,
    // in `worker`).
    for (extra, says) in [
        (vec![("KUBELET_LABELER_FAULT", "abort-early")], "a crash"),
        (
            vec![
                ("KUBELET_LABELER_FAULT", "abort-early"),
                (RULES_VAR, ""),
                (TAINTS_VAR, ""),
            ],
            "a crash",
        ),
    ] {
        let s = run("early", &extra).case(&extra);
        s.assert_taints(&fence("wrapper-died"));
        s.assert_says(&[says]);
    }
}

/// A crash after the original command is known, before the static part is
/// merged (`=abort-early`): where static taints or node rules are
/// configured, kubelet starts with the fence alone (before: unchanged,
/// without the taints and unfenced); kubelet's own `--register-with-taints`
/// stays; with static labels alone it starts unchanged.
#[test]
fn a_crash_before_the_static_part_is_merged_registers_fenced() {
    let unit = "[Service]\nExecStart=/usr/bin/kubelet --v=2 --register-with-taints=a=b:NoExecute\n";
    let Some(node) = RecorderNode::new(unit) else {
        return;
    };
    let early = ("KUBELET_LABELER_FAULT", "abort-early");
    let fenced = format!("a=b:NoExecute,{}", fence("wrapper-died"));
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[early], &fenced),
        (&[early, (RULES_VAR, "")], &fenced),
        (&[early, (TAINTS_VAR, "")], &fenced),
        (&[early, (RULES_VAR, ""), (TAINTS_VAR, "")], "a=b:NoExecute"),
    ];
    for (i, (extra, taints)) in cases.iter().enumerate() {
        node.forget_starts();
        let s = start(&node, &env(&i.to_string(), extra)).case(extra);
        s.assert_taints(taints);
        assert!(
            !s.argv.iter().any(|w| w.starts_with("--node-labels")),
            "{:?}",
            s.argv
        );
        let says = match taints.contains("fenced") {
            true => {
                "starting kubelet fenced, without our labels/taints (not merged yet): internal \
                     error (a crash; a bug, please report); registering fenced with \
                     kubelet-labeler.io/fenced=wrapper-died:NoSchedule"
            }
            false => "starting kubelet without our labels/taints: internal error (a crash",
        };
        s.assert_says(&[says]);
    }
}

/// kubelet's `--config` cannot be read while taints are to be merged: ours
/// and the fence go in (kubelet unchanged before); a label kubelet refuses
/// costs the labels, not the taint (kubelet unchanged before).
#[test]
fn bad_kubelet_config_or_label_keeps_the_taints() {
    let Some(node) = RecorderNode::new(UNIT_CONFIG) else {
        return;
    };
    let root = node.root();
    std::fs::create_dir_all(root.join("etc/kubernetes/kubelet.conf")).unwrap();
    assert_unreadable(&node, "reading kubelet config /etc/kubernetes/kubelet.conf");
    write(&root.join("usr/lib/systemd/system/kubelet.service"), UNIT);
    let bad = [
        (RULES_VAR, ""),
        (LABELS_VAR, "node-role.kubernetes.io/infra="),
    ];
    let s = start(&node, &env("l", &bad));
    s.assert_args(&[
        "--v=2".to_string(),
        format!("--register-with-taints={STATIC_TAINT}"),
    ]);
    s.assert_says(&["our labels left out: label \"node-role.kubernetes.io/infra\""]);
}

/// kubelet's `--config-dir` past its bound (1,024 entries in all, its
/// subdirectories' included): what kubelet registers with is unknown, so
/// ours and the fence go in (it was read whole, however large); at the
/// bound, merged as usual.
#[test]
fn a_config_dir_past_its_bound_registers_fenced() {
    let Some(node) = RecorderNode::new(UNIT_CONFIG_DIR) else {
        return;
    };
    let d = node.root().join("etc/kubernetes/k.d/sub");
    std::fs::create_dir_all(&d).unwrap();
    // The subdirectory is one entry; it holds the rest.
    for i in 0..1023 {
        write(&d.join(format!("{i:04}.txt")), "");
    }
    start(&node, &without_rules()).assert_taints(STATIC_TAINT);
    write(&d.join("1023.txt"), "");
    assert_unreadable(&node, "more than 1024 entries in all) (registering fenced");
}

/// A `--config-dir` subdirectory emptied of thousands of names (ext4
/// keeps a directory's size: listing it cold takes seconds at every
/// start): past 512 KiB it is not listed, and the start registers fenced
/// as past the entries' bound.
#[test]
fn an_emptied_large_config_dir_registers_fenced() {
    let Some(node) = RecorderNode::new(UNIT_CONFIG_DIR) else {
        return;
    };
    let d = node.root().join("etc/kubernetes/k.d/sub");
    std::fs::create_dir_all(&d).unwrap();
    let names: Vec<_> = (0..2100)
        .map(|i| d.join(format!("{i:04}{}", "x".repeat(251))))
        .collect();
    for name in &names {
        write(name, "");
    }
    for name in &names {
        std::fs::remove_file(name).unwrap();
    }
    let size = std::fs::metadata(&d).unwrap().len();
    if size <= 512 << 10 {
        crate::support::skipped::skipped(&format!(
            "an emptied directory keeps {size} bytes here (not ext4?)"
        ));
        return;
    }
    let s = start(&node, &without_rules());
    s.assert_fenced(UNREADABLE);
    s.assert_says(&[&format!("a directory of {size} bytes, past 512 KiB")]);
}

/// Review 10 F1: the 512 KiB bound on `--config-dir` directories is one
/// budget for the whole walk, not one per directory: subdirectories each
/// well under it (ext4: 4 KiB an empty one) but past it in all register
/// fenced as one directory past it does; at the bound, merged as usual.
#[test]
fn config_dir_subdirectories_past_512_kib_in_all_register_fenced() {
    let Some(node) = RecorderNode::new(UNIT_CONFIG_DIR) else {
        return;
    };
    let root = node.root();
    let k = root.join("etc/kubernetes/k.d");
    std::fs::create_dir_all(&k).unwrap();
    let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
    let total = |k: &std::path::Path| -> u64 {
        let subdirs = std::fs::read_dir(k).unwrap();
        size(k) + subdirs.map(|e| size(&e.unwrap().path())).sum::<u64>()
    };
    let probe = root.join("probe");
    std::fs::create_dir(&probe).unwrap();
    let one = size(&probe);
    let mut made = 0;
    while total(&k) + one <= 512 << 10 {
        if made == 1000 {
            crate::support::skipped::skipped(&format!(
                "1000 empty directories of {one} bytes here are not 512 KiB (not ext4?)"
            ));
            return;
        }
        std::fs::create_dir(k.join(format!("d{made:04}"))).unwrap();
        made += 1;
    }
    start(&node, &without_rules()).assert_taints(STATIC_TAINT);
    std::fs::create_dir(k.join(format!("d{made:04}"))).unwrap();
    assert!(total(&k) > 512 << 10);
    assert_unreadable(
        &node,
        &format!("a directory of {one} bytes, past 512 KiB in all"),
    );
}

/// Review 12 F1, FAILS on 4a9fffb: kubelet's `--config` and its
/// `--config-dir` drop-ins are read within 1 MiB in all (each was read up
/// to 16 MiB and all kept: a pod writing the directory OOM-killed every
/// start). Five drop-ins of 200 KiB are merged; eight register fenced, in
/// one line, as past the directories' bounds.
#[test]
fn config_dir_drop_ins_past_1_mib_in_all_register_fenced() {
    let Some(node) = RecorderNode::new(UNIT_CONFIG_DIR) else {
        return;
    };
    let dropin = |i: usize| {
        let head =
            format!("{KUBELET_CONFIG}- {{key: example.com/d{i}, effect: PreferNoSchedule}}\n# ");
        let fill = "a".repeat((200 << 10) - head.len() - 1);
        write(
            &node.root().join(format!("etc/kubernetes/k.d/{i}.conf")),
            &format!("{head}{fill}\n"),
        );
    };
    (0..5).for_each(dropin);
    let merged = format!("example.com/d4=:PreferNoSchedule,{STATIC_TAINT}");
    start(&node, &without_rules()).assert_taints(&merged);
    (5..8).for_each(dropin);
    assert_unreadable(
        &node,
        "reading kubelet config /etc/kubernetes/k.d/5.conf: past 1 MiB of kubelet config in all",
    );
}

/// Review 17 F1, FAILS on 68ec0f1: a `--config` whose merge key reuses a
/// long value many times (a 312 KB file made the wrapper hold 1.2 GB, every
/// start) is unreadable once the decoder has produced 8 MiB: ours and the
/// fence go in, quickly (the bound trips before memory grows).
#[test]
fn a_config_amplified_by_aliases_registers_fenced() {
    let Some(node) = RecorderNode::new(UNIT_CONFIG) else {
        return;
    };
    let config = |n: usize| {
        format!(
            "{KUBELET_CONFIG}- {{key: example.com/own, effect: NoSchedule}}\n\
             a: &a {{k: {}}}\nm: {{<<: [{}]}}\n",
            "x".repeat(100_000),
            ["*a"].repeat(n).join(",")
        )
    };
    let path = node.root().join("etc/kubernetes/kubelet.conf");
    write(&path, &config(4));
    let merged = format!("example.com/own=:NoSchedule,{STATIC_TAINT}");
    start(&node, &without_rules()).assert_taints(&merged);
    write(&path, &config(200));
    let begin = std::time::Instant::now();
    let s = start(&node, &without_rules());
    let took = begin.elapsed();
    s.assert_fenced(UNREADABLE);
    s.assert_says(&["expands past 8 MiB as read", LIFT]);
    // well under a second alone; margin for a busy machine
    assert!(took.as_secs() < 5, "{took:?}");
}

/// Our labels over exec's limit (a 1 MiB stack allows 256 KiB of argv and
/// environment): the taint goes in without them, in one line (kubelet
/// unchanged before).
#[test]
fn labels_over_the_exec_limit_leave_the_taints() {
    let Some(node) = RecorderNode::new(&long_unit()) else {
        return;
    };
    let s = start_with_labels_past_the_exec_limit(&node);
    s.assert_args(&[
        "--v=2".to_string(),
        long_flag(),
        format!("--register-with-taints={STATIC_TAINT}"),
    ]);
    s.assert_says(&[
        "our labels left out: its argv and environment with them are",
        "every taint kept",
    ]);
}

/// The same, on a node installed from a fleet ISO into a pool one of our
/// labels selects (r18a F1): without our labels it would land in worker,
/// so it registers fenced with `pool-changed`, the line naming both pools.
#[test]
fn labels_over_the_exec_limit_on_a_fleet_node_keep_its_pool_or_fence() {
    let Some(node) = RecorderNode::new(&long_unit()) else {
        return;
    };
    let exists = |key: &str| vec![Requirement::Exists(key.into())];
    install_record(
        &node,
        vec![
            pool("big", PoolKind::Custom, exists("example.com/l000000")),
            pool(
                "worker",
                PoolKind::Worker,
                exists("node-role.kubernetes.io/worker"),
            ),
        ],
    );
    let s = start_with_labels_past_the_exec_limit(&node);
    s.assert_args(&[
        "--v=2".to_string(),
        long_flag(),
        format!(
            "--register-with-taints={STATIC_TAINT},kubelet-labeler.io/fenced=pool-changed:NoSchedule"
        ),
    ]);
    s.assert_says(&[
        "our labels left out: its argv and environment with them are",
        "installed into pool big",
        "select pool worker",
    ]);
}

/// Review 22 r22a F1: on a fleet node whose pool adds no taint (its label
/// alone chose the pool), kubelet-env padded to exec's limit left our
/// labels out and started kubelet unchanged: in another pool, unfenced.
/// Now our labels go where the gate fences that, and the environment's
/// largest strings go for the fence: at every padding at which kubelet
/// starts it registers in its pool or fenced. FAILS before the fix.
#[test]
fn a_fleet_node_without_taints_padded_to_the_exec_limit_keeps_its_pool_or_fence() {
    let Some(node) = RecorderNode::new(&long_unit()) else {
        return;
    };
    let exists = |key: &str| vec![Requirement::Exists(key.into())];
    install_record(
        &node,
        vec![
            pool("big", PoolKind::Custom, exists("example.com/big")),
            pool(
                "worker",
                PoolKind::Worker,
                exists("node-role.kubernetes.io/worker"),
            ),
        ],
    );
    let run = |pad: usize| {
        let pads = ["PAD_A", "PAD_B", "PAD_C"].map(|name| {
            let i = name.as_bytes()[4] as usize - b'A' as usize;
            (
                name,
                "x".repeat(pad.saturating_sub(i * 100_000).min(100_000)),
            )
        });
        let mut extra: Vec<(&'static str, &str)> = vec![
            (RULES_VAR, ""),
            (TAINTS_VAR, ""),
            (LABELS_VAR, "example.com/big=true"),
        ];
        extra.extend(pads.iter().map(|(k, v)| (*k, v.as_str())));
        node.forget_starts();
        node.try_start(&env(&format!("pad-{pad}"), &extra), SMALL_STACK, &[])
    };
    let mut fenced = 0;
    for pad in crate::support::wrapper_run::paddings_at_the_exec_limit(|pad| run(pad).1.is_some()) {
        let (err, argv) = run(pad);
        let Some(argv) = argv else { continue };
        let in_pool = argv.iter().any(|w| w.contains("example.com/big=true"));
        let taints = taints_of(&argv);
        assert!(
            in_pool || taints.contains("kubelet-labeler.io/fenced=pool-changed:NoSchedule"),
            "padded with {pad}: {err}"
        );
        fenced += usize::from(!in_pool);
    }
    assert!(fenced > 0, "the window was never met");
}

/// `explain` previews it: the fence in the taints kubelet registers with,
/// and the note that says why and how to lift it, where the rules cannot
/// be used on this tree, and where kubelet's config cannot be read.
#[test]
fn explain_shows_the_fence() {
    use crate::support::run_cli::{cli, json_of};
    let dir = scratch_dir();
    let root = dir.path();
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        UNIT_CONFIG,
    );
    write_exec(&root.join("usr/bin/kubelet"), "#!/bin/sh\n");
    write(
        &root.join("etc/kubernetes/kubelet.conf"),
        "kind: KubeletConfiguration\n",
    );
    let r = root.to_str().unwrap();
    let out = cli(&["render", "dropins", "--taint", STATIC_TAINT, "--root", r]);
    assert!(out.status.success(), "{out:?}");
    let env = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    let text = std::fs::read_to_string(&env).unwrap();
    let explain = || {
        let e = json_of(&cli(&["explain", "--json", "--root", r]));
        let taints: Vec<String> = e["taints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect();
        (taints, e["notes"].to_string())
    };
    // Rules a hand edit broke: nobody can tell what taints they give.
    std::fs::write(&env, format!("{text}Environment={RULES_VAR}=KLR9,1\n")).unwrap();
    let (taints, notes) = explain();
    assert_eq!(taints, [STATIC_TAINT.to_string(), fence("rules-failed")]);
    assert!(
        notes.contains("registering fenced") && notes.contains(LIFT),
        "{notes}"
    );
    // kubelet's config unreadable (a directory).
    std::fs::write(&env, &text).unwrap();
    std::fs::remove_file(root.join("etc/kubernetes/kubelet.conf")).unwrap();
    std::fs::create_dir(root.join("etc/kubernetes/kubelet.conf")).unwrap();
    let (taints, notes) = explain();
    assert_eq!(taints, [STATIC_TAINT.to_string(), fence(UNREADABLE)]);
    assert!(notes.contains("reading kubelet config"), "{notes}");
}

/// What cannot be started says so in one journal line, escaped: a unit
/// file's name can hold a line end (here a drop-in past the read bound,
/// whose name would have started a journal record of its own).
#[test]
fn the_line_of_a_start_that_cannot_be_made_is_one_line() {
    let Some(node) = RecorderNode::new(UNIT) else {
        return;
    };
    let forged = "kubelet-labeler: no labels or taints to add; starting kubelet unchanged";
    let name = format!("10-a\n{forged}\u{1b}[2K.conf");
    let big = "#".repeat(kubelet_labeler::node::nodefs::READ_LIMIT + 1);
    write(
        &node
            .root()
            .join("usr/lib/systemd/system/kubelet.service.d")
            .join(name),
        &big,
    );
    let (err, argv) = node.try_start(&env("id", &[]), "", &[]);
    assert_eq!(argv, None, "{err}");
    let line = one_line(&err);
    assert!(
        line.starts_with("kubelet-labeler: cannot find the command to run: ")
            && line.contains("10-a\\n")
            && line.contains("\\u{1b}[2K"),
        "{line}"
    );
}

/// Review 11 (r11a) F2, FAILS on 9d154a5: kubelet's own taints (a
/// `--config-dir` drop-in of 3000 harmless `PreferNoSchedule` taints, which
/// the real kubelet and API server register as they are) make the merged
/// `--register-with-taints=` word pass MAX_ARG_STRLEN. The wrapper started
/// kubelet's original command: kubelet registered with the drop-in's
/// taints and without ours (the static taint, the rule's) and unfenced.
#[test]
fn kubelets_own_taints_past_the_word_limit_never_drop_ours() {
    let Some(node) = RecorderNode::new(UNIT_CONFIG_DIR) else {
        return;
    };
    own_taints(&node, 3000, |i| {
        format!("key: example.com/harmless-{i:05}, value: x, effect: PreferNoSchedule")
    });
    let s = start(&node, &without_rules());
    assert!(
        s.taints().split(',').any(|t| t == STATIC_TAINT),
        "kubelet registers without the static taint {STATIC_TAINT}: {}\nargv: {}",
        s.err,
        s.argv.join(" ").chars().take(300).collect::<String>()
    );
    // Ours and the fence replace the drop-in's (as when it is unreadable);
    // the labels stay; one line says why and how to lift it.
    s.assert_fenced("kubelet-taints-too-long");
    assert!(
        s.argv
            .iter()
            .any(|w| w == &format!("--node-labels={LABEL}")),
        "{}",
        s.err
    );
    s.assert_says(&[
        "kubelet's own taints left out (its --register-with-taints replaced by ours): the --register-with-taints= word with kubelet's own 3000 taints is",
        "kubelet's own taints are too many to pass with ours",
        LIFT,
    ]);
}

/// The same over exec's total limit (a 1 MiB stack allows 256 KiB of argv
/// and environment): each word fits, but kubelet's own taints (110 KB of a
/// `--config-dir` drop-in) with the environment do not. Without our labels
/// is not enough: ours and the fence replace kubelet's own, in one line.
/// (kubelet started unchanged before: without ours, unfenced.)
#[test]
fn kubelets_own_taints_over_the_exec_limit_never_drop_ours() {
    let Some(node) = RecorderNode::new(UNIT_CONFIG_DIR) else {
        return;
    };
    own_taints(&node, 2000, |i| {
        format!(
            "key: example.com/harmless-{i:05}-{}, effect: PreferNoSchedule",
            "x".repeat(10)
        )
    });
    let filler = "f".repeat(80_000);
    let extra = [
        (RULES_VAR, ""),
        ("FILLER_A", filler.as_str()),
        ("FILLER_B", filler.as_str()),
    ];
    let s = start_with(&node, &env("big", &extra), SMALL_STACK, &[]);
    s.assert_args(&[
        "--v=2".to_string(),
        "--config-dir=/etc/kubernetes/k.d".into(),
        format!(
            "--register-with-taints={}",
            fenced("kubelet-taints-too-long")
        ),
    ]);
    s.assert_says(&[
        "kubelet's own taints left out (its --register-with-taints replaced by ours): its argv and environment with them are",
        "our labels left out too",
        "kubelet's own taints are too many to pass with ours",
        LIFT,
    ]);
}
