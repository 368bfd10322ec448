//! The conversion webhook: the API server asks the operator to turn widgets from one version of
//! their API into another (a CRD with `spec.conversion.strategy: Webhook`, which OLM wires to
//! this pod from a CSV's `ConversionWebhook` definition). Served at [`PATH`] beside the
//! validating webhook, over the same HTTPS server.
//!
//! Widget `v2` calls `spec.size` `spec.parts`; nothing else differs. [`convert`] is the whole
//! decision for one object, [`answer`] turns a ConversionReview (`apiextensions.k8s.io/v1`)
//! into its answer. The group is not looked at: the conversion is the same for any group that
//! serves Widget `v1` and `v2` (the shipped bundles serve `v1` only; the real-node tests install
//! a CRD of their own with both).

use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::{Map, Value};
use tracing::{info, warn};

/// Where the API server posts its ConversionReviews (a CSV's `webhookPath`).
pub const PATH: &str = "/convert";

/// The name `spec.size` has in each version.
fn size_field(version: &str) -> Option<&'static str> {
    match version {
        "v1" => Some("size"),
        "v2" => Some("parts"),
        _ => None,
    }
}

/// `object` as `desired_api_version` (`<group>/<version>`) has it: its `apiVersion` replaced,
/// and the size moved to the field the desired version names it by. An object already in the
/// desired version is returned as it is.
pub fn convert(mut object: Value, desired_api_version: &str) -> Result<Value, String> {
    let Some(fields) = object.as_object_mut() else {
        return Err("the object to convert is no JSON object".to_owned());
    };
    let from = fields
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if from == desired_api_version {
        return Ok(object);
    }
    let version = |api_version: &str| {
        api_version
            .rsplit_once('/')
            .map_or(api_version, |(_, v)| v)
            .to_owned()
    };
    let (old, new) = (version(&from), version(desired_api_version));
    let (Some(old_field), Some(new_field)) = (size_field(&old), size_field(&new)) else {
        return Err(format!(
            "cannot convert a widget from {from:?} to {desired_api_version:?}: only v1 and v2 are known"
        ));
    };
    if let Some(spec) = fields.get_mut("spec").and_then(Value::as_object_mut)
        && let Some(size) = spec.remove(old_field)
    {
        spec.insert(new_field.to_owned(), size);
    }
    fields.insert(
        "apiVersion".to_owned(),
        Value::String(desired_api_version.to_owned()),
    );
    Ok(object)
}

