//! The pages: catalogs, search, package (with its upgrade graph and "what would I get"), and
//! bundle. Each is a pure function of the indexed catalogs and the request's parameters.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

use olm_resolve::{
    CatalogInput, Installed, LabelSelector, Request, UpgradeConstraintPolicy, VersionRange,
};

use olm_bundle::config::{NamespaceFormat, WatchNamespaceRule};
use olm_bundle::csv::ClusterServiceVersion;

use crate::html::{PREFIX, bundle_url, enc, esc, markdown, package_url, page, short};
use crate::model::{BundleView, CatalogView, PackageView};

/// Most search results listed on one page.
pub const MAX_RESULTS: usize = 200;

/// Most `skipRange` edges a package's graph draws: a wide range on many entries would otherwise
/// draw millions of edges, unreadable and seconds in the making.
pub const MAX_SKIP_RANGE_EDGES: usize = 2_000;

/// The catalogs page.
pub fn catalogs(catalogs: &[Arc<CatalogView>], on_cluster: bool) -> String {
    let mut b = String::from("<h1>Catalogs</h1>\n");
    if on_cluster {
        let _ = writeln!(
            b,
            "<p><a href=\"{PREFIX}/cluster\">What is installed on this cluster</a>, and what it would upgrade to.</p>"
        );
    }
    if catalogs.is_empty() {
        b.push_str("<p>No catalog is served yet.</p>");
        return page("Catalogs", &b);
    }
    b.push_str(
        "<table class=\"catalogs\"><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Priority</th>\
         <th scope=\"col\">Image</th><th scope=\"col\">Digest</th><th scope=\"col\">Last unpacked</th>\
         <th scope=\"col\">State</th><th scope=\"col\">Packages</th><th scope=\"col\">Bundles</th></tr></thead><tbody>\n",
    );
    for c in catalogs {
        let m = &c.meta;
        let _ = writeln!(
            b,
            "<tr><td><a href=\"{PREFIX}/search?catalog={}\">{}</a></td><td>{}</td><td><code>{}</code></td>\
             <td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            enc(&m.name),
            esc(&m.name),
            m.priority.map_or_else(String::new, |p| p.to_string()),
            esc(&m.image),
            esc(&m.digest),
            esc(&m.last_unpacked),
            esc(&m.state),
            c.packages.len(),
            c.bundle_count()
        );
    }
    b.push_str("</tbody></table>");
    page("Catalogs", &b)
}

/// What the search page was asked.
#[derive(Debug, Default, Clone)]
pub struct SearchQuery {
    /// Free text: every word must appear in name, display name, provider, keywords,
    /// categories, capability or summary.
    pub text: String,
    /// Only this catalog.
    pub catalog: String,
    /// Only this category.
    pub category: String,
    /// Only this capability level.
    pub capability: String,
    /// Only this provider.
    pub provider: String,
    /// Which page of [`MAX_RESULTS`] results, from 1.
    pub page: usize,
}

impl SearchQuery {
    /// Reads the query parameters.
    pub fn from_params(params: &BTreeMap<String, String>) -> SearchQuery {
        let get = |k: &str| params.get(k).cloned().unwrap_or_default();
        SearchQuery {
            text: get("q"),
            catalog: get("catalog"),
            category: get("category"),
            capability: get("capability"),
            provider: get("provider"),
            page: params
                .get("page")
                .and_then(|p| p.parse().ok())
                .filter(|p| *p > 0)
                .unwrap_or(1),
        }
    }

    /// This query's URL for page `page`.
    fn url(&self, page: usize) -> String {
        let mut url = format!("{PREFIX}/search?q={}", enc(&self.text));
        for (key, value) in [
            ("catalog", &self.catalog),
            ("category", &self.category),
            ("capability", &self.capability),
            ("provider", &self.provider),
        ] {
            if !value.is_empty() {
                let _ = write!(url, "&{key}={}", enc(value));
            }
        }
        if page > 1 {
            let _ = write!(url, "&page={page}");
        }
        url
    }

