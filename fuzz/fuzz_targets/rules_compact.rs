//! The compact rules decoder the wrapper runs at boot, then what it decoded
//! run: the evaluator, every decoded regex program (the Pike VM) on a few
//! strings and every decoded template tree (the executor); decode(encode(x))
//! == x for whatever decodes.
#![no_main]
use kubelet_labeler::node::facts::Features;
use kubelet_labeler::node::rules::{self, RuleTemplate, compact, template};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(decoded) = compact::decode(text) {
        let _ = rules::evaluate(&decoded, &Features::default());
        let empty = template::Data::default();
        for r in &decoded {
            for t in [&r.labels_template, &r.vars_template].into_iter().flatten() {
                if let RuleTemplate(Ok(t)) = t {
                    let _ = t.expand_map(&empty);
                }
            }
            let terms = r.match_features.iter().chain(r.match_any.iter().flatten());
            for term in terms {
                let exprs = term.match_expressions.iter().flatten().map(|(_, e)| e);
                for e in exprs.chain(&term.match_name) {
                    for re in e.regexes.iter().flatten() {
                        for s in ["", "10de", "0300", "a\nb", "AVX512F", "\u{212A}é"] {
                            let _ = re.is_match(s);
                        }
                        let _ = re.is_match(text);
                    }
                }
            }
        }
        let again = compact::decode(&compact::encode(&decoded));
        assert_eq!(again.as_ref(), Ok(&decoded), "encode/decode round trip");
    }
});
