//! What each CatalogSource's registry holds, as the resolver reads it: fetched with the registry
//! API (`ListPackages`, `GetPackage`, `ListBundles`, as upstream's operator cache does) each time
//! the registry becomes ready, and kept until it changes.
//!
//! Why on READY and not per resolution: a registry's content only changes when its pod (or
//! address) changes, which makes the connection drop and come back; fetching then keeps every
//! resolution free of network calls. Upstream also expires a snapshot after 30 minutes; here a
//! snapshot lives as long as the connection that produced it.
//!
//! Bounds: one fetch may take a minute (upstream's timeout); a registry sending more than
//! [`MAX_BUNDLES`] bundles is refused rather than held in memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use olm_registry::api;
use olm_registry::api::registry_client::RegistryClient;
use olm_v0::ApiKey;
use olm_v0_resolver::entry::from_registry;
use olm_v0_resolver::{Entry, Property, RegistryBundle, SourceKey};

use crate::lock;

/// How long fetching one registry's content may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);
/// The most bundles one registry may list (the largest public catalogs hold about 30,000).
pub const MAX_BUNDLES: usize = 200_000;

/// A package as its registry describes it.
#[derive(Debug, Clone, Default)]
pub struct Package {
    /// Its name.
    pub name: String,
    /// Its default channel.
    pub default_channel: String,
    /// Its deprecation message.
    pub deprecation: Option<String>,
    /// Its channels with their heads' CSVs and their entries, for PackageManifests; only heads
    /// carry a CSV, to bound what a large catalog costs.
    pub channels: Vec<olm_v0::packageserver::packagemanifest::Channel>,
}

/// One registry's content.
#[derive(Debug, Default)]
pub struct Content {
    /// Every channel entry, as the resolver reads it.
    pub entries: Vec<Entry>,
    /// The manifests (JSON) of bundles served inline (no bundle image), by CSV name.
    pub inline: HashMap<String, Arc<Vec<String>>>,
    /// Its packages, in listing order.
    pub packages: Vec<Package>,
}

/// Why a registry's content could not be read (the resolver quotes it in `ResolutionFailed`):
/// upstream's operator cache's words for `ListBundles`, and olm's own, worded alike, for
/// `ListPackages` (which upstream's resolver does not call) and the bounds it has no match for.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// `ListPackages` failed.
    #[error("error encountered while listing packages: {}", status_text(.0))]
    ListPackages(tonic::Status),
    /// `ListBundles` was refused.
    #[error("failed to list bundles: {}", status_text(.0))]
    ListBundles(tonic::Status),
    /// `ListBundles`' stream broke off.
    #[error("error encountered while listing bundles: {}", status_text(.0))]
    ListingBundles(tonic::Status),
    /// The registry lists more bundles than are held.
    #[error("error encountered while listing bundles: more than {MAX_BUNDLES} bundles")]
    TooManyBundles,
    /// The whole fetch took longer than [`FETCH_TIMEOUT`].
    #[error(
        "error encountered while listing bundles: timed out after {}s",
        FETCH_TIMEOUT.as_secs()
    )]
    TimedOut,
}

/// Why a listed bundle is left out of the content: upstream's operator cache logs these and
/// goes on, so one bad bundle does not make a whole catalog unusable.
#[derive(Debug, thiserror::Error)]
enum Skipped {
    /// `GetPackage` failed for its package.
    #[error("failed to retrieve default channel for bundle, continuing: {}", status_text(.0))]
    Package(tonic::Status),
    /// It cannot be read as a resolver entry.
    #[error("failed to construct operator from bundle, continuing: {0}")]
    Entry(#[from] olm_v0_resolver::entry::EntryError),
}

/// A registry's content, or why it could not be read.
pub type Fetched = Arc<Result<Content, FetchError>>;

/// Every CatalogSource's content, by `namespace/name`.
#[derive(Default, Clone)]
pub struct Contents {
    map: Arc<Mutex<HashMap<String, Fetched>>>,
}

impl Contents {
    /// The content of `namespace/name`, if fetched.
    pub fn get(&self, key: &str) -> Option<Fetched> {
        lock(&self.map).get(key).cloned()
    }

    /// Records what a fetch of `key` gave.
    pub fn set(&self, key: &str, content: Result<Content, FetchError>) {
        lock(&self.map).insert(key.to_owned(), Arc::new(content));
    }

