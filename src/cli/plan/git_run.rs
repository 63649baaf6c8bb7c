//! git run by plan: each child bounded in time, output and allocation,
//! told to run nothing a repository's config names, in a scratch
//! repository of plan's own that borrows the input's objects.

use std::io::Read;
use std::os::unix::ffi::OsStringExt as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// What git writes to its standard output, refused past `cap` bytes (git
/// is stopped there); `input` is written to its standard input meanwhile.
pub(super) fn git_output(args: &[&str], input: Option<Vec<u8>>, cap: u64) -> Result<Vec<u8>> {
    run_git(git_command().args(args), input, cap)
}

/// git, told to run no program a repository's own config names for what
/// plan asks (review 21 r21c F2: `core.fsmonitor` in a directory's `.git`,
/// an input like any file of it, ran as the user planning), and to fetch
/// nothing (review 23 r23c F3: a partial clone's missing object fetched
/// through the `core.sshCommand` its config names, by `ls-files` expanding
/// a sparse index or `ls-tree --long`). No transport is allowed, so no
/// fetch, ssh program, credential helper or proxy command runs; a filter
/// is refused before any checkout (`checkout_fits`); what plan asks git
/// runs no hook.
pub(super) fn git_command() -> Command {
    let mut git = Command::new("git");
    // GIT_ALLOW_PROTOCOL overrides every `protocol.*.allow` of any config
    // (review 24 r24a F2: a repository's `protocol.ssh.allow=always` beat
    // `protocol.allow=never`; GIT_NO_LAZY_FETCH needs git 2.44).
    // No commit-graph: a crafted `objects/info/commit-graph` of the input
    // (read through the scratch's alternates) could give a commit other
    // parents than the commit object holds (review 26 r26b): `HEAD~1` is
    // read from the commits themselves. No multi-pack-index either (review
    // 30 r30b F3: one refused in the input, see `git_dir::check_alternates`).
    git.args(["-c", "core.fsmonitor=false", "-c", "protocol.allow=never"])
        .args([
            "-c",
            "core.commitGraph=false",
            "-c",
            "core.multiPackIndex=false",
            // One thread reads the index's entries in file order, as
            // plan's walk of it does (review 33 r33b F6: threads read
            // where its IEOT extension points, past what plan checked).
            "-c",
            "index.threads=1",
        ])
        .env("GIT_ALLOW_PROTOCOL", "none")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_LAZY_FETCH", "1");
    // Only the repository plan names (`--git-dir`, `GIT_INDEX_FILE`), whatever
    // git's variables of the environment say (a hook's `GIT_DIR`).
    for v in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CEILING_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_TEST_INDEX_THREADS",
    ] {
        git.env_remove(v);
    }
    git
}

/// Every git child, told the most it may allocate at once ([`bounded`]).
/// Each is charged to plan's budget of git's time ([`charged`]) where it
/// runs ([`place_of`]).
pub(super) fn run_git(git: &mut Command, input: Option<Vec<u8>>, cap: u64) -> Result<Vec<u8>> {
    borrow_objects(git)?;
    let place = place_of(git);
    charged(&SPENT, limits(), &place, bounded(git), input, cap).map_err(explained)
}

/// `run_git`, its time charged to the input `place` (git runs on plan's
/// copy of something of it, in a scratch directory).
pub(super) fn run_git_for(
    place: &Path,
    git: &mut Command,
    input: Option<Vec<u8>>,
    cap: u64,
) -> Result<Vec<u8>> {
    borrow_objects(git)?;
    let place = place.display().to_string();
    charged(&SPENT, limits(), &place, bounded(git), input, cap).map_err(explained)
}

/// The file of a scratch repository (`borrowed_repo`) naming the objects
/// directory it borrows.
pub(super) const BORROWED: &str = "plan-borrows-objects";

