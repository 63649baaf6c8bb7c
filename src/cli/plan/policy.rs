//! The MCO's own node disruption policy entries: the operator merges the
//! cluster's `MachineConfiguration` over them (an entry of the cluster's
//! for the same path replaces the default one), so the cluster's own files
//! (pull secrets, registries, CA bundles) change without a reboot even where
//! no one wrote a policy. Facts read from openshift/machine-config-operator's
//! release branches (`pkg/apihelpers`, the defaults the operator merges the
//! user's entries over); they differ by release.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow, bail};
use serde_json::Value;

/// One default entry: the path, its actions (as `kube::policy_files` writes
/// them), and the first OpenShift release that has it, as the kubelet's
/// minor version of that release (OpenShift 4.N runs Kubernetes 1.N+13).
struct Entry {
    path: &'static str,
    actions: &'static [&'static str],
    since_kubelet_minor: u32,
}

/// Node disruption policies came with OpenShift 4.17 (Kubernetes 1.30).
pub const FIRST_KUBELET_MINOR: u32 = 30;

const CRIO_RELOAD: &[&str] = &["Reload crio.service"];
const DEFAULTS: &[Entry] = &[
    Entry {
        path: "/var/lib/kubelet/config.json",
        actions: &["None"],
        since_kubelet_minor: 30,
    },
    Entry {
        path: "/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
        actions: CRIO_RELOAD,
        since_kubelet_minor: 30,
    },
    Entry {
        path: "/etc/containers/policy.json",
        actions: CRIO_RELOAD,
        since_kubelet_minor: 30,
    },
    // The MCO decides by the change: crio reloads, and the node drains
    // when the change is not one it judges safe.
    Entry {
        path: "/etc/containers/registries.conf",
        actions: &["Special"],
        since_kubelet_minor: 30,
    },
    Entry {
        path: "/etc/containers/registries.d",
        actions: CRIO_RELOAD,
        since_kubelet_minor: 30,
    },
    Entry {
        path: "/etc/nmstate/openshift",
        actions: &["None"],
        since_kubelet_minor: 30,
    },
    Entry {
        path: "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
        actions: &[
            "Restart coreos-update-ca-trust.service",
            "Restart crio.service",
        ],
        since_kubelet_minor: 30,
    },
    // OpenShift 4.18.
    Entry {
        path: "/etc/crio/policies",
        actions: CRIO_RELOAD,
        since_kubelet_minor: 31,
    },
    // OpenShift 4.22.
    Entry {
        path: "/etc/kubernetes/credential-providers",
        actions: &["Restart kubelet.service"],
        since_kubelet_minor: 35,
    },
    Entry {
        path: "/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf",
        actions: &["DaemonReload", "Restart kubelet.service"],
        since_kubelet_minor: 35,
    },
    Entry {
        path: "/etc/iri-registry",
        actions: &["Restart iri-registry.service"],
        since_kubelet_minor: 35,
    },
    Entry {
        path: "/usr/local/bin/load-registry-image.sh",
        actions: &["Restart iri-registry.service"],
        since_kubelet_minor: 35,
    },
    Entry {
        path: "/etc/pki/ca-trust/source/anchors/iri-root-ca.crt",
        actions: &["Restart coreos-update-ca-trust.service"],
        since_kubelet_minor: 35,
    },
];

/// The MCO's default unit entries (`iri-registry.service` from 4.22 on).
const DEFAULT_UNITS: &[Entry] = &[Entry {
    path: "iri-registry.service",
    actions: &["DaemonReload", "Restart iri-registry.service"],
    since_kubelet_minor: 35,
}];

/// What applying a change costs a node, worst first (the MCO's
/// post-config-change actions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Disruption {
    #[default]
    Nothing,
    DaemonReload,
    Reload,
    Restart,
    /// The node drains (its pods are evicted) and is not rebooted: a
    /// `Drain` action, or `Special` (registries.conf) for a change the
    /// MCO does not judge safe (`registries::judge`).
    Drain,
    DrainAndReboot,
}

