//! The InstallPlan steps catalog-operator plans for a resolved operator (OLM repo
//! `pkg/controller/registry/resolver/steps.go`, `rbac.go`, the step-building part of
//! `step_resolver.go`; the API repo's `pkg/operators/v1alpha1/installplan_types.go` for the
//! step's JSON and `OrderSteps`).
//!
//! A bundle whose manifests are known becomes, in this order ([`bundle_steps`]):
//!
//! 1. its CSV, placed in the install namespace, `spec.replaces` set to what the resolver chose
//!    (not what the bundle says: the resolver may skip versions), and the resolved properties in
//!    the annotation [`PROPERTIES_ANNOTATION`], so olm-operator and later resolutions see the
//!    same properties the resolver did;
//! 2. every other bundle object (a Secret under the kind [`BUNDLE_SECRET_KIND`], so that
//!    catalog-operator tells bundle Secrets from the pull secrets it copies itself);
//! 3. the RBAC of the CSV's install strategy ([`rbac_objects`]): per ServiceAccount, the account
//!    (unless it is `default`, which every namespace has), a Role and RoleBinding per
//!    `permissions` entry and a ClusterRole and ClusterRoleBinding per `clusterPermissions`
//!    entry. The objects exist before the CSV's Deployments do, so the operator starts with its
//!    permissions, and olm-operator's permission check finds them.
//!
//! A dependency the resolver pulled in with no Subscription behind it gets a Subscription of
//! its own ([`subscription_step`]), so that it is upgraded like anything the user subscribed
//! to. [`order_steps`] then puts CSVs first and CRDs second: the CSV must exist for the other
//! objects' owner references, and CRDs must be served before their custom resources.
//!
//! How upstream writes a step's `manifest`, reproduced here: Go's `json.Encoder` (HTML
//! characters escaped, a trailing newline) over the object. Bundle objects other than the CSV
//! are untyped maps there, so their keys come out sorted. The generated ServiceAccount, RBAC and
//! Subscription objects are Go structs, written in their field order with their `omitempty`
//! rules, and before their kind is filled in: their manifests carry no `apiVersion` or `kind`
//! (the step's `group`, `version` and `kind` say what they are; [`StepResource::object`] puts
//! them back).
//!
//! Differences from upstream, deliberate:
//!
//! - Upstream decodes the CSV into its Go struct and writes that back, so the manifest has the
//!   struct's field order, drops fields the struct does not know and adds empty ones (`status:
//!   {cleanup: {}}`). Reproducing that needs the layout of every nested Kubernetes type; here
//!   the CSV is written with its keys in the order it came in, unknown fields kept. Whoever
//!   reads the manifest decodes it, so the two are interchangeable; only the bytes differ.
//! - Upstream collects the RBAC per ServiceAccount in a Go map and walks it in Go's random map
//!   order, so the order of the accounts' steps changes from one resolution to the next. Here
//!   the accounts come in the order the CSV first names them (`permissions`, then
//!   `clusterPermissions`).
//! - The 63-character cut of generated names is at a character boundary (upstream cuts bytes,
//!   which can split a multi-byte character; such names are invalid either way).
//!
//! Quirks kept, since the names are what the cluster holds: the cut is skipped when the base
//! and the hash together are exactly 63 characters, which makes a 64-character name; a
//! ClusterRoleBinding carries the CSV's namespace although it is cluster-scoped; an account only
//! `clusterPermissions` names gets no namespace; and in a CSV with no namespace a Role and a
//! ClusterRole for the same rules can get the same name.

use std::collections::BTreeMap;

use olm_goenc::json::{sort_keys, write_value_html};
use serde_json::{Map, Value};

use crate::olm_operator::conditiongen::DEFAULT_SERVICE_ACCOUNT;
use crate::olm_operator::inject::{
    ShapeError, array, as_object, object, string, string_map, to_object,
};
use crate::olm_operator::operatorgroup::{OWNER_KIND_LABEL, OWNER_LABEL, OWNER_NAMESPACE_LABEL};
use crate::olm_operator::rbac::hash;
use crate::olm_operator::strategy::{CSV_KIND, STRATEGY_NAME, StrategyError};

/// The kind upstream gives a Secret shipped in a bundle, to tell it from a pull secret.
pub const BUNDLE_SECRET_KIND: &str = "BundleSecret";
/// The kind that becomes [`BUNDLE_SECRET_KIND`].
pub const SECRET_KIND: &str = "Secret";
/// The kind [`order_steps`] puts second.
pub const CRD_KIND: &str = "CustomResourceDefinition";
/// The CSV annotation holding the resolved bundle's properties (`{"properties":[…]}`).
pub const PROPERTIES_ANNOTATION: &str = "operatorframework.io/properties";
/// The label holding a digest of a generated Role's rules or a binding's role and subjects.
pub const CONTENT_HASH_LABEL: &str = "olm.permissions.hash";
/// The longest generated Role or ClusterRole name (upstream's `maxNameLength`), bar the quirk
/// in the module documentation.
pub const MAX_NAME_LENGTH: usize = 63;
/// The API group of Roles, ClusterRoles and their bindings.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The API group of CSVs and Subscriptions.
pub const OPERATORS_GROUP: &str = "operators.coreos.com";
/// The version of CSVs and Subscriptions.
pub const OPERATORS_VERSION: &str = "v1alpha1";
/// The Subscription kind.
pub const SUBSCRIPTION_KIND: &str = "Subscription";
/// The approval of a Subscription made for a dependency.
pub const APPROVAL_AUTOMATIC: &str = "Automatic";

/// What a step creates and where it came from (upstream's `StepResource`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepResource {
    /// The CatalogSource the bundle came from (`sourceName`).
    pub source_name: String,
    /// Its namespace (`sourceNamespace`).
    pub source_namespace: String,
    /// The object's API group (`""` for core kinds).
    pub group: String,
    /// The object's API version.
    pub version: String,
    /// The object's kind ([`BUNDLE_SECRET_KIND`] for a bundle Secret).
    pub kind: String,
    /// The object's name (its `generateName` when it has no name).
    pub name: String,
    /// The object as JSON text; see the module documentation for its exact form.
    pub manifest: String,
}

/// Where a step stands (upstream's `StepStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StepStatus {
    /// Not looked at yet: every step is planned so.
    #[default]
    Unknown,
    /// The object does not exist.
    NotPresent,
    /// The object exists.
    Present,
    /// catalog-operator created the object.
    Created,
    /// The object could not be created.
    NotCreated,
    /// The object's API is not served yet (a CRD just created).
    WaitingForApi,
    /// catalog-operator does not create objects of this kind.
    UnsupportedResource,
}

impl StepStatus {
    /// Every status, in upstream's declaration order.
    pub const ALL: [StepStatus; 7] = [
        StepStatus::Unknown,
        StepStatus::NotPresent,
        StepStatus::Present,
        StepStatus::Created,
        StepStatus::NotCreated,
        StepStatus::WaitingForApi,
        StepStatus::UnsupportedResource,
    ];

    /// The status as the InstallPlan spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Unknown => "Unknown",
            StepStatus::NotPresent => "NotPresent",
            StepStatus::Present => "Present",
            StepStatus::Created => "Created",
            StepStatus::NotCreated => "NotCreated",
            StepStatus::WaitingForApi => "WaitingForApi",
            StepStatus::UnsupportedResource => "UnsupportedResource",
        }
    }

    /// The status spelled `s`, if it is one.
    pub fn parse(s: &str) -> Option<StepStatus> {
        StepStatus::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// One entry of an InstallPlan's `status.plan` (upstream's `Step`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Step {
    /// The CSV whose installation needs the object.
    pub resolving: String,
    /// The object.
    pub resource: StepResource,
    /// Whether the plan may go on without it.
    pub optional: bool,
    /// Where it stands.
    pub status: StepStatus,
}

/// Why steps could not be planned or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StepsError {
    /// No object of the bundle is a CSV (upstream reads the CSV apart from the other objects,
    /// so it has no message of its own for this).
    #[error("bundle has no ClusterServiceVersion among its {count} objects")]
    NoCsv {
        /// How many objects the bundle has.
        count: usize,
    },
    /// The CSV has no `apiVersion`; upstream's words.
    #[error("bundle CSV {name} missing APIVersion")]
    CsvMissingApiVersion {
        /// The CSV's name.
        name: String,
    },
    /// The CSV (an `operators.coreos.com` object) has no `kind`; upstream's words.
    #[error("bundle CSV {name} missing Kind")]
    CsvMissingKind {
        /// The CSV's name.
        name: String,
    },
    /// A bundle object has no kind, or an `apiVersion` with more than one `/` (which hides the
    /// kind from apimachinery); apimachinery's words, with the object.
    #[error("Object 'Kind' is missing in '{data}'")]
    MissingKind {
        /// The object's position in the bundle.
        index: usize,
        /// The object as JSON.
        data: String,
    },
    /// The CSV's install strategy is not `deployment` (upstream's `unrecognized install
    /// strategy`).
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// A value of the wrong JSON type, with what holds it (`bundle object 2`, `bundle CSV
    /// etcdoperator.v0.9.4`, `step`) and where inside.
    #[error("{place}: {source}")]
    Shape {
        /// What holds the value.
        place: String,
        /// The value's path and types.
        source: ShapeError,
    },
    /// A step's `status` is none of [`StepStatus::ALL`].
    #[error("step status: unknown status {value:?}")]
    UnknownStatus {
        /// What the status said (empty when missing).
        value: String,
    },
    /// A step's manifest is not a JSON object.
    #[error("step {name}: manifest is not a JSON object: {message}")]
    Manifest {
        /// The step's resource name.
        name: String,
        /// What is wrong with it.
        message: String,
    },
}

