//! What a manifest looks like after a round trip through the Go API types.
//!
//! Upstream decodes CRDs and Deployment specs into typed Go structs and encodes them again, so
//! fields with zero values and no `omitempty` appear (`strategy: {}`, `resources: {}`,
//! `status: {}`, `storedVersions: null`), `omitempty` fields with zero values vanish
//! (`nullable: false`, `preserveUnknownFields: false`), unknown schema keywords are dropped, and
//! `metadata.creationTimestamp: null` disappears (it is `omitzero` in current apimachinery).
//! Only the types the renderer emits are modelled; objects that upstream keeps unstructured are
//! left alone.

use serde_json::{Map, Value, json};

/// Removes the zero `creationTimestamp` Go no longer writes.
pub fn normalize_object_meta(meta: &mut Value) {
    if let Some(m) = meta.as_object_mut() {
        if m.get("creationTimestamp").is_some_and(Value::is_null) {
            m.remove("creationTimestamp");
        }
        for k in ["labels", "annotations"] {
            if m.get(k)
                .is_some_and(|v| v.is_null() || v.as_object().is_some_and(Map::is_empty))
            {
                m.remove(k);
            }
        }
    }
}

/// `apps/v1 DeploymentSpec` as Go writes it.
pub fn normalize_deployment_spec(spec: &mut Value) {
    if !spec.is_object() {
        *spec = json!({});
    }
    let Some(s) = spec.as_object_mut() else {
        return;
    };
    if !s.get("strategy").is_some_and(Value::is_object) {
        s.insert("strategy".into(), json!({}));
    }
    if !s.get("template").is_some_and(Value::is_object) {
        s.insert("template".into(), json!({}));
    }
    if let Some(t) = s.get_mut("template").and_then(Value::as_object_mut) {
        if !t.get("metadata").is_some_and(Value::is_object) {
            t.insert("metadata".into(), json!({}));
        }
        if let Some(m) = t.get_mut("metadata") {
            normalize_object_meta(m);
        }
        if !t.get("spec").is_some_and(Value::is_object) {
            t.insert("spec".into(), json!({}));
        }
        if let Some(pod) = t.get_mut("spec") {
            let containers_given = pod.get("containers").is_some_and(|c| !c.is_null());
            prune_pod(pod);
            prune_env_values(pod);
            pod_as_go_types(pod);
            if !containers_given && let Some(ps) = pod.as_object_mut() {
                ps.remove("containers");
            }
        }
        if let Some(ps) = t.get_mut("spec").and_then(Value::as_object_mut) {
            if !ps.contains_key("containers") {
                ps.insert("containers".into(), Value::Null);
            }
            for key in ["containers", "initContainers", "ephemeralContainers"] {
                if let Some(cs) = ps.get_mut(key).and_then(Value::as_array_mut) {
                    for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                        c.entry("name").or_insert_with(|| json!(""));
                        if !c.get("resources").is_some_and(Value::is_object) {
                            c.insert("resources".into(), json!({}));
                        }
                    }
                }
            }
        }
    }
}

/// Lists in the pod spec types that have no `omitempty` (they are written even when empty).
const POD_LISTS_WITHOUT_OMITEMPTY: &[&str] = &["containers", "nodeSelectorTerms", "sources"];

/// Drops what the Go pod types omit: `null` (nil pointers and slices) and empty lists, and an
/// empty environment variable value.
fn prune_pod(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, x| match x {
                Value::Null => false,
                Value::Array(a) if a.is_empty() => {
                    POD_LISTS_WITHOUT_OMITEMPTY.contains(&k.as_str())
                }
                _ => true,
            });
            for x in m.values_mut() {
                prune_pod(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(prune_pod),
        _ => {}
    }
}

fn prune_env_values(pod: &mut Value) {
    for key in ["containers", "initContainers", "ephemeralContainers"] {
        for c in pod
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            for e in c
                .get_mut("env")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(m) = e.as_object_mut()
                    && m.get("value").is_some_and(|v| v.as_str() == Some(""))
                {
                    m.remove("value");
                }
            }
        }
    }
}

