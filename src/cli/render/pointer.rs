//! The pointer config a boot ISO carries: it tells Ignition to merge the
//! pool's config from the Machine Config Server and which CA signs that
//! server, as the installer's `<role>-user-data-managed` secret does.

use anyhow::{Result, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

/// The spec version of [`pointer_ignition`]: what MCO 4.14-4.18 render and
/// what 4.19+ still read.
pub const POINTER_VERSION: &str = "3.4.0";

/// Where to find the CA, for refusals.
const CA_HINT: &str = "pass the cluster's root CA as PEM (the certificateAuthorities data URL \
     in the userData of secret openshift-machine-api/worker-user-data-managed, decoded)";

/// The pointer config as JSON bytes (spec [`POINTER_VERSION`]): merge
/// `merge_url` (e.g. `https://api-int.<cluster>.<domain>:22623/config/<pool>`)
/// and trust `ca_pem` (one or more PEM certificates) for it.
pub fn pointer_ignition(merge_url: &str, ca_pem: &[u8]) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(&pointer_config(
        merge_url,
        ca_pem,
        POINTER_VERSION,
    )?)?)
}

/// The pointer config as a JSON value, for spec `version`.
pub fn pointer_config(merge_url: &str, ca_pem: &[u8], version: &str) -> Result<Value> {
    check_merge_url(merge_url)?;
    check_ca(ca_pem, "the CA file")?;
    let ca = json!({ "source": ca_data_url(ca_pem) });
    Ok(json!({
        "ignition": {
            "config": { "merge": [ { "source": merge_url } ] },
            "security": { "tls": { "certificateAuthorities": [ ca ] } },
            "version": version
        }
    }))
}

/// The CA as the MCO writes it, in its own pointer config (`PointerConfig()`)
/// and when its cert-rotation controller rewrites a user-data secret's
/// `certificateAuthorities[0].source`: a plain base64 data URL of the PEM,
/// never compressed. That rewrite keeps every other field, so a
/// `compression` we set would then apply to the MCO's uncompressed PEM and
/// Ignition could no longer read the CA.
pub fn ca_data_url(ca_pem: &[u8]) -> String {
    format!(
        "data:text/plain;charset=utf-8;base64,{}",
        STANDARD.encode(ca_pem)
    )
}

/// The one form a merge URL takes, for refusals.
const FORM: &str =
    "use https://api-int.<cluster>.<domain>:22623/config/<pool> (or http:// on port 22624)";

/// A Machine Config Server URL as Go's net/url (which Ignition fetches
/// with) reads it, in the only form taken: `https://HOST[:PORT]PATH` or
/// `http://HOST:22624PATH`, HOST a DNS name or address (letters, digits,
/// `-`, `.`, `_`) or a bracketed IPv6 address. Refused, as anything Go could
/// read otherwise than it looks: userinfo (`api-int:22623@evil.example`:
/// Go's host is the part after the last `@`), a query or fragment, `%`
/// escapes, a backslash, spaces, control or non-ASCII bytes, an empty port,
/// a port with a leading zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McsUrl {
    pub https: bool,
    /// Lower case as written (a trailing dot kept: another name to DNS
    /// search lists); an IPv6 address in brackets, in its short form.
    pub host: String,
    /// The port given, or the scheme's (443, 80).
    pub port: u16,
    /// From the first `/` after the host; empty when there is none.
    pub path: String,
}

impl McsUrl {
    /// `https://HOST:PORT`: the server, port always written.
    pub fn server(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}:{}", self.host, self.port)
    }
}

