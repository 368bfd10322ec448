//! Externalising a revision's objects into Secrets and reading them back. The packing cases are
//! upstream's `TestSecretPacker_Pack` (`internal/operator-controller/applier/secretpacker_test.go`,
//! v1.11.0) and `TestReplaceInlineWithRefs` (`externalize_test.go`); the exact keys and Secret
//! names are what upstream's packer computes for the same objects with Go's `encoding/json`.
//! The inline-or-pack policy, a real bundle over etcd's limit and the round trip are ours.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use k8s_openapi::ByteString;
use olm_api::{BundleMetadata, ClusterObjectSetObject, ClusterObjectSetPhase, ObjectSourceRef};
use olm_extension::pack::{
    self, GZIP_THRESHOLD, INLINE_LIMIT, MAX_SECRET_DATA_SIZE, PackError, RefError, SecretPacker,
};
use olm_extension::{phase, revision};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const PACKER: SecretPacker<'static> = SecretPacker {
    revision_name: "my-ext-3",
    owner_name: "my-ext",
    system_namespace: "olmv1-system",
};

/// Upstream's `testConfigMap`.
fn config_map(name: &str, namespace: &str) -> Map<String, Value> {
    let mut metadata = json!({"name": name});
    if !namespace.is_empty() {
        metadata["namespace"] = json!(namespace);
    }
    match json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}) {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

fn inline(o: Map<String, Value>) -> ClusterObjectSetObject {
    ClusterObjectSetObject {
        object: Some(o),
        ref_: None,
        collision_protection: None,
    }
}

fn phase_of(name: &str, objects: Vec<ClusterObjectSetObject>) -> ClusterObjectSetPhase {
    ClusterObjectSetPhase {
        name: name.to_owned(),
        objects,
        collision_protection: None,
    }
}

fn data(s: &k8s_openapi::api::core::v1::Secret) -> &BTreeMap<String, ByteString> {
    s.data.as_ref().unwrap()
}

fn data_size(s: &k8s_openapi::api::core::v1::Secret) -> usize {
    data(s).values().map(|v| v.0.len()).sum()
}

/// Bytes that deflate cannot shrink much: a SHA-256 chain, base64'd (about 3/4 of a byte of
/// entropy per character).
fn incompressible(len: usize) -> String {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    let mut raw = Vec::with_capacity(len);
    let mut block = Sha256::digest(b"seed");
    while raw.len() * 4 / 3 < len {
        raw.extend_from_slice(&block);
        block = Sha256::digest(block);
    }
    let mut s = base64::engine::general_purpose::STANDARD_NO_PAD.encode(raw);
    s.truncate(len);
    s
}

#[test]
fn empty_phases_produce_no_secrets() {
    let result = PACKER.pack(&[]).unwrap();
    assert!(result.secrets.is_empty());
    assert!(result.refs.is_empty());
}

#[test]
fn single_object_packs_into_one_secret() {
    let phases = [phase_of(
        "deploy",
        vec![inline(config_map("test-cm", "default"))],
    )];
    let result = PACKER.pack(&phases).unwrap();
    assert_eq!(result.secrets.len(), 1);
    let s = &result.secrets[0];
    // Upstream only checks the prefix; the whole name is what its packer computes.
    assert_eq!(
        s.metadata.name.as_deref(),
        Some("my-ext-3-08145af179089f78")
    );
    assert_eq!(s.metadata.namespace.as_deref(), Some("olmv1-system"));
    assert_eq!(s.immutable, Some(true));
    assert_eq!(
        s.type_.as_deref(),
        Some("olm.operatorframework.io/object-data")
    );
    let labels = s.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["olm.operatorframework.io/revision-name"], "my-ext-3");
    assert_eq!(labels["olm.operatorframework.io/owner-name"], "my-ext");
    assert_eq!(labels.len(), 2);

    let r = &result.refs[&(0, 0)];
    assert_eq!(Some(&r.name), s.metadata.name.as_ref());
    assert_eq!(r.namespace.as_deref(), Some("olmv1-system"));
    assert_eq!(r.key.len(), 43);
    let stored = &data(s)[&r.key];
    assert_eq!(
        std::str::from_utf8(&stored.0).unwrap(),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"test-cm","namespace":"default"}}"#
    );
    let back = pack::unpack_ref(&stored.0).unwrap();
    assert_eq!(back["kind"], "ConfigMap");
}