    fn matches(&self, catalog: &str, p: &PackageView, words: &[String]) -> bool {
        (self.catalog.is_empty() || self.catalog == catalog)
            && (self.category.is_empty()
                || p.categories
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(&self.category)))
            && (self.capability.is_empty() || p.capabilities.eq_ignore_ascii_case(&self.capability))
            && provider_matches(&p.provider, &self.provider)
            && words.iter().all(|w| p.haystack.contains(w.as_str()))
    }
}

/// Whether `provider` holds every word of `filter`, without regard to case (`red hat` finds
/// "Red Hat, Inc." and "Red Hat HPC Community").
fn provider_matches(provider: &str, filter: &str) -> bool {
    if filter.trim().is_empty() {
        return true;
    }
    let provider = provider.to_lowercase();
    filter
        .to_lowercase()
        .split_whitespace()
        .all(|w| provider.contains(w))
}

/// The search page: the form with its filters, then the packages that match.
pub fn search(catalogs: &[Arc<CatalogView>], q: &SearchQuery) -> String {
    let words: Vec<String> = q.text.split_whitespace().map(str::to_lowercase).collect();
    let mut categories = BTreeSet::new();
    let mut capabilities = BTreeSet::new();
    let mut hits: Vec<(&CatalogView, &PackageView)> = Vec::new();
    let mut total = 0usize;
    // Page 0 (a query built in code) is the first.
    let current = q.page.max(1);
    let skip = (current - 1).saturating_mul(MAX_RESULTS);
    for c in catalogs {
        for p in c.packages.iter() {
            categories.extend(p.categories.iter().map(String::as_str));
            if !p.capabilities.is_empty() {
                capabilities.insert(p.capabilities.as_str());
            }
            if q.matches(&c.meta.name, p, &words) {
                total += 1;
                if total > skip && hits.len() < MAX_RESULTS {
                    hits.push((c, p));
                }
            }
        }
    }
    let mut b = String::from("<h1>Search packages</h1>\n");
    let _ = write!(
        b,
        "<form class=\"filters\" action=\"{PREFIX}/search\" method=\"get\">\
         <label>Text <input name=\"q\" type=\"search\" value=\"{}\"></label>",
        esc(&q.text)
    );
    select(
        &mut b,
        "Catalog",
        "catalog",
        catalogs.iter().map(|c| c.meta.name.as_str()),
        &q.catalog,
    );
    select(
        &mut b,
        "Category",
        "category",
        categories.into_iter(),
        &q.category,
    );
    select(
        &mut b,
        "Capability",
        "capability",
        capabilities.into_iter(),
        &q.capability,
    );
    let _ = writeln!(
        b,
        "<label>Provider <input name=\"provider\" value=\"{}\"></label><button type=\"submit\">Search</button></form>",
        esc(&q.provider)
    );
    let _ = writeln!(
        b,
        "<p class=\"count\" id=\"result-count\">{total} package{} found{}</p>",
        if total == 1 { "" } else { "s" },
        if hits.is_empty() && total > 0 {
            format!(", none on page {current}")
        } else if total > hits.len() {
            format!(
                ", {}–{} shown",
                skip.saturating_add(1),
                skip.saturating_add(hits.len())
            )
        } else {
            String::new()
        }
    );
    let pages = total.div_ceil(MAX_RESULTS).max(1);
    let pager = if pages > 1 {
        let mut nav = String::from("<nav class=\"pager\" aria-label=\"Result pages\">");
        if current > 1 {
            let _ = write!(
                nav,
                "<a rel=\"prev\" href=\"{}\">← Previous</a> ",
                esc(&q.url(current.min(pages + 1) - 1))
            );
        }
        let _ = write!(nav, "<span>page {} of {pages}</span>", current);
        if current < pages {
            let _ = write!(
                nav,
                " <a rel=\"next\" href=\"{}\">Next →</a>",
                esc(&q.url(current + 1))
            );
        }
        nav.push_str("</nav>\n");
        nav
    } else {
        String::new()
    };
    b.push_str(&pager);
    if !hits.is_empty() {
        b.push_str(
            "<table class=\"results\"><thead><tr><th scope=\"col\">Package</th><th scope=\"col\">Catalog</th>\
             <th scope=\"col\">Provider</th><th scope=\"col\">Latest</th><th scope=\"col\">Capability</th>\
             <th scope=\"col\">Summary</th></tr></thead><tbody>\n",
        );
        for (c, p) in hits {
            let latest = p.head().map(|h| h.version.as_str()).unwrap_or_default();
            let _ = writeln!(
                b,
                "<tr class=\"result\"><td><a href=\"{}\" title=\"{}\">{}</a><br><small title=\"{}\">{}</small>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                package_url(&c.meta.name, &p.name),
                esc(if p.display_name.is_empty() {
                    &p.name
                } else {
                    &p.display_name
                }),
                short(
                    if p.display_name.is_empty() {
                        &p.name
                    } else {
                        &p.display_name
                    },
                    80
                ),
                esc(&p.name),
                short(&p.name, 80),
                if p.deprecated.is_some() {
                    " <span class=\"badge deprecated\">deprecated</span>"
                } else {
                    ""
                },
                esc(&c.meta.name),
                esc(&p.provider),
                esc(latest),
                esc(&p.capabilities),
                esc(&p.summary)
            );
        }
        b.push_str("</tbody></table>");
    }
    b.push_str(&pager);
    page("Search", &b)
}

