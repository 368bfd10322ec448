//! `olm run`: everything a cluster needs for OLM v1 in one process — the catalog server and its
//! ClusterCatalog controller, the ClusterExtension and ClusterObjectSet controllers — with
//! health probes and one `/metrics` (see `olm_controller::run`).
//!
//! Flags follow upstream's catalogd and operator-controller where they exist
//! (`--system-namespace`, `--cache-path`, `--health-probe-bind-address`,
//! `--metrics-bind-address`, `--catalogs-server-addr`, `--external-address`,
//! `--tls-cert`/`--tls-key`, `--pull-cas-dir`, `--gc-interval`, `--webhook-server-port`,
//! `--pprof-bind-address`, `--tls-profile` and the `--tls-custom-*` flags), and OLM v0's
//! `--client-ca` for who may take profiles.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use olm_controller::run::{CertProviderChoice, Component, FeatureGates, Which};

use crate::catalogd::{
    TlsProfileArgs, image_options, kube_config, listen_addr, parse_duration, run_server,
    stop_signal, tls_flags,
};

/// Run OLM v1 on a cluster.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm run --kubeconfig ~/.kube/config --olm v1 --cache-path /tmp/olm --catalogs-server-addr 127.0.0.1:8443 --external-address 127.0.0.1:8443
  olm run --olm=v1 --leader-elect --tls-secret=olm-serving-cert --metrics-bind-address=:7443  as install-olm's Deployment runs it
  olm run --olm both --kubeconfig ~/.kube/config --packageserver-advertise-address 192.0.2.10  OLM v0's PackageManifest API too")]
