//! Values a rule compares with what the node reads, in a form the node
//! never reads: NFD (and the wrapper, which reads as NFD does) compares
//! `In`/`NotIn` values as exact strings, and some attributes have one
//! fixed form. `pci.device`'s IDs are the kernel's `0x%04x` without `0x`
//! (`10de`), its class the first 4 of the 6 hex digits (`0302`); `usb.device`'s
//! vendor and device are `%04x` (`046d`), its class `%02x` (`03`);
//! `cpu.model`'s family and id are decimal numbers (`6`, `143`), its
//! vendor_id NFD's vendor name (`Intel`, not `/proc/cpuinfo`'s
//! `GenuineIntel`, nor `intel`). A value in another form never equals one the node
//! reads: in `In` it never matches, in `NotIn` it excludes nothing. Render
//! and explain warn, naming the rule, feature, attribute, value, the form
//! and the value meant where it is clear. Not a refusal: the rule is what
//! NFD would evaluate, and NFD accepts it too.

use crate::node::rules::{Op, Rule, Term};

/// The fixed forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// 4 lower-case hex digits, no `0x`.
    Hex4,
    /// PCI class: 4 lower-case hex digits (base class and subclass).
    PciClass,
    /// 2 lower-case hex digits.
    Hex2,
    /// A decimal number, no leading zero.
    Decimal,
    /// NFD's CPU vendor name.
    Vendor,
}

/// The attributes with a fixed form: (feature, attribute, form).
const FORMS: &[(&str, &str, Form)] = &[
    ("pci.device", "class", Form::PciClass),
    ("pci.device", "vendor", Form::Hex4),
    ("pci.device", "device", Form::Hex4),
    ("pci.device", "subsystem_vendor", Form::Hex4),
    ("pci.device", "subsystem_device", Form::Hex4),
    ("usb.device", "class", Form::Hex2),
    ("usb.device", "vendor", Form::Hex4),
    ("usb.device", "device", Form::Hex4),
    ("cpu.model", "family", Form::Decimal),
    ("cpu.model", "id", Form::Decimal),
    ("cpu.model", "vendor_id", Form::Vendor),
];

/// NFD's CPU vendor names (klauspost/cpuid's, as `facts::cpu` reads them),
/// and `/proc/cpuinfo`'s x86 vendor strings with the name NFD gives them.
const VENDORS: &[&str] = &[
    "Intel",
    "AMD",
    "Hygon",
    "VIA",
    "Transmeta",
    "NSC",
    "SiS",
    "Zhaoxin",
    "ARM",
    "Broadcom",
    "Cavium",
    "DEC",
    "Fujitsu",
    "Infineon",
    "Motorola",
    "NVIDIA",
    "AMCC",
    "Qualcomm",
    "Marvell",
    "Ampere",
    "Apple",
    "KVM",
    "MSVM",
    "VMware",
    "XenHVM",
    "Bhyve",
    "QEMU",
    "QNX",
    "ACRN",
    "SRE",
    "RDC",
    "VendorUnknown",
];
const CPUINFO_VENDORS: &[(&str, &str)] = &[
    ("GenuineIntel", "Intel"),
    ("AuthenticAMD", "AMD"),
    ("HygonGenuine", "Hygon"),
    ("CentaurHauls", "VIA"),
    ("GenuineTMx86", "Transmeta"),
    ("TransmetaCPU", "Transmeta"),
];

