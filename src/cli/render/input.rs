//! The files (and stdin) the CLI reads, each capped at a size far above any
//! real one: a wrong path (`/dev/zero`, a disk image, a log) is refused
//! naming the file and the limit, after reading at most one byte past it.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// The most one flag reads from one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// The flag, for messages.
    pub flag: &'static str,
    pub bytes: u64,
}

const MIB: u64 = 1 << 20;

/// A CA bundle: the whole Mozilla store is about 0.2 MiB.
pub const CA_FILE: Limit = Limit {
    flag: "--ca-file",
    bytes: MIB,
};
/// NodeFeatureRule YAML: real ones are a few KiB.
pub const RULES: Limit = Limit {
    flag: "--rules",
    bytes: 16 * MIB,
};
/// MachineConfig YAML: one object is at most 1.5 MiB (etcd's request
/// limit); a file may hold a cluster's `oc get mc -o yaml`.
pub const MACHINECONFIG: Limit = Limit {
    flag: "--machineconfig",
    bytes: 64 * MIB,
};
/// `explain --facts`: a NodeFeature is a few hundred KiB at most.
pub const FACTS: Limit = Limit {
    flag: "--facts",
    bytes: 16 * MIB,
};
/// An Ignition config to embed: the live ISO's embed area is 256 KiB
/// compressed.
pub const IGNITION: Limit = Limit {
    flag: "iso embed -i",
    bytes: 16 * MIB,
};
/// `iso fleet --pool NAME=SOURCE`: a pool's Secret, MachineConfigs or
/// pointer config, as `--machineconfig`.
pub const FLEET_POOL: Limit = Limit {
    flag: "iso fleet --pool",
    bytes: 64 * MIB,
};
/// `iso fleet --cluster-pools`: the cluster's MachineConfigPools.
pub const FLEET_CLUSTER_POOLS: Limit = Limit {
    flag: "iso fleet --cluster-pools",
    bytes: 16 * MIB,
};
/// A static selector is about 0.2 MiB; the fleet ISO's embed area, 256 KiB
/// compressed, holds it.
pub const SELECTOR: Limit = Limit {
    flag: "--selector",
    bytes: MIB,
};
/// A static wrapper is about 0.3 MiB; a MachineConfig carries one per
/// architecture and must stay under etcd's 1.5 MiB per object.
pub const WRAPPER: Limit = Limit {
    flag: "--wrapper",
    bytes: MIB,
};

/// The bytes of `path`, or of stdin for `-`, with the name messages use.
pub fn read_path_or_stdin(path: &Path, limit: Limit) -> Result<(Vec<u8>, String)> {
    if path.as_os_str() == "-" {
        let bytes = read_capped(std::io::stdin().lock(), "<stdin>", limit)?;
        Ok((bytes, "<stdin>".into()))
    } else {
        Ok((read_file(path, limit)?, path.display().to_string()))
    }
}

/// [`read_path_or_stdin`] as UTF-8 text.
pub fn read_text(path: &Path, limit: Limit) -> Result<(String, String)> {
    let (bytes, name) = read_path_or_stdin(path, limit)?;
    Ok((utf8(bytes, &name, limit)?, name))
}

fn utf8(bytes: Vec<u8>, name: &str, limit: Limit) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{name} is not UTF-8 text (invalid byte at offset {}); give the YAML file {} expects",
            e.utf8_error().valid_up_to(),
            limit.flag
        )
    })
}

/// The directory `dir` (a link there is the user's, and followed), opened
/// to read its entries inside it ([`read_entry`]).
pub fn open_dir(dir: &Path) -> Result<crate::node::nodefs::Dir> {
    let real = std::fs::canonicalize(dir).with_context(|| format!("reading {}", dir.display()))?;
    crate::node::nodefs::Dir::open(&real).with_context(|| format!("reading {}", dir.display()))
}

