//! `encoding/json`'s syntax errors: a port of the state machine of Go's JSON scanner, run only
//! once a document is known to be broken, to say what is wrong in Go's words
//! (`invalid character '}' looking for beginning of object key string`, `unexpected EOF`) and
//! where.

/// What Go's `json.Decoder` says about the value at the start of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scan {
    /// One whole value, ending at this byte offset.
    Complete(usize),
    /// The text holds only whitespace: the end of a stream (`EOF`).
    End,
    /// The text ends inside the value: `unexpected EOF`.
    UnexpectedEof,
    /// A syntax error at the byte `offset`, with Go's message.
    Invalid {
        /// The offending byte's offset in the text.
        offset: usize,
        /// `invalid character … …`, as `SyntaxError.Error()` says it.
        message: String,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    InString,
    InStringEsc,
    /// Inside `\u`, with this many hex digits read.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside a literal (`true`, `false`, `null`), with this many bytes read.
    Literal(&'static [u8], usize),
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `quoteChar`: the byte as a quoted rune (`'x'`, `'\t'`, `'\''`, `'"'`).
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_owned(),
        b'"' => r#"'"'"#.to_owned(),
        _ => {
            // A byte converts to the rune of the same number, as Go's string(c) does for a byte.
            let q = crate::quote(&char::from(c).to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

/// Scans the first JSON value of `text` (after leading whitespace) as Go's `json.Decoder` does.
pub fn scan_value(text: &[u8]) -> Scan {
    let mut stack: Vec<Parse> = Vec::new();
    let mut state = State::BeginValue;
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        let err = |context: &str| Scan::Invalid {
            offset: i,
            message: format!("invalid character {} {context}", quote_char(c)),
        };
        // Each arm either consumes `c` (continue with the next byte) or re-reads it in the
        // state it moves to, as Go's state functions call one another.
        let mut again = true;
        while again {
            again = false;
            state = match state {
                State::BeginValue | State::BeginValueOrEmpty | State::BeginStringOrEmpty
                    if is_space(c) =>
                {
                    state
                }
                State::BeginValueOrEmpty if c == b']' => {
                    again = true;
                    State::EndValue
                }
                State::BeginStringOrEmpty if c == b'}' => {
                    if let Some(p) = stack.last_mut() {
                        *p = Parse::ObjectValue;
                    }
                    again = true;
                    State::EndValue
                }
                State::BeginStringOrEmpty | State::BeginString => match c {
                    _ if is_space(c) => State::BeginString,
                    b'"' => State::InString,
                    _ => return err("looking for beginning of object key string"),
                },
                State::BeginValue | State::BeginValueOrEmpty => match c {
                    b'{' => {
                        stack.push(Parse::ObjectKey);
                        State::BeginStringOrEmpty
                    }
                    b'[' => {
                        stack.push(Parse::ArrayValue);
                        State::BeginValueOrEmpty
                    }
                    b'"' => State::InString,
                    b'-' => State::Neg,
                    b'0' => State::Zero,
                    b'1'..=b'9' => State::One,
                    b't' => State::Literal(b"true", 1),
                    b'f' => State::Literal(b"false", 1),
                    b'n' => State::Literal(b"null", 1),
                    _ => return err("looking for beginning of value"),
                },
                State::EndValue => {
                    let Some(&top) = stack.last() else {
                        // The value is complete: the decoder stops before this byte.
                        return Scan::Complete(i);
                    };
                    if is_space(c) {
                        State::EndValue
                    } else {
                        match (top, c) {
                            (Parse::ObjectKey, b':') => {
                                if let Some(p) = stack.last_mut() {
                                    *p = Parse::ObjectValue;
                                }
                                State::BeginValue
                            }
                            (Parse::ObjectKey, _) => return err("after object key"),
                            (Parse::ObjectValue, b',') => {
                                if let Some(p) = stack.last_mut() {
                                    *p = Parse::ObjectKey;
                                }
                                State::BeginString
                            }
                            (Parse::ObjectValue, b'}') | (Parse::ArrayValue, b']') => {
                                stack.pop();
                                if stack.is_empty() {
                                    return Scan::Complete(i + 1);
                                }
                                State::EndValue
                            }
                            (Parse::ObjectValue, _) => return err("after object key:value pair"),
                            (Parse::ArrayValue, b',') => State::BeginValue,
                            (Parse::ArrayValue, _) => return err("after array element"),
                        }
                    }
                }
                State::InString => match c {
                    b'"' => State::EndValue,
                    b'\\' => State::InStringEsc,
                    0..0x20 => return err("in string literal"),
                    _ => State::InString,
                },
                State::InStringEsc => match c {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => State::InString,
                    b'u' => State::InStringEscU(0),
                    _ => return err("in string escape code"),
                },
                State::InStringEscU(n) => {
                    if !c.is_ascii_hexdigit() {
                        return err("in \\u hexadecimal character escape");
                    }
                    if n == 3 {
                        State::InString
                    } else {
                        State::InStringEscU(n + 1)
                    }
                }
                State::Neg => match c {
                    b'0' => State::Zero,
                    b'1'..=b'9' => State::One,
                    _ => return err("in numeric literal"),
                },
                State::One if c.is_ascii_digit() => State::One,
                State::One | State::Zero => match c {
                    b'.' => State::Dot,
                    b'e' | b'E' => State::E,
                    _ => {
                        again = true;
                        State::EndValue
                    }
                },
                State::Dot => {
                    if !c.is_ascii_digit() {
                        return err("after decimal point in numeric literal");
                    }
                    State::Dot0
                }
                State::Dot0 => match c {
                    b'0'..=b'9' => State::Dot0,
                    b'e' | b'E' => State::E,
                    _ => {
                        again = true;
                        State::EndValue
                    }
                },
                State::E if matches!(c, b'+' | b'-') => State::ESign,
                State::E | State::ESign => {
                    if !c.is_ascii_digit() {
                        return err("in exponent of numeric literal");
                    }
                    State::E0
                }
                State::E0 => {
                    if c.is_ascii_digit() {
                        State::E0
                    } else {
                        again = true;
                        State::EndValue
                    }
                }
                State::Literal(word, n) => {
                    if c != word[n] {
                        let name = std::str::from_utf8(word).unwrap_or_default();
                        return err(&format!(
                            "in literal {name} (expecting {})",
                            quote_char(word[n])
                        ));
                    }
                    if n + 1 == word.len() {
                        State::EndValue
                    } else {
                        State::Literal(word, n + 1)
                    }
                }
            };
        }
        i += 1;
    }
    // A number or literal at the very end of the text is complete; anything else is cut short.
    match state {
        State::BeginValue if stack.is_empty() => Scan::End,
        State::EndValue | State::One | State::Zero | State::Dot0 | State::E0
            if stack.is_empty() =>
        {
            Scan::Complete(text.len())
        }
        _ => Scan::UnexpectedEof,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(text: &str) -> (usize, String) {
        match scan_value(text.as_bytes()) {
            Scan::Invalid { offset, message } => (offset, message),
            other => panic!("{text:?}: {other:?}"),
        }
    }

    /// Messages and offsets as Go 1.26's `json.Decoder.Decode` reports them.
    #[test]
    fn errors_as_go_words_them() {
        let cases: &[(&str, usize, &str)] = &[
            (
                r#"{"a": 1,}"#,
                8,
                "invalid character '}' looking for beginning of object key string",
            ),
            (r#"{"a" 1}"#, 5, "invalid character '1' after object key"),
            (
                r#"{"a": 1 "b": 2}"#,
                8,
                "invalid character '\"' after object key:value pair",
            ),
            (
                r#"{"a": olm}"#,
                6,
                "invalid character 'o' looking for beginning of value",
            ),
            (
                r#"{"a": tru}"#,
                9,
                "invalid character '}' in literal true (expecting 'e')",
            ),
            (
                r#"{"a": nul}"#,
                9,
                "invalid character '}' in literal null (expecting 'l')",
            ),
            (
                r#"{"a": "\x"}"#,
                8,
                "invalid character 'x' in string escape code",
            ),
            (
                r#"{"a": "\u12g4"}"#,
                11,
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
            (
                "{\"a\": \"a\tb\"}",
                8,
                "invalid character '\\t' in string literal",
            ),
            (
                r#"{"a": 01}"#,
                7,
                "invalid character '1' after object key:value pair",
            ),
            (
                r#"{"a": -x}"#,
                7,
                "invalid character 'x' in numeric literal",
            ),
            (
                r#"{"a": 1.}"#,
                8,
                "invalid character '}' after decimal point in numeric literal",
            ),
            (
                r#"{"a": 1e}"#,
                8,
                "invalid character '}' in exponent of numeric literal",
            ),
            (
                r#"{"a": [1 2]}"#,
                9,
                "invalid character '2' after array element",
            ),
            (
                r#"{'a': 1}"#,
                1,
                r"invalid character '\'' looking for beginning of object key string",
            ),
            (
                "x",
                0,
                "invalid character 'x' looking for beginning of value",
            ),
            (
                "{\"a\": \x7f}",
                6,
                "invalid character '\\x7f' looking for beginning of value",
            ),
        ];
        for (text, offset, message) in cases {
            assert_eq!(invalid(text), (*offset, (*message).to_owned()), "{text}");
        }
    }

    #[test]
    fn complete_values_and_cut_ones() {
        assert_eq!(
            scan_value(br#"{"a": [1, 2.5e3, true, null, "x\u00e9"]} x"#),
            Scan::Complete(40)
        );
        assert_eq!(scan_value(b"  12"), Scan::Complete(4));
        assert_eq!(scan_value(b"{}{}"), Scan::Complete(2));
        assert_eq!(scan_value(br#"{"a": "b""#), Scan::UnexpectedEof);
        assert_eq!(scan_value(b"  "), Scan::End);
        // A byte of a UTF-8 sequence is quoted as the rune of its number, as Go does.
        assert_eq!(
            scan_value("{\"a\": é}".as_bytes()),
            Scan::Invalid {
                offset: 6,
                message: "invalid character 'Ã' looking for beginning of value".to_owned()
            }
        );
        assert_eq!(scan_value(b"[1,"), Scan::UnexpectedEof);
    }
}
