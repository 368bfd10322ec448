//! How much a catalog or bundle image may hold (see `olm_image::limits`): flags on the
//! commands that run in a cluster (`olm run`, `olm catalogd`), environment variables of the same
//! names for the commands that read images on a workstation (`olm catalog …`, `olm resolve`,
//! `olm image pull`, `olm install`, `olm dev`). A refusal names the one to raise.

use std::fmt;
use std::str::FromStr;

use olm_image::limits::{Bound, env_var, format_size, parse_size};
use olm_image::{Kind, Limits, RaisedBy, Sizes};

/// A size flag: bytes, or a Kubernetes quantity (`256Mi`, `1Gi`, `500M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl FromStr for Size {
    type Err = olm_image::SizeError;
    fn from_str(s: &str) -> Result<Size, olm_image::SizeError> {
        parse_size(s).map(Size)
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0))
    }
}

/// The limits of catalog images.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct CatalogLimitArgs {
    /// The most a catalog image may hold: its files once unpacked, and its compressed layers
    /// (bytes, or a quantity such as 2Gi). An image over it is refused, and its digest not
    /// pulled again.
    #[arg(long, default_value_t = Size(Sizes::CATALOG.total))]
    catalog_max_size: Size,
    /// The most one file of a catalog image may hold (bytes, or a quantity such as 512Mi).
    #[arg(long, default_value_t = Size(Sizes::CATALOG.file))]
    catalog_max_file_size: Size,
}

impl CatalogLimitArgs {
    /// The catalog sizes the flags set.
    pub fn sizes(&self) -> Sizes {
        Sizes {
            total: self.catalog_max_size.0,
            file: self.catalog_max_file_size.0,
        }
    }
}

/// The limits of bundle images.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct BundleLimitArgs {
    /// The most a bundle image may hold: its files once unpacked, and its compressed layers
    /// (bytes, or a quantity such as 256Mi). An image over it is refused, and its digest not
    /// pulled again.
    #[arg(long, default_value_t = Size(Sizes::BUNDLE.total))]
    bundle_max_size: Size,
    /// The most one file of a bundle image may hold (bytes, or a quantity such as 64Mi).
    #[arg(long, default_value_t = Size(Sizes::BUNDLE.file))]
    bundle_max_file_size: Size,
}

impl BundleLimitArgs {
    /// The bundle sizes the flags set.
    pub fn sizes(&self) -> Sizes {
        Sizes {
            total: self.bundle_max_size.0,
            file: self.bundle_max_file_size.0,
        }
    }
}

/// The limits from `OLM_CATALOG_MAX_SIZE`, `OLM_CATALOG_MAX_FILE_SIZE`, `OLM_BUNDLE_MAX_SIZE`,
/// `OLM_BUNDLE_MAX_FILE_SIZE`, `OLM_IMAGE_MAX_SIZE` and `OLM_IMAGE_MAX_FILE_SIZE` (`olm image
/// pull`), the defaults where unset.
///
/// # Errors
/// A variable that is set but is no size, named with its value.
pub fn from_env() -> anyhow::Result<Limits> {
    from_lookup(|name| std::env::var(name).ok())
}

fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> anyhow::Result<Limits> {
    let size = |kind: Kind, bound: Bound, default: u64| -> anyhow::Result<u64> {
        let name = env_var(kind, bound);
        match lookup(&name) {
            None => Ok(default),
            Some(value) => parse_size(&value).map_err(|e| anyhow::anyhow!("{name}: {e}")),
        }
    };
    let sizes = |kind: Kind, default: Sizes| -> anyhow::Result<Sizes> {
        Ok(Sizes {
            total: size(kind, Bound::Total, default.total)?,
            file: size(kind, Bound::File, default.file)?,
        })
    };
    Ok(Limits {
        catalog: sizes(Kind::Catalog, Sizes::CATALOG)?,
        bundle: sizes(Kind::Bundle, Sizes::BUNDLE)?,
        image: sizes(Kind::Image, Sizes::IMAGE)?,
        raised_by: RaisedBy::Environment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        catalog: CatalogLimitArgs,
        #[command(flatten)]
        bundle: BundleLimitArgs,
    }

    #[test]
    fn flags_default_to_the_library_limits_and_take_quantities() {
        let cli = Cli::try_parse_from(["olm"]).expect("defaults");
        assert_eq!(cli.catalog.sizes(), Sizes::CATALOG);
        assert_eq!(cli.bundle.sizes(), Sizes::BUNDLE);
        let cli = Cli::try_parse_from([
            "olm",
            "--catalog-max-size",
            "4Gi",
            "--catalog-max-file-size=1Gi",
            "--bundle-max-size",
            "300000000",
            "--bundle-max-file-size",
            "64Mi",
        ])
        .expect("parse");
        assert_eq!(
            (cli.catalog.sizes(), cli.bundle.sizes()),
            (
                Sizes {
                    total: 4 << 30,
                    file: 1 << 30
                },
                Sizes {
                    total: 300_000_000,
                    file: 64 << 20
                }
            )
        );
        assert!(Cli::try_parse_from(["olm", "--bundle-max-size", "lots"]).is_err());
    }

    #[test]
    fn environment_variables_set_the_limits_of_workstation_commands() {
        let defaults = from_lookup(|_| None).expect("defaults");
        assert_eq!(
            defaults,
            Limits {
                raised_by: RaisedBy::Environment,
                ..Limits::default()
            }
        );
        let set =
            from_lookup(|name| (name == "OLM_CATALOG_MAX_FILE_SIZE").then(|| "1Gi".to_string()))
                .expect("set");
        assert_eq!(set.catalog.file, 1 << 30);
        assert_eq!(set.catalog.total, Sizes::CATALOG.total);
        let err = from_lookup(|name| (name == "OLM_BUNDLE_MAX_SIZE").then(|| "big".to_string()))
            .expect_err("not a size");
        assert!(
            err.to_string()
                .starts_with("OLM_BUNDLE_MAX_SIZE: invalid size \"big\""),
            "{err}"
        );
    }
}
