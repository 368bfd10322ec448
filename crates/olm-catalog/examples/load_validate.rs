//! Loads and validates a catalog and prints throughput; used with `/usr/bin/time -v` for peak RSS.
//!
//! `load_validate PATH` (directory or YAML/JSON file; `*.jsonl` files are read as catalogd JSONL)
//! `load_validate --synthetic DIR PACKAGES BUNDLES` writes a synthetic catalog as one YAML file per
//! package under DIR and a `catalog.jsonl` beside DIR.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Instant;

use olm_catalog::load::{LoadOptions, load_jsonl_with, load_path_with};
use olm_catalog::write::{Format, write};
use olm_synthetic::{Spec, catalog};

fn size(p: &Path) -> u64 {
    if p.is_file() {
        return p.metadata().map(|m| m.len()).unwrap_or(0);
    }
    olm_catalog::load::walk(p)
        .unwrap()
        .iter()
        .map(|f| f.metadata().map(|m| m.len()).unwrap_or(0))
        .sum()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--synthetic") {
        let dir = Path::new(&args[2]);
        let packages: usize = args[3].parse().unwrap();
        let bundles: usize = args[4].parse().unwrap();
        let cat = catalog(&Spec {
            packages,
            bundles_per_package: bundles,
            description_bytes: 2048,
        });
        std::fs::create_dir_all(dir).unwrap();
        let mut jsonl =
            std::io::BufWriter::new(std::fs::File::create(dir.with_extension("jsonl")).unwrap());
        write(&cat, Format::Jsonl, &mut jsonl).unwrap();
        for pkg in cat.packages() {
            let sub = olm_catalog::Catalog {
                blobs: cat
                    .blobs
                    .iter()
                    .filter(|b| b.package() == pkg.name.as_str())
                    .cloned()
                    .collect(),
            };
            std::fs::create_dir_all(dir.join(pkg.name.as_str())).unwrap();
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(dir.join(pkg.name.as_str()).join("catalog.yaml")).unwrap(),
            );
            write(&sub, Format::Yaml, &mut f).unwrap();
        }
        return;
    }
    let path = Path::new(&args[1]);
    let bytes = size(path);
    let opts = LoadOptions {
        keep_raw: false,
        validate_only: false,
    };
    let t = Instant::now();
    let cat = if path.extension().is_some_and(|e| e == "jsonl") {
        load_jsonl_with(
            std::io::BufReader::new(std::fs::File::open(path).unwrap()),
            &path.display().to_string(),
            &opts,
        )
        .unwrap()
    } else {
        load_path_with(path, &opts).unwrap()
    };
    let loaded = t.elapsed();
    olm_catalog::validate(&cat).unwrap();
    let total = t.elapsed();
    let mb = bytes as f64 / 1e6;
    println!(
        "{}: {:.1} MB, {} blobs, {} bundles; load {:.3}s, load+validate {:.3}s = {:.1} MB/s",
        path.display(),
        mb,
        cat.blobs.len(),
        cat.bundles().count(),
        loaded.as_secs_f64(),
        total.as_secs_f64(),
        mb / total.as_secs_f64()
    );
}
