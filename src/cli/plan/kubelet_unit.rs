//! kubelet's own command line and what it reads, which plan does not
//! render (review 23 r23b F8): the MCO's kubelet.service runs
//! `kubenswrapper /usr/bin/kubelet --config=... --kubeconfig=...
//! --node-labels=...${CUSTOM_KUBELET_LABELS}...`, and the wrapper keeps that
//! command (its `--register-with-taints` beside ours). Plan prices our
//! variables; a change of anything else that reaches that command is
//! refused, never shown as "a service restart":
//!
//! - render's own drop-ins of kubelet.service hold only what render writes
//!   (the env drop-ins: `[Service]` and `Environment=` of our variables;
//!   the sync's: its `Wants=`), on either side, changed or not: a policy
//!   entry of render's prices only render's content, and "a node
//!   registering now" is built from our variables alone;
//! - any other kubelet.service drop-in (in any unit directory, `service.d`
//!   too), the unit itself, a file one of its `EnvironmentFile=` names
//!   (the MCO's templates' and the render's), the programs and kubeconfigs
//!   of the MCO's `ExecStart=`: changed between the renders, refused
//!   unless all it sets is our variables (a drop-in of `[Service]`
//!   `Environment=` lines, an environment file of assignments), which
//!   plan judges as the node does (`own_env`: fenced where an
//!   `EnvironmentFile=` sets them).

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

use anyhow::{Result, bail};

use crate::cli::render::merge_inputs::node_path;
use crate::cli::render::sync_units::wants_dropin;
use crate::node::contract::{
    ENV_DROPIN_NAME, LABELS_VAR, NFD_LABELS_VAR, POOL_LABEL_VAR, ROLE_ENV_DROPIN_NAME, ROLE_LAYER,
    RULES_VAR, TAINTS_VAR,
};
use crate::node::unit::{env, env_file, syntax};
use crate::node::wrapper::own_env::{FAULT_VAR, OUR_VARS};

/// Where render writes its drop-ins of kubelet.service.
pub const DROPIN_DIR: &str = "/etc/systemd/system/kubelet.service.d";

/// Files of the MCO's kubelet.service `ExecStart=` (every release of the
/// templates): the programs it runs and the kubeconfigs and credential
/// providers it reads. kubelet's config (`--config`, `--config-dir`) is
/// `unrendered::check_kubelet_config`'s.
const ARGV_FILES: [&str; 7] = [
    "/usr/local/bin/kubenswrapper",
    "/usr/bin/kubelet",
    "/usr/bin/kubensenter",
    "/etc/kubernetes/kubeconfig",
    "/var/lib/kubelet/kubeconfig",
    "/etc/kubernetes/credential-providers",
    "/etc/kubernetes/cloud.conf",
];

/// The most of a file read to judge it (a drop-in or an environment file
/// is small; a larger one is not one plan can price).
const READ_CAP: u64 = 1 << 20;

/// A file that sets our variables only (render's drop-ins, another
/// drop-in of kubelet.service, an environment file) is as small as
/// render's own are (review 41 r41a F3, F4): systemd 252 spent 7 s a
/// boot per MiB of `Environment=` lines in a drop-in, and one value past
/// 128 KiB makes the kernel refuse kubelet's exec (E2BIG). Its bytes, its
/// assignments, each value (the compact rules' bound).
const OUR_VARS_FILE_MAX: usize = 128 * 1024;
const OUR_VARS_ASSIGNMENTS_MAX: usize = 64;
const OUR_VARS_VALUE_MAX: usize = crate::cli::render::node_rules::MAX_COMPACT;
/// Drop-ins and environment files of kubelet.service a side may hold besides
/// render's (each must set our variables only, or is refused).
const OUR_VARS_FILES_MAX: usize = 16;

