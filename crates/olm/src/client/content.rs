//! Reading what a cluster's catalogs serve, from wherever `olm` runs.
//!
//! A ClusterCatalog's `status.urls.base` names the catalog server as the cluster sees it
//! (`https://catalogd-service.olmv1-system.svc/catalogs/NAME`). A Service host is reached
//! through the API server's service proxy with the kubeconfig's credentials (no port-forward,
//! no exposed Service; the API server checks the caller may `get services/proxy`); any other host
//! (a catalog server reachable from here, as in `olm dev`) is asked directly.

use anyhow::{Context, anyhow, bail};
use kube::ResourceExt;
use olm_api::ClusterCatalog;
use olm_catalog::Catalog;
use olm_goenc::quote;

/// The largest catalog content read (a whole catalog is tens of megabytes).
const MAX_BYTES: usize = 256 << 20;

/// How a catalog's content is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Through the API server: this path on it.
    Proxy(String),
    /// Directly: this URL.
    Direct(String),
}

/// The route to `base` + `suffix` (`suffix` starts with `/api/v1/…`, query included).
pub fn route(base: &str, suffix: &str) -> anyhow::Result<Route> {
    let url =
        reqwest::Url::parse(base).map_err(|e| anyhow!("invalid base URL {}: {e}", quote(base)))?;
    let host = url.host_str().unwrap_or_default();
    let service_host = host
        .strip_suffix(".svc")
        .or_else(|| host.strip_suffix(".svc.cluster.local"));
    match service_host.and_then(|h| h.split_once('.')) {
        Some((service, namespace)) if !service.is_empty() && !namespace.contains('.') => {
            let port = url.port_or_known_default().unwrap_or(443);
            Ok(Route::Proxy(format!(
                "/api/v1/namespaces/{namespace}/services/{}:{service}:{port}/proxy{}{suffix}",
                url.scheme(),
                url.path().trim_end_matches('/'),
            )))
        }
        _ => Ok(Route::Direct(format!(
            "{}{suffix}",
            base.trim_end_matches('/')
        ))),
    }
}

/// Reads `suffix` of the catalog's API.
/// How often a 404 from the catalog Service is asked again, and how long apart: a replica that
/// has not pulled a new catalog yet catches up within seconds.
const NOT_YET_PULLED_TRIES: u32 = 10;
const NOT_YET_PULLED_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

async fn get(client: &kube::Client, cat: &ClusterCatalog, suffix: &str) -> anyhow::Result<Vec<u8>> {
    let name = cat.name_any();
    let base = cat
        .status
        .as_ref()
        .and_then(|s| s.urls.as_ref())
        .map(|u| u.base.clone())
        .ok_or_else(|| anyhow!("cluster catalog {} has no URLs", quote(&name)))?;
    match route(&base, suffix)? {
        Route::Proxy(path) => {
            // Every OLM replica serves every catalog, each once it has pulled it itself: right
            // after a catalog starts serving, the replica the Service picks may not have it
            // yet and answers 404. That settles within seconds, so a 404 is asked again.
            let mut tries = 0;
            let text = loop {
                let req = http::Request::get(&path).body(Vec::new())?;
                match client.request_text(req).await {
                    Err(kube::Error::Api(s)) if s.code == 404 && tries < NOT_YET_PULLED_TRIES => {
                        tries += 1;
                        tokio::time::sleep(NOT_YET_PULLED_WAIT).await;
                    }
                    other => {
                        break other.with_context(|| {
                            format!(
                                "reading catalog {} through the API server ({path})",
                                quote(&name)
                            )
                        })?;
                    }
                }
            };
            if text.len() > MAX_BYTES {
                bail!("catalog {}: more than {MAX_BYTES} bytes", quote(&name));
            }
            Ok(text.into_bytes())
        }
        Route::Direct(url) => {
            let resp = reqwest::Client::new()
                .get(&url)
                .timeout(std::time::Duration::from_secs(300))
                .send()
                .await
                .with_context(|| format!("reading catalog {} from {url}", quote(&name)))?;
            if !resp.status().is_success() {
                bail!(
                    "reading catalog {} from {url}: unexpected status code {}",
                    quote(&name),
                    resp.status().as_u16()
                );
            }
            if resp.content_length().is_some_and(|n| n > MAX_BYTES as u64) {
                bail!("catalog {}: more than {MAX_BYTES} bytes", quote(&name));
            }
            Ok(resp.bytes().await?.to_vec())
        }
    }
}

/// The catalog's content: all of it, or only `package`'s (its `olm.package` blob and every
/// blob of the package, through the `metas` endpoint).
pub async fn content(
    client: &kube::Client,
    cat: &ClusterCatalog,
    package: Option<&str>,
) -> anyhow::Result<Catalog> {
    let name = cat.name_any();
    let bytes = match package {
        None => get(client, cat, "/api/v1/all").await?,
        Some(p) => {
            let q = |k: &str| {
                reqwest::Url::parse_with_params("x:/", &[(k, p)])
                    .map(|u| u.query().unwrap_or_default().to_owned())
                    .unwrap_or_default()
            };
            let mut head = get(
                client,
                cat,
                &format!("/api/v1/metas?schema=olm.package&{}", q("name")),
            )
            .await?;
            head.push(b'\n');
            head.extend(get(client, cat, &format!("/api/v1/metas?{}", q("package"))).await?);
            head
        }
    };
    olm_catalog::load::load_jsonl(bytes.as_slice(), &name)
        .map_err(|e| anyhow!("catalog {}: {e}", quote(&name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_hosts_go_through_the_api_server() {
        assert_eq!(
            route("https://catalogd-service.olmv1-system.svc/catalogs/operatorhubio", "/api/v1/all").ok(),
            Some(Route::Proxy(
                "/api/v1/namespaces/olmv1-system/services/https:catalogd-service:443/proxy/catalogs/operatorhubio/api/v1/all".into()
            ))
        );
        assert_eq!(
            route("http://catalogd.ns.svc.cluster.local:8080/catalogs/c/", "/api/v1/metas?package=p").ok(),
            Some(Route::Proxy(
                "/api/v1/namespaces/ns/services/http:catalogd:8080/proxy/catalogs/c/api/v1/metas?package=p".into()
            ))
        );
        assert_eq!(
            route("http://127.0.0.1:8443/catalogs/c", "/api/v1/all").ok(),
            Some(Route::Direct(
                "http://127.0.0.1:8443/catalogs/c/api/v1/all".into()
            ))
        );
        assert!(route("not a url", "/api/v1/all").is_err());
    }
}
