//! The built-in webhook certificate provider's decisions: whether a webhook Service's serving
//! certificate must be issued, kept or renewed, what its Secret holds, and what the objects that
//! trust it (webhook configurations, conversion CRDs) and the Deployment that serves it must be
//! patched to.
//!
//! The rules are OLM v0's (`pkg/controller/install/certresources.go`): a self-signed CA and a
//! serving certificate per webhook Service, valid for 730 days, renewed when less than 24 hours
//! are left or when the pair no longer fits the Service; the Deployment is rolled by a pod-template
//! annotation holding the CA's SHA-256, so pods pick up a new certificate. Unlike v0 the CA's
//! private key is never kept: each issue makes a new CA that signs exactly one certificate, so a
//! leaked Secret cannot be used to mint more.
//!
//! Generating keys needs randomness, so it is the shell's; this module only says what to
//! generate ([`IssuePlan`]) and reads back what was generated.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

/// Secret key of the serving certificate (PEM).
pub const TLS_CERT_KEY: &str = "tls.crt";
/// Secret key of the serving certificate's private key (PEM, PKCS#8).
pub const TLS_KEY_KEY: &str = "tls.key";
/// Secret key of the CA certificate (PEM) that signed `tls.crt`; it becomes the `caBundle`.
pub const CA_CERT_KEY: &str = "ca.crt";
/// Type of the serving-certificate Secret.
pub const SECRET_TYPE: &str = "kubernetes.io/tls";

/// How long certificates live and how early they are renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Lifetime of a newly issued CA and serving certificate.
    pub validity: SignedDuration,
    /// Renew once less than this is left before the earlier of the two expiries.
    pub renew_before: SignedDuration,
}

impl Default for Policy {
    /// OLM v0's: 730 days, renewed 24 hours before expiry.
    fn default() -> Policy {
        Policy {
            validity: SignedDuration::from_hours(730 * 24),
            renew_before: SignedDuration::from_hours(24),
        }
    }
}

/// The webhook Service a certificate serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// Service name.
    pub service: String,
    /// Service namespace.
    pub namespace: String,
}

impl Subject {
    /// The names the API server may dial the Service by, the first being the common name:
    /// `<svc>.<ns>`, `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local` (v0's and cert-manager's).
    pub fn hosts(&self) -> Vec<String> {
        let base = format!("{}.{}", self.service, self.namespace);
        vec![
            base.clone(),
            format!("{base}.svc"),
            format!("{base}.svc.cluster.local"),
        ]
    }
}

/// What a Secret currently holds, by key; absent keys are `None`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Held<'a> {
    /// `tls.crt`.
    pub tls_crt: Option<&'a [u8]>,
    /// `tls.key`.
    pub tls_key: Option<&'a [u8]>,
    /// `ca.crt`.
    pub ca_crt: Option<&'a [u8]>,
}

impl<'a> Held<'a> {
    /// Reads the three keys from a Secret's `data`; the CA of a Secret OLM v0 issued (under
    /// [`olm_k8s::V0_CA_SECRET_KEY`]) counts as `ca.crt`, so that its certificate is kept when
    /// the operator moves to OLM v1 and its pods need not restart for a new one.
    pub fn from_data(data: Option<&'a BTreeMap<String, k8s_openapi::ByteString>>) -> Held<'a> {
        let get = |k: &str| {
            data.and_then(|d| d.get(k))
                .map(|b| b.0.as_slice())
                .filter(|b| !b.is_empty())
        };
        Held {
            tls_crt: get(TLS_CERT_KEY),
            tls_key: get(TLS_KEY_KEY),
            ca_crt: get(CA_CERT_KEY).or_else(|| get(olm_k8s::V0_CA_SECRET_KEY)),
        }
    }
}

/// What to generate: a self-signed CA and a serving certificate it signs, both valid over the
/// same window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuePlan {
    /// The CA's common name.
    pub ca_common_name: String,
    /// The serving certificate's common name (its first DNS name).
    pub common_name: String,
    /// DNS subject alternative names of the serving certificate.
    pub dns_names: Vec<String>,
    /// Start of validity (the time handed in).
    pub not_before: Timestamp,
    /// End of validity.
    pub not_after: Timestamp,
}

