//! The catalog browser's HTTP shell: `/browse/…` answered by `olm_browser::respond` from the
//! catalogs a [`Views`] provides, with the browser's security headers. Reading and indexing a
//! catalog happens off the async threads, once per content digest. On a cluster,
//! [`ClusterWatch`] keeps ClusterCatalogs (priority, labels, availability, serving state) and,
//! when the cluster page is on, ClusterExtensions in watch caches; a page reads only those
//! caches.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use kube::ResourceExt as _;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use olm_api::{ClusterCatalog, ClusterExtension};
use olm_runtime::watch::RecoveringExt as _;

use axum::Router;
use axum::extract::{RawQuery, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use olm_browser::{CatalogMeta, CatalogView, ClusterView, ConditionView, ExtensionView};

use crate::storage::Storage;

/// Where the browser's catalogs come from.
pub trait Views: Send + Sync + 'static {
    /// The catalogs to show, in name order. May read and index content (called off the async
    /// threads).
    fn views(&self) -> Vec<Arc<CatalogView>>;

    /// What the cluster holds, when the browser runs on one.
    fn cluster(&self) -> Option<ClusterView> {
        None
    }
}

/// A fixed set of catalogs (`olm catalog serve-ui`).
pub struct Fixed(pub Vec<Arc<CatalogView>>);

impl Views for Fixed {
    fn views(&self) -> Vec<Arc<CatalogView>> {
        self.0.clone()
    }
}

/// Why a watch the browser reads fails, by kind, until it succeeds again (a missing permission,
/// say): the page says so rather than showing less in silence.
#[derive(Clone, Default)]
pub struct Problems(Arc<Mutex<BTreeMap<&'static str, String>>>);

impl Problems {
    /// Notes one event of the watch of `kind`: a failure is remembered, a success forgets it.
    pub fn note<T>(&self, kind: &'static str, event: &Result<T, watcher::Error>) {
        // A poisoned lock only means another task panicked while writing; the map is whole.
        let mut problems = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            Ok(_) => {
                problems.remove(kind);
            }
            // Shown on the page; the watch's recovery logs it.
            Err(e) => {
                problems.insert(kind, format!("cannot watch {kind}: {e}"));
            }
        }
    }

    fn all(&self) -> Vec<String> {
        let problems = self.0.lock().unwrap_or_else(|e| e.into_inner());
        problems.values().cloned().collect()
    }
}

/// Watch caches of the ClusterCatalogs (priority, labels, availability, serving state) and, when
/// the cluster page is on, the ClusterExtensions, with why a watch fails.
#[derive(Clone)]
pub struct ClusterWatch {
    catalogs: Store<ClusterCatalog>,
    /// `None`: the cluster page is off.
    extensions: Option<Store<ClusterExtension>>,
    problems: Problems,
}

impl ClusterWatch {
    /// The caches: `catalogs` is the ClusterCatalog controller's (whose watch reports to
    /// `problems` under `ClusterCatalogs`). With `cluster_page`, the ClusterExtensions get a
    /// watch of their own, kept filled by the future returned (run it until shutdown), and
    /// `/browse/cluster` shows them; without it, nothing watches them, the page is not found and
    /// the future ends at once.
    ///
    /// The cluster page tells whoever reaches the catalog port (unauthenticated, as upstream's)
    /// every ClusterExtension with its namespace, version and condition messages, so a server on
    /// a cluster shows it only when asked to.
    pub fn start(
        client: kube::Client,
        catalogs: Store<ClusterCatalog>,
        problems: Problems,
        cluster_page: bool,
    ) -> (ClusterWatch, futures::future::BoxFuture<'static, ()>) {
        if !cluster_page {
            let watch = ClusterWatch {
                catalogs,
                extensions: None,
                problems,
            };
            return (watch, Box::pin(std::future::ready(())));
        }
        let (extensions, extension_writer) = reflector::store();
        let extension_events = reflector::reflector(
            extension_writer,
            watcher(
                Api::<ClusterExtension>::all(client),
                watcher::Config::default(),
            ),
        )
        .recovering("clusterextensions");
        let noted = problems.clone();
        let run = extension_events.for_each(move |event| {
            noted.note(EXTENSIONS, &event);
            std::future::ready(())
        });
        (
            ClusterWatch {
                catalogs,
                extensions: Some(extensions),
                problems,
            },
            Box::pin(run),
        )
    }
}

