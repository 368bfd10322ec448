//! Pages for the real catalogs of the data set, and a hostile catalog whose every text field
//! carries script.

use super::*;

fn community() -> Vec<Arc<CatalogView>> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/catalogs/community-v4.21"
    );
    let catalog = olm_catalog::load_path(std::path::Path::new(dir)).unwrap();
    let meta = CatalogMeta {
        name: "community".into(),
        priority: Some(0),
        image: "community-v4.21".into(),
        state: "Local".into(),
        ..CatalogMeta::default()
    };
    vec![Arc::new(CatalogView::new(meta, catalog))]
}

#[test]
fn every_page_of_the_real_catalog_renders() {
    let cats = community();
    let home = respond(&cats, None, "/browse/", "");
    assert_eq!(home.status, 200);
    assert!(home.body.contains(">community</a>"), "{}", home.body);
    let c = &cats[0];
    assert!(c.packages.len() >= 30);
    for p in c.packages.iter() {
        let page = respond(&cats, None, &html::package_url("community", &p.name), "");
        assert_eq!(page.status, 200, "{}", p.name);
        assert!(page.body.contains("<svg"), "{}: no graph", p.name);
        for b in &p.bundles {
            let page = respond(
                &cats,
                None,
                &html::bundle_url("community", &p.name, &b.name),
                "",
            );
            assert_eq!(page.status, 200, "{}", b.name);
            assert!(page.body.contains("kind: ClusterExtension"));
        }
    }
    assert_eq!(
        respond(&cats, None, "/browse/catalogs/community/packages/nope", "").status,
        404
    );
    assert_eq!(
        respond(&cats, None, "/browse/catalogs/other/packages/x", "").status,
        404
    );
}

#[test]
fn search_matches_words_and_filters() {
    let cats = community();
    let all = respond(&cats, None, "/browse/search", "");
    let n = cats[0].packages.len();
    assert!(
        all.body.contains(&format!("{n} packages found")),
        "{}",
        all.body
    );
    let one = respond(&cats, None, "/browse/search", "q=cat-facts");
    assert!(one.body.contains("1 package found"), "{}", one.body);
    assert!(
        one.body
            .contains("/browse/catalogs/community/packages/cat-facts-operator")
    );
    let by_catalog = respond(&cats, None, "/browse/catalogs/community", "");
    assert!(
        by_catalog.body.contains(&format!("{n} packages found")),
        "{}",
        by_catalog.body
    );
    assert_eq!(
        respond(&cats, None, "/browse/catalogs/nope", "").status,
        404
    );
    let none = respond(&cats, None, "/browse/search", "q=cat-facts+zzzz");
    assert!(none.body.contains("0 packages found"));
    // The provider filter takes words, as the search box does.
    let count = |query: &str| {
        respond(&cats, None, "/browse/search", query)
            .body
            .matches("<tr class=\"result\">")
            .count()
    };
    let red_hat = cats[0]
        .packages
        .iter()
        .filter(|p| p.provider.to_lowercase().contains("red hat"))
        .count();
    assert!(red_hat > 1);
    assert_eq!(count("provider=red+hat"), red_hat);
    assert_eq!(count("provider=HAT+red"), red_hat);
    assert_eq!(count("provider=zzzz"), 0);
}

#[test]
fn what_would_i_get_resolves_like_olm_resolve() {
    let cats = community();
    let p = cats[0].package("cat-facts-operator").unwrap();
    let head = p.head().unwrap().name.clone();
    let page = respond(
        &cats,
        None,
        "/browse/catalogs/community/packages/cat-facts-operator",
        "resolve=1&channel=&version=&installed=",
    );
    assert!(
        page.body.contains(&format!("id=\"resolved-bundle\" href=\"/browse/catalogs/community/packages/cat-facts-operator/bundles/{head}\"")),
        "{}",
        page.body
    );
    let bad = respond(
        &cats,
        None,
        "/browse/catalogs/community/packages/cat-facts-operator",
        "resolve=1&version=%3E%3D99.0.0",
    );
    assert!(bad.body.contains("id=\"resolve-error\""), "{}", bad.body);
}

