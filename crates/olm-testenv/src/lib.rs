//! A real local Kubernetes control plane and OCI registry for tests and `olm dev`.

pub mod registry;
