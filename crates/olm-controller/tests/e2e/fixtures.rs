//! Catalogs and registry+v1 bundles made per scenario, in the spirit of upstream's
//! `test/internal/catalog` (operator-controller v1.11.0: `bundle.go` options `WithCRD`,
//! `WithDeployment`, `WithConfigMap`, `WithInstallMode`, `WithLargeCRD`, `WithBundleProperty`,
//! `BadImage`; `catalog.go` packages, channels with `Replaces`).
//!
//! Every name a bundle puts on the cluster embeds the scenario id, so scenarios sharing one
//! control plane never touch each other's objects: CRD `e2e<id>tests.e2e-<id>.e2e.olm.test`,
//! Deployment `test-operator-<id>`, ConfigMap `test-configmap-<id>`, ServiceAccount
//! `bundle-manager-<id>`. Bundles are written to a temp directory as YAML, built into images with
//! `olm_image::bundle_image` and pushed to the test registry; the catalog is one FBC file built
//! with `olm_image::catalog_image`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, Result};
use serde_json::{Value, json};

/// What a bundle holds (upstream's `bundleConfig`).
#[derive(Debug, Clone, Default)]
pub struct Contents {
    /// Owned CRD; `None` for a bundle without one.
    pub crd: Option<Crd>,
    /// A Deployment in the CSV (with its ServiceAccount, permissions and a script ConfigMap).
    pub deployment: bool,
    /// An extra ConfigMap `test-configmap-<id>` carrying the bundle version.
    pub configmap: bool,
    /// Supported install modes; empty means AllNamespaces + SingleNamespace, as upstream.
    pub install_modes: Vec<&'static str>,
    /// A validating and a mutating webhook on the CRD's group, served by the Deployment.
    pub webhooks: bool,
    /// Extra `metadata/properties.yaml` entries (`type`, `value`).
    pub properties: Vec<(String, Value)>,
    /// The Deployment's container image is `wrong/image` (upstream's `BadImage`).
    pub bad_image: bool,
    /// Extra CRDs of about this many KiB each, to make a bundle large (objects are kept below
    /// etcd's 1.5 MiB request limit one by one while the bundle as a whole exceeds it).
    pub filler_crds: Vec<usize>,
    /// Overrides the id used in object names (to make two packages share objects).
    pub name_id: Option<String>,
    /// Overrides the owned CRD's `metadata.name` (and the CSV's entry for it), keeping its
    /// group and plural.
    pub crd_name: Option<String>,
    /// Extra ClusterRoles (no rules) with these names.
    pub cluster_roles: Vec<String>,
}

/// The owned CRD's shape, varied by upgrade scenarios.
#[derive(Debug, Clone)]
pub struct Crd {
    /// Served versions, in order; the last one is the storage version.
    pub versions: Vec<&'static str>,
    /// Extra string fields of `spec` in every version.
    pub fields: Vec<&'static str>,
    /// `spec` fields that are required (an upgrade adding one is unsafe).
    pub required: Vec<&'static str>,
    /// Number of large string fields (upstream's `WithLargeCRD(n)`, ~4 KiB of description each).
    pub large_fields: usize,
}

impl Default for Crd {
    fn default() -> Crd {
        Crd {
            versions: vec!["v1"],
            fields: vec![],
            required: vec![],
            large_fields: 0,
        }
    }
}

impl Contents {
    /// Upstream's usual `CRD, Deployment, ConfigMap`.
    pub fn standard() -> Contents {
        Contents {
            crd: Some(Crd::default()),
            deployment: true,
            configmap: true,
            ..Contents::default()
        }
    }

    /// Only a CRD (the smallest installable bundle).
    pub fn crd_only() -> Contents {
        Contents {
            crd: Some(Crd::default()),
            ..Contents::default()
        }
    }