impl Disruption {
    pub fn as_str(self) -> &'static str {
        match self {
            Disruption::Nothing => "nothing",
            Disruption::DaemonReload => "a daemon-reload",
            Disruption::Reload => "a service reload",
            Disruption::Restart => "a service restart",
            Disruption::Drain => "a drain",
            Disruption::DrainAndReboot => "a drain and reboot",
        }
    }

    /// The worst of a policy entry's actions (as `policy_of` writes them).
    fn of_actions(actions: &[String]) -> Disruption {
        actions
            .iter()
            .map(|a| match a.split_once(' ').map_or(a.as_str(), |(t, _)| t) {
                "None" => Disruption::Nothing,
                "DaemonReload" => Disruption::DaemonReload,
                "Restart" => Disruption::Restart,
                // `Special` (registries.conf): crio reloads; whether the
                // node drains too is judged on the file
                // (`registries::judge`).
                "Reload" | "Special" => Disruption::Reload,
                "Drain" => Disruption::Drain,
                _ => Disruption::DrainAndReboot,
            })
            .max()
            .unwrap_or(Disruption::DrainAndReboot)
    }
}

/// Entries of a disruption policy: a path or unit name with its actions
/// (`Restart kubelet-labeler-sync.service`).
pub type Entries = Vec<(String, Vec<String>)>;

/// `spec.nodeDisruptionPolicy` of a MachineConfiguration, or the policy
/// the daemon applies (the MCO's defaults under it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DisruptionPolicy {
    pub files: Entries,
    pub units: Entries,
    /// Empty: the MCO's default (`None`).
    pub sshkey: Vec<String>,
}

/// What the daemon compares between two rendered configs of a pool.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Changed {
    File(String),
    Unit(String),
    /// `passwd`: the only part of it the MCO changes in place is core's
    /// SSH keys.
    SshKeys,
}

