//! A version range on the first line and a version on the second, in both of OLM's semver
//! dialects: parsing and matching never panic; a parsed version prints as text that parses
//! back to an equal version printed the same way; a parsed Masterminds constraint prints as
//! text that parses back to a constraint printed the same way and matching the same versions;
//! a ClusterExtension range (`VersionRange`) keeps its text. Printing fills in missing parts
//! (`1-a` prints as `1.0.0-a`), so a text just under Masterminds' length limits may print as one
//! over them: only then is the printed text allowed to be refused, and only as too long.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_resolve::VersionRange;
use olm_version::{blang, masterminds};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (range, version) = text.split_once('\n').unwrap_or((text, ""));

    // Masterminds: ClusterExtension ranges.
    let mv = masterminds::Version::parse(version).ok();
    if let Some(v) = &mv {
        let printed = v.to_string();
        match masterminds::Version::parse(&printed) {
            Ok(again) => {
                assert_eq!(again.cmp(v), std::cmp::Ordering::Equal, "{printed:?}");
                assert_eq!(again.to_string(), printed);
            }
            Err(masterminds::VersionError::TooLong)
                if printed.len() > masterminds::MAX_VERSION_LEN => {}
            Err(e) => panic!("{printed:?} (from {version:?}) does not parse: {e}"),
        }
        let _ = masterminds::Version::parse_strict(version);
    }
    if let Ok(c) = masterminds::Constraints::parse(range) {
        let printed = c.to_string();
        match masterminds::Constraints::parse(&printed) {
            Ok(again) => {
                assert_eq!(again.to_string(), printed, "from {range:?}");
                if let Some(v) = &mv {
                    assert_eq!(
                        c.matches(v),
                        again.matches(v),
                        "{range:?} and {printed:?} on {v}"
                    );
                }
            }
            Err(masterminds::ConstraintError::TooLong)
                if printed.len() > masterminds::MAX_CONSTRAINT_LEN => {}
            Err(e) => panic!("{printed:?} (from {range:?}) does not parse: {e}"),
        }
        if let Some(v) = &mv {
            let _ = c.validate(v);
        }
    }
    if let Ok(r) = VersionRange::parse(range) {
        assert_eq!(r.as_str(), range);
        assert_eq!(r.to_string(), range);
        if let Some(v) = &mv {
            let _ = r.matches(v);
        }
    }
    let _ = olm_version::is_valid_version_range(range);

    // blang: bundle versions and olm.skipRange.
    let bv = blang::Version::parse(version).ok();
    if let Some(v) = &bv {
        let printed = v.to_string();
        let again = blang::Version::parse(&printed)
            .unwrap_or_else(|e| panic!("{printed:?} (from {version:?}) does not parse: {e}"));
        assert_eq!(again.cmp(v), std::cmp::Ordering::Equal, "{printed:?}");
        assert_eq!(again.to_string(), printed);
        let _ = v.finalized();
    }
    let _ = blang::Version::parse_tolerant(version);
    if let (Ok(r), Some(v)) = (blang::Range::parse(range), &bv) {
        let _ = r.matches(v);
    }
});
