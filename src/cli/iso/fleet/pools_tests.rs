//! Unit tests of `pools` (a file of their own: `pools.rs` stays under
//! 1,000 lines).

use super::*;

/// Only the rendered form is read; anything systemd may read otherwise
/// (unquoted, escapes, specifiers, continuation, two assignments) is not.
#[test]
fn env_lines_in_the_rendered_form_only() {
    assert_eq!(canonical_line("[Service]"), Some(None));
    assert_eq!(canonical_line("# a comment"), Some(None));
    assert_eq!(canonical_line(""), Some(None));
    assert_eq!(
        canonical_line("Environment=\"A_1=x=y,z:NoSchedule\""),
        Some(Some(("A_1", "x=y,z:NoSchedule")))
    );
    for bad in [
        "Environment=A=b",
        "Environment=\"A=b\" \"C=d\"",
        "Environment=\"A=b\\x41\"",
        "Environment=\"A=%H\"",
        "Environment=\"A=b\" ",
        " Environment=\"A=b\"",
        "Environment=",
        "EnvironmentFile=/etc/x",
        "UnsetEnvironment=A",
        "[Unit]",
        "# continued \\",
        "Environment=\"1A=b\"",
        "Environment=\"A=b\r\"",
    ] {
        assert_eq!(canonical_line(bad), None, "{bad:?}");
    }
}

/// kubelet's unit, its drop-ins (any unit directory, any spelling of
/// the path), every service's drop-ins and the manager's configuration;
/// and links moving a unit directory.
#[test]
fn kubelet_unit_paths() {
    for p in [
        "/etc/systemd/system/kubelet.service",
        "/etc/systemd/system/kubelet.service.d/95-x.conf",
        "/etc//systemd/./system/kubelet.service.d/95-x.conf",
        "/etc/x/../systemd/system/kubelet.service.d/95-x.conf",
        "/usr/local/lib/systemd/system/kubelet.service.d/95-x.conf",
        "/etc/systemd/system/service.d/10-env.conf",
        "/etc/systemd/system.conf.d/env.conf",
        "/etc/systemd/system.control/kubelet.service.d/x.conf",
    ] {
        assert!(touches_kubelet_unit(&clean_path(p)), "{p}");
    }
    for p in [
        "/etc/systemd/system/kubelet-labeler-sync.service",
        "/etc/systemd/system/crio.service.d/x.conf",
        "/etc/kubernetes/kubelet.conf",
    ] {
        assert!(!touches_kubelet_unit(&clean_path(p)), "{p}");
    }
    assert!(moves_unit_dir("/etc/systemd/system"));
    assert!(moves_unit_dir("/etc/systemd"));
    assert!(moves_unit_dir("/etc"));
    assert!(!moves_unit_dir(
        "/etc/systemd/system/multi-user.target.wants"
    ));
    let mc = json!({ "metadata": { "name": "l" }, "spec": { "config": { "storage": {
        "links": [ { "path": "/etc/systemd/system", "target": "/var/x" } ] } } } });
    let e = check_kubelet_files(&mc, "l.yaml", Reach::Pool("worker-p"), &Judged::default())
        .unwrap_err();
    assert!(format!("{e}").contains("links /etc/systemd/system"), "{e}");
}

/// The sync's drop-in as render writes it is ours; with an
/// `Environment=` line it is another drop-in.
#[test]
fn the_syncs_dropin_only_as_rendered() {
    use crate::cli::render::sync_units::{WANTS_DROPIN_NAME, wants_dropin};
    let path = format!("/etc/systemd/system/kubelet.service.d/{WANTS_DROPIN_NAME}");
    let mc = |text: &str| {
        json!({ "metadata": { "name": "s" }, "spec": { "config": {
            "ignition": { "version": "3.2.0" }, "storage": { "files": [ {
                "path": path, "contents": { "source": format!("data:,{}",
                    crate::cli::render::encoding::percent_encode(text.as_bytes())) } } ] } } } })
    };
    check_kubelet_files(
        &mc(&wants_dropin()),
        "s.yaml",
        Reach::Pool("worker-p"),
        &Judged::default(),
    )
    .unwrap();
    let hostile = format!("{}[Service]\nEnvironment=A=b\n", wants_dropin());
    let e = check_kubelet_files(
        &mc(&hostile),
        "s.yaml",
        Reach::Pool("worker-p"),
        &Judged::default(),
    )
    .unwrap_err();
    assert!(
        format!("{e}").contains("more than the sync's Wants="),
        "{e}"
    );
    // kubelet's EnvironmentFile= beats the drop-ins: a site's own
    // variables there are taken, ours are not.
    let env_file = |text: &str| {
        let mut m = mc(text);
        m["spec"]["config"]["storage"]["files"][0]["path"] = json!("/etc/kubernetes/kubelet-env");
        check_kubelet_files(&m, "s.yaml", Reach::Pool("worker-p"), &Judged::default())
    };
    env_file("CUSTOM_KUBELET_LABELS=a=b\n").unwrap();
    let e = env_file("KUBELET_LABELER_NODE_RULES=\n").unwrap_err();
    assert!(format!("{e}").contains("EnvironmentFile="), "{e}");
}

/// Empty values Go writes for a pointer's unset parts are taken;
/// anything in them is not.
#[test]
fn a_pointer_may_carry_empty_parts_only() {
    let p = |extra: Value| {
        let mut v = json!({ "ignition": { "version": "3.2.0",
            "config": { "merge": [ { "source": "https://h:22623/config/worker-p" } ],
                        "replace": { "verification": {} } } } });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        check_pointer_only(&v)
    };
    p(json!({ "storage": {}, "passwd": {}, "systemd": { "units": [] } })).unwrap();
    assert!(p(json!({ "passwd": { "users": [ { "name": "core" } ] } })).is_err());
    // Review 16 r16c F6: a replace drops the installed-pool record.
    let replace = json!({ "ignition": { "version": "3.2.0",
        "config": { "replace": { "source": "https://h:22623/config/worker-p" } } } });
    let e = check_pointer_only(&replace).unwrap_err().to_string();
    assert!(e.contains("ignition.config.replace"), "{e}");
}

/// Review 13 r13c F2: Ignition reads a pointer's keys folded, the
/// later one winning; a second `Source` would be what is fetched.
#[test]
fn a_pointer_whose_merge_entry_folds_a_second_source_is_refused() {
    let good = "https://api-int.ocp.example.com:22623/config/worker-gpu";
    for key in ["Source", "SOURCE", "\u{17f}ource"] {
        for at in ["merge", "replace"] {
            let mut entry = serde_json::Map::new();
            entry.insert("source".into(), json!(good));
            entry.insert(key.to_string(), json!("https://evil.example/worker.ign"));
            let config = if at == "merge" {
                json!({ "merge": [Value::Object(entry)] })
            } else {
                json!({ "replace": Value::Object(entry) })
            };
            let pointer = json!({ "ignition": { "version": "3.2.0", "config": config } });
            let mut f = Found::default();
            assert!(
                set_pointer("worker-gpu", pointer, "pointer.ign", &mut f).is_err(),
                "{at} entry with {key:?} taken"
            );
        }
    }
}
