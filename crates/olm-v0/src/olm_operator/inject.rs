//! A Subscription's `spec.config` applied to the Deployments of the CSV it installed (OLM repo
//! `pkg/controller/operators/olm/overrides/`: `config.go` finds the Subscription,
//! `initializer.go` applies its config in a fixed order, `inject/inject.go` holds one function
//! per field). Cluster administrators use it to give an operator proxy settings, extra
//! volumes, tolerations, resources, a node selector, affinity or annotations without
//! editing the bundle.
//!
//! What each field does, in the order [`Overrides::apply`] applies them:
//!
//! 1. `env` — merged into every container by name: a variable the container already has keeps
//!    its place and takes the new value; new names are appended in the order given. On
//!    OpenShift the cluster's proxy variables ([`ClusterProxy`]) are added too, unless `env`
//!    sets any of [`PROXY_ENV_NAMES`] itself.
//! 2. `envFrom` — appended to every container unless the container already has an identical
//!    entry.
//! 3. `volumes` — replace the pod's volume of the same name, else appended.
//! 4. `volumeMounts` — the same, in every container.
//! 5. `tolerations` — appended unless the pod already has an identical one.
//! 6. `resources` — replace every container's resources (an empty object clears them).
//! 7. `nodeSelector` — replaces the pod's (an empty object clears it).
//! 8. `affinity` — per part: each of `nodeAffinity`, `podAffinity`, `podAntiAffinity` that is
//!    set replaces the pod's, and an empty object `{}` removes the pod's; `affinity: {}`
//!    removes all of it; parts not mentioned stay. An affinity left with no part is removed.
//! 9. `annotations` — added to the Deployment and to its pod template, never overwriting a key
//!    already there.
//!
//! Why `serde_json::Value`: the CSV's install strategy carries whole `DeploymentSpec`s, and the
//! Deployment written back must keep every field, including ones newer than this code. The
//! functions touch only the fields they own and copy the rest through.
//!
//! "Identical" and "empty" are upstream's `reflect.DeepEqual` on typed Kubernetes structs. On
//! JSON that means comparing what Go's decoder would produce: unknown fields are dropped, a
//! string field that is absent, `null` or `""` is the same zero string, a pointer or list field
//! that is absent or `null` is nil — but `{}` and `[]` are not nil, so `nodeAffinity: {}` is set
//! (and empty) while `nodeAffinity: null` is not set. The private `typed` function does this
//! for the structs compared here (`EnvFromSource`, `Toleration`, `Affinity` and its parts).
//!
//! Where this differs from upstream's code, deliberately:
//!
//! * `podAntiAffinity: {}` removes only the pod's anti-affinity. Upstream's code removes the
//!   whole affinity there (its other two parts clear only themselves); the OLM documentation
//!   ("Overriding Operator Pod Affinity Configuration") says `podAffinity: {}` with
//!   `podAntiAffinity: {}` keeps the author's `nodeAffinity`, and the documentation is what users
//!   configure against.
//! * A container that lists one variable name twice keeps it once, at its first place, with its
//!   last value. Upstream writes a nameless variable for each repeat, which the API server
//!   rejects, so such an operator could never be installed.
//! * Upstream returns "no pod spec provided" for a nil pod spec, which only its tests can pass.
//!   Here a Deployment, pod template or pod spec that is not an object is an error naming the
//!   place ([`ShapeError`]); one that is absent or `null` is empty, as Go decodes it.

use std::collections::BTreeMap;
use std::fmt;

use olm_v0_api::v1alpha1::Subscription;
use serde_json::{Map, Value};

/// The proxy variables: when `spec.config.env` sets any of them, the cluster's proxy is left
/// out entirely (upstream's `proxy.IsOverridden`), so an operator can be taken off the proxy.
pub const PROXY_ENV_NAMES: [&str; 3] = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"];

/// The parts of a pod's `affinity`, each overridden on its own.
pub const AFFINITY_PARTS: [&str; 3] = ["nodeAffinity", "podAffinity", "podAntiAffinity"];

/// Where the pod spec sits in a Deployment, for error paths.
const POD_SPEC_PATH: &str = "spec.template.spec";

const AN_OBJECT: &str = "an object";
const AN_ARRAY: &str = "an array";
const A_STRING: &str = "a string";
const AN_INTEGER: &str = "an integer";
const A_BOOLEAN: &str = "a boolean";

