//! Check a user's Ignition config before `iso embed` hides it in an image,
//! where only the node's first boot would find out it is broken.
//!
//! Two layers: the `ignition-config` crate's types for the config's spec
//! version (field names and JSON types, required fields, unknown keys), then
//! the rules Ignition's own validation adds on top of the types and the
//! crate does not have (absolute paths, unique entries, unit and drop-in
//! names, resource URLs, compression, file modes, hash functions). Every
//! rule here is one `ignition-validate` enforces (tests/iso.rs compares the
//! two on a corpus); disks, RAID, LUKS, filesystems, users and kernel
//! arguments get the type check only.

use std::collections::BTreeSet;

use anyhow::{Result, bail};
use base64::Engine;
use serde_json::Value;

/// Ignition spec versions CoreOS's Ignition (2.x program, 3.x spec) reads:
/// 3.0.0 through 3.5.0 (3.5.0 from Ignition 2.20, RHCOS 4.19). Spec 2.x
/// configs are refused by it ("config version too old"); only the MCS still
/// translates 2.2 for old boot images, which does not apply to an ISO.
pub const IGNITION_VERSIONS: [&str; 6] = ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"];

const FIX: &str = "give an Ignition config (Butane output, or `kubelet-labeler render ignition`)";

/// What a config that passed the check carries besides its content.
#[derive(Debug, PartialEq, Eq)]
pub struct Checked {
    /// `ignition.version`.
    pub version: String,
    /// Keys the spec version does not have, as `$.a.0.b`: Ignition ignores
    /// them (a warning, not an error, in `ignition-validate` too).
    pub unknown_keys: Vec<String>,
    /// An object names one key twice: Ignition (Go's JSON reader) keeps the
    /// last, and so does this check; worth a warning all the same.
    pub repeats_keys: bool,
}

/// Refuse a config the node's Ignition would refuse at first boot; `name`
/// names the input in the message.
pub fn check_ignition(config: &[u8], name: &str) -> Result<Checked> {
    let value: Value = serde_json::from_slice(config)
        .map_err(|e| anyhow::anyhow!("{name} is not JSON ({e}); {FIX}"))?;
    let Some(object) = value.as_object() else {
        bail!("{name} is JSON but not an object; {FIX}");
    };
    let Some(version) = object
        .get("ignition")
        .and_then(|i| i.get("version"))
        .and_then(|v| v.as_str())
    else {
        bail!("{name} has no ignition.version string; {FIX}");
    };
    if !IGNITION_VERSIONS.contains(&version) {
        let hint = if version.starts_with("2.") {
            "spec 2.x is not read by CoreOS's Ignition; translate it to 3.x (e.g. with Butane)"
        } else {
            "use a version CoreOS's Ignition reads"
        };
        bail!(
            "{name} names Ignition version {version:?}; CoreOS reads {}; {hint}",
            IGNITION_VERSIONS.join(", ")
        );
    }
    let spec = spec_url(version);
    // serde refuses a repeated key where Go's JSON reader keeps the last
    // value; `value` kept the last too, so its text is what Ignition reads.
    let mut repeats_keys = false;
    let parsed = match ignition_config::Config::parse_slice(config) {
        Err(ignition_config::Error::Serialization(e))
            if e.to_string().starts_with("duplicate field") =>
        {
            repeats_keys = true;
            ignition_config::Config::parse_slice(&serde_json::to_vec(&value)?)
        }
        other => other,
    };
    let unknown_keys = match parsed {
        Ok((_, warnings)) => warnings
            .into_iter()
            .map(|w| match w {
                ignition_config::Warning::UnusedKey(k) => k,
                other => other.to_string(),
            })
            .collect(),
        Err(e) => {
            let e = match e {
                ignition_config::Error::Serialization(e) => {
                    // The field as a JSON path, found at the error's position
                    // in the text parsed (the re-written one after a repeated
                    // key); the position itself is left out.
                    let text = if repeats_keys {
                        serde_json::to_vec(&value)?
                    } else {
                        config.to_vec()
                    };
                    let why = e.to_string();
                    let why = why.split(" at line ").next().unwrap_or("");
                    match path_at(&text, e.line(), e.column()) {
                        Some(path) => format!("{path}: {why}{}", mode_hint(&path, why)),
                        None => why.to_string(),
                    }
                }
                other => other.to_string(),
            };
            bail!("{name} is not valid Ignition {version}: {e}; fix that field (see {spec})");
        }
    };
    let minor = version.as_bytes()[2] - b'0';
    if let Err(e) = (Rules { minor }).config(&value) {
        bail!("{name} is not valid Ignition {version}: {e} (see {spec})");
    }
    Ok(Checked {
        version: version.to_string(),
        unknown_keys,
        repeats_keys,
    })
}

