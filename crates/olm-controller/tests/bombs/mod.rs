//! Decompression bombs on the real control plane: a catalog image whose one gzip layer of about
//! 3 MB holds a 3 GiB `configs/catalog.json` of spaces, and a bundle image with a 2 GiB
//! whitespace `manifests/zz.yaml`, both built here and pushed to the test registry. Each must be
//! refused with a condition naming the limit and the flag that raises it, leave nothing in
//! `olm`'s cache, cost the process (this one: `olm` runs in it) under 100 MB above idle, and not
//! be downloaded again while its digest stays the same.
//!
//! The scenarios run alone (`exclusive`): the peak resident set of the process is theirs.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, ensure};

use crate::e2e::{CatalogOpts, Contents, Ctx, Msg, WAIT, cond, entry, eventually, package};

/// What the attempt may cost the process above what it held before.
const MEMORY_BUDGET: u64 = 100 << 20;
/// How long the refusal is watched for downloads: several retries of either controller (the
/// catalog server retries after 1 s here, doubling; the extension controller likewise).
const QUIET: Duration = Duration::from_secs(8);

/// The catalog bomb of the report that found it: 3 GiB of spaces as `configs/catalog.json`, in
/// a gzip layer of about 3 MB, served by a ClusterCatalog that follows a tag. Refused at the
/// file's header, before a byte of it is written; polled again without a download until the
/// tag moves to a good catalog, which is then served.
pub async fn a_catalog_bomb_is_refused_without_a_trace(ctx: Arc<Ctx>) -> Result<()> {
    let size = 3u64 << 30;
    let layer = spaces("configs/catalog.json", size)?;
    let compressed = layer.data().len();
    let layer_digest = layer.digest().to_string();
    let labels = BTreeMap::from([(
        olm_image::CATALOG_CONFIGS_LABEL.to_string(),
        olm_image::CATALOG_CONFIGS_DIR.to_string(),
    )]);
    let image = olm_image::assemble::image_from_layers(labels, vec![layer]);
    // Where `build_catalog("bomb", "v1", …)` pushes, so that a good catalog can replace it.
    let repo = format!("e2e/bomb-{}", ctx.id);
    let tagged = ctx.env.push(&image, &format!("{repo}:v1")).await?;
    ctx.note(format!(
        "catalog bomb: {compressed} bytes compressed, {size} uncompressed"
    ));
    let downloads = || {
        ctx.env
            .registry
            .answered("GET", &format!("/v2/{repo}/blobs/{layer_digest}"))
    };
    let resolves = || {
        ctx.env
            .registry
            .answered("HEAD", &format!("/v2/{repo}/manifests/"))
            + ctx
                .env
                .registry
                .answered("GET", &format!("/v2/{repo}/manifests/"))
    };

    let watch = Watch::start(ctx.env.cache_dir())?;
    let cname = ctx
        .apply_catalog("bomb", &tagged, &CatalogOpts::default())
        .await?;
    let progressing = wait_catalog_progressing(&ctx, &cname, "--catalog-max-file-size").await?;
    let cost = watch.finish()?;
    ctx.note(format!("Progressing: {progressing}"));
    cost.within_budget(&ctx, compressed)?;
    let pinned = format!("{}/{repo}@{}", ctx.env.reg, image.digest());
    ensure!(
        progressing
            == format!(
                "True/Retrying source catalog content: {pinned} is over the catalog image per-file size limit: \"configs/catalog.json\" holds {size} bytes, more than the 256Mi one file may hold (raise it with --catalog-max-file-size)"
            ),
        "unexpected condition {progressing}"
    );
    nothing_left(ctx.env.cache_dir(), &cname)?;

    let before = resolves();
    tokio::time::sleep(QUIET).await;
    ensure!(
        downloads() == 1,
        "the bomb's layer was downloaded {} times",
        downloads()
    );
    ensure!(
        resolves() > before,
        "the tag was not polled again while refused"
    );
    ctx.note(format!(
        "{} more manifest requests in {QUIET:?}, 1 layer download in all",
        resolves() - before
    ));

    // The tag moves to a good catalog: a new digest, pulled and served. A label change makes
    // the controller look now rather than at its next retry.
    ctx.build_catalog(
        "bomb",
        "v1",
        &[package("after")
            .bundle("1.0.0", Contents::crd_only())
            .channel("stable", vec![entry("1.0.0")])],
    )
    .await?;
    let nudge = CatalogOpts {
        labels: BTreeMap::from([("e2e.olm.test/moved".to_string(), "true".to_string())]),
        ..CatalogOpts::default()
    };
    ctx.apply_catalog("bomb", &tagged, &nudge).await?;
    ctx.wait_serving(&cname).await?;
    ensure!(downloads() == 1, "the bomb was downloaded again");
    Ok(())
}

