//! The compact rules decoder the wrapper runs at boot, then the evaluator on
//! what it decoded; decode(encode(x)) == x for whatever decodes.
#![no_main]
use kubelet_labeler::facts::Features;
use kubelet_labeler::rules::{self, compact};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(decoded) = compact::decode(text) {
        let _ = rules::evaluate(&decoded, &Features::default());
        let again = compact::decode(&compact::encode(&decoded));
        assert_eq!(again.as_ref(), Ok(&decoded), "encode/decode round trip");
    }
});
