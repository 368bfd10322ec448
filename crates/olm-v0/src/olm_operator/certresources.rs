//! What a CSV's owned APIServices and webhooks need besides their Deployment (OLM repo
//! `pkg/controller/install/certresources.go`, `apiservice.go`): a Service in front of the
//! Deployment, a serving certificate in a Secret (the certificate itself is issued and rotated
//! by the same rules as for OLM v1's bundles: `olm_security::certs`, 730 days, renewed a day
//! before), the RBAC that lets the Deployment's ServiceAccount read it and delegate
//! authentication, the certificate mounted at both paths operators expect, and the APIService
//! objects.
//!
//! Names: the Service is `<deployment>-service` with dots turned into dashes — upstream keeps
//! the dots for APIService Services (an invalid Service name, so such an operator cannot
//! install) but replaces them for webhooks; here both use the valid name.

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Map, Value, json};

use crate::olm_operator::operatorgroup::MANAGED_LABEL;
use crate::olm_operator::strategy::{CsvOwner, owner_labels, owner_reference};
use crate::olm_operator::webhookconfig::service_name;

/// The Secret key holding the CA (upstream's `olmCAKey`).
pub const CA_KEY: &str = olm_k8s::V0_CA_SECRET_KEY;
/// Annotation on the Secret and the pod template: hex SHA-256 of the CA PEM, so a new CA rolls
/// the Deployment.
pub const CA_HASH_ANNOTATION: &str = olm_k8s::V0_CA_HASH_ANNOTATION;
/// Where APIService servers read their certificate.
pub const APISERVICE_CERT_PATH: &str = "/apiserver.local.config/certificates";
/// Where controller-runtime webhook servers read theirs.
pub const WEBHOOK_CERT_PATH: &str = "/tmp/k8s-webhook-server/serving-certs";

/// The Secret holding the serving certificate of `service`.
pub fn secret_name(service: &str) -> String {
    format!("{service}-cert")
}

/// A resource older OLMs made for an owned APIService under names derived from the APIService
/// (`<version>.<group>`) rather than the Deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Legacy {
    /// The Service `<version>-<group with dashes>` in the CSV's namespace.
    Service(String),
    /// The Secret `<apiservice>-cert` in the CSV's namespace.
    Secret(String),
    /// The Role `<apiservice>-cert` in the CSV's namespace.
    Role(String),
    /// The RoleBinding `<apiservice>-cert` in the CSV's namespace.
    RoleBinding(String),
    /// The ClusterRoleBinding `<apiservice>-system:auth-delegator`.
    ClusterRoleBinding(String),
    /// The RoleBinding `<apiservice>-auth-reader` in `kube-system`.
    AuthReader(String),
}

/// What an owned APIService's install removes of what older OLMs made for it (upstream's
/// `deleteLegacyAPIServiceResources`), each only when its owner labels name the installing CSV (the
/// shell checks with [`crate::olm_operator::adoption::owner_csv`]): nothing when the legacy Service
/// name is the one the Deployment's Service has now (the group is the Deployment's name and the
/// version `service`), else the Service, Secret, Role, RoleBinding, auth-delegator
/// ClusterRoleBinding and auth-reader RoleBinding named after the APIService.
pub fn legacy_apiservice_resources(version: &str, group: &str, deployment: &str) -> Vec<Legacy> {
    let apiservice = format!("{version}.{group}");
    let legacy_service = apiservice.replace('.', "-");
    if legacy_service == service_name(deployment) {
        return Vec::new();
    }
    vec![
        Legacy::Service(legacy_service),
        Legacy::Secret(secret_name(&apiservice)),
        Legacy::Role(secret_name(&apiservice)),
        Legacy::RoleBinding(secret_name(&apiservice)),
        Legacy::ClusterRoleBinding(format!("{apiservice}-system:auth-delegator")),
        Legacy::AuthReader(format!("{apiservice}-auth-reader")),
    ]
}