/// A catalog `name` of priority `priority` whose package `demo` has bundles of `versions` in one
/// channel, each replacing the one before.
fn demo_catalog(name: &str, priority: i32, versions: &[&str]) -> Arc<CatalogView> {
    let mut lines = vec![
        serde_json::json!({"schema": "olm.package", "name": "demo", "defaultChannel": "stable"}),
    ];
    let entries: Vec<serde_json::Value> = versions
        .iter()
        .enumerate()
        .map(|(i, v)| match i {
            0 => serde_json::json!({"name": format!("demo.v{v}")}),
            _ => serde_json::json!({"name": format!("demo.v{v}"), "replaces": format!("demo.v{}", versions[i - 1])}),
        })
        .collect();
    lines.push(serde_json::json!({"schema": "olm.channel", "package": "demo", "name": "stable", "entries": entries}));
    for v in versions {
        lines.push(serde_json::json!({"schema": "olm.bundle", "package": "demo", "name": format!("demo.v{v}"),
            "image": format!("example.com/demo:{v}"),
            "properties": [{"type": "olm.package", "value": {"packageName": "demo", "version": v}}]}));
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let meta = CatalogMeta {
        name: name.into(),
        priority: Some(priority),
        ..CatalogMeta::default()
    };
    view_of(meta, &text)
}

/// A catalog of JSON lines `text` with `meta`, indexed for the pages.
fn view_of(meta: CatalogMeta, text: &str) -> Arc<CatalogView> {
    let catalog = olm_catalog::load::load_bytes(text.as_bytes(), "c.json").unwrap();
    Arc::new(CatalogView::new(meta, catalog))
}

/// The catalog "c" of JSON lines `text`.
fn catalog_c(text: &str) -> Vec<Arc<CatalogView>> {
    let meta = CatalogMeta {
        name: "c".into(),
        ..CatalogMeta::default()
    };
    vec![view_of(meta, text)]
}

/// Results past the first page are reached page by page, the filters kept.
#[test]
fn search_results_come_in_pages() {
    let mut text = String::new();
    for i in 0..450 {
        text.push_str(&format!(
            "{}\n",
            serde_json::json!({"schema": "olm.package", "name": format!("pkg{i:03}")})
        ));
    }
    let cats = catalog_c(&text);
    let first = respond(&cats, None, "/browse/search", "q=pkg&catalog=c").body;
    assert!(first.contains("450 packages found, 1–200 shown"), "{first}");
    assert!(first.contains("<span>page 1 of 3</span> <a rel=\"next\" href=\"/browse/search?q=pkg&amp;catalog=c&amp;page=2\">"), "{first}");
    assert!(!first.contains("rel=\"prev\""));
    let last = respond(&cats, None, "/browse/search", "q=pkg&catalog=c&page=3").body;
    assert!(last.contains("450 packages found, 401–450 shown"), "{last}");
    assert!(
        last.contains("/browse/catalogs/c/packages/pkg449"),
        "{last}"
    );
    assert!(
        !last.contains("/browse/catalogs/c/packages/pkg399\""),
        "{last}"
    );
    assert!(
        last.contains("rel=\"prev\" href=\"/browse/search?q=pkg&amp;catalog=c&amp;page=2\""),
        "{last}"
    );
    assert!(!last.contains("rel=\"next\""));
    // Past the end: nothing listed, a way back.
    let beyond = respond(&cats, None, "/browse/search", "page=99").body;
    assert!(
        beyond.contains("rel=\"prev\" href=\"/browse/search?q=&amp;page=3\""),
        "{beyond}"
    );
    assert!(
        beyond.contains("450 packages found, none on page 99"),
        "{beyond}"
    );
    let junk = respond(&cats, None, "/browse/search", "page=0").body;
    assert!(junk.contains("1–200 shown"), "{junk}");
}

/// A deprecated bundle is marked where its version is listed, with the message on hover.
#[test]
fn deprecated_bundles_are_marked_in_their_channel() {
    let text = format!(
        "{}\n{}\n{}\n{}\n",
        serde_json::json!({"schema": "olm.package", "name": "p", "defaultChannel": "c"}),
        serde_json::json!({"schema": "olm.channel", "package": "p", "name": "c", "entries": [{"name": "p.v1.0.0"}]}),
        serde_json::json!({"schema": "olm.bundle", "package": "p", "name": "p.v1.0.0", "image": "example.com/p:1",
            "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": "1.0.0"}}]}),
        serde_json::json!({"schema": "olm.deprecations", "package": "p", "entries": [
            {"reference": {"schema": "olm.bundle", "name": "p.v1.0.0"}, "message": "use 2 <now>"}]})
    );
    let cats = catalog_c(&text);
    let page = respond(&cats, None, "/browse/catalogs/c/packages/p", "").body;
    assert!(
        page.contains("<a class=\"deprecated\" href=\"/browse/catalogs/c/packages/p/bundles/p.v1.0.0\" title=\"deprecated: use 2 &lt;now&gt;\">1.0.0 <span class=\"badge deprecated\">deprecated</span></a>"),
        "{page}"
    );
}

