//! Upstream's CSV sync vectors (OLM repo `pkg/controller/operators/olm/operator_test.go`):
//! every case of `TestTransitionCSV` and `TestTransitionCSVFailForward`, and the CSVs of
//! `TestSyncOperatorGroups`, one row per CSV sync, in upstream's order. Each row holds what the
//! case's cluster objects give [`check`] (the CSV's namespace's groups, the CSV's annotations,
//! install modes and provided APIs) and [`next`] (the [`Facts`] of the CSV's phase), and the
//! outcome upstream expects, keyed by upstream's case name.
//!
//! Reading the fixtures:
//!
//! - `TestTransitionCSV` builds all its cases around one shared OperatorGroup object whose
//!   `olm.providedAPIs` annotation each case overwrites while the table is built, so every case
//!   runs with the last value written, `c1.v1.g1,a1Kind.v1.a1` ([`SHARED_GROUP_APIS`]): the
//!   CSVs' own APIs are always a subset of it.
//! - `TestTransitionCSV` asserts only existence, `status.reason` (when given) and the sync
//!   error; the phases in its table are not checked. Rows assert what `operator.go` decides for
//!   the objects; where that differs from a declared phase the row says so.
//! - Cases that replace the API reconciler with a fixed answer get groups whose real
//!   reconciliation gives that answer (an intersecting group in `other-ns` providing `c1`).
//! - The sync error upstream returns is a retry here: `retry` of [`Step::Set`] and
//!   [`Verdict::Fail`], [`Step::Error`], [`Verdict::Error`].

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use olm_k8s::LabelSelector;
use olm_v0::olm_operator::membership::{Csv, Group, Verdict, check, target_namespaces};
use olm_v0::olm_operator::status::CsvStatus;
use olm_v0::olm_operator::transition::{Facts, InstallStatus, Step, StrategyProblem, next};
use olm_v0::{ApiSet, InstallMode, OperatorGroupView};
use olm_v0_api::v1alpha1::{ClusterServiceVersionPhase as Phase, ConditionReason as Reason};

const NS: &str = "ns";
/// The shared group's `olm.providedAPIs` as every `TestTransitionCSV` case sees it.
const SHARED_GROUP_APIS: &str = "c1.v1.g1,a1Kind.v1.a1";
/// The owned CRD `c1.g1` (version v1, kind c1).
const C1: &str = "c1.v1.g1";
/// The owned APIService `v1.a1` (kind a1Kind).
const A1: &str = "a1Kind.v1.a1";
const C1_A1: &str = "c1.v1.g1,a1Kind.v1.a1";
/// Provides nothing (required APIs only, or none).
const NOTHING: &str = "";

/// An OperatorGroup of the CSV's namespace.
#[derive(Clone)]
struct Og {
    name: &'static str,
    namespace: &'static str,
    status: Option<Vec<String>>,
    apis: Option<String>,
    static_apis: bool,
    selects_nothing: bool,
}

impl Og {
    fn group(&self) -> Group<'_> {
        Group {
            name: self.name,
            namespace: self.namespace,
            status_namespaces: self.status.as_deref(),
            provided_apis: self.apis.as_deref(),
            static_provided_apis: self.static_apis,
            selects_nothing: self.selects_nothing,
        }
    }
}

/// `TestTransitionCSV`'s group `default`: targets its own namespace.
fn default_group() -> Og {
    Og {
        name: "default",
        namespace: NS,
        status: Some(vec![NS.to_owned()]),
        apis: Some(SHARED_GROUP_APIS.to_owned()),
        static_apis: false,
        selects_nothing: false,
    }
}

fn with_apis(apis: Option<&str>, og: Og) -> Og {
    Og {
        apis: apis.map(str::to_owned),
        ..og
    }
}

fn static_group(apis: &str) -> Og {
    Og {
        static_apis: true,
        ..with_apis(Some(apis), default_group())
    }
}

/// A group elsewhere watching every namespace and providing `c1`: it intersects `default`.
fn provider_of_c1() -> Vec<OperatorGroupView> {
    vec![OperatorGroupView::new(
        "other",
        "other-ns",
        &[String::new()],
        Some(C1),
    )]
}

/// One CSV as a sync sees it.
#[derive(Clone)]
struct CsvIn {
    name: &'static str,
    namespace: &'static str,
    annotations: BTreeMap<String, String>,
    modes: Vec<InstallMode>,
    provides: ApiSet,
    facts: Facts,
}

impl CsvIn {
    fn with(mut self, f: impl FnOnce(&mut Facts)) -> CsvIn {
        f(&mut self.facts);
        self
    }

    fn annotated(mut self, annotations: BTreeMap<String, String>) -> CsvIn {
        self.annotations = annotations;
        self
    }
}

fn annotations(group: &str, namespace: &str, targets: Option<&str>) -> BTreeMap<String, String> {
    let mut a = BTreeMap::from([
        ("olm.operatorGroup".to_owned(), group.to_owned()),
        ("olm.operatorNamespace".to_owned(), namespace.to_owned()),
    ]);
    if let Some(t) = targets {
        a.insert("olm.targetNamespaces".to_owned(), t.to_owned());
    }
    a
}

fn modes(list: &[(&str, bool)]) -> Vec<InstallMode> {
    list.iter()
        .map(|(t, s)| InstallMode {
            type_: (*t).into(),
            supported: *s,
        })
        .collect()
}

/// Upstream's CSV fixture: the four install modes supported, annotated for group `default`;
/// `None` for upstream's empty phase.
fn csv(name: &'static str, phase: impl Into<Option<Phase>>, provides: &str) -> CsvIn {
    CsvIn {
        name,
        namespace: NS,
        annotations: annotations("default", NS, Some(NS)),
        modes: modes(&[
            ("OwnNamespace", true),
            ("SingleNamespace", true),
            ("MultiNamespace", true),
            ("AllNamespaces", true),
        ]),
        provides: ApiSet::parse_annotation(provides),
        facts: Facts {
            phase: phase.into(),
            ..Facts::default()
        },
    }
}

