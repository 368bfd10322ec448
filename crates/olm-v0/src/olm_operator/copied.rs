//! Copied CSVs (OLM repo `pkg/controller/operators/olm/operatorgroup.go`
//! `ensureCSVsInNamespaces`, `csvCopyPrototype`; `operator.go` `removeDanglingChildCSVs`;
//! `olmconfig` handling): a copy of each active CSV in every namespace its group targets, telling
//! users there which operator watches them; and their removal when the parent goes away, stops
//! targeting the namespace, clashes with another group, or copies are disabled for
//! AllNamespaces operators.

use std::collections::BTreeMap;

use olm_v0_api::v1alpha1::{ClusterServiceVersionPhase as Phase, ConditionReason as Reason};

use crate::olm_operator::groups::NamespaceSet;
use crate::olm_operator::membership::{
    OPERATOR_NAMESPACE_ANNOTATION, TARGET_NAMESPACES_ANNOTATION,
};
use crate::olm_operator::status::COPIED_FROM_LABEL;

/// Label prefix of Operator aggregate components, not carried over to copies.
pub const COMPONENT_LABEL_PREFIX: &str = "operators.coreos.com/";
/// The annotation kubectl keeps the last applied object in: large, and meaningless on a copy.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Reason of the Warning event on a CSV whose copies are disabled.
pub const DISABLED_EVENT_REASON: &str = "DisabledCopiedCSVs";

/// A copy's `status.message`.
pub fn copied_message(source_namespace: &str) -> String {
    format!("The operator is running in {source_namespace} but is managing this namespace")
}

/// The disabled-copies event's message.
pub fn disabled_message(namespace: &str, name: &str) -> String {
    format!("CSV copying disabled for {namespace}/{name}")
}

/// The field selector of the disabled-copies events of the CSV `namespace/name`, which go once
/// copies are enabled again (seed 001; upstream's `deleteCSVCopyingDisabledEvent` in
/// `pkg/controller/operators/olm/operator.go`, an Events `DeleteCollection` with these fields).
pub fn disabled_events_selector(namespace: &str, name: &str) -> String {
    format!(
        "involvedObject.kind=ClusterServiceVersion,involvedObject.name={name},involvedObject.namespace={namespace},reason={DISABLED_EVENT_REASON}"
    )
}

/// A copy's labels and annotations from its parent's: labels without Operator component labels
/// plus `olm.copiedFrom: <source namespace>`; annotations without `olm.targetNamespaces` and
/// kubectl's last-applied configuration.
pub fn copied_metadata(
    source_namespace: &str,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut l: BTreeMap<String, String> = labels
        .iter()
        .filter(|(k, _)| !k.starts_with(COMPONENT_LABEL_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    l.insert(COPIED_FROM_LABEL.to_owned(), source_namespace.to_owned());
    let a = annotations
        .iter()
        .filter(|(k, _)| *k != TARGET_NAMESPACES_ANNOTATION && *k != LAST_APPLIED_ANNOTATION)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (l, a)
}

/// Where a group's CSV is copied and where its copies are pruned: every namespace of the
/// cluster but the group's own, by whether the group targets it (all namespaces target every
/// one), each list sorted.
pub fn copy_plan(
    group_namespace: &str,
    targets: &NamespaceSet,
    namespaces: &[String],
) -> (Vec<String>, Vec<String>) {
    let mut copy = Vec::new();
    let mut prune = Vec::new();
    for ns in namespaces {
        if ns == group_namespace {
            continue;
        }
        if targets.contains(ns) {
            copy.push(ns.clone());
        } else {
            prune.push(ns.clone());
        }
    }
    copy.sort();
    prune.sort();
    (copy, prune)
}

/// The parent of a copy, as the garbage collection reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent<'a> {
    /// Its namespace.
    pub namespace: &'a str,
    /// Its phase, if any.
    pub phase: Option<&'a Phase>,
    /// Its reason, if any.
    pub reason: Option<&'a Reason>,
    /// Its annotations.
    pub annotations: &'a BTreeMap<String, String>,
}

/// Why the copy in `namespace` (with its annotations) must go, if it must: no
/// `olm.operatorNamespace` annotation, no parent, the parent failed with
/// `InterOperatorGroupOwnerConflict`, the parent's targets no longer include the namespace, or
/// the copy sits in its parent's own namespace.
pub fn dangling(
    namespace: &str,
    annotations: &BTreeMap<String, String>,
    parent: Option<&Parent<'_>>,
) -> Option<&'static str> {
    if !annotations.contains_key(OPERATOR_NAMESPACE_ANNOTATION) {
        return Some("missing operator namespace annotation on copied CSV");
    }
    let Some(p) = parent else {
        return Some("parent is missing");
    };
    if p.phase == Some(&Phase::Failed) && p.reason == Some(&Reason::InterOperatorGroupOwnerConflict)
    {
        return Some("parent has intersecting operatorgroup conflict");
    }
    let targets = p
        .annotations
        .get(TARGET_NAMESPACES_ANNOTATION)
        .map(String::as_str)
        .unwrap_or_default();
    if !NamespaceSet::from_annotation(targets).contains(namespace) {
        return Some("parent no longer lists this as a target namespace");
    }
    if p.namespace == namespace {
        return Some("copy is in its parent's namespace");
    }
    None
}

