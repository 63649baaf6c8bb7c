//! Whom a fleet's machines trust, and through whom they fetch their config
//! at first boot (review 13): a pool source (a gitops directory, a
//! `<pool>-user-data-managed` Secret, a pointer file) may carry
//! `ignition.proxy` and CAs of its own, and Ignition then fetches the
//! Machine Config Server's URL through that proxy trusting those CAs: the
//! proxy serves any config. With `--ca-file` each pointer must trust
//! exactly that CA (the certificates compared, not the text); without it
//! every pool the same CAs through the same proxy, each CA's SHA-256 shown
//! as `openssl x509 -fingerprint -sha256` prints it; a plain-HTTP merge URL
//! is never fetched through a proxy, noProxy read as Go's httpproxy reads
//! it (tests/support/go-noproxy).

use crate::iso_fleet::{MCS, ok, secret_with};
use crate::iso_fleet_cli::said;
use crate::render_pointer::make_certificates;
use crate::support::iso::{gitops, rules, stand_in_selector};
use crate::support::{bin, current_go, scratch_dir, skipped};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine;
use serde_json::{Value, json};

/// Real certificates (`ca.pem`, `other.pem`: two CAs) and a worker-gpu
/// gitops directory, in a scratch directory; None without openssl.
struct Setup {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    gpu: PathBuf,
    sel: PathBuf,
}

fn setup() -> Option<Setup> {
    skipped::tool("openssl")?;
    let tmp = scratch_dir();
    let dir = tmp.path().to_path_buf();
    std::fs::create_dir(dir.join("certs")).unwrap();
    make_certificates(&dir.join("certs"));
    let sel = stand_in_selector(&dir);
    let gpu = gitops(
        &dir,
        "worker-gpu",
        "feature.node.kubernetes.io/gpu=true",
        &sel,
    );
    Some(Setup {
        _tmp: tmp,
        dir,
        gpu,
        sel,
    })
}

impl Setup {
    fn pem(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join("certs").join(name)).unwrap()
    }

    /// `openssl x509 -noout -fingerprint -sha256` of certs/`name`.
    fn fingerprint(&self, name: &str) -> String {
        let o = ok(Command::new("openssl")
            .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
            .arg(self.dir.join("certs").join(name))
            .output()
            .unwrap());
        let text = String::from_utf8(o.stdout).unwrap();
        text.trim().rsplit('=').next().unwrap().to_string()
    }

    /// `iso fleet --dry-run` of worker-gpu (its gitops directory and
    /// `gpu_pointer`) and worker (`worker_pointer`), with `extra` flags.
    fn dry_run(&self, gpu_pointer: &Path, worker_pointer: &Path, extra: &[&str]) -> Output {
        bin()
            .args(["iso", "fleet", "--dry-run", "--dest-device", "/dev/sda"])
            .args(["--nfd-labels", "openshift", "--rules"])
            .arg(rules())
            .arg("--selector")
            .arg(&self.sel)
            .arg(format!("--pool=worker-gpu={}", self.gpu.display()))
            .arg(format!("--pool=worker-gpu={}", gpu_pointer.display()))
            .arg(format!("--pool=worker={}", worker_pointer.display()))
            .args(extra)
            .output()
            .unwrap()
    }

    /// `pointer` as pool's Secret in its own directory `sub`.
    fn secret(&self, sub: &str, pool: &str, pointer: &Value) -> PathBuf {
        let d = self.dir.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        secret_with(&d, pool, &pointer.to_string())
    }
}

