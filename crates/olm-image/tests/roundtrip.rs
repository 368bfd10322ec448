//! Image round trips against a real registry (Debian's `docker-registry`, started per test).
//!
//! These tests fail, not skip, when the registry binary is missing: CI must install the apt
//! package `docker-registry`, and a silently skipped round trip proves nothing.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use olm_image::{
    CATALOG_CONFIGS_LABEL, Client, ClientOptions, Expect, Filter, ImageCache, ImageError, ImageRef,
    Protocol, bundle_image, catalog_image,
};
use olm_testenv::registry::{Registry, RegistryOptions};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn registry() -> Registry {
    registry_with(&RegistryOptions::default())
}

fn registry_with(options: &RegistryOptions) -> Registry {
    match Registry::start_with(options) {
        Ok(r) => r,
        Err(e) => panic!("the image round-trip tests need a local registry: {e}"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn client() -> Client {
    Client::new(ClientOptions::default())
}

fn reference(registry: &Registry, path: &str) -> ImageRef {
    format!("{}/{path}", registry.addr())
        .parse()
        .expect("reference")
}

/// Every file (relative path → bytes) and directory under `root`; symlinks are read as links.
fn tree(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
        for entry in fs::read_dir(dir).expect("read_dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            let rel = path.strip_prefix(root).expect("prefix").to_path_buf();
            let ft = entry.file_type().expect("file type");
            if ft.is_dir() {
                out.insert(rel, None);
                walk(root, &path, out);
            } else if ft.is_symlink() {
                let target = fs::read_link(&path).expect("readlink");
                out.insert(rel, Some(target.into_os_string().into_encoded_bytes()));
            } else {
                out.insert(rel, Some(fs::read(&path).expect("read")));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn assert_same_tree(source: &Path, unpacked: &Path) {
    let want = tree(source);
    let got = tree(unpacked);
    let want_paths: Vec<_> = want.keys().collect();
    let got_paths: Vec<_> = got.keys().collect();
    assert_eq!(
        want_paths,
        got_paths,
        "file lists differ: {} vs {}",
        source.display(),
        unpacked.display()
    );
    for (path, bytes) in &want {
        assert!(
            got.get(path) == Some(bytes),
            "{} differs after the round trip",
            path.display()
        );
    }
}

#[test]
fn catalog_round_trip_by_digest_is_byte_identical() {
    let source = data_dir().join("catalogs/community-v4.21");
    let registry = registry();
    let rt = runtime();
    let client = client();
    let out = tempfile::tempdir().expect("tempdir");

    let t = Instant::now();
    let image = catalog_image(&source).expect("build catalog image");
    let build = t.elapsed();
    assert_eq!(
        image
            .labels()
            .get(CATALOG_CONFIGS_LABEL)
            .map(String::as_str),
        Some("/configs")
    );

    let tagged = reference(&registry, "catalogs/community:v4.21");
    let t = Instant::now();
    let digest = rt
        .block_on(client.push(&image, &tagged))
        .unwrap_or_else(|e| panic!("{e}\n{}", registry.log_tail()));
    let push = t.elapsed();
    assert_eq!(&digest, image.digest());

    let resolved = rt.block_on(client.resolve(&tagged)).expect("resolve");
    assert_eq!(
        resolved, digest,
        "the tag must resolve to the pushed digest"
    );

    let pinned = tagged.with_digest(&digest);
    let dest = out.path().join("catalog");
    let t = Instant::now();
    let pulled = rt
        .block_on(client.pull_to_dir(&pinned, &dest, &Filter::All, Expect::Either))
        .expect("pull by digest");
    let pull = t.elapsed();
    assert_eq!(pulled.digest, digest);
    assert_eq!(pulled.labels, *image.labels());
    assert_eq!(
        fs::read_dir(&dest)
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect::<Vec<_>>(),
        vec!["configs"]
    );
    assert_same_tree(&source, &dest.join("configs"));
    eprintln!(
        "community-v4.21: build {build:?}, push {push:?}, pull+unpack {pull:?}; layer {} bytes, {} files, {} bytes unpacked",
        image.layers()[0].data().len(),
        pulled.stats.files,
        pulled.stats.bytes
    );
}

#[test]
fn bundles_round_trip_with_annotation_labels() {
    let registry = registry();
    let rt = runtime();
    let client = client();
    let out = tempfile::tempdir().expect("tempdir");
    let bundles = data_dir().join("bundles");
    let mut dirs: Vec<PathBuf> = Vec::new();
    for package in fs::read_dir(&bundles).expect("bundles dir") {
        let package = package.expect("entry").path();
        for version in fs::read_dir(&package).expect("package dir") {
            let version = version.expect("entry").path();
            if version.join("metadata/annotations.yaml").is_file() {
                dirs.push(version);
            }
        }
    }
    dirs.sort();
    assert!(
        dirs.len() >= 10,
        "expected the shared bundles, found {}",
        dirs.len()
    );

    for (i, dir) in dirs.iter().enumerate() {
        let image = bundle_image(dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            image
                .labels()
                .get("operators.operatorframework.io.bundle.mediatype.v1")
                .map(String::as_str),
            Some("registry+v1"),
            "{}",
            dir.display()
        );
        let tagged = reference(&registry, &format!("bundles/b{i}:v1"));
        let digest = rt
            .block_on(client.push(&image, &tagged))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let dest = out.path().join(format!("b{i}"));
        let pulled = rt
            .block_on(client.pull_to_dir(
                &tagged.with_digest(&digest),
                &dest,
                &Filter::All,
                Expect::Either,
            ))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert_eq!(pulled.labels, *image.labels());
        for sub in ["manifests", "metadata"] {
            assert_same_tree(&dir.join(sub), &dest.join(sub));
        }
    }
}

#[test]
fn same_directory_gives_same_digest_and_tags_resolve() {
    let source = data_dir().join("catalogs/community-v4.21");
    let registry = registry();
    let rt = runtime();
    let client = client();
    let first = catalog_image(&source).expect("build");
    let second = catalog_image(&source).expect("build");
    assert_eq!(first.digest(), second.digest());
    assert_eq!(first.layers()[0].digest(), second.layers()[0].digest());

    let a = reference(&registry, "catalogs/repro:a");
    let b = reference(&registry, "catalogs/repro:b");
    let da = rt.block_on(client.push(&first, &a)).expect("push a");
    let db = rt.block_on(client.push(&second, &b)).expect("push b");
    assert_eq!(da, db);
    assert_eq!(rt.block_on(client.resolve(&a)).expect("resolve a"), da);
    assert_eq!(rt.block_on(client.resolve(&b)).expect("resolve b"), da);
    // A digest reference resolves to itself.
    assert_eq!(
        rt.block_on(client.resolve(&a.with_digest(&da)))
            .expect("resolve"),
        da
    );

    // Moving a tag is seen by the next resolve.
    let small = tempfile::tempdir().expect("tempdir");
    fs::write(
        small.path().join("catalog.json"),
        br#"{"schema":"olm.package","name":"p"}"#,
    )
    .expect("write");
    let other = catalog_image(small.path()).expect("build other");
    let moved = rt.block_on(client.push(&other, &a)).expect("push other");
    assert_ne!(moved, da);
    assert_eq!(rt.block_on(client.resolve(&a)).expect("resolve"), moved);

    let missing = reference(&registry, "catalogs/repro:nope");
    let err = rt
        .block_on(client.resolve(&missing))
        .expect_err("unknown tag");
    assert!(err.to_string().contains("catalogs/repro:nope"), "{err}");
}

#[test]
fn cache_unpacks_once_per_digest_and_filters_catalogs() {
    let source = data_dir().join("catalogs/community-v4.21");
    let registry = registry();
    let rt = runtime();
    let client = client();
    let root = tempfile::tempdir().expect("tempdir");
    let cache = ImageCache::new(root.path().join("cache"));
    let image = catalog_image(&source).expect("build");
    let tagged = reference(&registry, "catalogs/cached:latest");
    rt.block_on(client.push(&image, &tagged)).expect("push");

    let filter = Filter::CatalogConfigs;
    let first = rt
        .block_on(client.pull_cached(&tagged, &cache, &filter, Expect::Catalog))
        .expect("pull");
    assert!(!first.cached);
    assert_eq!(&first.digest, image.digest());
    assert_eq!(first.path, cache.path_for(image.digest(), &filter));
    assert_same_tree(&source, &first.path.join("configs"));
    assert_eq!(first.catalog_dir(), Some(first.path.join("configs")));

    let t = Instant::now();
    let second = rt
        .block_on(client.pull_cached(&tagged, &cache, &filter, Expect::Catalog))
        .expect("pull");
    eprintln!("cache hit: {:?}", t.elapsed());
    assert!(second.cached);
    assert_eq!(second.path, first.path);
    assert_eq!(second.labels, first.labels);
    assert_eq!(second.manifest_digest, first.manifest_digest);
    assert_eq!(&second.manifest_digest, image.digest());
    // No staging dirs are left behind.
    let leftovers: Vec<_> = fs::read_dir(cache.root())
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .filter(|n| n.to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A digest names its content for good: a hit needs no registry at all.
    let pinned = tagged.with_digest(image.digest());
    drop(registry);
    let third = rt
        .block_on(client.pull_cached(&pinned, &cache, &filter, Expect::Catalog))
        .expect("a cached digest needs no registry");
    assert!(third.cached);
    assert_eq!(third.path, first.path);
    assert_eq!(third.manifest_digest, first.manifest_digest);
}

#[test]
fn refused_push_says_what_was_refused() {
    let registry = registry_with(&RegistryOptions {
        read_only: true,
        ..RegistryOptions::default()
    });
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    fs::create_dir_all(dir.path().join("pkg")).expect("mkdir");
    fs::write(
        dir.path().join("pkg/catalog.json"),
        br#"{"schema":"olm.package","name":"pkg"}"#,
    )
    .expect("write");
    let image = catalog_image(dir.path()).expect("build");
    let tagged = reference(&registry, "catalogs/refused:v1");
    let err = rt
        .block_on(client().push(&image, &tagged))
        .expect_err("a read-only registry must refuse");
    let msg = err.to_string();
    eprintln!("{msg}");
    assert!(matches!(err, ImageError::PushRefused { .. }), "{msg}");
    assert!(msg.contains("registry refused the layer sha256:"), "{msg}");
    assert!(msg.contains("catalogs/refused:v1"), "{msg}");
}

#[test]
fn pull_refuses_a_non_empty_destination_and_unknown_registries_fail_clearly() {
    let registry = registry();
    let rt = runtime();
    let out = tempfile::tempdir().expect("tempdir");
    fs::write(out.path().join("existing"), b"x").expect("write");
    let tagged = reference(&registry, "catalogs/none:v1");
    let err = rt
        .block_on(client().pull_to_dir(&tagged, out.path(), &Filter::All, Expect::Either))
        .expect_err("non-empty");
    assert!(matches!(err, ImageError::DestinationNotEmpty(_)), "{err}");

    // Nothing listens on the port of a stopped registry.
    let addr = registry.addr();
    drop(registry);
    let gone: ImageRef = format!("{addr}/catalogs/none:v1").parse().expect("ref");
    let err = rt
        .block_on(client().resolve(&gone))
        .expect_err("no registry");
    let msg = err.to_string();
    assert!(msg.contains(&addr.to_string()), "{msg}");
    assert!(msg.to_lowercase().contains("connect"), "{msg}");
}

/// HTTPS through rustls with the ring provider (the only one compiled in) against a registry
/// whose certificate comes from a private CA: untrusted without the CA, fine with it.
#[test]
fn https_registry_with_private_ca() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "olm test CA");
    let ca_key = rcgen::KeyPair::generate().expect("ca key");
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca cert");
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("leaf params");
    let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).expect("leaf");
    let cert_path = dir.path().join("tls.crt");
    let key_path = dir.path().join("tls.key");
    fs::write(&cert_path, leaf.pem()).expect("write cert");
    fs::write(&key_path, leaf_key.serialize_pem()).expect("write key");

    let registry = registry_with(&RegistryOptions {
        tls: Some(olm_testenv::registry::RegistryTls {
            certificate: cert_path,
            key: key_path,
        }),
        ..RegistryOptions::default()
    });
    let rt = runtime();
    let image = catalog_image(&data_dir().join("catalogs/community-v4.21")).expect("build");
    let tagged = reference(&registry, "catalogs/tls:v1");

    let untrusting = Client::new(ClientOptions {
        protocol: Protocol::Https,
        ..ClientOptions::default()
    });
    let err = rt
        .block_on(untrusting.push(&image, &tagged))
        .expect_err("an unknown CA must be refused");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );

    let trusting = Client::new(ClientOptions {
        protocol: Protocol::Https,
        ca_certificates: vec![ca_cert.pem().into_bytes()],
        ..ClientOptions::default()
    });
    let digest = rt
        .block_on(trusting.push(&image, &tagged))
        .unwrap_or_else(|e| panic!("{e}\n{}", registry.log_tail()));
    assert_eq!(&digest, image.digest());
    assert_eq!(
        rt.block_on(trusting.resolve(&tagged)).expect("resolve"),
        digest
    );
}

/// Images from other tools: a Docker v2 manifest with Docker layer media types, and an OCI image
/// index from which the entry for the running platform must be picked.
#[test]
fn docker_manifests_and_image_indexes_are_pulled() {
    use oci_client::client::{ClientConfig, ClientProtocol};

    let registry = registry();
    let rt = runtime();
    let client = client();
    let out = tempfile::tempdir().expect("tempdir");
    let source = data_dir().join("catalogs/community-v4.21");
    let catalog = catalog_image(&source).expect("build");
    let small_dir = tempfile::tempdir().expect("tempdir");
    fs::write(small_dir.path().join("other.json"), b"{}").expect("write");
    let other = catalog_image(small_dir.path()).expect("build");

    let base = reference(&registry, "catalogs/foreign:oci");
    rt.block_on(client.push(&catalog, &base)).expect("push");
    let other_ref = reference(&registry, "catalogs/foreign:other");
    rt.block_on(client.push(&other, &other_ref)).expect("push");

    let raw: oci_client::Reference = format!("{}/catalogs/foreign:docker", registry.addr())
        .parse()
        .expect("ref");
    let oci = oci_client::Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..ClientConfig::default()
    });
    let docker_manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "digest": catalog.config_digest().as_str(),
            "size": catalog.config().len(),
        },
        "layers": [{
            "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
            "digest": catalog.layers()[0].digest().as_str(),
            "size": catalog.layers()[0].data().len(),
        }],
    });
    rt.block_on(
        oci.push_manifest_raw(
            &raw,
            serde_json::to_vec(&docker_manifest).expect("json"),
            "application/vnd.docker.distribution.manifest.v2+json"
                .parse()
                .expect("header"),
        ),
    )
    .expect("push docker manifest");
    let docker_ref = reference(&registry, "catalogs/foreign:docker");
    let pulled = rt
        .block_on(client.pull_to_dir(
            &docker_ref,
            &out.path().join("docker"),
            &Filter::All,
            Expect::Either,
        ))
        .expect("pull docker manifest");
    assert_eq!(
        pulled.labels.get(CATALOG_CONFIGS_LABEL).map(String::as_str),
        Some("/configs")
    );
    assert_same_tree(&source, &out.path().join("docker/configs"));

    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let foreign_arch = if arch == "s390x" { "ppc64le" } else { "s390x" };
    let entry = |image: &olm_image::Image, arch: &str| {
        serde_json::json!({
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": image.digest().as_str(),
            "size": image.manifest().len(),
            "platform": {"architecture": arch, "os": "linux"},
        })
    };
    // The foreign entry comes first so that picking the first entry would be caught.
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [entry(&other, foreign_arch), entry(&catalog, arch)],
    });
    let index_bytes = serde_json::to_vec(&index).expect("json");
    let index_raw: oci_client::Reference = format!("{}/catalogs/foreign:index", registry.addr())
        .parse()
        .expect("ref");
    rt.block_on(
        oci.push_manifest_raw(
            &index_raw,
            index_bytes.clone(),
            "application/vnd.oci.image.index.v1+json"
                .parse()
                .expect("header"),
        ),
    )
    .expect("push index");
    let index_ref = reference(&registry, "catalogs/foreign:index");
    let index_digest = olm_image::Digest::of(&index_bytes);
    assert_eq!(
        rt.block_on(client.resolve(&index_ref)).expect("resolve"),
        index_digest,
        "a tag on an index resolves to the index digest"
    );
    let pulled = rt
        .block_on(client.pull_to_dir(
            &index_ref,
            &out.path().join("index"),
            &Filter::All,
            Expect::Either,
        ))
        .expect("pull index");
    assert_eq!(pulled.digest, index_digest);
    assert_eq!(&pulled.manifest_digest, catalog.digest());
    assert_same_tree(&source, &out.path().join("index/configs"));
}

