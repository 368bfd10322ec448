//! The built-in certificate provider's decisions, table-tested: when a held pair is kept, when
//! it is (re)issued and why, and what the injector and the rollout patch. The rules are OLM v0's
//! (`pkg/controller/install/certresources.go`: 730-day validity, rotation 24 hours before
//! expiry, hosts `<svc>.<ns>`, `.svc`, `.svc.cluster.local`; `olmcahash` = hex SHA-256 of the CA).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use olm_security::certs::{
    Decision, Held, IssuePlan, IssueReason, Issued, Owner, Policy, Subject, ca_bundle_patch,
    ca_hash, decide, inject_source, mounts_secret, plan, rollout_patch, secret_object,
};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{Value, json};

fn subject() -> Subject {
    Subject {
        service: "webhook-service".into(),
        namespace: "ops".into(),
    }
}

fn t(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn odt(ts: Timestamp) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(ts.as_second()).unwrap()
}

/// Variations on a well-formed pair.
#[derive(Clone, Copy, Default)]
struct Twist {
    ca_not_a_ca: bool,
    other_signer: bool,
    drop_host: bool,
    ca_shorter_by_days: i64,
}

fn make(p: &IssuePlan, twist: Twist) -> Issued {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.distinguished_name
        .push(DnType::CommonName, p.ca_common_name.clone());
    ca.is_ca = if twist.ca_not_a_ca {
        IsCa::NoCa
    } else {
        IsCa::Ca(BasicConstraints::Constrained(0))
    };
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    ca.not_before = odt(p.not_before);
    ca.not_after = odt(p
        .not_after
        .checked_sub(SignedDuration::from_hours(24 * twist.ca_shorter_by_days))
        .unwrap());
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let signer = if twist.other_signer {
        // Same name, other key: the issuer name matches but the signature does not.
        Issuer::new(ca.clone(), KeyPair::generate().unwrap())
    } else {
        Issuer::new(ca, ca_key)
    };
    let mut names = p.dns_names.clone();
    if twist.drop_host {
        names.pop();
    }
    let key = KeyPair::generate().unwrap();
    let mut sp = CertificateParams::new(names).unwrap();
    sp.distinguished_name
        .push(DnType::CommonName, p.common_name.clone());
    sp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    sp.not_before = odt(p.not_before);
    sp.not_after = odt(p.not_after);
    let cert = sp.signed_by(&key, &signer).unwrap();
    Issued {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

fn held(i: &Issued) -> Held<'_> {
    Held {
        tls_crt: Some(i.cert_pem.as_bytes()),
        tls_key: Some(i.key_pem.as_bytes()),
        ca_crt: Some(i.ca_pem.as_bytes()),
    }
}

const ISSUED_AT: &str = "2026-01-01T00:00:00Z";

fn reason(d: &Decision) -> Option<&IssueReason> {
    match d {
        Decision::Issue { reason, .. } => Some(reason),
        Decision::Keep { .. } => None,
    }
}

#[test]
fn default_policy_is_v0s() {
    let p = Policy::default();
    assert_eq!(p.validity, SignedDuration::from_hours(17520));
    assert_eq!(p.renew_before, SignedDuration::from_hours(24));
}

#[test]
fn plan_names_every_service_host() {
    let p = plan(&subject(), t(ISSUED_AT), &Policy::default());
    assert_eq!(
        p.dns_names,
        [
            "webhook-service.ops",
            "webhook-service.ops.svc",
            "webhook-service.ops.svc.cluster.local"
        ]
    );
    assert_eq!(p.common_name, "webhook-service.ops");
    assert_eq!(p.not_before, t(ISSUED_AT));
    assert_eq!(
        p.not_after,
        t("2027-12-31T23:59:59Z")
            .checked_add(SignedDuration::from_secs(1))
            .unwrap()
    );
}

#[test]
fn keep_or_issue_table() {
    let policy = Policy::default();
    let p = plan(&subject(), t(ISSUED_AT), &policy);
    let good = make(&p, Twist::default());
    let expires = p.not_after;
    let renew_at = expires.checked_sub(SignedDuration::from_hours(24)).unwrap();

    // (case, pair, now, wanted reason or None for keep)
    let not_a_ca = make(
        &p,
        Twist {
            ca_not_a_ca: true,
            ..Twist::default()
        },
    );
    let other = make(
        &p,
        Twist {
            other_signer: true,
            ..Twist::default()
        },
    );
    let short = make(
        &p,
        Twist {
            drop_host: true,
            ..Twist::default()
        },
    );
    let ca_early = make(
        &p,
        Twist {
            ca_shorter_by_days: 100,
            ..Twist::default()
        },
    );
    let cases: Vec<(&str, Held<'_>, Timestamp, Option<IssueReason>)> = vec![
        ("fresh", held(&good), t("2026-06-01T00:00:00Z"), None),
        (
            "a second before the margin",
            held(&good),
            renew_at.checked_sub(SignedDuration::from_secs(1)).unwrap(),
            None,
        ),
        (
            "at the margin",
            held(&good),
            renew_at,
            Some(IssueReason::Expiring { not_after: expires }),
        ),
        (
            "expired",
            held(&good),
            t("2029-01-01T00:00:00Z"),
            Some(IssueReason::Expiring { not_after: expires }),
        ),
        (
            "before validity",
            held(&good),
            t("2025-12-31T23:59:59Z"),
            Some(IssueReason::NotYetValid {
                not_before: t(ISSUED_AT),
            }),
        ),
        (
            "empty secret",
            Held::default(),
            t("2026-06-01T00:00:00Z"),
            Some(IssueReason::Missing("tls.crt")),
        ),
        (
            "no key",
            Held {
                tls_key: None,
                ..held(&good)
            },
            t("2026-06-01T00:00:00Z"),
            Some(IssueReason::Missing("tls.key")),
        ),
        (
            "no ca",
            Held {
                ca_crt: None,
                ..held(&good)
            },
            t("2026-06-01T00:00:00Z"),
            Some(IssueReason::Missing("ca.crt")),
        ),
        (
            "ca is not a ca",
            held(&not_a_ca),
            t("2026-06-01T00:00:00Z"),
            Some(IssueReason::NotACa),
        ),
        (
            "signed by another key",
            held(&other),
            t("2026-06-01T00:00:00Z"),
            Some(IssueReason::NotSignedByCa),
        ),
        (
            "ca of another pair",
            Held {
                ca_crt: Some(other.ca_pem.as_bytes()),
                ..held(&good)
            },
            t("2026-06-01T00:00:00Z"),
            Some(IssueReason::NotSignedByCa),
        ),
        (
            "host missing",
            held(&short),
            t("2026-06-01T00:00:00Z"),
            Some(IssueReason::HostMissing(
                "webhook-service.ops.svc.cluster.local".into(),
            )),
        ),
    ];
    for (case, h, now, want) in cases {
        let d = decide(&subject(), &h, now, &policy);
        assert_eq!(reason(&d), want.as_ref(), "{case}");
        if let Decision::Keep {
            renew_at: r,
            ca_hash: hash,
        } = &d
        {
            assert_eq!(*r, renew_at, "{case}");
            assert_eq!(hash, &ca_hash(good.ca_pem.as_bytes()), "{case}");
        }
    }

    // The CA's expiry counts when it is the earlier one.
    let ca_expiry = expires
        .checked_sub(SignedDuration::from_hours(2400))
        .unwrap();
    match decide(
        &subject(),
        &held(&ca_early),
        t("2026-06-01T00:00:00Z"),
        &policy,
    ) {
        Decision::Keep { renew_at, .. } => {
            assert_eq!(
                renew_at,
                ca_expiry
                    .checked_sub(SignedDuration::from_hours(24))
                    .unwrap()
            );
        }
        other => panic!("{other:?}"),
    }

    // A Service renamed after issue: the held names no longer fit.
    let renamed = Subject {
        service: "renamed".into(),
        namespace: "ops".into(),
    };
    assert_eq!(
        reason(&decide(
            &renamed,
            &held(&good),
            t("2026-06-01T00:00:00Z"),
            &policy
        )),
        Some(&IssueReason::HostMissing("renamed.ops".into()))
    );

    // Garbage is a reason, not a panic.
    let junk = Held {
        tls_crt: Some(b"not a pem"),
        ..held(&good)
    };
    assert!(matches!(
        reason(&decide(
            &subject(),
            &junk,
            t("2026-06-01T00:00:00Z"),
            &policy
        )),
        Some(IssueReason::Unreadable(_))
    ));
}

#[test]
fn a_shorter_policy_renews_earlier() {
    let policy = Policy {
        validity: SignedDuration::from_secs(60),
        renew_before: SignedDuration::from_secs(50),
    };
    let p = plan(&subject(), t(ISSUED_AT), &policy);
    let pair = make(&p, Twist::default());
    let at = |s: i64| {
        t(ISSUED_AT)
            .checked_add(SignedDuration::from_secs(s))
            .unwrap()
    };
    assert!(matches!(
        decide(&subject(), &held(&pair), at(9), &policy),
        Decision::Keep { .. }
    ));
    assert!(matches!(
        decide(&subject(), &held(&pair), at(10), &policy),
        Decision::Issue { .. }
    ));
}

#[test]
fn ca_hash_is_hex_sha256() {
    // sha256("") is well known.
    assert_eq!(
        ca_hash(b""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[test]
fn secret_holds_three_keys_and_is_owned_by_the_service() {
    let issued = Issued {
        ca_pem: "CA".into(),
        cert_pem: "CERT".into(),
        key_pem: "KEY".into(),
    };
    let owner = Owner {
        name: "webhook-service".into(),
        uid: "u-1".into(),
    };
    let s = secret_object(&subject(), "webhook-service-cert", &owner, &issued);
    assert_eq!(s["type"], "kubernetes.io/tls");
    assert_eq!(s["metadata"]["namespace"], "ops");
    assert_eq!(s["data"]["ca.crt"], "Q0E=");
    assert_eq!(s["data"]["tls.crt"], "Q0VSVA==");
    assert_eq!(s["data"]["tls.key"], "S0VZ");
    assert_eq!(
        s["metadata"]["annotations"][olm_k8s::CA_HASH_ANNOTATION],
        json!(ca_hash(b"CA"))
    );
    assert_eq!(
        s["metadata"]["labels"][olm_k8s::SERVING_CERT_FOR_LABEL],
        "webhook-service"
    );
    assert_eq!(s["metadata"]["ownerReferences"][0]["uid"], "u-1");
    assert_eq!(s["metadata"]["ownerReferences"][0]["controller"], true);

    // What the Secret holds reads back through the same keys.
    let data: BTreeMap<String, k8s_openapi::ByteString> =
        [("tls.crt", "CERT"), ("tls.key", ""), ("ca.crt", "CA")]
            .into_iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    k8s_openapi::ByteString(v.as_bytes().to_vec()),
                )
            })
            .collect();
    let h = Held::from_data(Some(&data));
    assert_eq!(h.tls_crt, Some(&b"CERT"[..]));
    assert_eq!(h.tls_key, None, "an empty key counts as missing");
    assert_eq!(h.ca_crt, Some(&b"CA"[..]));
}

fn annotated(kind: &str, from: &str) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
           "metadata": {"name": "vwebhook", "annotations": {olm_k8s::INJECT_CA_FROM_ANNOTATION: from}},
           "webhooks": [{"name": "vwebhook", "clientConfig": {"service": {"name": "webhook-service", "namespace": "ops"}}}]})
}

