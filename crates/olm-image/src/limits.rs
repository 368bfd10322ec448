//! How much an image may put on disk, and in memory once read: the bounds on catalog and bundle
//! images, and the refusals they lead to.
//!
//! An image names its own sizes: a 3 MB gzip layer may hold a 3 GiB `catalog.json` of spaces,
//! and every tar header says how large its file is. So every pull is held to two limits, one set
//! for catalog images and one for bundle images:
//!
//! * the **total**: the most bytes the image's files may hold together once unpacked, and also
//!   the most its compressed layers may hold, since they are downloaded to disk first;
//! * the **per-file** limit: the most one file may hold. Catalog and bundle readers read a file
//!   whole, so this is also the most one file can cost in memory.
//!
//! The checks are made while the layers stream, before anything passes a limit: a file whose
//! header declares more than it may hold is refused before a byte of it is written, and bytes are
//! counted as they are written, so no stream can carry more. Links are counted once the tree is
//! complete: a reader follows them, and a thousand links to one large file read like a thousand
//! files.
//!
//! The defaults fit every real catalog and bundle at hand with room to spare: the largest
//! catalog tested holds 14,025,149 bytes in 33 files, its largest file 2,364,645 bytes; the
//! largest bundle 4,072,400 bytes, its largest manifest (a CRD) 2,094,918 bytes, which is already
//! near what the API server accepts for one object.
//!
//! Everything here is pure: sizes in, decisions and messages out.

use std::collections::VecDeque;
use std::fmt;
use std::path::PathBuf;

use crate::digest::Digest;
use crate::unpack::Filter;

const KI: u64 = 1 << 10;
const MI: u64 = 1 << 20;
const GI: u64 = 1 << 30;

/// What an image holds, which chooses its limits and names them in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A file-based catalog image.
    Catalog,
    /// A registry+v1 bundle image.
    Bundle,
    /// Any other image, read whole (`olm image pull`).
    Image,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Catalog => "catalog",
            Kind::Bundle => "bundle",
            Kind::Image => "image",
        }
    }
}

/// What a pull expects, so that it can choose the limits before the first layer is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A catalog image.
    Catalog,
    /// A bundle image.
    Bundle,
    /// Either: a catalog when the image config carries the
    /// `operators.operatorframework.io.index.configs.v1` label, a bundle otherwise (commands
    /// that read any image, like `olm catalog render`).
    Either,
    /// Any image at all, bounded as [`Kind::Image`] (`olm image pull`).
    Any,
}

impl Expect {
    /// The kind, when known before the image config is read.
    pub fn kind(self) -> Option<Kind> {
        match self {
            Expect::Catalog => Some(Kind::Catalog),
            Expect::Bundle => Some(Kind::Bundle),
            Expect::Any => Some(Kind::Image),
            Expect::Either => None,
        }
    }

    /// The kind of an image whose config says whether it has a catalog in it.
    pub fn kind_given(self, has_configs_label: bool) -> Kind {
        match (self.kind(), has_configs_label) {
            (Some(kind), _) => kind,
            (None, true) => Kind::Catalog,
            (None, false) => Kind::Bundle,
        }
    }
}

/// The two bounds on one kind of image, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sizes {
    /// The most the image's files may hold together (and its compressed layers).
    pub total: u64,
    /// The most one file may hold.
    pub file: u64,
}

impl Sizes {
    /// Catalogs: 1 GiB in all, 256 MiB in one file — 76 and 113 times the largest here, with room
    /// for public indexes that keep bundle manifests in `olm.bundle.object` properties.
    pub const CATALOG: Sizes = Sizes {
        total: GI,
        file: 256 * MI,
    };
    /// Bundles: 128 MiB in all, 32 MiB in one file — 32 and 16 times the largest here; one
    /// manifest ten times what the API server accepts in a request (3 MiB) can never be applied.
    pub const BUNDLE: Sizes = Sizes {
        total: 128 * MI,
        file: 32 * MI,
    };

