//! Where kubelet's flags are in an argv (pflag's rules), and the merge of
//! our labels and taints into it.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use super::config::register_with_taints;
use super::labels::{effective_labels, validate_labels};
use super::taints::parse_taints;
use super::{Additions, ArgvPlan, Profile, Taint};

/// Read access to the node's files (the live system, or a tree under a root).
pub trait NodeFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Entries of a directory (full paths), any order.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
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

/// Why our additions cannot go in; the wrapper then starts kubelet unchanged.
#[derive(Debug)]
pub struct MergeError(pub String);

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MergeError {}

fn merge_err<T>(msg: impl Into<String>) -> Result<T, MergeError> {
    Err(MergeError(msg.into()))
}

/// A taint kubelet accepts, which survives the trip through the flag
/// unchanged (a key holding ',' or ':' would turn into other taints).
fn is_flag_safe(t: &Taint) -> bool {
    parse_taints(&t.to_string()).as_deref() == Ok(std::slice::from_ref(t))
}

/// The `*.conf` files under kubelet's `--config-dir`, in the order kubelet
/// merges them (Go's filepath.WalkDir: lexical per directory, depth first).
fn dropin_files(fs: &dyn NodeFs, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), MergeError> {
    let mut entries = fs.list(dir).map_err(|e| {
        MergeError(format!(
            "reading --config-dir {}: {e} (kubelet refuses to start without it)",
            dir.display()
        ))
    })?;
    entries.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    for entry in entries {
        match fs.list(&entry) {
            Ok(_) => dropin_files(fs, &entry, out)?,
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                if entry.extension().is_some_and(|x| x == "conf") {
                    out.push(entry);
                }
            }
            Err(e) => return merge_err(format!("reading {}: {e}", entry.display())),
        }
    }
    Ok(())
}

/// The taints kubelet would register with before our change: the last
/// `--register-with-taints`, else `registerWithTaints` from `--config` and
/// the `--config-dir` drop-ins (a later file replaces the list).
fn existing_taints(scan: &FlagScan, fs: &dyn NodeFs) -> Result<Vec<Taint>, MergeError> {
    if let Some(last) = scan.uses("register-with-taints").last() {
        let Some(value) = last.value.as_deref() else {
            return merge_err(
                "the command line ends with --register-with-taints and no value (kubelet refuses it)",
            );
        };
        return parse_taints(value)
            .map_err(|e| MergeError(format!("the existing --register-with-taints: {e}")));
    }
    let mut files = Vec::new();
    let config = scan.last_value("config").filter(|c| !c.is_empty());
    let has_config = config.is_some();
    files.extend(config.map(PathBuf::from));
    if let Some(dir) = scan.last_value("config-dir").filter(|d| !d.is_empty()) {
        dropin_files(fs, Path::new(dir), &mut files)?;
    }
    let mut taints = Vec::new();
    for (i, file) in files.into_iter().enumerate() {
        let is_config = i == 0 && has_config;
        let bytes = match fs.read(&file) {
            Ok(bytes) => bytes,
            // A missing --config (kubeadm before `join`): kubelet exits
            // without it ("failed to load kubelet config file"), so it
            // registers with no taint of the file; the first start after the
            // file appears merges with it.
            Err(e) if is_config && e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                return merge_err(format!("reading kubelet config {}: {e}", file.display()));
            }
        };
        let text = String::from_utf8(bytes)
            .map_err(|_| MergeError(format!("kubelet config {} is not UTF-8", file.display())))?;
        match register_with_taints(&text) {
            Ok(Some(t)) => taints = t,
            Ok(None) => {}
            Err(e) => {
                return merge_err(format!(
                    "reading registerWithTaints from {}: {e}",
                    file.display()
                ));
            }
        }
        for t in &taints {
            if !is_flag_safe(t) {
                return merge_err(format!(
                    "registerWithTaints in {} has a taint kubelet would refuse: key {:?}, value {:?}",
                    file.display(),
                    t.key,
                    t.value
                ));
            }
        }
    }
    Ok(taints)
}

