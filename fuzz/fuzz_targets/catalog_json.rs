//! Any bytes read as a JSON catalog stream (a file whose first non-blank byte is `{`): loading
//! never panics, and a catalog that loads survives being written as JSON, YAML and JSONL and
//! read back unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Only the JSON stream reader: anything else is the YAML target's.
    let peek = &data[..data.len().min(4096)];
    if peek.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return;
    }
    if let Ok(cat) = olm_catalog::load_bytes(data, "fuzz.json") {
        olm_fuzz::check_catalog(&cat);
    }
});
