//! The FBC schemas as Rust types: `olm.package`, `olm.channel`, `olm.bundle`, `olm.deprecations`, and
//! opaque blobs of any other schema.
//!
//! Field names are matched case-insensitively when decoding and unknown fields are ignored, as Go's
//! `encoding/json` does for operator-registry's structs. Every typed blob of a [`Blob`] is held in a
//! [`Kept`], which may keep the canonical JSON it was decoded from (what catalogd serves byte for byte)
//! and drops it on the first mutable access, so writers never serve JSON an edit has made stale.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::property::Property;

/// A name newtype. The text is reachable only as `&str` (or by giving the name up), so a name
/// of one kind is never passed where another kind is expected.
macro_rules! name_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The name with this text (names are not checked: catalogs carry what they carry).
            pub fn new(s: impl Into<String>) -> Self {
                Self(s.into())
            }
            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
            /// Whether the name is empty (an absent field).
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
            /// The text, giving the name up.
            pub fn into_string(self) -> String {
                self.0
            }
        }
        impl From<$name> for String {
            fn from(n: $name) -> String {
                n.0
            }
        }
        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }
        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }
        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }
        impl PartialEq<str> for $name {
            fn eq(&self, o: &str) -> bool {
                self.0 == o
            }
        }
        impl PartialEq<&str> for $name {
            fn eq(&self, o: &&str) -> bool {
                self.0 == *o
            }
        }
    };
}

name_type!(
    /// A package name (`olm.package` `name`, `package` of other blobs).
    PackageName
);
name_type!(
    /// A channel name.
    ChannelName
);
name_type!(
    /// A bundle name (for registry+v1 bundles the CSV `metadata.name`).
    BundleName
);

/// The `schema` of a package blob.
pub const SCHEMA_PACKAGE: &str = "olm.package";
/// The `schema` of a channel blob.
pub const SCHEMA_CHANNEL: &str = "olm.channel";
/// The `schema` of a bundle blob.
pub const SCHEMA_BUNDLE: &str = "olm.bundle";
/// The `schema` of a package's deprecations blob.
pub const SCHEMA_DEPRECATIONS: &str = "olm.deprecations";

/// A loaded catalog: every blob in a deterministic order (files in lexical path order, documents in
/// file order). Writers regroup by package as `opm` does; the JSONL writer keeps this order, which is the
/// order catalogd walks a catalog in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    /// Every document of the catalog, in load order.
    pub blobs: Vec<Blob>,
}

/// One FBC document.
#[derive(Clone, Debug, PartialEq)]
pub enum Blob {
    /// An `olm.package` document.
    Package(Kept<Package>),
    /// An `olm.channel` document.
    Channel(Kept<Channel>),
    /// An `olm.bundle` document.
    Bundle(Kept<Bundle>),
    /// An `olm.deprecations` document.
    Deprecations(Kept<Deprecation>),
    /// A document of any other schema, carried through unchanged.
    Other(Meta),
}

/// A typed blob and, while it is unchanged, the canonical JSON it was decoded from.
///
/// Reading goes through `Deref`. Every way to change the value (`DerefMut`, which field assignment
/// and `&mut self` methods use implicitly) first drops the kept JSON, so an edit can never be
/// forgotten by the writers: they fall back to the typed fields. Read before writing, as
/// [`Catalog::bundles_mut`] callers do, to keep the JSON of blobs that turn out not to change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Kept<T> {
    value: T,
    raw: Option<RawJson>,
}

impl<T> Kept<T> {
    /// A value built in memory, with no JSON kept.
    pub fn new(value: T) -> Self {
        Kept { value, raw: None }
    }
    /// A value with the canonical JSON it was decoded from; only the loader knows the two agree.
    pub(crate) fn decoded(value: T, raw: Option<RawJson>) -> Self {
        Kept { value, raw }
    }
    /// The canonical JSON the value was decoded from, if kept and not changed since.
    pub fn raw(&self) -> Option<&RawValue> {
        self.raw.as_deref()
    }
    /// Drops the kept JSON (to save memory, or to compare catalogs by their typed fields).
    pub fn forget_raw(&mut self) {
        self.raw = None;
    }
    /// The value, giving up the kept JSON.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> std::ops::Deref for Kept<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> std::ops::DerefMut for Kept<T> {
    /// Hands out the value for change, so the kept JSON no longer describes it.
    fn deref_mut(&mut self) -> &mut T {
        self.raw = None;
        &mut self.value
    }
}

