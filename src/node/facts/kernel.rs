//! `kernel.version`, `kernel.config`, `kernel.loadedmodule`,
//! `kernel.enabledmodule`, `kernel.selinux`, `kernel.kvm` as NFD's
//! source/kernel reads them.

use std::path::Path;

use super::util::{CPUINFO_CAP, exists, read_bytes, read_capped, read_trimmed, under};
use crate::node::sorted::{SortedMap, SortedSet};

/// The release as NFD's getVersion has it (uname -r).
fn release(root: &Path) -> Option<String> {
    read_trimmed(&under(root, "/proc/sys/kernel/osrelease"))
}

pub fn version(root: &Path) -> Option<SortedMap<String, String>> {
    release(root).map(|r| parse_version(&r))
}

/// The first kernel config NFD's search finds (its order; `/proc/config.gz`
/// first), `CONFIG_<NAME>=<value>` as NAME → value with `"` trimmed. A
/// config larger than `CPUINFO_CAP` is read up to it (real ones are
/// ~250 KiB). `names`: only these options (what the rules name by key),
/// None = all; the boot path then skips building and sorting the ~1,700
/// others, most of a read's cost.
pub fn config(root: &Path, names: Option<&[&str]>) -> Option<SortedMap<String, String>> {
    let v = release(root);
    // NFD's search after /proc/config.gz: (before, after) the release; with
    // no release only /usr/src/linux/.config. Joined by hand, not format!:
    // the wrapper carries this.
    const PATHS: [(&str, &str); 10] = [
        ("/usr/src/linux-", "/.config"),
        ("/usr/src/linux-rt-", "/.config"),
        ("/usr/src/linux/.config", ""),
        ("/usr/lib/modules/", "/config"),
        ("/usr/lib/ostree-boot/config-", ""),
        ("/usr/lib/kernel/config-", ""),
        ("/usr/src/linux-headers-", "/.config"),
        ("/lib/modules/", "/build/.config"),
        ("/usr/src/linux-rt-headers-", "/.config"),
        ("/boot/config-", ""),
    ];
    let read = |before: &str, after: &str| {
        let mut p = String::from(before);
        if !before.ends_with(".config") {
            p.push_str(v.as_deref()?);
            p.push_str(after);
        }
        read_bytes(&under(root, &p), CPUINFO_CAP)
    };
    let raw = read_bytes(&under(root, "/proc/config.gz"), CPUINFO_CAP)
        .and_then(|gz| super::inflate::gunzip(&gz, CPUINFO_CAP as usize))
        .or_else(|| {
            PATHS
                .iter()
                .filter(|(before, _)| v.is_some() || before.ends_with(".config"))
                .find_map(|(before, after)| read(before, after))
        })?;
    // Valid UTF-8 (every real config) is parsed in place, not copied.
    let text = String::from_utf8(raw)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Some(match names {
        None => parse_config(&text),
        Some(names) => parse_config_only(&text, names),
    })
}

/// `parse_config` kept to `names`: for each name, its last line, found by
/// a substring search (most of the text is never split into lines).
fn parse_config_only(text: &str, names: &[&str]) -> SortedMap<String, String> {
    let mut out = SortedMap::new();
    for &name in names {
        // `parse_config`'s name is a line's text up to its first `=`.
        if name.contains(['=', '\n']) {
            continue;
        }
        let mut line = String::with_capacity(name.len() + 8);
        line.push_str("CONFIG_");
        line.push_str(name);
        line.push('=');
        // The pattern ends at its only `=`: its matches never overlap.
        // (Forward: the wrapper carries that searcher already.)
        let last = text
            .match_indices(line.as_str())
            .filter(|&(i, _)| i == 0 || text.as_bytes()[i - 1] == b'\n')
            .last();
        if let Some((i, _)) = last {
            let value = text[i + line.len()..]
                .split('\n')
                .next()
                .unwrap_or_default();
            out.insert(name.to_string(), value.trim_matches('"').to_string());
        }
    }
    out
}

