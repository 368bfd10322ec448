//! The catalog server end to end: a real control plane and registry from `olm-testenv`, catalog
//! images pushed with `olm-image`, ClusterCatalogs created through the API server, content read
//! over HTTP. Each test starts its own control plane and registry.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`) and Debian's
//! `docker-registry`; without them the tests fail naming what is missing.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use http_body_util::BodyExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use olm_api::ClusterCatalog;
use olm_image::{ImageRef, catalog_image};
use olm_testenv::ControlPlane;
use olm_testenv::registry::Registry;
use serde_json::json;
use tokio::sync::oneshot;

const EXTERNAL: &str = "catalogd-service.olmv1-system.svc";
const TIMEOUT: Duration = Duration::from_secs(120);

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn community() -> PathBuf {
    data_dir().join("catalogs/community-v4.21")
}

fn canonical_jsonl(dir: &Path) -> Vec<u8> {
    let cat = olm_catalog::load_path(dir).expect("load catalog");
    let mut out = Vec::new();
    olm_catalog::write::write_jsonl(&cat, &mut out).expect("jsonl");
    out
}

async fn start_plane() -> ControlPlane {
    match ControlPlane::start().await {
        Ok(p) => p,
        Err(e) => panic!("starting the local control plane failed: {e}"),
    }
}

fn start_registry() -> Registry {
    match Registry::start() {
        Ok(r) => r,
        Err(e) => panic!("these tests need a local registry: {e}"),
    }
}

async fn install_crds(client: &Client) -> anyhow::Result<()> {
    let crd: CustomResourceDefinition =
        serde_json::from_value(olm_api::cluster_catalog_crd().value)?;
    Ok(olm_testenv::install_crds(client, &[crd], TIMEOUT).await?)
}

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(v) = check().await? {
            return Ok(v);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out after {TIMEOUT:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A catalog server running in this process.
struct Catalogd {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), olm_catalogd::run::RunError>>,
}

async fn start_catalogd(client: &Client, cache: &Path) -> Catalogd {
    start_catalogd_with(client, cache, |_| {}).await
}

async fn start_catalogd_with(
    client: &Client,
    cache: &Path,
    customize: impl FnOnce(&mut olm_catalogd::Options),
) -> Catalogd {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = oneshot::channel::<()>();
    let mut options = olm_catalogd::Options {
        cache_dir: cache.to_path_buf(),
        external_address: Some(EXTERNAL.to_string()),
        retry_after: Duration::from_secs(1),
        ..olm_catalogd::Options::default()
    };
    customize(&mut options);
    let task = tokio::spawn(olm_catalogd::run(
        options,
        client.clone(),
        listener,
        None,
        async move {
            let _ = rx.await;
        },
    ));
    Catalogd {
        addr,
        stop: Some(tx),
        task,
    }
}

impl Catalogd {
    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match tokio::time::timeout(Duration::from_secs(30), &mut self.task).await {
            Ok(Ok(Ok(()))) => {}
            other => panic!("catalogd did not stop cleanly: {other:?}"),
        }
    }

    async fn get(&self, path: &str) -> anyhow::Result<(u16, Vec<u8>)> {
        http_get(self.addr, path).await
    }
}

async fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, Vec<u8>)> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = http::Request::get(path)
        .header("host", addr.to_string())
        .body(http_body_util::Empty::<bytes_alias::Bytes>::new())?;
    let resp = sender.send_request(req).await?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await?.to_bytes().to_vec();
    Ok((status, body))
}

mod bytes_alias {
    pub use axum::body::Bytes;
}

async fn push(registry: &Registry, dir: &Path, reference: &str) -> anyhow::Result<String> {
    let image = catalog_image(dir)?;
    push_image(registry, &image, reference).await
}

async fn push_image(
    registry: &Registry,
    image: &olm_image::Image,
    reference: &str,
) -> anyhow::Result<String> {
    let r: ImageRef = format!("{}/{reference}", registry.addr()).parse()?;
    let client = olm_image::Client::new(olm_image::ClientOptions::default());
    let digest = client
        .push(image, &r)
        .await
        .with_context(|| registry.log_tail().to_string())?;
    Ok(digest.to_string())
}

