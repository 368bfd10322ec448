//! The validating admission webhook: the API server asks before it stores a widget, and a
//! widget over the limit is refused with the rule's message. [`verdict`] is the whole decision,
//! [`answer`] turns an AdmissionReview (v1) into its answer, and [`router`] serves it — and,
//! beside it, the conversion webhook of [`convert`].

pub mod convert;

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use tracing::{info, warn};

use crate::widget::{WidgetSpec, check};

/// Where the API server posts its AdmissionReviews (0.2.0's CSV names it as `webhookPath`).
pub const PATH: &str = "/validate-widget";

/// Whether a widget may be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Store it.
    Allow,
    /// Refuse it, saying why.
    Deny(String),
}

/// Whether the API server may go on with `operation` on a widget that is to become `new` (none
/// for a deletion) and was `old` (none for a creation).
///
/// A widget that keeps the rule is allowed; one that breaks it is denied with the rule's
/// message — except an update that leaves the size as it was: a widget stored before the
/// webhook ran (0.1.0 had none) can still be labelled, painted or have its finalizers removed,
/// it just cannot be made worse or be created anew. Deletions are allowed.
pub fn verdict(
    operation: &Operation,
    new: Option<&WidgetSpec>,
    old: Option<&WidgetSpec>,
) -> Verdict {
    let Some(new) = new else {
        return Verdict::Allow;
    };
    match check(new) {
        Ok(()) => Verdict::Allow,
        Err(_) if *operation == Operation::Update && old.is_some_and(|o| o.size == new.size) => {
            Verdict::Allow
        }
        Err(why) => Verdict::Deny(why.to_string()),
    }
}

