//! The PackageManifest API (`packages.operators.coreos.com/v1`, upstream's packageserver)
//! served by `olm run` itself, as an aggregated API: what users browse to find operators
//! (`kubectl get packagemanifests`, consoles).
//!
//! Flow, once the v0 caches are ready (only the leader runs it):
//! 1. Bind [`Options::addr`] (`olm run --packageserver-bind-address`: upstream's port, 5443, on
//!    every interface by default) and issue a serving certificate for the Service [`SERVICE`] of
//!    the system namespace (the rules of `olm_security::certs`: 730 days), kept in memory:
//!    every start (and every new leader) issues its own. If either fails, PackageManifests are
//!    not served, a registration of ours that an earlier process left is removed, `/readyz`
//!    fails naming [`READINESS_CHECK`] and why (a port another process holds, say), and both
//!    are tried again every [`PREPARE_RETRY`] until they succeed.
//! 2. With [`Options::advertise`] (`olm dev` with OLM as a process: this machine's address),
//!    route the Service to this process: a Service without selector and Endpoints at that
//!    address and the bound port. With [`Options::pod`] (`olm` in a Pod, told its name by the
//!    downward API), label that Pod [`ps::SERVING_LABEL`]` = serving`, which the Service
//!    installed with `olm` selects: only the serving leader is an endpoint. Without either, the
//!    Service is someone else's to route (a test's Endpoints, an operator's own Service), or
//!    nobody's.
//! 3. Register the APIService [`APISERVICE`] (with this process's CA as `caBundle`) only while the
//!    Service exists, and take it away when the Service goes — as
//!    `olm_v0::packageserver::registration::decide` says, looked at again on every change of the
//!    Service and every [`RESYNC`]. An APIService the aggregator cannot reach would stop every
//!    namespace deletion in the cluster, so none is left behind.
//! 4. Serve discovery, `list` (all namespaces or one, with `labelSelector` and a
//!    `metadata.name` `fieldSelector`), `get`, and the Table form kubectl asks for.
//! 5. On shutdown: unregister (unless a newer leader already registered its own CA), remove the
//!    route made in step 2, then stop serving.
//!
//! Manifests are built by `olm_v0::packageserver::packagemanifest` from what each CatalogSource's
//! registry held when it last became ready ([`Contents`]), and cached per content and CatalogSource
//! resourceVersion: a new fetch (a registry becoming ready, or the periodic re-read at OLMConfig's
//! `packageServerSyncInterval`, see [`crate::catalog_operator::connection`]) or an edited
//! CatalogSource rebuilds that catalog's manifests at the next request.
//!
//! Who may ask: requests must come over TLS. When the cluster publishes a front-proxy CA
//! (`requestheader-client-ca-file` of ConfigMap `kube-system/extension-apiserver-authentication`)
//! the TLS handshake requires a client certificate it signed, i.e. the aggregator; otherwise
//! (a control plane without `--requestheader-client-ca-file`) anyone reaching the port can read,
//! which is logged at start. `requestheader-allowed-names` and the forwarded identity headers
//! are not checked: the API server has already authorized the request before proxying it.
//!
//! Guarantees: answers are sorted by CatalogSource (namespace, name), then package; icons are
//! stripped from them and served, as upstream does, only by the `icon` subresource. An
//! APIService naming another namespace's Service (upstream's packageserver) is never touched.
//!
//! Assumptions: a Service named [`SERVICE`] in the system namespace that `olm` did not make
//! routes port 443 to this port on the leader.
//!
//! Caveats: the certificate is not renewed while the process runs (a restart renews it); a
//! `watch` is refused (upstream's storage has none either). A process killed without a
//! shutdown leaves its registration until the next leader replaces it.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use futures::{FutureExt as _, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Service};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use olm_runtime::watch::RecoveringExt as _;
use olm_security::certs::{Policy, Subject};
use olm_v0::packageserver::packagemanifest::{self as pm, Catalog, IncludeObject};
use olm_v0::packageserver::registration::{self as ps, Action, GROUP, Observed, RESOURCE, Serving};
pub use olm_v0::packageserver::registration::{APISERVICE, SERVICE};
use olm_v0_api::v1alpha1::CatalogSource;
use serde_json::{Value, json};

use super::{FIELD_MANAGER, Index, lock};
use crate::catalog_operator::catalogs::{Contents, Fetched};
use olm_cluster::context::Shared;