fn catalog(name: &str, image: serde_json::Value) -> anyhow::Result<ClusterCatalog> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        "metadata": {"name": name},
        "spec": {"source": {"type": "Image", "image": image}},
    }))?)
}

fn cond<'a>(
    cat: &'a ClusterCatalog,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    cat.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// Waits until the named condition has this status and reason, and returns the object.
async fn wait_condition(
    api: &Api<ClusterCatalog>,
    name: &str,
    type_: &str,
    status: &str,
    reason: &str,
) -> anyhow::Result<ClusterCatalog> {
    let last = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let result = eventually(&format!("{name}: {type_}={status}/{reason}"), || {
        let api = api.clone();
        let last = last.clone();
        async move {
            let cat = api.get(name).await?;
            *last.lock().expect("lock") = format!("{:?}", cat.status);
            Ok(cond(&cat, type_)
                .is_some_and(|c| c.status == status && c.reason == reason)
                .then_some(cat))
        }
    })
    .await;
    result.with_context(|| format!("last status: {}", last.lock().expect("lock")))
}

/// Which lines of a catalog a query should return.
type Pred<'a> = Box<dyn Fn(&serde_json::Value) -> bool + 'a>;

/// A small valid FBC, different from the community catalog.
fn small_fbc(dir: &Path, package: &str) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(
        dir.join("catalog.json"),
        format!(
            r#"{{"schema":"olm.package","name":"{package}","defaultChannel":"stable"}}
{{"schema":"olm.channel","package":"{package}","name":"stable","entries":[{{"name":"{package}.v0.1.0"}}]}}
{{"schema":"olm.bundle","package":"{package}","name":"{package}.v0.1.0","image":"example.com/{package}:v0.1.0","properties":[{{"type":"olm.package","value":{{"packageName":"{package}","version":"0.1.0"}}}}]}}
"#
        ),
    )
    .expect("write");
}

#[tokio::test]
async fn community_catalog_is_served_byte_for_byte_and_survives_a_restart() {
    let plane = start_plane().await;
    if let Err(e) = community_body(&plane).await {
        panic!("{e:#}");
    }
}

