use super::*;
use serde_json::json;

const PATH: &str = "/etc/containers/registries.conf";

fn file(toml: &str) -> Value {
    let url = format!(
        "data:,{}",
        crate::cli::render::encoding::percent_encode(toml.as_bytes())
    );
    json!({"path": PATH, "contents": {"source": url}, "overwrite": true})
}

fn verdict(old: &str, new: &str) -> Verdict {
    judge(Some(&file(old)), Some(&file(new)))
}

fn safe(old: &str, new: &str) -> bool {
    verdict(old, new) == Verdict::Safe
}

const ONE: &str = "[[registry]]\nlocation = \"quay.io/a\"\n\n[[registry.mirror]]\nlocation = \"m.example.com/a\"\n";

#[test]
fn only_digest_only_mirrors_and_registries_added_are_safe() {
    let added =
        |pull: &str| format!("{ONE}\n[[registry.mirror]]\nlocation = \"n.example.com/a\"\n{pull}");
    assert!(safe(ONE, &added("pull-from-mirror = \"digest-only\"\n")));
    assert!(!safe(ONE, &added("")));
    assert!(!safe(ONE, &added("pull-from-mirror = \"all\"\n")));
    assert!(!safe(ONE, &added("pull-from-mirror = \"tag-only\"\n")));
    // The registry's mirror-by-digest-only covers a mirror added.
    let by_digest = ONE.replace(
        "\"quay.io/a\"\n",
        "\"quay.io/a\"\nmirror-by-digest-only = true\n",
    );
    let grown = format!("{by_digest}[[registry.mirror]]\nlocation = \"n.example.com/a\"\n");
    // The registry's flag itself is not compared.
    assert!(safe(ONE, &by_digest));
    assert!(safe(&by_digest, &grown));
    // A registry added: every mirror digest-only, or none and the registry's flag.
    let reg = |body: &str| format!("{ONE}[[registry]]\nlocation = \"r.io/b\"\n{body}");
    assert!(safe(
        ONE,
        &reg("[[registry.mirror]]\nlocation = \"x\"\npull-from-mirror = \"digest-only\"\n")
    ));
    assert!(!safe(ONE, &reg("[[registry.mirror]]\nlocation = \"x\"\n")));
    assert!(safe(ONE, &reg("mirror-by-digest-only = true\n")));
    assert!(!safe(ONE, &reg("blocked = true\n")));
    // The registry's flag does not cover its mirrors when it is new.
    assert!(!safe(
        ONE,
        &reg("mirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"x\"\n")
    ));
}

#[test]
fn removals_and_flips_drain() {
    assert!(!safe(ONE, "[[registry]]\nlocation = \"quay.io/a\"\n"));
    assert!(!safe(ONE, ""));
    for flip in ["blocked = true\n", "insecure = true\n"] {
        let flipped = ONE.replace("\"quay.io/a\"\n", &format!("\"quay.io/a\"\n{flip}"));
        assert!(!safe(ONE, &flipped), "{flip}");
    }
    // A prefix keeps the registry's key: its location changes.
    let at = |loc: &str| format!("[[registry]]\nprefix = \"quay.io/a\"\nlocation = \"{loc}\"\n");
    assert!(!safe(&at("quay.io/a"), &at("quay.io/b")));
    // Without a prefix, a location changed is a registry removed.
    assert!(!safe(ONE, &ONE.replace("quay.io/a", "quay.io/b")));
    // The MCO does not look at a mirror's insecure flag or order.
    let m2 =
        format!("{ONE}[[registry.mirror]]\nlocation = \"n\"\npull-from-mirror = \"digest-only\"\n");
    assert!(safe(
        &m2,
        &m2.replace("location = \"n\"\n", "location = \"n\"\ninsecure = true\n")
    ));
    // pull-from-mirror: only a change to digest-only is safe.
    let pull = |p: &str| format!("{ONE}pull-from-mirror = \"{p}\"\n");
    assert!(safe(&pull("all"), &pull("digest-only")));
    assert!(!safe(&pull("digest-only"), &pull("all")));
    assert!(!safe(&pull("digest-only"), ONE));
    assert!(!safe(&pull("all"), &pull("tag-only")));
}