/// The form speaks as the CLI and the API server do: an invalid range in the API server's
/// words; an installed version the catalog lacks answered by the resolver; `v` accepted.
#[test]
fn what_would_i_get_speaks_as_the_cli() {
    let cats = vec![demo_catalog("c", 0, &["1.0.0", "1.1.0"])];
    let url = "/browse/catalogs/c/packages/demo";
    let bad = respond(&cats, None, url, "resolve=1&version=%3E%3D1.0+%3C").body;
    assert!(
        bad.contains("spec.source.catalog.version: Invalid value: &quot;&gt;=1.0 &lt;&quot;: invalid version expression"),
        "{bad}"
    );
    let v = respond(&cats, None, url, "resolve=1&installed=v1.0.0").body;
    assert!(v.contains("demo.v1.1.0</a> (version 1.1.0)."), "{v}");
    let unknown = respond(&cats, None, url, "resolve=1&installed=9.9.9").body;
    assert!(
        unknown.contains("error upgrading from currently installed version &quot;9.9.9&quot;"),
        "{unknown}"
    );
    let junk = respond(&cats, None, url, "resolve=1&installed=nope").body;
    assert!(
        junk.contains("installed version &quot;nope&quot;"),
        "{junk}"
    );
}

/// "What would I get" asks the page's catalog, or every catalog by priority as a
/// ClusterExtension without a selector does; an unavailable catalog offers nothing.
#[test]
fn what_would_i_get_asks_one_catalog_or_all_by_priority() {
    let cats = vec![
        demo_catalog("low", 0, &["1.0.0", "1.1.0"]),
        demo_catalog("high", 5, &["1.0.0"]),
    ];
    let url = "/browse/catalogs/low/packages/demo";
    let page = respond(&cats, None, url, "").body;
    assert!(page.contains("<select name=\"from\">"), "{page}");
    let here = respond(&cats, None, url, "resolve=1").body;
    assert!(
        here.contains("id=\"resolved-bundle\" href=\"/browse/catalogs/low/packages/demo/bundles/demo.v1.1.0\">demo.v1.1.0</a> (version 1.1.0)."),
        "{here}"
    );
    let all = respond(&cats, None, url, "resolve=1&from=all").body;
    assert!(
        all.contains("id=\"resolved-bundle\" href=\"/browse/catalogs/high/packages/demo/bundles/demo.v1.0.0\">demo.v1.0.0</a> (version 1.0.0) from catalog <span id=\"resolved-catalog\">high</span>."),
        "{all}"
    );
    assert!(all.contains("<option value=\"all\" selected>"), "{all}");
    assert!(
        all.contains("priority 5: catalog &quot;high&quot; has package &quot;demo&quot;; selected"),
        "{all}"
    );

    let unavailable = vec![Arc::new(cats[0].with_meta(CatalogMeta {
        availability: olm_resolve::Availability::Unavailable,
        ..cats[0].meta.clone()
    }))];
    let none = respond(&unavailable, None, url, "resolve=1").body;
    assert!(none.contains("id=\"resolve-error\""), "{none}");
    // One catalog: no choice to offer.
    assert!(!none.contains("<select name=\"from\">"), "{none}");
}

