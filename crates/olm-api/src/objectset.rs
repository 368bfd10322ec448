//! `ClusterObjectSet`: an immutable snapshot of the objects of one revision of a ClusterExtension,
//! applied phase by phase.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use crate::schema::{
    S, array, conditions, date_time, enumeration, free_object, integer, label_selector, object,
    string,
};

/// The desired state of a [`ClusterObjectSet`].
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[kube(
    group = "olm.operatorframework.io",
    version = "v1",
    kind = "ClusterObjectSet",
    status = "ClusterObjectSetStatus",
    schema = "disabled",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterObjectSetSpec {
    /// Active or Archived; an archived revision cannot be revived.
    pub lifecycle_state: LifecycleState,
    /// Sequence number within the owning extension, from 1. Immutable.
    pub revision: i64,
    /// Object groups applied in order. Immutable once set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<ClusterObjectSetPhase>,
    /// Default collision protection of every object. Immutable.
    pub collision_protection: CollisionProtection,
    /// Minutes after which an unfinished rollout counts as failed (10–720).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_minutes: Option<i32>,
    /// Extra readiness probes applied to the objects of every phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub progression_probes: Vec<ProgressionProbe>,
}

/// Lifecycle of a revision.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum LifecycleState {
    /// Reconciled.
    Active,
    /// Torn down except for objects a later revision took over.
    Archived,
}

/// Whether pre-existing objects may be adopted.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CollisionProtection {
    /// Only objects this revision created.
    #[default]
    Prevent,
    /// Also objects no other controller owns.
    IfNoController,
    /// Any object.
    None,
}

/// A group of objects applied together.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterObjectSetPhase {
    /// A DNS-1123 label, unique in the revision.
    pub name: String,
    /// The objects (at most 50).
    pub objects: Vec<ClusterObjectSetObject>,
    /// Default collision protection for the phase's objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_protection: Option<CollisionProtection>,
}

/// One object: embedded, or stored in a Secret.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterObjectSetObject {
    /// The object itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<serde_json::Map<String, serde_json::Value>>,
    /// A Secret key holding the object's JSON (optionally gzipped).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub ref_: Option<ObjectSourceRef>,
    /// Overrides the phase's and the spec's collision protection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_protection: Option<CollisionProtection>,
}

/// A key of a Secret.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectSourceRef {
    /// The Secret name.
    pub name: String,
    /// The Secret namespace; the system namespace when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The data key.
    pub key: String,
}

/// A readiness probe: which objects, and what must hold for them.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProgressionProbe {
    /// Which objects the assertions apply to.
    pub selector: ObjectSelector,
    /// What must hold (1–20).
    pub assertions: Vec<Assertion>,
}

/// How probe objects are selected (a union on `type`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectSelector {
    /// `GroupKind` or `Label`.
    #[serde(rename = "type")]
    pub type_: SelectorType,
    /// Required when `type` is `GroupKind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_kind: Option<GroupKind>,
    /// Required when `type` is `Label`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<LabelSelector>,
}

/// The kind of probe selector.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorType {
    /// By API group and kind.
    GroupKind,
    /// By labels.
    Label,
}

/// An API group and kind.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct GroupKind {
    /// The group (empty for the core group).
    pub group: String,
    /// The kind.
    pub kind: String,
}

/// One probe assertion (a union on `type`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Assertion {
    /// Which of the three fields is set.
    #[serde(rename = "type")]
    pub type_: ProbeType,
    /// A condition with this type has this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition_equal: Option<ConditionEqualProbe>,
    /// Two fields have equal values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields_equal: Option<FieldsEqualProbe>,
    /// A field has this value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_value: Option<FieldValueProbe>,
}

/// The kind of assertion.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeType {
    /// [`ConditionEqualProbe`].
    ConditionEqual,
    /// [`FieldsEqualProbe`].
    FieldsEqual,
    /// [`FieldValueProbe`].
    FieldValue,
}

/// A condition that must have a status.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ConditionEqualProbe {
    /// The condition type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True` or `False`.
    pub status: String,
}

/// Two fields whose values must match.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FieldsEqualProbe {
    /// A dotted path, e.g. `spec.replicas`.
    pub field_a: String,
    /// A dotted path, e.g. `status.readyReplicas`.
    pub field_b: String,
}

/// A field that must have a value.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FieldValueProbe {
    /// A dotted path, e.g. `status.phase`.
    pub field_path: String,
    /// The expected value, e.g. `Bound`.
    pub value: String,
}

/// What the revision controller observed.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterObjectSetStatus {
    /// `Progressing`, `Available`, `Succeeded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Content digests of the phases as first resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observed_phases: Vec<ObservedPhase>,
}

/// The digest of a phase's resolved objects.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ObservedPhase {
    /// The phase name.
    pub name: String,
    /// `<algorithm>:<hex>`.
    pub digest: String,
    /// When the phase first became complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
}

