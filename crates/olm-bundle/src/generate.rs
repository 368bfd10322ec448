//! Generating a registry+v1 bundle from an operator's cluster-ready manifests, as
//! `operator-sdk generate bundle` does (operator-sdk `internal/generate/collector`,
//! `internal/generate/clusterserviceversion`, `internal/util/bundleutil`): the CSV's install
//! strategy (deployments, `permissions` and `clusterPermissions` from the RBAC bound to the
//! deployments' service accounts), owned CRDs, webhook definitions, related images and examples
//! derived from the manifests; everything else from a base CSV; the other objects, the
//! metadata annotations and `bundle.Dockerfile` beside it.
//!
//! Differences, for regenerations that change nothing: `createdAt` is kept from the CSV being
//! regenerated (upstream writes the time of every run); the base's `relatedImages` entries that
//! no `RELATED_IMAGE_*` variable gives are kept (upstream drops them); leftover RBAC files are
//! named in input order (upstream's `dup<N>_` numbering follows Go map order).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use crate::bundle;

mod pin;
pub use pin::{pin_images, unpinned_images};

/// What to generate.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The package name.
    pub package: String,
    /// The bundle version (`<package>.v<version>` names the CSV); `None` keeps the base's.
    pub version: Option<String>,
    /// The channels, comma-separated, written as given.
    pub channels: String,
    /// The default channel, if any.
    pub default_channel: Option<String>,
    /// Service accounts besides the deployments' whose RBAC goes into the CSV.
    pub extra_service_accounts: Vec<String>,
    /// The value of the `operators.operatorframework.io/builder` annotation.
    pub builder: String,
    /// `createdAt` when the base has none.
    pub created_at: String,
}

/// A generated bundle.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The CSV.
    pub csv: Value,
    /// The other objects for `manifests/`, with their file names.
    pub objects: Vec<(String, Value)>,
    /// `metadata/annotations.yaml`'s annotations, in file order.
    pub annotations: Vec<(String, String)>,
    /// The scorecard configuration for `tests/scorecard/config.yaml`, if the manifests hold one.
    pub scorecard: Option<Value>,
}

/// Where the scorecard configuration goes in a bundle.
pub const SCORECARD_DIR: &str = "tests/scorecard/";
const TEST_MEDIATYPE: &str = "operators.operatorframework.io.test.mediatype.v1";

const DEFAULT_SA: &str = "default";

fn group_of(v: &Value) -> &str {
    v["apiVersion"]
        .as_str()
        .and_then(|a| a.split_once('/').map(|(g, _)| g))
        .unwrap_or_default()
}

fn kind(v: &Value) -> &str {
    v["kind"].as_str().unwrap_or_default()
}

fn name(v: &Value) -> &str {
    v["metadata"]["name"].as_str().unwrap_or_default()
}

/// The manifests sorted by what becomes of them.
#[derive(Default)]
struct Collected<'a> {
    csvs: Vec<&'a Value>,
    roles: Vec<&'a Value>,
    cluster_roles: Vec<&'a Value>,
    role_bindings: Vec<&'a Value>,
    cluster_role_bindings: Vec<&'a Value>,
    service_accounts: Vec<&'a Value>,
    services: Vec<&'a Value>,
    deployments: Vec<&'a Value>,
    crds: Vec<&'a Value>,
    validating: Vec<&'a Value>,
    mutating: Vec<&'a Value>,
    scorecard: Option<&'a Value>,
    others: Vec<&'a Value>,
}