/// The entry `name` of the directory `at` (`path` names it for messages),
/// read as a regular file inside it: a link there is refused, never
/// followed (in a pull request's directory it may name any file of the
/// machine that reads it, whose text an error would quote; `oc apply -f`
/// on the directory would apply what it names), and so is anything else
/// but a regular file, never opened (a FIFO would wait for a writer).
pub fn read_entry(
    at: &crate::node::nodefs::Dir,
    path: &Path,
    name: &std::ffi::OsStr,
    limit: Limit,
) -> Result<Vec<u8>> {
    let shown = path.display();
    match at.open_file(name) {
        Ok((file, _)) => read_capped(file, &shown.to_string(), limit),
        // O_NOFOLLOW met a link.
        Err(e) if e.raw_os_error() == Some(40) => bail!(
            "{shown} is a symbolic link, not followed: `oc apply -f` on the directory would \
             apply what it names, which may be outside it; make it a regular file"
        ),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => bail!(
            "{shown} is not a regular file (a directory, a FIFO, a device), not read; rename it \
             or move it out of the directory"
        ),
        Err(e) => Err(e).with_context(|| format!("reading {shown}")),
    }
}

/// The manifests of directory `dir` (its files whose name ends in `.EXT`
/// for one of `exts`, hidden ones too, as `oc apply -f` reads them),
/// sorted by name: each handed to `each` (its text and its name for
/// messages) as it is read by [`read_entry`], so one raw text is held at a
/// time; how many there were. A kustomization beside them is read and
/// checked first. At most [`DIR_MAX_FILES`] of them, and what they come to
/// is drawn from the run's input budget ([`with_input_budget`]): a
/// directory of many large (or sparse) files is refused by their sizes
/// before any is read.
pub fn manifest_texts(
    dir: &Path,
    exts: &[&str],
    limit: Limit,
    mut each: impl FnMut(String, String) -> Result<()>,
) -> Result<usize> {
    let at = open_dir(dir)?;
    let is_kustomization = |n: &std::ffi::OsStr| KUSTOMIZATION_NAMES.iter().any(|k| n == *k);
    let listed = |n: &std::ffi::OsStr| has_extension(n, exts);
    let mut names: Vec<std::ffi::OsString> = Vec::new();
    let reading = || format!("reading {} {}", limit.flag, dir.display());
    for e in std::fs::read_dir(dir).with_context(reading)? {
        let name = e.with_context(reading)?.file_name();
        if !is_kustomization(&name) && !listed(&name) {
            continue;
        }
        if names.len() == DIR_MAX_FILES {
            bail!(
                "{} {}: more than {DIR_MAX_FILES} manifest files, the most {} reads of a \
                 directory; give a directory holding only the manifests to read",
                limit.flag,
                dir.display(),
                limit.flag
            );
        }
        names.push(name);
    }
    names.sort();
    check_dir_sizes(dir, &names, limit)?;
    // What `kubectl apply -f` would apply: a kustomization must list
    // exactly these.
    let applied: Vec<String> = names
        .iter()
        .filter(|n| !is_kustomization(n) && has_extension(n, &KUBECTL_EXTENSIONS))
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    let read = |name: &std::ffi::OsStr| -> Result<(String, String)> {
        let path = dir.join(name);
        let shown = path.display().to_string();
        let text = utf8(read_entry(&at, &path, name, limit)?, &shown, limit)?;
        Ok((text, shown))
    };
    // The kustomizations first: what they make the appliers apply decides
    // whether the files are read at all.
    let mut kustomizations = std::collections::BTreeMap::new();
    for name in names.iter().filter(|n| is_kustomization(n)) {
        let (text, shown) = read(name)?;
        // A file left out is read here to tell what it holds.
        let mut policy =
            |f: &str| read(std::ffi::OsStr::new(f)).is_ok_and(|(t, _)| policy_only(&t));
        check_kustomization(&text, &shown, limit.flag, &applied, &[], &mut policy)?;
        if listed(name) {
            kustomizations.insert(name.clone(), (text, shown));
        }
    }
    let mut count = 0;
    for name in names.iter().filter(|n| listed(n)) {
        let (text, shown) = match kustomizations.remove(name) {
            Some(read) => read,
            None => read(name)?,
        };
        each(text, shown)?;
        count += 1;
    }
    Ok(count)
}

/// The most manifest files [`manifest_texts`] reads of one directory: a
/// render's directory holds a few per pool.
pub const DIR_MAX_FILES: usize = 10_000;