/// Credentials from a docker `config.json` reach a registry that requires basic auth; without
/// them the push is refused and says so.
#[test]
fn credentials_from_config_json_are_used() {
    use base64::Engine as _;

    let dir = tempfile::tempdir().expect("tempdir");
    let htpasswd = dir.path().join("htpasswd");
    let hash = bcrypt::hash("s3cret", 4).expect("bcrypt");
    fs::write(&htpasswd, format!("olm:{hash}\n")).expect("write htpasswd");
    let registry = registry_with(&RegistryOptions {
        htpasswd: Some(htpasswd),
        ..RegistryOptions::default()
    });
    let rt = runtime();
    let small = tempfile::tempdir().expect("tempdir");
    fs::write(small.path().join("catalog.json"), b"{}").expect("write");
    let image = catalog_image(small.path()).expect("build");
    let tagged = reference(&registry, "catalogs/private:v1");

    let err = rt
        .block_on(client().push(&image, &tagged))
        .expect_err("anonymous push must be refused");
    eprintln!("{err}");
    assert!(matches!(err, ImageError::PushRefused { .. }), "{err}");

    let config = dir.path().join("config.json");
    let auth = base64::engine::general_purpose::STANDARD.encode("olm:s3cret");
    fs::write(
        &config,
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#,
            registry.addr()
        ),
    )
    .expect("write config.json");
    let authed = Client::new(ClientOptions {
        auth: olm_image::AuthConfig::from_file(&config).expect("auth config"),
        ..ClientOptions::default()
    });
    let digest = rt
        .block_on(authed.push(&image, &tagged))
        .unwrap_or_else(|e| panic!("{e}\n{}", registry.log_tail()));
    assert_eq!(&digest, image.digest());
    let out = tempfile::tempdir().expect("tempdir");
    let pulled = rt
        .block_on(authed.pull_to_dir(&tagged, &out.path().join("x"), &Filter::All, Expect::Either))
        .expect("pull with credentials");
    assert_eq!(pulled.digest, digest);
    let err = rt
        .block_on(client().resolve(&tagged))
        .expect_err("anonymous resolve must fail");
    assert!(err.to_string().contains("catalogs/private:v1"), "{err}");
}

