//! The bundle source against a real registry (Debian's `docker-registry`, started per test) with
//! bundle images built from `shared/data` by `olm-image`: caching by digest in memory and on
//! disk, one image per owner, the cleanup finalizer, the global pull secret, and the errors an
//! extension's status shows for a missing image, a registry that is down, an image that is no
//! bundle, and a bundle that does not parse.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use olm_cluster::bundles::{BundleFetchError, BundleOptions, Bundles};
use olm_image::{Client, ClientOptions, ImageRef};
use olm_testenv::registry::{Registry, RegistryOptions};

fn bundle_dir(package: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bundles")
        .join(package);
    std::fs::read_dir(&dir)
        .expect("bundle versions")
        .map(|e| e.expect("entry").path())
        .find(|p| p.join("manifests").is_dir())
        .expect("a bundle")
}

fn registry_with(options: &RegistryOptions) -> Registry {
    Registry::start_with(options)
        .unwrap_or_else(|e| panic!("the bundle tests need a local registry: {e}"))
}

async fn push(
    client: &Client,
    registry: &Registry,
    image: &olm_image::Image,
    path: &str,
) -> String {
    let r: ImageRef = format!("{}/{path}", registry.addr()).parse().expect("ref");
    let digest = client
        .push(image, &r)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", registry.log_tail()));
    format!(
        "{}/{}@{digest}",
        registry.addr(),
        path.split(':').next().unwrap_or(path)
    )
}

fn bundles(cache: &Path) -> Bundles {
    Bundles::new(
        Client::new(ClientOptions::default()),
        BundleOptions::new(cache),
    )
}