/// Keys of `apiextensions/v1 CustomResourceDefinitionSpec`: upstream decodes every CRD, a legacy
/// `v1beta1` one too, into the v1 type, which drops the rest (`version`, `validation`, and the
/// top-level `subresources` and `additionalPrinterColumns`).
const CRD_SPEC_KEYS: &[&str] = &[
    "group",
    "names",
    "scope",
    "versions",
    "conversion",
    "preserveUnknownFields",
];
const CRD_VERSION_KEYS: &[&str] = &[
    "name",
    "served",
    "storage",
    "deprecated",
    "deprecationWarning",
    "schema",
    "subresources",
    "additionalPrinterColumns",
    "selectableFields",
];
const CRD_CONVERSION_KEYS: &[&str] = &["strategy", "webhook"];
const CRD_COLUMN_KEYS: &[&str] = &[
    "name",
    "type",
    "format",
    "description",
    "priority",
    "jsonPath",
];

/// Keeps the keys of `m` that a Go struct with JSON fields `keys` decodes, matched ignoring case
/// as Go matches them and renamed to the declared spelling (`JSONPath` becomes `jsonPath`).
fn keep_go_fields(m: &mut Map<String, Value>, keys: &[&str]) {
    let taken = std::mem::take(m);
    for (k, v) in taken {
        if let Some(declared) = keys.iter().find(|d| d.eq_ignore_ascii_case(&k)) {
            m.insert((*declared).to_owned(), v);
        }
    }
}

/// The CRD's spec as decoding it into the v1 Go type leaves it.
fn crd_spec_as_v1(spec: &mut Map<String, Value>) {
    keep_go_fields(spec, CRD_SPEC_KEYS);
    spec.entry("versions").or_insert(Value::Null);
    if let Some(c) = spec.get_mut("conversion").and_then(Value::as_object_mut) {
        keep_go_fields(c, CRD_CONVERSION_KEYS);
    }
    for v in spec
        .get_mut("versions")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        keep_go_fields(v, CRD_VERSION_KEYS);
        for c in v
            .get_mut("additionalPrinterColumns")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            keep_go_fields(c, CRD_COLUMN_KEYS);
        }
    }
}

/// Keys of `core/v1 Volume`: its name and the members of the inline `VolumeSource`. Anything
/// else beside the name (a mis-indented `secretName`) is dropped by Go's decoding.
const VOLUME_KEYS: &[&str] = &[
    "name",
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// `int32` fields of `core/v1 Probe` tagged `omitempty`: a 0 is not written.
const PROBE_OMITEMPTY_INTS: &[&str] = &[
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
];

/// What a round trip through `core/v1 PodSpec` changes beyond dropping nulls and empty lists:
/// unknown keys of a volume vanish, probes lose zero `omitempty` numbers, and a
/// `resourceFieldRef` gains `divisor: "0"` (a `Quantity` struct is never omitted).
fn pod_as_go_types(pod: &mut Value) {
    let Some(p) = pod.as_object_mut() else { return };
    for v in p
        .get_mut("volumes")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        keep_go_fields(v, VOLUME_KEYS);
        let downward = v.get_mut("downwardAPI").and_then(|d| d.get_mut("items"));
        for item in downward.and_then(Value::as_array_mut).into_iter().flatten() {
            default_divisor(item.get_mut("resourceFieldRef"));
        }
        let sources = v.get_mut("projected").and_then(|d| d.get_mut("sources"));
        for src in sources.and_then(Value::as_array_mut).into_iter().flatten() {
            let items = src.get_mut("downwardAPI").and_then(|d| d.get_mut("items"));
            for item in items.and_then(Value::as_array_mut).into_iter().flatten() {
                default_divisor(item.get_mut("resourceFieldRef"));
            }
        }
    }
    for key in ["containers", "initContainers", "ephemeralContainers"] {
        for c in p
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                if let Some(pr) = c.get_mut(probe).and_then(Value::as_object_mut) {
                    pr.retain(|k, v| {
                        !(PROBE_OMITEMPTY_INTS.contains(&k.as_str()) && v.as_i64() == Some(0))
                    });
                }
            }
            for e in c
                .get_mut("env")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                default_divisor(e.pointer_mut("/valueFrom/resourceFieldRef"));
            }
        }
    }
}

fn default_divisor(selector: Option<&mut Value>) {
    if let Some(m) = selector.and_then(Value::as_object_mut) {
        let d = m.entry("divisor").or_insert_with(|| json!("0"));
        if d.is_null() {
            *d = json!("0");
        }
    }
}

