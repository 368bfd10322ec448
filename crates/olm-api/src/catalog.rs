//! `ClusterCatalog`: a catalog image the cluster should pull and serve.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::schema::{
    S, conditions, date_time, enumeration, integer, object, plain_integer, string,
};

/// The desired state of a [`ClusterCatalog`].
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[kube(
    group = "olm.operatorframework.io",
    version = "v1",
    kind = "ClusterCatalog",
    status = "ClusterCatalogStatus",
    schema = "disabled",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCatalogSpec {
    /// Where the catalog content comes from.
    pub source: CatalogSource,
    /// Tie-breaker between catalogs that both satisfy a request; higher wins.
    #[serde(default)]
    pub priority: i32,
    /// Whether the catalog is served at all.
    #[serde(default)]
    pub availability_mode: AvailabilityMode,
}

impl ClusterCatalogSpec {
    /// The catalog image's reference (empty for a source that names none).
    pub fn image_ref(&self) -> &str {
        self.source
            .image
            .as_ref()
            .map(|i| i.ref_.as_str())
            .unwrap_or_default()
    }
}

/// Whether a catalog's content is served.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AvailabilityMode {
    /// Unpacked and served (the default).
    #[default]
    Available,
    /// Not served; treated as if the catalog did not exist.
    Unavailable,
}

/// The only source type: an OCI image.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SourceType {
    /// An OCI image.
    #[default]
    Image,
}

/// Where a catalog comes from (a union on `type`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSource {
    /// Always `Image`.
    #[serde(rename = "type")]
    pub type_: SourceType,
    /// The image, required when `type` is `Image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSource>,
}

/// A catalog image.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImageSource {
    /// The image reference, by tag or by digest.
    #[serde(rename = "ref")]
    pub ref_: String,
    /// Poll the tag for a new digest this often; never when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_minutes: Option<i32>,
}

/// What the catalog controller observed.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCatalogStatus {
    /// `Serving` and `Progressing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The digest the source resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_source: Option<ResolvedCatalogSource>,
    /// Where the content is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urls: Option<CatalogUrls>,
    /// When the content was last extracted from its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_unpacked: Option<Time>,
}

/// The resolved source of a catalog.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedCatalogSource {
    /// Always `Image`.
    #[serde(rename = "type")]
    pub type_: SourceType,
    /// The resolved image.
    pub image: ResolvedImageSource,
}

/// A resolved catalog image.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedImageSource {
    /// `repository@sha256:…`.
    #[serde(rename = "ref")]
    pub ref_: String,
}

/// URLs of the catalog's HTTP API.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CatalogUrls {
    /// Base URL; append `/api/v1/all` or `/api/v1/metas`.
    pub base: String,
}

/// Condition type: the content is (or is not) being served.
pub const TYPE_SERVING: &str = "Serving";
/// Condition type: the catalog is (or is not) moving towards the desired content.
pub const TYPE_PROGRESSING: &str = "Progressing";

/// Reasons of a ClusterCatalog's conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogReason {
    /// Serving True: content is served.
    Available,
    /// Serving False: no content yet (or any more).
    Unavailable,
    /// Serving False: `availabilityMode: Unavailable`.
    UserSpecifiedUnavailable,
    /// Progressing True: the desired content is in place.
    Succeeded,
    /// Progressing True: a retryable error.
    Retrying,
    /// Progressing False: an error only a spec change can fix.
    Blocked,
}

impl CatalogReason {
    /// The reason as written in status.
    pub fn as_str(self) -> &'static str {
        match self {
            CatalogReason::Available => "Available",
            CatalogReason::Unavailable => "Unavailable",
            CatalogReason::UserSpecifiedUnavailable => "UserSpecifiedUnavailable",
            CatalogReason::Succeeded => "Succeeded",
            CatalogReason::Retrying => "Retrying",
            CatalogReason::Blocked => "Blocked",
        }
    }
}

/// The CEL rules shared by `spec.source.image.ref` and `status.resolvedSource.image.ref`:
/// domain, then name.
fn image_ref_common(s: S) -> S {
    s.cel(
        r"self.matches('^([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])((\\.([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+)?(:[0-9]+)?\\b')",
        "must start with a valid domain. valid domains must be alphanumeric characters (lowercase and uppercase) separated by the \".\" character.",
    )
    .cel(
        r"self.find('(\\/[a-z0-9]+((([._]|__|[-]*)[a-z0-9]+)+)?((\\/[a-z0-9]+((([._]|__|[-]*)[a-z0-9]+)+)?)+)?)') != ''",
        "a valid name is required. valid names must contain lowercase alphanumeric characters separated only by the \".\", \"_\", \"__\", \"-\" characters.",
    )
}

fn digest_rules(s: S) -> S {
    s.cel(
        r"self.find('(@.*:)') != '' ? self.find('(@.*:)').matches('(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*[:])') : true",
        "digest algorithm is not valid. valid algorithms must start with an uppercase or lowercase alpha character followed by alphanumeric characters and may contain the \"-\", \"_\", \"+\", and \".\" characters.",
    )
    .cel(
        r"self.find('(@.*:)') != '' ? self.find(':.*$').substring(1).size() >= 32 : true",
        "digest is not valid. the encoded string must be at least 32 characters",
    )
    .cel(
        r"self.find('(@.*:)') != '' ? self.find(':.*$').matches(':[0-9A-Fa-f]*$') : true",
        "digest is not valid. the encoded string must only contain hex characters (A-F, a-f, 0-9)",
    )
}

