//! Bundle images for the extension controller: pulled once per digest, parsed once per digest.
//!
//! # Flow of [`Bundles::fetch`]
//! 1. The reference is parsed; a digest reference is used as is, a tag is resolved to its digest
//!    at the registry (one manifest request), as upstream does.
//! 2. A bundle parsed from that digest before is returned from memory (the last
//!    [`BundleOptions::memory_capacity`] digests, least recently used dropped first).
//! 3. Otherwise the image is taken from the disk cache `<unpack_dir>/<owner>/` (upstream's
//!    layout: one directory per ClusterExtension), pulling it there when it is missing; the
//!    owner's other digests are removed once the new one is in place.
//! 4. The tree is read as a registry+v1 bundle with `olm-bundle`.
//!
//! Pulls are held to the image client's bundle limits ([`olm_image::limits`]): a bundle image
//! holding more is refused while it streams, nothing of it kept, and the refusal is remembered
//! by digest, so retries ask the registry for the manifest at most and never download it again.
//!
//! # Guarantees
//! * A digest already in memory costs no registry request when given by digest, one when given
//!   by tag; a digest on disk costs no download.
//! * The whole of a fetch is bounded by [`BundleOptions::timeout`], so an unreachable or hanging
//!   registry fails the fetch instead of holding the reconcile.
//! * No bundle image takes more than the bundle limits on disk or, once read, in memory.
//! * Registry credentials: the image client's own (`--auth-file`), with the cluster's global pull
//!   secret (a `kubernetes.io/dockerconfigjson` Secret) merged over them when one is configured;
//!   see [`Bundles::set_pull_secret`] and [`Bundles::watch_pull_secret`].
//!
//! # Errors
//! [`BundleFetchError`] tells apart an invalid reference, a registry that cannot be reached, an
//! image the registry does not have, an image that is no registry+v1 bundle, and a bundle whose
//! contents (CSV, manifests) do not parse.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use olm_bundle::{Bundle, BundleError};
use olm_image::{AuthConfig, Client, Digest, Expect, Filter, ImageCache, ImageError, ImageRef};

/// The Secret type of a global pull secret.
pub const DOCKER_CONFIG_JSON_TYPE: &str = "kubernetes.io/dockerconfigjson";
/// The key of a `kubernetes.io/dockerconfigjson` Secret holding the config.
pub const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";

/// Where and how bundles are kept.
#[derive(Debug, Clone)]
pub struct BundleOptions {
    /// The directory of unpacked bundle images (upstream's `<cache>/unpack`); each owner's go
    /// under `<unpack_dir>/<owner>/`.
    pub unpack_dir: PathBuf,
    /// How many parsed bundles are kept in memory.
    pub memory_capacity: usize,
    /// How long one fetch (resolve, pull, unpack, parse) may take.
    pub timeout: Duration,
}

impl BundleOptions {
    /// Defaults for images unpacked under `unpack_dir`: 32 bundles in memory, five minutes per
    /// fetch.
    pub fn new(unpack_dir: impl Into<PathBuf>) -> BundleOptions {
        BundleOptions {
            unpack_dir: unpack_dir.into(),
            memory_capacity: 32,
            timeout: Duration::from_secs(5 * 60),
        }
    }
}

/// Why a bundle could not be fetched. Every variant names the image.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleFetchError {
    /// The image reference does not parse.
    #[error("{source}")]
    InvalidReference {
        /// The image as given.
        image: String,
        /// The parser's error.
        #[source]
        source: ImageError,
    },
    /// The owner is no Kubernetes object name, so it cannot name a cache directory.
    #[error("invalid bundle cache owner {}", olm_goenc::quote(owner))]
    InvalidOwner {
        /// The owner as given.
        owner: String,
    },
    /// The registry has no such image (or repository).
    #[error("image {image} not found: {source}")]
    NotFound {
        /// The image.
        image: String,
        /// The registry's answer.
        #[source]
        source: ImageError,
    },
    /// The registry could not be reached, refused the request, or failed it.
    #[error("pulling image {image}: {source}")]
    Registry {
        /// The image.
        image: String,
        /// What failed.
        #[source]
        source: ImageError,
    },
    /// The fetch took longer than [`BundleOptions::timeout`].
    #[error("pulling image {image}: timed out after {after:?}")]
    Timeout {
        /// The image.
        image: String,
        /// The limit.
        after: Duration,
    },
    /// The image holds more than the bundle limits allow; the message names the limit and the
    /// flag that raises it.
    #[error("{source}")]
    TooLarge {
        /// The image.
        image: String,
        /// The refusal.
        #[source]
        source: ImageError,
    },
    /// The image is not a registry+v1 bundle.
    #[error("image {image} is not a registry+v1 bundle: {reason}")]
    NotABundle {
        /// The image.
        image: String,
        /// What is missing.
        reason: String,
    },
    /// The image is laid out as a bundle but its contents do not parse (CSV, manifests,
    /// annotations).
    #[error("invalid bundle {image}: {source}")]
    InvalidBundle {
        /// The image.
        image: String,
        /// The bundle reader's error.
        #[source]
        source: BundleError,
    },
    /// The local cache could not be read or written.
    #[error("bundle cache {}: {message}", path.display())]
    Cache {
        /// The directory involved.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The global pull secret is unusable.
    #[error("global pull secret {secret}: {message}")]
    PullSecret {
        /// `<namespace>/<name>`.
        secret: String,
        /// What is wrong with it.
        message: String,
    },
}

