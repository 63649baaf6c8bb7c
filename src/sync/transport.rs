//! HTTPS to the API server through the host's `curl` (std only here: no TLS
//! of our own; curl brings TLS 1.3 and the host's crypto policy), with
//! kubelet's client certificate.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

/// Why no answer came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Worth another try later (connection refused, timeout, reset).
    Unreachable(String),
    /// Another try gives the same (wrong CA, unreadable key, no curl).
    Fatal(String),
}

/// One request to the API server.
pub trait Transport {
    fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<(&str, &str)>,
    ) -> Result<Response, Failure>;
}

/// The files curl reads.
pub struct Credentials {
    pub server: String,
    pub ca: Option<PathBuf>,
    pub cert: PathBuf,
    pub key: PathBuf,
}

pub struct Curl {
    pub program: PathBuf,
    pub creds: Credentials,
    /// Requests sent, for the summary and the benchmarks.
    pub sent: usize,
}

/// curl's option syntax reads `name:password` in --cert/--key.
fn curl_path(p: &Path) -> String {
    p.display()
        .to_string()
        .replace('\\', "\\\\")
        .replace(':', "\\:")
}

/// curl on PATH (RHCOS, Fedora CoreOS, Debian/Ubuntu images ship it at
/// /usr/bin/curl).
pub fn find_curl() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join("curl"))
        .find(|p| p.is_file())
}

impl Transport for Curl {
    fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<(&str, &str)>,
    ) -> Result<Response, Failure> {
        let mut cmd = Command::new(&self.program);
        // -q first: no ~/.curlrc.
        cmd.args(["-q", "-sS", "--connect-timeout", "5", "--max-time", "20"]);
        cmd.args(["-X", method, "-H", "Accept: application/json"]);
        cmd.arg("--cert").arg(curl_path(&self.creds.cert));
        cmd.arg("--key").arg(curl_path(&self.creds.key));
        if let Some(ca) = &self.creds.ca {
            cmd.arg("--cacert").arg(ca);
        }
        if let Some((content_type, _)) = body {
            cmd.args(["-H", &format!("Content-Type: {content_type}")]);
            cmd.args(["--data-binary", "@-"]);
        }
        cmd.args(["-w", "\n%{http_code}", "--"]);
        cmd.arg(format!("{}{path}", self.creds.server));
        cmd.stdin(if body.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        self.sent += 1;
        let mut child = cmd
            .spawn()
            .map_err(|e| Failure::Fatal(format!("running {}: {e}", self.program.display())))?;
        if let (Some((_, text)), Some(mut stdin)) = (body, child.stdin.take()) {
            // A curl that exits early closes the pipe: its status says why.
            let _ = stdin.write_all(text.as_bytes());
        }
        let out = child
            .wait_with_output()
            .map_err(|e| Failure::Fatal(format!("waiting for curl: {e}")))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr.trim().lines().last().unwrap_or("").to_string();
        match out.status.code() {
            Some(0) => {}
            // Resolve, connect, timeout, TLS connect, empty reply, send, receive.
            Some(6 | 7 | 28 | 35 | 52 | 55 | 56) => {
                return Err(Failure::Unreachable(format!(
                    "{} unreachable: {why}",
                    self.creds.server
                )));
            }
            Some(58 | 59 | 66) => {
                return Err(Failure::Fatal(format!(
                    "kubelet's client certificate or key: {why}"
                )));
            }
            Some(60 | 77 | 83) => {
                return Err(Failure::Fatal(format!(
                    "the kubeconfig's CA does not verify {}: {why}",
                    self.creds.server
                )));
            }
            code => {
                return Err(Failure::Fatal(format!(
                    "curl failed ({}): {why}",
                    code.map_or("killed".to_string(), |c| format!("exit {c}"))
                )));
            }
        }
        let (body, status) = stdout.rsplit_once('\n').unwrap_or(("", &stdout));
        let status: u16 = status
            .trim()
            .parse()
            .map_err(|_| Failure::Fatal(format!("curl gave no HTTP status: {status:?}")))?;
        if status == 0 {
            return Err(Failure::Unreachable(format!(
                "{} gave no answer",
                self.creds.server
            )));
        }
        Ok(Response {
            status,
            body: body.to_string(),
        })
    }
}