fn collect(input: &[Value]) -> Result<Collected<'_>, String> {
    let mut c = Collected::default();
    let mut seen = BTreeSet::new();
    for v in input {
        if v["apiVersion"].as_str().is_none_or(str::is_empty) || kind(v).is_empty() {
            continue;
        }
        match (group_of(v), kind(v)) {
            ("operators.coreos.com", "ClusterServiceVersion") => c.csvs.push(v),
            ("rbac.authorization.k8s.io", k) if k.ends_with("Role") || k.ends_with("Binding") => {
                // Exact duplicates of roles are dropped (bindings are kept as given).
                let list = match k {
                    "Role" => &mut c.roles,
                    "ClusterRole" => &mut c.cluster_roles,
                    "RoleBinding" => &mut c.role_bindings,
                    _ => &mut c.cluster_role_bindings,
                };
                if !k.ends_with("Role") || seen.insert(v.to_string()) {
                    list.push(v);
                }
            }
            ("", "ServiceAccount") => c.service_accounts.push(v),
            ("", "Service") => c.services.push(v),
            ("apps", "Deployment") => {
                if seen.insert(v.to_string()) {
                    c.deployments.push(v);
                }
            }
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                let version = v["apiVersion"].as_str().unwrap_or_default();
                if version != "apiextensions.k8s.io/v1" && version != "apiextensions.k8s.io/v1beta1"
                {
                    return Err(format!(
                        "unrecognized CustomResourceDefinition version {}",
                        olm_goenc::quote(version.split('/').nth(1).unwrap_or_default())
                    ));
                }
                if seen.insert(v.to_string()) {
                    c.crds.push(v);
                }
            }
            ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
                c.validating.push(v)
            }
            ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => c.mutating.push(v),
            ("scorecard.operatorframework.io", "Configuration") => {
                if c.scorecard.replace(v).is_some() {
                    return Err("duplicate scorecard configurations in collector input".to_owned());
                }
            }
            _ => c.others.push(v),
        }
    }
    // v1 CRDs before v1beta1, each in input order.
    c.crds
        .sort_by_key(|v| v["apiVersion"] != "apiextensions.k8s.io/v1");
    Ok(c)
}

