//! Running a parsed template against the matched features (the wrapper,
//! at boot), with Go's `missingkey=error` and its comparison rules.

use super::*;

#[derive(Debug, Clone)]
enum Value<'d> {
    Str(Cow<'d, str>),
    Int(i64),
    Bool(bool),
    Root(&'d Data),
    Domain(&'d SortedMap<String, Vec<Element>>),
    List(&'d [Element]),
    Elem(&'d Element),
    /// What `index` gives for a missing feature: NFD types that level
    /// `interface{}`, so Go yields an invalid value.
    Nil,
}

impl Value<'_> {
    fn truth(&self) -> bool {
        match self {
            Value::Str(s) => !s.is_empty(),
            Value::Int(i) => *i != 0,
            Value::Bool(b) => *b,
            Value::Root(m) => !m.is_empty(),
            Value::Domain(m) => !m.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Elem(m) => !m.is_empty(),
            Value::Nil => false,
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Int(_) => "int",
            Value::Bool(_) => "bool",
            Value::List(_) => "list",
            Value::Nil => "<nil>",
            _ => "map",
        }
    }
}

struct Exec<'d> {
    vars: Vec<(&'d str, Value<'d>)>,
    out: String,
    steps: usize,
    /// Bytes compared by `eq`…`ge` (capped like steps).
    compared: usize,
    /// Units of lookups and arguments (capped like steps, `MAX_LOOKED`).
    looked: u64,
    /// Budget units left (see `rules::budget`).
    left: u64,
}

/// Why a run stopped: the template failed (NFD skips the rule), or the
/// evaluation budget or one of our caps (output, steps, bytes compared)
/// ran out, which NFD's template does not have: the evaluation fails as a
/// whole and the caller fails closed, since NFD would apply the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    Failed(String),
    Budget,
}

impl From<String> for RunError {
    fn from(why: String) -> RunError {
        RunError::Failed(why)
    }
}

impl From<&str> for RunError {
    fn from(why: &str) -> RunError {
        RunError::Failed(why.to_string())
    }
}

type ExecResult<T> = Result<T, RunError>;

/// How a node list ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    Break,
    Continue,
}

/// Budget units per output byte: the output, its lines, the map of pairs.
pub const OUTPUT_BYTE: u64 = 3;
/// Budget units per `key=value` pair of `expand_map`.
pub const OUTPUT_PAIR: u64 = 8;
// Review 16 r16a F1: lookups and arguments were not charged, so a
// render-accepted template of `and $ $ …` over many variables cost seconds
// to minutes at boot. Measured with the static wrapper on a loaded 2-CPU
// machine, where a template step (`TEMPLATE_STEP`, 32 units) took ~38 ns:
// a variable looked at 3.5 to 4 ns, an argument ~42 ns, a field of a
// one-key map ~33 ns.

/// Budget units per variable looked at when a variable is looked up (or
/// assigned): the lookup walks the variables from the innermost out, each
/// compared with the name (its bytes charged on top).
pub const VAR_UNITS: u64 = 4;
/// Budget units per function argument evaluated, beyond its own lookups.
pub const ARG_UNITS: u64 = 40;
/// Budget units per probe of a map lookup (a `.field` or an `index` key
/// on the data: a binary search), beyond the key's bytes compared.
pub const PROBE_UNITS: u64 = 32;

/// Probes of a binary search over `n` keys.
fn probes(n: usize) -> u64 {
    u64::from(usize::BITS - n.leading_zeros())
}

/// What looking up a key of `key_len` bytes costs in a map of `n` keys:
/// each probe compares at most the key's bytes.
pub(super) fn lookup_units(n: usize, key_len: usize) -> u64 {
    probes(n) * (PROBE_UNITS + key_len as u64)
}

/// The keys a map value has (0 for what is not a map: a list or a string
/// is indexed by position).
fn map_len(v: &Value<'_>) -> usize {
    match v {
        Value::Root(m) => m.len(),
        Value::Domain(m) => m.len(),
        Value::Elem(m) => m.len(),
        _ => 0,
    }
}

