//! Any bytes: loading (YAML or JSON stream), validating and writing never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(cat) = olm_catalog::load_bytes(data, "fuzz") {
        let _ = olm_catalog::validate(&cat);
        for f in [olm_catalog::write::Format::Json, olm_catalog::write::Format::Yaml, olm_catalog::write::Format::Jsonl] {
            let text = olm_catalog::write::to_string(&cat, f);
            // What we write, we can read back.
            if f != olm_catalog::write::Format::Jsonl {
                olm_catalog::load_bytes(text.as_bytes(), "rendered").expect("rendered output loads");
            }
        }
    }
});
