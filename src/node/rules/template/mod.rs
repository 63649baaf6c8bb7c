//! The part of Go's `text/template` that NFD rule templates use, std only.
//! Parsed at render (errors carry the byte offset, see `line_col`); the
//! wrapper gets the parsed tree (`to_wire`/`from_wire`) and executes it
//! against the matched features with `missingkey=error`, then splits the
//! output into `key=value` pairs as NFD's `ExpandMap` does.
//!
//! Supported: text; `{{ .a.b }}`; `$`, `$x`, `$x.f`; `{{ $x := … }}` and
//! `{{ $x = … }}`; `if`/`else if`/`else`/`end`; `range` (with `$i, $e :=`
//! and `else`; over an integer n as Go >= 1.22: 0 to n-1), `break` and
//! `continue`; `len` (also as `… | len`); parentheses; string, integer and
//! `true`/`false` literals; `{{-`/`-}}` trimming; `{{/* comments */}}`;
//! the builtins `index`, `not`, `and`, `or` (short-circuit), `eq` (several
//! operands), `ne`, `lt`, `le`, `gt`, `ge` with Go's rules (published rules
//! use `(index .pci.device 0).device` and `gt (len …) 0`).
//! Semantics are those of the Go NFD is built with (>= 1.24). Everything
//! else (other functions, `with`, `define`, `template`, `block`, other
//! number forms) is refused at parse time.

use std::borrow::Cow;
use std::fmt::{self, Write};

use super::Element;
use crate::node::sorted::SortedMap;

mod cost;
mod exec;
mod parse;

pub use cost::{DataBounds, RunCost};
pub use exec::{OUTPUT_BYTE, OUTPUT_PAIR, RunError};
pub use parse::parse;

/// Template data: `.<domain>.<feature>` → matched elements.
pub type Data = SortedMap<String, SortedMap<String, Vec<Element>>>;

/// NFD's `MaxTemplateSize`.
pub const MAX_SOURCE: usize = 64 * 1024;
/// Output cap (labels are short; a runaway template stops here).
pub const MAX_OUTPUT: usize = 4 * 1024;
/// Executed actions and loop iterations per run.
pub const MAX_STEPS: usize = 100_000;
/// Bytes compared (`eq`, `lt`, ...) per run.
pub const MAX_COMPARED: usize = 1 << 20;
/// Budget units of variable lookups, field and `index` lookups and
/// function arguments per run (`VAR_UNITS`, `PROBE_UNITS`, `ARG_UNITS`):
/// tens of thousands of steps reading a field or two each, a millisecond
/// or so (a template past it stops as out of budget, as past `MAX_STEPS`).
pub const MAX_LOOKED: u64 = 1 << 20;
/// Nesting of blocks and parentheses.
const MAX_DEPTH: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// Byte offset in the template source.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

impl std::error::Error for TemplateError {}

