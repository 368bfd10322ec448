//! `olm catalogd`: the catalog server. Watches ClusterCatalogs, pulls their images, and serves
//! their content at `/catalogs/{name}/api/v1/all` and `/api/v1/metas` (see `olm-catalogd`).
//!
//! Flags follow upstream catalogd's where they exist (`--cache-dir`, `--catalogs-server-addr`,
//! `--external-address`, `--tls-cert`/`--tls-key`, `--health-probe-bind-address`,
//! `--gc-interval`, `--pull-cas-dir`, `--webhook-server-port`, the TLS profile flags); content in
//! `--cache-dir` is kept across restarts.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};

/// Serve ClusterCatalogs.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm catalogd --kubeconfig ~/.kube/config --cache-dir /tmp/catalogd --external-address 127.0.0.1:8443
  olm catalogd --tls-cert tls.crt --tls-key tls.key                         HTTPS, as upstream catalogd in a cluster
  olm catalogd --kubeconfig ~/.kube/config --metas=false --gc-interval 30m  without /api/v1/metas")]
pub struct Args {
    /// Where catalog content is stored (kept across restarts).
    #[arg(long, default_value = "/var/cache/catalogd")]
    cache_dir: PathBuf,
    /// Address of the catalog HTTP(S) server.
    #[arg(long, default_value = ":8443")]
    catalogs_server_addr: String,
    /// Address of /healthz, /readyz and /metrics; "0" turns them off.
    #[arg(long, default_value = ":8081")]
    health_probe_bind_address: String,
    /// Host[:port] clients use to reach the catalog server; goes into status.urls.base.
    #[arg(long, default_value = "catalogd-service.olmv1-system.svc")]
    external_address: String,
    /// PEM certificate of the catalog server (with --tls-key): serve HTTPS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of the catalog server (with --tls-cert).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Kubeconfig to use instead of the in-cluster or default configuration.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Serve /api/v1/metas (on by default).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    metas: bool,
    /// How often stored content of deleted catalogs is looked for (Go duration, e.g. 12h, 30m).
    #[arg(long, default_value = "12h", value_parser = parse_duration)]
    gc_interval: Duration,
    /// Port of the admission webhook that labels ClusterCatalogs with their name; served (over
    /// HTTPS, with --tls-cert/--tls-key) only when a certificate is given. "0" turns it off.
    #[arg(long, default_value_t = 9443)]
    webhook_server_port: u16,
    /// Directory of extra PEM CA certificates trusted for registries.
    #[arg(long)]
    pull_cas_dir: Option<PathBuf>,
    #[command(flatten)]
    registries: RegistriesArgs,
    #[command(flatten)]
    catalog_limits: crate::limits::CatalogLimitArgs,
    #[command(flatten)]
    tls_profile: TlsProfileArgs,
    /// Serve /browse/cluster: every ClusterExtension with its namespace, version and condition
    /// messages, to anyone who reaches the catalog port (which has no authentication).
    #[arg(long)]
    browse_cluster: bool,
}

/// A duration flag, read as Go's `time.ParseDuration` reads it (upstream's flags are Go
/// durations); a negative one is refused, as no timer can wait for it.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = olm_goenc::duration::parse_duration(s).map_err(|e| e.to_string())?;
    d.to_std().ok_or_else(|| {
        format!(
            "invalid duration {}: must not be negative",
            olm_goenc::quote(s)
        )
    })
}

/// `:8443` means every interface, as in Go.
pub(crate) fn listen_addr(addr: &str) -> anyhow::Result<SocketAddr> {
    let full = if addr.starts_with(':') {
        format!("0.0.0.0{addr}")
    } else {
        addr.to_string()
    };
    full.parse()
        .with_context(|| format!("invalid listen address {}", olm_goenc::quote(addr)))
}

pub(crate) fn read_cas(dir: &PathBuf) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut cas = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if entry.file_type()?.is_file() {
            cas.push(std::fs::read(entry.path())?);
        }
    }
    Ok(cas)
}

async fn kube_client(kubeconfig: Option<&PathBuf>) -> anyhow::Result<kube::Client> {
    Ok(kube::Client::try_from(kube_config(kubeconfig).await?)?)
}

/// The configuration of `--kubeconfig`, else the in-cluster or default one.
pub(crate) async fn kube_config(kubeconfig: Option<&PathBuf>) -> anyhow::Result<kube::Config> {
    kube_config_in(kubeconfig, None).await
}

