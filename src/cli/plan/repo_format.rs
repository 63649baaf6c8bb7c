//! The format of an input repository (`core.repositoryformatversion`,
//! `extensions.*`), read as git reads it (review 30 r30b F4): git takes it
//! from the common directory's `config` with its own grammar (quotes
//! anywhere in a value, continued lines, the last value winning) and
//! without includes (setup.c `read_repository_format`). Plan asks git
//! itself, on a bounded copy of that file and in no repository, and
//! decides as git's `verify_repository_format`, refusing whatever it
//! cannot reproduce: its scratch repository is of the input's object
//! format, never another.

use anyhow::{Context, Result};

use super::git_dir::{self, Repo};
use super::git_run::{Exited, Stopped, git_command, run_git_for};

/// The extensions git (2.39 to 2.47) knows and plan's scratch reads alike:
/// `objectformat` and `refstorage` are checked apart; `compatobjectformat`
/// (git 2.43: other names for the objects) is not among them.
const KNOWN: [&str; 7] = [
    "noop",
    "noop-v1",
    "preciousobjects",
    "partialclone",
    "worktreeconfig",
    "objectformat",
    "refstorage",
];

/// The object format (`sha1`, `sha256`) of `repo`, as git in it reads it,
/// or an error naming its config and the fix.
pub fn object_format(repo: &Repo) -> Result<&'static str> {
    let path = repo.common.join("config");
    let scratch = tempfile::tempdir().context("making a scratch directory")?;
    let at = std::fs::canonicalize(scratch.path()).context("making a scratch directory")?;
    let copy = at.join("config");
    if !git_dir::copy_config(repo, &copy)? {
        return Ok("sha1");
    }
    let ask = |args: &[&str]| -> Result<Option<Vec<u8>>> {
        let mut git = git_command();
        // In no repository: none is found from plan's own directory, and
        // none above it is looked for.
        git.current_dir(&at)
            .env("GIT_CEILING_DIRECTORIES", at.parent().unwrap_or(&at))
            .args(["config", "--file"])
            .arg(&copy)
            .args(["--no-includes"])
            .args(args);
        match run_git_for(&repo.top, &mut git, None, 4 << 20) {
            Ok(out) => Ok(Some(out)),
            Err(e) => match e.downcast_ref::<Exited>() {
                Some(Exited(Some(1), _)) => Ok(None),
                // Plan's budget of git's time, spent (here or by another
                // repository): not this config's fault (review 36 r36b F2).
                _ if e.is::<Stopped>() => Err(e),
                _ => Err(e.context(format!(
                    "{}: git cannot read the repository's format there (git in the repository \
                     stops too); repair it, or plan a fresh clone",
                    path.display()
                ))),
            },
        }
    };
    let version = ask(&["--int", "--get-all", "core.repositoryformatversion"])?
        .map(|out| {
            let text = String::from_utf8_lossy(&out);
            let last = text.lines().last().unwrap_or_default().to_string();
            last.parse::<i64>().ok().context(last)
        })
        .transpose()
        .with_context(|| format!("{}: core.repositoryformatversion", path.display()))?;
    let listing = ask(&["-z", "--get-regexp", "^extensions\\."])?.unwrap_or_default();
    let extensions = listing
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| {
            let e = String::from_utf8_lossy(e);
            match e.split_once('\n') {
                Some((key, value)) => (key.to_string(), Some(value.to_string())),
                None => (e.to_string(), None),
            }
        })
        .collect::<Vec<_>>();
    decide(version, &extensions).map_err(|what| {
        anyhow::anyhow!(
            "{}: {what}; plan reads a repository's objects only as git there reads them: plan \
             a fresh clone (`git clone`), or a checkout of the revision as a directory",
            path.display()
        )
    })
}

