//! The cluster's own rules `plan` applies, as Kubernetes and the MCO apply
//! them: label selectors, the MCO's pool choice, taints and tolerations,
//! and what a node disruption policy makes of a changed file.

use serde_json::Value;

use crate::node::kubelet::{Taint, TaintEffect};

/// A `metav1.LabelSelector` (or a pod's `nodeSelector` map, or one
/// `nodeSelectorTerm`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    pub labels: Vec<(String, String)>,
    /// (key, operator, values)
    pub expressions: Vec<(String, String, Vec<String>)>,
}

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
        Some(s)
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.expressions.is_empty()
    }

    /// As `labels.Selector.Matches` (operators of LabelSelectors and of
    /// nodeSelectorTerms: In, NotIn, Exists, DoesNotExist, Gt, Lt).
    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        let get = |k: &str| {
            labels
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        self.labels.iter().all(|(k, v)| get(k) == Some(v.as_str()))
            && self
                .expressions
                .iter()
                .all(|(k, op, values)| match op.as_str() {
                    "In" => get(k).is_some_and(|v| values.iter().any(|x| x == v)),
                    "NotIn" => get(k).is_none_or(|v| !values.iter().any(|x| x == v)),
                    "Exists" => get(k).is_some(),
                    "DoesNotExist" => get(k).is_none(),
                    "Gt" | "Lt" => {
                        let (Some(v), Some(bound)) = (
                            get(k).and_then(|v| v.parse::<i64>().ok()),
                            values.first().and_then(|b| b.parse::<i64>().ok()),
                        ) else {
                            return false;
                        };
                        if op == "Gt" { v > bound } else { v < bound }
                    }
                    _ => false,
                })
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
            name,
        })
    }

    /// The MCO's own `master` and `worker` pools, as installed.
    pub fn builtin(role: &str) -> Pool {
        Pool {
            name: role.to_string(),
            node_selector: Some(Selector {
                labels: vec![(format!("node-role.kubernetes.io/{role}"), String::new())],
                ..Default::default()
            }),
            machineconfig_selector: Some(Selector {
                labels: vec![(ROLE_LABEL.into(), role.to_string())],
                ..Default::default()
            }),
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

/// A pod's (or pod template's) placement: node selector, required node
/// affinity terms (any one must match), tolerations.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    pub node_selector: Selector,
    pub affinity_terms: Vec<Selector>,
    pub tolerations: Vec<Toleration>,
}

impl Placement {
    pub fn from_pod_spec(spec: Option<&Value>) -> Placement {
        let mut p = Placement::default();
        let Some(spec) = spec else {
            return p;
        };
        if let Some(Value::Object(m)) = spec.get("nodeSelector") {
            for (k, v) in m {
                p.node_selector
                    .labels
                    .push((k.clone(), v.as_str().unwrap_or_default().to_string()));
            }
        }
        if let Some(Value::Array(terms)) =
            spec.pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        {
            for term in terms {
                let mut s = Selector::default();
                for e in term.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
                    s.expressions.push(expression(e, "operator"));
                }
                p.affinity_terms.push(s);
            }
        }
        if let Some(Value::Array(ts)) = spec.get("tolerations") {
            p.tolerations = ts.iter().map(Toleration::from_object).collect();
        }
        p
    }

    /// Whether the node's labels select it (taints aside).
    pub fn selects(&self, labels: &[(String, String)]) -> bool {
        self.node_selector.matches(labels)
            && (self.affinity_terms.is_empty()
                || self.affinity_terms.iter().any(|t| t.matches(labels)))
    }
}

/// What applying a change of files costs a node, worst first
/// (the MCO's post-config-change actions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Disruption {
    #[default]
    Nothing,
    DaemonReload,
    Reload,
    Restart,
    DrainAndReboot,
}

impl Disruption {
    pub fn as_str(self) -> &'static str {
        match self {
            Disruption::Nothing => "nothing",
            Disruption::DaemonReload => "a daemon-reload",
            Disruption::Reload => "a service reload",
            Disruption::Restart => "a service restart",
            Disruption::DrainAndReboot => "a drain and reboot",
        }
    }
}

/// The policy's action for a changed file: its entry (by exact path, else
/// the longest directory entry above it), else a reboot, as the MCO's
/// daemon decides with node disruption policies (OpenShift 4.17+).
pub fn file_disruption(
    policy_files: &[(String, Vec<String>)],
    path: &str,
) -> (Disruption, Vec<String>) {
    let exact = policy_files.iter().find(|(p, _)| p == path);
    let dir = || {
        policy_files
            .iter()
            .filter(|(p, _)| path.starts_with(&format!("{}/", p.trim_end_matches('/'))))
            .max_by_key(|(p, _)| p.len())
    };
    let Some((_, actions)) = exact.or_else(dir) else {
        return (Disruption::DrainAndReboot, vec!["no policy entry".into()]);
    };
    let worst = actions
        .iter()
        .map(|a| match a.split_once(' ').map_or(a.as_str(), |(t, _)| t) {
            "None" => Disruption::Nothing,
            "DaemonReload" => Disruption::DaemonReload,
            "Reload" | "Special" => Disruption::Reload,
            "Restart" => Disruption::Restart,
            _ => Disruption::DrainAndReboot,
        })
        .max()
        .unwrap_or(Disruption::DrainAndReboot);
    (worst, actions.clone())
}

/// `spec.nodeDisruptionPolicy.files` of a MachineConfiguration: each path
/// with its actions (`Restart kubelet-labeler-sync.service`).
pub fn policy_files(v: &Value) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for f in v
        .pointer("/spec/nodeDisruptionPolicy/files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(path) = f.get("path").and_then(Value::as_str) else {
            continue;
        };
        let actions = f
            .get("actions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| {
                let ty = a.get("type").and_then(Value::as_str).unwrap_or_default();
                let svc = ["restart", "reload"].iter().find_map(|k| {
                    a.pointer(&format!("/{k}/serviceName"))
                        .and_then(Value::as_str)
                });
                match svc {
                    Some(s) => format!("{ty} {s}"),
                    None => ty.to_string(),
                }
            })
            .collect();
        out.push((path.to_string(), actions));
    }
    out
}

/// A policy's entries merged over another's, keyed by path as the API
/// server merges the list on a server-side apply.
pub fn merge_policy(base: &mut Vec<(String, Vec<String>)>, over: Vec<(String, Vec<String>)>) {
    for (path, actions) in over {
        match base.iter_mut().find(|(p, _)| *p == path) {
            Some(e) => e.1 = actions,
            None => base.push((path, actions)),
        }
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

    #[test]
    fn disruption_by_path() {
        let policy = vec![
            (
                "/etc/a.conf".to_string(),
                vec!["DaemonReload".to_string(), "Restart s.service".to_string()],
            ),
            ("/etc/dir".to_string(), vec!["None".to_string()]),
        ];
        assert_eq!(
            file_disruption(&policy, "/etc/a.conf").0,
            Disruption::Restart
        );
        assert_eq!(
            file_disruption(&policy, "/etc/dir/x").0,
            Disruption::Nothing
        );
        assert_eq!(
            file_disruption(&policy, "/etc/directory").0,
            Disruption::DrainAndReboot
        );
        assert_eq!(
            file_disruption(&policy, "/etc/b").0,
            Disruption::DrainAndReboot
        );
    }
}
