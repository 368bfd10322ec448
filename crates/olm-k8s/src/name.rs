//! Kubernetes name and label-value checks, as `k8s.io/apimachinery/pkg/util/validation` performs
//! them: the same rules, the same error texts in the same order.
//!
//! Each check returns every problem, like upstream's `[]string`, so callers can join them the way
//! the Go code they imitate does (`"; "`, `","`, `%v`). The texts are [`NameError`]'s `Display`.
//! Matching is hand-written over bytes rather than by regex: these run on every name of every
//! bundle and catalog, and the patterns are simple enough that a differential test against the
//! regex (in this module's tests) pins them together.

/// Upstream's `dns1123LabelFmt`, unanchored: how the messages print it.
macro_rules! label_fmt {
    () => {
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
    };
}

/// Upstream's `dns1123SubdomainFmt`, unanchored.
macro_rules! subdomain_fmt {
    () => {
        concat!(label_fmt!(), r"(\.", label_fmt!(), ")*")
    };
}

/// Upstream's `qualifiedNameFmt` name part, unanchored.
macro_rules! qualified_name_fmt {
    () => {
        "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
    };
}

/// Upstream's `labelValueFmt`, unanchored.
macro_rules! label_value_fmt {
    () => {
        concat!("(", qualified_name_fmt!(), ")?")
    };
}

/// Anchored DNS-1123 label regex, for CRD `pattern`s and CEL `matches()`.
pub const DNS1123_LABEL_PATTERN: &str = concat!("^", label_fmt!(), "$");
/// Anchored DNS-1123 subdomain regex: dot-separated DNS-1123 labels.
pub const DNS1123_SUBDOMAIN_PATTERN: &str = concat!("^", subdomain_fmt!(), "$");
/// Anchored label value regex (the empty string matches).
pub const LABEL_VALUE_PATTERN: &str = concat!("^", label_value_fmt!(), "$");
/// `metav1.Condition`'s `type` pattern: an optional DNS-1123 subdomain prefix and `/`, then a
/// qualified name.
pub const CONDITION_TYPE_PATTERN: &str =
    concat!("^(", subdomain_fmt!(), "/)?(", qualified_name_fmt!(), ")$");
/// `metav1.Condition`'s `reason` pattern: CamelCase-ish identifiers, commas and colons allowed.
pub const CONDITION_REASON_PATTERN: &str = "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

/// `DNS1123LabelMaxLength`: namespaces, and names that become DNS labels.
pub const DNS1123_LABEL_MAX_LEN: usize = 63;
/// `DNS1123SubdomainMaxLength`: most object names.
pub const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;
/// `LabelValueMaxLength`.
pub const LABEL_VALUE_MAX_LEN: usize = 63;

const LABEL_MESSAGE: &str = concat!(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
     and must start and end with an alphanumeric character \
     (e.g. 'my-name',  or '123-abc', regex used for validation is '",
    label_fmt!(),
    "')"
);
const SUBDOMAIN_MESSAGE: &str = concat!(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
     '-' or '.', and must start and end with an alphanumeric character \
     (e.g. 'example.com', regex used for validation is '",
    subdomain_fmt!(),
    "')"
);
const LABEL_VALUE_MESSAGE: &str = concat!(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' \
     or '.', and must start and end with an alphanumeric character \
     (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '",
    label_value_fmt!(),
    "')"
);

/// One problem with a name, worded as apimachinery words it.
///
/// The regex messages are upstream's `RegexError(msg, fmt, examples...)` output, including its
/// two spaces before each `or` (it appends `"', "` after an example and then `" or "`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// `MaxLenError(max)`.
    #[error("must be no more than {max} characters")]
    TooLong {
        /// The limit that was exceeded, in bytes (Go's `len`).
        max: usize,
    },
    /// A valid subdomain given where a label is required.
    #[error("must not contain dots")]
    ContainsDots,
    /// Not matching [`DNS1123_LABEL_PATTERN`].
    #[error("{}", LABEL_MESSAGE)]
    NotDns1123Label,
    /// Not matching [`DNS1123_SUBDOMAIN_PATTERN`].
    #[error("{}", SUBDOMAIN_MESSAGE)]
    NotDns1123Subdomain,
    /// Not matching [`LABEL_VALUE_PATTERN`].
    #[error("{}", LABEL_VALUE_MESSAGE)]
    NotLabelValue,
}

/// `validation.IsDNS1123Label`: the length limit, then the pattern; a name that would be a valid
/// subdomain is told it must not contain dots rather than shown the regex.
pub fn dns1123_label_errors(value: &str) -> Vec<NameError> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LEN {
        errs.push(NameError::TooLong {
            max: DNS1123_LABEL_MAX_LEN,
        });
    }
    if !is_label_shaped(value) {
        errs.push(if is_subdomain_shaped(value) {
            NameError::ContainsDots
        } else {
            NameError::NotDns1123Label
        });
    }
    errs
}