/// The cluster connection as kubectl finds it: `--kubeconfig`, else every file `$KUBECONFIG`
/// lists (merged, first wins; files that do not exist are passed over, as kubectl passes
/// them over), else `~/.kube/config`, else the in-cluster account; `context` (`--context`)
/// instead of the current context. When nothing is found the error names every place looked
/// at, once.
pub(crate) async fn kube_config_in(
    kubeconfig: Option<&PathBuf>,
    context: Option<&str>,
) -> anyhow::Result<kube::Config> {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let read = |path: &std::path::Path| {
        Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))
    };
    let file = match kubeconfig {
        Some(path) => Some(read(path)?),
        None => match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
            Some(list) => {
                let listed: Vec<PathBuf> = std::env::split_paths(&list)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect();
                let mut merged: Option<Kubeconfig> = None;
                for path in listed.iter().filter(|p| p.exists()) {
                    let next = read(path)?;
                    merged = Some(match merged {
                        Some(m) => m.merge(next)?,
                        None => next,
                    });
                }
                if merged.is_none() {
                    anyhow::bail!(
                        "no kubeconfig: none of the files $KUBECONFIG lists exists ({})",
                        listed
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                merged
            }
            None => {
                let home =
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".kube").join("config"));
                match home.filter(|p| p.exists()) {
                    Some(path) => Some(read(&path)?),
                    None => None,
                }
            }
        },
    };
    match file {
        Some(kc) => Ok(kube::Config::from_custom_kubeconfig(kc, &options).await?),
        None => kube::Config::incluster().map_err(|_| {
            anyhow::anyhow!(
                "no kubeconfig: ~/.kube/config does not exist, $KUBECONFIG is not set and this is not a pod in a cluster (give --kubeconfig FILE)"
            )
        }),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    run_server(serve(args))
}

/// Runs a long-running server command on a multi-threaded runtime; exit status 0 once it has
/// stopped gracefully.
pub(crate) fn run_server(
    serve: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve)?;
    Ok(ExitCode::SUCCESS)
}

/// `--tls-cert` and `--tls-key`, which go together.
pub(crate) fn tls_flags(
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
) -> anyhow::Result<Option<olm_catalogd::Tls>> {
    match (cert, key) {
        (Some(cert), Some(key)) => Ok(Some(olm_catalogd::Tls { cert, key })),
        (None, None) => Ok(None),
        _ => bail!("--tls-cert and --tls-key must be used together"),
    }
}

/// A list flag's values, read whole from one comma-separated value (a `Vec` field would make
/// clap take one value per occurrence instead).
type CipherList = Vec<olm_tls::Cipher>;
/// See [`CipherList`].
type CurveList = Vec<olm_tls::Curve>;

/// Upstream's TLS profile flags (catalogd's and operator-controller's): the versions, cipher
/// suites and key exchange groups of every HTTPS server. Values upstream knows but olm cannot
/// serve stop the process at start ([`TlsProfileArgs::resolve`]). Given twice, the last one
/// counts, as with upstream's flag library: a tool that appends its choice to a Deployment's
/// arguments (upstream's e2e suite replaces them) is not refused.
#[derive(clap::Args, Debug)]
pub(crate) struct TlsProfileArgs {
    /// The TLS profile of every HTTPS server: intermediate (TLS 1.2 and 1.3), modern (TLS 1.3
    /// only), custom (the --tls-custom-* flags) or old (refused: olm serves neither TLS 1.0/1.1
    /// nor its legacy suites). One of [custom intermediate modern old], in any case.
    #[arg(long, default_value = "intermediate", value_parser = olm_tls::ProfileName::parse, overrides_with = "tls_profile")]
    pub(crate) tls_profile: olm_tls::ProfileName,
    /// The lowest TLS version of the custom profile. One of [TLSv1.0 TLSv1.1 TLSv1.2 TLSv1.3];
    /// olm serves TLSv1.2 and TLSv1.3.
    #[arg(long, default_value = "TLSv1.2", value_parser = olm_tls::Version::parse, overrides_with = "tls_custom_version")]
    pub(crate) tls_custom_version: olm_tls::Version,
    /// The TLS 1.2 cipher suites of the custom profile, comma-separated, by their Go (IANA)
    /// names, e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256; TLS 1.3's suites are always
    /// offered. Without it: the ECDHE suites with AES-GCM and ChaCha20-Poly1305.
    #[arg(long, value_parser = olm_tls::parse_ciphers, overrides_with = "tls_custom_ciphers")]
    pub(crate) tls_custom_ciphers: Option<CipherList>,
    /// The key exchange groups of the custom profile, comma-separated, in order. Values may
    /// consist of [SecP256r1MLKEM768 SecP384r1MLKEM1024 X25519 X25519MLKEM768 prime256v1
    /// secp256r1 secp384r1 secp521r1]; olm serves all but secp521r1. Without it: all of them
    /// but secp521r1, post-quantum hybrids first.
    #[arg(long, value_parser = olm_tls::parse_curves, overrides_with = "tls_custom_curves")]
    pub(crate) tls_custom_curves: Option<CurveList>,
}

