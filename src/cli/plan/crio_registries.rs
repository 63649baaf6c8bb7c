//! Whether crio starts with a registries.conf (review 30 r30a F2): crio's
//! start reads the file with containers/image's `sysregistriesv2` and exits
//! on any error it finds ("invalid registries"); a reload only logs it, so
//! a bad file is found at the node's next boot, when kubelet
//! (`Requires=crio.service`) never starts. The rules of that reader,
//! re-expressed as an allow-list: a key plan does not know, or a value
//! outside the grammar plan checks, is refused as one plan cannot judge.

/// The keys of the file's top level, of a `[[registry]]` and of a
/// `[[registry.mirror]]` that plan judges (sysregistries v2; a v1
/// `[registries.*]` table is refused as unknown).
pub(super) const TOP: [&str; 6] = [
    "registry",
    "unqualified-search-registries",
    "credential-helpers",
    "short-name-mode",
    "additional-layer-store-auth-helper",
    "aliases",
];
const REGISTRY: [&str; 7] = [
    "prefix",
    "location",
    "insecure",
    "blocked",
    "mirror-by-digest-only",
    "pull-from-mirror",
    "mirror",
];
const MIRROR: [&str; 3] = ["location", "insecure", "pull-from-mirror"];

/// The longest image name the reference grammar takes.
const NAME_MAX: usize = 255;

/// Why crio refuses the registries.conf `table` at its start (or why plan
/// cannot judge it), none if it starts. `table` has the types the MCO's
/// reader takes (`registries::table_of`).
pub fn refused(table: &toml::Table) -> Option<String> {
    let unknown = |keys: &toml::Table, known: &[&str], at: &str| {
        (keys.keys().find(|k| !known.contains(&k.as_str())))
            .map(|k| format!("key {k:?}{at} is not one plan knows crio's reader to take"))
    };
    if let Some(why) = unknown(table, &TOP, "") {
        return Some(why);
    }
    let text =
        |t: &toml::Table, k: &str| t.get(k).and_then(toml::Value::as_str).map(str::to_string);
    let flag = |t: &toml::Table, k: &str| t.get(k).and_then(toml::Value::as_bool).unwrap_or(false);
    let tables = |v: Option<&toml::Value>| -> Option<Vec<toml::Table>> {
        let Some(v) = v else { return Some(Vec::new()) };
        (v.as_array()?.iter())
            .map(|t| t.as_table().cloned())
            .collect()
    };
    let Some(registries) = tables(table.get("registry")) else {
        return Some("registry is not an array of tables".into());
    };
    // (key: location, else prefix; insecure; blocked), in file order.
    let mut seen: Vec<(String, bool, bool)> = Vec::new();
    for r in &registries {
        if let Some(why) = unknown(r, &REGISTRY, " of a [[registry]]") {
            return Some(why);
        }
        let loc = match location(&text(r, "location").unwrap_or_default()) {
            Ok(l) => l,
            Err(why) => return Some(why),
        };
        let prefix = match text(r, "prefix").filter(|p| !p.is_empty()) {
            None if loc.is_empty() => {
                return Some("a [[registry]] has neither location nor prefix".into());
            }
            None => loc.clone(),
            Some(p) => match location(&p) {
                Err(why) => return Some(why),
                Ok(p) if !p.starts_with("*.") && loc.is_empty() => {
                    return Some(format!(
                        "registry prefix {p:?} has no location and is not of the form *.example.com"
                    ));
                }
                Ok(p) => p,
            },
        };
        if prefix.starts_with("*.") && prefix.contains(['/', '@', ':']) {
            return Some(format!(
                "wildcarded prefix {prefix:?} is not of the form *.example.com"
            ));
        }
        if text(r, "pull-from-mirror").is_some_and(|p| !p.is_empty()) {
            return Some(format!(
                "pull-from-mirror is set on registry {prefix:?} itself (a mirror's setting only)"
            ));
        }
        let Some(mirrors) = tables(r.get("mirror")) else {
            return Some(format!(
                "registry {prefix:?}: mirror is not an array of tables"
            ));
        };
        for m in &mirrors {
            if let Some(why) = unknown(m, &MIRROR, " of a [[registry.mirror]]") {
                return Some(why);
            }
            let at = match location(&text(m, "location").unwrap_or_default()) {
                Ok(l) if l.is_empty() => {
                    return Some(format!("a mirror of registry {prefix:?} has no location"));
                }
                Ok(l) => l,
                Err(why) => return Some(why),
            };
            let pull = text(m, "pull-from-mirror").unwrap_or_default();
            if flag(r, "mirror-by-digest-only") && !pull.is_empty() {
                return Some(format!(
                    "registry {prefix:?} sets mirror-by-digest-only and its mirror {at:?} \
                     pull-from-mirror: crio takes one or the other"
                ));
            }
            if !matches!(pull.as_str(), "" | "all" | "digest-only" | "tag-only") {
                return Some(format!(
                    "mirror {at:?}: pull-from-mirror {pull:?} is not all, digest-only or tag-only"
                ));
            }
        }
        let key = if loc.is_empty() { prefix } else { loc };
        let (insecure, blocked) = (flag(r, "insecure"), flag(r, "blocked"));
        for (other, i, b) in &seen {
            if *other == key && (*i != insecure || *b != blocked) {
                let what = if *i != insecure {
                    "insecure"
                } else {
                    "blocked"
                };
                return Some(format!(
                    "registry {key:?} is defined more than once with another {what} setting"
                ));
            }
        }
        seen.push((key, insecure, blocked));
    }
    let search = table.get("unqualified-search-registries");
    for s in
        (search.and_then(toml::Value::as_array).into_iter().flatten()).filter_map(|s| s.as_str())
    {
        match location(s) {
            Err(why) => return Some(why),
            Ok(host) if !domain(&host) => {
                return Some(format!(
                    "unqualified-search-registries entry {s:?} is not a host[:port]"
                ));
            }
            Ok(_) => {}
        }
    }
    let mode = text(table, "short-name-mode").unwrap_or_default();
    if !matches!(mode.as_str(), "" | "enforcing" | "permissive" | "disabled") {
        return Some(format!(
            "short-name-mode {mode:?} is not enforcing, permissive or disabled"
        ));
    }
    match table.get("aliases") {
        None => {}
        Some(toml::Value::Table(aliases)) => {
            for (name, value) in aliases {
                if !short_name(name) {
                    return Some(format!(
                        "alias {name:?} is not a short name (a repository without registry, \
                         tag or digest)"
                    ));
                }
                let value = value.as_str().unwrap_or_default();
                if !value.is_empty() && !qualified(value) {
                    return Some(format!(
                        "alias {name:?} = {value:?} does not name a registry and a repository \
                         (without tag or digest)"
                    ));
                }
            }
        }
        Some(_) => return Some("aliases is not a table".into()),
    }
    None
}

