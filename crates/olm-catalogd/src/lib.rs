//! The catalog server of OLM v1: the ClusterCatalog controller and the catalog HTTP API.
//!
//! What it is for: making catalogs live on a cluster. [`controller`] watches ClusterCatalogs,
//! pulls their images with `olm-image`, reads the FBC with `olm-catalog` and hands it to
//! [`storage`], which keeps canonical `catalog.jsonl` plus a byte-offset [`index`] per catalog,
//! keyed by digest and kept across restarts. [`server`] serves that content at
//! `/catalogs/{name}/api/v1/all` and `/catalogs/{name}/api/v1/metas`, with catalogd's status
//! codes, bodies and headers. [`webhook`] is the admission webhook that labels each catalog with
//! its name. [`browser`] serves the catalog browser (`/browse/`) from the same content.
//! [`connections`] decides which connections a listener keeps when clients compete for them.
//!
//! What it is not for: resolving or installing anything (that reads these catalogs over HTTP),
//! or parsing FBC itself (`olm-catalog` does).

pub mod browser;
pub mod controller;
pub mod index;
pub mod metrics;
pub mod run;
pub mod server;
pub mod storage;
pub mod warmup;
pub mod webhook;

pub use run::{Options, Tls, run};
