//! A fast path for the block YAML that Kubernetes manifests and catalogs are almost always written
//! in: block mappings and sequences with plain keys, plain, quoted and literal scalars, empty flow
//! collections, comments and `---` document separators. Anything else — anchors, aliases, tags,
//! flow collections with content, folded scalars, tabs outside scalars, quoted or complex keys,
//! merge keys, directives, odd indentation, deep nesting — makes [`parse_documents`] return
//! `None`, and the caller uses the full parser, which also produces every error message. Plain
//! scalars (keys too) are resolved by the same functions as the full path, so the values are
//! identical.
//!
//! The reader is generic over what it builds ([`Build`]): JSON values for manifests, or
//! canonical JSON text for catalogs, without a tree in between.

use std::borrow::Cow;

use super::scalar::{Scalar, resolve_plain};

/// What the fast path builds from the structure it reads. `None` from a method means "not in the
/// fast subset after all" (e.g. a repeated key the caller refuses): the full parser decides.
pub(crate) trait Build<'a> {
    type Node;
    fn scalar(&mut self, s: Scalar<'a>) -> Option<Self::Node>;
    fn seq(&mut self, items: Vec<Self::Node>) -> Self::Node;
    /// The entries of one mapping, in document order (repeats included).
    fn map(
        &mut self,
        entries: std::vec::Drain<'_, (Cow<'a, str>, Self::Node)>,
    ) -> Option<Self::Node>;
}

/// YAML's white space; `str::trim` would also strip other Unicode spaces, which are content.
const WS: [char; 2] = [' ', '\t'];

/// Deepest nesting of collections the fast path reads.
const MAX_DEPTH: usize = 100;

struct Line<'a> {
    indent: usize,
    text: &'a str, // after the indentation, without the line break
}

struct P<'a, 'b, B: Build<'a>> {
    lines: Vec<Line<'a>>,
    pos: usize,
    build: &'b mut B,
    /// The entries of the mappings being read, innermost last: each map is then allocated once
    /// at its final size instead of growing entry by entry.
    entries: Vec<(Cow<'a, str>, B::Node)>,
    /// Nesting of the collection being read: deep documents go to the full parser, which does
    /// not recurse.
    depth: usize,
}

/// Every non-empty document of `text`, or `None` for "not in the fast subset (or invalid): use
/// the full parser".
pub(crate) fn parse_documents<'a, B: Build<'a>>(
    text: &'a str,
    build: &mut B,
) -> Option<Vec<B::Node>> {
    if text.starts_with('\u{feff}') {
        return None;
    }
    let mut docs = Vec::new();
    let mut lines: Vec<Line<'_>> = Vec::with_capacity(text.len() / 32 + 1);
    // A final line break ends the last line; it does not start an empty one.
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut start = 0;
    // One pass finds the line breaks and any carriage return (a line break to YAML too, left to
    // the full parser).
    let breaks = memchr::memchr2_iter(b'\n', b'\r', body.as_bytes()).chain([body.len()]);
    for end in breaks {
        if body.as_bytes().get(end) == Some(&b'\r') {
            return None;
        }
        let raw = &body[start..end];
        start = end + 1;
        let indent = raw.bytes().take_while(|&b| b == b' ').count();
        let t = &raw[indent..];
        if indent == 0 {
            let b = t.as_bytes();
            if b.starts_with(b"---") || b.starts_with(b"...") || b.starts_with(b"%") {
                if t.trim_end_matches(' ') != "---" {
                    return None;
                }
                document(std::mem::take(&mut lines), build, &mut docs)?;
                continue;
            }
        }
        lines.push(Line { indent, text: t });
    }
    document(lines, build, &mut docs)?;
    Some(docs)
}

/// One document's lines: a block mapping or sequence at indent 0, or nothing but blanks and
/// comments (an empty document, which is skipped).
fn document<'a, B: Build<'a>>(
    lines: Vec<Line<'a>>,
    build: &mut B,
    docs: &mut Vec<B::Node>,
) -> Option<()> {
    let mut p = P {
        lines,
        pos: 0,
        build,
        entries: Vec::new(),
        depth: 0,
    };
    p.skip_blank();
    if p.pos >= p.lines.len() {
        return Some(());
    }
    let first = &p.lines[p.pos];
    if first.indent != 0 {
        return None;
    }
    let node = if first.text.starts_with("- ") || first.text == "-" {
        p.sequence(0)?
    } else {
        p.mapping(0)?
    };
    p.skip_blank();
    if p.pos < p.lines.len() {
        return None;
    }
    docs.push(node);
    Some(())
}

impl<'a, B: Build<'a>> P<'a, '_, B> {
    /// A plain scalar's value; `None` when resolution fails (the full parser reports the error).
    fn plain_value(&mut self, text: Cow<'a, str>) -> Option<B::Node> {
        let s = resolve_plain(text).ok()?;
        self.build.scalar(s)
    }

    fn string(&mut self, text: String) -> Option<B::Node> {
        self.build.scalar(Scalar::Str(Cow::Owned(text)))
    }

