//! The check `iso embed` runs on a user's Ignition config: any bytes give
//! an answer (no panic), and a refusal names the input.
#![no_main]
use kubelet_labeler::cli::iso;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match iso::check_ignition(data, "in.ign") {
        Ok(checked) => assert!(iso::IGNITION_VERSIONS.contains(&checked.version.as_str())),
        Err(e) => assert!(e.to_string().contains("in.ign")),
    }
});