impl<T> From<T> for Kept<T> {
    fn from(value: T) -> Self {
        Kept::new(value)
    }
}

impl From<Package> for Blob {
    fn from(p: Package) -> Self {
        Blob::Package(Kept::new(p))
    }
}

impl From<Channel> for Blob {
    fn from(c: Channel) -> Self {
        Blob::Channel(Kept::new(c))
    }
}

impl From<Bundle> for Blob {
    fn from(b: Bundle) -> Self {
        Blob::Bundle(Kept::new(b))
    }
}

impl From<Deprecation> for Blob {
    fn from(d: Deprecation) -> Self {
        Blob::Deprecations(Kept::new(d))
    }
}

impl From<Meta> for Blob {
    fn from(m: Meta) -> Self {
        Blob::Other(m)
    }
}

impl Blob {
    /// The blob's `schema` field.
    pub fn schema(&self) -> &str {
        match self {
            Blob::Package(_) => SCHEMA_PACKAGE,
            Blob::Channel(_) => SCHEMA_CHANNEL,
            Blob::Bundle(_) => SCHEMA_BUNDLE,
            Blob::Deprecations(_) => SCHEMA_DEPRECATIONS,
            Blob::Other(m) => &m.schema,
        }
    }
    /// The package a blob belongs to (`name` for `olm.package`).
    pub fn package(&self) -> &str {
        match self {
            Blob::Package(p) => &p.name,
            Blob::Channel(c) => &c.package,
            Blob::Bundle(b) => &b.package,
            Blob::Deprecations(d) => &d.package,
            Blob::Other(m) => &m.package,
        }
    }
    /// Drops what validation does not read, for a catalog loaded only to be validated: a
    /// package's description and icon, the value of each `olm.csv.metadata` and
    /// `olm.bundle.object` property that decodes (validation only asks that it does, and whether
    /// a bundle has objects), and the text of blobs of other schemas. These are most of a
    /// catalog's bytes. A property that fails to decode is kept, so that validation reports it.
    pub fn drop_content(&mut self) {
        use crate::property::{TYPE_BUNDLE_OBJECT, TYPE_CSV_METADATA};
        match self {
            Blob::Package(p) => {
                p.description = String::new();
                p.icon = None;
                p.forget_raw();
            }
            Blob::Bundle(b) => {
                for p in &mut b.properties {
                    if (p.type_ == TYPE_CSV_METADATA || p.type_ == TYPE_BUNDLE_OBJECT)
                        && p.parse().is_ok()
                    {
                        // An empty object decodes as both types.
                        p.value = crate::property::empty_object_raw();
                    }
                }
                b.forget_raw();
            }
            Blob::Channel(c) => c.forget_raw(),
            Blob::Deprecations(d) => d.forget_raw(),
            Blob::Other(m) => m.blob = crate::property::empty_object_raw(),
        }
    }

    /// The canonical JSON the blob was decoded from, if kept.
    pub fn raw(&self) -> Option<&RawValue> {
        match self {
            Blob::Package(p) => p.raw(),
            Blob::Channel(c) => c.raw(),
            Blob::Bundle(b) => b.raw(),
            Blob::Deprecations(d) => d.raw(),
            Blob::Other(m) => Some(&m.blob),
        }
    }
}

