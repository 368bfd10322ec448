//! The metas index: byte sections of `catalog.jsonl` by schema, package and name.
//!
//! A query intersects the sets selected by each non-empty parameter (no schema means every blob
//! that has one) and returns the sections in file order, so a filtered response is a byte-exact
//! subsequence of `/api/v1/all`. Stored beside the content as `index.json` in catalogd's format:
//! `{"by_schema":{…},"by_package":{…},"by_name":{…}}`, each value a list of `[offset,length]`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// A blob's place in `catalog.jsonl`, its trailing newline included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(from = "[u64; 2]", into = "[u64; 2]")]
pub struct Section {
    /// Byte offset.
    pub offset: u64,
    /// Byte length.
    pub length: u64,
}

impl From<[u64; 2]> for Section {
    fn from([offset, length]: [u64; 2]) -> Section {
        Section { offset, length }
    }
}

impl From<Section> for [u64; 2] {
    fn from(s: Section) -> [u64; 2] {
        [s.offset, s.length]
    }
}

/// Sections by schema, package and name. Each list is in file order.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Index {
    /// By `schema`.
    #[serde(rename = "by_schema")]
    pub by_schema: BTreeMap<String, Vec<Section>>,
    /// By `package` (an `olm.package` blob has none: its own name is its `name`).
    #[serde(rename = "by_package")]
    pub by_package: BTreeMap<String, Vec<Section>>,
    /// By `name`.
    #[serde(rename = "by_name")]
    pub by_name: BTreeMap<String, Vec<Section>>,
    /// Every section that has a schema, sorted; built on first use by a query without a schema.
    #[serde(skip)]
    with_schema: OnceLock<Vec<Section>>,
}

impl PartialEq for Index {
    fn eq(&self, other: &Index) -> bool {
        self.by_schema == other.by_schema
            && self.by_package == other.by_package
            && self.by_name == other.by_name
    }
}

impl Eq for Index {}

impl Index {
    /// Records the next blob; blobs must be added in file order.
    pub fn add(&mut self, section: Section, schema: &str, package: &str, name: &str) {
        for (map, key) in [
            (&mut self.by_schema, schema),
            (&mut self.by_package, package),
            (&mut self.by_name, name),
        ] {
            if !key.is_empty() {
                map.entry(key.to_string()).or_default().push(section);
            }
        }
        self.with_schema = OnceLock::new();
    }

    /// The sections matching every non-empty parameter, in file order.
    pub fn query(&self, schema: &str, package: &str, name: &str) -> Vec<Section> {
        // Start from the narrowest list, then keep what the other filters also select. Lists are
        // sorted by offset, so membership is a binary search and the result stays in file order.
        let mut filters: Vec<&[Section]> = Vec::with_capacity(3);
        let empty: &[Section] = &[];
        if schema.is_empty() {
            filters.push(self.with_schema.get_or_init(|| {
                let mut every: Vec<Section> = self.by_schema.values().flatten().copied().collect();
                every.sort_unstable();
                every
            }));
        } else {
            filters.push(self.by_schema.get(schema).map_or(empty, Vec::as_slice));
        }
        if !package.is_empty() {
            filters.push(self.by_package.get(package).map_or(empty, Vec::as_slice));
        }
        if !name.is_empty() {
            filters.push(self.by_name.get(name).map_or(empty, Vec::as_slice));
        }
        filters.sort_by_key(|f| f.len());
        let (first, rest) = filters
            .split_first()
            .map_or((empty, &[][..]), |(f, r)| (*f, r));
        first
            .iter()
            .filter(|s| rest.iter().all(|other| other.binary_search(s).is_ok()))
            .copied()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(offset: u64) -> Section {
        Section { offset, length: 1 }
    }

    fn sample() -> Index {
        let mut idx = Index::default();
        idx.add(s(0), "olm.package", "", "foo");
        idx.add(s(1), "olm.channel", "foo", "stable");
        idx.add(s(2), "olm.bundle", "foo", "foo.v1");
        idx.add(s(3), "olm.package", "", "bar");
        idx.add(s(4), "olm.bundle", "bar", "foo.v1");
        idx.add(s(5), "olm.deprecations", "foo", "");
        idx
    }

    #[test]
    fn intersects_and_keeps_file_order() {
        let idx = sample();
        let offs = |v: Vec<Section>| v.into_iter().map(|s| s.offset).collect::<Vec<_>>();
        assert_eq!(offs(idx.query("", "", "")), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(offs(idx.query("olm.bundle", "", "")), vec![2, 4]);
        assert_eq!(offs(idx.query("", "foo", "")), vec![1, 2, 5]);
        assert_eq!(offs(idx.query("", "", "foo.v1")), vec![2, 4]);
        assert_eq!(offs(idx.query("olm.bundle", "bar", "foo.v1")), vec![4]);
        assert_eq!(offs(idx.query("", "", "foo")), vec![0]);
        assert!(idx.query("nope", "", "").is_empty());
        assert!(idx.query("olm.bundle", "baz", "").is_empty());
    }

    #[test]
    fn json_form_is_catalogds() {
        let mut idx = Index::default();
        idx.add(
            Section {
                offset: 0,
                length: 10,
            },
            "olm.package",
            "",
            "foo",
        );
        let json = serde_json::to_string(&idx).expect("json");
        assert_eq!(
            json,
            r#"{"by_schema":{"olm.package":[[0,10]]},"by_package":{},"by_name":{"foo":[[0,10]]}}"#
        );
        let back: Index = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, idx);
    }
}
