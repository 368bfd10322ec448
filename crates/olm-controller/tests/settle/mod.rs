//! The guard both integration suites (OLM v0's `v0_operators`, OLM v1's `e2e_*`) run after each
//! scenario: once it has settled, the objects it touched see no write for [`QUIET`]. A
//! controller that rewrites a status it already wrote, records an Event per pass, or bounces
//! an object between two states never gives ten quiet seconds, and fails the scenario with the
//! objects written and how often.
//!
//! "Settled" is found, not assumed: a scenario may end while a Deployment still rolls out or a
//! last status lands, so the guard watches for windows of [`QUIET`] and passes at the first
//! window without a write; only when [`SETTLE_WITHIN`] passes without one does it fail. A write
//! is any watch event (added, modified, deleted) of a watched object, seen from the
//! resourceVersion of a list made when the window opens.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, WatchEvent, WatchParams};
use kube::core::GroupVersionKind;
use kube::{Client, ResourceExt as _};

/// How long the touched objects must see no write.
pub const QUIET: Duration = Duration::from_secs(10);

/// How long a scenario's trailing work may take before a quiet window must have come.
pub const SETTLE_WITHIN: Duration = Duration::from_secs(60);

/// Which objects of a kind belong to a scenario: (namespace, name) → whether they count.
pub type Belongs = Box<dyn Fn(Option<&str>, &str) -> bool + Send + Sync>;

/// A kind to watch, and which of its objects belong to the scenario.
pub struct Watched {
    /// The kind.
    pub resource: ApiResource,
    /// Which of its objects count.
    pub belongs: Belongs,
}

/// `group/version` `kind` with its plural.
pub fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// OLM v0's namespaced kinds a scenario's operators live in.
pub fn olm_v0_kinds() -> Vec<ApiResource> {
    let v0 = "operators.coreos.com";
    vec![
        resource(
            v0,
            "v1alpha1",
            "ClusterServiceVersion",
            "clusterserviceversions",
        ),
        resource(v0, "v1alpha1", "Subscription", "subscriptions"),
        resource(v0, "v1alpha1", "InstallPlan", "installplans"),
        resource(v0, "v1alpha1", "CatalogSource", "catalogsources"),
        resource(v0, "v1", "OperatorGroup", "operatorgroups"),
        resource(v0, "v2", "OperatorCondition", "operatorconditions"),
    ]
}

/// What an install puts in a namespace, Events included.
pub fn workload_kinds() -> Vec<ApiResource> {
    let rbac = "rbac.authorization.k8s.io";
    vec![
        resource("apps", "v1", "Deployment", "deployments"),
        resource("", "v1", "Secret", "secrets"),
        resource("", "v1", "ConfigMap", "configmaps"),
        resource("", "v1", "Service", "services"),
        resource("", "v1", "ServiceAccount", "serviceaccounts"),
        resource(rbac, "v1", "Role", "roles"),
        resource(rbac, "v1", "RoleBinding", "rolebindings"),
        resource("", "v1", "Event", "events"),
    ]
}

/// The kind's objects in the namespaces `pick` accepts.
pub fn namespaced(
    resource: ApiResource,
    pick: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> Watched {
    Watched {
        resource,
        belongs: Box::new(move |ns, _| ns.is_some_and(&pick)),
    }
}

/// The kind's cluster-scoped objects whose names `pick` accepts.
pub fn cluster_named(
    resource: ApiResource,
    pick: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> Watched {
    Watched {
        resource,
        belongs: Box::new(move |ns, name| ns.is_none() && pick(name)),
    }
}

/// Writes seen in one window: `Kind namespace/name` → the events, in order.
pub type Writes = BTreeMap<String, Vec<String>>;

/// The writes to the watched objects during `window`, watched from now.
pub async fn writes_during(
    client: &Client,
    watched: &[Watched],
    window: Duration,
) -> Result<Writes> {
    let secs = u32::try_from(window.as_secs().max(1)).unwrap_or(u32::MAX);
    let per_kind = watched.iter().map(|w| async move {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &w.resource);
        let list = api
            .list_metadata(&ListParams::default().limit(1))
            .await
            .with_context(|| format!("listing {}", w.resource.plural))?;
        let version = list.metadata.resource_version.unwrap_or_default();
        let deadline = Instant::now() + window;
        let mut seen: Vec<(String, String)> = Vec::new();
        let stream = api
            .watch_metadata(&WatchParams::default().timeout(secs), &version)
            .await
            .with_context(|| format!("watching {}", w.resource.plural))?;
        let mut stream = stream.boxed();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = match tokio::time::timeout(left, stream.try_next()).await {
                Err(_) | Ok(Ok(None)) => break,
                Ok(r) => r.with_context(|| format!("watching {}", w.resource.plural))?,
            };
            let (what, o) = match event {
                Some(WatchEvent::Added(o)) => ("added", o),
                Some(WatchEvent::Modified(o)) => ("modified", o),
                Some(WatchEvent::Deleted(o)) => ("deleted", o),
                Some(WatchEvent::Bookmark(_)) => continue,
                Some(WatchEvent::Error(e)) => bail!("watching {}: {e}", w.resource.plural),
                None => break,
            };
            let ns = o.namespace();
            let name = o.name_any();
            if (w.belongs)(ns.as_deref(), &name) {
                let key = match ns {
                    Some(ns) => format!("{} {ns}/{name}", w.resource.kind),
                    None => format!("{} {name}", w.resource.kind),
                };
                seen.push((
                    key,
                    format!("{what} at {}", o.resource_version().unwrap_or_default()),
                ));
            }
        }
        Ok::<_, anyhow::Error>(seen)
    });
    let mut writes = Writes::new();
    for seen in futures::future::try_join_all(per_kind).await? {
        for (key, event) in seen {
            writes.entry(key).or_default().push(event);
        }
    }
    Ok(writes)
}

/// Passes at the first window of [`QUIET`] in which no watched object is written; fails when
/// none came within [`SETTLE_WITHIN`], naming what was written in the last window and how
/// often. Returns the writes seen before the quiet window, for reports.
pub async fn assert_settles(client: &Client, watched: &[Watched]) -> Result<Writes> {
    let started = Instant::now();
    let mut before = Writes::new();
    loop {
        let writes = writes_during(client, watched, QUIET).await?;
        if writes.is_empty() {
            return Ok(before);
        }
        if started.elapsed() + QUIET > SETTLE_WITHIN {
            let lines: Vec<String> = writes
                .iter()
                .map(|(k, v)| {
                    // The first few say what kind of write it is; the count says how hot.
                    let shown: Vec<&str> = v.iter().take(5).map(String::as_str).collect();
                    let more = if v.len() > shown.len() { ", …" } else { "" };
                    format!("  {k}: {} writes ({}{more})", v.len(), shown.join(", "))
                })
                .collect();
            bail!(
                "not settled: no {QUIET:?} without a write within {SETTLE_WITHIN:?}; in the last {QUIET:?}:\n{}",
                lines.join("\n")
            );
        }
        for (k, v) in writes {
            before.entry(k).or_default().extend(v);
        }
    }
}
