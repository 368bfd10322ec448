//! Status messages as the API server accepts them and as people can read them: the one place
//! where every condition message, phase message and Event note olm writes is bounded.
//!
//! - [`bounded_message`] is what every writer stores: [`sanitize_message`], then
//!   [`truncate_message`]. Decisions store it (not the raw text) so that comparing what they
//!   want with what the object holds sees no change when there is none.
//! - [`truncate_message`] is operator-controller's `truncateMessage` (PR #2169,
//!   `internal/operator-controller/controllers/common_controller.go`): at most
//!   [`MAX_CONDITION_MESSAGE_LENGTH`] bytes, the tail replaced by [`TRUNCATION_SUFFIX`].
//! - [`sanitize_message`] keeps raw bytes out of a message: an error that quotes the content of
//!   a garbage image layer (tar's "numeric field was not a number: …", a parser's excerpt) has
//!   its unprintable characters escaped and long runs of binary cut short.
//! - [`truncate_note`] bounds an Event's note the same way, to the Event API's limit.
//! - [`bound_status_messages`] applies [`bounded_message`] to a status built as JSON.
//! - [`shorten_refused_status`] is the fallback when the API server refuses a status write
//!   anyway: the same status with its long messages replaced by a short one saying why.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

/// The longest condition message `metav1.Condition`'s schema accepts, in bytes.
pub const MAX_CONDITION_MESSAGE_LENGTH: usize = 32768;

/// What replaces the tail of a message that was cut (upstream's `truncationSuffix`).
pub const TRUNCATION_SUFFIX: &str = "\n\n... [message truncated]";

/// The most bytes an `events.k8s.io/v1` Event's `note` may hold (apimachinery's
/// `NoteLengthLimit`); the API server refuses longer ones.
pub const EVENT_NOTE_LIMIT: usize = 1024;

/// How many bytes of a run of binary data a sanitized message keeps (escaped).
pub const BINARY_RUN_KEEP: usize = 64;

/// How many printable characters may sit between two unprintable ones for both to count as one
/// run of binary data: random bytes decode to a mix of both.
const BINARY_RUN_GAP: usize = 8;

/// The longest message [`shorten_refused_status`] leaves as it is, and the length of the
/// messages it shortens.
pub const REFUSED_MESSAGE_LIMIT: usize = 2048;

/// How much of the API server's answer a shortened message quotes.
const REFUSAL_QUOTE: usize = 1024;

/// The message a status stores: [`sanitize_message`], then [`truncate_message`]. Borrowed when
/// it is already fine, which is nearly always.
pub fn bounded_message(message: &str) -> Cow<'_, str> {
    match sanitize_message(message) {
        Cow::Borrowed(m) => truncate_message(m),
        Cow::Owned(m) => Cow::Owned(truncate_message(&m).into_owned()),
    }
}

/// Cuts `message` to at most [`MAX_CONDITION_MESSAGE_LENGTH`] bytes, ending it with
/// [`TRUNCATION_SUFFIX`] when anything was cut.
///
/// A message that fits is returned as it is (borrowed). A longer one keeps as much of its start
/// as fits before the suffix. Upstream cuts at that byte offset even inside a multi-byte
/// character; here the cut moves back to the previous character boundary, so the result is
/// always valid UTF-8 and may be up to three bytes shorter than upstream's.
pub fn truncate_message(message: &str) -> Cow<'_, str> {
    cut_with_suffix(message, MAX_CONDITION_MESSAGE_LENGTH, TRUNCATION_SUFFIX)
}

/// `message` cut to `max` bytes in all, `suffix` included, on a character boundary; borrowed
/// when it fits.
fn cut_with_suffix<'a>(message: &'a str, max: usize, suffix: &str) -> Cow<'a, str> {
    if message.len() <= max {
        return Cow::Borrowed(message);
    }
    let head = prefix(message, max.saturating_sub(suffix.len()));
    let mut out = String::with_capacity(head.len() + suffix.len());
    out.push_str(head);
    out.push_str(suffix);
    Cow::Owned(out)
}

