//! The keys of an Ignition spec 3 config (3.5.0's, which holds every
//! earlier 3.x key), as a MachineConfig's `spec.config` may use them.
//!
//! The MCO reads `spec.config` with Go's `encoding/json` into Ignition's
//! types: a key matches a field exactly or case-insensitively, with
//! Unicode folding (`ſource` is `source`, `Contents` is `contents`), and
//! of two keys for one field the later wins. The API server keeps both
//! keys (the field is free-form), so `source` and `ſource` side by side
//! are two values of one field to the MCO, one to a reader matching keys
//! exactly. So every key here must be the spec's exact key: a key that
//! folds to one is refused naming it, and a key the spec does not have at
//! all (Ignition ignores it) is refused too: kubelet-labeler cannot vouch
//! for what it means.

use anyhow::{Result, bail};
use serde_json::Value;

/// What a field holds.
#[derive(Clone, Copy)]
enum Shape {
    /// A string, number, bool, or a list of them.
    Plain,
    Object(Kind),
    List(Kind),
}

/// The spec's object types.
#[derive(Clone, Copy)]
enum Kind {
    Config,
    Ignition,
    IgnitionConfig,
    Resource,
    HttpHeader,
    Verification,
    Proxy,
    Security,
    Tls,
    Timeouts,
    KernelArguments,
    Passwd,
    User,
    Group,
    Storage,
    File,
    Directory,
    Link,
    NodeOwner,
    Disk,
    Partition,
    Filesystem,
    Luks,
    Cex,
    Clevis,
    ClevisCustom,
    Tang,
    Raid,
    Systemd,
    Unit,
    Dropin,
}

use Kind as K;
use Shape::{List, Object, Plain};

/// A storage node's fields (files, directories and links have them all).
const NODE: [(&str, Shape); 4] = [
    ("group", Object(K::NodeOwner)),
    ("overwrite", Plain),
    ("path", Plain),
    ("user", Object(K::NodeOwner)),
];

