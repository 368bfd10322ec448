//! Any bytes as catalogd JSONL: loading never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(cat) = olm_catalog::load_jsonl(data, "fuzz") {
        let _ = olm_catalog::validate(&cat);
    }
});
