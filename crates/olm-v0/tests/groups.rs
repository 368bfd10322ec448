//! Upstream's own tables for OperatorGroups, run through this crate: every case of the OLM repo's
//! `pkg/controller/operators/olm/groups_test.go` (`TestNewOperatorGroup`,
//! `TestNamespaceSetIntersection`, `TestNamespaceSetUnion`, `TestNamespaceSetIsAllNamespaces`,
//! `TestNamespaceSetContains`, `TestNewNamespaceSetFromString`, `TestGroupIntersection` and the
//! `apiIntersectionReconcilerSuite` run by `TestReconcileAPIIntersection`), with upstream's case
//! names, inputs and expected outputs.
//!
//! Upstream's namespace and API sets are Go maps; ours are ordered sets, so sets compare as sets.
//! `GroupIntersection` keeps the order of the groups it is given, upstream and here, so its
//! results compare as lists. Each test runs its whole table and reports every failing case.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_v0::{
    ApiKey, ApiReconciliation, ApiSet, NamespaceSet, OperatorGroupView, reconcile_api_intersection,
};

/// `metav1.NamespaceAll`.
const ALL: &str = "";

/// One API as upstream's tables spell it: (group, version, kind).
type Gvk = (&'static str, &'static str, &'static str);

fn set(namespaces: &[&str]) -> NamespaceSet {
    NamespaceSet::new(namespaces)
}

fn apis(keys: &[Gvk]) -> ApiSet {
    keys.iter()
        .map(|(group, version, kind)| ApiKey::gvk(group, version, kind))
        .collect()
}

/// An OperatorGroup as upstream's table helper builds one: named `name` in `namespace`, with
/// `status.namespaces` = `targets` and the `olm.providedAPIs` annotation always present, its
/// value `gvks` joined with commas.
#[derive(Debug, Clone, Copy)]
struct Group {
    namespace: &'static str,
    name: &'static str,
    targets: &'static [&'static str],
    gvks: &'static [&'static str],
}

const fn group(
    namespace: &'static str,
    name: &'static str,
    targets: &'static [&'static str],
    gvks: &'static [&'static str],
) -> Group {
    Group {
        namespace,
        name,
        targets,
        gvks,
    }
}

impl Group {
    fn view(self) -> OperatorGroupView {
        let targets: Vec<String> = self.targets.iter().map(|t| (*t).to_owned()).collect();
        OperatorGroupView::new(
            self.name,
            self.namespace,
            &targets,
            Some(&self.gvks.join(",")),
        )
    }
}

fn views(groups: &[Group]) -> Vec<OperatorGroupView> {
    groups.iter().map(|g| g.view()).collect()
}

