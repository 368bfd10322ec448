//! A fast path for the block YAML that `opm` (go-yaml v2) writes: block mappings and sequences,
//! plain, quoted and literal scalars, empty flow collections and comments. Anything else — anchors,
//! tags, flow collections with content, folded scalars, tabs, odd indentation — makes [`parse`]
//! return `None` and the caller falls back to the full YAML parser, which also produces every error
//! message. The result is the document's canonical JSON, identical to the full parser's.

use std::borrow::Cow;

use olm_goenc::json::{write_f64, write_str};

enum Node<'a> {
    Scalar(Cow<'a, str>, bool), // text, plain (needs type resolution)
    Map(Vec<(Cow<'a, str>, Node<'a>)>),
    Seq(Vec<Node<'a>>),
}

struct Line<'a> {
    indent: usize,
    text: &'a str, // after the indentation, without the line break
}

struct P<'a> {
    lines: Vec<Line<'a>>,
    pos: usize,
}

/// Parses one document; `None` means "not in the fast subset (or invalid): use the full parser".
pub(crate) fn parse(doc: &str) -> Option<String> {
    let mut lines = Vec::with_capacity(doc.len() / 40 + 1);
    // A final line break ends the last line; it does not start an empty one.
    let body = doc.strip_suffix('\n').unwrap_or(doc);
    for raw in body.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let indent = raw.bytes().take_while(|&b| b == b' ').count();
        let text = &raw[indent..];
        if text.starts_with('\t') {
            return None;
        }
        lines.push(Line { indent, text });
    }
    let mut p = P { lines, pos: 0 };
    p.skip_blank();
    if p.pos >= p.lines.len() {
        return None;
    }
    let first = &p.lines[p.pos];
    if first.indent != 0
        || first.text.starts_with("- ")
        || first.text == "-"
        || first.text.starts_with('%')
    {
        return None;
    }
    let node = p.mapping(0)?;
    p.skip_blank();
    if p.pos < p.lines.len() {
        return None;
    }
    let mut out = String::with_capacity(doc.len());
    emit(&node, &mut out)?;
    Some(out)
}

