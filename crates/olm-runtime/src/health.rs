//! `/healthz` and `/readyz` of `olm run`: alive while the process answers; ready unless a part
//! that should be serving says why it cannot.
//!
//! A part reports through [`Readiness`]: [`Readiness::failing`] with a reason while it cannot
//! do its job, [`Readiness::passing`] once it can. `/readyz` answers `200 ok` while nothing
//! fails, and `500` naming every failing check and its reason otherwise (controller-runtime's
//! `[-]name failed: reason` lines), so `kubectl describe pod` and whoever polls the probe see why.
//! `/healthz` always answers `200 ok`: a part that cannot serve is not fixed by a restart of
//! everything else.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::any;

/// Checks that are failing, by name, with why.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<Mutex<BTreeMap<&'static str, String>>>);

impl Readiness {
    /// `check` fails, for `reason`, until [`Readiness::passing`].
    pub fn failing(&self, check: &'static str, reason: impl Into<String>) {
        self.lock().insert(check, reason.into());
    }

    /// `check` passes.
    pub fn passing(&self, check: &'static str) {
        self.lock().remove(check);
    }

    /// The `/readyz` answer now.
    pub fn answer(&self) -> (StatusCode, String) {
        readyz(&self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<&'static str, String>> {
        // A poisoned lock only means a task panicked while writing; the map is whole.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The `/readyz` answer for the `failing` checks: `200 ok` when there are none, else `500` with
/// one `[-]name failed: reason` line per check, in name order, and `readyz check failed`.
pub fn readyz(failing: &BTreeMap<&'static str, String>) -> (StatusCode, String) {
    if failing.is_empty() {
        return (StatusCode::OK, "ok".to_owned());
    }
    let mut body = String::new();
    for (check, reason) in failing {
        body.push_str(&format!("[-]{check} failed: {reason}\n"));
    }
    body.push_str("readyz check failed\n");
    (StatusCode::INTERNAL_SERVER_ERROR, body)
}

/// `/healthz` and `/readyz`.
pub fn router(readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", any(|| async { "ok" }))
        .route(
            "/readyz",
            any(move || {
                let answer = readiness.answer();
                async move { answer }
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_unless_a_check_fails_and_then_says_why() {
        let readiness = Readiness::default();
        assert_eq!(readiness.answer(), (StatusCode::OK, "ok".to_owned()));
        readiness.failing("packageserver", "cannot listen on 0.0.0.0:5443: in use");
        readiness.failing("another", "why");
        assert_eq!(
            readiness.answer(),
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "[-]another failed: why\n[-]packageserver failed: cannot listen on 0.0.0.0:5443: in use\nreadyz check failed\n".to_owned()
            )
        );
        readiness.passing("another");
        readiness.passing("packageserver");
        assert_eq!(readiness.answer().0, StatusCode::OK);
    }
}
