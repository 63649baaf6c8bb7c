//! `explain` as a preflight, item 4: a word exec would refuse. A
//! `--node-labels=` word over MAX_ARG_STRLEN is refused at render, by
//! validate and by explain; the limit is the real kernel's; at boot the
//! wrapper never builds a word exec would refuse, and an E2BIG starts
//! kubelet unchanged with one journal line.

use crate::preflight::{example, explain_mcs, kubelet_mc};
use crate::support::wrapper_run::{recorder_root, run_wrapper};
use crate::support::{run_cli, scratch_dir, stderr, write};

use std::path::Path;
use std::process::Command;

use kubelet_labeler::node::contract::{LABELS_VAR, TAINTS_VAR};
use kubelet_labeler::node::kubelet::arg_limit::MAX_ARG_STRLEN;
use run_cli::{cli, example_wrapper, json_of, stand_in_wrapper};

/// `n` distinct labels of about 40 bytes each.
fn many_labels(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("example.com/label-{i:06}=value-{i:012}"))
        .collect()
}

/// Item 4: a `--node-labels=` word over MAX_ARG_STRLEN is refused at
/// render, by validate and by explain, with the limit and the size.
#[test]
fn over_long_labels_are_refused_everywhere() {
    let dir = scratch_dir();
    let labels = many_labels(4000);
    let mut args = vec![
        "render".to_string(),
        "dropins".into(),
        "--create-root".into(),
    ];
    args.extend(["--wrapper".into(), stand_in_wrapper().display().to_string()]);
    args.extend(["--root".into(), dir.path().join("t").display().to_string()]);
    for l in &labels {
        args.extend(["--label".to_string(), l.clone()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&args);
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert!(
        e.contains(&format!("{LABELS_VAR} (4000 labels) is "))
            && e.contains("more than the 131072")
            && e.contains("MAX_ARG_STRLEN"),
        "{e}"
    );
    assert!(!dir.path().join("t").exists());
    let static_wrapper = example_wrapper(dir.path());
    let static_wrapper = static_wrapper.to_str().unwrap();
    let mut args = vec!["render", "machineconfig", "--pool", "worker-big", "-o", "-"];
    args.extend(["--wrapper", static_wrapper]);
    for l in &labels {
        args.extend(["--label", l]);
    }
    let out = cli(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("MAX_ARG_STRLEN"), "{}", stderr(&out));

    // validate: such a word cannot even reach it on this kernel (its own
    // exec fails; `validate`'s check is for 64 KiB-page hosts, tested
    // beside it); one that fits passes.
    let short = format!("--node-labels={}", labels[..100].join(","));
    assert!(cli(&["validate", "--", &short]).status.success());

    // explain: an env drop-in with more labels than fit (written by hand:
    // render refuses it). systemd could not even exec the service.
    let env = format!(
        "[Service]\nEnvironment=\"{LABELS_VAR}={}\"\n",
        labels.join(",")
    );
    // A file, as render writes it (a unit drop-in's line past 2048 bytes
    // is one Ignition's unit parser refuses).
    let rendered = kubelet_mc(dir.path(), &[]);
    let url = kubelet_labeler::cli::render::encoding::data_url(env.as_bytes());
    let env_mc = dir.path().join("50-worker-env.json");
    let mc = serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": { "name": "50-worker-env",
                      "labels": { "machineconfiguration.openshift.io/role": "worker" } },
        "spec": { "config": { "ignition": { "version": "3.4.0" }, "storage": { "files": [
            { "path": "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
              "mode": 420,
              "contents": { "source": url.source, "compression": url.compression } } ] } } }
    });
    std::fs::write(&env_mc, mc.to_string()).unwrap();
    let env_mc = env_mc.display().to_string();
    let wrapper = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
    let out = explain_mcs(true, &[&rendered, &env_mc, &wrapper]);
    assert_eq!(out.status.code(), Some(1));
    let e = json_of(&out);
    let errors = e["errors"].to_string();
    assert!(
        errors.contains(&format!(
            "systemd cannot start kubelet.service: the environment variable {LABELS_VAR} is"
        )) && errors.contains("MAX_ARG_STRLEN"),
        "{errors}"
    );
    let left_out = e["left_out"].as_str().unwrap_or_default();
    assert!(
        left_out.contains("the --node-labels= word is") && left_out.contains("131072"),
        "{e}"
    );
}

