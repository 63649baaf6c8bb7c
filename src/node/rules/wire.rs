//! The wire reader under the compact rule form: regexes and templates
//! travel compiled, and each reads its own field's content with it (below
//! `compact`, `regex` and `template`, which all use it).

/// Reads the wire forms of compiled regexes and templates (each the content
/// of one field): characters, `<digits>:` numbers, `<len>:` strings.
pub(super) struct Reader<'a> {
    rest: &'a str,
}

impl<'a> Reader<'a> {
    pub(super) fn new(wire: &'a str) -> Reader<'a> {
        Reader { rest: wire }
    }

    pub(super) fn char(&mut self) -> Option<char> {
        let mut it = self.rest.chars();
        let c = it.next()?;
        self.rest = it.as_str();
        Some(c)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// Bytes not read yet.
    pub(super) fn left(&self) -> usize {
        self.rest.len()
    }

    /// `<digits>:`, at most `max`.
    pub(super) fn num(&mut self, max: usize) -> Option<usize> {
        self.digits()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n <= max)
    }

    /// `[-]<digits>:`.
    pub(super) fn int(&mut self) -> Option<i64> {
        match self.rest.strip_prefix('-') {
            Some(rest) => {
                self.rest = rest;
                0i64.checked_sub_unsigned(self.digits()?)
            }
            None => i64::try_from(self.digits()?).ok(),
        }
    }

    /// `<digits>:` (a loop, not `str::parse`: boot decodes many of these).
    fn digits(&mut self) -> Option<u64> {
        let b = self.rest.as_bytes();
        let mut n: u64 = 0;
        let mut i = 0;
        while let Some(&d) = b.get(i).filter(|d| d.is_ascii_digit()) {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            i += 1;
        }
        if i == 0 || b.get(i) != Some(&b':') {
            return None;
        }
        self.rest = &self.rest[i + 1..];
        Some(n)
    }

    /// `<len>:` and that many bytes.
    pub(super) fn str(&mut self) -> Option<&'a str> {
        let n = self.num(self.rest.len())?;
        let s = self.rest.get(..n)?;
        self.rest = &self.rest[n..];
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_numbers_are_bounded() {
        let int = |s: &str| Reader::new(s).int();
        assert_eq!(int("-9223372036854775808:"), Some(i64::MIN));
        assert_eq!(int("9223372036854775807:"), Some(i64::MAX));
        for bad in [
            "9223372036854775808:",
            "99999999999999999999:",
            "",
            ":",
            "-:",
            "1",
            "+1:",
            "1a:",
        ] {
            assert_eq!(int(bad), None, "{bad}");
        }
        assert_eq!(Reader::new("007:").num(7), Some(7));
        assert_eq!(Reader::new("8:").num(7), None);
        let mut r = Reader::new("4:ab\u{e9}1:\u{e9}");
        assert_eq!(
            (r.str(), r.str(), r.is_empty()),
            (Some("ab\u{e9}"), None, false)
        );
    }
}
