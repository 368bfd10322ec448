//! Upgrading, pinning and choosing between catalogs end to end. Expected reasons and messages
//! are upstream's where its e2e suite states them (operator-controller v1.11.0
//! `test/e2e/features/update.feature`, `install.feature`, `recover.feature`) or where its unit
//! tests pin them (`internal/operator-controller/resolve/catalog_test.go` for resolution errors,
//! `controllers/clusterextension_controller.go` `SetDeprecationStatus` for deprecation texts).
//!
//! Run: `cargo test -p olm-controller --test e2e_upgrade [-- NAME_SUBSTRING…]`.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod e2e;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use e2e::{CatalogOpts, Contents, Crd, Ctx, Msg, Package, cond, entry, package, wait_exists};
use kube::api::DeleteParams;
use serde_json::json;

fn main() {
    e2e::main(vec![
        scenario!(upstream_two_head_channel_is_served, "heads"),
        scenario!(update_to_a_successor_version, "succ"),
        scenario!(no_upgrade_without_an_edge, "noedge"),
        scenario!(self_certified_downgrade_and_non_successor, "selfc"),
        scenario!(upgrade_when_catalog_ref_points_at_a_new_image, "newref"),
        scenario!(upgrade_when_catalog_tag_is_repushed_and_polled, "poll"),
        scenario!(channel_switch_follows_the_new_channel, "chan"),
        scenario!(skips_and_skip_range_are_edges, "skips"),
        scenario!(deprecation_conditions_appear_and_clear, "depr"),
        scenario!(
            ambiguity_across_equal_priority_and_priority_deciding,
            "prio"
        ),
        scenario!(highest_priority_catalog_with_the_package_is_final, "final"),
        scenario!(catalog_deleted_installed_bundle_kept, "catdel"),
        scenario!(crd_unsafe_upgrade_blocked_then_allowed, "crdup"),
    ]);
}

fn ext(ctx: &Ctx) -> String {
    format!("ext-{}", ctx.id)
}

/// update.feature's Background catalog, except that 1.2.0 also skips 1.0.4: upstream's beta
/// channel has two heads (1.0.4 and 1.2.0), which upstream's catalogd serves as is but `olm`'s
/// catalog server refuses to store ("multiple channel heads found in graph") — see
/// [`upstream_two_head_channel_is_served`].
fn update_catalog() -> Vec<Package> {
    vec![
        package("test")
            .bundle("1.0.0", Contents::standard())
            .bundle("1.0.1", Contents::standard())
            .bundle(
                "1.0.2",
                Contents {
                    bad_image: true,
                    ..Contents::standard()
                },
            )
            .bundle("1.0.4", Contents::standard())
            .bundle("1.2.0", Contents::standard())
            .channel(
                "alpha",
                vec![entry("1.0.0"), entry("1.0.2").replaces("1.0.0")],
            )
            .channel(
                "beta",
                vec![
                    entry("1.0.0"),
                    entry("1.0.1").replaces("1.0.0"),
                    entry("1.0.4"),
                    entry("1.2.0").replaces("1.0.1").skips("1.0.4"),
                ],
            ),
    ]
}

/// update.feature's Background catalog exactly as upstream writes it (beta has two heads).
/// Upstream's catalogd stores FBC without validating the graph (storage/localdir.go), so
/// extensions resolve against it.
async fn upstream_two_head_channel_is_served(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let mut p = update_catalog();
    if let Some(beta) = p[0].channels.iter_mut().find(|c| c.0 == "beta") {
        beta.1[3] = entry("1.2.0").replaces("1.0.1");
    }
    let cname = ctx.catalog("test", &p).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    let _ = cname;
    Ok(())
}

fn with_version(ctx: &Ctx, version: &str) -> serde_json::Value {
    let mut spec = ctx.ext_spec("test");
    spec["source"]["catalog"]["version"] = json!(version);
    spec
}

async fn install_at(ctx: &Ctx, name: &str, version: &str) -> Result<()> {
    ctx.apply_ext(name, &with_version(ctx, version)).await?;
    ctx.wait_installed(name, "test", version).await?;
    ctx.wait_cond(name, "Progressing", "True", "Succeeded", Msg::Any)
        .await?;
    Ok(())
}

