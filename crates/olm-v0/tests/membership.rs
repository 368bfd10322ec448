//! The membership checks of `olm_v0::olm_operator::membership`, case by case in upstream's order
//! (OLM repo `pkg/controller/operators/olm/operator.go`: `operatorGroupForCSV`,
//! `transitionCSVState`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use olm_k8s::LabelSelector;
use olm_v0::olm_operator::membership::{
    Csv, Group, Verdict, build_target_namespaces, check, target_namespaces,
};
use olm_v0::{ApiSet, InstallMode, OperatorGroupView};
use olm_v0_api::v1alpha1::ConditionReason as Reason;

fn modes(list: &[(&str, bool)]) -> Vec<InstallMode> {
    list.iter()
        .map(|(t, s)| InstallMode {
            type_: (*t).into(),
            supported: *s,
        })
        .collect()
}

fn annotations(group: &str, ns: &str, targets: Option<&str>) -> BTreeMap<String, String> {
    let mut a = BTreeMap::from([
        ("olm.operatorGroup".to_owned(), group.to_owned()),
        ("olm.operatorNamespace".to_owned(), ns.to_owned()),
    ]);
    if let Some(t) = targets {
        a.insert("olm.targetNamespaces".to_owned(), t.to_owned());
    }
    a
}

fn group<'a>(namespaces: Option<&'a [String]>, apis: Option<&'a str>) -> Group<'a> {
    Group {
        name: "og",
        namespace: "ns",
        status_namespaces: namespaces,
        provided_apis: apis,
        static_provided_apis: false,
        selects_nothing: false,
    }
}

const ALL_MODES: &[(&str, bool)] = &[
    ("OwnNamespace", true),
    ("SingleNamespace", true),
    ("MultiNamespace", true),
    ("AllNamespaces", true),
];

#[test]
fn group_count_decides_first() {
    let a = annotations("og", "ns", Some(""));
    let m = modes(ALL_MODES);
    let apis = ApiSet::default();
    let csv = Csv {
        namespace: "ns",
        annotations: &a,
        install_modes: &m,
        provided_apis: &apis,
        reason: None,
    };
    let all = vec![String::new()];
    assert_eq!(
        check(&csv, &[], &[]),
        Verdict::Fail {
            reason: Reason::NoOperatorGroup,
            message: "csv in namespace with no operatorgroups".into(),
            delete_deployments: false,
            retry: true
        }
    );
    let two = [
        group(Some(&all), None),
        Group {
            name: "og2",
            ..group(Some(&all), None)
        },
    ];
    assert_eq!(
        check(&csv, &two, &[]),
        Verdict::Fail {
            reason: Reason::TooManyOperatorGroups,
            message: "csv created in namespace with multiple operatorgroups, can't pick one automatically".into(),
            delete_deployments: false,
            retry: true
        }
    );
    let already = Csv {
        reason: Some(&Reason::TooManyOperatorGroups),
        ..csv.clone()
    };
    assert_eq!(
        check(&already, &two, &[]),
        Verdict::Error(
            "csv created in namespace with multiple operatorgroups, can't pick one automatically"
                .into()
        )
    );
    assert_eq!(
        check(&csv, &[group(Some(&all), None)], &[]),
        Verdict::Member
    );
}

#[test]
fn annotations_are_written_before_anything_else() {
    let none = BTreeMap::new();
    let m = modes(ALL_MODES);
    let apis = ApiSet::default();
    let csv = Csv {
        namespace: "ns",
        annotations: &none,
        install_modes: &m,
        provided_apis: &apis,
        reason: None,
    };
    let targets = vec!["b".to_owned(), "a".to_owned()];
    match check(&csv, &[group(Some(&targets), None)], &[]) {
        Verdict::Annotate {
            annotations,
            then_fail,
        } => {
            assert_eq!(annotations["olm.targetNamespaces"], "a,b");
            assert_eq!(annotations["olm.operatorGroup"], "og");
            assert!(!then_fail);
        }
        other => panic!("{other:?}"),
    }
    // A group without status namespaces yet: no targets annotation, and then the CSV misses it.
    match check(
        &csv,
        &[Group {
            selects_nothing: true,
            ..group(None, None)
        }],
        &[],
    ) {
        Verdict::Annotate {
            annotations,
            then_fail,
        } => {
            assert!(!annotations.contains_key("olm.targetNamespaces"));
            assert!(then_fail);
        }
        other => panic!("{other:?}"),
    }
}

/// A selector matching nothing leaves the CSV failing with `NoTargetNamespaces` once it is
/// annotated (`""`), where upstream would take `""` for all namespaces.
#[test]
fn a_group_selecting_nothing_is_not_all_namespaces() {
    let a = annotations("og", "ns", Some(""));
    let all = modes(&[("AllNamespaces", true), ("OwnNamespace", true)]);
    let apis = ApiSet::default();
    let csv = Csv {
        namespace: "ns",
        annotations: &a,
        install_modes: &all,
        provided_apis: &apis,
        reason: None,
    };
    let empty: Vec<String> = Vec::new();
    let nothing = Group {
        selects_nothing: true,
        ..group(Some(&empty), None)
    };
    match check(&csv, &[nothing], &[]) {
        Verdict::Fail {
            reason, message, ..
        } => {
            assert_eq!(reason, Reason::NoTargetNamespaces);
            assert_eq!(
                message,
                "no targetNamespaces are matched operatorgroups namespace selection"
            );
        }
        other => panic!("{other:?}"),
    }
    // An all-namespaces group (no selector) is all namespaces.
    let global = vec![String::new()];
    assert_eq!(
        check(&csv, &[group(Some(&global), None)], &[]),
        Verdict::Member
    );
}

