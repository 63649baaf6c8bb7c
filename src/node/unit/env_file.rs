//! Environment files (`EnvironmentFile=`) as systemd 252 reads them:
//! their grammar, what it refuses whole, and what one may set.

use super::env::{EXEC_STRINGS_MAX, WORD_OVERHEAD, keep_last, name_is_valid};
use super::syntax::systemd_utf8;

/// Why systemd would not apply an environment file as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvFileError {
    /// systemd 252 refuses the whole file: an optional one (`-`) sets
    /// nothing, another fails the unit's start (review 43 r43a F1).
    Refused(String),
    /// What it sets comes to more than exec takes: the service cannot start.
    TooBig,
}

impl EnvFileError {
    /// What systemd 252 then does, for an optional (`-`) file or not.
    pub fn consequence(&self, optional: bool) -> &'static str {
        match (self, optional) {
            (EnvFileError::Refused(_), true) => {
                ", so none of it applies (systemd leaves an optional file out whole)"
            }
            (EnvFileError::Refused(_), false) => {
                ", so the unit never starts (systemd fails its start on it)"
            }
            // Review 44 r44c F3: systemd drops each value past its own
            // bound (about 2 MiB) and starts with the rest, or fails with
            // E2BIG: which, only the node's limits tell.
            (EnvFileError::TooBig, _) => {
                ": systemd drops each value over about 2 MiB and fails the start if the rest \
                 is still too big, so what the unit gets is unknown; keep it small"
            }
        }
    }
}

impl std::fmt::Display for EnvFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnvFileError::Refused(why) => write!(f, "systemd does not load it: {why}"),
            EnvFileError::TooBig => write!(
                f,
                "what it sets comes to more than the {} MiB exec takes (E2BIG)",
                EXEC_STRINGS_MAX >> 20
            ),
        }
    }
}

