//! Label selectors as the API carries them (k8s-openapi's), turned into [`olm_k8s`]'s, which
//! every decision matches with.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiSelector;
use olm_k8s::{LabelSelector, Operator, Requirement, SelectorError};

/// `selector` in `olm_k8s` terms; an unknown operator is the API server's own error text.
pub fn from_api(selector: &ApiSelector) -> Result<LabelSelector, SelectorError> {
    let mut out = LabelSelector {
        match_labels: selector.match_labels.clone().unwrap_or_default(),
        match_expressions: Vec::new(),
    };
    for e in selector.match_expressions.iter().flatten() {
        let operator = Operator::parse(&e.operator)?;
        out.match_expressions.push(Requirement {
            key: e.key.clone(),
            operator,
            values: e.values.clone().unwrap_or_default(),
        });
    }
    Ok(out)
}
