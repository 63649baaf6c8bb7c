//! Where kubelet's flags are in an argv (pflag's rules); `apply` merges our
//! labels and taints into it.

use std::ffi::OsString;
use std::io;
use std::path::Path;

mod apply;
mod config_dir;
mod existing;
mod merge_error;
pub use apply::{MergeError, apply, apply_fencing};

/// Read access to the node's files (the live system, or a tree under a root).
pub trait NodeFs {
    /// The whole file, at most `limit` bytes: a longer one is refused
    /// (`FileTooLarge`) after at most `limit + 1` bytes are read.
    fn read(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>>;
    /// Entries of a directory (names), any order, each with whether it
    /// is a directory itself: a link to one is not (Go's `os.ReadDir`).
    /// The directory's size is charged to `bytes_left` first, and one past
    /// it is refused unlisted (`FileTooLarge`, `nodefs::config_dir_entries`).
    fn list(&self, dir: &Path, bytes_left: &mut u64) -> io::Result<Vec<(OsString, bool)>>;
    /// Whether `path` is a directory as Go's `os.Lstat` sees it: a link at
    /// its end is not followed (a link to a directory is none), unless the
    /// path ends in `/`, `.` or `..`, which lstat(2) follows.
    fn is_dir(&self, path: &Path) -> io::Result<bool>;
}

// kubelet's flags that take no value word, generated from its sources by
// gen-bool-flags.sh: `--flag` with no `=` takes no value word. Any other long
// flag written without `=` takes the next word as its value, even one
// starting with `--` (pflag).
use super::bool_flags::BOOL_FLAGS;

/// One flag in argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagUse {
    /// Index of the flag word.
    pub index: usize,
    /// Long name with `_` normalised to `-` (kubelet's WordSepNormalizeFunc);
    /// the shorthands `-v` and `-h` are `v` and `help`.
    pub name: String,
    /// The value: inline after `=`, or the next word; None when missing.
    pub value: Option<String>,
    /// 1, or 2 when the value is the next word.
    pub words: usize,
}

/// The flags of a kubelet command line.
#[derive(Debug, Clone, Default)]
pub struct FlagScan {
    pub flags: Vec<FlagUse>,
    /// Index of a `--` terminator.
    pub terminator: Option<usize>,
    /// Index of the first flag word (after argv[0] and any wrapper chain
    /// such as `kubenswrapper /usr/bin/kubelet` or `hyperkube kubelet`).
    pub start: usize,
    /// Words pflag refuses before the terminator (index, kubelet's reason):
    /// an unknown shorthand such as `-node-labels`, or bad flag syntax.
    pub refused: Vec<(usize, String)>,
}

fn long_flag(word: &str) -> Option<(String, Option<String>)> {
    let body = word
        .strip_prefix("--")
        .filter(|b| !b.is_empty() && !b.starts_with(['-', '=']))?;
    let (name, value) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (body, None),
    };
    let name = if name.contains('_') {
        name.replace('_', "-")
    } else {
        name.to_string()
    };
    Some((name, value))
}

