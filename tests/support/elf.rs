//! Static programs standing in for the wrapper and the selector: render and
//! explain read only the ELF header and the usage line that tells ours from
//! other programs; the bytes are carried, never run.

#![allow(dead_code)]

use kubelet_labeler::cli::render::arch::Arch;

/// A stand-in for our wrapper or selector: the ELF header of a static
/// executable for `arch`, then the heads of both usage lines (the
/// wrapper's with this release's node format).
pub fn static_elf(arch: Arch) -> Vec<u8> {
    let mut elf = foreign_static_elf(arch);
    use kubelet_labeler::node::contract::{
        NODE_FORMAT, SELECTOR_USAGE_HEAD, WRAPPER_FORMAT_MARK, WRAPPER_USAGE_HEAD,
    };
    // The wrapper's usage line ends with its node format.
    let usage = format!("{WRAPPER_USAGE_HEAD}--unit NAME]{WRAPPER_FORMAT_MARK}{NODE_FORMAT}");
    elf.extend_from_slice(usage.as_bytes());
    elf.extend_from_slice(SELECTOR_USAGE_HEAD.as_bytes());
    elf
}

/// The 64-byte ELF header of a static executable (ET_EXEC) for `arch`: some
/// other program than ours.
pub fn foreign_static_elf(arch: Arch) -> Vec<u8> {
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    elf[5] = if arch.big_endian() { 2 } else { 1 };
    let (t, m) = if arch.big_endian() {
        (2u16.to_be_bytes(), arch.elf_machine().to_be_bytes())
    } else {
        (2u16.to_le_bytes(), arch.elf_machine().to_le_bytes())
    };
    elf[16..18].copy_from_slice(&t);
    elf[18..20].copy_from_slice(&m);
    elf
}

/// An x86_64 header followed by 4 KiB of fixed filler, for tests that
/// compare the carried bytes.
pub fn static_x86_64_with_body() -> Vec<u8> {
    let mut v = static_elf(Arch::X86_64);
    v.extend((0..4096u32).map(|i| (i * 7 % 251) as u8));
    v
}