pub struct Args {
    /// Kubeconfig to use instead of the in-cluster or default configuration.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Namespace of OLM's own objects (ClusterObjectSet Secrets); created if missing.
    #[arg(long, default_value = olm_controller::run::DEFAULT_SYSTEM_NAMESPACE)]
    system_namespace: String,
    /// Root of the on-disk caches: catalogs under catalogd/, bundle unpacks under extensions/.
    #[arg(long, default_value = "/var/cache/olm")]
    cache_path: PathBuf,
    /// Address of /healthz and /readyz; "0" turns them off.
    #[arg(long, default_value = ":8081")]
    health_probe_bind_address: String,
    /// Address of /metrics (the controllers' and the catalog server's); "0" turns it off. The
    /// same address as --health-probe-bind-address serves all three on one port.
    #[arg(long, default_value = ":8080")]
    metrics_bind_address: String,
    /// Serve /metrics over HTTPS (with --tls-cert/--tls-key, else a self-signed certificate)
    /// only to clients whose bearer token the API server authenticates and whose user may get
    /// the /metrics non-resource URL; --metrics-secure=false serves it plain to anyone.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    metrics_secure: bool,
    /// Which OLM to run: v0 (ClusterServiceVersions and OperatorGroups), v1 (ClusterCatalogs and
    /// ClusterExtensions) or both.
    #[arg(long, default_value = "both", value_parser = Which::parse)]
    olm: Which,
    /// Which of OLM v1's parts run: all (olm's one process), catalogd (the catalog server, the
    /// ClusterCatalog controller and label webhook; needs --olm=v1) or operator-controller (the
    /// ClusterExtension and ClusterObjectSet controllers, and OLM v0 when --olm asks for it), to
    /// run as upstream's two Deployments; each elects its leader on upstream's Lease.
    #[arg(long, default_value = "all", value_parser = Component::parse)]
    component: Component,
    /// Upstream's feature gates, Name=bool[,Name=bool] (repeatable): gates olm always has on
    /// accept only true (BoxcutterRuntime, DeploymentConfig, SingleOwnNamespaceInstallSupport,
    /// BundleReleaseSupport), WebhookProviderCertManager=false and
    /// WebhookProviderOpenshiftServiceCA=false turn that certificate provider off,
    /// APIV1MetasHandler serves /api/v1/metas or not.
    #[arg(long = "feature-gates", value_name = "GATES", action = clap::ArgAction::Append)]
    feature_gates: Vec<String>,
    /// Who issues serving certificates for bundles with webhooks: auto (cert-manager when its
    /// API is served, else builtin), builtin, cert-manager, openshift-service-ca or none.
    #[arg(long, default_value = "auto", value_parser = CertProviderChoice::parse)]
    cert_provider: CertProviderChoice,
    /// Address of the catalog HTTP(S) server.
    #[arg(long, default_value = ":8443")]
    catalogs_server_addr: String,
    /// Host[:port] clients use to reach the catalog server; goes into status.urls.base.
    #[arg(long, default_value = "catalogd-service.olmv1-system.svc")]
    external_address: String,
    /// PEM certificate of the catalog server (with --tls-key): serve HTTPS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of the catalog server (with --tls-cert).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve HTTPS (catalog server, webhook, secure metrics) with a certificate olm issues
    /// itself for the --external-address Service and keeps, renewed, in this kubernetes.io/tls
    /// Secret of the system namespace; its CA goes into the ClusterCatalog webhook
    /// configuration. Instead of --tls-cert/--tls-key.
    #[arg(long, conflicts_with = "tls_cert")]
    tls_secret: Option<String>,
    /// Port of the admission webhook that labels ClusterCatalogs with their name; served (over
    /// HTTPS, with --tls-cert/--tls-key or --tls-secret) only when a certificate is given. "0"
    /// turns it off.
    #[arg(long, default_value_t = 9443)]
    webhook_server_port: u16,
    /// How often stored content of deleted catalogs is looked for (Go duration, e.g. 12h, 30m).
    #[arg(long, default_value = "12h", value_parser = parse_duration)]
    gc_interval: Duration,
    /// Serve /browse/cluster on the catalog port: every ClusterExtension with its namespace,
    /// version and condition messages, to anyone who reaches that port (which has no
    /// authentication). Off by default.
    #[arg(long)]
    browse_cluster: bool,
    /// Directory of extra PEM CA certificates trusted for registries.
    #[arg(long)]
    pull_cas_dir: Option<PathBuf>,
    /// Boxed, as `profiling`.
    #[command(flatten)]
    registries: Box<crate::catalogd::RegistriesArgs>,
    /// Directory of extra PEM CA certificates trusted for the catalog server (when it serves
    /// HTTPS with a certificate of its own CA).
    #[arg(long)]
    catalogd_cas_dir: Option<PathBuf>,
    /// `<namespace>/<name>` of a kubernetes.io/dockerconfigjson Secret whose credentials are
    /// used for every bundle pull.
    #[arg(long, value_parser = namespaced_name)]
    global_pull_secret: Option<(String, String)>,
    /// Elect a leader among replicas on the Lease 9c4404e7.operatorframework.io in the system
    /// namespace (catalogd-operator-lock with --component=catalogd): only the leader runs the
    /// controllers and writes status; every replica pulls and serves catalogs.
    #[arg(long)]
    leader_elect: bool,
    /// How long a lease not renewed lasts before another replica takes it (Go duration).
    #[arg(long, default_value = "137s", value_parser = parse_duration)]
    leader_election_lease_duration: Duration,
    /// How long the leader keeps leading without renewing before it stops.
    #[arg(long, default_value = "107s", value_parser = parse_duration)]
    leader_election_renew_deadline: Duration,
    /// How often the leader renews and the others try.
    #[arg(long, default_value = "26s", value_parser = parse_duration)]
    leader_election_retry_period: Duration,
    /// Boxed: the flags of `olm run` stay near the size of the other commands' (`Cli`).
    #[command(flatten)]
    profiling: Box<ProfilingArgs>,
    /// How much a catalog image may hold; boxed, as `profiling`.
    #[command(flatten)]
    catalog_limits: Box<crate::limits::CatalogLimitArgs>,
    /// How much a bundle image may hold; boxed, as `profiling`.
    #[command(flatten)]
    bundle_limits: Box<crate::limits::BundleLimitArgs>,
    /// Boxed, as `profiling`.
    #[command(flatten)]
    packageserver: Box<PackageServerArgs>,
    /// The versions, suites and groups of every HTTPS server; boxed, as `profiling`.
    #[command(flatten)]
    tls_profile: Box<TlsProfileArgs>,
}