async fn community_body(plane: &ControlPlane) -> anyhow::Result<()> {
    let client = plane.client();
    install_crds(&client).await?;
    let mut registry = Some(start_registry());
    let reg = registry.as_ref().expect("registry");
    let digest = push(reg, &community(), "catalogs/community:v4.21").await?;
    let repo = format!("{}/catalogs/community", reg.addr());
    let cache = tempfile::tempdir()?;
    let catalogd = start_catalogd(&client, cache.path()).await;

    let api: Api<ClusterCatalog> = Api::all(client.clone());
    api.create(
        &PostParams::default(),
        &catalog("community", json!({"ref": format!("{repo}:v4.21")}))?,
    )
    .await?;
    let served = wait_condition(&api, "community", "Serving", "True", "Available").await?;
    let progressing = cond(&served, "Progressing").context("Progressing")?;
    assert_eq!(progressing.status, "True");
    assert_eq!(progressing.reason, "Succeeded");
    assert_eq!(
        progressing.message,
        "Successfully unpacked and stored content from resolved source"
    );
    assert_eq!(
        cond(&served, "Serving").map(|c| c.message.as_str()),
        Some("Serving desired content from resolved source")
    );
    let status = served.status.clone().context("status")?;
    assert_eq!(
        status
            .resolved_source
            .as_ref()
            .map(|s| s.image.ref_.clone()),
        Some(format!("{repo}@{digest}"))
    );
    assert_eq!(
        status.urls.as_ref().map(|u| u.base.clone()),
        Some(format!("http://{EXTERNAL}/catalogs/community"))
    );
    assert!(status.last_unpacked.is_some());
    assert_eq!(
        served
            .labels()
            .get(olm_api::METADATA_NAME_LABEL)
            .map(String::as_str),
        Some("community")
    );
    assert!(
        served
            .finalizers()
            .iter()
            .any(|f| f == olm_api::CATALOG_CACHE_FINALIZER)
    );

    let want = canonical_jsonl(&community());
    let (code, body) = catalogd.get("/catalogs/community/api/v1/all").await?;
    assert_eq!(code, 200);
    assert!(
        body == want,
        "GET all differs from the canonical JSONL ({} vs {} bytes)",
        body.len(),
        want.len()
    );

    // Metas queries return exactly the matching lines, in file order.
    let text = String::from_utf8(want.clone())?;
    let lines: Vec<(serde_json::Value, &str)> = text
        .split_inclusive('\n')
        .map(|l| (serde_json::from_str(l).expect("json"), l))
        .collect();
    let field = |v: &serde_json::Value, k: &str| {
        v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string()
    };
    let package = lines
        .iter()
        .find(|(v, _)| field(v, "schema") == "olm.bundle")
        .map(|(v, _)| field(v, "package"))
        .context("a bundle")?;
    let bundle = lines
        .iter()
        .find(|(v, _)| field(v, "schema") == "olm.bundle")
        .map(|(v, _)| field(v, "name"))
        .context("a bundle")?;
    let queries: Vec<(String, Pred<'_>)> = vec![
        (
            "schema=olm.package".into(),
            Box::new(|v| field(v, "schema") == "olm.package"),
        ),
        (format!("package={package}"), {
            let p = package.clone();
            Box::new(move |v| field(v, "package") == p)
        }),
        (format!("schema=olm.bundle&package={package}"), {
            let p = package.clone();
            Box::new(move |v| field(v, "package") == p && field(v, "schema") == "olm.bundle")
        }),
        (format!("name={bundle}"), {
            let b = bundle.clone();
            Box::new(move |v| field(v, "name") == b)
        }),
    ];
    for (query, pred) in &queries {
        let expected: String = lines
            .iter()
            .filter(|(v, _)| pred(v))
            .map(|(_, l)| *l)
            .collect();
        assert!(!expected.is_empty(), "{query} selects nothing");
        let (code, body) = catalogd
            .get(&format!("/catalogs/community/api/v1/metas?{query}"))
            .await?;
        assert_eq!(code, 200, "{query}");
        assert!(body == expected.as_bytes(), "metas?{query} differs");
    }

    // Restart with the registry gone: content is served at once, and status does not change,
    // which it would if anything were pulled (Progressing would turn Retrying).
    catalogd.stop().await;
    drop(registry.take());
    let before = api.get("community").await?;
    let catalogd = start_catalogd(&client, cache.path()).await;
    let (code, body) = catalogd.get("/catalogs/community/api/v1/all").await?;
    assert_eq!(code, 200, "served right after the restart");
    assert!(body == want, "same content after the restart");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = api.get("community").await?;
    assert_eq!(
        before.status, after.status,
        "a restart must not touch status"
    );

    // Deletion removes the content and the finalizer lets the object go.
    api.delete("community", &DeleteParams::default()).await?;
    eventually("the catalog to be deleted", || {
        let api = api.clone();
        async move { Ok(api.get_opt("community").await?.is_none().then_some(())) }
    })
    .await?;
    let (code, _) = catalogd.get("/catalogs/community/api/v1/all").await?;
    assert_eq!(code, 404);
    assert!(!cache.path().join("catalogs/community").exists());
    catalogd.stop().await;
    Ok(())
}

#[tokio::test]
async fn failures_keep_old_content_and_report_upstream_conditions() {
    let plane = start_plane().await;
    if let Err(e) = failures_body(&plane).await {
        panic!("{e:#}");
    }
}

