//! Scenario tests on the real catalogs in `shared/data/catalogs`: every package resolves with no
//! constraints and with each of its channels, and each result is the highest non-deprecated
//! version the rules allow — checked against an independent computation over the catalog model.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;

use olm_catalog::model::Catalog;
use olm_catalog::property::TypedProperty;
use olm_resolve::{
    Availability, CatalogInput, Content, ContentIndex, Request, ResolveError, resolve,
};
use olm_version::VersionRelease;

fn load() -> Catalog {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/catalogs/community-v4.21");
    olm_catalog::load_path(&dir).expect("community catalog loads")
}

fn version_of(cat: &Catalog, bundle: &str) -> VersionRelease {
    let b = cat
        .bundles()
        .find(|b| b.name.as_str() == bundle)
        .expect("bundle exists");
    b.properties
        .iter()
        .find_map(|p| match p.parse() {
            Ok(TypedProperty::Package(pkg)) => VersionRelease::parse_legacy(&pkg.version).ok(),
            _ => None,
        })
        .expect("bundle has a version")
}

#[test]
fn every_package_and_channel_resolves_to_its_highest_version() {
    let cat = load();
    let index = ContentIndex::new(&cat);
    let input = [CatalogInput {
        name: "community".into(),
        labels: BTreeMap::new(),
        priority: 0,
        availability: Availability::Available,
        content: Content::Served(&index),
    }];
    let deprecated: Vec<String> = cat
        .deprecations()
        .flat_map(|d| {
            d.entries
                .iter()
                .filter(|e| e.reference.schema == "olm.bundle")
                .map(|e| e.reference.name.clone())
        })
        .collect();
    let (mut resolved, mut heads, mut refused) = (0, 0, 0);
    for pkg in cat.packages() {
        let channels: Vec<_> = cat.channels().filter(|c| c.package == pkg.name).collect();
        let mut requests = vec![(
            Request {
                package: pkg.name.clone(),
                ..Default::default()
            },
            None,
        )];
        for c in &channels {
            let req = Request {
                package: pkg.name.clone(),
                channels: vec![c.name.clone()],
                ..Default::default()
            };
            requests.push((req, Some(*c)));
        }
        for (req, channel) in requests {
            let outcome = resolve(&input, &req, None);
            // Independent check: the highest version among the allowed, preferring non-deprecated.
            let allowed: Vec<String> = match channel {
                Some(c) => c.entries().iter().map(|e| e.name.to_string()).collect(),
                None => cat
                    .bundles()
                    .filter(|b| b.package == pkg.name)
                    .map(|b| b.name.to_string())
                    .collect(),
            };
            let best = allowed
                .iter()
                .filter(|n| cat.bundles().any(|b| b.name.as_str() == n.as_str()))
                .max_by(|a, b| {
                    let (da, db) = (deprecated.contains(a), deprecated.contains(b));
                    db.cmp(&da)
                        .then_with(|| version_of(&cat, a).cmp(&version_of(&cat, b)))
                        .then_with(|| b.cmp(a))
                })
                .expect("channel has bundles");
            let res = match outcome {
                Ok(res) => res,
                // OLM v1 refuses bundles that declare dependencies: the best bundle must be one.
                Err(f) => {
                    assert!(
                        matches!(f.error, ResolveError::Dependency { ref bundle, .. } if bundle.as_str() == best),
                        "{}: {}",
                        pkg.name,
                        f.error
                    );
                    refused += 1;
                    continue;
                }
            };
            resolved += 1;
            assert_eq!(
                res.bundle.as_str(),
                best,
                "package {} channel {:?}",
                pkg.name,
                channel.map(|c| c.name.to_string())
            );
            if let Some(c) = channel {
                let head = c
                    .entries()
                    .iter()
                    .find(|e| {
                        !c.entries().iter().any(|o| {
                            o.replaces == e.name.as_str()
                                || o.skips.iter().any(|s| s == e.name.as_str())
                        })
                    })
                    .map(|e| e.name.to_string());
                if head.as_deref() == Some(res.bundle.as_str()) {
                    heads += 1;
                }
            }
        }
    }
    eprintln!("resolved {resolved}, refused for dependencies {refused}, channel head {heads}");
    assert!(resolved > 60, "resolved {resolved} requests");
    assert!(refused < resolved / 4);
    assert!(heads > 0);
}