/// A value of the wrong JSON type where a Kubernetes object needs a particular one, with its
/// place: upstream's typed decoding would have rejected the object there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError {
    /// Where, from the value handed in (`spec.template.spec.containers[0].env[2].name`); empty
    /// for that value itself.
    pub path: String,
    /// What the place must hold (`an object`, `an array`, `a string`, `an integer`,
    /// `a boolean`).
    pub expected: &'static str,
    /// What it holds (`null`, `a number`, `nothing` when it is missing, …).
    pub found: &'static str,
}

impl ShapeError {
    pub(crate) fn new(path: String, expected: &'static str, found: Option<&Value>) -> Self {
        Self {
            path,
            expected,
            found: describe(found),
        }
    }

    /// The same error with its path starting at `prefix`, the place of the value the failing
    /// call was handed.
    #[must_use]
    pub fn within(mut self, prefix: &str) -> Self {
        self.path = join(prefix, &self.path);
        self
    }
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        write!(f, "expected {}, found {}", self.expected, self.found)
    }
}

impl std::error::Error for ShapeError {}

/// How a JSON value is described in errors.
pub(crate) fn describe(v: Option<&Value>) -> &'static str {
    match v {
        None => "nothing",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    }
}

/// `rest` below `prefix`, as a path: `a.b`, `a[0]`.
fn join(prefix: &str, rest: &str) -> String {
    if prefix.is_empty() {
        rest.to_owned()
    } else if rest.is_empty() {
        prefix.to_owned()
    } else if rest.starts_with('[') {
        format!("{prefix}{rest}")
    } else {
        format!("{prefix}.{rest}")
    }
}

/// `v` as an object; `null` becomes the empty object Go decodes it to.
fn object_mut<'a>(v: &'a mut Value, path: &str) -> Result<&'a mut Map<String, Value>, ShapeError> {
    if v.is_null() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => Ok(m),
        other => Err(ShapeError::new(path.to_owned(), AN_OBJECT, Some(&*other))),
    }
}

/// The object under `key` of `obj` (at `path`), created empty when absent or `null`.
pub(crate) fn child_mut<'a>(
    obj: &'a mut Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a mut Map<String, Value>, ShapeError> {
    object_mut(obj.entry(key).or_insert(Value::Null), &join(path, key))
}

/// `v` (at `path`) as an object.
pub(crate) fn as_object<'a>(
    v: &'a Value,
    path: &str,
) -> Result<&'a Map<String, Value>, ShapeError> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(ShapeError::new(path.to_owned(), AN_OBJECT, Some(other))),
    }
}

/// A text that must be set and non-empty (a name, a namespace), at `path`.
pub(crate) fn required_text(value: Option<&str>, path: &str) -> Result<String, ShapeError> {
    match value {
        Some(s) if !s.is_empty() => Ok(s.to_owned()),
        Some(_) => Err(ShapeError {
            path: path.to_owned(),
            expected: "a non-empty string",
            found: "an empty string",
        }),
        None => Err(ShapeError::new(path.to_owned(), A_STRING, None)),
    }
}

/// The object under `key`; `None` when absent or `null`.
pub(crate) fn object<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a Map<String, Value>>, ShapeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        other => Err(ShapeError::new(join(path, key), AN_OBJECT, other)),
    }
}

/// The array under `key`; `None` when absent or `null`.
pub(crate) fn array<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a Vec<Value>>, ShapeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        other => Err(ShapeError::new(join(path, key), AN_ARRAY, other)),
    }
}

/// The string under `key` as Go reads a `string` field: absent and `null` are `""`.
pub(crate) fn string<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a str, ShapeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        other => Err(ShapeError::new(join(path, key), A_STRING, other)),
    }
}

