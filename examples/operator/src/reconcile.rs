//! Reconciling widgets: a widget's status says whether it keeps the rule
//! ([`crate::widget::check`]) and which generation of it was looked at. [`decide`] is the whole
//! decision; [`run`] is the thin shell around it (a kube-runtime controller that watches every
//! widget and patches status).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Controller, Error as ControllerError};
use kube::runtime::{WatchStreamExt as _, reflector, watcher};
use kube::{Api, Client, ResourceExt as _};
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use crate::probes::Readiness;
use crate::widget::{Widget, WidgetStatus, check};

/// How long a widget whose status could not be written waits before the next try.
const RETRY: Duration = Duration::from_secs(5);

/// What to do about one widget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Its status already says what it should: write nothing.
    UpToDate,
    /// Write this status.
    Write(WidgetStatus),
}

/// The status `widget` should have, and whether it must be written.
///
/// Expected flow:
///
/// 1. A widget is created; it has no status. The decision is to write `ready` (whether the
///    widget keeps the rule), `observedGeneration` (its `metadata.generation`) and, when it
///    does not keep the rule, `message` saying why.
/// 2. The shell patches the status; the watch brings the widget back with it, and the decision
///    is [`Decision::UpToDate`].
/// 3. Its spec changes: the API server raises the generation, and the decision is to write
///    again (with the new generation, and the readiness of the new spec).
///
/// Guarantees: a status is written only when it differs from the stored one; the decision
/// depends on nothing but the widget.
///
/// Assumptions: the admission webhook keeps widgets over the limit out, but not ones that were
/// stored before it ran (under 0.1.0, which has none): those are reported not ready, with the
/// webhook's message.
///
/// Caveats: 0.1.0's CRD has only `status.ready` and the API server prunes the other two fields.
/// Under it every reconcile writes again, a patch that changes nothing stored: the API server
/// keeps no new version and sends no event, so it does not loop; only a change to the widget
/// brings another reconcile.
pub fn decide(widget: &Widget) -> Decision {
    let verdict = check(&widget.spec);
    let want = WidgetStatus {
        ready: verdict.is_ok(),
        observed_generation: widget.metadata.generation,
        message: verdict.err().map(|why| why.to_string()),
    };
    match widget.status.as_ref() == Some(&want) {
        true => Decision::UpToDate,
        false => Decision::Write(want),
    }
}

/// The JSON merge patch that makes the stored status `status`: every field named, absent ones
/// as `null`, so that a message that no longer applies is removed.
pub fn status_patch(status: &WidgetStatus) -> Value {
    json!({
        "status": {
            "ready": status.ready,
            "observedGeneration": status.observed_generation,
            "message": status.message,
        }
    })
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A widget without a namespace: widgets are namespaced, so the watch never brings one.
    #[error("the widget has no namespace")]
    NoNamespace,
    /// The API server refused the status patch or could not be reached.
    #[error("writing its status: {0}")]
    WriteStatus(#[source] kube::Error),
}

/// What every reconcile shares.
pub struct Context {
    client: Client,
}

/// Decides and, when told to, patches the status.
async fn reconcile(widget: Arc<Widget>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = widget.name_any();
    let namespace = widget.namespace().ok_or(Error::NoNamespace)?;
    match decide(&widget) {
        Decision::UpToDate => debug!(%namespace, %name, "status up to date"),
        Decision::Write(status) => {
            let api: Api<Widget> = Api::namespaced(ctx.client.clone(), &namespace);
            api.patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(status_patch(&status)),
            )
            .await
            .map_err(Error::WriteStatus)?;
            let generation = status.observed_generation.unwrap_or_default();
            match &status.message {
                None => {
                    info!(%namespace, %name, ready = status.ready, generation, "status written")
                }
                Some(why) => {
                    info!(%namespace, %name, ready = status.ready, generation, %why, "status written")
                }
            }
        }
    }
    Ok(Action::await_change())
}

/// Logs the failure with the widget's name and tries again after [`RETRY`].
fn error_policy(widget: Arc<Widget>, error: &Error, _ctx: Arc<Context>) -> Action {
    warn!(
        namespace = ?widget.namespace(),
        name = %widget.name_any(),
        %error,
        "reconcile failed; retrying in {RETRY:?}"
    );
    Action::requeue(RETRY)
}

