//! The per-bundle configuration of a ClusterExtension (`spec.config.inline`): its JSON schema,
//! validation with upstream's messages, and how `deploymentConfig` changes Deployments.
//!
//! The schema depends on the bundle's install modes: `watchNamespace` exists only when
//! OwnNamespace or SingleNamespace is supported, is required unless AllNamespaces is also
//! supported, and carries a format that ties it to the install namespace when only one of Own /
//! Single is supported. Validation is hand-written rather than delegated to a JSON-schema crate
//! because the messages users see are upstream's reformatting of its schema library's output,
//! and those must match.

use olm_k8s::{DNS1123_LABEL_PATTERN, matches_dns1123_label_pattern};
use serde_json::{Map, Value, json};

use crate::csv::{ClusterServiceVersion, InstallModeType};
use crate::goyaml;
use crate::validate::go_quote;

/// The `deploymentConfig` fields and the JSON type each must have (upstream's frozen copy of
/// OLM v0's `SubscriptionConfig` without `selector`).
const DEPLOYMENT_CONFIG_FIELDS: &[(&str, &str)] = &[
    ("nodeSelector", "object"),
    ("tolerations", "array"),
    ("resources", "object"),
    ("envFrom", "array"),
    ("env", "array"),
    ("volumes", "array"),
    ("volumeMounts", "array"),
    ("affinity", "object"),
    ("annotations", "object"),
];

/// The shape of the Kubernetes types inside `deploymentConfig`, as far as their JSON schema
/// constrains them: field types and required fields (unknown fields are allowed, as in the
/// Kubernetes OpenAPI schemas).
enum Shape {
    Str,
    Bool,
    Int,
    /// `resource.Quantity`: a string or a number.
    Quantity,
    /// Any object.
    Object,
    Obj(&'static [(&'static str, Shape)], &'static [&'static str]),
    Arr(&'static Shape),
    MapOf(&'static Shape),
}

const OBJECT_REF: Shape = Shape::Obj(&[("name", Shape::Str), ("optional", Shape::Bool)], &[]);
const ENV_VAR: Shape = Shape::Obj(
    &[
        ("name", Shape::Str),
        ("value", Shape::Str),
        ("valueFrom", Shape::Object),
    ],
    &["name"],
);
const ENV_FROM: Shape = Shape::Obj(
    &[
        ("prefix", Shape::Str),
        ("configMapRef", OBJECT_REF),
        ("secretRef", OBJECT_REF),
    ],
    &[],
);
const VOLUME_MOUNT: Shape = Shape::Obj(
    &[
        ("name", Shape::Str),
        ("mountPath", Shape::Str),
        ("readOnly", Shape::Bool),
        ("subPath", Shape::Str),
        ("subPathExpr", Shape::Str),
        ("mountPropagation", Shape::Str),
        ("recursiveReadOnly", Shape::Str),
    ],
    &["mountPath", "name"],
);
const VOLUME: Shape = Shape::Obj(&[("name", Shape::Str)], &["name"]);
const TOLERATION: Shape = Shape::Obj(
    &[
        ("key", Shape::Str),
        ("operator", Shape::Str),
        ("value", Shape::Str),
        ("effect", Shape::Str),
        ("tolerationSeconds", Shape::Int),
    ],
    &[],
);
const RESOURCE_CLAIM: Shape =
    Shape::Obj(&[("name", Shape::Str), ("request", Shape::Str)], &["name"]);
const QUANTITIES: Shape = Shape::MapOf(&Shape::Quantity);
const RESOURCES: Shape = Shape::Obj(
    &[
        ("limits", QUANTITIES),
        ("requests", QUANTITIES),
        ("claims", Shape::Arr(&RESOURCE_CLAIM)),
    ],
    &[],
);
const AFFINITY: Shape = Shape::Obj(
    &[
        ("nodeAffinity", Shape::Object),
        ("podAffinity", Shape::Object),
        ("podAntiAffinity", Shape::Object),
    ],
    &[],
);
const NESTED: &[(&str, Shape)] = &[
    ("env", Shape::Arr(&ENV_VAR)),
    ("envFrom", Shape::Arr(&ENV_FROM)),
    ("volumeMounts", Shape::Arr(&VOLUME_MOUNT)),
    ("volumes", Shape::Arr(&VOLUME)),
    ("tolerations", Shape::Arr(&TOLERATION)),
    ("resources", RESOURCES),
    ("affinity", AFFINITY),
];

/// Reports values that do not fit `shape`, with upstream's phrasing: a `null` where a typed
/// value is expected reads as a missing required field, as upstream's formatter turns it.
fn check_shape(v: &Value, shape: &Shape, path: &str, errs: &mut Vec<String>) {
    let want = match shape {
        Shape::Str => "string",
        Shape::Bool => "boolean",
        Shape::Int => "integer",
        Shape::Quantity => "string or number",
        Shape::Object | Shape::Obj(..) | Shape::MapOf(_) => "object",
        Shape::Arr(_) => "array",
    };
    let got = json_type(v);
    let fits = match shape {
        Shape::Str => v.is_string(),
        Shape::Bool => v.is_boolean(),
        Shape::Int => v.is_i64() || v.is_u64(),
        Shape::Quantity => v.is_string() || v.is_number(),
        Shape::Object | Shape::Obj(..) | Shape::MapOf(_) => v.is_object(),
        Shape::Arr(_) => v.is_array(),
    };
    if !fits {
        if v.is_null() {
            errs.push(format!("required field {} is missing", go_quote(path)));
        } else {
            errs.push(format!(
                "invalid type for field {}: got {got}, want {want}",
                go_quote(path)
            ));
        }
        return;
    }
    match (shape, v) {
        (Shape::Obj(fields, required), Value::Object(m)) => {
            for r in *required {
                if !m.contains_key(*r) {
                    errs.push(format!("required field {} is missing", go_quote(r)));
                }
            }
            for (name, sub) in *fields {
                if let Some(x) = m.get(*name) {
                    check_shape(x, sub, &format!("{path}.{name}"), errs);
                }
            }
        }
        (Shape::Arr(item), Value::Array(a)) => {
            for (i, x) in a.iter().enumerate() {
                check_shape(x, item, &format!("{path}.{i}"), errs);
            }
        }
        (Shape::MapOf(item), Value::Object(m)) => {
            for (k, x) in m {
                check_shape(x, item, &format!("{path}.{k}"), errs);
            }
        }
        _ => {}
    }
}

/// How `watchNamespace` is constrained for a bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchNamespaceRule {
    /// Not configurable (neither OwnNamespace nor SingleNamespace supported).
    Absent,
    /// Configurable; `required` unless AllNamespaces is supported.
    Present {
        /// Whether a value must be given (it may be left out only when AllNamespaces is supported).
        required: bool,
        /// The shape the value must have, if constrained.
        format: Option<NamespaceFormat>,
    },
}