#[test]
fn multiple_objects_fit_in_one_secret() {
    let phases = [phase_of(
        "deploy",
        vec![
            inline(config_map("cm-1", "default")),
            inline(config_map("cm-2", "default")),
        ],
    )];
    let result = PACKER.pack(&phases).unwrap();
    assert_eq!(result.secrets.len(), 1);
    assert_eq!(data(&result.secrets[0]).len(), 2);
    assert_eq!(result.refs.len(), 2);
    // Upstream's name for these two keys and values.
    assert_eq!(
        result.secrets[0].metadata.name.as_deref(),
        Some("my-ext-3-8b85a1b22f916ef8")
    );
    assert_eq!(
        result.refs[&(0, 0)].key,
        "iDvKGatixQAxuc8isjUUcVgwhDxz9ppcJLZ0BMKTF68"
    );
    assert_eq!(
        result.refs[&(0, 1)].key,
        "HsG14MHARLaTUzSucMXeasBRyJWaEp12hL_Rr87pNmM"
    );
}

#[test]
fn objects_across_multiple_phases() {
    let phases = [
        phase_of("crds", vec![inline(config_map("crd-1", ""))]),
        phase_of("deploy", vec![inline(config_map("deploy-1", "ns"))]),
    ];
    let result = PACKER.pack(&phases).unwrap();
    assert_eq!(result.secrets.len(), 1);
    let (r0, r1) = (&result.refs[&(0, 0)], &result.refs[&(1, 0)]);
    assert_eq!(r0.name, r1.name);
    assert_ne!(r0.key, r1.key);
}

#[test]
fn deterministic_same_input_produces_same_output() {
    let phases = [phase_of(
        "deploy",
        vec![inline(config_map("cm-1", "default"))],
    )];
    let a = PACKER.pack(&phases).unwrap();
    let b = PACKER.pack(&phases).unwrap();
    assert_eq!(a.secrets.len(), 1);
    assert_eq!(a, b);
}

#[test]
fn skips_ref_only_objects() {
    let phases = [phase_of(
        "deploy",
        vec![ClusterObjectSetObject {
            object: None,
            ref_: Some(ObjectSourceRef {
                name: "existing-secret".into(),
                namespace: Some("ns".into()),
                key: "somekey".into(),
            }),
            collision_protection: None,
        }],
    )];
    let result = PACKER.pack(&phases).unwrap();
    assert!(result.secrets.is_empty());
    assert!(result.refs.is_empty());
}

#[test]
fn large_object_gets_gzipped() {
    let mut large = config_map("large-cm", "default");
    large.insert(
        "data".into(),
        json!({"bigkey": "a".repeat(GZIP_THRESHOLD + 1)}),
    );
    let phases = [phase_of("deploy", vec![inline(large.clone())])];
    let result = PACKER.pack(&phases).unwrap();
    assert_eq!(result.secrets.len(), 1);
    let stored = &data(&result.secrets[0])[&result.refs[&(0, 0)].key];
    assert_eq!(&stored.0[..2], &[0x1f, 0x8b]);
    assert!(stored.0.len() < 10 * 1024);
    assert_eq!(pack::unpack_ref(&stored.0).unwrap(), large);
}

#[test]
fn duplicate_content_objects_share_key_and_do_not_inflate_size() {
    let phases = [phase_of(
        "deploy",
        vec![
            inline(config_map("same-cm", "default")),
            inline(config_map("same-cm", "default")),
        ],
    )];
    let result = PACKER.pack(&phases).unwrap();
    assert_eq!(result.secrets.len(), 1);
    assert_eq!(data(&result.secrets[0]).len(), 1);
    assert_eq!(result.refs.len(), 2);
    assert_eq!(result.refs[&(0, 0)].key, result.refs[&(0, 1)].key);
}

#[test]
fn key_is_sha256_base64url() {
    let phases = [phase_of(
        "deploy",
        vec![inline(config_map("test-cm", "default"))],
    )];
    let result = PACKER.pack(&phases).unwrap();
    // base64url(sha256(json.Marshal(testConfigMap("test-cm", "default")))) in Go.
    assert_eq!(
        result.refs[&(0, 0)].key,
        "YMTx67eZsIjV6jq7Juqp2r9gDPYOIEHyh5tOlu28Rq8"
    );
    assert_eq!(
        pack::content_key(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"test-cm","namespace":"default"}}"#
        ),
        "YMTx67eZsIjV6jq7Juqp2r9gDPYOIEHyh5tOlu28Rq8"
    );
}