/// update.feature "Update to a successor version".
async fn update_to_a_successor_version(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    ctx.catalog("test", &update_catalog()).await?;
    let name = ext(&ctx);
    install_at(&ctx, &name, "1.0.0").await?;
    ctx.apply_ext(&name, &with_version(&ctx, "1.0.1")).await?;
    ctx.wait_installed(&name, "test", "1.0.1").await?;
    ctx.wait_cond(&name, "Progressing", "True", "Succeeded", Msg::Any)
        .await?;
    let cm = wait_exists(
        &ctx.dynamic("v1", "ConfigMap", "configmaps", Some(&ctx.ns)),
        &ctx.names().configmap(),
    )
    .await?;
    ensure!(
        cm.data["data"]["version"] == "1.0.1",
        "ConfigMap still {:?}",
        cm.data["data"]
    );
    Ok(())
}

/// update.feature "Cannot update extension to non successor version".
async fn no_upgrade_without_an_edge(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    ctx.catalog("test", &update_catalog()).await?;
    let name = ext(&ctx);
    install_at(&ctx, &name, "1.0.0").await?;
    ctx.apply_ext(&name, &with_version(&ctx, "1.2.0")).await?;
    let msg = format!(
        "error upgrading from currently installed version \"1.0.0\": no bundles found for package \"{}\" matching version \"1.2.0\"",
        ctx.pkg("test")
    );
    let ce = ctx
        .wait_cond(&name, "Progressing", "True", "Retrying", Msg::Exact(&msg))
        .await?;
    let installed = cond(&ce, "Installed").context("no Installed")?;
    ensure!(installed.status == "True", "Installed lost: {installed:?}");
    ctx.stays_installed(&name, "test", "1.0.0", Duration::from_secs(3))
        .await
}

/// update.feature "Force update to non successor version", then back down.
async fn self_certified_downgrade_and_non_successor(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    ctx.catalog("test", &update_catalog()).await?;
    let name = ext(&ctx);
    install_at(&ctx, &name, "1.0.0").await?;
    let mut spec = with_version(&ctx, "1.2.0");
    spec["source"]["catalog"]["upgradeConstraintPolicy"] = json!("SelfCertified");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    let mut spec = with_version(&ctx, "1.0.1");
    spec["source"]["catalog"]["upgradeConstraintPolicy"] = json!("SelfCertified");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "1.0.1").await?;
    ctx.wait_cond(&name, "Progressing", "True", "Succeeded", Msg::Any)
        .await?;
    Ok(())
}

/// The v2 catalog of update.feature's "Auto update" scenarios: 1.3.0 replaces 1.2.0.
fn with_successor() -> Vec<Package> {
    let mut p = update_catalog();
    p[0] = p[0].clone().bundle("1.3.0", Contents::standard());
    if let Some(beta) = p[0].channels.iter_mut().find(|c| c.0 == "beta") {
        beta.1.push(entry("1.3.0").replaces("1.2.0"));
    }
    p
}

/// update.feature "Auto update when new version becomes available in the new catalog image ref".
async fn upgrade_when_catalog_ref_points_at_a_new_image(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let cname = ctx.catalog("test", &update_catalog()).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    let v2 = ctx.build_catalog("test", "v2", &with_successor()).await?;
    ctx.apply_catalog("test", &v2.image, &CatalogOpts::default())
        .await?;
    ctx.wait_catalog_resolved(&cname, &v2.image).await?;
    ctx.wait_installed(&name, "test", "1.3.0").await?;
    Ok(())
}

