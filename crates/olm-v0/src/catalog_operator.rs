//! catalog-operator's decisions: the registry a CatalogSource gets (image, `grpc` address or
//! ConfigMap) and when its image is polled, what a Subscription's namespace pass does after
//! resolution, the steps an InstallPlan holds and how a pass over them ends.

pub mod alongside;
pub mod catalogsource;
pub mod configmapsource;
pub mod crdupgrade;
pub mod execution;
pub mod ownerrefs;
pub mod registrypoll;
pub mod steps;
pub mod subscription;
