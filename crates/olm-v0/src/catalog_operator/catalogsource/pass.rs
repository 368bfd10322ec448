//! One pass of catalog-operator's CatalogSource sync (upstream's `syncCatalogSources`:
//! `validateSourceType`, `syncConfigMap`, `syncRegistryServer`, `syncConnection`) as two pure
//! steps around the shell's I/O: [`start`] reads the source and says how it is served and what
//! its status says before anything is done; [`conclude`] says what the status says once the
//! shell has done it.
//!
//! Flow:
//!
//! 1. The status starts as written (`{}` when there is none).
//! 2. A spec that cannot be served ([`super::validate`]): `SpecInvalidError` with upstream's
//!    message, no `connectionState`, nothing else ([`Route::Invalid`]). A valid spec clears an
//!    earlier `SpecInvalidError`.
//! 3. A registry poll whose interval does not parse: `InvalidIntervalError` with why (the
//!    default interval is used); a parsable one clears it.
//! 4. The route: `configmap`/`internal` sources are the ConfigMap step's
//!    ([`crate::catalog_operator::configmapsource::decide`] writes their whole status); a `grpc`
//!    source with an image and [`SERVE_IN_PROCESS_ANNOTATION`] `"true"` is served by olm; one with
//!    an image otherwise by a registry Pod behind a Service; one with only `spec.address` at that
//!    address.
//! 5. After the shell's I/O ([`conclude`]): the registry that could not be made ready gives
//!    `RegistryServerError` with why; one that is ready clears an earlier `RegistryServerError`
//!    (not one reporting a failed poll of a Pod-served source: that stays until a poll
//!    settles); `connectionState` follows what the connection watch reported of the address;
//!    `registryService` names the Service (its `createdAt` kept once written) or, for an
//!    address, the protocol; a due poll of an in-process catalog stamps
//!    `latestImageRegistryPoll`.
//!
//! Guarantees: both steps are functions of their arguments (the time is passed in), and a pass
//! over an unchanged cluster concludes the status it started from, so nothing is rewritten.
//!
//! Caveat: an in-process catalog that could not be served keeps the `connectionState` it had:
//! the shell does not dial an address it does not have.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use olm_v0_api::v1alpha1::{CatalogSource, CatalogSourceStatus, GrpcConnectionState, SourceType};

use super::{
    REGISTRY_SERVER_REASON, SPEC_INVALID_REASON, registry_address, registry_service_status,
};
use crate::catalog_operator::configmapsource::{Connection, address_registry_service};
use crate::catalog_operator::registrypoll::{
    INVALID_INTERVAL_REASON, Poll, UpdateStep, poll, reports_failed_poll,
};
/// The annotation (value `"true"`) that asks olm to serve a `grpc` source's image itself rather
/// than in a registry Pod: olm pulls the catalog image and serves it from its own process.
pub const SERVE_IN_PROCESS_ANNOTATION: &str = "olm.operatorframework.io/serve-in-process";

/// How a source is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Its spec cannot be served: the shell stops watching its connection and writes the status.
    Invalid,
    /// `configmap` or `internal`: the ConfigMap step decides.
    ConfigMap,
    /// Served by olm from `image`.
    InProcess {
        /// `spec.image`.
        image: String,
    },
    /// Served by whatever listens at `address` (`spec.address`).
    Address {
        /// `spec.address`.
        address: String,
    },
    /// Served by a registry Pod, reached through its Service at `address`.
    Pod {
        /// The Service's address ([`registry_address`]).
        address: String,
    },
}

/// What [`start`] decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    /// How the source is served.
    pub route: Route,
    /// Steps 1–3's status.
    pub status: CatalogSourceStatus,
    /// `spec.updateStrategy.registryPoll` of a source with an image, when it has one.
    pub poll: Option<Poll>,
}

/// Steps 1–4 of the flow.
pub fn start(source: &CatalogSource) -> Start {
    let mut status = source.status.clone().unwrap_or_default();
    if let Err(invalid) = super::validate(source) {
        status.grpc_connection_state = None;
        set_reason(&mut status, SPEC_INVALID_REASON, &invalid.to_string());
        return Start {
            route: Route::Invalid,
            status,
            poll: None,
        };
    }
    clear_reason(&mut status, SPEC_INVALID_REASON);
    let poll = poll(source);
    match poll.as_ref().and_then(|p| p.parsing_error.as_deref()) {
        Some(message) => set_reason(&mut status, INVALID_INTERVAL_REASON, message),
        None => clear_reason(&mut status, INVALID_INTERVAL_REASON),
    }
    let spec = &source.spec;
    let image = spec.image.as_deref().unwrap_or_default();
    // A valid spec is of type grpc, configmap or internal.
    let route = match spec.source_type {
        SourceType::Grpc if !image.is_empty() && in_process(source) => Route::InProcess {
            image: image.to_owned(),
        },
        SourceType::Grpc if !image.is_empty() => Route::Pod {
            address: registry_address(source),
        },
        SourceType::Grpc => Route::Address {
            address: spec.address.clone().unwrap_or_default(),
        },
        _ => Route::ConfigMap,
    };
    Start {
        route,
        status,
        poll,
    }
}

