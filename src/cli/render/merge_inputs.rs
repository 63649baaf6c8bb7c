//! A pool's MachineConfigs that the MCO's merge reads otherwise than a
//! layout of them can: refused before `Layout::merge`, naming the fix.
//!
//! - Two MachineConfigs of one name: the cluster holds one object per name
//!   (`kubectl apply -f DIR` keeps the last file's whole, kustomize refuses
//!   the build), while a layout would merge both.
//! - A `worker` (or `master`, `arbiter`) MachineConfig named before the
//!   MCO's own template MachineConfigs of that role (`00-worker`,
//!   `01-worker-container-runtime`, `01-worker-kubelet`) that writes what
//!   they write and kubelet reads: kubelet.service, its drop-ins, a file its
//!   `EnvironmentFile=` lines read. The templates are in no render (plan
//!   stands in for them, a rendered config holds them merged), and in the
//!   cluster they merge after such a config and win.
//! - A file, directory or link under /run or /tmp: tmpfs on the node, so
//!   what Ignition writes there is covered at the switch to the real root,
//!   and what the daemon writes is gone at the reboot it then makes.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::merge_order::{mc_name, rendered_pool, role};

const UNIT: &str = "kubelet.service";
const UNIT_PATH: &str = "/etc/systemd/system/kubelet.service";
const KUBELET_CONF: &str = "/etc/kubernetes/kubelet.conf";
/// Read by kubelet.service on some platforms only (the MCO's
/// `templates/common/{aws,openstack}/units/kubelet-node-env.dropin.yaml`).
const NODE_ENV: &str = "/etc/kubernetes/node.env";

/// Refuse what the MCO merges otherwise than `Layout::merge` lays out.
pub fn check(configs: &[Value]) -> Result<()> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for mc in configs {
        let name = mc_name(mc);
        let count = seen.entry(name).or_default();
        *count += 1;
        if *count == 2 {
            bail!(
                "MachineConfig {name:?} is given twice: the cluster holds one object per name \
                 (`oc apply -f` keeps the last one applied, whole; kustomize refuses the \
                 build), while plan and explain would merge both; give it once"
            );
        }
    }
    // A custom pool's rendered config holds its own configs merged after
    // every worker one: a worker config given beside it goes under them,
    // which a layout over the rendered config cannot do where both write.
    let custom_rendered = configs.iter().filter(|mc| {
        role(mc).ok().flatten().is_none() && rendered_pool(mc).is_some_and(|p| p != "worker")
    });
    // Beside a rendered config, kubelet's config: the MCO generates it for
    // every pool (`97-`, `98-`, `99-<pool>-generated-kubelet`), after
    // whatever sorts before those.
    let rendered_for = configs
        .iter()
        .find(|mc| role(mc).ok().flatten().is_none() && rendered_pool(mc).is_some())
        .and_then(rendered_pool);
    if let Some(pool) = rendered_for {
        for mc in configs {
            if role(mc)?.is_none() && rendered_pool(mc).is_some() {
                continue;
            }
            let role = role(mc)?.unwrap_or(pool);
            let generated = format!("99-{role}-generated-kubelet");
            if written(mc).contains(KUBELET_CONF) && mc_name(mc) <= generated.as_str() {
                bail!(
                    "MachineConfig {:?} writes {KUBELET_CONF}, which the MCO generates for pool \
                     {role} (97-, 98- and {generated}, merged after it): the cluster serves \
                     theirs; set kubelet's config with a KubeletConfig, or name it after \
                     {generated}",
                    mc_name(mc)
                );
            }
        }
    }
    for rendered in custom_rendered {
        let theirs = written(rendered);
        for mc in configs {
            if role(mc)? != Some("worker") {
                continue;
            }
            if let Some(path) = written(mc).intersection(&theirs).next() {
                bail!(
                    "MachineConfig {:?} (role worker) writes {path}, which the rendered config \
                     {:?} holds: the MCO merges a worker MachineConfig before the pool's own, \
                     so theirs may win in the cluster; give the pool's MachineConfigs instead \
                     of its rendered config",
                    mc_name(mc),
                    mc_name(rendered)
                );
            }
        }
    }
    for mc in configs {
        if let Some(path) = non_persistent(mc) {
            bail!(
                "MachineConfig {:?} writes {path}: Ignition writes it before the switch to the \
                 node's root, whose /run and /tmp are mounted over it, and the MCO's daemon into \
                 the running system, gone at the next boot: kubelet never reads it at \
                 registration, while plan and explain would lay it out; write it under /etc",
                mc_name(mc)
            );
        }
        if let Some(what) = manager_environment(mc)? {
            bail!(
                "MachineConfig {:?} {what}: systemd hands the manager's environment to every \
                 generator and service, kubelet-labeler's generator and wrapper among them \
                 (without /usr/bin in PATH the generator writes no drop-in, and kubelet starts \
                 without the pool's labels and taints), and plan and explain do not lay it \
                 out; leave the manager's environment out of the change",
                mc_name(mc)
            );
        }
        if let Some(path) = other_name_of_usr_local(mc) {
            bail!(
                "MachineConfig {:?} writes {path}: on CoreOS /usr/local is /var/usrlocal, so \
                 systemd reads it as a unit, drop-in, generator or its own configuration under \
                 /usr/local/lib/systemd, where plan and explain do not lay it out; write it \
                 under /etc/systemd instead",
                mc_name(mc)
            );
        }
        if let Some((path, why)) = mco_owned(mc) {
            bail!(
                "MachineConfig {:?} writes {path}, {why}: what it holds there is not what the \
                 node reads when kubelet starts; leave {path} to the MCO",
                mc_name(mc)
            );
        }
        if let Some(what) = shadowed_by_templates(mc)? {
            let name = mc_name(mc);
            let role = role(mc)?.unwrap_or_default();
            bail!(
                "MachineConfig {name:?} (role {role}) writes {what}, which the MCO's own \
                 MachineConfigs of role {role} (00-{role}, 01-{role}-kubelet) write too; they \
                 sort after {name:?} and win in the cluster, but are in no render here: name \
                 it to sort after 01-{role}-kubelet (as 50-{role}-...)"
            );
        }
    }
    Ok(())
}

