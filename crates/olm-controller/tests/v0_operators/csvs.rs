//! CSVs and what their install writes: Operator objects, APIServices and their serving
//! certificates, webhooks, failures that must stay put, bad input.

use super::*;

/// An Operator object for a CSV labelled `operators.coreos.com/<package>.<namespace>` (as a
/// Subscription's adoption labels it): the CSV's Deployment, OperatorCondition and owned CRD
/// take the label, the Operator is created listing them with their conditions, and comes back
/// when deleted while components remain.
pub(crate) async fn operator_objects(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let group_name = format!("{id}.example.com");
    env.namespace(ns, json!({})).await?;
    env.apply(crd("widgets", &group_name, "Widget")).await?;
    env.apply(group(ns, "og", json!({"targetNamespaces": [ns]})))
        .await?;
    let operator = format!("widget.{ns}");
    let label = format!("operators.coreos.com/{operator}");
    let mut object = csv(
        ns,
        "widget.v1.0.0",
        &["OwnNamespace"],
        Some(("widgets", &group_name, "Widget")),
        json!({}),
    );
    object["metadata"]["labels"] = json!({ label.clone(): "" });
    env.apply(object).await?;
    env.wait_phase(ns, "widget.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let operators: Api<DynamicObject> = Api::all_with(
        env.client.clone(),
        &resource("operators.coreos.com", "v1", "Operator", "operators"),
    );
    let wanted = |o: &Option<DynamicObject>| {
        let refs = o
            .as_ref()
            .and_then(|o| o.data["status"]["components"]["refs"].as_array().cloned())
            .unwrap_or_default();
        let has = |kind: &str| refs.iter().any(|r| r["kind"] == kind);
        has("ClusterServiceVersion")
            && has("Deployment")
            && has("CustomResourceDefinition")
            && has("OperatorCondition")
            && refs.iter().any(|r| {
                r["kind"] == "ClusterServiceVersion" && r["conditions"][0]["type"] == "Succeeded"
            })
    };
    let o = wait(
        "the Operator listing its components",
        || async { Ok(operators.get_opt(&operator).await?) },
        wanted,
    )
    .await?
    .context("no Operator")?;
    let components = &o.data["status"]["components"];
    check_eq!(
        components["labelSelector"],
        json!({"matchExpressions": [{"key": label, "operator": "Exists"}]})
    );
    let refs = components["refs"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = refs.iter().filter_map(|r| r["kind"].as_str()).collect();
    let mut sorted = kinds.clone();
    sorted.sort_unstable();
    check_eq!(kinds, sorted, "refs are sorted by kind");
    let csv_ref = refs
        .iter()
        .find(|r| r["kind"] == "ClusterServiceVersion")
        .context("no CSV ref")?;
    check_eq!(csv_ref["namespace"], ns);
    check_eq!(csv_ref["apiVersion"], "operators.coreos.com/v1alpha1");
    check_eq!(csv_ref["conditions"][0]["status"], "True");
    check_eq!(csv_ref["conditions"][0]["reason"], "InstallSucceeded");
    let deployment = Api::<Deployment>::namespaced(env.client.clone(), ns)
        .get("widget")
        .await?;
    check_eq!(
        deployment.labels().get(&label).map(String::as_str),
        Some("")
    );
    // Deleted while its components remain: made again.
    operators
        .delete(&operator, &DeleteParams::default())
        .await?;
    wait(
        "the Operator made again",
        || async { Ok(operators.get_opt(&operator).await?) },
        |o| {
            o.as_ref()
                .is_some_and(|o| o.metadata.deletion_timestamp.is_none())
                && wanted(o)
        },
    )
    .await?;
    Ok(())
}

/// Serves an aggregated API's discovery document over TLS with `cert`/`key` to every request on
/// `listener` until the process ends: enough for kube-apiserver's availability check, which
/// fetches `/apis/<group>/<version>` and wants a 200.
pub(crate) fn serve_discovery(
    listener: std::net::TcpListener,
    cert: &[u8],
    key: &[u8],
    body: String,
) -> Result<()> {
    use rustls::pki_types::pem::PemObject;
    use std::io::{Read, Write};
    let chain =
        rustls::pki_types::CertificateDer::pem_slice_iter(cert).collect::<Result<Vec<_>, _>>()?;
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key)?;
    let config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?,
    );
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = config.clone();
            let body = body.clone();
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(conn, stream);
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.flush();
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    Ok(())
}