/// The bundle bomb of the report: a bundle whose second layer holds a 2 GiB whitespace
/// `manifests/zz.yaml`. The extension is not installed, says why in Progressing, and the
/// extension cache keeps nothing; retries do not download it again.
pub async fn a_bundle_bomb_is_refused_without_a_trace(ctx: Arc<Ctx>) -> Result<()> {
    let size = 2u64 << 30;
    ctx.namespace().await?;
    let dir = ctx.env.fixture_dir("bundle-bomb-")?;
    let pkg = ctx.pkg("bomb");
    crate::e2e::fixtures::write_bundle(&dir, &pkg, "1.0.0", &Contents::standard(), &ctx.id)?;
    let base = olm_image::bundle_image(&dir)?;
    let layer = spaces("manifests/zz.yaml", size)?;
    let compressed = layer.data().len();
    let layer_digest = layer.digest().to_string();
    let mut layers = base.layers().to_vec();
    layers.push(layer);
    let image = olm_image::assemble::image_from_layers(base.labels().clone(), layers);
    let repo = format!("bundles/bomb-{}", ctx.id);
    ctx.env.push(&image, &format!("{repo}:v1.0.0")).await?;
    let pinned = format!("{}/{repo}@{}", ctx.env.reg, image.digest());
    ctx.note(format!(
        "bundle bomb: {compressed} bytes compressed, {size} uncompressed"
    ));
    ctx.catalog(
        "bomb",
        &[package("bomb")
            .bundle_at("1.0.0", &pinned)
            .channel("stable", vec![entry("1.0.0")])],
    )
    .await?;
    let downloads = || {
        ctx.env
            .registry
            .answered("GET", &format!("/v2/{repo}/blobs/{layer_digest}"))
    };

    let name = format!("ext-{}", ctx.id);
    let watch = Watch::start(ctx.env.cache_dir())?;
    ctx.apply_ext(&name, &ctx.ext_spec("bomb")).await?;
    let ce = ctx
        .wait_cond(
            &name,
            "Progressing",
            "True",
            "Retrying",
            Msg::Contains("--bundle-max-file-size"),
        )
        .await?;
    let cost = watch.finish()?;
    let progressing = cond(&ce, "Progressing")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ctx.note(format!("Progressing: {progressing}"));
    cost.within_budget(&ctx, compressed)?;
    let refusal = format!(
        "{pinned} is over the bundle image per-file size limit: \"manifests/zz.yaml\" holds {size} bytes, more than the 32Mi one file may hold (raise it with --bundle-max-file-size)"
    );
    ensure!(
        progressing.contains(&refusal),
        "unexpected message {progressing:?}, want it to hold {refusal:?}"
    );
    ensure!(
        cond(&ce, "Installed").map(|c| c.status.as_str()) != Some("True"),
        "installed a bomb"
    );
    nothing_left(&ctx.env.cache_dir().join("extensions"), &name)?;

    let errors = reconcile_errors(&ctx, "clusterextension").await?;
    tokio::time::sleep(QUIET).await;
    let retried = reconcile_errors(&ctx, "clusterextension").await? - errors;
    ensure!(retried > 0, "the extension was not retried");
    ensure!(
        downloads() == 1,
        "the bomb's layer was downloaded {} times",
        downloads()
    );
    ctx.note(format!(
        "{retried} retries in {QUIET:?}, 1 layer download in all"
    ));
    Ok(())
}

/// A layer of one file of `size` spaces, made as it is read.
fn spaces(path: &str, size: u64) -> Result<olm_image::Layer> {
    Ok(olm_image::layer_from_stream(
        path,
        size,
        std::io::repeat(b' ').take(size),
    )?)
}

/// Waits until the catalog's Progressing condition names `flag`; returns it as
/// `status/reason message`.
async fn wait_catalog_progressing(ctx: &Ctx, cname: &str, flag: &str) -> Result<String> {
    let api: kube::Api<olm_api::ClusterCatalog> = kube::Api::all(ctx.client.clone());
    eventually(WAIT, || async {
        let c = api.get(cname).await?;
        let found = c
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Progressing"))
            .filter(|c| c.message.contains(flag))
            .map(|c| format!("{}/{} {}", c.status, c.reason, c.message));
        Ok(found)
    })
    .await
    .with_context(|| format!("ClusterCatalog {cname} never named {flag}"))
}

