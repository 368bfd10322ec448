//! Pinning a CSV's images to digests (`olm bundle generate --use-image-digests`), as
//! operator-sdk does through operator-manifest-tools: the image references a disconnected
//! cluster has to mirror — `relatedImages`, every container and init container of the install
//! strategy's deployments, their `RELATED_IMAGE_*` variables and the `containerImage` annotation
//! — are rewritten from tags to the digests a registry gives for them. Looking the digests up is
//! the caller's part; this module only finds the references and rewrites them.
//!
//! Difference: operator-manifest-tools also rewrites image-like strings it finds by heuristics
//! in other annotations; those are left as written, since a guess can rewrite text that only
//! looks like an image.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

/// Calls `f` on every image reference of `csv` that pinning covers.
fn each_image(csv: &mut Value, f: &mut impl FnMut(&mut String)) {
    let mut visit = |v: &mut Value| {
        if let Value::String(s) = v {
            f(s);
        }
    };
    if let Some(v) = csv.pointer_mut("/metadata/annotations/containerImage") {
        visit(v);
    }
    for related in csv["spec"]["relatedImages"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if let Some(v) = related.get_mut("image") {
            visit(v);
        }
    }
    let deployments = csv["spec"]["install"]["spec"]["deployments"].as_array_mut();
    for d in deployments.into_iter().flatten() {
        let pod = &mut d["spec"]["template"]["spec"];
        for key in ["initContainers", "containers"] {
            for c in pod[key].as_array_mut().into_iter().flatten() {
                if let Some(v) = c.get_mut("image") {
                    visit(v);
                }
                for e in c["env"].as_array_mut().into_iter().flatten() {
                    let related = e["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("RELATED_IMAGE_"));
                    if related && let Some(v) = e.get_mut("value") {
                        visit(v);
                    }
                }
            }
        }
    }
}

/// The references of `csv` that are not pinned to a digest yet, each once, in order.
pub fn unpinned_images(csv: &Value) -> BTreeSet<String> {
    let mut csv = csv.clone();
    let mut out = BTreeSet::new();
    each_image(&mut csv, &mut |s| {
        if !s.is_empty() && !s.contains('@') {
            out.insert(s.clone());
        }
    });
    out
}

/// Rewrites every reference of `csv` that `pinned` maps (tag reference → digest reference),
/// then lists every container image the deployments run in `relatedImages` if it is not there
/// yet (named after its container, as the disconnected-mode example of the OpenShift docs does),
/// so that a mirror sees the operator's own image too. Returns how many places changed.
pub fn pin_images(csv: &mut Value, pinned: &BTreeMap<String, String>) -> usize {
    let mut changed = 0;
    each_image(csv, &mut |s| {
        if let Some(p) = pinned.get(s.as_str()) {
            *s = p.clone();
            changed += 1;
        }
    });
    let mut run: Vec<(String, String)> = Vec::new(); // (container, image)
    let deployments = csv["spec"]["install"]["spec"]["deployments"].as_array();
    for d in deployments.into_iter().flatten() {
        let pod = &d["spec"]["template"]["spec"];
        for c in ["initContainers", "containers"]
            .iter()
            .flat_map(|k| pod[*k].as_array().into_iter().flatten())
        {
            if let Some(image) = c["image"].as_str().filter(|i| !i.is_empty()) {
                let container = c["name"].as_str().unwrap_or_default();
                run.push((container.to_owned(), image.to_owned()));
            }
        }
    }
    if run.is_empty() {
        return changed;
    }
    let Some(spec) = csv["spec"].as_object_mut() else {
        return changed;
    };
    let related = spec.entry("relatedImages").or_insert_with(|| json!([]));
    if related.is_null() {
        *related = json!([]);
    }
    if let Some(related) = related.as_array_mut() {
        for (container, image) in run {
            if related.iter().any(|r| r["image"] == image.as_str()) {
                continue;
            }
            let taken = related.iter().any(|r| r["name"] == container.as_str());
            let name = if taken { String::new() } else { container };
            related.push(json!({"name": name, "image": image}));
            changed += 1;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_covered_place_is_pinned_and_nothing_else() {
        let mut csv = json!({
            "metadata": {"annotations": {
                "containerImage": "quay.io/o/op:v1",
                "description": "quay.io/o/op:v1",
            }},
            "spec": {
                "relatedImages": [
                    {"name": "op", "image": "quay.io/o/op:v1"},
                    {"name": "db", "image": "quay.io/o/db@sha256:aa"},
                ],
                "install": {"spec": {"deployments": [{"spec": {"template": {"spec": {
                    "initContainers": [{"name": "init", "image": "quay.io/o/init:v1"}],
                    "containers": [{"image": "quay.io/o/op:v1", "env": [
                        {"name": "RELATED_IMAGE_PROXY", "value": "quay.io/o/proxy:v2"},
                        {"name": "OTHER", "value": "quay.io/o/other:v3"},
                    ]}],
                }}}}]}},
            },
        });
        let found = unpinned_images(&csv);
        assert_eq!(
            found.iter().map(String::as_str).collect::<Vec<_>>(),
            ["quay.io/o/init:v1", "quay.io/o/op:v1", "quay.io/o/proxy:v2"]
        );
        let pinned: BTreeMap<String, String> = found
            .iter()
            .map(|r| {
                (
                    r.clone(),
                    format!("{}@sha256:ff", r.split(':').next().unwrap()),
                )
            })
            .collect();
        // Five references, and the init container's image joins relatedImages.
        assert_eq!(pin_images(&mut csv, &pinned), 6);
        assert_eq!(
            csv["spec"]["relatedImages"][2],
            json!({"name": "init", "image": "quay.io/o/init@sha256:ff"})
        );
        assert_eq!(
            csv["metadata"]["annotations"]["containerImage"],
            "quay.io/o/op@sha256:ff"
        );
        assert_eq!(
            csv["metadata"]["annotations"]["description"],
            "quay.io/o/op:v1"
        );
        assert_eq!(
            csv["spec"]["relatedImages"][1]["image"],
            "quay.io/o/db@sha256:aa"
        );
        let pod = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
        assert_eq!(
            pod["initContainers"][0]["image"],
            "quay.io/o/init@sha256:ff"
        );
        assert_eq!(
            pod["containers"][0]["env"][0]["value"],
            "quay.io/o/proxy@sha256:ff"
        );
        assert_eq!(
            pod["containers"][0]["env"][1]["value"],
            "quay.io/o/other:v3"
        );
        assert!(unpinned_images(&csv).is_empty());
    }
}
