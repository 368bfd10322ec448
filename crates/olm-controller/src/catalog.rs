//! Catalog content for resolution, read from the catalog server one package at a time.
//!
//! Upstream's installer downloads a catalog's whole `/api/v1/all` stream (tens of megabytes for
//! the community catalogs) and splits it into a file per blob, although a resolution only ever
//! looks at one package. [`Catalogs`] asks the server's `metas` endpoint for exactly that package
//! instead — `?schema=olm.package&name=P` for the package blob (which has no `package` field)
//! and `?package=P` for its channels, bundles and deprecations — parses the canonical JSON lines
//! with `olm-catalog`, and keeps the resolver's index of that one package in memory, keyed by
//! catalog name, resolved image reference and package.
//!
//! # Flow of [`Catalogs::package`]
//! 1. The ClusterCatalog is checked as upstream checks it: `Serving` must be True, and
//!    `status.resolvedSource.image.ref` and `status.urls` must be set.
//! 2. When the resolved reference differs from the one cached for the catalog, everything cached
//!    for the catalog is dropped: content under a digest never changes, so the reference is the
//!    whole cache key.
//! 3. A request failure cached for (catalog, reference) is returned as is until its retry time.
//! 4. A cached package index is returned without any request.
//! 5. Otherwise the package is fetched; callers asking for the same (catalog, reference,
//!    package) while the fetch runs wait for that one fetch.
//!
//! # Guarantees
//! * At most one fetch per (catalog, reference, package) at a time, and none once it is cached.
//! * Transport failures (and responses that are cut short, too large, or not a catalog) are
//!   cached against (catalog, reference) and returned to every caller, as upstream caches them;
//!   unlike upstream, which only retries when its catalog controller runs again, the next request
//!   after a growing back-off (from [`CatalogOptions::retry_initial`] up to
//!   [`CatalogOptions::retry_max`]) tries again.
//! * A response other than 200 is not cached (`error: received unexpected response status code
//!   N`): a catalog server replica that is not the leader answers 404 until it is.
//! * Content is cached under the reference the status names only when the server says it was
//!   unpacked from that reference ([`olm_catalogd::server::SOURCE_HEADER`]; a server that does
//!   not say, such as upstream's catalogd, is believed). A replica still serving the content of
//!   the digest before gives [`CatalogError::OtherSource`], not cached, so the next reconcile asks
//!   again — rather than keeping the old content under the new digest until the tag moves again.
//! * Memory: one index per package fetched, for the current reference of each catalog only; a
//!   response above [`CatalogOptions::max_response_bytes`] is refused while it is read, never
//!   buffered whole. Requests time out after [`CatalogOptions::timeout`] (upstream's five
//!   minutes), connections after [`CatalogOptions::connect_timeout`].
//!
//! # Proxies
//! Requests go through the proxy Go's `net/http.ProxyFromEnvironment` picks, as upstream's do:
//! `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` (or their lower-case spellings), read once when
//! the client is made ([`ProxyEnv`], [`Proxies`]); never for `localhost` or loopback addresses.
//! A request that cannot get through the proxy fails with Go's `proxyconnect tcp: <cause>`,
//! the cause naming the proxy's address, so a ClusterExtension's condition says so.
//!
//! # Who words resolution's wrapping
//! `olm-resolve` is pure and never fetches, so it does not produce upstream's
//! `error walking catalogs: error getting package "<pkg>" from catalog "<cat>": <err>`; this
//! module does, in [`WalkError`], returned by [`Catalogs::walk`].

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt, Shared};
use futures::{StreamExt, TryFutureExt};
use olm_api::{AvailabilityMode, ClusterCatalog};
use olm_catalog::PackageName;
use olm_extension::request::{NotServing, served};
use olm_goenc::quote;
use olm_k8s::chain;
use olm_resolve::{ContentIndex, LabelSelector};
use sha2::Digest as _;

mod proxy;

pub use proxy::{Proxies, ProxyEnv};

/// Upstream's overall timeout of one catalog request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// How long connecting to the catalog server may take.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest response accepted by default. The largest package of the community catalogs is a
/// few megabytes; a whole catalog is tens.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 128 << 20;

/// How many packages [`Catalogs::changed_packages`] fetches at once.
const REFETCH_CONCURRENCY: usize = 4;

