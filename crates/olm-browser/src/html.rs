//! HTML text: escaping, URL building, the page frame and Markdown made safe. Catalogs are
//! untrusted input, so every catalog string reaches a page through [`esc`] (text and attribute
//! values alike) or through [`markdown`], which renders raw HTML as text and keeps only web and
//! mail links.

use std::fmt::Write as _;

use pulldown_cmark::{CowStr, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd};

/// Where every page lives.
pub const PREFIX: &str = "/browse";

/// The Content-Security-Policy of every page: nothing inline, nothing from elsewhere; icons are
/// `data:` images.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// `s` escaped for HTML text and double- or single-quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    esc_into(s, &mut out);
    out
}

/// [`esc`] appended to `out`.
pub fn esc_into(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // A NUL is no character a page can hold (HTML parsers drop or replace it).
            '\0' => out.push('\u{FFFD}'),
            _ => out.push(c),
        }
    }
}

/// `s` escaped for display, shortened to `max` characters (with `…`) so that a hostile or
/// careless name cannot stretch a table; callers put the whole name in a `title`.
pub fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        esc(s)
    } else {
        let mut cut: String = s.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        esc(&cut)
    }
}

/// `s` as one URL path segment or query value: everything but unreserved characters
/// percent-encoded.
pub fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The address of a package page.
pub fn package_url(catalog: &str, package: &str) -> String {
    format!(
        "{PREFIX}/catalogs/{}/packages/{}",
        enc(catalog),
        enc(package)
    )
}

/// The address of a bundle page.
pub fn bundle_url(catalog: &str, package: &str, bundle: &str) -> String {
    format!("{}/bundles/{}", package_url(catalog, package), enc(bundle))
}

/// A whole page: the frame with navigation, `title` and `body` (already HTML).
pub fn page(title: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>{} · olm catalogs</title>", esc(title));
    let _ = writeln!(
        out,
        "<link rel=\"stylesheet\" href=\"{PREFIX}/static/style.css\">"
    );
    let _ = writeln!(
        out,
        "<script src=\"{PREFIX}/static/browser.js\" defer></script>"
    );
    out.push_str("</head>\n<body>\n<header><nav aria-label=\"Main\">");
    let _ = write!(
        out,
        "<a class=\"brand\" href=\"{PREFIX}/\">olm catalogs</a>\
         <form class=\"search\" role=\"search\" action=\"{PREFIX}/search\" method=\"get\">\
         <label for=\"q\" class=\"visually-hidden\">Search packages</label>\
         <input id=\"q\" name=\"q\" type=\"search\" placeholder=\"Search packages\">\
         <button type=\"submit\">Search</button></form>"
    );
    out.push_str("</nav></header>\n<main id=\"main\">\n");
    out.push_str(body);
    out.push_str("\n</main>\n</body>\n</html>\n");
    out
}

/// Markdown rendered to HTML that cannot carry script: raw HTML blocks and inline HTML become
/// text, links keep only `http`, `https` and `mailto` targets (others become plain text),
/// images become links to their source (pages load no remote images).
pub fn markdown(text: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    // Per open link or image: whether it was kept (its end is written only then).
    let mut kept: Vec<bool> = Vec::new();
    let mut events: Vec<Event<'_>> = Vec::new();
    for event in Parser::new_ext(text, options) {
        match event {
            Event::Html(s) | Event::InlineHtml(s) => events.push(Event::Text(s)),
            Event::Start(tag @ (Tag::Link { .. } | Tag::Image { .. })) => {
                let (dest_url, title, id, link_type) = match tag {
                    Tag::Link {
                        link_type,
                        dest_url,
                        title,
                        id,
                    } => (dest_url, title, id, link_type),
                    Tag::Image {
                        dest_url,
                        title,
                        id,
                        ..
                    } => (dest_url, title, id, LinkType::Inline),
                    _ => continue,
                };
                let keep = safe_url(&dest_url);
                kept.push(keep);
                if keep {
                    events.push(Event::Start(Tag::Link {
                        link_type,
                        dest_url,
                        title,
                        id,
                    }));
                }
            }
            // The page's own headings come first: a description's start two levels below.
            Event::Start(Tag::Heading {
                level,
                id,
                classes,
                attrs,
            }) => events.push(Event::Start(Tag::Heading {
                level: demoted(level),
                id,
                classes,
                attrs,
            })),
            Event::End(TagEnd::Heading(level)) => {
                events.push(Event::End(TagEnd::Heading(demoted(level))));
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                if kept.pop().unwrap_or(false) {
                    events.push(Event::End(TagEnd::Link));
                }
            }
            other => events.push(other),
        }
    }
    let mut out = String::with_capacity(text.len() * 5 / 4);
    pulldown_cmark::html::push_html(&mut out, events.into_iter());
    out
}

/// A description's heading level under the page's `<h1>` and `<h2>`: two levels down, at most
/// `<h6>`.
fn demoted(level: HeadingLevel) -> HeadingLevel {
    match level {
        HeadingLevel::H1 => HeadingLevel::H3,
        HeadingLevel::H2 => HeadingLevel::H4,
        HeadingLevel::H3 => HeadingLevel::H5,
        _ => HeadingLevel::H6,
    }
}

fn safe_url(url: &CowStr<'_>) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|p| lower.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_attributes_are_escaped() {
        assert_eq!(
            esc(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(enc("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
        assert_eq!(esc("a\0b"), "a\u{FFFD}b");
    }

    #[test]
    fn markdown_cannot_carry_script() {
        let html = markdown(
            "# Title\n\n<script>alert(1)</script>\n\nText <img src=x onerror=alert(1)> \
             [ok](https://example.com) [bad](javascript:alert(1)) ![i](data:image/svg+xml,x)\n",
        );
        assert!(html.contains("<h3>Title</h3>"), "{html}");
        let levels = markdown("# a\n## b\n### c\n#### d\n###### e\n");
        assert_eq!(
            levels,
            "<h3>a</h3>\n<h4>b</h4>\n<h5>c</h5>\n<h6>d</h6>\n<h6>e</h6>\n"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"https://example.com\">ok</a>"),
            "{html}"
        );
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("data:image"), "{html}");
        assert!(
            !html.contains("<script") && !html.contains("<img"),
            "{html}"
        );
        // Nested: every kept opening has its closing, nothing unsafe survives.
        for nested in [
            "[![i](https://example.com/i.png)](javascript:x)",
            "[![i](javascript:y)](https://example.com)",
            "[a [b](javascript:z) c](https://example.com)",
        ] {
            let html = markdown(nested);
            assert_eq!(
                html.matches("<a ").count(),
                html.matches("</a>").count(),
                "{html}"
            );
            assert!(!html.contains("javascript:"), "{html}");
        }
    }
}
