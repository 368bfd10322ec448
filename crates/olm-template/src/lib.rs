//! Catalog templates: short documents that render to a file-based catalog, as
//! `opm alpha render-template` does, and catalogs converted back to templates, as
//! `opm alpha convert-template` does.
//!
//! Not for: loading, validating or writing catalogs (`olm-catalog` does, and this crate hands it
//! the rendered [`Catalog`]), or pulling bundle images: a [`BundleRenderer`] supplied by the caller
//! is the only source of bundles, so rendering stays pure.
//!
//! Three templates exist, each named by its `schema`:
//!
//! | schema | type | what it does |
//! |---|---|---|
//! | `olm.template.basic` | `basic` | FBC blobs passed through; each `{schema: olm.bundle, image}` becomes the bundle(s) rendered from the image |
//! | `olm.semver` | `semver` | bundle images listed per maturity (candidate/fast/stable); channels, edges and the default channel follow from their versions ([`SemverOptions`] picks the edge algorithm) |
//! | `olm.template.substitutes` | `substitutes` | a valid FBC plus `{name: image, base: bundle}` pairs; the rendered image takes the base bundle's place in every upgrade graph |
//!
//! # Flow
//! 1. [`detect_kind`] reads the first document of the input (YAML or JSON) and maps its `schema`
//!    (key matched case-insensitively) to a [`TemplateKind`]; or the caller names the type with
//!    [`TemplateKind::from_type`].
//! 2. [`render`] parses the template, asks a [`BundleRenderer`] for the `olm.bundle` blobs of every
//!    image it names, and builds the [`Catalog`]. The renderer is the only source of bundles: offline
//!    it is [`CatalogBundleRenderer`] (bundles of an existing catalog, looked up by `image`).
//!
//! ```
//! use olm_template::{CatalogBundleRenderer, RenderOptions};
//!
//! // Bundles come from a catalog that already holds the images (offline rendering).
//! let source = olm_catalog::load_bytes(
//!     br#"{"schema":"olm.bundle","name":"op.v1.0.0","package":"op","image":"quay.io/op:1.0.0",
//!         "properties":[{"type":"olm.package","value":{"packageName":"op","version":"1.0.0"}}]}"#,
//!     "source.json",
//! )?;
//! let renderer = CatalogBundleRenderer::new(&source, "catalog \"source.json\"");
//! let input = b"schema: olm.semver\nstable:\n  bundles:\n  - image: quay.io/op:1.0.0\n";
//! let catalog = olm_template::render(input, None, &renderer, &RenderOptions::default())?;
//! assert_eq!(catalog.packages().next().unwrap().default_channel, "stable-v1.0");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`convert_basic`] and [`convert_substitutes`] go the other way (`opm alpha convert-template`):
//! a catalog becomes a template that renders back to it.
//!
//! # Guarantees
//! * Error texts are upstream's (operator-registry `alpha/template`), including their wrapping.
//! * Output is deterministic. Where upstream iterates a Go map (the order images are rendered in, the
//!   order bundles are listed in the semver output, the order build-metadata conflicts are reported in)
//!   we use the order of the template instead. Writers regroup blobs by package anyway.
//! * Nothing is validated beyond what the template itself requires (basic and semver output is not
//!   validated upstream either; substitutes validates its input and its result).
//!
//! # Caveats
//! * YAML is read by the workspace's one reader (`olm_goenc::yamlread`) with go-yaml v2's YAML 1.1
//!   scalars (`yes`/`on` are booleans, `012` is octal), as sigs.k8s.io/yaml reads templates.
//! * Upstream's substitutes template renders each substitute image twice (once to check it, once to
//!   use it); we render it once.

use olm_goenc::json::{Kind, UnmarshalTypeError};
use serde_json::Value;

use olm_catalog::model::Catalog;
use olm_goenc::quote;
use olm_goenc::yamlread;

