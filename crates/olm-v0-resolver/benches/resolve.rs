//! Resolving a namespace against a big catalog: the cost of building variables (every
//! Subscription's candidates, their dependencies' candidates transitively, the one-per-API and
//! one-per-package invariants) and of the SAT search. The catalog is synthetic but shaped like
//! real ones: packages of one channel each, versions chained by `replaces` with a `skipRange`,
//! and one package in five requiring an API of the next package.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use divan::{Bencher, black_box};
use olm_v0::ApiKey;
use olm_v0_resolver::entry::from_registry;
use olm_v0_resolver::{Catalog, Entry, Property, RegistryBundle, SourceKey, Subscription, resolve};

fn main() {
    divan::main();
}

const VERSIONS: usize = 20;

/// `bundles` entries: `bundles / 20` packages of 20 versions.
fn catalog(bundles: usize) -> Vec<Entry> {
    let key = SourceKey::new("big", "olm");
    let packages = bundles / VERSIONS;
    let mut out = Vec::with_capacity(bundles);
    for p in 0..packages {
        let package = format!("pkg-{p}");
        for v in 0..VERSIONS {
            let version = format!("1.{v}.0");
            let mut properties = vec![
                Property::new(
                    "olm.package",
                    format!(r#"{{"packageName":"{package}","version":"{version}"}}"#),
                ),
                Property::new(
                    "olm.gvk",
                    format!(r#"{{"group":"{package}.example.com","kind":"Thing","version":"v1"}}"#),
                ),
            ];
            if p % 5 == 0 && p + 1 < packages {
                properties.push(Property::new(
                    "olm.gvk.required",
                    format!(
                        r#"{{"group":"pkg-{}.example.com","version":"v1","kind":"Thing"}}"#,
                        p + 1
                    ),
                ));
            }
            let bundle = RegistryBundle {
                csv_name: format!("{package}.v{version}"),
                package: package.clone(),
                channel: "stable".to_owned(),
                bundle_path: format!("quay.io/example/{package}:v{version}"),
                version: version.clone(),
                skip_range: format!("<1.{v}.0"),
                replaces: if v == 0 {
                    String::new()
                } else {
                    format!("{package}.v1.{}.0", v - 1)
                },
                provided_apis: vec![ApiKey::gvk(
                    &format!("{package}.example.com"),
                    "v1",
                    "Thing",
                )],
                properties,
                ..RegistryBundle::default()
            };
            out.push(from_registry(bundle, &key, "stable").unwrap());
        }
    }
    out
}

fn subscriptions(count: usize, packages: usize) -> Vec<Subscription> {
    (0..count)
        .map(|i| Subscription {
            name: format!("sub-{i}"),
            namespace: "ns".to_owned(),
            package: format!("pkg-{}", (i * 37) % packages),
            channel: "stable".to_owned(),
            catalog: SourceKey::new("big", "olm"),
            ..Subscription::default()
        })
        .collect()
}

/// One Subscription (plus its dependency) against catalogs of 1,000 to 50,000 bundles.
#[divan::bench(args = [1_000, 10_000, 50_000])]
fn one_subscription(bencher: Bencher, bundles: usize) {
    let entries = catalog(bundles);
    let subs = subscriptions(1, bundles / VERSIONS);
    bencher.bench(|| {
        let catalogs = [Catalog {
            key: SourceKey::new("big", "olm"),
            priority: 0,
            entries: Ok(&entries),
        }];
        let resolved = resolve("ns", black_box(&subs), &[], &catalogs).unwrap();
        assert_eq!(resolved.len(), 2);
        resolved
    });
}

/// Twenty Subscriptions in one namespace against 10,000 bundles.
#[divan::bench]
fn twenty_subscriptions(bencher: Bencher) {
    let entries = catalog(10_000);
    let subs = subscriptions(20, 10_000 / VERSIONS);
    bencher.bench(|| {
        let catalogs = [Catalog {
            key: SourceKey::new("big", "olm"),
            priority: 0,
            entries: Ok(&entries),
        }];
        resolve("ns", black_box(&subs), &[], &catalogs).unwrap()
    });
}