/// `controller_runtime_reconcile_errors_total` of `controller`, from the running `olm`.
async fn reconcile_errors(ctx: &Ctx, controller: &str) -> Result<u64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = ctx.env.olm_addr().context("olm serves no /metrics")?;
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: olm\r\nConnection: close\r\n\r\n")
        .await?;
    let mut body = String::new();
    stream.read_to_string(&mut body).await?;
    let series =
        format!("controller_runtime_reconcile_errors_total{{controller=\"{controller}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&series))
        .ok_or_else(|| anyhow!("no {series} in /metrics"))?
        .trim()
        .parse()
        .context("reconcile errors")
}

/// What an attempt cost: the process's peak resident set above what it held when the watch
/// started, and the cache's peak growth.
struct Cost {
    memory: u64,
    disk: u64,
}

impl Cost {
    /// Notes the cost, and checks it: memory under [`MEMORY_BUDGET`]; disk no more than the
    /// compressed layer downloaded (it is unpacked from a file), with a margin for the image's
    /// other blobs.
    fn within_budget(&self, ctx: &Ctx, compressed: usize) -> Result<()> {
        ctx.note(format!(
            "peak memory above idle {} KiB, peak cache growth {} KiB",
            self.memory >> 10,
            self.disk >> 10
        ));
        ensure!(
            self.memory < MEMORY_BUDGET,
            "the attempt cost {} MiB above idle",
            self.memory >> 20
        );
        ensure!(
            self.disk < compressed as u64 + (1 << 20),
            "the cache grew by {} bytes during the attempt",
            self.disk
        );
        Ok(())
    }
}

/// Watches the process's peak resident set (reset at the start through `clear_refs`, so the
/// kernel's own high-water mark covers exactly the attempt) and samples the cache's size.
struct Watch {
    idle: u64,
    start_disk: u64,
    stop: Arc<AtomicBool>,
    sampler: std::thread::JoinHandle<u64>,
}

impl Watch {
    fn start(cache: &Path) -> Result<Watch> {
        std::fs::write("/proc/self/clear_refs", "5").context("resetting the peak resident set")?;
        let idle = status_bytes("VmRSS")?;
        let start_disk = tree_bytes(cache);
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = std::thread::spawn({
            let (stop, cache) = (stop.clone(), cache.to_path_buf());
            move || {
                let mut peak = 0;
                while !stop.load(Ordering::Relaxed) {
                    peak = peak.max(tree_bytes(&cache));
                    std::thread::sleep(Duration::from_millis(10));
                }
                peak
            }
        });
        Ok(Watch {
            idle,
            start_disk,
            stop,
            sampler,
        })
    }

    fn finish(self) -> Result<Cost> {
        let peak = status_bytes("VmHWM")?;
        self.stop.store(true, Ordering::Relaxed);
        let disk = self
            .sampler
            .join()
            .map_err(|_| anyhow!("the disk sampler panicked"))?;
        Ok(Cost {
            memory: peak.saturating_sub(self.idle),
            disk: disk.saturating_sub(self.start_disk),
        })
    }
}

/// A `kB` field of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
        .map(|kb| kb << 10)
        .ok_or_else(|| anyhow!("no {field} in /proc/self/status"))
}

/// The bytes of the regular files under `root` (files that vanish while counted count nothing).
fn tree_bytes(root: &Path) -> u64 {
    let mut total = 0;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(entry.path()),
                Ok(t) if t.is_file() => total += entry.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}

/// No staging directory, pull directory or file of the refused image under `root`: no entry
/// named for `owner` holds a file, and no `.staging-`/`.olm-pull-` directory is left.
fn nothing_left(root: &Path, owner: &str) -> Result<()> {
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            ensure!(
                !name.starts_with(".staging-") && !name.starts_with(".olm-pull-"),
                "left behind: {}",
                path.display()
            );
            if name.starts_with(owner) {
                ensure!(
                    tree_bytes(&path) == 0,
                    "left behind: {} holds {} bytes",
                    path.display(),
                    tree_bytes(&path)
                );
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(path);
            }
        }
    }
    Ok(())
}