mod basic;
pub mod edit;
mod renderer;
mod semver;
mod substitutes;

pub use basic::convert as convert_basic;
pub use renderer::{BundleRenderError, BundleRenderer, CatalogBundleRenderer};
pub use semver::{SemverEdges, SemverOptions};
pub use substitutes::convert as convert_substitutes;

/// The three template types, in the order upstream lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TemplateKind {
    /// `olm.template.basic`.
    Basic,
    /// `olm.semver`.
    Semver,
    /// `olm.template.substitutes`.
    Substitutes,
}

impl TemplateKind {
    /// Every template type, in upstream's order.
    pub const ALL: [TemplateKind; 3] = [
        TemplateKind::Basic,
        TemplateKind::Semver,
        TemplateKind::Substitutes,
    ];

    /// The `schema` value that identifies the template.
    pub fn schema(self) -> &'static str {
        match self {
            TemplateKind::Basic => basic::SCHEMA,
            TemplateKind::Semver => semver::SCHEMA,
            TemplateKind::Substitutes => substitutes::SCHEMA,
        }
    }

    /// The type name (the text after the last `.` of the schema), as used on the command line.
    pub fn type_name(self) -> &'static str {
        let s = self.schema();
        &s[s.rfind('.').map_or(0, |i| i + 1)..]
    }

    /// The template with this schema, if any (exact match, as upstream's registry lookup).
    pub fn from_schema(schema: &str) -> Option<TemplateKind> {
        Self::ALL.into_iter().find(|k| k.schema() == schema)
    }

    /// The template with this type name (`basic`, `semver`, `substitutes`).
    pub fn from_type(name: &str) -> Result<TemplateKind, TemplateError> {
        Self::ALL
            .into_iter()
            .find(|k| k.type_name() == name)
            .ok_or_else(|| TemplateError::InvalidType(name.to_owned()))
    }
}

impl std::fmt::Display for TemplateKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.type_name())
    }
}

/// Why a template could not be rendered. The `Display` text is upstream's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The first document of the input could not be decoded while detecting the schema.
    #[error("decoding template input: {0}")]
    Decode(String),
    /// The first document is not an object, or its `schema` is not a string.
    #[error("unmarshalling template schema: {0}")]
    Unmarshal(String),
    /// The first document has no (or an empty) `schema`.
    #[error("template input missing required 'schema' field")]
    MissingSchema,
    /// The `schema` names no template.
    #[error("unknown template schema: {0}")]
    UnknownSchema(String),
    /// A template type name that does not exist.
    #[error("invalid template type {}, must be one of: [basic semver substitutes]", quote(.0))]
    InvalidType(String),
    /// A bundle image could not be rendered (returned as is, as upstream does for basic and semver).
    #[error(transparent)]
    Bundle(#[from] BundleRenderError),
    /// Any other failure of one template, with upstream's text and wrapping.
    #[error("{message}")]
    Render {
        /// The template that failed.
        kind: TemplateKind,
        /// Upstream's message.
        message: String,
    },
}

impl TemplateError {
    pub(crate) fn render(kind: TemplateKind, message: impl Into<String>) -> Self {
        TemplateError::Render {
            kind,
            message: message.into(),
        }
    }
}

/// Options that change how templates render; the default is current upstream behaviour.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// How the semver template renders.
    pub semver: SemverOptions,
}