    /// With these install modes supported (and no others).
    pub fn modes(mut self, modes: &[&'static str]) -> Contents {
        self.install_modes = modes.to_vec();
        self
    }
}

/// One bundle of a package.
#[derive(Debug, Clone)]
pub struct BundleDef {
    /// Its version (`olm.package` property, CSV `spec.version`).
    pub version: String,
    /// What it holds.
    pub contents: Contents,
    /// Use this image reference in the catalog instead of building one.
    pub image_override: Option<String>,
}

/// One channel entry.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// The entry's bundle version.
    pub version: String,
    /// Version it replaces.
    pub replaces: Option<String>,
    /// Versions it skips.
    pub skips: Vec<String>,
    /// Its skipRange.
    pub skip_range: Option<String>,
}

/// An entry for `version`.
pub fn entry(version: &str) -> Entry {
    Entry {
        version: version.to_string(),
        ..Entry::default()
    }
}

impl Entry {
    /// Replaces `v`.
    pub fn replaces(mut self, v: &str) -> Entry {
        self.replaces = Some(v.to_string());
        self
    }
    /// Skips `v`.
    pub fn skips(mut self, v: &str) -> Entry {
        self.skips.push(v.to_string());
        self
    }
    /// Has skipRange `r`.
    pub fn skip_range(mut self, r: &str) -> Entry {
        self.skip_range = Some(r.to_string());
        self
    }
}

/// A package: bundles, channels and deprecations.
#[derive(Debug, Clone, Default)]
pub struct Package {
    /// Base name; the package is called `<base>-<id>`.
    pub base: String,
    /// Bundles.
    pub bundles: Vec<BundleDef>,
    /// Channels and their entries.
    pub channels: Vec<(String, Vec<Entry>)>,
    /// `olm.deprecations` entries: (`olm.package` | `olm.channel` | `olm.bundle`, name, message).
    /// Names of bundles are versions; they are expanded to bundle names.
    pub deprecations: Vec<(&'static str, String, String)>,
}

/// A package named `<base>-<id>`.
pub fn package(base: &str) -> Package {
    Package {
        base: base.to_string(),
        ..Package::default()
    }
}

impl Package {
    /// Adds a bundle.
    pub fn bundle(mut self, version: &str, contents: Contents) -> Package {
        self.bundles.push(BundleDef {
            version: version.to_string(),
            contents,
            image_override: None,
        });
        self
    }
    /// Adds a bundle whose catalog entry points at `image` instead of a built image.
    pub fn bundle_at(mut self, version: &str, image: &str) -> Package {
        self.bundles.push(BundleDef {
            version: version.to_string(),
            contents: Contents::default(),
            image_override: Some(image.to_string()),
        });
        self
    }
    /// Adds a channel.
    pub fn channel(mut self, name: &str, entries: Vec<Entry>) -> Package {
        self.channels.push((name.to_string(), entries));
        self
    }
    /// Marks the package deprecated.
    pub fn deprecate_package(mut self, message: &str) -> Package {
        self.deprecations
            .push(("olm.package", String::new(), message.to_string()));
        self
    }
    /// Marks a channel deprecated.
    pub fn deprecate_channel(mut self, channel: &str, message: &str) -> Package {
        self.deprecations
            .push(("olm.channel", channel.to_string(), message.to_string()));
        self
    }
    /// Marks the bundle of `version` deprecated.
    pub fn deprecate_bundle(mut self, version: &str, message: &str) -> Package {
        self.deprecations
            .push(("olm.bundle", version.to_string(), message.to_string()));
        self
    }
}

/// The names a scenario's objects get.
#[derive(Debug, Clone)]
pub struct Names {
    /// The id embedded in every name.
    pub id: String,
}

impl Names {
    /// The CRD's group.
    pub fn crd_group(&self) -> String {
        format!("e2e-{}.e2e.olm.test", self.id)
    }
    /// The CRD's plural.
    pub fn crd_plural(&self) -> String {
        format!("e2e{}tests", self.id.replace('-', ""))
    }
    /// The CRD's name.
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.crd_plural(), self.crd_group())
    }
    /// The Deployment.
    pub fn deployment(&self) -> String {
        format!("test-operator-{}", self.id)
    }
    /// The extra ConfigMap.
    pub fn configmap(&self) -> String {
        format!("test-configmap-{}", self.id)
    }
    /// The ServiceAccount of the Deployment.
    pub fn service_account(&self) -> String {
        format!("bundle-manager-{}", self.id)
    }
    /// The script ConfigMap of the Deployment.
    pub fn script_configmap(&self) -> String {
        format!("httpd-script-{}", self.id)
    }
    /// The webhook Service upstream's renderer derives from the Deployment name.
    pub fn webhook_service(&self) -> String {
        format!("{}-service", self.deployment())
    }
}

