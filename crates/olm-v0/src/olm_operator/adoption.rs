//! Whether a CSV may take over an APIService that already exists (upstream's
//! `install.IsAPIServiceAdoptable` and `ownerutil.AdoptableLabels`). A CSV that owns an
//! APIService another CSV holds fails with `OwnerConflict` ("unable to adopt APIService")
//! until that CSV makes way: an APIService is cluster-wide, and two operators serving one group
//! version would take turns pointing it at their own Service.

use std::collections::BTreeMap;

use olm_k8s::{V0_OWNER_KIND_LABEL, V0_OWNER_LABEL, V0_OWNER_NAMESPACE_LABEL};

use crate::olm_operator::strategy::CSV_KIND;

/// `OwnerConflict`'s message for an APIService the CSV may not adopt (upstream's
/// `ErrAPIServiceOwnerConflict`).
pub const APISERVICE_OWNER_CONFLICT: &str = "unable to adopt APIService";

/// The CSV that wants an existing APIService, and what the cluster holds around it.
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    /// The CSV's namespace.
    pub namespace: &'a str,
    /// The CSV's name.
    pub name: &'a str,
    /// The CSV it replaces, when that CSV exists in its namespace.
    pub replacing: Option<&'a str>,
    /// The CSV the APIService's owner labels name exists and is `Replacing` or `Deleting`.
    pub owner_making_way: bool,
}

/// Whether the APIService with owner `labels` may be adopted by `claim`: its `olm.owner`,
/// `olm.owner.namespace` and `olm.owner.kind` labels must all be set, name a CSV, and name the
/// claiming CSV, the CSV it replaces (both in its namespace), or a current owner that is
/// making way. An APIService without owner labels (made by hand, or by another tool) is never
/// adopted.
pub fn apiservice_adoptable(labels: &BTreeMap<String, String>, claim: &Claim<'_>) -> bool {
    let get = |k: &str| labels.get(k).map(String::as_str).unwrap_or("");
    let (kind, namespace, name) = (
        get(V0_OWNER_KIND_LABEL),
        get(V0_OWNER_NAMESPACE_LABEL),
        get(V0_OWNER_LABEL),
    );
    if kind.is_empty() || namespace.is_empty() || name.is_empty() || kind != CSV_KIND {
        return false;
    }
    claim.owner_making_way
        || (namespace == claim.namespace && (name == claim.name || claim.replacing == Some(name)))
}

/// The CSV an APIService's owner labels name (`namespace`, `name`), when they name one
/// (upstream's `ownerutil.GetOwnerByKindLabel` for kind `ClusterServiceVersion`).
pub fn owner_csv(labels: &BTreeMap<String, String>) -> Option<(&str, &str)> {
    let get = |k: &str| labels.get(k).map(String::as_str).filter(|v| !v.is_empty());
    (get(V0_OWNER_KIND_LABEL)? == CSV_KIND)
        .then(|| Some((get(V0_OWNER_NAMESPACE_LABEL)?, get(V0_OWNER_LABEL)?)))
        .flatten()
}

/// Whether the APIService with owner `labels` is left by a CSV that is gone and must be
/// deleted (upstream's `syncAPIService`): its labels name a CSV and `csv_exists` says there
/// is none of that namespace and name (a namespace that is gone holds none). An APIService
/// whose CSV was deleted while OLM was not running, or that a backup restored, would otherwise
/// route its group version to a Service nobody serves, and the aggregator's failed discovery
/// makes every namespace deletion wait on it.
pub fn orphaned(
    labels: &BTreeMap<String, String>,
    csv_exists: impl FnOnce(&str, &str) -> bool,
) -> bool {
    owner_csv(labels).is_some_and(|(namespace, name)| !csv_exists(namespace, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(kind: &str, namespace: &str, name: &str) -> BTreeMap<String, String> {
        [
            (V0_OWNER_KIND_LABEL, kind),
            (V0_OWNER_NAMESPACE_LABEL, namespace),
            (V0_OWNER_LABEL, name),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// Upstream's rules (OLM repo `pkg/controller/install/apiservice.go`
    /// `IsAPIServiceAdoptable`), one case each; the e2e specs "update with owned API service"
    /// (a CSV re-created beside the one that replaced it gets `OwnerConflict`) and "API service
    /// resource not migrated if not adoptable" rely on them.
    #[test]
    fn adoption_follows_the_owner_labels() {
        let claim = Claim {
            namespace: "ops",
            name: "hat.v2",
            replacing: Some("hat.v1"),
            owner_making_way: false,
        };
        let cases = [
            (owner(CSV_KIND, "ops", "hat.v2"), claim, true),
            (owner(CSV_KIND, "ops", "hat.v1"), claim, true),
            (owner(CSV_KIND, "ops", "other"), claim, false),
            (owner(CSV_KIND, "elsewhere", "hat.v2"), claim, false),
            (owner("OperatorGroup", "ops", "hat.v2"), claim, false),
            (owner(CSV_KIND, "", "hat.v2"), claim, false),
            (BTreeMap::new(), claim, false),
            (
                BTreeMap::new(),
                Claim {
                    owner_making_way: true,
                    ..claim
                },
                false,
            ),
            (
                owner(CSV_KIND, "ops", "other"),
                Claim {
                    owner_making_way: true,
                    ..claim
                },
                true,
            ),
            (
                owner(CSV_KIND, "ops", "hat.v1"),
                Claim {
                    replacing: None,
                    ..claim
                },
                false,
            ),
        ];
        for (i, (labels, claim, want)) in cases.iter().enumerate() {
            assert_eq!(
                apiservice_adoptable(labels, claim),
                *want,
                "case {i}: {labels:?}"
            );
        }
    }

    /// Upstream's `syncAPIService` deletes an APIService whose owner CSV (or its namespace) is
    /// gone; the e2e spec "orphaned API service clean up" labels a hand-made APIService with a
    /// CSV in a namespace that does not exist, then with one missing from an existing namespace.
    #[test]
    fn an_apiservice_whose_csv_is_gone_is_orphaned() {
        let exists = |ns: &str, name: &str| ns == "ops" && name == "hat.v1";
        assert!(!orphaned(&owner(CSV_KIND, "ops", "hat.v1"), exists));
        assert!(orphaned(&owner(CSV_KIND, "ops", "hat-serverfd4r5"), exists));
        assert!(orphaned(
            &owner(CSV_KIND, "nonexistent-namespace", "hat.v1"),
            exists
        ));
        // Not owned by a CSV, or not fully labelled: never OLM v0's to delete.
        assert!(!orphaned(&owner("OperatorGroup", "ops", "x"), exists));
        assert!(!orphaned(&owner(CSV_KIND, "", "x"), exists));
        assert!(!orphaned(&owner(CSV_KIND, "ops", ""), exists));
        assert!(!orphaned(&BTreeMap::new(), exists));
    }
}