fn select<'a>(
    b: &mut String,
    label: &str,
    name: &str,
    options: impl Iterator<Item = &'a str>,
    chosen: &str,
) {
    let _ = write!(
        b,
        "<label>{label} <select name=\"{name}\"><option value=\"\">any</option>"
    );
    for o in options {
        let _ = write!(
            b,
            "<option value=\"{v}\"{}>{v}</option>",
            if o == chosen { " selected" } else { "" },
            v = esc(o)
        );
    }
    b.push_str("</select></label>");
}

/// What the "what would I get" form asked.
#[derive(Debug, Default, Clone)]
pub struct WouldGet {
    /// A channel, or every channel.
    pub channel: String,
    /// A version range (Masterminds syntax).
    pub version: String,
    /// The installed version, if any.
    pub installed: String,
    /// Whether every catalog is asked (as for a ClusterExtension without a catalog selector),
    /// rather than only the page's.
    pub everywhere: bool,
}

impl WouldGet {
    /// Reads the query parameters; None when the form was not submitted.
    pub fn from_params(params: &BTreeMap<String, String>) -> Option<WouldGet> {
        params.contains_key("resolve").then(|| WouldGet {
            channel: params.get("channel").cloned().unwrap_or_default(),
            version: params.get("version").cloned().unwrap_or_default(),
            installed: params.get("installed").cloned().unwrap_or_default(),
            everywhere: params.get("from").is_some_and(|f| f == "all"),
        })
    }
}