/// A shorthand cluster (`-v`, `-v4`, `-v=4`, `-hv 4`): kubelet's only
/// shorthands are `-h` (help) and `-v` (verbosity, takes a value).
enum Short {
    /// The flags it sets; `v` without a value takes the next word.
    Flags(Vec<(&'static str, Option<String>)>),
    /// pflag's error for it.
    Unknown(String),
}

fn short_flags(word: &str) -> Short {
    let cluster = &word[1..];
    let mut out = Vec::new();
    for (i, c) in cluster.char_indices() {
        match c {
            'h' => out.push(("help", None)),
            'v' => {
                // pflag: `-v=4` and `-v4` are inline values (`-v=` is "=").
                let rest = &cluster[i + 1..];
                let value = match rest.strip_prefix('=') {
                    Some(v) if !v.is_empty() => Some(v.to_string()),
                    _ if !rest.is_empty() => Some(rest.to_string()),
                    _ => None,
                };
                out.push(("v", value));
                return Short::Flags(out);
            }
            other => {
                return Short::Unknown(format!("unknown shorthand flag: '{other}' in {word}"));
            }
        }
    }
    Short::Flags(out)
}

/// The last path component of a command word.
fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Options of OpenShift's `kubenswrapper` (the kubensenter script) that it
/// consumes before its command; it then runs `nsenter [--mount=…] "$@"`,
/// and nsenter stops its own parsing at the first non-option word.
const KUBENSENTER_OPTIONS: &[&str] = &["-v", "--verbose", "-q", "--quiet"];

/// Where kubelet's own arguments start in `argv`, when we can tell that
/// they reach kubelet unchanged; `program` is what runs (the executable,
/// which `@` in `ExecStart=` may name apart from argv[0]). Else why not.
///
/// The rule: `program` is kubelet itself (basename `kubelet`, any path),
/// or a launcher known to exec its remaining argv unchanged, directly in
/// front of a word with basename `kubelet`:
/// - `kubenswrapper` / `kubensenter` (OpenShift), after its own `-v`/`-q`;
/// - `hyperkube kubelet` (older OpenShift and Kubernetes);
/// - `env NAME=VALUE… kubelet`: POSIX env sets the assignments and execs
///   the first other word with the rest unchanged. Options of env are not
///   accepted: `-S` splits a string as a shell would.
///
/// Anything else (`sh -c '…'`, a script with another name) may do anything
/// with words appended to it: a shell makes them `$0`, `$1`, … of a script
/// that may never pass them on.
pub fn kubelet_args_start(program: &str, argv: &[String]) -> Result<usize, String> {
    let rest = argv.get(1..).unwrap_or_default();
    let launcher = basename(program);
    let not_kubelet = |found: Option<&String>, hint: &str| {
        Err(format!(
            "the original ExecStart= runs {launcher} with {} where kubelet was expected{hint}, \
             so flags added to it might never reach kubelet",
            found.map_or("nothing".to_string(), |w| format!("{w:?}"))
        ))
    };
    let after_kubelet = |skipped: usize, hint: &str| match rest.get(skipped) {
        Some(w) if basename(w) == "kubelet" => Ok(skipped + 2),
        found => not_kubelet(found, hint),
    };
    match launcher {
        "kubelet" => Ok(1),
        "kubenswrapper" | "kubensenter" => after_kubelet(
            rest.iter()
                .take_while(|w| KUBENSENTER_OPTIONS.contains(&w.as_str()))
                .count(),
            "",
        ),
        // hyperkube's subcommand is a name, not a path.
        "hyperkube" if rest.first().is_some_and(|w| w == "kubelet") => Ok(2),
        "hyperkube" => not_kubelet(rest.first(), " (as its subcommand)"),
        "env" => after_kubelet(
            rest.iter()
                .take_while(|w| w.contains('=') && !w.starts_with('-'))
                .count(),
            " (env may carry only NAME=VALUE words before it)",
        ),
        _ => Err(format!(
            "the original ExecStart= runs {program}, which is neither kubelet nor a launcher \
             known to pass its arguments to kubelet unchanged (kubenswrapper, hyperkube kubelet, \
             env NAME=VALUE… kubelet), so flags added to it might never reach kubelet"
        )),
    }
}

/// Scan argv as pflag would (interspersed flags, `--` ends them).
pub fn scan(argv: &[String]) -> FlagScan {
    // Where kubelet's arguments start, by the launcher rule; for a command
    // line it does not cover (a pasted one in `validate`), kubelet takes no
    // positional words, so leading ones are the chain that execs it.
    let start = argv
        .first()
        .and_then(|program| kubelet_args_start(program, argv).ok())
        .unwrap_or_else(|| {
            argv.iter()
                .skip(1)
                .position(|w| w.starts_with('-'))
                .map_or(argv.len(), |p| p + 1)
        });
    let mut scan = FlagScan {
        start,
        ..Default::default()
    };
    let mut i = start;
    while i < argv.len() {
        let word = &argv[i];
        if word == "--" {
            scan.terminator = Some(i);
            break;
        }
        // (name, inline value, takes the next word when there is no inline value)
        let uses: Vec<(String, Option<String>, bool)> = if word.starts_with("--") {
            match long_flag(word) {
                Some((name, inline)) => {
                    // Sorted (byte order, a unit test checks): a binary search
                    // instead of a compare per entry, for every flag at boot.
                    let takes = BOOL_FLAGS.binary_search(&name.as_str()).is_err();
                    vec![(name, inline, takes)]
                }
                None => {
                    scan.refused.push((i, format!("bad flag syntax: {word}")));
                    Vec::new()
                }
            }
        } else if word.len() > 1 && word.starts_with('-') {
            match short_flags(word) {
                Short::Flags(f) => f
                    .into_iter()
                    .map(|(n, v)| (n.to_string(), v, n == "v"))
                    .collect(),
                Short::Unknown(why) => {
                    scan.refused.push((i, why));
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        let mut words = 1;
        for (name, inline, takes_next) in uses {
            let value = match inline {
                Some(v) => Some(v),
                None if takes_next => argv.get(i + 1).cloned().inspect(|_| words = 2),
                None => None,
            };
            scan.flags.push(FlagUse {
                index: i,
                name,
                value,
                words,
            });
        }
        i += words;
    }
    scan
}

impl FlagScan {
    pub fn uses<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a FlagUse> + 'a {
        self.flags.iter().filter(move |f| f.name == name)
    }

    pub fn last_value<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        self.uses(name).last().and_then(|f| f.value.as_deref())
    }
}

/// Whether kubelet with this argv could register a Node (and so could have
/// refused our labels): its `--config` file exists, and so does one of
/// `--kubeconfig`/`--bootstrap-kubeconfig` when either is named. kubeadm's
/// kubelet before `join` has neither and fails or runs unregistered.
pub fn can_register(argv: &[String], exists: &dyn Fn(&Path) -> bool) -> bool {
    let scan = scan(argv);
    let named = |flag: &'static str| scan.last_value(flag).filter(|v| !v.is_empty());
    if named("config").is_some_and(|c| !exists(Path::new(c))) {
        return false;
    }
    let kubeconfigs: Vec<&str> = ["kubeconfig", "bootstrap-kubeconfig"]
        .iter()
        .filter_map(|f| named(f))
        .collect();
    kubeconfigs.is_empty() || kubeconfigs.iter().any(|k| exists(Path::new(k)))
}

#[cfg(test)]
mod bool_flag_tests {
    use super::*;

    fn scan_of(cmd: &str) -> FlagScan {
        scan(&cmd.split(' ').map(String::from).collect::<Vec<_>>())
    }

    /// The generated list: sorted, one entry a flag, each naming the file
    /// that registers it or `removed`, with the source in the header.
    #[test]
    fn generated_list_is_well_formed() {
        let text = include_str!("../bool_flags.rs");
        assert!(text.starts_with("// Generated by src/node/kubelet/gen-bool-flags.sh"));
        let entries: Vec<(&str, &str)> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix('"'))
            .map(|l| l.split_once("\", // ").expect(l))
            .collect();
        let names: Vec<&str> = entries.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, BOOL_FLAGS);
        assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted, unique");
        for (name, source) in &entries {
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{name}: not normalised"
            );
            assert!(
                *source == "removed" || source.ends_with(".go"),
                "{name}: {source}"
            );
        }
    }

