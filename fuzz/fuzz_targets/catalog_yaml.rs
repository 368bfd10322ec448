//! Any bytes read as a YAML catalog stream (what `olm_catalog::load_bytes` does with a file that
//! does not start with `{`): loading never panics, and a catalog that loads survives being
//! written as JSON, YAML and JSONL and read back unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Inputs the loader would read as JSON belong to `catalog_json`.
    let peek = &data[..data.len().min(4096)];
    if peek.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return;
    }
    if let Ok(cat) = olm_catalog::load_bytes(data, "fuzz.yaml") {
        olm_fuzz::check_catalog(&cat);
    }
});
