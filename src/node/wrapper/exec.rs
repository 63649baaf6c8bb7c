//! `execve` in place, handing kubelet the process state systemd gave us.
//!
//! systemd starts a service with an empty signal mask and, unless the unit
//! says `IgnoreSIGPIPE=no`, SIGPIPE ignored. Rust's runtime ignores SIGPIPE
//! before `main`, and `std::process::Command::exec` sets it back to the
//! default, so kubelet would start with a disposition systemd never gave it.
//! A constructor that runs before the runtime (`.init_array`) records what
//! we inherited; `exec` puts exactly that back. Doing the exec here, not
//! through `Command`, also keeps std's process-spawning code out of the
//! payload, and is what the crash handler calls (async-signal-safe: no
//! allocation, no locks).

use std::ffi::{CString, OsString, c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub(super) const SIGPIPE: c_int = 13;
pub(super) const SIG_DFL: usize = 0;
const SIG_IGN: usize = 1;
const SIG_SETMASK: c_int = 2;

/// `struct sigaction` as Linux libcs lay it out on x86_64 and aarch64.
#[repr(C)]
pub(super) struct SigAction {
    pub handler: usize,
    pub mask: [u64; 16],
    pub flags: c_int,
    pub restorer: usize,
}

unsafe extern "C" {
    pub(super) fn sigaction(sig: c_int, new: *const SigAction, old: *mut SigAction) -> c_int;
    fn sigprocmask(how: c_int, set: *const u64, old: *mut u64) -> c_int;
    fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char)
    -> c_int;
    static environ: *const *const c_char;
}

/// Signals 1-64 blocked when the process started (a kernel `sigset_t`).
static INHERITED_MASK: AtomicU64 = AtomicU64::new(0);
/// Whether SIGPIPE was ignored when the process started.
static INHERITED_SIGPIPE_IGNORED: AtomicBool = AtomicBool::new(true);

extern "C" fn record_inherited() {
    let mut mask = [0u64; 16];
    let mut old = SigAction {
        handler: SIG_DFL,
        mask: [0; 16],
        flags: 0,
        restorer: 0,
    };
    // SAFETY: null `new` only reads the current state into our buffers.
    unsafe {
        if sigprocmask(SIG_SETMASK, std::ptr::null(), mask.as_mut_ptr()) == 0 {
            INHERITED_MASK.store(mask[0], Ordering::Relaxed);
        }
        if sigaction(SIGPIPE, std::ptr::null(), &mut old) == 0 {
            INHERITED_SIGPIPE_IGNORED.store(old.handler == SIG_IGN, Ordering::Relaxed);
        }
    }
}

// Runs before Rust's runtime sets SIGPIPE to ignored (musl and glibc run
// `.init_array` before `main`).
#[used]
#[unsafe(link_section = ".init_array")]
static RECORD_INHERITED: extern "C" fn() = record_inherited;

/// A command made ready for `execve` ahead of time.
pub struct Prepared {
    path: CString,
    /// Keeps the strings `argv_ptrs` points into alive.
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const c_char>,
}

// The pointers are into `_argv`, owned alongside them.
unsafe impl Send for Prepared {}
unsafe impl Sync for Prepared {}

/// `executable` (a path on this host) with `argv` (argv[0] first), as C
/// strings; None when one has a NUL byte (no exec could take it).
pub fn prepare(executable: &Path, argv: &[OsString]) -> Option<Prepared> {
    let path = CString::new(executable.as_os_str().as_bytes()).ok()?;
    let argv = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    let mut argv_ptrs: Vec<*const c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    Some(Prepared {
        path,
        _argv: argv,
        argv_ptrs,
    })
}

/// Restore the inherited signal state and exec; returns only on failure,
/// with the exec's error. Same PID, environment and file descriptors.
pub fn exec(p: &Prepared) -> std::io::Error {
    let pipe = SigAction {
        handler: if INHERITED_SIGPIPE_IGNORED.load(Ordering::Relaxed) {
            SIG_IGN
        } else {
            SIG_DFL
        },
        mask: [0; 16],
        flags: 0,
        restorer: 0,
    };
    let mut mask = [0u64; 16];
    mask[0] = INHERITED_MASK.load(Ordering::Relaxed);
    // SAFETY: all pointers are valid, NUL-terminated and outlive the call.
    unsafe {
        sigaction(SIGPIPE, &pipe, std::ptr::null_mut());
        sigprocmask(SIG_SETMASK, mask.as_ptr(), std::ptr::null_mut());
        execve(p.path.as_ptr(), p.argv_ptrs.as_ptr(), environ);
    }
    std::io::Error::last_os_error()
}

/// Whether the kernel takes `p`'s argv with this environment, without
/// exec'ing: execve with one word more, before argv[0], at address 1 (page
/// 0 is never mapped; a kernel address fails sooner, on Linux 6.18). The
/// kernel counts the words, then copies the program's path, the
/// environment and argv from the last word to the first, checking its
/// limits as it goes: it returns E2BIG when they do not fit, else EFAULT at
/// that first word, before it has touched this process. (The extra pointer
/// makes it 8 bytes stricter than the exec itself.) A kernel that looked at
/// every word first would say EFAULT always: the exec's own E2BIG remains.
pub fn probe(p: &Prepared) -> std::io::Error {
    let mut argv = Vec::with_capacity(p.argv_ptrs.len() + 1);
    argv.push(std::ptr::without_provenance::<c_char>(1));
    argv.extend_from_slice(&p.argv_ptrs);
    // SAFETY: the path and the argv array are valid and NUL-terminated; the
    // kernel only reads through the bad pointer, and fails there.
    unsafe {
        execve(p.path.as_ptr(), argv.as_ptr(), environ);
    }
    std::io::Error::last_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_nul_bytes() {
        assert!(prepare(Path::new("/bin/x\0"), &[]).is_none());
        assert!(prepare(Path::new("/bin/x"), &["a\0b".into()]).is_none());
        let p = prepare(Path::new("/bin/x"), &["x".into(), "-v".into()]).unwrap();
        assert_eq!(p.argv_ptrs.len(), 3);
        assert!(p.argv_ptrs[2].is_null());
    }

    #[test]
    fn the_probe_execs_nothing_and_sees_e2big() {
        let ok = prepare(Path::new("/bin/true"), &["true".into()]).unwrap();
        assert_eq!(probe(&ok).raw_os_error(), Some(14), "EFAULT");
        // One word over MAX_ARG_STRLEN (32 pages of 4 KiB or more).
        let long = OsString::from("x".repeat(32 * 65536));
        let big = prepare(Path::new("/bin/true"), &["true".into(), long]).unwrap();
        assert_eq!(probe(&big).raw_os_error(), Some(7), "E2BIG");
        let missing = prepare(Path::new("/nonexistent/kubelet"), &["k".into()]).unwrap();
        assert_eq!(probe(&missing).kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn a_failed_exec_says_why() {
        let p = prepare(Path::new("/nonexistent/kubelet"), &["kubelet".into()]).unwrap();
        assert_eq!(exec(&p).kind(), std::io::ErrorKind::NotFound);
    }
}