/// Detects the template type from the `schema` of the input's first document.
///
/// Errors: [`TemplateError::Decode`] (input not YAML/JSON, or empty), [`TemplateError::Unmarshal`]
/// (not an object, or a `schema` that is not a string), [`TemplateError::MissingSchema`],
/// [`TemplateError::UnknownSchema`].
pub fn detect_kind(input: &[u8]) -> Result<TemplateKind, TemplateError> {
    let doc = first_document(input).map_err(TemplateError::Decode)?;
    let schema = match &doc {
        Value::Object(m) => match olm_goenc::json::field(m, "schema") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(TemplateError::Unmarshal(
                    UnmarshalTypeError::field(Kind::of(other), "", "schema", "string").to_string(),
                ));
            }
        },
        // `null` decodes into the empty struct; anything else but an object is a type error.
        Value::Null => String::new(),
        other => {
            return Err(TemplateError::Unmarshal(
                UnmarshalTypeError::value(
                    Kind::of(other),
                    "struct { Schema string \"json:\\\"schema\\\"\" }",
                )
                .to_string(),
            ));
        }
    };
    if schema.is_empty() {
        return Err(TemplateError::MissingSchema);
    }
    TemplateKind::from_schema(&schema).ok_or(TemplateError::UnknownSchema(schema))
}

/// Renders a template to a catalog.
///
/// `kind` is the template type when the caller knows it (a type argument on the command line);
/// `None` detects it with [`detect_kind`]. When the type is given, a document of another schema
/// fails with that template's own schema error, as upstream.
pub fn render(
    input: &[u8],
    kind: Option<TemplateKind>,
    renderer: &dyn BundleRenderer,
    options: &RenderOptions,
) -> Result<Catalog, TemplateError> {
    let kind = match kind {
        Some(k) => k,
        None => detect_kind(input)?,
    };
    match kind {
        TemplateKind::Basic => basic::render(input, renderer),
        TemplateKind::Semver => semver::render(input, renderer, &options.semver),
        TemplateKind::Substitutes => substitutes::render(input, renderer),
    }
}

// ---- input helpers shared by the templates -------------------------------------------------------------

/// The first document of a YAML or JSON stream, as apimachinery's `YAMLOrJSONDecoder` reads it: JSON
/// when the first non-space byte is `{`, else YAML split at `---` lines. Empty input is `EOF`.
pub(crate) fn first_document(input: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(input).map_err(|e| format!("invalid UTF-8: {e}"))?;
    let first = text.bytes().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'{') {
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        return match stream.next() {
            Some(Ok(v)) => Ok(v),
            Some(Err(e)) => Err(e.to_string()),
            None => Err("EOF".to_owned()),
        };
    }
    for doc in yaml_documents(text) {
        if is_blank_yaml(doc) {
            continue;
        }
        // go-yaml v2 (under sigs.k8s.io/yaml and apimachinery) rejects repeated mapping keys.
        let options = yamlread::Options {
            duplicate_keys: yamlread::DuplicateKeys::Error,
        };
        return yamlread::parse_document_with(doc, &options).map_err(|e| e.to_string());
    }
    Err("EOF".to_owned())
}

/// Splits a YAML stream at document-separator lines (`---`, optionally followed by a comment).
fn yaml_documents(text: &str) -> impl Iterator<Item = &str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("---") {
            let rest = rest.trim();
            if rest.is_empty() || rest.starts_with('#') {
                docs.push(&text[start..pos]);
                start = pos + line.len();
            }
        }
        pos += line.len();
    }
    docs.push(&text[start..]);
    docs.into_iter()
}

fn is_blank_yaml(doc: &str) -> bool {
    doc.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#')
    })
}

