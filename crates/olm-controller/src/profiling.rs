//! `/debug/pprof/`: CPU and heap profiles of the running process in pprof's format (gzipped
//! protobuf, what `go tool pprof` reads), on a listener of their own (`--pprof-bind-address`),
//! served over HTTPS only to clients that present a certificate signed by a configured CA
//! (`--client-ca`), as OLM v0 serves its profiles.
//!
//! Why a client CA and not the bearer tokens `/metrics` takes: a profile tells what the process
//! runs and holds, and taking one costs CPU, so it is for whoever holds a certificate of that CA,
//! not for anyone the cluster lets read metrics. The TLS handshake refuses everyone else: no
//! request of theirs is ever read.
//!
//! - `/debug/pprof/profile?seconds=N`: where CPU time goes, sampled while the request waits
//!   ([`cpu`]); one at a time, as Go allows one.
//! - `/debug/pprof/heap`: memory in use, from jemalloc's sampling profiler ([`heap`]), switched
//!   on by [`activate_heap`] only in a process that serves profiles.
//! - `/debug/pprof/`: the list of both.
//!
//! Both are symbolized in the process, so `go tool pprof -top FILE` needs no binary. A binary
//! stripped of its symbols (the release build) can only give addresses, with its mapping and
//! build ID; names need a build that keeps its symbol table (docs/run.md, Profiling).

mod cpu;
mod heap;

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use http::{HeaderValue, StatusCode, header};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::server::danger::ClientCertVerifier;
use tracing::{debug, error, info};

pub use heap::activate as activate_heap;

/// How long a CPU profile lasts unless `seconds` says otherwise (Go's default).
pub const DEFAULT_CPU_SECONDS: u64 = 30;

/// The longest CPU profile served; the listener's write timeout leaves it time to be sent.
pub const MAX_CPU_SECONDS: u64 = 300;

/// Where and to whom profiles are served.
#[derive(Debug, Clone)]
pub struct Config {
    /// The listener of `/debug/pprof/`.
    pub addr: std::net::SocketAddr,
    /// Who may take profiles.
    pub clients: ClientCa,
}

/// The CA whose certificates may take profiles (`--client-ca`): every handshake is verified
/// against it, and one without such a certificate fails.
#[derive(Clone)]
pub struct ClientCa {
    path: PathBuf,
    verifier: Arc<dyn ClientCertVerifier>,
}

impl fmt::Debug for ClientCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCa")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Why the client CA cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ClientCaError {
    /// The file could not be read.
    #[error("reading the client CA {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file holds no usable CA certificate.
    #[error("the client CA {}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl ClientCa {
    /// Reads the PEM certificates of `path` (a bundle may hold several CAs); a file that cannot
    /// be read or holds no CA certificate is an error naming it, so that a process told to serve
    /// profiles never serves them to nobody, or to anybody.
    pub fn read(path: &Path) -> Result<ClientCa, ClientCaError> {
        let pem = std::fs::read(path).map_err(|source| ClientCaError::Read {
            path: path.to_owned(),
            source,
        })?;
        ClientCa::from_pem(path, &pem)
    }

    /// [`ClientCa::read`] of `pem`, read from `path`.
    pub fn from_pem(path: &Path, pem: &[u8]) -> Result<ClientCa, ClientCaError> {
        let invalid = |reason: String| ClientCaError::Invalid {
            path: path.to_owned(),
            reason,
        };
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(format!("not PEM certificates: {e}")))?;
        if certs.is_empty() {
            return Err(invalid("no certificate in it".to_owned()));
        }
        let mut roots = rustls::RootCertStore::empty();
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| invalid(format!("a certificate that does not parse: {e}")))?;
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .map_err(|e| invalid(e.to_string()))?;
        Ok(ClientCa {
            path: path.to_owned(),
            verifier,
        })
    }
}

/// The TLS of the profiling listener: the certificate `serving` serves (the process's serving
/// certificate, renewed in place like it), `profile`'s versions, suites and groups, and only
/// clients `clients` verifies.
pub fn tls(
    serving: &rustls::ServerConfig,
    clients: &ClientCa,
    profile: &olm_tls::TlsProfile,
) -> Result<Arc<rustls::ServerConfig>, olm_tls::serving::TlsError> {
    olm_tls::serving::server_config_for_clients(
        serving.cert_resolver.clone(),
        clients.verifier.clone(),
        profile,
    )
}

/// The profiling listener's limits: the default ones, with a write timeout that outlasts the
/// longest CPU profile and its symbolization.
pub fn limits() -> olm_runtime::serve::Limits {
    olm_runtime::serve::Limits {
        write_timeout: Duration::from_secs(MAX_CPU_SECONDS + 60),
        ..olm_runtime::serve::Limits::default()
    }
}