impl<'a> P<'a> {
    fn skip_blank(&mut self) {
        while self.pos < self.lines.len() {
            let t = self.lines[self.pos].text.trim_end();
            if t.is_empty() || t.starts_with('#') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn mapping(&mut self, indent: usize) -> Option<Node<'a>> {
        let mut entries = Vec::new();
        loop {
            self.skip_blank();
            if self.pos >= self.lines.len() {
                break;
            }
            let l = &self.lines[self.pos];
            if l.indent < indent {
                break;
            }
            if l.indent > indent || l.text.starts_with("- ") || l.text == "-" {
                return None;
            }
            let text = l.text;
            let (key, rest) = split_key(text)?;
            self.pos += 1;
            let value = self.value(indent, rest, true)?;
            entries.push((key, value));
        }
        Some(Node::Map(entries))
    }

    fn sequence(&mut self, indent: usize) -> Option<Node<'a>> {
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            if self.pos >= self.lines.len() {
                break;
            }
            let l = &self.lines[self.pos];
            if l.indent < indent || !(l.text.starts_with("- ") || l.text == "-") {
                if l.indent > indent {
                    return None;
                }
                break;
            }
            if l.indent != indent {
                return None;
            }
            let rest = if l.text == "-" { "" } else { &l.text[2..] };
            let item_indent = indent + 2;
            if rest.starts_with(' ') {
                return None;
            }
            if rest.starts_with("- ") {
                return None;
            }
            // `- key: value` starts a mapping whose keys sit at indent + 2.
            if !rest.is_empty() && !is_quoted_start(rest) && split_key(rest).is_some() {
                let idx = self.pos;
                self.lines[idx].indent = item_indent;
                self.lines[idx].text = rest;
                items.push(self.mapping(item_indent)?);
                continue;
            }
            self.pos += 1;
            items.push(self.value(indent, rest, false)?);
        }
        Some(Node::Seq(items))
    }

    /// The value after `key:` or `- `: `rest` is the text on the same line; `parent` the indent of
    /// the collection holding it.
    fn value(&mut self, parent: usize, rest: &'a str, in_map: bool) -> Option<Node<'a>> {
        let rest = rest.trim_start_matches(' ');
        if rest.is_empty() || rest.starts_with('#') {
            // Nested block (or null).
            self.skip_blank();
            if self.pos >= self.lines.len() {
                return Some(Node::Scalar(Cow::Borrowed(""), true));
            }
            let l = &self.lines[self.pos];
            let is_seq = l.text.starts_with("- ") || l.text == "-";
            if is_seq && ((in_map && l.indent == parent) || l.indent > parent) {
                let ind = l.indent;
                return self.sequence(ind);
            }
            if l.indent > parent && !is_seq {
                let ind = l.indent;
                return self.mapping(ind);
            }
            return Some(Node::Scalar(Cow::Borrowed(""), true));
        }
        match rest.as_bytes()[0] {
            b'"' => self.double_quoted(parent, rest),
            b'\'' => self.single_quoted(parent, rest),
            b'|' => self.literal(parent, rest),
            b'{' if rest.trim_end() == "{}" => Some(Node::Map(Vec::new())),
            b'[' if rest.trim_end() == "[]" => Some(Node::Seq(Vec::new())),
            b'{' | b'[' | b'&' | b'*' | b'!' | b'>' | b'%' | b'@' | b'`' | b'?' => None,
            _ => self.plain(parent, rest),
        }
    }

    fn plain(&mut self, parent: usize, first: &'a str) -> Option<Node<'a>> {
        let first = plain_segment(first)?;
        let mut text: Cow<'a, str> = Cow::Borrowed(first);
        // Continuation lines: more indented than the parent, not a comment.
        let mut pending_newlines = 0;
        while self.pos < self.lines.len() {
            let l = &self.lines[self.pos];
            let t = l.text.trim_end();
            if t.is_empty() {
                pending_newlines += 1;
                self.pos += 1;
                continue;
            }
            if l.indent <= parent || t.starts_with('#') {
                break;
            }
            let seg = plain_segment(t)?;
            let s = text.to_mut();
            if pending_newlines > 0 {
                for _ in 0..pending_newlines {
                    s.push('\n');
                }
            } else {
                s.push(' ');
            }
            s.push_str(seg);
            pending_newlines = 0;
            self.pos += 1;
        }
        if pending_newlines > 0 {
            // Blank lines after the scalar belong to nobody; rewind so callers see them as blank.
            self.pos -= pending_newlines;
        }
        Some(Node::Scalar(text, true))
    }

    fn double_quoted(&mut self, _parent: usize, first: &'a str) -> Option<Node<'a>> {
        let mut out = String::new();
        let mut line = &first[1..];
        let mut first_line = true;
        loop {
            let mut chars = line.char_indices().peekable();
            let mut closed = None;
            // Characters of this line (after folding rules for its leading whitespace).
            let mut seg = String::new();
            let mut escaped_break = false;
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        closed = Some(i + 1);
                        break;
                    }
                    '\\' => {
                        let Some((_, e)) = chars.next() else {
                            escaped_break = true;
                            break;
                        };
                        match e {
                            '0' => seg.push('\0'),
                            'a' => seg.push('\x07'),
                            'b' => seg.push('\x08'),
                            't' | '\t' => seg.push('\t'),
                            'n' => seg.push('\n'),
                            'v' => seg.push('\x0b'),
                            'f' => seg.push('\x0c'),
                            'r' => seg.push('\r'),
                            'e' => seg.push('\x1b'),
                            ' ' => seg.push(' '),
                            '"' => seg.push('"'),
                            '/' => seg.push('/'),
                            '\\' => seg.push('\\'),
                            'N' => seg.push('\u{85}'),
                            '_' => seg.push('\u{a0}'),
                            'L' => seg.push('\u{2028}'),
                            'P' => seg.push('\u{2029}'),
                            'x' | 'u' | 'U' => {
                                let n = match e {
                                    'x' => 2,
                                    'u' => 4,
                                    _ => 8,
                                };
                                let mut v = 0u32;
                                for _ in 0..n {
                                    let (_, h) = chars.next()?;
                                    v = v * 16 + h.to_digit(16)?;
                                }
                                seg.push(char::from_u32(v)?);
                            }
                            _ => return None,
                        }
                    }
                    c => seg.push(c),
                }
            }
            if let Some(end) = closed {
                out.push_str(&seg);
                let after = line[end..].trim_start_matches(' ');
                if !(after.is_empty() || after.starts_with('#')) {
                    return None;
                }
                self.pos += usize::from(!first_line);
                return Some(Node::Scalar(Cow::Owned(out), false));
            }
            // The line ends inside the string: fold.
            if escaped_break {
                out.push_str(&seg);
            } else {
                out.push_str(seg.trim_end_matches([' ', '\t']));
            }
            if !first_line {
                self.pos += 1;
            } else {
                first_line = false;
            }
            // Following lines: empty ones become newlines, the first non-empty one continues.
            let mut newlines = 0;
            loop {
                if self.pos >= self.lines.len() {
                    return None;
                }
                let l = &self.lines[self.pos];
                if l.text.trim().is_empty() {
                    newlines += 1;
                    self.pos += 1;
                    continue;
                }
                line = l.text.trim_start_matches([' ', '\t']);
                break;
            }
            if !escaped_break {
                if newlines == 0 {
                    out.push(' ');
                } else {
                    for _ in 0..newlines {
                        out.push('\n');
                    }
                }
            }
        }
    }

    fn single_quoted(&mut self, _parent: usize, first: &'a str) -> Option<Node<'a>> {
        let mut out = String::new();
        let mut line = &first[1..];
        let mut first_line = true;
        loop {
            let b = line.as_bytes();
            let mut i = 0;
            let mut seg_start = 0;
            let mut seg = String::new();
            let mut closed = None;
            while i < b.len() {
                if b[i] == b'\'' {
                    if i + 1 < b.len() && b[i + 1] == b'\'' {
                        seg.push_str(&line[seg_start..=i]);
                        i += 2;
                        seg_start = i;
                        continue;
                    }
                    seg.push_str(&line[seg_start..i]);
                    closed = Some(i + 1);
                    break;
                }
                i += 1;
            }
            if let Some(end) = closed {
                out.push_str(&seg);
                let after = line[end..].trim_start_matches(' ');
                if !(after.is_empty() || after.starts_with('#')) {
                    return None;
                }
                self.pos += usize::from(!first_line);
                return Some(Node::Scalar(Cow::Owned(out), false));
            }
            seg.push_str(&line[seg_start..]);
            out.push_str(seg.trim_end_matches([' ', '\t']));
            if !first_line {
                self.pos += 1;
            } else {
                first_line = false;
            }
            let mut newlines = 0;
            loop {
                if self.pos >= self.lines.len() {
                    return None;
                }
                let l = &self.lines[self.pos];
                if l.text.trim().is_empty() {
                    newlines += 1;
                    self.pos += 1;
                    continue;
                }
                line = l.text.trim_start_matches([' ', '\t']);
                break;
            }
            if newlines == 0 {
                out.push(' ');
            } else {
                for _ in 0..newlines {
                    out.push('\n');
                }
            }
        }
    }

    fn literal(&mut self, parent: usize, header: &'a str) -> Option<Node<'a>> {
        let h = header[1..].trim_end();
        let h = match h.find(" #") {
            Some(i) => h[..i].trim_end(),
            None => h,
        };
        let mut chomp = 'c';
        let mut explicit = None;
        for c in h.chars() {
            match c {
                '-' | '+' if chomp == 'c' => chomp = c,
                '1'..='9' if explicit.is_none() => explicit = Some(c as usize - '0' as usize),
                _ => return None,
            }
        }
        // Content indentation: explicit, or that of the first non-empty line.
        let content_indent = match explicit {
            Some(d) => parent + d,
            None => {
                let mut i = self.pos;
                while i < self.lines.len() && self.lines[i].text.trim().is_empty() {
                    // Leading blank lines that are more indented than the content would be an error.
                    if self.lines[i].indent > parent + 2 && !self.lines[i].text.is_empty() {
                        return None;
                    }
                    i += 1;
                }
                if i >= self.lines.len() || self.lines[i].indent <= parent {
                    parent + 1 // empty scalar
                } else {
                    self.lines[i].indent
                }
            }
        };
        let mut body = String::new();
        let mut trailing_breaks = 0usize;
        let mut any = false;
        while self.pos < self.lines.len() {
            let l = &self.lines[self.pos];
            let full_len = l.indent + l.text.len();
            if l.text.is_empty() || (l.text.trim().is_empty() && full_len <= content_indent) {
                // Blank line.
                if l.indent > content_indent {
                    // Spaces beyond the indent are content.
                    for _ in 0..trailing_breaks {
                        body.push('\n');
                    }
                    body.extend(std::iter::repeat_n(' ', l.indent - content_indent));
                    body.push_str(l.text);
                    trailing_breaks = 1;
                    any = true;
                    self.pos += 1;
                    continue;
                }
                trailing_breaks += 1;
                self.pos += 1;
                continue;
            }
            if l.indent < content_indent {
                break;
            }
            for _ in 0..trailing_breaks {
                body.push('\n');
            }
            body.extend(std::iter::repeat_n(' ', l.indent - content_indent));
            body.push_str(l.text);
            trailing_breaks = 1;
            any = true;
            self.pos += 1;
        }
        // Lines consumed as trailing blanks that belong after the scalar.
        match chomp {
            '-' => {}
            '+' => {
                for _ in 0..trailing_breaks {
                    body.push('\n');
                }
            }
            _ => {
                if any && trailing_breaks > 0 {
                    body.push('\n');
                }
            }
        }
        Some(Node::Scalar(Cow::Owned(body), false))
    }
}

fn is_quoted_start(s: &str) -> bool {
    s.starts_with('"') || s.starts_with('\'')
}

/// Splits `key: rest` / `key:` for a plain key; `None` if the line is not a simple plain key.
fn split_key(text: &str) -> Option<(Cow<'_, str>, &str)> {
    let b = text.as_bytes();
    if b.is_empty() {
        return None;
    }
    if matches!(
        b[0],
        b'"' | b'\''
            | b'?'
            | b'&'
            | b'*'
            | b'!'
            | b'{'
            | b'['
            | b'|'
            | b'>'
            | b'%'
            | b'@'
            | b'`'
            | b'#'
            | b','
    ) {
        return None;
    }
    let mut i = 0;
    while i < b.len() {
        if b[i] == b':' && (i + 1 == b.len() || b[i + 1] == b' ') {
            let key = &text[..i];
            if key.ends_with(' ') || key.contains(" #") || key.is_empty() {
                return None;
            }
            return Some((Cow::Borrowed(key), &text[i + 1..]));
        }
        i += 1;
    }
    None
}

/// The text of a plain scalar on one line, minus a trailing comment; `None` if the line holds
/// something the fast path does not handle (`: ` would start a mapping).
fn plain_segment(s: &str) -> Option<&str> {
    let s = match s.find(" #") {
        Some(i) => &s[..i],
        None => s,
    };
    let s = s.trim_end();
    if s.contains(": ") || s.ends_with(':') || s.starts_with("- ") || s.contains('\t') {
        return None;
    }
    Some(s)
}

fn emit(n: &Node, out: &mut String) -> Option<()> {
    match n {
        Node::Scalar(s, false) => write_str(out, s),
        Node::Scalar(s, true) => emit_plain(s, out)?,
        Node::Seq(items) => {
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                emit(it, out)?;
            }
            out.push(']');
        }
        Node::Map(entries) => {
            let mut order: Vec<usize> = (0..entries.len()).collect();
            if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
                order.sort_by(|&a, &b| entries[a].0.cmp(&entries[b].0));
                if order.windows(2).any(|w| entries[w[0]].0 == entries[w[1]].0) {
                    return None; // duplicate key: let the full parser report it
                }
            }
            out.push('{');
            for (n, &i) in order.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_str(out, &entries[i].0);
                out.push(':');
                emit(&entries[i].1, out)?;
            }
            out.push('}');
        }
    }
    Some(())
}