/// What git decides of a repository whose config holds `version` (the
/// last `core.repositoryformatversion`) and `extensions` (each
/// `extensions.*` key, lower case, with its value, in order): its object
/// format, or why plan refuses it (git stops there, or may read it
/// otherwise than plan's scratch).
fn decide(
    version: Option<i64>,
    extensions: &[(String, Option<String>)],
) -> Result<&'static str, String> {
    let Some(version) = version else {
        if let Some((key, _)) = extensions.first() {
            return Err(format!(
                "{key} without core.repositoryformatversion (git 2.39 to 2.47 then ignore \
                 the extensions)"
            ));
        }
        return Ok("sha1");
    };
    if !(0..=1).contains(&version) {
        return Err(format!(
            "core.repositoryformatversion {version}: git reads repositories of version 0 and 1"
        ));
    }
    let mut format = "sha1";
    for (key, value) in extensions {
        let name = key.strip_prefix("extensions.").unwrap_or(key);
        let shown = value.as_deref().unwrap_or("(no value)");
        let v1_only = matches!(name, "objectformat" | "refstorage" | "compatobjectformat");
        if version == 0 && v1_only {
            return Err(format!(
                "{key} = {shown} in a repository of version 0, which git refuses (v1-only \
                 extension)"
            ));
        }
        match (name, value.as_deref()) {
            ("objectformat", Some("sha1")) => format = "sha1",
            ("objectformat", Some("sha256")) => format = "sha256",
            ("objectformat", _) => {
                return Err(format!(
                    "{key} = {shown}: git knows only sha1 and sha256 (so spelt)"
                ));
            }
            ("refstorage", Some("files")) => {}
            ("refstorage", _) => {
                return Err(format!(
                    "refs stored as {shown} ({key}), which plan cannot copy"
                ));
            }
            _ if version == 1 && !KNOWN.contains(&name) => {
                return Err(format!(
                    "{key}: an extension plan does not know (git may read the repository \
                     otherwise than plan's scratch, or refuse it)"
                ));
            }
            _ => {}
        }
    }
    Ok(format)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The format as git reads it from the config `text` (a repository
    /// made at `dir` with `text` for config).
    fn format_of(dir: &Path, text: &str) -> Result<&'static str> {
        let common = dir.join(".git");
        std::fs::create_dir_all(&common).unwrap();
        std::fs::write(common.join("config"), text).unwrap();
        let repo = Repo {
            top: dir.to_path_buf(),
            git_dir: common.clone(),
            common,
        };
        object_format(&repo)
    }

    /// Review 30 r30b F4: git's grammar (quotes inside a value, the last
    /// value winning, a continued line) and git's rules (version 0 has no
    /// objectFormat, only `sha1` and `sha256` so spelt, no include read),
    /// not plan's approximation of them, decide the scratch's format.
    #[test]
    fn the_object_format_is_read_as_git_reads_it() {
        let tmp = tempfile::tempdir().unwrap();
        let v1 = "[core]\n\trepositoryformatversion = 1\n[extensions]\n";
        let cases = [
            (String::new(), Some("sha1")),
            ("[core]\n\tbare = false\n".to_string(), Some("sha1")),
            (format!("{v1}\tobjectFormat = sha256\n"), Some("sha256")),
            (format!("{v1}\tobjectformat = sha\"256\"\n"), Some("sha256")),
            (format!("{v1}\tobjectformat = sha\\\n256\n"), Some("sha256")),
            (
                format!("{v1}\tobjectformat = sha256\n\tobjectformat = sha1\n"),
                Some("sha1"),
            ),
            (
                format!("{v1}\tobjectformat = sha1 ; sha256\n"),
                Some("sha1"),
            ),
            (
                format!("{v1}\tworktreeConfig = true\n\trefStorage = files\n"),
                Some("sha1"),
            ),
            (
                format!("{v1}\tobjectformat = sha256\n[include]\n\tpath = other\n"),
                Some("sha256"),
            ),
            (format!("{v1}\tobjectformat = SHA256\n"), None),
            (
                format!("{v1}\tobjectformat = sha3\n\tobjectformat = sha1\n"),
                None,
            ),
            (format!("{v1}\tobjectformat\n"), None),
            (format!("{v1}\trefstorage = reftable\n"), None),
            (format!("{v1}\tcompatObjectFormat = sha1\n"), None),
            (format!("{v1}\tfuture = yes\n"), None),
            (
                "[core]\n\trepositoryformatversion = 0\n[extensions]\n\tobjectformat = sha1\n"
                    .to_string(),
                None,
            ),
            (
                "[core]\n\trepositoryformatversion = 0\n[extensions]\n\tworktreeconfig\n"
                    .to_string(),
                Some("sha1"),
            ),
            ("[core]\n\trepositoryformatversion = 2\n".to_string(), None),
            ("[core]\n\trepositoryformatversion = -3\n".to_string(), None),
            ("[core]\n\trepositoryformatversion\n".to_string(), None),
            ("[extensions]\n\tobjectformat = sha256\n".to_string(), None),
            (format!("{v1}\tobjectformat = \"sha256\n"), None),
        ];
        for (i, (text, want)) in cases.iter().enumerate() {
            let got = format_of(&tmp.path().join(i.to_string()), text);
            match (want, &got) {
                (Some(want), Ok(got)) => assert_eq!(got, want, "{text:?}"),
                (None, Err(e)) => {
                    let e = format!("{e:#}");
                    assert!(e.contains(".git/config"), "{text:?}: {e}");
                    assert!(e.contains("fresh clone"), "{text:?}: {e}");
                }
                _ => panic!("{text:?}: {got:?}"),
            }
        }
        // The file itself: a link or a FIFO is not read.
        let dir = tmp.path().join("link");
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join(".git/config")).unwrap();
        let repo = Repo {
            top: dir.clone(),
            git_dir: dir.join(".git"),
            common: dir.join(".git"),
        };
        let e = format!("{:#}", object_format(&repo).unwrap_err());
        assert!(e.contains("symbolic link"), "{e}");
    }
}
