//! Query strings and path segments as Go's `net/url` reads them (`ParseQuery`, `QueryUnescape`,
//! `PathUnescape`), for the HTTP servers that answer as Go servers do: pairs split at `&`, key
//! and value at the first `=`, `+` a space in queries, `%XX` a byte.

use crate::quote;

/// Why a component does not decode: Go's `invalid URL escape "%zz"`, its `invalid semicolon
/// separator in query`, or bytes that are not UTF-8 (which Go's byte strings accept and Rust's
/// cannot hold).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// A `%` without two hex digits after it.
    #[error("invalid URL escape {}", quote(.0))]
    Escape(String),
    /// A `;` in a pair (Go 1.17 stopped splitting at it).
    #[error("invalid semicolon separator in query")]
    Semicolon,
    /// The decoded bytes are not UTF-8.
    #[error("invalid UTF-8 in {}", quote(.0))]
    Utf8(String),
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

fn unescape(s: &str, plus_is_space: bool) -> Result<String, UrlError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' => {
                let (Some(h), Some(l)) = (
                    b.get(i + 1).copied().and_then(hex),
                    b.get(i + 2).copied().and_then(hex),
                ) else {
                    let end = (i + 3).min(b.len());
                    return Err(UrlError::Escape(
                        String::from_utf8_lossy(&b[i..end]).into_owned(),
                    ));
                };
                out.push(h * 16 + l);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| UrlError::Utf8(s.to_owned()))
}

/// One query component, as `url.QueryUnescape`.
pub fn query_unescape(s: &str) -> Result<String, UrlError> {
    unescape(s, true)
}

/// One path segment, as `url.PathUnescape` (`+` stays a plus).
pub fn path_unescape(s: &str) -> Result<String, UrlError> {
    unescape(s, false)
}

/// `raw` as `url.ParseQuery` reads it: the pairs that decode, in order, and the first error;
/// a pair that does not decode (or holds a `;` anywhere) is left out, as Go leaves it out of
/// `URL.Query()`.
pub fn parse_query(raw: &str) -> (Vec<(String, String)>, Option<UrlError>) {
    let mut pairs = Vec::new();
    let mut first = None;
    for part in raw.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let decoded = if part.contains(';') {
            Err(UrlError::Semicolon)
        } else {
            query_unescape(k).and_then(|k| Ok((k, query_unescape(v)?)))
        };
        match decoded {
            Ok(pair) => pairs.push(pair),
            Err(e) => {
                first.get_or_insert(e);
            }
        }
    }
    (pairs, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's `TestParseQuery` and `TestUnescape` cases (net/url/url_test.go) that bear on these
    /// rules.
    #[test]
    fn queries_decode_like_go() {
        let (pairs, err) = parse_query("schema=olm.bundle&package=a%2Db&name=x+y&flag");
        assert_eq!(err, None);
        assert_eq!(
            pairs,
            [
                ("schema".into(), "olm.bundle".into()),
                ("package".into(), "a-b".into()),
                ("name".into(), "x y".into()),
                ("flag".into(), String::new()),
            ]
        );
        let (pairs, err) = parse_query("a=1&b=%zz&c=3;d&e=%+1&f=%4");
        assert_eq!(pairs, [("a".into(), "1".into())]);
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some(r#"invalid URL escape "%zz""#)
        );
        assert_eq!(
            parse_query("a;b=1").1.map(|e| e.to_string()).as_deref(),
            Some("invalid semicolon separator in query")
        );
        assert_eq!(query_unescape("%41%62+c").as_deref(), Ok("Ab c"));
        assert_eq!(path_unescape("a+b%2Fc").as_deref(), Ok("a+b/c"));
        assert_eq!(
            query_unescape("%4").map_err(|e| e.to_string()),
            Err(r#"invalid URL escape "%4""#.to_owned())
        );
        assert!(matches!(query_unescape("%ff"), Err(UrlError::Utf8(_))));
    }
}