/// What the shell found serving a `grpc` source as its [`Route`] asked.
#[derive(Debug, Clone, Copy)]
pub struct Found<'a> {
    /// Whether the registry is ready to be dialled (olm serves the image, or the registry's
    /// ServiceAccount, Service, NetworkPolicy and Pod are applied), or why not.
    pub registry: Result<(), &'a str>,
    /// What the connection watch last reported of the source, if it watches it.
    pub connection: Option<&'a Connection>,
    /// Whether a poll of an in-process catalog was due this pass (it re-resolved the tag).
    pub poll_due: bool,
    /// The time of the pass.
    pub now: &'a Time,
}

/// Step 5 of the flow: the status to write.
pub fn conclude(source: &CatalogSource, start: &Start, found: &Found<'_>) -> CatalogSourceStatus {
    let mut status = start.status.clone();
    let created = |status: &CatalogSourceStatus| {
        status
            .registry_service_status
            .as_ref()
            .and_then(|r| r.created_at.clone())
            .unwrap_or_else(|| found.now.clone())
    };
    match &start.route {
        Route::Invalid | Route::ConfigMap => {}
        Route::InProcess { .. } => {
            if let Err(message) = found.registry {
                set_reason(&mut status, REGISTRY_SERVER_REASON, message);
                return status;
            }
            clear_reason(&mut status, REGISTRY_SERVER_REASON);
            connection_state(&mut status, found.connection);
            status.registry_service_status =
                Some(registry_service_status(source, created(&status)));
            if start.poll.is_some() && found.poll_due {
                status.latest_image_registry_poll = Some(found.now.clone());
            }
        }
        Route::Address { .. } => {
            connection_state(&mut status, found.connection);
            status.registry_service_status = Some(address_registry_service(
                status.registry_service_status.as_ref(),
                found.now,
            ));
        }
        Route::Pod { .. } => {
            connection_state(&mut status, found.connection);
            if let Err(message) = found.registry {
                set_reason(&mut status, REGISTRY_SERVER_REASON, message);
                return status;
            }
            let failed_poll = status.message.as_deref().is_some_and(reports_failed_poll);
            if !failed_poll {
                clear_reason(&mut status, REGISTRY_SERVER_REASON);
            }
            status.registry_service_status =
                Some(registry_service_status(source, created(&status)));
        }
    }
    status
}

/// What a poll step of a Pod-served source ([`UpdateStep`], once the shell has done it) makes
/// of the status: an update Pod started stamps `latestImageRegistryPoll` `now`; one that failed
/// gives `RegistryServerError` with why; one promoted or discarded settles the poll, so an
/// earlier poll's `RegistryServerError` goes.
pub fn polled(status: &mut CatalogSourceStatus, step: &UpdateStep, now: &Time) {
    match step {
        UpdateStep::Create => status.latest_image_registry_poll = Some(now.clone()),
        UpdateStep::Failed { message, .. } => set_reason(status, REGISTRY_SERVER_REASON, message),
        UpdateStep::Promote { .. } | UpdateStep::Discard { .. } => {
            clear_reason(status, REGISTRY_SERVER_REASON);
        }
        UpdateStep::Wait { .. } | UpdateStep::Idle => {}
    }
}

/// Whether the source asks to be served in process.
fn in_process(source: &CatalogSource) -> bool {
    source
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SERVE_IN_PROCESS_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// `connectionState` as the watch reported it; left as written while it has reported nothing.
fn connection_state(status: &mut CatalogSourceStatus, connection: Option<&Connection>) {
    if let Some(c) = connection {
        status.grpc_connection_state = Some(GrpcConnectionState {
            address: Some(c.address.clone()),
            last_observed_state: c.observed.clone(),
            last_connect_time: Some(c.since.clone()),
        });
    }
}

/// `reason` and `message` set.
pub(crate) fn set_reason(status: &mut CatalogSourceStatus, reason: &str, message: &str) {
    status.reason = Some(reason.to_owned());
    status.message = Some(message.to_owned());
}

/// Removes `reason` and `message` when the reason is `reason`.
fn clear_reason(status: &mut CatalogSourceStatus, reason: &str) {
    if status.reason.as_deref() == Some(reason) {
        status.reason = None;
        status.message = None;
    }
}

#[cfg(test)]
mod tests;
