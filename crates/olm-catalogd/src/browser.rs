//! The catalog browser's HTTP shell: `/browse/…` answered by `olm_browser::respond` from the
//! catalogs a [`Views`] provides, with the browser's security headers. Reading and indexing a
//! catalog happens off the async threads, once per content digest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{RawQuery, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use olm_browser::{CatalogMeta, CatalogView};

use crate::storage::Storage;

/// Where the browser's catalogs come from.
pub trait Views: Send + Sync + 'static {
    /// The catalogs to show, in name order. May read and index content (called off the async
    /// threads).
    fn views(&self) -> Vec<Arc<CatalogView>>;
}

/// A fixed set of catalogs (`olm catalog serve-ui`).
pub struct Fixed(pub Vec<Arc<CatalogView>>);

impl Views for Fixed {
    fn views(&self) -> Vec<Arc<CatalogView>> {
        self.0.clone()
    }
}

/// The catalogs the server stores, each indexed once per content digest.
pub struct Stored {
    storage: Arc<Storage>,
    indexed: Mutex<HashMap<String, (String, Arc<CatalogView>)>>,
}

impl Stored {
    /// Views of what `storage` serves.
    pub fn new(storage: Arc<Storage>) -> Stored {
        Stored {
            storage,
            indexed: Mutex::new(HashMap::new()),
        }
    }
}

impl Views for Stored {
    fn views(&self) -> Vec<Arc<CatalogView>> {
        let mut out = Vec::new();
        let names = self.storage.names();
        // A poisoned lock only means another request panicked while inserting; the map is whole.
        let mut indexed = self.indexed.lock().unwrap_or_else(|e| e.into_inner());
        indexed.retain(|name, _| names.contains(name));
        for name in names {
            let Some(entry) = self.storage.get(&name) else {
                continue;
            };
            if let Some((digest, view)) = indexed.get(&name)
                && *digest == entry.record.digest
            {
                out.push(view.clone());
                continue;
            }
            let loaded = std::fs::File::open(&entry.path)
                .map_err(|e| e.to_string())
                .and_then(|f| {
                    olm_catalog::load::load_jsonl(std::io::BufReader::new(f), &name)
                        .map_err(|e| e.to_string())
                });
            let catalog = match loaded {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(catalog = %name, error = %e, "reading stored catalog for the browser");
                    continue;
                }
            };
            let meta = CatalogMeta {
                name: name.clone(),
                priority: None,
                image: entry.record.resolved_ref.clone(),
                digest: entry.record.digest.clone(),
                last_unpacked: entry.record.unpacked_at.to_string(),
                state: "Serving".into(),
            };
            let view = Arc::new(CatalogView::new(meta, catalog));
            indexed.insert(name, (entry.record.digest.clone(), view.clone()));
            out.push(view);
        }
        out
    }
}

/// The browser's routes: `/browse` and everything under it.
pub fn router(views: Arc<dyn Views>) -> Router {
    Router::new()
        .route("/browse", any(redirect))
        .route("/browse/", any(page))
        .route("/browse/{*rest}", any(page))
        .with_state(views)
}

async fn redirect() -> Response {
    (
        StatusCode::MOVED_PERMANENTLY,
        [(header::LOCATION, "/browse/")],
    )
        .into_response()
}

async fn page(
    State(views): State<Arc<dyn Views>>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, "GET, HEAD")],
            "the catalog browser is read-only\n",
        )
            .into_response();
    }
    let path = request.uri().path().to_owned();
    let query = query.unwrap_or_default();
    let answer = tokio::task::spawn_blocking(move || {
        let catalogs = views.views();
        olm_browser::respond(&catalogs, &path, &query)
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
