//! The compact rule form: what render writes into `contract::RULES_VAR` and
//! the wrapper reads at boot (no YAML parser on the node). One line of
//! printable ASCII without space, `"`, `\`, `%`, `$`, `'` or `;`, so it sits in a quoted
//! `Environment=` value with no escaping.
//!
//! Layout: `KLR5` then comma-separated fields, every list preceded by its
//! count:
//!
//! ```text
//! KLR5,<rules>,<rule>...
//! rule  = name,<n>,(key,value)*,labelsTemplate,<n>,(key,value)*,varsTemplate,
//!         <n>,(key,value,effect)*,<n>,term*,<n>,(<n>,term*)*
//! term  = feature,<n|~N>,(key,op,<n>,value*)*,<op|~N>,[<n>,value*]
//! op    = NFD's name, `+v` after it for `type: version`
//! ```
//!
//! Strings: bytes of `[0-9A-Za-z]` and ``#&()*+-./:<=>?@[]^_`{|}`` as they
//! are, a space as `!`, any other byte as `~` and two upper-case hex digits
//! (UTF-8 bytes, so any string survives); `~N` is an absent optional value.
//! Templates and `InRegexp` patterns travel compiled, so the wrapper needs
//! no parser: a template field is `T` and the tree's wire form
//! (`template::Template::to_wire`), an `InRegexp` value `R` and the
//! program's (`regex::Regex::to_wire`); either may be `X` and the error
//! that compiling gave (reported when the rule runs, as NFD does).

use super::regex::Regex;
use super::template::Template;
use super::{Expr, Op, Rule, RuleTemplate, Term};
use crate::node::kubelet::{Taint, TaintEffect};

/// `KLR` and the node format (`crate::node::contract::NODE_FORMAT`): a
/// wrapper of another format refuses the rules by their header.
pub const HEADER: &str = concat!("KLR", crate::node_format!());
/// Bounds decode enforces (the env line itself is bounded by systemd).
pub const MAX_ENCODED: usize = 1 << 20;
const MAX_RULES: usize = 4096;
const MAX_ITEMS: usize = 4096;

/// Encode rules into the compact form.
pub fn encode(rules: &[Rule]) -> String {
    let mut out = String::from(HEADER);
    let n = |out: &mut String, n: usize| {
        out.push(',');
        out.push_str(&n.to_string());
    };
    n(&mut out, rules.len());
    for r in rules {
        field(&mut out, &r.name);
        pairs(&mut out, &r.labels);
        template(&mut out, &r.labels_template);
        pairs(&mut out, &r.vars);
        template(&mut out, &r.vars_template);
        n(&mut out, r.taints.len());
        for t in &r.taints {
            field(&mut out, &t.key);
            field(&mut out, &t.value);
            field(&mut out, t.effect.as_str());
        }
        terms(&mut out, &r.match_features);
        n(&mut out, r.match_any.len());
        for block in &r.match_any {
            terms(&mut out, block);
        }
    }
    out
}

fn pairs(out: &mut String, kv: &[(String, String)]) {
    out.push(',');
    out.push_str(&kv.len().to_string());
    for (k, v) in kv {
        field(out, k);
        field(out, v);
    }
}

fn terms(out: &mut String, ts: &[Term]) {
    out.push(',');
    out.push_str(&ts.len().to_string());
    for t in ts {
        field(out, &t.feature);
        match &t.match_expressions {
            None => out.push_str(",~N"),
            Some(exprs) => {
                out.push(',');
                out.push_str(&exprs.len().to_string());
                for (k, e) in exprs {
                    field(out, k);
                    expr(out, e);
                }
            }
        }
        match &t.match_name {
            None => out.push_str(",~N"),
            Some(e) => expr(out, e),
        }
    }
}

fn expr(out: &mut String, e: &Expr) {
    if e.version {
        field(out, &format!("{}+v", op_name(e.op)));
    } else {
        field(out, op_name(e.op));
    }
    out.push(',');
    if e.op == Op::InRegexp {
        out.push_str(&e.regexes.len().to_string());
        for re in &e.regexes {
            match re {
                Ok(re) => field(out, &format!("R{}", re.to_wire())),
                Err(why) => field(out, &format!("X{why}")),
            }
        }
        return;
    }
    out.push_str(&e.value.len().to_string());
    for v in &e.value {
        field(out, v);
    }
}