/// What the handlers share: the one CPU profile that may run, and the process's stop, which
/// ends a running CPU profile early (with what it sampled so far) instead of holding shutdown up.
#[derive(Clone)]
struct Profiles {
    cpu: Arc<tokio::sync::Mutex<()>>,
    stop: Shared<BoxFuture<'static, ()>>,
}

/// `/debug/pprof/`, `/debug/pprof/profile` and `/debug/pprof/heap`; a CPU profile running when
/// `stop` resolves is cut short.
pub fn router(stop: impl Future<Output = ()> + Send + 'static) -> Router {
    let state = Profiles {
        cpu: Arc::default(),
        stop: stop.boxed().shared(),
    };
    Router::new()
        .route("/debug/pprof", get(index))
        .route("/debug/pprof/", get(index))
        .route("/debug/pprof/profile", get(cpu_profile))
        .route("/debug/pprof/heap", get(heap_profile))
        .fallback(|| async {
            refusal(
                StatusCode::NOT_FOUND,
                "unknown profile: /debug/pprof/ lists the profiles served",
            )
        })
        .with_state(state)
}

/// The profiles served, with what each holds, for [`index`].
const PROFILES: [(&str, &str); 2] = [
    (
        "heap",
        "Memory in use: a sampling of live allocations (jemalloc's, one every 512 KiB allocated on average).",
    ),
    (
        "profile",
        "CPU profile. The seconds parameter says how long to sample (default 30, at most 300); one is taken at a time.",
    ),
];

/// The index page: Go's, with the profiles served here.
fn index_page() -> String {
    let rows: String = PROFILES
        .iter()
        .map(|(name, what)| {
            format!("<tr><td><a href=\"/debug/pprof/{name}\">{name}</a></td><td>{what}</td></tr>\n")
        })
        .collect();
    format!(
        "<html>\n<head><title>/debug/pprof/</title></head>\n<body>\n/debug/pprof/\n\
         <p>Profiles in pprof's format; read them with <code>go tool pprof</code>:</p>\n\
         <table>\n{rows}</table>\n</body>\n</html>\n"
    )
}

async fn index() -> Html<String> {
    Html(index_page())
}

/// The query of `/debug/pprof/profile`.
#[derive(Debug, serde::Deserialize)]
struct CpuQuery {
    seconds: Option<String>,
}

/// How long to sample: `seconds`, absent or empty meaning [`DEFAULT_CPU_SECONDS`] as in Go.
/// Unlike Go, which falls back to the default, anything else outside 1 to [`MAX_CPU_SECONDS`]
/// is refused, so a typo is not answered half a minute later with a profile nobody asked for.
fn cpu_duration(seconds: Option<&str>) -> Result<Duration, String> {
    match seconds {
        None | Some("") => Ok(Duration::from_secs(DEFAULT_CPU_SECONDS)),
        Some(s) => match s.parse::<u64>() {
            Ok(n) if (1..=MAX_CPU_SECONDS).contains(&n) => Ok(Duration::from_secs(n)),
            _ => Err(format!(
                "seconds must be a whole number from 1 to {MAX_CPU_SECONDS}, got {}",
                olm_goenc::quote(s)
            )),
        },
    }
}

async fn cpu_profile(State(state): State<Profiles>, Query(query): Query<CpuQuery>) -> Response {
    let duration = match cpu_duration(query.seconds.as_deref()) {
        Ok(d) => d,
        Err(message) => return refusal(StatusCode::BAD_REQUEST, &message),
    };
    // Held until the response is made; dropped with the request if the client goes away.
    let Ok(_only) = state.cpu.clone().try_lock_owned() else {
        return refusal(
            StatusCode::CONFLICT,
            "a CPU profile is already being taken; ask again once it is done",
        );
    };
    let running = match cpu::start() {
        Ok(running) => running,
        Err(e) => return failure("starting the CPU profiler", &e),
    };
    tokio::select! {
        () = tokio::time::sleep(duration) => {}
        () = state.stop.clone() => info!("stopping: the CPU profile in progress ends early"),
    }
    let stacks = match running.finish() {
        Ok(stacks) => stacks,
        Err(e) => return failure("reading the CPU profile", &e),
    };
    // Symbolizing reads the binary's debug information: work for a blocking thread.
    match tokio::task::spawn_blocking(move || cpu::encode(stacks)).await {
        Ok(bytes) => {
            info!(
                seconds = duration.as_secs(),
                bytes = bytes.len(),
                "served a CPU profile"
            );
            profile_response("profile", bytes)
        }
        Err(e) => failure("writing the CPU profile", &e.to_string()),
    }
}

async fn heap_profile() -> Response {
    match heap::dump().await {
        Ok(bytes) => {
            info!(bytes = bytes.len(), "served a heap profile");
            profile_response("heap", bytes)
        }
        Err(heap::Error::Off) => {
            refusal(StatusCode::NOT_IMPLEMENTED, &heap::Error::Off.to_string())
        }
        Err(e) => failure("dumping the heap profile", &e.to_string()),
    }
}

