//! The files render's disruption policy prices, held to what render
//! writes (review 25 r25a F2b, F6, F7). Render's `MachineConfiguration`
//! prices the wrapper binary `None`, the generator a daemon-reload and our
//! sync units a daemon-reload and a restart of themselves: cheap, because
//! render's own content is known. The policy cannot tell content: a pull
//! request that puts another program at the wrapper's path, another
//! command in the sync unit (run as root on every node at once by that
//! very restart) or another script at the generator's path (run by
//! systemd at the daemon-reload, free to rewrite kubelet.service) would
//! be priced as render's. So when one of them changes, what the proposed
//! render holds there must be this release's render of it: the wrapper
//! byte for byte one plan vouches for (`--wrapper`, or the one installed
//! beside this program, as render finds it), the generator and the units
//! as render writes them. Anything else is refused, never priced.
//! (render's drop-ins of kubelet.service are `kubelet_unit`'s.) Each
//! path is judged by `node_path`'s spelling, through CoreOS's fixed links
//! (review 29 r29a F3: /var/usrlocal/bin/kubelet-labeler-wrapper.x86_64
//! writes the wrapper, /usr/local being a link to /var/usrlocal).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::cli::render::arch::Arch;
use crate::cli::render::merge_inputs::node_path;
use crate::cli::render::sync_units::{SYNC_PATH, SYNC_SERVICE, sync_path, sync_service};
use crate::node::contract::{GENERATOR_PATH, WRAPPER_PATH};
use crate::node::kubelet::Profile;
use serde_json::Value;

/// One of render's policy files in a pool's layout: what is written
/// there (`Layout::identities`, and its owner) and why it is not this
/// release's render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    id: (u64, Option<String>),
    not_ours: Option<String>,
    /// The storage path as the MachineConfig spells it.
    written: String,
}

/// The owner and mode the last storage entry (in the MCO's merge order)
/// gives each of render's policy paths, by the path as written: the owner
/// when it names one other than root (render names none), the mode as
/// given (Ignition's default 0644 when none; setuid bits too, which the
/// laid-out tree drops).
pub fn owners(configs: &[&Value]) -> BTreeMap<String, (String, u32)> {
    let order = crate::cli::render::layout::merge_order(configs)
        .unwrap_or_else(|_| (0..configs.len()).collect());
    let mut out = BTreeMap::new();
    for i in order {
        let Some(mc) = configs.get(i) else { continue };
        let files = mc
            .pointer("/spec/config/storage/files")
            .and_then(Value::as_array);
        for f in files.into_iter().flatten() {
            let Some(path) = f.get("path").and_then(Value::as_str) else {
                continue;
            };
            if !is_policy_path(path) {
                continue;
            }
            let given = |k: &str| f.get(k).filter(|v| !v.is_null()).cloned();
            let owner = [("user", given("user")), ("group", given("group"))]
                .into_iter()
                .filter_map(|(k, v)| Some((k, v?)))
                .filter(|(_, v)| {
                    let root = v.get("name").and_then(Value::as_str) == Some("root")
                        || v.get("id").and_then(Value::as_u64) == Some(0);
                    !root && v.as_object().is_none_or(|o| !o.is_empty())
                })
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ");
            let mode = match f.get("mode").and_then(Value::as_u64) {
                Some(m) => u32::try_from(m).unwrap_or(u32::MAX),
                None => 0o644,
            };
            out.insert(path.to_string(), (owner, mode));
        }
    }
    out
}

/// Whether node path `path` (in any spelling, [`node_path`]) is one of
/// render's policy files (the env drop-ins aside).
pub(super) fn is_policy_path(path: &str) -> bool {
    let path = node_path(path);
    path == GENERATOR_PATH
        || path == format!("/etc/systemd/system/{SYNC_SERVICE}")
        || path == format!("/etc/systemd/system/{SYNC_PATH}")
        || wrapper_arch(&path).is_some()
}

/// The architecture named by the wrapper's path `path` ([`node_path`]'s
/// spelling), if it is one.
fn wrapper_arch(path: &str) -> Option<&str> {
    path.strip_prefix(WRAPPER_PATH)?.strip_prefix('.')
}

/// The mode render writes `path` ([`node_path`]'s spelling) with.
fn render_s_mode(path: &str) -> u32 {
    if path == GENERATOR_PATH || wrapper_arch(path).is_some() {
        0o755
    } else {
        0o644
    }
}