/// Whether an existing CSV (by its labels) may be overwritten by the copy of a parent in
/// `parent_namespace`: only when it is already that parent's copy (`olm.copiedFrom` names the
/// parent's namespace). A same-named CSV that someone installed in a target namespace, or a copy
/// of another parent, is not OLM's to replace: upstream's copy lister sees only copies, so its
/// create fails with AlreadyExists and the original stays.
pub fn may_overwrite(labels: &BTreeMap<String, String>, parent_namespace: &str) -> bool {
    labels
        .get(crate::olm_operator::status::COPIED_FROM_LABEL)
        .is_some_and(|from| from == parent_namespace)
}

/// Whether copies of a CSV are disabled: `OLMConfig cluster` says so (`None`: no OLMConfig, or
/// the field unset) and its group targets all namespaces — copies of explicit-target operators
/// always exist.
pub fn copies_disabled(disable_copied_csvs: Option<bool>, group_targets: &NamespaceSet) -> bool {
    disable_copied_csvs.unwrap_or(false) && group_targets.is_all_namespaces()
}

/// What the copy pass reads of one CSV (upstream's `ensureCSVsInNamespaces` inputs).
pub struct Observed<'a> {
    /// Its phase, if it has one.
    pub phase: Option<&'a Phase>,
    /// Its reason, if it has one.
    pub reason: Option<&'a Reason>,
    /// Whether it is being deleted.
    pub deleting: bool,
    /// The namespace and `status.namespaces` of each OperatorGroup in its namespace.
    pub groups: &'a [(&'a str, &'a [String])],
    /// `OLMConfig cluster`'s `spec.features.disableCopiedCSVs`, if set.
    pub disable_copied_csvs: Option<bool>,
    /// Every namespace of the cluster, asked for only when the CSV is copied: at 10,000
    /// namespaces the list is not worth making for a CSV that holds its copies or has none.
    pub namespaces: &'a dyn Fn() -> Vec<String>,
}

/// What the copy pass does for one CSV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The CSV is on its way to a settled phase: its copies are left as they are. Each phase it
    /// passes through would otherwise rewrite every copy (10,000 writes per step at 10,000
    /// namespaces), and those writes would hold up the very install they report on.
    Hold,
    /// The copies it should have, in these namespaces (none: every copy goes).
    Copies {
        /// The namespaces, sorted.
        wanted: Vec<String>,
        /// Copies are disabled for it: the `DisabledCopiedCSVs` event is recorded.
        disabled: bool,
        /// It targets every namespace with copies on: any `DisabledCopiedCSVs` events of it
        /// are deleted.
        clear_disabled_events: bool,
        /// The copies' namespaces its group names explicitly, where its RBAC is given to it as a
        /// tenant (a global group's operator gets it cluster-wide instead).
        tenants: Vec<String>,
    },
}

