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

/// Upstream's `dns1035LabelFmt`, unanchored.
macro_rules! dns1035_fmt {
    () => {
        "[a-z]([-a-z0-9]*[a-z0-9])?"
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
/// `DNS1035LabelMaxLength`: Service names.
pub const DNS1035_LABEL_MAX_LEN: usize = 63;
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
const DNS1035_MESSAGE: &str = concat!(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', \
     start with an alphabetic character, and end with an alphanumeric character \
     (e.g. 'my-name',  or 'abc-123', regex used for validation is '",
    dns1035_fmt!(),
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
    /// Not a DNS-1035 label (`[a-z]([-a-z0-9]*[a-z0-9])?`): Service names.
    #[error("{}", DNS1035_MESSAGE)]
    NotDns1035Label,
    /// `path.IsValidPathSegmentName`: a name that is exactly `.` or `..`.
    #[error("may not be '{0}'")]
    MayNotBe(&'static str),
    /// `path.IsValidPathSegmentName`: a name holding `/` or `%`.
    #[error("may not contain '{0}'")]
    MayNotContain(&'static str),
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

/// `validation.IsDNS1035Label`: the length limit, then the pattern.
pub fn dns1035_label_errors(value: &str) -> Vec<NameError> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LEN {
        errs.push(NameError::TooLong {
            max: DNS1035_LABEL_MAX_LEN,
        });
    }
    if !(is_label_shaped(value) && value.as_bytes()[0].is_ascii_lowercase()) {
        errs.push(NameError::NotDns1035Label);
    }
    errs
}

/// `path.IsValidPathSegmentName`: what names of RBAC objects must be (they only have to fit
/// in a URL path segment): not `.` or `..`, and without `/` or `%`.
pub fn path_segment_name_errors(value: &str) -> Vec<NameError> {
    if let Some(bad) = [".", ".."].into_iter().find(|bad| value == *bad) {
        return vec![NameError::MayNotBe(bad)];
    }
    ["/", "%"]
        .into_iter()
        .filter(|bad| value.contains(bad))
        .map(NameError::MayNotContain)
        .collect()
}

/// The rule kube-apiserver checks an object's `metadata.name` against (the `ValidateNameFunc`
/// its validation hands `ValidateObjectMeta`), for the kinds a bundle can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameRule {
    /// `NameIsDNSSubdomain`: nearly every kind, custom resources included.
    Dns1123Subdomain,
    /// `NameIsDNSLabel`: Namespaces.
    Dns1123Label,
    /// `NameIsDNS1035Label`: Services.
    Dns1035Label,
    /// `ValidateRBACName` (`path.IsValidPathSegmentName`): Roles, ClusterRoles and their
    /// bindings.
    PathSegment,
}

impl NameRule {
    /// The rule for objects of `kind` in API group `group` (`""` for the core group), as
    /// kube-apiserver 1.35 applies it (`pkg/apis/*/validation`).
    pub fn of(group: &str, kind: &str) -> NameRule {
        match (group, kind) {
            ("", "Service") => NameRule::Dns1035Label,
            ("", "Namespace") => NameRule::Dns1123Label,
            (
                "rbac.authorization.k8s.io",
                "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding",
            ) => NameRule::PathSegment,
            _ => NameRule::Dns1123Subdomain,
        }
    }

    /// What is wrong with `name` under this rule, in upstream's order; empty when it is fine.
    pub fn errors(self, name: &str) -> Vec<NameError> {
        match self {
            NameRule::Dns1123Subdomain => dns1123_subdomain_errors(name),
            NameRule::Dns1123Label => dns1123_label_errors(name),
            NameRule::Dns1035Label => dns1035_label_errors(name),
            NameRule::PathSegment => path_segment_name_errors(name),
        }
    }
}

/// One `field.Error` as kube-apiserver prints it (`field.Error.Error()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldError {
    /// `field.Required(field, detail)`: `<field>: Required value[: <detail>]`.
    Required {
        /// The field's path, e.g. `metadata.name`.
        field: String,
        /// What is required; may be empty.
        detail: String,
    },
    /// `field.Invalid(field, value, detail)`: `<field>: Invalid value: "<value>": <detail>`,
    /// the value quoted as Go's `%q` quotes it.
    Invalid {
        /// The field's path.
        field: String,
        /// The value refused.
        value: String,
        /// Why.
        detail: String,
    },
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (field, body, detail) = match self {
            FieldError::Required { field, detail } => (field, "Required value".to_owned(), detail),
            FieldError::Invalid {
                field,
                value,
                detail,
            } => (
                field,
                format!("Invalid value: {}", olm_goenc::quote(value)),
                detail,
            ),
        };
        write!(f, "{field}: {body}")?;
        if !detail.is_empty() {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

/// What kube-apiserver says about the `metadata.name` of an object of `kind` in `group` (the
/// name part of `ValidateObjectMeta`): one error per problem [`NameRule::of`] finds, or that a
/// name is required.
pub fn object_name_errors(group: &str, kind: &str, name: &str) -> Vec<FieldError> {
    const FIELD: &str = "metadata.name";
    if name.is_empty() {
        return vec![FieldError::Required {
            field: FIELD.to_owned(),
            detail: "name or generateName is required".to_owned(),
        }];
    }
    NameRule::of(group, kind)
        .errors(name)
        .into_iter()
        .map(|e| FieldError::Invalid {
            field: FIELD.to_owned(),
            value: name.to_owned(),
            detail: e.to_string(),
        })
        .collect()
}

/// kube-apiserver's message refusing an object as invalid (apimachinery's `NewInvalid`):
/// `<Kind>[.<group>] "<name>" is invalid: <errors>`, the errors as `errors.NewAggregate`
/// prints them — one as it is, several deduplicated, comma-separated and bracketed.
pub fn invalid_object_message(
    group: &str,
    kind: &str,
    name: &str,
    errors: &[FieldError],
) -> String {
    let group_kind = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    let mut head = format!("{group_kind} {} is invalid", olm_goenc::quote(name));
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let text = e.to_string();
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    match seen.as_slice() {
        [] => {}
        [one] => {
            head.push_str(": ");
            head.push_str(one);
        }
        many => {
            head.push_str(": [");
            head.push_str(&many.join(", "));
            head.push(']');
        }
    }
    head
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

    /// The texts apimachinery's `IsDNS1035Label` returns (Service names): the 63-byte limit, a
    /// letter first.
    #[test]
    fn dns1035_label_matches_apimachinery() {
        const REGEX: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
        let cases: &[(&str, &[&str])] = &[
            ("a", &[]),
            ("my-name", &[]),
            ("abc-123", &[]),
            (&"a".repeat(63), &[]),
            ("", &[REGEX]),
            ("1abc", &[REGEX]),
            ("a.b", &[REGEX]),
            ("A", &[REGEX]),
            ("a-", &[REGEX]),
            (&"a".repeat(64), &["must be no more than 63 characters"]),
            (
                &format!("1{}", "a".repeat(63)),
                &["must be no more than 63 characters", REGEX],
            ),
        ];
        for (value, want) in cases {
            assert_eq!(texts(dns1035_label_errors(value)), *want, "{value:?}");
        }
    }

    /// `path.IsValidPathSegmentName` (RBAC names): `.` and `..` alone, `/` and `%` anywhere;
    /// any length.
    #[test]
    fn path_segment_names_match_apimachinery() {
        let cases: &[(&str, &[&str])] = &[
            ("admin", &[]),
            ("system:controller:x", &[]),
            ("Upper_Case.ok", &[]),
            (&"a".repeat(10_000), &[]),
            (".", &["may not be '.'"]),
            ("..", &["may not be '..'"]),
            ("a/b", &["may not contain '/'"]),
            ("a%/b", &["may not contain '/'", "may not contain '%'"]),
        ];
        for (value, want) in cases {
            assert_eq!(texts(path_segment_name_errors(value)), *want, "{value:?}");
        }
    }

    /// The rule per kind, and the whole message kube-apiserver answers a create with
    /// (`NewInvalid`), as the control plane's `kubectl create` prints it.
    #[test]
    fn invalid_names_are_worded_as_the_api_server_words_them() {
        assert_eq!(NameRule::of("", "Service"), NameRule::Dns1035Label);
        assert_eq!(NameRule::of("", "Namespace"), NameRule::Dns1123Label);
        assert_eq!(NameRule::of("", "ConfigMap"), NameRule::Dns1123Subdomain);
        assert_eq!(
            NameRule::of("", "ServiceAccount"),
            NameRule::Dns1123Subdomain
        );
        assert_eq!(
            NameRule::of("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            NameRule::PathSegment
        );
        assert_eq!(
            NameRule::of("monitoring.coreos.com", "ServiceMonitor"),
            NameRule::Dns1123Subdomain
        );
        let long = "a".repeat(254);
        assert_eq!(
            invalid_object_message(
                "",
                "ConfigMap",
                &long,
                &object_name_errors("", "ConfigMap", &long)
            ),
            format!(
                "ConfigMap \"{long}\" is invalid: metadata.name: Invalid value: \"{long}\": must be no more than 253 characters"
            )
        );
        assert_eq!(
            invalid_object_message(
                "",
                "Service",
                "My_svc",
                &object_name_errors("", "Service", "My_svc")
            ),
            "Service \"My_svc\" is invalid: metadata.name: Invalid value: \"My_svc\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        );
        let over_bad = format!("{}-", "b".repeat(253));
        assert_eq!(
            invalid_object_message(
                "rbac.authorization.k8s.io",
                "Role",
                "a/b",
                &object_name_errors("rbac.authorization.k8s.io", "Role", "a/b")
            ),
            "Role.rbac.authorization.k8s.io \"a/b\" is invalid: metadata.name: Invalid value: \"a/b\": may not contain '/'"
        );
        let both = invalid_object_message(
            "",
            "Secret",
            &over_bad,
            &object_name_errors("", "Secret", &over_bad),
        );
        assert!(both.starts_with(&format!(
            "Secret \"{over_bad}\" is invalid: [metadata.name: Invalid value: "
        )));
        assert!(both.ends_with("regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')]"));
        assert_eq!(
            invalid_object_message(
                "",
                "ConfigMap",
                "",
                &object_name_errors("", "ConfigMap", "")
            ),
            "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        let dup = FieldError::Required {
            field: "x".into(),
            detail: String::new(),
        };
        assert_eq!(
            invalid_object_message("g.io", "K", "n\u{7}", &[dup.clone(), dup]),
            "K.g.io \"n\\a\" is invalid: x: Required value",
            "duplicates printed once, names quoted as Go quotes them"
        );
        assert_eq!(
            invalid_object_message("", "K", "n", &[]),
            "K \"n\" is invalid"
        );
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
