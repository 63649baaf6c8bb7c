//! Fault injection under a real systemd (user manager): for each fault the
//! recorder standing in for kubelet must end up running, and the wrapper's
//! journal line (stderr to a file) must say why it did what it did.

#[path = "support/skipped.rs"]
mod skipped;
#[path = "support/systemd_oracle.rs"]
mod systemd_oracle;

use std::path::Path;

use systemd_oracle::{UserRun, write};

const LABEL: &str = "node.kubernetes.io/worker-rwn";

/// Our two drop-ins for `unit` (a name or a template) in `units`, the
/// wrapper's state in `state`.
fn wrap(units: &Path, unit: &str, search_path: &str, state: &Path, labels: &str) {
    let d = units.join(format!("{unit}.d"));
    write(
        &d.join("90-kubelet-labeler-env.conf"),
        &format!("[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS={labels}\"\n"),
    );
    let wrapper = env!("CARGO_BIN_EXE_kubelet-labeler-wrapper");
    let args = format!(
        "--unit %n --profile openshift --unit-path {search_path} --state-dir {}",
        state.display()
    );
    let shipped = kubelet_labeler::render::dropins::wrapper_dropin(
        kubelet_labeler::kubelet::Profile::OpenShift,
    )
    .replace("/usr/local/bin/kubelet-labeler-wrapper", wrapper)
    .replace("--unit %n --profile openshift", &args);
    write(&d.join("zz-kubelet-labeler.conf"), &shipped);
}

fn carries_label(argv: &[String]) -> bool {
    argv.iter()
        .any(|w| w.starts_with("--node-labels=") && w.contains(LABEL))
}

/// A small deterministic generator; the seed is printed to replay a failure.
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