/// Why a certificate is (re)issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IssueReason {
    /// One of `tls.crt`, `tls.key`, `ca.crt` is missing or empty (a new Secret included).
    Missing(&'static str),
    /// A PEM or certificate could not be read.
    Unreadable(String),
    /// `ca.crt` is not a CA certificate.
    NotACa,
    /// `tls.crt` was not signed by `ca.crt`.
    NotSignedByCa,
    /// `tls.crt` does not name every host of the Service.
    HostMissing(String),
    /// The pair is not valid yet.
    NotYetValid {
        /// The later start of validity of the two.
        not_before: Timestamp,
    },
    /// Less than the policy's margin is left.
    Expiring {
        /// The earlier expiry of the two.
        not_after: Timestamp,
    },
}

impl fmt::Display for IssueReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IssueReason::Missing(key) => write!(f, "secret has no {key}"),
            IssueReason::Unreadable(e) => write!(f, "certificate cannot be read: {e}"),
            IssueReason::NotACa => write!(f, "{CA_CERT_KEY} is not a certificate authority"),
            IssueReason::NotSignedByCa => {
                write!(f, "{TLS_CERT_KEY} is not signed by {CA_CERT_KEY}")
            }
            IssueReason::HostMissing(h) => write!(f, "certificate does not name {h}"),
            IssueReason::NotYetValid { not_before } => {
                write!(f, "certificate is not valid before {not_before}")
            }
            IssueReason::Expiring { not_after } => {
                write!(f, "certificate expires at {not_after}")
            }
        }
    }
}

/// What to do with a Service's serving-certificate Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The Secret is good: keep it, inject its CA, and look again at `renew_at`.
    Keep {
        /// When the certificate falls inside the renewal margin.
        renew_at: Timestamp,
        /// [`ca_hash`] of the held CA.
        ca_hash: String,
    },
    /// Generate a new pair per `plan` and write it with [`secret_object`].
    Issue {
        /// Why.
        reason: IssueReason,
        /// What to generate.
        plan: IssuePlan,
    },
}

/// Decides whether `held` still serves `subject` at `now`.
///
/// Flow: every key present → both certificates parse → `ca.crt` is a CA → `tls.crt` carries its
/// signature → `tls.crt` names every host of [`Subject::hosts`] → `now` lies inside both validity
/// windows with more than `policy.renew_before` left. The first check that fails is the reason
/// to issue; when all pass the Secret is kept until the margin is reached.
///
/// Caveat: whether `tls.key` belongs to `tls.crt` is not checked; only the issuer writes the
/// Secret, and it writes the three keys at once.
pub fn decide(subject: &Subject, held: &Held<'_>, now: Timestamp, policy: &Policy) -> Decision {
    match check(subject, held, now, policy) {
        Ok((renew_at, ca_hash)) => Decision::Keep { renew_at, ca_hash },
        Err(reason) => Decision::Issue {
            reason,
            plan: plan(subject, now, policy),
        },
    }
}

/// What to generate for `subject` at `now`.
pub fn plan(subject: &Subject, now: Timestamp, policy: &Policy) -> IssuePlan {
    let hosts = subject.hosts();
    IssuePlan {
        ca_common_name: format!("olm-selfsigned-{}", hosts[0]),
        common_name: hosts[0].clone(),
        dns_names: hosts,
        not_before: now,
        not_after: now.saturating_add(policy.validity).unwrap_or(now),
    }
}

fn check(
    subject: &Subject,
    held: &Held<'_>,
    now: Timestamp,
    policy: &Policy,
) -> Result<(Timestamp, String), IssueReason> {
    let crt = held.tls_crt.ok_or(IssueReason::Missing(TLS_CERT_KEY))?;
    held.tls_key.ok_or(IssueReason::Missing(TLS_KEY_KEY))?;
    let ca = held.ca_crt.ok_or(IssueReason::Missing(CA_CERT_KEY))?;
    let crt_pem = read_pem(crt)?;
    let ca_pem = read_pem(ca)?;
    let cert = parse(&crt_pem)?;
    let ca_cert = parse(&ca_pem)?;
    if !ca_cert.is_ca() {
        return Err(IssueReason::NotACa);
    }
    if cert.issuer() != ca_cert.subject()
        || cert.verify_signature(Some(ca_cert.public_key())).is_err()
    {
        return Err(IssueReason::NotSignedByCa);
    }
    let names = dns_names(&cert);
    if let Some(h) = subject.hosts().into_iter().find(|h| !names.contains(h)) {
        return Err(IssueReason::HostMissing(h));
    }
    let not_before = validity_bound(cert.validity().not_before.timestamp())
        .max(validity_bound(ca_cert.validity().not_before.timestamp()));
    let not_after = validity_bound(cert.validity().not_after.timestamp())
        .min(validity_bound(ca_cert.validity().not_after.timestamp()));
    if now < not_before {
        return Err(IssueReason::NotYetValid { not_before });
    }
    let renew_at = not_after
        .saturating_sub(policy.renew_before)
        .unwrap_or(not_after);
    if now >= renew_at {
        return Err(IssueReason::Expiring { not_after });
    }
    Ok((renew_at, ca_hash(ca)))
}