/// The JSON path (`$.storage.files.0.mode`) of the value at `line` and
/// `column` (1-based, as serde_json counts) in `text`: the keys and indexes
/// open there. Just after a `}` that is the object's own path (serde_json
/// reports a missing field there). None at the top level.
fn path_at(text: &[u8], line: usize, column: usize) -> Option<String> {
    let mut offset = 0;
    for _ in 1..line {
        offset += text[offset..].iter().position(|&b| b == b'\n')? + 1;
    }
    let end = (offset + column).min(text.len());
    // One entry per open container: the key (object) or index (array).
    let mut stack: Vec<(bool, String)> = Vec::new();
    let mut i = 0;
    while i < end {
        match text[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                // A string followed by `:` is a key of the open object.
                let rest = text.get(i + 1..).unwrap_or_default();
                let after = rest.iter().find(|c| !c.is_ascii_whitespace());
                if after == Some(&b':')
                    && let Some((false, key)) = stack.last_mut()
                {
                    *key = String::from_utf8_lossy(&text[start..i.min(text.len())]).into_owned();
                }
            }
            b'{' => stack.push((false, String::new())),
            b'[' => stack.push((true, "0".to_string())),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some((true, index)) = stack.last_mut() {
                    *index = (index.parse::<usize>().unwrap_or(0) + 1).to_string();
                }
            }
            _ => {}
        }
        i += 1;
    }
    // (An object before its first key adds nothing.)
    stack.retain(|(_, k)| !k.is_empty());
    if stack.is_empty() {
        return None;
    }
    Some(stack.iter().fold("$".to_string(), |p, (_, k)| p + "." + k))
}

/// Modes are numbers in JSON: `"0644"` (or octal written as a number) is a
/// common slip.
fn mode_hint(path: &str, why: &str) -> &'static str {
    if path.ends_with(".mode") && why.starts_with("invalid type: string") {
        "; a mode is a decimal number: 0644 is 420, 0755 is 493"
    } else {
        ""
    }
}

/// The spec's documentation page.
fn spec_url(version: &str) -> String {
    let v = version.trim_end_matches(".0").replace('.', "_");
    format!("https://coreos.github.io/ignition/configuration-v{v}/")
}

/// Ignition's validation rules past the types, for spec 3.`minor`. The
/// config has already parsed as that spec's types, so every field has its
/// type; a field of another type is skipped here, not trusted.
struct Rules {
    minor: u8,
}

type Check = std::result::Result<(), String>;

fn items<'a>(v: &'a Value, pointer: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

fn json_path(pointer: &str) -> String {
    format!("${}", pointer.replace('/', "."))
}

/// Unit types systemd knows (systemd.unit(5)); Ignition refuses the rest.
const UNIT_SUFFIXES: [&str; 12] = [
    ".service",
    ".socket",
    ".device",
    ".mount",
    ".automount",
    ".swap",
    ".target",
    ".path",
    ".timer",
    ".snapshot",
    ".slice",
    ".scope",
];

