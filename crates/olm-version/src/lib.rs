//! Version semantics of OLM, exactly as the Go libraries OLM is built on define them.
//!
//! OLM speaks two semver dialects and one ordering rule:
//! - [`masterminds`]: Masterminds/semver v3.5, the constraint grammar of a ClusterExtension's
//!   `version` (`^1.2`, `>=1.0.0, <2.0.0 || 3.x`), with its prerelease rule and error texts;
//! - [`blang`]: blang/semver v4, strict versions of bundles and the range grammar of
//!   `olm.skipRange` and OLM v0 (`>=1.0.0 <2.0.0`);
//! - [`release`]: `VersionRelease`, the order of bundles by version then release.
//!
//! [`crd`] holds the API-server admission rule for version ranges. Everything here is pure and
//! panic-free on any input: each malformed string gets the upstream error text.
//!
//! Not for: choosing bundles (that is resolution) or parsing catalogs.

pub mod blang;
pub mod crd;
mod go;
pub mod masterminds;
mod precedence;
pub mod release;

pub use crd::{MAX_VERSION_RANGE_LEN, VERSION_RANGE_PATTERN, echo_range, is_valid_version_range};
pub use release::{Release, ReleaseError, VersionRelease};
