//! catalog-operator: the CatalogSource controller with its registries and their connections,
//! the catalogs' content held in memory, and the Subscription and InstallPlan controllers that
//! resolve against it and install what it chose.

pub(crate) mod catalogs;
pub(crate) mod catalogsource;
pub(crate) mod connection;
pub(crate) mod inprocess;
pub(crate) mod installplans;
pub(crate) mod subscriptions;
