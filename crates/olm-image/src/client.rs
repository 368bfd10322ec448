//! The registry shell: push built images, resolve tags, pull and unpack.
//!
//! A thin layer over `oci-client`: it decides the protocol per registry, picks credentials, maps
//! failures to [`ImageError`] with the reference and the step that failed, and hands layer bytes to
//! the pure unpacker. Layers are streamed to files first (never held whole in memory) and their
//! digests verified by `oci-client` before they are unpacked.
//!
//! Every pull is held to the client's [`Limits`] for the kind of image it expects: the layers
//! the manifest declares, the bytes each download may bring, the image config, and the unpacked
//! files. An image refused for its size is remembered by digest ([`Refusals`]), so a retry or a
//! poll of the same digest answers with the same refusal without downloading a layer again.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};

use crate::assemble::{CATALOG_CONFIGS_LABEL, Image, OCI_MANIFEST_MEDIA_TYPE};
use crate::auth::{AuthConfig, Credential};
use crate::cache::{CacheMeta, ImageCache, unique_dir};
use crate::digest::Digest;
use crate::error::ImageError;
use crate::limits::{self, Exceeded, Expect, Kind, Limits, Refusals, Sizes};
use crate::mirrors::{Registries, Route};
use crate::unpack::{self, Filter, UnpackError, UnpackStats};
use olm_k8s::chain;

/// The error of a registries.conf rule that leaves nowhere to pull from (no location parses).
fn no_route(reference: &ImageRef, action: &str) -> ImageError {
    ImageError::Registry {
        reference: reference.to_string(),
        action: action.to_owned(),
        message: "the registries.conf rewrites it to no valid reference".to_owned(),
    }
}

/// Layer media types we can unpack: OCI and docker; gzip, zstd or plain tar.
pub const ACCEPTED_LAYER_MEDIA_TYPES: &[&str] = &[
    "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.oci.image.layer.v1.tar+zstd",
    "application/vnd.docker.image.rootfs.diff.tar",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
    "application/vnd.oci.image.layer.nondistributable.v1.tar",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
    "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
];

/// An image reference: `[registry/]repository[:tag][@sha256:…]`, parsed the way docker does
/// (no registry means `docker.io`, no tag or digest means `:latest`).
#[derive(Clone, PartialEq, Eq)]
pub struct ImageRef(Reference);

impl ImageRef {
    /// The registry host (with port), e.g. `127.0.0.1:5000` or `quay.io`.
    pub fn registry(&self) -> &str {
        self.0.registry()
    }
    /// The repository path, e.g. `operatorhubio/catalog`.
    pub fn repository(&self) -> &str {
        self.0.repository()
    }
    /// The tag, if the reference has one.
    pub fn tag(&self) -> Option<&str> {
        self.0.tag()
    }
    /// The digest, if the reference pins one.
    pub fn digest(&self) -> Option<&str> {
        self.0.digest()
    }
    /// The same repository pinned to `digest` (tag dropped).
    pub fn with_digest(&self, digest: &Digest) -> ImageRef {
        ImageRef(Reference::with_digest(
            self.0.registry().to_string(),
            self.0.repository().to_string(),
            digest.to_string(),
        ))
    }

    /// Whether container tools would talk plain HTTP to this registry: loopback only.
    pub fn is_loopback(&self) -> bool {
        let host = self.registry();
        let host = if let Some(rest) = host.strip_prefix('[') {
            rest.split(']').next().unwrap_or(rest)
        } else {
            host.rsplit_once(':').map_or(host, |(h, _)| h)
        };
        host == "localhost"
            || host == "::1"
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

impl ImageRef {
    /// Whether a command-line argument that is not a file names an image in a registry: its
    /// first path segment is a host — it holds a dot or a port (`quay.io/…`, `127.0.0.1:5000/…`)
    /// or is `localhost`. A bare `name:tag` would be docker.io, which opm does not assume
    /// either: such an argument is reported as a missing file instead.
    pub fn looks_like_registry_reference(arg: &str) -> bool {
        arg.split_once('/').is_some_and(|(host, _)| {
            // `./dir` and `../dir` are paths, not hosts.
            !host.starts_with('.') && (host.contains(['.', ':']) || host == "localhost")
        })
    }
}

impl FromStr for ImageRef {
    type Err = ImageError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parsed = crate::reference::parse(s).map_err(|e| ImageError::InvalidReference {
            reference: s.to_string(),
            message: e.to_string(),
        })?;
        Ok(ImageRef(docker_domain(parsed)))
    }
}

/// Docker (`distribution/reference`) reads a first path component holding an upper-case letter
/// as the registry host even without a dot or a port (`MyHost/app` is the repository `app` on
/// `MyHost`), since a repository name may not have one. `oci-spec` files such a reference under
/// `docker.io` with the upper-case repository `MyHost/app`, which no registry accepts and which
/// does not parse again once printed; this puts the host back where docker has it.
fn docker_domain(r: Reference) -> Reference {
    if r.registry() != "docker.io" || !r.repository().bytes().any(|b| b.is_ascii_uppercase()) {
        return r;
    }
    let Some((host, repository)) = r.repository().split_once('/') else {
        return r;
    };
    let (host, repository) = (host.to_string(), repository.to_string());
    match (r.tag(), r.digest()) {
        (Some(tag), Some(digest)) => {
            Reference::with_tag_and_digest(host, repository, tag.to_string(), digest.to_string())
        }
        (None, Some(digest)) => Reference::with_digest(host, repository, digest.to_string()),
        (Some(tag), None) => Reference::with_tag(host, repository, tag.to_string()),
        (None, None) => Reference::with_tag(host, repository, "latest".to_string()),
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.whole())
    }
}