/// `apiextensions/v1 CustomResourceDefinition` as Go writes it.
pub fn normalize_crd(crd: &mut Value) {
    let Some(o) = crd.as_object_mut() else { return };
    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
        crd_spec_as_v1(spec);
    }
    if let Some(m) = o.get_mut("metadata") {
        normalize_object_meta(m);
    }
    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
        if spec
            .get("preserveUnknownFields")
            .is_some_and(|v| v == &Value::Bool(false))
        {
            spec.remove("preserveUnknownFields");
        }
        if let Some(names) = spec.get_mut("names") {
            normalize_names(names);
        }
        if let Some(vs) = spec.get_mut("versions").and_then(Value::as_array_mut) {
            for v in vs.iter_mut().filter_map(Value::as_object_mut) {
                for k in ["served", "storage"] {
                    v.entry(k).or_insert(Value::Bool(false));
                }
                if v.get("deprecated")
                    .is_some_and(|d| d == &Value::Bool(false))
                {
                    v.remove("deprecated");
                }
                if let Some(s) = v
                    .get_mut("schema")
                    .and_then(|s| s.get_mut("openAPIV3Schema"))
                {
                    normalize_schema(s);
                }
                if let Some(cols) = v
                    .get_mut("additionalPrinterColumns")
                    .and_then(Value::as_array_mut)
                {
                    for c in cols.iter_mut().filter_map(Value::as_object_mut) {
                        if c.get("priority").is_some_and(|p| p.as_i64() == Some(0)) {
                            c.remove("priority");
                        }
                    }
                }
            }
        }
    }
    let status = o.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let Some(st) = status.as_object_mut() {
        let names = st.entry("acceptedNames").or_insert_with(|| json!({}));
        normalize_names(names);
        st.entry("conditions").or_insert(Value::Null);
        st.entry("storedVersions").or_insert(Value::Null);
    }
}

fn normalize_names(names: &mut Value) {
    if !names.is_object() {
        *names = json!({});
    }
    if let Some(n) = names.as_object_mut() {
        n.entry("plural").or_insert_with(|| json!(""));
        n.entry("kind").or_insert_with(|| json!(""));
        for k in ["singular", "listKind"] {
            if n.get(k)
                .is_some_and(|v| v.as_str() == Some("") || v.is_null())
            {
                n.remove(k);
            }
        }
        for k in ["shortNames", "categories"] {
            if n.get(k)
                .is_some_and(|v| v.is_null() || v.as_array().is_some_and(Vec::is_empty))
            {
                n.remove(k);
            }
        }
    }
}