impl Rules {
    fn config(&self, v: &Value) -> Check {
        for (i, r) in items(v, "/ignition/config/merge") {
            self.resource(r, &format!("/ignition/config/merge/{i}"))?;
        }
        if let Some(r) = v.pointer("/ignition/config/replace") {
            self.resource(r, "/ignition/config/replace")?;
        }
        for (i, r) in items(v, "/ignition/security/tls/certificateAuthorities") {
            self.resource(
                r,
                &format!("/ignition/security/tls/certificateAuthorities/{i}"),
            )?;
        }
        let mut node_paths = BTreeSet::new();
        for kind in ["files", "directories", "links"] {
            for (i, node) in items(v, &format!("/storage/{kind}")) {
                let at = format!("/storage/{kind}/{i}");
                let Some(path) = node.get("path").and_then(Value::as_str) else {
                    continue;
                };
                if !path.starts_with('/') {
                    return Err(format!(
                        "{} {path:?} is not absolute; start it with /",
                        json_path(&format!("{at}/path"))
                    ));
                }
                // As Go's path.Clean leaves it: no //, /./, /../ or trailing /.
                if path != "/"
                    && path[1..]
                        .split('/')
                        .any(|c| c.is_empty() || c == "." || c == "..")
                {
                    return Err(format!(
                        "{} {path:?} is not a simplified path; drop empty, . and .. parts and any trailing /",
                        json_path(&format!("{at}/path"))
                    ));
                }
                // Ignition refuses two nodes for one path, of any kind.
                if !node_paths.insert(path) {
                    return Err(format!(
                        "{} {path:?} is written twice; keep one entry per path",
                        json_path(&format!("{at}/path"))
                    ));
                }
                if let Some(mode) = node.get("mode").and_then(Value::as_i64) {
                    // 3.4.0 allows setuid/setgid/sticky; Ignition refuses
                    // anything past 07777 in every version.
                    if !(0..=0o7777).contains(&mode) {
                        return Err(format!(
                            "{} {mode} is not a file mode; give it in decimal (0644 is 420)",
                            json_path(&format!("{at}/mode"))
                        ));
                    }
                }
                if let Some(r) = node.get("contents") {
                    self.resource(r, &format!("{at}/contents"))?;
                }
                for (j, r) in items(node, "/append") {
                    self.resource(r, &format!("{at}/append/{j}"))?;
                }
            }
        }
        let mut unit_names = BTreeSet::new();
        let mut unit_paths = BTreeSet::new();
        for (i, unit) in items(v, "/systemd/units") {
            let at = format!("/systemd/units/{i}");
            let Some(name) = unit.get("name").and_then(Value::as_str) else {
                continue;
            };
            if !UNIT_SUFFIXES.iter().any(|s| name.ends_with(s)) {
                return Err(format!(
                    "{} {name:?} is not a systemd unit name; end it in .service, .timer, … (systemd.unit(5))",
                    json_path(&format!("{at}/name"))
                ));
            }
            if !unit_names.insert(name) {
                return Err(format!(
                    "{} {name:?} is listed twice; put its drop-ins in one entry",
                    json_path(&format!("{at}/name"))
                ));
            }
            if has_text(unit, "contents") {
                unit_paths.insert(format!("/etc/systemd/system/{name}"));
            }
            let mut dropin_names = BTreeSet::new();
            for (j, d) in items(unit, "/dropins") {
                let Some(dname) = d.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let dat = json_path(&format!("{at}/dropins/{j}/name"));
                if !dname.ends_with(".conf") {
                    return Err(format!(
                        "{dat} {dname:?} is not a drop-in name; end it in .conf"
                    ));
                }
                if !dropin_names.insert(dname) {
                    return Err(format!("{dat} {dname:?} is listed twice; keep one"));
                }
                if has_text(d, "contents") {
                    unit_paths.insert(format!("/etc/systemd/system/{name}.d/{dname}"));
                }
            }
        }
        // A unit (or drop-in) with contents and a storage node for the same
        // file: Ignition refuses the config rather than pick one (from spec
        // 3.4.0; Debian's Ignition 2.14 predates the rule).
        if self.minor < 4 {
            return Ok(());
        }
        for kind in ["files", "directories", "links"] {
            for (i, node) in items(v, &format!("/storage/{kind}")) {
                if let Some(path) = node.get("path").and_then(Value::as_str)
                    && unit_paths.contains(path)
                {
                    return Err(format!(
                        "{} {path:?} is also written by systemd.units; write it one way",
                        json_path(&format!("/storage/{kind}/{i}/path"))
                    ));
                }
            }
        }
        Ok(())
    }