/// How the catalog client reaches catalog servers.
#[derive(Debug, Clone)]
pub struct CatalogOptions {
    /// Overall time one request may take, body included.
    pub timeout: Duration,
    /// Time connecting (TCP and TLS) may take.
    pub connect_timeout: Duration,
    /// The largest response body accepted, per request.
    pub max_response_bytes: u64,
    /// PEM CA certificates trusted besides the system roots (upstream's `--catalogd-cas-dir`),
    /// for a catalog server whose certificate a private CA signed.
    pub ca_certificates: Vec<Vec<u8>>,
    /// How long a cached failure is returned before the first retry.
    pub retry_initial: Duration,
    /// The longest wait between retries of a failing catalog; the wait doubles up to it.
    pub retry_max: Duration,
    /// Ask for gzip-compressed responses (as Go's HTTP client does): about a ninth of the bytes
    /// on the wire, for compression work on the server and decompression here.
    pub gzip: bool,
    /// The proxy variables requests follow; `None` (the default): the process environment's,
    /// read when the client is made.
    pub proxy: Option<ProxyEnv>,
}

impl Default for CatalogOptions {
    fn default() -> Self {
        CatalogOptions {
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            ca_certificates: Vec::new(),
            retry_initial: Duration::from_secs(1),
            retry_max: Duration::from_secs(5 * 60),
            gzip: true,
            proxy: None,
        }
    }
}

/// Why a package could not be read from a catalog. Texts are upstream's where upstream has one
/// (`catalogmetadata/client/client.go`); cached failures carry upstream's `error retrieving cache
/// for catalog "<name>": ` prefix, as they read when upstream returns them from its cache.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The catalog's `Serving` condition is not True.
    #[error("catalog {} is not being served", quote(catalog))]
    NotServing {
        /// The ClusterCatalog.
        catalog: String,
    },
    /// `status.resolvedSource` is missing, or names no image.
    #[error(
        "error: catalog {} has a nil status.resolvedSource value",
        quote(catalog)
    )]
    NoResolvedSource {
        /// The ClusterCatalog.
        catalog: String,
    },
    /// `status.urls` is missing.
    #[error("error: catalog {} has a nil status.urls value", quote(catalog))]
    NoUrls {
        /// The ClusterCatalog.
        catalog: String,
    },
    /// `status.urls.base` is not an absolute http(s) URL.
    #[error("error forming catalogd API endpoint: {message}")]
    BadUrl {
        /// What is wrong with it.
        message: String,
    },
    /// The request failed on the way (connection refused, timeout, TLS, body cut short).
    /// Cached.
    #[error(
        "error retrieving cache for catalog {}: error performing request: {message}",
        quote(catalog)
    )]
    Request {
        /// The ClusterCatalog.
        catalog: String,
        /// The transport's message, with its causes.
        message: String,
    },
    /// The server answered with a status other than 200. Not cached.
    #[error("error: received unexpected response status code {code}")]
    UnexpectedStatus {
        /// The HTTP status code.
        code: u16,
    },
    /// The catalog server answered with content unpacked from another image than the one the
    /// status names: a replica that has not pulled the new digest yet. Not cached.
    #[error(
        "catalog {} is served from {} by the catalog server replica that answered, not yet from {}",
        quote(catalog),
        quote(served),
        quote(expected)
    )]
    OtherSource {
        /// The ClusterCatalog.
        catalog: String,
        /// The reference the answer's content came from.
        served: String,
        /// The reference the status names.
        expected: String,
    },
    /// A response body exceeds [`CatalogOptions::max_response_bytes`]. Cached.
    #[error(
        "error retrieving cache for catalog {}: error performing request: the response of {url} exceeds the limit of {limit} bytes",
        quote(catalog)
    )]
    TooLarge {
        /// The ClusterCatalog.
        catalog: String,
        /// The request.
        url: String,
        /// The limit.
        limit: u64,
    },
    /// The content is not canonical catalog JSON lines. Cached.
    #[error(
        "error retrieving cache for catalog {}: error parsing catalog contents: {message}",
        quote(catalog)
    )]
    Parse {
        /// The ClusterCatalog.
        catalog: String,
        /// The parser's message.
        message: String,
    },
    /// The HTTP client could not be built (a CA certificate that is not PEM).
    #[error("error getting HTTP client: {message}")]
    Client {
        /// What failed.
        message: String,
    },
}

