//! `render dropins --remove`: take out of a node tree exactly what render
//! wrote there (and what our generator and wrapper made of it), all or
//! nothing, every path resolved inside the tree as render resolves it.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::arch::Arch;
use super::dropins::{ENV_DROPIN_NAME, GENERATOR_PATH, WRAPPER_DROPIN_NAME, wrapper_path};
use super::sync_units::{SYNC_PATH, SYNC_SERVICE, WANTS_DROPIN_NAME};
use super::tree::in_root;

/// What [`remove_tree`] did and left.
#[derive(Debug, Default)]
pub struct Removed {
    pub removed: Vec<PathBuf>,
    /// Our paths holding something render never writes (a symlink, a
    /// directory): left, each with why.
    pub left: Vec<String>,
    /// What the Node keeps and how to take it off (`cleanup`), when
    /// something was removed.
    pub cleanup: Vec<String>,
}

/// The Node keeps the labels the sync wrote and our annotations: the
/// `kubectl` commands that take them off, for the labels this tree derives
/// now (read before its files go), the pool label left out (taking it
/// off moves the node out of its pool). Without a derivation, how to list
/// what the Node's annotation says the sync owns.
pub fn cleanup(root: &Path, unit: &str) -> Vec<String> {
    use crate::node::sync::reconcile::{self, OWNED_ANNOTATION, POOL_ANNOTATION};
    let opts = crate::node::sync::run::SyncOptions {
        root: root.to_path_buf(),
        unit: unit.to_string(),
        ..Default::default()
    };
    let derived = crate::node::sync::run::derive(&opts).ok();
    let node = derived
        .as_ref()
        .and_then(|d| d.node_name.clone())
        .or_else(|| {
            // kubelet's rotated client certificate names the Node: a link
            // (kubelet's own) followed inside the tree, a regular file read
            // without waiting.
            let pem =
                crate::node::unit::search::contained(root, Path::new(KUBELET_CLIENT_CERT)).ok()?;
            let text = crate::node::nodefs::read_regular(&pem, 1 << 20).ok()??;
            let der = crate::node::sync::cert::pem_block(&text, "CERTIFICATE")?;
            crate::node::sync::cert::node_name(&crate::node::sync::cert::parse_der(&der)?).ok()
        })
        .filter(|n| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        })
        .unwrap_or_else(|| "NODE".into());
    let annotations = [
        OWNED_ANNOTATION,
        POOL_ANNOTATION,
        reconcile::TAINTS_ANNOTATION,
        reconcile::DRIFT_ANNOTATION,
    ]
    .map(|a| format!(" {a}-"))
    .concat();
    let mut out = vec![format!(
        "the Node keeps the labels the sync set and its annotations; to take them off, with \
         cluster access (check first that no workload or pool selects a label):"
    )];
    match derived {
        // The rules' part unknown (their features fenced): the Node's list.
        Some(d) if d.desired.unknown.is_none() => {
            let pool = d.pool_label.as_deref();
            let mut keys: Vec<&str> = d
                .desired
                .labels
                .iter()
                .map(|(k, _)| k.as_str())
                .filter(|k| reconcile::may_own(k) && Some(*k) != pool)
                .collect();
            keys.sort();
            keys.dedup();
            if !keys.is_empty() {
                out.push(format!(
                    "  kubectl label node {node}{}",
                    keys.iter().map(|k| format!(" {k}-")).collect::<String>()
                ));
            }
            out.push(format!("  kubectl annotate node {node}{annotations}"));
            out.push(format!(
                "(the labels this tree derived; the Node's {OWNED_ANNOTATION} lists the ones the \
                 sync owns{})",
                match pool {
                    Some(p) => format!(
                        "; the pool label {p} is left: taking it off moves the node out of its pool"
                    ),
                    None => String::new(),
                }
            ));
        }
        _ => {
            out.push(format!(
                "  kubectl get node {node} -o jsonpath='{{.metadata.annotations.kubelet-labeler\\.io/owned-labels}}'"
            ));
            out.push(format!(
                "  kubectl label node {node} KEY- ...   (each key it lists; `a.{{b,c}}` is a.b and a.c)"
            ));
            out.push(format!("  kubectl annotate node {node}{annotations}"));
        }
    }
    if node == "NODE" {
        out.push("(NODE: the node's name, `kubectl get nodes`)".into());
    }
    out
}

/// Where kubelet keeps its rotated client certificate (both profiles).
const KUBELET_CLIENT_CERT: &str = "/var/lib/kubelet/pki/kubelet-client-current.pem";

/// The node paths of ours for `unit`: the wrappers, the generator, the env
/// drop-in, the sync's units; the static drop-in of an earlier version; the drop-in our
/// generator wrote into /run/systemd/generator, and the wrapper's state in
/// /run/kubelet-labeler (both gone at the next boot anyway).
fn ours(unit: &str) -> Vec<PathBuf> {
    let dropins = |dir: &str| PathBuf::from(dir).join(format!("{unit}.d"));
    let mut paths: Vec<PathBuf> = Arch::ALL
        .iter()
        .map(|a| PathBuf::from(wrapper_path(*a)))
        .collect();
    paths.push(PathBuf::from(GENERATOR_PATH));
    paths.push(dropins("/etc/systemd/system").join(ENV_DROPIN_NAME));
    paths.push(dropins("/etc/systemd/system").join(WRAPPER_DROPIN_NAME));
    paths.push(dropins("/run/systemd/generator").join(WRAPPER_DROPIN_NAME));
    // The day-2 sync's units and the drop-in that pulls them in.
    paths.push(PathBuf::from("/etc/systemd/system").join(SYNC_SERVICE));
    paths.push(PathBuf::from("/etc/systemd/system").join(SYNC_PATH));
    paths.push(dropins("/etc/systemd/system").join(WANTS_DROPIN_NAME));
    paths.push(
        PathBuf::from("/run/kubelet-labeler").join(format!("{}.state", unit.replace('/', "_"))),
    );
    paths
}

