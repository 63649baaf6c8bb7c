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

/// What a field holds: its Go type in Ignition's `types` package. Go's
/// `encoding/json` takes `null` for any of them (a pointer stays nil, any
/// other type keeps its zero value) and refuses any other mismatch: the
/// whole config with it.
#[derive(Clone, Copy)]
enum Shape {
    /// `*bool`: true or false.
    Bool,
    /// `*int`, `int`: an integer (Go's `int`, 64 bits), no fraction.
    Int,
    /// `*string`, `string` and the named string types.
    Str,
    /// A list of strings (`[]KernelArgument`, `[]SSHAuthorizedKey`...).
    Strs,
    Object(Kind),
    List(Kind),
}

/// The spec's object types.
#[derive(Clone, Copy, Debug)]
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
use Shape::{Bool, Int, List, Object, Str, Strs};

/// A storage node's fields (files, directories and links have them all).
const NODE: [(&str, Shape); 4] = [
    ("group", Object(K::NodeOwner)),
    ("overwrite", Bool),
    ("path", Str),
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
            ("version", Str),
        ],
        K::IgnitionConfig => &[
            ("merge", List(K::Resource)),
            ("replace", Object(K::Resource)),
        ],
        K::Resource => &[
            ("compression", Str),
            ("httpHeaders", List(K::HttpHeader)),
            ("source", Str),
            ("verification", Object(K::Verification)),
        ],
        K::HttpHeader => &[("name", Str), ("value", Str)],
        K::Verification => &[("hash", Str)],
        K::Proxy => &[("httpProxy", Str), ("httpsProxy", Str), ("noProxy", Strs)],
        K::Security => &[("tls", Object(K::Tls))],
        K::Tls => &[("certificateAuthorities", List(K::Resource))],
        K::Timeouts => &[("httpResponseHeaders", Int), ("httpTotal", Int)],
        K::KernelArguments => &[("shouldExist", Strs), ("shouldNotExist", Strs)],
        K::Passwd => &[("groups", List(K::Group)), ("users", List(K::User))],
        K::User => &[
            ("gecos", Str),
            ("groups", Strs),
            ("homeDir", Str),
            ("name", Str),
            ("noCreateHome", Bool),
            ("noLogInit", Bool),
            ("noUserGroup", Bool),
            ("passwordHash", Str),
            ("primaryGroup", Str),
            ("sshAuthorizedKeys", Strs),
            ("shell", Str),
            ("shouldExist", Bool),
            ("system", Bool),
            ("uid", Int),
        ],
        K::Group => &[
            ("gid", Int),
            ("name", Str),
            ("passwordHash", Str),
            ("shouldExist", Bool),
            ("system", Bool),
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
            ("mode", Int),
        ],
        K::Directory => &[("mode", Int)],
        K::Link => &[("hard", Bool), ("target", Str)],
        K::NodeOwner => &[("id", Int), ("name", Str)],
        K::Disk => &[
            ("device", Str),
            ("partitions", List(K::Partition)),
            ("wipeTable", Bool),
        ],
        K::Partition => &[
            ("guid", Str),
            ("label", Str),
            ("number", Int),
            ("resize", Bool),
            ("shouldExist", Bool),
            ("sizeMiB", Int),
            ("startMiB", Int),
            ("typeGuid", Str),
            ("wipePartitionEntry", Bool),
        ],
        K::Filesystem => &[
            ("device", Str),
            ("format", Str),
            ("label", Str),
            ("mountOptions", Strs),
            ("options", Strs),
            ("path", Str),
            ("uuid", Str),
            ("wipeFilesystem", Bool),
        ],
        K::Luks => &[
            ("cex", Object(K::Cex)),
            ("clevis", Object(K::Clevis)),
            ("device", Str),
            ("discard", Bool),
            ("keyFile", Object(K::Resource)),
            ("label", Str),
            ("name", Str),
            ("openOptions", Strs),
            ("options", Strs),
            ("uuid", Str),
            ("wipeVolume", Bool),
        ],
        K::Cex => &[("enabled", Bool)],
        K::Clevis => &[
            ("custom", Object(K::ClevisCustom)),
            ("tang", List(K::Tang)),
            ("threshold", Int),
            ("tpm2", Bool),
        ],
        K::ClevisCustom => &[("config", Str), ("needsNetwork", Bool), ("pin", Str)],
        K::Tang => &[("advertisement", Str), ("thumbprint", Str), ("url", Str)],
        K::Raid => &[
            ("devices", Strs),
            ("level", Str),
            ("name", Str),
            ("options", Strs),
            ("spares", Int),
        ],
        K::Systemd => &[("units", List(K::Unit))],
        K::Unit => &[
            ("contents", Str),
            ("dropins", List(K::Dropin)),
            ("enabled", Bool),
            ("mask", Bool),
            ("name", Str),
        ],
        K::Dropin => &[("contents", Str), ("name", Str)],
    };
    let mut out = own.to_vec();
    if matches!(kind, K::File | K::Directory | K::Link) {
        out.extend(NODE);
    }
    out
}

