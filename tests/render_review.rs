//! What a reviewer sees in Git after a re-render: a label, taint or rule
//! change in words in the diff of the rendered files (the summary comment
//! of the labels MachineConfig), which the MCO's own code renders exactly
//! as the bare manifests; and the user's own YAML (quoting, flow style,
//! indentation, comments) kept byte for byte outside what render owns.

use crate::render_gitops::{GPU_FILES, kustomization_resources, names_in, static_elf};
use crate::support::{bin, is_root, mco, scratch_dir, skipped, stderr};

use std::path::Path;
use std::process::{Command, Output};

use kubelet_labeler::cli::render::RENDERED_BY;
use kubelet_labeler::cli::render::arch::Arch;

const LABELS_MC: &str = "50-worker-gpu-kubelet-labeler-labels.yaml";

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

/// A NodeFeatureRule with one rule `nvidia`: a label, a taint, and the
/// vendors it matches.
fn rule_file(dir: &Path, name: &str, label: &str, vendors: &str) -> String {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!(
            "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata:\n  name: gpu\n\
             spec:\n  rules:\n  - name: nvidia\n    labels:\n      nvidia.com/gpu.present: \"{label}\"\n\
             \x20   taints:\n    - key: nvidia.com/gpu\n      value: \"true\"\n      effect: NoSchedule\n\
             \x20   matchFeatures:\n    - feature: pci.device\n      matchExpressions:\n\
             \x20       vendor: {{op: In, value: [{vendors}]}}\n"
        ),
    )
    .unwrap();
    p.display().to_string()
}

/// `text` without the comment lines it starts with: the manifest as it was
/// before render wrote a summary above it.
fn without_head_comments(text: &str) -> String {
    let mut lines = text.split_inclusive('\n').peekable();
    while lines.next_if(|l| l.starts_with('#')).is_some() {}
    lines.collect()
}

/// (lines only in `old`, lines only in `new`): what a line diff shows.
fn line_diff(old: &str, new: &str) -> (Vec<String>, Vec<String>) {
    let only = |a: &str, b: &str| -> Vec<String> {
        a.lines()
            .filter(|l| !b.lines().any(|m| m == *l))
            .map(str::to_string)
            .collect()
    };
    (only(old, new), only(new, old))
}