    fn skip_blank(&mut self) {
        while self.pos < self.lines.len() {
            let t = self.lines[self.pos].text.trim_end_matches(WS);
            if t.is_empty() || t.starts_with('#') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn mapping(&mut self, indent: usize) -> Option<B::Node> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let base = self.entries.len();
        loop {
            self.skip_blank();
            if self.pos >= self.lines.len() {
                break;
            }
            let l = &self.lines[self.pos];
            if l.indent < indent {
                break;
            }
            // Tabs are content only inside scalars (literal blocks, quoted text).
            if l.indent > indent
                || l.text.starts_with("- ")
                || l.text == "-"
                || l.text.starts_with('\t')
            {
                return None;
            }
            let text = l.text;
            let (key, rest) = split_key(text)?;
            // `<<` merges; anything resolving to a non-string key is formatted like Go does.
            if key == "<<" || key.len() > 1024 {
                return None;
            }
            let key = resolve_plain(key).ok()?.into_key();
            self.pos += 1;
            let value = self.value(indent, rest, true)?;
            self.entries.push((key, value));
        }
        let map = self.build.map(self.entries.drain(base..))?;
        self.depth -= 1;
        Some(map)
    }

    fn sequence(&mut self, indent: usize) -> Option<B::Node> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
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
        self.depth -= 1;
        Some(self.build.seq(items))
    }