/// The limit is the kernel's: 32 pages. On 4 KiB-page kernels a word of
/// MAX_ARG_STRLEN - 1 bytes execs and one byte more fails with E2BIG; larger
/// pages (a property of the host, not a missing tool) raise the kernel's
/// limit, and there a word one byte over ours execs: ours stays safe.
#[test]
fn max_arg_strlen_is_the_kernels() {
    let run = |len: usize| Command::new("/bin/true").arg("x".repeat(len)).status();
    // "E=" and the NUL count.
    let run_env = |len: usize| {
        Command::new("/bin/true")
            .env("E", "v".repeat(len - 2))
            .status()
    };
    assert!(run(MAX_ARG_STRLEN - 1).unwrap().success());
    assert!(run_env(MAX_ARG_STRLEN - 1).unwrap().success());
    let page = Command::new("getconf").arg("PAGESIZE").output().unwrap();
    let page: usize = String::from_utf8_lossy(&page.stdout)
        .trim()
        .parse()
        .expect("getconf PAGESIZE prints a number");
    if page == 4096 {
        let err = run(MAX_ARG_STRLEN).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(7), "{err}");
        // The same for an environment string.
        let err = run_env(MAX_ARG_STRLEN).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(7), "{err}");
    } else {
        assert!(32 * page > MAX_ARG_STRLEN, "a page of {page} bytes");
        assert!(run(MAX_ARG_STRLEN).unwrap().success());
        assert!(run_env(MAX_ARG_STRLEN).unwrap().success());
    }
    assert_eq!(
        kubelet_labeler::node::kubelet::arg_limit::too_long("w", MAX_ARG_STRLEN - 1),
        None
    );
    assert!(kubelet_labeler::node::kubelet::arg_limit::too_long("w", MAX_ARG_STRLEN).is_some());
}