    /// A resource: source URL, compression, verification hash.
    fn resource(&self, r: &Value, at: &str) -> Check {
        if let Some(source) = r.get("source").and_then(Value::as_str)
            && !source.is_empty()
        {
            check_url(source, self.minor).map_err(|e| {
                format!("{} {source:.60?}: {e}", json_path(&format!("{at}/source")))
            })?;
        }
        if let Some(c) = r.get("compression").and_then(Value::as_str)
            && !c.is_empty()
            && c != "gzip"
        {
            return Err(format!(
                "{} {c:?} is not a compression Ignition knows; use \"gzip\" or leave it out",
                json_path(&format!("{at}/compression"))
            ));
        }
        if let Some(hash) = r.pointer("/verification/hash").and_then(Value::as_str) {
            // sha256 from spec 3.1.0.
            let ok = match hash.split_once('-') {
                Some(("sha512", hex)) => is_hex(hex, 128),
                Some(("sha256", hex)) if self.minor >= 1 => is_hex(hex, 64),
                _ => false,
            };
            if !ok {
                let sha256 = if self.minor >= 1 {
                    " or sha256-<64 hex>"
                } else {
                    ""
                };
                return Err(format!(
                    "{} {hash:?} is not sha512-<128 hex>{sha256}",
                    json_path(&format!("{at}/verification/hash"))
                ));
            }
        }
        Ok(())
    }
}

fn has_text(v: &Value, key: &str) -> bool {
    v.get(key)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The URL schemes Ignition 3.`minor` fetches from, and a well-formed
/// `data:` URL (RFC 2397, as Ignition's data-URL reader lexes it).
fn check_url(source: &str, minor: u8) -> Check {
    let mut schemes = vec!["http", "https", "tftp", "s3", "data"];
    if minor >= 2 {
        schemes.push("gs");
    }
    if minor >= 4 {
        schemes.extend(["arn", "oem"]);
    }
    let use_one = || format!("use one of {}:", schemes.join(":, "));
    let Some((scheme, rest)) = source.split_once(':') else {
        return Err(format!("not a URL; {}", use_one()));
    };
    let scheme = scheme.to_ascii_lowercase();
    if !schemes.contains(&scheme.as_str()) {
        return Err(format!(
            "Ignition 3.{minor} cannot fetch {scheme}: URLs; {}",
            use_one()
        ));
    }
    if scheme != "data" {
        return Ok(());
    }
    if !source.starts_with("data:") {
        return Err("write the data: prefix in lowercase".into());
    }
    check_data_url(rest)
}

/// RFC 2045 token characters (media types and their parameters).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?=".contains(&b))
}