/// The package page.
/// The package page of `p` in `c`, one of `catalogs` (which "what would I get" may ask).
pub fn package(
    catalogs: &[Arc<CatalogView>],
    c: &CatalogView,
    p: &PackageView,
    ask: Option<&WouldGet>,
) -> String {
    let mut b = String::new();
    b.push_str("<div class=\"package-head\">");
    if let Some((mediatype, data)) = &p.icon {
        // Only image types reach a data: URL; anything else is not shown.
        if mediatype.starts_with("image/") && !mediatype.contains(['"', '\'', '<', '>', ';', ',']) {
            let _ = write!(
                b,
                "<img class=\"icon\" alt=\"\" width=\"64\" height=\"64\" src=\"data:{};base64,{}\">",
                esc(mediatype),
                esc(data)
            );
        }
    }
    let _ = writeln!(
        b,
        "<div><h1>{}</h1><p class=\"sub\"><code>{}</code> in catalog <a href=\"{PREFIX}/search?catalog={}\">{}</a>{}</p></div></div>",
        esc(if p.display_name.is_empty() {
            &p.name
        } else {
            &p.display_name
        }),
        esc(&p.name),
        enc(&c.meta.name),
        esc(&c.meta.name),
        if p.provider.is_empty() {
            String::new()
        } else {
            format!(" · provided by {}", esc(&p.provider))
        }
    );
    if let Some(m) = &p.deprecated {
        let _ = writeln!(
            b,
            "<p class=\"warning\" role=\"note\"><strong>Deprecated:</strong> {}</p>",
            esc(m)
        );
    }
    if !p.summary.is_empty() {
        let _ = writeln!(b, "<p class=\"summary\">{}</p>", esc(&p.summary));
    }
    b.push_str("<dl class=\"facts\">");
    fact(&mut b, "Default channel", &esc(&p.default_channel));
    fact(&mut b, "Capability", &esc(&p.capabilities));
    fact(&mut b, "Categories", &esc(&p.categories.join(", ")));
    fact(&mut b, "Keywords", &esc(&p.keywords.join(", ")));
    if !p.links.is_empty() {
        let links: Vec<String> = p
            .links
            .iter()
            .map(|(n, u)| link_or_text(u, if n.is_empty() { u } else { n }))
            .collect();
        fact(&mut b, "Links", &links.join(" · "));
    }
    if !p.maintainers.is_empty() {
        let people: Vec<String> = p
            .maintainers
            .iter()
            .map(|(n, e)| {
                if e.is_empty() {
                    esc(n)
                } else {
                    format!("{} &lt;{}&gt;", esc(n), esc(e))
                }
            })
            .collect();
        fact(&mut b, "Maintainers", &people.join(", "));
    }
    b.push_str("</dl>\n<h2 id=\"channels\">Channels</h2>\n");
    b.push_str(
        "<table class=\"channels\"><thead><tr><th scope=\"col\">Channel</th><th scope=\"col\">Head</th>\
         <th scope=\"col\">Versions</th><th scope=\"col\">Deprecation</th></tr></thead><tbody>\n",
    );
    for ch in &p.channels {
        let versions: Vec<String> = ch
            .entries
            .iter()
            .map(|e| {
                let v = p.bundle(e).map_or(e.as_str(), |b| b.version.as_str());
                match p.bundle_deprecations.get(e) {
                    Some(message) => format!(
                        "<a class=\"deprecated\" href=\"{}\" title=\"deprecated: {}\">{} <span class=\"badge deprecated\">deprecated</span></a>",
                        bundle_url(&c.meta.name, &p.name, e),
                        esc(message),
                        esc(v)
                    ),
                    None => format!(
                        "<a href=\"{}\">{}</a>",
                        bundle_url(&c.meta.name, &p.name, e),
                        esc(v)
                    ),
                }
            })
            .collect();
        let head = ch.head.as_deref().map_or_else(
            || "<em>no single head</em>".to_owned(),
            |h| {
                format!(
                    "<a class=\"head\" href=\"{}\" title=\"{}\">{}</a>",
                    bundle_url(&c.meta.name, &p.name, h),
                    esc(h),
                    short(h, 60)
                )
            },
        );
        let _ = writeln!(
            b,
            "<tr data-channel=\"{0}\"><th scope=\"row\" title=\"{0}\">{1}{2}</th><td>{head}</td><td class=\"versions\">{3}</td><td>{4}</td></tr>",
            esc(&ch.name),
            short(&ch.name, 40),
            if ch.name == p.default_channel {
                " <span class=\"badge\">default</span>"
            } else {
                ""
            },
            versions.join(" "),
            esc(p
                .channel_deprecations
                .get(&ch.name)
                .map_or("", String::as_str))
        );
    }
    b.push_str("</tbody></table>\n");
    would_get(&mut b, catalogs, c, p, ask);
    b.push_str("<h2 id=\"graph\">Upgrade graph</h2>\n");
    b.push_str(
        "<div class=\"graph-tools\" hidden><button type=\"button\" data-zoom=\"in\">Zoom in</button>\
         <button type=\"button\" data-zoom=\"out\">Zoom out</button><button type=\"button\" data-zoom=\"fit\">Fit</button>\
         <button type=\"button\" data-zoom=\"reset\">Reset</button>\
         <span class=\"hint\">Drag to pan; hover or focus a bundle to highlight its upgrade paths.</span></div>\n",
    );
    b.push_str("<div class=\"graph\" id=\"graph-view\">");
    b.push_str(&graph_svg(p));
    b.push_str("</div>\n");
    if !p.description.is_empty() {
        b.push_str("<h2 id=\"description\">Description</h2>\n<div class=\"markdown\">");
        b.push_str(&markdown(&p.description));
        b.push_str("</div>\n");
    }
    page(&p.name, &b)
}

