//! The cluster's own rules `plan` applies, as Kubernetes and the MCO apply
//! them: label selectors, the MCO's pool choice, taints and tolerations,
//! and what a node disruption policy makes of a changed file.

use serde_json::Value;

use crate::node::kubelet::{Taint, TaintEffect};

/// A `metav1.LabelSelector` (or a pod's `nodeSelector` map, or one
/// `nodeSelectorTerm`), as Kubernetes builds it (`LabelSelectorAsSelector`,
/// `SelectorFromSet`, the scheduler's `nodeaffinity`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    pub labels: Vec<(String, String)>,
    /// (key, operator, values)
    pub expressions: Vec<(String, String, Vec<String>)>,
    /// A nodeSelectorTerm's `matchFields` (key, operator, values): the
    /// Node's `metadata.name` is its one field.
    pub fields: Vec<(String, String, Vec<String>)>,
    /// Why Kubernetes cannot build this selector (`labels.NewRequirement`'s
    /// checks): such a selector matches nothing.
    pub error: Option<String>,
}

/// The operators of a LabelSelector's `matchExpressions`.
const LABEL_SELECTOR_OPS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist"];
/// A nodeSelectorTerm's take `Gt` and `Lt` too.
const NODE_SELECTOR_OPS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];

impl Selector {
    /// From a LabelSelector object (`matchLabels`, `matchExpressions`).
    pub fn from_label_selector(v: Option<&Value>) -> Option<Selector> {
        let v = v.filter(|v| v.is_object())?;
        let mut s = Selector::default();
        if let Some(Value::Object(m)) = v.get("matchLabels") {
            for (k, val) in m {
                s.labels
                    .push((k.clone(), val.as_str().unwrap_or_default().to_string()));
            }
        }
        if let Some(Value::Array(exprs)) = v.get("matchExpressions") {
            for e in exprs {
                s.expressions.push(expression(e, "operator"));
            }
        }
        s.error = s.validate(LABEL_SELECTOR_OPS);
        Some(s)
    }

    /// A pod's `nodeSelector` map (`labels.SelectorFromSet`).
    pub fn from_set(labels: Vec<(String, String)>) -> Selector {
        let mut s = Selector {
            labels,
            ..Default::default()
        };
        s.error = s.validate(&[]);
        s
    }

    /// One `nodeSelectorTerm` of a required node affinity.
    pub fn from_node_selector_term(term: &Value) -> Selector {
        let exprs = |k: &str| -> Vec<(String, String, Vec<String>)> {
            term.get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|e| expression(e, "operator"))
                .collect()
        };
        let mut s = Selector {
            expressions: exprs("matchExpressions"),
            fields: exprs("matchFields"),
            ..Default::default()
        };
        s.error = s.validate(NODE_SELECTOR_OPS).or_else(|| {
            s.fields.iter().find_map(|(k, op, values)| {
                if !matches!(op.as_str(), "In" | "NotIn") {
                    Some(format!(
                        "matchFields {k}: operator {op:?} is not In or NotIn"
                    ))
                } else if values.len() != 1 {
                    Some(format!("matchFields {k}: must have one value"))
                } else {
                    None
                }
            })
        });
        s
    }

    /// Why `labels.NewRequirement` refuses one of this selector's
    /// requirements, if it does.
    fn validate(&self, ops: &[&str]) -> Option<String> {
        let req = |key: &str, op: &str, values: &[String]| -> Option<String> {
            let key_errs = crate::node::kubelet::labels::label_key_errors(key);
            if let Some(e) = key_errs.first() {
                return Some(format!("key {key:?}: {e}"));
            }
            let count = match op {
                "=" => (values.len() != 1).then_some("exactly one value is required"),
                "In" | "NotIn" => values.is_empty().then_some("values set can't be empty"),
                "Exists" | "DoesNotExist" => (!values.is_empty())
                    .then_some("values set must be empty for exists and does not exist"),
                "Gt" | "Lt" => (values.len() != 1 || values[0].parse::<i64>().is_err())
                    .then_some("exactly one integer value is required"),
                _ => Some("not a valid operator"),
            };
            if let Some(e) = count {
                return Some(format!("{key} {op}: {e}"));
            }
            values.iter().find_map(|v| {
                crate::node::kubelet::labels::label_value_errors(v)
                    .first()
                    .map(|e| format!("{key}: value {v:?}: {e}"))
            })
        };
        self.labels
            .iter()
            .find_map(|(k, v)| req(k, "=", std::slice::from_ref(v)))
            .or_else(|| {
                self.expressions.iter().find_map(|(k, op, values)| {
                    if ops.contains(&op.as_str()) {
                        req(k, op, values)
                    } else {
                        Some(format!("{k}: {op:?} is not a valid operator here"))
                    }
                })
            })
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
            && self.expressions.is_empty()
            && self.fields.is_empty()
            && self.error.is_none()
    }

    /// As `labels.Selector.Matches` (every requirement; operators In,
    /// NotIn, Exists, DoesNotExist, Gt, Lt); a selector Kubernetes cannot
    /// build matches nothing.
    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        self.matches_node("", labels)
    }

    /// [`Selector::matches`] with the `matchFields` on the Node's name.
    pub fn matches_node(&self, name: &str, labels: &[(String, String)]) -> bool {
        if self.error.is_some() {
            return false;
        }
        let get = |k: &str| {
            labels
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        let field = |k: &str| if k == "metadata.name" { name } else { "" };
        self.labels.iter().all(|(k, v)| get(k) == Some(v.as_str()))
            && self
                .expressions
                .iter()
                .all(|(k, op, values)| requirement_matches(get(k), op, values))
            && (name.is_empty()
                || self.fields.iter().all(|(k, op, values)| {
                    let equal = values.first().is_some_and(|v| *v == field(k));
                    if op == "In" { equal } else { !equal }
                }))
    }
}

