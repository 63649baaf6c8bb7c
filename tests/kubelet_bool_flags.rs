//! `src/node/kubelet/gen-bool-flags.sh` on a made-up miniature of the kubernetes
//! tree (tests/fixtures/kubelet-flag-sources): every registration form it
//! must find, every one it must skip, and the flags it keeps as `removed`.

use crate::support::{repo, scratch_dir};
use std::path::Path;
use std::process::Command;

/// (name, where) of each entry the script wrote.
fn run(tree: &Path, previous: &Path) -> Vec<(String, String)> {
    let out = Command::new("bash")
        .arg(repo().join("src/node/kubelet/gen-bool-flags.sh"))
        .arg(tree)
        .arg(previous)
        .env("KUBE_SOURCE", "the fixture")
        .output()
        .expect("running bash");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("// the fixture; do not edit"), "{stdout}");
    stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix('"'))
        .map(|l| {
            let (name, source) = l.split_once("\", // ").expect(l);
            (name.to_string(), source.to_string())
        })
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

const OPTIONS: &str = "cmd/kubelet/app/options/options.go";

#[test]
fn finds_each_registration_form_and_keeps_removed_flags() {
    let fixture = repo().join("tests/fixtures/kubelet-flag-sources");
    let got = run(&fixture, &fixture.join("previous.rs"));
    let want: Vec<(&str, &str)> = vec![
        ("allow-privileged", "removed"),
        (
            "enable-load-reader",
            "cmd/kubelet/app/options/globalflags_linux.go",
        ),
        ("help", "cmd/kubelet/app/server.go"),
        (
            "log-text-split-stream",
            "staging/src/k8s.io/component-base/logs/api/v1/options.go",
        ),
        ("logtostderr", "cmd/kubelet/app/options/globalflags.go"),
        ("multi-line", OPTIONS),
        ("one-line", OPTIONS),
        ("paren-form", OPTIONS),
        (
            "skip-headers",
            "staging/src/k8s.io/component-base/logs/logs.go",
        ),
        (
            "version",
            "staging/src/k8s.io/component-base/version/verflag/verflag.go",
        ),
    ];
    let got_ref: Vec<(&str, &str)> = got.iter().map(|(n, s)| (n.as_str(), s.as_str())).collect();
    assert_eq!(got_ref, want);
}

/// kubelet >= 1.26: logs.go takes klog's flags from klogflags.Init (only
/// -v and -vmodule), so klog's bools come only through explicit
/// re-registration; and a flag gone from the tree stays, as `removed`.
#[test]
fn klogflags_init_drops_klogs_bools_and_gone_flags_stay() {
    let dir = scratch_dir();
    let tree = dir.path();
    copy_tree(&repo().join("tests/fixtures/kubelet-flag-sources"), tree);
    std::fs::write(
        tree.join("staging/src/k8s.io/component-base/logs/logs.go"),
        "package logs\n\nfunc init() {\n\tklogflags.Init(packageFlags)\n}\n",
    )
    .unwrap();
    let options = tree.join(OPTIONS);
    let text = std::fs::read_to_string(&options).unwrap();
    std::fs::write(&options, text.replace("\"one-line\"", "\"renamed\"")).unwrap();
    let previous = tree.join("previous-with-one-line.rs");
    std::fs::write(
        &previous,
        "pub const BOOL_FLAGS: &[&str] = &[\n    \"one-line\", // cmd/kubelet/app/options/options.go\n];\n",
    )
    .unwrap();
    let got = run(tree, &previous);
    let find = |name: &str| got.iter().find(|(n, _)| n == name).map(|(_, s)| s.as_str());
    assert_eq!(find("skip-headers"), None, "{got:?}");
    assert_eq!(
        find("logtostderr"),
        Some("cmd/kubelet/app/options/globalflags.go")
    );
    assert_eq!(find("one-line"), Some("removed"));
    assert_eq!(find("renamed"), Some(OPTIONS));
    assert_eq!(find("allow-privileged"), None, "not in this previous list");
}

#[test]
fn refuses_a_directory_that_is_no_kubernetes_checkout() {
    let dir = scratch_dir();
    let out = Command::new("bash")
        .arg(repo().join("src/node/kubelet/gen-bool-flags.sh"))
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("give a kubernetes/kubernetes checkout"),
        "{err}"
    );
}
