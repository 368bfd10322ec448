//! What a CSV's webhooks and owned APIServices need on the cluster (OLM's
//! `certresources.go`, `webhook.go`, `apiservice.go`): per Deployment that serves them, a
//! Service, a serving certificate issued by `olm` (730 days, renewed a day before, the rules of
//! `olm_security::certs`) in a Secret with its RBAC and authentication delegation; the
//! certificate mounted into the Deployment; the webhook configurations, CRD conversion sections
//! and APIServices pointing at the Service with the CA; and whether they are all in place.
//!
//! The objects are built by `olm_v0::olm_operator::certresources` and
//! `olm_v0::olm_operator::webhookconfig`; this module reads Secrets, issues certificates and
//! applies.

use olm_runtime::watch::RecoveringExt as _;
use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use olm_security::certs::{Decision, Held, Policy, Subject, ca_hash, decide};
use olm_v0::olm_operator::certresources::{
    CA_KEY, apiservice, auth_bindings, mount_certificate, secret, secret_name, secret_rbac,
    service, service_port,
};
use olm_v0::olm_operator::strategy::{CsvOwner, StrategyDeployment};
use olm_v0::olm_operator::webhookconfig::{
    ConversionCrd, DESCRIPTION_LABEL, configuration, conversion, conversion_problem,
    namespace_selector, service_name,
};
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::{ClusterServiceVersion, WebhookAdmissionType, WebhookDescription};
use serde_json::{Value, json};

use crate::FIELD_MANAGER;

/// The serving certificate of one Deployment.
#[derive(Debug, Clone)]
pub struct Cert {
    /// The Secret holding it.
    pub secret: String,
    /// The CA, PEM.
    pub ca_pem: Vec<u8>,
    /// Its hash, on the pod template.
    pub ca_hash: String,
    /// When it is due for renewal.
    pub renew_at: jiff::Timestamp,
}

/// What a Deployment serves: webhook and APIService ports.
fn served(csv: &ClusterServiceVersion) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for w in &csv.spec.webhook_definitions {
        let Some(d) = w.deployment_name.clone() else {
            continue;
        };
        out.entry(d).or_default().push(service_port(
            w.container_port.map(i64::from),
            w.target_port.as_ref(),
        ));
    }
    for a in csv
        .spec
        .api_service_definitions
        .iter()
        .flat_map(|d| d.owned.iter())
    {
        let Some(d) = a.deployment_name.clone() else {
            continue;
        };
        out.entry(d)
            .or_default()
            .push(service_port(a.container_port.map(i64::from), None));
    }
    out
}

/// Whether the CSV serves anything that needs a certificate.
pub fn needed(csv: &ClusterServiceVersion) -> bool {
    !served(csv).is_empty()
}

/// A Secret's `data` value under `key`.
fn data_of(s: &Secret, key: &str) -> Option<Vec<u8>> {
    s.data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| b.0.clone())
}

/// The certificates the CSV's Deployments hold now, by Deployment; a missing or unusable one is
/// absent, and `due` says whether any must be issued (missing, expiring, not fitting).
pub async fn read(
    client: &kube::Client,
    csv: &ClusterServiceVersion,
    now: jiff::Timestamp,
) -> Result<(BTreeMap<String, Cert>, bool), kube::Error> {
    let namespace = csv.namespace().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let mut out = BTreeMap::new();
    let mut due = false;
    for deployment in served(csv).keys() {
        let service = service_name(deployment);
        let name = secret_name(&service);
        let Some(s) = secrets.get_opt(&name).await? else {
            due = true;
            continue;
        };
        let (crt, key, ca) = (
            data_of(&s, "tls.crt"),
            data_of(&s, "tls.key"),
            data_of(&s, CA_KEY),
        );
        let held = Held {
            tls_crt: crt.as_deref(),
            tls_key: key.as_deref(),
            ca_crt: ca.as_deref(),
        };
        let subject = Subject {
            service,
            namespace: namespace.clone(),
        };
        match decide(&subject, &held, now, &Policy::default()) {
            Decision::Keep { renew_at, ca_hash } => {
                out.insert(
                    deployment.clone(),
                    Cert {
                        secret: name,
                        ca_pem: ca.unwrap_or_default(),
                        ca_hash,
                        renew_at,
                    },
                );
            }
            Decision::Issue { .. } => due = true,
        }
    }
    Ok((out, due))
}

