//! The service environment: `Environment=`, `EnvironmentFile=` (systemd
//! 252's env-file grammar), and exec-time `$NAME`/`${NAME}` expansion.
//! See systemd.exec(5) "Environment" and systemd.service(5) "Command lines".

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::words::{ENV_VALUE, UNIT, extract_first_word};
use crate::node::sorted::SortedMap;

/// `[A-Za-z_][A-Za-z0-9_]*`
pub fn name_is_valid(name: &[u8]) -> bool {
    !name.is_empty()
        && !name[0].is_ascii_digit()
        && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

fn value_is_valid(v: &[u8]) -> bool {
    std::str::from_utf8(v).is_ok()
        && !v
            .iter()
            .any(|&c| (c < b' ' && c != b'\t' && c != b'\n') || c == 127)
}

/// Specifier expansion as a callback (keeps env.rs free of unit names).
pub type Expand<'a> = &'a dyn Fn(&[u8]) -> Result<Vec<u8>, String>;

/// One `Environment=` value: words with quotes and C escapes; an invalid
/// word (or a bad escape: no relaxed retry here) drops the rest of the line.
/// `expand` applies specifiers. Returns (assignments, warnings).
pub fn parse_environment_line(
    rvalue: &str,
    expand: Expand,
) -> (Vec<(String, Vec<u8>)>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let s = rvalue.as_bytes();
    let mut pos = 0;
    loop {
        let word = match extract_first_word(s, &mut pos, UNIT) {
            Ok(Some(w)) => w,
            Ok(None) => break,
            Err(_) => {
                warnings.push(format!("Invalid syntax, ignoring: {rvalue}"));
                break;
            }
        };
        let word = match expand(&word) {
            Ok(w) => w,
            Err(e) => {
                warnings.push(format!(
                    "Failed to resolve specifiers in {}: {e}",
                    String::from_utf8_lossy(&word)
                ));
                continue;
            }
        };
        match word.iter().position(|&c| c == b'=') {
            Some(eq) if name_is_valid(&word[..eq]) && value_is_valid(&word[eq + 1..]) => {
                let name = String::from_utf8_lossy(&word[..eq]).into_owned();
                out.push((name, word[eq + 1..].to_vec()));
            }
            _ => warnings.push(format!(
                "Invalid environment assignment, ignoring: {}",
                String::from_utf8_lossy(&word)
            )),
        }
    }
    (out, warnings)
}

/// The most bytes of argument strings (their NULs included) and their
/// pointers an exec takes, whatever the stack limit (fs/exec.c: 3/4 of
/// `_STK_LIM`, less a pointer per string): a command that expands past it
/// can never run, under systemd or the wrapper, so its expansion stops
/// there (a 200 KiB unit file of `$A`s took gigabytes and minutes).
pub const EXEC_STRINGS_MAX: usize = 6 << 20;

/// What one more word costs exec besides its bytes: its NUL and its
/// pointer (review 42 r42b F5: 3,000,000 one-byte words, 6 MB of strings
/// but 30 MB to exec, were kept and listed, taking 1 GB).
pub(super) const WORD_OVERHEAD: usize = 1 + std::mem::size_of::<usize>();

/// The environment by name, the last assignment of a name winning: one
/// lookup a reference, not a scan of the environment.
type Index<'a> = SortedMap<&'a [u8], &'a OsStr>;

/// `${NAME}` → value (or empty), `$$` → `$`; anything else stays literal.
/// Err once `left` bytes are spent.
fn replace_env(word: &[u8], env: &Index, left: &mut usize) -> Result<Vec<u8>, ()> {
    let mut out = Vec::with_capacity(word.len().min(*left));
    let mut put = |out: &mut Vec<u8>, b: &[u8]| {
        *left = left.checked_sub(b.len()).ok_or(())?;
        out.extend_from_slice(b);
        Ok(())
    };
    let mut i = 0;
    while i < word.len() {
        if word[i] == b'$' {
            match word.get(i + 1) {
                Some(b'$') => {
                    put(&mut out, b"$")?;
                    i += 2;
                    continue;
                }
                Some(b'{') => {
                    let rest = &word[i + 2..];
                    // `:` (as in `${A:-d}`) is syntax systemd does not do.
                    match rest.iter().position(|&c| c == b'}' || c == b':') {
                        Some(end) if rest[end] == b'}' => {
                            if let Some(v) = env.get(&rest[..end]) {
                                put(&mut out, v.as_bytes())?;
                            }
                            i += 2 + end + 1;
                            continue;
                        }
                        Some(colon) => {
                            // Left literal up to and including the ':'.
                            put(&mut out, &word[i..i + 2 + colon + 1])?;
                            i += 2 + colon + 1;
                            continue;
                        }
                        None => {
                            put(&mut out, &word[i..])?;
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
        put(&mut out, &word[i..=i])?;
        i += 1;
    }
    Ok(out)
}

/// systemd's replace_env_argv: a word that is `$NAME` becomes the value
/// split into words (nothing when unset); `${NAME}` in a word is replaced
/// as is. argv[0] is included; the executable path never is. Err when the
/// words pass [`EXEC_STRINGS_MAX`], which exec refuses (E2BIG).
pub fn replace_env_argv(
    argv: &[Vec<u8>],
    env: &[(OsString, OsString)],
) -> Result<Vec<Vec<u8>>, String> {
    let index: Index = env
        .iter()
        .map(|(k, v)| (k.as_bytes(), v.as_os_str()))
        .collect();
    let mut left = EXEC_STRINGS_MAX;
    let too_big = || {
        format!(
            "its command expands to more than the {} MiB of arguments exec takes (E2BIG)",
            EXEC_STRINGS_MAX >> 20
        )
    };
    let mut out = Vec::with_capacity(argv.len());
    for word in argv {
        if word.first() == Some(&b'$') && !matches!(word.get(1), Some(b'{') | Some(b'$')) {
            if let Some(v) = index.get(&word[1..]) {
                // RELAX splitting never fails. A word at a time: past the
                // limit, the rest of the value is never split.
                let (v, mut pos) = (v.as_bytes(), 0);
                while let Ok(Some(w)) = extract_first_word(v, &mut pos, ENV_VALUE) {
                    left = left
                        .checked_sub(w.len() + WORD_OVERHEAD)
                        .ok_or_else(too_big)?;
                    out.push(w);
                }
            }
            continue;
        }
        let w = replace_env(word, &index, &mut left).map_err(|()| too_big())?;
        left = left.checked_sub(WORD_OVERHEAD).ok_or_else(too_big)?;
        out.push(w);
    }
    Ok(out)
}

/// The built-in search path for relative executables (not `$PATH`).
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Find the file systemd would exec for `path` (as written), under `root`.
/// Returns the node path.
pub fn resolve_executable(
    path: &OsStr,
    search: Option<&[PathBuf]>,
    root: &Path,
) -> crate::node::error::Result<PathBuf> {
    let under = |p: &Path| super::search::contained(root, p).unwrap_or_default();
    let p = Path::new(path);
    if p.is_absolute() {
        if is_executable(&under(p)) {
            return Ok(p.to_path_buf());
        }
        crate::node_bail!("{} is not an executable file", p.display());
    }
    let default: Vec<PathBuf> = DEFAULT_PATH.split(':').map(PathBuf::from).collect();
    let dirs = search.unwrap_or(&default);
    for dir in dirs {
        let candidate = dir.join(p);
        if is_executable(&under(&candidate)) {
            return Ok(candidate);
        }
    }
    crate::node_bail!(
        "{} not found in {}",
        p.display(),
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(":")
    )
}

/// Expand an `EnvironmentFile=` pattern as systemd 252 does (glob(3)
/// with no flags: escapes on, a leading `.` matched only by a `.`, the
/// matches sorted), in the last component only. An error, never "no
/// match", where which files match is not known here: a pattern in a
/// directory component, a form of pattern not read here ([`Pattern`]), a
/// name not ASCII that the pattern may match otherwise in the node's
/// locale, a directory past its bound (`nodefs::MAX_CONFIG_ENTRIES`).
pub fn glob(root: &Path, pattern: &str) -> std::io::Result<Vec<PathBuf>> {
    let node = Path::new(pattern);
    // glob(3)'s __glob_pattern_type: anything else names one file.
    let has_meta = |s: &str| s.contains(['*', '?', '[', '\\']);
    let contained = |node: &Path| super::search::contained(root, node);
    if !has_meta(pattern) {
        return Ok(if contained(node).is_ok_and(|p| p.exists()) {
            vec![node.to_path_buf()]
        } else {
            vec![]
        });
    }
    let unknown = |why: &str| Err(std::io::Error::other(why.to_string()));
    let (Some(dir), Some(name)) = (node.parent(), node.file_name()) else {
        return Ok(vec![]);
    };
    if has_meta(&dir.to_string_lossy()) {
        // systemd's glob(3) expands every component: which files match is
        // not read here, so it is unknown, never taken as none.
        return unknown("a pattern in a directory component, which this read does not expand");
    }
    let pat = match Pattern::parse(name.as_bytes()) {
        Ok(p) => p,
        Err(why) => return unknown(why),
    };
    let entries = match contained(dir).and_then(|d| crate::node::nodefs::config_names(&d)) {
        Ok(e) => e,
        // Past its bound: which files match is unknown.
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
            return Err(std::io::Error::new(e.kind(), format!("its directory: {e}")));
        }
        Err(_) => return Ok(vec![]),
    };
    let mut out = Vec::new();
    for n in entries {
        let b = n.as_bytes();
        // In a UTF-8 locale `?` and a set take a character, not a byte,
        // and a name that is not UTF-8 may match nothing: byte by byte is
        // the answer only for ASCII, or for text against `*`s alone.
        let sure = b.is_ascii() || (pat.bytewise && std::str::from_utf8(b).is_ok());
        if pat.matches(b) {
            if !sure {
                return unknown(
                    "a name that is not ASCII, which the node's glob(3) may match otherwise",
                );
            }
            out.push(dir.join(n));
        } else if !sure && !pat.bytewise {
            return unknown(
                "a name that is not ASCII, which the node's glob(3) may match otherwise",
            );
        }
    }
    out.sort();
    Ok(out)
}

/// A file name pattern as fnmatch(3) reads it in glob(3) (escapes on,
/// FNM_PERIOD, the C locale's classes and byte order).
#[derive(Debug)]
struct Pattern {
    toks: Vec<Tok>,
    /// Only literal bytes and `*`.
    bytewise: bool,
}

#[derive(Debug)]
enum Tok {
    Star,
    Any,
    Byte(u8),
    /// A `[...]` set: negated, its ranges (a byte is a range of one) and
    /// classes.
    Set(bool, Vec<(u8, u8)>, Vec<fn(&u8) -> bool>),
    /// A trailing `\`: matches nothing.
    Never,
}

impl Pattern {
    /// Err for what is not read here: a `[` with no `]` (fnmatch's answer
    /// then depends on the name), `\`, `[=`, `[.` or a class name glibc
    /// does not know inside a set, a range from a class.
    fn parse(p: &[u8]) -> Result<Pattern, &'static str> {
        let mut toks = Vec::new();
        let mut i = 0;
        while i < p.len() {
            let t = match p[i] {
                b'*' => Tok::Star,
                b'?' => Tok::Any,
                b'\\' => match p.get(i + 1) {
                    Some(&c) => {
                        i += 1;
                        Tok::Byte(c)
                    }
                    None => Tok::Never,
                },
                b'[' => {
                    let (t, next) = Self::set(p, i + 1)?;
                    i = next;
                    toks.push(t);
                    continue;
                }
                c => Tok::Byte(c),
            };
            toks.push(t);
            i += 1;
        }
        let bytewise = toks.iter().all(|t| matches!(t, Tok::Star | Tok::Byte(_)));
        Ok(Pattern { toks, bytewise })
    }

    /// The set starting at `p[j]` (after its `[`), and where it ends.
    fn set(p: &[u8], mut j: usize) -> Result<(Tok, usize), &'static str> {
        let neg = matches!(p.get(j), Some(b'!' | b'^'));
        j += usize::from(neg);
        let (mut ranges, mut classes) = (Vec::new(), Vec::new());
        let mut first = true;
        loop {
            let Some(&c) = p.get(j) else {
                return Err("a `[` with no `]` closing its set, which this read does not expand");
            };
            if c == b']' && !first {
                return Ok((Tok::Set(neg, ranges, classes), j + 1));
            }
            first = false;
            let unread = "a `\\`, `[=`, `[.` or `[:` other than a known class in a `[...]` set, which this read does not expand";
            if c == b'\\' || (c == b'[' && matches!(p.get(j + 1), Some(b'=' | b'.'))) {
                return Err(unread);
            }
            if c == b'[' && p.get(j + 1) == Some(&b':') {
                let rest = &p[j + 2..];
                let end = rest.windows(2).position(|w| w == b":]").ok_or(unread)?;
                classes.push(class(&rest[..end]).ok_or(unread)?);
                j += 2 + end + 2;
                if p.get(j) == Some(&b'-') && p.get(j + 1).is_some_and(|&e| e != b']') {
                    return Err(unread);
                }
                continue;
            }
            match (p.get(j + 1), p.get(j + 2)) {
                (Some(b'-'), Some(&e)) if e != b']' => {
                    if e == b'\\' || e == b'[' {
                        return Err(unread);
                    }
                    ranges.push((c, e));
                    j += 3;
                }
                _ => {
                    ranges.push((c, c));
                    j += 1;
                }
            }
        }
    }

    /// Whether the name matches: in O(|p|·|s|), going back only to the
    /// last `*` (trying every split at every `*` took exponential time:
    /// `*a*a*a*a*a*a*a*a*a*a*a*a*b` against a name of 200 `a`s never ended,
    /// where systemd's glob(3) takes microseconds).
    fn matches(&self, s: &[u8]) -> bool {
        let p = &self.toks;
        // FNM_PERIOD: a leading `.` only by a `.` of the pattern.
        if s.first() == Some(&b'.') && !matches!(p.first(), Some(Tok::Byte(b'.'))) {
            return false;
        }
        let (mut pi, mut si) = (0, 0);
        // After the last `*` seen: where its pattern goes on, and the name's
        // byte it is to match next when the `*` takes one more.
        let mut star: Option<(usize, usize)> = None;
        while si < s.len() {
            if matches!(p.get(pi), Some(Tok::Star)) {
                pi += 1;
                star = Some((pi, si));
                continue;
            }
            if p.get(pi).is_some_and(|t| t.matches(s[si])) {
                pi += 1;
                si += 1;
                continue;
            }
            let Some((sp, ss)) = star else {
                return false;
            };
            pi = sp;
            si = ss + 1;
            star = Some((sp, si));
        }
        p[pi..].iter().all(|t| matches!(t, Tok::Star))
    }
}

impl Tok {
    fn matches(&self, c: u8) -> bool {
        match self {
            Tok::Star | Tok::Any => true,
            Tok::Byte(b) => *b == c,
            Tok::Set(neg, ranges, classes) => {
                let hit =
                    ranges.iter().any(|&(a, z)| a <= c && c <= z) || classes.iter().any(|f| f(&c));
                hit != *neg
            }
            Tok::Never => false,
        }
    }
}

/// A character class of the C locale by name.
fn class(name: &[u8]) -> Option<fn(&u8) -> bool> {
    Some(match name {
        b"alnum" => u8::is_ascii_alphanumeric,
        b"alpha" => u8::is_ascii_alphabetic,
        b"blank" => |c: &u8| *c == b' ' || *c == b'\t',
        b"cntrl" => u8::is_ascii_control,
        b"digit" => u8::is_ascii_digit,
        b"graph" => u8::is_ascii_graphic,
        b"lower" => u8::is_ascii_lowercase,
        b"print" => |c: &u8| c.is_ascii_graphic() || *c == b' ',
        b"punct" => u8::is_ascii_punctuation,
        b"space" => |c: &u8| c.is_ascii_whitespace() || *c == 0x0b,
        b"upper" => u8::is_ascii_uppercase,
        b"xdigit" => u8::is_ascii_hexdigit,
        _ => return None,
    })
}

/// Merge `add` into `env`; a later name replaces an earlier one.
pub fn merge(
    env: &mut Vec<(OsString, OsString)>,
    add: impl IntoIterator<Item = (String, Vec<u8>)>,
) {
    env.extend(
        add.into_iter()
            .map(|(k, v)| (OsString::from(k), OsString::from_vec(v))),
    );
    keep_last(env);
}

/// The last assignment of each name, in the order of those: what setting
/// them one at a time (the earlier removed, the new appended) leaves, in
/// O(n log n) (a scan per assignment took `explain` 154 s on an
/// EnvironmentFile= of 100,000 lines).
pub fn keep_last<K: Ord, V>(env: &mut Vec<(K, V)>) {
    let keep: Vec<bool> = {
        let last: SortedMap<&K, usize> = env.iter().enumerate().map(|(i, (k, _))| (k, i)).collect();
        env.iter()
            .enumerate()
            .map(|(i, (k, _))| last.get(&k) == Some(&i))
            .collect()
    };
    let mut i = 0;
    env.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(v: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        v.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn expand(words: &str, e: &[(OsString, OsString)]) -> Vec<String> {
        let argv: Vec<Vec<u8>> = words.split(' ').map(|w| w.as_bytes().to_vec()).collect();
        replace_env_argv(&argv, e)
            .unwrap()
            .into_iter()
            .map(|w| String::from_utf8(w).unwrap())
            .collect()
    }

    #[test]
    fn dollar_rules() {
        let e = env(&[("FOO", "foo"), ("BAR", "b a r")]);
        assert_eq!(
            expand(
                "$FOO/x pre$FOO ${FOO}/x $$FOO $$ $ a$$b ${FOO:-d} $FOO$BAR $BAR ${FOO}${BAR} ${ FOO} $FOO_ ${FOO",
                &e
            ),
            [
                "pre$FOO",
                "foo/x",
                "$FOO",
                "$",
                "a$b",
                "${FOO:-d}",
                "b",
                "a",
                "r",
                "foob a r",
                "${",
                "FOO}",
                "${FOO"
            ]
        );
        let e = env(&[("A", "1")]);
        assert_eq!(expand("$A${A} ${A}$A $$A$A", &e), ["1$A", "$A$A"]);
        assert_eq!(
            expand("[ $UNDEF ${UNDEF} x${UNDEF}y ]", &env(&[])),
            ["[", "", "xy", "]"]
        );
    }

    /// A unit of a few hundred KiB whose `$A`s expand to gigabytes (5000
    /// words of a 200 KB value took 80 s and 5.9 GB in `explain`), or a
    /// word of `${A}`s: refused at exec's limit, as exec would refuse it,
    /// without building it. Many variables and many references: one
    /// lookup each, not a scan of the environment.
    #[test]
    fn expansion_stops_at_execs_limit_and_looks_up_in_log_time() {
        let big = "x".repeat(200_000);
        let e = env(&[("A", &big)]);
        let many = vec![b"$A".to_vec(); 5000];
        let why = replace_env_argv(&many, &e).unwrap_err();
        assert!(why.contains("E2BIG"), "{why}");
        let one = vec!["${A}".repeat(100_000).into_bytes()];
        assert!(replace_env_argv(&one, &e).is_err());
        // Up to the limit it is as before.
        let fits = vec![b"$A".to_vec(); EXEC_STRINGS_MAX / 200_009];
        assert_eq!(replace_env_argv(&fits, &e).unwrap().len(), fits.len());
        // Each word's pointer counts as exec counts it: one-byte words fit
        // a tenth of the limit, not half.
        let words = "x ".repeat(EXEC_STRINGS_MAX / 9);
        let e = env(&[("A", &words)]);
        assert!(replace_env_argv(&[b"$A".to_vec()], &e).is_err());
        let words = "x ".repeat(EXEC_STRINGS_MAX / 10);
        let e = env(&[("A", &words)]);
        let fit = replace_env_argv(&[b"$A".to_vec()], &e).unwrap();
        assert_eq!(fit.len(), EXEC_STRINGS_MAX / 10);
        let names: Vec<String> = (0..100_000).map(|i| format!("V{i}")).collect();
        let e: Vec<(OsString, OsString)> = names
            .iter()
            .map(|n| (OsString::from(n), OsString::from("v")))
            .collect();
        let refs: Vec<Vec<u8>> = (0..100_000)
            .map(|i| format!("${{U{i}}}").into_bytes())
            .collect();
        assert_eq!(replace_env_argv(&refs, &e).unwrap().len(), refs.len());
    }

    /// Setting many variables is O(n log n), and leaves what setting them
    /// one at a time did: the last value of each, in the order of those.
    #[test]
    fn merging_many_variables_keeps_the_last_of_each_in_log_time() {
        let mut e = env(&[("A", "0"), ("B", "0")]);
        merge(
            &mut e,
            [("B", "1"), ("C", "1"), ("A", "2"), ("C", "3")]
                .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())),
        );
        assert_eq!(e, env(&[("B", "1"), ("A", "2"), ("C", "3")]));
        let mut e = Vec::new();
        merge(
            &mut e,
            (0..200_000).map(|i| (format!("V{}", i % 150_000), b"1".to_vec())),
        );
        assert_eq!(e.len(), 150_000);
    }

    #[test]
    fn environment_line() {
        let id = |w: &[u8]| Ok(w.to_vec());
        let (v, _) = parse_environment_line(r#"ONE='one' "TWO='two two' too" THREE="#, &id);
        assert_eq!(v[1], ("TWO".to_string(), b"'two two' too".to_vec()));
        assert_eq!(v[2], ("THREE".to_string(), vec![]));
        let (v, w) = parse_environment_line(r#"A=1 "B=\d" C=3"#, &id);
        assert_eq!(v.len(), 1);
        assert!(!w.is_empty());
    }

    fn glob_match(p: &[u8], s: &[u8]) -> bool {
        Pattern::parse(p).unwrap().matches(s)
    }

    #[test]
    fn glob_matching() {
        assert!(glob_match(b"*.env", b"a.env"));
        assert!(!glob_match(b"*.env", b"a.conf"));
        assert!(glob_match(b"a?[0-9]", b"ab7"));
        assert!(!glob_match(b"a[!0-9]", b"a7"));
    }

    /// glob(3) as systemd 252 calls it (review 12): classes, escapes, `]`
    /// first in a set, `!`/`^`, a leading `.` only by a `.`; what is not
    /// read here is an error, never "no match".
    #[test]
    fn glob_matching_as_glob3() {
        assert!(glob_match(b"[[:alpha:]]*.env", b"k.env"));
        assert!(!glob_match(b"[[:alpha:]]*.env", b"1.env"));
        assert!(glob_match(b"[[:digit:][:upper:]x]", b"K"));
        assert!(glob_match(b"a\\*.env", b"a*.env"));
        assert!(!glob_match(b"a\\*.env", b"ab.env"));
        assert!(glob_match(b"k\\.env", b"k.env"));
        assert!(glob_match(b".*.env", b".k.env"));
        assert!(glob_match(b"\\.*", b".k"));
        assert!(!glob_match(b"*.env", b".k.env"));
        assert!(!glob_match(b"?k", b".k"));
        assert!(!glob_match(b"[.]k", b".k"));
        assert!(glob_match(b"[]k]*.env", b"k.env"));
        assert!(glob_match(b"[]k]*.env", b"].env"));
        assert!(glob_match(b"[!]k]*", b"a"));
        assert!(!glob_match(b"[^a]", b"a"));
        assert!(glob_match(b"[a-]", b"-"));
        assert!(!glob_match(b"x\\", b"x"));
        assert!(!glob_match(b"x\\", b"x\\"));
        for bad in [
            &b"[ab"[..],
            b"[[=a=]]",
            b"[[.a.]]",
            b"[[:foo:]]",
            b"[\\]]",
            b"[[:alpha:]-z]",
        ] {
            assert!(
                Pattern::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/k.env"), "").unwrap();
        let g = |p: &str| glob(dir.path(), p);
        assert_eq!(g("/d/k\\.env").unwrap(), [PathBuf::from("/d/k.env")]);
        assert!(g("/d/[[=k=]].env").is_err());
        assert!(g("/d\\/k.env").is_err());
        // A name not ASCII: sure against `*`s and text, unknown otherwise.
        std::fs::write(
            dir.path().join("d").join(OsStr::from_bytes(b"\xe9.env")),
            "",
        )
        .unwrap();
        assert_eq!(g("/d/k*").unwrap(), [PathBuf::from("/d/k.env")]);
        assert!(g("/d/*.env").is_err());
        assert!(g("/d/?.env").is_err());
    }

    /// Many `*` against a long name: at once (it never ended).
    #[test]
    fn glob_matching_is_never_exponential() {
        let name = [b'a'; 200];
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(glob_match(b"*a*a*a*a*a*a*a*a*a*a*a*a*b", &name));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(got, Ok(false), "a glob took more than a minute");
        assert!(glob_match(b"*a*a*a*a*a*a*a*a*a*a*a*a*", &[b'a'; 200]));
    }

    /// The earlier matcher, which tried every split at every `*` (one
    /// byte's match, `Tok::matches`, is as it was).
    fn reference(p: &[Tok], s: &[u8]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(Tok::Star), _) => {
                reference(&p[1..], s) || (!s.is_empty() && reference(p, &s[1..]))
            }
            (Some(t), Some(&c)) => t.matches(c) && reference(&p[1..], &s[1..]),
            _ => false,
        }
    }

    /// The same answers as the earlier matcher on every pattern and name
    /// of a small alphabet (the glob's metacharacters among it).
    #[test]
    fn glob_matching_as_before() {
        let alphabet: &[u8] = b"ab*?[]!-";
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..200_000 {
            let p: Vec<u8> = (0..next(8))
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            let s: Vec<u8> = (0..next(8))
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            let Ok(pat) = Pattern::parse(&p) else {
                continue;
            };
            // (A leading `.` is FNM_PERIOD's, not in the alphabet.)
            assert_eq!(
                pat.matches(&s),
                reference(&pat.toks, &s),
                "{:?} {:?}",
                String::from_utf8_lossy(&p),
                String::from_utf8_lossy(&s)
            );
        }
    }
}
