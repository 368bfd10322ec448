//! The CRDs validate like upstream's on a real API server: valid objects are admitted, invalid
//! ones are refused with the messages users see from `kubectl` (field path, limit and CEL message),
//! transition rules guard immutable fields, and defaults are filled in.
//!
//! Vectors follow upstream's admission tests (`clusterextension_admission_test.go`,
//! `clustercatalog_types_test.go`, `clusterobjectset_types_test.go`) where they exist. One control
//! plane serves every case; failures are collected so one run reports all of them.
//!
//! Needs the control plane binaries from `tools/controlplane/build.sh`.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, ResourceExt};
use olm_testenv::ControlPlane;
use serde_json::{Value, json};

/// Outcome wanted from the API server.
enum Want {
    Ok,
    /// The error message contains this text.
    Err(String),
}

/// A change to a spec.
type Edit = fn(&mut Value);

fn err(s: &str) -> Want {
    Want::Err(s.to_string())
}

struct Kind {
    api: Api<DynamicObject>,
    kind: &'static str,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn next_name(prefix: &str) -> String {
    format!("{prefix}-{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

impl Kind {
    fn new(client: &Client, kind: &'static str, plural: &str) -> Kind {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("olm.operatorframework.io", "v1", kind),
            plural,
        );
        Kind {
            api: Api::all_with(client.clone(), &resource),
            kind,
        }
    }

    fn object(&self, name: &str, spec: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": self.kind,
            "metadata": {"name": name},
            "spec": spec,
        }))
        .expect("object")
    }

    async fn create(&self, spec: Value) -> Result<DynamicObject, String> {
        let name = next_name(&self.kind.to_lowercase());
        self.api
            .create(&PostParams::default(), &self.object(&name, spec))
            .await
            .map_err(message)
    }

    async fn update_spec(&self, name: &str, spec: Value) -> Result<DynamicObject, String> {
        let mut current = self.api.get(name).await.map_err(message)?;
        current.data["spec"] = spec;
        self.api
            .replace(name, &PostParams::default(), &current)
            .await
            .map_err(message)
    }

    async fn patch_status(&self, name: &str, status: Value) -> Result<DynamicObject, String> {
        self.api
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .map_err(message)
    }
}

fn message(e: kube::Error) -> String {
    match e {
        kube::Error::Api(status) => status.message.clone(),
        other => format!("(not an API error) {other}"),
    }
}

fn judge(case: &str, got: Result<DynamicObject, String>, want: &Want, failures: &mut Vec<String>) {
    match (got, want) {
        (Ok(_), Want::Ok) => {}
        (Err(e), Want::Ok) => failures.push(format!("{case}: refused: {e}")),
        (Ok(_), Want::Err(w)) => failures.push(format!("{case}: admitted, wanted {w:?}")),
        (Err(e), Want::Err(w)) if matches_template(&e, w) => {}
        (Err(e), Want::Err(w)) => failures.push(format!("{case}: got {e:?}, wanted {w:?}")),
    }
}

/// Whether `message` contains `want`, where a `{v}` in `want` stands for the refused value as the
/// API server quotes it (`"text"` for strings).
fn matches_template(message: &str, want: &str) -> bool {
    match want.split_once("{v}") {
        None => message.contains(want),
        Some((before, after)) => message
            .find(before)
            .map(|i| &message[i + before.len()..])
            .is_some_and(|rest| rest.starts_with('"') && rest.contains(&format!("\"{after}"))),
    }
}

/// `want` with `{v}` replaced by `value` quoted as the API server does.
fn with_value(want: &Want, value: &str) -> Want {
    match want {
        Want::Ok => Want::Ok,
        Want::Err(w) => {
            Want::Err(w.replace("{v}", &serde_json::to_string(value).unwrap_or_default()))
        }
    }
}

async fn install_crds(client: &Client) -> anyhow::Result<()> {
    let crds = olm_api::crds()
        .into_iter()
        .map(|crd| serde_json::from_value(crd.value))
        .collect::<Result<Vec<CustomResourceDefinition>, _>>()?;
    Ok(olm_testenv::install_crds(client, &crds, Duration::from_secs(60)).await?)
}

fn extension_spec(catalog: Value) -> Value {
    json!({
        "namespace": "default",
        "serviceAccount": {"name": "default"},
        "source": {"sourceType": "Catalog", "catalog": catalog},
    })
}

fn with_version(version: &str) -> Value {
    if version.is_empty() {
        // Upstream's typed client omits an empty version, so "" means "no constraint".
        extension_spec(json!({"packageName": "package"}))
    } else {
        extension_spec(json!({"packageName": "package", "version": version}))
    }
}

