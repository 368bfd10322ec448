//! `multiarch`: whether the images a CSV names support the platforms its labels
//! (`operatorframework.io/arch.<arch>: supported`, `operatorframework.io/os.<os>: supported`) and
//! its deployments' node affinity promise (api v0.45.0 `pkg/validation/internal/multiarch.go`).
//!
//! The decision is pure: the caller inspects the images ([`images`] lists them) and hands in
//! what each gave, platforms or why it could not be inspected; [`validate`] returns upstream's
//! findings, word for word. An image that could not be inspected gets upstream's warning
//! `unable to inspect the image (<image>) : <why>` and counts as supporting everything, as
//! upstream's `error/error` platform does.
//!
//! Upstream lists platforms with `docker manifest inspect`, which gives none for an image that
//! is not an index: every single-platform image is then reported as lacking every platform. The
//! caller here is expected to hand in such an image's own platform (olm's registry client reads
//! it from the image config), so a single-platform image is judged by what it is built for.
//!
//! The images are sorted where upstream walks Go maps (the manager, other and related images,
//! the missing-platform errors): its output order changes from run to run, ours does not.
//! Within one image's findings the order is upstream's.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use crate::apivalidate::{Finding, Level};
use crate::bundle::Bundle;

/// The optional value that names the container tool upstream inspects images with.
pub const CONTAINER_TOOLS_KEY: &str = "container-tools";

const ARCH_LABEL: &str = "operatorframework.io/arch.";
const OS_LABEL: &str = "operatorframework.io/os.";
/// The container operator-sdk scaffolds beside the manager; never taken for the manager.
const SCAFFOLDED_PROXY: &str = "kube-rbac-proxy";
/// The platform an image that could not be inspected stands for.
const ERROR: &str = "error";

/// A platform an image is built for, printed as upstream prints it: `os/architecture`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Platform {
    /// `linux`, `windows`, …
    pub os: String,
    /// `amd64`, `arm64`, …
    pub architecture: String,
}

impl Platform {
    /// The platform `os/architecture`.
    pub fn new(os: impl Into<String>, architecture: impl Into<String>) -> Platform {
        Platform {
            os: os.into(),
            architecture: architecture.into(),
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)
    }
}

/// What inspecting one image gave: the platforms it is built for, or why it could not be
/// inspected (the text follows upstream's `unable to inspect the image (<image>) : `).
pub type Inspection = Result<Vec<Platform>, String>;

/// Upstream's refusal of a `container-tools` value other than docker, podman or none (any
/// case; empty means docker). Upstream inspects with that tool; olm inspects through its own
/// registry client whatever the value, but refuses what upstream refuses.
pub fn container_tool_error(values: &BTreeMap<String, String>) -> Option<String> {
    let tool = values
        .get(CONTAINER_TOOLS_KEY)
        .map(|t| t.to_lowercase())
        .unwrap_or_default();
    (!["", "none", "docker", "podman"].contains(&tool.as_str())).then(|| {
        // The key and the value are in this order upstream.
        format!(
            "invalid value ({CONTAINER_TOOLS_KEY}) for ({tool}). One of: [docker, podman, none] (If not set, the default value is docker)"
        )
    })
}

/// The images of the CSV upstream sorts into three groups: the manager's (the containers named
/// `manager`, or every container but `kube-rbac-proxy` of a deployment without one), the other
/// deployment containers', and `spec.relatedImages`.
struct Groups {
    /// In the order found: upstream prints this list as it is.
    manager: Vec<String>,
    other: BTreeSet<String>,
    related: BTreeSet<String>,
    /// Each deployment image's node affinity platforms.
    affinity: BTreeMap<String, Vec<Platform>>,
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

fn groups(csv: &Value) -> Groups {
    let deployments = array(&csv["spec"]["install"]["spec"]["deployments"]);
    let mut manager: Vec<String> = Vec::new();
    let mut affinity = BTreeMap::new();
    for d in deployments {
        let pod = &d["spec"]["template"]["spec"];
        let containers = array(&pod["containers"]);
        let mut found = false;
        for c in containers {
            let image = text(&c["image"]);
            if manager.contains(&image) {
                continue;
            }
            if c["name"] == "manager" {
                manager.push(image.clone());
                found = true;
            }
            affinity.insert(image, node_affinity(pod));
        }
        if !found {
            for c in containers {
                let image = text(&c["image"]);
                if c["name"] != SCAFFOLDED_PROXY && !manager.contains(&image) {
                    manager.push(image);
                }
            }
        }
    }
    let other = deployments
        .iter()
        .flat_map(|d| array(&d["spec"]["template"]["spec"]["containers"]))
        .map(|c| text(&c["image"]))
        .filter(|i| !manager.contains(i))
        .collect();
    let related = array(&csv["spec"]["relatedImages"])
        .iter()
        .map(|r| text(&r["image"]))
        .collect();
    Groups {
        manager,
        other,
        related,
        affinity,
    }
}

/// The platforms a pod's required node affinity allows: per selector term, every `In` os
/// with every `In` architecture (the last expression of a key wins).
fn node_affinity(pod: &Value) -> Vec<Platform> {
    let terms = &pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    let mut out = Vec::new();
    for t in array(terms) {
        let (mut arches, mut oses): (&[Value], &[Value]) = (&[], &[]);
        for e in array(&t["matchExpressions"]) {
            if e["operator"] != "In" {
                continue;
            }
            match e["key"].as_str() {
                Some("kubernetes.io/arch") => arches = array(&e["values"]),
                Some("kubernetes.io/os") => oses = array(&e["values"]),
                _ => {}
            }
        }
        for o in oses {
            for a in arches {
                out.push(Platform::new(text(o), text(a)));
            }
        }
    }
    out
}

/// The images [`validate`] needs inspected, each once, sorted.
pub fn images(b: &Bundle) -> Vec<String> {
    let g = groups(&b.csv.raw);
    let all: BTreeSet<String> = g
        .manager
        .into_iter()
        .chain(g.other)
        .chain(g.related)
        .collect();
    all.into_iter().collect()
}

/// Go's `%q` of a list: `["a" "b"]`.
fn quoted<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let q: Vec<String> = items
        .into_iter()
        .map(|i| olm_goenc::quote(&i.to_string()))
        .collect();
    format!("[{}]", q.join(" "))
}

