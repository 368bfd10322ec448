//! go-yaml's words for a YAML syntax error. The parser here is not libyaml, whose port go-yaml
//! is, so its errors are told apart by kind and worded as libyaml's `problem` (the only part
//! go-yaml prints: `yaml: line N: <problem>`); the location stays the caller's.

use granit_parser::{ErrorKind, ScanError};

/// libyaml's problem for the error `e` met while reading `text`.
pub(crate) fn go_yaml_problem(e: &ScanError, text: &str) -> String {
    use ErrorKind as K;
    let fixed = match e.kind() {
        K::UnexpectedCharacter { .. } => "found character that cannot start any token",
        K::UnclosedQuotedScalar => "found unexpected end of stream",
        K::DocumentIndicatorInQuotedScalar => "found unexpected document indicator",
        K::UnknownQuotedScalarEscape => "found unknown escape character",
        K::InvalidQuotedScalarHexEscape | K::InvalidLowSurrogateHexEscape => {
            // libyaml's own spelling.
            "did not find expected hexdecimal number"
        }
        K::InvalidUnicodeEscape
        | K::InvalidLowSurrogate
        | K::MissingLowSurrogate
        | K::UnpairedLowSurrogate => "found invalid Unicode character escape code",
        K::TabInPlainScalar | K::TabInIndentation | K::TabNotAllowed | K::TabInBlockIndentation => {
            "found a tab character that violates indentation"
        }
        K::TabAtBlockScalarStart => "found a tab character where an indentation space is expected",
        K::SimpleKeyExpected | K::InvalidSimpleKey => "could not find expected ':'",
        K::MappingValueNotAllowed | K::InvalidColonPlacement => {
            "mapping values are not allowed in this context"
        }
        K::BlockSequenceEntryNotAllowed => "block sequence entries are not allowed in this context",
        K::MappingKeyNotAllowed => "mapping keys are not allowed in this context",
        K::MissingAnchorOrAliasName => "did not find expected alphabetic or numeric character",
        K::InvalidTagTerminator | K::InvalidTagDirectiveTerminator => {
            "did not find expected whitespace or line break"
        }
        K::UnclosedVerbatimTag => "did not find the expected '>'",
        K::ZeroBlockScalarIndent => "found an indentation indicator equal to 0",
        K::InvalidBlockScalarHeader | K::InvalidDirectiveTerminator => {
            "did not find expected comment or line break"
        }
        K::ExpectedNodeContent | K::BlockEntryInFlowCollection | K::MisplacedFlowCollectionEnd => {
            "did not find expected node content"
        }
        K::ExpectedBlockMappingKey => "did not find expected key",
        K::ExpectedBlockSequenceEntry => "did not find expected '-' indicator",
        K::ExpectedFlowMappingSeparator | K::UnexpectedEofFlowMapping => {
            "did not find expected ',' or '}'"
        }
        K::ExpectedFlowSequenceSeparator | K::UnexpectedEofFlowSequence => {
            "did not find expected ',' or ']'"
        }
        K::MismatchedFlowCollectionEnd { open, .. } => return separator_expected(*open),
        K::UndeclaredTagHandle => "found undefined tag handle",
        K::ExpectedDocumentStart => "did not find expected <document start>",
        K::UnclosedFlowCollection { open } => {
            // libyaml meets the end of the stream where it wants the next entry (after the
            // bracket or a comma) or a separator (after an entry).
            return match text.trim_end().chars().last() {
                Some('[' | '{' | ',') => "did not find expected node content".to_owned(),
                _ => separator_expected(*open),
            };
        }
        // go-yaml's decoder, not libyaml, reports these, without a line.
        K::UnknownAnchor => return format!("unknown anchor '{}' referenced", alias_at(e, text)),
        _ => return e.info(),
    };
    fixed.to_owned()
}

/// The line to name for `e`: where the parser found it, except that a tab inside a plain scalar
/// that runs on over lines is named on the tab's own line (the parser points at the scalar).
pub(crate) fn line_of(e: &ScanError, text: &str) -> usize {
    let m = e.marker();
    if matches!(e.kind(), ErrorKind::TabInPlainScalar) {
        let mut line = m.line();
        for c in text.chars().skip(m.index()) {
            match c {
                '\t' => return line,
                '\n' => line += 1,
                _ => {}
            }
        }
    }
    m.line()
}

fn separator_expected(open: char) -> String {
    let close = if open == '{' { '}' } else { ']' };
    format!("did not find expected ',' or '{close}'")
}

/// The name of the alias the error points at (`*name`), as go-yaml quotes it.
fn alias_at(e: &ScanError, text: &str) -> String {
    let rest: String = text.chars().skip(e.marker().index()).collect();
    let Some(start) = rest.find('*') else {
        return String::new();
    };
    rest[start + 1..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | '[' | ']' | '{' | '}'))
        .collect()
}