/// The served (group, version, kind) triples of a CRD, with its name.
fn crd_versions(crd: &Value) -> Vec<(String, String, String)> {
    let group = crd["spec"]["group"].as_str().unwrap_or_default().to_owned();
    let kind = crd["spec"]["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut out = Vec::new();
    match crd["spec"]["versions"].as_array() {
        Some(versions) if !versions.is_empty() => {
            for v in versions.iter().filter(|v| v["served"] != false) {
                out.push((
                    group.clone(),
                    v["name"].as_str().unwrap_or_default().to_owned(),
                    kind.clone(),
                ));
            }
        }
        _ => {
            if let Some(v) = crd["spec"]["version"].as_str() {
                out.push((group, v.to_owned(), kind));
            }
        }
    }
    out
}

/// Refuses channel options a catalog could not take: an empty channel name (opm refuses an
/// empty channels annotation: `Expecting annotation … to have non-empty value`), and a default
/// channel the bundle is not in, which would make the package's default channel one that does
/// not exist.
fn check_channels(opts: &Options) -> Result<(), String> {
    let channels: Vec<&str> = opts.channels.split(',').collect();
    if channels.iter().any(|c| c.trim().is_empty()) {
        return Err(format!(
            "invalid channels {}: every channel needs a name",
            olm_goenc::quote(&opts.channels)
        ));
    }
    if let Some(d) = opts.default_channel.as_ref().filter(|d| !d.is_empty())
        && !channels.contains(&d.as_str())
    {
        return Err(format!(
            "the default channel {} is not one of the channels {}",
            olm_goenc::quote(d),
            olm_goenc::quote(&opts.channels)
        ));
    }
    Ok(())
}

/// Generates the bundle from `input` (the manifests) and `base` (the CSV to start from).
///
/// # Errors
///
/// Channels a catalog could not take, a CRD of an unknown API version, or a `RELATED_IMAGE_*`
/// variable taken from elsewhere.
pub fn generate(input: &[Value], base: Option<Value>, opts: &Options) -> Result<Generated, String> {
    check_channels(opts)?;
    let c = collect(input)?;
    let prefix = format!("{}.", opts.package);
    let mut csv = base
        .or_else(|| {
            c.csvs
                .iter()
                .find(|v| name(v).starts_with(&prefix))
                .map(|v| (*v).clone())
        })
        .unwrap_or_else(|| default_base(&opts.package));
    if let Some(version) = &opts.version {
        csv["metadata"]["name"] = json!(format!("{}.v{version}", opts.package));
        csv["spec"]["version"] = json!(version);
    }
    if csv["spec"]["install"]["strategy"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        csv["spec"]["install"]["strategy"] = json!("deployment");
    }
    if csv["spec"]["install"]["strategy"] == "deployment" {
        csv["spec"]["install"]["spec"]["deployments"] =
            Value::Array(c.deployments.iter().map(|d| deployment_spec(d)).collect());
        let accounts = served_accounts(&c, opts);
        let spec = &mut csv["spec"]["install"]["spec"];
        set_or_remove(
            spec,
            "permissions",
            permissions(&c.role_bindings, &c, &accounts, false),
        );
        set_or_remove(
            spec,
            "clusterPermissions",
            permissions(&c.cluster_role_bindings, &c, &accounts, true),
        );
    }
    owned_crds(&mut csv, &c);
    let webhooks = webhook_definitions(&c);
    set_or_remove(&mut csv["spec"], "webhookdefinitions", webhooks);
    let related = related_images(
        &c,
        csv["spec"]["relatedImages"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    )?;
    set_or_remove(&mut csv["spec"], "relatedImages", related);
    // Examples: every CR of a collected CRD's served version.
    let served: BTreeSet<(String, String, String)> =
        c.crds.iter().flat_map(|d| crd_versions(d)).collect();
    let examples: Vec<Value> = c
        .others
        .iter()
        .filter(|o| {
            let api = o["apiVersion"].as_str().unwrap_or_default();
            let (g, v) = api.split_once('/').unwrap_or(("", api));
            served.contains(&(g.to_owned(), v.to_owned(), kind(o).to_owned()))
        })
        .map(|o| (*o).clone())
        .collect();
    let annotations = csv["metadata"]
        .as_object_mut()
        .map(|m| m.entry("annotations").or_insert_with(|| json!({})));
    if let Some(Value::Object(a)) = annotations {
        a.insert(
            "alm-examples".into(),
            json!(serde_json::to_string_pretty(&examples).unwrap_or_else(|_| "[]".to_owned())),
        );
        if !a.contains_key("createdAt") {
            a.insert("createdAt".into(), json!(opts.created_at));
        }
        a.insert(
            "operators.operatorframework.io/builder".into(),
            json!(opts.builder),
        );
        a.insert(
            "operators.operatorframework.io/project_layout".into(),
            json!("unknown"),
        );
    }
    if let Some(m) = csv.as_object_mut() {
        m.remove("status");
    }
    if let Some(m) = csv["metadata"].as_object_mut() {
        m.remove("creationTimestamp");
    }
    let objects = manifest_objects(&c, &served_accounts(&c, opts));
    Ok(Generated {
        csv,
        objects,
        annotations: metadata_annotations(opts, c.scorecard.is_some()),
        scorecard: c.scorecard.cloned(),
    })
}

fn served_accounts(c: &Collected<'_>, opts: &Options) -> BTreeSet<String> {
    c.deployments
        .iter()
        .map(|d| {
            d.pointer("/spec/template/spec/serviceAccountName")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or(DEFAULT_SA)
                .to_owned()
        })
        .chain(opts.extra_service_accounts.iter().cloned())
        .collect()
}

fn set_or_remove(obj: &mut Value, key: &str, list: Vec<Value>) {
    if list.is_empty() {
        if let Some(m) = obj.as_object_mut() {
            m.remove(key);
        }
    } else {
        obj[key] = Value::Array(list);
    }
}

/// The base of a CSV generated without one.
fn default_base(package: &str) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": format!("{package}.v0.0.0"), "annotations": {"capabilities": "Basic Install"}},
        "spec": {
            "displayName": package,
            "description": "",
            "version": "0.0.0",
            "installModes": [
                {"type": "OwnNamespace", "supported": false},
                {"type": "SingleNamespace", "supported": false},
                {"type": "MultiNamespace", "supported": false},
                {"type": "AllNamespaces", "supported": true},
            ],
            "install": {"strategy": "deployment", "spec": {"deployments": null}},
        },
    })
}