fn fact(b: &mut String, name: &str, html: &str) {
    if !html.is_empty() {
        let _ = write!(b, "<dt>{name}</dt><dd>{html}</dd>");
    }
}

fn link_or_text(url: &str, text: &str) -> String {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        format!(
            "<a href=\"{}\" rel=\"noopener noreferrer\">{}</a>",
            esc(url),
            esc(text)
        )
    } else {
        esc(text)
    }
}

/// The package's upgrade graph, drawn by the same layout as `olm catalog graph --format svg`.
fn graph_svg(p: &PackageView) -> String {
    let opts = olm_graph::GraphOptions {
        max_skip_range_edges: Some(MAX_SKIP_RANGE_EDGES),
        ..Default::default()
    };
    match olm_graph::Drawing::new(&p.content, &opts) {
        Ok(d) => {
            let mut out = String::new();
            for w in &d.warnings {
                let _ = writeln!(out, "<p class=\"warning\" role=\"note\">{}</p>", esc(w));
            }
            out.push_str(&olm_graph::svg::write(&d));
            out
        }
        Err(e) => format!(
            "<p class=\"warning\">The graph cannot be drawn: {}</p>",
            esc(&e.to_string())
        ),
    }
}

/// The "what would I get" form and, when asked, the bundle `olm resolve` picks from this
/// catalog (or from every catalog, with their priorities), with its explanation.
fn would_get(
    b: &mut String,
    catalogs: &[Arc<CatalogView>],
    c: &CatalogView,
    p: &PackageView,
    ask: Option<&WouldGet>,
) {
    let ask_or_default = ask.cloned().unwrap_or_default();
    let _ = write!(
        b,
        "<h2 id=\"would-get\">What would I get?</h2>\n<form class=\"resolve\" action=\"{}#would-get\" method=\"get\">\
         <input type=\"hidden\" name=\"resolve\" value=\"1\">",
        package_url(&c.meta.name, &p.name)
    );
    let _ = write!(
        b,
        "<label>Channel <select name=\"channel\"><option value=\"\">any</option>"
    );
    for ch in &p.channels {
        let _ = write!(
            b,
            "<option value=\"{}\"{}>{}</option>",
            esc(&ch.name),
            if ch.name == ask_or_default.channel {
                " selected"
            } else {
                ""
            },
            short(&ch.name, 60)
        );
    }
    let _ = writeln!(
        b,
        "</select></label><label>Version range <input name=\"version\" placeholder=\"e.g. &gt;=1.2.0 &lt;2\" value=\"{}\"></label>\
         <label>Installed version <input name=\"installed\" placeholder=\"none\" value=\"{}\"></label>",
        esc(&ask_or_default.version),
        esc(&ask_or_default.installed)
    );
    // With one catalog, "every catalog" is this one.
    if catalogs.len() > 1 {
        let _ = write!(
            b,
            "<label>From <select name=\"from\"><option value=\"\">this catalog</option>\
             <option value=\"all\"{}>every catalog, by priority (no catalog selector)</option></select></label>",
            if ask_or_default.everywhere {
                " selected"
            } else {
                ""
            }
        );
    }
    b.push_str("<button type=\"submit\">Resolve</button></form>\n");
    let Some(ask) = ask else {
        return;
    };
    let inputs: Vec<CatalogInput<'_>> = if ask.everywhere {
        catalogs.iter().map(|c| c.input()).collect()
    } else {
        vec![c.input()]
    };
    match resolve(&inputs, p, ask) {
        Ok((found, trace)) => {
            let from = if ask.everywhere {
                format!(
                    " from catalog <span id=\"resolved-catalog\">{}</span>",
                    esc(&found.catalog)
                )
            } else {
                String::new()
            };
            let _ = write!(
                b,
                "<div class=\"resolution\" id=\"resolution\" role=\"status\"><p>You would get <a id=\"resolved-bundle\" href=\"{}\">{}</a> (version {}){from}.</p>",
                bundle_url(&found.catalog, &p.name, found.bundle.as_str()),
                esc(found.bundle.as_str()),
                esc(&found.version.legacy_version_string())
            );
            explanation(b, &trace);
            b.push_str("</div>\n");
        }
        Err((message, trace)) => {
            let _ = write!(
                b,
                "<div class=\"resolution failed\" id=\"resolution\" role=\"status\"><p>No bundle: <span id=\"resolve-error\">{}</span></p>",
                esc(&message)
            );
            explanation(b, &trace);
            b.push_str("</div>\n");
        }
    }
}

