//! What the install-time selector reads must be what the installed node
//! reads at registration (review 13 r13c F3): the selector runs on the live
//! ISO, before any of the pool's MachineConfigs; the node registers after
//! them, on the cluster's OS. A MachineConfig a pool takes that changes an
//! input of the labels (a features.d file, a variable reaching kubelet's
//! `--node-labels`, `/etc/os-release`, the kernel command line or kernel),
//! or a `nodeSelector` on a label of the kernel or OS release, would let
//! the node register into another pool than the one it was installed
//! for, without that pool's first-boot taints. Refused, naming the
//! MachineConfig, the file or argument, the pool and the fix.

use std::cell::RefCell;
use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::cli::render::layout::RunSpent;

use crate::node::facts::FEATURES_DIR;
use crate::node::fleet::Requirement;

/// The files the MCO's kubelet.service reads with `EnvironmentFile=`
/// (4.14-4.20): what they set beats the drop-ins' `Environment=`.
pub(super) const KUBELET_ENV_FILES: &[&str] = &[
    "/etc/os-release",
    "/etc/kubernetes/kubelet-workaround",
    "/etc/kubernetes/kubelet-env",
    "/etc/node-sizing.env",
];

/// Files kubelet.service (or a drop-in of the MCO's) reads with
/// `EnvironmentFile=` besides `KUBELET_ENV_FILES`.
const MORE_ENV_FILES: &[&str] = &["/etc/kubernetes/node.env", "/etc/mco/proxy.env"];

/// The variables of those files the MCO's kubelet.service puts into
/// `--node-labels` (`node.openshift.io/os_id=${ID},${CUSTOM_KUBELET_LABELS}`).
const LABEL_VARIABLES: &[&str] = &["CUSTOM_KUBELET_LABELS", "ID"];

/// The OS release files (`ID` reaches `--node-labels`; rules read
/// `system.osrelease`).
const OS_RELEASE: &[&str] = &["/etc/os-release", "/usr/lib/os-release"];

/// Label key prefixes whose value is the kernel's or the OS release's: NFD's
/// built-in labels and the MCO's `os_id`.
const RELEASE_LABELS: &[&str] = &[
    "feature.node.kubernetes.io/kernel-version.",
    "feature.node.kubernetes.io/kernel-config.",
    "feature.node.kubernetes.io/kernel-selinux.",
    "feature.node.kubernetes.io/system-os_release.",
    "node.openshift.io/os_id",
];