impl fmt::Debug for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ImageRef({})", self.0.whole())
    }
}

/// Which protocol to speak to a registry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    /// Plain HTTP for loopback registries (`localhost`, `127.0.0.0/8`), HTTPS for all others, as
    /// container tools do.
    #[default]
    Auto,
    /// Plain HTTP everywhere (`--plain-http`).
    PlainHttp,
    /// HTTPS everywhere, loopback included (a local registry with a certificate).
    Https,
}

/// How to reach registries.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// HTTP or HTTPS; see [`Protocol`].
    pub protocol: Protocol,
    /// Credentials; see [`AuthConfig::load_default`].
    pub auth: AuthConfig,
    /// Extra PEM CA certificates trusted besides the system roots, for registries with a private
    /// CA (catalogd's `--pull-cas-dir`).
    pub ca_certificates: Vec<Vec<u8>>,
    /// How long a registry may stay silent: the longest wait for an answer to one request, and
    /// the longest pause inside a blob transfer. `None` is [`DEFAULT_SILENCE`].
    pub silence: Option<Duration>,
    /// How much a catalog or bundle image may hold.
    pub limits: Limits,
    /// Rewrites and mirrors of a registries.conf (`olm run --registries-conf`): where an image
    /// is pulled from, and which registries speak plain HTTP.
    pub registries: Registries,
}

/// How long a registry may stay silent by default before the operation fails.
pub const DEFAULT_SILENCE: Duration = Duration::from_secs(30);

/// A pulled image: what was resolved and where it was unpacked.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The digest the reference resolved to (the image index digest for multi-platform images).
    pub digest: Digest,
    /// The digest of the platform image manifest whose layers were unpacked.
    pub manifest_digest: Digest,
    /// The image config labels.
    pub labels: BTreeMap<String, String>,
    /// The unpacked tree.
    pub path: PathBuf,
    /// What unpacking did; all zero on a cache hit.
    pub stats: UnpackStats,
    /// Whether the tree came from the cache.
    pub cached: bool,
}

impl Pulled {
    /// The directory holding the file-based catalog, for a catalog image: the unpacked tree
    /// joined with the `operators.operatorframework.io.index.configs.v1` label's path. `None`
    /// when the image has no such label (or it is not a clean path).
    pub fn catalog_dir(&self) -> Option<PathBuf> {
        match Filter::catalog_configs(self.labels.get(CATALOG_CONFIGS_LABEL)?)? {
            Filter::Under(rel) => Some(self.path.join(rel)),
            _ => None,
        }
    }
}

/// Talks to registries. Cheap to clone; one per process is enough: the underlying HTTP clients
/// are built on first use and shared by clones, so system CA certificates are loaded once and
/// registry tokens are reused across calls. There is one per protocol and credential, because
/// `oci-client` remembers one credential per registry host while ours may differ by repository.
#[derive(Clone, Default)]
pub struct Client {
    options: ClientOptions,
    clients: Arc<Mutex<HashMap<ClientKey, oci_client::Client>>>,
    /// Shared by clones and by [`Client::with_auth`]'s clients.
    refused: Arc<Mutex<Refusals>>,
}

/// The most an image config may hold: configs are a few kilobytes (a long build history makes
/// tens), and one is read into memory.
const MAX_CONFIG_BYTES: u64 = 4 << 20;