/// Item 4 at boot: the wrapper never builds a word exec would refuse. Our
/// taints fit the environment variable, but merged with the kubelet
/// config's they make a `--register-with-taints=` word over the limit, and
/// with the fence that would replace the config's (`kubelet-taints-too-long`)
/// even ours alone are (render takes up to the limit; the flag's name is
/// shorter than the variable's, the fence longer than the difference):
/// kubelet starts with its own argv and the journal line says why. And when
/// the whole argv with ours is over the stack-derived total, the exec's
/// E2BIG starts kubelet unchanged too.
#[test]
fn the_wrapper_starts_kubelet_without_a_word_exec_would_refuse() {
    let dir = scratch_dir();
    let root = dir.path();
    let unit = "[Service]\nExecStart=/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf\n";
    let Some(records) = recorder_root(root, unit) else {
        return;
    };
    let config_taints: String = (0..8)
        .map(|i| {
            format!(
                "- key: example.com/from-config-{i}\n  value: {}\n  effect: NoSchedule\n",
                "v".repeat(60)
            )
        })
        .collect();
    write(
        &root.join("etc/kubernetes/kubelet.conf"),
        &format!(
            "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints:\n{config_taints}"
        ),
    );
    // As long as the environment string allows.
    let mut taints = String::new();
    let mut i = 0;
    loop {
        let next = format!("example.com/t{i:06}=x:NoSchedule");
        if TAINTS_VAR.len() + 1 + taints.len() + 1 + next.len() + 1 > MAX_ARG_STRLEN {
            break;
        }
        if !taints.is_empty() {
            taints.push(',');
        }
        taints += &next;
        i += 1;
    }
    let original = ["/usr/bin/kubelet", "--config=/etc/kubernetes/kubelet.conf"];
    let (err, argv) = run_wrapper(root, &records, &[(TAINTS_VAR, taints.clone())], "");
    assert_eq!(argv[1..], original[1..], "{err}");
    assert!(
        err.contains(
            "starting kubelet without our labels/taints: the --register-with-taints= word, even \
             of our taints and the fence alone, is"
        ) && err.contains("MAX_ARG_STRLEN"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // Fewer taints fit: they are added.
    let few: String = taints.split(',').take(10).collect::<Vec<_>>().join(",");
    let (err, argv) = run_wrapper(root, &records, &[(TAINTS_VAR, few)], "");
    assert!(
        argv.last().unwrap().starts_with("--register-with-taints="),
        "{err}"
    );

    // Each word fits, the total does not: a 1 MiB stack allows 256 KiB of
    // argv and environment. 100 KB of labels and 150 KB of other variables
    // let the wrapper start, but not kubelet with the labels on top where
    // kubelet's own command is 20 KB longer than the wrapper's (kubelet
    // gets the environment without our variables).
    let long = format!("--hostname-override={}", "h".repeat(20_000));
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        &unit.replace("--config", &format!("{long} --config")),
    );
    let original = ["/usr/bin/kubelet", &long, original[1]];
    let labels: Vec<String> = (0..4800).map(|i| format!("example.com/l{i:06}=")).collect();
    let labels = labels.join(",");
    assert!((90_000..110_000).contains(&labels.len()));
    let env = [
        (LABELS_VAR, labels),
        ("FILLER_A", "f".repeat(75_000)),
        ("FILLER_B", "f".repeat(75_000)),
        ("INVOCATION_ID", "e2big".to_string()),
    ];
    let (err, argv) = run_wrapper(root, &records, &env, "ulimit -s 1024");
    assert_eq!(argv[1..], original[1..], "{err}");
    // One journal line, and the guard records a start without ours.
    assert!(
        err.contains(
            "starting kubelet without our labels/taints: its argv and environment with them are"
        ) && err.contains("a stack limit of 1024 KiB"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let state = std::fs::read_to_string(root.join("state/kubelet.service.state")).unwrap();
    assert!(
        state.contains("invocation_id=e2big\nphase=exec\n") && state.contains("with_additions=0\n"),
        "{state}"
    );
}

/// What the count before exec cannot see, the kernel's own answer does:
/// environment strings without `=` (the wrapper's environment has none of
/// them; the kernel counts them) make kubelet's argv with our labels too
/// big for a 1 MiB stack, though under the limit as counted. Kubelet starts
/// unchanged and ONE journal line says so (two before: a line for the start
/// with our labels, then one for the E2BIG fallback).
#[test]
fn an_e2big_the_count_cannot_see_gives_one_line() {
    let dir = scratch_dir();
    let root = dir.path();
    // kubelet's command 20 KB longer than the wrapper's: kubelet gets the
    // environment without our variables, whose room would pay for ours.
    let long = format!("--hostname-override={}", "h".repeat(20_000));
    let unit = format!("[Service]\nExecStart=/usr/bin/kubelet --v=2 {long}\n");
    let Some(records) = recorder_root(root, &unit) else {
        return;
    };
    let bare_env = root.join("bare_env");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/bare_env.c");
    let st = Command::new("cc")
        .arg("-o")
        .arg(&bare_env)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "compiling bare_env.c");
    // ~100 KB of labels, in the wrapper's environment and then in
    // kubelet's argv, 20 KB of kubelet's own flag and 30 KB of other
    // variables: ~150 KB of the 256 KiB a 1 MiB stack allows, and 120 KB
    // more the count misses.
    let labels: Vec<String> = (0..4800).map(|i| format!("example.com/l{i:06}=")).collect();
    let env = [
        (LABELS_VAR, labels.join(",")),
        ("FILLER", "f".repeat(30_000)),
        ("INVOCATION_ID", "unseen".to_string()),
    ];
    let shell = format!(
        "ulimit -s 1024\nexec {} 4 30000 \"$0\" \"$@\"",
        bare_env.display()
    );
    let (err, argv) = run_wrapper(root, &records, &env, &shell);
    assert_eq!(argv[1..], ["--v=2", &long], "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "kubelet-labeler: starting kubelet without our labels/taints: exec refuses"
        ) && err.contains("a stack limit of 1024 KiB"),
        "{err}"
    );
    let state = std::fs::read_to_string(root.join("state/kubelet.service.state")).unwrap();
    assert!(state.contains("with_additions=0\n"), "{state}");
}

/// journald splits a line past its `LineMax=` (48 KiB), and what follows
/// the split is a record of its own: the wrapper's one line is cut in its
/// middle to 32 KiB, keeping its head and its end (the taints, what was
/// left out and why), while kubelet gets every label.
#[test]
fn the_journal_line_is_cut_short_of_line_max() {
    let dir = scratch_dir();
    let root = dir.path();
    let unit = "[Service]\nExecStart=/usr/bin/kubelet\n";
    let Some(records) = recorder_root(root, unit) else {
        return;
    };
    let labels = many_labels(2000).join(",");
    assert!(labels.len() > 64 << 10);
    let env = [
        (LABELS_VAR, labels.clone()),
        (TAINTS_VAR, "example.com/last=x:NoSchedule".to_string()),
    ];
    let (err, argv) = run_wrapper(root, &records, &env, "");
    assert!(
        argv.contains(&format!("--node-labels={labels}")),
        "{argv:?}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.len() <= 32 << 10, "{} bytes", err.len());
    assert!(
        err.starts_with(
            "kubelet-labeler: starting kubelet with --node-labels=example.com/label-000000="
        ) && err.contains(" bytes cut) ...")
            && err.contains(" --register-with-taints=example.com/last=x:NoSchedule (applied only"),
        "{err}"
    );
}