/// Resolves a plain scalar like the full parser: null, booleans (YAML 1.1 words), decimal integers
/// and floats; anything else that could be a number in some YAML dialect falls back.
fn emit_plain(s: &str, out: &mut String) -> Option<()> {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => out.push_str("null"),
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "y" | "Y" => {
            out.push_str("true")
        }
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "n" | "N" => {
            out.push_str("false")
        }
        _ => {
            let b = s.as_bytes();
            let first = b[0];
            if first.is_ascii_digit() || first == b'-' || first == b'+' || first == b'.' {
                let t = s.strip_prefix(['-', '+']).unwrap_or(s);
                if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) {
                    if t.len() > 1 && t.starts_with('0') {
                        return None; // octal in YAML 1.1
                    }
                    if t.len() <= 15 {
                        let v: i64 = s.parse().ok()?;
                        use std::fmt::Write;
                        let _ = write!(out, "{v}");
                        return Some(());
                    }
                    return None;
                }
                // Simple decimals like `1.5`.
                let dots = t.bytes().filter(|&c| c == b'.').count();
                let digits_and_dots = t.bytes().all(|c| c.is_ascii_digit() || c == b'.');
                if digits_and_dots
                    && dots == 1
                    && !t.starts_with('.')
                    && !t.ends_with('.')
                    && !t.starts_with("0")
                {
                    let f: f64 = s.parse().ok()?;
                    write_f64(out, f).ok()?;
                    return Some(());
                }
                // Versions like `1.2.3` are strings.
                if digits_and_dots && dots >= 2 {
                    write_str(out, s);
                    return Some(());
                }
                // A character no number, boolean or timestamp can contain makes it plain text;
                // anything else is left to the full parser.
                let prefixed = ["0x", "0X", "0o", "0O", "0b", "0B"]
                    .iter()
                    .any(|p| t.starts_with(p));
                // Timestamps (`2023-11-30 16:04`) stay strings with both parsers; base-60 numbers
                // (`1:30`) and floats (`1e3`, `.5`) are left to the full parser.
                let float_like = t
                    .bytes()
                    .all(|c| c.is_ascii_digit() || b"._eE+-".contains(&c));
                let base60_like =
                    t.contains(':') && t.bytes().all(|c| c.is_ascii_digit() || b":._".contains(&c));
                if prefixed || float_like || base60_like {
                    return None;
                }
            }
            write_str(out, s);
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(doc: &str) -> String {
        let c = crate::load::load_bytes(doc.as_bytes(), "t").unwrap();
        c.blobs[0].raw().unwrap().get().to_owned()
    }

    #[test]
    fn matches_the_full_parser() {
        for doc in [
            "schema: custom\na: 1\nb: x y\nc: \"q\\n\"\nd: 'it''s'\ne: |\n  line\n\n  two\nf:\n- a\n- b: 1\n  c: 2\ng: {}\nh: []\ni: yes\nj: 1.5\nk: 1.2.3\nl: null\n",
            "schema: custom\ndesc: Suspend your pods when no-one's using them to save energy and restore\n  when necessary\nz: |-\n  [\n    {}\n  ]\n",
            "schema: custom\nq: \"Hours:Minutes \\n Accept cron schedule for both hour and minute.\n  For example, *:*/2 is set.\"\nr: |+\n  a\n\nnext: 1\n",
            "schema: custom\nlit: |2-\n    indented\n  less\n",
        ] {
            let fast = parse(doc).expect("in the fast subset");
            let slow = serde_saphyr::from_str::<serde_json::Value>(doc).unwrap();
            let slow = crate::canonical::canonicalize_json(&serde_json::to_string(&slow).unwrap())
                .unwrap();
            assert_eq!(fast, slow, "{doc}");
            let _ = full(doc);
        }
    }

    /// Every document of the real catalogs takes the fast path and gives the full parser's result.
    #[test]
    fn real_catalogs_agree_with_the_full_parser() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
        let mut files = crate::load::walk(&root.join("catalogs")).unwrap();
        files.extend(crate::load::walk(&root.join("templates")).unwrap());
        let (mut fast, mut total) = (0, 0);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for doc in text
                .split("\n---")
                .map(|d| d.strip_prefix("---").unwrap_or(d))
            {
                if doc.trim().is_empty() {
                    continue;
                }
                let Ok(slow) = serde_saphyr::from_str::<serde_json::Value>(doc) else {
                    continue;
                };
                total += 1;
                if let Some(got) = parse(doc) {
                    fast += 1;
                    let want =
                        crate::canonical::canonicalize_json(&serde_json::to_string(&slow).unwrap())
                            .unwrap();
                    assert_eq!(got, want, "{}", f.display());
                }
            }
        }
        assert!(
            fast * 100 >= total * 95,
            "only {fast} of {total} documents took the fast path"
        );
    }

    #[test]
    fn unusual_constructs_fall_back() {
        for doc in [
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a: {b: 1}\n",
            "a: >\n  folded\n",
            "a:\tb\n",
            "- a\n",
            "a: 0x1F\n",
            "a: 012\n",
        ] {
            assert!(parse(doc).is_none(), "{doc}");
        }
    }
}
