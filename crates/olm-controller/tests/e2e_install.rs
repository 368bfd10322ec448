//! Installing extensions end to end: catalogs and bundles made per scenario, pushed to a real
//! registry, ClusterCatalogs and ClusterExtensions created on a real control plane, `olm` in this
//! process. Expected reasons and messages are upstream's where upstream's e2e suite states them
//! (operator-controller v1.11.0 `test/e2e/features/install.feature`, `recover.feature`,
//! `uninstall.feature`, `update.feature`); the rest follow the condition table of the
//! ClusterExtension API (Installed/Progressing/deprecation conditions).
//!
//! Run: `cargo test -p olm-controller --test e2e_install [-- NAME_SUBSTRING…]`.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod e2e;
mod bombs;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use bombs::{a_bundle_bomb_is_refused_without_a_trace, a_catalog_bomb_is_refused_without_a_trace};
use e2e::{Contents, Ctx, Msg, WAIT, cond, entry, package, wait_exists, wait_gone};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn main() {
    e2e::main(vec![
        scenario!(fixtures_render_and_catalogs_serve, "fix"),
        scenario!(install_latest_from_one_catalog, "inst"),
        scenario!(install_with_channel_and_version_range, "rng"),
        scenario!(pinned_version_never_upgrades, "pin"),
        scenario!(selector_by_catalog_name_label, "sel"),
        scenario!(single_namespace_needs_watch_namespace, "single"),
        scenario!(own_namespace_needs_own_watch_namespace, "own"),
        scenario!(invalid_inline_config_is_invalid_configuration, "badcfg"),
        scenario!(webhook_operator_with_builtin_certificates, "whk"),
        scenario!(bundle_larger_than_etcd_limit_is_externalised, "large"),
        scenario!(object_owned_by_someone_else_collides, "coll"),
        scenario!(drift_is_put_back, "drift"),
        scenario!(uninstall_removes_crd_and_objects, "unin"),
        scenario!(namespace_missing_until_created, "nons"),
        scenario!(unknown_package, "unk"),
        scenario!(bundle_image_missing, "noimg"),
        scenario!(image_that_is_not_a_bundle, "notbdl"),
        scenario!(service_account_missing, "nosa"),
        scenario!(service_account_with_permissions_installs, "sa"),
        scenario!(catalog_not_serving, "nosrv"),
        // Alone: its extension without a selector sees every scenario's catalogs, and each
        // catalog another scenario creates is briefly not serving — a real change of what it
        // skips, which the no-write guard would count.
        scenario!(a_catalog_that_serves_nothing_is_skipped, "skip", exclusive),
        scenario!(two_extensions_wanting_the_same_crd, "samecrd"),
        // Alone: each measures the peak memory of this process, where olm runs.
        scenario!(
            a_catalog_bomb_is_refused_without_a_trace,
            "cbomb",
            exclusive
        ),
        scenario!(a_bundle_bomb_is_refused_without_a_trace, "bbomb", exclusive),
        scenario!(names_are_refused_in_the_api_servers_words, "names"),
        scenario!(
            crd_name_the_api_server_refuses_is_refused_at_validation,
            "longcrd"
        ),
        scenario!(collision_message_over_the_limit_is_truncated, "bigcoll"),
    ]);
}

/// The ClusterExtension name of a scenario.
fn ext(ctx: &Ctx) -> String {
    format!("ext-{}", ctx.id)
}

/// Upstream's usual single-bundle catalog: package `test` 1.2.0 in `beta` with CRD,
/// Deployment, ConfigMap (install.feature "Install latest available version").
async fn standard_catalog(ctx: &Ctx) -> Result<String> {
    ctx.catalog(
        "test",
        &[package("test")
            .bundle("1.2.0", Contents::standard())
            .channel("beta", vec![entry("1.2.0")])],
    )
    .await
}

