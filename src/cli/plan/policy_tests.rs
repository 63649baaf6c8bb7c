//! Unit tests of `policy` (a file of their own: `policy.rs` stays under
//! 1,000 lines).

use super::*;

fn file(policy: &DisruptionPolicy, path: &str) -> Disruption {
    policy.cost(&Changed::File(path.into())).0
}

#[test]
fn defaults_by_release() {
    let on = |minor: Option<u32>, path: &str| {
        let (policy, _) = with_defaults(minor, &DisruptionPolicy::default());
        file(&policy, path)
    };
    // The pull secret: nothing; a registries.d file: crio reloads.
    assert_eq!(
        on(Some(30), "/var/lib/kubelet/config.json"),
        Disruption::Nothing
    );
    assert_eq!(
        on(Some(33), "/etc/containers/registries.d/quay.yaml"),
        Disruption::Reload
    );
    // registries.conf: the MCO's Special, a crio reload (and a drain
    // when the change is judged unsafe, by the caller).
    assert_eq!(
        on(Some(33), "/etc/containers/registries.conf"),
        Disruption::Reload
    );
    // /etc/crio/policies from 4.18 on.
    assert_eq!(
        on(Some(30), "/etc/crio/policies/a.json"),
        Disruption::DrainAndReboot
    );
    assert_eq!(
        on(Some(31), "/etc/crio/policies/a.json"),
        Disruption::Reload
    );
    // Credential providers from 4.22 on; unknown release: the oldest.
    let cp = "/etc/kubernetes/credential-providers/ecr.yaml";
    assert_eq!(on(Some(34), cp), Disruption::DrainAndReboot);
    assert_eq!(on(Some(35), cp), Disruption::Restart);
    assert_eq!(on(None, cp), Disruption::DrainAndReboot);
    // Units: by name, the MCO's default from 4.22 on; SSH keys: None.
    let unit = |minor: u32, name: &str| {
        let (policy, _) = with_defaults(Some(minor), &DisruptionPolicy::default());
        policy.cost(&Changed::Unit(name.into())).0
    };
    assert_eq!(unit(35, "iri-registry.service"), Disruption::Restart);
    assert_eq!(unit(34, "iri-registry.service"), Disruption::DrainAndReboot);
    assert_eq!(unit(35, "kdump.service"), Disruption::DrainAndReboot);
    let (policy, _) = with_defaults(Some(33), &DisruptionPolicy::default());
    assert_eq!(policy.cost(&Changed::SshKeys).0, Disruption::Nothing);
}

#[test]
fn the_clusters_entry_replaces_the_default() {
    let over = DisruptionPolicy {
        files: vec![(
            "/etc/containers/policy.json".to_string(),
            vec!["Reboot".to_string()],
        )],
        ..Default::default()
    };
    let (policy, defaults) = with_defaults(Some(33), &over);
    assert_eq!(
        file(&policy, "/etc/containers/policy.json"),
        Disruption::DrainAndReboot
    );
    assert!(!defaults.iter().any(|p| p == "/etc/containers/policy.json"));
    assert!(defaults.iter().any(|p| p == "/var/lib/kubelet/config.json"));
}