    /// The value after `key:` or `- `: `rest` is the text on the same line; `parent` the indent of
    /// the collection holding it.
    fn value(&mut self, parent: usize, rest: &'a str, in_map: bool) -> Option<B::Node> {
        let rest = rest.trim_start_matches(' ');
        if rest.starts_with('\t') {
            return None;
        }
        if rest.is_empty() || rest.starts_with('#') {
            // Nested block (or null).
            self.skip_blank();
            if self.pos >= self.lines.len() {
                return self.build.scalar(Scalar::Null);
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
            return self.build.scalar(Scalar::Null);
        }
        match rest.as_bytes()[0] {
            b'"' => self.double_quoted(parent, rest),
            b'\'' => self.single_quoted(parent, rest),
            b'|' => self.literal(parent, rest),
            b'{' if rest.trim_end_matches(WS) == "{}" => self.build.map(Vec::new().drain(..)),
            b'[' if rest.trim_end_matches(WS) == "[]" => Some(self.build.seq(Vec::new())),
            b'{' | b'[' | b'&' | b'*' | b'!' | b'>' | b'%' | b'@' | b'`' | b'?' | b',' | b']'
            | b'}' => None,
            // `-` and `:` start a plain scalar only when followed by a non-space.
            b'-' | b':' if rest.len() == 1 || matches!(rest.as_bytes()[1], b' ' | b'\t') => None,
            _ => self.plain(parent, rest),
        }
    }

    fn plain(&mut self, parent: usize, first: &'a str) -> Option<B::Node> {
        let (first, mut commented) = plain_segment(first)?;
        let mut text: Cow<'a, str> = Cow::Borrowed(first);
        // Continuation lines: more indented than the parent, not a comment.
        let mut pending_newlines = 0;
        while self.pos < self.lines.len() {
            let l = &self.lines[self.pos];
            let t = l.text.trim_end_matches(WS);
            if t.is_empty() {
                pending_newlines += 1;
                self.pos += 1;
                continue;
            }
            if l.indent <= parent || t.starts_with('#') {
                break;
            }
            // A comment ends the scalar: a continuation after it is an error.
            if commented || t == "-" || t.starts_with('\t') {
                return None;
            }
            let (seg, c) = plain_segment(t)?;
            commented = c;
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
        self.plain_value(text)
    }

    /// The next line of a quoted scalar that spans lines, without its leading white space, and
    /// how many empty lines came before it (each becomes a newline); `None` if the text ends or
    /// the line is not indented more than the parent (the full parser reports that).
    fn quoted_continuation(&mut self, parent: usize) -> Option<(&'a str, usize)> {
        let mut newlines = 0;
        loop {
            let l = self.lines.get(self.pos)?;
            if l.text.trim_matches(WS).is_empty() {
                newlines += 1;
                self.pos += 1;
                continue;
            }
            if l.indent <= parent {
                return None;
            }
            return Some((l.text.trim_start_matches([' ', '\t']), newlines));
        }
    }

    fn double_quoted(&mut self, parent: usize, first: &'a str) -> Option<B::Node> {
        let mut out = String::new();
        let mut line = &first[1..];
        let mut first_line = true;
        loop {
            let mut chars = line.char_indices().peekable();
            let mut closed = None;
            // Characters of this line (after folding rules for its leading whitespace).
            let mut seg = String::new();
            let mut escaped_break = false;
            // Escaped characters are content even when they are white space: folding only
            // trims the white space written as such.
            let mut escaped_len = 0;
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
                        escaped_len = seg.len();
                    }
                    c => seg.push(c),
                }
            }
            if let Some(end) = closed {
                out.push_str(&seg);
                if !only_comment_after(&line[end..]) {
                    return None;
                }
                self.pos += usize::from(!first_line);
                return self.string(out);
            }
            // The line ends inside the string: fold.
            if escaped_break {
                out.push_str(&seg);
            } else {
                let kept = seg.trim_end_matches([' ', '\t']).len().max(escaped_len);
                out.push_str(&seg[..kept]);
            }
            if !first_line {
                self.pos += 1;
            } else {
                first_line = false;
            }
            let (next, newlines) = self.quoted_continuation(parent)?;
            line = next;
            if escaped_break {
                // The escaped break itself is dropped; empty lines after it still count.
                out.extend(std::iter::repeat_n('\n', newlines));
            } else {
                fold(&mut out, newlines);
            }
        }
    }

    fn single_quoted(&mut self, parent: usize, first: &'a str) -> Option<B::Node> {
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
                if !only_comment_after(&line[end..]) {
                    return None;
                }
                self.pos += usize::from(!first_line);
                return self.string(out);
            }
            seg.push_str(&line[seg_start..]);
            out.push_str(seg.trim_end_matches([' ', '\t']));
            if !first_line {
                self.pos += 1;
            } else {
                first_line = false;
            }
            let (next, newlines) = self.quoted_continuation(parent)?;
            line = next;
            fold(&mut out, newlines);
        }
    }

    fn literal(&mut self, parent: usize, header: &'a str) -> Option<B::Node> {
        let h = header[1..].trim_end_matches(WS);
        let h = match h.find(" #") {
            Some(i) => h[..i].trim_end_matches(WS),
            None => h,
        };
        let mut chomp = 'c';
        let mut explicit: Option<usize> = None;
        for c in h.chars() {
            match c {
                '-' | '+' if chomp == 'c' => chomp = c,
                '1'..='9' if explicit.is_none() => explicit = Some(c as usize - '0' as usize),
                _ => return None,
            }
        }
        let content_indent = match explicit {
            // An indentation indicator counts from the indentation of the collection holding the
            // scalar, as libyaml counts it.
            Some(n) => {
                let content_indent = parent + n;
                let mut i = self.pos;
                while i < self.lines.len() && self.lines[i].text.trim_matches(WS).is_empty() {
                    i += 1;
                }
                if i >= self.lines.len() || self.lines[i].indent < content_indent {
                    return None; // empty, or less indented than announced: the full parser decides
                }
                content_indent
            }
            // Otherwise, that of the first non-empty line.
            None => {
                let mut i = self.pos;
                let mut widest_blank = 0;
                while i < self.lines.len() && self.lines[i].text.trim_matches(WS).is_empty() {
                    if !self.lines[i].text.is_empty() {
                        return None;
                    }
                    widest_blank = widest_blank.max(self.lines[i].indent);
                    i += 1;
                }
                if i >= self.lines.len() || self.lines[i].indent <= parent {
                    // No content: the empty string, whatever the blank lines (kept only by `|+`,
                    // which is left to the full parser). Catalogs carry `alm-examples: |-` so.
                    if chomp == '+' {
                        return None;
                    }
                    return self.string(String::new());
                }
                // Leading blank lines wider than the content would be an error.
                if widest_blank > self.lines[i].indent {
                    return None;
                }
                self.lines[i].indent
            }
        };
        let mut body = String::new();
        let mut trailing_breaks = 0usize;
        let mut any = false;
        while self.pos < self.lines.len() {
            let l = &self.lines[self.pos];
            let full_len = l.indent + l.text.len();
            if l.indent < content_indent && l.text.starts_with('\t') {
                return None;
            }
            if l.text.is_empty()
                || (l.text.trim_matches(WS).is_empty() && full_len <= content_indent)
            {
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
        self.string(body)
    }
}

/// Whether the text after a closing quote may end the line: nothing, or a comment with a space
/// before its `#`.
fn only_comment_after(rest: &str) -> bool {
    let after = rest.trim_start_matches(' ');
    after.is_empty() || (after.len() < rest.len() && after.starts_with('#'))
}

/// A line break inside a flow scalar: a space, or one newline per empty line that followed it.
fn fold(out: &mut String, empty_lines: usize) {
    if empty_lines == 0 {
        out.push(' ');
    } else {
        out.extend(std::iter::repeat_n('\n', empty_lines));
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
            if key.ends_with(' ') || key.contains(" #") || key.is_empty() || key.contains('\t') {
                return None;
            }
            return Some((Cow::Borrowed(key), &text[i + 1..]));
        }
        i += 1;
    }
    None
}

/// The text of a plain scalar on one line, minus a trailing comment; `None` if the line holds
/// something the fast path does not handle (`: ` would start a mapping); and whether a comment
/// followed it.
fn plain_segment(s: &str) -> Option<(&str, bool)> {
    let (s, commented) = match s.find(" #") {
        Some(i) => (&s[..i], true),
        None => (s, false),
    };
    let s = s.trim_end_matches(WS);
    if s.contains(": ") || s.ends_with(':') || s.starts_with("- ") || s.contains('\t') {
        return None;
    }
    Some((s, commented))
}