/// Why a file setting our variables (`set`, of `len` bytes) is past the
/// bounds render's own keep to.
fn over_our_bounds(len: usize, set: &[(String, Vec<u8>)]) -> Option<String> {
    if len > OUR_VARS_FILE_MAX {
        return Some(format!(
            "it holds {len} bytes, more than the {OUR_VARS_FILE_MAX} a file of our variables may"
        ));
    }
    if set.len() > OUR_VARS_ASSIGNMENTS_MAX {
        return Some(format!(
            "it makes {} assignments, more than the {OUR_VARS_ASSIGNMENTS_MAX} a file of our \
             variables may",
            set.len()
        ));
    }
    set.iter()
        .find(|(_, v)| v.len() > OUR_VARS_VALUE_MAX)
        .map(|(k, v)| {
            format!(
                "it sets {k} to {} bytes, more than the {OUR_VARS_VALUE_MAX} render allows",
                v.len()
            )
        })
}

/// One path of a pool's layout that kubelet.service reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// What is written there (`Layout::identities`); None: the node's own
    /// file (an `EnvironmentFile=` no MachineConfig of the render writes).
    id: Option<u64>,
    /// Why plan cannot price what it holds (None: it sets only our
    /// variables, which plan judges).
    unpriced: Option<String>,
    /// One of render's own drop-ins: refused whenever not render's shape.
    ours: bool,
}

pub type Reads = BTreeMap<String, Read>;

/// Our variables a drop-in or environment file of another may set: plan
/// judges them as the node does (the fault hook is the tests' only).
fn our_var(name: &str) -> bool {
    OUR_VARS.contains(&name) && name != FAULT_VAR
}

/// A unit path of kubelet.service: the unit, a drop-in directory of it
/// (`kubelet.service.d`, or `service.d`, which every service reads) or
/// anything in one, or a directory above render's drop-ins (a link there
/// points systemd elsewhere).
pub(super) fn unit_path(path: &str) -> bool {
    let path = node_path(path);
    let path = path.as_str();
    let above = DROPIN_DIR
        .strip_prefix(path)
        .is_some_and(|r| r.starts_with('/'));
    above
        || path.rsplit('/').next() == Some("kubelet.service")
        || path
            .split('/')
            .any(|c| c == "kubelet.service.d" || c == "service.d")
}

/// Why systemd may make kubelet.service's drop-ins or environment from
/// what is at `path` (review 25 r25a F2): a system generator, which PID 1
/// runs at every boot and daemon-reload and which may write any unit's
/// drop-ins into /run/systemd/generator*, in every directory systemd 252
/// reads them from (or a directory above, where a link points it
/// elsewhere); the manager's configuration or an environment generator,
/// which set every unit's environment. Our generator is
/// `render_files`'s: held to what render writes.
fn unit_maker(path: &str) -> Option<&'static str> {
    let path = node_path(path);
    let path = path.as_str();
    if path == crate::node::contract::GENERATOR_PATH {
        return None;
    }
    let roots = crate::cli::render::merge_inputs::SYSTEMD_ROOTS;
    let related = |dir: &str| {
        path == dir
            || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
            || dir.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
    };
    if roots
        .iter()
        .any(|r| related(&format!("{r}/systemd/system-generators")))
    {
        Some(
            "it is a system generator, which systemd runs at every boot and daemon-reload and which may write kubelet.service's drop-ins",
        )
    } else if crate::cli::render::merge_inputs::manager_config_path(path).is_some() {
        Some(
            "it is systemd's manager configuration or an environment generator, which sets every unit's environment",
        )
    } else {
        None
    }
}

/// A path in a `service.d` directory: a drop-in of every service.
fn every_service(path: &str) -> bool {
    node_path(path).split('/').any(|c| c == "service.d")
}

fn argv_file(path: &str) -> bool {
    let path = node_path(path);
    let path = path.as_str();
    ARGV_FILES.iter().any(|f| {
        path == *f
            || path.strip_prefix(f).is_some_and(|r| r.starts_with('/'))
            || f.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
    })
}