/// The stored bytes are Go's `json.Marshal` of the object: sorted keys, HTML escaping, Go's
/// float form; key computed by upstream's packer for the same object.
#[test]
fn stored_bytes_are_gos_json() {
    let rich = match json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "spec": {"list": ["x", 1], "null": null, "int": 3, "float": 1.5, "big": 1e21, "bool": true},
        "metadata": {"namespace": "default", "name": "test-cm", "labels": {"z": "1", "a": "2"}},
        "data": {"line": "a\u{2028}b", "html": "<b&c>"},
    }) {
        Value::Object(m) => m,
        _ => unreachable!(),
    };
    let result = PACKER
        .pack(&[phase_of("deploy", vec![inline(rich)])])
        .unwrap();
    let r = &result.refs[&(0, 0)];
    assert_eq!(r.key, "tRJiND9XdR6yZZggTcF14187WQWXXZAe68tBqJEbRU8");
    assert_eq!(
        std::str::from_utf8(&data(&result.secrets[0])[&r.key].0).unwrap(),
        r#"{"apiVersion":"v1","data":{"html":"\u003cb\u0026c\u003e","line":"a\u2028b"},"kind":"ConfigMap","metadata":{"labels":{"a":"2","z":"1"},"name":"test-cm","namespace":"default"},"spec":{"big":1e+21,"bool":true,"float":1.5,"int":3,"list":["x",1],"null":null}}"#
    );
}

#[test]
fn secrets_split_at_the_data_cap() {
    // Five objects of ~300 KiB that do not compress (they stay below the gzip threshold):
    // three would pass 900 KiB, so each Secret takes two.
    let objects: Vec<_> = (0..5)
        .map(|i| {
            let mut cm = config_map(&format!("cm-{i}"), "ns");
            cm.insert(
                "data".into(),
                json!({"blob": incompressible(300 * 1024 + i)}),
            );
            inline(cm)
        })
        .collect();
    let result = PACKER.pack(&[phase_of("configuration", objects)]).unwrap();
    assert_eq!(result.secrets.len(), 3);
    for s in &result.secrets {
        assert!(data_size(s) <= MAX_SECRET_DATA_SIZE);
        assert!(s.metadata.name.as_ref().unwrap().starts_with("my-ext-3-"));
    }
    assert_eq!(
        result
            .secrets
            .iter()
            .map(|s| data(s).len())
            .collect::<Vec<_>>(),
        [2, 2, 1]
    );
    // Refs of the first two objects name the first Secret, and so on.
    assert_eq!(
        result.refs[&(0, 1)].name,
        *result.secrets[0].metadata.name.as_ref().unwrap()
    );
    assert_eq!(
        result.refs[&(0, 4)].name,
        *result.secrets[2].metadata.name.as_ref().unwrap()
    );
}

#[test]
fn object_too_large_even_after_compression() {
    let mut cm = config_map("huge", "ns");
    cm.insert("data".into(), json!({"blob": incompressible(1300 * 1024)}));
    let phases = [
        phase_of("identity", vec![inline(config_map("a", "ns"))]),
        phase_of(
            "configuration",
            vec![inline(config_map("b", "ns")), inline(cm)],
        ),
    ];
    let err = PACKER.pack(&phases).unwrap_err();
    let PackError::TooLarge { phase, index, size } = err else {
        panic!("{err}");
    };
    assert_eq!((phase, index), (1, 1));
    assert!(size > MAX_SECRET_DATA_SIZE);
    assert_eq!(
        PACKER.pack(&phases).unwrap_err().to_string(),
        format!(
            "object in phase 1 index 1 exceeds maximum Secret data size ({size} bytes > 921600 bytes) even after compression"
        )
    );
}

/// Upstream's `TestReplaceInlineWithRefs`.
#[test]
fn replace_inline_with_refs() {
    let mut phases = vec![phase_of(
        "deploy",
        vec![inline(config_map("cm1", "")), inline(config_map("cm2", ""))],
    )];
    let r = |key: &str| ObjectSourceRef {
        name: "secret-1".into(),
        namespace: Some("olmv1-system".into()),
        key: key.into(),
    };
    let refs = BTreeMap::from([((0, 0), r("key-a")), ((0, 1), r("key-b"))]);
    pack::replace_inline_with_refs(&mut phases, &refs);
    assert_eq!(phases[0].objects.len(), 2);
    for (o, key) in phases[0].objects.iter().zip(["key-a", "key-b"]) {
        assert!(o.object.is_none());
        assert_eq!(o.ref_.as_ref(), Some(&r(key)));
    }
    // Upstream's `TestReplaceInlineWithRefs_NilSpec`: nothing to replace is no error.
    pack::replace_inline_with_refs(&mut [], &BTreeMap::new());
}

