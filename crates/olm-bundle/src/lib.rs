//! registry+v1 operator bundles, as OLM reads, checks and installs them.
//!
//! - [`Bundle`]: read a bundle directory (or the files of an unpacked bundle image): the typed
//!   [`ClusterServiceVersion`], CRDs, other objects and `metadata/` (errors name the file);
//! - [`validate_for_render`]: the checks operator-controller runs before rendering, with its
//!   messages; [`apivalidate`]: operator-framework/api's authoring checks;
//! - [`render_bundle`] / [`render::render`]: the plain Kubernetes manifests OLM v1 applies for
//!   a bundle — service accounts, RBAC with upstream's hash-derived names, CRDs, Deployments,
//!   webhooks, Services, certificate objects — given an install namespace, an optional inline
//!   configuration (`watchNamespace`, `deploymentConfig`) and a certificate provider;
//! - [`manifests_to_yaml`]: those manifests written byte for byte as upstream writes them;
//! - [`properties::to_olm_bundle`]: the bundle as a File-Based Catalog `olm.bundle` blob;
//! - [`crddiff`]: whether replacing one CRD by another is safe for stored data.
//!
//! Everything is pure: the only I/O is reading a directory handed to [`Bundle::from_dir`].
//!
//! Not for: catalogs, resolution, applying manifests to a cluster, or pulling images.

pub mod apivalidate;
pub mod bundle;
pub mod config;
pub mod crddiff;
pub mod csv;
pub mod error;
pub mod generate;
pub mod goyaml;
pub mod naming;
pub mod optional;
pub mod properties;
pub mod render;
mod typed;
pub mod validate;

pub use bundle::{Bundle, BundleFile, BundleObject};
pub use config::{BundleConfig, config_schema, validate_config};
pub use csv::{ClusterServiceVersion, InstallModeType, WebhookType};
pub use error::{BundleError, RenderError};
pub use render::{CertProvider, RenderOptions, sort_manifests};

use serde_json::Value;

/// Every message that would stop operator-controller from rendering this bundle, before any
/// configuration is considered: the provider-level support checks and the render validators.
pub fn validate_for_render(b: &Bundle) -> Vec<String> {
    let mut out = Vec::new();
    if let Err(e) = provider_checks(b, true) {
        out.push(e.to_string());
    }
    out.extend(validate::render_validators(b));
    out
}

/// Checks operator-controller makes before rendering (`RegistryV1ManifestProvider`), in its
/// order. `have_cert_provider` is false when rendering without a certificate provider.
fn provider_checks(b: &Bundle, have_cert_provider: bool) -> Result<(), RenderError> {
    if !b.csv.spec.apiservicedefinitions.owned.is_empty() {
        // The misspelling is upstream's.
        return Err(RenderError::Unsupported(
            "apiServiceDefintions are not supported".into(),
        ));
    }
    if !b.csv.spec.webhookdefinitions.is_empty() && !have_cert_provider {
        return Err(RenderError::Unsupported(
            "webhookDefinitions are not supported".into(),
        ));
    }
    let any = [
        InstallModeType::AllNamespaces,
        InstallModeType::SingleNamespace,
        InstallModeType::OwnNamespace,
    ]
    .iter()
    .any(|m| b.csv.supports(m));
    if !any {
        return Err(RenderError::Unsupported(
            "bundle must support at least one of [AllNamespaces SingleNamespace OwnNamespace] install modes".into(),
        ));
    }
    Ok(())
}

/// Renders a bundle the way operator-controller installs it.
///
/// Flow:
/// 1. provider checks (owned APIServices, webhooks without a certificate provider, install
///    modes) — `unsupported bundle: …`;
/// 2. the inline configuration (`config`, YAML or JSON; `None` is `{}`) is validated against
///    the bundle's schema — `invalid ClusterExtension configuration: invalid configuration: …`;
/// 3. `watchNamespace` becomes the single target namespace (default: all namespaces when the
///    bundle supports AllNamespaces);
/// 4. the render validators and generators run ([`render::render`]).
///
/// Errors: [`RenderError`] with upstream's message. Output order is generator order; call
/// [`sort_manifests`] for kind/namespace/name order.
pub fn render_bundle(
    b: &Bundle,
    install_namespace: &str,
    config: Option<&str>,
    cert_provider: Option<CertProvider>,
) -> Result<Vec<Value>, RenderError> {
    provider_checks(b, cert_provider.is_some())?;
    let cfg = config::validate_config(&b.csv, config, install_namespace)
        .map_err(RenderError::InvalidConfig)?;
    let opts = RenderOptions {
        install_namespace: install_namespace.to_string(),
        target_namespaces: cfg.watch_namespace.map(|w| vec![w]),
        cert_provider,
        deployment_config: cfg.deployment_config,
    };
    render::render(b, &opts)
}

/// Everything `olm bundle render` needs besides the bundle.
#[derive(Debug, Clone, Default)]
pub struct RenderRequest {
    /// Namespace the operator is installed into.
    pub install_namespace: String,
    /// Shorthand for `{"watchNamespace": …}`; overrides a `watchNamespace` in `config`.
    pub watch_namespace: Option<String>,
    /// Inline configuration as the ClusterExtension carries it (YAML or JSON object).
    pub config: Option<String>,
    /// `None` renders like upstream without a provider: bundles with webhooks are refused.
    pub cert_provider: Option<CertProvider>,
}

/// [`render_bundle`] from a [`RenderRequest`], merging `watch_namespace` into the config.
pub fn render_request(b: &Bundle, req: &RenderRequest) -> Result<Vec<Value>, RenderError> {
    let config = match &req.watch_namespace {
        None => req.config.clone(),
        Some(w) => {
            let mut cfg = match &req.config {
                None => Value::Object(Default::default()),
                Some(text) => goyaml::parse_documents(text)
                    .map_err(|e| RenderError::InvalidConfig(e.clone()))?
                    .into_iter()
                    .next()
                    .unwrap_or(Value::Object(Default::default())),
            };
            // A config that is not an object is left for validation to report.
            if let Some(m) = cfg.as_object_mut() {
                m.insert("watchNamespace".into(), Value::String(w.clone()));
            }
            Some(cfg.to_string())
        }
    };
    render_bundle(
        b,
        &req.install_namespace,
        config.as_deref(),
        req.cert_provider,
    )
}

/// Manifests as one YAML stream (`---` between documents), each document byte-identical to
/// upstream's `sigs.k8s.io/yaml` output.
pub fn manifests_to_yaml(objs: &[Value]) -> String {
    let mut out = String::new();
    for (i, o) in objs.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&goyaml::to_yaml(o));
    }
    out
}

/// Manifests as a JSON array (pretty-printed, keys in generation order).
pub fn manifests_to_json(objs: &[Value]) -> String {
    serde_json::to_string_pretty(objs).unwrap_or_else(|_| "[]".into())
}
