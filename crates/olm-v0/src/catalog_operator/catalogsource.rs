//! The registry Pod, Service, ServiceAccount and NetworkPolicy catalog-operator makes for a `grpc`
//! CatalogSource with `spec.image` (OLM repo `pkg/controller/registry/reconciler/reconciler.go`
//! `Pod`, `grpc.go`, `helpers.go`): the registry container on port 50051 with gRPC probes,
//! `spec.grpcPodConfig`'s node selector, tolerations, affinity, priority class, memory target and
//! content extraction, the restricted security context, and the
//! `operatorframework.io/priorityclass` annotation.
//!
//! The `olm.pod-spec-hash` and `olm.service-spec-hash` labels are base-62 SHA-224 of the canonical
//! JSON ([`crate::olm_operator::strategy::spec_hash`]), not upstream's `DeepHashObject` values,
//! which only olm compares.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use olm_v0_api::v1alpha1::{
    CatalogSource, ExtractContentConfig, RegistryServiceStatus, SecurityConfig, SourceType,
};
use serde_json::{Map, Value, json};

use crate::olm_operator::operatorgroup::MANAGED_LABEL;
use crate::olm_operator::strategy::spec_hash;

pub mod pass;

/// The label naming a registry Pod's CatalogSource (and the Service's selector).
pub const CATALOG_SOURCE_LABEL: &str = "olm.catalogSource";
/// The annotation on a CatalogSource whose value becomes the Pod's priority class.
pub const PRIORITY_CLASS_ANNOTATION: &str = "operatorframework.io/priorityclass";
/// The label holding the hash of the Pod's spec.
pub const POD_HASH_LABEL: &str = "olm.pod-spec-hash";
/// The label holding the hash of the Service's spec.
pub const SERVICE_HASH_LABEL: &str = "olm.service-spec-hash";
/// The annotation that lets the cluster autoscaler evict catalog Pods (no controller backs them).
pub const SAFE_TO_EVICT_ANNOTATION: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";
/// The registry's gRPC port.
pub const PORT: i64 = 50051;
/// The registry container's name.
pub const CONTAINER: &str = "registry-server";

/// `status.reason` of a CatalogSource whose spec cannot be served.
pub const SPEC_INVALID_REASON: &str = "SpecInvalidError";
/// `status.reason` when the registry objects cannot be made.
pub const REGISTRY_SERVER_REASON: &str = "RegistryServerError";

/// What a CatalogSource's spec lacks for its source type, shown in upstream's words: the
/// `status.message` written with reason [`SPEC_INVALID_REASON`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidSource {
    /// A `configmap` (or `internal`) source without `spec.configMap`.
    #[error("configmap name unset: must be set for sourcetype: {0}")]
    NoConfigMap(SourceType),
    /// A `grpc` source with neither `spec.image` nor `spec.address`.
    #[error("image and address unset: at least one must be set for sourcetype: grpc")]
    NoImageOrAddress,
    /// A source type OLM does not know.
    #[error("unknown sourcetype: {0}")]
    UnknownType(SourceType),
}

/// Upstream's `validateSourceType`: what a CatalogSource's source type needs.
///
/// # Errors
///
/// What the spec lacks.
pub fn validate(source: &CatalogSource) -> Result<(), InvalidSource> {
    let spec = &source.spec;
    let set = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
    match &spec.source_type {
        t @ (SourceType::ConfigMap | SourceType::Internal) if !set(&spec.config_map) => {
            Err(InvalidSource::NoConfigMap(t.clone()))
        }
        SourceType::ConfigMap | SourceType::Internal => Ok(()),
        SourceType::Grpc if !set(&spec.image) && !set(&spec.address) => {
            Err(InvalidSource::NoImageOrAddress)
        }
        SourceType::Grpc => Ok(()),
        other => Err(InvalidSource::UnknownType(other.clone())),
    }
}

fn name_of(source: &CatalogSource) -> &str {
    source.metadata.name.as_deref().unwrap_or_default()
}

fn namespace_of(source: &CatalogSource) -> &str {
    source.metadata.namespace.as_deref().unwrap_or_default()
}

