//! Kubernetes label selectors (`matchLabels` + `matchExpressions`): the catalogs a
//! ClusterExtension resolves from (the label `olm.operatorframework.io/metadata.name` carries a
//! catalog's name, so selecting by name is selecting by label) and the namespaces an OLM v0
//! OperatorGroup targets.

use std::collections::BTreeMap;
use std::fmt;

use olm_goenc::quote;

/// A `matchExpressions` operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// The label is set to one of the values.
    In,
    /// The label is unset or set to none of the values.
    NotIn,
    /// The label is set, to anything.
    Exists,
    /// The label is unset.
    DoesNotExist,
}

impl Operator {
    /// Parses the operator as spelled in the API.
    pub fn parse(s: &str) -> Result<Operator, SelectorError> {
        match s {
            "In" => Ok(Operator::In),
            "NotIn" => Ok(Operator::NotIn),
            "Exists" => Ok(Operator::Exists),
            "DoesNotExist" => Ok(Operator::DoesNotExist),
            other => Err(SelectorError(format!(
                "{} is not a valid label selector operator",
                quote(other)
            ))),
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
        })
    }
}

/// One `matchExpressions` requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// How the label is compared.
    pub operator: Operator,
    /// The values for `In` and `NotIn`; must be empty for `Exists` and `DoesNotExist`.
    pub values: Vec<String>,
}

/// Why a selector is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(String);

/// A label selector; the default selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// Labels that must be set to exactly these values.
    pub match_labels: BTreeMap<String, String>,
    /// Further requirements, all of which must hold.
    pub match_expressions: Vec<Requirement>,
}

impl LabelSelector {
    /// Checks the rules the API server's selector conversion enforces.
    pub fn validate(&self) -> Result<(), SelectorError> {
        for key in self.match_labels.keys() {
            if let Some(e) = key_error(key) {
                return Err(SelectorError(e));
            }
        }
        for r in &self.match_expressions {
            if r.key.is_empty() {
                return Err(SelectorError(
                    "key: Invalid value: \"\": name part must be non-empty".into(),
                ));
            }
            if let Some(e) = key_error(&r.key) {
                return Err(SelectorError(e));
            }
            match r.operator {
                Operator::In | Operator::NotIn if r.values.is_empty() => {
                    return Err(SelectorError(format!(
                        "values: Invalid value: []string{{}}: for 'in', 'notin' operators, values set can't be empty (key {})",
                        quote(&r.key)
                    )));
                }
                Operator::Exists | Operator::DoesNotExist if !r.values.is_empty() => {
                    return Err(SelectorError(format!(
                        "values: Invalid value: []string{{{}}}: values set must be empty for exists and does not exist (key {})",
                        r.values
                            .iter()
                            .map(|v| quote(v))
                            .collect::<Vec<_>>()
                            .join(", "),
                        quote(&r.key)
                    )));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether `labels` satisfy every label and every expression.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| {
                let value = labels.get(&r.key);
                match r.operator {
                    Operator::In => value.is_some_and(|v| r.values.contains(v)),
                    Operator::NotIn => value.is_none_or(|v| !r.values.contains(v)),
                    Operator::Exists => value.is_some(),
                    Operator::DoesNotExist => value.is_none(),
                }
            })
    }

    /// Whether this selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Parses kubectl's selector syntax: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`,
    /// `k` (exists) and `!k` (does not exist), comma-separated.
    pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
        let mut sel = LabelSelector::default();
        for part in split_top_level(s) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let bad = || SelectorError(format!("unable to parse requirement: {}", quote(part)));
            if let Some(key) = part.strip_prefix('!') {
                let key = key.trim();
                if key.is_empty() || key.contains([' ', '=', '(']) {
                    return Err(bad());
                }
                sel.match_expressions.push(Requirement {
                    key: key.into(),
                    operator: Operator::DoesNotExist,
                    values: vec![],
                });
            } else if let Some((k, v)) = part.split_once("!=") {
                sel.match_expressions.push(Requirement {
                    key: k.trim().into(),
                    operator: Operator::NotIn,
                    values: vec![v.trim().into()],
                });
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                if k.trim().is_empty() {
                    return Err(bad());
                }
                sel.match_labels.insert(k.trim().into(), v.trim().into());
            } else if let Some((k, rest)) = part.split_once(' ') {
                let rest = rest.trim();
                let (op, list) = if let Some(l) = rest.strip_prefix("notin") {
                    (Operator::NotIn, l)
                } else if let Some(l) = rest.strip_prefix("in") {
                    (Operator::In, l)
                } else {
                    return Err(bad());
                };
                let list = list
                    .trim()
                    .strip_prefix('(')
                    .and_then(|l| l.strip_suffix(')'))
                    .ok_or_else(bad)?;
                let values = list
                    .split(',')
                    .map(|v| v.trim().to_owned())
                    .filter(|v| !v.is_empty())
                    .collect();
                sel.match_expressions.push(Requirement {
                    key: k.trim().into(),
                    operator: op,
                    values,
                });
            } else {
                sel.match_expressions.push(Requirement {
                    key: part.into(),
                    operator: Operator::Exists,
                    values: vec![],
                });
            }
        }
        sel.validate()?;
        Ok(sel)
    }
}