    /// Any other image (`olm image pull`): 4 GiB in all, 1 GiB in one file — room for a
    /// runtime image such as olm's own (a debug build of the binary alone is 240 MB), still a
    /// bound on an image that unpacks to terabytes.
    pub const IMAGE: Sizes = Sizes {
        total: 4 * GI,
        file: GI,
    };
}

/// How a user raises a limit: the setting a refusal names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RaisedBy {
    /// Command-line flags (`olm run`, `olm catalogd`): `--catalog-max-size`,
    /// `--catalog-max-file-size`, `--bundle-max-size`, `--bundle-max-file-size`.
    #[default]
    Flags,
    /// Environment variables (the commands that read images on a workstation):
    /// `OLM_CATALOG_MAX_SIZE`, `OLM_CATALOG_MAX_FILE_SIZE`, `OLM_BUNDLE_MAX_SIZE`,
    /// `OLM_BUNDLE_MAX_FILE_SIZE`.
    Environment,
}

/// Which of the two bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bound {
    /// [`Sizes::total`].
    Total,
    /// [`Sizes::file`].
    File,
}

/// The flag that sets `bound` for `kind`, e.g. `--catalog-max-file-size`.
pub fn flag(kind: Kind, bound: Bound) -> String {
    match bound {
        Bound::Total => format!("--{}-max-size", kind.as_str()),
        Bound::File => format!("--{}-max-file-size", kind.as_str()),
    }
}

/// The environment variable that sets `bound` for `kind`, e.g. `OLM_CATALOG_MAX_FILE_SIZE`.
pub fn env_var(kind: Kind, bound: Bound) -> String {
    let name = flag(kind, bound)
        .trim_start_matches('-')
        .replace('-', "_")
        .to_ascii_uppercase();
    format!("OLM_{name}")
}

/// The limits of a client: one set per kind of image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Catalog images.
    pub catalog: Sizes,
    /// Bundle images.
    pub bundle: Sizes,
    /// Any other image.
    pub image: Sizes,
    /// What a refusal tells the user to change.
    pub raised_by: RaisedBy,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            catalog: Sizes::CATALOG,
            bundle: Sizes::BUNDLE,
            image: Sizes::IMAGE,
            raised_by: RaisedBy::Flags,
        }
    }
}

impl Limits {
    /// The sizes for `kind`.
    pub fn of(&self, kind: Kind) -> Sizes {
        match kind {
            Kind::Catalog => self.catalog,
            Kind::Bundle => self.bundle,
            Kind::Image => self.image,
        }
    }
}

/// What went over a limit. Paths are as inside the image.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Over {
    /// One file holds (or its header declares) more than the per-file limit.
    File {
        /// The file, relative to the image root.
        path: PathBuf,
        /// Its size, as declared or as counted so far.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The files together hold more than the total.
    Total {
        /// The limit.
        limit: u64,
    },
    /// Read through their links (each link to a file read as that file), the files hold more
    /// than the total.
    Links {
        /// What a reader of every name would read.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The compressed layers, as the manifest declares them, hold more than the total.
    Layers {
        /// Their declared sizes together.
        size: u64,
        /// The limit.
        limit: u64,
    },
}

impl Over {
    fn bound(&self) -> Bound {
        match self {
            Over::File { .. } => Bound::File,
            Over::Total { .. } | Over::Links { .. } | Over::Layers { .. } => Bound::Total,
        }
    }
}

impl fmt::Display for Over {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Over::File { path, size, limit } => write!(
                f,
                "{} holds {size} bytes, more than the {} one file may hold",
                olm_goenc::quote(&path.to_string_lossy()),
                format_size(*limit)
            ),
            Over::Total { limit } => write!(
                f,
                "its files hold more than the {} allowed in all",
                format_size(*limit)
            ),
            Over::Links { size, limit } => write!(
                f,
                "its files hold {size} bytes read through their links, more than the {} allowed in all",
                format_size(*limit)
            ),
            Over::Layers { size, limit } => write!(
                f,
                "its layers hold {size} bytes compressed, more than the {} allowed in all",
                format_size(*limit)
            ),
        }
    }
}