/// The file at node path `path` under `root`, if a regular file (a link or
/// directory: why not).
pub(super) fn regular(root: &Path, path: &str) -> std::result::Result<Vec<u8>, String> {
    let at = root.join(path.trim_start_matches('/'));
    let meta = std::fs::symlink_metadata(&at).map_err(|e| format!("cannot be read ({e})"))?;
    if meta.file_type().is_symlink() {
        return Err("it is a link".into());
    }
    if !meta.is_file() {
        return Err("it is a directory or special file".into());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&at)
        .and_then(|f| f.take(READ_CAP + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot be read ({e})"))?;
    if bytes.len() as u64 > READ_CAP {
        return Err(format!("it is over {READ_CAP} bytes"));
    }
    Ok(bytes)
}

/// Whether the unit text `bytes` sets nothing but `allowed` variables by
/// `Environment=` in `[Service]`: Err(the first line that does more).
fn environment_only(
    bytes: &[u8],
    name: &str,
    allowed: &dyn Fn(&str) -> bool,
) -> std::result::Result<(), String> {
    let parsed = syntax::parse(bytes, name);
    if let Some(fatal) = parsed.fatal {
        return Err(format!("systemd stops reading it: {fatal}"));
    }
    let keep = |w: &[u8]| -> std::result::Result<Vec<u8>, String> { Ok(w.to_vec()) };
    let mut all = Vec::new();
    for a in &parsed.assignments {
        let shown = || {
            format!(
                "line {}: {}={} (in [{}])",
                a.line, a.key, a.value, a.section
            )
        };
        if a.section != "Service" || a.key != "Environment" {
            return Err(shown());
        }
        // Review 42 r42a F2: systemd expands a specifier before the bounds
        // below would see it (`%n` is 15 bytes): none but `%%`.
        if a.value.replace("%%", "").contains('%') {
            return Err(format!(
                "{}: a specifier, which systemd expands (`%n` to the unit's name) past what \
                 plan bounds; write a percent sign as %%",
                shown()
            ));
        }
        let (set, warnings) = env::parse_environment_line(&a.value, &keep);
        // An empty `Environment=` drops every variable set before it
        // (the MCO's own); an invalid word, what follows it.
        if set.is_empty() || !warnings.is_empty() || set.iter().any(|(k, _)| !allowed(k)) {
            return Err(shown());
        }
        all.extend(set);
        if all.len() > OUR_VARS_ASSIGNMENTS_MAX {
            break;
        }
    }
    over_our_bounds(bytes.len(), &all).map_or(Ok(()), Err)
}

/// Whether a drop-in holds the sync's `Wants=` and nothing else.
fn wants_only(bytes: &[u8], name: &str) -> std::result::Result<(), String> {
    let render = syntax::parse(wants_dropin().as_bytes(), name).assignments;
    let parsed = syntax::parse(bytes, name);
    if let Some(fatal) = parsed.fatal {
        return Err(format!("systemd stops reading it: {fatal}"));
    }
    let same = |a: &syntax::Assignment, b: &syntax::Assignment| {
        (&a.section, &a.key, &a.value) == (&b.section, &b.key, &b.value)
    };
    for (i, a) in parsed.assignments.iter().enumerate() {
        if !render.get(i).is_some_and(|r| same(r, a)) {
            return Err(format!(
                "line {}: {}={} (in [{}])",
                a.line, a.key, a.value, a.section
            ));
        }
    }
    if parsed.assignments.len() != render.len() {
        return Err("it lacks the Wants= render writes".into());
    }
    Ok(())
}

/// Why a drop-in render writes at `path` (by its name) is not render's:
/// None when it is not one of render's.
fn ours(path: &str, bytes: &[u8]) -> Option<Option<String>> {
    let path = node_path(path);
    let name = path.strip_prefix(DROPIN_DIR)?.strip_prefix('/')?;
    let pool_vars = [
        LABELS_VAR,
        TAINTS_VAR,
        RULES_VAR,
        NFD_LABELS_VAR,
        POOL_LABEL_VAR,
    ];
    let why = match name {
        ENV_DROPIN_NAME => environment_only(bytes, name, &|v| pool_vars.contains(&v)),
        ROLE_ENV_DROPIN_NAME => {
            environment_only(bytes, name, &|v| ROLE_LAYER.iter().any(|(r, _)| *r == v))
        }
        crate::cli::render::sync_units::WANTS_DROPIN_NAME => wants_only(bytes, name),
        _ => return None,
    };
    Some(why.err())
}

/// What `root` (a pool's laid-out tree: `ids` its layout's identities,
/// `env_files` its kubelet.service's `EnvironmentFile=` entries) holds
/// that kubelet.service reads.
pub fn reads(root: &Path, ids: &BTreeMap<String, u64>, env_files: &[(String, bool)]) -> Reads {
    let mut out = Reads::new();
    // Drop-ins and environment files of ours besides render's.
    let mut others = 0;
    for (path, id) in ids {
        let (unpriced, is_ours) = if unit_path(path) {
            let name = path.rsplit('/').next().unwrap_or(path);
            match regular(root, path) {
                Err(why) => (Some(why), ours(path, b"").is_some()),
                Ok(bytes) => match ours(path, &bytes) {
                    Some(why) => (why, true),
                    None if name == "kubelet.service" => {
                        (Some("it is kubelet.service itself".into()), false)
                    }
                    // Review 41 r41a F3: systemd reads `service.d` for
                    // every service it loads, before any starts.
                    None if every_service(path) => (
                        Some(
                            "it is a drop-in of every service (service.d), which systemd \
                             reads for each unit it loads and render never writes; set our \
                             variables in a drop-in of kubelet.service"
                                .into(),
                        ),
                        false,
                    ),
                    None => {
                        others += 1;
                        let why = match others > OUR_VARS_FILES_MAX {
                            true => Some(format!(
                                "it is one more than the {OUR_VARS_FILES_MAX} drop-ins and \
                                 environment files of kubelet.service besides render's that a \
                                 pool may hold"
                            )),
                            false => environment_only(&bytes, name, &our_var).err(),
                        };
                        (why, false)
                    }
                },
            }
        } else if argv_file(path) {
            (Some("kubelet's command runs or reads it".into()), false)
        } else if let Some(why) = unit_maker(path) {
            (Some(why.into()), false)
        } else {
            continue;
        };
        out.insert(
            path.clone(),
            Read {
                id: Some(*id),
                unpriced,
                ours: is_ours,
            },
        );
    }
    // The files its `EnvironmentFile=` lines name, as systemd globs them.
    for (pattern, optional) in env_files {
        let paths = match env::glob(root, pattern) {
            Ok(paths) => paths,
            Err(e) => {
                out.insert(
                    pattern.clone(),
                    Read {
                        id: None,
                        unpriced: Some(format!("which files it names is not known ({e})")),
                        ours: false,
                    },
                );
                continue;
            }
        };
        for p in paths {
            let path = p.to_string_lossy().into_owned();
            let Some(id) = ids.get(&path) else {
                continue;
            };
            others += 1;
            let unpriced = match regular(root, &path) {
                Err(why) => Some(why),
                Ok(_) if others > OUR_VARS_FILES_MAX => Some(format!(
                    "it is one more than the {OUR_VARS_FILES_MAX} drop-ins and environment \
                     files of kubelet.service besides render's that a pool may hold"
                )),
                // Review 43 r43a F1: the OS's identity, which kubelet's
                // os_id label and every reader of it take, is no place for
                // our variables.
                Ok(_) if node_path(&path) == "/etc/os-release" => Some(
                    "it is the OS's identity (ID, VERSION_ID: kubelet's os_id label, the MCO \
                     and every unit read it); set our variables in a drop-in of kubelet.service"
                        .into(),
                ),
                Ok(bytes) => match env_file::parse_env_file(&bytes) {
                    Err(e) => Some(format!("{e}{}", e.consequence(*optional))),
                    Ok(set) => (set.iter().find(|(k, _)| !our_var(k)))
                        .map(|(k, _)| format!("it sets {k}"))
                        .or_else(|| over_our_bounds(bytes.len(), &set)),
                },
            };
            out.insert(
                path,
                Read {
                    id: Some(*id),
                    unpriced: unpriced
                        .map(|w| format!("an EnvironmentFile= of kubelet.service: {w}")),
                    ours: false,
                },
            );
        }
    }
    out
}

/// Refuse, in pool `pool`, one of render's drop-ins that is not render's
/// (on either side), and a change between the renders of anything else
/// kubelet.service reads that sets more than our variables.
pub fn check((from, to): (&str, &str), pool: &str, before: &Reads, after: &Reads) -> Result<()> {
    for (side, reads) in [(from, before), (to, after)] {
        if let Some((path, why)) = reads
            .iter()
            .filter(|(_, r)| r.ours)
            .find_map(|(p, r)| Some((p, r.unpriced.as_ref()?)))
        {
            bail!(
                "{side}: pool {pool}: {path} is render's drop-in of kubelet.service but holds \
                 what render does not write ({why}): kubelet's command line or config would \
                 change, which plan cannot price (render's disruption policy prices the file \
                 as render writes it); re-render it, and put the rest in a drop-in of your own"
            );
        }
    }
    for path in before.keys().chain(after.keys()) {
        let (b, a) = (before.get(path), after.get(path));
        if b.map(|r| r.id) == a.map(|r| r.id) {
            continue;
        }
        let why = a
            .and_then(|r| r.unpriced.as_ref().map(|w| (to, w)))
            .or_else(|| b.and_then(|r| r.unpriced.as_ref().map(|w| (from, w))));
        if let Some((side, why)) = why {
            bail!(
                "pool {pool}: {path} changes from {from} to {to} and, in {side}, {why}: it \
                 changes kubelet's command line or config, which plan cannot price (its \
                 registration, its taints, whether it starts at all); plan the change without \
                 it, and review it by eye"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drop_in_of_our_variables_only_is_priced() {
        let ours = format!("# c\n[Service]\nEnvironment=\"{TAINTS_VAR}=a=b:NoSchedule\"\n");
        assert_eq!(environment_only(ours.as_bytes(), "d", &our_var), Ok(()));
        let percent = format!("[Service]\nEnvironment=\"{LABELS_VAR}=a=b%%\"\n");
        assert_eq!(environment_only(percent.as_bytes(), "d", &our_var), Ok(()));
        // Review 42 r42a F2: a specifier grows at load.
        let n = format!("[Service]\nEnvironment=\"{LABELS_VAR}=a=%n%n\"\n");
        let why = environment_only(n.as_bytes(), "d", &our_var).unwrap_err();
        assert!(why.contains("a specifier"), "{why}");
        for text in [
            "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet --register-with-taints=e=1:NoExecute\n",
            "[Service]\nEnvironment=\"CUSTOM_KUBELET_LABELS=a=b\"\n",
            "[Service]\nEnvironment=\n",
            "[Service]\nEnvironmentFile=/etc/x.env\n",
            "[Unit]\nAfter=x.service\n",
            &format!("[Service]\nEnvironment=\"{FAULT_VAR}=1\"\n"),
        ] {
            assert!(
                environment_only(text.as_bytes(), "d", &our_var).is_err(),
                "{text}"
            );
        }
    }

    #[test]
    fn render_s_drop_ins_are_told_by_their_content() {
        let env = format!("{DROPIN_DIR}/{ENV_DROPIN_NAME}");
        let good = format!("[Service]\nEnvironment=\"{LABELS_VAR}=a=\"\n");
        assert_eq!(ours(&env, good.as_bytes()), Some(None));
        let bad = format!("{good}ExecStart=\nExecStart=/usr/bin/kubelet\n");
        let why = ours(&env, bad.as_bytes()).unwrap().unwrap();
        assert!(why.starts_with("line 3: ExecStart="), "{why}");
        // The role layer's variables belong in the role's drop-in only.
        let role = format!("{DROPIN_DIR}/{ROLE_ENV_DROPIN_NAME}");
        assert!(ours(&role, good.as_bytes()).unwrap().is_some());
        let wants = format!(
            "{DROPIN_DIR}/{}",
            crate::cli::render::sync_units::WANTS_DROPIN_NAME
        );
        assert_eq!(ours(&wants, wants_dropin().as_bytes()), Some(None));
        let more = format!("{}[Service]\nExecStart=\n", wants_dropin());
        assert!(ours(&wants, more.as_bytes()).unwrap().is_some());
        assert_eq!(
            ours("/etc/systemd/system/kubelet.service.d/10-x.conf", b""),
            None
        );
    }

    #[test]
    fn kubelet_s_unit_paths() {
        for (path, is) in [
            ("/etc/systemd/system/kubelet.service", true),
            ("/etc/systemd/system/kubelet.service.d/10-x.conf", true),
            ("/run/systemd/system/kubelet.service.d/10-x.conf", true),
            ("/etc/systemd/system/service.d/10-x.conf", true),
            ("/etc/systemd/system", true),
            ("/etc/systemd/system/crio.service.d/10-x.conf", false),
            ("/etc/systemd/system/kubelet-labeler-sync.service", false),
        ] {
            assert_eq!(unit_path(path), is, "{path}");
        }
        assert!(argv_file("/usr/local/bin/kubenswrapper"));
        assert!(argv_file("/etc/kubernetes/credential-providers/ecr.yaml"));
        assert!(!argv_file("/etc/kubernetes/kubelet-env"));
        // Review 29 r29a F3: CoreOS's /var/usrlocal is /usr/local.
        assert!(argv_file("/var/usrlocal/bin/kubenswrapper"));
        assert!(unit_maker("/var/usrlocal/lib/systemd/system-generators/x").is_some());
        assert!(unit_maker("/var/usrlocal/lib/systemd").is_some());
        for (path, is) in [
            ("/etc/systemd/system-generators/zz-tuning", true),
            ("/usr/lib/systemd/system-generators/x", true),
            ("/lib/systemd/system-generators", true),
            ("/run/systemd", true),
            ("/usr/local/lib/systemd/system-generators/x", true),
            ("/etc/systemd/system-environment-generators/x", true),
            ("/etc/systemd/system.conf.d/10-env.conf", true),
            (crate::node::contract::GENERATOR_PATH, false),
            ("/etc/systemd/system/crio.service.d/10-x.conf", false),
            ("/etc/systemd/user-generators/x", false),
        ] {
            assert_eq!(unit_maker(path).is_some(), is, "{path}");
        }
    }

    /// Review 41 r41a F3, F4: a file of our variables besides render's is
    /// as small as render's; `service.d`, read for every service, is never
    /// one; at most 16 such files a side.
    #[test]
    fn files_of_our_variables_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let at = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        };
        let line = format!("Environment=\"{TAINTS_VAR}=a=b:NoSchedule\"\n");
        let small = format!("[Service]\n{line}");
        let big_value = format!(
            "[Service]\nEnvironment=\"{TAINTS_VAR}={}\"\n",
            "a".repeat(OUR_VARS_VALUE_MAX + 1)
        );
        let many = format!("[Service]\n{}", line.repeat(OUR_VARS_ASSIGNMENTS_MAX + 1));
        let bytes = format!("[Service]\n{line}{}", "#\n".repeat(OUR_VARS_FILE_MAX));
        let mut ids = BTreeMap::new();
        let mut add = |path: &str, text: &str| {
            write(path, text);
            ids.insert(path.to_string(), ids.len() as u64);
        };
        let d = "/etc/systemd/system/kubelet.service.d";
        add(&format!("{d}/10-small.conf"), &small);
        add(&format!("{d}/11-value.conf"), &big_value);
        add(&format!("{d}/12-many.conf"), &many);
        add(&format!("{d}/13-bytes.conf"), &bytes);
        add("/etc/systemd/system/service.d/10-x.conf", &small);
        let got = reads(dir.path(), &ids, &[]);
        let why = |name: &str| {
            got.iter()
                .find(|(p, _)| p.ends_with(name))
                .and_then(|(_, r)| r.unpriced.clone())
                .unwrap_or_default()
        };
        assert_eq!(why("10-small.conf"), "");
        assert!(
            why("11-value.conf").contains("more than the 65536"),
            "{}",
            why("11-value.conf")
        );
        assert!(
            why("12-many.conf").contains("65 assignments"),
            "{}",
            why("12-many.conf")
        );
        assert!(
            why("13-bytes.conf").contains("bytes, more than"),
            "{}",
            why("13-bytes.conf")
        );
        assert!(why("service.d/10-x.conf").contains("every service"));
        // The 17th file of our variables besides render's.
        let mut ids = BTreeMap::new();
        for i in 0..=OUR_VARS_FILES_MAX {
            let path = format!("{d}/{i:02}-n.conf");
            write(&path, &small);
            ids.insert(path, i as u64);
        }
        let got = reads(dir.path(), &ids, &[]);
        let unpriced: Vec<&String> = got
            .iter()
            .filter(|(_, r)| r.unpriced.is_some())
            .map(|(p, _)| p)
            .collect();
        assert_eq!(unpriced, [&format!("{d}/16-n.conf")]);
    }

    /// Review 43 r43a F1: a file kubelet.service reads as `EnvironmentFile=`
    /// that systemd does not load (a byte that is not UTF-8, a NUL) is
    /// refused, whatever else it sets; /etc/os-release is never one of our
    /// variables.
    #[test]
    fn environment_files_systemd_does_not_load_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ours = format!("{TAINTS_VAR}=a=b:NoSchedule\n");
        let files: [(&str, Vec<u8>, bool); 5] = [
            (
                "/etc/kubernetes/kubelet-env",
                ours.clone().into_bytes(),
                true,
            ),
            (
                "/etc/kubernetes/node.env",
                [ours.as_bytes(), b"X=\xff\n"].concat(),
                false,
            ),
            (
                "/etc/kubernetes/kubelet-workaround",
                [ours.as_bytes(), b"\0"].concat(),
                true,
            ),
            ("/etc/os-release", ours.clone().into_bytes(), false),
            (
                "/etc/kubernetes/z.env",
                [ours.as_bytes(), b"X=\xff\n"].concat(),
                true,
            ),
        ];
        let mut ids = BTreeMap::new();
        let mut env_files = Vec::new();
        for (path, bytes, optional) in &files {
            let at = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, bytes).unwrap();
            ids.insert(path.to_string(), ids.len() as u64);
            env_files.push((path.to_string(), *optional));
        }
        let got = reads(dir.path(), &ids, &env_files);
        let why = |path: &str| {
            got.get(path)
                .and_then(|r| r.unpriced.clone())
                .unwrap_or_default()
        };
        assert_eq!(got.len(), files.len());
        assert_eq!(why("/etc/kubernetes/kubelet-env"), "");
        assert!(
            why("/etc/kubernetes/node.env").contains("never starts"),
            "{}",
            why("/etc/kubernetes/node.env")
        );
        assert!(why("/etc/kubernetes/node.env").contains("line 2"));
        assert!(
            why("/etc/kubernetes/kubelet-workaround").contains("NUL"),
            "{}",
            why("/etc/kubernetes/kubelet-workaround")
        );
        assert!(why("/etc/kubernetes/z.env").contains("none of it applies"));
        assert!(why("/etc/os-release").contains("the OS's identity"));
    }
}
