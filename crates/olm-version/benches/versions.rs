//! Throughput of the hot paths: resolution parses a ClusterExtension's range once and checks it
//! against every bundle of a package; catalog validation parses every `olm.skipRange` and checks
//! it against every bundle of a channel.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use divan::{Bencher, black_box};
use olm_version::{VersionRelease, blang, is_valid_version_range, masterminds};

fn main() {
    divan::main();
}

const CONSTRAINTS: &[&str] = &[
    ">=1.2.3, <2.0.0 || >3.0.0",
    "^0 || ^3 || ^5",
    "~1.2.x",
    "1.2 - 1.4.5",
    "!=1.2.3-alpha",
];
const RANGES: &[&str] = &[
    ">=4.1.0 <4.5.0",
    ">=1.0.0 <2.0.0 || >=3.0.0",
    "1.2.x",
    "<=1.2.x >=1.0.0-0",
];

fn versions(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            format!(
                "{}.{}.{}{}",
                i % 7,
                (i / 7) % 11,
                i % 13,
                if i % 5 == 0 { "-rc.1" } else { "" }
            )
        })
        .collect()
}

#[divan::bench]
fn masterminds_parse_constraint(b: Bencher) {
    b.counter(divan::counter::ItemsCount::new(CONSTRAINTS.len()))
        .bench(|| {
            for c in CONSTRAINTS {
                black_box(masterminds::Constraints::parse(black_box(c)).ok());
            }
        });
}

#[divan::bench]
fn masterminds_parse_version(b: Bencher) {
    let vs = versions(1000);
    b.counter(divan::counter::ItemsCount::new(vs.len()))
        .bench(|| {
            for v in &vs {
                black_box(masterminds::Version::parse(black_box(v)).ok());
            }
        });
}

#[divan::bench]
fn masterminds_check(b: Bencher) {
    let cs: Vec<_> = CONSTRAINTS
        .iter()
        .map(|c| masterminds::Constraints::parse(c).unwrap())
        .collect();
    let vs: Vec<_> = versions(1000)
        .iter()
        .map(|v| masterminds::Version::parse(v).unwrap())
        .collect();
    b.counter(divan::counter::ItemsCount::new(cs.len() * vs.len()))
        .bench(|| {
            for c in &cs {
                for v in &vs {
                    black_box(c.matches(black_box(v)));
                }
            }
        });
}

#[divan::bench]
fn blang_parse_range_and_check(b: Bencher) {
    let vs: Vec<_> = versions(1000)
        .iter()
        .map(|v| blang::Version::parse(v).unwrap())
        .collect();
    b.counter(divan::counter::ItemsCount::new(RANGES.len() * vs.len()))
        .bench(|| {
            for r in RANGES {
                let r = blang::Range::parse(black_box(r)).unwrap();
                for v in &vs {
                    black_box(r.matches(black_box(v)));
                }
            }
        });
}

#[divan::bench]
fn blang_parse_range(b: Bencher) {
    b.counter(divan::counter::ItemsCount::new(RANGES.len()))
        .bench(|| {
            for r in RANGES {
                black_box(blang::Range::parse(black_box(r)).ok());
            }
        });
}

#[divan::bench]
fn version_release_parse_and_sort(b: Bencher) {
    let vs: Vec<String> = versions(1000)
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{v}+{}", i % 4))
        .collect();
    b.counter(divan::counter::ItemsCount::new(vs.len()))
        .bench(|| {
            let mut parsed: Vec<_> = vs
                .iter()
                .filter_map(|v| VersionRelease::parse_legacy(v).ok())
                .collect();
            parsed.sort();
            black_box(parsed)
        });
}

#[divan::bench]
fn crd_admission(b: Bencher) {
    b.counter(divan::counter::ItemsCount::new(CONSTRAINTS.len()))
        .bench(|| {
            for c in CONSTRAINTS {
                black_box(is_valid_version_range(black_box(c)));
            }
        });
}