fn explanation(b: &mut String, trace: &[String]) {
    if trace.is_empty() {
        return;
    }
    b.push_str("<details><summary>Why</summary><ol class=\"trace\">");
    for line in trace {
        let _ = write!(b, "<li>{}</li>", esc(line));
    }
    b.push_str("</ol></details>");
}

type Resolved = Result<(olm_resolve::Resolution, Vec<String>), (String, Vec<String>)>;

/// Resolves `ask` for package `p` (whose bundles name the installed version) from `inputs`.
fn resolve(inputs: &[CatalogInput<'_>], p: &PackageView, ask: &WouldGet) -> Resolved {
    let version = match ask.version.trim() {
        "" => None,
        v => {
            // What the API server would say of it in spec.source.catalog.version.
            olm_version::crd::check_version_range(v).map_err(|e| (e.to_string(), Vec::new()))?;
            Some(VersionRange::parse(v).map_err(|e| (e.to_string(), Vec::new()))?)
        }
    };
    let installed = match ask.installed.trim() {
        "" => None,
        v => Some(installed_of(p, v).map_err(|e| (e, Vec::new()))?),
    };
    let request = Request {
        package: p.name.as_str().into(),
        channels: if ask.channel.is_empty() {
            Vec::new()
        } else {
            vec![ask.channel.as_str().into()]
        },
        version,
        selector: LabelSelector::default(),
        policy: UpgradeConstraintPolicy::CatalogProvided,
        installed,
    };
    let mut trace = Vec::new();
    match olm_resolve::resolve(inputs, &request, Some(&mut trace)) {
        Ok(r) => Ok((r, trace)),
        Err(f) => Err((f.error.to_string(), trace)),
    }
}

/// The installed bundle the form names: a bundle of the package by name or version (`v2.4.3`
/// as `2.4.3`), else a bundle of that version the catalog does not have, which the resolver
/// then answers for as it does for an extension that installed it.
fn installed_of(p: &PackageView, given: &str) -> Result<Installed, String> {
    let version = given.strip_prefix('v').unwrap_or(given);
    if let Some(b) = p
        .bundles
        .iter()
        .find(|b| b.name == given || b.version == given || b.version == version)
    {
        return Ok(Installed {
            name: b.name.as_str().into(),
            version: b.version.clone(),
            release: None,
        });
    }
    olm_version::blang::Version::parse(version)
        .map_err(|e| format!("installed version {}: {e}", olm_goenc::quote(given)))?;
    Ok(Installed {
        name: format!("{}.v{version}", p.name).as_str().into(),
        version: version.to_owned(),
        release: None,
    })
}

/// The bundle page.
pub fn bundle(c: &CatalogView, p: &PackageView, bv: &BundleView) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<p class=\"crumbs\"><a href=\"{}\">{}</a> ›</p><h1>{}</h1>",
        package_url(&c.meta.name, &p.name),
        esc(&p.name),
        esc(&bv.name)
    );
    if let Some(m) = p.bundle_deprecations.get(&bv.name) {
        let _ = writeln!(
            b,
            "<p class=\"warning\" role=\"note\"><strong>Deprecated:</strong> {}</p>",
            esc(m)
        );
    }
    b.push_str("<dl class=\"facts\">");
    fact(&mut b, "Version", &esc(&bv.version));
    fact(&mut b, "Release", &esc(&bv.release));
    fact(&mut b, "Image", &format!("<code>{}</code>", esc(&bv.image)));
    fact(&mut b, "Channels", &esc(&bv.channels.join(", ")));
    fact(&mut b, "Minimum Kubernetes", &esc(&bv.min_kube_version));
    for (key, name) in [
        (
            "operatorframework.io/suggested-namespace",
            "Suggested namespace",
        ),
        (
            "operators.openshift.io/infrastructure-features",
            "Infrastructure features",
        ),
        (
            "operators.openshift.io/valid-subscription",
            "Valid subscription",
        ),
        (
            "features.operators.openshift.io/disconnected",
            "Disconnected",
        ),
        (
            "features.operators.openshift.io/fips-compliant",
            "FIPS compliant",
        ),
        ("features.operators.openshift.io/proxy-aware", "Proxy aware"),
        ("containerImage", "Operator image"),
        ("createdAt", "Created"),
        ("repository", "Repository"),
    ] {
        if let Some(v) = bv.annotations.get(key) {
            fact(&mut b, name, &esc(v));
        }
    }
    b.push_str("</dl>\n");
    list_section(&mut b, "Provided APIs", &bv.provided);
    list_section(&mut b, "Required APIs and packages", &bv.required);
    if !bv.install_modes.is_empty() {
        b.push_str("<h2>Install modes</h2><ul class=\"modes\">");
        for (mode, ok) in &bv.install_modes {
            let _ = write!(
                b,
                "<li class=\"{}\">{} — {}</li>",
                if *ok { "yes" } else { "no" },
                esc(mode),
                if *ok { "supported" } else { "not supported" }
            );
        }
        b.push_str("</ul>\n");
    }
    b.push_str("<h2>Configuration</h2>\n");
    config_schema(&mut b, bv);
    if !bv.related_images.is_empty() {
        b.push_str("<h2>Related images</h2><table><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Image</th></tr></thead><tbody>");
        for (n, i) in &bv.related_images {
            let _ = write!(
                b,
                "<tr><td>{}</td><td><code>{}</code></td></tr>",
                esc(n),
                esc(i)
            );
        }
        b.push_str("</tbody></table>\n");
    }
    if let Some(examples) = bv.annotations.get("alm-examples") {
        let hidden: BTreeSet<String> = bv
            .annotations
            .get("operators.operatorframework.io/internal-objects")
            .and_then(|s| serde_json::from_str::<Vec<String>>(s).ok())
            .unwrap_or_default()
            .into_iter()
            .collect();
        let shown = match serde_json::from_str::<serde_json::Value>(examples) {
            Ok(serde_json::Value::Array(items)) => {
                let kept: Vec<serde_json::Value> = items
                    .into_iter()
                    .filter(|i| {
                        let kind = i["kind"].as_str().unwrap_or_default();
                        !hidden.iter().any(|h| {
                            h.split('.')
                                .next()
                                .is_some_and(|p| p.eq_ignore_ascii_case(kind))
                                || h == kind
                        })
                    })
                    .collect();
                serde_json::to_string_pretty(&kept).unwrap_or_default()
            }
            _ => examples.clone(),
        };
        let _ = writeln!(
            b,
            "<h2>Examples</h2><pre class=\"code\">{}</pre>",
            esc(&shown)
        );
    }
    let _ = writeln!(
        b,
        "<h2>Install it</h2><p>A ClusterExtension for this bundle (create the ServiceAccount and its permissions first{}):</p><pre class=\"code\" id=\"cluster-extension\">{}</pre>",
        if matches!(
            watch_rule(bv),
            WatchNamespaceRule::Present {
                required: true,
                format: Some(NamespaceFormat::SingleNamespaceInstallMode)
            }
        ) {
            "; the operator must watch a namespace other than its own: change <code>watchNamespace</code>"
        } else {
            ""
        },
        esc(&cluster_extension(c, p, bv))
    );
    b.push_str("<h2>Properties</h2><table class=\"properties\"><thead><tr><th scope=\"col\">Type</th><th scope=\"col\">Value</th></tr></thead><tbody>");
    for (t, v) in &bv.properties {
        let shown = if t == "olm.bundle.object" || v.len() > 2000 {
            format!("({} bytes)", v.len())
        } else {
            v.clone()
        };
        let _ = write!(
            b,
            "<tr><td>{}</td><td><code>{}</code></td></tr>",
            esc(t),
            esc(&shown)
        );
    }
    b.push_str("</tbody></table>\n");
    page(&bv.name, &b)
}