/// The `map[string]string` under `key` (labels, annotations, node selectors); `None` when absent
/// or `null`.
pub(crate) fn string_map(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<BTreeMap<String, String>>, ShapeError> {
    let Some(m) = object(obj, key, path)? else {
        return Ok(None);
    };
    let at = join(path, key);
    m.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            other => Err(ShapeError::new(join(&at, k), A_STRING, Some(other))),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// `map` as a JSON object, keys sorted (Go writes maps so).
pub(crate) fn to_object(map: &BTreeMap<String, String>) -> Value {
    Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// The `name` of each entry of `items` (at `path`), `""` where unset, as Go reads it.
fn names<'a>(items: &'a [Value], path: &str) -> Result<Vec<&'a str>, ShapeError> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("{path}[{i}]");
            match item {
                Value::Null => Ok(""),
                Value::Object(m) => string(m, "name", &at),
                other => Err(ShapeError::new(at, AN_OBJECT, Some(other))),
            }
        })
        .collect()
}

/// How Go decodes one field of a Kubernetes struct.
#[derive(Clone, Copy)]
enum Field {
    /// A `string`: absent, `null` and `""` are the same zero string.
    Str,
    /// A `*int64`: absent and `null` are nil.
    Int,
    /// A `*bool`: absent and `null` are nil.
    Bool,
    /// A slice: absent and `null` are nil, `[]` is not. Elements are kept as they are.
    Slice,
    /// A pointer to a struct with these fields: absent and `null` are nil, `{}` is not.
    Struct(&'static [(&'static str, Field)]),
}

impl Field {
    fn expected(self) -> &'static str {
        match self {
            Field::Str => A_STRING,
            Field::Int => AN_INTEGER,
            Field::Bool => A_BOOLEAN,
            Field::Slice => AN_ARRAY,
            Field::Struct(_) => AN_OBJECT,
        }
    }
}

/// `corev1.ConfigMapEnvSource` and `corev1.SecretEnvSource`.
const ENV_SOURCE_REF: &[(&str, Field)] = &[("name", Field::Str), ("optional", Field::Bool)];
/// `corev1.EnvFromSource`.
const ENV_FROM_SOURCE: &[(&str, Field)] = &[
    ("prefix", Field::Str),
    ("configMapRef", Field::Struct(ENV_SOURCE_REF)),
    ("secretRef", Field::Struct(ENV_SOURCE_REF)),
];
/// `corev1.Toleration`.
const TOLERATION: &[(&str, Field)] = &[
    ("key", Field::Str),
    ("operator", Field::Str),
    ("value", Field::Str),
    ("effect", Field::Str),
    ("tolerationSeconds", Field::Int),
];
/// `corev1.NodeAffinity`; the `NodeSelector` is only checked for being set.
const NODE_AFFINITY: &[(&str, Field)] = &[
    (
        "requiredDuringSchedulingIgnoredDuringExecution",
        Field::Struct(&[]),
    ),
    (
        "preferredDuringSchedulingIgnoredDuringExecution",
        Field::Slice,
    ),
];
/// `corev1.PodAffinity` and `corev1.PodAntiAffinity`.
const POD_AFFINITY: &[(&str, Field)] = &[
    (
        "requiredDuringSchedulingIgnoredDuringExecution",
        Field::Slice,
    ),
    (
        "preferredDuringSchedulingIgnoredDuringExecution",
        Field::Slice,
    ),
];
/// `corev1.Affinity`, its fields in [`AFFINITY_PARTS`] order.
const AFFINITY: &[(&str, Field)] = &[
    ("nodeAffinity", Field::Struct(NODE_AFFINITY)),
    ("podAffinity", Field::Struct(POD_AFFINITY)),
    ("podAntiAffinity", Field::Struct(POD_AFFINITY)),
];

/// `v` (at `path`) as Go's typed decoding into a struct with `fields` sees it: unknown fields
/// dropped, zero strings and nil pointers and slices left out. Two values are `DeepEqual` after
/// decoding exactly when these are equal; a struct is zero when this is `{}`.
fn typed(
    v: &Value,
    fields: &[(&str, Field)],
    path: &str,
) -> Result<Map<String, Value>, ShapeError> {
    let obj = match v {
        Value::Null => return Ok(Map::new()),
        Value::Object(m) => m,
        other => return Err(ShapeError::new(path.to_owned(), AN_OBJECT, Some(other))),
    };
    let mut out = Map::new();
    for &(key, field) in fields {
        let value = match (field, obj.get(key)) {
            (_, None | Some(Value::Null)) => continue,
            (Field::Str, Some(Value::String(s))) if s.is_empty() => continue,
            (Field::Str, Some(s @ Value::String(_)))
            | (Field::Bool, Some(s @ Value::Bool(_)))
            | (Field::Slice, Some(s @ Value::Array(_))) => s.clone(),
            (Field::Int, Some(n @ Value::Number(x))) if x.is_i64() => n.clone(),
            (Field::Struct(inner), Some(s @ Value::Object(_))) => {
                Value::Object(typed(s, inner, &join(path, key))?)
            }
            (field, other) => {
                return Err(ShapeError::new(join(path, key), field.expected(), other));
            }
        };
        out.insert(key.to_owned(), value);
    }
    Ok(out)
}

