//! With a certificate and key the catalog API is served over HTTPS (HTTP/1.1 only, as upstream),
//! and plain HTTP on that port is refused.

use std::sync::Arc;

use http_body_util::BodyExt;
use olm_catalogd::metrics::Metrics;
use olm_catalogd::run::{Tls, tls_config};
use olm_catalogd::server::{AppState, router};
use olm_catalogd::storage::Storage;
use olm_runtime::serve::serve;
use rustls::pki_types::ServerName;

#[tokio::test]
async fn catalogs_are_served_over_https() {
    olm_image::install_crypto_provider();
    let dir = tempfile::tempdir().expect("tmp");
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert_path, cert.cert.pem()).expect("write cert");
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).expect("write key");
    let config = tls_config(
        &Tls {
            cert: cert_path,
            key: key_path,
        },
        &olm_tls::TlsProfile::default(),
    )
    .expect("tls config");

    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    std::fs::write(
        src.join("catalog.json"),
        r#"{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v0.1.0"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v0.1.0","image":"example.com/foo:v0.1.0","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"0.1.0"}}]}
"#,
    )
    .expect("write");
    let storage = Storage::open(dir.path().join("store")).expect("open");
    let entry = storage
        .store(
            "tls",
            "r@sha256:00",
            "sha256:00",
            jiff::Timestamp::now(),
            &src,
        )
        .expect("store");
    let want = std::fs::read(&entry.path).expect("read");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = router(AppState {
        storage: Arc::new(storage),
        metrics: Arc::new(Metrics::default()),
        metas: true,
    });
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(serve(listener, app, Some(config), stop_rx));

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).expect("root");
    let mut client_config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_config));
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let stream = connector
        .connect(ServerName::try_from("localhost").expect("name"), tcp)
        .await
        .expect("TLS handshake");
    assert_eq!(
        stream.get_ref().1.alpn_protocol(),
        Some(&b"http/1.1"[..]),
        "HTTP/2 is not offered"
    );
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(conn);
    let req = http::Request::get("/catalogs/tls/api/v1/all")
        .header("host", "localhost")
        .body(http_body_util::Empty::<axum::body::Bytes>::new())
        .expect("request");
    let resp = sender.send_request(req).await.expect("send");
    assert_eq!(resp.status(), 200);
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(body.as_ref(), want.as_slice());

    // Plain HTTP to the TLS port gets no HTTP answer.
    let mut plain = tokio::net::TcpStream::connect(addr).await.expect("connect");
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    plain
        .write_all(b"GET /catalogs/tls/api/v1/all HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .expect("write");
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        plain.read_to_end(&mut buf),
    )
    .await;
    assert!(
        !buf.starts_with(b"HTTP/1.1 200"),
        "plain HTTP must not be served"
    );

    stop_tx.send(true).expect("stop");
    server.await.expect("join").expect("serve");
}

#[tokio::test]
async fn silent_clients_are_disconnected_after_the_read_timeout() {
    use tokio::io::AsyncReadExt;
    let dir = tempfile::tempdir().expect("tmp");
    let app = router(AppState {
        storage: Arc::new(Storage::open(dir.path()).expect("open")),
        metrics: Arc::new(Metrics::default()),
        metas: true,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(serve(listener, app, None, stop_rx));
    let mut idle = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let start = std::time::Instant::now();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(
        olm_runtime::serve::READ_TIMEOUT * 3,
        idle.read_to_end(&mut buf),
    )
    .await;
    assert!(read.is_ok(), "the server must close an idle connection");
    assert!(
        start.elapsed() >= olm_runtime::serve::READ_TIMEOUT - std::time::Duration::from_millis(500)
    );
    stop_tx.send(true).expect("stop");
    server.await.expect("join").expect("serve");
}
