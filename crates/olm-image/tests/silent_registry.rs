//! A registry that accepts connections and never answers fails every operation within the
//! client's silence limit, with a message that says so, instead of hanging.

#![allow(clippy::expect_used)]

use std::time::{Duration, Instant};

use olm_image::{Client, ClientOptions, Expect, Filter, ImageRef, Protocol};

/// Accepts connections on a loopback port and keeps them open without a byte of answer.
async fn silent_server() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    addr
}

fn client() -> Client {
    Client::new(ClientOptions {
        protocol: Protocol::PlainHttp,
        silence: Some(Duration::from_millis(500)),
        ..ClientOptions::default()
    })
}

#[tokio::test]
async fn resolve_and_pull_give_up_on_a_silent_registry() {
    let addr = silent_server().await;
    let reference: ImageRef = format!("{addr}/catalogs/silent:v1").parse().expect("ref");
    let client = client();

    let started = Instant::now();
    let err = client.resolve(&reference).await.expect_err("no answer");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err.to_string(),
        format!("resolving {reference}: the registry did not answer within 0.5s")
    );

    let dir = tempfile::tempdir().expect("tmp");
    let started = Instant::now();
    let err = client
        .pull_to_dir(
            &reference,
            &dir.path().join("out"),
            &Filter::All,
            Expect::Either,
        )
        .await
        .expect_err("no answer");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.to_string()
            .contains("the registry did not answer within 0.5s"),
        "{err}"
    );
}

#[tokio::test]
async fn pushing_to_a_closed_port_says_the_registry_is_unreachable() {
    // Bind and drop: the port is free and nothing listens on it.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(
        dir.path().join("catalog.json"),
        r#"{"schema":"olm.package","name":"p"}"#,
    )
    .expect("write");
    let image = olm_image::catalog_image(dir.path()).expect("image");
    let reference: ImageRef = format!("{addr}/catalogs/closed:v1").parse().expect("ref");
    let err = client()
        .push(&image, &reference)
        .await
        .expect_err("nothing listens");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("pushing {reference}: registry unreachable: ")),
        "{text}"
    );
    assert!(!text.contains("refused the authentication"), "{text}");
}
