//! The ClusterExtension status matrix. Cases named after an upstream test port that test's
//! vectors (operator-controller v1.11.0, `internal/operator-controller/controllers/`); the rest
//! pin one row of the condition table each.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use olm_api::{
    BundleMetadata, ClusterExtensionInstallStatus, ClusterExtensionStatus, RevisionStatus,
};
use olm_extension::status::{
    Input, Resolution, RevisionState, Step, Stop, StopKind, compute, installed, rolling_out,
};
use olm_k8s::TRUNCATION_SUFFIX;
use olm_resolve::{Deprecations, Skipped};

const GEN: i64 = 3;
const NOW: i64 = 1_000;
const PROM_IMAGE: &str = "quay.io/operatorhubio/prometheus@fake1.0.0";

fn at(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).expect("a valid timestamp"))
}

fn cond(type_: &str, status: &str, reason: &str, message: &str, ltt: i64) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: Some(7),
        last_transition_time: at(ltt),
    }
}

fn bundle(name: &str, version: &str) -> BundleMetadata {
    BundleMetadata {
        name: name.into(),
        version: version.into(),
        release: None,
    }
}

fn rev(
    name: &str,
    revision: i64,
    bundle_name: &str,
    version: &str,
    succeeded: bool,
    conditions: Vec<Condition>,
) -> RevisionState {
    RevisionState {
        name: name.into(),
        revision,
        bundle: bundle(bundle_name, version),
        image: format!("registry.example/{bundle_name}@sha256:{version}"),
        succeeded,
        conditions,
    }
}

/// The installed revision of the upstream controller tests: prometheus.v1.0.0 at its fake image.
fn prometheus_installed(conditions: Vec<Condition>) -> RevisionState {
    RevisionState {
        image: PROM_IMAGE.into(),
        ..rev("ext-1", 1, "prometheus.v1.0.0", "1.0.0", true, conditions)
    }
}

/// What a ClusterObjectSet that finished rolling out says.
fn rolled_out(version: &str) -> Vec<Condition> {
    vec![
        cond(
            "Progressing",
            "True",
            "Succeeded",
            &format!("Revision {version} has rolled out."),
            50,
        ),
        cond(
            "Available",
            "True",
            "ProbesSucceeded",
            "Objects are available and pass all probes.",
            50,
        ),
        cond(
            "Succeeded",
            "True",
            "Succeeded",
            "Revision succeeded rolling out.",
            50,
        ),
    ]
}

fn rolling(version: &str, ltt: i64) -> Vec<Condition> {
    vec![cond(
        "Progressing",
        "True",
        "RollingOut",
        &format!("Revision {version} is rolling out."),
        ltt,
    )]
}

fn deps(
    package: Option<&str>,
    channels: &[(&str, &str)],
    bundles: &[(&str, &str)],
) -> Deprecations {
    Deprecations {
        package: package.map(str::to_string),
        channels: channels
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).to_string()))
            .collect(),
        bundles: bundles
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).to_string()))
            .collect(),
    }
}

fn resolved<'a>(
    name: &str,
    version: &str,
    deprecations: &'a Deprecations,
    channels: &'a [String],
) -> Resolution<'a> {
    Resolution::Resolved {
        bundle: bundle(name, version),
        image: "registry.example/resolved",
        deprecations,
        channels,
        skipped: &[],
    }
}

/// No matching catalog exists any more, and the resolver returned no deprecations.
fn fallback() -> Resolution<'static> {
    Resolution::Fallback {
        deprecations: None,
        channels: &[],
    }
}

fn failed<'a>(message: &str, deprecations: Option<&'a Deprecations>) -> Resolution<'a> {
    Resolution::Failed {
        message: message.into(),
        deprecations,
        channels: &[],
        skipped: &[],
    }
}

fn stop(step: Step, message: &str, kind: StopKind) -> Option<Stop> {
    Some(Stop {
        step,
        message: message.into(),
        kind,
    })
}

fn run(
    revisions: Result<&[RevisionState], String>,
    resolution: Resolution<'_>,
    stop: Option<Stop>,
) -> ClusterExtensionStatus {
    run_from(None, revisions, resolution, stop)
}

fn run_from(
    previous: Option<&ClusterExtensionStatus>,
    revisions: Result<&[RevisionState], String>,
    resolution: Resolution<'_>,
    stop: Option<Stop>,
) -> ClusterExtensionStatus {
    compute(&Input {
        generation: GEN,
        now: Timestamp::from_second(NOW).expect("a valid timestamp"),
        previous,
        revisions,
        resolution,
        stop,
    })
}

fn get<'s>(st: &'s ClusterExtensionStatus, type_: &str) -> &'s Condition {
    st.conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition in {:#?}", st.conditions))
}

/// (status, reason, message) of a condition.
fn srm<'s>(st: &'s ClusterExtensionStatus, type_: &str) -> (&'s str, &'s str, &'s str) {
    let c = get(st, type_);
    (c.status.as_str(), c.reason.as_str(), c.message.as_str())
}

fn types(st: &ClusterExtensionStatus) -> Vec<&str> {
    st.conditions.iter().map(|c| c.type_.as_str()).collect()
}

const REASONS: [&str; 11] = [
    "Succeeded",
    "Deprecated",
    "NotDeprecated",
    "DeprecationStatusUnknown",
    "Failed",
    "Blocked",
    "InvalidConfiguration",
    "Retrying",
    "Absent",
    "RollingOut",
    "ProgressDeadlineExceeded",
];

/// `clusterextension_controller_test.go` `verifyConditionsInvariants`: after a reconcile that
/// reached resolution, the two core and four deprecation conditions are present, with
/// registered reasons and the current generation.
fn invariants(st: &ClusterExtensionStatus) {
    for t in [
        "Installed",
        "Progressing",
        "Deprecated",
        "PackageDeprecated",
        "ChannelDeprecated",
        "BundleDeprecated",
    ] {
        let c = get(st, t);
        assert!(!c.status.is_empty(), "{t}");
        assert!(REASONS.contains(&c.reason.as_str()), "{t}: {}", c.reason);
        assert_eq!(c.observed_generation, Some(GEN), "{t}");
    }
}

fn deprecation_conditions(st: &ClusterExtensionStatus) -> Vec<(&str, &str, &str, &str)> {
    st.conditions
        .iter()
        .filter(|c| c.type_.ends_with("Deprecated"))
        .map(|c| {
            (
                c.type_.as_str(),
                c.status.as_str(),
                c.reason.as_str(),
                c.message.as_str(),
            )
        })
        .collect()
}

const UNKNOWN_MSG: &str = "deprecation status unknown: catalog data unavailable";

// ---------------------------------------------------------------------------------------------
// common_controller_test.go

/// `TestSetStatusProgressing`: the error-to-Progressing mapping, as the finalizer step applies
/// it (that step hands its error over unchanged).
#[test]
fn set_status_progressing() {
    let cases = [
        (
            "non-terminal error, Progressing True/Retrying",
            "boom",
            StopKind::Retrying,
            ("True", "Retrying", "boom"),
        ),
        (
            "terminal error without reason, Progressing False/Blocked",
            "terminal error: boom",
            StopKind::Blocked,
            ("False", "Blocked", "boom"),
        ),
        (
            "terminal error with InvalidConfiguration reason",
            "terminal error: missing required field",
            StopKind::InvalidConfiguration,
            ("False", "InvalidConfiguration", "missing required field"),
        ),
        (
            "non-terminal network error with source port, port stripped",
            "source catalog content: read tcp 10.0.0.1:52341->192.168.1.100:443: connect: connection refused",
            StopKind::Retrying,
            (
                "True",
                "Retrying",
                "source catalog content: connect: connection refused",
            ),
        ),
        (
            "non-terminal DNS error, message sanitized",
            "source catalog content: dial tcp: lookup registry.example.com on 10.96.0.10:53: read udp 10.244.0.8:46753->10.96.0.10:53: i/o timeout",
            StopKind::Retrying,
            (
                "True",
                "Retrying",
                "source catalog content: dial tcp: lookup registry.example.com on 10.96.0.10:53: i/o timeout",
            ),
        ),
    ];
    for (name, message, kind, expected) in cases {
        let st = run(
            Ok(&[]),
            Resolution::NotReached,
            stop(Step::Finalize, message, kind),
        );
        assert_eq!(srm(&st, "Progressing"), expected, "{name}");
        assert_eq!(
            types(&st),
            ["Progressing"],
            "{name}: nothing else is written"
        );
    }
}

/// `TestSetStatusProgressing` "nil error": a finished reconcile whose installed revision carries
/// no Progressing condition of its own reports "Desired state reached".
#[test]
fn set_status_progressing_nil_error() {
    let revisions = [prometheus_installed(vec![])];
    let d = Deprecations::default();
    let st = run(
        Ok(&revisions),
        resolved("prometheus.v1.0.0", "1.0.0", &d, &[]),
        None,
    );
    assert_eq!(
        srm(&st, "Progressing"),
        ("True", "Succeeded", "Desired state reached")
    );
}

