//! Resolution latency over a synthetic set of catalogs holding 50,000 bundles: the index is built
//! once (as the controller does when catalog content changes), then each ClusterExtension request
//! is resolved against it. Prints p50/p99 per resolution, then divan's timings.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Instant;

use divan::{Bencher, black_box};
use olm_resolve::{
    Availability, CatalogInput, Content, ContentIndex, Installed, Request, VersionRange, resolve,
};

const PACKAGES: usize = 500;
const BUNDLES: usize = 50;

/// One catalog as JSONL: `PACKAGES` packages × `BUNDLES` bundles, channels `stable` (replaces
/// chain), `fast` (skipRange) and `candidate-vX`, realistic property sets.
fn synthetic(offset: usize) -> String {
    let mut s = String::new();
    for p in 0..PACKAGES {
        let pkg = format!("pkg-{}", p + offset);
        let _ = writeln!(
            s,
            r#"{{"schema":"olm.package","name":"{pkg}","defaultChannel":"stable"}}"#
        );
        let names: Vec<String> = (0..BUNDLES)
            .map(|b| format!("{pkg}.v{}.{}.{}", b / 20, (b / 5) % 4, b % 5))
            .collect();
        let mut entries = Vec::new();
        for (i, n) in names.iter().enumerate() {
            if i == 0 {
                entries.push(format!(r#"{{"name":"{n}"}}"#));
            } else {
                entries.push(format!(r#"{{"name":"{n}","replaces":"{}"}}"#, names[i - 1]));
            }
        }
        let _ = writeln!(
            s,
            r#"{{"schema":"olm.channel","package":"{pkg}","name":"stable","entries":[{}]}}"#,
            entries.join(",")
        );
        let last = &names[BUNDLES - 1];
        let _ = writeln!(
            s,
            r#"{{"schema":"olm.channel","package":"{pkg}","name":"fast","entries":[{{"name":"{last}","skipRange":">=0.0.0 <{}.0.0"}}]}}"#,
            BUNDLES / 20
        );
        for (b, n) in names.iter().enumerate() {
            let v = &n[pkg.len() + 2..];
            let _ = writeln!(
                s,
                r#"{{"schema":"olm.bundle","package":"{pkg}","name":"{n}","image":"quay.io/example/{pkg}@sha256:{b:064x}","properties":[{{"type":"olm.package","value":{{"packageName":"{pkg}","version":"{v}"}}}},{{"type":"olm.gvk","value":{{"group":"example.com","kind":"Thing{b}","version":"v1"}}}},{{"type":"olm.csv.metadata","value":{{"displayName":"{pkg}","provider":{{"name":"Example"}},"keywords":["a","b"]}}}}]}}"#
            );
        }
    }
    s
}

struct Fixture {
    indexes: Vec<ContentIndex>,
}

impl Fixture {
    fn new() -> Fixture {
        // Two catalogs of 25,000 bundles each, overlapping in no package.
        let indexes = [0, PACKAGES]
            .iter()
            .map(|off| {
                let text = synthetic(*off);
                let cat = olm_catalog::load_jsonl(text.as_bytes(), "synthetic.jsonl")
                    .expect("synthetic catalog loads");
                ContentIndex::new(&cat)
            })
            .collect();
        Fixture { indexes }
    }

    fn inputs(&self) -> Vec<CatalogInput<'_>> {
        self.indexes
            .iter()
            .enumerate()
            .map(|(i, idx)| CatalogInput {
                name: format!("catalog-{i}"),
                labels: BTreeMap::new(),
                priority: i as i32,
                availability: Availability::Available,
                content: Content::Served(idx),
            })
            .collect()
    }
}

fn requests() -> Vec<Request> {
    (0..2 * PACKAGES)
        .step_by(7)
        .map(|p| {
            let package = format!("pkg-{p}");
            let installed = (p % 2 == 0).then(|| Installed {
                name: format!("{package}.v1.0.0").into(),
                version: "1.0.0".into(),
                release: None,
            });
            Request {
                version: (p % 3 == 0).then(|| {
                    VersionRange::parse(">=1.0.0, <2.0.0").expect("the benchmark's range parses")
                }),
                channels: if p % 5 == 0 {
                    vec!["stable".into()]
                } else {
                    vec![]
                },
                package: package.into(),
                installed,
                ..Default::default()
            }
        })
        .collect()
}

fn main() {
    let fixture = Fixture::new();
    let inputs = fixture.inputs();
    let reqs = requests();
    let mut samples = Vec::with_capacity(reqs.len() * 20);
    for _ in 0..20 {
        for r in &reqs {
            let start = Instant::now();
            black_box(resolve(&inputs, r, None).ok());
            samples.push(start.elapsed());
        }
    }
    samples.sort();
    let pct = |p: f64| samples[((samples.len() as f64 - 1.0) * p) as usize];
    println!(
        "resolve over {} bundles: {} samples, p50 {:?}, p99 {:?}, max {:?}",
        2 * PACKAGES * BUNDLES,
        samples.len(),
        pct(0.50),
        pct(0.99),
        samples[samples.len() - 1]
    );
    divan::main();
}

#[divan::bench(sample_count = 20)]
fn build_index(b: Bencher) {
    let text = synthetic(0);
    let cat = olm_catalog::load_jsonl(text.as_bytes(), "synthetic.jsonl").expect("loads");
    b.bench(|| ContentIndex::new(black_box(&cat)));
}

#[divan::bench]
fn resolve_one(b: Bencher) {
    let fixture = Fixture::new();
    let inputs = fixture.inputs();
    let reqs = requests();
    let mut i = 0;
    b.bench_local(|| {
        i = (i + 1) % reqs.len();
        black_box(resolve(&inputs, &reqs[i], None).ok())
    });
}