/// The pointer config the installer writes (`pointerIgnitionConfig`):
/// merge `server`/config/`pool`, trust `pems` (each its own data URL).
fn pointer(server: &str, pool: &str, pems: &[&str]) -> Value {
    let cas: Vec<Value> = pems
        .iter()
        .map(|p| {
            json!({ "source": format!("data:text/plain;charset=utf-8;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(p)) })
        })
        .collect();
    json!({ "ignition": {
        "config": { "merge": [ { "source": format!("{server}/config/{pool}") } ] },
        "security": { "tls": { "certificateAuthorities": cas } },
        "version": "3.2.0"
    } })
}

fn with_proxy(mut p: Value, proxy: Value) -> Value {
    p["ignition"]["proxy"] = proxy;
    p
}

fn refused(o: &Output, needles: &[&str]) {
    let e = said(o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    for n in needles {
        assert!(e.contains(n), "{n:?} in {e}");
    }
}

/// The same PEM text re-wrapped (64 to 76 columns, CRLF): other text, the
/// same certificate.
fn rewrapped(pem: &str) -> String {
    let body: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .concat();
    let lines: Vec<String> = body
        .as_bytes()
        .chunks(76)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\r\n{}\r\n-----END CERTIFICATE-----\r\n",
        lines.join("\r\n")
    )
}

/// With `--ca-file`, a pool's Secret whose pointer trusts another CA (the
/// attacker's, with a proxy terminating TLS), that CA besides the
/// cluster's, none, or one fetched from a URL is refused, naming the
/// Secret, the field and the fix; the cluster's CA in other PEM text is the
/// same CA and taken, its SHA-256 shown as openssl prints it.
#[test]
fn with_ca_file_each_pointer_trusts_exactly_it() {
    let Some(s) = setup() else { return };
    let (ca, other) = (s.pem("ca.pem"), s.pem("other.pem"));
    let ca_file = s.dir.join("certs/ca.pem");
    let flags = ["--mcs-url", MCS, "--ca-file", ca_file.to_str().unwrap()];
    let worker = s.secret("w", "worker", &pointer(MCS, "worker", &[&ca]));
    let proxy = json!({ "httpsProxy": "http://proxy.example:3128" });
    let same = s.secret(
        "same",
        "worker-gpu",
        &with_proxy(
            pointer(MCS, "worker-gpu", &[&rewrapped(&ca)]),
            proxy.clone(),
        ),
    );
    let o = s.dry_run(&same, &worker, &flags);
    assert!(o.status.success(), "{}", said(&o));
    let line = format!(
        "pool worker-gpu: its machines trust CA SHA-256 {} for it\n",
        s.fingerprint("ca.pem")
    );
    assert!(said(&o).contains(&line), "{line:?} in {}", said(&o));
    let theirs = format!("CA SHA-256 {}", s.fingerprint("other.pem"));
    let ours = format!(
        "not the CA of --ca-file (CA SHA-256 {})",
        s.fingerprint("ca.pem")
    );
    let mut url_ca = pointer(MCS, "worker-gpu", &[&ca]);
    url_ca["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"] =
        json!("https://ca.evil.example/ca.pem");
    for (sub, p, needles) in [
        (
            "attacker",
            with_proxy(pointer(MCS, "worker-gpu", &[&other]), proxy.clone()),
            vec![
                format!("pool worker-gpu's pointer config trusts {theirs}"),
                ours.clone(),
            ],
        ),
        (
            "both",
            pointer(MCS, "worker-gpu", &[&ca, &other]),
            vec![ours.clone()],
        ),
        (
            "bundle",
            pointer(MCS, "worker-gpu", &[&format!("{ca}{other}")]),
            vec![ours.clone()],
        ),
        (
            "none",
            pointer(MCS, "worker-gpu", &[]),
            vec![format!(
                "trusts no CA of its own (the system's public roots only)"
            )],
        ),
    ] {
        let secret = s.secret(sub, "worker-gpu", &p);
        let mut needles = needles;
        needles.extend([
            format!("{}: ", secret.display()),
            "(ignition.security.tls.certificateAuthorities)".into(),
            "oc get secret -n openshift-machine-api worker-gpu-user-data-managed -o yaml".into(),
        ]);
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        refused(&s.dry_run(&secret, &worker, &flags), &needles);
    }
    let secret = s.secret("url", "worker-gpu", &url_ca);
    refused(
        &s.dry_run(&secret, &worker, &flags),
        &[&format!(
            "{}: pool worker-gpu's ignition.security.tls.certificateAuthorities[0] is \
             \"https://ca.evil.example/ca.pem\", not a data: URL",
            secret.display()
        )],
    );
}

/// Without `--ca-file` every pool's pointer trusts the same CAs through the
/// same proxy, for the same server, and the dry run shows each pool's;
/// another pool's Secret (another CA, proxy or server) is refused, naming
/// both.
#[test]
fn without_ca_file_the_pools_agree() {
    let Some(s) = setup() else { return };
    let (ca, other) = (s.pem("ca.pem"), s.pem("other.pem"));
    let proxy = json!({ "httpsProxy": "http://proxy.example:3128", "noProxy": [".cluster.local"] });
    let gpu = s.secret(
        "g",
        "worker-gpu",
        &with_proxy(pointer(MCS, "worker-gpu", &[&ca]), proxy.clone()),
    );
    let worker = s.secret(
        "w",
        "worker",
        &with_proxy(pointer(MCS, "worker", &[&ca]), proxy.clone()),
    );
    let o = s.dry_run(&gpu, &worker, &[]);
    assert!(o.status.success(), "{}", said(&o));
    for pool in ["worker-gpu", "worker"] {
        for line in [
            format!(
                "pool {pool}: config fetched from {MCS}/config/{pool} (through proxy \
                 http://proxy.example:3128, noProxy .cluster.local)\n"
            ),
            format!(
                "pool {pool}: its machines trust CA SHA-256 {} for it\n",
                s.fingerprint("ca.pem")
            ),
        ] {
            assert!(said(&o).contains(&line), "{line:?} in {}", said(&o));
        }
    }
    let other_ca = s.secret(
        "o",
        "worker",
        &with_proxy(pointer(MCS, "worker", &[&other]), proxy.clone()),
    );
    refused(
        &s.dry_run(&gpu, &other_ca, &[]),
        &[
            &format!(
                "{}: pool worker's pointer config trusts CA SHA-256 {}, pool worker-gpu's ({}) \
                 CA SHA-256 {}",
                other_ca.display(),
                s.fingerprint("other.pem"),
                gpu.display(),
                s.fingerprint("ca.pem")
            ),
            "or pass its CA with --ca-file",
        ],
    );
    let other_server = s.secret(
        "s",
        "worker",
        &with_proxy(
            pointer("https://10.0.0.5:22623", "worker", &[&ca]),
            proxy.clone(),
        ),
    );
    refused(
        &s.dry_run(&gpu, &other_server, &[]),
        &[&format!(
            "{}: pool worker's pointer config fetches from https://10.0.0.5:22623, pool \
             worker-gpu's ({}) from {MCS}: one cluster has one Machine Config Server",
            other_server.display(),
            gpu.display()
        )],
    );
    let other_proxy = s.secret(
        "p",
        "worker",
        &with_proxy(
            pointer(MCS, "worker", &[&ca]),
            json!({ "httpsProxy": "http://evil.example:3128" }),
        ),
    );
    refused(
        &s.dry_run(&gpu, &other_proxy, &[]),
        &[&format!(
            "{}: pool worker's pointer config fetches through proxy http://evil.example:3128 \
             (https), pool worker-gpu's ({}) through proxy http://proxy.example:3128 (https), \
             noProxy .cluster.local (ignition.proxy)",
            other_proxy.display(),
            gpu.display()
        )],
    );
}

/// A plain-HTTP merge URL (the MCS's port 22624) through an HTTP proxy: the
/// proxy serves the machines any config. Refused unless noProxy names the
/// host (as Go reads it); an HTTPS-only proxy is not used for it.
#[test]
fn plain_http_never_through_a_proxy() {
    let Some(s) = setup() else { return };
    let ca = s.pem("ca.pem");
    let http = "http://api-int.ocp.example.com:22624";
    let ca_file = s.dir.join("certs/ca.pem");
    let flags = ["--mcs-url", http, "--ca-file", ca_file.to_str().unwrap()];
    let worker = s.secret("w", "worker", &pointer(http, "worker", &[&ca]));
    let proxied = |sub: &str, proxy: Value| {
        s.secret(
            sub,
            "worker-gpu",
            &with_proxy(pointer(http, "worker-gpu", &[&ca]), proxy),
        )
    };
    for (sub, no_proxy) in [
        ("a", json!([])),
        ("b", json!(["ocp.example.com:22623"])),
        ("c", json!(["example.org", "10.0.0.0/8"])),
        ("d", json!(["api-int.ocp.example.com."])),
    ] {
        let secret = proxied(
            sub,
            json!({ "httpProxy": "http://proxy.example:3128", "noProxy": no_proxy }),
        );
        refused(
            &s.dry_run(&secret, &worker, &flags),
            &[&format!(
                "{}: pool worker-gpu's pointer config fetches its plain-HTTP merge URL \
                 {http}/config/worker-gpu through proxy http://proxy.example:3128 \
                 (ignition.proxy.httpProxy, api-int.ocp.example.com not in noProxy)",
                secret.display()
            )],
        );
    }
    for (sub, proxy) in [
        (
            "e",
            json!({ "httpProxy": "http://proxy.example:3128", "noProxy": [".ocp.example.com"] }),
        ),
        (
            "f",
            json!({ "httpProxy": "http://proxy.example:3128", "noProxy": ["ocp.example.com:22624"] }),
        ),
        ("g", json!({ "httpsProxy": "http://proxy.example:3128" })),
    ] {
        let o = s.dry_run(&proxied(sub, proxy.clone()), &worker, &flags);
        assert!(o.status.success(), "{proxy}: {}", said(&o));
    }
}

/// Whether a plain-HTTP merge URL is fetched through the proxy, as the CLI
/// reads noProxy and as Go's httpproxy does: the same, but where the CLI is
/// not sure (localhost and loopback, which Go never proxies), where it says
/// "proxied" (refused) and Go "direct". Never "direct" where Go proxies.
#[test]
fn no_proxy_is_read_as_go_reads_it() {
    use kubelet_labeler::cli::iso::fleet::no_proxy::proxied;
    use kubelet_labeler::cli::render::pointer::check_pool_url;
    let tmp = scratch_dir();
    let Some(oracle) = current_go::build_support_oracle("go-noproxy", tmp.path()) else {
        return;
    };
    let hosts = [
        "api-int.c.example.com",
        "API-INT.C.Example.com",
        "api-int.c.example.com.",
        "c.example.com",
        "example.com",
        "10.0.0.5",
        "[fd00::1]",
        "[FD00:0::1]",
        "[::ffff:10.0.0.5]",
        "localhost",
        "127.0.0.1",
        "[::1]",
    ];
    let urls: Vec<String> = hosts
        .iter()
        .map(|h| format!("http://{h}:22624/config/gpu"))
        .collect();
    let entries = [
        "",
        "*",
        "example.com",
        ".example.com",
        "*.example.com",
        "EXAMPLE.COM",
        " example.com ",
        "xample.com",
        "example.com.",
        "c.example.com:22624",
        "c.example.com:22623",
        "c.example.com:",
        "api-int.c.example.com",
        ".api-int.c.example.com",
        "other.com,example.com",
        "*example.com",
        "*.",
        ".",
        ":22624",
        "[",
        "a:b:c",
        "example.com:22624:1",
        "10.0.0.0/8",
        "10.0.0.0/08",
        "10.0.0.0/0008",
        "10.0.0.0/33",
        "0.0.0.0/0",
        "10.0.0.5",
        "10.0.0.5/32",
        "10.0.0.5:22624",
        "10.0.0.5:80",
        "10.0.0.5:",
        "010.0.0.5",
        "11.0.0.0/8",
        "fd00::/8",
        "fd00::1",
        "[fd00::1]:22624",
        "[fd00::1]:80",
        "[fd00::1]",
        "::/0",
        "::ffff:10.0.0.5",
        "::ffff:10.0.0.0/104",
        "::ffff:10.0.0.0/80",
        "::ffff:0:0/96",
        "localhost",
        "127.0.0.1",
        "exämple.com",
    ];
    let mut compared = 0;
    for no_proxy in entries {
        let out = Command::new(&oracle)
            .args(&urls)
            .env_clear()
            .env("HTTP_PROXY", "http://proxy.example:3128")
            .env("NO_PROXY", no_proxy)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let go: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(go.len(), urls.len());
        for (url, go) in urls.iter().zip(&go) {
            let u = check_pool_url(url, "gpu", "the URL").unwrap();
            let ours = proxied(no_proxy, &u.host, u.port);
            let unsure =
                ["localhost", "127.0.0.1", "[::1]", "[::ffff:10.0.0.5]"].contains(&u.host.as_str());
            match (go.as_str(), ours) {
                ("proxied", true) | ("direct", false) => compared += 1,
                ("direct", true) if unsure => {}
                _ => panic!("NO_PROXY={no_proxy:?} {url}: Go {go}, the CLI proxied={ours}"),
            }
        }
    }
    assert!(compared > entries.len() * 8, "{compared}");
}