impl Catalog {
    /// The `olm.package` blobs, in load order.
    pub fn packages(&self) -> impl Iterator<Item = &Package> {
        self.blobs.iter().filter_map(|b| match b {
            Blob::Package(p) => Some(&**p),
            _ => None,
        })
    }
    /// The `olm.channel` blobs, in load order.
    pub fn channels(&self) -> impl Iterator<Item = &Channel> {
        self.blobs.iter().filter_map(|b| match b {
            Blob::Channel(c) => Some(&**c),
            _ => None,
        })
    }
    /// The `olm.bundle` blobs, in load order.
    pub fn bundles(&self) -> impl Iterator<Item = &Bundle> {
        self.blobs.iter().filter_map(|b| match b {
            Blob::Bundle(x) => Some(&**x),
            _ => None,
        })
    }
    /// The bundles, for editing: a bundle's kept JSON is dropped when it is changed, not when it is
    /// only looked at.
    pub fn bundles_mut(&mut self) -> impl Iterator<Item = &mut Kept<Bundle>> {
        self.blobs.iter_mut().filter_map(|b| match b {
            Blob::Bundle(x) => Some(x),
            _ => None,
        })
    }
    /// The `olm.deprecations` blobs, in load order.
    pub fn deprecations(&self) -> impl Iterator<Item = &Deprecation> {
        self.blobs.iter().filter_map(|b| match b {
            Blob::Deprecations(x) => Some(&**x),
            _ => None,
        })
    }
    /// The blobs of schemas this crate does not interpret, in load order.
    pub fn others(&self) -> impl Iterator<Item = &Meta> {
        self.blobs.iter().filter_map(|b| match b {
            Blob::Other(x) => Some(x),
            _ => None,
        })
    }
    /// Appends the blobs of another catalog (as `opm render` concatenates its references).
    pub fn extend(&mut self, other: Catalog) {
        self.blobs.extend(other.blobs);
    }
    /// Drops the kept canonical JSON of every typed blob (to save memory, or to compare catalogs by
    /// their typed fields); edits need not call it.
    pub fn forget_raw(&mut self) {
        for b in &mut self.blobs {
            match b {
                Blob::Package(p) => p.forget_raw(),
                Blob::Channel(c) => c.forget_raw(),
                Blob::Bundle(x) => x.forget_raw(),
                Blob::Deprecations(d) => d.forget_raw(),
                Blob::Other(_) => {}
            }
        }
    }
}

/// `olm.package`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Package {
    /// The package's name, which every other blob of the package refers to.
    pub name: PackageName,
    /// `defaultChannel`: the channel installs use when none is asked for; empty when unset.
    pub default_channel: ChannelName,
    /// The icon shown by catalog browsers, if any.
    pub icon: Option<Icon>,
    /// Free text, usually Markdown.
    pub description: String,
    /// Package-level properties.
    pub properties: Vec<Property>,
}

/// A package icon; `base64data` holds the text opm writes: decoded when loaded and encoded again
/// as one padded line, whatever wrapping the file had.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Icon {
    /// The image bytes, base64 encoded.
    pub base64data: String,
    /// The image's media type (`image/svg+xml`, `image/png`, …).
    pub mediatype: String,
}

/// Bytes that `opm init --icon` refuses: their detected media type is not `image/*`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("detected invalid type {}: not an image", olm_goenc::quote(.0))]
pub struct NotAnImage(pub &'static str);

impl Icon {
    /// The icon of an image file, its media type detected as Go's `http.DetectContentType` does
    /// for the formats icons come in (PNG, JPEG, GIF, BMP, WebP, ICO), as `opm init` does.
    pub fn from_image(data: &[u8]) -> Result<Icon, NotAnImage> {
        use base64::Engine as _;
        let mediatype = detect_content_type(data);
        if !mediatype.starts_with("image/") {
            return Err(NotAnImage(mediatype));
        }
        Ok(Icon {
            base64data: base64::engine::general_purpose::STANDARD.encode(data),
            mediatype: mediatype.to_owned(),
        })
    }
}

/// The few `http.DetectContentType` signatures that matter for icons; anything else is text or
/// `application/octet-stream`, as Go answers for it.
fn detect_content_type(b: &[u8]) -> &'static str {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if b.starts_with(b"\xff\xd8\xff") {
        "image/jpeg"
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        "image/gif"
    } else if b.starts_with(b"BM") {
        "image/bmp"
    } else if b.len() >= 14 && b.starts_with(b"RIFF") && &b[8..14] == b"WEBPVP" {
        "image/webp"
    } else if b.starts_with(b"\x00\x00\x01\x00") || b.starts_with(b"\x00\x00\x02\x00") {
        "image/x-icon"
    } else if let Ok(text) = std::str::from_utf8(b) {
        if text.trim_start().starts_with("<?xml") {
            "text/xml; charset=utf-8"
        } else {
            "text/plain; charset=utf-8"
        }
    } else {
        "application/octet-stream"
    }
}

/// `olm.channel`. `entries` is `None` when the blob has no (or a `null`) `entries` field; opm writes `null`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Channel {
    /// The channel's name, unique within its package.
    pub name: ChannelName,
    /// The package the channel belongs to.
    pub package: PackageName,
    /// The channel's bundles with their upgrade edges; see the type's doc for `None`.
    pub entries: Option<Vec<ChannelEntry>>,
    /// Channel-level properties.
    pub properties: Vec<Property>,
}

