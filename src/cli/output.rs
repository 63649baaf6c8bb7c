//! What every subcommand writes: stdout, which a closed pipe ends quietly
//! (`| head`), stderr lines that cannot panic, and the exit code of an error.

use std::process::ExitCode;

use anyhow::Result;

use super::args::Usage;

/// `eprintln!` that cannot panic: with stderr a closed pipe (`2>&1 | head`)
/// the line is lost, not the run. One line, whatever it quotes: a control
/// character in it (a pull request's file name, an Ignition config's key)
/// is escaped (`\u{1b}`, `\n`), so it never erases or rewrites the lines
/// above it, sets the clipboard, or starts a line of its own.
macro_rules! say {
    ($($arg:tt)*) => {{
        crate::cli::output::say_line(&format!($($arg)*));
    }};
}
pub(crate) use say;

/// The most of each line `say!` writes (review 39 r39b F1, F2: one
/// warning quoting a whole input): its start and its end, what lies
/// between left out. How many lines a kind of warning writes is bounded
/// where it is made, never by a count of the run's lines, which would
/// drop a `wrote` line or a safety warning after many others (review 40
/// r40b F1).
const SAY_HEAD: usize = 2 << 10;
const SAY_TAIL: usize = 1 << 10;

/// One line of `say!`: shortened and escaped.
pub fn say_line(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{}", shortened(line, SAY_HEAD, SAY_TAIL));
}

/// A subcommand's result as the process exits with it: an error is one
/// line on stderr and exit 1 (2 for a usage error, as clap's own); a
/// closed stdout ends quietly, with success, as ripgrep does, but only
/// where the write was data a reader may skip ([`to_stdout`]: marked
/// [`ReaderStopped`]). Any other broken pipe (an image streamed to `-o -`
/// or a FIFO, cut short) is the run's error (review 19 r19c F2).
pub fn exit_code(result: Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) if reader_stopped(&e) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e);
            if e.is::<Usage>() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// `e` on stderr as the run's error is said (`Error: ...`), for a verdict
/// said before the output it goes with.
pub fn report(e: &anyhow::Error) {
    // The message may quote a rules file, a tree or an ISO: their escape
    // codes never reach the terminal. Its lines kept (a YAML error's
    // excerpt), each escaped.
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "Error: {}",
        error_text(&format!("{e:#}"))
    );
}

/// The most of an error's text said, before its escaping: its start and
/// its end (where the fix is said), what lies between left out (review 38
/// r38b F1: a MachineConfig's name of 60 Mi control bytes, quoted in its
/// error, made a line of 315 MB).
const ERROR_HEAD: usize = 8 << 10;
const ERROR_TAIL: usize = 4 << 10;

/// `message`, at most [`ERROR_HEAD`] and [`ERROR_TAIL`] bytes of it,
/// escaped for a terminal, its lines kept.
fn error_text(message: &str) -> String {
    let (head, left_out, tail) = cut(message, ERROR_HEAD, ERROR_TAIL);
    match left_out {
        0 => terminal_safe(message),
        n => format!(
            "{} [... {n} bytes of the message left out ...] {}",
            terminal_safe(head),
            terminal_safe(tail)
        ),
    }
}

/// `line` in one line, escaped, at most `head` and `tail` bytes of it.
pub fn shortened(line: &str, head: usize, tail: usize) -> String {
    use crate::node::wrapper::derived::escape_controls;
    match cut(line, head, tail) {
        (_, 0, _) => escape_controls(line).into_owned(),
        (h, n, t) => format!(
            "{} [... {n} bytes left out ...] {}",
            escape_controls(h),
            escape_controls(t)
        ),
    }
}

/// `text`'s first `head` and last `tail` bytes (at character boundaries)
/// and how many bytes lie between.
fn cut(text: &str, head: usize, tail: usize) -> (&str, usize, &str) {
    if text.len() <= head + tail {
        return (text, 0, "");
    }
    let mut h = head;
    while !text.is_char_boundary(h) {
        h -= 1;
    }
    let mut t = text.len() - tail;
    while !text.is_char_boundary(t) {
        t += 1;
    }
    (&text[..h], t - h, &text[t..])
}

/// The mark of a closed stdout met while writing data its reader may skip
/// (a report, a listing, a rendered manifest to `-o -`): the one broken
/// pipe that ends a run quietly. Only [`to_stdout`] (and a descriptor of
/// ours written as stdout, [`stdout_error`]) puts it on an error.
#[derive(Debug)]
pub struct ReaderStopped;

