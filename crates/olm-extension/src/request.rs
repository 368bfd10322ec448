//! What OLM v1's resolver is asked for a ClusterExtension, and how a ClusterCatalog appears to
//! it: the one translation from the API objects to `olm-resolve`'s terms, shared by the
//! controller, the CLI's previews and the catalog browser's upgrade column.

use std::collections::BTreeMap;

use olm_api::{ClusterCatalog, ClusterExtension, UpgradeConstraintPolicy};
use olm_catalog::{ChannelName, PackageName};
use olm_resolve::{
    Availability, CatalogInput, ContentIndex, Installed, LabelSelector, Request, VersionRange,
};

/// The extension's catalog selector in `olm-resolve`'s terms.
pub fn selector_of(ext: &ClusterExtension) -> Result<LabelSelector, String> {
    let Some(sel) = ext
        .spec
        .source
        .catalog
        .as_ref()
        .and_then(|c| c.selector.as_ref())
    else {
        return Ok(LabelSelector::default());
    };
    olm_api::selector::from_api(sel)
}

/// What the resolver asks for on behalf of `ext`, with `installed` as the installed bundle.
///
/// Errors: no catalog source, an invalid selector or version range, worded as the extension's
/// status words them.
pub fn request_of(ext: &ClusterExtension, installed: Option<Installed>) -> Result<Request, String> {
    let Some(filter) = ext.spec.source.catalog.as_ref() else {
        return Err("catalog source is required".to_string());
    };
    let package = PackageName::new(filter.package_name.clone());
    let selector =
        selector_of(ext).map_err(|e| olm_resolve::ResolveError::InvalidSelector(e).to_string())?;
    let version = match filter.version.as_deref().filter(|v| !v.is_empty()) {
        Some(v) => Some(VersionRange::parse(v).map_err(|e| e.to_string())?),
        None => None,
    };
    Ok(Request {
        package,
        channels: filter
            .channels
            .iter()
            .map(|c| ChannelName::new(c.clone()))
            .collect(),
        version,
        selector,
        policy: match filter.upgrade_constraint_policy {
            UpgradeConstraintPolicy::CatalogProvided => {
                olm_resolve::UpgradeConstraintPolicy::CatalogProvided
            }
            UpgradeConstraintPolicy::SelfCertified => {
                olm_resolve::UpgradeConstraintPolicy::SelfCertified
            }
        },
        installed,
    })
}

/// The catalog's labels, which an extension's selector matches.
pub fn labels_of(c: &ClusterCatalog) -> BTreeMap<String, String> {
    c.metadata.labels.clone().unwrap_or_default()
}

/// A ClusterCatalog as the resolver sees it, with `content` when it could be read.
pub fn catalog_input<'a>(
    c: &ClusterCatalog,
    content: Option<&'a ContentIndex>,
) -> CatalogInput<'a> {
    CatalogInput {
        name: c.metadata.name.clone().unwrap_or_default(),
        labels: labels_of(c),
        priority: c.spec.priority,
        availability: availability_of(c),
        content,
    }
}

fn availability_of(c: &ClusterCatalog) -> Availability {
    match c.spec.availability_mode {
        olm_api::AvailabilityMode::Unavailable => Availability::Unavailable,
        olm_api::AvailabilityMode::Available => Availability::Available,
    }
}