/// `FindClosestFilePolicyPathMatch` and `IsSubdirectory` as the MCO
/// has them (review 13: `/` and `""` match no file; the longest path
/// as written wins, exact or not).
#[test]
fn closest_entry_as_the_mco() {
    let p = |entries: &[(&str, &str)]| DisruptionPolicy {
        files: entries
            .iter()
            .map(|(p, a)| (p.to_string(), vec![a.to_string()]))
            .collect(),
        ..Default::default()
    };
    let policy = p(&[("/etc/a.conf", "Restart s.service"), ("/etc/dir", "None")]);
    assert_eq!(file(&policy, "/etc/a.conf"), Disruption::Restart);
    assert_eq!(file(&policy, "/etc/dir/x"), Disruption::Nothing);
    assert_eq!(file(&policy, "/etc/directory"), Disruption::DrainAndReboot);
    assert_eq!(file(&policy, "/etc/b"), Disruption::DrainAndReboot);
    for root in ["/", "", "//"] {
        let policy = p(&[(root, "None")]);
        assert_eq!(
            file(&policy, "/etc/chrony.d/gpu.conf"),
            Disruption::DrainAndReboot,
            "{root:?}"
        );
    }
    // Cleaned before the prefix test; the longest path as written wins.
    let policy = p(&[
        ("/var/lib/kubelet/config.json", "None"),
        ("/var/lib/kubelet/////////////", "Reboot"),
    ]);
    assert_eq!(
        file(&policy, "/var/lib/kubelet/config.json"),
        Disruption::DrainAndReboot
    );
    let policy = p(&[("/etc/./dir/", "None")]);
    assert_eq!(file(&policy, "/etc/dir/x"), Disruption::Nothing);
}

/// The CRD's rules on `spec.nodeDisruptionPolicy` (review 13 F5).
#[test]
fn machineconfiguration_refused_as_its_crd() {
    let read = |ndp: Value| {
        DisruptionPolicy::of_machineconfiguration(
            &serde_json::json!({"spec": {"nodeDisruptionPolicy": ndp}}),
            "m.yaml",
        )
    };
    let f = |actions: Value| serde_json::json!({"files": [{"path": "/etc/x", "actions": actions}]});
    let ok = read(f(serde_json::json!([{"type": "DaemonReload"}, {"type": "Restart", "restart": {"serviceName": "chronyd.service"}}]))).unwrap();
    assert_eq!(ok.files[0].1, ["DaemonReload", "Restart chronyd.service"]);
    for bad in [
        serde_json::json!([{"type": "Restart", "restart": {"serviceName": "chronyd"}}]),
        serde_json::json!([{"type": "Restart"}]),
        serde_json::json!([{"type": "None", "restart": {"serviceName": "a.service"}}]),
        serde_json::json!([{"type": "None"}, {"type": "DaemonReload"}]),
        serde_json::json!([{"type": "Reboot"}, {"type": "Drain"}]),
        serde_json::json!([{"type": "Special"}]),
        serde_json::json!([{"type": "Reload", "reload": {"serviceName": "a b.service"}}]),
        serde_json::json!([{"type": "Reload", "reload": {"serviceName": ".service"}}]),
        serde_json::json!([{"type": "Restart", "restart": {"serviceName": "a.service", "timeout": "3s"}}]),
    ] {
        assert!(read(f(bad.clone())).is_err(), "{bad}");
    }
    let dup = serde_json::json!({"files": [
        {"path": "/etc/x", "actions": [{"type": "None"}]},
        {"path": "/etc/x", "actions": [{"type": "Reboot"}]}]});
    assert!(read(dup).is_err());
    let many: Vec<Value> = (0..51)
        .map(|i| serde_json::json!({"path": format!("/etc/x{i}"), "actions": [{"type": "None"}]}))
        .collect();
    assert!(read(serde_json::json!({"files": many})).is_err());
    assert!(read(serde_json::json!({"unit": []})).is_err());
    assert!(service_name("a.b c.service").is_ok());
    assert!(service_name("kubelet.service").is_ok());
    assert!(service_name("a\\x2d.mount").is_ok());
}