/// Parsed bundles by digest, least recently used first.
struct Memory {
    capacity: usize,
    entries: VecDeque<(Digest, Arc<Bundle>)>,
}

impl Memory {
    fn get(&mut self, digest: &Digest) -> Option<Arc<Bundle>> {
        let at = self.entries.iter().position(|(d, _)| d == digest)?;
        let entry = self.entries.remove(at)?;
        let bundle = entry.1.clone();
        self.entries.push_back(entry);
        Some(bundle)
    }

    fn put(&mut self, digest: Digest, bundle: Arc<Bundle>) {
        if self.capacity == 0 {
            return;
        }
        self.entries.retain(|(d, _)| *d != digest);
        while self.entries.len() >= self.capacity {
            self.entries.pop_front();
        }
        self.entries.push_back((digest, bundle));
    }
}

/// The bundle source of the extension controller. Cheap to share in an `Arc`.
pub struct Bundles {
    base: Client,
    /// `base` with the global pull secret merged in, when there is one.
    client: RwLock<Client>,
    options: BundleOptions,
    memory: Mutex<Memory>,
}

impl std::fmt::Debug for Bundles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bundles")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Whether a registry error says the image (or its repository) does not exist.
fn is_not_found(e: &ImageError) -> bool {
    match e {
        ImageError::Registry { message, .. } => {
            ["MANIFEST_UNKNOWN", "NAME_UNKNOWN", "HTTP 404"]
                .iter()
                .any(|code| message.contains(code))
                || message.to_ascii_lowercase().contains("not found")
        }
        _ => false,
    }
}

impl Bundles {
    /// A bundle source pulling with `images` (whose credentials it starts from).
    pub fn new(images: Client, options: BundleOptions) -> Bundles {
        let memory = Memory {
            capacity: options.memory_capacity,
            entries: VecDeque::new(),
        };
        Bundles {
            client: RwLock::new(images.clone()),
            base: images,
            options,
            memory: Mutex::new(memory),
        }
    }