impl TlsProfileArgs {
    /// The flags as upstream reads them.
    pub(crate) fn flags(&self) -> olm_tls::Flags {
        olm_tls::Flags {
            profile: self.tls_profile,
            custom_version: self.tls_custom_version,
            custom_ciphers: self.tls_custom_ciphers.clone().unwrap_or_default(),
            custom_curves: self.tls_custom_curves.clone().unwrap_or_default(),
        }
    }

    /// What every HTTPS server offers; a value olm cannot serve is an error naming its flag.
    pub(crate) fn resolve(&self) -> anyhow::Result<olm_tls::TlsProfile> {
        Ok(self.flags().resolve()?)
    }
}

/// Where images are pulled from, besides where they are named.
#[derive(clap::Args, Debug)]
pub(crate) struct RegistriesArgs {
    /// A containers-registries.conf(5) file: images under a `[[registry]]` prefix are pulled
    /// from its mirrors, then its location, and `insecure` registries over plain HTTP. A file
    /// that does not exist is no rules.
    #[arg(long, default_value = olm_image::mirrors::DEFAULT_PATH)]
    pub(crate) registries_conf: PathBuf,
}

/// Registry access: the docker/podman credentials, the CAs of `--pull-cas-dir` and the rules of
/// `--registries-conf`.
pub(crate) fn image_options(
    pull_cas_dir: Option<&PathBuf>,
    registries_conf: &std::path::Path,
) -> anyhow::Result<olm_image::ClientOptions> {
    let mut images = olm_image::ClientOptions {
        auth: olm_image::AuthConfig::load_default()?,
        registries: olm_image::Registries::load(registries_conf)?,
        ..olm_image::ClientOptions::default()
    };
    if let Some(dir) = pull_cas_dir {
        images.ca_certificates = read_cas(dir)?;
    }
    Ok(images)
}

async fn serve(args: Args) -> anyhow::Result<()> {
    // Installed first, so a SIGTERM that arrives while starting up also stops cleanly.
    let stop = stop_signal()?;
    olm_image::install_crypto_provider();
    let tls_profile = args.tls_profile.resolve()?;
    let client = kube_client(args.kubeconfig.as_ref()).await?;
    let catalogs = olm_runtime::serve::listen(listen_addr(&args.catalogs_server_addr)?)
        .with_context(|| format!("listening on {}", args.catalogs_server_addr))?;
    let probes = match args.health_probe_bind_address.as_str() {
        "0" | "" => None,
        addr => Some(
            olm_runtime::serve::listen(listen_addr(addr)?)
                .with_context(|| format!("listening on {addr}"))?,
        ),
    };
    let webhook_addr = (args.tls_cert.is_some() && args.webhook_server_port != 0)
        .then(|| SocketAddr::from(([0, 0, 0, 0], args.webhook_server_port)));
    let tls = tls_flags(args.tls_cert, args.tls_key)?;
    let mut images = image_options(args.pull_cas_dir.as_ref(), &args.registries.registries_conf)?;
    images.limits.catalog = args.catalog_limits.sizes();
    tracing::info!(
        address = %catalogs.local_addr()?,
        scheme = if tls.is_some() { "https" } else { "http" },
        cache = %args.cache_dir.display(),
        "serving catalogs"
    );
    let options = olm_catalogd::Options {
        cache_dir: args.cache_dir,
        external_address: Some(args.external_address),
        tls,
        tls_profile,
        metas: args.metas,
        images,
        gc_interval: args.gc_interval,
        webhook_addr,
        browse_cluster: args.browse_cluster,
        ..olm_catalogd::Options::default()
    };
    olm_catalogd::run(options, client, catalogs, probes, stop).await?;
    Ok(())
}

