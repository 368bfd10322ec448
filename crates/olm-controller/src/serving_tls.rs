//! `olm run --tls-secret NAME`: the catalog server, the ClusterCatalog webhook and secure metrics
//! served with a certificate `olm` issues itself, kept in a `kubernetes.io/tls` Secret of the
//! system namespace, so installing OLM needs neither cert-manager nor a hand-made certificate.
//!
//! Every replica, at start: read the Secret; if it holds a CA and a serving certificate for the
//! `--external-address` Service with more than the renewal margin left, use it, else issue a new
//! pair and write it (create when missing, replace at the read resourceVersion otherwise), so
//! that replicas starting together agree on one pair: the loser of the race reads the winner's.
//! The pair is written to files under the cache directory that the TLS servers reload
//! (`olm_tls::serving::ReloadingCert`), and its CA becomes the `caBundle` of the webhook
//! configuration.
//!
//! Afterwards, a watch on the Secret and on the webhook configuration brings a renewed pair to
//! the files and the CA back into a configuration that lost it (e.g. re-applied from the
//! manifests); whichever replica first sees the pair inside its renewal margin renews it.
//!
//! Decisions (keep or issue, and why; the `caBundle` patch) are `olm_security::certs`'s, the
//! same rules as for bundles' webhook Services (730 days, renewed a day before).
//!
//! Caveat: the process trusts the CA it started with when it reads its own catalog server, so a
//! new CA (a renewal, every two years, or a deleted Secret) ends the process with
//! [`Error::CaChanged`] to be restarted with it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::{StreamExt as _, stream};
use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use olm_security::certs::{self as decide, Decision, Held};
pub use olm_security::certs::{Policy, Subject};
use tracing::{info, warn};

/// Field owner of the `caBundle` this module writes.
pub const FIELD_MANAGER: &str = "olm.operatorframework.io/serving-tls";

/// How often a read-issue-write that lost a race to another replica is tried again.
const ATTEMPTS: usize = 5;

/// What `--tls-secret` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The Secret, in `namespace`.
    pub secret: String,
    /// The system namespace.
    pub namespace: String,
    /// The Service the certificate is for (from `--external-address`).
    pub subject: Subject,
    /// The MutatingWebhookConfiguration that gets the CA, if any.
    pub webhook_configuration: Option<String>,
    /// Where the files go (`tls.crt`, `tls.key`, `ca.crt`).
    pub dir: PathBuf,
    /// Validity and renewal margin.
    pub policy: Policy,
}

/// An external address that names no Service, so no certificate can be issued for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the external address {} is not a Service host (<service>.<namespace>[.svc…]), so no certificate can be issued for it",
    olm_goenc::quote(.0)
)]
pub struct NotAServiceHost(pub String);

/// The Service a certificate for `external_address` (`host[:port]`) is for: the host's first
/// label is the Service, its second the namespace (`catalogd-service.olmv1-system.svc`).
pub fn subject_for(external_address: &str) -> Result<Subject, NotAServiceHost> {
    let host = match external_address.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => external_address,
    };
    let mut labels = host.split('.');
    match (labels.next(), labels.next()) {
        // Service names start with a letter (DNS-1035), which also tells an IP address apart.
        (Some(service), Some(namespace))
            if service.starts_with(|c: char| c.is_ascii_lowercase()) && !namespace.is_empty() =>
        {
            Ok(Subject {
                service: service.to_owned(),
                namespace: namespace.to_owned(),
            })
        }
        _ => Err(NotAServiceHost(external_address.to_owned())),
    }
}

/// Why the serving certificate could not be had.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused a request.
    #[error("serving certificate Secret: {0}")]
    Kube(#[from] kube::Error),
    /// Key or certificate generation failed.
    #[error("issuing the serving certificate: {0}")]
    Issue(#[from] olm_cluster::certs::IssueError),
    /// The files could not be written.
    #[error("writing the serving certificate to {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Other replicas kept changing the Secret.
    #[error("the serving certificate Secret kept changing under {ATTEMPTS} attempts to update it")]
    Contended,
    /// The CA changed after start.
    #[error(
        "the serving certificate's CA changed; stopping so that the restarted process trusts the new one"
    )]
    CaChanged,
}