fn read_pem(bytes: &[u8]) -> Result<x509_parser::pem::Pem, IssueReason> {
    x509_parser::pem::parse_x509_pem(bytes)
        .map(|(_, pem)| pem)
        .map_err(|e| IssueReason::Unreadable(e.to_string()))
}

fn parse(pem: &x509_parser::pem::Pem) -> Result<X509Certificate<'_>, IssueReason> {
    pem.parse_x509()
        .map_err(|e| IssueReason::Unreadable(e.to_string()))
}

fn dns_names(cert: &X509Certificate<'_>) -> Vec<String> {
    match cert.subject_alternative_name() {
        Ok(Some(san)) => san
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                GeneralName::DNSName(d) => Some((*d).to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Seconds since the epoch as a timestamp, clamped to jiff's range (X.509 allows year 9999,
/// which jiff also does, so clamping only guards malformed input).
fn validity_bound(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap_or(if secs < 0 {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

/// Hex SHA-256 of a CA's PEM, the value of [`olm_k8s::CA_HASH_ANNOTATION`] (v0's `olmcahash`).
pub fn ca_hash(ca_pem: &[u8]) -> String {
    Sha256::digest(ca_pem)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A generated pair, as PEM text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The CA certificate.
    pub ca_pem: String,
    /// The serving certificate.
    pub cert_pem: String,
    /// The serving certificate's private key.
    pub key_pem: String,
}

/// The Service a Secret is issued for, as its owner: the Secret goes when the Service does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Service name.
    pub name: String,
    /// Service UID.
    pub uid: String,
}

/// The metadata to server-side apply to a valid Secret this issuer keeps but did not write (an
/// OLM v0 operator's, taken over): the label naming the Service and the Service as controlling
/// owner, exactly as [`secret_object`] sets them, and nothing of its data.
pub fn secret_adoption(subject: &Subject, secret_name: &str, owner: &Owner) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name,
            "namespace": subject.namespace,
            "labels": {olm_k8s::SERVING_CERT_FOR_LABEL: subject.service},
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Service",
                "name": owner.name, "uid": owner.uid,
                "controller": true, "blockOwnerDeletion": false,
            }],
        },
    })
}

/// The whole Secret to server-side apply after issuing: type `kubernetes.io/tls`, the three
/// keys, the CA hash annotation, a label naming the Service (so the issuer can watch only its
/// own Secrets), and the Service as controlling owner.
pub fn secret_object(
    subject: &Subject,
    secret_name: &str,
    owner: &Owner,
    issued: &Issued,
) -> Value {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let mut secret = secret_adoption(subject, secret_name, owner);
    secret["metadata"]["annotations"] =
        json!({olm_k8s::CA_HASH_ANNOTATION: ca_hash(issued.ca_pem.as_bytes())});
    secret["type"] = json!(SECRET_TYPE);
    secret["data"] = json!({
        TLS_CERT_KEY: b64(&issued.cert_pem),
        TLS_KEY_KEY: b64(&issued.key_pem),
        CA_CERT_KEY: b64(&issued.ca_pem),
    });
    secret
}

/// The Secret a webhook Service asks for ([`olm_k8s::SERVING_CERT_SECRET_ANNOTATION`]).
pub fn requested_secret(service: &Value) -> Option<&str> {
    annotation(service, olm_k8s::SERVING_CERT_SECRET_ANNOTATION).filter(|s| !s.is_empty())
}