/// `TestSetStatusProgressingWithLongMessage`: a CRD upgrade-safety report far over the limit.
#[test]
fn set_status_progressing_with_long_message() {
    let long = format!(
        "validating CRD upgrade safety for ClusterExtension 'my-operator': {}",
        "CRD \"myresources.example.com\" v1beta1->v1: field .spec.replicas changed from optional to required, field .spec.config.timeout type changed from string to integer, field .status.conditions[].observedGeneration removed\n".repeat(500)
    );
    let st = run(
        Ok(&[]),
        Resolution::NotReached,
        stop(Step::Apply, &long, StopKind::Retrying),
    );
    let m = &get(&st, "Progressing").message;
    assert!(m.len() <= 32768);
    assert!(m.ends_with(TRUNCATION_SUFFIX));
    assert!(m.contains("validating CRD upgrade safety"));
}

/// `TestClusterExtensionDeprecationMessageTruncation`: a long `Installed` Unknown message (here
/// the revision-listing error) is truncated too.
#[test]
fn installed_unknown_message_truncation() {
    let long = (0..1000)
        .map(|i| format!("API version 'v1beta1' of resource 'customresources{i}.example.com' is deprecated, use 'v1' instead"))
        .collect::<Vec<_>>()
        .join("\n");
    let st = run(Err(long), Resolution::NotReached, None);
    let c = get(&st, "Installed");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("Unknown", "Failed")
    );
    assert!(c.message.len() <= 32768);
    assert!(c.message.ends_with(TRUNCATION_SUFFIX));
    assert!(c.message.contains("API version"));
}

/// `TestClusterExtensionInstallationFailureTruncation`: a long installation failure, here as a
/// validation error, which `Installed` carries, is truncated and keeps its start.
#[test]
fn installation_failure_truncation() {
    let long = format!(
        "failed to install ClusterExtension 'argocd-operator': bundle validation errors: {}",
        "resource 'deployments/argocd-server' missing required label 'app.kubernetes.io/name', resource 'services/argocd-server-metrics' has invalid port configuration, resource 'configmaps/argocd-cm' contains invalid YAML in data field 'application.yaml'\n".repeat(400)
    );
    assert!(long.len() > 32768);
    let st = run(
        Ok(&[]),
        Resolution::NotReached,
        stop(Step::Validate, &long, StopKind::Retrying),
    );
    for t in ["Installed", "Progressing"] {
        let c = get(&st, t);
        assert!(c.message.len() <= 32768, "{t}");
        assert!(c.message.ends_with(TRUNCATION_SUFFIX), "{t}");
        assert!(
            c.message.contains("failed to install ClusterExtension"),
            "{t}"
        );
    }
}