/// The pair being served.
#[derive(Debug, Clone)]
pub struct Serving {
    /// The files the TLS servers read.
    pub tls: olm_catalogd::Tls,
    /// The CA that signed the certificate (PEM).
    pub ca_pem: Vec<u8>,
    /// When the pair enters its renewal margin.
    pub renew_at: Timestamp,
}

/// Reads the Secret, issuing and writing a new pair when it does not hold a good one, and
/// writes what it holds to the files.
pub async fn ensure(client: &kube::Client, config: &Config) -> Result<Serving, Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &config.namespace);
    for _ in 0..ATTEMPTS {
        let existing = secrets.get_opt(&config.secret).await?;
        let held = Held::from_data(existing.as_ref().and_then(|s| s.data.as_ref()));
        let now = Timestamp::now();
        match decide::decide(&config.subject, &held, now, &config.policy) {
            Decision::Keep { renew_at, .. } => {
                let (crt, key, ca) = (
                    held.tls_crt.unwrap_or_default(),
                    held.tls_key.unwrap_or_default(),
                    held.ca_crt.unwrap_or_default(),
                );
                let tls = write_files(&config.dir, crt, key, ca)?;
                return Ok(Serving {
                    tls,
                    ca_pem: ca.to_vec(),
                    renew_at,
                });
            }
            Decision::Issue { reason, plan } => {
                info!(secret = %config.secret, namespace = %config.namespace, %reason, "issuing the serving certificate");
                let issued = olm_cluster::certs::issue(&plan)?;
                let mut secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(config.secret.clone()),
                        namespace: Some(config.namespace.clone()),
                        labels: Some(
                            [("app.kubernetes.io/managed-by".to_owned(), "olm".to_owned())].into(),
                        ),
                        ..ObjectMeta::default()
                    },
                    type_: Some(decide::SECRET_TYPE.to_owned()),
                    data: Some(
                        [
                            (decide::TLS_CERT_KEY, &issued.cert_pem),
                            (decide::TLS_KEY_KEY, &issued.key_pem),
                            (decide::CA_CERT_KEY, &issued.ca_pem),
                        ]
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), ByteString(v.as_bytes().to_vec())))
                        .collect(),
                    ),
                    ..Secret::default()
                };
                let written = match existing {
                    None => secrets.create(&PostParams::default(), &secret).await,
                    Some(old) => {
                        secret.metadata.resource_version = old.metadata.resource_version;
                        secrets
                            .replace(&config.secret, &PostParams::default(), &secret)
                            .await
                    }
                };
                match written {
                    Ok(_) => {
                        let tls = write_files(
                            &config.dir,
                            issued.cert_pem.as_bytes(),
                            issued.key_pem.as_bytes(),
                            issued.ca_pem.as_bytes(),
                        )?;
                        let renew_at = plan
                            .not_after
                            .saturating_sub(config.policy.renew_before)
                            .unwrap_or(plan.not_after);
                        return Ok(Serving {
                            tls,
                            ca_pem: issued.ca_pem.into_bytes(),
                            renew_at,
                        });
                    }
                    // Another replica wrote first: use what it wrote.
                    Err(kube::Error::Api(e)) if e.code == 409 => {
                        info!(secret = %config.secret, "another replica wrote the serving certificate first; reading it");
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    Err(Error::Contended)
}

/// Writes the pair and CA (each to a temporary file renamed into place; the key readable by
/// this user only).
fn write_files(dir: &Path, crt: &[u8], key: &[u8], ca: &[u8]) -> Result<olm_catalogd::Tls, Error> {
    let failed = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(failed(dir))?;
    for (name, bytes) in [("tls.key", key), ("tls.crt", crt), ("ca.crt", ca)] {
        let path = dir.join(name);
        if std::fs::read(&path).is_ok_and(|held| held == bytes) {
            continue;
        }
        let tmp = dir.join(format!(".{name}.tmp"));
        write_private(&tmp, bytes).map_err(failed(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(failed(&path))?;
    }
    Ok(olm_catalogd::Tls {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    })
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Puts `ca_pem` into the webhook configuration's `caBundle` when it holds something else; a
/// configuration that does not exist (OLM run outside its manifests) is left alone.
async fn inject(client: &kube::Client, name: &str, ca_pem: &[u8]) -> Result<(), kube::Error> {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let Some(current) = api.get_opt(name).await? else {
        return Ok(());
    };
    let value = serde_json::to_value(&current).map_err(kube::Error::SerdeError)?;
    if let Some(patch) = decide::ca_bundle_patch(&value, ca_pem) {
        info!(configuration = %name, "putting the serving CA into the webhook configuration");
        api.patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    }
    Ok(())
}

/// Keeps `serving` current until `stop`: on every change of the Secret or the webhook
/// configuration, and when the pair is due for renewal, [`ensure`] again and inject the CA.
/// Returns [`Error::CaChanged`] when the CA is no longer the one served at start; API errors are
/// logged and retried on the next event (the watches back off on their own).
pub async fn maintain(
    client: kube::Client,
    config: Config,
    serving: Serving,
    stop: impl std::future::Future<Output = ()> + Send,
) -> Result<(), Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &config.namespace);
    let by_name = |name: &str| watcher::Config::default().fields(&format!("metadata.name={name}"));
    let secret_events = watcher::watcher(secrets, by_name(&config.secret))
        .map(|e| e.map(|_| ()))
        .boxed();
    let webhook_events = match &config.webhook_configuration {
        Some(name) => {
            let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
            watcher::watcher(api, by_name(name))
                .map(|e| e.map(|_| ()))
                .boxed()
        }
        None => stream::pending().boxed(),
    };
    let mut events = stream::select(secret_events, webhook_events);
    let mut renew_at = serving.renew_at;
    tokio::pin!(stop);
    loop {
        let until_renewal = renew_at
            .duration_since(Timestamp::now())
            .max(jiff::SignedDuration::from_secs(1));
        let sleep =
            tokio::time::sleep(Duration::try_from(until_renewal).unwrap_or(Duration::from_secs(1)));
        tokio::select! {
            () = &mut stop => return Ok(()),
            event = events.next() => match event {
                Some(Ok(())) => {}
                Some(Err(e)) => {
                    warn!(secret = %config.secret, error = %e, "watching the serving certificate");
                    continue;
                }
                None => return Ok(()),
            },
            () = sleep => {}
        }
        match ensure(&client, &config).await {
            Ok(now) if now.ca_pem != serving.ca_pem => return Err(Error::CaChanged),
            Ok(now) => {
                renew_at = now.renew_at;
                if let Some(name) = &config.webhook_configuration
                    && let Err(e) = inject(&client, name, &now.ca_pem).await
                {
                    warn!(configuration = %name, error = %e, "putting the serving CA into the webhook configuration");
                }
            }
            Err(e) => {
                warn!(secret = %config.secret, error = %e, "checking the serving certificate")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subject_comes_from_the_external_address() {
        let want = Subject {
            service: "catalogd-service".into(),
            namespace: "olmv1-system".into(),
        };
        for addr in [
            "catalogd-service.olmv1-system.svc",
            "catalogd-service.olmv1-system.svc:443",
            "catalogd-service.olmv1-system.svc.cluster.local",
            "catalogd-service.olmv1-system",
        ] {
            assert_eq!(subject_for(addr).as_ref(), Ok(&want), "{addr}");
        }
        for addr in [
            "localhost:8443",
            "",
            ".ns",
            "svc.",
            "127.0.0.1",
            "127.0.0.1:8443",
        ] {
            let got = subject_for(addr);
            assert!(got.is_err(), "{addr}: {got:?}");
        }
    }

    #[test]
    fn files_are_written_once_and_the_key_privately() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let tls = write_files(dir.path(), b"crt", b"key", b"ca").expect("write");
        assert_eq!(std::fs::read(&tls.cert).expect("crt"), b"crt");
        let mode = std::fs::metadata(&tls.key)
            .expect("key")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let before = std::fs::metadata(&tls.cert)
            .and_then(|m| m.modified())
            .expect("mtime");
        std::thread::sleep(Duration::from_millis(20));
        write_files(dir.path(), b"crt", b"key", b"ca").expect("rewrite");
        let after = std::fs::metadata(&tls.cert)
            .and_then(|m| m.modified())
            .expect("mtime");
        assert_eq!(before, after, "unchanged content is not rewritten");
    }
}