/// The custom formats upstream registers for `watchNamespace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceFormat {
    /// OwnNamespace only: must equal the install namespace.
    OwnNamespaceInstallMode,
    /// SingleNamespace only: must differ from the install namespace.
    SingleNamespaceInstallMode,
}

impl NamespaceFormat {
    fn name(self) -> &'static str {
        match self {
            Self::OwnNamespaceInstallMode => "ownNamespaceInstallMode",
            Self::SingleNamespaceInstallMode => "singleNamespaceInstallMode",
        }
    }
}

/// Derives the `watchNamespace` rule from the CSV's install modes.
pub fn watch_namespace_rule(csv: &ClusterServiceVersion) -> WatchNamespaceRule {
    let own = csv.supports(&InstallModeType::OwnNamespace);
    let single = csv.supports(&InstallModeType::SingleNamespace);
    let all = csv.supports(&InstallModeType::AllNamespaces);
    if !own && !single {
        return WatchNamespaceRule::Absent;
    }
    let format = match (own, single) {
        (true, false) => Some(NamespaceFormat::OwnNamespaceInstallMode),
        (false, true) => Some(NamespaceFormat::SingleNamespaceInstallMode),
        _ => None,
    };
    WatchNamespaceRule::Present {
        required: !all,
        format,
    }
}

