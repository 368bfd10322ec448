//! Bundle versions with releases (`VersionRelease`): how OLM orders two bundles of a package and
//! how it reports the installed one.
//!
//! registry+v1 bundles have no release field, so some publish re-builds of one version as build
//! metadata (`1.0.0+2`). OLM treats such metadata as a release when it is a valid release string,
//! orders by version then release, and re-encodes the release as build metadata in status.

use std::cmp::Ordering;
use std::fmt;

use crate::blang::compare_identifiers as blang_identifiers_cmp;
use crate::blang::{Identifier, Version};
use crate::go::quote;

/// Longest release string (the ClusterServiceVersion CRD's limit), in bytes.
pub const MAX_RELEASE_LEN: usize = 20;

/// Why a version or release string was refused; the texts are upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReleaseError(String);

/// A release: dot-separated identifiers with semver prerelease syntax. The empty release sorts
/// below every other.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Release(Vec<Identifier>);

impl Release {
    /// Parses a release string; the empty string is the empty release.
    pub fn parse(s: &str) -> Result<Release, ReleaseError> {
        if s.is_empty() {
            return Ok(Release::default());
        }
        if s.len() > MAX_RELEASE_LEN {
            return Err(ReleaseError(format!(
                "invalid release {}: exceeds maximum length of {MAX_RELEASE_LEN} characters",
                quote(s)
            )));
        }
        let mut ids = Vec::new();
        let mut errors = Vec::new();
        for (i, segment) in s.split('.').enumerate() {
            match Identifier::parse(segment) {
                Ok(id) => ids.push(id),
                Err(e) => errors.push(format!("segment {i}: {e}")),
            }
        }
        if !errors.is_empty() {
            return Err(ReleaseError(format!(
                "invalid release {}: {}",
                quote(s),
                errors.join("\n")
            )));
        }
        Ok(Release(ids))
    }

    /// Whether there is no release, the value that sorts below every other.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The dot-separated identifiers, in order, as compared.
    pub fn identifiers(&self) -> &[Identifier] {
        &self.0
    }
}

impl Ord for Release {
    fn cmp(&self, o: &Self) -> Ordering {
        match (self.0.is_empty(), o.0.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => blang_identifiers_cmp(&self.0, &o.0),
        }
    }
}

impl PartialOrd for Release {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, id) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{id}")?;
        }
        Ok(())
    }
}

/// A bundle's version and release, ordered by version (build metadata ignored) then release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRelease {
    /// The semantic version; compared first.
    pub version: Version,
    /// The release; breaks ties between equal versions.
    pub release: Release,
}

impl VersionRelease {
    /// The registry+v1 rule: parse strictly; build metadata that is a valid release becomes the
    /// release (and the build metadata is dropped), other build metadata stays on the version.
    pub fn parse_legacy(s: &str) -> Result<VersionRelease, ReleaseError> {
        let mut version = Version::parse(s).map_err(|e| ReleaseError(e.to_string()))?;
        match Release::parse(&version.build.join(".")) {
            Ok(release) if !release.is_empty() => {
                version.build.clear();
                Ok(VersionRelease { version, release })
            }
            _ => Ok(VersionRelease {
                version,
                release: Release::default(),
            }),
        }
    }

    /// A version and an explicit release (the `release` key of an `olm.package` property); build
    /// metadata keeps its semver meaning here.
    pub fn parse_explicit(version: &str, release: &str) -> Result<VersionRelease, ReleaseError> {
        let v = Version::parse(version)
            .map_err(|e| ReleaseError(format!("error parsing version {}: {e}", quote(version))))?;
        let r = Release::parse(release)
            .map_err(|e| ReleaseError(format!("error parsing release {}: {e}", quote(release))))?;
        Ok(VersionRelease {
            version: v,
            release: r,
        })
    }

    /// The version as reported in `ClusterExtension.status.install.bundle.version`: a release is
    /// re-encoded as build metadata (`1.0.0+2`), so status readers that know nothing of releases
    /// still see which build is installed.
    pub fn legacy_version_string(&self) -> String {
        if self.release.is_empty() {
            return self.version.to_string();
        }
        let mut v = self.version.clone();
        v.build = self.release.0.iter().map(ToString::to_string).collect();
        v.to_string()
    }
}

impl Ord for VersionRelease {
    fn cmp(&self, o: &Self) -> Ordering {
        self.version
            .cmp(&o.version)
            .then_with(|| self.release.cmp(&o.release))
    }
}

impl PartialOrd for VersionRelease {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl fmt::Display for VersionRelease {
    /// `VERSION` or `VERSION-RELEASE`, as operator-registry prints a version release.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.version)?;
        if !self.release.is_empty() {
            write!(f, "-{}", self.release)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vr(s: &str) -> VersionRelease {
        VersionRelease::parse_legacy(s).unwrap()
    }

    #[test]
    fn build_metadata_becomes_release() {
        let v = vr("1.0.0+2");
        assert_eq!(v.release.to_string(), "2");
        assert!(v.version.build.is_empty());
        assert_eq!(v.legacy_version_string(), "1.0.0+2");
        assert_eq!(v.to_string(), "1.0.0-2");
    }

    #[test]
    fn invalid_release_metadata_stays_build() {
        // A leading zero is not a valid release identifier: the metadata stays on the version.
        let v = vr("1.0.0+02");
        assert!(v.release.is_empty());
        assert_eq!(v.version.build, vec!["02"]);
        assert_eq!(v.legacy_version_string(), "1.0.0+02");
        // Longer than 20 characters: not a release either.
        let v = vr("1.0.0+abcdefghijklmnopqrstu");
        assert!(v.release.is_empty());
    }

    #[test]
    fn ordering_version_then_release() {
        let mut list = [
            vr("1.0.0+2"),
            vr("1.0.0"),
            vr("1.0.0+10"),
            vr("1.0.0+2.el9"),
            vr("0.9.0+99"),
            vr("1.0.0+rc"),
        ];
        list.sort();
        let names: Vec<String> = list
            .iter()
            .map(VersionRelease::legacy_version_string)
            .collect();
        assert_eq!(
            names,
            [
                "0.9.0+99",
                "1.0.0",
                "1.0.0+2",
                "1.0.0+2.el9",
                "1.0.0+10",
                "1.0.0+rc"
            ]
        );
    }

    #[test]
    fn release_errors_name_every_segment() {
        let err = Release::parse("01..x_y").unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid release \"01..x_y\": segment 0: Numeric PreRelease version must not contain leading zeroes \"01\"\nsegment 1: Prerelease is empty\nsegment 2: Invalid character(s) found in prerelease \"x_y\""
        );
        assert_eq!(
            Release::parse("123456789012345678901")
                .unwrap_err()
                .to_string(),
            "invalid release \"123456789012345678901\": exceeds maximum length of 20 characters"
        );
    }

    #[test]
    fn explicit_release_keeps_build() {
        let v = VersionRelease::parse_explicit("1.0.0+git.abc", "3").unwrap();
        assert_eq!(v.version.build, vec!["git", "abc"]);
        assert_eq!(v.release.to_string(), "3");
        assert_eq!(
            VersionRelease::parse_explicit("1.0", "")
                .unwrap_err()
                .to_string(),
            "error parsing version \"1.0\": No Major.Minor.Patch elements found"
        );
    }
}