/// `labels.Requirement.Matches` for a label's value (None: no such label).
fn requirement_matches(value: Option<&str>, op: &str, values: &[String]) -> bool {
    match op {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), [bound]) = (value.and_then(|v| v.parse::<i64>().ok()), values) else {
                return false;
            };
            let Ok(bound) = bound.parse::<i64>() else {
                return false;
            };
            if op == "Gt" { v > bound } else { v < bound }
        }
        _ => false,
    }
}

fn expression(e: &Value, op_field: &str) -> (String, String, Vec<String>) {
    let s = |k: &str| {
        e.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let values = e
        .get("values")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    (s("key"), s(op_field), values)
}

/// A MachineConfigPool as the MCO reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    pub name: String,
    /// None: matches no node (the MCO renders nothing for an empty one).
    pub node_selector: Option<Selector>,
    pub machineconfig_selector: Option<Selector>,
    /// `metadata.labels`: what a KubeletConfig's `machineConfigPoolSelector`
    /// selects it by.
    pub labels: Vec<(String, String)>,
    /// `spec.paused`: the MCO rolls no new rendered config out to the
    /// pool's nodes, and the MCS serves new ones its current one.
    pub paused: bool,
}

pub const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";

impl Pool {
    pub fn from_object(v: &Value) -> Option<Pool> {
        let name = v.pointer("/metadata/name")?.as_str()?.to_string();
        let nonempty = |s: Option<Selector>| s.filter(|s| !s.is_empty());
        Some(Pool {
            node_selector: nonempty(Selector::from_label_selector(
                v.pointer("/spec/nodeSelector"),
            )),
            machineconfig_selector: nonempty(Selector::from_label_selector(
                v.pointer("/spec/machineConfigSelector"),
            )),
            paused: v
                .pointer("/spec/paused")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            labels: match v.pointer("/metadata/labels") {
                Some(Value::Object(m)) => m
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect(),
                _ => Vec::new(),
            },
            name,
        })
    }

    /// The MCO's own `master` and `worker` pools, as installed (its
    /// `manifests/<role>.machineconfigpool.yaml`).
    pub fn builtin(role: &str) -> Pool {
        let pool = format!("pools.operator.machineconfiguration.openshift.io/{role}");
        let upgrade = "operator.machineconfiguration.openshift.io/required-for-upgrade";
        let keys = [
            "machineconfiguration.openshift.io/mco-built-in",
            &pool,
            upgrade,
        ];
        let n = if role == "master" { 3 } else { 2 };
        let labels = keys[..n].iter().map(|k| (k.to_string(), String::new()));
        Pool {
            labels: labels.collect(),
            name: role.to_string(),
            node_selector: Some(Selector {
                labels: vec![(format!("node-role.kubernetes.io/{role}"), String::new())],
                ..Default::default()
            }),
            machineconfig_selector: Some(Selector {
                labels: vec![(ROLE_LABEL.into(), role.to_string())],
                ..Default::default()
            }),
            paused: false,
        }
    }

