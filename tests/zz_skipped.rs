//! The run's summary of skipped tests. cargo runs the library's unit tests,
//! then the binaries', then the integration test binaries in name order, so
//! this one (`zz_`) comes after every test that can skip; each skip was
//! appended to this run's file by support/skipped.rs. Prints the list (on
//! stderr, which libtest does not capture) and removes the file, and those
//! of earlier runs whose cargo is gone.

#[path = "support/skipped.rs"]
mod skipped;

#[test]
fn summary_of_skipped_tests() {
    let Some(path) = skipped::run_log() else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    remove_logs_of_finished_runs();
    // Under CI a skip fails its test, so nothing can have been recorded.
    assert!(
        std::env::var_os("CI").is_none() || text.is_empty(),
        "skips recorded under CI:\n{text}"
    );
    if text.is_empty() {
        return;
    }
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines.dedup();
    let mut out = "\nSKIPPED in this run (CI=1 makes these failures):\n".to_string();
    for l in &lines {
        out.push_str(&format!("  {l}\n"));
    }
    use std::io::Write;
    let _ = std::io::stderr().write_all(out.as_bytes());
}

/// Files of runs whose cargo process has exited (a run stopped by a
/// failure before reaching this binary).
fn remove_logs_of_finished_runs() {
    let Some(dir) = skipped::run_log_dir() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(key) = name.strip_suffix(".txt") else {
            continue;
        };
        let alive = key
            .split_once('-')
            .and_then(|(pid, _)| pid.parse().ok())
            .and_then(skipped::process_key)
            .is_some_and(|now| now == key);
        if !alive {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