/// `TestSetInstalledStatusFromRevisionStates_ConfigValidationError`: Installed False's reason
/// follows the newest rolling-out revision's Progressing reason.
#[test]
fn installed_reason_from_revision_states() {
    let p = |reason: &str, msg: &str| vec![cond("Progressing", "True", reason, msg, 10)];
    let cases: Vec<(&str, Vec<RevisionState>, &str)> = vec![
        ("no revisions at all - uses Failed", vec![], "Failed"),
        (
            "rolling revision with error (Retrying) - uses Failed",
            vec![rev(
                "rev-1",
                1,
                "b",
                "1.0.0",
                false,
                p("Retrying", "some error occurred"),
            )],
            "Failed",
        ),
        (
            "multiple rolling revisions with one Retrying - uses Failed",
            vec![
                rev(
                    "rev-1",
                    1,
                    "b",
                    "1.0.0",
                    false,
                    p("RollingOut", "Revision is rolling out"),
                ),
                rev(
                    "rev-2",
                    2,
                    "b",
                    "1.0.1",
                    false,
                    p("Retrying", "validation error occurred"),
                ),
            ],
            "Failed",
        ),
        (
            "rolling revision with RollingOut reason - uses Absent",
            vec![rev(
                "rev-1",
                1,
                "b",
                "1.0.0",
                false,
                p("RollingOut", "Revision is rolling out"),
            )],
            "Absent",
        ),
        (
            "old revision with Retrying superseded by latest healthy - uses Absent",
            vec![
                rev(
                    "rev-1",
                    1,
                    "b",
                    "1.0.0",
                    false,
                    p("Retrying", "old error that was superseded"),
                ),
                rev(
                    "rev-2",
                    2,
                    "b",
                    "1.0.1",
                    false,
                    p("RollingOut", "Latest revision is rolling out healthy"),
                ),
            ],
            "Absent",
        ),
        (
            "rolling revision without conditions yet - uses Absent",
            vec![rev("rev-1", 1, "b", "1.0.0", false, vec![])],
            "Absent",
        ),
    ];
    for (name, revisions, reason) in cases {
        let st = run(Ok(&revisions), Resolution::SkippedRollingOut, None);
        assert_eq!(
            srm(&st, "Installed"),
            ("False", reason, "No bundle installed"),
            "{name}"
        );
        assert_eq!(st.install, None, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// boxcutter_reconcile_steps_apply_test.go

/// `TestApplyBundleWithBoxcutter`: activeRevisions is rebuilt from the revisions, whatever it
/// held before.
#[test]
fn apply_bundle_with_boxcutter_active_revisions() {
    let names = |st: &ClusterExtensionStatus| -> Vec<String> {
        st.active_revisions.iter().map(|r| r.name.clone()).collect()
    };
    let previous = ClusterExtensionStatus {
        active_revisions: vec![RevisionStatus {
            name: "ce-1".into(),
            conditions: vec![],
        }],
        ..Default::default()
    };
    let cases: Vec<(&str, Vec<RevisionState>, Vec<&str>)> = vec![
        (
            "two active revisions during update",
            vec![
                rev("ce-1", 1, "test-bundle", "1.0.0", true, vec![]),
                rev("ce-2", 2, "test-bundle", "1.0.1", false, vec![]),
            ],
            vec!["ce-1", "ce-2"],
        ),
        (
            "replaces existing with new active revisions",
            vec![rev("ce-2", 2, "test-bundle", "1.0.1", true, vec![])],
            vec!["ce-2"],
        ),
        (
            "ongoing installation",
            vec![rev("ce-1", 1, "test-bundle", "1.0.0", false, vec![])],
            vec!["ce-1"],
        ),
    ];
    for (name, revisions, want) in cases {
        let st = run_from(
            Some(&previous),
            Ok(&revisions),
            Resolution::SkippedRollingOut,
            None,
        );
        assert_eq!(names(&st), want, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// clusterextension_controller_test.go

/// `TestClusterExtensionResolutionFails`.
#[test]
fn resolution_fails() {
    let msg = "no package \"non-existent-abc\" found";
    let st = run(
        Ok(&[]),
        failed(msg, None),
        stop(Step::Resolve, msg, StopKind::Retrying),
    );
    assert_eq!(st.install, None);
    assert_eq!(srm(&st, "Progressing"), ("True", "Retrying", msg));
    assert_eq!(
        srm(&st, "Installed"),
        ("False", "Failed", "No bundle installed")
    );
    invariants(&st);
}

/// `TestClusterExtensionResolutionFailsWithDeprecationData`.
#[test]
fn resolution_fails_with_deprecation_data() {
    let d = deps(Some("package marked deprecated in catalog"), &[], &[]);
    let st = run(
        Ok(&[]),
        Resolution::Failed {
            message: "no package \"deprecated-abc\" found".into(),
            deprecations: Some(&d),
            channels: &[],
            skipped: &[],
        },
        None,
    );
    assert_eq!(
        srm(&st, "PackageDeprecated"),
        ("True", "Deprecated", "package marked deprecated in catalog")
    );
    assert_eq!(get(&st, "Deprecated").status, "True");
    assert_eq!(
        srm(&st, "BundleDeprecated"),
        ("Unknown", "Absent", "no bundle installed yet")
    );
    invariants(&st);
}

/// `TestClusterExtensionUpgradeShowsInstalledBundleDeprecation`: BundleDeprecated is about the
/// installed bundle, not the one resolved for the upgrade.
#[test]
fn upgrade_shows_installed_bundle_deprecation() {
    let message = "v1.0.0 is deprecated, please upgrade to v2.0.0";
    let revisions = [rev(
        "ext-1",
        1,
        "upgrade.v1.0.0",
        "1.0.0",
        true,
        rolled_out("1.0.0"),
    )];
    let d = deps(None, &[], &[("upgrade.v1.0.0", message)]);
    let st = run(
        Ok(&revisions),
        resolved("upgrade.v2.0.0", "2.0.0", &d, &[]),
        None,
    );
    assert_eq!(
        srm(&st, "BundleDeprecated"),
        ("True", "Deprecated", message)
    );
    assert_eq!(srm(&st, "Deprecated"), ("True", "Deprecated", message));
    assert_eq!(
        srm(&st, "PackageDeprecated"),
        ("False", "NotDeprecated", "package not deprecated")
    );
    assert_eq!(
        srm(&st, "ChannelDeprecated"),
        ("False", "NotDeprecated", "channel not deprecated")
    );
    invariants(&st);
}

/// `TestClusterExtensionUpgradeFromDeprecatedBundleClearsDeprecation`: once the new revision
/// has rolled out it is the installed one, and the deprecation conditions are about it. (With
/// ClusterObjectSets the rollout completes in the revision's own controller, so this is the
/// reconcile its completion triggers; the older revision may still be listed until archived.)
#[test]
fn upgrade_from_deprecated_bundle_clears_deprecation() {
    let message = "upgrade-clear.v1.0.1 is deprecated. Uninstall and install v1.0.3 for support.";
    let d = deps(None, &[], &[("upgrade-clear.v1.0.1", message)]);
    let old = rev(
        "ext-1",
        1,
        "upgrade-clear.v1.0.1",
        "1.0.1",
        true,
        rolled_out("1.0.1"),
    );
    let new = rev(
        "ext-2",
        2,
        "upgrade-clear.v1.0.3",
        "1.0.3",
        true,
        rolled_out("1.0.3"),
    );
    for revisions in [vec![old.clone(), new.clone()], vec![new.clone()]] {
        let st = run(
            Ok(&revisions),
            resolved("upgrade-clear.v1.0.3", "1.0.3", &d, &[]),
            None,
        );
        assert_eq!(
            srm(&st, "BundleDeprecated"),
            ("False", "NotDeprecated", "bundle not deprecated")
        );
        assert_eq!(
            srm(&st, "Deprecated"),
            ("False", "NotDeprecated", "not deprecated")
        );
        assert_eq!(get(&st, "PackageDeprecated").status, "False");
        assert_eq!(get(&st, "ChannelDeprecated").status, "False");
        assert_eq!(
            st.install,
            Some(ClusterExtensionInstallStatus {
                bundle: bundle("upgrade-clear.v1.0.3", "1.0.3")
            })
        );
        invariants(&st);
    }
    // Before the rollout completed the old bundle was installed and its deprecation showed.
    let during = [
        old,
        rev(
            "ext-2",
            2,
            "upgrade-clear.v1.0.3",
            "1.0.3",
            false,
            rolling("1.0.3", 60),
        ),
    ];
    let st = run(Ok(&during), Resolution::SkippedRollingOut, None);
    assert_eq!(
        srm(&st, "BundleDeprecated"),
        ("Unknown", "DeprecationStatusUnknown", UNKNOWN_MSG)
    );
}

/// `TestClusterExtensionResolutionFailsWithoutCatalogDeprecationData`.
#[test]
fn resolution_fails_without_catalog_deprecation_data() {
    let revisions = [rev(
        "ext-1",
        1,
        "missing.v1.0.0",
        "1.0.0",
        true,
        rolled_out("1.0.0"),
    )];
    let st = run(
        Ok(&revisions),
        Resolution::Failed {
            message: "no bundles found for package \"missing\"".into(),
            deprecations: None,
            channels: &[],
            skipped: &[],
        },
        None,
    );
    for t in ["PackageDeprecated", "Deprecated", "BundleDeprecated"] {
        assert_eq!(
            srm(&st, t),
            ("Unknown", "DeprecationStatusUnknown", UNKNOWN_MSG),
            "{t}"
        );
    }
    invariants(&st);
}

/// `TestClusterExtensionResolutionSuccessfulUnpackFails`: both pull failures, with the bundle
/// they were for named in the message.
#[test]
fn resolution_successful_unpack_fails() {
    let d = Deprecations::default();
    let channels = ["beta".to_string()];
    for (name, err, kind, status, reason, message) in [
        (
            "non-terminal pull failure",
            "pull failure",
            StopKind::Retrying,
            "True",
            "Retrying",
            "error for resolved bundle \"prometheus.v1.0.0\" with version \"1.0.0\": pull failure",
        ),
        (
            "terminal pull failure",
            "terminal error: terminal pull failure",
            StopKind::Blocked,
            "False",
            "Blocked",
            "error for resolved bundle \"prometheus.v1.0.0\" with version \"1.0.0\": terminal pull failure",
        ),
    ] {
        let st = run(
            Ok(&[]),
            resolved("prometheus.v1.0.0", "1.0.0", &d, &channels),
            stop(Step::Unpack, err, kind),
        );
        assert_eq!(st.install, None, "{name}");
        assert_eq!(srm(&st, "Progressing"), (status, reason, message), "{name}");
        assert_eq!(
            deprecation_conditions(&st),
            [
                ("Deprecated", "False", "NotDeprecated", "not deprecated"),
                (
                    "PackageDeprecated",
                    "False",
                    "NotDeprecated",
                    "package not deprecated"
                ),
                (
                    "ChannelDeprecated",
                    "False",
                    "NotDeprecated",
                    "channel not deprecated"
                ),
                (
                    "BundleDeprecated",
                    "Unknown",
                    "Absent",
                    "no bundle installed yet"
                ),
            ],
            "{name}"
        );
        // A pull failure updates Installed whether or not it is terminal.
        assert_eq!(
            srm(&st, "Installed"),
            ("False", "Failed", "No bundle installed"),
            "{name}"
        );
    }
}

/// `TestClusterExtensionResolutionAndUnpackSuccessfulApplierFails`.
#[test]
fn resolution_and_unpack_successful_applier_fails() {
    let d = Deprecations::default();
    let channels = ["beta".to_string()];
    let st = run(
        Ok(&[]),
        resolved("prometheus.v1.0.0", "1.0.0", &d, &channels),
        stop(Step::Apply, "apply failure", StopKind::Retrying),
    );
    assert_eq!(st.install, None);
    assert_eq!(
        srm(&st, "Installed"),
        ("False", "Failed", "No bundle installed")
    );
    assert_eq!(
        srm(&st, "Progressing"),
        (
            "True",
            "Retrying",
            "error for resolved bundle \"prometheus.v1.0.0\" with version \"1.0.0\": apply failure"
        )
    );
    assert_eq!(
        srm(&st, "BundleDeprecated"),
        ("Unknown", "Absent", "no bundle installed yet")
    );
    for t in ["Deprecated", "PackageDeprecated", "ChannelDeprecated"] {
        assert_eq!(get(&st, t).reason, "NotDeprecated", "{t}");
    }
}

/// `TestClusterExtensionBoxcutterApplierFailsDoesNotLeakDeprecationErrors`: a rolling-out
/// revision skips resolution (deprecation Unknown) and the apply error stays in Progressing.
/// Upstream's rolling-out revision there has empty metadata, hence the empty names.
#[test]
fn boxcutter_applier_fails_does_not_leak_deprecation_errors() {
    let revisions = [rev("", 0, "", "", false, vec![])];
    let st = run(
        Ok(&revisions),
        Resolution::SkippedRollingOut,
        stop(Step::Apply, "boxcutter apply failure", StopKind::Retrying),
    );
    assert_eq!(
        srm(&st, "Installed"),
        ("False", "Absent", "No bundle installed")
    );
    assert_eq!(
        srm(&st, "Progressing"),
        (
            "True",
            "Retrying",
            "error for resolved bundle \"\" with version \"\": boxcutter apply failure"
        )
    );
    assert_eq!(
        deprecation_conditions(&st),
        [
            (
                "Deprecated",
                "Unknown",
                "DeprecationStatusUnknown",
                UNKNOWN_MSG
            ),
            (
                "PackageDeprecated",
                "Unknown",
                "DeprecationStatusUnknown",
                UNKNOWN_MSG
            ),
            (
                "ChannelDeprecated",
                "Unknown",
                "DeprecationStatusUnknown",
                UNKNOWN_MSG
            ),
            (
                "BundleDeprecated",
                "Unknown",
                "Absent",
                "no bundle installed yet"
            ),
        ]
    );
}

/// `TestValidateClusterExtension`, the failing cases: every validator's error, joined.
#[test]
fn validate_cluster_extension() {
    for (name, joined) in [
        (
            "validator fails - sets Progressing condition",
            "generic validation error",
        ),
        (
            "multiple validators - collects all failures",
            "first validator failed\nsecond validator failed\nthird validator failed",
        ),
        (
            "multiple validators - some pass, some fail",
            "validation error 1\nvalidation error 2",
        ),
    ] {
        let revisions = [prometheus_installed(rolled_out("1.0.0"))];
        let st = run(
            Ok(&revisions),
            Resolution::NotReached,
            stop(Step::Validate, joined, StopKind::Retrying),
        );
        let expected =
            format!("operation cannot proceed due to the following validation error(s): {joined}");
        assert_eq!(
            srm(&st, "Installed"),
            ("Unknown", "Failed", expected.as_str()),
            "{name}"
        );
        assert_eq!(
            srm(&st, "Progressing"),
            ("True", "Retrying", expected.as_str()),
            "{name}"
        );
        // Validation stops before revisions are read: install and deprecation are untouched.
        assert_eq!(st.install, None, "{name}");
        assert_eq!(types(&st), ["Installed", "Progressing"], "{name}");
    }
}

/// `TestClusterExtensionApplierFailsWithBundleInstalled`, `TestClusterExtensionManagerFailed`
/// and `TestClusterExtensionManagedContentCacheWatchFail`: an apply error with a bundle
/// installed keeps Installed True and reports the error in Progressing.
#[test]
fn applier_fails_with_bundle_installed() {
    let d = Deprecations::default();
    let revisions = [prometheus_installed(rolled_out("1.0.0"))];
    for err in ["apply failure", "manager fail", "watch error"] {
        let st = run(
            Ok(&revisions),
            resolved("prometheus.v1.0.0", "1.0.0", &d, &[]),
            stop(Step::Apply, err, StopKind::Retrying),
        );
        assert_eq!(
            st.install,
            Some(ClusterExtensionInstallStatus {
                bundle: bundle("prometheus.v1.0.0", "1.0.0")
            }),
            "{err}"
        );
        assert_eq!(
            srm(&st, "Installed"),
            (
                "True",
                "Succeeded",
                "Installed bundle quay.io/operatorhubio/prometheus@fake1.0.0 successfully"
            ),
            "{err}"
        );
        let expected = format!(
            "error for resolved bundle \"prometheus.v1.0.0\" with version \"1.0.0\": {err}"
        );
        assert_eq!(
            srm(&st, "Progressing"),
            ("True", "Retrying", expected.as_str()),
            "{err}"
        );
    }
}

/// `TestClusterExtensionInstallationSucceeds`: with ClusterObjectSets, the installed revision's
/// Progressing and Available are what the extension reports.
#[test]
fn installation_succeeds() {
    let d = Deprecations::default();
    let channels = ["beta".to_string()];
    let revisions = [prometheus_installed(rolled_out("1.0.0"))];
    let st = run(
        Ok(&revisions),
        resolved("prometheus.v1.0.0", "1.0.0", &d, &channels),
        None,
    );
    assert_eq!(
        st.install,
        Some(ClusterExtensionInstallStatus {
            bundle: bundle("prometheus.v1.0.0", "1.0.0")
        })
    );
    assert_eq!(get(&st, "Installed").status, "True");
    assert_eq!(get(&st, "Installed").reason, "Succeeded");
    assert_eq!(
        srm(&st, "Progressing"),
        ("True", "Succeeded", "Revision 1.0.0 has rolled out.")
    );
    assert_eq!(
        srm(&st, "Available"),
        (
            "True",
            "ProbesSucceeded",
            "Objects are available and pass all probes."
        )
    );
    assert_eq!(
        st.active_revisions,
        [RevisionStatus {
            name: "ext-1".into(),
            conditions: vec![]
        }]
    );
    invariants(&st);
    assert_eq!(
        types(&st),
        [
            "Installed",
            "Progressing",
            "Available",
            "Deprecated",
            "PackageDeprecated",
            "ChannelDeprecated",
            "BundleDeprecated"
        ]
    );
}

/// `TestClusterExtensionDeleteFinalizerFails`: a failing finalizer reports in Progressing and
/// leaves what was installed as it was.
#[test]
fn delete_finalizer_fails() {
    let revisions = [prometheus_installed(rolled_out("1.0.0"))];
    let d = Deprecations::default();
    let installed_status = run(
        Ok(&revisions),
        resolved("prometheus.v1.0.0", "1.0.0", &d, &[]),
        None,
    );
    let st = run_from(
        Some(&installed_status),
        Ok(&[]),
        Resolution::NotReached,
        stop(Step::Finalize, "still have finalizers", StopKind::Retrying),
    );
    assert_eq!(st.install, installed_status.install);
    assert_eq!(get(&st, "Installed"), get(&installed_status, "Installed"));
    assert_eq!(
        srm(&st, "Progressing"),
        ("True", "Retrying", "still have finalizers")
    );
}

/// `TestSetDeprecationStatus`: every case, the four conditions in full and in order.
#[test]
fn set_deprecation_status() {
    type Row = (&'static str, &'static str, &'static str, &'static str);
    let unknown_all = |bundle: Row| -> Vec<Row> {
        vec![
            (
                "Deprecated",
                "Unknown",
                "DeprecationStatusUnknown",
                UNKNOWN_MSG,
            ),
            (
                "PackageDeprecated",
                "Unknown",
                "DeprecationStatusUnknown",
                UNKNOWN_MSG,
            ),
            (
                "ChannelDeprecated",
                "Unknown",
                "DeprecationStatusUnknown",
                UNKNOWN_MSG,
            ),
            bundle,
        ]
    };
    let absent: Row = (
        "BundleDeprecated",
        "Unknown",
        "Absent",
        "no bundle installed yet",
    );
    let bundle_unknown: Row = (
        "BundleDeprecated",
        "Unknown",
        "DeprecationStatusUnknown",
        UNKNOWN_MSG,
    );
    let not = |t: &'static str, m: &'static str| -> Row { (t, "False", "NotDeprecated", m) };
    let yes = |t: &'static str, m: &'static str| -> Row { (t, "True", "Deprecated", m) };

    let none = deps(None, &[], &[]);
    let bad_channel = deps(None, &[("badchannel", "bad channel!")], &[]);
    let bad_channel_no_message = deps(None, &[("badchannel", "")], &[]);
    let all_bad = deps(
        Some("bad package!"),
        &[("badchannel", "bad channel!")],
        &[("badbundle", "bad bundle!")],
    );
    let channel_and_bundle = deps(
        None,
        &[("badchannel", "bad channel!")],
        &[("badbundle", "bad bundle!")],
    );
    let package_and_channel = deps(Some("bad package!"), &[("badchannel", "bad channel!")], &[]);
    let two_channels = deps(
        None,
        &[
            ("badchannel", "bad channel!"),
            ("anotherbadchannel", "another bad channel!"),
        ],
        &[],
    );

    struct Case<'d> {
        name: &'static str,
        installed: Option<&'static str>,
        // None: the catalog gave no data.
        deprecations: Option<&'d Deprecations>,
        channels: Vec<String>,
        want: Vec<Row>,
    }
    let ch = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases = vec![
        Case {
            name: "no catalog data, all deprecation statuses set to Unknown",
            installed: None,
            deprecations: None,
            channels: vec![],
            want: unknown_all(absent),
        },
        Case {
            name: "no catalog data with installed bundle keeps bundle condition Unknown",
            installed: Some("installed.v1.0.0"),
            deprecations: None,
            channels: vec![],
            want: unknown_all(bundle_unknown),
        },
        Case {
            // Upstream passes entries with hasCatalogData=false; here "no catalog data" is a
            // skipped resolution, which has no entries to pass.
            name: "deprecation entries ignored when catalog data flag is false",
            installed: Some("ignored"),
            deprecations: None,
            channels: vec![],
            want: unknown_all(bundle_unknown),
        },
        Case {
            name: "catalog consulted but no deprecations, conditions False except BundleDeprecated Unknown when no bundle",
            installed: None,
            deprecations: Some(&none),
            channels: vec![],
            want: vec![
                not("Deprecated", "not deprecated"),
                not("PackageDeprecated", "package not deprecated"),
                not("ChannelDeprecated", "channel not deprecated"),
                absent,
            ],
        },
        Case {
            name: "deprecated channel exists, no channels specified (auto-select), channel deprecation shown",
            installed: None,
            deprecations: Some(&bad_channel),
            channels: vec![],
            want: vec![
                yes("Deprecated", "bad channel!"),
                not("PackageDeprecated", "package not deprecated"),
                yes("ChannelDeprecated", "bad channel!"),
                absent,
            ],
        },
        Case {
            name: "deprecated channel exists but non-deprecated channel specified; conditions False except BundleDeprecated Unknown",
            installed: None,
            deprecations: Some(&bad_channel_no_message),
            channels: ch(&["nondeprecated"]),
            want: vec![
                not("Deprecated", "not deprecated"),
                not("PackageDeprecated", "package not deprecated"),
                not("ChannelDeprecated", "channel not deprecated"),
                absent,
            ],
        },
        Case {
            name: "deprecated channel specified, ChannelDeprecated and Deprecated set to true, PackageDeprecated False, BundleDeprecated Unknown",
            installed: None,
            deprecations: Some(&bad_channel),
            channels: ch(&["badchannel"]),
            want: vec![
                yes("Deprecated", "bad channel!"),
                not("PackageDeprecated", "package not deprecated"),
                yes("ChannelDeprecated", "bad channel!"),
                absent,
            ],
        },
        Case {
            name: "deprecated package and channel specified, deprecated bundle, all deprecation statuses set to true",
            installed: Some("badbundle"),
            deprecations: Some(&all_bad),
            channels: ch(&["badchannel"]),
            want: vec![
                yes("Deprecated", "bad package!\nbad channel!\nbad bundle!"),
                yes("PackageDeprecated", "bad package!"),
                yes("ChannelDeprecated", "bad channel!"),
                yes("BundleDeprecated", "bad bundle!"),
            ],
        },
        Case {
            name: "deprecated channel and bundle specified, Deprecated/ChannelDeprecated/BundleDeprecated set to true, PackageDeprecated False",
            installed: Some("badbundle"),
            deprecations: Some(&channel_and_bundle),
            channels: ch(&["badchannel"]),
            want: vec![
                yes("Deprecated", "bad channel!\nbad bundle!"),
                not("PackageDeprecated", "package not deprecated"),
                yes("ChannelDeprecated", "bad channel!"),
                yes("BundleDeprecated", "bad bundle!"),
            ],
        },
        Case {
            name: "deprecated package and channel specified, Deprecated/PackageDeprecated/ChannelDeprecated set to true, BundleDeprecated Unknown/Absent (no bundle installed)",
            installed: None,
            deprecations: Some(&package_and_channel),
            channels: ch(&["badchannel"]),
            want: vec![
                yes("Deprecated", "bad package!\nbad channel!"),
                yes("PackageDeprecated", "bad package!"),
                yes("ChannelDeprecated", "bad channel!"),
                absent,
            ],
        },
        Case {
            name: "deprecated channels specified, ChannelDeprecated and Deprecated set to true, PackageDeprecated False, BundleDeprecated Unknown/Absent",
            installed: None,
            deprecations: Some(&two_channels),
            channels: ch(&["badchannel", "anotherbadchannel"]),
            want: vec![
                yes("Deprecated", "bad channel!\nanother bad channel!"),
                not("PackageDeprecated", "package not deprecated"),
                yes("ChannelDeprecated", "bad channel!\nanother bad channel!"),
                absent,
            ],
        },
    ];
    for case in cases {
        let revisions: Vec<RevisionState> = case
            .installed
            .map(|n| rev("ext-1", 1, n, "1.0.0", true, rolled_out("1.0.0")))
            .into_iter()
            .collect();
        let resolution = match case.deprecations {
            None => Resolution::SkippedRollingOut,
            Some(d) => resolved("resolved", "1.0.0", d, &case.channels),
        };
        let st = run(Ok(&revisions), resolution, None);
        assert_eq!(deprecation_conditions(&st), case.want, "{}", case.name);
        for c in st
            .conditions
            .iter()
            .filter(|c| c.type_.ends_with("Deprecated"))
        {
            assert_eq!(c.observed_generation, Some(GEN), "{}", case.name);
            assert_eq!(c.last_transition_time, at(NOW), "{}", case.name);
        }
        // The same answer when the catalog data comes with a failed resolution.
        if let Some(d) = case.deprecations {
            let failed = run(
                Ok(&revisions),
                Resolution::Failed {
                    message: "x".into(),
                    deprecations: Some(d),
                    channels: &case.channels,
                    skipped: &[],
                },
                None,
            );
            assert_eq!(
                deprecation_conditions(&failed),
                case.want,
                "{} (failed)",
                case.name
            );
        }
    }
}

/// `TestSetDeprecationStatus_NoInfiniteReconcileLoop`: recomputing from the written status
/// changes nothing, transition times included; an old condition with the same status keeps its
/// transition time when its reason is corrected.
#[test]
fn deprecation_status_no_infinite_reconcile_loop() {
    let deprecated_package = deps(Some("package is deprecated"), &[], &[]);
    let old_false = ClusterExtensionStatus {
        conditions: vec![
            cond("Deprecated", "False", "Deprecated", "", 5),
            cond("PackageDeprecated", "False", "Deprecated", "", 5),
        ],
        ..Default::default()
    };
    let none = Deprecations::default();
    let installed = [rev(
        "ext-1",
        1,
        "test.v1.0.0",
        "1.0.0",
        true,
        rolled_out("1.0.0"),
    )];
    type LoopCase<'c> = (
        &'c str,
        &'c [RevisionState],
        Option<&'c Deprecations>,
        Option<&'c ClusterExtensionStatus>,
    );
    let cases: Vec<LoopCase<'_>> = vec![
        (
            "deprecated package - should stabilize after first reconcile",
            &installed,
            Some(&deprecated_package),
            None,
        ),
        (
            "not deprecated - conditions always present as False",
            &[],
            Some(&none),
            Some(&old_false),
        ),
        (
            "catalog unavailable - should stabilize with Unknown conditions",
            &installed,
            None,
            None,
        ),
    ];
    for (name, revisions, d, setup) in cases {
        let resolution = || match d {
            Some(d) => resolved("test.v1.0.0", "1.0.0", d, &[]),
            None => Resolution::SkippedRollingOut,
        };
        let first = run_from(setup, Ok(revisions), resolution(), None);
        assert_eq!(deprecation_conditions(&first).len(), 4, "{name}");
        let second = compute(&Input {
            generation: GEN,
            now: Timestamp::from_second(NOW + 60).expect("a valid timestamp"),
            previous: Some(&first),
            revisions: Ok(revisions),
            resolution: resolution(),
            stop: None,
        });
        assert_eq!(second, first, "{name}: stable, transition times kept");
        let third = compute(&Input {
            generation: GEN,
            now: Timestamp::from_second(NOW + 120).expect("a valid timestamp"),
            previous: Some(&second),
            revisions: Ok(revisions),
            resolution: resolution(),
            stop: None,
        });
        assert_eq!(third, second, "{name}: still stable");
    }
    let st = run_from(
        Some(&old_false),
        Ok(&[]),
        resolved("b", "1", &none, &[]),
        None,
    );
    let d = get(&st, "Deprecated");
    assert_eq!(
        (d.reason.as_str(), d.message.as_str()),
        ("NotDeprecated", "not deprecated")
    );
    assert_eq!(d.last_transition_time, at(5), "status stayed False");
}

/// `TestSetDeprecationStatus_StatusChangesOnlyWhenNeeded`.
#[test]
fn deprecation_status_changes_only_when_needed() {
    let installed = [rev(
        "ext-1",
        1,
        "test.v1.0.0",
        "1.0.0",
        true,
        rolled_out("1.0.0"),
    )];
    let deprecated = deps(Some("package is deprecated"), &[], &[]);
    let none = Deprecations::default();
    let step = |previous: Option<&ClusterExtensionStatus>, d: &Deprecations, now: i64| {
        compute(&Input {
            generation: GEN,
            now: Timestamp::from_second(now).expect("a valid timestamp"),
            previous,
            revisions: Ok(&installed),
            resolution: resolved("test.v1.0.0", "1.0.0", d, &[]),
            stop: None,
        })
    };
    let first = step(None, &deprecated, NOW);
    let second = step(Some(&first), &deprecated, NOW + 10);
    assert_eq!(second, first, "unchanged deprecation, unchanged status");
    let resolved = step(Some(&second), &none, NOW + 20);
    assert_ne!(resolved, second, "the deprecation went away");
    assert_eq!(
        srm(&resolved, "PackageDeprecated"),
        ("False", "NotDeprecated", "package not deprecated")
    );
    assert_eq!(
        get(&resolved, "PackageDeprecated").last_transition_time,
        at(NOW + 20)
    );
    let again = step(Some(&resolved), &none, NOW + 30);
    assert_eq!(again, resolved, "stable after the change");
}

/// `TestResolutionFallbackToInstalledBundle` "falls back when catalog unavailable and no
/// version change", and "auto-updates when catalog becomes available after fallback".
#[test]
fn resolution_fallback_to_installed_bundle() {
    let revisions = [rev(
        "ext-1",
        1,
        "test.1.0.0",
        "1.0.0",
        true,
        rolled_out("1.0.0"),
    )];
    let st = run(Ok(&revisions), fallback(), None);
    assert_eq!(
        st.install.as_ref().map(|i| i.bundle.version.as_str()),
        Some("1.0.0")
    );
    assert_eq!(get(&st, "Progressing").status, "True");
    assert_eq!(get(&st, "Progressing").reason, "Succeeded");
    assert_eq!(
        srm(&st, "Installed"),
        (
            "True",
            "Succeeded",
            "Installed bundle registry.example/test.1.0.0@sha256:1.0.0 successfully"
        )
    );
    assert_eq!(
        srm(&st, "BundleDeprecated"),
        ("Unknown", "DeprecationStatusUnknown", UNKNOWN_MSG)
    );
    invariants(&st);

    // The catalog is back, 2.0.0 was resolved, rolled out, and is what the next reconcile sees.
    let upgraded = [rev(
        "ext-2",
        2,
        "test.2.0.0",
        "2.0.0",
        true,
        rolled_out("2.0.0"),
    )];
    let d = Deprecations::default();
    let after = run_from(
        Some(&st),
        Ok(&upgraded),
        resolved("test.2.0.0", "2.0.0", &d, &[]),
        None,
    );
    assert_eq!(
        after.install.as_ref().map(|i| i.bundle.version.as_str()),
        Some("2.0.0")
    );
    assert_eq!(get(&after, "Installed").reason, "Succeeded");
    assert_eq!(
        srm(&after, "Progressing"),
        ("True", "Succeeded", "Revision 2.0.0 has rolled out.")
    );
    assert_eq!(
        srm(&after, "BundleDeprecated"),
        ("False", "NotDeprecated", "bundle not deprecated")
    );
    invariants(&after);
}

/// `TestResolutionFallbackToInstalledBundle` "fails when version upgrade requested without
/// catalog" and "retries when catalogs exist but resolution fails": Installed stays True,
/// Progressing carries the resolver's own error (upstream's "unable to upgrade to version" and
/// "failed to resolve bundle" texts only fill conditions that are missing, and none is).
#[test]
fn resolution_failure_with_bundle_installed_retries() {
    let revisions = [rev(
        "ext-1",
        1,
        "test.1.0.0",
        "1.0.0",
        true,
        rolled_out("1.0.0"),
    )];
    for err in [
        "catalog unavailable",
        "transient catalog issue: cache stale",
    ] {
        let st = run(
            Ok(&revisions),
            failed(err, None),
            stop(Step::Resolve, err, StopKind::Retrying),
        );
        assert_eq!(srm(&st, "Progressing"), ("True", "Retrying", err));
        assert_eq!(get(&st, "Installed").status, "True");
        assert_eq!(
            st.install.as_ref().map(|i| i.bundle.name.as_str()),
            Some("test.1.0.0")
        );
        invariants(&st);
    }
}

// ---------------------------------------------------------------------------------------------
// The rows of the condition table, one by one.

#[test]
fn installed_true_names_the_installed_revisions_image() {
    let mut r = rev("ext-1", 1, "pkg.v1.2.0", "1.2.0", true, rolled_out("1.2.0"));
    r.bundle.release = Some("2".into());
    r.image = "quay.io/acme/pkg-bundle@sha256:abc".into();
    let revisions = [r];
    let st = run(Ok(&revisions), fallback(), None);
    assert_eq!(
        srm(&st, "Installed"),
        (
            "True",
            "Succeeded",
            "Installed bundle quay.io/acme/pkg-bundle@sha256:abc successfully"
        )
    );
    assert_eq!(
        st.install,
        Some(ClusterExtensionInstallStatus {
            bundle: BundleMetadata {
                name: "pkg.v1.2.0".into(),
                version: "1.2.0".into(),
                release: Some("2".into()),
            }
        })
    );
}

#[test]
fn listing_revisions_fails() {
    let previous = run(
        Ok(&[prometheus_installed(rolled_out("1.0.0"))]),
        fallback(),
        None,
    );
    // The kind of a listing stop does not matter: it is always retried.
    for stop_ in [None, stop(Step::Revisions, "ignored", StopKind::Blocked)] {
        let st = run_from(
            Some(&previous),
            Err("listing revisions: connection refused".into()),
            Resolution::NotReached,
            stop_,
        );
        assert_eq!(st.install, None);
        assert_eq!(
            srm(&st, "Installed"),
            ("Unknown", "Failed", "listing revisions: connection refused")
        );
        assert_eq!(
            srm(&st, "Progressing"),
            ("True", "Retrying", "retrying to get installed bundle")
        );
        // Deprecation, Available and activeRevisions are not touched.
        assert_eq!(
            get(&st, "BundleDeprecated"),
            get(&previous, "BundleDeprecated")
        );
        assert_eq!(get(&st, "Available"), get(&previous, "Available"));
        assert_eq!(st.active_revisions, previous.active_revisions);
    }
    // A listing stop named only in `stop` reads its message from there.
    let st = run(
        Ok(&[]),
        Resolution::NotReached,
        stop(
            Step::Revisions,
            "listing revisions: forbidden",
            StopKind::Retrying,
        ),
    );
    assert_eq!(
        srm(&st, "Installed"),
        ("Unknown", "Failed", "listing revisions: forbidden")
    );
}

#[test]
fn validation_error_is_not_sanitized_in_installed_but_is_in_progressing() {
    let err = "read tcp 10.0.0.1:1->10.0.0.2:443: connection reset by peer";
    let st = run(
        Ok(&[]),
        Resolution::NotReached,
        stop(Step::Validate, err, StopKind::Retrying),
    );
    let prefix = "operation cannot proceed due to the following validation error(s): ";
    assert_eq!(get(&st, "Installed").message, format!("{prefix}{err}"));
    assert_eq!(
        get(&st, "Progressing").message,
        format!("{prefix}connection reset by peer")
    );
}

#[test]
fn terminal_apply_error_leaves_installed_alone() {
    let previous = run(
        Ok(&[prometheus_installed(rolled_out("1.0.0"))]),
        fallback(),
        None,
    );
    let d = Deprecations::default();
    for (kind, reason) in [
        (StopKind::Blocked, "Blocked"),
        (StopKind::InvalidConfiguration, "InvalidConfiguration"),
    ] {
        // Nothing is listed any more, yet a terminal apply error does not rewrite Installed.
        let st = run_from(
            Some(&previous),
            Ok(&[]),
            resolved("prometheus.v1.1.0", "1.1.0", &d, &[]),
            stop(
                Step::Apply,
                "terminal error: invalid ClusterExtension configuration: invalid configuration: required field \"watchNamespace\" is missing",
                kind,
            ),
        );
        assert_eq!(
            srm(&st, "Progressing"),
            (
                "False",
                reason,
                "error for resolved bundle \"prometheus.v1.1.0\" with version \"1.1.0\": invalid ClusterExtension configuration: invalid configuration: required field \"watchNamespace\" is missing"
            )
        );
        assert_eq!(get(&st, "Installed"), get(&previous, "Installed"));
        assert_eq!(st.install, previous.install);
    }
}

#[test]
fn fallback_sets_installed_before_a_terminal_apply_error() {
    let revisions = [prometheus_installed(rolled_out("1.0.0"))];
    let st = run(
        Ok(&revisions),
        fallback(),
        stop(
            Step::Apply,
            "catalog content unavailable and no revision installed",
            StopKind::Blocked,
        ),
    );
    assert_eq!(get(&st, "Installed").status, "True");
    // The prefix names the installed bundle, the one fallback carries on.
    assert_eq!(
        srm(&st, "Progressing"),
        (
            "False",
            "Blocked",
            "error for resolved bundle \"prometheus.v1.0.0\" with version \"1.0.0\": catalog content unavailable and no revision installed"
        )
    );
}

#[test]
fn unpack_error_during_rollout_names_the_oldest_rolling_out_revision() {
    let revisions = [
        rev("ext-3", 3, "pkg.v3", "3.0.0", false, rolling("3.0.0", 30)),
        rev("ext-1", 1, "pkg.v1", "1.0.0", true, rolled_out("1.0.0")),
        rev("ext-2", 2, "pkg.v2", "2.0.0", false, rolling("2.0.0", 20)),
    ];
    let st = run(
        Ok(&revisions),
        Resolution::SkippedRollingOut,
        stop(Step::Unpack, "pull failure", StopKind::Retrying),
    );
    assert_eq!(
        get(&st, "Progressing").message,
        "error for resolved bundle \"pkg.v2\" with version \"2.0.0\": pull failure"
    );
    assert_eq!(get(&st, "Installed").status, "True");
    assert_eq!(
        installed(&revisions).map(|r| r.name.as_str()),
        Some("ext-1")
    );
    assert_eq!(
        rolling_out(&revisions)
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>(),
        ["ext-2", "ext-3"]
    );
}

/// Progressing True/RollingOut from the newest rolling-out revision, while Installed and
/// Available stay with the revision that is installed (upgrades keep the extension available).
#[test]
fn rollout_in_progress_mirrors_the_newest_rolling_out_revision() {
    let mut newest = rolling("1.0.2", 70);
    newest.push(cond(
        "Available",
        "False",
        "ProbeFailure",
        "Object Deployment.apps/v1 ns/op: condition Available not True",
        70,
    ));
    let revisions = [
        rev("ext-1", 1, "pkg.v1.0.0", "1.0.0", true, rolled_out("1.0.0")),
        rev(
            "ext-2",
            2,
            "pkg.v1.0.1",
            "1.0.1",
            false,
            rolling("1.0.1", 60),
        ),
        rev("ext-3", 3, "pkg.v1.0.2", "1.0.2", false, newest),
    ];
    let st = run(Ok(&revisions), Resolution::SkippedRollingOut, None);
    assert_eq!(
        srm(&st, "Progressing"),
        ("True", "RollingOut", "Revision 1.0.2 is rolling out.")
    );
    let p = get(&st, "Progressing");
    // Both mirrored Progressing conditions are True: the first copy (the installed revision's)
    // brings its transition time, the second keeps it, as upstream's two copies do.
    assert_eq!(p.last_transition_time, at(50));
    assert_eq!(p.observed_generation, Some(GEN));
    assert_eq!(
        srm(&st, "Available"),
        (
            "True",
            "ProbesSucceeded",
            "Objects are available and pass all probes."
        )
    );
    assert_eq!(get(&st, "Installed").status, "True");
    assert_eq!(
        st.install.as_ref().map(|i| i.bundle.name.as_str()),
        Some("pkg.v1.0.0")
    );
    let with = |c: Condition| Condition {
        observed_generation: Some(GEN),
        ..c
    };
    assert_eq!(
        st.active_revisions,
        [
            RevisionStatus {
                name: "ext-1".into(),
                conditions: vec![]
            },
            RevisionStatus {
                name: "ext-2".into(),
                conditions: vec![with(rolling("1.0.1", 60).remove(0))]
            },
            RevisionStatus {
                name: "ext-3".into(),
                conditions: vec![
                    with(cond(
                        "Available",
                        "False",
                        "ProbeFailure",
                        "Object Deployment.apps/v1 ns/op: condition Available not True",
                        70
                    )),
                    with(rolling("1.0.2", 70).remove(0)),
                ]
            },
        ]
    );
    // The Succeeded condition of a revision is not copied anywhere.
    assert!(!types(&st).contains(&"Succeeded"));
}

/// e2e `install.feature` "progress deadline": the extension reports the revision's
/// ProgressDeadlineExceeded, transitioning when the revision did.
#[test]
fn progress_deadline_exceeded_is_mirrored() {
    let previous = ClusterExtensionStatus {
        conditions: vec![cond(
            "Progressing",
            "True",
            "RollingOut",
            "Revision 1.0.2 is rolling out.",
            10,
        )],
        ..Default::default()
    };
    let revisions = [rev(
        "ext-1",
        1,
        "pkg.v1.0.2",
        "1.0.2",
        false,
        vec![cond(
            "Progressing",
            "False",
            "ProgressDeadlineExceeded",
            "Revision has not rolled out for 1 minute(s). Last status: Revision 1.0.2 is rolling out.",
            75,
        )],
    )];
    let st = run_from(
        Some(&previous),
        Ok(&revisions),
        Resolution::SkippedRollingOut,
        None,
    );
    assert_eq!(
        srm(&st, "Progressing"),
        (
            "False",
            "ProgressDeadlineExceeded",
            "Revision has not rolled out for 1 minute(s). Last status: Revision 1.0.2 is rolling out."
        )
    );
    assert_eq!(get(&st, "Progressing").last_transition_time, at(75));
    // A deadline is not an error: nothing installed yet reads Absent.
    assert_eq!(
        srm(&st, "Installed"),
        ("False", "Absent", "No bundle installed")
    );
}

#[test]
fn mirrored_condition_keeps_its_transition_time_while_its_status_holds() {
    let previous = ClusterExtensionStatus {
        conditions: vec![cond(
            "Progressing",
            "True",
            "Retrying",
            "error for resolved bundle ...",
            10,
        )],
        ..Default::default()
    };
    let revisions = [rev("ext-1", 1, "pkg", "1.0.0", false, rolling("1.0.0", 40))];
    let st = run_from(
        Some(&previous),
        Ok(&revisions),
        Resolution::SkippedRollingOut,
        None,
    );
    let p = get(&st, "Progressing");
    assert_eq!(
        (p.reason.as_str(), p.message.as_str()),
        ("RollingOut", "Revision 1.0.0 is rolling out.")
    );
    assert_eq!(p.last_transition_time, at(10), "status stayed True");
}

#[test]
fn available_is_mirrored_from_the_installed_revision() {
    let mut conditions = rolled_out("1.0.0");
    conditions[1] = cond(
        "Available",
        "False",
        "ProbeFailure",
        "Object Deployment.apps/v1 ns/op: condition Available not True",
        90,
    );
    let revisions = [rev("ext-1", 1, "pkg", "1.0.0", true, conditions)];
    let st = run(Ok(&revisions), fallback(), None);
    assert_eq!(
        srm(&st, "Available"),
        (
            "False",
            "ProbeFailure",
            "Object Deployment.apps/v1 ns/op: condition Available not True"
        )
    );
    assert_eq!(get(&st, "Available").last_transition_time, at(90));
    assert_eq!(get(&st, "Available").observed_generation, Some(GEN));
}

#[test]
fn first_install_before_the_revision_exists() {
    // The apply just created the first revision; the listing before it saw none.
    let d = Deprecations::default();
    let st = run(Ok(&[]), resolved("pkg.v1", "1.0.0", &d, &[]), None);
    assert_eq!(
        srm(&st, "Installed"),
        ("False", "Failed", "No bundle installed")
    );
    assert!(st.active_revisions.is_empty());
    assert_eq!(st.install, None);
    // No revision to mirror: Progressing is what it was (here: absent).
    assert!(!types(&st).contains(&"Progressing"));
}

#[test]
fn deprecation_rules_beyond_upstreams_vectors() {
    let revisions = [rev(
        "ext-1",
        1,
        "pkg.v1",
        "1.0.0",
        true,
        rolled_out("1.0.0"),
    )];
    let run_with = |d: &Deprecations, channels: &[String]| {
        run(
            Ok(&revisions),
            Resolution::Resolved {
                bundle: bundle("pkg.v2", "2.0.0"),
                image: "img",
                deprecations: d,
                channels,
                skipped: &[],
            },
            None,
        )
    };
    // An entry without a message deprecates nothing in status.
    let empty = deps(Some(""), &[("stable", "")], &[("pkg.v1", "")]);
    let st = run_with(&empty, &[]);
    for t in [
        "Deprecated",
        "PackageDeprecated",
        "ChannelDeprecated",
        "BundleDeprecated",
    ] {
        assert_eq!(get(&st, t).status, "False", "{t}");
    }
    // No channels in the spec: every deprecated channel counts (by name).
    let two = deps(
        None,
        &[("stable", "stable is old"), ("alpha", "alpha is gone")],
        &[],
    );
    let st = run_with(&two, &[]);
    assert_eq!(
        srm(&st, "ChannelDeprecated"),
        ("True", "Deprecated", "alpha is gone\nstable is old")
    );
    // Channels in the spec: only those, in the spec's order, each once.
    let chans = [
        "stable".to_string(),
        "beta".into(),
        "alpha".into(),
        "stable".into(),
    ];
    let st = run_with(&two, &chans);
    assert_eq!(
        srm(&st, "ChannelDeprecated"),
        ("True", "Deprecated", "stable is old\nalpha is gone")
    );
    // A deprecated bundle other than the installed one does not count.
    let other = deps(None, &[], &[("pkg.v0", "old")]);
    assert_eq!(
        get(&run_with(&other, &[]), "BundleDeprecated").status,
        "False"
    );
    // Rollup messages are truncated like every other.
    let long = deps(
        Some(&"p".repeat(20000)),
        &[],
        &[("pkg.v1", &"b".repeat(20000))],
    );
    let st = run_with(&long, &[]);
    let m = &get(&st, "Deprecated").message;
    assert!(m.len() <= 32768 && m.ends_with(TRUNCATION_SUFFIX));
    assert_eq!(get(&st, "PackageDeprecated").message.len(), 20000);
}

#[test]
fn resolution_not_reached_leaves_deprecation_alone() {
    let previous = ClusterExtensionStatus {
        conditions: vec![cond("Deprecated", "True", "Deprecated", "old news", 5)],
        ..Default::default()
    };
    let st = run_from(
        Some(&previous),
        Ok(&[]),
        Resolution::NotReached,
        stop(Step::Finalize, "boom", StopKind::Retrying),
    );
    assert_eq!(get(&st, "Deprecated"), &previous.conditions[0]);
}

#[test]
fn the_earliest_failure_wins() {
    let d = deps(Some("pkg deprecated"), &[], &[]);
    // A failed resolution is read even when a later stop is named; its message is used, no
    // bundle prefix is added.
    let st = run(
        Ok(&[]),
        failed("no bundles found", Some(&d)),
        stop(Step::Apply, "apply failure", StopKind::Blocked),
    );
    assert_eq!(
        srm(&st, "Progressing"),
        ("True", "Retrying", "no bundles found")
    );
    // A stop at Resolve gives the kind.
    let st = run(
        Ok(&[]),
        failed("terminal error: bad selector", None),
        stop(Step::Resolve, "ignored", StopKind::Blocked),
    );
    assert_eq!(
        srm(&st, "Progressing"),
        ("False", "Blocked", "bad selector")
    );
    // A validation stop ignores a listing error and the resolution.
    let st = run(
        Err("listing failed".into()),
        failed("x", Some(&d)),
        stop(Step::Validate, "invalid", StopKind::Retrying),
    );
    assert_eq!(types(&st), ["Installed", "Progressing"]);
    // A listing error ignores the resolution and any later stop.
    let st = run(
        Err("listing failed".into()),
        failed("x", Some(&d)),
        stop(Step::Apply, "apply", StopKind::Blocked),
    );
    assert_eq!(
        srm(&st, "Installed"),
        ("Unknown", "Failed", "listing failed")
    );
    assert!(!types(&st).contains(&"Deprecated"));
}

#[test]
fn condition_order_generation_and_time() {
    let previous = ClusterExtensionStatus {
        conditions: vec![
            cond("Custom", "True", "Mine", "kept", 1),
            cond(
                "BundleDeprecated",
                "False",
                "NotDeprecated",
                "bundle not deprecated",
                2,
            ),
            cond(
                "Installed",
                "True",
                "Succeeded",
                "Installed bundle registry.example/pkg@sha256:1.0.0 successfully",
                3,
            ),
            cond("Other", "False", "Mine", "kept too", 4),
        ],
        ..Default::default()
    };
    let revisions = [rev("ext-1", 1, "pkg", "1.0.0", true, rolled_out("1.0.0"))];
    let d = Deprecations::default();
    let st = compute(&Input {
        generation: GEN,
        // Sub-second precision is dropped: the API server keeps whole seconds.
        now: Timestamp::from_second(NOW).expect("ts") + jiff::SignedDuration::from_millis(750),
        previous: Some(&previous),
        revisions: Ok(&revisions),
        resolution: resolved("pkg", "1.0.0", &d, &[]),
        stop: None,
    });
    assert_eq!(
        types(&st),
        [
            "Installed",
            "Progressing",
            "Available",
            "Deprecated",
            "PackageDeprecated",
            "ChannelDeprecated",
            "BundleDeprecated",
            "Custom",
            "Other"
        ]
    );
    // Unchanged status: transition time kept, generation moved.
    assert_eq!(get(&st, "Installed").last_transition_time, at(3));
    assert_eq!(get(&st, "Installed").observed_generation, Some(GEN));
    assert_eq!(get(&st, "BundleDeprecated").last_transition_time, at(2));
    // New condition: now, in whole seconds.
    assert_eq!(get(&st, "Deprecated").last_transition_time, at(NOW));
    // Types this controller does not write are kept as they were.
    assert_eq!(get(&st, "Custom"), &previous.conditions[0]);
    assert_eq!(get(&st, "Other"), &previous.conditions[3]);
}

#[test]
fn untouched_conditions_keep_their_generation() {
    let previous = run(
        Ok(&[prometheus_installed(rolled_out("1.0.0"))]),
        fallback(),
        None,
    );
    let st = compute(&Input {
        generation: GEN + 1,
        now: Timestamp::from_second(NOW + 5).expect("ts"),
        previous: Some(&previous),
        revisions: Ok(&[]),
        resolution: Resolution::NotReached,
        stop: stop(Step::Finalize, "boom", StopKind::Retrying),
    });
    assert_eq!(get(&st, "Progressing").observed_generation, Some(GEN + 1));
    assert_eq!(get(&st, "Installed").observed_generation, Some(GEN));
}

#[test]
fn terminal_validation_error_loses_its_marker_before_the_prefix() {
    let st = run(
        Ok(&[]),
        Resolution::NotReached,
        stop(
            Step::Validate,
            "terminal error: bad spec",
            StopKind::Blocked,
        ),
    );
    let expected = "operation cannot proceed due to the following validation error(s): bad spec";
    assert_eq!(srm(&st, "Installed"), ("Unknown", "Failed", expected));
    assert_eq!(srm(&st, "Progressing"), ("False", "Blocked", expected));
}

/// `boxcutter_reconcile_steps.go` `BoxcutterRevisionStatesGetter.GetRevisionStates`: archived
/// sets are skipped, the rest sorted by revision, the bundle read from annotations.
#[test]
fn revision_states_from_object_sets() {
    use olm_api::{
        ClusterObjectSet, ClusterObjectSetSpec, ClusterObjectSetStatus, CollisionProtection,
        LifecycleState,
    };
    use olm_extension::status::revision_states;
    let set = |name: &str,
               revision: i64,
               state: LifecycleState,
               annotations: &[(&str, &str)],
               conditions: Vec<Condition>| {
        let mut s = ClusterObjectSet::new(
            name,
            ClusterObjectSetSpec {
                lifecycle_state: state,
                revision,
                phases: vec![],
                collision_protection: CollisionProtection::Prevent,
                progress_deadline_minutes: None,
                progression_probes: vec![],
            },
        );
        s.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
        );
        s.status = Some(ClusterObjectSetStatus {
            conditions,
            observed_phases: vec![],
        });
        s
    };
    let full = [
        ("olm.operatorframework.io/bundle-name", "pkg.v2"),
        ("olm.operatorframework.io/bundle-version", "2.0.0"),
        ("olm.operatorframework.io/bundle-release", "1"),
        (
            "olm.operatorframework.io/bundle-reference",
            "quay.io/pkg@sha256:2",
        ),
    ];
    let sets = [
        set(
            "ext-3",
            3,
            LifecycleState::Active,
            &[],
            rolling("3.0.0", 30),
        ),
        set(
            "ext-1",
            1,
            LifecycleState::Archived,
            &full,
            rolled_out("1.0.0"),
        ),
        set(
            "ext-2",
            2,
            LifecycleState::Active,
            &full,
            rolled_out("2.0.0"),
        ),
        // Succeeded present but not True: still rolling out.
        set(
            "ext-4",
            4,
            LifecycleState::Active,
            &[],
            vec![cond("Succeeded", "False", "RollingOut", "", 40)],
        ),
    ];
    let states = revision_states(&sets);
    assert_eq!(
        states
            .iter()
            .map(|r| (r.name.as_str(), r.revision, r.succeeded))
            .collect::<Vec<_>>(),
        [("ext-2", 2, true), ("ext-3", 3, false), ("ext-4", 4, false)]
    );
    assert_eq!(
        states[0].bundle,
        BundleMetadata {
            name: "pkg.v2".into(),
            version: "2.0.0".into(),
            release: Some("1".into()),
        }
    );
    assert_eq!(states[0].image, "quay.io/pkg@sha256:2");
    assert_eq!(states[0].conditions, rolled_out("2.0.0"));
    assert_eq!(states[1].bundle, bundle("", ""));
    assert_eq!(states[1].image, "");
}

/// `clusterextension_reconcile_steps.go` `UnpackBundle`: a pull failure is tolerated only for
/// the installed bundle, compared by name and version.
#[test]
fn pull_failure_is_tolerated_only_for_the_installed_bundle() {
    use olm_extension::status::is_installed_bundle;
    let revisions = [
        rev("ext-1", 1, "pkg.v1", "1.0.0", true, rolled_out("1.0.0")),
        rev("ext-2", 2, "pkg.v2", "2.0.0", false, rolling("2.0.0", 20)),
    ];
    assert!(is_installed_bundle(&bundle("pkg.v1", "1.0.0"), &revisions));
    assert!(!is_installed_bundle(&bundle("pkg.v1", "1.0.1"), &revisions));
    assert!(!is_installed_bundle(&bundle("pkg.v2", "2.0.0"), &revisions));
    assert!(!is_installed_bundle(
        &bundle("pkg.v1", "1.0.0"),
        &revisions[1..]
    ));
    let mut released = bundle("pkg.v1", "1.0.0");
    released.release = Some("3".into());
    assert!(
        is_installed_bundle(&released, &revisions),
        "release is not compared"
    );
}

/// A revision created in the reconcile that writes the status (no conditions of its own yet)
/// is rolling out: `Progressing` must not keep the previous revision's "has rolled out" for the
/// new generation, or a client waiting on the new generation would take it for done.
#[test]
fn a_revision_without_status_yet_is_rolling_out() {
    let deprecations = deps(None, &[], &[]);
    let before = run(
        Ok(&[rev(
            "ce-1",
            1,
            "b.v1.0.0",
            "1.0.0",
            true,
            rolled_out("1.0.0"),
        )]),
        resolved("b.v1.0.0", "1.0.0", &deprecations, &[]),
        None,
    );
    assert_eq!(
        srm(&before, "Progressing"),
        ("True", "Succeeded", "Revision 1.0.0 has rolled out.")
    );
    let revisions = [
        rev("ce-1", 1, "b.v1.0.0", "1.0.0", true, rolled_out("1.0.0")),
        rev("ce-2", 2, "b.v1.1.0", "1.1.0", false, vec![]),
    ];
    let after = run_from(
        Some(&before),
        Ok(&revisions),
        resolved("b.v1.1.0", "1.1.0", &deprecations, &[]),
        None,
    );
    assert_eq!(
        srm(&after, "Progressing"),
        ("True", "RollingOut", "Revision 1.1.0 is rolling out.")
    );
    assert_eq!(srm(&after, "Installed").0, "True");
    invariants(&after);
}

/// olm's own `CatalogsSkipped` (upstream fails the resolution while a selected catalog is not
/// served): set while a resolution skipped catalogs serving nothing, naming each and why;
/// removed once one skips none or falls back; kept while catalogs are not consulted.
#[test]
fn skipped_catalogs_are_named_until_they_serve() {
    let revisions = [rev(
        "ext-1",
        1,
        "pkg.v1",
        "1.0.0",
        true,
        rolled_out("1.0.0"),
    )];
    let d = Deprecations::default();
    let skipped = [
        Skipped {
            catalog: "community".into(),
            reason: "source catalog content: manifest unknown".into(),
        },
        Skipped {
            catalog: "new".into(),
            reason: "nothing unpacked yet".into(),
        },
    ];
    let named = "catalog \"community\" was skipped (not serving: source catalog content: manifest unknown); catalog \"new\" was skipped (not serving: nothing unpacked yet)";
    fn with<'a>(d: &'a Deprecations, skipped: &'a [Skipped]) -> Resolution<'a> {
        Resolution::Resolved {
            bundle: bundle("pkg.v1", "1.0.0"),
            image: "img",
            deprecations: d,
            channels: &[],
            skipped,
        }
    }

    let first = run(Ok(&revisions), with(&d, &skipped), None);
    assert_eq!(
        srm(&first, "CatalogsSkipped"),
        ("True", "NotServing", named)
    );
    assert_eq!(
        get(&first, "CatalogsSkipped").observed_generation,
        Some(GEN)
    );
    assert_eq!(
        types(&first).last(),
        Some(&"CatalogsSkipped"),
        "after upstream's"
    );
    assert_eq!(
        srm(&first, "Installed").0,
        "True",
        "a skipped catalog does not hold back what the others resolve"
    );

    // Catalogs not consulted: the condition stays as it was.
    let rolling_on = run_from(
        Some(&first),
        Ok(&revisions),
        Resolution::SkippedRollingOut,
        None,
    );
    assert_eq!(srm(&rolling_on, "CatalogsSkipped").2, named);

    // A failed resolution names them too (its message says the same for Progressing).
    let failed = run(
        Ok(&revisions),
        Resolution::Failed {
            message: format!("package \"pkg\" was not found in the serving catalogs; {named}"),
            deprecations: None,
            channels: &[],
            skipped: &skipped,
        },
        None,
    );
    assert_eq!(
        srm(&failed, "CatalogsSkipped"),
        ("True", "NotServing", named)
    );
    assert_eq!(
        srm(&failed, "Progressing"),
        (
            "True",
            "Retrying",
            format!("package \"pkg\" was not found in the serving catalogs; {named}").as_str()
        )
    );

    // Once every catalog serves, or in fallback, the condition goes.
    for (what, resolution) in [("resolved", with(&d, &[])), ("fallback", fallback())] {
        let after = run_from(Some(&first), Ok(&revisions), resolution, None);
        assert!(
            !types(&after).contains(&"CatalogsSkipped"),
            "{what}: {:?}",
            types(&after)
        );
    }
}