/// A path of `mc` that the MCO's own configs or scripts own, and why what
/// another config writes there is not what kubelet reads; none for the
/// MCO's own MachineConfigs (given to explain from a cluster).
/// OpenShift's kubelet launcher, where a MachineConfig can write it (by
/// [`node_path`]'s spelling: /var/usrlocal/bin/kubenswrapper too).
const LAUNCHERS: [&str; 2] = ["/usr/local/bin/kubenswrapper", "/usr/local/bin/kubensenter"];

/// CoreOS's fixed links at the root (ostree's layout, as RHCOS and FCOS
/// ship it): each link's name, and the directory under /var it points to.
const COREOS_LINKS: [(&str, &str); 6] = [
    ("/usr/local", "/var/usrlocal"),
    ("/home", "/var/home"),
    ("/opt", "/var/opt"),
    ("/srv", "/var/srv"),
    ("/mnt", "/var/mnt"),
    ("/root", "/var/roothome"),
];

/// Whether node path `path` is `dir` or in it (both clean, absolute).
pub fn at_or_in(path: &str, dir: &str) -> bool {
    path == dir || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

/// Whether node path `path` is a directory above `dir`, whose link or
/// replacement moves `dir` (never `/`).
pub fn above(path: &str, dir: &str) -> bool {
    path != "/" && dir.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
}

/// The one spelling of node path `path` that render and plan compare:
/// clean (no `//`, `.`, trailing `/`; `..` taken by name, which Ignition
/// never meets: it refuses a path that is not clean, see
/// `storage::check_file_path`), and through CoreOS's fixed links by the
/// link's name (/var/usrlocal/bin/x is /usr/local/bin/x, /var/roothome is
/// /root): two storage paths write one node file when their spellings
/// are equal.
pub fn node_path(path: &str) -> String {
    let p = super::unpack::clean_path(path);
    for (name, target) in COREOS_LINKS {
        if let Some(rest) = p.strip_prefix(target)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return format!("{name}{rest}");
        }
    }
    p
}

