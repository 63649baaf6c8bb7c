//! Objects the API server refuses as a pull request gives them: `kubectl
//! apply` (`-f`, `-k`, Argo CD, Flux) fails on that one object and the
//! cluster keeps what it had, while plan and explain would read it as
//! applied. Checked as the API server checks them: the group version the
//! MCO's CRDs serve, and apimachinery's `ValidateObjectMeta` for the name
//! and the labels.

use anyhow::{Result, bail};
use serde_json::Value;

use crate::node::kubelet::labels::{is_dns1123_subdomain, label_key_errors, label_value_errors};

/// The group version each kind the MCO reads is served at.
fn served_at(kind: &str) -> Option<&'static str> {
    match kind {
        "MachineConfig" | "MachineConfigPool" | "KubeletConfig" | "ContainerRuntimeConfig" => {
            Some("machineconfiguration.openshift.io/v1")
        }
        "MachineConfiguration" => Some("operator.openshift.io/v1"),
        _ => None,
    }
}

/// Refuse `doc` (of `source`) if the API server would refuse it.
pub fn check(doc: &Value, source: &str) -> Result<()> {
    let Some(kind) = doc.get("kind").and_then(Value::as_str) else {
        return Ok(());
    };
    let Some(served) = served_at(kind) else {
        return Ok(());
    };
    let name = doc.pointer("/metadata/name").and_then(Value::as_str);
    let what = format!("{kind} {:?}", name.unwrap_or_default());
    let refused = |why: String| {
        anyhow::anyhow!(
            "{source}: {what}: {why}: the API server refuses it, so `oc apply` leaves the \
             cluster's as it is while plan and explain read this one"
        )
    };
    let version = doc.get("apiVersion").and_then(Value::as_str);
    if version != Some(served) {
        return Err(refused(format!(
            "apiVersion is {}, not {served}; write apiVersion: {served}",
            version.map_or("missing".to_string(), |v| format!("{v:?}"))
        )));
    }
    match name {
        Some(n) if n.len() <= 253 && is_dns1123_subdomain(n.as_bytes()) => {}
        _ => {
            return Err(refused(
                "metadata.name is no lowercase RFC 1123 subdomain (lowercase letters, digits, \
                 '-' and '.', beginning and ending with a letter or digit, at most 253); \
                 rename it"
                    .to_string(),
            ));
        }
    }
    let labels = doc.pointer("/metadata/labels");
    match labels {
        None | Some(Value::Null) => {}
        Some(Value::Object(labels)) => {
            for (key, value) in labels {
                let Some(value) = value.as_str() else {
                    bail!(refused(format!(
                        "label {key:?} is {value}, not a string; quote it"
                    )));
                };
                let errors: Vec<String> = label_key_errors(key)
                    .into_iter()
                    .chain(label_value_errors(value))
                    .collect();
                if let Some(e) = errors.first() {
                    bail!(refused(format!("label {key:?}={value:?}: {e}")));
                }
            }
        }
        Some(other) => bail!(refused(format!(
            "metadata.labels is {other:.40}, not a map"
        ))),
    }
    // apimachinery's ValidateAnnotations: each key a qualified name once
    // lowercased, string values, 256 KiB in all.
    match doc.pointer("/metadata/annotations") {
        None | Some(Value::Null) => {}
        Some(Value::Object(annotations)) => {
            let mut total = 0usize;
            for (key, value) in annotations {
                let Some(value) = value.as_str() else {
                    bail!(refused(format!(
                        "annotation {key:?} is {value:.40}, not a string; quote it"
                    )));
                };
                if let Some(e) = label_key_errors(&key.to_lowercase()).first() {
                    bail!(refused(format!("annotation {key:?}: {e}")));
                }
                total += key.len() + value.len();
            }
            if total > 256 << 10 {
                bail!(refused(format!(
                    "metadata.annotations hold {total} bytes, past the API server's 262144"
                )));
            }
        }
        Some(other) => bail!(refused(format!(
            "metadata.annotations is {other:.40}, not a map"
        ))),
    }
    if kind == "MachineConfig" {
        spec_types(doc).map_err(refused)?;
    }
    if kind == "MachineConfigPool" && !inherits_worker(doc) {
        bail!(refused(
            "its machineConfigSelector does not select role worker's MachineConfigs, which \
             the MCO's admission policy custom-machine-config-pool-selector (OpenShift 4.20 \
             and later) requires of every pool: select `machineconfiguration.openshift.io/role` \
             In [worker, <pool>] (or master, arbiter by matchLabels)"
                .to_string()
        ));
    }
    Ok(())
}