fn template(out: &mut String, t: &Option<RuleTemplate>) {
    match t {
        None => out.push_str(",~N"),
        Some(RuleTemplate(Ok(t))) => field(out, &format!("T{}", t.to_wire())),
        Some(RuleTemplate(Err(why))) => field(out, &format!("X{why}")),
    }
}

fn field(out: &mut String, s: &str) {
    out.push(',');
    for b in s.bytes() {
        match b {
            b' ' => out.push('!'),
            b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z' => out.push(b as char),
            b'#' | b'&' | b'(' | b')' | b'*' | b'+' | b'-' | b'.' | b'/' | b':' | b'<' | b'='
            | b'>' | b'?' | b'@' | b'[' | b']' | b'^' | b'_' | b'`' | b'{' | b'|' | b'}' => {
                out.push(b as char)
            }
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('~');
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
    }
}

pub fn op_name(op: Op) -> &'static str {
    match op {
        Op::Any => "Any",
        Op::In => "In",
        Op::NotIn => "NotIn",
        Op::InRegexp => "InRegexp",
        Op::Exists => "Exists",
        Op::DoesNotExist => "DoesNotExist",
        Op::Gt => "Gt",
        Op::Ge => "Ge",
        Op::Lt => "Lt",
        Op::Le => "Le",
        Op::GtLt => "GtLt",
        Op::GeLe => "GeLe",
        Op::IsTrue => "IsTrue",
        Op::IsFalse => "IsFalse",
    }
}

/// NFD's operator name → `Op`.
pub fn parse_op(name: &str) -> Option<Op> {
    Op::ALL.into_iter().find(|op| op_name(*op) == name)
}

/// Decode the compact form; an error says what is wrong and where.
pub fn decode(text: &str) -> Result<Vec<Rule>, String> {
    if text.len() > MAX_ENCODED {
        return Err(format!(
            "compact rules: {} bytes, more than {MAX_ENCODED}",
            text.len()
        ));
    }
    let mut c = Cursor {
        text,
        pos: 0,
        done: false,
        rule: 0,
        section: "",
    };
    let (head, _) = c.raw("header")?;
    if head != HEADER {
        return Err(format!(
            "compact rules: header {:?}, expected {HEADER:?} (render and wrapper versions differ?)",
            trunc(head)
        ));
    }
    let n = c.count("rule count", MAX_RULES)?;
    let mut rules = Vec::with_capacity(n.min(64));
    for i in 0..n {
        c.rule = i + 1;
        let name = c.string("name")?;
        let labels = c.pairs("labels")?;
        let labels_template = c.template("labelsTemplate")?;
        let vars = c.pairs("vars")?;
        let vars_template = c.template("varsTemplate")?;
        let nt = c.count("taint count", MAX_ITEMS)?;
        let mut taints = Vec::with_capacity(nt.min(64));
        for _ in 0..nt {
            let key = c.string("taint key")?;
            let value = c.string("taint value")?;
            let (e, off) = c.raw("taint effect")?;
            let effect = match e {
                "NoSchedule" => TaintEffect::NoSchedule,
                "PreferNoSchedule" => TaintEffect::PreferNoSchedule,
                "NoExecute" => TaintEffect::NoExecute,
                _ => {
                    return Err(c.err(
                        off,
                        "taint effect",
                        &format!("unknown effect {:?}", trunc(e)),
                    ));
                }
            };
            taints.push(Taint { key, value, effect });
        }
        let match_features = c.terms("matchFeatures")?;
        let na = c.count("matchAny count", MAX_ITEMS)?;
        let mut match_any = Vec::with_capacity(na.min(64));
        for _ in 0..na {
            match_any.push(c.terms("matchAny")?);
        }
        rules.push(Rule {
            name,
            labels,
            labels_template,
            vars,
            vars_template,
            taints,
            match_features,
            match_any,
        });
    }
    if !c.done {
        return Err(c.err(c.pos, "end", "unexpected data after the last rule"));
    }
    Ok(rules)
}

fn trunc(s: &str) -> &str {
    let mut end = s.len().min(40);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

struct Cursor<'a> {
    text: &'a str,
    pos: usize,
    done: bool,
    /// Where we are, for errors (formatted only on error: decode is on
    /// the boot path).
    rule: usize,
    section: &'static str,
}