/// `multiarch` on `b`, with `values` (`container-tools`) and each image's [`Inspection`] (an
/// image missing from `inspected` counts as one that could not be inspected).
pub fn validate(
    b: &Bundle,
    values: &BTreeMap<String, String>,
    inspected: &BTreeMap<String, Inspection>,
) -> Vec<Finding> {
    let name = b.csv.name().to_owned();
    let failed = |level, detail: String| Finding {
        level,
        kind: "ValidationFailed",
        field: String::new(),
        value: Some(name.clone()),
        detail,
    };
    if let Some(e) = container_tool_error(values) {
        return vec![failed(Level::Error, e)];
    }
    let csv = &b.csv.raw;
    let labels: Vec<String> = csv["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, v)| *v == "supported")
        .map(|(k, _)| k.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let arch_labels: Vec<&String> = labels.iter().filter(|k| k.contains(ARCH_LABEL)).collect();
    let os_labels: Vec<&String> = labels.iter().filter(|k| k.contains(OS_LABEL)).collect();
    let g = groups(csv);

    let mut warns = Vec::new();
    let mut inspect =
        |images: &mut dyn Iterator<Item = &String>| -> BTreeMap<String, Vec<Platform>> {
            let mut out = BTreeMap::new();
            for image in images {
                let platforms = match inspected.get(image) {
                    Some(Ok(p)) => p.clone(),
                    Some(Err(why)) => {
                        warns.push(format!("unable to inspect the image ({image}) : {why}"));
                        vec![Platform::new(ERROR, ERROR)]
                    }
                    None => {
                        warns.push(format!(
                            "unable to inspect the image ({image}) : the image was not inspected"
                        ));
                        vec![Platform::new(ERROR, ERROR)]
                    }
                };
                out.insert(image.clone(), platforms);
            }
            out
        };
    let mut manager_sorted: Vec<&String> = g.manager.iter().collect();
    manager_sorted.sort();
    let manager = inspect(&mut manager_sorted.into_iter());
    let other = inspect(&mut g.other.iter());
    let related = inspect(&mut g.related.iter());

    let extract = |labels: &[&String], prefix: &str| -> Vec<String> {
        labels.iter().map(|l| l.replace(prefix, "")).collect()
    };
    let (archs_labelled, oses_labelled) = (
        extract(&arch_labels, ARCH_LABEL),
        extract(&os_labels, OS_LABEL),
    );
    let supported = |labelled: &[String], default: &str, of: fn(&Platform) -> &String| {
        let mut all: BTreeSet<String> = labelled.iter().cloned().collect();
        if labelled.is_empty() {
            all.insert(default.to_owned());
        }
        for p in manager.values().flatten() {
            if !of(p).is_empty() {
                all.insert(of(p).clone());
            }
        }
        all
    };
    let manager_archs = supported(&archs_labelled, "amd64", |p| &p.architecture);
    let manager_oses = supported(&oses_labelled, "linux", |p| &p.os);

    // The platforms the labels promise, which every image must provide.
    let or_default = |labelled: &[String], default: &str| {
        if labelled.is_empty() {
            vec![default.to_owned()]
        } else {
            labelled.to_vec()
        }
    };
    let configured: Vec<String> = or_default(&oses_labelled, "linux")
        .iter()
        .flat_map(|os| {
            or_default(&archs_labelled, "amd64")
                .into_iter()
                .map(move |arch| format!("{os}.{arch}"))
        })
        .collect();
    let mut unsupported: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
    for images in [&manager, &other, &related] {
        for config in &configured {
            for (image, platforms) in images {
                let found = platforms
                    .iter()
                    .any(|p| p.os == ERROR || *config == format!("{}.{}", p.os, p.architecture));
                if !found {
                    unsupported.entry(config).or_default().push(image);
                }
            }
        }
    }
    let mut errors = Vec::new();
    for (platform, mut images) in unsupported {
        images.sort();
        let listed: Vec<&str> = images.iter().map(|i| i.as_str()).collect();
        errors.push(format!(
            "not all images specified are providing the support described via the CSV labels. Note that (OS.architecture): ({platform}) was not found for the image(s) [{}]",
            listed.join(" ")
        ));
    }

    let manager_list = quoted(&g.manager);
    let missing_labels = |supported: &BTreeSet<String>, labels: &[&String], default: &str| {
        let missing: Vec<&String> = supported
            .iter()
            .filter(|s| {
                !labels.iter().any(|l| l.contains(s.as_str()))
                    && *s != ERROR
                    && !(*s == default && supported.len() == 1)
            })
            .collect();
        (!missing.is_empty()).then(|| quoted(missing))
    };
    if let Some(archs) = missing_labels(&manager_archs, &arch_labels, "amd64") {
        warns.push(format!(
            "check if the CSV is missing the label ({ARCH_LABEL}<value>) for the Arch(s): {archs}. Be aware that your Operator manager image {manager_list} provides this support. Thus, it is very likely that you want to provide it and if you support more than amd64 architectures, you MUST,use the required labels for all which are supported.Otherwise, your solution cannot be listed on the cluster for these architectures"
        ));
    }
    if let Some(oses) = missing_labels(&manager_oses, &os_labels, "linux") {
        warns.push(format!(
            "check if the CSV is missing the label ({OS_LABEL}<value>) for the OS(s): {oses}. Be aware that your Operator manager image {manager_list} provides this support. Thus, it is very likely that you want to provide it and if you support more than linux OS you MUST,use the required labels for all which are supported.Otherwise, your solution cannot be listed on the cluster for these architectures"
        ));
    }

    for images in [&other, &related] {
        for (image, platforms) in images {
            let lacking = |supported: &BTreeSet<String>, of: fn(&Platform) -> &String| {
                let missing: Vec<&String> = supported
                    .iter()
                    .filter(|s| {
                        *s != ERROR && !platforms.iter().any(|p| of(p) == ERROR || of(p) == *s)
                    })
                    .collect();
                (!missing.is_empty()).then(|| quoted(missing))
            };
            if let Some(archs) = lacking(&manager_archs, |p| &p.architecture) {
                warns.push(format!(
                    "check if the image {image} should not support {archs}. Note that this CSV has labels for this Arch(s) Your manager image {manager_list} are providing this support OR the CSV is configured via labels to support it. Then, please verify if this image should not support it"
                ));
            }
            if let Some(oses) = lacking(&manager_oses, |p| &p.os) {
                warns.push(format!(
                    "check if the image {image} should not support {oses}. Note that this CSV has labels for this OS(s) Your manager image {manager_list} are providing this support OR the CSV is configured via labels to support it. Then, please verify if this image should not support it"
                ));
            }
        }
    }

    for images in [&manager, &other] {
        for (image, platforms) in images {
            let q_image = olm_goenc::quote(image);
            let affinity = g.affinity.get(image).map_or(&[][..], Vec::as_slice);
            if affinity.is_empty() {
                if platforms.iter().any(|p| p.architecture == ERROR) {
                    warns.push(format!(
                        "check if the CSV is missing a node affinity configuration for the image: {q_image}. "
                    ));
                }
                warns.push(format!(
                    "check if the CSV has a missing or invalid node affinity configuration for the image: {q_image}. The image data suggests the following platforms are supported: {}",
                    quoted(platforms)
                ));
                continue;
            }
            let extra: Vec<&Platform> =
                affinity.iter().filter(|a| !platforms.contains(a)).collect();
            let missing: Vec<&Platform> =
                platforms.iter().filter(|p| !affinity.contains(p)).collect();
            if !extra.is_empty() {
                warns.push(format!(
                    "the CSV includes {} in the node affinity configuration for the image: {q_image}, but the image data suggests the following platforms are supported: {}",
                    quoted(extra),
                    quoted(platforms)
                ));
            }
            if !missing.is_empty() {
                warns.push(format!(
                    "the image data indicates {} is supported for the image: {q_image}, but the node affinity configuration for the image only specifies {}",
                    quoted(missing),
                    quoted(affinity)
                ));
            }
        }
    }

    warns
        .into_iter()
        .map(|w| failed(Level::Warning, w))
        .chain(errors.into_iter().map(|e| failed(Level::Error, e)))
        .collect()
}
