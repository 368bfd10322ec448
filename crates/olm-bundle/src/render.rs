//! registry+v1 → plain manifests, the objects OLM v1 applies for a bundle.
//!
//! The steps follow operator-controller's generators in order: service accounts, namespaced
//! permissions (Role/RoleBinding per target namespace), cluster permissions (with AllNamespaces
//! promotion), CRDs (conversion webhook wiring), other bundle objects, Deployments, validating and
//! mutating webhook configurations, webhook Services, certificate-provider objects. Generated names
//! come from [`crate::naming`], so they are identical to upstream's.
//!
//! Upstream iterates some Go sets in random order (service accounts, certificate objects); here
//! they are sorted, so the output is deterministic. [`sort_manifests`] gives the
//! kind/namespace/name order upstream's regression files use.

use std::collections::{BTreeMap, BTreeSet};

use olm_k8s::{OPERATOR_NAMESPACE_ANNOTATION, TARGET_NAMESPACES_ANNOTATION};
use serde_json::{Map, Value, json};

use crate::bundle::Bundle;
use crate::csv::{InstallModeType, StrategyDeploymentPermissions, WebhookDescription, WebhookType};
use crate::error::RenderError;
use crate::naming::{object_name_for_base_and_suffix, unique_name};
use crate::typed;
use crate::validate::{render_validators, supported_kind, validate_target_namespaces};

/// Who issues serving certificates for webhooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertProvider {
    /// cert-manager: a self-signed Issuer and a Certificate per webhook deployment.
    CertManager,
    /// OpenShift service-ca: annotations only.
    OpenshiftServiceCa,
    /// The installer's own provider: annotations only. The webhook Service names the Secret to
    /// issue ([`olm_k8s::SERVING_CERT_SECRET_ANNOTATION`]); webhook configurations and conversion
    /// CRDs name the Secret whose CA they trust ([`olm_k8s::INJECT_CA_FROM_ANNOTATION`]). Needs
    /// nothing installed on the cluster besides the installer itself.
    Builtin,
}

/// Options of one render.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// Namespace the operator is installed into.
    pub install_namespace: String,
    /// Namespaces the operator watches; `None` means the bundle's default (`[""]`, all
    /// namespaces, when AllNamespaces is supported). `[""]` means all namespaces.
    pub target_namespaces: Option<Vec<String>>,
    /// Who provides the webhook serving certificates; `None` when the bundle needs none or no
    /// provider is set up.
    pub cert_provider: Option<CertProvider>,
    /// A validated `deploymentConfig` object (see [`crate::config`]).
    pub deployment_config: Option<Value>,
}

/// Names upstream derives for a webhook deployment's Service and certificate.
struct CertNames {
    service: String,
    cert: String,
}

fn cert_names(deployment: &str) -> CertNames {
    let service = object_name_for_base_and_suffix(&deployment.replace('.', "-"), "service");
    let cert = object_name_for_base_and_suffix(&service, "cert");
    CertNames { service, cert }
}

/// Renders a bundle to manifests (generator order). Validation failures, invalid target
/// namespaces and generator refusals come back with upstream's messages.
pub fn render(b: &Bundle, opts: &RenderOptions) -> Result<Vec<Value>, RenderError> {
    let errs = render_validators(b);
    if !errs.is_empty() {
        return Err(RenderError::Invalid(errs));
    }
    let targets = match &opts.target_namespaces {
        Some(t) if !t.is_empty() => t.clone(),
        _ => {
            if b.csv.supports(&InstallModeType::AllNamespaces) {
                vec![String::new()]
            } else {
                Vec::new()
            }
        }
    };
    if let Err(e) = validate_target_namespaces(b, &opts.install_namespace, &targets) {
        return Err(RenderError::InvalidOptions(vec![format!(
            "invalid target namespaces {}: {e}",
            olm_goenc::slice(&targets)
        )]));
    }
    let ctx = Ctx {
        b,
        ns: &opts.install_namespace,
        targets: &targets,
        provider: opts.cert_provider,
    };
    let mut out = Vec::new();
    out.extend(ctx.service_accounts());
    out.extend(ctx.permissions());
    out.extend(ctx.cluster_permissions());
    out.extend(ctx.crds()?);
    out.extend(ctx.others()?);
    out.extend(ctx.deployments(opts.deployment_config.as_ref()));
    out.extend(ctx.webhook_configurations(WebhookType::ValidatingAdmissionWebhook));
    out.extend(ctx.webhook_configurations(WebhookType::MutatingAdmissionWebhook));
    out.extend(ctx.services());
    out.extend(ctx.cert_objects());
    Ok(out)
}