impl Channel {
    /// The entries, an absent list read as empty.
    pub fn entries(&self) -> &[ChannelEntry] {
        self.entries.as_deref().unwrap_or(&[])
    }
}

/// One channel entry with its upgrade edges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChannelEntry {
    /// The bundle this entry puts in the channel.
    pub name: BundleName,
    /// The bundle this one upgrades from. Empty when absent.
    pub replaces: String,
    /// Further bundles this one upgrades from directly, skipping them.
    pub skips: Vec<String>,
    /// A blang/semver range (empty when absent).
    pub skip_range: String,
}

/// `olm.bundle`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bundle {
    /// The bundle's name, unique within its package.
    pub name: BundleName,
    /// The package the bundle belongs to.
    pub package: PackageName,
    /// The bundle image reference; empty for a bundle carried entirely in properties.
    pub image: String,
    /// The bundle's properties (`olm.package`, `olm.gvk`, …).
    pub properties: Vec<Property>,
    /// `relatedImages`: the images the bundle's operator runs, for mirroring.
    pub related_images: Vec<RelatedImage>,
}

impl Bundle {
    /// `displayName` of the bundle's `olm.csv.metadata` property (what `opm alpha list
    /// packages` shows as DISPLAY NAME); `None` without one.
    pub fn csv_display_name(&self) -> Option<String> {
        self.csv_metadata()?
            .get("displayName")?
            .as_str()
            .map(str::to_owned)
    }

    /// The ClusterServiceVersion among the bundle's `olm.bundle.object` properties (YAML or
    /// JSON), if one is there: what the `bundle-object-to-csv-metadata` migration turns into
    /// `olm.csv.metadata`, and where readers of unmigrated catalogs find the metadata.
    ///
    /// # Errors
    ///
    /// An object property that does not decode, with the reason.
    pub fn csv_object(&self) -> Result<Option<serde_json::Value>, String> {
        use crate::property::{TYPE_BUNDLE_OBJECT, TypedProperty};
        for p in self
            .properties
            .iter()
            .filter(|p| p.type_ == TYPE_BUNDLE_OBJECT)
        {
            let obj = match p.parse() {
                Ok(TypedProperty::BundleObject(o)) => o,
                Ok(_) => continue,
                Err(e) => return Err(e),
            };
            let bytes = obj.decode().map_err(|e| e.to_string())?;
            let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
            let v: serde_json::Value =
                olm_goenc::yamlread::from_str(&text).map_err(|e| e.to_string())?;
            if v.get("kind").and_then(serde_json::Value::as_str) == Some("ClusterServiceVersion") {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }

    /// The value of the first `olm.csv.metadata` property that reads as JSON.
    pub fn csv_metadata(&self) -> Option<serde_json::Value> {
        self.properties.iter().find_map(|p| match p.parse() {
            Ok(crate::property::TypedProperty::CsvMetadata(raw)) => {
                serde_json::from_str(raw.get()).ok()
            }
            _ => None,
        })
    }

    /// The bundle's CSV metadata for people: its `olm.csv.metadata`, else built from the CSV
    /// among its `olm.bundle.object` properties as the `bundle-object-to-csv-metadata`
    /// migration builds it (unmigrated catalogs carry only the CSV).
    pub fn csv_metadata_or_object(&self) -> Option<serde_json::Value> {
        self.csv_metadata().or_else(|| {
            let csv = self.csv_object().ok().flatten()?;
            Some(crate::property::CsvMetadata::from_csv(&csv))
        })
    }
}

/// One `relatedImages` entry of a bundle.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RelatedImage {
    /// A label for the image; may be empty.
    pub name: String,
    /// The image reference.
    pub image: String,
}

/// `olm.deprecations` (at most one per package).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Deprecation {
    /// The package whose parts are deprecated.
    pub package: PackageName,
    /// One entry per deprecated package, channel or bundle.
    pub entries: Vec<DeprecationEntry>,
}

/// One deprecated thing and the message users are shown about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeprecationEntry {
    /// What is deprecated.
    pub reference: PackageScopedReference,
    /// Why, and what to use instead.
    pub message: String,
}

/// What a deprecation entry points at: `olm.package` (no name), `olm.channel` or `olm.bundle`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PackageScopedReference {
    /// The schema of what is referred to.
    pub schema: String,
    /// Its name; empty for the package itself.
    pub name: String,
}