/// Each entry of `items` (at `path`) through [`typed`].
fn typed_all(
    items: &[Value],
    fields: &[(&str, Field)],
    path: &str,
) -> Result<Vec<Map<String, Value>>, ShapeError> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| typed(v, fields, &format!("{path}[{i}]")))
        .collect()
}

/// Runs `f` on every container of `pod_spec` with the container's path (`containers[i]`).
/// Init containers are left alone, as upstream leaves them.
fn each_container(
    pod_spec: &mut Map<String, Value>,
    mut f: impl FnMut(&mut Map<String, Value>, &str) -> Result<(), ShapeError>,
) -> Result<(), ShapeError> {
    let containers = match pod_spec.get_mut("containers") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(ShapeError::new(
                "containers".to_owned(),
                AN_ARRAY,
                Some(&*other),
            ));
        }
    };
    for (i, c) in containers.iter_mut().enumerate() {
        let path = format!("containers[{i}]");
        f(object_mut(c, &path)?, &path)?;
    }
    Ok(())
}

/// The array under `key` of `obj` (at `path`), created empty when absent or `null`.
fn array_mut<'a>(
    obj: &'a mut Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a mut Vec<Value>, ShapeError> {
    let slot = obj.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    match slot {
        Value::Array(a) => Ok(a),
        other => Err(ShapeError::new(join(path, key), AN_ARRAY, Some(&*other))),
    }
}

/// The variables of a container with `existing` (at `path`) once `new` is merged in: each
/// existing name once, at its first place, with its last value (a new one if `new` names it);
/// then each entry of `new` whose name the container lacked, in order, with the last value
/// `new` gives that name (a name repeated in `new` is written at each of its places, as
/// upstream does).
fn merge_env(existing: &[Value], new: &[Value], path: &str) -> Result<Vec<Value>, ShapeError> {
    let old_names = names(existing, path)?;
    let new_names = names(new, "env")?;
    let mut latest: BTreeMap<&str, &Value> = BTreeMap::new();
    for (name, v) in old_names
        .iter()
        .zip(existing)
        .chain(new_names.iter().zip(new))
    {
        latest.insert(*name, v);
    }
    let mut merged = Vec::with_capacity(latest.len());
    for name in &old_names {
        if let Some(v) = latest.remove(name) {
            merged.push(v.clone());
        }
    }
    for name in &new_names {
        if let Some(v) = latest.get(name) {
            merged.push((*v).clone());
        }
    }
    Ok(merged)
}

/// Merges `env` into every container of `pod_spec` (upstream's `InjectEnvIntoDeployment`): a
/// variable the container has keeps its place and takes the new value, new names follow in
/// the order given. Also how `OPERATOR_CONDITION_NAME` reaches the operator.
///
/// # Errors
///
/// A container, its `env` or an entry of either that is not the JSON type Kubernetes gives it
/// (paths within the pod spec; `env[i]` for the entries given).
pub fn inject_env(pod_spec: &mut Map<String, Value>, env: &[Value]) -> Result<(), ShapeError> {
    names(env, "env")?;
    each_container(pod_spec, |container, path| {
        let existing = array(container, "env", path)?;
        let had = existing.is_some();
        let merged = merge_env(
            existing.map_or(&[][..], Vec::as_slice),
            env,
            &join(path, "env"),
        )?;
        if had || !merged.is_empty() {
            container.insert("env".to_owned(), Value::Array(merged));
        }
        Ok(())
    })
}

