//! The comment block at the top of a MachineConfig that carries our env
//! drop-in: its labels, taints and node rules in words, one line each,
//! read back from the drop-in's bytes in the MachineConfig itself. A Git
//! diff of two renders then shows which label, taint or rule changed, in
//! words, whatever the drop-in's encoding (a percent-encoded line, an
//! earlier release's gzip+base64, the rules' compiled form). Comments are
//! not part of the object: the API server, the MCO and a node never see
//! them, and a re-render that changes nothing keeps the bytes.

use serde_json::Value;

use crate::node::contract::{
    ENV_DROPIN_NAME, LABELS_VAR, NFD_LABELS_VAR, POOL_LABEL_VAR, ROLE_ENV_DROPIN_NAME,
    ROLE_LABELS_VAR, ROLE_NFD_LABELS_VAR, ROLE_RULES_VAR, ROLE_TAINTS_VAR, RULES_VAR, TAINTS_VAR,
};
use crate::node::rules::{Expr, Op, Rule, RuleTemplate, Term, compact, shown_name};

/// The block's first line; the lines after it that start with [`ITEM`] are
/// the block too. Render rewrites them; the user's own comments (any other
/// line) stay.
pub const HEAD: &str = "# kubelet-labeler: what this MachineConfig's drop-in registers nodes with (render rewrites these lines)";
const ITEM: &str = "#   ";

/// The block's lines for `obj`, when it is a MachineConfig carrying our env
/// drop-in (else none).
pub fn lines(obj: &Value) -> Vec<String> {
    if obj["kind"] != "MachineConfig" {
        return Vec::new();
    }
    let Some(files) = obj["spec"]["config"]["storage"]["files"].as_array() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for f in files {
        let path = f["path"].as_str().unwrap_or_default();
        let Some(name) = path.strip_prefix("/etc/systemd/system/kubelet.service.d/") else {
            continue;
        };
        if name != ENV_DROPIN_NAME && name != ROLE_ENV_DROPIN_NAME {
            continue;
        }
        let source = f["contents"]["source"].as_str().unwrap_or_default();
        let text = super::unpack::decode_data_url(source, f["contents"]["compression"].as_str())
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        match text {
            Ok(text) => out.extend(dropin_lines(&text)),
            Err(e) => out.push(format!("{path}: cannot read it ({e})")),
        }
    }
    if out.is_empty() {
        return Vec::new();
    }
    std::iter::once(HEAD.to_string())
        .chain(out.into_iter().map(|l| format!("{ITEM}{}", one_line(&l))))
        .collect()
}

/// `s` with every character a YAML reader could take for a line break
/// (go-yaml's: also U+2028, U+2029, U+0085) or that is a control
/// character escaped as `\u{..}`: a rule's value cannot end the comment
/// and start YAML.
fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            out += &format!("\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// What an env drop-in's lines say, in words.
fn dropin_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(id) = line.strip_prefix(super::LEFT_TO_NFD_MARK) {
            out.push(format!("rule {id}: left to the cluster's NFD"));
            continue;
        }
        let Some((var, value)) = line
            .strip_prefix("Environment=\"")
            .and_then(|l| l.strip_suffix('"'))
            .and_then(|l| l.split_once('='))
        else {
            continue;
        };
        let items = || value.split(',').filter(|s| !s.is_empty());
        match var {
            LABELS_VAR | ROLE_LABELS_VAR => out.extend(items().map(|l| format!("label {l}"))),
            TAINTS_VAR | ROLE_TAINTS_VAR => out.extend(items().map(|t| format!("taint {t}"))),
            POOL_LABEL_VAR => out.push(format!("pool label {value} (the sync never removes it)")),
            NFD_LABELS_VAR | ROLE_NFD_LABELS_VAR => {
                out.push(format!("NFD's built-in labels ({value})"))
            }
            RULES_VAR | ROLE_RULES_VAR => match compact::decode(value) {
                Ok(rules) => out.extend(rules.iter().map(rule)),
                Err(e) => out.push(format!("rules that this release cannot read: {e}")),
            },
            _ => {}
        }
    }
    out
}