/// Where clients reach the registry [`registry_service`] makes: `<service>.<namespace>.svc:50051`.
pub fn registry_address(source: &CatalogSource) -> String {
    format!(
        "{}.{}.svc:{PORT}",
        name_of(source).replace('.', "-"),
        namespace_of(source)
    )
}

/// `status.registryService` of a registry served by the Service [`registry_service`] makes.
pub fn registry_service_status(source: &CatalogSource, created_at: Time) -> RegistryServiceStatus {
    RegistryServiceStatus {
        protocol: Some("grpc".to_owned()),
        service_name: Some(name_of(source).replace('.', "-")),
        service_namespace: Some(namespace_of(source).to_owned()),
        port: Some(PORT.to_string()),
        created_at: Some(created_at),
    }
}

/// A namespace's default `securityContextConfig`: `restricted` when the namespace enforces the
/// restricted Pod security standard (`pod-security.kubernetes.io/enforce: restricted`), else
/// `legacy`.
pub fn namespace_security(labels: &BTreeMap<String, String>) -> SecurityConfig {
    if labels
        .get("pod-security.kubernetes.io/enforce")
        .map(String::as_str)
        == Some("restricted")
    {
        SecurityConfig::Restricted
    } else {
        SecurityConfig::Legacy
    }
}

/// What the registry Pod is made from besides the CatalogSource.
#[derive(Debug, Clone)]
pub struct PodInput<'a> {
    /// The opm image that serves extracted content (`extractContent`).
    pub opm_image: &'a str,
    /// The image holding `copy-content` (`extractContent`).
    pub util_image: &'a str,
    /// The ServiceAccount's name and image pull secrets (`None` when there is none).
    pub service_account: Option<(&'a str, &'a [String])>,
    /// The user id restricted Pods run as (0: none set).
    pub run_as_user: i64,
    /// The namespace's default security configuration.
    pub default_security: SecurityConfig,
}

/// `Always` for a tag, `IfNotPresent` for a digest (any `@`), as upstream infers it.
pub fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        "IfNotPresent"
    } else {
        "Always"
    }
}

fn grpc_probe(initial_delay: Option<i64>) -> Value {
    let mut p = json!({"grpc": {"port": PORT}, "timeoutSeconds": 5});
    if let Some(d) = initial_delay.filter(|d| *d > 0) {
        p["initialDelaySeconds"] = json!(d);
    }
    p
}

/// `GOMEMLIMIT` for a memory target: the quantity in binary units with a `B` (Kubernetes' `Mi`
/// is Go's `MiB`); `None` for a quantity that is not a whole number of bytes.
pub fn gomemlimit(quantity: &str) -> Option<String> {
    let bytes = quantity_bytes(quantity)?;
    let units = [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ];
    for (suffix, shift) in units {
        let unit = 1u128 << shift;
        if bytes >= unit && bytes % unit == 0 {
            return Some(format!("{}{suffix}B", bytes / unit));
        }
    }
    Some(format!("{bytes}B"))
}

/// A Kubernetes quantity (`5Mi`, `1G`, `512000`) in bytes, when whole.
fn quantity_bytes(q: &str) -> Option<u128> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(split);
    let multiplier: u128 = match suffix {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        "Ei" => 1 << 60,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let scale = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let digits: u128 = format!("{whole}{fraction}").parse().ok()?;
    let total = digits.checked_mul(multiplier)?;
    (total % scale == 0).then(|| total / scale)
}

