//! Gathering what a reconcile decides on: the extension's revisions from the watch cache, and
//! the resolution from the catalogs' content.

use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::reflector::Store;
use olm_api::{BundleMetadata, ClusterCatalog, ClusterExtension, ClusterObjectSet, LifecycleState};
use olm_extension::request::{catalog_input, labels_of, request_of, selector_of};
use olm_extension::status::{RevisionState, Step, Stop, StopKind};
use olm_k8s::{
    BUNDLE_NAME_KEY, BUNDLE_REFERENCE_KEY, BUNDLE_RELEASE_KEY, BUNDLE_VERSION_KEY,
    OWNER_NAME_LABEL, status_of,
};
use olm_resolve::{CatalogInput, Deprecations, Installed, Skipped};

use super::Ctx;

/// The bundle a reconcile works towards.
#[derive(Debug, Clone)]
pub struct Target {
    /// The package.
    pub package: String,
    /// Name, version (and release) as the status records them.
    pub bundle: BundleMetadata,
    /// The bundle image.
    pub image: String,
}

/// How the resolve step ended.
#[derive(Debug, Clone)]
pub enum Resolved {
    /// A revision is rolling out; its bundle stays the target.
    RollingOut,
    /// No matching catalog exists any more; the installed bundle stays the target.
    Fallback,
    /// A bundle was chosen.
    Bundle(Chosen),
    /// No bundle was chosen.
    Failed(Failure),
}

/// The bundle resolution chose.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// The chosen bundle.
    pub bundle: BundleMetadata,
    /// Its image.
    pub image: String,
    /// The package's deprecations in the catalog it came from.
    pub deprecations: Deprecations,
    /// Selected catalogs resolution went on without because they serve nothing.
    pub skipped: Vec<Skipped>,
}

/// Why resolution chose no bundle.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The resolver's message, naming the skipped catalogs.
    pub message: String,
    /// The package's deprecations, when a catalog was selected.
    pub deprecations: Option<Box<Deprecations>>,
    /// Selected catalogs resolution went on without because they serve nothing.
    pub skipped: Vec<Skipped>,
}

/// The outcome of the resolve step.
#[derive(Debug, Clone)]
pub struct ResolveStep {
    /// What resolution said.
    pub resolution: Resolved,
    /// What to pull and apply next; None stops the pipeline.
    pub target: Option<Target>,
    /// Set when the pipeline stops here.
    pub stop: Option<Stop>,
}

/// The extension's ClusterObjectSets (those it controls, by uid), oldest revision first.
pub fn revisions_of(
    store: &Store<ClusterObjectSet>,
    ext: &ClusterExtension,
) -> Vec<Arc<ClusterObjectSet>> {
    let name = ext.name_any();
    let uid = ext.uid();
    let mut out: Vec<Arc<ClusterObjectSet>> = store
        .state()
        .into_iter()
        .filter(|c| c.labels().get(OWNER_NAME_LABEL) == Some(&name))
        .filter(|c| {
            c.owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref())
        })
        .collect();
    out.sort_by_key(|c| c.spec.revision);
    out
}

/// The active revisions as the status sees them.
pub fn revision_states(revisions: &[Arc<ClusterObjectSet>]) -> Vec<RevisionState> {
    revisions
        .iter()
        .filter(|c| c.spec.lifecycle_state != LifecycleState::Archived)
        .map(|c| state_of(c))
        .collect()
}

/// One revision as the status sees it.
pub fn state_of(c: &ClusterObjectSet) -> RevisionState {
    let ann = c.annotations();
    let get = |k: &str| ann.get(k).cloned().unwrap_or_default();
    let conditions = c
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    RevisionState {
        name: c.name_any(),
        revision: c.spec.revision,
        bundle: BundleMetadata {
            name: get(BUNDLE_NAME_KEY),
            version: get(BUNDLE_VERSION_KEY),
            release: ann.get(BUNDLE_RELEASE_KEY).cloned(),
        },
        image: get(BUNDLE_REFERENCE_KEY),
        succeeded: status_of(&conditions, "Succeeded") == Some(olm_k8s::ConditionStatus::True),
        conditions,
    }
}

/// The validators of the pipeline's first step; the message of the first that fails.
///
/// A named ServiceAccount must exist in the install namespace (upstream v1.10's wording).
pub async fn validate(ext: &ClusterExtension, ctx: &Ctx) -> Option<String> {
    let sa = ext.spec.service_account.as_ref()?;
    let api: kube::Api<k8s_openapi::api::core::v1::ServiceAccount> =
        kube::Api::namespaced(ctx.shared.client.clone(), &ext.spec.namespace);
    match api.get_metadata_opt(&sa.name).await {
        Ok(Some(_)) => None,
        Ok(None) => Some(
            olm_cluster::permissions::PreflightError::ServiceAccountNotFound {
                namespace: ext.spec.namespace.clone(),
                name: sa.name.clone(),
            }
            .to_string(),
        ),
        Err(e) => Some(format!(
            "error getting service account: {}",
            olm_runtime::api_error::message(&e)
        )),
    }
}