/// The CRD object.
pub fn crd_object(names: &Names, crd: &Crd, kind: &str) -> Value {
    let mut props = serde_json::Map::new();
    props.insert("testField".into(), json!({"type": "string"}));
    for f in &crd.fields {
        props.insert((*f).to_string(), json!({"type": "string"}));
    }
    if crd.large_fields > 0 {
        let base = "This field provides configuration for the large CRD test operator. It is used \
                    to validate that the OLM installation pipeline correctly handles bundles \
                    containing large Custom Resource Definitions. ";
        let desc = base.repeat(20);
        for i in 0..crd.large_fields {
            props.insert(
                format!("field{i:04}"),
                json!({"type": "string", "description": desc}),
            );
        }
    }
    let mut spec_schema = json!({"type": "object", "properties": props});
    if !crd.required.is_empty() {
        spec_schema["required"] = json!(crd.required);
    }
    let last = crd.versions.len().saturating_sub(1);
    let versions: Vec<Value> = crd
        .versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            json!({
                "name": v,
                "served": true,
                "storage": i == last,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": spec_schema.clone()},
                }},
            })
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": names.crd_name()},
        "spec": {
            "group": names.crd_group(),
            "names": {
                "kind": kind,
                "listKind": format!("{kind}List"),
                "plural": names.crd_plural(),
                "singular": names.crd_plural().trim_end_matches('s'),
            },
            "scope": "Namespaced",
            "versions": versions,
        },
    })
}

fn filler_crd(names: &Names, index: usize, kib: usize) -> Value {
    let group = names.crd_group();
    let plural = format!("fillers{index}");
    // ~4 KiB per field, as upstream's large CRD fixture.
    let desc =
        "Filler text that makes this bundle larger than what fits in one etcd object. ".repeat(52);
    let fields = (kib / 4).max(1);
    let mut props = serde_json::Map::new();
    for i in 0..fields {
        props.insert(
            format!("f{i:04}"),
            json!({"type": "string", "description": desc}),
        );
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": format!("Filler{index}"), "listKind": format!("Filler{index}List"),
                      "plural": plural, "singular": format!("filler{index}")},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object", "properties": props}}}}}],
        },
    })
}

fn deployment_spec(names: &Names, version: &str, image: &str, webhooks: bool) -> Value {
    let mut container = json!({
        "name": "busybox-httpd-container",
        "image": image,
        "command": ["/scripts/httpd.sh"],
        "ports": [{"containerPort": 8080}],
        "volumeMounts": [{"name": "scripts", "mountPath": "/scripts", "readOnly": true}],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080},
                           "initialDelaySeconds": 1, "periodSeconds": 1},
    });
    if webhooks {
        container["ports"] = json!([{"containerPort": 8080}, {"containerPort": 9443}]);
    }
    json!({
        "name": names.deployment(),
        "label": {
            "app.kubernetes.io/name": names.deployment(),
            "app.kubernetes.io/version": version,
            "app.kubernetes.io/component": "controller",
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": names.id}},
            "template": {
                "metadata": {"labels": {"app": names.id}},
                "spec": {
                    "serviceAccountName": names.service_account(),
                    "terminationGracePeriodSeconds": 0,
                    "volumes": [{"name": "scripts", "configMap": {
                        "name": names.script_configmap(), "defaultMode": 493}}],
                    "containers": [container],
                },
            },
        },
    })
}