/// Resolves on SIGTERM (what the kubelet sends to stop a pod) or SIGINT (Ctrl-C); either stops
/// the server gracefully and the process exits 0.
pub(crate) fn stop_signal() -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static>
{
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("handling SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("handling SIGINT")?;
    Ok(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "stopping");
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(
            parse_duration("12"),
            Err(r#"time: missing unit in duration "12""#.to_owned())
        );
        assert_eq!(
            parse_duration("3d"),
            Err(r#"time: unknown unit "d" in duration "3d""#.to_owned())
        );
        assert_eq!(
            parse_duration("-1h"),
            Err(r#"invalid duration "-1h": must not be negative"#.to_owned())
        );
    }

    /// Go refuses a duration beyond 2^63 ns instead of overflowing.
    #[test]
    fn huge_durations_are_an_error_not_a_panic() {
        assert_eq!(
            parse_duration("99999999999999999999999h"),
            Err(r#"time: invalid duration "99999999999999999999999h""#.to_owned())
        );
    }

    fn tls_args(args: &[&str]) -> Result<TlsProfileArgs, clap::Error> {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            tls: TlsProfileArgs,
        }
        Cli::try_parse_from(std::iter::once("olm").chain(args.iter().copied())).map(|c| c.tls)
    }

    /// Upstream's defaults, and the flags as upstream's e2e suite passes them (its
    /// `buildCustomTLSArgs` in `test/e2e/steps/tls_steps.go`).
    #[test]
    fn tls_profile_flags() {
        let default = tls_args(&[]).expect("defaults");
        assert_eq!(default.flags(), olm_tls::Flags::default());
        assert_eq!(
            default.resolve().expect("default"),
            olm_tls::TlsProfile::default()
        );
        let e2e = tls_args(&[
            "--tls-profile=custom",
            "--tls-custom-version=TLSv1.2",
            "--tls-custom-ciphers=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "--tls-custom-curves=SecP256r1MLKEM768,secp256r1",
        ])
        .expect("e2e flags");
        let profile = e2e.resolve().expect("served");
        assert_eq!(profile.min_version(), olm_tls::Version::Tls12);
        assert_eq!(
            profile.tls12_ciphers(),
            [olm_tls::Cipher::ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]
        );
        assert_eq!(
            profile.curves(),
            [olm_tls::Curve::SecP256r1MlKem768, olm_tls::Curve::P256]
        );
        let tls13 =
            tls_args(&["--tls-profile=custom", "--tls-custom-version=TLSv1.3"]).expect("e2e flags");
        assert_eq!(
            tls13.resolve().expect("served").min_version(),
            olm_tls::Version::Tls13
        );
        let empty = tls_args(&["--tls-profile=Custom", "--tls-custom-ciphers="]).expect("empty");
        assert_eq!(empty.flags().custom_ciphers, vec![]);
        let last = tls_args(&[
            "--tls-profile=custom",
            "--tls-custom-curves=X25519",
            "--tls-profile=modern",
            "--tls-custom-curves=secp384r1",
        ])
        .expect("repeated");
        assert_eq!(last.tls_profile, olm_tls::ProfileName::Modern);
        assert_eq!(last.flags().custom_curves, [olm_tls::Curve::P384]);
    }

    /// A value upstream does not know is refused with upstream's message; one olm cannot serve
    /// is refused at start, naming the flag.
    #[test]
    fn tls_profile_flag_errors() {
        for (args, message) in [
            (["--tls-profile", "bogus"], "unknown TLS profile: \"bogus\""),
            (
                ["--tls-custom-version", "TLSv1.4"],
                "unknown TLS version: \"TLSv1.4\"",
            ),
            (
                ["--tls-custom-ciphers", "TLS_AES_128_GCM_SHA256,bogus"],
                "unknown cipher \"bogus\"",
            ),
            (["--tls-custom-curves", "X448"], "unknown curve \"X448\""),
        ] {
            let err = tls_args(&args).expect_err("refused").to_string();
            assert!(err.contains(message), "{err}");
        }
        let unsupported = tls_args(&["--tls-profile=custom", "--tls-custom-curves=secp521r1"])
            .expect("upstream's value")
            .resolve()
            .expect_err("not served");
        assert_eq!(
            unsupported.to_string(),
            "--tls-custom-curves: olm cannot serve secp521r1: ring, olm's cryptography library, has no P-521 key exchange"
        );
        let old = tls_args(&["--tls-profile=old"]).expect("upstream's value");
        assert!(
            old.resolve()
                .expect_err("not served")
                .to_string()
                .starts_with("--tls-profile=old: olm cannot serve this profile")
        );
    }

    #[test]
    fn go_listen_addresses() {
        assert_eq!(
            listen_addr(":8443").ok(),
            Some("0.0.0.0:8443".parse().expect("addr"))
        );
        assert_eq!(
            listen_addr("127.0.0.1:0").ok(),
            Some("127.0.0.1:0".parse().expect("addr"))
        );
    }
}
