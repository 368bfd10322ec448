//! Why `olm run` refused its flags: one error type for every flag parser and check, each
//! variant saying which flag and what it accepts. The feature-gate words are component-base's,
//! so a gate refused by upstream's controllers reads the same here.

/// A refused `olm run` flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// A flag with a fixed set of spellings got another.
    #[error("unknown {what} {} (want {want})", olm_goenc::quote(.value))]
    Unknown {
        /// What the flag names (`component`, `OLM`, `certificate provider`).
        what: &'static str,
        /// What was given.
        value: String,
        /// The spellings it accepts.
        want: &'static str,
    },
    /// A `--feature-gates` pair without `=`.
    #[error("missing bool value for {0}")]
    MissingBool(String),
    /// A `--feature-gates` value Go's `strconv.ParseBool` refuses.
    #[error(
        "invalid value of {name}={value}, err: strconv.ParseBool: parsing {}: invalid syntax",
        olm_goenc::quote(.value)
    )]
    InvalidBool {
        /// The gate.
        name: String,
        /// Its value.
        value: String,
    },
    /// A gate neither component knows.
    #[error("unrecognized feature gate: {0}")]
    UnknownGate(String),
    /// A gate set to `false` whose behaviour olm always has.
    #[error("{gate}=false: olm cannot turn it off: {why}")]
    CannotTurnOff {
        /// The gate.
        gate: &'static str,
        /// Why.
        why: &'static str,
    },
    /// A gate set to `true` whose behaviour olm does not have.
    #[error("{gate}=true: olm cannot turn it on: {why}")]
    CannotTurnOn {
        /// The gate.
        gate: &'static str,
        /// Why.
        why: &'static str,
    },
    /// A gate turning off the certificate provider `--cert-provider` names.
    #[error("{0}=false turns off the certificate provider --cert-provider names")]
    ProviderTurnedOff(&'static str),
    /// `--component=catalogd` with OLM v0.
    #[error(
        "--component=catalogd runs OLM v1's catalog server only: give --olm=v1 (OLM v0 runs with --component=operator-controller or all)"
    )]
    CatalogdWithV0,
    /// A component of OLM v1 alone with `--olm=v0`.
    #[error(
        "--component={0} is a part of OLM v1, which --olm=v0 does not run: give --olm=v1 or both, or --component=all"
    )]
    V1ComponentWithV0(&'static str),
}
