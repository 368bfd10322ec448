//! Building a revision from rendered manifests, and deciding between "unchanged", "patch" and
//! "new revision". Cases named `upstream_…` port upstream's `Test_SimpleRevisionGenerator_*` and
//! the pure parts of `TestBoxcutter_Apply` (`internal/operator-controller/applier/boxcutter_test.go`,
//! v1.11.0); the default probes are upstream's `defaultProgressionProbes` (`boxcutter.go`).
//!
//! Upstream's generator receives the owner labels and the bundle annotations from its caller;
//! here the request carries the extension and bundle and the labels are always the owner
//! labels, so expected objects carry them where upstream's test passed none.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use olm_api::{
    BundleMetadata, ClusterObjectSet, ClusterObjectSetSpec, CollisionProtection, LifecycleState,
    ObjectSourceRef,
};
use olm_extension::revision::{
    self, Change, RETENTION_LIMIT, RevisionError, RevisionRequest, ServiceAccountRef,
};
use serde_json::{Value, json};

fn bundle(version: &str) -> BundleMetadata {
    BundleMetadata {
        name: format!("test-package.v{version}"),
        version: version.to_owned(),
        release: None,
    }
}

fn request<'a>(bundle: &'a BundleMetadata, objects: &'a [Value]) -> RevisionRequest<'a> {
    RevisionRequest {
        extension_name: "test-extension",
        extension_uid: "0b9c3a1e-1111-4222-8333-444455556666",
        revision: 1,
        package_name: "test-package",
        bundle,
        bundle_image: "quay.io/example/test-package-bundle:v1.0.0",
        properties: None,
        objects,
        progress_deadline_minutes: 0,
        service_account: None,
    }
}

fn object_json(cos: &ClusterObjectSet, phase: usize, index: usize) -> Value {
    Value::Object(
        cos.spec.phases[phase].objects[index]
            .object
            .clone()
            .unwrap(),
    )
}

fn owner_labels() -> Value {
    json!({
        "olm.operatorframework.io/owner-kind": "ClusterExtension",
        "olm.operatorframework.io/owner-name": "test-extension",
    })
}

/// `Test_SimpleRevisionGenerator_GenerateRevision`: a Service and a Deployment whose metadata
/// carries everything a live object has; status and all metadata but name, namespace, labels
/// and annotations go, the bundle annotations come.
#[test]
fn upstream_generate_revision() {
    let objects = vec![
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "test-service", "creationTimestamp": null},
            "spec": {},
            "status": {"loadBalancer": {}},
        }),
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "test-deployment",
                "namespace": "test-ns",
                "labels": {"my-label": "my-label-value"},
                "annotations": {"my-annotation": "my-annotation-value"},
                "finalizers": ["test"],
                "ownerReferences": [{"kind": "TestOwner", "apiVersion": "", "name": "", "uid": ""}],
                "creationTimestamp": "2025-01-01T00:00:00Z",
                "uid": "1a2b3c4d",
                "resourceVersion": "12345",
                "generation": 123,
                "managedFields": [{"manager": "test-manager"}],
                "deletionTimestamp": "2025-01-01T00:00:00Z",
                "deletionGracePeriodSeconds": 30,
            },
            "spec": {
                "selector": null,
                "template": {"metadata": {}, "spec": {"containers": null}},
                "strategy": {},
            },
            "status": {"replicas": 3},
        }),
    ];
    let b = bundle("1.0.0");
    let rev = revision::build(&request(&b, &objects)).unwrap();

    assert_eq!(
        rev.metadata.labels,
        Some(BTreeMap::from([
            (
                "olm.operatorframework.io/owner-kind".to_owned(),
                "ClusterExtension".to_owned()
            ),
            (
                "olm.operatorframework.io/owner-name".to_owned(),
                "test-extension".to_owned()
            ),
        ]))
    );
    assert_eq!(rev.spec.collision_protection, CollisionProtection::Prevent);
    assert_eq!(rev.spec.lifecycle_state, LifecycleState::Active);
    // Born with the teardown finalizer; an in-place patch leaves finalizers alone.
    assert_eq!(
        rev.metadata.finalizers,
        Some(vec!["olm.operatorframework.io/teardown".to_owned()])
    );
    assert_eq!(revision::in_place(&rev, &rev).metadata.finalizers, None);
    let names: Vec<&str> = rev.spec.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["infrastructure", "deploy"]);
    assert_eq!(
        object_json(&rev, 0, 0),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "test-service",
                "labels": owner_labels(),
                "annotations": {
                    "olm.operatorframework.io/bundle-version": "1.0.0",
                    "olm.operatorframework.io/package-name": "test-package",
                },
            },
            "spec": {},
        })
    );
    let mut deployment_labels = owner_labels();
    deployment_labels["my-label"] = json!("my-label-value");
    assert_eq!(
        object_json(&rev, 1, 0),
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "test-deployment",
                "namespace": "test-ns",
                "labels": deployment_labels,
                "annotations": {
                    "my-annotation": "my-annotation-value",
                    "olm.operatorframework.io/bundle-version": "1.0.0",
                    "olm.operatorframework.io/package-name": "test-package",
                },
            },
            "spec": {
                "selector": null,
                "template": {"metadata": {}, "spec": {"containers": null}},
                "strategy": {},
            },
        })
    );
    // The request's manifests are left as they were.
    assert!(objects[1]["status"].is_object());
}