/// Parse an environment file (systemd 252 grammar, before v254's change to
/// comments ending in a backslash). Later keys win; invalid names dropped.
/// As systemd: a NUL byte anywhere (read_full_stream) or a name or value
/// that is not UTF-8 (load_env_file_push) refuses the whole file. Repeats
/// are dropped as the file is read, so what is held is what it sets, not
/// a pair per line (review 43 r43c F2: 30 bytes a byte of file).
pub fn parse_env_file(data: &[u8]) -> Result<Vec<(String, Vec<u8>)>, EnvFileError> {
    if data.contains(&0) {
        return Err(EnvFileError::Refused("it holds a NUL byte".into()));
    }
    #[derive(PartialEq)]
    enum S {
        PreKey,
        Key,
        PreValue,
        Value,
        ValueEscape,
        Single,
        Double,
        DoubleEscape,
        Comment,
        CommentEscape,
    }
    let ws = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
    let nl = |c: u8| c == b'\n' || c == b'\r';
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let mut state = S::PreKey;
    let mut key: Vec<u8> = Vec::new();
    let mut value: Vec<u8> = Vec::new();
    let mut key_ws: Option<usize> = None;
    let mut value_ws: Option<usize> = None;
    let (mut line, mut compact_at) = (1usize, COMPACT_EVERY);
    let mut push = |key: &mut Vec<u8>,
                    value: &mut Vec<u8>,
                    key_ws: Option<usize>,
                    value_ws: Option<usize>,
                    line: usize|
     -> Result<(), EnvFileError> {
        if let Some(k) = key_ws {
            key.truncate(k);
        }
        if let Some(v) = value_ws {
            value.truncate(v);
        }
        // Review 44 r44a F1: systemd's UTF-8 has no noncharacters either.
        if systemd_utf8(key).is_none() || systemd_utf8(value).is_none() {
            let why = format!("the assignment ending on line {line} is not UTF-8 to systemd");
            return Err(EnvFileError::Refused(why));
        }
        if name_is_valid(key) {
            let k = String::from_utf8_lossy(key).into_owned();
            out.push((k, std::mem::take(value)));
        }
        key.clear();
        value.clear();
        if out.len() >= compact_at {
            keep_last(&mut out);
            if exec_cost(&out) > EXEC_STRINGS_MAX {
                return Err(EnvFileError::TooBig);
            }
            compact_at = (out.len() * 2).max(COMPACT_EVERY);
        }
        Ok(())
    };
    for &c in data {
        match state {
            S::PreKey => {
                if c == b'#' || c == b';' {
                    state = S::Comment;
                } else if !ws(c) {
                    state = S::Key;
                    key_ws = None;
                    key.push(c);
                }
            }
            S::Key => {
                if nl(c) {
                    state = S::PreKey;
                    key.clear();
                } else if c == b'=' {
                    state = S::PreValue;
                    value_ws = None;
                } else {
                    if !ws(c) {
                        key_ws = None;
                    } else if key_ws.is_none() {
                        key_ws = Some(key.len());
                    }
                    key.push(c);
                }
            }
            S::PreValue => {
                if nl(c) {
                    state = S::PreKey;
                    push(&mut key, &mut value, key_ws, None, line)?;
                } else if c == b'\'' {
                    state = S::Single;
                } else if c == b'"' {
                    state = S::Double;
                } else if c == b'\\' {
                    state = S::ValueEscape;
                } else if !ws(c) {
                    state = S::Value;
                    value.push(c);
                }
            }
            S::Value => {
                if nl(c) {
                    state = S::PreKey;
                    push(&mut key, &mut value, key_ws, value_ws, line)?;
                } else if c == b'\\' {
                    state = S::ValueEscape;
                    value_ws = None;
                } else {
                    if !ws(c) {
                        value_ws = None;
                    } else if value_ws.is_none() {
                        value_ws = Some(value.len());
                    }
                    value.push(c);
                }
            }
            S::ValueEscape => {
                state = S::Value;
                // An escaped newline is eaten whole.
                if !nl(c) {
                    value.push(c);
                }
            }
            S::Single => {
                if c == b'\'' {
                    state = S::PreValue;
                } else {
                    value.push(c);
                }
            }
            S::Double => {
                if c == b'"' {
                    state = S::PreValue;
                } else if c == b'\\' {
                    state = S::DoubleEscape;
                } else {
                    value.push(c);
                }
            }
            S::DoubleEscape => {
                state = S::Double;
                if b"\"\\`$".contains(&c) {
                    value.push(c);
                } else if c != b'\n' {
                    value.push(b'\\');
                    value.push(c);
                }
            }
            S::Comment => {
                if c == b'\\' {
                    state = S::CommentEscape;
                } else if nl(c) {
                    state = S::PreKey;
                }
            }
            S::CommentEscape => state = S::Comment,
        }
        line += usize::from(c == b'\n');
    }
    match state {
        S::PreValue | S::ValueEscape | S::Single | S::Double | S::DoubleEscape => {
            push(&mut key, &mut value, key_ws, None, line)?
        }
        S::Value => push(&mut key, &mut value, key_ws, value_ws, line)?,
        _ => {}
    }
    keep_last(&mut out);
    match exec_cost(&out) > EXEC_STRINGS_MAX {
        true => Err(EnvFileError::TooBig),
        false => Ok(out),
    }
}

/// Assignments read before repeats are first dropped.
const COMPACT_EVERY: usize = 4096;