/// The copy decision: none while the CSV is on its way to a settled phase; none left (every
/// copy deleted) when it is uncopiable (no phase, an unknown one, `Deleting`, being deleted, or
/// an uncopiable reason) or its namespace has no single OperatorGroup; none when copies are
/// disabled; else one in each namespace its group targets but the group's own.
pub fn decide(o: &Observed<'_>) -> Decision {
    let uncopiable_reason = o
        .reason
        .is_some_and(crate::olm_operator::status::uncopiable);
    if matches!(
        o.phase,
        Some(Phase::Pending | Phase::InstallReady | Phase::Installing)
    ) && !uncopiable_reason
    {
        return Decision::Hold;
    }
    // A phase OLM does not know counts as none: the CSV has not been looked at yet.
    let uncopiable = o
        .phase
        .is_none_or(|p| matches!(p, Phase::Deleting | Phase::Other(_)))
        || uncopiable_reason
        || o.deleting;
    let none = |disabled| Decision::Copies {
        wanted: Vec::new(),
        disabled,
        clear_disabled_events: false,
        tenants: Vec::new(),
    };
    let (false, [(group_namespace, targets)]) = (uncopiable, o.groups) else {
        return none(false);
    };
    let set = NamespaceSet::new(targets);
    if copies_disabled(o.disable_copied_csvs, &set) {
        return none(true);
    }
    let wanted = copy_plan(group_namespace, &set, &(o.namespaces)()).0;
    let tenants = if set.is_all_namespaces() {
        Vec::new()
    } else {
        targets
            .iter()
            .filter(|t| wanted.contains(t))
            .cloned()
            .collect()
    };
    Decision::Copies {
        clear_disabled_events: set.is_all_namespaces(),
        wanted,
        disabled: false,
        tenants,
    }
}

/// One copy to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The namespace it is in.
    pub namespace: String,
    /// Whether it exists already (then it is updated).
    pub exists: bool,
    /// Whether its name, labels, annotations or spec change.
    pub spec: bool,
    /// Whether its status changes.
    pub status: bool,
}

