//! The node disruption policy `render machineconfig` writes: the cluster's
//! one `MachineConfiguration`, kept where only a deliberate, server-side
//! apply reaches it, and what stderr says about applying it.

use crate::render_gitops::{kustomization_resources, names_in, static_elf};
use crate::support::{bin, scratch_dir, stderr};

use std::path::Path;

use kubelet_labeler::cli::render::arch::Arch;
use serde_json::Value;

/// What `oc apply -f DIR` applies: every document of DIR's own `.json`,
/// `.yaml` and `.yml` files (kubectl's file visitor; a subdirectory only
/// with `-R`).
pub(crate) fn plain_apply(dir: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for n in names_in(dir) {
        let p = dir.join(&n);
        if p.is_file() && [".json", ".yaml", ".yml"].iter().any(|e| n.ends_with(e)) {
            let text = std::fs::read_to_string(&p).unwrap();
            out.extend(serde_saphyr::from_multiple::<Value>(&text).unwrap());
        }
    }
    out
}

/// Issue 33 items 2 and 4: the cluster's one `MachineConfiguration` is
/// written where neither a plain `oc apply -f` on the pool's directory nor
/// its kustomization reaches it (a client-side apply of it replaced other
/// teams' policy entries), and stderr says how to apply it, server-side,
/// before the MachineConfigs: when a render writes it, and when a render
/// changes it (a new architecture's wrapper adds a path), not when it
/// stays. An earlier version's policy beside the manifests is moved (with
/// `--force`), another pool's is named; a link at the directory is refused.
#[test]
fn the_cluster_wide_policy_is_out_of_a_plain_apply_and_stderr_says_how_to_apply_it() {
    let dir = scratch_dir();
    let x86 = static_elf(dir.path(), Arch::X86_64);
    let arm = static_elf(dir.path(), Arch::Aarch64);
    let out = dir.path().join("gitops");
    let render = |wrappers: &[&Path], extra: &[&str]| {
        let mut c = bin();
        c.args(["render", "machineconfig", "--pool", "worker-gpu"]);
        for w in wrappers {
            c.arg("--wrapper").arg(w);
        }
        c.args(extra)
            .arg("--output-dir")
            .arg(&out)
            .output()
            .unwrap()
    };
    let policy = out.join("cluster-wide/machineconfiguration-worker-gpu.yaml");
    let command = format!(
        "oc apply --server-side --field-manager=kubelet-labeler-worker-gpu -f {}",
        policy.display()
    );
    let o = render(&[&x86], &[]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let written: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&policy).unwrap()).unwrap();
    assert_eq!(written["kind"], "MachineConfiguration");
    assert_eq!(written["metadata"]["name"], "cluster");
    let applied = plain_apply(&out);
    assert!(applied.iter().any(|o| o["kind"] == "MachineConfig"));
    assert!(
        applied.iter().all(|o| o["kind"] != "MachineConfiguration"),
        "a plain apply of the directory reaches the cluster-wide policy"
    );
    assert!(
        kustomization_resources(&out)
            .iter()
            .all(|r| !r.contains("cluster-wide") && !r.contains("machineconfiguration-")),
        "{:?}",
        kustomization_resources(&out)
    );
    assert!(
        err.contains("wrote the cluster-wide node disruption policy")
            && err.contains("apply it before the MachineConfigs")
            && err.trim_end().ends_with(&command),
        "{err}"
    );

    // Rendered again as it is: nothing to apply, nothing said.
    let o = render(&[&x86], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("disruption policy"), "{}", stderr(&o));

    // A new architecture adds its wrapper's path to the policy: named in
    // the refusal, and with --force said with the command.
    let o = render(&[&x86, &arm], &[]);
    assert!(
        !o.status.success() && stderr(&o).contains(&format!("replace {}", policy.display())),
        "{}",
        stderr(&o)
    );
    let o = render(&[&x86, &arm], &["--force"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("the cluster-wide node disruption policy changed")
            && err.contains("nodes of the pool reboot for files it does not name yet")
            && err.trim_end().ends_with(&command),
        "{err}"
    );
    assert!(
        std::fs::read_to_string(&policy)
            .unwrap()
            .contains("/usr/local/bin/kubelet-labeler-wrapper.aarch64")
    );

    // An earlier version's layout: the policies beside the manifests.
    let text = std::fs::read_to_string(&policy).unwrap();
    let legacy = out.join("machineconfiguration-worker-gpu.yaml");
    let other = out.join("machineconfiguration-worker-pi.yaml");
    std::fs::write(&legacy, &text).unwrap();
    std::fs::write(&other, &text).unwrap();
    std::fs::remove_file(&policy).unwrap();
    let o = render(&[&x86, &arm], &[]);
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains(&format!(
                "remove {} (this pool's cluster-wide node disruption policy, where an earlier \
                 version wrote it",
                legacy.display()
            )),
        "{err}"
    );
    let o = render(&[&x86, &arm], &["--force"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!legacy.exists() && policy.is_file());
    assert!(
        err.contains(&format!(
            "left {} (worker-pi's cluster-wide node disruption policy",
            other.display()
        )) && err.contains("render worker-pi again with --force"),
        "{err}"
    );
    std::fs::remove_file(&other).unwrap();
    assert!(
        plain_apply(&out)
            .iter()
            .all(|o| o["kind"] != "MachineConfiguration")
    );

    // The directory as a link out (issue 32 item 15's class): refused.
    std::fs::remove_dir_all(out.join("cluster-wide")).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("cluster-wide")).unwrap();
    let o = render(&[&x86, &arm], &["--force"]);
    assert!(
        !o.status.success() && stderr(&o).contains("cluster-wide is a symlink"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
