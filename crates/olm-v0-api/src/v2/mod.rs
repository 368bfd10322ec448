//! `operators.coreos.com/v2`: the stored OperatorCondition (API repo `pkg/operators/v2`).

mod operatorcondition;

pub use operatorcondition::{OperatorCondition, OperatorConditionSpec, OperatorConditionStatus};