/// Refuse a MachineConfig of a repository (plan's, a fleet pool's) named as
/// the MCO names its own: it writes its own over it. explain takes them,
/// given from a cluster.
pub fn check_not_mco_s_own(name: &str, source: &str) -> Result<()> {
    if is_mco_s_own(name) {
        bail!(
            "{source}: MachineConfig {name:?} is named as a MachineConfig the MCO makes itself \
             (from its templates, or a KubeletConfig or ContainerRuntimeConfig): it writes its \
             own over yours; name yours otherwise (as 50-<pool>-...)"
        );
    }
    Ok(())
}

/// A name the MCO gives its own MachineConfigs: `00-<role>`,
/// `01-<role>-container-runtime`, `01-<role>-kubelet`, and the
/// `97-`/`98-`/`99-<pool>-generated-<what>` its controllers render.
pub fn is_mco_s_own(name: &str) -> bool {
    let templated = ["worker", "master", "arbiter"].iter().any(|r| {
        name == format!("00-{r}")
            || name == format!("01-{r}-container-runtime")
            || name == format!("01-{r}-kubelet")
    });
    let generated = ["97-", "98-", "99-"].iter().any(|p| {
        name.strip_prefix(p)
            .and_then(|rest| rest.split_once("-generated-"))
            .is_some_and(|(pool, what)| !pool.is_empty() && !what.is_empty())
    });
    templated || generated
}

/// `MachineConfigSpec`'s fields by their Go types, as its CRD's schema
/// (and the MCO's decode) refuse another: `fips: "no"` is no bool.
fn spec_types(doc: &Value) -> std::result::Result<(), String> {
    let Some(spec) = doc.get("spec").filter(|s| !s.is_null()) else {
        return Ok(());
    };
    let Some(spec) = spec.as_object() else {
        return Err(format!("spec is {spec:.40}, not an object"));
    };
    let strings = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    for (key, value) in spec {
        let (ok, ty) = match key.as_str() {
            "fips" => (value.is_boolean(), "a boolean"),
            "kernelArguments" | "extensions" => (strings(value), "a list of strings"),
            "kernelType" | "osImageURL" | "baseOSExtensionsContainerImage" => {
                (value.is_string(), "a string")
            }
            "config" => (value.is_object(), "an object"),
            // The CRD's schema prunes nothing here: the API server refuses
            // a field it does not know (strict field validation).
            _ => {
                return Err(format!(
                    "spec.{key} is no field of a MachineConfig (config, kernelArguments, \
                     extensions, fips, kernelType, osImageURL, baseOSExtensionsContainerImage); \
                     remove or correct it"
                ));
            }
        };
        if !ok && !value.is_null() {
            return Err(format!(
                "spec.{key} is {value:.40}, not {ty}; write it as {ty}"
            ));
        }
    }
    Ok(())
}