/// Review 13 F9, F11: every MachineConfiguration of a render counts,
/// only `cluster` is read by the MCO, and an entry another field
/// manager set in the cluster makes the server-side apply conflict.
#[test]
fn render_policies_applied_as_server_side_apply_merges_them() {
    let mc = |name: &str, path: &str, ty: &str| {
        serde_json::json!({"metadata": {"name": name}, "spec": {"nodeDisruptionPolicy": {
            "files": [{"path": path, "actions": [{"type": ty}]}]}}})
    };
    let file = |name: &str, doc: Value| PolicyFile {
        name: name.into(),
        manager: Some("kubelet-labeler-worker-gpu".into()),
        doc,
    };
    // Two files: both count.
    let p = applied(
        None,
        &[],
        &[
            file("a.yaml", mc("cluster", "/etc/a", "None")),
            file("b.yaml", mc("cluster", "/etc/b", "Reboot")),
        ],
    )
    .unwrap();
    assert_eq!(p.files.len(), 2);
    // Two in one file; a field beside the policy.
    assert!(
        applied(
            None,
            &[],
            &[
                file("a.yaml", mc("cluster", "/etc/a", "None")),
                file("a.yaml", mc("cluster", "/etc/b", "None")),
            ],
        )
        .is_err()
    );
    let mut loud = mc("cluster", "/etc/a", "None");
    loud["spec"]["logLevel"] = serde_json::json!("Loud");
    assert!(applied(None, &[], &[file("a.yaml", loud)]).is_err());
    // Review 15 r15b F2: metadata the apply fails on or acts on.
    for key in ["resourceVersion", "uid", "ownerReferences", "managedFields"] {
        let mut m = mc("cluster", "/etc/a", "None");
        m["metadata"][key] = serde_json::json!("1");
        assert!(applied(None, &[], &[file("a.yaml", m)]).is_err(), "{key}");
    }
    // Review 14 r14b F2: an entry the file set before and no longer
    // sets is deleted from the cluster's.
    let both = serde_json::json!({"metadata": {"name": "cluster"}, "spec": {"nodeDisruptionPolicy": {
        "files": [{"path": "/etc/a", "actions": [{"type": "None"}]},
                  {"path": "/etc/b", "actions": [{"type": "None"}]}]}}});
    let p = applied(
        Some(&both),
        &[file("a.yaml", both.clone())],
        &[file("a.yaml", mc("cluster", "/etc/a", "None"))],
    )
    .unwrap();
    assert_eq!(p.files, [("/etc/a".to_string(), vec!["None".to_string()])]);
    // Not named cluster: never read.
    assert!(
        applied(
            None,
            &[],
            &[file("a.yaml", mc("gpu-team", "/etc/a", "None"))]
        )
        .is_err()
    );
    // Two files, one path, other actions: the second apply conflicts.
    assert!(
        applied(
            None,
            &[],
            &[
                file("a.yaml", mc("cluster", "/etc/a", "None")),
                file("b.yaml", mc("cluster", "/etc/a", "Reboot")),
            ],
        )
        .is_err()
    );
    // The cluster's entry differs: set by another manager, by ours,
    // or unknown.
    let owned_as = |manager: &str, operation: &str, path: &str, key: &str| {
        let mut c = mc("cluster", path, "Reboot");
        c["metadata"]["managedFields"] = serde_json::json!([{"manager": manager,
            "operation": operation,
            "fieldsV1": {"f:spec": {"f:nodeDisruptionPolicy": {"f:files": {
                key: {".": {}, "f:actions": {}, "f:path": {}}}}}}}]);
        c
    };
    let owned = |manager: &str| owned_as(manager, "Apply", "/etc/a", "k:{\"path\":\"/etc/a\"}");
    let ours = [file("a.yaml", mc("cluster", "/etc/a", "None"))];
    assert!(applied(Some(&owned("kubectl-client-side-apply")), &[], &ours).is_err());
    let p = applied(Some(&owned("kubelet-labeler-worker-gpu")), &[], &ours).unwrap();
    assert_eq!(p.files, [("/etc/a".to_string(), vec!["None".to_string()])]);
    // Review 15 r15b F6: our manager's own `Update` conflicts with its
    // `Apply`; a key as Go's JSON escapes it is the same key.
    let update = owned_as(
        "kubelet-labeler-worker-gpu",
        "Update",
        "/etc/a",
        "k:{\"path\":\"/etc/a\"}",
    );
    assert!(applied(Some(&update), &[], &ours).is_err());
    let go_escaped = owned_as(
        "site-admin",
        "Apply",
        "/etc/a&b<c>.conf",
        "k:{\"path\":\"/etc/a\\u0026b\\u003cc\\u003e.conf\"}",
    );
    let amp = [file("a.yaml", mc("cluster", "/etc/a&b<c>.conf", "None"))];
    assert!(applied(Some(&go_escaped), &[], &amp).is_err());
    assert!(applied(Some(&mc("cluster", "/etc/a", "Reboot")), &[], &ours).is_err());
    // The same actions: no conflict, whoever set them.
    assert!(
        applied(
            Some(&owned("someone")),
            &[],
            &[file("a.yaml", mc("cluster", "/etc/a", "Reboot"))]
        )
        .is_ok()
    );
}