/// Appends to `obj[key]` (at `path`) each entry of `new` that is not identical, as `fields`
/// decode, to an entry already there.
fn append_unless_identical(
    obj: &mut Map<String, Value>,
    key: &str,
    path: &str,
    new: &[Value],
    new_typed: &[Map<String, Value>],
    fields: &[(&str, Field)],
) -> Result<(), ShapeError> {
    let existing = match array(obj, key, path)? {
        None => Vec::new(),
        Some(items) => typed_all(items, fields, &join(path, key))?,
    };
    let additions: Vec<Value> = new
        .iter()
        .zip(new_typed)
        .filter(|(_, t)| !existing.contains(t))
        .map(|(v, _)| v.clone())
        .collect();
    if !additions.is_empty() {
        array_mut(obj, key, path)?.extend(additions);
    }
    Ok(())
}

/// Appends each of `env_from` to every container that has no identical entry (upstream's
/// `InjectEnvFromIntoDeployment`).
///
/// # Errors
///
/// As [`inject_env`], for `envFrom`.
pub fn inject_env_from(
    pod_spec: &mut Map<String, Value>,
    env_from: &[Value],
) -> Result<(), ShapeError> {
    let new_typed = typed_all(env_from, ENV_FROM_SOURCE, "envFrom")?;
    if env_from.is_empty() {
        return Ok(());
    }
    each_container(pod_spec, |container, path| {
        append_unless_identical(
            container,
            "envFrom",
            path,
            env_from,
            &new_typed,
            ENV_FROM_SOURCE,
        )
    })
}

/// Each of `new` replaces the entry of `list` (at `path`) with its name among those already
/// there (the last of `new` wins when several share it), or is appended.
fn replace_or_append(
    list: &mut Vec<Value>,
    new: &[Value],
    path: &str,
    arg: &str,
) -> Result<(), ShapeError> {
    let new_names = names(new, arg)?;
    let old_names: Vec<String> = names(list, path)?.into_iter().map(str::to_owned).collect();
    for (name, item) in new_names.iter().zip(new) {
        match old_names.iter().position(|n| n == name) {
            Some(at) => {
                if let Some(slot) = list.get_mut(at) {
                    *slot = item.clone();
                }
            }
            None => list.push(item.clone()),
        }
    }
    Ok(())
}

/// Adds `volumes` to `pod_spec`, replacing a volume of the same name (upstream's
/// `InjectVolumesIntoDeployment`).
///
/// # Errors
///
/// As [`inject_env`], for `volumes`.
pub fn inject_volumes(
    pod_spec: &mut Map<String, Value>,
    volumes: &[Value],
) -> Result<(), ShapeError> {
    names(volumes, "volumes")?;
    if volumes.is_empty() {
        return Ok(());
    }
    let list = array_mut(pod_spec, "volumes", "")?;
    replace_or_append(list, volumes, "volumes", "volumes")
}

/// Adds `mounts` to every container, replacing a mount of the same name (upstream's
/// `InjectVolumeMountsIntoDeployment`).
///
/// # Errors
///
/// As [`inject_env`], for `volumeMounts`.
pub fn inject_volume_mounts(
    pod_spec: &mut Map<String, Value>,
    mounts: &[Value],
) -> Result<(), ShapeError> {
    names(mounts, "volumeMounts")?;
    if mounts.is_empty() {
        return Ok(());
    }
    each_container(pod_spec, |container, path| {
        let list = array_mut(container, "volumeMounts", path)?;
        replace_or_append(list, mounts, &join(path, "volumeMounts"), "volumeMounts")
    })
}

/// Appends each of `tolerations` the pod does not already have identically (upstream's
/// `InjectTolerationsIntoDeployment`).
///
/// # Errors
///
/// As [`inject_env`], for `tolerations`.
pub fn inject_tolerations(
    pod_spec: &mut Map<String, Value>,
    tolerations: &[Value],
) -> Result<(), ShapeError> {
    let new_typed = typed_all(tolerations, TOLERATION, "tolerations")?;
    if tolerations.is_empty() {
        return Ok(());
    }
    append_unless_identical(
        pod_spec,
        "tolerations",
        "",
        tolerations,
        &new_typed,
        TOLERATION,
    )
}

/// Sets every container's `resources` to `resources` when given (upstream's
/// `InjectResourcesIntoDeployment`); `{}` clears them.
///
/// # Errors
///
/// `resources` or a container that is not an object.
pub fn inject_resources(
    pod_spec: &mut Map<String, Value>,
    resources: Option<&Value>,
) -> Result<(), ShapeError> {
    let resources = match resources {
        None | Some(Value::Null) => return Ok(()),
        Some(r @ Value::Object(_)) => r,
        Some(other) => {
            return Err(ShapeError::new(
                "resources".to_owned(),
                AN_OBJECT,
                Some(other),
            ));
        }
    };
    each_container(pod_spec, |container, _| {
        container.insert("resources".to_owned(), resources.clone());
        Ok(())
    })
}