/// Upstream's `TestExtractPhasesForPacking`: what is packed keeps its phase name and its
/// collision protection.
#[test]
fn packing_keeps_phase_names_and_collision_protection() {
    let mut phases = vec![phase_of(
        "deploy",
        vec![ClusterObjectSetObject {
            collision_protection: Some(olm_api::CollisionProtection::Prevent),
            ..inline(config_map("cm1", ""))
        }],
    )];
    let result = PACKER.pack(&phases).unwrap();
    pack::replace_inline_with_refs(&mut phases, &result.refs);
    assert_eq!(phases[0].name, "deploy");
    assert_eq!(
        phases[0].objects[0].collision_protection,
        Some(olm_api::CollisionProtection::Prevent)
    );
    assert!(phases[0].objects[0].ref_.is_some());
}

#[test]
fn unpack_detects_gzip_and_limits_inflation() {
    let cm = config_map("x", "ns");
    let plain = serde_json::to_vec(&cm).unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&plain).unwrap();
    assert_eq!(pack::unpack_ref(&enc.finish().unwrap()).unwrap(), cm);
    assert_eq!(pack::unpack_ref(&plain).unwrap(), cm);

    // A gzip bomb: 10 MiB + 1 of spaces (valid JSON padding) inflates past the cap.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&vec![b' '; 10 * 1024 * 1024 + 1]).unwrap();
    enc.write_all(&plain).unwrap();
    let bomb = enc.finish().unwrap();
    let r = ObjectSourceRef {
        name: "s".into(),
        namespace: None,
        key: "k".into(),
    };
    let err = pack::resolve_ref(
        &r,
        "olmv1-system",
        &BTreeMap::from([("k".to_owned(), ByteString(bomb))]),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"decompressed data for key "k" in Secret olmv1-system/s exceeds maximum size (10485760 bytes)"#
    );
}