/// Whether HTTPS is used, and the credential.
type ClientKey = (bool, Option<Credential>);

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Installs ring as the process-wide rustls provider. The workspace builds rustls with ring only
/// (kube uses ring, and oci-client is built without its aws-lc-rs default); with a single
/// provider compiled in this is a formality, but reqwest built with `rustls-no-provider` needs
/// one installed before its first TLS client. Losing the race to another installer is fine.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl Client {
    /// A client with the given options.
    pub fn new(options: ClientOptions) -> Client {
        install_crypto_provider();
        Client {
            options,
            ..Client::default()
        }
    }

    /// The options the client was made with (a pull secret is merged into their `auth` to make
    /// a client for the cluster's registries).
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// This client with `auth` as its credentials, its other options kept. It shares the
    /// registry connections (kept per credential) and the memory of images refused for their
    /// size, so a pull with other credentials does not download a refused image again.
    pub fn with_auth(&self, auth: AuthConfig) -> Client {
        Client {
            options: ClientOptions {
                auth,
                ..self.options.clone()
            },
            clients: Arc::clone(&self.clients),
            refused: Arc::clone(&self.refused),
        }
    }

    /// The refusal of `digest` as `kind` under this client's limits, as the error a pull of
    /// `reference` returns.
    fn refused(
        &self,
        reference: &ImageRef,
        digest: &Digest,
        filter: &Filter,
        kind: Kind,
    ) -> Result<(), ImageError> {
        let sizes = self.options.limits.of(kind);
        let refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        match refused.get(digest, filter, kind, sizes) {
            Some(exceeded) => Err(ImageError::TooLarge {
                reference: reference.with_digest(digest).to_string(),
                exceeded: exceeded.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Turns what went over into the error, and remembers it for `digest`.
    fn refuse(
        &self,
        reference: &ImageRef,
        digest: &Digest,
        filter: &Filter,
        kind: Kind,
        over: limits::Over,
    ) -> ImageError {
        let exceeded = Exceeded {
            kind,
            over,
            raised_by: self.options.limits.raised_by,
        };
        let sizes = self.options.limits.of(kind);
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remember(digest, filter, sizes, exceeded.clone());
        ImageError::TooLarge {
            reference: reference.with_digest(digest).to_string(),
            exceeded,
        }
    }

    /// The `oci-client` for `reference`'s registry, built on first use.
    fn oci(&self, reference: &ImageRef) -> Result<oci_client::Client, ImageError> {
        let insecure = self
            .options
            .registries
            .insecure_hosts()
            .contains(reference.registry());
        let https = match self.options.protocol {
            Protocol::PlainHttp => false,
            Protocol::Https => true,
            Protocol::Auto => !reference.is_loopback() && !insecure,
        };
        let credential = self
            .options
            .auth
            .credential_for(reference.registry(), reference.repository())
            .cloned();
        let key = (https, credential);
        // A poisoned lock only means another thread panicked while inserting; the map is intact.
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let protocol = if https {
            ClientProtocol::Https
        } else {
            ClientProtocol::Http
        };
        let client = self.build_oci(reference, protocol)?;
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// Built with `try_from` because `oci_client::Client::new` silently falls back to a default
    /// (HTTPS, no extra CAs) config when building fails, e.g. on a malformed CA certificate.
    fn build_oci(
        &self,
        reference: &ImageRef,
        protocol: ClientProtocol,
    ) -> Result<oci_client::Client, ImageError> {
        let extra_root_certificates = self
            .options
            .ca_certificates
            .iter()
            .map(|pem| Certificate {
                encoding: CertificateEncoding::Pem,
                data: pem.clone(),
            })
            .collect();
        oci_client::Client::try_from(ClientConfig {
            protocol,
            extra_root_certificates,
            connect_timeout: Some(Duration::from_secs(15).min(self.silence())),
            read_timeout: Some(self.silence()),
            ..ClientConfig::default()
        })
        .map_err(|e| ImageError::Registry {
            reference: reference.to_string(),
            action: "setting up a registry client for".into(),
            message: chain(&e),
        })
    }

    fn silence(&self) -> Duration {
        self.options.silence.unwrap_or(DEFAULT_SILENCE)
    }

    /// Runs one request, failing it when the registry does not answer in time. The HTTP
    /// client's own read timeout does not cover the wait for response headers, so a registry
    /// that accepts connections and never answers would otherwise hold the caller forever.
    async fn answered<T>(
        &self,
        reference: &ImageRef,
        action: &str,
        request: impl std::future::Future<Output = Result<T, oci_client::errors::OciDistributionError>>,
    ) -> Result<Result<T, oci_client::errors::OciDistributionError>, ImageError> {
        let limit = self.silence();
        tokio::time::timeout(limit, request)
            .await
            .map_err(|_| silent(reference, action, limit))
    }

    fn auth(&self, reference: &ImageRef) -> RegistryAuth {
        match self
            .options
            .auth
            .credential_for(reference.registry(), reference.repository())
        {
            Some(Credential::Basic { username, password }) => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
            Some(Credential::Bearer(token)) => RegistryAuth::Bearer(token.clone()),
            None => RegistryAuth::Anonymous,
        }
    }

    /// Pushes `image` to `reference` and returns its digest.
    ///
    /// Blobs the registry already has are not uploaded again; the manifest is pushed byte for
    /// byte as built, so the returned digest equals [`Image::digest`]. A reference that pins a
    /// different digest is refused before anything is uploaded.
    ///
    /// # Errors
    /// [`ImageError::PushRefused`] names the blob or manifest the registry refused and quotes
    /// its answer.
    pub async fn push(&self, image: &Image, reference: &ImageRef) -> Result<Digest, ImageError> {
        if let Some(pinned) = reference.digest()
            && pinned != image.digest().as_str()
        {
            return Err(ImageError::DigestMismatch {
                reference: reference.to_string(),
                expected: pinned.to_string(),
                actual: image.digest().to_string(),
            });
        }
        let oci = self.oci(reference)?;
        let auth = self.auth(reference);
        let refused = |what: String| {
            let reference = reference.to_string();
            move |e: oci_client::errors::OciDistributionError| {
                if unreachable(&e) {
                    // Nothing refused anything: the registry was never reached.
                    ImageError::Registry {
                        reference,
                        action: "pushing".into(),
                        message: format!("registry unreachable: {}", describe(&e)),
                    }
                } else {
                    ImageError::PushRefused {
                        reference,
                        what,
                        message: describe(&e),
                    }
                }
            }
        };
        self.answered(
            reference,
            "authenticating to push",
            oci.auth(&reference.0, &auth, RegistryOperation::Push),
        )
        .await?
        .map_err(refused("authentication for push".into()))?;

        let mut blobs: Vec<(String, &[u8], &Digest)> = image
            .layers()
            .iter()
            .map(|l| (format!("layer {}", l.digest()), l.data(), l.digest()))
            .collect();
        blobs.push((
            format!("config blob {}", image.config_digest()),
            image.config(),
            image.config_digest(),
        ));
        for (what, data, digest) in blobs {
            let exists = self
                .answered(
                    reference,
                    "checking a blob of",
                    oci.blob_exists(&reference.0, digest.as_str()),
                )
                .await?
                .unwrap_or(false);
            if !exists {
                // An upload gets the silence limit plus a second per MiB: it cannot be watched
                // for pauses from here.
                let limit = self.silence() + Duration::from_secs((data.len() >> 20) as u64);
                tokio::time::timeout(
                    limit,
                    oci.push_blob(&reference.0, data.to_vec(), digest.as_str()),
                )
                .await
                .map_err(|_| silent(reference, &format!("uploading {what} to"), limit))?
                .map_err(refused(what))?;
            }
        }
        let content_type = http_header(OCI_MANIFEST_MEDIA_TYPE);
        self.answered(
            reference,
            "pushing the manifest of",
            oci.push_manifest_raw(&reference.0, image.manifest().to_vec(), content_type),
        )
        .await?
        .map_err(refused(format!("manifest {}", image.digest())))?;
        Ok(image.digest().clone())
    }

    /// The digest `reference` names now (for a digest reference, the digest itself after checking
    /// the registry has it). For a multi-platform image this is the index digest, which is what
    /// should be pinned.
    pub async fn resolve(&self, reference: &ImageRef) -> Result<Digest, ImageError> {
        let mut last = None;
        for at in self.routes(reference, "resolving")? {
            match self.resolve_at(&at).await {
                Ok(digest) => return Ok(digest),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| no_route(reference, "resolving")))
    }

    /// Where `reference` is pulled from, in order (see [`Registries::route`]).
    fn routes(&self, reference: &ImageRef, action: &str) -> Result<Vec<ImageRef>, ImageError> {
        match self.options.registries.route(reference) {
            Route::Try(refs) => Ok(refs),
            Route::Blocked { prefix } => Err(ImageError::Registry {
                reference: reference.to_string(),
                action: action.to_owned(),
                message: format!("registry {prefix} is blocked in the registries.conf"),
            }),
        }
    }

    async fn resolve_at(&self, reference: &ImageRef) -> Result<Digest, ImageError> {
        let oci = self.oci(reference)?;
        let digest = self
            .answered(
                reference,
                "resolving",
                oci.fetch_manifest_digest(&reference.0, &self.auth(reference)),
            )
            .await?
            .map_err(|e| registry_error(reference, "resolving", &e))?;
        parse_digest(reference, &digest)
    }

    /// Pulls `reference` and unpacks it into `dest`, which must not exist or be an empty
    /// directory, within the limits of what it is expected to be. The tree is unpacked beside
    /// `dest` and renamed into place, so `dest` either appears complete or not at all.
    ///
    /// # Errors
    /// [`ImageError::TooLarge`] when the image holds more than the limits allow (nothing is
    /// left on disk, and the digest is not downloaded again for the same limits); the
    /// registry's, the unpacker's and the file system's errors otherwise.
    pub async fn pull_to_dir(
        &self,
        reference: &ImageRef,
        dest: &Path,
        filter: &Filter,
        expect: Expect,
    ) -> Result<Pulled, ImageError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ImageError::Io { path, source }
        };
        if dest.exists() {
            let empty = std::fs::read_dir(dest).map_err(io(dest))?.next().is_none();
            if !empty {
                return Err(ImageError::DestinationNotEmpty(dest.to_path_buf()));
            }
        }
        let parent = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(io(&parent))?;
        let staging = unique_dir(&parent, ".olm-pull-").map_err(io(&parent))?;
        let result = self.pull_into(reference, &staging, filter, expect).await;
        let finish = match result {
            Ok(mut pulled) => {
                let tree = staging.join("fs");
                if dest.exists() {
                    std::fs::remove_dir(dest).map_err(io(dest))?;
                }
                match std::fs::rename(&tree, dest) {
                    Ok(()) => {
                        pulled.path = dest.to_path_buf();
                        Ok(pulled)
                    }
                    Err(e) => Err(io(dest)(e)),
                }
            }
            Err(e) => Err(e),
        };
        let _ = std::fs::remove_dir_all(&staging);
        finish
    }

    /// Pulls `reference` into `cache` unless the digest it resolves to is there already, and
    /// returns the cached tree. A tag is resolved on every call (one manifest request, all a
    /// hit costs); a sha256 digest names its content for good, so a hit costs no request at
    /// all. Only a miss downloads the manifest, config and layers, within the limits of what
    /// the image is expected to be; errors as [`Client::pull_to_dir`]'s.
    pub async fn pull_cached(
        &self,
        reference: &ImageRef,
        cache: &ImageCache,
        filter: &Filter,
        expect: Expect,
    ) -> Result<Pulled, ImageError> {
        // Only a digest this cache can key on skips the registry; any other (sha512, say) is
        // resolved as a tag is, so the registry, not the reference, answers for it.
        let digest = match reference.digest().and_then(|d| d.parse::<Digest>().ok()) {
            Some(d) => d,
            None => self.resolve(reference).await?,
        };
        let pinned = reference.with_digest(&digest);
        if let Some(entry) = cache.get(&digest, filter) {
            return Ok(Pulled {
                manifest_digest: parse_digest(reference, &entry.meta.manifest_digest)?,
                digest,
                labels: entry.meta.labels,
                path: entry.path,
                stats: UnpackStats::default(),
                cached: true,
            });
        }
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ImageError::Io { path, source }
        };
        let staging = cache.staging_dir().map_err(io(cache.root()))?;
        let result = self.pull_into(&pinned, &staging, filter, expect).await;
        let finish = match result {
            Ok(mut pulled) => {
                let meta = CacheMeta {
                    manifest_digest: pulled.manifest_digest.to_string(),
                    labels: pulled.labels.clone(),
                };
                let committed = cache
                    .commit(&staging.join("fs"), &pulled.digest, filter, &meta)
                    .map_err(io(cache.root()));
                committed.map(|entry| {
                    pulled.path = entry.path;
                    pulled
                })
            }
            Err(e) => Err(e),
        };
        let _ = std::fs::remove_dir_all(&staging);
        finish
    }

    async fn fetch_manifest(
        &self,
        reference: &ImageRef,
    ) -> Result<(OciImageManifest, Digest, Digest), ImageError> {
        let oci = self.oci(reference)?;
        let auth = self.auth(reference);
        let (manifest, manifest_digest, list_digest) = self
            .answered(
                reference,
                "fetching the manifest of",
                oci.pull_image_manifest_and_list_digest(&reference.0, &auth),
            )
            .await?
            .map_err(|e| registry_error(reference, "fetching the manifest of", &e))?;
        let manifest_digest = parse_digest(reference, &manifest_digest)?;
        let top = match (reference.digest(), list_digest) {
            (Some(d), _) => parse_digest(reference, d)?,
            (None, Some(list)) => parse_digest(reference, &list)?,
            (None, None) => manifest_digest.clone(),
        };
        Ok((manifest, manifest_digest, top))
    }

    async fn fetch_labels(
        &self,
        reference: &ImageRef,
        manifest: &OciImageManifest,
    ) -> Result<BTreeMap<String, String>, ImageError> {
        const ACTION: &str = "fetching the config of";
        let declared = u64::try_from(manifest.config.size).unwrap_or(0);
        if declared > MAX_CONFIG_BYTES {
            return Err(ImageError::BadConfig {
                reference: reference.to_string(),
                message: format!(
                    "it holds {declared} bytes, more than the {} an image config may hold",
                    limits::format_size(MAX_CONFIG_BYTES)
                ),
            });
        }
        let oci = self.oci(reference)?;
        let cap = if declared > 0 {
            declared
        } else {
            MAX_CONFIG_BYTES
        };
        let mut config = Watched::capped(Vec::new(), cap);
        self.answered(
            reference,
            ACTION,
            oci.pull_blob(&reference.0, &manifest.config, &mut config),
        )
        .await?
        .map_err(|e| registry_error(reference, ACTION, &e))?;
        labels_of(reference, &config.inner)
    }

    /// Downloads the layers of `reference` into `work/blobs` and unpacks them into `work/fs`,
    /// within the limits of the kind of image expected. A digest refused for its size before
    /// is refused again before its layers are downloaded (a pinned reference of a known kind:
    /// before any request).
    /// [`Client::pull_into_at`] the first place [`Client::routes`] names that answers; the
    /// result is as if `reference` itself had been pulled.
    async fn pull_into(
        &self,
        reference: &ImageRef,
        work: &Path,
        filter: &Filter,
        expect: Expect,
    ) -> Result<Pulled, ImageError> {
        let mut last = None;
        for at in self.routes(reference, "pulling")? {
            match self.pull_into_at(&at, work, filter, expect).await {
                Ok(pulled) => return Ok(pulled),
                // Only an unreachable or refusing registry sends us to the next place.
                Err(e @ ImageError::Registry { .. }) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| no_route(reference, "pulling")))
    }

    async fn pull_into_at(
        &self,
        reference: &ImageRef,
        work: &Path,
        filter: &Filter,
        expect: Expect,
    ) -> Result<Pulled, ImageError> {
        let pinned = reference.digest().and_then(|d| d.parse::<Digest>().ok());
        if let (Some(digest), Some(kind)) = (&pinned, expect.kind()) {
            self.refused(reference, digest, filter, kind)?;
        }
        let (manifest, manifest_digest, digest) = self.fetch_manifest(reference).await?;
        if let Some(kind) = expect.kind() {
            self.refused(reference, &digest, filter, kind)?;
        }
        for layer in &manifest.layers {
            if !ACCEPTED_LAYER_MEDIA_TYPES.contains(&layer.media_type.as_str()) {
                return Err(ImageError::UnsupportedLayer {
                    reference: reference.to_string(),
                    media_type: layer.media_type.clone(),
                });
            }
        }
        let labels = self.fetch_labels(reference, &manifest).await?;
        let kind = expect.kind_given(labels.contains_key(CATALOG_CONFIGS_LABEL));
        self.refused(reference, &digest, filter, kind)?;
        let sizes = self.options.limits.of(kind);
        limits::check_layers(sizes, manifest.layers.iter().map(|l| l.size))
            .map_err(|over| self.refuse(reference, &digest, filter, kind, over))?;
        let requested = filter;
        let filter = match filter {
            Filter::CatalogConfigs => labels
                .get(CATALOG_CONFIGS_LABEL)
                .and_then(|label| Filter::catalog_configs(label))
                .ok_or_else(|| ImageError::NotACatalog {
                    reference: reference.to_string(),
                    label: labels.get(CATALOG_CONFIGS_LABEL).cloned(),
                })?,
            other => other.clone(),
        };

        let blobs = work.join("blobs");
        // The unpacker creates the tree, and removes it again when it fails.
        let tree = work.join("fs");
        tokio::fs::create_dir_all(&blobs)
            .await
            .map_err(|source| ImageError::Io {
                path: blobs.clone(),
                source,
            })?;
        let oci = self.oci(reference)?;
        let files: Vec<PathBuf> = (0..manifest.layers.len())
            .map(|i| blobs.join(format!("{i:04}")))
            .collect();
        // Images built on a base image have several layers; fetch a few at a time.
        let mut pending = manifest.layers.iter().cloned().zip(files.iter().cloned());
        let mut running = tokio::task::JoinSet::new();
        loop {
            while running.len() < MAX_CONCURRENT_DOWNLOADS {
                let Some((layer, path)) = pending.next() else {
                    break;
                };
                let (oci, reference, silence) = (oci.clone(), reference.clone(), self.silence());
                let cap = download_cap(&layer, sizes);
                running.spawn(async move {
                    download(&oci, &reference, &layer, &path, silence, cap).await
                });
            }
            let Some(done) = running.join_next().await else {
                break;
            };
            done.map_err(|e| ImageError::Io {
                path: blobs.clone(),
                source: std::io::Error::other(e.to_string()),
            })??;
        }

        let unpack_filter = filter;
        let unpack_tree = tree.clone();
        let stats = tokio::task::spawn_blocking(move || {
            unpack_files(&files, &unpack_tree, &unpack_filter, sizes)
        })
        .await
        .map_err(|e| ImageError::Io {
            path: tree.clone(),
            source: std::io::Error::other(e.to_string()),
        })?
        .map_err(|e| match e {
            ImageError::Unpack(UnpackError::TooLarge(over)) => {
                self.refuse(reference, &digest, requested, kind, over)
            }
            other => other,
        })?;
        Ok(Pulled {
            digest,
            manifest_digest,
            labels,
            path: tree,
            stats,
            cached: false,
        })
    }
}

/// How many layers are downloaded at once.
const MAX_CONCURRENT_DOWNLOADS: usize = 4;

/// The most a layer download may bring: what the manifest declares (whose sum the limits have
/// admitted), or the whole total when it declares nothing usable.
fn download_cap(layer: &OciDescriptor, sizes: Sizes) -> u64 {
    u64::try_from(layer.size)
        .ok()
        .filter(|size| *size > 0)
        .map_or(sizes.total, |size| size.min(sizes.total))
}

/// Streams one layer blob to `path`; `oci-client` verifies its digest on the way. A transfer
/// that makes no progress for `silence` fails (however long the whole takes while it moves),
/// and so does one that brings more than `cap` bytes.
async fn download(
    oci: &oci_client::Client,
    reference: &ImageRef,
    layer: &OciDescriptor,
    path: &Path,
    silence: Duration,
    cap: u64,
) -> Result<(), ImageError> {
    let file = tokio::fs::File::create(path)
        .await
        .map_err(|source| ImageError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let start = tokio::time::Instant::now();
    let progress = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut writer = Watched {
        progress: Some((start, progress.clone())),
        ..Watched::capped(tokio::io::BufWriter::with_capacity(1 << 20, file), cap)
    };
    let action = format!("downloading layer {} of", layer.digest);
    let pull = oci.pull_blob(&reference.0, layer, &mut writer);
    tokio::pin!(pull);
    let check = (silence / 4).max(Duration::from_millis(10));
    loop {
        tokio::select! {
            done = &mut pull => {
                done.map_err(|e| registry_error(reference, &action, &e))?;
                return Ok(());
            }
            () = tokio::time::sleep(check) => {
                let last = Duration::from_millis(progress.load(std::sync::atomic::Ordering::Relaxed));
                if start.elapsed().saturating_sub(last) >= silence {
                    return Err(silent(reference, &action, silence));
                }
            }
        }
    }
}

/// A writer for a blob from a registry. It refuses to take more than `cap` bytes in all: a
/// registry that sends more than the manifest declares fails the transfer at once rather than
/// filling the disk (or memory) until the digest check at the end. With `progress`, it notes
/// when it last received bytes (milliseconds since the start).
struct Watched<W> {
    inner: W,
    cap: u64,
    written: u64,
    progress: Option<(tokio::time::Instant, Arc<std::sync::atomic::AtomicU64>)>,
}

impl<W> Watched<W> {
    fn capped(inner: W, cap: u64) -> Watched<W> {
        Watched {
            inner,
            cap,
            written: 0,
            progress: None,
        }
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Watched<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if let Some((start, progress)) = &this.progress {
            let millis = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
            progress.store(millis, std::sync::atomic::Ordering::Relaxed);
        }
        if this.written.saturating_add(buf.len() as u64) > this.cap {
            return std::task::Poll::Ready(Err(std::io::Error::other(format!(
                "the registry sent more than the {} bytes the manifest declares",
                this.cap
            ))));
        }
        let polled = std::pin::Pin::new(&mut this.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = &polled {
            this.written += *n as u64;
        }
        polled
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

fn unpack_files(
    files: &[PathBuf],
    tree: &Path,
    filter: &Filter,
    sizes: Sizes,
) -> Result<UnpackStats, ImageError> {
    let mut readers = Vec::with_capacity(files.len());
    for path in files {
        let file = std::fs::File::open(path).map_err(|source| ImageError::Io {
            path: path.clone(),
            source,
        })?;
        let reader = unpack::decompress(file).map_err(|source| ImageError::Io {
            path: path.clone(),
            source,
        })?;
        readers.push(reader);
    }
    Ok(unpack::unpack_layers(readers, tree, filter, sizes)?)
}

fn labels_of(reference: &ImageRef, config: &[u8]) -> Result<BTreeMap<String, String>, ImageError> {
    let value: serde_json::Value =
        serde_json::from_slice(config).map_err(|e| ImageError::BadConfig {
            reference: reference.to_string(),
            message: e.to_string(),
        })?;
    let mut labels = BTreeMap::new();
    if let Some(map) = value
        .get("config")
        .and_then(|c| c.get("Labels"))
        .and_then(|l| l.as_object())
    {
        for (k, v) in map {
            if let Some(s) = v.as_str() {
                labels.insert(k.clone(), s.to_string());
            }
        }
    }
    Ok(labels)
}

fn parse_digest(reference: &ImageRef, digest: &str) -> Result<Digest, ImageError> {
    digest.parse().map_err(|_| ImageError::Registry {
        reference: reference.to_string(),
        action: "resolving".into(),
        message: format!(
            "the registry answered with an unsupported digest {}",
            olm_goenc::quote(digest)
        ),
    })
}

/// The registry stayed silent for `limit` during `action`.
fn silent(reference: &ImageRef, action: &str, limit: Duration) -> ImageError {
    ImageError::Registry {
        reference: reference.to_string(),
        action: action.to_string(),
        message: format!(
            "the registry did not answer within {}s",
            limit.as_secs_f64()
        ),
    }
}

fn registry_error(
    reference: &ImageRef,
    action: &str,
    e: &oci_client::errors::OciDistributionError,
) -> ImageError {
    ImageError::Registry {
        reference: reference.to_string(),
        action: action.to_string(),
        message: describe(e),
    }
}

/// `message (CODE); …` from a distribution error envelope `{"errors":[{"code","message"}]}`.
fn envelope_text(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let errors = value.get("errors")?.as_array()?;
    let parts: Vec<String> = errors
        .iter()
        .filter_map(|e| {
            let code = e.get("code").and_then(|c| c.as_str()).unwrap_or_default();
            let message = e
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or_default();
            match (message.is_empty(), code.is_empty()) {
                (false, false) => Some(format!("{message} ({code})")),
                (false, true) => Some(message.to_string()),
                (true, false) => Some(code.to_string()),
                (true, true) => None,
            }
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The registry's own words first: `manifest unknown (MANIFEST_UNKNOWN) [GET url]` reads better
/// than oci-client's debug-flavoured envelope text.
fn describe(e: &oci_client::errors::OciDistributionError) -> String {
    use oci_client::errors::OciDistributionError as E;
    match e {
        E::RegistryError { envelope, url } => {
            let errors: Vec<String> = envelope
                .errors
                .iter()
                .map(|err| {
                    let code = serde_json::to_value(&err.code)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    match (err.message.is_empty(), code.is_empty()) {
                        (false, false) => format!("{} ({code})", err.message),
                        (false, true) => err.message.clone(),
                        (true, _) => code,
                    }
                })
                .collect();
            format!("{} [{url}]", errors.join("; "))
        }
        E::ServerError { code, url, message } => {
            // Registries send the JSON error envelope on 401/403 too; show its words.
            let message = envelope_text(message).unwrap_or_else(|| message.trim().to_string());
            let message = message.as_str();
            if message.is_empty() {
                format!("HTTP {code} [{url}]")
            } else {
                format!("HTTP {code}: {message} [{url}]")
            }
        }
        other => chain(other),
    }
}

/// Whether the request never reached a registry (connection refused, DNS, TLS, timeout).
fn unreachable(e: &oci_client::errors::OciDistributionError) -> bool {
    matches!(e, oci_client::errors::OciDistributionError::RequestError(r) if r.is_connect() || r.is_timeout())
}

fn http_header(value: &'static str) -> http::HeaderValue {
    http::HeaderValue::from_static(value)
}

/// Manifest media types a platform lookup accepts: indexes and single-image manifests, OCI and
/// docker.
const PLATFORM_MANIFEST_MEDIA_TYPES: &[&str] = &[
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
];

impl Client {
    /// The platforms `reference` is built for, as `(os, architecture)` pairs.
    ///
    /// For an index (manifest list) these are its entries' platforms in the index's order,
    /// leaving out entries whose os or architecture is empty or `unknown` (the attestations
    /// build tools add beside the images). For a single-image manifest it is the one platform
    /// its config names (none when the config names no os or architecture). Variants are not
    /// told apart: `linux/arm/v7` is `(linux, arm)`.
    ///
    /// # Errors
    /// [`ImageError::Registry`] naming the image when the registry cannot be reached, refuses,
    /// stays silent past the client's limit, or answers with a manifest or config that is not
    /// JSON.
    pub async fn platforms(
        &self,
        reference: &ImageRef,
    ) -> Result<Vec<(String, String)>, ImageError> {
        const ACTION: &str = "reading the platforms of";
        let oci = self.oci(reference)?;
        let auth = self.auth(reference);
        let (raw, _digest) = self
            .answered(
                reference,
                ACTION,
                oci.pull_manifest_raw(&reference.0, &auth, PLATFORM_MANIFEST_MEDIA_TYPES),
            )
            .await?
            .map_err(|e| registry_error(reference, ACTION, &e))?;
        let malformed = |what: &str, e: serde_json::Error| ImageError::Registry {
            reference: reference.to_string(),
            action: ACTION.into(),
            message: format!("the {what} is not valid JSON: {e}"),
        };
        let manifest: serde_json::Value =
            serde_json::from_slice(&raw).map_err(|e| malformed("manifest", e))?;
        let text = |v: &serde_json::Value, key: &str| {
            v.get(key)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let known = |os: &str, arch: &str| {
            !os.is_empty() && !arch.is_empty() && os != "unknown" && arch != "unknown"
        };
        if let Some(entries) = manifest.get("manifests").and_then(|m| m.as_array()) {
            return Ok(entries
                .iter()
                .filter_map(|e| e.get("platform"))
                .map(|p| (text(p, "os"), text(p, "architecture")))
                .filter(|(os, arch)| known(os, arch))
                .collect());
        }
        let config = manifest.get("config").cloned().unwrap_or_default();
        let descriptor = OciDescriptor {
            media_type: text(&config, "mediaType"),
            digest: text(&config, "digest"),
            size: config
                .get("size")
                .and_then(serde_json::Value::as_i64)
                .unwrap_or_default(),
            ..OciDescriptor::default()
        };
        let mut blob = Vec::new();
        self.answered(
            reference,
            ACTION,
            oci.pull_blob(&reference.0, &descriptor, &mut blob),
        )
        .await?
        .map_err(|e| registry_error(reference, ACTION, &e))?;
        let config: serde_json::Value =
            serde_json::from_slice(&blob).map_err(|e| malformed("image config", e))?;
        let (os, arch) = (text(&config, "os"), text(&config, "architecture"));
        Ok(if os.is_empty() || arch.is_empty() {
            Vec::new()
        } else {
            vec![(os, arch)]
        })
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn registry_references_are_told_from_paths() {
        for yes in [
            "quay.io/org/cat:v1",
            "127.0.0.1:5000/cat",
            "localhost/cat@sha256:ab",
        ] {
            assert!(ImageRef::looks_like_registry_reference(yes), "{yes}");
        }
        for no in ["catalog", "dir/sub", "cat:v1", "./x/y", "../x"] {
            assert!(!ImageRef::looks_like_registry_reference(no), "{no}");
        }
    }

    use super::*;

    #[test]
    fn loopback_registries_are_detected() {
        for (r, want) in [
            ("127.0.0.1:5000/a/b:v1", true),
            ("localhost:5000/a", true),
            ("localhost/a", true),
            ("127.1.2.3:80/a", true),
            ("quay.io/a/b", false),
            ("docker.io/library/busybox", false),
            ("busybox", false),
            ("10.0.0.1:5000/a", false),
        ] {
            let parsed: ImageRef = r.parse().expect("parse");
            assert_eq!(parsed.is_loopback(), want, "{r}");
        }
    }

    #[test]
    fn an_upper_case_first_component_is_the_registry_as_docker_reads_it() {
        // Found by fuzzing: this parsed as `docker.io/MyHost/app:latest`, which does not parse.
        for (text, registry, repository, printed) in [
            ("MyHost/app", "MyHost", "app", "MyHost/app:latest"),
            (
                "dbuDyboxo/liox21:v1",
                "dbuDyboxo",
                "liox21",
                "dbuDyboxo/liox21:v1",
            ),
            (
                "Reg/a/b@sha256:0000000000000000000000000000000000000000000000000000000000000000",
                "Reg",
                "a/b",
                "Reg/a/b@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            ),
        ] {
            let r: ImageRef = text.parse().expect("parse");
            assert_eq!(
                (r.registry(), r.repository()),
                (registry, repository),
                "{text}"
            );
            assert_eq!(r.to_string(), printed);
            let again: ImageRef = printed.parse().expect("printed form parses");
            assert_eq!(again, r, "{text}");
        }
        // Lower-case first components stay docker.io repositories.
        let r: ImageRef = "org/app".parse().expect("parse");
        assert_eq!((r.registry(), r.repository()), ("docker.io", "org/app"));
    }

    #[test]
    fn bad_reference_is_an_error() {
        let err = "UPPER/Case:tag".parse::<ImageRef>().expect_err("must fail");
        assert!(err.to_string().contains("UPPER/Case:tag"), "{err}");
    }

    #[test]
    fn error_envelopes_are_summarised() {
        let body = r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":[]}]}"#;
        assert_eq!(
            envelope_text(body).as_deref(),
            Some("authentication required (UNAUTHORIZED)")
        );
        assert_eq!(envelope_text("Method not allowed"), None);
    }

    #[test]
    fn labels_come_from_config() {
        let r: ImageRef = "localhost/x".parse().expect("parse");
        let labels = labels_of(&r, br#"{"config":{"Labels":{"a":"b","n":1}}}"#).expect("labels");
        assert_eq!(labels.len(), 1);
        assert_eq!(labels["a"], "b");
        assert!(
            labels_of(&r, br#"{"config":{}}"#)
                .expect("labels")
                .is_empty()
        );
        assert!(labels_of(&r, b"nope").is_err());
    }

    /// A single-image manifest answers with its config's platform; an index with its entries'
    /// platforms, attestation-like `unknown` entries left out; a missing image with an error
    /// naming it. Against a real local registry.
    #[test]
    fn platforms_come_from_the_index_or_the_config() {
        use oci_client::manifest::{ImageIndexEntry, OciImageIndex, Platform};
        let registry = olm_testenv::registry::Registry::start().expect("a local registry");
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("catalog.json"), "{}").expect("write");
        let image = crate::assemble::catalog_image(dir.path()).expect("image");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let client = Client::new(ClientOptions::default());
        let at = |path: &str| -> ImageRef {
            format!("{}/{path}", registry.addr())
                .parse()
                .expect("reference")
        };
        let single = at("platforms/single:v1");
        runtime
            .block_on(client.push(&image, &single))
            .expect("push");
        let got = runtime
            .block_on(client.platforms(&single))
            .expect("platforms");
        let config: serde_json::Value = serde_json::from_slice(image.config()).expect("config");
        let arch = config["architecture"].as_str().expect("architecture");
        assert_eq!(got, [("linux".to_owned(), arch.to_owned())]);

        let entry = |os: &str, arch: &str| ImageIndexEntry {
            media_type: OCI_MANIFEST_MEDIA_TYPE.to_owned(),
            digest: image.digest().to_string(),
            size: image.manifest().len() as i64,
            platform: Some(Platform {
                architecture: arch.into(),
                os: os.into(),
                os_version: None,
                os_features: None,
                variant: None,
                features: None,
            }),
            annotations: None,
            artifact_type: None,
        };
        let index = OciImageIndex {
            schema_version: 2,
            media_type: Some("application/vnd.oci.image.index.v1+json".to_owned()),
            manifests: vec![
                entry("linux", "arm64"),
                entry("unknown", "unknown"),
                entry("linux", "s390x"),
            ],
            artifact_type: None,
            annotations: None,
        };
        // An index names manifests of its own repository.
        runtime
            .block_on(client.push(&image, &at("platforms/multi:image")))
            .expect("push");
        let multi = at("platforms/multi:v1");
        let oci = client.oci(&multi).expect("oci client");
        runtime
            .block_on(oci.push_manifest_list(&multi.0, &RegistryAuth::Anonymous, index))
            .expect("push index");
        let got = runtime
            .block_on(client.platforms(&multi))
            .expect("platforms");
        assert_eq!(
            got,
            [
                ("linux".to_owned(), "arm64".to_owned()),
                ("linux".to_owned(), "s390x".to_owned())
            ]
        );

        let missing = at("platforms/missing:v1");
        let err = runtime
            .block_on(client.platforms(&missing))
            .expect_err("no such image");
        assert!(err.to_string().contains(&missing.to_string()), "{err}");
    }
}