/// git run in a scratch repository of `borrowed_repo` reads the objects
/// of the repository it borrows from as git there reads them: as its own
/// object directory (`GIT_OBJECT_DIRECTORY`), not as an alternate (review
/// 31 r31a F1: an alternate is one level of alternates deeper, and its
/// packs lose git's preference for local ones, so the same object id with
/// other bytes in another pack was what plan read).
fn borrow_objects(git: &mut Command) -> Result<()> {
    let scratch = git.get_args().find_map(|a| {
        a.to_str()?
            .strip_prefix("--git-dir=")
            .map(|d| Path::new(d).join(BORROWED))
    });
    let Some(file) = scratch else {
        return Ok(());
    };
    match std::fs::read(&file) {
        Ok(objects) => {
            git.env(
                "GIT_OBJECT_DIRECTORY",
                std::ffi::OsString::from_vec(objects),
            );
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("reading {}", file.display())),
    }
}

/// A child that exited unsuccessfully: its exit code (None when killed by
/// a signal) and what it wrote to its standard error, trimmed.
#[derive(Debug)]
pub(super) struct Exited(pub(super) Option<i32>, pub(super) String);

impl std::fmt::Display for Exited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}

impl std::error::Error for Exited {}

/// A child stopped at its deadline (`run_child`): never read as a "no".
#[derive(Debug)]
pub(super) struct Stopped(String);

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Stopped {}

/// What the child `cmd` (git) writes to its standard output, refused past
/// `cap` bytes (it is stopped there); `input` is written to its standard
/// input meanwhile. Every child plan runs goes through here: killed once
/// `deadline` has passed, an error saying so (the caller names the input).
pub(super) fn run_child(
    cmd: &mut Command,
    input: Option<Vec<u8>>,
    cap: u64,
    deadline: Duration,
) -> Result<Vec<u8>> {
    use std::process::Stdio;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let program = cmd.get_program().to_string_lossy().into_owned();
    let started = Instant::now();
    let mut child = cmd
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {program}"))?;
    // Each pipe from a thread of its own: the child answers while it
    // reads, and any pipe could fill; none is joined before the child has
    // ended (a killed child's pipes may stay open in its own children).
    let writer = child.stdin.take().zip(input).map(|(mut stdin, bytes)| {
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&bytes);
        })
    });
    let errors = child.stderr.take().map(|e| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = e.take(1 << 16).read_to_end(&mut text);
            text
        })
    });
    let over = Arc::new(AtomicBool::new(false));
    let reader = child.stdout.take().map(|s| {
        let over = Arc::clone(&over);
        std::thread::spawn(move || {
            let mut stdout = Vec::new();
            let read = s.take(cap + 1).read_to_end(&mut stdout);
            if read.is_err() || stdout.len() as u64 > cap {
                over.store(true, Ordering::SeqCst);
            }
            read.map(|_| stdout)
        })
    });
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for git")? {
            break status;
        }
        if over.load(Ordering::SeqCst) {
            let _ = child.kill();
        } else if started.elapsed() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Stopped(format!(
                "{program} did not finish within {} s and was stopped: something there \
                 makes it wait or work without end ({SLOW}); check it with `git fsck`, or \
                 plan a copy of the files without .git",
                deadline.as_secs_f32(),
            ))
            .into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = reader.map(|r| r.join());
    if let Some(w) = writer {
        let _ = w.join();
    }
    let stderr = errors.and_then(|t| t.join().ok()).unwrap_or_default();
    let stdout = match stdout {
        Some(Ok(read)) => read.context("reading what git wrote")?,
        Some(Err(_)) => bail!("reading what git wrote"),
        None => Vec::new(),
    };
    if stdout.len() as u64 > cap {
        bail!("more than {} MiB of output", cap >> 20);
    }
    if !status.success() {
        let said = String::from_utf8_lossy(&stderr).trim().to_string();
        return Err(Exited(status.code(), said).into());
    }
    Ok(stdout)
}

/// The most a git child of plan may allocate at once, unless told more
/// (a checkout of its blobs, a large index): past any commit or tree plan
/// lets git read, and past git's own tables of a long history.
pub(super) const CHILD_ALLOC_MAX: u64 = 64 << 20;

/// How long one child process of plan (git) may run before it is killed:
/// the slowest plan asks of git on a large repository (`ls-tree -r` of
/// 200,000 files, a checkout of 256 MiB, `ls-files` of a million-entry
/// index) takes seconds, so two minutes is far past any honest run, while
/// a repository that makes git wait (a FIFO where git reads a file, a
/// config including `/proc/self/fd/1`: review 25 r25a F3) no longer stops
/// plan for ever. Per child: plan runs about ten per side.
const CHILD_DEADLINE: Duration = Duration::from_secs(120);