/// Remove our files for `unit` from the tree at `root`. Everything is
/// checked first (each file's directory takes a change): a refusal removes
/// nothing. An env drop-in with lines of the user's own is refused unless
/// `force`: removing it would drop them silently.
pub fn remove_tree(root: &Path, unit: &str, force: bool) -> Result<Removed> {
    super::tree::check_unit_name(unit)?;
    let mut out = Removed::default();
    let mut found = Vec::new();
    for node in ours(unit) {
        let path = in_root(root, &node)?;
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            Ok(m) if m.file_type().is_file() => found.push(path),
            Ok(m) => out.left.push(format!(
                "{}: a {}, not a file render writes",
                path.display(),
                if m.file_type().is_symlink() {
                    "symlink"
                } else {
                    "directory or special file"
                }
            )),
        }
    }
    let env_node = PathBuf::from("/etc/systemd/system")
        .join(format!("{unit}.d"))
        .join(ENV_DROPIN_NAME);
    let env = in_root(root, &env_node)?;
    if found.contains(&env) && !force {
        let text = super::input::read_file(&env, super::input::RULES)?;
        let text = String::from_utf8_lossy(&text);
        let foreign = super::dropins::foreign_lines(&text);
        if !foreign.is_empty() {
            bail!(
                "{} holds lines render did not write ({}); removing it would drop them: move \
                 them into a drop-in of your own, or pass --force to remove it anyway; nothing \
                 was removed",
                env.display(),
                foreign.join("; ")
            );
        }
    }
    // Every file's directory through the gate (the chain up to `/`, the
    // directory held open) before the first is removed (review 17 r17c F3).
    let mut removals = Vec::with_capacity(found.len());
    for path in &found {
        removals.push(super::tree::removable(path).map_err(|e| {
            let fix = if format!("{e:#}").contains("not writing there") {
                ""
            } else {
                " (run as root, or on the node)"
            };
            anyhow::anyhow!("{e:#}; nothing was removed{fix}")
        })?);
    }
    if !found.is_empty() {
        out.cleanup = cleanup(root, unit);
    }
    for removal in removals {
        out.removed.push(removal.remove()?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::render::dropins::foreign_lines;
    use crate::node::contract::{LABELS_VAR, POOL_LABEL_VAR};

    /// Issue 33 item 25: the commands name the Node and the labels the
    /// tree derives, never the pool label or a key the sync cannot own.
    #[test]
    fn cleanup_names_the_node_and_its_labels_but_not_the_pool_label() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let sys = root.join("etc/systemd/system");
        fs::create_dir_all(sys.join("kubelet.service.d")).unwrap();
        fs::write(
            sys.join("kubelet.service"),
            "[Service]\nExecStart=/usr/bin/kubelet --hostname-override=RK-1\n",
        )
        .unwrap();
        fs::write(
            sys.join("kubelet.service.d").join(ENV_DROPIN_NAME),
            format!(
                "[Service]\nEnvironment=\"{LABELS_VAR}=example.com/a=1,node.kubernetes.io/pool=,\
                 kubernetes.io/hostname=x\"\nEnvironment=\"{POOL_LABEL_VAR}=node.kubernetes.io/pool\"\n"
            ),
        )
        .unwrap();
        let lines = cleanup(root, "kubelet.service").join("\n");
        assert!(
            lines.contains("\n  kubectl label node rk-1 example.com/a-\n"),
            "{lines}"
        );
        assert!(
            lines.contains("  kubectl annotate node rk-1 kubelet-labeler.io/owned-labels-"),
            "{lines}"
        );
        assert!(
            lines.contains("the pool label node.kubernetes.io/pool is left"),
            "{lines}"
        );
        assert!(!lines.contains("NODE"), "{lines}");
    }

    /// kubelet's client certificate is read inside the tree and never
    /// waited for: a FIFO at its path (no writer) used to hang the removal.
    #[test]
    fn a_fifo_for_the_client_certificate_never_blocks_the_cleanup() {
        let tmp = tempfile::tempdir().unwrap();
        let pem = tmp.path().join(KUBELET_CLIENT_CERT.trim_start_matches('/'));
        fs::create_dir_all(pem.parent().unwrap()).unwrap();
        let made = std::process::Command::new("mkfifo").arg(&pem).status();
        assert!(made.unwrap().success());
        let root = tmp.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(cleanup(&root, "kubelet.service")));
        let lines = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the cleanup waited on a FIFO")
            .join("\n");
        assert!(lines.contains("kubectl label node NODE"), "{lines}");
    }

    #[test]
    fn a_users_lines_are_foreign() {
        let ours = crate::cli::render::dropins::env_dropin(&crate::node::kubelet::Additions {
            labels: vec![("a".into(), "b".into())],
            taints: vec![],
        });
        assert!(foreign_lines(&ours).is_empty(), "{ours}");
        let edited = format!("{ours}Environment=\"KUBELET_EXTRA=1\"\nExecStartPre=/bin/true\n");
        assert_eq!(
            foreign_lines(&edited),
            ["Environment=\"KUBELET_EXTRA=1\"", "ExecStartPre=/bin/true"]
        );
        // A changed value of ours is still ours; another assignment beside
        // it is not.
        assert!(foreign_lines(&format!("Environment=\"{LABELS_VAR}=x=y\"\n")).is_empty());
        assert_eq!(
            foreign_lines(&format!("Environment=\"{LABELS_VAR}=x\" \"B=1\"\n")).len(),
            1
        );
    }
}