/// The demangled names of the code at the return address `addr`: the functions inlined there
/// first, the function containing them last; none in a binary without symbols.
fn symbol_names(addr: usize) -> Vec<String> {
    let mut names = Vec::new();
    backtrace::resolve(std::ptr::without_provenance_mut(addr), |symbol| {
        if let Some(name) = symbol.name() {
            names.push(format!("{name:#}"));
        }
    });
    names
}

/// A profile as Go's `net/http/pprof` sends one: a download named after it.
fn profile_response(name: &str, bytes: Vec<u8>) -> Response {
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{name}\""))
        .unwrap_or(HeaderValue::from_static("attachment"));
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (header::CONTENT_DISPOSITION, disposition),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        bytes,
    )
        .into_response()
}

/// A request that cannot be answered with a profile, in Go's `http.Error` form.
fn refusal(status: StatusCode, message: &str) -> Response {
    debug!(%status, message, "profile request refused");
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        format!("{message}\n"),
    )
        .into_response()
}

/// A profile that could not be taken: logged, and the client told why.
fn failure(doing: &str, error: &str) -> Response {
    error!(error, "{doing} failed");
    refusal(
        StatusCode::INTERNAL_SERVER_ERROR,
        &format!("{doing}: {error}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    #[test]
    fn seconds_default_to_go_s_and_stay_within_bounds() {
        assert_eq!(cpu_duration(None), Ok(Duration::from_secs(30)));
        assert_eq!(cpu_duration(Some("")), Ok(Duration::from_secs(30)));
        assert_eq!(cpu_duration(Some("1")), Ok(Duration::from_secs(1)));
        assert_eq!(cpu_duration(Some("300")), Ok(Duration::from_secs(300)));
        for bad in ["0", "301", "-1", "1.5", "ten", " 5"] {
            assert_eq!(
                cpu_duration(Some(bad)),
                Err(format!(
                    "seconds must be a whole number from 1 to 300, got {}",
                    olm_goenc::quote(bad)
                )),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_index_links_every_profile_served() {
        let page = index_page();
        assert!(page.starts_with("<html>"), "{page}");
        for name in ["heap", "profile"] {
            assert!(
                page.contains(&format!("<a href=\"/debug/pprof/{name}\">{name}</a>")),
                "{page}"
            );
        }
    }

    async fn call(router: Router, uri: &str) -> (StatusCode, String) {
        let request = http::Request::get(uri)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = router.oneshot(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// Bad lengths are refused before any profiler starts; so is a second profile while one
    /// runs; other names under /debug/pprof/ are not profiles.
    #[tokio::test]
    async fn refusals_say_why() {
        let router = router(std::future::pending());
        let (status, body) = call(router.clone(), "/debug/pprof/profile?seconds=0").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            body,
            "seconds must be a whole number from 1 to 300, got \"0\"\n"
        );
        let (status, body) = call(router.clone(), "/debug/pprof/goroutine").await;
        assert_eq!(
            (status, body.as_str()),
            (
                StatusCode::NOT_FOUND,
                "unknown profile: /debug/pprof/ lists the profiles served\n"
            )
        );
        let (status, body) = call(router, "/debug/pprof/").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, index_page());

        let state = Profiles {
            cpu: Arc::default(),
            stop: std::future::pending().boxed().shared(),
        };
        let _running = state.cpu.clone().try_lock_owned().unwrap();
        let response = cpu_profile(State(state), Query(CpuQuery { seconds: None })).await;
        assert_eq!(response.status(), StatusCode::CONFLICT);
    }

    #[test]
    fn a_client_ca_must_hold_a_ca_certificate() {
        let path = Path::new("/etc/olm/client-ca.pem");
        let message = |pem: &[u8]| ClientCa::from_pem(path, pem).unwrap_err().to_string();
        assert_eq!(
            message(b""),
            "the client CA /etc/olm/client-ca.pem: no certificate in it"
        );
        assert_eq!(
            message(b"not a certificate"),
            "the client CA /etc/olm/client-ca.pem: no certificate in it"
        );
        let garbage = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(
            message(garbage).starts_with("the client CA /etc/olm/client-ca.pem: "),
            "{}",
            message(garbage)
        );
        let ca = rcgen::generate_simple_self_signed(vec!["ca.example".to_owned()]).unwrap();
        assert!(ClientCa::from_pem(path, ca.cert.pem().as_bytes()).is_ok());

        let missing = ClientCa::read(Path::new("/nonexistent/client-ca.pem")).unwrap_err();
        assert!(
            missing
                .to_string()
                .starts_with("reading the client CA /nonexistent/client-ca.pem: "),
            "{missing}"
        );
    }
}