/// Sets the pod's `nodeSelector` to `node_selector` when given (upstream's
/// `InjectNodeSelectorIntoDeployment`); an empty one clears it.
pub fn inject_node_selector(
    pod_spec: &mut Map<String, Value>,
    node_selector: Option<&BTreeMap<String, String>>,
) {
    if let Some(selector) = node_selector {
        pod_spec.insert("nodeSelector".to_owned(), to_object(selector));
    }
}

fn is_zero_affinity(v: &Value, path: &str) -> Result<bool, ShapeError> {
    Ok(typed(v, AFFINITY, path)?.is_empty())
}

/// Overrides the pod's `affinity` with `affinity` part by part (upstream's
/// `OverrideDeploymentAffinity`, with the documented meaning of `podAntiAffinity: {}`; see the
/// module documentation):
///
/// 1. No override: nothing changes.
/// 2. The pod has no affinity (or an empty one): it gets the override, or none if the override
///    is empty.
/// 3. An empty override removes the pod's affinity.
/// 4. Otherwise each part the override sets replaces the pod's, an empty part removes it, and
///    an affinity left with no part is removed.
///
/// # Errors
///
/// `affinity`, the pod's affinity, or a part of either, that is not an object; a part's field
/// of the wrong type.
pub fn override_affinity(
    pod_spec: &mut Map<String, Value>,
    affinity: Option<&Value>,
) -> Result<(), ShapeError> {
    let Some(over) = affinity.filter(|a| !a.is_null()) else {
        return Ok(());
    };
    let over_parts = typed(over, AFFINITY, "affinity")?;
    let current_zero = match pod_spec.get("affinity") {
        None => true,
        Some(current) => is_zero_affinity(current, "affinity")?,
    };
    if current_zero || over_parts.is_empty() {
        if over_parts.is_empty() {
            pod_spec.shift_remove("affinity");
        } else {
            pod_spec.insert("affinity".to_owned(), over.clone());
        }
        return Ok(());
    }
    let current = child_mut(pod_spec, "affinity", "")?;
    for part in AFFINITY_PARTS {
        let Some(typed_part) = over_parts.get(part) else {
            continue;
        };
        let cleared = typed_part.as_object().is_some_and(Map::is_empty);
        match over.get(part) {
            Some(given) if !cleared => {
                current.insert(part.to_owned(), given.clone());
            }
            _ => {
                current.shift_remove(part);
            }
        }
    }
    let left = Value::Object(std::mem::take(current));
    if is_zero_affinity(&left, "affinity")? {
        pod_spec.shift_remove("affinity");
    } else {
        pod_spec.insert("affinity".to_owned(), left);
    }
    Ok(())
}

/// Adds `annotations` to the Deployment's and its pod template's annotations, keeping the value
/// of every key already there (upstream's `InjectAnnotationsIntoDeployment`).
///
/// # Errors
///
/// `metadata`, `spec`, `spec.template`, `spec.template.metadata` or an `annotations` map that
/// is not an object, or an annotation value that is not a string.
pub fn inject_annotations(
    deployment: &mut Map<String, Value>,
    annotations: Option<&BTreeMap<String, String>>,
) -> Result<(), ShapeError> {
    let Some(new) = annotations.filter(|a| !a.is_empty()) else {
        return Ok(());
    };
    add_missing(child_mut(deployment, "metadata", "")?, new, "metadata")?;
    let spec = child_mut(deployment, "spec", "")?;
    let template = child_mut(spec, "template", "spec")?;
    add_missing(
        child_mut(template, "metadata", "spec.template")?,
        new,
        "spec.template.metadata",
    )
}

/// `meta.annotations` (at `path`) with each of `new` it lacks.
fn add_missing(
    meta: &mut Map<String, Value>,
    new: &BTreeMap<String, String>,
    path: &str,
) -> Result<(), ShapeError> {
    let mut merged = new.clone();
    merged.extend(string_map(meta, "annotations", path)?.unwrap_or_default());
    meta.insert("annotations".to_owned(), to_object(&merged));
    Ok(())
}