/// The harness itself: every fixture variant is a bundle the renderer accepts (with the
/// install mode and config it needs), and a catalog of them is pulled and served.
async fn fixtures_render_and_catalogs_serve(ctx: Arc<Ctx>) -> Result<()> {
    let variants: Vec<(&str, Contents, Option<&str>)> = vec![
        ("standard", Contents::standard(), None),
        ("crd-only", Contents::crd_only(), None),
        (
            "single",
            Contents::standard().modes(&["SingleNamespace"]),
            Some(r#"{"watchNamespace":"elsewhere"}"#),
        ),
        (
            "own",
            Contents::standard().modes(&["OwnNamespace"]),
            Some(r#"{"watchNamespace":"e2e-fix"}"#),
        ),
        (
            "large",
            Contents {
                filler_crds: vec![600, 600, 600],
                ..Contents::standard()
            },
            None,
        ),
        (
            "bad-image",
            Contents {
                bad_image: true,
                ..Contents::standard()
            },
            None,
        ),
        (
            "webhooks",
            Contents {
                webhooks: true,
                ..Contents::standard()
            }
            .modes(&["AllNamespaces"]),
            None,
        ),
    ];
    let mut pkg = package("test");
    for (i, (what, c, config)) in variants.iter().enumerate() {
        let dir = ctx.env.fixture_dir(what)?;
        e2e::fixtures::write_bundle(&dir, &ctx.pkg("test"), "1.0.0", c, &ctx.id)?;
        let b = olm_bundle::Bundle::from_dir(&dir).with_context(|| format!("{what}: parse"))?;
        let provider = c.webhooks.then_some(olm_bundle::CertProvider::CertManager);
        let objs = olm_bundle::render_bundle(&b, &ctx.ns, *config, provider)
            .with_context(|| format!("{what}: render"))?;
        let size: usize = objs.iter().map(|o| o.to_string().len()).sum();
        ctx.note(format!("{what}: {} objects, {size} bytes", objs.len()));
        if *what == "large" {
            ensure!(size > 1536 * 1024, "large bundle is only {size} bytes");
        }
        pkg = pkg.bundle(&format!("1.0.{i}"), c.clone());
    }
    let entries = (0..variants.len())
        .map(|i| match i {
            0 => entry("1.0.0"),
            i => entry(&format!("1.0.{i}")).replaces(&format!("1.0.{}", i - 1)),
        })
        .collect();
    let cname = ctx.catalog("test", &[pkg.channel("all", entries)]).await?;
    let cat = ctx.wait_serving(&cname).await?;
    let base = cat
        .status
        .and_then(|s| s.urls)
        .map(|u| u.base)
        .unwrap_or_default();
    ensure!(
        base.ends_with(&format!("/catalogs/{cname}")),
        "urls.base {base:?}"
    );
    Ok(())
}

/// Installed=True/Succeeded, Progressing=True/Succeeded: upstream's "ClusterExtension is rolled
/// out" (test/e2e/steps/steps.go checks status and reason only; the message is "Desired state
/// reached" with Helm, the revision's "Revision <v> has rolled out." with ClusterObjectSets).
async fn rolled_out(ctx: &Ctx, name: &str) -> Result<()> {
    ctx.wait_cond(
        name,
        "Installed",
        "True",
        "Succeeded",
        Msg::Contains("Installed bundle "),
    )
    .await?;
    ctx.wait_cond(name, "Progressing", "True", "Succeeded", Msg::Any)
        .await?;
    Ok(())
}

async fn install_latest_from_one_catalog(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let cat = standard_catalog(&ctx).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    let ce = ctx.wait_installed(&name, "test", "1.2.0").await?;
    rolled_out(&ctx, &name).await?;
    let installed = cond(&ce, "Installed").unwrap();
    ensure!(
        installed.message
            == format!(
                "Installed bundle {}/bundles/test/{}:v1.2.0 successfully",
                ctx.env.reg,
                ctx.pkg("test")
            ),
        "Installed message: {:?}",
        installed.message
    );
    let ce = ctx
        .wait_cond(&name, "Available", "True", "", Msg::Any)
        .await
        .context("ClusterExtension is available")?;
    for t in [
        "Deprecated",
        "PackageDeprecated",
        "ChannelDeprecated",
        "BundleDeprecated",
    ] {
        let c = cond(&ce, t).with_context(|| format!("no {t} condition"))?;
        ensure!(
            c.status == "False" && c.reason == "NotDeprecated",
            "{t}: {c:?}"
        );
    }
    let n = ctx.names();
    wait_exists(
        &ctx.dynamic("apps/v1", "Deployment", "deployments", Some(&ctx.ns)),
        &n.deployment(),
    )
    .await?;
    let cm = wait_exists(
        &ctx.dynamic("v1", "ConfigMap", "configmaps", Some(&ctx.ns)),
        &n.configmap(),
    )
    .await?;
    ensure!(
        cm.data["data"]["version"] == "1.2.0",
        "configmap: {:?}",
        cm.data
    );
    let crd = wait_exists(&ctx.crds(), &n.crd_name()).await?;
    let labels = crd.labels();
    ensure!(
        labels.get(olm_k8s::OWNER_NAME_LABEL) == Some(&name)
            && labels.get(olm_k8s::OWNER_KIND_LABEL).map(String::as_str)
                == Some("ClusterExtension"),
        "CRD labels: {labels:?}"
    );
    ctx.note(format!("catalog {cat}"));
    Ok(())
}

async fn install_with_channel_and_version_range(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    ctx.catalog(
        "test",
        &[package("test")
            .bundle("1.0.0", Contents::standard())
            .bundle("1.1.0", Contents::standard())
            .bundle("1.2.0", Contents::standard())
            .bundle("1.3.0", Contents::standard())
            .bundle("2.0.0", Contents::standard())
            .channel(
                "alpha",
                vec![entry("1.0.0"), entry("1.3.0").replaces("1.0.0")],
            )
            .channel(
                "beta",
                vec![
                    entry("1.0.0"),
                    entry("1.1.0").replaces("1.0.0"),
                    entry("1.2.0").replaces("1.1.0"),
                    entry("2.0.0").replaces("1.2.0"),
                ],
            )],
    )
    .await?;
    let name = ext(&ctx);
    let mut spec = ctx.ext_spec("test");
    spec["source"]["catalog"]["channels"] = json!(["beta"]);
    spec["source"]["catalog"]["version"] = json!(">=1.0.0, <2.0.0");
    ctx.apply_ext(&name, &spec).await?;
    // 1.3.0 is in range but only in alpha; 2.0.0 is in beta but out of range.
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    rolled_out(&ctx, &name).await?;
    // No bundle in both: the resolution error names version and channels (resolve/catalog.go).
    let name2 = format!("{name}-none");
    let mut spec2 = ctx.ext_spec("test");
    spec2["source"]["catalog"]["channels"] = json!(["beta"]);
    spec2["source"]["catalog"]["version"] = json!("1.3.0");
    ctx.apply_ext(&name2, &spec2).await?;
    let msg = format!(
        "no bundles found for package \"{}\" matching version \"1.3.0\" in channels [beta]",
        ctx.pkg("test")
    );
    ctx.wait_cond(&name2, "Progressing", "True", "Retrying", Msg::Exact(&msg))
        .await?;
    ctx.wait_cond(
        &name2,
        "Installed",
        "False",
        "Failed",
        Msg::Exact("No bundle installed"),
    )
    .await?;
    Ok(())
}

async fn pinned_version_never_upgrades(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let pkgs = vec![
        package("test")
            .bundle("1.0.0", Contents::standard())
            .bundle("1.0.1", Contents::standard())
            .channel(
                "beta",
                vec![entry("1.0.0"), entry("1.0.1").replaces("1.0.0")],
            ),
    ];
    ctx.catalog("test", &pkgs).await?;
    let name = ext(&ctx);
    let mut spec = ctx.ext_spec("test");
    spec["source"]["catalog"]["version"] = json!("1.0.0");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "1.0.0").await?;
    rolled_out(&ctx, &name).await?;
    // A successor is there and the catalog changes under it: still pinned.
    let v2 = ctx
        .build_catalog(
            "test",
            "v2",
            &[pkgs[0]
                .clone()
                .bundle("1.1.0", Contents::standard())
                .channel("stable", vec![entry("1.1.0").replaces("1.0.0")])],
        )
        .await?;
    let cname = ctx
        .apply_catalog("test", &v2.image, &Default::default())
        .await?;
    ctx.wait_catalog_resolved(&cname, &v2.image).await?;
    ctx.stays_installed(&name, "test", "1.0.0", Duration::from_secs(10))
        .await?;
    Ok(())
}

async fn selector_by_catalog_name_label(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let a = ctx
        .catalog(
            "a",
            &[package("test")
                .bundle("1.0.0", Contents::standard())
                .channel("beta", vec![entry("1.0.0")])],
        )
        .await?;
    ctx.catalog(
        "b",
        &[package("test")
            .bundle("2.0.0", Contents::standard())
            .channel("beta", vec![entry("2.0.0")])],
    )
    .await?;
    let api: Api<olm_api::ClusterCatalog> = Api::all(ctx.client.clone());
    let cat = api.get(&a).await?;
    let label = cat.labels().get(olm_k8s::METADATA_NAME_LABEL).cloned();
    ensure!(
        label.as_deref() == Some(a.as_str()),
        "ClusterCatalog {a} carries {}={label:?}; nothing injected the name label \
         (upstream's mutating webhook inject-metadata-name.olm.operatorframework.io)",
        olm_k8s::METADATA_NAME_LABEL
    );
    let name = ext(&ctx);
    let mut spec = ctx.ext_spec("test");
    spec["source"]["catalog"]["selector"] =
        json!({"matchLabels": {olm_k8s::METADATA_NAME_LABEL: a}});
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "1.0.0").await?;
    Ok(())
}