fn webhook_definitions(names: &Names) -> Value {
    let rules = json!([{
        "apiGroups": [names.crd_group()],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": [names.crd_plural()],
    }]);
    json!([
        {
            "type": "ValidatingAdmissionWebhook",
            "generateName": format!("v{}.e2e.olm.test", names.id),
            "deploymentName": names.deployment(),
            "containerPort": 443,
            "targetPort": 9443,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "webhookPath": "/validate",
            "rules": rules,
        },
        {
            "type": "MutatingAdmissionWebhook",
            "generateName": format!("m{}.e2e.olm.test", names.id),
            "deploymentName": names.deployment(),
            "containerPort": 443,
            "targetPort": 9443,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "webhookPath": "/mutate",
            "rules": rules,
        },
    ])
}

/// Writes a registry+v1 bundle directory for `package` at `version` into `dir`.
pub fn write_bundle(
    dir: &Path,
    package: &str,
    version: &str,
    c: &Contents,
    id: &str,
) -> Result<()> {
    let names = Names {
        id: c.name_id.clone().unwrap_or_else(|| id.to_string()),
    };
    let manifests = dir.join("manifests");
    let metadata = dir.join("metadata");
    std::fs::create_dir_all(&manifests)?;
    std::fs::create_dir_all(&metadata)?;
    let kind = "E2ETest";
    let modes = if c.install_modes.is_empty() {
        vec!["AllNamespaces", "SingleNamespace"]
    } else {
        c.install_modes.clone()
    };
    let install_modes: Vec<Value> = [
        "OwnNamespace",
        "SingleNamespace",
        "MultiNamespace",
        "AllNamespaces",
    ]
    .iter()
    .map(|m| json!({"type": m, "supported": modes.contains(m)}))
    .collect();
    let crd_name = c.crd_name.clone().unwrap_or_else(|| names.crd_name());
    let mut owned = vec![];
    if let Some(crd) = &c.crd {
        for v in &crd.versions {
            owned.push(json!({"name": crd_name, "kind": kind, "version": v,
                "displayName": kind, "description": "E2E Test Resource"}));
        }
    }
    for (i, _) in c.filler_crds.iter().enumerate() {
        owned.push(json!({"name": format!("fillers{i}.{}", names.crd_group()),
            "kind": format!("Filler{i}"), "version": "v1", "displayName": "Filler"}));
    }
    let image = if c.bad_image {
        "wrong/image"
    } else {
        "busybox:1.36"
    };
    let (deployments, permissions, cluster_permissions) = if c.deployment || c.webhooks {
        (
            json!([deployment_spec(&names, version, image, c.webhooks)]),
            json!([{
                "serviceAccountName": names.service_account(),
                "rules": [
                    {"apiGroups": [""], "resources": ["configmaps", "serviceaccounts"],
                     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
                ],
            }]),
            json!([{
                "serviceAccountName": names.service_account(),
                "rules": [
                    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
                     "verbs": ["create"]},
                    {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
                     "verbs": ["create"]},
                ],
            }]),
        )
    } else {
        (json!([]), json!([]), json!([]))
    };
    let mut csv = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": format!("{package}.v{version}"),
            "annotations": {"olm.properties": "[]"},
        },
        "spec": {
            "displayName": package,
            "version": version,
            "installModes": install_modes,
            "customresourcedefinitions": {"owned": owned},
            "install": {"strategy": "deployment", "spec": {
                "deployments": deployments,
                "permissions": permissions,
                "clusterPermissions": cluster_permissions,
            }},
        },
    });
    if c.webhooks {
        csv["spec"]["webhookdefinitions"] = webhook_definitions(&names);
    }
    write_yaml(&manifests.join("csv.yaml"), &csv)?;
    if let Some(crd) = &c.crd {
        let mut object = crd_object(&names, crd, kind);
        object["metadata"]["name"] = json!(crd_name);
        write_yaml(&manifests.join("crd.yaml"), &object)?;
    }
    for (i, name) in c.cluster_roles.iter().enumerate() {
        write_yaml(
            &manifests.join(format!("clusterrole{i}.yaml")),
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name}, "rules": []}),
        )?;
    }
    for (i, kib) in c.filler_crds.iter().enumerate() {
        write_yaml(
            &manifests.join(format!("filler{i}.yaml")),
            &filler_crd(&names, i, *kib),
        )?;
    }
    if c.deployment || c.webhooks {
        write_yaml(
            &manifests.join("script-configmap.yaml"),
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": names.script_configmap()},
                "data": {"httpd.sh": "#!/bin/sh\nmkdir -p /tmp/www\necho true > /tmp/www/ready\nexec httpd -f -h /tmp/www -p 8080\n"}}),
        )?;
    }
    if c.configmap {
        write_yaml(
            &manifests.join("bundle-configmap.yaml"),
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": names.configmap()},
                "data": {"version": version, "name": names.configmap()}}),
        )?;
    }
    let annotations = json!({"annotations": {
        "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": package,
        "operators.operatorframework.io.bundle.channels.v1": "default",
    }});
    write_yaml(&metadata.join("annotations.yaml"), &annotations)?;
    if !c.properties.is_empty() {
        let props: Vec<Value> = c
            .properties
            .iter()
            .map(|(t, v)| json!({"type": t, "value": v}))
            .collect();
        write_yaml(
            &metadata.join("properties.yaml"),
            &json!({"properties": props}),
        )?;
    }
    Ok(())
}