/// `Test_SimpleRevisionGenerator_GenerateRevision_BundleAnnotations`: bundle properties are
/// copied to the `olm.properties` annotation, and it is absent without them.
#[test]
fn upstream_bundle_properties_become_the_olm_properties_annotation() {
    let b = bundle("1.0.0");
    let props = r#"[{"type":"olm.bundle.property","value":"some-value"},{"type":"olm.another.bundle.property","value":"some-other-value"}]"#;
    let rev = revision::build(&RevisionRequest {
        properties: Some(props),
        ..request(&b, &[])
    })
    .unwrap();
    assert_eq!(
        rev.metadata.annotations.as_ref().unwrap()["olm.properties"],
        props
    );

    let rev = revision::build(&request(&b, &[])).unwrap();
    assert!(
        !rev.metadata
            .annotations
            .as_ref()
            .unwrap()
            .contains_key("olm.properties")
    );
}

/// `Test_SimpleRevisionGenerator_AppliesObjectLabelsAndRevisionAnnotations`: the owner labels
/// join each object's own; the revision carries the bundle annotations.
#[test]
fn upstream_applies_object_labels_and_revision_annotations() {
    let objects = vec![
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "test-service", "labels": {"app": "test-obj"}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "test-configmap", "labels": {"app": "test-obj"}}}),
    ];
    let b = BundleMetadata {
        release: Some("2".into()),
        ..bundle("1.0.0+2")
    };
    let rev = revision::build(&RevisionRequest {
        service_account: Some(ServiceAccountRef {
            namespace: "test-namespace",
            name: "installer",
        }),
        ..request(&b, &objects)
    })
    .unwrap();
    let mut want_labels = owner_labels();
    want_labels["app"] = json!("test-obj");
    for p in &rev.spec.phases {
        for o in &p.objects {
            assert_eq!(
                o.object.as_ref().unwrap()["metadata"]["labels"],
                want_labels
            );
        }
    }
    let ann = rev.metadata.annotations.clone().unwrap();
    let digest = ann["olm.operatorframework.io/revision-digest"].clone();
    assert_eq!(digest, revision::content_digest(&rev.spec));
    assert!(digest.starts_with("sha256:") && digest.len() == 71);
    assert_eq!(
        ann,
        BTreeMap::from(
            [
                (
                    "olm.operatorframework.io/bundle-name",
                    "test-package.v1.0.0+2"
                ),
                ("olm.operatorframework.io/package-name", "test-package"),
                ("olm.operatorframework.io/bundle-version", "1.0.0+2"),
                (
                    "olm.operatorframework.io/bundle-reference",
                    "quay.io/example/test-package-bundle:v1.0.0"
                ),
                ("olm.operatorframework.io/bundle-release", "2"),
                (
                    "olm.operatorframework.io/service-account",
                    "test-namespace/installer"
                ),
                ("olm.operatorframework.io/revision-digest", digest.as_str()),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        )
    );
}