fn check_data_url(rest: &str) -> Check {
    let Some((meta, data)) = rest.split_once(',') else {
        return Err("a data: URL needs a ',' before its data (data:,text)".into());
    };
    let (meta, base64) = match meta.strip_suffix(";base64") {
        Some(m) => (m, true),
        None => (meta, false),
    };
    let mut parts = meta.split(';');
    let media_type = parts.next().unwrap_or("");
    if !media_type.is_empty() {
        let ok = media_type
            .split_once('/')
            .is_some_and(|(t, sub)| is_token(t) && is_token(sub));
        if !ok {
            return Err(format!(
                "media type {media_type:?} is not type/subtype; use data:, or data:text/plain,"
            ));
        }
    }
    for p in parts {
        if !p.split_once('=').is_some_and(|(a, _)| is_token(a)) {
            return Err(format!(
                "data: URL parameter {p:?} is not attribute=value (only ;base64 may stand alone, last)"
            ));
        }
    }
    if base64 {
        if let Some(c) = data
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || "+/=".contains(*c)))
        {
            return Err(format!(
                "{c:?} in base64 data; write the data unescaped, unwrapped"
            ));
        }
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("its base64 data does not decode ({e})"))?;
        return Ok(());
    }
    // RFC 2396 URI characters; anything else is %-escaped.
    let b = data.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if !b
                    .get(i + 1..i + 3)
                    .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
                {
                    return Err("a %-escape that is not two hex digits; write % as %25".into());
                }
                i += 3;
            }
            c if c.is_ascii_alphanumeric() || b"-_.!~*'();/?:@&=+$,".contains(&c) => i += 1,
            _ => {
                let c = data[i..].chars().next().unwrap_or('?');
                return Err(format!("{c:?} in the data must be %-escaped"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(config: &str) -> String {
        check_ignition(config.as_bytes(), "c.ign")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn versions_coreos_cannot_read_are_refused() {
        check_ignition(br#"{"ignition":{"version":"3.4.0"}}"#, "c.ign").unwrap();
        check_ignition(br#"{"ignition":{"version":"3.0.0"},"storage":{}}"#, "c.ign").unwrap();
        for (bad, needle) in [
            ("not json", "c.ign is not JSON"),
            ("[1]", "not an object"),
            ("{}", "no ignition.version"),
            (r#"{"ignition":{"version":"9.9.9"}}"#, "\"9.9.9\""),
            (r#"{"ignition":{"version":"2.2.0"}}"#, "spec 2.x"),
            (r#"{"ignition":{"version":3}}"#, "no ignition.version"),
        ] {
            let e = err(bad);
            assert!(e.contains(needle) && e.contains("c.ign"), "{e}");
        }
    }

    #[test]
    fn types_come_from_the_spec_version() {
        let e = err(
            r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/x","mode":"420"}]}}"#,
        );
        assert!(
            e.contains("c.ign is not valid Ignition 3.4.0") && e.contains("configuration-v3_4"),
            "{e}"
        );
        let e = err(r#"{"ignition":{"version":"3.2.0"},"storage":{"files":[{"mode":420}]}}"#);
        assert!(e.contains("missing field `path`"), "{e}");
        // kernelArguments is 3.3.0+: an unknown key before, Ignition ignores it.
        let ka = |v: &str| {
            check_ignition(
                format!(r#"{{"ignition":{{"version":"{v}"}},"kernelArguments":{{"shouldExist":["a"]}}}}"#)
                    .as_bytes(),
                "c.ign",
            )
            .unwrap()
            .unknown_keys
        };
        assert_eq!(ka("3.2.0"), ["$.kernelArguments"]);
        assert!(ka("3.3.0").is_empty());
        // A repeated key: the last counts, as in Go's JSON reader.
        let c = check_ignition(
            br#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"x","path":"/x"}]}}"#,
            "c.ign",
        )
        .unwrap();
        assert!(c.repeats_keys);
        let e = err(
            r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/x","path":"/x","mode":"1"}]}}"#,
        );
        assert!(e.contains("invalid type") && !e.contains("line"), "{e}");
    }

    /// A type error names the field as a JSON path, wherever it is.
    #[test]
    fn type_errors_name_the_field() {
        let e = err(
            r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/a"},{"path":"/etc/x","mode":"0644"}]}}"#,
        );
        assert!(
            e.contains(r#"$.storage.files.1.mode: invalid type: string "0644", expected i"#)
                && e.contains("0644 is 420")
                && !e.contains("line"),
            "{e}"
        );
        let e = err(
            "{\"ignition\":{\"version\":\"3.4.0\"},\n \"systemd\": {\"units\": [{\"name\": \"a\\\"b.service\", \"enabled\": \"yes\"}]}}",
        );
        assert!(
            e.contains("$.systemd.units.0.enabled: invalid type: string"),
            "{e}"
        );
        // A missing field: the object that lacks it.
        let e = err(r#"{"ignition":{"version":"3.2.0"},"storage":{"files":[{"mode":420}]}}"#);
        assert!(e.contains("$.storage.files.0: missing field `path`"), "{e}");
        // After a repeated key, in the text as re-written.
        let e = err(
            r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/x","path":"/x","mode":"1"}]}}"#,
        );
        assert!(e.contains("$.storage.files.0.mode: invalid type"), "{e}");
        assert_eq!(path_at(b"{}", 1, 2), None);
        assert_eq!(
            path_at(b"{\"a\": [1, {\"b\": \"\\\"}\"", 1, 99),
            Some("$.a.1.b".into())
        );
    }

    #[test]
    fn rules_past_the_types() {
        let files = |f: &str| {
            format!(r#"{{"ignition":{{"version":"3.4.0"}},"storage":{{"files":[{f}]}}}}"#)
        };
        for (bad, needle) in [
            (
                files(r#"{"path":"etc/x"}"#),
                "$.storage.files.0.path \"etc/x\" is not absolute",
            ),
            (files(r#"{"path":"/x"},{"path":"/x"}"#), "written twice"),
            (files(r#"{"path":"/x","mode":99999}"#), "not a file mode"),
            (
                files(r#"{"path":"/x","contents":{"source":"ftp://h/x"}}"#),
                "cannot fetch ftp:",
            ),
            (
                files(r#"{"path":"/x","contents":{"source":"oem:///x"}}"#)
                    .replace("3.4.0", "3.3.0"),
                "cannot fetch oem:",
            ),
            (
                files(r#"{"path":"/x","contents":{"source":"data:x"}}"#),
                "needs a ','",
            ),
            (
                files(r#"{"path":"/x","contents":{"source":"data:x,y"}}"#),
                "not type/subtype",
            ),
            (
                files(r#"{"path":"/x","contents":{"source":"data:,a b"}}"#),
                "' ' in the data",
            ),
            (files(r#"{"path":"/x/"}"#), "not a simplified path"),
            (
                files(r#"{"path":"/x","contents":{"source":"data:;base64,aGk"}}"#),
                "base64",
            ),
            (
                files(r#"{"path":"/x","contents":{"source":"data:,%zz"}}"#),
                "%-escape",
            ),
            (
                files(r#"{"path":"/x","contents":{"compression":"xz"}}"#),
                "\"xz\"",
            ),
            (
                files(r#"{"path":"/x","contents":{"verification":{"hash":"md5-0"}}}"#),
                "sha512",
            ),
        ] {
            let e = err(&bad);
            assert!(e.contains(needle) && e.contains("c.ign"), "{bad}: {e}");
        }
        let units = |u: &str| {
            format!(r#"{{"ignition":{{"version":"3.4.0"}},"systemd":{{"units":[{u}]}}}}"#)
        };
        for (bad, needle) in [
            (units(r#"{"name":"k"}"#), "not a systemd unit name"),
            (
                units(r#"{"name":"k.service"},{"name":"k.service"}"#),
                "listed twice",
            ),
            (
                units(r#"{"name":"k.service","dropins":[{"name":"x"}]}"#),
                "end it in .conf",
            ),
        ] {
            let e = err(&bad);
            assert!(e.contains(needle), "{bad}: {e}");
        }
        let e = err(
            r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/systemd/system/k.service.d/a.conf"}]},"systemd":{"units":[{"name":"k.service","dropins":[{"name":"a.conf","contents":"x"}]}]}}"#,
        );
        assert!(e.contains("also written by systemd.units"), "{e}");
        // What our own renders use passes.
        check_ignition(
            files(r#"{"path":"/x","mode":420,"overwrite":true,"contents":{"source":"data:;base64,aGk=","compression":""}},{"path":"/y","contents":{"source":"data:text/plain;charset=utf-8,a%20b"}}"#)
                .as_bytes(),
            "c.ign",
        )
        .unwrap();
    }
}
