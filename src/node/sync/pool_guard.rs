//! The sync does not move a node installed from a fleet ISO out of the pool
//! it was installed into. That pool's taints, and any other pool's, are
//! given only at registration, and the wrapper fences a registration whose
//! labels select another pool than the installed one
//! (`wrapper::pool_change`); a day-2 label change (a rule over features.d,
//! which a pod with a hostPath can write) would move the running Node
//! there without them, the fence bypassed. So with the installed-pool
//! record (`fleet::INSTALLED_POOL_PATH`) under the sync's root, a label
//! patch that would make the Node's labels select another pool than the
//! installed one, or none, is left out whole (reported as drift, exit 1);
//! one that keeps the Node where it is, or brings it back into the
//! installed pool, goes. No record: nothing held (a day-2 move of a node
//! not installed from a fleet ISO is by design).

use super::state::{Action, NodeState, Reconciled, has};
use crate::node::fleet::{self, INSTALLED_POOL_PATH, Requirement, Table};

/// Why a key's change is left out (`KeyPlan::why`); the run's line says
/// which pools (`Reconciled::pool_move`).
pub const POOL_MOVE_HELD: &str = "the label change would move this node installed from a fleet ISO out of its installed pool: left out";

/// Why the label change from the Node's `now` labels to `after` is left
/// out under `record` (the installed-pool record, or why it is
/// unreadable); None when it may go: `after` selects the installed pool,
/// or the pool `now` selects (the change moves the Node nowhere).
pub fn pool_move(
    record: &Result<Table, String>,
    now: &[(String, String)],
    after: &[(String, String)],
) -> Option<String> {
    let record = match record {
        Ok(r) => r,
        Err(why) => {
            return Some(format!(
                "{why}: the pool this node was installed into is unknown, so no label change is \
                 made"
            ));
        }
    };
    let Some(installed) = record.pools.first() else {
        return Some(format!(
            "{INSTALLED_POOL_PATH} names no pool: the pool this node was installed into is \
             unknown, so no label change is made"
        ));
    };
    let (now, after) = (selected(record, now), selected(record, after));
    let (now, after) = (now.as_slice(), after.as_slice());
    fleet::pool_change(record, after)?;
    let chosen = |labels| {
        fleet::choose(&record.pools, labels)
            .map(|p| p.name.clone())
            .map_err(|_| ())
    };
    let (from, to) = (chosen(now), chosen(after));
    if from == to {
        return None;
    }
    let name = |c: &Result<String, ()>| match c {
        Ok(n) => format!("pool {n}"),
        Err(()) => "no pool".to_string(),
    };
    let to_text = match fleet::choose(&record.pools, after) {
        Ok(p) => format!("pool {} (nodeSelector {})", p.name, p.describe_selector()),
        Err(why) => format!("no pool: {why}"),
    };
    Some(format!(
        "installed into pool {} ({INSTALLED_POOL_PATH}); the Node is in {}, and the labels the \
         sync would give it ({}) select {to_text}, whose taints are given only at registration",
        installed.name,
        name(&from),
        fleet::describe_labels(&fleet::selected_labels(&record.pools, after)),
    ))
}

/// The labels of `labels` some pool of `record` selects on: all that
/// choosing a pool looks at, looked up by key (a Node's answer may hold
/// 200,000 labels, a record thousands of requirements).
fn selected(record: &Table, labels: &[(String, String)]) -> Vec<(String, String)> {
    let mut keys: Vec<&str> = record
        .pools
        .iter()
        .flat_map(|p| &p.selector)
        .map(|r| match r {
            Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k) => k.as_str(),
        })
        .collect();
    keys.sort();
    keys.dedup();
    labels
        .iter()
        .filter(|(k, _)| keys.binary_search(&k.as_str()).is_ok())
        .cloned()
        .collect()
}

/// The Node's labels after `r`'s patch, sorted; by key lookups, as
/// `reconcile` builds the patch's lists in key order.
fn patched(node: &NodeState, r: &Reconciled) -> Vec<(String, String)> {
    let mut gone: Vec<&str> = r
        .patch
        .remove
        .iter()
        .map(String::as_str)
        .chain(r.patch.set.iter().map(|(k, _)| k.as_str()))
        .collect();
    gone.sort();
    let mut after: Vec<(String, String)> = node
        .labels
        .iter()
        .filter(|(k, _)| gone.binary_search(&k.as_str()).is_err())
        .cloned()
        .collect();
    after.extend(r.patch.set.iter().cloned());
    after.sort();
    after
}