impl DisruptionPolicy {
    /// The policy's entries read from a MachineConfiguration, refused as
    /// its CRD refuses them (the API server would refuse the object, and
    /// the cluster would keep its policy).
    pub fn of_machineconfiguration(v: &Value, source: &str) -> Result<DisruptionPolicy> {
        let Some(ndp) = v
            .pointer("/spec/nodeDisruptionPolicy")
            .filter(|p| !p.is_null())
        else {
            return Ok(DisruptionPolicy::default());
        };
        let refuse = |why: String| {
            anyhow!(
                "{source}: MachineConfiguration spec.nodeDisruptionPolicy.{why}: the API server \
                 refuses the object (its CRD's validation), so the cluster keeps its policy; \
                 fix the entry"
            )
        };
        let obj = ndp
            .as_object()
            .ok_or_else(|| refuse("is not an object".into()))?;
        for k in obj.keys() {
            if !["files", "units", "sshkey"].contains(&k.as_str()) {
                return Err(refuse(format!("{k} is not a field")));
            }
        }
        let list = |field: &str, key: &str| -> Result<Entries> {
            let Some(items) = ndp.get(field).filter(|v| !v.is_null()) else {
                return Ok(Vec::new());
            };
            let items = items
                .as_array()
                .ok_or_else(|| refuse(format!("{field} is not a list")))?;
            if items.len() > MAX_ENTRIES {
                return Err(refuse(format!(
                    "{field} has {} entries, more than {MAX_ENTRIES}",
                    items.len()
                )));
            }
            let mut out: Entries = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let at = format!("{field}[{i}]");
                let o = item
                    .as_object()
                    .ok_or_else(|| refuse(format!("{at} is not an object")))?;
                for k in o.keys() {
                    if k != key && k != "actions" {
                        return Err(refuse(format!("{at}.{k} is not a field")));
                    }
                }
                let name = item
                    .get(key)
                    .and_then(Value::as_str)
                    .ok_or_else(|| refuse(format!("{at}.{key} is missing")))?;
                if key == "name" {
                    service_name(name)
                        .map_err(|why| refuse(format!("{at}.name {name:?}: {why}")))?;
                }
                if out.iter().any(|(n, _)| n == name) {
                    return Err(refuse(format!(
                        "{field}: two entries for {key} {name:?} (a list keyed by {key})"
                    )));
                }
                let actions =
                    actions_of(item.get("actions"), &format!("{at}.actions")).map_err(refuse)?;
                out.push((name.to_string(), actions));
            }
            Ok(out)
        };
        let files = list("files", "path")?;
        let units = list("units", "name")?;
        let sshkey = match ndp.get("sshkey").filter(|v| !v.is_null()) {
            None => Vec::new(),
            Some(s) => {
                let o = s
                    .as_object()
                    .ok_or_else(|| refuse("sshkey is not an object".into()))?;
                if let Some(k) = o.keys().find(|k| *k != "actions") {
                    return Err(refuse(format!("sshkey.{k} is not a field")));
                }
                actions_of(s.get("actions"), "sshkey.actions").map_err(refuse)?
            }
        };
        Ok(DisruptionPolicy {
            files,
            units,
            sshkey,
        })
    }

    /// Another policy's entries over these, keyed by path and by unit
    /// name as the API server merges the lists on a server-side apply;
    /// refused past the CRD's 50 entries a list.
    pub fn merge(&mut self, over: DisruptionPolicy) -> Result<()> {
        merge_entries(&mut self.files, over.files);
        merge_entries(&mut self.units, over.units);
        if !over.sshkey.is_empty() {
            self.sshkey = over.sshkey;
        }
        for (field, n) in [("files", self.files.len()), ("units", self.units.len())] {
            if n > MAX_ENTRIES {
                bail!(
                    "the cluster's MachineConfiguration and the render's hold {n} \
                     spec.nodeDisruptionPolicy.{field} entries together, more than the \
                     {MAX_ENTRIES} its CRD allows: the API server refuses the render's, so the \
                     cluster keeps its policy; merge entries under a directory"
                );
            }
        }
        Ok(())
    }

    /// What a change costs under this policy, and the actions behind it
    /// (`calculatePostConfigChangeNodeDisruptionActionFromMCDiffs`): a
    /// file by its closest entry, a unit by its name's, SSH keys by the
    /// `sshkey` entry; none: a reboot.
    pub fn cost(&self, change: &Changed) -> (Disruption, Vec<String>) {
        let actions = match change {
            Changed::File(path) => closest_file_entry(&self.files, path).map(|(_, a)| a),
            Changed::Unit(name) => self.units.iter().find(|(n, _)| n == name).map(|(_, a)| a),
            Changed::SshKeys => Some(&self.sshkey),
        };
        match actions {
            Some(a) if a.is_empty() && *change == Changed::SshKeys => {
                (Disruption::Nothing, vec!["None".into()])
            }
            Some(a) => (Disruption::of_actions(a), a.clone()),
            None => (Disruption::DrainAndReboot, vec!["no policy entry".into()]),
        }
    }

    /// The entry a change is judged by, when it is one of the MCO's
    /// defaults (`defaults` as `with_defaults` returns them).
    pub fn is_default(&self, change: &Changed, defaults: &[String]) -> bool {
        match change {
            Changed::File(path) => {
                closest_file_entry(&self.files, path).is_some_and(|(p, _)| defaults.contains(p))
            }
            Changed::Unit(name) => defaults.iter().any(|d| d == &format!("unit {name}")),
            Changed::SshKeys => false,
        }
    }
}

/// A `MachineConfiguration` of a render, with the field manager its
/// file is applied with, when known.
#[derive(Debug, Clone)]
pub struct PolicyFile {
    pub name: String,
    pub manager: Option<String>,
    pub doc: Value,
}