/// Refuse the files `names` of `dir` when their sizes alone come to more
/// than what is left of the run's input budget: nothing of them read.
fn check_dir_sizes(dir: &Path, names: &[std::ffi::OsString], limit: Limit) -> Result<()> {
    let Some(b) = INPUT.get() else {
        return Ok(());
    };
    let mut total = 0u64;
    for name in names {
        // What read_entry refuses (a link, a FIFO) counts nothing here.
        if let Ok(m) = std::fs::symlink_metadata(dir.join(name))
            && m.is_file()
        {
            total = total.saturating_add(m.len());
        }
    }
    if total > b.left {
        bail!(
            "{} {}: its {} manifest files come to {} MiB, {}; give a directory holding only the \
             manifests to read",
            limit.flag,
            dir.display(),
            names.len(),
            total.div_ceil(MIB),
            over_budget(b)
        );
    }
    Ok(())
}

/// What one run may read in all of the files (and stdin) it is given,
/// every file of every directory counted: four times the most one
/// `--machineconfig` file may be. Without it a directory of many files,
/// each under its limit, took memory linear in their count.
pub const INPUT_BUDGET: u64 = 4 * MACHINECONFIG.bytes;

/// A run's input budget as it stands: what is left of it, and all of it.
#[derive(Clone, Copy)]
struct Budget {
    left: u64,
    all: u64,
}

thread_local! {
    /// The input budget of the run on this thread, when it set one
    /// ([`with_input_budget`]): every file read through [`read_capped`]
    /// draws from it.
    static INPUT: std::cell::Cell<Option<Budget>> = const { std::cell::Cell::new(None) };
}

/// Run `f` with one budget of `bytes` for every file it reads (each still
/// at most its flag's [`Limit`]): past it the file being read is refused.
/// Within another, what is left of that one bounds this one, and what this
/// one spends is spent for it.
pub fn with_input_budget<T>(bytes: u64, f: impl FnOnce() -> T) -> T {
    let outer = INPUT.get();
    let all = outer.map_or(bytes, |o| o.left.min(bytes));
    INPUT.set(Some(Budget { left: all, all }));
    let out = f();
    let spent = INPUT.get().map_or(0, |b| all - b.left);
    INPUT.set(outer.map(|o| Budget {
        left: o.left - spent,
        ..o
    }));
    out
}

fn over_budget(b: Budget) -> String {
    format!(
        "more than is left of the {} MiB this command reads in all of the files it is given",
        b.all / MIB
    )
}

/// The extensions `kubectl apply -f DIR` reads.
pub const KUBECTL_EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Whether the file name `name` ends in `.EXT` for one of `exts`, as
/// kubectl tells (Go's `filepath.Ext`: what follows the last dot, so
/// `.yaml` alone is a YAML file too).
pub fn has_extension(name: &std::ffi::OsStr, exts: &[&str]) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let name = name.as_bytes();
    name.iter()
        .rposition(|&b| b == b'.')
        .is_some_and(|dot| exts.iter().any(|e| &name[dot + 1..] == e.as_bytes()))
}

/// The names `kubectl apply -k` reads a directory's kustomization under.
pub const KUSTOMIZATION_NAMES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Refuse a kustomization (`text`, the file `name`) that makes `kubectl
/// apply -k` (or Argo CD, or Flux) apply anything but the manifests of its
/// directory (`files`, plain names) as they are: a patch, a prefix, common
/// labels, a generator, a resource that is not one of those files (another
/// directory, a remote base, a file of another extension), or one of them
/// left out of `resources`. `reader` reads the files as they are, so what
/// it said would not be what is applied (a patch adding a NoExecute taint
/// to the env drop-in planned as "no change"). Render's own lists its
/// files in `resources`, and nothing else.
///
/// `dirs`: the subdirectories below it that hold manifests, by plain name,
/// and whether each has a kustomization of its own (checked the same way
/// by the caller): it may list those in `resources`, and must list every one
/// (what it leaves out is read, but not applied).
///
/// Left out may be only a file or subdirectory for which `may_leave_out`
/// (given its plain name) says it holds nothing but the cluster's node
/// disruption policy ([`policy_only`]), which is applied server-side apart
/// (render's `cluster-wide/`): judged by what it holds, never by its name
/// (review 21 r21b F7: a MachineConfig renamed `machineconfiguration-x.yaml`
/// or moved into `cluster-wide/` and dropped from the list is pruned).
/// Returns the names so left out: not applied with the tree.
/// The most things wrong with a kustomization its error names; the rest
/// are counted.
const KUSTOMIZATION_SAID_MAX: usize = 20;

