//! Masterminds/semver v3 versions: the lenient parser OLM v1 applies to catalog versions before
//! checking them against a ClusterExtension's version range.

use std::cmp::Ordering;
use std::fmt;

use crate::go;
use crate::precedence;

/// Longest version string Masterminds accepts, in bytes.
pub const MAX_VERSION_LEN: usize = 256;

/// Why a version string was refused; the texts are Masterminds' own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    /// The text is not shaped like a version at all (no leading number, stray characters, the
    /// wrong number of parts for the strict parser).
    #[error("invalid semantic version")]
    InvalidSemVer,
    /// The strict parser was given the empty string.
    #[error("version string empty")]
    Empty,
    /// A numeric part holds something other than digits (strict parser).
    #[error("invalid characters in version")]
    InvalidCharacters,
    /// A numeric part (strict parser) or a numeric prerelease identifier has a leading zero.
    #[error("version segment starts with 0")]
    SegmentStartsZero,
    /// The build metadata has an empty identifier or a character outside `[0-9A-Za-z-]`.
    #[error("invalid metadata string")]
    InvalidMetadata,
    /// The prerelease has an empty identifier or a character outside `[0-9A-Za-z-]`.
    #[error("invalid prerelease string")]
    InvalidPrerelease,
    /// The text is longer than [`MAX_VERSION_LEN`] bytes.
    #[error("version string is too long (max 256 bytes)")]
    TooLong,
    /// A numeric segment that does not fit 64 bits (lenient parser).
    #[error("error parsing version segment: {0}")]
    Segment(String),
    /// A numeric segment that does not fit 64 bits (strict parser, which reports it unwrapped).
    #[error("{0}")]
    Number(String),
}

/// A semantic version as Masterminds models it: three numbers, a prerelease and build metadata.
///
/// Equality and ordering follow semver precedence, so build metadata is ignored:
/// `1.0.0+a == 1.0.0+b`.
#[derive(Debug, Clone)]
pub struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
}

impl Version {
    /// Parses leniently, as Masterminds' `NewVersion` does by default: an optional `v`, one to three
    /// numeric parts (missing ones are 0, leading zeros allowed), then `-prerelease` and `+build`.
    pub fn parse(s: &str) -> Result<Version, VersionError> {
        if s.len() > MAX_VERSION_LEN {
            return Err(VersionError::TooLong);
        }
        let b = s.as_bytes();
        let mut i = usize::from(b.first() == Some(&b'v'));
        let digits = |i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let n = digits(i);
        if n == 0 {
            return Err(VersionError::InvalidSemVer);
        }
        let mut nums = vec![&s[i..i + n]];
        i += n;
        while nums.len() < 3 && b.get(i) == Some(&b'.') && digits(i + 1) > 0 {
            let n = digits(i + 1);
            nums.push(&s[i + 1..i + 1 + n]);
            i += 1 + n;
        }
        let mut pre = "";
        if b.get(i) == Some(&b'-') {
            let n = ident_list_len(&s[i + 1..]).ok_or(VersionError::InvalidSemVer)?;
            pre = &s[i + 1..i + 1 + n];
            i += 1 + n;
        }
        let mut metadata = "";
        if b.get(i) == Some(&b'+') {
            let n = ident_list_len(&s[i + 1..]).ok_or(VersionError::InvalidSemVer)?;
            metadata = &s[i + 1..i + 1 + n];
            i += 1 + n;
        }
        if i != b.len() {
            return Err(VersionError::InvalidSemVer);
        }
        let mut parsed = [0u64; 3];
        for (slot, text) in parsed.iter_mut().zip(&nums) {
            *slot = go::parse_uint(text).map_err(VersionError::Segment)?;
        }
        if !pre.is_empty() {
            validate_prerelease(pre)?;
        }
        if !metadata.is_empty() {
            validate_metadata(metadata)?;
        }
        Ok(Version {
            major: parsed[0],
            minor: parsed[1],
            patch: parsed[2],
            pre: pre.to_owned(),
            metadata: metadata.to_owned(),
        })
    }

