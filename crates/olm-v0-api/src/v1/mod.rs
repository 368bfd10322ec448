//! `operators.coreos.com/v1`: OperatorGroup (stored), OperatorCondition (served), Operator and
//! OLMConfig (API repo `pkg/operators/v1`).

mod olmconfig;
mod operator;
mod operatorcondition;
mod operatorgroup;

pub use olmconfig::{Features, OLM_CONFIG_NAME, OLMConfig, OlmConfigSpec, OlmConfigStatus};
pub use operator::{
    Components, Operator, OperatorComponentCondition, OperatorSpec, OperatorStatus, RichReference,
};
pub use operatorcondition::{
    ConditionOverride, OperatorCondition, OperatorConditionSpec, OperatorConditionStatus,
};
pub use operatorgroup::{OperatorGroup, OperatorGroupSpec, OperatorGroupStatus, UpgradeStrategy};