/// Layers apply in order: a later layer's file replaces an earlier one's, the rest accumulates.
#[test]
fn multi_layer_images_apply_in_order() {
    let registry = registry();
    let rt = runtime();
    let lower = tempfile::tempdir().expect("tempdir");
    fs::write(lower.path().join("a"), b"lower a").expect("write");
    fs::write(lower.path().join("b"), b"lower b").expect("write");
    let upper = tempfile::tempdir().expect("tempdir");
    fs::write(upper.path().join("b"), b"upper b").expect("write");
    fs::write(upper.path().join("c"), b"upper c").expect("write");
    let layers = [lower.path(), upper.path()]
        .iter()
        .map(|dir| {
            olm_image::assemble::layer_from_dirs(&[(dir.to_path_buf(), "data".to_string())])
                .expect("layer")
        })
        .collect();
    let image = olm_image::assemble::image_from_layers(BTreeMap::new(), layers);
    let tagged = reference(&registry, "misc/layers:v1");
    rt.block_on(client().push(&image, &tagged)).expect("push");
    let out = tempfile::tempdir().expect("tempdir");
    let dest = out.path().join("x");
    let pulled = rt
        .block_on(client().pull_to_dir(&tagged, &dest, &Filter::All, Expect::Either))
        .expect("pull");
    assert_eq!(pulled.stats.files, 4);
    assert_eq!(fs::read(dest.join("data/a")).expect("a"), b"lower a");
    assert_eq!(fs::read(dest.join("data/b")).expect("b"), b"upper b");
    assert_eq!(fs::read(dest.join("data/c")).expect("c"), b"upper c");
}