/// One port the Service exposes: `containerPort` (default 443) to `targetPort` (default the
/// same), named after the port number.
pub fn service_port(container_port: Option<i64>, target_port: Option<&IntOrString>) -> Value {
    let port = container_port.filter(|p| *p > 0).unwrap_or(443);
    let target = match target_port {
        Some(IntOrString::Int(p)) => json!(p),
        Some(IntOrString::String(name)) => json!(name),
        None => json!(port),
    };
    json!({
        "name": port.to_string(),
        "port": port,
        "targetPort": target,
    })
}

fn managed() -> BTreeMap<String, String> {
    BTreeMap::from([(MANAGED_LABEL.to_owned(), "true".to_owned())])
}

/// The Service in front of `deployment`: its ports (deduplicated, in order), its pod selector
/// (`spec.selector.matchLabels`), owned by the CSV.
pub fn service(owner: &CsvOwner, deployment: &str, ports: &[Value], selector: &Value) -> Value {
    let mut unique: Vec<Value> = Vec::new();
    for p in ports {
        if !unique.contains(p) {
            unique.push(p.clone());
        }
    }
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(deployment),
            "namespace": owner.namespace,
            "labels": managed(),
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": {"ports": unique, "selector": selector},
    })
}

/// The Secret of the serving certificate: `tls.crt`, `tls.key`, the CA under [`CA_KEY`], and
/// [`CA_HASH_ANNOTATION`].
pub fn secret(
    owner: &CsvOwner,
    service: &str,
    cert_pem: &[u8],
    key_pem: &[u8],
    ca_pem: &[u8],
    ca_hash: &str,
) -> Value {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {
            "name": secret_name(service),
            "namespace": owner.namespace,
            "labels": managed(),
            "annotations": {CA_HASH_ANNOTATION: ca_hash},
            "ownerReferences": [owner_reference(owner)],
        },
        "data": {"tls.crt": b64(cert_pem), "tls.key": b64(key_pem), CA_KEY: b64(ca_pem)},
    })
}

/// The Role (named like the Secret) granting `get` on the Secret, and its RoleBinding to the
/// Deployment's ServiceAccount (`default` when it names none).
pub fn secret_rbac(owner: &CsvOwner, service: &str, service_account: Option<&str>) -> [Value; 2] {
    let name = secret_name(service);
    let sa = service_account
        .filter(|s| !s.is_empty())
        .unwrap_or("default");
    let meta = json!({
        "name": name,
        "namespace": owner.namespace,
        "labels": managed(),
        "ownerReferences": [owner_reference(owner)],
    });
    [
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta,
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": [name]}],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "subjects": [{"kind": "ServiceAccount", "apiGroup": "", "name": sa, "namespace": owner.namespace}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        }),
    ]
}

/// What an aggregated API server needs to authenticate callers: a ClusterRoleBinding
/// `<service>-system:auth-delegator` to `system:auth-delegator`, and a RoleBinding
/// `<service>-auth-reader` in `kube-system` to `extension-apiserver-authentication-reader`,
/// both for the Deployment's ServiceAccount and labelled as the CSV's.
pub fn auth_bindings(owner: &CsvOwner, service: &str, service_account: Option<&str>) -> [Value; 2] {
    let sa = service_account
        .filter(|s| !s.is_empty())
        .unwrap_or("default");
    let mut labels = owner_labels(owner);
    labels.extend(managed());
    let subject = json!([{"kind": "ServiceAccount", "name": sa, "namespace": owner.namespace}]);
    [
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("{service}-system:auth-delegator"), "labels": labels},
            "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": format!("{service}-auth-reader"), "namespace": "kube-system", "labels": labels},
            "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "extension-apiserver-authentication-reader"},
        }),
    ]
}

