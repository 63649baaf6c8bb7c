
use super::*;

use crate::node::kubelet::taint as t;

#[test]
fn yaml_block_list() {
    let text = "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n\
                    registerWithTaints:\n  - key: a # comment\n    value: \"b\"\n    effect: NoSchedule\n\
                    \x20 - {key: c, effect: NoExecute}\n  -\n    key: 'd'\n    effect: PreferNoSchedule\n\
                    maxPods: 250\n";
    assert_eq!(
        register_with_taints(text).unwrap().unwrap(),
        vec![
            t("a", "b", TaintEffect::NoSchedule),
            t("c", "", TaintEffect::NoExecute),
            t("d", "", TaintEffect::PreferNoSchedule)
        ]
    );
}

#[test]
fn yaml_sequence_at_key_indent() {
    let text = "registerWithTaints:\n- key: a\n  effect: NoSchedule\nfoo: bar\n";
    assert_eq!(
        register_with_taints(text).unwrap().unwrap(),
        vec![t("a", "", TaintEffect::NoSchedule)]
    );
}

#[test]
fn json_and_flow() {
    let json = r#"{"kind":"KubeletConfiguration","registerWithTaints":[{"key":"a","value":"b","effect":"NoExecute","timeAdded":null}],"maxPods":250}"#;
    assert_eq!(
        register_with_taints(json).unwrap().unwrap(),
        vec![t("a", "b", TaintEffect::NoExecute)]
    );
    assert_eq!(
        register_with_taints("registerWithTaints: []\n")
            .unwrap()
            .unwrap(),
        vec![]
    );
    assert_eq!(
        register_with_taints("registerWithTaints:\nmaxPods: 3\n")
            .unwrap()
            .unwrap(),
        vec![]
    );
}

#[test]
fn absent_is_none() {
    let mco = "kind: KubeletConfiguration\nauthentication:\n  x509:\n    clientCAFile: /x\n\
                   clusterDNS:\n  - 172.30.0.10\nfeatureGates:\n  A: true\n";
    assert_eq!(register_with_taints(mco).unwrap(), None);
    assert_eq!(register_with_taints(r#"{"maxPods": 1}"#).unwrap(), None);
    // a nested key of the same name is not the kubelet field
    assert_eq!(
        register_with_taints("x:\n  registerWithTaints: []\n").unwrap(),
        None
    );
}

#[test]
fn refuses_what_it_cannot_read() {
    for bad in [
        "registerWithTaints: &a\n  - key: a\n",
        "registerWithTaints:\n  - key: a\n    effect: *e\n",
        "registerWithTaints:\n  - key: a\n", // no effect
        "registerWithTaints:\n  - key: a\n    effect: bogus\n",
        "registerWithTaints:\n  - key: |\n      a\n",
        "registerWithTaints: {a: b}\n",
        "{\"registerWithTaints\": [1]}",
        "{\"registerWithTaints\": [",
    ] {
        assert!(register_with_taints(bad).is_err(), "{bad}");
    }
}

#[test]
fn only_one_document() {
    let one = "---\nregisterWithTaints: [{key: a, effect: NoSchedule}]\n";
    assert_eq!(register_with_taints(one).unwrap().unwrap().len(), 1);
    for bad in [
        "maxPods: 1\n---\nregisterWithTaints: [{key: a, effect: NoSchedule}]\n",
        "registerWithTaints: []\n---\nmaxPods: 1\n",
        "registerWithTaints: []\n...\n",
        "%YAML 1.1\n---\nregisterWithTaints: []\n",
        "--- {registerWithTaints: []}\n",
        "{\"registerWithTaints\": []} {}",
    ] {
        assert!(register_with_taints(bad).is_err(), "{bad}");
    }
}

#[test]
fn fields_yaml_would_not_read_as_strings_are_refused() {
    for typed in [
        "123",
        "1_000",
        "0x1F",
        "0o17",
        "-1",
        "+1",
        "1.5",
        ".5",
        "1e3",
        "1.0e-3",
        "yes",
        "No",
        "on",
        "OFF",
        "true",
        "y",
        ".inf",
        "-.Inf",
        ".nan",
        "2001-12-14",
        "2001-12-14T21:59:43Z",
    ] {
        let text =
            format!("registerWithTaints:\n- key: a\n  value: {typed}\n  effect: NoSchedule\n");
        assert!(register_with_taints(&text).is_err(), "{typed}");
    }
    let json = r#"{"registerWithTaints":[{"key":"a","value":1,"effect":"NoSchedule"}]}"#;
    assert!(register_with_taints(json).is_err());
    // quoted, they are strings; and plain strings that only look close
    for (text, value) in [
        ("'123'", "123"),
        ("\"yes\"", "yes"),
        ("1gpu", "1gpu"),
        ("v1.2", "v1.2"),
        ("1-2", "1-2"),
        ("e5", "e5"),
        ("null", ""),
        ("~", ""),
    ] {
        let doc = format!("registerWithTaints:\n- key: a\n  value: {text}\n  effect: NoSchedule\n");
        assert_eq!(
            register_with_taints(&doc).unwrap().unwrap(),
            vec![t("a", value, TaintEffect::NoSchedule)],
            "{text}"
        );
    }
}

#[test]
fn time_added_is_refused_unless_null() {
    let set = "registerWithTaints:\n- key: a\n  effect: NoSchedule\n  timeAdded: \"2024-01-01T00:00:00Z\"\n";
    assert!(
        register_with_taints(set)
            .unwrap_err()
            .to_string()
            .contains("timeAdded")
    );
    let null = "registerWithTaints:\n- key: a\n  effect: NoSchedule\n  timeAdded: null\n";
    assert_eq!(register_with_taints(null).unwrap().unwrap().len(), 1);
}

#[test]
fn comments_quotes_and_flow_forms() {
    let text = "# kubelet\nkind: KubeletConfiguration # trailing\n\
                    \"registerWithTaints\": # the list\n\
                    \x20\x20# a comment line inside\n\
                    \x20\x20- {key: \"a#b\", value: 'it''s', effect: NoSchedule}\n\
                    \x20\x20- key: c\n    effect: NoExecute # why\n";
    assert_eq!(
        register_with_taints(text).unwrap().unwrap(),
        vec![
            t("a#b", "it's", TaintEffect::NoSchedule),
            t("c", "", TaintEffect::NoExecute)
        ]
    );
    let pretty = "{\n  \"kind\": \"KubeletConfiguration\",\n  \"registerWithTaints\": [\n    {\n      \"key\": \"a\",\n      \"effect\": \"NoSchedule\"\n    }\n  ]\n}\n";
    assert_eq!(
        register_with_taints(pretty).unwrap().unwrap(),
        vec![t("a", "", TaintEffect::NoSchedule)]
    );
    // the last of duplicate keys, as the Go YAML/JSON readers keep
    let dup =
        r#"{"registerWithTaints":[{"key":"a","effect":"NoSchedule"}],"registerWithTaints":[]}"#;
    assert_eq!(register_with_taints(dup).unwrap().unwrap(), vec![]);
}