async fn failures_body(plane: &ControlPlane) -> anyhow::Result<()> {
    let client = plane.client();
    install_crds(&client).await?;
    let registry = start_registry();
    let work = tempfile::tempdir()?;
    let good = work.path().join("good");
    small_fbc(&good, "good");
    push(&registry, &good, "catalogs/good:v1").await?;

    // An image without the configs label.
    let layer = olm_image::assemble::layer_from_dirs(&[(good.clone(), "configs".to_string())])?;
    let unlabelled = olm_image::assemble::image_from_layers(Default::default(), vec![layer]);
    let unlabelled_digest = push_image(&registry, &unlabelled, "catalogs/nolabel:v1").await?;

    // An image whose FBC does not parse (served content must at least read as FBC; like
    // upstream, the model checks of `opm validate` are not applied).
    let invalid = work.path().join("invalid");
    std::fs::create_dir_all(&invalid)?;
    std::fs::write(
        invalid.join("catalog.json"),
        r#"{"schema":"olm.channel","package":"ghost","name":"stable","entries":[{"name":"#,
    )?;
    push(&registry, &invalid, "catalogs/invalid:v1").await?;

    let cache = tempfile::tempdir()?;
    let catalogd = start_catalogd(&client, cache.path()).await;
    let api: Api<ClusterCatalog> = Api::all(client.clone());
    let addr = registry.addr();

    // Missing tag: retrying, and nothing served.
    api.create(
        &PostParams::default(),
        &catalog(
            "missing",
            json!({"ref": format!("{addr}/catalogs/nothing:v1")}),
        )?,
    )
    .await?;
    let c = wait_condition(&api, "missing", "Progressing", "True", "Retrying").await?;
    let msg = &cond(&c, "Progressing").context("Progressing")?.message;
    assert!(msg.starts_with("source catalog content: "), "{msg}");
    assert!(cond(&c, "Serving").is_none(), "nothing was ever served");

    // No label, by tag: retrying (the tag may move to a fixed image); by digest: blocked.
    api.create(
        &PostParams::default(),
        &catalog(
            "nolabel-tag",
            json!({"ref": format!("{addr}/catalogs/nolabel:v1")}),
        )?,
    )
    .await?;
    let c = wait_condition(&api, "nolabel-tag", "Progressing", "True", "Retrying").await?;
    assert_eq!(
        cond(&c, "Progressing").map(|c| c.message.as_str()),
        Some(
            "source catalog content: catalog image is missing the required label \"operators.operatorframework.io.index.configs.v1\""
        )
    );
    api.create(
        &PostParams::default(),
        &catalog(
            "nolabel-digest",
            json!({"ref": format!("{addr}/catalogs/nolabel@{unlabelled_digest}")}),
        )?,
    )
    .await?;
    let c = wait_condition(&api, "nolabel-digest", "Progressing", "False", "Blocked").await?;
    assert_eq!(
        cond(&c, "Progressing").map(|c| c.message.as_str()),
        Some(
            "source catalog content: catalog image is missing the required label \"operators.operatorframework.io.index.configs.v1\""
        )
    );

    // Invalid FBC.
    api.create(
        &PostParams::default(),
        &catalog(
            "invalid",
            json!({"ref": format!("{addr}/catalogs/invalid:v1")}),
        )?,
    )
    .await?;
    let c = wait_condition(&api, "invalid", "Progressing", "True", "Retrying").await?;
    let msg = cond(&c, "Progressing")
        .context("Progressing")?
        .message
        .clone();
    assert!(msg.starts_with("error storing fbc: "), "{msg}");
    // The file is named as it is inside the image, never by the host's unpack path.
    assert!(msg.contains("configs/catalog.json"), "{msg}");
    assert!(!msg.contains(&*cache.path().to_string_lossy()), "{msg}");
    // Retries back off and, their message being the same, write nothing: over 3 s the
    // object does not change (a message with a per-attempt path was rewritten ~50 times a
    // second before).
    let before = api.get("invalid").await?;
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let after = api.get("invalid").await?;
    assert_eq!(
        before.metadata.resource_version, after.metadata.resource_version,
        "status rewritten while retrying: {:?}",
        after.status
    );

    // A good catalog, then its spec points at a broken image: the old content stays served.
    api.create(
        &PostParams::default(),
        &catalog("good", json!({"ref": format!("{addr}/catalogs/good:v1")}))?,
    )
    .await?;
    wait_condition(&api, "good", "Serving", "True", "Available").await?;
    let (code, body) = catalogd.get("/catalogs/good/api/v1/all").await?;
    assert_eq!((code, body.clone()), (200, canonical_jsonl(&good)));
    api.patch(
        "good",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"source": {"image": {"ref": format!("{addr}/catalogs/invalid:v1")}}}}),
        ),
    )
    .await?;
    let c = wait_condition(&api, "good", "Progressing", "True", "Retrying").await?;
    assert_eq!(cond(&c, "Serving").map(|c| c.status.as_str()), Some("True"));
    let (code, still) = catalogd.get("/catalogs/good/api/v1/all").await?;
    assert_eq!((code, still), (200, body));

    // Unavailable: content dropped, conditions as upstream, finalizer removed.
    api.patch(
        "good",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"availabilityMode": "Unavailable"}})),
    )
    .await?;
    let c = wait_condition(&api, "good", "Serving", "False", "UserSpecifiedUnavailable").await?;
    for type_ in ["Serving", "Progressing"] {
        assert_eq!(
            cond(&c, type_).map(|c| c.message.as_str()),
            Some("Catalog availability mode is set to Unavailable")
        );
    }
    assert_eq!(
        cond(&c, "Progressing").map(|c| c.reason.as_str()),
        Some("Succeeded")
    );
    let status = c.status.clone().context("status")?;
    assert!(
        status.resolved_source.is_none() && status.urls.is_none() && status.last_unpacked.is_none()
    );
    eventually("the finalizer to go", || {
        let api = api.clone();
        async move {
            let c = api.get("good").await?;
            Ok((!c
                .finalizers()
                .iter()
                .any(|f| f == olm_api::CATALOG_CACHE_FINALIZER))
            .then_some(()))
        }
    })
    .await?;
    let (code, body) = catalogd.get("/catalogs/good/api/v1/all").await?;
    assert_eq!(
        (code, String::from_utf8_lossy(&body).into_owned()),
        (404, "404 Not Found\n".to_string())
    );

    // Registry down: a served catalog keeps being served while polls fail.
    api.create(
        &PostParams::default(),
        &catalog(
            "polled",
            json!({"ref": format!("{addr}/catalogs/good:v1"), "pollIntervalMinutes": 1}),
        )?,
    )
    .await?;
    wait_condition(&api, "polled", "Serving", "True", "Available").await?;
    drop(registry);
    // Force a reconcile that must contact the registry: a new generation.
    api.patch(
        "polled",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"priority": 5}})),
    )
    .await?;
    let c = wait_condition(&api, "polled", "Progressing", "True", "Retrying").await?;
    assert_eq!(
        cond(&c, "Serving").map(|c| c.reason.as_str()),
        Some("Available")
    );
    let (code, _) = catalogd.get("/catalogs/polled/api/v1/all").await?;
    assert_eq!(code, 200);
    catalogd.stop().await;
    Ok(())
}

