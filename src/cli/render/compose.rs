//! Whether MachineConfigs of ours compose on a node: a custom pool's nodes
//! take the built-in role's MachineConfigs and the pool's, merged as the
//! MCO merges them (`layout::merge_order`: worker's, then the pool's; a
//! later file replaces an earlier one of the same path, whole). Renders of
//! one node format (`contract::NODE_FORMAT`) write each file the other
//! needs at a path of its own, or the same file for both (the wrapper, the
//! generator, the sync's units). Renders of two formats do not: the pool's
//! env drop-in of one may replace the role's of the other (its labels,
//! taints and rules gone from every node of the pool), or a wrapper that
//! does not read the role's drop-in may replace one that does. `explain`
//! and `render` refuse such a set, naming the MachineConfigs and paths.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde_json::Value;

use super::layout::{self, Layout, mc_name};
use super::machineconfig::{RENDERED_BY_ANNOTATION, RENDERED_FOR, Rendered};
use super::node_format;

/// A MachineConfig of ours that replaces files another MachineConfig
/// writes (of another render, another node format).
#[derive(Debug, PartialEq, Eq)]
pub struct Clash {
    pub later: String,
    pub earlier: String,
    /// Node paths, in order.
    pub paths: Vec<String>,
    text: String,
}

impl std::fmt::Display for Clash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whose render a MachineConfig is, in words: its mark, else the pool of
/// a rendered config, else its role.
fn owner(mc: &Value) -> String {
    if let Some(o) = mc
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(RENDERED_FOR))
        .and_then(Value::as_str)
    {
        return format!("rendered for {o}");
    }
    if let Some(p) = layout::rendered_pool(mc) {
        return format!("the rendered config of pool {p}");
    }
    match layout::role(mc) {
        Ok(Some(r)) => format!("role {r}"),
        _ => "no role".into(),
    }
}

/// The pool or role a MachineConfig belongs to (what [`owner`] says
/// without its words): a file replaced within one is an update.
fn owner_key(mc: &Value) -> Option<String> {
    mc.pointer("/metadata/annotations")
        .and_then(|a| a.get(RENDERED_FOR))
        .and_then(Value::as_str)
        .or_else(|| layout::rendered_pool(mc))
        .or_else(|| layout::role(mc).ok().flatten())
        .map(str::to_string)
}

/// Marked by render (any release that marked), or named as render names.
fn ours(mc: &Value) -> bool {
    let marked = mc
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(RENDERED_FOR) || a.contains_key(RENDERED_BY_ANNOTATION));
    marked || mc_name(mc).contains("-kubelet-labeler-")
}

/// The MachineConfigs of ours among `configs` (one pool's, merged as the
/// MCO merges them) that replace another render's files with a file of
/// another node format, or a file that is not ours.
pub fn clashes(configs: &[Value]) -> Result<Vec<Clash>> {
    // Node path -> every MachineConfig that writes it, in merge order, with
    // the bytes.
    let mut writers: BTreeMap<String, Vec<(usize, Vec<u8>)>> = BTreeMap::new();
    for i in layout::merge_order(configs)? {
        let mc = &configs[i];
        let Some(config) = mc.pointer("/spec/config") else {
            continue;
        };
        let writes = Layout::writes_of(mc_name(mc), config)
            .with_context(|| format!("MachineConfig {:?}", mc_name(mc)))?;
        for (path, bytes) in writes {
            writers.entry(path).or_default().push((i, bytes));
        }
    }
    // (later, earlier) -> paths, formats of the first path.
    type Formats = (Option<Option<String>>, Option<Option<String>>);
    let mut pairs: Vec<((usize, usize), Vec<String>, Formats)> = Vec::new();
    // Where each pair is in `pairs`: one lookup, not a scan, per clash.
    let mut pair_at: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (path, writes) in &writers {
        // What the node gets is the last file; each other content is lost
        // (judged once, at the last MachineConfig that wrote it: a rendered
        // config repeats its pool's files).
        let Some(((i, bytes), earlier)) = writes.split_last() else {
            continue;
        };
        let mc = &configs[*i];
        let later_format = node_format::of_file(bytes);
        let later_ours = ours(mc) || later_format.is_some();
        // Each content judged at its last writer: from the last one back,
        // a content seen already is repeated later (a set, not a scan per
        // writer: many MachineConfigs writing one path stay linear).
        let mut seen: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
        let mut judged = Vec::new();
        for (j, before) in earlier.iter().rev() {
            if seen.insert(before.as_slice()) {
                judged.push((j, before));
            }
        }
        for (j, before) in judged.into_iter().rev() {
            if before == bytes || !later_ours {
                continue;
            }
            let earlier_format = node_format::of_file(before);
            let one_owner = owner_key(mc).is_some() && owner_key(mc) == owner_key(&configs[*j]);
            if one_owner || node_format::same(&earlier_format, &later_format) {
                continue;
            }
            match pair_at.get(&(*i, *j)) {
                Some(&at) => pairs[at].1.push(path.clone()),
                None => {
                    pair_at.insert((*i, *j), pairs.len());
                    pairs.push((
                        (*i, *j),
                        vec![path.clone()],
                        (later_format.clone(), earlier_format),
                    ));
                }
            }
        }
    }
    Ok(pairs
        .into_iter()
        .map(|((i, j), paths, (later_format, earlier_format))| {
            let (later, earlier) = (&configs[i], &configs[j]);
            let describe = |mc: &Value, format: &Option<Option<String>>| {
                let ours = ours(mc) || format.is_some();
                format!(
                    "{}, {}",
                    owner(mc),
                    node_format::describe(format.clone().flatten().as_deref(), ours)
                )
            };
            let text = format!(
                "MachineConfig {:?} ({}) replaces {} of MachineConfig {:?} ({}): a node that \
                 takes both gets only the later file, and loses what the earlier one gives \
                 (its labels, taints and rules, or a wrapper that reads them); render the \
                 built-in role's and every custom pool's MachineConfigs with one release and \
                 apply them together (docs/upgrading.md)",
                mc_name(later),
                describe(later, &later_format),
                paths.join(", "),
                mc_name(earlier),
                describe(earlier, &earlier_format),
            );
            Clash {
                later: mc_name(later).to_string(),
                earlier: mc_name(earlier).to_string(),
                paths,
                text,
            }
        })
        .collect())
}