/// `Test_SimpleRevisionGenerator_PropagatesProgressDeadlineMinutes`.
#[test]
fn upstream_propagates_progress_deadline_minutes() {
    let b = bundle("1.0.0");
    let set = revision::build(&RevisionRequest {
        progress_deadline_minutes: 10,
        ..request(&b, &[])
    })
    .unwrap();
    assert_eq!(set.spec.progress_deadline_minutes, Some(10));
    let unset = revision::build(&request(&b, &[])).unwrap();
    assert_eq!(unset.spec.progress_deadline_minutes, None);
}

/// `Test_SimpleRevisionGenerator_Failure`'s counterpart: a manifest that is not an object is
/// an error naming it, not a panic.
#[test]
fn upstream_failure_is_an_error() {
    let b = bundle("1.0.0");
    let objects = vec![json!({"apiVersion": "v1", "kind": "ConfigMap"}), json!([1])];
    let err = revision::build(&request(&b, &objects)).unwrap_err();
    assert_eq!(
        err,
        RevisionError::NotAnObject {
            index: 1,
            kind: olm_goenc::json::Kind::Array
        }
    );
    assert_eq!(
        err.to_string(),
        "rendered manifest 1 is a JSON array, not an object"
    );
    let objects = vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"})];
    assert_eq!(
        revision::build(&request(&b, &objects))
            .unwrap_err()
            .to_string(),
        "rendered manifest 0 has metadata that is a JSON string, not an object"
    );
    assert_eq!(
        revision::build(&RevisionRequest {
            revision: 0,
            ..request(&b, &[])
        })
        .unwrap_err(),
        RevisionError::InvalidRevision(0)
    );
}

/// `TestBoxcutter_Apply` "first revision": `<ext>-1`, revision 1, controlled by the extension.
#[test]
fn upstream_first_revision() {
    assert_eq!(revision::next_revision(&[]), 1);
    let b = bundle("1.0.0");
    let rev = revision::build(&request(&b, &[])).unwrap();
    assert_eq!(rev.metadata.name.as_deref(), Some("test-extension-1"));
    assert_eq!(rev.spec.revision, 1);
    let owners = rev.metadata.owner_references.unwrap();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].api_version, "olm.operatorframework.io/v1");
    assert_eq!(owners[0].kind, "ClusterExtension");
    assert_eq!(owners[0].name, "test-extension");
    assert_eq!(owners[0].uid, "0b9c3a1e-1111-4222-8333-444455556666");
    assert_eq!(owners[0].controller, Some(true));
    assert_eq!(owners[0].block_owner_deletion, Some(true));
}

fn cm(name: &str) -> Vec<Value> {
    vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})]
}

/// `TestBoxcutter_Apply` "no change, revision exists".
#[test]
fn upstream_no_change_revision_exists() {
    let b = bundle("1.0.0");
    let objects = cm("test-cm");
    let existing = revision::build(&request(&b, &objects)).unwrap();
    // What the API server hands back: the same, with server fields and a status.
    let mut stored: ClusterObjectSet =
        serde_json::from_value(serde_json::to_value(&existing).unwrap()).unwrap();
    stored.metadata.uid = Some("rev-uid-1".into());
    stored.metadata.resource_version = Some("7".into());
    let desired = revision::build(&RevisionRequest {
        revision: revision::next_revision(std::slice::from_ref(&stored)),
        ..request(&b, &objects)
    })
    .unwrap();
    assert_eq!(revision::change(&desired, Some(&stored)), Change::Unchanged);
}