/// Why a request body is no AdmissionReview to answer.
#[derive(Debug, thiserror::Error)]
pub enum BadReview {
    /// Not the JSON of an AdmissionReview.
    #[error("not an AdmissionReview: {0}")]
    Json(#[from] serde_json::Error),
    /// An AdmissionReview without a request.
    #[error("the AdmissionReview has no request")]
    NoRequest,
}

/// The AdmissionReview answering the one in `body`, and the verdict with the widget's
/// namespace and name (for the log).
pub fn answer(body: &[u8]) -> Result<(AdmissionReview<DynamicObject>, Verdict, String), BadReview> {
    let review: AdmissionReview<DynamicObject> = serde_json::from_slice(body)?;
    let request: AdmissionRequest<DynamicObject> =
        review.try_into().map_err(|_| BadReview::NoRequest)?;
    let spec = |object: Option<&DynamicObject>| -> Result<Option<WidgetSpec>, String> {
        match object.map(|o| &o.data["spec"]) {
            None => Ok(None),
            // The CRD does not require a spec.
            Some(serde_json::Value::Null) => Ok(Some(WidgetSpec::default())),
            Some(spec) => serde_json::from_value(spec.clone())
                .map(Some)
                .map_err(|e| format!("the widget's spec cannot be read: {e}")),
        }
    };
    let verdict = match (
        spec(request.object.as_ref()),
        spec(request.old_object.as_ref()),
    ) {
        (Ok(new), Ok(old)) => verdict(&request.operation, new.as_ref(), old.as_ref()),
        (Err(why), _) | (_, Err(why)) => Verdict::Deny(why),
    };
    let who = match &request.namespace {
        Some(ns) => format!("{ns}/{}", request.name),
        None => request.name.clone(),
    };
    let response = AdmissionResponse::from(&request);
    let response = match &verdict {
        Verdict::Allow => response,
        Verdict::Deny(why) => response.deny(why),
    };
    Ok((response.into_review(), verdict, who))
}

/// The router serving [`PATH`] and [`convert::PATH`].
pub fn router() -> Router {
    Router::new()
        .route(PATH, post(review))
        .route(convert::PATH, post(convert::review))
}

async fn review(body: Bytes) -> Response {
    match answer(&body) {
        Ok((review, verdict, widget)) => {
            match &verdict {
                Verdict::Allow => info!(%widget, "admission: allowed"),
                Verdict::Deny(why) => info!(%widget, reason = %why, "admission: denied"),
            }
            match serde_json::to_vec(&review) {
                Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
                Err(e) => {
                    warn!(%widget, error = %e, "admission: the answer could not be written");
                    StatusCode::INTERNAL_SERVER_ERROR.into_response()
                }
            }
        }
        Err(e) => {
            warn!(error = %e, "admission: a request that is no AdmissionReview");
            (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    const TOO_LARGE: &str = "spec.size 1000 is more than 100, the most a widget can have";
    const GROUP: &str = "example.olm.operatorframework.io";
    const API_VERSION: &str = "example.olm.operatorframework.io/v1";

    fn spec(size: i64) -> WidgetSpec {
        WidgetSpec {
            size: Some(size),
            color: None,
        }
    }

    #[test]
    fn verdicts() {
        let deny = |s: &str| Verdict::Deny(s.to_owned());
        let none = WidgetSpec::default();
        let cases = [
            (
                "create, valid",
                Operation::Create,
                Some(spec(3)),
                None,
                Verdict::Allow,
            ),
            (
                "create, at the limit",
                Operation::Create,
                Some(spec(100)),
                None,
                Verdict::Allow,
            ),
            (
                "create, no size",
                Operation::Create,
                Some(none.clone()),
                None,
                Verdict::Allow,
            ),
            (
                "create, over",
                Operation::Create,
                Some(spec(1000)),
                None,
                deny(TOO_LARGE),
            ),
            (
                "update to over",
                Operation::Update,
                Some(spec(1000)),
                Some(spec(3)),
                deny(TOO_LARGE),
            ),
            (
                "update, over to more",
                Operation::Update,
                Some(spec(1000)),
                Some(spec(200)),
                deny(TOO_LARGE),
            ),
            (
                "update, over left as it was",
                Operation::Update,
                Some(spec(1000)),
                Some(spec(1000)),
                Verdict::Allow,
            ),
            (
                "update, over to valid",
                Operation::Update,
                Some(spec(5)),
                Some(spec(1000)),
                Verdict::Allow,
            ),
            (
                "update, valid",
                Operation::Update,
                Some(spec(5)),
                Some(spec(3)),
                Verdict::Allow,
            ),
            (
                "update without the old object",
                Operation::Update,
                Some(spec(1000)),
                None,
                deny(TOO_LARGE),
            ),
            (
                "delete",
                Operation::Delete,
                None,
                Some(spec(1000)),
                Verdict::Allow,
            ),
            (
                "create as the old size of an update would allow",
                Operation::Create,
                Some(spec(1000)),
                Some(spec(1000)),
                deny(TOO_LARGE),
            ),
        ];
        for (name, operation, new, old, want) in cases {
            assert_eq!(
                verdict(&operation, new.as_ref(), old.as_ref()),
                want,
                "{name}"
            );
        }
    }

    fn review(operation: &str, object: Value, old: Value) -> Vec<u8> {
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": GROUP, "version": "v1", "kind": "Widget"},
                "resource": {"group": GROUP, "version": "v1", "resource": "widgets"},
                "name": "w",
                "namespace": "default",
                "operation": operation,
                "userInfo": {"username": "admin"},
                "object": object,
                "oldObject": old,
                "dryRun": false,
            },
        })
        .to_string()
        .into_bytes()
    }

    fn widget(spec: Value) -> Value {
        json!({
            "apiVersion": API_VERSION,
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": spec,
        })
    }

    /// The answer is an AdmissionReview v1 with the request's uid, as the API server requires.
    #[test]
    fn answers_admission_review_v1() {
        let (reply, verdict, who) = answer(&review(
            "CREATE",
            widget(json!({"size": 1000})),
            Value::Null,
        ))
        .unwrap();
        assert_eq!(verdict, Verdict::Deny(TOO_LARGE.to_owned()));
        assert_eq!(who, "default/w");
        let json = serde_json::to_value(&reply).unwrap();
        assert_eq!(json["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(json["kind"], "AdmissionReview");
        assert_eq!(
            json["response"]["uid"],
            "705ab4f5-6393-11e8-b7cc-42010a800002"
        );
        assert_eq!(json["response"]["allowed"], false);
        assert_eq!(json["response"]["status"]["message"], TOO_LARGE);
        assert!(json.get("request").is_none(), "{json}");

        let (reply, verdict, _) =
            answer(&review("CREATE", widget(json!({"size": 3})), Value::Null)).unwrap();
        assert_eq!(verdict, Verdict::Allow);
        let json = serde_json::to_value(&reply).unwrap();
        assert_eq!(json["response"]["allowed"], true);
        assert_eq!(
            json["response"]["uid"],
            "705ab4f5-6393-11e8-b7cc-42010a800002"
        );
    }

    #[test]
    fn reads_every_shape_of_request() {
        let verdict_of = |body: Vec<u8>| answer(&body).map(|(_, v, _)| v).unwrap();
        // No spec at all: nothing to refuse.
        let bare = json!({"apiVersion": API_VERSION, "kind": "Widget", "metadata": {"name": "w"}});
        assert_eq!(
            verdict_of(review("CREATE", bare, Value::Null)),
            Verdict::Allow
        );
        // An update leaving an old widget's size as it was.
        assert_eq!(
            verdict_of(review(
                "UPDATE",
                widget(json!({"size": 1000, "color": "red"})),
                widget(json!({"size": 1000}))
            )),
            Verdict::Allow
        );
        // A deletion carries no object.
        assert_eq!(
            verdict_of(review("DELETE", Value::Null, widget(json!({"size": 1000})))),
            Verdict::Allow
        );
        // A spec that is not a widget's (the schema keeps these out) is refused, saying why.
        let Verdict::Deny(why) = verdict_of(review(
            "CREATE",
            widget(json!({"size": "big"})),
            Value::Null,
        )) else {
            panic!("a size that is no number is refused")
        };
        assert!(
            why.starts_with("the widget's spec cannot be read: "),
            "{why}"
        );
    }

    #[test]
    fn refuses_what_is_no_review() {
        assert!(matches!(answer(b"{"), Err(BadReview::Json(_))));
        assert!(matches!(
            answer(br#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}"#),
            Err(BadReview::NoRequest)
        ));
    }
}
