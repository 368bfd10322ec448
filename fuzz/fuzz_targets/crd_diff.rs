//! Two CRD files (parts `~~~ old` and `~~~ new`): comparing them never panics, and a file
//! compared with itself is always a safe upgrade (nothing changed, so nothing can break).
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_bundle::crddiff::check_upgrade_texts;

fuzz_target!(|data: &[u8]| {
    let parts = olm_fuzz::split_parts(data);
    let text = |i: usize| {
        parts
            .get(i)
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let (old, new) = (text(0), text(1));
    let _ = check_upgrade_texts(&old, &new);
    for same in [&old, &new] {
        if let Ok(report) = check_upgrade_texts(same, same) {
            assert!(
                report.is_safe() && report.added.is_empty() && report.missing.is_empty(),
                "a CRD file compared with itself is not a safe upgrade: {report:?}"
            );
        }
    }
});
