//! Install modes: which OperatorGroup shapes a CSV supports (the API repo's
//! `InstallModeSet`, `pkg/operators/v1alpha1/clusterserviceversion.go`). A CSV that does not
//! support its group's shape fails with `UnsupportedOperatorGroup` and the message of
//! [`InstallModeSet::supports`].

use std::collections::BTreeMap;

/// A CSV's install modes are the bundle's model ([`olm_bundle::csv`]): one type for the bundle
/// tooling and OLM v0 alike. An unknown type is kept as written and never supports anything.
pub use olm_v0_api::v1alpha1::{InstallMode, InstallModeType};

/// Why a CSV's install modes do not fit its OperatorGroup; each shows as upstream's message,
/// which the CSV's `status.message` carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallModeError {
    /// A type is listed twice: the `InvalidInstallModes` message, with Go's `%v` of the list.
    #[error("InstallMode list contains duplicates, cannot make set: [{listed}]")]
    Duplicates {
        /// Every mode as `{Type supported}`, space-separated.
        listed: String,
    },
    /// The group selects no namespace.
    #[error(
        "operatorgroup has invalid selected namespaces, cannot configure to watch zero namespaces"
    )]
    ZeroNamespaces,
    /// `""` (all namespaces) among several.
    #[error(
        "operatorgroup has invalid selected namespaces, NamespaceAll found when |selected namespaces| > 1"
    )]
    AllAmongSeveral,
    /// The shape needs a mode the CSV does not support.
    #[error("{mode} InstallModeType not supported, cannot configure to watch {what}")]
    Unsupported {
        /// The mode the shape needs.
        mode: InstallModeType,
        /// What the group targets: `own namespace`, `all namespaces`, `one namespace`, `N
        /// namespaces`.
        what: String,
    },
}

/// The install modes of a CSV; a type not listed is not supported.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InstallModeSet(pub BTreeMap<InstallModeType, bool>);

impl InstallModeSet {
    /// The set of `modes`, or upstream's error when a type is listed twice:
    /// `InstallMode list contains duplicates, cannot make set: [{OwnNamespace true} …]` (Go's
    /// `%v` of the list), the `InvalidInstallModes` message.
    pub fn new(modes: &[InstallMode]) -> Result<InstallModeSet, InstallModeError> {
        let mut set = BTreeMap::new();
        for m in modes {
            if set.insert(m.type_.clone(), m.supported).is_some() {
                let listed: Vec<String> = modes
                    .iter()
                    .map(|m| format!("{{{} {}}}", m.type_, m.supported))
                    .collect();
                return Err(InstallModeError::Duplicates {
                    listed: listed.join(" "),
                });
            }
        }
        Ok(InstallModeSet(set))
    }

    fn has(&self, t: InstallModeType) -> bool {
        self.0.get(&t).copied().unwrap_or(false)
    }

    /// Whether a CSV in `operator_namespace` may watch `namespaces` (its group's target
    /// namespaces, `[""]` for all), with upstream's messages:
    ///
    /// - none: `operatorgroup has invalid selected namespaces, cannot configure to watch zero namespaces`;
    /// - one, the CSV's own: needs `OwnNamespace`; `""`: needs `AllNamespaces`; another: needs
    ///   `SingleNamespace` (`<Type> InstallModeType not supported, cannot configure to watch own
    ///   namespace|all namespaces|one namespace`);
    /// - several: needs `MultiNamespace` (`… cannot configure to watch N namespaces`), and
    ///   `OwnNamespace` when the CSV's namespace is among them; `""` among several is
    ///   `operatorgroup has invalid selected namespaces, NamespaceAll found when |selected namespaces| > 1`.
    pub fn supports(
        &self,
        operator_namespace: &str,
        namespaces: &[String],
    ) -> Result<(), InstallModeError> {
        use InstallModeType::*;
        let unsupported = |mode: InstallModeType, what: &str| {
            Err(InstallModeError::Unsupported {
                mode,
                what: what.to_owned(),
            })
        };
        match namespaces {
            [] => Err(InstallModeError::ZeroNamespaces),
            [one] if one == operator_namespace => {
                if self.has(OwnNamespace) {
                    Ok(())
                } else {
                    unsupported(OwnNamespace, "own namespace")
                }
            }
            [one] if one.is_empty() => {
                if self.has(AllNamespaces) {
                    Ok(())
                } else {
                    unsupported(AllNamespaces, "all namespaces")
                }
            }
            [_] => {
                if self.has(SingleNamespace) {
                    Ok(())
                } else {
                    unsupported(SingleNamespace, "one namespace")
                }
            }
            many if !self.has(MultiNamespace) => {
                unsupported(MultiNamespace, &format!("{} namespaces", many.len()))
            }
            many => {
                for ns in many {
                    if ns == operator_namespace && !self.has(OwnNamespace) {
                        return unsupported(OwnNamespace, "own namespace");
                    }
                    if ns.is_empty() {
                        return Err(InstallModeError::AllAmongSeveral);
                    }
                }
                Ok(())
            }
        }
    }
}