/// Sorts manifests by kind, namespace and name, the order of upstream's regression files.
pub fn sort_manifests(objs: &mut [Value]) {
    let key = |o: &Value| {
        let s = |p: &str| {
            o.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        (s("/kind"), s("/metadata/namespace"), s("/metadata/name"))
    };
    objs.sort_by_key(key);
}

/// File name upstream's regression test gives the `i`-th object: `NN_<kind>_<name>.yaml`.
pub fn manifest_file_name(i: usize, obj: &Value) -> String {
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_lowercase();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    format!("{i:02}_{kind}_{name}.yaml")
}

struct Ctx<'a> {
    b: &'a Bundle,
    ns: &'a str,
    targets: &'a [String],
    provider: Option<CertProvider>,
}

fn sa_or_default(s: &str) -> &str {
    if s.is_empty() { "default" } else { s }
}

fn rules_value(p: &StrategyDeploymentPermissions) -> Value {
    match &p.rules {
        None => Value::Null,
        Some(r) => Value::Array(r.iter().map(|r| r.to_go_value()).collect()),
    }
}

impl Ctx<'_> {
    fn all_namespaces(&self) -> bool {
        self.targets.len() == 1 && self.targets[0].is_empty()
    }

    fn csv_name(&self) -> &str {
        self.b.csv.name()
    }

    fn service_accounts(&self) -> Vec<Value> {
        let strategy = &self.b.csv.spec.install.spec;
        let names: BTreeSet<&str> = strategy
            .permissions
            .iter()
            .chain(&strategy.cluster_permissions)
            .map(|p| sa_or_default(&p.service_account_name))
            .collect();
        names
            .into_iter()
            .filter(|n| *n != "default")
            .map(|n| {
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": n, "namespace": self.ns}})
            })
            .collect()
    }

    fn binding_subject(&self, sa: &str) -> Value {
        json!([{"kind": "ServiceAccount", "name": sa, "namespace": self.ns}])
    }

    fn permissions(&self) -> Vec<Value> {
        if self.all_namespaces() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for tns in self.targets {
            for p in &self.b.csv.spec.install.spec.permissions {
                let sa = sa_or_default(&p.service_account_name);
                let name = unique_name(&format!("{}-{sa}", self.csv_name()), &p.to_go_value());
                out.push(json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": {"name": name, "namespace": tns},
                    "rules": rules_value(p),
                }));
                out.push(json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": name, "namespace": tns},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                    "subjects": self.binding_subject(sa),
                }));
            }
        }
        out
    }

    fn cluster_permissions(&self) -> Vec<Value> {
        let strategy = &self.b.csv.spec.install.spec;
        let mut perms: Vec<StrategyDeploymentPermissions> = strategy.cluster_permissions.clone();
        if self.all_namespaces() {
            for p in &strategy.permissions {
                let mut p = p.clone();
                // OLM v0 parity: an operator watching all namespaces may list them.
                p.rules
                    .get_or_insert_with(Vec::new)
                    .push(crate::csv::PolicyRule {
                        verbs: Some(vec!["get".into(), "list".into(), "watch".into()]),
                        api_groups: Some(vec![String::new()]),
                        resources: Some(vec!["namespaces".into()]),
                        ..Default::default()
                    });
                perms.push(p);
            }
        }
        let mut out = Vec::new();
        for p in &perms {
            let sa = sa_or_default(&p.service_account_name);
            let name = unique_name(&format!("{}-{sa}", self.csv_name()), &p.to_go_value());
            out.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": rules_value(p),
            }));
            out.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": self.binding_subject(sa),
            }));
        }
        out
    }

    fn inject_ca(&self, obj: &mut Value, cert: &CertNames, kind: &str) {
        let ann = match self.provider {
            None => return,
            Some(CertProvider::CertManager) => match kind {
                "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "CustomResourceDefinition" => (
                    "cert-manager.io/inject-ca-from",
                    format!("{}/{}", self.ns, cert.cert),
                ),
                _ => return,
            },
            Some(CertProvider::OpenshiftServiceCa) => match kind {
                "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "CustomResourceDefinition" => (
                    "service.beta.openshift.io/inject-cabundle",
                    "true".to_string(),
                ),
                "Service" => (
                    "service.beta.openshift.io/serving-cert-secret-name",
                    cert.cert.clone(),
                ),
                _ => return,
            },
            Some(CertProvider::Builtin) => match kind {
                "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "CustomResourceDefinition" => (
                    olm_k8s::INJECT_CA_FROM_ANNOTATION,
                    format!("{}/{}", self.ns, cert.cert),
                ),
                "Service" => (olm_k8s::SERVING_CERT_SECRET_ANNOTATION, cert.cert.clone()),
                _ => return,
            },
        };
        set_annotation(obj, ann.0, &ann.1);
    }

    fn crds(&self) -> Result<Vec<Value>, RenderError> {
        let mut conv: BTreeMap<&str, &WebhookDescription> = BTreeMap::new();
        for w in self
            .b
            .csv
            .spec
            .webhookdefinitions
            .iter()
            .filter(|w| w.webhook_type == WebhookType::ConversionWebhook)
        {
            for c in &w.conversion_crds {
                if conv.insert(c, w).is_some() {
                    return Err(RenderError::Generate(format!(
                        "custom resource definition '{c}' is referenced by multiple conversion webhook definitions"
                    )));
                }
            }
        }
        let mut out = Vec::new();
        for crd in &self.b.crds {
            let mut obj = crd.object.clone();
            let name = crd.name();
            if let Some(w) = conv.get(name) {
                if obj.pointer("/spec/preserveUnknownFields") == Some(&Value::Bool(true)) {
                    return Err(RenderError::Generate(format!(
                        "custom resource definition '{name}' must have .spec.preserveUnknownFields set to false to let API Server call webhook to do the conversion"
                    )));
                }
                let cert = cert_names(&w.deployment_name);
                let path = w.webhook_path.clone().unwrap_or_else(|| "/".into());
                let mut webhook = Map::new();
                webhook.insert(
                    "clientConfig".into(),
                    json!({"service": {"namespace": self.ns, "name": cert.service, "path": path, "port": w.container_port}}),
                );
                webhook.insert(
                    "conversionReviewVersions".into(),
                    w.admission_review_versions
                        .as_ref()
                        .map_or(Value::Null, |v| json!(v)),
                );
                if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.insert(
                        "conversion".into(),
                        json!({"strategy": "Webhook", "webhook": webhook}),
                    );
                }
                self.inject_ca(&mut obj, &cert, "CustomResourceDefinition");
            }
            typed::normalize_crd(&mut obj);
            out.push(obj);
        }
        Ok(out)
    }

    fn others(&self) -> Result<Vec<Value>, RenderError> {
        let mut out = Vec::new();
        for o in &self.b.others {
            let Some(namespaced) = supported_kind(o.kind()) else {
                return Err(RenderError::Generate(format!(
                    "bundle contains unsupported resource: Name: {}, Kind: {}",
                    o.name(),
                    o.kind()
                )));
            };
            let mut obj = o.object.clone();
            if namespaced && let Some(m) = obj.as_object_mut() {
                let meta = m.entry("metadata").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert("namespace".into(), json!(self.ns));
                }
            }
            out.push(obj);
        }
        Ok(out)
    }

    fn deployments(&self, config: Option<&Value>) -> Vec<Value> {
        let webhook_deps: BTreeSet<&str> = self
            .b
            .csv
            .spec
            .webhookdefinitions
            .iter()
            .map(|w| w.deployment_name.as_str())
            .collect();
        let csv_ann = self.b.render_annotations();
        let mut out = Vec::new();
        for d in &self.b.csv.spec.install.spec.deployments {
            let mut spec = d.spec.clone();
            typed::normalize_deployment_spec(&mut spec);
            let tmpl_ann: BTreeMap<String, String> = spec
                .pointer("/template/metadata/annotations")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let mut ann = csv_ann.clone();
            ann.extend(tmpl_ann);
            ann.insert(TARGET_NAMESPACES_ANNOTATION.into(), self.targets.join(","));
            ann.insert(OPERATOR_NAMESPACE_ANNOTATION.into(), self.ns.to_string());
            if let Some(m) = spec
                .pointer_mut("/template/metadata")
                .and_then(Value::as_object_mut)
            {
                m.insert("annotations".into(), json!(ann));
            }
            if let Some(s) = spec.as_object_mut() {
                s.insert("revisionHistoryLimit".into(), json!(1));
            }
            let mut meta = Map::new();
            meta.insert("name".into(), json!(d.name));
            meta.insert("namespace".into(), json!(self.ns));
            if let Some(l) = d.label.as_ref().filter(|l| !l.is_empty()) {
                meta.insert("labels".into(), json!(l));
            }
            let mut dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec, "status": {}});
            if self.provider.is_some() && webhook_deps.contains(d.name.as_str()) {
                add_cert_volumes(&mut dep, &cert_names(&d.name).cert);
            }
            if let Some(cfg) = config {
                crate::config::apply_deployment_config(&mut dep, cfg);
            }
            // Upstream's Deployment is typed, so quantities come out in canonical form.
            if let Some(pod) = dep.pointer_mut("/spec/template/spec") {
                typed::canonicalize_pod_quantities(pod);
            }
            out.push(dep);
        }
        out
    }

    fn webhook_configurations(&self, t: WebhookType) -> Vec<Value> {
        let kind = match t {
            WebhookType::ValidatingAdmissionWebhook => "ValidatingWebhookConfiguration",
            _ => "MutatingWebhookConfiguration",
        };
        let mut out = Vec::new();
        for w in self
            .b
            .csv
            .spec
            .webhookdefinitions
            .iter()
            .filter(|w| w.webhook_type == t)
        {
            let cert = cert_names(&w.deployment_name);
            let name = w
                .generate_name
                .strip_suffix('-')
                .unwrap_or(&w.generate_name)
                .to_string();
            let mut service = Map::new();
            service.insert("namespace".into(), json!(self.ns));
            service.insert("name".into(), json!(cert.service));
            if let Some(p) = &w.webhook_path {
                service.insert("path".into(), json!(p));
            }
            service.insert("port".into(), json!(w.container_port));
            let mut hook = Map::new();
            hook.insert("name".into(), json!(name));
            hook.insert("clientConfig".into(), json!({"service": service}));
            let rules: Vec<Value> = w.rules.iter().map(normalize_rule).collect();
            if !rules.is_empty() {
                hook.insert("rules".into(), Value::Array(rules));
            }
            let opt = |hook: &mut Map<String, Value>, k: &str, v: Option<Value>| {
                if let Some(v) = v.filter(|v| !v.is_null()) {
                    hook.insert(k.into(), v);
                }
            };
            opt(
                &mut hook,
                "failurePolicy",
                w.failure_policy.as_ref().map(|v| json!(v)),
            );
            opt(
                &mut hook,
                "matchPolicy",
                w.match_policy.as_ref().map(|v| json!(v)),
            );
            if !self.all_namespaces()
                && !self.targets.iter().any(String::is_empty)
                && !self.targets.is_empty()
            {
                opt(
                    &mut hook,
                    "namespaceSelector",
                    Some(
                        json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": self.targets}]}),
                    ),
                );
            }
            opt(&mut hook, "objectSelector", w.object_selector.clone());
            opt(
                &mut hook,
                "sideEffects",
                w.side_effects.as_ref().map(|v| json!(v)),
            );
            opt(
                &mut hook,
                "timeoutSeconds",
                w.timeout_seconds.map(|v| json!(v)),
            );
            hook.insert(
                "admissionReviewVersions".into(),
                w.admission_review_versions
                    .as_ref()
                    .map_or(Value::Null, |v| json!(v)),
            );
            if t == WebhookType::MutatingAdmissionWebhook {
                opt(
                    &mut hook,
                    "reinvocationPolicy",
                    w.reinvocation_policy.as_ref().map(|v| json!(v)),
                );
            }
            let mut obj = json!({
                "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                "metadata": {"name": name, "namespace": self.ns},
                "webhooks": [hook],
            });
            self.inject_ca(&mut obj, &cert, kind);
            out.push(obj);
        }
        out
    }

    fn services(&self) -> Vec<Value> {
        let mut ports_by_dep: BTreeMap<&str, Vec<(i64, Value)>> = BTreeMap::new();
        for w in &self.b.csv.spec.webhookdefinitions {
            let port = if w.container_port > 0 {
                i64::from(w.container_port)
            } else {
                443
            };
            let target = w
                .target_port
                .clone()
                .filter(|t| !t.is_null())
                .unwrap_or_else(|| json!(port));
            let entry = ports_by_dep.entry(&w.deployment_name).or_default();
            if !entry.iter().any(|(p, t)| *p == port && *t == target) {
                entry.push((port, target));
            }
        }
        let mut out = Vec::new();
        for d in &self.b.csv.spec.install.spec.deployments {
            let Some(ports) = ports_by_dep.get(d.name.as_str()) else {
                continue;
            };
            let mut ports = ports.clone();
            // Upstream sorts by port, then by the target port's integer value (0 for names).
            ports.sort_by_key(|(p, t)| {
                let target = t
                    .as_i64()
                    .or_else(|| t.as_str().and_then(|s| s.parse().ok()))
                    .unwrap_or(0);
                (*p, target)
            });
            let cert = cert_names(&d.name);
            let mut spec = Map::new();
            spec.insert(
                "ports".into(),
                Value::Array(
                    ports
                        .iter()
                        .map(|(p, t)| json!({"name": p.to_string(), "port": p, "targetPort": t}))
                        .collect(),
                ),
            );
            if let Some(sel) = d
                .spec
                .pointer("/selector/matchLabels")
                .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
            {
                spec.insert("selector".into(), sel.clone());
            }
            let mut obj = json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": cert.service, "namespace": self.ns},
                "spec": spec,
                "status": {"loadBalancer": {}},
            });
            self.inject_ca(&mut obj, &cert, "Service");
            out.push(obj);
        }
        out
    }

    fn cert_objects(&self) -> Vec<Value> {
        if self.provider != Some(CertProvider::CertManager) {
            return Vec::new();
        }
        let deps: BTreeSet<&str> = self
            .b
            .csv
            .spec
            .webhookdefinitions
            .iter()
            .map(|w| w.deployment_name.as_str())
            .collect();
        let mut out = Vec::new();
        for d in deps {
            let names = cert_names(d);
            let issuer = object_name_for_base_and_suffix(&names.cert, "selfsigned-issuer");
            let host = format!("{}.{}", names.service, self.ns);
            out.push(json!({
                "apiVersion": "cert-manager.io/v1", "kind": "Issuer",
                "metadata": {"name": issuer, "namespace": self.ns},
                "spec": {"selfSigned": {}},
                "status": {},
            }));
            out.push(json!({
                "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                "metadata": {"name": names.cert, "namespace": self.ns},
                "spec": {
                    "commonName": host,
                    "dnsNames": [host, format!("{host}.svc"), format!("{host}.svc.cluster.local")],
                    "duration": "17520h0m0s",
                    "issuerRef": {"name": issuer},
                    "renewBefore": "24h0m0s",
                    "secretName": names.cert,
                    "usages": ["server auth"],
                },
                "status": {},
            }));
        }
        out
    }
}