/// install.feature "watchNamespace config is required for extension supporting single namespace".
async fn single_namespace_needs_watch_namespace(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let target = ctx.extra_namespace(&format!("target-{}", ctx.id)).await?;
    ctx.catalog(
        "test",
        &[package("single")
            .bundle(
                "1.0.0",
                Contents {
                    crd: Some(Default::default()),
                    deployment: true,
                    ..Contents::default()
                }
                .modes(&["SingleNamespace"]),
            )
            .channel("alpha", vec![entry("1.0.0")])],
    )
    .await?;
    let name = ext(&ctx);
    let spec = ctx.ext_spec("single");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_cond(
        &name,
        "Progressing",
        "False",
        "InvalidConfiguration",
        Msg::Contains(
            "invalid ClusterExtension configuration: invalid configuration: required field \"watchNamespace\" is missing",
        ),
    )
    .await?;
    let mut spec = spec;
    spec["config"] = json!({"configType": "Inline", "inline": {"watchNamespace": target}});
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "single", "1.0.0").await?;
    target_namespaces_are(&ctx, &target).await
}

/// The Deployment's pod template says which namespaces the operator watches.
async fn target_namespaces_are(ctx: &Ctx, want: &str) -> Result<()> {
    let d = wait_exists(
        &ctx.dynamic("apps/v1", "Deployment", "deployments", Some(&ctx.ns)),
        &ctx.names().deployment(),
    )
    .await?;
    let got = d.data["spec"]["template"]["metadata"]["annotations"]
        [olm_k8s::TARGET_NAMESPACES_ANNOTATION]
        .as_str()
        .unwrap_or_default()
        .to_string();
    ensure!(
        got == want,
        "olm.targetNamespaces is {got:?}, want {want:?}"
    );
    Ok(())
}

/// install.feature "watchNamespace config is required for extension supporting own namespace".
async fn own_namespace_needs_own_watch_namespace(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    ctx.catalog(
        "test",
        &[package("own")
            .bundle(
                "1.0.0",
                Contents {
                    crd: Some(Default::default()),
                    deployment: true,
                    ..Contents::default()
                }
                .modes(&["OwnNamespace"]),
            )
            .channel("alpha", vec![entry("1.0.0")])],
    )
    .await?;
    let name = ext(&ctx);
    let mut spec = ctx.ext_spec("own");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_cond(
        &name,
        "Progressing",
        "False",
        "InvalidConfiguration",
        Msg::Contains(
            "invalid ClusterExtension configuration: invalid configuration: required field \"watchNamespace\" is missing",
        ),
    )
    .await?;
    spec["config"] = json!({"configType": "Inline", "inline": {"watchNamespace": "some-ns"}});
    ctx.apply_ext(&name, &spec).await?;
    let msg = format!("invalid value \"some-ns\": must be \"{}\"", ctx.ns);
    ctx.wait_cond(
        &name,
        "Progressing",
        "False",
        "InvalidConfiguration",
        Msg::Contains(&msg),
    )
    .await?;
    spec["config"] = json!({"configType": "Inline", "inline": {"watchNamespace": ctx.ns}});
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "own", "1.0.0").await?;
    rolled_out(&ctx, &name).await?;
    target_namespaces_are(&ctx, &ctx.ns).await
}

/// install.feature "Report failure when watchNamespace has invalid DNS-1123 name" and "Reject
/// watchNamespace for operator that does not support Single/OwnNamespace install modes".
async fn invalid_inline_config_is_invalid_configuration(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    ctx.catalog(
        "test",
        &[
            package("single")
                .bundle("1.0.0", Contents::crd_only().modes(&["SingleNamespace"]))
                .channel("alpha", vec![entry("1.0.0")]),
            package("all")
                .bundle(
                    "1.0.0",
                    Contents {
                        name_id: Some(format!("{}-all", ctx.id)),
                        ..Contents::crd_only().modes(&["AllNamespaces"])
                    },
                )
                .channel("alpha", vec![entry("1.0.0")]),
        ],
    )
    .await?;
    let a = format!("{}-dns", ext(&ctx));
    let mut spec = ctx.ext_spec("single");
    spec["config"] =
        json!({"configType": "Inline", "inline": {"watchNamespace": "invalid-namespace-"}});
    ctx.apply_ext(&a, &spec).await?;
    ctx.wait_cond(
        &a,
        "Progressing",
        "False",
        "InvalidConfiguration",
        Msg::Contains(
            "invalid ClusterExtension configuration: invalid configuration: field \"watchNamespace\" must match pattern",
        ),
    )
    .await?;
    let b = format!("{}-unknown", ext(&ctx));
    let mut spec = ctx.ext_spec("all");
    spec["config"] = json!({"configType": "Inline", "inline": {"watchNamespace": ctx.ns}});
    ctx.apply_ext(&b, &spec).await?;
    let ce = ctx
        .wait_cond(
            &b,
            "Progressing",
            "False",
            "InvalidConfiguration",
            Msg::Contains(
                "invalid ClusterExtension configuration: invalid configuration: unknown field \"watchNamespace\"",
            ),
        )
        .await?;
    // A terminal configuration error installs nothing.
    let installed = cond(&ce, "Installed").map(|c| c.status.clone());
    ensure!(
        installed.as_deref() != Some("True"),
        "Installed despite invalid config"
    );
    Ok(())
}