    fn memory(&self) -> MutexGuard<'_, Memory> {
        // Every update is a single push or remove, so a poisoned cache is still consistent.
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn client(&self) -> Client {
        self.client
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Where `owner`'s images are unpacked.
    pub fn owner_dir(&self, owner: &str) -> PathBuf {
        self.options.unpack_dir.join(owner)
    }

    /// Uses `secret`'s credentials over the image client's own from now on; `None` goes back to
    /// the image client's own.
    pub fn set_pull_secret(&self, secret: Option<&AuthConfig>) {
        let client = match secret {
            None => self.base.clone(),
            Some(auth) => self.base.with_auth(self.base.options().auth.merged(auth)),
        };
        *self.client.write().unwrap_or_else(|e| e.into_inner()) = client;
    }

    /// Reads the global pull secret `namespace/name` once and uses it (see
    /// [`Bundles::set_pull_secret`]); a missing Secret means no pull secret.
    ///
    /// Errors: [`BundleFetchError::PullSecret`] when the Secret cannot be read, is not of type
    /// `kubernetes.io/dockerconfigjson`, or its config does not parse; the credentials in use
    /// are then left as they were.
    pub async fn load_pull_secret(
        &self,
        client: &kube::Client,
        namespace: &str,
        name: &str,
    ) -> Result<(), BundleFetchError> {
        let api: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
        let secret = api
            .get_opt(name)
            .await
            .map_err(|e| BundleFetchError::PullSecret {
                secret: format!("{namespace}/{name}"),
                message: e.to_string(),
            })?;
        let auth = secret
            .map(|s| pull_secret_auth(&s, namespace, name))
            .transpose()?;
        self.set_pull_secret(auth.as_ref());
        Ok(())
    }

    /// Follows the global pull secret `namespace/name` until `shutdown`, applying each version
    /// of it (and dropping it when the Secret is deleted). An unusable version is logged and
    /// the previous credentials stay.
    pub async fn watch_pull_secret(
        &self,
        client: kube::Client,
        namespace: &str,
        name: &str,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        use kube::runtime::watcher;
        let api: kube::Api<Secret> = kube::Api::namespaced(client, namespace);
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let events = watcher::watcher(api, config);
        let mut events = std::pin::pin!(events.take_until(shutdown));
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Apply(s) | watcher::Event::InitApply(s)) => {
                    match pull_secret_auth(&s, namespace, name) {
                        Ok(auth) => self.set_pull_secret(Some(&auth)),
                        Err(e) => tracing::warn!(error = %e, "ignoring the global pull secret"),
                    }
                }
                Ok(watcher::Event::Delete(_)) => self.set_pull_secret(None),
                Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
                Err(e) => tracing::warn!(error = %e, "watching the global pull secret"),
            }
        }
    }

    /// The bundle in `image`, pulled into `owner`'s cache directory. See the module
    /// documentation for the flow.
    pub async fn fetch(&self, image: &str, owner: &str) -> Result<Arc<Bundle>, BundleFetchError> {
        self.fetch_with(image, owner, None).await
    }

    /// [`Bundles::fetch`] with `extra` credentials over those in use (an OLM v0 CatalogSource's
    /// `spec.secrets`, which upstream gives its unpack Pods as image pull secrets).
    pub async fn fetch_with(
        &self,
        image: &str,
        owner: &str,
        extra: Option<&AuthConfig>,
    ) -> Result<Arc<Bundle>, BundleFetchError> {
        if !olm_k8s::is_dns1123_subdomain(owner) {
            return Err(BundleFetchError::InvalidOwner {
                owner: owner.to_owned(),
            });
        }
        let reference: ImageRef =
            image
                .parse()
                .map_err(|source| BundleFetchError::InvalidReference {
                    image: image.to_owned(),
                    source,
                })?;
        let after = self.options.timeout;
        let client = match extra {
            None => self.client(),
            Some(auth) => {
                let client = self.client();
                client.with_auth(client.options().auth.merged(auth))
            }
        };
        tokio::time::timeout(after, self.fetch_ref(client, image, &reference, owner))
            .await
            .unwrap_or_else(|_| {
                Err(BundleFetchError::Timeout {
                    image: image.to_owned(),
                    after,
                })
            })
    }

    async fn fetch_ref(
        &self,
        client: Client,
        image: &str,
        reference: &ImageRef,
        owner: &str,
    ) -> Result<Arc<Bundle>, BundleFetchError> {
        let registry = |source: ImageError| {
            if matches!(source, ImageError::TooLarge { .. }) {
                BundleFetchError::TooLarge {
                    image: image.to_owned(),
                    source,
                }
            } else if is_not_found(&source) {
                BundleFetchError::NotFound {
                    image: image.to_owned(),
                    source,
                }
            } else {
                BundleFetchError::Registry {
                    image: image.to_owned(),
                    source,
                }
            }
        };
        let digest: Digest = match reference.digest().and_then(|d| d.parse().ok()) {
            Some(d) => d,
            None => client.resolve(reference).await.map_err(registry)?,
        };
        if let Some(bundle) = self.memory().get(&digest) {
            return Ok(bundle);
        }
        let cache = ImageCache::new(self.owner_dir(owner));
        let pinned = reference.with_digest(&digest);
        let path = match cache.get(&digest, &Filter::All) {
            Some(entry) => entry.path,
            None => {
                let pulled = client
                    .pull_cached(&pinned, &cache, &Filter::All, Expect::Bundle)
                    .await
                    .map_err(registry)?;
                // Upstream keeps one image per owner: the one it just unpacked.
                if let Err(e) = cache.retain(std::slice::from_ref(&digest)) {
                    tracing::warn!(owner, error = %e, "removing an owner's previous bundle images");
                }
                pulled.path
            }
        };
        let image_name = image.to_owned();
        let bundle = tokio::task::spawn_blocking(move || read_bundle(&image_name, &path))
            .await
            .map_err(|e| BundleFetchError::Cache {
                path: self.owner_dir(owner),
                message: e.to_string(),
            })??;
        let bundle = Arc::new(bundle);
        self.memory().put(digest, bundle.clone());
        Ok(bundle)
    }

    /// Removes `owner`'s unpacked images (the `cleanup-unpack-cache` finalizer). Parsed bundles
    /// stay in memory: they are keyed by digest and may serve another owner.
    ///
    /// Errors: [`BundleFetchError::Cache`] when the directory cannot be removed; a missing one is
    /// fine.
    pub fn forget_owner(&self, owner: &str) -> Result<(), BundleFetchError> {
        if !olm_k8s::is_dns1123_subdomain(owner) {
            return Err(BundleFetchError::InvalidOwner {
                owner: owner.to_owned(),
            });
        }
        let dir = self.owner_dir(owner);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(BundleFetchError::Cache {
                path: dir,
                message: e.to_string(),
            }),
        }
    }
}

