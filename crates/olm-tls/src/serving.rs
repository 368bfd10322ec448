//! The serving certificate, re-read when its files change: a certificate renewed in place (the
//! kubelet updates a mounted Secret's files, cert-manager or the built-in provider renews the
//! Secret) is served from the next handshake on, without a restart, as controller-runtime's
//! certwatcher does for upstream.
//!
//! The files are looked at (their modification time and size, links followed: the kubelet swaps
//! a symlink) at most once per [`CHECK_INTERVAL`], during a handshake. A pair that does not load
//! (half-written, or a key that does not match) is logged and the previous certificate kept.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustls::server::danger::ClientCertVerifier;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tracing::{info, warn};

/// How often the files are looked at, at most (controller-runtime's certwatcher polls every
/// 10 s besides its file-system notifications).
pub const CHECK_INTERVAL: Duration = Duration::from_secs(10);

/// Why a serving certificate and key cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read.
    #[error("{}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The certificate's PEM does not parse.
    #[error("certificate: {0}")]
    Certificate(String),
    /// The certificate's PEM holds no certificate.
    #[error("no certificate")]
    NoCertificate,
    /// The key's PEM does not parse.
    #[error("key: {0}")]
    Key(String),
    /// The key does not go with the certificate, or is of a kind rustls cannot sign with.
    #[error(transparent)]
    Pair(#[from] rustls::Error),
    /// The pair read from `cert` and `key` does not load.
    #[error("{}, {}: {source}", .cert.display(), .key.display())]
    Files {
        /// The certificate's file.
        cert: PathBuf,
        /// The key's file.
        key: PathBuf,
        /// Why.
        source: Box<TlsError>,
    },
    /// The TLS profile cannot configure a server.
    #[error("TLS profile: {0}")]
    Profile(String),
}

/// What identifies one version of the two files.
type Stamp = [(Option<SystemTime>, u64); 2];

#[derive(Debug)]
struct State {
    current: Arc<CertifiedKey>,
    stamp: Stamp,
    checked: Instant,
}

/// A certificate and key read from files, reloaded when they change.
#[derive(Debug)]
pub struct ReloadingCert {
    cert: PathBuf,
    key: PathBuf,
    interval: Duration,
    state: Mutex<State>,
}

impl ReloadingCert {
    /// Loads the pair now (an error names the file), to be reloaded when either changes, looking
    /// at most once per `interval`.
    pub fn load(cert: &Path, key: &Path, interval: Duration) -> Result<ReloadingCert, TlsError> {
        let stamp = stamp(cert, key);
        let current = load(cert, key)?;
        Ok(ReloadingCert {
            cert: cert.to_owned(),
            key: key.to_owned(),
            interval,
            state: Mutex::new(State {
                current,
                stamp,
                checked: Instant::now(),
            }),
        })
    }

    /// The certificate to serve: the last pair that loaded, re-read first if the files changed.
    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        let mut state = self.state.lock().ok()?;
        if state.checked.elapsed() >= self.interval {
            state.checked = Instant::now();
            let now = stamp(&self.cert, &self.key);
            if now != state.stamp {
                state.stamp = now;
                match load(&self.cert, &self.key) {
                    Ok(loaded) => {
                        info!(cert = %self.cert.display(), "serving certificate changed; serving the new one");
                        state.current = loaded;
                    }
                    Err(e) => {
                        warn!(error = %e, "serving certificate changed but does not load; serving the previous one")
                    }
                }
            }
        }
        Some(state.current.clone())
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current()
    }
}

fn stamp(cert: &Path, key: &Path) -> Stamp {
    [cert, key].map(|p| match std::fs::metadata(p) {
        Ok(m) => (m.modified().ok(), m.len()),
        Err(_) => (None, 0),
    })
}

fn load(cert: &Path, key: &Path) -> Result<Arc<CertifiedKey>, TlsError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| TlsError::Read {
            path: p.to_owned(),
            source,
        })
    };
    certified_key(&read(cert)?, &read(key)?)
        .map(Arc::new)
        .map_err(|e| TlsError::Files {
            cert: cert.to_owned(),
            key: key.to_owned(),
            source: Box::new(e),
        })
}

