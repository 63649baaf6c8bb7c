//! Review 19 r19a F2: an `EnvironmentFile=` of kubelet.service (OpenShift's
//! `/etc/kubernetes/kubelet-env`), which systemd puts above `Environment=`,
//! that sets one of our variables (empty, or to another value) no longer
//! takes our taints away: the built wrapper registers fenced
//! (`environment-overridden`) with our drop-ins' labels and taints, and
//! says which variable and which file in its one line. The recorder stands
//! in for kubelet; the environment given is what systemd gives with the file.

use crate::support::wrapper_run::{RecorderNode, paddings_at_the_exec_limit};
use crate::support::write;

use kubelet_labeler::node::contract::{
    ENV_DROPIN_NAME, LABELS_VAR, NFD_LABELS_VAR, POOL_LABEL_VAR, ROLE_ENV_DROPIN_NAME,
    ROLE_LABELS_VAR, ROLE_NFD_LABELS_VAR, ROLE_RULES_VAR, ROLE_TAINTS_VAR, RULES_VAR, TAINTS_VAR,
};

const UNIT: &str = "[Service]\nEnvironmentFile=-/etc/kubernetes/kubelet-env\n\
ExecStart=/usr/bin/kubelet --v=2\n";
const ENV_FILE: &str = "etc/kubernetes/kubelet-env";
const DROPINS: &str = "etc/systemd/system/kubelet.service.d";
/// examples/rules/openshift-gpu.yaml's rule as render compiles it.
const GPU_RULE: &str = "KLR5,1,nvidia-gpu-taint,0,~N,0,~N,1,nvidia.com/gpu,true,NoSchedule,\
1,pci.device,2,vendor,In,1,10de,class,In,2,0300,0302,~N,0";
const STATIC_TAINT: &str = "example.com/dedicated=gpu:NoSchedule";
const ROLE_TAINT: &str = "example.com/role=infra:NoSchedule";
const LABEL: &str = "node.kubernetes.io/worker-gpu=";
const FENCE: &str = "kubelet-labeler.io/fenced=environment-overridden:NoSchedule";
const HARMLESS: &str = "example.com/harmless=x:PreferNoSchedule";

/// What our drop-ins set: the pool's, then the role's.
const POOL_SET: [(&str, &str); 4] = [
    (LABELS_VAR, LABEL),
    (TAINTS_VAR, STATIC_TAINT),
    (RULES_VAR, GPU_RULE),
    (POOL_LABEL_VAR, "node-role.kubernetes.io/worker-gpu"),
];
const ROLE_SET: [(&str, &str); 2] = [
    (ROLE_TAINTS_VAR, ROLE_TAINT),
    (ROLE_LABELS_VAR, "example.com/role=infra"),
];

/// Every variable of ours with another value than ours.
const OTHER: [(&str, &str); 10] = [
    (LABELS_VAR, "example.com/other=1"),
    (TAINTS_VAR, HARMLESS),
    (RULES_VAR, "KLR5,0"),
    (NFD_LABELS_VAR, "openshift"),
    (POOL_LABEL_VAR, "node-role.kubernetes.io/other"),
    (ROLE_LABELS_VAR, "example.com/other=1"),
    (ROLE_TAINTS_VAR, HARMLESS),
    (ROLE_RULES_VAR, "KLR5,0"),
    (ROLE_NFD_LABELS_VAR, "upstream"),
    // The test hook: honoured, it would kill the start.
    ("KUBELET_LABELER_FAULT", "abort"),
];

fn quoted(set: &[(&str, &str)]) -> String {
    let mut s = String::from("[Service]\n");
    for (k, v) in set {
        s += &format!("Environment=\"{k}={v}\"\n");
    }
    s
}

/// A node whose unit reads kubelet-env, with our two env drop-ins.
fn node() -> Option<RecorderNode> {
    let node = RecorderNode::new(UNIT)?;
    let d = node.root().join(DROPINS);
    write(&d.join(ENV_DROPIN_NAME), &quoted(&POOL_SET));
    write(&d.join(ROLE_ENV_DROPIN_NAME), &quoted(&ROLE_SET));
    Some(node)
}