/// An image refused for its size: what went over, for which kind of image, and how to raise it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Exceeded {
    /// What the image was read as.
    pub kind: Kind,
    /// What went over.
    pub over: Over,
    /// The setting to name.
    pub raised_by: RaisedBy,
}

impl Exceeded {
    /// The flag or environment variable that raises the limit that was hit.
    pub fn setting(&self) -> String {
        match self.raised_by {
            RaisedBy::Flags => flag(self.kind, self.over.bound()),
            RaisedBy::Environment => env_var(self.kind, self.over.bound()),
        }
    }
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self.raised_by {
            RaisedBy::Flags => "",
            RaisedBy::Environment => "the environment variable ",
        };
        let bound = match self.over.bound() {
            Bound::Total => "size",
            Bound::File => "per-file size",
        };
        write!(
            f,
            "over the {} image {bound} limit: {} (raise it with {how}{})",
            self.kind.as_str(),
            self.over,
            self.setting()
        )
    }
}

/// The running count of one unpack against its [`Sizes`]: every file is admitted by its
/// declared size before it is written, and every byte is counted as it is written.
#[derive(Debug, Clone)]
pub struct Budget {
    sizes: Sizes,
    written: u64,
    this_file: u64,
}

impl Budget {
    /// Nothing written yet.
    pub fn new(sizes: Sizes) -> Budget {
        Budget {
            sizes,
            written: 0,
            this_file: 0,
        }
    }

    /// The sizes counted against.
    pub fn sizes(&self) -> Sizes {
        self.sizes
    }

    /// Bytes of file content written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Starts the file at `path`, whose header declares `declared` bytes: refused when it alone
    /// would pass the per-file limit or, with what is written, the total.
    pub fn admit(&mut self, path: &std::path::Path, declared: u64) -> Result<(), Over> {
        self.this_file = 0;
        if declared > self.sizes.file {
            return Err(Over::File {
                path: path.to_path_buf(),
                size: declared,
                limit: self.sizes.file,
            });
        }
        if self.written.saturating_add(declared) > self.sizes.total {
            return Err(Over::Total {
                limit: self.sizes.total,
            });
        }
        Ok(())
    }

    /// Counts `n` more bytes of the file at `path`: refused as soon as the file or the whole
    /// passes its limit, whatever the header declared.
    pub fn count(&mut self, path: &std::path::Path, n: u64) -> Result<(), Over> {
        self.this_file = self.this_file.saturating_add(n);
        self.written = self.written.saturating_add(n);
        if self.this_file > self.sizes.file {
            return Err(Over::File {
                path: path.to_path_buf(),
                size: self.this_file,
                limit: self.sizes.file,
            });
        }
        if self.written > self.sizes.total {
            return Err(Over::Total {
                limit: self.sizes.total,
            });
        }
        Ok(())
    }

    /// Checks what a reader of the finished tree reads: `readable` bytes, each link to a file
    /// counted as that file.
    pub fn check_readable(&self, readable: u64) -> Result<(), Over> {
        if readable > self.sizes.total {
            return Err(Over::Links {
                size: readable,
                limit: self.sizes.total,
            });
        }
        Ok(())
    }
}

/// Checks the compressed layer sizes a manifest declares, before any is downloaded. Negative
/// sizes (a broken manifest) count as nothing here; the download is held to the declared size.
pub fn check_layers(sizes: Sizes, declared: impl IntoIterator<Item = i64>) -> Result<(), Over> {
    let size = declared
        .into_iter()
        .map(|s| u64::try_from(s).unwrap_or(0))
        .fold(0u64, u64::saturating_add);
    if size > sizes.total {
        return Err(Over::Layers {
            size,
            limit: sizes.total,
        });
    }
    Ok(())
}