/// A Deployment as a CSV deployment spec; `WATCH_NAMESPACE` follows the target namespaces.
fn deployment_spec(d: &Value) -> Value {
    let mut spec = d["spec"].clone();
    if let Some(containers) = spec
        .pointer_mut("/template/spec/containers")
        .and_then(Value::as_array_mut)
    {
        for c in containers {
            for e in c
                .get_mut("env")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if e["name"] == "WATCH_NAMESPACE" {
                    *e = json!({"name": "WATCH_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}}});
                }
            }
        }
    }
    if let Some(m) = spec
        .pointer_mut("/template/metadata")
        .and_then(Value::as_object_mut)
    {
        m.remove("creationTimestamp");
    }
    let mut out = json!({"name": name(d), "spec": spec});
    if let Some(labels) = d["metadata"]["labels"]
        .as_object()
        .filter(|l| !l.is_empty())
    {
        out["label"] = Value::Object(labels.clone());
    }
    out
}

fn bound_accounts<'b>(binding: &'b Value, accounts: &BTreeSet<String>) -> Vec<&'b str> {
    binding["subjects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == "ServiceAccount")
        .filter_map(|s| s["name"].as_str())
        .filter(|n| accounts.contains(*n))
        .collect()
}

fn role_ref_ok(binding: &Value) -> bool {
    matches!(
        binding["roleRef"]["apiGroup"].as_str(),
        None | Some("" | "rbac.authorization.k8s.io")
    )
}

/// `permissions` (from RoleBindings) or `clusterPermissions` (from ClusterRoleBindings).
fn permissions(
    bindings: &[&Value],
    c: &Collected<'_>,
    accounts: &BTreeSet<String>,
    cluster: bool,
) -> Vec<Value> {
    let mut rules: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for b in bindings.iter().filter(|b| role_ref_ok(b)) {
        let role_kind = b["roleRef"]["kind"].as_str().unwrap_or_default();
        let role_name = b["roleRef"]["name"].as_str().unwrap_or_default();
        let pool = match (role_kind, cluster) {
            ("Role", false) => &c.roles,
            ("ClusterRole", _) => &c.cluster_roles,
            _ => continue,
        };
        let Some(role) = pool.iter().find(|r| name(r) == role_name) else {
            continue;
        };
        for account in bound_accounts(b, accounts) {
            rules
                .entry(account.to_owned())
                .or_default()
                .extend(role["rules"].as_array().into_iter().flatten().cloned());
        }
    }
    rules
        .into_iter()
        .filter(|(_, r)| !r.is_empty())
        .map(|(sa, r)| json!({"serviceAccountName": sa, "rules": r}))
        .collect()
}

/// One owned entry per served CRD version, keeping the base's entry for it whole.
fn owned_crds(csv: &mut Value, c: &Collected<'_>) {
    let base: Vec<Value> = csv["spec"]["customresourcedefinitions"]["owned"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut owned = Vec::new();
    for crd in &c.crds {
        for (_, version, kind) in crd_versions(crd) {
            let n = name(crd);
            let kept = base.iter().find(|o| {
                o["name"] == n && o["version"] == version.as_str() && o["kind"] == kind.as_str()
            });
            owned.push(
                kept.cloned()
                    .unwrap_or_else(|| json!({"name": n, "version": version, "kind": kind})),
            );
        }
    }
    if owned.is_empty() && base.is_empty() {
        return;
    }
    csv["spec"]["customresourcedefinitions"]["owned"] = Value::Array(owned);
}

fn service_named<'a>(c: &Collected<'a>, name_: &str) -> Option<&'a Value> {
    c.services.iter().copied().find(|s| name(s) == name_)
}

