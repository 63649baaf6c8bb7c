//! Taint drift: what a Node's taints lack or keep against what the
//! configuration derives. A node may not change its own taints, so this is
//! reported (the journal line, a `TaintDrift` Event once per drift), never
//! sent; our annotations record what was derived and what was told.

use super::state::{DRIFT_ANNOTATION, Desired, NodeState, Reconciled, TAINTS_ANNOTATION};
use crate::node::kubelet::Taint;

/// The taint drift as `DRIFT_ANNOTATION` records it.
fn drift_item(sign: char, t: &Taint) -> String {
    format!("{sign}{t}")
}

fn split_list(v: &str) -> Vec<String> {
    let mut out: Vec<String> = v
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect();
    out.sort();
    out.dedup();
    out
}

fn taint_text<'a>(taints: impl IntoIterator<Item = &'a Taint>) -> String {
    let mut t: Vec<String> = taints.into_iter().map(|t| t.to_string()).collect();
    t.sort();
    t.dedup();
    t.join(",")
}

/// The warning the advice to apply a `NoExecute` taint carries.
fn evicts(t: &Taint) -> &'static str {
    if t.effect == crate::node::kubelet::TaintEffect::NoExecute {
        " (NoExecute: applying it evicts every pod on the node that does not tolerate it)"
    } else {
        ""
    }
}

