//! HTTPS to the API server through the host's `curl` (std only here: no TLS
//! of our own; curl brings TLS 1.3 and the host's crypto policy), with
//! kubelet's client certificate.
//!
//! What reaches curl is fenced: https only (also after a redirect), no URL
//! globbing, no `~/.curlrc`; inline kubeconfig data reaches it as a memfd
//! (`/proc/self/fd/N`), never as a file on disk, and so does a request's
//! body (an argument is at most 128 KiB, a Node's labels may be more); curl
//! dies with us
//! (`PR_SET_PDEATHSIG`), so a stop or a kill leaves nothing behind. Its
//! answer is read up to [`MAX_BODY`], no further.

use std::ffi::{CString, c_char, c_int, c_long, c_uint};
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

/// Why no answer came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Worth another try later: the connection failed or was cut (refused,
    /// reset, timed out, an HTTP/2 stream or connection closed, a partial
    /// answer). A write may or may not have landed.
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

    /// Whether the time for requests is spent: none is sent past it.
    fn spent(&self) -> bool {
        false
    }
}

/// A file curl reads: kubeconfig data (inline, or read from the file it
/// names) held in a memfd, no name on any filesystem, gone with the last
/// process holding it.
#[derive(Debug)]
pub struct CurlFile(OwnedFd);

/// The files curl reads.
pub struct Credentials {
    pub server: String,
    pub ca: Option<CurlFile>,
    pub cert: CurlFile,
    pub key: CurlFile,
}

pub struct Curl {
    pub program: PathBuf,
    pub creds: Credentials,
    /// Requests sent, for the summary and the benchmarks.
    pub sent: usize,
    /// When the service's start must be over: each request's `--max-time`
    /// ends by it (review 45 r45c F1), at least a second, at most 20.
    pub deadline: Option<Instant>,
}

/// The most one request takes (curl's `--max-time`).
pub const REQUEST_MAX_SECS: u64 = 20;

/// The most of an answer read: a Node is at most etcd's 1.5 MiB request
/// limit as stored, and its JSON about as long; a longer answer is no
/// Node's and is refused, not buffered.
pub const MAX_BODY: usize = 4 << 20;

/// What curl writes after the body: the `-w` status.
const TRAILER: usize = 4096;

/// The most of curl's own messages (stderr) read: one line of at most
/// CURL_ERROR_SIZE (256) bytes and its prefix.
const MESSAGES: usize = 4096;

/// Who sends our requests, in the audit log and as the Node's field
/// manager.
pub const FIELD_MANAGER: &str = "kubelet-labeler";
const USER_AGENT: &str = concat!("kubelet-labeler/", env!("CARGO_PKG_VERSION"));

impl CurlFile {
    /// How curl names it: our memfd, which curl inherits.
    fn arg(&self) -> String {
        format!("/proc/self/fd/{}", self.0.as_raw_fd())
    }

    /// `data` in a memfd.
    pub fn memory(name: &str, data: &[u8]) -> std::io::Result<CurlFile> {
        use std::io::Write;
        let c = CString::new(name).map_err(|_| std::io::Error::other("a NUL in a name"))?;
        // SAFETY: a NUL-terminated name; the kernel returns a new fd that
        // nothing else owns.
        let fd = unsafe { memfd_create(c.as_ptr(), MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: see above.
        let mut f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        f.write_all(data)?;
        Ok(CurlFile(f.into()))
    }
}

/// curl on PATH (RHCOS, Fedora CoreOS, Debian/Ubuntu images ship it at
/// /usr/bin/curl).
pub fn find_curl() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join("curl"))
        .find(|p| p.is_file())
}

const MFD_CLOEXEC: c_uint = 1;
const F_SETFD: c_int = 2;
const PR_SET_PDEATHSIG: c_int = 1;
const SIGKILL: c_int = 9;

unsafe extern "C" {
    fn fork() -> c_int;
    fn pipe(fds: *mut c_int) -> c_int;
    fn dup2(old: c_int, new: c_int) -> c_int;
    fn close(fd: c_int) -> c_int;
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
    fn prctl(option: c_int, arg2: c_long, ...) -> c_int;
    fn getpid() -> c_int;
    fn getppid() -> c_int;
    fn kill(pid: c_int, sig: c_int) -> c_int;
    fn memfd_create(name: *const c_char, flags: c_uint) -> c_int;
    fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char)
    -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn _exit(code: c_int) -> !;
    static environ: *const *const c_char;
}