impl Form {
    fn describe(self) -> &'static str {
        match self {
            Form::Hex4 => "4 lower-case hex digits without 0x (e.g. \"10de\")",
            Form::PciClass => {
                "the class as 4 lower-case hex digits, base class and subclass (e.g. \"0302\")"
            }
            Form::Hex2 => "2 lower-case hex digits (e.g. \"03\")",
            Form::Decimal => "a decimal number without leading zeros (e.g. \"6\")",
            Form::Vendor => "NFD's vendor name (Intel, AMD, ARM, ...)",
        }
    }

    fn fits(self, v: &str) -> bool {
        let hex = |n: usize| {
            v.len() == n
                && v.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        match self {
            Form::Hex4 | Form::PciClass => hex(4),
            Form::Hex2 => hex(2),
            Form::Decimal => {
                !v.is_empty()
                    && v.bytes().all(|b| b.is_ascii_digit())
                    && (v == "0" || !v.starts_with('0'))
            }
            // Only a recognisable mistake: a vendor this list lacks (a
            // newer cpuid library's) is not judged.
            Form::Vendor => VENDORS.contains(&v) || self.hint(v).is_none(),
        }
    }

    /// The value meant, where it is clear; or how to write a prefix.
    fn hint(self, v: &str) -> Option<String> {
        let bare = v
            .strip_prefix("0x")
            .or_else(|| v.strip_prefix("0X"))
            .unwrap_or(v)
            .to_ascii_lowercase();
        let is_hex = !bare.is_empty() && bare.bytes().all(|b| b.is_ascii_hexdigit());
        match self {
            Form::Hex4 if is_hex && bare.len() <= 4 => Some(format!("write \"{bare:0>4}\"")),
            Form::Hex2 if is_hex && bare.len() <= 2 => Some(format!("write \"{bare:0>2}\"")),
            Form::PciClass if is_hex && (3..=4).contains(&bare.len()) => {
                Some(format!("write \"{bare:0>4}\""))
            }
            Form::PciClass if is_hex && bare.len() == 6 => Some(format!(
                "write \"{}\" (the node reads no programming interface)",
                &bare[..4]
            )),
            Form::PciClass if is_hex && bare.len() <= 2 => Some(format!(
                "for every subclass of base class {bare:0>2}, match with {{op: InRegexp, value: [\"^{bare:0>2}\"]}}"
            )),
            Form::Decimal => {
                let n = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                    Some(h) => u64::from_str_radix(h, 16).ok()?,
                    None => v.parse::<u64>().ok()?,
                };
                Some(format!("write \"{n}\""))
            }
            Form::Vendor => CPUINFO_VENDORS
                .iter()
                .find(|(raw, _)| *raw == v.trim())
                .map(|(_, name)| *name)
                .or_else(|| {
                    VENDORS
                        .iter()
                        .copied()
                        .find(|n| n.eq_ignore_ascii_case(v.trim()))
                })
                .map(|n| format!("write \"{n}\"")),
            _ => None,
        }
    }
}

/// The (feature, attribute) pairs whose values have a fixed form.
pub fn fixed() -> impl Iterator<Item = (&'static str, &'static str)> {
    FORMS.iter().map(|(f, a, _)| (*f, *a))
}

/// Whether `value` is in the form the node reads `feature`'s `attribute`
/// in (true where the attribute has no fixed form).
pub fn fits(feature: &str, attribute: &str, value: &str) -> bool {
    form(feature, attribute).is_none_or(|f| f.fits(value))
}

fn form(feature: &str, attribute: &str) -> Option<Form> {
    FORMS
        .iter()
        .find(|(f, a, _)| *f == feature && *a == attribute)
        .map(|(_, _, form)| *form)
}

/// The most lines of value warnings one run says, over all its rules;
/// the rest are counted in one last line. Review 40 r40b F2: 16 lines per
/// expression, built for every rule before any was said, made 120 MB of a
/// 0.9 MB rules file.
pub const RULES_WARNED_MAX: usize = 200;

/// The value warnings of a run's rules (without `warning: `): the first
/// [`RULES_WARNED_MAX`] lines, and how many more there were. A line past
/// the bound is counted, never built.
#[derive(Debug, Default)]
pub struct Warned {
    lines: Vec<String>,
    more: usize,
}