/// `validation.IsDNS1123Subdomain`: the length limit, then the pattern.
pub fn dns1123_subdomain_errors(value: &str) -> Vec<NameError> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LEN {
        errs.push(NameError::TooLong {
            max: DNS1123_SUBDOMAIN_MAX_LEN,
        });
    }
    if !is_subdomain_shaped(value) {
        errs.push(NameError::NotDns1123Subdomain);
    }
    errs
}

/// `validation.IsValidLabelValue`: the length limit, then the pattern (empty is valid).
pub fn label_value_errors(value: &str) -> Vec<NameError> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LEN {
        errs.push(NameError::TooLong {
            max: LABEL_VALUE_MAX_LEN,
        });
    }
    if !is_label_value_shaped(value) {
        errs.push(NameError::NotLabelValue);
    }
    errs
}

/// Whether `value` is a DNS-1123 label, length included (namespace names).
pub fn is_dns1123_label(value: &str) -> bool {
    value.len() <= DNS1123_LABEL_MAX_LEN && is_label_shaped(value)
}

/// Whether `value` is a DNS-1123 subdomain, length included (most object names).
pub fn is_dns1123_subdomain(value: &str) -> bool {
    value.len() <= DNS1123_SUBDOMAIN_MAX_LEN && is_subdomain_shaped(value)
}

/// Whether `value` matches [`DNS1123_LABEL_PATTERN`], whatever its length: what a JSON Schema
/// `pattern` checks when `maxLength` is a separate keyword with its own message.
pub fn matches_dns1123_label_pattern(value: &str) -> bool {
    is_label_shaped(value)
}