/// kubeadm: kubelet crash-loops before `join` (no config, no kubeconfig),
/// then the join writes them. 60 trials, each a unit instance failing N
/// times (random N in 1..=6) before it joins: the first start after the
/// join carries the labels every time, whatever the guard saw before.
/// The other faults share the manager.
#[test]
fn faults_under_real_systemd() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path();
    let units = scratch.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let probe = UserRun::new(vec![units.clone()], vec![]);
    let search_path = systemd_oracle::search_path(&probe, scratch);
    let state = scratch.join("state");
    let recorder = systemd_oracle::build_fake_kubelet(scratch);
    // One "journal" per unit (no journald here).
    let logs = scratch.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let common = format!(
        "[Unit]\nStartLimitIntervalSec=0\n[Service]\nType=simple\nRestart=always\n\
         RestartSec=100ms\nStandardError=append:{}/%n.log\n",
        logs.display()
    );

    // kubeadm trials.
    let nodes = scratch.join("nodes");
    let mut seed: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("kubeadm trial seed {seed}");
    let trials = 60;
    let mut joins = Vec::new();
    for t in 0..trials {
        let n = 1 + lcg(&mut seed) % 6;
        joins.push(n);
        let node = nodes.join(t.to_string());
        std::fs::create_dir_all(&node).unwrap();
        write(
            &units.join(format!("kadm@{t}.service.d/n.conf")),
            &format!("[Service]\nEnvironment=RECORDER_JOIN_AFTER={n}\n"),
        );
    }
    let n_dir = nodes.display();
    write(
        &units.join("kadm@.service"),
        &format!(
            "{common}Environment=RECORDER_SLEEP=60\n\
             Environment=RECORDER_FAIL_IF_MISSING={n_dir}/%i/config.yaml\n\
             Environment=RECORDER_JOIN_FILES={n_dir}/%i/config.yaml:{n_dir}/%i/kubelet.conf\n\
             ExecStart={} --bootstrap-kubeconfig={n_dir}/%i/bootstrap-kubelet.conf \
             --kubeconfig={n_dir}/%i/kubelet.conf --config={n_dir}/%i/config.yaml\n",
            recorder.display()
        ),
    );
    wrap(
        &units,
        "kadm@.service",
        &search_path,
        &state,
        &format!("{LABEL}="),
    );

    // Single faults: (unit, extra [Service] lines, labels, expected journal words,
    // whether the running kubelet carries the label).
    let faults: &[(&str, String, &str, &str, bool)] = &[
        (
            "refused",
            "Environment=RECORDER_FAIL_IF_ARG=example.com/refused\n".into(),
            "example.com/refused=yes",
            "crash-loop guard",
            false,
        ),
        (
            "abort",
            "Environment=KUBELET_LABELER_FAULT=abort\n".into(),
            "x=",
            "died before exec",
            false,
        ),
        (
            "overflow",
            "Environment=KUBELET_LABELER_FAULT=stack-overflow\n".into(),
            "x=",
            "died before exec",
            false,
        ),
        (
            "badlabel",
            String::new(),
            "bad key!=x",
            "starting kubelet without our labels/taints: ",
            false,
        ),
        (
            "envfile-garbage",
            format!(
                "EnvironmentFile=-{}\n",
                scratch.join("garbage.env").display()
            ),
            "",
            "no labels or taints to add",
            false,
        ),
        (
            "config-unreadable",
            // Only a taint makes the wrapper read registerWithTaints there.
            "Environment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=example.com/gpu=true:NoSchedule\n"
                .into(),
            "x=",
            "starting kubelet without our labels/taints: reading",
            false,
        ),
        (
            "state-unwritable",
            String::new(),
            &format!("{LABEL}="),
            "starting kubelet with --node-labels",
            true,
        ),
        (
            // Words appended to `sh -c` would be the script's "$@", which
            // this one passes on, but no rule can tell that from outside.
            "sh-c",
            String::new(),
            &format!("{LABEL}="),
            "starting kubelet without our labels/taints: the original ExecStart= runs /bin/sh",
            false,
        ),
        (
            "env",
            String::new(),
            &format!("{LABEL}="),
            "starting kubelet with --node-labels",
            true,
        ),
    ];
    std::fs::write(
        scratch.join("garbage.env"),
        b"\xff\xfe\0=\n=\n\\\n".repeat(1000),
    )
    .unwrap();
    // A kubelet config that is a directory: the wrapper cannot read it.
    let config_dir = scratch.join("config-is-a-dir");
    std::fs::create_dir_all(&config_dir).unwrap();
    // A state dir below a regular file: nothing can be written there.
    let blocker = scratch.join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let mut names = Vec::new();
    for (name, extra, labels, _, _) in faults {
        let unit = format!("{name}.service");
        let rec = recorder.display();
        let exec_start = match *name {
            "config-unreadable" => format!("{rec} --v=2 --config={}", config_dir.display()),
            "sh-c" => format!("/bin/sh -c 'exec {rec} --v=2 \"$$@\"' sh"),
            "env" => format!("/usr/bin/env GODEBUG=x=1 {rec} --v=2"),
            _ => format!("{rec} --v=2"),
        };
        write(
            &units.join(&unit),
            &format!("{common}Environment=RECORDER_SLEEP=60\n{extra}ExecStart={exec_start}\n"),
        );
        let st = if *name == "state-unwritable" {
            blocker.join("state")
        } else {
            state.clone()
        };
        wrap(&units, &unit, &search_path, &st, labels);
        names.push(unit);
    }

    let mut all: Vec<String> = (0..trials).map(|t| format!("kadm@{t}.service")).collect();
    all.extend(names.iter().cloned());
    let mut run = UserRun::new(vec![units.clone()], all);
    run.settle_secs = 8.0;
    let outcomes = systemd_oracle::run_user_manager(&run, scratch);
    let journal =
        |unit: &str| std::fs::read_to_string(logs.join(format!("{unit}.log"))).unwrap_or_default();

    for (t, n) in joins.iter().enumerate() {
        let unit = format!("kadm@{t}.service");
        let o = &outcomes[&unit];
        let journal = journal(&unit);
        let starts: Vec<Vec<String>> = o.records.iter().map(|r| r.argv_lossy()).collect();
        let n = *n as usize;
        assert_eq!(
            starts.len(),
            n + 1,
            "trial {t}: {n} failed starts, then one that runs; got {starts:?} {:?}\n{journal}",
            o.props
        );
        assert!(
            carries_label(&starts[n]),
            "trial {t}: the first start after the join lacks the label: {starts:?}\n{journal}"
        );
        assert_eq!(o.prop("ActiveState"), "active", "trial {t}");
    }
    for (name, _, _, why, labelled) in faults {
        let o = &outcomes[&format!("{name}.service")];
        let journal = journal(&format!("{name}.service"));
        let last = o.records.last().map(|r| r.argv_lossy()).unwrap_or_default();
        assert_eq!(
            o.prop("ActiveState"),
            "active",
            "{name}: {:?}\n{journal}",
            o.props
        );
        assert!(!last.is_empty(), "{name}: kubelet never ran\n{journal}");
        assert_eq!(carries_label(&last), *labelled, "{name}: {last:?}");
        assert!(journal.contains(why), "{name}: no {why:?} in\n{journal}");
    }
    // kubelet under `sh -c` got exactly what the script gives it.
    let sh = &outcomes["sh-c.service"].records;
    assert!(
        sh.iter()
            .all(|r| r.argv_lossy() == [recorder.display().to_string(), "--v=2".to_string()]),
        "{:?}",
        sh.iter().map(|r| r.argv_lossy()).collect::<Vec<_>>()
    );
    // At most two failed starts for a crash or a refusal.
    for name in ["refused", "abort", "overflow"] {
        let restarts: u32 = outcomes[&format!("{name}.service")]
            .prop("NRestarts")
            .parse()
            .unwrap();
        assert!(restarts <= 2, "{name}: {restarts} restarts");
    }
}
