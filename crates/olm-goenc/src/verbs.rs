//! Go's `fmt` verbs as upstream messages use them: `%q` of a string and `%v` of a slice.

use std::fmt::{Display, Write};

use crate::isprint::PRINTABLE;

/// Quotes `s` the way Go's `%q` verb (`strconv.Quote`) does, so error texts match upstream byte
/// for byte.
///
/// Go keeps the runes `strconv.IsPrint` accepts (letters, marks, numbers, punctuation, symbols and
/// the ASCII space) and escapes the rest: `\a`, `\b`, `\f`, `\n`, `\r`, `\t`, `\v` by name, other
/// ASCII controls and DEL as `\xNN`, everything else as `\uNNNN` or `\UNNNNNNNN` — so C1 controls,
/// non-ASCII spaces, format characters (U+200B, U+FEFF), private-use and unassigned code points are
/// escaped, while U+FFFD stays as it is. Invalid UTF-8, which Go writes as `\xNN`, cannot occur
/// in a `&str`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(c),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            '\0'..='\x1f' | '\x7f' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_print(c) => out.push(c),
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.IsPrint` for runes at or above U+0080.
fn is_print(c: char) -> bool {
    let c = c as u32;
    PRINTABLE
        .binary_search_by(|&(first, last)| {
            if last < c {
                std::cmp::Ordering::Less
            } else if first > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Formats items the way Go's `%v` prints a slice: `[a b c]`, each item in its plain form.
pub fn slice<I>(items: I) -> String
where
    I: IntoIterator,
    I::Item: Display,
{
    let mut out = String::from("[");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{item}");
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every expectation is what Go 1.26's `fmt.Sprintf("%q", s)` printed for the input.
    #[test]
    fn quote_matches_go() {
        let cases = [
            ("a\"b\\c\td", r#""a\"b\\c\td""#),
            ("\x01\x7f", r#""\x01\x7f""#),
            ("\x07\x08\x0c\n\r\x0b", r#""\a\b\f\n\r\v""#),
            ("ü", "\"ü\""),
            ("日本", "\"日本\""),
            (" ", "\" \""),
            ("\u{85}", r#""\u0085""#),
            ("\u{a0}", r#""\u00a0""#),
            ("\u{ad}", r#""\u00ad""#),
            ("\u{200b}", r#""\u200b""#),
            ("\u{2028}", r#""\u2028""#),
            ("\u{2029}", r#""\u2029""#),
            ("\u{feff}", r#""\ufeff""#),
            ("\u{3000}", r#""\u3000""#),
            ("\u{61c}", r#""\u061c""#),
            ("\u{378}", r#""\u0378""#),
            ("\u{e000}", r#""\ue000""#),
            ("\u{fffd}", "\"\u{fffd}\""),
            ("\u{1f600}", "\"\u{1f600}\""),
            ("\u{e0001}", r#""\U000e0001""#),
            ("\u{1d173}", r#""\U0001d173""#),
            ("\u{10ffff}", r#""\U0010ffff""#),
        ];
        for (input, want) in cases {
            assert_eq!(quote(input), want, "{input:?}");
        }
    }

    #[test]
    fn printable_table_is_sorted_and_disjoint() {
        assert!(PRINTABLE.iter().all(|&(a, b)| a <= b && a >= 0x80));
        assert!(PRINTABLE.windows(2).all(|w| w[0].1 + 1 < w[1].0));
    }

    #[test]
    fn slices_print_like_go() {
        assert_eq!(slice(["Name", "name"]), "[Name name]");
        assert_eq!(slice(Vec::<String>::new()), "[]");
        assert_eq!(slice([1, 2, 3]), "[1 2 3]");
    }
}