/// A certificate chain and its key from PEM, checked to match.
pub fn certified_key(cert_pem: &[u8], key_pem: &[u8]) -> Result<CertifiedKey, TlsError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Certificate(e.to_string()))?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Key(e.to_string()))?;
    Ok(CertifiedKey::from_der(
        chain,
        key,
        &rustls::crypto::ring::default_provider(),
    )?)
}

/// A rustls server config serving what `certs` resolves, over HTTP/1.1 only, as upstream, with
/// the versions, suites and key exchange groups of `profile` (`--tls-profile`).
///
/// Errors: rustls refusing the profile, which [`crate::Flags::resolve`] rules out.
pub fn server_config(
    certs: Arc<dyn ResolvesServerCert>,
    profile: &crate::TlsProfile,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    server_config_for_clients(
        certs,
        rustls::server::WebPkiClientVerifier::no_client_auth(),
        profile,
    )
}

/// [`server_config`] for the clients `clients` lets through: a handshake without a certificate
/// it verifies fails (mutual TLS). Every TLS server of `olm run` is configured here.
pub fn server_config_for_clients(
    certs: Arc<dyn ResolvesServerCert>,
    clients: Arc<dyn ClientCertVerifier>,
    profile: &crate::TlsProfile,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let mut config = profile
        .server_config_builder()
        .map_err(|e| TlsError::Profile(e.to_string()))?
        .with_client_cert_verifier(clients)
        .with_cert_resolver(certs);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_pair(dir: &Path, name: &str) -> Vec<u8> {
        let c = rcgen::generate_simple_self_signed(vec![name.to_owned()]).unwrap();
        std::fs::write(dir.join("tls.crt"), c.cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), c.signing_key.serialize_pem()).unwrap();
        c.cert.der().to_vec()
    }

    /// A renewed pair is served once the files change; a broken one leaves the last good one.
    #[test]
    fn reloads_changed_files_and_keeps_the_last_good_pair() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_pair(dir.path(), "first.example");
        let (crt, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let certs = ReloadingCert::load(&crt, &key, Duration::ZERO).unwrap();
        assert_eq!(certs.current().unwrap().cert[0].as_ref(), first.as_slice());

        let second = write_pair(dir.path(), "second.example.with.a.longer.name");
        assert_eq!(certs.current().unwrap().cert[0].as_ref(), second.as_slice());

        std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nbroken\n").unwrap();
        assert_eq!(certs.current().unwrap().cert[0].as_ref(), second.as_slice());
    }

    /// Within the interval the files are not looked at.
    #[test]
    fn looks_at_most_once_per_interval() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_pair(dir.path(), "first.example");
        let (crt, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let certs = ReloadingCert::load(&crt, &key, Duration::from_secs(3600)).unwrap();
        write_pair(dir.path(), "second.example.with.a.longer.name");
        assert_eq!(certs.current().unwrap().cert[0].as_ref(), first.as_slice());
    }

    #[test]
    fn a_missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = ReloadingCert::load(
            &dir.path().join("tls.crt"),
            &dir.path().join("tls.key"),
            CHECK_INTERVAL,
        )
        .unwrap_err();
        assert!(err.to_string().contains("tls.crt"), "{err}");
    }

    #[test]
    fn a_key_of_another_certificate_is_refused() {
        let a = rcgen::generate_simple_self_signed(vec!["a.example".to_owned()]).unwrap();
        let b = rcgen::generate_simple_self_signed(vec!["b.example".to_owned()]).unwrap();
        let pem = |c: &rcgen::CertifiedKey<rcgen::KeyPair>| {
            (
                c.cert.pem().into_bytes(),
                c.signing_key.serialize_pem().into_bytes(),
            )
        };
        let ((a_crt, a_key), (_, b_key)) = (pem(&a), pem(&b));
        assert!(certified_key(&a_crt, &a_key).is_ok());
        assert!(certified_key(&a_crt, &b_key).is_err());
        assert!(matches!(
            certified_key(b"", &a_key),
            Err(TlsError::NoCertificate)
        ));
    }
}