/// `TestBoxcutter_Apply` "new revision created when objects in new revision are different".
#[test]
fn upstream_new_revision_when_objects_differ() {
    let b = bundle("1.0.0");
    let objects = cm("test-cm");
    let existing = revision::build(&request(&b, &objects)).unwrap();
    let n = revision::next_revision(std::slice::from_ref(&existing));
    assert_eq!(n, 2);
    let other =
        vec![json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "new-secret"}})];
    let desired = revision::build(&RevisionRequest {
        revision: n,
        ..request(&b, &other)
    })
    .unwrap();
    assert_eq!(
        revision::change(&desired, Some(&existing)),
        Change::NewRevision
    );
    assert_eq!(desired.metadata.name.as_deref(), Some("test-extension-2"));
    assert_eq!(desired.spec.revision, 2);
}

fn existing(name: &str, revision: i64, state: LifecycleState) -> ClusterObjectSet {
    ClusterObjectSet {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        spec: ClusterObjectSetSpec {
            lifecycle_state: state,
            revision,
            phases: vec![],
            collision_protection: CollisionProtection::Prevent,
            progress_deadline_minutes: None,
            progression_probes: vec![],
        },
        status: None,
    }
}

/// `TestBoxcutter_Apply` "keep at most 5 past revisions": six archived revisions, the oldest
/// goes before revision 7 is created.
#[test]
fn upstream_keep_at_most_5_past_revisions() {
    use LifecycleState::Archived;
    let revs: Vec<_> = (1..=6)
        .map(|i| existing(&format!("rev-{i}"), i, Archived))
        .collect();
    assert_eq!(RETENTION_LIMIT, 5);
    assert_eq!(revision::to_prune(&revs), ["rev-1"]);
    assert_eq!(revision::next_revision(&revs), 7);
    // Order of the input does not matter.
    let mut shuffled = revs.clone();
    shuffled.reverse();
    assert_eq!(revision::to_prune(&shuffled), ["rev-1"]);
    assert!(revision::to_prune(&revs[..5]).is_empty());
}

/// `TestBoxcutter_Apply` "keep active revisions when they are out of limit".
#[test]
fn upstream_keep_active_revisions_when_they_are_out_of_limit() {
    use LifecycleState::{Active, Archived};
    let revs = vec![
        existing("rev-1", 1, Archived),
        existing("rev-2", 2, Active),
        existing("rev-3", 3, Active),
        existing("rev-4", 4, Archived),
        existing("rev-5", 5, Active),
        existing("rev-6", 6, Active),
        existing("rev-7", 7, Active),
    ];
    assert_eq!(revision::to_prune(&revs), ["rev-1"]);
    assert_eq!(revision::next_revision(&revs), 8);
}

/// `TestBoxcutter_Apply` "annotation-only update (same phases, different annotations)": same
/// objects, new bundle annotations ⇒ patched in place under the existing name and number.
#[test]
fn upstream_annotation_only_update() {
    let objects = cm("test-cm");
    let b1 = bundle("1.0.0");
    let latest = revision::build(&request(&b1, &objects)).unwrap();
    let desired = revision::build(&RevisionRequest {
        revision: 2,
        properties: Some("[]"),
        ..request(&b1, &objects)
    })
    .unwrap();
    assert_eq!(revision::change(&desired, Some(&latest)), Change::Patch);
    let patch = revision::in_place(&desired, &latest);
    assert_eq!(patch.metadata.name.as_deref(), Some("test-extension-1"));
    assert_eq!(patch.spec.revision, 1);
    assert_eq!(patch.spec.phases, latest.spec.phases);
    assert_eq!(
        patch.metadata.annotations.as_ref().unwrap()["olm.properties"],
        "[]"
    );
    // A new bundle version is also on every object, so it is a new revision.
    let b2 = bundle("1.0.1");
    let upgraded = revision::build(&RevisionRequest {
        revision: 2,
        ..request(&b2, &objects)
    })
    .unwrap();
    assert_eq!(
        revision::change(&upgraded, Some(&latest)),
        Change::NewRevision
    );
}

