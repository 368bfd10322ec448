//! Text formats exactly as the Go tools write them, for the places where users and tools compare
//! our output with upstream's byte for byte: Go's `%q` quoting (every upstream error message
//! quotes names with it) and `%v` of a slice, `encoding/json`'s strings, numbers and error texts
//! ([`json`]), `encoding/base64`'s lenient decoder ([`base64`]), `time.ParseDuration` ([`duration`]), `strconv.ParseBool` ([`strconv`]) and sigs.k8s.io/yaml's YAML, written
//! ([`yaml`]) and read ([`yamlread`]).
//!
//! Not for: what the text means; each caller keeps its own model of the data it reads.

pub mod base64;
pub mod duration;
mod isprint;
pub mod json;
pub mod json_syntax;
pub mod strconv;
mod swar;
pub mod url;
mod verbs;
pub mod yaml;
pub mod yamlread;

pub use verbs::{quote, slice};
