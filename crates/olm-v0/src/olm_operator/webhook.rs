//! The checks a CSV's `webhookdefinitions` pass before install (OLM repo
//! `pkg/controller/install/webhook.go` `ValidWebhookRules`, and the unique-name check of
//! `transitionCSVState`): no webhook may intercept every group, OLM's own API, or the webhook
//! configurations themselves — an operator could otherwise lock OLM or the cluster out.

use k8s_openapi::api::admissionregistration::v1::RuleWithOperations;
use olm_v0_api::v1alpha1::WebhookDescription;

/// Whether a resource names a webhook configuration: `*`, the kinds upstream lists, and — what
/// upstream's check misses, since rules name resources by their lowercase plural —
/// `mutatingwebhookconfigurations` and `validatingwebhookconfigurations` with or without a
/// subresource.
fn is_webhook_configuration(resource: &str) -> bool {
    let base = resource.split('/').next().unwrap_or(resource);
    matches!(
        base,
        "*" | "MutatingWebhookConfiguration"
            | "ValidatingWebhookConfiguration"
            | "mutatingwebhookconfigurations"
            | "validatingwebhookconfigurations"
    )
}

/// A webhook rule OLM refuses, shown in upstream's words (capitalised as upstream writes them;
/// its e2e suite compares the CSV's message with them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RefusedRule {
    /// `apiGroups` holds `*`.
    #[error("Webhook rules cannot include all groups")]
    AllGroups,
    /// `apiGroups` holds `operators.coreos.com`.
    #[error("Webhook rules cannot include the OLM group")]
    OlmGroup,
    /// The rule covers webhook configurations themselves.
    #[error(
        "Webhook rules cannot include MutatingWebhookConfiguration or ValidatingWebhookConfiguration resources"
    )]
    WebhookConfigurations,
}

/// Upstream's rule guard, in its order.
pub fn valid_rules(rules: &[RuleWithOperations]) -> Result<(), RefusedRule> {
    for rule in rules {
        let has = |g: &str| rule.api_groups.iter().flatten().any(|x| x == g);
        if has("*") {
            return Err(RefusedRule::AllGroups);
        }
        if has("operators.coreos.com") {
            return Err(RefusedRule::OlmGroup);
        }
        if has("admissionregistration.k8s.io")
            && rule
                .resources
                .iter()
                .flatten()
                .any(|r| is_webhook_configuration(r))
        {
            return Err(RefusedRule::WebhookConfigurations);
        }
    }
    Ok(())
}

/// The `InvalidWebhookDescription` message for a CSV's webhooks, if any: a repeated
/// `generateName` (`CSV contains repeated WebhookDescription name`) or the first rule guard
/// failure, in definition order.
pub fn webhook_problem(definitions: &[WebhookDescription]) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    for d in definitions {
        if !seen.insert(d.generate_name.as_str()) {
            return Some("CSV contains repeated WebhookDescription name".into());
        }
        if let Err(e) = valid_rules(&d.rules) {
            return Some(e.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(groups: &[&str], resources: &[&str]) -> RuleWithOperations {
        RuleWithOperations {
            api_groups: Some(groups.iter().map(|s| (*s).to_owned()).collect()),
            resources: Some(resources.iter().map(|s| (*s).to_owned()).collect()),
            ..RuleWithOperations::default()
        }
    }

    /// The guards' words, byte for byte: OLM repo `pkg/controller/install/webhook.go`
    /// `ValidWebhookRules`, whose first message `test/e2e/webhook_e2e_test.go` checks on the
    /// failed CSV (`Equal("Webhook rules cannot include all groups")`).
    /// Upstream's words, which its e2e suite compares the CSV's message with.
    #[test]
    fn refusals_in_upstream_words() {
        assert_eq!(
            RefusedRule::AllGroups.to_string(),
            "Webhook rules cannot include all groups"
        );
        assert_eq!(
            RefusedRule::OlmGroup.to_string(),
            "Webhook rules cannot include the OLM group"
        );
        assert_eq!(
            RefusedRule::WebhookConfigurations.to_string(),
            "Webhook rules cannot include MutatingWebhookConfiguration or ValidatingWebhookConfiguration resources"
        );
    }

    #[test]
    fn guards() {
        assert_eq!(valid_rules(&[rule(&["apps"], &["deployments"])]), Ok(()));
        assert_eq!(
            valid_rules(&[rule(&["*"], &["deployments"])]),
            Err(RefusedRule::AllGroups)
        );
        assert_eq!(
            valid_rules(&[rule(&["", "operators.coreos.com"], &["*"])]),
            Err(RefusedRule::OlmGroup)
        );
        let refused = Err(RefusedRule::WebhookConfigurations);
        for r in [
            "*",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations/status",
        ] {
            assert_eq!(
                valid_rules(&[rule(&["admissionregistration.k8s.io"], &[r])]),
                refused,
                "{r}"
            );
        }
        assert_eq!(
            valid_rules(&[rule(
                &["admissionregistration.k8s.io"],
                &["validatingadmissionpolicies"]
            )]),
            Ok(())
        );
    }

    #[test]
    fn repeated_names() {
        let d = |name: &str| WebhookDescription {
            generate_name: name.into(),
            type_: olm_v0_api::v1alpha1::WebhookAdmissionType::ValidatingAdmissionWebhook,
            deployment_name: None,
            container_port: None,
            target_port: None,
            rules: vec![rule(&["apps"], &["deployments"])],
            failure_policy: None,
            match_policy: None,
            object_selector: None,
            side_effects: "None".into(),
            timeout_seconds: None,
            admission_review_versions: vec!["v1".into()],
            reinvocation_policy: None,
            webhook_path: None,
            conversion_crds: Vec::new(),
        };
        assert_eq!(webhook_problem(&[d("a"), d("b")]), None);
        assert_eq!(
            webhook_problem(&[d("a"), d("a")]),
            Some("CSV contains repeated WebhookDescription name".into())
        );
    }
}
