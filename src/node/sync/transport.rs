//! HTTPS to the API server through the host's `curl` (std only here: no TLS
//! of our own; curl brings TLS 1.3 and the host's crypto policy), with
//! kubelet's client certificate.

use std::ffi::{CString, c_char, c_int};
use std::path::{Path, PathBuf};

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

unsafe extern "C" {
    fn fork() -> c_int;
    fn pipe(fds: *mut c_int) -> c_int;
    fn dup2(old: c_int, new: c_int) -> c_int;
    fn close(fd: c_int) -> c_int;
    fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char)
    -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn _exit(code: c_int) -> !;
    static environ: *const *const c_char;
}

/// Run `program` with `args` and our environment, its stdout (curl's stderr too, with
/// `--stderr -`) captured: (exit status, output). A fork and an exec,
/// not std's `Command`: a tenth of its code in the wrapper's payload.
fn run_captured(program: &Path, args: &[String]) -> std::io::Result<(Option<i32>, Vec<u8>)> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    let nul = |b: &[u8]| CString::new(b).map_err(|_| std::io::Error::other("a NUL in an argument"));
    let path = nul(program.as_os_str().as_bytes())?;
    let argv: Vec<CString> = std::iter::once(Ok(path.clone()))
        .chain(args.iter().map(|a| nul(a.as_bytes())))
        .collect::<std::io::Result<_>>()?;
    let mut ptrs: Vec<*const c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let mut fds = [0 as c_int; 2];
    // SAFETY: plain syscalls on our own descriptors; the child only calls
    // async-signal-safe functions (dup2, close, execve, _exit) before exec.
    unsafe {
        if pipe(fds.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let pid = fork();
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            close(fds[0]);
            close(fds[1]);
            return Err(e);
        }
        if pid == 0 {
            dup2(fds[1], 1);
            close(fds[0]);
            close(fds[1]);
            execve(path.as_ptr(), ptrs.as_ptr(), environ);
            _exit(127);
        }
        close(fds[1]);
        // The boot path's reader, not a second one through std's.
        let read = crate::node::nodefs::read_up_to(std::fs::File::from_raw_fd(fds[0]), usize::MAX);
        let mut status: c_int = 0;
        while waitpid(pid, &mut status, 0) < 0 {
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return Err(std::io::Error::last_os_error());
            }
        }
        let out = read?;
        // WIFEXITED / WEXITSTATUS.
        let code = (status & 0x7f == 0).then_some((status >> 8) & 0xff);
        Ok((code, out))
    }
}

impl Transport for Curl {
    fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<(&str, &str)>,
    ) -> Result<Response, Failure> {
        // -q first: no ~/.curlrc. Errors go to stdout, after the body.
        let mut args: Vec<String> = [
            "-q",
            "-sS",
            "--stderr",
            "-",
            "--connect-timeout",
            "5",
            "--max-time",
            "20",
            "-X",
            method,
            "-H",
            "Accept: application/json",
            "--cert",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(curl_path(&self.creds.cert));
        args.push("--key".into());
        args.push(curl_path(&self.creds.key));
        if let Some(ca) = &self.creds.ca {
            args.push("--cacert".into());
            args.push(ca.display().to_string());
        }
        if let Some((content_type, text)) = body {
            args.push("-H".into());
            args.push(format!("Content-Type: {content_type}"));
            // --data-raw: no `@file` reading; our bodies are a few KiB.
            args.push("--data-raw".into());
            args.push(text.into());
        }
        args.push("-w".into());
        args.push("\n%{http_code}".into());
        args.push("--".into());
        args.push(format!("{}{path}", self.creds.server));
        self.sent += 1;
        let (code, out) = run_captured(&self.program, &args)
            .map_err(|e| Failure::Fatal(format!("running {}: {e}", self.program.display())))?;
        let stdout = String::from_utf8_lossy(&out);
        // curl's own message (`curl: (7) ...`), not the `-w` status after it.
        let why = stdout
            .lines()
            .rfind(|l| l.starts_with("curl: "))
            .unwrap_or("")
            .to_string();
        let fatal = |what: &str| Err(Failure::Fatal(format!("{what}: {why}")));
        match code {
            Some(0) => {}
            // Resolve, connect, timeout, TLS connect, empty reply, send, receive.
            Some(6 | 7 | 28 | 35 | 52 | 55 | 56) => {
                return Err(Failure::Unreachable(format!(
                    "{} unreachable: {why}",
                    self.creds.server
                )));
            }
            Some(58 | 59 | 66) => return fatal("kubelet's client certificate or key"),
            Some(60 | 77 | 83) => {
                return fatal(&format!(
                    "the kubeconfig's CA does not verify {}",
                    self.creds.server
                ));
            }
            Some(127) => return fatal(&format!("{} could not run", self.program.display())),
            Some(c) => return fatal(&format!("curl failed (exit {c})")),
            None => return fatal("curl was killed"),
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
