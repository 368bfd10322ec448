//! olm-operator: the OperatorGroup, ClusterServiceVersion, copied-CSV and Operator controllers,
//! and what a CSV's install writes (Deployments, RBAC, serving certificates, webhook and
//! APIService registrations).

pub(crate) mod cleanup;
pub(crate) mod copies;
pub(crate) mod csv;
pub(crate) mod install;
pub(crate) mod operatorgroup;
pub(crate) mod operators;
pub(crate) mod requirements;
pub(crate) mod serving;
pub(crate) mod tenant;