/// The digest directories in an owner's cache.
fn cached_digests(b: &Bundles, owner: &str) -> Vec<String> {
    let dir = b.owner_dir(owner).join("sha256");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .filter(|n| !n.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn bundles_are_cached_by_digest_in_memory_and_on_disk() {
    let registry = registry_with(&RegistryOptions::default());
    let pusher = Client::new(ClientOptions::default());
    let image = olm_image::bundle_image(&bundle_dir("argocd-operator")).expect("image");
    let by_digest = push(&pusher, &registry, &image, "bundles/argocd:v1").await;
    let by_tag = format!("{}/bundles/argocd:v1", registry.addr());
    let cache = tempfile::tempdir().expect("tmp");
    let b = bundles(cache.path());

    let first = b.fetch(&by_tag, "argocd").await.expect("fetch");
    assert_eq!(first.package_name, "argocd-operator");
    assert!(first.csv_file.starts_with("manifests/"));
    assert_eq!(
        cached_digests(&b, "argocd"),
        vec![image.digest().hex().to_string()]
    );
    let again = b.fetch(&by_tag, "argocd").await.expect("again");
    assert!(
        std::sync::Arc::ptr_eq(&first, &again),
        "parsed once per digest"
    );

    // Another owner of the same digest shares the parsed bundle.
    let other = b.fetch(&by_digest, "argocd-2").await.expect("other owner");
    assert!(std::sync::Arc::ptr_eq(&first, &other));

    // With the registry gone, a digest reference is served from memory, and a fresh process
    // (empty memory) reads it from its disk cache.
    drop(registry);
    b.fetch(&by_digest, "argocd").await.expect("from memory");
    let restarted = bundles(cache.path());
    let from_disk = restarted
        .fetch(&by_digest, "argocd")
        .await
        .expect("from disk");
    assert_eq!(*from_disk, *first);
    let e = restarted
        .fetch(&by_tag, "argocd")
        .await
        .expect_err("a tag needs the registry");
    assert!(matches!(e, BundleFetchError::Registry { .. }), "{e}");
}

/// Upstream keeps one image per owner; the cleanup finalizer removes the owner's directory.
#[tokio::test]
async fn an_owner_keeps_one_image_until_forgotten() {
    let registry = registry_with(&RegistryOptions::default());
    let pusher = Client::new(ClientOptions::default());
    let v1 = olm_image::bundle_image(&bundle_dir("argocd-operator")).expect("image");
    let v2 = olm_image::bundle_image(&bundle_dir("etcd")).expect("image");
    let r1 = push(&pusher, &registry, &v1, "bundles/a:v1").await;
    let r2 = push(&pusher, &registry, &v2, "bundles/a:v2").await;
    let cache = tempfile::tempdir().expect("tmp");
    let b = bundles(cache.path());
    b.fetch(&r1, "ext").await.expect("v1");
    b.fetch(&r2, "ext").await.expect("v2");
    assert_eq!(
        cached_digests(&b, "ext"),
        vec![v2.digest().hex().to_string()]
    );
    b.forget_owner("ext").expect("forget");
    assert!(!b.owner_dir("ext").exists());
    b.forget_owner("ext").expect("forgetting twice is fine");
    assert!(matches!(
        b.forget_owner("../x"),
        Err(BundleFetchError::InvalidOwner { .. })
    ));
}

#[tokio::test]
async fn failures_say_what_is_wrong() {
    let registry = registry_with(&RegistryOptions::default());
    let pusher = Client::new(ClientOptions::default());
    let cache = tempfile::tempdir().expect("tmp");
    let b = bundles(cache.path());

    // Missing image, missing repository.
    let pushed = olm_image::bundle_image(&bundle_dir("argocd-operator")).expect("image");
    push(&pusher, &registry, &pushed, "bundles/present:v1").await;
    for missing in ["bundles/present:v9", "bundles/absent:v1"] {
        let image = format!("{}/{missing}", registry.addr());
        let e = b.fetch(&image, "x").await.expect_err("missing");
        assert!(matches!(e, BundleFetchError::NotFound { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with(&format!("image {image} not found: ")),
            "{e}"
        );
    }

    // A catalog image is no bundle.
    let fbc = tempfile::tempdir().expect("tmp");
    std::fs::write(
        fbc.path().join("catalog.json"),
        r#"{"schema":"olm.package","name":"foo"}"#,
    )
    .expect("write");
    let catalog = olm_image::catalog_image(fbc.path()).expect("image");
    let r = push(&pusher, &registry, &catalog, "catalogs/c:v1").await;
    let e = b.fetch(&r, "x").await.expect_err("not a bundle");
    assert_eq!(
        e.to_string(),
        format!("image {r} is not a registry+v1 bundle: it has no manifests directory")
    );

    // A bundle whose CSV is not a ClusterServiceVersion's shape.
    let broken = tempfile::tempdir().expect("tmp");
    let src = bundle_dir("argocd-operator");
    for sub in ["manifests", "metadata"] {
        std::fs::create_dir_all(broken.path().join(sub)).expect("mkdir");
        for f in std::fs::read_dir(src.join(sub)).expect("read") {
            let f = f.expect("entry").path();
            let text = std::fs::read_to_string(&f).expect("read");
            let text = if text.contains("kind: ClusterServiceVersion") {
                "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: broken.v1\nspec: [1, 2]\n".to_string()
            } else {
                text
            };
            std::fs::write(
                broken.path().join(sub).join(f.file_name().expect("name")),
                text,
            )
            .expect("write");
        }
    }
    let image = olm_image::bundle_image(broken.path()).expect("image");
    let r = push(&pusher, &registry, &image, "bundles/broken:v1").await;
    let e = b.fetch(&r, "x").await.expect_err("invalid CSV");
    assert!(
        matches!(
            &e,
            BundleFetchError::InvalidBundle {
                source: olm_bundle::BundleError::InvalidCsv { .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with(&format!("invalid bundle {r}: manifests/")),
        "{e}"
    );

    // An invalid reference.
    let e = b.fetch("Not A Reference", "x").await.expect_err("invalid");
    assert!(
        matches!(e, BundleFetchError::InvalidReference { .. }),
        "{e}"
    );
}

/// A registry that is not there fails fast, and one that never answers fails at the timeout.
#[tokio::test]
async fn unreachable_registries_fail_in_bounded_time() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let cache = tempfile::tempdir().expect("tmp");
    let b = bundles(cache.path());
    let image = format!("{closed}/bundles/x:v1");
    let start = Instant::now();
    let e = b.fetch(&image, "x").await.expect_err("down");
    assert!(matches!(e, BundleFetchError::Registry { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("pulling image {image}: ")),
        "{e}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));

    // Accepts connections, never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = silent.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    let b = Bundles::new(
        Client::new(ClientOptions::default()),
        BundleOptions {
            timeout: Duration::from_millis(500),
            ..BundleOptions::new(cache.path())
        },
    );
    let image = format!("{addr}/bundles/x:v1");
    let e = b.fetch(&image, "x").await.expect_err("hangs");
    assert_eq!(
        e.to_string(),
        format!("pulling image {image}: timed out after 500ms")
    );
}

/// The cluster's global pull secret (a `kubernetes.io/dockerconfigjson` Secret) opens a private
/// registry the image client has no credentials for.
#[tokio::test]
async fn the_global_pull_secret_is_used() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().expect("tmp");
    let htpasswd = dir.path().join("htpasswd");
    let hash = bcrypt::hash("s3cret", 4).expect("bcrypt");
    std::fs::write(&htpasswd, format!("olm:{hash}\n")).expect("write");
    let registry = registry_with(&RegistryOptions {
        htpasswd: Some(htpasswd),
        ..RegistryOptions::default()
    });
    let auth = base64::engine::general_purpose::STANDARD.encode("olm:s3cret");
    let config = format!(
        r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#,
        registry.addr()
    );
    let secret =
        olm_image::AuthConfig::from_dockerconfigjson(config.as_bytes(), "olmv1-system/pull")
            .expect("auth");
    let pusher = Client::new(ClientOptions {
        auth: secret.clone(),
        ..ClientOptions::default()
    });
    let image = olm_image::bundle_image(&bundle_dir("argocd-operator")).expect("image");
    push(&pusher, &registry, &image, "private/argocd:v1").await;
    let reference = format!("{}/private/argocd:v1", registry.addr());

    let cache = tempfile::tempdir().expect("tmp");
    let b = bundles(cache.path());
    let e = b.fetch(&reference, "x").await.expect_err("anonymous");
    assert!(matches!(e, BundleFetchError::Registry { .. }), "{e}");
    b.set_pull_secret(Some(&secret));
    b.fetch(&reference, "x")
        .await
        .expect("with the pull secret");
    b.set_pull_secret(None);
    let e = b.fetch(&reference, "y").await.expect_err("secret removed");
    assert!(matches!(e, BundleFetchError::Registry { .. }), "{e}");
}

/// The bundle source is shared by reconciles running on a multi-threaded runtime.
#[test]
fn the_source_and_its_futures_are_send() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let cache = tempfile::tempdir().expect("tmp");
    let b = bundles(cache.path());
    send_sync(&b);
    send(&b.fetch("127.0.0.1:9/x:v1", "x"));
}
