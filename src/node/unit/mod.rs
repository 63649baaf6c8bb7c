//! systemd unit resolution: search path, drop-ins, unit-file syntax,
//! `ExecStart=` parsing, specifiers, `Environment=`/`EnvironmentFile=` and
//! exec-time `$VAR` expansion. Knows nothing of kubelet.
//! See systemd.unit(5), systemd.service(5), systemd.exec(5), systemd.syntax(7).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::node::error::Context;
use crate::node_bail as bail;

pub mod env;
pub mod env_file;
pub mod exec;
pub mod search;
pub mod specifier;
pub mod syntax;
pub mod warnings;
pub mod words;

pub use env::{replace_env_argv, resolve_executable};
pub use specifier::{Host, SpecifierValues};

/// Where units are looked for. `dirs` are node paths (as systemd sees them),
/// looked up under `root`.
#[derive(Debug, Clone)]
pub struct UnitPaths {
    pub root: PathBuf,
    pub dirs: Vec<PathBuf>,
}

impl UnitPaths {
    /// The system manager's search path (systemd 252 on Debian), under `root`.
    pub fn system(root: &Path) -> Self {
        UnitPaths {
            root: root.to_path_buf(),
            dirs: search::SYSTEM_UNIT_PATH.iter().map(PathBuf::from).collect(),
        }
    }

    /// A colon-separated list in `$SYSTEMD_UNIT_PATH` style (a trailing `:`
    /// appends the default list), under `root`.
    pub fn from_list(root: &Path, list: &str) -> Self {
        let mut dirs: Vec<PathBuf> = list
            .split(':')
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .collect();
        if list.ends_with(':') {
            dirs.extend(search::SYSTEM_UNIT_PATH.iter().map(PathBuf::from));
        }
        UnitPaths {
            root: root.to_path_buf(),
            dirs,
        }
    }
}

/// One `ExecStart=` command after parsing and specifier expansion, before
/// `$VAR` expansion. Bytes, because systemd allows any byte via `\xHH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecCommand {
    /// The executable as written (after specifiers).
    pub path: Vec<u8>,
    /// argv including argv[0] (the path, or the `@` token).
    pub argv: Vec<Vec<u8>>,
    /// `-`
    pub ignore_failure: bool,
    /// `@`
    pub argv0_given: bool,
    /// `:`
    pub no_env_expand: bool,
    /// `+`, `!` or `!!`, as written.
    pub privilege_prefix: Option<String>,
}

/// One `NAME=value` of `Environment=`.
pub type EnvAssignment = (String, Vec<u8>);

/// The service as systemd would load it.
#[derive(Debug, Clone, Default)]
pub struct LoadedService {
    /// Node path of the fragment; None when only drop-ins exist.
    pub fragment: Option<PathBuf>,
    /// Node paths of the drop-ins that apply, in application order.
    pub dropins: Vec<PathBuf>,
    /// Of those, the ones left out (`skip_dropin`, `skip_running`).
    pub skipped: Vec<PathBuf>,
    pub exec_start: Vec<ExecCommand>,
    /// `Type=` as written (None = default).
    pub service_type: Option<String>,
    /// `Environment=` after folding, in order.
    pub environment: Vec<(String, Vec<u8>)>,
    /// Each `Environment=` assignment as applied, with the file (node path)
    /// it is in; None: an empty `Environment=`, which drops those before.
    /// Who set a variable, where that matters (`wrapper::own_env`).
    pub environment_log: Vec<(PathBuf, Option<EnvAssignment>)>,
    /// `EnvironmentFile=` entries: (node path or glob, optional via `-`).
    pub environment_files: Vec<(String, bool)>,
    pub unset_environment: Vec<String>,
    pub exec_search_path: Option<Vec<PathBuf>>,
    pub syslog_identifier: Option<String>,
    /// `WorkingDirectory=` (a node path; `~` is root's home): where the
    /// command's relative paths start (`--config=config.yaml`); None: `/`.
    pub working_directory: Option<PathBuf>,
    /// Non-fatal problems systemd would log.
    pub warnings: warnings::Warnings,
}

#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Basename of a drop-in to leave out (the wrapper's own).
    pub skip_dropin: Option<String>,
    /// Leave out, too, every drop-in whose `ExecStart=` runs this program:
    /// copies of the wrapper's drop-in under other names.
    pub skip_running: Option<Program>,
    /// Specifier values to use instead of the system manager's.
    pub specifiers: Option<specifier::Host>,
}

