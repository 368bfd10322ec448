//! Go's `time.ParseDuration`: the syntax of every duration flag upstream's binaries take
//! (`--gc-interval=12h`), with its limits and its error texts.

use std::fmt;

/// A Go `time.Duration`: signed nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(i64);

impl Duration {
    /// The duration in nanoseconds, as Go stores it.
    pub fn as_nanos(self) -> i64 {
        self.0
    }

    /// The same span as a [`std::time::Duration`]; `None` when negative, which no timer takes.
    pub fn to_std(self) -> Option<std::time::Duration> {
        u64::try_from(self.0)
            .ok()
            .map(std::time::Duration::from_nanos)
    }
}

/// Why a duration did not parse, displayed as Go words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not the duration syntax, or beyond ±2^63-1 ns (`time: invalid duration "…"`).
    #[error("time: invalid duration {}", time_quote(.input))]
    Invalid {
        /// The whole input.
        input: String,
    },
    /// A number without a unit (`time: missing unit in duration "12"`).
    #[error("time: missing unit in duration {}", time_quote(.input))]
    MissingUnit {
        /// The whole input.
        input: String,
    },
    /// A unit other than ns, us, µs, μs, ms, s, m and h.
    #[error("time: unknown unit {} in duration {}", time_quote(.unit), time_quote(.input))]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole input.
        input: String,
    },
}

/// Parses a duration as Go's `time.ParseDuration` does: an optional sign, then one or more
/// decimal numbers (with an optional fraction) each followed by a unit, e.g. `1h30m`, `-1.5s`,
/// `300ms`; a lone `0` needs no unit. No spaces are allowed anywhere.
///
/// # Errors
///
/// Go's texts, e.g. `time: invalid duration "99999999999999999999999h"` for a number that
/// overflows 64 bits: Go refuses it rather than wrapping or saturating.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid {
        input: input.to_owned(),
    };
    let (neg, mut s) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    if s == "0" {
        return Ok(Duration(0));
    }
    if s.is_empty() {
        return Err(invalid());
    }
    const LIMIT: u64 = 1 << 63;
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s.starts_with('.') || s.as_bytes()[0].is_ascii_digit()) {
            return Err(invalid());
        }
        let int_len = digits(s);
        let whole = leading_int(&s[..int_len]).ok_or_else(invalid)?;
        s = &s[int_len..];
        let mut frac_len = 0;
        let (mut frac, mut scale) = (0u64, 1f64);
        if let Some(rest) = s.strip_prefix('.') {
            frac_len = digits(rest);
            (frac, scale) = leading_fraction(&rest[..frac_len]);
            s = &rest[frac_len..];
        }
        if int_len == 0 && frac_len == 0 {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .position(|c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit {
                input: input.to_owned(),
            });
        }
        let (unit, rest) = s.split_at(unit_len);
        s = rest;
        let nanos_per: u64 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3600 * 1_000_000_000,
            _ => {
                return Err(DurationError::UnknownUnit {
                    unit: unit.to_owned(),
                    input: input.to_owned(),
                });
            }
        };
        if whole > LIMIT / nanos_per {
            return Err(invalid());
        }
        let mut v = whole * nanos_per;
        if frac > 0 {
            // As Go does: a float64 is exact to the nanosecond for fractions of the largest unit.
            v += (frac as f64 * (nanos_per as f64 / scale)) as u64;
            if v > LIMIT {
                return Err(invalid());
            }
        }
        total += v;
        if total > LIMIT {
            return Err(invalid());
        }
    }
    if neg {
        // total ≤ 2^63, so the negation fits (−2^63 is i64::MIN).
        return Ok(Duration(0i64.wrapping_sub_unsigned(total)));
    }
    i64::try_from(total).map(Duration).map_err(|_| invalid())
}

/// Length of the leading run of ASCII digits.
fn digits(s: &str) -> usize {
    s.bytes().take_while(u8::is_ascii_digit).count()
}

/// The value of a run of digits; `None` once it passes 2^63 (Go gives up there).
fn leading_int(digits: &str) -> Option<u64> {
    digits.bytes().try_fold(0u64, |x, c| {
        let x = x.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        (x <= 1 << 63).then_some(x)
    })
}

