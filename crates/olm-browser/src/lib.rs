//! A catalog browser for people: server-rendered HTML pages of the catalogs a cluster serves (or
//! one on disk) — catalogs, package search, packages with their channels, upgrade graph and
//! "what would I get", and bundles with their APIs, configuration and a ClusterExtension to copy.
//!
//! Pure: [`respond`] turns a request path and query into a [`Response`] from indexed catalogs
//! ([`CatalogView`]). The HTTP server, caching of indexed content and the cluster reads live in
//! the shell (`olm-catalogd`, `olm catalog serve-ui`).
//!
//! Safety: catalogs are untrusted. Every catalog string is escaped ([`html::esc`]), Markdown is
//! rendered without raw HTML or script links ([`html::markdown`]), icons are shown only as
//! `data:image/…` URLs, and every response carries a strict Content-Security-Policy
//! ([`html::CSP`]): no inline script or style, nothing loaded from elsewhere.
//!
//! Not for: writing anything (the browser is read-only).

mod cluster;
pub mod html;
mod model;
mod pages;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use cluster::{ClusterView, ConditionView, ExtensionView, Upgrade, upgrade};
pub use model::{BundleView, CatalogMeta, CatalogView, ChannelView, PackageView};
pub use pages::{MAX_RESULTS, MAX_SKIP_RANGE_EDGES, SearchQuery, WouldGet};

/// An answer: status, content type and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Response {
    fn html(status: u16, body: String) -> Response {
        Response {
            status,
            content_type: "text/html; charset=utf-8",
            body,
        }
    }
}

const STYLE: &str = include_str!("../static/style.css");
const SCRIPT: &str = include_str!("../static/browser.js");

/// Answers a GET of `path` (under [`html::PREFIX`]) with query string `query` from `catalogs`
/// and, when the browser runs on a cluster, what it holds.
pub fn respond(
    catalogs: &[Arc<CatalogView>],
    cluster: Option<&ClusterView>,
    path: &str,
    query: &str,
) -> Response {
    let params = query_params(query);
    let Some(rest) = path.strip_prefix(html::PREFIX) else {
        return not_found("no such page");
    };
    let Ok(segments) = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(olm_goenc::url::path_unescape)
        .collect::<Result<Vec<String>, _>>()
    else {
        return not_found("no such page");
    };
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    match segs.as_slice() {
        [] => Response::html(200, pages::catalogs(catalogs, cluster.is_some())),
        ["static", "style.css"] => Response {
            status: 200,
            content_type: "text/css; charset=utf-8",
            body: STYLE.to_owned(),
        },
        ["static", "browser.js"] => Response {
            status: 200,
            content_type: "text/javascript; charset=utf-8",
            body: SCRIPT.to_owned(),
        },
        ["cluster"] => match cluster {
            Some(view) => Response::html(200, cluster::cluster(catalogs, view)),
            None => not_found(
                "no cluster page here: this browser runs without a cluster, or with its cluster page off",
            ),
        },
        ["search"] => Response::html(
            200,
            pages::search(catalogs, &SearchQuery::from_params(&params)),
        ),
        // A catalog's packages: its search page.
        ["catalogs", catalog] => {
            if !catalogs.iter().any(|c| c.meta.name == *catalog) {
                return not_found(&format!("no catalog {catalog}"));
            }
            let q = SearchQuery {
                catalog: (*catalog).to_owned(),
                ..SearchQuery::default()
            };
            Response::html(200, pages::search(catalogs, &q))
        }
        ["catalogs", catalog, "packages", package, rest @ ..] => {
            let Some(c) = catalogs.iter().find(|c| c.meta.name == *catalog) else {
                return not_found(&format!("no catalog {catalog}"));
            };
            let Some(p) = c.package(package) else {
                return not_found(&format!("no package {package} in catalog {catalog}"));
            };
            match rest {
                [] => Response::html(
                    200,
                    pages::package(catalogs, c, p, WouldGet::from_params(&params).as_ref()),
                ),
                ["bundles", bundle] => match p.bundle(bundle) {
                    Some(b) => Response::html(200, pages::bundle(c, p, b)),
                    None => not_found(&format!("no bundle {bundle} in package {package}")),
                },
                _ => not_found("no such page"),
            }
        }
        _ => not_found("no such page"),
    }
}

fn not_found(what: &str) -> Response {
    Response::html(
        404,
        html::page(
            "Not found",
            &format!("<h1>Not found</h1><p>{}</p>", html::esc(what)),
        ),
    )
}

/// The query parameters, as Go's `URL.Query()` reads them (pairs that do not decode are left
/// out; the last of a repeated one wins).
fn query_params(query: &str) -> BTreeMap<String, String> {
    olm_goenc::url::parse_query(query).0.into_iter().collect()
}

#[cfg(test)]
mod tests;
