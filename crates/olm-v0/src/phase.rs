//! ClusterServiceVersion phases and reasons, spelled as OLM v0 writes them into
//! `status.phase` and `status.reason` (API repo
//! `pkg/operators/v1alpha1/clusterserviceversion_types.go`). Users and tools match on these
//! strings, so each is pinned by a test.

macro_rules! spelled {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The spelling in the CSV's status.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The value spelled `s`, if any.
            pub fn parse(s: &str) -> Option<$name> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

spelled! {
    /// `status.phase`.
    Phase {
        /// Not yet looked at (`""`).
        None => "",
        /// Requirements are being checked.
        Pending => "Pending",
        /// Requirements are met; installing next.
        InstallReady => "InstallReady",
        /// Waiting for the install to report healthy.
        Installing => "Installing",
        /// Installed and healthy.
        Succeeded => "Succeeded",
        /// Failed; the reason says why.
        Failed => "Failed",
        /// Declared upstream, never set.
        Unknown => "Unknown",
        /// A newer CSV replaces this one.
        Replacing => "Replacing",
        /// Replaced and being deleted.
        Deleting => "Deleting",
    }
}

spelled! {
    /// `status.reason`.
    Reason {
        /// Requirements not yet checked.
        RequirementsUnknown => "RequirementsUnknown",
        /// A requirement is missing.
        RequirementsNotMet => "RequirementsNotMet",
        /// Every requirement is present.
        AllRequirementsMet => "AllRequirementsMet",
        /// Another CSV owns the same CRD or APIService.
        OwnerConflict => "OwnerConflict",
        /// The install strategy failed (retried).
        InstallComponentFailed => "InstallComponentFailed",
        /// The install strategy failed for good.
        InstallComponentFailedNoRetry => "InstallComponentFailedNoRetry",
        /// The install strategy is invalid.
        InvalidInstallStrategy => "InvalidInstallStrategy",
        /// Waiting for components.
        InstallWaiting => "InstallWaiting",
        /// Installed.
        InstallSucceeded => "InstallSucceeded",
        /// The install did not become healthy in time.
        InstallCheckFailed => "InstallCheckFailed",
        /// A component of a succeeded CSV regressed.
        ComponentUnhealthy => "ComponentUnhealthy",
        /// A newer CSV replaces this one.
        BeingReplaced => "BeingReplaced",
        /// The replacement succeeded.
        Replaced => "Replaced",
        /// The install must be redone.
        NeedsReinstall => "NeedsReinstall",
        /// A serving certificate is due.
        NeedsCertRotation => "NeedsCertRotation",
        /// Resources of an owned APIService are missing or wrong.
        ApiServiceResourceIssue => "APIServiceResourceIssue",
        /// Resources of an owned APIService must be reinstalled.
        ApiServiceResourcesNeedReinstall => "APIServiceResourcesNeedReinstall",
        /// An owned APIService is not available.
        ApiServiceInstallFailed => "APIServiceInstallFailed",
        /// A copy of a CSV of another namespace.
        Copied => "Copied",
        /// `spec.installModes` lists a type twice.
        InvalidInstallModes => "InvalidInstallModes",
        /// The group selects no namespace.
        NoTargetNamespaces => "NoTargetNamespaces",
        /// The install modes do not support the group's shape.
        UnsupportedOperatorGroup => "UnsupportedOperatorGroup",
        /// No OperatorGroup in the namespace.
        NoOperatorGroup => "NoOperatorGroup",
        /// Several OperatorGroups in the namespace.
        TooManyOperatorGroups => "TooManyOperatorGroups",
        /// An intersecting group provides the same APIs.
        InterOperatorGroupOwnerConflict => "InterOperatorGroupOwnerConflict",
        /// The group's provided APIs are static and would change.
        CannotModifyStaticOperatorGroupProvidedApis => "CannotModifyStaticOperatorGroupProvidedAPIs",
        /// RBAC or the group's ServiceAccount changed: try again.
        DetectedClusterChange => "DetectedClusterChange",
        /// A webhook definition is repeated or not allowed.
        InvalidWebhookDescription => "InvalidWebhookDescription",
        /// The CSV being replaced says it is not upgradeable.
        OperatorConditionNotUpgradeable => "OperatorConditionNotUpgradeable",
        /// Declared upstream, never set.
        WaitingOnCleanup => "WaitingOnCleanup",
    }
}

impl Reason {
    /// Whether a CSV with this reason is never copied to target namespaces (upstream's
    /// `IsUncopiable`, which also counts phase None).
    pub fn is_uncopiable(self) -> bool {
        matches!(
            self,
            Reason::Copied
                | Reason::InvalidInstallModes
                | Reason::NoTargetNamespaces
                | Reason::UnsupportedOperatorGroup
                | Reason::NoOperatorGroup
                | Reason::TooManyOperatorGroups
                | Reason::InterOperatorGroupOwnerConflict
                | Reason::CannotModifyStaticOperatorGroupProvidedApis
        )
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's spellings (API repo `clusterserviceversion_types.go`).
    #[test]
    fn spelled_as_upstream() {
        let phases: Vec<&str> = Phase::ALL.iter().map(|p| p.as_str()).collect();
        assert_eq!(
            phases,
            [
                "",
                "Pending",
                "InstallReady",
                "Installing",
                "Succeeded",
                "Failed",
                "Unknown",
                "Replacing",
                "Deleting"
            ]
        );
        assert_eq!(Reason::ALL.len(), 30);
        for r in Reason::ALL {
            assert_eq!(Reason::parse(r.as_str()), Some(*r));
        }
        assert_eq!(
            Reason::ApiServiceResourceIssue.as_str(),
            "APIServiceResourceIssue"
        );
        assert_eq!(
            Reason::CannotModifyStaticOperatorGroupProvidedApis.as_str(),
            "CannotModifyStaticOperatorGroupProvidedAPIs"
        );
        assert!(Reason::Copied.is_uncopiable());
        assert!(!Reason::InstallSucceeded.is_uncopiable());
    }
}