/// How often the registration is looked at besides on changes of the Service (someone may
/// delete or edit the APIService).
pub const RESYNC: Duration = Duration::from_secs(30);

/// Where the packageserver listens and how the API server reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Where it listens; port 0 takes any free port.
    pub addr: SocketAddr,
    /// The address the API server reaches this process at, when `olm` routes [`SERVICE`] to
    /// itself (a Service without selector, and Endpoints at this address and the bound port).
    /// `None`: the Service is someone else's to route; without one the API is not registered.
    pub advertise: Option<IpAddr>,
    /// The Pod this process runs in (`POD_NAMESPACE`, `POD_NAME` from the downward API), which
    /// it labels while it serves so that the Service installed with it routes here.
    pub pod: Option<PodRef>,
    /// The versions, suites and key exchange groups it offers (`--tls-profile`).
    pub tls_profile: olm_tls::TlsProfile,
}

/// A Pod's namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            addr: SocketAddr::from(([0, 0, 0, 0], ps::DEFAULT_PORT)),
            advertise: None,
            pod: None,
            tls_profile: olm_tls::TlsProfile::default(),
        }
    }
}

/// How the API server is routed to this process, and how to undo it.
enum Route {
    /// A Service without selector and Endpoints at this address and port.
    Endpoints(IpAddr, u16),
    /// This Pod labelled as serving.
    Pod(PodRef),
}

/// Manifests of one catalog, with what they were built from.
struct Built {
    content: Fetched,
    resource_version: String,
    manifests: Arc<Vec<Value>>,
}

#[derive(Clone)]
struct Served {
    index: Index,
    contents: Contents,
    global_namespace: String,
    built: Arc<Mutex<HashMap<String, Built>>>,
}

/// The name of the packageserver's check in `/readyz`.
pub const READINESS_CHECK: &str = "packageserver";

/// How long the packageserver waits before trying again to listen (or to issue its
/// certificate) after it could not.
pub const PREPARE_RETRY: Duration = Duration::from_secs(5);

/// Serves the PackageManifest API until `stop` resolves; see the module documentation. While it
/// cannot listen, `readiness` fails with why.
pub async fn run(
    shared: Arc<Shared>,
    index: Index,
    contents: Contents,
    options: Options,
    readiness: olm_runtime::health::Readiness,
    stop: impl std::future::Future<Output = ()> + Send,
) {
    let client = shared.client.clone();
    let namespace = shared.system_namespace.clone();
    tokio::pin!(stop);
    let mut failed: Option<String> = None;
    let (listener, tls, ca_bundle) = loop {
        match prepare(&shared, &options).await {
            Ok(prepared) => break prepared,
            Err(why) => {
                if failed.as_ref() != Some(&why) {
                    tracing::warn!(error = %why, retry_in = ?PREPARE_RETRY, "packageserver: PackageManifests are not served");
                    readiness.failing(READINESS_CHECK, why.clone());
                    if failed.is_none() {
                        withdraw(&client, &namespace).await;
                    }
                    failed = Some(why);
                }
                tokio::select! {
                    () = tokio::time::sleep(PREPARE_RETRY) => {}
                    () = &mut stop => return,
                }
            }
        }
    };
    readiness.passing(READINESS_CHECK);
    let port = listener
        .local_addr()
        .map_or(options.addr.port(), |a| a.port());
    tracing::info!(addr = %options.addr, port, "packageserver: serving PackageManifests");
    let route = match (options.advertise, options.pod.clone()) {
        (Some(address), _) => Some(Route::Endpoints(address, port)),
        (None, Some(pod)) => Some(Route::Pod(pod)),
        (None, None) => None,
    };
    if let Some(route) = &route
        && let Err(e) = apply_route(&client, &namespace, route).await
    {
        tracing::warn!(service = SERVICE, error = %e, "packageserver: routing the Service to this process failed");
    }
    let served = Served {
        index,
        contents,
        global_namespace: namespace.clone(),
        built: Arc::default(),
    };
    let (stop_server, server_stop) = tokio::sync::watch::channel(false);
    let server = olm_runtime::serve::serve_with(
        listener,
        router(served),
        Some(tls),
        olm_runtime::serve::Limits::default(),
        server_stop,
    );
    tokio::pin!(server);
    let registrar = keep_registered(&client, &namespace, &ca_bundle, stop);
    tokio::select! {
        served = &mut server => {
            if let Err(e) = served {
                tracing::warn!(port, error = %e, "packageserver: serving failed");
            }
            reconcile(&client, &namespace, Some(&ca_bundle), Serving::Stopping).await;
            if let Some(route) = &route {
                withdraw_route(&client, &namespace, route).await;
            }
        }
        () = registrar => {
            reconcile(&client, &namespace, Some(&ca_bundle), Serving::Stopping).await;
            if let Some(route) = &route {
                withdraw_route(&client, &namespace, route).await;
            }
            let _ = stop_server.send(true);
            if let Err(e) = server.await {
                tracing::warn!(port, error = %e, "packageserver: serving failed");
            }
        }
    }
}

