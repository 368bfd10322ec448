//! blang/semver v4 versions: strict `Parse` (used for bundle versions and ranges) and
//! `ParseTolerant` (used by CEL's `semver_compare` and parts of OLM v0).

use std::cmp::Ordering;
use std::fmt;

use crate::go::{self, quote};
use crate::precedence;

/// Why a version string was refused; the texts are blang's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct VersionError(pub(crate) String);

/// One prerelease (or release) identifier.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identifier {
    /// All digits, without a leading zero; compared as a number.
    Numeric(u64),
    /// Any other identifier; compared as ASCII text and always above a numeric one.
    Alphanumeric(String),
}

impl Identifier {
    /// Parses one identifier as blang's `NewPRVersion`.
    pub fn parse(s: &str) -> Result<Identifier, VersionError> {
        if s.is_empty() {
            return Err(VersionError("Prerelease is empty".into()));
        }
        if go::contains_only(s, |c| c.is_ascii_digit()) {
            if s.len() > 1 && s.starts_with('0') {
                return Err(VersionError(format!(
                    "Numeric PreRelease version must not contain leading zeroes {}",
                    quote(s)
                )));
            }
            return go::parse_uint(s)
                .map(Identifier::Numeric)
                .map_err(VersionError);
        }
        if go::contains_only(s, go::is_ident_char) {
            return Ok(Identifier::Alphanumeric(s.to_owned()));
        }
        Err(VersionError(format!(
            "Invalid character(s) found in prerelease {}",
            quote(s)
        )))
    }
}

impl Ord for Identifier {
    /// Numeric identifiers sort below alphanumeric ones; numbers by value, text bytewise.
    fn cmp(&self, o: &Self) -> Ordering {
        match (self, o) {
            (Identifier::Numeric(a), Identifier::Numeric(b)) => a.cmp(b),
            (Identifier::Numeric(_), Identifier::Alphanumeric(_)) => Ordering::Less,
            (Identifier::Alphanumeric(_), Identifier::Numeric(_)) => Ordering::Greater,
            (Identifier::Alphanumeric(a), Identifier::Alphanumeric(b)) => {
                a.as_bytes().cmp(b.as_bytes())
            }
        }
    }
}

impl PartialOrd for Identifier {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl fmt::Display for Identifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Identifier::Numeric(n) => write!(f, "{n}"),
            Identifier::Alphanumeric(s) => f.write_str(s),
        }
    }
}

/// Compares identifier lists as semver prereleases: element-wise, a shorter prefix first.
pub(crate) fn compare_identifiers(a: &[Identifier], b: &[Identifier]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let ord = x.cmp(y);
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.len().cmp(&b.len())
}

/// A blang semantic version. Equality and ordering ignore build metadata, as blang's `Compare`.
#[derive(Debug, Clone)]
pub struct Version {
    /// The first number: incompatible changes.
    pub major: u64,
    /// The second number: compatible additions.
    pub minor: u64,
    /// The third number: fixes.
    pub patch: u64,
    /// The prerelease identifiers after `-`; empty for a release, which sorts above any prerelease.
    pub pre: Vec<Identifier>,
    /// The build metadata identifiers after `+`; kept for display, ignored by comparison.
    pub build: Vec<String>,
}

fn number(s: &str, what: &str, title: &str) -> Result<u64, VersionError> {
    if !go::contains_only(s, |c| c.is_ascii_digit()) {
        return Err(VersionError(format!(
            "Invalid character(s) found in {what} number {}",
            quote(s)
        )));
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(VersionError(format!(
            "{title} number must not contain leading zeroes {}",
            quote(s)
        )));
    }
    go::parse_uint(s).map_err(VersionError)
}

impl Version {
    /// Parses a strict semver 2.0 version as blang's `Parse`: `MAJOR.MINOR.PATCH[-PRE][+BUILD]`.
    pub fn parse(s: &str) -> Result<Version, VersionError> {
        if s.is_empty() {
            return Err(VersionError("Version string empty".into()));
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        let [major, minor, rest] = parts[..] else {
            return Err(VersionError("No Major.Minor.Patch elements found".into()));
        };
        let major = number(major, "major", "Major")?;
        let minor = number(minor, "minor", "Minor")?;
        let (rest, build) = match rest.split_once('+') {
            Some((r, b)) => (r, Some(b)),
            None => (rest, None),
        };
        let (patch, pre) = match rest.split_once('-') {
            Some((p, pre)) => (p, Some(pre)),
            None => (rest, None),
        };
        let patch = number(patch, "patch", "Patch")?;
        let pre = match pre {
            Some(pre) => pre
                .split('.')
                .map(Identifier::parse)
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let mut builds = Vec::new();
        for b in build.map(|b| b.split('.')).into_iter().flatten() {
            if b.is_empty() {
                return Err(VersionError("Build meta data is empty".into()));
            }
            if !go::contains_only(b, go::is_ident_char) {
                return Err(VersionError(format!(
                    "Invalid character(s) found in build meta data {}",
                    quote(b)
                )));
            }
            builds.push(b.to_owned());
        }
        Ok(Version {
            major,
            minor,
            patch,
            pre,
            build: builds,
        })
    }

    /// Parses as blang's `ParseTolerant`: surrounding space, a `v` prefix, leading zeros and
    /// missing minor/patch parts are forgiven.
    pub fn parse_tolerant(s: &str) -> Result<Version, VersionError> {
        let s = s.trim();
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut parts: Vec<String> = s
            .splitn(3, '.')
            .map(|p| {
                if p.len() > 1 {
                    let t = p.trim_start_matches('0');
                    if t.is_empty() || !t.starts_with(|c: char| c.is_ascii_digit()) {
                        return format!("0{t}");
                    }
                    return t.to_owned();
                }
                p.to_owned()
            })
            .collect();
        if parts.len() < 3 {
            if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
                return Err(VersionError(
                    "Short version cannot contain PreRelease/Build meta data".into(),
                ));
            }
            parts.resize(3, "0".to_owned());
        }
        Version::parse(&parts.join("."))
    }

    /// The version without prerelease and build metadata.
    pub fn finalized(&self) -> Version {
        Version {
            major: self.major,
            minor: self.minor,
            patch: self.patch,
            pre: Vec::new(),
            build: Vec::new(),
        }
    }
}

impl Ord for Version {
    fn cmp(&self, o: &Self) -> Ordering {
        precedence::compare(
            (self.major, self.minor, self.patch),
            (o.major, o.minor, o.patch),
            (!self.pre.is_empty(), !o.pre.is_empty()),
            || compare_identifiers(&self.pre, &o.pre),
        )
    }
}

precedence::ord_by_precedence!(Version);

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (i, p) in self.pre.iter().enumerate() {
            f.write_str(if i == 0 { "-" } else { "." })?;
            write!(f, "{p}")?;
        }
        for (i, b) in self.build.iter().enumerate() {
            f.write_str(if i == 0 { "+" } else { "." })?;
            f.write_str(b)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Version {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Version::parse(s)
    }
}