fn shape(place: impl Into<String>) -> impl FnOnce(ShapeError) -> StepsError {
    let place = place.into();
    move |source| StepsError::Shape { place, source }
}

impl Step {
    /// The step as the InstallPlan holds it: `resolving`, `resource` (`sourceName`,
    /// `sourceNamespace`, `group`, `version`, `kind`, `name`, `manifest` unless empty),
    /// `optional` when true, `status`.
    pub fn to_json(&self) -> Value {
        let r = &self.resource;
        let mut resource = Map::new();
        for (key, value) in [
            ("sourceName", &r.source_name),
            ("sourceNamespace", &r.source_namespace),
            ("group", &r.group),
            ("version", &r.version),
            ("kind", &r.kind),
            ("name", &r.name),
        ] {
            resource.insert(key.to_owned(), Value::String(value.clone()));
        }
        if !r.manifest.is_empty() {
            resource.insert("manifest".to_owned(), Value::String(r.manifest.clone()));
        }
        let mut step = Map::new();
        step.insert(
            "resolving".to_owned(),
            Value::String(self.resolving.clone()),
        );
        step.insert("resource".to_owned(), Value::Object(resource));
        if self.optional {
            step.insert("optional".to_owned(), Value::Bool(true));
        }
        step.insert(
            "status".to_owned(),
            Value::String(self.status.as_str().to_owned()),
        );
        Value::Object(step)
    }

    /// Reads a step as the InstallPlan holds it. Missing or `null` strings read as empty and
    /// a missing `optional` as false, as Go decodes them.
    ///
    /// # Errors
    ///
    /// [`StepsError::Shape`] for a value of the wrong type (with its path),
    /// [`StepsError::UnknownStatus`] for a status that is missing or not one of upstream's.
    pub fn from_json(value: &Value) -> Result<Step, StepsError> {
        let place = "step";
        let step = as_object(value, "").map_err(shape(place))?;
        let resource = object(step, "resource", "")
            .map_err(shape(place))?
            .cloned()
            .unwrap_or_default();
        let field = |key: &str| -> Result<String, StepsError> {
            string(&resource, key, "resource")
                .map(str::to_owned)
                .map_err(shape(place))
        };
        let optional = match step.get("optional") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            other => {
                return Err(StepsError::Shape {
                    place: place.to_owned(),
                    source: ShapeError {
                        path: "optional".to_owned(),
                        expected: "a boolean",
                        found: crate::olm_operator::inject::describe(other),
                    },
                });
            }
        };
        let status = string(step, "status", "").map_err(shape(place))?;
        Ok(Step {
            resolving: string(step, "resolving", "")
                .map_err(shape(place))?
                .to_owned(),
            resource: StepResource {
                source_name: field("sourceName")?,
                source_namespace: field("sourceNamespace")?,
                group: field("group")?,
                version: field("version")?,
                kind: field("kind")?,
                name: field("name")?,
                manifest: field("manifest")?,
            },
            optional,
            status: StepStatus::parse(status).ok_or_else(|| StepsError::UnknownStatus {
                value: status.to_owned(),
            })?,
        })
    }
}

impl StepResource {
    /// The manifest as an object ready to apply: `apiVersion` and `kind` filled in from the
    /// step when the manifest lacks them (the generated objects do), a bundle Secret's kind back
    /// to `Secret`.
    ///
    /// # Errors
    ///
    /// [`StepsError::Manifest`] when the manifest is not a JSON object.
    pub fn object(&self) -> Result<Value, StepsError> {
        let bad = |message: String| StepsError::Manifest {
            name: self.name.clone(),
            message,
        };
        let value: Value = serde_json::from_str(&self.manifest).map_err(|e| bad(e.to_string()))?;
        let Value::Object(mut object) = value else {
            return Err(bad(format!(
                "found {}",
                crate::olm_operator::inject::describe(Some(&value))
            )));
        };
        let kind = if self.kind == BUNDLE_SECRET_KIND {
            SECRET_KIND
        } else {
            &self.kind
        };
        let api_version = if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        };
        let mut out = Map::new();
        for (key, default) in [("apiVersion", api_version), ("kind", kind.to_owned())] {
            let value = match object.shift_remove(key) {
                Some(Value::String(s)) if !s.is_empty() => Value::String(s),
                _ => Value::String(default),
            };
            out.insert(key.to_owned(), value);
        }
        // Kinds upstream decodes into its own types whatever apiVersion the manifest names
        // (ConfigMap catalogs carry CSVs with `apiVersion: v1alpha1`): created at the version
        // upstream's typed clients use.
        if let Some(typed) = typed_api_version(kind) {
            out.insert("apiVersion".to_owned(), Value::String(typed.to_owned()));
        }
        // CRDs: upstream picks its v1 or v1beta1 typed client by the step's version, whatever
        // the manifest's apiVersion says (its e2e suite writes `apiVersion: v1`).
        if kind == CRD_KIND && matches!(self.version.as_str(), "v1" | "v1beta1") {
            out.insert(
                "apiVersion".to_owned(),
                Value::String(format!("apiextensions.k8s.io/{}", self.version)),
            );
        }
        out.extend(object);
        Ok(Value::Object(out))
    }
}

/// The apiVersion an InstallPlan step of `kind` is created at when upstream's `ExecutePlan`
/// decodes its manifest into a typed object (CSVs, Subscriptions, Secrets, ConfigMaps,
/// ServiceAccounts, Services and RBAC), so the manifest's own apiVersion does not matter;
/// `None` for kinds created as the manifest says (every other supported kind, created
/// dynamically) and for CRDs, whose version comes from the step (see [`StepResource::object`]).
pub fn typed_api_version(kind: &str) -> Option<&'static str> {
    match kind {
        "ClusterServiceVersion" | "Subscription" => Some("operators.coreos.com/v1alpha1"),
        "Secret" | "ConfigMap" | "ServiceAccount" | "Service" => Some("v1"),
        "ClusterRole" | "ClusterRoleBinding" | "Role" | "RoleBinding" => {
            Some("rbac.authorization.k8s.io/v1")
        }
        _ => None,
    }
}

/// `v` as Go's `json.Encoder` writes it: compact, HTML characters escaped, a newline after.
fn encode(v: &Value) -> String {
    let mut out = String::new();
    write_value_html(&mut out, v);
    out.push('\n');
    out
}

/// `v` as `json.Marshal` writes it: [`encode`] without the newline.
fn marshal(v: &Value) -> String {
    let mut out = String::new();
    write_value_html(&mut out, v);
    out
}

/// Group and version of an `apiVersion` as apimachinery parses it; `None` for more than one
/// `/`.
fn parse_group_version(api_version: &str) -> Option<(&str, &str)> {
    if api_version.is_empty() || api_version == "/" {
        return Some(("", ""));
    }
    match api_version.split_once('/') {
        None => Some(("", api_version)),
        Some((_, rest)) if rest.contains('/') => None,
        Some(pair) => Some(pair),
    }
}

/// A step planned for `resolving`: status `Unknown`, a Secret's kind made
/// [`BUNDLE_SECRET_KIND`].
fn step(
    resolving: &str,
    (group, version, kind): (&str, &str, &str),
    name: &str,
    manifest: String,
    (source_name, source_namespace): (&str, &str),
) -> Step {
    Step {
        resolving: resolving.to_owned(),
        resource: StepResource {
            source_name: source_name.to_owned(),
            source_namespace: source_namespace.to_owned(),
            group: group.to_owned(),
            version: version.to_owned(),
            kind: if kind == SECRET_KIND {
                BUNDLE_SECRET_KIND.to_owned()
            } else {
                kind.to_owned()
            },
            name: name.to_owned(),
            manifest,
        },
        optional: false,
        status: StepStatus::Unknown,
    }
}

/// `metadata.name` of an object, or its `generateName` when it has none (what a step is named
/// by); `""` when it has neither.
fn object_name(obj: &Map<String, Value>, place: &str) -> Result<String, StepsError> {
    let Some(meta) = object(obj, "metadata", "").map_err(shape(place))? else {
        return Ok(String::new());
    };
    let name = string(meta, "name", "metadata").map_err(shape(place))?;
    if !name.is_empty() {
        return Ok(name.to_owned());
    }
    Ok(string(meta, "generateName", "metadata")
        .map_err(shape(place))?
        .to_owned())
}

