//! Upstream's `--feature-gates`, read as olm can honour them.
//!
//! Upstream turns features of catalogd and operator-controller on and off with gates; olm has no
//! Helm applier and always does what most of them turn on. So that upstream's manifests and
//! scripts (and suites that read a Deployment's gates to learn what OLM does) work unchanged,
//! `olm run` takes the flag with upstream's names and spelling, and:
//!
//! - a gate olm always has on (or always off) is accepted at that value and refused at the
//!   other, with why — olm never says it does something it does not;
//! - a gate that chooses among things olm can do changes what it does: the two webhook
//!   certificate providers narrow `--cert-provider`, `APIV1MetasHandler` sets `--metas`;
//! - a gate upstream does not know is refused with upstream's message.
//!
//! Sources: operator-controller v1.11.0 `internal/operator-controller/features/features.go` and
//! `internal/catalogd/features/features.go` for the names; Kubernetes component-base's
//! `featuregate.Set` for the spelling (`A=true,B=false`, repeatable) and the messages.

use std::collections::BTreeMap;

use crate::run::{CertProviderChoice, FlagError};

/// What a gate means in olm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Meaning {
    /// olm always does this: only `true` is accepted.
    Always(&'static str),
    /// olm never does this: only `false` is accepted.
    Never(&'static str),
    /// Bundles with webhooks may get certificates from cert-manager.
    CertManager,
    /// Bundles with webhooks may get certificates from OpenShift's service CA.
    OpenshiftServiceCa,
    /// `/api/v1/metas` is served.
    Metas,
}

/// Every gate of upstream's two components, by name.
const GATES: &[(&str, Meaning)] = &[
    (
        "SingleOwnNamespaceInstallSupport",
        Meaning::Always(
            "olm always installs registry+v1 bundles in Single- and OwnNamespace mode (config watchNamespace)",
        ),
    ),
    ("WebhookProviderCertManager", Meaning::CertManager),
    (
        "WebhookProviderOpenshiftServiceCA",
        Meaning::OpenshiftServiceCa,
    ),
    (
        "BoxcutterRuntime",
        Meaning::Always(
            "olm always applies bundles as ClusterObjectSet revisions; it has no Helm applier",
        ),
    ),
    (
        "DeploymentConfig",
        Meaning::Always("olm always applies spec.config.inline.deploymentConfig"),
    ),
    (
        "BundleReleaseSupport",
        Meaning::Always("olm always reads the release of an olm.package property"),
    ),
    ("APIV1MetasHandler", Meaning::Metas),
    (
        "GraphQLCatalogQueries",
        Meaning::Never("olm's catalog server has no GraphQL endpoint"),
    ),
];

/// The gates given, by name, with what each means here; the last value of each wins (as
/// component-base's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeatureGates(BTreeMap<&'static str, (Meaning, bool)>);

/// What the gates change in `olm run`'s settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// `--cert-provider` as narrowed by the webhook provider gates.
    pub cert_provider: CertProviderChoice,
    /// Whether `/api/v1/metas` is served.
    pub metas: bool,
}

impl FeatureGates {
    /// Reads the values of every `--feature-gates` flag: comma-separated `Name=bool` pairs.
    ///
    /// Errors: component-base's words for a pair without `=` or with a value Go's
    /// `strconv.ParseBool` refuses, and for a name neither component knows.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<FeatureGates, FlagError> {
        let mut gates = BTreeMap::new();
        for value in values {
            for pair in value.as_ref().split(',') {
                let pair = pair.trim();
                if pair.is_empty() {
                    continue;
                }
                let Some((name, v)) = pair.split_once('=') else {
                    return Err(FlagError::MissingBool(pair.to_owned()));
                };
                let name = name.trim();
                let v = v.trim();
                let enabled =
                    olm_goenc::strconv::parse_bool(v).map_err(|_| FlagError::InvalidBool {
                        name: name.to_owned(),
                        value: v.to_owned(),
                    })?;
                let Some(&(known, meaning)) = GATES.iter().find(|(known, _)| *known == name) else {
                    return Err(FlagError::UnknownGate(name.to_owned()));
                };
                gates.insert(known, (meaning, enabled));
            }
        }
        Ok(FeatureGates(gates))
    }

    /// What the gates do to `cert_provider` and `metas` (the flags' values); refuses a gate set
    /// to what olm cannot do, and a provider the gates turn off.
    pub fn apply(
        &self,
        cert_provider: CertProviderChoice,
        metas: bool,
    ) -> Result<Effect, FlagError> {
        let mut effect = Effect {
            cert_provider,
            metas,
        };
        for (&name, &(meaning, enabled)) in &self.0 {
            match meaning {
                Meaning::Always(why) if !enabled => {
                    return Err(FlagError::CannotTurnOff { gate: name, why });
                }
                Meaning::Never(why) if enabled => {
                    return Err(FlagError::CannotTurnOn { gate: name, why });
                }
                Meaning::Always(_) | Meaning::Never(_) => {}
                Meaning::Metas => effect.metas = enabled,
                Meaning::CertManager if !enabled => {
                    effect.cert_provider =
                        without(effect.cert_provider, CertProviderChoice::CertManager, name)?;
                }
                Meaning::OpenshiftServiceCa if !enabled => {
                    effect.cert_provider = without(
                        effect.cert_provider,
                        CertProviderChoice::OpenshiftServiceCa,
                        name,
                    )?;
                }
                Meaning::CertManager | Meaning::OpenshiftServiceCa => {}
            }
        }
        Ok(effect)
    }
}

