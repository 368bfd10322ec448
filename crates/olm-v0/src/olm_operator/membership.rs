//! Which OperatorGroup a CSV belongs to and whether it may run under it: the checks olm-operator
//! makes on every sync of a CSV before its phase machine runs (OLM repo
//! `pkg/controller/operators/olm/operator.go`, `operatorGroupForCSV` and the prologue of
//! `transitionCSVState`; target namespaces from `operatorgroup.go`'s `getOperatorGroupTargets`).
//!
//! Order, as upstream: exactly one group in the CSV's namespace (else `NoOperatorGroup` /
//! `TooManyOperatorGroups`, both also sync errors retried with a backoff); the CSV carries the
//! group's three annotations (else they are written and the sync ends, failing with
//! `NoTargetNamespaces` when the group selects nothing); `spec.installModes` has no duplicate
//! (`InvalidInstallModes`); the CSV has `olm.targetNamespaces` (`NoTargetNamespaces`) and its
//! install modes support them (`UnsupportedOperatorGroup`); its provided APIs do not clash with
//! intersecting groups (`InterOperatorGroupOwnerConflict`,
//! `CannotModifyStaticOperatorGroupProvidedAPIs`, or the group's `olm.providedAPIs` updated
//! first).

use std::collections::BTreeMap;

use olm_k8s::LabelSelector;
use olm_v0_api::v1alpha1::ConditionReason as Reason;

use crate::olm_operator::apis::ApiSet;
use crate::olm_operator::groups::{
    ApiReconciliation, OperatorGroupView, reconcile_api_intersection,
};
use crate::olm_operator::installmode::{InstallMode, InstallModeSet};

/// CSV annotation: the OperatorGroup's namespace.
pub const OPERATOR_NAMESPACE_ANNOTATION: &str = "olm.operatorNamespace";
/// CSV annotation: the OperatorGroup's name.
pub const OPERATOR_GROUP_ANNOTATION: &str = "olm.operatorGroup";
/// CSV annotation: the group's target namespaces, sorted and comma-joined (`""` for all).
pub const TARGET_NAMESPACES_ANNOTATION: &str = "olm.targetNamespaces";
/// OperatorGroup annotation: the APIs its member CSVs provide.
pub const PROVIDED_APIS_ANNOTATION: &str = "olm.providedAPIs";

/// `NoOperatorGroup`'s message.
pub const NO_OPERATOR_GROUP_MESSAGE: &str = "csv in namespace with no operatorgroups";
/// `TooManyOperatorGroups`' message.
pub const TOO_MANY_OPERATOR_GROUPS_MESSAGE: &str =
    "csv created in namespace with multiple operatorgroups, can't pick one automatically";
/// `InterOperatorGroupOwnerConflict`'s message.
pub const INTERSECTING_GROUPS_MESSAGE: &str = "intersecting operatorgroups provide the same apis";
/// `CannotModifyStaticOperatorGroupProvidedAPIs`' message.
pub const STATIC_GROUP_MESSAGE: &str =
    "static provided api operatorgroup cannot be modified by these apis";
/// `NoTargetNamespaces`' message when the group's selector matches nothing.
pub const NO_TARGET_NAMESPACES_MESSAGE: &str =
    "no targetNamespaces are matched operatorgroups namespace selection";
/// `NoTargetNamespaces`' message when the CSV lacks the annotation.
pub const MISSING_TARGETS_MESSAGE: &str = "csv missing olm.targetNamespaces annotation";

/// The namespaces a group targets (upstream's `getOperatorGroupTargets`), sorted:
/// `spec.targetNamespaces` when given (which may not hold `""`: `TargetNamespaces cannot contain
/// NamespaceAll: [a b]`), else `[""]` (all) for no or an empty selector, else the namespaces
/// whose labels the selector matches (possibly none).
pub fn target_namespaces<'a>(
    target_namespaces: &[String],
    selector: Option<&LabelSelector>,
    namespaces: impl IntoIterator<Item = (&'a str, &'a BTreeMap<String, String>)>,
) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = if !target_namespaces.is_empty() {
        if target_namespaces.iter().any(String::is_empty) {
            return Err(format!(
                "TargetNamespaces cannot contain NamespaceAll: [{}]",
                target_namespaces.join(" ")
            ));
        }
        target_namespaces.to_vec()
    } else {
        match selector {
            Some(sel) if !(sel.match_labels.is_empty() && sel.match_expressions.is_empty()) => {
                namespaces
                    .into_iter()
                    .filter(|(_, labels)| sel.matches(labels))
                    .map(|(name, _)| name.to_owned())
                    .collect()
            }
            _ => vec![String::new()],
        }
    };
    out.sort();
    out.dedup();
    Ok(out)
}

