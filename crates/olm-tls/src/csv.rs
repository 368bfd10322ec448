//! The first record of a comma-separated value, read as Go's `encoding/csv` reads it with its
//! default settings: upstream's list flags (`--tls-custom-ciphers`, `--tls-custom-curves`) take
//! their values that way, so `"a,b"` is one name, a stray `"` is an error with Go's wording and
//! position, and anything after the first record (a second line) is ignored.

use std::fmt;

/// Why a value did not read as a record, worded as `encoding/csv` words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsvError {
    /// Nothing but empty lines: Go's `io.EOF`.
    Eof,
    /// A malformed quote.
    Parse {
        /// The line the record starts on (1-based).
        start_line: usize,
        /// The line of the fault.
        line: usize,
        /// The 1-based byte column of the fault.
        column: usize,
        /// Which fault.
        kind: QuoteFault,
    },
}

/// The two quoting faults a record can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuoteFault {
    /// A `"` inside a field that does not start with one.
    Bare,
    /// A quoted field not closed, or closed and followed by something other than `,`.
    Extraneous,
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CsvError::Eof => f.write_str("EOF"),
            CsvError::Parse {
                start_line,
                line,
                column,
                kind,
            } => {
                let why = match kind {
                    QuoteFault::Bare => "bare \" in non-quoted-field",
                    QuoteFault::Extraneous => "extraneous or missing \" in quoted-field",
                };
                if start_line != line {
                    write!(f, "record on line {start_line}; ")?;
                }
                write!(f, "parse error on line {line}, column {column}: {why}")
            }
        }
    }
}

impl std::error::Error for CsvError {}

/// The lines of the input as Go reads them: each keeps its `\n`, `\r\n` becomes `\n`, and a last
/// line without `\n` loses a trailing `\r`.
fn lines(input: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = input.as_bytes();
    while !rest.is_empty() {
        let (mut line, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (rest[..=i].to_vec(), &rest[i + 1..]),
            None => (rest.to_vec(), &rest[rest.len()..]),
        };
        if line.ends_with(b"\r\n") {
            line.truncate(line.len() - 2);
            line.push(b'\n');
        } else if next.is_empty() && line.ends_with(b"\r") {
            line.pop();
        }
        out.push(line);
        rest = next;
    }
    out
}

/// 1 when `line` ends with its newline.
fn newline_len(line: &[u8]) -> usize {
    usize::from(line.last() == Some(&b'\n'))
}