#[test]
fn mutable_fields_are_patched_and_archived_revisions_are_replaced() {
    let b = bundle("1.0.0");
    let objects = cm("test-cm");
    let latest = revision::build(&request(&b, &objects)).unwrap();
    let desired = |f: &dyn Fn(&mut RevisionRequest<'_>)| {
        let mut r = request(&b, &objects);
        f(&mut r);
        revision::build(&r).unwrap()
    };
    assert_eq!(
        revision::change(
            &desired(&|r| r.progress_deadline_minutes = 30),
            Some(&latest)
        ),
        Change::Patch
    );
    assert_eq!(
        revision::change(
            &desired(&|r| r.service_account = Some(ServiceAccountRef {
                namespace: "ns",
                name: "sa"
            })),
            Some(&latest)
        ),
        Change::Patch
    );
    assert_eq!(
        revision::change(&desired(&|r| r.bundle_image = "other:1"), Some(&latest)),
        Change::Patch
    );
    let mut archived = latest.clone();
    archived.spec.lifecycle_state = LifecycleState::Archived;
    assert_eq!(
        revision::change(&desired(&|_| {}), Some(&archived)),
        Change::NewRevision
    );
    assert_eq!(
        revision::change(&desired(&|_| {}), None),
        Change::NewRevision
    );
}

/// A revision without the digest annotation (written by another implementation) is compared
/// by content when its objects are inline, and is replaced when they are in Secrets.
#[test]
fn a_revision_without_the_digest_annotation() {
    let b = bundle("1.0.0");
    let objects = cm("test-cm");
    let desired = revision::build(&request(&b, &objects)).unwrap();
    let mut foreign = desired.clone();
    foreign
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove("olm.operatorframework.io/revision-digest");
    assert_eq!(revision::change(&desired, Some(&foreign)), Change::Patch);
    foreign.spec.phases[0].objects[0].object = None;
    foreign.spec.phases[0].objects[0].ref_ = Some(ObjectSourceRef {
        name: "test-extension-1-0011223344556677".into(),
        namespace: Some("olmv1-system".into()),
        key: "k".into(),
    });
    assert_eq!(
        revision::change(&desired, Some(&foreign)),
        Change::NewRevision
    );
}

#[test]
fn content_digest_covers_objects_not_mutable_fields() {
    let b = bundle("1.0.0");
    let a = revision::build(&request(&b, &cm("a"))).unwrap();
    let a30 = revision::build(&RevisionRequest {
        progress_deadline_minutes: 30,
        revision: 9,
        ..request(&b, &cm("a"))
    })
    .unwrap();
    let other = revision::build(&request(&b, &cm("b"))).unwrap();
    assert_eq!(
        revision::content_digest(&a.spec),
        revision::content_digest(&a30.spec)
    );
    assert_ne!(
        revision::content_digest(&a.spec),
        revision::content_digest(&other.spec)
    );
    let mut none = a.spec.clone();
    none.collision_protection = CollisionProtection::None;
    assert_ne!(
        revision::content_digest(&a.spec),
        revision::content_digest(&none)
    );
}

#[test]
fn the_same_request_gives_the_same_bytes_whatever_the_manifest_order() {
    let b = bundle("1.0.0");
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "ns"}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}}),
    ];
    let one = serde_json::to_string(&revision::build(&request(&b, &objects)).unwrap()).unwrap();
    let two = serde_json::to_string(&revision::build(&request(&b, &objects)).unwrap()).unwrap();
    assert_eq!(one, two);
    objects.reverse();
    let reversed = revision::build(&request(&b, &objects)).unwrap();
    assert_eq!(serde_json::to_string(&reversed).unwrap(), one);
}

