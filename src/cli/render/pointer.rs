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

fn check_merge_url(merge_url: &str) -> Result<()> {
    let rest = merge_url
        .strip_prefix("https://")
        .or_else(|| merge_url.strip_prefix("http://"));
    let host = rest.map(|r| r.split('/').next().unwrap_or(""));
    if host.is_none_or(|h| h.is_empty()) || merge_url.chars().any(char::is_whitespace) {
        bail!(
            "--merge-url {merge_url:?}: use https://api-int.<cluster>.<domain>:22623/config/<pool> (or http:// on port 22624)"
        );
    }
    Ok(())
}

/// The Machine Config Server serves the pool named by the URL's last path
/// segment; a node booted from another pool's config is re-rendered and
/// rebooted once it joins `pool`.
pub fn check_merge_url_pool(merge_url: &str, pool: &str) -> Result<()> {
    let path = merge_url.split_once("://").map_or("", |(_, r)| r);
    let path = path.split(['?', '#']).next().unwrap_or("");
    if let Some((_, served)) = path.rsplit_once("/config/")
        && served != pool
    {
        bail!(
            "--merge-url {merge_url:?} serves pool {served:?}, not --pool {pool:?}; end it in /config/{pool}"
        );
    }
    Ok(())
}

/// What to warn about a plain-HTTP `merge_url` (the MCS's port 22624):
/// Ignition trusts `security.tls.certificateAuthorities` for HTTPS only, so
/// the CA given is carried but checks nothing.
pub fn plain_http_warning(merge_url: &str) -> Option<String> {
    merge_url.starts_with("http://").then(|| {
        format!(
            "--merge-url {merge_url:?} is plain HTTP: Ignition fetches it without TLS, so the CA of \
             --ca-file is not used and the config is not authenticated; use https:// and port 22623 to have it checked"
        )
    })
}

/// Every PEM block is a CERTIFICATE whose body is base64, and there is one;
/// `name` names the input in the message (`--ca-file ca.pem`).
pub fn check_ca(ca_pem: &[u8], name: &str) -> Result<()> {
    let Ok(text) = std::str::from_utf8(ca_pem) else {
        bail!("{name} is not PEM text; {CA_HINT}");
    };
    let mut certificates = 0;
    let mut body: Option<String> = None;
    for line in text.lines().map(str::trim) {
        match (&mut body, line) {
            (None, "-----BEGIN CERTIFICATE-----") => body = Some(String::new()),
            (None, l) if l.starts_with("-----BEGIN ") => {
                bail!("{name} holds {l:?}, not a certificate; {CA_HINT}")
            }
            (Some(b), "-----END CERTIFICATE-----") => {
                if b.is_empty() || STANDARD.decode(b.as_bytes()).is_err() {
                    bail!("{name} has a certificate that is not base64; {CA_HINT}");
                }
                certificates += 1;
                body = None;
            }
            (Some(b), l) => b.push_str(l),
            (None, _) => {}
        }
    }
    if body.is_some() || certificates == 0 {
        bail!("{name} holds no complete PEM certificate; {CA_HINT}");
    }
    Ok(())
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
        assert!(check_merge_url_pool("https://h/other/gpu.ign", "gpu").is_ok());
        let e = check_merge_url_pool("https://h:22623/config/worker", "gpu")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"worker\"") && e.contains("/config/gpu"), "{e}");
    }
}
