//! What a user of the render and iso commands meets: which wrapper
//! `render dropins` installs, what a pool's MachineConfigs reach, what
//! `--force` removes. Exit codes of usage errors and where messages go:
//! render_gitops_messages.rs.

use crate::support::{bin, elf, mco, scratch_dir, stderr, stdout};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kubelet_labeler::cli::render::arch::Arch;
use kubelet_labeler::cli::render::layout::machineconfigs_from_yaml;
use kubelet_labeler::cli::render::machineconfig::check_wrapper;
use serde_json::Value;

fn host_arch() -> Arch {
    Arch::from_name(std::env::consts::ARCH).expect("a host architecture we ship")
}

/// A file with a static program's ELF header for `arch`: all render and
/// explain look at.
pub(crate) fn static_elf(dir: &Path, arch: Arch) -> PathBuf {
    let path = dir.join(format!("static-{arch}"));
    std::fs::write(&path, elf::static_elf(arch)).unwrap();
    path
}

fn objects(dir: &Path) -> Vec<Value> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    names.sort();
    names
        .iter()
        .filter(|p| !p.ends_with("kustomization.yaml"))
        .map(|p| serde_saphyr::from_str::<Value>(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

/// `render dropins` after a plain `cargo build`: the glibc wrapper beside
/// the CLI is refused (not installed), and the command the error suggests,
/// run exactly as written, builds the static one and renders with it.
#[test]
fn dropins_refuse_a_dynamic_wrapper_and_the_suggested_command_works() {
    let repo = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap();
    // A checkout's layout: target/debug/ with the CLI and the dynamic
    // wrapper a plain `cargo build` leaves, beside Cargo.toml and
    // machineconfigs/ (links to this checkout's).
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let debug = scratch.path().join("target/debug");
    std::fs::create_dir_all(&debug).unwrap();
    for (from, to) in [
        (env!("CARGO_BIN_EXE_kubelet-labeler"), "kubelet-labeler"),
        (
            env!("CARGO_BIN_EXE_kubelet-labeler-wrapper"),
            "kubelet-labeler-wrapper",
        ),
    ] {
        std::fs::hard_link(from, debug.join(to))
            .or_else(|_| std::fs::copy(from, debug.join(to)).map(|_| ()))
            .unwrap();
    }
    std::os::unix::fs::symlink(repo.join("Cargo.toml"), scratch.path().join("Cargo.toml")).unwrap();
    std::os::unix::fs::symlink(
        repo.join("machineconfigs"),
        scratch.path().join("machineconfigs"),
    )
    .unwrap();
    let cli = debug.join("kubelet-labeler");
    let root = scratch.path().join("root");
    let args = "render dropins --create-root --label example.com/gpu=yes --root";

    let refused = Command::new(&cli)
        .args(args.split(' '))
        .arg(&root)
        .output()
        .unwrap();
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    let arch = host_arch();
    assert!(
        err.contains(&format!(
            "{} is dynamically linked",
            debug.join("kubelet-labeler-wrapper").display()
        )),
        "{err}"
    );
    assert!(!root.exists(), "nothing may be written");
    let suggested = err
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {err}"));
    assert_eq!(
        suggested,
        format!(
            "--wrapper \"$(bash {}/machineconfigs/build-wrapper.sh {arch})\"",
            repo.display()
        )
    );

    // The suggestion, appended to the same command line, as a user would.
    let line = format!(
        "'{}' {args} '{}' {suggested}",
        cli.display(),
        root.display()
    );
    let done = Command::new("sh")
        .args(["-c", &line])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(done.status.success(), "{line}: {}", stderr(&done));
    let installed = root
        .join(kubelet_labeler::cli::render::dropins::wrapper_path(arch).trim_start_matches('/'));
    let bytes = std::fs::read(&installed).unwrap();
    check_wrapper(&bytes, arch, &installed).unwrap();
}

/// Rendering `--pool P` changes nothing outside pool P: each MachineConfig
/// has role P (the pool selects [worker, P]; the worker pool selects role
/// worker only), two pools share no object name, and `--role worker` is
/// what reaches every worker.
#[test]
fn a_pool_render_reaches_only_its_pool() {
    let dir = scratch_dir();
    let x86 = static_elf(dir.path(), Arch::X86_64);
    let arm = static_elf(dir.path(), Arch::Aarch64);
    let render = |args: &[&str], wrapper: &Path, out: &str| {
        let o = bin()
            .args(["render", "machineconfig"])
            .args(args)
            .arg("--wrapper")
            .arg(wrapper)
            .arg("--output-dir")
            .arg(dir.path().join(out))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), "", "the wrote lines go to stderr");
        objects(&dir.path().join(out))
    };
    let name = |o: &Value| format!("{}/{}", o["kind"], o["metadata"]["name"]);
    let gpu = render(&["--pool", "worker-gpu"], &x86, "gpu");
    let pi = render(&["--pool", "worker-pi"], &arm, "pi");
    for (pool, objs) in [("worker-gpu", &gpu), ("worker-pi", &pi)] {
        let mut kinds = Vec::new();
        // The cluster-wide policy is the same object for every pool.
        for o in objs.iter().filter(|o| o["kind"] != "MachineConfiguration") {
            kinds.push(o["kind"].as_str().unwrap().to_string());
            if o["kind"] == "MachineConfig" {
                assert_eq!(
                    o["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
                    pool,
                    "{}",
                    name(o)
                );
                assert!(o["metadata"]["name"].as_str().unwrap().contains(pool));
            } else {
                let values = &o["spec"]["machineConfigSelector"]["matchExpressions"][0]["values"];
                assert_eq!(values, &serde_json::json!(["worker", pool]));
            }
        }
        kinds.sort();
        assert_eq!(
            kinds,
            ["MachineConfig", "MachineConfig", "MachineConfigPool"]
        );
    }
    // (Except the cluster-wide MachineConfiguration: applied server-side
    // with a field manager per pool, its entries merge by path.)
    let gpu_names: Vec<String> = gpu
        .iter()
        .filter(|o| o["kind"] != "MachineConfiguration")
        .map(name)
        .collect();
    for o in pi.iter().filter(|o| o["kind"] != "MachineConfiguration") {
        assert!(!gpu_names.contains(&name(o)), "both pools have {}", name(o));
    }
    let mut worker = render(&["--role", "worker"], &x86, "worker");
    worker.retain(|o| o["kind"] != "MachineConfiguration");
    assert_eq!(worker.len(), 1);
    assert_eq!(
        worker[0]["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
        "worker"
    );
    assert!(!gpu_names.contains(&name(&worker[0])));
}

fn render_into(w: &Path, args: &[&str], out: &Path) -> Output {
    bin()
        .args(["render", "machineconfig"])
        .args(args)
        .arg("--wrapper")
        .arg(w)
        .arg("--output-dir")
        .arg(out)
        .output()
        .unwrap()
}

pub(crate) fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every file of `dir` (and of its subdirectories, as `sub/name`), with
/// its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for n in names_in(dir) {
        let p = dir.join(&n);
        if p.is_dir() {
            out.extend(
                snapshot(&p)
                    .into_iter()
                    .map(|(sub, bytes)| (format!("{n}/{sub}"), bytes)),
            );
        } else {
            out.push((n, std::fs::read(p).unwrap()));
        }
    }
    out
}

