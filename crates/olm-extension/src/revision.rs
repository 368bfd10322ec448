//! A rendered bundle becomes a `ClusterObjectSet`: one immutable revision of a ClusterExtension.
//!
//! [`build`] turns the rendered objects and what resolution picked into the revision
//! `<extension>-<N>`; [`change`] tells whether it differs from the newest existing revision
//! (nothing to do, an in-place patch of the mutable fields, or a new revision); [`next_revision`]
//! numbers the next one and [`to_prune`] names the archived revisions past the retention limit.
//! [`crate::pack`] then decides whether the objects stay inline or move to Secrets.
//!
//! Upstream decides "same revision or new one" by server-side applying the desired revision
//! over the newest one and reading an `Invalid` answer (phases are immutable) as "new". Here the
//! revision carries the digest of its immutable content in the
//! [`olm_k8s::REVISION_DIGEST_ANNOTATION`] annotation, so the decision needs no request, and the
//! comparison holds even when the objects live in Secrets.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use olm_api::{
    Assertion, BundleMetadata, ClusterObjectSet, ClusterObjectSetPhase, ClusterObjectSetSpec,
    CollisionProtection, ConditionEqualProbe, FieldValueProbe, FieldsEqualProbe, GroupKind,
    LifecycleState, ObjectSelector, ProbeType, ProgressionProbe, SelectorType,
};
use olm_k8s::{
    BUNDLE_NAME_KEY, BUNDLE_REFERENCE_KEY, BUNDLE_RELEASE_KEY, BUNDLE_VERSION_KEY,
    CLUSTER_EXTENSION_KIND, LAST_APPLIED_ANNOTATION, OLM_PROPERTIES_ANNOTATION, OWNER_KIND_LABEL,
    OWNER_NAME_LABEL, PACKAGE_NAME_KEY, REVISION_DIGEST_ANNOTATION, SERVICE_ACCOUNT_ANNOTATION,
    TEARDOWN_FINALIZER,
};
use serde_json::{Map, Value};

use crate::phase;

/// How many archived revisions are kept besides the newest ones: upstream's
/// `ClusterObjectSetRetentionLimit`.
pub const RETENTION_LIMIT: usize = 5;

/// The annotations a revision's writer owns. A key of this set that the desired revision lacks
/// must be absent from the existing one too for the two to count as equal (server-side apply
/// would remove it).
const MANAGED_ANNOTATIONS: [&str; 8] = [
    BUNDLE_NAME_KEY,
    PACKAGE_NAME_KEY,
    BUNDLE_VERSION_KEY,
    BUNDLE_REFERENCE_KEY,
    BUNDLE_RELEASE_KEY,
    OLM_PROPERTIES_ANNOTATION,
    SERVICE_ACCOUNT_ANNOTATION,
    REVISION_DIGEST_ANNOTATION,
];

/// The ServiceAccount a revision's objects are applied as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceAccountRef<'a> {
    /// Its namespace (the extension's install namespace).
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
}

/// Everything a revision is made of.
#[derive(Debug, Clone, Copy)]
pub struct RevisionRequest<'a> {
    /// The owning ClusterExtension's name.
    pub extension_name: &'a str,
    /// The owning ClusterExtension's uid, for the controller owner reference.
    pub extension_uid: &'a str,
    /// The revision number N (≥ 1, see [`next_revision`]); the revision is named `<ext>-<N>`.
    pub revision: i64,
    /// The installed package.
    pub package_name: &'a str,
    /// The installed bundle's name, version and release.
    pub bundle: &'a BundleMetadata,
    /// The installed bundle's image reference.
    pub bundle_image: &'a str,
    /// The bundle's `olm.properties` annotation text, when it has one.
    pub properties: Option<&'a str>,
    /// The rendered manifests (`olm_bundle::render_bundle`), in any order.
    pub objects: &'a [Value],
    /// The extension's `spec.progressDeadlineMinutes`; copied when above zero.
    pub progress_deadline_minutes: i32,
    /// The ServiceAccount to apply the objects as, when the extension names one.
    pub service_account: Option<ServiceAccountRef<'a>>,
}