impl Template {
    /// Run the template; `Err` says what failed (NFD then skips the rule).
    pub fn execute(&self, data: &Data) -> Result<String, String> {
        let mut left = u64::MAX;
        self.execute_within(data, &mut left).map_err(|e| match e {
            RunError::Failed(why) => why,
            RunError::Budget => "out of budget".to_string(),
        })
    }

    /// `execute` spending at most `left` budget units (lowered by what it
    /// spent): a template step `budget::TEMPLATE_STEP`, an output byte
    /// `OUTPUT_BYTE`, a compared byte one.
    pub fn execute_within(&self, data: &Data, left: &mut u64) -> Result<String, RunError> {
        let root = Value::Root(data);
        let mut ex = Exec {
            vars: vec![("$", root.clone())],
            out: String::new(),
            steps: 0,
            compared: 0,
            looked: 0,
            left: *left,
        };
        let r = ex.walk(&self.nodes, &root);
        *left = ex.left;
        r?;
        Ok(ex.out)
    }

    /// NFD's `ExpandMap`: output lines trimmed, empty ones skipped, each
    /// `key=value` (split at the first `=`); later keys win. Sorted by key.
    pub fn expand_map(&self, data: &Data) -> Result<Vec<(String, String)>, String> {
        let mut left = u64::MAX;
        self.expand_map_within(data, &mut left)
            .map_err(|e| match e {
                RunError::Failed(why) => why,
                RunError::Budget => "out of budget".to_string(),
            })
    }

    /// `expand_map` within a budget (see `execute_within`).
    pub fn expand_map_within(
        &self,
        data: &Data,
        left: &mut u64,
    ) -> Result<Vec<(String, String)>, RunError> {
        let out = self.execute_within(data, left)?;
        let mut map = SortedMap::new();
        for line in out.split('\n') {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                return Err(RunError::Failed(format!(
                    "missing value in expanded template line {line:?}, (format must be '<key>=<value>')"
                )));
            };
            *left = left.checked_sub(OUTPUT_PAIR).ok_or(RunError::Budget)?;
            map.insert(k.to_string(), v.to_string());
        }
        Ok(map.into_iter().collect())
    }
}

impl<'d> Exec<'d> {
    fn charge(&mut self, units: u64) -> ExecResult<()> {
        self.left = self.left.checked_sub(units).ok_or(RunError::Budget)?;
        Ok(())
    }

    /// Spend `units` on lookups or arguments, within `MAX_LOOKED` a run.
    fn charge_looked(&mut self, units: u64) -> ExecResult<()> {
        self.looked = self.looked.saturating_add(units);
        if self.looked > MAX_LOOKED {
            return Err(RunError::Budget);
        }
        self.charge(units)
    }

