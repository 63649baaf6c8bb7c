//! What the cluster's release decides about MachineConfigs, judged against
//! the release a rendered config names (its
//! `machineconfiguration.openshift.io/release-image-version`): the limits
//! docs/commands.md and docs/openshift-releases.md state per release.

use serde_json::Value;

use crate::node::kubelet::version::RELEASE_ANNOTATION;

/// The rendered config's release and its name, as given: (`4.18.7`,
/// 4.y's y, the MachineConfig's name).
fn release(configs: &[Value]) -> Option<(String, u32, String)> {
    configs.iter().find_map(|mc| {
        let r = mc
            .pointer("/metadata/annotations")?
            .get(RELEASE_ANNOTATION)?
            .as_str()?
            .trim();
        let minor = crate::node::kubelet::version::openshift_to_kubernetes(r)? - 13;
        let name = mc.pointer("/metadata/name").and_then(Value::as_str)?;
        Some((r.to_string(), minor, name.to_string()))
    })
}

/// The newest Ignition spec the MCO of OpenShift 4.`minor` parses
/// MachineConfigs with: 4.14-4.18 Ignition's v3_4 package, 4.19 and later
/// v3_5 (docs/commands.md, "Ignition spec versions"); None before 4.14,
/// which this tool does not support.
fn newest_ignition(minor: u32) -> Option<(u32, u32, u32)> {
    match minor {
        14..=18 => Some((3, 4, 0)),
        19.. => Some((3, 5, 0)),
        _ => None,
    }
}

fn semver(v: &str) -> Option<(u32, u32, u32)> {
    let mut it = v.trim().split('.');
    let out = (
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    );
    it.next().is_none().then_some(out)
}

/// The MCO's limit on a pool's rendered config (`MaxMachineConfigSize`):
/// etcd's default request limit, which the render controller checks
/// itself from 4.22 and etcd enforces before.
const MAX_RENDERED: usize = 1_572_864;

/// About how many bytes of JSON the pool's rendered config takes with
/// `configs` merged in: the given rendered config, plus each other
/// MachineConfig's files, a file it replaces counted once.
fn rendered_size(configs: &[Value], rendered: &str) -> Option<usize> {
    let base = configs
        .iter()
        .find(|mc| mc.pointer("/metadata/name").and_then(Value::as_str) == Some(rendered))?;
    let files = |mc: &Value| -> Vec<(String, usize)> {
        mc.pointer("/spec/config/storage/files")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|f| {
                let path = f.get("path").and_then(Value::as_str).unwrap_or("");
                (path.to_string(), f.to_string().len())
            })
            .collect()
    };
    let mut sizes: std::collections::BTreeMap<String, usize> = files(base).into_iter().collect();
    let mut total = base.to_string().len() as i64;
    for mc in configs.iter().filter(|mc| !std::ptr::eq(*mc, base)) {
        for (path, size) in files(mc) {
            let before = sizes.insert(path, size).unwrap_or(0);
            total += size as i64 - before as i64;
        }
    }
    Some(total.max(0) as usize)
}