/// Why a revision cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RevisionError {
    /// The revision number is below 1, which the ClusterObjectSet API refuses.
    #[error("revision number must be at least 1, got {0}")]
    InvalidRevision(i64),
    /// A rendered manifest is not a JSON object.
    #[error("rendered manifest {index} is a JSON {kind}, not an object")]
    NotAnObject {
        /// Its position among the rendered manifests.
        index: usize,
        /// What it is instead.
        kind: olm_goenc::json::Kind,
    },
    /// A rendered manifest's `metadata` is not a JSON object.
    #[error("rendered manifest {index} has metadata that is a JSON {kind}, not an object")]
    MetadataNotAnObject {
        /// Its position among the rendered manifests.
        index: usize,
        /// What `metadata` is instead.
        kind: olm_goenc::json::Kind,
    },
}

/// The name of revision `revision` of extension `extension`: `<extension>-<revision>`.
pub fn revision_name(extension: &str, revision: i64) -> String {
    format!("{extension}-{revision}")
}

/// Builds revision N of an extension from its rendered manifests.
///
/// Flow:
/// 1. every manifest gets the owner labels (`owner-kind: ClusterExtension`, `owner-name`), over
///    any it carried;
/// 2. the `kubectl.kubernetes.io/last-applied-configuration` annotation is dropped (an emptied
///    annotation map goes with it), `status` is removed and `metadata` keeps only `name`,
///    `namespace`, `labels` and `annotations`;
/// 3. the `bundle-version` and `package-name` annotations are set on every manifest (each only
///    when non-empty);
/// 4. the manifests are grouped into phases ([`phase::sort`]);
/// 5. the revision is named `<ext>-<N>`, labelled with the owner labels, annotated with
///    `bundle-name`, `package-name`, `bundle-version`, `bundle-reference`, `bundle-release`
///    (only when the bundle has a release), `olm.properties` (only when given),
///    [`SERVICE_ACCOUNT_ANNOTATION`] `<namespace>/<name>` (only when a ServiceAccount is given)
///    and [`REVISION_DIGEST_ANNOTATION`] ([`content_digest`] of its spec), and controlled by the
///    extension (`controller` and `blockOwnerDeletion` true);
/// 6. the spec is `Active`, collision protection `Prevent`, `progressDeadlineMinutes` when the
///    extension's is above zero, and the [`default_progression_probes`].
///
/// Guarantees: the same request gives the same revision, byte for byte once serialised; the
/// manifests in the request are not modified. All objects are inline — see
/// [`crate::pack::externalize`] for moving them to Secrets.
///
/// Caveats: the API's limits (20 phases, 50 objects per phase) are left to the API server,
/// whose error the caller reports as upstream does. The service-account annotation is an
/// addition of this implementation: upstream's ClusterObjectSet controller applies with its own
/// identity.
///
/// Errors: [`RevisionError::InvalidRevision`] for N < 1; [`RevisionError::NotAnObject`] and
/// [`RevisionError::MetadataNotAnObject`] for manifests that are not Kubernetes objects.
pub fn build(req: &RevisionRequest<'_>) -> Result<ClusterObjectSet, RevisionError> {
    if req.revision < 1 {
        return Err(RevisionError::InvalidRevision(req.revision));
    }
    let mut objects = Vec::with_capacity(req.objects.len());
    for (index, manifest) in req.objects.iter().enumerate() {
        objects.push(sanitize(index, manifest, req)?);
    }
    let phases = phase::sort(objects);

    let spec = ClusterObjectSetSpec {
        lifecycle_state: LifecycleState::Active,
        revision: req.revision,
        phases,
        collision_protection: CollisionProtection::Prevent,
        progress_deadline_minutes: (req.progress_deadline_minutes > 0)
            .then_some(req.progress_deadline_minutes),
        progression_probes: default_progression_probes(),
    };

    let mut annotations = BTreeMap::new();
    annotations.insert(BUNDLE_NAME_KEY.to_owned(), req.bundle.name.clone());
    annotations.insert(PACKAGE_NAME_KEY.to_owned(), req.package_name.to_owned());
    annotations.insert(BUNDLE_VERSION_KEY.to_owned(), req.bundle.version.clone());
    annotations.insert(BUNDLE_REFERENCE_KEY.to_owned(), req.bundle_image.to_owned());
    if let Some(release) = &req.bundle.release {
        annotations.insert(BUNDLE_RELEASE_KEY.to_owned(), release.clone());
    }
    if let Some(properties) = req.properties {
        annotations.insert(OLM_PROPERTIES_ANNOTATION.to_owned(), properties.to_owned());
    }
    if let Some(sa) = req.service_account {
        annotations.insert(
            SERVICE_ACCOUNT_ANNOTATION.to_owned(),
            format!("{}/{}", sa.namespace, sa.name),
        );
    }
    annotations.insert(REVISION_DIGEST_ANNOTATION.to_owned(), content_digest(&spec));

    Ok(ClusterObjectSet {
        metadata: ObjectMeta {
            name: Some(revision_name(req.extension_name, req.revision)),
            labels: Some(owner_labels(req.extension_name)),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: format!("{}/{}", olm_api::GROUP, olm_api::VERSION),
                kind: CLUSTER_EXTENSION_KIND.to_owned(),
                name: req.extension_name.to_owned(),
                uid: req.extension_uid.to_owned(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            // Created with the teardown finalizer the ClusterObjectSet controller would add
            // first thing: one write less per install, and no window without it.
            finalizers: Some(vec![TEARDOWN_FINALIZER.to_owned()]),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    })
}

fn owner_labels(extension: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            OWNER_KIND_LABEL.to_owned(),
            CLUSTER_EXTENSION_KIND.to_owned(),
        ),
        (OWNER_NAME_LABEL.to_owned(), extension.to_owned()),
    ])
}

