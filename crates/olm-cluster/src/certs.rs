//! The built-in webhook certificate provider on a cluster: for every installed webhook Service
//! that names a serving Secret, keep a valid CA and serving certificate in that Secret, put the
//! CA into the webhook configurations and conversion CRDs that trust it, and roll the Deployment
//! that mounts it whenever the CA changes.
//!
//! Decisions (keep, issue, renew; what the Secret and patches hold) are
//! [`olm_security::certs`]'s; this module watches, generates keys (randomness lives here, as
//! does the clock) and applies.
//!
//! Every write is a server-side apply under [`FIELD_MANAGER`], naming only the fields this
//! provider owns (`caBundle`, one pod-template annotation, the Secret), so the revision's apply,
//! which never sets them, and this provider never take fields from each other.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Resource, ResourceExt};
use olm_k8s::retry::Backoff;
use olm_runtime::harness::Harness;
use olm_runtime::watch::RecoveringExt as _;
use olm_security::certs::{
    self as decide, Decision, Held, IssuePlan, Issued, Owner, Policy, Subject,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::info;

use crate::context::Shared;
use olm_runtime::metrics::Outcome;

/// Field owner of everything the certificate provider writes.
pub const FIELD_MANAGER: &str = "olm.operatorframework.io/certificate-provider";

/// Name of this controller in metrics.
pub const CONTROLLER: &str = "certificate";

/// How long a failed reconcile waits before it is tried again: always the same, a certificate
/// that cannot be written now is retried at an even pace.
const RETRY: Backoff = Backoff {
    base: Duration::from_secs(5),
    cap: Duration::from_secs(5),
};

/// Where the provider reads the time from; tests hand in their own.
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// Settings of [`run_with`].
#[derive(Clone)]
pub struct Options {
    /// Validity and renewal margin ([`Policy::default`]: 730 days, 24 hours).
    pub policy: Policy,
    /// The clock ([`Timestamp::now`]).
    pub clock: Clock,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            policy: Policy::default(),
            clock: Arc::new(Timestamp::now),
        }
    }
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused a request.
    #[error("{0}")]
    Kube(#[from] kube::Error),
    /// Key or certificate generation failed.
    #[error("generating the serving certificate: {0}")]
    Generate(#[from] IssueError),
}

/// Why [`issue`] failed.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// rcgen refused the parameters or could not sign.
    #[error("{0}")]
    Rcgen(#[from] rcgen::Error),
    /// A validity bound cannot be written in a certificate.
    #[error("validity bound {0} cannot be written in a certificate")]
    Time(Timestamp),
}

/// Runs the provider with the default policy and the system clock until `shutdown` resolves.
pub async fn run(shared: Arc<Shared>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    run_with(shared, Options::default(), shutdown).await;
}

struct Ctx {
    shared: Arc<Shared>,
    options: Options,
    harness: Harness,
}

/// Runs the provider with `options` until `shutdown` resolves.
///
/// One controller keyed by webhook Service (only installed objects: those carrying
/// [`olm_k8s::OWNER_KIND_LABEL`]). A Service is reconciled when it changes, when the Secret it
/// owns changes or goes, when a Deployment mounting its Secret or an object asking for its CA
/// changes, and at the time its certificate is to be renewed.
pub async fn run_with(
    shared: Arc<Shared>,
    options: Options,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let client = shared.client.clone();
    let installed = watcher::Config::default().labels(olm_k8s::OWNER_KIND_LABEL);
    let (store, writer) = reflector::store();
    let services = reflector::reflector(
        writer,
        watcher(Api::<Service>::all(client.clone()), installed.clone()),
    )
    .recovering("services (serving certificates)")
    .applied_objects();
    let (s1, s2, s3, s4) = (store.clone(), store.clone(), store.clone(), store.clone());
    let controller = Controller::for_stream(services, store);
    shared.metrics.register(CONTROLLER, 1);
    let harness = Harness::new(CONTROLLER, Some(shared.metrics.clone()), RETRY);
    let ctx = Arc::new(Ctx {
        shared,
        options,
        harness,
    });
    let controller = controller
        .owns_stream(
            watcher(
                Api::<Secret>::all(client.clone()),
                watcher::Config::default().labels(olm_k8s::SERVING_CERT_FOR_LABEL),
            )
            .recovering("secrets (serving certificates)")
            .touched_objects(),
        )
        .watches_stream(
            watcher(Api::<Deployment>::all(client.clone()), installed.clone())
                .recovering("deployments (serving certificates)")
                .touched_objects(),
            move |d| services_mounted_by(&s1, &d),
        )
        .watches_stream(
            watcher(
                Api::<ValidatingWebhookConfiguration>::all(client.clone()),
                installed.clone(),
            )
            .recovering("validatingwebhookconfigurations (serving certificates)")
            .touched_objects(),
            move |o| services_trusted_by(&s2, &o),
        )
        .watches_stream(
            watcher(
                Api::<MutatingWebhookConfiguration>::all(client.clone()),
                installed.clone(),
            )
            .recovering("mutatingwebhookconfigurations (serving certificates)")
            .touched_objects(),
            move |o| services_trusted_by(&s3, &o),
        )
        .watches_stream(
            watcher(Api::<CustomResourceDefinition>::all(client), installed)
                .recovering("customresourcedefinitions (serving certificates)")
                .touched_objects(),
            move |o| services_trusted_by(&s4, &o),
        );
    olm_runtime::report::run(
        "certificate provider",
        controller,
        reconcile,
        error_policy,
        ctx,
        shutdown,
    )
    .await;
}

/// A cached object as the pure rules read it; serializing a typed object cannot fail (every
/// map key is a string), which `json!` relies on.
fn to_value<T: Serialize>(obj: &T) -> Value {
    serde_json::json!(obj)
}

/// Services (from the cache) asking for a Secret that `deployment` mounts.
fn services_mounted_by(store: &Store<Service>, deployment: &Deployment) -> Vec<ObjectRef<Service>> {
    let ns = deployment.namespace();
    let d = to_value(deployment);
    store
        .state()
        .iter()
        .filter(|s| s.namespace() == ns)
        .filter(|s| {
            decide::requested_secret(&to_value(s.as_ref()))
                .is_some_and(|secret| decide::mounts_secret(&d, secret))
        })
        .map(|s| ObjectRef::from_obj(s.as_ref()))
        .collect()
}

/// Services (from the cache) whose Secret `obj` asks its CA from.
fn services_trusted_by<K: Serialize>(store: &Store<Service>, obj: &K) -> Vec<ObjectRef<Service>> {
    let v = to_value(obj);
    let Some((ns, secret)) = decide::inject_source(&v) else {
        return Vec::new();
    };
    store
        .state()
        .iter()
        .filter(|s| s.namespace().as_deref() == Some(ns))
        .filter(|s| decide::requested_secret(&to_value(s.as_ref())) == Some(secret))
        .map(|s| ObjectRef::from_obj(s.as_ref()))
        .collect()
}

fn key(service: &Service) -> String {
    format!(
        "{}/{}",
        service.namespace().unwrap_or_default(),
        service.name_any()
    )
}

fn error_policy(service: Arc<Service>, err: &Error, ctx: Arc<Ctx>) -> Action {
    ctx.harness
        .retry_object("keeping the serving certificate", &*service, err)
}

async fn reconcile(service: Arc<Service>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let work = reconcile_service(&service, &ctx);
    ctx.harness
        .reconcile(&key(&service), work, |_| Outcome::RequeueAfter)
        .await
}

/// One Service.
///
/// 1. No [`olm_k8s::SERVING_CERT_SECRET_ANNOTATION`] (or no namespace): nothing to do.
/// 2. Read the Secret and hand what it holds and the time to [`decide::decide`].
/// 3. `Issue`: generate a CA and serving certificate per the plan ([`issue`]) and apply the whole
///    Secret ([`decide::secret_object`]), owned by the Service so it goes with it.
/// 4. With the CA now held: set the CA hash on the pod template of every installed Deployment in
///    the namespace that mounts the Secret ([`decide::rollout_patch`]), and `caBundle` on every
///    installed webhook configuration and CRD that asks for this Secret's CA
///    ([`decide::ca_bundle_patch`]).
/// 5. Come back when the certificate enters its renewal margin.
///
/// Guarantees: nothing is written when everything already holds what it should. Caveats: a
/// Secret of the same name that this provider did not issue is taken over at the first issue.
/// Errors: any API failure or generation failure; the whole step is retried.
async fn reconcile_service(service: &Service, ctx: &Ctx) -> Result<Action, Error> {
    let sv = to_value(service);
    let (Some(secret_name), Some(ns)) = (decide::requested_secret(&sv), service.namespace()) else {
        return Ok(Action::await_change());
    };
    let client = &ctx.shared.client;
    let subject = Subject {
        service: service.name_any(),
        namespace: ns.clone(),
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let existing = secrets.get_opt(secret_name).await?;
    let held = Held::from_data(existing.as_ref().and_then(|s| s.data.as_ref()));
    let now = (ctx.options.clock)();
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let (ca_pem, renew_at) = match decide::decide(&subject, &held, now, &ctx.options.policy) {
        Decision::Keep { renew_at, .. } => {
            // A Secret kept from elsewhere (OLM v0's, for an operator moved to OLM v1) becomes
            // the Service's, so that it outlives its former owner; its data is not touched.
            let uid = service.uid().unwrap_or_default();
            let owned = existing
                .as_ref()
                .is_some_and(|s| s.owner_references().iter().any(|r| r.uid == uid));
            if !owned {
                let adopt = decide::secret_adoption(
                    &subject,
                    secret_name,
                    &Owner {
                        name: subject.service.clone(),
                        uid,
                    },
                );
                secrets
                    .patch(secret_name, &apply, &Patch::Apply(&adopt))
                    .await?;
            }
            (held.ca_crt.unwrap_or_default().to_vec(), renew_at)
        }
        Decision::Issue { reason, plan } => {
            info!(service = %subject.service, namespace = %ns, secret = %secret_name, %reason, "issuing serving certificate");
            let issued = issue(&plan)?;
            let owner = Owner {
                name: subject.service.clone(),
                uid: service.uid().unwrap_or_default(),
            };
            let obj = decide::secret_object(&subject, secret_name, &owner, &issued);
            secrets
                .patch(secret_name, &apply, &Patch::Apply(&obj))
                .await?;
            let renew_at = plan
                .not_after
                .saturating_sub(ctx.options.policy.renew_before)
                .unwrap_or(plan.not_after);
            (issued.ca_pem.into_bytes(), renew_at)
        }
    };
    let hash = decide::ca_hash(&ca_pem);
    let installed = ListParams::default().labels(olm_k8s::OWNER_KIND_LABEL);

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    for d in deployments.list(&installed).await? {
        let dv = to_value(&d);
        if !decide::mounts_secret(&dv, secret_name) {
            continue;
        }
        if let Some(patch) = decide::rollout_patch(&dv, &hash) {
            info!(deployment = %d.name_any(), namespace = %ns, "rolling out for a new serving certificate");
            deployments
                .patch(&d.name_any(), &apply, &Patch::Apply(&patch))
                .await?;
        }
    }
    let source = (ns.as_str(), secret_name);
    inject::<ValidatingWebhookConfiguration>(client, &installed, source, &ca_pem, &apply).await?;
    inject::<MutatingWebhookConfiguration>(client, &installed, source, &ca_pem, &apply).await?;
    inject::<CustomResourceDefinition>(client, &installed, source, &ca_pem, &apply).await?;

    let wait = (renew_at.duration_since((ctx.options.clock)())).max(SignedDuration::from_secs(1));
    Ok(Action::requeue(
        Duration::try_from(wait).unwrap_or(Duration::from_secs(1)),
    ))
}

/// Sets `caBundle` on every installed cluster-scoped `K` that asks for the CA of `source`.
async fn inject<K>(
    client: &kube::Client,
    installed: &ListParams,
    source: (&str, &str),
    ca_pem: &[u8],
    apply: &PatchParams,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    for obj in api.list(installed).await? {
        let v = to_value(&obj);
        if decide::inject_source(&v) != Some(source) {
            continue;
        }
        if let Some(patch) = decide::ca_bundle_patch(&v, ca_pem) {
            info!(kind = %K::kind(&()), name = %obj.name_any(), "injecting CA bundle");
            api.patch(&obj.name_any(), apply, &Patch::Apply(&patch))
                .await?;
        }
    }
    Ok(())
}

fn offset_time(t: Timestamp) -> Result<time::OffsetDateTime, IssueError> {
    time::OffsetDateTime::from_unix_timestamp(t.as_second()).map_err(|_| IssueError::Time(t))
}

/// Generates what `plan` asks for: a new ECDSA P-256 CA (self-signed, allowed to sign
/// certificates only, no longer chains) and a serving certificate it signs for the plan's DNS
/// names, usable for server authentication. The CA's private key is dropped here.
pub fn issue(plan: &IssuePlan) -> Result<Issued, IssueError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let not_before = offset_time(plan.not_before)?;
    let not_after = offset_time(plan.not_after)?;

    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::default();
    ca.distinguished_name
        .push(DnType::CommonName, plan.ca_common_name.clone());
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca.not_before = not_before;
    ca.not_after = not_after;
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);

    let key = KeyPair::generate()?;
    let mut serving = CertificateParams::new(plan.dns_names.clone())?;
    serving
        .distinguished_name
        .push(DnType::CommonName, plan.common_name.clone());
    serving.is_ca = IsCa::ExplicitNoCa;
    serving.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving.use_authority_key_identifier_extension = true;
    serving.not_before = not_before;
    serving.not_after = not_after;
    let cert = serving.signed_by(&key, &issuer)?;
    Ok(Issued {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// The provider `--cert-provider auto` picks: cert-manager when the API server serves its
/// `cert-manager.io/v1` Certificates, else the built-in one. A discovery failure counts as "not
/// served": the built-in provider works on any cluster.
pub async fn detect(client: &kube::Client) -> olm_bundle::CertProvider {
    match client.list_api_group_resources("cert-manager.io/v1").await {
        Ok(list) if list.resources.iter().any(|r| r.name == "certificates") => {
            olm_bundle::CertProvider::CertManager
        }
        _ => olm_bundle::CertProvider::Builtin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`issue`] generates is what [`decide::decide`] keeps: a CA-signed pair for every
    /// Service name, valid over the plan's window.
    #[test]
    fn issued_pairs_are_kept() {
        let subject = Subject {
            service: "svc".into(),
            namespace: "ns".into(),
        };
        let policy = Policy::default();
        let now = Timestamp::from_second(1_800_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        let plan = decide::plan(&subject, now, &policy);
        let issued = issue(&plan).unwrap_or_else(|e| panic!("{e}"));
        let held = Held {
            tls_crt: Some(issued.cert_pem.as_bytes()),
            tls_key: Some(issued.key_pem.as_bytes()),
            ca_crt: Some(issued.ca_pem.as_bytes()),
        };
        match decide::decide(&subject, &held, now, &policy) {
            Decision::Keep { ca_hash, .. } => {
                assert_eq!(ca_hash, decide::ca_hash(issued.ca_pem.as_bytes()));
            }
            other => panic!("not kept: {other:?}"),
        }
        let later = now
            .checked_add(SignedDuration::from_hours(730 * 24 - 1))
            .unwrap_or(now);
        assert!(matches!(
            decide::decide(&subject, &held, later, &policy),
            Decision::Issue { .. }
        ));
        let other = issue(&plan).unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(other.ca_pem, issued.ca_pem, "every issue makes a new CA");
    }
}