/// `olm.targetNamespaces` for a group's `status.namespaces` (upstream's
/// `BuildTargetNamespaces`): sorted and comma-joined.
pub fn build_target_namespaces(status_namespaces: &[String]) -> String {
    let mut ns = status_namespaces.to_vec();
    ns.sort();
    ns.join(",")
}

/// An OperatorGroup of the CSV's namespace, as the checks need it.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    /// Name.
    pub name: &'a str,
    /// Namespace (the CSV's).
    pub namespace: &'a str,
    /// `status.namespaces`; `None` when the group has none yet.
    pub status_namespaces: Option<&'a [String]>,
    /// Its `olm.providedAPIs` annotation.
    pub provided_apis: Option<&'a str>,
    /// `spec.staticProvidedAPIs`.
    pub static_provided_apis: bool,
    /// Whether [`target_namespaces`] of its spec selects no namespace now.
    pub selects_nothing: bool,
}

/// The CSV, as the checks need it.
#[derive(Debug, Clone)]
pub struct Csv<'a> {
    /// Its namespace.
    pub namespace: &'a str,
    /// Its annotations.
    pub annotations: &'a BTreeMap<String, String>,
    /// `spec.installModes`.
    pub install_modes: &'a [InstallMode],
    /// The APIs it provides (owned CRDs and APIServices).
    pub provided_apis: &'a ApiSet,
    /// Its current `status.reason`, if any.
    pub reason: Option<&'a Reason>,
}

/// What the checks say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The CSV is a member in good standing: its phase machine may run.
    Member,
    /// The CSV fails with `reason` and `message` (phase `Failed`).
    Fail {
        /// `status.reason`.
        reason: Reason,
        /// `status.message`.
        message: String,
        /// Delete the CSV's deployments.
        delete_deployments: bool,
        /// Also a sync error: come back with a backoff (no or several groups in the namespace).
        retry: bool,
    },
    /// Nothing to change now (a conflict already recorded that upstream does not repeat).
    Unchanged,
    /// Nothing to change, but a sync error (this message) retried with a backoff: several groups
    /// in the namespace, `TooManyOperatorGroups` already recorded.
    Error(String),
    /// Write these annotations on the CSV (the group's three, targets only when the group has
    /// `status.namespaces`) and stop; when `then_fail` the CSV also fails with
    /// `NoTargetNamespaces` ([`NO_TARGET_NAMESPACES_MESSAGE`]). The group is looked at again.
    Annotate {
        /// Annotations to set.
        annotations: BTreeMap<String, String>,
        /// Also fail with `NoTargetNamespaces`.
        then_fail: bool,
    },
    /// Set the group's `olm.providedAPIs` to this value, then look at the CSV again.
    SetGroupApis(String),
}