/// The JSON schema (draft-07) of a bundle's configuration, as upstream builds it.
pub fn config_schema(csv: &ClusterServiceVersion) -> Value {
    let mut props = Map::new();
    if let WatchNamespaceRule::Present { required, format } = watch_namespace_rule(csv) {
        let mut s = json!({"type": "string", "minLength": 1, "maxLength": 63, "pattern": DNS1123_LABEL_PATTERN});
        if let (Some(f), Some(m)) = (format, s.as_object_mut()) {
            m.insert("format".into(), json!(f.name()));
        }
        let prop = if required {
            s
        } else {
            json!({"anyOf": [{"type": "null"}, s]})
        };
        props.insert("watchNamespace".into(), prop);
    }
    let dc: Map<String, Value> = DEPLOYMENT_CONFIG_FIELDS
        .iter()
        .map(|(k, t)| (k.to_string(), json!({"type": t})))
        .collect();
    props.insert(
        "deploymentConfig".into(),
        json!({"type": ["object", "null"], "additionalProperties": false, "properties": dc}),
    );
    let mut schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": false,
        "properties": props,
    });
    if matches!(
        watch_namespace_rule(csv),
        WatchNamespaceRule::Present { required: true, .. }
    ) && let Some(m) = schema.as_object_mut()
    {
        m.insert("required".into(), json!(["watchNamespace"]));
    }
    schema
}

/// A configuration that passed validation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BundleConfig {
    /// `watchNamespace`, when given.
    pub watch_namespace: Option<String>,
    /// `deploymentConfig`, when given, as validated.
    pub deployment_config: Option<Value>,
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Validates raw configuration (YAML or JSON; `None` is `{}`) against the bundle's schema.
/// The error is upstream's message without the `invalid configuration: ` prefix.
pub fn validate_config(
    csv: &ClusterServiceVersion,
    raw: Option<&str>,
    install_namespace: &str,
) -> Result<BundleConfig, String> {
    let value = match raw {
        None => json!({}),
        Some(text) => {
            let docs = goyaml::parse_documents(text)?;
            docs.into_iter().next().unwrap_or(json!({}))
        }
    };
    validate_config_value(csv, &value, install_namespace)
}

/// [`validate_config`] on an already decoded value.
pub fn validate_config_value(
    csv: &ClusterServiceVersion,
    value: &Value,
    install_namespace: &str,
) -> Result<BundleConfig, String> {
    let Some(obj) = value.as_object() else {
        return Err(format!(
            "invalid type: got {}, want object",
            json_type(value)
        ));
    };
    let rule = watch_namespace_rule(csv);
    let mut errs: Vec<String> = Vec::new();

    let mut unknown: Vec<&String> = obj
        .keys()
        .filter(|k| {
            !(k.as_str() == "deploymentConfig"
                || (k.as_str() == "watchNamespace" && rule != WatchNamespaceRule::Absent))
        })
        .collect();
    unknown.sort();
    if let Some(k) = unknown.first() {
        errs.push(format!("unknown field {}", go_quote(k)));
    }

    let mut watch = None;
    if let WatchNamespaceRule::Present { required, format } = rule {
        match obj.get("watchNamespace") {
            None | Some(Value::Null) if required => {
                errs.push("required field \"watchNamespace\" is missing".into());
            }
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => {
                let failed = namespace_string_errors(s, format, install_namespace);
                if failed.is_empty() {
                    watch = Some(s.clone());
                } else if required {
                    errs.extend(failed);
                } else {
                    // The optional field is `anyOf: [null, string]`: the anyOf fails, then its
                    // null branch, then the string branch (headed by its own unit when more
                    // than one of its keywords failed), as the schema library reports them.
                    errs.push("invalid value for field \"watchNamespace\"".into());
                    errs.push(
                        "invalid type for field \"watchNamespace\": got string, want null".into(),
                    );
                    if failed.len() > 1 {
                        errs.push("validation failed".into());
                    }
                    errs.extend(failed);
                }
            }
            Some(other) => {
                if required {
                    errs.push(format!(
                        "invalid type for field \"watchNamespace\": got {}, want string",
                        json_type(other)
                    ));
                } else {
                    errs.push("invalid value for field \"watchNamespace\"".into());
                }
            }
        }
    }

    let mut deployment_config = None;
    match obj.get("deploymentConfig") {
        None | Some(Value::Null) => {}
        Some(Value::Object(dc)) => {
            let mut keys: Vec<&String> = dc
                .keys()
                .filter(|k| !DEPLOYMENT_CONFIG_FIELDS.iter().any(|(f, _)| f == k))
                .collect();
            keys.sort();
            if let Some(k) = keys.first() {
                errs.push(format!("unknown field {}", go_quote(k)));
            }
            for (field, want) in DEPLOYMENT_CONFIG_FIELDS {
                if let Some(v) = dc.get(*field)
                    && json_type(v) != *want
                    && !v.is_null()
                {
                    errs.push(format!(
                        "invalid type for field \"deploymentConfig.{field}\": got {}, want {want}",
                        json_type(v)
                    ));
                }
            }
            for field in ["nodeSelector", "annotations"] {
                if let Some(m) = dc.get(field).and_then(Value::as_object) {
                    let mut ks: Vec<&String> = m.keys().collect();
                    ks.sort();
                    for k in ks {
                        if !m[k.as_str()].is_string() {
                            errs.push(format!(
                                "invalid type for field \"deploymentConfig.{field}.{k}\": got {}, want string",
                                json_type(&m[k.as_str()])
                            ));
                        }
                    }
                }
            }
            for (field, shape) in NESTED {
                if let Some(v) = dc.get(*field) {
                    check_shape(v, shape, &format!("deploymentConfig.{field}"), &mut errs);
                }
            }
            deployment_config = Some(Value::Object(dc.clone()));
        }
        Some(other) => errs.push(format!(
            "invalid type for field \"deploymentConfig\": got {}, want object or null",
            json_type(other)
        )),
    }

    match errs.len() {
        0 => Ok(BundleConfig {
            watch_namespace: watch,
            deployment_config,
        }),
        1 => Err(errs.remove(0)),
        _ => Err(format!(
            "multiple errors found:\n  - {}",
            errs.join("\n  - ")
        )),
    }
}