#[test]
fn inject_source_table() {
    let cases = [
        (
            "ops/webhook-service-cert",
            Some(("ops", "webhook-service-cert")),
        ),
        ("webhook-service-cert", None),
        ("/x", None),
        ("ops/", None),
        ("a/b/c", None),
    ];
    for (value, want) in cases {
        assert_eq!(
            inject_source(&annotated("ValidatingWebhookConfiguration", value)),
            want,
            "{value}"
        );
    }
    assert_eq!(inject_source(&json!({"metadata": {}})), None);
}

#[test]
fn ca_bundle_patch_for_webhook_configurations() {
    let vwc = annotated("ValidatingWebhookConfiguration", "ops/c");
    let patch = ca_bundle_patch(&vwc, b"PEM").unwrap();
    assert_eq!(
        patch,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
               "metadata": {"name": "vwebhook"},
               "webhooks": [{"name": "vwebhook", "clientConfig": {"caBundle": "UEVN"}}]})
    );
    let mut done = vwc.clone();
    done["webhooks"][0]["clientConfig"]["caBundle"] = json!("UEVN");
    assert_eq!(ca_bundle_patch(&done, b"PEM"), None, "already injected");
    assert!(
        ca_bundle_patch(&done, b"NEW").is_some(),
        "a new CA is injected again"
    );

    let mut mwc = annotated("MutatingWebhookConfiguration", "ops/c");
    mwc["webhooks"] = json!([{"name": "a", "clientConfig": {"caBundle": "UEVN"}}, {"name": "b", "clientConfig": {}}]);
    let patch = ca_bundle_patch(&mwc, b"PEM").unwrap();
    assert_eq!(
        patch["webhooks"].as_array().unwrap().len(),
        2,
        "every webhook is named"
    );
}