#[test]
fn resolve_ref_errors_name_key_and_secret_as_upstream() {
    let r = ObjectSourceRef {
        name: "s".into(),
        namespace: Some("ns".into()),
        key: "k".into(),
    };
    let err = pack::resolve_ref(&r, "ns", &BTreeMap::new()).unwrap_err();
    assert!(matches!(err, RefError::MissingKey { .. }));
    assert_eq!(err.to_string(), r#"key "k" not found in Secret ns/s"#);

    let with = |bytes: &[u8]| BTreeMap::from([("k".to_owned(), ByteString(bytes.to_vec()))]);
    assert_eq!(
        pack::resolve_ref(&r, "ns", &with(b"[1]"))
            .unwrap_err()
            .to_string(),
        r#"unmarshaling object from key "k" in Secret ns/s: json: cannot unmarshal array into Go value of type map[string]interface {}"#
    );
    assert!(
        pack::resolve_ref(&r, "ns", &with(b"{nope"))
            .unwrap_err()
            .to_string()
            .starts_with(r#"unmarshaling object from key "k" in Secret ns/s: "#)
    );
    assert!(
        pack::resolve_ref(&r, "ns", &with(&[0x1f, 0x8b, 0, 0]))
            .unwrap_err()
            .to_string()
            .starts_with(r#"creating gzip reader for key "k" in Secret ns/s: "#)
    );
}

fn bundle_objects(
    dir: &str,
    namespace: &str,
    config: Option<&str>,
) -> (olm_bundle::Bundle, Vec<Value>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bundles")
        .join(dir);
    let b = olm_bundle::Bundle::from_dir(&path).unwrap();
    let objects = olm_bundle::render_bundle(
        &b,
        namespace,
        config,
        Some(olm_bundle::CertProvider::CertManager),
    )
    .unwrap();
    (b, objects)
}

fn revision_of(b: &olm_bundle::Bundle, objects: &[Value]) -> olm_api::ClusterObjectSet {
    let bundle = BundleMetadata {
        name: b.csv.name().to_owned(),
        version: b.csv.version(),
        release: None,
    };
    revision::build(&revision::RevisionRequest {
        extension_name: "argocd",
        extension_uid: "6d1b2c6e-0000-4000-8000-000000000001",
        revision: 1,
        package_name: "argocd-operator",
        bundle: &bundle,
        bundle_image: "quay.io/example/argocd-operator-bundle:v0.18.0",
        properties: None,
        objects,
        progress_deadline_minutes: 0,
        service_account: None,
    })
    .unwrap()
}

fn resolve_all(
    cos: &olm_api::ClusterObjectSet,
    secrets: &[k8s_openapi::api::core::v1::Secret],
) -> Vec<Vec<Map<String, Value>>> {
    let by_name: BTreeMap<&str, &k8s_openapi::api::core::v1::Secret> = secrets
        .iter()
        .map(|s| (s.metadata.name.as_deref().unwrap(), s))
        .collect();
    cos.spec
        .phases
        .iter()
        .map(|p| {
            p.objects
                .iter()
                .map(|o| match (&o.object, &o.ref_) {
                    (Some(obj), None) => obj.clone(),
                    (None, Some(r)) => {
                        let s = by_name[r.name.as_str()];
                        pack::resolve_ref(r, "olmv1-system", data(s)).unwrap()
                    }
                    _ => panic!("exactly one of object and ref"),
                })
                .collect()
        })
        .collect()
}

/// A real bundle whose revision is well over etcd's 1.5 MiB: packed into Secrets of at most
/// 900 KiB, and resolving the refs gives back the objects with the same phase digests.
#[test]
fn a_bundle_over_etcds_limit_is_packed() {
    let (b, objects) = bundle_objects("argocd-operator/0.18.0", "argocd", None);
    let inline_rev = revision_of(&b, &objects);
    let inline_len = serde_json::to_vec(&inline_rev).unwrap().len();
    assert!(inline_len > 1536 * 1024, "{inline_len}");

    let out = pack::externalize(inline_rev.clone(), "olmv1-system").unwrap();
    // Its largest CRD is above the gzip threshold and shrinks to a fraction, so everything
    // fits one Secret; `many_large_objects_fill_several_secrets` covers the split.
    assert!(!out.secrets.is_empty());
    for s in &out.secrets {
        assert!(data_size(s) <= MAX_SECRET_DATA_SIZE);
        assert_eq!(s.immutable, Some(true));
        let labels = s.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["olm.operatorframework.io/revision-name"], "argocd-1");
        assert_eq!(labels["olm.operatorframework.io/owner-name"], "argocd");
        // What the API server stores, base64 and all, stays below etcd's limit.
        assert!(serde_json::to_vec(s).unwrap().len() < 1536 * 1024);
    }
    let packed = &out.revision;
    assert!(serde_json::to_vec(packed).unwrap().len() <= INLINE_LIMIT);
    assert!(
        packed
            .spec
            .phases
            .iter()
            .flat_map(|p| &p.objects)
            .all(|o| o.object.is_none() && o.ref_.is_some())
    );
    assert_eq!(packed.metadata.annotations, inline_rev.metadata.annotations);
    assert_eq!(
        revision::change(&inline_rev, Some(packed)),
        revision::Change::Unchanged
    );

    let resolved = resolve_all(packed, &out.secrets);
    for ((p, objs), original) in packed
        .spec
        .phases
        .iter()
        .zip(&resolved)
        .zip(&inline_rev.spec.phases)
    {
        let original_objs: Vec<Map<String, Value>> = original
            .objects
            .iter()
            .map(|o| o.object.clone().unwrap())
            .collect();
        assert_eq!(objs, &original_objs, "phase {}", p.name);
        assert_eq!(
            phase::digest_resolved(&p.name, objs),
            phase::digest(original),
            "phase {}",
            p.name
        );
    }
}

/// A revision of 1.8 MiB of objects that do not compress: several Secrets, none over the cap.
#[test]
fn many_large_objects_fill_several_secrets() {
    let objects: Vec<Value> = (0..6)
        .map(|i| {
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": format!("blob-{i}"), "namespace": "ns"},
                "data": {"blob": incompressible(300 * 1024 + i)},
            })
        })
        .collect();
    let bundle = BundleMetadata {
        name: "big.v1.0.0".into(),
        version: "1.0.0".into(),
        release: None,
    };
    let rev = revision::build(&revision::RevisionRequest {
        extension_name: "big",
        extension_uid: "uid",
        revision: 4,
        package_name: "big",
        bundle: &bundle,
        bundle_image: "example.com/big:1",
        properties: None,
        objects: &objects,
        progress_deadline_minutes: 0,
        service_account: None,
    })
    .unwrap();
    assert!(serde_json::to_vec(&rev).unwrap().len() > 1536 * 1024);
    let out = pack::externalize(rev.clone(), "olmv1-system").unwrap();
    assert_eq!(out.secrets.len(), 3);
    for s in &out.secrets {
        assert!(data_size(s) <= MAX_SECRET_DATA_SIZE);
        assert!(s.metadata.name.as_ref().unwrap().starts_with("big-4-"));
    }
    let resolved = resolve_all(&out.revision, &out.secrets);
    assert_eq!(resolved.len(), 1);
    assert_eq!(
        resolved[0],
        rev.spec.phases[0]
            .objects
            .iter()
            .map(|o| o.object.clone().unwrap())
            .collect::<Vec<_>>()
    );
}