impl CatalogError {
    /// Whether the failure is remembered for the catalog's current reference (upstream caches
    /// transport errors; status codes are retried at once).
    pub fn is_cached(&self) -> bool {
        matches!(
            self,
            CatalogError::Request { .. }
                | CatalogError::TooLarge { .. }
                | CatalogError::Parse { .. }
        )
    }
}

/// A failure to read a package during resolution, worded as upstream's resolver wraps it
/// (`resolve/catalog.go`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "error walking catalogs: error getting package {} from catalog {}: {source}",
    quote(package),
    quote(catalog)
)]
pub struct WalkError {
    /// The requested package.
    pub package: PackageName,
    /// The first catalog (by name) that failed.
    pub catalog: String,
    /// Why.
    #[source]
    pub source: CatalogError,
}

/// Requests made and bytes received, since the client was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CatalogStats {
    /// HTTP requests sent (failed ones included).
    pub requests: u64,
    /// Content bytes of the packages fetched (after decompression).
    pub bytes: u64,
    /// Response body bytes as they came over the wire (gzip-compressed when the server chose).
    pub wire_bytes: u64,
}

/// SHA-256 of a package's content.
type Hash = [u8; 32];

/// One package's content as fetched.
struct Fetched {
    index: Arc<ContentIndex>,
    /// SHA-256 over the response bodies: what [`Catalogs::changed_packages`] compares.
    hash: Hash,
}

type Flight = Shared<BoxFuture<'static, Result<Arc<Fetched>, CatalogError>>>;

enum Slot {
    Ready(Arc<Fetched>),
    InFlight(Flight),
}

struct Failure {
    error: CatalogError,
    retry_at: Instant,
    backoff: Duration,
}

/// What is cached for one catalog.
struct CatalogState {
    /// The resolved reference the cached content belongs to.
    reference: String,
    packages: HashMap<PackageName, Slot>,
    failure: Option<Failure>,
    /// The reference [`Catalogs::changed_packages`] last compared at, and each package's hash
    /// there (`None`: unknown, reported as changed next time).
    seen_ref: String,
    seen: HashMap<PackageName, Option<Hash>>,
}

impl CatalogState {
    fn new(reference: &str) -> CatalogState {
        CatalogState {
            reference: reference.to_owned(),
            packages: HashMap::new(),
            failure: None,
            seen_ref: reference.to_owned(),
            seen: HashMap::new(),
        }
    }
}

struct Inner {
    http: reqwest::Client,
    /// The one proxy decision: the client follows it, and failures are worded by it.
    proxies: Arc<Proxies>,
    options: CatalogOptions,
    catalogs: Mutex<HashMap<String, CatalogState>>,
    requests: AtomicU64,
    bytes: AtomicU64,
    wire_bytes: AtomicU64,
}

