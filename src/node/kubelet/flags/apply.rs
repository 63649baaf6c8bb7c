//! The merge of our labels and taints into kubelet's argv, with the taints
//! kubelet already registers with (flags, `--config`, `--config-dir`).

use std::ffi::OsString;

use super::existing::existing_taints;
pub use super::merge_error::MergeError;
use super::merge_error::merge_err;
use super::*;
use crate::node::kubelet::labels::{effective_labels, validate_labels};
use crate::node::kubelet::taints::parse_taints;
use crate::node::kubelet::{Additions, ArgvPlan, Profile, Replaced, Taint};

/// A taint kubelet accepts, which survives the trip through the flag
/// unchanged (a key holding ',' or ':' would turn into other taints).
fn is_flag_safe(t: &Taint) -> bool {
    parse_taints(&t.to_string()).as_deref() == Ok(std::slice::from_ref(t))
}

/// Validate `additions` and merge them into `argv` (argv[0] first).
pub fn apply(
    argv: &[OsString],
    additions: &Additions,
    profile: Profile,
    fs: &dyn NodeFs,
) -> Result<ArgvPlan, MergeError> {
    apply_with(argv, additions, profile, fs, None)
}

/// [`apply`], failing closed: where the taints kubelet already registers
/// with cannot be read (its `--config` unreadable, say), or with ours pass
/// the kernel's limit on one word, ours and `fence(why)` go in alone (the
/// flag replaces the config's list) instead of the merge failing, and
/// `fenced` says why.
pub fn apply_fencing(
    argv: &[OsString],
    additions: &Additions,
    profile: Profile,
    fs: &dyn NodeFs,
    fence: &dyn Fn(Replaced) -> Taint,
) -> Result<ArgvPlan, MergeError> {
    apply_with(argv, additions, profile, fs, Some(fence))
}

