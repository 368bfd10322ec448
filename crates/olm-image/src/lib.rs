//! OCI images: build, push, pull and safely unpack catalog and bundle images.