impl Inner {
    // A poisoned lock means a panic elsewhere while holding it; the maps stay consistent because
    // every update under the lock is a single insert or remove.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, CatalogState>> {
        self.catalogs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The catalog client of the extension controller: package content by catalog, cached by
/// resolved reference. Cheap to clone; clones share the cache.
#[derive(Clone)]
pub struct Catalogs {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Catalogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalogs")
            .field("options", &self.inner.options)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// Name, resolved reference and base URL of a catalog that can be read, or why not: the shared
/// rule ([`olm_extension::request::served`]) in the words of upstream's catalog client.
fn validate(catalog: &ClusterCatalog) -> Result<(String, String, String), CatalogError> {
    let name = catalog.metadata.name.clone().unwrap_or_default();
    let served = match served(catalog) {
        Ok(s) => s,
        Err(NotServing::Unavailable | NotServing::NoContent(_)) => {
            return Err(CatalogError::NotServing { catalog: name });
        }
        Err(NotServing::NoResolvedSource) => {
            return Err(CatalogError::NoResolvedSource { catalog: name });
        }
        Err(NotServing::NoUrls) => return Err(CatalogError::NoUrls { catalog: name }),
    };
    let base = served.base.trim_end_matches('/');
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(CatalogError::BadUrl {
            message: format!(
                "{} is not an absolute http or https URL",
                quote(served.base)
            ),
        });
    }
    Ok((name, served.reference.to_owned(), base.to_owned()))
}

/// The resolved reference in a catalog's status, whatever its conditions.
fn resolved_ref(catalog: &ClusterCatalog) -> Option<&str> {
    catalog
        .status
        .as_ref()?
        .resolved_source
        .as_ref()
        .map(|r| r.image.ref_.as_str())
        .filter(|r| !r.is_empty())
}

/// Percent-encodes a query value (RFC 3986 unreserved characters pass).
fn query_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Catalogs {
    /// A client with the given options. Without [`CatalogOptions::proxy`], the proxy variables
    /// are read from the process environment here, once.
    ///
    /// Errors: [`CatalogError::Client`] when a CA certificate is not PEM.
    pub fn new(options: CatalogOptions) -> Result<Catalogs, CatalogError> {
        olm_image::install_crypto_provider();
        let mut certs = Vec::new();
        for pem in &options.ca_certificates {
            let bundle = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| CatalogError::Client { message: chain(&e) })?;
            certs.extend(bundle);
        }
        let env = options.proxy.clone().unwrap_or_else(ProxyEnv::from_process);
        let proxies = Arc::new(Proxies::new(&env));
        let decide = proxies.clone();
        let http = reqwest::Client::builder()
            .timeout(options.timeout)
            .connect_timeout(options.connect_timeout)
            .tls_certs_merge(certs)
            // reqwest's own reading of the environment differs from Go's (loopback hosts, CIDR
            // entries): off, so that the one decision is ours.
            .no_proxy()
            .proxy(reqwest::Proxy::custom(move |url| {
                decide.proxy_for(url).filter(|p| speaks(p)).cloned()
            }))
            .build()
            .map_err(|e| CatalogError::Client { message: chain(&e) })?;
        Ok(Catalogs {
            inner: Arc::new(Inner {
                http,
                proxies,
                options,
                catalogs: Mutex::new(HashMap::new()),
                requests: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
                wire_bytes: AtomicU64::new(0),
            }),
        })
    }

    /// The index of `package` in `catalog`, with only that package (or none, when the catalog
    /// does not have it). See the module documentation for the flow.
    ///
    /// Errors: [`CatalogError`], worded as upstream's catalog client words it.
    pub async fn package(
        &self,
        catalog: &ClusterCatalog,
        package: &PackageName,
    ) -> Result<Arc<ContentIndex>, CatalogError> {
        self.fetched(catalog, package)
            .await
            .map(|f| f.index.clone())
    }

    async fn fetched(
        &self,
        catalog: &ClusterCatalog,
        package: &PackageName,
    ) -> Result<Arc<Fetched>, CatalogError> {
        let (name, reference, base) = validate(catalog)?;
        let flight = {
            let mut catalogs = self.inner.lock();
            let state = catalogs
                .entry(name.clone())
                .or_insert_with(|| CatalogState::new(&reference));
            if state.reference != reference {
                state.reference.clone_from(&reference);
                state.packages.clear();
                state.failure = None;
            }
            if let Some(f) = &state.failure
                && Instant::now() < f.retry_at
            {
                return Err(f.error.clone());
            }
            match state.packages.get(package) {
                Some(Slot::Ready(f)) => return Ok(f.clone()),
                Some(Slot::InFlight(flight)) => flight.clone(),
                None => {
                    let flight = self.start(name, reference, base, package.clone());
                    state
                        .packages
                        .insert(package.clone(), Slot::InFlight(flight.clone()));
                    flight
                }
            }
        };
        flight.await
    }

    /// The shared fetch of one package; it records its own outcome in the cache when it ends,
    /// so the outcome is recorded once however many callers wait for it. Must be called within
    /// a Tokio runtime (every caller of [`Catalogs::package`] is).
    fn start(&self, name: String, reference: String, base: String, package: PackageName) -> Flight {
        let inner = self.inner.clone();
        let catalog = name.clone();
        // A task of its own, so the fetch finishes and is recorded even when every caller
        // waiting for it gives up (a reconcile cancelled on shutdown).
        let task = tokio::spawn(async move {
            let result = fetch(&inner, &name, &reference, &base, &package).await;
            settle(&inner, &name, &reference, &package, &result);
            result
        });
        async move {
            task.await.unwrap_or_else(|e| {
                Err(CatalogError::Request {
                    catalog,
                    message: format!("the fetch ended abnormally: {e}"),
                })
            })
        }
        .boxed()
        .shared()
    }

