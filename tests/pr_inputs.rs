//! A pull request's directory as the CLI reads it in CI: a link in it is
//! refused, never read through (it may name any file of the CI machine,
//! whose text an error would quote) and never skipped (`oc apply -f DIR`
//! applies what it names); a hidden manifest is read, as `oc apply -f DIR`
//! applies it; a FIFO never makes a command wait; and no line quoting a
//! name or key of it carries a control character to the terminal.

use crate::plan::{json, plan, render};
use crate::support::{bin, repo, scratch_dir, stderr};

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// What the CI machine holds and a pull request must never see.
const SECRET: &str = "SECRET-4f1c9a";

/// A file outside the repository that no YAML parser reads (an AWS
/// credentials file: its lines are quoted by a parse error).
fn secret_file(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("credentials");
    std::fs::write(
        &p,
        format!("[default]\naws_access_key_id = AKIA\naws_secret_access_key = {SECRET}\n"),
    )
    .unwrap();
    p
}

/// `c` run to its end, killed after 60 s (a read that waits forever is a
/// failure, not a hung test).
fn bounded(mut c: Command) -> Output {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("still running after 60 s: {}", stderr(&o));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn explain_dir(dir: &Path) -> Output {
    let mut c = bin();
    c.arg("explain").arg("--machineconfig").arg(dir);
    bounded(c)
}

fn fleet_dir(dir: &Path) -> Output {
    let mut c = bin();
    // A stand-in selector beside the directory: a fresh build has no
    // static one.
    let selector = crate::support::iso::stand_in_selector(dir.parent().unwrap());
    c.args(["iso", "fleet", "--dest-device", "/dev/sda", "--dry-run"])
        .args(["--facts-root", "/"])
        .arg("--selector")
        .arg(selector)
        .arg("--pool")
        .arg(format!("worker-gpu={}", dir.display()));
    bounded(c)
}

/// `explain --machineconfig DIR` and `iso fleet --pool NAME=DIR` on a
/// directory with a link to a host file: refused, naming the link, and the
/// file's text never printed (it was, in the YAML error's excerpt).
#[test]
fn a_link_in_a_manifest_directory_is_refused_never_read_through() {
    let tmp = scratch_dir();
    let gitops = tmp.path().join("gitops");
    render(&gitops, &[]);
    std::os::unix::fs::symlink(secret_file(tmp.path()), gitops.join("zz.yaml")).unwrap();
    // Listed, so that what refuses it is the link itself (one left out of
    // the kustomization is refused before any file is read).
    crate::support::relist_kustomization(&gitops, &["zz.yaml"], &[]);
    for (what, o) in [
        ("explain", explain_dir(&gitops)),
        ("iso fleet", fleet_dir(&gitops)),
    ] {
        let e = stderr(&o);
        assert!(!o.status.success(), "{what}: {e}");
        assert!(!e.contains(SECRET), "{what} printed the linked file: {e}");
        assert!(
            e.contains("zz.yaml is a symbolic link"),
            "{what}: the link is named: {e}"
        );
    }
}

/// A FIFO in the directory (a local user's, or one a link names) never
/// makes a command wait for a writer: refused as no regular file.
#[test]
fn a_fifo_in_a_manifest_directory_is_refused_without_waiting() {
    if !crate::support::skipped::need("mkfifo") {
        return;
    }
    let tmp = scratch_dir();
    let gitops = tmp.path().join("gitops");
    render(&gitops, &[]);
    let st = Command::new("mkfifo")
        .arg(gitops.join("zz.yaml"))
        .status()
        .unwrap();
    assert!(st.success());
    crate::support::relist_kustomization(&gitops, &["zz.yaml"], &[]);
    for (what, o) in [
        ("explain", explain_dir(&gitops)),
        ("iso fleet", fleet_dir(&gitops)),
    ] {
        let e = stderr(&o);
        assert!(!o.status.success(), "{what}: {e}");
        assert!(e.contains("zz.yaml is not a regular file"), "{what}: {e}");
    }
}

/// plan on a pull request whose GPU taint rule arrives through a hidden
/// file or a link: `oc apply -f` on the directory applies both, so the
/// hidden one is planned (2 GPU nodes get a taint) and the link is
/// refused (exit 2), never skipped as if the pool had no labels
/// MachineConfig (which planned "0 with a taint change").
#[test]
fn plan_reads_hidden_manifests_and_refuses_links() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let staged = tmp.path().join("staged");
    let rules = repo().join("examples/rules/openshift-gpu.yaml");
    render(&staged, &["--rules", rules.to_str().unwrap()]);
    let labels = "50-worker-gpu-kubelet-labeler-labels.yaml";
    let fleet = repo().join("examples/fleet/fleet.json");

    // The labels MachineConfig under a hidden name, and under `.yaml`
    // alone (kubectl tells a manifest by what follows the last dot, Go's
    // `filepath.Ext`: the real kubectl applies it), in a directory applied
    // with `oc apply -f` (no kustomization: one that does not list the
    // file is refused, below).
    for name in [format!(".{labels}"), ".yaml".to_string()] {
        let hidden = tmp.path().join("hidden");
        let _ = std::fs::remove_dir_all(&hidden);
        render(&hidden, &[]);
        std::fs::remove_file(hidden.join(labels)).unwrap();
        std::fs::copy(staged.join(labels), hidden.join(&name)).unwrap();
        let o = plan(&base, &hidden, &fleet, &["--format", "json"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert!(
            e.contains(&format!(
                "resource \"{labels}\" (not a manifest file of its directory)"
            )) && e.contains(&format!("{name} left out of its resources")),
            "{name}: {e}"
        );
        std::fs::remove_file(hidden.join("kustomization.yaml")).unwrap();
        let o = plan(&base, &hidden, &fleet, &["--format", "json"]);
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        assert_eq!(json(&o)["taint_changes"], 2, "{name}: {}", stderr(&o));
    }

    // The labels MachineConfig as a link to the staged one.
    let linked = tmp.path().join("linked");
    render(&linked, &[]);
    std::fs::remove_file(linked.join(labels)).unwrap();
    std::os::unix::fs::symlink(staged.join(labels), linked.join(labels)).unwrap();
    let o = plan(&base, &linked, &fleet, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{labels} is a symbolic link")),
        "{}",
        stderr(&o)
    );

    // The same link committed: git stores it as a link, whose text (its
    // target's name) is no manifest.
    if !crate::support::skipped::need("git") {
        return;
    }
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .current_dir(tmp.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    };
    git(&["init", "-q"]);
    git(&["add", "linked"]);
    git(&["commit", "-q", "-m", "pr"]);
    let o = bin()
        .current_dir(tmp.path())
        .args(["plan", "--from", "base", "--to", "HEAD:linked/", "--fleet"])
        .arg(&fleet)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("linked/{labels} is a symbolic link")),
        "{}",
        stderr(&o)
    );
}