/// An operator serving an aggregated API (seed 002): olm makes the Service with the
/// Deployment's selector, the serving certificate Secret, the APIService with the CA bundle, and
/// the CSV succeeds once kube-apiserver finds the API available — served here by the test
/// itself behind the operator's host-network pod (its endpoint is this machine's address).
pub(crate) async fn apiservice(env: &Env, id: &str) -> Result<()> {
    if env.node_address.is_none() {
        bail!("this machine has no address but loopback: an aggregated API cannot be reached");
    }
    let ns = id;
    let group_name = format!("{id}.example.com");
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::UNSPECIFIED, 0))?;
    let port = listener.local_addr()?.port();
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    // Two resources of one APIService, as an extension API server serves a group version.
    let extra = json!({"apiservicedefinitions": {"owned": [{
        "group": group_name, "version": "v1alpha1", "kind": "Gizmo", "name": "gizmos",
        "displayName": "Gizmo", "deploymentName": "gizmo", "containerPort": port,
    }, {
        "group": group_name, "version": "v1alpha1", "kind": "Doohickey", "name": "doohickeys",
        "displayName": "Doohickey", "deploymentName": "gizmo", "containerPort": port,
    }]}});
    // What an older OLM made for this APIService under its legacy names: the Service labelled
    // as this CSV's goes on install, the Secret labelled as another CSV's stays (upstream's
    // deleteLegacyAPIServiceResources).
    let legacy_service = format!("v1alpha1-{}", group_name.replace('.', "-"));
    let legacy_secret = format!("v1alpha1.{group_name}-cert");
    let owned_by = |csv: &str| json!({"olm.owner": csv, "olm.owner.namespace": ns, "olm.owner.kind": "ClusterServiceVersion"});
    env.apply(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": legacy_service, "namespace": ns, "labels": owned_by("gizmo.v1.0.0")},
        "spec": {"ports": [{"port": 443}]}}))
        .await?;
    env.apply(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": legacy_secret, "namespace": ns, "labels": owned_by("someone-else")}}))
        .await?;
    let mut object = csv(ns, "gizmo.v1.0.0", &["OwnNamespace"], None, extra.clone());
    object["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["hostNetwork"] =
        json!(true);
    env.apply(object).await?;
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(env.client.clone(), ns);
    let secret = wait(
        "the serving certificate Secret",
        || async { Ok(secrets.get_opt("gizmo-service-cert").await?) },
        |s| s.is_some(),
    )
    .await?
    .context("no Secret")?;
    check_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.clone().unwrap_or_default();
    let cert = data.get("tls.crt").context("no tls.crt")?.0.clone();
    let key = data.get("tls.key").context("no tls.key")?.0.clone();
    let body = json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group_name}/v1alpha1"),
        "resources": [{"name": "gizmos", "singularName": "gizmo", "namespaced": true, "kind": "Gizmo", "verbs": ["get", "list"]},
            {"name": "doohickeys", "singularName": "doohickey", "namespaced": true, "kind": "Doohickey", "verbs": ["get", "list"]}]});
    serve_discovery(listener, &cert, &key, body.to_string())?;
    let o = env
        .wait_phase(ns, "gizmo.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let owned = o["status"]["requirementStatus"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !owned
        .iter()
        .any(|r| r["kind"] == "APIService" && r["status"] == "DeploymentFound")
    {
        bail!("no DeploymentFound APIService requirement: {owned:?}");
    }
    let legacy_services =
        Api::<k8s_openapi::api::core::v1::Service>::namespaced(env.client.clone(), ns);
    check_eq!(
        legacy_services.get_opt(&legacy_service).await?.is_none(),
        true
    );
    check_eq!(secrets.get_opt(&legacy_secret).await?.is_some(), true);
    // Each resource gets the ClusterRoles that aggregate into admin, edit and view (upstream's
    // ensureClusterRolesForCSV), the second of the APIService's too.
    let roles = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(env.client.clone());
    for resource in ["gizmos", "doohickeys"] {
        for suffix in ["admin", "edit", "view"] {
            let name = format!("{resource}-v1alpha1-{suffix}");
            let role = wait(
                &format!("ClusterRole {name}"),
                || async { Ok(roles.get_opt(&name).await?) },
                |r| r.is_some(),
            )
            .await?
            .context("no ClusterRole")?;
            let rule = role.rules.unwrap_or_default().into_iter().next();
            check_eq!(
                rule.and_then(|r| r.resources),
                Some(vec![resource.to_owned()])
            );
        }
    }
    let apiservice =
        Api::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>::all(
            env.client.clone(),
        )
        .get(&format!("v1alpha1.{group_name}"))
        .await?;
    let spec = apiservice.spec.clone().unwrap_or_default();
    check_eq!(
        spec.service.as_ref().and_then(|s| s.name.clone()),
        Some("gizmo-service".to_owned())
    );
    check_eq!(spec.ca_bundle.is_some(), true);
    let available = apiservice
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default();
    check_eq!(
        available
            .iter()
            .any(|c| c.type_ == "Available" && c.status == "True"),
        true
    );
    let service = Api::<k8s_openapi::api::core::v1::Service>::namespaced(env.client.clone(), ns)
        .get("gizmo-service")
        .await?;
    check_eq!(
        service.spec.and_then(|s| s.selector),
        Some(std::collections::BTreeMap::from([(
            "app".to_owned(),
            "gizmo".to_owned()
        )]))
    );

    // Another CSV owning the same APIService, replacing nothing, may not adopt it (upstream's
    // apiServiceOwnerConflicts), and leaves it pointing at the first one's Service.
    let mut rival = csv(ns, "rival.v1.0.0", &["OwnNamespace"], None, extra.clone());
    rival["spec"]["install"]["spec"]["deployments"][0]["name"] = json!("gizmo");
    env.apply(rival).await?;
    let failed = env
        .wait_phase(ns, "rival.v1.0.0", "Failed", "OwnerConflict")
        .await?;
    check_eq!(failed["status"]["message"], "unable to adopt APIService");
    let services =
        Api::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>::all(
            env.client.clone(),
        );
    let kept = services.get(&format!("v1alpha1.{group_name}")).await?;
    check_eq!(
        kept.labels().get("olm.owner").map(String::as_str),
        Some("gizmo.v1.0.0")
    );

    // An APIService whose owner labels name a CSV that does not exist is deleted (upstream's
    // syncAPIService), as one a deleted CSV's namespace left.
    let orphan_group = format!("orphan.{id}.example.com");
    let orphan = format!("v1alpha1.{orphan_group}");
    services
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": orphan, "labels": {
                    "olm.owner": "gone.v1.0.0", "olm.owner.namespace": ns,
                    "olm.owner.kind": "ClusterServiceVersion"}},
                "spec": {"group": orphan_group, "version": "v1alpha1",
                    "groupPriorityMinimum": 100, "versionPriority": 100},
            }))?,
        )
        .await?;
    wait(
        &format!("APIService {orphan} deleted"),
        || async { Ok(services.get_opt(&orphan).await?) },
        |a| a.is_none(),
    )
    .await?;
    Ok(())
}

