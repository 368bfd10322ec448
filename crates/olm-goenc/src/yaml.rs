//! YAML output byte for byte as `sigs.k8s.io/yaml.Marshal` writes it (JSON → go-yaml v2), the
//! format of `opm render -o yaml` and of every manifest upstream writes: keys in go-yaml's
//! "natural" order, block style, sequences inside mappings not indented, plain scalars folded at
//! the first space past column 80, multi-line strings as literal blocks, and quoting decided by
//! go-yaml's YAML 1.1 resolver (so `"443"`, `"true"`, `"y"`, `""` and date-like strings are
//! double-quoted). Every rule mirrors the libyaml emitter go-yaml is a port of, because golden files
//! written by the Go tools are compared against this writer.

use serde_json::{Map, Value};

/// Column after which go-yaml breaks plain and quoted scalars at the next space.
const BEST_WIDTH: usize = 80;
const BEST_INDENT: usize = 2;

/// Writes `v` as one YAML document the way `sigs.k8s.io/yaml.Marshal` would.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    to_yaml_into(v, &mut out);
    out
}

/// [`to_yaml`] with mapping keys in the order they have in `v` (as go-yaml writes a
/// `yaml.MapSlice`): for files people write, whose key order is theirs.
pub fn to_yaml_ordered(v: &Value) -> String {
    let mut out = String::new();
    emit(v, &mut out, false);
    out
}

/// [`to_yaml`] appended to `out`, for writers that reuse or pre-size their buffer.
pub fn to_yaml_into(v: &Value, out: &mut String) {
    emit(v, out, true);
}

fn emit(v: &Value, out: &mut String, sorted: bool) {
    let mut e = Emitter {
        out: std::mem::take(out),
        column: 0,
        sorted,
    };
    match v {
        Value::Object(m) if !m.is_empty() => e.block_mapping(m, 0, false),
        Value::Array(a) if !a.is_empty() => e.block_sequence(a, 0, false),
        _ => {
            e.scalar_or_empty(v, 0, false);
            e.end_line();
        }
    }
    *out = e.out;
}

struct Emitter {
    out: String,
    /// Mapping keys in go-yaml's order (else as given).
    sorted: bool,
    /// Characters (not bytes) written on the current line, as libyaml counts them.
    column: usize,
}

impl Emitter {
    fn put(&mut self, s: &str) {
        self.out.push_str(s);
        self.column += s.chars().count();
    }

    fn put_char(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn newline(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// Ends the current line unless a literal block already ended it.
    fn end_line(&mut self) {
        if self.column > 0 || !self.out.ends_with('\n') {
            self.newline();
        }
    }

    fn indent_to(&mut self, indent: usize) {
        if self.column > 0 {
            self.newline();
        }
        while self.column < indent {
            self.put_char(' ');
        }
    }

    /// A mapping whose keys start at `indent`. `inline_first` is true when the first key follows a
    /// sequence dash on the same line.
    fn block_mapping(&mut self, m: &Map<String, Value>, indent: usize, inline_first: bool) {
        let mut keys: Vec<&String> = m.keys().collect();
        if self.sorted {
            keys.sort_by(|a, b| key_order(a, b));
        }
        for (i, k) in keys.into_iter().enumerate() {
            if !(i == 0 && inline_first) {
                self.indent_to(indent);
            }
            self.key(k);
            self.put_char(':');
            let v = &m[k.as_str()];
            match v {
                Value::Object(child) if !child.is_empty() => {
                    self.newline();
                    self.block_mapping(child, indent + BEST_INDENT, false);
                }
                Value::Array(items) if !items.is_empty() => {
                    self.newline();
                    // go-yaml writes sequences inside mappings "indentless".
                    self.block_sequence(items, indent, false);
                }
                _ => {
                    self.put_char(' ');
                    self.scalar_or_empty(v, indent + BEST_INDENT, false);
                    self.end_line();
                }
            }
        }
    }

    /// A sequence whose dashes are at `indent`.
    fn block_sequence(&mut self, items: &[Value], indent: usize, inline_first: bool) {
        for (i, v) in items.iter().enumerate() {
            if !(i == 0 && inline_first) {
                self.indent_to(indent);
            }
            self.put("- ");
            match v {
                Value::Object(child) if !child.is_empty() => {
                    self.block_mapping(child, indent + BEST_INDENT, true);
                }
                Value::Array(inner) if !inner.is_empty() => {
                    self.block_sequence(inner, indent + BEST_INDENT, true);
                }
                _ => {
                    self.scalar_or_empty(v, indent + BEST_INDENT, false);
                    self.end_line();
                }
            }
        }
    }

    fn key(&mut self, k: &str) {
        match select_style(k, true) {
            Style::Plain => self.put(k),
            Style::Single => self.single_quoted(k, 0, false),
            Style::Double | Style::Literal => self.double_quoted(k, 0, false),
        }
    }

    /// Writes a scalar or an empty collection. `indent` is the indentation continuation lines and
    /// literal-block content get (the enclosing container's indentation plus two).
    fn scalar_or_empty(&mut self, v: &Value, indent: usize, simple_key: bool) {
        match v {
            Value::Null => self.put("null"),
            Value::Bool(b) => self.put(if *b { "true" } else { "false" }),
            Value::Number(n) => self.put(&format_number(n)),
            Value::String(s) => self.string(s, indent, simple_key),
            Value::Object(_) => self.put("{}"),
            Value::Array(_) => self.put("[]"),
        }
    }

    fn string(&mut self, s: &str, indent: usize, simple_key: bool) {
        match select_style(s, simple_key) {
            Style::Plain => self.plain(s, indent),
            Style::Single => self.single_quoted(s, indent, true),
            Style::Double => self.double_quoted(s, indent, true),
            Style::Literal => self.literal(s, indent),
        }
    }

    fn plain(&mut self, s: &str, indent: usize) {
        // A break happens only at a space past the best width: a scalar without spaces, or one
        // that ends before that column, is written as it is.
        let width = s.chars().count();
        if !s.contains(' ') || self.column + width <= BEST_WIDTH {
            self.out.push_str(s);
            self.column += width;
            return;
        }
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_is_space = chars.get(i + 1) == Some(&' ');
                if !spaces && self.column > BEST_WIDTH && !next_is_space {
                    self.newline();
                    while self.column < indent {
                        self.put_char(' ');
                    }
                } else {
                    self.put_char(c);
                }
                spaces = true;
            } else {
                self.put_char(c);
                spaces = false;
            }
        }
    }

