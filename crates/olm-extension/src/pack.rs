//! Moving a revision's objects out of the `ClusterObjectSet` into immutable Secrets, and reading
//! them back.
//!
//! etcd refuses objects above 1.5 MiB, and a bundle with a few large CRDs passes that easily.
//! The objects of such a revision are stored in Secrets of type
//! [`olm_k8s::OBJECT_DATA_SECRET_TYPE`] and the revision holds `ref`s to them. The layout is
//! upstream's (`applier/secretpacker.go`), so revisions and Secrets written by either
//! implementation read the same:
//!
//! * each object is its Go JSON (`json.Marshal` of the object: keys sorted, HTML characters
//!   escaped), gzip'd at best compression when larger than [`GZIP_THRESHOLD`];
//! * its data key is the unpadded base64url SHA-256 of those bytes, so equal objects share one
//!   entry of a Secret;
//! * objects fill Secrets in phase order up to [`MAX_SECRET_DATA_SIZE`] bytes of data each; a
//!   Secret is named `<revision>-<16 hex digits>`, the first 8 bytes of the SHA-256 of its keys
//!   and values in key order, lives in the system namespace, is labelled with the revision and
//!   owner names and is immutable.
//!
//! Policy (this implementation's, unlike upstream's which always externalises): a revision
//! whose JSON is at most [`INLINE_LIMIT`] (800 KiB) keeps its objects inline — far below etcd's
//! limit, and one request instead of one per Secret plus one owner-reference patch per Secret.
//! Only larger revisions are packed ([`externalize`]).
//!
//! Caveat: gzip'd bytes come from a different deflate implementation than Go's, so the key and
//! Secret name of a gzip'd object differ from upstream's; uncompressed objects match exactly.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use base64::Engine as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use olm_api::{ClusterObjectSet, ClusterObjectSetPhase, ObjectSourceRef};
use olm_k8s::{OBJECT_DATA_SECRET_TYPE, OWNER_NAME_LABEL, REVISION_NAME_LABEL};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::phase;

/// The most data bytes one Secret is filled with: 900 KiB leaves room for base64 and metadata
/// within etcd's 1.5 MiB.
pub const MAX_SECRET_DATA_SIZE: usize = 900 * 1024;

/// Objects whose JSON is longer than this are stored gzip'd.
pub const GZIP_THRESHOLD: usize = 900 * 1024;

/// Revisions whose JSON is at most this long keep their objects inline ([`externalize`]).
pub const INLINE_LIMIT: usize = 800 * 1024;

/// The most bytes a gzip'd object may inflate to when read back ([`unpack_ref`]).
pub const MAX_DECOMPRESSED_SIZE: usize = 10 * 1024 * 1024;

/// Why objects cannot be packed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PackError {
    /// One object alone is larger than a Secret may hold, even compressed.
    #[error(
        "object in phase {phase} index {index} exceeds maximum Secret data size ({size} bytes > {max} bytes) even after compression",
        max = MAX_SECRET_DATA_SIZE
    )]
    TooLarge {
        /// The phase's position in `spec.phases`.
        phase: usize,
        /// The object's position in the phase.
        index: usize,
        /// Its size after compression.
        size: usize,
    },
    /// Compressing an object failed.
    #[error("compressing object in phase {phase} index {index}: {source}")]
    Compress {
        /// The phase's position in `spec.phases`.
        phase: usize,
        /// The object's position in the phase.
        index: usize,
        /// What the compressor reported.
        source: io::Error,
    },
    /// The revision to externalise has no name, which the Secrets are named after.
    #[error("revision has no name")]
    Unnamed,
    /// The revision to externalise has no owner-name label, which the Secrets are labelled with.
    #[error("revision {0} has no {OWNER_NAME_LABEL} label")]
    NoOwner(String),
}

/// Who the Secrets of one revision belong to and where they live.
#[derive(Debug, Clone, Copy)]
pub struct SecretPacker<'a> {
    /// The revision's name; prefix of every Secret name and value of their revision-name label.
    pub revision_name: &'a str,
    /// The owning extension's name; value of the Secrets' owner-name label.
    pub owner_name: &'a str,
    /// The namespace the Secrets are created in (and the refs point to).
    pub system_namespace: &'a str,
}