    /// After `catalog`'s resolved reference changed, the packages fetched from it before whose
    /// content differs now (or can no longer be read); sorted.
    ///
    /// Every package fetched from the catalog under the previous reference is fetched again
    /// under the new one (a few at a time) and compared by content hash; the previous
    /// reference's content is dropped. Extensions of the other packages resolve to what they
    /// resolved to before, so only extensions of the returned packages need resolving again
    /// (upstream re-resolves every extension on any catalog change).
    ///
    /// Caveats: a catalog never read from, or whose reference is the one compared last, yields
    /// nothing: on a new catalog, callers re-resolve what a new catalog may affect. When the
    /// catalog cannot be read any more (not served, no reference), every package read from it is
    /// returned.
    pub async fn changed_packages(&self, catalog: &ClusterCatalog) -> Vec<PackageName> {
        let name = catalog.metadata.name.clone().unwrap_or_default();
        let current = resolved_ref(catalog).unwrap_or_default().to_owned();
        let packages: Vec<(PackageName, Option<Hash>)> = {
            let catalogs = self.inner.lock();
            let Some(state) = catalogs.get(&name) else {
                return Vec::new();
            };
            if state.seen_ref == current {
                return Vec::new();
            }
            state.seen.iter().map(|(p, h)| (p.clone(), *h)).collect()
        };
        if validate(catalog).is_err() {
            let mut catalogs = self.inner.lock();
            if let Some(state) = catalogs.get_mut(&name) {
                state.packages.clear();
                state.failure = None;
                state.seen_ref.clone_from(&current);
                state.seen.values_mut().for_each(|h| *h = None);
            }
            let mut all: Vec<PackageName> = packages.into_iter().map(|(p, _)| p).collect();
            all.sort();
            return all;
        }
        let results: Vec<(PackageName, Option<Hash>, Option<Hash>)> =
            futures::stream::iter(packages)
                .map(|(p, before)| async move {
                    let now = self.fetched(catalog, &p).await.ok().map(|f| f.hash);
                    (p, before, now)
                })
                .buffer_unordered(REFETCH_CONCURRENCY)
                .collect()
                .await;
        let mut catalogs = self.inner.lock();
        let mut state = catalogs.get_mut(&name);
        let mut changed = Vec::new();
        for (p, before, now) in results {
            if before.is_none() || before != now {
                changed.push(p.clone());
            }
            if let Some(state) = state.as_deref_mut() {
                state.seen.insert(p, now);
            }
        }
        if let Some(state) = state {
            state.seen_ref.clone_from(&current);
        }
        drop(catalogs);
        changed.sort();
        changed
    }

    /// Drops everything cached for a deleted catalog.
    pub fn forget(&self, catalog_name: &str) {
        self.inner.lock().remove(catalog_name);
    }

    /// The index of `package` in every catalog resolution may select and that serves content:
    /// catalogs that are not `Unavailable`, match `selector` and serve by the shared rule
    /// ([`olm_extension::request::served`]), by catalog name. Resolution then sees the other
    /// catalogs without content: a selected one that serves nothing is skipped and named, as
    /// the client skips it.
    ///
    /// Errors: the failure of the first catalog by name that serves but whose content could not
    /// be read, wrapped as upstream's resolver wraps it. Unlike a catalog that serves nothing,
    /// such a catalog says it has content, so resolving without it could give another answer
    /// than it will a moment later: the resolution waits for it (as upstream's does).
    pub async fn walk(
        &self,
        catalogs: &[ClusterCatalog],
        selector: &LabelSelector,
        package: &PackageName,
    ) -> Result<BTreeMap<String, Arc<ContentIndex>>, WalkError> {
        let mut selected: Vec<&ClusterCatalog> = catalogs
            .iter()
            .filter(|c| c.spec.availability_mode != AvailabilityMode::Unavailable)
            .filter(|c| selector.matches(c.metadata.labels.as_ref().unwrap_or(&BTreeMap::new())))
            .filter(|c| served(c).is_ok())
            .collect();
        selected.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let fetches = selected.iter().map(|c| {
            let name = c.metadata.name.clone().unwrap_or_default();
            self.package(c, package)
                .map_ok(move |index| (name.clone(), index))
                .map_err({
                    let name = c.metadata.name.clone().unwrap_or_default();
                    move |source| WalkError {
                        package: package.clone(),
                        catalog: name,
                        source,
                    }
                })
        });
        let results = futures::future::join_all(fetches).await;
        let mut out = BTreeMap::new();
        for r in results {
            let (name, index) = r?;
            out.insert(name, index);
        }
        Ok(out)
    }