/// `admissionregistration/v1 RuleWithOperations`: all fields `omitempty`.
fn normalize_rule(r: &Value) -> Value {
    let mut out = Map::new();
    if let Some(m) = r.as_object() {
        for k in [
            "operations",
            "apiGroups",
            "apiVersions",
            "resources",
            "scope",
        ] {
            match m.get(k) {
                Some(Value::Array(a)) if !a.is_empty() => {
                    out.insert(k.into(), Value::Array(a.clone()));
                }
                Some(Value::String(s)) if !s.is_empty() => {
                    out.insert(k.into(), json!(s));
                }
                _ => {}
            }
        }
    }
    Value::Object(out)
}

fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    let Some(o) = obj.as_object_mut() else { return };
    let meta = o.entry("metadata").or_insert_with(|| json!({}));
    let Some(m) = meta.as_object_mut() else {
        return;
    };
    let ann = m.entry("annotations").or_insert_with(|| json!({}));
    if !ann.is_object() {
        *ann = json!({});
    }
    if let Some(a) = ann.as_object_mut() {
        a.insert(key.into(), json!(value));
    }
}

/// Serving-certificate volumes upstream mounts into webhook servers, in its order:
/// `(volume, mount path, file for tls.crt, file for tls.key)`.
const CERT_VOLUMES: &[(&str, &str, &str, &str)] = &[
    (
        "webhook-cert",
        "/tmp/k8s-webhook-server/serving-certs",
        "tls.crt",
        "tls.key",
    ),
    (
        "apiservice-cert",
        "/apiserver.local.config/certificates",
        "apiserver.crt",
        "apiserver.key",
    ),
];