fn mco_owned(mc: &Value) -> Option<(String, &'static str)> {
    let name = mc_name(mc);
    let role = role(mc).ok().flatten();
    // A rendered config is the MCO's merge (one without labels, a base
    // given as a file of its own, stands for one): its files are its own.
    let unlabelled = mc.pointer("/metadata/labels").is_none_or(Value::is_null);
    if role.is_none() && (unlabelled || rendered_pool(mc).is_some()) {
        return None;
    }
    let role = role.unwrap_or_default();
    if [format!("00-{role}"), format!("01-{role}-kubelet")].contains(&name.to_string()) {
        return None;
    }
    storage_paths(mc).find_map(|p| {
        let why = match p {
            "/etc/node-sizing.env" => {
                "which the MCO's node sizing (kubelet-auto-node-size.service) writes anew \
                     before every kubelet start"
            }
            "/etc/mco/proxy.env" => {
                "the MCO's own (00-<role>, from the cluster's Proxy), read only on a cluster \
                     with a proxy"
            }
            NODE_ENV => {
                "read by kubelet on AWS and OpenStack only (the MCO's 20-node-env.conf \
                     drop-in of those platforms, where its nodename service writes the node's \
                     name into it before kubelet starts); on any other platform nothing \
                     reads it, and plan and explain cannot tell the cluster's platform"
            }
            UNIT_PATH => {
                "where the MCO writes kubelet.service as a unit (01-<role>-kubelet): a file \
                     there conflicts, and the Machine Config Server serves the pool nothing"
            }
            p if LAUNCHERS.contains(&node_path(p).as_str()) => {
                "the launcher kubelet.service starts kubelet through, which the wrapper \
                     trusts to hand kubelet its --node-labels and --register-with-taints \
                     unchanged: another program there may drop them"
            }
            _ => return None,
        };
        Some((p.to_string(), why))
    })
}

/// Where `mc` sets the systemd manager's environment (what every
/// generator and service starts with): `DefaultEnvironment=` or
/// `ManagerEnvironment=` of another variable than the MCO's own `GODEBUG`
/// in `/etc/systemd/system.conf` or `system.conf.d/`, a link there, an
/// environment generator, or a `systemd.setenv=` kernel argument.
fn manager_environment(mc: &Value) -> Result<Option<String>> {
    let args = [
        "/spec/kernelArguments",
        "/spec/config/kernelArguments/shouldExist",
    ];
    for arg in args
        .iter()
        .filter_map(|p| mc.pointer(p))
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(Value::as_str)
    {
        // systemd reads the kernel command line dropping every quote of a
        // word (`systemd.set"env"=` is `systemd.setenv=`).
        if arg.split_whitespace().any(|a| {
            a.chars()
                .filter(|&c| c != '"' && c != '\'')
                .collect::<String>()
                .starts_with("systemd.setenv=")
        }) {
            return Ok(Some(format!("sets the kernel argument {arg:?}")));
        }
    }
    let manager_dir = manager_config_path;
    for list in ["files", "links"] {
        let entries = mc
            .pointer(&format!("/spec/config/storage/{list}"))
            .and_then(Value::as_array);
        for e in entries.into_iter().flatten() {
            let Some(path) = e.get("path").and_then(Value::as_str) else {
                continue;
            };
            let Some(generators) = manager_dir(path) else {
                continue;
            };
            if generators || list == "links" {
                return Ok(Some(format!("writes {path}")));
            }
            let source = e.pointer("/contents/source").and_then(Value::as_str);
            let compression = e.pointer("/contents/compression").and_then(Value::as_str);
            let text = match source {
                None => continue,
                Some(s) => super::unpack::decode_data_url(s, compression)
                    .with_context(|| format!("MachineConfig {:?}: {path}", mc_name(mc)))?,
            };
            // Read as systemd's config parser reads system.conf.d: lines end at
            // `\n`, `\r` or NUL, an odd run of backslashes continues a line,
            // comment lines are dropped. Every section counts (safe side).
            let parsed = crate::node::unit::syntax::parse(&text, path);
            for a in &parsed.assignments {
                if !["DefaultEnvironment", "ManagerEnvironment"].contains(&a.key.as_str()) {
                    continue;
                }
                let others = a
                    .value
                    .split_whitespace()
                    .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
                    .any(|w| w.split('=').next() != Some("GODEBUG"));
                if others {
                    let line = format!("{}={}", a.key, a.value);
                    return Ok(Some(format!("sets {line:?} in {path}")));
                }
            }
        }
    }
    Ok(None)
}