/// install.feature "Install operator having webhooks", with the built-in certificate provider
/// instead of cert-manager: every webhook configuration carries the provider's CA bundle.
async fn webhook_operator_with_builtin_certificates(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    ctx.catalog(
        "test",
        &[package("webhook")
            .bundle(
                "0.0.1",
                Contents {
                    crd: Some(Default::default()),
                    deployment: true,
                    webhooks: true,
                    ..Contents::default()
                }
                .modes(&["AllNamespaces"]),
            )
            .channel("alpha", vec![entry("0.0.1")])],
    )
    .await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("webhook")).await?;
    ctx.wait_installed(&name, "webhook", "0.0.1").await?;
    rolled_out(&ctx, &name).await?;
    let selector = format!("{}={name}", olm_k8s::OWNER_NAME_LABEL);
    // The provider injects the CA after the revision created the configurations, so it may
    // land a moment after Installed: wait for it, checking everything else as it is.
    e2e::eventually(WAIT, || async {
        let mut seen = 0;
        let mut missing = Vec::new();
        for (kind, plural) in [
            (
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfigurations",
            ),
            (
                "MutatingWebhookConfiguration",
                "mutatingwebhookconfigurations",
            ),
        ] {
            let api = ctx.dynamic("admissionregistration.k8s.io/v1", kind, plural, None);
            let list = api.list(&ListParams::default().labels(&selector)).await?;
            ensure!(!list.items.is_empty(), "no {kind} labelled {selector}");
            for wc in list.items {
                for w in wc.data["webhooks"].as_array().cloned().unwrap_or_default() {
                    seen += 1;
                    let ca = w["clientConfig"]["caBundle"].as_str().unwrap_or_default();
                    if ca.is_empty() {
                        missing.push(format!("{kind} {} webhook {}", wc.name_any(), w["name"]));
                    }
                    let svc = w["clientConfig"]["service"]["name"]
                        .as_str()
                        .unwrap_or_default();
                    ensure!(
                        svc == ctx.names().webhook_service(),
                        "{kind} service {svc:?}"
                    );
                }
            }
        }
        ensure!(seen == 2, "{seen} webhooks, want 2");
        Ok(missing.is_empty().then_some(()))
    })
    .await
    .context("every webhook configuration carries the provider's caBundle")?;
    // The serving certificate is mounted from a Secret the provider made.
    let d = wait_exists(
        &ctx.dynamic("apps/v1", "Deployment", "deployments", Some(&ctx.ns)),
        &ctx.names().deployment(),
    )
    .await?;
    let secret = d.data["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|v| v["secret"]["secretName"].as_str().map(str::to_string))
        .context("the webhook Deployment mounts no certificate Secret")?;
    let s = wait_exists(
        &ctx.dynamic("v1", "Secret", "secrets", Some(&ctx.ns)),
        &secret,
    )
    .await?;
    ensure!(
        s.data["data"]["tls.crt"].is_string() && s.data["data"]["tls.key"].is_string(),
        "certificate Secret {secret} lacks tls.crt/tls.key"
    );
    Ok(())
}

/// install.feature "Install bundle with large CRD" and "ClusterObjectSet objects are
/// externalized to immutable Secrets", with a bundle above etcd's 1.5 MiB request limit.
async fn bundle_larger_than_etcd_limit_is_externalised(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let contents = Contents {
        filler_crds: vec![600, 600, 600],
        ..Contents::standard()
    };
    let pkgs = [package("test")
        .bundle("1.0.0", contents)
        .channel("beta", vec![entry("1.0.0")])];
    ctx.catalog("test", &pkgs).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    ctx.wait_installed(&name, "test", "1.0.0").await?;
    rolled_out(&ctx, &name).await?;
    let sets = ctx.object_sets(&name).await?;
    let cos = sets
        .iter()
        .find(|c| c.name_any() == format!("{name}-1"))
        .with_context(|| {
            format!(
                "no ClusterObjectSet {name}-1 (found {:?})",
                sets.iter().map(|c| c.name_any()).collect::<Vec<_>>()
            )
        })?;
    let value = serde_json::to_value(cos)?;
    let mut refs = vec![];
    let mut total = 0;
    for phase in value["spec"]["phases"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        for o in phase["objects"].as_array().cloned().unwrap_or_default() {
            total += 1;
            if let Some(r) = o.get("ref") {
                refs.push(r.clone());
            }
        }
    }
    ensure!(
        total > 0 && refs.len() == total,
        "{} of {total} objects are Secret refs",
        refs.len()
    );
    let secrets = ctx.dynamic("v1", "Secret", "secrets", Some(e2e::SYSTEM_NAMESPACE));
    let mut bytes = 0usize;
    for r in &refs {
        let sname = r["name"].as_str().unwrap_or_default();
        let s = secrets
            .get(sname)
            .await
            .with_context(|| format!("Secret {sname}"))?;
        ensure!(
            s.data["immutable"] == true,
            "Secret {sname} is not immutable"
        );
        ensure!(
            s.data["type"] == olm_k8s::OBJECT_DATA_SECRET_TYPE,
            "Secret {sname} type {}",
            s.data["type"]
        );
        let l = s.labels();
        ensure!(
            l.get(olm_k8s::REVISION_NAME_LABEL) == Some(&format!("{name}-1"))
                && l.get(olm_k8s::OWNER_NAME_LABEL) == Some(&name),
            "Secret {sname} labels {l:?}"
        );
        ensure!(
            s.owner_references()
                .iter()
                .any(|o| o.kind == "ClusterObjectSet" && o.controller == Some(true)),
            "Secret {sname} not owned by its ClusterObjectSet"
        );
        let key = r["key"].as_str().unwrap_or_default();
        bytes += s.data["data"][key]
            .as_str()
            .map(str::len)
            .unwrap_or_default();
    }
    ctx.note(format!(
        "{total} objects in {} Secret refs, {bytes} base64 bytes",
        refs.len()
    ));
    for i in 0..3 {
        let crd = format!("fillers{i}.{}", ctx.names().crd_group());
        wait_exists(&ctx.crds(), &crd).await?;
    }
    Ok(())
}

