//! The global pull secret read from a real API server (`olm_testenv::ControlPlane`): loaded
//! once, then followed as it is created, changed and deleted, against a registry that requires
//! credentials.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use olm_cluster::bundles::{BundleFetchError, BundleOptions, Bundles};
use olm_image::{Client, ClientOptions, ImageRef};
use olm_testenv::ControlPlane;
use olm_testenv::registry::{Registry, RegistryOptions};

fn bundle_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bundles/argocd-operator/0.18.0")
}

fn secret(name: &str, config: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_owned(),
            ByteString(config.as_bytes().to_vec()),
        )])),
        ..Secret::default()
    }
}

/// Polls `fetch` until it has the wanted outcome, for up to 30 s (the watch delivers changes
/// asynchronously).
async fn eventually(b: &Bundles, image: &str, owner: &str, ok: bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = b.fetch(image, owner).await;
        if r.is_ok() == ok {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("fetch never became ok={ok}: {:?}", r.err());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn the_pull_secret_is_read_and_followed() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let client = plane.client();
    let dir = tempfile::tempdir().expect("tmp");
    let htpasswd = dir.path().join("htpasswd");
    let hash = bcrypt::hash("s3cret", 4).expect("bcrypt");
    std::fs::write(&htpasswd, format!("olm:{hash}\n")).expect("write");
    let registry = Registry::start_with(&RegistryOptions {
        htpasswd: Some(htpasswd),
        ..RegistryOptions::default()
    })
    .unwrap_or_else(|e| panic!("these tests need a local registry: {e}"));
    let good = format!(
        r#"{{"auths":{{"{}":{{"auth":"{}"}}}}}}"#,
        registry.addr(),
        base64::engine::general_purpose::STANDARD.encode("olm:s3cret")
    );
    let bad = format!(
        r#"{{"auths":{{"{}":{{"auth":"{}"}}}}}}"#,
        registry.addr(),
        base64::engine::general_purpose::STANDARD.encode("olm:wrong")
    );
    let pusher = Client::new(ClientOptions {
        auth: olm_image::AuthConfig::from_dockerconfigjson(good.as_bytes(), "x/y").expect("auth"),
        ..ClientOptions::default()
    });
    let image = olm_image::bundle_image(&bundle_dir()).expect("image");
    let tagged: ImageRef = format!("{}/private/argocd:v1", registry.addr())
        .parse()
        .expect("ref");
    pusher.push(&image, &tagged).await.expect("push");
    let reference = tagged.to_string();

    let cache = tempfile::tempdir().expect("tmp");
    let b = Arc::new(Bundles::new(
        Client::new(ClientOptions::default()),
        BundleOptions {
            memory_capacity: 0,
            ..BundleOptions::new(cache.path())
        },
    ));
    let secrets: kube::Api<Secret> = kube::Api::namespaced(client.clone(), "default");

    // Read once: no Secret yet means anonymous.
    b.load_pull_secret(&client, "default", "pull")
        .await
        .expect("no secret is fine");
    let e = b.fetch(&reference, "a").await.expect_err("anonymous");
    assert!(matches!(e, BundleFetchError::Registry { .. }), "{e}");
    secrets
        .create(&PostParams::default(), &secret("pull", &good))
        .await
        .expect("create");
    b.load_pull_secret(&client, "default", "pull")
        .await
        .expect("load");
    b.fetch(&reference, "a").await.expect("with the secret");

    // Followed: a wrong password, then the right one again, then deletion.
    b.set_pull_secret(None);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let watcher = {
        let (b, client) = (b.clone(), client.clone());
        tokio::spawn(async move {
            b.watch_pull_secret(client, "default", "pull", async {
                let _ = stopped.await;
            })
            .await;
        })
    };
    eventually(&b, &reference, "b", true).await;
    let mut s = secrets.get("pull").await.expect("get");
    s.data = secret("pull", &bad).data;
    secrets
        .replace("pull", &PostParams::default(), &s)
        .await
        .expect("replace");
    eventually(&b, &reference, "c", false).await;
    let mut s = secrets.get("pull").await.expect("get");
    s.data = secret("pull", &good).data;
    secrets
        .replace("pull", &PostParams::default(), &s)
        .await
        .expect("replace");
    eventually(&b, &reference, "d", true).await;
    secrets
        .delete("pull", &DeleteParams::default())
        .await
        .expect("delete");
    eventually(&b, &reference, "e", false).await;
    stop.send(()).expect("stop");
    tokio::time::timeout(Duration::from_secs(10), watcher)
        .await
        .expect("the watch ends on shutdown")
        .expect("join");
}
