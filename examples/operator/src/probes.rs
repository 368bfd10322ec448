//! The kubelet's probes, over plain HTTP: `/healthz` answers while the process runs, `/readyz`
//! once the operator does its work — the widget watch has its first list and, when the webhook
//! is on, the webhook server listens. Until then the pod is not Ready, so the webhook's Service
//! sends the API server nowhere, and an upgrade does not retire the old pod.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

/// What readiness waits for.
#[derive(Debug)]
pub struct Readiness {
    synced: AtomicBool,
    /// `None` when the webhook is off.
    webhook: Option<AtomicBool>,
}

impl Readiness {
    /// Nothing ready yet; `webhook` says whether a webhook server is to listen.
    pub fn new(webhook: bool) -> Readiness {
        Readiness {
            synced: AtomicBool::new(false),
            webhook: webhook.then(|| AtomicBool::new(false)),
        }
    }

    /// The widget watch has its list; true the first time.
    pub fn synced(&self) -> bool {
        !self.synced.swap(true, Ordering::AcqRel)
    }

    /// The webhook server listens.
    pub fn listening(&self) {
        if let Some(w) = &self.webhook {
            w.store(true, Ordering::Release);
        }
    }

    /// `Ok` when ready, else what is still missing.
    pub fn check(&self) -> Result<(), &'static str> {
        let synced = self.synced.load(Ordering::Acquire);
        let listening = self
            .webhook
            .as_ref()
            .is_none_or(|w| w.load(Ordering::Acquire));
        match (synced, listening) {
            (true, true) => Ok(()),
            (false, true) => Err("the widget watch has not listed widgets yet"),
            (true, false) => Err("the webhook server does not listen yet"),
            (false, false) => Err(
                "the widget watch has not listed widgets yet and the webhook \
                 server does not listen yet",
            ),
        }
    }
}

/// `/healthz` and `/readyz`.
pub fn router(ready: Arc<Readiness>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(ready)
}

async fn readyz(State(ready): State<Arc<Readiness>>) -> (StatusCode, String) {
    match ready.check() {
        Ok(()) => (StatusCode::OK, "ok\n".to_owned()),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_once_synced_and_listening() {
        let with_webhook = Readiness::new(true);
        assert!(with_webhook.check().unwrap_err().contains("watch"));
        with_webhook.listening();
        assert_eq!(
            with_webhook.check(),
            Err("the widget watch has not listed widgets yet")
        );
        assert!(with_webhook.synced());
        assert_eq!(with_webhook.check(), Ok(()));
        assert!(!with_webhook.synced(), "only the first list is news");

        let synced_first = Readiness::new(true);
        assert!(synced_first.synced());
        assert_eq!(
            synced_first.check(),
            Err("the webhook server does not listen yet")
        );

        let without = Readiness::new(false);
        assert!(without.check().is_err());
        assert!(without.synced());
        assert_eq!(without.check(), Ok(()));
    }
}