/// A fraction's digits as `value / scale`; digits past 63 bits are dropped, not an error.
fn leading_fraction(digits: &str) -> (u64, f64) {
    let (mut x, mut scale) = (0u64, 1f64);
    for c in digits.bytes() {
        match x.checked_mul(10).map(|y| y + u64::from(c - b'0')) {
            Some(y) if y <= 1 << 63 => {
                x = y;
                scale *= 10.0;
            }
            _ => break,
        }
    }
    (x, scale)
}

/// The `time` package's own quoting (not `strconv.Quote`): `"` and `\` escaped, every byte of a
/// control character or of a non-ASCII rune as `\xNN`, DEL kept as it is.
fn time_quote(s: &str) -> String {
    use fmt::Write;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='\x7f' => out.push(c),
            _ => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row is what Go 1.26's `time.ParseDuration` returned for the input: nanoseconds or
    /// the error text.
    #[test]
    fn parses_like_go() {
        let cases: &[(&str, Result<i64, &str>)] = &[
            ("12h", Ok(43200000000000)),
            ("1h30m", Ok(5400000000000)),
            ("90s", Ok(90000000000)),
            ("0", Ok(0)),
            ("+0", Ok(0)),
            ("-0", Ok(0)),
            ("", Err(r#"time: invalid duration """#)),
            ("-", Err(r#"time: invalid duration "-""#)),
            ("12", Err(r#"time: missing unit in duration "12""#)),
            ("3d", Err(r#"time: unknown unit "d" in duration "3d""#)),
            ("1.5h", Ok(5400000000000)),
            (".5s", Ok(500000000)),
            ("5.s", Ok(5000000000)),
            (".s", Err(r#"time: invalid duration ".s""#)),
            ("-.s", Err(r#"time: invalid duration "-.s""#)),
            ("1µs", Ok(1000)),
            ("1μs", Ok(1000)),
            ("1us", Ok(1000)),
            ("1ns", Ok(1)),
            ("2ms", Ok(2000000)),
            ("-1h", Ok(-3600000000000)),
            ("+1h", Ok(3600000000000)),
            (
                "99999999999999999999999h",
                Err(r#"time: invalid duration "99999999999999999999999h""#),
            ),
            ("9223372036854775807ns", Ok(i64::MAX)),
            (
                "9223372036854775808ns",
                Err(r#"time: invalid duration "9223372036854775808ns""#),
            ),
            ("-9223372036854775808ns", Ok(i64::MIN)),
            ("2562047h", Ok(9223369200000000000)),
            ("2562048h", Err(r#"time: invalid duration "2562048h""#)),
            ("1h1", Err(r#"time: missing unit in duration "1h1""#)),
            ("1e3s", Err(r#"time: unknown unit "e" in duration "1e3s""#)),
            ("1.0000000000000000000000001s", Ok(1000000000)),
            ("0.3333333333333333333h", Ok(1200000000000)),
            (" 1h", Err(r#"time: invalid duration " 1h""#)),
            ("1h ", Err(r#"time: unknown unit "h " in duration "1h ""#)),
            (
                "1\x01s",
                Err(r#"time: unknown unit "\x01s" in duration "1\x01s""#),
            ),
            (
                "1é",
                Err(r#"time: unknown unit "\xc3\xa9" in duration "1\xc3\xa9""#),
            ),
            (
                "1s\"",
                Err(r#"time: unknown unit "s\"" in duration "1s\"""#),
            ),
            ("\x7fs", Err("time: invalid duration \"\x7fs\"")),
            ("1.", Err(r#"time: missing unit in duration "1.""#)),
            ("1.s", Ok(1000000000)),
            ("00012s", Ok(12000000000)),
            ("1H", Err(r#"time: unknown unit "H" in duration "1H""#)),
            ("9223372036.854775807s", Ok(i64::MAX)),
            (
                "9223372036.854775808s",
                Err(r#"time: invalid duration "9223372036.854775808s""#),
            ),
        ];
        for (input, want) in cases {
            let got = parse_duration(input)
                .map(Duration::as_nanos)
                .map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_owned), "{input:?}");
        }
    }

    #[test]
    fn converts_to_std_unless_negative() {
        let d = |s| parse_duration(s).unwrap().to_std();
        assert_eq!(d("1h30m"), Some(std::time::Duration::from_secs(5400)));
        assert_eq!(d("0"), Some(std::time::Duration::ZERO));
        assert_eq!(d("-1s"), None);
    }
}