    #[test]
    fn known_bools_in_known_values_out() {
        // cpu-cfs-quota was missed once; contention-profiling, and cadvisor's
        // log-cadvisor-usage and storage-driver-secure, by the hand-kept list.
        for b in [
            "cpu-cfs-quota",
            "contention-profiling",
            "log-cadvisor-usage",
            "storage-driver-secure",
            "fail-swap-on",
            "register-node",
            "help",
            "version",
            "logtostderr",
        ] {
            assert!(BOOL_FLAGS.contains(&b), "{b}");
        }
        for v in [
            "config",
            "config-dir",
            "kubeconfig",
            "node-labels",
            "register-with-taints",
            "hostname-override",
            "v",
            "vmodule",
            "feature-gates",
            "cpu-cfs-quota-period",
            "housekeeping-interval",
            "storage-driver-host",
        ] {
            assert!(!BOOL_FLAGS.contains(&v), "{v}");
        }
    }

    /// pflag: a bool (NoOptDefVal "true") takes a value only after `=`;
    /// `--flag false` leaves "false" as a positional word, which kubelet
    /// refuses (`unknown command "false"`).
    #[test]
    fn bools_take_values_only_inline() {
        let s = scan_of("/k --fail-swap-on=false --config /c");
        assert_eq!(s.last_value("fail-swap-on"), Some("false"));
        assert_eq!(s.last_value("config"), Some("/c"));
        let s = scan_of("/k --cpu-cfs-quota false --config /c");
        let quota = s.uses("cpu-cfs-quota").next().unwrap();
        assert_eq!((quota.value.as_deref(), quota.words), (None, 1));
        assert_eq!(s.last_value("config"), Some("/c"));
        assert_eq!(s.flags.len(), 2, "\"false\" is no flag: {:?}", s.flags);
        // --version is a tri-state with NoOptDefVal: the same rule
        let s = scan_of("/k --version --contention-profiling --hostname-override n");
        assert_eq!(s.last_value("hostname-override"), Some("n"));
        // a value flag takes the next word, even a flag
        let s = scan_of("/k --cpu-cfs-quota-period --fail-swap-on");
        assert_eq!(s.last_value("cpu-cfs-quota-period"), Some("--fail-swap-on"));
    }
}

#[cfg(test)]
mod launcher_tests {
    use super::*;

    fn start(cmd: &str) -> Result<usize, String> {
        let argv: Vec<String> = cmd.split(' ').map(String::from).collect();
        kubelet_args_start(&argv[0], &argv)
    }

