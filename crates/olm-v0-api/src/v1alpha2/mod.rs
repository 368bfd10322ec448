//! `operators.coreos.com/v1alpha2`: the older, still served OperatorGroup (API repo
//! `pkg/operators/v1alpha2`).

mod operatorgroup;

pub use operatorgroup::{OperatorGroup, OperatorGroupSpec, OperatorGroupStatus};