/// Issues and applies what every served Deployment needs: Service, certificate Secret (kept
/// when still good), the Secret's Role and RoleBinding, authentication delegation.
pub async fn ensure(
    client: &kube::Client,
    csv: &ClusterServiceVersion,
    owner: &CsvOwner,
    entries: &[StrategyDeployment],
    now: jiff::Timestamp,
) -> Result<BTreeMap<String, Cert>, String> {
    let (mut held, _) = read(client, csv, now).await.map_err(|e| e.to_string())?;
    let namespace = owner.namespace.clone();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for (deployment, ports) in served(csv) {
        let Some(entry) = entries.iter().find(|e| e.name == deployment) else {
            return Err(format!(
                "no deployment named {deployment} in the install strategy"
            ));
        };
        let selector = entry
            .spec
            .get("selector")
            .and_then(|s| s.get("matchLabels"))
            .cloned()
            .unwrap_or(json!({}));
        let svc_name = service_name(&deployment);
        let svc = service(owner, &deployment, &ports, &selector);
        apply(client, &namespace, &svc, &params).await?;
        if !held.contains_key(&deployment) {
            let subject = Subject {
                service: svc_name.clone(),
                namespace: namespace.clone(),
            };
            let plan = olm_security::certs::plan(&subject, now, &Policy::default());
            let issued = olm_cluster::certs::issue(&plan).map_err(|e| e.to_string())?;
            let hash = ca_hash(issued.ca_pem.as_bytes());
            let s = secret(
                owner,
                &svc_name,
                issued.cert_pem.as_bytes(),
                issued.key_pem.as_bytes(),
                issued.ca_pem.as_bytes(),
                &hash,
            );
            apply(client, &namespace, &s, &params).await?;
            held.insert(
                deployment.clone(),
                Cert {
                    secret: secret_name(&svc_name),
                    ca_pem: issued.ca_pem.into_bytes(),
                    ca_hash: hash,
                    renew_at: plan.not_after,
                },
            );
        }
        let account = entry
            .spec
            .get("template")
            .and_then(|t| t.get("spec"))
            .and_then(|s| s.get("serviceAccountName"))
            .and_then(Value::as_str);
        for o in secret_rbac(owner, &svc_name, account)
            .into_iter()
            .chain(auth_bindings(owner, &svc_name, account))
        {
            let ns = o["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            apply(client, &ns, &o, &params).await?;
        }
    }
    Ok(held)
}

/// The strategy entry's spec with the certificate mounted, when its Deployment serves.
pub fn mount(entries: &mut [StrategyDeployment], certs: &BTreeMap<String, Cert>) {
    for e in entries {
        if let Some(c) = certs.get(&e.name) {
            mount_certificate(&mut e.spec, &c.secret, &c.ca_hash);
        }
    }
}

/// Applies the webhook configurations (one per definition, found again by its labels), the
/// conversion sections of the CRDs a conversion webhook names, and the owned APIServices.
pub async fn install(
    client: &kube::Client,
    csv: &ClusterServiceVersion,
    owner: &CsvOwner,
    group: &OperatorGroup,
    certs: &BTreeMap<String, Cert>,
) -> Result<(), String> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let selector = namespace_selector(
        &group.spec.target_namespaces,
        group.spec.selector.as_ref(),
        &group.uid().unwrap_or_default(),
    );
    let modes = &csv.spec.install_modes;
    for w in &csv.spec.webhook_definitions {
        let deployment = w.deployment_name.clone().unwrap_or_default();
        let Some(cert) = certs.get(&deployment) else {
            return Err(format!(
                "no serving certificate for deployment {deployment}"
            ));
        };
        if w.type_ == WebhookAdmissionType::ConversionWebhook {
            install_conversion(client, csv, w, modes, cert, &params).await?;
            continue;
        }
        let Some(config) =
            configuration(w, owner, selector.as_ref(), &cert.ca_pem).map_err(|e| e.to_string())?
        else {
            continue;
        };
        let kind = config["kind"].as_str().unwrap_or_default().to_owned();
        write_configuration(client, owner, &kind, &w.generate_name, config).await?;
    }
    for a in csv
        .spec
        .api_service_definitions
        .iter()
        .flat_map(|d| d.owned.iter())
    {
        let deployment = a.deployment_name.clone().unwrap_or_default();
        let Some(cert) = certs.get(&deployment) else {
            return Err(format!(
                "no serving certificate for deployment {deployment}"
            ));
        };
        delete_legacy(client, csv, &a.version, &a.group, &deployment).await?;
        let o = apiservice(
            owner,
            &a.group,
            &a.version,
            &deployment,
            a.container_port.map(i64::from),
            &cert.ca_pem,
        );
        let api: Api<APIService> = Api::all(client.clone());
        api.patch(
            &format!("{}.{}", a.version, a.group),
            &params,
            &Patch::Apply(&o),
        )
        .await
        .map_err(|e| {
            format!(
                "error installing APIService {}.{}: {}",
                a.version,
                a.group,
                olm_runtime::api_error::message(&e)
            )
        })?;
    }
    Ok(())
}

