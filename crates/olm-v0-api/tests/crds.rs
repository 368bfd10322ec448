//! The committed CRDs under `config/crd/v0/` are exactly what the types generate, and what the
//! crate hands to binaries ([`olm_v0_api::manifests`]) is them. Regenerate with
//! `cargo run -p olm-v0-api --example gen-crds` or `UPDATE_CRDS=1 cargo test -p olm-v0-api --test crds`.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

fn crd_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/crd/v0")
}

#[test]
fn committed_crds_match_the_types() {
    let update = std::env::var_os("UPDATE_CRDS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for crd in olm_v0_api::crds().unwrap() {
        let path = crd_dir().join(&crd.file_name);
        let want = crd.to_yaml();
        if update {
            std::fs::create_dir_all(crd_dir()).unwrap();
            std::fs::write(&path, &want).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(have) if have == want => {}
            Ok(_) => stale.push(format!("{} differs", path.display())),
            Err(e) => stale.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(
        stale.is_empty(),
        "CRDs out of date ({}); run `UPDATE_CRDS=1 cargo test -p olm-v0-api --test crds`",
        stale.join(", ")
    );
}

#[test]
fn the_built_in_manifests_are_the_generated_crds() {
    let generated = olm_v0_api::crds().unwrap();
    assert_eq!(
        olm_v0_api::MANIFESTS.map(|(file, _)| file).to_vec(),
        generated
            .iter()
            .map(|c| c.file_name.as_str())
            .collect::<Vec<_>>()
    );
    for ((_, yaml), crd) in olm_v0_api::MANIFESTS.iter().zip(&generated) {
        let parsed: serde_json::Value = olm_goenc::yamlread::from_str(yaml).unwrap();
        assert_eq!(parsed, crd.value, "{}", crd.name);
    }
    let applied = olm_v0_api::manifests().unwrap();
    assert_eq!(
        applied
            .iter()
            .map(|c| c.metadata.name.as_deref().unwrap_or_default())
            .collect::<Vec<_>>(),
        generated
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
    );
}

#[test]
fn the_kustomization_lists_every_crd() {
    let text = std::fs::read_to_string(crd_dir().join("kustomization.yaml")).unwrap();
    let doc: serde_json::Value = olm_goenc::yamlread::from_str(&text).unwrap();
    let listed: Vec<&str> = doc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(listed, olm_v0_api::MANIFESTS.map(|(file, _)| file));
}