/// A program known by its file, as `skip_running` looks for it.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// (st_dev, st_ino) of the file, as `stat` follows links to it.
    pub ids: Vec<(u64, u64)>,
    /// Node paths that are it though the tree may not hold the file (a
    /// tree laid out from MachineConfigs).
    pub path_is: Option<fn(&Path) -> bool>,
    /// What to call it in errors ("the wrapper").
    pub what: &'static str,
}

impl Program {
    /// The program this process runs (`/proc/self/exe`); None without /proc.
    pub fn this_process(what: &'static str) -> Option<Program> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata("/proc/self/exe").ok()?;
        Some(Program {
            ids: vec![(m.dev(), m.ino())],
            path_is: None,
            what,
        })
    }

    /// Whether the node path `exe` (under `root`) is this program: one
    /// `stat` when it is absolute.
    pub fn is(&self, root: &Path, exe: &Path, search: Option<&[PathBuf]>) -> bool {
        use std::os::unix::fs::MetadataExt;
        if self.path_is.is_some_and(|f| f(exe)) {
            return true;
        }
        if self.ids.is_empty() {
            return false;
        }
        let node = if exe.is_absolute() {
            exe.to_path_buf()
        } else {
            match resolve_executable(exe.as_os_str(), search, root) {
                Ok(p) => p,
                Err(_) => return false,
            }
        };
        search::contained(root, &node)
            .and_then(std::fs::metadata)
            .is_ok_and(|m| self.ids.contains(&(m.dev(), m.ino())))
    }
}

/// Whether a unit file's `[Service]` section sets an `ExecStart=` command
/// that runs `program`.
fn runs(
    parsed: &syntax::Parsed,
    program: &Program,
    spec: &SpecifierValues,
    root: &Path,
    search: Option<&[PathBuf]>,
) -> bool {
    use std::os::unix::ffi::OsStrExt;
    parsed
        .assignments
        .iter()
        .filter(|a| a.section == "Service" && a.key == "ExecStart" && !a.value.is_empty())
        .any(|a| match exec::parse_exec(&a.value, spec) {
            exec::ExecLine::Append { commands, .. } => commands.iter().any(|c| {
                program.is(
                    root,
                    Path::new(std::ffi::OsStr::from_bytes(&c.path)),
                    search,
                )
            }),
            exec::ExecLine::Reset => false,
        })
}

/// A unit file or drop-in's bytes as systemd reads them (masked: none).
pub fn read_node(paths: &UnitPaths, node: &Path) -> std::io::Result<Vec<u8>> {
    let path = search::contained_entry(&paths.root, node)?;
    // Not a link (the usual case): masked only when empty, which reads as
    // nothing anyway; is_masked and resolve would lstat it twice more.
    if let Ok(m) = std::fs::symlink_metadata(&path)
        && !m.file_type().is_symlink()
    {
        // A device is never read: /dev/zero would not end.
        if search::null_or_empty(&m) {
            return Ok(Vec::new());
        }
        return crate::node::nodefs::read(&path);
    }
    // A drop-in linked to /dev/null (or another device) masks its name and
    // says nothing.
    if search::is_masked(&paths.root, node) {
        return Ok(Vec::new());
    }
    let real = search::resolve(&paths.root, node).unwrap_or_else(|| node.to_path_buf());
    crate::node::nodefs::read(&search::contained(&paths.root, &real)?)
}

