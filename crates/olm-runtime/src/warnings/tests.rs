//! Vectors from `k8s.io/apimachinery/pkg/util/net/http_test.go` (v0.36.1):
//! `TestParseWarningHeader` and `TestParseWarningHeaders`. Left out: the RFC 2047 cases (see
//! the module's caveat) and the two non-UTF-8 ones (a header value that is not UTF-8 is not
//! read at all here).

use super::*;

fn ok(text: &str) -> Warning {
    Warning {
        code: 299,
        agent: "-".into(),
        text: text.into(),
    }
}

/// A header value, what it parses to (the warning and what follows) or part of why not.
type Case<'a> = (&'a str, &'a str, Result<(Warning, &'a str), &'a str>);

#[test]
fn one_warning_parses_as_client_go_parses_it() {
    let escaped = r#"text"\abc"#;
    let table: Vec<Case> = vec![
        ("empty", "", Err("fewer than 3 segments")),
        ("bad code", "A B", Err("fewer than 3 segments")),
        ("short code", r#"1 - "text""#, Err("not 3 digits")),
        ("bad code", r#"A - "text""#, Err("not 3 digits")),
        (
            "invalid date quoting",
            r#"  299 - "text\"\\\a\b\c"  "Tue, 15 Nov 1994 08:12:31 GMT "#,
            Err("unterminated date segment"),
        ),
        (
            "invalid post-date",
            r#"  299 - "text\"\\\a\b\c"  "Tue, 15 Nov 1994 08:12:31 GMT" other"#,
            Err("unexpected token after warn-date"),
        ),
        (
            "agent control character",
            "  299 agent\u{0}name \"text\"",
            Err("invalid agent"),
        ),
        (
            "text control character",
            "  299 - \"text\u{0}\"content",
            Err("invalid text"),
        ),
        ("ok", r#"299 - "text""#, Ok((ok("text"), ""))),
        (
            "ok escaped",
            r#"299 - "text\"\\\a\b\c""#,
            Ok((ok(escaped), "")),
        ),
        (
            "big code",
            r#"321 - "text""#,
            Ok((
                Warning {
                    code: 321,
                    agent: "-".into(),
                    text: "text".into(),
                },
                "",
            )),
        ),
        (
            "ok with spaces",
            r#"  299 - "text\"\\\a\b\c"  "#,
            Ok((ok(escaped), "")),
        ),
        (
            "ok with date",
            r#"  299 - "text\"\\\a\b\c"  "Tue, 15 Nov 1994 08:12:31 GMT" "#,
            Ok((ok(escaped), "")),
        ),
        (
            "ok with date and comma",
            r#"  299 - "text\"\\\a\b\c"  "Tue, 15 Nov 1994 08:12:31 GMT" , "#,
            Ok((ok(escaped), "")),
        ),
        (
            "ok with comma",
            r#"  299 - "text\"\\\a\b\c"  , "#,
            Ok((ok(escaped), "")),
        ),
        (
            "ok with date and comma and remainder",
            r#"  299 - "text\"\\\a\b\c"  "Tue, 15 Nov 1994 08:12:31 GMT" , remainder "#,
            Ok((ok(escaped), "remainder")),
        ),
        (
            "ok with comma and remainder",
            r#"  299 - "text\"\\\a\b\c"  ,remainder text,second remainder"#,
            Ok((ok(escaped), "remainder text,second remainder")),
        ),
        (
            "ok with utf-8 content directly in warn-text",
            r#" 299 - "Test of Iñtërnâtiônàlizætiøn,💝🐹🌇⛔" "#,
            Ok((ok("Test of Iñtërnâtiônàlizætiøn,💝🐹🌇⛔"), "")),
        ),
    ];
    for (name, header, want) in table {
        match (parse(header), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
            (Err(got), Err(want)) => assert!(got.contains(want), "{name}: {got}"),
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn a_header_value_holds_warnings_up_to_the_first_bad_one() {
    let headers = [
        r#"299 - "warning 1.1",299 - "warning 1.2""#,
        r#"299 - "warning 2", 299 - "warning unquoted"#,
        r#" 299 - "warning 3.1" ,  299 - "warning 3.2" "#,
    ];
    let got: Vec<Warning> = headers.iter().flat_map(|h| parse_all(h)).collect();
    let want: Vec<Warning> = [
        "warning 1.1",
        "warning 1.2",
        "warning 2",
        "warning 3.1",
        "warning 3.2",
    ]
    .into_iter()
    .map(ok)
    .collect();
    assert_eq!(got, want);
    assert_eq!(
        parse(r#"299 - "warning unquoted"#).err(),
        Some("invalid warning header: invalid quoted string: missing closing quote")
    );
}

#[test]
fn kept_warnings_are_bounded_and_taken_once() {
    let w = Warnings::default();
    w.keep((0..MAX_KEPT + 5).map(|i| i.to_string()));
    let (texts, dropped) = w.take();
    assert_eq!((texts.len(), dropped), (MAX_KEPT, 5));
    assert_eq!(texts.first().map(String::as_str), Some("0"));
    assert_eq!(w.take(), (Vec::new(), 0));
}