pub fn check_kustomization(
    text: &str,
    name: &str,
    reader: &str,
    files: &[String],
    dirs: &[(String, bool)],
    may_leave_out: &mut dyn FnMut(&str) -> bool,
) -> Result<Vec<String>> {
    // Read as kustomize and kubectl read it (a `patches:` key after a U+2028
    // in a comment is a key to them): what they would read otherwise is
    // refused.
    let docs = crate::cli::yaml::kube_yaml_docs(text).map(|docs| {
        docs.into_iter()
            .filter(|d| !d.is_null())
            .collect::<Vec<_>>()
    });
    let doc = match docs {
        Ok(mut docs) if docs.len() <= 1 => docs.pop().unwrap_or_default(),
        Ok(docs) => bail!(
            "{name}: a kustomization of {} YAML documents; kustomize reads one: keep one",
            docs.len()
        ),
        Err(e) => bail!(
            "{name}: a kustomization {reader} cannot read ({e:#}), so it cannot tell what \
             `kubectl apply -k` applies; fix it, or give {reader} `kubectl kustomize` output"
        ),
    };
    let empty = serde_json::Map::new();
    let fields = doc.as_object().unwrap_or(&empty);
    let mut more: Vec<String> = Vec::new();
    let resources = fields
        .get("resources")
        .and_then(serde_json::Value::as_array);
    let mut listed = std::collections::BTreeSet::new();
    // Sets, not scans (review 41 r41b F4: 200,000 entries against 40,000
    // files took 164 s); what is wrong is said for the first entries only.
    let file_names: std::collections::HashSet<&str> = files.iter().map(String::as_str).collect();
    let kustomized: std::collections::HashSet<&str> = (dirs.iter())
        .filter(|(_, k)| *k)
        .map(|(d, _)| d.as_str())
        .collect();
    let mut untold = 0usize;
    let mut tell = |more: &mut Vec<String>, what: &dyn Fn() -> String| {
        if more.len() < KUSTOMIZATION_SAID_MAX {
            more.push(what());
        } else {
            untold += 1;
        }
    };
    for k in fields
        .keys()
        .filter(|k| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "resources"))
    {
        tell(&mut more, &|| k.clone());
    }
    for r in resources.into_iter().flatten() {
        // A file of this directory, by its plain name (`./` allowed):
        // kustomize reads anything else as another kustomization, a remote
        // base (`github.com/org/repo//dir?ref=v1` fetches with git) or
        // resources of a file we do not read.
        let plain = r.as_str().map(|r| r.strip_prefix("./").unwrap_or(r));
        let file = plain.filter(|f| file_names.contains(f)).or_else(|| {
            // A subdirectory with a kustomization of its own.
            plain
                .map(|d| d.strip_suffix('/').unwrap_or(d))
                .filter(|d| kustomized.contains(d))
        });
        match file {
            Some(f) => {
                if !listed.insert(f) {
                    // kustomize: "may not add resource with an already
                    // registered id": nothing of the build is applied.
                    tell(&mut more, &|| {
                        format!(
                            "resource {} listed twice (kustomize refuses the build)",
                            crate::cli::output::terminal_safe(f)
                        )
                    });
                }
            }
            None => tell(&mut more, &|| {
                format!(
                    "resource {} (not a manifest file of its directory)",
                    crate::cli::output::terminal_safe(&r.to_string())
                )
            }),
        }
    }
    // Render's cluster-wide policy (`cluster-wide/`, or an earlier
    // release's `machineconfiguration-<pool>.yaml` beside the manifests) is
    // left out by design: it is applied server-side apart. Told by what the
    // file or directory holds, not by its name.
    let mut left_out = Vec::new();
    let mut unlisted = false;
    let dirs = dirs.iter().map(|(d, _)| (d, "directory "));
    for (f, what) in dirs.chain(files.iter().map(|f| (f, ""))) {
        if listed.contains(f.as_str()) {
            continue;
        }
        if may_leave_out(f) {
            left_out.push(f.clone());
            continue;
        }
        unlisted = true;
        tell(&mut more, &|| {
            format!(
                "{what}{} left out of its resources (`kubectl apply -k` leaves it out)",
                crate::cli::output::terminal_safe(f)
            )
        });
    }
    if untold > 0 {
        more.push(format!("and {untold} more"));
    }
    if !more.is_empty() {
        let apart = if unlisted {
            " (only a file holding the MachineConfiguration `cluster` alone, or a directory \
             of such files, may be left out: it is applied server-side apart)"
        } else {
            ""
        };
        bail!(
            "{name}: with it `kubectl apply -k` (and Argo CD, Flux) applies other than the \
             manifests of the directory as they are, which is what {reader} reads: {}; give \
             {reader} the output of `kubectl kustomize` on the directory instead, or list \
             every manifest of the directory in its resources and nothing more{apart}",
            more.join(", ")
        );
    }
    Ok(left_out)
}

