//! The worst case of a parsed template (render's check of the budget,
//! see `rules::budget`).

use super::*;
use crate::node::rules::budget::{Lin, TEMPLATE_STEP};

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
        let cap = Lin::c(MAX_STEPS as u64 * TEMPLATE_STEP + MAX_COMPARED as u64);
        let (steps, capped) = match w.nodes(&self.nodes) {
            Some(l) if l.e == 0 => (Lin::c(l.c.min(cap.c)), false),
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
    /// Steps and compared bytes of a node list, in units.
    fn nodes(&self, nodes: &[Node]) -> Option<Lin> {
        let mut sum = Lin::ZERO;
        for node in nodes {
            sum = sum.plus(Lin::c(TEMPLATE_STEP));
            sum = sum.plus(match node {
                Node::Text(_) | Node::Break | Node::Continue => Lin::ZERO,
                Node::Action(p) => self.cmds(&p.cmds)?,
                Node::If {
                    pipe,
                    then,
                    otherwise,
                } => self
                    .cmds(&pipe.cmds)?
                    .plus(self.nodes(then)?)
                    .plus(self.nodes(otherwise)?),
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                } => {
                    let per = self.nodes(body)?.plus(Lin::c(TEMPLATE_STEP));
                    self.cmds(&pipe.cmds)?
                        .plus(self.iterations(pipe).product(per)?)
                        .plus(self.nodes(otherwise)?)
                }
            });
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

    fn cmds(&self, cmds: &[Cmd]) -> Option<Lin> {
        let mut sum = Lin::ZERO;
        for (i, cmd) in cmds.iter().enumerate() {
            sum = sum.plus(Lin::c(TEMPLATE_STEP));
            match cmd {
                Cmd::Operand(o) => sum = sum.plus(self.operand(o)?),
                Cmd::Call(f, args) => {
                    for a in args {
                        sum = sum.plus(self.operand(a)?);
                    }
                    if !matches!(
                        f,
                        Func::Len | Func::Index | Func::Not | Func::And | Func::Or
                    ) {
                        // The first operand against each other one.
                        let piped = i > 0;
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

    fn operand(&self, o: &Operand) -> Option<Lin> {
        match o {
            Operand::Paren(p, _) => self.cmds(&p.cmds),
            _ => Some(Lin::ZERO),
        }
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