#[tokio::test]
async fn polling_picks_up_a_moved_tag_and_no_polling_does_not() {
    let plane = start_plane().await;
    if let Err(e) = polling_body(&plane).await {
        panic!("{e:#}");
    }
}

async fn polling_body(plane: &ControlPlane) -> anyhow::Result<()> {
    let client = plane.client();
    install_crds(&client).await?;
    let registry = start_registry();
    let work = tempfile::tempdir()?;
    let (v1, v2) = (work.path().join("v1"), work.path().join("v2"));
    small_fbc(&v1, "first");
    small_fbc(&v2, "second");
    let d1 = push(&registry, &v1, "catalogs/moving:latest").await?;
    let cache = tempfile::tempdir()?;
    let catalogd = start_catalogd(&client, cache.path()).await;
    let api: Api<ClusterCatalog> = Api::all(client.clone());
    let reference = format!("{}/catalogs/moving:latest", registry.addr());
    api.create(
        &PostParams::default(),
        &catalog(
            "polled",
            json!({"ref": reference, "pollIntervalMinutes": 1}),
        )?,
    )
    .await?;
    api.create(
        &PostParams::default(),
        &catalog("static", json!({"ref": reference}))?,
    )
    .await?;
    for name in ["polled", "static"] {
        let c = wait_condition(&api, name, "Serving", "True", "Available").await?;
        let resolved = c
            .status
            .and_then(|s| s.resolved_source)
            .map(|r| r.image.ref_);
        assert!(
            resolved.is_some_and(|r| r.ends_with(&d1)),
            "{name} serves the first digest"
        );
    }
    let d2 = push(&registry, &v2, "catalogs/moving:latest").await?;
    assert_ne!(d1, d2);
    let polled = eventually("the polled catalog to serve the new digest", || {
        let api = api.clone();
        let d2 = d2.clone();
        async move {
            let c = api.get("polled").await?;
            let resolved = c
                .status
                .as_ref()
                .and_then(|s| s.resolved_source.as_ref())
                .map(|r| r.image.ref_.clone());
            Ok(resolved.is_some_and(|r| r.ends_with(&d2)).then_some(c))
        }
    })
    .await?;
    assert_eq!(
        cond(&polled, "Serving").map(|c| c.status.as_str()),
        Some("True")
    );
    let (_, body) = catalogd.get("/catalogs/polled/api/v1/all").await?;
    assert_eq!(body, canonical_jsonl(&v2));
    let c = api.get("static").await?;
    let resolved = c
        .status
        .and_then(|s| s.resolved_source)
        .map(|r| r.image.ref_);
    assert!(
        resolved.is_some_and(|r| r.ends_with(&d1)),
        "without polling the digest stays"
    );
    let (_, body) = catalogd.get("/catalogs/static/api/v1/all").await?;
    assert_eq!(body, canonical_jsonl(&v1));
    catalogd.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_webhook_labels_catalogs_at_admission() {
    let plane = start_plane().await;
    if let Err(e) = webhook_body(&plane).await {
        panic!("{e:#}");
    }
}

async fn webhook_body(plane: &ControlPlane) -> anyhow::Result<()> {
    use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
    let client = plane.client();
    install_crds(&client).await?;
    let dir = tempfile::tempdir()?;
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])?;
    let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert_path, cert.cert.pem())?;
    std::fs::write(&key_path, cert.signing_key.serialize_pem())?;
    let webhook_addr = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let catalogd = start_catalogd_with(&client, &dir.path().join("cache"), |o| {
        o.tls = Some(olm_catalogd::Tls {
            cert: cert_path.clone(),
            key: key_path.clone(),
        });
        o.webhook_addr = Some(webhook_addr);
    })
    .await;

    let config: MutatingWebhookConfiguration =
        serde_json::from_value(olm_catalogd::webhook::configuration(
            &olm_catalogd::webhook::ClientConfig::Url(format!("https://{webhook_addr}")),
            cert.cert.pem().as_bytes(),
        ))?;
    let configs: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    configs.create(&PostParams::default(), &config).await?;

    // The API server picks new webhook configurations up asynchronously: create catalogs until
    // one comes back labelled by admission (the create response is the admitted object, before
    // any controller could touch it).
    let api: Api<ClusterCatalog> = Api::all(client.clone());
    let mut n = 0;
    let labelled = eventually("a catalog labelled at admission", || {
        n += 1;
        let api = api.clone();
        let name = format!("probe-{n}");
        async move {
            let created = api
                .create(
                    &PostParams::default(),
                    &catalog(&name, json!({"ref": "quay.io/example/catalog:latest"}))?,
                )
                .await?;
            Ok(created
                .labels()
                .get(olm_api::METADATA_NAME_LABEL)
                .is_some_and(|v| *v == name)
                .then_some(created))
        }
    })
    .await?;
    let name = labelled.name_any();

    // Removing or changing the label on update puts it back.
    let updated = api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {olm_api::METADATA_NAME_LABEL: "wrong", "team": "a"}}})),
        )
        .await?;
    assert_eq!(
        updated.labels().get(olm_api::METADATA_NAME_LABEL),
        Some(&name),
        "the webhook corrects the label"
    );
    assert_eq!(updated.labels().get("team").map(String::as_str), Some("a"));
    catalogd.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_browser_shows_served_catalogs_and_installed_extensions() {
    let plane = start_plane().await;
    if let Err(e) = browser_body(&plane).await {
        panic!("{e:#}");
    }
}