/// The keyword errors of the watch namespace string schema, in the schema library's order:
/// length and pattern, or only the format's when the format check fails (the library then
/// reports nothing else of that schema; checked against operator-controller v1.11.0).
fn namespace_string_errors(
    s: &str,
    format: Option<NamespaceFormat>,
    install_ns: &str,
) -> Vec<String> {
    if !install_ns.is_empty() {
        let wrong_format = match format {
            Some(NamespaceFormat::OwnNamespaceInstallMode) if s != install_ns => Some(format!(
                "invalid format for field \"watchNamespace\": '{s}' is not valid ownNamespaceInstallMode: invalid value {}: must be {} (the namespace where the operator is installed) because this operator only supports OwnNamespace install mode",
                go_quote(s),
                go_quote(install_ns)
            )),
            Some(NamespaceFormat::SingleNamespaceInstallMode) if s == install_ns => Some(format!(
                "invalid format for field \"watchNamespace\": '{s}' is not valid singleNamespaceInstallMode: invalid value {}: must be different from {} (the install namespace) because this operator uses SingleNamespace install mode to watch a different namespace",
                go_quote(s),
                go_quote(install_ns)
            )),
            _ => None,
        };
        if let Some(e) = wrong_format {
            return vec![e];
        }
    }
    let mut errs = Vec::new();
    let len = s.chars().count();
    if len < 1 {
        errs.push(format!(
            "field \"watchNamespace\" must have minimum length of 1 (len={len})"
        ));
    }
    if len > 63 {
        errs.push(format!(
            "field \"watchNamespace\" must have maximum length of 63 (len={len})"
        ));
    }
    if !matches_dns1123_label_pattern(s) {
        errs.push(format!(
            "field \"watchNamespace\" must match pattern {}",
            go_quote(DNS1123_LABEL_PATTERN)
        ));
    }
    errs
}

