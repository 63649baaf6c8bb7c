//! `system.osrelease`, `system.name`, `system.dmiid` as NFD's source/system
//! gives them.

use std::path::Path;

use super::util::{go_string, read_bytes, read_trimmed, under};
use crate::node::sorted::SortedMap;

/// The most bytes of /etc/os-release read. NFD reads it whole, line by
/// line (bufio.Scanner, which stops at a line of 64 KiB): a file of at
/// most this many bytes is read as NFD reads it; a real one holds about
/// 500.
pub const MAX_OS_RELEASE: usize = (64 << 10) - 1;

/// NFD opens /etc/os-release only (no /usr/lib/os-release fallback).
/// Ok(None): missing or unreadable (NFD gives no keys then). Err: longer
/// than [`MAX_OS_RELEASE`], so not read whole: rules must not run on part
/// of it.
pub fn osrelease(root: &Path) -> Result<Option<SortedMap<String, String>>, String> {
    let Some(bytes) = read_bytes(&under(root, "/etc/os-release"), MAX_OS_RELEASE as u64 + 1) else {
        return Ok(None);
    };
    if bytes.len() > MAX_OS_RELEASE {
        return Err(format!(
            "/etc/os-release: longer than {MAX_OS_RELEASE} bytes, not read"
        ));
    }
    // Each byte that is not UTF-8 one U+FFFD, as NFD's rules see it.
    Ok(Some(parse_os_release(&go_string(&bytes))))
}

/// Lines matching `^(\w+)=(.+)`, value with `"` and `'` trimmed from both
/// ends (no unescaping); later keys win. Then VERSION_ID.major/.minor from
/// `^(\d+)(\.(\d+))?(\..*)?$`, each only when non-empty.
pub fn parse_os_release(text: &str) -> SortedMap<String, String> {
    let mut out = SortedMap::new();
    // bufio.ScanLines: lines end at \n, each without one \r before it
    // (the last one too, ended or not).
    for line in text.split_terminator('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        if key.is_empty() || !key.chars().all(word) || value.is_empty() {
            continue;
        }
        out.insert(key.to_string(), value.trim_matches(['"', '\'']).to_string());
    }
    if let Some(v) = out.get("VERSION_ID").cloned() {
        let n = v.bytes().take_while(u8::is_ascii_digit).count();
        let (major, rest) = v.split_at(n);
        if n > 0 {
            let (minor, rest) = match rest.strip_prefix('.') {
                Some(r) => {
                    let m = r.bytes().take_while(u8::is_ascii_digit).count();
                    if m > 0 { r.split_at(m) } else { ("", rest) }
                }
                None => ("", rest),
            };
            if rest.is_empty() || rest.starts_with('.') {
                out.insert("VERSION_ID.major".into(), major.into());
                if !minor.is_empty() {
                    out.insert("VERSION_ID.minor".into(), minor.into());
                }
            }
        }
    }
    out
}

/// NFD takes NODE_NAME (the Node's name); at boot that is kubelet's
/// --hostname-override, else the hostname lower-cased as kubelet does.
pub fn name(root: &Path, nodename: Option<&str>) -> Option<SortedMap<String, String>> {
    let name = match nodename {
        Some(n) => n.trim().to_ascii_lowercase(),
        None => read_trimmed(&under(root, "/proc/sys/kernel/hostname"))?.to_ascii_lowercase(),
    };
    Some(SortedMap::from([("nodename".to_string(), name)]))
}

const DMI_ATTRS: [&str; 16] = [
    "bios_date",
    "bios_vendor",
    "bios_version",
    "board_asset_tag",
    "board_name",
    "board_vendor",
    "board_version",
    "chassis_asset_tag",
    "chassis_type",
    "chassis_vendor",
    "chassis_version",
    "product_family",
    "product_name",
    "product_sku",
    "product_version",
    "sys_vendor",
];

/// Absent when no DMI file is readable (e.g. a Raspberry Pi).
pub fn dmiid(root: &Path) -> Option<SortedMap<String, String>> {
    let dir = under(root, "/sys/devices/virtual/dmi/id");
    let out: SortedMap<String, String> = DMI_ATTRS
        .iter()
        .filter_map(|a| Some((a.to_string(), read_trimmed(&dir.join(a))?)))
        .collect();
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_version_split() {
        let r = parse_os_release(
            "NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhel\"\nVERSION_ID='9.6'\n\
             # comment\nBAD KEY=x\nEMPTY=\nOSTREE_VERSION='9.6.20250701-0'\n",
        );
        assert_eq!(r["ID"], "rhel");
        assert_eq!(r["VERSION_ID"], "9.6");
        assert_eq!(r["VERSION_ID.major"], "9");
        assert_eq!(r["VERSION_ID.minor"], "6");
        assert_eq!(r["OSTREE_VERSION"], "9.6.20250701-0");
        assert!(!r.contains_key("EMPTY") && !r.contains_key("BAD KEY"));
    }

    /// Review 9 (rboot) F4, FAILS on 4a4bbe7: NFD reads the whole
    /// os-release (bufio.Scanner, lines up to 64 KiB); keys past 16 KiB are
    /// NFD's too.
    #[test]
    fn a_long_os_release_is_read_whole() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        let pad = "# padding comment line ......................................\n".repeat(300);
        std::fs::write(
            root.path().join("etc/os-release"),
            format!("NAME=x\n{pad}ID=\"rhel\"\nVERSION_ID=\"9.6\"\n"),
        )
        .unwrap();
        let r = osrelease(root.path()).unwrap().unwrap();
        assert_eq!(r.get("VERSION_ID").map(String::as_str), Some("9.6"));
    }

    #[test]
    fn version_forms() {
        let r = parse_os_release("VERSION_ID=12\n");
        assert_eq!(r["VERSION_ID.major"], "12");
        assert!(!r.contains_key("VERSION_ID.minor"));
        let r = parse_os_release("VERSION_ID=\"22.04.3\"\n");
        assert_eq!(
            (
                r["VERSION_ID.major"].as_str(),
                r["VERSION_ID.minor"].as_str()
            ),
            ("22", "04")
        );
        let r = parse_os_release("VERSION_ID=rolling\n");
        assert!(!r.contains_key("VERSION_ID.major"));
        // Quotes are trimmed, not unescaped; a value may keep inner quotes.
        assert_eq!(parse_os_release("X=\"a\"b\"\n")["X"], "a\"b");
    }
}