/// Taints: a derived one the Node lacks (or holds with another value), and
/// one of ours the Node still has though it is no longer derived: a rule's
/// (`Desired::rule_taints`) or one we derived before (our annotation keeps
/// it until the Node no longer has it), so every run reports it until it is
/// gone. Reported, never sent; an Event when the drift is new.
pub(super) fn taints(desired: &Desired, node: &NodeState, out: &mut Reconciled) {
    let same = |a: &Taint, b: &Taint| a.key == b.key && a.effect == b.effect;
    let mut items = Vec::new();
    for t in &desired.taints {
        match node.taints.iter().find(|n| same(n, t)) {
            Some(n) if n.value == t.value => {}
            Some(n) => {
                out.taint_drift.push(format!(
                    "taint {n} should be {t}: a node may not change its taints; run `kubectl taint nodes {} {t} --overwrite`{}",
                    node.name,
                    evicts(t)
                ));
                items.extend([drift_item('-', n), drift_item('+', t)]);
            }
            None => {
                out.taint_drift.push(format!(
                    "taint {t} is missing: a node may not add taints; run `kubectl taint nodes {} {t}`{}",
                    node.name,
                    evicts(t)
                ));
                items.push(drift_item('+', t));
            }
        }
    }
    let before = node
        .annotation(TAINTS_ANNOTATION)
        .map(split_list)
        .unwrap_or_default();
    let mut ours: Vec<&Taint> = desired.taints.iter().collect();
    for n in &node.taints {
        let text = n.to_string();
        let listed = super::state::has(&before, &text);
        let stale = !desired.taints.iter().any(|t| same(t, n))
            && (listed || desired.rule_taints.contains(n));
        if stale && desired.unknown.is_some() {
            // The rules may still give it: never said to be removed, and
            // still listed as ours.
            if listed {
                ours.push(n);
            }
        } else if stale {
            out.taint_drift.push(format!(
                "taint {text} is no longer derived: a node may not remove taints; run `kubectl taint nodes {} {}:{}-`",
                node.name,
                n.key,
                n.effect.as_str()
            ));
            items.push(drift_item('-', n));
            ours.push(n);
        }
    }
    let taints_text = taint_text(ours);
    if node.annotation(TAINTS_ANNOTATION).unwrap_or("") != taints_text
        && !(taints_text.is_empty() && node.annotation(TAINTS_ANNOTATION).is_none())
    {
        out.patch
            .annotations
            .push((TAINTS_ANNOTATION.to_string(), taints_text));
    }
    items.sort();
    items.dedup();
    let drift = items.join(",");
    match node.annotation(DRIFT_ANNOTATION) {
        Some(told) if told == drift => {}
        // What was told may be the rules' part, unknown now: kept.
        Some(_) if drift.is_empty() && desired.unknown.is_some() => {}
        Some(_) if drift.is_empty() => out
            .patch
            .remove_annotations
            .push(DRIFT_ANNOTATION.to_string()),
        None if drift.is_empty() => {}
        _ => {
            out.patch
                .annotations
                .push((DRIFT_ANNOTATION.to_string(), drift));
            out.post_event = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::reconcile::tests::{kv, node, patched, plan, taint};
    use super::super::reconcile::{DRIFT_ANNOTATION, Desired, Policy, TAINTS_ANNOTATION};
    use crate::node::kubelet::TaintEffect;

    /// Issue 33 item 24: the advice to apply a NoExecute taint says that
    /// it evicts every pod that does not tolerate it (journal line and
    /// Event message alike); NoSchedule advice does not.
    #[test]
    fn noexecute_advice_warns_of_evictions() {
        let d = Desired {
            taints: vec![
                taint("a", "1", TaintEffect::NoExecute),
                taint("b", "2", TaintEffect::NoExecute),
                taint("c", "", TaintEffect::NoSchedule),
            ],
            ..Default::default()
        };
        let mut n = node(&[], &[]);
        n.taints = vec![taint("b", "1", TaintEffect::NoExecute)];
        let r = plan(&d, &n, &Policy::default());
        assert_eq!(r.taint_drift.len(), 3, "{r:?}");
        let warning = "evicts every pod on the node that does not tolerate it";
        assert!(r.taint_drift[0].contains(warning), "{}", r.taint_drift[0]);
        assert!(r.taint_drift[1].contains(warning), "{}", r.taint_drift[1]);
        assert!(!r.taint_drift[2].contains(warning), "{}", r.taint_drift[2]);
    }

    #[test]
    fn taint_drift_is_reported_never_patched() {
        let t = taint;
        let d = Desired {
            taints: vec![
                t("gpu", "true", TaintEffect::NoSchedule),
                t("ok", "", TaintEffect::NoExecute),
                t("val", "new", TaintEffect::NoSchedule),
            ],
            ..Default::default()
        };
        let mut n = node(&[], &[(TAINTS_ANNOTATION, "old=:NoSchedule,ok=:NoExecute")]);
        n.taints = vec![
            t("ok", "", TaintEffect::NoExecute),
            t("old", "", TaintEffect::NoSchedule),
            t("val", "old", TaintEffect::NoSchedule),
            t("user", "", TaintEffect::NoSchedule),
        ];
        let r = plan(&d, &n, &Policy::default());
        assert_eq!(r.taint_drift.len(), 3, "{:?}", r.taint_drift);
        assert!(r.taint_drift[0].contains("gpu=true:NoSchedule is missing"));
        assert!(r.taint_drift[1].contains("val=old:NoSchedule should be val=new:NoSchedule"));
        assert!(r.taint_drift[2].contains("old=:NoSchedule is no longer derived"));
        assert!(r.drift_remains());
        assert!(r.patch.set.is_empty() && r.patch.remove.is_empty());
        // The stale one stays in the record while the Node has it.
        assert_eq!(
            r.patch.annotations,
            kv(&[
                (
                    TAINTS_ANNOTATION,
                    "gpu=true:NoSchedule,ok=:NoExecute,old=:NoSchedule,val=new:NoSchedule"
                ),
                (
                    DRIFT_ANNOTATION,
                    "+gpu=true:NoSchedule,+val=new:NoSchedule,-old=:NoSchedule,-val=old:NoSchedule"
                )
            ])
        );
        assert!(r.post_event);
        assert!(!r.patch.to_json("7").contains("\"spec\""));
    }

    /// Issue 32 item 13: the GPUs left the machine, so the rule's taint is
    /// no longer derived. Every run reports it until the Node loses it,
    /// whatever our annotations recorded in between (a release that forgot
    /// it, a user's edit); the Event is posted once.
    #[test]
    fn taint_drift_is_reported_at_every_run_until_it_is_gone() {
        let gpu = taint("nvidia.com/gpu", "true", TaintEffect::NoSchedule);
        // The rule still declares the taint; it no longer matches here.
        let d = Desired {
            rule_taints: vec![gpu.clone()],
            ..Default::default()
        };
        let mut n = node(
            &[],
            &[(TAINTS_ANNOTATION, "nvidia.com/gpu=true:NoSchedule")],
        );
        n.taints = vec![gpu.clone()];
        let first = plan(&d, &n, &Policy::default());
        assert_eq!(first.taint_drift.len(), 1, "{first:?}");
        assert!(first.drift_remains() && first.post_event);
        // Run after run, with what the first wrote.
        let mut now = patched(&n, &first);
        for run in 2..5 {
            let r = plan(&d, &now, &Policy::default());
            assert_eq!(r.taint_drift.len(), 1, "run {run}: {r:?}");
            assert!(r.drift_remains(), "run {run}");
            assert!(!r.post_event, "run {run}: the Event is posted once");
            assert!(r.patch.is_empty(), "run {run}: {r:?}");
            now = patched(&now, &r);
        }
        // What an earlier release wrote after the first report: no record.
        for forgotten in ["", "other=:NoExecute"] {
            let mut n = now.clone();
            n.annotations
                .retain(|(k, _)| k != TAINTS_ANNOTATION && k != DRIFT_ANNOTATION);
            n.annotations
                .push((TAINTS_ANNOTATION.into(), forgotten.into()));
            let r = plan(&d, &n, &Policy::default());
            assert_eq!(r.taint_drift.len(), 1, "{forgotten:?}: {r:?}");
        }
        // A taint dropped from the configuration (no rule declares it):
        // the record keeps it until the Node loses it.
        let gone = Desired::default();
        let mut n = now.clone();
        let r = plan(&gone, &n, &Policy::default());
        assert_eq!(r.taint_drift.len(), 1, "{r:?}");
        n = patched(&n, &r);
        assert_eq!(plan(&gone, &n, &Policy::default()).taint_drift.len(), 1);
        // Gone from the Node: no drift, the record and the told drift go.
        n.taints.clear();
        let r = plan(&gone, &n, &Policy::default());
        assert!(!r.drift_remains() && !r.post_event, "{r:?}");
        assert_eq!(
            r.patch.remove_annotations,
            vec![DRIFT_ANNOTATION.to_string()]
        );
        let n = patched(&n, &r);
        assert!(plan(&gone, &n, &Policy::default()).patch.is_empty());
        // A user's own taint that no rule gives and we never derived is
        // none of ours.
        let mut n = node(&[], &[]);
        n.taints = vec![taint("nvidia.com/gpu", "other", TaintEffect::NoSchedule)];
        assert!(!plan(&d, &n, &Policy::default()).drift_remains());
    }

    /// A new drift is told again; the same drift is not, even when a label
    /// change writes the Node.
    #[test]
    fn an_event_per_drift_not_per_write() {
        let gpu = taint("gpu", "true", TaintEffect::NoSchedule);
        let d = Desired {
            labels: kv(&[("example.com/a", "1")]),
            taints: vec![gpu.clone()],
            ..Default::default()
        };
        let n = node(&[], &[]);
        let r = plan(&d, &n, &Policy::default());
        assert!(r.post_event && !r.patch.set.is_empty());
        let n = patched(&n, &r);
        let d2 = Desired {
            labels: kv(&[("example.com/a", "2")]),
            ..d.clone()
        };
        let r = plan(&d2, &n, &Policy::default());
        assert!(!r.patch.set.is_empty() && !r.post_event, "{r:?}");
        let n = patched(&n, &r);
        let d3 = Desired {
            taints: vec![gpu, taint("fpga", "", TaintEffect::NoExecute)],
            ..d2.clone()
        };
        assert!(plan(&d3, &n, &Policy::default()).post_event);
    }
}
