//! `kubelet::apply` over every MCO kubelet.service template's ExecStart, and
//! the config reader over MCO's kubelet.conf templates, read in place from
//! ../shared/fixtures/mco (the reader against kubelet's own reading, these
//! templates among its cases: kubelet_config_oracle.rs).

use crate::support::mco;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use kubelet_labeler::cli::validate::validate_kubelet_args;
use kubelet_labeler::node::kubelet::config::register_with_taints;
use kubelet_labeler::node::kubelet::{
    Additions, NodeFs, Profile, Taint, TaintEffect, apply, parse_taints,
};

/// Files by path; a path that is a prefix of files is a directory, and
/// `dirs` are directories that exist but are empty.
#[derive(Default)]
struct FakeFs {
    files: BTreeMap<PathBuf, String>,
    dirs: Vec<PathBuf>,
}

impl NodeFs for FakeFs {
    fn read(&self, path: &Path, _: usize) -> io::Result<Vec<u8>> {
        if self.dirs.iter().any(|d| d == path) {
            return Err(io::Error::from(io::ErrorKind::IsADirectory));
        }
        self.files
            .get(path)
            .map(|s| s.clone().into_bytes())
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
    fn list(&self, dir: &Path, _: &mut u64) -> io::Result<Vec<(OsString, bool)>> {
        if self.files.contains_key(dir) {
            return Err(io::Error::from(io::ErrorKind::NotADirectory));
        }
        let mut v: Vec<PathBuf> = self
            .files
            .keys()
            .filter_map(|p| p.strip_prefix(dir).ok()?.components().next())
            .map(|c| dir.join(c))
            .collect();
        v.dedup();
        if v.is_empty() && !self.dirs.iter().any(|d| d == dir) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        Ok(v.into_iter()
            .map(|p| {
                let dir = !self.files.contains_key(&p);
                (p.file_name().unwrap_or_default().to_owned(), dir)
            })
            .collect())
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

/// What systemd would pass for the unit's `${VAR}`s on a worker.
fn env_value(var: &str) -> String {
    match var {
        "ID" => "rhcos".into(),
        // empty by default: the unit's `--node-labels=...,` keeps a trailing comma
        "CUSTOM_KUBELET_LABELS" => String::new(),
        "KUBELET_NODE_IP" | "KUBELET_NODE_IPS" => "0.0.0.0".into(),
        "KUBELET_LOG_LEVEL" => "2".into(),
        "KUBELET_NODE_NAME" => "worker-0.example.com".into(),
        "KUBELET_PROVIDERID" => "aws:///us-east-1a/i-0abc".into(),
        "KUBELET_CRIO_IMAGE_CREDENTIAL_PROVIDER_FLAGS" => String::new(),
        other => format!("value-of-{}", other.to_lowercase()),
    }
}

/// The unit's ExecStart= as argv: continuation lines joined, split on
/// whitespace, `${VAR}` filled (one word each, as systemd does).
fn exec_start(unit: &str) -> Vec<String> {
    let mut line = String::new();
    let mut lines = unit
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("ExecStart="));
    for l in lines.by_ref() {
        let l = l.trim();
        match l.strip_suffix('\\') {
            Some(cont) => {
                line += cont;
                line.push(' ');
            }
            None => {
                line += l;
                break;
            }
        }
    }
    let line = line
        .strip_prefix("ExecStart=")
        .expect("no ExecStart= in unit");
    line.split_whitespace()
        // `$VAR` is split on whitespace by systemd (empty: no word at all)
        .flat_map(
            |w| match w.strip_prefix('$').filter(|v| !v.starts_with('{')) {
                Some(var) => env_value(var)
                    .split_whitespace()
                    .map(String::from)
                    .collect::<Vec<_>>(),
                None => vec![w.to_string()],
            },
        )
        .map(|w| {
            let w = w.as_str();
            let mut out = String::new();
            let mut rest = w;
            while let Some(start) = rest.find("${") {
                let end = rest[start..].find('}').expect("unclosed ${") + start;
                out += &rest[..start];
                out += &env_value(&rest[start + 2..end]);
                rest = &rest[end + 1..];
            }
            out + rest
        })
        .collect()
}

/// The inline contents of a `files/kubelet.yaml` template, with its Go
/// template placeholders filled and directive lines dropped.
fn kubelet_conf(template: &str) -> String {
    let mut lines = template.lines().skip_while(|l| l.trim() != "inline: |");
    lines.next().expect("no inline: | in template");
    let mut out = String::new();
    for l in lines {
        if l.trim_start().starts_with("{{-") {
            continue;
        }
        let l = l
            .strip_prefix("    ")
            .unwrap_or(l)
            .replace("{{.ClusterDNSIP}}", "172.30.0.10")
            .replace("{{.TLSMinVersion}}", "VersionTLS12")
            .replace("{{ . }}", "TLS_AES_128_GCM_SHA256");
        assert!(!l.contains("{{"), "unfilled placeholder in {l:?}");
        out += &l;
        out.push('\n');
    }
    out
}

pub(crate) fn config_templates(dir: &Path) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("reading fixtures")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("__files__kubelet.yaml"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap();
            (n, kubelet_conf(&text))
        })
        .collect()
}

fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
    Taint {
        key: key.into(),
        value: value.into(),
        effect,
    }
}

#[test]
fn mco_exec_starts_keep_every_word_in_place() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let units = mco::kubelet_units(&dir);
    assert!(
        units.len() >= 40,
        "only {} kubelet.service templates",
        units.len()
    );
    let ours_labels = vec![
        (
            "node.kubernetes.io/kubelet-labeler".to_string(),
            "yes".to_string(),
        ),
        ("example.com/pool".to_string(), String::new()),
        ("node-role.kubernetes.io/worker".to_string(), String::new()),
    ];
    let ours_taints = vec![
        taint("example.com/dedicated", "gpu", TaintEffect::NoSchedule),
        // the same <key,effect> as the masters' own taint: ours replaces it
        taint(
            "node-role.kubernetes.io/master",
            "ours",
            TaintEffect::NoSchedule,
        ),
    ];
    let additions = Additions {
        labels: ours_labels.clone(),
        taints: ours_taints.clone(),
    };
    let mut trailing_commas = 0;
    for (name, unit) in units {
        let before = exec_start(&unit);
        assert!(before.len() > 5, "{name}: {before:?}");
        let mut fs = FakeFs::default();
        // MCO's kubelet.conf has no registerWithTaints; the drop-in dir is empty
        fs.files.insert(
            "/etc/kubernetes/kubelet.conf".into(),
            "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nmaxPods: 250\n"
                .into(),
        );
        fs.dirs.push("/etc/openshift/kubelet.conf.d".into());
        let argv: Vec<OsString> = before.iter().map(OsString::from).collect();
        let plan = apply(&argv, &additions, Profile::OpenShift, &fs)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let after: Vec<String> = plan
            .argv
            .iter()
            .map(|w| w.to_str().unwrap().to_string())
            .collect();

        // the unit's own taint flag, if any, is what kubelet had
        let own_taints: Vec<Taint> = before
            .iter()
            .filter_map(|w| w.strip_prefix("--register-with-taints="))
            .next_back()
            .map(|v| parse_taints(v).unwrap())
            .unwrap_or_default();
        let mut expected_taints: Vec<Taint> = own_taints
            .iter()
            .filter(|t| {
                !ours_taints
                    .iter()
                    .any(|o| o.key == t.key && o.effect == t.effect)
            })
            .cloned()
            .collect();
        expected_taints.extend(ours_taints.iter().cloned());
        assert_eq!(plan.taints, expected_taints, "{name}");
        let replaced = own_taints.len() + ours_taints.len() - expected_taints.len();
        assert_eq!(plan.warnings.len(), replaced, "{name}: {:?}", plan.warnings);

        let taint_words: Vec<&String> = after
            .iter()
            .filter(|w| w.starts_with("--register-with-taints"))
            .collect();
        let merged: Vec<String> = expected_taints.iter().map(|t| t.to_string()).collect();
        assert_eq!(
            taint_words,
            vec![&format!("--register-with-taints={}", merged.join(","))],
            "{name}"
        );
        let label_word = "--node-labels=node.kubernetes.io/kubelet-labeler=yes,example.com/pool=,node-role.kubernetes.io/worker=";
        assert_eq!(
            after.iter().filter(|w| *w == label_word).count(),
            1,
            "{name}: {after:?}"
        );
        // everything else: the same words in the same order
        let kept_after: Vec<&String> = after
            .iter()
            .filter(|w| *w != label_word && !w.starts_with("--register-with-taints"))
            .collect();
        let kept_before: Vec<&String> = before
            .iter()
            .filter(|w| !w.starts_with("--register-with-taints"))
            .collect();
        assert_eq!(kept_after, kept_before, "{name}");
        // ours come after every flag of the unit (so our labels win)
        let last_own = after
            .iter()
            .rposition(|w| kept_before.last() == Some(&w))
            .unwrap();
        assert!(
            after.iter().position(|w| w == label_word).unwrap() > last_own,
            "{name}: {after:?}"
        );
        // the unit's label flag is untouched, also with the trailing comma
        // of an empty ${CUSTOM_KUBELET_LABELS}
        let own_labels = |words: &[String]| -> Vec<String> {
            words
                .iter()
                .filter(|w| w.starts_with("--node-labels=node-role.kubernetes.io/"))
                .cloned()
                .collect()
        };
        assert_eq!(own_labels(&after), own_labels(&before), "{name}");
        assert_eq!(own_labels(&before).len(), 1, "{name}");
        if own_labels(&before)[0].ends_with(',') {
            trailing_commas += 1;
        }
        // and OpenShift's kubelet would take the result
        let report = validate_kubelet_args(&after[1..], Profile::OpenShift);
        assert!(report.valid, "{name}: {:?}", report.errors);
        assert_eq!(report.taints, merged, "{name}");
        let wrapper = &after[..report.command.len() + 1];
        assert!(
            wrapper.last().unwrap().ends_with("kubelet"),
            "{name}: command {wrapper:?}"
        );

        // no additions: not one word changes
        let same = apply(&argv, &Additions::default(), Profile::OpenShift, &fs).unwrap();
        assert_eq!(same.argv, argv, "{name}");
    }
    assert!(
        trailing_commas >= 20,
        "only {trailing_commas} units end their labels with ','"
    );
}

