//! The committed CRDs under `config/crd/` are exactly what the types generate. Regenerate with
//! `cargo run -p olm-api --example gen-crds` or `UPDATE_CRDS=1 cargo test -p olm-api --test crds`.

use std::path::PathBuf;

fn crd_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/crd")
}

#[test]
fn committed_crds_match_the_types() {
    let update = std::env::var_os("UPDATE_CRDS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for crd in olm_api::crds() {
        let path = crd_dir().join(&crd.file_name);
        let want = crd.to_yaml();
        if update {
            std::fs::create_dir_all(crd_dir()).expect("create config/crd");
            std::fs::write(&path, &want).expect("write CRD");
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
        "CRDs out of date ({}); run `UPDATE_CRDS=1 cargo test -p olm-api --test crds`",
        stale.join(", ")
    );
}

#[test]
fn committed_yaml_parses_back_to_the_generated_object() {
    for crd in olm_api::crds() {
        let parsed: serde_json::Value =
            olm_goenc::yamlread::from_str(&crd.to_yaml()).expect("CRD YAML parses");
        assert_eq!(parsed, crd.value, "{} round trip", crd.name);
    }
}