/// The cluster-wide proxy OpenShift publishes in the `status` of its `Proxy` named `cluster`;
/// all empty where there is none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterProxy {
    /// `status.httpProxy`.
    pub http_proxy: String,
    /// `status.httpsProxy`.
    pub https_proxy: String,
    /// `status.noProxy`.
    pub no_proxy: String,
}

impl ClusterProxy {
    /// The proxy as container variables, in [`PROXY_ENV_NAMES`] order, the empty ones left out
    /// (an empty value means unset).
    pub fn env(&self) -> Vec<Value> {
        PROXY_ENV_NAMES
            .iter()
            .zip([&self.http_proxy, &self.https_proxy, &self.no_proxy])
            .filter(|(_, value)| !value.is_empty())
            .map(|(name, value)| env_var(name, value))
            .collect()
    }
}

/// `{"name": name, "value": value}`.
pub(crate) fn env_var(name: &str, value: &str) -> Value {
    let mut var = Map::new();
    var.insert("name".to_owned(), Value::String(name.to_owned()));
    var.insert("value".to_owned(), Value::String(value.to_owned()));
    Value::Object(var)
}

/// A Subscription's `spec.config`, checked: every field [`Overrides::apply`] reads has the
/// JSON type Kubernetes gives it. `selector` is accepted and, as upstream, ignored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubscriptionConfig {
    env: Vec<Value>,
    env_from: Vec<Value>,
    volumes: Vec<Value>,
    volume_mounts: Vec<Value>,
    tolerations: Vec<Value>,
    resources: Option<Value>,
    node_selector: Option<BTreeMap<String, String>>,
    affinity: Option<Value>,
    annotations: Option<BTreeMap<String, String>>,
}

impl SubscriptionConfig {
    /// Reads `config`, a Subscription's `spec.config` (`null` is no config).
    ///
    /// # Errors
    ///
    /// A field of the wrong JSON type, with its path within `config`.
    pub fn from_config(config: &Value) -> Result<Self, ShapeError> {
        let obj = match config {
            Value::Null => return Ok(Self::default()),
            Value::Object(m) => m,
            other => return Err(ShapeError::new(String::new(), AN_OBJECT, Some(other))),
        };
        let list = |key: &str| -> Result<Vec<Value>, ShapeError> {
            Ok(array(obj, key, "")?.cloned().unwrap_or_default())
        };
        let config = Self {
            env: list("env")?,
            env_from: list("envFrom")?,
            volumes: list("volumes")?,
            volume_mounts: list("volumeMounts")?,
            tolerations: list("tolerations")?,
            resources: object(obj, "resources", "")?.cloned().map(Value::Object),
            node_selector: string_map(obj, "nodeSelector", "")?,
            affinity: object(obj, "affinity", "")?.cloned().map(Value::Object),
            annotations: string_map(obj, "annotations", "")?,
        };
        names(&config.env, "env")?;
        names(&config.volumes, "volumes")?;
        names(&config.volume_mounts, "volumeMounts")?;
        typed_all(&config.env_from, ENV_FROM_SOURCE, "envFrom")?;
        typed_all(&config.tolerations, TOLERATION, "tolerations")?;
        if let Some(affinity) = &config.affinity {
            typed(affinity, AFFINITY, "affinity")?;
        }
        Ok(config)
    }

    /// Reads `subscription.spec.config`.
    ///
    /// # Errors
    ///
    /// As [`SubscriptionConfig::from_config`], the path within the Subscription.
    pub fn from_subscription(subscription: &Value) -> Result<Self, ShapeError> {
        let config = subscription
            .get("spec")
            .and_then(|spec| spec.get("config"))
            .unwrap_or(&Value::Null);
        Self::from_config(config).map_err(|e| e.within("spec.config"))
    }

    /// Whether `env` sets one of the proxy variables, which keeps the cluster's proxy out.
    fn overrides_proxy(&self) -> bool {
        self.env
            .iter()
            .filter_map(|v| v.get("name").and_then(Value::as_str))
            .any(|name| PROXY_ENV_NAMES.contains(&name))
    }
}

