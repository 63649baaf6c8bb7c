//! The ISO reader: ISO9660 walk, IGNINFO.JSO, the embed area's archives.
#![no_main]
use std::io::Write;

use kubelet_labeler::cli::iso;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The embed area's decoder on the raw bytes.
    let _ = iso::read_members(data);
    // The whole image, through a file as the CLI reads it.
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(data).unwrap();
    if let Ok(area) = iso::find_area(&mut f) {
        assert!(
            area.offset
                .checked_add(area.length)
                .is_some_and(|end| end <= data.len() as u64)
        );
        let bytes = &data[area.offset as usize..(area.offset + area.length) as usize];
        let _ = iso::read_members(bytes);
    }
});
