//! A registry+v1 bundle's files, given as parts (`~~~ manifests/csv.yaml` and the file's text,
//! then the next part): reading the bundle never panics and does not depend on the order the
//! files come in; a bundle that reads can be checked, rendered and turned into a catalog blob
//! without a panic, and that blob loads as a catalog.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_bundle::properties::{ObjectsMode, to_olm_bundle};
use olm_bundle::{Bundle, BundleFile};

fuzz_target!(|data: &[u8]| {
    let mut files: Vec<BundleFile> = Vec::new();
    for (path, contents) in olm_fuzz::split_parts(data) {
        // An unpacked image has one file per path.
        if files.iter().any(|f| f.path == path) {
            continue;
        }
        files.push(BundleFile { path, contents });
    }
    let reversed: Vec<BundleFile> = files.iter().rev().cloned().collect();
    let read = Bundle::from_files(files);
    let read_reversed = Bundle::from_files(reversed);
    assert_eq!(
        format!("{read:?}"),
        format!("{read_reversed:?}"),
        "the bundle read depends on the order of its files"
    );
    let Ok(bundle) = read else { return };
    let _ = olm_bundle::validate_for_render(&bundle);
    let _ = olm_bundle::render_bundle(&bundle, "fuzz-ns", None, None);
    for mode in [ObjectsMode::CsvMetadata, ObjectsMode::BundleObjects] {
        if let Ok(blob) = to_olm_bundle(&bundle, "example.com/fuzz/bundle:v1", mode) {
            let text = serde_json::to_string(&blob).expect("a JSON value serialises");
            if let Err(e) = olm_catalog::load_bytes(text.as_bytes(), "bundle.json") {
                panic!("the olm.bundle blob of a readable bundle does not load: {e}\n{text}");
            }
        }
    }
});