/// apimachinery's `IsQualifiedName` for a label key, with its message: an optional DNS-1123
/// subdomain prefix and `/`, then a name of at most 63 alphanumerics, `-`, `_` or `.` that starts
/// and ends alphanumeric. `None` when the key is valid.
fn key_error(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let invalid = |what: String| Some(format!("key: Invalid value: {}: {what}", quote(key)));
    if let Some(p) = prefix {
        if p.is_empty() {
            return invalid("prefix part must be non-empty".into());
        }
        if let Some(e) = crate::dns1123_subdomain_errors(p).first() {
            return invalid(format!("prefix part {e}"));
        }
    }
    if name.is_empty() {
        return invalid("name part must be non-empty".into());
    }
    if name.len() > 63 {
        return invalid("name part must be no more than 63 characters".into());
    }
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    let bytes = name.as_bytes();
    let ok = bytes.first().is_some_and(|&b| alnum(b))
        && bytes.last().is_some_and(|&b| alnum(b))
        && bytes
            .iter()
            .all(|&b| alnum(b) || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        None
    } else {
        invalid("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into())
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::METADATA_NAME_LABEL;

    #[test]
    fn keys_must_be_qualified_names() {
        // apimachinery's messages (validation.IsQualifiedName).
        let err = LabelSelector::parse("!!").unwrap_err().to_string();
        assert!(
            err.starts_with(
                "key: Invalid value: \"!\": name part must consist of alphanumeric characters"
            ),
            "{err}"
        );
        let err = LabelSelector::parse("Bad_/x=y").unwrap_err().to_string();
        assert!(
            err.starts_with(
                "key: Invalid value: \"Bad_/x\": prefix part a lowercase RFC 1123 subdomain"
            ),
            "{err}"
        );
        let long = "k".repeat(64);
        let err = LabelSelector::parse(&long).unwrap_err().to_string();
        assert!(
            err.ends_with("name part must be no more than 63 characters"),
            "{err}"
        );
        for ok in [
            "app",
            "example.com/app=x",
            "a.b_c-d in (x)",
            "!olm.operatorframework.io/metadata.name",
        ] {
            assert!(LabelSelector::parse(ok).is_ok(), "{ok}");
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn expressions_follow_kubernetes_semantics() {
        let l = labels(&[("tier", "gold"), (METADATA_NAME_LABEL, "a")]);
        let s = LabelSelector::parse(
            "tier in (gold,platinum),!beta,olm.operatorframework.io/metadata.name=a",
        )
        .unwrap();
        assert!(s.matches(&l));
        assert!(
            LabelSelector::parse("missing notin (x)")
                .unwrap()
                .matches(&l),
            "NotIn matches an absent key"
        );
        assert!(!LabelSelector::parse("tier!=gold").unwrap().matches(&l));
        assert!(LabelSelector::parse("tier").unwrap().matches(&l));
        assert!(!LabelSelector::parse("!tier").unwrap().matches(&l));
        assert!(LabelSelector::default().matches(&l));
    }

    #[test]
    fn invalid_selectors_say_why() {
        assert!(
            LabelSelector::parse("tier in ()")
                .unwrap_err()
                .to_string()
                .contains("values set can't be empty")
        );
        assert!(LabelSelector::parse("tier in gold").is_err());
        assert_eq!(
            Operator::parse("Like").unwrap_err().to_string(),
            "\"Like\" is not a valid label selector operator"
        );
    }
}