/// Where OLM v0's PackageManifest API listens, and how the API server reaches it.
#[derive(clap::Args, Debug)]
struct PackageServerArgs {
    /// Address of the PackageManifest API (OLM v0's packageserver, HTTPS).
    #[arg(long, default_value = ":5443")]
    packageserver_bind_address: String,
    /// Route Service packageserver-service of the system namespace to this address and the
    /// bound port (a Service without selector, and its Endpoints), for an olm the API server
    /// reaches at this address (e.g. olm run outside the cluster). Not a loopback address.
    /// Without it, the PackageManifest API is registered only while someone else's Service of
    /// that name exists.
    #[arg(long)]
    packageserver_advertise_address: Option<std::net::IpAddr>,
    /// The Pod olm runs in, as NAMESPACE/NAME, or `self`: the Pod named by this host's name, in
    /// the namespace of its ServiceAccount token. While this replica serves PackageManifests it
    /// labels the Pod `olm.operatorframework.io/packageserver=serving`, which the Service
    /// packageserver-service installed with olm selects.
    #[arg(long, value_parser = pod_arg)]
    packageserver_pod: Option<PodArg>,
}

/// `--packageserver-pod`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PodArg {
    /// `NAMESPACE/NAME`.
    Named(String, String),
    /// `self`.
    Own,
}

fn pod_arg(s: &str) -> Result<PodArg, String> {
    if s == "self" {
        return Ok(PodArg::Own);
    }
    namespaced_name(s)
        .map(|(ns, name)| PodArg::Named(ns, name))
        .map_err(|e| format!("{e} or self"))
}

/// Where a pod finds its namespace: the ServiceAccount token's mount.
const POD_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

impl PodArg {
    /// The Pod's namespace and name; `self` is read from the pod's mounts and host name.
    fn resolve(&self) -> anyhow::Result<(String, String)> {
        match self {
            PodArg::Named(ns, name) => Ok((ns.clone(), name.clone())),
            PodArg::Own => {
                let ns = std::fs::read_to_string(POD_NAMESPACE_FILE).with_context(|| {
                    format!("--packageserver-pod=self: not in a pod? reading {POD_NAMESPACE_FILE}")
                })?;
                Ok((ns.trim().to_owned(), olm_runtime::leader::hostname()))
            }
        }
    }
}

impl PackageServerArgs {
    fn options(&self) -> anyhow::Result<olm_v0_controller::packageserver::Options> {
        if let Some(address) = self.packageserver_advertise_address
            && address.is_loopback()
        {
            anyhow::bail!(
                "--packageserver-advertise-address {address}: the API server does not accept a loopback address as a Service endpoint"
            );
        }
        Ok(olm_v0_controller::packageserver::Options {
            addr: listen_addr(&self.packageserver_bind_address)?,
            advertise: self.packageserver_advertise_address,
            pod: match &self.packageserver_pod {
                Some(pod) => {
                    let (namespace, name) = pod.resolve()?;
                    Some(olm_v0_controller::packageserver::PodRef { namespace, name })
                }
                None => None,
            },
            ..olm_v0_controller::packageserver::Options::default()
        })
    }
}

/// `/debug/pprof/` and who may read it.
#[derive(clap::Args, Debug)]
struct ProfilingArgs {
    /// Address of /debug/pprof/ (CPU and heap profiles, HTTPS with the certificate of secure
    /// metrics) for clients with a certificate signed by --client-ca; "0" turns it off.
    #[arg(long, default_value = "0")]
    pprof_bind_address: String,
    /// PEM file of the CA(s) whose client certificates may take profiles; a TLS handshake
    /// without one fails. Needed by --pprof-bind-address.
    #[arg(long)]
    client_ca: Option<PathBuf>,
}

/// `<namespace>/<name>`.
fn namespaced_name(s: &str) -> Result<(String, String), String> {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns.to_string(), name.to_string()))
        }
        _ => Err(format!(
            "want <namespace>/<name>, got {}",
            olm_goenc::quote(s)
        )),
    }
}

impl ProfilingArgs {
    /// `/debug/pprof/` when its address is set: never without a client CA, as profiles tell
    /// what the process runs and holds.
    fn config(&self) -> anyhow::Result<Option<olm_controller::profiling::Config>> {
        let Some(addr) = optional_addr(&self.pprof_bind_address)? else {
            return Ok(None);
        };
        let Some(client_ca) = &self.client_ca else {
            anyhow::bail!(
                "--pprof-bind-address needs --client-ca: profiles are only served to clients with a certificate signed by --client-ca"
            );
        };
        Ok(Some(olm_controller::profiling::Config {
            addr,
            clients: olm_controller::profiling::ClientCa::read(client_ca)?,
        }))
    }
}

