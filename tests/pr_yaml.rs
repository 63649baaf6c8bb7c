//! A pull request's YAML that `kubectl apply -f`, kustomize and the MCO
//! read otherwise than plan and explain would: refused by both, naming the
//! file and the line. Each PR is review 9's (rcli): on 553e238 plan said the
//! GPU nodes keep their taint (no change) while the MCO served them an env
//! drop-in without it (F1, F1b, F2, F7) or `kubectl kustomize` patched it
//! away (F1c). Review 10's (r10b) F2: a plain `on` (a boolean to kubectl
//! and the MCO, a string to kustomize) and a local tag were read one way.

use crate::plan::{plan, render};
use crate::support::{bin, relist_kustomization, repo, scratch_dir, stderr};

use std::path::Path;

const LABELS: &str = "50-worker-gpu-kubelet-labeler-labels.yaml";
const TAINT: &str = "nvidia.com/gpu=present:NoSchedule";

/// An env drop-in without the taint's line.
const WITHOUT: &str = "data:,%5BService%5D%0A";

/// `text` (a labels MachineConfig) with `line` added as a key of the env
/// drop-in's `contents:`, after its `source:` (a block scalar over several
/// lines), and the added line's number.
fn after_env_source(text: &str, line: &str) -> (String, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let taints = lines
        .iter()
        .position(|l| l.contains("FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS"))
        .expect("the env drop-in's source");
    let source = (0..=taints)
        .rev()
        .find(|&i| lines[i].trim_start().starts_with("source:"))
        .unwrap();
    let indent = lines[source].len() - lines[source].trim_start().len();
    let end = (source + 1..lines.len())
        .find(|&i| lines[i].len() - lines[i].trim_start().len() <= indent)
        .unwrap_or(lines.len());
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    // What follows an LS is a line of its own to go-yaml: indented alike.
    let ind = &lines[source][..indent];
    let line = line.replace('\u{2028}', &format!("\u{2028}{ind}"));
    out.insert(end, format!("{ind}{line}"));
    (out.join("\n") + "\n", end + 1)
}

/// `explain --machineconfig` of a pool's rendered config (the MCO's
/// kubelet.service, `rendered`) and the directory `dir`.
fn explain(rendered: &Path, dir: &Path) -> std::process::Output {
    bin()
        .args(["explain", "--json", "--machineconfig"])
        .arg(rendered)
        .arg("--machineconfig")
        .arg(dir)
        .output()
        .unwrap()
}

/// The MCO's kubelet part of a rendered config, written under `dir`.
fn rendered_config(dir: &Path) -> std::path::PathBuf {
    let unit = "[Unit]\nDescription=Kubernetes Kubelet\n\n[Service]\nExecStart=/usr/bin/kubelet \\\n    \
                --config=/etc/kubernetes/kubelet.conf \\\n    --node-labels=${CUSTOM_KUBELET_LABELS}\n\n\
                [Install]\nWantedBy=multi-user.target\n";
    let mc = crate::support::mco::mco_machineconfig(unit);
    let path = dir.join("rendered-worker.yaml");
    std::fs::write(
        &path,
        kubelet_labeler::cli::render::machineconfig::to_yaml(&mc).unwrap(),
    )
    .unwrap();
    path
}