/// The listener, its TLS and the CA to register (base64), or why the API cannot be served.
async fn prepare(
    shared: &Shared,
    options: &Options,
) -> Result<(tokio::net::TcpListener, Arc<rustls::ServerConfig>, String), String> {
    let listener = olm_runtime::serve::listen(options.addr).map_err(|e| {
        format!(
            "cannot listen on {} (--packageserver-bind-address): {e}",
            options.addr
        )
    })?;
    let subject = Subject {
        service: SERVICE.to_owned(),
        namespace: shared.system_namespace.clone(),
    };
    let plan = olm_security::certs::plan(&subject, jiff::Timestamp::now(), &Policy::default());
    let issued = olm_cluster::certs::issue(&plan).map_err(|e| {
        format!(
            "issuing the serving certificate of Service {SERVICE} in {}: {e}",
            shared.system_namespace
        )
    })?;
    let front_proxy_ca = front_proxy_ca(&shared.client).await;
    let tls = tls_config(
        &issued.cert_pem,
        &issued.key_pem,
        front_proxy_ca.as_deref(),
        &options.tls_profile,
    )
    .map_err(|e| format!("configuring TLS: {e}"))?;
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(issued.ca_pem.as_bytes());
    Ok((listener, tls, ca_bundle))
}

/// Keeps the registration as [`ps::decide`] says while this process serves, on every change of
/// the Service and every [`RESYNC`], until `stop` resolves.
async fn keep_registered(
    client: &kube::Client,
    namespace: &str,
    ca_bundle: &str,
    stop: impl std::future::Future<Output = ()>,
) {
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let by_name = watcher::Config::default().fields(&format!("metadata.name={SERVICE}"));
    let mut changes = watcher::watcher(services, by_name)
        .recovering("services (packageserver)")
        .boxed();
    // Not at once: the loop looks before its first wait.
    let mut resync = tokio::time::interval_at(tokio::time::Instant::now() + RESYNC, RESYNC);
    tokio::pin!(stop);
    let mut foreign_reported = false;
    loop {
        let action = reconcile(client, namespace, Some(ca_bundle), Serving::Yes).await;
        // Said once, not every resync: it stays true until someone removes the other one.
        if action == Some(Action::Foreign) && !foreign_reported {
            tracing::warn!(
                apiservice = APISERVICE,
                "packageserver: the APIService names another packageserver's Service; it is left alone and PackageManifests are not served by olm"
            );
        }
        if let Some(action) = action {
            foreign_reported = action == Action::Foreign;
        }
        tokio::select! {
            () = &mut stop => return,
            _ = resync.tick() => {}
            change = changes.next() => {
                if change.is_none() {
                    // The watch ended (it does not on its own): keep to the resync.
                    changes = futures::stream::pending().boxed();
                }
                // A watch delivers a burst (a list is several events): one look covers it.
                while changes.next().now_or_never().flatten().is_some() {}
            }
        }
    }
}