/// A manifest as a revision holds it (steps 1–3 of [`build`]).
fn sanitize(
    index: usize,
    manifest: &Value,
    req: &RevisionRequest<'_>,
) -> Result<Map<String, Value>, RevisionError> {
    let Value::Object(source) = manifest else {
        return Err(RevisionError::NotAnObject {
            index,
            kind: olm_goenc::json::Kind::of(manifest),
        });
    };
    let empty = Map::new();
    let metadata = match source.get("metadata") {
        None => &empty,
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(RevisionError::MetadataNotAnObject {
                index,
                kind: olm_goenc::json::Kind::of(other),
            });
        }
    };

    // Only name, namespace, labels and annotations stay: uid, resourceVersion, managedFields,
    // ownerReferences, finalizers and timestamps belong to a live object, not to a manifest.
    // Kept in byte order, and labels and annotations sorted too, so that writing the object as
    // Go JSON (for digests and Secrets) finds its metadata already in order.
    let mut kept = Map::new();
    if let Some(annotations) = annotations(metadata.get("annotations"), req) {
        kept.insert("annotations".to_owned(), annotations);
    }
    // Go reads labels as a map of strings; anything else reads as none and is replaced by the
    // owner labels alone.
    let mut labels = string_map(metadata.get("labels")).unwrap_or_default();
    for (k, v) in owner_labels(req.extension_name) {
        labels.insert(k, Value::String(v));
    }
    labels.sort_keys();
    kept.insert("labels".to_owned(), Value::Object(labels));
    for key in ["name", "namespace"] {
        if let Some(v) = metadata.get(key) {
            kept.insert(key.to_owned(), v.clone());
        }
    }

    let mut object = Map::with_capacity(source.len() + 1);
    for (k, v) in source {
        match k.as_str() {
            "status" => {}
            "metadata" => {
                object.insert(k.clone(), Value::Object(std::mem::take(&mut kept)));
            }
            _ => {
                object.insert(k.clone(), v.clone());
            }
        }
    }
    if !kept.is_empty() {
        // The manifest had no metadata: the labels create it, as Go's SetLabels does.
        object.insert("metadata".to_owned(), Value::Object(kept));
    }
    Ok(object)
}

