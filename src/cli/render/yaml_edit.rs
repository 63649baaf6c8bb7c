//! A re-render's change to a file the user keeps in Git, made in its text:
//! only the lines of what changes are rewritten, every other byte (quoting,
//! flow style, sequence indentation, comments, blank lines) stays as the
//! user wrote it. [`edit`] walks the old and the new value side by side
//! over the file's YAML with positions (`rule_yaml::Node`): a scalar that
//! changes is replaced where it is written (in its quoting when it can be),
//! a mapping key or list item that goes is cut with its lines, one that
//! comes is added after its siblings in their indentation, and what cannot
//! be edited in place (a flow collection that changes, a block scalar) is
//! rewritten as the value of its own key. The result is read back and must
//! be the new value exactly, or [`edit`] gives up (the caller then rewrites
//! the whole file, saying which comments go).

use serde_json::{Value, json};
use serde_saphyr::Spanned;

use super::machineconfig::to_yaml;
use super::rule_yaml::Node;

/// `text` (one YAML document) edited to read as `new`; `None` when the
/// edit cannot be made in place.
pub fn edit(text: &str, new: &Value) -> Option<String> {
    let old: Value = serde_saphyr::from_str(text).ok()?;
    if old == *new {
        return Some(text.to_string());
    }
    let root: Spanned<Node> = serde_saphyr::from_str(text).ok()?;
    let doc = Doc { text };
    let mut edits = Vec::new();
    doc.value(&root, &old, new, &mut edits).ok()?;
    edits.sort_by_key(|e| (e.start, e.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for e in edits {
        if e.start < at {
            return None;
        }
        out += text.get(at..e.start)?;
        out += &e.with;
        at = e.end;
    }
    out += text.get(at..)?;
    let back: Value = serde_saphyr::from_str(&out).ok()?;
    (back == *new).then_some(out)
}

/// Bytes `start..end` of the text become `with`.
struct Edit {
    start: usize,
    end: usize,
    with: String,
}

/// The value cannot be edited in place: its parent rewrites it whole.
struct Whole;

struct Doc<'a> {
    text: &'a str,
}

fn span<T>(n: &Spanned<T>) -> Option<(usize, usize)> {
    let s = n.referenced.span();
    Some((
        usize::try_from(s.byte_offset()?).ok()?,
        usize::try_from(s.byte_len()?).ok()?,
    ))
}

impl Doc<'_> {
    fn bytes(&self) -> &[u8] {
        self.text.as_bytes()
    }

    /// The start of the line holding byte `i`.
    fn line_start(&self, i: usize) -> usize {
        self.text[..i.min(self.text.len())]
            .rfind('\n')
            .map_or(0, |n| n + 1)
    }

    /// Just past the end of the line holding byte `i` (its newline included).
    fn line_end(&self, i: usize) -> usize {
        self.text[i.min(self.text.len())..]
            .find('\n')
            .map_or(self.text.len(), |n| i + n + 1)
    }

    fn column(&self, i: usize) -> usize {
        i - self.line_start(i)
    }

    /// A block collection: its span is empty (a flow one's is its bracket).
    fn block(&self, n: &Spanned<Node>) -> bool {
        span(n).is_some_and(|(_, len)| len == 0)
    }

    /// Just past the last byte of `n`'s text (`after`: where it starts at
    /// the latest, for an empty value).
    fn content_end(&self, n: &Spanned<Node>, after: usize) -> Result<usize, Whole> {
        let (off, len) = span(n).ok_or(Whole)?;
        let end = match &n.value {
            Node::Map(entries) if self.block(n) => match entries.last() {
                Some((k, v)) => self.content_end(v, span(k).ok_or(Whole)?.0)?,
                None => return Err(Whole),
            },
            Node::Seq(items) if self.block(n) => match items.last() {
                Some(v) => self.content_end(v, off)?,
                None => return Err(Whole),
            },
            Node::Map(_) | Node::Seq(_) => self.flow_end(off)?,
            _ => off + len,
        };
        Ok(end.max(after))
    }

    /// Just past the bracket that closes the flow collection opening at
    /// `off`.
    fn flow_end(&self, off: usize) -> Result<usize, Whole> {
        let b = self.bytes();
        let (mut depth, mut i) = (0usize, off);
        let mut quote: Option<u8> = None;
        while i < b.len() {
            let c = b[i];
            match quote {
                Some(b'"') if c == b'\\' => i += 1,
                Some(q) if c == q => {
                    if q == b'\'' && b.get(i + 1) == Some(&b'\'') {
                        i += 1;
                    } else {
                        quote = None;
                    }
                }
                Some(_) => {}
                None => match c {
                    b'"' | b'\'' => quote = Some(c),
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth = depth.checked_sub(1).ok_or(Whole)?;
                        if depth == 0 {
                            return Ok(i + 1);
                        }
                    }
                    b'#' if i > 0 && b[i - 1].is_ascii_whitespace() => {
                        i = self.line_end(i) - 1;
                    }
                    _ => {}
                },
            }
            i += 1;
        }
        Err(Whole)
    }

    /// The lines `n` takes, from `start`: through the end of its last line.
    fn region_end(&self, n: &Spanned<Node>, start: usize) -> Result<usize, Whole> {
        let end = self.content_end(n, start)?;
        Ok(self.line_end(end.saturating_sub(1).max(start)))
    }

    fn value(
        &self,
        n: &Spanned<Node>,
        old: &Value,
        new: &Value,
        edits: &mut Vec<Edit>,
    ) -> Result<(), Whole> {
        if old == new {
            return Ok(());
        }
        match (&n.value, old, new) {
            (Node::Map(entries), Value::Object(o), Value::Object(nw))
                if self.block(n) && !nw.is_empty() =>
            {
                self.map(entries, o, nw, edits)
            }
            (Node::Seq(items), Value::Array(o), Value::Array(nw))
                if self.block(n) && !nw.is_empty() =>
            {
                self.seq(items, o, nw, edits)
            }
            // In a flow collection a scalar changes in place; nothing comes
            // or goes.
            (Node::Map(entries), Value::Object(o), Value::Object(nw))
                if o.len() == nw.len() && o.keys().all(|k| nw.contains_key(k)) =>
            {
                for (k, v) in entries {
                    let (ov, nv) = (o.get(&k.value).ok_or(Whole)?, &nw[&k.value]);
                    self.value(v, ov, nv, edits)?;
                }
                Ok(())
            }
            (Node::Seq(items), Value::Array(o), Value::Array(nw))
                if o.len() == nw.len() && items.len() == o.len() =>
            {
                for ((n, ov), nv) in items.iter().zip(o).zip(nw) {
                    self.value(n, ov, nv, edits)?;
                }
                Ok(())
            }
            (Node::Map(_) | Node::Seq(_), _, _) => Err(Whole),
            (_, _, Value::Object(_) | Value::Array(_)) => Err(Whole),
            _ => {
                let (off, len) = span(n).ok_or(Whole)?;
                let written = self.text.get(off..off + len).ok_or(Whole)?;
                if written.contains('\n') || len == 0 {
                    return Err(Whole);
                }
                let with = inline(new, written).ok_or(Whole)?;
                edits.push(Edit {
                    start: off,
                    end: off + len,
                    with,
                });
                Ok(())
            }
        }
    }

    fn map(
        &self,
        entries: &[(Spanned<String>, Spanned<Node>)],
        old: &serde_json::Map<String, Value>,
        new: &serde_json::Map<String, Value>,
        edits: &mut Vec<Edit>,
    ) -> Result<(), Whole> {
        let (first, _) = entries.first().ok_or(Whole)?;
        let indent = self.column(span(first).ok_or(Whole)?.0);
        let mut last_end = 0;
        for (k, v) in entries {
            let (koff, _) = span(k).ok_or(Whole)?;
            // Duplicate keys: not ours to sort out.
            let ov = old.get(&k.value).ok_or(Whole)?;
            let start = self.line_start(koff);
            let end = self.region_end(v, koff)?;
            last_end = last_end.max(end);
            match new.get(&k.value) {
                None => {
                    // A key after a list item's dash: cutting its lines
                    // would cut the dash.
                    if !self.text[start..koff].trim().is_empty() {
                        return Err(Whole);
                    }
                    edits.push(Edit {
                        start,
                        end,
                        with: String::new(),
                    });
                }
                Some(nv) if nv == ov => {}
                Some(nv) => {
                    if self.value(v, ov, nv, edits).is_err() {
                        self.entry_value(k, v, nv, edits)?;
                    }
                }
            }
        }
        let mut added = String::new();
        for (k, v) in new {
            if !old.contains_key(k) {
                added += &indented(&to_yaml(&json!({ k: v })).map_err(|_| Whole)?, indent);
            }
        }
        self.append_after(last_end, added, edits);
        Ok(())
    }

    /// Rewrite the value of key `k` whole: from after its colon through
    /// the value's last line.
    fn entry_value(
        &self,
        k: &Spanned<String>,
        v: &Spanned<Node>,
        new: &Value,
        edits: &mut Vec<Edit>,
    ) -> Result<(), Whole> {
        let (koff, klen) = span(k).ok_or(Whole)?;
        let b = self.bytes();
        let mut colon = koff + klen;
        while b.get(colon) == Some(&b' ') {
            colon += 1;
        }
        if b.get(colon) != Some(&b':') {
            return Err(Whole);
        }
        let end = self.region_end(v, colon + 1)?;
        let written = to_yaml(&json!({ "x": new })).map_err(|_| Whole)?;
        let rest = written.strip_prefix("x:").ok_or(Whole)?;
        let indent = self.column(koff);
        let mut with = String::new();
        for (i, line) in rest.split_inclusive('\n').enumerate() {
            if i > 0 && line != "\n" {
                with += &" ".repeat(indent);
            }
            with += line;
        }
        edits.push(Edit {
            start: colon + 1,
            end,
            with,
        });
        Ok(())
    }

    /// The dash of the block list item `n` starts with: where its line
    /// is only blanks and one `-` before it.
    fn dash(&self, n: &Spanned<Node>) -> Result<usize, Whole> {
        let (off, _) = span(n).ok_or(Whole)?;
        let start = self.line_start(off);
        let before = &self.text[start..off];
        let body = before.trim_start();
        if body.trim_end() != "-" {
            return Err(Whole);
        }
        Ok(start + (before.len() - body.len()))
    }

    fn seq(
        &self,
        items: &[Spanned<Node>],
        old: &[Value],
        new: &[Value],
        edits: &mut Vec<Edit>,
    ) -> Result<(), Whole> {
        if items.len() != old.len() || items.is_empty() {
            return Err(Whole);
        }
        // Mappings changed in place (a list of files); other items go and
        // come (a kustomization's resources).
        let in_place = old.len() == new.len()
            && old
                .iter()
                .zip(new)
                .all(|(o, n)| o == n || o.is_object() && n.is_object());
        if in_place {
            for ((n, ov), nv) in items.iter().zip(old).zip(new) {
                if ov != nv && self.value(n, ov, nv, edits).is_err() {
                    let dash = self.dash(n)?;
                    let end = self.region_end(n, dash)?;
                    let with = indented(
                        &to_yaml(&json!([nv])).map_err(|_| Whole)?,
                        self.column(dash),
                    );
                    edits.push(Edit {
                        start: self.line_start(dash),
                        end,
                        with,
                    });
                }
            }
            return Ok(());
        }
        // The items kept, in order, then the new ones after them.
        let mut kept = 0;
        let mut last_end = 0;
        let mut indent = None;
        for (n, ov) in items.iter().zip(old) {
            let dash = self.dash(n)?;
            indent.get_or_insert(self.column(dash));
            let end = self.region_end(n, dash)?;
            last_end = last_end.max(end);
            if new.get(kept) == Some(ov) {
                kept += 1;
            } else {
                edits.push(Edit {
                    start: self.line_start(dash),
                    end,
                    with: String::new(),
                });
            }
        }
        let mut added = String::new();
        for v in &new[kept..] {
            added += &indented(
                &to_yaml(&json!([v])).map_err(|_| Whole)?,
                indent.unwrap_or(0),
            );
        }
        self.append_after(last_end, added, edits);
        Ok(())
    }

    /// New entries `added` (already indented) after the sibling that ends at
    /// `last_end`, on a line of their own.
    fn append_after(&self, last_end: usize, mut added: String, edits: &mut Vec<Edit>) {
        if added.is_empty() {
            return;
        }
        if !self.text[..last_end].ends_with('\n') {
            added.insert(0, '\n');
        }
        edits.push(Edit {
            start: last_end,
            end: last_end,
            with: added,
        });
    }
}