/// 1-based line and column (in characters) of a byte offset in `src`.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(src.len());
    while !src.is_char_boundary(end) {
        end -= 1;
    }
    let before = &src[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Text(String),
    /// Prints the pipeline's value unless it declares a variable.
    Action(Pipe),
    If {
        pipe: Pipe,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
    Range {
        pipe: Pipe,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    /// `{{break}}` and `{{continue}}` (inside a range body only).
    Break,
    Continue,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Pipe {
    /// Declared or assigned variables (`$i, $e :=` in range).
    vars: Vec<String>,
    assign: bool,
    cmds: Vec<Cmd>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Cmd {
    Operand(Operand),
    /// A builtin; a piped value is its last argument.
    Call(Func, Vec<Operand>),
}

/// Go's builtins that published rules use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Len,
    Index,
    Not,
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

const FUNCS: &[(&str, Func)] = &[
    ("len", Func::Len),
    ("index", Func::Index),
    ("not", Func::Not),
    ("and", Func::And),
    ("or", Func::Or),
    ("eq", Func::Eq),
    ("ne", Func::Ne),
    ("lt", Func::Lt),
    ("le", Func::Le),
    ("gt", Func::Gt),
    ("ge", Func::Ge),
];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Operand {
    /// `.a.b` on dot (empty chain = dot itself).
    Field(Vec<String>),
    /// `$x.a.b` (`$` is the root).
    Var(String, Vec<String>),
    Str(String),
    Int(i64),
    Bool(bool),
    /// `( … )`, with a field chain right after it (`(index .l 0).device`).
    Paren(Box<Pipe>, Vec<String>),
}

// ---- wire form (see `compact`): the parsed tree, prefix order ----
//
// `<n>:` counts and numbers, `<len>:` strings. nodes = `<n>:` node*;
// node = `t` text | `a` pipe | `i` pipe nodes nodes | `r` pipe nodes nodes
// | `b` break | `c` continue;
// pipe = `<n>:` var* (`y` assign | `n`) cmds; cmds = `<n>:` cmd*;
// cmd = `o` operand | `f` function (`a` + its index in FUNCS) `<n>:` operand*;
// operand = `F` chain | `V` name chain | `S` string | `I<int>:` | `T` | `X`
// (true, false) | `P` cmds chain; chain = `<n>:` name*.

/// Nesting the decoder accepts (blocks, and parentheses), above what the
/// parser makes; it bounds the executor's recursion too.
const MAX_WIRE_DEPTH: usize = 2 * MAX_DEPTH;

impl Template {
    /// Whether running it may look at its data: any action at all (a
    /// template of text alone prints itself whatever the data).
    pub fn reads_data(&self) -> bool {
        self.nodes.iter().any(|n| !matches!(n, Node::Text(_)))
    }

    /// The parsed tree in its wire form.
    pub fn to_wire(&self) -> String {
        let mut out = String::new();
        put_nodes(&mut out, &self.nodes);
        out
    }

    /// A tree from its wire form; None unless all of `wire` is one, nested
    /// at most `MAX_WIRE_DEPTH`.
    pub fn from_wire(wire: &str) -> Option<Template> {
        let mut r = super::wire::Reader::new(wire);
        let nodes = get_nodes(&mut r, 0)?;
        r.is_empty().then_some(Template { nodes })
    }
}

fn put_num(out: &mut String, n: impl fmt::Display) {
    let _ = write!(out, "{n}:");
}

fn put_str(out: &mut String, s: &str) {
    put_num(out, s.len());
    out.push_str(s);
}

fn put_strs(out: &mut String, v: &[String]) {
    put_num(out, v.len());
    for s in v {
        put_str(out, s);
    }
}

fn put_nodes(out: &mut String, nodes: &[Node]) {
    put_num(out, nodes.len());
    for node in nodes {
        match node {
            Node::Text(t) => {
                out.push('t');
                put_str(out, t);
            }
            Node::Action(p) => {
                out.push('a');
                put_pipe(out, p);
            }
            Node::Break => out.push('b'),
            Node::Continue => out.push('c'),
            Node::If {
                pipe,
                then: a,
                otherwise: b,
            }
            | Node::Range {
                pipe,
                body: a,
                otherwise: b,
            } => {
                out.push(if matches!(node, Node::If { .. }) {
                    'i'
                } else {
                    'r'
                });
                put_pipe(out, pipe);
                put_nodes(out, a);
                put_nodes(out, b);
            }
        }
    }
}

fn put_pipe(out: &mut String, p: &Pipe) {
    put_strs(out, &p.vars);
    out.push(if p.assign { 'y' } else { 'n' });
    put_cmds(out, &p.cmds);
}

fn put_cmds(out: &mut String, cmds: &[Cmd]) {
    put_num(out, cmds.len());
    for cmd in cmds {
        match cmd {
            Cmd::Operand(o) => {
                out.push('o');
                put_operand(out, o);
            }
            Cmd::Call(f, args) => {
                out.push('f');
                let k = FUNCS.iter().position(|p| p.1 == *f).unwrap_or(0);
                out.push((b'a' + k as u8) as char);
                put_num(out, args.len());
                for a in args {
                    put_operand(out, a);
                }
            }
        }
    }
}

fn put_operand(out: &mut String, o: &Operand) {
    match o {
        Operand::Field(chain) => {
            out.push('F');
            put_strs(out, chain);
        }
        Operand::Var(name, chain) => {
            out.push('V');
            put_str(out, name);
            put_strs(out, chain);
        }
        Operand::Str(s) => {
            out.push('S');
            put_str(out, s);
        }
        Operand::Int(i) => {
            out.push('I');
            put_num(out, i);
        }
        Operand::Bool(b) => out.push(if *b { 'T' } else { 'X' }),
        Operand::Paren(p, chain) => {
            out.push('P');
            put_cmds(out, &p.cmds);
            put_strs(out, chain);
        }
    }
}

type Wire<'a, 'b> = &'b mut super::wire::Reader<'a>;

/// Counts are checked against what is left: every item takes a byte.
fn get_count(r: Wire) -> Option<usize> {
    let left = r.left();
    r.num(left)
}

fn get_strs(r: Wire) -> Option<Vec<String>> {
    let n = get_count(r)?;
    let mut v = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        v.push(r.str()?.to_string());
    }
    Some(v)
}

fn get_nodes(r: Wire, depth: usize) -> Option<Vec<Node>> {
    if depth > MAX_WIRE_DEPTH {
        return None;
    }
    let n = get_count(r)?;
    let mut nodes = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        nodes.push(match r.char()? {
            't' => Node::Text(r.str()?.to_string()),
            'a' => Node::Action(get_pipe(r)?),
            'b' => Node::Break,
            'c' => Node::Continue,
            op @ ('i' | 'r') => {
                let pipe = get_pipe(r)?;
                let a = get_nodes(r, depth + 1)?;
                let b = get_nodes(r, depth + 1)?;
                if op == 'i' {
                    Node::If {
                        pipe,
                        then: a,
                        otherwise: b,
                    }
                } else {
                    Node::Range {
                        pipe,
                        body: a,
                        otherwise: b,
                    }
                }
            }
            _ => return None,
        });
    }
    Some(nodes)
}

fn get_pipe(r: Wire) -> Option<Pipe> {
    let vars = get_strs(r)?;
    let assign = match r.char()? {
        'y' => true,
        'n' => false,
        _ => return None,
    };
    Some(Pipe {
        vars,
        assign,
        cmds: get_cmds(r, 0)?,
    })
}

fn get_cmds(r: Wire, depth: usize) -> Option<Vec<Cmd>> {
    if depth > MAX_WIRE_DEPTH {
        return None;
    }
    let n = get_count(r)?;
    let mut cmds = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        cmds.push(match r.char()? {
            'o' => Cmd::Operand(get_operand(r, depth)?),
            'f' => {
                let k = (r.char()? as usize).checked_sub('a' as usize)?;
                let f = FUNCS.get(k)?.1;
                let n = get_count(r)?;
                let mut args = Vec::with_capacity(n.min(64));
                for _ in 0..n {
                    args.push(get_operand(r, depth)?);
                }
                Cmd::Call(f, args)
            }
            _ => return None,
        });
    }
    Some(cmds)
}

fn get_operand(r: Wire, depth: usize) -> Option<Operand> {
    Some(match r.char()? {
        'F' => Operand::Field(get_strs(r)?),
        'V' => Operand::Var(r.str()?.to_string(), get_strs(r)?),
        'S' => Operand::Str(r.str()?.to_string()),
        'I' => Operand::Int(r.int()?),
        'T' => Operand::Bool(true),
        'X' => Operand::Bool(false),
        'P' => {
            let cmds = get_cmds(r, depth + 1)?;
            let pipe = Pipe {
                vars: Vec::new(),
                assign: false,
                cmds,
            };
            Operand::Paren(Box::new(pipe), get_strs(r)?)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::rules::budget::Lin;

    fn el(pairs: &[(&str, &str)]) -> Element {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn data() -> Data {
        let mut d = Data::new();
        d.entry("pci".into()).or_default().insert(
            "device".into(),
            vec![
                el(&[("class", "0302"), ("vendor", "10de")]),
                el(&[("class", "0302"), ("vendor", "10de"), ("device", "2330")]),
            ],
        );
        d.entry("cpu".into()).or_default().insert(
            "cpuid".into(),
            vec![el(&[("Name", "AVX")]), el(&[("Name", "SSE4")])],
        );
        d
    }

    /// Parse, then run the tree as the wrapper gets it (wire form, decoded),
    /// which must equal and run as the parsed one.
    fn run(src: &str) -> Result<String, String> {
        let t = parse(src).map_err(|e| e.to_string())?;
        let decoded = Template::from_wire(&t.to_wire()).expect("wire form decodes");
        assert_eq!(decoded, t, "{src}");
        let out = decoded.execute(&data());
        assert_eq!(out, t.execute(&data()), "{src}");
        out
    }

    #[test]
    fn wire_form_refuses_what_is_not_a_tree() {
        let t = parse(
            "{{ range $i, $e := .pci.device }}{{ if and (gt (len $.pci.device) -1) (eq $e.class \"0300\" \"x\") }}\
             {{ (index $.pci.device 0).vendor }}{{ else if not true }}:{{ else }}{{ $i }}{{ end }}{{ end }}",
        )
        .unwrap();
        let wire = t.to_wire();
        assert_eq!(Template::from_wire(&wire), Some(t));
        // Every cut and every one-byte change gives a tree or None, never a panic.
        for i in 0..wire.len() {
            let _ = Template::from_wire(&wire[..i]);
            for b in [b'0', b'9', b':', b'a', b'P', b'f', b'z', b'-'] {
                let mut m = wire.clone().into_bytes();
                m[i] = b;
                if let Ok(m) = String::from_utf8(m) {
                    let _ = Template::from_wire(&m).map(|t| t.execute(&data()));
                }
            }
        }
        for bad in [
            "",
            "1:",
            "1:q",
            "1:t5:ab",
            "0:x",
            "1:fz0:",
            "1:aX",
            "1:a0:n1:oI99999999999999999999:",
        ] {
            assert_eq!(Template::from_wire(bad), None, "{bad}");
        }
        // Nesting past the decoder's bound (the executor recurses per level).
        let deep = "1:i0:n1:oT".repeat(MAX_WIRE_DEPTH + 2) + &"0:0:".repeat(MAX_WIRE_DEPTH + 2);
        assert_eq!(Template::from_wire(&deep), None);
        let parens = format!(
            "1:a0:n1:{}0:{}",
            "oP1:".repeat(MAX_WIRE_DEPTH + 2),
            "0:".repeat(MAX_WIRE_DEPTH + 2)
        );
        assert_eq!(Template::from_wire(&parens), None);
    }

    #[test]
    fn published_forms() {
        assert_eq!(
            run("{{ range .pci.device }}pci-{{ .class }}_{{ .vendor }}.present=true\n{{ end }}")
                .unwrap(),
            "pci-0302_10de.present=true\npci-0302_10de.present=true\n"
        );
        assert_eq!(
            run("gpu.count={{ len .pci.device }}").unwrap(),
            "gpu.count=2"
        );
        assert_eq!(run("n={{ .pci.device | len }}").unwrap(), "n=2");
        assert_eq!(
            run("{{ range $i, $e := .cpu.cpuid }}{{ $i }}={{ $e.Name }};{{ end }}").unwrap(),
            "0=AVX;1=SSE4;"
        );
        assert_eq!(
            run("{{- /* c */ -}}\n  a  {{- if .pci.device }} yes {{- else }}no{{ end -}}  \n")
                .unwrap(),
            "a yes"
        );
        assert_eq!(
            run("{{ if len .cpu.cpuid }}x{{ else if .pci }}y{{ else }}z{{ end }}").unwrap(),
            "x"
        );
        assert_eq!(
            run("{{ range .pci.nothing }}{{ else }}none{{ end }}").unwrap_err(),
            "map has no entry for key \"nothing\""
        );
        assert_eq!(
            run("{{ .cpu.cpuid }}").unwrap(),
            "[map[Name:AVX] map[Name:SSE4]]"
        );
        assert_eq!(
            run("{{ $x := 3 }}{{ $x }}{{ \"a\\tb\" }}{{ `r` }}{{ true }}").unwrap(),
            "3a\tbrtrue"
        );
    }

    /// Templates and patterns of published NodeFeatureRules, on the matched
    /// elements NFD would hand them, with NFD's output.
    #[test]
    fn published_rules() {
        let mut d = Data::new();
        let max1550 = el(&[("class", "0380"), ("vendor", "8086"), ("device", "0bd5")]);
        d.entry("pci".into())
            .or_default()
            .insert("device".into(), vec![max1550.clone(), max1550]);
        let expand = |src: &str| parse(src).unwrap().expand_map(&d).unwrap();
        let kv = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        // intel/intel-device-plugins-for-kubernetes:
        // deployments/nfd/overlays/node-feature-rules/platform-labeling-rules.yaml
        assert_eq!(
            expand(
                "{{ range .pci.device }}gpu.intel.com/device-id.{{ .class }}-{{ .device }}.present=true\n{{ end }}\n"
            ),
            kv("gpu.intel.com/device-id.0380-0bd5.present", "true")
        );
        assert_eq!(
            expand(
                "gpu.intel.com/device-id.0380-{{ (index .pci.device 0).device }}.count={{ len .pci.device }}"
            ),
            kv("gpu.intel.com/device-id.0380-0bd5.count", "2")
        );
        assert_eq!(
            expand("gpu.intel.com/device.count={{ len .pci.device }}"),
            kv("gpu.intel.com/device.count", "2")
        );
        // kubernetes-sigs/node-feature-discovery: docs/usage/customization-guide.md
        assert_eq!(
            expand(
                "{{ range .pci.device }}vendor-{{ .class }}-{{ .device }}.present=true\n{{ end }}\n"
            ),
            kv("vendor-0380-0bd5.present", "true")
        );
        // The counting forms published rules and examples/rules/gpu-classes.yaml use.
        assert_eq!(
            expand("{{ if gt (len .pci.device) 1 }}hardware.tier=multi-gpu{{ end }}"),
            kv("hardware.tier", "multi-gpu")
        );
        // InRegexp values: NFD's customization guide (`^02`, matchName
        // `^AVX`), NVIDIA GPU Operator OpenShift guides (`^03`), system.name
        // rules (`^gn-`, `^worker-[0-9]+$`).
        for (pat, yes, no) in [
            ("^02", "0200", "0302"),
            ("^03", "0302", "0200"),
            ("^AVX", "AVX512F", "SSE4"),
            ("^gn-", "gn-01", "cn-gn-01"),
            ("^worker-[0-9]+$", "worker-12", "worker-1a"),
        ] {
            let re = super::super::regex::Regex::new(pat).unwrap();
            assert!(re.is_match(yes) && !re.is_match(no), "{pat}");
        }
    }

    #[test]
    fn builtins_as_go() {
        for (src, want) in [
            ("{{ index .pci.device 1 \"device\" }}", Ok("2330")),
            ("{{ index .pci.device 2 }}", Err("index out of range: 2")),
            ("{{ index .pci.device -1 }}", Err("index out of range: -1")),
            ("{{ index . \"nope\" \"x\" }}", Ok("<no value>")),
            ("{{ index .pci \"nope\" }}", Ok("<no value>")),
            ("{{ index .pci \"nope\" 0 }}", Err("index of nil pointer")),
            ("{{ index .pci.device 0 \"nope\" }}", Ok("")),
            ("{{ index \"ab\" 1 }}", Ok("98")),
            (
                "{{ index .pci 0 }}",
                Err("value has type int; should be string"),
            ),
            (
                "{{ eq 1 2 3 1 }}{{ eq \"a\" \"b\" }}{{ ne true false }}",
                Ok("truefalsetrue"),
            ),
            ("{{ eq 1 \"1\" }}", Err("incompatible types for comparison")),
            ("{{ eq 1 1 .pci }}", Ok("true")),
            ("{{ lt true false }}", Err("invalid type for comparison")),
            (
                "{{ lt \"a\" \"b\" }}{{ le 2 2 }}{{ gt 1 2 }}{{ ge 2 2 }}",
                Ok("truetruefalsetrue"),
            ),
            (
                "{{ and 1 0 .nope }}{{ or 0 \"\" }}{{ or 0 \"x\" .nope }}{{ not .pci }}",
                Ok("0xfalse"),
            ),
            ("{{ 2 | lt 1 }}", Ok("true")),
        ] {
            assert_eq!(
                run(src).as_deref(),
                want.map_err(|e| e.to_string()).as_deref(),
                "{src}"
            );
        }
    }

    #[test]
    fn missing_keys_error() {
        assert!(run("{{ range .pci.device }}{{ .device }}{{ end }}").is_err());
        assert!(run("{{ .gpu.device }}").is_err());
        assert!(run("{{ .pci.device.vendor }}").is_err());
    }

    /// Go >= 1.22 ranges over an integer; Go 1.18's break and continue.
    #[test]
    fn range_over_int_break_continue() {
        let ok = |src: &str| run(src).unwrap();
        assert_eq!(ok("{{ range 3 }}{{ . }},{{ end }}"), "0,1,2,");
        assert_eq!(ok("{{ range $i := 2 }}s{{ $i }}{{ end }}"), "s0s1");
        assert_eq!(ok("{{ range -1 }}x{{ else }}none{{ end }}"), "none");
        assert_eq!(ok("{{ range 0 }}x{{ else }}none{{ end }}"), "none");
        assert_eq!(ok("{{ range len .pci.device }}{{ . }}{{ end }}"), "01");
        assert!(run("{{ range $i, $e := 2 }}{{ end }}").is_err());
        assert!(run("{{ range $i, $e := 0 }}{{ end }}").is_err());
        assert!(run("{{ range true }}{{ end }}").is_err());
        assert!(run("{{ range 1000000000000 }}{{ end }}").is_err());
        assert_eq!(
            ok(
                "{{ range 5 }}{{ if eq . 1 }}{{ continue }}{{ end }}{{ if eq . 3 }}{{ break }}{{ end }}{{ . }}{{ end }}"
            ),
            "02"
        );
        // A continue in an inner range's else list goes to the outer one;
        // a break there ends only the inner range.
        assert_eq!(
            ok("{{ range 2 }}a{{ range 0 }}{{ else }}{{ continue }}{{ end }}b{{ end }}"),
            "aa"
        );
        assert_eq!(
            ok("{{ range 2 }}a{{ range 0 }}{{ else }}{{ range 1 }}{{ end }}{{ end }}b{{ end }}"),
            "abab"
        );
        for bad in [
            "{{ break }}",
            "{{ range 1 }}{{ else }}{{ break }}{{ end }}",
            "{{ range 1 }}{{ break 1 }}{{ end }}",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let t = parse("{{ range 3 }}{{ if eq . 1 }}{{ break }}{{ end }}{{ continue }}{{ end }}")
            .unwrap();
        assert_eq!(Template::from_wire(&t.to_wire()), Some(t));
    }

    #[test]
    fn refusals_have_offsets() {
        for (src, off) in [
            ("ab{{ printf \"%d\" 1 }}", 5),
            ("{{ with .pci }}{{ end }}", 0),
            ("x\n{{ if .a }}", 2),
            ("{{ end }}", 0),
            ("{{ .a | .b }}", 8),
            ("{{ $x }}", 3),
            ("{{ 0x10 }}", 3),
            ("{{ slice .a }}", 3),
            ("{{ printf }}", 3),
            ("{{ lower .a }}", 3),
            ("{{ .a", 0),
        ] {
            let e = parse(src).expect_err(src);
            assert_eq!(e.offset, off, "{src}: {e}");
        }
        assert_eq!(line_col("x\n{{ if .a }}", 2), (2, 1));
    }

    #[test]
    fn expand_map_as_nfd() {
        let t = parse(" a=1\n\n b = 2 \nc=x=y\na=3").unwrap();
        assert_eq!(
            t.expand_map(&data()).unwrap(),
            vec![
                ("a".into(), "3".into()),
                ("b ".into(), " 2".into()),
                ("c".into(), "x=y".into())
            ]
        );
        assert!(parse("novalue").unwrap().expand_map(&data()).is_err());
    }

    #[test]
    fn bounded() {
        let mut d = Data::new();
        d.entry("a".into())
            .or_default()
            .insert("b".into(), vec![Element::new(); 400]);
        let t =
            parse("{{ range .a.b }}{{ range $.a.b }}{{ range $.a.b }}x{{ end }}{{ end }}{{ end }}")
                .unwrap();
        // The caps are ours, not NFD's: past one the evaluation fails as a
        // whole, as when its budget runs out (here unbounded).
        let e = t.execute(&d).unwrap_err();
        assert!(e.contains("out of budget"), "{e}");
        let t =
            parse("{{ range .a.b }}{{ range $.a.b }}{{ range $.a.b }}{{ end }}{{ end }}{{ end }}")
                .unwrap();
        assert!(t.execute(&d).unwrap_err().contains("out of budget"));
    }

    /// `range N` collects nothing and a literal is not copied per step:
    /// what a run spends is counted, and stops at the budget given.
    #[test]
    fn runs_within_a_budget() {
        let t =
            parse("{{ range 30000 }}{{ $x := \"a long literal, not copied\" }}{{ end }}").unwrap();
        let mut left = u64::MAX;
        assert_eq!(t.execute_within(&data(), &mut left), Ok(String::new()));
        let spent = u64::MAX - left;
        let bounds = DataBounds {
            elements: Lin::ZERO,
            bytes: Lin::ZERO,
        };
        let worst = t.worst_case(&bounds);
        assert!(spent <= worst.units.at(0), "{spent} > {worst:?}");
        let mut left = spent / 2;
        assert_eq!(t.execute_within(&data(), &mut left), Err(RunError::Budget));
        // Output counts before it is made: the cap is never passed.
        let t = parse("{{ range 1000 }}{{ $ }}{{ end }}").unwrap();
        let e = t.execute(&data()).unwrap_err();
        assert!(e.contains("out of budget"), "{e}");
    }
}
