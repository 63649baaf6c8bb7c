//! Ignition's `Validate()` (coreos/ignition v2, `config/v3_x/types`, as the
//! MCO vendors it) for the parts of a MachineConfig's `spec.config` that
//! GitOps repositories use: files, directories, links, systemd units and
//! their drop-ins, users and groups, kernel arguments. The MCO runs it on
//! every MachineConfig of a pool (`ValidateMachineConfig`) and renders
//! nothing for the pool when one fails: the taint plan would show never
//! reaches a node. What plan cannot judge as Ignition does (disks,
//! filesystems, RAID, LUKS, proxies, CAs, remote sources, hashes) is
//! refused, saying so.
//!
//! Runs after [`super::ignition_keys::check`]: every value has its Go type.

use std::collections::BTreeSet;

use anyhow::{Result, bail};
use serde_json::Value;

use super::unpack::clean_path;

/// What follows an Ignition refusal in every message.
const REFUSED: &str = "so the MCO refuses the MachineConfig and renders no config for its pool \
                       (it goes Degraded: its nodes, and new ones, keep the config before)";

/// Why plan refuses what it cannot judge.
const CANNOT_JUDGE: &str = "plan cannot judge it as Ignition and the MCO do, and the MCO may \
                            refuse the pool's render with it (then no node gets what plan \
                            shows)";

/// Refuse what Ignition's validation of `config` (of Ignition `version`)
/// refuses, or what plan cannot judge, naming its JSON path.
pub fn check(config: &Value, version: &str) -> Result<()> {
    cannot_judge(config)?;
    if let Some(r) = config.pointer("/ignition/config/replace") {
        resource(r, "$.ignition.config.replace", version)?;
    }
    let storage = |list: &str| {
        config
            .pointer(&format!("/storage/{list}"))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    };
    let (files, dirs, links) = (storage("files"), storage("directories"), storage("links"));
    let units = config
        .pointer("/systemd/units")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let unit_paths = unit_paths(units);
    for (list, entries) in [("files", files), ("directories", dirs), ("links", links)] {
        for (i, e) in entries.iter().enumerate() {
            let at = format!("$.storage.{list}.{i}");
            node(e, &at)?;
            let path = str_at(e, "path");
            if unit_paths.contains(path) {
                refuse(
                    &format!("{at}.path"),
                    "path conflicts with systemd unit or dropin",
                    "write the unit or drop-in through systemd.units, or the file, not both",
                )?;
            }
            for (j, l) in links.iter().enumerate() {
                let link = str_at(l, "path");
                if (list != "links" || j != i) && path.starts_with(&format!("{link}/")) {
                    let what = &list[..list.len() - 1];
                    let what = if what == "directorie" {
                        "directory"
                    } else {
                        what
                    };
                    refuse(
                        &at,
                        &format!("{what} path includes link in config"),
                        "write it at the link's target instead",
                    )?;
                }
            }
        }
    }
    for (i, f) in files.iter().enumerate() {
        file(f, &format!("$.storage.files.{i}"), version)?;
    }
    for (i, d) in dirs.iter().enumerate() {
        mode(d, &format!("$.storage.directories.{i}"))?;
    }
    for (i, l) in links.iter().enumerate() {
        link(l, &format!("$.storage.links.{i}"), dirs)?;
    }
    for (i, u) in units.iter().enumerate() {
        unit(u, &format!("$.systemd.units.{i}"))?;
    }
    passwd(config)?;
    let kargs = ["shouldExist", "shouldNotExist"].map(|k| {
        config
            .pointer(&format!("/kernelArguments/{k}"))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    });
    let mut seen = BTreeSet::new();
    for (k, list) in ["shouldExist", "shouldNotExist"].iter().zip(kargs) {
        once(&mut seen, list, &format!("$.kernelArguments.{k}"))?;
    }
    Ok(())
}

/// An Ignition error at JSON path `at` (`why` in Ignition's words).
fn refuse(at: &str, why: &str, fix: &str) -> Result<()> {
    bail!("spec.config {at}: Ignition refuses it ({why}), {REFUSED}; {fix}")
}