/// Watches every widget of the cluster and reconciles each, until SIGTERM or SIGINT. Marks
/// `ready` once the first list of widgets is in the controller's store.
///
/// The watch is built here rather than by `Controller::new` so that its events can be seen:
/// waiting on the store's readiness from a second task is not an option, as the store wakes
/// only one waiter (the controller's own).
///
/// `store` and `writer` are one [`reflector::store`]: the watch fills it, and whoever else holds
/// the store ([`crate::api`]) reads the same widgets.
pub async fn run(
    client: Client,
    ready: Arc<Readiness>,
    store: reflector::Store<Widget>,
    writer: reflector::store::Writer<Widget>,
) {
    let widgets: Api<Widget> = Api::all(client.clone());
    let events = reflector(
        writer,
        watcher(widgets, watcher::Config::default()).default_backoff(),
    )
    .inspect(move |event| {
        // Every later list (after a watch expired) ends the same way; only the first is news.
        if matches!(event, Ok(watcher::Event::InitDone)) && ready.synced() {
            info!("watching widgets: the first list is in");
        }
    })
    .applied_objects();
    Controller::for_stream(events, store)
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(Context { client }))
        .for_each(|result| async move {
            match result {
                Ok((widget, _)) => {
                    debug!(namespace = ?widget.namespace, name = %widget.name, "reconciled")
                }
                // The error policy logged it, with the widget's name.
                Err(ControllerError::ReconcilerFailed(..)) => {}
                Err(ControllerError::ObjectNotFound(widget)) => {
                    debug!(%widget, "deleted before its reconcile")
                }
                Err(e) => warn!(error = %e, "watching widgets failed; retrying"),
            }
        })
        .await;
    info!("stopped reconciling widgets");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widget::WidgetSpec;

    fn widget(size: Option<i64>, generation: i64, status: Option<WidgetStatus>) -> Widget {
        let mut w = Widget {
            spec: WidgetSpec { size, color: None },
            status,
            ..Widget::default()
        };
        w.metadata.generation = Some(generation);
        w
    }

    fn status(ready: bool, generation: Option<i64>, message: Option<&str>) -> WidgetStatus {
        WidgetStatus {
            ready,
            observed_generation: generation,
            message: message.map(str::to_owned),
        }
    }

    const TOO_LARGE: &str = "spec.size 1000 is more than 100, the most a widget can have";

    #[test]
    fn decisions() {
        let cases = [
            (
                "new, valid",
                widget(Some(3), 1, None),
                Decision::Write(status(true, Some(1), None)),
            ),
            (
                "new, no size",
                widget(None, 1, None),
                Decision::Write(status(true, Some(1), None)),
            ),
            (
                "written",
                widget(Some(3), 1, Some(status(true, Some(1), None))),
                Decision::UpToDate,
            ),
            (
                "spec changed",
                widget(Some(4), 2, Some(status(true, Some(1), None))),
                Decision::Write(status(true, Some(2), None)),
            ),
            (
                "new, over the limit (stored before the webhook ran)",
                widget(Some(1000), 1, None),
                Decision::Write(status(false, Some(1), Some(TOO_LARGE))),
            ),
            (
                "over the limit, written",
                widget(Some(1000), 1, Some(status(false, Some(1), Some(TOO_LARGE)))),
                Decision::UpToDate,
            ),
            (
                "fixed",
                widget(Some(10), 2, Some(status(false, Some(1), Some(TOO_LARGE)))),
                Decision::Write(status(true, Some(2), None)),
            ),
            (
                "someone else wrote ready",
                widget(Some(1000), 1, Some(status(true, Some(1), None))),
                Decision::Write(status(false, Some(1), Some(TOO_LARGE))),
            ),
            (
                "0.1.0's CRD pruned what it does not know",
                widget(Some(3), 1, Some(status(true, None, None))),
                Decision::Write(status(true, Some(1), None)),
            ),
        ];
        for (name, widget, want) in cases {
            assert_eq!(decide(&widget), want, "{name}");
        }
    }

    /// Writing what was decided leaves nothing more to write.
    #[test]
    fn a_written_status_is_up_to_date() {
        for size in [None, Some(0), Some(100), Some(101)] {
            let mut w = widget(size, 7, None);
            let Decision::Write(status) = decide(&w) else {
                panic!("a new widget gets a status")
            };
            w.status = Some(status);
            assert_eq!(decide(&w), Decision::UpToDate, "size {size:?}");
        }
    }

    #[test]
    fn the_patch_names_every_field() {
        assert_eq!(
            status_patch(&status(true, Some(2), None)),
            json!({"status": {"ready": true, "observedGeneration": 2, "message": null}})
        );
        assert_eq!(
            status_patch(&status(false, Some(1), Some(TOO_LARGE))),
            json!({"status": {"ready": false, "observedGeneration": 1, "message": TOO_LARGE}})
        );
    }
}
