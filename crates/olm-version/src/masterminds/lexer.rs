//! The grammar of a Masterminds constraint string, read by hand rather than by regular
//! expression: `OP? VERSION` comparators separated by whitespace or commas, where VERSION may
//! carry wildcards (`x`, `X`, `*`) in any numeric part.

use crate::go::is_re2_space;

/// One version as written inside a constraint, with byte ranges into the constraint text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawVersion<'a> {
    /// The whole version text, `v` prefix and build metadata included.
    pub text: &'a str,
    pub major: &'a str,
    pub minor: Option<&'a str>,
    pub patch: Option<&'a str>,
    /// The prerelease including its leading `-`, or "".
    pub dash_pre: &'a str,
}

/// Characters Masterminds accepts in a constraint's numeric part. The `|` is there because the
/// upstream pattern's character class contains it; such parts are refused later, when the
/// version is built, exactly as upstream does.
fn is_num_char(c: u8) -> bool {
    c.is_ascii_digit() || matches!(c, b'x' | b'X' | b'*' | b'|')
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

fn run(b: &[u8], from: usize, pred: fn(u8) -> bool) -> usize {
    b.get(from..)
        .map_or(0, |rest| rest.iter().take_while(|c| pred(**c)).count())
}

/// Length of `IDENT(.IDENT)*` at `from`, 0 when absent.
fn ident_list(b: &[u8], from: usize) -> usize {
    let mut i = from;
    let n = run(b, i, is_ident);
    if n == 0 {
        return 0;
    }
    i += n;
    while b.get(i) == Some(&b'.') && run(b, i + 1, is_ident) > 0 {
        i += 1 + run(b, i + 1, is_ident);
    }
    i - from
}

/// Reads the longest version at byte `at` of `s`; None when no version starts there.
pub(crate) fn version_at(s: &str, at: usize) -> Option<(RawVersion<'_>, usize)> {
    let b = s.as_bytes();
    let mut i = at;
    if b.get(i) == Some(&b'v') {
        i += 1;
    }
    let n = run(b, i, is_num_char);
    if n == 0 {
        return None;
    }
    let major = &s[i..i + n];
    i += n;
    let mut parts = [None, None];
    for slot in &mut parts {
        if b.get(i) == Some(&b'.') {
            let n = run(b, i + 1, is_num_char);
            if n > 0 {
                *slot = Some(&s[i + 1..i + 1 + n]);
                i += 1 + n;
                continue;
            }
        }
        break;
    }
    let mut dash_pre = "";
    if b.get(i) == Some(&b'-') {
        let n = ident_list(b, i + 1);
        if n > 0 {
            dash_pre = &s[i..i + 1 + n];
            i += 1 + n;
        }
    }
    if b.get(i) == Some(&b'+') {
        let n = ident_list(b, i + 1);
        if n > 0 {
            i += 1 + n;
        }
    }
    let raw = RawVersion {
        text: &s[at..i],
        major,
        minor: parts[0],
        patch: parts[1],
        dash_pre,
    };
    Some((raw, i))
}

/// Operator characters; a version never starts with one, so an operator is the whole run of them.
fn is_op_char(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'>' | b'<' | b'~' | b'^')
}

/// The operators Masterminds knows, the empty one included.
pub(crate) const OPERATORS: [&str; 12] = [
    "", "=", "!=", ">", "<", ">=", "=>", "<=", "=<", "~", "~>", "^",
];

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| is_re2_space(*c)) {
        i += 1;
    }
    i
}

/// One comparator as written: its operator text and its version.
pub(crate) struct RawComparator<'a> {
    pub op: &'a str,
    pub version: RawVersion<'a>,
}

/// Splits one AND-group (no `||` inside) into comparators, or None when the group does not follow
/// the grammar (Masterminds then reports `improper constraint`).
pub(crate) fn and_group(s: &str) -> Option<Vec<RawComparator<'_>>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = skip_space(b, 0);
    loop {
        let op_len = run(b, i, is_op_char);
        let op = &s[i..i + op_len];
        if !OPERATORS.contains(&op) {
            return None;
        }
        i = skip_space(b, i + op_len);
        let (version, end) = version_at(s, i)?;
        out.push(RawComparator { op, version });
        let after = skip_space(b, end);
        if after == b.len() {
            return Some(out);
        }
        if b[after] == b',' {
            i = skip_space(b, after + 1);
        } else if after > end {
            i = after;
        } else {
            return None;
        }
    }
}

/// Rewrites hyphen ranges (`A - B`, spaces required) into `>= A, <= B `, scanning and replacing
/// exactly as Masterminds does — including its habit of replacing the first occurrence of each
/// matched text, which is not always the place where it matched.
pub(crate) fn rewrite_hyphen_ranges(s: &str) -> std::borrow::Cow<'_, str> {
    let b = s.as_bytes();
    let mut found: Vec<(&str, &str, &str)> = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        match hyphen_range_at(s, pos) {
            Some((end, lo, hi)) => {
                found.push((&s[pos..end], lo, hi));
                pos = end;
            }
            None => pos += 1,
        }
    }
    if found.is_empty() {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = s.to_owned();
    for (text, lo, hi) in found {
        out = out.replacen(text, &format!(">= {lo}, <= {hi} "), 1);
    }
    std::borrow::Cow::Owned(out)
}

/// Matches `\s*VERSION\s+-\s+VERSION\s*` at byte `at`: (end, low, high).
fn hyphen_range_at(s: &str, at: usize) -> Option<(usize, &str, &str)> {
    let b = s.as_bytes();
    let i = skip_space(b, at);
    let (lo, end) = version_at(s, i)?;
    let dash = skip_space(b, end);
    if dash == end || b.get(dash) != Some(&b'-') {
        return None;
    }
    let j = skip_space(b, dash + 1);
    if j == dash + 1 {
        return None;
    }
    let (hi, end) = version_at(s, j)?;
    Some((skip_space(b, end), lo.text, hi.text))
}