#[test]
fn yaml_kubectl_reads_otherwise_is_refused_by_plan_and_explain() {
    let tmp = scratch_dir();
    let d = tmp.path();
    let taint = ["--taint", TAINT];
    let base = d.join("base");
    render(&base, &taint);
    let notaint = d.join("notaint");
    render(&notaint, &[]);
    let fleet = repo().join("examples/fleet/fleet.json");
    // The render itself is read (a change for the fleet: exit 1).
    let o = plan(&base, &base, &fleet, &[]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    // explain reads the render, and the taint in it.
    let rendered = rendered_config(d);
    let o = explain(&rendered, &base);
    assert!(
        crate::support::stdout(&o).contains(TAINT),
        "{}{}",
        crate::support::stdout(&o),
        stderr(&o)
    );
    let labels = std::fs::read_to_string(base.join(LABELS)).unwrap();
    let (comment, comment_line) = after_env_source(
        &labels,
        &format!("# rendered by kubelet-labeler; do not edit\u{2028}source: \"{WITHOUT}\""),
    );
    let (merge, merge_line) = after_env_source(&labels, &format!("<<: {{source: \"{WITHOUT}\"}}"));
    let dropin = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  \
         name: 60-worker-gpu-debug\n  labels:\n    machineconfiguration.openshift.io/role: \
         worker-gpu\nspec:\n  config:\n    ignition:\n      version: 3.4.0\n    systemd:\n      \
         units:\n      - name: kubelet.service\n        dropins:\n        - name: 95-debug.conf\n          \
         contents: |\n            [Service]\n            X-Note=verbose logging for debugging\u{85}            \
         Environment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=\n"
        .to_string();
    // A MachineConfig of the pool's with one unit, whose lines follow.
    let unit_mc = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  \
         name: 60-worker-gpu-mask\n  labels:\n    machineconfiguration.openshift.io/role: \
         worker-gpu\nspec:\n  config:\n    ignition:\n      version: 3.4.0\n    systemd:\n      \
         units:\n";
    let kust = std::fs::read_to_string(base.join("kustomization.yaml")).unwrap();
    let patch = format!(
        "# applied with oc apply -k\u{2028}patches: [{{target: {{kind: MachineConfig, name: \
         50-worker-gpu-kubelet-labeler-labels}}, patch: '[{{\"op\":\"replace\",\"path\":\
         \"/spec/config/storage/files/0/contents/source\",\"value\":\"{WITHOUT}\"}}]'}}]\n"
    );
    let notaint_labels = std::fs::read_to_string(notaint.join(LABELS)).unwrap();
    let second = labels.replace(
        "name: 50-worker-gpu-kubelet-labeler-labels\n",
        "name: 50-worker-gpu-kubelet-labeler-labels-v2\n",
    );
    // The first line of the second document (after the render's comment).
    let docend_line = notaint_labels.lines().count()
        + 2
        + second.lines().take_while(|l| l.starts_with('#')).count();
    // (finding, file, its text, the line named, the words).
    let cases: Vec<(&str, &str, String, usize, &str)> = vec![
        (
            "F1",
            "60-worker-gpu-debug.yaml",
            dropin,
            18,
            "a U+0085 (NEXT LINE) character",
        ),
        (
            "F1b",
            LABELS,
            comment,
            comment_line,
            "a U+2028 (LINE SEPARATOR) character",
        ),
        (
            "F1c",
            "kustomization.yaml",
            format!("{kust}{patch}"),
            kust.lines().count() + 1,
            "a U+2028 (LINE SEPARATOR) character",
        ),
        (
            "F2",
            LABELS,
            format!("{notaint_labels}...\n{second}"),
            docend_line,
            "content after the document end `...`",
        ),
        ("F7", LABELS, merge, merge_line, "a `<<` merge key"),
        // Review 10 (r10b) F2: a boolean to `kubectl apply -f` and the MCO,
        // the string "on" to kustomize (which the MCO then refuses).
        (
            "r10b-F2",
            "60-worker-gpu-mask.yaml",
            format!("{unit_mc}      - name: debug.service\n        mask: on\n"),
            14,
            "the unquoted value `on` is the boolean true",
        ),
        // The string "420" to both Go readers, the number 420 on 9d154a5.
        (
            "r10b-F2-tag",
            "60-worker-gpu-mask.yaml",
            format!("{unit_mc}      - name: debug.service\n        contents: !unit 420\n"),
            14,
            "the tag `!unit` on the value \"420\"",
        ),
    ];
    let mut bad = Vec::new();
    for (finding, file, text, line, words) in cases {
        let pr = d.join(format!("pr-{finding}"));
        render(&pr, &taint);
        std::fs::write(pr.join(file), &text).unwrap();
        if file != LABELS && file != "kustomization.yaml" {
            relist_kustomization(&pr, &[file], &[]);
        }
        let want = format!("line {line}: {words}");
        let o = plan(&base, &pr, &fleet, &["--format", "json"]);
        if o.status.code() != Some(2) || !stderr(&o).contains(&want) || !stderr(&o).contains(file) {
            bad.push(format!(
                "{finding}: plan: want {file} and {want:?}: {}",
                stderr(&o)
            ));
        }
        let o = explain(&rendered, &pr);
        if o.status.success() || !stderr(&o).contains(&want) || !stderr(&o).contains(file) {
            bad.push(format!(
                "{finding}: explain: want {file} and {want:?}: {}",
                stderr(&o)
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// A re-render into a directory whose kustomization hides a key after a
/// U+2028 (F1c's) refuses to edit it, naming the file and the line: the
/// same render into it (`--force`) succeeded on 553e238, keeping the
/// hidden key.
#[test]
fn rerender_refuses_a_kustomization_kubectl_reads_otherwise() {
    let tmp = scratch_dir();
    let dir = tmp.path().join("gitops");
    render(&dir, &[]);
    let k = dir.join("kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    let line = text.lines().count() + 1;
    let bad = format!("{text}# applied with oc apply -k\u{2028}patches: []\n");
    std::fs::write(&k, &bad).unwrap();
    let o = bin()
        .args(["render", "machineconfig", "--pool", "worker-gpu"])
        .args([
            "--label",
            "node.kubernetes.io/worker-gpu=",
            "--taint",
            TAINT,
        ])
        .arg("--wrapper")
        .arg(crate::support::run_cli::stand_in_wrapper())
        .args(["--force", "--output-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("kustomization.yaml")
            && stderr(&o).contains(&format!("line {line}: a U+2028 (LINE SEPARATOR)")),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&k).unwrap(), bad);
}