/// What identifies a refusal: the image, what of it was kept, and the limits it was held to (a
/// raised limit is worth another try).
#[derive(Debug, Clone, PartialEq, Eq)]
struct RefusalKey {
    digest: Digest,
    filter: Filter,
    kind: Kind,
    sizes: Sizes,
}

/// Images refused for their size, by digest, so that a retry or a poll does not download and
/// unpack the same image again: a digest names its content for good, so the answer cannot
/// change until the reference moves to another digest or the limits are raised. Holds the last
/// [`Refusals::CAPACITY`] refusals, the oldest forgotten first.
#[derive(Debug, Default)]
pub struct Refusals {
    entries: VecDeque<(RefusalKey, Exceeded)>,
}

impl Refusals {
    /// How many refusals are remembered.
    pub const CAPACITY: usize = 64;

    /// The refusal of `digest` unpacked with `filter` as `kind` within `sizes`, if there was one.
    pub fn get(
        &self,
        digest: &Digest,
        filter: &Filter,
        kind: Kind,
        sizes: Sizes,
    ) -> Option<&Exceeded> {
        let key = RefusalKey {
            digest: digest.clone(),
            filter: filter.clone(),
            kind,
            sizes,
        };
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, exceeded)| exceeded)
    }

    /// Remembers a refusal, forgetting the oldest beyond [`Refusals::CAPACITY`].
    pub fn remember(&mut self, digest: &Digest, filter: &Filter, sizes: Sizes, what: Exceeded) {
        let key = RefusalKey {
            digest: digest.clone(),
            filter: filter.clone(),
            kind: what.kind,
            sizes,
        };
        self.entries.retain(|(k, _)| *k != key);
        while self.entries.len() >= Self::CAPACITY {
            self.entries.pop_front();
        }
        self.entries.push_back((key, what));
    }
}

/// A size that [`parse_size`] cannot read: the text, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid size {}: {why}; want bytes or a number with Ki, Mi, Gi, Ti, k, M, G or T",
    olm_goenc::quote(.text)
)]
pub struct SizeError {
    /// The text given.
    pub text: String,
    /// What is wrong: no number, an unknown suffix, or too large.
    pub why: &'static str,
}

/// A size as Kubernetes quantities write it: `256Mi`, `1Gi`, `1500k`, or plain bytes.
///
/// # Errors
/// The input with what is wrong with it: no number, a suffix other than `Ki`/`Mi`/`Gi`/`Ti`
/// (powers of 1024) or `k`/`M`/`G`/`T` (powers of 1000), or a value that does not fit 64 bits.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (number, suffix) = t.split_at(digits);
    let bad = |why: &'static str| SizeError {
        text: text.to_owned(),
        why,
    };
    let n: u64 = number.parse().map_err(|_| bad("no number"))?;
    let unit = match suffix {
        "" => 1,
        "Ki" => KI,
        "Mi" => MI,
        "Gi" => GI,
        "Ti" => GI * KI,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => return Err(bad("unknown suffix")),
    };
    n.checked_mul(unit).ok_or_else(|| bad("too large"))
}

