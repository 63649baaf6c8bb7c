//! `explain` as a preflight on a kubeadm root: the kubelet package's
//! version decides which flags and labels pass, and `render dropins
//! --remove` takes out exactly what render wrote.

use crate::preflight::kubeadm_tree;
use crate::support::{run_cli, scratch_dir, stderr, write};

use std::path::{Path, PathBuf};

use run_cli::{cli, json_of};
use serde_json::json;

/// Issue 33 item 12: a kubeadm root (an upstream kubelet 1.33 from
/// Debian's package database) rendered with `--profile openshift`: the
/// wrapper lets OpenShift's `node-role.kubernetes.io/worker` through, and
/// the node's kubelet refuses it. The kubelet the node runs decides:
/// explain exits 1 naming both and the fix, render (which sees the package)
/// refuses the same and writes nothing; re-rendered with `--profile
/// upstream`, it passes.
#[test]
fn a_kubeadm_root_rendered_for_openshift_is_an_error() {
    let dir = scratch_dir();
    let root = dir.path();
    let r = root.to_str().unwrap();
    kubeadm_tree(root);
    let render = |profile: &str, label: &str| {
        cli(&[
            "render",
            "dropins",
            "--root",
            r,
            "--force",
            "--arch",
            "x86_64",
            "--profile",
            profile,
            "--label",
            label,
        ])
    };
    // Rendered before the kubelet package was installed (nothing told).
    let out = render("openshift", "node-role.kubernetes.io/worker=");
    assert!(out.status.success(), "{}", stderr(&out));
    write(
        &root.join("var/lib/dpkg/status"),
        "Package: kubelet\nStatus: install ok installed\nVersion: 1.33.2-1.1\n\n",
    );
    let out = cli(&["explain", "--root", r]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("this node runs an upstream kubelet (the kubelet package 1.33.2-1.1")
            && err.contains("rendered with --profile openshift")
            && err.contains("re-render with --profile upstream"),
        "{err}"
    );
    // The label itself, judged as the node's kubelet judges it.
    assert!(
        err.contains("kubelet exits at every start on this command line")
            && err.contains("node-role.kubernetes.io/worker"),
        "{err}"
    );
    let env = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    let before = std::fs::read_to_string(&env).unwrap();
    let out = render("openshift", "node-role.kubernetes.io/worker=");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("this node runs an upstream kubelet (the kubelet package 1.33.2-1.1")
            && err.contains("but --profile openshift")
            && err.contains("render with --profile upstream"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&env).unwrap(), before);
    let out = render("upstream", "node.kubernetes.io/worker=");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli(&["explain", "--root", r]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The other way round: an OpenShift node (its release in os-release)
    // with a wrapper rendered for upstream.
    write(
        &root.join("etc/os-release"),
        "ID=rhel\nOPENSHIFT_VERSION=\"4.19\"\n",
    );
    let out = cli(&["explain", "--root", r]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("this node runs OpenShift's kubelet (OpenShift 4.19")
            && err.contains("--profile openshift"),
        "{err}"
    );
}

/// Issue 22 item 7 on a kubeadm root: the kubelet package's version
/// (Debian's package database) is the kubelet the flags are judged for.
#[test]
fn a_kubeadm_root_judges_flags_for_its_kubelet_package() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_tree(root);
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        "[Service]\nExecStart=/usr/bin/kubelet --pod-infra-container-image=registry.k8s.io/pause:3.9\n",
    );
    let explain = || {
        json_of(&cli(&[
            "explain",
            "--json",
            "--root",
            root.to_str().unwrap(),
        ]))
    };
    let e = explain();
    assert!(
        e["kubelet_version"]
            .as_str()
            .unwrap()
            .starts_with("unknown"),
        "{e}"
    );
    assert!(
        e["warnings"]
            .to_string()
            .contains("only kubelets before 1.35 take it"),
        "{e}"
    );
    let status = |v: &str| {
        format!(
            "Package: kubelet\nStatus: install ok installed\nArchitecture: arm64\nVersion: {v}\n\n"
        )
    };
    write(&root.join("var/lib/dpkg/status"), &status("1.30.4-1.1"));
    let e = explain();
    assert!(
        e["kubelet_version"]
            .as_str()
            .unwrap()
            .starts_with("1.30 (the kubelet package 1.30.4-1.1")
            && !e["warnings"].to_string().contains("pod-infra"),
        "{e}"
    );
    write(&root.join("var/lib/dpkg/status"), &status("1.35.0-1.1"));
    let e = explain();
    assert!(
        e["warnings"]
            .to_string()
            .contains("kubelet 1.35 has no such flag (removed in 1.35)"),
        "{e}"
    );
}