fn fields(kind: Kind) -> Vec<(&'static str, Shape)> {
    let own: &[(&str, Shape)] = match kind {
        K::Config => &[
            ("ignition", Object(K::Ignition)),
            ("kernelArguments", Object(K::KernelArguments)),
            ("passwd", Object(K::Passwd)),
            ("storage", Object(K::Storage)),
            ("systemd", Object(K::Systemd)),
        ],
        K::Ignition => &[
            ("config", Object(K::IgnitionConfig)),
            ("proxy", Object(K::Proxy)),
            ("security", Object(K::Security)),
            ("timeouts", Object(K::Timeouts)),
            ("version", Plain),
        ],
        K::IgnitionConfig => &[
            ("merge", List(K::Resource)),
            ("replace", Object(K::Resource)),
        ],
        K::Resource => &[
            ("compression", Plain),
            ("httpHeaders", List(K::HttpHeader)),
            ("source", Plain),
            ("verification", Object(K::Verification)),
        ],
        K::HttpHeader => &[("name", Plain), ("value", Plain)],
        K::Verification => &[("hash", Plain)],
        K::Proxy => &[
            ("httpProxy", Plain),
            ("httpsProxy", Plain),
            ("noProxy", Plain),
        ],
        K::Security => &[("tls", Object(K::Tls))],
        K::Tls => &[("certificateAuthorities", List(K::Resource))],
        K::Timeouts => &[("httpResponseHeaders", Plain), ("httpTotal", Plain)],
        K::KernelArguments => &[("shouldExist", Plain), ("shouldNotExist", Plain)],
        K::Passwd => &[("groups", List(K::Group)), ("users", List(K::User))],
        K::User => &[
            ("gecos", Plain),
            ("groups", Plain),
            ("homeDir", Plain),
            ("name", Plain),
            ("noCreateHome", Plain),
            ("noLogInit", Plain),
            ("noUserGroup", Plain),
            ("passwordHash", Plain),
            ("primaryGroup", Plain),
            ("sshAuthorizedKeys", Plain),
            ("shell", Plain),
            ("shouldExist", Plain),
            ("system", Plain),
            ("uid", Plain),
        ],
        K::Group => &[
            ("gid", Plain),
            ("name", Plain),
            ("passwordHash", Plain),
            ("shouldExist", Plain),
            ("system", Plain),
        ],
        K::Storage => &[
            ("directories", List(K::Directory)),
            ("disks", List(K::Disk)),
            ("files", List(K::File)),
            ("filesystems", List(K::Filesystem)),
            ("links", List(K::Link)),
            ("luks", List(K::Luks)),
            ("raid", List(K::Raid)),
        ],
        K::File => &[
            ("append", List(K::Resource)),
            ("contents", Object(K::Resource)),
            ("mode", Plain),
        ],
        K::Directory => &[("mode", Plain)],
        K::Link => &[("hard", Plain), ("target", Plain)],
        K::NodeOwner => &[("id", Plain), ("name", Plain)],
        K::Disk => &[
            ("device", Plain),
            ("partitions", List(K::Partition)),
            ("wipeTable", Plain),
        ],
        K::Partition => &[
            ("guid", Plain),
            ("label", Plain),
            ("number", Plain),
            ("resize", Plain),
            ("shouldExist", Plain),
            ("sizeMiB", Plain),
            ("startMiB", Plain),
            ("typeGuid", Plain),
            ("wipePartitionEntry", Plain),
        ],
        K::Filesystem => &[
            ("device", Plain),
            ("format", Plain),
            ("label", Plain),
            ("mountOptions", Plain),
            ("options", Plain),
            ("path", Plain),
            ("uuid", Plain),
            ("wipeFilesystem", Plain),
        ],
        K::Luks => &[
            ("cex", Object(K::Cex)),
            ("clevis", Object(K::Clevis)),
            ("device", Plain),
            ("discard", Plain),
            ("keyFile", Object(K::Resource)),
            ("label", Plain),
            ("name", Plain),
            ("openOptions", Plain),
            ("options", Plain),
            ("uuid", Plain),
            ("wipeVolume", Plain),
        ],
        K::Cex => &[("enabled", Plain)],
        K::Clevis => &[
            ("custom", Object(K::ClevisCustom)),
            ("tang", List(K::Tang)),
            ("threshold", Plain),
            ("tpm2", Plain),
        ],
        K::ClevisCustom => &[("config", Plain), ("needsNetwork", Plain), ("pin", Plain)],
        K::Tang => &[
            ("advertisement", Plain),
            ("thumbprint", Plain),
            ("url", Plain),
        ],
        K::Raid => &[
            ("devices", Plain),
            ("level", Plain),
            ("name", Plain),
            ("options", Plain),
            ("spares", Plain),
        ],
        K::Systemd => &[("units", List(K::Unit))],
        K::Unit => &[
            ("contents", Plain),
            ("dropins", List(K::Dropin)),
            ("enabled", Plain),
            ("mask", Plain),
            ("name", Plain),
        ],
        K::Dropin => &[("contents", Plain), ("name", Plain)],
    };
    let mut out = own.to_vec();
    if matches!(kind, K::File | K::Directory | K::Link) {
        out.extend(NODE);
    }
    out
}

/// A key as Go's `encoding/json` compares it: ASCII upper-cased, any
/// other rune lower- then upper-cased (`ſ` is `S`, the Kelvin sign `K`).
/// Its older matcher (Unicode simple folding) joins the same runes here.
pub fn fold(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii() {
                return c.to_ascii_uppercase();
            }
            let lower: Vec<char> = c.to_lowercase().collect();
            let one = if lower.len() == 1 { lower[0] } else { c };
            let upper: Vec<char> = one.to_uppercase().collect();
            if upper.len() == 1 { upper[0] } else { one }
        })
        .collect()
}

/// Refuse a key of `config` (a MachineConfig's `spec.config`) that is not
/// the spec's own key where it stands, naming it by its path.
pub fn check(config: &Value) -> Result<()> {
    walk(config, K::Config, "spec.config")
}