pub(crate) fn kustomization_resources(dir: &Path) -> Vec<String> {
    let k: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap())
            .unwrap();
    k["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

pub(crate) const GPU_FILES: [&str; 3] = [
    "50-worker-gpu-kubelet-labeler-wrapper.yaml",
    "50-worker-gpu-kubelet-labeler-labels.yaml",
    "machineconfigpool-worker-gpu.yaml",
];

const PI_FILES: [&str; 3] = [
    "50-worker-pi-kubelet-labeler-wrapper.yaml",
    "50-worker-pi-kubelet-labeler-labels.yaml",
    "machineconfigpool-worker-pi.yaml",
];

/// Several pools (and `--role worker`) in one GitOps directory: a render
/// of one never removes or unlists another's manifests, with or without
/// `--force`; every render's files are listed in the kustomization. A
/// re-render that would replace this pool's files is refused, the hint
/// naming exactly what `--force` does, and the refusal changes nothing.
#[test]
fn pools_share_a_gitops_dir_and_force_touches_only_its_own() {
    let dir = scratch_dir();
    let w = static_elf(dir.path(), Arch::X86_64);
    let out = dir.path().join("gitops");
    let ok = |o: Output| {
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    ok(render_into(
        &w,
        &["--pool", "worker-pi", "--label", "example.com/pi=yes"],
        &out,
    ));
    // Another pool into the same directory: no --force needed, nothing of
    // worker-pi's touched.
    let pi_before: Vec<(String, Vec<u8>)> = snapshot(&out)
        .into_iter()
        .filter(|(n, _)| PI_FILES.contains(&n.as_str()))
        .collect();
    ok(render_into(
        &w,
        &["--pool", "worker-gpu", "--label", "example.com/gpu=yes"],
        &out,
    ));
    ok(render_into(
        &w,
        &["--role", "worker", "--label", "example.com/team=general"],
        &out,
    ));
    let mut listed = kustomization_resources(&out);
    listed.sort();
    let mut want: Vec<String> = PI_FILES
        .iter()
        .chain(&GPU_FILES)
        .chain(&[
            "50-worker-kubelet-labeler-labels.yaml",
            "50-worker-kubelet-labeler-wrapper.yaml",
        ])
        .map(|s| s.to_string())
        .collect();
    want.sort();
    assert_eq!(listed, want);

    // Day 2 for worker-gpu: its labels change. Without --force: refused,
    // naming worker-gpu's files only, nothing written.
    let before = snapshot(&out);
    let args = ["--pool", "worker-gpu", "--label", "example.com/gpu=no"];
    let refused = render_into(&w, &args, &out);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("pass --force to replace"), "{err}");
    assert!(
        err.contains(&format!(
            "replace {}",
            out.join("50-worker-gpu-kubelet-labeler-labels.yaml")
                .display()
        )),
        "{err}"
    );
    assert!(
        !err.contains("worker-pi-") && !err.contains("remove"),
        "{err}"
    );
    assert_eq!(snapshot(&out), before, "a refusal changes nothing");

    // With --force; then the role without labels (its labels
    // MachineConfig goes, named in the refusal and removed with --force):
    // the pools' files stay, byte for byte, listed.
    let err = ok(render_into(&w, &[&args[..], &["--force"]].concat(), &out));
    assert!(!err.contains("worker-pi"), "{err}");
    let gone = out.join("50-worker-kubelet-labeler-labels.yaml");
    let refused = render_into(&w, &["--role", "worker"], &out);
    assert!(
        stderr(&refused).contains(&format!("remove {}", gone.display())),
        "{}",
        stderr(&refused)
    );
    let err = ok(render_into(&w, &["--role", "worker", "--force"], &out));
    assert!(!gone.exists());
    assert!(
        err.contains(&format!("removed {}", gone.display())),
        "{err}"
    );
    for (name, bytes) in &pi_before {
        assert_eq!(&std::fs::read(out.join(name)).unwrap(), bytes, "{name}");
    }
    let listed = kustomization_resources(&out);
    assert!(!listed.contains(&"50-worker-kubelet-labeler-labels.yaml".to_string()));
    for f in PI_FILES
        .iter()
        .chain(&GPU_FILES)
        .chain(&["50-worker-kubelet-labeler-wrapper.yaml"])
    {
        assert!(listed.contains(&f.to_string()), "{f} unlisted: {listed:?}");
    }
    // Every manifest carries whose render it is, but the cluster's one
    // MachineConfiguration, which every pool applies (its file name says).
    for o in objects(&out) {
        assert_eq!(
            o["metadata"]["annotations"]["kubelet-labeler/rendered-for"].is_string(),
            o["kind"] != "MachineConfiguration",
            "{o}"
        );
    }
}

/// An older version's files: the worker wrapper MachineConfig it wrote
/// with every pool is unmarked, and may as well be a `--role worker`
/// render's: left and named, never removed; another manifest is left and
/// named as unlisted.
#[test]
fn an_older_versions_worker_wrapper_is_left_and_named() {
    let dir = scratch_dir();
    let w = static_elf(dir.path(), Arch::X86_64);
    let out = dir.path().join("gitops");
    let role = dir.path().join("role");
    assert!(
        render_into(&w, &["--role", "worker"], &role)
            .status
            .success()
    );
    let old_worker = "50-worker-kubelet-labeler-wrapper.yaml";
    std::fs::create_dir(&out).unwrap();
    let text = std::fs::read_to_string(role.join(old_worker)).unwrap();
    let unmarked: String = text
        .lines()
        .filter(|l| !l.contains("annotations:") && !l.contains("kubelet-labeler/rendered-for"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(out.join(old_worker), &unmarked).unwrap();
    std::fs::write(out.join("mine.yaml"), "kind: ConfigMap\n").unwrap();

    let o = render_into(&w, &["--pool", "worker-gpu", "--force"], &out);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(out.join(old_worker)).unwrap(),
        unmarked
    );
    assert!(
        err.contains(&format!("left {}", out.join(old_worker).display()))
            && err.contains("--role worker"),
        "{err}"
    );
    assert!(
        err.contains(&format!("left {}", out.join("mine.yaml").display())),
        "{err}"
    );
    let mut want: Vec<&str> = GPU_FILES.to_vec();
    want.extend([
        old_worker,
        "kustomization.yaml",
        "cluster-wide",
        "mine.yaml",
    ]);
    want.sort();
    assert_eq!(names_in(&out), want);
}

/// A re-render keeps what render does not write: the pool's `paused`,
/// `maxUnavailable`, annotations and labels; the kustomization's own
/// resources and fields. YAML comments cannot survive a rewrite: a
/// re-render that would drop them is refused naming the file and lines,
/// `--force` drops them and says so, and a re-render that changes nothing
/// leaves the files' bytes alone.
#[test]
fn a_re_render_keeps_the_users_edits() {
    let dir = scratch_dir();
    let w = static_elf(dir.path(), Arch::X86_64);
    let out = dir.path().join("gitops");
    let first = [
        "--pool",
        "worker-gpu",
        "--taint",
        "nvidia.com/gpu=true:NoSchedule",
    ];
    assert!(render_into(&w, &first, &out).status.success());
    let mcp = out.join("machineconfigpool-worker-gpu.yaml");
    let kust = out.join("kustomization.yaml");
    let edit = |path: &Path, f: &dyn Fn(&mut Value)| {
        let mut v: Value = serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(path, serde_saphyr::to_string(&v).unwrap()).unwrap();
    };
    edit(&mcp, &|v| {
        v["spec"]["paused"] = true.into();
        v["spec"]["maxUnavailable"] = 2.into();
        v["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = "-1".into();
        v["metadata"]["labels"] = serde_json::json!({"team": "ml"});
    });
    std::fs::write(out.join("extra-mc.yaml"), "kind: ConfigMap\n").unwrap();
    edit(&kust, &|v| {
        v["resources"]
            .as_array_mut()
            .unwrap()
            .push("extra-mc.yaml".into());
        v["commonAnnotations"] = serde_json::json!({"owner": "gpu-team"});
        v["patches"] = serde_json::json!([{"path": "patch.yaml"}]);
    });

    // Day 2: another taint. The labels MachineConfig changes, the pool's
    // file does not: left as the user wrote it.
    let day2 = [
        "--pool",
        "worker-gpu",
        "--taint",
        "nvidia.com/gpu=present:NoSchedule",
    ];
    let mcp_edited = std::fs::read(&mcp).unwrap();
    let refused = render_into(&w, &day2, &out);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "replace {} (its spec.config)",
            out.join("50-worker-gpu-kubelet-labeler-labels.yaml")
                .display()
        )) && !err.contains(&mcp.display().to_string()),
        "{err}"
    );
    let forced = render_into(&w, &[&day2[..], &["--force"]].concat(), &out);
    let err = stderr(&forced);
    assert!(forced.status.success(), "{err}");
    assert!(
        err.contains(&format!("unchanged {}", mcp.display())),
        "{err}"
    );
    assert_eq!(std::fs::read(&mcp).unwrap(), mcp_edited);
    let pool: Value = serde_saphyr::from_str(&std::fs::read_to_string(&mcp).unwrap()).unwrap();
    assert_eq!(pool["spec"]["paused"], true, "{pool}");
    assert_eq!(pool["spec"]["maxUnavailable"], 2, "{pool}");
    assert_eq!(
        pool["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"],
        "-1"
    );
    assert_eq!(pool["metadata"]["labels"]["team"], "ml");
    assert_eq!(
        pool["spec"]["nodeSelector"]["matchLabels"]["node.kubernetes.io/worker-gpu"],
        ""
    );
    let k: Value = serde_saphyr::from_str(&std::fs::read_to_string(&kust).unwrap()).unwrap();
    assert_eq!(k["commonAnnotations"]["owner"], "gpu-team");
    assert_eq!(k["patches"][0]["path"], "patch.yaml");
    assert!(kustomization_resources(&out).contains(&"extra-mc.yaml".to_string()));
    let labels =
        std::fs::read_to_string(out.join("50-worker-gpu-kubelet-labeler-labels.yaml")).unwrap();
    assert!(
        labels.contains("nvidia.com/gpu=present:NoSchedule"),
        "{labels}"
    );

    // A comment in the pool's file: the same render again changes nothing
    // and keeps the bytes; a changing one is refused (it replaces a field
    // render writes), and with --force edits the file in place: the
    // comment stays.
    let commented = format!(
        "# paused for the driver batch, TICKET-1\n{}",
        std::fs::read_to_string(&mcp).unwrap()
    );
    std::fs::write(&mcp, &commented).unwrap();
    let again = render_into(&w, &[&day2[..], &["--force"]].concat(), &out);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stderr(&again).contains(&format!("unchanged {}", mcp.display())));
    assert_eq!(std::fs::read_to_string(&mcp).unwrap(), commented);
    let other = [
        "--pool",
        "worker-gpu",
        "--pool-label",
        "example.com/gpu=true",
    ];
    let refused = render_into(&w, &other, &out);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "replace {} (its spec.nodeSelector), keeping \
             metadata.annotations.argocd.argoproj.io/sync-wave, metadata.labels, spec.paused, \
             spec.maxUnavailable",
            mcp.display()
        )) && !err.contains("dropping"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&mcp).unwrap(), commented);
    let forced = render_into(&w, &[&other[..], &["--force"]].concat(), &out);
    let err = stderr(&forced);
    assert!(forced.status.success(), "{err}");
    assert!(
        err.contains(&format!("updated {}", mcp.display())) && !err.contains("dropped"),
        "{err}"
    );
    assert!(
        std::fs::read_to_string(&mcp)
            .unwrap()
            .starts_with("# paused for the driver batch, TICKET-1\n")
    );
    let pool: Value = serde_saphyr::from_str(&std::fs::read_to_string(&mcp).unwrap()).unwrap();
    assert_eq!(pool["spec"]["paused"], true);
    assert_eq!(pool["spec"]["maxUnavailable"], 2);
    assert_eq!(pool["metadata"]["labels"]["team"], "ml");
    assert_eq!(
        pool["spec"]["nodeSelector"]["matchLabels"],
        serde_json::json!({"example.com/gpu": "true"}),
        "the selector render writes is replaced whole"
    );
}

