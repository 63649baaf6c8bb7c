//! The day-2 sync's labels in plan: the Node's labels after its patch,
//! and what it does instead where its record keeps a fleet node in its
//! pool.

use crate::node::sorted::SortedSet;

/// The sync's labels move the node: what the sync does instead on a node
/// installed from a fleet ISO (`node::sync::pool_guard`), whose record
/// plan cannot read.
pub(super) fn fleet_sync_note(to: Option<&str>) -> String {
    format!(
        "a node installed from a fleet ISO into another pool than {} ({}, on the node, not \
         among the inputs) keeps its labels: its sync leaves this label change out, reports \
         it and exits 1",
        to.unwrap_or("none"),
        crate::node::fleet::INSTALLED_POOL_PATH
    )
}

/// plan's line for what the day-2 sync does with one key: None for a key
/// it adopts or leaves as it is.
pub fn sync_line(k: &crate::node::sync::state::KeyPlan) -> Option<String> {
    use crate::node::sync::reconcile::Action;
    let value = |v: &Option<String>| v.clone().unwrap_or_else(|| "<absent>".into());
    match k.action {
        Action::Adopt => None,
        Action::Leave if !k.drift => None,
        Action::Leave => Some(format!(
            "leave {}={} (derived: {}; {})",
            k.key,
            value(&k.node),
            value(&k.derived),
            k.why
        )),
        a => Some(format!(
            "{} {}: {} -> {} ({})",
            a.as_str(),
            k.key,
            value(&k.node),
            value(&k.derived),
            k.why
        )),
    }
}

/// The labels after the sync's patch (what the API server stores), sorted:
/// one lookup a label, not a scan of the patch (an export's Node with
/// 50,000 labels the sync owns took minutes).
pub(super) fn patch_labels(
    labels: &mut Vec<(String, String)>,
    patch: &crate::node::sync::state::Patch,
) {
    let gone: SortedSet<&str> = patch
        .remove
        .iter()
        .map(String::as_str)
        .chain(patch.set.iter().map(|(k, _)| k.as_str()))
        .collect();
    labels.retain(|(k, _)| !gone.contains(k.as_str()));
    labels.extend(patch.set.iter().cloned());
    labels.sort();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::sync::state::Patch;

    /// As setting and removing one key at a time, in O(n log n): 50,000
    /// labels the patch removes and 50,000 it sets.
    #[test]
    fn patching_many_labels_is_one_sort() {
        let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
        let mut labels = vec![kv("b", "1"), kv("a", "1"), kv("c", "1")];
        let patch = Patch {
            set: vec![kv("c", "2"), kv("d", "2")],
            remove: vec!["b".into()],
            ..Default::default()
        };
        patch_labels(&mut labels, &patch);
        assert_eq!(labels, [kv("a", "1"), kv("c", "2"), kv("d", "2")]);
        let n = 50_000;
        let mut labels: Vec<_> = (0..2 * n).map(|i| kv(&format!("k{i}"), "1")).collect();
        let patch = Patch {
            set: (0..n).map(|i| kv(&format!("k{i}"), "2")).collect(),
            remove: (n..2 * n).map(|i| format!("k{i}")).collect(),
            ..Default::default()
        };
        patch_labels(&mut labels, &patch);
        assert_eq!(labels.len(), n);
    }
}
