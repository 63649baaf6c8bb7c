//! The kubelet config reader (registerWithTaints from YAML or JSON text, a
//! --config file and the same text as a drop-in): no panic, no hang.
#![no_main]
use kubelet_labeler::node::kubelet::config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = config::register_with_taints(text);
        let _ = config::kubelet_taints(None, Some(&[text][..]));
    }
});