/// The string at `key` of `v` (`""` when null or absent, as Go reads it).
fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Set and not empty (Ignition's `NotEmpty`).
fn set<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn cannot_judge(config: &Value) -> Result<()> {
    fn set(v: &Value) -> bool {
        match v {
            Value::Null => false,
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => o.values().any(set),
            _ => true,
        }
    }
    let non_empty = |p: &str| config.pointer(p).is_some_and(set);
    for (p, at) in [
        ("/storage/disks", "$.storage.disks"),
        ("/storage/filesystems", "$.storage.filesystems"),
        ("/storage/raid", "$.storage.raid"),
        ("/storage/luks", "$.storage.luks"),
        ("/ignition/proxy", "$.ignition.proxy"),
        (
            "/ignition/security/tls/certificateAuthorities",
            "$.ignition.security.tls.certificateAuthorities",
        ),
    ] {
        if non_empty(p) {
            bail!(
                "spec.config {at}: {CANNOT_JUDGE}; review it against the MCO (or keep it in a \
                 MachineConfig of a pool plan does not judge), or remove it"
            );
        }
    }
    Ok(())
}

/// A storage node's path and owner (`Node.Validate`, `NodeUser`,
/// `NodeGroup`).
fn node(e: &Value, at: &str) -> Result<()> {
    let path = str_at(e, "path");
    let why = if path.is_empty() {
        "path not specified"
    } else if !path.starts_with('/') {
        "path not absolute"
    } else if clean_path(path) != path {
        "path is not fully simplified"
    } else {
        ""
    };
    if !why.is_empty() {
        let clean = clean_path(path);
        let fix = if clean == "/" {
            "give the absolute path, as /etc/NAME".to_string()
        } else {
            format!("write it as {clean}")
        };
        refuse(&format!("{at}.path"), why, &fix)?;
    }
    for owner in ["user", "group"] {
        if let Some(o) = e.get(owner)
            && o.get("id").is_some_and(|id| !id.is_null())
            && set(o, "name").is_some()
        {
            refuse(
                &format!("{at}.{owner}"),
                "cannot set both id and name",
                "give the id or the name",
            )?;
        }
    }
    Ok(())
}

/// `validateMode`: 0 to 07777.
fn mode(e: &Value, at: &str) -> Result<()> {
    if let Some(m) = e.get("mode").and_then(Value::as_i64)
        && !(0..=0o7777).contains(&m)
    {
        refuse(
            &format!("{at}.mode"),
            "illegal file mode",
            "give a mode of 0 to 0777 (420 or 0644 for rw-r--r--)",
        )?;
    }
    Ok(())
}

fn file(f: &Value, at: &str, version: &str) -> Result<()> {
    mode(f, at)?;
    let contents = f.get("contents").unwrap_or(&Value::Null);
    let source = contents.get("source").filter(|s| !s.is_null());
    // A file without a source whose overwrite is unset: see
    // `storage::refuse_sourceless_files` (a later MachineConfig may give
    // the source).
    if f.get("overwrite").and_then(Value::as_bool) == Some(true) && source.is_none() {
        refuse(
            &format!("{at}.overwrite"),
            "overwrite must be false if source is unspecified",
            "give contents.source (data:, for an empty file)",
        )?;
    }
    if !contents.is_null() {
        resource(contents, &format!("{at}.contents"), version)?;
    }
    let appends = f.get("append").and_then(Value::as_array);
    for (j, a) in appends.into_iter().flatten().enumerate() {
        resource(a, &format!("{at}.append.{j}"), version)?;
    }
    Ok(())
}

/// `Resource.Validate` (a file's contents or append entry, a replaced
/// config) and `Verification.Validate`.
fn resource(r: &Value, at: &str, version: &str) -> Result<()> {
    if let Some(c) = r.get("compression").and_then(Value::as_str)
        && !["", "gzip"].contains(&c)
    {
        refuse(
            &format!("{at}.compression"),
            "invalid compression method",
            "give gzip, or leave compression out",
        )?;
    }
    let source = r.get("source").and_then(Value::as_str);
    if let Some(hash) = r.pointer("/verification/hash").and_then(Value::as_str) {
        let at = format!("{at}.verification.hash");
        if source.is_none() {
            refuse(
                &at,
                "source must be specified if verification is specified",
                "give the source, or leave verification out",
            )?;
        }
        let size = match hash.split_once('-') {
            None => return refuse(&at, "malformed hash specifier", "write sha512-<hex sum>"),
            Some(("sha512", sum)) => (sum.len(), 128),
            Some(("sha256", sum)) if version != "3.0.0" => (sum.len(), 64),
            Some(_) => {
                return refuse(
                    &at,
                    "unrecognized hash function",
                    "use sha512 (or sha256 from spec 3.1.0)",
                );
            }
        };
        if size.0 != size.1 {
            refuse(&at, "incorrect size for hash sum", "give the whole hex sum")?;
        }
        bail!(
            "spec.config {at}: {CANNOT_JUDGE} (Ignition checks the hash against the contents \
             at a new node's first boot, and a wrong one fails the boot); leave verification \
             out, a data: URL carries its contents"
        );
    }
    if let Some(s) = source.filter(|s| !s.is_empty()) {
        source_url(s, &format!("{at}.source"))?;
    } else if source.is_some() {
        bail!(
            "spec.config {at}.source: an empty source: {CANNOT_JUDGE} (the machine-config \
             daemon reads no data from it); give data:, for an empty file"
        );
    }
    let headers = r.get("httpHeaders").and_then(Value::as_array);
    if headers.is_some_and(|h| !h.is_empty()) {
        refuse(
            &format!("{at}.httpHeaders"),
            "cannot use HTTP headers with this source scheme",
            "leave httpHeaders out",
        )?;
    }
    Ok(())
}

/// `validateURL`: only data URLs are judged (as Ignition decodes them);
/// another scheme Ignition reads is a remote source plan cannot read.
fn source_url(s: &str, at: &str) -> Result<()> {
    // Go's url.getScheme.
    let mut scheme = None;
    for (i, c) in s.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i > 0 => {
                scheme = Some(s[..i].to_ascii_lowercase());
                break;
            }
            _ => break,
        }
    }
    let fix = "give the contents as a data: URL (data:,<%-encoded text> or data:;base64,<base64>)";
    match scheme.as_deref() {
        Some("data") => super::unpack::data_url_bytes(s, None)
            .map(drop)
            .map_err(|e| anyhow::anyhow!("spec.config {at}: {e:#}")),
        Some("http" | "https" | "tftp" | "gs" | "s3" | "arn") => bail!(
            "spec.config {at}: a remote source: {CANNOT_JUDGE} (Ignition fetches it at a new \
             node's first boot, the machine-config daemon on running nodes writes only data: \
             URLs); {fix}"
        ),
        _ => refuse(at, "invalid url scheme", fix),
    }
}

