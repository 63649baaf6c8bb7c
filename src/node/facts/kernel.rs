//! `kernel.version` from /proc/sys/kernel/osrelease, parsed as NFD's
//! source/kernel does.

use std::path::Path;

use super::util::{read_trimmed, under};
use crate::node::sorted::SortedMap;

pub fn version(root: &Path) -> Option<SortedMap<String, String>> {
    read_trimmed(&under(root, "/proc/sys/kernel/osrelease")).map(|r| parse_version(&r))
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
