//! The merge URL check (`iso fleet` pool pointers, `render ignition
//! --merge-url`) against Go's net/url, which Ignition fetches the merge
//! source with (tests/support/go-url): every URL taken is one Go reads to
//! the same server and path, with no userinfo, query or fragment.

use crate::support::{current_go, scratch_dir};

use std::io::Write as _;
use std::net::Ipv6Addr;
use std::process::{Command, Stdio};

use kubelet_labeler::cli::render::pointer::check_pool_url;
use serde_json::Value;

/// Go's reading of each of `urls` (tests/support/go-url).
fn go_parse(oracle: &std::path::Path, urls: &[String]) -> Vec<Value> {
    let mut child = Command::new(oracle)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = serde_json::to_vec(urls).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each URL of `bases` with each token inserted at, or put in place of,
/// each character, and each character deleted.
fn mutations(bases: &[&str], tokens: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for base in bases {
        out.push(base.to_string());
        let at: Vec<usize> = base.char_indices().map(|(i, _)| i).collect();
        for &i in &at {
            let next = base[i..].chars().next().map_or(0, char::len_utf8) + i;
            out.push(format!("{}{}", &base[..i], &base[next..]));
            for t in tokens {
                out.push(format!("{}{t}{}", &base[..i], &base[i..]));
                out.push(format!("{}{t}{}", &base[..i], &base[next..]));
            }
        }
        for t in tokens {
            out.push(format!("{base}{t}"));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every URL the check takes, Go reads to the same scheme, host, port and
/// path `/config/gpu`, without userinfo, query, fragment or escapes
/// (review 12 r12c F3: `https://MCS:22623@evil.example/config/gpu` was
/// taken, Go's host being evil.example).
#[test]
fn taken_merge_urls_are_read_alike_by_go() {
    let tmp = scratch_dir();
    let Some(oracle) = current_go::build_support_oracle("go-url", tmp.path()) else {
        return;
    };
    let mut urls = mutations(
        &[
            "https://api-int.c.example.com:22623/config/gpu",
            "http://[fd00::1]:22624/config/gpu",
        ],
        &[
            "@",
            ":",
            "/",
            "\\",
            "%",
            "%40",
            "%2e",
            "%25",
            "?",
            "#",
            "[",
            "]",
            ".",
            " ",
            "\t",
            "\u{0}",
            "A",
            "0",
            "9",
            "-",
            "_",
            "é",
            "//",
            "@evil.example",
            ":1",
            "::",
        ],
    );
    urls.extend(
        [
            "https://api-int.c.example.com:22623@evil.example/config/gpu",
            "HTTPS://API-INT.c.example.com./config/gpu",
            "https://[::ffff:10.0.0.1]:22623/config/gpu",
            "https://[fd00::1%25eth0]:22623/config/gpu",
            "https://10.0.0.1:443/config/gpu",
        ]
        .map(String::from),
    );
    let go = go_parse(&oracle, &urls);
    assert_eq!(go.len(), urls.len());
    let mut taken = 0;
    for (url, g) in urls.iter().zip(&go) {
        let Ok(ours) = check_pool_url(url, "gpu", "the URL") else {
            continue;
        };
        taken += 1;
        let s = |k: &str| g[k].as_str().unwrap_or_default().to_string();
        assert_eq!(s("err"), "", "{url}: {g}");
        assert_eq!(
            s("scheme"),
            if ours.https { "https" } else { "http" },
            "{url}: {g}"
        );
        for k in ["opaque", "rawpath", "query", "fragment"] {
            assert_eq!(s(k), "", "{url}: {k} in {g}");
        }
        assert_eq!(g["user"], false, "{url}: {g}");
        assert_eq!(g["forcequery"], false, "{url}: {g}");
        assert_eq!(s("path"), "/config/gpu", "{url}: {g}");
        let host = s("hostname");
        match ours
            .host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
        {
            Some(v6) => assert_eq!(
                host.parse::<Ipv6Addr>().ok(),
                v6.parse::<Ipv6Addr>().ok(),
                "{url}: {g}"
            ),
            None => assert_eq!(host.to_ascii_lowercase(), ours.host, "{url}: {g}"),
        }
        let port = match s("port").as_str() {
            "" if ours.https => 443,
            "" => 80,
            p => p.parse::<u16>().unwrap_or(0),
        };
        assert_eq!(port, ours.port, "{url}: {g}");
    }
    // Not vacuous: the plain forms, and case and digit changes, are taken.
    assert!(taken > 100, "{taken} of {} taken", urls.len());
}