/// Looks at the Service and the APIService and does what [`ps::decide`] says; returns the
/// action, or `None` when the API server could not be read (logged; the next look retries).
async fn reconcile(
    client: &kube::Client,
    namespace: &str,
    ca_bundle: Option<&str>,
    serving: Serving,
) -> Option<Action> {
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let apiservices: Api<APIService> = Api::all(client.clone());
    let routed = match services.get_opt(SERVICE).await {
        Ok(s) => s.is_some(),
        Err(e) => {
            tracing::warn!(service = SERVICE, error = %e, "packageserver: reading the Service failed");
            return None;
        }
    };
    let existing = match apiservices.get_opt(APISERVICE).await {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(apiservice = APISERVICE, error = %e, "packageserver: reading the APIService failed");
            return None;
        }
    };
    let registered = existing
        .as_ref()
        .map(|a| ps::registered(a, namespace, ca_bundle));
    let action = ps::decide(Observed {
        serving,
        routed,
        registered,
    });
    match (action, ca_bundle) {
        (Action::Register, Some(ca)) => {
            let object = ps::apiservice(namespace, ca);
            match apiservices
                .patch(
                    APISERVICE,
                    &PatchParams::apply(FIELD_MANAGER).force(),
                    &Patch::Apply(&object),
                )
                .await
            {
                Ok(_) => {
                    tracing::info!(
                        apiservice = APISERVICE,
                        service = SERVICE,
                        namespace,
                        "packageserver: registered"
                    );
                }
                Err(e) => {
                    tracing::warn!(apiservice = APISERVICE, error = %e, "packageserver: applying the APIService failed");
                }
            }
        }
        (Action::Unregister, _) => {
            // Only the object looked at: never one a newer leader wrote in between.
            let preconditions = Preconditions {
                resource_version: existing.and_then(|a| a.metadata.resource_version),
                uid: None,
            };
            let params = DeleteParams {
                preconditions: Some(preconditions),
                ..DeleteParams::default()
            };
            match apiservices.delete(APISERVICE, &params).await {
                Ok(_) => {
                    tracing::info!(
                        apiservice = APISERVICE,
                        routed,
                        "packageserver: unregistered"
                    );
                }
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                Err(e) => {
                    tracing::warn!(apiservice = APISERVICE, error = %e, "packageserver: deleting the APIService failed");
                }
            }
        }
        (Action::Register | Action::Foreign | Action::Nothing, _) => {}
    }
    Some(action)
}

/// Removes what a process that does not serve the PackageManifest API must not leave behind:
/// the APIService naming [`SERVICE`] of `namespace`, and a route `olm` made to itself. For
/// `olm run --olm v1` and `olm uninstall-olm`. Returns whether there was an APIService to
/// remove.
pub async fn withdraw(client: &kube::Client, namespace: &str) -> bool {
    let action = reconcile(client, namespace, None, Serving::No).await;
    remove_route(client, namespace, None).await;
    action == Some(Action::Unregister)
}

/// Applies the Service without selector and its Endpoints at `address:port`.
async fn apply_route(
    client: &kube::Client,
    namespace: &str,
    route: &Route,
) -> Result<(), kube::Error> {
    let (address, port) = match route {
        Route::Endpoints(address, port) => (*address, *port),
        Route::Pod(pod) => {
            label_pod(client, pod, true).await?;
            tracing::info!(service = SERVICE, namespace, pod = %pod.name, "packageserver: the Service routes to this Pod");
            return Ok(());
        }
    };
    let params = PatchParams::apply(FIELD_MANAGER).force();
    Api::<Service>::namespaced(client.clone(), namespace)
        .patch(SERVICE, &params, &Patch::Apply(ps::service(namespace)))
        .await?;
    Api::<Endpoints>::namespaced(client.clone(), namespace)
        .patch(
            SERVICE,
            &params,
            &Patch::Apply(ps::endpoints(namespace, address, port)),
        )
        .await?;
    tracing::info!(service = SERVICE, namespace, %address, port, "packageserver: the Service routes to this process");
    Ok(())
}

/// Labels (or unlabels) this process's Pod as the one serving PackageManifests.
async fn label_pod(client: &kube::Client, pod: &PodRef, serving: bool) -> Result<(), kube::Error> {
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), &pod.namespace)
        .patch(
            &pod.name,
            &PatchParams::default(),
            &Patch::Merge(ps::serving_label_patch(serving)),
        )
        .await
        .map(drop)
}

/// Undoes [`apply_route`].
async fn withdraw_route(client: &kube::Client, namespace: &str, route: &Route) {
    match route {
        Route::Endpoints(address, port) => {
            remove_route(client, namespace, Some((*address, *port))).await;
        }
        Route::Pod(pod) => {
            if let Err(e) = label_pod(client, pod, false).await {
                tracing::warn!(pod = %pod.name, error = %e, "packageserver: unlabelling this Pod failed");
            }
        }
    }
}

