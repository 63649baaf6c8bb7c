//! `spec.extensions` the MCO takes, per OpenShift release. A name no
//! release knows is refused outright; one only some releases know is
//! judged against the node's release (`plan`), since on the others the
//! MCO refuses the pool's config and nothing of it rolls out.
//!
//! Read from openshift/machine-config-operator (the extension allowlist:
//! `getSupportedExtensions` in `pkg/daemon/update.go` at release-4.14
//! 00b2e0b1cc83 and release-4.15 1ffa8341fb18, checked by the daemon;
//! `SupportedExtensions` in `pkg/controller/common/helpers.go` from
//! release-4.16 on, checked by `ValidateMachineConfig`):
//!
//! | release | commit | names |
//! |---|---|---|
//! | 4.14, 4.15, 4.16, 4.17 | 00b2e0b1cc83, 1ffa8341fb18, 7327bb2359dd, 3bdd678e83da | wasm ipsec usbguard kerberos kernel-devel sandboxed-containers |
//! | 4.18 | f313997e0ba8 | + sysstat |
//! | 4.19, 4.20, 4.21 | 1a6905d980fd, afed09939d80, db84d8368ef7 | + two-node-ha |
//! | 4.22, main (4.23) | 9027c94cde45, 7ff337a4ffac | wasm gone |

/// The oldest OpenShift release this tool supports (4.N: N).
pub const FIRST_SUPPORTED: u32 = 14;

/// One extension: the first and last OpenShift 4.N releases whose MCO
/// knows it (`None`: still known at main).
pub struct Extension {
    pub name: &'static str,
    pub first: u32,
    pub last: Option<u32>,
}

pub const EXTENSIONS: [Extension; 8] = [
    Extension {
        name: "wasm",
        first: FIRST_SUPPORTED,
        last: Some(21),
    },
    Extension {
        name: "ipsec",
        first: FIRST_SUPPORTED,
        last: None,
    },
    Extension {
        name: "usbguard",
        first: FIRST_SUPPORTED,
        last: None,
    },
    Extension {
        name: "kerberos",
        first: FIRST_SUPPORTED,
        last: None,
    },
    Extension {
        name: "kernel-devel",
        first: FIRST_SUPPORTED,
        last: None,
    },
    Extension {
        name: "sandboxed-containers",
        first: FIRST_SUPPORTED,
        last: None,
    },
    Extension {
        name: "sysstat",
        first: 18,
        last: None,
    },
    Extension {
        name: "two-node-ha",
        first: 19,
        last: None,
    },
];

fn find(name: &str) -> Option<&'static Extension> {
    EXTENSIONS.iter().find(|e| e.name == name)
}

/// Whether the MCO of some supported release knows `name`.
pub fn known(name: &str) -> bool {
    find(name).is_some()
}

/// Every name some supported release knows, for a message.
pub fn names() -> Vec<&'static str> {
    EXTENSIONS.iter().map(|e| e.name).collect()
}

fn releases(e: &Extension) -> String {
    match e.last {
        Some(last) => format!("OpenShift 4.{} to 4.{last}", e.first),
        None => format!("OpenShift 4.{} and later", e.first),
    }
}

/// Why the MCO of OpenShift 4.`release` refuses the pool's extensions
/// (`None` for the release: unknown, so an extension some supported
/// release does not know may be refused), if it may.
pub fn refused<'a>(
    exts: impl IntoIterator<Item = &'a str>,
    release: Option<u32>,
) -> Option<String> {
    for name in exts {
        let Some(e) = find(name) else {
            return Some(format!("extension {name:?} is known to no release's MCO"));
        };
        let everywhere = e.first <= FIRST_SUPPORTED && e.last.is_none();
        match release {
            // Before the supported range: not judged.
            Some(r) if r < FIRST_SUPPORTED => {}
            Some(r) if r < e.first || e.last.is_some_and(|l| r > l) => {
                return Some(format!(
                    "extension {name:?} is known to the MCO of {} only, not to this node's 4.{r}",
                    releases(e)
                ));
            }
            Some(_) => {}
            None if !everywhere => {
                return Some(format!(
                    "extension {name:?} is known to the MCO of {} only, and the node's release \
                     is not known (no Node with its kubelet version): the pool's config may be \
                     refused",
                    releases(e)
                ));
            }
            None => {}
        }
    }
    None
}

/// For a release that takes them: the extensions some other supported
/// release refuses (an upgrade or a node of another release meets it).
pub fn partial<'a>(exts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    exts.into_iter()
        .filter_map(find)
        .filter(|e| e.first > FIRST_SUPPORTED || e.last.is_some())
        .map(|e| {
            format!(
                "extension {:?} is known to the MCO of {} only: on other releases the pool's \
                 config is refused",
                e.name,
                releases(e)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_release() {
        assert!(known("wasm") && known("two-node-ha") && !known("bogus") && !known(""));
        assert_eq!(refused(["wasm"], Some(20)), None);
        assert!(
            refused(["wasm"], Some(22))
                .unwrap()
                .contains("4.14 to 4.21 only")
        );
        assert!(
            refused(["two-node-ha"], Some(18))
                .unwrap()
                .contains("4.19 and later")
        );
        assert_eq!(refused(["two-node-ha"], Some(19)), None);
        assert!(refused(["wasm"], None).unwrap().contains("may be refused"));
        assert_eq!(refused(["usbguard", "ipsec"], None), None);
        assert!(refused(["sysstat"], Some(17)).is_some());
    }
}
