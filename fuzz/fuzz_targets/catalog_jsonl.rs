//! Any bytes as catalogd's `catalog.jsonl`: loading never panics. Lines are kept as written (they
//! are taken to be canonical, as catalogd writes them), so a catalog that loads is first written
//! as JSON and read back, which must work; that canonical catalog then survives being written as
//! JSON, YAML and JSONL and read back unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_catalog::write::{self, Format};

fuzz_target!(|data: &[u8]| {
    if let Ok(cat) = olm_catalog::load_jsonl(data, "catalog.jsonl") {
        let text = write::to_string(&cat, Format::Json);
        let canonical = olm_catalog::load_bytes(text.as_bytes(), "written").unwrap_or_else(|e| {
            panic!("JSON output of a JSONL catalog does not load: {e}\n{text}")
        });
        olm_fuzz::check_catalog(&canonical);
    }
});