/// Deletes the Service and Endpoints `olm` made ([`ps::ROUTE_LABEL`]); with `only_to`, only
/// while they still point at that address (another process may route to itself since).
async fn remove_route(client: &kube::Client, namespace: &str, only_to: Option<(IpAddr, u16)>) {
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), namespace);
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let Ok(Some(current)) = endpoints.get_opt(SERVICE).await else {
        return;
    };
    let made_by_olm = |labels: Option<&BTreeMap<String, String>>| {
        labels.is_some_and(|l| l.contains_key(ps::ROUTE_LABEL))
    };
    if !made_by_olm(current.metadata.labels.as_ref()) {
        return;
    }
    if let Some((address, port)) = only_to {
        let subset = current.subsets.as_ref().and_then(|s| s.first());
        let ip = subset
            .and_then(|s| s.addresses.as_ref())
            .and_then(|a| a.first())
            .map(|a| a.ip.clone());
        let to = subset
            .and_then(|s| s.ports.as_ref())
            .and_then(|p| p.first())
            .map(|p| p.port);
        if ip != Some(address.to_string()) || to != Some(i32::from(port)) {
            return;
        }
    }
    if let Ok(Some(service)) = services.get_opt(SERVICE).await
        && made_by_olm(service.metadata.labels.as_ref())
    {
        let _ = services.delete(SERVICE, &DeleteParams::default()).await;
    }
    let _ = endpoints.delete(SERVICE, &DeleteParams::default()).await;
}

/// The front-proxy CA (PEM) the API server publishes for extension API servers, if any.
async fn front_proxy_ca(client: &kube::Client) -> Option<String> {
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    match maps.get_opt("extension-apiserver-authentication").await {
        Ok(Some(m)) => m
            .data
            .and_then(|d| d.get("requestheader-client-ca-file").cloned())
            .filter(|ca| !ca.trim().is_empty()),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(configmap = "kube-system/extension-apiserver-authentication", error = %e, "packageserver: reading the front-proxy CA failed");
            None
        }
    }
}

fn tls_config(
    cert: &str,
    key: &str,
    front_proxy_ca: Option<&str>,
    profile: &olm_tls::TlsProfile,
) -> Result<Arc<rustls::ServerConfig>, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    olm_image::install_crypto_provider();
    let certified = olm_tls::serving::certified_key(cert.as_bytes(), key.as_bytes())
        .map_err(|e| e.to_string())?;
    let clients = match front_proxy_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(ca.as_bytes()) {
                let c = c.map_err(|e| format!("front-proxy CA: {e}"))?;
                roots.add(c).map_err(|e| format!("front-proxy CA: {e}"))?;
            }
            rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
                .build()
                .map_err(|e| format!("front-proxy CA: {e}"))?
        }
        None => {
            tracing::warn!(
                "packageserver: the cluster publishes no front-proxy CA; PackageManifests are served to any TLS client"
            );
            rustls::server::WebPkiClientVerifier::no_client_auth()
        }
    };
    olm_tls::serving::server_config_for_clients(
        Arc::new(rustls::sign::SingleCertAndKey::from(certified)),
        clients,
        profile,
    )
    .map_err(|e| e.to_string())
}

fn router(served: Served) -> Router {
    let base = format!("/apis/{GROUP}/v1");
    Router::new()
        .route("/apis", get(|| async { json_response(group_list()) }))
        .route(
            &format!("/apis/{GROUP}"),
            get(|| async { json_response(api_group()) }),
        )
        .route(&base, get(|| async { json_response(resource_list()) }))
        .route(&format!("{base}/{RESOURCE}"), get(list_all))
        .route(
            &format!("{base}/namespaces/{{namespace}}/{RESOURCE}"),
            get(list_namespace),
        )
        .route(
            &format!("{base}/namespaces/{{namespace}}/{RESOURCE}/{{name}}"),
            get(get_one),
        )
        .route(
            &format!("{base}/namespaces/{{namespace}}/{RESOURCE}/{{name}}/icon"),
            get(get_icon),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
        .with_state(served)
}

fn group_version() -> Value {
    json!({"groupVersion": format!("{GROUP}/v1"), "version": "v1"})
}

fn api_group() -> Value {
    json!({"kind": "APIGroup", "apiVersion": "v1", "name": GROUP,
        "versions": [group_version()], "preferredVersion": group_version()})
}

fn group_list() -> Value {
    let mut g = api_group();
    if let Value::Object(m) = &mut g {
        m.remove("kind");
        m.remove("apiVersion");
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [g]})
}

