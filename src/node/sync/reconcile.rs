//! The reconcile core: from the labels and taints the wrapper derives and
//! the Node as the API server stores it, what to do with each key, the one
//! label patch to send, and the taint drift to report (never sent: a node
//! may not change its own taints). Pure functions, no I/O.

use super::state::{has, lookup};
use crate::node::kubelet::Profile;
use crate::node::kubelet::labels::{is_kubernetes_label, is_self_settable};

pub use super::state::{
    ABSENT, Action, DRIFT_ANNOTATION, Desired, KeyPlan, NodeState, OWNED_ANNOTATION,
    POOL_ANNOTATION, Patch, Policy, Reconciled, TAINTS_ANNOTATION,
};

/// NFD's list of the labels it manages (`<instance>.` before it with
/// nfd-master's `-instance`); names without a `/` are in NFD's namespace.
pub const NFD_ANNOTATION_SUFFIX: &str = "nfd.node.kubernetes.io/feature-labels";
const NFD_LABEL_NS: &str = "feature.node.kubernetes.io";

/// Labels kubelet sets on its Node at every start: never ours.
const KUBELET_SETS: [&str; 5] = [
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

const POOL_HELD: &str = "it selects the node's pool: changing it moves the node to another pool (opt in with --allow-pool-label)";
const POOL_BEFORE: &str = "it was the node's pool label: a MachineConfigPool may still select it, so it stays until you take it off once none does";
/// An owned key not derived while the rules could not be evaluated.
const RULES_UNKNOWN: &str =
    "ours; the node rules could not be evaluated, so whether they still give it is unknown: kept";
const POOL_UNKNOWN: &str = "the release that synced this Node before did not record pool labels and it may have been one: it stays until you take it off once no MachineConfigPool selects it";

/// May a node change this label on its own Node? NodeRestriction refuses
/// (403, the whole patch) any key in the kubernetes.io/k8s.io namespaces
/// except kubelet's own keys and the `kubelet.kubernetes.io` and
/// `node.kubernetes.io` families; on update even OpenShift's five
/// `node-role.kubernetes.io` keys (allowed only when kubelet creates it).
pub fn node_may_modify(key: &str) -> bool {
    !is_kubernetes_label(key) || is_self_settable(key, Profile::Upstream)
}

/// May the sync own this key at all (kubelet's own keys and those a node
/// may not change never are)?
pub fn may_own(key: &str) -> bool {
    !KUBELET_SETS.contains(&key) && node_may_modify(key)
}

/// Keys NFD lists as its own, in every NFD instance's annotation.
pub fn nfd_owned(annotations: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in annotations {
        let ours = k == NFD_ANNOTATION_SUFFIX
            || k.strip_suffix(NFD_ANNOTATION_SUFFIX)
                .is_some_and(|p| p.len() > 1 && p.ends_with('.'));
        if !ours {
            continue;
        }
        for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            out.push(if name.contains('/') {
                name.to_string()
            } else {
                format!("{NFD_LABEL_NS}/{name}")
            });
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The plan for one Node. Err: our own annotation is unreadable (nothing
/// is changed; the message says how to start over).
pub fn reconcile(
    desired: &Desired,
    node: &NodeState,
    policy: &Policy,
) -> Result<Reconciled, String> {
    // The last value of a key wins, as in kubelet's --node-labels.
    let mut derived: Vec<(String, String)> = Vec::new();
    for (k, v) in &desired.labels {
        crate::node::retain(&mut derived, &mut |(dk, _)| dk != k);
        derived.push((k.clone(), v.clone()));
    }
    derived.sort();
    let owned = match node.annotation(OWNED_ANNOTATION).map(super::owned::decode) {
        None => Vec::new(),
        Some(Ok(keys)) => keys,
        Some(Err(why)) => {
            return Err(format!(
                "the Node's annotation {OWNED_ANNOTATION} is unreadable ({why}); remove it \
                 (`kubectl annotate node {} {OWNED_ANNOTATION}-`) and the next run adopts the \
                 derived labels the Node has (the ones it listed and no longer derives stay)",
                node.name
            ));
        }
    };
    let pools = match node.annotation(POOL_ANNOTATION).map(super::owned::decode) {
        None => Vec::new(),
        Some(Ok(keys)) => keys,
        Some(Err(why)) => {
            return Err(format!(
                "the Node's annotation {POOL_ANNOTATION} is unreadable ({why}); put back the \
                 pool labels it listed (`kubectl annotate node {} --overwrite \
                 {POOL_ANNOTATION}=KEY,...`) or remove it",
                node.name
            ));
        }
    };
    // The first run after an upgrade from a release that kept no record:
    // any key it owned that is no longer derived may be the pool label of
    // before (changed in the same rollout), so it is held as one.
    let unrecorded = node.annotation(POOL_ANNOTATION).is_none() && policy.pool_label.is_some();
    let nfd = nfd_owned(&node.annotations);
    let mut keys: Vec<&str> = derived
        .iter()
        .map(|(k, _)| k.as_str())
        .chain(owned.iter().map(String::as_str))
        .collect();
    keys.sort();
    keys.dedup();

    let mut out = Reconciled {
        unknown: desired.unknown.clone(),
        ..Default::default()
    };
    let mut now_owned: Vec<String> = Vec::new();
    for key in keys {
        let want = lookup(&derived, key);
        let have = node.label(key);
        let is_owned = has(&owned, key);
        let current_pool = policy.pool_label.as_deref() == Some(key);
        // A pool label of before, while the Node has it.
        let guessed = unrecorded && is_owned && want.is_none();
        let was_pool = !current_pool && have.is_some() && (guessed || has(&pools, key));
        let is_pool = (current_pool || was_pool) && !policy.allow_pool_label;
        let differs = want.is_some() && want != have;
        let (action, why, drift) = if KUBELET_SETS.contains(&key) {
            (Action::Leave, "kubelet sets it at every start", false)
        } else if !node_may_modify(key) {
            (
                Action::Leave,
                "NodeRestriction forbids a node to change it (set it cluster-side)",
                differs,
            )
        } else if has(&nfd, key) {
            (
                Action::Leave,
                "NFD owns it (nfd.node.kubernetes.io/feature-labels)",
                differs,
            )
        } else if is_pool && want != have && (want.is_some() || is_owned) {
            // Only a write or removal is held back: the same value is
            // adopted like any other, so an opt-in later finds it ours.
            (
                Action::Leave,
                match (was_pool, guessed) {
                    (false, _) => POOL_HELD,
                    (true, false) => POOL_BEFORE,
                    (true, true) => POOL_UNKNOWN,
                },
                true,
            )
        } else {
            match (want, have) {
                (Some(_), None) => (Action::Add, "derived, absent", false),
                (Some(w), Some(h)) if w == h && is_owned => (Action::Leave, "up to date", false),
                (Some(w), Some(h)) if w == h => (Action::Adopt, "same value, now ours", false),
                (Some(_), Some(_)) if is_owned => {
                    (Action::Change, "ours, derived value changed", false)
                }
                (Some(_), Some(_)) => (Action::Leave, "another owner's value", true),
                (None, Some(_)) if desired.unknown.is_some() => {
                    (Action::Leave, RULES_UNKNOWN, false)
                }
                (None, Some(_)) => (Action::Remove, "ours, no longer derived", false),
                (None, None) => (Action::Leave, "ours, already gone", false),
            }
        };
        match action {
            Action::Add | Action::Change => {
                out.patch
                    .set
                    .push((key.to_string(), want.unwrap_or("").to_string()));
                now_owned.push(key.to_string());
            }
            Action::Remove => out.patch.remove.push(key.to_string()),
            Action::Adopt => now_owned.push(key.to_string()),
            Action::Leave
                if why == "up to date"
                    || ([POOL_HELD, POOL_BEFORE, POOL_UNKNOWN, RULES_UNKNOWN].contains(&why)
                        && is_owned) =>
            {
                now_owned.push(key.to_string())
            }
            Action::Leave => {}
        }
        out.keys.push(KeyPlan {
            key: key.to_string(),
            action,
            node: have.map(String::from),
            derived: want.map(String::from),
            why,
            drift,
        });
    }
    // A fleet node's label changes, left out whole where they would move
    // it out of the pool it was installed into.
    if let Some(record) = &policy.installed {
        super::pool_guard::hold(record, node, &mut out, &mut now_owned);
    }
    // The pool labels: this one, and those of before the Node still has
    // and that were not just removed (opted in).
    let mut now_pools: Vec<String> = pools
        .into_iter()
        .chain(
            out.keys
                .iter()
                .filter(|k| k.why == POOL_UNKNOWN)
                .map(|k| k.key.clone()),
        )
        .filter(|k| node.label(k).is_some() && !has(&out.patch.remove, k))
        .collect();
    now_pools.extend(policy.pool_label.clone());
    for (name, keys) in [(OWNED_ANNOTATION, now_owned), (POOL_ANNOTATION, now_pools)] {
        let text = super::owned::encode(&keys);
        if node.annotation(name).unwrap_or("") != text
            && !(text.is_empty() && node.annotation(name).is_none())
        {
            out.patch.annotations.push((name.to_string(), text));
        }
    }

    super::taints::taints(desired, node, &mut out);
    out.patch.annotations.sort();
    Ok(out)
}

/// One line per key, as `sync --dry-run` prints them.
pub fn describe(r: &Reconciled) -> Vec<String> {
    let mut out = Vec::new();
    for k in &r.keys {
        let value = match (&k.node, &k.derived, k.action) {
            (Some(n), Some(d), Action::Change) => format!("{n} -> {d}"),
            (_, Some(d), Action::Add | Action::Adopt) => d.clone(),
            (Some(n), Some(d), Action::Leave) if n != d => format!("{n} (derived: {d})"),
            (None, Some(d), Action::Leave) => format!("{ABSENT} (derived: {d})"),
            (Some(n), _, _) => n.clone(),
            (None, Some(d), _) => d.clone(),
            (None, None, _) => ABSENT.into(),
        };
        out.push(format!(
            "{:<6} {}={} ({})",
            k.action.as_str(),
            k.key,
            value,
            k.why
        ));
    }
    out.extend(r.taint_drift.iter().map(|t| format!("drift  {t}")));
    out.extend(
        r.pool_move
            .iter()
            .map(|w| format!("drift  {}", pool_move_line(w))),
    );
    out
}

/// What the run's line and `--dry-run` say of label changes left out
/// (`Reconciled::pool_move`): why, and how to proceed.
pub fn pool_move_line(why: &str) -> String {
    format!(
        "label changes left out: {why}; {}",
        crate::node::wrapper::pool_change::POOL_LIFT
    )
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::node::kubelet::{Taint, TaintEffect};

    pub(crate) fn kv(v: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = v
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        out.sort();
        out
    }

    pub(crate) fn node(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> NodeState {
        NodeState {
            name: "n1".into(),
            resource_version: "7".into(),
            labels: kv(labels),
            annotations: kv(annotations),
            taints: Vec::new(),
        }
    }

    pub(crate) fn desired(labels: &[(&str, &str)]) -> Desired {
        Desired {
            labels: kv(labels),
            ..Default::default()
        }
    }

    pub(crate) fn taint(k: &str, v: &str, effect: TaintEffect) -> Taint {
        Taint {
            key: k.into(),
            value: v.into(),
            effect,
        }
    }

    /// The Node after `r`'s patch (what the API server stores).
    pub(crate) fn patched(n: &NodeState, r: &Reconciled) -> NodeState {
        let mut n = n.clone();
        n.labels.retain(|(k, _)| !r.patch.remove.contains(k));
        for (k, v) in &r.patch.set {
            n.labels.retain(|(nk, _)| nk != k);
            n.labels.push((k.clone(), v.clone()));
        }
        n.annotations
            .retain(|(k, _)| !r.patch.remove_annotations.contains(k));
        for (k, v) in &r.patch.annotations {
            n.annotations.retain(|(nk, _)| nk != k);
            n.annotations.push((k.clone(), v.clone()));
        }
        n.labels.sort();
        n.annotations.sort();
        n
    }

    pub(crate) fn plan(d: &Desired, n: &NodeState, p: &Policy) -> Reconciled {
        reconcile(d, n, p).unwrap()
    }

    fn action(r: &Reconciled, key: &str) -> (Action, &'static str, bool) {
        let k = r.keys.iter().find(|k| k.key == key).unwrap();
        (k.action, k.why, k.drift)
    }

    /// A Node's answer is network text (up to the 4 MiB the sync reads):
    /// its labels and taints, and the key lists of our annotations, are
    /// looked up by key, never scanned once per key (16,384 owned keys
    /// against 200,000 labels, and 50,000 taints against as many listed
    /// as derived before, took half a minute).
    #[test]
    fn a_node_of_many_labels_and_taints_is_no_quadratic_work() {
        let key = |c: char, i: usize| format!("example.com/{c}{i:06}");
        let owned: Vec<String> = (0..16_384).map(|i| key('k', i)).collect();
        let mut n = node(&[], &[]);
        n.labels = (0..200_000).map(|i| (key('l', i), String::new())).collect();
        n.taints = (0..50_000)
            .map(|i| taint(&key('t', i), "", TaintEffect::NoSchedule))
            .collect();
        let before: Vec<String> = n.taints.iter().map(|t| t.to_string()).collect();
        n.annotations = kv(&[
            (OWNED_ANNOTATION, &super::super::owned::encode(&owned)),
            (POOL_ANNOTATION, &super::super::owned::encode(&owned)),
            (TAINTS_ANNOTATION, &before.join(",")),
        ]);
        let started = std::time::Instant::now();
        let r = plan(&desired(&[]), &n, &Policy::default());
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
        assert_eq!(r.keys.len(), owned.len());
        assert_eq!(r.taint_drift.len(), 50_000);
    }

    /// The fence, whatever its reason (`pool-changed` of a fleet node
    /// among them), is the admin's to lift: never derived, never listed as
    /// ours, never reported stale (a node could not remove it anyway).
    #[test]
    fn a_fence_on_the_node_is_left_to_the_admin() {
        use crate::node::wrapper::fence::Reason;
        let d = Desired {
            taints: vec![taint(
                "example.com/special",
                "true",
                TaintEffect::NoSchedule,
            )],
            ..desired(&[("example.com/a", "1")])
        };
        for reason in [Reason::PoolChanged, Reason::RulesFailed] {
            let mut n = node(&[("example.com/a", "1")], &[]);
            n.taints = vec![reason.taint()];
            let r = plan(&d, &n, &Policy::default());
            assert_eq!(r.taint_drift.len(), 1, "{:?}", r.taint_drift);
            assert!(
                r.taint_drift[0]
                    .starts_with("taint example.com/special=true:NoSchedule is missing"),
                "{:?}",
                r.taint_drift
            );
            let said = format!("{:?}", r.patch);
            assert!(!said.contains("kubelet-labeler.io/fenced"), "{said}");
        }
    }

    #[test]
    fn first_sync_adopts_what_registration_set_and_adds_the_rest() {
        let r = plan(
            &desired(&[("example.com/a", "1"), ("example.com/b", "2")]),
            &node(&[("example.com/a", "1")], &[]),
            &Policy::default(),
        );
        assert_eq!(action(&r, "example.com/a").0, Action::Adopt);
        assert_eq!(action(&r, "example.com/b").0, Action::Add);
        assert_eq!(r.patch.set, kv(&[("example.com/b", "2")]));
        assert_eq!(
            r.patch.annotations,
            kv(&[(OWNED_ANNOTATION, "example.com/{a,b}")])
        );
        assert!(!r.drift_remains());
    }

    #[test]
    fn ours_change_and_go_foreign_values_stay() {
        let r = plan(
            &desired(&[("example.com/a", "new"), ("example.com/f", "ours")]),
            &node(
                &[
                    ("example.com/a", "old"),
                    ("example.com/gone", "x"),
                    ("example.com/f", "theirs"),
                ],
                &[(OWNED_ANNOTATION, "example.com/a,example.com/gone")],
            ),
            &Policy::default(),
        );
        assert_eq!(action(&r, "example.com/a").0, Action::Change);
        assert_eq!(action(&r, "example.com/gone").0, Action::Remove);
        assert_eq!(
            action(&r, "example.com/f"),
            (Action::Leave, "another owner's value", true)
        );
        assert_eq!(r.patch.set, kv(&[("example.com/a", "new")]));
        assert_eq!(r.patch.remove, vec!["example.com/gone".to_string()]);
        assert_eq!(
            r.patch.annotations,
            kv(&[(OWNED_ANNOTATION, "example.com/a")])
        );
        assert!(r.drift_remains());
    }

    #[test]
    fn a_second_run_writes_nothing() {
        let d = desired(&[("example.com/a", "1")]);
        let n = node(
            &[("example.com/a", "1")],
            &[(OWNED_ANNOTATION, "example.com/a")],
        );
        let r = plan(&d, &n, &Policy::default());
        assert!(r.patch.is_empty(), "{r:?}");
        assert_eq!(action(&r, "example.com/a").1, "up to date");
        // Nothing derived, nothing owned: no annotation written either.
        let r = plan(&desired(&[]), &node(&[], &[]), &Policy::default());
        assert!(r.patch.is_empty() && r.keys.is_empty());
    }

    #[test]
    fn nfd_keys_are_never_touched_in_any_instance() {
        let annotations = [
            (
                "nfd.node.kubernetes.io/feature-labels",
                "pci-10de.present,example.com/x",
            ),
            (
                "blue.nfd.node.kubernetes.io/feature-labels",
                "cpu-model.vendor_id",
            ),
            ("notnfd.node.kubernetes.io/feature-labels", "example.com/y"),
        ];
        let owned = nfd_owned(&kv(&annotations));
        assert_eq!(
            owned,
            vec![
                "example.com/x",
                "feature.node.kubernetes.io/cpu-model.vendor_id",
                "feature.node.kubernetes.io/pci-10de.present"
            ]
        );
        let mut all = annotations.to_vec();
        all.push((OWNED_ANNOTATION, "example.com/x"));
        let r = plan(
            &desired(&[
                ("feature.node.kubernetes.io/pci-10de.present", "true"),
                ("example.com/y", "1"),
            ]),
            &node(&[("example.com/x", "1")], &all),
            &Policy::default(),
        );
        // Listed by NFD: neither added nor removed though we owned it.
        assert_eq!(
            action(&r, "feature.node.kubernetes.io/pci-10de.present").0,
            Action::Leave
        );
        assert_eq!(action(&r, "example.com/x").0, Action::Leave);
        assert_eq!(action(&r, "example.com/y").0, Action::Add);
        assert_eq!(r.patch.set, kv(&[("example.com/y", "1")]));
        assert!(r.patch.remove.is_empty());
    }

    #[test]
    fn node_restriction_keys_are_filtered() {
        for (key, may) in [
            ("node-role.kubernetes.io/worker", false),
            ("node-role.kubernetes.io/gpu", false),
            ("node-restriction.kubernetes.io/x", false),
            ("kubernetes.io/foo", false),
            ("k8s.io/foo", false),
            ("x.k8s.io/foo", false),
            ("node.kubernetes.io/gpu", true),
            ("a.node.kubernetes.io/gpu", true),
            ("feature.node.kubernetes.io/x", true),
            ("kubelet.kubernetes.io/x", true),
            ("topology.kubernetes.io/zone", true),
            ("example.com/x", true),
            ("plain", true),
        ] {
            assert_eq!(node_may_modify(key), may, "{key}");
        }
        let r = plan(
            &desired(&[("node-role.kubernetes.io/gpu", ""), ("example.com/a", "1")]),
            &node(&[], &[(OWNED_ANNOTATION, "node-role.kubernetes.io/worker")]),
            &Policy::default(),
        );
        assert!(action(&r, "node-role.kubernetes.io/gpu").2);
        assert_eq!(r.patch.set, kv(&[("example.com/a", "1")]));
        assert!(r.patch.remove.is_empty());
        assert!(r.drift_remains());
    }

    #[test]
    fn the_pool_label_is_reported_unless_allowed() {
        let d = desired(&[("node.kubernetes.io/worker-gpu", "x")]);
        let n = node(&[("node.kubernetes.io/worker-gpu", "")], &[]);
        let pool = Policy {
            pool_label: Some("node.kubernetes.io/worker-gpu".into()),
            allow_pool_label: false,
            installed: None,
        };
        let r = plan(&d, &n, &pool);
        assert!(r.patch.set.is_empty() && r.drift_remains());
        let allowed = Policy {
            allow_pool_label: true,
            ..pool.clone()
        };
        let owned = node(
            &[("node.kubernetes.io/worker-gpu", "")],
            &[(OWNED_ANNOTATION, "node.kubernetes.io/worker-gpu")],
        );
        let r = plan(&d, &owned, &allowed);
        assert_eq!(r.patch.set, kv(&[("node.kubernetes.io/worker-gpu", "x")]));
        assert!(plan(&d, &owned, &pool).patch.set.is_empty());
        // Owned and no longer derived: still not removed by default.
        let n = node(
            &[("node.kubernetes.io/worker-gpu", "")],
            &[(OWNED_ANNOTATION, "node.kubernetes.io/worker-gpu")],
        );
        let r = plan(&desired(&[]), &n, &pool);
        assert!(r.patch.remove.is_empty() && r.drift_remains());
        // Still ours; the pool label recorded (POOL_ANNOTATION).
        assert_eq!(
            r.patch.annotations,
            kv(&[(POOL_ANNOTATION, "node.kubernetes.io/worker-gpu")]),
            "{r:?}"
        );
        // The same value is adopted, so an opt-in later finds it ours.
        let same = desired(&[("node.kubernetes.io/worker-gpu", "")]);
        let r = plan(
            &same,
            &node(&[("node.kubernetes.io/worker-gpu", "")], &[]),
            &pool,
        );
        assert_eq!(action(&r, "node.kubernetes.io/worker-gpu").0, Action::Adopt);
        assert!(!r.drift_remains());
    }

    /// Issue 33 item 9: `--pool-label` changes from A to B. The env
    /// drop-in may reach the node before the pool's new `nodeSelector`:
    /// A, the key its pool selects it by until then, is never removed,
    /// whatever the runs in between saw; taken off cluster-side, it is
    /// forgotten.
    #[test]
    fn a_key_that_was_the_pool_label_is_held_after_a_pool_label_change() {
        let (a, b) = (
            "node.kubernetes.io/worker-gpu",
            "node.kubernetes.io/gpu-pool",
        );
        let pool = |k: &str| Policy {
            pool_label: Some(k.into()),
            allow_pool_label: false,
            installed: None,
        };
        // Registered with A (the pool label), then synced with A.
        let n = node(&[(a, ""), ("example.com/x", "1")], &[]);
        let first = plan(&desired(&[(a, ""), ("example.com/x", "1")]), &n, &pool(a));
        let n = patched(&n, &first);
        assert_eq!(
            n.annotations
                .iter()
                .find(|(k, _)| k == POOL_ANNOTATION)
                .map(|(_, v)| v.as_str()),
            Some(a)
        );
        // The new drop-in: B is the pool label, A no longer derived.
        let d = desired(&[(b, ""), ("example.com/x", "1")]);
        let mut now = n.clone();
        for run in 1..4 {
            let r = plan(&d, &now, &pool(b));
            assert!(!r.patch.remove.contains(&a.to_string()), "run {run}: {r:?}");
            assert_eq!(
                action(&r, a),
                (Action::Leave, POOL_BEFORE, true),
                "run {run}"
            );
            // B, the new pool label, is held too until the Node has it.
            assert!(r.patch.set.is_empty(), "run {run}: {r:?}");
            now = patched(&now, &r);
            assert_eq!(now.label(a), Some(""), "run {run}");
            let record = super::super::owned::decode(now.annotation(POOL_ANNOTATION).unwrap());
            assert_eq!(record.unwrap(), vec![b.to_string(), a.to_string()]);
        }
        // Taken off cluster-side: no drift, forgotten by both records.
        now.labels.retain(|(k, _)| k != a);
        let r = plan(&d, &now, &pool(b));
        assert!(r.keys.iter().all(|k| !k.drift || k.key == b), "{r:?}");
        let now = patched(&now, &r);
        assert_eq!(now.annotation(POOL_ANNOTATION), Some(b));
        assert!(!now.annotation(OWNED_ANNOTATION).unwrap().contains(a));
        // With --allow-pool-label an old pool label is removed as ours.
        let r = plan(
            &d,
            &n,
            &Policy {
                allow_pool_label: true,
                ..pool(b)
            },
        );
        assert_eq!(r.patch.remove, vec![a.to_string()]);
        assert_eq!(patched(&n, &r).annotation(POOL_ANNOTATION), Some(b));
        // Unreadable: nothing is changed, and the message says how on.
        let mut bad = n.clone();
        bad.annotations.retain(|(k, _)| k != POOL_ANNOTATION);
        bad.annotations
            .push((POOL_ANNOTATION.into(), "a.{b".into()));
        bad.annotations.sort();
        assert!(
            reconcile(&d, &bad, &pool(b))
                .unwrap_err()
                .contains("kubelet-labeler.io/pool-labels is unreadable")
        );
    }

    /// Issue 33 item 9, the upgrade: the Node was synced by a release
    /// that kept no record of pool labels, and the pool label changes in
    /// the same rollout. A key it owned that is no longer derived may be
    /// the old pool label: held (and recorded), never removed.
    #[test]
    fn after_an_upgrade_an_unrecorded_old_pool_label_is_held() {
        let (a, b) = ("node.kubernetes.io/pool-a", "node.kubernetes.io/pool-b");
        let pool = Policy {
            pool_label: Some(b.into()),
            allow_pool_label: false,
            installed: None,
        };
        let n = node(
            &[(a, ""), (b, ""), ("example.com/x", "1")],
            &[(OWNED_ANNOTATION, "example.com/x,node.kubernetes.io/pool-a")],
        );
        let d = desired(&[(b, ""), ("example.com/x", "1")]);
        let r = plan(&d, &n, &pool);
        assert!(r.patch.remove.is_empty(), "{r:?}");
        assert_eq!(action(&r, a), (Action::Leave, POOL_UNKNOWN, true));
        let n = patched(&n, &r);
        assert_eq!(
            n.annotation(POOL_ANNOTATION),
            Some("node.kubernetes.io/{pool-a,pool-b}")
        );
        // Recorded: held as a pool label of before from then on.
        let r = plan(&d, &n, &pool);
        assert_eq!(action(&r, a), (Action::Leave, POOL_BEFORE, true));
        assert!(r.patch.is_empty(), "{r:?}");
        // Without a pool label (no MachineConfigPool), nothing is guessed.
        let n = node(
            &[(a, ""), ("example.com/x", "1")],
            &[(OWNED_ANNOTATION, "example.com/x,node.kubernetes.io/pool-a")],
        );
        let r = plan(&desired(&[("example.com/x", "1")]), &n, &Policy::default());
        assert_eq!(r.patch.remove, vec![a.to_string()]);
    }

    /// Issue 33 item 26: one spelling of a label the Node lacks, one no
    /// label value can be.
    #[test]
    fn an_absent_label_is_spelled_one_way() {
        let r = plan(
            &desired(&[("node-role.kubernetes.io/gpu", "")]),
            &node(&[], &[(OWNED_ANNOTATION, "example.com/gone")]),
            &Policy::default(),
        );
        let lines = describe(&r);
        assert_eq!(
            lines,
            vec![
                "leave  example.com/gone=<absent> (ours, already gone)",
                "leave  node-role.kubernetes.io/gpu=<absent> (derived: ) (NodeRestriction forbids a node to change it (set it cluster-side))",
            ]
        );
    }

    #[test]
    fn kubelets_own_labels_are_left() {
        let r = plan(
            &desired(&[("kubernetes.io/hostname", "other")]),
            &node(&[("kubernetes.io/hostname", "n1")], &[]),
            &Policy::default(),
        );
        assert!(r.patch.set.is_empty() && !r.drift_remains());
    }

    /// Issue 32 item 12: what we add to a Node is sent to every watcher
    /// of Nodes; NFD's label set owned takes under 1 KB (4 KB as a list).
    #[test]
    fn the_owned_annotation_is_compact_and_keeps_ownership() {
        let keys: Vec<String> = (0..89)
            .map(|i| format!("feature.node.kubernetes.io/cpu-cpuid.FLAG{i:02}"))
            .collect();
        let labels: Vec<(String, String)> =
            keys.iter().map(|k| (k.clone(), "true".into())).collect();
        let d = Desired {
            labels: labels.clone(),
            ..Default::default()
        };
        let mut n = node(&[], &[]);
        n.labels = labels;
        let r = plan(&d, &n, &Policy::default());
        let text = &r.patch.annotations[0].1;
        assert_eq!(r.patch.annotations[0].0, OWNED_ANNOTATION);
        assert!(text.len() < keys.join(",").len() / 4, "{}", text.len());
        // Ours still: one no longer derived is removed, the rest stay.
        let n = patched(&n, &r);
        let fewer = Desired {
            labels: d.labels[1..].to_vec(),
            ..Default::default()
        };
        let r = plan(&fewer, &n, &Policy::default());
        assert_eq!(r.patch.remove, vec![keys[0].clone()]);
        // Unreadable: nothing is changed, and the message says how on.
        let mut bad = n.clone();
        bad.annotations = kv(&[(OWNED_ANNOTATION, "feature.{x")]);
        let e = reconcile(&fewer, &bad, &Policy::default()).unwrap_err();
        assert!(
            e.contains("kubectl annotate node n1 kubelet-labeler.io/owned-labels-"),
            "{e}"
        );
    }

    #[test]
    fn patch_json_carries_the_precondition() {
        let p = Patch {
            set: kv(&[("example.com/a", "1")]),
            remove: vec!["example.com/b".into()],
            annotations: kv(&[(OWNED_ANNOTATION, "example.com/a")]),
            remove_annotations: vec![DRIFT_ANNOTATION.into()],
        };
        let text = p.to_json("42");
        let v = super::super::json::parse(&text).unwrap();
        assert_eq!(
            v.path(&["metadata", "resourceVersion"]).unwrap().as_str(),
            Some("42")
        );
        assert_eq!(
            v.path(&["metadata", "labels", "example.com/b"]),
            Some(&super::super::json::Value::Null)
        );
        assert_eq!(
            v.path(&["metadata", "annotations", OWNED_ANNOTATION])
                .unwrap()
                .as_str(),
            Some("example.com/a")
        );
        assert_eq!(
            v.path(&["metadata", "annotations", DRIFT_ANNOTATION]),
            Some(&super::super::json::Value::Null)
        );
    }
}