/// Render's policy files by [`node_path`]'s spelling.
pub type Files = BTreeMap<String, Judged>;

/// The wrappers plan vouches for: the `--wrapper` files, and for an
/// architecture they do not cover, the static wrapper beside this program.
pub struct Vouched {
    files: Vec<PathBuf>,
    /// The profile our generator must be rendered with (plan's).
    profile: Profile,
    /// Per architecture, read once: the bytes, or why there are none.
    found: std::cell::RefCell<BTreeMap<Arch, std::result::Result<Vec<u8>, String>>>,
}

impl Vouched {
    pub fn new(files: Vec<PathBuf>, profile: Profile) -> Vouched {
        Vouched {
            files,
            profile,
            found: Default::default(),
        }
    }

    /// Why `bytes`, at the wrapper's path for `arch`, is not a wrapper
    /// plan vouches for.
    fn refuses(&self, arch: Arch, bytes: &[u8]) -> Option<String> {
        let mut found = self.found.borrow_mut();
        let known = found.entry(arch).or_insert_with(|| {
            let lookup = crate::cli::render::wrappers::Lookup::of_this_program()
                .map_err(|e| format!("{e:#}"))?;
            let all = lookup
                .wrappers_for(&[arch], &self.files)
                .map_err(|e| format!("{e:#}"))?;
            all.into_iter()
                .find(|(a, _)| *a == arch)
                .map(|(_, b)| b)
                .ok_or_else(|| format!("no {arch} wrapper among --wrapper"))
        });
        match known {
            Ok(ours) if ours == bytes => None,
            Ok(_) => Some(format!(
                "it is not the {arch} wrapper plan was given (--wrapper, else the one installed \
                 beside this program): plan with the release that rendered the change, or pass \
                 that release's wrapper as --wrapper"
            )),
            Err(why) => Some(format!(
                "plan has no wrapper of this release to compare it with ({why})"
            )),
        }
    }
}

/// A unit name as render writes one into our units.
fn unit_name(u: &str) -> bool {
    !u.is_empty()
        && u.len() <= 255
        && u.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"@._-:".contains(&c))
}

/// A label key as render takes `--pool-label`'s (a qualified name, with a
/// DNS prefix): what may stand in the sync's command line unquoted.
fn label_key(k: &str) -> bool {
    crate::node::kubelet::labels::label_key_errors(k).is_empty()
}

/// Why `text` is not the sync service render writes (for either profile,
/// any unit, any pool label).
fn sync_service_not_ours(text: &str) -> Option<String> {
    let args = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart=/bin/sh -c 'exec "))
        .and_then(|l| l.strip_suffix('\''))
        .and_then(|l| l.split_once(' ').map(|(_, a)| a));
    let words: Vec<&str> = args.unwrap_or_default().split(' ').collect();
    let after = |flag: &str| {
        let i = words.iter().position(|w| *w == flag)?;
        words.get(i + 1).copied()
    };
    let unit = after("--unit").filter(|u| unit_name(u));
    let label = after("--pool-label");
    if label.is_some_and(|k| !label_key(k)) {
        return Some("its --pool-label is not a label key".into());
    }
    let rendered = unit.is_some_and(|u| {
        [Profile::OpenShift, Profile::Upstream]
            .into_iter()
            .any(|p| sync_service(p, u, label) == text)
    });
    (!rendered).then(|| "it is not the unit this release renders".into())
}

/// Why `text` is not the sync path unit render writes (for any unit).
fn sync_path_not_ours(text: &str) -> Option<String> {
    let unit = text
        .lines()
        .find_map(|l| l.strip_prefix("PathChanged=/etc/systemd/system/"))
        .and_then(|d| d.strip_suffix(".d"))
        .filter(|u| unit_name(u));
    let rendered = unit.is_some_and(|u| sync_path(u) == text);
    (!rendered).then(|| "it is not the unit this release renders".into())
}