fn resource_list() -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{GROUP}/v1"),
        "resources": [{"name": RESOURCE, "singularName": "packagemanifest", "namespaced": true,
            "kind": pm::KIND, "verbs": ["get", "list"]},
            {"name": format!("{RESOURCE}/icon"), "singularName": "", "namespaced": true,
            "kind": pm::KIND, "verbs": ["get"]}]})
}

/// `value` as a JSON response.
fn json_response(value: Value) -> Response {
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// The query parameters of a request, as Go's `URL.Query()` reads them (pairs that do not
/// decode are left out; the last of a repeated one wins).
fn params(query: Option<&str>) -> HashMap<String, String> {
    olm_goenc::url::parse_query(query.unwrap_or_default())
        .0
        .into_iter()
        .collect()
}

/// A `meta/v1` Status error.
fn status(code: StatusCode, reason: &str, message: String, name: Option<&str>) -> Response {
    let mut body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code.as_u16()});
    if let Some(name) = name {
        body["details"] = json!({"name": name, "group": GROUP, "kind": RESOURCE});
    }
    (code, json_response(body)).into_response()
}

fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            let params: Vec<&str> = t.split(';').map(str::trim).collect();
            params.contains(&"as=Table") && params.contains(&"g=meta.k8s.io")
        })
}

fn include_object(params: &HashMap<String, String>) -> IncludeObject {
    match params.get("includeObject").map(String::as_str) {
        Some("None") => IncludeObject::None,
        Some("Object") => IncludeObject::Object,
        _ => IncludeObject::Metadata,
    }
}

async fn list_all(
    State(s): State<Served>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    list(&s, None, &params(query.as_deref()), &headers)
}

async fn list_namespace(
    State(s): State<Served>,
    Path(namespace): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    list(&s, Some(&namespace), &params(query.as_deref()), &headers)
}

fn list(
    s: &Served,
    namespace: Option<&str>,
    params: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Response {
    if params.get("watch").is_some_and(|w| w == "true" || w == "1") {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("watch is not supported on resources of kind \"{RESOURCE}.{GROUP}\""),
            None,
        );
    }
    let labels =
        match olm_k8s::LabelSelector::parse(params.get("labelSelector").map_or("", String::as_str))
        {
            Ok(l) => l,
            Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", e.to_string(), None),
        };
    let name = match pm::field_selector_name(params.get("fieldSelector").map_or("", String::as_str))
    {
        Ok(n) => n,
        Err(e) => return status(StatusCode::BAD_REQUEST, "BadRequest", e.to_string(), None),
    };
    let query = pm::Query {
        namespace,
        global_namespace: &s.global_namespace,
        labels,
        name: name.as_deref(),
    };
    let all = s.manifests();
    let items = pm::visible(all.iter().flat_map(|m| m.iter()), &query);
    if wants_table(headers) {
        return json_response(pm::table(&items, now(), include_object(params))).into_response();
    }
    json_response(pm::list(items)).into_response()
}

async fn get_one(
    State(s): State<Served>,
    Path((namespace, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let params = params(query.as_deref());
    let query = s.named(&namespace, &name);
    let all = s.manifests();
    let Some(found) = pm::visible(all.iter().flat_map(|m| m.iter()), &query)
        .into_iter()
        .next()
    else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("{RESOURCE}.{GROUP} \"{name}\" not found"),
            Some(&name),
        );
    };
    if wants_table(&headers) {
        return json_response(pm::table(&[found], now(), include_object(&params))).into_response();
    }
    json_response(found).into_response()
}