const DNS1123_LABEL_RULE: &str = "!format.dns1123Label().validate(self).hasValue()";
const DNS1123_LABEL_MESSAGE: &str = "the value must consist of only lowercase alphanumeric characters and hyphens, and must start and end with an alphanumeric character.";
const FIELD_PATH_RULE: &str = r"self.matches('^[a-zA-Z0-9]+(?:\\.[a-zA-Z0-9]+)*$')";
const FIELD_PATH_MESSAGE: &str = "must contain a valid field path. valid fields contain upper or lower-case alphanumeric characters separated by the \".\" character.";

fn collision_protection(doc: &str) -> S {
    enumeration(&["Prevent", "IfNoController", "None"]).doc(doc)
}

fn bounded(min: u64, max: u64, doc: &str) -> S {
    string().max_len(max).min_len(min).doc(doc)
}

fn union_member(s: S, discriminator: &str, value: &str, field: &str) -> S {
    s.cel(
        &format!("self.{discriminator} == '{value}' ?has(self.{field}) : !has(self.{field})"),
        &format!("{field} is required when {discriminator} is {value}, and forbidden otherwise"),
    )
}

pub(crate) fn spec_schema() -> S {
    let object_entry = object(vec![
        (
            "collisionProtection",
            collision_protection("collisionProtection overrides the phase's and the spec's collision protection for this object."),
        ),
        (
            "object",
            free_object()
                .embedded_resource()
                .doc("object is an embedded Kubernetes object to apply. Exactly one of object or ref must be set."),
        ),
        (
            "ref",
            object(vec![
                ("key", bounded(1, 253, "key is the data key of the Secret holding the JSON object manifest.")),
                ("name", bounded(1, 253, "name is the name of the referenced Secret.")),
                (
                    "namespace",
                    string().max_len(63).doc("namespace of the referenced Secret; the OLM system namespace when empty."),
                ),
            ])
            .required(&["key", "name"])
            .doc("ref points to a Secret key holding the object manifest. Exactly one of object or ref must be set."),
        ),
    ])
    .cel(
        "[has(self.object),has(self.ref)].filter(x,x==true).size() == 1",
        "exactly one of the fields in [object ref] must be set",
    )
    .doc("An object applied as part of a phase.");
    let phase = object(vec![
        (
            "collisionProtection",
            collision_protection("collisionProtection is the default for the objects of this phase; .spec.collisionProtection when omitted."),
        ),
        (
            "name",
            string()
                .max_len(63)
                .min_len(1)
                .cel(DNS1123_LABEL_RULE, DNS1123_LABEL_MESSAGE)
                .doc("name identifies the phase; a DNS-1123 label (e.g. namespaces, policies, rbac, crds, storage, deploy, publish)."),
        ),
        (
            "objects",
            array(object_entry).max_items(50).doc("objects are the objects of this phase, at most 50."),
        ),
    ])
    .required(&["name", "objects"])
    .doc("A group of objects applied together; the next phase starts when all of them pass their probes.");
    let path = |doc: &str| bounded(1, 200, doc).cel(FIELD_PATH_RULE, FIELD_PATH_MESSAGE);
    let assertion = object(vec![
        (
            "conditionEqual",
            object(vec![
                (
                    "status",
                    enumeration(&["True", "False"]).doc("status is the expected condition status."),
                ),
                (
                    "type",
                    bounded(
                        1,
                        200,
                        "type is the expected condition type, e.g. \"Ready\".",
                    ),
                ),
            ])
            .required(&["status", "type"])
            .doc("conditionEqual holds the expected condition type and status."),
        ),
        (
            "fieldValue",
            object(vec![
                (
                    "fieldPath",
                    path("fieldPath is the path of the field to check, e.g. \"status.phase\"."),
                ),
                (
                    "value",
                    bounded(
                        1,
                        200,
                        "value is the expected value at fieldPath, e.g. \"Bound\".",
                    ),
                ),
            ])
            .required(&["fieldPath", "value"])
            .doc("fieldValue holds a field path and the value expected there."),
        ),
        (
            "fieldsEqual",
            object(vec![
                (
                    "fieldA",
                    path("fieldA is the path of the first field, e.g. \"spec.replicas\"."),
                ),
                (
                    "fieldB",
                    path("fieldB is the path of the second field, e.g. \"status.readyReplicas\"."),
                ),
            ])
            .required(&["fieldA", "fieldB"])
            .doc("fieldsEqual holds two field paths whose values must match."),
        ),
        (
            "type",
            enumeration(&["ConditionEqual", "FieldsEqual", "FieldValue"])
                .doc("type is the kind of assertion: ConditionEqual, FieldsEqual or FieldValue."),
        ),
    ])
    .required(&["type"]);
    let assertion = union_member(assertion, "type", "ConditionEqual", "conditionEqual");
    let assertion = union_member(assertion, "type", "FieldsEqual", "fieldsEqual");
    let assertion = union_member(assertion, "type", "FieldValue", "fieldValue")
        .doc("An assertion about a selected object.");
    let selector = object(vec![
        (
            "groupKind",
            object(vec![("group", string()), ("kind", string())])
                .required(&["group", "kind"])
                .doc("groupKind selects objects of this group and kind. Required when type is \"GroupKind\"."),
        ),
        (
            "label",
            label_selector()
                .cel(
                    "(has(self.matchExpressions) && !has(self.matchLabels)) || (!has(self.matchExpressions) && has(self.matchLabels))",
                    "exactly one of matchLabels or matchExpressions must be set",
                )
                .doc("label selects objects by labels. Required when type is \"Label\"."),
        ),
        (
            "type",
            enumeration(&["GroupKind", "Label"]).doc("type is the kind of selector: GroupKind or Label."),
        ),
    ])
    .required(&["type"]);
    let selector = union_member(selector, "type", "GroupKind", "groupKind");
    let selector = union_member(selector, "type", "Label", "label").doc(
        "selector chooses the objects the assertions apply to; with no match the assertions pass.",
    );
    object(vec![
        (
            "collisionProtection",
            collision_protection(
                "collisionProtection is the default collision protection of all objects; resolution order is object > phase > spec.",
            )
            .cel("self == oldSelf", "collisionProtection is immutable"),
        ),
        (
            "lifecycleState",
            enumeration(&["Active", "Archived"])
                .cel(
                    "oldSelf == 'Active' || oldSelf == 'Archived' && oldSelf == self",
                    "cannot un-archive",
                )
                .doc(
                    "lifecycleState is \"Active\" (reconciled) or \"Archived\" (torn down, except objects a later revision \
                     took over). An archived revision cannot be un-archived.",
                ),
        ),
        (
            "phases",
            array(phase)
                .max_items(20)
                .list_map(&["name"])
                .cel("self == oldSelf || oldSelf.size() == 0", "phases is immutable")
                .doc("phases are the object groups rolled out in order; at most 20, unique names, immutable once set."),
        ),
        (
            "progressDeadlineMinutes",
            integer("int32").max(720).min(10).doc(
                "progressDeadlineMinutes is how long, in minutes (10 to 720), a rollout may take before it is considered failed.",
            ),
        ),
        (
            "progressionProbes",
            array(
                object(vec![
                    (
                        "assertions",
                        array(assertion)
                            .max_items(20)
                            .min_items(1)
                            .atomic_list()
                            .doc("assertions must all pass for a selected object's phase to be ready."),
                    ),
                    ("selector", selector),
                ])
                .required(&["assertions", "selector"])
                .doc("A probe: a selector and assertions."),
            )
            .max_items(20)
            .min_items(1)
            .atomic_list()
            .doc("progressionProbes are readiness probes applied to the objects of every phase; at most 20."),
        ),
        (
            "revision",
            integer("int64")
                .min(1)
                .cel("self == oldSelf", "revision is immutable")
                .doc("revision is the immutable sequence number of this revision of its ClusterExtension: previous + 1, or 1."),
        ),
    ])
    .required(&["collisionProtection", "lifecycleState", "revision"])
    .doc("spec is the desired state of the ClusterObjectSet.")
}