/// recover.feature "Install ClusterExtension after conflicting resource is removed" and
/// update.feature's collision scenario ("revision object collisions").
async fn object_owned_by_someone_else_collides(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    standard_catalog(&ctx).await?;
    let cms = ctx.dynamic("v1", "ConfigMap", "configmaps", Some(&ctx.ns));
    let foreign: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ctx.names().configmap(), "namespace": ctx.ns},
        "data": {"owner": "someone else"},
    }))?;
    cms.create(&PostParams::default(), &foreign).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    let ce = ctx
        .wait_cond(
            &name,
            "Progressing",
            "True",
            "Retrying",
            Msg::Contains("revision object collisions"),
        )
        .await?;
    ctx.note(format!(
        "collision message: {:?}",
        cond(&ce, "Progressing").map(|c| &c.message)
    ));
    let installed = cond(&ce, "Installed").map(|c| c.status.clone());
    ensure!(
        installed.as_deref() != Some("True"),
        "Installed while colliding"
    );
    let still = cms.get(&ctx.names().configmap()).await?;
    ensure!(
        still.data["data"]["owner"] == "someone else",
        "foreign ConfigMap was overwritten"
    );
    cms.delete(&ctx.names().configmap(), &DeleteParams::default())
        .await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    rolled_out(&ctx, &name).await
}

/// recover.feature "Restore removed resource", plus a changed field set back.
async fn drift_is_put_back(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    standard_catalog(&ctx).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    let cms = ctx.dynamic("v1", "ConfigMap", "configmaps", Some(&ctx.ns));
    let cm = ctx.names().configmap();
    wait_exists(&cms, &cm).await?;
    cms.delete(&cm, &DeleteParams::default()).await?;
    wait_exists(&cms, &cm)
        .await
        .context("removed ConfigMap never restored")?;
    cms.patch(
        &cm,
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"version": "tampered"}})),
    )
    .await?;
    e2e::eventually(WAIT, || async {
        let o = cms.get(&cm).await?;
        Ok((o.data["data"]["version"] == "1.2.0").then_some(()))
    })
    .await
    .context("changed ConfigMap data never put back")?;
    // A user's own label is another manager's field and stays.
    cms.patch(
        &cm,
        &PatchParams::apply("someone-else"),
        &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": cm, "labels": {"example.com/custom-label": "my-value"}}})),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let o = cms.get(&cm).await?;
    ensure!(
        o.labels()
            .get("example.com/custom-label")
            .map(String::as_str)
            == Some("my-value"),
        "user label removed: {:?}",
        o.labels()
    );
    Ok(())
}

/// uninstall.feature "Removing ClusterExtension triggers the extension uninstall".
async fn uninstall_removes_crd_and_objects(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    standard_catalog(&ctx).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    rolled_out(&ctx, &name).await?;
    let n = ctx.names();
    let crds = ctx.crds();
    wait_exists(&crds, &n.crd_name()).await?;
    ctx.delete_ext(&name).await?;
    wait_gone(&crds, &n.crd_name())
        .await
        .context("CRD left after uninstall")?;
    wait_gone(
        &ctx.dynamic("apps/v1", "Deployment", "deployments", Some(&ctx.ns)),
        &n.deployment(),
    )
    .await?;
    wait_gone(
        &ctx.dynamic("v1", "ConfigMap", "configmaps", Some(&ctx.ns)),
        &n.configmap(),
    )
    .await?;
    let left = ctx.object_sets(&name).await?;
    ensure!(
        left.is_empty(),
        "ClusterObjectSets left: {:?}",
        left.iter().map(|c| c.name_any()).collect::<Vec<_>>()
    );
    Ok(())
}

/// recover.feature "Install ClusterExtension after target namespace becomes available".
async fn namespace_missing_until_created(ctx: Arc<Ctx>) -> Result<()> {
    standard_catalog(&ctx).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    let ce = ctx
        .wait_cond(&name, "Progressing", "True", "Retrying", Msg::Any)
        .await?;
    ctx.note(format!(
        "without namespace: {:?}",
        cond(&ce, "Progressing").map(|c| &c.message)
    ));
    ctx.namespace().await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    rolled_out(&ctx, &name).await
}

async fn unknown_package(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    standard_catalog(&ctx).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("missing")).await?;
    let msg = format!("no bundles found for package \"{}\"", ctx.pkg("missing"));
    ctx.wait_cond(&name, "Progressing", "True", "Retrying", Msg::Exact(&msg))
        .await?;
    let ce = ctx
        .wait_cond(
            &name,
            "Installed",
            "False",
            "Failed",
            Msg::Exact("No bundle installed"),
        )
        .await?;
    // Resolution failed without deprecation data: every deprecation condition is Unknown
    // (clusterextension_controller.go SetDeprecationStatus).
    for (t, reason, m) in [
        (
            "Deprecated",
            "DeprecationStatusUnknown",
            "deprecation status unknown: catalog data unavailable",
        ),
        (
            "PackageDeprecated",
            "DeprecationStatusUnknown",
            "deprecation status unknown: catalog data unavailable",
        ),
        (
            "ChannelDeprecated",
            "DeprecationStatusUnknown",
            "deprecation status unknown: catalog data unavailable",
        ),
        ("BundleDeprecated", "Absent", "no bundle installed yet"),
    ] {
        let c = cond(&ce, t).with_context(|| format!("no {t} condition"))?;
        ensure!(
            c.status == "Unknown" && c.reason == reason && c.message == m,
            "{t}: {}/{} {:?}",
            c.status,
            c.reason,
            c.message
        );
    }
    Ok(())
}

