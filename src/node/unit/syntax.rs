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
    pub warnings: super::warnings::Warnings,
}

/// systemd's LONG_LINE_MAX: a line of this many bytes, or a continued line
/// past it, ends the parse of its file (conf-parser.c: "Line too long").
pub const LONG_LINE_MAX: usize = 1 << 20;

/// The UTF-8 byte order mark, which systemd skips at the start of the first
/// line that has one (not only the file's first).
const BOM: &[u8] = b"\xef\xbb\xbf";

/// Split into lines as systemd's read_line does: a line ends at `\n`, `\r`
/// or NUL, and one end may be several of them, each kind at most once and
/// a NUL only last (`\r\n`, `\n\r`, `\n\0`, `\n\r\0` are each one end; `\n\n`
/// is two). Err(lines before it): a line of [`LONG_LINE_MAX`] bytes or more.
fn physical_lines(data: &[u8]) -> Result<Vec<&[u8]>, Vec<&[u8]>> {
    let mut lines = Vec::new();
    let mut i = 0;
    while i < data.len() {
        let start = i;
        while i < data.len() && !matches!(data[i], b'\n' | b'\r' | 0) {
            i += 1;
        }
        if i - start >= LONG_LINE_MAX {
            return Err(lines);
        }
        lines.push(&data[start..i]);
        let mut seen = 0u8;
        while let Some(kind) = data.get(i).and_then(|c| match c {
            b'\n' => Some(1u8),
            b'\r' => Some(2),
            0 => Some(4),
            _ => None,
        }) {
            if seen & (kind | 4) != 0 {
                break;
            }
            seen |= kind;
            i += 1;
        }
    }
    Ok(lines)
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

/// Parse one unit file or drop-in (bytes as read), as systemd's
/// config_parse: what comes before a fatal error applies.
pub fn parse(data: &[u8], name: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut section: Option<String> = None;
    let mut pending: Option<(Vec<u8>, usize)> = None;
    let (lines, too_long) = match physical_lines(data) {
        Ok(lines) => (lines, false),
        Err(lines) => (lines, true),
    };
    let mut bom_seen = false;
    for (n, raw) in lines.iter().enumerate() {
        let lineno = n + 1;
        // Comment lines are dropped even inside a continuation (looked at
        // before a byte order mark is skipped, as systemd does).
        if strip(raw).first().is_some_and(|c| *c == b'#' || *c == b';') {
            continue;
        }
        let raw = match raw.strip_prefix(BOM) {
            Some(rest) if !bom_seen => {
                bom_seen = true;
                rest
            }
            _ => raw,
        };
        let (mut logical, start) = match pending.take() {
            Some((mut acc, start)) => {
                if acc.len() + raw.len() > LONG_LINE_MAX {
                    parsed.fatal = Some(format!("{name}:{lineno}: Continuation line too long"));
                    return parsed;
                }
                acc.extend_from_slice(raw);
                (acc, start)
            }
            None => (raw.to_vec(), lineno),
        };
        if continues(&logical) {
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
    if too_long {
        parsed.fatal = Some(format!("{name}:{}: Line too long", lines.len() + 1));
        return parsed;
    }
    if let Some((logical, start)) = pending
        && let Err(e) = handle_line(&logical, start, name, &mut section, &mut parsed)
    {
        parsed.fatal = Some(e);
    }
    parsed
}

/// systemd's utf8_is_valid: UTF-8, and no noncharacter (U+FDD0..U+FDEF,
/// U+xFFFE, U+xFFFF), which Rust's UTF-8 allows.
pub(super) fn systemd_utf8(l: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(l).ok()?;
    let nonchar = |c: char| matches!(c as u32, 0xFDD0..=0xFDEF) || c as u32 & 0xFFFE == 0xFFFE;
    (!s.contains(nonchar)).then_some(s)
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
    let l = systemd_utf8(l).ok_or_else(|| format!("{name}:{line}: invalid UTF-8"))?;
    if l.starts_with('[') {
        if !l.ends_with(']') || l.len() < 2 {
            return Err(format!("{name}:{line}: Invalid section header"));
        }
        let s = &l[1..l.len() - 1];
        // systemd's string_is_safe: no control character, quote,
        // backslash or DEL in a section's name.
        if s.bytes()
            .any(|b| b < b' ' || matches!(b, b'"' | b'\'' | b'\\' | 0x7f))
        {
            return Err(format!("{name}:{line}: Bad characters in section header"));
        }
        *section = Some(s.to_string());
        if !matches!(s, "Unit" | "Service" | "Install") && !s.starts_with("X-") {
            parsed
                .warnings
                .push_with(|| format!("{name}:{line}: Unknown section '{s}'. Ignoring."));
        }
        return Ok(());
    }
    let Some(sect) = section.as_ref() else {
        parsed
            .warnings
            .push_with(|| format!("{name}:{line}: Assignment outside of section. Ignoring."));
        return Ok(());
    };
    let Some((key, value)) = l.split_once('=') else {
        parsed
            .warnings
            .push_with(|| format!("{name}:{line}: Missing '=', ignoring line."));
        return Ok(());
    };
    parsed.assignments.push(Assignment {
        section: sect.clone(),
        key: key
            .trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r'))
            .to_string(),
        value: value
            .trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r'))
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

    /// Line ends as systemd's read_line takes them: `\n\r` and `\n\0` are
    /// one end, so a continued line goes on across them (it used to end
    /// there, and the words after it were lost: a `--register-with-taints`
    /// systemd passes on).
    #[test]
    fn line_ends_of_several_bytes_are_one() {
        for end in ["\n\r", "\n\0", "\r\n", "\n\r\0", "\r\n\0", "\r\0"] {
            let text = format!("[S]\nA=a \\{end}b\nB=1\n");
            assert_eq!(
                values(&text),
                vec![kv("A", "a  b"), kv("B", "1")],
                "{end:?}"
            );
        }
        // The same kind twice, or anything after a NUL, is another line.
        for end in ["\n\n", "\r\r", "\0\n", "\0\0", "\n\r\n"] {
            let text = format!("[S]\nA=a \\{end}b=2\n");
            assert_eq!(values(&text), vec![kv("A", "a"), kv("b", "2")], "{end:?}");
        }
    }

    /// The first line that starts with a byte order mark loses it, wherever
    /// it is; a second keeps it.
    #[test]
    fn a_byte_order_mark_is_skipped_once_on_any_line() {
        let bom = "\u{feff}";
        assert_eq!(
            values(&format!("[S]\nA=1\n{bom}B=2\n{bom}C=3\n")),
            vec![kv("A", "1"), kv("B", "2"), kv(&format!("{bom}C"), "3")]
        );
    }

    /// What ends systemd's parse of a file ends ours: a section name with a
    /// quote, backslash or control character, a noncharacter (valid UTF-8
    /// to Rust), a line of LONG_LINE_MAX bytes, a continued line past it.
    /// What came before stays.
    #[test]
    fn errors_that_end_the_parse_as_systemds() {
        let fatal = |text: &[u8]| {
            let p = parse(text, "t");
            assert_eq!(p.assignments.len(), 1, "{:?}", p.assignments);
            p.fatal.unwrap_or_else(|| panic!("not fatal: {text:?}"))
        };
        for header in ["[X-\"q\"]", "[X-'q']", "[X-a\\b]", "[X-\x01]", "[X-\x7f]"] {
            let e = fatal(format!("[S]\nA=1\n{header}\n[S]\nB=2\n").as_bytes());
            assert!(e.contains("Bad characters in section header"), "{e}");
        }
        for nonchar in [
            "\u{fdd0}",
            "\u{fdef}",
            "\u{fffe}",
            "\u{ffff}",
            "\u{1fffe}",
            "\u{10ffff}",
        ] {
            let e = fatal(format!("[S]\nA=1\nX={nonchar}\nB=2\n").as_bytes());
            assert!(e.contains("invalid UTF-8"), "{e}");
        }
        assert_eq!(values("[S]\nA=\u{fdcf}\u{fdf0}\u{fffd}\n").len(), 1);
        let long = |n: usize| format!("[S]\nA=1\nX={}\nB=2\n", "x".repeat(n - 2));
        assert_eq!(parse(long(LONG_LINE_MAX - 1).as_bytes(), "t").fatal, None);
        let e = fatal(long(LONG_LINE_MAX).as_bytes());
        assert!(e.contains("t:3: Line too long"), "{e}");
        let half = "x".repeat(LONG_LINE_MAX / 2);
        let e = fatal(format!("[S]\nA=1\nX={half}\\\n{half}\\\nB=2\n").as_bytes());
        assert!(e.contains("Continuation line too long"), "{e}");
    }

    /// Only space, tab, CR and LF are whitespace to systemd: a form feed or
    /// a vertical tab stays on a key (an unknown one) and on a value.
    #[test]
    fn a_form_feed_is_no_whitespace() {
        assert_eq!(
            values("[S]\n\u{c}ExecStart=x\nA=\u{c}\nB=\u{b}y\n"),
            vec![
                kv("\u{c}ExecStart", "x"),
                kv("A", "\u{c}"),
                kv("B", "\u{b}y")
            ]
        );
    }

    /// Review 41 r41b F1: a warning per line of a file of many bad lines
    /// is kept for the first lines only, one more line counting the rest.
    #[test]
    fn warnings_of_a_file_are_bounded() {
        use crate::node::unit::warnings::WARNINGS_MAX;
        let p = parse("a\n".repeat(100_000).as_bytes(), "t");
        assert_eq!(p.warnings.len(), WARNINGS_MAX + 1);
        assert_eq!(
            p.warnings[0],
            "t:1: Assignment outside of section. Ignoring."
        );
        assert!(
            p.warnings[WARNINGS_MAX].starts_with(&format!("and {} more", 100_000 - WARNINGS_MAX)),
            "{}",
            p.warnings[WARNINGS_MAX]
        );
    }
}