fn write_yaml(path: &Path, value: &Value) -> Result<()> {
    std::fs::write(path, olm_goenc::yaml::to_yaml(value))
        .with_context(|| format!("writing {}", path.display()))
}

/// The FBC of a catalog: `olm.package`, `olm.channel`, `olm.bundle` and `olm.deprecations`
/// blobs, one JSON object per line. `images` maps (package, version) to the bundle image.
pub fn fbc(packages: &[Package], id: &str, images: &BTreeMap<(String, String), String>) -> String {
    let mut out = String::new();
    let mut line = |v: Value| {
        out.push_str(&v.to_string());
        out.push('\n');
    };
    for p in packages {
        let pkg = format!("{}-{id}", p.base);
        let bundle_name = |v: &str| format!("{pkg}.{v}");
        let default_channel = p.channels.first().map(|c| c.0.clone());
        let mut pkgblob = json!({"schema": "olm.package", "name": pkg});
        if let Some(dc) = default_channel {
            pkgblob["defaultChannel"] = json!(dc);
        }
        line(pkgblob);
        for (name, entries) in &p.channels {
            let entries: Vec<Value> = entries
                .iter()
                .map(|e| {
                    let mut v = json!({"name": bundle_name(&e.version)});
                    if let Some(r) = &e.replaces {
                        v["replaces"] = json!(bundle_name(r));
                    }
                    if !e.skips.is_empty() {
                        v["skips"] =
                            json!(e.skips.iter().map(|s| bundle_name(s)).collect::<Vec<_>>());
                    }
                    if let Some(r) = &e.skip_range {
                        v["skipRange"] = json!(r);
                    }
                    v
                })
                .collect();
            line(
                json!({"schema": "olm.channel", "package": pkg, "name": name, "entries": entries}),
            );
        }
        for b in &p.bundles {
            let image = images
                .get(&(pkg.clone(), b.version.clone()))
                .cloned()
                .unwrap_or_default();
            line(json!({
                "schema": "olm.bundle",
                "package": pkg,
                "name": bundle_name(&b.version),
                "image": image,
                "properties": [{"type": "olm.package",
                    "value": {"packageName": pkg, "version": b.version}}],
            }));
        }
        if !p.deprecations.is_empty() {
            let entries: Vec<Value> = p
                .deprecations
                .iter()
                .map(|(schema, name, message)| match *schema {
                    "olm.package" => json!({"reference": {"schema": schema}, "message": message}),
                    "olm.bundle" => {
                        json!({"reference": {"schema": schema, "name": bundle_name(name)},
                        "message": message})
                    }
                    _ => json!({"reference": {"schema": schema, "name": name}, "message": message}),
                })
                .collect();
            line(json!({"schema": "olm.deprecations", "package": pkg, "entries": entries}));
        }
    }
    out
}