/// `text` with every non-empty line indented by `n` spaces.
fn indented(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.split_inclusive('\n')
        .map(|l| {
            if l == "\n" {
                l.to_string()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect()
}

/// The scalar `new` on one line, in the quoting `written` (the old
/// scalar as written) uses when it can be.
fn inline(new: &Value, written: &str) -> Option<String> {
    if let Value::String(s) = new {
        let printable = !s.chars().any(char::is_control);
        if written.starts_with('\'') && printable {
            return Some(format!("'{}'", s.replace('\'', "''")));
        }
        if written.starts_with('"') {
            return serde_json::to_string(s).ok();
        }
    }
    let plain = to_yaml(new).ok()?;
    let plain = plain.strip_suffix('\n').unwrap_or(&plain);
    (!plain.contains('\n') && !plain.is_empty()).then(|| plain.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Value {
        serde_saphyr::from_str(text).unwrap()
    }

    #[test]
    fn only_the_changed_lines_change() {
        let text = "# the pool, TICKET-1\n\
                    apiVersion: v1   # kept\n\
                    kind: MachineConfigPool\n\
                    metadata:\n    name: p\n    annotations: {a: '5', b: \"x\"}\n\
                    spec:\n    maxUnavailable: '5'\n    values:\n        -   worker\n        -   p\n\
                    \x20   nodeSelector:\n        matchLabels:\n            old: ''\n\
                    \x20   paused: true # for the batch\n";
        let mut new = read(text);
        new["spec"]["nodeSelector"]["matchLabels"] = json!({"new.io/x": "true"});
        new["spec"]["values"] = json!(["worker", "p", "q"]);
        new["metadata"]["annotations"]["a"] = json!("6");
        let out = edit(text, &new).unwrap();
        assert_eq!(read(&out), new);
        assert_eq!(
            out,
            "# the pool, TICKET-1\n\
             apiVersion: v1   # kept\n\
             kind: MachineConfigPool\n\
             metadata:\n    name: p\n    annotations: {a: '6', b: \"x\"}\n\
             spec:\n    maxUnavailable: '5'\n    values:\n        -   worker\n        -   p\n        - q\n\
             \x20   nodeSelector:\n        matchLabels:\n            new.io/x: \"true\"\n\
             \x20   paused: true # for the batch\n"
        );
    }

    #[test]
    fn a_flow_collection_or_block_scalar_is_rewritten_as_its_keys_value() {
        let text = "a: {x: 1} # flow\nb: >-\n  folded\n  text\nc: [1, 2]\nd: 'k'\n";
        let mut new = read(text);
        new["a"] = json!({"x": 2, "y": [1]});
        new["b"] = json!("other");
        let out = edit(text, &new).unwrap();
        assert_eq!(read(&out), new);
        assert!(out.ends_with("c: [1, 2]\nd: 'k'\n"), "{out}");
        new["c"] = json!([1]);
        let out = edit(text, &new).unwrap();
        assert_eq!(read(&out), new);
        assert!(out.ends_with("d: 'k'\n"), "{out}");
    }

    #[test]
    fn list_items_go_and_come_in_the_lists_style() {
        let text = "resources:\n  - ./app.yaml # the app\n  - old.yaml\n  - '../base'\n# end\n";
        let new = json!({"resources": ["./app.yaml", "../base", "new.yaml"]});
        let out = edit(text, &new).unwrap();
        assert_eq!(
            out,
            "resources:\n  - ./app.yaml # the app\n  - '../base'\n  - new.yaml\n# end\n"
        );
        // Items of a list of mappings change inside.
        let text = "files:\n- path: /a\n  mode: 420\n- path: /b\n  mode: 420\n";
        let mut new = read(text);
        new["files"][1]["mode"] = json!(493);
        new["files"][0]["x"] = json!("z");
        let out = edit(text, &new).unwrap();
        assert_eq!(
            out,
            "files:\n- path: /a\n  mode: 420\n  x: z\n- path: /b\n  mode: 493\n"
        );
    }

    #[test]
    fn nothing_to_change_keeps_every_byte_and_a_bad_edit_gives_up() {
        let text = "a:   '5'\nb:\n    - x\n";
        assert_eq!(edit(text, &read(text)).unwrap(), text);
        // Emptied: a block mapping cannot be empty in place; its key's
        // value is rewritten.
        let out = edit("a:\n  b: 1\nc: 2\n", &json!({"a": {}, "c": 2})).unwrap();
        assert_eq!(read(&out), json!({"a": {}, "c": 2}));
        assert!(edit("[1, 2]", &json!({"a": 1})).is_none());
        assert!(edit("not: [valid", &json!({})).is_none());
    }
}