/// Leave out `r`'s label changes where `record` forbids them
/// ([`pool_move`]): every key added, changed or removed is left (drift),
/// the patch's labels emptied, and `owned` (the keys our annotation is to
/// list, sorted) made what the Node keeps: a key not added is not ours, a
/// key not removed still is.
pub(super) fn hold(
    record: &Result<Table, String>,
    node: &NodeState,
    r: &mut Reconciled,
    owned: &mut Vec<String>,
) {
    if r.patch.set.is_empty() && r.patch.remove.is_empty() {
        return;
    }
    let Some(why) = pool_move(record, &node.labels, &patched(node, r)) else {
        return;
    };
    let mut added: Vec<String> = r.patch.set.iter().map(|(k, _)| k.clone()).collect();
    added.sort();
    let kept = std::mem::take(&mut r.patch.remove);
    r.patch.set.clear();
    for k in &mut r.keys {
        if matches!(k.action, Action::Add | Action::Change | Action::Remove) {
            k.action = Action::Leave;
            k.why = POOL_MOVE_HELD;
            k.drift = true;
        }
    }
    // An Add's key was not ours (a Change's was: it stays listed).
    owned.retain(|k| !has(&added, k) || node.label(k).is_some());
    owned.extend(kept);
    owned.sort();
    owned.dedup();
    r.pool_move = Some(why);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::fleet::{Pool, PoolKind, WORKER_ROLE_LABEL};

    use crate::node::fleet::tests_pool as pool;

    pub(crate) fn pools() -> Vec<Pool> {
        vec![
            pool("worker", PoolKind::Worker, WORKER_ROLE_LABEL, ""),
            pool("worker-gpu", PoolKind::Custom, "example.com/gpu", "true"),
            pool("worker-big", PoolKind::Custom, "example.com/big", "true"),
        ]
    }

    fn labels(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut l: Vec<(String, String)> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        l.push((WORKER_ROLE_LABEL.into(), String::new()));
        l.sort();
        l
    }

    /// Installed into worker: a change that selects worker-gpu is left
    /// out, naming both pools; one that keeps worker goes. Installed into
    /// worker-gpu: losing its label (worker then) is left out; a Node
    /// moved to worker-big cluster-side is not moved further by the sync
    /// (worker-big plus worker-gpu: two custom pools), nor kept from coming
    /// back. An unreadable record, or one of no pool: every change held.
    #[test]
    fn a_label_change_that_moves_a_fleet_node_out_of_its_pool_is_held() {
        let pools = pools();
        let worker = Ok(fleet::installed_record(&pools[0], &pools));
        let gpu = Ok(fleet::installed_record(&pools[1], &pools));
        let plain = labels(&[("example.com/zone", "a")]);
        let zoned = labels(&[("example.com/zone", "b")]);
        let with_gpu = labels(&[("example.com/gpu", "true")]);
        let big = labels(&[("example.com/big", "true")]);
        let big_gpu = labels(&[("example.com/big", "true"), ("example.com/gpu", "true")]);
        assert_eq!(pool_move(&worker, &plain, &zoned), None);
        let why = pool_move(&worker, &plain, &with_gpu).unwrap();
        for part in [
            "installed into pool worker (/etc/kubelet-labeler/installed-pool)",
            "the Node is in pool worker",
            "(example.com/gpu=true,node-role.kubernetes.io/worker=) select pool worker-gpu \
             (nodeSelector example.com/gpu=true)",
            "given only at registration",
        ] {
            assert!(why.contains(part), "{part}: {why}");
        }
        let why = pool_move(&gpu, &with_gpu, &plain).unwrap();
        assert!(why.contains("select pool worker "), "{why}");
        assert_eq!(pool_move(&gpu, &with_gpu, &with_gpu), None);
        // Elsewhere already: not moved further, but back is fine.
        let why = pool_move(&worker, &big, &big_gpu).unwrap();
        assert!(why.contains("the Node is in pool worker-big"), "{why}");
        assert!(why.contains("match 2 custom pools"), "{why}");
        assert_eq!(pool_move(&worker, &big, &plain), None);
        assert_eq!(pool_move(&gpu, &big, &big), None);
        for record in [Err("unreadable".to_string()), Ok(Table::default())] {
            let why = pool_move(&record, &plain, &zoned).unwrap();
            assert!(why.contains("so no label change is made"), "{why}");
        }
    }

    /// r18a F2: a cluster pool left off the ISO (`iso fleet
    /// --cluster-pools`) is in the record as written and read back, never
    /// an install target: a label change selecting it is held, naming it.
    #[test]
    fn a_cluster_pool_off_the_iso_is_judged_too() {
        let pools = pools();
        let on_iso = [pools[0].clone()];
        let text = fleet::installed_record_with(&pools[0], &on_iso, &pools).to_text();
        assert!(text.contains("pool worker-gpu custom -\n"), "{text}");
        let record = Table::parse(&text).map_err(|e| e.to_string());
        let plain = labels(&[("example.com/zone", "a")]);
        let why = pool_move(&record, &plain, &labels(&[("example.com/gpu", "true")])).unwrap();
        assert!(why.contains("select pool worker-gpu"), "{why}");
        assert_eq!(
            pool_move(&record, &plain, &labels(&[("example.com/zone", "b")])),
            None
        );
    }

    /// In reconcile: installed into worker-gpu, the rules no longer give
    /// its label and add another: both left (drift), no label in the
    /// patch, the removed key still listed as ours and the added one not,
    /// an adopted one listed; `--allow-pool-label` changes nothing of it.
    /// Without the record the same plan moves the node.
    #[test]
    fn reconcile_leaves_the_whole_label_change_out() {
        use super::super::reconcile::tests::{desired, node, plan};
        use super::super::reconcile::{OWNED_ANNOTATION, Policy, describe};
        let pools = pools();
        let n = node(
            &[
                ("example.com/gpu", "true"),
                ("example.com/zone", "a"),
                (WORKER_ROLE_LABEL, ""),
            ],
            &[(OWNED_ANNOTATION, "example.com/gpu")],
        );
        let d = desired(&[("example.com/rack", "r1"), ("example.com/zone", "a")]);
        let free = plan(&d, &n, &Policy::default());
        assert_eq!(free.patch.remove, ["example.com/gpu"]);
        assert!(free.pool_move.is_none());
        let policy = Policy {
            installed: Some(Ok(fleet::installed_record(&pools[1], &pools))),
            allow_pool_label: true,
            ..Default::default()
        };
        let r = plan(&d, &n, &policy);
        assert!(r.patch.set.is_empty() && r.patch.remove.is_empty(), "{r:?}");
        assert_eq!(
            r.patch.annotations,
            [(
                OWNED_ANNOTATION.to_string(),
                "example.com/{gpu,zone}".to_string()
            )]
        );
        for key in ["example.com/gpu", "example.com/rack"] {
            let k = r.keys.iter().find(|k| k.key == key).unwrap();
            assert_eq!(
                (k.action, k.why, k.drift),
                (Action::Leave, POOL_MOVE_HELD, true)
            );
        }
        assert!(r.drift_remains());
        let why = r.pool_move.as_deref().unwrap();
        assert!(why.contains("the Node is in pool worker-gpu"), "{why}");
        assert!(why.contains("select pool worker "), "{why}");
        let lines = describe(&r);
        assert!(
            lines
                .last()
                .unwrap()
                .starts_with("drift  label changes left out: installed into pool worker-gpu"),
            "{lines:?}"
        );
        // A Node of 200,000 labels, 16,385 of them ours and removed, against
        // a record of 2,000 pools: looked up by key, never scanned per key.
        let key = |c: char, i: usize| format!("example.com/{c}{i:06}");
        let mut many = n.clone();
        many.labels
            .extend((0..200_000).map(|i| (key('l', i), String::new())));
        many.labels.sort();
        let mut owned: Vec<String> = (0..16_384).map(|i| key('l', i)).collect();
        owned.push("example.com/gpu".into());
        many.annotations = vec![(
            OWNED_ANNOTATION.to_string(),
            super::super::owned::encode(&owned),
        )];
        let mut big: Vec<Pool> = pools.clone();
        big.extend((0..2_000).map(|i| pool(&format!("p{i}"), PoolKind::Custom, &key('s', i), "x")));
        let big = Policy {
            installed: Some(Ok(fleet::installed_record(&big[1], &big))),
            ..Default::default()
        };
        let started = std::time::Instant::now();
        let r = plan(&d, &many, &big);
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
        assert!(r.pool_move.is_some() && r.patch.remove.is_empty());
        // A change that keeps the pool goes.
        let kept = desired(&[("example.com/gpu", "true"), ("example.com/rack", "r1")]);
        let r = plan(&kept, &n, &policy);
        assert_eq!(r.patch.set.len(), 1);
        assert!(r.pool_move.is_none() && !r.drift_remains(), "{r:?}");
    }
}
