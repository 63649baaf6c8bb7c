//! The worst case of a parsed template (render's check of the budget,
//! see `rules::budget`).

use super::exec::{ARG_UNITS, PROBE_UNITS, VAR_UNITS};
use super::*;
use crate::node::rules::budget::{Lin, MAX_TEMPLATE_DATA, TEMPLATE_STEP};

/// What a template's data may hold, for `Template::worst_case`.
#[derive(Debug, Clone, Copy)]
pub struct DataBounds {
    /// Elements a range over a feature's list may walk.
    pub elements: Lin,
    /// Bytes of any one string of the data (and so any `len` of one).
    pub bytes: Lin,
}

/// A template run's worst case.
#[derive(Debug, Clone, Copy)]
pub struct RunCost {
    /// Budget units of one run.
    pub units: Lin,
    /// Output bytes of one run (at most `MAX_OUTPUT`).
    pub output: u64,
    /// Whether the steps could only be bounded by `MAX_STEPS` (ranges in
    /// ranges over data, or data compared with data in one).
    pub capped: bool,
}

impl Template {
    /// The most one run may cost (the units `execute_within` and
    /// `expand_map_within` count), on data within `bounds`.
    pub fn worst_case(&self, bounds: &DataBounds) -> RunCost {
        let (max_str, max_int) = literals(&self.nodes);
        let bounds = &DataBounds {
            elements: bounds.elements,
            // A variable may hold a literal string too.
            bytes: bounds.bytes.plus(Lin::c(max_str)),
        };
        // Integers are literals, lengths (of strings or lists) or bytes.
        let ints = bounds
            .elements
            .plus(bounds.bytes)
            .plus(Lin::c(max_int.max(255)));
        let w = Worst { bounds, ints };
        let output = match w.text(&self.nodes) {
            Some(l) if l.e == 0 => l.c.min(MAX_OUTPUT as u64),
            _ => MAX_OUTPUT as u64,
        };
        let out_units = OUTPUT_BYTE * output + OUTPUT_PAIR * (output / 2 + 1);
        // A run stops at its caps whatever the data: no more than `cap`.
        let cap = Lin::c(MAX_STEPS as u64 * TEMPLATE_STEP + MAX_COMPARED as u64 + MAX_LOOKED);
        // `$` is the one variable at the start.
        let (steps, capped) = match w.nodes(&self.nodes, 1) {
            Some(l) if l.e == 0 || l.c >= cap.c => (Lin::c(l.c.min(cap.c)), false),
            Some(l) => (l, false),
            None => (cap, true),
        };
        RunCost {
            units: steps.plus(Lin::c(out_units)),
            output,
            capped,
        }
    }
}

/// The most probes of one lookup in template data: a map there holds at
/// most `MAX_TEMPLATE_DATA` keys (each element and attribute counts at
/// least a unit of it), so a binary search probes at most this many.
pub const MAX_PROBES: u64 = (u64::BITS - MAX_TEMPLATE_DATA.leading_zeros()) as u64;

/// Variables a pipeline declares (assigned ones exist already).
fn declared(p: &Pipe) -> u64 {
    if p.assign { 0 } else { p.vars.len() as u64 }
}

/// What looking up (or assigning) `name` among `vars` variables costs.
fn scan(vars: u64, name: &str) -> u64 {
    vars * (VAR_UNITS + name.len() as u64)
}

/// What following a field chain costs at most (`lookup_units` per name).
fn fields(chain: &[String]) -> u64 {
    chain
        .iter()
        .map(|f| MAX_PROBES * (PROBE_UNITS + f.len() as u64))
        .sum()
}

struct Worst<'b> {
    bounds: &'b DataBounds,
    /// The largest integer a range may be given.
    ints: Lin,
}

/// The longest string literal and the largest integer literal.
fn literals(nodes: &[Node]) -> (u64, u64) {
    fn operand(o: &Operand, m: &mut (u64, u64)) {
        match o {
            Operand::Str(s) => m.0 = m.0.max(s.len() as u64),
            Operand::Int(i) => m.1 = m.1.max(i.unsigned_abs()),
            Operand::Paren(p, _) => cmds(&p.cmds, m),
            _ => {}
        }
    }
    fn cmds(cs: &[Cmd], m: &mut (u64, u64)) {
        for c in cs {
            match c {
                Cmd::Operand(o) => operand(o, m),
                Cmd::Call(_, args) => args.iter().for_each(|a| operand(a, m)),
            }
        }
    }
    fn walk(nodes: &[Node], m: &mut (u64, u64)) {
        for n in nodes {
            match n {
                Node::Action(p) => cmds(&p.cmds, m),
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
                    cmds(&pipe.cmds, m);
                    walk(a, m);
                    walk(b, m);
                }
                _ => {}
            }
        }
    }
    let mut m = (0, 0);
    walk(nodes, &mut m);
    m
}