    pub fn is_builtin(&self) -> bool {
        matches!(self.name.as_str(), "master" | "worker" | "arbiter")
    }

    /// Whether this pool's rendered config takes a MachineConfig of these
    /// labels (a custom pool without a selector takes its own role's and
    /// `worker`'s, as the MCO's custom-pool docs write it).
    pub fn takes(&self, mc_labels: &[(String, String)]) -> bool {
        match &self.machineconfig_selector {
            Some(s) => s.matches(mc_labels),
            None => {
                let role = mc_labels
                    .iter()
                    .find(|(k, _)| k == ROLE_LABEL)
                    .map(|(_, v)| v.as_str());
                role == Some(self.name.as_str()) || (!self.is_builtin() && role == Some("worker"))
            }
        }
    }
}

/// The MCO's pool choice (`helpers.GetPoolsForNode`): master over a custom
/// pool, one custom pool over worker, two custom pools an error.
pub fn choose_pool<'a>(
    pools: &'a [Pool],
    labels: &[(String, String)],
) -> Result<Option<&'a Pool>, String> {
    if let Some((p, e)) = pools.iter().find_map(|p| {
        let e = p.node_selector.as_ref()?.error.as_ref()?;
        Some((p, e))
    }) {
        return Err(format!(
            "pool {} has an invalid node selector ({e}): the MCO places no node",
            p.name
        ));
    }
    let matching: Vec<&Pool> = pools
        .iter()
        .filter(|p| p.node_selector.as_ref().is_some_and(|s| s.matches(labels)))
        .collect();
    if let Some(m) = matching.iter().find(|p| p.name == "master") {
        return Ok(Some(m));
    }
    let custom: Vec<&&Pool> = matching.iter().filter(|p| !p.is_builtin()).collect();
    match custom.as_slice() {
        [one] => return Ok(Some(one)),
        [] => {}
        many => {
            return Err(format!(
                "in {} custom pools ({}): the MCO refuses such a node",
                many.len(),
                many.iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(matching.into_iter().find(|p| p.name == "worker"))
}

/// One toleration of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    pub key: String,
    pub operator: String,
    pub value: String,
    pub effect: String,
    /// `tolerationSeconds`: how long a NoExecute taint is tolerated
    /// (None: for ever).
    pub seconds: Option<i64>,
}

impl Toleration {
    pub fn from_object(v: &Value) -> Toleration {
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Toleration {
            key: s("key"),
            operator: s("operator"),
            value: s("value"),
            effect: s("effect"),
            seconds: v.get("tolerationSeconds").and_then(Value::as_i64),
        }
    }

    /// As `v1.Toleration.ToleratesTaint`.
    pub fn tolerates(&self, t: &Taint) -> bool {
        if !self.effect.is_empty() && self.effect != t.effect.as_str() {
            return false;
        }
        if !self.key.is_empty() && self.key != t.key {
            return false;
        }
        match self.operator.as_str() {
            "" | "Equal" => self.value == t.value,
            "Exists" => true,
            // The taint's value below (Lt) or above (Gt) the toleration's,
            // both integers (Kubernetes 1.35's TaintTolerationComparisonOperators).
            "Lt" | "Gt" => match (self.value.parse::<i64>(), t.value.parse::<i64>()) {
                (Ok(tol), Ok(taint)) => {
                    if self.operator == "Lt" {
                        taint < tol
                    } else {
                        taint > tol
                    }
                }
                _ => false,
            },
            _ => false,
        }
    }
}

/// What the DaemonSet controller adds to every DaemonSet pod
/// (`daemon/util.AddOrUpdateDaemonPodTolerations`): NoExecute for
/// not-ready and unreachable, NoSchedule for the node conditions.
pub fn daemonset_default_tolerations() -> Vec<Toleration> {
    let t = |key: &str, effect: &str| Toleration {
        key: key.into(),
        operator: "Exists".into(),
        value: String::new(),
        effect: effect.into(),
        seconds: None,
    };
    vec![
        t("node.kubernetes.io/not-ready", "NoExecute"),
        t("node.kubernetes.io/unreachable", "NoExecute"),
        t("node.kubernetes.io/disk-pressure", "NoSchedule"),
        t("node.kubernetes.io/memory-pressure", "NoSchedule"),
        t("node.kubernetes.io/pid-pressure", "NoSchedule"),
        t("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
}

/// The taints that keep a pod off (NoSchedule, NoExecute) and that none
/// of its tolerations tolerates (the scheduler's TaintToleration filter).
pub fn untolerated<'a>(taints: &'a [Taint], tolerations: &[Toleration]) -> Vec<&'a Taint> {
    taints
        .iter()
        .filter(|t| t.effect != TaintEffect::PreferNoSchedule)
        .filter(|t| !tolerations.iter().any(|tol| tol.tolerates(t)))
        .collect()
}

/// What the NoExecute taints of a node do to a pod running there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Eviction {
    /// Evicted at once (a NoExecute taint it does not tolerate).
    Now,
    /// Evicted once this many seconds pass (its `tolerationSeconds`).
    After(i64),
    Stays,
}

/// As Kubernetes' taint eviction controller (`processPodOnNode`): each
/// NoExecute taint is tolerated by the pod's first toleration matching it
/// (`GetMatchingTolerations`); one it does not tolerate evicts it at once;
/// else the least `tolerationSeconds` of those tolerations (0 or less: at
/// once) is when it is evicted, none at all: never.
pub fn noexecute_eviction(taints: &[Taint], tolerations: &[Toleration]) -> Eviction {
    let mut least: Option<i64> = None;
    for t in taints.iter().filter(|t| t.effect == TaintEffect::NoExecute) {
        let Some(tol) = tolerations.iter().find(|tol| tol.tolerates(t)) else {
            return Eviction::Now;
        };
        if let Some(s) = tol.seconds {
            least = Some(least.map_or(s, |l| l.min(s)));
        }
    }
    match least {
        Some(s) if s <= 0 => Eviction::Now,
        Some(s) => Eviction::After(s),
        None => Eviction::Stays,
    }
}

/// The node's pods the change of its taints evicts: at once, and later
/// (after their `tolerationSeconds`), each judged as Kubernetes' taint
/// eviction controller judges it on the taints before and after; a pod
/// already on its way out before the change is not counted.
pub fn evictions(
    pods: &[Placement],
    before: &[Taint],
    after: &[Taint],
) -> (usize, Option<super::DelayedEviction>) {
    let mut now = 0;
    let mut later: Option<super::DelayedEviction> = None;
    for p in pods {
        let was = noexecute_eviction(before, &p.tolerations);
        match noexecute_eviction(after, &p.tolerations) {
            _ if was != Eviction::Stays => {}
            Eviction::Now => now += 1,
            Eviction::After(s) => {
                let l = later.get_or_insert(super::DelayedEviction {
                    pods: 0,
                    soonest_seconds: s,
                    latest_seconds: s,
                });
                l.pods += 1;
                l.soonest_seconds = l.soonest_seconds.min(s);
                l.latest_seconds = l.latest_seconds.max(s);
            }
            _ => {}
        }
    }
    (now, later)
}

/// A pod's (or pod template's) placement: node selector, required node
/// affinity terms (any one must match), tolerations.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    pub node_selector: Selector,
    /// The required node affinity's terms (None: no required affinity;
    /// an empty term, or none at all, selects no node).
    pub affinity_terms: Option<Vec<Selector>>,
    pub tolerations: Vec<Toleration>,
}