/// Whether manifest `text` holds nothing but the cluster's node disruption
/// policy: one document, the `MachineConfiguration` named `cluster` of
/// `operator.openshift.io` (what render writes in `cluster-wide/`). Only
/// such a file may be left out of a kustomization; unreadable text may not.
pub fn policy_only(text: &str) -> bool {
    crate::cli::yaml::kube_yaml_docs(text).is_ok_and(|docs| policy_only_docs(&docs))
}

/// [`policy_only`] of a file's documents as read.
pub fn policy_only_docs(docs: &[serde_json::Value]) -> bool {
    let mut docs = docs.iter().filter(|d| !d.is_null());
    let (Some(doc), None) = (docs.next(), docs.next()) else {
        return false;
    };
    doc.get("kind").and_then(serde_json::Value::as_str) == Some("MachineConfiguration")
        && doc
            .get("apiVersion")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|v| v.starts_with("operator.openshift.io/"))
        && doc
            .pointer("/metadata/name")
            .and_then(serde_json::Value::as_str)
            == Some("cluster")
}

/// The manifests a path names: a directory's `*.yaml`, `*.yml` and
/// `*.json` ([`manifest_texts`]), or the path itself (a file, or `-` for
/// stdin), each handed to `each` (text, name) as it is read; how many.
pub fn texts_of(
    path: &Path,
    limit: Limit,
    mut each: impl FnMut(String, String) -> Result<()>,
) -> Result<usize> {
    if path.as_os_str() == "-" || !path.is_dir() {
        let (text, name) = read_text(path, limit)?;
        each(text, name)?;
        return Ok(1);
    }
    let count = manifest_texts(path, &["yaml", "yml", "json"], limit, each)?;
    if count == 0 {
        bail!(
            "{} {}: the directory holds no *.yaml, *.yml or *.json file",
            limit.flag,
            path.display()
        );
    }
    Ok(count)
}

/// The MachineConfigs of `--machineconfig` paths: files, `-`, or
/// directories, whose other manifests (a pool, a kustomization) are
/// skipped; a directory with none is refused.
pub fn read_machineconfigs(paths: &[std::path::PathBuf]) -> Result<Vec<serde_json::Value>> {
    Ok(read_machineconfigs_and_pools(paths)?.0)
}

/// [`read_machineconfigs`], and the MachineConfigPools the same files hold
/// (`explain --pool` takes a pool's `machineConfigSelector` from them).
pub fn read_machineconfigs_and_pools(
    paths: &[std::path::PathBuf],
) -> Result<(Vec<serde_json::Value>, Vec<serde_json::Value>)> {
    use super::layout::machineconfigs_from_yaml;
    use crate::cli::explain::pool::pools_from_yaml;
    let mut configs = Vec::new();
    let mut pools = Vec::new();
    for path in paths {
        let from_dir = path.as_os_str() != "-" && path.is_dir();
        let before = configs.len();
        let count = texts_of(path, MACHINECONFIG, |text, name| {
            // Unreadable text: reading it as MachineConfigs says why.
            if let Ok(docs) = crate::cli::yaml::kube_yaml_docs(&text) {
                super::applied::check_documents(&docs, &name)?;
            }
            pools.extend(pools_from_yaml(&text));
            if from_dir && !names_a_machineconfig(&text) {
                return Ok(());
            }
            let mcs = machineconfigs_from_yaml(&text, &name)?;
            super::summary::check(&text, &mcs, &name)?;
            configs.extend(mcs);
            Ok(())
        })?;
        if from_dir && configs.len() == before {
            bail!(
                "--machineconfig {}: no MachineConfig in its {} file(s); give the directory \
                 `render machineconfig --output-dir` wrote, or `oc get mc NAME -o yaml` output",
                path.display(),
                count
            );
        }
    }
    Ok((configs, pools))
}