/// Review 22 r22b F3: a MachineConfiguration applied by kubectl or Argo CD
/// (no field manager of its own) is the one object `cluster`, whatever
/// its file is called and wherever its tree is: an entry it no longer
/// sets, or all of its entries when no file applies it any more, are
/// taken out of the cluster's. Matched by its name with its tree's root,
/// the entry stayed, and a reboot was priced as none.
#[test]
fn an_entry_the_tree_no_longer_applies_is_taken_out() {
    let doc = |paths: &[&str]| {
        let files: Vec<Value> = paths
            .iter()
            .map(|p| serde_json::json!({"path": p, "actions": [{"type": "None"}]}))
            .collect();
        serde_json::json!({"metadata": {"name": "cluster"},
            "spec": {"nodeDisruptionPolicy": {"files": files}}})
    };
    let file = |name: &str, doc: Value| PolicyFile {
        name: name.into(),
        manager: None,
        doc,
    };
    let cluster = doc(&["/etc/gpu.conf", "/etc/kept"]);
    let before = [file("before/worker-gpu/gpu-policy.yaml", cluster.clone())];
    // The entry replaced by another in the same file of the other tree.
    let p = applied(
        Some(&cluster),
        &before,
        &[file(
            "after/worker-gpu/gpu-policy.yaml",
            doc(&["/etc/other.conf", "/etc/kept"]),
        )],
    )
    .unwrap();
    let paths: Vec<&str> = p.files.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(paths, ["/etc/other.conf", "/etc/kept"]);
    // The file gone (pruned) or left out: every entry of it taken out.
    let p = applied(Some(&cluster), &before, &[]).unwrap();
    assert!(p.files.is_empty(), "{:?}", p.files);
}