async fn extension_cases(ext: &Kind, failures: &mut Vec<String>) {
    const INVALID: &str =
        "spec.source.catalog.version: Invalid value: {v}: invalid version expression";
    let too_long = "spec.source.catalog.version: Too long: may not be more than 64";
    let versions: Vec<(&str, Want)> = vec![
        ("", Want::Ok),
        ("1.2.3", Want::Ok),
        ("1.2.3-alpha.1+metadata", Want::Ok),
        ("1.2.3-alpha-beta", Want::Ok),
        (">=1.2.3", Want::Ok),
        ("=>1.2.3", Want::Ok),
        (">= 1.2.3", Want::Ok),
        (">=v1.2.3", Want::Ok),
        (">= v1.2.3", Want::Ok),
        ("<=1.2.3", Want::Ok),
        ("=<1.2.3", Want::Ok),
        ("=1.2.3", Want::Ok),
        ("!=1.2.3", Want::Ok),
        ("<1.2.3", Want::Ok),
        (">1.2.3", Want::Ok),
        ("~1.2.2", Want::Ok),
        ("~>1.2.3", Want::Ok),
        ("^1.2.3", Want::Ok),
        ("v1.2.3", Want::Ok),
        ("1.x", Want::Ok),
        ("1.X", Want::Ok),
        ("1.*", Want::Ok),
        ("1.2.x", Want::Ok),
        ("1.2.X", Want::Ok),
        ("1.2.*", Want::Ok),
        (">=1.2.3 <2.3.4", Want::Ok),
        (">=1.2.3,<2.3.4", Want::Ok),
        (">=1.2.3, <2.3.4", Want::Ok),
        ("<1.2.3||>2.3.4", Want::Ok),
        ("<1.2.3|| >2.3.4", Want::Ok),
        ("<1.2.3 ||>2.3.4", Want::Ok),
        ("<1.2.3 || >2.3.4", Want::Ok),
        (">1.0.0,<1.2.3 || >2.1.0", Want::Ok),
        ("<1.2.3-abc >2.3.4-def", Want::Ok),
        ("<1.2.3-abc+def >2.3.4-ghi+jkl", Want::Ok),
        ("invalid-semver", err(INVALID)),
        ("1.2.3.4", err(INVALID)),
        ("1.2.3-beta!", err(INVALID)),
        ("1.2.3.alpha", err(INVALID)),
        ("1..2.3", err(INVALID)),
        ("1.2.3-pre+bad_metadata", err(INVALID)),
        ("1.2.-3", err(INVALID)),
        (".1.2.3", err(INVALID)),
        ("<<1.2.3", err(INVALID)),
        (">>1.2.3", err(INVALID)),
        (">~1.2.3", err(INVALID)),
        ("==1.2.3", err(INVALID)),
        ("=!1.2.3", err(INVALID)),
        ("!1.2.3", err(INVALID)),
        ("1.Y", err(INVALID)),
        (">1.2.3 && <2.3.4", err(INVALID)),
        (">1.2.3;<2.3.4", err(INVALID)),
        ("01.2.3", err(INVALID)),
        ("1.02.3", err(INVALID)),
        ("1.2.03", err(INVALID)),
        ("1.2.3 - 2.3.4", err(INVALID)),
        (
            "1234567890.1234567890.12345678901234567890123456789012345678901234",
            err(too_long),
        ),
    ];
    for (version, want) in &versions {
        judge(
            &format!("version {version:?}"),
            ext.create(with_version(version)).await,
            &with_value(want, version),
            failures,
        );
    }

    let package_regex = "spec.source.catalog.packageName: Invalid value: {v}: packageName must be a valid DNS1123 subdomain. It must contain only lowercase alphanumeric characters, hyphens (-) or periods (.), start and end with an alphanumeric character, and be no longer than 253 characters";
    let x254 = "x".repeat(254);
    let packages: Vec<(&str, Want)> = vec![
        ("", err(package_regex)),
        (
            &x254,
            err("spec.source.catalog.packageName: Too long: may not be more than 253"),
        ),
        ("0my-1package-9name", Want::Ok),
        ("my0-package1-name9", Want::Ok),
        ("012-345-678-9", Want::Ok),
        ("abc-def-ghi-jkl", Want::Ok),
        ("abcdefghi", Want::Ok),
        ("abc123def456ghi789", Want::Ok),
        ("1234567890", Want::Ok),
        ("a", Want::Ok),
        ("1", Want::Ok),
        ("-", err(package_regex)),
        ("ABC-DEF-GHI-JKL", err(package_regex)),
        ("my-$pecial-package-name", err(package_regex)),
        ("some.package", Want::Ok),
        ("some_package", err(package_regex)),
        (".some.package", err(package_regex)),
        ("a.-b", err(package_regex)),
    ];
    for (name, want) in &packages {
        judge(
            &format!("packageName {name:?}"),
            ext.create(extension_spec(json!({"packageName": name})))
                .await,
            &with_value(want, name),
            failures,
        );
    }

    let channel_regex = "spec.source.catalog.channels[0]: Invalid value: {v}: channels entries must be valid DNS1123 subdomains";
    let channels: Vec<(&str, Want)> = vec![
        ("", err(channel_regex)),
        ("hyphenated-name", Want::Ok),
        ("dotted.name", Want::Ok),
        ("channel-has-version-1.0.1", Want::Ok),
        (
            &x254,
            err("spec.source.catalog.channels[0]: Too long: may not be more than 253"),
        ),
        ("spaces spaces", err(channel_regex)),
        ("Capitalized", err(channel_regex)),
        ("camelCase", err(channel_regex)),
        ("many/invalid$characters+in_name", err(channel_regex)),
        ("-start-with-hyphen", err(channel_regex)),
        ("end-with-hyphen-", err(channel_regex)),
        (".start-with-period", err(channel_regex)),
        ("end-with-period.", err(channel_regex)),
        ("some_thing", err(channel_regex)),
        ("a.-b", err(channel_regex)),
    ];
    for (channel, want) in &channels {
        judge(
            &format!("channel {channel:?}"),
            ext.create(extension_spec(
                json!({"packageName": "package", "channels": [channel]}),
            ))
            .await,
            &with_value(want, channel),
            failures,
        );
    }
    let many: Vec<String> = (0..257).map(|i| format!("c{i}")).collect();
    judge(
        "257 channels",
        ext.create(extension_spec(
            json!({"packageName": "package", "channels": many}),
        ))
        .await,
        &err("spec.source.catalog.channels: Too many: 257: must have at most 256 items"),
        failures,
    );

    let ns_regex = "spec.namespace: Invalid value: {v}: namespace must be a valid DNS1123 label";
    let x63 = "x".repeat(63);
    let x64 = "x".repeat(64);
    let namespaces: Vec<(&str, Want)> = vec![
        ("justalphanumberic1", Want::Ok),
        ("hyphenated-name", Want::Ok),
        ("", err(ns_regex)),
        ("dotted.name", err(ns_regex)),
        (&x63, Want::Ok),
        (
            &x64,
            err("spec.namespace: Too long: may not be more than 63"),
        ),
        ("spaces spaces", err(ns_regex)),
        ("Capitalized", err(ns_regex)),
        ("camelCase", err(ns_regex)),
        ("many/invalid$characters+in_name", err(ns_regex)),
        ("-start-with-hyphen", err(ns_regex)),
        ("end-with-hyphen-", err(ns_regex)),
        (".start-with-period", err(ns_regex)),
        ("end-with-period.", err(ns_regex)),
    ];
    for (ns, want) in &namespaces {
        let mut spec = extension_spec(json!({"packageName": "package"}));
        spec["namespace"] = json!(ns);
        judge(
            &format!("namespace {ns:?}"),
            ext.create(spec).await,
            &with_value(want, ns),
            failures,
        );
    }

    // Upstream: TestClusterExtensionAdmissionServiceAccount (v1.11.0), where the field became
    // optional; the empty name is sent here as written, so minLength answers it.
    let x253 = "x".repeat(253);
    let sa_regex = "spec.serviceAccount.name: Invalid value: {v}: name must be a valid DNS1123 subdomain. It must contain only lowercase alphanumeric characters, hyphens (-) or periods (.), start and end with an alphanumeric character, and be no longer than 253 characters";
    let accounts: Vec<(&str, Want)> = vec![
        ("some-serviceaccount", Want::Ok),
        ("123-serviceaccount", Want::Ok),
        ("1-serviceaccount-2", Want::Ok),
        ("someserviceaccount", Want::Ok),
        ("some.serviceaccount", Want::Ok),
        (&x253, Want::Ok),
        (
            "",
            err(
                "spec.serviceAccount.name: Invalid value: \"\": spec.serviceAccount.name in body should be at least 1 chars long",
            ),
        ),
        ("-some-serviceaccount", err(sa_regex)),
        ("some-serviceaccount-", err(sa_regex)),
        ("spaces spaces", err(sa_regex)),
        ("Capitalized", err(sa_regex)),
        ("camelCase", err(sa_regex)),
        ("many/invalid$characters+in_name", err(sa_regex)),
        (".start-with-period", err(sa_regex)),
        ("end-with-period.", err(sa_regex)),
        ("a.-b", err(sa_regex)),
        (
            &x254,
            err("spec.serviceAccount.name: Too long: may not be more than 253"),
        ),
    ];
    for (name, want) in &accounts {
        let mut spec = extension_spec(json!({"packageName": "package"}));
        spec["serviceAccount"]["name"] = json!(name);
        judge(
            &format!("serviceAccount {name:?}"),
            ext.create(spec).await,
            &with_value(want, name),
            failures,
        );
    }

    // Required fields and unions.
    let base = extension_spec(json!({"packageName": "package"}));
    let mut missing_sa = base.clone();
    missing_sa
        .as_object_mut()
        .map(|m| m.remove("serviceAccount"));
    let mut missing_ns = base.clone();
    missing_ns.as_object_mut().map(|m| m.remove("namespace"));
    let shapes: Vec<(&str, Value, Want)> = vec![
        // Upstream: TestClusterExtensionAdmissionServiceAccountLifecycle (v1.11.0).
        ("no serviceAccount", missing_sa, Want::Ok),
        (
            "empty serviceAccount",
            json!({"namespace": "default", "serviceAccount": {},
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            err(
                "spec.serviceAccount: Invalid value: 0: spec.serviceAccount in body should have at least 1 properties",
            ),
        ),
        (
            "no namespace",
            missing_ns,
            err("spec.namespace: Required value"),
        ),
        (
            "sourceType Invalid",
            json!({"namespace": "default", "serviceAccount": {"name": "default"},
                   "source": {"sourceType": "Invalid", "catalog": {"packageName": "package"}}}),
            err(
                "spec.source.sourceType: Unsupported value: \"Invalid\": supported values: \"Catalog\"",
            ),
        ),
        (
            "catalog missing",
            json!({"namespace": "default", "serviceAccount": {"name": "default"},
                   "source": {"sourceType": "Catalog"}}),
            err(
                "spec.source: Invalid value: catalog is required when sourceType is Catalog, and forbidden otherwise",
            ),
        ),
        (
            "packageName missing",
            extension_spec(json!({})),
            err("spec.source.catalog.packageName: Required value"),
        ),
        (
            "upgradeConstraintPolicy Bogus",
            extension_spec(json!({"packageName": "package", "upgradeConstraintPolicy": "Bogus"})),
            err(
                "spec.source.catalog.upgradeConstraintPolicy: Unsupported value: \"Bogus\": supported values: \"CatalogProvided\", \"SelfCertified\"",
            ),
        ),
        (
            "selector",
            extension_spec(
                json!({"packageName": "package", "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": "c"}}}),
            ),
            Want::Ok,
        ),
        (
            "empty install",
            json!({"namespace": "default", "serviceAccount": {"name": "default"}, "install": {},
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            err(
                "spec.install: Invalid value: at least one of [preflight] are required when install is specified",
            ),
        ),
        (
            "empty preflight",
            json!({"namespace": "default", "serviceAccount": {"name": "default"}, "install": {"preflight": {}},
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            err(
                "spec.install.preflight: Invalid value: at least one of [crdUpgradeSafety] are required when preflight is specified",
            ),
        ),
        (
            "enforcement missing",
            json!({"namespace": "default", "serviceAccount": {"name": "default"},
                   "install": {"preflight": {"crdUpgradeSafety": {}}},
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            err("spec.install.preflight.crdUpgradeSafety.enforcement: Required value"),
        ),
        (
            "enforcement Loose",
            json!({"namespace": "default", "serviceAccount": {"name": "default"},
                   "install": {"preflight": {"crdUpgradeSafety": {"enforcement": "Loose"}}},
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            err(
                "spec.install.preflight.crdUpgradeSafety.enforcement: Unsupported value: \"Loose\": supported values: \"None\", \"Strict\"",
            ),
        ),
        (
            "enforcement None",
            json!({"namespace": "default", "serviceAccount": {"name": "default"},
                   "install": {"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}},
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            Want::Ok,
        ),
        (
            "inline config",
            json!({"namespace": "default", "serviceAccount": {"name": "default"},
                   "config": {"configType": "Inline", "inline": {"watchNamespace": "x", "nested": {"a": [1, 2]}}},
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            Want::Ok,
        ),
        (
            "configType without inline",
            json!({"namespace": "default", "serviceAccount": {"name": "default"},
                   "config": {"configType": "Inline"},
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            err(
                "spec.config: Invalid value: inline is required when configType is Inline, and forbidden otherwise",
            ),
        ),
        (
            "empty inline",
            json!({"namespace": "default", "serviceAccount": {"name": "default"},
                   "config": {"configType": "Inline", "inline": {}},
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            err(
                "spec.config.inline: Invalid value: 0: spec.config.inline in body should have at least 1 properties",
            ),
        ),
        (
            "configType Secret",
            json!({"namespace": "default", "serviceAccount": {"name": "default"},
                   "config": {"configType": "Secret", "inline": {"a": 1}},
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            err(
                "spec.config.configType: Unsupported value: \"Secret\": supported values: \"Inline\"",
            ),
        ),
        (
            "progressDeadlineMinutes 9",
            json!({"namespace": "default", "serviceAccount": {"name": "default"}, "progressDeadlineMinutes": 9,
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            err(
                "spec.progressDeadlineMinutes: Invalid value: 9: spec.progressDeadlineMinutes in body should be greater than or equal to 10",
            ),
        ),
        (
            "progressDeadlineMinutes 721",
            json!({"namespace": "default", "serviceAccount": {"name": "default"}, "progressDeadlineMinutes": 721,
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            err(
                "spec.progressDeadlineMinutes: Invalid value: 721: spec.progressDeadlineMinutes in body should be less than or equal to 720",
            ),
        ),
        (
            "progressDeadlineMinutes 720",
            json!({"namespace": "default", "serviceAccount": {"name": "default"}, "progressDeadlineMinutes": 720,
                   "source": {"sourceType": "Catalog", "catalog": {"packageName": "package"}}}),
            Want::Ok,
        ),
    ];
    for (case, spec, want) in &shapes {
        judge(case, ext.create(spec.clone()).await, want, failures);
    }

    // Defaults.
    match ext.create(base.clone()).await {
        Ok(created) => {
            let policy = &created.data["spec"]["source"]["catalog"]["upgradeConstraintPolicy"];
            if policy != "CatalogProvided" {
                failures.push(format!("upgradeConstraintPolicy default: {policy}"));
            }
            // Typed round trip of what the server stored.
            if let Err(e) = serde_json::from_value::<olm_api::ClusterExtension>(
                serde_json::to_value(&created).unwrap_or_default(),
            ) {
                failures.push(format!("stored ClusterExtension does not parse: {e}"));
            }
        }
        Err(e) => failures.push(format!("base extension refused: {e}")),
    }

    // Immutability (transition rules).
    let transitions: Vec<(&str, Edit, Want)> = vec![
        (
            "same namespace",
            |s| s["namespace"] = json!("default"),
            Want::Ok,
        ),
        (
            "namespace change",
            |s| s["namespace"] = json!("other-ns"),
            err("spec.namespace: Invalid value: {v}: namespace is immutable"),
        ),
        (
            "packageName change",
            |s| s["source"]["catalog"]["packageName"] = json!("other"),
            err("spec.source.catalog.packageName: Invalid value: {v}: packageName is immutable"),
        ),
        (
            "serviceAccount change",
            |s| s["serviceAccount"]["name"] = json!("other"),
            err(
                "spec.serviceAccount.name: Invalid value: {v}: name is immutable once set but may be cleared",
            ),
        ),
        (
            "serviceAccount cleared",
            |s| {
                s.as_object_mut().map(|m| m.remove("serviceAccount"));
            },
            Want::Ok,
        ),
        (
            "version change",
            |s| s["source"]["catalog"]["version"] = json!(">=1.0.0"),
            Want::Ok,
        ),
    ];
    for (case, change, want) in &transitions {
        match ext.create(base.clone()).await {
            Ok(created) => {
                let mut spec = created.data["spec"].clone();
                change(&mut spec);
                judge(
                    case,
                    ext.update_spec(&created.name_any(), spec).await,
                    want,
                    failures,
                );
            }
            Err(e) => failures.push(format!("{case}: create refused: {e}")),
        }
    }
    // The transition rule compares only when both old and new carry a name: one added later is
    // admitted like one cleared.
    let mut without_sa = base.clone();
    without_sa
        .as_object_mut()
        .map(|m| m.remove("serviceAccount"));
    match ext.create(without_sa).await {
        Ok(created) => {
            let mut spec = created.data["spec"].clone();
            spec["serviceAccount"] = json!({"name": "later"});
            judge(
                "serviceAccount set later",
                ext.update_spec(&created.name_any(), spec).await,
                &Want::Ok,
                failures,
            );
        }
        Err(e) => failures.push(format!("serviceAccount set later: create refused: {e}")),
    }

    // Status rules.
    match ext.create(base.clone()).await {
        Ok(created) => {
            let name = created.name_any();
            let statuses: Vec<(&str, Value, Want)> = vec![
                (
                    "bundle ok",
                    json!({"install": {"bundle": {"name": "package.v1.0.0", "version": "1.0.0"}}}),
                    Want::Ok,
                ),
                (
                    "bundle version not semver",
                    json!({"install": {"bundle": {"name": "package.v1.0.0", "version": "one"}}}),
                    err(
                        "status.install.bundle.version: Invalid value: {v}: version must be well-formed semver",
                    ),
                ),
                (
                    "bundle name invalid",
                    json!({"install": {"bundle": {"name": "Package", "version": "1.0.0"}}}),
                    err(
                        "status.install.bundle.name: Invalid value: {v}: packageName must be a valid DNS1123 subdomain",
                    ),
                ),
                (
                    "release ok",
                    json!({"install": {"bundle": {"name": "p", "version": "1.0.0", "release": "2.alpha"}}}),
                    Want::Ok,
                ),
                (
                    "release leading zero",
                    json!({"install": {"bundle": {"name": "p", "version": "1.0.0", "release": "01"}}}),
                    err(
                        "status.install.bundle.release: Invalid value: {v}: release must be empty or consist of dot-separated identifiers (numeric without leading zeros, or alphanumeric)",
                    ),
                ),
            ];
            for (case, status, want) in &statuses {
                judge(
                    case,
                    ext.patch_status(&name, status.clone()).await,
                    want,
                    failures,
                );
            }
        }
        Err(e) => failures.push(format!("status base refused: {e}")),
    }
}

fn catalog_spec(image: Value) -> Value {
    json!({"source": {"type": "Image", "image": image}})
}

async fn catalog_cases(cat: &Kind, failures: &mut Vec<String>) {
    let digest = "sha256:200d4ddb2a73594b91358fe6397424e975205bfbe44614f5846033cad64b3f05";
    let domain = "spec.source.image.ref: Invalid value: {v}: must start with a valid domain. valid domains must be alphanumeric characters (lowercase and uppercase) separated by the \".\" character.";
    let name = "spec.source.image.ref: Invalid value: {v}: a valid name is required. valid names must contain lowercase alphanumeric characters separated only by the \".\", \"_\", \"__\", \"-\" characters.";
    let long_tag = format!("quay.io/operatorhubio/catalog:{}", "a".repeat(128));
    let refs: Vec<(String, Want)> = vec![
        ("quay.io/operatorhubio/catalog:latest".into(), Want::Ok),
        (format!("quay.io/operatorhubio/catalog@{digest}"), Want::Ok),
        ("my-registry.io:8080/catalog:v1.2_3-x".into(), Want::Ok),
        ("127.0.0.1:5000/test/catalog:v1".into(), Want::Ok),
        ("-quay.io/operatorhubio/catalog:latest".into(), err(domain)),
        ("quay.io:latest".into(), err(name)),
        (
            "quay.io/operatorhubio/catalog".into(),
            err("spec.source.image.ref: Invalid value: {v}: must end with a digest or a tag"),
        ),
        (
            long_tag,
            err("spec.source.image.ref: Invalid value: {v}: tag is invalid. the tag must not be more than 127 characters"),
        ),
        (
            "quay.io/operatorhubio/catalog:-bad".into(),
            err("spec.source.image.ref: Invalid value: {v}: tag is invalid. valid tags must begin with a word character (alphanumeric + \"_\") followed by word characters or \".\", and \"-\" characters"),
        ),
        (
            "quay.io/operatorhubio/catalog@1sha256:200d4ddb2a73594b91358fe6397424e975205bfbe44614f5846033cad64b3f05".into(),
            err("spec.source.image.ref: Invalid value: {v}: digest algorithm is not valid. valid algorithms must start with an uppercase or lowercase alpha character followed by alphanumeric characters and may contain the \"-\", \"_\", \"+\", and \".\" characters."),
        ),
        (
            "quay.io/operatorhubio/catalog@sha256:200d4ddb".into(),
            err("spec.source.image.ref: Invalid value: {v}: digest is not valid. the encoded string must be at least 32 characters"),
        ),
        (
            format!("quay.io/operatorhubio/catalog@sha256:{}", "z".repeat(64)),
            err("spec.source.image.ref: Invalid value: {v}: digest is not valid. the encoded string must only contain hex characters (A-F, a-f, 0-9)"),
        ),
        (
            format!("quay.io/{}:1", "x".repeat(1000)),
            err("spec.source.image.ref: Too long: may not be more than 1000"),
        ),
    ];
    for (r, want) in &refs {
        judge(
            &format!("ref {r:?}"),
            cat.create(catalog_spec(json!({"ref": r}))).await,
            &with_value(want, r),
            failures,
        );
    }

    let shapes: Vec<(&str, Value, Want)> = vec![
        (
            "poll with tag",
            catalog_spec(json!({"ref": "quay.io/a/b:latest", "pollIntervalMinutes": 10})),
            Want::Ok,
        ),
        (
            "poll with digest",
            catalog_spec(
                json!({"ref": format!("quay.io/a/b@{digest}"), "pollIntervalMinutes": 10}),
            ),
            err(
                "spec.source.image: Invalid value: cannot specify pollIntervalMinutes while using digest-based image",
            ),
        ),
        (
            "poll 0",
            catalog_spec(json!({"ref": "quay.io/a/b:latest", "pollIntervalMinutes": 0})),
            err(
                "spec.source.image.pollIntervalMinutes: Invalid value: 0: spec.source.image.pollIntervalMinutes in body should be greater than or equal to 1",
            ),
        ),
        (
            "type Git",
            json!({"source": {"type": "Git", "image": {"ref": "quay.io/a/b:latest"}}}),
            err("spec.source.type: Unsupported value: \"Git\": supported values: \"Image\""),
        ),
        (
            "image missing",
            json!({"source": {"type": "Image"}}),
            err(
                "spec.source: Invalid value: image is required when source type is Image, and forbidden otherwise",
            ),
        ),
        (
            "ref missing",
            catalog_spec(json!({})),
            err("spec.source.image.ref: Required value"),
        ),
        (
            "availabilityMode Maybe",
            json!({"source": {"type": "Image", "image": {"ref": "quay.io/a/b:latest"}}, "availabilityMode": "Maybe"}),
            err(
                "spec.availabilityMode: Unsupported value: \"Maybe\": supported values: \"Unavailable\", \"Available\"",
            ),
        ),
        (
            "priority min",
            json!({"source": {"type": "Image", "image": {"ref": "quay.io/a/b:latest"}}, "priority": -2147483648i64}),
            Want::Ok,
        ),
        (
            "priority too big",
            json!({"source": {"type": "Image", "image": {"ref": "quay.io/a/b:latest"}}, "priority": 2147483648i64}),
            err(
                "spec.priority: Invalid value: 2147483648: spec.priority in body should be less than or equal to 2147483647",
            ),
        ),
    ];
    for (case, spec, want) in &shapes {
        judge(case, cat.create(spec.clone()).await, want, failures);
    }

    match cat
        .create(catalog_spec(json!({"ref": "quay.io/a/b:latest"})))
        .await
    {
        Ok(created) => {
            if created.data["spec"]["priority"] != 0 {
                failures.push(format!(
                    "priority default: {}",
                    created.data["spec"]["priority"]
                ));
            }
            if created.data["spec"]["availabilityMode"] != "Available" {
                failures.push(format!(
                    "availabilityMode default: {}",
                    created.data["spec"]["availabilityMode"]
                ));
            }
            let name = created.name_any();
            let statuses: Vec<(&str, Value, Want)> = vec![
                (
                    "status ok",
                    json!({"urls": {"base": "https://catalogd-service.olmv1-system.svc/catalogs/x"},
                           "resolvedSource": {"type": "Image", "image": {"ref": format!("quay.io/a/b@{digest}")}},
                           "lastUnpacked": "2026-01-01T00:00:00Z"}),
                    Want::Ok,
                ),
                (
                    "urls not a URL",
                    json!({"urls": {"base": "not a url"}}),
                    err("status.urls.base: Invalid value: {v}: must be a valid URL"),
                ),
                (
                    "urls ftp",
                    json!({"urls": {"base": "ftp://x/catalogs/x"}}),
                    err(
                        "status.urls.base: Invalid value: {v}: scheme must be either http or https",
                    ),
                ),
                (
                    "resolved by tag",
                    json!({"resolvedSource": {"type": "Image", "image": {"ref": "quay.io/a/b:latest"}}}),
                    err(
                        "status.resolvedSource.image.ref: Invalid value: {v}: must end with a digest",
                    ),
                ),
            ];
            for (case, status, want) in &statuses {
                judge(
                    case,
                    cat.patch_status(&name, status.clone()).await,
                    want,
                    failures,
                );
            }
        }
        Err(e) => failures.push(format!("default catalog refused: {e}")),
    }
}

/// Upstream's `clustercatalog_types_test.go` vectors, checked against the whole message the API
/// server returns (every error, in order), not just a fragment.
async fn catalog_exact_vectors(cat: &Kind, failures: &mut Vec<String>) {
    let spec_path = "spec.source.image.ref";
    let domain = "must start with a valid domain. valid domains must be alphanumeric characters (lowercase and uppercase) separated by the \".\" character.";
    let name = "a valid name is required. valid names must contain lowercase alphanumeric characters separated only by the \".\", \"_\", \"__\", \"-\" characters.";
    let algorithm = "digest algorithm is not valid. valid algorithms must start with an uppercase or lowercase alpha character followed by alphanumeric characters and may contain the \"-\", \"_\", \"+\", and \".\" characters.";
    let short = "digest is not valid. the encoded string must be at least 32 characters";
    let hex =
        "digest is not valid. the encoded string must only contain hex characters (A-F, a-f, 0-9)";
    let x128 = format!("docker.io/foo/bar:{}", "x".repeat(128));
    let spec_cases: Vec<(&str, Option<i64>, Vec<&str>)> = vec![
        (
            "docker.io/test-image@sha256:abcdef123456789abcdef123456789abc",
            Some(1),
            vec!["poll"],
        ),
        (
            "docker.io/test-image@sha256:abcdef123456789abcdef123456789abc",
            None,
            vec![],
        ),
        (
            "-quay+docker/foo/bar@sha256:abcdef123456789abcdef123456789abc",
            None,
            vec![domain],
        ),
        (
            "docker.io/FOO/BAR@sha256:abcdef123456789abcdef123456789abc",
            None,
            vec![name],
        ),
        (
            "docker.io/foo/bar@99-problems:abcdef123456789abcdef123456789abc",
            None,
            vec![algorithm],
        ),
        (
            "docker.io/foo/bar@sha256:abcdef123456789",
            None,
            vec![short],
        ),
        (
            "docker.io/foo/bar@sha256:XYZxy123456789abcdef123456789abc",
            None,
            vec![hex],
        ),
        (
            "docker.io/foo/bar",
            None,
            vec!["must end with a digest or a tag"],
        ),
        (
            &x128,
            None,
            vec!["tag is invalid. the tag must not be more than 127 characters"],
        ),
        (
            "docker.io/foo/bar:-foo_bar-",
            None,
            vec![
                "tag is invalid. valid tags must begin with a word character (alphanumeric + \"_\") followed by word characters or \".\", and \"-\" characters",
            ],
        ),
        ("docker.io/foo/bar:v1.0.0", None, vec![]),
        ("docker.io/foo/bar:v1.0.0", Some(5), vec![]),
        ("docker.io:8080", None, vec![name]),
        ("my-subdomain.docker.io:8080/foo/bar:latest", None, vec![]),
        ("my-subdomain.docker.io:8080/foo/bar:latest-", None, vec![]),
    ];
    for (r, poll, errs) in &spec_cases {
        let object_name = next_name("clustercatalog");
        let mut image = json!({"ref": r});
        if let Some(p) = poll {
            image["pollIntervalMinutes"] = json!(p);
        }
        let want: Vec<String> = errs
            .iter()
            .map(|e| match *e {
                "poll" => "spec.source.image: Invalid value: cannot specify pollIntervalMinutes while using digest-based image".to_string(),
                msg => format!("{spec_path}: Invalid value: {}: {msg}", serde_json::to_string(r).unwrap_or_default()),
            })
            .collect();
        let got = cat
            .api
            .create(
                &PostParams::default(),
                &cat.object(&object_name, catalog_spec(image)),
            )
            .await
            .map_err(message);
        check_exact(
            &format!("upstream spec vector {r:?}"),
            "ClusterCatalog",
            &object_name,
            got,
            &want,
            failures,
        );
    }

    // Status vectors need an object to patch.
    let Ok(base) = cat
        .create(catalog_spec(json!({"ref": "docker.io/foo/bar:latest"})))
        .await
    else {
        failures.push("status vectors: base catalog refused".into());
        return;
    };
    let object_name = base.name_any();
    let status_path = "status.resolvedSource.image.ref";
    let status_cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "docker.io/test-image@sha256:abcdef123456789abcdef123456789abc",
            vec![],
        ),
        (
            "-quay+docker/foo/bar@sha256:abcdef123456789abcdef123456789abc",
            vec![domain],
        ),
        (
            "docker.io/FOO/BAR@sha256:abcdef123456789abcdef123456789abc",
            vec![name],
        ),
        (
            "docker.io/foo/bar@99-problems:abcdef123456789abcdef123456789abc",
            vec![algorithm],
        ),
        ("docker.io/foo/bar@sha256:abcdef123456789", vec![short]),
        (
            "docker.io/foo/bar@sha256:XYZxy123456789abcdef123456789abc",
            vec![hex],
        ),
        ("docker.io/foo/bar", vec!["must end with a digest"]),
        ("docker.io:8080", vec![name, "must end with a digest"]),
        ("docker.io/foo/bar:latest", vec!["must end with a digest"]),
    ];
    for (r, errs) in &status_cases {
        let want: Vec<String> = errs
            .iter()
            .map(|msg| {
                format!(
                    "{status_path}: Invalid value: {}: {msg}",
                    serde_json::to_string(r).unwrap_or_default()
                )
            })
            .collect();
        let got = cat
            .patch_status(
                &object_name,
                json!({"resolvedSource": {"type": "Image", "image": {"ref": r}}}),
            )
            .await;
        check_exact(
            &format!("upstream status vector {r:?}"),
            "ClusterCatalog",
            &object_name,
            got,
            &want,
            failures,
        );
    }
    let url_cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "https://catalogd-service.olmv1-system.svc/catalogs/operatorhubio",
            vec![],
        ),
        (
            "file://somefilepath",
            vec!["scheme must be either http or https"],
        ),
        ("notevenarealURL", vec!["must be a valid URL"]),
    ];
    for (url, errs) in &url_cases {
        let want: Vec<String> = errs
            .iter()
            .map(|msg| {
                format!(
                    "status.urls.base: Invalid value: {}: {msg}",
                    serde_json::to_string(url).unwrap_or_default()
                )
            })
            .collect();
        let got = cat
            .patch_status(&object_name, json!({"urls": {"base": url}}))
            .await;
        check_exact(
            &format!("upstream urls vector {url:?}"),
            "ClusterCatalog",
            &object_name,
            got,
            &want,
            failures,
        );
    }
}

/// The API server's whole message for these errors: one error as is, several in brackets.
fn check_exact(
    case: &str,
    kind: &str,
    name: &str,
    got: Result<DynamicObject, String>,
    want: &[String],
    failures: &mut Vec<String>,
) {
    let expected = match want {
        [] => None,
        [one] => Some(format!(
            "{kind}.olm.operatorframework.io \"{name}\" is invalid: {one}"
        )),
        many => Some(format!(
            "{kind}.olm.operatorframework.io \"{name}\" is invalid: [{}]",
            many.join(", ")
        )),
    };
    match (got, expected) {
        (Ok(_), None) => {}
        (Err(e), None) => failures.push(format!("{case}: refused: {e}")),
        (Ok(_), Some(w)) => failures.push(format!("{case}: admitted, wanted {w:?}")),
        (Err(e), Some(w)) if e == w => {}
        (Err(e), Some(w)) => failures.push(format!("{case}:\n   got {e:?}\n  want {w:?}")),
    }
}

fn object_set_spec() -> Value {
    json!({
        "lifecycleState": "Active",
        "revision": 1,
        "collisionProtection": "Prevent",
        "phases": [{"name": "deploy", "objects": [
            {"object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}}
        ]}],
    })
}

async fn object_set_cases(cos: &Kind, failures: &mut Vec<String>) {
    let label_msg = "the value must consist of only lowercase alphanumeric characters and hyphens, and must start and end with an alphanumeric character.";
    let creates: Vec<(&str, Edit, Want)> = vec![
        ("valid", |_| {}, Want::Ok),
        (
            "revision 0",
            |s| s["revision"] = json!(0),
            err(
                "spec.revision: Invalid value: 0: spec.revision in body should be greater than or equal to 1",
            ),
        ),
        (
            "object and ref",
            |s| s["phases"][0]["objects"][0]["ref"] = json!({"name": "s", "key": "k"}),
            err(
                "spec.phases[0].objects[0]: Invalid value: exactly one of the fields in [object ref] must be set",
            ),
        ),
        (
            "neither object nor ref",
            |s| s["phases"][0]["objects"][0] = json!({"collisionProtection": "None"}),
            err("exactly one of the fields in [object ref] must be set"),
        ),
        (
            "21 phases",
            |s| {
                s["phases"] = Value::Array(
                    (0..21)
                        .map(|i| json!({"name": format!("p{i}"), "objects": []}))
                        .collect(),
                )
            },
            err("spec.phases: Too many: 21: must have at most 20 items"),
        ),
        (
            "51 objects",
            |s| {
                s["phases"][0]["objects"] = Value::Array(
                    (0..51)
                        .map(|i| json!({"ref": {"name": "s", "key": format!("k{i}")}}))
                        .collect(),
                )
            },
            err("spec.phases[0].objects: Too many: 51: must have at most 50 items"),
        ),
        (
            "revision negative",
            |s| s["revision"] = json!(-1),
            err(
                "spec.revision: Invalid value: -1: spec.revision in body should be greater than or equal to 1",
            ),
        ),
        (
            "collisionProtection Invalid",
            |s| s["collisionProtection"] = json!("Invalid"),
            err(
                "spec.collisionProtection: Unsupported value: \"Invalid\": supported values: \"Prevent\", \"IfNoController\", \"None\"",
            ),
        ),
        (
            "ref only",
            |s| s["phases"][0]["objects"][0] = json!({"ref": {"name": "s", "key": "k"}}),
            Want::Ok,
        ),
        (
            "phase name",
            |s| s["phases"][0]["name"] = json!("Deploy_1"),
            err(label_msg),
        ),
        (
            "lifecycleState",
            |s| s["lifecycleState"] = json!("Paused"),
            err(
                "spec.lifecycleState: Unsupported value: \"Paused\": supported values: \"Active\", \"Archived\"",
            ),
        ),
        (
            "collisionProtection required",
            |s| {
                s.as_object_mut().map(|m| m.remove("collisionProtection"));
            },
            err("spec.collisionProtection: Required value"),
        ),
        (
            "probe union",
            |s| {
                s["progressionProbes"] = json!([{
                    "selector": {"type": "GroupKind", "groupKind": {"group": "apps", "kind": "Deployment"}},
                    "assertions": [{"type": "ConditionEqual", "fieldValue": {"fieldPath": "status.phase", "value": "x"}}]
                }])
            },
            err("conditionEqual is required when type is ConditionEqual, and forbidden otherwise"),
        ),
        (
            "probe selector union",
            |s| {
                s["progressionProbes"] = json!([{
                    "selector": {"type": "Label", "groupKind": {"group": "apps", "kind": "Deployment"}},
                    "assertions": [{"type": "ConditionEqual", "conditionEqual": {"type": "Ready", "status": "True"}}]
                }])
            },
            err("label is required when type is Label, and forbidden otherwise"),
        ),
        (
            "label selector with both",
            |s| {
                s["progressionProbes"] = json!([{
                    "selector": {"type": "Label", "label": {"matchLabels": {"a": "b"},
                        "matchExpressions": [{"key": "a", "operator": "Exists"}]}},
                    "assertions": [{"type": "ConditionEqual", "conditionEqual": {"type": "Ready", "status": "True"}}]
                }])
            },
            err("exactly one of matchLabels or matchExpressions must be set"),
        ),
        (
            "field path",
            |s| {
                s["progressionProbes"] = json!([{
                    "selector": {"type": "GroupKind", "groupKind": {"group": "", "kind": "PersistentVolumeClaim"}},
                    "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "status..phase", "value": "Bound"}}]
                }])
            },
            err(
                "must contain a valid field path. valid fields contain upper or lower-case alphanumeric characters separated by the \".\" character.",
            ),
        ),
        (
            "valid probes",
            |s| {
                s["progressionProbes"] = json!([{
                    "selector": {"type": "GroupKind", "groupKind": {"group": "apps", "kind": "Deployment"}},
                    "assertions": [
                        {"type": "ConditionEqual", "conditionEqual": {"type": "Available", "status": "True"}},
                        {"type": "FieldsEqual", "fieldsEqual": {"fieldA": "spec.replicas", "fieldB": "status.readyReplicas"}}
                    ]
                }])
            },
            Want::Ok,
        ),
    ];
    for (case, change, want) in &creates {
        let mut spec = object_set_spec();
        change(&mut spec);
        judge(case, cos.create(spec).await, want, failures);
    }

    let transitions: Vec<(&str, Edit, Edit, Want)> = vec![
        (
            "archive",
            |_| {},
            |s| s["lifecycleState"] = json!("Archived"),
            Want::Ok,
        ),
        (
            "phases set after being empty",
            |s| s["phases"] = json!([]),
            |s| s["phases"] = json!([{"name": "foo", "objects": []}]),
            Want::Ok,
        ),
        (
            "phases set after being unset",
            |s| {
                s.as_object_mut().map(|m| m.remove("phases"));
            },
            |s| s["phases"] = json!([{"name": "foo", "objects": []}]),
            Want::Ok,
        ),
        (
            "un-archive",
            |s| s["lifecycleState"] = json!("Archived"),
            |s| s["lifecycleState"] = json!("Active"),
            err("spec.lifecycleState: Invalid value: {v}: cannot un-archive"),
        ),
        (
            "revision change",
            |_| {},
            |s| s["revision"] = json!(2),
            err("spec.revision: Invalid value: 2: revision is immutable"),
        ),
        (
            "phases change",
            |_| {},
            |s| s["phases"][0]["name"] = json!("other"),
            err("spec.phases: Invalid value: phases is immutable"),
        ),
        (
            "collisionProtection change",
            |_| {},
            |s| s["collisionProtection"] = json!("None"),
            err("spec.collisionProtection: Invalid value: {v}: collisionProtection is immutable"),
        ),
    ];
    for (case, before, after, want) in &transitions {
        let mut spec = object_set_spec();
        before(&mut spec);
        match cos.create(spec).await {
            Ok(created) => {
                let mut spec = created.data["spec"].clone();
                after(&mut spec);
                judge(
                    case,
                    cos.update_spec(&created.name_any(), spec).await,
                    want,
                    failures,
                );
            }
            Err(e) => failures.push(format!("{case}: create refused: {e}")),
        }
    }

    match cos.create(object_set_spec()).await {
        Ok(created) => {
            let name = created.name_any();
            let steps: Vec<(&str, Value, Want)> = vec![
                (
                    "observedPhases bad digest",
                    json!({"observedPhases": [{"name": "deploy", "digest": "SHA256:XYZ"}]}),
                    err("digest must be in the format '<algorithm>:<hex>'"),
                ),
                (
                    "observedPhases set",
                    json!({"observedPhases": [{"name": "deploy", "digest": "sha256:abcd"}]}),
                    Want::Ok,
                ),
                (
                    "observedPhases digest change",
                    json!({"observedPhases": [{"name": "deploy", "digest": "sha256:ef01"}]}),
                    err("digest is immutable"),
                ),
            ];
            for (case, status, want) in &steps {
                judge(
                    case,
                    cos.patch_status(&name, status.clone()).await,
                    want,
                    failures,
                );
            }
        }
        Err(e) => failures.push(format!("status base refused: {e}")),
    }
}

#[tokio::test]
async fn crds_admit_and_refuse_like_upstream() {
    let plane = match ControlPlane::start().await {
        Ok(p) => p,
        Err(e) => panic!("starting the local control plane failed: {e}"),
    };
    let client = plane.client();
    if let Err(e) = install_crds(&client).await {
        panic!("installing the CRDs: {e:#}");
    }
    let mut failures = Vec::new();
    let ext = Kind::new(&client, "ClusterExtension", "clusterextensions");
    extension_cases(&ext, &mut failures).await;
    let cat = Kind::new(&client, "ClusterCatalog", "clustercatalogs");
    catalog_cases(&cat, &mut failures).await;
    catalog_exact_vectors(&cat, &mut failures).await;
    let cos = Kind::new(&client, "ClusterObjectSet", "clusterobjectsets");
    object_set_cases(&cos, &mut failures).await;
    assert!(
        failures.is_empty(),
        "{} admission cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