/// Deletes what older OLMs made for the APIService `version.group` under its legacy names, each
/// only if its owner labels name this CSV
/// ([`olm_v0::olm_operator::certresources::legacy_apiservice_resources`]).
async fn delete_legacy(
    client: &kube::Client,
    csv: &ClusterServiceVersion,
    version: &str,
    group: &str,
    deployment: &str,
) -> Result<(), String> {
    use k8s_openapi::api::core::v1::Service;
    use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
    use olm_v0::olm_operator::certresources::Legacy;
    let namespace = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    for legacy in
        olm_v0::olm_operator::certresources::legacy_apiservice_resources(version, group, deployment)
    {
        let (resource, within, object) = match &legacy {
            Legacy::Service(n) => (
                ApiResource::erase::<Service>(&()),
                Some(namespace.as_str()),
                n,
            ),
            Legacy::Secret(n) => (
                ApiResource::erase::<Secret>(&()),
                Some(namespace.as_str()),
                n,
            ),
            Legacy::Role(n) => (ApiResource::erase::<Role>(&()), Some(namespace.as_str()), n),
            Legacy::RoleBinding(n) => (
                ApiResource::erase::<RoleBinding>(&()),
                Some(namespace.as_str()),
                n,
            ),
            Legacy::AuthReader(n) => (
                ApiResource::erase::<RoleBinding>(&()),
                Some("kube-system"),
                n,
            ),
            Legacy::ClusterRoleBinding(n) => {
                (ApiResource::erase::<ClusterRoleBinding>(&()), None, n)
            }
        };
        let api: Api<DynamicObject> = match within {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        delete_if_owned(&api, object, &namespace, &name)
            .await
            .map_err(|e| {
                format!(
                    "error deleting legacy {} {object}: {}",
                    resource.kind,
                    olm_runtime::api_error::message(&e)
                )
            })?;
    }
    Ok(())
}

/// Deletes `name` through `api` when it exists and its owner labels name the CSV
/// `namespace/csv` (upstream's `AdoptableLabels` with the name checked), by its uid.
async fn delete_if_owned(
    api: &Api<DynamicObject>,
    name: &str,
    namespace: &str,
    csv: &str,
) -> Result<(), kube::Error> {
    let Some(existing) = api.get_opt(name).await? else {
        return Ok(());
    };
    if olm_v0::olm_operator::adoption::owner_csv(existing.labels()) != Some((namespace, csv)) {
        return Ok(());
    }
    let params = kube::api::DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: existing.uid(),
            resource_version: None,
        }),
        ..kube::api::DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => {
            tracing::info!(
                name,
                csv,
                namespace,
                "deleted a resource with a legacy APIService name"
            );
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

async fn install_conversion(
    client: &kube::Client,
    csv: &ClusterServiceVersion,
    desc: &WebhookDescription,
    modes: &[olm_v0::InstallMode],
    cert: &Cert,
    params: &PatchParams,
) -> Result<(), String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let owned: Vec<String> = csv
        .spec
        .custom_resource_definitions
        .iter()
        .flat_map(|d| d.owned.iter().map(|o| o.name.clone()))
        .collect();
    let names = &desc.conversion_crds;
    let mut found = Vec::new();
    for n in names {
        let crd = crds.get_opt(n).await.map_err(|e| e.to_string())?;
        found.push((
            n.clone(),
            crd.is_some_and(|c| c.spec.preserve_unknown_fields == Some(true)),
        ));
    }
    let checked: Vec<ConversionCrd<'_>> = found
        .iter()
        .map(|(n, preserve)| ConversionCrd {
            name: n,
            owned: owned.contains(n),
            preserve_unknown_fields: *preserve,
        })
        .collect();
    if let Some(problem) = conversion_problem(&csv.name_any(), modes, &checked) {
        return Err(problem);
    }
    let section = conversion(desc, &csv.namespace().unwrap_or_default(), &cert.ca_pem);
    for n in names {
        let patch = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": n},
            "spec": {"conversion": section},
        });
        crds.patch(n, params, &Patch::Apply(&patch))
            .await
            .map_err(|e| {
                format!(
                    "error updating conversion of CRD {n}: {}",
                    olm_runtime::api_error::message(&e)
                )
            })?;
    }
    Ok(())
}