/// The membership checks for `csv` given the groups of its namespace and every other group of
/// the cluster; see the module documentation for their order.
pub fn check(csv: &Csv<'_>, groups: &[Group<'_>], others: &[OperatorGroupView]) -> Verdict {
    let fail =
        |reason: Reason, message: &str, delete_deployments: bool, retry: bool| Verdict::Fail {
            reason,
            message: message.to_owned(),
            delete_deployments,
            retry,
        };
    // Without exactly one group the sync also fails, so the CSV is retried until that changes.
    let group = match groups {
        [] => {
            return fail(
                Reason::NoOperatorGroup,
                NO_OPERATOR_GROUP_MESSAGE,
                false,
                true,
            );
        }
        [one] => one,
        _ if csv.reason == Some(&Reason::TooManyOperatorGroups) => {
            return Verdict::Error(TOO_MANY_OPERATOR_GROUPS_MESSAGE.to_owned());
        }
        _ => {
            return fail(
                Reason::TooManyOperatorGroups,
                TOO_MANY_OPERATOR_GROUPS_MESSAGE,
                false,
                true,
            );
        }
    };
    let targets = group.status_namespaces.map(build_target_namespaces);
    let has = |k: &str, v: &str| csv.annotations.get(k).is_some_and(|x| x == v);
    let differ = !has(OPERATOR_NAMESPACE_ANNOTATION, group.namespace)
        || !has(OPERATOR_GROUP_ANNOTATION, group.name)
        || !has(
            TARGET_NAMESPACES_ANNOTATION,
            targets.as_deref().unwrap_or_default(),
        );
    if differ {
        let mut annotations = BTreeMap::from([
            (
                OPERATOR_NAMESPACE_ANNOTATION.to_owned(),
                group.namespace.to_owned(),
            ),
            (OPERATOR_GROUP_ANNOTATION.to_owned(), group.name.to_owned()),
        ]);
        if let Some(t) = targets {
            annotations.insert(TARGET_NAMESPACES_ANNOTATION.to_owned(), t);
        }
        return Verdict::Annotate {
            annotations,
            then_fail: group.selects_nothing,
        };
    }
    // A group whose selector matches no namespace has empty target namespaces, which the
    // annotation writes as "" — the spelling of all namespaces. Upstream then checks the CSV
    // against all namespaces (failing an OwnNamespace operator with "AllNamespaces
    // InstallModeType not supported", and installing an AllNamespaces one to watch
    // everything); here the CSV keeps failing with `NoTargetNamespaces` until the selector
    // matches a namespace.
    if group.selects_nothing {
        return fail(
            Reason::NoTargetNamespaces,
            NO_TARGET_NAMESPACES_MESSAGE,
            false,
            false,
        );
    }
    let modes = match InstallModeSet::new(csv.install_modes) {
        Ok(m) => m,
        Err(e) => return fail(Reason::InvalidInstallModes, &e.to_string(), false, false),
    };
    let Some(targets) = csv.annotations.get(TARGET_NAMESPACES_ANNOTATION) else {
        return fail(
            Reason::NoTargetNamespaces,
            MISSING_TARGETS_MESSAGE,
            false,
            false,
        );
    };
    let namespaces: Vec<String> = targets.split(',').map(str::to_owned).collect();
    if let Err(e) = modes.supports(csv.namespace, &namespaces) {
        return fail(
            Reason::UnsupportedOperatorGroup,
            &e.to_string(),
            false,
            false,
        );
    }
    let view = OperatorGroupView::new(
        group.name,
        group.namespace,
        group.status_namespaces.unwrap_or_default(),
        group.provided_apis,
    );
    // The group itself, if listed among the others, is skipped by the reconciliation.
    let add = csv.provided_apis.strip_plural();
    let conflict_recorded = csv.reason == Some(&Reason::InterOperatorGroupOwnerConflict);
    match reconcile_api_intersection(&add, &view, others) {
        ApiReconciliation::AddApis | ApiReconciliation::RemoveApis
            if group.static_provided_apis =>
        {
            if conflict_recorded {
                Verdict::Unchanged
            } else {
                fail(
                    Reason::CannotModifyStaticOperatorGroupProvidedApis,
                    STATIC_GROUP_MESSAGE,
                    true,
                    false,
                )
            }
        }
        ApiReconciliation::ApiConflict if conflict_recorded => Verdict::Unchanged,
        ApiReconciliation::ApiConflict => fail(
            Reason::InterOperatorGroupOwnerConflict,
            INTERSECTING_GROUPS_MESSAGE,
            true,
            false,
        ),
        ApiReconciliation::AddApis => {
            let union = view.provided_apis.union(&add).to_string();
            if group.provided_apis == Some(union.as_str()) {
                Verdict::Member
            } else {
                Verdict::SetGroupApis(union)
            }
        }
        ApiReconciliation::RemoveApis => {
            Verdict::SetGroupApis(view.provided_apis.difference(&add).to_string())
        }
        ApiReconciliation::NoApiConflict => Verdict::Member,
    }
}