impl Warned {
    /// Warn about each value of `rule` the node can never read, `what`
    /// naming the rule (`rule "x" of NodeFeatureRule "y" (FILE)`), built
    /// only when a line is said.
    pub fn add(&mut self, rule: &Rule, what: impl FnOnce() -> String) {
        let terms = rule
            .match_features
            .iter()
            .chain(rule.match_any.iter().flatten());
        let mut what = Some(what);
        let mut name = String::new();
        for t in terms {
            self.term(t, &mut || {
                if let Some(f) = what.take() {
                    // Review 39 r39b F1: a rule's whole name in a warning
                    // per bad value made 200 MB of a 112 KB rules file.
                    name = crate::cli::output::shortened(&f(), 200, 40);
                }
                name.clone()
            });
        }
    }

    fn say(&mut self, line: impl FnOnce() -> String) {
        if self.lines.len() < RULES_WARNED_MAX {
            let line = line();
            // One value twice in an expression, or one expression in two
            // terms, is said once.
            if self.lines.last() != Some(&line) {
                self.lines.push(line);
            }
        } else {
            self.more += 1;
        }
    }

    fn term(&mut self, t: &Term, what: &mut dyn FnMut() -> String) {
        for (attr, expr) in t.match_expressions.iter().flatten() {
            if !matches!(expr.op, Op::In | Op::NotIn) {
                continue;
            }
            let Some(form) = form(&t.feature, attr) else {
                continue;
            };
            let misfits = expr.value.iter().filter(|v| !form.fits(v)).count();
            if misfits > WARNED_VALUES_MAX {
                self.say(|| {
                    format!(
                        "{}: {} {attr}: {} more values that do not fit how the node reads it \
                         (the first {WARNED_VALUES_MAX} follow)",
                        what(),
                        t.feature,
                        misfits - WARNED_VALUES_MAX
                    )
                });
            }
            for v in expr
                .value
                .iter()
                .filter(|v| !form.fits(v))
                .take(WARNED_VALUES_MAX)
            {
                self.say(|| {
                    let effect = match expr.op {
                        Op::In => "never matches",
                        _ => "excludes nothing",
                    };
                    let hint = form.hint(v).map(|h| format!("; {h}")).unwrap_or_default();
                    format!(
                        "{}: {} {attr} {v:?} ({:?}) {effect}: the node reads {attr} as {}{hint}",
                        what(),
                        t.feature,
                        expr.op,
                        form.describe()
                    )
                });
            }
        }
    }

    /// The lines, and one that counts the rest.
    pub fn into_lines(self) -> Vec<String> {
        let mut lines = self.lines;
        if self.more > 0 {
            lines.push(format!(
                "and {} more values of the rules that do not fit how the node reads them \
                 (the first {RULES_WARNED_MAX} are above: fix those and run again to see the rest)",
                self.more
            ));
        }
        lines
    }
}

