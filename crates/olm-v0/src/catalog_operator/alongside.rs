//! The installed-alongside annotations (upstream's `internal/alongside` and the step builder's
//! `setInstalledAlongsideAnnotation`): a CRD an InstallPlan creates or updates records, per CSV
//! it was installed with, `operatorframework.io/installed-alongside-<fnv1a64("ns/name")>:
//! ns/name`. Tools and OLM itself read them to tell which operator versions brought an object.

use serde_json::{Map, Value};

/// The annotation keys' prefix.
pub const ANNOTATION_PREFIX: &str = "operatorframework.io/installed-alongside-";

/// The annotation key for the CSV `namespace/name`.
pub fn key(namespace: &str, name: &str) -> String {
    format!(
        "{ANNOTATION_PREFIX}{}",
        crate::hash::fnv1a_64_hex(format!("{namespace}/{name}").as_bytes())
    )
}

/// The CSVs (`(namespace, name)`) `annotations` name; values not of the form `ns/name` are
/// ignored, as upstream's `FromObject` does.
pub fn references(annotations: Option<&Map<String, Value>>) -> Vec<(String, String)> {
    annotations
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(ANNOTATION_PREFIX))
        .filter_map(|(_, v)| {
            let v = v.as_str()?;
            let mut parts = v.split('/');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(ns), Some(name), None) => Some((ns.to_owned(), name.to_owned())),
                _ => None,
            }
        })
        .collect()
}

/// Rewrites `dst`'s installed-alongside annotations: the references of each of `sources` (the
/// new object and, on update, the one on the cluster) that still name an existing, non-copied
/// CSV (`exists`), other than the one being installed, then `namespace/resolving` itself. Only
/// live CSVs are kept so that the list cannot grow without bound.
pub fn annotate(
    dst: &mut Value,
    sources: &[Option<&Map<String, Value>>],
    namespace: &str,
    resolving: &str,
    exists: impl Fn(&str, &str) -> bool,
) {
    let mut keep: Vec<(String, String)> = Vec::new();
    for source in sources {
        for (ns, name) in references(*source) {
            if (ns == namespace && name == resolving) || !exists(&ns, &name) {
                continue;
            }
            if !keep.contains(&(ns.clone(), name.clone())) {
                keep.push((ns, name));
            }
        }
    }
    if !namespace.is_empty() && !resolving.is_empty() {
        keep.push((namespace.to_owned(), resolving.to_owned()));
    }
    let Some(metadata) = dst.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    let Some(map) = annotations.as_object_mut() else {
        return;
    };
    map.retain(|k, _| !k.starts_with(ANNOTATION_PREFIX));
    for (ns, name) in keep {
        map.insert(key(&ns, &name), Value::String(format!("{ns}/{name}")));
    }
    if map.is_empty() {
        metadata.remove("annotations");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn annotations(v: &Value) -> Option<&Map<String, Value>> {
        v.pointer("/metadata/annotations")
            .and_then(Value::as_object)
    }

    /// Upstream's `alongside_test.go` `TestAnnotatorFromObject`.
    #[test]
    fn references_are_read_as_upstream_reads_them() {
        let obj = json!({"metadata": {"annotations": {
            "foo": "namespace/name",
            "operatorframework.io/installed-alongside-0": "namespace/name/color",
            "operatorframework.io/installed-alongside-1": "namespace-0/name-0",
            "operatorframework.io/installed-alongside-2": "namespace-1/name-1",
        }}});
        let mut refs = references(annotations(&obj));
        refs.sort();
        assert_eq!(
            refs,
            vec![
                ("namespace-0".to_owned(), "name-0".to_owned()),
                ("namespace-1".to_owned(), "name-1".to_owned())
            ]
        );
    }

    /// Upstream's `TestAnnotatorToObject` and `setInstalledAlongsideAnnotation`: keys are the
    /// FNV-1a of `ns/name` (Go's value), other annotations stay, stale and self references go.
    #[test]
    fn annotate_keeps_live_csvs_and_adds_the_one_installing() {
        assert_eq!(
            key("namespace-0", "name-0"),
            "operatorframework.io/installed-alongside-69efe9f983f66e80"
        );
        let current = json!({"metadata": {"annotations": {
            key("ns", "old.v1"): "ns/old.v1",
            key("ns", "gone.v1"): "ns/gone.v1",
            key("ns", "new.v2"): "ns/new.v2",
            "keep": "me",
        }}});
        let mut dst = json!({"metadata": {"name": "x", "annotations": {"other": "1"}}});
        let src = dst.clone();
        annotate(
            &mut dst,
            &[annotations(&src), annotations(&current)],
            "ns",
            "new.v2",
            |_, name| name != "gone.v1",
        );
        assert_eq!(
            dst["metadata"]["annotations"],
            json!({"other": "1", key("ns", "old.v1"): "ns/old.v1", key("ns", "new.v2"): "ns/new.v2"})
        );
    }

    #[test]
    fn nothing_to_record_leaves_no_annotations() {
        let mut dst = json!({"metadata": {"name": "x"}});
        annotate(&mut dst, &[None], "ns", "", |_, _| true);
        assert_eq!(dst, json!({"metadata": {"name": "x"}}));
    }
}
