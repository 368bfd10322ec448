//! The API server's warnings (`Warning: 299 - "…"` response headers, such as "v1beta1 X is
//! deprecated"), kept so a controller can tell the user which of its writes drew them.
//!
//! kube-rs reads no warning headers, so [`Warnings::wrap`] wraps a client: every response passes
//! through unchanged, and each warning it carries is kept until [`Warnings::take`]. The wrapper
//! sends through the client it wraps, so it shares that client's connections, credentials and
//! impersonation.
//!
//! Parsing follows client-go (`k8s.io/apimachinery/pkg/util/net` `ParseWarningHeaders`), and,
//! as client-go's warning handlers are given, only code 299 ("miscellaneous persistent
//! warning", the one the API server and admission webhooks send) is kept. Caveat: client-go
//! also decodes RFC 2047 encoded text, which the API server never writes (its
//! `NewWarningHeader` quotes plain UTF-8); such text is kept as written.

use std::sync::{Arc, Mutex};

use http::{Request, Response};
use kube::client::Body;

/// The most warnings kept between two [`Warnings::take`]s: a hostile webhook cannot make a
/// controller hold unbounded text. What is over is counted, not kept.
pub const MAX_KEPT: usize = 100;

/// Warnings seen on the responses of the clients it [`wrap`](Warnings::wrap)s, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Warnings(Arc<Mutex<Kept>>);

#[derive(Debug, Default)]
struct Kept {
    texts: Vec<String>,
    dropped: usize,
}

impl Warnings {
    /// The warnings seen since the last call, oldest first, and how many more were seen
    /// beyond [`MAX_KEPT`]; both start again from none.
    pub fn take(&self) -> (Vec<String>, usize) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let taken = std::mem::take(&mut *kept);
        (taken.texts, taken.dropped)
    }

    fn keep(&self, texts: impl IntoIterator<Item = String>) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for text in texts {
            if kept.texts.len() < MAX_KEPT {
                kept.texts.push(text);
            } else {
                kept.dropped += 1;
            }
        }
    }
}

impl Warnings {
    /// A client that sends through `client` and keeps here the code-299 warnings of every
    /// response. Clients wrapped by one `Warnings` share what it keeps.
    pub fn wrap(&self, client: &kube::Client) -> kube::Client {
        let inner = client.clone();
        let seen = self.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let inner = inner.clone();
            let seen = seen.clone();
            async move {
                let response: Response<Body> = inner.send(request).await?;
                let headers = response
                    .headers()
                    .get_all(http::header::WARNING)
                    .iter()
                    .filter_map(|v| std::str::from_utf8(v.as_bytes()).ok());
                seen.keep(
                    headers
                        .flat_map(parse_all)
                        .filter(|w| w.code == 299)
                        .map(|w| w.text),
                );
                Ok::<_, kube::Error>(response)
            }
        });
        kube::Client::new(service, client.default_namespace().to_owned())
    }
}

/// One warning of a `Warning` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// `warn-code`, three digits.
    pub code: u16,
    /// `warn-agent` (`-` from the API server).
    pub agent: String,
    /// `warn-text`, unquoted.
    pub text: String,
}

/// Every warning one header value holds, in order, up to the first that does not parse (as
/// client-go's `ParseWarningHeaders`: the rest of that value is dropped).
pub fn parse_all(header: &str) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut rest = header;
    while !rest.is_empty() {
        match parse(rest) {
            Ok((warning, remainder)) => {
                out.push(warning);
                rest = remainder;
            }
            Err(_) => break,
        }
    }
    out
}

/// The first warning of `header` and what follows it (after a separating comma), or why it
/// does not parse, in client-go's words (`ParseWarningHeader`).
pub fn parse(header: &str) -> Result<(Warning, &str), &'static str> {
    let header = header.trim();
    let mut parts = header.splitn(3, ' ');
    let (Some(code), Some(agent), Some(text_and_rest)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err("invalid warning header: fewer than 3 segments");
    };
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err("invalid warning header: code segment is not 3 digits between 100-299");
    }
    let code: u16 = code
        .parse()
        .map_err(|_| "invalid warning header: code segment is not 3 digits between 100-299")?;
    if agent.is_empty() {
        return Err("invalid warning header: empty agent segment");
    }
    if agent.chars().any(char::is_control) {
        return Err("invalid warning header: invalid agent");
    }
    if text_and_rest.is_empty() {
        return Err("invalid warning header: empty text segment");
    }
    let (text, after) = quoted(text_and_rest)?;
    if text.chars().any(char::is_control) {
        return Err("invalid warning header: invalid text");
    }
    let mut remainder = after;
    if let Some(date) = after.strip_prefix('"') {
        let end = date
            .find('"')
            .ok_or("invalid warning header: unterminated date segment")?;
        remainder = date[end + 1..].trim();
    }
    if !remainder.is_empty() {
        remainder = remainder
            .strip_prefix(',')
            .ok_or("invalid warning header: unexpected token after warn-date")?
            .trim();
    }
    let warning = Warning {
        code,
        agent: agent.to_owned(),
        text,
    };
    Ok((warning, remainder))
}

/// A quoted string with backslash escapes, and what follows it (trimmed).
fn quoted(s: &str) -> Result<(String, &str), &'static str> {
    let body = s
        .strip_prefix('"')
        .ok_or("invalid warning header: invalid quoted string: missing initial quote")?;
    let mut text = String::new();
    let mut escaping = false;
    for (i, c) in body.char_indices() {
        match c {
            '"' if !escaping => return Ok((text, body[i + 1..].trim())),
            '\\' if !escaping => escaping = true,
            _ => {
                text.push(c);
                escaping = false;
            }
        }
    }
    Err("invalid warning header: invalid quoted string: missing closing quote")
}

#[cfg(test)]
mod tests;