/// A size as [`parse_size`] reads it back: the largest binary unit that divides it (`256Mi`),
/// else bytes.
pub fn format_size(bytes: u64) -> String {
    for (unit, suffix) in [(GI * KI, "Ti"), (GI, "Gi"), (MI, "Mi"), (KI, "Ki")] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const SMALL: Sizes = Sizes {
        total: 100,
        file: 40,
    };

    #[test]
    fn admit_and_count_refuse_at_the_first_byte_over() {
        /// Each file's (declared size, bytes actually written).
        type Files = &'static [(u64, u64)];
        let cases: &[(Files, Option<Over>)] = &[
            (&[(40, 40), (40, 40), (20, 20)], None),
            (
                &[(41, 0)],
                Some(Over::File {
                    path: "f".into(),
                    size: 41,
                    limit: 40,
                }),
            ),
            (
                &[(40, 40), (40, 40), (21, 0)],
                Some(Over::Total { limit: 100 }),
            ),
            // A header that understates is caught while counting.
            (
                &[(10, 41)],
                Some(Over::File {
                    path: "f".into(),
                    size: 41,
                    limit: 40,
                }),
            ),
            (
                &[(40, 40), (40, 40), (0, 21)],
                Some(Over::Total { limit: 100 }),
            ),
        ];
        for (files, want) in cases {
            let mut budget = Budget::new(SMALL);
            let mut got = None;
            'files: for &(declared, written) in *files {
                if let Err(over) = budget.admit(Path::new("f"), declared) {
                    got = Some(over);
                    break;
                }
                for _ in 0..written {
                    if let Err(over) = budget.count(Path::new("f"), 1) {
                        got = Some(over);
                        break 'files;
                    }
                }
            }
            assert_eq!(&got, want, "{files:?}");
        }
    }

    #[test]
    fn readable_bytes_and_layers_are_held_to_the_total() {
        let budget = Budget::new(SMALL);
        assert_eq!(budget.check_readable(100), Ok(()));
        assert_eq!(
            budget.check_readable(101),
            Err(Over::Links {
                size: 101,
                limit: 100
            })
        );
        assert_eq!(check_layers(SMALL, [50, 50]), Ok(()));
        assert_eq!(check_layers(SMALL, [-5, 100]), Ok(()));
        assert_eq!(
            check_layers(SMALL, [60, 41]),
            Err(Over::Layers {
                size: 101,
                limit: 100
            })
        );
    }

    #[test]
    fn messages_name_the_limit_and_the_setting() {
        let file = Over::File {
            path: "configs/catalog.json".into(),
            size: 3 * GI,
            limit: 256 * MI,
        };
        let cases = [
            (
                Kind::Catalog,
                file.clone(),
                RaisedBy::Flags,
                r#"over the catalog image per-file size limit: "configs/catalog.json" holds 3221225472 bytes, more than the 256Mi one file may hold (raise it with --catalog-max-file-size)"#,
            ),
            (
                Kind::Catalog,
                file,
                RaisedBy::Environment,
                r#"over the catalog image per-file size limit: "configs/catalog.json" holds 3221225472 bytes, more than the 256Mi one file may hold (raise it with the environment variable OLM_CATALOG_MAX_FILE_SIZE)"#,
            ),
            (
                Kind::Bundle,
                Over::Total { limit: 128 * MI },
                RaisedBy::Flags,
                "over the bundle image size limit: its files hold more than the 128Mi allowed in all (raise it with --bundle-max-size)",
            ),
            (
                Kind::Bundle,
                Over::Links {
                    size: 200 * MI,
                    limit: 128 * MI,
                },
                RaisedBy::Environment,
                "over the bundle image size limit: its files hold 209715200 bytes read through their links, more than the 128Mi allowed in all (raise it with the environment variable OLM_BUNDLE_MAX_SIZE)",
            ),
            (
                Kind::Catalog,
                Over::Layers {
                    size: 2 * GI,
                    limit: GI,
                },
                RaisedBy::Flags,
                "over the catalog image size limit: its layers hold 2147483648 bytes compressed, more than the 1Gi allowed in all (raise it with --catalog-max-size)",
            ),
        ];
        for (kind, over, raised_by, want) in cases {
            let e = Exceeded {
                kind,
                over,
                raised_by,
            };
            assert_eq!(e.to_string(), want);
        }
        assert_eq!(
            env_var(Kind::Bundle, Bound::File),
            "OLM_BUNDLE_MAX_FILE_SIZE"
        );
        assert_eq!(flag(Kind::Bundle, Bound::Total), "--bundle-max-size");
    }

    #[test]
    fn expect_chooses_the_kind() {
        let cases = [
            (Expect::Catalog, false, Kind::Catalog),
            (Expect::Bundle, true, Kind::Bundle),
            (Expect::Either, true, Kind::Catalog),
            (Expect::Either, false, Kind::Bundle),
            (Expect::Any, true, Kind::Image),
            (Expect::Any, false, Kind::Image),
        ];
        for (expect, label, want) in cases {
            assert_eq!(expect.kind_given(label), want, "{expect:?} {label}");
        }
        assert_eq!(Expect::Either.kind(), None);
        let limits = Limits::default();
        assert_eq!(limits.of(Kind::Catalog), Sizes::CATALOG);
        assert_eq!(limits.of(Kind::Bundle), Sizes::BUNDLE);
        assert_eq!(limits.of(Kind::Image), Sizes::IMAGE);
        assert_eq!(env_var(Kind::Image, Bound::File), "OLM_IMAGE_MAX_FILE_SIZE");
    }

    #[test]
    fn refusals_are_remembered_per_digest_and_limits() {
        let digest = |c: char| -> Digest {
            format!("sha256:{}", c.to_string().repeat(64))
                .parse()
                .expect("digest")
        };
        let exceeded = Exceeded {
            kind: Kind::Catalog,
            over: Over::Total { limit: 100 },
            raised_by: RaisedBy::Flags,
        };
        let mut refusals = Refusals::default();
        let all = Filter::All;
        refusals.remember(&digest('a'), &all, SMALL, exceeded.clone());
        assert_eq!(
            refusals.get(&digest('a'), &all, Kind::Catalog, SMALL),
            Some(&exceeded)
        );
        // Another digest, kind, filter or raised limits: not refused yet.
        assert_eq!(refusals.get(&digest('b'), &all, Kind::Catalog, SMALL), None);
        assert_eq!(refusals.get(&digest('a'), &all, Kind::Bundle, SMALL), None);
        let configs = Filter::Under("configs".into());
        assert_eq!(
            refusals.get(&digest('a'), &configs, Kind::Catalog, SMALL),
            None
        );
        let raised = Sizes {
            total: 1000,
            ..SMALL
        };
        assert_eq!(
            refusals.get(&digest('a'), &all, Kind::Catalog, raised),
            None
        );
        // Bounded: the oldest goes first.
        for n in 0..Refusals::CAPACITY {
            let d = Digest::of(&n.to_le_bytes());
            refusals.remember(&d, &all, SMALL, exceeded.clone());
        }
        assert_eq!(refusals.entries.len(), Refusals::CAPACITY);
        assert_eq!(refusals.get(&digest('a'), &all, Kind::Catalog, SMALL), None);
    }

    #[test]
    fn sizes_parse_and_print_as_quantities() {
        let cases = [
            ("1024", Ok(1024)),
            ("256Mi", Ok(256 * MI)),
            ("1Gi", Ok(GI)),
            ("2Ti", Ok(2 * GI * KI)),
            ("1500k", Ok(1_500_000)),
            ("3G", Ok(3_000_000_000)),
            (" 64Ki ", Ok(64 * KI)),
            ("Mi", Err("no number")),
            ("-1", Err("no number")),
            ("1.5Gi", Err("unknown suffix")),
            ("10MB", Err("unknown suffix")),
            ("99999999999Ti", Err("too large")),
        ];
        for (text, want) in cases {
            match (parse_size(text), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{text}"),
                (Err(got), Err(why)) => assert_eq!(got.why, why, "{text}: {got}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
        for (bytes, text) in [
            (256 * MI, "256Mi"),
            (GI, "1Gi"),
            (1536 * MI, "1536Mi"),
            (1000, "1000"),
            (0, "0"),
        ] {
            assert_eq!(format_size(bytes), text);
            assert_eq!(parse_size(text), Ok(bytes));
        }
    }
}