/// An object's annotations after the last-applied annotation is dropped and the bundle ones
/// are added; `None` removes the field.
fn annotations(current: Option<&Value>, req: &RevisionRequest<'_>) -> Option<Value> {
    let mut updates = Vec::new();
    if !req.bundle.version.is_empty() {
        updates.push((BUNDLE_VERSION_KEY, req.bundle.version.as_str()));
    }
    if !req.package_name.is_empty() {
        updates.push((PACKAGE_NAME_KEY, req.package_name));
    }
    let mut map = match string_map(current) {
        Some(mut m) => {
            m.remove(LAST_APPLIED_ANNOTATION);
            m
        }
        // Not a map of strings: Go's accessors see no annotations, leave the field as it is
        // unless the bundle annotations overwrite it.
        None if updates.is_empty() => return current.cloned(),
        None => Map::new(),
    };
    for (k, v) in updates {
        map.insert(k.to_owned(), Value::String(v.to_owned()));
    }
    map.sort_keys();
    (!map.is_empty()).then_some(Value::Object(map))
}

/// A JSON object whose values are all strings, as apimachinery's `NestedStringMap` accepts it.
fn string_map(v: Option<&Value>) -> Option<Map<String, Value>> {
    match v {
        Some(Value::Object(m)) if m.values().all(Value::is_string) => Some(m.clone()),
        _ => None,
    }
}

/// The default readiness probes of every revision (upstream's `defaultProgressionProbes`):
/// CRDs `Established`, cert-manager Certificates and Issuers `Ready`, Namespaces
/// `status.phase == Active`, PersistentVolumeClaims `status.phase == Bound`, and StatefulSets
/// and Deployments with `status.updatedReplicas == status.replicas` and `Available`.
pub fn default_progression_probes() -> Vec<ProgressionProbe> {
    fn select(group: &str, kind: &str) -> ObjectSelector {
        ObjectSelector {
            type_: SelectorType::GroupKind,
            group_kind: Some(GroupKind {
                group: group.to_owned(),
                kind: kind.to_owned(),
            }),
            label: None,
        }
    }
    fn condition(type_: &str) -> Assertion {
        Assertion {
            type_: ProbeType::ConditionEqual,
            condition_equal: Some(ConditionEqualProbe {
                type_: type_.to_owned(),
                status: "True".to_owned(),
            }),
            fields_equal: None,
            field_value: None,
        }
    }
    fn field_value(path: &str, value: &str) -> Assertion {
        Assertion {
            type_: ProbeType::FieldValue,
            condition_equal: None,
            fields_equal: None,
            field_value: Some(FieldValueProbe {
                field_path: path.to_owned(),
                value: value.to_owned(),
            }),
        }
    }
    fn replicas_updated() -> Assertion {
        Assertion {
            type_: ProbeType::FieldsEqual,
            condition_equal: None,
            fields_equal: Some(FieldsEqualProbe {
                field_a: "status.updatedReplicas".to_owned(),
                field_b: "status.replicas".to_owned(),
            }),
            field_value: None,
        }
    }
    let probe = |selector, assertions| ProgressionProbe {
        selector,
        assertions,
    };
    vec![
        probe(
            select("apiextensions.k8s.io", "CustomResourceDefinition"),
            vec![condition("Established")],
        ),
        probe(
            select("cert-manager.io", "Certificate"),
            vec![condition("Ready")],
        ),
        probe(
            select("cert-manager.io", "Issuer"),
            vec![condition("Ready")],
        ),
        probe(
            select("", "Namespace"),
            vec![field_value("status.phase", "Active")],
        ),
        probe(
            select("", "PersistentVolumeClaim"),
            vec![field_value("status.phase", "Bound")],
        ),
        probe(
            select("apps", "StatefulSet"),
            vec![replicas_updated(), condition("Available")],
        ),
        probe(
            select("apps", "Deployment"),
            vec![replicas_updated(), condition("Available")],
        ),
    ]
}