/// A pull request's file name, or an Ignition config's key, quoted on a
/// line: its escape codes (ESC[1A ESC[2K erases the line above, OSC 52
/// sets the clipboard) and newlines reach the terminal escaped, one line
/// each.
#[test]
fn lines_quoting_a_directory_or_a_config_escape_control_characters() {
    let tmp = scratch_dir();
    let gitops = tmp.path().join("gitops");
    render(&gitops, &[]);
    let name = "\x1b[1A\x1b[2K\x1b]52;c;cHduZWQ=\x07x\nwrote forged.yaml";
    std::fs::write(
        gitops.join(format!("{name}.yaml")),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    let o = bin()
        .args(["render", "machineconfig", "--pool", "worker-gpu"])
        .args(["--label", "node.kubernetes.io/worker-gpu="])
        .arg("--wrapper")
        .arg(crate::support::run_cli::stand_in_wrapper())
        .arg("--output-dir")
        .arg(&gitops)
        .output()
        .unwrap();
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(!e.contains('\x1b') && !e.contains('\x07'), "{e:?}");
    assert!(e.contains("\\u{1b}[1A"), "{e}");
    assert!(!e.lines().any(|l| l.starts_with("wrote forged")), "{e}");

    let ign = tmp.path().join("evil.ign");
    std::fs::write(
        &ign,
        r#"{"ignition":{"version":"3.4.0"},"\u001b[1A\u001b[2Kk\nwarning: forged":1}"#,
    )
    .unwrap();
    let iso = tmp.path().join("not.iso");
    std::fs::write(&iso, vec![0u8; 1 << 16]).unwrap();
    let o = bin()
        .args(["iso", "embed", "-i"])
        .arg(&ign)
        .arg(&iso)
        .arg("-o")
        .arg(tmp.path().join("out.iso"))
        .output()
        .unwrap();
    let e = stderr(&o);
    assert!(e.contains("ignores the unknown key"), "{e}");
    assert!(!e.contains('\x1b'), "{e:?}");
    assert!(!e.lines().any(|l| l.starts_with("warning: forged")), "{e}");
}

/// A pull request's MachineConfig that sets only the `mode` of our env
/// drop-in: the MCO merges it field by field and serves the contents
/// before it, so the node registers with our labels; explain lays the
/// merge out the same way (it laid the file out empty and said "no labels
/// or taints to add", exit 0). The MCO oracle's node labels decide.
#[test]
fn a_partial_file_entry_merges_as_the_mco_merges_it() {
    let Some((oracle, mco_root)) = crate::support::mco::oracle_as_root() else {
        return;
    };
    let tmp = scratch_dir();
    let gitops = tmp.path().join("gitops");
    render(&gitops, &["--label", "example.com/gpu=yes"]);
    let env = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";
    std::fs::write(
        gitops.join("99-worker-gpu-mode.yaml"),
        format!(
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
             metadata:\n  name: 99-worker-gpu-mode\n  labels:\n    \
             machineconfiguration.openshift.io/role: worker-gpu\n\
             spec:\n  config:\n    ignition: {{version: 3.4.0}}\n    storage:\n      \
             files:\n      - {{path: {env}, mode: 420}}\n"
        ),
    )
    .unwrap();
    // Listed in the kustomization, as a pull request adding it would.
    let k = gitops.join("kustomization.yaml");
    let listed = std::fs::read_to_string(&k).unwrap() + "- 99-worker-gpu-mode.yaml\n";
    std::fs::write(&k, listed).unwrap();
    let o = Command::new(&oracle)
        .arg("-mco-root")
        .arg(&mco_root)
        .arg("-manifests")
        .arg(&gitops)
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    let served = &report["nodeLabels"]["fromFIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS"];
    assert_eq!(served["example.com/gpu"], "yes", "{}", report["nodeLabels"]);

    // kubelet's unit, outside the oracle's manifests (it has the MCO's own).
    let kubelet = tmp.path().join("kubelet.yaml");
    std::fs::write(
        &kubelet,
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
         metadata:\n  name: 01-worker-kubelet\n  labels:\n    \
         machineconfiguration.openshift.io/role: worker\n\
         spec:\n  config:\n    ignition: {version: 3.4.0}\n    systemd:\n      units:\n      \
         - name: kubelet.service\n        contents: |\n          [Service]\n          \
         ExecStart=/usr/bin/kubelet\n",
    )
    .unwrap();
    let o = bin()
        .args(["explain", "--pool", "worker-gpu", "--machineconfig"])
        .arg(&kubelet)
        .arg("--machineconfig")
        .arg(&gitops)
        .output()
        .unwrap();
    let out = crate::support::stdout(&o);
    assert!(
        out.contains("'--node-labels=node.kubernetes.io/worker-gpu=,example.com/gpu=yes'"),
        "{out}{}",
        stderr(&o)
    );
}

/// Review 12 (r12b) F12: a spec 3 MachineConfig with spec 2's
/// `filesystem: root` left on a file and a directory (repos converted from
/// spec 2 keep it): the MCO accepts it and serves the config without the
/// key; explain reads it too (refused on 810045b: "no key of Ignition's
/// spec 3 config here").
#[test]
fn a_spec2_filesystem_key_is_read_as_the_mco_reads_it() {
    let Some((oracle, mco_root)) = crate::support::mco::oracle_as_root() else {
        return;
    };
    let tmp = scratch_dir();
    let gitops = tmp.path().join("gitops");
    render(&gitops, &["--label", "example.com/gpu=yes"]);
    std::fs::write(
        gitops.join("99-worker-gpu-registries.yaml"),
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
         metadata:\n  name: 99-worker-gpu-registries\n  labels:\n    \
         machineconfiguration.openshift.io/role: worker-gpu\n\
         spec:\n  config:\n    ignition: {version: 3.1.0}\n    storage:\n      files:\n      \
         - contents: {source: 'data:,x'}\n        filesystem: root\n        mode: 420\n        \
         path: /etc/containers/registries.conf.d/99-mirror.conf\n      directories:\n      \
         - {path: /etc/containers/x.d, mode: 493, filesystem: root}\n",
    )
    .unwrap();
    let k = gitops.join("kustomization.yaml");
    let listed = std::fs::read_to_string(&k).unwrap() + "- 99-worker-gpu-registries.yaml\n";
    std::fs::write(&k, listed).unwrap();
    let work = tmp.path().join("work");
    let o = Command::new(&oracle)
        .arg("-mco-root")
        .arg(&mco_root)
        .arg("-manifests")
        .arg(&gitops)
        .arg("-work")
        .arg(&work)
        .output()
        .unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    assert_eq!(
        report["summary"]["mcoValidationErrors"], 0,
        "{}",
        report["summary"]
    );
    let served: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join("desired-mc.json")).unwrap()).unwrap();
    let storage = &served["spec"]["config"]["storage"];
    let file = storage["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "/etc/containers/registries.conf.d/99-mirror.conf")
        .expect("the file served");
    assert!(file.get("filesystem").is_none(), "{file}");
    assert!(!storage.to_string().contains("filesystem"), "{storage}");

    let kubelet = tmp.path().join("kubelet.yaml");
    std::fs::write(
        &kubelet,
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
         metadata:\n  name: 01-worker-kubelet\n  labels:\n    \
         machineconfiguration.openshift.io/role: worker\n\
         spec:\n  config:\n    ignition: {version: 3.4.0}\n    systemd:\n      units:\n      \
         - name: kubelet.service\n        contents: |\n          [Service]\n          \
         ExecStart=/usr/bin/kubelet\n",
    )
    .unwrap();
    let o = bin()
        .args(["explain", "--pool", "worker-gpu", "--machineconfig"])
        .arg(&kubelet)
        .arg("--machineconfig")
        .arg(&gitops)
        .output()
        .unwrap();
    let out = crate::support::stdout(&o);
    assert!(
        o.status.success() && out.contains("example.com/gpu=yes"),
        "{out}{}",
        stderr(&o)
    );
}

