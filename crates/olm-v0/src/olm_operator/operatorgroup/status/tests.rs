//! The status an OperatorGroup gets, case by case, in upstream's words
//! (`pkg/controller/operators/olm/operatorgroup.go` and its `operatorgroup_test.go`).

use super::*;

fn at(secs: i64) -> Time {
    Time(jiff::Timestamp::from_second(secs).unwrap_or_default())
}

fn targets(list: &[&str]) -> Vec<String> {
    list.iter().map(|t| (*t).to_owned()).collect()
}

fn kinds(status: &OperatorGroupStatus) -> Vec<(&str, &str, &str)> {
    status
        .conditions
        .iter()
        .map(|c| (c.type_.as_str(), c.reason.as_str(), c.message.as_str()))
        .collect()
}

#[test]
fn a_new_group_gets_its_targets() {
    let t = targets(&["a", "b"]);
    let decided = decide(
        &Found {
            status: None,
            several: false,
            account: &Account::NotAsked,
            targets: &t,
        },
        &at(10),
    );
    assert!(decided.targets_changed);
    assert_eq!(decided.missing_account, None);
    let status = decided
        .write
        .unwrap_or_else(|| panic!("a first status is written"));
    assert_eq!(status.namespaces, t);
    assert_eq!(status.last_updated, at(10));
    assert!(status.conditions.is_empty());
}

#[test]
fn an_unchanged_group_writes_nothing() {
    let t = targets(&[""]);
    let first = decide(
        &Found {
            status: None,
            several: true,
            account: &Account::NotAsked,
            targets: &t,
        },
        &at(10),
    )
    .write
    .unwrap_or_else(|| panic!("a first status"));
    let again = decide(
        &Found {
            status: Some(&first),
            several: true,
            account: &Account::NotAsked,
            targets: &t,
        },
        &at(99),
    );
    assert_eq!(again.write, None);
    assert!(!again.targets_changed);
}

#[test]
fn conditions_in_upstreams_words() {
    let t = targets(&["a"]);
    let decided = decide(
        &Found {
            status: None,
            several: true,
            account: &Account::Missing("builder".to_owned()),
            targets: &t,
        },
        &at(10),
    );
    assert_eq!(
        decided.missing_account.as_deref(),
        Some("ServiceAccount builder not found")
    );
    let status = decided.write.unwrap_or_else(|| panic!("a status"));
    assert_eq!(
        kinds(&status),
        [
            (
                "MultipleOperatorGroup",
                "MultipleOperatorGroupsFound",
                "Multiple OperatorGroup found in the same namespace"
            ),
            (
                "OperatorGroupServiceAccount",
                "ServiceAccountNotFound",
                "ServiceAccount builder not found"
            ),
        ]
    );
    // The account appears and the other group goes: both conditions go, the reference comes,
    // and lastUpdated stays (the targets did not change).
    let reference = ObjectReference {
        kind: Some("ServiceAccount".to_owned()),
        name: Some("builder".to_owned()),
        namespace: Some("ns".to_owned()),
        ..ObjectReference::default()
    };
    let later = decide(
        &Found {
            status: Some(&status),
            several: false,
            account: &Account::Found(reference.clone()),
            targets: &t,
        },
        &at(50),
    );
    let next = later.write.unwrap_or_else(|| panic!("a changed status"));
    assert!(next.conditions.is_empty());
    assert_eq!(next.service_account_ref, Some(reference));
    assert_eq!(next.last_updated, at(10));
}

#[test]
fn a_condition_keeps_its_time_while_it_holds() {
    let t = targets(&["a"]);
    let found = |status| Found {
        status,
        several: true,
        account: &Account::NotAsked,
        targets: &t,
    };
    let first = decide(&found(None), &at(10))
        .write
        .unwrap_or_else(|| panic!("a status"));
    let moved = targets(&["a", "b"]);
    let next = decide(
        &Found {
            targets: &moved,
            ..found(Some(&first))
        },
        &at(20),
    );
    assert!(next.targets_changed);
    let status = next.write.unwrap_or_else(|| panic!("new targets"));
    assert_eq!(status.last_updated, at(20));
    assert_eq!(status.conditions[0].last_transition_time, at(10));
}