/// `url` read as [`McsUrl`]; `what` names it in the refusal
/// (`--merge-url`).
pub fn parse_mcs_url(url: &str, what: &str) -> Result<McsUrl> {
    let bad = |why: String| anyhow::anyhow!("{what} {url:?}: {why}; {FORM}");
    if let Some(c) = url.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(bad(format!(
            "it has {c:?} (a space, control or non-ASCII character)"
        )));
    }
    if let Some(c) = url.chars().find(|c| matches!(c, '?' | '#' | '%' | '\\')) {
        return Err(bad(format!(
            "it has {c:?}: no query, fragment, percent-encoding or backslash (Go's net/url, \
             which Ignition fetches with, reads them otherwise than a glance does)"
        )));
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(bad("it has no https:// scheme".into()));
    };
    // Go's net/url lower-cases the scheme.
    let https = match scheme.to_ascii_lowercase().as_str() {
        "https" => true,
        "http" => false,
        _ => return Err(bad(format!("scheme {scheme:?} is not https"))),
    };
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    if let Some((user, host)) = authority.rsplit_once('@') {
        return Err(bad(format!(
            "{user:?}@ is user information: Go's net/url, which Ignition fetches with, takes \
             the host after the last '@' ({host:?})"
        )));
    }
    let (host, port) = if let Some(r) = authority.strip_prefix('[') {
        let Some((inside, after)) = r.split_once(']') else {
            return Err(bad("its '[' has no ']'".into()));
        };
        let Ok(ip) = inside.parse::<std::net::Ipv6Addr>() else {
            return Err(bad(format!("[{inside}] is not an IPv6 address")));
        };
        (format!("[{ip}]"), after)
    } else {
        let i = authority.find(':').unwrap_or(authority.len());
        let (host, port) = authority.split_at(i);
        let name = host.strip_suffix('.').unwrap_or(host);
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if !name.split('.').all(label_ok) {
            return Err(bad(format!("host {host:?} is not a DNS name or address")));
        }
        (host.to_ascii_lowercase(), port)
    };
    let port = match port.strip_prefix(':') {
        None if port.is_empty() => {
            if https {
                443
            } else {
                80
            }
        }
        Some(p) if !p.starts_with('0') && p.bytes().all(|b| b.is_ascii_digit()) => p
            .parse()
            .map_err(|_| bad(format!("port {p:?} is past 65535")))?,
        _ => return Err(bad(format!("{port:?} after the host is not a port"))),
    };
    if !https && port != 22624 {
        return Err(bad(format!(
            "plain http on port {port}: the Machine Config Server serves http on 22624 only"
        )));
    }
    Ok(McsUrl {
        https,
        host,
        port,
        path: path.to_string(),
    })
}

fn check_merge_url(merge_url: &str) -> Result<()> {
    parse_mcs_url(merge_url, "--merge-url").map(drop)
}

/// `--mcs-url`: a server, without a path (`https://api-int...:22623`).
pub fn parse_mcs_server(url: &str) -> Result<McsUrl> {
    let u = parse_mcs_url(url, "--mcs-url")?;
    if !matches!(u.path.as_str(), "" | "/") {
        bail!(
            "--mcs-url {url:?}: give the Machine Config Server without a path \
             (https://api-int.<cluster>.<domain>:22623); each pool's /config/<pool> is added"
        );
    }
    Ok(u)
}

/// The Machine Config Server serves the pool named by the URL's last path
/// segment; a node booted from another pool's config is re-rendered and
/// rebooted once it joins `pool`. The path must be exactly
/// `/config/<pool>`.
pub fn check_merge_url_pool(merge_url: &str, pool: &str) -> Result<()> {
    check_pool_url(merge_url, pool, "--merge-url").map(drop)
}

/// [`check_merge_url_pool`] naming the URL `what`; the URL read.
pub fn check_pool_url(merge_url: &str, pool: &str, what: &str) -> Result<McsUrl> {
    let u = parse_mcs_url(merge_url, what)?;
    if u.path != format!("/config/{pool}") {
        match u.path.strip_prefix("/config/") {
            Some(served) => bail!(
                "{what} {merge_url:?} serves pool {served:?}, not --pool {pool:?}; end it in /config/{pool}"
            ),
            None => bail!(
                "{what} {merge_url:?}: path {:?} is not the Machine Config Server's \
                 /config/{pool}; {FORM}",
                u.path
            ),
        }
    }
    Ok(u)
}