/// A pull request that changes only the kustomization beside the
/// MachineConfigs, adding a patch: `kubectl apply -k` (Argo CD, Flux)
/// applies the patched MachineConfig (here a NoExecute taint, which evicts
/// every pod of the GPU nodes), so plan and explain, which read the files
/// as they are, refuse it and say what to give them instead (plan said
/// "0 of 4 nodes change", exit 0). Render's own kustomization passes.
#[test]
fn a_kustomization_that_patches_the_machineconfigs_is_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let pr = tmp.path().join("pr");
    render(&pr, &[]);
    let k = pr.join("kustomization.yaml");
    let mut text = std::fs::read_to_string(&k).unwrap();
    text += "patches:\n- target:\n    kind: MachineConfig\n    name: 50-worker-gpu-kubelet-labeler-labels\n  \
             patch: |\n    - op: replace\n      path: /spec/config/storage/files/0/contents/source\n      \
             value: \"data:,%5BService%5D%0AEnvironment%3DFIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS%3Devil%3ANoExecute%0A\"\n";
    std::fs::write(&k, text).unwrap();
    let fleet = repo().join("examples/fleet/fleet.json");
    let o = plan(&base, &pr, &fleet, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("kustomization.yaml: with it `kubectl apply -k` (and Argo CD, Flux) applies other than the manifests of the directory as they are, which is what plan reads: patches;"),
        "{}",
        stderr(&o)
    );
    let o = explain_dir(&pr);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("which is what --machineconfig reads: patches;"),
        "{}",
        stderr(&o)
    );
    // The render's own (resources only) is no refusal.
    let o = plan(&base, &base, &fleet, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // Resources that are not the directory's manifests as they are, each
    // run through the real `kubectl kustomize` by the review that found
    // them: a file of another extension (its MachineConfig applied), a
    // remote base (kustomize fetches it with git), a file left out of the
    // list (not applied, and pruned by Argo CD).
    let own = std::fs::read_to_string(base.join("kustomization.yaml")).unwrap();
    let first = own
        .lines()
        .find_map(|l| l.strip_prefix("- "))
        .unwrap()
        .to_string();
    for (resources, file, why) in [
        (
            "- zz-override.txt\n",
            Some("zz-override.txt"),
            "resource \"zz-override.txt\" (not a manifest file of its directory)",
        ),
        (
            "- github.com/org/mcs//overlay?ref=v1\n",
            None,
            "resource \"github.com/org/mcs//overlay?ref=v1\" (not a manifest file of its directory)",
        ),
        ("", None, "left out of its resources"),
    ] {
        let pr = tmp.path().join("pr-resources");
        let _ = std::fs::remove_dir_all(&pr);
        render(&pr, &[]);
        let mut text = if resources.is_empty() {
            own.replace(&format!("- {first}\n"), "")
        } else {
            own.clone()
        };
        text += resources;
        std::fs::write(pr.join("kustomization.yaml"), text).unwrap();
        if let Some(f) = file {
            std::fs::write(pr.join(f), "kind: MachineConfig\n").unwrap();
        }
        let o = plan(&base, &pr, &fleet, &[]);
        assert_eq!(o.status.code(), Some(2), "{resources:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(why), "{resources:?}: {}", stderr(&o));
        let o = explain_dir(&pr);
        assert!(stderr(&o).contains(why), "{resources:?}: {}", stderr(&o));
    }
}

/// What kubectl applies, as it reads it: a pull request setting the
/// generator's mode to `0644` (octal to kubectl's YAML 1.1: 420, so
/// systemd no longer runs it and the GPU nodes register without their
/// taint; the MCO oracle served that mode, by the review that found it)
/// was planned as no change (the mode was not read as a number), and a
/// manifest named `99-x:kustomization.yaml` was taken for a kustomization
/// and never read (kubectl applies it: its name ends in `.yaml`).
#[test]
fn plan_reads_modes_and_names_as_kubectl_does() {
    let tmp = scratch_dir();
    let rules = repo().join("examples/rules/openshift-gpu.yaml");
    let base = tmp.path().join("base");
    render(&base, &["--rules", rules.to_str().unwrap()]);
    let fleet = repo().join("examples/fleet/fleet.json");
    let mc = |name: &str, files: &str| {
        format!(
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
             metadata:\n  name: {name}\n  labels:\n    \
             machineconfiguration.openshift.io/role: worker-gpu\n\
             spec:\n  config:\n    ignition:\n      version: 3.4.0\n    storage:\n      \
             files:\n{files}"
        )
    };

    let tuned = tmp.path().join("tuned");
    render(&tuned, &["--rules", rules.to_str().unwrap()]);
    let generator = kubelet_labeler::node::contract::GENERATOR_PATH;
    std::fs::write(
        tuned.join("99-worker-gpu-tune.yaml"),
        mc(
            "99-worker-gpu-tune",
            &format!("      - path: {generator}\n        mode: 0644\n"),
        ),
    )
    .unwrap();
    crate::support::relist_kustomization(&tuned, &["99-worker-gpu-tune.yaml"], &[]);
    // Render's generator at another mode is not render's (review 27 r27a
    // F2): refused, naming the mode read as kubectl reads it.
    let o = plan(&base, &tuned, &fleet, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{generator} changes from"))
            && stderr(&o).contains("its mode is 0644, not 0755"),
        "{}",
        stderr(&o)
    );

    // A drop-in of the wrapper's name in /etc that runs nothing hides the
    // one the generator writes (real systemd 252 ran kubelet's own command,
    // by the review that found it), and one sorting after it that resets
    // ExecStart= takes the command back: the nodes register without ours.
    let dropins = "/etc/systemd/system/kubelet.service.d";
    // One that runs the wrapper for another unit, and one sorting before
    // it that makes kubelet's command one the wrapper cannot add to (the
    // eighth review's): the same.
    let wrapper = "%2Fusr%2Flocal%2Fbin%2Fkubelet-labeler-wrapper.x86_64";
    let cases = [
        ("zz-kubelet-labeler.conf", "%23%20nothing%0A".to_string(), format!("the wrapper does not run: {dropins}/zz-kubelet-labeler.conf")),
        ("zzz-override.conf", "%5BService%5D%0AExecStart%3D%0AExecStart%3D%2Fusr%2Fbin%2Fkubelet%0A".to_string(), format!("the wrapper does not run: {dropins}/zzz-override.conf")),
        ("zzz-other.conf", format!("%5BService%5D%0AExecStart%3D%0AExecStart%3D{wrapper}%20--unit%20other.service%0A"), format!("the wrapper does not run: {dropins}/zzz-other.conf")),
        ("10-sh.conf", "%5BService%5D%0AExecStart%3D%0AExecStart%3D%2Fbin%2Fsh%20-c%20%22exec%20%2Fusr%2Fbin%2Fkubelet%22%0A".to_string(), "the wrapper starts kubelet's command without ours".to_string()),
    ];
    for (file, body, why) in cases {
        let hidden = tmp.path().join("hidden");
        let _ = std::fs::remove_dir_all(&hidden);
        render(&hidden, &["--rules", rules.to_str().unwrap()]);
        std::fs::write(
            hidden.join("99-worker-gpu-dropin.yaml"),
            mc(
                "99-worker-gpu-dropin",
                &format!(
                    "      - path: {dropins}/{file}\n        mode: 420\n        contents:\n          \
                     source: \"data:,{body}\"\n"
                ),
            ),
        )
        .unwrap();
        crate::support::relist_kustomization(&hidden, &["99-worker-gpu-dropin.yaml"], &[]);
        let o = plan(&base, &hidden, &fleet, &[]);
        let text = crate::support::stdout(&o);
        // Review 23 r23b F8: an ExecStart= of another drop-in changes
        // kubelet's command line, which plan refuses to price.
        if body.contains("ExecStart%3D") {
            let err = crate::support::stderr(&o);
            assert!(
                o.status.code() == Some(2)
                    && err.contains(&format!("{dropins}/{file} changes from"))
                    && err.contains("changes kubelet's command line or config"),
                "{file}: {text}{err}"
            );
            continue;
        }
        assert!(
            text.contains("taint - nvidia.com/gpu=true:NoSchedule") && text.contains(&why),
            "{file}: {text}"
        );
    }

    let named = tmp.path().join("named");
    render(&named, &["--rules", rules.to_str().unwrap()]);
    let env = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";
    // (At the top, listed: a subdirectory its kustomization does not list
    // is refused, as `kubectl apply -k` leaves it out.)
    std::fs::write(
        named.join("99-x:kustomization.yaml"),
        mc(
            "99-worker-gpu-clear",
            &format!(
                "      - path: {env}\n        mode: 420\n        contents:\n          \
                 source: \"data:,%5BService%5D%0A\"\n"
            ),
        ),
    )
    .unwrap();
    crate::support::relist_kustomization(&named, &["99-x:kustomization.yaml"], &[]);
    let o = plan(&base, &named, &fleet, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(json(&o)["taint_changes"], 2, "{}", stderr(&o));
}

/// Static taints that do not parse (a hand edit in a pull request: render
/// validates them): boot registers the fence alone (what they meant is
/// unknown); plan and explain say so, where they showed nothing of ours.
#[test]
fn unparsable_static_taints_show_the_fence_boot_registers() {
    let tmp = scratch_dir();
    let rules = repo().join("examples/rules/openshift-gpu.yaml");
    let base = tmp.path().join("base");
    render(&base, &["--rules", rules.to_str().unwrap()]);
    let fleet = repo().join("examples/fleet/fleet.json");
    let bogus = tmp.path().join("bogus");
    render(&bogus, &["--rules", rules.to_str().unwrap()]);
    let taints = kubelet_labeler::node::contract::TAINTS_VAR;
    std::fs::write(
        bogus.join("99-worker-gpu-taints.yaml"),
        format!(
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
             metadata:\n  name: 99-worker-gpu-taints\n  labels:\n    \
             machineconfiguration.openshift.io/role: worker-gpu\n\
             spec:\n  config:\n    ignition:\n      version: 3.4.0\n    storage:\n      \
             files:\n      - path: /etc/systemd/system/kubelet.service.d/95-taints.conf\n        \
             mode: 420\n        contents:\n          \
             source: \"data:,%5BService%5D%0AEnvironment%3D{taints}%3Dnvidia.com%2Fgpu%3Dtrue%3ABogus%0A\"\n"
        ),
    )
    .unwrap();
    crate::support::relist_kustomization(&bogus, &["99-worker-gpu-taints.yaml"], &[]);
    let fence = "kubelet-labeler.io/fenced=taints-unreadable:NoSchedule";

    let text = crate::support::stdout(&plan(&base, &bogus, &fleet, &[]));
    assert!(
        text.contains(&format!("taint + {fence}")) && text.contains("registers fenced"),
        "{text}"
    );
    // With kubelet's unit as the MCO renders it (the role's own config).
    let kubelet = tmp.path().join("01-worker-kubelet.yaml");
    let unit = "[Service]\nExecStart=/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf\n";
    let mc = crate::support::mco::mco_machineconfig(unit);
    std::fs::write(&kubelet, serde_json::to_string(&mc).unwrap()).unwrap();
    let mut c = bin();
    c.args(["explain", "--profile", "openshift", "--machineconfig"])
        .arg(&kubelet)
        .arg("--machineconfig")
        .arg(&bogus);
    let o = bounded(c);
    let shown = crate::support::stdout(&o);
    assert!(
        shown.contains(fence) && shown.contains("Bogus"),
        "{shown}\n{}",
        stderr(&o)
    );
}

/// A generator edited in a pull request (an `exit 0` before it writes the
/// wrapper's drop-in): the nodes start kubelet without ours, and plan and
/// explain said they kept the taint. It must be the code this release
/// renders; the same file unedited changes nothing.
#[test]
fn an_edited_generator_is_not_taken_for_ours() {
    use kubelet_labeler::cli::render::{arch::Arch, dropins};
    use kubelet_labeler::node::kubelet::Profile;
    let tmp = scratch_dir();
    let rules = repo().join("examples/rules/openshift-gpu.yaml");
    let base = tmp.path().join("base");
    render(&base, &["--rules", rules.to_str().unwrap()]);
    let fleet = repo().join("examples/fleet/fleet.json");
    let generator = kubelet_labeler::node::contract::GENERATOR_PATH;
    let ours = dropins::generator(Profile::OpenShift, "kubelet.service", &[Arch::X86_64]);
    let edited = ours.replacen("\nunit=", "\nexit 0\nunit=", 1);
    // A `#` line in the here-document is the drop-in's text, and `$(...)`
    // in it runs at boot (an empty taints line written after ours, by the
    // tenth review): no comment is taken for one.
    let commented = ours.replacen(
        "[Service]\n",
        "[Service]\n# $(printf '\\nEnvironment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=')\n",
        1,
    );
    for (name, text, changes) in [
        ("same", &ours, false),
        ("edited", &edited, true),
        ("commented", &commented, true),
    ] {
        let dir = tmp.path().join(name);
        render(&dir, &["--rules", rules.to_str().unwrap()]);
        let source = format!(
            "data:,{}",
            kubelet_labeler::cli::render::encoding::percent_encode(text.as_bytes())
        );
        let mc = serde_json::json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfig",
            "metadata": { "name": "99-worker-gpu-generator",
                          "labels": { "machineconfiguration.openshift.io/role": "worker-gpu" } },
            "spec": { "config": { "ignition": { "version": "3.4.0" },
                "storage": { "files": [ { "path": generator, "mode": 493,
                                          "contents": { "source": source, "compression": "" } } ] } } }
        });
        std::fs::write(
            dir.join("99-worker-gpu-generator.yaml"),
            serde_json::to_string(&mc).unwrap(),
        )
        .unwrap();
        crate::support::relist_kustomization(&dir, &["99-worker-gpu-generator.yaml"], &[]);
        let o = plan(&base, &dir, &fleet, &[]);
        let (text, err) = (crate::support::stdout(&o), stderr(&o));
        if !changes {
            assert_ne!(o.status.code(), Some(2), "{name}: {text}{err}");
            continue;
        }
        // Review 25 r25a F2b: refused, never priced as "writes nothing"
        // under render's cheap policy entry for the generator.
        assert_eq!(o.status.code(), Some(2), "{name}: {text}{err}");
        assert!(
            err.contains(&format!("{generator} changes from"))
                && err.contains("its code is not what this release renders"),
            "{name}: {err}"
        );
    }
}