/// The registry Pod of `source` serving `spec.image`.
pub fn registry_pod(source: &CatalogSource, input: &PodInput<'_>) -> Value {
    let name = name_of(source);
    let image = source.spec.image.as_deref().unwrap_or_default();
    let annotations = source.metadata.annotations.clone().unwrap_or_default();
    let mut labels = Map::new();
    labels.insert(CATALOG_SOURCE_LABEL.into(), json!(name));
    labels.insert(MANAGED_LABEL.into(), json!("true"));
    let mut container = json!({
        "name": CONTAINER,
        "image": image,
        "ports": [{"name": "grpc", "containerPort": PORT}],
        "readinessProbe": grpc_probe(Some(5)),
        "livenessProbe": grpc_probe(Some(10)),
        "startupProbe": {"grpc": {"port": PORT}, "failureThreshold": 15, "periodSeconds": 10, "timeoutSeconds": 5},
        "resources": {"requests": {"cpu": "10m", "memory": "50Mi"}},
        "securityContext": {"readOnlyRootFilesystem": false},
        "imagePullPolicy": pull_policy(image),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    });
    let mut spec = json!({
        "nodeSelector": {"kubernetes.io/os": "linux"},
    });
    if let Some((sa, secrets)) = input.service_account {
        spec["serviceAccountName"] = json!(sa);
        if !secrets.is_empty() {
            spec["imagePullSecrets"] =
                Value::Array(secrets.iter().map(|s| json!({"name": s})).collect());
        }
    }
    let config = source.spec.grpc_pod_config.as_ref();
    let mut init = Vec::new();
    let mut volumes = Vec::new();
    if let Some(config) = config {
        if !config.node_selector.is_empty() {
            spec["nodeSelector"] = json!(config.node_selector);
        }
        // "" asks for the cluster's default class, which is what an unset field gives.
        if let Some(p) = config
            .priority_class_name
            .as_deref()
            .filter(|p| !p.is_empty())
        {
            spec["priorityClassName"] = json!(p);
        }
        if !config.tolerations.is_empty() {
            spec["tolerations"] = json!(config.tolerations);
        }
        if let Some(a) = &config.affinity {
            spec["affinity"] = json!(a);
        }
        if let Some(target) = &config.memory_target {
            container["resources"]["requests"]["memory"] = json!(target.0);
            if let Some(limit) = gomemlimit(&target.0) {
                container["env"] = json!([{"name": "GOMEMLIMIT", "value": limit}]);
            }
        }
        if let Some(extract) = &config.extract_content {
            extract_content(
                extract,
                image,
                input,
                &mut container,
                &mut init,
                &mut volumes,
            );
        }
    }
    if !init.is_empty() {
        spec["initContainers"] = Value::Array(init);
    }
    if !volumes.is_empty() {
        spec["volumes"] = Value::Array(volumes);
    }
    spec["containers"] = json!([container]);
    let security = config
        .and_then(|c| c.security_context_config)
        .unwrap_or(input.default_security);
    if security == SecurityConfig::Restricted {
        restrict(&mut spec, input.run_as_user);
    }
    if let Some(p) = annotations
        .get(PRIORITY_CLASS_ANNOTATION)
        .filter(|p| !p.is_empty())
    {
        spec["priorityClassName"] = json!(p);
    }
    labels.insert(POD_HASH_LABEL.into(), json!(spec_hash(&spec)));
    let mut pod_annotations = annotations;
    pod_annotations.insert(SAFE_TO_EVICT_ANNOTATION.into(), "true".to_owned());
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": format!("{name}-"),
            "namespace": namespace_of(source),
            "labels": labels,
            "annotations": pod_annotations,
            "ownerReferences": [owner(source, false, true)],
        },
        "spec": spec,
    })
}