fn list_section(b: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = write!(b, "<h2>{title}</h2><ul>");
    for i in items {
        let _ = write!(b, "<li><code>{}</code></li>", esc(i));
    }
    b.push_str("</ul>\n");
}

/// How `watchNamespace` is constrained for this bundle: OLM v1's registry+v1 rule, from the
/// install modes its CSV metadata lists.
fn watch_rule(bv: &BundleView) -> WatchNamespaceRule {
    csv_of(bv).map_or(WatchNamespaceRule::Absent, |csv| {
        olm_bundle::config::watch_namespace_rule(&csv)
    })
}

/// A CSV carrying only the bundle's install modes: all the configuration rules read.
fn csv_of(bv: &BundleView) -> Option<ClusterServiceVersion> {
    let modes: Vec<serde_json::Value> = bv
        .install_modes
        .iter()
        .map(|(t, ok)| serde_json::json!({"type": t, "supported": ok}))
        .collect();
    ClusterServiceVersion::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": bv.name},
        "spec": {"installModes": modes},
    }))
    .ok()
}

/// The configuration a ClusterExtension may give this bundle, in words and as the JSON schema
/// OLM v1 validates it with.
fn config_schema(b: &mut String, bv: &BundleView) {
    let watch = match watch_rule(bv) {
        WatchNamespaceRule::Absent => {
            "<code>watchNamespace</code> is not accepted: the operator watches all namespaces."
        }
        WatchNamespaceRule::Present {
            required: false,
            format,
        } => match format {
            Some(NamespaceFormat::OwnNamespaceInstallMode) => {
                "<code>watchNamespace</code> is optional: leave it out to watch all namespaces, or give the install namespace."
            }
            Some(NamespaceFormat::SingleNamespaceInstallMode) => {
                "<code>watchNamespace</code> is optional: leave it out to watch all namespaces, or name a namespace other than the install namespace."
            }
            None => {
                "<code>watchNamespace</code> is optional: leave it out to watch all namespaces, or name one namespace."
            }
        },
        WatchNamespaceRule::Present {
            required: true,
            format,
        } => match format {
            Some(NamespaceFormat::OwnNamespaceInstallMode) => {
                "<code>watchNamespace</code> is required and must be the install namespace."
            }
            Some(NamespaceFormat::SingleNamespaceInstallMode) => {
                "<code>watchNamespace</code> is required and must be a namespace other than the install namespace."
            }
            None => {
                "<code>watchNamespace</code> is required: the install namespace or another one."
            }
        },
    };
    let _ = writeln!(
        b,
        "<ul class=\"config\"><li>{watch}</li><li><code>deploymentConfig</code> (optional): environment, resources, tolerations, node selector, affinity, volumes and annotations for the operator's deployments.</li></ul>"
    );
    if let Some(csv) = csv_of(bv) {
        let schema = olm_bundle::config::config_schema(&csv);
        let _ = writeln!(
            b,
            "<details><summary>JSON schema</summary><pre class=\"code\" id=\"config-schema\">{}</pre></details>",
            esc(&serde_json::to_string_pretty(&schema).unwrap_or_default())
        );
    }
}

