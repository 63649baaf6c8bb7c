//! The warnings systemd would log for one unit, bounded: a file of 8 Mi
//! lines outside any section is 8 Mi warnings (review 41 r41b F1: 4.4 GB
//! and 855 MB of output from a 21 KB MachineConfig).

/// The most warnings kept for one unit file or unit; past it one last line
/// counts the rest.
pub const WARNINGS_MAX: usize = 32;

/// At most [`WARNINGS_MAX`] warnings, then one line that counts the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Warnings {
    lines: Vec<String>,
    more: usize,
}

impl Warnings {
    pub fn push(&mut self, w: String) {
        self.push_with(|| w);
    }

    /// Push the warning `w` builds, built only while there is room.
    pub fn push_with(&mut self, w: impl FnOnce() -> String) {
        if self.lines.len() < WARNINGS_MAX {
            self.lines.push(w());
            return;
        }
        self.count(1);
    }

    /// Another bounded list's warnings after these: its lines while there
    /// is room, its count added to ours (not kept as a warning).
    pub fn append(&mut self, other: &Warnings) {
        for w in other.lines.iter().take(WARNINGS_MAX) {
            self.push(w.clone());
        }
        self.count(other.more);
    }

    fn count(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.more += n;
        let counted = format!("and {} more like these, not shown", self.more);
        match self.lines.get_mut(WARNINGS_MAX) {
            Some(last) => *last = counted,
            None => self.lines.push(counted),
        }
    }
}

/// Whether `line` is the one that counts the warnings not shown.
pub fn counts_the_rest(line: &str) -> bool {
    line.starts_with("and ") && line.ends_with(" more like these, not shown")
}

impl std::ops::Deref for Warnings {
    type Target = [String];
    fn deref(&self) -> &[String] {
        &self.lines
    }
}

impl Extend<String> for Warnings {
    fn extend<I: IntoIterator<Item = String>>(&mut self, iter: I) {
        for w in iter {
            self.push(w);
        }
    }
}

impl From<Warnings> for Vec<String> {
    fn from(w: Warnings) -> Vec<String> {
        w.lines
    }
}

impl IntoIterator for Warnings {
    type Item = String;
    type IntoIter = std::vec::IntoIter<String>;
    fn into_iter(self) -> Self::IntoIter {
        self.lines.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_bound_one_line_counts_the_rest() {
        let mut w = Warnings::default();
        let mut built = 0;
        for i in 0..1000 {
            w.push_with(|| {
                built += 1;
                format!("w{i}")
            });
        }
        assert_eq!(built, WARNINGS_MAX);
        assert_eq!(w.len(), WARNINGS_MAX + 1);
        assert!(counts_the_rest(&w[WARNINGS_MAX]));
        assert!(!w[..WARNINGS_MAX].iter().any(|l| counts_the_rest(l)));
        assert_eq!(w[0], "w0");
        assert_eq!(
            w[WARNINGS_MAX],
            format!("and {} more like these, not shown", 1000 - WARNINGS_MAX)
        );
        let mut few = Warnings::default();
        few.extend(["a".to_string(), "b".to_string()]);
        assert_eq!(&few[..], ["a", "b"]);
        // Appended, another list's count adds to this one's, once.
        few.append(&w);
        assert_eq!(few.len(), WARNINGS_MAX + 1);
        assert_eq!(few[2], "w0");
        assert_eq!(
            few[WARNINGS_MAX],
            format!("and {} more like these, not shown", 1000 - WARNINGS_MAX + 2)
        );
        assert_eq!(few.iter().filter(|l| counts_the_rest(l)).count(), 1);
    }
}