fn link(l: &Value, at: &str, dirs: &[Value]) -> Result<()> {
    let Some(target) = set(l, "target") else {
        return refuse(
            &format!("{at}.target"),
            "link target is required",
            "give the target",
        );
    };
    if l.get("hard").and_then(Value::as_bool) == Some(true) {
        let target = if target.starts_with('/') {
            clean_path(target)
        } else {
            clean_path(&format!("{}/{target}", str_at(l, "path")))
        };
        if dirs.iter().any(|d| str_at(d, "path") == target) {
            refuse(
                at,
                "hard link target is a directory",
                "link a file, or make it a symbolic link",
            )?;
        }
    }
    Ok(())
}

/// The paths units and drop-ins with contents write (`Config.Validate`).
fn unit_paths(units: &[Value]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for u in units {
        let name = str_at(u, "name");
        if set(u, "contents").is_some() {
            out.insert(format!("/etc/systemd/system/{name}"));
        }
        let dropins = u.get("dropins").and_then(Value::as_array);
        for d in dropins.into_iter().flatten() {
            if set(d, "contents").is_some() {
                out.insert(format!(
                    "/etc/systemd/system/{name}.d/{}",
                    str_at(d, "name")
                ));
            }
        }
    }
    out
}

/// Go's `path.Ext`.
fn ext(name: &str) -> &str {
    let base = &name[name.rfind('/').map_or(0, |i| i + 1)..];
    base.rfind('.').map_or("", |i| &base[i..])
}

