//! A scripted HTTPS API server (`fake-apiserver.py` beside this file) with
//! its own CA, a server certificate for 127.0.0.1 and a node's client
//! certificate (openssl): for the sync's transport, where a real API server
//! cannot be made to cut a connection or stall on cue. It checks the
//! client certificate and logs every request.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub struct FakeApi {
    pub dir: PathBuf,
    pub url: String,
    child: Child,
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the programs are here (a skip line when not).
pub fn available() -> bool {
    super::skipped::need("python3")
        && super::skipped::need("openssl")
        && super::skipped::need("curl")
}

fn openssl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `name`.key and `name`.crt signed by the CA in `dir`, for `subject`.
fn issue(dir: &Path, name: &str, subject: &str, ext: &str) {
    let (key, csr, crt) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.crt"),
    );
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            subject,
        ],
    );
    std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &crt,
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
}

impl FakeApi {
    /// A server in `dir` answering `script` (see fake-apiserver.py), with a
    /// client certificate for node `node` (client.crt, client.key).
    pub fn start(dir: &Path, node: &str, script: &serde_json::Value) -> FakeApi {
        std::fs::create_dir_all(dir).unwrap();
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "2",
                "-subj",
                "/CN=fake-ca",
            ],
        );
        issue(
            dir,
            "server",
            "/CN=127.0.0.1",
            "subjectAltName=IP:127.0.0.1\n",
        );
        issue(
            dir,
            "client",
            &format!("/O=system:nodes/CN=system:node:{node}"),
            "extendedKeyUsage=clientAuth\n",
        );
        std::fs::write(dir.join("script.json"), script.to_string()).unwrap();
        let child = Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake-apiserver.py"))
            .arg(dir)
            .spawn()
            .unwrap();
        let mut api = FakeApi {
            dir: dir.to_path_buf(),
            url: String::new(),
            child,
        };
        let t = Instant::now();
        while !dir.join("port").exists() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "fake-apiserver.py did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let port = std::fs::read_to_string(dir.join("port")).unwrap();
        api.url = format!("https://127.0.0.1:{port}");
        api
    }

    fn base64(&self, file: &str) -> String {
        let o = Command::new("openssl")
            .args(["base64", "-A", "-in"])
            .arg(self.dir.join(file))
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap()
    }

    /// A kubeconfig for the node's identity on `server` (this server's
    /// URL when None): the certificates inline, or as file references to
    /// `client.crt`, `client.key`, `ca.crt` (as written: relative ones are
    /// read against the kubeconfig's directory).
    pub fn kubeconfig(&self, server: Option<&str>, files: Option<(&str, &str, &str)>) -> String {
        let server = server.unwrap_or(&self.url);
        let (ca, user) = match files {
            None => (
                format!("certificate-authority-data: {}", self.base64("ca.crt")),
                format!(
                    "client-certificate-data: {}\n    client-key-data: {}",
                    self.base64("client.crt"),
                    self.base64("client.key")
                ),
            ),
            Some((ca, cert, key)) => (
                format!("certificate-authority: {ca}"),
                format!("client-certificate: {cert}\n    client-key: {key}"),
            ),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    {ca}\n    server: {server}\n  name: c\n\
             contexts:\n- context:\n    cluster: c\n    user: u\n  name: x\ncurrent-context: x\n\
             users:\n- name: u\n  user:\n    {user}\n"
        )
    }

    /// The requests it was sent so far.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.join("requests.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}