/// Load `unit` as systemd would: fragment, then drop-ins in order; the
/// `ExecStart=` list folded, and the checks of service_verify.
pub fn load_service(
    paths: &UnitPaths,
    unit: &str,
    opts: &LoadOptions,
) -> crate::node::error::Result<LoadedService> {
    if search::split_name(unit).is_none() {
        bail!("{unit:?} is not a unit name");
    }
    let files = search::find(&paths.root, &paths.dirs, unit);
    if files.masked {
        bail!("{unit} is masked");
    }
    if let Some(why) = &files.refused {
        bail!("{why}");
    }
    let mut svc = LoadedService {
        fragment: files.fragment.clone(),
        dropins: files.dropins.clone(),
        ..Default::default()
    };
    // Drop-ins alone do not make a unit: systemd says not-found.
    if svc.fragment.is_none() {
        bail!(
            "{unit} not found in {}",
            paths
                .dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(":")
        );
    }
    let spec = SpecifierValues {
        host: opts.specifiers.clone().unwrap_or(specifier::Host::System {
            root: paths.root.clone(),
            live: paths.root == Path::new("/"),
        }),
        // `%n` is the unit's own name, where `unit` is an alias of it.
        unit: files.names.first().map_or(unit, String::as_str).to_string(),
        fragment: files.fragment.clone(),
        cache: Default::default(),
    };
    let mut sources: Vec<(PathBuf, bool)> = Vec::new();
    if let Some(f) = &files.fragment {
        sources.push((f.clone(), true));
    }
    for d in &files.dropins {
        if opts
            .skip_dropin
            .as_deref()
            .is_some_and(|skip| d.file_name().is_some_and(|n| n == skip))
        {
            svc.skipped.push(d.clone());
            continue;
        }
        sources.push((d.clone(), false));
    }
    // The file that set the `ExecStart=` commands last.
    let mut exec_from: Option<PathBuf> = None;
    for (node, is_fragment) in sources {
        let data = match read_node(paths, &node) {
            Ok(d) => d,
            // A drop-in systemd cannot read (a directory or a socket named
            // `*.conf`) it logs and goes on without; one past the read
            // bound is unknown, and refused as a fragment that cannot be read.
            Err(e) if !is_fragment && e.kind() != std::io::ErrorKind::FileTooLarge => {
                svc.warnings
                    .push(format!("reading {}: {e}; ignoring", node.display()));
                continue;
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", node.display())),
        };
        let name = node.display().to_string();
        let parsed = syntax::parse(&data, &name);
        let sets_exec = parsed
            .assignments
            .iter()
            .any(|a| a.section == "Service" && a.key == "ExecStart" && !a.value.is_empty());
        if sets_exec
            && !is_fragment
            && let Some(program) = &opts.skip_running
            && runs(
                &parsed,
                program,
                &spec,
                &paths.root,
                svc.exec_search_path.as_deref(),
            )
        {
            svc.skipped.push(node);
            continue;
        }
        if spec.over_budget() {
            bail!("{name}: {}", over_budget(unit));
        }
        if sets_exec {
            exec_from = Some(node.clone());
        }
        svc.warnings.append(&parsed.warnings);
        // Off the node (a tree, a MachineConfig's layout) a value the node
        // has (its os-release, kernel, boot) may be unknown: what a line
        // naming it does there is unknown, never taken as that line (or
        // the rest of its file) ignored.
        let live = matches!(spec.host, specifier::Host::System { live: true, .. });
        spec.take_unresolved();
        let mut fatal = parsed.fatal.clone();
        for a in &parsed.assignments {
            if a.section != "Service" {
                continue;
            }
            let before = svc.environment.len();
            let applied = apply_assignment(&mut svc, a, &spec);
            if a.key == "Environment" {
                log_environment(&mut svc, &node, before, a.value.is_empty());
            }
            // Whatever the line does with the error (`-`, a dropped word):
            // what the unit gives cannot start, so nothing starts for it.
            if spec.over_budget() {
                bail!("{name}:{}: {}", a.line, over_budget(unit));
            }
            if let Some(c) = spec.take_unresolved().filter(|_| !live) {
                bail!(
                    "{name}:{}: cannot resolve specifier %{c}: it resolves only on the node, so what {unit} gets there cannot be judged here",
                    a.line
                );
            }
            if let Err(e) = applied {
                // What came before a line that ends the file's parse
                // still applies.
                match fatal {
                    None => fatal = Some(format!("{name}:{}: {e}", a.line)),
                    Some(_) => svc.warnings.push(e),
                }
                break;
            }
        }
        if let Some(e) = fatal {
            if is_fragment {
                bail!("{unit} failed to load: {e}");
            }
            svc.warnings
                .push(format!("{e}; the rest of this drop-in is ignored"));
        }
    }
    if let Some(program) = &opts.skip_running {
        use std::os::unix::ffi::OsStrExt;
        let what = program.what;
        let runs_it = |c: &ExecCommand| {
            let exe = Path::new(std::ffi::OsStr::from_bytes(&c.path));
            program.is(&paths.root, exe, svc.exec_search_path.as_deref())
        };
        let file = exec_from.as_deref().or(svc.fragment.as_deref());
        let why = if svc.exec_start.is_empty() && !svc.skipped.is_empty() {
            Some("no ExecStart= is left".to_string())
        } else if let Some(file) = file
            && svc.exec_start.iter().any(runs_it)
        {
            Some(format!("{} runs {what} too", file.display()))
        } else {
            None
        };
        if let Some(why) = why {
            let mut left_out = String::new();
            for p in &svc.skipped {
                if !left_out.is_empty() {
                    left_out += ", ";
                }
                left_out += &p.display().to_string();
            }
            bail!(
                "nothing to start beneath {what}: {why}, and the drop-ins that run it are left out ({left_out}); give the unit its own command"
            );
        }
    }
    let oneshot = svc.service_type.as_deref() == Some("oneshot");
    if svc.exec_start.len() > 1 && !oneshot {
        bail!(
            "{unit}: Service has more than one ExecStart= setting, which is only allowed for Type=oneshot services. Refusing."
        );
    }
    if svc.exec_start.is_empty() && !oneshot {
        bail!("{unit}: Service has no ExecStart= setting. Refusing.");
    }
    env::keep_last(&mut svc.environment);
    Ok(svc)
}

/// Log the `Environment=` line of `node` just applied: what it appended
/// after `before`, or (`reset`) that it emptied the list.
fn log_environment(svc: &mut LoadedService, node: &Path, before: usize, reset: bool) {
    if reset {
        svc.environment_log.push((node.to_path_buf(), None));
        return;
    }
    for set in svc.environment.get(before..).unwrap_or_default() {
        svc.environment_log
            .push((node.to_path_buf(), Some(set.clone())));
    }
}

/// For each of `names`, the last `EnvironmentFile=` (a file it matched,
/// as a node path) that sets it, read now under `root` as systemd read
/// them at the start. Err: one could not be read (what it sets is unknown).
pub fn environment_files_setting(
    svc: &LoadedService,
    root: &Path,
    names: &[&str],
) -> crate::node::error::Result<Vec<(String, PathBuf)>> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    each_environment_file(svc, root, |m, _, set| {
        let set = match set {
            Ok(set) => set,
            // systemd left it out: it set nothing.
            Err(env_file::EnvFileError::Refused(_)) => return Ok(()),
            Err(e) => bail!("{}: {e}", m.display()),
        };
        for (k, _) in set {
            if names.contains(&k.as_str()) {
                out.retain(|(n, _)| *n != k);
                out.push((k, m.to_path_buf()));
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// What an environment file sets, or why systemd does not apply it.
type EnvFileSet = Result<Vec<(String, Vec<u8>)>, env_file::EnvFileError>;

/// `each` of the files the unit's `EnvironmentFile=`s match under `root`
/// (node paths), in order, with whether it is optional and what systemd
/// makes of it. One absent and optional is left out, as systemd leaves
/// it; one absent and required, one past what the node reads (16 MiB in
/// all: review 42 r42b F2, one file named 100,000 times), or one that is
/// not a regular file is an error: systemd reads those (a FIFO it waits on
/// and applies what is fed: review 44 r44c F2), so what they set is unknown.
fn each_environment_file(
    svc: &LoadedService,
    root: &Path,
    mut each: impl FnMut(&Path, bool, EnvFileSet) -> crate::node::error::Result<()>,
) -> crate::node::error::Result<()> {
    let mut read_in_all = 0usize;
    for (pattern, optional) in &svc.environment_files {
        let matches =
            env::glob(root, pattern).with_context(|| format!("EnvironmentFile={pattern}"))?;
        if matches.is_empty() && !optional {
            bail!(
                "EnvironmentFile={pattern} does not exist under {}; systemd would fail the start",
                root.display()
            );
        }
        for m in matches {
            let left = crate::node::nodefs::READ_LIMIT - read_in_all;
            let path = search::contained(root, &m);
            let read = (path
                .as_ref()
                .map_err(|e| std::io::Error::new(e.kind(), e.to_string())))
            .and_then(|p| crate::node::nodefs::read_regular(p, left));
            let data = match read {
                Ok(Some(d)) => d,
                Ok(None) => bail!("{}: {}", m.display(), over_read_limit()),
                // Review 43 r43c F1: optional is absent, not unreadable to
                // us (systemd reads a file past our bound, and applies it).
                Err(e) if *optional && e.kind() == std::io::ErrorKind::NotFound => continue,
                // Review 46 r46c F2: systemd cannot open a socket or read
                // a directory: an optional one sets nothing.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                    use std::os::unix::fs::FileTypeExt;
                    let unread = (path.as_ref().ok())
                        .and_then(|p| std::fs::metadata(p).ok())
                        .is_some_and(|t| t.is_dir() || t.file_type().is_socket());
                    match (unread, *optional) {
                        (true, true) => continue,
                        (true, false) => bail!(
                            "reading {}: a directory or socket, which systemd cannot read: it \
                             fails the start",
                            m.display()
                        ),
                        _ => bail!(
                            "reading {}: not a regular file (a FIFO or device), which systemd \
                             waits on or reads: what it sets is unknown",
                            m.display()
                        ),
                    }
                }
                Err(e) => return Err(e).with_context(|| format!("reading {}", m.display())),
            };
            read_in_all += data.len();
            each(&m, *optional, env_file::parse_env_file(&data))?;
        }
    }
    Ok(())
}

/// Why the environment files were not all read.
fn over_read_limit() -> String {
    format!(
        "the EnvironmentFile= entries come to more than {} MiB in all, which systemd reads at \
         every start; name each file once, and keep them small",
        crate::node::nodefs::READ_LIMIT >> 20
    )
}

/// Why a unit whose specifiers give more than exec takes is refused.
fn over_budget(unit: &str) -> String {
    format!(
        "the specifiers of {unit} expand to more than the {} MiB of arguments and environment \
         exec takes (E2BIG), so it cannot start; shorten what they name (/etc/os-release, \
         /etc/hostname, ...) or their use",
        specifier::EXPANDED_MAX >> 20
    )
}

/// A line (or word) systemd leaves out, its specifiers not resolved.
fn ignored(svc: &mut LoadedService, value: &str, e: &str) {
    svc.warnings.push(format!(
        "Failed to resolve unit specifiers in {value}, ignoring: {e}"
    ));
}

/// One `[Service]` assignment. Err = a fatal error for the file.
fn apply_assignment(
    svc: &mut LoadedService,
    a: &syntax::Assignment,
    spec: &SpecifierValues,
) -> Result<(), String> {
    let expand = |w: &[u8]| spec.expand(w);
    match a.key.as_str() {
        "ExecStart" => match exec::parse_exec(&a.value, spec) {
            exec::ExecLine::Reset => svc.exec_start.clear(),
            exec::ExecLine::Append {
                commands,
                warnings,
                error,
                fatal,
            } => {
                svc.exec_start.extend(commands);
                svc.warnings.extend(warnings);
                if let Some(e) = error {
                    if fatal {
                        return Err(e);
                    }
                    svc.warnings.push(format!("{e}, ignoring"));
                }
            }
        },
        "Type" => svc.service_type = Some(a.value.clone()),
        "Environment" => {
            if a.value.is_empty() {
                svc.environment.clear();
            } else {
                let (vars, warnings) = env::parse_environment_line(&a.value, &expand);
                svc.warnings.extend(warnings);
                // Repeats are settled once, when the unit is loaded.
                svc.environment.extend(vars);
            }
        }
        "EnvironmentFile" => {
            if a.value.is_empty() {
                svc.environment_files.clear();
                return Ok(());
            }
            // systemd's parser drops a line whose specifiers it cannot
            // resolve, and only that line.
            let v = match spec.expand(a.value.as_bytes()) {
                Ok(v) => String::from_utf8_lossy(&v).into_owned(),
                Err(e) => {
                    ignored(svc, &a.value, &e);
                    return Ok(());
                }
            };
            let (optional, path) = match v.strip_prefix('-') {
                Some(p) => (true, p.to_string()),
                None => (false, v),
            };
            // systemd's path_simplify_and_warn: a `..` is refused, not
            // followed (to the host's files, offline).
            if !path.starts_with('/') {
                svc.warnings.push(format!(
                    "EnvironmentFile= path is not absolute, ignoring: {path}"
                ));
            } else if path.split('/').any(|c| c == "..") {
                svc.warnings.push(format!(
                    "EnvironmentFile= path is not normalized, ignoring: {path}"
                ));
            } else {
                svc.environment_files.push((path, optional));
            }
        }
        "UnsetEnvironment" => {
            if a.value.is_empty() {
                svc.unset_environment.clear();
            } else {
                // A word whose specifiers do not resolve is left out.
                for w in words::split(a.value.as_bytes(), words::UNIT).unwrap_or_default() {
                    match expand(&w) {
                        Ok(w) => svc
                            .unset_environment
                            .push(String::from_utf8_lossy(&w).into_owned()),
                        Err(e) => ignored(svc, &String::from_utf8_lossy(&w), &e),
                    }
                }
            }
        }
        "ExecSearchPath" => {
            if a.value.is_empty() {
                svc.exec_search_path = None;
                return Ok(());
            }
            // systemd's config_parse_colon_separated_paths: each word is
            // appended to the list, up to one it cannot resolve or that is
            // not absolute (the rest of the line is ignored).
            let list = svc.exec_search_path.get_or_insert_with(Vec::new);
            for word in a.value.split(':').filter(|w| !w.is_empty()) {
                let p = match spec.expand(word.as_bytes()) {
                    Ok(p) => String::from_utf8_lossy(&p).into_owned(),
                    Err(e) => {
                        ignored(svc, word, &e);
                        return Ok(());
                    }
                };
                if !p.starts_with('/') {
                    svc.warnings.push(format!(
                        "ExecSearchPath= path is not absolute, ignoring: {p}"
                    ));
                    break;
                }
                list.push(PathBuf::from(p));
            }
        }
        "WorkingDirectory" => {
            // `-`: a missing directory is no error, and a value systemd
            // cannot use ignores the line; without it the file fails.
            let (missing_ok, v) = match a.value.strip_prefix('-') {
                Some(v) => (true, v),
                None => (false, a.value.as_str()),
            };
            let v = match spec.expand(v.as_bytes()) {
                Ok(v) => String::from_utf8_lossy(&v).into_owned(),
                Err(e) if missing_ok => {
                    ignored(svc, v, &e);
                    return Ok(());
                }
                Err(e) => return Err(format!("Failed to resolve unit specifiers in {v}: {e}")),
            };
            // `~`: the home of the user the system manager runs it as (root).
            svc.working_directory = match v.as_str() {
                "" if a.value.is_empty() => None,
                "~" => Some(PathBuf::from("/root")),
                p if p.starts_with('/') => Some(PathBuf::from(p)),
                p if missing_ok => {
                    svc.warnings.push(format!(
                        "WorkingDirectory= path is not absolute, ignoring: {p}"
                    ));
                    svc.working_directory.take()
                }
                p => return Err(format!("WorkingDirectory= path is not absolute: {p}")),
            };
        }
        "SyslogIdentifier" => match spec.expand(a.value.as_bytes()) {
            Ok(v) => svc.syslog_identifier = Some(String::from_utf8_lossy(&v).into_owned()),
            Err(e) => ignored(svc, &a.value, &e),
        },
        _ => {}
    }
    Ok(())
}

/// Exec-time `$NAME`/`${NAME}` expansion of argv (systemd's
/// replace_env_argv), unless the command has `:`.
pub fn expand_argv(
    cmd: &ExecCommand,
    env: &[(OsString, OsString)],
) -> Result<Vec<Vec<u8>>, String> {
    if cmd.no_env_expand {
        return Ok(cmd.argv.clone());
    }
    env::replace_env_argv(&cmd.argv, env)
}

/// The environment systemd would give the service, offline: the manager's
/// (`manager_env`), then `Environment=`, then the `EnvironmentFile=`s read
/// under the root, minus `UnsetEnvironment=`.
pub fn offline_environment(
    svc: &LoadedService,
    root: &Path,
    manager_env: &[(OsString, OsString)],
) -> crate::node::error::Result<Vec<(OsString, OsString)>> {
    let mut out: Vec<(OsString, OsString)> = manager_env.to_vec();
    env::merge(&mut out, svc.environment.iter().cloned());
    each_environment_file(svc, root, |m, optional, set| {
        match set {
            Ok(set) => env::merge(&mut out, set),
            Err(env_file::EnvFileError::Refused(_)) if optional => {}
            Err(e) => bail!(
                "EnvironmentFile={}: {e}{}",
                m.display(),
                e.consequence(optional)
            ),
        }
        Ok(())
    })?;
    // One lookup per variable, not a scan of UnsetEnvironment=.
    let mut unset: Vec<&str> = svc.unset_environment.iter().map(String::as_str).collect();
    unset.sort_unstable();
    let has = |u: &str| unset.binary_search(&u).is_ok();
    out.retain(|(k, v)| match (k.to_str(), v.to_str()) {
        (Some(k), v) => !(has(k) || v.is_some_and(|v| has(&format!("{k}={v}")))),
        // UnsetEnvironment= names text: other bytes never match it.
        (None, _) => true,
    });
    Ok(out)
}

#[cfg(test)]
mod budget_tests;

#[cfg(test)]
mod env_files_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// A device is never read (systemd would hang on a drop-in linked to
    /// /dev/zero, and masks a unit file linked to any device).
    /// A drop-in systemd cannot read (a directory or a socket named
    /// `*.conf`) is left out, as systemd leaves it out; the unit loads.
    /// Such a name made the wrapper exit 203, and kubelet never started.
    #[test]
    fn an_unreadable_dropin_is_skipped_as_systemd_skips_it() {
        let dir = tempfile::tempdir().unwrap();
        let units = dir.path().join("etc/systemd/system");
        let d = units.join("k.service.d");
        std::fs::create_dir_all(d.join("50-dir.conf")).unwrap();
        std::fs::write(units.join("k.service"), "[Service]\nExecStart=/bin/k\n").unwrap();
        std::os::unix::net::UnixListener::bind(d.join("60-sock.conf")).unwrap();
        std::fs::write(d.join("70.conf"), "[Service]\nEnvironment=A=1\n").unwrap();
        let paths = UnitPaths::system(dir.path());
        let svc = load_service(&paths, "k.service", &LoadOptions::default()).unwrap();
        assert_eq!(svc.exec_start[0].path, b"/bin/k");
        assert_eq!(svc.environment, [("A".to_string(), b"1".to_vec())]);
        assert_eq!(svc.dropins.len(), 3);
    }

    /// Off the node, an `EnvironmentFile=` the node alone resolves (a
    /// specifier of its os-release, a pattern in a directory) is an error,
    /// never read as absent: the file it names there may empty our taints.
    #[test]
    fn what_only_the_node_resolves_is_refused_off_it() {
        let dir = tempfile::tempdir().unwrap();
        let units = dir.path().join("etc/systemd/system");
        std::fs::create_dir_all(units.join("k.service.d")).unwrap();
        std::fs::write(units.join("k.service"), "[Service]\nExecStart=/bin/k\n").unwrap();
        let paths = UnitPaths::system(dir.path());
        let dropin = units.join("k.service.d/95-site.conf");
        std::fs::write(&dropin, "[Service]\nEnvironmentFile=-/etc/site/%o.env\n").unwrap();
        let e = load_service(&paths, "k.service", &LoadOptions::default()).unwrap_err();
        assert!(e.to_string().contains("%o"), "{e}");
        // This machine's kernel, architecture and boot are not the node's
        // (review 12: read at the CLI's values); and a line systemd drops
        // alone when it cannot resolve it is as unknown here.
        for line in [
            "EnvironmentFile=-/etc/site/%v.env",
            "EnvironmentFile=-/etc/site/%a.env",
            "EnvironmentFile=-/etc/site/%b.env",
            "Environment=A=%o",
            "UnsetEnvironment=%o",
            "ExecSearchPath=/opt/%o",
            "WorkingDirectory=-/var/%o",
            "ExecStart=\nExecStart=-/bin/k %o",
        ] {
            std::fs::write(&dropin, format!("[Service]\n{line}\n")).unwrap();
            let e = load_service(&paths, "k.service", &LoadOptions::default()).unwrap_err();
            assert!(
                e.to_string().contains("resolves only on the node"),
                "{line}: {e}"
            );
        }
        // An unknown specifier fails on the node as here: that line alone.
        std::fs::write(
            &dropin,
            "[Service]\nEnvironmentFile=-/etc/site/%Z.env\nEnvironment=A=1\n",
        )
        .unwrap();
        let svc = load_service(&paths, "k.service", &LoadOptions::default()).unwrap();
        assert_eq!(svc.environment, [("A".to_string(), b"1".to_vec())]);
        std::fs::write(&dropin, "[Service]\nEnvironmentFile=-/etc/site-*/a.env\n").unwrap();
        std::fs::create_dir_all(dir.path().join("etc/site-1")).unwrap();
        std::fs::write(dir.path().join("etc/site-1/a.env"), "A=1\n").unwrap();
        let svc = load_service(&paths, "k.service", &LoadOptions::default()).unwrap();
        assert!(offline_environment(&svc, dir.path(), &[]).is_err());
    }

    /// A drop-in directory past its bound is refused, naming it: any of
    /// its entries could be the drop-in that sets the command or the
    /// taints (it was read whole, however large).
    #[test]
    fn a_dropin_directory_past_its_bound_is_refused() {
        use crate::node::nodefs::MAX_CONFIG_ENTRIES;
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let units = r.join("etc/systemd/system");
        let d = units.join("k.service.d");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(units.join("k.service"), "[Service]\nExecStart=/bin/k\n").unwrap();
        for i in 0..MAX_CONFIG_ENTRIES {
            std::fs::write(d.join(format!("{i:04}.txt")), "").unwrap();
        }
        let paths = UnitPaths::system(r);
        assert!(load_service(&paths, "k.service", &LoadOptions::default()).is_ok());
        std::fs::write(
            d.join("99-taints.conf"),
            "[Service]\nExecStart=\nExecStart=/bin/k2\n",
        )
        .unwrap();
        let e = load_service(&paths, "k.service", &LoadOptions::default()).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "/etc/systemd/system/k.service.d: more than 1024 entries"
        );
        // An `EnvironmentFile=` glob's directory, optional or not.
        std::fs::remove_file(d.join("99-taints.conf")).unwrap();
        std::fs::write(
            d.join("0000.txt"),
            "[Service]\nEnvironmentFile=-/etc/systemd/system/k.service.d/*.env\n",
        )
        .unwrap();
        std::fs::rename(d.join("0000.txt"), d.join("0000.conf")).unwrap();
        let svc = load_service(&paths, "k.service", &LoadOptions::default()).unwrap();
        assert!(offline_environment(&svc, r, &[]).is_ok());
        std::fs::write(d.join("k.env"), "A=1\n").unwrap();
        let e = offline_environment(&svc, r, &[]).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "EnvironmentFile=/etc/systemd/system/k.service.d/*.env: its directory: more than 1024 \
             entries"
        );
    }

    #[test]
    fn devices_read_as_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let units = r.join("etc/systemd/system");
        std::fs::create_dir_all(units.join("k.service.d")).unwrap();
        // The tree holds no /dev: the node's devices are not in it.
        std::fs::write(units.join("k.service"), "[Service]\nExecStart=/bin/k\n").unwrap();
        std::os::unix::fs::symlink("/dev/zero", units.join("k.service.d/50-zero.conf")).unwrap();
        let paths = UnitPaths::system(r);
        let svc = load_service(&paths, "k.service", &LoadOptions::default()).unwrap();
        assert_eq!(svc.exec_start[0].path, b"/bin/k");
        std::fs::remove_file(units.join("k.service")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", units.join("k.service")).unwrap();
        let e = load_service(&paths, "k.service", &LoadOptions::default()).unwrap_err();
        assert_eq!(e.to_string(), "k.service is masked");
        // At boot (root /) the host's devices are the node's.
        let at_boot = UnitPaths {
            root: PathBuf::from("/"),
            dirs: vec![units.clone()],
        };
        let e = load_service(&at_boot, "k.service", &LoadOptions::default()).unwrap_err();
        assert_eq!(e.to_string(), "k.service is masked");
        std::fs::remove_file(units.join("k.service")).unwrap();
        std::fs::write(units.join("k.service"), "[Service]\nExecStart=/bin/k\n").unwrap();
        let svc = load_service(&at_boot, "k.service", &LoadOptions::default()).unwrap();
        assert_eq!(svc.exec_start[0].path, b"/bin/k");
    }

    /// Drop-ins that run the program are left out wherever they sort; a
    /// unit that runs it with none of them left is an error naming files.
    #[test]
    fn drop_ins_running_the_program_are_left_out() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let write = |p: &str, text: &str| {
            let p = search::under(r, Path::new(p));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("/bin/k", "");
        write("/bin/w", "");
        std::os::unix::fs::symlink("w", r.join("bin/w-link")).unwrap();
        let m = std::fs::metadata(r.join("bin/w")).unwrap();
        let opts = LoadOptions {
            skip_dropin: Some("zz-ours.conf".into()),
            skip_running: Some(Program {
                ids: vec![(m.dev(), m.ino())],
                path_is: None,
                what: "the wrapper",
            }),
            ..Default::default()
        };
        let unit = "/etc/systemd/system/k.service";
        let dropins = "/etc/systemd/system/k.service.d";
        write(unit, "[Service]\nExecStart=/bin/k --v=2\n");
        let wrapper = "[Service]\nExecStart=\nExecStart=/bin/w --unit %n\n";
        write(&format!("{dropins}/zz-ours.conf"), wrapper);
        write(&format!("{dropins}/50-old.conf"), wrapper);
        write(
            &format!("{dropins}/zzz-copy.conf"),
            "[Service]\nExecStart=\nExecStart=/bin/w-link\n",
        );
        let paths = UnitPaths::system(r);
        let svc = load_service(&paths, "k.service", &opts).unwrap();
        assert_eq!(svc.exec_start.len(), 1);
        assert_eq!(svc.exec_start[0].path, b"/bin/k");
        let skipped: Vec<String> = svc
            .skipped
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            skipped,
            [
                format!("{dropins}/zz-ours.conf"),
                format!("{dropins}/50-old.conf"),
                format!("{dropins}/zzz-copy.conf"),
            ]
        );
        // Without `skip_running`, the last copy wins, as systemd has it.
        let plain = LoadOptions {
            skip_running: None,
            ..opts.clone()
        };
        let svc = load_service(&paths, "k.service", &plain).unwrap();
        assert_eq!(svc.exec_start[0].path, b"/bin/w-link");

        write(unit, "[Service]\nExecStart=/bin/w --unit %n\n");
        let e = format!(
            "{:#}",
            load_service(&paths, "k.service", &opts).unwrap_err()
        );
        assert!(
            e.starts_with("nothing to start beneath the wrapper: /etc/systemd/system/k.service runs the wrapper too")
                && e.contains("zzz-copy.conf"),
            "{e}"
        );
        write(unit, "[Service]\nType=simple\n");
        let e = format!(
            "{:#}",
            load_service(&paths, "k.service", &opts).unwrap_err()
        );
        assert!(e.contains("no ExecStart= is left"), "{e}");
    }
}