/// `taints` with `ours` merged over them (one per key and effect, ours
/// last), a warning for each of `taints` replaced, and the flag's value.
fn merge_taints(
    mut taints: Vec<Taint>,
    ours: &[Taint],
) -> Result<(Vec<Taint>, Vec<String>, String), MergeError> {
    let mut warnings = Vec::new();
    for ours in ours {
        if let Some(pos) = taints
            .iter()
            .position(|t| t.key == ours.key && t.effect == ours.effect)
        {
            warnings.push(format!("taint {} replaces {}", ours, taints[pos]));
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
    Ok((taints, warnings, value))
}

fn apply_with(
    argv: &[OsString],
    additions: &Additions,
    profile: Profile,
    fs: &dyn NodeFs,
    fence: Option<&dyn Fn(Replaced) -> Taint>,
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
        let existing = match (existing_taints(&scan, fs), fence) {
            (Ok(t), _) => t,
            (Err(e), Some(_)) => {
                plan.fenced = Some((Replaced::Unreadable, e.message));
                Vec::new()
            }
            (Err(e), None) => return Err(e),
        };
        // Ours, and the fence where it is used (one: ours may hold it).
        let ours = |why: Option<Replaced>| {
            let fence = why.zip(fence).map(|(why, f)| f(why)).filter(|f| {
                !additions
                    .taints
                    .iter()
                    .any(|t| t.key == f.key && t.effect == f.effect)
            });
            additions
                .taints
                .iter()
                .cloned()
                .chain(fence)
                .collect::<Vec<_>>()
        };
        let own = existing.len();
        let mut added = ours(plan.fenced.as_ref().map(|f| f.0));
        let mut merged = merge_taints(existing, &added)?;
        // kubelet's own taints with ours over the kernel's limit on one
        // word: exec would fail. Given a fence, they are replaced as when
        // they cannot be read (kubelet registers ours and the fence).
        let what = format!("the --register-with-taints= word with kubelet's own {own} taints");
        let len = "--register-with-taints=".len() + merged.2.len();
        if own > 0
            && let Some(why) = crate::node::kubelet::arg_limit::too_long(&what, len)
        {
            if fence.is_none() {
                return merge_err(why);
            }
            plan.fenced = Some((Replaced::TooLong, why));
            added = ours(Some(Replaced::TooLong));
            merged = merge_taints(Vec::new(), &added)?;
        }
        let (taints, warnings, value) = merged;
        (plan.taints, plan.warnings, plan.added_taints) = (taints, warnings, added);
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
        let what = match &plan.fenced {
            Some((Replaced::TooLong, _)) if flag == "--register-with-taints" => {
                format!("the {flag}= word, even of our taints and the fence alone,")
            }
            _ => format!("the {flag}= word"),
        };
        if let Some(why) = crate::node::kubelet::arg_limit::too_long(&what, w.len()) {
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
    use crate::node::kubelet::flags::existing::past_budget;
    use crate::node::kubelet::{TaintEffect, arg_limit};
    use crate::node::nodefs::MAX_CONFIG_BYTES;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    #[derive(Default)]
    struct FakeFs(BTreeMap<PathBuf, String>);

    /// Files by path; directories are the parents of files, 4 KiB each
    /// (an ext4 directory of a few names).
    impl NodeFs for FakeFs {
        fn read(&self, path: &Path, _: usize) -> io::Result<Vec<u8>> {
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
        fn list(&self, dir: &Path, bytes_left: &mut u64) -> io::Result<Vec<(OsString, bool)>> {
            if self.0.contains_key(dir) {
                return Err(io::Error::from(io::ErrorKind::NotADirectory));
            }
            *bytes_left = bytes_left
                .checked_sub(4096)
                .ok_or_else(|| io::Error::new(io::ErrorKind::FileTooLarge, "past 512 KiB"))?;
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
                Ok(v.into_iter()
                    .map(|p| {
                        let dir = !self.0.contains_key(&p);
                        (p.file_name().unwrap_or_default().to_owned(), dir)
                    })
                    .collect())
            }
        }
        fn is_dir(&self, path: &Path) -> io::Result<bool> {
            self.list(path, &mut { u64::MAX })
                .map(|_| true)
                .or_else(|e| match e.kind() {
                    io::ErrorKind::NotADirectory => Ok(false),
                    _ => Err(e),
                })
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
        const H: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";
        let mut fs = FakeFs::default();
        fs.0.insert(
            "/etc/k.yaml".into(),
            H.to_string() + "registerWithTaints:\n- key: f\n  effect: NoSchedule\n",
        );
        let a = adds(&[], "ours:NoExecute");
        assert_eq!(
            run("/k --config /etc/k.yaml", &a, &fs).unwrap(),
            "/k --config /etc/k.yaml --register-with-taints=f=:NoSchedule,ours=:NoExecute"
        );
        fs.0.insert(
            "/etc/d/20.conf".into(),
            r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","registerWithTaints":[{"key":"d","effect":"PreferNoSchedule"}]}"#.into(),
        );
        fs.0.insert("/etc/d/10.conf".into(), H.to_string() + "maxPods: 1\n");
        fs.0.insert(
            "/etc/d/30.txt".into(),
            H.to_string() + "registerWithTaints: []\n",
        );
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

    /// Review 10 F1: 512 KiB of directories in all, however they are
    /// split (4 KiB each here): at it merged, past it what kubelet
    /// registers with is unknown (config_unreadable: the start is fenced).
    #[test]
    fn config_dir_directories_share_one_size_budget() {
        let mut fs = FakeFs::default();
        let a = adds(&[], "ours:NoExecute");
        for i in 0..127 {
            fs.0.insert(format!("/d/s{i:03}/x.txt").into(), String::new());
        }
        assert!(run("/k --config-dir=/d", &a, &fs).is_ok());
        fs.0.insert("/d/s127/x.txt".into(), String::new());
        let e = run("/k --config-dir=/d", &a, &fs).unwrap_err();
        assert!(e.config_unreadable, "{e}");
        assert!(
            e.message
                .contains("reading --config-dir /d/s127: past 512 KiB"),
            "{e}"
        );
    }

    /// Review 12 F1: one budget of 1 MiB for the --config file and every
    /// drop-in together (FAILS on 4a9fffb, which read each up to 16 MiB
    /// and kept them all): at it merged, one byte past it fenced.
    #[test]
    fn config_and_dropins_share_one_byte_budget() {
        const H: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";
        let padded = |body: &str, size: usize| {
            let fill = size - H.len() - body.len() - 3;
            format!("{H}{body}# {}\n", "a".repeat(fill))
        };
        let mut fs = FakeFs::default();
        let taint = "registerWithTaints:\n- key: f\n  effect: NoSchedule\n";
        fs.0.insert("/k.yaml".into(), padded(taint, MAX_CONFIG_BYTES / 5));
        for i in 0..4 {
            let size = MAX_CONFIG_BYTES / 5 + usize::from(i == 0) * (MAX_CONFIG_BYTES % 5);
            fs.0.insert(format!("/d/{i}.conf").into(), padded("", size));
        }
        let (a, cmd) = (
            adds(&[], "ours:NoExecute"),
            "/k --config=/k.yaml --config-dir=/d",
        );
        let merged = run(cmd, &a, &fs).unwrap();
        assert!(
            merged.ends_with("=f=:NoSchedule,ours=:NoExecute"),
            "{merged}"
        );
        fs.0.insert("/d/4.conf".into(), "\n".into());
        let e = run(cmd, &a, &fs).unwrap_err();
        assert!(e.config_unreadable, "{e}");
        assert_eq!(
            e.message,
            format!("reading kubelet config /d/4.conf: {}", past_budget())
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

    /// Given a fence, existing taints that cannot be read make ours and the
    /// fence go in alone (the flag replaces the config's list, and every
    /// --register-with-taints of the command line); `fenced` says why.
    #[test]
    fn unreadable_existing_taints_fence_when_asked() {
        let mut fs = FakeFs::default();
        fs.0.insert(
            "/etc/c/x".into(),
            "registerWithTaints:\n- key: a b\n  effect: NoSchedule\n".into(),
        );
        let fence = parse_taints("kubelet-labeler.io/fenced=kubelet-config-unreadable:NoSchedule")
            .unwrap()
            .remove(0);
        let a = adds(&[("l", "")], "b=1:NoSchedule");
        for cmd in [
            "/k --config=/etc/c",
            "/k --config-dir=/missing",
            "/k --register-with-taints=x=y=z:Bad",
            "/k --config=/etc/c/x",
        ] {
            assert!(run(cmd, &a, &fs).is_err(), "{cmd}");
            let p =
                apply_fencing(&argv(cmd), &a, Profile::Upstream, &fs, &|_| fence.clone()).unwrap();
            assert_eq!(
                p.fenced.as_ref().map(|f| f.0),
                Some(Replaced::Unreadable),
                "{cmd}"
            );
            let w = words(&p);
            assert!(
                w.ends_with(
                    " --node-labels=l= --register-with-taints=b=1:NoSchedule,\
                     kubelet-labeler.io/fenced=kubelet-config-unreadable:NoSchedule"
                ),
                "{cmd}: {w}"
            );
            assert!(!w.contains("x=y=z"), "{w}");
        }
        // Readable: the fence is not used.
        let p = apply_fencing(&argv("/k"), &a, Profile::Upstream, &fs, &|_| fence.clone()).unwrap();
        assert_eq!(p.fenced, None);
        assert_eq!(
            words(&p),
            "/k --node-labels=l= --register-with-taints=b=1:NoSchedule"
        );
    }

    /// kubelet's own taints with ours one byte past the kernel's limit on
    /// one word: refused (one byte shorter fits); given a fence, ours and
    /// the fence replace them, as when they cannot be read (review 11, F2).
    #[test]
    fn kubelets_own_taints_past_the_word_limit_fence_when_asked() {
        let (a, max) = (adds(&[], "b=1:NoSchedule"), arg_limit::MAX_ARG_STRLEN);
        // `--register-with-taints=`, `,b=1:NoSchedule`; `,k..k00000=:NoSchedule` each.
        let (rest, k) = (max - 1 - 23 - 15, "k".repeat(50));
        let n = rest / 68;
        let own: String = (0..n).map(|i| format!(",{k}{i:05}=:NoSchedule")).collect();
        let x = "x".repeat(rest - n * 68 - 12);
        let cmd = |y| format!("/k --register-with-taints={x}{y}=:NoSchedule{own}");
        let (fs, fence) = (FakeFs::default(), |why| {
            crate::node::kubelet::taint("f", &format!("{why:?}"), TaintEffect::NoSchedule)
        });
        let p = apply_fencing(&argv(&cmd("")), &a, Profile::Upstream, &fs, &fence).unwrap();
        assert_eq!((p.argv[1].len(), p.fenced), (max - 1, None));
        let e = run(&cmd("y"), &a, &fs).unwrap_err().to_string();
        assert!(
            e.contains(&format!("kubelet's own {} taints", n + 1)),
            "{e}"
        );
        let p = apply_fencing(&argv(&cmd("y")), &a, Profile::Upstream, &fs, &fence).unwrap();
        assert_eq!(p.fenced.clone(), Some((Replaced::TooLong, e)));
        let w = "/k --register-with-taints=b=1:NoSchedule,f=TooLong:NoSchedule";
        assert_eq!((words(&p).as_str(), &p.added_taints), (w, &p.taints));
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
        const H: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";
        const J: &str =
            r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration"}"#;
        let mut fs = FakeFs::default();
        let a = adds(&[], "ours:NoExecute");
        // a later drop-in, also in a subdirectory, replaces the list; `null` clears it
        fs.0.insert(
            "/c.yaml".into(),
            H.to_string() + "registerWithTaints: [{key: base, effect: NoSchedule}]\n",
        );
        fs.0.insert(
            "/d/10.conf".into(),
            H.to_string() + "registerWithTaints: [{key: ten, effect: NoSchedule}]\n",
        );
        fs.0.insert(
            "/d/20/x.conf".into(),
            H.to_string() + "registerWithTaints: [{key: sub, effect: NoSchedule}]\n",
        );
        fs.0.insert("/d/20.conf".into(), H.to_string() + "maxPods: 3\n");
        fs.0.insert(
            "/d/15.conf.bak".into(),
            H.to_string() + "registerWithTaints: [{key: bak, effect: NoSchedule}]\n",
        );
        assert_eq!(
            run("/k --config=/c.yaml --config-dir=/d", &a, &fs).unwrap(),
            "/k --config=/c.yaml --config-dir=/d --register-with-taints=sub=:NoSchedule,ours=:NoExecute"
        );
        fs.0.insert(
            "/d/30.conf".into(),
            J.replace("}", ",\"registerWithTaints\": null}"),
        );
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
        fs.0.insert(
            "/bad.yaml".into(),
            H.to_string() + "registerWithTaints: [\n",
        );
        let e = run("/k --config /bad.yaml", &a, &fs).unwrap_err();
        assert!(e.to_string().contains("/bad.yaml"), "{e}");
        fs.0.insert(
            "/sneaky.yaml".into(),
            H.to_string()
                + "registerWithTaints:\n- key: \"a=b:NoSchedule,c\"\n  effect: NoExecute\n",
        );
        let e = run("/k --config /sneaky.yaml", &a, &fs).unwrap_err();
        assert!(e.to_string().contains("kubelet refuses"), "{e}");
        fs.0.insert(
            "/badvalue.json".into(),
            r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","registerWithTaints":[{"key":"a","value":"-x","effect":"NoSchedule"}]}"#.into(),
        );
        assert!(run("/k --config /badvalue.json", &a, &fs).is_err());
        // a config duplicate of <key,effect> would be refused by the API server
        fs.0.insert(
            "/dup.yaml".into(),
            H.to_string() + "registerWithTaints: [{key: a, effect: NoSchedule}, {key: a, value: b, effect: NoSchedule}]\n",
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