async fn bundle_image_missing(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let image = format!("{}/bundles/nowhere/{}:v1.0.0", ctx.env.reg, ctx.pkg("test"));
    ctx.catalog(
        "test",
        &[package("test")
            .bundle_at("1.0.0", &image)
            .channel("beta", vec![entry("1.0.0")])],
    )
    .await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    let prefix = format!(
        "error for resolved bundle \"{}\" with version \"1.0.0\": ",
        ctx.bundle("test", "1.0.0")
    );
    let ce = ctx
        .wait_cond(
            &name,
            "Progressing",
            "True",
            "Retrying",
            Msg::Contains(&prefix),
        )
        .await?;
    ctx.note(format!(
        "message: {:?}",
        cond(&ce, "Progressing").map(|c| &c.message)
    ));
    ctx.wait_cond(
        &name,
        "Installed",
        "False",
        "Failed",
        Msg::Exact("No bundle installed"),
    )
    .await?;
    Ok(())
}

async fn image_that_is_not_a_bundle(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    // A catalog image where a bundle should be: no manifests/, no metadata/.
    let other = ctx
        .build_catalog("other", "v1", &[package("x").channel("c", vec![])])
        .await?;
    ctx.catalog(
        "test",
        &[package("test")
            .bundle_at("1.0.0", &other.image)
            .channel("beta", vec![entry("1.0.0")])],
    )
    .await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    let prefix = format!(
        "error for resolved bundle \"{}\" with version \"1.0.0\": ",
        ctx.bundle("test", "1.0.0")
    );
    let ce = ctx
        .wait_cond(&name, "Progressing", "", "", Msg::Contains(&prefix))
        .await?;
    let p = cond(&ce, "Progressing").unwrap();
    ctx.note(format!(
        "Progressing={}/{} {:?}",
        p.status, p.reason, p.message
    ));
    ensure!(
        cond(&ce, "Installed").map(|c| c.status.as_str()) != Some("True"),
        "installed a non-bundle"
    );
    Ok(())
}

/// The API this project implements says the ServiceAccount "is used to perform all interactions
/// with the cluster" and "must exist in the namespace" (the ClusterExtension API document), as
/// upstream did through v1.10 (v1.11.0 ignores the field). Expected text: v1.10.0
/// `test/e2e/features/install.feature` "Report error when ServiceAccount does not exist".
async fn service_account_missing(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    standard_catalog(&ctx).await?;
    let name = ext(&ctx);
    let mut spec = ctx.ext_spec("test");
    spec["serviceAccount"] = json!({"name": "non-existent-sa"});
    ctx.apply_ext(&name, &spec).await?;
    let msg = format!(
        "operation cannot proceed due to the following validation error(s): service account \"non-existent-sa\" not found in namespace \"{}\"",
        ctx.ns
    );
    ctx.wait_cond(
        &name,
        "Progressing",
        "True",
        "Retrying",
        Msg::Contains(&msg),
    )
    .await?;
    Ok(())
}

/// v1.10.0 install.feature: with `ServiceAccount "olm-admin" in test namespace is cluster admin`
/// the extension installs through that ServiceAccount.
async fn service_account_with_permissions_installs(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    standard_catalog(&ctx).await?;
    let sa = "olm-admin";
    let sas = ctx.dynamic("v1", "ServiceAccount", "serviceaccounts", Some(&ctx.ns));
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": ctx.ns}}))?,
    )
    .await?;
    let crbs = ctx.dynamic(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        None,
    );
    let crb = format!("e2e-{}-{sa}", ctx.id);
    crbs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding", "metadata": {"name": crb},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ctx.ns}]}))?,
    )
    .await?;
    let name = ext(&ctx);
    let mut spec = ctx.ext_spec("test");
    spec["serviceAccount"] = json!({"name": sa});
    ctx.apply_ext(&name, &spec).await?;
    let r = async {
        ctx.wait_installed(&name, "test", "1.2.0").await?;
        rolled_out(&ctx, &name).await
    }
    .await;
    let _ = crbs.delete(&crb, &DeleteParams::default()).await;
    r
}

/// The only selected catalog serves nothing (its image was never pushed). Upstream fails with
/// `catalog "<c>" is not being served`; olm skips it and says the package is not in the
/// serving catalogs and which catalog was skipped, so the user knows to wait for it.
async fn catalog_not_serving(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let image = format!("{}/e2e/never-pushed-{}:v1", ctx.env.reg, ctx.id);
    let cname = ctx
        .apply_catalog("test", &image, &Default::default())
        .await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    let msg = format!(
        "package \"{}\" was not found in the serving catalogs; catalog \"{cname}\" was skipped (not serving: ",
        ctx.pkg("test")
    );
    let ce = ctx
        .wait_cond(
            &name,
            "Progressing",
            "True",
            "Retrying",
            Msg::Contains(&msg),
        )
        .await?;
    ctx.note(format!(
        "message: {:?}",
        cond(&ce, "Progressing").map(|c| &c.message)
    ));
    ctx.wait_cond(&name, "Installed", "False", "Failed", Msg::Any)
        .await?;
    Ok(())
}

