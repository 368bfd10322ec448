//! Which parts of OLM v1 one `olm run` process runs (`--component`).
//!
//! olm is one process where upstream runs two Deployments, catalogd (the catalog server, its
//! ClusterCatalog controller and label webhook) and operator-controller (the ClusterExtension
//! and ClusterObjectSet controllers). `all` is olm's own layout; `catalogd` and
//! `operator-controller` let the same binary run as upstream's two Deployments, each electing
//! its leader on upstream's Lease, so scripts, docs and suites written for upstream's layout
//! find what they expect.

use crate::run::{FlagError, Which};

/// Upstream catalogd's leader election Lease.
pub const CATALOGD_LEASE: &str = "catalogd-operator-lock";

/// One or both of OLM v1's components.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Component {
    /// The catalog server and the installer in one process (olm's layout).
    #[default]
    All,
    /// The catalog server, its ClusterCatalog controller and label webhook (upstream's
    /// catalogd).
    Catalogd,
    /// The ClusterExtension and ClusterObjectSet controllers and the certificate provider,
    /// reading catalogs from a catalog server elsewhere (upstream's operator-controller); OLM
    /// v0 runs here too when asked for.
    OperatorController,
}

impl Component {
    /// Parses the flag's spelling.
    pub fn parse(s: &str) -> Result<Component, FlagError> {
        match s {
            "all" => Ok(Component::All),
            "catalogd" => Ok(Component::Catalogd),
            "operator-controller" => Ok(Component::OperatorController),
            other => Err(FlagError::Unknown {
                what: "component",
                value: other.to_owned(),
                want: "all, catalogd or operator-controller",
            }),
        }
    }

    /// Whether the catalog server and the ClusterCatalog controller run (with OLM v1).
    pub fn serves_catalogs(self) -> bool {
        self != Component::OperatorController
    }

    /// Whether the ClusterExtension and ClusterObjectSet controllers run (with OLM v1), and OLM
    /// v0 (when `--olm` asks for it).
    pub fn installs(self) -> bool {
        self != Component::Catalogd
    }

    /// The Lease replicas of this component elect their leader on: upstream's name for each
    /// component (olm's one process uses operator-controller's).
    pub fn lease(self) -> &'static str {
        match self {
            Component::Catalogd => CATALOGD_LEASE,
            Component::All | Component::OperatorController => olm_runtime::leader::LEASE_NAME,
        }
    }

    /// Refuses a component with OLMs it does not run: catalogd is OLM v1's alone, so OLM v0
    /// there would run a second time beside the operator-controller that runs it.
    pub fn check(self, which: Which) -> Result<(), FlagError> {
        if self == Component::Catalogd && which != Which::V1 {
            return Err(FlagError::CatalogdWithV0);
        }
        if self != Component::All && which == Which::V0 {
            return Err(FlagError::V1ComponentWithV0(self.name()));
        }
        Ok(())
    }

    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Component::All => "all",
            Component::Catalogd => "catalogd",
            Component::OperatorController => "operator-controller",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for c in [
            Component::All,
            Component::Catalogd,
            Component::OperatorController,
        ] {
            assert_eq!(Component::parse(c.name()), Ok(c));
        }
        assert_eq!(
            Component::parse("catalog").map_err(|e| e.to_string()),
            Err(
                "unknown component \"catalog\" (want all, catalogd or operator-controller)"
                    .to_owned()
            )
        );
    }

    /// Upstream's Lease names (operator-controller v1.11.0, test/e2e/steps/upgrade_steps.go
    /// `leaseNames`).
    #[test]
    fn each_component_elects_on_upstreams_lease() {
        assert_eq!(Component::Catalogd.lease(), "catalogd-operator-lock");
        assert_eq!(
            Component::OperatorController.lease(),
            "9c4404e7.operatorframework.io"
        );
        assert_eq!(Component::All.lease(), "9c4404e7.operatorframework.io");
    }

    #[test]
    fn what_each_component_runs() {
        let table = [
            (Component::All, true, true),
            (Component::Catalogd, true, false),
            (Component::OperatorController, false, true),
        ];
        for (c, catalogs, installs) in table {
            assert_eq!(c.serves_catalogs(), catalogs, "{c:?}");
            assert_eq!(c.installs(), installs, "{c:?}");
        }
    }

    #[test]
    fn olm_v0_runs_beside_the_installer_only() {
        assert!(Component::All.check(Which::Both).is_ok());
        assert!(Component::All.check(Which::V0).is_ok());
        assert!(Component::Catalogd.check(Which::V1).is_ok());
        assert!(Component::OperatorController.check(Which::Both).is_ok());
        assert!(Component::OperatorController.check(Which::V1).is_ok());
        let err = Component::Catalogd
            .check(Which::Both)
            .expect_err("v0 twice")
            .to_string();
        assert!(
            err.starts_with("--component=catalogd runs OLM v1's"),
            "{err}"
        );
        let err = Component::OperatorController
            .check(Which::V0)
            .expect_err("no v1")
            .to_string();
        assert!(err.contains("--olm=v0 does not run"), "{err}");
    }
}
