//! A crash of ours must not keep kubelet from starting.
//!
//! The shipped wrapper is built with `-Cpanic=immediate-abort` (no panic
//! machinery, no unwinder: 57 KB less to carry in every MachineConfig), so a
//! panic there is a trap instruction (SIGILL on x86_64, SIGTRAP on aarch64),
//! and `abort()`, an allocation failure and std's stack-overflow report end
//! in SIGABRT; a stack overflow is SIGSEGV on the guard page (the handler
//! runs on a stack of its own for it). Once the original kubelet command is
//! known (`arm`), a handler
//! for those signals writes the one journal line and execs that command:
//! unchanged, or, where static taints or node rules are configured, with
//! the fence alone (a crash before they are merged must not start kubelet
//! without them and unfenced). Before it is known there is nothing to
//! start: the handler restores the default action, the wrapper dies,
//! systemd restarts the unit and the crash-loop guard takes over.
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

/// A command made ready before any crash can happen (the handler only
/// reads it), and the journal line that says what it starts: its head,
/// without the reason ([`STATIC_REASON`]), and its tail after the reason
/// (how to lift the fence; may be empty), without the newline.
type Fallback = (Prepared, Box<str>, Box<str>);
/// The original command, unchanged or with the fence alone (`arm`).
static FALLBACK: OnceLock<Fallback> = OnceLock::new();
/// The command with the static labels and taints (and the fence, where the
/// rules may give a taint).
static STATIC_FALLBACK: OnceLock<Fallback> = OnceLock::new();
const STATIC_REASON: &[u8] = b": internal error (a crash; a bug, please report)";

/// [`arm`]'s head for the original command unchanged.
pub const UNCHANGED: &str = "kubelet-labeler: starting kubelet without our labels/taints";
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
/// (argv[0] first): the original command, unchanged or fenced, and writes
/// `head`, the reason, `tail` and a newline. Returns false when the command
/// cannot be made into C strings (a NUL byte: kubelet could not be started
/// with it either).
pub fn arm(executable: &Path, argv: &[OsString], head: &str, tail: String) -> bool {
    set(&FALLBACK, executable, argv, head.into(), tail)
}

/// From now on a crash execs this command (the original with the static
/// labels and taints, fenced where the rules may give a taint) and writes
/// `head`, the reason, `tail` and a newline.
pub fn arm_static(executable: &Path, argv: &[OsString], head: String, tail: String) -> bool {
    set(&STATIC_FALLBACK, executable, argv, head, tail)
}

fn set(
    slot: &OnceLock<Fallback>,
    executable: &Path,
    argv: &[OsString],
    head: String,
    tail: String,
) -> bool {
    exec::prepare(executable, argv).is_some_and(|p| slot.set((p, head.into(), tail.into())).is_ok())
}

/// What a crash from now on starts, the latest armed.
fn armed_fallback() -> Option<&'static Fallback> {
    STATIC_FALLBACK.get().or(FALLBACK.get())
}

/// The journal line's head for a crash from now on: what [`exec_fallback`]
/// starts, up to the reason.
pub fn fallback_line() -> &'static str {
    armed_fallback().map_or(UNCHANGED, |(_, line, _)| line)
}

/// What the journal line for a crash ends with after the reason.
pub fn fallback_tail() -> &'static str {
    armed_fallback().map_or("", |(_, _, tail)| tail)
}

/// Whether `arm` has run.
pub fn armed() -> bool {
    FALLBACK.get().is_some()
}

/// Exec the armed command; returns only if there is none or the exec
/// failed. Safe to call from a signal handler.
pub fn exec_fallback() {
    if let Some((p, _, _)) = STATIC_FALLBACK.get() {
        exec::exec(p);
    }
    let Some((p, _, _)) = FALLBACK.get() else {
        return;
    };
    // exec restores the inherited signal mask: the handler's signal is
    // blocked while it runs, and kubelet must not start with it blocked.
    exec::exec(p);
    // SAFETY: a static byte string.
    unsafe { write(STDERR, EXEC_FAILED.as_ptr(), EXEC_FAILED.len()) };
}

extern "C" fn on_crash(sig: c_int) {
    if let Some((_, line, tail)) = armed_fallback() {
        // SAFETY: strings set before any crash, never changed after.
        unsafe {
            write(STDERR, line.as_ptr(), line.len());
            write(STDERR, STATIC_REASON.as_ptr(), STATIC_REASON.len());
            write(STDERR, tail.as_ptr(), tail.len());
            write(STDERR, b"\n".as_ptr(), 1);
        }
        exec_fallback();
    }
    // Nothing to start: die of the signal as we would have without us (a
    // trap or fault re-executes and now kills; abort() raises again).
    // SAFETY: resetting a handler is async-signal-safe.
    unsafe { signal(sig, SIG_DFL) };
}