/// Packed objects: the Secrets to create before the revision and the refs that replace its
/// inline objects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PackResult {
    /// The Secrets, in the order they were filled.
    pub secrets: Vec<Secret>,
    /// The ref of each packed object, by (phase index, object index).
    pub refs: BTreeMap<(usize, usize), ObjectSourceRef>,
}

impl SecretPacker<'_> {
    /// Packs every inline object of `phases` into Secrets, as upstream's `SecretPacker.Pack`.
    ///
    /// Flow: objects are taken in phase order; each is written as Go JSON, gzip'd above
    /// [`GZIP_THRESHOLD`], refused above [`MAX_SECRET_DATA_SIZE`]; a new key is added to the
    /// current Secret, which is closed first when the key would take it past the cap; a key the
    /// current Secret already holds is shared and costs nothing. Entries that already are refs
    /// are skipped.
    ///
    /// Guarantees: deterministic — the same phases give the same Secrets, names and keys; every
    /// Secret holds at most [`MAX_SECRET_DATA_SIZE`] data bytes and at least one key.
    ///
    /// Errors: [`PackError::TooLarge`] with upstream's message; [`PackError::Compress`].
    pub fn pack(&self, phases: &[ClusterObjectSetPhase]) -> Result<PackResult, PackError> {
        let mut result = PackResult::default();
        let mut data: BTreeMap<String, ByteString> = BTreeMap::new();
        let mut size = 0usize;
        let mut pending: Vec<((usize, usize), String)> = Vec::new();
        let mut json = String::new();
        for (pi, p) in phases.iter().enumerate() {
            for (oi, o) in p.objects.iter().enumerate() {
                let Some(object) = &o.object else {
                    continue;
                };
                json.clear();
                phase::write_go_object(&mut json, object);
                let bytes = if json.len() > GZIP_THRESHOLD {
                    gzip(json.as_bytes()).map_err(|source| PackError::Compress {
                        phase: pi,
                        index: oi,
                        source,
                    })?
                } else {
                    json.as_bytes().to_vec()
                };
                if bytes.len() > MAX_SECRET_DATA_SIZE {
                    return Err(PackError::TooLarge {
                        phase: pi,
                        index: oi,
                        size: bytes.len(),
                    });
                }
                let key = content_key(&bytes);
                if !data.contains_key(&key) {
                    if size + bytes.len() > MAX_SECRET_DATA_SIZE && !data.is_empty() {
                        self.finish(&mut result, std::mem::take(&mut data), &mut pending);
                        size = 0;
                    }
                    size += bytes.len();
                    data.insert(key.clone(), ByteString(bytes));
                }
                pending.push(((pi, oi), key));
            }
        }
        if !data.is_empty() {
            self.finish(&mut result, data, &mut pending);
        }
        Ok(result)
    }

    fn finish(
        &self,
        result: &mut PackResult,
        data: BTreeMap<String, ByteString>,
        pending: &mut Vec<((usize, usize), String)>,
    ) {
        let name = self.secret_name(&data);
        for (pos, key) in pending.drain(..) {
            result.refs.insert(
                pos,
                ObjectSourceRef {
                    name: name.clone(),
                    namespace: Some(self.system_namespace.to_owned()),
                    key,
                },
            );
        }
        result.secrets.push(Secret {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(self.system_namespace.to_owned()),
                labels: Some(BTreeMap::from([
                    (
                        REVISION_NAME_LABEL.to_owned(),
                        self.revision_name.to_owned(),
                    ),
                    (OWNER_NAME_LABEL.to_owned(), self.owner_name.to_owned()),
                ])),
                ..ObjectMeta::default()
            },
            immutable: Some(true),
            type_: Some(OBJECT_DATA_SECRET_TYPE.to_owned()),
            data: Some(data),
            ..Secret::default()
        });
    }

    /// `<revision>-<hex of the first 8 bytes of sha256(key1 value1 key2 value2 …)>`, keys in
    /// byte order: the same content always lands in the same Secret, so re-creating it after a
    /// crash meets `AlreadyExists` instead of making a second copy.
    fn secret_name(&self, data: &BTreeMap<String, ByteString>) -> String {
        let mut h = Sha256::new();
        for (k, v) in data {
            h.update(k.as_bytes());
            h.update(&v.0);
        }
        let sum = h.finalize();
        let mut name = String::with_capacity(self.revision_name.len() + 17);
        name.push_str(self.revision_name);
        name.push('-');
        phase::push_hex(&mut name, &sum[..8]);
        name
    }
}

