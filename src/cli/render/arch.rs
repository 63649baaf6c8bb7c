//! The architectures a wrapper can be shipped for, by the names `uname -m`
//! prints on the node (the generator picks the binary by that name) and the
//! ELF header fields the kernel checks before it runs a program.

use anyhow::{Result, bail};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    X86_64,
    Aarch64,
    Ppc64le,
    S390x,
}

impl Arch {
    /// Every architecture OpenShift runs on, in the order render ships them.
    pub const ALL: [Arch; 4] = [Arch::X86_64, Arch::Aarch64, Arch::Ppc64le, Arch::S390x];

    /// What `uname -m` prints on such a node.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
            Arch::Ppc64le => "ppc64le",
            Arch::S390x => "s390x",
        }
    }

    pub fn from_name(name: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == name)
    }

    /// ELF e_machine (elf.h: EM_X86_64, EM_AARCH64, EM_PPC64, EM_S390).
    pub fn elf_machine(self) -> u16 {
        match self {
            Arch::X86_64 => 62,
            Arch::Aarch64 => 183,
            Arch::Ppc64le => 21,
            Arch::S390x => 22,
        }
    }

    /// s390x is the one big-endian architecture here (EI_DATA 2).
    pub fn big_endian(self) -> bool {
        self == Arch::S390x
    }

    /// The first 20 bytes of a 64-bit ELF program for this architecture as
    /// lowercase hex, `?` where any byte will do: magic, class 2 (64-bit),
    /// byte order, then e_machine at offset 18 in that order. What the
    /// generator compares `od` output with.
    pub fn elf_header_pattern(self) -> String {
        let m = self.elf_machine();
        let (data, machine) = if self.big_endian() {
            (2, m.to_be_bytes())
        } else {
            (1, m.to_le_bytes())
        };
        format!(
            "7f454c4602{data:02x}{}{:02x}{:02x}",
            "?".repeat(24),
            machine[0],
            machine[1]
        )
    }

    /// The architecture a 64-bit ELF program is built for, if one of ours.
    pub fn of_elf(bytes: &[u8]) -> Option<Arch> {
        if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
            return None;
        }
        let machine = match bytes[5] {
            1 => u16::from_le_bytes([bytes[18], bytes[19]]),
            2 => u16::from_be_bytes([bytes[18], bytes[19]]),
            _ => return None,
        };
        Arch::ALL
            .into_iter()
            .find(|a| a.elf_machine() == machine && (bytes[5] == 2) == a.big_endian())
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Wrapper binaries to ship, one per architecture, sorted by architecture.
/// Refuses two for one architecture.
pub fn one_per_arch(mut wrappers: Vec<(Arch, Vec<u8>)>) -> Result<Vec<(Arch, Vec<u8>)>> {
    wrappers.sort_by_key(|(a, _)| *a);
    for pair in wrappers.windows(2) {
        if pair[0].0 == pair[1].0 {
            bail!(
                "two wrappers for {}; give one --wrapper per architecture",
                pair[0].0
            );
        }
    }
    Ok(wrappers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(data: u8, machine: [u8; 2]) -> Vec<u8> {
        let mut v = vec![0u8; 64];
        v[..4].copy_from_slice(b"\x7fELF");
        v[4] = 2;
        v[5] = data;
        v[18..20].copy_from_slice(&machine);
        v
    }

    #[test]
    fn elf_machines_by_byte_order() {
        assert_eq!(Arch::of_elf(&header(1, [62, 0])), Some(Arch::X86_64));
        assert_eq!(Arch::of_elf(&header(1, [183, 0])), Some(Arch::Aarch64));
        assert_eq!(Arch::of_elf(&header(1, [21, 0])), Some(Arch::Ppc64le));
        assert_eq!(Arch::of_elf(&header(2, [0, 22])), Some(Arch::S390x));
        // Big-endian ppc64 (not OpenShift's) and a little-endian "s390x".
        assert_eq!(Arch::of_elf(&header(2, [0, 21])), None);
        assert_eq!(Arch::of_elf(&header(1, [22, 0])), None);
        assert_eq!(Arch::of_elf(b"#!/bin/sh\n"), None);
    }

    #[test]
    fn header_patterns_match_the_bytes() {
        for a in Arch::ALL {
            let mut v = header(if a.big_endian() { 2 } else { 1 }, [0, 0]);
            let m = if a.big_endian() {
                a.elf_machine().to_be_bytes()
            } else {
                a.elf_machine().to_le_bytes()
            };
            v[18..20].copy_from_slice(&m);
            v[7] = 0xab; // anything between byte 6 and 17
            let hex: String = v[..20].iter().map(|b| format!("{b:02x}")).collect();
            let pattern = a.elf_header_pattern();
            assert_eq!(pattern.len(), 40, "{a}");
            assert!(
                hex.chars()
                    .zip(pattern.chars())
                    .all(|(h, p)| p == '?' || h == p),
                "{a}: {hex} vs {pattern}"
            );
            assert_eq!(Arch::from_name(a.name()), Some(a));
        }
    }

    #[test]
    fn one_wrapper_per_architecture() {
        let w = vec![(Arch::Aarch64, vec![1]), (Arch::X86_64, vec![2])];
        let sorted = one_per_arch(w).unwrap();
        assert_eq!(sorted[0].0, Arch::X86_64);
        let twice = vec![(Arch::X86_64, vec![1]), (Arch::X86_64, vec![2])];
        assert!(
            one_per_arch(twice)
                .unwrap_err()
                .to_string()
                .contains("two wrappers")
        );
    }
}
