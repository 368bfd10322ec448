//! The admission and conversion webhooks a CSV's `webhookdefinitions` become (OLM repo
//! `pkg/controller/install/webhook.go`; the API repo's `WebhookDescription.GetValidatingWebhook`,
//! `GetMutatingWebhook`, `DomainName`; `OperatorGroup.NamespaceLabelSelector`): one
//! Validating- or MutatingWebhookConfiguration per definition, scoped to the OperatorGroup's
//! namespaces, or a conversion section on each CRD it names.

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use olm_v0_api::v1alpha1::{WebhookAdmissionType, WebhookDescription};
use serde_json::{Map, Value, json};

use crate::olm_operator::installmode::{InstallMode, InstallModeType};
use crate::olm_operator::operatorgroup::{GROUP_LABEL_PREFIX, MANAGED_LABEL};
use crate::olm_operator::strategy::{CsvOwner, owner_labels, spec_hash};

/// Label naming the definition a configuration was made from.
pub const DESCRIPTION_LABEL: &str = "olm.webhook-description-generate-name";
/// Label holding the hash of that definition (a changed definition is rewritten).
pub const DESCRIPTION_HASH_LABEL: &str = "olm.webhook-description-hash";

/// The namespaces an OperatorGroup's webhooks apply to: its explicit targets through the
/// `olm.operatorgroup.uid/<uid>` label they carry, else its selector, else every namespace
/// (`None`).
pub fn namespace_selector(
    target_namespaces: &[String],
    selector: Option<&LabelSelector>,
    group_uid: &str,
) -> Option<LabelSelector> {
    if target_namespaces.is_empty() {
        return selector.cloned();
    }
    Some(LabelSelector {
        match_labels: Some(BTreeMap::from([(
            format!("{GROUP_LABEL_PREFIX}{group_uid}"),
            String::new(),
        )])),
        match_expressions: None,
    })
}

/// The Service a definition's webhook is served by: the deployment name with dots turned into
/// dashes, then `-service`.
pub fn service_name(deployment_name: &str) -> String {
    format!("{}-service", deployment_name.replace('.', "-"))
}

/// The Validating- or MutatingWebhookConfiguration for `desc` (a `webhookdefinitions[]`
/// entry) of `owner`, to be created with `generateName: <generateName>-`; `None` for a
/// conversion webhook.
///
/// The admission fields (`rules`, `failurePolicy`, …) are copied as the description serializes
/// them, and [`DESCRIPTION_HASH_LABEL`] is [`spec_hash`] of that same JSON, so a configuration
/// is rewritten exactly when its description changes.
///
/// # Errors
///
/// When the description or the selector cannot be serialized as JSON.
pub fn configuration(
    desc: &WebhookDescription,
    owner: &CsvOwner,
    namespace_selector: Option<&LabelSelector>,
    ca_pem: &[u8],
) -> Result<Option<Value>, serde_json::Error> {
    let kind = match desc.type_ {
        WebhookAdmissionType::ValidatingAdmissionWebhook => "ValidatingWebhookConfiguration",
        WebhookAdmissionType::MutatingAdmissionWebhook => "MutatingWebhookConfiguration",
        WebhookAdmissionType::ConversionWebhook => return Ok(None),
    };
    let serialized = serde_json::to_value(desc)?;
    let generate_name = desc.generate_name.as_str();
    let deployment = desc.deployment_name.as_deref().unwrap_or_default();
    let mut service = Map::new();
    service.insert("name".into(), json!(service_name(deployment)));
    service.insert("namespace".into(), json!(owner.namespace));
    if let Some(path) = &desc.webhook_path {
        service.insert("path".into(), json!(path));
    }
    service.insert("port".into(), json!(desc.container_port.unwrap_or(443)));
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
        if let Some(v) = serialized.get(key).filter(|v| !v.is_null()) {
            webhook.insert(key.into(), v.clone());
        }
    }
    if let Some(sel) = namespace_selector {
        webhook.insert("namespaceSelector".into(), serde_json::to_value(sel)?);
    }
    let mut labels: BTreeMap<String, String> = owner_labels(owner);
    labels.insert(DESCRIPTION_LABEL.into(), generate_name.into());
    labels.insert(DESCRIPTION_HASH_LABEL.into(), spec_hash(&serialized));
    labels.insert(MANAGED_LABEL.into(), "true".into());
    Ok(Some(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"generateName": format!("{generate_name}-"), "labels": labels},
        "webhooks": [webhook],
    })))
}