/// `sha256:<hex>` of a revision's immutable content: its phases (names, per-phase and
/// per-object collision protection, and each object inline or as its Secret reference) and its
/// collision protection, written as Go JSON with sorted keys.
///
/// Equal digests mean the same objects in the same phases: applying one revision over the
/// other would not touch `spec.phases` or `spec.collisionProtection`, the fields the API keeps
/// immutable. The mutable rest (`progressDeadlineMinutes`, `progressionProbes`, annotations) is
/// compared by [`change`].
///
/// Assumption: computed on the inline revision [`build`] returns, before
/// [`crate::pack::externalize`]; a packed spec holds references, and digests differently.
pub fn content_digest(spec: &ClusterObjectSetSpec) -> String {
    let mut w = phase::HashingWriter::new();
    w.buf.push_str("{\"collisionProtection\":");
    olm_goenc::json::write_str_html(&mut w.buf, collision_text(spec.collision_protection));
    w.buf.push_str(",\"phases\":[");
    for (i, p) in spec.phases.iter().enumerate() {
        if i > 0 {
            w.buf.push(',');
        }
        write_phase(&mut w, p);
    }
    w.buf.push_str("]}");
    w.finish()
}

fn collision_text(c: CollisionProtection) -> &'static str {
    match c {
        CollisionProtection::Prevent => "Prevent",
        CollisionProtection::IfNoController => "IfNoController",
        CollisionProtection::None => "None",
    }
}

fn write_phase(w: &mut phase::HashingWriter, p: &ClusterObjectSetPhase) {
    w.buf.push('{');
    if let Some(c) = p.collision_protection {
        w.buf.push_str("\"collisionProtection\":");
        olm_goenc::json::write_str_html(&mut w.buf, collision_text(c));
        w.buf.push(',');
    }
    w.buf.push_str("\"name\":");
    olm_goenc::json::write_str_html(&mut w.buf, &p.name);
    w.buf.push_str(",\"objects\":[");
    for (i, o) in p.objects.iter().enumerate() {
        let json = &mut w.buf;
        if i > 0 {
            json.push(',');
        }
        json.push('{');
        let mut first = true;
        let mut field = |json: &mut String, name: &str| {
            if !first {
                json.push(',');
            }
            first = false;
            json.push('"');
            json.push_str(name);
            json.push_str("\":");
        };
        if let Some(c) = o.collision_protection {
            field(json, "collisionProtection");
            olm_goenc::json::write_str_html(json, collision_text(c));
        }
        if let Some(object) = &o.object {
            field(json, "object");
            phase::write_go_object(json, object);
        }
        if let Some(r) = &o.ref_ {
            field(json, "ref");
            json.push_str("{\"key\":");
            olm_goenc::json::write_str_html(json, &r.key);
            json.push_str(",\"name\":");
            olm_goenc::json::write_str_html(json, &r.name);
            json.push_str(",\"namespace\":");
            olm_goenc::json::write_str_html(json, r.namespace.as_deref().unwrap_or(""));
            json.push('}');
        }
        json.push('}');
        w.flush_if_full();
    }
    w.buf.push_str("]}");
}

/// What it takes to make the newest existing revision the desired one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The newest revision already is the desired one.
    Unchanged,
    /// Same objects; annotations, labels, `progressDeadlineMinutes` or `progressionProbes`
    /// differ and are patched in place ([`in_place`]).
    Patch,
    /// The objects differ, the newest revision is archived, or there is none: a new revision
    /// numbered [`next_revision`] is created.
    NewRevision,
}