    /// Every fetched content, by `namespace/name`.
    pub fn all(&self) -> Vec<(String, Fetched)> {
        lock(&self.map)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Forgets `key` (its CatalogSource is gone).
    pub fn forget(&self, key: &str) {
        lock(&self.map).remove(key);
    }
}

/// Reads a registry's content over `channel`, bounded by [`FETCH_TIMEOUT`].
pub async fn fetch(
    channel: tonic::transport::Channel,
    source: &SourceKey,
) -> Result<Content, FetchError> {
    tokio::time::timeout(FETCH_TIMEOUT, fetch_unbounded(channel, source))
        .await
        .map_err(|_| FetchError::TimedOut)?
}

/// The packages, then the bundles (each an entry, and kept for its package's manifest), then
/// the channel heads' CSVs.
async fn fetch_unbounded(
    channel: tonic::transport::Channel,
    source: &SourceKey,
) -> Result<Content, FetchError> {
    let mut client = RegistryClient::new(channel).max_decoding_message_size(64 << 20);
    let (mut packages, unreadable) = list_packages(&mut client).await?;
    let defaults: HashMap<String, String> = packages
        .iter()
        .map(|p| (p.name.clone(), p.default_channel.clone()))
        .collect();
    let positions: HashMap<String, usize> = packages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.clone(), i))
        .collect();
    let mut content = Content::default();
    let mut bundles = client
        .list_bundles(api::ListBundlesRequest {})
        .await
        .map_err(FetchError::ListBundles)?
        .into_inner();
    while let Some(b) = bundles
        .message()
        .await
        .map_err(FetchError::ListingBundles)?
    {
        if content.entries.len() >= MAX_BUNDLES {
            return Err(FetchError::TooManyBundles);
        }
        keep_for_manifests(&mut packages, &positions, &b);
        if b.bundle_path.is_empty() && !b.object.is_empty() {
            content
                .inline
                .entry(b.csv_name.clone())
                .or_insert_with(|| Arc::new(b.object.clone()));
        }
        let csv = b.csv_name.clone();
        match entry_of(b, source, &defaults, &unreadable) {
            Ok(entry) => content.entries.push(entry),
            Err(why) => {
                tracing::warn!(catalogsource = %source, bundle = %csv, "{why}");
            }
        }
    }
    head_csvs(&mut client, &mut packages).await;
    content.packages = packages;
    Ok(content)
}

/// The resolver's entry for a listed bundle, with its package's default channel; why it is
/// left out when its package could not be read or it cannot be read itself.
fn entry_of(
    b: api::Bundle,
    source: &SourceKey,
    defaults: &HashMap<String, String>,
    unreadable: &HashMap<String, tonic::Status>,
) -> Result<Entry, Skipped> {
    if let Some(status) = unreadable.get(&b.package_name) {
        return Err(Skipped::Package(status.clone()));
    }
    let default_channel = defaults
        .get(b.package_name.as_str())
        .cloned()
        .unwrap_or_default();
    Ok(from_registry(registry_bundle(b), source, &default_channel)?)
}

/// Every package the registry lists, as `GetPackage` describes it, and those `GetPackage`
/// failed for, with the registry's answer (their bundles are left out).
async fn list_packages(
    client: &mut RegistryClient<tonic::transport::Channel>,
) -> Result<(Vec<Package>, HashMap<String, tonic::Status>), FetchError> {
    let mut names = client
        .list_packages(api::ListPackageRequest {})
        .await
        .map_err(FetchError::ListPackages)?
        .into_inner();
    let mut listed = Vec::new();
    while let Some(name) = names.message().await.map_err(FetchError::ListPackages)? {
        listed.push(name.name);
    }
    let mut packages = Vec::with_capacity(listed.len());
    let mut unreadable = HashMap::new();
    for name in listed {
        let package = match client
            .get_package(api::GetPackageRequest { name: name.clone() })
            .await
        {
            Ok(p) => p.into_inner(),
            Err(status) => {
                unreadable.insert(name, status);
                continue;
            }
        };
        packages.push(Package {
            name: package.name,
            default_channel: package.default_channel_name,
            deprecation: package.deprecation.map(|d| d.message),
            channels: package
                .channels
                .into_iter()
                .map(|c| olm_v0::packageserver::packagemanifest::Channel {
                    name: c.name,
                    head: c.csv_name,
                    deprecation: c.deprecation.map(|d| d.message),
                    ..Default::default()
                })
                .collect(),
        });
    }
    Ok((packages, unreadable))
}

/// The property that keeps a bundle out of a PackageManifest's entries (upstream skips it).
const DEPRECATED_PROPERTY: &str = "olm.deprecated";

/// Records `b` as an entry of its channel (unless deprecated by property), and its CSV when it
/// is the channel's head.
fn keep_for_manifests(
    packages: &mut [Package],
    positions: &HashMap<String, usize>,
    b: &api::Bundle,
) {
    let Some(channel) = positions
        .get(&b.package_name)
        .and_then(|i| packages.get_mut(*i))
        .and_then(|p| p.channels.iter_mut().find(|c| c.name == b.channel_name))
    else {
        return;
    };
    if channel.head == b.csv_name && !b.csv_json.is_empty() && channel.csv_json.is_none() {
        channel.csv_json = Some(b.csv_json.clone());
    }
    if b.properties.iter().any(|p| p.r#type == DEPRECATED_PROPERTY) {
        return;
    }
    channel
        .entries
        .push(olm_v0::packageserver::packagemanifest::ChannelEntry {
            name: b.csv_name.clone(),
            version: b.version.clone(),
            deprecation: b.deprecation.as_ref().map(|d| d.message.clone()),
        });
}