/// The environment systemd gives: our drop-ins' values, then `file`'s.
fn given(file: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let mut env: Vec<(&'static str, String)> = Vec::new();
    let all = POOL_SET.iter().chain(ROLE_SET.iter()).chain(file.iter());
    for &(k, v) in all {
        env.retain(|(e, _)| *e != k);
        env.push((k, v.to_string()));
    }
    env.push(("PATH", "/usr/bin:/bin".into()));
    env
}

fn taints_of(argv: &[String]) -> Vec<&str> {
    argv.iter()
        .rev()
        .find_map(|w| w.strip_prefix("--register-with-taints="))
        .map(|t| t.split(',').collect())
        .unwrap_or_default()
}

/// Starts on `node` with `file` as kubelet-env (None: no file); kubelet
/// must start. Returns the journal and the argv.
fn start(node: &RecorderNode, file: Option<&[(&'static str, &str)]>) -> (String, Vec<String>) {
    let path = node.root().join(ENV_FILE);
    let _ = std::fs::remove_file(&path);
    if let Some(f) = file {
        let text: String = f.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        write(&path, &text);
    }
    let (err, argv) = node.try_start(&given(file.unwrap_or_default()), "", &[]);
    let argv = argv.unwrap_or_else(|| panic!("{file:?}: kubelet did not start: {err}"));
    (err, argv)
}

/// FAILS before the fix: each variable of ours set by kubelet-env, empty
/// or to another value, registered without our taints, unfenced ("no
/// labels or taints to add"), or (the fault hook) killed the start.
#[test]
fn an_environment_file_setting_our_variables_registers_fenced_with_ours() {
    let Some(node) = node() else { return };
    // As rendered: ours, unfenced.
    let (err, argv) = start(&node, None);
    let taints = taints_of(&argv);
    assert!(
        taints.contains(&STATIC_TAINT) && taints.contains(&ROLE_TAINT),
        "{err}"
    );
    assert!(!taints.contains(&FENCE), "{err}");
    // kubelet-env as OpenShift has it, or repeating our value: no fence.
    for file in [
        &[("CUSTOM_KUBELET_LABELS", "a=b")][..],
        &[(TAINTS_VAR, STATIC_TAINT)][..],
    ] {
        let (err, argv) = start(&node, Some(file));
        assert!(!taints_of(&argv).contains(&FENCE), "{file:?}: {err}");
    }
    for (var, other) in OTHER {
        for value in ["", other] {
            let file = [(var, value)];
            let (err, argv) = start(&node, Some(&file));
            let case = format!("{var}={value:?}");
            let taints = taints_of(&argv);
            for t in [STATIC_TAINT, ROLE_TAINT, FENCE] {
                assert!(taints.contains(&t), "{case}: {t} missing: {err}");
            }
            assert!(!taints.contains(&HARMLESS), "{case}: {err}");
            assert!(
                argv.iter()
                    .any(|w| w.starts_with("--node-labels=") && w.contains(LABEL)),
                "{case}: {argv:?}"
            );
            assert_eq!(err.lines().count(), 1, "{case}: {err}");
            assert!(
                err.contains(&format!("{var} (by EnvironmentFile= /{ENV_FILE})")),
                "{case}: {err}"
            );
        }
    }
}

/// A later drop-in that empties our taints is named, and fenced.
#[test]
fn a_later_dropin_overriding_ours_is_named_and_fenced() {
    let Some(node) = node() else { return };
    let later = node.root().join(DROPINS).join("95-later.conf");
    write(&later, &format!("[Service]\nEnvironment={TAINTS_VAR}=\n"));
    // What systemd gives: the later drop-in's value.
    let mut env = given(&[]);
    env.retain(|(k, _)| *k != TAINTS_VAR);
    env.push((TAINTS_VAR, String::new()));
    let (err, argv) = node.try_start(&env, "", &[]);
    let argv = argv.unwrap_or_else(|| panic!("kubelet did not start: {err}"));
    let taints = taints_of(&argv);
    assert!(
        taints.contains(&STATIC_TAINT) && taints.contains(&FENCE),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{TAINTS_VAR} (by Environment= in /{DROPINS}/95-later.conf)"
        )),
        "{err}"
    );
}

/// FAILS before the fix: `explain --root` on a tree whose kubelet-env
/// empties our taints planned the registration from kubelet-env's value
/// (our taint gone, unfenced, the sync adding our labels); it now says
/// what the wrapper above does: ours, fenced, and the sync refusing.
#[test]
fn explain_on_such_a_tree_registers_as_the_wrapper_does() {
    use crate::support::run_cli::{cli, json_of};
    let dir = crate::support::scratch_dir();
    let root = dir.path();
    write(&root.join("etc/systemd/system/kubelet.service"), UNIT);
    write(&root.join("usr/bin/kubelet"), "#!/bin/sh\n");
    use std::os::unix::fs::PermissionsExt;
    let exec = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(root.join("usr/bin/kubelet"), exec).unwrap();
    let r = root.to_str().unwrap();
    let out = cli(&[
        "render",
        "dropins",
        "--taint",
        STATIC_TAINT,
        "--label",
        "example.com/site=a",
        "--root",
        r,
    ]);
    assert!(out.status.success(), "{out:?}");
    let explain = || json_of(&cli(&["explain", "--json", "--root", r]));
    let e = explain();
    assert_eq!(e["taints"], serde_json::json!([STATIC_TAINT]), "{e:#}");
    write(&root.join(ENV_FILE), &format!("{TAINTS_VAR}=\n"));
    let e = explain();
    assert_eq!(
        e["taints"],
        serde_json::json!([STATIC_TAINT, FENCE]),
        "{e:#}"
    );
    assert!(
        e["notes"]
            .to_string()
            .contains(&format!("{TAINTS_VAR} (by EnvironmentFile= /{ENV_FILE})")),
        "{e:#}"
    );
    let nothing = e["sync"]["nothing"].to_string();
    assert!(nothing.contains("refusing to change labels"), "{e:#}");
}

/// Review 20 r20a F1, FAILS before the fix: a variable of ours that none of
/// our drop-ins set, given by systemd while the unit's EnvironmentFile=
/// holds nothing when read again (a FIFO fed once, a file swapped away
/// after systemd read it), was taken for the service manager's own:
/// the attacker's taint registered in place of the role's, unfenced. Now
/// it is left out and the start fenced; without any EnvironmentFile= it
/// can only be the manager's (root's) and is kept, as before.
#[test]
fn a_variable_of_ours_no_file_of_ours_sets_is_left_out_fenced() {
    const ATTACKER: &str = "example.com/role=attacker:NoSchedule";
    for (unit, fenced) in [
        (UNIT, true),
        ("[Service]\nExecStart=/usr/bin/kubelet --v=2\n", false),
    ] {
        let Some(node) = RecorderNode::new(unit) else {
            return;
        };
        let d = node.root().join(DROPINS);
        write(&d.join(ROLE_ENV_DROPIN_NAME), &quoted(&ROLE_SET));
        let mut env: Vec<(&'static str, String)> =
            ROLE_SET.iter().map(|(k, v)| (*k, v.to_string())).collect();
        env.push((TAINTS_VAR, ATTACKER.into()));
        env.push(("PATH", "/usr/bin:/bin".into()));
        let (err, argv) = node.try_start(&env, "", &[]);
        let argv = argv.unwrap_or_else(|| panic!("kubelet did not start: {err}"));
        let taints = taints_of(&argv);
        // The pool's taints, when set, take the role's place.
        assert_eq!(taints.contains(&ROLE_TAINT), fenced, "{unit}: {err}");
        assert_eq!(taints.contains(&FENCE), fenced, "{unit}: {err}");
        assert_eq!(taints.contains(&ATTACKER), !fenced, "{unit}: {err}");
        if fenced {
            assert!(err.contains(TAINTS_VAR), "{err}");
        }
    }
}

/// Review 21 r21a F1: kubelet-env padded so that kubelet's own command
/// and environment fit exec's limit but not with ours on top (a window as
/// wide as what we add) started kubelet unchanged: no taint, no fence.
/// Now kubelet gets the environment without our variables (their room
/// pays for the flags made of them), and where even that is not enough
/// (kubelet-env empties our variables, so our drop-ins' labels and taints
/// and the fence come on top of a room it chose) the largest strings of the environment
/// go instead. Every padding at which kubelet starts carries our taints.
/// FAILS before the fix: at the top of the window, no taint.
#[test]
fn an_environment_padded_to_execs_limit_never_takes_our_taints() {
    // kubelet's command longer than the wrapper's (as OpenShift's is):
    // the wrapper starts where kubelet with ours would not.
    let unit = UNIT.replace(
        "--v=2",
        &format!("--v=2 --hostname-override={}", "h".repeat(2000)),
    );
    let Some(node) = RecorderNode::new(&unit) else {
        return;
    };
    let d = node.root().join(DROPINS);
    write(&d.join(ENV_DROPIN_NAME), &quoted(&POOL_SET));
    write(&d.join(ROLE_ENV_DROPIN_NAME), &quoted(&ROLE_SET));
    // A 1 MiB stack: exec takes 256 KiB of argv and environment.
    let shell = "ulimit -s 1024";
    // kubelet-env emptying every variable of ours: their room is the
    // names alone, and the fence comes on top.
    let emptied: Vec<(&'static str, &str)> = POOL_SET
        .iter()
        .chain(&ROLE_SET)
        .map(|(k, _)| (*k, ""))
        .collect();
    for file in [&[][..], &emptied[..]] {
        let run = |pad: usize| {
            let mut file: Vec<(&'static str, String)> =
                file.iter().map(|(k, v)| (*k, v.to_string())).collect();
            for (i, name) in ["PAD_A", "PAD_B", "PAD_C"].into_iter().enumerate() {
                let n = pad.saturating_sub(i * 100_000).min(100_000);
                file.push((name, "x".repeat(n)));
            }
            let borrowed: Vec<(&'static str, &str)> =
                file.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let text: String = file.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
            write(&node.root().join(ENV_FILE), &text);
            let mut env = given(&borrowed);
            env.push(("INVOCATION_ID", format!("pad-{pad}")));
            node.forget_starts();
            node.try_start(&env, shell, &[])
        };
        let mut trimmed = 0;
        for pad in paddings_at_the_exec_limit(|pad| run(pad).1.is_some()) {
            let (err, argv) = run(pad);
            let Some(argv) = argv else { continue };
            let taints = taints_of(&argv);
            assert!(
                taints.contains(&STATIC_TAINT) && taints.contains(&ROLE_TAINT),
                "{file:?}, padded with {pad} bytes: {err}"
            );
            assert_eq!(
                taints.contains(&FENCE),
                !file.is_empty(),
                "{file:?}, {pad}: {err}"
            );
            assert_eq!(err.lines().count(), 1, "{pad}: {err}");
            assert_eq!(
                err.matches("our variables set otherwise").count(),
                usize::from(!file.is_empty()),
                "{err}"
            );
            if err.contains("largest environment variables left out") {
                assert!(err.contains("PAD_"), "{err}");
                trimmed += 1;
            }
        }
        // The window was met (where kubelet-env takes our variables' room
        // at least; without it kubelet's command with ours may still be
        // a few bytes larger than the wrapper's environment held).
        assert!(trimmed > 0 || file.is_empty(), "{file:?}");
    }
}