/// The data key of `bytes`: unpadded base64url of their SHA-256 (43 characters).
pub fn content_key(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(bytes))
}

fn gzip(bytes: &[u8]) -> io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::best(),
    );
    enc.write_all(bytes)?;
    enc.finish()
}

/// Replaces each inline object that `refs` names with its ref.
pub fn replace_inline_with_refs(
    phases: &mut [ClusterObjectSetPhase],
    refs: &BTreeMap<(usize, usize), ObjectSourceRef>,
) {
    for (&(pi, oi), r) in refs {
        if let Some(o) = phases.get_mut(pi).and_then(|p| p.objects.get_mut(oi)) {
            o.object = None;
            o.ref_ = Some(r.clone());
        }
    }
}

/// A revision ready to create, and the Secrets to create before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Externalized {
    /// The revision; its objects are refs when `secrets` is not empty.
    pub revision: ClusterObjectSet,
    /// The Secrets its refs point to; empty when the objects stayed inline.
    pub secrets: Vec<Secret>,
}

/// Decides where a revision's objects live and packs them when they must move.
///
/// Flow:
/// 1. the revision's JSON length is measured; at most [`INLINE_LIMIT`] ⇒ returned unchanged,
///    no Secrets;
/// 2. otherwise its objects are packed ([`SecretPacker::pack`]) under the revision's name and
///    owner-name label into `system_namespace`, and replaced by refs.
///
/// Guarantees: the revision's annotations (among them the content digest, computed on the
/// inline objects) are kept, so a packed revision compares equal to its inline form in
/// [`crate::revision::change`].
///
/// The caller creates the Secrets (tolerating `AlreadyExists`), then the revision, then adds
/// [`secret_owner_reference`] to each Secret so they are collected with the revision.
///
/// Errors: [`PackError::Unnamed`] or [`PackError::NoOwner`] for a revision [`build`] did not
/// make; the errors of [`SecretPacker::pack`].
///
/// [`build`]: crate::revision::build
pub fn externalize(
    mut revision: ClusterObjectSet,
    system_namespace: &str,
) -> Result<Externalized, PackError> {
    if json_len(&revision) <= INLINE_LIMIT {
        return Ok(Externalized {
            revision,
            secrets: Vec::new(),
        });
    }
    let name = revision.metadata.name.clone().ok_or(PackError::Unnamed)?;
    let owner = revision
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(OWNER_NAME_LABEL))
        .cloned()
        .ok_or_else(|| PackError::NoOwner(name.clone()))?;
    let packer = SecretPacker {
        revision_name: &name,
        owner_name: &owner,
        system_namespace,
    };
    let packed = packer.pack(&revision.spec.phases)?;
    replace_inline_with_refs(&mut revision.spec.phases, &packed.refs);
    Ok(Externalized {
        revision,
        secrets: packed.secrets,
    })
}

/// The length of `v` serialised as the client sends it, counted without building the text.
fn json_len(v: &ClusterObjectSet) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    match serde_json::to_writer(&mut c, v) {
        Ok(()) => c.0,
        // Serialising a typed revision cannot fail; should it, packing is the safe side.
        Err(_) => usize::MAX,
    }
}

/// The owner reference that makes a packed Secret part of its revision (controller, blocking
/// deletion), added once the revision exists and has a uid.
pub fn secret_owner_reference(revision_name: &str, revision_uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: format!("{}/{}", olm_api::GROUP, olm_api::VERSION),
        kind: "ClusterObjectSet".to_owned(),
        name: revision_name.to_owned(),
        uid: revision_uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Why a Secret's data does not hold an object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnpackError {
    /// The data starts with gzip's magic bytes but its header is broken.
    #[error("{0}")]
    GzipHeader(io::Error),
    /// The gzip stream is broken.
    #[error("{0}")]
    Decompress(io::Error),
    /// The gzip stream inflates past [`MAX_DECOMPRESSED_SIZE`].
    #[error("decompressed data exceeds maximum size ({MAX_DECOMPRESSED_SIZE} bytes)")]
    TooLarge,
    /// The data is not JSON.
    #[error("{0}")]
    Json(serde_json::Error),
    /// The data is JSON but not an object.
    #[error("{0}")]
    NotAnObject(Box<olm_goenc::json::UnmarshalTypeError>),
}