/// The longest start of `s` of at most `max` bytes that ends on a character boundary.
fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `note` sanitized and cut to [`EVENT_NOTE_LIMIT`] bytes at a character boundary, so a long
/// message (a resolver's explanation) still makes an Event instead of a refused write.
pub fn truncate_note(note: &str) -> String {
    prefix(&sanitize_message(note), EVENT_NOTE_LIMIT).to_owned()
}

/// Whether `c` must not appear as it is in a message: a control character other than newline
/// and tab, the replacement character a lossy decoding of binary data leaves, or an invisible
/// formatting character that changes how the text around it reads (zero-width and
/// bidirectional controls, the byte-order mark).
fn is_unprintable(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{FFFD}'
                | '\u{061C}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

/// Writes `c` as Go's `%q` writes it inside the quotes (`\x00`, `\a`, `\u202e`); the
/// replacement character, which Go prints as it is, as `\ufffd`.
fn push_escaped(out: &mut String, c: char) {
    if c == '\u{FFFD}' {
        out.push_str("\\ufffd");
        return;
    }
    let quoted = olm_goenc::quote(c.encode_utf8(&mut [0; 4]));
    out.push_str(&quoted[1..quoted.len() - 1]);
}

/// `message` with every unprintable character escaped (as Go's `%q` would) and every run of
/// binary data cut to its first [`BINARY_RUN_KEEP`] bytes, followed by a note of how many
/// characters were left out. Newlines and tabs stay: multi-line messages are ordinary.
///
/// A run starts at an unprintable character and goes on while the next one follows within a
/// few printable characters, so the printable bytes scattered through random data are cut
/// with it, while the text after the run (" when getting cksum for …") is kept.
///
/// Borrowed when there is nothing to escape.
pub fn sanitize_message(message: &str) -> Cow<'_, str> {
    if !message.chars().any(is_unprintable) {
        return Cow::Borrowed(message);
    }
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len());
    let mut i = 0;
    while i < chars.len() {
        if !is_unprintable(chars[i]) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        // The run ends after its last unprintable character.
        let mut last = i;
        let mut j = i + 1;
        while j < chars.len() && j - last <= BINARY_RUN_GAP {
            if is_unprintable(chars[j]) {
                last = j;
            }
            j += 1;
        }
        let end = last + 1;
        let start = out.len();
        let mut k = i;
        while k < end && out.len() - start < BINARY_RUN_KEEP {
            if is_unprintable(chars[k]) {
                push_escaped(&mut out, chars[k]);
            } else {
                out.push(chars[k]);
            }
            k += 1;
        }
        if k < end {
            let _ = write!(out, "... [{} more characters of binary data]", end - k);
        }
        i = end;
    }
    Cow::Owned(out)
}

/// Every `message` in a status object (at any depth: its own, its conditions', a CSV's
/// requirement statuses') bounded as [`bounded_message`] bounds it; whether any changed. For
/// shells that build a status as JSON: what they write is then what a decision comparing with
/// [`bounded_message`] expects to read back.
pub fn bound_status_messages(status: &mut Value) -> bool {
    each_message(status, &mut |m| match bounded_message(m) {
        Cow::Borrowed(_) => false,
        Cow::Owned(b) => {
            *m = b;
            true
        }
    })
}

/// The status to write instead of `status` when the API server refused it, `why` being its
/// answer: every `message` (at any depth) longer than [`REFUSED_MESSAGE_LIMIT`] bytes keeps its
/// start and ends with a note that the full message was refused, and why, within that limit.
/// `None` when no message is that long — then the messages were not what the server refused,
/// and writing again would be refused again.
///
/// Guarantees: the result differs from `status` only in those messages, and writing it twice
/// gives the same object, so a controller that falls back on every reconcile writes once.
pub fn shorten_refused_status(status: &Value, why: &str) -> Option<Value> {
    let note = format!(
        "\n\n... [message shortened: the API server refused the status with the full message: {}]",
        prefix(&sanitize_message(why), REFUSAL_QUOTE)
    );
    let mut out = status.clone();
    each_message(&mut out, &mut |m| {
        if m.len() <= REFUSED_MESSAGE_LIMIT {
            return false;
        }
        *m = cut_with_suffix(m, REFUSED_MESSAGE_LIMIT, &note).into_owned();
        true
    })
    .then_some(out)
}