/// File paths of a pull request's MachineConfig with newlines (Ignition
/// and the MCO take them): plan's text listed one raw, and its lines
/// forged a group header ("no change") under the real one; explain's
/// listing of the drop-ins forged a warning. Each name stays on its line,
/// its newlines escaped.
#[test]
fn a_path_with_newlines_forges_no_line_of_plan_or_explain() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let pr = tmp.path().join("pr");
    render(&pr, &[]);
    let forged = "== 2 nodes like gpu-a100-01 (pool worker-gpu): no change ==";
    crate::support::add_file_machineconfig(
        &pr,
        "60-worker-gpu-note",
        Some("worker-gpu"),
        &format!("/etc/note\n\n{forged}\n\nzz"),
        "x",
    );
    let warning = "warning: forged line";
    crate::support::add_file_machineconfig(
        &pr,
        "61-worker-gpu-dropin",
        Some("worker-gpu"),
        &format!("/etc/systemd/system/kubelet.service.d/95-x\n{warning}\n.conf"),
        "[Service]\n",
    );
    let fleet = repo().join("examples/fleet/fleet.json");
    let o = plan(&base, &pr, &fleet, &[]);
    let text = crate::support::stdout(&o);
    assert!(text.contains("/etc/note\\n\\n== 2 nodes"), "{text}");
    assert!(
        !text.lines().any(|l| l == forged || l.starts_with(warning)),
        "{text}"
    );

    let kubelet = tmp.path().join("01-worker-kubelet.yaml");
    let unit = "[Service]\nExecStart=/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf\n";
    let mc = crate::support::mco::mco_machineconfig(unit);
    std::fs::write(&kubelet, serde_json::to_string(&mc).unwrap()).unwrap();
    let mut c = bin();
    c.args(["explain", "--machineconfig"])
        .arg(&kubelet)
        .arg("--machineconfig")
        .arg(&pr);
    let o = bounded(c);
    let shown = crate::support::stdout(&o);
    assert!(
        shown.contains("drop-in: /etc/systemd/system/kubelet.service.d/95-x\\nwarning"),
        "{shown}\n{}",
        stderr(&o)
    );
    assert!(!shown.lines().any(|l| l.starts_with(warning)), "{shown}");
}