impl<'a> Cursor<'a> {
    fn err(&self, offset: usize, what: &str, why: &str) -> String {
        let mut at = String::new();
        if self.rule > 0 {
            at = format!("rule {} ", self.rule);
        }
        if !self.section.is_empty() {
            at = format!("{at}{} ", self.section);
        }
        format!("compact rules: {at}{what} at byte {offset}: {why}")
    }

    /// The next comma-separated field, undecoded, and its offset.
    fn raw(&mut self, what: &'static str) -> Result<(&'a str, usize), String> {
        if self.done {
            return Err(self.err(self.text.len(), what, "missing (data ends early)"));
        }
        let start = self.pos;
        let rest = &self.text[start..];
        let f = match rest.find(',') {
            Some(i) => {
                self.pos = start + i + 1;
                &rest[..i]
            }
            None => {
                self.done = true;
                self.pos = self.text.len();
                rest
            }
        };
        Ok((f, start))
    }

    fn count(&mut self, what: &'static str, max: usize) -> Result<usize, String> {
        let (f, off) = self.raw(what)?;
        let n: usize = f
            .parse()
            .ok()
            .filter(|_| !f.starts_with('+'))
            .ok_or_else(|| {
                self.err(
                    off,
                    what,
                    &format!("expected a count, found {:?}", trunc(f)),
                )
            })?;
        if n > max {
            return Err(self.err(off, what, &format!("{n} is more than {max}")));
        }
        Ok(n)
    }

    fn string(&mut self, what: &'static str) -> Result<String, String> {
        let at = self.pos;
        self.opt(what)?
            .ok_or_else(|| self.err(at, what, "a value is required here"))
    }