/// update.feature "Auto update when new version becomes available in the same catalog image
/// ref": the tag is pushed again and the catalog polls it (pollIntervalMinutes: 1).
async fn upgrade_when_catalog_tag_is_repushed_and_polled(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let v1 = ctx
        .build_catalog("test", "latest", &update_catalog())
        .await?;
    let opts = CatalogOpts {
        poll_minutes: Some(1),
        ..CatalogOpts::default()
    };
    let cname = ctx.apply_catalog("test", &v1.image, &opts).await?;
    ctx.wait_serving(&cname).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    let v2 = ctx
        .build_catalog("test", "latest", &with_successor())
        .await?;
    ensure!(v1.image == v2.image, "same tag");
    // One poll interval plus jitter, then resolution.
    let started = std::time::Instant::now();
    ctx.wait_cond_for(
        &name,
        "Installed",
        "True",
        "",
        Msg::Any,
        Duration::from_secs(5),
    )
    .await?;
    e2e::eventually(Duration::from_secs(150), || async {
        let ce = ctx.get_ext(&name).await?;
        let v = ce.status.and_then(|s| s.install).map(|i| i.bundle.version);
        Ok((v.as_deref() == Some("1.3.0")).then_some(()))
    })
    .await
    .context("1.3.0 never installed after the tag moved")?;
    ctx.note(format!(
        "upgrade seen {:.0?} after re-push",
        started.elapsed()
    ));
    Ok(())
}

/// Switching channels re-targets the upgrade graph: from 1.0.0 in alpha (whose only successor
/// 1.0.2 is excluded by the version range) to beta, which upgrades along 1.0.0 → 1.0.1 → 1.2.0.
async fn channel_switch_follows_the_new_channel(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    ctx.catalog("test", &update_catalog()).await?;
    let name = ext(&ctx);
    let mut spec = ctx.ext_spec("test");
    spec["source"]["catalog"]["channels"] = json!(["alpha"]);
    spec["source"]["catalog"]["version"] = json!("<1.0.2");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "1.0.0").await?;
    spec["source"]["catalog"]["channels"] = json!(["beta"]);
    spec["source"]["catalog"]
        .as_object_mut()
        .unwrap()
        .remove("version");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    Ok(())
}

/// Legacy successors (resolve/catalog.go, filter/successors.go): `skips` and `skipRange` are
/// edges as much as `replaces`.
async fn skips_and_skip_range_are_edges(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let v1 = [package("test")
        .bundle("1.0.0", Contents::crd_only())
        .bundle("1.1.0", Contents::crd_only())
        .channel(
            "stable",
            vec![entry("1.0.0"), entry("1.1.0").skips("1.0.0")],
        )];
    let cname = ctx.catalog("test", &v1).await?;
    let name = ext(&ctx);
    let mut spec = ctx.ext_spec("test");
    spec["source"]["catalog"]["version"] = json!("1.0.0");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "1.0.0").await?;
    spec["source"]["catalog"]["version"] = json!("1.1.0");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "1.1.0").await?;
    let v2 = [v1[0]
        .clone()
        .bundle("2.0.0", Contents::crd_only())
        .channel("next", vec![entry("2.0.0").skip_range(">=1.0.0 <2.0.0")])];
    let built = ctx.build_catalog("test", "v2", &v2).await?;
    ctx.apply_catalog("test", &built.image, &CatalogOpts::default())
        .await?;
    ctx.wait_catalog_resolved(&cname, &built.image).await?;
    spec["source"]["catalog"]
        .as_object_mut()
        .unwrap()
        .remove("version");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "2.0.0").await?;
    Ok(())
}