fn walk(v: &Value, kind: Kind, at: &str) -> Result<()> {
    let Some(object) = v.as_object() else {
        // Not an object: the MCO's own parse refuses a wrong type.
        return Ok(());
    };
    let known = fields(kind);
    for (key, value) in object {
        let Some((_, shape)) = known.iter().find(|(k, _)| k == key) else {
            match known.iter().find(|(k, _)| fold(k) == fold(key)) {
                Some((exact, _)) => bail!(
                    "{at}.{key:?}: the MCO (Go's JSON reader, which matches keys \
                     case-insensitively with Unicode folding) reads it as {exact:?}, which \
                     kubelet-labeler reads only as spelled, so what the node gets is not what \
                     explain and plan show; spell it {exact:?} (and keep one of the two)"
                ),
                None => bail!(
                    "{at}.{key:?}: no key of Ignition's spec 3 config here (Ignition ignores \
                     it, and kubelet-labeler cannot vouch for what it means); remove it, or \
                     fix its spelling"
                ),
            }
        };
        let here = format!("{at}.{key}");
        match shape {
            Plain => {}
            Object(k) => walk(value, *k, &here)?,
            List(k) => {
                for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                    walk(item, *k, &format!("{here}[{i}]"))?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_the_specs_exact_ones() {
        let ours = json!({"ignition": {"version": "3.4.0"},
            "storage": {"files": [{"path": "/etc/x", "mode": 420, "overwrite": true,
                "contents": {"source": "data:,x", "compression": ""},
                "user": {"name": "root"}}]},
            "systemd": {"units": [{"name": "k.service", "enabled": true,
                "dropins": [{"name": "d.conf", "contents": "x"}]}]}});
        check(&ours).unwrap();
        // Review 9, F3: `ſource` (U+017F) beside `source` is the MCO's
        // `source` (the later wins: the node got the env file without the
        // taint), and so are `Contents`, `Path`, `Dropins`, `Mask`, the
        // Kelvin sign for `k`.
        for (config, key, exact) in [
            (
                json!({"storage": {"files": [{"path": "/x", "contents": {"source": "data:,a", "ſource": "data:,b"}}]}}),
                "spec.config.storage.files[0].contents.\"ſource\"",
                "\"source\"",
            ),
            (
                json!({"storage": {"files": [{"path": "/x", "Contents": {"source": "data:,b"}}]}}),
                "spec.config.storage.files[0].\"Contents\"",
                "\"contents\"",
            ),
            (
                json!({"storage": {"files": [{"Path": "/x"}]}}),
                "\"Path\"",
                "\"path\"",
            ),
            (
                json!({"systemd": {"units": [{"name": "k.service", "Dropins": []}]}}),
                "\"Dropins\"",
                "\"dropins\"",
            ),
            (
                json!({"systemd": {"units": [{"name": "k.service", "MASK": true}]}}),
                "\"MASK\"",
                "\"mask\"",
            ),
            (
                json!({"storage": {"lin\u{212a}s": []}}),
                "spec.config.storage.\"lin\u{212a}s\"",
                "\"links\"",
            ),
            (
                json!({"IGNITION": {}}),
                "spec.config.\"IGNITION\"",
                "\"ignition\"",
            ),
        ] {
            let e = format!("{:#}", check(&config).unwrap_err());
            assert!(
                e.contains(key) && e.contains(&format!("reads it as {exact}")),
                "{config}: {e}"
            );
        }
        let e = check(&json!({"storage": {"files": [{"path": "/x", "overwite": true}]}}))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("spec.config.storage.files[0].\"overwite\": no key of Ignition"),
            "{e}"
        );
    }

    #[test]
    fn folding_as_go_compares_keys() {
        assert_eq!(fold("ſource"), "SOURCE");
        assert_eq!(fold("\u{212a}ey"), "KEY");
        assert_eq!(fold("Contents"), fold("contents"));
        assert_ne!(fold("source"), fold("sources"));
    }
}