fn hostile() -> Vec<Arc<CatalogView>> {
    let x = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>";
    let mut lines = Vec::new();
    let pkg = format!("evil{x}");
    lines.push(serde_json::json!({"schema": "olm.package", "name": pkg, "defaultChannel": x,
        "description": format!("# Hi\n{x}\n[link](javascript:alert(3))"),
        "icon": {"base64data": "PHN2Zz48L3N2Zz4=", "mediatype": "image/svg+xml\"><script>alert(4)</script>"}}));
    let mut entries = Vec::new();
    for i in 0..3 {
        let name = format!("{x}.v1.0.{i}");
        let meta = serde_json::json!({"displayName": x, "provider": {"name": x}, "keywords": [x],
            "annotations": {"description": x, "alm-examples": x, "categories": x},
            "links": [{"name": x, "url": "javascript:alert(5)"}], "maintainers": [{"name": x, "email": x}],
            "installModes": [{"type": x, "supported": true}]});
        lines.push(serde_json::json!({"schema": "olm.bundle", "package": pkg, "name": name, "image": x,
            "relatedImages": [{"name": x, "image": x}],
            "properties": [{"type": "olm.package", "value": {"packageName": pkg, "version": format!("1.0.{i}")}},
                {"type": "olm.csv.metadata", "value": meta},
                {"type": x, "value": x}]}));
        let mut entry = serde_json::json!({"name": name});
        if i > 0 {
            entry["replaces"] = serde_json::json!(format!("{x}.v1.0.{}", i - 1));
        }
        entries.push(entry);
    }
    lines.push(
        serde_json::json!({"schema": "olm.channel", "package": pkg, "name": x, "entries": entries}),
    );
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let meta = CatalogMeta {
        name: x.into(),
        image: x.into(),
        digest: x.into(),
        ..CatalogMeta::default()
    };
    vec![view_of(meta, &text)]
}

/// No catalog text becomes markup: every page of a catalog with script in every field has no
/// element or attribute the catalog wrote.
#[test]
fn hostile_text_never_becomes_markup() {
    let cats = hostile();
    let c = &cats[0];
    let p = &c.packages[0];
    let mut pages = vec![
        respond(&cats, None, "/browse/", ""),
        respond(&cats, None, "/browse/search", "q=evil"),
        respond(
            &cats,
            None,
            &html::package_url(&c.meta.name, &p.name),
            "resolve=1&channel=x",
        ),
    ];
    for b in &p.bundles {
        pages.push(respond(
            &cats,
            None,
            &html::bundle_url(&c.meta.name, &p.name, &b.name),
            "",
        ));
    }
    for page in &pages {
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(!page.body.contains("<script>"), "{}", page.body);
        assert!(!page.body.contains("<img src=x"), "{}", page.body);
        assert!(!page.body.contains("href=\"javascript:"), "{}", page.body);
        assert!(!page.body.contains("onerror=alert(2)>"), "{}", page.body);
        // The only scripts are the browser's own file.
        assert_eq!(page.body.matches("<script").count(), 1, "{}", page.body);
    }
    // The icon's hostile media type is not shown at all.
    assert!(
        !pages[2].body.contains("data:image/svg"),
        "{}",
        pages[2].body
    );
}