/// One rule on one line: its name, what it gives and when.
fn rule(r: &Rule) -> String {
    let mut parts = Vec::new();
    let pairs = |v: &[(String, String)]| {
        v.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !r.labels.is_empty() {
        parts.push(format!("labels {}", pairs(&r.labels)));
    }
    if let Some(t) = &r.labels_template {
        parts.push(format!("labelsTemplate {}", template(t)));
    }
    if !r.taints.is_empty() {
        let t: Vec<String> = r.taints.iter().map(|t| t.to_string()).collect();
        parts.push(format!("taints {}", t.join(", ")));
    }
    if !r.vars.is_empty() {
        parts.push(format!("vars {}", pairs(&r.vars)));
    }
    if let Some(t) = &r.vars_template {
        parts.push(format!("varsTemplate {}", template(t)));
    }
    let mut when = Vec::new();
    if !r.match_features.is_empty() {
        when.push(terms(&r.match_features));
    }
    if !r.match_any.is_empty() {
        let any: Vec<String> = r.match_any.iter().map(|t| terms(t)).collect();
        when.push(format!("any of ({})", any.join(") or (")));
    }
    let mut s = format!("rule {}: ", shown_name(&r.name));
    s += &if parts.is_empty() {
        "nothing".to_string()
    } else {
        parts.join("; ")
    };
    if !when.is_empty() {
        s += &format!("; when {}", when.join(" and "));
    }
    s
}

fn terms(ts: &[Term]) -> String {
    ts.iter().map(term).collect::<Vec<_>>().join(" and ")
}

fn term(t: &Term) -> String {
    let mut e = Vec::new();
    if let Some(name) = &t.match_name {
        e.push(format!("name {}", expr(name)));
    }
    for (attr, x) in t.match_expressions.iter().flatten() {
        e.push(format!("{attr} {}", expr(x)));
    }
    if e.is_empty() {
        t.feature.clone()
    } else {
        format!("{} {{{}}}", t.feature, e.join(", "))
    }
}

fn expr(x: &Expr) -> String {
    let op = compact::op_name(x.op);
    let version = if x.version { " (version)" } else { "" };
    if x.op == Op::InRegexp {
        // The patterns travel compiled: their program's fingerprint, so a
        // change shows.
        let wire: Vec<String> = x
            .regexes
            .iter()
            .map(|r| match r {
                Ok(r) => r.to_wire(),
                Err(e) => e.clone(),
            })
            .collect();
        return format!(
            "{op} {} pattern(s), compiled {}",
            x.regexes.len(),
            fingerprint(&wire.join("\n"))
        );
    }
    if x.value.is_empty() {
        format!("{op}{version}")
    } else {
        format!("{op}{version} [{}]", x.value.join(", "))
    }
}

fn template(t: &RuleTemplate) -> String {
    match &t.0 {
        Ok(t) => format!("(compiled {})", fingerprint(&t.to_wire())),
        Err(e) => format!("(does not parse: {e})"),
    }
}

/// A short, stable fingerprint (FNV-1a, 32 bits) of compiled text.
fn fingerprint(s: &str) -> String {
    let h = s.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("#{h:08x}")
}

/// Refuse a file whose block does not say what its MachineConfig's
/// drop-in does (the drop-in or the comment edited by hand): a review that
/// reads the comment would be misled. Only a file of this release, whose
/// wording this release writes, and of one MachineConfig.
pub fn check(text: &str, mcs: &[Value], source: &str) -> anyhow::Result<()> {
    let [mc] = mcs else {
        return Ok(());
    };
    let ours = mc["metadata"]["annotations"][super::RENDERED_BY_ANNOTATION] == super::RENDERED_BY;
    let at = block_lines(text);
    if !ours || at.is_empty() {
        return Ok(());
    }
    let all: Vec<&str> = text.lines().collect();
    let written: Vec<&str> = at.iter().filter_map(|l| all.get(l - 1).copied()).collect();
    if written != lines(mc) {
        anyhow::bail!(
            "{source}: the comment block at its top (lines {}-{}) does not say what its env \
             drop-in registers nodes with (edited by hand?), so a review reading it is misled; \
             render it again, which rewrites the block from the drop-in",
            at[0],
            at[at.len() - 1]
        );
    }
    Ok(())
}

/// `text` with the block at its top set to `block` (none: removed). An
/// earlier block is found among the comment lines the file starts with.
pub fn set(text: &str, block: &[String]) -> String {
    let mut new = String::with_capacity(block.len() * 80);
    for l in block {
        new += l;
        new += "\n";
    }
    // Where it was (below a comment of the user's, say), or on top.
    let at = block_lines(text);
    let (Some(first), Some(last)) = (at.first(), at.last()) else {
        return new + text;
    };
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out: String = lines[..first - 1].concat();
    out += &new;
    out += &lines[*last..].concat();
    out
}

/// `text` without the block (the user's comments around it stay).
pub fn without(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_head = true;
    let mut in_block = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if in_head {
            if bare == HEAD {
                in_block = true;
                continue;
            }
            if in_block && bare.starts_with(ITEM) {
                continue;
            }
            in_block = false;
            if !bare.starts_with('#') {
                in_head = false;
            }
        }
        out += line;
    }
    out
}

