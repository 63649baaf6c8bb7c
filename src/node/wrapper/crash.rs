//! A crash of ours must not keep kubelet from starting.
//!
//! The shipped wrapper is built with `-Cpanic=immediate-abort` (no panic
//! machinery, no unwinder: 57 KB less to carry in every MachineConfig), so a
//! panic there is a trap instruction (SIGILL on x86_64, SIGTRAP on aarch64),
//! and `abort()`, an allocation failure and std's stack-overflow report end
//! in SIGABRT; a stack overflow is SIGSEGV on the guard page (the handler
//! runs on a stack of its own for it). Once the original kubelet command is
//! known (`arm`), a handler
//! for those signals writes the one journal line and execs that command
//! unchanged. Before it is known there is nothing to start: the handler
//! restores the default action, the wrapper dies, systemd restarts the unit
//! and the crash-loop guard starts kubelet unchanged next time.
//!
//! Once the static labels and taints are merged into the command (before any
//! node rule runs, `arm_static`), a crash execs that command instead: a
//! crash while evaluating the rules costs the rule-derived part only.
//!
//! Builds with unwinding panics (tests, the CLI's `explain`) get the same
//! exec from the panic hook in `boot`, with the panic's message.

use std::ffi::{OsString, c_int};
use std::path::Path;
use std::sync::OnceLock;

use super::exec::{self, Prepared, SIG_DFL, SigAction, sigaction};

const SIGILL: c_int = 4;
const SIGTRAP: c_int = 5;
const SIGABRT: c_int = 6;
const SIGBUS: c_int = 7;
const SIGSEGV: c_int = 11;
const SA_ONSTACK: c_int = 0x0800_0000;
const STDERR: c_int = 2;

/// `stack_t`.
#[repr(C)]
struct AltStack {
    sp: *mut u8,
    flags: c_int,
    size: usize,
}

/// Where the handler runs when the stack overflowed (in .bss: costs no
/// payload bytes; the handler itself needs a few hundred).
const ALT_STACK_SIZE: usize = 64 * 1024;
static mut ALT_STACK: [u8; ALT_STACK_SIZE] = [0; ALT_STACK_SIZE];

unsafe extern "C" {
    fn signal(sig: c_int, handler: usize) -> usize;
    fn sigaltstack(new: *const AltStack, old: *mut AltStack) -> c_int;
    fn write(fd: c_int, buf: *const u8, len: usize) -> isize;
}

/// The original command, made ready before any crash can happen: the
/// handler only reads it.
static FALLBACK: OnceLock<Prepared> = OnceLock::new();
/// The command with the static labels and taints (and the fence, where the
/// rules may give a taint), and the journal line that says so: its head,
/// without the reason ([`STATIC_REASON`]), and its tail after the reason
/// (how to lift the fence; may be empty), without the newline.
static STATIC_FALLBACK: OnceLock<(Prepared, Box<str>, Box<str>)> = OnceLock::new();
const STATIC_REASON: &[u8] = b": internal error (a crash; a bug, please report)";

const CRASH_LINE: &[u8] = b"kubelet-labeler: starting kubelet without our labels/taints: \
internal error (a crash; a bug, please report)\n";
const EXEC_FAILED: &[u8] = b"kubelet-labeler: executing the original kubelet command failed\n";

/// Install the handlers; call first thing in `main`.
pub fn install() {
    let stack = AltStack {
        sp: (&raw mut ALT_STACK).cast(),
        flags: 0,
        size: ALT_STACK_SIZE,
    };
    let action = SigAction {
        handler: on_crash as extern "C" fn(c_int) as usize,
        mask: [0; 16],
        flags: SA_ONSTACK,
        restorer: 0,
    };
    // SAFETY: the stack is ours alone (one thread), and the handler only
    // reads data set before it and calls async-signal-safe functions.
    unsafe {
        sigaltstack(&stack, std::ptr::null_mut());
        for sig in [SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGSEGV] {
            sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// From now on a crash execs `executable` (a path on this host) with `argv`
/// (argv[0] first). Returns false when the command cannot be made into C
/// strings (a NUL byte: kubelet could not be started with it either).
pub fn arm(executable: &Path, argv: &[OsString]) -> bool {
    exec::prepare(executable, argv).is_some_and(|p| FALLBACK.set(p).is_ok())
}

/// From now on a crash execs this command (the original with the static
/// labels and taints, fenced where the rules may give a taint) and writes
/// `head`, the reason, `tail` and a newline.
pub fn arm_static(executable: &Path, argv: &[OsString], head: String, tail: String) -> bool {
    exec::prepare(executable, argv).is_some_and(|p| {
        STATIC_FALLBACK
            .set((p, head.into_boxed_str(), tail.into_boxed_str()))
            .is_ok()
    })
}

/// The journal line's head for a crash from now on: what [`exec_fallback`]
/// starts, up to the reason.
pub fn fallback_line() -> &'static str {
    match STATIC_FALLBACK.get() {
        Some((_, line, _)) => line,
        None => "kubelet-labeler: starting kubelet without our labels/taints",
    }
}

/// What the journal line for a crash ends with after the reason.
pub fn fallback_tail() -> &'static str {
    STATIC_FALLBACK.get().map_or("", |(_, _, tail)| tail)
}

/// Whether `arm` has run.
pub fn armed() -> bool {
    FALLBACK.get().is_some()
}

/// Exec the armed command unchanged; returns only if there is none or the
/// exec failed. Safe to call from a signal handler.
pub fn exec_fallback() {
    if let Some((p, _, _)) = STATIC_FALLBACK.get() {
        exec::exec(p);
    }
    let Some(p) = FALLBACK.get() else { return };
    // exec restores the inherited signal mask: the handler's signal is
    // blocked while it runs, and kubelet must not start with it blocked.
    exec::exec(p);
    // SAFETY: a static byte string.
    unsafe { write(STDERR, EXEC_FAILED.as_ptr(), EXEC_FAILED.len()) };
}

extern "C" fn on_crash(sig: c_int) {
    if let Some((_, line, tail)) = STATIC_FALLBACK.get() {
        // SAFETY: strings set before any crash, never changed after.
        unsafe {
            write(STDERR, line.as_ptr(), line.len());
            write(STDERR, STATIC_REASON.as_ptr(), STATIC_REASON.len());
            write(STDERR, tail.as_ptr(), tail.len());
            write(STDERR, b"\n".as_ptr(), 1);
        }
        exec_fallback();
    } else if armed() {
        // SAFETY: a static byte string.
        unsafe { write(STDERR, CRASH_LINE.as_ptr(), CRASH_LINE.len()) };
        exec_fallback();
    }
    // Nothing to start: die of the signal as we would have without us (a
    // trap or fault re-executes and now kills; abort() raises again).
    // SAFETY: resetting a handler is async-signal-safe.
    unsafe { signal(sig, SIG_DFL) };
}
