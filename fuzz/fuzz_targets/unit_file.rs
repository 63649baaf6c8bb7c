//! The unit-file parser, then every ExecStart= value through the ExecStart
//! parser and the word splitter (both flag sets), as the wrapper does at boot.
#![no_main]
use kubelet_labeler::node::sorted::SortedMap;
use kubelet_labeler::node::unit::{Host, SpecifierValues, exec, syntax, words};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let spec = SpecifierValues {
        host: Host::Fixed(SortedMap::from([
            ('H', "node".to_string()),
            ('t', "/run".to_string()),
        ])),
        unit: "kubelet.service".into(),
        fragment: None,
        cache: Default::default(),
    };
    let parsed = syntax::parse(data, "kubelet.service");
    let _ = format!("{parsed:?}");
    // The raw bytes as one ExecStart value too (the splitter sees any text).
    let _ = words::split(data, words::UNIT);
    let _ = words::split(data, words::ENV_VALUE);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = exec::parse_exec(text, &spec);
        let _ = spec.expand(data);
    }
    let _ = kubelet_labeler::node::unit::env_file::parse_env_file(data);
});