/// A file at one of this render's names that is not its earlier output
/// (the user's, or another object) is never replaced, even with --force.
#[test]
fn a_foreign_file_at_our_name_is_refused_even_with_force() {
    let dir = scratch_dir();
    let w = static_elf(dir.path(), Arch::X86_64);
    let out = dir.path().join("gitops");
    std::fs::create_dir(&out).unwrap();
    let mine = out.join("machineconfigpool-worker-gpu.yaml");
    std::fs::write(&mine, "kind: ConfigMap\nmetadata:\n  name: mine\n").unwrap();
    let o = render_into(&w, &["--pool", "worker-gpu", "--force"], &out);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&mine.display().to_string()) && err.contains("ConfigMap mine"),
        "{err}"
    );
    assert_eq!(names_in(&out), ["machineconfigpool-worker-gpu.yaml"]);
}

/// `--role worker --label …` and a custom pool's render, applied together:
/// the MCO's own render and Machine Config Server (the MCO oracle) give the
/// pool's node both env drop-ins, and on the files it served the wrapper's
/// plan registers both sets of labels and taints; a key in both takes the
/// pool's value, and `explain` says so.
#[test]
fn worker_role_and_pool_labels_compose_on_the_pools_nodes() {
    let Some((oracle, mco_root)) = mco::oracle_as_root() else {
        return;
    };
    let dir = scratch_dir();
    let w = static_elf(dir.path(), Arch::X86_64);
    let out = dir.path().join("gitops");
    for args in [
        &[
            "--role",
            "worker",
            "--label",
            "example.com/team=general",
            "--label",
            "example.com/tier=worker",
            "--taint",
            "example.com/dedicated=general:NoSchedule",
        ][..],
        &[
            "--pool",
            "worker-gpu",
            "--label",
            "example.com/tier=gpu",
            "--taint",
            "example.com/dedicated=gpu:NoSchedule",
            "--taint",
            "nvidia.com/gpu=true:NoSchedule",
        ],
    ] {
        let o = render_into(&w, args, &out);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // The node disruption policies are applied on their own, server-side
    // (not with the kustomization): out of the pool's manifests.
    for owner in ["worker", "worker-gpu"] {
        std::fs::remove_file(out.join(format!("cluster-wide/machineconfiguration-{owner}.yaml")))
            .unwrap();
    }
    std::fs::remove_dir(out.join("cluster-wide")).unwrap();
    let work = dir.path().join("work");
    let o = mco::boot_render((&oracle, &mco_root), &out, "worker-gpu", &work);
    let report: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    assert!(o.status.success(), "{}", report["summary"]);
    // The node as the MCS served it; what the OS image and boot add.
    let root = work.join("node-root");
    let put = |rel: &str, text: &str, mode: u32| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    put("etc/os-release", "ID=rhcos\nVERSION_ID=4.20\n", 0o644);
    put("usr/bin/kubelet", "#!/bin/sh\n", 0o755);
    put("etc/node-sizing.env", "", 0o644);
    put("run/kubelet-alibaba.env", "", 0o644);
    for d in [
        "etc/kubernetes/kubelet.conf.d",
        "etc/openshift/kubelet.conf.d",
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let o = bin()
        .args(["explain", "--json", "--profile", "openshift", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    let e: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|err| panic!("{err}: {}", stderr(&o)));
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap_or_else(|| panic!("{e}"))
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    let mut labels = strings(&e["added_labels"]);
    labels.sort();
    assert_eq!(
        labels,
        [
            "example.com/team=general",
            "example.com/tier=gpu",
            "node.kubernetes.io/worker-gpu="
        ],
        "{e}"
    );
    let mut taints = strings(&e["taints"]);
    taints.sort();
    assert_eq!(
        taints,
        [
            "example.com/dedicated=gpu:NoSchedule",
            "nvidia.com/gpu=true:NoSchedule"
        ],
        "{e}"
    );
    let notes = e["notes"].to_string();
    assert!(
        notes.contains("the pool's label example.com/tier=gpu wins over the role's example.com/tier=worker")
            && notes.contains("the pool's taint example.com/dedicated=gpu:NoSchedule wins over the role's example.com/dedicated=general:NoSchedule"),
        "{notes}"
    );
}

/// `render dropins --force` over an earlier render: the env drop-in this
/// render no longer writes (no labels now) would still add the old labels;
/// without --force that is refused, with it removed, each time named. Its
/// "wrote" lines are on stderr, stdout stays empty.
#[test]
fn dropins_name_and_remove_an_earlier_renders_files() {
    let dir = scratch_dir();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let x86 = static_elf(dir.path(), Arch::X86_64);
    let arm = static_elf(dir.path(), Arch::Aarch64);
    let run = |extra: &[&str], wrappers: &[&Path]| {
        let mut c = bin();
        c.args(["render", "dropins", "--root"])
            .arg(&root)
            .args(extra);
        for w in wrappers {
            c.arg("--wrapper").arg(w);
        }
        c.output().unwrap()
    };
    let first = run(&["--label", "example.com/gpu=yes"], &[&x86, &arm]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(stdout(&first), "");
    let env = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    let arm_wrapper = root.join("usr/local/bin/kubelet-labeler-wrapper.aarch64");
    assert!(stderr(&first).contains(&format!("wrote {}", env.display())));

    let refused = run(&[], &[&x86]);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&env.display().to_string())
            && err.contains(&arm_wrapper.display().to_string())
            && err.contains("--force"),
        "{err}"
    );
    assert!(env.exists());

    let forced = run(&["--force"], &[&x86]);
    let err = stderr(&forced);
    assert!(forced.status.success(), "{err}");
    for gone in [&env, &arm_wrapper] {
        assert!(!gone.exists());
        assert!(
            err.contains(&format!("removed {}", gone.display())),
            "{err}"
        );
    }
}

/// The labels MachineConfig shows its labels, taints and rule names as
/// written (plain-text data URL), and stays what Ignition reads: decoded,
/// it is the drop-in render writes into a tree.
#[test]
fn the_labels_machineconfig_reads_as_written() {
    let dir = scratch_dir();
    let w = static_elf(dir.path(), Arch::X86_64);
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rules");
    let rule_file = std::fs::read_dir(&rules)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .min()
        .unwrap();
    let common = [
        "--label",
        "node.kubernetes.io/worker-gpu=",
        "--label",
        "example.com/team=ml",
        "--taint",
        "nvidia.com/gpu=true:NoSchedule",
    ];
    let o = bin()
        .args(["render", "machineconfig", "--pool", "worker-gpu"])
        .args(common)
        .arg("--rules")
        .arg(&rule_file)
        .arg("--wrapper")
        .arg(&w)
        .arg("--output-dir")
        .arg(dir.path().join("mc"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(
        dir.path()
            .join("mc/50-worker-gpu-kubelet-labeler-labels.yaml"),
    )
    .unwrap();
    for shown in [
        "node.kubernetes.io/worker-gpu=,example.com/team=ml",
        "nvidia.com/gpu=true:NoSchedule",
    ] {
        assert!(text.contains(shown), "{shown} not readable in:\n{text}");
    }
    assert!(!text.contains("base64") && !text.contains("gzip"), "{text}");
    let names = kubelet_labeler::cli::render::node_rules::read_rule_files(
        &[&rule_file],
        kubelet_labeler::node::kubelet::Profile::OpenShift,
    )
    .unwrap();
    for rule in names {
        assert!(text.contains(&rule.name), "{} not readable", rule.name);
    }

    // Decoded, the file is the drop-in `render dropins` writes.
    let tree = dir.path().join("tree");
    let o = bin()
        .args([
            "render",
            "dropins",
            "--profile",
            "openshift",
            "--create-root",
        ])
        .arg("--root")
        .arg(&tree)
        .args(common)
        .arg("--rules")
        .arg(&rule_file)
        .arg("--wrapper")
        .arg(&w)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mc = machineconfigs_from_yaml(&text, "labels").unwrap().remove(0);
    let file = &mc["spec"]["config"]["storage"]["files"][0];
    let decoded = kubelet_labeler::cli::render::layout::decode_data_url(
        file["contents"]["source"].as_str().unwrap(),
        file["contents"]["compression"].as_str(),
    )
    .unwrap();
    let on_tree = std::fs::read_to_string(
        tree.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"),
    )
    .unwrap();
    // The pool's copy also names the pool label, which the day-2 sync
    // holds back (a kubeadm host has no pool).
    assert_eq!(
        String::from_utf8(decoded).unwrap(),
        format!(
            "{on_tree}Environment=\"KUBELET_LABELER_POOL_LABEL=node.kubernetes.io/worker-gpu\"\n"
        )
    );
}