/// `merge`, the URL of `what`, is served by `mcs` (`--mcs-url`): the same
/// scheme, host and port.
pub fn check_same_server(merge: &McsUrl, mcs: &McsUrl, what: &str) -> Result<()> {
    if merge.server() != mcs.server() {
        bail!(
            "{what} is fetched from {}, not from --mcs-url {}: the machines would take their \
             whole config from that server; give the pool's pointer config for {}, or drop \
             it and let --mcs-url write it",
            merge.server(),
            mcs.server(),
            mcs.server()
        );
    }
    Ok(())
}

/// What to warn about a plain-HTTP `merge_url` (the MCS's port 22624):
/// Ignition trusts `security.tls.certificateAuthorities` for HTTPS only, so
/// the CA given is carried but checks nothing.
pub fn plain_http_warning(merge_url: &str) -> Option<String> {
    merge_url
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
        .then(|| {
            format!(
                "--merge-url {merge_url:?} is plain HTTP: Ignition fetches it without TLS, so the CA of \
                 --ca-file is not used and the config is not authenticated; use https:// and port 22623 to have it checked"
            )
        })
}

/// Every PEM block is a CERTIFICATE whose body is base64, and there is one;
/// `name` names the input in the message (`--ca-file ca.pem`).
pub fn check_ca(ca_pem: &[u8], name: &str) -> Result<()> {
    pem_certificates(ca_pem, name).map(drop)
}