/// `(namespace, secret)` an object asks its CA from ([`olm_k8s::INJECT_CA_FROM_ANNOTATION`],
/// `<namespace>/<secret>`); `None` when absent or not of that shape.
pub fn inject_source(obj: &Value) -> Option<(&str, &str)> {
    let v = annotation(obj, olm_k8s::INJECT_CA_FROM_ANNOTATION)?;
    let (ns, name) = v.split_once('/')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains('/')).then_some((ns, name))
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// The server-side apply body that sets `caBundle` to `ca_pem` on an object that trusts the
/// Secret, or `None` when it already holds it (or has nothing to inject into).
///
/// * Validating/MutatingWebhookConfiguration: every webhook's `clientConfig.caBundle`
///   (webhooks are a list keyed by name, so the body names each one and nothing else).
/// * CustomResourceDefinition: `spec.conversion.webhook.clientConfig.caBundle`, only while the
///   conversion strategy is `Webhook`.
///
/// The body carries only what the injector owns, under its own field manager, so the revision's
/// apply (which never sets `caBundle`) and the injector never take fields from each other.
/// Caveat: a webhook renamed inside the same configuration keeps the injector's `caBundle`
/// entry until the injector's next apply drops it; rendered configurations hold one webhook named
/// like the object, so a rename is a new object.
pub fn ca_bundle_patch(obj: &Value, ca_pem: &[u8]) -> Option<Value> {
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let kind = obj.get("kind").and_then(Value::as_str)?;
    let api_version = obj.get("apiVersion").and_then(Value::as_str)?;
    let name = obj.pointer("/metadata/name").and_then(Value::as_str)?;
    match kind {
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
            let hooks = obj.get("webhooks").and_then(Value::as_array)?;
            let names: Vec<&str> = hooks
                .iter()
                .filter_map(|h| h.get("name").and_then(Value::as_str))
                .collect();
            if names.is_empty() {
                return None;
            }
            let current = hooks.iter().all(|h| {
                h.pointer("/clientConfig/caBundle").and_then(Value::as_str) == Some(&bundle)
            });
            if current {
                return None;
            }
            let webhooks: Vec<Value> = names
                .iter()
                .map(|n| json!({"name": n, "clientConfig": {"caBundle": bundle}}))
                .collect();
            Some(json!({
                "apiVersion": api_version, "kind": kind,
                "metadata": {"name": name},
                "webhooks": webhooks,
            }))
        }
        "CustomResourceDefinition" => {
            let conv = obj.pointer("/spec/conversion")?;
            if conv.get("strategy").and_then(Value::as_str) != Some("Webhook") {
                return None;
            }
            if conv
                .pointer("/webhook/clientConfig/caBundle")
                .and_then(Value::as_str)
                == Some(&bundle)
            {
                return None;
            }
            Some(json!({
                "apiVersion": api_version, "kind": kind,
                "metadata": {"name": name},
                "spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": bundle}}}},
            }))
        }
        _ => None,
    }
}

/// Whether a Deployment's pod template mounts the Secret `secret`.
pub fn mounts_secret(deployment: &Value, secret: &str) -> bool {
    deployment
        .pointer("/spec/template/spec/volumes")
        .and_then(Value::as_array)
        .is_some_and(|vs| {
            vs.iter()
                .any(|v| v.pointer("/secret/secretName").and_then(Value::as_str) == Some(secret))
        })
}

/// The server-side apply body that sets the pod-template CA hash of a Deployment, or `None` when
/// it already carries `ca_hash`. Changing the pod template is what rolls the Deployment, so pods
/// start with the new certificate.
///
/// OLM v0's annotation ([`olm_k8s::V0_CA_HASH_ANNOTATION`]) counts: a Deployment taken over
/// from OLM v0 already runs with this CA when it carries its hash there.
pub fn rollout_patch(deployment: &Value, ca_hash: &str) -> Option<Value> {
    let annotations = deployment.pointer("/spec/template/metadata/annotations");
    let current = |key: &str| annotations.and_then(|a| a.get(key)).and_then(Value::as_str);
    if current(olm_k8s::CA_HASH_ANNOTATION) == Some(ca_hash)
        || current(olm_k8s::V0_CA_HASH_ANNOTATION) == Some(ca_hash)
    {
        return None;
    }
    let name = deployment
        .pointer("/metadata/name")
        .and_then(Value::as_str)?;
    let ns = deployment
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)?;
    Some(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"template": {"metadata": {"annotations": {olm_k8s::CA_HASH_ANNOTATION: ca_hash}}}},
    }))
}
