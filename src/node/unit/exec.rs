//! `ExecStart=` parsing (systemd's config_parse_exec): prefixes, `;`,
//! words, specifiers, and the checks on the executable.

use super::ExecCommand;
use super::specifier::SpecifierValues;
use super::words::{UNIT, extract_word_relaxed, is_separator};

/// What one `ExecStart=` line does to the command list.
#[derive(Debug)]
pub enum ExecLine {
    /// Empty value: reset the list.
    Reset,
    /// Commands to append; `error` is set when the line was refused (with
    /// `-` only a warning: `fatal` false).
    Append {
        commands: Vec<ExecCommand>,
        warnings: Vec<String>,
        error: Option<String>,
        fatal: bool,
    },
}

fn string_is_safe(p: &[u8]) -> bool {
    p.iter()
        .all(|&c| c >= b' ' && c != 127 && c != b'"' && c != b'\'' && c != b'\\')
}

fn implies_directory(p: &[u8]) -> bool {
    p.ends_with(b"/") || p == b"." || p == b".." || p.ends_with(b"/.") || p.ends_with(b"/..")
}

fn filename_is_valid(p: &[u8]) -> bool {
    !p.is_empty() && p != b"." && p != b".." && !p.contains(&b'/') && p.len() <= 255
}

/// Parse one `ExecStart=` value.
pub fn parse_exec(rvalue: &str, spec: &SpecifierValues) -> ExecLine {
    if rvalue.is_empty() {
        return ExecLine::Reset;
    }
    let s = rvalue.as_bytes();
    let mut pos = 0;
    let mut commands = Vec::new();
    let mut warnings = Vec::new();
    let fail = |msg: String, ignore: bool, commands: Vec<ExecCommand>, warnings: Vec<String>| {
        ExecLine::Append {
            commands,
            warnings,
            error: Some(msg),
            fatal: !ignore,
        }
    };
    // An unusable first word drops the rest of the line, not fatal.
    while let Ok(Some((first, relaxed))) = extract_word_relaxed(s, &mut pos, UNIT) {
        if relaxed {
            warnings.push(format!(
                "Ignoring unknown escape sequences: \"{}\"",
                String::from_utf8_lossy(&first)
            ));
        }
        if first == b";" {
            continue;
        }
        let mut f = first.as_slice();
        let (mut ignore, mut at, mut colon) = (false, false, false);
        let mut privilege: Option<&str> = None;
        loop {
            match f.first() {
                Some(b'-') if !ignore => ignore = true,
                Some(b'@') if !at => at = true,
                Some(b':') if !colon => colon = true,
                Some(b'+') if privilege.is_none() => privilege = Some("+"),
                Some(b'!') if privilege.is_none() => privilege = Some("!"),
                Some(b'!') if privilege == Some("!") => privilege = Some("!!"),
                _ => break,
            }
            f = &f[1..];
        }
        let path = match spec.expand(f) {
            Ok(p) => p,
            Err(e) => {
                return fail(
                    format!(
                        "Failed to resolve unit specifiers in '{}': {e}",
                        String::from_utf8_lossy(f)
                    ),
                    ignore,
                    commands,
                    warnings,
                );
            }
        };
        let shown = String::from_utf8_lossy(&path).into_owned();
        if path.is_empty() {
            return fail(
                format!("Empty path in command line: '{rvalue}'"),
                ignore,
                commands,
                warnings,
            );
        }
        if !string_is_safe(&path) {
            return fail(
                format!("Executable name contains special characters: {shown}"),
                ignore,
                commands,
                warnings,
            );
        }
        if implies_directory(&path) {
            return fail(
                format!("Executable path specifies a directory: {shown}"),
                ignore,
                commands,
                warnings,
            );
        }
        if !path.starts_with(b"/") && !filename_is_valid(&path) {
            return fail(
                format!("Neither a valid executable name nor an absolute path: {shown}"),
                ignore,
                commands,
                warnings,
            );
        }
        let mut argv: Vec<Vec<u8>> = Vec::new();
        if !at {
            argv.push(path.clone());
        }
        let mut semicolon = false;
        loop {
            while pos < s.len() && is_separator(s[pos]) {
                pos += 1;
            }
            if pos >= s.len() {
                break;
            }
            let next = s.get(pos + 1);
            // A raw, unquoted `;` word separates commands; `\;` is a literal.
            if s[pos] == b';' && next.is_none_or(|&c| is_separator(c)) {
                pos += 1;
                semicolon = true;
                break;
            }
            if s[pos] == b'\\'
                && next == Some(&b';')
                && s.get(pos + 2).is_none_or(|&c| is_separator(c))
            {
                pos += 2;
                argv.push(b";".to_vec());
                continue;
            }
            let word = match extract_word_relaxed(s, &mut pos, UNIT) {
                Ok(Some((w, relaxed))) => {
                    if relaxed {
                        warnings.push(format!(
                            "Ignoring unknown escape sequences: \"{}\"",
                            String::from_utf8_lossy(&w)
                        ));
                    }
                    w
                }
                Ok(None) => break,
                Err(_) => {
                    return fail(
                        format!("Unbalanced quoting: \"{rvalue}\""),
                        ignore,
                        commands,
                        warnings,
                    );
                }
            };
            match spec.expand(&word) {
                Ok(w) => argv.push(w),
                Err(e) => {
                    return fail(
                        format!(
                            "Failed to resolve unit specifiers in {}: {e}",
                            String::from_utf8_lossy(&word)
                        ),
                        ignore,
                        commands,
                        warnings,
                    );
                }
            }
        }
        if argv.is_empty() {
            return fail(
                format!("Empty executable name or zeroeth argument: {rvalue}"),
                ignore,
                commands,
                warnings,
            );
        }
        commands.push(ExecCommand {
            path,
            argv,
            ignore_failure: ignore,
            argv0_given: at,
            no_env_expand: colon,
            privilege_prefix: privilege.map(str::to_string),
        });
        if !semicolon {
            break;
        }
    }
    ExecLine::Append {
        commands,
        warnings,
        error: None,
        fatal: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::sorted::SortedMap;
    use crate::node::unit::specifier::Host;

    fn spec() -> SpecifierValues {
        SpecifierValues {
            host: Host::Fixed(SortedMap::new()),
            unit: "p04.service".into(),
            fragment: None,
            cache: Default::default(),
        }
    }

    fn cmds(v: &str) -> Vec<ExecCommand> {
        match parse_exec(v, &spec()) {
            ExecLine::Append {
                commands,
                error: None,
                ..
            } => commands,
            other => panic!("{other:?}"),
        }
    }

    fn argv(c: &ExecCommand) -> Vec<String> {
        c.argv
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    #[test]
    fn prefixes_in_any_order() {
        let c = &cmds("+@-:/R zero ${X}")[0];
        assert!(c.ignore_failure && c.argv0_given && c.no_env_expand);
        assert_eq!(c.privilege_prefix.as_deref(), Some("+"));
        assert_eq!(argv(c), ["zero", "${X}"]);
        let c = &cmds("!!@/R zero x")[0];
        assert_eq!(c.privilege_prefix.as_deref(), Some("!!"));
        assert!(matches!(
            parse_exec("+!/R x", &spec()),
            ExecLine::Append { fatal: true, .. }
        ));
        assert!(matches!(
            parse_exec("--/R x", &spec()),
            ExecLine::Append {
                fatal: false,
                error: Some(_),
                ..
            }
        ));
        // a quoted or escaped prefix still counts
        assert!(cmds("\"@/R\" zero q")[0].argv0_given);
    }

    #[test]
    fn semicolons() {
        let c = cmds(r#"/R a;b ";" \; x\; ';' "\;""#);
        assert_eq!(c.len(), 1);
        assert_eq!(argv(&c[0]), ["/R", "a;b", ";", ";", "x\\;", ";", "\\;"]);
        assert_eq!(cmds("/R one ; /R two").len(), 2);
        assert_eq!(cmds("/R z ;").len(), 1);
    }

    #[test]
    fn path_checks() {
        for bad in ["./recx x", "@/R", "/usr/bin/", "\"/R\\x22\" x"] {
            assert!(
                matches!(
                    parse_exec(bad, &spec()),
                    ExecLine::Append { error: Some(_), .. }
                ),
                "{bad}"
            );
        }
        let c = &cmds("recx rel")[0];
        assert_eq!(c.path, b"recx");
        let c = &cmds("/usr/local//sbin/./recx x")[0];
        assert_eq!(argv(c)[0], "/usr/local//sbin/./recx");
    }

    #[test]
    fn specifiers_after_unescaping() {
        assert_eq!(
            argv(&cmds(r#"/R \x25n "%%n" '%n' %%%n"#)[0])[1..],
            ["p04.service", "%n", "p04.service", "%p04.service"]
        );
        assert!(matches!(
            parse_exec("/R %z", &spec()),
            ExecLine::Append { fatal: true, .. }
        ));
        assert!(matches!(
            parse_exec("-/R %z", &spec()),
            ExecLine::Append {
                fatal: false,
                error: Some(_),
                ..
            }
        ));
    }
}
