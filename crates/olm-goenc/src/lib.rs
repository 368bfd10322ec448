//! Text formats exactly as the Go tools write them, for the places where users and tools compare
//! our output with upstream's byte for byte: Go's `%q` quoting (every upstream error message
//! quotes names with it) and sigs.k8s.io/yaml's YAML.
//!
//! Not for: parsing; each crate reads its inputs with the reader that fits its speed needs.

use std::fmt::Write;

pub mod json;
pub mod yaml;

/// Quotes `s` the way Go's `%q` verb does, so error texts match upstream byte for byte.
///
/// Go keeps printable runes and escapes the rest; Rust has no table of Unicode's printable
/// categories, so "printable" here means "not a control character" — identical for every input
/// made of ASCII and ordinary letters, which is what version strings are.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x80 && c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || (c.is_whitespace() && c != ' ') => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_matches_go() {
        assert_eq!(quote("a\"b\\c\td"), r#""a\"b\\c\td""#);
        assert_eq!(quote("\x01\x7f"), r#""\x01\x7f""#);
        assert_eq!(quote("ü"), "\"ü\"");
        assert_eq!(quote("\u{85}"), r#""\u0085""#);
    }
}