/// The 1-based line numbers of `text` the block takes.
pub fn block_lines(text: &str) -> Vec<usize> {
    let kept = without(text);
    if kept.len() == text.len() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        if line == HEAD {
            in_block = true;
        } else if !(in_block && line.starts_with(ITEM)) {
            in_block = false;
            if !line.starts_with('#') {
                break;
            }
            continue;
        }
        out.push(i + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_is_replaced_and_the_users_comments_stay() {
        let body = "# mine\napiVersion: v1\n# also mine\n";
        let with = set(body, &[HEAD.to_string(), "#   label a=b".into()]);
        assert_eq!(with, format!("{HEAD}\n#   label a=b\n{body}"));
        assert_eq!(block_lines(&with), [1, 2]);
        assert_eq!(without(&with), body);
        let again = set(&with, &[HEAD.to_string(), "#   label a=c".into()]);
        assert_eq!(again, format!("{HEAD}\n#   label a=c\n{body}"));
        assert_eq!(set(&again, &[]), body);
        // Below the user's head comment, found too.
        let below = format!("# mine\n{HEAD}\n#   label x=y\napiVersion: v1\n");
        assert_eq!(without(&below), "# mine\napiVersion: v1\n");
        assert_eq!(block_lines(&below), [2, 3]);
        // and kept there.
        let block = [HEAD.to_string(), "#   label x=z".into()];
        assert_eq!(
            set(&below, &block),
            format!("# mine\n{HEAD}\n#   label x=z\napiVersion: v1\n")
        );
        assert_eq!(set(&below, &[]), "# mine\napiVersion: v1\n");
    }

    /// The block is read from the drop-in's bytes: the same whatever
    /// the data URL's encoding (an earlier release's gzip+base64 too), and
    /// one comment line per item whatever a rule's values hold.
    #[test]
    fn the_block_does_not_depend_on_the_encoding() {
        use crate::cli::render::encoding::{data_url, gzip, readable_data_url};
        use crate::node::rules::{Expr, Term};
        let rule = Rule {
            name: "gpu".into(),
            labels: vec![("a.io/x".into(), "y".into())],
            match_features: vec![Term {
                feature: "pci.device".into(),
                match_expressions: Some(vec![(
                    "vendor".into(),
                    Expr::new(
                        Op::In,
                        vec!["10de\nkind: Secret".into(), "a\u{2028}b".into()],
                    ),
                )]),
                match_name: None,
            }],
            ..Default::default()
        };
        let dropin = format!(
            "[Service]\nEnvironment=\"{LABELS_VAR}=a.io/b=\"\nEnvironment=\"{RULES_VAR}={}\"\n",
            compact::encode(&[rule])
        );
        let mc = |source: String, compression: Option<&str>| {
            let mut f = serde_json::json!({
                "path": format!("/etc/systemd/system/kubelet.service.d/{ENV_DROPIN_NAME}"),
                "contents": {"source": source}
            });
            if let Some(c) = compression {
                f["contents"]["compression"] = c.into();
            }
            serde_json::json!({"kind": "MachineConfig", "spec": {"config": {"storage": {"files": [f]}}}})
        };
        let plain = lines(&mc(readable_data_url(dropin.as_bytes()).source, None));
        let b64 = data_url(&gzip(dropin.as_bytes()));
        assert_eq!(b64.compression, None);
        let zipped = lines(&mc(b64.source, Some("gzip")));
        assert_eq!(plain, zipped);
        assert_eq!(plain.len(), 3, "{plain:?}");
        assert_eq!(plain[1], "#   label a.io/b=");
        assert_eq!(
            plain[2],
            "#   rule gpu: labels a.io/x=y; when pci.device {vendor In [10de\\u{a}kind: Secret, a\\u{2028}b]}"
        );
        let text = set("kind: MachineConfig\n", &plain);
        let v: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(v, serde_json::json!({"kind": "MachineConfig"}));
    }

    #[test]
    fn a_block_that_does_not_match_its_dropin_is_refused() {
        use crate::cli::render::machineconfig::{PoolOptions, manifest_text, render};
        use crate::node::kubelet::Additions;
        let mut additions = Additions::default();
        additions
            .labels
            .push(("example.com/team".into(), "ml".into()));
        let opts = PoolOptions {
            pool: "worker-gpu".into(),
            additions,
            pool_label: None,
            base_role: "worker".into(),
            ignition_version: "3.4.0",
            wrappers: Vec::new(),
            node_rules: Default::default(),
            builtin_role: false,
        };
        let r = render(&opts).unwrap();
        let (_, mc) = &r.manifests[1];
        let text = manifest_text(mc).unwrap();
        assert!(check(&text, std::slice::from_ref(mc), "f").is_ok());
        let lying = text.replace(
            "#   label example.com/team=ml",
            "#   label example.com/team=ai",
        );
        let e = check(&lying, std::slice::from_ref(mc), "f")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("f: the comment block at its top (lines 1-"),
            "{e}"
        );
        // Another release's wording is not judged.
        let mut other = mc.clone();
        other["metadata"]["annotations"]["kubelet-labeler/rendered-by"] =
            "kubelet-labeler 0.0.1".into();
        assert!(check(&lying, &[other], "f").is_ok());
    }

    #[test]
    fn a_dropin_reads_in_words() {
        let text = "# x\n[Service]\n\
                    Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=a.io/b=,c.io/d=e\"\n\
                    Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=g.io/x=y:NoSchedule\"\n\
                    Environment=\"KUBELET_LABELER_NODE_RULES=KLR0,1\"\n\
                    Environment=\"KUBELET_LABELER_POOL_LABEL=a.io/b\"\n";
        let l = dropin_lines(text);
        assert_eq!(
            l[..3],
            [
                "label a.io/b=",
                "label c.io/d=e",
                "taint g.io/x=y:NoSchedule"
            ]
        );
        assert!(
            l[3].starts_with("rules that this release cannot read"),
            "{l:?}"
        );
        assert_eq!(l[4], "pool label a.io/b (the sync never removes it)");
    }
}