/// A location or prefix as crio reads it: trailing slashes dropped, a URI
/// scheme refused.
fn location(input: &str) -> Result<String, String> {
    let trimmed = input.trim_end_matches('/');
    if trimmed.starts_with("http://") || trimmed.starts_with("https://") {
        return Err(format!(
            "location {input:?} has a URI scheme, which crio does not take (write host/path)"
        ));
    }
    Ok(trimmed.to_string())
}

/// `host[:port]`, the host a DNS name of letters, digits and inner dashes
/// per label, or an IPv6 address in brackets.
fn domain(s: &str) -> bool {
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let Some((addr, tail)) = rest.split_once(']') else {
            return false;
        };
        let v6 = !addr.is_empty() && addr.bytes().all(|b| b.is_ascii_hexdigit() || b == b':');
        return v6 && (tail.is_empty() || tail.strip_prefix(':').is_some_and(digits));
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let label = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    };
    host.split('.').all(label) && port.is_none_or(digits)
}

/// One path component of an image name: lowercase letters and digits,
/// runs of them joined by `.`, `_`, `__` or dashes.
fn component(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut i = 0;
    loop {
        let run = i;
        while i < b.len() && alnum(b[i]) {
            i += 1;
        }
        if i == run {
            return false;
        }
        if i == b.len() {
            return true;
        }
        let sep = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &s[sep..i];
        if !(matches!(sep, "." | "_" | "__") || sep.bytes().all(|c| c == b'-')) {
            return false;
        }
    }
}

/// An alias's name: a repository path without registry, tag or digest.
fn short_name(s: &str) -> bool {
    let parts: Vec<&str> = s.split('/').collect();
    s.len() <= NAME_MAX
        && parts.iter().all(|p| component(p))
        && (parts.len() == 1 || !(parts[0].contains('.') || parts[0] == "localhost"))
}