/// `extractContent`: init containers copy `copy-content` from the util image and the catalog
/// (and cache) out of the catalog image; the registry runs `opm serve` on the copy.
fn extract_content(
    extract: &ExtractContentConfig,
    image: &str,
    input: &PodInput<'_>,
    container: &mut Value,
    init: &mut Vec<Value>,
    volumes: &mut Vec<Value>,
) {
    let catalog_dir = &extract.catalog_dir;
    let cache_dir = extract.cache_dir.as_deref().unwrap_or_default();
    volumes.push(json!({"name": "utilities", "emptyDir": {}}));
    volumes.push(json!({"name": "catalog-content", "emptyDir": {}}));
    let utilities = json!({"name": "utilities", "mountPath": "/utilities"});
    let content = json!({"name": "catalog-content", "mountPath": "/extracted-catalog"});
    let mut args = vec![
        format!("--catalog.from={catalog_dir}"),
        "--catalog.to=/extracted-catalog/catalog".to_owned(),
    ];
    if !cache_dir.is_empty() {
        args.push(format!("--cache.from={cache_dir}"));
        args.push("--cache.to=/extracted-catalog/cache".to_owned());
    }
    init.push(json!({
        "name": "extract-utilities",
        "image": input.util_image,
        "command": ["cp"],
        "args": ["/bin/copy-content", "/utilities/copy-content"],
        "volumeMounts": [utilities],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": {"readOnlyRootFilesystem": true},
    }));
    init.push(json!({
        "name": "extract-content",
        "image": image,
        "imagePullPolicy": pull_policy(image),
        "command": ["/utilities/copy-content"],
        "args": args,
        "volumeMounts": [utilities, content],
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": {"readOnlyRootFilesystem": true},
    }));
    container["securityContext"]["readOnlyRootFilesystem"] = json!(true);
    container["image"] = json!(input.opm_image);
    container["command"] = json!(["/bin/opm"]);
    container["imagePullPolicy"] = json!(pull_policy(input.opm_image));
    let mut serve = vec!["serve".to_owned(), "/extracted-catalog/catalog".to_owned()];
    let mut mounts = Vec::new();
    if cache_dir.is_empty() {
        // Without a cache opm builds one under /tmp, which must be writable.
        volumes.push(json!({"name": "tmpdir", "emptyDir": {}}));
        mounts.push(json!({"name": "tmpdir", "mountPath": "/tmp/"}));
    } else {
        serve.push("--cache-dir=/extracted-catalog/cache".to_owned());
    }
    mounts.push(content);
    container["args"] = json!(serve);
    container["volumeMounts"] = Value::Array(mounts);
}

/// The restricted security context: on the Pod, seccomp `RuntimeDefault` and the user; on every
/// container, no privilege escalation and all capabilities dropped.
fn restrict(spec: &mut Value, run_as_user: i64) {
    let mut pod = json!({"seccompProfile": {"type": "RuntimeDefault"}});
    if run_as_user > 0 {
        pod["runAsUser"] = json!(run_as_user);
        pod["runAsNonRoot"] = json!(true);
    }
    spec["securityContext"] = pod;
    for key in ["initContainers", "containers"] {
        if let Some(list) = spec.get_mut(key).and_then(Value::as_array_mut) {
            for c in list {
                if !c["securityContext"].is_object() {
                    c["securityContext"] = json!({});
                }
                c["securityContext"]["allowPrivilegeEscalation"] = json!(false);
                c["securityContext"]["capabilities"] = json!({"drop": ["ALL"]});
            }
        }
    }
}

/// An owner reference to the CatalogSource.
fn owner(source: &CatalogSource, controller: bool, block: bool) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "name": name_of(source),
        "uid": source.metadata.uid,
        "controller": controller,
        "blockOwnerDeletion": block,
    })
}

/// The registry Service: the CatalogSource's name with dots as dashes, port `grpc` 50051,
/// selecting the registry Pod.
pub fn registry_service(source: &CatalogSource) -> Value {
    let name = name_of(source);
    let spec = json!({
        "ports": [{"name": "grpc", "port": PORT, "targetPort": PORT}],
        "selector": {CATALOG_SOURCE_LABEL: name, MANAGED_LABEL: "true"},
    });
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name.replace('.', "-"),
            "namespace": namespace_of(source),
            "labels": {SERVICE_HASH_LABEL: spec_hash(&spec), MANAGED_LABEL: "true"},
            "ownerReferences": [owner(source, false, false)],
        },
        "spec": spec,
    })
}

/// The `<name>-grpc-server` NetworkPolicy: the registry Pods take gRPC (TCP 50051) from
/// anywhere and reach nothing, except that a ConfigMap-backed registry (which reads its ConfigMap
/// from the API server) may reach anything and DNS.
pub fn grpc_server_network_policy(source: &CatalogSource) -> Value {
    let name = name_of(source);
    let mut spec = json!({
        "podSelector": {"matchLabels": {CATALOG_SOURCE_LABEL: name, MANAGED_LABEL: "true"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"ports": [{"protocol": "TCP", "port": PORT}]}],
    });
    if matches!(
        source.spec.source_type,
        SourceType::ConfigMap | SourceType::Internal
    ) {
        let dns: Vec<Value> = [("TCP", 53), ("UDP", 53), ("TCP", 5353), ("UDP", 5353)]
            .iter()
            .map(|(protocol, port)| json!({"protocol": protocol, "port": port}))
            .collect();
        spec["egress"] = json!([{}, {"ports": dns}]);
    }
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": format!("{name}-grpc-server"),
            "namespace": namespace_of(source),
            "labels": {MANAGED_LABEL: "true", CATALOG_SOURCE_LABEL: name},
            "ownerReferences": [owner(source, false, false)],
        },
        "spec": spec,
    })
}

