//! Render flags that would do something other than the user meant: each is
//! refused naming the input and the fix, with nothing written; a value
//! clap can check is a usage error (exit 2), as clap's own.

use crate::support::{elf, scratch_dir, stderr};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kubelet_labeler::cli::render::arch::Arch;

/// A command line's words (none here holds a space).
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// `args` in `dir`, stdin closed.
fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A scratch directory with a stand-in wrapper (`wrapper`), some other
/// static program (`foreign`) and a CA (`ca.pem`).
fn scratch() -> tempfile::TempDir {
    let dir = scratch_dir();
    std::fs::write(dir.path().join("wrapper"), elf::static_elf(Arch::X86_64)).unwrap();
    std::fs::write(
        dir.path().join("foreign"),
        elf::foreign_static_elf(Arch::X86_64),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("ca.pem"),
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    dir
}

/// The directory holds only what `scratch` put there.
fn nothing_written(dir: &Path, args: &[&str]) {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["ca.pem", "foreign", "wrapper"], "{args:?}");
}

/// Exits `code`, says every one of `needles` on stderr, prints nothing on
/// stdout and writes nothing.
fn refused(dir: &Path, args: &[&str], code: i32, needles: &[&str]) {
    let o = run(dir, args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: no {n:?} in: {err}");
    }
    assert!(o.stdout.is_empty(), "{args:?}");
    nothing_written(dir, args);
}

const MC: [&str; 6] = [
    "render",
    "machineconfig",
    "--wrapper",
    "wrapper",
    "--output-dir",
    "out",
];