    /// Parses strictly, as Masterminds' `StrictNewVersion`: exactly `MAJOR.MINOR.PATCH`, no `v`,
    /// no leading zeros.
    pub fn parse_strict(s: &str) -> Result<Version, VersionError> {
        if s.is_empty() {
            return Err(VersionError::Empty);
        }
        if s.len() > MAX_VERSION_LEN {
            return Err(VersionError::TooLong);
        }
        let mut parts: Vec<&str> = s.splitn(3, '.').collect();
        if parts.len() != 3 {
            return Err(VersionError::InvalidSemVer);
        }
        let mut metadata = "";
        if let Some((rest, meta)) = parts[2].split_once('+') {
            metadata = meta;
            parts[2] = rest;
            validate_metadata(metadata)?;
        }
        let mut pre = "";
        if let Some((rest, p)) = parts[2].split_once('-') {
            pre = p;
            parts[2] = rest;
            validate_prerelease(pre)?;
        }
        for p in &parts {
            if !go::contains_only(p, |c| c.is_ascii_digit()) {
                return Err(VersionError::InvalidCharacters);
            }
            if p.len() > 1 && p.starts_with('0') {
                return Err(VersionError::SegmentStartsZero);
            }
        }
        let num = |p: &str| go::parse_uint(p).map_err(VersionError::Number);
        Ok(Version {
            major: num(parts[0])?,
            minor: num(parts[1])?,
            patch: num(parts[2])?,
            pre: pre.to_owned(),
            metadata: metadata.to_owned(),
        })
    }

    /// The first number: incompatible changes.
    pub fn major(&self) -> u64 {
        self.major
    }
    /// The second number (0 when the lenient parser found none).
    pub fn minor(&self) -> u64 {
        self.minor
    }
    /// The third number (0 when the lenient parser found none).
    pub fn patch(&self) -> u64 {
        self.patch
    }
    /// The prerelease without its leading `-`; empty for a release.
    pub fn prerelease(&self) -> &str {
        &self.pre
    }
    /// The build metadata without its leading `+`; empty when there is none.
    pub fn metadata(&self) -> &str {
        &self.metadata
    }
}

/// Length of a `[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*` prefix of `s`, or None when it is empty or ends
/// on a dot that no identifier follows.
fn ident_list_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    loop {
        let n = b[i..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-')
            .count();
        if n == 0 {
            return if i == 0 { None } else { Some(i - 1) };
        }
        i += n;
        if b.get(i) == Some(&b'.')
            && b.get(i + 1)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'-')
        {
            i += 1;
        } else {
            return Some(i);
        }
    }
}

fn validate_prerelease(p: &str) -> Result<(), VersionError> {
    for part in p.split('.') {
        if part.is_empty() {
            return Err(VersionError::InvalidPrerelease);
        } else if go::contains_only(part, |c| c.is_ascii_digit()) {
            if part.len() > 1 && part.starts_with('0') {
                return Err(VersionError::SegmentStartsZero);
            }
        } else if !go::contains_only(part, go::is_ident_char) {
            return Err(VersionError::InvalidPrerelease);
        }
    }
    Ok(())
}

fn validate_metadata(m: &str) -> Result<(), VersionError> {
    if m.split('.')
        .any(|part| part.is_empty() || !go::contains_only(part, go::is_ident_char))
    {
        return Err(VersionError::InvalidMetadata);
    }
    Ok(())
}

/// Masterminds' prerelease precedence: identifiers compared left to right, numeric ones as
/// numbers and below alphanumeric ones, a missing identifier below a present one.
pub(crate) fn compare_prerelease(a: &str, b: &str) -> Ordering {
    let mut ai = a.split('.');
    let mut bi = b.split('.');
    loop {
        match (ai.next(), bi.next()) {
            (None, None) => return Ordering::Equal,
            (x, y) => {
                let ord = compare_pre_part(x.unwrap_or(""), y.unwrap_or(""));
                if ord != Ordering::Equal {
                    return ord;
                }
            }
        }
    }
}

fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (go::parse_uint(s), go::parse_uint(o)) {
        (Err(_), Err(_)) => s.cmp(o),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        // Equal numbers in different spellings cannot reach here (leading zeros are refused), and
        // upstream answers "less" for them; mirror that rather than claim equality.
        (Ok(x), Ok(y)) => {
            if x > y {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
    }
}

impl Ord for Version {
    fn cmp(&self, o: &Self) -> Ordering {
        precedence::compare(
            (self.major, self.minor, self.patch),
            (o.major, o.minor, o.patch),
            (!self.pre.is_empty(), !o.pre.is_empty()),
            || compare_prerelease(&self.pre, &o.pre),
        )
    }
}

precedence::ord_by_precedence!(Version);

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
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