/// The deployment a Service selects (the first whose pod labels hold every selector pair), else
/// the service name without `-service`.
fn deployment_for(c: &Collected<'_>, service: Option<&Value>, service_name: &str) -> String {
    if let Some(s) = service
        && s["spec"]["type"] != "ExternalName"
        && let Some(selector) = s["spec"]["selector"].as_object().filter(|m| !m.is_empty())
        && let Some(d) = c.deployments.iter().find(|d| {
            let labels = &d["spec"]["template"]["metadata"]["labels"];
            selector.iter().all(|(k, v)| labels[k] == *v)
        })
    {
        return name(d).to_owned();
    }
    service_name
        .strip_suffix("-service")
        .unwrap_or(service_name)
        .to_owned()
}

/// The ports of a webhook's Service reference: port (default 443), and the Service's matching
/// target port.
fn webhook_ports(def: &mut Map<String, Value>, service: Option<&Value>, port: i64) {
    if let Some(p) = service
        .and_then(|s| s["spec"]["ports"].as_array())
        .and_then(|ports| ports.iter().find(|p| p["port"] == port))
    {
        def.insert("containerPort".into(), json!(port));
        if let Some(t) = p.get("targetPort") {
            def.insert("targetPort".into(), t.clone());
        }
    }
}

fn webhook_definitions(c: &Collected<'_>) -> Vec<Value> {
    let mut defs: Vec<Value> = Vec::new();
    for (configs, kind_) in [
        (&c.validating, "ValidatingAdmissionWebhook"),
        (&c.mutating, "MutatingAdmissionWebhook"),
    ] {
        for config in configs.iter() {
            for w in config["webhooks"].as_array().into_iter().flatten() {
                let mut def = Map::new();
                def.insert("type".into(), json!(kind_));
                def.insert("generateName".into(), w["name"].clone());
                let mut keys = vec![
                    "rules",
                    "failurePolicy",
                    "matchPolicy",
                    "objectSelector",
                    "timeoutSeconds",
                ];
                if kind_ == "MutatingAdmissionWebhook" {
                    keys.push("reinvocationPolicy");
                }
                for k in keys {
                    if let Some(v) = w.get(k).filter(|v| !v.is_null()) {
                        def.insert(k.into(), v.clone());
                    }
                }
                let versions = w["admissionReviewVersions"]
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .cloned();
                def.insert(
                    "admissionReviewVersions".into(),
                    versions.map_or_else(|| json!(["v1beta1"]), Value::Array),
                );
                def.insert(
                    "sideEffects".into(),
                    w.get("sideEffects")
                        .filter(|v| !v.is_null())
                        .cloned()
                        .unwrap_or_else(|| json!("None")),
                );
                if let Some(svc) = w["clientConfig"]["service"].as_object() {
                    let svc_name = svc.get("name").and_then(Value::as_str).unwrap_or_default();
                    let service = service_named(c, svc_name);
                    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
                    webhook_ports(&mut def, service, port);
                    if let Some(path) = svc.get("path") {
                        def.insert("webhookPath".into(), path.clone());
                    }
                    def.insert(
                        "deploymentName".into(),
                        json!(deployment_for(c, service, svc_name)),
                    );
                }
                defs.push(Value::Object(def));
            }
        }
    }
    defs.extend(conversion_webhooks(c));
    defs.sort_by(|a, b| a["generateName"].as_str().cmp(&b["generateName"].as_str()));
    defs
}

