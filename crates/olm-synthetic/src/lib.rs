//! A generator of realistic synthetic catalogs for benchmarks: N packages × M bundles, one replaces
//! chain per channel with occasional skips and skipRanges, `olm.gvk`, `olm.package` and an
//! `olm.csv.metadata` of a few kilobytes per bundle, like real community catalogs.
//!
//! Not for: product code (only benchmarks and examples depend on it, as a dev-dependency), or for
//! tests of behaviour, which use the real catalogs under `../shared/data`.

use olm_catalog::model::*;
use olm_catalog::property::{
    Gvk, PackageProperty, Property, TYPE_CSV_METADATA, TYPE_GVK, TYPE_PACKAGE,
};

/// Shape of a synthetic catalog.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Number of packages.
    pub packages: usize,
    /// Bundles in each package's one channel.
    pub bundles_per_package: usize,
    /// Bytes of description text per bundle (drives blob size).
    pub description_bytes: usize,
}

/// Builds a valid catalog of the given shape.
pub fn catalog(spec: &Spec) -> Catalog {
    let mut blobs = Vec::new();
    let para = "This operator manages the lifecycle of its workloads, including upgrades, backups and \
                monitoring integration.\n";
    for p in 0..spec.packages {
        let pkg = format!("synthetic-operator-{p:04}");
        blobs.push(Blob::from(Package {
            name: PackageName::new(pkg.clone()),
            default_channel: ChannelName::new("stable"),
            description: format!("Synthetic package {p}"),
            ..Default::default()
        }));
        let mut entries = Vec::new();
        let mut prev: Option<String> = None;
        for m in 0..spec.bundles_per_package {
            let version = format!("{}.{}.{}", m / 100, (m / 10) % 10, m % 10);
            let name = format!("{pkg}.v{version}");
            entries.push(ChannelEntry {
                name: BundleName::new(name.clone()),
                replaces: prev.clone().unwrap_or_default(),
                skips: Vec::new(),
                skip_range: if m % 10 == 9 {
                    format!(">=0.0.0 <{version}")
                } else {
                    String::new()
                },
            });
            let mut description = String::with_capacity(spec.description_bytes);
            while description.len() < spec.description_bytes {
                description.push_str(para);
            }
            let csv = serde_json::json!({
                "annotations": {"alm-examples": format!("[{{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget{p}\",\"metadata\":{{\"name\":\"w\"}}}}]"), "capabilities": "Basic Install", "containerImage": format!("quay.io/synthetic/{pkg}:{version}")},
                "apiServiceDefinitions": {},
                "crdDescriptions": {"owned": [{"kind": format!("Widget{p}"), "name": format!("widgets{p}.example.com"), "version": "v1", "displayName": "Widget", "description": "A widget"}]},
                "description": description,
                "displayName": format!("Synthetic Operator {p}"),
                "installModes": [{"supported": true, "type": "OwnNamespace"}, {"supported": true, "type": "SingleNamespace"}, {"supported": false, "type": "MultiNamespace"}, {"supported": true, "type": "AllNamespaces"}],
                "keywords": ["synthetic", "benchmark"],
                "maintainers": [{"email": "dev@example.com", "name": "Dev"}],
                "maturity": "stable",
                "provider": {"name": "Example"},
            });
            blobs.push(Blob::from(Bundle {
                name: BundleName::new(name.clone()),
                package: PackageName::new(pkg.clone()),
                image: format!("quay.io/synthetic/{pkg}-bundle:v{version}"),
                properties: vec![
                    Property::new(
                        TYPE_GVK,
                        &Gvk {
                            group: "example.com".into(),
                            kind: format!("Widget{p}"),
                            version: "v1".into(),
                        },
                    ),
                    Property::new(
                        TYPE_GVK,
                        &Gvk {
                            group: "example.com".into(),
                            kind: format!("Gadget{p}"),
                            version: "v1alpha1".into(),
                        },
                    ),
                    Property::new(
                        TYPE_PACKAGE,
                        &PackageProperty {
                            package_name: pkg.clone(),
                            version,
                            release: String::new(),
                        },
                    ),
                    Property::new(TYPE_CSV_METADATA, &csv),
                ],
                related_images: vec![RelatedImage {
                    name: String::new(),
                    image: format!("quay.io/synthetic/{pkg}:v{m}"),
                }],
            }));
            prev = Some(name);
        }
        blobs.push(Blob::from(Channel {
            name: ChannelName::new("stable"),
            package: PackageName::new(pkg.clone()),
            entries: Some(entries),
            ..Default::default()
        }));
    }
    Catalog { blobs }
}

/// `blobs` JSON lines of schema `example.noise`, each carrying `bytes` of pseudo-random hex
/// digits (the same for every call). Synthetic descriptions repeat and shrink 50-fold under gzip;
/// about half of this noise survives it, so compressed answers stay larger than socket buffers.
pub fn noise_lines(blobs: usize, bytes: usize) -> String {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut out = String::with_capacity(blobs * (bytes + 80));
    for i in 0..blobs {
        let noise: String = (0..bytes)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                char::from(b"0123456789abcdef"[(seed % 16) as usize])
            })
            .collect();
        out.push_str(&format!(
            "{{\"schema\":\"example.noise\",\"package\":\"p\",\"name\":\"n{i}\",\"data\":\"{noise}\"}}\n"
        ));
    }
    out
}