/// Two users, one cluster: one user's ClusterCatalog cannot be unpacked (its image is not in
/// the registry) while another installs from a catalog that serves. Upstream fails every
/// resolution that selects the failing catalog (`error walking catalogs: … catalog "<c>" is not
/// being served`), so neither an extension whose selector picks both catalogs nor one without
/// a selector installs. olm installs both from the serving catalog, names the skipped catalog
/// in `CatalogsSkipped` (the client's `olm install` skips it by the same rule), and drops the
/// condition once that catalog serves.
async fn a_catalog_that_serves_nothing_is_skipped(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    // Pushed only at the end, so that the catalog fails to unpack until then.
    let later = format!("{}/e2e/unpacking-{}:v1", ctx.env.reg, ctx.id);
    let unpacking = ctx
        .apply_catalog("unpacking", &later, &Default::default())
        .await?;
    ctx.catalog(
        "test",
        &[
            package("test")
                .bundle("1.2.0", Contents::crd_only())
                .channel("beta", vec![entry("1.2.0")]),
            package("open")
                .bundle(
                    "1.0.0",
                    Contents {
                        name_id: Some(format!("{}o", ctx.id)),
                        ..Contents::crd_only()
                    },
                )
                .channel("beta", vec![entry("1.0.0")]),
        ],
    )
    .await?;
    // The catalog's own account of its failing unpack, whenever the extension resolved.
    let skipped =
        format!("catalog \"{unpacking}\" was skipped (not serving: source catalog content: ");

    // Its selector picks both of this scenario's catalogs.
    let selecting = ext(&ctx);
    ctx.apply_ext(&selecting, &ctx.ext_spec("test")).await?;
    // No selector: every catalog of the cluster.
    let open = format!("{selecting}-open");
    let mut spec = ctx.ext_spec("open");
    if let Some(c) = spec
        .pointer_mut("/source/catalog")
        .and_then(|c| c.as_object_mut())
    {
        c.remove("selector");
    }
    ctx.apply_ext(&open, &spec).await?;
    for (name, base, version) in [(&selecting, "test", "1.2.0"), (&open, "open", "1.0.0")] {
        ctx.wait_installed(name, base, version).await?;
        let ce = ctx
            .wait_cond(
                name,
                "CatalogsSkipped",
                "True",
                "NotServing",
                Msg::Contains(&skipped),
            )
            .await?;
        ctx.note(format!(
            "{name}: {:?}",
            cond(&ce, "CatalogsSkipped").map(|c| &c.message)
        ));
    }

    // The catalog serves at last: nothing is skipped any more.
    ctx.build_catalog(
        "unpacking",
        "v1",
        &[package("other")
            .bundle(
                "1.0.0",
                Contents {
                    name_id: Some(format!("{}u", ctx.id)),
                    ..Contents::crd_only()
                },
            )
            .channel("beta", vec![entry("1.0.0")])],
    )
    .await?;
    ctx.wait_serving(&unpacking).await?;
    e2e::eventually(WAIT, || async {
        let ce = ctx.get_ext(&selecting).await?;
        Ok(cond(&ce, "CatalogsSkipped").is_none().then_some(()))
    })
    .await
    .context("CatalogsSkipped stays after the catalog serves")?;
    ctx.wait_installed(&selecting, "test", "1.2.0").await?;
    Ok(())
}

async fn two_extensions_wanting_the_same_crd(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let shared = Contents {
        name_id: Some(ctx.id.clone()),
        ..Contents::crd_only()
    };
    ctx.catalog(
        "test",
        &[
            package("first")
                .bundle("1.0.0", shared.clone())
                .channel("beta", vec![entry("1.0.0")]),
            package("second")
                .bundle("1.0.0", shared)
                .channel("beta", vec![entry("1.0.0")]),
        ],
    )
    .await?;
    let first = format!("{}-first", ext(&ctx));
    ctx.apply_ext(&first, &ctx.ext_spec("first")).await?;
    ctx.wait_installed(&first, "first", "1.0.0").await?;
    let second = format!("{}-second", ext(&ctx));
    ctx.apply_ext(&second, &ctx.ext_spec("second")).await?;
    let ce = ctx
        .wait_cond(
            &second,
            "Progressing",
            "True",
            "Retrying",
            Msg::Contains("revision object collisions"),
        )
        .await?;
    let p = cond(&ce, "Progressing").unwrap();
    ensure!(
        p.message.contains(&ctx.names().crd_name()),
        "collision message does not name the CRD: {:?}",
        p.message
    );
    ctx.note(format!("collision message: {:?}", p.message));
    let f = ctx.get_ext(&first).await?;
    if cond(&f, "Installed").map(|c| c.status.as_str()) != Some("True") {
        bail!(
            "first extension lost Installed: {}",
            e2e::describe_conditions(e2e::ext_conditions(&f), f.metadata.generation)
        );
    }
    Ok(())
}

