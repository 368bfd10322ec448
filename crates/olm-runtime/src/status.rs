//! Writing a status the API server takes, and reporting on the object what it refuses.
//!
//! 1. Every message the status carries is bounded first ([`olm_k8s::bound_status_messages`]:
//!    upstream's 32768 bytes and suffix, raw bytes escaped), whichever controller built it.
//! 2. The write is made (a merge patch with [`patch`], or the caller's own request with
//!    [`write`]).
//! 3. Should the API server refuse it as invalid or too large, the status is written once more
//!    with each long message shortened to its start and a note that the full message was
//!    refused, and why ([`olm_k8s::shorten_refused_status`]); the refusal is logged with the
//!    object's name.
//!
//! Guarantees: a refusal caused by a message never leaves the object with its old status and
//! the error only in the log; the shortened status is the same for the same refusal, so a
//! controller that decides the same status again writes nothing new (the API server finds
//! the patch changes nothing) and does not loop.
//!
//! Caveats: a refusal that is not about a message (a field the controller got wrong) is
//! returned as the error it is, after one request: shortening messages could not fix it.

use std::future::Future;

use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::core::Status;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tracing::warn;

/// Whether the API server refused a write for what it holds (422 Invalid, 413 or etcd's
/// "request is too large"), as opposed to a conflict, a permission or a connection problem.
pub fn refused(status: &Status) -> bool {
    status.code == 422 || status.code == 413 || status.message.contains("request is too large")
}

/// Writes `status` with `write`, bounded, falling back to the shortened status when the API
/// server refuses it (see the module's steps). `object` names the object in the log.
pub async fn write<T, F, Fut>(object: &str, mut status: Value, mut write: F) -> kube::Result<T>
where
    F: FnMut(Value) -> Fut,
    Fut: Future<Output = kube::Result<T>>,
{
    olm_k8s::bound_status_messages(&mut status);
    let why = match write(status.clone()).await {
        Err(kube::Error::Api(s)) if refused(&s) => s,
        other => return other,
    };
    let Some(short) = olm_k8s::shorten_refused_status(&status, &why.message) else {
        return Err(kube::Error::Api(why));
    };
    warn!(object, error = %why.message, "the API server refused the status; writing it with its long messages shortened");
    write(short).await
}

/// Merge-patches `status` into the status subresource of `name` through [`write`], with
/// `metadata` (say, a `resourceVersion` the write is conditional on) beside it.
pub async fn patch<K>(
    api: &Api<K>,
    name: &str,
    metadata: Option<&Value>,
    status: Value,
) -> kube::Result<K>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    write(name, status, |status| async move {
        let mut body = json!({ "status": status });
        if let Some(m) = metadata {
            body["metadata"] = m.clone();
        }
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
            .await
    })
    .await
}

/// Writes the typed status `new` of `name` when it differs from `old` (the status as last
/// read or written), through [`patch`]: the whole of `new`, bounded, with every top-level member
/// only `old` has set to `null` so that the merge patch removes it. `Ok(None)` when nothing
/// differs, so a controller that decides the same status again writes nothing.
pub async fn patch_change<K, S>(
    api: &Api<K>,
    name: &str,
    metadata: Option<&Value>,
    old: Option<&S>,
    new: &S,
) -> kube::Result<Option<K>>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize,
{
    let old = serde_json::to_value(old).map_err(kube::Error::SerdeError)?;
    let mut new = serde_json::to_value(new).map_err(kube::Error::SerdeError)?;
    olm_k8s::bound_status_messages(&mut new);
    let Some(body) = replacement(&old, new) else {
        return Ok(None);
    };
    patch(api, name, metadata, body).await.map(Some)
}

/// The merge patch that makes a status `new` where it was `old`: `new` with each top-level
/// member that only `old` has set to `null`; none when they are the same.
pub fn replacement(old: &Value, mut new: Value) -> Option<Value> {
    if *old == new {
        return None;
    }
    if let (Value::Object(old), Value::Object(map)) = (old, &mut new) {
        for key in old.keys() {
            if !map.contains_key(key) {
                map.insert(key.clone(), Value::Null);
            }
        }
    }
    Some(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replacement_removes_what_the_new_status_lacks() {
        let old = json!({"phase": "A", "message": "m", "conditions": [{"type": "X"}]});
        assert_eq!(replacement(&old, old.clone()), None, "nothing to write");
        assert_eq!(
            replacement(&old, json!({"phase": "B"})),
            Some(json!({"phase": "B", "message": null, "conditions": null}))
        );
        assert_eq!(
            replacement(&Value::Null, json!({"phase": "B"})),
            Some(json!({"phase": "B"})),
            "a first status"
        );
    }

    fn api_error(code: u16, message: &str) -> kube::Error {
        let mut s = Status::failure(message, "Invalid");
        s.code = code;
        kube::Error::Api(s.boxed())
    }

    #[test]
    fn refusals_are_invalid_or_too_large() {
        let status = |code: u16, message: &str| {
            let mut s = Status::failure(message, "");
            s.code = code;
            s
        };
        assert!(refused(&status(422, "x is invalid")));
        assert!(refused(&status(413, "too large")));
        assert!(refused(&status(500, "etcdserver: request is too large")));
        assert!(!refused(&status(409, "conflict")));
        assert!(!refused(&status(403, "forbidden")));
        assert!(!refused(&status(500, "internal")));
    }

    /// A refused write is retried once, shortened; what else fails is returned as it is, and
    /// what is written first is bounded.
    #[tokio::test]
    async fn a_refused_status_is_written_shortened_once() {
        let long = "x".repeat(40_000);
        let why = "status.conditions[0].message: Too long: may not be more than 4096 bytes";
        let mut seen = Vec::new();
        let got = write("o", json!({"message": long}), |s: Value| {
            seen.push(s);
            let first = seen.len() == 1;
            async move {
                if first {
                    Err(api_error(422, why))
                } else {
                    Ok(())
                }
            }
        })
        .await;
        assert!(got.is_ok());
        assert_eq!(seen.len(), 2);
        assert_eq!(
            seen[0]["message"].as_str().map(str::len),
            Some(olm_k8s::MAX_CONDITION_MESSAGE_LENGTH),
            "bounded before the first write"
        );
        let short = seen[1]["message"].as_str().unwrap_or_default();
        assert_eq!(short.len(), olm_k8s::REFUSED_MESSAGE_LIMIT);
        assert!(short.contains(why), "{short}");

        let mut calls = 0;
        let got: kube::Result<()> = write("o", json!({"message": "short"}), |_| {
            calls += 1;
            async { Err(api_error(422, "status.phase: Unsupported value")) }
        })
        .await;
        assert!(got.is_err());
        assert_eq!(calls, 1, "nothing to shorten: not written again");

        let mut calls = 0;
        let got: kube::Result<()> = write("o", json!({"message": long}), |_| {
            calls += 1;
            async { Err(api_error(409, "conflict")) }
        })
        .await;
        assert!(got.is_err());
        assert_eq!(calls, 1, "a conflict is not a refusal");
    }
}