pub fn parse_config(text: &str) -> SortedMap<String, String> {
    // Sorted first (a later line wins on a name, as NFD's map assignment):
    // inserting ~2,000 unsorted names one by one into the sorted map moves
    // its entries quadratically (1.5 ms on a real config).
    let mut lines: Vec<(&str, usize, &str)> = text
        .split('\n')
        .enumerate()
        .filter_map(|(i, line)| {
            // `CONFIG_<NAME>=<value>`; comments and `# CONFIG_X is not set` give nothing.
            let (name, value) = line.strip_prefix("CONFIG_")?.split_once('=')?;
            Some((name, i, value.trim_matches('"')))
        })
        .collect();
    lines.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let mut out = SortedMap::new();
    for (name, _, value) in lines {
        out.insert(name.to_string(), value.to_string());
    }
    out
}

/// The first field of each line of /proc/modules.
pub fn loaded_modules(root: &Path) -> Option<SortedSet<String>> {
    let text = read_capped(&under(root, "/proc/modules"), CPUINFO_CAP)?;
    Some(sorted_set(
        text.split('\n')
            .filter_map(|l| l.split_ascii_whitespace().next())
            .map(str::to_string)
            .collect(),
    ))
}

/// Names sorted before they go into the set: one by one, unsorted, the
/// set's inserts move its items quadratically (modules.builtin has ~2,000).
fn sorted_set(mut names: Vec<String>) -> SortedSet<String> {
    names.sort();
    names.into_iter().collect()
}

/// Loaded modules and those built in (`/lib/modules/<release>/
/// modules.builtin`, `….ko` lines by base name); absent when the builtin
/// list is unreadable, as in NFD.
pub fn enabled_modules(
    root: &Path,
    loaded: Option<&SortedSet<String>>,
) -> Option<SortedSet<String>> {
    let mut path = String::from("/lib/modules/");
    path.push_str(&release(root)?);
    path.push_str("/modules.builtin");
    let text = read_capped(&under(root, &path), CPUINFO_CAP)?;
    let mut names: Vec<String> = loaded.map_or_else(Vec::new, |l| l.iter().cloned().collect());
    for line in text.split('\n').map(str::trim) {
        if let Some(path) = line.strip_suffix(".ko") {
            names.push(path.rsplit('/').next().unwrap_or(path).to_string());
        }
    }
    Some(sorted_set(names))
}

/// `enabled`: /sys/fs/selinux/enforce starts with `1` (a missing file is
/// false; no /sys/fs or another error leaves the feature out).
pub fn selinux(root: &Path) -> Option<SortedMap<String, String>> {
    exists(&under(root, "/sys/fs")).filter(|e| *e)?;
    let enforce = under(root, "/sys/fs/selinux/enforce");
    let on = match read_bytes(&enforce, 16) {
        Some(b) => b.first() == Some(&b'1'),
        None if exists(&enforce) == Some(false) => false,
        None => return None,
    };
    Some(enabled(on))
}

/// `enabled`: /sys/devices/virtual/misc/kvm exists.
pub fn kvm(root: &Path) -> Option<SortedMap<String, String>> {
    exists(&under(root, "/sys/devices/virtual/misc/kvm")).map(enabled)
}

fn enabled(on: bool) -> SortedMap<String, String> {
    SortedMap::from([("enabled".to_string(), on.to_string())])
}

/// `full`: characters outside `[-A-Za-z0-9_.]` become `_`, then `-_.` are
/// trimmed from both ends. `major`/`minor`/`revision` come from
/// `^(\d+)(\.(\d+))?(\.(\d+))?(-.*)?$` on `full`; a group that did not take
/// part is an empty string (Go's FindStringSubmatch), and nothing is set when
/// the whole pattern fails (so `6.6.31+rpt-rpi-v8` has only `full`).
pub fn parse_version(raw: &str) -> SortedMap<String, String> {
    let full: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = full.trim_matches(|c| "-_.".contains(c)).to_string();
    let mut out = SortedMap::new();
    if let Some((major, minor, revision)) = split_version(&full) {
        out.insert("major".into(), major.into());
        out.insert("minor".into(), minor.into());
        out.insert("revision".into(), revision.into());
    }
    out.insert("full".into(), full);
    out
}