/// The credentials of the pull secrets `names` in `namespace`, merged in order (later ones win
/// for the same registry). As a kubelet does with a Pod's `imagePullSecrets`, a Secret that is
/// missing or unusable is skipped with a warning; the pull then fails on the registry's answer.
///
/// Errors: the API server's, when a Secret cannot be read.
pub async fn pull_secrets_auth(
    client: &kube::Client,
    namespace: &str,
    names: &[String],
) -> Result<AuthConfig, kube::Error> {
    let api: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
    let mut auth = AuthConfig::anonymous();
    for name in names {
        match api.get_opt(name).await? {
            None => tracing::warn!(namespace, secret = %name, "pull secret not found; skipped"),
            Some(secret) => match pull_secret_auth(&secret, namespace, name) {
                Ok(a) => auth = auth.merged(&a),
                Err(e) => {
                    tracing::warn!(namespace, secret = %name, error = %e, "pull secret unusable; skipped")
                }
            },
        }
    }
    Ok(auth)
}

/// The credentials of a pull secret.
fn pull_secret_auth(
    secret: &Secret,
    namespace: &str,
    name: &str,
) -> Result<AuthConfig, BundleFetchError> {
    let id = format!("{namespace}/{name}");
    let fail = |message: String| BundleFetchError::PullSecret {
        secret: id.clone(),
        message,
    };
    let type_ = secret.type_.as_deref().unwrap_or_default();
    if type_ != DOCKER_CONFIG_JSON_TYPE {
        return Err(fail(format!(
            "type is {}, not {DOCKER_CONFIG_JSON_TYPE}",
            olm_goenc::quote(type_)
        )));
    }
    let data = secret
        .data
        .as_ref()
        .and_then(|d| d.get(DOCKER_CONFIG_JSON_KEY))
        .ok_or_else(|| fail(format!("has no {DOCKER_CONFIG_JSON_KEY} key")))?;
    AuthConfig::from_dockerconfigjson(&data.0, &id).map_err(|e| fail(e.to_string()))
}

/// Reads an unpacked image as a registry+v1 bundle.
fn read_bundle(image: &str, root: &Path) -> Result<Bundle, BundleFetchError> {
    let not_a_bundle = |reason: &str| BundleFetchError::NotABundle {
        image: image.to_owned(),
        reason: reason.to_owned(),
    };
    if !root.join("manifests").is_dir() {
        return Err(not_a_bundle("it has no manifests directory"));
    }
    if !root.join("metadata").join("annotations.yaml").is_file() {
        return Err(not_a_bundle("it has no metadata/annotations.yaml"));
    }
    Bundle::from_dir(root).map_err(|source| match source {
        BundleError::NoAnnotations => not_a_bundle(&source.to_string()),
        source => BundleFetchError::InvalidBundle {
            image: image.to_owned(),
            source,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> Digest {
        Digest::of(&[n])
    }

    fn bundle() -> Arc<Bundle> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/bundles/argocd-operator/0.18.0");
        #[allow(clippy::expect_used)]
        Arc::new(Bundle::from_dir(dir).expect("a bundle"))
    }

    #[test]
    fn memory_drops_the_least_recently_used() {
        let b = bundle();
        let mut m = Memory {
            capacity: 2,
            entries: VecDeque::new(),
        };
        m.put(digest(1), b.clone());
        m.put(digest(2), b.clone());
        assert!(m.get(&digest(1)).is_some());
        m.put(digest(3), b.clone());
        assert!(m.get(&digest(2)).is_none(), "2 was used least recently");
        assert!(m.get(&digest(1)).is_some());
        assert!(m.get(&digest(3)).is_some());
        assert_eq!(m.entries.len(), 2);
    }

    #[test]
    fn pull_secrets_must_be_dockerconfigjson() {
        let mut s = Secret {
            type_: Some("Opaque".into()),
            ..Secret::default()
        };
        let e = pull_secret_auth(&s, "ns", "pull").expect_err("wrong type");
        assert_eq!(
            e.to_string(),
            "global pull secret ns/pull: type is \"Opaque\", not kubernetes.io/dockerconfigjson"
        );
        s.type_ = Some(DOCKER_CONFIG_JSON_TYPE.into());
        s.data = Some(
            [(
                DOCKER_CONFIG_JSON_KEY.to_owned(),
                k8s_openapi::ByteString(
                    br#"{"auths":{"r.example":{"registrytoken":"t"}}}"#.to_vec(),
                ),
            )]
            .into(),
        );
        let auth = pull_secret_auth(&s, "ns", "pull").expect("usable");
        assert!(auth.credential_for("r.example", "x").is_some());
    }
}
