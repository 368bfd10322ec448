//! A YAML emitter that reproduces go-yaml v2's output (what `opm render -o yaml` prints through
//! sigs.k8s.io/yaml): block style, mapping keys in go-yaml's order, sequences not indented under their
//! key, 2-space indentation, scalars plain when possible, long lines folded at column 80, multi-line
//! strings as literal blocks with chomping indicators, and go-yaml's quoting and escaping rules.

use std::cmp::Ordering;

use serde_json::Value;

const BEST_WIDTH: usize = 80;

/// Emits one value as a YAML document (no `---`), ending with a newline.
pub fn to_yaml(v: &Value) -> String {
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
    };
    match v {
        Value::Object(m) if !m.is_empty() => e.mapping(m, 0),
        Value::Array(a) if !a.is_empty() => e.sequence(a, 0),
        other => e.scalar_node(other, 0, false),
    }
    if e.column > 0 {
        e.out.push('\n');
    }
    e.out
}

/// go-yaml v2's map key order: runs of digits compare numerically, non-letters sort before letters.
pub fn key_cmp(a: &str, b: &str) -> Ordering {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn) = (0i64, 0i64);
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
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

struct Emitter {
    out: String,
    column: usize,
    whitespace: bool,
    indention: bool,
}

#[derive(PartialEq, Clone, Copy)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }
    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }
    fn write_indent(&mut self, indent: usize) {
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }
    fn indicator(&mut self, s: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        for c in s.chars() {
            self.put(c);
        }
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    fn mapping(&mut self, m: &serde_json::Map<String, Value>, indent: usize) {
        let mut keys: Vec<&String> = m.keys().collect();
        keys.sort_by(|a, b| key_cmp(a, b));
        for k in keys {
            self.write_indent(indent);
            self.scalar_str(k, indent, true);
            self.indicator(":", false, false, false);
            self.value(&m[k.as_str()], indent, true);
        }
    }

    fn sequence(&mut self, a: &[Value], indent: usize) {
        for v in a {
            self.write_indent(indent);
            self.indicator("-", true, false, true);
            self.value(v, indent, false);
        }
    }

    /// A node as a mapping value (`in_map`) or sequence item, where `indent` is the parent's indent.
    fn value(&mut self, v: &Value, indent: usize, in_map: bool) {
        match v {
            Value::Object(m) if !m.is_empty() => self.mapping(m, indent + 2),
            Value::Array(a) if !a.is_empty() => {
                // Sequences directly under a mapping key are not indented.
                let ind = if in_map && !self.indention {
                    indent
                } else {
                    indent + 2
                };
                self.sequence(a, ind)
            }
            Value::Object(_) => self.indicator("{}", true, false, false),
            Value::Array(_) => self.indicator("[]", true, false, false),
            other => self.scalar_node(other, indent, false),
        }
    }

    fn scalar_node(&mut self, v: &Value, indent: usize, key: bool) {
        match v {
            Value::Null => self.plain("null", indent, key),
            Value::Bool(b) => self.plain(if *b { "true" } else { "false" }, indent, key),
            Value::Number(n) => {
                let s = if n.is_i64() || n.is_u64() {
                    n.to_string()
                } else {
                    go_g(n.as_f64().unwrap_or(0.0))
                };
                self.plain(&s, indent, key)
            }
            Value::String(s) => self.scalar_str(s, indent, key),
            _ => {}
        }
    }

    fn plain(&mut self, s: &str, indent: usize, key: bool) {
        self.write_plain(s, indent + 2, !key);
    }

    fn scalar_str(&mut self, s: &str, indent: usize, key: bool) {
        let requested = if s.contains('\n') {
            Style::Literal
        } else if resolves_to_str(s) {
            Style::Plain
        } else {
            Style::Double
        };
        let a = analyze(s);
        let mut style = requested;
        if key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (s.is_empty() && key)) {
            style = Style::Single;
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block_allowed || key) {
            style = Style::Double;
        }
        let ind = indent + 2;
        match style {
            Style::Plain => self.write_plain(s, ind, !key),
            Style::Single => self.write_single(s, ind, !key),
            Style::Double => self.write_double(s, ind, !key),
            Style::Literal => self.write_literal(s, ind),
        }
    }

    fn write_plain(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent(indent);
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                self.indention = false;
                spaces = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        self.indicator("'", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent(indent);
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
            }
        }
        self.indicator("'", false, false, false);
    }

    fn write_double(&mut self, s: &str, indent: usize, allow_breaks: bool) {
        self.indicator("\"", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || c == '\u{feff}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let esc = match c {
                    '\0' => Some('0'),
                    '\x07' => Some('a'),
                    '\x08' => Some('b'),
                    '\t' => Some('t'),
                    '\n' => Some('n'),
                    '\x0b' => Some('v'),
                    '\x0c' => Some('f'),
                    '\r' => Some('r'),
                    '\x1b' => Some('e'),
                    '"' => Some('"'),
                    '\\' => Some('\\'),
                    '\u{85}' => Some('N'),
                    '\u{a0}' => Some('_'),
                    '\u{2028}' => Some('L'),
                    '\u{2029}' => Some('P'),
                    _ => None,
                };
                match esc {
                    Some(e) => self.put(e),
                    None => {
                        let v = c as u32;
                        let text = if v <= 0xff {
                            format!("x{v:02X}")
                        } else if v <= 0xffff {
                            format!("u{v:04X}")
                        } else {
                            format!("U{v:08X}")
                        };
                        for t in text.chars() {
                            self.put(t);
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
                    self.write_indent(indent);
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.indicator("\"", false, false, false);
    }

    fn write_literal(&mut self, s: &str, indent: usize) {
        self.indicator("|", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.indicator("2", false, false, false);
        }
        let chomp = match chars.len() {
            0 => Some("-"),
            n if !is_break(chars[n - 1]) => Some("-"),
            1 => Some("+"),
            n if is_break(chars[n - 2]) => Some("+"),
            _ => None,
        };
        if let Some(c) = chomp {
            self.indicator(c, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in &chars {
            if is_break(c) {
                self.put_break();
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent(indent);
                    breaks = false;
                }
                self.put(c);
                self.indention = false;
            }
        }
    }
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_printable(c: char) -> bool {
    let v = c as u32;
    v == 0x0a
        || (0x20..=0x7e).contains(&v)
        || (0xa0..=0xd7ff).contains(&v)
        || ((0xe000..=0xfffd).contains(&v) && v != 0xfeff)
}

struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// libyaml's `yaml_emitter_analyze_scalar`, block context.
fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut block_ind = s.starts_with("---") || s.starts_with("...");
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break, mut previous_space, mut previous_break) =
        (false, false, false, false);
    let (mut line_breaks, mut special) = (false, false);
    let mut preceded_by_ws = true;
    let blankz = |i: usize| -> bool {
        i >= chars.len() || chars[i] == ' ' || chars[i] == '\t' || is_break(chars[i])
    };
    for i in 0..chars.len() {
        let c = chars[i];
        let followed_by_ws = blankz(i + 1);
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_ind = true,
                '?' | ':' | '-' if followed_by_ws => block_ind = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_ws => block_ind = true,
                '#' if preceded_by_ws => block_ind = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + 1 == chars.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + 1 == chars.len() {
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
        preceded_by_ws = blankz(i);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
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
    if line_breaks || block_ind {
        a.block_plain_allowed = false;
    }
    a
}

/// Whether go-yaml v2 would read `s` back as a string when written plain.
fn resolves_to_str(s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    const SPECIAL: &[&str] = &[
        "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
        "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
        ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
        ".NaN", ".NAN", "<<",
    ];
    if SPECIAL.contains(&s) {
        return false;
    }
    let first = s.as_bytes()[0];
    if !(first.is_ascii_digit() || first == b'+' || first == b'-' || first == b'.') {
        return true;
    }
    if first.is_ascii_digit() && is_timestamp(s) {
        return false;
    }
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    if go_parse_int(&plain) || is_yaml_float(&plain) {
        return false;
    }
    if let Some(rest) = plain
        .strip_prefix("0b")
        .or_else(|| plain.strip_prefix("-0b"))
        && !rest.is_empty()
        && rest.bytes().all(|b| b == b'0' || b == b'1')
    {
        return false;
    }
    // go-yaml v2 also treats base-60 floats (`1:20`) as non-strings when encoding.
    !is_base60_float(s)
}

fn go_parse_int(s: &str) -> bool {
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    if t.is_empty() {
        return false;
    }
    let (digits, radix) = if let Some(r) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (r, 16)
    } else if let Some(r) = t.strip_prefix("0o").or_else(|| t.strip_prefix("0O")) {
        (r, 8)
    } else if let Some(r) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        (r, 2)
    } else if t.len() > 1 && t.starts_with('0') {
        (&t[1..], 8)
    } else {
        (t, 10)
    };
    !digits.is_empty() && u128::from_str_radix(digits, radix).is_ok_and(|v| v <= u64::MAX as u128)
}

fn is_yaml_float(s: &str) -> bool {
    // ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - s
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

fn is_base60_float(s: &str) -> bool {
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (main, _frac) = match t.split_once('.') {
        Some((m, f)) if f.bytes().all(|b| b.is_ascii_digit() || b == b'_') => (m, Some(f)),
        Some(_) => return false,
        None => (t, None),
    };
    let mut parts = main.split(':');
    let head = parts.next().unwrap_or("");
    if head.is_empty()
        || !head.as_bytes()[0].is_ascii_digit()
        || !head.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return false;
    }
    let mut n = 0;
    for p in parts {
        n += 1;
        let b = p.as_bytes();
        let ok = match b.len() {
            1 => b[0].is_ascii_digit(),
            2 => (b'0'..=b'5').contains(&b[0]) && b[1].is_ascii_digit(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    n > 0
}

/// go-yaml v2 timestamp detection: `YYYY-M-D` optionally followed by a time.
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

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`.
fn go_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".to_owned()
        } else {
            "-.inf".to_owned()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".to_owned()
        } else {
            "0".to_owned()
        };
    }
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..21).contains(&exp) || exp >= 21 {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_is_go_yaml_v2() {
        let mut k = vec!["b", "a10", "a9", "_x", "A", "a"];
        k.sort_by(|a, b| key_cmp(a, b));
        assert_eq!(k, vec!["_x", "A", "a", "a9", "a10", "b"]);
    }

    #[test]
    fn scalars_quote_like_go_yaml() {
        let v: Value = serde_json::json!({"a": "true", "b": "2021-02-21T00:00:00Z", "c": "", "d": "- x", "e": "1.2.3", "f": "x: y", "g": "it's", "h": "tab\there", "i": "a\nb\n"});
        assert_eq!(
            to_yaml(&v),
            "a: \"true\"\nb: \"2021-02-21T00:00:00Z\"\nc: \"\"\nd: '- x'\ne: 1.2.3\nf: 'x: y'\ng: it's\nh: \"tab\\there\"\ni: |\n  a\n  b\n"
        );
    }

    #[test]
    fn folds_long_plain_scalars_at_80() {
        let v: Value = serde_json::json!({"description": "Suspend your pods when no-one's using them to save energy and restore when necessary"});
        assert_eq!(
            to_yaml(&v),
            "description: Suspend your pods when no-one's using them to save energy and restore\n  when necessary\n"
        );
    }
}
