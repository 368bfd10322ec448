//! The phases of a revision: which objects are applied together, in which order, and the digest
//! that pins a phase's content once the ClusterObjectSet controller has seen it.
//!
//! Objects are grouped by their group and kind into thirteen well-known phases applied in a
//! fixed order (namespaces before the policies, identities and configuration that live in them,
//! CRDs before the roles that name their resources, workloads before the monitoring objects and
//! webhooks that point at them). A kind no phase names goes to `deploy`: custom resources a
//! workload needs (cert-manager's `Certificate` aside, which has its own place) are applied with
//! it. Inside a phase objects are ordered by group, version, kind, namespace and name, so the
//! same objects always give the same phases whatever order the bundle listed them in.

use std::fmt;

use olm_api::{ClusterObjectSetObject, ClusterObjectSetPhase};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// A well-known phase. The declaration order is the order phases are applied in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// `Namespace`.
    Namespaces,
    /// `NetworkPolicy`, `PodDisruptionBudget`, `PriorityClass`.
    Policies,
    /// `ServiceAccount`.
    Identity,
    /// `Secret`, `ConfigMap`.
    Configuration,
    /// `PersistentVolume`, `PersistentVolumeClaim`, `StorageClass`.
    Storage,
    /// `CustomResourceDefinition`.
    Crds,
    /// `ClusterRole`, `Role`.
    Roles,
    /// `ClusterRoleBinding`, `RoleBinding`.
    Bindings,
    /// `Service` and cert-manager's `Issuer` and `Certificate`.
    Infrastructure,
    /// `Deployment` and every kind no other phase names.
    Deploy,
    /// `VerticalPodAutoscaler`.
    Scaling,
    /// Prometheus rules and monitors, `Ingress`, `Route` and the OpenShift console kinds.
    Publish,
    /// Validating and mutating webhook configurations.
    Admission,
}

impl Phase {
    /// Every phase, in application order.
    pub const ALL: [Phase; 13] = [
        Phase::Namespaces,
        Phase::Policies,
        Phase::Identity,
        Phase::Configuration,
        Phase::Storage,
        Phase::Crds,
        Phase::Roles,
        Phase::Bindings,
        Phase::Infrastructure,
        Phase::Deploy,
        Phase::Scaling,
        Phase::Publish,
        Phase::Admission,
    ];

    /// The phase name as it appears in `spec.phases[].name`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Namespaces => "namespaces",
            Phase::Policies => "policies",
            Phase::Identity => "identity",
            Phase::Configuration => "configuration",
            Phase::Storage => "storage",
            Phase::Crds => "crds",
            Phase::Roles => "roles",
            Phase::Bindings => "bindings",
            Phase::Infrastructure => "infrastructure",
            Phase::Deploy => "deploy",
            Phase::Scaling => "scaling",
            Phase::Publish => "publish",
            Phase::Admission => "admission",
        }
    }

    /// The phase of an object of this API group (empty for the core group) and kind. Both must
    /// match: a `Namespace` of some other group is not a namespace and goes to `deploy`.
    pub fn of(group: &str, kind: &str) -> Phase {
        match (group, kind) {
            ("", "Namespace") => Phase::Namespaces,
            ("networking.k8s.io", "NetworkPolicy")
            | ("policy", "PodDisruptionBudget")
            | ("scheduling.k8s.io", "PriorityClass") => Phase::Policies,
            ("", "ServiceAccount") => Phase::Identity,
            ("", "Secret" | "ConfigMap") => Phase::Configuration,
            ("", "PersistentVolume" | "PersistentVolumeClaim")
            | ("storage.k8s.io", "StorageClass") => Phase::Storage,
            ("apiextensions.k8s.io", "CustomResourceDefinition") => Phase::Crds,
            ("rbac.authorization.k8s.io", "ClusterRole" | "Role") => Phase::Roles,
            ("rbac.authorization.k8s.io", "ClusterRoleBinding" | "RoleBinding") => Phase::Bindings,
            ("", "Service") | ("cert-manager.io", "Issuer" | "Certificate") => {
                Phase::Infrastructure
            }
            ("autoscaling.k8s.io", "VerticalPodAutoscaler") => Phase::Scaling,
            ("monitoring.coreos.com", "PrometheusRule" | "ServiceMonitor" | "PodMonitor")
            | ("networking.k8s.io", "Ingress")
            | ("route.openshift.io", "Route")
            | (
                "console.openshift.io",
                "ConsoleYAMLSample" | "ConsoleQuickStart" | "ConsoleCLIDownload" | "ConsoleLink"
                | "ConsolePlugin",
            ) => Phase::Publish,
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
            ) => Phase::Admission,
            _ => Phase::Deploy,
        }
    }

    /// The phase of an object, from its `apiVersion` and `kind`.
    pub fn of_object(object: &Map<String, Value>) -> Phase {
        let key = ObjectKey::of(object);
        Phase::of(key.group, key.kind)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What objects are ordered by inside a phase, read as apimachinery's unstructured accessors read
/// them: a field that is missing or not a string is empty, and an `apiVersion` with more than
/// one `/` gives an empty group, version *and* kind (Go's `GroupVersionKind()` gives up on the
/// whole triple when the group-version does not parse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ObjectKey<'a> {
    group: &'a str,
    version: &'a str,
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
}