/// A ClusterExtension installing exactly this bundle from this catalog, as YAML. When the
/// bundle only supports SingleNamespace, the namespace it watches must differ from the install
/// namespace: `<namespace>-watched` stands in for it (the page says so).
fn cluster_extension(c: &CatalogView, p: &PackageView, bv: &BundleView) -> String {
    let namespace = bv
        .annotations
        .get("operatorframework.io/suggested-namespace")
        .cloned()
        .unwrap_or_else(|| p.name.clone());
    let mut spec = serde_json::json!({
        "namespace": namespace,
        "serviceAccount": {"name": format!("{}-installer", p.name)},
    });
    if let WatchNamespaceRule::Present {
        required: true,
        format,
    } = watch_rule(bv)
    {
        let watched = match format {
            Some(NamespaceFormat::SingleNamespaceInstallMode) => format!("{namespace}-watched"),
            _ => namespace.clone(),
        };
        spec["config"] =
            serde_json::json!({"configType": "Inline", "inline": {"watchNamespace": watched}});
    }
    spec["source"] = serde_json::json!({"sourceType": "Catalog", "catalog": {
        "packageName": p.name,
        "version": bv.version,
        "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": c.meta.name}},
    }});
    olm_goenc::yaml::to_yaml_ordered(&serde_json::json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": p.name},
        "spec": spec,
    }))
}