/// The policy once a render's MachineConfigurations are applied over the
/// cluster's (`cluster`, as `oc get machineconfiguration cluster -o json`
/// exports it): a file with a field manager of its own as server-side
/// apply merges it (one field manager a file), one without as kubectl's
/// client-side apply (`oc apply -k`, Argo CD's default sync) patches the
/// object, after them, as every sync does again (`client_side`); refused
/// where the apply fails or the MCO never reads the object.
pub fn applied(
    cluster: Option<&Value>,
    before: &[PolicyFile],
    files: &[PolicyFile],
) -> Result<DisruptionPolicy> {
    let cluster_name = "the fleet's MachineConfiguration";
    let mut policy = match cluster {
        Some(c) => DisruptionPolicy::of_machineconfiguration(c, cluster_name)?,
        None => DisruptionPolicy::default(),
    };
    let base = policy.clone();
    // The lists a client-side apply of the object gave last (its
    // last-applied-configuration): the cluster's annotation and the base
    // tree's files without a field manager.
    let mut last_applied: Vec<&str> = Vec::new();
    if let Some(text) = cluster
        .and_then(|c| c.pointer("/metadata/annotations"))
        .and_then(|a| a.get(LAST_APPLIED))
    {
        let doc = (text.as_str())
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .ok_or_else(|| {
                anyhow!(
                    "{cluster_name}: annotation {LAST_APPLIED} is not a JSON object: kubectl's                      next client-side apply deletes what it no longer gives by it, which plan                      cannot tell; export the object again as the API server stores it"
                )
            })?;
        last_applied.extend(LISTS.iter().filter(|l| gives(&doc, l)));
    }
    for b in before.iter().filter(|b| b.manager.is_none()) {
        last_applied.extend(LISTS.iter().filter(|l| gives(&b.doc, l)));
    }
    // Each entry the render's files set: (list, key) -> (actions, file).
    let mut set: BTreeMap<(&str, String), (Vec<String>, &str)> = BTreeMap::new();
    // Server-side applies first, then client-side ones: every sync applies
    // these again, so their lists are what stays.
    let ordered = (files.iter().filter(|f| f.manager.is_some()))
        .chain(files.iter().filter(|f| f.manager.is_none()));
    for f in ordered {
        let name = f.doc.pointer("/metadata/name").and_then(Value::as_str);
        if name != Some("cluster") {
            bail!(
                "{}: MachineConfiguration {:?}: the MCO reads only the one named cluster, so \
                 its entries never apply; name it cluster",
                f.name,
                name.unwrap_or_default()
            );
        }
        if files.iter().filter(|g| g.name == f.name).count() > 1 {
            bail!(
                "{}: two MachineConfigurations in one file: its apply keeps the last one's \
                 entries only (one object, one field manager); give one",
                f.name
            );
        }
        // The API server judges the whole object (enums, patterns, unknown
        // fields); plan judges the disruption policy only.
        let outside = (f.doc.as_object().into_iter().flatten())
            .map(|(k, _)| k.as_str())
            .find(|k| !["apiVersion", "kind", "metadata", "spec"].contains(k))
            .or_else(|| {
                (f.doc
                    .get("spec")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten())
                .map(|(k, _)| k.as_str())
                .find(|k| *k != "nodeDisruptionPolicy")
            })
            // `resourceVersion` is a precondition and `uid` immutable: the
            // apply fails whole; owner references let the collector delete.
            .or_else(|| {
                (f.doc
                    .get("metadata")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten())
                .map(|(k, _)| k.as_str())
                .find(|k| !["name", "labels", "annotations"].contains(k))
            });
        if let Some(k) = outside {
            bail!(
                "{}: MachineConfiguration field {k:?}: plan judges only \
                 spec.nodeDisruptionPolicy, and the API server refuses the whole object for a \
                 wrong value there; keep the render's MachineConfiguration to \
                 nodeDisruptionPolicy, and change the rest of the cluster's apart",
                f.name
            );
        }
        let p = DisruptionPolicy::of_machineconfiguration(&f.doc, &f.name)?;
        let entries =
            (p.files.iter().map(|e| ("files", e))).chain(p.units.iter().map(|e| ("units", e)));
        let sshkey = ("sshkey".to_string(), p.sshkey.clone());
        let sshkey = (!p.sshkey.is_empty()).then_some(("sshkey", &sshkey));
        for (list, (key, actions)) in entries.chain(sshkey) {
            if let Some((other, by)) = set.get(&(list, key.clone()))
                && other != actions
            {
                bail!(
                    "{} and {by} give spec.nodeDisruptionPolicy.{list} {key:?} different \
                     actions: the second server-side apply conflicts with the first's field \
                     manager and none of its entries land; give the entry once",
                    f.name
                );
            }
            set.insert((list, key.clone()), (actions.clone(), &f.name));
            let cluster_has = match list {
                "files" => base.files.iter().find(|(k, _)| k == key).map(|(_, a)| a),
                "units" => base.units.iter().find(|(k, _)| k == key).map(|(_, a)| a),
                _ => (!base.sshkey.is_empty()).then_some(&base.sshkey),
            };
            // A client-side apply (an Update) conflicts with nobody.
            let Some(theirs) = cluster_has.filter(|a| *a != actions && f.manager.is_some()) else {
                continue;
            };
            let owners = cluster.and_then(|c| owners_of(c, list, key));
            let Some(owners) = owners else {
                bail!(
                    "{}: spec.nodeDisruptionPolicy.{list} {key:?} differs from the cluster's \
                     ({}), and the export does not say who set the cluster's: a server-side \
                     apply by another field manager conflicts and none of the file's entries \
                     land; export it with `oc get machineconfiguration cluster -o json \
                     --show-managed-fields`",
                    f.name,
                    theirs.join(", ")
                );
            };
            let others: Vec<&String> = (owners.iter())
                .filter(|o| Some(*o) != f.manager.as_ref())
                .collect();
            if !others.is_empty() {
                bail!(
                    "{}: spec.nodeDisruptionPolicy.{list} {key:?} differs from the cluster's \
                     ({}), which field manager {} set: the server-side apply conflicts and none \
                     of the file's entries land, so the cluster keeps its policy; give the \
                     cluster's actions, or change the cluster's entry first",
                    f.name,
                    theirs.join(", "),
                    others
                        .iter()
                        .map(|o| format!("{o:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        if f.manager.is_none() {
            client_side(&mut policy, &f.doc, &p, &last_applied);
            last_applied.extend(LISTS.iter().filter(|l| gives(&f.doc, l)));
            continue;
        }
        // kubectl's `apply --server-side` first hands the fields of its
        // client-side apply (managers `kubectl-client-side-apply`,
        // `kubectl`) to the given field manager, whose apply then deletes
        // what it does not give (review 23 r23b F6): the cluster's entries
        // a client-side apply owns and this file does not give go.
        if let Some(c) = cluster {
            taken_over(&mut policy, c, &p);
        }
        // An entry this file's field manager set before and no longer
        // sets is deleted by its server-side apply (the lists are maps):
        // the MCO's default, or none, decides then. A file without a
        // field manager of its own is the one object `cluster` as kubectl
        // or Argo CD applies it, whatever the file is called (review 22
        // r22b F3: matched by its name with its tree's root, it never
        // was): its apply replaces the lists whole.
        let earlier = before
            .iter()
            .filter(|b| b.name == f.name || b.manager == f.manager)
            .filter_map(|b| DisruptionPolicy::of_machineconfiguration(&b.doc, &b.name).ok());
        for b in earlier {
            drop_entries_not_in(&mut policy, &b, Some(&p));
        }
        policy.merge(p)?;
    }
    // One applied before that none applies after (deleted under --prune,
    // or left in place without it): its entries taken out, the stricter.
    let gone = before
        .iter()
        .filter(|b| {
            !files
                .iter()
                .any(|f| b.name == f.name || b.manager == f.manager)
        })
        .filter_map(|b| DisruptionPolicy::of_machineconfiguration(&b.doc, &b.name).ok());
    for b in gone {
        drop_entries_not_in(&mut policy, &b, None);
    }
    Ok(policy)
}

/// kubectl's annotation holding what its client-side apply gave last.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The lists of `spec.nodeDisruptionPolicy`, as `gives` names them.
const LISTS: [&str; 3] = ["files", "units", "sshkey"];

/// Whether MachineConfiguration `doc` gives list `list` (sshkey: its
/// `actions`), empty or not.
fn gives(doc: &Value, list: &str) -> bool {
    let at = match list {
        "sshkey" => "/spec/nodeDisruptionPolicy/sshkey/actions".to_string(),
        _ => format!("/spec/nodeDisruptionPolicy/{list}"),
    };
    doc.pointer(&at).is_some_and(|v| !v.is_null())
}

/// `policy` once kubectl's client-side apply of `doc` (read as `p`)
/// patches it (review 23 r23b F1): for a CRD a JSON merge patch, so each
/// list the file gives is exactly its entries, whoever set the cluster's
/// (a server-side apply's with them), and a list its last apply gave
/// (`last_applied`) and it no longer gives is deleted.
fn client_side(policy: &mut DisruptionPolicy, doc: &Value, p: &DisruptionPolicy, last: &[&str]) {
    for list in LISTS {
        let to = if gives(doc, list) {
            p.clone()
        } else if last.contains(&list) {
            DisruptionPolicy::default()
        } else {
            continue;
        };
        match list {
            "files" => policy.files = to.files,
            "units" => policy.units = to.units,
            _ => policy.sshkey = to.sshkey,
        }
    }
}

/// `policy` without the entries of the cluster's (`cluster`) that a
/// client-side apply owns and `p`, applied server-side by kubectl, does
/// not give: kubectl hands them to `p`'s field manager, which drops them.
fn taken_over(policy: &mut DisruptionPolicy, cluster: &Value, p: &DisruptionPolicy) {
    let client_side = |list: &str, key: &str| {
        owners_of(cluster, list, key).is_some_and(|o| {
            o.iter().any(|m| {
                let m = m.split(" (").next().unwrap_or_default();
                m == "kubectl-client-side-apply" || m == "kubectl"
            })
        })
    };
    let gone = |list: &str, entries: &Entries, given: &Entries| -> Vec<String> {
        (entries.iter())
            .filter(|(k, _)| !given.iter().any(|(g, _)| g == k) && client_side(list, k))
            .map(|(k, _)| k.clone())
            .collect()
    };
    let files = gone("files", &policy.files, &p.files);
    policy.files.retain(|(k, _)| !files.contains(k));
    let units = gone("units", &policy.units, &p.units);
    policy.units.retain(|(k, _)| !units.contains(k));
    if p.sshkey.is_empty() && !policy.sshkey.is_empty() && client_side("sshkey", "") {
        policy.sshkey.clear();
    }
}

/// `policy` without the entries of `earlier` that `now` (None: nothing)
/// does not set.
fn drop_entries_not_in(
    policy: &mut DisruptionPolicy,
    earlier: &DisruptionPolicy,
    now: Option<&DisruptionPolicy>,
) {
    for (key, _) in &earlier.files {
        if !now.is_some_and(|p| p.files.iter().any(|(k, _)| k == key)) {
            policy.files.retain(|(k, _)| k != key);
        }
    }
    for (key, _) in &earlier.units {
        if !now.is_some_and(|p| p.units.iter().any(|(k, _)| k == key)) {
            policy.units.retain(|(k, _)| k != key);
        }
    }
}

/// The field managers that own an entry's `actions` in an exported
/// object's `managedFields` (None: the export has none).
fn owners_of(obj: &Value, list: &str, key: &str) -> Option<Vec<String>> {
    let managed = obj.pointer("/metadata/managedFields")?.as_array()?;
    // An item's key as the API server wrote it (Go's JSON: `&` as `\u0026`),
    // compared by value, not by text.
    let item = match list {
        "files" => Some(serde_json::json!({ "path": key })),
        "units" => Some(serde_json::json!({ "name": key })),
        _ => None,
    };
    let mut out = Vec::new();
    for m in managed {
        let Some(mut at) = m
            .get("fieldsV1")
            .and_then(|f| f.get("f:spec"))
            .and_then(|f| f.get("f:nodeDisruptionPolicy"))
            .and_then(|f| f.get(format!("f:{list}")))
        else {
            continue;
        };
        if let Some(item) = &item {
            let found = (at.as_object().into_iter().flatten()).find(|(k, _)| {
                k.strip_prefix("k:")
                    .and_then(|k| serde_json::from_str::<Value>(k).ok())
                    .is_some_and(|k| k == *item)
            });
            match found {
                Some((_, v)) => at = v,
                None => continue,
            }
        }
        if at.get("f:actions").is_some() {
            // Server-side apply tells owners apart by manager and operation:
            // the manager's own `Update` (an `oc edit`, a client-side apply)
            // conflicts with its `Apply`.
            let manager = m.get("manager").and_then(Value::as_str).unwrap_or_default();
            match m.get("operation").and_then(Value::as_str) {
                Some("Apply") => out.push(manager.to_string()),
                op => out.push(format!("{manager} ({})", op.unwrap_or("no operation"))),
            }
        }
    }
    Some(out)
}

/// The CRD's `maxItems` of `files` and `units`."
const MAX_ENTRIES: usize = 50;

fn merge_entries(base: &mut Entries, over: Entries) {
    for (key, actions) in over {
        match base.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = actions,
            None => base.push((key, actions)),
        }
    }
}

/// `FindClosestFilePolicyPathMatch`: among the entries whose path is the
/// file's or a directory above it (`IsSubdirectory`: both cleaned, the
/// entry's with a `/` added), the longest path as written wins, the first
/// of equal length.
fn closest_file_entry<'a>(files: &'a Entries, path: &str) -> Option<&'a (String, Vec<String>)> {
    let mut best: Option<&(String, Vec<String>)> = None;
    for e in files {
        let under = go_clean(path).starts_with(&format!("{}/", go_clean(&e.0)));
        if (e.0 == path || under) && best.is_none_or(|b| e.0.len() > b.0.len()) {
            best = Some(e);
        }
    }
    best
}

/// Go's `filepath.Clean`: `""` is `.`, `/` stays `/` (so an entry `/`
/// is the prefix `//` and matches no file, as in the MCO).
fn go_clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for name in path.split('/') {
        match name {
            "" | "." => {}
            ".." => match out.last() {
                Some(&l) if l != ".." => {
                    out.pop();
                }
                _ if rooted => {}
                _ => out.push(".."),
            },
            n => out.push(n),
        }
    }
    match (rooted, out.is_empty()) {
        (true, _) => format!("/{}", out.join("/")),
        (false, true) => ".".into(),
        (false, false) => out.join("/"),
    }
}