/// The installed revision: the newest one that succeeded.
pub fn installed(states: &[RevisionState]) -> Option<&RevisionState> {
    states.iter().rev().find(|s| s.succeeded)
}

/// Whether `target` is the bundle installed now.
pub fn is_installed(states: &[RevisionState], target: &Target) -> bool {
    installed(states).is_some_and(|i| {
        i.bundle.name == target.bundle.name && i.bundle.version == target.bundle.version
    })
}

fn package_of(ext: &ClusterExtension) -> String {
    ext.spec.package_name().to_owned()
}

/// The resolve step (upstream's `ResolveBundle` with `handleResolutionError`).
pub async fn resolve_step(
    ext: &ClusterExtension,
    ctx: &Ctx,
    states: &[RevisionState],
) -> ResolveStep {
    let package = package_of(ext);
    if let Some(rolling) = states.iter().find(|s| !s.succeeded) {
        return ResolveStep {
            resolution: Resolved::RollingOut,
            target: Some(Target {
                package,
                bundle: rolling.bundle.clone(),
                image: rolling.image.clone(),
            }),
            stop: None,
        };
    }
    let installed = installed(states);
    let failure = match resolve(ext, ctx, installed).await {
        Ok(chosen) => {
            return ResolveStep {
                target: Some(Target {
                    package,
                    bundle: chosen.bundle.clone(),
                    image: chosen.image.clone(),
                }),
                resolution: Resolved::Bundle(chosen),
                stop: None,
            };
        }
        Err(f) => f,
    };
    let stop = Some(Stop {
        step: Step::Resolve,
        message: failure.message.clone(),
        kind: StopKind::Retrying,
    });
    let failed = Resolved::Failed(failure);
    let Some(installed) = installed else {
        return ResolveStep {
            resolution: failed,
            target: None,
            stop,
        };
    };
    let spec_version = ext
        .spec
        .source
        .catalog
        .as_ref()
        .and_then(|c| c.version.clone())
        .unwrap_or_default();
    if !spec_version.is_empty() && spec_version != installed.bundle.version {
        return ResolveStep {
            resolution: failed,
            target: None,
            stop,
        };
    }
    if catalogs_exist(ext, &ctx.catalog_store) {
        return ResolveStep {
            resolution: failed,
            target: None,
            stop,
        };
    }
    ResolveStep {
        resolution: Resolved::Fallback,
        target: Some(Target {
            package,
            bundle: installed.bundle.clone(),
            image: installed.image.clone(),
        }),
        stop: None,
    }
}

/// Whether any ClusterCatalog matches the extension's selector (upstream's `CheckCatalogsExist`:
/// availability does not matter here).
fn catalogs_exist(ext: &ClusterExtension, store: &Store<ClusterCatalog>) -> bool {
    let Ok(selector) = selector_of(ext) else {
        return true;
    };
    store
        .state()
        .iter()
        .any(|c| selector.matches(&labels_of(c)))
}

/// Resolves the extension's package against the selected catalogs' content. Selected catalogs
/// that serve nothing are not read; the resolver skips and names them.
async fn resolve(
    ext: &ClusterExtension,
    ctx: &Ctx,
    installed: Option<&RevisionState>,
) -> Result<Chosen, Failure> {
    let failed = |message: String| Failure {
        message,
        deprecations: None,
        skipped: Vec::new(),
    };
    let installed = installed.map(|i| Installed {
        name: olm_catalog::BundleName::new(i.bundle.name.clone()),
        version: i.bundle.version.clone(),
        release: i.bundle.release.clone(),
    });
    let request = request_of(ext, installed).map_err(|e| failed(e.to_string()))?;
    let (package, selector) = (request.package.clone(), request.selector.clone());

    let mut catalogs: Vec<ClusterCatalog> = ctx
        .catalog_store
        .state()
        .iter()
        .map(|c| (**c).clone())
        .collect();
    catalogs.sort_by_key(|c| c.name_any());
    let contents = ctx
        .catalogs
        .walk(&catalogs, &selector, &package)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let inputs: Vec<CatalogInput<'_>> = catalogs
        .iter()
        .map(|c| catalog_input(c, contents.get(&c.name_any()).map(|i| i.as_ref())))
        .collect();
    match olm_resolve::resolve(&inputs, &request, None) {
        Ok(r) => Ok(Chosen {
            bundle: BundleMetadata {
                name: r.bundle.to_string(),
                version: r.version.legacy_version_string(),
                release: None,
            },
            image: r.image,
            deprecations: r.deprecations,
            skipped: r.skipped,
        }),
        Err(f) => Err(Failure {
            message: f.message(),
            deprecations: f.deprecations,
            skipped: f.skipped.into_vec(),
        }),
    }
}