/// Applies a validated `deploymentConfig` to a rendered Deployment, with upstream's merge rules:
/// env and volumeMounts replace by name per container, envFrom and tolerations append when not
/// already present, volumes replace by name, resources and nodeSelector replace, affinity
/// replaces per kind (an empty one clears), annotations only fill keys that are absent. Empty
/// lists in the configuration change nothing.
pub fn apply_deployment_config(dep: &mut Value, cfg: &Value) {
    let Some(cfg) = cfg.as_object() else { return };
    let list = |k: &str| {
        cfg.get(k)
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
    };
    if let Some(pod) = dep
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
    {
        let containers: Vec<&mut Map<String, Value>> = pod
            .get_mut("containers")
            .and_then(Value::as_array_mut)
            .map(|a| a.iter_mut().filter_map(Value::as_object_mut).collect())
            .unwrap_or_default();
        for c in containers {
            if let Some(env) = list("env") {
                merge_by_name(c, "env", env);
            }
            if let Some(ef) = list("envFrom") {
                append_missing(c, "envFrom", ef);
            }
            if let Some(vm) = list("volumeMounts") {
                merge_by_name(c, "volumeMounts", vm);
            }
            if let Some(r) = cfg.get("resources").filter(|r| r.is_object()) {
                c.insert("resources".into(), r.clone());
            }
        }
        if let Some(v) = list("volumes") {
            merge_by_name(pod, "volumes", v);
        }
        if let Some(t) = list("tolerations") {
            append_missing(pod, "tolerations", t);
        }
        if let Some(ns) = cfg.get("nodeSelector").and_then(Value::as_object) {
            // An empty map replaces too, and Go then omits the field.
            if ns.is_empty() {
                pod.remove("nodeSelector");
            } else {
                pod.insert("nodeSelector".into(), Value::Object(ns.clone()));
            }
        }
        if let Some(aff) = cfg.get("affinity").and_then(Value::as_object) {
            apply_affinity(pod, aff);
        }
    }
    if let Some(ann) = cfg
        .get("annotations")
        .and_then(Value::as_object)
        .filter(|a| !a.is_empty())
    {
        for path in ["/metadata", "/spec/template/metadata"] {
            if let Some(meta) = dep.pointer_mut(path).and_then(Value::as_object_mut) {
                let existing = meta.entry("annotations").or_insert_with(|| json!({}));
                if let Some(e) = existing.as_object_mut() {
                    for (k, v) in ann {
                        e.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
        }
    }
}

/// Entries whose name already exists are replaced in place; the others are appended. Names are
/// looked up among the entries present before the merge, as upstream does.
fn merge_by_name(obj: &mut Map<String, Value>, key: &str, items: &[Value]) {
    let list = obj.entry(key).or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let Some(list) = list.as_array_mut() else {
        return;
    };
    let existing: std::collections::HashMap<String, usize> = list
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            e.get("name")
                .and_then(Value::as_str)
                .map(|n| (n.to_string(), i))
        })
        .collect();
    for item in items {
        match item
            .get("name")
            .and_then(Value::as_str)
            .and_then(|n| existing.get(n))
        {
            Some(&i) => list[i] = item.clone(),
            None => list.push(item.clone()),
        }
    }
}

fn append_missing(obj: &mut Map<String, Value>, key: &str, items: &[Value]) {
    let list = obj.entry(key).or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let Some(list) = list.as_array_mut() else {
        return;
    };
    for item in items {
        if !list.contains(item) {
            list.push(item.clone());
        }
    }
}

/// Upstream's notion of an empty (sub-)affinity: no terms at all, whatever objects are present.
fn affinity_part_empty(kind: &str, v: &Value) -> bool {
    let len = |p: &str| v.pointer(p).and_then(Value::as_array).map_or(0, Vec::len);
    match kind {
        "nodeAffinity" => {
            len("/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms") == 0
                && len("/preferredDuringSchedulingIgnoredDuringExecution") == 0
        }
        _ => {
            len("/requiredDuringSchedulingIgnoredDuringExecution") == 0
                && len("/preferredDuringSchedulingIgnoredDuringExecution") == 0
        }
    }
}

const AFFINITY_KINDS: [&str; 3] = ["nodeAffinity", "podAffinity", "podAntiAffinity"];

fn apply_affinity(pod: &mut Map<String, Value>, aff: &Map<String, Value>) {
    // `affinity: {}` (no kind set) erases the pod's affinity.
    if AFFINITY_KINDS
        .iter()
        .all(|k| aff.get(*k).is_none_or(Value::is_null))
    {
        pod.remove("affinity");
        return;
    }
    let current = pod.entry("affinity").or_insert_with(|| json!({}));
    if !current.is_object() {
        *current = json!({});
    }
    if let Some(cur) = current.as_object_mut() {
        for k in AFFINITY_KINDS {
            match aff.get(k) {
                None | Some(Value::Null) => {}
                Some(v) if affinity_part_empty(k, v) => {
                    cur.remove(k);
                }
                Some(v) => {
                    cur.insert(k.into(), v.clone());
                }
            }
        }
    }
    let empty = current.as_object().is_none_or(|cur| {
        AFFINITY_KINDS
            .iter()
            .all(|k| cur.get(*k).is_none_or(|v| affinity_part_empty(k, v)))
    });
    if empty {
        pod.remove("affinity");
    }
}
