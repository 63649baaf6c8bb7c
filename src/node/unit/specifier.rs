//! `%` specifiers (systemd.unit(5) "Specifiers"), expanded at load time on
//! words that are already unquoted and unescaped.

use std::path::{Path, PathBuf};

use crate::node::sorted::SortedMap;

/// The alphanumerics systemd 252 knows; any other alphanumeric is an error.
const KNOWN: &str = "aAbBcCdEfgGhHiIjJlLmMnNopPqrRsStTuUvVwWyY";

/// Where host-level specifier values come from.
#[derive(Debug, Clone)]
pub enum Host {
    /// A node tree (or the live system at `/`) seen by the system manager.
    System { root: PathBuf, live: bool },
    /// Fixed values (tests, user managers).
    Fixed(SortedMap<char, String>),
}

/// Values for one unit's specifiers.
#[derive(Debug, Clone)]
pub struct SpecifierValues {
    pub host: Host,
    /// Full unit name (`foo@bar.service`).
    pub unit: String,
    /// Node path of the fragment, for `%y`/`%Y`.
    pub fragment: Option<PathBuf>,
    /// Host values already read: each file once, however many specifiers
    /// name it (2000 `%H`s on a padded /etc/hostname read it 2000 times).
    pub cache: HostCache,
}

/// See [`SpecifierValues::cache`]. Also the last known specifier that
/// could not be resolved (see [`SpecifierValues::take_unresolved`]), and
/// the bytes specifiers have given in this load (see [`EXPANDED_MAX`]).
#[derive(Debug, Clone, Default)]
pub struct HostCache(
    std::cell::RefCell<Vec<(char, Option<String>)>>,
    std::cell::Cell<Option<char>>,
    std::cell::Cell<usize>,
    std::cell::Cell<bool>,
);

/// The most bytes specifier values may add over one unit's load, all its
/// lines, words and files together: what any exec takes, arguments and
/// environment alike (a command, or an environment, past it can never
/// start). Per word, as systemd bounds it, 100 words of 96 `%o`s on a
/// 60 KiB os-release `ID=` built 575 MB before the command was refused.
pub const EXPANDED_MAX: usize = super::env::EXEC_STRINGS_MAX;

/// The most of a host file (/etc/hostname, /etc/os-release, ...) read for
/// a specifier: a real one holds a few hundred bytes.
const HOST_FILE_MAX: usize = 64 << 10;

/// A node file of the tree at `root`, resolved inside it (a link in an
/// untrusted tree never reads the host's file).
fn node_file(root: &Path, node: &str) -> PathBuf {
    super::search::contained(root, Path::new(node)).unwrap_or_default()
}

/// A small regular file as text, None past [`HOST_FILE_MAX`].
fn read_host_file(path: &Path) -> Option<String> {
    let bytes = crate::node::nodefs::read_regular(path, HOST_FILE_MAX).ok()??;
    String::from_utf8(bytes).ok()
}