/// The certificates of a PEM bundle as DER, in order: what Ignition adds to
/// the roots it trusts (every block, decoded), for comparing two bundles by
/// what they trust rather than by their text. Refused as [`check_ca`]
/// says.
pub fn pem_certificates(ca_pem: &[u8], name: &str) -> Result<Vec<Vec<u8>>> {
    let Ok(text) = std::str::from_utf8(ca_pem) else {
        bail!("{name} is not PEM text; {CA_HINT}");
    };
    let mut certificates = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines().map(str::trim) {
        match (&mut body, line) {
            (None, "-----BEGIN CERTIFICATE-----") => body = Some(String::new()),
            (None, l) if l.starts_with("-----BEGIN ") => {
                bail!("{name} holds {l:?}, not a certificate; {CA_HINT}")
            }
            (Some(b), "-----END CERTIFICATE-----") => {
                match STANDARD.decode(b.as_bytes()) {
                    Ok(der) if !der.is_empty() => certificates.push(der),
                    _ => bail!("{name} has a certificate that is not base64; {CA_HINT}"),
                }
                body = None;
            }
            (Some(b), l) => b.push_str(l),
            (None, _) => {}
        }
    }
    if body.is_some() || certificates.is_empty() {
        bail!("{name} holds no complete PEM certificate; {CA_HINT}");
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEM: &[u8] = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    #[test]
    fn pointer_merges_the_url_and_trusts_the_ca() {
        let bytes =
            pointer_ignition("https://api-int.c.example.com:22623/config/gpu", PEM).unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["ignition"]["version"], POINTER_VERSION);
        assert_eq!(
            v["ignition"]["config"]["merge"][0]["source"],
            "https://api-int.c.example.com:22623/config/gpu"
        );
        let ca = &v["ignition"]["security"]["tls"]["certificateAuthorities"][0];
        assert_eq!(
            ca,
            &json!({ "source": format!("data:text/plain;charset=utf-8;base64,{}", STANDARD.encode(PEM)) })
        );
        // Deterministic, and keys in the order the installer writes them.
        assert_eq!(
            bytes,
            pointer_ignition("https://api-int.c.example.com:22623/config/gpu", PEM).unwrap()
        );
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.find("\"config\"") < text.find("\"security\""));
        assert!(text.find("\"security\"") < text.find("\"version\""));
    }

    #[test]
    fn refusals_name_the_input_and_the_fix() {
        for url in [
            "api-int:22623/config/x",
            "https:///config/x",
            "ftp://h/x",
            "https://h/ x",
        ] {
            let e = pointer_ignition(url, PEM).unwrap_err().to_string();
            assert!(e.contains(url) && e.contains(":22623/config/<pool>"), "{e}");
        }
        for ca in [
            &b""[..],
            b"hello",
            b"-----BEGIN CERTIFICATE-----\nMIIB\n",
            b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
            b"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n",
            b"\xff\xfe",
        ] {
            let e = pointer_ignition("https://h:22623/config/x", ca)
                .unwrap_err()
                .to_string();
            assert!(e.contains("worker-user-data-managed"), "{e}");
        }
        let two = [PEM, PEM].concat();
        assert!(pointer_ignition("https://h:22623/config/x", &two).is_ok());
    }

    #[test]
    fn plain_http_says_the_ca_is_unused() {
        let w = plain_http_warning("http://api-int.c.example.com:22624/config/gpu").unwrap();
        assert!(w.contains("plain HTTP") && w.contains("not used"), "{w}");
        assert_eq!(
            plain_http_warning("https://api-int.c.example.com:22623/config/gpu"),
            None
        );
    }

    #[test]
    fn merge_url_must_serve_the_pool() {
        assert!(check_merge_url_pool("https://h:22623/config/gpu", "gpu").is_ok());
        let e = check_merge_url_pool("https://h:22623/config/worker", "gpu")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"worker\"") && e.contains("/config/gpu"), "{e}");
        for url in [
            "https://h/other/gpu.ign",
            "https://evil.example/worker.ign",
            "https://h:22623/config/gpu/",
            "https://h:22623/config//gpu",
            "https://h:22623/x/config/gpu",
            "https://h:22623",
        ] {
            let e = check_merge_url_pool(url, "gpu").unwrap_err().to_string();
            assert!(e.contains(url) && e.contains("/config/gpu"), "{e}");
        }
    }

    /// What is taken, read as Go's net/url reads it (Ignition fetches with
    /// it): (URL, Some((https, host, port))) or None when refused.
    #[test]
    fn urls_are_read_as_go_reads_them() {
        let p = "/config/gpu";
        type Read = (bool, &'static str, u16);
        let ok = |https, host, port| Some((https, host, port));
        let table: &[(&str, Option<Read>)] = &[
            (
                "https://api-int.c.example.com:22623/config/gpu",
                ok(true, "api-int.c.example.com", 22623),
            ),
            (
                "http://api-int.c.example.com:22624/config/gpu",
                ok(false, "api-int.c.example.com", 22624),
            ),
            // Go lower-cases the scheme; DNS and TLS names are caseless.
            (
                "HTTPS://API-INT.C.example.com:22623/config/gpu",
                ok(true, "api-int.c.example.com", 22623),
            ),
            ("Http://h:22624/config/gpu", ok(false, "h", 22624)),
            // Default ports.
            ("https://h/config/gpu", ok(true, "h", 443)),
            ("http://h/config/gpu", None),
            ("http://h:22623/config/gpu", None),
            ("https://h:443/config/gpu", ok(true, "h", 443)),
            // A trailing dot is kept: another name to a DNS search list.
            (
                "https://h.example.:22623/config/gpu",
                ok(true, "h.example.", 22623),
            ),
            (
                "https://10.0.0.5:22623/config/gpu",
                ok(true, "10.0.0.5", 22623),
            ),
            (
                "https://[FD00:0::1]:22623/config/gpu",
                ok(true, "[fd00::1]", 22623),
            ),
            ("https://[fd00::1]/config/gpu", ok(true, "[fd00::1]", 443)),
            ("https://[fd00::1:22623/config/gpu", None),
            ("https://[evil.example]:22623/config/gpu", None),
            ("https://[fd00::1%25eth0]:22623/config/gpu", None),
            ("https://fd00::1:22623/config/gpu", None),
            // Userinfo: Go's host is evil.example.
            (
                "https://api-int.c.example.com:22623@evil.example/config/gpu",
                None,
            ),
            ("https://a@b@evil.example/config/gpu", None),
            ("https://@evil.example/config/gpu", None),
            // Percent-encoding, backslash, query, fragment.
            (
                "https://api-int.c.example.com:22623%40evil.example/config/gpu",
                None,
            ),
            ("https://api-int%2Ec.example.com:22623/config/gpu", None),
            ("https://h:22623/config/g%70u", None),
            ("https://evil.example\\@h:22623/config/gpu", None),
            ("https://h:22623\\config\\gpu", None),
            ("https://h:22623/config/gpu?x=1", None),
            ("https://h:22623/config/gpu#x", None),
            ("https://evil.example#@h:22623/config/gpu", None),
            ("https://evil.example?@h:22623/config/gpu", None),
            // Ports.
            ("https://h:/config/gpu", None),
            ("https://h:022623/config/gpu", None),
            ("https://h:65536/config/gpu", None),
            ("https://h:+1/config/gpu", None),
            ("https://h:22623:1/config/gpu", None),
            // Hosts, schemes.
            ("https:///config/gpu", None),
            ("https://./config/gpu", None),
            ("https://a..b/config/gpu", None),
            ("https://h!:22623/config/gpu", None),
            ("https:h:22623/config/gpu", None),
            ("https:/h:22623/config/gpu", None),
            ("ftp://h:22623/config/gpu", None),
            ("//h:22623/config/gpu", None),
            ("https://h:22623/config/gpu ", None),
            ("https://h\t:22623/config/gpu", None),
            ("https://hé:22623/config/gpu", None),
        ];
        for (url, want) in table {
            let got = check_pool_url(url, "gpu", "the URL");
            match (want, got) {
                (Some(w), Ok(u)) => {
                    assert_eq!((u.https, u.host.as_str(), u.port), *w, "{url}");
                    assert_eq!(u.path, p, "{url}");
                }
                (None, Err(e)) => {
                    let e = e.to_string();
                    assert!(
                        e.contains(&format!("{url:?}")) && e.contains(":22623/config/<pool>"),
                        "{url}: {e}"
                    );
                }
                (w, g) => panic!("{url}: want {w:?}, got {g:?}"),
            }
        }
    }

    #[test]
    fn the_mcs_url_is_a_server_and_pointers_must_name_it() {
        let mcs = parse_mcs_server("https://api-int.c.example.com:22623").unwrap();
        assert_eq!(
            parse_mcs_server("https://API-INT.c.example.com:22623/")
                .unwrap()
                .server(),
            mcs.server()
        );
        assert!(parse_mcs_server("https://api-int.c.example.com:22623/config/gpu").is_err());
        assert!(parse_mcs_server("https://u@api-int.c.example.com:22623").is_err());
        let same =
            check_pool_url("https://api-int.c.example.com:22623/config/gpu", "gpu", "x").unwrap();
        assert!(check_same_server(&same, &mcs, "x").is_ok());
        for other in [
            "https://api-int.c.example.com/config/gpu",
            "https://api-int.c.example.com.:22623/config/gpu",
            "https://evil.example:22623/config/gpu",
            "http://api-int.c.example.com:22624/config/gpu",
        ] {
            let u = check_pool_url(other, "gpu", "x").unwrap();
            let e = check_same_server(&u, &mcs, "pool gpu's merge URL")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&u.server())
                    && e.contains("--mcs-url https://api-int.c.example.com:22623"),
                "{e}"
            );
        }
        let v6 = parse_mcs_server("https://[fd00::1]:22623").unwrap();
        let u = check_pool_url("https://[fd00:0:0::1]:22623/config/gpu", "gpu", "x").unwrap();
        assert!(check_same_server(&u, &v6, "x").is_ok());
    }
}