/// How long one child and all children together may run: `CHILD_DEADLINE`
/// and [`CHILDREN_DEADLINE`], or less for tests only: the variables
/// `KUBELET_LABELER_TEST_CHILD_DEADLINE_MS` and
/// `KUBELET_LABELER_TEST_CHILDREN_DEADLINE_MS` (milliseconds) are read so a
/// test of a deadline need not wait minutes; they can only lower them, and
/// nothing but tests sets them.
fn limits() -> Limits {
    // `deadline`, or the test's variable `var` if lower.
    let lowered = |var: &str, deadline: Duration| {
        (std::env::var(var).ok())
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
            .filter(|d| *d < deadline)
            .unwrap_or(deadline)
    };
    Limits {
        child: lowered("KUBELET_LABELER_TEST_CHILD_DEADLINE_MS", CHILD_DEADLINE),
        all: lowered(
            "KUBELET_LABELER_TEST_CHILDREN_DEADLINE_MS",
            CHILDREN_DEADLINE,
        ),
    }
}

/// How long all of plan's children may run in all (review 35 r35b F3:
/// each nested repository of a directory, listed by its own `ls-files`
/// within its own deadline, made a plan hours long): past any honest
/// plan's few seconds. Only the time git children run counts, not plan's
/// own work between them (review 36 r36b F2: the YAML of `--from` read
/// before `--to`'s first child used it up).
const CHILDREN_DEADLINE: Duration = Duration::from_secs(600);

/// What makes git slow in an input, as plan's errors say it.
const SLOW: &str = "a FIFO or a device where git reads a file, many repositories, an index made \
                    to be slow";

/// The deadlines of `charged`: each child's, and all children's together.
#[derive(Clone, Copy)]
struct Limits {
    child: Duration,
    all: Duration,
}

/// The time git children ran, by the place each ran in (`place_of`).
#[derive(Default)]
struct Account {
    places: Vec<(String, Duration)>,
}

impl Account {
    fn total(&self) -> Duration {
        self.places.iter().map(|(_, d)| *d).sum()
    }

    fn charge(&mut self, place: &str, ran: Duration) {
        match self.places.iter_mut().find(|(p, _)| p == place) {
            Some((_, d)) => *d += ran,
            None => self.places.push((place.to_string(), ran)),
        }
    }

    /// The error once the children have run `all` in all: it names the
    /// place that used most (the slow input there), never the next child.
    fn spent(&self, all: Duration) -> anyhow::Error {
        let most = (self.places.iter()).max_by_key(|(_, d)| *d);
        let (place, secs) = most.map_or(("none", 0.0), |(p, d)| (p.as_str(), d.as_secs_f32()));
        Stopped(format!(
            "plan's git children have used the {} s plan gives them in all, the most \
             ({secs:.2} s) in {place}: the input makes git slow there ({SLOW}); check it with \
             `git fsck`, or plan a copy of the files without .git",
            all.as_secs_f32()
        ))
        .into()
    }
}

/// The time plan's git children have run, process-wide.
static SPENT: std::sync::Mutex<Account> = std::sync::Mutex::new(Account { places: Vec::new() });