/// Parses the blobs of a template's `entries` list with the catalog loader, so they get exactly the
/// decoding (and the errors) of blobs in a catalog file.
pub(crate) fn load_entries(entries: &[Value]) -> Result<Catalog, String> {
    let mut stream = String::new();
    for e in entries {
        // Go's json.Unmarshal of a `null` entry into a *Meta leaves a nil pointer, which LoadSlice
        // then dereferences; we report it as the missing-schema error instead of crashing.
        let text = serde_json::to_string(e).map_err(|e| e.to_string())?;
        stream.push_str(&text);
        stream.push('\n');
    }
    if stream.is_empty() {
        return Ok(Catalog::default());
    }
    olm_catalog::load::load_bytes(stream.as_bytes(), "<template entries>").map_err(|e| match e {
        olm_catalog::load::LoadError::Parse { message, .. }
        | olm_catalog::load::LoadError::Io { message, .. } => message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_types() {
        assert_eq!(TemplateKind::Basic.type_name(), "basic");
        assert_eq!(TemplateKind::Semver.type_name(), "semver");
        assert_eq!(TemplateKind::Substitutes.type_name(), "substitutes");
        assert_eq!(TemplateKind::from_type("semver"), Ok(TemplateKind::Semver));
        // cmd/opm/alpha/template: `invalid template type %q, must be one of: %s` with the sorted type list.
        assert_eq!(
            TemplateKind::from_type("composite")
                .unwrap_err()
                .to_string(),
            r#"invalid template type "composite", must be one of: [basic semver substitutes]"#
        );
    }

    #[test]
    fn detection_by_schema() {
        assert_eq!(
            detect_kind(b"schema: olm.semver\n"),
            Ok(TemplateKind::Semver)
        );
        // The key is matched case-insensitively (real templates spell it `Schema:`).
        assert_eq!(
            detect_kind(b"---\nSchema: olm.template.basic\nentries: []\n"),
            Ok(TemplateKind::Basic)
        );
        assert_eq!(
            detect_kind(br#"{"schema":"olm.template.substitutes"}"#),
            Ok(TemplateKind::Substitutes)
        );
        // Only the first document counts.
        assert_eq!(
            detect_kind(b"schema: olm.semver\n---\nschema: olm.template.basic\n"),
            Ok(TemplateKind::Semver)
        );
    }

    #[test]
    fn detection_errors_upstream_texts() {
        // alpha/template/schema.go detectSchema.
        assert_eq!(
            detect_kind(b"entries: []\n").unwrap_err().to_string(),
            "template input missing required 'schema' field"
        );
        assert_eq!(
            detect_kind(b"schema: \"\"\n").unwrap_err().to_string(),
            "template input missing required 'schema' field"
        );
        // alpha/template/registry.go UnknownSchemaError.
        assert_eq!(
            detect_kind(b"schema: olm.template.composite\n")
                .unwrap_err()
                .to_string(),
            "unknown template schema: olm.template.composite"
        );
        // The schema value is matched exactly.
        assert_eq!(
            detect_kind(b"schema: OLM.SEMVER\n")
                .unwrap_err()
                .to_string(),
            "unknown template schema: OLM.SEMVER"
        );
        assert_eq!(
            detect_kind(b"").unwrap_err().to_string(),
            "decoding template input: EOF"
        );
        assert!(
            detect_kind(b"a: [\n")
                .unwrap_err()
                .to_string()
                .starts_with("decoding template input: ")
        );
        assert_eq!(
            detect_kind(b"schema: 3\n").unwrap_err().to_string(),
            "unmarshalling template schema: json: cannot unmarshal number into Go struct field \
             .schema of type string"
        );
        assert_eq!(detect_kind(b"null\n"), Err(TemplateError::MissingSchema));
        assert!(
            detect_kind(b"- a\n")
                .unwrap_err()
                .to_string()
                .starts_with("unmarshalling template schema: json: cannot unmarshal array")
        );
        // A repeated key is a decode error (go-yaml v2), not "last one wins".
        assert!(
            detect_kind(b"schema: olm.semver\nschema: olm.template.basic\n")
                .unwrap_err()
                .to_string()
                .starts_with("decoding template input: ")
        );
    }

    /// Templates are read as sigs.k8s.io/yaml reads them: YAML 1.1 scalars, keys included.
    #[test]
    fn yaml_scalars_follow_go_yaml_v2() {
        assert_eq!(
            first_document(b"schema: olm.template.basic\nmode: 0777\nenabled: on\ny: 1\n"),
            Ok(serde_json::json!({
                "schema": "olm.template.basic",
                "mode": 511,
                "enabled": true,
                "true": 1,
            }))
        );
    }
}