pub(crate) fn status_schema() -> S {
    let observed = object(vec![
        (
            "completedAt",
            date_time().doc("completedAt is when this phase first became complete; set once."),
        ),
        (
            "digest",
            bounded(1, 256, "digest of the phase's resolved objects, \"<algorithm>:<hex>\".")
                .cel(
                    "self.matches('^[a-z0-9]+:[a-f0-9]+$')",
                    "digest must be in the format '<algorithm>:<hex>'",
                )
                .cel("self == oldSelf", "digest is immutable"),
        ),
        (
            "name",
            bounded(1, 63, "name of the phase in spec.phases.")
                .cel(DNS1123_LABEL_RULE, DNS1123_LABEL_MESSAGE)
                .cel("self == oldSelf", "name is immutable"),
        ),
    ])
    .required(&["digest", "name"])
    .cel(
        "!has(oldSelf.completedAt) || (has(self.completedAt) && self.completedAt == oldSelf.completedAt)",
        "completedAt is immutable once set",
    )
    .doc("The observed content digest of a resolved phase.");
    object(vec![
        (
            "conditions",
            conditions("conditions are Progressing, Available and Succeeded."),
        ),
        (
            "observedPhases",
            array(observed)
                .max_items(20)
                .list_map(&["name"])
                .cel(
                    "oldSelf.size() == 0 || (self.size() == oldSelf.size() && oldSelf.all(o, self.exists(n, n.name == o.name)))",
                    "observedPhases: phases cannot be added or removed once set",
                )
                .doc("observedPhases are the content digests of the phases at their first successful resolution."),
        ),
    ])
    .doc("status is the observed state of the ClusterObjectSet.")
}