#[test]
fn mco_exec_starts_read_registerwithtaints_when_they_have_no_flag() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let additions = Additions {
        labels: vec![],
        taints: vec![taint("example.com/t", "", TaintEffect::NoExecute)],
    };
    let mut checked = 0;
    for (name, unit) in mco::kubelet_units(&dir) {
        let argv: Vec<OsString> = exec_start(&unit).iter().map(OsString::from).collect();
        if argv
            .iter()
            .any(|w| w.to_str().unwrap().starts_with("--register-with-taints"))
        {
            continue;
        }
        let mut fs = FakeFs::default();
        fs.files.insert(
            "/etc/kubernetes/kubelet.conf".into(),
            "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints:\n- key: from-config\n  effect: PreferNoSchedule\n".into(),
        );
        fs.files.insert(
            "/etc/openshift/kubelet.conf.d/99-last.conf".into(),
            r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","registerWithTaints":[{"key":"from-dropin","value":"x","effect":"NoSchedule"}]}"#
                .into(),
        );
        let plan = apply(&argv, &additions, Profile::OpenShift, &fs).unwrap();
        let uses_config_dir = argv
            .iter()
            .any(|w| w.to_str().unwrap().starts_with("--config-dir="));
        let expected = if uses_config_dir {
            "from-dropin=x:NoSchedule,example.com/t=:NoExecute"
        } else {
            "from-config=:PreferNoSchedule,example.com/t=:NoExecute"
        };
        let last = plan.argv.last().unwrap().to_str().unwrap();
        assert_eq!(last, format!("--register-with-taints={expected}"), "{name}");
        // No config file yet: kubelet exits without one, so there are no
        // file taints to keep and ours go in alone; a missing --config-dir
        // is still a reason to leave ours out.
        let empty = FakeFs::default();
        let missing = apply(&argv, &additions, Profile::OpenShift, &empty);
        if uses_config_dir {
            assert!(missing.is_err(), "{name}");
        } else {
            let missing = missing.unwrap();
            let last = missing.argv.last().unwrap().to_str().unwrap();
            assert_eq!(
                last, "--register-with-taints=example.com/t=:NoExecute",
                "{name}"
            );
        }
        // A config kubelet cannot read either (a directory where the file
        // should be) while adding taints: refuse.
        let mut unreadable = FakeFs::default();
        unreadable.dirs.push("/etc/kubernetes/kubelet.conf".into());
        assert!(
            apply(&argv, &additions, Profile::OpenShift, &unreadable).is_err(),
            "{name}"
        );
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} worker units");
}

#[test]
fn mco_kubelet_confs_read_cleanly_and_set_no_taints() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let confs = config_templates(&dir);
    assert!(
        confs.len() >= 20,
        "only {} kubelet.conf templates",
        confs.len()
    );
    for (name, conf) in confs {
        assert_eq!(register_with_taints(&conf), Ok(None), "{name}");
        // with a list added in each form kubelet configs use
        for (tail, want) in [
            (
                "registerWithTaints:\n  - key: a\n    value: b\n    effect: NoSchedule\n",
                vec![taint("a", "b", TaintEffect::NoSchedule)],
            ),
            (
                "registerWithTaints:\n- {key: node-role.kubernetes.io/infra, effect: NoExecute}\n",
                vec![taint(
                    "node-role.kubernetes.io/infra",
                    "",
                    TaintEffect::NoExecute,
                )],
            ),
            ("registerWithTaints: []\n", vec![]),
        ] {
            let text = format!("{conf}{tail}");
            assert_eq!(
                register_with_taints(&text).unwrap(),
                Some(want),
                "{name} + {tail:?}"
            );
        }
    }
}