fn assert_no_failures(test: &str, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{test}: {} case(s) differ from upstream:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `TestNewOperatorGroup`: the group's own namespace joins its targets unless it targets all
/// namespaces; annotation entries that are not `<Kind>.<version>.<group>` are dropped.
#[test]
fn new_operator_group() {
    struct Case {
        name: &'static str,
        input: Group,
        targets: &'static [&'static str],
        provided: &'static [Gvk],
    }
    const GOOSE: Gvk = ("birds.com", "v1alpha1", "Goose");
    const MOOSE: Gvk = ("mammals.com", "v1alpha1", "Moose");
    const CASES: &[Case] = &[
        Case {
            name: "NoTargetNamespaces/NoProvidedAPIs",
            input: group("ns", "empty-group", &[], &[]),
            targets: &[],
            provided: &[],
        },
        Case {
            name: "OneTargetNamespace/NoProvidedAPIs",
            input: group("ns", "empty-group", &["ns-1"], &[]),
            targets: &["ns", "ns-1"],
            provided: &[],
        },
        Case {
            name: "OwnTargetNamespace/NoProvidedAPIs",
            input: group("ns", "empty-group", &["ns"], &[]),
            targets: &["ns"],
            provided: &[],
        },
        Case {
            name: "MultipleTargetNamespaces/NoProvidedAPIs",
            input: group("ns", "empty-group", &["ns-1", "ns-2"], &[]),
            targets: &["ns", "ns-1", "ns-2"],
            provided: &[],
        },
        Case {
            name: "AllTargetNamespaces/NoProvidedAPIs",
            input: group("ns", "empty-group", &[ALL], &[]),
            targets: &[ALL],
            provided: &[],
        },
        Case {
            name: "OneTargetNamespace/OneProvidedAPI",
            input: group("ns", "group", &["ns-1"], &["Goose.v1alpha1.birds.com"]),
            targets: &["ns", "ns-1"],
            provided: &[GOOSE],
        },
        Case {
            name: "OneTargetNamespace/BadProvidedAPI",
            input: group("ns", "group", &["ns-1"], &["Goose.v1alpha1"]),
            targets: &["ns", "ns-1"],
            provided: &[],
        },
        Case {
            name: "OneTargetNamespace/MultipleProvidedAPIs/OneBad",
            input: group(
                "ns",
                "group",
                &["ns-1"],
                &["Goose.v1alpha1,Moose.v1alpha1.mammals.com"],
            ),
            targets: &["ns", "ns-1"],
            provided: &[MOOSE],
        },
        Case {
            name: "OneTargetNamespace/MultipleProvidedAPIs",
            input: group(
                "ns",
                "group",
                &["ns-1"],
                &["Goose.v1alpha1.birds.com,Moose.v1alpha1.mammals.com"],
            ),
            targets: &["ns", "ns-1"],
            provided: &[GOOSE, MOOSE],
        },
    ];
    let mut failures = Vec::new();
    for c in CASES {
        let want = OperatorGroupView {
            name: c.input.name.to_owned(),
            namespace: c.input.namespace.to_owned(),
            targets: set(c.targets),
            provided_apis: apis(c.provided),
        };
        let got = c.input.view();
        if got != want {
            failures.push(format!("{}: got {got:?}, want {want:?}", c.name));
        }
    }
    assert_no_failures("TestNewOperatorGroup", &failures);
}

/// A binary namespace-set table: (case name, left, right, want).
type SetTable = [(
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
)];

const THREE: &[&str] = &["ns", "ns-1", "ns-2"];