/// Fetches the CSV of every channel head `ListBundles` left out (bundles with an image are listed
/// without it), with `GetBundle` as upstream's packageserver does per channel; a channel whose
/// head cannot be read keeps none, and its PackageManifest leaves it out.
async fn head_csvs(
    client: &mut RegistryClient<tonic::transport::Channel>,
    packages: &mut [Package],
) {
    for p in packages.iter_mut() {
        for c in p.channels.iter_mut().filter(|c| c.csv_json.is_none()) {
            let request = api::GetBundleRequest {
                pkg_name: p.name.clone(),
                channel_name: c.name.clone(),
                csv_name: c.head.clone(),
            };
            match client.get_bundle(request).await {
                Ok(b) => {
                    let b = b.into_inner();
                    if !b.csv_json.is_empty() {
                        c.csv_json = Some(b.csv_json);
                    }
                }
                Err(e) => {
                    tracing::warn!(package = %p.name, channel = %c.name, error = %status_text(&e), "error getting bundle, eliding channel");
                }
            }
        }
    }
}

/// A gRPC status as Go's `rpc error: code = … desc = …`.
fn status_text(s: &tonic::Status) -> String {
    format!("rpc error: code = {:?} desc = {}", s.code(), s.message())
}

fn api_keys(list: Vec<api::GroupVersionKind>) -> Vec<ApiKey> {
    list.into_iter()
        .map(|g| ApiKey {
            group: g.group,
            version: g.version,
            kind: g.kind,
            plural: g.plural,
        })
        .collect()
}

fn registry_bundle(b: api::Bundle) -> RegistryBundle {
    RegistryBundle {
        csv_name: b.csv_name,
        package: b.package_name,
        channel: b.channel_name,
        bundle_path: b.bundle_path,
        version: b.version,
        skip_range: b.skip_range,
        replaces: b.replaces,
        skips: b.skips,
        provided_apis: api_keys(b.provided_apis),
        required_apis: api_keys(b.required_apis),
        dependencies: b
            .dependencies
            .into_iter()
            .map(|d| Property {
                kind: d.r#type,
                value: d.value,
            })
            .collect(),
        properties: b
            .properties
            .into_iter()
            .map(|p| Property {
                kind: p.r#type,
                value: p.value,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(package: &str, dependencies: Vec<api::Dependency>) -> api::Bundle {
        api::Bundle {
            csv_name: format!("{package}.v1.0.0"),
            package_name: package.to_owned(),
            channel_name: "stable".to_owned(),
            version: "1.0.0".to_owned(),
            dependencies,
            ..api::Bundle::default()
        }
    }

    /// As upstream's `registrySource.Snapshot` (OLM v0.46.0,
    /// `pkg/controller/registry/resolver/source_registry.go`): a bundle whose package
    /// `GetPackage` cannot read, or that cannot be made an operator, is logged with upstream's
    /// words and left out; the others keep their package's default channel.
    #[test]
    fn bad_bundles_are_left_out_not_the_catalog() {
        let source = SourceKey::new("cat", "olm");
        let defaults = HashMap::from([("good".to_owned(), "stable".to_owned())]);
        let unreadable = HashMap::from([(
            "gone".to_owned(),
            tonic::Status::not_found("package gone not found"),
        )]);
        let entry = entry_of(bundle("good", vec![]), &source, &defaults, &unreadable).unwrap();
        assert_eq!(entry.name, "good.v1.0.0");
        assert!(entry.default_channel);
        let skipped = entry_of(bundle("gone", vec![]), &source, &defaults, &unreadable)
            .unwrap_err()
            .to_string();
        assert_eq!(
            skipped,
            "failed to retrieve default channel for bundle, continuing: rpc error: code = NotFound desc = package gone not found"
        );
        let legacy = api::Dependency {
            r#type: "olm.gvk".to_owned(),
            value: "[".to_owned(),
        };
        let skipped = entry_of(
            bundle("good", vec![legacy]),
            &source,
            &defaults,
            &unreadable,
        )
        .unwrap_err()
        .to_string();
        assert!(
            skipped.starts_with("failed to construct operator from bundle, continuing: failed to translate legacy dependencies to properties"),
            "{skipped}"
        );
    }

    /// Upstream's words for a registry that cannot be listed (the same source): a refused
    /// `ListBundles`, and a stream that breaks off.
    #[test]
    fn listing_failures_in_upstreams_words() {
        let down = || tonic::Status::unavailable("connection refused");
        assert_eq!(
            FetchError::ListBundles(down()).to_string(),
            "failed to list bundles: rpc error: code = Unavailable desc = connection refused"
        );
        assert_eq!(
            FetchError::ListingBundles(down()).to_string(),
            "error encountered while listing bundles: rpc error: code = Unavailable desc = connection refused"
        );
    }
}