/// Raw JSON text compared by content.
#[derive(Clone, Debug)]
pub struct RawJson(pub Box<RawValue>);

impl PartialEq for RawJson {
    fn eq(&self, o: &Self) -> bool {
        self.0.get() == o.0.get()
    }
}

impl std::ops::Deref for RawJson {
    type Target = RawValue;
    fn deref(&self) -> &RawValue {
        &self.0
    }
}

/// A blob of a schema this crate does not interpret; kept verbatim as canonical JSON.
#[derive(Clone, Debug)]
pub struct Meta {
    /// The blob's `schema` field.
    pub schema: String,
    /// Its `package` field; empty when absent.
    pub package: String,
    /// Its `name` field; empty when absent.
    pub name: String,
    /// The whole blob, as canonical JSON.
    pub blob: Box<RawValue>,
}

impl PartialEq for Meta {
    fn eq(&self, o: &Self) -> bool {
        self.schema == o.schema
            && self.package == o.package
            && self.name == o.name
            && self.blob.get() == o.blob.get()
    }
}

// ---- decoding ---------------------------------------------------------------------------------------

/// A map key borrowed from the input when possible.
pub(crate) struct Key<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Generates a `Deserialize` impl that matches field names case-insensitively, treats `null` as
/// "leave the default", and skips unknown fields: the behaviour of Go's `encoding/json` on a struct.
macro_rules! go_struct {
    ($ty:ident, $what:literal { $($field:ident : $key:literal),* $(,)? } $(opt { $($ofield:ident : $okey:literal),* $(,)? })?) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$ty, A::Error> {
                        let mut out = $ty::default();
                        while let Some(key) = map.next_key::<Key<'de>>()? {
                            let k: &str = &key.0;
                            $(
                                if k.eq_ignore_ascii_case($key) {
                                    if let Some(v) = map.next_value::<Option<_>>()? {
                                        out.$field = v;
                                    }
                                    continue;
                                }
                            )*
                            $($(
                                if k.eq_ignore_ascii_case($okey) {
                                    out.$ofield = map.next_value::<Option<_>>()?;
                                    continue;
                                }
                            )*)?
                            map.next_value::<IgnoredAny>()?;
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

go_struct!(Package, "an olm.package object" {
    name: "name", default_channel: "defaultChannel", description: "description", properties: "properties",
} opt { icon: "icon" });
go_struct!(Icon, "an icon object" { base64data: "base64data", mediatype: "mediatype" });
go_struct!(Channel, "an olm.channel object" {
    name: "name", package: "package", properties: "properties",
} opt { entries: "entries" });
go_struct!(ChannelEntry, "a channel entry object" {
    name: "name", replaces: "replaces", skips: "skips", skip_range: "skipRange",
});
go_struct!(Bundle, "an olm.bundle object" {
    name: "name", package: "package", image: "image", properties: "properties", related_images: "relatedImages",
});
go_struct!(RelatedImage, "a related image object" { name: "name", image: "image" });
go_struct!(Deprecation, "an olm.deprecations object" { package: "package", entries: "entries" });
go_struct!(DeprecationEntry, "a deprecation entry object" { reference: "reference", message: "message" });
go_struct!(PackageScopedReference, "a reference object" { schema: "schema", name: "name" });

// ---- Go `%v` / `%#v` renderings used in upstream error messages -------------------------------------

impl PackageScopedReference {
    /// Go's `%#v` of `declcfg.PackageScopedReference`.
    pub fn go_sharp_v(&self) -> String {
        format!(
            "declcfg.PackageScopedReference{{Schema:{}, Name:{}}}",
            olm_goenc::quote(&self.schema),
            olm_goenc::quote(&self.name)
        )
    }
}

impl DeprecationEntry {
    /// Go's `%v` of `declcfg.DeprecationEntry`.
    pub fn go_v(&self) -> String {
        format!(
            "{{{{{} {}}} {}}}",
            self.reference.schema, self.reference.name, self.message
        )
    }
}

impl Deprecation {
    /// Go's `%v` of `declcfg.Deprecation`.
    pub fn go_v(&self) -> String {
        format!(
            "{{{} {} {}}}",
            SCHEMA_DEPRECATIONS,
            self.package,
            olm_goenc::slice(self.entries.iter().map(|e| e.go_v()))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's `%#v` quotes string fields with `%q`'s rules: DEL is `\x7f`, not Rust's `\u{7f}`.
    #[test]
    fn sharp_v_quotes_like_go() {
        let r = PackageScopedReference {
            schema: "olm.bundle".into(),
            name: "a\x7f".into(),
        };
        assert_eq!(
            r.go_sharp_v(),
            r#"declcfg.PackageScopedReference{Schema:"olm.bundle", Name:"a\x7f"}"#
        );
    }

    const CATALOG: &str = concat!(
        r#"{"schema":"olm.package","name":"b","defaultChannel":"stable","x-unknown":"kept"}"#,
        "\n",
        r#"{"schema":"olm.bundle","name":"b.v1","package":"b","image":"quay.io/b:1","x-unknown":"kept"}"#,
        "\n",
        r#"{"schema":"olm.channel","name":"stable","package":"b","entries":[{"name":"b.v1"}]}"#,
        "\n",
    );

    fn jsonl(cat: &Catalog) -> String {
        let mut out = Vec::new();
        crate::write::write_jsonl(cat, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// catalogd's writer serves kept JSON as is, so an edit that left it in place was silently lost.
    #[test]
    fn edits_reach_the_written_catalog() {
        let mut cat = crate::load::load_bytes(CATALOG.as_bytes(), "catalog.json").unwrap();
        assert!(cat.blobs.iter().all(|b| b.raw().is_some()));
        for b in cat.bundles_mut() {
            b.image = "quay.io/b:2".into();
        }
        if let Blob::Channel(c) = &mut cat.blobs[2]
            && let Some(entries) = c.entries.as_mut()
        {
            entries[0].replaces = "b.v0".into();
        }
        let out = jsonl(&cat);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                r#"{"defaultChannel":"stable","name":"b","schema":"olm.package","x-unknown":"kept"}"#,
                r#"{"image":"quay.io/b:2","name":"b.v1","package":"b","schema":"olm.bundle"}"#,
                r#"{"entries":[{"name":"b.v1","replaces":"b.v0"}],"name":"stable","package":"b","schema":"olm.channel"}"#,
            ]
        );
    }

    /// Looking at a blob through a mutable path does not cost it its kept JSON; changing it does.
    #[test]
    fn only_changes_drop_the_kept_json() {
        let mut cat = crate::load::load_bytes(CATALOG.as_bytes(), "catalog.json").unwrap();
        let names: Vec<String> = cat.bundles_mut().map(|b| b.name.to_string()).collect();
        assert_eq!(names, ["b.v1"]);
        assert!(cat.blobs[1].raw().is_some());
        if let Blob::Bundle(b) = &mut cat.blobs[1] {
            b.properties.clear();
        }
        assert!(cat.blobs[1].raw().is_none());
        assert!(cat.blobs[0].raw().is_some());
    }

    #[test]
    fn the_display_name_comes_from_the_csv_metadata() {
        let text = concat!(
            r#"{"schema":"olm.bundle","name":"b.v1","package":"b","image":"quay.io/b:1","properties":["#,
            r#"{"type":"olm.package","value":{"packageName":"b","version":"1.0.0"}},"#,
            r#"{"type":"olm.csv.metadata","value":{"displayName":"The B Operator"}}]}"#,
        );
        let cat = crate::load::load_bytes(text.as_bytes(), "catalog.json").unwrap();
        let bundle = cat.bundles().next().unwrap();
        assert_eq!(bundle.csv_display_name().as_deref(), Some("The B Operator"));
        assert_eq!(Bundle::default().csv_display_name(), None);
    }

    #[test]
    fn icons_must_be_images() {
        let png = b"\x89PNG\r\n\x1a\n rest";
        let icon = Icon::from_image(png).unwrap();
        assert_eq!(icon.mediatype, "image/png");
        assert_eq!(icon.base64data, "iVBORw0KGgogcmVzdA==");
        assert_eq!(
            Icon::from_image(b"<?xml version=\"1.0\"?><svg/>")
                .unwrap_err()
                .to_string(),
            r#"detected invalid type "text/xml; charset=utf-8": not an image"#
        );
        assert_eq!(
            Icon::from_image(&[0xfe, 0x00]).unwrap_err(),
            NotAnImage("application/octet-stream")
        );
    }
}
