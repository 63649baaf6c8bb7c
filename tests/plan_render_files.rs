//! Review 25 r25a F2, F2b, F6, F7: what systemd runs to make units (a
//! system generator) and the files render's disruption policy prices
//! cheaply (the wrapper, our generator, our sync units) are refused when a
//! change writes them otherwise than this release renders them, whatever
//! the policy prices them: never "costs nothing" or "a service restart".

use std::path::Path;

use crate::plan::{plan, render};
use crate::support::run_cli::stand_in_wrapper;
use crate::support::{add_file_machineconfig, repo, scratch_dir, stderr, stdout};

use kubelet_labeler::node::contract::{GENERATOR_PATH, WRAPPER_PATH};

const EVIL_DROPIN: &str = "#!/bin/sh\nmkdir -p \"$1/kubelet.service.d\"\nprintf '[Service]\\nExecStart=\\nExecStart=/usr/bin/kubelet --register-with-taints=evil=1:NoExecute\\n' >\"$1/kubelet.service.d/zz.conf\"\n";

fn planned(base: &Path, pr: &Path, extra: &[&str]) -> std::process::Output {
    let fleet = repo().join("examples/fleet/fleet.json");
    let mut args = vec!["--fail-on", "taint", "--fail-on", "reboot"];
    args.extend(extra);
    plan(base, pr, &fleet, &args)
}

fn refused(o: &std::process::Output, what: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{}{err}", stdout(o));
    for w in what {
        assert!(err.contains(w), "{w:?} not in: {err}");
    }
}

/// `dir`'s MachineConfig that writes `path`, with `bytes` written there
/// instead (its mode kept).
fn replace_file(dir: &Path, path: &str, bytes: &[u8]) {
    use base64::Engine as _;
    use kubelet_labeler::cli::render::layout;
    for entry in std::fs::read_dir(dir).unwrap() {
        let file = entry.unwrap().path();
        if file.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let Ok(mut mcs) = layout::machineconfigs_from_yaml(&text, "mc") else {
            continue;
        };
        let Some(mc) = mcs.first_mut() else { continue };
        let Some(files) = mc
            .pointer_mut("/spec/config/storage/files")
            .and_then(|f| f.as_array_mut())
        else {
            continue;
        };
        if let Some(f) = files.iter_mut().find(|f| f["path"] == path) {
            let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
            f["contents"] = serde_json::json!({ "source": format!("data:;base64,{b64}") });
            std::fs::write(&file, mc.to_string()).unwrap();
            return;
        }
    }
    panic!("no MachineConfig in {} writes {path}", dir.display());
}

#[test]
fn a_system_generator_or_the_manager_s_environment_changed_is_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    for path in [
        "/etc/systemd/system-generators/zz-tuning",
        "/usr/lib/systemd/system-generators/zz-tuning",
        "/etc/systemd/system.conf.d/10-env.conf",
    ] {
        let pr = tmp.path().join(path.replace('/', "_"));
        render(&pr, &[]);
        add_file_machineconfig(
            &pr,
            "60-worker-gpu-x",
            Some("worker-gpu"),
            path,
            EVIL_DROPIN,
        );
        let o = planned(&base, &pr, &[]);
        refused(
            &o,
            &[
                &format!("{path} changes from"),
                "changes kubelet's command line",
            ],
        );
    }
}

#[test]
fn render_s_policy_files_with_other_content_are_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let mut wrapper = std::fs::read(stand_in_wrapper()).unwrap();
    wrapper.extend_from_slice(b"\n#!/bin/sh exec /usr/bin/kubelet\n");
    let cases: [(String, Vec<u8>); 3] = [
        (GENERATOR_PATH.into(), EVIL_DROPIN.as_bytes().to_vec()),
        (
            "/etc/systemd/system/kubelet-labeler-sync.service".into(),
            b"[Unit]\nAfter=kubelet.service\n[Service]\nType=oneshot\nExecStart=/bin/systemctl stop kubelet.service\n"
                .to_vec(),
        ),
        (format!("{WRAPPER_PATH}.x86_64"), wrapper),
    ];
    for (i, (path, bytes)) in cases.iter().enumerate() {
        let pr = tmp.path().join(format!("pr{i}"));
        render(&pr, &[]);
        replace_file(&pr, path, bytes);
        let o = planned(&base, &pr, &[]);
        refused(
            &o,
            &[
                &format!("{path} changes from"),
                "is not what render writes there",
            ],
        );
    }
}

