//! Any text as an image reference and as a digest: parsing never panics; a reference that
//! parses prints as text that parses back to the same reference; a digest prints as given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_image::{Digest, ImageRef};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = ImageRef::looks_like_registry_reference(text);
    if let Ok(r) = text.parse::<ImageRef>() {
        let printed = r.to_string();
        let again: ImageRef = printed
            .parse()
            .unwrap_or_else(|e| panic!("{printed:?} (from {text:?}) does not parse: {e}"));
        assert_eq!(again, r, "{text:?} printed as {printed:?}");
        assert_eq!(again.to_string(), printed);
        let _ = (r.registry(), r.repository(), r.tag(), r.is_loopback());
        if let Some(d) = r.digest() {
            let _ = d.parse::<Digest>();
        }
        let pinned = r.with_digest(&Digest::of(data));
        let printed = pinned.to_string();
        let again: ImageRef = printed
            .parse()
            .unwrap_or_else(|e| panic!("pinned {printed:?} does not parse: {e}"));
        assert_eq!(again, pinned);
    }
    if let Ok(d) = text.parse::<Digest>() {
        assert_eq!(d.to_string(), text);
        assert_eq!(d.hex().len(), 64);
    }
});