/// The string under `key`, or `""` when it is missing or not a string (how apimachinery reads
/// an untyped object's `kind` and `apiVersion`).
fn loose_string<'a>(object: &'a Map<String, Value>, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Where the CSV is among `objects`: the first of kind `ClusterServiceVersion`.
///
/// # Errors
///
/// [`StepsError::CsvMissingKind`] when none is, but an `operators.coreos.com` object without
/// a kind is there; [`StepsError::NoCsv`] otherwise.
fn find_csv(objects: &[Value]) -> Result<usize, StepsError> {
    let is_csv = |v: &Value| v.get("kind").and_then(Value::as_str) == Some(CSV_KIND);
    if let Some(i) = objects.iter().position(is_csv) {
        return Ok(i);
    }
    let kindless = objects.iter().find_map(|v| {
        let o = v.as_object()?;
        let group = loose_string(o, "apiVersion").split('/').next()?;
        (group == OPERATORS_GROUP && loose_string(o, "kind").is_empty()).then_some(o)
    });
    match kindless {
        Some(o) => Err(StepsError::CsvMissingKind {
            name: object_name(o, "bundle CSV")?,
        }),
        None => Err(StepsError::NoCsv {
            count: objects.len(),
        }),
    }
}

/// The object under `key` of `parent`, created when missing or `null`.
fn child<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
    place: &str,
) -> Result<&'a mut Map<String, Value>, StepsError> {
    let slot = parent.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(m) => Ok(m),
        other => Err(StepsError::Shape {
            place: place.to_owned(),
            source: ShapeError {
                path: key.to_owned(),
                expected: "an object",
                found: crate::olm_operator::inject::describe(Some(other)),
            },
        }),
    }
}

/// The steps for one resolved bundle (upstream's `NewStepsFromBundle`): the CSV, every other
/// object, then the CSV's RBAC, each resolving the CSV, from `source_name` in
/// `source_namespace`, status `Unknown`. `objects` are the bundle's manifests, the CSV among
/// them; `namespace` is where it installs; `replaces` the CSV the resolver says it replaces
/// (empty for none); `properties` the properties annotation text.
///
/// # Errors
///
/// [`StepsError::NoCsv`], [`StepsError::CsvMissingApiVersion`],
/// [`StepsError::CsvMissingKind`], [`StepsError::MissingKind`] for a bundle object without a
/// kind, [`StepsError::Strategy`] for an install strategy other than `deployment`, and
/// [`StepsError::Shape`] for a value of the wrong JSON type.
pub fn bundle_steps(
    objects: &[Value],
    namespace: &str,
    replaces: &str,
    properties: &str,
    source_name: &str,
    source_namespace: &str,
) -> Result<Vec<Step>, StepsError> {
    let source = (source_name, source_namespace);
    let index = find_csv(objects)?;
    let place = format!("bundle object {index}");
    let mut csv = as_object(&objects[index], "")
        .map_err(shape(place.as_str()))?
        .clone();
    // The CSV's name: what its steps resolve and its errors name; the step itself is named
    // like any object (its `generateName` when it has no name).
    let step_name = object_name(&csv, &place)?;
    let csv_name = match csv.get("metadata").and_then(|m| m.get("name")) {
        Some(Value::String(name)) => name.clone(),
        _ => String::new(),
    };
    let place = format!("bundle CSV {csv_name}");
    let api_version = string(&csv, "apiVersion", "").map_err(shape(place.as_str()))?;
    if api_version.is_empty() {
        return Err(StepsError::CsvMissingApiVersion { name: csv_name });
    }
    let (group, version) = parse_group_version(api_version).unwrap_or(("", ""));
    let (group, version) = (group.to_owned(), version.to_owned());

    let meta = child(&mut csv, "metadata", &place)?;
    meta.insert("namespace".to_owned(), Value::String(namespace.to_owned()));
    // Checked as Go's typed decoding would: a map of strings.
    string_map(meta, "annotations", "metadata").map_err(shape(place.as_str()))?;
    let mut annotations = meta
        .get("annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.insert(
        PROPERTIES_ANNOTATION.to_owned(),
        Value::String(properties.to_owned()),
    );
    meta.insert("annotations".to_owned(), Value::Object(annotations));
    let spec = child(&mut csv, "spec", &place)?;
    if replaces.is_empty() {
        spec.shift_remove("replaces");
    } else {
        spec.insert("replaces".to_owned(), Value::String(replaces.to_owned()));
    }
    let csv = Value::Object(csv);

    let mut steps = vec![step(
        &csv_name,
        (&group, &version, CSV_KIND),
        &step_name,
        encode(&csv),
        source,
    )];
    for (i, value) in objects.iter().enumerate() {
        let place = format!("bundle object {i}");
        let obj = as_object(value, "").map_err(shape(place.as_str()))?;
        let gv = parse_group_version(loose_string(obj, "apiVersion"));
        let kind = loose_string(obj, "kind");
        let Some((group, version)) = gv.filter(|_| !kind.is_empty()) else {
            return Err(StepsError::MissingKind {
                index: i,
                data: marshal(value),
            });
        };
        if kind == CSV_KIND {
            continue;
        }
        let name = object_name(obj, &place)?;
        steps.push(step(
            &csv_name,
            (group, version, kind),
            &name,
            encode(&sort_keys(value)),
            source,
        ));
    }
    for object in rbac_objects(&csv)? {
        steps.push(step(
            &csv_name,
            object.gvk(),
            &object.name,
            encode(&object.manifest),
            source,
        ));
    }
    Ok(steps)
}

/// One `rbacv1.PolicyRule`, as Go decodes it: a missing list is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct PolicyRule {
    verbs: Option<Vec<String>>,
    api_groups: Option<Vec<String>>,
    resources: Option<Vec<String>>,
    resource_names: Option<Vec<String>>,
    non_resource_urls: Option<Vec<String>>,
}

impl PolicyRule {
    /// The rule's JSON keys, in the Go struct's field order.
    const KEYS: [&'static str; 5] = [
        "verbs",
        "apiGroups",
        "resources",
        "resourceNames",
        "nonResourceURLs",
    ];

    fn read(v: &Value, path: &str) -> Result<PolicyRule, ShapeError> {
        let rule = as_object(v, path)?;
        let list = |key: &str| -> Result<Option<Vec<String>>, ShapeError> {
            let Some(items) = array(rule, key, path)? else {
                return Ok(None);
            };
            items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    // Go decodes `null` into a string slot as "".
                    Value::Null => Ok(String::new()),
                    other => Err(ShapeError {
                        path: format!("{path}.{key}[{i}]"),
                        expected: "a string",
                        found: crate::olm_operator::inject::describe(Some(other)),
                    }),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        };
        let [
            verbs,
            api_groups,
            resources,
            resource_names,
            non_resource_urls,
        ] = Self::KEYS;
        Ok(PolicyRule {
            verbs: list(verbs)?,
            api_groups: list(api_groups)?,
            resources: list(resources)?,
            resource_names: list(resource_names)?,
            non_resource_urls: list(non_resource_urls)?,
        })
    }

    /// As Go writes it: `verbs` always (`null` when missing), the others only when non-empty.
    fn to_go(&self) -> Value {
        let strings =
            |v: &Vec<String>| Value::Array(v.iter().cloned().map(Value::String).collect());
        let mut m = Map::new();
        m.insert(
            "verbs".to_owned(),
            self.verbs.as_ref().map_or(Value::Null, strings),
        );
        let rest = [
            &self.api_groups,
            &self.resources,
            &self.resource_names,
            &self.non_resource_urls,
        ];
        for (key, list) in Self::KEYS[1..].iter().zip(rest) {
            if let Some(list) = list.as_ref().filter(|l| !l.is_empty()) {
                m.insert((*key).to_owned(), strings(list));
            }
        }
        Value::Object(m)
    }
}

/// One `permissions[]` or `clusterPermissions[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Permission {
    service_account: String,
    rules: Option<Vec<PolicyRule>>,
}

impl Permission {
    /// The rules as Go writes a `[]rbacv1.PolicyRule` (`null` when missing).
    fn rules_go(&self) -> Value {
        self.rules.as_ref().map_or(Value::Null, |rules| {
            Value::Array(rules.iter().map(PolicyRule::to_go).collect())
        })
    }

    /// As Go writes a `StrategyDeploymentPermissions`: the input of the name hashes.
    fn to_go(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "serviceAccountName".to_owned(),
            Value::String(self.service_account.clone()),
        );
        m.insert("rules".to_owned(), self.rules_go());
        Value::Object(m)
    }
}