impl<'a> ObjectKey<'a> {
    fn of(object: &'a Map<String, Value>) -> Self {
        let text = |v: Option<&'a Value>| v.and_then(Value::as_str).unwrap_or("");
        let api_version = text(object.get("apiVersion"));
        let kind = text(object.get("kind"));
        let (group, version, kind) = match api_version.matches('/').count() {
            0 => ("", api_version, kind),
            1 if api_version == "/" => ("", "", kind),
            1 => {
                let (g, v) = api_version.split_once('/').unwrap_or(("", api_version));
                (g, v, kind)
            }
            _ => ("", "", ""),
        };
        let metadata = object.get("metadata").and_then(Value::as_object);
        let meta = |k: &str| text(metadata.and_then(|m| m.get(k)));
        ObjectKey {
            group,
            version,
            kind,
            namespace: meta("namespace"),
            name: meta("name"),
        }
    }
}

/// Groups objects into phases: the non-empty well-known phases in application order, each
/// holding its objects ordered by group, version, kind, namespace and name.
///
/// Guarantees: the result depends only on the set of objects, not on their input order
/// (objects equal in all five fields keep their relative order). No phase is empty; no objects
/// give no phases.
///
/// Caveat: the ClusterObjectSet API allows at most 50 objects per phase and 20 phases; this
/// function does not split or refuse larger groups, the API server's validation reports them.
pub fn sort(objects: Vec<Map<String, Value>>) -> Vec<ClusterObjectSetPhase> {
    // The sort key is computed once per object; it borrows the object, so objects are placed
    // by index afterwards.
    let mut order: Vec<(Phase, ObjectKey<'_>, usize)> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let key = ObjectKey::of(o);
            (Phase::of(key.group, key.kind), key, i)
        })
        .collect();
    order.sort();
    let placement: Vec<(Phase, usize)> = order.into_iter().map(|(p, _, i)| (p, i)).collect();
    let mut slots: Vec<Option<Map<String, Value>>> = objects.into_iter().map(Some).collect();
    let mut phases: Vec<ClusterObjectSetPhase> = Vec::new();
    let mut current: Option<Phase> = None;
    for (phase, i) in placement {
        let Some(object) = slots.get_mut(i).and_then(Option::take) else {
            continue;
        };
        if current != Some(phase) {
            current = Some(phase);
            phases.push(ClusterObjectSetPhase {
                name: phase.as_str().to_owned(),
                objects: Vec::new(),
                collision_protection: None,
            });
        }
        if let Some(last) = phases.last_mut() {
            last.objects.push(ClusterObjectSetObject {
                object: Some(object),
                ref_: None,
                collision_protection: None,
            });
        }
    }
    phases
}

/// The digest the ClusterObjectSet controller records in `status.observedPhases` for a phase:
/// `sha256:<hex>` of the JSON of `{"name": …, "objects": […]}` as Go's `encoding/json` writes it
/// (keys sorted, `<`, `>`, `&` escaped), computed on the objects as resolved — before the
/// controller adds its own labels.
///
/// Assumption: every `ref` of the phase has been resolved into `object` (see
/// [`crate::pack::unpack_ref`]); an entry without an inline object is written as `null`, as Go
/// writes a nil object, so an unresolved phase never matches a resolved one. Use
/// [`digest_resolved`] when the resolved objects are held apart from the phase.
pub fn digest(phase: &ClusterObjectSetPhase) -> String {
    digest_entries(&phase.name, phase.objects.iter().map(|o| o.object.as_ref()))
}