/// Render's policy files that `root` (a pool's laid-out tree, `ids` its
/// layout's identities) holds, each judged.
pub fn judge(
    root: &Path,
    ids: &BTreeMap<String, u64>,
    owners: &BTreeMap<String, (String, u32)>,
    vouched: &Vouched,
) -> Files {
    let service = format!("/etc/systemd/system/{SYNC_SERVICE}");
    // The architectures the pool ships a wrapper for: the generator must
    // run it on each (review 26 r26a F1).
    let arches: Vec<String> = (ids.keys())
        .filter_map(|p| wrapper_arch(&node_path(p)).map(str::to_string))
        .collect();
    let mut out = Files::new();
    for (written, &id) in ids {
        // Judged by its one spelling; read, and its owner looked up, as
        // written (the laid-out tree follows no link).
        let path = &node_path(written);
        let arch = wrapper_arch(path);
        if !is_policy_path(path) {
            continue;
        }
        // Render's bytes are render's only as root's, at render's mode
        // (review 27 r27a F2: the wrapper writable by core or by anyone).
        let (owner, mode) = owners.get(written).cloned().unwrap_or_default();
        let not_ours = if let Some(other) = out.get(path).map(|j: &Judged| &j.written) {
            Some(format!(
                "it is written as both {other} and {written}, one node file on CoreOS: \
                 write it once, as {path}"
            ))
        } else if !owner.is_empty() {
            Some(format!(
                "it is owned by {owner}, not root as render writes it"
            ))
        } else if owners.contains_key(written) && mode != render_s_mode(path) {
            Some(format!(
                "its mode is {mode:04o}, not {:04o} as render writes it",
                render_s_mode(path)
            ))
        } else if path == GENERATOR_PATH {
            crate::cli::explain::reach::generator_not_this_release(root, vouched.profile, &arches)
        } else {
            match super::kubelet_unit::regular(root, written) {
                Err(why) => Some(why),
                Ok(bytes) => match arch {
                    Some(a) => match Arch::from_name(a) {
                        Some(a) => vouched.refuses(a, &bytes),
                        None => Some(format!("no architecture is named {a:?}")),
                    },
                    None => match std::str::from_utf8(&bytes) {
                        Err(_) => Some("it is not UTF-8 text".into()),
                        Ok(text) if *path == service => sync_service_not_ours(text),
                        Ok(text) => sync_path_not_ours(text),
                    },
                },
            }
        };
        out.insert(
            path.clone(),
            Judged {
                id: (id, Some(format!("{owner} {mode:o}"))),
                not_ours,
                written: written.clone(),
            },
        );
    }
    out
}