/// Whether YAML text has a MachineConfig document or list (a directory's
/// files that do not are other manifests, skipped).
fn names_a_machineconfig(text: &str) -> bool {
    let Ok(docs) = crate::cli::yaml::kube_yaml_docs(text) else {
        // Unreadable: reading it as MachineConfigs says why.
        return true;
    };
    docs.iter().any(|d| {
        let kind = d.get("kind").and_then(serde_json::Value::as_str);
        kind == Some("MachineConfig") || kind.is_some_and(|k| k.ends_with("List"))
    })
}

/// The bytes of the file `path`.
pub fn read_file(path: &Path, limit: Limit) -> Result<Vec<u8>> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).with_context(|| format!("reading {name}"))?;
    read_capped(file, &name, limit)
}

/// Everything `r` gives, refused past `limit` (memory stays near the
/// limit), or past what is left of the run's input budget
/// ([`with_input_budget`]), from which what it read is then drawn.
pub fn read_capped(r: impl Read, name: &str, limit: Limit) -> Result<Vec<u8>> {
    let budget = INPUT.get();
    let cap = limit.bytes.min(budget.map_or(u64::MAX, |b| b.left));
    let mut bytes = Vec::new();
    r.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {name}"))?;
    if bytes.len() as u64 > cap {
        if let Some(b) = budget.filter(|b| b.left < limit.bytes) {
            bail!(
                "{name}: with it, {}; give {} fewer or smaller files",
                over_budget(b),
                limit.flag
            );
        }
        bail!(
            "{name} is larger than {} MiB, the most {} reads; is it the right file?",
            limit.bytes / MIB,
            limit.flag
        );
    }
    if let Some(b) = budget {
        INPUT.set(Some(Budget {
            left: b.left - bytes.len() as u64,
            ..b
        }));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Left out of a kustomization may be only what holds the cluster's
    /// MachineConfiguration alone, whatever its name (review 21 r21b F7).
    #[test]
    fn only_the_cluster_s_policy_may_be_left_out_whatever_its_name() {
        let policy = "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\n\
                      metadata:\n  name: cluster\n";
        assert!(policy_only(policy));
        let mc = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
                  metadata:\n  name: machineconfiguration-x\n";
        for text in [
            mc,
            &policy.replace("cluster", "other"),
            &policy.replace("operator.openshift.io", "example.com"),
            &format!("{policy}---\n{mc}"),
            "{",
        ] {
            assert!(!policy_only(text), "{text}");
        }
        let k = "resources:\n- a.yaml\n";
        let files = [
            "a.yaml".to_string(),
            "machineconfiguration-x.yaml".to_string(),
        ];
        let err = check_kustomization(k, "k", "plan", &files, &[], &mut |_| false).unwrap_err();
        assert!(
            format!("{err:#}").contains("machineconfiguration-x.yaml left out"),
            "{err:#}"
        );
        let out = check_kustomization(k, "k", "plan", &files, &[], &mut |_| true).unwrap();
        assert_eq!(out, ["machineconfiguration-x.yaml"]);
    }

    /// Review 41 r41b F4: many entries wrong against many files are found
    /// by sets, and the error names the first ones and counts the rest.
    #[test]
    fn a_kustomization_s_faults_are_bounded() {
        let files: Vec<String> = (0..20_000).map(|i| format!("f{i}.yaml")).collect();
        let k = format!("resources:\n{}", "- f19999.yaml\n".repeat(50_000));
        let err = check_kustomization(&k, "k", "plan", &files, &[], &mut |_| false).unwrap_err();
        let err = format!("{err:#}");
        let more = 49_999 + 19_999 - KUSTOMIZATION_SAID_MAX;
        assert!(
            err.contains(&format!("and {more} more")),
            "{}",
            &err[err.len() - 300..]
        );
        assert!(err.len() < 4096, "{}", err.len());
    }

    fn sparse_files(dir: &Path, count: usize, mib: u64) {
        std::fs::create_dir_all(dir).unwrap();
        for i in 0..count {
            let f = std::fs::File::create(dir.join(format!("{i}.yaml"))).unwrap();
            f.set_len(mib * MIB).unwrap();
        }
    }

    /// A directory's files draw from the run's input budget: many large
    /// (here sparse) files are refused by their sizes before one is read,
    /// naming the flag, the directory and the fix; what was read before
    /// counts, and a file read past what is left is refused too.
    #[test]
    fn directory_inputs_draw_from_the_run_input_budget() {
        let tmp = tempfile::tempdir().unwrap();
        let many = tmp.path().join("many");
        sparse_files(&many, 5, 1);
        let mut seen = 0;
        let e = with_input_budget(3 * MIB, || {
            manifest_texts(&many, &KUBECTL_EXTENSIONS, MACHINECONFIG, |_, _| {
                seen += 1;
                Ok(())
            })
            .unwrap_err()
        });
        assert_eq!(seen, 0, "read before refused");
        assert_eq!(
            e.to_string(),
            format!(
                "--machineconfig {}: its 5 manifest files come to 5 MiB, more than is left of \
                 the 3 MiB this command reads in all of the files it is given; give a directory \
                 holding only the manifests to read",
                many.display()
            )
        );
        let two = tmp.path().join("two");
        sparse_files(&two, 2, 1);
        with_input_budget(3 * MIB, || {
            let n = manifest_texts(&two, &KUBECTL_EXTENSIONS, MACHINECONFIG, |_, _| Ok(()));
            assert_eq!(n.unwrap(), 2);
            // 1 MiB left: the same directory again is refused by its sizes,
            let again = manifest_texts(&two, &KUBECTL_EXTENSIONS, MACHINECONFIG, |_, _| Ok(()));
            assert!(again.unwrap_err().to_string().contains("come to 2 MiB"));
            // and a stream by what it gives.
            let e = read_capped(&vec![b'a'; 2 << 20][..], "<stdin>", MACHINECONFIG)
                .unwrap_err()
                .to_string();
            assert_eq!(
                e,
                "<stdin>: with it, more than is left of the 3 MiB this command reads in all of \
                 the files it is given; give --machineconfig fewer or smaller files"
            );
        });
        // Without a budget (a library caller), only each file's limit.
        let n = manifest_texts(&many, &KUBECTL_EXTENSIONS, MACHINECONFIG, |_, _| Ok(()));
        assert_eq!(n.unwrap(), 5);
    }

    /// A directory of more manifest files than any render holds is refused
    /// before one is read.
    #[test]
    fn a_directory_of_too_many_manifests_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        for i in 0..=DIR_MAX_FILES {
            std::fs::File::create(d.join(format!("{i}.yaml"))).unwrap();
        }
        std::fs::File::create(d.join("other.txt")).unwrap();
        let mut seen = 0;
        let e = manifest_texts(d, &KUBECTL_EXTENSIONS, FLEET_POOL, |_, _| {
            seen += 1;
            Ok(())
        })
        .unwrap_err();
        assert_eq!(seen, 0);
        assert_eq!(
            e.to_string(),
            format!(
                "iso fleet --pool {}: more than 10000 manifest files, the most iso fleet --pool \
                 reads of a directory; give a directory holding only the manifests to read",
                d.display()
            )
        );
        std::fs::remove_file(d.join("0.yaml")).unwrap();
        let n = manifest_texts(d, &KUBECTL_EXTENSIONS, FLEET_POOL, |_, _| Ok(()));
        assert_eq!(n.unwrap(), DIR_MAX_FILES);
    }

    /// What follows the last dot, as Go's `filepath.Ext` (kubectl).
    #[test]
    fn extensions_are_told_as_kubectl_tells_them() {
        let yes = [".yaml", "a.yaml", "a.b.yml", "..json", ".x.yaml"];
        let no = ["yaml", "a.yaml.txt", "a.YAML", "a.", "a"];
        for n in yes {
            assert!(has_extension(n.as_ref(), &KUBECTL_EXTENSIONS), "{n}");
        }
        for n in no {
            assert!(!has_extension(n.as_ref(), &KUBECTL_EXTENSIONS), "{n}");
        }
    }

    #[test]
    fn refuses_past_the_limit_naming_file_and_limit() {
        let tiny = Limit {
            flag: "--x",
            bytes: 4,
        };
        assert_eq!(read_capped(&b"abcd"[..], "f", tiny).unwrap(), b"abcd");
        let e = read_capped(&b"abcde"[..], "f", tiny)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("f is larger than") && e.contains("--x"),
            "{e}"
        );
        let e = read_file(Path::new("/dev/zero"), CA_FILE)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "/dev/zero is larger than 1 MiB, the most --ca-file reads; is it the right file?"
        );
    }
}
