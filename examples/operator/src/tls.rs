//! The webhook's HTTPS server: the serving certificate and key OLM mounts for webhooks, read
//! once at start, and a small HTTP/1.1 server over TLS. Reading once is enough here: OLM's
//! built-in certificate provider puts the CA's hash on the pod template, so a renewed
//! certificate comes with a new pod.
//!
//! OLM mounts a webhook's serving certificate (`tls.crt`) and key (`tls.key`) at
//! `/tmp/k8s-webhook-server/serving-certs`, the path controller-runtime reads: the
//! `webhook-cert` volume it adds to the Deployment that serves a bundle's webhook (`olm-bundle`'s
//! render, as upstream's). 0.2.0's CSV passes that directory as `--webhook-cert-dir`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tracing::{debug, warn};

/// How long a client has to finish its TLS handshake, and to send each request head.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the serving certificate could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The certificate file holds no PEM certificate.
    #[error("{path}: no PEM certificate in it")]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// A file is not the PEM it should be.
    #[error("{path}: {message}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What the PEM reader said.
        message: String,
    },
    /// The front-proxy client CA cannot be used to check clients.
    #[error("the API server's front-proxy client CA: {message}")]
    ClientCa {
        /// Why.
        message: String,
    },
    /// rustls refused the pair (a key that does not match the certificate, for one).
    #[error("{cert} and {key}: {source}")]
    Pair {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// Why.
        source: rustls::Error,
    },
}

/// A TLS server configuration serving `dir/tls.crt` (the chain) with `dir/tls.key`, over
/// HTTP/1.1. With `client_ca` (PEM), a client may present a certificate, which must then be
/// signed by that CA: the aggregated API's callers ([`crate::api`]); without one presented the
/// handshake still succeeds (the API server calls webhooks without one).
pub fn server_config(
    dir: &Path,
    client_ca: Option<&[u8]>,
) -> Result<Arc<rustls::ServerConfig>, CertError> {
    let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| CertError::Read {
            path: path.to_owned(),
            source,
        })
    };
    let pem = |path: &Path, e: rustls::pki_types::pem::Error| CertError::Pem {
        path: path.to_owned(),
        message: e.to_string(),
    };
    let chain = CertificateDer::pem_slice_iter(&read(&cert)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem(&cert, e))?;
    if chain.is_empty() {
        return Err(CertError::NoCertificate { path: cert });
    }
    let private = PrivateKeyDer::from_pem_slice(&read(&key)?).map_err(|e| pem(&key, e))?;
    let pair = |source| CertError::Pair {
        cert: cert.clone(),
        key: key.clone(),
        source,
    };
    // The provider named, not installed process-wide: the Kubernetes client brings its own
    // rustls configuration.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(pair)?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let ca = |message: String| CertError::ClientCa { message };
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| ca(e.to_string()))?;
                roots.add(cert).map_err(|e| ca(e.to_string()))?;
            }
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                    .allow_unauthenticated()
                    .build()
                    .map_err(|e| ca(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, private).map_err(pair)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Serves `router` over TLS on `listener`, each connection on its own task, until the process
/// ends. A failed accept (out of file descriptors, a reset) is logged and the server goes on.
pub async fn serve(listener: TcpListener, config: Arc<rustls::ServerConfig>, router: Router) {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                warn!(error = %e, "webhook server: accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let router = router.clone();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(CLIENT_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    debug!(%peer, error = %e, "webhook server: TLS handshake failed");
                    return;
                }
                Err(_) => {
                    debug!(%peer, "webhook server: TLS handshake timed out");
                    return;
                }
            };
            // A certificate rustls accepted was signed by the client CA.
            let verified = tls.get_ref().1.peer_certificates().is_some();
            let service = TowerToHyperService::new(
                router.layer(axum::Extension(crate::api::FrontProxy(verified))),
            );
            let mut http =
                hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).http1_only();
            http.http1()
                .timer(TokioTimer::new())
                .header_read_timeout(CLIENT_TIMEOUT);
            if let Err(e) = http.serve_connection(TokioIo::new(tls), service).await {
                debug!(%peer, error = %e, "webhook server: connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_pair(dir: &Path, name: &str) -> rcgen::CertifiedKey<rcgen::KeyPair> {
        let pair = rcgen::generate_simple_self_signed(vec![name.to_owned()]).unwrap();
        std::fs::write(dir.join("tls.crt"), pair.cert.pem()).unwrap();
        std::fs::write(dir.join("tls.key"), pair.signing_key.serialize_pem()).unwrap();
        pair
    }

    #[test]
    fn loads_a_matching_pair() {
        let dir = tempfile::tempdir().unwrap();
        write_pair(
            dir.path(),
            "example-operator-controller-service.example-system.svc",
        );
        let config = server_config(dir.path(), None).unwrap();
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
    }

    /// Each way the mount can be wrong is named with its file.
    /// A front-proxy CA is what client certificates are checked against: one that holds no
    /// certificate is refused, naming it, rather than accepting every client.
    #[test]
    fn checks_clients_against_the_front_proxy_ca() {
        let dir = tempfile::tempdir().unwrap();
        write_pair(dir.path(), "a.example");
        let ca = rcgen::generate_simple_self_signed(vec!["front-proxy-ca".to_owned()]).unwrap();
        assert!(server_config(dir.path(), Some(ca.cert.pem().as_bytes())).is_ok());
        let err = server_config(dir.path(), Some(b"not pem\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("the API server's front-proxy client CA: "),
            "{err}"
        );
    }

    #[test]
    fn names_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let err = server_config(dir.path(), None).unwrap_err().to_string();
        assert!(
            err.starts_with("reading ") && err.contains("tls.crt"),
            "{err}"
        );

        write_pair(dir.path(), "a.example");
        std::fs::write(dir.path().join("tls.crt"), "not pem\n").unwrap();
        let err = server_config(dir.path(), None).unwrap_err().to_string();
        assert!(err.ends_with("tls.crt: no PEM certificate in it"), "{err}");

        // The key of another certificate.
        let first = write_pair(dir.path(), "a.example");
        write_pair(dir.path(), "b.example");
        std::fs::write(dir.path().join("tls.crt"), first.cert.pem()).unwrap();
        let err = server_config(dir.path(), None).unwrap_err().to_string();
        assert!(
            err.contains("tls.crt and ") && err.contains("tls.key: "),
            "{err}"
        );
    }
}
