//! blang/semver v4 ranges: the grammar of `olm.skipRange`, `olm.package.required` version ranges
//! and all of OLM v0. Whitespace is AND, `||` is OR, trailing `x` parts are wildcards, and —
//! unlike Masterminds — prereleases are never filtered out.

use super::version::Version;
use crate::go::{self, quote};

/// Why a range string was refused; the texts are blang's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RangeError(String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl Cmp {
    fn parse(op: &str) -> Option<Cmp> {
        Some(match op {
            "" | "=" | "==" => Cmp::Eq,
            "!" | "!=" => Cmp::Ne,
            ">" => Cmp::Gt,
            ">=" => Cmp::Ge,
            "<" => Cmp::Lt,
            "<=" => Cmp::Le,
            _ => return None,
        })
    }

    fn holds(self, v: &Version, bound: &Version) -> bool {
        let ord = v.cmp(bound);
        match self {
            Cmp::Eq => ord.is_eq(),
            Cmp::Ne => ord.is_ne(),
            Cmp::Gt => ord.is_gt(),
            Cmp::Ge => ord.is_ge(),
            Cmp::Lt => ord.is_lt(),
            Cmp::Le => ord.is_le(),
        }
    }
}

/// A parsed blang range: OR of AND-groups of comparisons.
#[derive(Debug, Clone)]
pub struct Range {
    groups: Vec<Vec<(Cmp, Version)>>,
}

/// Splits on spaces that do not follow an operator character, then drops the remaining spaces.
/// Like blang, pieces of a single character are dropped (so `1 || 2` loses both versions).
fn split_and_trim(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut last: usize = 0;
    let mut last_char = 0u8;
    for (i, &c) in b.iter().enumerate() {
        if c == b' ' && !matches!(last_char, b'>' | b'<' | b'=') {
            if last + 1 < i {
                out.push(&s[last..i]);
            }
            last = i + 1;
        } else if c != b' ' {
            last_char = c;
        }
    }
    if last + 1 < b.len() {
        out.push(&s[last..]);
    }
    out.into_iter().map(|p| p.replace(' ', "")).collect()
}

/// Splits `ap` before its first digit into operator and version.
fn split_comparator_version(ap: &str) -> Result<(&str, &str), RangeError> {
    let i = ap
        .find(|c: char| c.is_ascii_digit())
        .ok_or_else(|| RangeError(format!("Could not get version from string: {}", quote(ap))))?;
    Ok((ap[..i].trim(), &ap[i..]))
}

/// Which part a trailing `x` opens: by the number of dot-separated parts (1, 2 or 3).
#[derive(PartialEq)]
enum Wildcard {
    None,
    Major,
    Minor,
    Patch,
}

fn wildcard_type(v: &str) -> Wildcard {
    let parts: Vec<&str> = v.split('.').collect();
    if parts.last() != Some(&"x") {
        return Wildcard::None;
    }
    match parts.len() {
        1 => Wildcard::Major,
        2 => Wildcard::Minor,
        3 => Wildcard::Patch,
        _ => Wildcard::None,
    }
}

fn version_from_wildcard(v: &str) -> String {
    let v = v.replacen(".x.x", ".x", 1).replacen(".x", ".0", 1);
    if v.split('.').count() == 2 {
        format!("{v}.0")
    } else {
        v
    }
}

/// Increments the dot-separated part `idx`, as blang does; an unparsable part yields "".
fn increment_part(v: &str, idx: usize) -> String {
    let mut parts: Vec<String> = v.split('.').map(str::to_owned).collect();
    match parts.get(idx).and_then(|p| go::atoi(p)) {
        Some(n) => {
            parts[idx] = n.wrapping_add(1).to_string();
            parts.join(".")
        }
        None => String::new(),
    }
}

/// Rewrites comparators that contain an `x` into wildcard-free ones (`>1.2.x` → `>=1.3.0`,
/// `1.2.x` → `>=1.2.0 <1.3.0`, `!=1.2.x` → `<1.2.0 >=1.3.0`).
fn expand_wildcards(group: &[String]) -> Result<Vec<String>, RangeError> {
    let mut out = Vec::new();
    for ap in group {
        if !ap.contains('x') {
            out.push(ap.clone());
            continue;
        }
        let (op, v) = split_comparator_version(ap)?;
        let wildcard = wildcard_type(v);
        let flat = version_from_wildcard(v);
        let (result_op, increment) = match op {
            ">" => (">=", true),
            ">=" => (">=", false),
            "<" => ("<", false),
            "<=" => ("<", true),
            "" | "=" | "==" => {
                out.push(format!(">={flat}"));
                ("<", true)
            }
            "!=" | "!" => {
                out.push(format!("<{flat}"));
                (">=", true)
            }
            _ => ("", false),
        };
        let result_version = if increment {
            match wildcard {
                Wildcard::Patch => increment_part(&flat, 1),
                Wildcard::Minor => increment_part(&flat, 0),
                Wildcard::None | Wildcard::Major => String::new(),
            }
        } else {
            flat
        };
        out.push(format!("{result_op}{result_version}"));
    }
    Ok(out)
}

impl Range {
    /// Parses a range as blang's `ParseRange`.
    ///
    /// One deliberate difference: blang accepts an empty group between two `||` (for example
    /// `1.0.0 || || 2.0.0`, or `>=1.0.0 || 1 || 2.0.0`, where the one-character `1` is dropped)
    /// and then panics when a version reaches that group. We refuse such ranges instead.
    pub fn parse(s: &str) -> Result<Range, RangeError> {
        let parts = split_and_trim(s);
        let mut or_parts: Vec<&[String]> = Vec::new();
        let mut last = 0;
        for (i, p) in parts.iter().enumerate() {
            if p == "||" {
                if i == 0 {
                    return Err(RangeError("First element in range is '||'".into()));
                }
                or_parts.push(&parts[last..i]);
                last = i + 1;
            }
        }
        if last == parts.len() {
            return Err(RangeError("Last element in range is '||'".into()));
        }
        or_parts.push(&parts[last..]);
        let mut groups = Vec::with_capacity(or_parts.len());
        for group in or_parts {
            if group.is_empty() {
                return Err(RangeError(format!(
                    "Could not parse Range {}: empty range between '||'",
                    quote(s)
                )));
            }
            let mut comparisons = Vec::new();
            for ap in expand_wildcards(group)? {
                let (op, v) = split_comparator_version(&ap)?;
                let wrap = |msg: String| {
                    RangeError(format!("Could not parse Range {}: {msg}", quote(&ap)))
                };
                let cmp = Cmp::parse(op).ok_or_else(|| {
                    wrap(format!(
                        "Could not parse comparator {} in {}",
                        quote(op),
                        quote(&format!("{op}{v}"))
                    ))
                })?;
                let version = Version::parse(v).map_err(|e| {
                    wrap(format!(
                        "Could not parse version {} in {}: {e}",
                        quote(v),
                        quote(&format!("{op}{v}"))
                    ))
                })?;
                comparisons.push((cmp, version));
            }
            groups.push(comparisons);
        }
        Ok(Range { groups })
    }

    /// Whether `v` is in the range. Prereleases are compared like any version.
    pub fn matches(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .any(|g| g.iter().all(|(c, bound)| c.holds(v, bound)))
    }
}

impl std::str::FromStr for Range {
    type Err = RangeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Range::parse(s)
    }
}
