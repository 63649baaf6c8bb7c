//! Linux's limit on one argument or environment string of an `execve`.

/// `MAX_ARG_STRLEN` (include/uapi/linux/binfmts.h: 32 pages) on 4 KiB-page
/// kernels, the smallest it is: fs/exec.c `copy_strings` measures each
/// string with `strnlen_user`, which counts the terminating NUL, and fails
/// the exec with E2BIG when that exceeds the limit. A string may hold at
/// most `MAX_ARG_STRLEN - 1` bytes.
pub const MAX_ARG_STRLEN: usize = 32 * 4096;

/// Why a string of `len` bytes (without its NUL) cannot be one argument or
/// environment string of an exec, naming it as `what`; None when it can.
pub fn too_long(what: &str, len: usize) -> Option<String> {
    (len >= MAX_ARG_STRLEN).then(|| {
        format!(
            "{what} is {} bytes with its terminating NUL, more than the {MAX_ARG_STRLEN} \
             Linux allows one argument or environment string (MAX_ARG_STRLEN): exec \
             would fail with E2BIG",
            len + 1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nul_counts() {
        assert_eq!(too_long("w", MAX_ARG_STRLEN - 1), None);
        let why = too_long("the --node-labels= word", MAX_ARG_STRLEN).unwrap();
        assert!(
            why.contains("131073 bytes") && why.contains("131072"),
            "{why}"
        );
    }
}