#[test]
fn a_label_taint_or_rule_change_reads_in_words_in_the_diff() {
    let dir = scratch_dir();
    let d = dir.path();
    let w = static_elf(d, Arch::X86_64);
    let out = d.join("gitops");
    let r1 = rule_file(d, "r1.yaml", "true", "\"10de\"");
    let r2 = rule_file(d, "r2.yaml", "yes", "\"10de\", \"1002\"");
    let v1 = [
        "--pool",
        "worker-gpu",
        "--label",
        "example.com/team=ml",
        "--taint",
        "example.com/dedicated=gpu:NoSchedule",
        "--rules",
        &r1,
    ];
    let o = render_into(&w, &v1, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let old = std::fs::read_to_string(out.join(LABELS_MC)).unwrap();
    // Again, unchanged: the same bytes, and said so.
    let o = render_into(&w, &v1, &out);
    assert!(
        stderr(&o).contains(&format!("unchanged {}", out.join(LABELS_MC).display())),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(out.join(LABELS_MC)).unwrap(), old);

    let v2 = [
        "--pool",
        "worker-gpu",
        "--label",
        "example.com/team=ai",
        "--taint",
        "example.com/dedicated=gpu:NoExecute",
        "--rules",
        &r2,
        "--force",
    ];
    let o = render_into(&w, &v2, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let new = std::fs::read_to_string(out.join(LABELS_MC)).unwrap();
    let (removed, added) = line_diff(&old, &new);
    let shows = |side: &[String], what: &str| {
        assert!(
            side.iter().any(|l| l.starts_with('#') && l.contains(what)),
            "{what:?} not in the diff's comment lines {side:#?}"
        )
    };
    shows(&removed, "label example.com/team=ml");
    shows(&added, "label example.com/team=ai");
    shows(&removed, "taint example.com/dedicated=gpu:NoSchedule");
    shows(&added, "taint example.com/dedicated=gpu:NoExecute");
    shows(
        &removed,
        "rule nvidia: labels nvidia.com/gpu.present=true; taints nvidia.com/gpu=true:NoSchedule; \
         when pci.device {vendor In [10de]}",
    );
    shows(&added, "rule nvidia: labels nvidia.com/gpu.present=yes");
    shows(&added, "vendor In [10de, 1002]");
    // What did not change is not in the diff.
    for (l, _) in [(&removed, 0), (&added, 1)] {
        assert!(
            !l.iter()
                .any(|l| l.contains("label node.kubernetes.io/worker-gpu=")),
            "{l:#?}"
        );
    }
}

/// The summary is comments: the MCO's own code decodes the manifests with
/// it and renders every pool exactly as without it (the rendered configs'
/// names are hashes of their contents).
#[test]
fn the_summary_changes_nothing_the_mco_renders() {
    if !is_root() {
        skipped::skipped("the MCO oracle needs root (it chroots)");
        return;
    }
    let Some((oracle, root)) = mco::oracle() else {
        return;
    };
    let dir = scratch_dir();
    let d = dir.path();
    let w = static_elf(d, Arch::X86_64);
    let rules = rule_file(d, "r.yaml", "true", "\"10de\"");
    let after = d.join("after");
    let o = render_into(
        &w,
        &[
            "--pool",
            "worker-gpu",
            "--label",
            "example.com/team=ml",
            "--taint",
            "example.com/dedicated=gpu:NoSchedule",
            "--rules",
            &rules,
        ],
        &after,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let policy = after.join("cluster-wide/machineconfiguration-worker-gpu.yaml");
    let before = d.join("before");
    std::fs::create_dir(&before).unwrap();
    for e in std::fs::read_dir(&after).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            let text = std::fs::read_to_string(&p).unwrap();
            std::fs::write(
                before.join(p.file_name().unwrap()),
                without_head_comments(&text),
            )
            .unwrap();
        }
    }
    let labels = std::fs::read_to_string(after.join(LABELS_MC)).unwrap();
    assert!(labels.starts_with("# kubelet-labeler: "), "{labels}");
    assert_ne!(
        labels,
        std::fs::read_to_string(before.join(LABELS_MC)).unwrap()
    );
    let run = |manifests: &Path| -> serde_json::Value {
        let out = Command::new(&oracle)
            .arg("-mco-root")
            .arg(&root)
            .arg("-manifests")
            .arg(manifests)
            .arg("-policy")
            .arg(&policy)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(v["summary"]["ok"], true, "{}", v["summary"]);
        v
    };
    let (a, b) = (run(&after), run(&before));
    for key in [
        "renderedConfigs",
        "installTimeRenderedConfigs",
        "nodeLabels",
    ] {
        assert_eq!(a[key], b[key], "{key}");
    }
    assert!(a["renderedConfigs"]["worker-gpu"].is_string(), "{a}");
}

/// The user's own style in files render shares with them: quoting, flow
/// mappings and lists, unusual indentation and comments stay byte for byte;
/// only the lines of what render owns and changes are rewritten.
#[test]
fn a_re_render_keeps_the_users_yaml_style() {
    let dir = scratch_dir();
    let d = dir.path();
    let w = static_elf(d, Arch::X86_64);
    let out = d.join("gitops");
    let o = render_into(&w, &["--pool", "worker-gpu"], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let mcp = out.join("machineconfigpool-worker-gpu.yaml");
    let kust = out.join("kustomization.yaml");
    let pool = |selector: &str| {
        format!(
            "# the GPU pool, TICKET-1\n\
             apiVersion: machineconfiguration.openshift.io/v1\n\
             kind: MachineConfigPool\n\
             metadata:\n  name: 'worker-gpu'\n  annotations: {{kubelet-labeler/rendered-for: worker-gpu, \
             kubelet-labeler/rendered-by: '{RENDERED_BY}', argocd.argoproj.io/sync-wave: '5'}}\n\
             spec:\n    maxUnavailable: 1   # one node at a time\n\
             \x20   machineConfigSelector:\n        matchExpressions:\n\
             \x20           -   key: machineconfiguration.openshift.io/role\n\
             \x20               operator: In\n                values: [worker, 'worker-gpu']\n\
             \x20   nodeSelector:\n        matchLabels:\n            {selector}\n\
             \x20   paused: true\n"
        )
    };
    std::fs::write(&mcp, pool("node.kubernetes.io/worker-gpu: ''")).unwrap();
    std::fs::write(out.join("app.yaml"), "kind: ConfigMap\n").unwrap();
    let k = "# the cluster's GitOps\n\
             apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             resources:\n    - ./app.yaml    # the app\n\
             \x20   - 50-worker-gpu-kubelet-labeler-wrapper.yaml\n\
             \x20   - 50-worker-gpu-kubelet-labeler-labels.yaml\n\
             \x20   - 'machineconfigpool-worker-gpu.yaml'\n\
             commonAnnotations: {owner: 'gpu-team'}\n";
    std::fs::write(&kust, k).unwrap();

    // The same render again: nothing of the user's changes.
    let o = render_into(&w, &["--pool", "worker-gpu"], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&mcp).unwrap(),
        pool("node.kubernetes.io/worker-gpu: ''")
    );
    assert_eq!(std::fs::read_to_string(&kust).unwrap(), k);

    // Another pool label: only the selector's line changes.
    let o = render_into(
        &w,
        &[
            "--pool",
            "worker-gpu",
            "--pool-label",
            "example.com/gpu=true",
            "--force",
        ],
        &out,
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("dropped"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&mcp).unwrap(),
        pool("example.com/gpu: \"true\"")
    );
    assert_eq!(std::fs::read_to_string(&kust).unwrap(), k);

    // A second pool: its files are listed after the user's entries, in
    // their indentation; the comments and flow mapping stay, and no
    // --force is needed.
    let o = render_into(&w, &["--pool", "worker-pi"], &out);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(&kust).unwrap(),
        k.replace(
            "commonAnnotations",
            "    - 50-worker-pi-kubelet-labeler-wrapper.yaml\n    \
             - 50-worker-pi-kubelet-labeler-labels.yaml\n    \
             - machineconfigpool-worker-pi.yaml\ncommonAnnotations"
        )
    );
}