/// A catalog whose package `test` has one bundle, 1.0.0 in `beta`, holding `contents`, and an
/// extension installing it; the extension's name.
async fn install_one(ctx: &Ctx, contents: Contents) -> Result<String> {
    ctx.catalog(
        "test",
        &[package("test")
            .bundle("1.0.0", contents)
            .channel("beta", vec![entry("1.0.0")])],
    )
    .await?;
    let name = ext(ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    Ok(name)
}

/// The API server's answer to creating `object` (a dry run), which must be a refusal.
async fn refusal(api: &Api<kube::api::DynamicObject>, object: serde_json::Value) -> Result<String> {
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match api.create(&params, &serde_json::from_value(object)?).await {
        Err(kube::Error::Api(s)) => Ok(s.message),
        Err(e) => Err(e.into()),
        Ok(o) => bail!("the API server took {}", o.name_any()),
    }
}

/// What bundle validation says about names is what kube-apiserver says: for each kind's rule
/// (DNS-1123 subdomain, DNS-1035 label for Services, path segment for RBAC, `<plural>.<group>`
/// for CRDs) the message olm_k8s words is the one the control plane answers a create with.
async fn names_are_refused_in_the_api_servers_words(ctx: Arc<Ctx>) -> Result<()> {
    let ns = ctx.namespace().await?;
    let long = "a".repeat(254);
    let names = ctx.names();
    let mut misnamed_crd = e2e::fixtures::crd_object(&names, &e2e::Crd::default(), "E2ETest");
    misnamed_crd["metadata"]["name"] = json!(format!("other.{}", names.crd_group()));
    let cases = [
        (
            "v1",
            "ConfigMap",
            "configmaps",
            Some(ns.as_str()),
            long.as_str(),
            json!({}),
        ),
        (
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            Some(ns.as_str()),
            "Bad_SA",
            json!({}),
        ),
        (
            "v1",
            "Service",
            "services",
            Some(ns.as_str()),
            "9lives",
            json!({"spec": {"ports": [{"port": 80}]}}),
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "clusterroles",
            None,
            "a/b",
            json!({}),
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "Role",
            "roles",
            Some(ns.as_str()),
            "..",
            json!({}),
        ),
    ];
    for (api_version, kind, plural, namespace, name, extra) in cases {
        let mut object = json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name}});
        if let Some(n) = namespace {
            object["metadata"]["namespace"] = json!(n);
        }
        if let (Some(o), Some(e)) = (object.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let ours = olm_k8s::invalid_object_message(
            group,
            kind,
            name,
            &olm_k8s::object_name_errors(group, kind, name),
        );
        let theirs = refusal(&ctx.dynamic(api_version, kind, plural, namespace), object).await?;
        ensure!(
            ours == theirs,
            "{kind} {name:?}:\n ours:   {ours}\n theirs: {theirs}"
        );
    }
    let crd_name = misnamed_crd["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let theirs = refusal(&ctx.crds(), misnamed_crd).await?;
    let ours = format!(
        "CustomResourceDefinition.apiextensions.k8s.io \"{crd_name}\" is invalid: metadata.name: Invalid value: \"{crd_name}\": must be spec.names.plural+\".\"+spec.group"
    );
    ensure!(ours == theirs, "CRD:\n ours:   {ours}\n theirs: {theirs}");
    Ok(())
}

/// A bundle whose CRD is named with 10,000 characters is refused before anything is applied,
/// in the words the API server would refuse that CRD with, as a clear Progressing condition —
/// not a revision whose every status write is refused while the extension says RollingOut.
async fn crd_name_the_api_server_refuses_is_refused_at_validation(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let names = ctx.names();
    let group = names.crd_group();
    let crd_name = format!("{}.{group}", "a".repeat(10_000 - 1 - group.len()));
    ensure!(crd_name.len() == 10_000);
    let contents = Contents {
        crd_name: Some(crd_name.clone()),
        ..Contents::standard()
    };
    let name = install_one(&ctx, contents).await?;
    let ce = ctx
        .wait_cond(
            &name,
            "Progressing",
            "True",
            "Retrying",
            Msg::Contains("must be no more than 253 characters"),
        )
        .await?;
    let message = cond(&ce, "Progressing")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    let mut crd = e2e::fixtures::crd_object(&names, &e2e::Crd::default(), "E2ETest");
    crd["metadata"]["name"] = json!(crd_name);
    let theirs = refusal(&ctx.crds(), crd).await?;
    let prefix = format!(
        "error for resolved bundle \"{}\" with version \"1.0.0\": ",
        ctx.bundle("test", "1.0.0")
    );
    ensure!(
        message == format!("{prefix}{theirs}"),
        "the condition says the API server's words after the bundle's name: {} bytes, starting {:?}; the API server says {} bytes, starting {:?}",
        message.len(),
        &message[..message.len().min(300)],
        theirs.len(),
        &theirs[..theirs.len().min(300)],
    );
    ctx.note(format!(
        "Progressing=True/Retrying, {} bytes: the API server's own refusal of the CRD",
        message.len()
    ));
    ensure!(
        cond(&ce, "Installed").map(|c| c.status.as_str()) != Some("True"),
        "installed a bundle the API server refuses"
    );
    ensure!(
        ctx.object_sets(&name).await?.is_empty(),
        "a revision was made for a bundle that failed validation"
    );
    Ok(())
}

/// A revision whose objects collide with more than fits in a condition (eight ClusterRoles
/// someone else made, each named with 5,000 characters) reports the collision truncated as
/// upstream truncates (32768 bytes, "\n\n... [message truncated]") on the revision and on the
/// extension, instead of a status the API server refuses; once the ClusterRoles go, it installs.
async fn collision_message_over_the_limit_is_truncated(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let roles: Vec<String> = (0..8)
        .map(|i| format!("e2e-{}-{i}-{}", ctx.id, "r".repeat(5000)))
        .collect();
    let api = ctx.dynamic(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        None,
    );
    for r in &roles {
        let foreign = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": r}, "rules": []});
        api.create(&PostParams::default(), &serde_json::from_value(foreign)?)
            .await?;
    }
    let contents = Contents {
        cluster_roles: roles.clone(),
        ..Contents::crd_only()
    };
    let name = install_one(&ctx, contents).await?;
    let ce = ctx
        .wait_cond(
            &name,
            "Progressing",
            "True",
            "Retrying",
            Msg::Contains("revision object collisions"),
        )
        .await?;
    let max = olm_k8s::MAX_CONDITION_MESSAGE_LENGTH;
    let suffix = olm_k8s::TRUNCATION_SUFFIX;
    let on_extension = cond(&ce, "Progressing")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(
        on_extension.len() <= max && on_extension.ends_with(suffix),
        "extension message: {} bytes, ending {:?}",
        on_extension.len(),
        &on_extension[on_extension.len().saturating_sub(80)..]
    );
    let revisions = ctx.object_sets(&name).await?;
    let revision = revisions.first().context("no revision")?;
    let progressing = revision
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Progressing"))
        .context("the revision has no Progressing condition")?;
    ensure!(
        progressing
            .message
            .starts_with("revision object collisions in phase")
            && progressing.message.len() <= max
            && progressing.message.ends_with(suffix),
        "revision message: {} bytes, starting {:?}",
        progressing.message.len(),
        &progressing.message[..progressing.message.len().min(120)]
    );
    ctx.note(format!(
        "collision message truncated to {} bytes on the revision, {} on the extension",
        progressing.message.len(),
        on_extension.len()
    ));
    for r in &roles {
        api.delete(r, &DeleteParams::default()).await?;
    }
    ctx.wait_installed(&name, "test", "1.0.0").await?;
    Ok(())
}