/// [`digest`] of the phase `name` holding `objects`, in order.
pub fn digest_resolved<'a>(
    name: &str,
    objects: impl IntoIterator<Item = &'a Map<String, Value>>,
) -> String {
    digest_entries(name, objects.into_iter().map(Some))
}

fn digest_entries<'a>(
    name: &str,
    objects: impl Iterator<Item = Option<&'a Map<String, Value>>>,
) -> String {
    let mut w = HashingWriter::new();
    w.buf.push_str("{\"name\":");
    olm_goenc::json::write_str_html(&mut w.buf, name);
    w.buf.push_str(",\"objects\":[");
    for (i, object) in objects.enumerate() {
        if i > 0 {
            w.buf.push(',');
        }
        match object {
            Some(object) => write_go_object(&mut w.buf, object),
            None => w.buf.push_str("null"),
        }
        w.flush_if_full();
    }
    w.buf.push_str("]}");
    w.finish()
}

/// Appends `bytes` as lowercase hex, as Go's `%x` prints a byte slice.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 0xf) as usize] as char);
    }
}

/// Writes an object as Go's `json.Marshal` writes a `map[string]interface{}`: compact, keys in
/// byte order at every level, HTML characters escaped. The workspace's JSON maps keep insertion
/// order, so the keys are sorted here rather than trusted.
pub(crate) fn write_go_object(out: &mut String, object: &Map<String, Value>) {
    // Manifests read from YAML written by Go tools mostly come sorted already; those are
    // written without collecting and sorting their keys.
    if object.keys().zip(object.keys().skip(1)).all(|(a, b)| a < b) {
        write_entries(out, object.iter());
    } else {
        let mut entries: Vec<(&String, &Value)> = object.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        write_entries(out, entries.into_iter());
    }
}

fn write_entries<'a>(out: &mut String, entries: impl Iterator<Item = (&'a String, &'a Value)>) {
    out.push('{');
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        olm_goenc::json::write_str_html(out, k);
        out.push(':');
        write_go_value(out, v);
    }
    out.push('}');
}

/// Go JSON fed to SHA-256 in chunks, so a digest of megabytes of objects needs no buffer of
/// that size.
pub(crate) struct HashingWriter {
    /// The text not yet hashed; writers append here.
    pub(crate) buf: String,
    hasher: Sha256,
}

impl HashingWriter {
    const CHUNK: usize = 64 * 1024;

    pub(crate) fn new() -> Self {
        HashingWriter {
            buf: String::with_capacity(2 * Self::CHUNK),
            hasher: Sha256::new(),
        }
    }

    /// Hashes what was written once it passes the chunk size; call between values.
    pub(crate) fn flush_if_full(&mut self) {
        if self.buf.len() >= Self::CHUNK {
            self.hasher.update(self.buf.as_bytes());
            self.buf.clear();
        }
    }

    /// `sha256:<lowercase hex>` of everything written, the `<algorithm>:<hex>` form of
    /// observed phase digests.
    pub(crate) fn finish(mut self) -> String {
        self.hasher.update(self.buf.as_bytes());
        let sum = self.hasher.finalize();
        let mut out = String::with_capacity(7 + 64);
        out.push_str("sha256:");
        push_hex(&mut out, &sum);
        out
    }
}

fn write_go_value(out: &mut String, v: &Value) {
    match v {
        Value::Object(m) => write_go_object(out, m),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_value(out, x);
            }
            out.push(']');
        }
        Value::String(s) => olm_goenc::json::write_str_html(out, s),
        Value::Number(n) => olm_goenc::json::write_number(out, n),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Null => out.push_str("null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn go_json_sorts_keys_at_every_level_and_escapes_html() {
        let mut s = String::new();
        write_go_object(
            &mut s,
            &obj(json!({"b": {"z": 1, "a": [true, null, 2.5]}, "a": "<&>"})),
        );
        assert_eq!(
            s,
            r#"{"a":"\u003c\u0026\u003e","b":{"a":[true,null,2.5],"z":1}}"#
        );
    }

    #[test]
    fn unparsable_group_version_empties_the_whole_key() {
        let o = obj(json!({"apiVersion": "a/b/c", "kind": "Namespace"}));
        let k = ObjectKey::of(&o);
        assert_eq!((k.group, k.version, k.kind), ("", "", ""));
        assert_eq!(Phase::of_object(&o), Phase::Deploy);
        let o = obj(json!({"apiVersion": "v1", "kind": "Namespace"}));
        assert_eq!(Phase::of_object(&o), Phase::Namespaces);
    }
}