/// The kind names [`Problems`] are kept under.
pub const CATALOGS: &str = "ClusterCatalogs";
const EXTENSIONS: &str = "ClusterExtensions";

/// A catalog's index for one content digest; filled by the first request that needs it, while
/// later requests for the same content wait for it (and requests for other catalogs do not).
type Slot = Arc<Mutex<Option<Arc<CatalogView>>>>;

/// The catalogs the server stores, each indexed once per content digest.
pub struct Stored {
    storage: Arc<Storage>,
    indexed: Mutex<HashMap<String, (String, Slot)>>,
    cluster: Option<ClusterWatch>,
}

impl Stored {
    /// Views of what `storage` serves, with the catalogs' metadata and the cluster page from
    /// `cluster` when given.
    pub fn new(storage: Arc<Storage>, cluster: Option<ClusterWatch>) -> Stored {
        Stored {
            storage,
            indexed: Mutex::new(HashMap::new()),
            cluster,
        }
    }

    /// The metadata of catalog `name` stored from `record`, with what its ClusterCatalog says.
    fn meta(&self, name: &str, record: &crate::storage::Record) -> CatalogMeta {
        let mut meta = CatalogMeta {
            name: name.to_owned(),
            image: record.resolved_ref.clone(),
            digest: record.digest.clone(),
            last_unpacked: record.unpacked_at.to_string(),
            state: "Serving".into(),
            ..CatalogMeta::default()
        };
        let Some(watch) = &self.cluster else {
            return meta;
        };
        let Some(c) = watch.catalogs.get(&ObjectRef::new(name)) else {
            meta.state = "Stored (no ClusterCatalog)".into();
            return meta;
        };
        let input = olm_extension::request::catalog_input(&c, None);
        meta.priority = Some(input.priority);
        meta.labels = input.labels;
        meta.availability = input.availability;
        let serving = c.status.as_ref().and_then(|s| {
            s.conditions
                .iter()
                .find(|x| x.type_ == olm_api::catalog::TYPE_SERVING)
        });
        meta.state = match serving {
            Some(x) if x.status == "True" => "Serving".into(),
            Some(x) => format!("Not serving ({})", x.reason),
            None => "Unknown".into(),
        };
        meta
    }
}

impl Views for Stored {
    fn views(&self) -> Vec<Arc<CatalogView>> {
        let names = self.storage.names();
        let mut wanted = Vec::with_capacity(names.len());
        {
            // A poisoned lock only means another request panicked while inserting; the map is
            // whole. Held only to find or add the slots, never while reading a catalog.
            let mut indexed = self.indexed.lock().unwrap_or_else(|e| e.into_inner());
            indexed.retain(|name, _| names.contains(name));
            for name in names {
                let Some(entry) = self.storage.get(&name) else {
                    continue;
                };
                let slot = match indexed.get(&name) {
                    Some((digest, slot)) if *digest == entry.record.digest => slot.clone(),
                    _ => {
                        let slot = Slot::default();
                        indexed.insert(name.clone(), (entry.record.digest.clone(), slot.clone()));
                        slot
                    }
                };
                wanted.push((name, entry, slot));
            }
        }
        let mut out = Vec::with_capacity(wanted.len());
        for (name, entry, slot) in wanted {
            let meta = self.meta(&name, &entry.record);
            let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(view) = slot.as_ref() {
                out.push(Arc::new(view.with_meta(meta)));
                continue;
            }
            // A catalog that cannot be read is left out of this answer and tried again on
            // the next one.
            match read(&entry.path, &name) {
                Ok(catalog) => {
                    let view = Arc::new(CatalogView::new(meta, catalog));
                    *slot = Some(view.clone());
                    out.push(view);
                }
                Err(e) => {
                    tracing::error!(catalog = %name, error = %e, "reading stored catalog for the browser");
                }
            }
        }
        out
    }