/// What `set` costs exec: `NAME=value`, its NUL and its pointer each.
fn exec_cost(set: &[(String, Vec<u8>)]) -> usize {
    set.iter()
        .map(|(k, v)| k.len() + v.len() + WORD_OVERHEAD + 1)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_file_grammar() {
        let text = "A=plain value  \n B = spaced\nC=\"double \\\"quoted\\\" $x \\n \\\\ end\"\n\
                    D='single \\n $x \\'\nE=unquoted\\ with\\ escapes\\nx41\nF=\"multi\nline\"\n\
                    G=contin\\\nued\nH=\"x\" y\nexport I=x\n# comment \\\nM=swallowed\nL=#notcomment\n\
                    N='a'\"b\"\nO=a\"b\"c\n9BAD=x\nK=first\nK=second";
        let got: Vec<(String, String)> = parse_env_file(text.as_bytes())
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k, String::from_utf8(v).unwrap()))
            .collect();
        let get = |k: &str| got.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("A"), Some("plain value"));
        assert_eq!(get("B"), Some("spaced"));
        assert_eq!(get("C"), Some("double \"quoted\" $x \\n \\ end"));
        assert_eq!(get("D"), Some("single \\n $x \\"));
        assert_eq!(get("E"), Some("unquoted with escapesnx41"));
        assert_eq!(get("F"), Some("multi\nline"));
        assert_eq!(get("G"), Some("continued"));
        assert_eq!(get("H"), Some("xy"));
        assert_eq!(get("I"), None);
        assert_eq!(get("M"), None);
        assert_eq!(get("L"), Some("#notcomment"));
        assert_eq!(get("N"), Some("ab"));
        assert_eq!(get("O"), Some("a\"b\"c"));
        assert_eq!(get("K"), Some("second"));
    }

    /// What systemd 252 refuses whole, it refuses whole (review 43 r43a F1:
    /// a line not UTF-8 was dropped and the rest kept, so plan judged a
    /// file that fails kubelet's start as setting our variables).
    #[test]
    fn env_file_refused_whole_as_systemd_refuses_it() {
        let refused = |data: &[u8]| matches!(parse_env_file(data), Err(EnvFileError::Refused(_)));
        assert!(refused(b"A=1\nB=2\0"));
        assert!(refused(b"\0"));
        assert!(refused(b"A=1\nX=\xff\nY=2\n"));
        assert!(refused(b"\xffX=1\n"));
        assert!(refused(b"X=\"a\xfe\"\n"));
        // Nor a noncharacter, in a value or a name systemd then drops.
        assert!(refused("A=x\u{fffe}\n".as_bytes()));
        assert!(refused("A=\u{fdd0}\n".as_bytes()));
        assert!(refused("-=\u{10ffff}\n".as_bytes()));
        assert_eq!(parse_env_file("A=x\u{feff}\n".as_bytes()).unwrap().len(), 1);
        let why = parse_env_file(b"A=1\nX=\xff\n").unwrap_err().to_string();
        assert!(why.contains("line 2"), "{why}");
        // A comment is not an assignment; an invalid name is dropped alone.
        assert_eq!(parse_env_file(b"# \xff\nA=1\n").unwrap().len(), 1);
        assert_eq!(parse_env_file(b"A-B=1\nC=2\n").unwrap().len(), 1);
    }

    /// Repeats are dropped as the file is read, and a file setting more
    /// than exec takes is refused (review 43 r43c F2: 16 MiB of `A=`
    /// lines took 498 MB).
    #[test]
    fn env_file_repeats_are_dropped_as_read_and_its_size_bounded() {
        let many = "A=\n".repeat(1 << 20);
        assert_eq!(
            parse_env_file(many.as_bytes()).unwrap(),
            [("A".into(), vec![])]
        );
        let distinct: String = (0..EXEC_STRINGS_MAX / 12)
            .map(|i| format!("V{i:07}=\n"))
            .collect();
        assert_eq!(
            parse_env_file(distinct.as_bytes()),
            Err(EnvFileError::TooBig)
        );
        let fits: String = (0..EXEC_STRINGS_MAX / 40)
            .map(|i| format!("V{i:07}=\n"))
            .collect();
        assert_eq!(
            parse_env_file(fits.as_bytes()).unwrap().len(),
            EXEC_STRINGS_MAX / 40
        );
    }
}
