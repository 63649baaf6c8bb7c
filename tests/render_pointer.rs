//! The pointer config a boot ISO carries, fetched by real Ignition from an
//! HTTPS server standing in for the Machine Config Server: Ignition must
//! trust the server through the CA we embed (and only through it), merge
//! the pool's config and write the node's files.

use crate::support::{elf, ignition_oracle, scratch_dir, skipped};

use skipped::need;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh")
        .args(["-ec", script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, and a server certificate for 127.0.0.1 it signs; plus an unrelated
/// CA that must not be trusted.
pub(crate) fn make_certificates(dir: &Path) {
    sh(
        dir,
        "for ca in ca other; do
           openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=$ca \
             -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
             -keyout $ca.key -out $ca.pem 2>/dev/null
         done
         openssl req -newkey rsa:2048 -nodes -subj /CN=mcs -keyout server.key -out server.csr 2>/dev/null
         printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > ext
         openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
           -extfile ext -out server.pem 2>/dev/null",
    );
}

/// Serves `config` at /config/<pool> over HTTPS (any other path: 404) and
/// appends each request's Accept header to `accept.log`.
const SERVER: &str = r#"
import http.server, ssl, sys
pool, config = sys.argv[1], open(sys.argv[2], 'rb').read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open('accept.log', 'a') as f:
            f.write(self.path + ' ' + str(self.headers.get('Accept')) + '\n')
        if self.path != '/config/' + pool:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(config)))
        self.end_headers()
        self.wfile.write(config)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(('127.0.0.1', 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain('server.pem', 'server.key')
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(dir: &Path, pool: &str, config: &Path) -> (Server, u16) {
    let mut child = Command::new("python3")
        .args(["-c", SERVER, pool])
        .arg(config)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("the server's port");
    (Server(child), port)
}

fn cli(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A static ELF header standing in for the wrapper (its bytes are compared,
/// never run).
fn fake_static_elf() -> Vec<u8> {
    elf::static_x86_64_with_body()
}

/// Certificates and a wrapper in `dir`, and what the MCS would serve for
/// pool worker-gpu (rendered with `flags`): the full config, at a spec
/// Debian's Ignition 2.14 reads as a child config, served over HTTPS.
/// Returns the server (stopped when dropped) and the pool's URL.
fn serve_pool(dir: &Path, flags: &[&str]) -> (Server, String) {
    make_certificates(dir);
    std::fs::write(dir.join("wrapper"), fake_static_elf()).unwrap();
    let args = [
        &["render", "ignition", "--pool", "worker-gpu"][..],
        flags,
        &[
            "--wrapper",
            "wrapper",
            "--ignition-version",
            "3.2.0",
            "-o",
            "pool.ign",
        ],
    ]
    .concat();
    let full = cli(dir, &args);
    assert!(
        full.status.success(),
        "{}",
        String::from_utf8_lossy(&full.stderr)
    );
    let (server, port) = serve(dir, "worker-gpu", &dir.join("pool.ign"));
    let url = format!("https://127.0.0.1:{port}/config/worker-gpu");
    (server, url)
}

/// `render ignition --merge-url URL --ca-file CA` (and `flags`) into
/// pointer.ign, which it returns; `what` starts the failure message.
fn render_pointer(dir: &Path, url: &str, ca: &str, flags: &[&str], what: &str) -> Value {
    let args = [
        &[
            "render",
            "ignition",
            "--pool",
            "worker-gpu",
            "--merge-url",
            url,
            "--ca-file",
            ca,
        ][..],
        flags,
        &["-o", "pointer.ign", "--force"],
    ]
    .concat();
    let out = cli(dir, &args);
    assert!(
        out.status.success(),
        "{what}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&std::fs::read(dir.join("pointer.ign")).unwrap()).unwrap()
}

#[test]
fn ignition_fetches_the_pool_config_through_the_pointer() {
    if !need(ignition_oracle::IGNITION) || !need("openssl") || !need("python3") {
        return;
    }
    let tmp = scratch_dir();
    let dir = tmp.path();
    let (_server, url) = serve_pool(
        dir,
        &[
            "--label",
            "example.com/gpu=yes",
            "--taint",
            "example.com/gpu=true:NoSchedule",
        ],
    );

    // A bundle of several CAs is what `oc` hands out.
    sh(dir, "cat other.pem ca.pem other.pem ca.pem > bundle.pem");
    for (ca, trusted) in [("ca.pem", true), ("bundle.pem", true), ("other.pem", false)] {
        let pointer = render_pointer(dir, &url, ca, &[], "");
        eprintln!(
            "{ca}: CA data URL {} bytes, compression {}",
            pointer["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"]
                .as_str()
                .unwrap()
                .len(),
            pointer["ignition"]["security"]["tls"]["certificateAuthorities"][0]["compression"]
        );
        // The library function the ISO step calls gives the same config.
        let from_lib = kubelet_labeler::cli::render::pointer_ignition(
            &url,
            &std::fs::read(dir.join(ca)).unwrap(),
        )
        .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&from_lib).unwrap(), pointer);

        let root = dir.join(format!("root-{ca}"));
        let state = dir.join(format!("state-{ca}"));
        let result = ignition_oracle::run_stages_with_timeout(
            &pointer,
            &root,
            &state,
            &["fetch-offline", "fetch", "files"],
            if trusted { 120 } else { 15 },
        );
        if !trusted {
            let log = result
                .expect_err("Ignition fetched the config with a CA that did not sign the server");
            assert!(
                log.contains("x509: certificate signed by unknown authority"),
                "{log}"
            );
            assert!(
                !root
                    .join("usr/local/bin/kubelet-labeler-wrapper.x86_64")
                    .exists()
            );
            continue;
        }
        result.unwrap();
        let wrapper = root.join("usr/local/bin/kubelet-labeler-wrapper.x86_64");
        assert_eq!(std::fs::read(&wrapper).unwrap(), fake_static_elf());
        let generator = root.join("etc/systemd/system-generators/kubelet-labeler");
        for exe in [&wrapper, &generator] {
            let mode = std::os::unix::fs::PermissionsExt::mode(
                &std::fs::metadata(exe).unwrap().permissions(),
            );
            assert_eq!(mode & 0o7777, 0o755);
        }
        assert_eq!(
            std::fs::read_to_string(&generator).unwrap(),
            kubelet_labeler::cli::render::dropins::generator(
                kubelet_labeler::node::kubelet::Profile::OpenShift,
                "kubelet.service",
                &[kubelet_labeler::cli::render::arch::Arch::X86_64]
            )
        );
        let dropins = root.join("etc/systemd/system/kubelet.service.d");
        assert!(!dropins.join("zz-kubelet-labeler.conf").exists());
        let env = std::fs::read_to_string(dropins.join("90-kubelet-labeler-env.conf")).unwrap();
        assert!(
            env.contains(
                "Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=node.kubernetes.io/worker-gpu=,example.com/gpu=yes\"\n"
            ) && env.contains(
                "Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=example.com/gpu=true:NoSchedule\"\n"
            ),
            "{env}"
        );
    }
    // Ignition asked for the pool's path with an Ignition spec in Accept,
    // as the MCS needs to pick the served version.
    let log = std::fs::read_to_string(dir.join("accept.log")).unwrap();
    assert!(
        log.lines().any(|l| l.starts_with("/config/worker-gpu ")
            && l.contains("application/vnd.coreos.ignition+json")),
        "{log}"
    );
}

#[test]
fn pointer_refusals() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    std::fs::write(
        dir.join("ca.pem"),
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("key.pem"),
        "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    for (url, ca, needle) in [
        (
            "https://api-int.c.example.com:22623/config/worker",
            "ca.pem",
            "/config/worker-gpu",
        ),
        (
            "api-int.c.example.com:22623/config/worker-gpu",
            "ca.pem",
            "https://",
        ),
        (
            "https://api-int.c.example.com:22623/config/worker-gpu",
            "key.pem",
            // The file named, and where the right one is.
            "--ca-file key.pem holds \"-----BEGIN",
        ),
    ] {
        let out = cli(
            dir,
            &[
                "render",
                "ignition",
                "--pool",
                "worker-gpu",
                "--merge-url",
                url,
                "--ca-file",
                ca,
                "-o",
                "pointer.ign",
            ],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(needle),
            "{url}: {err}"
        );
        if ca == "key.pem" {
            assert!(err.contains("worker-user-data-managed"), "{err}");
        }
        assert!(!dir.join("pointer.ign").exists());
    }
}

/// The CA source the MCO's cert-rotation controller writes into every
/// Ignition user-data secret of openshift-machine-api it does not manage
/// (`reconcileSecret`: `dataurl.EncodeBytes` of the new CA bundle, which
/// sniffs PEM as text/plain;charset=utf-8).
fn mco_rotated_source(pem: &[u8]) -> String {
    use base64::Engine;
    format!(
        "data:text/plain;charset=utf-8;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(pem)
    )
}

/// The rotation's rewrite: `certificateAuthorities[0].source` replaced,
/// every other field (a `compression` too) kept.
fn rotate(pointer: &Value, new_pem: &[u8]) -> Value {
    let mut rotated = pointer.clone();
    rotated["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"] =
        mco_rotated_source(new_pem).into();
    rotated
}

/// The CA resource of a config as the `ignition-config` crate's spec types
/// read it, decoded as Ignition fetches it (data URL, then `compression`).
fn ca_as_ignition_reads_it(config: &Value) -> Result<String, String> {
    use ignition_config::Config;
    let bytes = serde_json::to_vec(config).unwrap();
    let (typed, warnings) = Config::parse_slice(&bytes).map_err(|e| e.to_string())?;
    assert!(warnings.is_empty(), "{warnings:?}");
    macro_rules! first_ca {
        ($c:expr) => {{
            let ca = &$c
                .ignition
                .security
                .as_ref()
                .and_then(|s| s.tls.as_ref())
                .and_then(|t| t.certificate_authorities.as_ref())
                .expect("a CA")[0];
            (
                ca.source.clone().expect("a CA source"),
                ca.compression.clone(),
            )
        }};
    }
    let (source, compression) = match &typed {
        Config::V3_2(c) => first_ca!(c),
        Config::V3_4(c) => first_ca!(c),
        Config::V3_5(c) => first_ca!(c),
        other => panic!("unexpected spec {other:?}"),
    };
    let (head, data) = source
        .strip_prefix("data:")
        .and_then(|r| r.split_once(','))
        .ok_or_else(|| format!("not a data URL: {source}"))?;
    let raw = if head.ends_with(";base64") {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| e.to_string())?
    } else {
        data.as_bytes().to_vec()
    };
    let pem = match compression.as_deref() {
        None | Some("") => raw,
        Some("gzip") => {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut out)
                .map_err(|e| format!("gzip: {e}"))?;
            out
        }
        Some(c) => return Err(format!("compression {c}")),
    };
    String::from_utf8(pem).map_err(|e| e.to_string())
}

