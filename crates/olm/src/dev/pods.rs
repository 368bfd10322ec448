//! `olm dev` with OLM running as pods on the real node, from its own image and the manifests
//! users apply: this binary is pushed as the olm image to the dev registry (`olm image
//! push-olm`), then installed as `olm install-olm --olm both` would (two replicas electing a
//! leader; the catalog Service, the label webhook and the PackageManifest APIService served by
//! the pods).
//!
//! Pods cannot reach the dev registry on the host's loopback address, which is where users push
//! catalogs and bundles (`127.0.0.1:PORT/…`). So the supervisor forwards a port of the
//! machine's own address to the registry, and OLM's pods get a registries.conf that rewrites
//! `127.0.0.1:PORT` to it (plain HTTP): the same image references work from the host and from
//! the pods. (Image pulls by the node itself go through containerd on the host and need none
//! of this.)

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Service;

use crate::install_olm::{self, Olms};

/// The repository the olm image is pushed to in the dev registry.
const REPOSITORY: &str = "olm/olm:dev";

/// OLM installed as pods, and what the supervisor keeps running for it.
pub(super) struct InCluster {
    /// The image the pods run, by digest.
    pub(super) image: String,
    /// Where the catalog Service is, as the cluster names it and as this machine reaches it.
    pub(super) catalogd: String,
    /// Where the pods reach the dev registry (the forwarded port).
    pub(super) registry_for_pods: SocketAddr,
    forward: tokio::task::JoinHandle<()>,
}

impl InCluster {
    /// Stops forwarding; the pods go with the node.
    pub(super) fn stop(self) {
        self.forward.abort();
    }
}

/// Pushes this binary as the olm image, installs it with both OLMs, and waits until it is ready
/// (as `install-olm` does: the Deployment available, the webhook's CA, the PackageManifest API).
pub(super) async fn start(
    client: &kube::Client,
    registry: SocketAddr,
    node_address: Ipv4Addr,
    aliases: &[String],
    layout: install_olm::Layout,
    timeout: Duration,
) -> anyhow::Result<InCluster> {
    let listener = tokio::net::TcpListener::bind((node_address, 0))
        .await
        .with_context(|| format!("listening on {node_address} to forward to the registry"))?;
    let registry_for_pods = listener.local_addr()?;
    let forward = tokio::spawn(forward(listener, registry));
    let image = push_olm(registry).await?;
    let mut docs = install_olm::manifests(&image, Olms::Both, layout)?;
    let names: Vec<String> = std::iter::once(registry.to_string())
        .chain(aliases.iter().cloned())
        .collect();
    install_olm::add_registries_conf(&mut docs, &registry_rules(&names, registry_for_pods))?;
    println!("olm dev: installing OLM as pods from {image}");
    let took = install_olm::apply_and_wait(client, &docs, Olms::Both, timeout).await?;
    println!("olm dev: OLM ready as pods in {:.1} s", took.as_secs_f64());
    let namespace = docs
        .iter()
        .find(|d| d["kind"] == "Namespace")
        .and_then(|d| d["metadata"]["name"].as_str())
        .unwrap_or("olmv1-system")
        .to_owned();
    let services: kube::Api<Service> = kube::Api::namespaced(client.clone(), &namespace);
    let ip = services
        .get("catalogd-service")
        .await?
        .spec
        .and_then(|s| s.cluster_ip)
        .unwrap_or_default();
    Ok(InCluster {
        image,
        catalogd: format!(
            "https://catalogd-service.{namespace}.svc (cluster IP {ip}, reachable from this machine)"
        ),
        registry_for_pods,
        forward,
    })
}

/// registries.conf rules sending images named `NAME/…`, for each of `names`, to the dev
/// registry at `location`, over plain HTTP. OLM's pods get one for the registry's own loopback
/// name (which they reach at the forwarded address) and one per `--registry-alias`.
pub(super) fn registry_rules(names: &[String], location: SocketAddr) -> String {
    let mut text =
        format!("# Written by olm dev: names of the dev registry, reached at {location}.\n");
    for name in names {
        text.push_str(&format!(
            "[[registry]]\nprefix = \"{name}\"\nlocation = \"{location}\"\ninsecure = true\n"
        ));
    }
    text
}

/// `olm image push-olm REGISTRY/olm/olm:dev` with this very binary, as a user would run it;
/// returns the reference pinned by digest that it prints.
async fn push_olm(registry: SocketAddr) -> anyhow::Result<String> {
    // This very binary even when a build has replaced the file since it started.
    let exe = std::path::PathBuf::from("/proc/self/exe");
    let target = format!("{registry}/{REPOSITORY}");
    let args = ["image".to_owned(), "push-olm".to_owned(), target.clone()];
    let out =
        tokio::task::spawn_blocking(move || std::process::Command::new(exe).args(args).output())
            .await
            .context("running olm image push-olm")?
            .context("running olm image push-olm")?;
    if !out.status.success() {
        bail!(
            "olm image push-olm {target} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !printed.contains("@sha256:") {
        bail!("olm image push-olm {target} printed no digest: {printed:?}");
    }
    Ok(printed)
}

/// Copies every connection accepted on `listener` to and from `to`, until aborted.
async fn forward(listener: tokio::net::TcpListener, to: SocketAddr) {
    loop {
        let (mut inbound, from) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "olm dev: accepting a connection to forward to the registry failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        tokio::spawn(async move {
            match tokio::net::TcpStream::connect(to).await {
                Ok(mut outbound) => {
                    if let Err(e) = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await
                    {
                        tracing::debug!(%from, error = %e, "olm dev: a forwarded registry connection ended");
                    }
                }
                Err(e) => {
                    tracing::warn!(%from, registry = %to, error = %e, "olm dev: reaching the registry failed");
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registries_conf_sends_the_loopback_name_to_the_forwarded_port() {
        let text = registry_rules(
            &[
                "127.0.0.1:5000".to_owned(),
                "mirror.example:5000".to_owned(),
            ],
            "192.0.2.7:41000".parse().expect("addr"),
        );
        let registries = olm_image::Registries::parse(&text, std::path::Path::new("x"))
            .expect("valid registries.conf");
        let reference: olm_image::ImageRef = "127.0.0.1:5000/examples/catalog:latest"
            .parse()
            .expect("ref");
        assert_eq!(
            registries.route(&reference),
            olm_image::mirrors::Route::Try(vec![
                "192.0.2.7:41000/examples/catalog:latest"
                    .parse()
                    .expect("ref")
            ])
        );
        assert!(registries.insecure_hosts().contains("192.0.2.7:41000"));
        let alias: olm_image::ImageRef = "mirror.example:5000/e2e/bundle:v1".parse().expect("ref");
        assert_eq!(
            registries.route(&alias),
            olm_image::mirrors::Route::Try(vec![
                "192.0.2.7:41000/e2e/bundle:v1".parse().expect("ref")
            ])
        );
    }
}
