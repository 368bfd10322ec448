//! YAML in and out, the way the Kubernetes Go tooling does it.
//!
//! Output: manifests are written byte for byte like `sigs.k8s.io/yaml.Marshal` (JSON → go-yaml v2):
//! keys sorted with go-yaml's "natural" key order, block style, sequences inside mappings not
//! indented, plain scalars folded at the first space past column 80, multi-line strings as literal
//! blocks, and quoting decided by go-yaml's YAML 1.1 resolver (so `"443"`, `"true"`, `"y"`, `""`
//! and date-like strings are double-quoted). Golden files written by upstream are compared against
//! this writer, which is why every rule here mirrors the libyaml emitter go-yaml is a port of.
//!
//! Input: YAML 1.1 as the Go side reads it (`yes`/`on` are booleans, `0777` is octal), one value
//! per document (the workspace's one reader, `olm_goenc::yamlread`).

use serde_json::Value;

pub use olm_goenc::yaml::{format_number, go_format_g, is_yaml_float, key_order, to_yaml};

/// Parses every YAML document of `text` into JSON values; empty documents are skipped, as the
/// Kubernetes YAML decoders skip them. YAML 1.1 rules as go-yaml v2 applies them: `yes`/`on`
/// are booleans, `0777` is octal, dates stay strings, `<<` merges, the last repeated key wins.
pub fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    olm_goenc::yamlread::parse_documents(text).map_err(|e| e.to_string())
}
