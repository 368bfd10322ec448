//! The Kubernetes vocabulary every other crate speaks: DNS-1123 and label-value checks with
//! apimachinery's exact messages and the regex patterns CRDs use for them, the well-known label,
//! annotation and finalizer keys, typed condition status with a `meta.SetStatusCondition`
//! that takes the time as a parameter, status messages bounded as the API server accepts them
//! (and readable: no raw bytes), and the retry backoff every controller uses.
//!
//! What it is for: one definition of each, so the catalog validator, the bundle validator, the
//! catalog server and the controllers cannot drift apart, and so decisions that set conditions
//! stay pure (the shell reads the clock and passes it in).
//!
//! What it is not for: talking to a cluster, or any OLM type. No async, no client. The
//! `metav1.Condition` helpers sit behind the default `condition` feature because they need
//! k8s-openapi, whose API version only the final binary picks; crates that only check names turn
//! default features off.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod condition;
mod labels;
mod message;
mod name;
mod ownership;
pub mod retry;
pub mod schema;
mod selector;

pub use condition::{ConditionStatus, InvalidConditionStatus, REWORDING_PACE, pace_rewording};
#[cfg(feature = "condition")]
pub use condition::{
    ConditionUpdate, find_status_condition, reworded_only, set_status_condition, status_of,
};
// Every well-known key is public API; the module holds nothing else.
pub use labels::*;
pub use message::chain;
pub use message::{
    BINARY_RUN_KEEP, EVENT_NOTE_LIMIT, MAX_CONDITION_MESSAGE_LENGTH, REFUSED_MESSAGE_LIMIT,
    TRUNCATION_SUFFIX, bound_status_messages, bounded_message, sanitize_message,
    shorten_refused_status, truncate_message, truncate_note,
};
pub use name::{
    CONDITION_REASON_PATTERN, CONDITION_TYPE_PATTERN, DNS1035_LABEL_MAX_LEN, DNS1123_LABEL_MAX_LEN,
    DNS1123_LABEL_PATTERN, DNS1123_SUBDOMAIN_MAX_LEN, DNS1123_SUBDOMAIN_PATTERN, FieldError,
    LABEL_VALUE_MAX_LEN, LABEL_VALUE_PATTERN, NameError, NameRule, dns1035_label_errors,
    dns1123_label_errors, dns1123_subdomain_errors, invalid_object_message, is_dns1123_label,
    is_dns1123_subdomain, label_value_errors, matches_dns1123_label_pattern, object_name_errors,
    path_segment_name_errors,
};
pub use ownership::{Holder, holder, v0_refusal};
pub use selector::{LabelSelector, Operator, Requirement, SelectorError};
