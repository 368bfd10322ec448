//! Reproductions of the few Go standard-library behaviours whose output reaches users through the
//! semver libraries OLM uses: `%q` quoting, `strconv` error texts and Go's whitespace classes.

pub(crate) use olm_goenc::quote;

/// The error Go's `strconv.ParseUint(s, 10, 64)` returns for `s`, or the value.
pub(crate) fn parse_uint(s: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            quote(s)
        ));
    }
    s.parse::<u64>().map_err(|_| {
        format!(
            "strconv.ParseUint: parsing {}: value out of range",
            quote(s)
        )
    })
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits fitting a 64-bit int.
pub(crate) fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

/// `\s` of Go's RE2 syntax: ASCII space, tab, newline, form feed and carriage return (not `\v`).
pub(crate) fn is_re2_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\x0c' | b'\r')
}

/// Whether every character of `s` is in `set` (Go's `containsOnly`; true for the empty string).
pub(crate) fn contains_only(s: &str, set: fn(char) -> bool) -> bool {
    s.chars().all(set)
}

/// Semver identifier characters: ASCII letters, digits and `-`.
pub(crate) fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_uint_errors() {
        assert_eq!(
            parse_uint(""),
            Err(r#"strconv.ParseUint: parsing "": invalid syntax"#.into())
        );
        assert_eq!(
            parse_uint("18446744073709551616"),
            Err(r#"strconv.ParseUint: parsing "18446744073709551616": value out of range"#.into())
        );
        assert_eq!(parse_uint("42"), Ok(42));
    }

    #[test]
    fn atoi_accepts_signs() {
        assert_eq!(atoi("-1"), Some(-1));
        assert_eq!(atoi("+7"), Some(7));
        assert_eq!(atoi("x"), None);
        assert_eq!(atoi("-"), None);
    }
}