fn extension(
    installed: Option<&str>,
    request: Result<olm_resolve::Request, String>,
) -> ExtensionView {
    ExtensionView {
        name: "<b>ext</b>".into(),
        namespace: "ns".into(),
        package: "infinispan".into(),
        installed: installed.map(|b| (b.to_owned(), String::new())),
        conditions: vec![ConditionView {
            type_: "Installed".into(),
            status: "True".into(),
            reason: "Succeeded".into(),
            message: "<script>".into(),
        }],
        request,
    }
}

fn request(installed: Option<(&str, &str)>) -> olm_resolve::Request {
    olm_resolve::Request {
        package: "infinispan".into(),
        channels: vec!["stable".into()],
        installed: installed.map(|(n, v)| olm_resolve::Installed {
            name: n.into(),
            version: v.into(),
            release: None,
        }),
        ..olm_resolve::Request::default()
    }
}

/// The cluster page asks the resolver what the controller would: an installed head is up to
/// date, an older bundle has an upgrade, a bad request says why.
#[test]
fn the_cluster_page_shows_upgrades() {
    let cats = community();
    let head = cats[0]
        .package("infinispan")
        .and_then(|p| p.channels.iter().find(|c| c.name == "stable"))
        .and_then(|c| c.head.clone())
        .unwrap();
    let up_to_date = extension(Some(&head), Ok(request(Some((&head, "2.5.14")))));
    assert_eq!(upgrade(&cats, &up_to_date), Upgrade::UpToDate);
    let old = "infinispan-operator.v2.4.17";
    let behind = extension(Some(old), Ok(request(Some((old, "2.4.17")))));
    let Upgrade::Available {
        bundle, catalog, ..
    } = upgrade(&cats, &behind)
    else {
        panic!("no upgrade from {old}")
    };
    assert_eq!(catalog, "community");
    assert_ne!(bundle, old);
    let broken = extension(None, Err("catalog source is required".into()));
    assert_eq!(
        upgrade(&cats, &broken),
        Upgrade::Unresolvable("catalog source is required".into())
    );
    let view = ClusterView {
        extensions: vec![up_to_date, behind, broken],
        problems: vec!["cannot list ClusterExtensions: forbidden".into()],
    };
    let page = respond(&cats, Some(&view), "/browse/cluster", "");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("up to date"), "{}", page.body);
    assert!(page.body.contains(&format!("class=\"upgrade\" href=\"/browse/catalogs/community/packages/infinispan/bundles/{bundle}\"")), "{}", page.body);
    assert!(page.body.contains("catalog source is required"));
    assert!(
        page.body
            .contains("cannot list ClusterExtensions: forbidden")
    );
    assert!(!page.body.contains("<b>ext</b>") && !page.body.contains("<script>"));
    assert_eq!(respond(&cats, None, "/browse/cluster", "").status, 404);
    assert!(
        respond(&cats, Some(&view), "/browse/", "")
            .body
            .contains("/browse/cluster")
    );
}

fn with_modes(modes: &[(&str, bool)]) -> Vec<Arc<CatalogView>> {
    let modes: Vec<serde_json::Value> = modes
        .iter()
        .map(|(t, ok)| serde_json::json!({"type": t, "supported": ok}))
        .collect();
    let text = format!(
        "{}\n{}\n{}\n",
        serde_json::json!({"schema": "olm.package", "name": "p", "defaultChannel": "c"}),
        serde_json::json!({"schema": "olm.channel", "package": "p", "name": "c", "entries": [{"name": "p.v1.0.0"}]}),
        serde_json::json!({"schema": "olm.bundle", "package": "p", "name": "p.v1.0.0", "image": "example.com/p:1",
            "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": "1.0.0"}},
                {"type": "olm.csv.metadata", "value": {"installModes": modes}}]})
    );
    catalog_c(&text)
}