fn source_type() -> S {
    enumeration(&["Image"]).doc("type is the type of source; the only allowed value is \"Image\".")
}

/// The union rule of `source` and `resolvedSource`.
fn image_union(s: S) -> S {
    s.cel(
        "has(self.type) && self.type == 'Image' ? has(self.image) : !has(self.image)",
        "image is required when source type is Image, and forbidden otherwise",
    )
}

pub(crate) fn spec_schema() -> S {
    let ref_ = string().max_len(1000).doc(
        "ref is the reference to a container image holding the catalog, by tag (registry/name:tag) or by \
         digest (registry/name@sha256:...). It cannot be more than 1000 characters.",
    );
    let ref_ = image_ref_common(ref_)
        .cel(
            r"self.find('(@.*:)') != '' || self.find(':.*$') != ''",
            "must end with a digest or a tag",
        )
        .cel(
            r"self.find('(@.*:)') == '' ? (self.find(':.*$') != '' ? self.find(':.*$').substring(1).size() <= 127 : true) : true",
            "tag is invalid. the tag must not be more than 127 characters",
        )
        .cel(
            r"self.find('(@.*:)') == '' ? (self.find(':.*$') != '' ? self.find(':.*$').matches(':[\\w][\\w.-]*$') : true) : true",
            "tag is invalid. valid tags must begin with a word character (alphanumeric + \"_\") followed by word characters or \".\", and \"-\" characters",
        );
    let ref_ = digest_rules(ref_);
    let image = object(vec![
        (
            "pollIntervalMinutes",
            plain_integer().min(1).doc(
                "pollIntervalMinutes is how often, in minutes, the image tag is checked for new content. \
                 It cannot be set for a digest-based reference. When omitted, the image is not polled.",
            ),
        ),
        ("ref", ref_),
    ])
    .required(&["ref"])
    .cel(
        r"self.ref.find('(@.*:)') != '' ? !has(self.pollIntervalMinutes) : true",
        "cannot specify pollIntervalMinutes while using digest-based image",
    )
    .doc("image configures how catalog contents are sourced from an OCI image. It is required when type is Image, and forbidden otherwise.");
    let source = image_union(
        object(vec![("image", image), ("type", source_type())])
            .required(&["type"])
            .doc("source is where the catalog content comes from. It must be in the File-Based Catalog (FBC) format."),
    );
    object(vec![
        (
            "availabilityMode",
            enumeration(&["Unavailable", "Available"])
                .default_value(json!("Available"))
                .doc(
                    "availabilityMode says whether the catalog is served. \"Available\" (the default) unpacks and serves it; \
                     \"Unavailable\" stops serving it, and clients treat the catalog as if it did not exist.",
                ),
        ),
        (
            "priority",
            integer("int32")
                .default_value(json!(0))
                .max(2147483647)
                .min(-2147483648)
                .doc(
                    "priority breaks ties between ClusterCatalogs that meet a client's requirements; higher numbers win. \
                     The default is 0; negative numbers rank below the default.",
                ),
        ),
        ("source", source),
    ])
    .required(&["source"])
    .doc("spec is the desired state of the ClusterCatalog: the catalog is unpacked and served over the catalog HTTP server.")
}

pub(crate) fn status_schema() -> S {
    let ref_ = image_ref_common(string().max_len(1000).doc(
        "ref is the resolved digest-based image reference, from which other tools can fetch the exact content.",
    ))
    .cel(r"self.find('(@.*:)') != ''", "must end with a digest");
    let ref_ = digest_rules(ref_);
    let resolved = image_union(
        object(vec![
            (
                "image",
                object(vec![("ref", ref_)])
                    .required(&["ref"])
                    .doc("image is the resolved image source."),
            ),
            ("type", source_type()),
        ])
        .required(&["image", "type"])
        .doc("resolvedSource is the source resolved to a digest."),
    );
    object(vec![
        (
            "conditions",
            conditions(
                "conditions are Serving (Available / Unavailable / UserSpecifiedUnavailable) and Progressing \
                 (Succeeded / Retrying / Blocked).",
            ),
        ),
        (
            "lastUnpacked",
            date_time().doc("lastUnpacked is when the catalog content was last extracted from its source."),
        ),
        ("resolvedSource", resolved),
        (
            "urls",
            object(vec![(
                "base",
                string()
                    .max_len(525)
                    .cel("isURL(self)", "must be a valid URL")
                    .cel(
                        r#"isURL(self) ? (url(self).getScheme() == "http" || url(self).getScheme() == "https") : true"#,
                        "scheme must be either http or https",
                    )
                    .doc("base is the URL under which the catalog's HTTP API is served; append /api/v1/all or /api/v1/metas."),
            )])
            .required(&["base"])
            .doc("urls are the URLs at which the catalog can be read."),
        ),
    ])
    .doc("status is the observed state of the ClusterCatalog.")
}