    fn cluster(&self) -> Option<ClusterView> {
        let watch = self.cluster.as_ref()?;
        let mut extensions: Vec<ExtensionView> = watch
            .extensions
            .as_ref()?
            .state()
            .iter()
            .map(|e| extension_view(e))
            .collect();
        extensions.sort_by(|a, b| a.name.cmp(&b.name));
        let problems = watch.problems.all();
        Some(ClusterView {
            extensions,
            problems,
        })
    }
}

/// Reads a stored catalog (`name`'s JSON lines at `path`).
fn read(path: &std::path::Path, name: &str) -> Result<olm_catalog::model::Catalog, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    olm_catalog::load::load_jsonl(std::io::BufReader::new(file), name).map_err(|e| e.to_string())
}

/// A ClusterExtension as the cluster page shows it, with the request the controller would make.
fn extension_view(e: &ClusterExtension) -> ExtensionView {
    let bundle = e
        .status
        .as_ref()
        .and_then(|s| s.install.as_ref())
        .map(|i| i.bundle.clone());
    let installed = bundle.as_ref().map(|b| olm_resolve::Installed {
        name: b.name.as_str().into(),
        version: b.version.clone(),
        release: b.release.clone(),
    });
    ExtensionView {
        name: e.name_any(),
        namespace: e.spec.namespace.clone(),
        package: e.spec.package_name().to_owned(),
        installed: bundle.map(|b| (b.name, b.version)),
        conditions: e
            .status
            .iter()
            .flat_map(|s| s.conditions.iter())
            .map(|c| ConditionView {
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
                message: c.message.clone(),
            })
            .collect(),
        request: olm_extension::request::request_of(e, installed).map_err(|e| e.to_string()),
    }
}

/// The browser's routes: `/browse` and everything under it, every answer with [`secure`]'s
/// headers.
pub fn router(views: Arc<dyn Views>) -> Router {
    Router::new()
        .route("/browse", any(redirect))
        .route("/browse/", any(page))
        .route("/browse/{*rest}", any(page))
        .with_state(views)
        .layer(axum::middleware::map_response(secure))
}

/// `/browse` and, for `olm catalog serve-ui`, every other path: to the catalogs page. The
/// browser is read-only, so only `GET` and `HEAD` are sent on.
pub async fn redirect(method: Method) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return read_only();
    }
    (
        StatusCode::MOVED_PERMANENTLY,
        [(header::LOCATION, "/browse/")],
    )
        .into_response()
}

fn read_only() -> Response {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "GET, HEAD")],
        "the catalog browser is read-only\n",
    )
        .into_response()
}

/// The browser's security headers, on every answer (pages, errors, redirects): the strict
/// Content-Security-Policy, no MIME sniffing, no referrer, no framing, and no caching without
/// asking again.
pub async fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(olm_browser::html::CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

async fn page(
    State(views): State<Arc<dyn Views>>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return read_only();
    }
    let path = request.uri().path().to_owned();
    let query = query.unwrap_or_default();
    let answer = tokio::task::spawn_blocking(move || {
        let catalogs = views.views();
        let cluster = views.cluster();
        olm_browser::respond(&catalogs, cluster.as_ref(), &path, &query)
    })
    .await;
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            tracing::error!(error = %e, "rendering a browser page");
            return (StatusCode::INTERNAL_SERVER_ERROR, "internal error\n").into_response();
        }
    };
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, answer.body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(answer.content_type),
    );
    response
}
