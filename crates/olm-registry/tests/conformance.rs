//! olm's registry answers, call by call, against what opm v1.74.0's `opm serve` answered for the
//! community catalog of the data set (`golden/community-v4.21.tsv`, made by
//! `tools/oracles/registry-golden.sh` through grpcurl; remade by `tools/oracles/regen.sh`).
//!
//! Each answer is compared as that script records it: every response message as grpcurl's JSON
//! (protobuf JSON names, default values left out) with sorted keys, the messages sorted and
//! joined by newlines, then SHA-256; errors by their message. Where opm answers in Go map order
//! (`GetBundleThatReplaces` with several bundles replacing or skipping the name), the golden line
//! lists every answer opm gave over 16 calls, and olm's must be one of them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use olm_registry::{Registry, api};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

fn data() -> PathBuf {
    std::env::var_os("OLM_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"))
}

/// Inserts `v` under `k` unless it is protobuf's default (empty string or list, absent message).
fn put(m: &mut Map<String, Value>, k: &str, v: Value) {
    let default = match &v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    if !default {
        m.insert(k.to_owned(), v);
    }
}

fn deprecation(d: Option<&api::Deprecation>) -> Value {
    d.map_or(Value::Null, |d| {
        let mut m = Map::new();
        put(&mut m, "message", json!(d.message));
        Value::Object(m)
    })
}

fn gvks(list: &[api::GroupVersionKind]) -> Value {
    Value::Array(
        list.iter()
            .map(|g| {
                let mut m = Map::new();
                put(&mut m, "group", json!(g.group));
                put(&mut m, "version", json!(g.version));
                put(&mut m, "kind", json!(g.kind));
                put(&mut m, "plural", json!(g.plural));
                Value::Object(m)
            })
            .collect(),
    )
}

fn typed(list: impl Iterator<Item = (String, String)>) -> Value {
    Value::Array(
        list.map(|(t, v)| {
            let mut m = Map::new();
            put(&mut m, "type", json!(t));
            put(&mut m, "value", json!(v));
            Value::Object(m)
        })
        .collect(),
    )
}