/// Deprecation conditions (clusterextension_controller.go SetDeprecationStatus): True with the
/// catalog's messages, the rollup joining them with "\n" in package, channel, bundle order;
/// False with upstream's texts once the catalog no longer deprecates anything.
async fn deprecation_conditions_appear_and_clear(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let base = package("test")
        .bundle("1.0.0", Contents::standard())
        .bundle("1.0.1", Contents::standard())
        .channel(
            "beta",
            vec![entry("1.0.0"), entry("1.0.1").replaces("1.0.0")],
        );
    let deprecated = base
        .clone()
        .deprecate_package("package test is end of life")
        .deprecate_channel("beta", "channel beta is no longer updated")
        .deprecate_bundle("1.0.0", "bundle 1.0.0 has a known bug");
    let cname = ctx.catalog("test", &[deprecated]).await?;
    let name = ext(&ctx);
    let mut spec = ctx.ext_spec("test");
    spec["source"]["catalog"]["channels"] = json!(["beta"]);
    spec["source"]["catalog"]["version"] = json!("1.0.0");
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "1.0.0").await?;
    for (t, m) in [
        ("PackageDeprecated", "package test is end of life"),
        ("ChannelDeprecated", "channel beta is no longer updated"),
        ("BundleDeprecated", "bundle 1.0.0 has a known bug"),
        (
            "Deprecated",
            "package test is end of life\nchannel beta is no longer updated\nbundle 1.0.0 has a known bug",
        ),
    ] {
        ctx.wait_cond(&name, t, "True", "Deprecated", Msg::Exact(m))
            .await?;
    }
    let clean = ctx.build_catalog("test", "v2", &[base]).await?;
    ctx.apply_catalog("test", &clean.image, &CatalogOpts::default())
        .await?;
    ctx.wait_catalog_resolved(&cname, &clean.image).await?;
    for (t, m) in [
        ("PackageDeprecated", "package not deprecated"),
        ("ChannelDeprecated", "channel not deprecated"),
        ("BundleDeprecated", "bundle not deprecated"),
        ("Deprecated", "not deprecated"),
    ] {
        ctx.wait_cond(&name, t, "False", "NotDeprecated", Msg::Exact(m))
            .await?;
    }
    Ok(())
}

/// install.feature "Report that bundle cannot be installed when it exists in multiple catalogs
/// with same priority"; then a higher priority decides (resolve/catalog.go step 7).
async fn ambiguity_across_equal_priority_and_priority_deciding(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let pkgs = [package("test")
        .bundle("1.2.0", Contents::standard())
        .channel("beta", vec![entry("1.2.0")])];
    let a = ctx.catalog("test", &pkgs).await?;
    let b = ctx.catalog("extra", &pkgs).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    let mut both = [a.clone(), b.clone()];
    both.sort();
    // Upstream's words (resolve/catalog.go, install.feature), then how to settle it.
    let upstream = format!(
        "found bundles for package \"{}\" in multiple catalogs with the same priority [{} {}]. ",
        ctx.pkg("test"),
        both[0],
        both[1]
    );
    ctx.wait_cond(
        &name,
        "Progressing",
        "True",
        "Retrying",
        Msg::Contains(&upstream),
    )
    .await?;
    let built = ctx.build_catalog("extra", "v1", &pkgs).await?;
    ctx.apply_catalog(
        "extra",
        &built.image,
        &CatalogOpts {
            priority: Some(1),
            ..CatalogOpts::default()
        },
    )
    .await?;
    let ce = ctx.wait_installed(&name, "test", "1.2.0").await?;
    let installed = cond(&ce, "Installed").unwrap();
    ensure!(
        installed
            .message
            .contains(&format!("/bundles/extra/{}:v1.2.0", ctx.pkg("test"))),
        "installed from the wrong catalog: {:?}",
        installed.message
    );
    Ok(())
}

/// The catalog selection document: "If exactly one catalog [of the highest priority group]
/// contains the package, select that catalog … If none qualifies, resolution fails rather than
/// switching to a lower-priority catalog", and ambiguity holds "even if only one has a bundle
/// matching the requested criteria".
async fn highest_priority_catalog_with_the_package_is_final(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let v1 = [package("test")
        .bundle("1.0.0", Contents::crd_only())
        .channel("beta", vec![entry("1.0.0")])];
    let v2 = [package("test")
        .bundle("2.0.0", Contents::crd_only())
        .channel("beta", vec![entry("2.0.0")])];
    let high = ctx.build_catalog("high", "v1", &v1).await?;
    let ten = CatalogOpts {
        priority: Some(10),
        ..CatalogOpts::default()
    };
    let high_name = ctx.apply_catalog("high", &high.image, &ten).await?;
    ctx.wait_serving(&high_name).await?;
    ctx.catalog("low", &v2).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &with_version(&ctx, "2.0.0")).await?;
    let ce = ctx
        .wait_cond(&name, "Progressing", "True", "Retrying", Msg::Any)
        .await?;
    let m = cond(&ce, "Progressing").unwrap().message.clone();
    ensure!(
        m.contains(&ctx.pkg("test")) && m.contains("2.0.0"),
        "resolution error does not name the package and version: {m:?}"
    );
    ctx.note(format!("no fallback to the lower priority: {m:?}"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        ctx.get_ext(&name)
            .await?
            .status
            .and_then(|s| s.install)
            .is_none(),
        "installed from the lower-priority catalog"
    );
    // Same priority: ambiguous although only one catalog has 2.0.0.
    ctx.apply_catalog("high", &high.image, &CatalogOpts::default())
        .await?;
    ctx.wait_cond(
        &name,
        "Progressing",
        "True",
        "Retrying",
        Msg::Contains("in multiple catalogs with the same priority"),
    )
    .await?;
    Ok(())
}

