//! `explain`'s text output.

use super::*;

/// The words of each argv list shown; the rest are counted.
pub const ARGV_SHOWN_MAX: usize = 1000;

/// Human output: the argv, one word a line, and what changed. The errors
/// and why our additions are left out are not in it: the caller says them
/// once, on stderr.
pub fn render_human(e: &Explanation) -> String {
    // Names and text from the tree (a pull request's file names) one line
    // each: a newline in one forges no line of ours.
    let shown = |t: &str| crate::cli::output::one_line(t).into_owned();
    let mut out = String::new();
    out += &format!("unit: {}\n", shown(&e.unit));
    out += &format!(
        "fragment: {}\n",
        shown(e.fragment.as_deref().unwrap_or("(none)"))
    );
    for d in &e.dropins {
        out += &format!("drop-in: {}\n", shown(d));
    }
    out += &format!("executable: {}\n", shown(&e.executable));
    out += &format!("kubelet version: {}\n", shown(&e.kubelet_version));
    out += if e.wrapper_runs {
        "argv the wrapper would exec:\n"
    } else {
        "argv systemd would exec, without the wrapper:\n"
    };
    // Sets, not scans: an environment file can expand to 2,000,000 words.
    let original: std::collections::HashSet<&String> = e.original_argv.iter().collect();
    let now: std::collections::HashSet<&String> = e.argv.iter().collect();
    // Quoted, and escaped as stderr is (review 41 r41b F6: a U+202E in a
    // word turned the rest of its line around).
    let quoted = |a: &str| crate::cli::output::terminal_safe(&shell_words::quote(a));
    // A kubelet's command line is tens of words; one an environment file
    // padded to exec's limit is 600,000 (review 42 r42b F5: 47 MB listed).
    for (i, a) in e.argv.iter().enumerate().take(ARGV_SHOWN_MAX) {
        let mark = if original.contains(a) { " " } else { "+" };
        out += &format!("  {mark} [{}] {}\n", i + 1, quoted(a));
    }
    let removed: Vec<&String> = e
        .original_argv
        .iter()
        .filter(|a| !now.contains(a))
        .collect();
    for removed in removed.iter().take(ARGV_SHOWN_MAX) {
        out += &format!("  - {}\n", quoted(removed));
    }
    let hidden =
        e.argv.len().saturating_sub(ARGV_SHOWN_MAX) + removed.len().saturating_sub(ARGV_SHOWN_MAX);
    if hidden > 0 {
        out += &format!("  ... and {hidden} more words, not shown (--json lists them all)\n");
    }
    // Why, and the errors, go to stderr once (see main).
    if e.left_out.is_some() {
        out += "our labels/taints are left out (why: on stderr)\n";
    } else if e.wrapper_runs && e.argv == e.original_argv {
        out += "no labels or taints to add\n";
    }
    if let Some(facts) = &e.facts {
        out += &format!("facts: {}\n", shown(facts));
    }
    for r in &e.rules {
        let state = match (&r.left_out, r.matched) {
            (Some(why), _) => format!("left out: {}", shown(why)),
            (None, true) => "matched".into(),
            (None, false) if !e.facts_read => "not evaluated (no facts were read)".into(),
            (None, false) => "no match".into(),
        };
        out += &format!("rule {:?}: {state}\n", r.name);
        for (feature, elements) in &r.matched_features {
            for el in elements {
                let attrs: Vec<String> = el.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out += &format!("    {feature}: {}\n", shown(&attrs.join(" ")));
            }
        }
        if r.matched {
            for l in &r.labels {
                out += &format!("    label {}\n", shown(l));
            }
            for t in &r.taints {
                out += &format!("    taint {}\n", shown(t));
            }
        }
    }
    for id in &e.left_to_nfd {
        out += &format!(
            "rule {}: left to the cluster's NFD (not evaluated at boot; NFD applies it after the node joins)\n",
            shown(id)
        );
    }
    for n in &e.notes {
        out += &format!("note: {}\n", shown(n));
    }
    for w in &e.warnings {
        out += &format!("warning: {}\n", shown(w));
    }
    if let Some(sync) = &e.sync {
        out += &format!("sync: {}\n", shown(&sync.service));
        out += &format!("  runs: {}\n", shown(&sync.command));
        for t in &sync.triggers {
            out += &format!("  after: {}\n", shown(t));
        }
        if sync.triggers.is_empty() {
            out += "  after: nothing starts it (no Wants= from the unit, no path unit)\n";
        }
        match &sync.nothing {
            // The reason is on stderr, once (see main).
            Some(_) if e.left_out.is_some() => {
                out += "  would change nothing: our labels/taints are left out (why: on stderr)\n"
            }
            Some(why) => out += &format!("  would change nothing: {}\n", shown(why)),
            None => {
                if sync.labels.is_empty() {
                    out += "  writes no label\n";
                } else {
                    out += "  writes these labels, as kubelet's own identity, when the Node lacks them or has another value of its own (others' keys and NFD's left alone):\n";
                }
                for l in &sync.labels {
                    out += &format!("    label {}\n", shown(l));
                }
                if !(sync.reported.is_empty() && sync.taints.is_empty()) {
                    out += "  only reports (never sends) a difference in:\n";
                }
                for r in &sync.reported {
                    out += &format!("    label {} ({})\n", shown(&r.label), shown(&r.why));
                }
                for t in &sync.taints {
                    out += &format!(
                        "    taint {} (a node may not change its taints)\n",
                        shown(t)
                    );
                }
            }
        }
    }
    out
}