    /// Requests made and bytes received so far.
    pub fn stats(&self) -> CatalogStats {
        CatalogStats {
            requests: self.inner.requests.load(Ordering::Relaxed),
            bytes: self.inner.bytes.load(Ordering::Relaxed),
            wire_bytes: self.inner.wire_bytes.load(Ordering::Relaxed),
        }
    }
}

/// Records a fetch's outcome, unless the catalog moved to another reference or was forgotten
/// meanwhile (then the outcome belongs to nobody).
fn settle(
    inner: &Inner,
    name: &str,
    reference: &str,
    package: &PackageName,
    result: &Result<Arc<Fetched>, CatalogError>,
) {
    let mut catalogs = inner.lock();
    let Some(state) = catalogs.get_mut(name) else {
        return;
    };
    if state.reference != reference {
        return;
    }
    match result {
        Ok(fetched) => {
            state
                .packages
                .insert(package.clone(), Slot::Ready(fetched.clone()));
            state.failure = None;
            // A package first read now, or re-read at the reference last compared, is what
            // extensions resolve against from now on.
            if state.seen_ref == reference || !state.seen.contains_key(package) {
                state.seen.insert(package.clone(), Some(fetched.hash));
            }
        }
        Err(error) => {
            state.packages.remove(package);
            if error.is_cached() {
                let backoff = match &state.failure {
                    Some(f) => (f.backoff * 2).min(inner.options.retry_max),
                    None => inner.options.retry_initial,
                };
                state.failure = Some(Failure {
                    error: error.clone(),
                    retry_at: Instant::now() + backoff,
                    backoff,
                });
            }
        }
    }
}

/// Fetches one package: its `olm.package` blob and every blob naming it as `package`.
async fn fetch(
    inner: &Inner,
    catalog: &str,
    reference: &str,
    base: &str,
    package: &PackageName,
) -> Result<Arc<Fetched>, CatalogError> {
    let metas = format!("{base}/api/v1/metas");
    let escaped = query_escape(package.as_str());
    let head = format!("{metas}?schema=olm.package&name={escaped}");
    let rest = format!("{metas}?package={escaped}");
    let bodies = futures::try_join!(
        get(inner, catalog, reference, &head),
        get(inner, catalog, reference, &rest)
    )?;
    let (name, limit) = (catalog.to_owned(), inner.options.max_response_bytes);
    // Decompressing and parsing are CPU work: off the async threads.
    let done = tokio::task::spawn_blocking(move || {
        let label = bodies.1.url.clone();
        let (head, rest) = (
            bodies.0.decode(&name, limit)?,
            bodies.1.decode(&name, limit)?,
        );
        let mut hasher = sha2::Sha256::new();
        hasher.update((head.len() as u64).to_be_bytes());
        hasher.update(&head);
        hasher.update(&rest);
        let hash: Hash = hasher.finalize().into();
        let size = (head.len() + rest.len()) as u64;
        let mut content = head;
        content.extend_from_slice(&rest);
        drop(rest);
        let opts = olm_catalog::LoadOptions {
            keep_raw: false,
            validate_only: false,
        };
        let index = olm_catalog::load::load_jsonl_with(content.as_slice(), &label, &opts)
            .map(|c| ContentIndex::new(&c))
            .map_err(|e| CatalogError::Parse {
                catalog: name.clone(),
                message: e.to_string(),
            })?;
        Ok((index, hash, size))
    })
    .await
    .unwrap_or_else(|e| {
        Err(CatalogError::Parse {
            catalog: catalog.to_owned(),
            message: e.to_string(),
        })
    });
    let (index, hash, size) = done?;
    inner.bytes.fetch_add(size, Ordering::Relaxed);
    Ok(Arc::new(Fetched {
        index: Arc::new(index),
        hash,
    }))
}

/// A response body as received.
struct Body {
    url: String,
    bytes: Vec<u8>,
    gzip: bool,
}

