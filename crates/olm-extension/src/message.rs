//! Condition messages of a ClusterExtension as users read them: without the socket addresses
//! that change on every retry, and without the "terminal error: " marker that the condition's
//! reason already conveys.
//!
//! Messages made from errors (the `Progressing` condition's) go through
//! [`sanitize_network_error`], and those of terminal errors through [`strip_terminal_prefix`]
//! first. Bounding every message to what the API server accepts is not done here but where every
//! controller's conditions are set: [`olm_k8s::bounded_message`].

use std::borrow::Cow;

/// The marker controller-runtime puts in front of a terminal error's text.
pub const TERMINAL_ERROR_PREFIX: &str = "terminal error: ";

/// Removes one leading [`TERMINAL_ERROR_PREFIX`]: a condition whose reason is `Blocked` or
/// `InvalidConfiguration` already says the error is terminal.
pub fn strip_terminal_prefix(message: &str) -> &str {
    message
        .strip_prefix(TERMINAL_ERROR_PREFIX)
        .unwrap_or(message)
}

/// Removes every `read|write tcp|udp <src>-><dst>` fragment (and the `": "` after it) from an
/// error message, so that retries which differ only in an ephemeral source port produce the
/// same message and do not rewrite the status each time.
///
/// The fragments removed are exactly those upstream's pattern matches:
///
/// ```text
/// (read|write) (tcp|udp) ADDR->ADDR(: )?
/// ADDR = ( [0-9]{1,3}(\.[0-9]{1,3}){3} | \[[0-9a-fA-F:]+\] ) (:[0-9]+)?
/// ```
///
/// scanned left to right, non-overlapping, anywhere in the text (no word boundaries). A
/// `dial tcp A->B` fragment is kept: only reads and writes carry a fresh source port per
/// attempt. Returns the input borrowed when nothing matched.
pub fn sanitize_network_error(message: &str) -> Cow<'_, str> {
    let bytes = message.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(end) = match_fragment(bytes, i) {
            let o = out.get_or_insert_with(|| String::with_capacity(message.len()));
            // Fragments start and end on ASCII bytes, so these are character boundaries.
            o.push_str(&message[copied..i]);
            copied = end;
            i = end;
        } else {
            i += 1;
        }
    }
    match out {
        None => Cow::Borrowed(message),
        Some(mut o) => {
            o.push_str(&message[copied..]);
            Cow::Owned(o)
        }
    }
}

/// The end of a fragment starting at `at`, if one does.
fn match_fragment(b: &[u8], at: usize) -> Option<usize> {
    let rest = &b[at..];
    let op = if rest.starts_with(b"read ") {
        5
    } else if rest.starts_with(b"write ") {
        6
    } else {
        return None;
    };
    let mut i = at + op;
    if b[i..].starts_with(b"tcp ") || b[i..].starts_with(b"udp ") {
        i += 4;
    } else {
        return None;
    }
    i = match_addr(b, i)?;
    if !b[i..].starts_with(b"->") {
        return None;
    }
    i = match_addr(b, i + 2)?;
    if b[i..].starts_with(b": ") {
        i += 2;
    }
    Some(i)
}

/// An IPv4 or bracketed IPv6 address with an optional port, matched greedily. Greedy is what
/// the leftmost-first pattern does here: each repeated class is followed by a byte outside it,
/// so giving back a byte can never let the rest match.
fn match_addr(b: &[u8], at: usize) -> Option<usize> {
    let mut i = if b.get(at) == Some(&b'[') {
        let start = at + 1;
        let end = start
            + b[start..]
                .iter()
                .take_while(|c| c.is_ascii_hexdigit() || **c == b':')
                .count();
        if end == start || b.get(end) != Some(&b']') {
            return None;
        }
        end + 1
    } else {
        let mut i = digits(b, at, 3)?;
        for _ in 0..3 {
            if b.get(i) != Some(&b'.') {
                return None;
            }
            i = digits(b, i + 1, 3)?;
        }
        i
    };
    if b.get(i) == Some(&b':')
        && let Some(end) = digits(b, i + 1, usize::MAX)
    {
        i = end;
    }
    Some(i)
}

/// The end of a run of 1..=`max` ASCII digits at `at`.
fn digits(b: &[u8], at: usize, max: usize) -> Option<usize> {
    let n = b
        .get(at..)?
        .iter()
        .take(max)
        .take_while(|c| c.is_ascii_digit())
        .count();
    (n > 0).then_some(at + n)
}