/// `JSONSchemaProps`: every field is `omitempty`, unknown keywords are dropped.
pub fn normalize_schema(s: &mut Value) {
    let Some(m) = s.as_object_mut() else { return };
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        let drop = {
            let Some(v) = m.get_mut(&k) else { continue };
            match k.as_str() {
                "id" | "$schema" | "$ref" | "description" | "type" | "format" | "title"
                | "pattern" => v.as_str().is_none_or(str::is_empty),
                "default" | "example" => false,
                "maximum" | "minimum" | "multipleOf" | "maxLength" | "minLength" | "maxItems"
                | "minItems" | "maxProperties" | "minProperties" => v.is_null(),
                "exclusiveMaximum"
                | "exclusiveMinimum"
                | "uniqueItems"
                | "nullable"
                | "x-kubernetes-embedded-resource"
                | "x-kubernetes-int-or-string" => v != &Value::Bool(true),
                "x-kubernetes-preserve-unknown-fields" => !v.is_boolean(),
                "x-kubernetes-list-type" | "x-kubernetes-map-type" => !v.is_string(),
                "enum" | "required" | "x-kubernetes-list-map-keys" => {
                    v.as_array().is_none_or(Vec::is_empty)
                }
                "x-kubernetes-validations" => {
                    if let Some(a) = v.as_array_mut() {
                        for r in a.iter_mut().filter_map(Value::as_object_mut) {
                            r.entry("rule").or_insert_with(|| json!(""));
                            r.retain(|k, v| {
                                k == "rule"
                                    || (matches!(
                                        k.as_str(),
                                        "message" | "messageExpression" | "reason" | "fieldPath"
                                    ) && v.as_str().is_some_and(|s| !s.is_empty()))
                                    || (k == "optionalOldSelf" && v.is_boolean())
                            });
                        }
                    }
                    v.as_array().is_none_or(Vec::is_empty)
                }
                "allOf" | "oneOf" | "anyOf" => match v.as_array_mut() {
                    Some(a) if !a.is_empty() => {
                        a.iter_mut().for_each(normalize_schema);
                        false
                    }
                    _ => true,
                },
                "not" => {
                    normalize_schema(v);
                    !v.is_object()
                }
                "items" => match v {
                    Value::Object(_) => {
                        normalize_schema(v);
                        false
                    }
                    Value::Array(a) => {
                        a.iter_mut().for_each(normalize_schema);
                        false
                    }
                    _ => true,
                },
                "additionalProperties" | "additionalItems" => match v {
                    Value::Object(_) => {
                        normalize_schema(v);
                        false
                    }
                    Value::Bool(_) => false,
                    _ => true,
                },
                "properties" | "patternProperties" | "definitions" => match v.as_object_mut() {
                    Some(p) if !p.is_empty() => {
                        p.values_mut().for_each(normalize_schema);
                        false
                    }
                    _ => true,
                },
                "dependencies" => match v.as_object_mut() {
                    Some(p) if !p.is_empty() => {
                        p.values_mut()
                            .filter(|x| x.is_object())
                            .for_each(normalize_schema);
                        false
                    }
                    _ => true,
                },
                "externalDocs" => {
                    if let Some(d) = v.as_object_mut() {
                        d.retain(|k, v| {
                            matches!(k.as_str(), "description" | "url")
                                && v.as_str().is_some_and(|s| !s.is_empty())
                        });
                    }
                    !v.is_object()
                }
                _ => true,
            }
        };
        if drop {
            m.remove(&k);
        }
    }
}

/// `resource.Quantity` in its canonical text, as Go writes a quantity it has parsed:
/// `1000m` → `1`, `1024Mi` → `1Gi`, `0.5` → `500m`, `1000` → `1k`. `None` when the value is not
/// a quantity Go would accept (it is then left as written).
pub fn canonical_quantity(v: &Value) -> Option<String> {
    let text = match v {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let (neg, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, &text[..]),
    };
    let num_len = body
        .bytes()
        .take_while(|c| c.is_ascii_digit() || *c == b'.')
        .count();
    let (num, suffix) = body.split_at(num_len);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return None;
    }
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    let digits = format!("{int_part}{frac_part}");
    if digits.len() > 30 {
        return None;
    }
    let mut mantissa: i128 = digits.parse().ok()?;
    let mut exp10: i32 = -(frac_part.len() as i32);
    #[derive(PartialEq)]
    enum Format {
        Binary,
        DecimalSi,
        Exponent,
    }
    let format = match suffix {
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let k = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .iter()
                .position(|s| *s == suffix)? as u32
                + 1;
            mantissa = mantissa.checked_mul(1024i128.checked_pow(k)?)?;
            Format::Binary
        }
        "n" | "u" | "m" | "" | "k" | "M" | "G" | "T" | "P" | "E" => {
            let k = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"]
                .iter()
                .position(|s| *s == suffix)? as i32;
            exp10 += (k - 3) * 3;
            Format::DecimalSi
        }
        s if s.starts_with(['e', 'E']) => {
            exp10 += s[1..].parse::<i32>().ok()?;
            Format::Exponent
        }
        _ => return None,
    };
    // Strip trailing zeros so the value is (mantissa, exponent) in lowest terms.
    if mantissa == 0 {
        return Some("0".into());
    }
    while mantissa % 10 == 0 {
        mantissa /= 10;
        exp10 += 1;
    }
    if exp10 < -9 {
        // Below nano precision Go rounds; leave such rare values untouched.
        return None;
    }
    let sign = if neg { "-" } else { "" };
    if format == Format::Binary && exp10 >= 0 {
        let mut n = mantissa.checked_mul(10i128.checked_pow(exp10 as u32)?)?;
        if n >= 1024 {
            let mut k = 0;
            while n % 1024 == 0 && k < 6 {
                n /= 1024;
                k += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][k];
            return Some(format!("{sign}{n}{suffix}"));
        }
    }
    while exp10.rem_euclid(3) != 0 {
        mantissa = mantissa.checked_mul(10)?;
        exp10 -= 1;
    }
    let suffix = match (format, exp10) {
        (Format::Exponent, 0) => String::new(),
        (Format::Exponent, e) => format!("e{e}"),
        (_, e) if (-9..=18).contains(&e) => {
            ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"][((e + 9) / 3) as usize].to_string()
        }
        (_, e) => format!("e{e}"),
    };
    Some(format!("{sign}{mantissa}{suffix}"))
}