/// `cmd` run by `run_child`, given `limits.child` or what is left of
/// `limits.all` in `account` if less, and its time charged there to
/// `place`. None left: refused before it runs; stopped when what was left
/// ran out: the same refusal.
fn charged(
    account: &std::sync::Mutex<Account>,
    limits: Limits,
    place: &str,
    cmd: &mut Command,
    input: Option<Vec<u8>>,
    cap: u64,
) -> Result<Vec<u8>> {
    let lock = || {
        account
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let left = limits.all.saturating_sub(lock().total());
    if left.is_zero() {
        return Err(lock().spent(limits.all));
    }
    let started = Instant::now();
    let out = run_child(cmd, input, cap, limits.child.min(left));
    let mut account = lock();
    account.charge(place, started.elapsed());
    match out {
        Err(e) if e.is::<Stopped>() && left < limits.child => Err(account.spent(limits.all)),
        Err(e) if e.is::<Stopped>() => Err(e.context(format!("git in {place}"))),
        out => out,
    }
}

/// Where `cmd` runs, as plan's account of git's time names it: its
/// working directory, or the objects of the repository it borrows
/// (`borrow_objects`: that repository), or its `--git-dir=` or `-C`;
/// else its program.
fn place_of(cmd: &Command) -> String {
    if let Some(dir) = cmd.get_current_dir() {
        return dir.display().to_string();
    }
    let borrowed = (cmd.get_envs())
        .find(|(k, _)| *k == "GIT_OBJECT_DIRECTORY")
        .and_then(|(_, v)| v);
    if let Some(objects) = borrowed {
        let mut repo = Path::new(objects);
        for up in ["objects", ".git"] {
            if repo.ends_with(up) {
                repo = repo.parent().unwrap_or(repo);
            }
        }
        return repo.display().to_string();
    }
    let args: Vec<_> = cmd.get_args().collect();
    for (at, a) in args.iter().enumerate() {
        if let Some(dir) = a.to_str().and_then(|a| a.strip_prefix("--git-dir=")) {
            return dir.to_string();
        }
        if *a == "-C"
            && let Some(dir) = args.get(at + 1)
        {
            return Path::new(dir).display().to_string();
        }
    }
    cmd.get_program().to_string_lossy().into_owned()
}

/// The most memory a git child of plan may hold in all (its data:
/// `RLIMIT_DATA`, which counts what it allocates, not the packs it maps),
/// as a multiple of the most it may allocate at once: what git builds from
/// small input grows past any bound of one allocation (review 33 r33b
/// F3-F5: a 5 MB version-4 index took 3.15 GB, `ls-tree -r` of 160 trees
/// of 10 MB 1.66 GB, one 20 MiB `.gitattributes` read in three
/// directories 1.38 GB).
const CHILD_DATA_PER_ALLOC: u64 = 4;

/// `git`, told the most it may allocate at once: `CHILD_ALLOC_MAX`, unless
/// its caller set more; and held to [`CHILD_DATA_PER_ALLOC`] times that in
/// all.
pub(super) fn bounded(git: &mut Command) -> &mut Command {
    let set = (git.get_envs())
        .find(|(k, _)| *k == "GIT_ALLOC_LIMIT")
        .and_then(|(_, v)| v?.to_str()?.parse::<u64>().ok());
    let alloc = set.unwrap_or(CHILD_ALLOC_MAX);
    if set.is_none() {
        git.env("GIT_ALLOC_LIMIT", alloc.to_string());
    }
    let data = alloc
        .saturating_mul(CHILD_DATA_PER_ALLOC)
        .min(CHILD_DATA_MAX);
    data_limited(git, data)
}

/// The most any git child may hold in all, whatever its allocation bound
/// (review 35 r35b F1: a bound raised by what plan read of an index).
const CHILD_DATA_MAX: u64 = 2 << 30;

#[cfg(target_pointer_width = "64")]
#[repr(C)]
struct Rlimit {
    cur: u64,
    max: u64,
}
#[cfg(target_pointer_width = "64")]
const RLIMIT_DATA: std::ffi::c_int = 2;
#[cfg(target_pointer_width = "64")]
const RLIMIT_STACK: std::ffi::c_int = 3;
#[cfg(target_pointer_width = "64")]
unsafe extern "C" {
    fn getrlimit(resource: std::ffi::c_int, rlim: *mut Rlimit) -> std::ffi::c_int;
    fn setrlimit(resource: std::ffi::c_int, rlim: *const Rlimit) -> std::ffi::c_int;
}

/// The stack is not the data's (review 34 r34b F1b: git reads an index's
/// cache tree recursively, 700 MB of stack under `ulimit -s unlimited`):
/// Linux's default.
const STACK_MAX: u64 = 8 << 20;

#[cfg(target_pointer_width = "64")]
fn data_limited(git: &mut Command, most: u64) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec, only system calls (async signal
    // safe) on stack values; a soft limit is lowered, never raised past
    // the hard one, so it cannot fail for want of privilege.
    unsafe {
        git.pre_exec(move || {
            for (resource, most) in [(RLIMIT_DATA, most), (RLIMIT_STACK, STACK_MAX)] {
                let mut now = Rlimit { cur: 0, max: 0 };
                if getrlimit(resource, &mut now) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let set = Rlimit {
                    cur: now.cur.min(now.max).min(most),
                    max: now.max,
                };
                if setrlimit(resource, &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    }
}

/// Where `rlim_t` is not 64 bits, git's own allocation bound only.
#[cfg(not(target_pointer_width = "64"))]
fn data_limited(git: &mut Command, _most: u64) -> &mut Command {
    git
}

/// A git child stopped at its allocation bound, said so.
pub(super) fn explained(e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<Exited>() {
        Some(Exited(code, said))
            if said.contains("attempting to allocate") || said.contains("Out of memory") =>
        {
            Exited(
                *code,
                format!(
                    "{said} (git stopped: something of the repository is larger than plan lets git \
                 hold, more than any GitOps repository holds; find it with `git \
                 cat-file --batch-all-objects --batch-check`, or plan a copy of the files \
                 without .git)"
                ),
            )
            .into()
        }
        _ => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review 33 r33b F3-F5: every git child is held to a total of its
    /// data, four times the most it may allocate at once.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn git_children_are_held_in_all() {
        let limit = |alloc: Option<u64>| {
            let mut sh = Command::new("sh");
            sh.args(["-c", "ulimit -d"]);
            if let Some(a) = alloc {
                sh.env("GIT_ALLOC_LIMIT", a.to_string());
            }
            let out = bounded(&mut sh).output().unwrap();
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        // `ulimit -d` counts KiB.
        assert_eq!(limit(None), (4 * CHILD_ALLOC_MAX / 1024).to_string());
        // The stack too, from a parent whose stack is as large as it may
        // be (review 34 r34b F1b).
        let mut now = Rlimit { cur: 0, max: 0 };
        // SAFETY: system calls on stack values.
        assert_eq!(unsafe { getrlimit(RLIMIT_STACK, &mut now) }, 0);
        assert!(
            now.max > STACK_MAX,
            "a hard stack limit of {} only",
            now.max
        );
        let raised = Rlimit {
            cur: now.max,
            max: now.max,
        };
        assert_eq!(unsafe { setrlimit(RLIMIT_STACK, &raised) }, 0);
        let mut sh = Command::new("sh");
        sh.args(["-c", "ulimit -s"]);
        let out = bounded(&mut sh).output();
        assert_eq!(unsafe { setrlimit(RLIMIT_STACK, &now) }, 0);
        let stack = String::from_utf8(out.unwrap().stdout).unwrap();
        assert_eq!(stack.trim(), (STACK_MAX >> 10).to_string());
        assert_eq!(limit(Some(512 << 20)), (2u64 << 20).to_string());
    }

    /// Review 33 r33b F6: git reads the index in one thread (its entries
    /// in file order, as plan's walk of it), whatever the user's config or
    /// git's test variable say.
    #[test]
    fn git_reads_the_index_in_one_thread() {
        let tmp = tempfile::tempdir().unwrap();
        let global = tmp.path().join("gitconfig");
        std::fs::write(&global, "[index]\n\tthreads = 3\n").unwrap();
        let out = git_command()
            .current_dir(tmp.path())
            .env("GIT_CONFIG_GLOBAL", &global)
            .env("GIT_CEILING_DIRECTORIES", tmp.path())
            .args(["config", "--get", "index.threads"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
        let git = git_command();
        let removed = (git.get_envs()).any(|(k, v)| k == "GIT_TEST_INDEX_THREADS" && v.is_none());
        assert!(removed);
    }

    /// `sh -c script` in `dir`, charged to `account` under `limits`.
    fn sh_in(
        account: &std::sync::Mutex<Account>,
        limits: Limits,
        dir: &Path,
        script: &str,
    ) -> Result<Vec<u8>> {
        let mut sh = Command::new("sh");
        sh.current_dir(dir).args(["-c", script]);
        let place = place_of(&sh);
        charged(account, limits, &place, &mut sh, None, 1 << 10)
    }

    /// Review 36 r36b F2: only the time children run is charged to the
    /// budget of all of them, not plan's own work between them (the YAML
    /// of `--from`, read before `--to`'s first child, used it up).
    #[test]
    fn time_between_children_is_not_charged() {
        let account = std::sync::Mutex::new(Account::default());
        let limits = Limits {
            child: Duration::from_secs(10),
            all: Duration::from_millis(600),
        };
        let tmp = tempfile::tempdir().unwrap();
        sh_in(&account, limits, tmp.path(), "exit 0").unwrap();
        std::thread::sleep(Duration::from_millis(800));
        sh_in(&account, limits, tmp.path(), "exit 0").unwrap();
        let spent = account.lock().unwrap().total();
        assert!(spent < Duration::from_millis(600), "{spent:?}");
    }

    /// Review 36 r36b F2: once the children have used the budget, the next
    /// one is refused before it runs, naming the place that used most (not
    /// the next child's, as "within 0 s"); the child the budget ran out on
    /// says the same. Never read as a "no": `Stopped`.
    #[test]
    fn the_spent_budget_names_the_place_that_used_it() {
        let account = std::sync::Mutex::new(Account::default());
        let limits = Limits {
            child: Duration::from_secs(10),
            all: Duration::from_millis(700),
        };
        let (slow, honest) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        sh_in(&account, limits, honest.path(), "exit 0").unwrap();
        sh_in(&account, limits, slow.path(), "sleep 0.3").unwrap();
        let stopped = sh_in(&account, limits, slow.path(), "exec sleep 30").unwrap_err();
        let err = sh_in(&account, limits, honest.path(), "echo > ran").unwrap_err();
        assert!(!honest.path().join("ran").exists(), "the child ran");
        for e in [&stopped, &err] {
            assert!(e.is::<Stopped>(), "{e:#}");
            let text = format!("{e:#}");
            let named = format!(
                "s) in {}: the input makes git slow there",
                slow.path().display()
            );
            assert!(text.contains(&named), "{text}");
            assert!(
                text.contains("plan's git children have used the 0.7 s plan gives them in all"),
                "{text}"
            );
            assert!(
                text.contains("`git fsck`") && !text.contains("within 0 s"),
                "{text}"
            );
        }
        let spent = account.lock().unwrap().total();
        assert!(spent < Duration::from_secs(5), "{spent:?}");
    }

    /// A child stopped at its own deadline (not the budget of all) says
    /// where it ran.
    #[test]
    fn a_child_past_its_own_deadline_names_where_it_ran() {
        let account = std::sync::Mutex::new(Account::default());
        let limits = Limits {
            child: Duration::from_millis(200),
            all: Duration::from_secs(10),
        };
        let slow = tempfile::tempdir().unwrap();
        let err = sh_in(&account, limits, slow.path(), "exec sleep 30").unwrap_err();
        assert!(err.is::<Stopped>(), "{err:#}");
        let text = format!("{err:#}");
        let named = format!(
            "git in {}: sh did not finish within 0.2 s",
            slow.path().display()
        );
        assert!(text.contains(&named), "{text}");
    }

    /// The place a child is charged to: its directory, the repository whose
    /// objects it borrows, its `--git-dir=` or `-C`, else its program.
    #[test]
    fn a_child_is_charged_where_it_runs() {
        let mut git = Command::new("git");
        assert_eq!(place_of(&git), "git");
        git.args(["-C", "/r/c", "status"]);
        assert_eq!(place_of(&git), "/r/c");
        let mut git = Command::new("git");
        git.arg("--git-dir=/tmp/scratch").arg("log");
        assert_eq!(place_of(&git), "/tmp/scratch");
        git.env("GIT_OBJECT_DIRECTORY", "/r/top/.git/objects");
        assert_eq!(place_of(&git), "/r/top");
        git.env("GIT_OBJECT_DIRECTORY", "/r/bare.git/objects");
        assert_eq!(place_of(&git), "/r/bare.git");
        git.current_dir("/r/top/nested");
        assert_eq!(place_of(&git), "/r/top/nested");
    }
}