/// The entries of `spec.install.spec.<list>`.
fn permissions(
    strategy: Option<&Map<String, Value>>,
    list: &str,
) -> Result<Vec<Permission>, ShapeError> {
    let Some(strategy) = strategy else {
        return Ok(Vec::new());
    };
    let path = format!("spec.install.spec.{list}");
    let mut out = Vec::new();
    for (i, entry) in array(strategy, list, "spec.install.spec")?
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("{path}[{i}]");
        let entry = as_object(entry, &at)?;
        let rules = match array(entry, "rules", &at)? {
            None => None,
            Some(rules) => Some(
                rules
                    .iter()
                    .enumerate()
                    .map(|(j, r)| PolicyRule::read(r, &format!("{at}.rules[{j}]")))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        out.push(Permission {
            service_account: string(entry, "serviceAccountName", &at)?.to_owned(),
            rules,
        });
    }
    Ok(out)
}

/// `base-<hash of encoded>`, `base` cut so that the whole stays within
/// [`MAX_NAME_LENGTH`] (upstream's `generateName`; see the module documentation for the
/// off-by-one it keeps). `encoded` is the Go JSON of what the name stands for.
pub fn generate_name(base: &str, encoded: &Value) -> String {
    let digest = hash(&encode(encoded));
    let mut base = base;
    if base.len() + digest.len() > MAX_NAME_LENGTH {
        let mut cut = MAX_NAME_LENGTH.saturating_sub(digest.len() + 1);
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        base = base.get(..cut).unwrap_or_default();
    }
    format!("{base}-{digest}")
}

/// A generated object: its kind, name and manifest (without `apiVersion` and `kind`, as
/// upstream writes it).
#[derive(Debug, Clone, PartialEq)]
pub struct RbacObject {
    /// `ServiceAccount`, `Role`, `RoleBinding`, `ClusterRole` or `ClusterRoleBinding`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// The object, fields in the Go struct's order.
    pub manifest: Value,
}

impl RbacObject {
    /// Group, version and kind of the object.
    pub fn gvk(&self) -> (&'static str, &'static str, &'static str) {
        if self.kind == "ServiceAccount" {
            ("", "v1", self.kind)
        } else {
            (RBAC_GROUP, "v1", self.kind)
        }
    }
}

/// The objects one ServiceAccount gets, in upstream's order within an account.
#[derive(Default)]
struct AccountObjects {
    account: Option<RbacObject>,
    roles: Vec<RbacObject>,
    role_bindings: Vec<RbacObject>,
    cluster_roles: Vec<RbacObject>,
    cluster_role_bindings: Vec<RbacObject>,
}

/// What generated objects need to know of their CSV.
struct Owner {
    name: String,
    namespace: String,
    labels: BTreeMap<String, String>,
    reference: Value,
}

impl Owner {
    fn of(csv: &Map<String, Value>) -> Result<Owner, StepsError> {
        let meta = object(csv, "metadata", "")
            .map_err(shape("bundle CSV"))?
            .cloned()
            .unwrap_or_default();
        let name = string(&meta, "name", "metadata")
            .map_err(shape("bundle CSV"))?
            .to_owned();
        let place = format!("bundle CSV {name}");
        let namespace = string(&meta, "namespace", "metadata")
            .map_err(shape(place.as_str()))?
            .to_owned();
        let uid = string(&meta, "uid", "metadata").map_err(shape(place.as_str()))?;
        // Upstream's owner reference is built from the CSV's parsed group, version and kind.
        let kind = string(csv, "kind", "").map_err(shape(place.as_str()))?;
        let api_version = match parse_group_version(loose_string(csv, "apiVersion")) {
            Some(("", version)) => version.to_owned(),
            Some((group, version)) => format!("{group}/{version}"),
            None => String::new(),
        };
        let mut reference = Map::new();
        for (key, value) in [
            ("apiVersion", api_version.as_str()),
            ("kind", kind),
            ("name", name.as_str()),
            ("uid", uid),
        ] {
            reference.insert(key.to_owned(), Value::String(value.to_owned()));
        }
        reference.insert("controller".to_owned(), Value::Bool(false));
        reference.insert("blockOwnerDeletion".to_owned(), Value::Bool(false));
        let labels = BTreeMap::from([
            (OWNER_LABEL.to_owned(), name.clone()),
            (OWNER_NAMESPACE_LABEL.to_owned(), namespace.clone()),
            (OWNER_KIND_LABEL.to_owned(), CSV_KIND.to_owned()),
        ]);
        Ok(Owner {
            name,
            namespace,
            labels,
            reference: Value::Object(reference),
        })
    }

    /// Go's `ObjectMeta` of a generated object: name, namespace (when set), labels (the owner
    /// labels and `olm.permissions.hash`, when `content_hash` is given), owner references
    /// (when `owned`).
    fn metadata(
        &self,
        name: &str,
        namespaced: bool,
        content_hash: Option<String>,
        owned: bool,
    ) -> Value {
        let mut m = Map::new();
        m.insert("name".to_owned(), Value::String(name.to_owned()));
        if namespaced && !self.namespace.is_empty() {
            m.insert(
                "namespace".to_owned(),
                Value::String(self.namespace.clone()),
            );
        }
        if let Some(content_hash) = content_hash {
            let mut labels = self.labels.clone();
            labels.insert(CONTENT_HASH_LABEL.to_owned(), content_hash);
            m.insert("labels".to_owned(), to_object(&labels));
        }
        if owned {
            m.insert(
                "ownerReferences".to_owned(),
                Value::Array(vec![self.reference.clone()]),
            );
        }
        Value::Object(m)
    }

    /// The `subjects` of a binding to `account`.
    fn subjects(&self, account: &str) -> Value {
        let mut subject = Map::new();
        subject.insert(
            "kind".to_owned(),
            Value::String("ServiceAccount".to_owned()),
        );
        subject.insert("name".to_owned(), Value::String(account.to_owned()));
        if !self.namespace.is_empty() {
            subject.insert(
                "namespace".to_owned(),
                Value::String(self.namespace.clone()),
            );
        }
        Value::Array(vec![Value::Object(subject)])
    }

    /// A binding of `account` to the role `role_kind` named `name`.
    fn binding(
        &self,
        kind: &'static str,
        role_kind: &str,
        name: &str,
        account: &str,
        owned: bool,
    ) -> RbacObject {
        let mut role_ref = Map::new();
        role_ref.insert("apiGroup".to_owned(), Value::String(RBAC_GROUP.to_owned()));
        role_ref.insert("kind".to_owned(), Value::String(role_kind.to_owned()));
        role_ref.insert("name".to_owned(), Value::String(name.to_owned()));
        let role_ref = Value::Object(role_ref);
        let subjects = self.subjects(account);
        // upstream's `RoleReferenceAndSubjectHashLabelValue`: a struct without JSON tags, so
        // the keys are the Go field names.
        let mut content = Map::new();
        content.insert("RoleRef".to_owned(), role_ref.clone());
        content.insert("Subjects".to_owned(), subjects.clone());
        let content_hash = hash(&marshal(&Value::Object(content)));
        let mut m = Map::new();
        m.insert(
            "metadata".to_owned(),
            self.metadata(name, true, Some(content_hash), owned),
        );
        m.insert("subjects".to_owned(), subjects);
        m.insert("roleRef".to_owned(), role_ref);
        RbacObject {
            kind,
            name: name.to_owned(),
            manifest: Value::Object(m),
        }
    }

    /// A Role (`namespaced`) or ClusterRole named `name` with `permission`'s rules.
    fn role(
        &self,
        kind: &'static str,
        name: &str,
        permission: &Permission,
        namespaced: bool,
    ) -> RbacObject {
        let rules = permission.rules_go();
        let content_hash = hash(&marshal(&rules));
        let mut m = Map::new();
        m.insert(
            "metadata".to_owned(),
            self.metadata(name, namespaced, Some(content_hash), namespaced),
        );
        m.insert("rules".to_owned(), rules);
        RbacObject {
            kind,
            name: name.to_owned(),
            manifest: Value::Object(m),
        }
    }

    /// The ServiceAccount `account`; one only `clusterPermissions` names gets no namespace.
    fn account(&self, account: &str, namespaced: bool) -> RbacObject {
        let mut m = Map::new();
        m.insert(
            "metadata".to_owned(),
            self.metadata(account, namespaced, None, true),
        );
        RbacObject {
            kind: "ServiceAccount",
            name: account.to_owned(),
            manifest: Value::Object(m),
        }
    }
}

/// The RBAC a CSV's install strategy asks for (upstream's `RBACForClusterServiceVersion` and
/// `NewServiceAccountStepResources`), in step order: per ServiceAccount, in the order the CSV
/// first names them, the account (unless `default`), its Roles, RoleBindings, ClusterRoles,
/// ClusterRoleBindings.
///
/// - Role `<csv>-<account>-<hash>` (cut to [`MAX_NAME_LENGTH`]; the hash is of the CSV's name
///   and the permission entry), in the CSV's namespace, with the entry's rules; a RoleBinding of
///   the same name binding it to the account. Both carry the owner labels `olm.owner`,
///   `olm.owner.namespace`, `olm.owner.kind`, a [`CONTENT_HASH_LABEL`] and a non-blocking owner
///   reference to the CSV.
/// - ClusterRole `<csv>-<hash>` (the hash also covers the namespace, so the same CSV in two
///   namespaces gets two), and a ClusterRoleBinding of the same name: owner labels and the
///   content hash, no owner reference (a namespaced CSV cannot own cluster objects).
///
/// `csv` is the CSV as installed: its namespace set.
///
/// # Errors
///
/// [`StepsError::Strategy`] when `spec.install.strategy` is not `deployment`;
/// [`StepsError::Shape`] for a value of the wrong JSON type.
pub fn rbac_objects(csv: &Value) -> Result<Vec<RbacObject>, StepsError> {
    let csv = as_object(csv, "").map_err(shape("bundle CSV"))?;
    let owner = Owner::of(csv)?;
    let place = format!("bundle CSV {}", owner.name);
    let strategy = strategy_spec(csv).map_err(|e| match e {
        StrategyError::Shape(source) => StepsError::Shape {
            place: place.clone(),
            source,
        },
        other => StepsError::Strategy(other),
    })?;
    let namespaced = permissions(strategy, "permissions").map_err(shape(place.as_str()))?;
    let cluster = permissions(strategy, "clusterPermissions").map_err(shape(place.as_str()))?;

    let mut accounts: Vec<(String, AccountObjects)> = Vec::new();
    fn entry<'a>(
        accounts: &'a mut Vec<(String, AccountObjects)>,
        name: &str,
        make: impl FnOnce() -> RbacObject,
    ) -> &'a mut AccountObjects {
        let i = match accounts.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                accounts.push((
                    name.to_owned(),
                    AccountObjects {
                        account: Some(make()),
                        ..AccountObjects::default()
                    },
                ));
                accounts.len() - 1
            }
        };
        &mut accounts[i].1
    }

    for permission in &namespaced {
        let account = permission.service_account.as_str();
        let mut input = Map::new();
        if !owner.name.is_empty() {
            input.insert("name".to_owned(), Value::String(owner.name.clone()));
        }
        input.insert("permission".to_owned(), permission.to_go());
        let name = generate_name(&format!("{}-{account}", owner.name), &Value::Object(input));
        let objects = entry(&mut accounts, account, || owner.account(account, true));
        objects
            .roles
            .push(owner.role("Role", &name, permission, true));
        objects
            .role_bindings
            .push(owner.binding("RoleBinding", "Role", &name, account, true));
    }
    for permission in &cluster {
        let account = permission.service_account.as_str();
        let mut input = Map::new();
        if !owner.name.is_empty() {
            input.insert("name".to_owned(), Value::String(owner.name.clone()));
        }
        if !owner.namespace.is_empty() {
            input.insert(
                "namespace".to_owned(),
                Value::String(owner.namespace.clone()),
            );
        }
        input.insert("permission".to_owned(), permission.to_go());
        let name = generate_name(&owner.name, &Value::Object(input));
        let objects = entry(&mut accounts, account, || owner.account(account, false));
        objects
            .cluster_roles
            .push(owner.role("ClusterRole", &name, permission, false));
        objects.cluster_role_bindings.push(owner.binding(
            "ClusterRoleBinding",
            "ClusterRole",
            &name,
            account,
            false,
        ));
    }

    let mut out = Vec::new();
    for (name, objects) in accounts {
        if name != DEFAULT_SERVICE_ACCOUNT {
            out.extend(objects.account);
        }
        out.extend(objects.roles);
        out.extend(objects.role_bindings);
        out.extend(objects.cluster_roles);
        out.extend(objects.cluster_role_bindings);
    }
    Ok(out)
}

