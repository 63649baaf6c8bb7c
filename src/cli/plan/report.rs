//! `plan`'s output: text for a terminal, JSON, and Markdown for a pull
//! request's comment (totals first, groups collapsed past a few).

use std::fmt::Write as _;

use super::{Group, Plan};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Markdown,
}

/// Groups shown open in Markdown; the rest are collapsed.
const OPEN_GROUPS: usize = 5;
/// Node names listed per group.
const NAMES_SHOWN: usize = 10;

pub fn render(plan: &Plan, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(plan).unwrap_or_default() + "\n",
        Format::Text => text(plan),
        Format::Markdown => markdown(plan),
    }
}

fn totals(plan: &Plan) -> String {
    let mut s = format!(
        "{} of {} nodes change; {} reboot; {} with a taint change; {} where NFD or the GPU Operator is locked out",
        plan.changed, plan.nodes, plan.reboot, plan.taint_changes, plan.lockout
    );
    if plan.refused > 0 {
        let _ = write!(
            s,
            "; {} in a pool whose change the MCO refuses (nothing rolls out there)",
            plan.refused
        );
    }
    s
}

fn names(g: &Group) -> String {
    let mut s = g
        .nodes
        .iter()
        .take(NAMES_SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if g.nodes.len() > NAMES_SHOWN {
        let _ = write!(s, " and {} more", g.nodes.len() - NAMES_SHOWN);
    }
    s
}

fn title(g: &Group) -> String {
    let pool = g.outcome.pool_before.as_deref().unwrap_or("no pool");
    let what = if g.outcome.refused.is_some() {
        "the MCO refuses the change"
    } else if g.outcome.changes() {
        "change"
    } else {
        "no change"
    };
    if g.nodes.len() == 1 {
        format!("1 node, {} (pool {pool}): {what}", g.nodes[0])
    } else {
        format!(
            "{} nodes like {} (pool {pool}): {what}",
            g.nodes.len(),
            g.nodes[0]
        )
    }
}

/// The lines of one group's outcome, each with its indentation.
fn lines(g: &Group) -> Vec<(usize, String)> {
    let o = &g.outcome;
    let mut out = Vec::new();
    if let Some(why) = &o.refused {
        out.push((0, why.clone()));
    }
    let diff = |before: &[String], after: &[String]| -> Vec<String> {
        let mut d: Vec<String> = after
            .iter()
            .filter(|x| !before.contains(x))
            .map(|x| format!("+ {x}"))
            .collect();
        d.extend(
            before
                .iter()
                .filter(|x| !after.contains(x))
                .map(|x| format!("- {x}")),
        );
        d
    };
    let (b, a) = (&o.register_before, &o.register_after);
    if b != a {
        out.push((0, "a node registering now:".into()));
        for l in diff(&b.labels, &a.labels) {
            out.push((1, format!("label {l}")));
        }
        for t in diff(&b.taints, &a.taints) {
            out.push((1, format!("taint {t}")));
        }
        if b.left_out != a.left_out
            && let Some(w) = &a.left_out
        {
            out.push((1, format!("our labels and taints left out: {w}")));
        }
    }
    if let Some(w) = &a.left_out
        && b.left_out == a.left_out
    {
        out.push((0, format!("left out at registration: {w}")));
    }
    if !o.sync.is_empty() {
        out.push((0, "the day-2 sync on the running Node:".into()));
        out.extend(o.sync.iter().map(|s| (1, s.clone())));
    }
    if !o.taint_commands.is_empty() {
        let each = if g.nodes.len() > 1 {
            ", for each node"
        } else {
            ""
        };
        out.push((
            0,
            format!(
                "taints the node cannot change itself (NodeRestriction); the cluster runs{each}:"
            ),
        ));
        out.extend(o.taint_commands.iter().map(|c| {
            let c = match g.nodes.as_slice() {
                [one] => c.replace(super::NODE, one),
                _ => c.clone(),
            };
            (1, c)
        }));
        if let Some(n) = o.evicted_pods {
            out.push((
                1,
                format!("the NoExecute taint evicts {n} pod(s) running there at once (no toleration of theirs matches it)"),
            ));
        }
        if let Some(l) = &o.evicted_later {
            let when = if l.soonest_seconds == l.latest_seconds {
                format!("after {} s", l.soonest_seconds)
            } else {
                format!("between {} s and {} s", l.soonest_seconds, l.latest_seconds)
            };
            out.push((
                1,
                format!(
                    "and {} more {when}, when their tolerationSeconds run out, unless the taint is taken off before",
                    l.pods
                ),
            ));
        }
    }
    if o.pool_before != o.pool_after {
        out.push((
            0,
            format!(
                "pool: {} -> {}",
                o.pool_before.as_deref().unwrap_or("none"),
                o.pool_after.as_deref().unwrap_or("none")
            ),
        ));
    }
    if o.disruption != super::policy::Disruption::Nothing || !o.disruption_because.is_empty() {
        out.push((0, format!("applying it costs {}:", o.disruption.as_str())));
        out.extend(o.disruption_because.iter().map(|c| (1, c.clone())));
    }
    if let Some(f) = &o.wrapper_format {
        out.push((
            0,
            format!(
                "wrapper: installed {} (from {}), proposed {}:",
                f.installed, f.installed_from, f.proposed
            ),
        ));
        out.push((1, f.until_then.clone()));
    }
    if !o.daemonsets.is_empty() {
        out.push((0, "DaemonSets:".into()));
        out.extend(o.daemonsets.iter().map(|c| (1, c.clone())));
    }
    for n in &o.not_judged {
        out.push((0, format!("not judged: {n}")));
    }
    out
}

/// Each line one line: what the inputs name in it (a pull request's file
/// path, a MachineConfig's or a node's name) has its newlines and other
/// control characters escaped, so it forges no line of the plan.
fn text(plan: &Plan) -> String {
    use crate::cli::output::one_line;
    let mut s = format!(
        "plan {} -> {}: {}\n",
        one_line(&plan.from),
        one_line(&plan.to),
        totals(plan)
    );
    for g in &plan.groups {
        let _ = writeln!(s, "\n== {} ==", one_line(&title(g)));
        if g.nodes.len() > 1 {
            let _ = writeln!(s, "nodes: {}", one_line(&names(g)));
        }
        for (indent, l) in lines(g) {
            let _ = writeln!(s, "{}{}", "  ".repeat(indent), one_line(&l));
        }
    }
    for n in &plan.not_judged {
        let _ = writeln!(s, "\nnot judged: {}", one_line(n));
    }
    s
}

/// Markdown escapes for text from the inputs (names, values). Posted as a
/// pull request's comment, `@name` would notify that user or team from
/// the poster's account and `www.`, `https://` or `a@b.c` become links
/// (review 43 r43b): a word joiner (U+2060) breaks each, shown as written.
fn md(text: &str) -> String {
    const JOINER: char = '\u{2060}';
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        match c {
            '|' | '*' | '_' | '`' | '<' | '>' | '[' | ']' | '#' | '\\' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            '@' => out.extend([c, JOINER]),
            ':' if text[i + 1..].starts_with("//") => out.extend([c, JOINER]),
            '.' if (text.get(i.saturating_sub(3)..i))
                .is_some_and(|w| w.eq_ignore_ascii_case("www")) =>
            {
                out.extend([JOINER, c])
            }
            c => out.push(c),
        }
    }
    out
}

