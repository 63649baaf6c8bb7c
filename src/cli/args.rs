//! Checks of command-line arguments that no clap type can make.

use anyhow::{Context, Result};

/// A usage error clap cannot see (the flags parse, their combination is
/// wrong): exit 2, as clap's own.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A root given on the command line must exist: a mistyped one would read
/// as an empty node.
pub fn existing_dir(flag: &str, dir: &std::path::Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => anyhow::bail!("{flag} {}: not a directory", dir.display()),
        Err(e) => Err(e).with_context(|| format!("{flag} {}", dir.display())),
    }
}

/// Stdin can be read once: refuse "-" given twice among these flags.
pub fn stdin_at_most_once(flags: &[(&str, &[std::path::PathBuf])]) -> Result<()> {
    let named: Vec<&str> = flags
        .iter()
        .flat_map(|(flag, paths)| paths.iter().filter(|p| p.as_os_str() == "-").map(|_| *flag))
        .collect();
    if named.len() > 1 {
        return Err(Usage(format!(
            "stdin (\"-\") is given {} times ({}); it can be read once: give the other files by name",
            named.len(),
            named.join(" -, ") + " -"
        ))
        .into());
    }
    Ok(())
}