/// Replaces whatever serving-certificate volumes the bundle brought with the provider's secret,
/// mounted where operator SDK projects expect it (both the webhook and the APIService path).
fn add_cert_volumes(dep: &mut Value, secret: &str) {
    let Some(pod) = dep
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let mut replace: BTreeSet<String> = CERT_VOLUMES.iter().map(|c| c.0.to_string()).collect();
    let paths: BTreeSet<&str> = CERT_VOLUMES.iter().map(|c| c.1).collect();
    if let Some(cs) = pod.get("containers").and_then(Value::as_array) {
        for c in cs {
            for vm in c
                .get("volumeMounts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if vm
                    .get("mountPath")
                    .and_then(Value::as_str)
                    .is_some_and(|p| paths.contains(p))
                    && let Some(n) = vm.get("name").and_then(Value::as_str)
                {
                    replace.insert(n.to_string());
                }
            }
        }
    }
    let named = |v: &Value| {
        v.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| replace.contains(n))
    };
    let mut volumes: Vec<Value> = pod
        .get("volumes")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(|v| !named(v)).cloned().collect())
        .unwrap_or_default();
    for (name, _, crt, key) in CERT_VOLUMES {
        volumes.push(
            json!({"name": name, "secret": {"secretName": secret, "items": [
            {"key": "tls.crt", "path": crt}, {"key": "tls.key", "path": key}]}}),
        );
    }
    pod.insert("volumes".into(), Value::Array(volumes));
    if let Some(cs) = pod.get_mut("containers").and_then(Value::as_array_mut) {
        for c in cs.iter_mut().filter_map(Value::as_object_mut) {
            let mut mounts: Vec<Value> = c
                .get("volumeMounts")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter(|v| !named(v)).cloned().collect())
                .unwrap_or_default();
            for (name, path, _, _) in CERT_VOLUMES {
                mounts.push(json!({"name": name, "mountPath": path}));
            }
            c.insert("volumeMounts".into(), Value::Array(mounts));
        }
    }
}
