//! Keeping a template's comments and blank lines across an edit.
//!
//! The edit works on data, and the edited template is written by the YAML emitter, which knows
//! nothing of comments. So the author's text is carried over afterwards: every content line of
//! the original is reduced to its tokens (indentation, quotes and spaces ignored), the original's
//! and the new text's lines are aligned as a diff, and each comment or blank line goes back in
//! front of the line it preceded, each trailing `# comment` back behind its line (also where the
//! edit rewrote lines one for one, as a substitution does). A line the edit removed takes its
//! comments with it; a line the emitter writes differently (a flow list
//! rewritten in block style) cannot be matched, and its comments are lost — "where it can".

use similar::{Algorithm, DiffOp, capture_diff_slices};

/// One content line of the original and what came with it.
struct Anchor {
    /// The line reduced to its tokens, for matching.
    key: String,
    /// Its indentation.
    indent: usize,
    /// Comment and blank lines before it, as written.
    leading: Vec<String>,
    /// Its trailing comment with the spaces before it (`  # note`).
    trailing: Option<String>,
}

/// `rendered` (the emitter's text for the edited template) with the comments and blank lines of
/// `original` put back where their lines still are.
pub(super) fn keep_comments(original: &str, rendered: &str) -> String {
    let (anchors, tail) = anchors(original);
    if anchors
        .iter()
        .all(|a| a.leading.is_empty() && a.trailing.is_none())
        && tail.is_empty()
    {
        return rendered.to_owned();
    }
    let new_lines: Vec<&str> = rendered.lines().collect();
    let old_keys: Vec<&str> = anchors.iter().map(|a| a.key.as_str()).collect();
    let new_keys: Vec<String> = new_lines.iter().map(|l| key(l)).collect();
    let new_keys: Vec<&str> = new_keys.iter().map(String::as_str).collect();
    let mut from = vec![None; new_lines.len()];
    for op in capture_diff_slices(Algorithm::Patience, &old_keys, &new_keys) {
        // Equal lines, and lines rewritten one for one (a substituted name), keep their comments.
        let (old_index, new_index, len) = match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => (old_index, new_index, len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } if old_len == new_len => (old_index, new_index, old_len),
            _ => continue,
        };
        for i in 0..len {
            from[new_index + i] = Some(old_index + i);
        }
    }
    let mut out = String::with_capacity(original.len().max(rendered.len()) + 64);
    for (line, old) in new_lines.iter().zip(from) {
        if let Some(anchor) = old.map(|i| &anchors[i]) {
            let indent = indent_of(line);
            for extra in &anchor.leading {
                out.push_str(&reindent(extra, anchor.indent, indent));
                out.push('\n');
            }
            out.push_str(line);
            if let Some(comment) = &anchor.trailing {
                out.push_str(comment);
            }
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    for extra in &tail {
        out.push_str(extra);
        out.push('\n');
    }
    out
}

/// The content lines of `text` with their comments, and the comment or blank lines after the
/// last one.
fn anchors(text: &str) -> (Vec<Anchor>, Vec<String>) {
    let mut anchors = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    // Inside a block scalar (`|`, `>`): lines indented deeper than this are text, not YAML.
    let mut scalar_indent: Option<usize> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        let indent = indent_of(line);
        if let Some(parent) = scalar_indent {
            if trimmed.is_empty() || indent > parent {
                anchors.push(Anchor {
                    key: key(line),
                    indent,
                    leading: std::mem::take(&mut pending),
                    trailing: None,
                });
                continue;
            }
            scalar_indent = None;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed == "---" {
            pending.push(line.to_owned());
            continue;
        }
        let (code, trailing) = split_comment(line);
        if opens_block_scalar(code) {
            scalar_indent = Some(indent);
        }
        anchors.push(Anchor {
            key: key(code),
            indent,
            leading: std::mem::take(&mut pending),
            trailing: trailing.map(str::to_owned),
        });
    }
    (anchors, pending)
}

/// A line's tokens: without spaces and quote marks, so `- name: "a"` matches `- name: a`.
fn key(line: &str) -> String {
    line.chars()
        .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
        .collect()
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// A comment or blank line moved from under a line indented `was` to one indented `now`, keeping
/// its offset from that line.
fn reindent(extra: &str, was: usize, now: usize) -> String {
    let trimmed = extra.trim_start_matches(' ');
    if trimmed.is_empty() || trimmed == "---" {
        return trimmed.to_owned();
    }
    let offset = indent_of(extra) as isize - was as isize;
    let indent = (now as isize + offset).max(0) as usize;
    format!("{}{trimmed}", " ".repeat(indent))
}

/// Splits `line` before a trailing comment: a `#` after a space, outside quotes.
fn split_comment(line: &str) -> (&str, Option<&str>) {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if (c == '"' || c == '\'') && matches!(previous, ' ' | ':' | '-' | '[' | ',') => {
                quote = Some(c);
            }
            None if c == '#' && previous.is_whitespace() => {
                let code = line[..i].trim_end();
                return (code, Some(&line[code.len()..]));
            }
            None => {}
        }
        previous = c;
    }
    (line, None)
}