/// Conversion webhooks: per Service, the CRDs converting through it, one definition per
/// (port, path), named `c<first labels of the CRD names>.kb.io` as operator-sdk names them.
fn conversion_webhooks(c: &Collected<'_>) -> Vec<Value> {
    let mut defs = Vec::new();
    for service in &c.services {
        let svc_name = name(service);
        // (port, path) → (CRD names, review versions)
        let mut groups: BTreeMap<(i64, String), (Vec<String>, Value)> = BTreeMap::new();
        for crd in &c.crds {
            let conversion = &crd["spec"]["conversion"];
            let (client, versions) = if crd["apiVersion"] == "apiextensions.k8s.io/v1" {
                (
                    &conversion["webhook"]["clientConfig"],
                    &conversion["webhook"]["conversionReviewVersions"],
                )
            } else {
                (
                    &conversion["webhookClientConfig"],
                    &conversion["conversionReviewVersions"],
                )
            };
            if client["service"]["name"] != svc_name {
                continue;
            }
            let port = client["service"]["port"].as_i64().unwrap_or(443);
            let path = client["service"]["path"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let entry = groups
                .entry((port, path))
                .or_insert_with(|| (Vec::new(), versions.clone()));
            entry.0.push(name(crd).to_owned());
        }
        for ((port, path), (mut crds, versions)) in groups {
            crds.sort();
            let labels: String = crds
                .iter()
                .map(|n| n.split('.').next().unwrap_or_default())
                .collect();
            let mut def = Map::new();
            def.insert("type".into(), json!("ConversionWebhook"));
            def.insert("generateName".into(), json!(format!("c{labels}.kb.io")));
            def.insert("conversionCRDs".into(), json!(crds));
            def.insert(
                "admissionReviewVersions".into(),
                if versions.is_array() {
                    versions
                } else {
                    json!([])
                },
            );
            def.insert("sideEffects".into(), json!("None"));
            if !path.is_empty() {
                def.insert("webhookPath".into(), json!(path));
            }
            webhook_ports(&mut def, Some(service), port);
            def.insert(
                "deploymentName".into(),
                json!(deployment_for(c, Some(service), svc_name)),
            );
            defs.push(Value::Object(def));
        }
    }
    defs
}

/// `relatedImages` from `RELATED_IMAGE_*` variables, after the base's entries that name other
/// images.
fn related_images(c: &Collected<'_>, base: Vec<Value>) -> Result<Vec<Value>, String> {
    let mut found: Vec<(String, String, String)> = Vec::new(); // (name, image, containerRef)
    for d in &c.deployments {
        let pod = &d["spec"]["template"]["spec"];
        let containers: Vec<&Value> = ["initContainers", "containers"]
            .iter()
            .flat_map(|k| pod[*k].as_array().into_iter().flatten())
            .collect();
        for container in &containers {
            for e in container["env"].as_array().into_iter().flatten() {
                let Some(var) = e["name"]
                    .as_str()
                    .and_then(|n| n.strip_prefix("RELATED_IMAGE_"))
                else {
                    continue;
                };
                if e.get("valueFrom").is_some_and(|v| !v.is_null()) {
                    return Err(format!(
                        "related images with valueFrom field unsupported, found in RELATED_IMAGE_{var}`"
                    ));
                }
                let reference = if containers.len() > 1 {
                    format!(
                        "{}-{}",
                        name(d),
                        container["name"].as_str().unwrap_or_default()
                    )
                } else {
                    name(d).to_owned()
                };
                let entry = (
                    var.to_lowercase().replace('_', "-"),
                    e["value"].as_str().unwrap_or_default().to_owned(),
                    reference,
                );
                if !found.iter().any(|f| f.0 == entry.0 && f.1 == entry.1) {
                    found.push(entry);
                }
            }
        }
    }
    let mut out: Vec<Value> = Vec::new();
    for (n, image, reference) in &found {
        let clash = found.iter().any(|f| f.0 == *n && f.1 != *image);
        let same_image_other_name = found.iter().any(|f| f.1 == *image && f.0 != *n);
        let shown = if same_image_other_name {
            String::new()
        } else if clash {
            format!("{reference}-{n}")
        } else {
            n.clone()
        };
        if !out.iter().any(|o| o["image"] == image.as_str()) {
            out.push(json!({"name": shown, "image": image}));
        }
    }
    let mut merged: Vec<Value> = base
        .into_iter()
        .filter(|b| !out.iter().any(|o| o["image"] == b["image"]))
        .collect();
    merged.extend(out);
    Ok(merged)
}

/// The objects written beside the CSV: CRDs, Services, supported other kinds, and RBAC that is
/// not the CSV's; each without namespace, named as upstream names files.
fn manifest_objects(c: &Collected<'_>, accounts: &BTreeSet<String>) -> Vec<(String, Value)> {
    let bound_roles: BTreeSet<(bool, &str)> = c
        .role_bindings
        .iter()
        .map(|b| (false, *b))
        .chain(c.cluster_role_bindings.iter().map(|b| (true, *b)))
        .filter(|(_, b)| !bound_accounts(b, accounts).is_empty())
        .map(|(cluster, b)| {
            (
                cluster || b["roleRef"]["kind"] == "ClusterRole",
                b["roleRef"]["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let mut list: Vec<&Value> = Vec::new();
    list.extend(c.crds.iter().copied());
    list.extend(c.services.iter().copied());
    let crs: BTreeSet<(String, String, String)> =
        c.crds.iter().flat_map(|d| crd_versions(d)).collect();
    list.extend(c.others.iter().copied().filter(|o| {
        let api = o["apiVersion"].as_str().unwrap_or_default();
        let (g, v) = api.split_once('/').unwrap_or(("", api));
        crate::validate::supported_kind(kind(o)).is_some()
            && !crs.contains(&(g.to_owned(), v.to_owned(), kind(o).to_owned()))
    }));
    list.extend(
        c.roles
            .iter()
            .copied()
            .filter(|r| !bound_roles.contains(&(false, name(r)))),
    );
    list.extend(
        c.cluster_roles
            .iter()
            .copied()
            .filter(|r| !bound_roles.contains(&(true, name(r)))),
    );
    for b in c.role_bindings.iter().chain(&c.cluster_role_bindings) {
        let all = b["subjects"].as_array().map_or(0, Vec::len);
        if bound_accounts(b, accounts).len() < all {
            list.push(b);
        }
    }
    list.extend(
        c.service_accounts
            .iter()
            .copied()
            .filter(|s| !accounts.contains(name(s))),
    );
    let mut names: BTreeSet<String> = BTreeSet::new();
    let mut dup = 0usize;
    list.into_iter()
        .map(|o| {
            let mut o = o.clone();
            if let Some(m) = o["metadata"].as_object_mut() {
                m.remove("namespace");
            }
            let file = if kind(&o) == "CustomResourceDefinition" {
                format!(
                    "{}_{}.yaml",
                    o["spec"]["group"].as_str().unwrap_or_default(),
                    o["spec"]["names"]["plural"].as_str().unwrap_or_default()
                )
            } else {
                let api = o["apiVersion"].as_str().unwrap_or_default();
                let k = kind(&o).to_lowercase();
                match api.split_once('/') {
                    Some((g, v)) => format!("{}_{g}_{v}_{k}.yaml", name(&o)),
                    None => format!("{}_{api}_{k}.yaml", name(&o)),
                }
            };
            let file = if names.insert(file.clone()) {
                file
            } else {
                let f = format!("dup{dup}_{file}");
                dup += 1;
                f
            };
            (file, o)
        })
        .collect()
}

/// `metadata/annotations.yaml`'s annotations (and `bundle.Dockerfile`'s labels).
fn metadata_annotations(opts: &Options, scorecard: bool) -> Vec<(String, String)> {
    let mut out = vec![
        (
            bundle::MEDIATYPE_ANNOTATION.to_owned(),
            bundle::REGISTRY_V1.to_owned(),
        ),
        (
            bundle::MANIFESTS_ANNOTATION.to_owned(),
            "manifests/".to_owned(),
        ),
        (
            bundle::METADATA_ANNOTATION.to_owned(),
            "metadata/".to_owned(),
        ),
        (bundle::PACKAGE_ANNOTATION.to_owned(), opts.package.clone()),
        (
            bundle::CHANNELS_ANNOTATION.to_owned(),
            opts.channels.clone(),
        ),
    ];
    if let Some(d) = opts.default_channel.as_ref().filter(|d| !d.is_empty()) {
        out.push((bundle::DEFAULT_CHANNEL_ANNOTATION.to_owned(), d.clone()));
    }
    out.push((
        "operators.operatorframework.io.metrics.builder".to_owned(),
        opts.builder.clone(),
    ));
    out.push((
        "operators.operatorframework.io.metrics.mediatype.v1".to_owned(),
        "metrics+v1".to_owned(),
    ));
    out.push((
        "operators.operatorframework.io.metrics.project_layout".to_owned(),
        "unknown".to_owned(),
    ));
    if scorecard {
        out.push((TEST_MEDIATYPE.to_owned(), "scorecard+v1".to_owned()));
        out.push((
            "operators.operatorframework.io.test.config.v1".to_owned(),
            SCORECARD_DIR.to_owned(),
        ));
    }
    out
}

/// The CSV fields authors fill in by hand (the manually defined fields of the CSV guide) that
/// are empty in `csv`, by JSON path.
pub fn missing_fields(csv: &Value) -> Vec<&'static str> {
    const FIELDS: &[(&str, &str)] = &[
        (
            "metadata.annotations.alm-examples",
            "/metadata/annotations/alm-examples",
        ),
        (
            "metadata.annotations.capabilities",
            "/metadata/annotations/capabilities",
        ),
        ("spec.displayName", "/spec/displayName"),
        ("spec.description", "/spec/description"),
        ("spec.keywords", "/spec/keywords"),
        ("spec.maintainers", "/spec/maintainers"),
        ("spec.provider", "/spec/provider"),
        ("spec.maturity", "/spec/maturity"),
        ("spec.icon", "/spec/icon"),
        ("spec.minKubeVersion", "/spec/minKubeVersion"),
    ];
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty() || s == "[]",
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o
            .values()
            .all(|v| v.as_str().is_some_and(str::is_empty) || v.is_null()),
        Some(_) => false,
    };
    FIELDS
        .iter()
        .filter(|(_, pointer)| empty(csv.pointer(pointer)))
        .map(|(name, _)| *name)
        .collect()
}

/// `metadata/annotations.yaml` as operator-sdk lays it out.
pub fn annotations_yaml(annotations: &[(String, String)]) -> String {
    let mut out = String::from("annotations:\n  # Core bundle annotations.\n");
    for (k, v) in annotations {
        if k == TEST_MEDIATYPE {
            out.push_str("\n  # Annotations for testing.\n");
        }
        out.push_str(&format!("  {k}: {v}\n"));
    }
    out
}

/// `bundle.Dockerfile` for a bundle under `dir` (relative to where it is built).
pub fn dockerfile(annotations: &[(String, String)], dir: &str) -> String {
    let mut out = String::from("FROM scratch\n\n# Core bundle labels.\n");
    let mut scorecard = false;
    for (k, v) in annotations {
        if k == TEST_MEDIATYPE {
            out.push_str("\n# Labels for testing.\n");
            scorecard = true;
        }
        out.push_str(&format!("LABEL {k}={v}\n"));
    }
    out.push_str(&format!(
        "\n# Copy files to locations specified by labels.\nCOPY {dir}/manifests /manifests/\nCOPY {dir}/metadata /metadata/\n"
    ));
    if scorecard {
        out.push_str(&format!("COPY {dir}/tests/scorecard /tests/scorecard/\n"));
    }
    out
}

#[cfg(test)]
mod tests;