/// Where systemd 252 reads its configuration, units and generators from,
/// each under `systemd/`, by [`node_path`]'s spelling (CoreOS's
/// /var/usrlocal/lib is /usr/local/lib).
pub const SYSTEMD_ROOTS: [&str; 5] = ["/etc", "/run", "/usr/local/lib", "/usr/lib", "/lib"];

/// Whether a node path is the systemd manager's configuration (`Some(false)`:
/// `system.conf` or a `system.conf.d` drop-in) or an environment generator
/// (`Some(true)`), in any directory systemd 252 reads them from.
pub fn manager_config_path(path: &str) -> Option<bool> {
    let p = node_path(path);
    let under = |dir: &str| p == dir || p.starts_with(&format!("{dir}/"));
    let roots = SYSTEMD_ROOTS;
    let config = roots.iter().any(|r| {
        p == format!("{r}/systemd/system.conf") || under(&format!("{r}/systemd/system.conf.d"))
    });
    let generators = roots
        .iter()
        .any(|r| under(&format!("{r}/systemd/system-environment-generators")));
    config.then_some(false).or(generators.then_some(true))
}

/// The paths of `mc`'s storage entries: files, links and directories.
fn storage_paths(mc: &Value) -> impl Iterator<Item = &str> {
    ["files", "links", "directories"]
        .into_iter()
        .filter_map(|k| mc.pointer(&format!("/spec/config/storage/{k}")))
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|e| e.get("path").and_then(Value::as_str))
}

/// The node paths `mc` writes: storage entries, units and drop-ins.
fn written(mc: &Value) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = storage_paths(mc).map(str::to_string).collect();
    let units = mc
        .pointer("/spec/config/systemd/units")
        .and_then(Value::as_array);
    for u in units.into_iter().flatten() {
        let Some(name) = u.get("name").and_then(Value::as_str) else {
            continue;
        };
        out.insert(format!("/etc/systemd/system/{name}"));
        let dropins = u.get("dropins").and_then(Value::as_array);
        for d in dropins.into_iter().flatten() {
            if let Some(d) = d.get("name").and_then(Value::as_str) {
                out.insert(format!("/etc/systemd/system/{name}.d/{d}"));
            }
        }
    }
    out
}

/// A storage entry of `mc` at or above /usr/local/lib/systemd, or under
/// it, by another name than its own ([`node_path`]: /var/usrlocal/lib/systemd
/// is CoreOS's /usr/local/lib/systemd, which systemd reads).
fn other_name_of_usr_local(mc: &Value) -> Option<String> {
    storage_paths(mc).map(super::unpack::clean_path).find(|p| {
        let n = node_path(p);
        n != *p
            && (n == "/usr/local"
                || n == "/usr/local/lib"
                || n.starts_with("/usr/local/lib/systemd"))
    })
}

/// A storage entry of `mc` under /run or /tmp (tmpfs on the node).
fn non_persistent(mc: &Value) -> Option<String> {
    storage_paths(mc)
        .find(|p| {
            ["/run", "/tmp", "/var/run", "/dev", "/proc", "/sys"]
                .iter()
                .any(|d| {
                    p.strip_prefix(d)
                        .is_some_and(|r| r.is_empty() || r.starts_with('/'))
                })
        })
        .map(str::to_string)
}