/// Reads an object back from a Secret data value: gzip'd when it starts with `1f 8b` (and
/// then inflating to at most [`MAX_DECOMPRESSED_SIZE`]), JSON otherwise.
///
/// Caveat: a JSON `null` is refused as not an object; Go decodes it into an empty object and
/// fails later, when the object is applied.
pub fn unpack_ref(data: &[u8]) -> Result<Map<String, Value>, UnpackError> {
    let inflated;
    let json = if data.starts_with(&[0x1f, 0x8b]) {
        let mut dec = flate2::read::GzDecoder::new(data);
        let mut out = Vec::new();
        let limit = MAX_DECOMPRESSED_SIZE as u64 + 1;
        if let Err(e) = (&mut dec).take(limit).read_to_end(&mut out) {
            // The header is read first: no header yet means the stream failed there.
            return Err(if dec.header().is_none() {
                UnpackError::GzipHeader(e)
            } else {
                UnpackError::Decompress(e)
            });
        }
        if out.len() > MAX_DECOMPRESSED_SIZE {
            return Err(UnpackError::TooLarge);
        }
        inflated = out;
        inflated.as_slice()
    } else {
        data
    };
    match serde_json::from_slice::<Value>(json).map_err(UnpackError::Json)? {
        Value::Object(m) => Ok(m),
        other => Err(UnpackError::NotAnObject(Box::new(
            olm_goenc::json::UnmarshalTypeError::value(
                olm_goenc::json::Kind::of(&other),
                "map[string]interface {}",
            ),
        ))),
    }
}

/// Why a `ref` could not be resolved from its Secret, worded as upstream's ClusterObjectSet
/// controller words it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RefError {
    /// The Secret has no such key.
    #[error("key {} not found in Secret {namespace}/{name}", olm_goenc::quote(key))]
    MissingKey {
        /// The ref's key.
        key: String,
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
    },
    /// The value at the key is not an object.
    #[error("{}", describe(key, namespace, name, source))]
    Unpack {
        /// The ref's key.
        key: String,
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// What was wrong with the value.
        source: UnpackError,
    },
}

fn describe(key: &str, namespace: &str, name: &str, e: &UnpackError) -> String {
    let key = olm_goenc::quote(key);
    match e {
        UnpackError::GzipHeader(e) => {
            format!("creating gzip reader for key {key} in Secret {namespace}/{name}: {e}")
        }
        UnpackError::Decompress(e) => {
            format!("decompressing key {key} in Secret {namespace}/{name}: {e}")
        }
        UnpackError::TooLarge => format!(
            "decompressed data for key {key} in Secret {namespace}/{name} exceeds maximum size ({MAX_DECOMPRESSED_SIZE} bytes)"
        ),
        UnpackError::Json(e) => {
            format!("unmarshaling object from key {key} in Secret {namespace}/{name}: {e}")
        }
        UnpackError::NotAnObject(e) => {
            format!("unmarshaling object from key {key} in Secret {namespace}/{name}: {e}")
        }
    }
}

/// Resolves `r` against the data of the Secret it names (in `namespace`, the ref's own or the
/// system namespace when it has none).
///
/// Errors: [`RefError::MissingKey`]; [`RefError::Unpack`] with the reason from [`unpack_ref`].
pub fn resolve_ref(
    r: &ObjectSourceRef,
    namespace: &str,
    secret_data: &BTreeMap<String, ByteString>,
) -> Result<Map<String, Value>, RefError> {
    let Some(value) = secret_data.get(&r.key) else {
        return Err(RefError::MissingKey {
            key: r.key.clone(),
            namespace: namespace.to_owned(),
            name: r.name.clone(),
        });
    };
    unpack_ref(&value.0).map_err(|source| RefError::Unpack {
        key: r.key.clone(),
        namespace: namespace.to_owned(),
        name: r.name.clone(),
        source,
    })
}