/// The MCO's ValidatingAdmissionPolicy `custom-machine-config-pool-selector`
/// (its CEL, as the API server evaluates it): matchLabels' role master,
/// worker or arbiter, or a role expression `In` with worker, or `NotIn`
/// without it. A key the CEL looks up and the map lacks is an error, which
/// `||` forgives only where the other side holds; any error denies.
fn inherits_worker(pool: &Value) -> bool {
    const ROLE: &str = "machineconfiguration.openshift.io/role";
    let selector = pool.pointer("/spec/machineConfigSelector");
    let labels = selector
        .and_then(|s| s.get("matchLabels"))
        .filter(|v| !v.is_null());
    let by_labels = labels.is_some_and(|l| {
        matches!(
            l.get(ROLE).and_then(Value::as_str),
            Some("master" | "worker" | "arbiter")
        )
    });
    let expressions = selector
        .and_then(|s| s.get("matchExpressions"))
        .and_then(Value::as_array);
    let by_expressions = expressions.into_iter().flatten().any(|e| {
        let has_worker = e
            .get("values")
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(|v| v == "worker"));
        e.get("key").and_then(Value::as_str) == Some(ROLE)
            && match e.get("operator").and_then(Value::as_str) {
                Some("In") => has_worker,
                Some("NotIn") => !has_worker,
                _ => false,
            }
    });
    by_labels || by_expressions
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(api: &str, name: &str, labels: Value) -> Value {
        json!({ "apiVersion": api, "kind": "MachineConfig",
                "metadata": { "name": name, "labels": labels } })
    }

    #[test]
    fn what_the_api_server_refuses_is_refused() {
        let v1 = "machineconfiguration.openshift.io/v1";
        let role = json!({ "machineconfiguration.openshift.io/role": "worker" });
        assert!(check(&mc(v1, "50-worker-gpu-labels", role.clone()), "f").is_ok());
        for bad in [
            mc(
                "machineconfiguration.openshift.io/v1beta1",
                "50-a",
                role.clone(),
            ),
            mc(v1, "60-Upper-Name", role.clone()),
            mc(v1, "-a", role.clone()),
            mc(v1, &"a".repeat(254), role.clone()),
            mc(
                v1,
                "50-a",
                json!({ "machineconfiguration.openshift.io/role": "worker gpu" }),
            ),
            mc(v1, "50-a", json!({ "a b": "x" })),
            mc(v1, "50-a", json!({ "k": 1 })),
        ] {
            assert!(check(&bad, "f").is_err(), "{bad}");
        }
        // Review 16 r16b F4: annotations the API server refuses.
        let annotated = |a: Value| {
            let mut m = mc(v1, "50-a", role.clone());
            m["metadata"]["annotations"] = a;
            m
        };
        for bad in [
            json!({ "team owner": "x" }),
            json!({ "a/b/c": "x" }),
            json!({ "-x": "x" }),
            json!({ "k": 1 }),
            json!({ "k": "v".repeat(256 << 10) }),
        ] {
            assert!(check(&annotated(bad.clone()), "f").is_err(), "{bad:.60}");
        }
        assert!(check(&annotated(json!({ "Example.com/Owner": "x y" })), "f").is_ok());
        for spec in [
            json!({ "fips": "no" }),
            json!({ "kernelArguments": "nosmt" }),
            json!({ "extensions": [1] }),
            json!({ "kernelType": true }),
            json!({ "config": "x" }),
            json!({ "kernelArgs": ["nosmt"] }),
        ] {
            let mut bad = mc(v1, "50-a", role.clone());
            bad["spec"] = spec;
            assert!(check(&bad, "f").is_err(), "{bad}");
        }
        let pool = |selector: Value| {
            json!({ "apiVersion": v1, "kind": "MachineConfigPool",
                    "metadata": { "name": "worker-gpu" },
                    "spec": { "machineConfigSelector": selector } })
        };
        let role = "machineconfiguration.openshift.io/role";
        for (selector, admitted) in [
            (json!({ "matchLabels": { role: "worker" } }), true),
            (json!({ "matchLabels": { role: "worker-gpu" } }), false),
            (json!({ "matchLabels": {} }), false),
            (
                json!({ "matchExpressions": [
                { "key": role, "operator": "In", "values": ["worker", "worker-gpu"] } ] }),
                true,
            ),
            (
                json!({ "matchExpressions": [
                { "key": role, "operator": "NotIn", "values": ["master", "arbiter"] } ] }),
                true,
            ),
            (
                json!({ "matchExpressions": [
                { "key": role, "operator": "NotIn", "values": ["worker"] } ] }),
                false,
            ),
            (
                json!({ "matchExpressions": [
                { "key": role, "operator": "In", "values": ["worker-gpu-v2"] } ] }),
                false,
            ),
            (json!({}), false),
        ] {
            assert_eq!(
                check(&pool(selector.clone()), "f").is_ok(),
                admitted,
                "{selector}"
            );
        }
        for (name, own) in [
            ("01-worker-kubelet", true),
            ("00-worker", true),
            ("97-worker-gpu-generated-kubelet", true),
            ("99-worker-generated-registries", true),
            ("50-worker-gpu-kubelet-labeler-labels", false),
            ("99-worker-ssh", false),
        ] {
            assert_eq!(check_not_mco_s_own(name, "f").is_err(), own, "{name}");
        }
        // Kinds the MCO does not read are not judged here.
        assert!(
            check(
                &json!({ "kind": "ConfigMap", "metadata": { "name": "A" } }),
                "f"
            )
            .is_ok()
        );
    }
}