/// Asking for a catalog from an image without the configs label is a clear error.
#[test]
fn bundle_is_not_a_catalog() {
    let registry = registry();
    let rt = runtime();
    let bundle = fs::read_dir(data_dir().join("bundles"))
        .expect("bundles")
        .flat_map(|p| fs::read_dir(p.expect("entry").path()).expect("versions"))
        .map(|v| v.expect("entry").path())
        .find(|v| v.join("metadata/annotations.yaml").is_file())
        .expect("a bundle");
    let image = bundle_image(&bundle).expect("build");
    let tagged = reference(&registry, "bundles/notcatalog:v1");
    rt.block_on(client().push(&image, &tagged)).expect("push");
    let root = tempfile::tempdir().expect("tempdir");
    let cache = ImageCache::new(root.path());
    let err = rt
        .block_on(client().pull_cached(&tagged, &cache, &Filter::CatalogConfigs, Expect::Catalog))
        .expect_err("not a catalog");
    assert!(matches!(err, ImageError::NotACatalog { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("operators.operatorframework.io.index.configs.v1"),
        "{err}"
    );
}

/// A catalog image whose one small gzip layer holds a `catalog.json` far over the per-file
/// limit is refused while streaming, with nothing left in the cache, and is not downloaded again
/// while its digest stays the same, whether asked for by tag or by digest, into the cache or a
/// directory; raised limits are worth another try.
#[test]
fn an_image_over_the_limits_is_refused_once_and_remembered() {
    use olm_image::{Limits, Sizes, limits::Over};
    let registry = registry();
    let rt = runtime();
    let small = Limits {
        catalog: Sizes {
            total: 8 << 20,
            file: 1 << 20,
        },
        ..Limits::default()
    };
    let client = Client::new(ClientOptions {
        limits: small,
        ..ClientOptions::default()
    });
    let size = 64u64 << 20;
    let layer = olm_image::layer_from_stream(
        "configs/catalog.json",
        size,
        std::io::Read::take(std::io::repeat(b' '), size),
    )
    .expect("layer");
    assert!(layer.data().len() < 1 << 20, "{layer:?}");
    let layer_digest = layer.digest().to_string();
    let labels = BTreeMap::from([(CATALOG_CONFIGS_LABEL.to_string(), "/configs".to_string())]);
    let image = olm_image::assemble::image_from_layers(labels, vec![layer]);
    let tagged = reference(&registry, "bombs/catalog:v1");
    rt.block_on(client.push(&image, &tagged)).expect("push");
    let downloads = || registry.answered("GET", &format!("/v2/bombs/catalog/blobs/{layer_digest}"));

    let root = tempfile::tempdir().expect("tempdir");
    let cache = ImageCache::new(root.path().join("cache"));
    let filter = Filter::CatalogConfigs;
    let err = rt
        .block_on(client.pull_cached(&tagged, &cache, &filter, Expect::Catalog))
        .expect_err("over the per-file limit");
    let pinned = tagged.with_digest(image.digest());
    assert_eq!(
        err.to_string(),
        format!(
            "{pinned} is over the catalog image per-file size limit: \"configs/catalog.json\" holds 67108864 bytes, more than the 1Mi one file may hold (raise it with --catalog-max-file-size)"
        )
    );
    match &err {
        ImageError::TooLarge { exceeded, .. } => {
            assert!(matches!(exceeded.over, Over::File { .. }), "{err}");
            assert_eq!(exceeded.setting(), "--catalog-max-file-size");
        }
        other => panic!("{other}"),
    }
    let files: Vec<_> = walk_files(root.path());
    assert!(files.is_empty(), "left behind: {files:?}");
    assert_eq!(downloads(), 1);

    // By tag, by digest, into the cache or a directory, with a clone or other credentials:
    // the same refusal, and no download.
    let again = [
        rt.block_on(client.pull_cached(&tagged, &cache, &filter, Expect::Catalog)),
        rt.block_on(client.pull_cached(&pinned, &cache, &filter, Expect::Catalog)),
        rt.block_on(
            client
                .with_auth(olm_image::AuthConfig::anonymous())
                .pull_to_dir(&pinned, &root.path().join("dir"), &filter, Expect::Either),
        ),
    ];
    for result in again {
        let e = result.expect_err("still refused");
        assert_eq!(e.to_string(), err.to_string());
    }
    assert!(walk_files(root.path()).is_empty());
    assert_eq!(downloads(), 1, "{}", registry.log_tail());

    // Raised limits: pulled again, and it fits.
    let raised = Client::new(ClientOptions {
        limits: Limits {
            catalog: Sizes {
                total: 128 << 20,
                file: 64 << 20,
            },
            ..small
        },
        ..ClientOptions::default()
    });
    let pulled = rt
        .block_on(raised.pull_cached(&tagged, &cache, &filter, Expect::Catalog))
        .expect("fits the raised limits");
    assert_eq!(
        fs::metadata(pulled.path.join("configs/catalog.json"))
            .expect("unpacked")
            .len(),
        size
    );
    assert_eq!(downloads(), 2);
}

/// Every regular file under `root`.
fn walk_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("read_dir") {
            let entry = entry.expect("entry");
            if entry.file_type().expect("type").is_dir() {
                dirs.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out
}