    fn step(&mut self) -> ExecResult<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(RunError::Budget);
        }
        self.charge(crate::node::rules::budget::TEMPLATE_STEP)
    }

    /// Append to the output; refused before it would pass `MAX_OUTPUT`.
    fn emit(&mut self, s: &str) -> ExecResult<()> {
        if self.out.len() + s.len() > MAX_OUTPUT {
            return Err(RunError::Budget);
        }
        self.charge(OUTPUT_BYTE * s.len() as u64)?;
        self.out.push_str(s);
        Ok(())
    }

    /// Go's `%v` formatting, into the output.
    fn print(&mut self, v: &Value<'_>) -> ExecResult<()> {
        match v {
            Value::Str(s) => self.emit(s),
            Value::Nil => self.emit("<no value>"),
            Value::Int(i) => self.emit(&i.to_string()),
            Value::Bool(b) => self.emit(if *b { "true" } else { "false" }),
            Value::Root(m) => {
                self.emit("map[")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    self.map_key(i, k)?;
                    self.print(&Value::Domain(v))?;
                }
                self.emit("]")
            }
            Value::Domain(m) => {
                self.emit("map[")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    self.map_key(i, k)?;
                    self.print(&Value::List(v))?;
                }
                self.emit("]")
            }
            Value::Elem(m) => {
                self.emit("map[")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    self.map_key(i, k)?;
                    self.emit(v)?;
                }
                self.emit("]")
            }
            Value::List(l) => {
                self.emit("[")?;
                for (i, e) in l.iter().enumerate() {
                    if i > 0 {
                        self.emit(" ")?;
                    }
                    self.print(&Value::Elem(e))?;
                }
                self.emit("]")
            }
        }
    }

    fn map_key(&mut self, i: usize, k: &str) -> ExecResult<()> {
        if i > 0 {
            self.emit(" ")?;
        }
        self.emit(k)?;
        self.emit(":")
    }

    /// Run `nodes`; a `{{break}}` or `{{continue}}` stops the list and is
    /// handed up to the range it belongs to.
    fn walk(&mut self, nodes: &'d [Node], dot: &Value<'d>) -> ExecResult<Flow> {
        for node in nodes {
            self.step()?;
            match node {
                Node::Text(t) => self.emit(t)?,
                Node::Action(pipe) => {
                    let v = self.pipe(pipe, dot)?;
                    if pipe.vars.is_empty() {
                        self.print(&v)?;
                    }
                }
                Node::Break => return Ok(Flow::Break),
                Node::Continue => return Ok(Flow::Continue),
                Node::If {
                    pipe,
                    then,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    let v = self.pipe(pipe, dot)?;
                    let r = self.walk(if v.truth() { then } else { otherwise }, dot);
                    self.vars.truncate(mark);
                    let flow = r?;
                    if flow != Flow::Next {
                        return Ok(flow);
                    }
                }
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    let r = self.range(pipe, body, otherwise, dot);
                    self.vars.truncate(mark);
                    // Go: a break ends the innermost range being walked,
                    // its else list included; a continue there goes up.
                    if r? == Flow::Continue {
                        return Ok(Flow::Continue);
                    }
                }
            }
        }
        Ok(Flow::Next)
    }

    /// Go's range, one item at a time (nothing collected: `range N`
    /// allocates nothing per iteration).
    fn range(
        &mut self,
        pipe: &'d Pipe,
        body: &'d [Node],
        otherwise: &'d [Node],
        dot: &Value<'d>,
    ) -> ExecResult<Flow> {
        let v = self.eval_cmds(&pipe.cmds, dot)?;
        // Go's evalPipeline: the declared variables hold the pipeline's
        // value (what the else list sees), pushed once; each iteration
        // sets them in place (setTopVar), so the variables do not grow
        // with the iterations.
        for name in &pipe.vars {
            self.set(name, v.clone(), pipe.assign)?;
        }
        let mut any = false;
        match v {
            Value::List(l) => {
                for (i, e) in l.iter().enumerate() {
                    any = true;
                    if self.iteration(pipe, body, Value::Int(i as i64), Value::Elem(e))? {
                        break;
                    }
                }
            }
            Value::Root(m) => {
                for (k, v) in m.iter() {
                    any = true;
                    let (k, v) = (Value::Str(Cow::Borrowed(k)), Value::Domain(v));
                    if self.iteration(pipe, body, k, v)? {
                        break;
                    }
                }
            }
            Value::Domain(m) => {
                for (k, v) in m.iter() {
                    any = true;
                    let (k, v) = (Value::Str(Cow::Borrowed(k)), Value::List(v));
                    if self.iteration(pipe, body, k, v)? {
                        break;
                    }
                }
            }
            Value::Elem(m) => {
                for (k, v) in m.iter() {
                    any = true;
                    let (k, v) = (Value::Str(Cow::Borrowed(k)), Value::Str(Cow::Borrowed(v)));
                    if self.iteration(pipe, body, k, v)? {
                        break;
                    }
                }
            }
            // Go >= 1.22: 0..n, one variable at most (the element).
            Value::Int(n) => {
                if pipe.vars.len() > 1 {
                    return Err(
                        format!("can't use {n} to iterate over more than one variable").into(),
                    );
                }
                if n > MAX_STEPS as i64 {
                    return Err(RunError::Budget);
                }
                for i in 0..n.max(0) {
                    any = true;
                    if self.iteration(pipe, body, Value::Nil, Value::Int(i))? {
                        break;
                    }
                }
            }
            Value::Nil => {}
            other => {
                return Err(format!("range can't iterate over {}", other.type_name()).into());
            }
        }
        if !any {
            return self.walk(otherwise, dot);
        }
        Ok(Flow::Next)
    }

    /// One pass of a range body; true on `{{break}}`.
    fn iteration(
        &mut self,
        pipe: &'d Pipe,
        body: &'d [Node],
        k: Value<'d>,
        v: Value<'d>,
    ) -> ExecResult<bool> {
        self.step()?;
        match pipe.vars.as_slice() {
            [] => {}
            [e] => self.set_again(e, 1, v.clone(), pipe.assign)?,
            [i, e] => {
                self.set_again(i, 2, k, pipe.assign)?;
                self.set_again(e, 1, v.clone(), pipe.assign)?;
            }
            _ => {}
        }
        let iter_mark = self.vars.len();
        let r = self.walk(body, &v);
        self.vars.truncate(iter_mark);
        Ok(r? == Flow::Break)
    }

    fn set(&mut self, name: &'d str, v: Value<'d>, assign: bool) -> ExecResult<()> {
        if assign {
            let at = self.find_var(name)?;
            let slot = at.and_then(|at| self.vars.get_mut(at));
            let slot = slot.ok_or_else(|| format!("undefined variable: {name}"))?;
            slot.1 = v;
        } else {
            self.vars.push((name, v));
        }
        Ok(())
    }

    /// A range variable set for an iteration: declared ones are the
    /// `top`th from the top (pushed by `range`), assigned ones by name.
    fn set_again(
        &mut self,
        name: &'d str,
        top: usize,
        v: Value<'d>,
        assign: bool,
    ) -> ExecResult<()> {
        if assign {
            return self.set(name, v, true);
        }
        let at = self.vars.len().checked_sub(top);
        let slot = at.and_then(|at| self.vars.get_mut(at));
        slot.ok_or_else(|| format!("undefined variable: {name}"))?.1 = v;
        Ok(())
    }

    /// Where the innermost variable `name` is, charging each variable
    /// looked at (`VAR_UNITS` and the name's bytes).
    fn find_var(&mut self, name: &str) -> ExecResult<Option<usize>> {
        let at = self.vars.iter().rposition(|(n, _)| *n == name);
        let looked = self.vars.len() - at.unwrap_or(0);
        self.charge_looked(looked as u64 * (VAR_UNITS + name.len() as u64))?;
        Ok(at)
    }

    fn pipe(&mut self, pipe: &'d Pipe, dot: &Value<'d>) -> ExecResult<Value<'d>> {
        let v = self.eval_cmds(&pipe.cmds, dot)?;
        if let Some(name) = pipe.vars.first() {
            self.set(name, v.clone(), pipe.assign)?;
        }
        Ok(v)
    }

    fn eval_cmds(&mut self, cmds: &'d [Cmd], dot: &Value<'d>) -> ExecResult<Value<'d>> {
        let mut prev: Option<Value<'d>> = None;
        for cmd in cmds {
            self.step()?;
            prev = Some(match cmd {
                Cmd::Operand(op) => self.operand(op, dot)?,
                Cmd::Call(f, args) => {
                    let piped = prev.take();
                    let n = args.len() + piped.is_some() as usize;
                    // Go checks the count only when it calls (an unrun
                    // branch may hold a wrong one).
                    let (want, exact) = match f {
                        Func::Len | Func::Not => (1, true),
                        Func::Ne | Func::Lt | Func::Le | Func::Gt | Func::Ge => (2, true),
                        _ => (1, false),
                    };
                    if n < want || (exact && n > want) {
                        let least = if exact { "" } else { "at least " };
                        let name = FUNCS.iter().find(|p| p.1 == *f).map_or("", |p| p.0);
                        return Err(format!(
                            "wrong number of args for {name}: want {least}{want} got {n}"
                        )
                        .into());
                    }
                    let arg = |ex: &mut Self, k: usize| {
                        ex.charge_looked(ARG_UNITS)?;
                        match args.get(k) {
                            Some(op) => ex.operand(op, dot),
                            None => piped
                                .clone()
                                .ok_or_else(|| RunError::from("missing argument")),
                        }
                    };
                    if matches!(f, Func::And | Func::Or) {
                        // Go ≥ 1.18: stop at the first false (and) or true
                        // (or) argument and yield it, else the last one.
                        let mut v = arg(self, 0)?;
                        for k in 1..n {
                            if v.truth() != (*f == Func::And) {
                                break;
                            }
                            v = arg(self, k)?;
                        }
                        v
                    } else {
                        let mut vals = Vec::with_capacity(n);
                        for k in 0..n {
                            vals.push(arg(self, k)?);
                        }
                        if *f == Func::Index {
                            self.index(vals)?
                        } else {
                            if !matches!(f, Func::Len | Func::Not) {
                                self.compare_cost(&vals)?;
                            }
                            call(*f, vals)?
                        }
                    }
                }
            });
        }
        prev.ok_or_else(|| "empty pipeline".into())
    }

    /// What comparing the first value with each other costs (bytes of the
    /// shorter string), capped per run like steps.
    fn compare_cost(&mut self, vals: &[Value<'d>]) -> ExecResult<()> {
        let Some((Value::Str(a), rest)) = vals.split_first() else {
            return Ok(());
        };
        let mut bytes = 0;
        for b in rest {
            if let Value::Str(b) = b {
                bytes += a.len().min(b.len());
            }
        }
        self.compared += bytes;
        if self.compared > MAX_COMPARED {
            return Err(RunError::Budget);
        }
        self.charge(bytes as u64)
    }

    fn operand(&mut self, op: &'d Operand, dot: &Value<'d>) -> ExecResult<Value<'d>> {
        Ok(match op {
            Operand::Field(chain) => self.fields(dot.clone(), chain)?,
            Operand::Var(name, chain) => {
                let at = self.find_var(name)?;
                let v = at.and_then(|at| self.vars.get(at)).map(|(_, v)| v.clone());
                let v = v.ok_or_else(|| format!("undefined variable {name}"))?;
                self.fields(v, chain)?
            }
            Operand::Str(s) => Value::Str(Cow::Borrowed(s)),
            Operand::Int(i) => Value::Int(*i),
            Operand::Bool(b) => Value::Bool(*b),
            Operand::Paren(p, chain) => {
                let v = self.eval_cmds(&p.cmds, dot)?;
                self.fields(v, chain)?
            }
        })
    }

    /// `fields`, each lookup charged (`lookup_units`).
    fn fields(&mut self, v: Value<'d>, chain: &[String]) -> ExecResult<Value<'d>> {
        let mut v = v;
        for f in chain {
            self.charge_looked(lookup_units(map_len(&v), f.len()))?;
            v = fields(v, std::slice::from_ref(f))?;
        }
        Ok(v)
    }

    /// Go's `index`, each key's lookup charged (`lookup_units`).
    fn index(&mut self, vals: Vec<Value<'d>>) -> ExecResult<Value<'d>> {
        let mut it = vals.into_iter();
        let mut item = it.next().ok_or("missing argument")?;
        for i in it {
            let key = match &i {
                Value::Str(s) => s.len(),
                _ => 0,
            };
            self.charge_looked(lookup_units(map_len(&item), key))?;
            item = index(item, i)?;
        }
        Ok(item)
    }
}

fn call(f: Func, vals: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let mut it = vals.into_iter();
    let a = it.next().ok_or("missing argument")?;
    Ok(match f {
        Func::Len => Value::Int(match a {
            Value::Str(s) => s.len(),
            Value::List(l) => l.len(),
            Value::Root(m) => m.len(),
            Value::Domain(m) => m.len(),
            Value::Elem(m) => m.len(),
            other => return Err(format!("len of type {}", other.type_name())),
        } as i64),
        Func::Not => Value::Bool(!a.truth()),
        Func::Index => return Err("index is run by Exec::index".into()),
        Func::Eq => {
            let mut any = false;
            let mut rest = it.peekable();
            if rest.peek().is_none() {
                return Err("missing argument for comparison".into());
            }
            for b in rest {
                if equal(&a, &b)? {
                    any = true;
                    break;
                }
            }
            Value::Bool(any)
        }
        _ => {
            let b = it.next().ok_or("missing argument")?;
            if f == Func::Ne {
                return Ok(Value::Bool(!equal(&a, &b)?));
            }
            let lt = less(&a, &b)?;
            Value::Bool(match f {
                Func::Lt => lt,
                Func::Le => lt || equal(&a, &b)?,
                Func::Gt => !(lt || equal(&a, &b)?),
                _ => !lt,
            })
        }
    })
}

/// Go's basic kinds for comparison; maps and lists have none.
fn kinds<'a>(a: &'a Value<'_>, b: &'a Value<'_>) -> Result<(&'a Value<'a>, &'a Value<'a>), String> {
    let basic = |v: &Value| matches!(v, Value::Str(_) | Value::Int(_) | Value::Bool(_));
    if !basic(a) || !basic(b) {
        return Err("invalid type for comparison".into());
    }
    if std::mem::discriminant(a) != std::mem::discriminant(b) {
        return Err("incompatible types for comparison".into());
    }
    Ok((a, b))
}