/// Mounts the certificate Secret into a Deployment spec: volume `apiservice-cert`
/// (`apiserver.crt`/`apiserver.key` at [`APISERVICE_CERT_PATH`]) and `webhook-cert`
/// (`tls.crt`/`tls.key` at [`WEBHOOK_CERT_PATH`]), each replacing a volume of its name and, in
/// every container, a mount of its name or path; and the CA hash on the pod template.
pub fn mount_certificate(spec: &mut Map<String, Value>, secret: &str, ca_hash: &str) {
    let template = spec
        .entry("template")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    let Some(template) = template else { return };
    if let Some(meta) = template
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        && let Some(annotations) = meta
            .entry("annotations")
            .or_insert_with(|| json!({}))
            .as_object_mut()
    {
        annotations.insert(CA_HASH_ANNOTATION.into(), json!(ca_hash));
    }
    let Some(pod) = template
        .entry("spec")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    else {
        return;
    };
    for (name, items, path) in [
        (
            "apiservice-cert",
            [("tls.crt", "apiserver.crt"), ("tls.key", "apiserver.key")],
            APISERVICE_CERT_PATH,
        ),
        (
            "webhook-cert",
            [("tls.crt", "tls.crt"), ("tls.key", "tls.key")],
            WEBHOOK_CERT_PATH,
        ),
    ] {
        let volume = json!({
            "name": name,
            "secret": {
                "secretName": secret,
                "items": items.iter().map(|(k, p)| json!({"key": k, "path": p})).collect::<Vec<_>>(),
            },
        });
        if let Some(volumes) = pod
            .entry("volumes")
            .or_insert_with(|| json!([]))
            .as_array_mut()
        {
            match volumes.iter_mut().find(|v| v["name"] == name) {
                Some(v) => *v = volume,
                None => volumes.push(volume),
            }
        }
        let mount = json!({"name": name, "mountPath": path});
        if let Some(containers) = pod.get_mut("containers").and_then(Value::as_array_mut) {
            for c in containers {
                let Some(mounts) = c
                    .as_object_mut()
                    .map(|c| c.entry("volumeMounts").or_insert_with(|| json!([])))
                    .and_then(Value::as_array_mut)
                else {
                    continue;
                };
                match mounts
                    .iter_mut()
                    .position(|m| m["name"] == name || m["mountPath"] == path)
                {
                    Some(i) if mounts[i]["name"] == name => {}
                    Some(i) => mounts[i] = mount.clone(),
                    None => mounts.push(mount.clone()),
                }
            }
        }
    }
}

/// The APIService `<version>.<group>` served by `deployment` (priorities 2000/15, as upstream),
/// labelled as the CSV's, trusting `ca_pem`.
pub fn apiservice(
    owner: &CsvOwner,
    group: &str,
    version: &str,
    deployment: &str,
    container_port: Option<i64>,
    ca_pem: &[u8],
) -> Value {
    let mut labels = owner_labels(owner);
    labels.extend(managed());
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}"), "labels": labels},
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": 2000,
            "versionPriority": 15,
            "service": {
                "namespace": owner.namespace,
                "name": service_name(deployment),
                "port": container_port.filter(|p| *p > 0).unwrap_or(443),
            },
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
        },
    })
}

#[cfg(test)]
mod tests {
    /// Upstream's `deleteLegacyAPIServiceResources` names (OLM repo
    /// `pkg/controller/install/apiservice.go`), and its edge case: a legacy name equal to the
    /// Deployment's Service name leaves everything alone. The e2e spec "api service resource
    /// migrated if adoptable" makes these objects with the CSV's owner labels.
    #[test]
    fn legacy_apiservice_names() {
        assert_eq!(
            legacy_apiservice_resources("v1alpha1", "hats.x.redhat.com", "hat-server"),
            vec![
                Legacy::Service("v1alpha1-hats-x-redhat-com".into()),
                Legacy::Secret("v1alpha1.hats.x.redhat.com-cert".into()),
                Legacy::Role("v1alpha1.hats.x.redhat.com-cert".into()),
                Legacy::RoleBinding("v1alpha1.hats.x.redhat.com-cert".into()),
                Legacy::ClusterRoleBinding(
                    "v1alpha1.hats.x.redhat.com-system:auth-delegator".into()
                ),
                Legacy::AuthReader("v1alpha1.hats.x.redhat.com-auth-reader".into()),
            ]
        );
        assert!(legacy_apiservice_resources("hat", "service", "hat").is_empty());
    }

