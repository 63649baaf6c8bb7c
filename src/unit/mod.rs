//! systemd unit resolution: search path, drop-ins, unit-file syntax,
//! `ExecStart=` parsing, specifiers, `Environment=`/`EnvironmentFile=` and
//! exec-time `$VAR` expansion. Knows nothing of kubelet.
//! See systemd.unit(5), systemd.service(5), systemd.exec(5), systemd.syntax(7).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

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
        let _ = root;
        todo!("unit helper")
    }
    /// A colon-separated list in `$SYSTEMD_UNIT_PATH` style (a trailing `:`
    /// appends the default list), under `root`.
    pub fn from_list(root: &Path, list: &str) -> Self {
        let _ = (root, list);
        todo!("unit helper")
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

/// The service as systemd would load it.
#[derive(Debug, Clone, Default)]
pub struct LoadedService {
    /// Node path of the fragment; None when only drop-ins exist.
    pub fragment: Option<PathBuf>,
    /// Node paths of the drop-ins that apply, in application order.
    pub dropins: Vec<PathBuf>,
    pub exec_start: Vec<ExecCommand>,
    /// `Type=` as written (None = default).
    pub service_type: Option<String>,
    /// `Environment=` after folding, in order.
    pub environment: Vec<(String, Vec<u8>)>,
    /// `EnvironmentFile=` entries: (node path or glob, optional via `-`).
    pub environment_files: Vec<(String, bool)>,
    pub unset_environment: Vec<String>,
    pub exec_search_path: Option<Vec<PathBuf>>,
    pub syslog_identifier: Option<String>,
    /// Non-fatal problems systemd would log.
    pub warnings: Vec<String>,
}

/// What the unit files' `%` specifiers resolve to.
#[derive(Debug, Clone, Default)]
pub struct SpecifierValues {
    pub values: BTreeMap<char, String>,
}

#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Basename of a drop-in to leave out (the wrapper's own).
    pub skip_dropin: Option<String>,
}

/// Load `unit` as systemd would.
pub fn load_service(
    paths: &UnitPaths,
    unit: &str,
    opts: &LoadOptions,
) -> anyhow::Result<LoadedService> {
    let _ = (paths, unit, opts);
    todo!("unit helper")
}

/// Exec-time `$NAME`/`${NAME}` expansion of argv (systemd's
/// replace_env_argv), unless the command has `:`.
pub fn expand_argv(cmd: &ExecCommand, env: &[(OsString, OsString)]) -> Vec<Vec<u8>> {
    let _ = (cmd, env);
    todo!("unit helper")
}

// TEMP(lead): contract additions, implemented on the unit branch.
pub fn resolve_executable(
    path: &std::ffi::OsStr,
    exec_search_path: Option<&[PathBuf]>,
    root: &Path,
) -> anyhow::Result<PathBuf> {
    let _ = (path, exec_search_path, root);
    todo!()
}
pub fn offline_environment(
    svc: &LoadedService,
    root: &Path,
    manager_env: &[(OsString, OsString)],
) -> anyhow::Result<Vec<(OsString, OsString)>> {
    let _ = (svc, root, manager_env);
    todo!()
}