fn equal(a: &Value<'_>, b: &Value<'_>) -> Result<bool, String> {
    // Go: an invalid value differs from any basic value without error.
    if matches!(a, Value::Nil) != matches!(b, Value::Nil) {
        return Ok(false);
    }
    Ok(match kinds(a, b)? {
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        _ => false,
    })
}

fn less(a: &Value<'_>, b: &Value<'_>) -> Result<bool, String> {
    match kinds(a, b)? {
        (Value::Str(x), Value::Str(y)) => Ok(x < y),
        (Value::Int(x), Value::Int(y)) => Ok(x < y),
        _ => Err("invalid type for comparison".into()),
    }
}

static NO_DOMAIN: SortedMap<String, Vec<Element>> = SortedMap::new();

/// Go's `index` on one key: a missing map key gives the element type's
/// zero value; a slice or string index must be in range.
fn index<'d>(item: Value<'d>, i: Value<'_>) -> Result<Value<'d>, String> {
    let i_str = match &i {
        Value::Str(s) => Some(s.as_ref()),
        _ => None,
    };
    let key = |i: &Value| match i_str {
        Some(s) => Ok(s),
        None => Err(format!(
            "value has type {}; should be string",
            i.type_name()
        )),
    };
    let pos = |i: &Value, len: usize| match *i {
        Value::Int(x) if x >= 0 && (x as u64) < len as u64 => Ok(x as usize),
        Value::Int(x) => Err(format!("index out of range: {x}")),
        ref other => Err(format!(
            "cannot index slice/array with type {}",
            other.type_name()
        )),
    };
    Ok(match item {
        Value::Root(m) => Value::Domain(m.get(key(&i)?).unwrap_or(&NO_DOMAIN)),
        Value::Domain(m) => m.get(key(&i)?).map_or(Value::Nil, |v| Value::List(v)),
        Value::Elem(m) => Value::Str(
            m.get(key(&i)?)
                .map_or(Cow::Borrowed(""), |v| Cow::Borrowed(v)),
        ),
        Value::List(l) => Value::Elem(&l[pos(&i, l.len())?]),
        Value::Str(s) => {
            let b = s.as_bytes()[pos(&i, s.len())?];
            Value::Int(b as i64)
        }
        Value::Nil => return Err("index of nil pointer".into()),
        other => return Err(format!("can't index item of type {}", other.type_name())),
    })
}

/// Follow `.a.b` with `missingkey=error`.
fn fields<'d>(mut v: Value<'d>, chain: &[String]) -> Result<Value<'d>, String> {
    for f in chain {
        let missing = || format!("map has no entry for key {f:?}");
        v = match v {
            Value::Root(m) => Value::Domain(m.get(f).ok_or_else(missing)?),
            Value::Domain(m) => Value::List(m.get(f).ok_or_else(missing)?),
            Value::Elem(m) => Value::Str(Cow::Borrowed(m.get(f).ok_or_else(missing)?)),
            other => {
                return Err(format!(
                    "can't evaluate field {f} in type {}",
                    other.type_name()
                ));
            }
        };
    }
    Ok(v)
}
