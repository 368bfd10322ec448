//! `pattern`: Go's RE2 syntax, checked as Go's `regexp/syntax` parser checks it (so an invalid
//! pattern fails with Go's words) and rewritten for the regex crate where the two differ.

use std::iter::Peekable;
use std::str::CharIndices;

/// The compiled-program budget of one pattern, so a hostile pattern cannot take unbounded memory.
const SIZE_LIMIT: usize = 1 << 20;

/// A compiled `pattern`: in Unicode mode when it compiles there, otherwise byte-wise with
/// ASCII-only semantics, or Go's reason it does not compile.
pub(super) enum Pattern {
    Unicode(regex::Regex),
    Ascii(regex::bytes::Regex),
    Invalid(String),
}

impl Pattern {
    /// Compiles a Go pattern. Go's `\d`, `\w`, `\s` and `\b` are ASCII-only, so they are rewritten
    /// before compiling in Unicode mode. Patterns that need Unicode tables this build lacks
    /// (`(?i)`, `\pL`) fall back to byte-wise ASCII matching, exact for ASCII text.
    pub(super) fn compile(pattern: &str) -> Pattern {
        let translated = match translate(pattern) {
            Ok(t) => t,
            Err(why) => return Pattern::Invalid(format!("error parsing regexp: {why}")),
        };
        match regex::RegexBuilder::new(&translated)
            .size_limit(SIZE_LIMIT)
            .build()
        {
            Ok(re) => Pattern::Unicode(re),
            Err(_) => Pattern::ascii(pattern, &translated),
        }
    }

    /// The byte-wise ASCII fallback of [`Pattern::compile`] for a translated pattern.
    pub(super) fn ascii(pattern: &str, translated: &str) -> Pattern {
        let ascii = regex::bytes::RegexBuilder::new(translated)
            .unicode(false)
            .size_limit(SIZE_LIMIT)
            .build();
        match ascii {
            Ok(re) => Pattern::Ascii(re),
            // Valid Go syntax we cannot run (a Unicode script class, say): upstream would check
            // it, we can only say so.
            Err(_) => Pattern::Invalid(format!(
                "error parsing regexp: unsupported by this implementation: `{pattern}`"
            )),
        }
    }

    /// `Ok(matched)`, or `Err(why)` when the pattern does not compile.
    pub(super) fn is_match(&self, text: &str) -> Result<bool, &str> {
        match self {
            Pattern::Unicode(re) => Ok(re.is_match(text)),
            Pattern::Ascii(re) => Ok(re.is_match(text.as_bytes())),
            Pattern::Invalid(why) => Err(why),
        }
    }
}

type Chars<'p> = Peekable<CharIndices<'p>>;