/// What `mc` writes of the MCO templates' kubelet files, if it is named
/// before them in their role.
fn shadowed_by_templates(mc: &Value) -> Result<Option<String>> {
    let Some(role) = role(mc)? else {
        return Ok(None);
    };
    // The templates' own MachineConfigs (given to explain from a cluster)
    // are what they stand for.
    let templates = [
        format!("00-{role}"),
        format!("01-{role}-container-runtime"),
        format!("01-{role}-kubelet"),
    ];
    if !matches!(role, "worker" | "master" | "arbiter")
        || mc_name(mc) >= templates[2].as_str()
        || templates.iter().any(|t| t == mc_name(mc))
    {
        return Ok(None);
    }
    let read = crate::cli::plan::cluster_unit::env_files();
    let files = storage_paths(mc);
    for path in files {
        let kubelet_unit = path == UNIT_PATH || path.starts_with(&format!("{UNIT_PATH}.d/"));
        if kubelet_unit || read.contains(&path) {
            return Ok(Some(path.to_string()));
        }
    }
    let units = mc
        .pointer("/spec/config/systemd/units")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for unit in units {
        if unit.get("name").and_then(Value::as_str) == Some(UNIT) {
            return Ok(Some(format!("the unit {UNIT}")));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(name: &str, role: Option<&str>, config: Value) -> Value {
        let labels = match role {
            Some(r) => json!({ "machineconfiguration.openshift.io/role": r }),
            None => json!({ "example.com/team": "gpu" }),
        };
        json!({ "kind": "MachineConfig",
                "metadata": { "name": name, "labels": labels },
                "spec": { "config": config } })
    }

    fn file(path: &str) -> Value {
        json!({ "ignition": { "version": "3.4.0" },
                "storage": { "files": [ { "path": path } ] } })
    }

    /// Review 29 r29a F3: one spelling through CoreOS's fixed links.
    #[test]
    fn node_paths_are_spelt_one_way() {
        for (path, one) in [
            ("/var/usrlocal/bin/x", "/usr/local/bin/x"),
            ("/usr/local/bin/x", "/usr/local/bin/x"),
            ("/var/usrlocal", "/usr/local"),
            ("/var/home/core/x", "/home/core/x"),
            ("/var/opt/x", "/opt/x"),
            ("/var/srv/x", "/srv/x"),
            ("/var/mnt/x", "/mnt/x"),
            ("/var/roothome/.bashrc", "/root/.bashrc"),
            ("/var//usrlocal/./bin/x/", "/usr/local/bin/x"),
            // Not a link's target.
            ("/var/usrlocalx/bin", "/var/usrlocalx/bin"),
            ("/var/lib/kubelet", "/var/lib/kubelet"),
            ("/usr/localx", "/usr/localx"),
            ("/etc/systemd/system/x", "/etc/systemd/system/x"),
        ] {
            assert_eq!(node_path(path), one, "{path}");
        }
        // The launchers and systemd's directories in either spelling.
        let writes = |p: &str| mc("50-x", Some("worker"), file(p));
        assert!(mco_owned(&writes("/var/usrlocal/bin/kubensenter")).is_some());
        assert_eq!(
            manager_config_path("/var/usrlocal/lib/systemd/system.conf.d/x.conf"),
            Some(false)
        );
        assert_eq!(
            other_name_of_usr_local(&writes("/var/usrlocal/lib/systemd/system/x.service")),
            Some("/var/usrlocal/lib/systemd/system/x.service".into())
        );
        assert_eq!(
            other_name_of_usr_local(&writes("/usr/local/lib/systemd/system/x")),
            None
        );
        assert_eq!(
            other_name_of_usr_local(&writes("/var/usrlocal/bin/x")),
            None
        );
    }

    #[test]
    fn a_name_given_twice_is_refused() {
        let a = mc("50-a", Some("worker"), json!({}));
        let err = check(&[a.clone(), a]).unwrap_err().to_string();
        assert!(err.contains("\"50-a\" is given twice"), "{err}");
    }

    /// Before the templates in their role, and only for what kubelet reads
    /// of theirs; after them, or of a custom role (merged after all of
    /// worker's), a config wins in the cluster as in the layout.
    #[test]
    fn a_config_named_before_the_templates_may_not_write_their_kubelet_files() {
        let unit = json!({ "systemd": { "units": [ { "name": "kubelet.service" } ] } });
        for (m, refused) in [
            (mc("00-a", Some("worker"), unit.clone()), true),
            (
                mc("01-worker-kubelet-", Some("worker"), unit.clone()),
                false,
            ),
            (
                mc("00-a", Some("master"), file("/etc/kubernetes/kubelet-env")),
                true,
            ),
            (
                mc("00-a", Some("worker"), file("/etc/kubernetes/node.env")),
                true,
            ),
            (
                mc(
                    "01-worker-a",
                    Some("worker"),
                    file("/etc/systemd/system/kubelet.service.d/20-x.conf"),
                ),
                true,
            ),
            (mc("00-a", Some("worker"), file("/etc/other.env")), false),
            (mc("00-a", Some("worker-gpu"), unit.clone()), false),
            (mc("00-a", None, unit.clone()), false),
            (
                mc("50-a", Some("worker"), file("/etc/kubernetes/kubelet-env")),
                false,
            ),
        ] {
            assert_eq!(check(std::slice::from_ref(&m)).is_err(), refused, "{m}");
        }
    }

    /// The MCO merges worker's configs by name, then all others by name, a
    /// config with labels but no role among them; only a rendered config
    /// (no labels, what the pool merged) is the base.
    #[test]
    fn a_config_without_a_role_merges_with_the_pool_s_own() {
        let configs = [
            mc("zz-no-role", None, json!({})),
            mc("50-worker-gpu-ours", Some("worker-gpu"), json!({})),
            mc("99-worker-x", Some("worker"), json!({})),
            json!({ "kind": "MachineConfig", "metadata": { "name": "rendered-worker-gpu-0a1b" } }),
        ];
        let order: Vec<&str> = super::super::layout::merge_order(&configs)
            .unwrap()
            .into_iter()
            .map(|i| mc_name(&configs[i]))
            .collect();
        assert_eq!(
            order,
            [
                "rendered-worker-gpu-0a1b",
                "99-worker-x",
                "50-worker-gpu-ours",
                "zz-no-role"
            ]
        );
    }

    /// Ignition (`writeSystemdUnit`) and the MCO's daemon (`writeDropins`)
    /// write no unit or drop-in without contents: an empty one laid out
    /// masked a drop-in of the same name in another directory, which the
    /// node reads.
    #[test]
    fn a_unit_or_drop_in_without_contents_is_not_written() {
        let config = json!({ "ignition": { "version": "3.4.0" }, "systemd": { "units": [
            { "name": "kubelet.service", "dropins": [ { "name": "95-untaint.conf" } ] },
            { "name": "x.service", "contents": "",
              "dropins": [ { "name": "a.conf", "contents": "" },
                           { "name": "b.conf", "contents": "[Unit]\n" } ] }
        ] } });
        let layout =
            super::super::layout::Layout::merge(vec![mc("60-a", Some("worker"), config)]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        layout.write(dir.path()).unwrap();
        let units = dir.path().join("etc/systemd/system");
        assert!(!units.join("kubelet.service.d/95-untaint.conf").exists());
        assert!(!units.join("x.service").exists());
        assert!(!units.join("x.service.d/a.conf").exists());
        assert!(units.join("x.service.d/b.conf").exists());
    }

    #[test]
    fn a_path_under_run_or_tmp_is_refused() {
        for (path, refused) in [
            ("/run/systemd/system/kubelet.service.d/95-x.conf", true),
            ("/tmp/x", true),
            ("/var/run/x", true),
            ("/run", true),
            ("/runner/x", false),
            ("/etc/x", false),
        ] {
            let m = mc("60-a", Some("worker-gpu"), file(path));
            assert_eq!(check(&[m]).is_err(), refused, "{path}");
        }
    }

    /// A worker config beside a custom pool's rendered config, where both
    /// write: refused (the pool's own win in the cluster); beside worker's
    /// rendered config, or where only it writes, laid over it.
    #[test]
    fn a_worker_config_beside_a_custom_pool_s_rendered_config() {
        let env = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";
        let rendered = |pool: &str| {
            let mut r = mc(&format!("rendered-{pool}-0a1b"), None, file(env));
            r["metadata"].as_object_mut().unwrap().remove("labels");
            r
        };
        let worker = mc("60-a-env", Some("worker"), file(env));
        let other = mc("00-a-env", Some("worker"), file("/etc/other"));
        assert!(check(&[rendered("worker-gpu"), worker.clone()]).is_err());
        assert!(check(&[rendered("worker-gpu"), other]).is_ok());
        assert!(check(&[rendered("worker"), worker]).is_ok());
    }

    /// Beside a rendered config, kubelet.conf is the MCO's generated
    /// configs' unless a config is named after them.
    #[test]
    fn kubelet_s_config_beside_a_rendered_config() {
        let mut rendered = mc("rendered-worker-gpu-0a1b", None, file("/etc/x"));
        rendered["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("labels");
        let conf = file("/etc/kubernetes/kubelet.conf");
        let early = mc("60-worker-gpu-conf", Some("worker-gpu"), conf.clone());
        let late = mc("99-worker-gpu-zz", Some("worker-gpu"), conf.clone());
        assert!(check(&[rendered.clone(), early.clone()]).is_err());
        assert!(check(&[rendered, late]).is_ok());
        assert!(check(&[early]).is_ok());
    }

    /// A config with labels is never a rendered one, whatever its name.
    #[test]
    fn a_labelled_config_named_rendered_merges_by_its_labels() {
        let configs = [
            mc("rendered-worker-gpu-0", None, json!({})),
            mc("50-worker-gpu-ours", Some("worker-gpu"), json!({})),
        ];
        let order: Vec<&str> = super::super::layout::merge_order(&configs)
            .unwrap()
            .into_iter()
            .map(|i| mc_name(&configs[i]))
            .collect();
        assert_eq!(order, ["50-worker-gpu-ours", "rendered-worker-gpu-0"]);
    }

    /// Paths the MCO owns are refused from another config (its own, given
    /// from a cluster, write them); links count as files.
    #[test]
    fn paths_the_mco_owns() {
        for (path, refused) in [
            ("/etc/node-sizing.env", true),
            ("/etc/mco/proxy.env", true),
            ("/etc/kubernetes/node.env", true),
            ("/etc/systemd/system/kubelet.service", true),
            ("/dev/shm/x.env", true),
            ("/sys/x", true),
            ("/etc/kubernetes/x.env", false),
            // Review 16 r16b F5, F1: the launcher, and /usr/local's own path.
            ("/usr/local/bin/kubenswrapper", true),
            ("/var/usrlocal/bin/kubenswrapper", true),
            (
                "/var/usrlocal/lib/systemd/system/kubelet.service.d/95-x.conf",
                true,
            ),
            ("/var/usrlocal/bin/other-tool", false),
        ] {
            let m = mc("60-a", Some("worker-gpu"), file(path));
            assert_eq!(check(&[m]).is_err(), refused, "{path}");
        }
        let own = mc("00-worker", Some("worker"), file("/etc/mco/proxy.env"));
        assert!(check(&[own]).is_ok());
        let mut rendered = mc("rendered-worker-0a1b", None, file("/etc/node-sizing.env"));
        rendered["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("labels");
        assert!(check(&[rendered]).is_ok());
        let link = json!({ "ignition": { "version": "3.4.0" },
                           "storage": { "links": [ { "path": "/etc/kubernetes/node.env",
                                                     "target": "/etc/x" } ] } });
        assert!(check(&[mc("00-a", Some("worker"), link)]).is_err());
    }

    /// Review 13 r13b F8: the manager's environment reaches the generator
    /// and the wrapper; the MCO's own GODEBUG drop-in is left alone.
    #[test]
    fn the_managers_environment_is_refused() {
        let conf = |path: &str, text: &str| {
            let url = format!(
                "data:,{}",
                text.bytes()
                    .map(|b| format!("%{b:02X}"))
                    .collect::<String>()
            );
            json!({ "ignition": { "version": "3.4.0" },
                    "storage": { "files": [ { "path": path, "contents": { "source": url } } ] } })
        };
        for (path, text) in [
            (
                "/etc/systemd/system.conf.d/10-path.conf",
                "[Manager]\nDefaultEnvironment=\"PATH=/usr/sbin\"\n",
            ),
            (
                "/etc/systemd/system.conf",
                "[Manager]\nManagerEnvironment=A=1\n",
            ),
            (
                "/etc/systemd//system.conf.d/./x.conf",
                "[Manager]\nDefaultEnvironment=GODEBUG=1 PATH=/x\n",
            ),
            (
                "/etc/systemd/system-environment-generators/x",
                "#!/bin/sh\n",
            ),
            // Review 16 r16b F1: CoreOS's /usr/local is /var/usrlocal.
            (
                "/var/usrlocal/lib/systemd/system.conf.d/10-env.conf",
                "[Manager]\nDefaultEnvironment=SHELLOPTS=noexec\n",
            ),
            // Review 15 r15c F5: every directory systemd reads them from.
            (
                "/usr/local/lib/systemd/system.conf.d/10-env.conf",
                "[Manager]\nDefaultEnvironment=SHELLOPTS=noexec\n",
            ),
            (
                "/usr/local/lib/systemd/system-environment-generators/x",
                "#!/bin/sh\n",
            ),
            // Review 14 r14b F6: a continued line.
            (
                "/etc/systemd/system.conf.d/10-default-env-godebug.conf",
                "[Manager]\nDefaultEnvironment=GODEBUG=x509ignoreCN=0 \\\nSHELLOPTS=noexec\n",
            ),
            // Review 15 (r15b F1, r15c F5): a lone CR or a NUL ends a line for
            // systemd; an even run of backslashes does not continue one.
            (
                "/etc/systemd/system.conf.d/10-env.conf",
                "[Manager]\rDefaultEnvironment=SHELLOPTS=noexec\n",
            ),
            (
                "/etc/systemd/system.conf.d/10-env.conf",
                "[Manager]\n\0DefaultEnvironment=SHELLOPTS=noexec\n",
            ),
            (
                "/etc/systemd/system.conf.d/10-env.conf",
                "[Manager]\nDefaultTimeoutStopSec=10s\\\\\nDefaultEnvironment=SHELLOPTS=noexec\n",
            ),
        ] {
            let err = check(&[mc("60-worker-x", Some("worker"), conf(path, text))]).unwrap_err();
            assert!(
                err.to_string().contains("manager's environment"),
                "{path}: {err}"
            );
        }
        let godebug = conf(
            "/etc/systemd/system.conf.d/10-default-env-godebug.conf",
            "[Manager]\nDefaultEnvironment=GODEBUG=x509ignoreCN=0,madvdontneed=1\n",
        );
        check(&[mc("00-worker", Some("worker"), godebug)]).unwrap();
        let timeout = conf(
            "/etc/systemd/system.conf.d/10-t.conf",
            "[Manager]\nDefaultTimeoutStopSec=10s\n",
        );
        check(&[mc("60-worker-t", Some("worker"), timeout)]).unwrap();
        let karg = json!({ "kind": "MachineConfig",
            "metadata": { "name": "60-worker-k", "labels": { "machineconfiguration.openshift.io/role": "worker" } },
            "spec": { "kernelArguments": ["nosmt", "systemd.setenv=PATH=/usr/sbin"] } });
        assert!(check(&[karg]).is_err());
        // Review 15 r15b F4: systemd drops the quotes of a word.
        for arg in [
            "systemd.set\"env\"=SHELLOPTS=noexec",
            "\"systemd.setenv=SHELLOPTS=noexec\"",
            "systemd.'setenv'=SHELLOPTS=noexec",
        ] {
            let karg = json!({ "kind": "MachineConfig",
                "metadata": { "name": "60-worker-k", "labels": { "machineconfiguration.openshift.io/role": "worker" } },
                "spec": { "kernelArguments": [arg] } });
            assert!(check(&[karg]).is_err(), "{arg}");
        }
    }
}