    fn opt(&mut self, what: &'static str) -> Result<Option<String>, String> {
        let (f, off) = self.raw(what)?;
        if f == "~N" {
            return Ok(None);
        }
        let b = f.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'!' => out.push(b' '),
                b'~' => {
                    let hex = f
                        .get(i + 1..i + 3)
                        .and_then(|h| u8::from_str_radix(h, 16).ok());
                    let Some(v) = hex
                        .filter(|_| b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit())
                    else {
                        return Err(self.err(off + i, what, "bad ~ escape"));
                    };
                    out.push(v);
                    i += 2;
                }
                c if c.is_ascii_graphic()
                    && !matches!(c, b'"' | b'\\' | b'%' | b'$' | b'\'' | b';') =>
                {
                    out.push(c)
                }
                _ => return Err(self.err(off + i, what, "character outside the compact charset")),
            }
            i += 1;
        }
        String::from_utf8(out)
            .map(Some)
            .map_err(|_| self.err(off, what, "escapes do not form UTF-8"))
    }

    fn pairs(&mut self, what: &'static str) -> Result<Vec<(String, String)>, String> {
        self.section = what;
        let n = self.count("count", MAX_ITEMS)?;
        let mut v = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            v.push((self.string("key")?, self.string("value")?));
        }
        self.section = "";
        Ok(v)
    }

    fn terms(&mut self, what: &'static str) -> Result<Vec<Term>, String> {
        self.section = what;
        let n = self.count("term count", MAX_ITEMS)?;
        let mut terms = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            let feature = self.string("feature")?;
            let (f, off) = self.raw("matchExpressions")?;
            let match_expressions = if f == "~N" {
                None
            } else {
                self.pos = off;
                self.done = false;
                let n = self.count("matchExpressions count", MAX_ITEMS)?;
                let mut exprs = Vec::with_capacity(n.min(64));
                for _ in 0..n {
                    let key = self.string("matchExpressions key")?;
                    exprs.push((key, self.expr("matchExpressions")?));
                }
                Some(exprs)
            };
            let (f, off) = self.raw("matchName")?;
            let match_name = if f == "~N" {
                None
            } else {
                self.pos = off;
                self.done = false;
                Some(self.expr("matchName")?)
            };
            terms.push(Term {
                feature,
                match_expressions,
                match_name,
            });
        }
        self.section = "";
        Ok(terms)
    }

    fn expr(&mut self, what: &'static str) -> Result<Expr, String> {
        let (f, off) = self.raw(what)?;
        let (name, version) = match f.strip_suffix("+v") {
            Some(n) => (n, true),
            None => (f, false),
        };
        let op = parse_op(name)
            .ok_or_else(|| self.err(off, what, &format!("unknown op {:?}", trunc(f))))?;
        let n = self.count("value count", MAX_ITEMS)?;
        let mut value = Vec::with_capacity(n.min(64));
        let mut regexes = Vec::new();
        for _ in 0..n {
            if op != Op::InRegexp {
                value.push(self.string("value")?);
                continue;
            }
            let at = self.pos;
            let re = self.compiled("regexp", 'R', Regex::from_wire)?;
            regexes.push(re.ok_or_else(|| self.err(at, "regexp", "a value is required here"))?);
        }
        Ok(Expr {
            op,
            value,
            regexes,
            version,
        })
    }

    fn template(&mut self, what: &'static str) -> Result<Option<RuleTemplate>, String> {
        Ok(self
            .compiled(what, 'T', Template::from_wire)?
            .map(RuleTemplate))
    }

    /// A compiled item: `tag` and its wire form, which `decode` reads, or
    /// `X` and the compile error it carries; None for `~N`.
    fn compiled<T>(
        &mut self,
        what: &'static str,
        tag: char,
        decode: fn(&str) -> Option<T>,
    ) -> Result<Option<Result<T, String>>, String> {
        let at = self.pos;
        let Some(mut s) = self.opt(what)? else {
            return Ok(None);
        };
        match s.chars().next() {
            Some(c) if c == tag => decode(&s[1..]).map(|t| Some(Ok(t))).ok_or_else(|| {
                self.err(at, what, "not a compiled form (its wire form is damaged)")
            }),
            Some('X') => Ok(Some(Err(s.split_off(1)))),
            _ => Err(self.err(
                at,
                what,
                &format!("expected a compiled form ({tag}, or X and an error)"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Rule> {
        vec![
            Rule {
                name: "nvidia gpus; 100% \"quoted\" $HOME 'x' \\ é ✓".into(),
                labels: vec![
                    ("nvidia.com/gpu".into(), "true".into()),
                    ("".into(), "".into()),
                ],
                labels_template: Some(
                    "{{ range .pci.device }}pci-{{ .class }}_{{ .vendor }}.present=true\n{{ end }}"
                        .into(),
                ),
                vars: vec![("v".into(), "~N".into())],
                vars_template: None,
                taints: vec![Taint {
                    key: "nvidia.com/gpu".into(),
                    value: "true".into(),
                    effect: TaintEffect::NoSchedule,
                }],
                match_features: vec![Term {
                    feature: "pci.device".into(),
                    match_expressions: Some(vec![
                        ("vendor".into(), Expr::new(Op::In, vec!["10de".into()])),
                        (
                            "class".into(),
                            Expr::new(
                                Op::InRegexp,
                                vec![r"^03(0[02])?$".into(), "(?i)k[^a-fé]\\b".into(), "(".into()],
                            ),
                        ),
                    ]),
                    match_name: Some(Expr::new(Op::Exists, vec![])),
                }],
                match_any: vec![
                    vec![],
                    vec![Term {
                        feature: "cpu.cpuid".into(),
                        match_expressions: Some(vec![]),
                        match_name: None,
                    }],
                ],
            },
            Rule::default(),
        ]
    }

    fn charset_ok(s: &str) -> bool {
        s.bytes().all(|b| {
            b.is_ascii_graphic() && !matches!(b, b'"' | b'\\' | b'%' | b'$' | b'\'' | b';')
        })
    }

    #[test]
    fn roundtrip_hand_written() {
        let rules = sample();
        let text = encode(&rules);
        assert!(charset_ok(&text), "{text}");
        assert!(text.starts_with("KLR5,2,"));
        assert_eq!(decode(&text).unwrap(), rules);
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
    }

    /// xorshift64*: deterministic, no crate needed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn string(&mut self) -> String {
            const POOL: &[char] = &[
                'a', 'Z', '0', ' ', ',', '~', '!', 'N', '%', '$', ';', '"', '\'', '\\', '\n', '\t',
                '\0', 'é', '✓', '𝄞', '{', '}', '=', '.',
            ];
            (0..self.below(12))
                .map(|_| POOL[self.below(POOL.len())])
                .collect()
        }
        fn expr(&mut self) -> Expr {
            let mut e = Expr::new(
                Op::ALL[self.below(Op::ALL.len())],
                (0..self.below(3)).map(|_| self.string()).collect(),
            );
            e.version = self.below(3) == 0;
            e
        }
        fn terms(&mut self) -> Vec<Term> {
            (0..self.below(3))
                .map(|_| Term {
                    feature: self.string(),
                    match_expressions: (self.below(2) == 0).then(|| {
                        (0..self.below(3))
                            .map(|_| (self.string(), self.expr()))
                            .collect()
                    }),
                    match_name: (self.below(2) == 0).then(|| self.expr()),
                })
                .collect()
        }
        fn rule(&mut self) -> Rule {
            let effects = [
                TaintEffect::NoSchedule,
                TaintEffect::PreferNoSchedule,
                TaintEffect::NoExecute,
            ];
            Rule {
                name: self.string(),
                labels: (0..self.below(3))
                    .map(|_| (self.string(), self.string()))
                    .collect(),
                labels_template: (self.below(2) == 0).then(|| self.string().into()),
                vars: (0..self.below(3))
                    .map(|_| (self.string(), self.string()))
                    .collect(),
                vars_template: (self.below(2) == 0).then(|| self.string().into()),
                taints: (0..self.below(3))
                    .map(|_| Taint {
                        key: self.string(),
                        value: self.string(),
                        effect: effects[self.below(3)],
                    })
                    .collect(),
                match_features: self.terms(),
                match_any: (0..self.below(3)).map(|_| self.terms()).collect(),
            }
        }
    }

    #[test]
    fn roundtrip_randomized() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..500 {
            let rules: Vec<Rule> = (0..rng.below(4)).map(|_| rng.rule()).collect();
            let text = encode(&rules);
            assert!(charset_ok(&text), "{text}");
            assert_eq!(decode(&text).as_ref(), Ok(&rules), "{text}");
        }
    }

    /// One rule, one `InRegexp` expression whose value field is `wire`.
    fn regex_rule(wire: &str) -> String {
        format!("KLR5,1,n,0,~N,0,~N,0,1,f,1,k,InRegexp,1,{wire},~N,0")
    }

    #[test]
    fn decode_never_panics_and_says_where() {
        let mut rng = Rng(42);
        let good = encode(&sample());
        for _ in 0..3000 {
            let mut b = good.clone().into_bytes();
            match rng.below(4) {
                0 => b.truncate(rng.below(b.len())),
                1 => {
                    let i = rng.below(b.len());
                    b[i] = b"0123456789,~!N9aZ-\xff"[rng.below(19)];
                }
                2 => {
                    let i = rng.below(b.len());
                    b.insert(i, b',');
                }
                _ => {
                    let i = rng.below(b.len());
                    b.remove(i);
                }
            }
            let text = String::from_utf8_lossy(&b);
            if let Err(e) = decode(&text) {
                assert!(e.starts_with("compact rules: "), "{e}");
            }
        }
        for (text, want) in [
            ("", "header"),
            (
                "KLR1,0",
                "header \"KLR1\", expected \"KLR5\" (render and wrapper versions differ?)",
            ),
            ("KLR5", "rule count at byte 4: missing"),
            ("KLR5,x", "rule count at byte 5: expected a count"),
            ("KLR5,99999", "more than 4096"),
            ("KLR5,0,", "unexpected data"),
            ("KLR5,1,a b", "rule 1 name at byte 8: character outside"),
            ("KLR5,1,a~4", "bad ~ escape"),
            ("KLR5,1,~FF", "UTF-8"),
            (
                "KLR5,1,n,0,Q",
                "labelsTemplate at byte 11: expected a compiled form",
            ),
            (
                "KLR5,1,n,0,T1:q",
                "labelsTemplate at byte 11: not a compiled form",
            ),
            ("KLR5,1,n,0,T1:t9:x", "not a compiled form"),
            (
                "KLR5,1,n,0,~N,0,T0:t",
                "varsTemplate at byte 16: not a compiled form",
            ),
            (
                &regex_rule("RS9:M"),
                "regexp at byte 40: not a compiled form",
            ),
            (&regex_rule("RcaJ0:"), "not a compiled form"),
            (&regex_rule("RC2:az"), "not a compiled form"),
            (&regex_rule("R"), "not a compiled form"),
        ] {
            let e = decode(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
