//! The admission and conversion webhooks a CSV's `webhookdefinitions` become (OLM repo
//! `pkg/controller/install/webhook.go`; the API repo's `WebhookDescription.GetValidatingWebhook`,
//! `GetMutatingWebhook`, `DomainName`; `OperatorGroup.NamespaceLabelSelector`): one
//! Validating- or MutatingWebhookConfiguration per definition, scoped to the OperatorGroup's
//! namespaces, or a conversion section on each CRD it names.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::installmode::{InstallMode, InstallModeType};
use crate::operatorgroup::{GROUP_LABEL_PREFIX, MANAGED_LABEL};
use crate::strategy::{CsvOwner, owner_labels, spec_hash};

/// Label naming the definition a configuration was made from.
pub const DESCRIPTION_LABEL: &str = "olm.webhook-description-generate-name";
/// Label holding the hash of that definition (a changed definition is rewritten).
pub const DESCRIPTION_HASH_LABEL: &str = "olm.webhook-description-hash";

/// The namespaces an OperatorGroup's webhooks apply to: its explicit targets through the
/// `olm.operatorgroup.uid/<uid>` label they carry, else its selector, else every namespace
/// (`None`).
pub fn namespace_selector(
    target_namespaces: &[String],
    selector: Option<&Value>,
    group_uid: &str,
) -> Option<Value> {
    if target_namespaces.is_empty() {
        return selector.cloned();
    }
    Some(json!({"matchLabels": {format!("{GROUP_LABEL_PREFIX}{group_uid}"): ""}}))
}

/// The Service a definition's webhook is served by: the deployment name with dots turned into
/// dashes, then `-service`.
pub fn service_name(deployment_name: &str) -> String {
    format!("{}-service", deployment_name.replace('.', "-"))
}

fn field<'a>(desc: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    desc.get(key).filter(|v| !v.is_null())
}

/// The Validating- or MutatingWebhookConfiguration for `desc` (a `webhookdefinitions[]`
/// entry) of `owner`, to be created with `generateName: <generateName>-`; `None` for a
/// conversion webhook or an unknown type.
pub fn configuration(
    desc: &Value,
    owner: &CsvOwner,
    namespace_selector: Option<&Value>,
    ca_pem: &[u8],
) -> Option<Value> {
    let d = desc.as_object()?;
    let kind = match field(d, "type").and_then(Value::as_str) {
        Some("ValidatingAdmissionWebhook") => "ValidatingWebhookConfiguration",
        Some("MutatingAdmissionWebhook") => "MutatingWebhookConfiguration",
        _ => return None,
    };
    let generate_name = field(d, "generateName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let deployment = field(d, "deploymentName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut service = Map::new();
    service.insert("name".into(), json!(service_name(deployment)));
    service.insert("namespace".into(), json!(owner.namespace));
    if let Some(path) = field(d, "webhookPath") {
        service.insert("path".into(), path.clone());
    }
    service.insert(
        "port".into(),
        field(d, "containerPort").cloned().unwrap_or(json!(443)),
    );
    let mut webhook = Map::new();
    webhook.insert("name".into(), json!(generate_name));
    webhook.insert(
        "clientConfig".into(),
        json!({
            "service": service,
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
        }),
    );
    let mut copied = vec![
        "rules",
        "failurePolicy",
        "matchPolicy",
        "objectSelector",
        "sideEffects",
        "timeoutSeconds",
        "admissionReviewVersions",
    ];
    if kind == "MutatingWebhookConfiguration" {
        copied.push("reinvocationPolicy");
    }
    for key in copied {
        if let Some(v) = field(d, key) {
            webhook.insert(key.into(), v.clone());
        }
    }
    if let Some(sel) = namespace_selector {
        webhook.insert("namespaceSelector".into(), sel.clone());
    }
    let mut labels: BTreeMap<String, String> = owner_labels(owner);
    labels.insert(DESCRIPTION_LABEL.into(), generate_name.into());
    labels.insert(DESCRIPTION_HASH_LABEL.into(), spec_hash(desc));
    labels.insert(MANAGED_LABEL.into(), "true".into());
    Some(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"generateName": format!("{generate_name}-"), "labels": labels},
        "webhooks": [webhook],
    }))
}

/// Whether a CSV supports exactly AllNamespaces (upstream's `isSingletonOperator`: no other
/// mode supported, AllNamespaces not marked unsupported).
fn all_namespaces_only(modes: &[InstallMode]) -> bool {
    modes.iter().all(|m| {
        if m.mode == InstallModeType::AllNamespaces {
            m.supported
        } else {
            !m.supported
        }
    })
}

/// A CRD a conversion webhook names, as the check reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionCrd<'a> {
    /// Its name.
    pub name: &'a str,
    /// Whether the CSV owns it.
    pub owned: bool,
    /// Its `spec.preserveUnknownFields`.
    pub preserve_unknown_fields: bool,
}