fn read_trim(path: &Path) -> Option<String> {
    let s = read_host_file(path)?;
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// A field of os-release; empty when the file does not set it (systemd's
/// specifier_os_release_common: `%A` on an image without IMAGE_VERSION is
/// "", not an error that would drop the `ExecStart=` line).
fn os_release_field(root: &Path, field: &str) -> Option<String> {
    let text = read_host_file(&node_file(root, "/etc/os-release"))
        .or_else(|| read_host_file(&node_file(root, "/usr/lib/os-release")))?;
    let value = text.lines().find_map(|l| {
        let v = l.strip_prefix(field)?.strip_prefix('=')?;
        Some(v.trim_matches(|c| c == '"' || c == '\'').to_string())
    });
    Some(value.unwrap_or_default())
}

/// unit_name_unescape: `-` is `/`, `\xNN` a byte.
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'-' {
            out.push(b'/');
        } else if b[i] == b'\\'
            && b.get(i + 1) == Some(&b'x')
            && let Some(v) = s
                .get(i + 2..i + 4)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 4;
            continue;
        } else {
            out.push(b[i]);
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// unit_name_path_unescape: like `unescape`, as an absolute path.
fn path_unescape(s: &str) -> String {
    if s == "-" {
        return "/".into();
    }
    format!("/{}", unescape(s))
}

impl SpecifierValues {
    /// (prefix, instance, suffix) of the unit name.
    fn parts(&self) -> (String, Option<String>, String) {
        let (stem, suffix) = self.unit.rsplit_once('.').unwrap_or((&self.unit, ""));
        match stem.split_once('@') {
            Some((p, i)) => (p.to_string(), Some(i.to_string()), suffix.to_string()),
            None => (stem.to_string(), None, suffix.to_string()),
        }
    }

    fn host_value(&self, c: char) -> Option<String> {
        match &self.host {
            Host::Fixed(map) => map.get(&c).cloned(),
            Host::System { root, live } => {
                let hostname = || {
                    if *live {
                        read_trim(Path::new("/proc/sys/kernel/hostname"))
                    } else {
                        read_trim(&node_file(root, "/etc/hostname"))
                    }
                };
                match c {
                    't' => Some("/run".into()),
                    'S' => Some("/var/lib".into()),
                    'C' => Some("/var/cache".into()),
                    'L' => Some("/var/log".into()),
                    'E' => Some("/etc".into()),
                    'T' => Some("/tmp".into()),
                    'V' => Some("/var/tmp".into()),
                    'h' => Some("/root".into()),
                    'u' | 'g' => Some("root".into()),
                    'U' | 'G' => Some("0".into()),
                    's' => Some("/bin/sh".into()),
                    'R' => Some("/sys/fs/cgroup".into()),
                    'H' => hostname(),
                    'l' => hostname().map(|h| h.split('.').next().unwrap_or("").to_string()),
                    'm' => read_trim(&node_file(root, "/etc/machine-id")),
                    // The running kernel, boot and architecture: off the
                    // node (a tree, a pool's layout) this machine's are not
                    // the node's, so they are unknown there.
                    'b' if *live => read_trim(Path::new("/proc/sys/kernel/random/boot_id"))
                        .map(|b| b.replace('-', "")),
                    'v' if *live => read_trim(Path::new("/proc/sys/kernel/osrelease")),
                    'a' if *live => Some(
                        match std::env::consts::ARCH {
                            "x86_64" => "x86-64",
                            "aarch64" => "arm64",
                            other => other,
                        }
                        .into(),
                    ),
                    'o' => os_release_field(root, "ID"),
                    'w' => os_release_field(root, "VERSION_ID"),
                    'W' => os_release_field(root, "VARIANT_ID"),
                    'A' => os_release_field(root, "IMAGE_VERSION"),
                    'B' => os_release_field(root, "BUILD_ID"),
                    'M' => os_release_field(root, "IMAGE_ID"),
                    'q' => read_host_file(&node_file(root, "/etc/machine-info"))
                        .and_then(|t| {
                            t.lines().find_map(|l| {
                                l.strip_prefix("PRETTY_HOSTNAME=")
                                    .map(|v| v.trim_matches('"').to_string())
                            })
                        })
                        .or_else(hostname),
                    _ => None,
                }
            }
        }
    }

    /// The value of `%c`, or None when systemd could not resolve it.
    pub fn value(&self, c: char) -> Option<String> {
        let (prefix, instance, _) = self.parts();
        let name_no_suffix = self
            .unit
            .rsplit_once('.')
            .map_or(self.unit.as_str(), |(s, _)| s);
        let last_component = prefix
            .rsplit_once('-')
            .map_or(prefix.as_str(), |(_, l)| l)
            .to_string();
        match c {
            'n' => Some(self.unit.clone()),
            'N' => Some(name_no_suffix.to_string()),
            'p' => Some(prefix),
            'P' => Some(unescape(&prefix)),
            'i' => Some(instance.unwrap_or_default()),
            'I' => Some(unescape(&instance.unwrap_or_default())),
            'j' => Some(last_component),
            'J' => Some(unescape(&last_component)),
            'f' => Some(match instance {
                Some(i) => path_unescape(&i),
                None => path_unescape(&prefix),
            }),
            'y' => self.fragment.as_ref().map(|f| f.display().to_string()),
            'Y' => self
                .fragment
                .as_ref()
                .and_then(|f| f.parent())
                .map(|d| d.display().to_string()),
            'd' => Some(format!("/run/credentials/{}", self.unit)),
            'c' => Some(format!("/system.slice/{}", self.unit)),
            'r' => Some("/system.slice".into()),
            _ => {
                // A few dozen letters at most: a scan is the smallest code.
                if let Some((_, v)) = self.cache.0.borrow().iter().find(|(k, _)| *k == c) {
                    return v.clone();
                }
                let v = self.host_value(c);
                self.cache.0.borrow_mut().push((c, v.clone()));
                v
            }
        }
    }

    /// The last known specifier [`Self::expand`] could not resolve since
    /// the last call, if any: off the node, what it stands for is unknown
    /// (not what systemd fails on), whatever the line does with the error.
    pub fn take_unresolved(&self) -> Option<char> {
        self.cache.1.take()
    }

    /// Whether this load's specifiers gave more than [`EXPANDED_MAX`]
    /// bytes: what they expand to cannot start, and is not built.
    pub fn over_budget(&self) -> bool {
        self.cache.3.get()
    }

    /// The bytes specifier values have added in this load.
    #[cfg(test)]
    pub fn expanded_bytes(&self) -> usize {
        self.cache.2.get()
    }

    /// Expand the specifiers of `text` (specifier_printf).
    pub fn expand(&self, text: &[u8]) -> Result<Vec<u8>, String> {
        let too_big = || {
            format!(
                "the unit's specifiers expand to more than the {} MiB of arguments and \
                 environment exec takes (E2BIG)",
                EXPANDED_MAX >> 20
            )
        };
        if self.over_budget() {
            return Err(too_big());
        }
        let mut out = Vec::with_capacity(text.len());
        let mut i = 0;
        while i < text.len() {
            if text[i] != b'%' {
                out.push(text[i]);
                i += 1;
                continue;
            }
            let Some(&c) = text.get(i + 1) else {
                out.push(b'%');
                break;
            };
            i += 2;
            if c == b'%' {
                out.push(b'%');
            } else if c.is_ascii_alphanumeric() {
                if !KNOWN.contains(c as char) {
                    return Err(format!("unknown specifier %{}", c as char));
                }
                let Some(v) = self.value(c as char) else {
                    self.cache.1.set(Some(c as char));
                    return Err(format!("cannot resolve specifier %{}", c as char));
                };
                // Past what any exec takes, the value is of no use: never
                // built (lines of `%o`s on a long os-release field).
                let spent = self.cache.2.get().saturating_add(v.len());
                if spent > EXPANDED_MAX {
                    self.cache.3.set(true);
                    return Err(too_big());
                }
                self.cache.2.set(spent);
                out.extend_from_slice(v.as_bytes());
            } else {
                out.push(b'%');
                out.push(c);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree's padded /etc/hostname named by a line of `%H`s is read once
    /// (2000 of them on an 8 MiB file held `explain --root` past 300 s),
    /// and a line of `%o`s on a long os-release field stops at exec's
    /// limit instead of building gigabytes.
    #[test]
    fn host_files_are_read_once_and_expansion_is_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        let etc = tmp.path().join("etc");
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(
            etc.join("hostname"),
            format!("{}node-a\n", " ".repeat(60 << 10)),
        )
        .unwrap();
        std::fs::write(
            etc.join("os-release"),
            format!("ID={}\n", "o".repeat(60 << 10)),
        )
        .unwrap();
        let v = SpecifierValues {
            host: Host::System {
                root: tmp.path().to_path_buf(),
                live: false,
            },
            unit: "kubelet.service".into(),
            fragment: None,
            cache: HostCache::default(),
        };
        let out = v.expand("%H".repeat(20_000).as_bytes()).unwrap();
        assert_eq!(out, "node-a".repeat(20_000).into_bytes());
        let why = v.expand("%o".repeat(200).as_bytes()).unwrap_err();
        assert!(why.contains("E2BIG"), "{why}");
        // Past its bound a host file is not read: the specifier is
        // unresolved, as for a missing file.
        std::fs::write(etc.join("hostname"), " ".repeat(1 << 20) + "a").unwrap();
        let fresh = SpecifierValues {
            cache: HostCache::default(),
            ..v.clone()
        };
        assert!(fresh.expand(b"%H").is_err());
    }

    /// Off the node the running kernel, boot and architecture are this
    /// machine's, not the node's: unresolved (review 12), and said so.
    #[test]
    fn this_machines_kernel_boot_and_arch_are_unknown_off_the_node() {
        let dir = tempfile::tempdir().unwrap();
        let spec = |live| SpecifierValues {
            host: Host::System {
                root: dir.path().to_path_buf(),
                live,
            },
            unit: "k.service".into(),
            fragment: None,
            cache: Default::default(),
        };
        let off = spec(false);
        for c in ["%v", "%a", "%b"] {
            assert!(off.expand(c.as_bytes()).is_err(), "{c}");
            assert_eq!(off.take_unresolved(), c.chars().nth(1));
            assert_eq!(off.take_unresolved(), None);
        }
        assert!(spec(true).expand(b"%a").is_ok());
        assert!(off.expand(b"%Z").is_err());
        assert_eq!(
            off.take_unresolved(),
            None,
            "an unknown letter fails anywhere"
        );
    }

    fn vals(unit: &str) -> SpecifierValues {
        let mut m = SortedMap::new();
        m.insert('t', "/run/user/0".to_string());
        m.insert('u', "root".to_string());
        m.insert('U', "0".to_string());
        m.insert('h', "/root".to_string());
        SpecifierValues {
            host: Host::Fixed(m),
            unit: unit.into(),
            fragment: None,
            cache: HostCache::default(),
        }
    }

    fn x(unit: &str, text: &str) -> Result<String, String> {
        vals(unit)
            .expand(text.as_bytes())
            .map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn unit_name_specifiers() {
        assert_eq!(
            x(
                "x01@foo-bar.service",
                "%n %N %p %P %i %I %j %J %f %% %t %u %U %h 100% a%-b %"
            )
            .unwrap(),
            "x01@foo-bar.service x01@foo-bar x01 x01 foo-bar foo/bar x01 x01 /foo/bar % /run/user/0 root 0 /root 100% a%-b %"
        );
        assert_eq!(x("x04@a\\x20b.service", "%i|%I").unwrap(), "a\\x20b|a b");
        assert_eq!(
            x("foo-bar-baz.service", "%j %f").unwrap(),
            "baz /foo/bar/baz"
        );
    }

    #[test]
    fn unknown_letter_is_an_error() {
        assert!(x("a.service", "%z").is_err());
        assert!(x("a.service", "%D").is_err());
    }

    /// An os-release field the file does not set is empty, as in systemd;
    /// without os-release it cannot be resolved.
    #[test]
    fn a_missing_os_release_field_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        let spec = SpecifierValues {
            host: Host::System {
                root: dir.path().to_path_buf(),
                live: false,
            },
            unit: "k.service".into(),
            fragment: None,
            cache: Default::default(),
        };
        assert!(spec.expand(b"%A").is_err());
        std::fs::write(dir.path().join("etc/os-release"), "ID=debian\n").unwrap();
        let spec = SpecifierValues {
            cache: Default::default(),
            ..spec
        };
        assert_eq!(spec.expand(b"[%A][%o][%W]").unwrap(), b"[][debian][]");
    }
}