#[test]
fn search_registries_may_only_grow_at_the_end() {
    let s = |l: &str| format!("unqualified-search-registries = [{l}]\n");
    assert!(safe(&s("\"a\""), &s("\"a\", \"b\"")));
    assert!(!safe(&s("\"a\", \"b\""), &s("\"a\"")));
    assert!(!safe(&s("\"a\", \"b\""), &s("\"b\", \"a\"")));
    // What the daemon does not compare: safe.
    assert!(safe(
        "short-name-mode = \"enforcing\"\n",
        "short-name-mode = \"disabled\"\n"
    ));
    assert!(safe(
        "",
        "credential-helpers = [\"a\"]\n[aliases]\n\"x\" = \"quay.io/x\"\n"
    ));
    assert!(safe(
        ONE,
        &format!("# a comment\n\n{}", ONE.replace(" = ", "="))
    ));
}

#[test]
fn what_the_go_reader_reads_or_refuses_differently_drains() {
    // Keys by Go's EqualFold, one field each.
    assert!(safe(ONE, &ONE.replace("location", "LOCATION")));
    assert!(safe(ONE, &ONE.replace("[[registry", "[[Registry")));
    // Two keys for one field: Go takes them in map order.
    assert!(!safe(ONE, &ONE.replace("[[registry]]", "[[Registry]]")));
    let kelvin = |k: &str| ONE.replace("\"quay.io/a\"\n", &format!("\"quay.io/a\"\n{k} = true\n"));
    assert!(
        !safe(ONE, &kelvin("\"bloc\u{212A}ed\"")),
        "blocked, by the Kelvin sign"
    );
    assert!(safe(ONE, &kelvin("\"bloc\u{212A}\u{212A}ed\"")));
    // A bare key beyond ASCII is TOML 1.1.
    assert!(!safe(ONE, &kelvin("bloc\u{212A}\u{212A}ed")));
    let twice = ONE.replace(
        "\"quay.io/a\"\n",
        "\"quay.io/a\"\nLocation = \"quay.io/a\"\n",
    );
    assert!(!safe(ONE, &twice));
    // A wrong type fails the file (the update fails); aliases is the
    // exception Go leaves alone.
    assert!(!safe("", "registry = \"x\"\n"));
    assert!(!safe("", "short-name-mode = true\n"));
    assert!(!safe(ONE, &format!("{ONE}insecure = \"yes\"\n")));
    assert!(safe("", "aliases = \"x\"\n"));
    assert!(!safe("", "[aliases]\nx = 1\n"));
    // TOML errors and TOML 1.1.
    assert!(!safe(ONE, &format!("{ONE}location = \"again\"\n")));
    assert!(!safe("", "unqualified-search-registries = [\"\\e\"]\n"));
    assert!(!safe("", "unqualified-search-registries = [\"\\x41\"]\n"));
    assert!(safe(
        "",
        "unqualified-search-registries = [\"\\\\e\", '\\x']\n"
    ));
    assert!(!safe("", "registry = [{location = \"a\",}]\n"));
    assert!(!safe("", "registry = [{location = \"a\",\n}]\n"));
    assert!(safe(
        "",
        "registry = [{location = \"a\", mirror-by-digest-only = true}]\n"
    ));
    assert!(!safe("", "x = 1\n"));
    assert!(!safe("", "x = 1979-05-27\n"));
    // The file as the daemon gets it: never decompressed, absent is empty.
    let gz = json!({"path": PATH, "contents": {"source": "data:;base64,H4sIAAAAAAAA/wMAAAAAAAAAAAA=", "compression": "gzip"}});
    assert_ne!(judge(None, Some(&gz)), Verdict::Safe);
    assert_eq!(judge(None, None), Verdict::Safe);
    assert_eq!(
        judge(None, Some(&file("short-name-mode = \"x\"\n"))),
        Verdict::Safe
    );
    assert!(safe("", "\u{FEFF}# bom\n"));
    // One mark is skipped as the Go reader skips it; a second it refuses.
    assert!(!safe("", "\u{FEFF}\u{FEFF}# bom\n"));
    let read = |bytes: &[u8]| decode(bytes).map(|_| ()).map_err(|e| e.to_string());
    assert_eq!(read(b"\xef\xbb\xbf# bom\n"), Ok(()));
    let twice = read(b"\xef\xbb\xbf\xef\xbb\xbf# bom\n").unwrap_err();
    assert!(twice.contains("two byte order marks"), "{twice}");
    // UTF-16's mark, in either order, as the Go reader skips it.
    assert_eq!(read(b"\xff\xfe# bom\n"), Ok(()));
    assert_eq!(read(b"\xfe\xff# bom\n"), Ok(()));
    assert!(read(b"\xff\xfe\xef\xbb\xbf# bom\n").is_err());
}
