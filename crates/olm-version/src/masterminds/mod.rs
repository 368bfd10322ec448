//! The Masterminds/semver v3 dialect: lenient versions and the constraint grammar users type into
//! `ClusterExtension.spec.source.catalog.version`.

mod constraints;
mod lexer;
mod version;

pub use constraints::{ConstraintError, Constraints, MAX_CONSTRAINT_GROUPS, MAX_CONSTRAINT_LEN};
pub use version::{MAX_VERSION_LEN, Version, VersionError};