/// recover.feature "Auto-healing continues working after catalog deletion" and "Spec changes
/// are allowed when catalog is unavailable".
async fn catalog_deleted_installed_bundle_kept(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let pkgs = [package("test")
        .bundle("1.2.0", Contents::standard())
        .channel("beta", vec![entry("1.2.0")])];
    let cname = ctx.catalog("test", &pkgs).await?;
    let name = ext(&ctx);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    ctx.delete_catalog(&cname).await?;
    let cms = ctx.dynamic("v1", "ConfigMap", "configmaps", Some(&ctx.ns));
    let cm = ctx.names().configmap();
    wait_exists(&cms, &cm).await?;
    cms.delete(&cm, &DeleteParams::default()).await?;
    wait_exists(&cms, &cm)
        .await
        .context("ConfigMap not restored with the catalog gone")?;
    let mut spec = ctx.ext_spec("test");
    spec["install"] = json!({"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}});
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_cond(&name, "Progressing", "True", "Succeeded", Msg::Any)
        .await?;
    let ce = ctx
        .wait_cond(&name, "Installed", "True", "Succeeded", Msg::Any)
        .await?;
    ensure!(
        ce.status
            .and_then(|s| s.install)
            .map(|i| i.bundle.version)
            .as_deref()
            == Some("1.2.0"),
        "installed bundle changed"
    );
    Ok(())
}

/// CRD upgrade safety (crdupgradesafety.go): 1.1.0 adds a required field to the installed CRD,
/// so the upgrade is refused with a `validating upgrade for CRD` message until the extension
/// says `enforcement: None`.
async fn crd_unsafe_upgrade_blocked_then_allowed(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let unsafe_crd = Crd {
        fields: vec!["newRequired"],
        required: vec!["newRequired"],
        ..Crd::default()
    };
    ctx.catalog(
        "test",
        &[package("test")
            .bundle("1.0.0", Contents::crd_only())
            .bundle(
                "1.1.0",
                Contents {
                    crd: Some(unsafe_crd),
                    ..Contents::default()
                },
            )
            .channel(
                "beta",
                vec![entry("1.0.0"), entry("1.1.0").replaces("1.0.0")],
            )],
    )
    .await?;
    let name = ext(&ctx);
    install_at(&ctx, &name, "1.0.0").await?;
    let mut spec = with_version(&ctx, "1.1.0");
    ctx.apply_ext(&name, &spec).await?;
    let prefix = format!("validating upgrade for CRD \"{}\"", ctx.names().crd_name());
    let ce = ctx
        .wait_cond(
            &name,
            "Progressing",
            "True",
            "Retrying",
            Msg::Contains(&prefix),
        )
        .await?;
    let p = cond(&ce, "Progressing").unwrap();
    ensure!(
        p.message.contains("newRequired"),
        "message does not name the field: {:?}",
        p.message
    );
    ctx.note(format!("blocked: {:?}", p.message));
    ctx.stays_installed(&name, "test", "1.0.0", Duration::from_secs(2))
        .await?;
    spec["install"] = json!({"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}});
    ctx.apply_ext(&name, &spec).await?;
    ctx.wait_installed(&name, "test", "1.1.0").await?;
    let crds = ctx.dynamic(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        None,
    );
    let crd = crds.get(&ctx.names().crd_name()).await?;
    ensure!(
        crd.data["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"]
            == json!(["newRequired"]),
        "CRD not upgraded"
    );
    Ok(())
}