fn split_version(s: &str) -> Option<(&str, &str, &str)> {
    let (major, mut rest) = digits(s)?;
    let mut parts = ["", ""];
    for part in parts.iter_mut() {
        match rest.strip_prefix('.').and_then(digits) {
            Some((d, r)) => {
                *part = d;
                rest = r;
            }
            None => break,
        }
    }
    (rest.is_empty() || rest.starts_with('-')).then_some((major, parts[0], parts[1]))
}

/// Leading ASCII digits (at least one) and the rest.
fn digits(s: &str) -> Option<(&str, &str)> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    (n > 0).then(|| s.split_at(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(raw: &str) -> Vec<(String, String)> {
        parse_version(raw).into_iter().collect()
    }

    fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A later line wins on a name; quotes trimmed; other lines skipped.
    #[test]
    fn config_lines() {
        let c = parse_config(
            "# CONFIG_X is not set\nCONFIG_B=\"q\"\nCONFIG_A=y\nCONFIG_NOEQ\nCONFIG_B=m\n CONFIG_C=y\nCONFIG_D=1=2",
        );
        let got: Vec<(&str, &str)> = c.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, [("A", "y"), ("B", "m"), ("D", "1=2")]);
    }

    /// Kept to the names the rules use, a read is the full read's entries
    /// of those names: later lines win, absent names stay absent.
    #[test]
    fn config_lines_of_named_options() {
        let text = "CONFIG_E=first\n# CONFIG_X is not set\nCONFIG_B=\"q\"\nCONFIG_A=y\nCONFIG_NOEQ\nCONFIG_B=m\n CONFIG_C=y\nCONFIG_D=1=2\nxCONFIG_A=no\n# CONFIG_A=no\nCONFIG_AB=n\nCONFIG_F=\nCONFIG_E==\"e\"";
        let full = parse_config(text);
        for names in [
            &["B", "D"][..],
            &["A", "X", "C", "NOEQ", "AB"],
            &[],
            &["B", "A", "D", "AB", "Z"],
            &["E", "F", "D=1", "A\nCONFIG_B", "B", "B"],
        ] {
            let only = parse_config_only(text, names);
            let want: Vec<_> = full
                .iter()
                .filter(|(k, _)| names.contains(&k.as_str()))
                .collect();
            assert_eq!(only.iter().collect::<Vec<_>>(), want, "{names:?}");
        }
    }

    #[test]
    fn rhel_kernel() {
        assert_eq!(
            v("5.14.0-427.13.1.el9_4.x86_64\n"),
            kv(&[
                ("full", "5.14.0-427.13.1.el9_4.x86_64"),
                ("major", "5"),
                ("minor", "14"),
                ("revision", "0")
            ])
        );
    }

    #[test]
    fn debian_kernel() {
        assert_eq!(
            v("6.1.0-26-amd64"),
            kv(&[
                ("full", "6.1.0-26-amd64"),
                ("major", "6"),
                ("minor", "1"),
                ("revision", "0")
            ])
        );
    }

    #[test]
    fn raspberry_pi_kernel_plus_becomes_underscore_and_fails_the_split() {
        assert_eq!(v("6.6.31+rpt-rpi-v8"), kv(&[("full", "6.6.31_rpt-rpi-v8")]));
    }

    #[test]
    fn short_forms_leave_empty_groups() {
        assert_eq!(
            v("6.1"),
            kv(&[
                ("full", "6.1"),
                ("major", "6"),
                ("minor", "1"),
                ("revision", "")
            ])
        );
        assert_eq!(
            v("6-rc1"),
            kv(&[
                ("full", "6-rc1"),
                ("major", "6"),
                ("minor", ""),
                ("revision", "")
            ])
        );
        assert_eq!(
            v("+6.1+"),
            kv(&[
                ("full", "6.1"),
                ("major", "6"),
                ("minor", "1"),
                ("revision", "")
            ])
        );
    }
}
