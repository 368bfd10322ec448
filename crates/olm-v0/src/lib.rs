//! OLM v0's decisions, in the rooms upstream's processes give them:
//!
//! * [`olm_operator`]: OperatorGroups (install modes, target namespaces, provided APIs),
//!   which group a CSV belongs to, the CSV phase machine and its requirements, what a CSV's
//!   install writes (Deployments, RBAC, serving certificates, webhooks), copied CSVs, OLMConfig,
//!   OperatorConditions and the Operator aggregates;
//! * [`catalog_operator`]: CatalogSources and their registries, Subscriptions resolved against
//!   them, InstallPlans, their steps and their execution;
//! * [`packageserver`]: PackageManifests and the registration of their API.
//!
//! The phases and reasons themselves are the API's (`olm_v0_api`): one model, which keeps values
//! it does not know. Resolution itself is `olm-v0-resolver`'s.
//!
//! What it is for: pure functions over plain data and the API's types, each with upstream's
//! test vectors ported as tables (named where each is ported). Messages are upstream's, word
//! for word: users match on them. No decision reads the clock: the time is handed in.
//!
//! What it is not for: talking to a cluster. `olm-v0-controller` gathers what these functions
//! read and writes what they return.

pub mod catalog_operator;
mod hash;
pub mod olm_operator;
pub mod packageserver;

pub use olm_operator::apis::{ApiKey, ApiSet};
pub use olm_operator::groups::{
    ApiReconciliation, NamespaceSet, OperatorGroupView, reconcile_api_intersection,
};
pub use olm_operator::installmode::{
    InstallMode, InstallModeError, InstallModeSet, InstallModeType,
};
