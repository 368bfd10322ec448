//! Parse and render every data bundle `N` times on one thread and print bundles per CPU-second
//! (CPU time, so a busy machine does not distort the figure).
//! `cargo run --release -p olm-bundle --example throughput -- [N]`

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use olm_bundle::{Bundle, BundleFile, CertProvider, csv::InstallModeType, render_bundle};

fn cpu_seconds() -> f64 {
    // /proc/self/stat fields 14 and 15: user and system time in clock ticks.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn load(dir: &Path) -> Vec<BundleFile> {
    let mut files = Vec::new();
    for sub in ["manifests", "metadata"] {
        for e in std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
        {
            let p = e.path();
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            files.push(BundleFile {
                path: format!("{sub}/{name}"),
                contents: std::fs::read(&p).unwrap_or_default(),
            });
        }
    }
    files
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/bundles");
    let mut dirs: Vec<PathBuf> = Vec::new();
    for p in std::fs::read_dir(&root).unwrap().flatten() {
        for v in std::fs::read_dir(p.path()).unwrap().flatten() {
            dirs.push(v.path());
        }
    }
    dirs.sort();
    let all: Vec<Vec<BundleFile>> = dirs.iter().map(|d| load(d)).collect();
    let bytes: usize = all.iter().flatten().map(|f| f.contents.len()).sum();
    let cfg_for = |b: &Bundle| {
        if b.csv.supports(&InstallModeType::AllNamespaces) {
            None
        } else if b.csv.supports(&InstallModeType::OwnNamespace) {
            Some("{\"watchNamespace\": \"operators\"}")
        } else {
            Some("{\"watchNamespace\": \"watched\"}")
        }
    };
    // Whole passes are timed: the CPU clock ticks at 10 ms.
    let t0 = cpu_seconds();
    let mut parsed = Vec::new();
    for i in 0..n {
        for files in &all {
            let b = Bundle::from_files(files.clone());
            if i == 0 {
                parsed.extend(b.ok());
            }
        }
    }
    let parse_s = cpu_seconds() - t0;
    let t1 = cpu_seconds();
    for _ in 0..n {
        for b in &parsed {
            let _ = render_bundle(b, "operators", cfg_for(b), Some(CertProvider::CertManager));
        }
    }
    let render_s = cpu_seconds() - t1;
    let count = n * all.len();
    let total = parse_s + render_s;
    println!(
        "{count} bundles ({} MB per pass) in {total:.2} CPU-s: {:.0} bundles/s per core (parse {:.0}/s, render {:.0}/s), {:.0} MB/s",
        bytes / 1_000_000,
        count as f64 / total,
        count as f64 / parse_s,
        count as f64 / render_s,
        (bytes * n) as f64 / 1e6 / total
    );
}