/// Below the inline limit nothing moves: no Secrets, the revision unchanged.
#[test]
fn a_small_revision_stays_inline() {
    let (b, objects) = bundle_objects(
        "cat-facts-operator/1.1.2",
        "cats",
        Some(r#"{"watchNamespace": "cats"}"#),
    );
    let rev = revision_of(&b, &objects);
    assert!(serde_json::to_vec(&rev).unwrap().len() <= INLINE_LIMIT);
    let out = pack::externalize(rev.clone(), "olmv1-system").unwrap();
    assert!(out.secrets.is_empty());
    assert_eq!(out.revision, rev);
}

#[test]
fn secret_owner_reference_points_at_the_revision() {
    let r = pack::secret_owner_reference("ext-2", "uid-2");
    assert_eq!(r.api_version, "olm.operatorframework.io/v1");
    assert_eq!(r.kind, "ClusterObjectSet");
    assert_eq!((r.name.as_str(), r.uid.as_str()), ("ext-2", "uid-2"));
    assert_eq!(
        (r.controller, r.block_owner_deletion),
        (Some(true), Some(true))
    );
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        (-8_000_000i64..8_000_000).prop_map(|i| json!(i as f64 / 8.0)),
        "[ -~<>&\u{e9}\u{2028}]{0,12}".prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z<&]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn manifest() -> impl Strategy<Value = Map<String, Value>> {
    (
        "[a-z]{1,8}",
        prop::sample::select(vec!["ConfigMap", "Secret", "Deployment", "Widget"]),
        prop::collection::btree_map("[a-z]{1,6}", json_value(), 0..4),
    )
        .prop_map(|(name, kind, extra)| {
            let mut m = Map::new();
            m.insert("apiVersion".into(), json!("v1"));
            m.insert("kind".into(), json!(kind));
            m.insert("metadata".into(), json!({"name": name, "namespace": "ns"}));
            for (k, v) in extra {
                m.entry(k).or_insert(v);
            }
            m
        })
}

/// An object as Go sees it: sorted keys, and `3.0` and `3` the same number.
fn go_text(m: &Map<String, Value>) -> String {
    let mut s = String::new();
    olm_goenc::json::write_value(
        &mut s,
        &olm_goenc::json::sort_keys(&Value::Object(m.clone())),
    );
    s
}

proptest! {
    /// Packing then resolving every ref gives back each object (up to key order, which JSON
    /// objects do not carry), and the phase digests are unchanged.
    #[test]
    fn pack_then_unpack_gives_the_objects_back(
        phases in prop::collection::vec(prop::collection::vec(manifest(), 0..6), 0..4)
    ) {
        let phases: Vec<ClusterObjectSetPhase> = phases
            .into_iter()
            .enumerate()
            .map(|(i, objs)| phase_of(&format!("p{i}"), objs.into_iter().map(inline).collect()))
            .collect();
        let result = PACKER.pack(&phases).unwrap();
        let mut packed = phases.clone();
        pack::replace_inline_with_refs(&mut packed, &result.refs);
        let by_name: BTreeMap<&str, _> = result
            .secrets
            .iter()
            .map(|s| (s.metadata.name.as_deref().unwrap(), data(s)))
            .collect();
        for (p, original) in packed.iter().zip(&phases) {
            let mut resolved = Vec::new();
            for (o, orig) in p.objects.iter().zip(&original.objects) {
                let r = o.ref_.as_ref().unwrap();
                prop_assert!(o.object.is_none());
                let back = pack::resolve_ref(r, "olmv1-system", by_name[r.name.as_str()]).unwrap();
                prop_assert_eq!(go_text(&back), go_text(orig.object.as_ref().unwrap()));
                resolved.push(back);
            }
            prop_assert_eq!(phase::digest_resolved(&p.name, &resolved), phase::digest(original));
        }
        for s in &result.secrets {
            prop_assert!(data_size(s) <= MAX_SECRET_DATA_SIZE);
            prop_assert!(!data(s).is_empty());
        }
    }
}