/// Review 23 r23b F1: a MachineConfiguration applied client-side (`oc
/// apply -k`, Argo CD's default sync: a JSON merge patch for a CRD) sets
/// each list it gives to exactly its entries, over the cluster's whoever
/// set them, and deletes a list its last apply gave and it no longer
/// gives. Laid over the cluster's, render's server-side entries stayed and
/// a reboot was priced as a service restart.
#[test]
fn a_client_side_apply_replaces_the_cluster_s_lists() {
    let entry = |p: &str| serde_json::json!({"path": p, "actions": [{"type": "None"}]});
    let mut cluster = serde_json::json!({"metadata": {"name": "cluster"},
        "spec": {"nodeDisruptionPolicy": {
            "files": [entry("/etc/kubelet-labeler/a"), entry("/etc/kubelet-labeler/b")],
            "units": [{"name": "x.service", "actions": [{"type": "None"}]}]}}});
    cluster["metadata"]["managedFields"] = serde_json::json!([{
        "manager": "kubelet-labeler-worker-gpu", "operation": "Apply",
        "fieldsV1": {"f:spec": {"f:nodeDisruptionPolicy": {"f:files": {
            "k:{\"path\":\"/etc/kubelet-labeler/a\"}": {".": {}, "f:actions": {}, "f:path": {}},
            "k:{\"path\":\"/etc/kubelet-labeler/b\"}": {".": {}, "f:actions": {}, "f:path": {}}}}}}}]);
    let team = serde_json::json!({"metadata": {"name": "cluster"},
        "spec": {"nodeDisruptionPolicy": {"files": [entry("/etc/gpu.conf")]}}});
    let file = |doc: &Value| PolicyFile {
        name: "worker-gpu/gpu-policy.yaml".into(),
        manager: None,
        doc: doc.clone(),
    };
    let p = applied(Some(&cluster), &[], &[file(&team)]).unwrap();
    let paths: Vec<&str> = p.files.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(paths, ["/etc/gpu.conf"]);
    // A list it does not give stays, unless its last apply gave it.
    assert_eq!(p.units.len(), 1);
    let with_units = serde_json::json!({"metadata": {"name": "cluster"},
        "spec": {"nodeDisruptionPolicy": {"files": [entry("/etc/gpu.conf")],
            "units": [{"name": "x.service", "actions": [{"type": "None"}]}]}}});
    let p = applied(Some(&cluster), &[file(&with_units)], &[file(&team)]).unwrap();
    assert!(p.units.is_empty(), "{:?}", p.units);
    let mut annotated = cluster.clone();
    annotated["metadata"]["annotations"] =
        serde_json::json!({ LAST_APPLIED: with_units.to_string() });
    let p = applied(Some(&annotated), &[], &[file(&team)]).unwrap();
    assert!(p.units.is_empty(), "{:?}", p.units);
    annotated["metadata"]["annotations"] = serde_json::json!({ LAST_APPLIED: "{" });
    assert!(applied(Some(&annotated), &[], &[file(&team)]).is_err());
    // A file with a field manager of its own, and the client-side one
    // after it (every sync applies it again): the client-side's list.
    let ours = PolicyFile {
        name: "machineconfiguration-worker-gpu.yaml".into(),
        manager: Some("kubelet-labeler-worker-gpu".into()),
        doc: serde_json::json!({"metadata": {"name": "cluster"},
            "spec": {"nodeDisruptionPolicy": {"files": [entry("/etc/kubelet-labeler/a")]}}}),
    };
    let p = applied(None, &[], &[file(&team), ours]).unwrap();
    let paths: Vec<&str> = p.files.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(paths, ["/etc/gpu.conf"]);
}

/// Review 23 r23b F6: kubectl's `apply --server-side` hands the fields its
/// client-side apply owns to the given field manager, whose apply then
/// drops the entries it does not give; priced as kept before.
#[test]
fn a_server_side_apply_drops_entries_applied_client_side() {
    let entry = |p: &str| serde_json::json!({"path": p, "actions": [{"type": "None"}]});
    let owned = |p: &str| serde_json::json!({ format!("k:{{\"path\":\"{p}\"}}"): {".": {}, "f:actions": {}, "f:path": {}} });
    let mut cluster = serde_json::json!({"metadata": {"name": "cluster"},
        "spec": {"nodeDisruptionPolicy": {
            "files": [entry("/etc/gpu.conf"), entry("/etc/site.conf")]}}});
    cluster["metadata"]["managedFields"] = serde_json::json!([
        {"manager": "kubectl-client-side-apply", "operation": "Update",
         "fieldsV1": {"f:spec": {"f:nodeDisruptionPolicy": {"f:files": owned("/etc/gpu.conf")}}}},
        {"manager": "site-admin", "operation": "Apply",
         "fieldsV1": {"f:spec": {"f:nodeDisruptionPolicy": {"f:files": owned("/etc/site.conf")}}}}]);
    let ours = PolicyFile {
        name: "machineconfiguration-worker-gpu.yaml".into(),
        manager: Some("kubelet-labeler-worker-gpu".into()),
        doc: serde_json::json!({"metadata": {"name": "cluster"},
            "spec": {"nodeDisruptionPolicy": {"files": [entry("/etc/kubelet-labeler/a")]}}}),
    };
    let p = applied(Some(&cluster), &[], &[ours]).unwrap();
    let paths: Vec<&str> = p.files.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(paths, ["/etc/site.conf", "/etc/kubelet-labeler/a"]);
}