/// Refuse a MachineConfig reaching `pool`'s nodes that changes what the
/// selector read on the live ISO.
pub(super) fn check_inputs(mc: &Value, source: &str, pool: &str, judged: &Judged) -> Result<()> {
    let mc_name = mc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let refuse = |what: &str, reads: &str, fix: &str| -> Result<()> {
        bail!(
            "{source}: MachineConfig {mc_name} (reaching pool {pool}'s nodes) {what}: the \
             install chooses the pool by {reads} as the live ISO has it, without this \
             MachineConfig, and the installed node registers with what it gives, so it \
             could land in another pool than {pool}, without that pool's first-boot \
             taints; {fix}"
        )
    };
    let out = "leave the MachineConfig out of the pools' sources";
    for (kind, path) in storage_entries(mc) {
        let clean = clean_path(path);
        let what = format!("writes {path}");
        if under(&clean, FEATURES_DIR) || (kind == "links" && under(FEATURES_DIR, &clean)) {
            refuse(
                &what,
                &format!("the local features in {FEATURES_DIR} (the rules' local.* features)"),
                &format!(
                    "{out}, or match on hardware: the pools cannot carry feature files \
                         the install does not see"
                ),
            )?;
        }
        // The record of the pool the machine was installed for (iso fleet's,
        // in the destination config): replaced, the node's pool-changed
        // check would judge by another pool than the install chose.
        if under(&clean, "/etc/kubelet-labeler")
            || (kind == "links" && under("/etc/kubelet-labeler", &clean))
        {
            bail!(
                "{source}: MachineConfig {mc_name} (reaching pool {pool}'s nodes) writes \
                 {path}: the installed node reads there the pool its install chose, which \
                 iso fleet writes; {out}"
            );
        }
        if OS_RELEASE
            .iter()
            .any(|p| clean == *p || (kind == "links" && under(p, &clean)))
        {
            refuse(
                &what,
                "the OS release (rules' system.osrelease, kubelet's node.openshift.io/os_id)",
                &format!("{out}; the pools cannot change {path}"),
            )?;
        }
        let env_files = KUBELET_ENV_FILES.iter().chain(MORE_ENV_FILES);
        let env_file = kind == "files" && env_files.clone().any(|p| clean == *p);
        if env_files
            .clone()
            .any(|p| kind == "links" && under(p, &clean))
            || (env_file && sets_label_variables(mc, &clean, judged).context(source.to_string())?)
        {
            refuse(
                &format!(
                    "{what}, which kubelet.service reads with EnvironmentFile=, {}",
                    if kind == "links" {
                        "as a link"
                    } else {
                        "setting CUSTOM_KUBELET_LABELS or ID (or not readable to tell)"
                    }
                ),
                "the labels kubelet's --node-labels gets",
                &format!(
                    "{out}, and give the pool's static labels with render machineconfig \
                         --pool {pool} --label instead"
                ),
            )?;
        }
    }
    let args = |p: &str| {
        mc.pointer(p)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    let kargs: Vec<String> = [
        "/spec/kernelArguments",
        "/spec/config/kernelArguments/shouldExist",
        "/spec/config/kernelArguments/shouldNotExist",
    ]
    .iter()
    .flat_map(|p| args(p))
    .collect();
    if !kargs.is_empty() {
        refuse(
            &format!("sets kernel arguments {}", kargs.join(" ")),
            "facts the kernel command line changes (cpu topology with nosmt, NUMA, \
             hugepages, kernel.* features; the fleet refuses every kernel argument in the \
             pools' sources rather than guess which)",
            &format!(
                "{out} (apply it once the nodes have joined, knowing their labels may change), \
                 or drop the kernel arguments"
            ),
        )?;
    }
    // Another OS image or extensions: the node registers on what they
    // give (its /etc, kernel and modules), not on what the install read.
    if let Some(url) = mc
        .pointer("/spec/osImageURL")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
    {
        refuse(
            &format!("sets osImageURL {url}"),
            "the OS the node registers on (its kernel, modules and /etc)",
            &format!("{out}, or drop osImageURL"),
        )?;
    }
    if mc
        .pointer("/spec/extensions")
        .and_then(Value::as_array)
        .is_some_and(|e| !e.is_empty())
    {
        refuse(
            "adds extensions",
            "the OS the node registers on (its kernel modules and files)",
            &format!("{out}, or drop the extensions"),
        )?;
    }
    if let Some(t) = mc.pointer("/spec/kernelType").and_then(Value::as_str)
        && !matches!(t, "" | "default")
    {
        refuse(
            &format!("sets kernelType {t}"),
            "the live ISO's kernel (kernel.* features, NFD's kernel-version labels)",
            &format!("{out}, or drop kernelType"),
        )?;
    }
    Ok(())
}

/// Refuse a pool `nodeSelector` on a label whose value is the kernel's or
/// the OS release's: the install reads the live ISO's, the node registers
/// on the cluster's OS (the first boot moves it to the cluster's image).
pub(super) fn check_selector_keys(
    pool: &str,
    selector: &[Requirement],
    source: &str,
) -> Result<()> {
    for r in selector {
        let (Requirement::In(key, _)
        | Requirement::NotIn(key, _)
        | Requirement::Exists(key)
        | Requirement::DoesNotExist(key)) = r;
        if RELEASE_LABELS.iter().any(|p| key.starts_with(p)) {
            bail!(
                "pool {pool}: the nodeSelector in {source} reads {key}, whose value is the \
                 kernel's or the OS release's: the install reads the live ISO's, the node \
                 registers with the installed OS's (its first boot moves it to the cluster's \
                 image), so it could land in another pool than {pool}, without its first-boot \
                 taints; select on a hardware label instead"
            );
        }
    }
    Ok(())
}

/// A path as the node resolves it: `.`, `..` and repeated `/` removed.
pub(super) fn clean_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether node path `path` is `dir` or under it.
/// A MachineConfig's storage entries: their list (`files`, `links`,
/// `directories`) and their path.
pub(super) fn storage_entries(mc: &Value) -> impl Iterator<Item = (&'static str, &str)> {
    let storage = mc.pointer("/spec/config/storage");
    ["files", "links", "directories"]
        .into_iter()
        .flat_map(move |kind| {
            (storage.and_then(|s| s.get(kind)).and_then(Value::as_array))
                .into_iter()
                .flatten()
                .filter_map(move |e| Some((kind, e.get("path").and_then(Value::as_str)?)))
        })
}

fn under(path: &str, dir: &str) -> bool {
    path == dir || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

/// What the checks judged of the MachineConfigs' files, by MachineConfig
/// name (one a name: `pool_configs`), node path and check: the file of a
/// MachineConfig every pool takes (worker's) is unpacked once, not once a
/// pool.
#[derive(Default)]
pub(super) struct Judged(RefCell<BTreeMap<(String, String, &'static str), bool>>);

impl Judged {
    /// `judge` of what `mc` writes at the clean node path `path`
    /// ([`read_file`]), once for each MachineConfig, path and `check`.
    pub(super) fn file(
        &self,
        mc: &Value,
        path: &str,
        check: &'static str,
        judge: impl FnOnce(Read) -> bool,
    ) -> Result<bool> {
        let name = mc.pointer("/metadata/name").and_then(Value::as_str);
        let key = (name.unwrap_or("").to_string(), path.to_string(), check);
        if let Some(&judged) = self.0.borrow().get(&key) {
            return Ok(judged);
        }
        let judged = judge(read_file(mc, path)?);
        self.0.borrow_mut().insert(key, judged);
        Ok(judged)
    }
}

/// What a MachineConfig writes at a node path, as the checks read it.
pub(super) enum Read {
    /// No file (a directory, or nothing).
    Nothing,
    /// A file that cannot be read to tell (not a data URL, over the cap, a
    /// link leading out of the MachineConfig, a path the MCO refuses).
    Unreadable,
    Contents(Vec<u8>),
}

/// What `mc` writes at the clean node path `path`: only its file entries
/// at that path are merged and unpacked, none of its other files. Past the
/// run's budget (`with_run_budget`), an error naming the MachineConfig, the
/// path and the fix.
pub(super) fn read_file(mc: &Value, path: &str) -> Result<Read> {
    let entries: Vec<&Value> = (mc.pointer("/spec/config/storage/files"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| {
            f.get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| clean_path(p) == path)
        })
        .collect();
    if entries.is_empty() {
        return Ok(Read::Nothing);
    }
    let only = json!({
        "metadata": {
            "name": mc.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
            "labels": mc.pointer("/metadata/labels").cloned().unwrap_or(Value::Null),
        },
        "spec": { "config": { "storage": { "files": entries } } }
    });
    let read = crate::cli::render::layout::Layout::merge(vec![only]).and_then(|l| l.file(path));
    match read {
        Ok(Some(f)) => Ok(Read::Contents(f.contents)),
        Ok(None) => Ok(Read::Nothing),
        Err(e) if e.downcast_ref::<RunSpent>().is_some() => Err(e),
        Err(_) => Ok(Read::Unreadable),
    }
}

/// Whether `mc`'s env file at `path` sets a variable that reaches
/// `--node-labels` (or cannot be read to tell).
fn sets_label_variables(mc: &Value, path: &str, judged: &Judged) -> Result<bool> {
    judged.file(mc, path, "label variables", |read| {
        let contents = match read {
            Read::Nothing => return false,
            Read::Unreadable => return true,
            Read::Contents(c) => c,
        };
        // Read as systemd reads an EnvironmentFile= (a lone CR ends a line
        // too), and by text as well (a variable named in any form is refused).
        let text = String::from_utf8_lossy(&contents).replace("\\\n", "");
        text.contains("CUSTOM_KUBELET_LABELS")
            // One systemd would not load is refused too: it is no place
            // to judge.
            || crate::node::unit::env_file::parse_env_file(&contents).map_or(true, |set| {
                set.iter()
                    .any(|(k, _)| LABEL_VARIABLES.contains(&k.as_str()))
            })
            || text.split(['\n', '\r']).any(|l| {
                let l = l.trim_start();
                let l = l.strip_prefix("export").unwrap_or(l);
                l.split_once('=')
                    .is_some_and(|(k, _)| LABEL_VARIABLES.contains(&k.trim()))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(files: &[(&str, &str)], spec: Value) -> Value {
        let files: Vec<Value> = files
            .iter()
            .map(|(p, t)| {
                json!({ "path": p, "contents": { "source": format!("data:,{}",
                    crate::cli::render::encoding::percent_encode(t.as_bytes())) } })
            })
            .collect();
        let mut v = json!({ "metadata": { "name": "60-x" },
            "spec": { "config": { "ignition": { "version": "3.4.0" },
                                  "storage": { "files": files } } } });
        if let (Some(s), Some(extra)) = (v["spec"].as_object_mut(), spec.as_object()) {
            s.extend(extra.clone());
        }
        v
    }

    #[test]
    fn env_files_only_with_label_variables() {
        let env = "/etc/kubernetes/kubelet-env";
        assert!(
            check_inputs(
                &mc(&[(env, "KUBELET_X=1\n")], json!({})),
                "s",
                "p",
                &Judged::default()
            )
            .is_ok()
        );
        for text in [
            "CUSTOM_KUBELET_LABELS=a=b\n",
            " export ID=x\n",
            "I\\\nD=x\n",
            // Review 15: a lone CR ends a line for systemd.
            "X=1\rID=x\n",
            "X=\"a\"\rID=x",
        ] {
            let e = check_inputs(&mc(&[(env, text)], json!({})), "s", "p", &Judged::default())
                .unwrap_err();
            assert!(e.to_string().contains("EnvironmentFile="), "{e}");
        }
    }

    #[test]
    fn features_os_release_kernel() {
        let f = format!("{FEATURES_DIR}/x");
        for (m, needle) in [
            (mc(&[(&f, "x\n")], json!({})), "local.*"),
            (
                mc(&[("/etc/./os-release", "ID=x\n")], json!({})),
                "OS release",
            ),
            (mc(&[], json!({ "kernelArguments": ["nosmt"] })), "nosmt"),
            (mc(&[], json!({ "kernelType": "realtime" })), "realtime"),
            // Review 14 r14c F2's variants.
            (
                mc(&[], json!({ "osImageURL": "quay.io/x/os@sha256:00" })),
                "osImageURL",
            ),
            (mc(&[], json!({ "extensions": ["usbguard"] })), "extensions"),
            // Review 16 r16c F1: the installed-pool record.
            (
                mc(&[("/etc/kubelet-labeler/installed-pool", "x\n")], json!({})),
                "the pool its install chose",
            ),
        ] {
            let e = check_inputs(&m, "s", "p", &Judged::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle) && e.contains("60-x"), "{e}");
        }
        let ign =
            json!({ "config": { "kernelArguments": { "shouldNotExist": ["mitigations=off"] } } });
        let mut m = mc(&[], json!({}));
        m["spec"]["config"]["kernelArguments"] = ign["config"]["kernelArguments"].clone();
        assert!(check_inputs(&m, "s", "p", &Judged::default()).is_err());
        assert!(
            check_inputs(
                &mc(&[("/etc/motd", "hi")], json!({})),
                "s",
                "p",
                &Judged::default()
            )
            .is_ok()
        );
        // A link over the directory of features.d or of the env files.
        let mut m = mc(&[], json!({}));
        m["spec"]["config"]["storage"]["links"] =
            json!([{ "path": "/etc/kubernetes/", "target": "/var/k" }]);
        let e = check_inputs(&m, "s", "p", &Judged::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("writes /etc/kubernetes/"), "{e}");
    }

    #[test]
    fn release_label_selectors() {
        let sel = |k: &str| vec![Requirement::Exists(k.to_string())];
        assert!(
            check_selector_keys(
                "p",
                &sel("feature.node.kubernetes.io/kernel-version.major"),
                "s"
            )
            .is_err()
        );
        assert!(check_selector_keys("p", &sel("feature.node.kubernetes.io/gpu"), "s").is_ok());
    }
}