/// A pool label that nodes carry without us would put every such node into
/// the custom pool, and the MCO would reboot them all into it.
#[test]
fn a_pool_label_nodes_carry_anyway_is_refused() {
    let dir = scratch();
    for label in [
        "node-role.kubernetes.io/worker=",
        "node-role.kubernetes.io/master",
        "node-role.kubernetes.io/control-plane=",
        "node-role.kubernetes.io/arbiter=",
        "kubernetes.io/os=linux",
        "kubernetes.io/arch=arm64",
        "kubernetes.io/hostname=gpu-0",
        "beta.kubernetes.io/arch=amd64",
        "node.kubernetes.io/instance-type=g4dn.xlarge",
        "topology.kubernetes.io/zone=a",
        "node.openshift.io/os_id=rhcos",
    ] {
        let key = label.split('=').next().unwrap();
        let args = [&MC[..], &["--pool", "gpu", "--pool-label", label]].concat();
        refused(
            dir.path(),
            &args,
            1,
            &[
                &format!("--pool-label {key}="),
                "MCO would reboot",
                "default node.kubernetes.io/gpu=",
            ],
        );
    }
    // A custom node-role label keeps its own reason: kubelet refuses it.
    let args = [
        &MC[..],
        &[
            "--pool",
            "gpu",
            "--pool-label",
            "node-role.kubernetes.io/infra=",
        ],
    ]
    .concat();
    refused(dir.path(), &args, 1, &["refuses to start"]);
    // A label of the pool's own renders.
    let args = [
        &MC[..],
        &["--pool", "gpu", "--pool-label", "example.com/pool=gpu"],
    ]
    .concat();
    let o = run(dir.path(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// kubelet.service would exec whatever static program --wrapper names, and
/// the fleet ISO whatever --selector names: only ours are taken.
#[test]
fn only_our_wrapper_and_selector_are_carried() {
    let dir = scratch();
    let not_ours = [
        "foreign is not our kubelet-labeler-wrapper",
        "give --wrapper the static kubelet-labeler-wrapper",
    ];
    let args = words("render machineconfig --pool gpu --wrapper foreign -o out");
    refused(dir.path(), &args, 1, &not_ours);
    let args = words("render dropins --root r --create-root --wrapper foreign");
    refused(dir.path(), &args, 1, &not_ours);
    let args = words(
        "render ignition --pool gpu --wrapper wrapper --wrapper foreign --arch x86_64 -o out",
    );
    // Two x86_64 files: the foreign one is refused before they are paired.
    refused(dir.path(), &args, 1, &not_ours);
    let args = words(
        "iso fleet --pool worker --mcs-url https://api-int.c.example.com:22623 --ca-file ca.pem --selector foreign --dest-device /dev/sda -o out no.iso",
    );
    refused(
        dir.path(),
        &args,
        1,
        &[
            "foreign is not our kubelet-labeler-select",
            "kubelet-labeler-select of this release",
        ],
    );

    // This program is static in a release build: it must not pass for
    // either, so it never holds their usage lines as they are.
    let cli = std::fs::read(env!("CARGO_BIN_EXE_kubelet-labeler")).unwrap();
    for head in [
        kubelet_labeler::node::contract::WRAPPER_USAGE_HEAD,
        kubelet_labeler::node::contract::SELECTOR_USAGE_HEAD,
    ] {
        assert!(
            !cli.windows(head.len()).any(|w| w == head.as_bytes()),
            "the CLI holds {head:?}"
        );
    }

    // Far past any wrapper's size (about 0.3 MiB): refused by size.
    let mut big = elf::static_elf(Arch::X86_64);
    big.resize((1 << 20) + 1, 0);
    std::fs::write(dir.path().join("foreign"), big).unwrap();
    let args = words("render machineconfig --pool gpu --wrapper foreign -o out");
    refused(
        dir.path(),
        &args,
        1,
        &["foreign is larger than 1 MiB, the most --wrapper reads"],
    );
}

/// Values clap can check are usage errors, exit 2, naming the flag.
#[test]
fn bad_values_are_usage_errors() {
    let dir = scratch();
    for (args, needles) in [
        (
            vec!["--pool", "gpu", "--base-role", "wroker"],
            vec!["'--base-role <ROLE>'", "[possible values: worker]"],
        ),
        (
            vec!["--pool", "p", "--base-role", "p"],
            vec!["invalid value 'p' for '--base-role <ROLE>'"],
        ),
        (
            vec!["--pool", "gpu", "--base-role", "master"],
            vec!["'--base-role <ROLE>'"],
        ),
        (
            vec!["--pool", "Worker_GPU"],
            vec!["'--pool <NAME>'", "lowercase letters, digits and '-'"],
        ),
        (
            vec!["--pool", "worker"],
            vec!["worker is a built-in role", "--role worker"],
        ),
    ] {
        let args = [&MC[..], &args].concat();
        refused(dir.path(), &args, 2, &needles);
    }
    for (args, needles) in [
        (
            vec!["iso", "embed", "--pool", "Worker"],
            vec!["'--pool <NAME>'"],
        ),
        (
            vec!["explain", "--root", ".", "--set-env", "NOEQUALS"],
            vec!["'--set-env <K=V>'", "write KEY=VALUE"],
        ),
        (
            vec!["explain", "--root", ".", "--set-env", "=x"],
            vec!["'--set-env <K=V>'", "the name before '=' is empty"],
        ),
    ] {
        let mut args = args;
        if args[0] == "iso" {
            args.extend([
                "--merge-url",
                "https://api-int.c.example.com:22623/config/worker",
                "--ca-file",
                "ca.pem",
                "-o",
                "out",
                "no.iso",
            ]);
        }
        refused(dir.path(), &args, 2, &needles);
    }
    // An empty value is a value.
    let o = run(dir.path(), &["explain", "--root", ".", "--set-env", "A="]);
    assert!(!stderr(&o).contains("--set-env"), "{}", stderr(&o));
}

/// A pointer config carries none of the pool's content (the MCS serves
/// it): the flags for it are usage errors with --merge-url, and --ca-file
/// is one without it.
#[test]
fn a_pointer_config_takes_no_content_flags() {
    let dir = scratch();
    let pointer = words(
        "render ignition --pool gpu --merge-url https://api-int.c.example.com:22623/config/gpu --ca-file ca.pem -o out",
    );
    for extra in [
        &["--label", "a=b"][..],
        &["--taint", "a=b:NoSchedule"],
        &["--rules", "rules.yaml"],
        &["--nfd-labels", "openshift"],
        &["--arch", "aarch64"],
        &["--wrapper", "wrapper"],
        &["--pool-label", "example.com/pool=gpu"],
        &["--profile", "upstream"],
    ] {
        let args = [&pointer[..], extra].concat();
        refused(
            dir.path(),
            &args,
            2,
            &[&format!(
                "'--merge-url <URL>' cannot be used with '{}",
                extra[0]
            )],
        );
    }
    let args = words("render ignition --pool gpu --ca-file ca.pem -o out");
    refused(dir.path(), &args, 2, &["--merge-url <URL>"]);
    // The pointer alone renders.
    let o = run(dir.path(), &pointer);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A --label of the pool label's key with another value would be dropped
/// for the pool label's; the same value is the same label.
#[test]
fn a_label_cannot_change_the_pool_label() {
    let dir = scratch();
    for (extra, needles) in [
        (
            vec!["--label", "node.kubernetes.io/gpu=x"],
            vec![
                "--label node.kubernetes.io/gpu=x: node.kubernetes.io/gpu is the pool label",
                "--pool-label node.kubernetes.io/gpu=x",
            ],
        ),
        (
            vec!["--label", "a", "--pool-label", "a=b"],
            vec!["--label a=: a is the pool label, registered as a=b"],
        ),
    ] {
        let args = [&MC[..], &["--pool", "gpu"], &extra[..]].concat();
        refused(dir.path(), &args, 1, &needles);
    }
    let args = words(
        "render machineconfig --wrapper wrapper --pool gpu --label node.kubernetes.io/gpu= --label example.com/x=y -o -",
    );
    let o = run(dir.path(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(
            "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=node.kubernetes.io/gpu=,example.com/x=y%22"
        ),
        "{out}"
    );
}

/// The installer how-to (docs/openshift-built-in-roles.md), run as written:
/// what lands in an installer's openshift/ directory is MachineConfigs only
/// (the installer has no API type for a Kustomization).
#[test]
fn the_installer_how_to_puts_only_machineconfigs_into_openshift() {
    let readme = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openshift-built-in-roles.md"),
    )
    .unwrap();
    let start = readme
        .find("```sh\nkubelet-labeler render machineconfig --role master")
        .expect("the how-to's block");
    let block = &readme[start + "```sh\n".len()..];
    let block = &block[..block.find("```").unwrap()];

    // This CLI with a stand-in wrapper beside it, where it looks first.
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let bindir = tmp.path().join("bin");
    std::fs::create_dir(&bindir).unwrap();
    std::fs::copy(
        env!("CARGO_BIN_EXE_kubelet-labeler"),
        bindir.join("kubelet-labeler"),
    )
    .unwrap();
    std::fs::write(
        bindir.join("kubelet-labeler-wrapper-x86_64"),
        elf::static_elf(Arch::X86_64),
    )
    .unwrap();
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let path = format!(
        "{}:{}",
        bindir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", block])
        .current_dir(&work)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{block}: {}", stderr(&o));

    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut stack = vec![work.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == "openshift") {
                    dirs.push(p.clone());
                }
                stack.push(p);
            }
        }
    }
    assert_eq!(dirs.len(), 1, "one openshift/ directory: {dirs:?}");
    let mut kinds = Vec::new();
    for e in std::fs::read_dir(&dirs[0]).unwrap() {
        let p = e.unwrap().path();
        let v: serde_json::Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        kinds.push((
            p.file_name().unwrap().to_string_lossy().into_owned(),
            v["kind"].as_str().unwrap_or("").to_string(),
            v["metadata"]["labels"]["machineconfiguration.openshift.io/role"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        ));
    }
    kinds.sort();
    let roles: Vec<&str> = kinds.iter().map(|(_, _, r)| r.as_str()).collect();
    assert!(
        kinds.iter().all(|(_, k, _)| k == "MachineConfig")
            && roles.contains(&"master")
            && roles.contains(&"worker"),
        "{kinds:?}"
    );
}