/// Review 13 r13b F7: plan lays out every pool of both renders; a worker
/// MachineConfig of large gzip'ed files that many small pools inherit
/// costs one budget for the whole run, not 64 MiB a pool. (Pools taking
/// the same MachineConfigs share one layout: each here has one of its own.)
#[test]
fn many_pools_inheriting_large_files_share_one_budget() {
    use base64::Engine;
    use std::io::Write;
    let dir = scratch_dir();
    let d = dir.path();
    let base = d.join("base");
    render(&base, &[]);
    let to = d.join("to");
    render(&to, &[]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0u8; 16 << 20]).unwrap();
    let z = base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap());
    let files: String = (0..3)
        .map(|i| {
            format!(
                "      - path: /etc/kubernetes/big/f{i}\n        mode: 420\n        contents:\n          \
                 compression: gzip\n          source: data:;base64,{z}\n"
            )
        })
        .collect();
    std::fs::write(
        to.join("60-worker-big.yaml"),
        format!(
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  \
             name: 60-worker-big\n  labels:\n    machineconfiguration.openshift.io/role: worker\n\
             spec:\n  config:\n    ignition:\n      version: 3.4.0\n    storage:\n      files:\n{files}"
        ),
    )
    .unwrap();
    let pools: String = (0..8)
        .map(|i| {
            format!(
                "---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\n\
                 metadata:\n  name: p{i}\nspec:\n  machineConfigSelector:\n    matchExpressions:\n    \
                 - key: machineconfiguration.openshift.io/role\n      operator: In\n      values: \
                 [worker, p{i}]\n  nodeSelector:\n    matchLabels:\n      example.com/p{i}: \"\"\n"
            )
        })
        .collect();
    std::fs::write(to.join("pools.yaml"), pools).unwrap();
    let own: String = (0..8)
        .map(|i| {
            format!(
                "---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
                 metadata:\n  name: 60-p{i}\n  labels:\n    \
                 machineconfiguration.openshift.io/role: p{i}\nspec:\n  config:\n    \
                 ignition:\n      version: 3.4.0\n"
            )
        })
        .collect();
    std::fs::write(to.join("pools-own.yaml"), own).unwrap();
    // Every manifest read, none listed.
    for d in [&base, &to] {
        let _ = std::fs::remove_file(d.join("kustomization.yaml"));
    }
    let fleet = repo().join("examples/fleet/fleet.json");
    let o = plan(&base, &to, &fleet, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("the run's budget"), "{}", stderr(&o));
}