/// A CA and a serving certificate for `hosts`, valid until the next midnight (UTC): less than
/// the day before expiry at which olm renews.
pub(crate) fn expiring_certificate(hosts: &[String]) -> Result<(String, String, String)> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let tomorrow = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .tomorrow()?;
    let until = rcgen::date_time_ymd(
        i32::from(tomorrow.year()),
        u8::try_from(tomorrow.month())?,
        u8::try_from(tomorrow.day())?,
    );
    let since = rcgen::date_time_ymd(2020, 1, 1);
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.not_before = since;
    ca.not_after = until;
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, &ca_key);
    let key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(hosts.to_vec())?;
    leaf.not_before = since;
    leaf.not_after = until;
    let cert = leaf.signed_by(&key, &issuer)?;
    Ok((ca_cert.pem(), cert.pem(), key.serialize_pem()))
}

/// Certificate rotation (seed 002): a webhook operator's serving certificate about to expire
/// (here replaced by one expiring by midnight) is reissued by olm — a new CA, two years — and the
/// Deployment is rolled to it (its pod template's `olmcahash`), the webhook's `caBundle` with it.
pub(crate) async fn cert_rotation(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let hook = webhook(
        &format!("vrotor.{id}.example.com"),
        "ValidatingAdmissionWebhook",
        "rotor",
        &[&format!("{id}.example.com")],
        &["rotors"],
    );
    env.apply(csv(
        ns,
        "rotor.v1.0.0",
        &["OwnNamespace"],
        None,
        json!({"webhookdefinitions": [hook]}),
    ))
    .await?;
    env.wait_phase(ns, "rotor.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let deployments = Api::<Deployment>::namespaced(env.client.clone(), ns);
    let ca_hash = |d: &Deployment| {
        d.spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get("olmcahash").cloned())
    };
    let before = ca_hash(&deployments.get("rotor").await?).context("no olmcahash")?;
    let service = "rotor-service";
    let hosts: Vec<String> = ["", ".svc", ".svc.cluster.local"]
        .iter()
        .map(|suffix| format!("{service}.{ns}{suffix}"))
        .collect();
    let (ca, cert, key) = expiring_certificate(&hosts)?;
    let b64 = |s: &str| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, s);
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(env.client.clone(), ns);
    secrets
        .patch(
            "rotor-service-cert",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"tls.crt": b64(&cert), "tls.key": b64(&key), "olmCAKey": b64(&ca)}})),
        )
        .await?;
    // Reissued: neither the CA written above nor the first one.
    let reissued = wait(
        "a new certificate",
        || async { Ok(secrets.get("rotor-service-cert").await?) },
        |s| {
            s.data
                .as_ref()
                .and_then(|d| d.get("olmCAKey"))
                .is_some_and(|c| c.0 != ca.as_bytes())
        },
    )
    .await?;
    let crt = reissued
        .data
        .as_ref()
        .and_then(|d| d.get("tls.crt"))
        .context("no tls.crt")?
        .0
        .clone();
    let (_, pem) = x509_parser::pem::parse_x509_pem(&crt)?;
    let parsed = pem.parse_x509()?;
    let days =
        (parsed.validity().not_after.timestamp() - jiff::Timestamp::now().as_second()) / 86_400;
    check_eq!((728..=730).contains(&days), true, "{days} days left");
    let rolled = wait(
        "the Deployment rolled to the new CA",
        || async { Ok(deployments.get("rotor").await?) },
        |d| ca_hash(d).is_some_and(|h| h != before),
    )
    .await?;
    let after = ca_hash(&rolled).context("no olmcahash")?;
    check_eq!(
        reissued.annotations().get("olmcahash").cloned(),
        Some(after),
        "the Deployment carries the Secret's CA hash"
    );
    env.wait_phase(ns, "rotor.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    Ok(())
}