fn markdown(plan: &Plan) -> String {
    let mut s = String::from("### kubelet-labeler plan\n\n");
    let _ = writeln!(s, "**{}**\n", md(&totals(plan)));
    let _ = writeln!(s, "| nodes | pool | outcome |\n|---|---|---|");
    for g in &plan.groups {
        let o = &g.outcome;
        let mut what = Vec::new();
        if o.refused.is_some() {
            what.push("**the MCO refuses the change: nothing rolls out**".to_string());
        }
        if o.register_before != o.register_after {
            what.push("registration changes".to_string());
        }
        if !o.sync.is_empty() {
            what.push(format!("{} sync change(s)", o.sync.len()));
        }
        if !o.taint_commands.is_empty() {
            what.push("taint commands".into());
        }
        if o.lockout {
            what.push("**NFD/GPU Operator locked out**".into());
        }
        if let Some(f) = &o.wrapper_format {
            what.push(format!(
                "old behaviour until the new MachineConfigs land ({} installed, {} proposed)",
                md(&f.installed),
                md(&f.proposed)
            ));
        }
        what.push(o.disruption.as_str().to_string());
        let _ = writeln!(
            s,
            "| {} ({}) | {} | {} |",
            g.nodes.len(),
            md(&g.nodes[0]),
            md(o.pool_before.as_deref().unwrap_or("none")),
            what.join(", ")
        );
    }
    for (i, g) in plan.groups.iter().enumerate() {
        let body: String = lines(g)
            .into_iter()
            .map(|(indent, l)| format!("{}- {}\n", "  ".repeat(indent), md(&l)))
            .collect();
        let head = md(&title(g));
        if i < OPEN_GROUPS {
            let _ = write!(s, "\n#### {head}\n\n");
            if g.nodes.len() > 1 {
                let _ = writeln!(s, "nodes: {}\n", md(&names(g)));
            }
            s.push_str(&body);
        } else {
            let _ = write!(
                s,
                "\n<details><summary>{head}</summary>\n\n{body}\n</details>\n"
            );
        }
    }
    for n in &plan.not_judged {
        let _ = writeln!(s, "\n_not judged: {}_", md(n));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::md;

    /// Review 43 r43b: mentions, autolinks and strikethrough from a file
    /// path stayed live in the pull request's comment.
    #[test]
    fn markdown_from_the_inputs_mentions_and_links_nothing() {
        let path = "/etc/a cc @octocat @acme/security-team see www.evil.example, WWW.x.example, \
                    https://evil.example or x@evil.example ~~old~~ | *b* [l](u)";
        let out = md(path);
        for live in ["@o", "@a", "@e", "www.", "WWW.", "://", "~~"] {
            assert!(!out.contains(live), "{live:?} in {out}");
        }
        assert_eq!(out.replace(['\u{2060}', '\\'], ""), path);
    }
}