/// `choice` with the provider `off` turned off by `gate`: `auto` no longer picks it (auto
/// chooses between cert-manager and the built-in one, so without cert-manager it is the
/// built-in one); naming it is refused.
fn without(
    choice: CertProviderChoice,
    off: CertProviderChoice,
    gate: &'static str,
) -> Result<CertProviderChoice, FlagError> {
    if choice == off {
        return Err(FlagError::ProviderTurnedOff(gate));
    }
    if choice == CertProviderChoice::Auto && off == CertProviderChoice::CertManager {
        return Ok(CertProviderChoice::Builtin);
    }
    Ok(choice)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gates(values: &[&str]) -> FeatureGates {
        FeatureGates::parse(values).unwrap_or_else(|e| panic!("{values:?}: {e}"))
    }

    /// Upstream's experimental profile, as its Helm values write it (one flag per gate), and
    /// component-base's comma form.
    #[test]
    fn upstreams_spellings_parse() {
        let one_per_flag = gates(&[
            "BoxcutterRuntime=true",
            "DeploymentConfig=true",
            "SingleOwnNamespaceInstallSupport=true",
            "WebhookProviderCertManager=false",
        ]);
        let commas = gates(&[
            "BoxcutterRuntime=true,DeploymentConfig=true, SingleOwnNamespaceInstallSupport=True,WebhookProviderCertManager=0",
        ]);
        assert_eq!(one_per_flag, commas);
        assert!(
            !gates(&["APIV1MetasHandler=true", "APIV1MetasHandler=false"]).0["APIV1MetasHandler"].1
        );
        assert_eq!(gates(&[]), FeatureGates::default());
    }

    #[test]
    fn component_base_refusals() {
        let table = [
            ("Bogus=true", "unrecognized feature gate: Bogus"),
            (
                "BoxcutterRuntime",
                "missing bool value for BoxcutterRuntime",
            ),
            (
                "BoxcutterRuntime=yes",
                "invalid value of BoxcutterRuntime=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax",
            ),
        ];
        for (value, want) in table {
            assert_eq!(
                FeatureGates::parse(&[value]).map_err(|e| e.to_string()),
                Err(want.to_owned()),
                "{value}"
            );
        }
    }

    #[test]
    fn what_olm_always_does_cannot_be_turned_off() {
        let err = gates(&["BoxcutterRuntime=false"])
            .apply(CertProviderChoice::Auto, true)
            .expect_err("refused")
            .to_string();
        assert_eq!(
            err,
            "BoxcutterRuntime=false: olm cannot turn it off: olm always applies bundles as ClusterObjectSet revisions; it has no Helm applier"
        );
        let err = gates(&["GraphQLCatalogQueries=true"])
            .apply(CertProviderChoice::Auto, true)
            .expect_err("refused")
            .to_string();
        assert!(err.contains("no GraphQL endpoint"), "{err}");
        let fine = gates(&[
            "BoxcutterRuntime=true,DeploymentConfig=true,SingleOwnNamespaceInstallSupport=true,BundleReleaseSupport=true,GraphQLCatalogQueries=false",
        ])
        .apply(CertProviderChoice::Auto, true);
        assert_eq!(
            fine,
            Ok(Effect {
                cert_provider: CertProviderChoice::Auto,
                metas: true
            })
        );
    }

    #[test]
    fn provider_gates_narrow_the_choice() {
        use CertProviderChoice::{Auto, Builtin, CertManager, OpenshiftServiceCa};
        let no_cm = gates(&["WebhookProviderCertManager=false"]);
        let no_ocp = gates(&["WebhookProviderOpenshiftServiceCA=false"]);
        let table = [
            (&no_cm, Auto, Ok(Builtin)),
            (&no_cm, Builtin, Ok(Builtin)),
            (&no_cm, OpenshiftServiceCa, Ok(OpenshiftServiceCa)),
            (&no_ocp, Auto, Ok(Auto)),
            (&no_ocp, CertManager, Ok(CertManager)),
        ];
        for (g, choice, want) in table {
            assert_eq!(
                g.apply(choice, true).map(|e| e.cert_provider),
                want,
                "{g:?} {choice:?}"
            );
        }
        assert!(no_cm.apply(CertManager, true).is_err());
        assert!(no_ocp.apply(OpenshiftServiceCa, true).is_err());
    }

    #[test]
    fn the_metas_gate_sets_metas() {
        let on = gates(&["APIV1MetasHandler=true"]).apply(CertProviderChoice::Auto, false);
        assert_eq!(on.map(|e| e.metas), Ok(true));
        let off = gates(&["APIV1MetasHandler=false"]).apply(CertProviderChoice::Auto, true);
        assert_eq!(off.map(|e| e.metas), Ok(false));
    }
}