/// Up to `limit` bytes of `from`; None past it, having read at most
/// `limit` + one buffer (the rest is never read).
pub fn read_bounded(from: &mut dyn Read, limit: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 16 << 10];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return Ok(Some(out)),
            Ok(n) => {
                if out.len() + n > limit {
                    return Ok(None);
                }
                out.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// What running curl gave: its exit code (None: killed), its output or
/// None when the output passed the limit (curl was killed then), and its
/// stderr (at most [`MESSAGES`] bytes).
type Captured = (Option<i32>, Option<Vec<u8>>, Vec<u8>);

/// Run `program` with `args` and our environment, its stdout captured up
/// to `limit` bytes and its stderr apart (review 45 r45c F3: with both in
/// one stream, an answer's last line `curl: (60) ...` posed as curl's own
/// message); `keep`: descriptors the child inherits. A fork and an exec, not std's
/// `Command`: a tenth of its code in the wrapper's payload. The child dies
/// with us.
fn run_captured(
    program: &Path,
    args: &[String],
    keep: &[c_int],
    limit: usize,
) -> std::io::Result<Captured> {
    use std::os::unix::ffi::OsStrExt;
    let nul = |b: &[u8]| CString::new(b).map_err(|_| std::io::Error::other("a NUL in an argument"));
    let path = nul(program.as_os_str().as_bytes())?;
    let argv: Vec<CString> = std::iter::once(Ok(path.clone()))
        .chain(args.iter().map(|a| nul(a.as_bytes())))
        .collect::<std::io::Result<_>>()?;
    let mut ptrs: Vec<*const c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let (mut fds, mut errs) = ([0 as c_int; 2], [0 as c_int; 2]);
    // SAFETY: plain syscalls on our own descriptors; the child only calls
    // async-signal-safe functions (prctl, getppid, fcntl, dup2, close,
    // execve, _exit) before exec.
    unsafe {
        if pipe(fds.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pipe(errs.as_mut_ptr()) != 0 {
            let e = std::io::Error::last_os_error();
            close(fds[0]);
            close(fds[1]);
            return Err(e);
        }
        let parent = getpid();
        let pid = fork();
        if pid < 0 {
            let e = std::io::Error::last_os_error();
            for fd in fds.into_iter().chain(errs) {
                close(fd);
            }
            return Err(e);
        }
        if pid == 0 {
            // Killed when we end, however we end (a stop's SIGTERM, a
            // start timeout's SIGKILL): no curl outlives the run. If we
            // ended before this line, getppid says so.
            if prctl(PR_SET_PDEATHSIG, SIGKILL as c_long) != 0 || getppid() != parent {
                _exit(127);
            }
            for &fd in keep {
                fcntl(fd, F_SETFD, 0);
            }
            dup2(fds[1], 1);
            dup2(errs[1], 2);
            for fd in fds.into_iter().chain(errs) {
                close(fd);
            }
            execve(path.as_ptr(), ptrs.as_ptr(), environ);
            _exit(127);
        }
        close(fds[1]);
        close(errs[1]);
        let mut pipe_out = std::fs::File::from_raw_fd(fds[0]);
        let mut pipe_err = std::fs::File::from_raw_fd(errs[0]);
        // stdout first: what curl says on stderr (-sS: its one error
        // line) fits the pipe's buffer while it waits.
        let read = read_bounded(&mut pipe_out, limit);
        if !matches!(read, Ok(Some(_))) {
            // Too long, or unreadable: curl is stopped, not waited for.
            kill(pid, SIGKILL);
        }
        drop(pipe_out);
        // Past its bound (never curl's own), none.
        let messages = read_bounded(&mut pipe_err, MESSAGES).ok().flatten();
        drop(pipe_err);
        let mut status: c_int = 0;
        while waitpid(pid, &mut status, 0) < 0 {
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return Err(std::io::Error::last_os_error());
            }
        }
        let out = read?;
        // WIFEXITED / WEXITSTATUS.
        let code = (status & 0x7f == 0).then_some((status >> 8) & 0xff);
        Ok((code, out, messages.unwrap_or_default()))
    }
}

impl Curl {
    /// curl's arguments for one request (everything but the program);
    /// `body`: its content type and the memfd that holds it.
    pub fn args(&self, method: &str, path: &str, body: Option<(&str, &CurlFile)>) -> Vec<String> {
        // -q first: no ~/.curlrc. Errors go to stderr, apart.
        let mut args: Vec<String> = [
            "-q",
            "-sS",
            // The URL is the kubeconfig's: `[1-40]` or `{a,b}` in it is
            // text, never a list of requests or hosts.
            "--globoff",
            "--proto",
            "=https",
            "--proto-redir",
            "=https",
            "--max-filesize",
            "4194304",
            "--connect-timeout",
            "5",
            "--user-agent",
            USER_AGENT,
            "-X",
            method,
            "-H",
            "Accept: application/json",
            "--cert",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(self.creds.cert.arg());
        let left = (self.deadline).map(|d| d.saturating_duration_since(Instant::now()));
        let secs = left.map_or(REQUEST_MAX_SECS, |l| l.as_secs().clamp(1, REQUEST_MAX_SECS));
        args.push("--max-time".into());
        args.push(secs.to_string());
        args.push("--key".into());
        args.push(self.creds.key.arg());
        if let Some(ca) = &self.creds.ca {
            args.push("--cacert".into());
            args.push(ca.arg());
            // The kubeconfig's CA alone, as kubelet trusts it: curl's
            // built-in CA directory (/etc/ssl/certs on Debian) would let a
            // certificate from any CA the host trusts answer for the API
            // server. No file is found under /dev/null.
            args.push("--capath".into());
            args.push("/dev/null".into());
        }
        if let Some((content_type, data)) = body {
            args.push("-H".into());
            args.push(format!("Content-Type: {content_type}"));
            // --data-binary: sent as it is (no newline stripped).
            args.push("--data-binary".into());
            args.push(format!("@{}", data.arg()));
        }
        args.push("-w".into());
        args.push("\n%{http_code}".into());
        args.push("--".into());
        // Every write names us as its field manager.
        let query = if method == "GET" {
            String::new()
        } else {
            format!("?fieldManager={FIELD_MANAGER}")
        };
        args.push(format!("{}{path}{query}", self.creds.server));
        args
    }
}

impl Transport for Curl {
    fn spent(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<(&str, &str)>,
    ) -> Result<Response, Failure> {
        let data = match body {
            Some((_, text)) => Some(
                CurlFile::memory("body", text.as_bytes())
                    .map_err(|e| Failure::Fatal(format!("holding the request body: {e}")))?,
            ),
            None => None,
        };
        let args = self.args(method, path, body.map(|(k, _)| k).zip(data.as_ref()));
        let keep: Vec<c_int> = [
            Some(&self.creds.cert),
            Some(&self.creds.key),
            self.creds.ca.as_ref(),
            data.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(|f| f.0.as_raw_fd())
        .collect();
        self.sent += 1;
        let (code, out, messages) =
            run_captured(&self.program, &args, &keep, MAX_BODY + TRAILER)
                .map_err(|e| Failure::Fatal(format!("running {}: {e}", self.program.display())))?;
        let Some(out) = out else {
            return Err(Failure::Fatal(format!(
                "{} answered more than {} MiB, more than any Node",
                self.creds.server,
                MAX_BODY >> 20
            )));
        };
        // Valid UTF-8 is kept as it is (no second copy).
        let stdout = String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let messages = String::from_utf8_lossy(&messages);
        classify(code, &messages, &self.creds.server, &self.program)?;
        // The `-w` status is the last line; the body is what precedes it.
        let cut = stdout.rfind('\n').unwrap_or(0);
        let status_text = stdout[cut..].trim();
        let status: u16 = status_text
            .parse()
            .map_err(|_| Failure::Fatal(format!("curl gave no HTTP status: {status_text:?}")))?;
        if status == 0 {
            return Err(Failure::Unreachable(format!(
                "{} gave no answer",
                self.creds.server
            )));
        }
        let mut body = stdout;
        body.truncate(cut);
        Ok(Response { status, body })
    }
}

/// curl's exit code as a Failure (Ok: it ran to the end); `messages` is
/// what it printed on stderr, its message (`curl: (7) ...`) there.
fn classify(
    code: Option<i32>,
    messages: &str,
    server: &str,
    program: &Path,
) -> Result<(), Failure> {
    let why = messages
        .lines()
        .rfind(|l| l.starts_with("curl: "))
        .unwrap_or("")
        .chars()
        .take(300)
        .collect::<String>();
    let fatal = |what: &str| Err(Failure::Fatal(format!("{what}: {why}")));
    match code {
        Some(0) => Ok(()),
        // No connection: resolve (a proxy, the host), connect, a timeout,
        // the TLS handshake.
        Some(5 | 6 | 7 | 28 | 35) => {
            Err(Failure::Unreachable(format!("{server} unreachable: {why}")))
        }
        // The connection was cut (an API server stopped or restarted): an
        // HTTP/2 framing error or stream closed, a partial answer, an empty
        // reply, send, receive, HTTP/3.
        Some(16 | 18 | 52 | 55 | 56 | 92 | 95) => Err(Failure::Unreachable(format!(
            "{server} cut the connection: {why}"
        ))),
        Some(1) => fatal(&format!("{server} is not an https:// URL curl accepts")),
        Some(58 | 59 | 66) => fatal("kubelet's client certificate or key"),
        Some(60 | 77 | 83) => fatal(&format!("the kubeconfig's CA does not verify {server}")),
        Some(63) => fatal(&format!(
            "{server} answered more than {} MiB, more than any Node",
            MAX_BODY >> 20
        )),
        Some(127) => fatal(&format!("{} could not run", program.display())),
        Some(c) => fatal(&format!("curl failed (exit {c})")),
        None => fatal("curl was killed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An endless source that counts what was read from it.
    struct Endless(usize);

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            buf.fill(b'a');
            self.0 += buf.len();
            Ok(buf.len())
        }
    }

    #[test]
    fn a_body_over_the_cap_is_refused_without_reading_it_all() {
        let mut src = Endless(0);
        assert_eq!(read_bounded(&mut src, MAX_BODY).unwrap(), None);
        assert!(src.0 <= MAX_BODY + (16 << 10), "read {} bytes", src.0);
        let mut small: &[u8] = b"{}\n200";
        assert_eq!(
            read_bounded(&mut small, MAX_BODY).unwrap().as_deref(),
            Some(&b"{}\n200"[..])
        );
    }

    fn curl(server: &str) -> Curl {
        Curl {
            deadline: None,
            program: "/usr/bin/curl".into(),
            creds: Credentials {
                server: server.into(),
                ca: None,
                cert: CurlFile::memory("cert", b"c").unwrap(),
                key: CurlFile::memory("key", b"secret").unwrap(),
            },
            sent: 0,
        }
    }

    #[test]
    fn curl_is_fenced_and_names_us() {
        let c = curl("https://h:6443/[1-40]");
        let body = CurlFile::memory("body", b"{}").unwrap();
        let a = c.args(
            "PATCH",
            "/api/v1/nodes/n",
            Some(("application/json", &body)),
        );
        assert_eq!(a[0], "-q", "no ~/.curlrc: -q must come first");
        let has = |pair: &[&str]| a.windows(pair.len()).any(|w| w == pair);
        assert!(has(&["--globoff"]));
        assert!(has(&["--max-filesize", &MAX_BODY.to_string()]));
        assert!(has(&["--proto", "=https"]) && has(&["--proto-redir", "=https"]));
        assert!(has(&["--user-agent", USER_AGENT]));
        assert!(USER_AGENT.starts_with("kubelet-labeler/"));
        for what in ["--cert", "--key", "--data-binary"] {
            let f = &a[a.iter().position(|x| x == what).unwrap() + 1];
            assert!(
                f.trim_start_matches('@').starts_with("/proc/self/fd/"),
                "{what} {f}"
            );
        }
        assert_eq!(
            a.last().unwrap(),
            "https://h:6443/[1-40]/api/v1/nodes/n?fieldManager=kubelet-labeler"
        );
        assert_eq!(a[a.len() - 2], "--");
        let get = c.args("GET", "/api/v1/nodes/n", None);
        assert_eq!(get.last().unwrap(), "https://h:6443/[1-40]/api/v1/nodes/n");
    }

    /// The kubeconfig's CA is the only one trusted, as by kubelet: curl's
    /// built-in CA directory (the host's public and corporate CAs) is
    /// replaced by one where no certificate is found.
    #[test]
    fn only_the_kubeconfigs_ca_is_trusted() {
        let mut c = curl("https://h:6443");
        c.creds.ca = Some(CurlFile::memory("ca", b"ca").unwrap());
        let a = c.args("GET", "/api/v1/nodes/n", None);
        let at = a.iter().position(|x| x == "--cacert").unwrap();
        assert!(a[at + 1].starts_with("/proc/self/fd/"));
        assert_eq!(a.iter().filter(|x| *x == "--capath").count(), 1, "{a:?}");
        let at = a.iter().position(|x| x == "--capath").unwrap();
        assert_eq!(a[at + 1], "/dev/null");
    }

    #[test]
    fn a_memfd_holds_the_data_for_curl_and_no_file_does() {
        let f = CurlFile::memory("key", b"secret").unwrap();
        let at = f.arg();
        assert_eq!(std::fs::read(&at).unwrap(), b"secret");
        let link = std::fs::read_link(&at).unwrap();
        assert!(link.to_string_lossy().starts_with("/memfd:key"), "{link:?}");
        drop(f);
        assert!(std::fs::read(&at).is_err());
    }

    /// Each request ends by the start's deadline: at least a second, at
    /// most 20 (review 45 r45c F1).
    #[test]
    fn a_request_s_time_ends_by_the_deadline() {
        let max_time = |deadline: Option<Instant>| {
            let mut c = curl("https://s");
            c.deadline = deadline;
            let args = c.args("GET", "/x", None);
            let at = args.iter().position(|a| a == "--max-time").unwrap();
            (args[at + 1].clone(), c.spent())
        };
        let now = Instant::now();
        let secs = std::time::Duration::from_secs;
        assert_eq!(max_time(None), ("20".into(), false));
        assert_eq!(max_time(Some(now + secs(600))), ("20".into(), false));
        assert_eq!(
            max_time(Some(now + secs(9) + secs(1) / 2)),
            ("9".into(), false)
        );
        assert_eq!(max_time(Some(now)), ("1".into(), true));
    }

    #[test]
    fn cut_connections_are_worth_another_try() {
        let p = Path::new("curl");
        for code in [6, 7, 16, 18, 28, 35, 52, 55, 56, 92] {
            let r = classify(Some(code), "curl: (x) cut\n000", "https://s", p);
            assert!(matches!(r, Err(Failure::Unreachable(_))), "{code}: {r:?}");
        }
        for code in [1, 58, 60, 63, 127] {
            let r = classify(Some(code), "", "https://s", p);
            assert!(matches!(r, Err(Failure::Fatal(_))), "{code}: {r:?}");
        }
        assert!(classify(Some(0), "", "https://s", p).is_ok());
    }

    /// A body past an argument's 128 KiB (a Node's labels may be more)
    /// reaches curl whole: a stand-in for it answers with the body it read
    /// (exec refused it as an argument: E2BIG).
    #[test]
    fn a_body_past_an_arguments_limit_reaches_curl() {
        if !crate::skipped::need("/bin/sh") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("curl");
        std::fs::write(
            &fake,
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --data-binary ] && f=${2#@}; shift; done\n\
             cat \"$f\"; printf '\\n200'\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = curl("https://h:6443");
        c.program = fake;
        let body = format!("{{\"a\":\"{}\"}}\n", "x".repeat(200 << 10));
        let r = c
            .request(
                "PATCH",
                "/api/v1/nodes/n",
                Some(("application/json", &body)),
            )
            .unwrap();
        assert_eq!((r.status, r.body.len()), (200, body.len()));
        assert!(r.body == body);
    }

    /// A real curl, when here: the answer is read as far as the cap, the
    /// child stopped, and no error pretends it was an HTTP answer.
    #[test]
    fn an_answer_past_the_cap_stops_curl() {
        if !crate::skipped::need("/bin/sh") {
            return;
        }
        let (code, out, _) = run_captured(
            Path::new("/bin/sh"),
            &["-c".into(), "exec yes 2>/dev/null".into()],
            &[],
            1 << 20,
        )
        .unwrap();
        assert_eq!((code, out), (None, None));
        let (code, out, _) = run_captured(
            Path::new("/bin/sh"),
            &["-c".into(), "printf '{}\\n200'".into()],
            &[],
            1 << 20,
        )
        .unwrap();
        assert_eq!((code, out.as_deref()), (Some(0), Some(&b"{}\n200"[..])));
        // Review 45 r45c F3: what the answer says is never curl's message.
        let (code, out, messages) = run_captured(
            Path::new("/bin/sh"),
            &[
                "-c".into(),
                "printf 'curl: (60) forged'; echo 'curl: (28) real' >&2; exit 28".into(),
            ],
            &[],
            1 << 20,
        )
        .unwrap();
        assert_eq!(out.as_deref(), Some(&b"curl: (60) forged"[..]));
        let r = classify(
            code,
            &String::from_utf8_lossy(&messages),
            "https://s",
            Path::new("c"),
        );
        assert!(
            matches!(&r, Err(Failure::Unreachable(m)) if m.ends_with("unreachable: curl: (28) real")),
            "{r:?}"
        );
    }
}