/// Whether the line ends in a block scalar indicator (`key: |`, `- >-`, `key: |2+`).
fn opens_block_scalar(code: &str) -> bool {
    let last = code.rsplit([' ', '\t']).next().unwrap_or_default();
    let mut chars = last.chars();
    matches!(chars.next(), Some('|' | '>'))
        && chars.all(|c| c == '-' || c == '+' || c.is_ascii_digit())
        && code.len() > last.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_follow_their_lines() {
        let original = "# the operator's template\n\
                        schema: olm.template.basic\n\
                        entries:\n\
                        \x20 # the package\n\
                        \x20 - schema: olm.package\n\
                        \x20   name: foo  # keep\n\
                        \n\
                        \x20 - schema: olm.channel\n\
                        \x20   name: \"stable\"\n\
                        \x20   entries:\n\
                        \x20     # first\n\
                        \x20     - name: foo.v1\n\
                        \x20     # removed below\n\
                        \x20     - name: foo.v2 # gone\n\
                        # the end\n";
        let rendered = "schema: olm.template.basic\n\
                        entries:\n\
                        - schema: olm.package\n\
                        \x20 name: foo\n\
                        - schema: olm.channel\n\
                        \x20 name: stable\n\
                        \x20 entries:\n\
                        \x20 - name: foo.v1\n";
        let expected = "# the operator's template\n\
                        schema: olm.template.basic\n\
                        entries:\n\
                        # the package\n\
                        - schema: olm.package\n\
                        \x20 name: foo  # keep\n\
                        \n\
                        - schema: olm.channel\n\
                        \x20 name: stable\n\
                        \x20 entries:\n\
                        \x20 # first\n\
                        \x20 - name: foo.v1\n\
                        # the end\n";
        assert_eq!(keep_comments(original, rendered), expected);
    }

    #[test]
    fn hashes_in_text_are_not_comments() {
        assert_eq!(
            split_comment("a: 'b # c'  # d"),
            ("a: 'b # c'", Some("  # d"))
        );
        assert_eq!(split_comment("a: b#c"), ("a: b#c", None));
        assert_eq!(split_comment("a: \"x\" #y"), ("a: \"x\"", Some(" #y")));
        let original = "description: |\n  # not a comment\n  text\nname: x # yes\n";
        let rendered = "description: |\n  # not a comment\n  text\nname: x\n";
        assert_eq!(keep_comments(original, rendered), original);
    }

    #[test]
    fn without_comments_the_rendering_is_kept() {
        assert_eq!(
            keep_comments("a: 1\nb: 2\n", "a: 1\nb: 3\n"),
            "a: 1\nb: 3\n"
        );
        assert!(opens_block_scalar("key: |-"));
        assert!(opens_block_scalar("- >2"));
        assert!(!opens_block_scalar("|"));
        assert!(!opens_block_scalar("key: a|"));
    }
}