/// The copies to write and the namespaces whose copy is deleted, from the `wanted` namespaces
/// and the `existing` copies (namespace → their spec and status hashes) against the prototype's
/// hashes: a copy whose hashes match is left alone, so a settled cluster is not rewritten.
pub fn writes(
    wanted: &[String],
    existing: &BTreeMap<&str, (&str, &str)>,
    spec_hash: &str,
    status_hash: &str,
) -> (Vec<Write>, Vec<String>) {
    let mut out = Vec::new();
    for ns in wanted {
        match existing.get(ns.as_str()) {
            Some(&(spec, status)) if spec == spec_hash && status == status_hash => {}
            Some(&(spec, status)) => out.push(Write {
                namespace: ns.clone(),
                exists: true,
                spec: spec != spec_hash,
                status: status != status_hash,
            }),
            None => out.push(Write {
                namespace: ns.clone(),
                exists: false,
                spec: true,
                status: true,
            }),
        }
    }
    let deletes = existing
        .keys()
        .filter(|ns| !wanted.iter().any(|w| w == **ns))
        .map(|ns| (*ns).to_owned())
        .collect();
    (out, deletes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    /// Upstream's `ensureCSVsInNamespaces`/`IsUncopiable` and `syncOLMConfig` cases, as data:
    /// (phase, reason, deleting, groups' targets, disableCopiedCSVs, decision).
    #[test]
    fn copy_decisions() {
        let namespaces = s(&["ops", "a", "b", "c"]);
        let all = s(&[""]);
        let ab = s(&["a", "b"]);
        let own = s(&["ops"]);
        let copies = |wanted: &[&str], tenants: &[&str], clear: bool| Decision::Copies {
            wanted: s(wanted),
            disabled: false,
            clear_disabled_events: clear,
            tenants: s(tenants),
        };
        let none = copies(&[], &[], false);
        type Case<'a> = (
            Option<Phase>,
            Option<Reason>,
            bool,
            Vec<&'a [String]>,
            Option<bool>,
            Decision,
        );
        let cases: Vec<Case<'_>> = vec![
            // Settled and global: everywhere but its own namespace; disabled events cleared.
            (
                Some(Phase::Succeeded),
                None,
                false,
                vec![&all],
                None,
                copies(&["a", "b", "c"], &[], true),
            ),
            // Explicit targets: those, given RBAC as a tenant there.
            (
                Some(Phase::Succeeded),
                None,
                false,
                vec![&ab],
                Some(true),
                copies(&["a", "b"], &["a", "b"], false),
            ),
            // Its own namespace only: nothing to copy.
            (
                Some(Phase::Failed),
                None,
                false,
                vec![&own],
                None,
                none.clone(),
            ),
            // On its way: left as they are.
            (
                Some(Phase::Installing),
                None,
                false,
                vec![&all],
                None,
                Decision::Hold,
            ),
            (
                Some(Phase::Pending),
                None,
                false,
                vec![&all],
                None,
                Decision::Hold,
            ),
            // ...unless its reason makes it uncopiable: then every copy goes.
            (
                Some(Phase::Pending),
                Some(Reason::TooManyOperatorGroups),
                false,
                vec![&all],
                None,
                none.clone(),
            ),
            (
                Some(Phase::Failed),
                Some(Reason::Copied),
                false,
                vec![&all],
                None,
                none.clone(),
            ),
            // No phase yet, an unknown one, Deleting, being deleted.
            (None, None, false, vec![&all], None, none.clone()),
            (
                Some(Phase::Other("Weird".into())),
                None,
                false,
                vec![&all],
                None,
                none.clone(),
            ),
            (
                Some(Phase::Deleting),
                None,
                false,
                vec![&all],
                None,
                none.clone(),
            ),
            (
                Some(Phase::Succeeded),
                None,
                true,
                vec![&all],
                None,
                none.clone(),
            ),
            // No group, or two.
            (
                Some(Phase::Succeeded),
                None,
                false,
                vec![],
                None,
                none.clone(),
            ),
            (
                Some(Phase::Succeeded),
                None,
                false,
                vec![&all, &ab],
                None,
                none.clone(),
            ),
            // Copies disabled for a global operator: none, and the event.
            (
                Some(Phase::Succeeded),
                None,
                false,
                vec![&all],
                Some(true),
                Decision::Copies {
                    wanted: vec![],
                    disabled: true,
                    clear_disabled_events: false,
                    tenants: vec![],
                },
            ),
            (
                Some(Phase::Succeeded),
                None,
                false,
                vec![&all],
                Some(false),
                copies(&["a", "b", "c"], &[], true),
            ),
        ];
        for (phase, reason, deleting, targets, disable, want) in cases {
            let groups: Vec<(&str, &[String])> = targets.iter().map(|t| ("ops", &t[..])).collect();
            let got = decide(&Observed {
                phase: phase.as_ref(),
                reason: reason.as_ref(),
                deleting,
                groups: &groups,
                disable_copied_csvs: disable,
                namespaces: &|| namespaces.clone(),
            });
            assert_eq!(
                got, want,
                "{phase:?} {reason:?} deleting={deleting} {targets:?} {disable:?}"
            );
        }
    }

    #[test]
    fn only_changed_copies_are_written() {
        let existing: BTreeMap<&str, (&str, &str)> = [
            ("a", ("S", "T")),
            ("b", ("S", "old")),
            ("c", ("old", "T")),
            ("gone", ("S", "T")),
        ]
        .into_iter()
        .collect();
        let (writes, deletes) = writes(&s(&["a", "b", "c", "new"]), &existing, "S", "T");
        let w = |ns: &str, exists, spec, status| Write {
            namespace: ns.to_owned(),
            exists,
            spec,
            status,
        };
        assert_eq!(
            writes,
            vec![
                w("b", true, false, true),
                w("c", true, true, false),
                w("new", false, true, true)
            ]
        );
        assert_eq!(deletes, s(&["gone"]));
    }

    /// Only the parent's own copy is replaced (upstream's `copyToNamespace` reads existing
    /// copies through a lister of `olm.copiedFrom`-labelled CSVs, so it never updates another).
    #[test]
    fn only_the_parents_own_copy_is_overwritten() {
        let labels = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
            v.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert!(may_overwrite(&labels(&[("olm.copiedFrom", "ops")]), "ops"));
        assert!(!may_overwrite(
            &labels(&[("olm.copiedFrom", "other")]),
            "ops"
        ));
        assert!(!may_overwrite(&labels(&[]), "ops"));
        assert!(!may_overwrite(&labels(&[("app", "x")]), "ops"));
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn metadata_of_a_copy() {
        let (l, a) = copied_metadata(
            "ops",
            &map(&[("app", "x"), ("operators.coreos.com/etcd.ops", "")]),
            &map(&[
                ("olm.targetNamespaces", ""),
                ("olm.operatorNamespace", "ops"),
                ("kubectl.kubernetes.io/last-applied-configuration", "{}"),
                ("alm-examples", "[]"),
            ]),
        );
        assert_eq!(l, map(&[("app", "x"), ("olm.copiedFrom", "ops")]));
        assert_eq!(
            a,
            map(&[("olm.operatorNamespace", "ops"), ("alm-examples", "[]")])
        );
        assert_eq!(
            copied_message("ops"),
            "The operator is running in ops but is managing this namespace"
        );
    }

    #[test]
    fn plan_and_garbage_collection() {
        let all = NamespaceSet::new(&[""]);
        let ns: Vec<String> = ["ops", "b", "a"].iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(
            copy_plan("ops", &all, &ns),
            (vec!["a".to_owned(), "b".to_owned()], vec![])
        );
        let explicit = NamespaceSet::new(&["a"]);
        assert_eq!(
            copy_plan("ops", &explicit, &ns),
            (vec!["a".to_owned()], vec!["b".to_owned()])
        );

        let copy = map(&[("olm.operatorNamespace", "ops")]);
        let parent_annotations = map(&[("olm.targetNamespaces", "a")]);
        let parent = Parent {
            namespace: "ops",
            phase: Some(&Phase::Succeeded),
            reason: Some(&Reason::InstallSucceeded),
            annotations: &parent_annotations,
        };
        assert_eq!(dangling("a", &copy, Some(&parent)), None);
        assert!(dangling("b", &copy, Some(&parent)).is_some());
        assert!(dangling("a", &copy, None).is_some());
        assert!(dangling("a", &BTreeMap::new(), Some(&parent)).is_some());
        let conflicted = Parent {
            phase: Some(&Phase::Failed),
            reason: Some(&Reason::InterOperatorGroupOwnerConflict),
            ..parent.clone()
        };
        assert!(dangling("a", &copy, Some(&conflicted)).is_some());
        let all_targets = map(&[("olm.targetNamespaces", "")]);
        let global = Parent {
            annotations: &all_targets,
            ..parent
        };
        assert_eq!(dangling("b", &copy, Some(&global)), None);
    }

    #[test]
    fn disabling_applies_to_all_namespace_operators_only() {
        assert!(copies_disabled(Some(true), &NamespaceSet::new(&[""])));
        assert!(!copies_disabled(Some(true), &NamespaceSet::new(&["a"])));
        assert!(!copies_disabled(None, &NamespaceSet::new(&[""])));
        assert_eq!(
            disabled_events_selector("ops", "etcd.v1"),
            "involvedObject.kind=ClusterServiceVersion,involvedObject.name=etcd.v1,involvedObject.namespace=ops,reason=DisabledCopiedCSVs"
        );
        assert_eq!(
            disabled_message("ops", "etcd.v1"),
            "CSV copying disabled for ops/etcd.v1"
        );
    }
}