#[test]
fn ca_bundle_patch_for_conversion_crds() {
    let crd = |strategy: &str, bundle: Option<&str>| {
        let mut cc = json!({"service": {"name": "webhook-service", "namespace": "ops"}});
        if let Some(b) = bundle {
            cc["caBundle"] = json!(b);
        }
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "things.example.com"},
               "spec": {"conversion": {"strategy": strategy, "webhook": {"clientConfig": cc}}}})
    };
    assert_eq!(
        ca_bundle_patch(&crd("Webhook", None), b"PEM"),
        Some(
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": "things.example.com"},
                    "spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": "UEVN"}}}}})
        )
    );
    assert_eq!(ca_bundle_patch(&crd("Webhook", Some("UEVN")), b"PEM"), None);
    assert_eq!(ca_bundle_patch(&crd("None", None), b"PEM"), None);
    assert_eq!(
        ca_bundle_patch(
            &json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}}),
            b"PEM"
        ),
        None
    );
}

#[test]
fn rollout_patch_sets_the_pod_template_hash_once() {
    let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "op", "namespace": "ops"},
        "spec": {"template": {"metadata": {"annotations": {"olm.targetNamespaces": ""}},
                 "spec": {"volumes": [{"name": "webhook-cert", "secret": {"secretName": "webhook-service-cert"}}]}}}});
    assert!(mounts_secret(&dep, "webhook-service-cert"));
    assert!(!mounts_secret(&dep, "other"));
    let patch = rollout_patch(&dep, "abc").unwrap();
    assert_eq!(
        patch,
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "op", "namespace": "ops"},
               "spec": {"template": {"metadata": {"annotations": {olm_k8s::CA_HASH_ANNOTATION: "abc"}}}}})
    );
    let mut rolled = dep.clone();
    rolled["spec"]["template"]["metadata"]["annotations"][olm_k8s::CA_HASH_ANNOTATION] =
        json!("abc");
    assert_eq!(rollout_patch(&rolled, "abc"), None);
    assert!(rollout_patch(&rolled, "def").is_some());
    // A Deployment OLM v0 rolled for this CA (its `olmcahash`) needs no rollout when it moves.
    let mut from_v0 = dep.clone();
    from_v0["spec"]["template"]["metadata"]["annotations"][olm_k8s::V0_CA_HASH_ANNOTATION] =
        json!("abc");
    assert_eq!(rollout_patch(&from_v0, "abc"), None);
    assert!(rollout_patch(&from_v0, "def").is_some());
}

