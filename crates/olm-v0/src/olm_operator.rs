//! olm-operator's decisions: OperatorGroups and which CSVs they hold, the CSV phase machine and
//! its requirements, what a CSV's install writes, copied CSVs, OLMConfig, OperatorConditions
//! and the Operator aggregates.

pub mod adoption;
pub mod apis;
pub mod certresources;
pub mod conditiongen;
pub mod copied;
pub mod deployment;
pub mod groups;
pub mod inject;
pub mod installmode;
pub mod membership;
pub mod olmconfig;
pub mod operator;
pub mod operatorcondition;
pub mod operatorgroup;
pub mod rbac;
pub mod requirements;
pub mod status;
pub mod strategy;
pub mod surface;
pub mod tenant;
pub mod transition;
pub mod webhook;
pub mod webhookconfig;
