//! Unit-file syntax (systemd.syntax(7)): lines, comments, continuation,
//! sections, `Key=Value`, and which errors end the parse of a file.

/// One assignment, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub section: String,
    pub key: String,
    pub value: String,
    /// 1-based line of the assignment's first physical line.
    pub line: usize,
}

/// A file's assignments, and the error that stopped its parse, if any
/// (systemd keeps what came before a fatal error).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub assignments: Vec<Assignment>,
    pub fatal: Option<String>,
    pub warnings: Vec<String>,
}

/// Split into physical lines at `\n`, `\r`, `\r\n` or NUL.
fn physical_lines(data: &[u8]) -> Vec<&[u8]> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            b'\n' | b'\0' => {
                lines.push(&data[start..i]);
                start = i + 1;
            }
            b'\r' => {
                lines.push(&data[start..i]);
                if data.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < data.len() {
        lines.push(&data[start..]);
    }
    lines
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn strip(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&c| !is_ws(c)).unwrap_or(s.len());
    let end = s.iter().rposition(|&c| !is_ws(c)).map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// Does the line end in an odd number of backslashes?
fn continues(line: &[u8]) -> bool {
    line.iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1
}

/// Parse one unit file or drop-in (bytes as read).
pub fn parse(data: &[u8], name: &str) -> Parsed {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    let mut parsed = Parsed::default();
    let mut section: Option<String> = None;
    let mut pending: Option<(Vec<u8>, usize)> = None;
    let lines = physical_lines(data);
    for (n, raw) in lines.iter().enumerate() {
        let lineno = n + 1;
        let trimmed = strip(raw);
        // Comment lines are dropped even inside a continuation.
        if trimmed.first().is_some_and(|c| *c == b'#' || *c == b';') {
            continue;
        }
        let (mut logical, start) = match pending.take() {
            Some((mut acc, start)) => {
                if trimmed.is_empty() {
                    // An empty line ends a continuation.
                    (acc, start)
                } else {
                    acc.extend_from_slice(raw);
                    (acc, start)
                }
            }
            None => (raw.to_vec(), lineno),
        };
        if !trimmed.is_empty() && continues(&logical) {
            let last = logical.len() - 1;
            logical[last] = b' ';
            pending = Some((logical, start));
            continue;
        }
        if let Err(e) = handle_line(&logical, start, name, &mut section, &mut parsed) {
            parsed.fatal = Some(e);
            return parsed;
        }
    }
    if let Some((logical, start)) = pending
        && let Err(e) = handle_line(&logical, start, name, &mut section, &mut parsed)
    {
        parsed.fatal = Some(e);
    }
    parsed
}

fn handle_line(
    logical: &[u8],
    line: usize,
    name: &str,
    section: &mut Option<String>,
    parsed: &mut Parsed,
) -> Result<(), String> {
    let l = strip(logical);
    if l.is_empty() {
        return Ok(());
    }
    let l = std::str::from_utf8(l).map_err(|_| format!("{name}:{line}: invalid UTF-8"))?;
    if l.starts_with('[') {
        if !l.ends_with(']') || l.len() < 2 {
            return Err(format!("{name}:{line}: Invalid section header '{l}'"));
        }
        let s = &l[1..l.len() - 1];
        *section = Some(s.to_string());
        if !matches!(s, "Unit" | "Service" | "Install") && !s.starts_with("X-") {
            parsed
                .warnings
                .push(format!("{name}:{line}: Unknown section '{s}'. Ignoring."));
        }
        return Ok(());
    }
    let Some(sect) = section.as_ref() else {
        parsed.warnings.push(format!(
            "{name}:{line}: Assignment outside of section. Ignoring."
        ));
        return Ok(());
    };
    let Some((key, value)) = l.split_once('=') else {
        parsed
            .warnings
            .push(format!("{name}:{line}: Missing '=', ignoring line."));
        return Ok(());
    };
    parsed.assignments.push(Assignment {
        section: sect.clone(),
        key: key
            .trim_matches(|c: char| c.is_ascii_whitespace())
            .to_string(),
        value: value
            .trim_matches(|c: char| c.is_ascii_whitespace())
            .to_string(),
        line,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<(String, String)> {
        let p = parse(text.as_bytes(), "t");
        assert_eq!(p.fatal, None);
        p.assignments
            .into_iter()
            .map(|a| (a.key, a.value))
            .collect()
    }

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn no_inline_comments_and_comment_lines_dropped() {
        assert_eq!(
            values("[Service]\n# c\n; c\nExecStart=/x a # b\n"),
            vec![kv("ExecStart", "/x a # b")]
        );
    }

    #[test]
    fn continuation_rules() {
        // odd backslashes continue, the backslash becomes a space; comments inside are dropped
        assert_eq!(
            values("[Service]\nExecStart=/x one \\\n# c \\\n; c2\n   two\n"),
            vec![kv("ExecStart", "/x one     two")]
        );
        // "a \⏎b" keeps the leading space of the next line verbatim
        assert_eq!(
            values("[S]\nA=\"a \\\nb\" c\n"),
            vec![kv("A", "\"a  b\" c")]
        );
        // even backslashes: no continuation
        assert_eq!(
            values("[S]\nA=x\\\\\nB=y\n"),
            vec![kv("A", "x\\\\"), kv("B", "y")]
        );
        // an empty line ends it; the next line is on its own
        let p = parse(b"[S]\nA=a \\\n\n  b\n", "t");
        assert_eq!(p.assignments.len(), 1);
        assert_eq!(p.assignments[0].value, "a");
        assert!(p.warnings.iter().any(|w| w.contains("Missing '='")));
        // whitespace after the backslash: no continuation
        assert_eq!(
            values("[S]\nA=a \\   \nB=1\n"),
            vec![kv("A", "a \\"), kv("B", "1")]
        );
        // pending at EOF is parsed, its backslash a space
        assert_eq!(values("[S]\nA=a end\\\n"), vec![kv("A", "a end")]);
    }

    #[test]
    fn sections_keys_and_line_endings() {
        assert_eq!(
            values("[S]\r\nA = 1 \t\r\nB=2\rC=3"),
            vec![kv("A", "1"), kv("B", "2"), kv("C", "3")]
        );
        assert_eq!(values("\u{feff}[S]\nA=1\n"), vec![kv("A", "1")]);
        let p = parse(b"[Service] # c\nA=1\n", "t");
        assert!(p.fatal.unwrap().contains("Invalid section header"));
        let p = parse(b"A=1\n[S]\nB=2\n", "t");
        assert_eq!(p.assignments.len(), 1);
        let p = parse(b"[S]\nA=1\nB=\xff\nC=3\n", "t");
        assert!(p.fatal.is_some());
        assert_eq!(p.assignments.len(), 1);
    }
}
