//! packageserver's decisions: the PackageManifests a catalog's content becomes, and whether
//! their aggregated API may be registered.

pub mod packagemanifest;
pub mod registration;