/// `cache.ApplyStripAnnotationsTransform`: the last-applied annotation goes, and an annotation
/// map left empty goes with it (then the bundle annotations recreate it).
#[test]
fn last_applied_configuration_is_dropped() {
    let objects = vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{…}", "keep": "me"}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": "{…}"}}}),
    ];
    let b = bundle("");
    let rev = revision::build(&RevisionRequest {
        package_name: "",
        ..request(&b, &objects)
    })
    .unwrap();
    assert_eq!(
        object_json(&rev, 0, 0)["metadata"]["annotations"],
        json!({"keep": "me"})
    );
    // Nothing left, and no bundle annotations to add (empty version and package): no field.
    assert!(
        object_json(&rev, 0, 1)["metadata"]
            .get("annotations")
            .is_none()
    );

    let b = bundle("1.0.0");
    let rev = revision::build(&request(&b, &objects)).unwrap();
    assert_eq!(
        object_json(&rev, 0, 1)["metadata"]["annotations"],
        json!({
            "olm.operatorframework.io/bundle-version": "1.0.0",
            "olm.operatorframework.io/package-name": "test-package",
        })
    );
}

#[test]
fn a_manifest_without_metadata_gets_one_for_its_labels() {
    let b = bundle("1.0.0");
    let objects = vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "status": {}})];
    let rev = revision::build(&request(&b, &objects)).unwrap();
    assert_eq!(
        object_json(&rev, 0, 0),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "labels": owner_labels(),
                "annotations": {
                    "olm.operatorframework.io/bundle-version": "1.0.0",
                    "olm.operatorframework.io/package-name": "test-package",
                },
            },
        })
    );
}

/// Upstream's `defaultProgressionProbes`, field for field, as the API server receives them.
#[test]
fn default_progression_probes_as_upstream() {
    let gk = |group: &str, kind: &str| json!({"type": "GroupKind", "groupKind": {"group": group, "kind": kind}});
    let cond = |t: &str| json!({"type": "ConditionEqual", "conditionEqual": {"type": t, "status": "True"}});
    let field = |p: &str, v: &str| json!({"type": "FieldValue", "fieldValue": {"fieldPath": p, "value": v}});
    let replicas = json!({"type": "FieldsEqual", "fieldsEqual": {"fieldA": "status.updatedReplicas", "fieldB": "status.replicas"}});
    let want = json!([
        {"selector": gk("apiextensions.k8s.io", "CustomResourceDefinition"), "assertions": [cond("Established")]},
        {"selector": gk("cert-manager.io", "Certificate"), "assertions": [cond("Ready")]},
        {"selector": gk("cert-manager.io", "Issuer"), "assertions": [cond("Ready")]},
        {"selector": gk("", "Namespace"), "assertions": [field("status.phase", "Active")]},
        {"selector": gk("", "PersistentVolumeClaim"), "assertions": [field("status.phase", "Bound")]},
        {"selector": gk("apps", "StatefulSet"), "assertions": [replicas.clone(), cond("Available")]},
        {"selector": gk("apps", "Deployment"), "assertions": [replicas, cond("Available")]},
    ]);
    assert_eq!(
        serde_json::to_value(revision::default_progression_probes()).unwrap(),
        want
    );
    let b = bundle("1.0.0");
    let rev = revision::build(&request(&b, &[])).unwrap();
    assert_eq!(
        serde_json::to_value(&rev.spec.progression_probes).unwrap(),
        want
    );
}

#[test]
fn revision_names() {
    assert_eq!(revision::revision_name("my-ext", 12), "my-ext-12");
    let revs = vec![
        existing("x-3", 3, LifecycleState::Active),
        existing("x-10", 10, LifecycleState::Archived),
        existing("x-4", 4, LifecycleState::Archived),
    ];
    assert_eq!(revision::next_revision(&revs), 11);
}