fn bundle(b: &api::Bundle) -> Value {
    let mut m = Map::new();
    put(&mut m, "csvName", json!(b.csv_name));
    put(&mut m, "packageName", json!(b.package_name));
    put(&mut m, "channelName", json!(b.channel_name));
    put(&mut m, "csvJson", json!(b.csv_json));
    put(&mut m, "object", json!(b.object));
    put(&mut m, "bundlePath", json!(b.bundle_path));
    put(&mut m, "providedApis", gvks(&b.provided_apis));
    put(&mut m, "requiredApis", gvks(&b.required_apis));
    put(&mut m, "version", json!(b.version));
    put(&mut m, "skipRange", json!(b.skip_range));
    put(
        &mut m,
        "dependencies",
        typed(
            b.dependencies
                .iter()
                .map(|d| (d.r#type.clone(), d.value.clone())),
        ),
    );
    put(
        &mut m,
        "properties",
        typed(
            b.properties
                .iter()
                .map(|p| (p.r#type.clone(), p.value.clone())),
        ),
    );
    put(&mut m, "replaces", json!(b.replaces));
    put(&mut m, "skips", json!(b.skips));
    put(&mut m, "deprecation", deprecation(b.deprecation.as_ref()));
    Value::Object(m)
}

fn package(p: &api::Package) -> Value {
    let mut m = Map::new();
    put(&mut m, "name", json!(p.name));
    let channels: Vec<Value> = p
        .channels
        .iter()
        .map(|c| {
            let mut m = Map::new();
            put(&mut m, "name", json!(c.name));
            put(&mut m, "csvName", json!(c.csv_name));
            put(&mut m, "deprecation", deprecation(c.deprecation.as_ref()));
            Value::Object(m)
        })
        .collect();
    put(&mut m, "channels", Value::Array(channels));
    put(&mut m, "defaultChannelName", json!(p.default_channel_name));
    put(&mut m, "deprecation", deprecation(p.deprecation.as_ref()));
    Value::Object(m)
}

fn entry(e: &api::ChannelEntry) -> Value {
    let mut m = Map::new();
    put(&mut m, "packageName", json!(e.package_name));
    put(&mut m, "channelName", json!(e.channel_name));
    put(&mut m, "bundleName", json!(e.bundle_name));
    put(&mut m, "replaces", json!(e.replaces));
    Value::Object(m)
}

/// What the script records for a successful call: the digest of the sorted, key-sorted messages.
fn digest(messages: Vec<Value>) -> String {
    let mut lines: Vec<String> = messages
        .iter()
        .map(|v| serde_json::to_string(&olm_goenc::json::sort_keys(v)).unwrap())
        .collect();
    lines.sort();
    let mut text = lines.join("\n");
    text.push('\n');
    let hex: String = Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

fn answer(r: &Registry, method: &str, req: &Value) -> String {
    let s = |k: &str| req[k].as_str().unwrap_or_default().to_owned();
    let result: Result<Vec<Value>, olm_registry::queries::QueryError> = match method {
        "ListPackages" => Ok(r
            .list_packages()
            .iter()
            .map(|p| json!({"name": p.name}))
            .collect()),
        "ListBundles" => Ok((0..r.listing.len())
            .filter_map(|i| r.listed(i))
            .map(|b| bundle(&b))
            .collect()),
        "GetPackage" => r.get_package(&s("name")).map(|p| vec![package(&p)]),
        "GetBundle" => r
            .get_bundle(&s("pkgName"), &s("channelName"), &s("csvName"))
            .map(|b| vec![bundle(&b)]),
        "GetBundleForChannel" => r
            .get_bundle_for_channel(&s("pkgName"), &s("channelName"))
            .map(|b| vec![bundle(&b)]),
        "GetBundleThatReplaces" => r
            .bundle_that_replaces(&s("csvName"), &s("pkgName"), &s("channelName"))
            .map(|b| vec![bundle(&b)]),
        "GetChannelEntriesThatReplace" => r
            .channel_entries_that_replace(&s("csvName"))
            .map(|e| e.iter().map(entry).collect()),
        "GetChannelEntriesThatProvide" => r
            .channel_entries_that_provide(&s("group"), &s("version"), &s("kind"))
            .map(|e| e.iter().map(entry).collect()),
        "GetLatestChannelEntriesThatProvide" => r
            .latest_channel_entries_that_provide(&s("group"), &s("version"), &s("kind"))
            .map(|e| e.iter().map(entry).collect()),
        "GetDefaultBundleThatProvides" => r
            .default_bundle_that_provides(&s("group"), &s("version"), &s("kind"))
            .map(|b| vec![bundle(&b)]),
        other => panic!("no such method {other}"),
    };
    match result {
        Ok(messages) => digest(messages),
        Err(e) => format!("error:{e}"),
    }
}

#[test]
fn answers_as_opm_serve_does() {
    let catalog_dir = data().join("catalogs/community-v4.21");
    let catalog = olm_catalog::load::load_path(&catalog_dir).unwrap();
    let registry = Registry::build(&catalog, String::new()).unwrap();
    let golden = include_str!("golden/community-v4.21.tsv");
    let mut calls = 0;
    let mut failed = Vec::new();
    for line in golden.lines().filter(|l| !l.starts_with('#')) {
        let mut parts = line.splitn(3, '\t');
        let (method, req, want) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let req: Value = serde_json::from_str(req).unwrap();
        let got = answer(&registry, method, &req);
        calls += 1;
        // Where opm's answer depends on Go map order, every answer it gave is listed.
        if !want.split('|').any(|w| w == got) {
            failed.push(format!("{method} {req}: opm {want}, olm {got}"));
        }
    }
    assert!(calls > 1000, "only {calls} calls recorded");
    assert!(
        failed.is_empty(),
        "{} of {calls} calls differ:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