impl Body {
    /// The content, decompressed when it came gzip-encoded, never more than `limit` bytes
    /// (a small compressed body may expand a thousandfold).
    fn decode(self, catalog: &str, limit: u64) -> Result<Vec<u8>, CatalogError> {
        if !self.gzip {
            return Ok(self.bytes);
        }
        let mut out = Vec::new();
        let decoder = flate2::read::GzDecoder::new(self.bytes.as_slice());
        std::io::Read::read_to_end(&mut std::io::Read::take(decoder, limit + 1), &mut out)
            .map_err(|e| CatalogError::Request {
                catalog: catalog.to_owned(),
                message: format!("reading the gzip-encoded response of {}: {e}", self.url),
            })?;
        if out.len() as u64 > limit {
            return Err(CatalogError::TooLarge {
                catalog: catalog.to_owned(),
                url: self.url,
                limit,
            });
        }
        Ok(out)
    }
}

/// Whether the client can talk to a proxy of this scheme (it has no SOCKS).
fn speaks(proxy: &reqwest::Url) -> bool {
    matches!(proxy.scheme(), "http" | "https")
}

/// One GET, asking for gzip unless told not to (the catalog server compresses responses above
/// 1400 bytes for clients that accept it); the body is read up to the size limit.
async fn get(
    inner: &Inner,
    catalog: &str,
    reference: &str,
    url: &str,
) -> Result<Body, CatalogError> {
    let request_error = |e: reqwest::Error| CatalogError::Request {
        catalog: catalog.to_owned(),
        message: chain(&e),
    };
    let parsed = reqwest::Url::parse(url).ok();
    let proxy = parsed
        .as_ref()
        .and_then(|u| inner.proxies.proxy_for(u).map(|p| (u, p)));
    if let Some((_, p)) = proxy
        && !speaks(p)
    {
        // Going direct would bypass a proxy the environment asks for.
        return Err(CatalogError::Request {
            catalog: catalog.to_owned(),
            message: format!(
                "error sending request for url ({url}): proxyconnect tcp: {}: proxy scheme {} is not supported",
                proxy::proxy_addr(p),
                quote(p.scheme())
            ),
        });
    }
    let send_error =
        |e: reqwest::Error| match proxy.and_then(|(u, p)| proxy::proxy_connect_cause(&e, u, p)) {
            Some(cause) => CatalogError::Request {
                catalog: catalog.to_owned(),
                message: format!("{e}: {cause}"),
            },
            None => request_error(e),
        };
    let limit = inner.options.max_response_bytes;
    let too_large = || CatalogError::TooLarge {
        catalog: catalog.to_owned(),
        url: url.to_owned(),
        limit,
    };
    inner.requests.fetch_add(1, Ordering::Relaxed);
    let mut request = inner.http.get(url);
    if inner.options.gzip {
        request = request.header(reqwest::header::ACCEPT_ENCODING, "gzip");
    }
    let mut response = request.send().await.map_err(send_error)?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(CatalogError::UnexpectedStatus {
            code: response.status().as_u16(),
        });
    }
    if let Some(served) = response
        .headers()
        .get(olm_catalogd::server::SOURCE_HEADER)
        .map(|v| String::from_utf8_lossy(v.as_bytes()))
        && served != reference
    {
        return Err(CatalogError::OtherSource {
            catalog: catalog.to_owned(),
            served: served.into_owned(),
            expected: reference.to_owned(),
        });
    }
    let gzip = response
        .headers()
        .get(reqwest::header::CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
    if response.content_length().is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(request_error)? {
        inner
            .wire_bytes
            .fetch_add(chunk.len() as u64, Ordering::Relaxed);
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Body {
        url: url.to_owned(),
        bytes,
        gzip,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_escaped() {
        assert_eq!(query_escape("cert-utils-operator"), "cert-utils-operator");
        assert_eq!(query_escape("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }

    /// Upstream `resolve/catalog_test.go` (`TestPackageNotFound`-style walk errors) composes
    /// `error walking catalogs: error getting package %q from catalog "a": <err>`.
    #[test]
    fn walk_errors_read_like_upstream() {
        let e = WalkError {
            package: "p".into(),
            catalog: "a".into(),
            source: CatalogError::NotServing {
                catalog: "a".into(),
            },
        };
        assert_eq!(
            e.to_string(),
            r#"error walking catalogs: error getting package "p" from catalog "a": catalog "a" is not being served"#
        );
        assert_eq!(
            CatalogError::UnexpectedStatus { code: 404 }.to_string(),
            "error: received unexpected response status code 404"
        );
    }
}