/// Rewrites a Go pattern for the regex crate, or returns Go's error text (`missing closing ]:
/// `[a``). Go's parse errors are found in Go's order; what Go accepts and Rust spells
/// differently is rewritten: ASCII `\d \w \s \b`, octal escapes, `\Q…\E`, literal `{`, `[`, `&`,
/// `~` and `<`/`>` escapes.
pub(super) fn translate(p: &str) -> Result<String, String> {
    let mut out = String::with_capacity(p.len() + 16);
    let mut it = p.char_indices().peekable();
    let mut depth = 0usize;
    // Whether a repetition has something to repeat (not at the start, after `(` or `|`).
    let mut operand = false;
    // Where the previous token began when it was a repetition: Go refuses `a**`.
    let mut last_repeat: Option<usize> = None;
    // A flags-only group, `(?i)`, written after any repetition that follows it: Go applies that
    // repetition to what came before the flags, Rust refuses it.
    let mut flags = String::new();
    while let Some((i, c)) = it.next() {
        let mut repeat = None;
        if !matches!(c, '*' | '+' | '?' | '{') {
            out.push_str(&std::mem::take(&mut flags));
        }
        match c {
            '\\' => {
                out.push_str(&escape(p, i, &mut it, At::Top)?);
                operand = true;
            }
            '[' => {
                class(p, i, &mut it, &mut out)?;
                operand = true;
            }
            '(' => {
                let opens = if it.peek().is_some_and(|(_, c)| *c == '?') {
                    let (text, opens, end) = perl_group(p, i)?;
                    if opens {
                        out.push_str(&text);
                    } else {
                        flags.push_str(&text);
                    }
                    while it.peek().is_some_and(|(k, _)| *k < end) {
                        it.next();
                    }
                    opens
                } else {
                    out.push('(');
                    true
                };
                if opens {
                    depth += 1;
                    operand = false;
                }
            }
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("unexpected ): `{p}`"))?;
                out.push(')');
                operand = true;
            }
            '|' => {
                out.push('|');
                operand = false;
            }
            '*' | '+' | '?' | '{' => {
                let end = if c == '{' {
                    match repeat_end(p, i) {
                        Some(Ok(end)) => end,
                        Some(Err(end)) => {
                            return Err(format!("invalid repeat count: `{}`", &p[i..end]));
                        }
                        None => {
                            out.push_str(&std::mem::take(&mut flags));
                            out.push_str("\\{");
                            operand = true;
                            last_repeat = None;
                            continue;
                        }
                    }
                } else {
                    i + 1
                };
                while it.peek().is_some_and(|(j, _)| *j < end) {
                    it.next();
                }
                let end = match it.peek() {
                    Some((j, '?')) => {
                        let j = *j;
                        it.next();
                        j + 1
                    }
                    _ => end,
                };
                if let Some(start) = last_repeat {
                    return Err(format!(
                        "invalid nested repetition operator: `{}`",
                        &p[start..end]
                    ));
                }
                if !operand {
                    return Err(format!(
                        "missing argument to repetition operator: `{}`",
                        &p[i..end]
                    ));
                }
                out.push_str(&p[i..end]);
                repeat = Some(i);
            }
            '}' | ']' => {
                out.push('\\');
                out.push(c);
                operand = true;
            }
            c => {
                out.push(c);
                operand = true;
            }
        }
        last_repeat = repeat;
    }
    if depth > 0 {
        return Err(format!("missing closing ): `{p}`"));
    }
    out.push_str(&flags);
    Ok(out)
}

/// Go's `parsePerlFlags` at `p[i..]` starting `(?`: the text to write, whether it opens a group
/// (flags alone, `(?i)`, do not), and where it ends. Names are dropped: Go allows a name twice.
fn perl_group(p: &str, i: usize) -> Result<(String, bool, usize), String> {
    let rest = &p[i..];
    let named = if rest.len() > 4 && rest[2..].starts_with("P<") {
        Some(4)
    } else if rest.len() > 3 && rest[2..].starts_with('<') {
        Some(3)
    } else {
        None
    };
    if let Some(begin) = named {
        let end = rest
            .find('>')
            .ok_or_else(|| format!("invalid named capture: `{rest}`"))?;
        let name = &rest[begin..end];
        if name.is_empty() || !name.bytes().all(|c| c == b'_' || c.is_ascii_alphanumeric()) {
            return Err(format!("invalid named capture: `{}`", &rest[..=end]));
        }
        return Ok(("(".to_owned(), true, i + end + 1));
    }
    let (mut negated, mut saw_flag) = (false, false);
    for (j, c) in rest.char_indices().skip(2) {
        match c {
            'i' | 'm' | 's' | 'U' => saw_flag = true,
            '-' if !negated => (negated, saw_flag) = (true, false),
            ':' | ')' if !negated || saw_flag => {
                let text = match (&rest[2..j], c) {
                    ("", ')') => String::new(),
                    _ => rest[..=j].to_owned(),
                };
                return Ok((text, c == ':', i + j + 1));
            }
            _ => {
                let end = j + c.len_utf8();
                return Err(format!(
                    "invalid or unsupported Perl syntax: `{}`",
                    &rest[..end]
                ));
            }
        }
    }
    Err(format!("invalid or unsupported Perl syntax: `{rest}`"))
}