#[test]
fn a_wrapper_of_the_release_given_is_priced_and_any_other_refused() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    // The next release's wrapper: other bytes, the same node format.
    let next = tmp.path().join("wrapper-next");
    let mut bytes = std::fs::read(stand_in_wrapper()).unwrap();
    bytes.extend_from_slice(b"\0next release\0");
    std::fs::write(&next, &bytes).unwrap();
    let o = crate::support::bin()
        .args(["render", "machineconfig", "--pool", "worker-gpu"])
        .args(["--label", "node.kubernetes.io/worker-gpu=", "--wrapper"])
        .arg(&next)
        .arg("--output-dir")
        .arg(&pr)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let path = format!("{WRAPPER_PATH}.x86_64");
    // The release plan vouches for is the stand-in (`plan`'s own --wrapper).
    refused(
        &planned(&base, &pr, &[]),
        &[
            &format!("{path} changes from"),
            "is not the x86_64 wrapper plan was given",
        ],
    );
    let given = next.to_str().unwrap();
    let o = planned(&base, &pr, &["--wrapper", given]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Review 26 r26a F1: our generator as this release renders it, but for
/// no architecture, for aarch64 only, or for the upstream profile: on the
/// pool's x86_64 nodes (or as OpenShift's kubelet reads labels) it writes
/// no drop-in, or the wrong one, and kubelet starts without the wrapper.
/// It used to be "0 reboot; 0 with a taint change ... a daemon-reload".
#[test]
fn our_generator_rendered_for_other_nodes_is_refused() {
    use kubelet_labeler::cli::render::{arch::Arch, dropins};
    use kubelet_labeler::node::kubelet::Profile;
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let cases: [(&str, Profile, &[Arch], &str); 3] = [
        (
            "none",
            Profile::OpenShift,
            &[],
            "it ships no wrapper for x86_64 (only none)",
        ),
        (
            "arm",
            Profile::OpenShift,
            &[Arch::Aarch64],
            "it ships no wrapper for x86_64 (only aarch64)",
        ),
        (
            "upstream",
            Profile::Upstream,
            &[Arch::X86_64],
            "rendered for another profile than openshift",
        ),
    ];
    for (name, profile, arches, says) in cases {
        let pr = tmp.path().join(name);
        render(&pr, &[]);
        let text = dropins::generator(profile, "kubelet.service", arches);
        replace_file(&pr, GENERATOR_PATH, text.as_bytes());
        refused(
            &planned(&base, &pr, &[]),
            &[&format!("{GENERATOR_PATH} changes from"), says],
        );
    }
    // As render writes it for the pool: priced.
    let pr = tmp.path().join("same");
    render(&pr, &[]);
    let text = dropins::generator(Profile::OpenShift, "kubelet.service", &[Arch::X86_64]);
    replace_file(&pr, GENERATOR_PATH, text.as_bytes());
    let o = planned(&base, &pr, &[]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Review 27 r27a F2: render's own bytes, owned by another user or at
/// another mode (the wrapper or generator writable by core or anyone,
/// setuid), are not render's: it used to be priced by render's cheap
/// entries ("costs nothing", "a daemon-reload").
#[test]
fn render_s_files_at_another_owner_or_mode_are_refused() {
    use kubelet_labeler::cli::render::layout;
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let wrapper = format!("{WRAPPER_PATH}.x86_64");
    for (i, (path, extra, says)) in [
        (
            GENERATOR_PATH,
            serde_json::json!({"user": {"name": "core"}}),
            "it is owned by user",
        ),
        (
            wrapper.as_str(),
            serde_json::json!({"mode": 511}),
            "its mode is 0777, not 0755",
        ),
        (
            wrapper.as_str(),
            serde_json::json!({"mode": 2541}),
            // (setuid: the MCO refuses the config, and plan with it.)
            "the MCO refuses setuid",
        ),
        (
            "/etc/systemd/system/kubelet-labeler-sync.service",
            serde_json::json!({"group": {"name": "core"}}),
            "it is owned by group",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let pr = tmp.path().join(format!("pr{i}"));
        render(&pr, &[]);
        let mut done = false;
        for entry in std::fs::read_dir(&pr).unwrap() {
            let file = entry.unwrap().path();
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let Ok(mut mcs) = layout::machineconfigs_from_yaml(&text, "mc") else {
                continue;
            };
            let Some(mc) = mcs.first_mut() else { continue };
            let files = mc
                .pointer_mut("/spec/config/storage/files")
                .and_then(|f| f.as_array_mut());
            let Some(f) = files.into_iter().flatten().find(|f| f["path"] == path) else {
                continue;
            };
            for (k, v) in extra.as_object().unwrap() {
                f[k] = v.clone();
            }
            std::fs::write(&file, mc.to_string()).unwrap();
            done = true;
        }
        assert!(done, "no MachineConfig writes {path}");
        let o = planned(&base, &pr, &[]);
        if extra["mode"] == 2541 {
            refused(&o, &[says]);
        } else {
            refused(&o, &[&format!("{path} changes from"), says]);
        }
    }
}

/// `dir`'s MachineConfig entry at `path`, edited by `edit` (its path too).
fn edit_entry(dir: &Path, path: &str, edit: &dyn Fn(&mut serde_json::Value)) {
    use kubelet_labeler::cli::render::layout;
    for entry in std::fs::read_dir(dir).unwrap() {
        let file = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Ok(mut mcs) = layout::machineconfigs_from_yaml(&text, "mc") else {
            continue;
        };
        let Some(mc) = mcs.first_mut() else { continue };
        let files = mc
            .pointer_mut("/spec/config/storage/files")
            .and_then(|f| f.as_array_mut());
        if let Some(f) = files.into_iter().flatten().find(|f| f["path"] == path) {
            let was = f.clone();
            edit(f);
            if *f != was {
                std::fs::write(&file, mc.to_string()).unwrap();
            }
            return;
        }
    }
    panic!("no MachineConfig in {} writes {path}", dir.display());
}

/// Review 29 r29a F3: on CoreOS /usr/local is a link to /var/usrlocal, so
/// a storage file at /var/usrlocal/bin/kubelet-labeler-wrapper.x86_64
/// writes the wrapper. Another program there, or render's wrapper there
/// writable by core, used to be priced as any file ("no policy entry": a
/// reboot; free under a policy entry for /var/usrlocal/bin) while the same
/// at /usr/local/bin was refused. Render's files are judged in either
/// spelling now; a path that is not clean (`//`, `.`, `..`, a trailing
/// `/`) Ignition refuses, and plan with it.
#[test]
fn render_s_files_are_judged_in_either_spelling_of_coreos_s_links() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let ours = format!("{WRAPPER_PATH}.x86_64");
    let other = ours.replace("/usr/local/", "/var/usrlocal/");
    assert_ne!(ours, other);
    let script = "#!/bin/sh\n# no labels, no taints\nexec \"$@\"\n";
    for (i, at) in [&ours, &other].into_iter().enumerate() {
        let moved = |pr: &Path, extra: serde_json::Value| {
            render(pr, &[]);
            edit_entry(pr, &ours, &|f| {
                f["path"] = at.as_str().into();
                for (k, v) in extra.as_object().unwrap() {
                    f[k] = v.clone();
                }
            });
        };
        let shown = match at == &ours {
            true => format!("{at} changes from"),
            false => format!("{at} (CoreOS's {ours}) changes from"),
        };
        // Render's wrapper written there, other bytes.
        let pr = tmp.path().join(format!("other-bytes-{i}"));
        let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, script);
        let source = serde_json::json!({"source": format!("data:;base64,{b64}")});
        moved(&pr, serde_json::json!({ "contents": source }));
        refused(
            &planned(&base, &pr, &[]),
            &[&shown, "is not the x86_64 wrapper plan was given"],
        );
        // Render's bytes there, owned by core, writable by anyone.
        let pr = tmp.path().join(format!("core-{i}"));
        moved(
            &pr,
            serde_json::json!({"user": {"name": "core"}, "mode": 511}),
        );
        refused(&planned(&base, &pr, &[]), &[&shown, "it is owned by user"]);
        let pr = tmp.path().join(format!("mode-{i}"));
        moved(&pr, serde_json::json!({"mode": 511}));
        refused(
            &planned(&base, &pr, &[]),
            &[&shown, "its mode is 0777, not 0755"],
        );
        // Render's own, as render writes it: priced, not refused.
        let pr = tmp.path().join(format!("same-{i}"));
        moved(&pr, serde_json::json!({}));
        let o = planned(&base, &pr, &[]);
        assert_ne!(o.status.code(), Some(2), "{at}: {}", stderr(&o));
    }
    // Another MachineConfig writing the other spelling beside render's:
    // another program, render's bytes owned by core and writable by
    // anyone (these were "no policy entry": a reboot, exit 1).
    let render_s = std::cell::RefCell::new(serde_json::Value::Null);
    edit_entry(&base, &ours, &|f| *render_s.borrow_mut() = f.clone());
    for (i, program) in [true, false].into_iter().enumerate() {
        let pr = tmp.path().join(format!("beside-{i}"));
        render(&pr, &[]);
        add_file_machineconfig(
            &pr,
            "60-worker-gpu-tools",
            Some("worker-gpu"),
            &other,
            script,
        );
        if !program {
            let mut f = render_s.borrow().clone();
            f["path"] = other.as_str().into();
            f["user"] = serde_json::json!({"name": "core"});
            f["mode"] = 511.into();
            edit_entry(&pr, &other, &|e| *e = f.clone());
        }
        refused(
            &planned(&base, &pr, &[]),
            &[
                &format!("{other} (CoreOS's {ours}) changes from"),
                &format!("it is written as both {ours} and {other}"),
            ],
        );
    }
    // Spellings that are not clean: Ignition refuses them.
    let sync = "/etc/systemd/system/kubelet-labeler-sync.service";
    let path_unit = "/etc/systemd/system/kubelet-labeler-sync.path";
    for (path, unclean) in [
        (ours.as_str(), ours.replace("/bin/", "//bin/")),
        (ours.as_str(), other.replace("/bin/", "/bin/../bin/")),
        (GENERATOR_PATH, format!("{GENERATOR_PATH}/")),
        (sync, sync.replace("/system/", "/./system/")),
        (path_unit, path_unit.replace("/etc/", "/etc//")),
    ] {
        let pr = tmp.path().join(unclean.replace('/', "_"));
        render(&pr, &[]);
        edit_entry(&pr, path, &|f| f["path"] = unclean.as_str().into());
        refused(
            &planned(&base, &pr, &[]),
            &["Ignition refuses it (path is not fully simplified)"],
        );
    }
}