/// Every file (not directory) under `root`, as paths relative to it.
fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.symlink_metadata().unwrap().is_dir() {
                dirs.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Issue 22 item 10: `render dropins --remove` takes out what render wrote
/// (and what the generator and the wrapper made of it), nothing else, all
/// or nothing; `explain` then shows kubelet as before.
#[test]
fn render_dropins_remove_takes_out_exactly_what_render_wrote() {
    let dir = scratch_dir();
    let root = dir.path();
    let r = root.to_str().unwrap();
    kubeadm_tree(root);
    write(
        &root.join("etc/systemd/system/kubelet.service.d/10-mine.conf"),
        "[Service]\nEnvironment=MINE=1\n",
    );
    write(&root.join("usr/local/bin/my-tool"), "mine\n");
    let before = files_under(root);
    let explain = || json_of(&cli(&["explain", "--json", "--root", r]));
    let unchanged = explain();
    let out = cli(&[
        "render",
        "dropins",
        "--root",
        r,
        "--arch",
        "x86_64",
        "--label",
        "node.kubernetes.io/gpu=",
        "--taint",
        "nvidia.com/gpu=true:NoSchedule",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // What boot makes of it: the generator's drop-in, the wrapper's state.
    let generated = root.join("run/systemd/generator/kubelet.service.d/zz-kubelet-labeler.conf");
    write(
        &generated,
        &kubelet_labeler::cli::render::dropins::wrapper_dropin(
            kubelet_labeler::node::kubelet::Profile::Upstream,
        ),
    );
    write(
        &root.join("run/kubelet-labeler/kubelet.service.state"),
        "x\n",
    );
    assert_eq!(explain()["wrapper_installed"], json!(true));
    let rendered = files_under(root);

    // An env drop-in with a line of the user's: refused, nothing removed.
    let env = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    let ours = std::fs::read_to_string(&env).unwrap();
    write(
        &env,
        &format!("{ours}Environment=\"KUBELET_EXTRA_ARGS=--v=4\"\n"),
    );
    let out = cli(&["render", "dropins", "--remove", "--root", r]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "holds lines render did not write (Environment=\"KUBELET_EXTRA_ARGS=--v=4\")"
        ) && stderr(&out).contains("pass --force")
            && stderr(&out).contains("nothing was removed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(files_under(root), rendered);
    // Without it (or with --force): everything of ours goes, nothing else.
    write(&env, &ours);
    let out = cli(&["render", "dropins", "--remove", "--root", r]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("systemctl daemon-reload"),
        "{}",
        stderr(&out)
    );
    // Issue 33 item 25: the Node keeps the sync's labels and annotations;
    // the exact commands that take them off (the labels the tree derived,
    // read before its files went; kubelet's certificate names the Node).
    for want in [
        "kubectl label node NODE node.kubernetes.io/gpu-\n",
        "kubectl annotate node NODE kubelet-labeler.io/owned-labels- \
         kubelet-labeler.io/pool-labels- kubelet-labeler.io/derived-taints- \
         kubelet-labeler.io/taint-drift-\n",
        "(NODE: the node's name",
    ] {
        assert!(
            stderr(&out).contains(want),
            "{want:?} not in {}",
            stderr(&out)
        );
    }
    assert_eq!(files_under(root), before);
    let after = explain();
    for key in [
        "argv",
        "original_argv",
        "wrapper_installed",
        "errors",
        "added_labels",
        "taints",
    ] {
        assert_eq!(after[key], unchanged[key], "{key}");
    }
    let out = cli(&["render", "dropins", "--remove", "--root", r]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("nothing of kubelet-labeler's for kubelet.service"),
        "{}",
        stderr(&out)
    );
    // --force takes an edited one too.
    let out = cli(&[
        "render", "dropins", "--root", r, "--arch", "x86_64", "--label", "a=",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    write(&env, "[Service]\nExecStartPre=/bin/true\n");
    let out = cli(&["render", "dropins", "--remove", "--force", "--root", r]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(files_under(root), before);
    // Only for removing: no labels with it.
    let out = cli(&[
        "render", "dropins", "--remove", "--root", r, "--label", "a=",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
