//! What OLM v1's resolver is asked for a ClusterExtension, and how a ClusterCatalog appears to
//! it: the one translation from the API objects to `olm-resolve`'s terms, shared by the
//! controller, the CLI's previews and the catalog browser's upgrade column — including the one
//! rule of which catalogs serve content ([`served`]), so that the controller and the client
//! skip the same catalogs.

use std::collections::BTreeMap;

use olm_api::catalog::{CatalogReason, TYPE_PROGRESSING, TYPE_SERVING};
use olm_api::{ClusterCatalog, ClusterExtension, UpgradeConstraintPolicy};
use olm_catalog::{ChannelName, PackageName};
use olm_k8s::{ConditionStatus, SelectorError, find_status_condition};
use olm_resolve::{
    Availability, CatalogInput, Content, ContentIndex, Installed, LabelSelector, Request,
    VersionRange,
};

/// The extension's catalog selector in `olm-resolve`'s terms.
pub fn selector_of(ext: &ClusterExtension) -> Result<LabelSelector, SelectorError> {
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

/// Why no request can be made for an extension, worded as its status words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// `spec.source.catalog` is missing.
    #[error("catalog source is required")]
    NoCatalogSource,
    /// The selector or the version range is invalid: the resolver's words.
    #[error(transparent)]
    Invalid(#[from] olm_resolve::ResolveError),
}

/// What the resolver asks for on behalf of `ext`, with `installed` as the installed bundle.
///
/// # Errors
///
/// No catalog source, an invalid selector or version range ([`RequestError`]).
pub fn request_of(
    ext: &ClusterExtension,
    installed: Option<Installed>,
) -> Result<Request, RequestError> {
    let Some(filter) = ext.spec.source.catalog.as_ref() else {
        return Err(RequestError::NoCatalogSource);
    };
    let package = PackageName::new(filter.package_name.clone());
    let selector =
        selector_of(ext).map_err(|e| olm_resolve::ResolveError::InvalidSelector(e.to_string()))?;
    let version = match filter.version.as_deref().filter(|v| !v.is_empty()) {
        Some(v) => Some(VersionRange::parse(v)?),
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

/// A ClusterCatalog as the resolver sees it, with `content` when it was read. Without content
/// the catalog is one that serves nothing, and [`served`] says why.
pub fn catalog_input<'a>(
    c: &ClusterCatalog,
    content: Option<&'a ContentIndex>,
) -> CatalogInput<'a> {
    let content = match (content, served(c)) {
        (Some(index), _) => Content::Served(index),
        (None, Err(why)) => Content::NotServing(why.to_string()),
        (None, Ok(_)) => Content::NotServing("its content was not read".to_owned()),
    };
    CatalogInput {
        name: c.metadata.name.clone().unwrap_or_default(),
        labels: labels_of(c),
        priority: c.spec.priority,
        availability: availability_of(c),
        content,
    }
}

/// Where a serving catalog's content is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served<'c> {
    /// `status.resolvedSource.image.ref`: the content under it never changes.
    pub reference: &'c str,
    /// `status.urls.base`, the catalog server's address of the catalog.
    pub base: &'c str,
}

/// Why a ClusterCatalog serves nothing resolution could read. The texts follow
/// `catalog "x" was skipped (not serving: …)` in statuses and client messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotServing {
    /// `spec.availabilityMode: Unavailable`.
    #[error("its availabilityMode is Unavailable")]
    Unavailable,
    /// `Serving` is not True: never unpacked, or no longer served. Carries the catalog's own
    /// account: the message of a `Progressing` condition that is retrying or blocked (a pull
    /// error), else the `Serving` condition's message, else that nothing was unpacked yet.
    #[error("{0}")]
    NoContent(String),
    /// `Serving` is True but `status.resolvedSource` (or its image reference) is missing.
    #[error("its status has no resolved source")]
    NoResolvedSource,
    /// `Serving` is True but `status.urls` is missing.
    #[error("its status has no URLs")]
    NoUrls,
}

