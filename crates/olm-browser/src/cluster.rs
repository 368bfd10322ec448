//! The "on a cluster" page: the installed ClusterExtensions with their bundle, version and
//! conditions, and what the catalogs would upgrade each to now — the same question the
//! controller asks the resolver, read-only.

use std::fmt::Write as _;
use std::sync::Arc;

use olm_resolve::{CatalogInput, Request};

use crate::html::{bundle_url, esc, page, short};
use crate::model::CatalogView;

/// One condition of an extension's status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConditionView {
    /// `type`.
    pub type_: String,
    /// `status`.
    pub status: String,
    /// `reason`.
    pub reason: String,
    /// `message`.
    pub message: String,
}

/// A ClusterExtension as the cluster page shows it.
#[derive(Debug, Clone)]
pub struct ExtensionView {
    /// Its name.
    pub name: String,
    /// `spec.namespace`.
    pub namespace: String,
    /// The package it installs.
    pub package: String,
    /// `status.install.bundle`: name and version.
    pub installed: Option<(String, String)>,
    /// Its status conditions.
    pub conditions: Vec<ConditionView>,
    /// What the resolver is asked for it (with the installed bundle), or why it cannot be.
    pub request: Result<Request, String>,
}

/// What the cluster holds, as the browser last saw it.
#[derive(Debug, Clone, Default)]
pub struct ClusterView {
    /// Extensions by name.
    pub extensions: Vec<ExtensionView>,
    /// Why the view may be incomplete (a watch that fails, a missing permission).
    pub problems: Vec<String>,
}

/// What the catalogs would do for an extension now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upgrade {
    /// The resolver picks the installed bundle.
    UpToDate,
    /// The resolver picks another bundle (from this catalog, with this version).
    Available {
        /// The catalog.
        catalog: String,
        /// The bundle.
        bundle: String,
        /// Its version.
        version: String,
    },
    /// Nothing resolves: the resolver's message.
    Unresolvable(String),
}

/// Asks the resolver what `ext` would get from `catalogs`.
pub fn upgrade(catalogs: &[Arc<CatalogView>], ext: &ExtensionView) -> Upgrade {
    let request = match &ext.request {
        Ok(r) => r,
        Err(e) => return Upgrade::Unresolvable(e.clone()),
    };
    let inputs: Vec<CatalogInput<'_>> = catalogs.iter().map(|c| c.input()).collect();
    match olm_resolve::resolve(&inputs, request, None) {
        Ok(r)
            if ext
                .installed
                .as_ref()
                .is_some_and(|(b, _)| *b == r.bundle.as_str()) =>
        {
            Upgrade::UpToDate
        }
        Ok(r) => Upgrade::Available {
            catalog: r.catalog,
            bundle: r.bundle.as_str().to_owned(),
            version: r.version.legacy_version_string(),
        },
        Err(f) => Upgrade::Unresolvable(f.error.to_string()),
    }
}

/// The page.
pub fn cluster(catalogs: &[Arc<CatalogView>], view: &ClusterView) -> String {
    let mut b = String::from("<h1>On this cluster</h1>\n");
    for p in &view.problems {
        let _ = writeln!(b, "<p class=\"warning\" role=\"note\">{}</p>", esc(p));
    }
    if view.extensions.is_empty() {
        b.push_str("<p>No ClusterExtension is installed.</p>");
        return page("Cluster", &b);
    }
    b.push_str(
        "<table class=\"extensions\"><thead><tr><th scope=\"col\">Extension</th><th scope=\"col\">Namespace</th>\
         <th scope=\"col\">Package</th><th scope=\"col\">Installed</th><th scope=\"col\">Conditions</th>\
         <th scope=\"col\">Upgrade</th></tr></thead><tbody>\n",
    );
    for ext in &view.extensions {
        let installed = match &ext.installed {
            Some((bundle, version)) => {
                let link = catalogs
                    .iter()
                    .find(|c| {
                        c.package(&ext.package)
                            .is_some_and(|p| p.bundle(bundle).is_some())
                    })
                    .map(|c| bundle_url(&c.meta.name, &ext.package, bundle));
                match link {
                    Some(url) => format!(
                        "<a href=\"{url}\">{}</a> ({})",
                        short(bundle, 60),
                        esc(version)
                    ),
                    None => format!("{} ({})", short(bundle, 60), esc(version)),
                }
            }
            None => "<em>not installed</em>".to_owned(),
        };
        let mut conditions = String::from("<ul class=\"conditions\">");
        for c in &ext.conditions {
            let _ = write!(
                conditions,
                "<li class=\"{}\" title=\"{}\"><strong>{}</strong>={} <small>{}</small></li>",
                if c.status == "True" { "yes" } else { "no" },
                esc(&c.message),
                esc(&c.type_),
                esc(&c.status),
                esc(&c.reason)
            );
        }
        conditions.push_str("</ul>");
        let upgrade = match upgrade(catalogs, ext) {
            Upgrade::UpToDate => "up to date".to_owned(),
            Upgrade::Available {
                catalog,
                bundle,
                version,
            } => format!(
                "<a class=\"upgrade\" href=\"{}\">{}</a> ({}) from {}",
                bundle_url(&catalog, &ext.package, &bundle),
                short(&bundle, 60),
                esc(&version),
                esc(&catalog)
            ),
            Upgrade::Unresolvable(m) => format!("<span class=\"no\">{}</span>", esc(&m)),
        };
        let _ = writeln!(
            b,
            "<tr data-extension=\"{}\"><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td>{installed}</td><td>{conditions}</td><td>{upgrade}</td></tr>",
            esc(&ext.name),
            short(&ext.name, 60),
            esc(&ext.namespace),
            short(&ext.package, 60)
        );
    }
    b.push_str("</tbody></table>");
    page("Cluster", &b)
}