/// The registry ServiceAccount: the CatalogSource's name, its `spec.secrets` as image pull
/// secrets, controlled by the CatalogSource.
pub fn registry_service_account(source: &CatalogSource) -> Value {
    let secrets: Vec<Value> = source
        .spec
        .secrets
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| json!({"name": s}))
        .collect();
    let mut sa = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": name_of(source),
            "namespace": namespace_of(source),
            "labels": {MANAGED_LABEL: "true"},
            "ownerReferences": [owner(source, true, true)],
        },
    });
    if !secrets.is_empty() {
        sa["imagePullSecrets"] = Value::Array(secrets);
    }
    sa
}

/// A CatalogSource from its JSON in a test; a missing `spec.sourceType` reads as `""`, as an
/// object the API server refused would.
#[cfg(test)]
pub(crate) fn parse(mut value: Value) -> CatalogSource {
    if value.get("metadata").is_none() {
        value["metadata"] = json!({});
    }
    if value["spec"].get("sourceType").is_none() {
        value["spec"]["sourceType"] = json!("");
    }
    serde_json::from_value(value).unwrap_or_else(|e| panic!("a test CatalogSource: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(config: Value, annotations: Value) -> CatalogSource {
        parse(json!({
            "metadata": {"name": "test", "namespace": "testns", "uid": "u1", "annotations": annotations},
            "spec": {"sourceType": "grpc", "image": "image", "grpcPodConfig": config},
        }))
    }

    fn input(security: SecurityConfig) -> PodInput<'static> {
        PodInput {
            opm_image: "opmImage",
            util_image: "utilImage",
            service_account: Some(("service-account", &[])),
            run_as_user: 1001,
            default_security: security,
        }
    }

    /// Upstream's `validateSourceType` messages.
    #[test]
    fn source_types() {
        let with = |spec: Value| parse(json!({"metadata": {"name": "c"}, "spec": spec}));
        assert_eq!(
            validate(&with(json!({"sourceType": "grpc", "image": "i"}))),
            Ok(())
        );
        assert_eq!(
            validate(&with(json!({"sourceType": "grpc", "address": "a:1"}))),
            Ok(())
        );
        assert_eq!(
            validate(&with(json!({"sourceType": "grpc"})))
                .unwrap_err()
                .to_string(),
            "image and address unset: at least one must be set for sourcetype: grpc"
        );
        assert_eq!(
            validate(&with(json!({"sourceType": "internal"})))
                .unwrap_err()
                .to_string(),
            "configmap name unset: must be set for sourcetype: internal"
        );
        assert_eq!(
            validate(&with(json!({"sourceType": "helm"})))
                .unwrap_err()
                .to_string(),
            "unknown sourcetype: helm"
        );
        let status = registry_service_status(&with(json!({})), Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(status.port.as_deref(), Some("50051"));
        assert_eq!(status.protocol.as_deref(), Some("grpc"));
    }

    /// Upstream's `TestPullPolicy`.
    #[test]
    fn pull_policies() {
        for (image, policy) in [
            (
                "quay.io/operator-framework/olm@sha256:b9d011c0fbfb65b387904f8fafc47ee1a9479d28d395473341288ee126ed993b",
                "IfNotPresent",
            ),
            ("gcc@sha256:06a6f170d7fff592e44b089c0d2e68", "IfNotPresent"),
            ("hello@md5:b1946ac92492d2347c6235b4d2611184", "IfNotPresent"),
            ("myimage:1.0", "Always"),
            ("busybox", "Always"),
        ] {
            assert_eq!(pull_policy(image), policy, "{image}");
        }
    }

    /// Upstream's `TestPodMemoryTarget`: the request becomes the target, `GOMEMLIMIT` its value
    /// in binary units with `B`.
    #[test]
    fn memory_target() {
        let pod = registry_pod(
            &source(json!({"memoryTarget": "5Mi"}), json!({})),
            &input(SecurityConfig::Legacy),
        );
        let c = &pod["spec"]["containers"][0];
        assert_eq!(c["resources"]["requests"]["memory"], "5Mi");
        assert_eq!(c["resources"]["requests"]["cpu"], "10m");
        assert_eq!(c["env"], json!([{"name": "GOMEMLIMIT", "value": "5MiB"}]));
        assert_eq!(gomemlimit("1Gi").as_deref(), Some("1GiB"));
        assert_eq!(gomemlimit("1024Ki").as_deref(), Some("1MiB"));
        assert_eq!(gomemlimit("500M").as_deref(), Some("500000000B"));
        assert_eq!(gomemlimit("1.5Gi").as_deref(), Some("1536MiB"));
    }

    /// Upstream's `TestPodNodeSelector` and `TestPodSchedulingOverrides`: the default node
    /// selector, each override, and the priority-class annotation winning over the config.
    #[test]
    fn scheduling() {
        let pod = registry_pod(
            &source(Value::Null, json!({})),
            &input(SecurityConfig::Legacy),
        );
        assert_eq!(
            pod["spec"]["nodeSelector"],
            json!({"kubernetes.io/os": "linux"})
        );
        assert!(pod["spec"].get("priorityClassName").is_none());
        let config = json!({
            "nodeSelector": {"node": "special"},
            "priorityClassName": "some-prio-class",
            "tolerations": [{"key": "some/key", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {"nodeAffinity": {}},
        });
        let pod = registry_pod(
            &source(config.clone(), json!({})),
            &input(SecurityConfig::Legacy),
        );
        assert_eq!(pod["spec"]["nodeSelector"], json!({"node": "special"}));
        assert_eq!(pod["spec"]["priorityClassName"], "some-prio-class");
        assert_eq!(pod["spec"]["tolerations"], config["tolerations"]);
        assert_eq!(pod["spec"]["affinity"], json!({"nodeAffinity": {}}));
        // An empty priority class asks for the default class: the field stays unset.
        let pod = registry_pod(
            &source(json!({"priorityClassName": ""}), json!({})),
            &input(SecurityConfig::Legacy),
        );
        assert!(pod["spec"].get("priorityClassName").is_none());
        let pod = registry_pod(
            &source(
                config,
                json!({PRIORITY_CLASS_ANNOTATION: "annotation-prio-class"}),
            ),
            &input(SecurityConfig::Legacy),
        );
        assert_eq!(pod["spec"]["priorityClassName"], "annotation-prio-class");
        assert_eq!(
            pod["metadata"]["annotations"][SAFE_TO_EVICT_ANNOTATION], "true",
            "the autoscaler may evict it"
        );
    }

    /// Upstream's `TestPodContainerSecurityContext`: restricted from the namespace default or
    /// the CatalogSource, legacy adds nothing.
    #[test]
    fn security_context() {
        let pod = registry_pod(
            &source(Value::Null, json!({})),
            &input(SecurityConfig::Restricted),
        );
        assert_eq!(
            pod["spec"]["securityContext"],
            json!({"seccompProfile": {"type": "RuntimeDefault"}, "runAsUser": 1001, "runAsNonRoot": true})
        );
        assert_eq!(
            pod["spec"]["containers"][0]["securityContext"],
            json!({"readOnlyRootFilesystem": false, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})
        );
        let pod = registry_pod(
            &source(json!({"securityContextConfig": "legacy"}), json!({})),
            &input(SecurityConfig::Restricted),
        );
        assert!(pod["spec"].get("securityContext").is_none());
        let pod = registry_pod(
            &source(json!({"securityContextConfig": "restricted"}), json!({})),
            &input(SecurityConfig::Legacy),
        );
        assert_eq!(
            pod["spec"]["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
    }

    /// Upstream's `TestPodExtractContent`: with a cache directory and without (then /tmp is a
    /// writable volume).
    #[test]
    fn extract_content_pods() {
        let config =
            json!({"extractContent": {"catalogDir": "/catalog", "cacheDir": "/tmp/cache"}});
        let pod = registry_pod(&source(config, json!({})), &input(SecurityConfig::Legacy));
        let spec = &pod["spec"];
        assert_eq!(
            spec["initContainers"][0]["args"],
            json!(["/bin/copy-content", "/utilities/copy-content"])
        );
        assert_eq!(
            spec["initContainers"][1]["args"],
            json!([
                "--catalog.from=/catalog",
                "--catalog.to=/extracted-catalog/catalog",
                "--cache.from=/tmp/cache",
                "--cache.to=/extracted-catalog/cache"
            ])
        );
        let c = &spec["containers"][0];
        assert_eq!(c["image"], "opmImage");
        assert_eq!(c["command"], json!(["/bin/opm"]));
        assert_eq!(
            c["args"],
            json!([
                "serve",
                "/extracted-catalog/catalog",
                "--cache-dir=/extracted-catalog/cache"
            ])
        );
        assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(spec["volumes"].as_array().map(Vec::len), Some(2));
        let config = json!({"extractContent": {"catalogDir": "/catalog"}});
        let pod = registry_pod(&source(config, json!({})), &input(SecurityConfig::Legacy));
        let c = &pod["spec"]["containers"][0];
        assert_eq!(c["args"], json!(["serve", "/extracted-catalog/catalog"]));
        assert_eq!(
            c["volumeMounts"][0],
            json!({"name": "tmpdir", "mountPath": "/tmp/"})
        );
        assert_eq!(pod["spec"]["volumes"][2]["name"], "tmpdir");
    }

    /// The gRPC server NetworkPolicy: ingress on 50051, no egress for an image registry, any
    /// egress and DNS for a ConfigMap one (upstream's `DesiredGRPCServerNetworkPolicy`).
    #[test]
    fn network_policy() {
        let np = grpc_server_network_policy(&source(Value::Null, json!({})));
        assert_eq!(np["metadata"]["name"], "test-grpc-server");
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(
            np["spec"]["ingress"][0]["ports"][0],
            json!({"protocol": "TCP", "port": 50051})
        );
        assert!(np["spec"].get("egress").is_none());
        let cm = parse(json!({
            "metadata": {"name": "test", "namespace": "testns", "uid": "u1"},
            "spec": {"sourceType": "configmap", "configMap": "test"},
        }));
        let np = grpc_server_network_policy(&cm);
        assert_eq!(np["spec"]["egress"][0], json!({}));
        assert_eq!(
            np["spec"]["egress"][1]["ports"].as_array().map(Vec::len),
            Some(4)
        );
    }

    /// The Service (dots in the name as dashes) and the ServiceAccount with the pull secrets.
    #[test]
    fn service_and_account() {
        let s = parse(json!({
            "metadata": {"name": "my.catalog", "namespace": "testns", "uid": "u1"},
            "spec": {"sourceType": "grpc", "image": "image", "secrets": ["pull", ""]},
        }));
        let svc = registry_service(&s);
        assert_eq!(svc["metadata"]["name"], "my-catalog");
        assert_eq!(
            svc["spec"]["selector"],
            json!({"olm.catalogSource": "my.catalog", "olm.managed": "true"})
        );
        assert_eq!(svc["spec"]["ports"][0]["port"], 50051);
        let sa = registry_service_account(&s);
        assert_eq!(sa["imagePullSecrets"], json!([{"name": "pull"}]));
        assert_eq!(sa["metadata"]["ownerReferences"][0]["controller"], true);
        let pod = registry_pod(
            &s,
            &PodInput {
                service_account: Some(("my.catalog", &["pull".to_owned()])),
                ..input(SecurityConfig::Legacy)
            },
        );
        assert_eq!(pod["metadata"]["generateName"], "my.catalog-");
        assert_eq!(pod["spec"]["imagePullSecrets"], json!([{"name": "pull"}]));
        assert_eq!(pod["metadata"]["labels"]["olm.catalogSource"], "my.catalog");
        assert!(pod["metadata"]["labels"][POD_HASH_LABEL].is_string());
    }
}