/// `TestNamespaceSetIntersection`: all namespaces intersected with a set is that set, and with
/// the empty set is empty.
#[test]
fn namespace_set_intersection() {
    const CASES: &SetTable = &[
        ("EmptySets", &[], &[], &[]),
        ("EmptyLeft/MultipleRight/NoIntersection", &[], THREE, &[]),
        ("MultipleLeft/EmptyRight/NoIntersection", THREE, &[], &[]),
        ("OneLeft/OneRight/Intersection", &["ns"], &["ns"], &["ns"]),
        (
            "MultipleLeft/MultipleRight/SomeIntersect",
            THREE,
            &["ns", "ns-1", "ns-3"],
            &["ns", "ns-1"],
        ),
        (
            "MultipleLeft/MultipleRight/AllIntersect",
            THREE,
            THREE,
            THREE,
        ),
        (
            "AllLeft/MultipleRight/RightIsIntersection",
            &[ALL],
            THREE,
            THREE,
        ),
        (
            "MultipleLeft/AllRight/LeftIsIntersection",
            THREE,
            &[ALL],
            THREE,
        ),
        ("AllLeft/EmptyRight/NoIntersection", &[ALL], &[], &[]),
        ("EmptyLeft/AllRight/NoIntersection", &[], &[ALL], &[]),
        ("AllLeft/AllRight/Intersection", &[ALL], &[ALL], &[ALL]),
    ];
    let mut failures = Vec::new();
    for (name, left, right, want) in CASES {
        let got = set(left).intersection(&set(right));
        if got != set(want) {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert_no_failures("TestNamespaceSetIntersection", &failures);
}

/// `TestNamespaceSetUnion`: all namespaces absorbs any set, the empty one included.
#[test]
fn namespace_set_union() {
    const CASES: &SetTable = &[
        ("EmptySets", &[], &[], &[]),
        ("EmptyLeft/MultipleRight", &[], THREE, THREE),
        ("MultipleLeft/EmptyRight", THREE, &[], THREE),
        ("OneLeft/SameRight", &["ns"], &["ns"], &["ns"]),
        (
            "MultipleLeft/MultipleRight/Differ",
            THREE,
            &["ns", "ns-1", "ns-3"],
            &["ns", "ns-1", "ns-2", "ns-3"],
        ),
        ("MultipleLeft/MultipleRight/AllSame", THREE, THREE, THREE),
        ("AllLeft/MultipleRight", &[ALL], THREE, &[ALL]),
        ("MultipleLeft/AllRight", THREE, &[ALL], &[ALL]),
        ("AllLeft/EmptyRight", &[ALL], &[], &[ALL]),
        ("EmptyLeft/AllRight", &[], &[ALL], &[ALL]),
        ("AllLeft/AllRight", &[ALL], &[ALL], &[ALL]),
    ];
    let mut failures = Vec::new();
    for (name, left, right, want) in CASES {
        let got = set(left).union(&set(right));
        if got != set(want) {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert_no_failures("TestNamespaceSetUnion", &failures);
}

/// `TestNamespaceSetIsAllNamespaces`.
#[test]
fn namespace_set_is_all_namespaces() {
    const CASES: &[(&str, &[&str], bool)] = &[
        ("All/Yes", &[ALL], true),
        ("One/NotAll", &["a"], false),
        ("Many/NotAll", &["a", "b", "c"], false),
    ];
    let mut failures = Vec::new();
    for (name, namespaces, want) in CASES {
        let got = set(namespaces).is_all_namespaces();
        if got != *want {
            failures.push(format!("{name}: got {got}, want {want}"));
        }
    }
    assert_no_failures("TestNamespaceSetIsAllNamespaces", &failures);
}

/// `TestNamespaceSetContains` (upstream names two cases `SetContainsChild/a`).
#[test]
fn namespace_set_contains() {
    const CASES: &[(&str, &[&str], &str, bool)] = &[
        ("AllContainsAnything", &[ALL], "any", true),
        ("SetContainsChild/a", &["a", "b"], "a", true),
        ("SetContainsChild/a", &["a", "b"], "b", true),
        ("SetOmitsChild", &["a", "b"], "c", false),
    ];
    let mut failures = Vec::new();
    for (name, namespaces, namespace, want) in CASES {
        let got = set(namespaces).contains(namespace);
        if got != *want {
            failures.push(format!("{name} ({namespace:?}): got {got}, want {want}"));
        }
    }
    assert_no_failures("TestNamespaceSetContains", &failures);
}

/// `TestNewNamespaceSetFromString`: every expected namespace is contained; `""` reads as all
/// namespaces, so it contains `a`.
#[test]
fn namespace_set_from_string() {
    const CASES: &[(&str, &str, &[&str])] = &[
        ("SingleEntry", "a", &["a"]),
        ("TwoEntry", "a,b", &["a", "b"]),
        ("All", "", &["a"]),
    ];
    let mut failures = Vec::new();
    for (name, list, want) in CASES {
        let got = NamespaceSet::from_annotation(list);
        for namespace in *want {
            if !got.contains(namespace) {
                failures.push(format!("{name}: {got:?} does not contain {namespace:?}"));
            }
        }
    }
    assert_no_failures("TestNewNamespaceSetFromString", &failures);
}

/// `TestGroupIntersection`: the other groups whose targets (own namespace included) meet the
/// group's, in the order given.
#[test]
fn group_intersection() {
    struct Case {
        name: &'static str,
        left: Group,
        right: &'static [Group],
        want: &'static [Group],
    }
    const B_1: Group = group("ns-2", "group-b", &["ns-1"], &[]);
    const B_OTHERS: Group = group("ns-4", "group-b", &["ns-6", "ns-7", "ns-8"], &[]);
    const B_ALL: Group = group("ns-4", "group-b", &[ALL], &[]);
    const C_9: Group = group("ns-5", "group-c", &["ns-9", "ns-10", "ns-11"], &[]);
    const D_11: Group = group("ns-6", "group-d", &["ns-11", "ns-12"], &[]);
    const A_ALL: Group = group("ns", "group-a", &[ALL], &[]);
    const A_1: Group = group("ns", "group-a", &["ns-1"], &[]);
    const A_123: Group = group("ns", "group-a", &["ns-1", "ns-2", "ns-3"], &[]);
    const CASES: &[Case] = &[
        Case {
            name: "NoTargets/NilGroups/NoIntersection",
            left: group("ns", "empty-group", &[], &[]),
            right: &[],
            want: &[],
        },
        Case {
            name: "MatchingTarget/SingleOtherGroup/Intersection",
            left: A_1,
            right: &[B_1],
            want: &[B_1],
        },
        Case {
            name: "TargetIsOperatorNamespace/SingleOtherGroup/Intersection",
            left: A_1,
            right: &[group("ns-2", "group-b", &["ns"], &[])],
            want: &[group("ns-2", "group-b", &["ns"], &[])],
        },
        Case {
            name: "MatchingOperatorNamespaces/SingleOtherGroup/Intersection",
            left: A_1,
            right: &[group("ns", "group-b", &["ns-2"], &[])],
            want: &[group("ns", "group-b", &["ns-2"], &[])],
        },
        Case {
            name: "MatchingTarget/MultipleOtherGroups/Intersection",
            left: A_1,
            right: &[B_1, group("ns-3", "group-c", &["ns-1"], &[])],
            want: &[B_1, group("ns-3", "group-c", &["ns-1"], &[])],
        },
        Case {
            name: "NonMatchingTargets/MultipleOtherGroups/NoIntersection",
            left: A_123,
            right: &[
                B_OTHERS,
                group("ns-5", "group-c", &["ns-6", "ns-7", "ns-8"], &[]),
            ],
            want: &[],
        },
        Case {
            name: "AllNamespaces/MultipleTargets/Intersection",
            left: A_ALL,
            right: &[B_OTHERS, C_9, D_11],
            want: &[B_OTHERS, C_9, D_11],
        },
        Case {
            name: "MatchingTargetAllNamespace/MultipleTargets/Intersection",
            left: A_123,
            right: &[B_ALL, C_9, D_11],
            want: &[B_ALL],
        },
        Case {
            name: "AllNamespace/MultipleTargets/OneAllNamespace/Intersection",
            left: A_ALL,
            right: &[B_ALL, C_9, D_11],
            want: &[B_ALL, C_9, D_11],
        },
        Case {
            name: "AllNamespace/AllNamespace/Intersection",
            left: A_ALL,
            right: &[B_ALL],
            want: &[B_ALL],
        },
    ];
    let mut failures = Vec::new();
    for c in CASES {
        let right = views(c.right);
        let got: Vec<OperatorGroupView> = c
            .left
            .view()
            .group_intersection(&right)
            .into_iter()
            .cloned()
            .collect();
        let want = views(c.want);
        if got != want {
            let ids = |gs: &[OperatorGroupView]| -> Vec<String> {
                gs.iter().map(OperatorGroupView::identifier).collect()
            };
            failures.push(format!(
                "{}: got {:?}, want {:?}",
                c.name,
                ids(&got),
                ids(&want)
            ));
        }
    }
    assert_no_failures("TestGroupIntersection", &failures);
}

/// `apiIntersectionReconcilerSuite`, as `TestReconcileAPIIntersection` runs it: what adding a
/// CSV's provided APIs to `group` means given the groups it intersects.
#[test]
fn reconcile_api_intersection_suite() {
    use ApiReconciliation::{AddApis, ApiConflict, NoApiConflict, RemoveApis};
    struct Case {
        name: &'static str,
        add: &'static [Gvk],
        group: Group,
        others: &'static [Group],
        want: ApiReconciliation,
    }
    const GOOSE: Gvk = ("birds.com", "v1alpha1", "Goose");
    const MOOSE: Gvk = ("mammals.com", "v1alpha1", "Moose");
    const COW: Gvk = ("mammals.com", "v1alpha1", "Cow");
    const G_GOOSE: &[&str] = &["Goose.v1alpha1.birds.com"];
    const G_MOOSE: &[&str] = &["Moose.v1alpha1.mammals.com"];
    const G_GOOSE_MOOSE: &[&str] = &["Goose.v1alpha1.birds.com,Moose.v1alpha1.mammals.com"];
    const G_GOAT_EGRET: &[&str] = &["Goat.v1alpha1.mammals.com,Egret.v1alpha1.birds.com"];
    const G_GOOSE_EGRET: &[&str] = &["Goose.v1alpha1.birds.com,Egret.v1alpha1.birds.com"];
    const CASES: &[Case] = &[
        Case {
            name: "Empty/NoAPIConflict",
            add: &[],
            group: group("ns", "g1", &["ns"], &[]),
            others: &[],
            want: NoApiConflict,
        },
        Case {
            name: "NoNamespaceIntersection/APIIntersection/NoAPIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], G_GOOSE),
            others: &[group("ns-2", "g1", &["ns-3"], G_GOOSE)],
            want: NoApiConflict,
        },
        Case {
            name: "NamespaceIntersection/NoAPIIntersection/NoAPIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], G_GOOSE),
            others: &[group("ns-2", "g1", &["ns-1"], G_MOOSE)],
            want: NoApiConflict,
        },
        Case {
            name: "MultipleNamespaceIntersections/NoAPIIntersection/NoAPIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], G_GOOSE),
            others: &[
                group("ns-2", "g1", &["ns-1"], G_MOOSE),
                group("ns-2", "g1", &["ns"], &["Egret.v1alpha1.birds.com"]),
            ],
            want: NoApiConflict,
        },
        Case {
            name: "SomeNamespaceIntersection/NoAPIIntersection/NoAPIConflict",
            add: &[GOOSE, MOOSE],
            group: group("ns", "g1", &["ns-1", "ns-2", "ns-3"], G_GOOSE_MOOSE),
            others: &[
                group("ns-7", "g1", &["ns-4"], G_MOOSE),
                group("ns-8", "g1", &["ns-5"], G_GOOSE),
                group("ns-9", "g1", &[ALL], &["Goat.v1alpha1.mammals.com"]),
            ],
            want: NoApiConflict,
        },
        Case {
            name: "AllNamespaceIntersection/NoAPIIntersection/NoAPIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &[ALL], G_GOOSE),
            others: &[group("ns-2", "g1", &["ns-1"], G_MOOSE)],
            want: NoApiConflict,
        },
        Case {
            name: "AllNamespaceIntersectionOnOther/NoAPIIntersection/NoAPIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], G_GOOSE),
            others: &[group("ns-2", "g1", &[ALL], G_MOOSE)],
            want: NoApiConflict,
        },
        Case {
            name: "AllNamespaceInstersectionOnOther/NoAPIIntersection/NoAPIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &[ALL], G_GOOSE),
            others: &[group("ns-2", "g1", &[ALL], G_MOOSE)],
            want: NoApiConflict,
        },
        // Upstream's table repeats this name with a different other group.
        Case {
            name: "NamespaceIntersection/NoAPIIntersection/NoAPIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], G_GOOSE),
            others: &[group("ns-2", "g1", &["ns-1"], &[])],
            want: NoApiConflict,
        },
        Case {
            name: "NamespaceIntersection/APIIntersection/APIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], &[]),
            others: &[group("ns-2", "g1", &["ns-1"], G_GOOSE)],
            want: ApiConflict,
        },
        Case {
            name: "AllNamespaceIntersection/APIIntersection/APIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &[ALL], &[]),
            others: &[group("ns-2", "g1", &["ns-1"], G_GOOSE)],
            want: ApiConflict,
        },
        Case {
            name: "AllNamespaceIntersectionOnOther/APIIntersection/APIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], &[]),
            others: &[group("ns-2", "g1", &[ALL], G_GOOSE)],
            want: ApiConflict,
        },
        Case {
            name: "AllNamespaceIntersectionOnBoth/APIIntersection/APIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &[ALL], &[]),
            others: &[group("ns-2", "g1", &[ALL], G_GOOSE)],
            want: ApiConflict,
        },
        Case {
            name: "NamespaceIntersection/SomeAPIIntersection/APIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], &[]),
            others: &[
                group("ns-2", "g1", &["ns-1"], &["Moose.v1alpha1.birds.com"]),
                group("ns-3", "g1", &["ns-1"], G_GOOSE_EGRET),
            ],
            want: ApiConflict,
        },
        Case {
            name: "NamespaceIntersectionOnOperatorNamespace/SomeAPIIntersection/APIConflict",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], &[]),
            others: &[group("ns-3", "g1", &["ns"], G_GOOSE_EGRET)],
            want: ApiConflict,
        },
        Case {
            name: "NoNamespaceIntersection/NoAPIIntersection/AddAPIs",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], &[]),
            others: &[group("ns-2", "g1", &["ns-2"], G_GOOSE)],
            want: AddApis,
        },
        Case {
            name: "NamespaceIntersection/NoAPIIntersection/AddAPIs",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], &[]),
            others: &[group("ns-2", "g1", &["ns-1"], G_MOOSE)],
            want: AddApis,
        },
        Case {
            name: "OperatorNamespaceIntersection/NoAPIIntersection/AddAPIs",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], &[]),
            others: &[group("ns-2", "g1", &["ns"], G_MOOSE)],
            want: AddApis,
        },
        Case {
            name: "AllNamespaceIntersection/NoAPIIntersection/AddAPIs",
            add: &[GOOSE],
            group: group("ns", "g1", &[ALL], &[]),
            others: &[
                group("ns-2", "g1", &["ns-1"], G_MOOSE),
                group("ns-3", "g1", &["ns-1"], G_GOAT_EGRET),
            ],
            want: AddApis,
        },
        Case {
            name: "AllNamespaceIntersectionOnOthers/NoAPIIntersection/AddAPIs",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], &[]),
            others: &[
                group("ns-2", "g1", &[ALL], G_MOOSE),
                group("ns-3", "g1", &[ALL], G_GOAT_EGRET),
            ],
            want: AddApis,
        },
        Case {
            name: "AllNamespaceIntersectionOnOthers/NoAPIIntersection/AddAPIs/PrexistingAddition",
            add: &[GOOSE, COW],
            group: group("ns", "g1", &["ns-1"], &["Cow.v1alpha1.mammals.com"]),
            others: &[
                group("ns-2", "g1", &[ALL], G_MOOSE),
                group("ns-3", "g1", &[ALL], G_GOAT_EGRET),
            ],
            want: AddApis,
        },
        Case {
            name: "NamespaceInstersection/APIIntersection/RemoveAPIs",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], G_GOOSE),
            others: &[group("ns-2", "g1", &["ns-1"], G_GOOSE)],
            want: RemoveApis,
        },
        Case {
            name: "AllNamespaceInstersection/APIIntersection/RemoveAPIs",
            add: &[GOOSE],
            group: group("ns", "g1", &[ALL], G_GOOSE),
            others: &[group("ns-2", "g1", &["ns-1"], G_GOOSE)],
            want: RemoveApis,
        },
        Case {
            name: "AllNamespaceInstersectionOnOther/APIIntersection/RemoveAPIs",
            add: &[GOOSE],
            group: group("ns", "g1", &[ALL], G_GOOSE),
            others: &[group("ns-2", "g1", &[ALL], G_GOOSE)],
            want: RemoveApis,
        },
        Case {
            name: "MultipleNamespaceIntersections/APIIntersection/RemoveAPIs",
            add: &[GOOSE],
            group: group("ns", "g1", &["ns-1"], G_GOOSE),
            others: &[
                group("ns-2", "g1", &["ns-1"], G_GOOSE),
                group("ns-2", "g1", &["ns"], G_GOOSE),
            ],
            want: RemoveApis,
        },
        Case {
            name: "SomeNamespaceIntersection/APIIntersection/RemoveAPIs",
            add: &[GOOSE, MOOSE],
            group: group("ns", "g1", &["ns-1", "ns-2", "ns-3"], G_GOOSE_MOOSE),
            others: &[
                group("ns-7", "g1", &["ns-4"], G_MOOSE),
                group("ns-8", "g1", &["ns-5", "ns-3"], G_GOOSE),
                group("ns-9", "g1", &[ALL], &["Goat.v1alpha1.mammals.com"]),
            ],
            want: RemoveApis,
        },
    ];
    let mut failures = Vec::new();
    for c in CASES {
        let got = reconcile_api_intersection(&apis(c.add), &c.group.view(), &views(c.others));
        if got != c.want {
            failures.push(format!("{}: got {got:?}, want {:?}", c.name, c.want));
        }
    }
    assert_no_failures("TestReconcileAPIIntersection", &failures);
}
