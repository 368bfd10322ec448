//! The mutating admission webhook that gives every ClusterCatalog the label
//! `olm.operatorframework.io/metadata.name=<name>` from creation on, so ClusterExtensions can
//! select catalogs by name with an ordinary label selector.
//!
//! Same path, webhook name, rules, match condition, failure policy and timeout as upstream's
//! `catalogd-mutating-webhook-configuration`. The API server calls it over HTTPS only, so it is
//! served with the catalog server's certificate.

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine;
use serde_json::{Value, json};

use olm_k8s::METADATA_NAME_LABEL;

/// Path the API server posts AdmissionReviews to.
pub const WEBHOOK_PATH: &str = "/mutate-olm-operatorframework-io-v1-clustercatalog";
/// Name of the MutatingWebhookConfiguration.
pub const CONFIGURATION_NAME: &str = "catalogd-mutating-webhook-configuration";
/// Name of the webhook inside it.
pub const WEBHOOK_NAME: &str = "inject-metadata-name.olm.operatorframework.io";

/// The router serving [`WEBHOOK_PATH`].
pub fn router() -> Router {
    Router::new().route(WEBHOOK_PATH, post(review))
}

async fn review(body: Bytes) -> Response {
    match serde_json::from_slice::<Value>(&body) {
        Ok(request) => (
            [(header::CONTENT_TYPE, "application/json")],
            review_response(&request).to_string(),
        )
            .into_response(),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            format!("invalid AdmissionReview: {e}\n"),
        )
            .into_response(),
    }
}

/// The JSON Patch that makes `object` carry the label, or `None` when it already does.
pub fn label_patch(object: &Value) -> Option<Value> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let labels = &object["metadata"]["labels"];
    if labels[METADATA_NAME_LABEL].as_str() == Some(name) {
        return None;
    }
    Some(match labels.as_object() {
        // JSON Pointer escapes `/` as `~1`; `add` replaces an existing member.
        Some(_) => json!([{
            "op": "add",
            "path": format!("/metadata/labels/{}", METADATA_NAME_LABEL.replace('~', "~0").replace('/', "~1")),
            "value": name,
        }]),
        None => json!([{
            "op": "add",
            "path": "/metadata/labels",
            "value": {METADATA_NAME_LABEL: name},
        }]),
    })
}

/// The AdmissionReview answering `request`: always allowed, patched when the label is missing
/// or wrong.
pub fn review_response(request: &Value) -> Value {
    let uid = request["request"]["uid"].clone();
    let mut response = json!({"uid": uid, "allowed": true});
    if let Some(patch) = label_patch(&request["request"]["object"]) {
        response["patchType"] = json!("JSONPatch");
        response["patch"] =
            json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
    }
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": response,
    })
}

/// Where the API server reaches the webhook.
#[derive(Debug, Clone)]
pub enum ClientConfig {
    /// A URL (outside the cluster, e.g. a local development server).
    Url(String),
    /// A Service in the cluster.
    Service {
        /// Namespace of the Service.
        namespace: String,
        /// Name of the Service.
        name: String,
        /// Port of the Service.
        port: u16,
    },
}

/// The MutatingWebhookConfiguration registering the webhook; `ca_bundle` is the PEM CA that
/// signed the serving certificate.
pub fn configuration(client: &ClientConfig, ca_bundle: &[u8]) -> Value {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_bundle);
    let client_config = match client {
        ClientConfig::Url(url) => json!({"url": format!("{url}{WEBHOOK_PATH}"), "caBundle": ca}),
        ClientConfig::Service {
            namespace,
            name,
            port,
        } => json!({
            "service": {"namespace": namespace, "name": name, "path": WEBHOOK_PATH, "port": port},
            "caBundle": ca,
        }),
    };
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": CONFIGURATION_NAME},
        "webhooks": [{
            "name": WEBHOOK_NAME,
            "admissionReviewVersions": ["v1"],
            "clientConfig": client_config,
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "matchConditions": [{
                "name": "MissingOrIncorrectMetadataNameLabel",
                "expression": format!(
                    "'name' in object.metadata && (!has(object.metadata.labels) || !('{METADATA_NAME_LABEL}' in object.metadata.labels) || object.metadata.labels['{METADATA_NAME_LABEL}'] != object.metadata.name)"
                ),
            }],
            "rules": [{
                "apiGroups": [olm_api::GROUP],
                "apiVersions": [olm_api::VERSION],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["clustercatalogs"],
                "scope": "*",
            }],
            "sideEffects": "None",
            "timeoutSeconds": 10,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(review: &Value) -> Value {
        let patch = review["response"]["patch"].as_str().expect("patch");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .expect("base64");
        serde_json::from_slice(&bytes).expect("json")
    }

    #[test]
    fn adds_the_label_map_when_there_is_none() {
        let review = review_response(
            &json!({"request": {"uid": "u1", "object": {"metadata": {"name": "cat"}}}}),
        );
        assert_eq!(review["response"]["uid"], "u1");
        assert_eq!(review["response"]["allowed"], true);
        assert_eq!(review["response"]["patchType"], "JSONPatch");
        assert_eq!(
            decode(&review),
            json!([{"op": "add", "path": "/metadata/labels", "value": {"olm.operatorframework.io/metadata.name": "cat"}}])
        );
    }

    #[test]
    fn adds_or_corrects_the_one_label() {
        let review = review_response(&json!({"request": {"uid": "u2", "object": {"metadata": {
            "name": "cat", "labels": {"a": "b", "olm.operatorframework.io/metadata.name": "other"}}}}}));
        assert_eq!(
            decode(&review),
            json!([{"op": "add", "path": "/metadata/labels/olm.operatorframework.io~1metadata.name", "value": "cat"}])
        );
    }

    #[test]
    fn leaves_a_correct_label_alone() {
        let review = review_response(&json!({"request": {"uid": "u3", "object": {"metadata": {
            "name": "cat", "labels": {"olm.operatorframework.io/metadata.name": "cat"}}}}}));
        assert!(review["response"].get("patch").is_none());
        assert_eq!(review["response"]["allowed"], true);
    }
}