/// `Unit.Validate`, `Dropin.Validate` (duplicates: `once_each` in applied).
fn unit(u: &Value, at: &str) -> Result<()> {
    const TYPES: [&str; 12] = [
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
    if !TYPES.contains(&ext(str_at(u, "name"))) {
        refuse(
            &format!("{at}.name"),
            "invalid systemd unit extension",
            "name the unit with its type (kubelet.service)",
        )?;
    }
    unit_contents(u, at)?;
    let dropins = u.get("dropins").and_then(Value::as_array);
    for (j, d) in dropins.into_iter().flatten().enumerate() {
        let at = format!("{at}.dropins.{j}");
        unit_contents(d, &at)?;
        if ext(str_at(d, "name")) != ".conf" {
            refuse(
                &format!("{at}.name"),
                "invalid systemd drop-in extension",
                "name the drop-in NAME.conf",
            )?;
        }
    }
    Ok(())
}

fn unit_contents(u: &Value, at: &str) -> Result<()> {
    let Some(text) = u.get("contents").and_then(Value::as_str) else {
        return Ok(());
    };
    let at = format!("{at}.contents");
    // go-systemd refuses a line of 2048 bytes or more where its reader's
    // buffer happens to hold them: which ones is not judged here.
    let mut run = 0;
    for b in text.bytes() {
        run = if b == b'\n' || b == b'\r' { 0 } else { run + 1 };
        if run >= 2048 {
            bail!(
                "spec.config {at}: a line of 2048 bytes or more: {CANNOT_JUDGE} (Ignition's unit \
                 parser refuses some: \"line too long\"); split it with `\\` continuations"
            );
        }
    }
    if let Err(why) = parse_unit(text) {
        refuse(
            &at,
            &format!("invalid unit content: {why}"),
            "write the unit as systemd reads it: [Section] lines, then Key=value lines",
        )?;
    }
    Ok(())
}

/// go-systemd's `unit.Deserialize` (what Ignition parses unit and drop-in
/// contents with): the error it returns, if any.
fn parse_unit(text: &str) -> std::result::Result<(), &'static str> {
    let mut chars = text.chars().peekable();
    // The rest of the line, consumed with its end.
    // (Go trims a `\r` only before the end of the text, not before `\n`.)
    let to_eol = |chars: &mut std::iter::Peekable<std::str::Chars>| {
        let mut line = String::new();
        for c in chars.by_ref() {
            if c == '\n' {
                return line;
            }
            line.push(c);
        }
        if line.ends_with('\r') {
            line.pop();
        }
        line
    };
    let ignore_line = |chars: &mut std::iter::Peekable<std::str::Chars>| loop {
        let line = to_eol(chars);
        let line = line.strip_suffix(' ').unwrap_or(&line);
        if !line.ends_with('\\') || chars.peek().is_none() {
            break;
        }
    };
    // Before the first section: anything but `[` and comment lines.
    let mut in_section = false;
    loop {
        let Some(c) = chars.next() else {
            return Ok(());
        };
        if c == '[' {
            // The section name runs to the next `]`, over lines.
            if !chars.by_ref().any(|c| c == ']') {
                return Err("unable to find end of section");
            }
            if !to_eol(&mut chars).trim().is_empty() {
                return Err("found garbage after section name");
            }
            in_section = true;
        } else if c == '#' || c == ';' {
            ignore_line(&mut chars);
        } else if in_section && !c.is_whitespace() {
            // An option: its name runs to `=` on this line.
            let mut c = c;
            loop {
                match c {
                    '\n' | '\r' => {
                        return Err("unexpected newline encountered while parsing option name");
                    }
                    '=' => break,
                    _ => {}
                }
                c = chars.next().ok_or("EOF")?;
            }
            loop {
                let line = to_eol(&mut chars);
                if line.trim().is_empty() || !line.ends_with('\\') {
                    break;
                }
            }
        }
    }
}