/// `spec.install.spec` of a CSV whose strategy is `deployment` (`None` when it has no spec).
fn strategy_spec(csv: &Map<String, Value>) -> Result<Option<&Map<String, Value>>, StrategyError> {
    let install = match object(csv, "spec", "")? {
        Some(spec) => object(spec, "install", "spec")?,
        None => None,
    };
    let name = match install {
        Some(install) => string(install, "strategy", "spec.install")?,
        None => "",
    };
    if name != STRATEGY_NAME {
        return Err(StrategyError::Unrecognized {
            name: name.to_owned(),
        });
    }
    Ok(match install {
        Some(install) => object(install, "spec", "spec.install")?,
        None => None,
    })
}

/// The Subscription step for a dependency the resolver chose that no Subscription covers
/// (upstream's `NewSubscriptionStepResource` as `ResolveSteps` calls it): Subscription
/// `<package>-<channel>-<source>-<source namespace>` in `namespace`, to `package` in `channel`
/// of that source, starting at `csv_name`, approval `Automatic`, resolving `csv_name`.
pub fn subscription_step(
    namespace: &str,
    csv_name: &str,
    package: &str,
    channel: &str,
    source_name: &str,
    source_namespace: &str,
) -> Step {
    let name = [package, channel, source_name, source_namespace].join("-");
    let mut meta = Map::new();
    meta.insert("name".to_owned(), Value::String(name.clone()));
    if !namespace.is_empty() {
        meta.insert("namespace".to_owned(), Value::String(namespace.to_owned()));
    }
    let mut spec = Map::new();
    for (key, value, always) in [
        ("source", source_name, true),
        ("sourceNamespace", source_namespace, true),
        ("name", package, true),
        ("channel", channel, false),
        ("startingCSV", csv_name, false),
        ("installPlanApproval", APPROVAL_AUTOMATIC, false),
    ] {
        if always || !value.is_empty() {
            spec.insert(key.to_owned(), Value::String(value.to_owned()));
        }
    }
    // Go writes the zero `lastUpdated` time of the status as `null`.
    let mut status = Map::new();
    status.insert("lastUpdated".to_owned(), Value::Null);
    let mut sub = Map::new();
    sub.insert("metadata".to_owned(), Value::Object(meta));
    sub.insert("spec".to_owned(), Value::Object(spec));
    sub.insert("status".to_owned(), Value::Object(status));
    step(
        csv_name,
        (OPERATORS_GROUP, OPERATORS_VERSION, SUBSCRIPTION_KIND),
        &name,
        encode(&Value::Object(sub)),
        (source_name, source_namespace),
    )
}

/// Upstream's `OrderSteps`: CSV steps first, then CRD steps, then the rest, each group in its
/// given order.
pub fn order_steps(steps: Vec<Step>) -> Vec<Step> {
    let rank = |s: &Step| match s.resource.kind.as_str() {
        CSV_KIND => 0,
        CRD_KIND => 1,
        _ => 2,
    };
    let mut steps = steps;
    // A stable sort keeps each group's order.
    steps.sort_by_key(rank);
    steps
}

/// Whether any step waits for its API to be served (upstream's `NeedsRequeue`): the plan is
/// tried again shortly.
pub fn needs_requeue(steps: &[Step]) -> bool {
    steps.iter().any(|s| s.status == StepStatus::WaitingForApi)
}

/// The reason of the Warning event on a plan whose step drew warnings from the API server
/// (upstream's `ExecutePlan`).
pub const APPLIED_WITH_WARNINGS_REASON: &str = "AppliedWithWarnings";