/// Canonicalises the quantities of every container's `resources` in a pod spec.
pub fn canonicalize_pod_quantities(pod: &mut Value) {
    for key in ["containers", "initContainers", "ephemeralContainers"] {
        let Some(cs) = pod.get_mut(key).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in cs {
            for list in ["limits", "requests"] {
                if let Some(m) = c
                    .pointer_mut(&format!("/resources/{list}"))
                    .and_then(Value::as_object_mut)
                {
                    for v in m.values_mut() {
                        if let Some(q) = canonical_quantity(v) {
                            *v = Value::String(q);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Go's `core/v1` types make of a pod spec (held to operator-controller's renderer on the
    /// data bundles by `tests/data_bundles.rs`).
    #[test]
    fn pods_as_go_types_write_them() {
        let mut pod = json!({
            "volumes": [{"name": "certs", "secretName": "s", "defaultMode": 420, "secret": {"secretName": "s"}}],
            "containers": [{
                "name": "c",
                "livenessProbe": {"initialDelaySeconds": 0, "periodSeconds": 10, "terminationGracePeriodSeconds": 0},
                "env": [{"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}]
            }]
        });
        pod_as_go_types(&mut pod);
        assert_eq!(
            pod["volumes"][0],
            json!({"name": "certs", "secret": {"secretName": "s"}})
        );
        assert_eq!(
            pod["containers"][0]["livenessProbe"],
            json!({"periodSeconds": 10, "terminationGracePeriodSeconds": 0})
        );
        assert_eq!(
            pod["containers"][0]["env"][0]["valueFrom"]["resourceFieldRef"],
            json!({"resource": "limits.memory", "divisor": "0"})
        );
    }

    /// A legacy v1beta1 CRD decoded into the v1 type: v1beta1-only fields vanish, `versions` is
    /// null when absent, and a column's `JSONPath` is read as `jsonPath`.
    #[test]
    fn v1beta1_crds_keep_only_v1_fields() {
        let mut spec = json!({
            "group": "g", "version": "v1", "validation": {}, "subresources": {"status": {}},
            "additionalPrinterColumns": [], "names": {"kind": "K", "plural": "ks"}, "scope": "Namespaced"
        });
        crd_spec_as_v1(spec.as_object_mut().unwrap());
        assert_eq!(
            spec,
            json!({"group": "g", "names": {"kind": "K", "plural": "ks"}, "scope": "Namespaced", "versions": null})
        );
        let mut spec = json!({"versions": [{"name": "v1", "additionalPrinterColumns": [{"name": "A", "JSONPath": ".a"}]}],
            "conversion": {"strategy": "None", "conversionReviewVersions": ["v1"]}});
        crd_spec_as_v1(spec.as_object_mut().unwrap());
        assert_eq!(
            spec["versions"][0]["additionalPrinterColumns"][0],
            json!({"name": "A", "jsonPath": ".a"})
        );
        assert_eq!(spec["conversion"], json!({"strategy": "None"}));
    }

    #[test]
    fn quantities_are_canonical_like_go() {
        let cases = [
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("100m", "100m"),
            ("0.5", "500m"),
            ("1000", "1k"),
            ("1024Mi", "1Gi"),
            ("1500Mi", "1500Mi"),
            ("128Mi", "128Mi"),
            ("1.5Gi", "1536Mi"),
            ("100n", "100n"),
            ("1", "1"),
            ("0", "0"),
            ("2048", "2048"),
            ("512Ki", "512Ki"),
            ("1e3", "1e3"),
            ("500M", "500M"),
        ];
        for (i, want) in cases {
            assert_eq!(
                canonical_quantity(&Value::String(i.into())).as_deref(),
                Some(want),
                "{i}"
            );
        }
        assert_eq!(canonical_quantity(&json!(2)).as_deref(), Some("2"));
        assert_eq!(canonical_quantity(&json!("lots")), None);
    }
}
