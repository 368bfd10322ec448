//! opm's YAML output (`opm render -o yaml`): go-yaml v2 through sigs.k8s.io/yaml, shared with
//! every other writer of Go-compatible YAML in the workspace.

pub use olm_goenc::yaml::{key_order as key_cmp, to_yaml, to_yaml_into};
