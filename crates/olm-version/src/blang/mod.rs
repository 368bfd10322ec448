//! The blang/semver v4 dialect: strict versions and the range grammar of `olm.skipRange`.

mod range;
mod version;

pub use range::{Range, RangeError};
pub use version::{Identifier, Version, VersionError};

pub(crate) use version::compare_identifiers;