/// An alias's value: `registry/repository`, the registry a host with a dot
/// or a port (or localhost), no tag or digest.
fn qualified(s: &str) -> bool {
    let Some((host, path)) = s.split_once('/') else {
        return false;
    };
    s.len() <= NAME_MAX
        && domain(host)
        && (host.contains(['.', ':']) || host == "localhost")
        && path.split('/').all(component)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(text: &str) -> Option<String> {
        refused(&text.parse::<toml::Table>().unwrap())
    }

    /// Review 30 r30a F2: each file crio's start refuses (cri-o's
    /// `GetRegistries`, go.podman.io/image v5.38.0, in the review), and the
    /// control it takes.
    #[test]
    fn what_crio_refuses_at_its_start() {
        let base = "unqualified-search-registries = [\"registry.access.redhat.com\"]\n\
                    short-name-mode = \"enforcing\"\n[[registry]]\nlocation = \"quay.io/gpu\"\n";
        let with = |tail: &str| format!("{base}{tail}");
        assert_eq!(
            verdict(&with(
                "[[registry.mirror]]\nlocation = \"mirror.example.com/gpu\"\npull-from-mirror = \"digest-only\"\n"
            )),
            None
        );
        for (text, says) in [
            (
                base.replace("enforcing", "enforced"),
                "short-name-mode \"enforced\"",
            ),
            (
                with("[[registry.mirror]]\nlocation = \"https://mirror.example.com/gpu\"\n"),
                "has a URI scheme",
            ),
            (
                with("[aliases]\n\"ubi9\" = \"ubi9\"\n"),
                "alias \"ubi9\" = \"ubi9\"",
            ),
            (
                with(
                    "mirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"m.example.com/gpu\"\npull-from-mirror = \"digest-only\"\n",
                ),
                "sets mirror-by-digest-only",
            ),
            (
                with("pull-from-mirror = \"all\"\n"),
                "on registry \"quay.io/gpu\" itself",
            ),
            (
                with(
                    "[[registry.mirror]]\nlocation = \"m.example.com\"\npull-from-mirror = \"digest\"\n",
                ),
                "pull-from-mirror \"digest\"",
            ),
            (
                with("[[registry.mirror]]\nlocation = \"/\"\n"),
                "has no location",
            ),
            (
                with(
                    "insecure = true\n[[registry]]\nprefix = \"quay.io/gpu/x\"\nlocation = \"quay.io/gpu/\"\n",
                ),
                "another insecure setting",
            ),
            (
                "[[registry]]\nprefix = \"*.example.com/x\"\n".into(),
                "wildcarded prefix",
            ),
            (
                "[[registry]]\nprefix = \"quay.io/x\"\n".into(),
                "has no location",
            ),
            (
                "[[registry]]\ninsecure = true\n".into(),
                "neither location nor prefix",
            ),
            (
                "unqualified-search-registries = [\"quay.io/x\"]\n".into(),
                "not a host[:port]",
            ),
            (
                "unqualified-search-registries = [\"https://quay.io\"]\n".into(),
                "URI scheme",
            ),
            (
                "[aliases]\n\"quay.io/ubi9\" = \"quay.io/ubi9\"\n".into(),
                "not a short name",
            ),
            (
                "[aliases]\n\"ubi9:1\" = \"quay.io/ubi9\"\n".into(),
                "not a short name",
            ),
            (
                "[aliases]\n\"ubi9\" = \"quay.io/ubi9:9\"\n".into(),
                "does not name",
            ),
            (
                "[aliases]\n\"ubi9\" = \"rh/ubi9\"\n".into(),
                "does not name",
            ),
            (
                "[aliases]\n\"ubi9\" = \"quay.io/UBI9\"\n".into(),
                "does not name",
            ),
            // What plan does not know: a v1 table, a misspelt key.
            (
                "[registries.search]\nregistries = [\"quay.io\"]\n".into(),
                "key \"registries\"",
            ),
            (
                with("mirrors-by-digest-only = true\n"),
                "key \"mirrors-by-digest-only\" of a [[registry]]",
            ),
            (
                with("[[registry.mirror]]\nlocation = \"m.io\"\nblocked = true\n"),
                "of a [[registry.mirror]]",
            ),
        ] {
            let why = verdict(&text).unwrap_or_default();
            assert!(why.contains(says), "{text}: {why:?}");
        }
        for ok in [
            "[[registry]]\nprefix = \"*.example.com\"\n[[registry.mirror]]\nlocation = \"m.example.com:5000/x\"\n",
            "unqualified-search-registries = [\"quay.io:443\", \"localhost\", \"[::1]:5000\", \"r.io/\"]\n",
            "[aliases]\n\"ubi9\" = \"registry.access.redhat.com/ubi9\"\n\"rh/x\" = \"localhost/a/b-c__d.e\"\n\"y\" = \"\"\n",
            "short-name-mode = \"disabled\"\ncredential-helpers = [\"containers-auth.json\"]\n",
            "[[registry]]\nlocation = \"quay.io/gpu\"\nblocked = true\n[[registry]]\nprefix = \"quay.io/gpu/x\"\nlocation = \"quay.io/gpu\"\nblocked = true\n",
        ] {
            assert_eq!(verdict(ok), None, "{ok}");
        }
    }

    #[test]
    fn image_name_grammar() {
        for c in ["a", "a0", "a.b", "a_b", "a__b", "a-b", "a---b", "a.b-c"] {
            assert!(component(c), "{c}");
        }
        for c in [
            "", "A", "a.", ".a", "a..b", "a___b", "a._b", "a-", "-a", "a:b", "a@b",
        ] {
            assert!(!component(c), "{c}");
        }
        for d in ["quay.io", "a-b.c:5000", "localhost", "[fe80::1]:443"] {
            assert!(domain(d), "{d}");
        }
        for d in ["", "a_b.io", "-a.io", "a.io:", "a.io:x", "[]", "[g::1]"] {
            assert!(!domain(d), "{d}");
        }
    }
}
