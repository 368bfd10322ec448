//! OperatorGroups as olm-operator compares them (OLM repo
//! `pkg/controller/operators/olm/groups.go`): target-namespace sets where `{""}` means every
//! namespace, which groups intersect, and what a CSV's provided APIs do to its group's
//! `olm.providedAPIs` given the groups it intersects.

use std::collections::BTreeSet;

use crate::olm_operator::apis::ApiSet;

/// A set of namespaces; exactly `{""}` means all namespaces (upstream's `NamespaceSet`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NamespaceSet(pub BTreeSet<String>);

impl NamespaceSet {
    /// The set of the given namespaces.
    pub fn new<S: AsRef<str>>(namespaces: &[S]) -> NamespaceSet {
        NamespaceSet(namespaces.iter().map(|n| n.as_ref().to_owned()).collect())
    }

    /// The set of a comma-separated list (the `olm.targetNamespaces` annotation); `""` gives
    /// `{""}`, all namespaces, as Go's `strings.Split` does.
    pub fn from_annotation(text: &str) -> NamespaceSet {
        NamespaceSet(text.split(',').map(str::to_owned).collect())
    }

    /// Whether this is exactly `{""}`.
    pub fn is_all_namespaces(&self) -> bool {
        self.0.len() == 1 && self.0.contains("")
    }

    /// Number of entries (`{""}` counts one).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set has no entry at all (not even all namespaces).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The namespaces in both; all namespaces intersected with a set is that set.
    pub fn intersection(&self, other: &NamespaceSet) -> NamespaceSet {
        if self.is_all_namespaces() {
            return other.clone();
        }
        if other.is_all_namespaces() {
            return self.clone();
        }
        NamespaceSet(self.0.intersection(&other.0).cloned().collect())
    }

    /// The namespaces of either; all namespaces absorbs everything.
    pub fn union(&self, other: &NamespaceSet) -> NamespaceSet {
        if self.is_all_namespaces() {
            return self.clone();
        }
        if other.is_all_namespaces() {
            return other.clone();
        }
        NamespaceSet(self.0.union(&other.0).cloned().collect())
    }

    /// Whether the two sets share a namespace — [`NamespaceSet::intersection`] is not empty —
    /// without building the intersection.
    pub fn intersects(&self, other: &NamespaceSet) -> bool {
        if self.is_all_namespaces() {
            return !other.is_empty();
        }
        if other.is_all_namespaces() {
            return !self.is_empty();
        }
        let (small, large) = if self.0.len() <= other.0.len() {
            (&self.0, &other.0)
        } else {
            (&other.0, &self.0)
        };
        small.iter().any(|n| large.contains(n))
    }

    /// Whether `namespace` is in the set (always, for all namespaces).
    pub fn contains(&self, namespace: &str) -> bool {
        self.is_all_namespaces() || self.0.contains(namespace)
    }
}

/// What an OperatorGroup looks like to the provided-API checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorGroupView {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// `status.namespaces` plus its own namespace, unless it targets all namespaces.
    pub targets: NamespaceSet,
    /// Its `olm.providedAPIs` annotation, parsed.
    pub provided_apis: ApiSet,
}

impl OperatorGroupView {
    /// The view of a group from its name, namespace, `status.namespaces` and
    /// `olm.providedAPIs` annotation (upstream's `NewOperatorGroup`): the group's own
    /// namespace joins its targets when the first status namespace is not `""`.
    pub fn new(
        name: &str,
        namespace: &str,
        status_namespaces: &[String],
        provided_apis: Option<&str>,
    ) -> OperatorGroupView {
        let mut targets = NamespaceSet::new(status_namespaces);
        if status_namespaces.first().is_some_and(|n| !n.is_empty()) {
            targets.0.insert(namespace.to_owned());
        }
        OperatorGroupView {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            targets,
            provided_apis: ApiSet::parse_annotation(provided_apis.unwrap_or_default()),
        }
    }

    /// `<name>/<namespace>`: what tells groups apart.
    pub fn identifier(&self) -> String {
        format!("{}/{}", self.name, self.namespace)
    }

    /// The groups of `others` (itself excepted) whose targets share a namespace with its own.
    pub fn group_intersection<'a>(
        &self,
        others: &'a [OperatorGroupView],
    ) -> Vec<&'a OperatorGroupView> {
        others
            .iter()
            .filter(|g| !(g.name == self.name && g.namespace == self.namespace))
            .filter(|g| self.targets.intersects(&g.targets))
            .collect()
    }
}

/// What a CSV's provided APIs mean for its OperatorGroup (upstream's
/// `APIReconciliationResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiReconciliation {
    /// The group already provides them and an intersecting group provides some of them too:
    /// take them off this group.
    RemoveApis,
    /// The group does not provide them yet and no intersecting group does: add them.
    AddApis,
    /// The group does not provide them and an intersecting group does: the CSV fails with
    /// `InterOperatorGroupOwnerConflict`.
    ApiConflict,
    /// Nothing to change.
    NoApiConflict,
}

/// Upstream's `ReconcileAPIIntersection`: `add` (the CSV's provided APIs, plurals stripped)
/// against `group`'s provided APIs and the union `I` of those of the groups it intersects:
/// subset and meeting `I` → remove; not a subset and meeting `I` → conflict; not a subset →
/// add; else no conflict.
pub fn reconcile_api_intersection(
    add: &ApiSet,
    group: &OperatorGroupView,
    others: &[OperatorGroupView],
) -> ApiReconciliation {
    // Whether an intersecting group provides one of `add`: checked group by group, so a
    // cluster with a group per namespace costs one pass, not a growing union per group.
    let intersecting = group
        .group_intersection(others)
        .into_iter()
        .any(|g| add.0.iter().any(|api| g.provided_apis.0.contains(api)));
    let subset = add.is_subset(&group.provided_apis);
    match (subset, intersecting) {
        (true, true) => ApiReconciliation::RemoveApis,
        (false, true) => ApiReconciliation::ApiConflict,
        (false, false) => ApiReconciliation::AddApis,
        (true, false) => ApiReconciliation::NoApiConflict,
    }
}