/// The Subscription whose config applies to the CSV named `csv_name`: the first of
/// `subscriptions` (those of the CSV's namespace) whose `status.installedCSV` names it
/// (upstream's `findOwner`). Upstream takes the first its cache lists; callers pass them in a
/// stable order (by name) so that the choice does not change between runs.
pub fn owner_subscription<'a>(
    subscriptions: impl IntoIterator<Item = &'a Subscription>,
    csv_name: &str,
) -> Option<&'a Subscription> {
    subscriptions
        .into_iter()
        .find(|sub| sub.status.as_ref().and_then(|s| s.installed_csv.as_deref()) == Some(csv_name))
}

/// What olm-operator's deployment initializer applies to each Deployment of a CSV.
#[derive(Debug, Clone, Copy, Default)]
pub struct Overrides<'a> {
    /// The owning Subscription's config ([`owner_subscription`]); `None` without one.
    pub config: Option<&'a SubscriptionConfig>,
    /// The cluster's proxy (OpenShift only); `None` elsewhere.
    pub proxy: Option<&'a ClusterProxy>,
}

impl Overrides<'_> {
    /// Applies everything to `deployment`, in upstream's order (see the module documentation):
    /// env (with the cluster proxy unless the config sets a proxy variable), envFrom, volumes,
    /// volumeMounts, tolerations, resources, nodeSelector, affinity, annotations. The proxy
    /// applies even without a config, as upstream's does.
    ///
    /// # Errors
    ///
    /// A part of `deployment` of the wrong JSON type, with its path in the Deployment.
    pub fn apply(&self, deployment: &mut Value) -> Result<(), ShapeError> {
        match deployment {
            Value::Object(m) => self.apply_to(m),
            other => Err(ShapeError::new(String::new(), AN_OBJECT, Some(&*other))),
        }
    }

    /// [`Overrides::apply`] on the Deployment's fields.
    pub(crate) fn apply_to(&self, deployment: &mut Map<String, Value>) -> Result<(), ShapeError> {
        let none = SubscriptionConfig::default();
        let config = self.config.unwrap_or(&none);
        let mut env = config.env.clone();
        if let Some(proxy) = self.proxy
            && !config.overrides_proxy()
        {
            env.extend(proxy.env());
        }
        with_pod_spec(deployment, |pod| {
            inject_env(pod, &env)?;
            inject_env_from(pod, &config.env_from)?;
            inject_volumes(pod, &config.volumes)?;
            inject_volume_mounts(pod, &config.volume_mounts)?;
            inject_tolerations(pod, &config.tolerations)?;
            inject_resources(pod, config.resources.as_ref())?;
            inject_node_selector(pod, config.node_selector.as_ref());
            override_affinity(pod, config.affinity.as_ref())
        })?;
        inject_annotations(deployment, config.annotations.as_ref())
    }
}

/// Runs `f` on the pod spec of `deployment` (`spec.template.spec`), its errors' paths made
/// the Deployment's. Where there is no pod spec, `f` works on an empty one, added only if `f`
/// leaves something in it, so that nothing changes where nothing is injected.
///
/// # Errors
///
/// A level of the path that is not an object, or `f`'s error.
pub(crate) fn with_pod_spec(
    deployment: &mut Map<String, Value>,
    f: impl FnOnce(&mut Map<String, Value>) -> Result<(), ShapeError>,
) -> Result<(), ShapeError> {
    let at = |e: ShapeError| e.within(POD_SPEC_PATH);
    let present = match object(deployment, "spec", "")? {
        Some(spec) => match object(spec, "template", "spec")? {
            Some(template) => object(template, "spec", "spec.template")?.is_some(),
            None => false,
        },
        None => false,
    };
    if present {
        return f(pod_spec_mut(deployment)?).map_err(at);
    }
    let mut fresh = Map::new();
    f(&mut fresh).map_err(at)?;
    if !fresh.is_empty() {
        pod_spec_mut(deployment)?.extend(fresh);
    }
    Ok(())
}

/// The pod spec of `deployment`, created empty where absent.
fn pod_spec_mut(
    deployment: &mut Map<String, Value>,
) -> Result<&mut Map<String, Value>, ShapeError> {
    let spec = child_mut(deployment, "spec", "")?;
    let template = child_mut(spec, "template", "spec")?;
    child_mut(template, "spec", "spec.template")
}