/// Whether `c` serves content, and where; the one rule both the extension controller and the
/// client (`olm install`, `olm search`) use to decide which catalogs a resolution reads and
/// which it skips.
///
/// A catalog serves when it is available, its `Serving` condition is True and its status names
/// the resolved image and the URL of its content. A catalog whose new image fails to unpack
/// keeps `Serving` True with the previous content (as upstream's catalogd keeps it), so it
/// serves.
pub fn served(c: &ClusterCatalog) -> Result<Served<'_>, NotServing> {
    if c.spec.availability_mode == olm_api::AvailabilityMode::Unavailable {
        return Err(NotServing::Unavailable);
    }
    let status = c.status.as_ref();
    let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
    let serving = find_status_condition(conditions, TYPE_SERVING);
    if serving.is_none_or(|s| s.status != ConditionStatus::True.as_str()) {
        let progressing = find_status_condition(conditions, TYPE_PROGRESSING).filter(|p| {
            [CatalogReason::Retrying, CatalogReason::Blocked]
                .iter()
                .any(|r| p.reason == r.as_str())
        });
        let why = [progressing, serving]
            .into_iter()
            .flatten()
            .map(|c| c.message.as_str())
            .find(|m| !m.is_empty())
            .unwrap_or("nothing unpacked yet");
        return Err(NotServing::NoContent(why.to_owned()));
    }
    let reference = status
        .and_then(|s| s.resolved_source.as_ref())
        .map(|r| r.image.ref_.as_str())
        .filter(|r| !r.is_empty())
        .ok_or(NotServing::NoResolvedSource)?;
    let base = status
        .and_then(|s| s.urls.as_ref())
        .map(|u| u.base.as_str())
        .ok_or(NotServing::NoUrls)?;
    Ok(Served { reference, base })
}

fn availability_of(c: &ClusterCatalog) -> Availability {
    match c.spec.availability_mode {
        olm_api::AvailabilityMode::Unavailable => Availability::Unavailable,
        olm_api::AvailabilityMode::Available => Availability::Available,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn catalog(mode: &str, status: Value) -> ClusterCatalog {
        serde_json::from_value(json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": "c"},
            "spec": {"source": {"type": "Image", "image": {"ref": "r.example/c:v1"}},
                     "availabilityMode": mode},
            "status": status,
        }))
        .unwrap()
    }

    fn cond(type_: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    const REF: &str = "r.example/c@sha256:0123456789abcdef0123456789abcdef";
    const BASE: &str = "https://catalogd.olmv1-system.svc/catalogs/c";

    /// Which catalogs serve, and the words given for those that do not: the catalog's own
    /// account of a failing unpack comes first, so a status naming a skipped catalog says why.
    #[test]
    fn which_catalogs_serve_and_why_not() {
        let serving = cond("Serving", "True", "Available", "Serving desired content");
        let full = json!({"conditions": [serving],
            "resolvedSource": {"type": "Image", "image": {"ref": REF}},
            "urls": {"base": BASE}});
        let pull_failed = cond(
            "Progressing",
            "True",
            "Retrying",
            "source catalog content: manifest unknown",
        );
        let cases: Vec<(&str, ClusterCatalog, Result<Served<'static>, NotServing>)> = vec![
            (
                "serving",
                catalog("Available", full.clone()),
                Ok(Served {
                    reference: REF,
                    base: BASE,
                }),
            ),
            (
                "a new image failing to unpack while the old content is served",
                catalog(
                    "Available",
                    json!({"conditions": [cond("Serving", "True", "Available", ""), pull_failed.clone()],
                        "resolvedSource": {"type": "Image", "image": {"ref": REF}},
                        "urls": {"base": BASE}}),
                ),
                Ok(Served {
                    reference: REF,
                    base: BASE,
                }),
            ),
            (
                "unavailable",
                catalog("Unavailable", full.clone()),
                Err(NotServing::Unavailable),
            ),
            (
                "no status yet",
                catalog("Available", json!({})),
                Err(NotServing::NoContent("nothing unpacked yet".into())),
            ),
            (
                "first unpack failing: the pull error",
                catalog("Available", json!({"conditions": [pull_failed]})),
                Err(NotServing::NoContent(
                    "source catalog content: manifest unknown".into(),
                )),
            ),
            (
                "progressing normally: the Serving message",
                catalog(
                    "Available",
                    json!({"conditions": [
                        cond("Progressing", "True", "Succeeded", "ok"),
                        cond("Serving", "False", "Unavailable", "content deleted")]}),
                ),
                Err(NotServing::NoContent("content deleted".into())),
            ),
            (
                "serving without a resolved source",
                catalog(
                    "Available",
                    json!({"conditions": [cond("Serving", "True", "Available", "")],
                        "urls": {"base": BASE}}),
                ),
                Err(NotServing::NoResolvedSource),
            ),
            (
                "serving without URLs",
                catalog(
                    "Available",
                    json!({"conditions": [cond("Serving", "True", "Available", "")],
                        "resolvedSource": {"type": "Image", "image": {"ref": REF}}}),
                ),
                Err(NotServing::NoUrls),
            ),
        ];
        for (what, c, want) in cases {
            assert_eq!(served(&c), want, "{what}");
        }
    }

    /// The resolver gets a catalog without content as one that serves nothing, with the reason
    /// [`served`] gives.
    #[test]
    fn a_catalog_without_content_reaches_the_resolver_with_its_reason() {
        let c = catalog("Available", json!({}));
        match catalog_input(&c, None).content {
            Content::NotServing(why) => assert_eq!(why, "nothing unpacked yet"),
            Content::Served(_) => panic!("served without content"),
        }
    }
}