/// Go's `parseRepeat` at `p[i] == '{'`: `None` when it is a literal brace, else the end of
/// `{n}`, `{n,}` or `{n,m}`, `Err` when the counts are out of Go's range.
fn repeat_end(p: &str, i: usize) -> Option<Result<usize, usize>> {
    let b = p.as_bytes();
    let int = |j: usize| -> Option<(i64, usize)> {
        let n = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 || (n >= 2 && b[j] == b'0') {
            return None;
        }
        let v = p[j..j + n]
            .parse::<i64>()
            .unwrap_or(i64::MAX)
            .min(100_000_000);
        Some((v, j + n))
    };
    let (min, mut j) = int(i + 1)?;
    let max = match b.get(j)? {
        b',' if b.get(j + 1)? == &b'}' => {
            j += 1;
            -1
        }
        b',' => {
            let (max, k) = int(j + 1)?;
            j = k;
            max
        }
        _ => min,
    };
    if b.get(j)? != &b'}' {
        return None;
    }
    let end = j + 1;
    let bad = min > 1000 || max > 1000 || (max >= 0 && min > max);
    Some(if bad { Err(end) } else { Ok(end) })
}

/// Where an escape stands: Go accepts fewer inside classes, and fewer still at a range's end.
#[derive(Clone, Copy, PartialEq)]
enum At {
    Top,
    Class,
    RangeEnd,
}

