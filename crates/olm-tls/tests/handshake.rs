//! A TLS server configured by the flags' values, dialled by clients restricted to given versions,
//! suites and groups: the checks of upstream's `test/e2e/features/tls.feature` (and its steps in
//! `test/e2e/steps/tls_steps.go`), made against olm's server parameters. The certificate is
//! ECDSA P-256, as the e2e suite's is.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;

use olm_tls::{Flags, ProfileName, TlsProfile, Version, parse_ciphers, parse_curves};
use rustls::crypto::ring::{cipher_suite, kx_group};
use rustls::crypto::{ActiveKeyExchange, CryptoProvider, SharedSecret, SupportedKxGroup};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::version::{TLS12, TLS13};
use rustls::{
    AlertDescription, CipherSuite, NamedGroup, ProtocolVersion, SupportedCipherSuite,
    SupportedProtocolVersion,
};

/// `--tls-profile=custom` with the other three flags' values.
fn custom(version: &str, ciphers: &str, curves: &str) -> TlsProfile {
    Flags {
        profile: ProfileName::Custom,
        custom_version: Version::parse(version).unwrap(),
        custom_ciphers: parse_ciphers(ciphers).unwrap(),
        custom_curves: parse_curves(curves).unwrap(),
    }
    .resolve()
    .unwrap()
}

struct Server {
    addr: SocketAddr,
    cert: CertificateDer<'static>,
}

/// Serves TLS on a loopback port with `profile`, answering each handshake with one byte.
fn serve(profile: &TlsProfile) -> Server {
    let issued = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = issued.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(issued.signing_key.serialize_der()));
    let config = Arc::new(
        profile
            .server_config_builder()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(sock) = sock else { return };
            let config = config.clone();
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, sock);
                let _ = tls.write_all(b"!").and_then(|()| tls.flush());
            });
        }
    });
    Server { addr, cert }
}

static ONLY_TLS12: &[&SupportedProtocolVersion] = &[&TLS12];
static ONLY_TLS13: &[&SupportedProtocolVersion] = &[&TLS13];
static BOTH: &[&SupportedProtocolVersion] = &[&TLS13, &TLS12];

/// What a client may offer.
struct Client {
    versions: &'static [&'static SupportedProtocolVersion],
    suites: Vec<SupportedCipherSuite>,
    groups: Vec<&'static dyn SupportedKxGroup>,
}

impl Default for Client {
    fn default() -> Client {
        let ring = rustls::crypto::ring::default_provider();
        Client {
            versions: BOTH,
            suites: ring.cipher_suites,
            groups: ring.kx_groups,
        }
    }
}

/// What was negotiated.
#[derive(Debug, PartialEq)]
struct Negotiated {
    version: ProtocolVersion,
    suite: CipherSuite,
    group: NamedGroup,
}

/// Handshakes with the server as `client`; a refusal is the alert the server sent.
fn dial(server: &Server, client: Client) -> Result<Negotiated, rustls::Error> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(server.cert.clone()).unwrap();
    let provider = CryptoProvider {
        cipher_suites: client.suites,
        kx_groups: client.groups,
        ..rustls::crypto::ring::default_provider()
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(client.versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let sock = TcpStream::connect(server.addr).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let mut byte = [0u8; 1];
    match tls.read_exact(&mut byte) {
        Ok(()) => {}
        Err(e) => {
            let inner = e.into_inner().unwrap();
            return Err(*inner.downcast::<rustls::Error>().unwrap());
        }
    }
    assert_eq!(&byte, b"!");
    Ok(Negotiated {
        version: tls.conn.protocol_version().unwrap(),
        suite: tls.conn.negotiated_cipher_suite().unwrap().suite(),
        group: tls.conn.negotiated_key_exchange_group().unwrap().name(),
    })
}

fn refused(alert: AlertDescription) -> Result<Negotiated, rustls::Error> {
    Err(rustls::Error::AlertReceived(alert))
}

/// A client offering `secp521r1` alone. ring has no P-521, so it sends a share it cannot
/// complete: a server that refuses the group never asks it to.
#[derive(Debug)]
struct OnlyP521;

struct P521Share(Vec<u8>);

impl SupportedKxGroup for OnlyP521 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, rustls::Error> {
        Ok(Box::new(P521Share(vec![4; 133])))
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::secp521r1
    }
}

impl ActiveKeyExchange for P521Share {
    fn complete(self: Box<Self>, _: &[u8]) -> Result<SharedSecret, rustls::Error> {
        Err(rustls::Error::General(
            "the server chose secp521r1".to_owned(),
        ))
    }

    fn pub_key(&self) -> &[u8] {
        &self.0
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::secp521r1
    }
}

static ONLY_P521: &dyn SupportedKxGroup = &OnlyP521;

/// Scenario: catalogd metrics endpoint enforces configured minimum TLS version.
#[test]
fn a_tls13_minimum_refuses_tls12() {
    let server = serve(&custom("TLSv1.3", "", ""));
    let tls13 = dial(
        &server,
        Client {
            versions: ONLY_TLS13,
            ..Client::default()
        },
    )
    .unwrap();
    assert_eq!(tls13.version, ProtocolVersion::TLSv1_3);
    let tls12 = dial(
        &server,
        Client {
            versions: ONLY_TLS12,
            ..Client::default()
        },
    );
    assert_eq!(tls12, refused(AlertDescription::ProtocolVersion));
}

