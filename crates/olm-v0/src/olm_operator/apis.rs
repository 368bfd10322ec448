//! Sets of APIs as OperatorGroups record them: the `olm.providedAPIs` annotation, a sorted,
//! comma-joined list of `<Kind>.<version>.<group>` (upstream's `cache.APISet` and its
//! `GVKStringToProvidedAPISet` / `String`).

use std::collections::BTreeSet;
use std::fmt;

/// One API: group, version, kind and (where known) plural.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ApiKey {
    /// API group (`""` for the core group).
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Resource plural; empty in sets read from annotations.
    pub plural: String,
}

impl ApiKey {
    /// An API without a plural.
    pub fn gvk(group: &str, version: &str, kind: &str) -> ApiKey {
        ApiKey {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            plural: String::new(),
        }
    }

    /// `<Kind>.<version>.<group>`, the annotation's spelling (upstream's `APIKeyToGVKString`).
    pub fn gvk_string(&self) -> String {
        format!("{}.{}.{}", self.kind, self.version, self.group)
    }
}

/// A set of APIs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApiSet(pub BTreeSet<ApiKey>);

impl ApiSet {
    /// The set of an `olm.providedAPIs` annotation: spaces removed, split at commas, each entry
    /// split at its first two dots into kind, version and group (apimachinery's
    /// `ParseKindArg`); entries with fewer than two dots are dropped, as upstream drops them.
    pub fn parse_annotation(text: &str) -> ApiSet {
        let text: String = text.chars().filter(|c| *c != ' ').collect();
        ApiSet(
            text.split(',')
                .filter_map(|entry| {
                    let mut parts = entry.splitn(3, '.');
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some(kind), Some(version), Some(group)) => {
                            Some(ApiKey::gvk(group, version, kind))
                        }
                        _ => None,
                    }
                })
                .collect(),
        )
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The APIs of both.
    pub fn union(&self, other: &ApiSet) -> ApiSet {
        ApiSet(self.0.union(&other.0).cloned().collect())
    }

    /// The APIs in both.
    pub fn intersection(&self, other: &ApiSet) -> ApiSet {
        ApiSet(self.0.intersection(&other.0).cloned().collect())
    }

    /// The APIs of `self` not in `other`.
    pub fn difference(&self, other: &ApiSet) -> ApiSet {
        ApiSet(self.0.difference(&other.0).cloned().collect())
    }

    /// Whether every API of `self` is in `other` (the empty set is a subset of every set).
    pub fn is_subset(&self, other: &ApiSet) -> bool {
        self.0.is_subset(&other.0)
    }

    /// The same APIs without plurals (to compare with sets read from annotations).
    pub fn strip_plural(&self) -> ApiSet {
        ApiSet(
            self.0
                .iter()
                .map(|k| ApiKey::gvk(&k.group, &k.version, &k.kind))
                .collect(),
        )
    }
}

impl fmt::Display for ApiSet {
    /// The annotation's value: `<Kind>.<version>.<group>` of each API, sorted as strings, joined
    /// with commas.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut all: Vec<String> = self.0.iter().map(ApiKey::gvk_string).collect();
        all.sort();
        f.write_str(&all.join(","))
    }
}

impl FromIterator<ApiKey> for ApiSet {
    fn from_iter<I: IntoIterator<Item = ApiKey>>(iter: I) -> ApiSet {
        ApiSet(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_annotation_round_trips_sorted() {
        let set = ApiSet::parse_annotation(
            "EtcdCluster.v1beta2.etcd.database.coreos.com, EtcdBackup.v1beta2.etcd.database.coreos.com,bogus,Only.one",
        );
        assert_eq!(set.0.len(), 2);
        assert_eq!(
            set.to_string(),
            "EtcdBackup.v1beta2.etcd.database.coreos.com,EtcdCluster.v1beta2.etcd.database.coreos.com"
        );
        assert!(ApiSet::parse_annotation("").is_empty());
        // The group keeps its dots: only the first two split.
        let k = ApiSet::parse_annotation("Kind.v1.a.b.c");
        assert_eq!(k.0.iter().next().map(|k| k.group.as_str()), Some("a.b.c"));
    }

    #[test]
    fn set_operations() {
        let a = ApiSet::parse_annotation("A.v1.g,B.v1.g");
        let b = ApiSet::parse_annotation("B.v1.g,C.v1.g");
        assert_eq!(a.union(&b).to_string(), "A.v1.g,B.v1.g,C.v1.g");
        assert_eq!(a.intersection(&b).to_string(), "B.v1.g");
        assert_eq!(a.difference(&b).to_string(), "A.v1.g");
        assert!(ApiSet::default().is_subset(&a));
        assert!(!a.is_subset(&b));
        let plural = ApiSet(
            [ApiKey {
                plural: "as".into(),
                ..ApiKey::gvk("g", "v1", "A")
            }]
            .into(),
        );
        assert!(plural.strip_plural().is_subset(&a));
    }
}