/// The catalog browser on a cluster: the catalogs page shows what the ClusterCatalog says
/// (priority, serving state), and the cluster page lists ClusterExtensions with the upgrade the
/// resolver would pick from the served content.
async fn browser_body(plane: &ControlPlane) -> anyhow::Result<()> {
    let client = plane.client();
    install_crds(&client).await?;
    let crd: CustomResourceDefinition =
        serde_json::from_value(olm_api::cluster_extension_crd().value)?;
    olm_testenv::install_crds(&client, &[crd], TIMEOUT).await?;
    let registry = start_registry();
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("catalog.json"),
        r#"{"schema":"olm.package","name":"demo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"demo","name":"stable","entries":[{"name":"demo.v0.1.0"},{"name":"demo.v0.2.0","replaces":"demo.v0.1.0"}]}
{"schema":"olm.bundle","package":"demo","name":"demo.v0.1.0","image":"example.com/demo:v0.1.0","properties":[{"type":"olm.package","value":{"packageName":"demo","version":"0.1.0"}}]}
{"schema":"olm.bundle","package":"demo","name":"demo.v0.2.0","image":"example.com/demo:v0.2.0","properties":[{"type":"olm.package","value":{"packageName":"demo","version":"0.2.0"}}]}
"#,
    )?;
    push(&registry, dir.path(), "catalogs/demo:v1").await?;
    let cache = tempfile::tempdir()?;
    let catalogd = start_catalogd_with(&client, cache.path(), |o| o.browse_cluster = true).await;
    let catalogs: Api<ClusterCatalog> = Api::all(client.clone());
    let mut cat = catalog(
        "demo-catalog",
        json!({"ref": format!("{}/catalogs/demo:v1", registry.addr())}),
    )?;
    cat.spec.priority = 7;
    catalogs.create(&PostParams::default(), &cat).await?;
    wait_condition(&catalogs, "demo-catalog", "Serving", "True", "Available").await?;

    let (code, body) = catalogd.get("/browse/").await?;
    let page = String::from_utf8(body)?;
    assert_eq!(code, 200, "{page}");
    assert!(page.contains(">demo-catalog</a></td><td>7</td>"), "{page}");
    assert!(page.contains("<td>Serving</td>"), "{page}");

    let extensions: Api<olm_api::ClusterExtension> = Api::all(client.clone());
    let ext: olm_api::ClusterExtension = serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": "demo"},
        "spec": {"namespace": "demo", "serviceAccount": {"name": "installer"},
            "source": {"sourceType": "Catalog", "catalog": {"packageName": "demo"}}},
    }))?;
    extensions.create(&PostParams::default(), &ext).await?;
    // What the controller would write once v0.1.0 is installed.
    extensions
        .patch_status(
            "demo",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "conditions": [{"type": "Installed", "status": "True", "reason": "Succeeded",
                    "message": "Installed bundle demo.v0.1.0 successfully", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "install": {"bundle": {"name": "demo.v0.1.0", "version": "0.1.0"}}}})),
        )
        .await?;
    // Until the watch cache has the status, the extension shows as not installed.
    let page = eventually("the cluster page shows the installed bundle", || async {
        let (code, body) = catalogd.get("/browse/cluster").await?;
        let page = String::from_utf8(body)?;
        Ok((code == 200 && page.contains("demo.v0.1.0</a> (0.1.0)")).then_some(page))
    })
    .await?;
    assert!(page.contains("data-extension=\"demo\""), "{page}");
    assert!(
        page.contains("href=\"/browse/catalogs/demo-catalog/packages/demo/bundles/demo.v0.1.0\">demo.v0.1.0</a> (0.1.0)"),
        "{page}"
    );
    assert!(
        page.contains("href=\"/browse/catalogs/demo-catalog/packages/demo/bundles/demo.v0.2.0\">demo.v0.2.0</a> (0.2.0) from demo-catalog"),
        "{page}"
    );
    assert!(page.contains("<strong>Installed</strong>=True"), "{page}");

    // The same page in chromium, for the docs' screenshot.
    let url = format!("http://{}/browse/cluster", catalogd.addr);
    let shots = std::env::var_os("OLM_SCREENSHOTS").map_or_else(
        || PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser"),
        PathBuf::from,
    );
    let upgrade = tokio::task::spawn_blocking(move || -> anyhow::Result<serde_json::Value> {
        let mut b = olm_testenv::browser::Browser::start(1400, 500)?;
        b.goto(&url)?;
        std::fs::create_dir_all(&shots)?;
        b.screenshot(&shots.join("cluster.png"))?;
        Ok(b.eval(
            "return document.querySelector('a.upgrade').textContent",
            &[],
        )?)
    })
    .await??;
    assert_eq!(upgrade, json!("demo.v0.2.0"));
    catalogd.stop().await;

    // A catalog server allowed ClusterCatalogs but not ClusterExtensions still serves the
    // catalogs page from the controller's cache, and the cluster page says why it is empty.
    let role: k8s_openapi::api::rbac::v1::ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "catalogs-only"},
        "rules": [{"apiGroups": ["olm.operatorframework.io"],
            "resources": ["clustercatalogs", "clustercatalogs/status", "clustercatalogs/finalizers"],
            "verbs": ["*"]}],
    }))?;
    Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &role)
        .await?;
    let binding: k8s_openapi::api::rbac::v1::ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "catalogs-only"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "catalogs-only"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "catalogs-only"}],
    }))?;
    Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await?;
    let mut config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(plane.kubeconfig_path())?,
        &Default::default(),
    )
    .await?;
    config.auth_info.impersonate = Some("catalogs-only".into());
    let restricted = Client::try_from(config)?;
    let cache = tempfile::tempdir()?;
    let catalogd =
        start_catalogd_with(&restricted, cache.path(), |o| o.browse_cluster = true).await;
    let page = eventually(
        "the cluster page says the extensions cannot be watched",
        || async {
            let (code, body) = catalogd.get("/browse/cluster").await?;
            let page = String::from_utf8(body)?;
            Ok((code == 200 && page.contains("cannot watch ClusterExtensions:")).then_some(page))
        },
    )
    .await?;
    assert!(page.contains("forbidden"), "{page}");
    assert!(!page.contains("cannot watch ClusterCatalogs"), "{page}");
    let page = eventually("the catalogs page shows the ClusterCatalog", || async {
        let (code, body) = catalogd.get("/browse/").await?;
        let page = String::from_utf8(body)?;
        Ok((code == 200 && page.contains(">demo-catalog</a></td><td>7</td>")).then_some(page))
    })
    .await?;
    assert!(page.contains("<td>Serving</td>"), "{page}");
    catalogd.stop().await;

    // By default the cluster page is off: the unauthenticated catalog port tells nobody what
    // is installed, and the catalogs page does not link to it.
    let cache = tempfile::tempdir()?;
    let catalogd = start_catalogd(&client, cache.path()).await;
    let page = eventually("the catalogs page without the cluster page", || async {
        let (code, body) = catalogd.get("/browse/").await?;
        let page = String::from_utf8(body)?;
        Ok((code == 200 && page.contains(">demo-catalog</a></td><td>7</td>")).then_some(page))
    })
    .await?;
    assert!(!page.contains("/browse/cluster"), "{page}");
    let (code, body) = catalogd.get("/browse/cluster").await?;
    let page = String::from_utf8(body)?;
    assert_eq!(code, 404, "{page}");
    assert!(page.contains("cluster page off"), "{page}");
    assert!(!page.contains("demo.v0.1.0"), "{page}");
    catalogd.stop().await;
    Ok(())
}