/// An escape after `p[i] == '\\'`, as Go's parser accepts it, in the regex crate's spelling.
fn escape(p: &str, i: usize, it: &mut Chars<'_>, at: At) -> Result<String, String> {
    let Some((_, e)) = it.next() else {
        return Err("trailing backslash at end of expression: ``".to_owned());
    };
    let invalid = |end: usize| format!("invalid escape sequence: `{}`", &p[i..end.min(p.len())]);
    let here = i + 1 + e.len_utf8();
    let class_escape = matches!(e, 'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'p' | 'P');
    if at == At::RangeEnd && class_escape {
        return Err(invalid(here));
    }
    let in_class = at != At::Top;
    Ok(match e {
        'd' => "[0-9]".into(),
        'D' => "[^0-9]".into(),
        'w' => "[0-9A-Za-z_]".into(),
        'W' => "[^0-9A-Za-z_]".into(),
        's' => "[\\t\\n\\f\\r ]".into(),
        'S' => "[^\\t\\n\\f\\r ]".into(),
        'b' | 'B' if !in_class => format!("(?-u:\\{e})"),
        'A' | 'z' if !in_class => format!("\\{e}"),
        'a' | 'f' | 'n' | 'r' | 't' | 'v' => format!("\\{e}"),
        'p' | 'P' => {
            let mut s = format!("\\{e}");
            match it.next() {
                Some((_, '{')) => {
                    s.push('{');
                    for (_, c) in it.by_ref() {
                        s.push(c);
                        if c == '}' {
                            break;
                        }
                    }
                }
                Some((_, c)) => s.push(c),
                None => return Err(format!("invalid character class range: `{}`", &p[i..])),
            }
            s
        }
        'Q' if !in_class => {
            let mut lit = String::new();
            while let Some((_, q)) = it.next() {
                if q == '\\' && it.peek().is_some_and(|(_, c)| *c == 'E') {
                    it.next();
                    break;
                }
                lit.push(q);
            }
            regex::escape(&lit)
        }
        '0'..='7' => {
            // Go: `\0` and two- or three-digit octal; a lone `\1`…`\7` is a backreference.
            let octal = |c: &(usize, char)| ('0'..='7').contains(&c.1);
            if e != '0' && !it.peek().is_some_and(octal) {
                return Err(invalid(here));
            }
            let mut v = e.to_digit(8).unwrap_or(0);
            for _ in 0..2 {
                match it.next_if(octal) {
                    Some((_, d)) => v = v * 8 + d.to_digit(8).unwrap_or(0),
                    None => break,
                }
            }
            format!("\\x{{{v:x}}}")
        }
        'x' => {
            let mut end = here;
            let v = match take(it, &mut end) {
                Some('{') => {
                    let mut v = 0u32;
                    let mut n = 0;
                    loop {
                        match take(it, &mut end) {
                            Some('}') if n > 0 => break Some(v),
                            Some(c) => match c.to_digit(16) {
                                Some(d) if v * 16 + d <= 0x10_FFFF => (v, n) = (v * 16 + d, n + 1),
                                _ => break None,
                            },
                            None => break None,
                        }
                    }
                }
                Some(c) => {
                    let lo = take(it, &mut end).and_then(|d| d.to_digit(16));
                    c.to_digit(16).zip(lo).map(|(a, b)| a * 16 + b)
                }
                None => None,
            };
            match v {
                Some(v) => format!("\\x{{{v:x}}}"),
                None => return Err(invalid(end)),
            }
        }
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => regex::escape(&c.to_string()),
        _ => return Err(invalid(here)),
    })
}

/// The next character, moving `end` past it.
fn take(it: &mut Chars<'_>, end: &mut usize) -> Option<char> {
    let (j, c) = it.next()?;
    *end = j + c.len_utf8();
    Some(c)
}

/// A bracketed class starting at `p[i] == '['`, checked and written as Go reads it: `]` first is
/// literal, `[` inside is literal unless it opens `[:name:]`, and ranges must not run backwards.
fn class(p: &str, i: usize, it: &mut Chars<'_>, out: &mut String) -> Result<(), String> {
    const POSIX: [&str; 14] = [
        "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
        "space", "upper", "word", "xdigit",
    ];
    let missing = || format!("missing closing ]: `{}`", &p[i..]);
    out.push('[');
    if it.next_if(|(_, c)| *c == '^').is_some() {
        out.push('^');
    }
    let mut first = true;
    loop {
        let Some((j, c)) = it.next() else {
            return Err(missing());
        };
        if c == ']' && !first {
            out.push(']');
            return Ok(());
        }
        first = false;
        if c == '['
            && p[j..].starts_with("[:")
            && let Some(len) = p[j + 2..].find(":]")
        {
            // A POSIX class such as [:alpha:], which Go and Rust spell alike.
            let end = j + len + 4;
            let name = &p[j + 2..end - 2];
            if !POSIX.contains(&name.strip_prefix('^').unwrap_or(name)) {
                return Err(format!("invalid character class range: `{}`", &p[j..end]));
            }
            out.push_str(&p[j..end]);
            while it.peek().is_some_and(|(k, _)| *k < end) {
                it.next();
            }
            continue;
        }
        // One character (or class escape), then maybe `-` and the end of a range.
        let lo = class_char(p, j, c, it, out, At::Class)?;
        let dash = it.peek().is_some_and(|(_, c)| *c == '-');
        if !dash || lo.is_none() {
            continue;
        }
        let mut ahead = it.clone();
        ahead.next();
        match ahead.peek() {
            None => return Err(missing()),
            Some((_, ']')) => continue,
            Some(_) => {}
        }
        it.next();
        out.push('-');
        let Some((k, h)) = it.next() else {
            return Err(missing());
        };
        let hi = class_char(p, k, h, it, out, At::RangeEnd)?;
        if let (Some(lo), Some(hi)) = (lo, hi)
            && hi < lo
        {
            let end = it.peek().map_or(p.len(), |(e, _)| *e);
            return Err(format!("invalid character class range: `{}`", &p[j..end]));
        }
    }
}

/// Writes one class member; its character when it is a single character (a range endpoint).
fn class_char(
    p: &str,
    j: usize,
    c: char,
    it: &mut Chars<'_>,
    out: &mut String,
    at: At,
) -> Result<Option<char>, String> {
    if c != '\\' {
        if matches!(c, '[' | ']' | '\\' | '^' | '-' | '&' | '~') {
            out.push('\\');
        }
        out.push(c);
        return Ok(Some(c));
    }
    let e = escape(p, j, it, at)?;
    let single = match e.as_bytes() {
        [b'\\', b'x', b'{', ..] => u32::from_str_radix(&e[3..e.len() - 1], 16)
            .ok()
            .and_then(char::from_u32),
        [b'\\', c] => Some(match c {
            b'a' => '\x07',
            b'f' => '\x0c',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'v' => '\x0b',
            c => char::from(*c),
        }),
        _ if e.chars().count() == 1 => e.chars().next(),
        _ => None,
    };
    // A metacharacter regex::escape left bare is still special in a class.
    match single {
        Some(s) if e.len() == 1 && matches!(s, '[' | ']' | '^' | '-' | '&' | '~') => {
            out.push('\\');
            out.push(s);
        }
        _ => out.push_str(&e),
    }
    Ok(single)
}
