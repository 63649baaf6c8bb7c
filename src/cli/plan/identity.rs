//! Which object of the cluster a manifest is, and what of it a change is
//! judged by: one identity and one comparison for every object plan reads,
//! of any kind (review 21 r21b F1, F2, F3). Per-path instances of either
//! rule (a namespace kept in one map's key and dropped in another's, a
//! `spec` compared where the whole object is applied) were what a pull
//! request slipped through.

use serde_json::Value;

/// Whether objects of a kind live in a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    Cluster,
    /// Not a kind plan knows the scope of: one given in two namespaces may
    /// be one object (the API server drops the namespace of a
    /// cluster-scoped one, the last applied wins) or two.
    Unknown,
}

/// Kinds known to be namespaced, by API group (`v1`: the core group) and
/// kind: one of these given in two namespaces is two objects.
const NAMESPACED: [(&str, &str); 26] = [
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Service"),
    ("v1", "ServiceAccount"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Pod"),
    ("v1", "LimitRange"),
    ("v1", "ResourceQuota"),
    ("apps", "Deployment"),
    ("apps", "DaemonSet"),
    ("apps", "StatefulSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("networking.k8s.io", "Ingress"),
    ("policy", "PodDisruptionBudget"),
    ("route.openshift.io", "Route"),
    ("operators.coreos.com", "Subscription"),
    ("operators.coreos.com", "OperatorGroup"),
    ("monitoring.coreos.com", "ServiceMonitor"),
    ("monitoring.coreos.com", "PrometheusRule"),
    ("argoproj.io", "Application"),
    // The Node Tuning Operator reads them in its own namespace only.
    ("tuned.openshift.io", "Tuned"),
    ("tuned.openshift.io", "Profile"),
];

/// API groups whose kinds are all cluster-scoped (review 19): the MCO's
/// (`KubeletConfig`, `ContainerRuntimeConfig`, `MachineConfig`, pools,
/// `MachineConfiguration`, `MachineOSConfig`), the cluster's config, the
/// Node Tuning Operator's `PerformanceProfile`.
const CLUSTER_SCOPED_GROUPS: [&str; 6] = [
    "config.openshift.io",
    "machineconfiguration.openshift.io",
    "performance.openshift.io",
    "apiextensions.k8s.io",
    "admissionregistration.k8s.io",
    "node.k8s.io",
];

/// Cluster-scoped kinds of groups that have namespaced ones too.
const CLUSTER_SCOPED: [(&str, &str); 6] = [
    ("v1", "Namespace"),
    ("v1", "Node"),
    ("v1", "PersistentVolume"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("operator.openshift.io", "ImageContentSourcePolicy"),
];

/// Annotations no controller reads, on any object: a change of only these
/// is none (an allow-list: any other field counts).
const INERT_ANNOTATIONS: [&str; 3] = [
    "openshift.io/display-name",
    "openshift.io/description",
    "kubernetes.io/description",
];

/// Kinds whose mere existence reaches no node, by API group and kind: one
/// added with nothing but its identity and inert fields is no change, and
/// one removed from a tree applied without prune stays as it is. Any other
/// field of one counts (a ServiceAccount's `automountServiceAccountToken:
/// false` or its pull secrets taken away lock nfd-worker out; a
/// Namespace's labels decide which pods it admits), and so does its
/// removal under `--prune` (a Namespace deleted deletes all in it).
const EXISTENCE_INERT: [(&str, &str); 2] = [("v1", "Namespace"), ("v1", "ServiceAccount")];

/// An object as the API server keeps it: kind, API group (any version of
/// it) and name, and the namespace where the kind may be namespaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub kind: String,
    /// Its `apiVersion` without the version (`v1`: the core group).
    pub group: String,
    pub name: String,
    /// The namespace as given (none for none or an empty one).
    pub spelt: Option<String>,
    pub scope: Scope,
}

/// The scope of `kind` of `group` as plan knows it.
pub fn scope(group: &str, kind: &str) -> Scope {
    if NAMESPACED.contains(&(group, kind)) {
        Scope::Namespaced
    } else if CLUSTER_SCOPED_GROUPS.contains(&group) || CLUSTER_SCOPED.contains(&(group, kind)) {
        Scope::Cluster
    } else {
        Scope::Unknown
    }
}

impl Identity {
    pub fn of(doc: &Value) -> Identity {
        let s = |p: &str| doc.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let api_version = s("/apiVersion");
        let group = api_version
            .rsplit_once('/')
            .map_or(api_version, |(g, _)| g)
            .to_string();
        let kind = s("/kind").to_string();
        let spelt = Some(s("/metadata/namespace"))
            .filter(|ns| !ns.is_empty())
            .map(str::to_string);
        Identity {
            scope: scope(&group, &kind),
            kind,
            group,
            name: s("/metadata/name").to_string(),
            spelt,
        }
    }

    /// `Kind (group)`, as messages name it.
    pub fn kind_group(&self) -> String {
        format!("{} ({})", self.kind, self.group)
    }

    /// The name plan keys it by: `namespace/name` unless the kind is
    /// cluster-scoped (the API server drops the namespace).
    pub fn key_name(&self) -> String {
        match (&self.spelt, self.scope) {
            (Some(ns), Scope::Namespaced | Scope::Unknown) => format!("{ns}/{}", self.name),
            _ => self.name.clone(),
        }
    }

    /// Whether two spellings of its namespace (`spelt`: all of one
    /// render's, by kind, group and name) make it given twice: with and
    /// without one (the applier's default namespace may be the other), or
    /// in two when the kind is not known to be namespaced (one object if
    /// it is cluster-scoped, which plan cannot always tell).
    pub fn twice_in(&self, spelt: &[Option<String>]) -> bool {
        spelt.len() > 1 && (spelt.contains(&None) || self.scope != Scope::Namespaced)
    }

    /// Whether its kind's mere existence reaches no node
    /// ([`EXISTENCE_INERT`]).
    pub fn existence_inert(&self) -> bool {
        EXISTENCE_INERT.contains(&(self.group.as_str(), self.kind.as_str()))
    }
}

/// What of `doc` a change is judged by: the whole object (labels,
/// annotations, spec and every other field), but for a cluster-scoped
/// kind's namespace (dropped by the API server) and inert annotations.
pub fn compared(doc: &Value, id: &Identity) -> Value {
    let mut out = doc.clone();
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        if id.scope == Scope::Cluster {
            meta.remove("namespace");
        }
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            a.retain(|k, _| !INERT_ANNOTATIONS.contains(&k.as_str()));
            if a.is_empty() {
                meta.remove("annotations");
            }
        }
        if meta
            .get("labels")
            .and_then(Value::as_object)
            .is_some_and(serde_json::Map::is_empty)
        {
            meta.remove("labels");
        }
    }
    out
}