/// Compares a desired revision (from [`build`]) with the newest existing one.
///
/// Flow:
/// 1. no existing revision ⇒ [`Change::NewRevision`];
/// 2. the existing revision is archived ⇒ [`Change::NewRevision`] (an archived revision cannot
///    be revived, as upstream's apply learns from the API server's "cannot un-archive");
/// 3. its content digest — the [`REVISION_DIGEST_ANNOTATION`], or when it lacks one and all of
///    its objects are inline, [`content_digest`] of its spec — differs from the desired one's,
///    or cannot be known (objects in Secrets and no annotation) ⇒ [`Change::NewRevision`];
/// 4. the owner labels, the annotations a revision's writer owns, `progressDeadlineMinutes` or
///    `progressionProbes` differ ⇒ [`Change::Patch`];
/// 5. otherwise [`Change::Unchanged`].
///
/// Guarantees: no API request is needed; the answer for a revision that [`build`] made and the
/// API server stored unchanged is [`Change::Unchanged`].
///
/// Assumption: `latest` is the existing revision with the highest `spec.revision`.
pub fn change(desired: &ClusterObjectSet, latest: Option<&ClusterObjectSet>) -> Change {
    let Some(latest) = latest else {
        return Change::NewRevision;
    };
    if latest.spec.lifecycle_state == LifecycleState::Archived {
        return Change::NewRevision;
    }
    let annotation = |c: &ClusterObjectSet, k: &str| {
        c.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(k))
            .cloned()
    };
    let desired_digest = annotation(desired, REVISION_DIGEST_ANNOTATION)
        .unwrap_or_else(|| content_digest(&desired.spec));
    let latest_digest = annotation(latest, REVISION_DIGEST_ANNOTATION).or_else(|| {
        let inline = latest
            .spec
            .phases
            .iter()
            .flat_map(|p| &p.objects)
            .all(|o| o.object.is_some() && o.ref_.is_none());
        inline.then(|| content_digest(&latest.spec))
    });
    if latest_digest.as_deref() != Some(desired_digest.as_str())
        || latest.spec.collision_protection != desired.spec.collision_protection
    {
        return Change::NewRevision;
    }
    let label =
        |c: &ClusterObjectSet, k: &str| c.metadata.labels.as_ref().and_then(|l| l.get(k)).cloned();
    let labels_differ = [OWNER_KIND_LABEL, OWNER_NAME_LABEL]
        .iter()
        .any(|k| label(desired, k) != label(latest, k));
    let annotations_differ = MANAGED_ANNOTATIONS
        .iter()
        .any(|k| annotation(desired, k) != annotation(latest, k));
    if labels_differ
        || annotations_differ
        || desired.spec.progress_deadline_minutes != latest.spec.progress_deadline_minutes
        || desired.spec.progression_probes != latest.spec.progression_probes
    {
        Change::Patch
    } else {
        Change::Unchanged
    }
}

/// The patch that turns `latest` into `desired` when [`change`] says [`Change::Patch`]: the
/// desired revision's metadata and mutable spec fields under `latest`'s name and number, with
/// `latest`'s phases (whether inline or in Secrets) so that the immutable fields are applied
/// unchanged.
pub fn in_place(desired: &ClusterObjectSet, latest: &ClusterObjectSet) -> ClusterObjectSet {
    let mut patch = desired.clone();
    patch.metadata.name = latest.metadata.name.clone();
    patch.spec.revision = latest.spec.revision;
    patch.spec.phases = latest.spec.phases.clone();
    // Finalizers are the ClusterObjectSet controller's to add and remove.
    patch.metadata.finalizers = None;
    patch
}

/// The number of the next revision: one above the highest existing `spec.revision`, 1 for the
/// first.
pub fn next_revision(existing: &[ClusterObjectSet]) -> i64 {
    existing
        .iter()
        .map(|c| c.spec.revision)
        .max()
        .map_or(1, |n| n.saturating_add(1))
}

/// The revisions to delete before a new one is created: archived revisions older than the
/// newest [`RETENTION_LIMIT`] existing ones, oldest first. Active revisions are never pruned,
/// however old.
///
/// `existing` may come in any order (it is ordered by `spec.revision` here); revisions without
/// a name are skipped.
pub fn to_prune(existing: &[ClusterObjectSet]) -> Vec<String> {
    let mut ordered: Vec<&ClusterObjectSet> = existing.iter().collect();
    ordered.sort_by_key(|c| c.spec.revision);
    let beyond = ordered.len().saturating_sub(RETENTION_LIMIT);
    ordered
        .into_iter()
        .take(beyond)
        .filter(|c| c.spec.lifecycle_state == LifecycleState::Archived)
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}