/// Reads the first record of `input`. Empty lines before it are skipped; only empty lines is
/// [`CsvError::Eof`].
pub fn first_record(input: &str) -> Result<Vec<String>, CsvError> {
    let all = lines(input);
    let Some(start) = all.iter().position(|l| l.len() != newline_len(l)) else {
        return Err(CsvError::Eof);
    };
    let start_line = start + 1;
    // The line being read (1-based), and what is left of it.
    let mut number = start_line;
    let mut line: &[u8] = &all[start];
    let mut column = 1;
    let mut fields = Vec::new();
    let fault = |line: usize, column: usize, kind: QuoteFault| CsvError::Parse {
        start_line,
        line,
        column,
        kind,
    };
    loop {
        if line.first() != Some(&b'"') {
            let comma = line.iter().position(|&b| b == b',');
            let field = match comma {
                Some(i) => &line[..i],
                None => &line[..line.len() - newline_len(line)],
            };
            if let Some(j) = field.iter().position(|&b| b == b'"') {
                return Err(fault(number, column + j, QuoteFault::Bare));
            }
            fields.push(String::from_utf8_lossy(field).into_owned());
            match comma {
                Some(i) => {
                    line = &line[i + 1..];
                    column += i + 1;
                    continue;
                }
                None => return Ok(fields),
            }
        }
        line = &line[1..];
        column += 1;
        let mut field = Vec::new();
        loop {
            if let Some(i) = line.iter().position(|&b| b == b'"') {
                field.extend_from_slice(&line[..i]);
                line = &line[i + 1..];
                column += i + 1;
                match line.first() {
                    Some(b'"') => {
                        field.push(b'"');
                        line = &line[1..];
                        column += 1;
                    }
                    Some(b',') => {
                        line = &line[1..];
                        column += 1;
                        fields.push(String::from_utf8_lossy(&field).into_owned());
                        break;
                    }
                    None | Some(b'\n') => {
                        fields.push(String::from_utf8_lossy(&field).into_owned());
                        return Ok(fields);
                    }
                    Some(_) => return Err(fault(number, column - 1, QuoteFault::Extraneous)),
                }
            } else if !line.is_empty() {
                // A quoted field goes on over the next line.
                field.extend_from_slice(line);
                column += line.len();
                match all.get(number) {
                    Some(next) => {
                        line = next;
                        number += 1;
                        column = 1;
                    }
                    None => line = &[],
                }
            } else {
                return Err(fault(number, column, QuoteFault::Extraneous));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Writes fields as Go's `csv.Writer` does: quoted when they hold a comma, a quote, a line
    /// break or a leading space, quotes doubled.
    fn write(fields: &[String]) -> String {
        let quoted: Vec<String> = fields
            .iter()
            .map(|f| {
                if f.contains([',', '"', '\n', '\r']) || f.starts_with(' ') {
                    format!("\"{}\"", f.replace('"', "\"\""))
                } else {
                    f.clone()
                }
            })
            .collect();
        quoted.join(",")
    }

    proptest! {
        /// What a CSV writer writes reads back as the same fields (a first field that is empty
        /// alone would be an empty line, which Go skips, so records have some text).
        #[test]
        fn written_records_read_back(fields in prop::collection::vec("[ -~\n]{0,12}", 1..6)) {
            prop_assume!(!(fields.len() == 1 && fields[0].is_empty()));
            prop_assume!(fields.iter().all(|f| !f.contains('\r')));
            prop_assert_eq!(first_record(&write(&fields)), Ok(fields));
        }

        /// Any input reads or fails with an error; nothing panics.
        #[test]
        fn any_input_is_an_answer(input in "[a-z,\"\r\n ]{0,24}") {
            let _ = first_record(&input);
        }
    }

    /// What Go 1.26's `csv.NewReader(strings.NewReader(v)).Read()` returns for each value.
    #[test]
    fn reads_as_encoding_csv_does() {
        let ok: &[(&str, &[&str])] = &[
            ("a,b", &["a", "b"]),
            ("a,,b", &["a", "", "b"]),
            ("\"a,b\",c", &["a,b", "c"]),
            (" a , b", &[" a ", " b"]),
            ("a\nb", &["a"]),
            ("\na", &["a"]),
            ("a,\"b\"\"c\"", &["a", "b\"c"]),
            ("a\r\nb", &["a"]),
            (",", &["", ""]),
            ("\"a\nb\",c", &["a\nb", "c"]),
            ("a\r", &["a"]),
        ];
        for (input, want) in ok {
            let want: Vec<String> = want.iter().map(|s| (*s).to_owned()).collect();
            assert_eq!(first_record(input), Ok(want), "{input:?}");
        }
        let bad: &[(&str, &str)] = &[
            (
                "a\"b",
                "parse error on line 1, column 2: bare \" in non-quoted-field",
            ),
            (
                "\"a\"b",
                "parse error on line 1, column 3: extraneous or missing \" in quoted-field",
            ),
            (
                "\"a",
                "parse error on line 1, column 3: extraneous or missing \" in quoted-field",
            ),
            (
                "ab,\"c",
                "parse error on line 1, column 6: extraneous or missing \" in quoted-field",
            ),
            (
                "é\"x",
                "parse error on line 1, column 3: bare \" in non-quoted-field",
            ),
            (
                "\"a\"\"",
                "parse error on line 1, column 5: extraneous or missing \" in quoted-field",
            ),
            (
                "x,\"a\"b",
                "parse error on line 1, column 5: extraneous or missing \" in quoted-field",
            ),
            (
                "\"a\nb",
                "record on line 1; parse error on line 2, column 2: extraneous or missing \" in quoted-field",
            ),
            (
                "\"a\nb\"c",
                "record on line 1; parse error on line 2, column 2: extraneous or missing \" in quoted-field",
            ),
            ("\n", "EOF"),
            ("\n\r\n", "EOF"),
        ];
        for (input, want) in bad {
            let got = first_record(input).map_err(|e| e.to_string());
            assert_eq!(got, Err((*want).to_owned()), "{input:?}");
        }
    }
}