fn healthy() -> InstallStatus {
    InstallStatus {
        strategy: None,
        apiservices: Ok(true),
        webhooks: Ok(true),
    }
}

/// No Deployment of that name carries the CSV's owner labels.
fn missing(deployment: &str) -> InstallStatus {
    InstallStatus {
        strategy: Some(StrategyProblem::Waiting(format!(
            "missing deployment with name={deployment}"
        ))),
        ..healthy()
    }
}

/// Requirements met and the CSV's deployments healthy.
fn running(f: &mut Facts) {
    f.requirements = Some(Ok(true));
    f.install_status = Some(healthy());
}

/// The owned APIService `v1.a1` with every generated resource in place but the deployment
/// `a1` not labelled as the CSV's, and its serving certificate due.
fn apiservice_due(f: &mut Facts) {
    f.requirements = Some(Ok(true));
    f.cert_rotation_due = true;
    f.install_status = Some(missing("a1"));
}

/// The fixtures that name the Service of `v1.a1` `v1-a1` (or `a1`) where OLM looks for
/// `a1-service`; the serving secret OLM looks for is missing too.
fn service_missing(f: &mut Facts) {
    f.apiservice_resources = Some((r#"service "a1-service" not found"#.to_owned(), true));
    f.cert_rotation_due = true;
    f.requirements = Some(Ok(true));
    f.deployment_unbuildable = true;
    f.install_status = Some(missing("a1"));
}

/// What a sync does, comparable.
#[derive(Debug, PartialEq)]
enum Seen {
    /// Status (phase, reason, message) set; `true` when the sync also fails and is retried.
    Set(Phase, Reason, String, bool),
    /// The membership checks end the sync.
    Verdict(Verdict),
    Wait,
    Delete,
    Error(String),
    Other(String),
}

fn set(phase: Phase, reason: Reason, message: &str) -> Seen {
    Seen::Set(phase, reason, message.to_owned(), false)
}

fn retried(phase: Phase, reason: Reason, message: &str) -> Seen {
    Seen::Set(phase, reason, message.to_owned(), true)
}

fn fails(reason: Reason, message: &str, delete_deployments: bool, retry: bool) -> Seen {
    Seen::Verdict(Verdict::Fail {
        reason,
        message: message.to_owned(),
        delete_deployments,
        retry,
    })
}

fn annotate(annotations: BTreeMap<String, String>, then_fail: bool) -> Seen {
    Seen::Verdict(Verdict::Annotate {
        annotations,
        then_fail,
    })
}

fn seen(step: Step) -> Seen {
    match step {
        Step::Set {
            phase,
            reason,
            message,
            retry,
            ..
        } => Seen::Set(phase, reason, message, retry),
        Step::Wait => Seen::Wait,
        Step::Delete => Seen::Delete,
        Step::Error(e) => Seen::Error(e),
        other => Seen::Other(format!("{other:?}")),
    }
}

/// One sync of one CSV: the membership checks, then the phase machine. For `Install` the shell
/// installs and decides again; upstream's fake clients accept every object, so the install
/// succeeds.
fn sync(groups: &[Og], others: &[OperatorGroupView], c: &CsvIn) -> Seen {
    let groups: Vec<Group<'_>> = groups.iter().map(Og::group).collect();
    let membership = Csv {
        namespace: c.namespace,
        annotations: &c.annotations,
        install_modes: &c.modes,
        provided_apis: &c.provides,
        reason: c.facts.reason.as_ref(),
    };
    match check(&membership, &groups, others) {
        Verdict::Member => {}
        v => return Seen::Verdict(v),
    }
    match next(&c.facts) {
        Step::Install => seen(next(&Facts {
            install_outcome: Some(Ok(())),
            ..c.facts.clone()
        })),
        step => seen(step),
    }
}

struct Case {
    name: &'static str,
    groups: Vec<Og>,
    others: Vec<OperatorGroupView>,
    syncs: Vec<(CsvIn, Seen)>,
}

fn case(name: &'static str, syncs: Vec<(CsvIn, Seen)>) -> Case {
    Case {
        name,
        groups: vec![default_group()],
        others: vec![],
        syncs,
    }
}

fn run(cases: &[Case]) {
    for c in cases {
        for (csv, want) in &c.syncs {
            assert_eq!(
                &sync(&c.groups, &c.others, csv),
                want,
                "{} / {}",
                c.name,
                csv.name
            );
        }
    }
}

const NOT_YET_CHECKED: &str = "requirements not yet checked";
const NOT_FOUND: &str = "one or more requirements couldn't be found";
const NOT_MET: &str = "requirements not met";
const ALL_MET: &str = "all requirements found, attempting install";
const WAITING: &str = "waiting for install components to report healthy";
const COMPLETED: &str = "install strategy completed with no errors";
const MODES_NOW_SUPPORT: &str = "InstallModes now support target namespaces";
const REPLACED: &str =
    "has been replaced by a newer ClusterServiceVersion that has successfully installed.";
const NO_REPLACEMENT: &str = "marked as replacement, but no replacement CSV found in cluster";
const INTERSECTING: &str = "intersecting operatorgroups provide the same apis";
const STATIC: &str = "static provided api operatorgroup cannot be modified by these apis";

fn transition_csv_cases() -> Vec<Case> {
    use Phase::{Deleting, Failed, InstallReady, Installing, Pending, Replacing, Succeeded};
    use Reason::*;
    let service_missing_case = |name| {
        case(
            name,
            vec![(
                csv("csv1", Succeeded, C1_A1).with(service_missing),
                set(
                    Failed,
                    ApiServiceResourceIssue,
                    r#"service "a1-service" not found"#,
                ),
            )],
        )
    };
    let previously = |name, reason| {
        case(
            name,
            vec![(
                csv("csv1", Failed, C1).with(|f| {
                    f.reason = Some(reason);
                    f.requirements = Some(Ok(true));
                    f.install_status = Some(missing("a1"));
                }),
                set(Pending, RequirementsUnknown, MODES_NOW_SUPPORT),
            )],
        )
    };
    let installed_csv2 = || {
        (
            csv("csv2", Succeeded, C1).with(running),
            set(Succeeded, InstallSucceeded, COMPLETED),
        )
    };
    let csv3_running = || {
        (
            csv("csv3", Succeeded, C1).with(running),
            set(Succeeded, InstallSucceeded, COMPLETED),
        )
    };
    vec![
        case(
            "SingleCSVNoneToPending/CRD",
            vec![(
                csv("csv1", None, C1),
                set(Pending, RequirementsUnknown, NOT_YET_CHECKED),
            )],
        ),
        case(
            "SingleCSVNoneToPending/APIService/Required",
            vec![(
                csv("csv1", None, NOTHING),
                set(Pending, RequirementsUnknown, NOT_YET_CHECKED),
            )],
        ),
        // A cluster permission rule naming both resources and non-resource URLs.
        case(
            "SingleCSVPendingToFailed/BadStrategyPermissions",
            vec![(
                csv("csv1", Pending, C1).with(|f| {
                    f.requirements = Some(Err(
                        "rule invalid: rule cannot apply to both regular resources and non-resource URLs".into(),
                    ));
                }),
                set(
                    Failed,
                    InvalidInstallStrategy,
                    "install strategy invalid: rule invalid: rule cannot apply to both regular resources and non-resource URLs",
                ),
            )],
        ),
        case(
            "SingleCSVPendingToPending/CRD",
            vec![(
                csv("csv1", Pending, C1).with(|f| f.requirements = Some(Ok(false))),
                retried(Pending, RequirementsNotMet, NOT_FOUND),
            )],
        ),
        case(
            "SingleCSVPendingToPending/APIService/Required/Missing",
            vec![(
                csv("csv1", Pending, NOTHING).with(|f| f.requirements = Some(Ok(false))),
                retried(Pending, RequirementsNotMet, NOT_FOUND),
            )],
        ),
        case(
            "SingleCSVPendingToPending/APIService/Required/Unavailable",
            vec![(
                csv("csv1", Pending, NOTHING).with(|f| f.requirements = Some(Ok(false))),
                retried(Pending, RequirementsNotMet, NOT_FOUND),
            )],
        ),
        case(
            "SingleCSVPendingToPending/APIService/Required/Unknown",
            vec![(
                csv("csv1", Pending, NOTHING).with(|f| f.requirements = Some(Ok(false))),
                retried(Pending, RequirementsNotMet, NOT_FOUND),
            )],
        ),
        // The owned APIService names deployment `a1`; the strategy has only `b1`.
        case(
            "SingleCSVPendingToPending/APIService/Owned/DeploymentNotFound",
            vec![(
                csv("csv1", Pending, C1_A1).with(|f| f.requirements = Some(Ok(false))),
                retried(Pending, RequirementsNotMet, NOT_FOUND),
            )],
        ),
        case(
            "CSVPendingToFailed/CRDOwnerConflict",
            vec![
                (
                    csv("csv1", Succeeded, C1).with(running),
                    set(Succeeded, InstallSucceeded, COMPLETED),
                ),
                (
                    csv("csv2", Pending, C1).with(|f| {
                        f.requirements = Some(Ok(true));
                        f.owner_conflict = Some("conflicting CRD owner in namespace".into());
                    }),
                    retried(Failed, OwnerConflict, "conflicting CRD owner in namespace"),
                ),
            ],
        ),
        // csv1 is declared Succeeded (unchecked); its fixture names the Service `a1`, so OLM
        // finds no `a1-service` and fails it first.
        case(
            "CSVPendingToFailed/APIServiceOwnerConflict",
            vec![
                (
                    csv("csv1", Succeeded, A1).with(|f| {
                        // Its serving secret and labelled deployment do exist.
                        service_missing(f);
                        f.deployment_unbuildable = false;
                        f.install_status = Some(healthy());
                    }),
                    set(
                        Failed,
                        ApiServiceResourceIssue,
                        r#"service "a1-service" not found"#,
                    ),
                ),
                (
                    csv("csv2", Pending, A1).with(|f| {
                        f.requirements = Some(Ok(true));
                        f.owner_conflict = Some("unable to adopt APIService".into());
                    }),
                    retried(Failed, OwnerConflict, "unable to adopt APIService"),
                ),
            ],
        ),
        case(
            "SingleCSVFailedToPending/Deployment",
            vec![(
                csv("csv1", Failed, C1).with(|f| {
                    f.requirements = Some(Ok(true));
                    f.install_status = Some(missing("a1"));
                }),
                set(
                    Pending,
                    NeedsReinstall,
                    "installing: missing deployment with name=a1",
                ),
            )],
        ),
        case(
            "SingleCSVFailedToPending/CRD",
            vec![(
                csv("csv1", Failed, C1).with(|f| {
                    f.requirements = Some(Ok(false));
                    f.install_status = Some(missing("a1"));
                }),
                set(Pending, RequirementsNotMet, NOT_MET),
            )],
        ),
        case(
            "SingleCSVPendingToInstallReady/CRD",
            vec![(
                csv("csv1", Pending, C1).with(|f| f.requirements = Some(Ok(true))),
                set(InstallReady, AllRequirementsMet, ALL_MET),
            )],
        ),
        case(
            "SingleCSVPendingToInstallReady/APIService/Required",
            vec![(
                csv("csv1", Pending, NOTHING).with(|f| f.requirements = Some(Ok(true))),
                set(InstallReady, AllRequirementsMet, ALL_MET),
            )],
        ),
        case(
            "SingleCSVInstallReadyToInstalling",
            vec![(
                csv("csv1", InstallReady, C1),
                set(Installing, InstallSucceeded, WAITING),
            )],
        ),
        case(
            "SingleCSVInstallReadyToInstalling/APIService/Owned",
            vec![(
                csv("csv1", InstallReady, C1_A1),
                set(Installing, InstallSucceeded, WAITING),
            )],
        ),
        case(
            "SingleCSVSucceededToPending/APIService/Owned/CertRotation",
            vec![(
                csv("csv1", Succeeded, C1_A1).with(apiservice_due),
                set(
                    Pending,
                    NeedsCertRotation,
                    "CSV owns resources that require a cert refresh",
                ),
            )],
        ),
        // The five fixtures below all name the Service `v1-a1`: the missing `a1-service`
        // fails them before any CA or certificate check.
        service_missing_case("SingleCSVSucceededToFailed/APIService/Owned/BadCAHash/Deployment"),
        service_missing_case("SingleCSVSucceededToFailed/APIService/Owned/BadCAHash/Secret"),
        service_missing_case(
            "SingleCSVSucceededToFailed/APIService/Owned/BadCAHash/DeploymentAndSecret",
        ),
        service_missing_case("SingleCSVSucceededToFailed/APIService/Owned/BadCA"),
        service_missing_case("SingleCSVSucceededToFailed/APIService/Owned/BadServingCert"),
        // Declared Failed (unchecked); the expired CA makes the certificate due, as the reason
        // upstream checks says.
        case(
            "SingleCSVSucceededToFailed/APIService/Owned/ExpiredCA",
            vec![(
                csv("csv1", Succeeded, C1_A1).with(apiservice_due),
                set(
                    Pending,
                    NeedsCertRotation,
                    "CSV owns resources that require a cert refresh",
                ),
            )],
        ),
        case(
            "SingleCSVFailedToPending/APIService/Owned/ExpiredCA",
            vec![(
                csv("csv1", Failed, C1_A1).with(apiservice_due),
                set(
                    Pending,
                    NeedsCertRotation,
                    "owned APIServices need cert refresh",
                ),
            )],
        ),
        previously(
            "SingleCSVFailedToPending/InstallModes/Owned/PreviouslyUnsupported",
            UnsupportedOperatorGroup,
        ),
        previously(
            "SingleCSVFailedToPending/InstallModes/Owned/PreviouslyNoOperatorGroups",
            NoOperatorGroup,
        ),
        previously(
            "SingleCSVFailedToPending/InstallModes/Owned/PreviouslyTooManyOperatorGroups",
            TooManyOperatorGroups,
        ),
        case(
            "SingleCSVSucceededToFailed/InstallModes/Owned/Unsupported",
            vec![(
                CsvIn {
                    modes: modes(&[("SingleNamespace", false)]),
                    ..csv("csv1", Succeeded, C1).with(|f| {
                        f.reason = Some(InstallSucceeded);
                        running(f);
                    })
                },
                fails(
                    UnsupportedOperatorGroup,
                    "OwnNamespace InstallModeType not supported, cannot configure to watch own namespace",
                    false,
                    false,
                ),
            )],
        ),
        Case {
            groups: vec![],
            ..case(
                "SingleCSVSucceededToFailed/InstallModes/Owned/NoOperatorGroups",
                vec![(
                    csv("csv1", Succeeded, C1).with(|f| f.reason = Some(InstallSucceeded)),
                    fails(
                        NoOperatorGroup,
                        "csv in namespace with no operatorgroups",
                        false,
                        true,
                    ),
                )],
            )
        },
        Case {
            groups: vec![
                default_group(),
                Og {
                    name: "default-2",
                    apis: None,
                    ..default_group()
                },
            ],
            ..case(
                "SingleCSVSucceededToFailed/InstallModes/Owned/TooManyOperatorGroups",
                vec![(
                    csv("csv1", Succeeded, C1).with(|f| f.reason = Some(InstallSucceeded)),
                    fails(
                        TooManyOperatorGroups,
                        "csv created in namespace with multiple operatorgroups, can't pick one automatically",
                        false,
                        true,
                    ),
                )],
            )
        },
        // The group now targets a second namespace: the CSV is annotated again and its
        // status left as it is.
        Case {
            groups: vec![Og {
                status: Some(vec![NS.to_owned(), "new-namespace".to_owned()]),
                apis: None,
                ..default_group()
            }],
            ..case(
                "SingleCSVSucceededToSucceeded/OperatorGroupChanged",
                vec![(
                    csv("csv1", Succeeded, C1).with(|f| {
                        f.reason = Some(InstallSucceeded);
                        running(f);
                    }),
                    annotate(
                        annotations("default", NS, Some("new-namespace,ns")),
                        false,
                    ),
                )],
            )
        },
        case(
            "SingleCSVInstallingToSucceeded/UnmanagedDeploymentNotAffected",
            vec![(
                csv("csv1", Installing, C1).with(|f| f.install_status = Some(healthy())),
                set(Succeeded, InstallSucceeded, COMPLETED),
            )],
        ),
        // Declared InstallReady (unchecked): the fixture's deployment carries a bad spec hash
        // but no owner labels, so OLM does not find it and keeps waiting.
        case(
            "SingleCSVInstallingToInstallReady",
            vec![(
                csv("csv1", Installing, NOTHING).with(|f| f.install_status = Some(missing("csv1-dep1"))),
                set(
                    Installing,
                    InstallWaiting,
                    "installing: missing deployment with name=csv1-dep1",
                ),
            )],
        ),
        // Declared InstallReady (unchecked): as above, a deployment without owner labels.
        case(
            "SingleCSVInstallingToInstallReadyDueToAnnotations",
            vec![(
                csv("csv1", Installing, NOTHING).with(|f| f.install_status = Some(missing("csv1-dep1"))),
                set(
                    Installing,
                    InstallWaiting,
                    "installing: missing deployment with name=csv1-dep1",
                ),
            )],
        ),
        case(
            "SingleCSVSucceededToSucceeded/UnmanagedDeploymentInNamespace",
            vec![(
                csv("csv1", Succeeded, C1).with(|f| {
                    f.reason = Some(InstallSucceeded);
                    running(f);
                }),
                set(Succeeded, InstallSucceeded, COMPLETED),
            )],
        ),
        // Neither the CRD nor the APIService exists; the APIService check comes first.
        case(
            "SingleCSVSucceededToFailed/CRD",
            vec![(
                csv("csv1", Succeeded, C1_A1).with(|f| {
                    f.apiservice_resources = Some((
                        r#"apiservice.apiregistration.k8s.io "v1.a1" not found"#.into(),
                        true,
                    ));
                    f.cert_rotation_due = true;
                    f.requirements = Some(Ok(false));
                    f.deployment_unbuildable = true;
                    f.install_status = Some(InstallStatus {
                        apiservices: Ok(false),
                        ..missing("a1")
                    });
                }),
                set(
                    Failed,
                    ApiServiceResourceIssue,
                    r#"apiservice.apiregistration.k8s.io "v1.a1" not found"#,
                ),
            )],
        ),
        // Declared Pending (unchecked): the CSV gained an annotation its deployment's pod
        // template lacks, so the deployment is applied again.
        case(
            "SingleCSVSucceededToPending/DeploymentSpecChanged",
            vec![(
                csv("csv1", Succeeded, C1)
                    .annotated({
                        let mut a = annotations("default", NS, Some(NS));
                        a.insert("new".into(), "annotation".into());
                        a
                    })
                    .with(|f| {
                        f.reason = Some(InstallSucceeded);
                        f.requirements = Some(Ok(true));
                        f.install_status = Some(InstallStatus {
                            strategy: Some(StrategyProblem::Reinstall(
                                "annotations on deployment does not contain expected key: new"
                                    .into(),
                            )),
                            ..healthy()
                        });
                    }),
                set(
                    InstallReady,
                    ComponentUnhealthy,
                    "installing: annotations on deployment does not contain expected key: new",
                ),
            )],
        ),
        case(
            "CSVSucceededToReplacing",
            vec![
                (
                    csv("csv1", Succeeded, C1).with(|f| {
                        f.replacement = Some(("csv2".into(), None));
                        f.requirements = Some(Ok(true));
                        f.install_status = Some(missing("csv1-dep1"));
                    }),
                    set(Replacing, BeingReplaced, "being replaced by csv: csv2"),
                ),
                (
                    csv("csv2", None, C1),
                    set(Pending, RequirementsUnknown, NOT_YET_CHECKED),
                ),
            ],
        ),
        case(
            "CSVReplacingToDeleted",
            vec![
                (
                    csv("csv1", Replacing, C1)
                        .with(|f| f.replacement = Some(("csv2".into(), Some(Succeeded)))),
                    set(Deleting, Replaced, REPLACED),
                ),
                installed_csv2(),
            ],
        ),
        case(
            "CSVDeletedToGone",
            vec![(csv("csv1", Deleting, C1), Seen::Delete), installed_csv2()],
        ),
        // Synced newest first: csv1 waits for csv2 to finish, csv2 for csv1 to go.
        case(
            "CSVMultipleReplacingToDeleted",
            vec![
                csv3_running(),
                (
                    csv("csv1", Replacing, C1)
                        .with(|f| f.replacement = Some(("csv2".into(), Some(Replacing)))),
                    Seen::Wait,
                ),
                (
                    csv("csv2", Replacing, C1).with(|f| {
                        f.replaces_existing = true;
                        f.replacement = Some(("csv3".into(), Some(Succeeded)));
                    }),
                    Seen::Wait,
                ),
            ],
        ),
        // csv1 is deleted before csv2 syncs, so csv2 is the oldest of the chain.
        case(
            "CSVMultipleDeletedToGone",
            vec![
                csv3_running(),
                (csv("csv1", Deleting, C1), Seen::Delete),
                (
                    csv("csv2", Replacing, C1)
                        .with(|f| f.replacement = Some(("csv3".into(), Some(Succeeded)))),
                    set(Deleting, Replaced, REPLACED),
                ),
            ],
        ),
        case(
            "CSVMultipleDeletedToGone/AfterOneDeleted",
            vec![
                (
                    csv("csv2", Replacing, C1)
                        .with(|f| f.replacement = Some(("csv3".into(), Some(Succeeded)))),
                    set(Deleting, Replaced, REPLACED),
                ),
                csv3_running(),
            ],
        ),
        case(
            "CSVMultipleDeletedToGone/AfterTwoDeleted",
            vec![(csv("csv2", Deleting, C1), Seen::Delete), csv3_running()],
        ),
        // Upstream fixes the reconciler's answer at APIConflict.
        Case {
            groups: vec![with_apis(None, default_group())],
            others: provider_of_c1(),
            ..case(
                "SingleCSVNoneToFailed/InterOperatorGroupOwnerConflict",
                vec![(
                    csv("csv1", None, C1),
                    fails(InterOperatorGroupOwnerConflict, INTERSECTING, true, false),
                )],
            )
        },
        // Upstream fixes the answer at AddAPIs; the group's annotation gains `c1`.
        Case {
            groups: vec![with_apis(Some(A1), default_group())],
            ..case(
                "SingleCSVNoneToNone/AddAPIs",
                vec![(
                    csv("csv1", None, C1),
                    Seen::Verdict(Verdict::SetGroupApis(
                        "a1Kind.v1.a1,c1.v1.g1".into(),
                    )),
                )],
            )
        },
        // Upstream fixes the answer at RemoveAPIs; the group's annotation loses `c1`.
        Case {
            others: provider_of_c1(),
            ..case(
                "SingleCSVNoneToNone/RemoveAPIs",
                vec![(
                    csv("csv1", None, C1),
                    Seen::Verdict(Verdict::SetGroupApis(A1.into())),
                )],
            )
        },
        Case {
            groups: vec![static_group(A1)],
            ..case(
                "SingleCSVNoneToFailed/StaticOperatorGroup/AddAPIs",
                vec![(
                    csv("csv1", None, C1),
                    fails(CannotModifyStaticOperatorGroupProvidedApis, STATIC, true, false),
                )],
            )
        },
        Case {
            groups: vec![static_group(SHARED_GROUP_APIS)],
            others: provider_of_c1(),
            ..case(
                "SingleCSVNoneToFailed/StaticOperatorGroup/RemoveAPIs",
                vec![(
                    csv("csv1", None, C1),
                    fails(CannotModifyStaticOperatorGroupProvidedApis, STATIC, true, false),
                )],
            )
        },
        Case {
            groups: vec![static_group(SHARED_GROUP_APIS)],
            ..case(
                "SingleCSVNoneToPending/StaticOperatorGroup/NoAPIConflict",
                vec![(
                    csv("csv1", None, C1),
                    set(Pending, RequirementsUnknown, NOT_YET_CHECKED),
                )],
            )
        },
        // Upstream's helper sets the Failed CSV's reason on a copy and returns the original, so
        // this and the next four cases run with no reason; no CRD exists.
        case(
            "SingleCSVFailedToPending/InterOperatorGroupOwnerConflict/NoAPIConflict",
            vec![(
                csv("csv1", Failed, C1).with(|f| f.requirements = Some(Ok(false))),
                set(Pending, RequirementsNotMet, NOT_MET),
            )],
        ),
        Case {
            groups: vec![static_group(SHARED_GROUP_APIS)],
            ..case(
                "SingleCSVFailedToPending/StaticOperatorGroup/CannotModifyStaticOperatorGroupProvidedAPIs/NoAPIConflict",
                vec![(
                    csv("csv1", Failed, C1).with(|f| f.requirements = Some(Ok(false))),
                    set(Pending, RequirementsNotMet, NOT_MET),
                )],
            )
        },
        Case {
            groups: vec![with_apis(None, default_group())],
            others: provider_of_c1(),
            ..case(
                "SingleCSVFailedToFailed/InterOperatorGroupOwnerConflict/APIConflict",
                vec![(
                    csv("csv1", Failed, C1),
                    fails(InterOperatorGroupOwnerConflict, INTERSECTING, true, false),
                )],
            )
        },
        Case {
            groups: vec![static_group(A1)],
            ..case(
                "SingleCSVFailedToFailed/StaticOperatorGroup/CannotModifyStaticOperatorGroupProvidedAPIs/AddAPIs",
                vec![(
                    csv("csv1", Failed, C1),
                    fails(CannotModifyStaticOperatorGroupProvidedApis, STATIC, true, false),
                )],
            )
        },
        Case {
            groups: vec![static_group(SHARED_GROUP_APIS)],
            others: provider_of_c1(),
            ..case(
                "SingleCSVFailedToFailed/StaticOperatorGroup/CannotModifyStaticOperatorGroupProvidedAPIs/RemoveAPIs",
                vec![(
                    csv("csv1", Failed, C1),
                    fails(CannotModifyStaticOperatorGroupProvidedApis, STATIC, true, false),
                )],
            )
        },
    ]
}

#[test]
fn transition_csv() {
    let cases = transition_csv_cases();
    assert_eq!(cases.len(), 55);
    run(&cases);
}

/// With the reason upstream's helper meant to set, the same objects take the healing and
/// not-repeated paths.
#[test]
fn transition_csv_with_the_intended_reasons() {
    use Phase::{Failed, Pending};
    use Reason::*;
    let conflict =
        || csv("csv1", Failed, C1).with(|f| f.reason = Some(InterOperatorGroupOwnerConflict));
    let static_failed = || {
        csv("csv1", Failed, C1)
            .with(|f| f.reason = Some(CannotModifyStaticOperatorGroupProvidedApis))
    };
    run(&[
        case(
            "SingleCSVFailedToPending/InterOperatorGroupOwnerConflict/NoAPIConflict",
            vec![(
                conflict(),
                set(
                    Pending,
                    RequirementsUnknown,
                    "OperatorGroup no longer intersecting with conflicting owner",
                ),
            )],
        ),
        Case {
            groups: vec![static_group(SHARED_GROUP_APIS)],
            ..case(
                "SingleCSVFailedToPending/StaticOperatorGroup/CannotModifyStaticOperatorGroupProvidedAPIs/NoAPIConflict",
                vec![(
                    static_failed(),
                    set(
                        Pending,
                        RequirementsUnknown,
                        "static OperatorGroup and intersecting groups now support providedAPIs",
                    ),
                )],
            )
        },
        Case {
            groups: vec![with_apis(None, default_group())],
            others: provider_of_c1(),
            ..case(
                "SingleCSVFailedToFailed/InterOperatorGroupOwnerConflict/APIConflict",
                vec![(conflict(), Seen::Verdict(Verdict::Unchanged))],
            )
        },
        // Upstream only skips a repeat when the recorded reason is the intersecting-groups
        // conflict, so a static group's failure is written again.
        Case {
            groups: vec![static_group(A1)],
            ..case(
                "SingleCSVFailedToFailed/StaticOperatorGroup/CannotModifyStaticOperatorGroupProvidedAPIs/AddAPIs",
                vec![(
                    static_failed(),
                    fails(
                        CannotModifyStaticOperatorGroupProvidedApis,
                        STATIC,
                        true,
                        false,
                    ),
                )],
            )
        },
    ]);
}

fn fail_forward_cases() -> Vec<Case> {
    use Phase::{Failed, Pending, Replacing};
    use Reason::*;
    // `TestTransitionCSVFailForward`'s group provides `c1` and targets `ns`; its upgrade
    // strategy (`TechPreviewUnsafeFailForward` or `Default`) is what `fail_forward` carries. A
    // CSV created without annotations is annotated first and keeps its phase.
    let og = Og {
        apis: Some(C1.to_owned()),
        ..default_group()
    };
    let unannotated = |name| {
        (
            csv(name, None, C1).annotated(BTreeMap::new()),
            annotate(annotations("default", NS, Some(NS)), false),
        )
    };
    // Requirements are never met: no CRD exists and minKubeVersion is above the fake server's.
    let failed = |name, fail_forward: bool, replacement: &str| {
        csv(name, Failed, C1).with(|f| {
            f.fail_forward = fail_forward;
            f.replacement = Some((replacement.to_owned(), None));
            f.requirements = Some(Ok(false));
        })
    };
    vec![
        Case {
            groups: vec![og.clone()],
            ..case(
                "FailForwardEnabled/CSV1/FailedToReplacing",
                vec![
                    (
                        failed("csv1", true, "csv2"),
                        set(
                            Replacing,
                            BeingReplaced,
                            "Fail Forward is enabled, allowing Failed csv to be replaced by csv: csv2",
                        ),
                    ),
                    unannotated("csv2"),
                ],
            )
        },
        Case {
            groups: vec![og.clone()],
            ..case(
                "FailForwardDisabled/CSV1/FailedToPending",
                vec![
                    (
                        failed("csv1", false, "csv2"),
                        set(Pending, RequirementsNotMet, NOT_MET),
                    ),
                    unannotated("csv2"),
                ],
            )
        },
        // Failing forward, csv1 looks at the newest of its chain, csv3.
        Case {
            groups: vec![og.clone()],
            ..case(
                "FailForwardEnabled/ReplacementChain/CSV2/FailedToReplacing",
                vec![
                    (
                        csv("csv1", Replacing, C1).with(|f| {
                            f.fail_forward = true;
                            f.replacement = Some(("csv3".into(), None));
                        }),
                        Seen::Wait,
                    ),
                    (
                        failed("csv2", true, "csv3"),
                        set(
                            Replacing,
                            BeingReplaced,
                            "Fail Forward is enabled, allowing Failed csv to be replaced by csv: csv3",
                        ),
                    ),
                    unannotated("csv3"),
                ],
            )
        },
        Case {
            groups: vec![og.clone()],
            ..case(
                "FailForwardDisabled/ReplacementChain/CSV2/FailedToPending",
                vec![
                    (
                        csv("csv1", Replacing, C1)
                            .with(|f| f.replacement = Some(("csv2".into(), Some(Failed)))),
                        Seen::Wait,
                    ),
                    (
                        failed("csv2", false, "csv3"),
                        set(Pending, RequirementsNotMet, NOT_MET),
                    ),
                    unannotated("csv3"),
                ],
            )
        },
        // `spec.replaces` names the CSV itself: it replaces nothing and nothing replaces it.
        Case {
            groups: vec![og.clone()],
            ..case(
                "FailForwardEnabled/SelfReferencingCSV/NoPanicReplacementNotFound",
                vec![(
                    csv("csv1", Replacing, C1).with(|f| f.fail_forward = true),
                    Seen::Error(NO_REPLACEMENT.into()),
                )],
            )
        },
        Case {
            groups: vec![og],
            ..case(
                "FailForwardDisabled/SelfReferencingCSV/ReplacementNotFound",
                vec![(
                    csv("csv1", Replacing, C1),
                    Seen::Error(NO_REPLACEMENT.into()),
                )],
            )
        },
    ]
}

#[test]
fn transition_csv_fail_forward() {
    let cases = fail_forward_cases();
    assert_eq!(cases.len(), 6);
    run(&cases);
}

/// `TestSyncOperatorGroups`' CSV `csv1` of `operator-ns` under `operator-group-1`: the
/// annotations it ends with, and how it gets there.
mod sync_operator_groups {
    use super::*;

    const OPERATOR_NS: &str = "operator-ns";
    const GROUP: &str = "operator-group-1";
    /// Its owned CRD `c1.fake.api.group`.
    const PROVIDES: &str = "c1.v1.fake.api.group";

    fn group(status: Option<&[&str]>, selects_nothing: bool) -> Og {
        Og {
            name: GROUP,
            namespace: OPERATOR_NS,
            status: status.map(|s| s.iter().map(|n| (*n).to_owned()).collect()),
            apis: None,
            static_apis: false,
            selects_nothing,
        }
    }

    fn operator_csv(install_modes: Vec<InstallMode>) -> CsvIn {
        CsvIn {
            namespace: OPERATOR_NS,
            modes: install_modes,
            ..csv("csv1", None, PROVIDES).annotated(BTreeMap::new())
        }
    }

    fn all_modes() -> Vec<InstallMode> {
        csv("csv1", None, PROVIDES).modes
    }

    /// The first sync annotates; upstream expects exactly these annotations at the end.
    fn annotated(og: &Og, c: &CsvIn, targets: Option<&str>, then_fail: bool) -> CsvIn {
        let want = annotations(GROUP, OPERATOR_NS, targets);
        assert_eq!(
            sync(std::slice::from_ref(og), &[], c),
            annotate(want.clone(), then_fail)
        );
        c.clone().annotated(want)
    }

    /// Writes a status change as the shell does.
    fn apply(status: &mut CsvStatus, seen: &Seen) {
        let Seen::Set(phase, reason, message, _) = seen else {
            panic!("not a status change: {seen:?}");
        };
        status.set_phase(phase.clone(), reason.clone(), message, "t");
    }

    fn history(status: &CsvStatus) -> Vec<(String, String, String)> {
        status
            .conditions
            .iter()
            .map(|c| {
                (
                    c.phase.as_ref().map(Phase::to_string).unwrap_or_default(),
                    c.reason.as_ref().map(Reason::to_string).unwrap_or_default(),
                    c.message.clone(),
                )
            })
            .collect()
    }

    /// A found CSV: annotated, its APIs recorded on the group, then Pending, InstallReady,
    /// Installing (the deployment is then rolled out) and Succeeded, the history upstream
    /// expects.
    fn found(name: &str, status_namespaces: &[&str], targets: &str) {
        let mut og = group(Some(status_namespaces), false);
        let mut c = annotated(&og, &operator_csv(all_modes()), Some(targets), false);
        let Seen::Verdict(Verdict::SetGroupApis(apis)) = sync(std::slice::from_ref(&og), &[], &c)
        else {
            panic!("{name}: the group's APIs are not recorded first");
        };
        assert_eq!(apis, PROVIDES, "{name}");
        og.apis = Some(apis);
        let mut status = CsvStatus::default();
        // What each phase observes: requirements met, then a healthy rollout.
        let observed = [
            (None, Facts::default()),
            (
                Some(Phase::Pending),
                Facts {
                    requirements: Some(Ok(true)),
                    ..Facts::default()
                },
            ),
            (Some(Phase::InstallReady), Facts::default()),
            (
                Some(Phase::Installing),
                Facts {
                    install_status: Some(healthy()),
                    ..Facts::default()
                },
            ),
        ];
        for (phase, facts) in observed {
            c.facts = Facts { phase, ..facts };
            apply(&mut status, &sync(std::slice::from_ref(&og), &[], &c));
        }
        let want = [
            ("Pending", "RequirementsUnknown", NOT_YET_CHECKED),
            ("InstallReady", "AllRequirementsMet", ALL_MET),
            ("Installing", "InstallSucceeded", WAITING),
            ("Succeeded", "InstallSucceeded", COMPLETED),
        ]
        .map(|(p, r, m)| (p.to_owned(), r.to_owned(), m.to_owned()));
        assert_eq!(history(&status), want, "{name}");
        assert_eq!(status.message, COMPLETED, "{name}");
    }

    #[test]
    fn no_matching_namespace_csv_present() {
        // The group selects `a=app-a`; no namespace has that label, so it has no
        // status.namespaces and selects nothing.
        let unlabelled = BTreeMap::new();
        let selector = LabelSelector::parse("a=app-a").unwrap();
        let targets = target_namespaces(
            &[],
            Some(&selector),
            [(OPERATOR_NS, &unlabelled), ("target-ns", &unlabelled)],
        )
        .unwrap();
        let og = group(None, targets.is_empty());
        let mut status = CsvStatus::default();
        let c = annotated(&og, &operator_csv(all_modes()), None, true);
        status.set_phase_if_changed(
            Phase::Failed,
            Reason::NoTargetNamespaces,
            olm_v0::olm_operator::membership::NO_TARGET_NAMESPACES_MESSAGE,
            "t",
        );
        // Still no target namespaces: the same annotations, the same failure, nothing new.
        assert_eq!(
            sync(std::slice::from_ref(&og), &[], &c),
            annotate(annotations(GROUP, OPERATOR_NS, None), true)
        );
        assert!(
            status
                .set_phase_if_changed(
                    Phase::Failed,
                    Reason::NoTargetNamespaces,
                    olm_v0::olm_operator::membership::NO_TARGET_NAMESPACES_MESSAGE,
                    "t",
                )
                .is_none()
        );
        assert_eq!(
            history(&status),
            [(
                "Failed".to_owned(),
                "NoTargetNamespaces".to_owned(),
                "no targetNamespaces are matched operatorgroups namespace selection".to_owned()
            )]
        );
    }

    #[test]
    fn matching_namespace_csv_present_found() {
        found(
            "MatchingNamespace/CSVPresent/Found",
            &[OPERATOR_NS, "target-ns"],
            "operator-ns,target-ns",
        );
        found(
            "MatchingNamespace/CSVPresent/Found/ExplicitTargetNamespaces",
            &["target-ns", OPERATOR_NS],
            "operator-ns,target-ns",
        );
        found("AllNamespaces/CSVPresent/Found", &[""], "");
    }

    #[test]
    fn all_namespaces_install_mode_not_supported() {
        let og = group(Some(&[""]), false);
        let c = annotated(
            &og,
            &operator_csv(modes(&[("AllNamespaces", false)])),
            Some(""),
            false,
        );
        assert_eq!(
            sync(std::slice::from_ref(&og), &[], &c),
            fails(
                Reason::UnsupportedOperatorGroup,
                "AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces",
                false,
                false,
            )
        );
    }
}

// Not expressible with the decisions' inputs, and so not ported:
//
// - SingleCSVInstallingToSucceeded/UnmanagedDeploymentNotAffected and
//   SingleCSVSucceededToSucceeded/UnmanagedDeploymentInNamespace also expect the Deployment
//   `extra-dep` (no owner labels) to survive the sync. Which deployments exist afterwards is
//   the shell's doing, not a decision's; their CSV transitions are ported above.
// - TestSyncOperatorGroups' expectations other than its CSV's annotations, membership verdicts
//   and phase history (group status, copied CSVs, Roles and RoleBindings in target
//   namespaces, ClusterRoles) belong to the OperatorGroup and copied-CSV decisions.