/// Users, groups, their groups and keys: once each (`ValidateDups`).
fn passwd(config: &Value) -> Result<()> {
    for list in ["users", "groups"] {
        let entries = config.pointer(&format!("/passwd/{list}"));
        let entries = entries
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let names: Vec<Value> = entries
            .iter()
            .map(|e| Value::from(str_at(e, "name")))
            .collect();
        once(&mut BTreeSet::new(), &names, &format!("$.passwd.{list}"))?;
        for (i, e) in entries.iter().enumerate() {
            for key in ["groups", "sshAuthorizedKeys"] {
                if let Some(items) = e.get(key).and_then(Value::as_array) {
                    let at = format!("$.passwd.{list}.{i}.{key}");
                    once(&mut BTreeSet::new(), items, &at)?;
                }
            }
        }
    }
    Ok(())
}

/// Each string of `items` (null is `""`) once in `seen`.
fn once(seen: &mut BTreeSet<String>, items: &[Value], at: &str) -> Result<()> {
    for (i, v) in items.iter().enumerate() {
        let s = v.as_str().unwrap_or("");
        if !seen.insert(s.to_string()) {
            refuse(
                &format!("{at}.{i}"),
                "duplicate entry defined",
                &format!("keep one {s:?}"),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(config: Value) -> String {
        format!("{:#}", check(&config, "3.4.0").unwrap_err())
    }

    fn file(extra: Value) -> Value {
        let mut f = json!({"path": "/etc/a", "contents": {"source": "data:,x"}});
        for (k, v) in extra.as_object().unwrap() {
            f[k] = v.clone();
        }
        json!({"storage": {"files": [f]}})
    }

    /// Review 10 (r10b F3): what Ignition's `Validate()` refuses, named by
    /// its JSON path and Ignition's words; what plan cannot judge, said so.
    #[test]
    fn what_ignition_refuses_is_refused_by_its_path() {
        let hash =
            |h: &str| file(json!({"contents": {"source": "data:,x", "verification": {"hash": h}}}));
        for (config, says) in [
            (
                hash("sha512-zz"),
                "$.storage.files.0.contents.verification.hash: Ignition refuses it (incorrect size for hash sum)",
            ),
            (hash("md5-00"), "(unrecognized hash function)"),
            (hash("sha512"), "(malformed hash specifier)"),
            (
                hash(&format!("sha512-{}", "0".repeat(128))),
                "plan cannot judge it",
            ),
            (
                file(json!({"contents": {"source": "ftp://h/a"}})),
                "source: Ignition refuses it (invalid url scheme)",
            ),
            (
                file(json!({"contents": {"source": "https://h/a"}})),
                "a remote source: plan cannot judge it",
            ),
            (file(json!({"contents": {"source": ""}})), "an empty source"),
            (
                file(json!({"contents": {"source": "data:,x", "compression": "xz"}})),
                "(invalid compression method)",
            ),
            (
                file(json!({"overwrite": true, "contents": {}})),
                "$.storage.files.0.overwrite: Ignition refuses it (overwrite must be false",
            ),
            (
                file(json!({"path": "/etc/../a"})),
                "(path is not fully simplified), so the MCO refuses the MachineConfig and renders no config for its pool (it goes Degraded: its nodes, and new ones, keep the config before); write it as /a",
            ),
            (file(json!({"path": "a"})), "(path not absolute)"),
            (
                file(json!({"group": {"id": 0, "name": "root"}})),
                "$.storage.files.0.group: Ignition refuses it (cannot set both id and name)",
            ),
            (file(json!({"mode": -1})), "(illegal file mode)"),
            (
                json!({"storage": {"disks": [{"device": "/dev/sdb"}]}}),
                "$.storage.disks: plan cannot judge it",
            ),
            (
                json!({"ignition": {"proxy": {"httpProxy": "http://p"}}}),
                "$.ignition.proxy: plan cannot judge",
            ),
            (
                json!({"storage": {"links": [{"path": "/l", "target": ""}]}}),
                "(link target is required)",
            ),
            (
                json!({"systemd": {"units": [{"name": "x.serv"}]}}),
                "(invalid systemd unit extension)",
            ),
            (
                json!({"systemd": {"units": [{"name": "x.service", "contents": "[Unit"}]}}),
                "$.systemd.units.0.contents: Ignition refuses it (invalid unit content: unable to find end of section)",
            ),
            (
                json!({"systemd": {"units": [{"name": "x.service", "contents": format!("[Unit]\nA={}", "b".repeat(2048))}]}}),
                "a line of 2048 bytes or more",
            ),
            (
                json!({"passwd": {"users": [{"name": "core"}, {"name": "core"}]}}),
                "$.passwd.users.1: Ignition refuses it (duplicate entry defined)",
            ),
            (
                json!({"passwd": {"groups": [{"name": "g"}, {"name": "g"}]}}),
                "$.passwd.groups.1",
            ),
            (
                json!({"kernelArguments": {"shouldExist": ["a"], "shouldNotExist": ["a"]}}),
                "$.kernelArguments.shouldNotExist.0",
            ),
        ] {
            let e = refused(config.clone());
            assert!(e.contains(says), "{config}: {e}");
        }
        // sha256 from spec 3.1.0 on.
        let sha256 = hash(&format!("sha256-{}", "0".repeat(64)));
        assert!(refused(sha256.clone()).contains("plan cannot judge"));
        let e = format!("{:#}", check(&sha256, "3.0.0").unwrap_err());
        assert!(e.contains("unrecognized hash function"), "{e}");
    }

    #[test]
    fn valid_configs_pass() {
        for config in [
            file(json!({"overwrite": false, "mode": 420, "user": {"name": "core"}})),
            json!({"storage": {"files": [{"path": "/etc/b", "overwrite": false}],
                "directories": [{"path": "/etc/d", "mode": 0o1777}],
                "links": [{"path": "/etc/l", "target": "../d", "hard": false}],
                "disks": [], "luks": null},
                "ignition": {"version": "3.4.0", "proxy": {"noProxy": []},
                    "config": {"replace": {"source": null}}},
                "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": ["a", "b"]}]},
                "kernelArguments": {"shouldExist": ["a"], "shouldNotExist": ["b"]},
                "systemd": {"units": [{"name": "x.service", "contents": "[Unit]\r\nA=b\r\n",
                    "dropins": [{"name": "a.conf", "contents": ""}]}]}}),
        ] {
            check(&config, "3.4.0").unwrap_or_else(|e| panic!("{config}: {e:#}"));
        }
    }

    /// go-systemd's lexer (the differential against the MCO oracle is
    /// tests/pr_machineconfigs.rs).
    #[test]
    fn unit_text_as_go_systemd_lexes_it() {
        for (text, got) in [
            ("", Ok(())),
            ("x[y]\nA=b\n", Ok(())),
            ("[Un\nit]\n", Ok(())),
            ("[Unit] x\n", Err("found garbage after section name")),
            (
                "[Unit]\nA\n",
                Err("unexpected newline encountered while parsing option name"),
            ),
            ("[Unit]\nA", Err("EOF")),
            ("[Unit]\n# c \\ \nA\n", Ok(())),
            (
                "[Unit]\nA=b\\\r\nc\n",
                Err("unexpected newline encountered while parsing option name"),
            ),
        ] {
            assert_eq!(parse_unit(text), got, "{text:?}");
        }
        assert_eq!(ext("a.b/c"), "");
        assert_eq!(ext("x.service"), ".service");
    }
}