fn configuration_resource(kind: &str) -> ApiResource {
    let plural = if kind == "MutatingWebhookConfiguration" {
        "mutatingwebhookconfigurations"
    } else {
        "validatingwebhookconfigurations"
    };
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
        plural,
    )
}

fn owner_selector(owner: &CsvOwner, generate_name: &str) -> String {
    format!(
        "{},{DESCRIPTION_LABEL}={generate_name}",
        crate::csv_owner_selector(&owner.namespace, &owner.name)
    )
}

/// Creates the configuration (named by the API server from `generateName`) or replaces the one
/// made from the same definition before.
async fn write_configuration(
    client: &kube::Client,
    owner: &CsvOwner,
    kind: &str,
    generate_name: &str,
    mut config: Value,
) -> Result<(), String> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &configuration_resource(kind));
    let existing = api
        .list(&ListParams::default().labels(&owner_selector(owner, generate_name)))
        .await
        .map_err(|e| e.to_string())?;
    let failed = |e: kube::Error| {
        format!(
            "error installing {kind} {generate_name}: {}",
            olm_runtime::api_error::message(&e)
        )
    };
    match existing.items.first() {
        Some(current) => {
            let same = current.data.get("webhooks") == config.get("webhooks")
                && current.labels() == &labels_of(&config);
            if same {
                return Ok(());
            }
            config["metadata"] = json!({
                "name": current.name_any(),
                "resourceVersion": current.resource_version(),
                "labels": config["metadata"]["labels"],
            });
            let object: DynamicObject =
                serde_json::from_value(config).map_err(|e| e.to_string())?;
            api.replace(&current.name_any(), &PostParams::default(), &object)
                .await
                .map_err(failed)?;
        }
        None => {
            let object: DynamicObject =
                serde_json::from_value(config).map_err(|e| e.to_string())?;
            api.create(&PostParams::default(), &object)
                .await
                .map_err(failed)?;
        }
    }
    Ok(())
}