/// Why a request body is no ConversionReview to answer.
#[derive(Debug, thiserror::Error)]
pub enum BadReview {
    /// Not the JSON of a ConversionReview.
    #[error("not a ConversionReview: {0}")]
    Json(#[from] serde_json::Error),
    /// A ConversionReview without a request.
    #[error("the ConversionReview has no request")]
    NoRequest,
}

/// The ConversionReview answering the one in `body`: every object converted, in the order of
/// the request, or a failure naming the first object that could not be.
pub fn answer(body: &[u8]) -> Result<ConversionReview, BadReview> {
    let review: ConversionReview = serde_json::from_slice(body)?;
    let request = ConversionRequest::try_from(review).map_err(|_| BadReview::NoRequest)?;
    let desired = request.desired_api_version.clone();
    let converted: Result<Vec<Value>, String> = request
        .objects
        .iter()
        .map(|o| convert(o.clone(), &desired))
        .collect();
    let response = ConversionResponse::for_request(request);
    let response = match converted {
        Ok(objects) => response.success(objects),
        Err(why) => response.failure(Status::failure(&why, "Invalid")),
    };
    Ok(response.into_review())
}

fn names(objects: &[Value]) -> String {
    objects
        .iter()
        .map(|o| {
            let meta = o.get("metadata").and_then(Value::as_object);
            let get = |m: Option<&Map<String, Value>>, k: &str| {
                m.and_then(|m| m.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            format!("{}/{}", get(meta, "namespace"), get(meta, "name"))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Serves [`PATH`].
pub async fn review(body: Bytes) -> Response {
    match answer(&body) {
        Ok(review) => {
            if let Some(response) = &review.response {
                let widgets = names(&response.converted_objects);
                match response.result.is_success() {
                    true => info!(%widgets, "conversion: converted"),
                    false => warn!(reason = %response.result.message, "conversion: refused"),
                }
            }
            match serde_json::to_vec(&review) {
                Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
                Err(e) => {
                    warn!(error = %e, "conversion: the answer could not be written");
                    StatusCode::INTERNAL_SERVER_ERROR.into_response()
                }
            }
        }
        Err(e) => {
            warn!(error = %e, "conversion: a request that is no ConversionReview");
            (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const V1: &str = "convert.example/v1";
    const V2: &str = "convert.example/v2";

    fn widget(api_version: &str, spec: Value) -> Value {
        json!({
            "apiVersion": api_version,
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "uid": "u", "resourceVersion": "7"},
            "spec": spec,
            "status": {"ready": true},
        })
    }

    #[test]
    fn conversions() {
        let cases = [
            (
                "v1 to v2 renames size",
                widget(V1, json!({"size": 3, "color": "red"})),
                V2,
                Ok(widget(V2, json!({"parts": 3, "color": "red"}))),
            ),
            (
                "v2 to v1 renames parts",
                widget(V2, json!({"parts": 5})),
                V1,
                Ok(widget(V1, json!({"size": 5}))),
            ),
            (
                "no size: only the version changes",
                widget(V1, json!({"color": "blue"})),
                V2,
                Ok(widget(V2, json!({"color": "blue"}))),
            ),
            (
                "already in the desired version",
                widget(V2, json!({"parts": 1})),
                V2,
                Ok(widget(V2, json!({"parts": 1}))),
            ),
            (
                "an unknown version",
                widget(V1, json!({"size": 1})),
                "convert.example/v3",
                Err(
                    "cannot convert a widget from \"convert.example/v1\" to \"convert.example/v3\": only v1 and v2 are known"
                        .to_owned(),
                ),
            ),
        ];
        for (name, object, desired, want) in cases {
            assert_eq!(convert(object, desired), want, "{name}");
        }
        let mut no_spec = widget(V1, Value::Null);
        no_spec.as_object_mut().unwrap().remove("spec");
        let mut want = no_spec.clone();
        want["apiVersion"] = json!(V2);
        assert_eq!(convert(no_spec, V2), Ok(want));
    }

    fn review(desired: &str, objects: Vec<Value>) -> Vec<u8> {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "desiredAPIVersion": desired,
                "objects": objects,
            },
        })
        .to_string()
        .into_bytes()
    }

    /// The answer is a ConversionReview v1 with the request's uid, a `Success` result and the
    /// objects in the request's order, as the API server requires.
    #[test]
    fn answers_conversion_review_v1() {
        let reply = answer(&review(
            V2,
            vec![
                widget(V1, json!({"size": 1})),
                widget(V2, json!({"parts": 2})),
            ],
        ))
        .unwrap();
        let json = serde_json::to_value(&reply).unwrap();
        assert_eq!(json["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(json["kind"], "ConversionReview");
        assert!(json.get("request").is_none(), "{json}");
        let response = &json["response"];
        assert_eq!(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(response["result"]["status"], "Success", "{json}");
        assert_eq!(
            response["convertedObjects"],
            json!([
                widget(V2, json!({"parts": 1})),
                widget(V2, json!({"parts": 2}))
            ])
        );

        let reply = answer(&review(
            "convert.example/v9",
            vec![widget(V1, json!({"size": 1}))],
        ))
        .unwrap();
        let json = serde_json::to_value(&reply).unwrap();
        assert_eq!(json["response"]["result"]["status"], "Failure", "{json}");
        assert!(
            json["response"]["result"]["message"]
                .as_str()
                .unwrap()
                .starts_with("cannot convert a widget from "),
            "{json}"
        );
        assert_eq!(json["response"]["convertedObjects"], json!([]));
    }

    #[test]
    fn refuses_what_is_no_review() {
        assert!(matches!(answer(b"{"), Err(BadReview::Json(_))));
        assert!(matches!(
            answer(br#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}"#),
            Err(BadReview::NoRequest)
        ));
    }
}