impl std::fmt::Display for ReaderStopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the reader closed stdout")
    }
}

/// Whether `e` is a closed stdout met writing skippable data.
pub fn reader_stopped(e: &anyhow::Error) -> bool {
    e.downcast_ref::<ReaderStopped>().is_some()
}

/// A write error on stdout (or a descriptor of ours written as stdout is)
/// with `context`: a broken pipe marked [`ReaderStopped`].
pub fn stdout_error(e: std::io::Error, context: &str) -> anyhow::Error {
    let broken = e.kind() == std::io::ErrorKind::BrokenPipe;
    let e = anyhow::Error::new(e).context(context.to_string());
    if broken { e.context(ReaderStopped) } else { e }
}

/// A command's data on stdout, then its verdict as the exit code. A reader
/// that stops early (`| head`, `| grep -q`) closes stdout; the verdict
/// stands: a closed pipe is quiet success only when nothing but data is
/// left, never a failure turned into success (review 18 r18c F3). Any
/// other write error is the run's error.
pub fn data_then_verdict(text: impl AsRef<[u8]>, verdict: ExitCode) -> Result<ExitCode> {
    match to_stdout(text) {
        Err(e) if reader_stopped(&e) => Ok(verdict),
        other => other.map(|()| verdict),
    }
}

/// All of a subcommand's output: a closed stdout is an error (quiet, see
/// main), never the panic of `print!`.
pub fn to_stdout(text: impl AsRef<[u8]>) -> Result<()> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_ref())
        .and_then(|()| o.flush())
        .map_err(|e| stdout_error(e, "writing to stdout"))
}

/// The command line, parsed. clap's help and version (`--help`,
/// `--version`, a subcommand's help) go to stdout through [`to_stdout`], so
/// a write error is one line on stderr and exit 1 (`> /dev/full`; clap
/// itself ignores it and exits 0) and a closed pipe ends quietly; its usage
/// errors go to stderr, exit 2, as clap's own.
pub fn parse<P: clap::Parser>() -> Result<P, ExitCode> {
    P::try_parse().map_err(|e| {
        if e.use_stderr() {
            let _ = e.print();
            return ExitCode::from(e.exit_code() as u8);
        }
        exit_code(to_stdout(e.render().to_string()).map(|()| ExitCode::SUCCESS))
    })
}

/// A name or value from the input (a pull request's file path, a
/// MachineConfig's name) for one line of output: every control character
/// escaped, newlines too (`\n`), so it forges no line of its own.
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    crate::node::wrapper::derived::escape_controls(text)
}

/// Text read from a tree or file the CLI was given, for a terminal: each
/// line's control characters escaped (`\u{1b}`), the lines kept. A
/// hostile unit file's escape codes never reach the terminal, where they
/// could erase or rewrite the lines above them (`explain` on a pull
/// request's MachineConfigs).
pub fn terminal_safe(text: &str) -> String {
    text.split('\n')
        .map(crate::node::wrapper::derived::escape_controls)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review 38 r38b F1: an error quoting a huge input is said within a
    /// bound, its start and its end (the fix) kept, escaped; a short one
    /// whole.
    #[test]
    fn an_error_is_said_within_a_bound() {
        let quoted = "\u{7}".repeat(60 << 20);
        let message = format!("MachineConfig {quoted:?}: no labels; label it with its role é");
        let said = error_text(&message);
        assert!(said.len() < 64 << 10, "{} bytes", said.len());
        assert!(
            said.starts_with("MachineConfig \"\\u{7}"),
            "{}",
            &said[..40]
        );
        assert!(
            said.ends_with("label it with its role é"),
            "{}",
            &said[said.len() - 40..]
        );
        assert!(said.contains("bytes of the message left out"));
        assert_eq!(error_text("bad \u{1b}[2J input"), "bad \\u{1b}[2J input");
    }

    /// Review 39 r39b F1, F2: a note or warning is one line of at most a
    /// few KiB, escaped.
    #[test]
    fn a_line_said_is_shortened() {
        let line = format!("warning: {}: fix it", "\u{7}".repeat(1 << 20));
        let said = shortened(&line, SAY_HEAD, SAY_TAIL);
        assert!(said.len() < 16 << 10, "{} bytes", said.len());
        assert!(said.contains("bytes left out") && said.ends_with(": fix it"));
        assert!(!said.contains('\n') && !said.contains('\u{7}'));
        assert_eq!(shortened("a \n b", 10, 10), "a \\n b");
    }
}