fn labels_of(config: &Value) -> BTreeMap<String, String> {
    config["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the webhooks are in place (`Ok(false)`: not yet) and the owned APIServices
/// available (`Ok(false)`: not yet).
pub async fn installed(
    client: &kube::Client,
    index: &crate::Index,
    csv: &ClusterServiceVersion,
    owner: &CsvOwner,
) -> Result<(bool, bool), kube::Error> {
    let mut webhooks = true;
    for w in &csv.spec.webhook_definitions {
        let selector = owner_selector(owner, &w.generate_name);
        let present = match w.type_ {
            WebhookAdmissionType::ValidatingAdmissionWebhook => {
                any_labelled::<ValidatingWebhookConfiguration>(client, &selector).await?
            }
            WebhookAdmissionType::MutatingAdmissionWebhook => {
                any_labelled::<MutatingWebhookConfiguration>(client, &selector).await?
            }
            WebhookAdmissionType::ConversionWebhook => true,
        };
        webhooks &= present;
    }
    for w in csv
        .spec
        .webhook_definitions
        .iter()
        .filter(|w| w.type_ == WebhookAdmissionType::ConversionWebhook)
    {
        let service = service_name(w.deployment_name.as_deref().unwrap_or_default());
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for name in &w.conversion_crds {
            let pointed = crds
                .get_opt(name)
                .await?
                .and_then(|c| c.spec.conversion)
                .is_some_and(|c| {
                    c.strategy == "Webhook"
                        && c.webhook
                            .and_then(|w| w.client_config)
                            .and_then(|cc| cc.service)
                            .is_some_and(|s| s.name == service && s.namespace == owner.namespace)
                });
            webhooks &= pointed;
        }
    }
    let apiservices = csv
        .spec
        .api_service_definitions
        .iter()
        .flat_map(|d| d.owned.iter())
        .all(|a| {
            index
                .apiservices
                .get(&kube::runtime::reflector::ObjectRef::new(&format!(
                    "{}.{}",
                    a.version, a.group
                )))
                .is_some_and(|s| super::requirements::available(&s))
        });
    Ok((webhooks, apiservices))
}

/// Whether any cluster-scoped `K` carries the labels `selector` asks for.
async fn any_labelled<K>(client: &kube::Client, selector: &str) -> Result<bool, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    let found = Api::<K>::all(client.clone())
        .list_metadata(&ListParams::default().labels(selector))
        .await?;
    Ok(!found.items.is_empty())
}

/// Applies `object` (server-side, `params`) in `namespace`, or cluster-wide for a
/// ClusterRoleBinding; the error says what could not be installed.
pub(crate) async fn apply(
    client: &kube::Client,
    namespace: &str,
    object: &Value,
    params: &PatchParams,
) -> Result<(), String> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let plural = match kind {
        "Service" => "services",
        "ServiceAccount" => "serviceaccounts",
        "Secret" => "secrets",
        "NetworkPolicy" => "networkpolicies",
        "Role" => "roles",
        "RoleBinding" => "rolebindings",
        "ClusterRoleBinding" => "clusterrolebindings",
        other => return Err(format!("no resource known for {other}")),
    };
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    let api: Api<DynamicObject> = if kind == "ClusterRoleBinding" {
        Api::all_with(client.clone(), &ar)
    } else {
        Api::namespaced_with(client.clone(), namespace, &ar)
    };
    api.patch(name, params, &Patch::Apply(object))
        .await
        .map_err(|e| {
            format!(
                "error installing {kind} {name}: {}",
                olm_runtime::api_error::message(&e)
            )
        })?;
    Ok(())
}

/// Keeps the CSVs' certificate Secrets (labelled `olm.managed`) in view: one changed or deleted
/// by anyone wakes the CSV owning it, which checks its certificates again and reissues what no
/// longer fits. Metadata only: the certificates are read when the CSV is.
pub(crate) async fn watch_secrets(client: kube::Client, mut wake: crate::Wake) {
    use futures::StreamExt;
    use kube::runtime::watcher::{self, Event};
    let selector = format!(
        "{}=true",
        olm_v0::olm_operator::operatorgroup::MANAGED_LABEL
    );
    let stream = watcher::watcher(
        Api::<kube::api::PartialObjectMeta<Secret>>::all(client),
        watcher::Config::default().labels(&selector),
    )
    .recovering("secrets (serving certificates)");
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        let secret = match event {
            Ok(Event::Apply(s) | Event::Delete(s)) => s,
            Ok(Event::Init | Event::InitApply(_) | Event::InitDone) => continue,
            // Logged by the recovery, which also paces the retries.
            Err(_) => continue,
        };
        let namespace = secret.namespace().unwrap_or_default();
        let owners: Vec<_> = secret
            .owner_references()
            .iter()
            .filter(|r| r.kind == olm_v0::olm_operator::strategy::CSV_KIND)
            .map(|r| crate::wake::csv_ref(&namespace, &r.name))
            .collect();
        wake.csvs(owners).await;
    }
}