    fn single_quoted(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        self.put_char('\'');
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_is_space = chars.get(i + 1) == Some(&' ');
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                    && !next_is_space
                {
                    self.newline();
                    while self.column < indent {
                        self.put_char(' ');
                    }
                } else {
                    self.put_char(c);
                }
                spaces = true;
            } else {
                if c == '\'' {
                    self.put_char('\'');
                }
                self.put_char(c);
                spaces = false;
            }
        }
        self.put_char('\'');
    }

    fn double_quoted(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        self.put_char('"');
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || c == '\u{feff}' || is_break(c) || c == '"' || c == '\\' {
                self.put_char('\\');
                match c {
                    '\0' => self.put_char('0'),
                    '\u{7}' => self.put_char('a'),
                    '\u{8}' => self.put_char('b'),
                    '\t' => self.put_char('t'),
                    '\n' => self.put_char('n'),
                    '\u{b}' => self.put_char('v'),
                    '\u{c}' => self.put_char('f'),
                    '\r' => self.put_char('r'),
                    '\u{1b}' => self.put_char('e'),
                    '"' => self.put_char('"'),
                    '\\' => self.put_char('\\'),
                    '\u{85}' => self.put_char('N'),
                    '\u{a0}' => self.put_char('_'),
                    '\u{2028}' => self.put_char('L'),
                    '\u{2029}' => self.put_char('P'),
                    _ => {
                        let v = c as u32;
                        if v <= 0xff {
                            self.put(&format!("x{v:02X}"));
                        } else if v <= 0xffff {
                            self.put(&format!("u{v:04X}"));
                        } else {
                            self.put(&format!("U{v:08X}"));
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i != 0
                    && i + 1 != chars.len()
                {
                    self.newline();
                    while self.column < indent {
                        self.put_char(' ');
                    }
                    if chars.get(i + 1) == Some(&' ') {
                        self.put_char('\\');
                    }
                } else {
                    self.put_char(c);
                }
                spaces = true;
            } else {
                self.put_char(c);
                spaces = false;
            }
        }
        self.put_char('"');
    }

    fn literal(&mut self, s: &str, indent: usize) {
        self.put_char('|');
        let first = s.chars().next();
        if first.is_some_and(|c| c == ' ' || is_break(c)) {
            self.put(&BEST_INDENT.to_string());
        }
        let mut rev = s.chars().rev();
        match rev.next() {
            Some(c) if !is_break(c) => self.put_char('-'),
            Some(_) if s.chars().count() == 1 => self.put_char('+'),
            Some(_) if rev.next().is_some_and(is_break) => self.put_char('+'),
            _ => {}
        }
        self.newline();
        if !s.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}']) {
            // Only `\n` breaks: each line is indented and written whole.
            for (i, line) in s.split('\n').enumerate() {
                if i > 0 {
                    self.newline();
                }
                if !line.is_empty() {
                    while self.column < indent {
                        self.put_char(' ');
                    }
                    self.put(line);
                }
            }
            return;
        }
        let mut breaks = true;
        for c in s.chars() {
            if is_break(c) {
                // libyaml writes line separators other than `\n` as themselves.
                if c == '\n' {
                    self.newline();
                } else {
                    self.out.push(c);
                    self.column = 0;
                }
                breaks = true;
            } else {
                if breaks {
                    while self.column < indent {
                        self.put_char(' ');
                    }
                }
                self.put_char(c);
                breaks = false;
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// go-yaml's choice of scalar style for a string: first what the encoder asks for (literal for
/// multi-line, double-quoted when the YAML 1.1 resolver would read something other than a string
/// back), then what libyaml's scalar analysis allows.
fn select_style(s: &str, simple_key: bool) -> Style {
    let requested = if s.contains('\n') {
        Style::Literal
    } else if resolves_to_string(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::Double
    };
    let a = analyze(s);
    let mut style = requested;
    if style == Style::Plain && (!a.block_plain_allowed || (s.is_empty() && simple_key)) {
        style = Style::Single;
    }
    if style == Style::Single && !a.single_quoted_allowed {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block_allowed || simple_key) {
        style = Style::Double;
    }
    style
}

struct Analysis {
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `is_printable` on UTF-8: note that it rejects every character outside the Basic
/// Multilingual Plane, so emoji force double quotes with `\U` escapes, exactly as go-yaml does.
fn is_printable(c: char) -> bool {
    let v = c as u32;
    v == 0x0a
        || (0x20..=0x7e).contains(&v)
        || (0xa0..=0xd7ff).contains(&v)
        || ((0xe000..=0xfffd).contains(&v) && v != 0xfeff)
}

fn analyze(s: &str) -> Analysis {
    let mut a = Analysis {
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if s.is_empty() {
        return a;
    }
    // go-yaml treats any scalar starting with a document marker as holding indicators.
    if s.starts_with("---") || s.starts_with("...") {
        a.block_plain_allowed = false;
    }
    let (mut block_indicators, mut special) = (false, false);
    let (mut line_breaks, mut leading_space, mut leading_break) = (false, false, false);
    let (mut trailing_space, mut trailing_break, mut break_space, mut space_break) =
        (false, false, false, false);
    let mut preceded_by_ws = true;
    let (mut previous_space, mut previous_break) = (false, false);
    // One pass, looking one character ahead (no copy of the text: most scalars are short and
    // this runs for every one of them).
    let bytes = s.as_bytes();
    // After the first character, a run of printable ASCII other than space, `:` and `#` sets
    // no flag but the three "previous" ones: such runs (most of every scalar) are skipped
    // eight bytes at a time, then one at a time, without decoding characters.
    let plain_ascii = |b: u8| (0x21..=0x7e).contains(&b) && b != b':' && b != b'#';
    let plain_word = |w: u64| {
        !(crate::swar::has_below(w, 0x21)
            || crate::swar::has_high(w)
            || crate::swar::has(w, 0x7f)
            || crate::swar::has(w, b':')
            || crate::swar::has(w, b'#'))
    };
    let mut i = 0usize;
    while i < bytes.len() {
        if i > 0 && plain_ascii(bytes[i]) {
            while crate::swar::word(bytes, i).is_some_and(plain_word) {
                i += 8;
            }
            while i < bytes.len() && plain_ascii(bytes[i]) {
                i += 1;
            }
            (previous_space, previous_break, preceded_by_ws) = (false, false, false);
            continue;
        }
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        let next_i = i + c.len_utf8();
        let last = next_i == bytes.len();
        // Space and tab are ASCII: the next byte tells.
        let followed_by_ws = bytes.get(next_i).is_none_or(|&b| b == b' ' || b == b'\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => {
                    block_indicators = true;
                }
                '?' | ':' | '-' if followed_by_ws => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_ws => block_indicators = true,
                '#' if preceded_by_ws => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) || c == '\u{feff}' {
            special = true;
        }
        if is_break(c) {
            line_breaks = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if last {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            if i == 0 {
                leading_break = true;
            }
            if last {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = c == ' ' || c == '\t' || is_break(c) || c == '\0';
        i = next_i;
    }
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks {
        a.block_plain_allowed = false;
    }
    if block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// True when go-yaml v2's resolver reads the plain scalar `s` back as a string (and not as null,
/// a bool in YAML 1.1 spelling, an int in any base, a float or a timestamp): the reader's own
/// scalar rules decide, so what this writer leaves plain is read back as the same string.
fn resolves_to_string(s: &str) -> bool {
    use crate::yamlread::scalar::{Scalar, resolve_plain};
    // `<<` reads as a merge key; a timestamp is kept as text when read into JSON, but go-yaml
    // resolves it to a time and so quotes it when writing.
    if s == "<<" || (s.starts_with(|c: char| c.is_ascii_digit()) && is_timestamp(s)) {
        return false;
    }
    matches!(
        resolve_plain(std::borrow::Cow::Borrowed(s)),
        Ok(Scalar::Str(_))
    )
}

/// go-yaml's float pattern `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
pub fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// go-yaml's base-60 float check `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`: such strings
/// are quoted so YAML 1.1 readers do not see sexagesimal numbers.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 2 {
            i += 1;
        }
        let g = &b[start..i];
        let ok = match g.len() {
            1 => true,
            2 => g[0] <= b'5',
            _ => false,
        };
        if !ok {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// The timestamp layouts go-yaml v2 accepts for untagged plain scalars.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let lead = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if lead != 4 || lead == b.len() || b[lead] != b'-' {
        return false;
    }
    let num = |p: &str, max: usize| {
        !p.is_empty() && p.len() <= max && p.bytes().all(|c| c.is_ascii_digit())
    };
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some((&s[i..i + 1], &s[i + 1..]))),
        None => (s, None),
    };
    let d: Vec<&str> = date.split('-').collect();
    if d.len() != 3 || !num(d[0], 4) || !num(d[1], 2) || !num(d[2], 2) {
        return false;
    }
    let (m, day) = (
        d[1].parse::<u32>().unwrap_or(0),
        d[2].parse::<u32>().unwrap_or(0),
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return false;
    }
    let Some((sep, t)) = time else { return true };
    let (clock, zone) = if sep == " " {
        (t, "")
    } else {
        match t.find(['Z', '+', '-']) {
            Some(i) => (&t[..i], &t[i..]),
            None => return false,
        }
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((a, f)) => (a, Some(f)),
        None => (clock, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    if parts.len() != 3 || !parts.iter().all(|p| num(p, 2)) {
        return false;
    }
    if frac.is_some_and(|f| !num(f, 9)) {
        return false;
    }
    zone.is_empty() && sep == " "
        || zone == "Z"
        || (zone.len() == 6
            && zone.as_bytes()[3] == b':'
            && num(&zone[1..3], 2)
            && num(&zone[4..], 2))
}

/// Numbers as go-yaml prints what it decoded from Go's JSON: integral values as integers,
/// others in Go's shortest `%g` form. Negative zero is integral too, so go-yaml reads `-0` as the
/// integer 0 and prints `0`: YAML keeps no sign on zero.
pub fn format_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f == 0.0 {
        return "0".into();
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        // Go's JSON writes it without a fraction, so go-yaml reads an integer back.
        return format!("{f:.0}");
    }
    go_format_g(f)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`.
pub fn go_format_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits, like Go's shortest mode.
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // Go switches to exponent form at precision 6 when printing the shortest representation.
    if !(-4..6).contains(&exp) {
        let (sign, digits) = if let Some(m) = mant.strip_prefix('-') {
            ("-", m)
        } else {
            ("", mant)
        };
        let es = if exp < 0 { "-" } else { "+" };
        format!("{sign}{digits}e{es}{:02}", exp.abs())
    } else {
        let s = format!("{f}");
        s
    }
}

/// go-yaml v2's map key order: letters compare by code point, non-letters sort before letters,
/// and runs of digits compare by numeric value.
pub fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let less = |ar: &[char], br: &[char]| -> bool {
        let mut i = 0;
        while i < ar.len() && i < br.len() {
            if ar[i] == br[i] {
                i += 1;
                continue;
            }
            let al = ar[i].is_alphabetic();
            let bl = br[i].is_alphabetic();
            if al && bl {
                return ar[i] < br[i];
            }
            if al || bl {
                return bl;
            }
            let (mut an, mut bn): (i64, i64) = (0, 0);
            if ar[i] == '0' || br[i] == '0' {
                let mut j = i;
                while j > 0 {
                    j -= 1;
                    if !ar[j].is_ascii_digit() {
                        break;
                    }
                    if ar[j] != '0' {
                        an = 1;
                        bn = 1;
                        break;
                    }
                }
            }
            let mut ai = i;
            while ai < ar.len() && ar[ai].is_ascii_digit() {
                an = an
                    .wrapping_mul(10)
                    .wrapping_add(i64::from(ar[ai] as u8 - b'0'));
                ai += 1;
            }
            let mut bi = i;
            while bi < br.len() && br[bi].is_ascii_digit() {
                bn = bn
                    .wrapping_mul(10)
                    .wrapping_add(i64::from(br[bi] as u8 - b'0'));
                bi += 1;
            }
            if an != bn {
                return an < bn;
            }
            if ai != bi {
                return ai < bi;
            }
            return ar[i] < br[i];
        }
        ar.len() < br.len()
    };
    if less(&ar, &br) {
        Ordering::Less
    } else if less(&br, &ar) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quoting_follows_go_yaml_resolver() {
        let v = json!({"a": "443", "b": "", "c": "true", "d": "y", "e": "2022-01-01", "f": "1:20",
            "g": "plain text", "h": "*", "i": "- x", "j": "a: b", "k": "0777", "l": "1e3", "m": "v1.2"});
        let y = to_yaml(&v);
        assert_eq!(
            y,
            "a: \"443\"\nb: \"\"\nc: \"true\"\nd: \"y\"\ne: \"2022-01-01\"\nf: \"1:20\"\ng: plain text\nh: '*'\ni: '- x'\nj: 'a: b'\nk: \"0777\"\nl: \"1e3\"\nm: v1.2\n"
        );
    }

    #[test]
    fn literal_blocks_and_chomping() {
        let v = json!({"a": "x\ny", "b": "x\n", "c": "x\n\n", "d": " x\ny"});
        assert_eq!(
            to_yaml(&v),
            "a: |-\n  x\n  y\nb: |\n  x\nc: |+\n  x\n\nd: |2-\n   x\n  y\n"
        );
    }

    #[test]
    fn key_order_is_natural() {
        let mut k = vec!["a10", "a9", "B", "a", "_x", "a.b"];
        k.sort_by(|a, b| key_order(a, b));
        assert_eq!(k, vec!["_x", "B", "a", "a.b", "a9", "a10"]);
    }

    #[test]
    /// The writer quotes exactly the strings the reader would not read back as strings:
    /// go-yaml resolves `1e400` (out of float64's range) and `09` to a string and a float.
    fn quoting_follows_the_reader() {
        let v =
            serde_json::json!({"a": "1e400", "b": "09", "c": "0777", "d": "2020-01-01", "e": "<<"});
        assert_eq!(
            to_yaml(&v),
            "a: 1e400\nb: \"09\"\nc: \"0777\"\nd: \"2020-01-01\"\ne: \"<<\"\n"
        );
        for (k, text) in v.as_object().into_iter().flatten() {
            let back = crate::yamlread::parse_documents(&to_yaml(&serde_json::json!({ k: text })));
            assert_eq!(
                back.ok().and_then(|d| d.into_iter().next()),
                Some(serde_json::json!({ k: text }))
            );
        }
    }

    #[test]
    fn floats_print_like_go() {
        assert_eq!(go_format_g(0.5), "0.5");
        assert_eq!(go_format_g(1e-7), "1e-07");
        assert_eq!(go_format_g(1.5e22), "1.5e+22");
        assert_eq!(go_format_g(1234567.5), "1.2345675e+06");
        assert_eq!(go_format_g(100000.5), "100000.5");
    }

    /// sigs.k8s.io/yaml's JSONToYAML reads JSON `-0` through go-yaml v2's resolver
    /// (`strconv.ParseInt` succeeds), so it writes the integer `0`.
    #[test]
    fn negative_zero_prints_as_zero() {
        let n: serde_json::Value = serde_json::from_str("-0").unwrap();
        let serde_json::Value::Number(n) = n else {
            unreachable!()
        };
        assert_eq!(format_number(&n), "0");
        let n: serde_json::Value = serde_json::from_str("-0.0").unwrap();
        let serde_json::Value::Number(n) = n else {
            unreachable!()
        };
        assert_eq!(format_number(&n), "0");
    }
}
