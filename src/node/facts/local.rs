//! `local.label` and `local.feature` from the feature files nfd-worker's
//! local source reads (/etc/kubernetes/node-feature-discovery/features.d/,
//! not hooks, which NFD no longer runs): files that are on the node before
//! kubelet starts, written by its provisioning.

use std::path::Path;

use super::util::{list_dir, read_bytes, under};
use crate::node::sorted::SortedMap;

type Attrs = SortedMap<String, String>;

pub const FEATURES_DIR: &str = "/etc/kubernetes/node-feature-discovery/features.d";
/// NFD skips a file larger than this.
const MAX_FILE: u64 = 65536;

/// (`local.feature`, `local.label`): both empty when there is no
/// readable directory (NFD publishes them so).
pub fn read(root: &Path, now: i64) -> (Attrs, Attrs) {
    let dir = under(root, FEATURES_DIR);
    let mut features = Attrs::new();
    let mut labels = Attrs::new();
    let Some(names) = list_dir(&dir) else {
        return (features, labels);
    };
    for name in names.iter().filter(|n| !n.starts_with('.')) {
        let path = dir.join(name);
        // Regular files only (links followed), at most MAX_FILE bytes.
        let Some(meta) = super::util::inside(&path).and_then(|p| std::fs::metadata(&*p).ok())
        else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        if meta.len() > MAX_FILE {
            continue;
        }
        let Some(bytes) = read_bytes(&path, MAX_FILE) else {
            continue;
        };
        let (f, l) = parse_file(&String::from_utf8_lossy(&bytes), now);
        features.extend(f);
        labels.extend(l);
    }
    (features, labels)
}

/// One feature file: `name[=value]` lines (no value: `true`), `#` lines
/// comments, and the directives `# +expiry-time=<RFC 3339>` (later lines
/// are dropped once it is past), `# +no-label` and `# +no-feature` (the
/// next line only). A bad directive is ignored, as NFD logs and goes on.
pub fn parse_file(text: &str, now: i64) -> (Attrs, Attrs) {
    let mut features = Attrs::new();
    let mut labels = Attrs::new();
    let mut expiry = now;
    let (mut skip_label, mut skip_feature) = (false, false);
    for line in text.split('\n').map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with('#') {
            if let Some(d) = line.strip_prefix("# +") {
                let (key, value) = match d.split_once('=') {
                    Some((k, v)) => (k, Some(v)),
                    None => (d, None),
                };
                match key {
                    "expiry-time" => {
                        if let Some(t) = value.and_then(|v| rfc3339(v.trim())) {
                            expiry = t;
                        }
                    }
                    "no-feature" => skip_feature = true,
                    "no-label" => skip_label = true,
                    _ => {}
                }
            }
            continue;
        }
        if expiry < now {
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k, v),
            None => (line, "true"),
        };
        for (skip, map) in [(skip_feature, &mut features), (skip_label, &mut labels)] {
            if skip {
                map.remove(key);
            } else {
                map.insert(key.to_string(), value.to_string());
            }
        }
        skip_label = false;
        skip_feature = false;
    }
    (features, labels)
}

/// Seconds since the epoch of an RFC 3339 time as Go's `time.Parse(
/// time.RFC3339, ...)` takes it: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
/// The fraction only moves a time within its second, so an expiry is
/// compared by whole seconds, rounded up (still valid within its last
/// second).
pub fn rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let d = b.get(r)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0i64, |n, c| n * 10 + i64::from(c - b'0')))
    };
    let sep = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(sep(4, b'-') && sep(7, b'-') && sep(10, b'T') && sep(13, b':') && sep(16, b':')) {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days_in = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo)
        || d < 1
        || d > days_in[(mo - 1) as usize]
        || h > 23
        || mi > 59
        || sec > 59
    {
        return None;
    }
    let mut i = 19;
    let mut frac = false;
    if sep(i, b'.') || sep(i, b',') {
        let n = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        frac = b[i + 1..i + 1 + n].iter().any(|&c| c != b'0');
        i += 1 + n;
    }
    let offset = match b.get(i..)? {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'-' { -o } else { o }
        }
        _ => return None,
    };
    let days = crate::node::days_from_civil(y, mo, d);
    Some(days * 86400 + h * 3600 + mi * 60 + sec - offset + i64::from(frac))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(m: &Attrs) -> Vec<(&str, &str)> {
        m.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    #[test]
    fn rfc3339_times() {
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339("2000-03-01T00:00:00Z"), Some(951868800));
        assert_eq!(rfc3339("2024-02-29T12:30:15+02:00"), Some(1709202615));
        assert_eq!(rfc3339("2024-02-29T12:30:15.5-01:00"), Some(1709213416));
        for bad in [
            "2023-02-29T00:00:00Z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T24:00:00Z",
            "2024-1-01T00:00:00Z",
            "2024-01-01T00:00:00.Z",
            "",
        ] {
            assert_eq!(rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn directives_and_values() {
        let now = rfc3339("2026-01-01T00:00:00Z").unwrap();
        let (f, l) = parse_file(
            "a\nb=1=2\n  # a comment\n# +no-label\nc=x\nd\n# +no-feature\ne=y\n\
             # +bogus\n# +expiry-time=2025-12-31T23:59:59Z\nexpired=1\n",
            now,
        );
        assert_eq!(
            kv(&f),
            [("a", "true"), ("b", "1=2"), ("c", "x"), ("d", "true")]
        );
        assert_eq!(
            kv(&l),
            [("a", "true"), ("b", "1=2"), ("d", "true"), ("e", "y")]
        );
        let (f, _) = parse_file("# +expiry-time=2026-01-01T00:00:01Z\nkept\n", now);
        assert_eq!(kv(&f), [("kept", "true")]);
    }
}