/// What Debian's ignition-validate (2.14) says of `config`; it knows 3.4.0
/// as 3.4.0-experimental and no 3.5.0 (None then).
fn ignition_validate(dir: &Path, config: &Value) -> Option<std::process::Output> {
    let mut config = config.clone();
    match config["ignition"]["version"].as_str() {
        Some("3.5.0") => return None,
        Some("3.4.0") => config["ignition"]["version"] = "3.4.0-experimental".into(),
        _ => {}
    }
    let f = dir.join("validate.ign");
    std::fs::write(&f, serde_json::to_vec(&config).unwrap()).unwrap();
    Some(Command::new("ignition-validate").arg(&f).output().unwrap())
}

/// The MCO rotates the MCS CA and rewrites the user-data secret made from
/// our pointer: the config must still be valid and give Ignition the new
/// CA, for every spec version we write; real Ignition then fetches the
/// pool's config from a server only the new CA signs.
#[test]
fn pointer_survives_the_mco_ca_rotation() {
    if !need(ignition_oracle::IGNITION)
        || !need("openssl")
        || !need("python3")
        || !need("ignition-validate")
    {
        return;
    }
    let tmp = scratch_dir();
    let dir = tmp.path();
    let (_server, url) = serve_pool(dir, &[]);
    // Before the rotation the node trusted `other` (one CA, or the bundle
    // `oc` hands out); the MCS now presents a certificate `ca` signs.
    sh(dir, "cat other.pem other.pem other.pem > old-bundle.pem");
    let new_pem = std::fs::read(dir.join("ca.pem")).unwrap();
    let new_text = String::from_utf8(new_pem.clone()).unwrap();
    for version in ["3.2.0", "3.4.0", "3.5.0"] {
        for old in ["other.pem", "old-bundle.pem"] {
            let what = format!("{version}, {old}");
            let pointer = render_pointer(
                dir,
                &url,
                old,
                &["--ignition-version", version],
                &format!("{what}: "),
            );
            let rotated = rotate(&pointer, &new_pem);
            assert_eq!(
                rotated["ignition"]["config"], pointer["ignition"]["config"],
                "{what}"
            );
            if let Some(v) = ignition_validate(dir, &rotated) {
                assert!(
                    v.status.success(),
                    "{what}: ignition-validate: {}{}",
                    String::from_utf8_lossy(&v.stdout),
                    String::from_utf8_lossy(&v.stderr)
                );
            }
            assert_eq!(
                ca_as_ignition_reads_it(&rotated).map_err(|e| format!("{what}: {e}")),
                Ok(new_text.clone())
            );
            kubelet_labeler::cli::iso::check_ignition(
                &serde_json::to_vec(&rotated).unwrap(),
                "the rotated pointer",
            )
            .unwrap();
            // Before the rotation too, the CA as the MCO's own pointer carries it.
            let ca = &pointer["ignition"]["security"]["tls"]["certificateAuthorities"][0];
            assert_eq!(
                ca,
                &serde_json::json!({ "source": mco_rotated_source(&std::fs::read(dir.join(old)).unwrap()) }),
                "{what}"
            );
        }
    }
    // The model above is Ignition's: a CA kept as `compression: gzip`
    // (what we wrote before) makes real Ignition fail after the rewrite.
    let mut gzipped = kubelet_labeler::cli::render::pointer::pointer_config(
        &url,
        &std::fs::read(dir.join("old-bundle.pem")).unwrap(),
        "3.4.0",
    )
    .unwrap();
    gzipped["ignition"]["security"]["tls"]["certificateAuthorities"][0]["compression"] =
        "gzip".into();
    let rotated = rotate(&gzipped, &new_pem);
    assert!(ca_as_ignition_reads_it(&rotated).is_err());
    let log = ignition_oracle::run_stages_with_timeout(
        &rotated,
        &dir.join("root-gzip"),
        &dir.join("state-gzip"),
        &["fetch-offline", "fetch"],
        30,
    )
    .expect_err("Ignition read a rotated CA left marked gzip");
    assert!(log.contains("gzip: invalid header"), "{log}");
    // Real Ignition (2.14 reads up to 3.4.0) follows the rotated pointer.
    for version in ["3.2.0", "3.4.0"] {
        let pointer = kubelet_labeler::cli::render::pointer::pointer_config(
            &url,
            &std::fs::read(dir.join("old-bundle.pem")).unwrap(),
            version,
        )
        .unwrap();
        let root = dir.join(format!("root-rotated-{version}"));
        let state = dir.join(format!("state-rotated-{version}"));
        ignition_oracle::run_stages_with_timeout(
            &rotate(&pointer, &new_pem),
            &root,
            &state,
            &["fetch-offline", "fetch", "files"],
            120,
        )
        .unwrap_or_else(|log| panic!("{version}: {log}"));
        assert_eq!(
            std::fs::read(root.join("usr/local/bin/kubelet-labeler-wrapper.x86_64")).unwrap(),
            fake_static_elf()
        );
    }
}