    #[test]
    fn kubelet_itself_at_any_path() {
        assert_eq!(start("/usr/bin/kubelet --v=2"), Ok(1));
        assert_eq!(start("kubelet"), Ok(1));
        assert_eq!(start("/opt/k8s/1.31/bin/kubelet --config=/c"), Ok(1));
        // the executable counts, not argv[0] (`ExecStart=@/usr/bin/kubelet k8s …`)
        let argv = vec!["k8s".to_string(), "--v=2".to_string()];
        assert_eq!(kubelet_args_start("/usr/bin/kubelet", &argv), Ok(1));
        assert!(kubelet_args_start("/bin/sh", &["kubelet".to_string()]).is_err());
    }

    #[test]
    fn known_launchers_in_front_of_kubelet() {
        assert_eq!(
            start("/usr/local/bin/kubenswrapper /usr/bin/kubelet --config=/c"),
            Ok(2)
        );
        assert_eq!(
            start("/usr/local/bin/kubenswrapper -v --quiet /usr/bin/kubelet"),
            Ok(4)
        );
        assert_eq!(start("/usr/bin/kubensenter kubelet --v=2"), Ok(2));
        assert_eq!(start("/usr/bin/hyperkube kubelet --v=2"), Ok(2));
        assert_eq!(start("/usr/bin/env kubelet --v=2"), Ok(2));
        assert_eq!(
            start("/usr/bin/env A=1 B= C==x /usr/bin/kubelet --v=2"),
            Ok(5)
        );
    }

    #[test]
    fn anything_else_is_refused_with_the_reason() {
        for cmd in [
            "/bin/sh -c kubelet --v=2",
            "/bin/bash -c exec\x20kubelet\x20\"$@\" sh --v=2",
            "/usr/local/bin/start-kubelet.sh --v=2",
            "/usr/bin/recx --v=2",
            // a launcher whose command is not kubelet
            "/usr/local/bin/kubenswrapper /bin/sh -c kubelet",
            "/usr/local/bin/kubenswrapper -h /usr/bin/kubelet",
            "/usr/local/bin/kubenswrapper",
            "/usr/bin/hyperkube kube-proxy --v=2",
            "/usr/bin/hyperkube /usr/bin/kubelet",
            // env with options (`-S` splits a string like a shell), or a shell after it
            "/usr/bin/env -i kubelet",
            "/usr/bin/env -S kubelet\x20--v=2",
            "/usr/bin/env -- kubelet",
            "/usr/bin/env A=1 sh -c kubelet",
            "/usr/bin/env A=1",
            // kubelet must be the word's last component, not part of it
            "/usr/bin/kubelet.sh --v=2",
            "/usr/bin/env kubelet-wrapper",
        ] {
            let e = start(cmd).unwrap_err();
            assert!(e.contains("might never reach kubelet"), "{cmd}: {e}");
        }
        let e = start("/bin/sh -c kubelet").unwrap_err();
        assert!(e.contains("runs /bin/sh"), "{e}");
        let e = start("/usr/bin/hyperkube /usr/bin/kubelet").unwrap_err();
        assert!(e.contains("hyperkube with \"/usr/bin/kubelet\""), "{e}");
        let e = start("/usr/bin/env -i kubelet").unwrap_err();
        assert!(e.contains("\"-i\"") && e.contains("NAME=VALUE"), "{e}");
    }

    #[test]
    fn scan_starts_after_the_launcher() {
        // kubensenter's -v is its own; kubelet's flags start after kubelet
        let w: Vec<String> = "/usr/local/bin/kubenswrapper -v /usr/bin/kubelet -v 3"
            .split(' ')
            .map(String::from)
            .collect();
        let s = scan(&w);
        assert_eq!(s.start, 3);
        assert_eq!(s.last_value("v"), Some("3"));
        assert_eq!(s.flags.len(), 1);
    }
}

#[cfg(test)]
mod can_register_tests {
    use super::*;

    fn argv(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn kubeadm_before_and_after_join() {
        let cmd = argv(&[
            "/usr/bin/kubelet",
            "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
            "--kubeconfig=/etc/kubernetes/kubelet.conf",
            "--config=/var/lib/kubelet/config.yaml",
        ]);
        assert!(!can_register(&cmd, &|_| false));
        // Config written, kubeconfigs not yet: still no registration.
        assert!(!can_register(&cmd, &|p| p.ends_with("config.yaml")));
        assert!(can_register(&cmd, &|p| !p.ends_with("kubelet.conf")));
        assert!(can_register(&cmd, &|_| true));
        // Unnamed files are not required.
        assert!(can_register(&argv(&["kubelet", "--v=2"]), &|_| false));
        // `--cpu-cfs-quota` is boolean: the config after it is a flag.
        let bools = argv(&["kubelet", "--cpu-cfs-quota", "--config", "/c"]);
        assert!(!can_register(&bools, &|_| false));
    }
}