/// An address flag where "0" (or nothing) turns the server off.
fn optional_addr(addr: &str) -> anyhow::Result<Option<SocketAddr>> {
    match addr {
        "0" | "" => Ok(None),
        addr => listen_addr(addr).map(Some),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_server(serve(args))
}

async fn serve(args: Args) -> anyhow::Result<()> {
    // Installed first, so a SIGTERM that arrives while starting up also stops cleanly.
    let stop = stop_signal()?;
    olm_image::install_crypto_provider();
    let tls_profile = args.tls_profile.resolve()?;
    // `--component` against `--olm` is checked where it is used, by `olm_controller::run`.
    let gates = FeatureGates::parse(&args.feature_gates)
        .and_then(|g| g.apply(args.cert_provider, olm_catalogd::Options::default().metas))
        .map_err(|e| anyhow::anyhow!("--feature-gates: {e}"))?;
    let pprof = args.profiling.config()?;
    let packageserver = args.packageserver.options()?;
    let config = kube_config(args.kubeconfig.as_ref()).await?;
    let tls = tls_flags(args.tls_cert, args.tls_key)?;
    let serving_tls = match args.tls_secret {
        Some(secret) => Some(olm_controller::serving_tls::Config {
            secret,
            namespace: args.system_namespace.clone(),
            subject: olm_controller::serving_tls::subject_for(&args.external_address)
                .map_err(|e| anyhow::anyhow!("--tls-secret: {e}"))?,
            // The webhook is the catalog server's: only the process serving it keeps its CA.
            webhook_configuration: args
                .component
                .serves_catalogs()
                .then(|| olm_catalogd::webhook::CONFIGURATION_NAME.to_owned()),
            dir: args.cache_path.join("tls"),
            policy: olm_controller::serving_tls::Policy::default(),
        }),
        None => None,
    };
    let webhook_addr = ((tls.is_some() || serving_tls.is_some()) && args.webhook_server_port != 0)
        .then(|| SocketAddr::from(([0, 0, 0, 0], args.webhook_server_port)));
    let mut images = image_options(args.pull_cas_dir.as_ref(), &args.registries.registries_conf)?;
    images.limits = olm_image::Limits {
        catalog: args.catalog_limits.sizes(),
        bundle: args.bundle_limits.sizes(),
        // `olm run` reads only catalogs and bundles.
        image: olm_image::Sizes::IMAGE,
        raised_by: olm_image::RaisedBy::Flags,
    };
    std::fs::create_dir_all(&args.cache_path)
        .with_context(|| format!("creating {}", args.cache_path.display()))?;
    let timings = olm_runtime::leader::decide::Timings {
        lease_duration: args.leader_election_lease_duration,
        renew_deadline: args.leader_election_renew_deadline,
        retry_period: args.leader_election_retry_period,
    };
    timings
        .check()
        .map_err(|e| anyhow::anyhow!("leader election: {e}"))?;
    let options = olm_controller::run::Options {
        which: args.olm,
        component: args.component,
        system_namespace: args.system_namespace,
        cache_path: args.cache_path,
        catalogs_addr: listen_addr(&args.catalogs_server_addr)?,
        catalogd: olm_catalogd::Options {
            external_address: Some(args.external_address),
            tls,
            gc_interval: args.gc_interval,
            webhook_addr,
            browse_cluster: args.browse_cluster,
            metas: gates.metas,
            ..olm_catalogd::Options::default()
        },
        health_probe_addr: optional_addr(&args.health_probe_bind_address)?,
        metrics_addr: optional_addr(&args.metrics_bind_address)?,
        metrics_secure: args.metrics_secure,
        cert_provider: gates.cert_provider,
        images,
        extension: olm_controller::extension::Options {
            catalogs: olm_controller::catalog::CatalogOptions {
                ca_certificates: match &args.catalogd_cas_dir {
                    Some(dir) => crate::catalogd::read_cas(dir)?,
                    None => Vec::new(),
                },
                ..olm_controller::catalog::CatalogOptions::default()
            },
            global_pull_secret: args.global_pull_secret,
        },
        leader_election: args.leader_elect.then_some(timings),
        serving_tls,
        pprof,
        packageserver,
        tls_profile,
    };
    olm_controller::run::run(options, config, stop).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_turns_a_server_off() {
        assert_eq!(optional_addr("0").ok(), Some(None));
        assert_eq!(
            optional_addr(":8080").ok(),
            Some(Some("0.0.0.0:8080".parse().expect("addr")))
        );
        assert!(optional_addr("nonsense").is_err());
    }

    #[test]
    fn flags_parse_with_upstream_defaults() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let cli = Cli::try_parse_from(["olm"]).expect("defaults");
        assert_eq!(cli.args.system_namespace, "olmv1-system");
        assert_eq!(cli.args.health_probe_bind_address, ":8081");
        assert_eq!(cli.args.cert_provider, CertProviderChoice::Auto);
        let cli = Cli::try_parse_from(["olm", "--cert-provider", "cert-manager"]).expect("parse");
        assert_eq!(cli.args.cert_provider, CertProviderChoice::CertManager);
        assert!(Cli::try_parse_from(["olm", "--cert-provider", "vault"]).is_err());
        assert!(Cli::try_parse_from(["olm", "--tls-cert", "x"]).is_err());
        assert!(!cli.args.leader_elect);
        assert!(cli.args.metrics_secure);
        let plain = Cli::try_parse_from(["olm", "--metrics-secure=false"]).expect("parse");
        assert!(!plain.args.metrics_secure);
        assert_eq!(
            cli.args.leader_election_lease_duration,
            Duration::from_secs(137)
        );
        assert_eq!(
            cli.args.leader_election_renew_deadline,
            Duration::from_secs(107)
        );
        assert_eq!(
            cli.args.leader_election_retry_period,
            Duration::from_secs(26)
        );
        assert_eq!(cli.args.profiling.pprof_bind_address, "0");
        assert!(!cli.args.browse_cluster);
        let browsing = Cli::try_parse_from(["olm", "--browse-cluster"]).expect("parse");
        assert!(browsing.args.browse_cluster);
    }

    /// The packageserver listens on upstream's port and routes nothing by default; it never
    /// routes to a loopback address, which the API server refuses as an endpoint.
    #[test]
    fn the_packageserver_routes_only_to_a_reachable_address() {
        let args = |bind: &str, advertise: Option<&str>| PackageServerArgs {
            packageserver_pod: None,
            packageserver_bind_address: bind.to_owned(),
            packageserver_advertise_address: advertise.map(|a| a.parse().expect("address")),
        };
        let default = args(":5443", None).options().expect("default");
        assert_eq!(
            default,
            olm_v0_controller::packageserver::Options::default()
        );
        let routed = args("192.0.2.7:0", Some("192.0.2.7"))
            .options()
            .expect("routed");
        assert_eq!(routed.advertise, Some("192.0.2.7".parse().expect("ip")));
        let err = args(":5443", Some("127.0.0.1"))
            .options()
            .expect_err("loopback");
        assert_eq!(
            err.to_string(),
            "--packageserver-advertise-address 127.0.0.1: the API server does not accept a loopback address as a Service endpoint"
        );
    }

    #[test]
    fn the_packageserver_pod_is_named_or_self() {
        assert_eq!(pod_arg("self"), Ok(PodArg::Own));
        assert_eq!(
            pod_arg("olmv1-system/olm-abc"),
            Ok(PodArg::Named("olmv1-system".into(), "olm-abc".into()))
        );
        assert_eq!(
            pod_arg("/"),
            Err("want <namespace>/<name>, got \"/\" or self".into())
        );
        assert_eq!(
            PodArg::Named("a".into(), "b".into()).resolve().ok(),
            Some(("a".into(), "b".into()))
        );
    }

    /// Profiles are off by default, and never served without a client CA to check clients with.
    #[test]
    fn profiles_need_a_client_ca() {
        let config = |addr: &str, client_ca: Option<&str>| {
            ProfilingArgs {
                pprof_bind_address: addr.to_owned(),
                client_ca: client_ca.map(PathBuf::from),
            }
            .config()
        };
        let missing = Some("/nonexistent/ca.pem");
        assert!(config("0", None).expect("off").is_none());
        assert!(config("0", missing).expect("off").is_none());
        assert_eq!(
            config(":8082", None).expect_err("no CA").to_string(),
            "--pprof-bind-address needs --client-ca: profiles are only served to clients with a certificate signed by --client-ca"
        );
        let err = config(":8082", missing).expect_err("missing CA");
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }
}
