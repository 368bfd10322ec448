//! OLM v0's decisions (olm-operator's half): which OperatorGroup shapes a CSV's install modes
//! support, how OperatorGroups' target namespaces and provided APIs meet, and which phase and
//! reason a CSV moves to. The phases and reasons themselves are the API's
//! (`olm_v0_api::v1alpha1::{ClusterServiceVersionPhase, ConditionReason}`): one model, which
//! keeps values it does not know.
//!
//! What it is for: pure functions over plain data, each with upstream's test vectors ported as
//! tables under `tests/` (the OLM repo's `pkg/controller/operators/olm/groups_test.go` and
//! `pkg/controller/registry/resolver/cache/operators_test.go`, the API repo's
//! `pkg/operators/v1alpha1/clusterserviceversion_test.go`). Messages are upstream's, word for
//! word: users match on them.
//!
//! What it is not for: talking to a cluster. The controllers that gather OperatorGroups, CSVs
//! and namespaces and write what these functions return live in the shell crates.

pub mod adoption;
pub mod alongside;
pub mod apis;
pub mod catalogsource;
pub mod certresources;
pub mod conditiongen;
pub mod configmapsource;
pub mod copied;
pub mod crdupgrade;
pub mod deployment;
pub mod execution;
pub mod groups;
mod hash;
pub mod inject;
pub mod installmode;
pub mod membership;
pub mod olmconfig;
pub mod operator;
pub mod operatorcondition;
pub mod operatorgroup;
pub mod ownerrefs;
pub mod packagemanifest;
pub mod packageserver;
pub mod rbac;
pub mod registrypoll;
pub mod requirements;
pub mod status;
pub mod steps;
pub mod strategy;
pub mod subscription;
pub mod surface;
pub mod tenant;
pub mod transition;
pub mod webhook;
pub mod webhookconfig;

pub use apis::{ApiKey, ApiSet};
pub use groups::{ApiReconciliation, NamespaceSet, OperatorGroupView, reconcile_api_intersection};
pub use installmode::{InstallMode, InstallModeSet, InstallModeType};