/// Scenario: catalogd metrics endpoint negotiates and enforces configured cipher suite.
#[test]
fn a_tls12_cipher_list_is_negotiated_and_enforced() {
    let server = serve(&custom(
        "TLSv1.2",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "prime256v1",
    ));
    let only = |suite| Client {
        versions: ONLY_TLS12,
        suites: vec![suite],
        ..Client::default()
    };
    let aes128 = dial(
        &server,
        only(cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
    )
    .unwrap();
    assert_eq!(
        aes128,
        Negotiated {
            version: ProtocolVersion::TLSv1_2,
            suite: CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
            group: NamedGroup::secp256r1,
        }
    );
    let aes256 = dial(
        &server,
        only(cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384),
    );
    assert_eq!(aes256, refused(AlertDescription::HandshakeFailure));
    // Go cannot restrict TLS 1.3's suites, and neither does olm: a TLS 1.3 client gets any.
    let tls13 = dial(
        &server,
        Client {
            versions: ONLY_TLS13,
            suites: vec![cipher_suite::TLS13_CHACHA20_POLY1305_SHA256],
            groups: vec![kx_group::SECP256R1],
        },
    )
    .unwrap();
    assert_eq!(tls13.suite, CipherSuite::TLS13_CHACHA20_POLY1305_SHA256);
}

/// Scenarios: catalogd metrics endpoint enforces configured curve preferences, and accepts
/// secp256r1 as the IANA name for prime256v1.
#[test]
fn a_curve_list_is_enforced_under_either_name_of_p256() {
    for curves in ["prime256v1", "secp256r1"] {
        let server = serve(&custom(
            "TLSv1.2",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            curves,
        ));
        let with = |group| Client {
            versions: ONLY_TLS12,
            suites: vec![cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256],
            groups: vec![group],
        };
        let p256 = dial(&server, with(kx_group::SECP256R1)).unwrap();
        assert_eq!(p256.group, NamedGroup::secp256r1, "{curves}");
        let p521 = dial(&server, with(ONLY_P521));
        assert_eq!(
            p521,
            refused(AlertDescription::HandshakeFailure),
            "{curves}"
        );
        let x25519 = dial(&server, with(kx_group::X25519));
        assert_eq!(
            x25519,
            refused(AlertDescription::HandshakeFailure),
            "{curves}"
        );
    }
}

/// Scenario: catalogd metrics endpoint accepts connections using post-quantum hybrid curves.
#[test]
fn a_post_quantum_hybrid_is_accepted() {
    let server = serve(&custom(
        "TLSv1.2",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "SecP256r1MLKEM768,secp256r1",
    ));
    let only = |group| Client {
        groups: vec![group],
        ..Client::default()
    };
    let hybrid = dial(&server, only(olm_tls::kx_groups::SECP256R1_MLKEM768)).unwrap();
    assert_eq!(
        (hybrid.version, hybrid.group),
        (ProtocolVersion::TLSv1_3, NamedGroup::secp256r1MLKEM768)
    );
    let p521 = dial(&server, only(ONLY_P521));
    assert_eq!(p521, refused(AlertDescription::HandshakeFailure));
}

/// Without flags: upstream's intermediate profile, TLS 1.2 and 1.3, X25519MLKEM768 first.
#[test]
fn the_default_profile_is_intermediate() {
    let server = serve(&TlsProfile::default());
    let any = dial(&server, Client::default()).unwrap();
    assert_eq!(any.version, ProtocolVersion::TLSv1_3);
    let pq = dial(
        &server,
        Client {
            groups: vec![olm_tls::kx_groups::X25519_MLKEM768, kx_group::X25519],
            ..Client::default()
        },
    )
    .unwrap();
    assert_eq!(pq.group, NamedGroup::X25519MLKEM768);
    let aes256 = dial(
        &server,
        Client {
            versions: ONLY_TLS12,
            suites: vec![cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384],
            ..Client::default()
        },
    )
    .unwrap();
    assert_eq!(
        aes256.suite,
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
    );
    // Not among intermediate's curves, though Go's defaults have it.
    let hybrid = dial(
        &server,
        Client {
            groups: vec![olm_tls::kx_groups::SECP384R1_MLKEM1024],
            ..Client::default()
        },
    );
    assert_eq!(hybrid, refused(AlertDescription::HandshakeFailure));

    let modern = serve(
        &Flags {
            profile: ProfileName::Modern,
            ..Flags::default()
        }
        .resolve()
        .unwrap(),
    );
    let tls12 = dial(
        &modern,
        Client {
            versions: ONLY_TLS12,
            ..Client::default()
        },
    );
    assert_eq!(tls12, refused(AlertDescription::ProtocolVersion));
}

/// The custom profile's default curves include all three hybrids (Go 1.26's defaults).
#[test]
fn custom_defaults_offer_every_hybrid() {
    let server = serve(&custom("TLSv1.2", "", ""));
    for group in [
        olm_tls::kx_groups::X25519_MLKEM768,
        olm_tls::kx_groups::SECP256R1_MLKEM768,
        olm_tls::kx_groups::SECP384R1_MLKEM1024,
    ] {
        let got = dial(
            &server,
            Client {
                groups: vec![group],
                ..Client::default()
            },
        )
        .unwrap();
        assert_eq!(got.group, group.name());
    }
}