/// Why the cluster the rendered config among `configs` names would refuse
/// the MachineConfigs (its MCO degrades the pool), one line each.
pub fn errors(configs: &[Value]) -> Vec<String> {
    let Some((release, minor, rendered)) = release(configs) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let of = format!("OpenShift {release} (the release {rendered} was rendered by)");
    if let Some(newest) = newest_ignition(minor) {
        let shown = format!("{}.{}.{}", newest.0, newest.1, newest.2);
        for mc in configs {
            let name = mc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let Some(v) = mc
                .pointer("/spec/config/ignition/version")
                .and_then(Value::as_str)
            else {
                continue;
            };
            if semver(v).is_some_and(|v| v > newest) {
                out.push(format!(
                    "MachineConfig {name:?} is Ignition {v}: the MCO of {of} parses \
                     MachineConfigs up to Ignition {shown} and degrades the pool on it; render \
                     it with --ignition-version {shown} (docs/commands.md, Ignition spec versions)"
                ));
            }
        }
    }
    if let Some(size) = rendered_size(configs, &rendered)
        && size > MAX_RENDERED
    {
        let who = if minor >= 22 {
            "its render controller refuses a rendered config"
        } else {
            "etcd refuses an object"
        };
        out.push(format!(
            "the pool's rendered config would take about {size} bytes with these MachineConfigs: \
             on {of}, {who} over {MAX_RENDERED} bytes and the pool degrades; render fewer \
             architectures' wrappers (--arch) or fewer rules (docs/openshift-releases.md)"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(name: &str, version: &str, release: Option<&str>) -> Value {
        let mut v = json!({"kind": "MachineConfig", "metadata": {"name": name},
            "spec": {"config": {"ignition": {"version": version}}}});
        if let Some(r) = release {
            v["metadata"]["annotations"] = json!({ RELEASE_ANNOTATION: r });
        }
        v
    }

    #[test]
    fn the_ignition_spec_is_judged_by_the_named_release() {
        let ours = mc("50-worker-gpu-kubelet-labeler-labels", "3.5.0", None);
        for (release, refused) in [
            ("4.14.0", true),
            ("4.18.7", true),
            ("4.19.0", false),
            ("4.22.1", false),
        ] {
            let given = [
                mc("rendered-worker-0a", "3.4.0", Some(release)),
                ours.clone(),
            ];
            let e = errors(&given);
            assert_eq!(!e.is_empty(), refused, "{release}: {e:?}");
            if refused {
                assert!(
                    e[0].contains("is Ignition 3.5.0")
                        && e[0].contains(&format!("OpenShift {release}"))
                        && e[0].contains("--ignition-version 3.4.0"),
                    "{e:?}"
                );
            }
        }
        // No release named: nothing judged.
        assert!(errors(std::slice::from_ref(&ours)).is_empty());
        // 3.4.0 and 3.2.0 are read by every supported release.
        let given = [
            mc("rendered-worker-0a", "3.4.0", Some("4.14.2")),
            mc("a", "3.4.0", None),
            mc("b", "3.2.0", None),
        ];
        assert!(errors(&given).is_empty());
    }

    #[test]
    fn a_rendered_config_past_the_size_limit_is_refused() {
        let big = "x".repeat(MAX_RENDERED);
        let mut ours = mc("50-worker-gpu-kubelet-labeler-wrapper", "3.4.0", None);
        ours["spec"]["config"]["storage"] = json!({"files": [{"path": "/a",
            "contents": {"source": format!("data:,{big}")}}]});
        for (release, who) in [("4.22.0", "render controller"), ("4.20.0", "etcd")] {
            let given = [
                mc("rendered-worker-0a", "3.4.0", Some(release)),
                ours.clone(),
            ];
            let e = errors(&given);
            assert!(e.len() == 1 && e[0].contains(who), "{e:?}");
        }
        // A file the rendered config holds already is counted once.
        let two_thirds = "x".repeat(MAX_RENDERED * 2 / 3);
        let files = json!({"files": [{"path": "/a",
            "contents": {"source": format!("data:,{two_thirds}")}}]});
        let mut rendered = mc("rendered-worker-0a", "3.4.0", Some("4.22.0"));
        rendered["spec"]["config"]["storage"] = files.clone();
        let mut again = mc("50-worker-gpu-kubelet-labeler-wrapper", "3.4.0", None);
        again["spec"]["config"]["storage"] = files;
        assert!(errors(&[rendered.clone(), again.clone()]).is_empty());
        let mut elsewhere = again;
        elsewhere["spec"]["config"]["storage"]["files"][0]["path"] = json!("/b");
        assert_eq!(errors(&[rendered, elsewhere]).len(), 1);
    }
}
