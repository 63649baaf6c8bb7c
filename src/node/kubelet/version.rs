//! Which kubelet a node runs, as far as its files tell offline: flags come
//! and go between releases (`--pod-infra-container-image` is gone from
//! 1.35), so `explain` judges a unit's flags against that kubelet.

use std::path::Path;

use super::Profile;

/// The newest kubelet whose flags `known_flags::CURRENT` lists.
pub const REFERENCE_MINOR: u32 = 36;

/// The kubelet minor version (1.x) a node runs, and where that was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletVersion {
    /// None: not known; flags are judged for every kubelet.
    pub minor: Option<u32>,
    /// Said with it: `--kubelet-version`, an OpenShift release, ...
    pub source: String,
    /// Whose kubelet it is, when the source tells: OpenShift's (an
    /// OpenShift release names it) or upstream's (a distribution's kubelet
    /// package); their self-label rules differ (`Profile`).
    pub profile: Option<Profile>,
}

impl KubeletVersion {
    pub fn unknown() -> KubeletVersion {
        KubeletVersion {
            minor: None,
            source: String::new(),
            profile: None,
        }
    }

    /// One line for `explain`: the version assumed, and from what.
    pub fn describe(&self) -> String {
        match self.minor {
            Some(m) => format!("1.{m} ({})", self.source),
            None => format!(
                "unknown (flags are judged for every kubelet up to 1.{REFERENCE_MINOR}; give --kubelet-version)"
            ),
        }
    }
}

/// `1.30`, `v1.30.2`, `1.30.2-1.1` (a package's version): the minor.
pub fn parse_minor(text: &str) -> Option<u32> {
    let text = text.trim().trim_start_matches('v');
    let rest = text.strip_prefix("1.")?;
    let digits: &str = &rest[..rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len())];
    digits.parse().ok().filter(|_| !digits.is_empty())
}

/// `--kubelet-version`: a usage error when it is not `1.MINOR[.PATCH]`.
pub fn from_option(text: &str) -> Result<KubeletVersion, String> {
    match parse_minor(text) {
        Some(m) => Ok(KubeletVersion {
            minor: Some(m),
            source: "--kubelet-version".into(),
            profile: None,
        }),
        None => Err(format!(
            "{text:?} is not a kubelet version; write 1.MINOR, e.g. 1.30"
        )),
    }
}

/// The Kubernetes minor of an OpenShift release (`4.20`, `4.20.3`): each
/// OpenShift 4.y from 4.10 ships Kubernetes 1.(y+13) (4.14 is 1.27, 4.20
/// is 1.33, 4.22 is 1.35).
pub fn openshift_to_kubernetes(release: &str) -> Option<u32> {
    let rest = release.trim().trim_matches('"').strip_prefix("4.")?;
    let digits = &rest[..rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len())];
    let y: u32 = digits.parse().ok()?;
    (10..=99).contains(&y).then_some(y + 13)
}

/// The annotation the MCO puts on a rendered config: the OpenShift release
/// it was rendered by.
pub const RELEASE_ANNOTATION: &str = "machineconfiguration.openshift.io/release-image-version";

/// From a node's root: OpenShift's RHCOS names its release in
/// /etc/os-release (`OPENSHIFT_VERSION`); a Debian-family kubeadm node's
/// package database has the kubelet package's version.
pub fn from_root(root: &Path) -> Option<KubeletVersion> {
    // A regular file of the tree (possibly untrusted: never through a link
    // out of it, never a FIFO that would keep `explain` waiting).
    let read = |rel: &str| {
        let path = crate::node::unit::search::contained(root, &Path::new("/").join(rel)).ok()?;
        let bytes = crate::node::nodefs::read_regular(&path, 16 << 20).ok()??;
        String::from_utf8(bytes).ok()
    };
    for rel in ["etc/os-release", "usr/lib/os-release"] {
        let Some(text) = read(rel) else { continue };
        if let Some(release) = text
            .lines()
            .find_map(|l| l.strip_prefix("OPENSHIFT_VERSION="))
        {
            let release = release.trim().trim_matches(['"', '\'']);
            return Some(KubeletVersion {
                minor: Some(openshift_to_kubernetes(release)?),
                source: format!("OpenShift {release}, from /{rel}"),
                profile: Some(Profile::OpenShift),
            });
        }
        break;
    }
    let status = read("var/lib/dpkg/status")?;
    let stanza = status
        .split("\n\n")
        .find(|s| s.lines().any(|l| l == "Package: kubelet"))?;
    if !stanza
        .lines()
        .any(|l| l.starts_with("Status:") && l.ends_with(" installed"))
    {
        return None;
    }
    let version = stanza.lines().find_map(|l| l.strip_prefix("Version: "))?;
    Some(KubeletVersion {
        minor: Some(parse_minor(version.split(':').next_back()?)?),
        source: format!("the kubelet package {version}, from /var/lib/dpkg/status"),
        profile: Some(Profile::Upstream),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(parse_minor("1.30"), Some(30));
        assert_eq!(parse_minor("v1.33.4"), Some(33));
        assert_eq!(parse_minor("1.31.2-1.1"), Some(31));
        assert_eq!(parse_minor("2.1"), None);
        assert_eq!(parse_minor("1."), None);
        assert!(from_option("130").is_err());
        for (ocp, k) in [
            ("4.14.0", 27),
            ("4.20.3", 33),
            ("4.21", 34),
            ("4.22.0-ec.1", 35),
        ] {
            assert_eq!(openshift_to_kubernetes(ocp), Some(k), "{ocp}");
        }
        assert_eq!(openshift_to_kubernetes("3.11"), None);
    }

    #[test]
    fn a_root_names_its_kubelet() {
        let dir = tempfile::tempdir().unwrap();
        let w = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        assert_eq!(from_root(dir.path()), None);
        w(
            "var/lib/dpkg/status",
            "Package: kubeadm\nStatus: install ok installed\nVersion: 1.29.0-1.1\n\n\
             Package: kubelet\nStatus: install ok installed\nVersion: 1.30.2-1.1\n",
        );
        assert_eq!(from_root(dir.path()).unwrap().minor, Some(30));
        assert_eq!(
            from_root(dir.path()).unwrap().profile,
            Some(Profile::Upstream)
        );
        w("etc/os-release", "ID=rhcos\nOPENSHIFT_VERSION=\"4.16\"\n");
        let v = from_root(dir.path()).unwrap();
        assert_eq!(v.minor, Some(29));
        assert!(v.source.contains("OpenShift 4.16"), "{}", v.source);
        assert_eq!(v.profile, Some(Profile::OpenShift));
    }
}