impl Placement {
    pub fn from_pod_spec(spec: Option<&Value>) -> Placement {
        let mut p = Placement::default();
        let Some(spec) = spec else {
            return p;
        };
        if let Some(Value::Object(m)) = spec.get("nodeSelector") {
            p.node_selector = Selector::from_set(
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect(),
            );
        }
        if let Some(ns) =
            spec.pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
            && !ns.is_null()
        {
            let terms = ns.get("nodeSelectorTerms").and_then(Value::as_array);
            p.affinity_terms = Some(
                terms
                    .into_iter()
                    .flatten()
                    .map(Selector::from_node_selector_term)
                    .filter(|t| !(t.expressions.is_empty() && t.fields.is_empty()))
                    .collect(),
            );
        }
        if let Some(Value::Array(ts)) = spec.get("tolerations") {
            p.tolerations = ts.iter().map(Toleration::from_object).collect();
        }
        p
    }

    /// Whether the node's name and labels select it, taints aside
    /// (`nodeaffinity.GetRequiredNodeAffinity(pod).Match`).
    pub fn selects(&self, name: &str, labels: &[(String, String)]) -> bool {
        self.node_selector.matches(labels)
            && self
                .affinity_terms
                .as_ref()
                .is_none_or(|terms| terms.iter().any(|t| t.matches_node(name, labels)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect,
        }
    }

    #[test]
    fn pool_choice_as_the_mco() {
        let gpu = Pool::from_object(&serde_json::json!({
            "metadata": {"name": "worker-gpu"},
            "spec": {"nodeSelector": {"matchLabels": {"node.kubernetes.io/worker-gpu": ""}}}
        }))
        .unwrap();
        let numa = Pool {
            name: "worker-numa".into(),
            node_selector: Some(Selector {
                expressions: vec![("numa".into(), "Exists".into(), vec![])],
                ..Default::default()
            }),
            machineconfig_selector: None,
            labels: Vec::new(),
            paused: false,
        };
        let pools = vec![Pool::builtin("master"), Pool::builtin("worker"), gpu, numa];
        let worker = kv(&[("node-role.kubernetes.io/worker", "")]);
        assert_eq!(
            choose_pool(&pools, &worker).unwrap().unwrap().name,
            "worker"
        );
        let mut g = worker.clone();
        g.push(("node.kubernetes.io/worker-gpu".into(), String::new()));
        assert_eq!(choose_pool(&pools, &g).unwrap().unwrap().name, "worker-gpu");
        g.push(("numa".into(), "1".into()));
        assert!(
            choose_pool(&pools, &g)
                .unwrap_err()
                .contains("2 custom pools")
        );
        g.push(("node-role.kubernetes.io/master".into(), String::new()));
        assert_eq!(choose_pool(&pools, &g).unwrap().unwrap().name, "master");
        assert!(choose_pool(&pools, &kv(&[("a", "b")])).unwrap().is_none());
        // A custom pool without a machineConfigSelector takes worker's too.
        assert!(pools[2].takes(&kv(&[(ROLE_LABEL, "worker")])));
        assert!(!pools[1].takes(&kv(&[(ROLE_LABEL, "worker-gpu")])));
    }

    #[test]
    fn tolerations_as_kubernetes() {
        let gpu = taint("nvidia.com/gpu", "present", TaintEffect::NoSchedule);
        let t = |k: &str, op: &str, v: &str, e: &str| Toleration {
            key: k.into(),
            operator: op.into(),
            value: v.into(),
            effect: e.into(),
            seconds: None,
        };
        assert!(t("nvidia.com/gpu", "Exists", "", "").tolerates(&gpu));
        assert!(t("nvidia.com/gpu", "Equal", "present", "NoSchedule").tolerates(&gpu));
        assert!(!t("nvidia.com/gpu", "Equal", "other", "").tolerates(&gpu));
        assert!(!t("nvidia.com/gpu", "Exists", "", "NoExecute").tolerates(&gpu));
        assert!(t("", "Exists", "", "").tolerates(&gpu));
        assert!(!t("", "", "", "").tolerates(&gpu));
        let soft = taint("x", "", TaintEffect::PreferNoSchedule);
        assert!(untolerated(&[soft], &[]).is_empty());
    }

    /// The taint eviction controller's verdict: the first toleration that
    /// matches each NoExecute taint counts, the least tolerationSeconds of
    /// those wins, 0 or less is at once.
    #[test]
    fn noexecute_eviction_as_the_taint_eviction_controller() {
        let t = |k: &str, op: &str, e: &str, secs: Option<i64>| Toleration {
            key: k.into(),
            operator: op.into(),
            value: String::new(),
            effect: e.into(),
            seconds: secs,
        };
        let drain = taint("drain", "", TaintEffect::NoExecute);
        let other = taint("other", "", TaintEffect::NoExecute);
        let soft = taint("soft", "", TaintEffect::NoSchedule);
        let e = |taints: Vec<Taint>, tols: &[Toleration]| noexecute_eviction(&taints, tols);
        assert_eq!(e(vec![soft], &[]), Eviction::Stays);
        assert_eq!(e(vec![drain.clone()], &[]), Eviction::Now);
        assert_eq!(
            e(
                vec![drain.clone()],
                &[t("drain", "Exists", "NoSchedule", None)]
            ),
            Eviction::Now
        );
        assert_eq!(
            e(vec![drain.clone()], &[t("drain", "Exists", "", None)]),
            Eviction::Stays
        );
        assert_eq!(
            e(vec![drain.clone()], &[t("drain", "Exists", "", Some(300))]),
            Eviction::After(300)
        );
        assert_eq!(
            e(vec![drain.clone()], &[t("drain", "Exists", "", Some(0))]),
            Eviction::Now
        );
        // The first matching toleration is the one used.
        assert_eq!(
            e(
                vec![drain.clone()],
                &[
                    t("", "Exists", "", Some(60)),
                    t("drain", "Exists", "", None)
                ]
            ),
            Eviction::After(60)
        );
        // Two taints: the least of their tolerations' seconds.
        assert_eq!(
            e(
                vec![drain.clone(), other.clone()],
                &[
                    t("drain", "Exists", "", Some(600)),
                    t("other", "Exists", "", Some(30))
                ]
            ),
            Eviction::After(30)
        );
        assert_eq!(
            e(vec![drain, other], &[t("drain", "Exists", "", None)]),
            Eviction::Now
        );
    }

    /// Kubernetes' taint and toleration matching, as
    /// `staging/src/k8s.io/api/core/v1/toleration.go` (`ToleratesTaint`, with
    /// the `Lt`/`Gt` operators of 1.35) writes it, read with the upstream
    /// source at hand (no Debian package ships k8s.io/api for a Go oracle;
    /// nothing upstream is copied here).
    #[test]
    fn tolerations_as_upstream_code() {
        let t = |k: &str, op: &str, v: &str, e: &str| Toleration {
            key: k.into(),
            operator: op.into(),
            value: v.into(),
            effect: e.into(),
            seconds: None,
        };
        let taint5 = taint("prio", "5", TaintEffect::NoSchedule);
        // (toleration, tolerates prio=5:NoSchedule)
        let table = [
            (t("prio", "Lt", "6", ""), true),
            (t("prio", "Lt", "5", ""), false),
            (t("prio", "Gt", "4", "NoSchedule"), true),
            (t("prio", "Gt", "5", ""), false),
            (t("prio", "Gt", "x", ""), false),
            (t("", "Lt", "9", ""), true),
            (t("prio", "Gt", "4", "NoExecute"), false),
            (t("prio", "Bogus", "5", ""), false),
            // An empty key with Equal compares the value alone.
            (t("", "", "5", ""), true),
            (t("", "Equal", "6", ""), false),
        ];
        for (tol, want) in table {
            assert_eq!(tol.tolerates(&taint5), want, "{tol:?}");
        }
        let word = taint("prio", "high", TaintEffect::NoSchedule);
        assert!(!t("prio", "Lt", "9", "").tolerates(&word));
        // The DaemonSet controller and the scheduler filter on NoSchedule
        // and NoExecute only.
        let hard = [
            taint("a", "", TaintEffect::NoExecute),
            taint("b", "", TaintEffect::PreferNoSchedule),
        ];
        assert_eq!(untolerated(&hard, &[]).len(), 1);
        assert!(untolerated(&hard, &[t("a", "Exists", "", "NoExecute")]).is_empty());
    }

    /// Label selectors as apimachinery builds and matches them:
    /// `labels/selector.go` (`NewRequirement`'s checks, `Requirement.Matches`),
    /// `apis/meta/v1/helpers.go` (`LabelSelectorAsSelector`: no Gt/Lt), and
    /// component-helpers' `scheduling/corev1/nodeaffinity` (an empty term
    /// selects nothing, terms ORed, `matchFields` on `metadata.name`), read
    /// with the upstream source at hand; nothing upstream is copied here.
    #[test]
    fn selectors_as_upstream_code() {
        let e = |k: &str, op: &str, vs: &[&str]| serde_json::json!({"key": k, "operator": op, "values": vs});
        let labels = kv(&[("a", "1"), ("b", "x"), ("n", "10")]);
        // (matchExpressions, LabelSelector matches, nodeSelectorTerm matches)
        let table = [
            (e("a", "In", &["1", "2"]), true, true),
            (e("a", "In", &["2"]), false, false),
            (e("z", "In", &["1"]), false, false),
            (e("a", "NotIn", &["2"]), true, true),
            (e("z", "NotIn", &["2"]), true, true),
            (e("a", "NotIn", &["1"]), false, false),
            (e("a", "Exists", &[]), true, true),
            (e("z", "DoesNotExist", &[]), true, true),
            (e("a", "DoesNotExist", &[]), false, false),
            // Gt/Lt: node selector terms only; both sides integers.
            (e("n", "Gt", &["9"]), false, true),
            (e("n", "Gt", &["10"]), false, false),
            (e("n", "Lt", &["11"]), false, true),
            (e("b", "Gt", &["1"]), false, false),
            (e("z", "Lt", &["1"]), false, false),
            // What NewRequirement refuses builds no selector: nothing matches.
            (e("z", "NotIn", &[]), false, false),
            (e("a", "Exists", &["1"]), false, false),
            (e("n", "Gt", &["1", "2"]), false, false),
            (e("n", "Gt", &["x"]), false, false),
            (e("bad key!", "DoesNotExist", &[]), false, false),
            (e("z", "NotIn", &["not a value"]), false, false),
            (e("a", "Equals", &["1"]), false, false),
        ];
        for (expr, in_label_selector, in_term) in table {
            let ls = Selector::from_label_selector(Some(
                &serde_json::json!({"matchExpressions": [expr.clone()]}),
            ))
            .unwrap();
            assert_eq!(ls.matches(&labels), in_label_selector, "{expr}");
            let term = Selector::from_node_selector_term(
                &serde_json::json!({"matchExpressions": [expr.clone()]}),
            );
            assert_eq!(term.matches_node("n1", &labels), in_term, "{expr}");
        }
        // matchLabels and a pod's nodeSelector: the key must be there.
        let set = Selector::from_set(kv(&[("z", "")]));
        assert!(!set.matches(&labels));
        assert!(Selector::from_set(kv(&[("a", "1")])).matches(&labels));
        assert!(!Selector::from_set(kv(&[("a", "1"), ("b", "bad value")])).matches(&labels));
        // A pool of an invalid selector: the MCO places no node at all.
        let pools = [
            Pool::builtin("worker"),
            Pool::from_object(&serde_json::json!({
                "metadata": {"name": "odd"},
                "spec": {"nodeSelector": {"matchExpressions": [e("n", "Gt", &["1"])]}}
            }))
            .unwrap(),
        ];
        assert!(choose_pool(&pools, &labels).unwrap_err().contains("odd"));
    }

    #[test]
    fn required_node_affinity_as_upstream_code() {
        let p = |affinity: serde_json::Value| {
            Placement::from_pod_spec(Some(&serde_json::json!({
                "nodeSelector": {"a": "1"},
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": affinity}}
            })))
        };
        let labels = kv(&[("a", "1"), ("gpu", "")]);
        let exists =
            |k: &str| serde_json::json!({"matchExpressions": [{"key": k, "operator": "Exists"}]});
        let name_in = |n: &str| serde_json::json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]});
        let table = [
            (serde_json::Value::Null, true),
            (serde_json::json!({"nodeSelectorTerms": []}), false),
            (serde_json::json!({"nodeSelectorTerms": [{}]}), false),
            (
                serde_json::json!({"nodeSelectorTerms": [{}, exists("gpu")]}),
                true,
            ),
            (
                serde_json::json!({"nodeSelectorTerms": [exists("x"), exists("gpu")]}),
                true,
            ),
            (
                serde_json::json!({"nodeSelectorTerms": [exists("x")]}),
                false,
            ),
            (
                serde_json::json!({"nodeSelectorTerms": [name_in("n1")]}),
                true,
            ),
            (
                serde_json::json!({"nodeSelectorTerms": [name_in("n2")]}),
                false,
            ),
            (
                serde_json::json!({"nodeSelectorTerms": [{
                    "matchExpressions": [{"key": "gpu", "operator": "Exists"}],
                    "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]
                }]}),
                false,
            ),
        ];
        for (affinity, want) in table {
            assert_eq!(
                p(affinity.clone()).selects("n1", &labels),
                want,
                "{affinity}"
            );
        }
        // The nodeSelector map and the affinity both hold.
        assert!(!p(serde_json::Value::Null).selects("n1", &kv(&[("gpu", "")])));
    }
}