/// Validate `additions` and merge them into `argv` (argv[0] first).
pub fn apply(
    argv: &[OsString],
    additions: &Additions,
    profile: Profile,
    fs: &dyn NodeFs,
) -> Result<ArgvPlan, MergeError> {
    let mut plan = ArgvPlan {
        argv: argv.to_vec(),
        ..Default::default()
    };
    if additions.labels.is_empty() && additions.taints.is_empty() {
        return Ok(plan);
    }
    let errors = validate_labels(&additions.labels, profile);
    if let Some(first) = errors.first() {
        return merge_err(first.to_string());
    }
    if let Some(bad) = additions.taints.iter().find(|t| !is_flag_safe(t)) {
        return merge_err(format!(
            "taint {bad}: kubelet would refuse it (key {:?}, value {:?})",
            bad.key, bad.value
        ));
    }
    if argv.is_empty() {
        return merge_err("the kubelet command line is empty");
    }
    let labels = effective_labels(&additions.labels);
    let words: Vec<String> = match argv.iter().map(|w| w.clone().into_string()).collect() {
        Ok(w) => w,
        Err(_) => return merge_err("the kubelet command line is not UTF-8"),
    };
    let scan = scan(&words);
    let mut out: Vec<String> = Vec::new();
    let mut skip_until = 0;
    let taint_uses: Vec<&FlagUse> = scan.uses("register-with-taints").collect();

    let mut merged_taints = None;
    if !additions.taints.is_empty() {
        let mut taints = existing_taints(&scan, fs)?;
        for ours in &additions.taints {
            if let Some(pos) = taints
                .iter()
                .position(|t| t.key == ours.key && t.effect == ours.effect)
            {
                plan.warnings
                    .push(format!("taint {} replaces {}", ours, taints[pos]));
                taints.remove(pos);
            }
            taints.push(ours.clone());
        }
        let value = taints
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(",");
        // What kubelet will parse must parse.
        if let Err(e) = parse_taints(&value) {
            return merge_err(e.to_string());
        }
        plan.taints = taints;
        merged_taints = Some(value);
    }

    for (i, word) in words.iter().enumerate() {
        if i < skip_until {
            continue;
        }
        if merged_taints.is_some()
            && let Some(u) = taint_uses.iter().find(|u| u.index == i)
        {
            skip_until = i + u.words;
            continue;
        }
        out.push(word.clone());
    }
    // Our flags go after every flag (our labels win per key) but before a
    // `--` and before a dangling value-taking flag at the very end.
    let removed_before = |idx: usize| {
        if merged_taints.is_none() {
            return 0;
        }
        taint_uses
            .iter()
            .filter(|u| u.index < idx)
            .map(|u| u.words)
            .sum::<usize>()
    };
    let mut at = match scan.terminator {
        Some(t) => t - removed_before(t),
        None => out.len(),
    };
    if let Some(last) = scan.flags.last()
        && last.value.is_none()
        && BOOL_FLAGS.binary_search(&last.name.as_str()).is_err()
        && last.index + 1 == scan.terminator.unwrap_or(words.len())
    {
        at = last.index - removed_before(last.index);
    }
    let at = at.max(scan.start.min(out.len()));
    let mut ours = Vec::new();
    if !labels.is_empty() {
        let words: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        ours.push(format!("--node-labels={}", words.join(",")));
        plan.added_labels = labels;
    }
    if let Some(value) = merged_taints {
        ours.push(format!("--register-with-taints={value}"));
    }
    // kubelet must be exec'able with what we add: each word under the
    // kernel's per-string limit (the total is left to the exec's E2BIG).
    for w in &ours {
        let flag = w.split_once('=').map_or(w.as_str(), |(f, _)| f);
        if let Some(why) = super::arg_limit::too_long(&format!("the {flag}= word"), w.len()) {
            return merge_err(why);
        }
    }
    out.splice(at..at, ours);
    plan.argv = out.into_iter().map(OsString::from).collect();
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::kubelet::TaintEffect;
    use std::collections::BTreeMap;

    #[derive(Default)]
    struct FakeFs(BTreeMap<PathBuf, String>);

    /// Files by path; directories are the parents of files.
    impl NodeFs for FakeFs {
        fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
            if let Some(s) = self.0.get(path) {
                return Ok(s.clone().into_bytes());
            }
            let kind = if self.0.keys().any(|p| p.starts_with(path)) {
                io::ErrorKind::IsADirectory
            } else {
                io::ErrorKind::NotFound
            };
            Err(io::Error::from(kind))
        }
        fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
            if self.0.contains_key(dir) {
                return Err(io::Error::from(io::ErrorKind::NotADirectory));
            }
            let mut v: Vec<PathBuf> = self
                .0
                .keys()
                .filter_map(|p| p.strip_prefix(dir).ok()?.components().next())
                .map(|c| dir.join(c))
                .collect();
            v.dedup();
            if v.is_empty() {
                Err(io::Error::from(io::ErrorKind::NotFound))
            } else {
                Ok(v)
            }
        }
    }

    fn argv(s: &str) -> Vec<OsString> {
        s.split(' ').map(OsString::from).collect()
    }

    fn words(p: &ArgvPlan) -> String {
        p.argv
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn adds(labels: &[(&str, &str)], taints: &str) -> Additions {
        Additions {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            taints: parse_taints(taints).unwrap(),
        }
    }

    fn run(cmd: &str, a: &Additions, fs: &FakeFs) -> Result<String, MergeError> {
        apply(&argv(cmd), a, Profile::Upstream, fs).map(|p| words(&p))
    }

    #[test]
    fn empty_additions_change_nothing() {
        let fs = FakeFs::default();
        assert_eq!(
            run("/k --a=1 -- x", &Additions::default(), &fs).unwrap(),
            "/k --a=1 -- x"
        );
    }

    #[test]
    fn labels_go_last_but_before_terminator() {
        let fs = FakeFs::default();
        let a = adds(&[("example.com/a", "1"), ("b", "")], "");
        assert_eq!(
            run("/k --v=2", &a, &fs).unwrap(),
            "/k --v=2 --node-labels=example.com/a=1,b="
        );
        assert_eq!(
            run("/k --v=2 -- --x", &a, &fs).unwrap(),
            "/k --v=2 --node-labels=example.com/a=1,b= -- --x"
        );
        assert_eq!(
            run("/k", &a, &fs).unwrap(),
            "/k --node-labels=example.com/a=1,b="
        );
    }

    #[test]
    fn wrapper_chain_and_openshift_trailing_comma_kept() {
        let fs = FakeFs::default();
        let a = adds(&[("node.kubernetes.io/worker-gpu", "")], "");
        let cmd = "/usr/local/bin/kubenswrapper /usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf \
                   --node-labels=node-role.kubernetes.io/worker,node.openshift.io/os_id=rhcos, --v=2";
        let cmd = cmd.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            run(&cmd, &a, &fs).unwrap(),
            format!("{cmd} --node-labels=node.kubernetes.io/worker-gpu=")
        );
        let s = scan(&cmd.split(' ').map(String::from).collect::<Vec<_>>());
        assert_eq!(s.start, 2);
    }

    #[test]
    fn dangling_value_flag_at_end_stays_last() {
        let fs = FakeFs::default();
        let a = adds(&[("b", "")], "");
        assert_eq!(
            run("/k --a=1 --v", &a, &fs).unwrap(),
            "/k --a=1 --node-labels=b= --v"
        );
        // a bool flag at the end takes no value: append after it
        assert_eq!(
            run("/k --fail-swap-on", &a, &fs).unwrap(),
            "/k --fail-swap-on --node-labels=b="
        );
    }

    #[test]
    fn taints_merge_into_exactly_one_flag() {
        let fs = FakeFs::default();
        let a = adds(&[], "ours=x:NoSchedule");
        assert_eq!(
            run("/k --register-with-taints=a=:NoSchedule --v 2 --register-with-taints b:NoExecute --x=1", &a, &fs)
                .unwrap(),
            "/k --v 2 --x=1 --register-with-taints=b=:NoExecute,ours=x:NoSchedule"
        );
        // an empty last flag cleared the list
        assert_eq!(
            run(
                "/k --register-with-taints=a:NoSchedule --register_with_taints=",
                &a,
                &fs
            )
            .unwrap(),
            "/k --register-with-taints=ours=x:NoSchedule"
        );
    }

    #[test]
    fn our_taint_replaces_same_key_and_effect() {
        let fs = FakeFs::default();
        let a = adds(&[], "a=new:NoSchedule");
        let p = apply(
            &argv("/k --register-with-taints=a=old:NoSchedule,a:NoExecute"),
            &a,
            Profile::Upstream,
            &fs,
        )
        .unwrap();
        assert_eq!(
            words(&p),
            "/k --register-with-taints=a=:NoExecute,a=new:NoSchedule"
        );
        assert_eq!(p.warnings.len(), 1);
        assert_eq!(p.taints.len(), 2);
    }

    #[test]
    fn taints_from_config_file_and_config_dir() {
        let mut fs = FakeFs::default();
        fs.0.insert(
            "/etc/k.yaml".into(),
            "registerWithTaints:\n- key: f\n  effect: NoSchedule\n".into(),
        );
        let a = adds(&[], "ours:NoExecute");
        assert_eq!(
            run("/k --config /etc/k.yaml", &a, &fs).unwrap(),
            "/k --config /etc/k.yaml --register-with-taints=f=:NoSchedule,ours=:NoExecute"
        );
        fs.0.insert(
            "/etc/d/20.conf".into(),
            r#"{"registerWithTaints":[{"key":"d","effect":"PreferNoSchedule"}]}"#.into(),
        );
        fs.0.insert("/etc/d/10.conf".into(), "maxPods: 1\n".into());
        fs.0.insert("/etc/d/30.txt".into(), "registerWithTaints: []\n".into());
        assert_eq!(
            run("/k --config=/etc/k.yaml --config-dir=/etc/d", &a, &fs).unwrap(),
            "/k --config=/etc/k.yaml --config-dir=/etc/d --register-with-taints=d=:PreferNoSchedule,ours=:NoExecute"
        );
        // the flag wins over the file
        assert_eq!(
            run("/k --config=/etc/k.yaml --register-with-taints=", &a, &fs).unwrap(),
            "/k --config=/etc/k.yaml --register-with-taints=ours=:NoExecute"
        );
    }

    #[test]
    fn unreadable_config_refuses_only_when_adding_taints() {
        // A directory where the file should be: kubelet cannot read it either.
        let fs = FakeFs([(PathBuf::from("/dir/f"), String::new())].into());
        let e = run("/k --config=/dir", &adds(&[], "a:NoSchedule"), &fs).unwrap_err();
        assert!(e.to_string().contains("/dir"), "{e}");
        assert!(run("/k --config=/dir", &adds(&[("a", "")], ""), &fs).is_ok());
    }

    /// kubeadm before `join`: no --config file, kubelet exits at every
    /// start, and there are no taints of the file to keep; ours go in.
    #[test]
    fn a_missing_config_has_no_taints_to_keep() {
        let fs = FakeFs::default();
        assert_eq!(
            run("/k --config=/missing", &adds(&[], "a:NoSchedule"), &fs).unwrap(),
            "/k --config=/missing --register-with-taints=a=:NoSchedule"
        );
        // A missing --config-dir is still a reason to leave ours out.
        assert!(run("/k --config-dir=/e", &adds(&[], "a:NoSchedule"), &fs).is_err());
    }

    #[test]
    fn bad_label_is_refused_with_its_name() {
        let fs = FakeFs::default();
        let e = run(
            "/k",
            &adds(&[("node-role.kubernetes.io/infra", "")], ""),
            &fs,
        )
        .unwrap_err();
        assert!(e.to_string().contains("node-role.kubernetes.io/infra"));
        let ok = apply(
            &argv("/k"),
            &adds(&[("node-role.kubernetes.io/worker", "")], ""),
            Profile::OpenShift,
            &fs,
        );
        assert!(ok.is_ok());
    }

    #[test]
    fn pflag_scan_forms() {
        let w: Vec<String> =
            "/k --node-labels --register-with-taints=x:NoSchedule --node_labels=a=1 -- --config=z"
                .split(' ')
                .map(String::from)
                .collect();
        let s = scan(&w);
        assert_eq!(s.terminator, Some(4));
        let labels: Vec<_> = s
            .uses("node-labels")
            .map(|f| f.value.clone().unwrap())
            .collect();
        assert_eq!(labels, vec!["--register-with-taints=x:NoSchedule", "a=1"]);
        assert_eq!(s.last_value("config"), None);
        let _ = TaintEffect::NoSchedule;
    }

    fn scan_of(cmd: &str) -> FlagScan {
        scan(&cmd.split(' ').map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn shorthands_v_and_h() {
        let s = scan_of("/k -v 4 --a=1");
        assert_eq!(s.last_value("v"), Some("4"));
        assert_eq!(s.flags.len(), 2);
        assert_eq!(scan_of("/k -v4").last_value("v"), Some("4"));
        assert_eq!(scan_of("/k -v=4").last_value("v"), Some("4"));
        assert_eq!(scan_of("/k -v=").last_value("v"), Some("="));
        let s = scan_of("/k -hv 4");
        assert_eq!(s.uses("help").count(), 1);
        assert_eq!(s.last_value("v"), Some("4"));
        let s = scan_of("/k -node-labels=a=1");
        assert!(s.flags.is_empty());
        assert_eq!(
            s.refused,
            vec![(
                1,
                "unknown shorthand flag: 'n' in -node-labels=a=1".to_string()
            )]
        );
        assert_eq!(scan_of("/k ---x").refused[0].1, "bad flag syntax: ---x");
        assert_eq!(scan_of("/k --=x").refused[0].1, "bad flag syntax: --=x");
    }

    #[test]
    fn wrapper_chains_are_skipped() {
        assert_eq!(scan_of("/usr/bin/hyperkube kubelet --v=2").start, 2);
        assert_eq!(scan_of("/usr/bin/kubelet --v=2").start, 1);
        assert_eq!(scan_of("/usr/bin/kubelet").start, 1);
        let fs = FakeFs::default();
        assert_eq!(
            run(
                "/usr/bin/hyperkube kubelet --v=2",
                &adds(&[("a", "1")], ""),
                &fs
            )
            .unwrap(),
            "/usr/bin/hyperkube kubelet --v=2 --node-labels=a=1"
        );
        assert_eq!(
            run(
                "/usr/local/bin/kubenswrapper /usr/bin/kubelet",
                &adds(&[("a", "1")], ""),
                &fs
            )
            .unwrap(),
            "/usr/local/bin/kubenswrapper /usr/bin/kubelet --node-labels=a=1"
        );
    }

    #[test]
    fn value_words_stay_with_their_flags() {
        let fs = FakeFs::default();
        let a = adds(&[("a", "1")], "t:NoSchedule");
        // a dangling -v would take our flag as its value: go before it
        assert_eq!(
            run("/k --x=1 -v", &a, &fs).unwrap(),
            "/k --x=1 --node-labels=a=1 --register-with-taints=t=:NoSchedule -v"
        );
        // `--node-labels VALUE` and `--register-with-taints VALUE`
        assert_eq!(
            run(
                "/k --node-labels b=2 --register-with-taints e:NoExecute -v 3",
                &a,
                &fs
            )
            .unwrap(),
            "/k --node-labels b=2 -v 3 --node-labels=a=1 --register-with-taints=e=:NoExecute,t=:NoSchedule"
        );
        // a value word that looks like the taint flag is a value, not a flag
        assert_eq!(
            run(
                "/k --hostname-override --register-with-taints=x:NoSchedule",
                &a,
                &fs
            )
            .unwrap(),
            "/k --hostname-override --register-with-taints=x:NoSchedule --node-labels=a=1 --register-with-taints=t=:NoSchedule"
        );
        // taint flags after `--` are positional words: left alone, ours go before `--`
        assert_eq!(
            run(
                "/k --register-with-taints=a:NoSchedule -- --register-with-taints=b:NoSchedule",
                &a,
                &fs
            )
            .unwrap(),
            "/k --node-labels=a=1 --register-with-taints=a=:NoSchedule,t=:NoSchedule -- --register-with-taints=b:NoSchedule"
        );
    }

    #[test]
    fn exactly_one_taint_flag_from_many() {
        let fs = FakeFs::default();
        let a = adds(&[], "t:NoSchedule");
        let out = run(
            "/k --register-with-taints=a:NoSchedule --register_with_taints b:NoSchedule --x=1 --register-with-taints=c:NoExecute,d=e:PreferNoSchedule --y=2",
            &a,
            &fs,
        )
        .unwrap();
        assert_eq!(
            out,
            "/k --x=1 --y=2 --register-with-taints=c=:NoExecute,d=e:PreferNoSchedule,t=:NoSchedule"
        );
        assert_eq!(out.matches("--register-with-taints").count(), 1);
        // an earlier flag that kubelet's last one replaces may be anything that parses
        assert!(
            run(
                "/k --register-with-taints=bad --register-with-taints=a:NoSchedule",
                &a,
                &fs
            )
            .is_ok()
        );
        // a bad effective flag or a dangling one: refuse
        let e = run("/k --register-with-taints=a:nope", &a, &fs).unwrap_err();
        assert!(e.to_string().contains("a:nope"), "{e}");
        let e = run("/k --register-with-taints", &a, &fs).unwrap_err();
        assert!(e.to_string().contains("no value"), "{e}");
    }

    #[test]
    fn labels_only_do_not_touch_taints_or_config() {
        let fs = FakeFs::default();
        let a = adds(&[("a", "1")], "");
        let cmd =
            "/k --config=/missing --register-with-taints=x:NoSchedule --register-with-taints=bogus";
        let p = apply(&argv(cmd), &a, Profile::Upstream, &fs).unwrap();
        assert_eq!(words(&p), format!("{cmd} --node-labels=a=1"));
        assert!(p.taints.is_empty());
    }

    #[test]
    fn our_labels_win_and_are_one_per_key() {
        let fs = FakeFs::default();
        let a = adds(&[("a", "1"), ("b", ""), ("a", "2")], "");
        let p = apply(&argv("/k --node-labels=a=0"), &a, Profile::Upstream, &fs).unwrap();
        assert_eq!(words(&p), "/k --node-labels=a=0 --node-labels=a=2,b=");
        assert_eq!(
            p.added_labels,
            vec![
                ("a".to_string(), "2".to_string()),
                ("b".to_string(), String::new())
            ]
        );
    }

    #[test]
    fn config_taints_edge_cases() {
        let mut fs = FakeFs::default();
        let a = adds(&[], "ours:NoExecute");
        // a later drop-in, also in a subdirectory, replaces the list; `null` clears it
        fs.0.insert(
            "/c.yaml".into(),
            "registerWithTaints: [{key: base, effect: NoSchedule}]\n".into(),
        );
        fs.0.insert(
            "/d/10.conf".into(),
            "registerWithTaints: [{key: ten, effect: NoSchedule}]\n".into(),
        );
        fs.0.insert(
            "/d/20/x.conf".into(),
            "registerWithTaints: [{key: sub, effect: NoSchedule}]\n".into(),
        );
        fs.0.insert("/d/20.conf".into(), "maxPods: 3\n".into());
        fs.0.insert(
            "/d/15.conf.bak".into(),
            "registerWithTaints: [{key: bak, effect: NoSchedule}]\n".into(),
        );
        assert_eq!(
            run("/k --config=/c.yaml --config-dir=/d", &a, &fs).unwrap(),
            "/k --config=/c.yaml --config-dir=/d --register-with-taints=sub=:NoSchedule,ours=:NoExecute"
        );
        fs.0.insert("/d/30.conf".into(), "{\"registerWithTaints\": null}".into());
        assert_eq!(
            run("/k --config=/c.yaml --config-dir=/d", &a, &fs).unwrap(),
            "/k --config=/c.yaml --config-dir=/d --register-with-taints=ours=:NoExecute"
        );
        // --config-dir alone, and empty --config/--config-dir values mean none
        assert_eq!(
            run("/k --config= --config-dir=/d/20", &a, &fs).unwrap(),
            "/k --config= --config-dir=/d/20 --register-with-taints=sub=:NoSchedule,ours=:NoExecute"
        );
        // a missing --config-dir: kubelet refuses to start, so do we
        let e = run("/k --config-dir=/nope", &a, &fs).unwrap_err();
        assert!(e.to_string().contains("/nope"), "{e}");
        // unparsable, or a taint that would not survive the flag
        fs.0.insert("/bad.yaml".into(), "registerWithTaints: [\n".into());
        let e = run("/k --config /bad.yaml", &a, &fs).unwrap_err();
        assert!(e.to_string().contains("/bad.yaml"), "{e}");
        fs.0.insert(
            "/sneaky.yaml".into(),
            "registerWithTaints:\n- key: \"a=b:NoSchedule,c\"\n  effect: NoExecute\n".into(),
        );
        let e = run("/k --config /sneaky.yaml", &a, &fs).unwrap_err();
        assert!(e.to_string().contains("kubelet would refuse"), "{e}");
        fs.0.insert(
            "/badvalue.json".into(),
            r#"{"registerWithTaints":[{"key":"a","value":"-x","effect":"NoSchedule"}]}"#.into(),
        );
        assert!(run("/k --config /badvalue.json", &a, &fs).is_err());
        // a config duplicate of <key,effect> would be refused by the API server
        fs.0.insert(
            "/dup.yaml".into(),
            "registerWithTaints: [{key: a, effect: NoSchedule}, {key: a, value: b, effect: NoSchedule}]\n".into(),
        );
        assert!(run("/k --config /dup.yaml", &a, &fs).is_err());
    }

    #[test]
    fn our_taints_are_checked_before_anything_is_read() {
        let fs = FakeFs::default();
        let mut a = adds(&[], "");
        a.taints.push(crate::node::kubelet::taint(
            "a:NoSchedule,b",
            "",
            TaintEffect::NoExecute,
        ));
        let e = run("/k --config=/missing", &a, &fs).unwrap_err();
        assert!(e.to_string().contains("a:NoSchedule,b"), "{e}");
        a.taints[0] = crate::node::kubelet::taint("a", "-x", TaintEffect::NoExecute);
        assert!(run("/k", &a, &fs).is_err());
        let ok = adds(&[("a", "")], "");
        assert!(apply(&[], &ok, Profile::Upstream, &fs).is_err());
    }
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