/// Spec 2's `filesystem` of a file, directory or link, often left in
/// configs converted to spec 3: Ignition's spec 3 reader skips it (it
/// only warns), the MCO accepts the config and serves it without the key
/// (review 12 F12, checked with the MCO oracle), so it is passed over
/// here too, whatever its value, and plan's comparisons drop it.
pub const SPEC2_FILESYSTEM: &str = "filesystem";

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
/// the spec's own key where it stands, and a value of a type Ignition's
/// Go reader refuses there, naming it by its path.
pub fn check(config: &Value) -> Result<()> {
    check_named(config, "spec.config")
}

/// [`check`] for a whole Ignition config named `at` (a pointer config).
pub fn check_named(config: &Value, at: &str) -> Result<()> {
    walk(config, K::Config, at, "$")
}

fn walk(v: &Value, kind: Kind, at: &str, jp: &str) -> Result<()> {
    let Some(object) = v.as_object() else {
        // Not an object: refused by the caller's type check.
        return Ok(());
    };
    let known = fields(kind);
    for (key, value) in object {
        if key == SPEC2_FILESYSTEM && matches!(kind, K::File | K::Directory | K::Link) {
            continue;
        }
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
        let jhere = format!("{jp}.{key}");
        check_type(value, *shape, &jhere)?;
        match shape {
            Object(k) => walk(value, *k, &here, &jhere)?,
            List(k) => {
                for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                    walk(item, *k, &format!("{here}[{i}]"), &format!("{jhere}.{i}"))?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Refuse `v` where Go's `encoding/json` refuses it for a field of
/// `shape` (`jp`: its JSON path, `$.systemd.units.0.mask`), saying what
/// the MCO says.
fn check_type(v: &Value, shape: Shape, jp: &str) -> Result<()> {
    let fits = |v: &Value, shape: Shape| match (shape, v) {
        (_, Value::Null) => true,
        (Bool, Value::Bool(_)) | (Str, Value::String(_)) => true,
        // Go reads an int from the number's text: no fraction, no
        // exponent, within 64 bits. (YAML's `420.0` reaches it as `420`.)
        (Int, Value::Number(n)) => n.as_i64().is_some(),
        (Strs | List(_), Value::Array(_)) | (Object(_), Value::Object(_)) => true,
        _ => false,
    };
    let go_type = |shape: Shape| match shape {
        Bool => "bool".to_string(),
        Int => "int".to_string(),
        Str => "string".to_string(),
        Strs => "[]string".to_string(),
        Object(k) => format!("types.{k:?}"),
        List(k) => format!("[]types.{k:?}"),
    };
    let json_type = |v: &Value| match v {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    };
    let wants = |shape: Shape| match shape {
        Bool => "true or false",
        Int => "an integer (no fraction, within 64 bits)",
        Str => "a string (quote it)",
        Strs => "a list of strings",
        Object(_) => "an object",
        List(_) => "a list of objects",
    };
    let (bad, at, elem) = match (shape, v) {
        (Strs, Value::Array(items)) => match items.iter().position(|i| !fits(i, Str)) {
            Some(i) => (&items[i], format!("{jp}.{i}"), Str),
            None => return Ok(()),
        },
        (List(k), Value::Array(items)) => match items.iter().position(|i| !fits(i, Object(k))) {
            Some(i) => (&items[i], format!("{jp}.{i}"), Object(k)),
            None => return Ok(()),
        },
        _ if fits(v, shape) => return Ok(()),
        _ => (v, jp.to_string(), shape),
    };
    let what = match bad {
        Value::Number(n) => format!("number {n}"),
        other => json_type(other).to_string(),
    };
    let shown = match bad {
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "an object".to_string(),
        other => other.to_string(),
    };
    bail!(
        "spec.config {at} is {shown}: Ignition reads {} there, so the MCO refuses the \
         MachineConfig (\"json: cannot unmarshal {what} into Go struct field Config{} of type \
         {}\") and renders no config for its pool (it goes Degraded: its nodes, and new ones, \
         keep the config before); write {} there",
        wants(elem),
        jp.trim_start_matches('$'),
        go_type(elem),
        wants(elem),
    )
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

    /// Review 10 (r10b F1): a value of another type than Ignition's Go
    /// field was read as absent (`mask: "yes"` as no mask) while the MCO
    /// refused the MachineConfig. `null` fits any field, as in Go.
    #[test]
    fn values_have_the_go_type_of_their_field() {
        let unit = |u: Value| json!({"systemd": {"units": [u]}});
        for (config, says) in [
            (
                unit(json!({"name": "x.service", "mask": "yes"})),
                "$.systemd.units.0.mask is \"yes\": Ignition reads true or false",
            ),
            (
                unit(json!({"name": "x.service", "enabled": 1})),
                "cannot unmarshal number 1 into Go struct field Config.systemd.units.0.enabled of type bool",
            ),
            (unit(json!({"name": 1})), "$.systemd.units.0.name is 1"),
            (
                json!({"storage": {"files": [{"path": "/a", "mode": 420.5}]}}),
                "number 420.5",
            ),
            (
                json!({"storage": {"files": [{"path": "/a", "mode": 9_223_372_036_854_775_808u64}]}}),
                "of type int",
            ),
            (
                json!({"storage": {"files": [{"path": "/a", "mode": "420"}]}}),
                "$.storage.files.0.mode is \"420\": Ignition reads an integer",
            ),
            (
                json!({"passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["a", 1]}]}}),
                "$.passwd.users.0.sshAuthorizedKeys.1 is 1",
            ),
            (
                json!({"storage": {"files": [{"path": "/a", "contents": "data:,x"}]}}),
                "$.storage.files.0.contents is \"data:,x\": Ignition reads an object",
            ),
            (json!({"storage": {"files": ["/a"]}}), "of type types.File"),
            (json!({"systemd": []}), "$.systemd is a list"),
        ] {
            let e = format!("{:#}", check(&config).unwrap_err());
            assert!(
                e.contains(says) && e.contains("the MCO refuses"),
                "{config}: {e}"
            );
        }
        check(&json!({"ignition": {"version": "3.4.0", "config": null},
            "storage": {"files": [{"path": "/a", "mode": null, "overwrite": null,
                "user": null, "append": [null], "contents": {"source": null}}],
                "links": null},
            "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": [null], "uid": -1}]},
            "systemd": {"units": [{"name": "x.service", "mask": false, "enabled": null}]}}))
        .unwrap();
    }

    /// Review 12 (r12b) F12: a spec 2 `filesystem` left on a file,
    /// directory or link is skipped by the MCO (refused on 810045b); a
    /// folded spelling of it, or the key elsewhere, is still refused.
    #[test]
    fn a_spec2_filesystem_key_of_a_storage_node_is_passed_over() {
        check(&json!({"ignition": {"version": "3.1.0"}, "storage": {
            "files": [{"path": "/etc/x", "filesystem": "root", "mode": 420}],
            "directories": [{"path": "/etc/d", "filesystem": 5}],
            "links": [{"path": "/etc/l", "target": "/x", "filesystem": {"a": [1]}}]}}))
        .unwrap();
        for config in [
            json!({"storage": {"files": [{"path": "/x", "Filesystem": "root"}]}}),
            json!({"systemd": {"units": [{"name": "a.service", "filesystem": "root"}]}}),
            json!({"storage": {"filesystem": "root"}}),
        ] {
            let e = format!("{:#}", check(&config).unwrap_err());
            assert!(
                e.contains("no key of Ignition's spec 3 config"),
                "{config}: {e}"
            );
        }
    }

    #[test]
    fn folding_as_go_compares_keys() {
        assert_eq!(fold("ſource"), "SOURCE");
        assert_eq!(fold("\u{212a}ey"), "KEY");
        assert_eq!(fold("Contents"), fold("contents"));
        assert_ne!(fold("source"), fold("sources"));
    }
}
