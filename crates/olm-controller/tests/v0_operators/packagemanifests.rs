//! PackageManifests served for the catalogs of the cluster.

use super::*;

/// PackageManifests (seed 001, "multi-arch" labels): a catalog whose default channel's head
/// carries `operatorframework.io/arch.arm64` and `operatorframework.io/os.windows` is listed
/// through the real API server (the aggregated `packages.operators.coreos.com/v1` that `olm run`
/// serves, reached through a Service whose Endpoints are this machine), filtered by those labels,
/// read by name, and shown as the Table kubectl asks for.
pub(crate) async fn packagemanifests(env: &Env, id: &str) -> Result<()> {
    let Some(node) = env.node_address else {
        bail!("this machine has no address but loopback: an aggregated API cannot be reached");
    };
    let ns = id;
    let system = olm_controller::run::DEFAULT_SYSTEM_NAMESPACE;
    env.namespace(ns, json!({})).await?;
    env.namespace(system, json!({})).await?;
    env.apply(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "packageserver-service", "namespace": system},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": env.packageserver_port}]}}))
        .await?;
    let endpoints =
        Api::<k8s_openapi::api::core::v1::Endpoints>::namespaced(env.client.clone(), system);
    endpoints
        .patch(
            "packageserver-service",
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "packageserver-service", "namespace": system},
                "subsets": [{"addresses": [{"ip": node.to_string()}],
                    "ports": [{"name": "https", "port": env.packageserver_port}]}]})),
        )
        .await?;
    let bundle = |package: &str, version: &str, labels: Value| {
        json!({"schema": "olm.bundle", "name": format!("{package}.v{version}"), "package": package,
        "image": format!("example.com/{package}-bundle:v{version}"),
        "properties": [
            {"type": "olm.package", "value": {"packageName": package, "version": version}},
            {"type": "olm.csv.metadata", "value": {"displayName": package,
                "provider": {"name": "Example Inc", "url": "https://example.com"},
                "labels": labels, "keywords": ["multi"]}},
        ]})
    };
    let arch = json!({"operatorframework.io/arch.arm64": "supported",
        "operatorframework.io/os.windows": "supported"});
    let docs = [
        json!({"schema": "olm.package", "name": "multiarch", "defaultChannel": "stable",
            "icon": {"base64data": "PHN2Zy8+", "mediatype": "image/svg+xml"}}),
        json!({"schema": "olm.channel", "package": "multiarch", "name": "stable", "entries": [
            {"name": "multiarch.v1.0.0"},
            {"name": "multiarch.v1.1.0", "replaces": "multiarch.v1.0.0"}]}),
        json!({"schema": "olm.channel", "package": "multiarch", "name": "alpha", "entries": [
            {"name": "multiarch.v1.0.0"}]}),
        bundle("multiarch", "1.0.0", json!({})),
        bundle("multiarch", "1.1.0", arch),
        json!({"schema": "olm.package", "name": "plain", "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": "plain", "name": "stable", "entries": [
            {"name": "plain.v0.1.0"}]}),
        bundle("plain", "0.1.0", json!({})),
    ];
    let fbc = docs
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    let served = serve_fbc(&fbc).await?;
    let mut source = address_source(ns, "arch-catalog", &served.address);
    source["spec"]["displayName"] = json!("Arch Operators");
    source["spec"]["publisher"] = json!("Example");
    env.apply(source).await?;
    let ar = resource(
        "packages.operators.coreos.com",
        "v1",
        "PackageManifest",
        "packagemanifests",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), ns, &ar);
    let names = |list: &[DynamicObject]| -> Vec<String> {
        let mut n: Vec<String> = list
            .iter()
            .filter(|o| o.labels().get("catalog").map(String::as_str) == Some("arch-catalog"))
            .map(ResourceExt::name_any)
            .collect();
        n.sort();
        n
    };
    let listed = wait(
        "the catalog's PackageManifests through the API server",
        || async { Ok(api.list(&ListParams::default()).await.ok().map(|l| l.items)) },
        |l| l.as_deref().is_some_and(|l| names(l).len() == 2),
    )
    .await?
    .unwrap_or_default();
    check_eq!(names(&listed), ["multiarch", "plain"]);
    let multi = listed
        .iter()
        .find(|o| o.name_any() == "multiarch")
        .context("no multiarch")?;
    let labels = multi.labels();
    check_eq!(
        labels
            .get("operatorframework.io/arch.arm64")
            .map(String::as_str),
        Some("supported")
    );
    check_eq!(
        labels
            .get("operatorframework.io/os.windows")
            .map(String::as_str),
        Some("supported")
    );
    check_eq!(
        labels.get("operatorframework.io/os.linux"),
        None,
        "no default os label"
    );
    check_eq!(
        labels.get("catalog-namespace").map(String::as_str),
        Some(ns)
    );
    check_eq!(
        labels.get("provider").map(String::as_str),
        Some("Example Inc")
    );
    let windows = api
        .list(&ListParams::default().labels("operatorframework.io/os.windows=supported"))
        .await?;
    check_eq!(names(&windows.items), ["multiarch"]);
    let linux = api
        .list(&ListParams::default().labels("operatorframework.io/os.linux=supported"))
        .await?;
    check_eq!(names(&linux.items), ["plain"]);
    let by_field = api
        .list(&ListParams::default().fields("metadata.name=plain"))
        .await?;
    check_eq!(names(&by_field.items), ["plain"]);
    let got = serde_json::to_value(api.get("multiarch").await?)?;
    let status = &got["status"];
    check_eq!(status["catalogSource"], json!("arch-catalog"));
    check_eq!(status["catalogSourceDisplayName"], json!("Arch Operators"));
    check_eq!(status["catalogSourcePublisher"], json!("Example"));
    check_eq!(status["defaultChannel"], json!("stable"));
    check_eq!(
        status["provider"],
        json!({"name": "Example Inc", "url": "https://example.com"})
    );
    let channels: Vec<&str> = status["channels"]
        .as_array()
        .context("channels")?
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    check_eq!(channels, ["alpha", "stable"]);
    let stable = &status["channels"][1];
    check_eq!(stable["currentCSV"], json!("multiarch.v1.1.0"));
    check_eq!(stable["currentCSVDesc"]["version"], json!("1.1.0"));
    check_eq!(stable["currentCSVDesc"]["keywords"], json!(["multi"]));
    check_eq!(
        stable["entries"],
        json!([{"name": "multiarch.v1.1.0", "version": "1.1.0"},
            {"name": "multiarch.v1.0.0", "version": "1.0.0"}])
    );
    // What `kubectl get packagemanifests` asks for.
    let request = http::Request::get(format!(
        "/apis/packages.operators.coreos.com/v1/namespaces/{ns}/packagemanifests?labelSelector=catalog%3Darch-catalog"
    ))
    .header(
        http::header::ACCEPT,
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    )
    .body(Vec::new())?;
    let table: Value = env.client.request(request).await?;
    check_eq!(table["kind"], json!("Table"));
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .context("columns")?
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    check_eq!(columns, ["Name", "Catalog", "Age"]);
    check_eq!(table["rows"][0]["cells"][0], json!("multiarch"));
    check_eq!(table["rows"][0]["cells"][1], json!("Arch Operators"));
    check_eq!(table["rows"].as_array().map(Vec::len), Some(2));
    check_eq!(
        stable["currentCSVDesc"].get("icon"),
        None,
        "icons are only served by the icon subresource"
    );
    // The icon subresource: the default channel head's icon, as an image.
    let icon = env
        .client
        .request_text(
            http::Request::get(format!(
                "/apis/packages.operators.coreos.com/v1/namespaces/{ns}/packagemanifests/multiarch/icon"
            ))
            .body(Vec::new())?,
        )
        .await?;
    check_eq!(icon, "<svg/>");
    served.stop().await?;
    Ok(())
}