/// A Secret OLM v0 issued (its CA under `olmCAKey`) reads as held, and is adopted by
/// metadata alone: the Service's label and controlling reference, no data.
#[test]
fn secrets_olm_v0_issued_are_kept_and_adopted() {
    let data: BTreeMap<String, k8s_openapi::ByteString> = [
        ("tls.crt", "CERT"),
        ("tls.key", "KEY"),
        ("olmCAKey", "V0CA"),
    ]
    .into_iter()
    .map(|(k, v)| {
        (
            k.to_string(),
            k8s_openapi::ByteString(v.as_bytes().to_vec()),
        )
    })
    .collect();
    assert_eq!(Held::from_data(Some(&data)).ca_crt, Some(&b"V0CA"[..]));
    let subject = Subject {
        service: "op-service".into(),
        namespace: "ops".into(),
    };
    let adopted = olm_security::certs::secret_adoption(
        &subject,
        "op-service-cert",
        &olm_security::certs::Owner {
            name: "op-service".into(),
            uid: "u1".into(),
        },
    );
    assert_eq!(
        adopted,
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "op-service-cert",
            "namespace": "ops", "labels": {olm_k8s::SERVING_CERT_FOR_LABEL: "op-service"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "op-service",
                "uid": "u1", "controller": true, "blockOwnerDeletion": false}]}})
    );
}