pub(crate) fn webhook(
    name: &str,
    kind: &str,
    deployment: &str,
    groups: &[&str],
    resources: &[&str],
) -> Value {
    json!({
        "generateName": name,
        "type": kind,
        "deploymentName": deployment,
        "containerPort": 9443,
        "targetPort": 9443,
        "webhookPath": "/validate",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Ignore",
        "rules": [{"apiGroups": groups, "apiVersions": ["v1"], "operations": ["CREATE"], "resources": resources}],
    })
}

/// Webhooks: an accepted CSV gets its Service, certificate Secret, mounts and a
/// ValidatingWebhookConfiguration scoped to its group's namespaces with the CA; each rule guard
/// fails a CSV with upstream's words; a conversion webhook of an operator that is not
/// AllNamespaces-only fails its install.
pub(crate) async fn webhooks(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let hook = webhook(
        &format!("vwidget.{id}.example.com"),
        "ValidatingAdmissionWebhook",
        "hooks",
        &[&format!("{id}.example.com")],
        &["widgets"],
    );
    env.apply(csv(
        ns,
        "hooks.v1.0.0",
        &["OwnNamespace"],
        None,
        json!({"webhookdefinitions": [hook]}),
    ))
    .await?;
    env.wait_phase(ns, "hooks.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let configs: Api<DynamicObject> = Api::all_with(
        env.client.clone(),
        &resource(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
    );
    let list = configs
        .list(
            &ListParams::default()
                .labels(&format!("olm.owner=hooks.v1.0.0,olm.owner.namespace={ns}")),
        )
        .await?;
    check_eq!(list.items.len(), 1);
    let config = serde_json::to_value(&list.items[0])?;
    let w = &config["webhooks"][0];
    check_eq!(w["clientConfig"]["service"]["name"], "hooks-service");
    check_eq!(w["clientConfig"]["service"]["port"], 9443);
    if w["clientConfig"]["caBundle"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        bail!("no caBundle: {w}");
    }
    let selector = w["namespaceSelector"]["matchLabels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if !selector
        .keys()
        .any(|k| k.starts_with("olm.operatorgroup.uid/"))
    {
        bail!("not scoped to the group: {w}");
    }
    let d = Api::<Deployment>::namespaced(env.client.clone(), ns)
        .get("hooks")
        .await?;
    let volumes: Vec<String> = d
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.volumes.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|v| v.name)
        .collect();
    check_eq!(volumes, ["apiservice-cert", "webhook-cert"]);
    let secret = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(env.client.clone(), ns)
        .get("hooks-service-cert")
        .await?;
    check_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    env.wait_csv(ns, "hooks.v1.0.0", "the finalizer", |o| {
        o["metadata"]["finalizers"] == json!(["operators.coreos.com/csv-cleanup"])
    })
    .await?;
    // Deleted: its cluster-scoped leftovers go with it, then the CSV.
    env.csvs(ns)
        .delete("hooks.v1.0.0", &DeleteParams::default())
        .await?;
    env.wait_gone(ns, "hooks.v1.0.0").await?;
    let selector = format!("olm.owner=hooks.v1.0.0,olm.owner.namespace={ns}");
    check_eq!(
        configs
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
            .len(),
        0
    );
    let bindings = Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(env.client.clone());
    check_eq!(
        bindings
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
            .len(),
        0
    );

    for (name, groups, resources, message) in [
        (
            "all",
            vec!["*"],
            vec!["pods"],
            "Webhook rules cannot include all groups",
        ),
        (
            "olm",
            vec!["operators.coreos.com"],
            vec!["subscriptions"],
            "Webhook rules cannot include the OLM group",
        ),
        (
            "hooks",
            vec!["admissionregistration.k8s.io"],
            vec!["validatingwebhookconfigurations"],
            "Webhook rules cannot include MutatingWebhookConfiguration or ValidatingWebhookConfiguration resources",
        ),
    ] {
        let bad = webhook(
            &format!("{name}.{id}.example.com"),
            "MutatingAdmissionWebhook",
            &format!("guard-{name}"),
            &groups,
            &resources,
        );
        let csv_name = format!("guard-{name}.v1.0.0");
        env.apply(csv(
            ns,
            &csv_name,
            &["OwnNamespace"],
            None,
            json!({"webhookdefinitions": [bad]}),
        ))
        .await?;
        let o = env
            .wait_phase(ns, &csv_name, "Failed", "InvalidWebhookDescription")
            .await?;
        check_eq!(o["status"]["message"], message);
    }

    let mut convert = webhook(
        &format!("cwidget.{id}.example.com"),
        "ConversionWebhook",
        "convert",
        &[],
        &[],
    );
    convert["conversionCRDs"] = json!([format!("things.{id}.example.com")]);
    env.apply(crd("things", &format!("{id}.example.com"), "Thing"))
        .await?;
    env.apply(csv(
        ns,
        "convert.v1.0.0",
        &["OwnNamespace", "AllNamespaces"],
        Some(("things", &format!("{id}.example.com"), "Thing")),
        json!({"webhookdefinitions": [convert]}),
    ))
    .await?;
    let o = env
        .wait_phase(ns, "convert.v1.0.0", "Failed", "InstallComponentFailed")
        .await?;
    check_eq!(
        o["status"]["message"],
        "install strategy failed: unable to manage conversion webhook: CSVs with conversion webhooks must support only AllNamespaces"
    );
    Ok(())
}

/// Bad input: an unknown install strategy fails the CSV with upstream's reason; a CRD name
/// without a dot leaves it untouched; the controller goes on with the others.
pub(crate) async fn bad_input(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let mut broken = csv(ns, "broken.v1.0.0", &["OwnNamespace"], None, json!({}));
    broken["spec"]["install"]["strategy"] = json!("helm");
    env.apply(broken).await?;
    let o = env
        .wait_phase(ns, "broken.v1.0.0", "Failed", "InvalidInstallStrategy")
        .await?;
    check_eq!(
        o["status"]["message"],
        "install strategy invalid: unrecognized install strategy"
    );
    let mut dupes = csv(ns, "dupes.v1.0.0", &["OwnNamespace"], None, json!({}));
    dupes["spec"]["installModes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "OwnNamespace", "supported": false}));
    env.apply(dupes).await?;
    env.wait_phase(ns, "dupes.v1.0.0", "Failed", "InvalidInstallModes")
        .await?;
    // A webhook naming a Deployment the strategy does not have: refused, naming it (upstream
    // would register the webhook without a CA, breaking every request it intercepts).
    let ghost = json!({"webhookdefinitions": [webhook(
        "vghost.example.com", "ValidatingAdmissionWebhook", "ghost", &["example.com"], &["things"],
    )]});
    env.apply(csv(ns, "phantom.v1.0.0", &["OwnNamespace"], None, ghost))
        .await?;
    let o = env
        .wait_csv(ns, "phantom.v1.0.0", "Failed naming the Deployment", |c| {
            c["status"]["phase"] == "Failed"
                && c["status"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("ghost"))
        })
        .await?;
    check_eq!(o["status"]["reason"], "InstallComponentFailed");
    check_eq!(
        o["status"]["message"],
        "install strategy failed: no deployment named ghost in the install strategy"
    );
    Ok(())
}

/// A namespace deleted under a running operator: its CSV's finalizer is released and the
/// namespace goes, with nothing left retrying.
pub(crate) async fn namespace_deleted(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    env.apply(csv(ns, "doomed.v1.0.0", &["OwnNamespace"], None, json!({})))
        .await?;
    env.wait_phase(ns, "doomed.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let namespaces = Api::<Namespace>::all(env.client.clone());
    namespaces.delete(ns, &DeleteParams::default()).await?;
    wait(
        "the namespace gone",
        || async { Ok(namespaces.get_opt(ns).await?) },
        |n| n.is_none(),
    )
    .await?;
    Ok(())
}

/// CSVs failed on what no repair fixes — webhook rules OLM refuses, an install strategy it does
/// not know — stay `Failed` with that reason, the history showing one failure and no trip
/// through `Pending` (`NeedsCertRotation` "owned APIServices need cert refresh", `NeedsReinstall`
/// "calculated deployment install is bad"), one `Warning` Event each, and no write after.
pub(crate) async fn terminal_failures(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let refused = webhook(
        &format!("all.{id}.example.com"),
        "ValidatingAdmissionWebhook",
        "refused",
        &["*"],
        &["pods"],
    );
    env.apply(csv(
        ns,
        "refused.v1.0.0",
        &["OwnNamespace"],
        None,
        json!({"webhookdefinitions": [refused]}),
    ))
    .await?;
    let mut helm = csv(ns, "helm.v1.0.0", &["OwnNamespace"], None, json!({}));
    helm["spec"]["install"]["strategy"] = json!("helm");
    env.apply(helm).await?;
    let cases = [
        (
            "refused.v1.0.0",
            "InvalidWebhookDescription",
            "Webhook rules cannot include all groups",
        ),
        (
            "helm.v1.0.0",
            "InvalidInstallStrategy",
            "install strategy invalid: unrecognized install strategy",
        ),
    ];
    for (name, reason, message) in cases {
        let o = env.wait_phase(ns, name, "Failed", reason).await?;
        check_eq!(o["status"]["message"], message, "{name}");
    }
    scenario_settles(env, id).await?;
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(env.client.clone(), ns);
    for (name, reason, message) in cases {
        let o = serde_json::to_value(env.csvs(ns).get(name).await?)?;
        check_eq!(o["status"]["phase"], "Failed", "{name} settled elsewhere");
        check_eq!(o["status"]["message"], message, "{name}");
        let history: Vec<(String, String)> = o["status"]["conditions"]
            .as_array()
            .unwrap_or(&Vec::new())
            .iter()
            .map(|c| {
                (
                    c["phase"].as_str().unwrap_or_default().to_owned(),
                    c["reason"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let failures = history.iter().filter(|(p, _)| p == "Failed").count();
        check_eq!(failures, 1, "{name}: history {history:?}");
        check_eq!(
            history.last().map(|(_, r)| r.as_str()),
            Some(reason),
            "{name}: history {history:?}"
        );
        let list = events
            .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
            .await?;
        let recorded: i32 = list
            .items
            .iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .map(|e| e.count.unwrap_or(1).max(1))
            .sum();
        check_eq!(recorded, 1, "{name}: {reason} Events");
    }
    Ok(())
}