/// Refuse, in pool `pool`, one of render's policy files that the change
/// writes otherwise than this release renders it. What the base holds is
/// what the nodes run already (an earlier release's, say): only what the
/// change writes is held to this release.
pub fn check((from, to): (&str, &str), pool: &str, before: &Files, after: &Files) -> Result<()> {
    // A wrapper dropped while the generator stays: nodes of that
    // architecture start kubelet without it (review 26 r26a F1). Removing
    // ours whole is priced by the registrations it changes.
    if after.contains_key(GENERATOR_PATH) {
        let dropped = (before.keys())
            .find(|p| p.starts_with(&format!("{WRAPPER_PATH}.")) && !after.contains_key(*p));
        if let Some(path) = dropped {
            bail!(
                "{to}: pool {pool}: {path} is in {from} and not in {to}, while our generator \
                 stays: nodes of that architecture would start kubelet without the wrapper (no \
                 labels or taints of ours, no fence), which plan cannot tell apart by node; \
                 keep the wrapper, or remove kubelet-labeler from the pool whole"
            );
        }
    }
    for (path, a) in after {
        if before.get(path).map(|b| &b.id) == Some(&a.id) {
            continue;
        }
        if let Some(why) = &a.not_ours {
            let path = match &a.written {
                w if w != path => format!("{w} (CoreOS's {path})"),
                _ => path.clone(),
            };
            bail!(
                "{to}: pool {pool}: {path} changes from {from} and is not what render writes \
                 there ({why}): render's disruption policy prices the file as render writes it \
                 (the wrapper at kubelet's next start, the generator by a daemon-reload, our \
                 sync units by restarting them on every node at once), so other content would \
                 run unpriced; re-render it, and put anything else in a file of your own"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_s_sync_units_are_told_by_their_content() {
        for p in [Profile::OpenShift, Profile::Upstream] {
            for label in [None, Some("node.kubernetes.io/worker-gpu")] {
                let svc = sync_service(p, "kubelet.service", label);
                assert_eq!(sync_service_not_ours(&svc), None, "{svc}");
                let evil = svc.replace(
                    "ExecStart=/bin/sh",
                    "ExecStartPre=/bin/systemctl stop kubelet.service\nExecStart=/bin/sh",
                );
                assert!(sync_service_not_ours(&evil).is_some());
            }
        }
        let svc = sync_service(Profile::OpenShift, "kubelet.service", None);
        let line = svc.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
        let evil = svc.replace(line, "ExecStart=/bin/systemctl stop kubelet.service");
        assert!(sync_service_not_ours(&evil).is_some());
        // A label that would end the shell word is no label key.
        let quoted = sync_service(Profile::OpenShift, "kubelet.service", Some("a';reboot;'"));
        assert!(sync_service_not_ours(&quoted).is_some());
        let path = sync_path("kubelet.service");
        assert_eq!(sync_path_not_ours(&path), None);
        assert!(sync_path_not_ours(&format!("{path}ExecStart=/bin/true\n")).is_some());
    }

    /// Review 27 r27a F2: render's bytes at another owner or mode.
    #[test]
    fn render_s_files_are_render_s_only_as_root_s_at_render_s_mode() {
        let file = |extra: Value| {
            let mut f = serde_json::json!({"path": GENERATOR_PATH, "mode": 493,
                                           "contents": {"source": "data:,x"}});
            for (k, v) in extra.as_object().unwrap() {
                f[k] = v.clone();
            }
            serde_json::json!({"metadata": {"name": "50-x"},
                "spec": {"config": {"storage": {"files": [f]}}}})
        };
        let of = |extra: Value| owners(&[&file(extra)])[GENERATOR_PATH].clone();
        assert_eq!(of(serde_json::json!({})), (String::new(), 0o755));
        assert_eq!(
            of(serde_json::json!({"user": {"name": "root"}, "group": {"id": 0}})),
            (String::new(), 0o755)
        );
        assert_eq!(
            of(serde_json::json!({"user": {"name": "core"}})).0,
            r#"user {"name":"core"}"#
        );
        assert_eq!(of(serde_json::json!({"mode": 2541})).1, 0o4755);
        assert_eq!(of(serde_json::json!({"mode": null})).1, 0o644);
    }

    /// Review 29 r29a F3: CoreOS's /var/usrlocal/bin is /usr/local/bin.
    #[test]
    fn render_s_files_are_told_in_either_spelling() {
        let other = format!("{WRAPPER_PATH}.x86_64").replace("/usr/local/", "/var/usrlocal/");
        assert!(is_policy_path(&format!("{WRAPPER_PATH}.x86_64")));
        assert!(is_policy_path(&other));
        assert!(is_policy_path(&other.replace("x86_64", "aarch64")));
        assert!(!is_policy_path(
            "/var/usrlocal/bin/kubelet-labeler-wrapperx"
        ));
        assert!(is_policy_path(GENERATOR_PATH));
        assert_eq!(render_s_mode(&node_path(&other)), 0o755);
        let mc = serde_json::json!({"metadata": {"name": "60-x"}, "spec": {"config": {"storage":
            {"files": [{"path": other, "mode": 511, "user": {"name": "core"}}]}}}});
        let got = owners(&[&mc]);
        assert_eq!(got[&other], (r#"user {"name":"core"}"#.to_string(), 0o777));
    }

    #[test]
    fn only_what_the_change_writes_is_held_to_this_release() {
        let j = |id, bad: bool| Judged {
            id: (id, None),
            not_ours: bad.then(|| "x".into()),
            written: GENERATOR_PATH.into(),
        };
        let p = |v: Judged| Files::from([(GENERATOR_PATH.to_string(), v)]);
        let sides = ("a", "b");
        // The base's own (an earlier release's), unchanged or replaced by ours.
        assert!(check(sides, "w", &p(j(1, true)), &p(j(1, true))).is_ok());
        assert!(check(sides, "w", &p(j(1, true)), &p(j(2, false))).is_ok());
        assert!(check(sides, "w", &p(j(1, false)), &Files::new()).is_ok());
        let e = check(sides, "w", &p(j(1, false)), &p(j(2, true))).unwrap_err();
        assert!(e.to_string().contains(GENERATOR_PATH), "{e}");
        assert!(check(sides, "w", &Files::new(), &p(j(2, true))).is_err());
        // A wrapper dropped while the generator stays.
        let wrapper = format!("{WRAPPER_PATH}.aarch64");
        let mut two = p(j(1, false));
        two.insert(wrapper.clone(), j(3, false));
        let e = check(sides, "w", &two, &p(j(1, false))).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("{wrapper} is in a and not in b")),
            "{e}"
        );
        // Ours removed whole is the registrations' to price.
        check(sides, "w", &two, &Files::new()).unwrap();
    }
}