/// The most values of one expression warned about one by one.
const WARNED_VALUES_MAX: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::rules::Expr;

    fn warnings(rule: &Rule, what: &str) -> Vec<String> {
        let mut warned = Warned::default();
        warned.add(rule, || what.to_string());
        warned.into_lines()
    }

    fn rule(feature: &str, attr: &str, op: Op, values: &[&str]) -> Rule {
        Rule {
            name: "r".into(),
            match_features: vec![Term {
                feature: feature.into(),
                match_expressions: Some(vec![(
                    attr.into(),
                    Expr::new(op, values.iter().map(|v| v.to_string()).collect()),
                )]),
                match_name: None,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn forms_and_hints() {
        let w = |f: &str, a: &str, op: Op, v: &[&str]| warnings(&rule(f, a, op, v), "rule \"r\"");
        assert!(w("pci.device", "vendor", Op::In, &["10de", "8086"]).is_empty());
        assert!(w("pci.device", "class", Op::In, &["0302"]).is_empty());
        let got = w("pci.device", "vendor", Op::In, &["0x10de"]);
        assert_eq!(got.len(), 1);
        assert!(
            got[0].contains("pci.device vendor \"0x10de\" (In) never matches")
                && got[0].ends_with("write \"10de\""),
            "{got:?}"
        );
        assert!(w("pci.device", "vendor", Op::In, &["10DE"])[0].ends_with("write \"10de\""));
        assert!(w("pci.device", "class", Op::In, &["302"])[0].ends_with("write \"0302\""));
        assert!(w("pci.device", "class", Op::In, &["030200"])[0].contains("write \"0302\""));
        assert!(w("pci.device", "class", Op::In, &["03"])[0].contains("InRegexp"));
        assert!(w("pci.device", "device", Op::NotIn, &["0x2330"])[0].contains("excludes nothing"));
        assert!(w("pci.device", "vendor", Op::InRegexp, &["^0x10de$"]).is_empty());
        assert!(w("pci.device", "vendor", Op::Exists, &[]).is_empty());
        assert!(w("usb.device", "class", Op::In, &["3"])[0].ends_with("write \"03\""));
        assert!(w("usb.device", "vendor", Op::In, &["046d"]).is_empty());
        assert!(w("cpu.model", "family", Op::In, &["0x19"])[0].ends_with("write \"25\""));
        assert!(w("cpu.model", "id", Op::In, &["06"])[0].ends_with("write \"6\""));
        assert!(w("cpu.model", "family", Op::In, &["6"]).is_empty());
        assert!(
            w("cpu.model", "vendor_id", Op::In, &["GenuineIntel"])[0].ends_with("write \"Intel\"")
        );
        assert!(w("cpu.model", "vendor_id", Op::In, &["arm"])[0].ends_with("write \"ARM\""));
        assert!(w("cpu.model", "vendor_id", Op::In, &["AMD"]).is_empty());
        // No fixed form: anything goes.
        assert!(w("usb.device", "serial", Op::In, &["0xABC"]).is_empty());
    }

    /// Review 39 r39b F1: a long rule name and many values that do not
    /// fit give a bounded set of warnings, the name shortened.
    #[test]
    fn warnings_are_bounded_per_expression() {
        let values: Vec<String> = (0..5000).map(|i| format!("0x{i:04x}")).collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let name = format!("rule {:?}", "n".repeat(100_000));
        let got = warnings(&rule("pci.device", "vendor", Op::In, &values), &name);
        assert_eq!(got.len(), WARNED_VALUES_MAX + 1, "{}", got.len());
        assert!(got[0].contains("4984 more values"), "{}", &got[0][..300]);
        let total: usize = got.iter().map(String::len).sum();
        assert!(total < 16 * 1024, "{total} bytes");
    }

    /// Review 40 r40b F2: many rules, each within its expression's bound,
    /// give at most RULES_WARNED_MAX lines in a run and one that counts the
    /// rest; a rule past the bound is not even named.
    #[test]
    fn warnings_are_bounded_per_run() {
        let values: Vec<String> = (0..WARNED_VALUES_MAX)
            .map(|i| format!("0x{i:04x}"))
            .collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let r = rule("pci.device", "vendor", Op::In, &values);
        let mut warned = Warned::default();
        let mut named = 0;
        for i in 0..1000 {
            warned.add(&r, || {
                named += 1;
                format!("rule \"r{i}\"")
            });
        }
        let got = warned.into_lines();
        assert_eq!(got.len(), RULES_WARNED_MAX + 1, "{}", got.len());
        let more = 1000 * WARNED_VALUES_MAX - RULES_WARNED_MAX;
        assert!(
            got[RULES_WARNED_MAX].starts_with(&format!("and {more} more values")),
            "{}",
            got[RULES_WARNED_MAX]
        );
        assert_eq!(named, RULES_WARNED_MAX / WARNED_VALUES_MAX + 1);
        assert!(
            got[0].starts_with("rule \"r0\": pci.device vendor \"0x0000\""),
            "{}",
            got[0]
        );
    }
}