impl Worst<'_> {
    /// Steps, lookups and compared bytes of a node list, in units, with at
    /// most `vars` variables declared around it (`$` included): a lookup
    /// walks them all at worst.
    fn nodes(&self, nodes: &[Node], vars: u64) -> Option<Lin> {
        let mut vars = vars;
        let mut sum = Lin::ZERO;
        for node in nodes {
            sum = sum.plus(Lin::c(TEMPLATE_STEP));
            sum = sum.plus(match node {
                Node::Text(_) | Node::Break | Node::Continue => Lin::ZERO,
                Node::Action(p) => {
                    let c = self.pipe(p, vars)?;
                    // Declared for the rest of the list.
                    vars += declared(p);
                    c
                }
                Node::If {
                    pipe,
                    then,
                    otherwise,
                } => {
                    let inner = vars + declared(pipe);
                    self.pipe(pipe, vars)?
                        .plus(self.nodes(then, inner)?)
                        .plus(self.nodes(otherwise, inner)?)
                }
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                } => {
                    let inner = vars + declared(pipe);
                    // Each iteration sets its variables: by name when
                    // assigned (a lookup each).
                    let set = if pipe.assign {
                        pipe.vars
                            .iter()
                            .fold(Lin::ZERO, |a, v| a.plus(Lin::c(scan(inner, v))))
                    } else {
                        Lin::ZERO
                    };
                    let per = self
                        .nodes(body, inner)?
                        .plus(Lin::c(TEMPLATE_STEP))
                        .plus(set);
                    self.pipe(pipe, vars)?
                        .plus(self.iterations(pipe).product(per)?)
                        .plus(self.nodes(otherwise, inner)?)
                }
            });
        }
        Some(sum)
    }

    /// A pipeline's commands, and the lookups of the variables it assigns.
    fn pipe(&self, p: &Pipe, vars: u64) -> Option<Lin> {
        // Its commands may name the variables it declares (Go parses
        // `$x := $x`): count them.
        let mut sum = self.cmds(&p.cmds, vars + declared(p))?;
        if p.assign {
            for v in &p.vars {
                sum = sum.plus(Lin::c(scan(vars, v)));
            }
        }
        Some(sum)
    }

    /// How many times a range may run its body.
    fn iterations(&self, pipe: &Pipe) -> Lin {
        match pipe.cmds.as_slice() {
            [Cmd::Operand(Operand::Int(n))] => Lin::c((*n).max(0) as u64),
            // A feature's list or map, an element's attributes.
            [Cmd::Operand(Operand::Field(chain) | Operand::Var(_, chain))] if !chain.is_empty() => {
                self.bounds.elements
            }
            // Anything, an integer included: `len` of a string, an
            // integer literal, a byte.
            _ => self.ints,
        }
    }

    fn cmds(&self, cmds: &[Cmd], vars: u64) -> Option<Lin> {
        let mut sum = Lin::ZERO;
        for (i, cmd) in cmds.iter().enumerate() {
            sum = sum.plus(Lin::c(TEMPLATE_STEP));
            match cmd {
                Cmd::Operand(o) => sum = sum.plus(self.operand(o, vars)?),
                Cmd::Call(f, args) => {
                    let piped = i > 0;
                    // Every argument, the piped value included.
                    sum = sum.plus(Lin::c(ARG_UNITS * (args.len() as u64 + piped as u64)));
                    for a in args {
                        sum = sum.plus(self.operand(a, vars)?);
                    }
                    if *f == Func::Index {
                        // Each key after the first argument looked up.
                        for k in args.iter().skip(1).map(Some).chain(piped.then_some(None)) {
                            let key = match k {
                                Some(Operand::Str(s)) => Lin::c(s.len() as u64),
                                Some(Operand::Int(_) | Operand::Bool(_)) => Lin::ZERO,
                                _ => self.bounds.bytes,
                            };
                            sum = sum
                                .plus(Lin::c(MAX_PROBES * PROBE_UNITS).plus(key.times(MAX_PROBES)));
                        }
                    }
                    if !matches!(
                        f,
                        Func::Len | Func::Index | Func::Not | Func::And | Func::Or
                    ) {
                        // The first operand against each other one.
                        let mut ops: Vec<Option<&Operand>> = args.iter().map(Some).collect();
                        if piped {
                            ops.push(None);
                        }
                        let lit = |o: Option<&Operand>| match o {
                            Some(Operand::Str(s)) => Some(s.len() as u64),
                            Some(Operand::Int(_) | Operand::Bool(_)) => Some(0),
                            _ => None,
                        };
                        let first = ops.first().copied().flatten();
                        for other in ops.iter().skip(1) {
                            sum = sum.plus(match (lit(first), lit(*other)) {
                                (Some(a), Some(b)) => Lin::c(a.min(b)),
                                (Some(a), None) | (None, Some(a)) => Lin::c(a),
                                (None, None) => self.bounds.bytes,
                            });
                        }
                    }
                }
            }
        }
        Some(sum)
    }

    /// An operand's lookups: its variable among `vars`, its fields.
    fn operand(&self, o: &Operand, vars: u64) -> Option<Lin> {
        Some(match o {
            Operand::Paren(p, chain) => self.cmds(&p.cmds, vars)?.plus(Lin::c(fields(chain))),
            Operand::Field(chain) => Lin::c(fields(chain)),
            Operand::Var(name, chain) => Lin::c(scan(vars, name) + fields(chain)),
            Operand::Str(_) | Operand::Int(_) | Operand::Bool(_) => Lin::ZERO,
        })
    }

    /// Output bytes when only text is printed; None when data may be.
    fn text(&self, nodes: &[Node]) -> Option<Lin> {
        let mut sum = Lin::ZERO;
        for node in nodes {
            sum = sum.plus(match node {
                Node::Text(t) => Lin::c(t.len() as u64),
                Node::Break | Node::Continue => Lin::ZERO,
                Node::Action(p) if !p.vars.is_empty() => Lin::ZERO,
                Node::Action(_) => return None,
                Node::If {
                    then, otherwise, ..
                } => self.text(then)?.plus(self.text(otherwise)?),
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                } => self
                    .iterations(pipe)
                    .product(self.text(body)?)?
                    .plus(self.text(otherwise)?),
            });
        }
        Some(sum)
    }
}