/// The note of that event, in upstream's words: how many warnings creating `kind` `name` drew,
/// for which operator (`resolving`, when the step names one), and each warning's text.
pub fn warnings_note(resolving: &str, kind: &str, name: &str, warnings: &[String]) -> String {
    let (kind, name, count) = (kind, olm_goenc::quote(name), warnings.len());
    let texts = warnings.join(", ");
    if resolving.is_empty() {
        format!(
            "{count} warning(s) generated during operator installation ({kind} {name}): {texts}"
        )
    } else {
        let operator = olm_goenc::quote(resolving);
        format!(
            "{count} warning(s) generated during installation of operator {operator} ({kind} {name}): {texts}"
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `installplan_e2e_test.go`'s "creates an Event surfacing the deprecation warning" (OLM
    /// v0.46.0), and `ExecutePlan`'s wording for a step that resolves no operator.
    #[test]
    fn a_step_that_drew_warnings_is_reported_in_upstreams_words() {
        let warning =
            vec!["operators.io.operator-framework/v1 Deprecated is deprecated".to_owned()];
        assert_eq!(
            warnings_note("test-csv", "Deprecated", "deprecated-abc", &warning),
            "1 warning(s) generated during installation of operator \"test-csv\" (Deprecated \"deprecated-abc\"): operators.io.operator-framework/v1 Deprecated is deprecated"
        );
        let two = vec!["a".to_owned(), "b \"c\"".to_owned()];
        assert_eq!(
            warnings_note("", "ConfigMap", "x", &two),
            "2 warning(s) generated during operator installation (ConfigMap \"x\"): a, b \"c\""
        );
    }

    /// `subscription_e2e_test.go`'s ConfigMap catalog (`initCatalog`) carries CSVs whose
    /// apiVersion is `v1alpha1`; upstream decodes them as CSVs and creates them all the same.
    #[test]
    fn typed_kinds_are_created_at_their_own_api_version() {
        let step = StepResource {
            name: "myapp-beta".into(),
            kind: "ClusterServiceVersion".into(),
            group: String::new(),
            version: "v1alpha1".into(),
            manifest: r#"{"apiVersion":"v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"myapp-beta"}}"#.into(),
            ..StepResource::default()
        };
        let object = step.object().expect("an object");
        assert_eq!(object["apiVersion"], "operators.coreos.com/v1alpha1");
        assert_eq!(
            typed_api_version("Role"),
            Some("rbac.authorization.k8s.io/v1")
        );
        assert_eq!(typed_api_version("CustomResourceDefinition"), None);
        assert_eq!(typed_api_version("PodDisruptionBudget"), None);
        // `installplan_e2e_test.go` "limits installed resources …": a CRD manifest saying
        // `apiVersion: v1` in a step of version v1 is created as apiextensions.k8s.io/v1.
        let crd = StepResource {
            name: "ins.cluster.com".into(),
            kind: "CustomResourceDefinition".into(),
            group: String::new(),
            version: "v1".into(),
            manifest: r#"{"apiVersion":"v1","kind":"CustomResourceDefinition","metadata":{"name":"ins.cluster.com"}}"#.into(),
            ..StepResource::default()
        };
        assert_eq!(
            crd.object().expect("an object")["apiVersion"],
            "apiextensions.k8s.io/v1"
        );
    }

    /// The etcd operator's CSV from its 0.9.4 bundle, cut to what steps read, with a cluster
    /// permission added (the bundle has none) and a stale `spec.replaces`.
    fn etcd_csv() -> Value {
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {
                "name": "etcdoperator.v0.9.4",
                "namespace": "placeholder",
                "annotations": {"capabilities": "Full Lifecycle", "categories": "Database"},
            },
            "spec": {
                "displayName": "etcd",
                "install": {
                    "strategy": "deployment",
                    "spec": {
                        "deployments": [{"name": "etcd-operator", "spec": {"replicas": 1}}],
                        "permissions": [{
                            "serviceAccountName": "etcd-operator",
                            "rules": [
                                {"apiGroups": ["etcd.database.coreos.com"], "resources": ["etcdclusters", "etcdbackups", "etcdrestores"], "verbs": ["*"]},
                                {"apiGroups": [""], "resources": ["pods", "services", "endpoints", "persistentvolumeclaims", "events"], "verbs": ["*"]},
                                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]},
                                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
                            ],
                        }],
                        "clusterPermissions": [{
                            "serviceAccountName": "etcd-operator",
                            "rules": [
                                {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
                                {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
                            ],
                        }],
                    },
                },
                "replaces": "etcdoperator.v0.9.0",
                "version": "0.9.4",
            },
        })
    }

    fn crd(api_version: &str, name: &str) -> Value {
        json!({
            "apiVersion": api_version,
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": "etcd.database.coreos.com", "scope": "Namespaced"},
        })
    }

    fn etcd_bundle() -> Vec<Value> {
        vec![
            crd(
                "apiextensions.k8s.io/v1",
                "etcdbackups.etcd.database.coreos.com",
            ),
            etcd_csv(),
            crd(
                "apiextensions.k8s.io/v1beta1",
                "etcdclusters.etcd.database.coreos.com",
            ),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "etcd-tls"}, "stringData": {"k": "<a&b>"}}),
        ]
    }

    const PROPS: &str = r#"{"properties":[{"type":"olm.package","value":{"packageName":"etcd","version":"0.9.4"}}]}"#;

    fn summary(steps: &[Step]) -> Vec<(String, String, String, String)> {
        steps
            .iter()
            .map(|s| {
                let r = &s.resource;
                (
                    r.group.clone(),
                    r.version.clone(),
                    r.kind.clone(),
                    r.name.clone(),
                )
            })
            .collect()
    }

    fn kinds(steps: &[Step]) -> Vec<&str> {
        steps.iter().map(|s| s.resource.kind.as_str()).collect()
    }

    /// rbac_test.go `TestGenerateName`.
    #[test]
    fn generate_name_vectors() {
        let cases = [
            (
                "generate",
                "myname".to_owned(),
                json!(["something"]),
                "myname-5L9sNXi3Y6mcOevFzYY3WOLIukKOeZwz1pfUlT",
            ),
            (
                "truncated",
                "name".repeat(100),
                json!(["something", "else"]),
                "namenamenamenamenamename-6XtefCelEzfYlFOD1fARIK5vhWVfWfGHja7H3q",
            ),
        ];
        for (case, base, object, want) in cases {
            let got = generate_name(&base, &object);
            assert_eq!(got, want, "{case}");
            assert!(got.len() <= MAX_NAME_LENGTH, "{case}");
        }
    }

    /// rbac_test.go `TestGeneratesWithinRange`, made exact: every base gets a name of at most
    /// 63 characters, except upstream's off-by-one (base and hash exactly 63) which makes 64.
    #[test]
    fn generated_names_within_range() {
        let runes: Vec<char> = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"
            .chars()
            .collect();
        for len in 0..150 {
            let base: String = (0..len)
                .map(|i| runes[(i * 7 + len) % runes.len()])
                .collect();
            let got = generate_name(&base, &json!(base));
            let digest_len = got.len() - got.rfind('-').unwrap();
            if base.len() + digest_len - 1 == MAX_NAME_LENGTH {
                assert_eq!(got.len(), MAX_NAME_LENGTH + 1, "{base}");
            } else {
                assert!(got.len() <= MAX_NAME_LENGTH, "{base}: {got}");
            }
        }
        // A cut inside a multi-byte character moves back to its start instead of panicking.
        let got = generate_name(&"é".repeat(40), &json!(null));
        assert!(got.len() <= MAX_NAME_LENGTH);
    }

    fn strategy_csv(namespace: &str, permissions: Value, cluster: Value) -> Value {
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "test-csv.v1.1.0", "namespace": namespace},
            "spec": {"install": {"strategy": "deployment", "spec": {"permissions": permissions, "clusterPermissions": cluster}}},
        })
    }

    /// rbac_test.go `TestRBACForClusterServiceVersion`: binding counts per account, each bound
    /// to its account, and names unique within a CSV and, for cluster objects, across the same
    /// CSV in two namespaces.
    #[test]
    fn rbac_for_cluster_service_version() {
        let (sa1, sa2) = ("test-service-account", "second-service-account");
        let rules = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]);
        let deployments =
            json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["deployments"]}]);
        // (case, csv, per account: (role bindings, cluster role bindings))
        let cases = [
            (
                "RoleBindings and one ClusterRoleBinding",
                strategy_csv(
                    "test-namespace",
                    json!([
                        {"serviceAccountName": sa1, "rules": rules},
                        {"serviceAccountName": sa1, "rules": deployments},
                        {"serviceAccountName": sa2, "rules": rules},
                    ]),
                    json!([{"serviceAccountName": sa1, "rules": rules}]),
                ),
                vec![(sa1, 2, 1), (sa2, 1, 0)],
            ),
            (
                "ClusterRoleBinding",
                strategy_csv(
                    "second-namespace",
                    json!([]),
                    json!([
                        {"serviceAccountName": sa1, "rules": rules},
                        {"serviceAccountName": sa2, "rules": rules},
                    ]),
                ),
                vec![(sa1, 0, 1), (sa2, 0, 1)],
            ),
        ];
        let mut cluster_names = std::collections::BTreeSet::new();
        for (case, csv, want) in cases {
            let objects = rbac_objects(&csv).unwrap();
            let mut names = std::collections::BTreeSet::new();
            for (account, bindings, cluster_bindings) in want {
                let bound = |kind: &str| {
                    objects
                        .iter()
                        .filter(|o| o.kind == kind)
                        .filter(|o| o.manifest["subjects"][0]["name"] == account)
                        .inspect(|o| {
                            assert_eq!(o.manifest["subjects"].as_array().unwrap().len(), 1)
                        })
                        .count()
                };
                assert_eq!(bound("RoleBinding"), bindings, "{case}: {account}");
                assert_eq!(
                    bound("ClusterRoleBinding"),
                    cluster_bindings,
                    "{case}: {account}"
                );
            }
            for o in &objects {
                match o.kind {
                    "Role" | "RoleBinding" => {
                        assert!(names.insert((o.kind, o.name.clone())), "{case}: {}", o.name);
                    }
                    "ClusterRole" | "ClusterRoleBinding" => {
                        assert!(
                            cluster_names.insert((o.kind, o.name.clone())),
                            "{case}: {}",
                            o.name
                        );
                    }
                    _ => {}
                }
            }
        }
    }

    /// Every step of the etcd bundle, the generated objects byte for byte as Go writes them
    /// (expected bytes from Go's `encoding/json` over structs with the Kubernetes tags).
    #[test]
    fn etcd_bundle_steps() {
        let steps = bundle_steps(
            &etcd_bundle(),
            "operators",
            "etcdoperator.v0.9.2",
            PROPS,
            "operatorhubio",
            "olm",
        )
        .unwrap();
        let role = "etcdoperator.v0.9.4-etcd-1fPZ7OPuFW00B7hEHE0e67u7RQT89YSOavY623";
        let cluster_role = "etcdoperator.v0.9.4-207vinLpnCFxWUYRSE8U6WZW6JHBv51K9WY2lk";
        let want: Vec<(&str, &str, &str, &str)> = vec![
            (
                "operators.coreos.com",
                "v1alpha1",
                "ClusterServiceVersion",
                "etcdoperator.v0.9.4",
            ),
            (
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                "etcdbackups.etcd.database.coreos.com",
            ),
            (
                "apiextensions.k8s.io",
                "v1beta1",
                "CustomResourceDefinition",
                "etcdclusters.etcd.database.coreos.com",
            ),
            ("", "v1", "BundleSecret", "etcd-tls"),
            ("", "v1", "ServiceAccount", "etcd-operator"),
            ("rbac.authorization.k8s.io", "v1", "Role", role),
            ("rbac.authorization.k8s.io", "v1", "RoleBinding", role),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
                cluster_role,
            ),
            (
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRoleBinding",
                cluster_role,
            ),
        ];
        let want: Vec<_> = want
            .into_iter()
            .map(|(g, v, k, n)| (g.to_owned(), v.to_owned(), k.to_owned(), n.to_owned()))
            .collect();
        assert_eq!(summary(&steps), want);
        for s in &steps {
            assert_eq!(s.resolving, "etcdoperator.v0.9.4");
            assert_eq!(s.status, StepStatus::Unknown);
            assert!(!s.optional);
            assert_eq!(
                (
                    s.resource.source_name.as_str(),
                    s.resource.source_namespace.as_str()
                ),
                ("operatorhubio", "olm")
            );
            assert!(s.resource.manifest.ends_with('\n'));
        }

        // The CSV: namespace, replaces and properties set, the rest as it was.
        let csv: Value = serde_json::from_str(&steps[0].resource.manifest).unwrap();
        assert_eq!(csv["metadata"]["namespace"], "operators");
        assert_eq!(csv["spec"]["replaces"], "etcdoperator.v0.9.2");
        assert_eq!(csv["metadata"]["annotations"][PROPERTIES_ANNOTATION], PROPS);
        assert_eq!(
            csv["metadata"]["annotations"]["capabilities"],
            "Full Lifecycle"
        );
        assert_eq!(csv["spec"]["version"], "0.9.4");

        // Untyped objects: keys sorted, HTML escaped.
        assert_eq!(
            steps[3].resource.manifest,
            "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"etcd-tls\"},\"stringData\":{\"k\":\"\\u003ca\\u0026b\\u003e\"}}\n"
        );

        let owner = r#"[{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","name":"etcdoperator.v0.9.4","uid":"","controller":false,"blockOwnerDeletion":false}]"#;
        let labels = |h: &str| {
            format!(
                r#"{{"olm.owner":"etcdoperator.v0.9.4","olm.owner.kind":"ClusterServiceVersion","olm.owner.namespace":"operators","olm.permissions.hash":"{h}"}}"#
            )
        };
        let want = [
            format!(
                r#"{{"metadata":{{"name":"etcd-operator","namespace":"operators","ownerReferences":{owner}}}}}"#
            ),
            format!(
                r#"{{"metadata":{{"name":"{role}","namespace":"operators","labels":{},"ownerReferences":{owner}}},"rules":[{{"verbs":["*"],"apiGroups":["etcd.database.coreos.com"],"resources":["etcdclusters","etcdbackups","etcdrestores"]}},{{"verbs":["*"],"apiGroups":[""],"resources":["pods","services","endpoints","persistentvolumeclaims","events"]}},{{"verbs":["*"],"apiGroups":["apps"],"resources":["deployments"]}},{{"verbs":["get"],"apiGroups":[""],"resources":["secrets"]}}]}}"#,
                labels("2yopnz5NTItaVA9ySSXhLaM94ZfQ5fhp6RSIHH")
            ),
            format!(
                r#"{{"metadata":{{"name":"{role}","namespace":"operators","labels":{},"ownerReferences":{owner}}},"subjects":[{{"kind":"ServiceAccount","name":"etcd-operator","namespace":"operators"}}],"roleRef":{{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"{role}"}}}}"#,
                labels("cOaztjcJL74WdLG6959EG4lJMXeAabNOeqx87a")
            ),
            format!(
                r#"{{"metadata":{{"name":"{cluster_role}","labels":{}}},"rules":[{{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["namespaces"]}},{{"verbs":["get"],"nonResourceURLs":["/metrics"]}}]}}"#,
                labels("2alrKmZkBxwhc8KfTiyLMTUGKmn0mSrH1tqg35")
            ),
            format!(
                r#"{{"metadata":{{"name":"{cluster_role}","namespace":"operators","labels":{}}},"subjects":[{{"kind":"ServiceAccount","name":"etcd-operator","namespace":"operators"}}],"roleRef":{{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"{cluster_role}"}}}}"#,
                labels("xuuNfwLnnqYt8RwT6cD7VjDDfd0V2zv2jw4un")
            ),
        ];
        for (step, want) in steps[4..].iter().zip(want) {
            assert_eq!(
                step.resource.manifest,
                format!("{want}\n"),
                "{}",
                step.resource.kind
            );
        }
    }

    /// An empty resolved `replaces` removes the bundle's; a CSV without annotations gets the
    /// properties one.
    #[test]
    fn csv_without_replaces_or_annotations() {
        let mut csv = etcd_csv();
        csv["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("annotations");
        let steps = bundle_steps(&[csv], "ns", "", "{}", "c", "cns").unwrap();
        let manifest: Value = serde_json::from_str(&steps[0].resource.manifest).unwrap();
        assert!(manifest["spec"].get("replaces").is_none());
        assert_eq!(
            manifest["metadata"]["annotations"],
            json!({PROPERTIES_ANNOTATION: "{}"})
        );
    }

    fn simple_bundle(account: &str) -> Vec<Value> {
        let perms = json!([{"serviceAccountName": account, "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}]}]);
        let mut csv = strategy_csv("", perms.clone(), perms);
        csv["metadata"] = json!({"name": "a.v1"});
        vec![csv]
    }

    /// step_resolver_test.go `TestNamespaceResolverRBAC`: a new Subscription to a bundle with
    /// permissions and cluster permissions for one account, and the same for `default`, whose
    /// ServiceAccount step is left out.
    #[test]
    fn namespace_resolver_rbac() {
        let cases = [
            (
                "NewSubscription/Permissions/ClusterPermissions",
                "test-sa",
                vec![
                    "ClusterServiceVersion",
                    "ServiceAccount",
                    "Role",
                    "RoleBinding",
                    "ClusterRole",
                    "ClusterRoleBinding",
                ],
            ),
            (
                "don't create default service accounts",
                "default",
                vec![
                    "ClusterServiceVersion",
                    "Role",
                    "RoleBinding",
                    "ClusterRole",
                    "ClusterRoleBinding",
                ],
            ),
        ];
        for (case, account, want) in cases {
            let steps = bundle_steps(
                &simple_bundle(account),
                "catsrc-namespace",
                "",
                "{}",
                "catsrc",
                "catsrc-namespace",
            )
            .unwrap();
            assert_eq!(kinds(&steps), want, "{case}");
            let sa: Value = serde_json::from_str(&steps[1].resource.manifest).unwrap();
            if account != "default" {
                // Named first in `permissions`, so it is namespaced.
                assert_eq!(sa["metadata"]["namespace"], "catsrc-namespace", "{case}");
            }
        }
    }

    /// A ServiceAccount only `clusterPermissions` names gets no namespace (upstream sets none).
    #[test]
    fn cluster_only_account_has_no_namespace() {
        let csv = strategy_csv(
            "ns",
            json!([]),
            json!([{"serviceAccountName": "op", "rules": []}]),
        );
        let objects = rbac_objects(&csv).unwrap();
        assert_eq!(
            objects[0].manifest,
            json!({"metadata": {"name": "op", "ownerReferences": [objects[0].manifest["metadata"]["ownerReferences"][0]]}})
        );
        assert_eq!(objects[1].manifest["rules"], json!([]));
    }

    /// step_resolver_test.go `SingleNewSubscription/ResolveOne/AdditionalBundleObjects` and
    /// `…/Service`: extra objects become steps with their own group, version and kind, an empty
    /// `apiVersion` giving empty ones.
    #[test]
    fn additional_bundle_objects() {
        let mut bundle = simple_bundle("test-sa");
        bundle.push(json!({"kind": "RoleBinding", "apiVersion": "rbac.authorization.k8s.io/v1", "metadata": {"name": "test-rb"}}));
        bundle.push(
            json!({"kind": "Service", "apiVersion": "", "metadata": {"name": "test-service"}}),
        );
        bundle.push(
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"generateName": "cm-"}}),
        );
        let steps = bundle_steps(&bundle, "ns", "", "{}", "c", "cns").unwrap();
        let s = summary(&steps[1..4]);
        assert_eq!(
            s[0],
            (
                "rbac.authorization.k8s.io".into(),
                "v1".into(),
                "RoleBinding".into(),
                "test-rb".into()
            )
        );
        assert_eq!(
            s[1],
            (
                String::new(),
                String::new(),
                "Service".into(),
                "test-service".into()
            )
        );
        assert_eq!(
            s[2],
            (String::new(), "v1".into(), "ConfigMap".into(), "cm-".into())
        );
    }

    /// step_resolver_test.go `subSteps` (as in `SingleNewSubscription/ResolveOne`): the
    /// Subscription for dependency `b.v1`, byte for byte as Go writes it.
    #[test]
    fn subscription_for_dependency() {
        let s = subscription_step(
            "catsrc-namespace",
            "b.v1",
            "b",
            "beta",
            "catsrc",
            "catsrc-namespace",
        );
        assert_eq!(s.resolving, "b.v1");
        assert_eq!(s.status, StepStatus::Unknown);
        assert_eq!(
            summary(std::slice::from_ref(&s))[0],
            (
                "operators.coreos.com".into(),
                "v1alpha1".into(),
                "Subscription".into(),
                "b-beta-catsrc-catsrc-namespace".into()
            )
        );
        assert_eq!(
            (
                s.resource.source_name.as_str(),
                s.resource.source_namespace.as_str()
            ),
            ("catsrc", "catsrc-namespace")
        );
        assert_eq!(
            s.resource.manifest,
            "{\"metadata\":{\"name\":\"b-beta-catsrc-catsrc-namespace\",\"namespace\":\"catsrc-namespace\"},\"spec\":{\"source\":\"catsrc\",\"sourceNamespace\":\"catsrc-namespace\",\"name\":\"b\",\"channel\":\"beta\",\"startingCSV\":\"b.v1\",\"installPlanApproval\":\"Automatic\"},\"status\":{\"lastUpdated\":null}}\n"
        );
        // An empty channel still joins into the name, and is left out of the spec.
        let s = subscription_step("ns", "a.v1", "a", "", "c", "cns");
        assert_eq!(s.resource.name, "a--c-cns");
        let object = s.resource.object().unwrap();
        assert_eq!(object["apiVersion"], "operators.coreos.com/v1alpha1");
        assert_eq!(object["kind"], "Subscription");
        assert!(object["spec"].get("channel").is_none());
    }

    /// installplan_types.go `OrderSteps`: CSVs, then CRDs, then the rest, each in its order.
    #[test]
    fn ordering() {
        let named = |kind: &str, name: &str| Step {
            resource: StepResource {
                kind: kind.into(),
                name: name.into(),
                ..StepResource::default()
            },
            ..Step::default()
        };
        let steps = vec![
            named("Subscription", "s1"),
            named("CustomResourceDefinition", "d1"),
            named("ClusterServiceVersion", "c1"),
            named("Role", "r1"),
            named("CustomResourceDefinition", "d2"),
            named("ClusterServiceVersion", "c2"),
        ];
        let names: Vec<String> = order_steps(steps)
            .into_iter()
            .map(|s| s.resource.name)
            .collect();
        assert_eq!(names, ["c1", "c2", "d1", "d2", "s1", "r1"]);
        assert!(order_steps(Vec::new()).is_empty());
    }

    #[test]
    fn step_json() {
        let mut s = subscription_step("ns", "a.v1", "a", "alpha", "c", "cns");
        let v = s.to_json();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["resolving", "resource", "status"]);
        let keys: Vec<&String> = v["resource"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "sourceName",
                "sourceNamespace",
                "group",
                "version",
                "kind",
                "name",
                "manifest"
            ]
        );
        assert_eq!(Step::from_json(&v).unwrap(), s);
        s.optional = true;
        s.status = StepStatus::WaitingForApi;
        s.resource.manifest.clear();
        let v = s.to_json();
        assert_eq!(v["optional"], true);
        assert_eq!(v["status"], "WaitingForApi");
        assert!(v["resource"].get("manifest").is_none());
        assert_eq!(Step::from_json(&v).unwrap(), s);
        assert!(needs_requeue(&[s]));
        for status in StepStatus::ALL {
            assert_eq!(StepStatus::parse(status.as_str()), Some(status));
        }
        // Go's decoding: missing strings are empty.
        let s = Step::from_json(&json!({"status": "Present"})).unwrap();
        assert_eq!(s.resource, StepResource::default());
    }

    #[test]
    fn bad_step_json() {
        let cases = [
            (json!([]), "step: expected an object, found an array"),
            (
                json!({"status": "Done"}),
                "step status: unknown status \"Done\"",
            ),
            (json!({}), "step status: unknown status \"\""),
            (
                json!({"status": "Unknown", "resource": {"kind": 3}}),
                "step: resource.kind: expected a string, found a number",
            ),
            (
                json!({"status": "Unknown", "optional": "yes"}),
                "step: optional: expected a boolean, found a string",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(Step::from_json(&input).unwrap_err().to_string(), want);
        }
        let r = StepResource {
            name: "x".into(),
            manifest: "[1]".into(),
            ..StepResource::default()
        };
        assert_eq!(
            r.object().unwrap_err().to_string(),
            "step x: manifest is not a JSON object: found an array"
        );
    }

    #[test]
    fn bad_bundles() {
        let mut no_api_version = etcd_csv();
        no_api_version.as_object_mut().unwrap().remove("apiVersion");
        let mut no_kind = etcd_csv();
        no_kind.as_object_mut().unwrap().remove("kind");
        let mut other_strategy = etcd_csv();
        other_strategy["spec"]["install"]["strategy"] = json!("helm");
        let mut no_install = etcd_csv();
        no_install["spec"]
            .as_object_mut()
            .unwrap()
            .remove("install");
        let mut bad_rule = etcd_csv();
        bad_rule["spec"]["install"]["spec"]["permissions"][0]["rules"][1]["verbs"] =
            json!(["get", 7]);
        let mut bad_annotations = etcd_csv();
        bad_annotations["metadata"]["annotations"] = json!({"a": 1});
        let mut bad_metadata = etcd_csv();
        bad_metadata["spec"] = json!("x");
        let cases: Vec<(&str, Vec<Value>, String)> = vec![
            ("empty bundle", vec![], "bundle has no ClusterServiceVersion among its 0 objects".into()),
            ("no CSV", vec![crd("apiextensions.k8s.io/v1", "x")], "bundle has no ClusterServiceVersion among its 1 objects".into()),
            ("CSV without apiVersion", vec![no_api_version], "bundle CSV etcdoperator.v0.9.4 missing APIVersion".into()),
            ("CSV without kind", vec![no_kind], "bundle CSV etcdoperator.v0.9.4 missing Kind".into()),
            (
                "object without kind",
                vec![etcd_csv(), json!({"apiVersion": "v1", "metadata": {"name": "cm"}})],
                r#"Object 'Kind' is missing in '{"apiVersion":"v1","metadata":{"name":"cm"}}'"#.into(),
            ),
            (
                "object with a three-part apiVersion",
                vec![etcd_csv(), json!({"apiVersion": "a/b/c", "kind": "Thing"})],
                r#"Object 'Kind' is missing in '{"apiVersion":"a/b/c","kind":"Thing"}'"#.into(),
            ),
            ("object not an object", vec![etcd_csv(), json!("text")], "bundle object 1: expected an object, found a string".into()),
            (
                "object name not a string",
                vec![etcd_csv(), json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}})],
                "bundle object 1: metadata.name: expected a string, found a number".into(),
            ),
            ("other strategy", vec![other_strategy], "unrecognized install strategy".into()),
            ("no install", vec![no_install], "unrecognized install strategy".into()),
            (
                "rule verb not a string",
                vec![bad_rule],
                "bundle CSV etcdoperator.v0.9.4: spec.install.spec.permissions[0].rules[1].verbs[1]: expected a string, found a number".into(),
            ),
            ("annotation not a string", vec![bad_annotations], "bundle CSV etcdoperator.v0.9.4: metadata.annotations.a: expected a string, found a number".into()),
            ("spec not an object", vec![bad_metadata], "bundle CSV etcdoperator.v0.9.4: spec: expected an object, found a string".into()),
        ];
        for (case, bundle, want) in cases {
            let got = bundle_steps(&bundle, "ns", "", "{}", "c", "cns").unwrap_err();
            assert_eq!(got.to_string(), want, "{case}");
        }
    }

    /// Long CSV and ServiceAccount names: Role and ClusterRole names cut to 63 characters, and
    /// in a CSV without a namespace a Role and a ClusterRole for the same (missing) rules get
    /// the same name, as upstream's do (expected names from Go).
    #[test]
    fn long_names() {
        let long = "averyveryveryveryverylongoperatorname.v10.200.3000-rc.1+build.77";
        let csv = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": long},
            "spec": {"install": {"strategy": "deployment", "spec": {
                "permissions": [{"serviceAccountName": "sa<&>"}],
                "clusterPermissions": [{"serviceAccountName": "sa<&>"}],
            }}},
        });
        let objects = rbac_objects(&csv).unwrap();
        let names: Vec<(&str, &str)> = objects.iter().map(|o| (o.kind, o.name.as_str())).collect();
        let name = "averyveryveryveryverylon-5Km4AL2gV4DPmghlfn5UqA5YjzyDH79u6ANrNf";
        assert_eq!(
            names,
            [
                ("ServiceAccount", "sa<&>"),
                ("Role", name),
                ("RoleBinding", name),
                ("ClusterRole", name),
                ("ClusterRoleBinding", name)
            ]
        );
        assert_eq!(
            objects[1].manifest["metadata"]["labels"][CONTENT_HASH_LABEL],
            "8svkgjrWNOjkQ01d1SG1sBJN8XPVhKn0GkNTVF"
        );
        assert_eq!(objects[1].manifest["rules"], Value::Null);
        // No namespace: none on the objects or the subjects.
        assert!(objects[2].manifest["metadata"].get("namespace").is_none());
        assert!(
            objects[2].manifest["subjects"][0]
                .get("namespace")
                .is_none()
        );
        let long_account = "x".repeat(300);
        let csv = strategy_csv(
            "ns",
            json!([{"serviceAccountName": long_account}]),
            json!([]),
        );
        for o in rbac_objects(&csv)
            .unwrap()
            .iter()
            .filter(|o| o.kind != "ServiceAccount")
        {
            assert!(o.name.len() <= MAX_NAME_LENGTH, "{}", o.name);
            assert!(o.name.starts_with("test-csv.v1.1.0-xxxxxxxx"));
        }
    }

    /// `StepResource::object` gives an object ready to apply: generated manifests get their
    /// `apiVersion` and `kind`, a bundle Secret its real kind.
    #[test]
    fn step_objects() {
        let steps = bundle_steps(&etcd_bundle(), "operators", "", "{}", "c", "cns").unwrap();
        let secret = steps[3].resource.object().unwrap();
        assert_eq!(
            (secret["apiVersion"].as_str(), secret["kind"].as_str()),
            (Some("v1"), Some("Secret"))
        );
        let sa = steps[4].resource.object().unwrap();
        assert_eq!(
            (sa["apiVersion"].as_str(), sa["kind"].as_str()),
            (Some("v1"), Some("ServiceAccount"))
        );
        let role = steps[5].resource.object().unwrap();
        assert_eq!(role["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(role["metadata"]["namespace"], "operators");
    }
}