/// Calls `f` on every string under a `message` key below `v`; whether any call changed one.
fn each_message(v: &mut Value, f: &mut impl FnMut(&mut String) -> bool) -> bool {
    match v {
        Value::Object(map) => map.iter_mut().fold(false, |any, (key, value)| match value {
            Value::String(m) if key == "message" => f(m) | any,
            other => each_message(other, f) | any,
        }),
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |any, item| each_message(item, f) | any),
        _ => false,
    }
}

/// An error and all its sources, `: `-separated. Transport errors keep the interesting part
/// ("Connection refused") several sources deep, and users must see it.
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The suffix and limit upstream uses (operator-controller PR #2169,
    /// `common_controller.go` `truncationSuffix`, `maxConditionMessageLength`), byte for byte.
    #[test]
    fn truncation_constants_are_upstreams() {
        assert_eq!(MAX_CONDITION_MESSAGE_LENGTH, 32768);
        assert_eq!(TRUNCATION_SUFFIX, "\n\n... [message truncated]");
        assert_eq!(TRUNCATION_SUFFIX.len(), 25);
    }

    /// operator-controller `common_controller_test.go` `TestTruncateMessage` (PR #2169), every
    /// case, plus the invariants that test checks after each one, plus the multi-byte cases
    /// where a character straddles the cut.
    #[test]
    fn truncate_message_upstream_vectors() {
        let keep = MAX_CONDITION_MESSAGE_LENGTH - TRUNCATION_SUFFIX.len();
        let words = "word ".repeat(10000);
        let cases: Vec<(&str, String, String)> = vec![
            (
                "short message unchanged",
                "This is a short message".into(),
                "This is a short message".into(),
            ),
            ("empty message unchanged", String::new(), String::new()),
            (
                "exact max length message unchanged",
                "a".repeat(MAX_CONDITION_MESSAGE_LENGTH),
                "a".repeat(MAX_CONDITION_MESSAGE_LENGTH),
            ),
            (
                "message just over limit gets truncated",
                "a".repeat(MAX_CONDITION_MESSAGE_LENGTH + 1),
                format!("{}{TRUNCATION_SUFFIX}", "a".repeat(keep)),
            ),
            (
                "very long message gets truncated",
                format!("{words}finalword"),
                format!("{}{TRUNCATION_SUFFIX}", &words[..keep]),
            ),
            (
                "exactly at the limit in multi-byte characters unchanged",
                format!("{}{}", "a".repeat(MAX_CONDITION_MESSAGE_LENGTH - 3), "€"),
                format!("{}{}", "a".repeat(MAX_CONDITION_MESSAGE_LENGTH - 3), "€"),
            ),
            (
                "a character straddling the cut is dropped whole",
                format!("{}{}", "a".repeat(keep - 1), "€".repeat(20)),
                format!("{}{TRUNCATION_SUFFIX}", "a".repeat(keep - 1)),
            ),
            (
                "a character ending at the cut is kept",
                format!("{}{}", "a".repeat(keep - 3), "€".repeat(20)),
                format!("{}€{TRUNCATION_SUFFIX}", "a".repeat(keep - 3)),
            ),
        ];
        for (name, message, expected) in cases {
            let got = truncate_message(&message);
            assert_eq!(got, expected, "{name}");
            assert!(got.len() <= MAX_CONDITION_MESSAGE_LENGTH, "{name}");
            if message.len() > MAX_CONDITION_MESSAGE_LENGTH {
                assert!(got.ends_with(TRUNCATION_SUFFIX), "{name}");
                assert!(got.len() < message.len(), "{name}");
            } else {
                assert!(matches!(got, Cow::Borrowed(_)), "{name}: not copied");
            }
        }
    }

    /// Wherever a multi-byte character falls, the cut is valid UTF-8, within the limit, and
    /// drops at most that one character.
    #[test]
    fn truncate_cuts_on_a_character_boundary() {
        let keep = MAX_CONDITION_MESSAGE_LENGTH - TRUNCATION_SUFFIX.len();
        for offset in 0..4 {
            for wide in ["é", "€", "😀"] {
                let message = format!("{}{}", "a".repeat(keep - offset), wide.repeat(20000));
                let got = truncate_message(&message);
                assert!(got.len() <= MAX_CONDITION_MESSAGE_LENGTH, "{offset} {wide}");
                let body = got.strip_suffix(TRUNCATION_SUFFIX).expect("suffix");
                assert!(message.starts_with(body), "{offset} {wide}");
                assert!(body.len() + wide.len() > keep, "{offset} {wide}");
            }
        }
    }

    /// Escapes as Go's `%q` writes them; newlines and tabs kept; a long run of binary cut with
    /// the text after it kept; printable text of every script untouched (and not copied).
    #[test]
    fn sanitize_escapes_and_bounds_binary() {
        let tar_header = format!("ustar\0\x01\u{FFFD}{}", "\u{FFFD}a\x07".repeat(200));
        let cases: Vec<(&str, String, String)> = vec![
            (
                "plain ASCII",
                "pull failed: 404".into(),
                "pull failed: 404".into(),
            ),
            (
                "other scripts",
                "ошибка: 失败 é".into(),
                "ошибка: 失败 é".into(),
            ),
            (
                "newlines and tabs stay",
                "a\n\n\tb".into(),
                "a\n\n\tb".into(),
            ),
            (
                "control characters as Go escapes them",
                "a\0b\x07c\rd\x1be\x7ff\u{85}".into(),
                r"a\x00b\ac\rd\x1be\x7ff\u0085".into(),
            ),
            (
                "replacement and bidirectional characters",
                "x\u{FFFD}y \u{202E}evil\u{202C} \u{FEFF}".into(),
                r"x\ufffdy \u202eevil\u202c \ufeff".into(),
            ),
            (
                "tar's error quoting a garbage header",
                format!(
                    "reading layer: numeric field was not a number: {tar_header} when getting cksum for x"
                ),
                format!(
                    "reading layer: numeric field was not a number: ustar{}... [{} more characters of binary data] when getting cksum for x",
                    // Escapes are whole: the last one may end past the 64 bytes kept.
                    r"\x00\x01\ufffd\ufffda\a\ufffda\a\ufffda\a\ufffda\a\ufffda\a\ufffd",
                    3 + 600 - 19,
                ),
            ),
        ];
        for (name, input, expected) in cases {
            let got = sanitize_message(&input);
            assert_eq!(got, expected, "{name}");
            if input == expected {
                assert!(matches!(got, Cow::Borrowed(_)), "{name}: not copied");
            }
        }
    }

    /// Separate runs are bounded one by one; a run of binary of any length costs at most
    /// [`BINARY_RUN_KEEP`] bytes and a note.
    #[test]
    fn every_binary_run_is_bounded() {
        let junk: String = (0..5000u32)
            .map(|i| char::from_u32(i % 0x20).unwrap_or('\0'))
            .collect();
        let message = format!("first {junk} middle text that is long enough {junk} last");
        let got = sanitize_message(&message);
        assert!(got.starts_with("first "), "{got}");
        assert!(got.contains(" middle text that is long enough "), "{got}");
        assert!(got.ends_with(" last"), "{got}");
        assert_eq!(got.matches("more characters of binary data]").count(), 2);
        assert!(got.len() < 2 * (BINARY_RUN_KEEP + 60) + 60, "{}", got.len());
        assert!(!got.chars().any(is_unprintable));
    }

    #[test]
    fn bounded_messages_are_sanitized_then_cut() {
        assert!(matches!(bounded_message("fine"), Cow::Borrowed("fine")));
        let long = format!("\x01{}", "a".repeat(MAX_CONDITION_MESSAGE_LENGTH));
        let got = bounded_message(&long);
        assert!(got.starts_with(r"\x01aaa"));
        assert!(got.ends_with(TRUNCATION_SUFFIX));
        assert_eq!(got.len(), MAX_CONDITION_MESSAGE_LENGTH);
        assert_eq!(bounded_message(&got), got, "bounding is idempotent");
    }

    #[test]
    fn notes_are_sanitized_and_cut_at_char_boundaries() {
        assert_eq!(truncate_note("short"), "short");
        assert_eq!(truncate_note("a\0b"), r"a\x00b");
        let long = "é".repeat(600);
        let cut = truncate_note(&long);
        assert!(cut.len() <= EVENT_NOTE_LIMIT && cut.len() >= EVENT_NOTE_LIMIT - 1);
        assert!(long.starts_with(&cut));
    }

    /// Every message of a JSON status is bounded, wherever it sits; nothing else changes.
    #[test]
    fn status_messages_are_bounded_at_any_depth() {
        let long = "x".repeat(MAX_CONDITION_MESSAGE_LENGTH + 1);
        let bounded = truncate_message(&long).into_owned();
        let mut status = json!({
            "message": long,
            "reason": long,
            "conditions": [{"message": "fine\u{0}"}, {"message": 7}],
            "requirementStatus": [{"dependents": [{"message": long}]}],
        });
        assert!(bound_status_messages(&mut status));
        assert_eq!(
            status,
            json!({
                "message": bounded,
                "reason": long,
                "conditions": [{"message": r"fine\x00"}, {"message": 7}],
                "requirementStatus": [{"dependents": [{"message": bounded}]}],
            })
        );
        assert!(!bound_status_messages(&mut status), "already bounded");
    }

    /// A refused status keeps everything but its long messages, which keep their start and say
    /// why the whole was refused; short messages and other fields stay as they were.
    #[test]
    fn refused_statuses_are_shortened() {
        let long = "x".repeat(40_000);
        let why = "ClusterObjectSet.olm.operatorframework.io \"r\" is invalid: status.conditions[0].message: Too long: may not be more than 32768 bytes";
        let status = json!({
            "message": long,
            "phase": "Failed",
            "conditions": [
                {"type": "Progressing", "reason": "Retrying", "message": long},
                {"type": "Available", "reason": "Ok", "message": "short"},
            ],
        });
        let got = shorten_refused_status(&status, why).expect("shortened");
        let note = format!(
            "\n\n... [message shortened: the API server refused the status with the full message: {why}]"
        );
        let expected_message = format!("{}{note}", "x".repeat(REFUSED_MESSAGE_LIMIT - note.len()));
        assert_eq!(
            got,
            json!({
                "message": expected_message,
                "phase": "Failed",
                "conditions": [
                    {"type": "Progressing", "reason": "Retrying", "message": expected_message},
                    {"type": "Available", "reason": "Ok", "message": "short"},
                ],
            })
        );
        assert_eq!(
            shorten_refused_status(&got, why),
            None,
            "a shortened status has nothing left to shorten"
        );
        assert_eq!(
            shorten_refused_status(&json!({"message": "short"}), why),
            None,
            "short messages were not what the server refused"
        );
        let huge_why = format!("invalid: {}\0", "y".repeat(10_000));
        let got = shorten_refused_status(&json!({"message": long}), &huge_why).expect("shortened");
        let m = got["message"].as_str().expect("a message");
        assert_eq!(m.len(), REFUSED_MESSAGE_LIMIT);
        assert!(
            m.starts_with("xxx") && m.contains("full message: invalid: yyy"),
            "{m}"
        );
    }
}
