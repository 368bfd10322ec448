//! go-yaml v2's resolution of plain scalars (YAML 1.1 as sigs.k8s.io/yaml reads it): the one set of
//! rules every reader of the workspace shares, fast path and full parser alike.

use std::borrow::Cow;

use serde_json::{Number, Value};

/// A resolved scalar: what a plain (unquoted, untagged) scalar means, or a string.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    /// Always finite: `.inf` and `.nan` cannot be represented in JSON and are errors.
    Float(f64),
    Str(Cow<'a, str>),
}

impl<'a> Scalar<'a> {
    pub(crate) fn into_value(self) -> Value {
        match self {
            Scalar::Null => Value::Null,
            Scalar::Bool(b) => Value::Bool(b),
            Scalar::Int(i) => Value::from(i),
            Scalar::Uint(u) => Value::from(u),
            Scalar::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
            Scalar::Str(s) => Value::String(s.into_owned()),
        }
    }

    /// A mapping key as JSON needs it, a string: Go formats the other scalars (`y:` is `"true"`,
    /// `1.0:` is `"1"`, `~:` is `"null"`).
    pub(crate) fn into_key(self) -> Cow<'a, str> {
        match self {
            Scalar::Str(s) => s,
            Scalar::Null => Cow::Borrowed("null"),
            Scalar::Bool(true) => Cow::Borrowed("true"),
            Scalar::Bool(false) => Cow::Borrowed("false"),
            Scalar::Int(i) => Cow::Owned(i.to_string()),
            Scalar::Uint(u) => Cow::Owned(u.to_string()),
            Scalar::Float(f) => Cow::Owned(crate::yaml::go_format_g(f)),
        }
    }
}

/// The meaning of an untagged plain scalar; an error for the values JSON cannot hold.
pub(crate) fn resolve_plain(text: Cow<'_, str>) -> Result<Scalar<'_>, String> {
    let s: &str = &text;
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Scalar::Null),
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Ok(Scalar::Bool(true));
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Ok(Scalar::Bool(false));
        }
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" => return Err(format!("{s} cannot be represented in JSON")),
        _ => {}
    }
    let first = s.as_bytes()[0];
    if !(first.is_ascii_digit() || first == b'+' || first == b'-' || first == b'.') {
        return Ok(Scalar::Str(text));
    }
    // go-yaml drops underscores before trying the number forms (YAML 1.1's `1_000`).
    let plain: Cow<'_, str> = if s.contains('_') {
        Cow::Owned(s.chars().filter(|&c| c != '_').collect())
    } else {
        Cow::Borrowed(s)
    };
    if let Some(n) = go_parse_int(&plain) {
        return Ok(n);
    }
    if crate::yaml::is_yaml_float(&plain)
        && let Ok(f) = plain.parse::<f64>()
        && f.is_finite()
    {
        return Ok(Scalar::Float(f));
    }
    let (neg, rest) = match plain.strip_prefix("-0b") {
        Some(r) => (true, Some(r)),
        None => (false, plain.strip_prefix("0b")),
    };
    if let Some(r) = rest
        && let Ok(u) = i64::from_str_radix(r, 2)
    {
        return Ok(Scalar::Int(if neg { -u } else { u }));
    }
    Ok(Scalar::Str(text))
}

/// Go's `strconv.ParseInt(s, 0, 64)`, then `ParseUint(s, 0, 64)`: the integer forms go-yaml v2
/// accepts (decimal, `0x`, `0o`, `0b`, and a leading `0` for octal).
pub(crate) fn go_parse_int(s: &str) -> Option<Scalar<'static>> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (digits, radix) =
        if let Some(r) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (r, 16)
        } else if let Some(r) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (r, 8)
        } else if let Some(r) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (r, 2)
        } else if body.len() > 1 && body.starts_with('0') {
            (&body[1..], 8)
        } else {
            (body, 10)
        };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let u = u64::from_str_radix(digits, radix).ok()?;
    if neg {
        if u <= i64::MAX as u64 + 1 {
            return Some(Scalar::Int((u as i128).wrapping_neg() as i64));
        }
        return None;
    }
    Some(match i64::try_from(u) {
        Ok(i) => Scalar::Int(i),
        Err(_) => Scalar::Uint(u),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Result<Scalar<'_>, String> {
        resolve_plain(Cow::Borrowed(s))
    }

    /// go-yaml v2's resolve table (resolve.go) and strconv's integer syntax.
    #[test]
    fn yaml_1_1_resolution() {
        assert_eq!(r("0777"), Ok(Scalar::Int(511)));
        assert_eq!(r("0x1F"), Ok(Scalar::Int(31)));
        assert_eq!(r("0o17"), Ok(Scalar::Int(15)));
        assert_eq!(r("-0b11"), Ok(Scalar::Int(-3)));
        assert_eq!(r("1_000"), Ok(Scalar::Int(1000)));
        assert_eq!(r("012"), Ok(Scalar::Int(10)));
        // Not octal, but go-yaml's float pattern matches it.
        assert_eq!(r("09"), Ok(Scalar::Float(9.0)));
        assert_eq!(r("18446744073709551615"), Ok(Scalar::Uint(u64::MAX)));
        assert_eq!(r("-9223372036854775808"), Ok(Scalar::Int(i64::MIN)));
        assert_eq!(r("1e3"), Ok(Scalar::Float(1000.0)));
        assert_eq!(r("1.5"), Ok(Scalar::Float(1.5)));
        assert_eq!(r("1.2.3"), Ok(Scalar::Str(Cow::Borrowed("1.2.3"))));
        assert_eq!(
            r("2022-01-01"),
            Ok(Scalar::Str(Cow::Borrowed("2022-01-01")))
        );
        assert_eq!(r("Off"), Ok(Scalar::Bool(false)));
        assert_eq!(r("y"), Ok(Scalar::Bool(true)));
        assert_eq!(r("~"), Ok(Scalar::Null));
        assert!(
            r(".inf")
                .unwrap_err()
                .contains("cannot be represented in JSON")
        );
        assert!(r("-.Inf").is_err());
        assert!(r(".NaN").is_err());
    }

    #[test]
    fn keys_are_formatted_like_go() {
        assert_eq!(r("y").unwrap().into_key(), "true");
        assert_eq!(r("1.0").unwrap().into_key(), "1");
        assert_eq!(r("~").unwrap().into_key(), "null");
        assert_eq!(r("0x10").unwrap().into_key(), "16");
        assert_eq!(r("name").unwrap().into_key(), "name");
    }
}
