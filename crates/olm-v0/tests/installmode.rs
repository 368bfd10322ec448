//! Upstream's own table for install-mode support, run through [`InstallModeSet::supports`]: every
//! case of the API repo's `pkg/operators/v1alpha1/clusterserviceversion_test.go` `TestSupports`,
//! with upstream's case names and exact error messages (the `UnsupportedOperatorGroup` messages
//! users see on a CSV).
//!
//! Upstream has no table for `NewInstallModeSet`; its duplicate message is pinned separately
//! below, spelled as Go's `%v` prints the list of modes.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_v0::{InstallMode, InstallModeSet, InstallModeType};

/// Which of (OwnNamespace, SingleNamespace, MultiNamespace, AllNamespaces) a table's set lists,
/// and with what `supported` flag; `None` leaves the type out of the set.
type Modes = [Option<bool>; 4];

const TYPES: [InstallModeType; 4] = [
    InstallModeType::OwnNamespace,
    InstallModeType::SingleNamespace,
    InstallModeType::MultiNamespace,
    InstallModeType::AllNamespaces,
];

/// Upstream's map literals: each listed type with its flag.
fn set(modes: Modes) -> InstallModeSet {
    InstallModeSet(
        TYPES
            .iter()
            .zip(modes)
            .filter_map(|(t, supported)| supported.map(|s| (t.clone(), s)))
            .collect(),
    )
}

/// Every type listed, with the given flags.
const fn listed(own: bool, single: bool, multi: bool, all: bool) -> Modes {
    [Some(own), Some(single), Some(multi), Some(all)]
}

const EMPTY: Modes = [None; 4];

const ZERO: &str =
    "operatorgroup has invalid selected namespaces, cannot configure to watch zero namespaces";
const OWN: &str =
    "OwnNamespace InstallModeType not supported, cannot configure to watch own namespace";
const SINGLE: &str =
    "SingleNamespace InstallModeType not supported, cannot configure to watch one namespace";
const MULTI_2: &str =
    "MultiNamespace InstallModeType not supported, cannot configure to watch 2 namespaces";
const ALL_NS: &str =
    "AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces";
const ALL_AMONG_MANY: &str = "operatorgroup has invalid selected namespaces, NamespaceAll found when |selected namespaces| > 1";

/// `TestSupports`.
#[test]
fn supports() {
    struct Case {
        description: &'static str,
        modes: Modes,
        operator_namespace: &'static str,
        namespaces: &'static [&'static str],
        error: Option<&'static str>,
    }
    let cases = [
        Case {
            description: "NoNamespaces",
            modes: listed(true, true, true, true),
            operator_namespace: "operators",
            namespaces: &[],
            error: Some(ZERO),
        },
        Case {
            description: "OwnNamespace/OperatorNamespace/Supported",
            modes: listed(true, false, false, false),
            operator_namespace: "operators",
            namespaces: &["operators"],
            error: None,
        },
        Case {
            description: "SingleNamespace/OtherNamespace/Supported",
            modes: listed(false, true, false, false),
            operator_namespace: "operators",
            namespaces: &["ns-0"],
            error: None,
        },
        Case {
            description: "MultiNamespace/OtherNamespaces/Supported",
            modes: listed(false, false, true, false),
            operator_namespace: "operators",
            namespaces: &["ns-0", "ns-2"],
            error: None,
        },
        Case {
            description: "AllNamespaces/NamespaceAll/Supported",
            modes: listed(false, false, false, true),
            operator_namespace: "operators",
            namespaces: &[""],
            error: None,
        },
        Case {
            description: "OwnNamespace/OperatorNamespace/Unsupported",
            modes: listed(false, true, true, true),
            operator_namespace: "operators",
            namespaces: &["operators"],
            error: Some(OWN),
        },
        Case {
            description: "OwnNamespace/IncludesOperatorNamespace/Unsupported",
            modes: listed(false, true, true, true),
            operator_namespace: "operators",
            namespaces: &["ns-0", "operators"],
            error: Some(OWN),
        },
        Case {
            description: "MultiNamespace/OtherNamespaces/Unsupported",
            modes: listed(true, true, false, true),
            operator_namespace: "operators",
            namespaces: &["ns-0", "ns-1"],
            error: Some(MULTI_2),
        },
        Case {
            description: "SingleNamespace/OtherNamespace/Unsupported",
            modes: listed(true, false, true, true),
            operator_namespace: "operators",
            namespaces: &["ns-0"],
            error: Some(SINGLE),
        },
        Case {
            description: "AllNamespaces/NamespaceAll/Unsupported",
            modes: listed(true, true, true, false),
            operator_namespace: "operators",
            namespaces: &[""],
            error: Some(ALL_NS),
        },
        Case {
            description: "AllNamespaces/IncludingNamespaceAll/Unsupported",
            modes: listed(true, true, true, true),
            operator_namespace: "operators",
            namespaces: &["", "ns-0"],
            error: Some(ALL_AMONG_MANY),
        },
        Case {
            description: "NoNamespaces/EmptyInstallModeSet/Unsupported",
            modes: EMPTY,
            operator_namespace: "",
            namespaces: &[],
            error: Some(ZERO),
        },
        Case {
            description: "MultiNamespace/OtherNamespaces/EmptyInstallModeSet/Unsupported",
            modes: EMPTY,
            operator_namespace: "operators",
            namespaces: &["ns-0", "ns-1"],
            error: Some(MULTI_2),
        },
        Case {
            description: "SingleNamespace/OtherNamespace/EmptyInstallModeSet/Unsupported",
            modes: EMPTY,
            operator_namespace: "operators",
            namespaces: &["ns-0"],
            error: Some(SINGLE),
        },
        Case {
            description: "AllNamespaces/NamespaceAll/EmptyInstallModeSet/Unsupported",
            modes: EMPTY,
            operator_namespace: "operators",
            namespaces: &[""],
            error: Some(ALL_NS),
        },
    ];
    let mut failures = Vec::new();
    for c in &cases {
        let namespaces: Vec<String> = c.namespaces.iter().map(|n| (*n).to_owned()).collect();
        let got = set(c.modes)
            .supports(c.operator_namespace, &namespaces)
            .map_err(|e| e.to_string());
        let want = c.error.map_or(Ok(()), |e| Err(e.to_owned()));
        if got != want {
            failures.push(format!("{}: got {got:?}, want {want:?}", c.description));
        }
    }
    assert!(
        failures.is_empty(),
        "TestSupports: {} case(s) differ from upstream:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `NewInstallModeSet` refuses a list that names a type twice, printing the whole list as Go's
/// `%v` prints a slice of `{Type Supported}` structs; a list without repeats is its map.
#[test]
fn new_install_mode_set_refuses_duplicates() {
    let mode = |t: &str, supported: bool| InstallMode {
        type_: t.into(),
        supported,
    };
    let err = InstallModeSet::new(&[
        mode("OwnNamespace", true),
        mode("AllNamespaces", false),
        mode("OwnNamespace", false),
    ])
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "InstallMode list contains duplicates, cannot make set: [{OwnNamespace true} {AllNamespaces false} {OwnNamespace false}]"
    );
    let ok =
        InstallModeSet::new(&[mode("OwnNamespace", true), mode("AllNamespaces", false)]).unwrap();
    assert_eq!(ok, set([Some(true), None, None, Some(false)]));
}