/// The built-in roles: their pools take no other role's MachineConfigs
/// (worker's are taken by every custom pool too).
const BUILT_IN: [&str; 3] = ["worker", "master", "arbiter"];

/// What `rendered` clashes with among the MachineConfigs of a directory it
/// shares (`others`, every manifest found there): a custom pool's render
/// with the worker role's MachineConfigs there, a `--role worker` render
/// with each custom pool's. The directory's MachineConfigs of
/// `rendered.owner` are the ones it replaces, left out.
pub fn with_directory(rendered: &Rendered, others: &[&Value]) -> Result<Vec<Clash>> {
    let new: Vec<Value> = rendered
        .manifests
        .iter()
        .map(|(_, o)| o)
        .filter(|o| o["kind"] == "MachineConfig")
        .cloned()
        .collect();
    let role_of = |mc: &Value| layout::role(mc).ok().flatten().map(str::to_string);
    let theirs: Vec<&Value> = others
        .iter()
        .copied()
        .filter(|o| o["kind"] == "MachineConfig")
        .filter(|o| owner_key(o).as_deref() != Some(rendered.owner.as_str()))
        .collect();
    let mut sets: Vec<Vec<Value>> = Vec::new();
    if !BUILT_IN.contains(&rendered.owner.as_str()) {
        let mut set: Vec<Value> = theirs
            .iter()
            .filter(|o| role_of(o).as_deref() == Some("worker"))
            .map(|o| (*o).clone())
            .collect();
        set.extend(new);
        sets.push(set);
    } else if rendered.owner == "worker" {
        let mut pools: Vec<String> = theirs
            .iter()
            .filter_map(|o| role_of(o))
            .filter(|r| !BUILT_IN.contains(&r.as_str()))
            .collect();
        pools.sort();
        pools.dedup();
        for pool in pools {
            let mut set = new.clone();
            set.extend(
                theirs
                    .iter()
                    .filter(|o| role_of(o).as_deref() == Some(pool.as_str()))
                    .map(|o| (*o).clone()),
            );
            sets.push(set);
        }
    }
    let mut out = Vec::new();
    for set in sets {
        out.extend(clashes(&set)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(name: &str, role: &str, marked: Option<&str>, files: &[(&str, &str)]) -> Value {
        let files: Vec<Value> = files
            .iter()
            .map(|(path, text)| {
                json!({"path": path, "contents": {"source": format!("data:,{}",
                    crate::cli::render::encoding::percent_encode(text.as_bytes()))}})
            })
            .collect();
        let mut v = json!({"kind": "MachineConfig", "metadata": {"name": name,
            "labels": {layout::ROLE_LABEL: role}},
            "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": files}}}});
        if let Some(owner) = marked {
            v["metadata"]["annotations"] = json!({RENDERED_FOR: owner,
                RENDERED_BY_ANNOTATION: super::super::RENDERED_BY});
        }
        v
    }

    const ENV: &str = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";

    fn now(text: &str) -> String {
        format!("# {}: labels\n{text}", super::super::RENDERED_BY)
    }

    #[test]
    fn an_earlier_roles_drop_in_replaced_by_a_pools_is_named() {
        let role = mc(
            "50-worker-kubelet-labeler-labels",
            "worker",
            None,
            &[(ENV, "# kubelet-labeler: labels\nEnvironment=\"A=b\"\n")],
        );
        let pool = mc(
            "50-worker-gpu-kubelet-labeler-labels",
            "worker-gpu",
            Some("worker-gpu"),
            &[(ENV, &now("Environment=\"A=c\"\n"))],
        );
        // Given in any order: the MCO merges worker's first.
        let c = clashes(&[pool.clone(), role.clone()]).unwrap();
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].later, "50-worker-gpu-kubelet-labeler-labels");
        assert_eq!(c[0].earlier, "50-worker-kubelet-labeler-labels");
        assert_eq!(c[0].paths, [ENV]);
        let text = c[0].to_string();
        assert!(
            text.contains("an earlier release (its node format is not stamped)")
                && text.contains(&format!(
                    "node format {}",
                    crate::node::contract::NODE_FORMAT
                ))
                && text.contains("docs/upgrading.md"),
            "{text}"
        );
    }

    #[test]
    fn one_format_one_owner_and_equal_bytes_compose() {
        let wrapper = "/etc/systemd/system/kubelet-labeler-sync.service";
        // The same shared file, two builds of one node format.
        let role = mc(
            "50-worker-kubelet-labeler-wrapper",
            "worker",
            Some("worker"),
            &[(wrapper, &now("ExecStart=/a\n"))],
        );
        let pool = mc(
            "50-worker-gpu-kubelet-labeler-wrapper",
            "worker-gpu",
            Some("worker-gpu"),
            &[(wrapper, &now("ExecStart=/b\n"))],
        );
        assert_eq!(clashes(&[role.clone(), pool.clone()]).unwrap(), []);
        // A pool's rendered config and the pool's re-render (an update,
        // whatever the formats).
        let mut rendered = mc(
            "rendered-worker-gpu-0123abcd",
            "worker-gpu",
            None,
            &[(ENV, "# kubelet-labeler 0.1.0: labels\n")],
        );
        rendered["metadata"]["labels"] = json!({});
        let pool_env = mc(
            "50-worker-gpu-kubelet-labeler-labels",
            "worker-gpu",
            Some("worker-gpu"),
            &[(ENV, &now(""))],
        );
        assert_eq!(clashes(&[rendered, pool_env]).unwrap(), []);
        // Equal bytes: nothing is lost.
        let same = mc(
            "50-worker-gpu-kubelet-labeler-labels",
            "worker-gpu",
            None,
            &[(ENV, "# kubelet-labeler: x\n")],
        );
        let old_role = mc(
            "50-worker-kubelet-labeler-labels",
            "worker",
            None,
            &[(ENV, "# kubelet-labeler: x\n")],
        );
        assert_eq!(clashes(&[old_role, same]).unwrap(), []);
    }

    /// The pool's rendered config from before an upgrade, with the role's
    /// and the pool's re-renders: the pool's files are what the node gets,
    /// whatever the role's re-render laid over the rendered config first.
    #[test]
    fn an_upgrade_of_role_and_pool_over_the_pools_rendered_config_composes() {
        let shared = "/etc/systemd/system/kubelet-labeler-sync.service";
        let mut rendered = mc(
            "rendered-worker-gpu-0123abcd",
            "worker-gpu",
            None,
            &[(shared, "# kubelet-labeler 0.1.0: old\n")],
        );
        rendered["metadata"]["labels"] = json!({});
        let role = mc(
            "50-worker-kubelet-labeler-wrapper",
            "worker",
            Some("worker"),
            &[(shared, &now("a\n"))],
        );
        let pool = mc(
            "50-worker-gpu-kubelet-labeler-wrapper",
            "worker-gpu",
            Some("worker-gpu"),
            &[(shared, &now("b\n"))],
        );
        assert_eq!(
            clashes(&[rendered.clone(), role.clone(), pool]).unwrap(),
            []
        );
        // The role alone re-rendered: the pool's earlier files stay.
        let c = clashes(&[rendered, role]).unwrap();
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].earlier, "rendered-worker-gpu-0123abcd");
    }

    #[test]
    fn a_users_later_file_is_theirs_to_replace_with() {
        let role = mc(
            "50-worker-kubelet-labeler-labels",
            "worker",
            Some("worker"),
            &[(ENV, &now(""))],
        );
        let user = mc(
            "99-worker-gpu-mine",
            "worker-gpu",
            None,
            &[(ENV, "[Service]\n")],
        );
        assert_eq!(clashes(&[role, user]).unwrap(), []);
    }

    /// Ignition merges files, links and directories as one list by path:
    /// a later file of ours at the path of an earlier link or directory
    /// replaces it as it replaces a file (the link and the directory were
    /// not seen: no warning).
    #[test]
    fn a_link_or_directory_replaced_is_named_too() {
        let pool = mc(
            "50-worker-gpu-kubelet-labeler-labels",
            "worker-gpu",
            Some("worker-gpu"),
            &[(ENV, &now("Environment=\"A=c\"\n"))],
        );
        for (list, entry) in [
            (
                "links",
                json!({"path": ENV, "target": "/etc/kubernetes/env.conf"}),
            ),
            ("directories", json!({"path": ENV})),
        ] {
            let mut role = mc("50-worker-kubelet-labeler-labels", "worker", None, &[]);
            role["spec"]["config"]["storage"] = json!({ list: [entry] });
            let c = clashes(&[pool.clone(), role]).unwrap();
            assert_eq!(c.len(), 1, "{list}: {c:?}");
            assert_eq!(c[0].earlier, "50-worker-kubelet-labeler-labels");
            assert_eq!(c[0].paths, [ENV]);
        }
    }
}