fn is_label_shaped(value: &str) -> bool {
    let b = value.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

fn is_subdomain_shaped(value: &str) -> bool {
    value.split('.').all(is_label_shaped)
}

fn is_label_value_shaped(value: &str) -> bool {
    let b = value.as_bytes();
    b.is_empty()
        || (b.first().is_some_and(u8::is_ascii_alphanumeric)
            && b.last().is_some_and(u8::is_ascii_alphanumeric)
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(errs: Vec<NameError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    /// The texts apimachinery's `IsDNS1123Label` returns (validation_test.go's cases), message by
    /// message: label regex text, "must not contain dots" for a valid subdomain, length first.
    #[test]
    fn dns1123_label_matches_apimachinery() {
        const REGEX: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        let long = "a".repeat(64);
        let cases: &[(&str, &[&str])] = &[
            ("a", &[]),
            ("ab", &[]),
            ("abc", &[]),
            ("a1", &[]),
            ("a-1", &[]),
            ("a--1--2--b", &[]),
            ("0", &[]),
            ("01", &[]),
            ("1-0", &[]),
            (&long[..63], &[]),
            ("", &[REGEX]),
            ("A", &[REGEX]),
            ("ABC", &[REGEX]),
            ("aBc", &[REGEX]),
            ("A1", &[REGEX]),
            ("-", &[REGEX]),
            ("a-", &[REGEX]),
            ("-a", &[REGEX]),
            ("1-", &[REGEX]),
            ("_", &[REGEX]),
            ("a_b", &[REGEX]),
            ("a b", &[REGEX]),
            ("a@b", &[REGEX]),
            ("a.", &[REGEX]),
            (".a", &[REGEX]),
            ("a..b", &[REGEX]),
            ("a.b", &["must not contain dots"]),
            ("foo.bar", &["must not contain dots"]),
            (&long, &["must be no more than 63 characters"]),
            (
                &format!("{}.b", &long[..62]),
                &[
                    "must be no more than 63 characters",
                    "must not contain dots",
                ],
            ),
            ("é", &[REGEX]),
        ];
        for (value, want) in cases {
            assert_eq!(texts(dns1123_label_errors(value)), *want, "{value:?}");
            assert_eq!(is_dns1123_label(value), want.is_empty(), "{value:?}");
        }
    }

    /// The texts apimachinery's `IsDNS1123Subdomain` returns: the 253-byte limit (in bytes, Go's
    /// `len`) and the subdomain regex text, both when both apply.
    #[test]
    fn dns1123_subdomain_matches_apimachinery() {
        const REGEX: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        const LONG: &str = "must be no more than 253 characters";
        let max = "a".repeat(253);
        let over = "a".repeat(254);
        let over_bad = format!("{}-", "a".repeat(253));
        let cases: &[(&str, &[&str])] = &[
            ("a", &[]),
            ("a.b.c.d.e", &[]),
            ("aa.bb.cc", &[]),
            ("a1.b2.c3", &[]),
            ("a-1.b-2", &[]),
            ("0.a", &[]),
            ("operatorhubio", &[]),
            (&max, &[]),
            ("", &[REGEX]),
            ("A", &[REGEX]),
            ("a.B", &[REGEX]),
            ("-", &[REGEX]),
            ("a-", &[REGEX]),
            ("-a.b", &[REGEX]),
            (".", &[REGEX]),
            ("..", &[REGEX]),
            ("a.", &[REGEX]),
            (".a", &[REGEX]),
            ("a..b", &[REGEX]),
            ("a.-b", &[REGEX]),
            ("a_b", &[REGEX]),
            ("a/b", &[REGEX]),
            ("ä", &[REGEX]),
            (&over, &[LONG]),
            (&over_bad, &[LONG, REGEX]),
        ];
        for (value, want) in cases {
            assert_eq!(texts(dns1123_subdomain_errors(value)), *want, "{value:?}");
            assert_eq!(is_dns1123_subdomain(value), want.is_empty(), "{value:?}");
        }
    }

    /// The texts apimachinery's `IsValidLabelValue` returns: empty is valid, upper case and `_`
    /// and `.` allowed inside, alphanumeric at both ends, 63 bytes at most.
    #[test]
    fn label_value_matches_apimachinery() {
        const REGEX: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("simple", &[]),
            ("now-with-dashes", &[]),
            ("1-starts-with-num", &[]),
            ("end-with-num-1", &[]),
            ("1234", &[]),
            ("MixedCase_under.dot", &[]),
            (&"a".repeat(63), &[]),
            ("-a", &[REGEX]),
            ("a-", &[REGEX]),
            ("_a", &[REGEX]),
            (".a", &[REGEX]),
            ("a b", &[REGEX]),
            ("a/b", &[REGEX]),
            (&"a".repeat(64), &["must be no more than 63 characters"]),
        ];
        for (value, want) in cases {
            assert_eq!(texts(label_value_errors(value)), *want, "{value:?}");
        }
    }

    #[test]
    fn patterns_are_upstreams() {
        assert_eq!(DNS1123_LABEL_PATTERN, "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
        assert_eq!(
            DNS1123_SUBDOMAIN_PATTERN,
            r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
        );
        assert_eq!(
            CONDITION_TYPE_PATTERN,
            r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
        );
    }

    /// Strings over an alphabet that exercises every rule: both cases, digits, the three
    /// punctuation marks the patterns treat specially, and one that no pattern allows.
    fn name_like() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[aZ0._/-]{0,8}").expect("a valid strategy regex")
    }

    proptest! {
        /// The byte matchers accept exactly what the published patterns (used in CRDs and by the
        /// API server) accept.
        #[test]
        fn matchers_agree_with_the_patterns(s in name_like()) {
            let label = regex::Regex::new(DNS1123_LABEL_PATTERN).expect("pattern");
            let subdomain = regex::Regex::new(DNS1123_SUBDOMAIN_PATTERN).expect("pattern");
            let value = regex::Regex::new(LABEL_VALUE_PATTERN).expect("pattern");
            prop_assert_eq!(matches_dns1123_label_pattern(&s), label.is_match(&s));
            prop_assert_eq!(is_dns1123_subdomain(&s), subdomain.is_match(&s));
            prop_assert_eq!(label_value_errors(&s).is_empty(), value.is_match(&s));
        }
    }
}
