//! Writes the CRDs of the OLM v0 API to `config/crd/v0/` (or the directory given as the only
//! argument). `tests/crds.rs` fails until the committed files equal this output.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/crd/v0"));
    std::fs::create_dir_all(&dir)?;
    for crd in olm_v0_api::crds()? {
        let path = dir.join(&crd.file_name);
        std::fs::write(&path, crd.to_yaml())?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