/// Whether a CSV supports exactly AllNamespaces (upstream's `isSingletonOperator`: no other
/// mode supported, AllNamespaces not marked unsupported).
fn all_namespaces_only(modes: &[InstallMode]) -> bool {
    modes.iter().all(|m| {
        if m.type_ == InstallModeType::AllNamespaces {
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
pub fn conversion(desc: &WebhookDescription, namespace: &str, ca_pem: &[u8]) -> Value {
    let deployment = desc.deployment_name.as_deref().unwrap_or_default();
    json!({
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {
                    "namespace": namespace,
                    "name": service_name(deployment),
                    "path": desc.webhook_path.as_deref().unwrap_or("/"),
                    "port": desc.container_port.unwrap_or(443),
                },
                "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            },
            "conversionReviewVersions": desc.admission_review_versions,
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

    /// A `webhookdefinitions[]` entry as the CSV's YAML writes it.
    fn desc(v: Value) -> WebhookDescription {
        serde_json::from_value(v).unwrap()
    }

    /// A validating webhook as bundles declare one, with a field only mutating configurations
    /// copy (`reinvocationPolicy`).
    fn validating() -> WebhookDescription {
        desc(json!({
            "generateName": "vwebhook.example.com",
            "type": "ValidatingAdmissionWebhook",
            "deploymentName": "example.operator",
            "containerPort": 9443,
            "webhookPath": "/validate",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}],
            "reinvocationPolicy": "Never",
        }))
    }

    fn selector(v: Value) -> LabelSelector {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn validating_configuration() {
        let desc = validating();
        let sel = namespace_selector(&["a".into()], None, "uid-1");
        let c = configuration(&desc, &owner(), sel.as_ref(), b"CA")
            .unwrap()
            .unwrap();
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
        assert_eq!(
            labels["olm.webhook-description-hash"],
            "3Xkz9ORGsxyEdOnlgEFy7KqqKzRqJ1Xmrd6w9q"
        );
        // All namespaces: no selector at all.
        assert_eq!(namespace_selector(&[], None, "u"), None);
        let s = selector(json!({"matchLabels": {"team": "x"}}));
        assert_eq!(namespace_selector(&[], Some(&s), "u"), Some(s));
    }

    /// The whole objects, byte for byte as they are applied, and the
    /// `olm.webhook-description-hash` of each: [`spec_hash`] of the description's JSON as the
    /// API model serializes it. A configuration whose hash label changes is rewritten, so these
    /// values must survive any change to how descriptions are read.
    #[test]
    fn configurations_and_description_hashes_are_pinned() {
        let targets = namespace_selector(&["a".into()], None, "uid-1");
        assert_eq!(
            configuration(&validating(), &owner(), targets.as_ref(), b"CA")
                .unwrap()
                .unwrap()
                .to_string(),
            r#"{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"generateName":"vwebhook.example.com-","labels":{"olm.managed":"true","olm.owner":"etcd.v1","olm.owner.kind":"ClusterServiceVersion","olm.owner.namespace":"ops","olm.webhook-description-generate-name":"vwebhook.example.com","olm.webhook-description-hash":"3Xkz9ORGsxyEdOnlgEFy7KqqKzRqJ1Xmrd6w9q"}},"webhooks":[{"name":"vwebhook.example.com","clientConfig":{"service":{"name":"example-operator-service","namespace":"ops","path":"/validate","port":9443},"caBundle":"Q0E="},"rules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["widgets"]}],"sideEffects":"None","admissionReviewVersions":["v1"],"namespaceSelector":{"matchLabels":{"olm.operatorgroup.uid/uid-1":""}}}]}"#
        );
        let mutating = desc(json!({
            "generateName": "mwebhook.example.com",
            "type": "MutatingAdmissionWebhook",
            "deploymentName": "example-operator",
            "targetPort": "https",
            "sideEffects": "NoneOnDryRun",
            "failurePolicy": "Ignore",
            "matchPolicy": "Equivalent",
            "timeoutSeconds": 7,
            "objectSelector": {"matchLabels": {"app": "w"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a<b"]}]},
            "admissionReviewVersions": ["v1", "v1beta1"],
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"], "scope": "Namespaced"}],
            "reinvocationPolicy": "IfNeeded",
        }));
        let group = selector(json!({"matchLabels": {"team": "x"}}));
        let chosen = namespace_selector(&[], Some(&group), "u");
        assert_eq!(
            configuration(&mutating, &owner(), chosen.as_ref(), b"CA")
                .unwrap()
                .unwrap()
                .to_string(),
            r#"{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"generateName":"mwebhook.example.com-","labels":{"olm.managed":"true","olm.owner":"etcd.v1","olm.owner.kind":"ClusterServiceVersion","olm.owner.namespace":"ops","olm.webhook-description-generate-name":"mwebhook.example.com","olm.webhook-description-hash":"95rB089rfsIWK6u4BvjXQ1Up3HUCRfbiwe4TJ8"}},"webhooks":[{"name":"mwebhook.example.com","clientConfig":{"service":{"name":"example-operator-service","namespace":"ops","port":443},"caBundle":"Q0E="},"rules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["pods"],"scope":"Namespaced"}],"failurePolicy":"Ignore","matchPolicy":"Equivalent","objectSelector":{"matchExpressions":[{"key":"tier","operator":"In","values":["a<b"]}],"matchLabels":{"app":"w"}},"sideEffects":"NoneOnDryRun","timeoutSeconds":7,"admissionReviewVersions":["v1","v1beta1"],"reinvocationPolicy":"IfNeeded","namespaceSelector":{"matchLabels":{"team":"x"}}}]}"#
        );
        // Nothing optional set: an empty `sideEffects` and review list are still written, a
        // zero port is kept as given.
        let bare = desc(json!({
            "generateName": "e",
            "type": "ValidatingAdmissionWebhook",
            "sideEffects": "",
            "admissionReviewVersions": [],
            "containerPort": 0,
        }));
        assert_eq!(
            configuration(&bare, &owner(), None, b"")
                .unwrap()
                .unwrap()
                .to_string(),
            r#"{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"generateName":"e-","labels":{"olm.managed":"true","olm.owner":"etcd.v1","olm.owner.kind":"ClusterServiceVersion","olm.owner.namespace":"ops","olm.webhook-description-generate-name":"e","olm.webhook-description-hash":"7I9akag27ewOfRsFA77qn0ht2985LLPnpj9uny"}},"webhooks":[{"name":"e","clientConfig":{"service":{"name":"-service","namespace":"ops","port":0},"caBundle":""},"sideEffects":"","admissionReviewVersions":[]}]}"#
        );
    }

    #[test]
    fn conversion_rules() {
        let all = vec![InstallMode {
            type_: InstallModeType::AllNamespaces,
            supported: true,
        }];
        let own = vec![
            InstallMode {
                type_: InstallModeType::AllNamespaces,
                supported: true,
            },
            InstallMode {
                type_: InstallModeType::OwnNamespace,
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
        let webhook = desc(json!({
            "generateName": "c",
            "type": "ConversionWebhook",
            "deploymentName": "d",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "conversionCRDs": ["widgets.example.com"],
        }));
        assert_eq!(
            configuration(&webhook, &owner(), None, b"CA").unwrap(),
            None
        );
        let conv = conversion(&webhook, "ops", b"CA");
        assert_eq!(conv["webhook"]["clientConfig"]["service"]["path"], "/");
        assert_eq!(conv["webhook"]["clientConfig"]["service"]["port"], 443);
        assert_eq!(conv["webhook"]["conversionReviewVersions"], json!(["v1"]));
        assert_eq!(
            conv.to_string(),
            r#"{"strategy":"Webhook","webhook":{"clientConfig":{"service":{"namespace":"ops","name":"d-service","path":"/","port":443},"caBundle":"Q0E="},"conversionReviewVersions":["v1"]}}"#
        );
        let given = desc(json!({
            "generateName": "c",
            "type": "ConversionWebhook",
            "deploymentName": "d.x",
            "containerPort": 8443,
            "webhookPath": "/convert",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1beta1", "v1"],
            "conversionCRDs": ["widgets.example.com"],
        }));
        assert_eq!(
            conversion(&given, "ops", b"CA").to_string(),
            r#"{"strategy":"Webhook","webhook":{"clientConfig":{"service":{"namespace":"ops","name":"d-x-service","path":"/convert","port":8443},"caBundle":"Q0E="},"conversionReviewVersions":["v1beta1","v1"]}}"#
        );
    }
}