#[test]
fn install_modes_and_targets() {
    let own = vec!["ns".to_owned()];
    let a = annotations("og", "ns", Some("ns"));
    let dup = modes(&[("OwnNamespace", true), ("OwnNamespace", false)]);
    let apis = ApiSet::default();
    let csv = Csv {
        namespace: "ns",
        annotations: &a,
        install_modes: &dup,
        provided_apis: &apis,
        reason: None,
    };
    assert_eq!(
        check(&csv, &[group(Some(&own), None)], &[]),
        Verdict::Fail {
            reason: Reason::InvalidInstallModes,
            message: "InstallMode list contains duplicates, cannot make set: [{OwnNamespace true} {OwnNamespace false}]".into(),
            delete_deployments: false,
            retry: false
        }
    );
    let all_only = modes(&[("AllNamespaces", true), ("OwnNamespace", false)]);
    let csv = Csv {
        install_modes: &all_only,
        ..csv
    };
    assert_eq!(
        check(&csv, &[group(Some(&own), None)], &[]),
        Verdict::Fail {
            reason: Reason::UnsupportedOperatorGroup,
            message: "OwnNamespace InstallModeType not supported, cannot configure to watch own namespace".into(),
            delete_deployments: false,
            retry: false
        }
    );
}

#[test]
fn provided_apis_against_intersecting_groups() {
    let all = vec![String::new()];
    let a = annotations("og", "ns", Some(""));
    let m = modes(ALL_MODES);
    let apis = ApiSet::parse_annotation("EtcdCluster.v1beta2.etcd.database.coreos.com");
    let csv = Csv {
        namespace: "ns",
        annotations: &a,
        install_modes: &m,
        provided_apis: &apis,
        reason: None,
    };
    // Nobody else provides it: the group's annotation gains it.
    assert_eq!(
        check(&csv, &[group(Some(&all), None)], &[]),
        Verdict::SetGroupApis("EtcdCluster.v1beta2.etcd.database.coreos.com".into())
    );
    // Already recorded: a member.
    let recorded = Some("EtcdCluster.v1beta2.etcd.database.coreos.com");
    assert_eq!(
        check(&csv, &[group(Some(&all), recorded)], &[]),
        Verdict::Member
    );
    // Another group targeting the same namespaces provides it: conflict, deployments go.
    let other = OperatorGroupView::new("other", "elsewhere", &all, recorded);
    assert_eq!(
        check(
            &csv,
            &[group(Some(&all), None)],
            std::slice::from_ref(&other)
        ),
        Verdict::Fail {
            reason: Reason::InterOperatorGroupOwnerConflict,
            message: "intersecting operatorgroups provide the same apis".into(),
            delete_deployments: true,
            retry: false
        }
    );
    // Static groups never change their APIs.
    let static_group = Group {
        static_provided_apis: true,
        ..group(Some(&all), None)
    };
    assert_eq!(
        check(&csv, &[static_group], &[]),
        Verdict::Fail {
            reason: Reason::CannotModifyStaticOperatorGroupProvidedApis,
            message: "static provided api operatorgroup cannot be modified by these apis".into(),
            delete_deployments: true,
            retry: false
        }
    );
}

#[test]
fn targets_from_spec() {
    let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let a = labels(&[("team", "x")]);
    let b = labels(&[("team", "y")]);
    let ns = [("b", &b), ("a", &a)];
    assert_eq!(
        target_namespaces(&["z".into(), "y".into()], None, ns),
        Ok(vec!["y".to_owned(), "z".to_owned()])
    );
    assert_eq!(
        target_namespaces(&["a".into(), String::new()], None, ns),
        Err("TargetNamespaces cannot contain NamespaceAll: [a ]".into())
    );
    assert_eq!(target_namespaces(&[], None, ns), Ok(vec![String::new()]));
    assert_eq!(
        target_namespaces(&[], Some(&LabelSelector::default()), ns),
        Ok(vec![String::new()])
    );
    let sel = LabelSelector::parse("team=x").unwrap();
    assert_eq!(
        target_namespaces(&[], Some(&sel), ns),
        Ok(vec!["a".to_owned()])
    );
    let none = LabelSelector::parse("team=z").unwrap();
    assert_eq!(target_namespaces(&[], Some(&none), ns), Ok(vec![]));
    assert_eq!(build_target_namespaces(&["b".into(), "a".into()]), "a,b");
    assert_eq!(build_target_namespaces(&[String::new()]), "");
}