/// The user's own kustomization with comments: a pool's files are added
/// in place, the comments kept, without --force. Where the list cannot be
/// edited in place (a flow list with a comment on its line), the rewrite
/// that would drop the comment is refused naming the line, and changes
/// nothing; with --force the pool's files are added after the user's
/// entries, and stderr says the comment went.
#[test]
fn a_commented_kustomization_keeps_its_comments() {
    let dir = scratch_dir();
    let w = static_elf(dir.path(), Arch::X86_64);
    let out = dir.path().join("gitops");
    std::fs::create_dir(&out).unwrap();
    let kust = out.join("kustomization.yaml");
    let text = "# the cluster's GitOps\nresources:\n- app.yaml # the app\n";
    std::fs::write(&kust, text).unwrap();
    std::fs::write(
        out.join("app.yaml"),
        "kind: ConfigMap\nmetadata:\n  name: app\n",
    )
    .unwrap();
    let o = render_into(&w, &["--pool", "worker-gpu"], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let listed: String = GPU_FILES.iter().map(|f| format!("- {f}\n")).collect();
    assert_eq!(
        std::fs::read_to_string(&kust).unwrap(),
        format!("{text}{listed}")
    );

    let out = dir.path().join("flow");
    std::fs::create_dir(&out).unwrap();
    let kust = out.join("kustomization.yaml");
    let text = "# the cluster's GitOps\nresources: [app.yaml] # the app\n";
    std::fs::write(&kust, text).unwrap();
    std::fs::write(
        out.join("app.yaml"),
        "kind: ConfigMap\nmetadata:\n  name: app\n",
    )
    .unwrap();
    let refused = render_into(&w, &["--pool", "worker-gpu"], &out);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "replace {} (its resources), dropping the YAML comment on line 2",
            kust.display()
        )),
        "{err}"
    );
    assert_eq!(names_in(&out), ["app.yaml", "kustomization.yaml"]);
    assert_eq!(std::fs::read_to_string(&kust).unwrap(), text);
    let forced = render_into(&w, &["--pool", "worker-gpu", "--force"], &out);
    let err = stderr(&forced);
    assert!(forced.status.success(), "{err}");
    assert!(err.contains("dropped the YAML comment on line 2"), "{err}");
    assert!(
        std::fs::read_to_string(&kust)
            .unwrap()
            .starts_with("# the cluster's GitOps\n")
    );
    let mut want = vec!["app.yaml".to_string()];
    want.extend(GPU_FILES.iter().map(|s| s.to_string()));
    assert_eq!(kustomization_resources(&out), want);
}