    use super::*;

    fn owner() -> CsvOwner {
        CsvOwner {
            name: "etcd.v1".into(),
            namespace: "ops".into(),
            uid: "u".into(),
            annotations: BTreeMap::new(),
        }
    }

    #[test]
    fn service_secret_and_rbac() {
        let p = service_port(Some(8443), None);
        assert_eq!(p, json!({"name": "8443", "port": 8443, "targetPort": 8443}));
        let named = IntOrString::String("https".into());
        assert_eq!(
            service_port(Some(0), Some(&named)).to_string(),
            r#"{"name":"443","port":443,"targetPort":"https"}"#
        );
        assert_eq!(
            service_port(Some(9443), Some(&IntOrString::Int(8443))).to_string(),
            r#"{"name":"9443","port":9443,"targetPort":8443}"#
        );
        let svc = service(
            &owner(),
            "etcd.operator",
            &[p.clone(), p],
            &json!({"app": "etcd"}),
        );
        assert_eq!(svc["metadata"]["name"], "etcd-operator-service");
        assert_eq!(svc["spec"]["ports"].as_array().map(Vec::len), Some(1));
        let s = secret(&owner(), "etcd-operator-service", b"C", b"K", b"CA", "h");
        assert_eq!(s["metadata"]["name"], "etcd-operator-service-cert");
        assert_eq!(s["data"]["olmCAKey"], "Q0E=");
        assert_eq!(s["metadata"]["annotations"]["olmcahash"], "h");
        let [role, binding] = secret_rbac(&owner(), "etcd-operator-service", None);
        assert_eq!(
            role["rules"][0]["resourceNames"][0],
            "etcd-operator-service-cert"
        );
        assert_eq!(binding["subjects"][0]["name"], "default");
        let [crb, rb] = auth_bindings(&owner(), "etcd-operator-service", Some("etcd"));
        assert_eq!(
            crb["metadata"]["name"],
            "etcd-operator-service-system:auth-delegator"
        );
        assert_eq!(rb["metadata"]["namespace"], "kube-system");
        assert_eq!(
            rb["roleRef"]["name"],
            "extension-apiserver-authentication-reader"
        );
        let api = apiservice(
            &owner(),
            "etcd.example.com",
            "v1",
            "etcd.operator",
            None,
            b"CA",
        );
        assert_eq!(api["metadata"]["name"], "v1.etcd.example.com");
        assert_eq!(api["spec"]["service"]["port"], 443);
    }

    #[test]
    fn certificate_mounts() {
        let mut spec = json!({"template": {"spec": {
            "volumes": [{"name": "webhook-cert", "emptyDir": {}}],
            "containers": [
                {"name": "a", "volumeMounts": [{"name": "old", "mountPath": "/tmp/k8s-webhook-server/serving-certs"}]},
                {"name": "b"},
            ],
        }}})
        .as_object()
        .cloned()
        .unwrap_or_default();
        mount_certificate(&mut spec, "s-cert", "abc");
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["volumes"].as_array().map(Vec::len), Some(2));
        assert_eq!(pod["volumes"][0]["secret"]["secretName"], "s-cert");
        assert_eq!(
            pod["containers"][0]["volumeMounts"][0]["name"],
            "webhook-cert"
        );
        assert_eq!(
            pod["containers"][1]["volumeMounts"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
        assert_eq!(
            spec["template"]["metadata"]["annotations"]["olmcahash"],
            "abc"
        );
    }
}