/// A policy entry's actions as the CRD admits them, each written
/// `Type` or `Type service-name`.
fn actions_of(v: Option<&Value>, at: &str) -> std::result::Result<Vec<String>, String> {
    let items = v
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{at} is missing or not a list"))?;
    if items.len() > 10 {
        return Err(format!("{at} has {} actions, more than 10", items.len()));
    }
    let mut out = Vec::new();
    for (i, a) in items.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let o = a
            .as_object()
            .ok_or_else(|| format!("{at} is not an object"))?;
        if let Some(k) = o
            .keys()
            .find(|k| !["type", "restart", "reload"].contains(&k.as_str()))
        {
            return Err(format!("{at}.{k} is not a field"));
        }
        let ty = a
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{at}.type is missing"))?;
        if ![
            "Reboot",
            "Drain",
            "Reload",
            "Restart",
            "DaemonReload",
            "None",
        ]
        .contains(&ty)
        {
            return Err(format!(
                "{at}.type {ty:?} is not one of Reboot, Drain, Reload, Restart, DaemonReload, None"
            ));
        }
        let mut svc = None;
        for k in ["reload", "restart"] {
            let given = a.get(k).is_some_and(|v| !v.is_null());
            let wanted = ty.eq_ignore_ascii_case(k);
            if given != wanted {
                return Err(format!(
                    "{at}: {k} is required when type is {}, and forbidden otherwise",
                    if k == "reload" { "Reload" } else { "Restart" }
                ));
            }
            if given {
                if let Some(extra) = (a[k].as_object().into_iter().flatten())
                    .map(|(k, _)| k)
                    .find(|f| *f != "serviceName")
                {
                    return Err(format!("{at}.{k}.{extra} is not a field"));
                }
                let s = a
                    .pointer(&format!("/{k}/serviceName"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{at}.{k}.serviceName is missing"))?;
                service_name(s).map_err(|why| format!("{at}.{k}.serviceName {s:?}: {why}"))?;
                svc = Some(s);
            }
        }
        out.push(match svc {
            Some(s) => format!("{ty} {s}"),
            None => ty.to_string(),
        });
    }
    for lone in ["Reboot", "None"] {
        if out.len() > 1 && out.iter().any(|a| a == lone) {
            return Err(format!(
                "{at}: the {lone} action can only be given alone, as it overrides any other"
            ));
        }
    }
    Ok(out)
}

/// A unit name as the CRD's rules take it: at most 255 characters,
/// ending in a unit type's suffix, and `^[a-zA-Z0-9:._\\-]+\..` (an RE2
/// search: a run of those characters, a dot, then any character but a
/// newline).
fn service_name(s: &str) -> std::result::Result<(), String> {
    const TYPES: &[&str] = &[
        "service",
        "socket",
        "device",
        "mount",
        "automount",
        "swap",
        "target",
        "path",
        "timer",
        "snapshot",
        "slice",
        "scope",
    ];
    if s.chars().count() > 255 {
        return Err("longer than 255 characters".into());
    }
    if !TYPES.iter().any(|t| s.ends_with(&format!(".{t}"))) {
        return Err("not NAME.TYPE, TYPE one of .service, .socket, .device, .mount, .automount, .swap, .target, .path, .timer, .snapshot, .slice, .scope".into());
    }
    let class = |c: char| c.is_ascii_alphanumeric() || ":._\\-".contains(c);
    let chars: Vec<char> = s.chars().collect();
    let ok = (1..chars.len()).any(|i| {
        chars[..i].iter().all(|&c| class(c))
            && chars[i] == '.'
            && chars.get(i + 1).is_some_and(|&c| c != '\n')
    });
    if !ok {
        return Err(
            "NAME may only hold letters, digits, \":\", \"-\", \"_\", \".\" and \"\\\"".into(),
        );
    }
    Ok(())
}

/// The policy a node's daemon applies: the MCO's defaults of the node's
/// release (`kubelet_minor`; unknown: only those of every release since
/// 4.17, so a newer default never hides a reboot), with `over` (the
/// cluster's and the render's entries) replacing them by path and by unit
/// name (`MergeClusterPolicies`). And the entries that are the MCO's
/// defaults (paths, and `unit NAME`).
pub fn with_defaults(
    kubelet_minor: Option<u32>,
    over: &DisruptionPolicy,
) -> (DisruptionPolicy, Vec<String>) {
    let minor = kubelet_minor.unwrap_or(FIRST_KUBELET_MINOR);
    let of = |table: &[Entry]| -> Entries {
        table
            .iter()
            .filter(|d| d.since_kubelet_minor <= minor)
            .map(|d| {
                (
                    d.path.to_string(),
                    d.actions.iter().map(|a| a.to_string()).collect(),
                )
            })
            .collect()
    };
    let mut merged = DisruptionPolicy {
        files: of(DEFAULTS),
        units: of(DEFAULT_UNITS),
        sshkey: vec!["None".into()],
    };
    let mut defaults: Vec<String> = (merged.files.iter())
        .map(|(p, _)| p.clone())
        .filter(|p| !over.files.iter().any(|(q, _)| q == p))
        .collect();
    defaults.extend(
        (merged.units.iter())
            .filter(|(n, _)| !over.units.iter().any(|(q, _)| q == n))
            .map(|(n, _)| format!("unit {n}")),
    );
    merge_entries(&mut merged.files, over.files.clone());
    merge_entries(&mut merged.units, over.units.clone());
    if !over.sshkey.is_empty() {
        merged.sshkey = over.sshkey.clone();
    }
    (merged, defaults)
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