/// The conditions a conversion webhook must meet before CRDs are pointed at it, in upstream's
/// order and words: the CSV supports only AllNamespaces, names at least one CRD, owns each, and
/// each does not preserve unknown fields.
pub fn conversion_problem(
    csv_name: &str,
    modes: &[InstallMode],
    crds: &[ConversionCrd<'_>],
) -> Option<String> {
    if !all_namespaces_only(modes) {
        return Some("unable to manage conversion webhook: CSVs with conversion webhooks must support only AllNamespaces".into());
    }
    if crds.is_empty() {
        return Some("unable to manager conversion webhook: conversion webhook must have at least one CRD specified".into());
    }
    for crd in crds {
        if !crd.owned {
            return Some(format!("csv {csv_name} does not own CRD {}", crd.name));
        }
        if crd.preserve_unknown_fields {
            return Some("crd.Spec.PreserveUnknownFields must be false to let API Server call webhook to do the conversion".into());
        }
    }
    None
}

/// The `spec.conversion` a conversion webhook puts on each of its CRDs.
pub fn conversion(desc: &Value, namespace: &str, ca_pem: &[u8]) -> Value {
    let d = desc.as_object().cloned().unwrap_or_default();
    let deployment = field(&d, "deploymentName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let path = field(&d, "webhookPath").cloned().unwrap_or(json!("/"));
    json!({
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "namespace": namespace,
                    "name": service_name(deployment),
                    "path": path,
                    "port": field(&d, "containerPort").cloned().unwrap_or(json!(443)),
                },
                "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            },
            "conversionReviewVersions": field(&d, "admissionReviewVersions").cloned().unwrap_or(json!([])),
        },
    })
}

#[cfg(test)]
mod tests {
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
    fn validating_configuration() {
        let desc = json!({
            "generateName": "vwebhook.example.com",
            "type": "ValidatingAdmissionWebhook",
            "deploymentName": "example.operator",
            "containerPort": 9443,
            "webhookPath": "/validate",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}],
            "reinvocationPolicy": "Never",
        });
        let sel = namespace_selector(&["a".into()], None, "uid-1");
        let c = configuration(&desc, &owner(), sel.as_ref(), b"CA").unwrap();
        assert_eq!(c["kind"], "ValidatingWebhookConfiguration");
        assert_eq!(c["metadata"]["generateName"], "vwebhook.example.com-");
        let w = &c["webhooks"][0];
        assert_eq!(w["name"], "vwebhook.example.com");
        assert_eq!(
            w["clientConfig"]["service"]["name"],
            "example-operator-service"
        );
        assert_eq!(w["clientConfig"]["service"]["port"], 9443);
        assert_eq!(w["clientConfig"]["caBundle"], "Q0E=");
        assert_eq!(
            w["namespaceSelector"]["matchLabels"]["olm.operatorgroup.uid/uid-1"],
            ""
        );
        assert!(
            w.get("reinvocationPolicy").is_none(),
            "only mutating webhooks reinvoke"
        );
        let labels = &c["metadata"]["labels"];
        assert_eq!(
            labels["olm.webhook-description-generate-name"],
            "vwebhook.example.com"
        );
        assert_eq!(labels["olm.owner.kind"], "ClusterServiceVersion");
        assert_eq!(labels["olm.managed"], "true");
        assert!(
            labels["olm.webhook-description-hash"]
                .as_str()
                .is_some_and(|h| !h.is_empty())
        );
        // All namespaces: no selector at all.
        assert_eq!(namespace_selector(&[], None, "u"), None);
        let s = json!({"matchLabels": {"team": "x"}});
        assert_eq!(namespace_selector(&[], Some(&s), "u"), Some(s));
    }

    #[test]
    fn conversion_rules() {
        let all = vec![InstallMode {
            mode: InstallModeType::AllNamespaces,
            supported: true,
        }];
        let own = vec![
            InstallMode {
                mode: InstallModeType::AllNamespaces,
                supported: true,
            },
            InstallMode {
                mode: InstallModeType::OwnNamespace,
                supported: true,
            },
        ];
        let crd = |owned, preserve| ConversionCrd {
            name: "widgets.example.com",
            owned,
            preserve_unknown_fields: preserve,
        };
        assert_eq!(conversion_problem("c", &all, &[crd(true, false)]), None);
        assert!(
            conversion_problem("c", &own, &[crd(true, false)])
                .unwrap()
                .contains("must support only AllNamespaces")
        );
        assert!(
            conversion_problem("c", &all, &[])
                .unwrap()
                .contains("at least one CRD")
        );
        assert_eq!(
            conversion_problem("c", &all, &[crd(false, false)]),
            Some("csv c does not own CRD widgets.example.com".into())
        );
        assert!(
            conversion_problem("c", &all, &[crd(true, true)])
                .unwrap()
                .contains("PreserveUnknownFields")
        );
        let conv = conversion(
            &json!({"deploymentName": "d", "admissionReviewVersions": ["v1"]}),
            "ops",
            b"CA",
        );
        assert_eq!(conv["webhook"]["clientConfig"]["service"]["path"], "/");
        assert_eq!(conv["webhook"]["clientConfig"]["service"]["port"], 443);
        assert_eq!(conv["webhook"]["conversionReviewVersions"], json!(["v1"]));
    }
}