/// Whether a [`compared`] object holds nothing but its identity.
pub fn bare(compared: &Value) -> bool {
    let Some(o) = compared.as_object() else {
        return false;
    };
    o.iter().all(|(k, v)| match k.as_str() {
        "apiVersion" | "kind" => true,
        "metadata" => v
            .as_object()
            .is_some_and(|m| m.keys().all(|k| k == "name" || k == "namespace")),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Review 21 r21b F2: a KubeletConfig (cluster-scoped) in two
    /// namespaces, or with and without one, is one object given twice;
    /// a ConfigMap in two is two objects.
    #[test]
    fn one_identity_by_scope() {
        let kc = |ns: Option<&str>| {
            let mut d = json!({"apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "KubeletConfig", "metadata": {"name": "gpu-taints"}});
            if let Some(ns) = ns {
                d["metadata"]["namespace"] = json!(ns);
            }
            Identity::of(&d)
        };
        let (a, b, none) = (kc(Some("a")), kc(Some("b")), kc(None));
        assert_eq!(a.scope, Scope::Cluster);
        assert_eq!(a.key_name(), "gpu-taints");
        assert_eq!(a.key_name(), b.key_name());
        assert_eq!(a.key_name(), none.key_name());
        assert!(a.twice_in(&[a.spelt.clone(), b.spelt.clone()]));
        assert!(a.twice_in(&[a.spelt.clone(), None]));
        assert!(!a.twice_in(std::slice::from_ref(&a.spelt)));
        let cm = Identity::of(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "a"}}));
        assert_eq!(cm.key_name(), "a/c");
        assert!(!cm.twice_in(&[Some("a".into()), Some("b".into())]));
        assert!(cm.twice_in(&[Some("a".into()), None]));
        let net = Identity::of(&json!({"apiVersion": "operator.openshift.io/v1",
            "kind": "Network", "metadata": {"name": "cluster", "namespace": "x"}}));
        assert_eq!(
            (net.scope, net.key_name().as_str()),
            (Scope::Unknown, "x/cluster")
        );
        assert!(net.twice_in(&[Some("x".into()), Some("y".into())]));
    }

    /// Review 21 r21b F1, F3: labels and annotations count; inert
    /// annotations and a cluster-scoped kind's namespace do not.
    #[test]
    fn compared_whole_but_inert_fields() {
        let doc = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "s", "namespace": "n",
                         "annotations": {"openshift.io/description": "x"}, "labels": {}}});
        let id = Identity::of(&doc);
        let c = compared(&doc, &id);
        assert!(bare(&c), "{c}");
        let mut tokenless = doc.clone();
        tokenless["automountServiceAccountToken"] = json!(false);
        assert!(!bare(&compared(&tokenless, &id)));
        let kc = json!({"apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "KubeletConfig", "metadata": {"name": "k", "namespace": "a",
            "labels": {"x": "y"}}, "spec": {}});
        let id = Identity::of(&kc);
        let c = compared(&kc, &id);
        assert!(c.pointer("/metadata/namespace").is_none());
        assert_eq!(c.pointer("/metadata/labels/x"), Some(&json!("y")));
    }
}
