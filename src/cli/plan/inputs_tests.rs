//! Unit tests of `inputs` (a file of their own: `inputs.rs` stays under
//! 1,000 lines).

use super::*;
use crate::cli::plan::tree::ManifestFile;
use std::process::Command;

fn objects(text: &str) -> Result<Vec<Value>> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    std::fs::write(&p, text).unwrap();
    let mut out = Vec::new();
    read_fleet_file(&p, None, &mut |v| {
        out.push(v);
        Ok(())
    })?;
    Ok(out)
}

#[test]
fn lists_and_single_objects_in_json_and_yaml() {
    let json = r#"{"apiVersion":"v1","items":[{"kind":"Node","metadata":{"name":"a"}},{"kind":"Node","metadata":{"name":"b"}}],"kind":"List"}"#;
    let got = objects(json).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1]["metadata"]["name"], "b");
    let got = objects(r#"{"kind":"Node","metadata":{"name":"a"}}"#).unwrap();
    assert_eq!(got[0]["kind"], "Node");
    let yaml = "kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n---\nkind: Node\nmetadata: {name: c}\n";
    assert_eq!(objects(yaml).unwrap().len(), 2);
}

/// The splitter follows strings (escaped quotes, brackets inside
/// them), an `items` key only at the top, and hands over each item
/// and the rest as serde_json reads the whole.
#[test]
fn items_are_split_as_json_reads_them() {
    let text = r#" { "kind" : "items", "x": ["items", {"items": [1]}],
      "items" : [ {"kind":"Node","metadata":{"name":"a\"]}[,"}},
                  {"kind":"Node","items":[{"y":"\\"}],"metadata":{"name":"b"}} ] ,
      "metadata": {"resourceVersion": "1"} } "#;
    let got = objects(text).unwrap();
    let whole: Value = serde_json::from_str(text).unwrap();
    assert_eq!(got, whole["items"].as_array().unwrap().clone());
    // Escapes across the reader's 8 KiB buffers.
    let long = format!(
        r#"{{"items":[{{"kind":"Node","a":"{}"}},{{"kind":"Node"}}]}}"#,
        "\\\"]\\\\".repeat(5000)
    );
    let got = objects(&long).unwrap();
    let whole: Value = serde_json::from_str(&long).unwrap();
    assert_eq!(got, whole["items"].as_array().unwrap().clone());
    let single = r#"{"kind":"Node","metadata":{"name":"s"},"spec":{"a":[{"b":"]"}]}}"#;
    assert_eq!(
        objects(single).unwrap(),
        vec![serde_json::from_str::<Value>(single).unwrap()]
    );
    for bad in [
        r#"{"items":[{"a":1}]}{"#,
        r#"{"items":[{"a":1]}"#,
        r#"{"a":"b"}}"#,
    ] {
        assert!(objects(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fleet.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let p = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(read_fleet_file(&p, None, &mut |_| Ok(())).map_err(|e| e.to_string()));
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(10));
    if got.is_err() {
        // Let the blocked open return before failing.
        let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
    }
    let err = got.expect("the open waited for a writer").unwrap_err();
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn truncated_and_oversized_exports_are_refused() {
    let e = objects(r#"{"kind":"List","items":[{"kind":"Node","metadata":{"na"#).unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    let big = format!(
        r#"{{"kind":"List","items":[{{"kind":"Node","x":"{}"}}]}}"#,
        "a".repeat((OBJECT_MAX_BYTES + 10) as usize)
    );
    let e = objects(&big).unwrap_err();
    assert!(e.to_string().contains("larger than 16 MiB"), "{e}");
    // Many items, each small, are fine however large the whole.
    let many: Vec<String> = (0..2000)
        .map(|i| format!(r#"{{"kind":"Node","x":"{}","n":{i}}}"#, "b".repeat(10_000)))
        .collect();
    let text = format!(r#"{{"kind":"List","items":[{}]}}"#, many.join(","));
    assert!(text.len() as u64 > OBJECT_MAX_BYTES);
    assert_eq!(objects(&text).unwrap().len(), 2000);
}

/// Review 14 r14b F4: objects the MCO renders from are kept for the
/// change check, by API group (a core Node is not the cluster's).
#[test]
fn objects_the_mco_renders_from_are_kept() {
    let m = ManifestFile {
        name: "x.yaml".into(),
        dir: String::new(),
        file: "x.yaml".into(),
        text: String::new(),
    };
    let mut r = Render::default();
    for doc in [
        serde_json::json!({"apiVersion": "config.openshift.io/v1", "kind": "Node",
            "metadata": {"name": "cluster"}, "spec": {"workerLatencyProfile": "Medium"}}),
        serde_json::json!({"apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet",
            "metadata": {"name": "m"}, "spec": {}}),
        serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
        // Review 15 r15c F2: the Node Tuning Operator's.
        serde_json::json!({"apiVersion": "performance.openshift.io/v2", "kind": "PerformanceProfile",
            "metadata": {"name": "rt"}, "spec": {"additionalKernelArgs": ["nosmt"]}}),
        serde_json::json!({"apiVersion": "tuned.openshift.io/v1", "kind": "Tuned",
            "metadata": {"name": "t"}, "spec": {}}),
    ] {
        add_render_object(doc, &m, &mut r).unwrap();
    }
    assert_eq!(r.not_laid_out.len(), 4);
}

/// Review 25 r25a F1: a policy file's field manager follows from how the
/// tree is applied, not from its name: one the applier reaches (listed,
/// or in a tree without a kustomization) is applied client-side, with
/// none of its own, whatever it is called; only one left out (render's
/// `cluster-wide/`) has render's, when named as render names it.
#[test]
fn a_policy_file_s_field_manager_follows_from_how_the_tree_is_applied() {
    let mc = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
              metadata:\n  name: 50-x\nspec: {}\n";
    let policy = "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\n\
                  metadata:\n  name: cluster\nspec:\n  nodeDisruptionPolicy:\n    files: []\n";
    let ours = "machineconfiguration-worker-gpu.yaml";
    let managers = |files: &[&str], listed: Option<&[&str]>| {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("mc.yaml", mc);
        for f in files {
            write(f, policy);
        }
        if let Some(listed) = listed {
            let resources: String = ["mc.yaml"]
                .iter()
                .chain(listed)
                .map(|r| format!("- {r}\n"))
                .collect();
            write("kustomization.yaml", &format!("resources:\n{resources}"));
        }
        let r = read_render(dir.path().to_str().unwrap()).unwrap();
        let of = |v: &[crate::cli::plan::policy::PolicyFile]| -> Vec<Option<String>> {
            v.iter().map(|p| p.manager.clone()).collect()
        };
        (of(&r.policies), of(&r.policies_left_out))
    };
    let render_s = Some("kubelet-labeler-worker-gpu".to_string());
    // Listed, under render's name or another: client-side, alike.
    for name in [ours, "machineconfiguration-gpu.yaml", "gpu-policy.yaml"] {
        assert_eq!(
            managers(&[name], Some(&[name])),
            (vec![None], vec![]),
            "{name}"
        );
        // In a tree without a kustomization (`oc apply -f`), too.
        assert_eq!(managers(&[name], None), (vec![None], vec![]), "{name}");
    }
    // Left out: render's own is applied by hand with render's manager.
    let left_out = format!("cluster-wide/{ours}");
    assert_eq!(
        managers(&[&left_out], Some(&[])),
        (vec![], vec![render_s.clone()])
    );
    assert_eq!(managers(&[ours], Some(&[])), (vec![], vec![render_s]));
    assert_eq!(
        managers(&["cluster-wide/gpu-policy.yaml"], Some(&[])),
        (vec![], vec![None])
    );
}

#[test]
fn the_cluster_s_policy_applied_from_two_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let policy = "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\n\
                  metadata:\n  name: cluster\nspec:\n  nodeDisruptionPolicy:\n    files: []\n";
    std::fs::write(
        dir.path().join("mc.yaml"),
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
         metadata:\n  name: 50-x\nspec: {}\n",
    )
    .unwrap();
    for f in ["a-policy.yaml", "b-policy.yaml"] {
        std::fs::write(dir.path().join(f), policy).unwrap();
    }
    let e = read_render(dir.path().to_str().unwrap()).unwrap_err();
    let e = format!("{e:#}");
    assert!(
        e.contains("given more than once where the apply reaches it")
            && e.contains("a-policy.yaml")
            && e.contains("b-policy.yaml"),
        "{e}"
    );
    // One of them left out of the kustomization: one applied, one by hand.
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        "resources:\n- mc.yaml\n- a-policy.yaml\n",
    )
    .unwrap();
    assert!(read_render(dir.path().to_str().unwrap()).is_ok());
}