/// The bundle page states the configuration as OLM v1's registry+v1 rules derive it from the
/// install modes, shows the schema, and fills `watchNamespace` into the ClusterExtension when
/// it is required.
#[test]
fn configuration_follows_the_install_modes() {
    let url = html::bundle_url("c", "p", "p.v1.0.0");
    let own = respond(&with_modes(&[("OwnNamespace", true)]), None, &url, "").body;
    assert!(
        own.contains("is required and must be the install namespace"),
        "{own}"
    );
    assert!(
        own.contains("&quot;format&quot;: &quot;ownNamespaceInstallMode&quot;"),
        "{own}"
    );
    assert!(
        own.contains("    inline:\n      watchNamespace: p\n"),
        "{own}"
    );
    let single = respond(&with_modes(&[("SingleNamespace", true)]), None, &url, "").body;
    assert!(
        single.contains("watchNamespace: p-watched\n")
            && single
                .contains("a namespace other than its own: change <code>watchNamespace</code>"),
        "{single}"
    );
    let all = respond(
        &with_modes(&[("AllNamespaces", true), ("OwnNamespace", false)]),
        None,
        &url,
        "",
    )
    .body;
    assert!(all.contains("is not accepted"), "{all}");
    assert!(!all.contains("watchNamespace: "), "{all}");
    let both = respond(
        &with_modes(&[("AllNamespaces", true), ("SingleNamespace", true)]),
        None,
        &url,
        "",
    )
    .body;
    assert!(both.contains("is optional"), "{both}");
    assert!(both.contains("id=\"config-schema\""), "{both}");
}

/// A package whose skipRanges would draw thousands of edges gets a bounded graph and says so.
#[test]
fn wide_skip_ranges_are_bounded_and_named() {
    let catalog = olm_synthetic::catalog(&olm_synthetic::Spec {
        packages: 1,
        bundles_per_package: 300,
        description_bytes: 10,
    });
    let meta = CatalogMeta {
        name: "s".into(),
        ..CatalogMeta::default()
    };
    let cats = vec![Arc::new(CatalogView::new(meta, catalog))];
    let page = respond(
        &cats,
        None,
        &html::package_url("s", "synthetic-operator-0000"),
        "",
    )
    .body;
    assert_eq!(
        page.matches("class=\"edge skiprange\"").count(),
        MAX_SKIP_RANGE_EDGES
    );
    assert!(
        page.contains(&format!(
            "are not drawn: more than {MAX_SKIP_RANGE_EDGES} in all"
        )),
        "{page}"
    );
}

/// An unmigrated bundle, whose CSV is a YAML `olm.bundle.object`, still gives the package its
/// metadata.
#[test]
fn metadata_comes_from_bundle_objects_too() {
    use base64::Engine as _;
    let csv = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: p.v1.0.0\n  annotations:\n    capabilities: Seamless Upgrades\nspec:\n  displayName: The P Operator\n  provider:\n    name: P Inc\n";
    let data = base64::engine::general_purpose::STANDARD.encode(csv);
    let text = format!(
        "{}\n{}\n{}\n",
        serde_json::json!({"schema": "olm.package", "name": "p", "defaultChannel": "c"}),
        serde_json::json!({"schema": "olm.channel", "package": "p", "name": "c", "entries": [{"name": "p.v1.0.0"}]}),
        serde_json::json!({"schema": "olm.bundle", "package": "p", "name": "p.v1.0.0", "image": "example.com/p:1",
            "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": "1.0.0"}},
                {"type": "olm.bundle.object", "value": {"data": data}}]})
    );
    let catalog = olm_catalog::load::load_bytes(text.as_bytes(), "c.json").unwrap();
    let view = CatalogView::new(CatalogMeta::default(), catalog);
    let p = view.package("p").unwrap();
    assert_eq!(p.display_name, "The P Operator");
    assert_eq!(p.provider, "P Inc");
    assert_eq!(p.capabilities, "Seamless Upgrades");
}