/// The `icon` subresource: the package's icon as an image (upstream's `LogoStorage`). A
/// request with `If-None-Match` and a `resourceVersion` parameter gets 304, as upstream answers.
async fn get_icon(
    State(s): State<Served>,
    Path((namespace, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let params = params(query.as_deref());
    if headers.contains_key(http::header::IF_NONE_MATCH) && params.contains_key("resourceVersion") {
        return StatusCode::NOT_MODIFIED.into_response();
    }
    let query = s.named(&namespace, &name);
    let all = s.manifests();
    let Some(found) = all
        .iter()
        .flat_map(|m| m.iter())
        .find(|m| pm::matches(m, &query))
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let icon = pm::icon(found);
    let mut response = (
        [
            (http::header::CONTENT_TYPE, icon.media_type),
            (http::header::CONTENT_LENGTH, icon.data.len().to_string()),
        ],
        icon.data,
    )
        .into_response();
    if let Ok(etag) = http::HeaderValue::from_str(&icon.etag) {
        response.headers_mut().insert(http::header::ETAG, etag);
    }
    response
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

impl Served {
    /// The query for the manifest `name` as seen from `namespace`.
    fn named<'q>(&'q self, namespace: &'q str, name: &'q str) -> pm::Query<'q> {
        pm::Query {
            namespace: Some(namespace),
            global_namespace: &self.global_namespace,
            labels: olm_k8s::LabelSelector::default(),
            name: Some(name),
        }
    }

    /// Every catalog's manifests, sorted by catalog key (namespace/name) and within it by
    /// package; rebuilt for a catalog whose content or CatalogSource changed since last built.
    fn manifests(&self) -> Vec<Arc<Vec<Value>>> {
        let mut contents = self.contents.all();
        contents.sort_by(|a, b| a.0.cmp(&b.0));
        let mut built = lock(&self.built);
        built.retain(|k, _| contents.iter().any(|(c, _)| c == k));
        let mut out = Vec::new();
        for (key, content) in contents {
            let Some((namespace, name)) = key.split_once('/') else {
                continue;
            };
            let Some(source) = self
                .index
                .catalogsources
                .get(&ObjectRef::new(name).within(namespace))
            else {
                built.remove(&key);
                continue;
            };
            let rv = source.metadata.resource_version.clone().unwrap_or_default();
            if let Some(b) = built.get(&key)
                && Arc::ptr_eq(&b.content, &content)
                && b.resource_version == rv
            {
                out.push(b.manifests.clone());
                continue;
            }
            let manifests = Arc::new(build(&key, &source, &content));
            built.insert(
                key,
                Built {
                    content,
                    resource_version: rv,
                    manifests: manifests.clone(),
                },
            );
            out.push(manifests);
        }
        out
    }
}

/// The manifests of one catalog, by package name; packages without one are logged.
fn build(key: &str, source: &CatalogSource, content: &Fetched) -> Vec<Value> {
    let Ok(content) = content.as_ref() else {
        return Vec::new();
    };
    let created = source
        .metadata
        .creation_timestamp
        .as_ref()
        .and_then(|t| olm_v0::olm_operator::status::time_text(t.0));
    let labels: BTreeMap<String, String> = source.metadata.labels.clone().unwrap_or_default();
    let catalog = Catalog {
        name: source.metadata.name.as_deref().unwrap_or_default(),
        namespace: source.metadata.namespace.as_deref().unwrap_or_default(),
        display_name: source.spec.display_name.as_deref().unwrap_or_default(),
        publisher: source.spec.publisher.as_deref().unwrap_or_default(),
        labels,
        creation_timestamp: created.as_deref(),
    };
    let mut out = Vec::new();
    for p in &content.packages {
        let package = pm::Package {
            name: &p.name,
            default_channel: &p.default_channel,
            deprecation: p.deprecation.as_deref(),
            channels: &p.channels,
        };
        match pm::build(&catalog, package) {
            Ok(m) => out.push(m),
            Err(e) => {
                tracing::warn!(catalogsource = %key, package = %p.name, error = %e, "eliding package: error converting to packagemanifest");
            }
        }
    }
    out.sort_by(|a, b| {
        a["metadata"]["name"]
            .as_str()
            .cmp(&b["metadata"]["name"].as_str())
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_table_accept_header() {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::ACCEPT,
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
                .parse()
                .unwrap(),
        );
        assert!(wants_table(&h));
        h.insert(http::header::ACCEPT, "application/json".parse().unwrap());
        assert!(!wants_table(&h));
    }

    #[test]
    fn query_parameters() {
        let p = params(Some(
            "labelSelector=operatorframework.io%2Fos.windows%3Dsupported&fieldSelector=metadata.name%3Detcd&x=%zz&y=a+b",
        ));
        assert_eq!(
            p["labelSelector"],
            "operatorframework.io/os.windows=supported"
        );
        assert_eq!(p["fieldSelector"], "metadata.name=etcd");
        // As Go's URL.Query(): a pair with a bad escape is left out.
        assert!(!p.contains_key("x"));
        assert_eq!(p["y"], "a b");
        assert!(params(None).is_empty());
    }
}
